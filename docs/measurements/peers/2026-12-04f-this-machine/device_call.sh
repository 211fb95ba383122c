#!/usr/bin/env bash
# Issue 38, 2026-12-04 (thirteenth session): the two ONNX models beside ONNX Runtime after the
# issue's CPU changes, main's engine (.device/d16/heimdall-bands.xz, 494ea29's CLI: no engine
# change since), bench_peers.py --engines heimdall,onnxruntime, outputs checked first, 5
# interleaved rounds of 10 runs, two repetitions; 1 thread on core 2, 2 on cores 4-5, 4 on
# cores 4-7. Carry: .device/d16 (the stripped release CLI, xz) and .device/d25 (PP-OCRv6_det_small.onnx,
# gzip, and the Pillow 13.0.0 wheel for Python 3.12: PP-OCR's 320x640 input is made from
# assets/images/text_scene.jpg); the goldens of the two models stay in the tree. Not run yet: no
# device machine was lent.
set -u
H=/tmp/h; mkdir -p $H $OUT/ort .cache/models
xz -dc .device/d16/heimdall-bands.xz > $H/main; chmod +x $H/main
gzip -dc .device/d25/PP-OCRv6_det_small.onnx.gz > .cache/models/PP-OCRv6_det_small.onnx
python3 -c "import PIL" 2>/dev/null || pip install -q --no-index --find-links .device/d25 --target /tmp/site pillow
export PYTHONPATH=/tmp/site
{ nproc; lscpu | grep -E "Model name|L2|L3"; uptime; sha256sum $H/main; python3 -c "import onnxruntime; print('onnxruntime', onnxruntime.__version__)"; } > $OUT/ort/env.txt 2>&1
MODELS=multistyle26,PP-OCRv6_det_small
pins=(x "taskset -c 2" "taskset -c 4-5" x "taskset -c 4-7")
for rep in 1 2; do for t in 1 2 4; do
  n=t$t-$rep
  timeout 200 ${pins[$t]} python3 scripts/bench_peers.py --engines heimdall,onnxruntime --warmup 3 --exe $H/main --json $OUT/ort/$n.json --models $MODELS --threads $t --rounds 5 --runs 10 > $OUT/ort/$n.log 2>&1
  python3 scripts/bench_peers.py --table-from $OUT/ort/$n.json 2>&1 | grep -E '\| (heimdall|onnxruntime) ' | cut -d"|" -f2,4,6,9,11,12,13 | sed "s/^/$n /"
  echo "$n at ${SECONDS}s"
done; done | tee $OUT/ort/peers.txt
tar cJf $OUT/ort.txz -C $OUT ort && rm -rf $OUT/ort
