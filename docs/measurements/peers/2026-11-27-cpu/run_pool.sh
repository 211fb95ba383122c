#!/bin/bash
# rayon (b8a1524) vs the spinning pool, interleaved, 3 rounds; then bench_peers with the pool.
H=/tmp/h; mkdir -p $H /tmp/site
for b in rayon pool; do xz -dc .devcpu/heimdall-$b.xz > $H/$b; chmod +x $H/$b; done
mkdir -p .cache/models; xz -dc .devcpu/ppocr.onnx.xz > .cache/models/PP-OCRv6_det_small.onnx
xz -dc .devcpu/site.tar.xz | tar xf - -C /tmp/site; export PYTHONPATH=/tmp/site
(nproc; sha256sum $H/rayon $H/pool) > $OUT/env.txt
PP=".cache/models/PP-OCRv6_det_small.onnx --input-shape x=1x3x320x640"
MS="assets/models/multistyle26.onnx --input-shape image=1x3x256x256"
js() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["model"], round(d["median_ms"],3))'; }
for r in 1 2 3; do for t in 1 2 4 8 16; do for b in rayon pool; do
  for m in "$PP" "$MS" assets/models/selfie_segmentation.tflite assets/models/face_detection_short_range.tflite assets/models/face_landmark.tflite assets/models/hand_landmark_lite.tflite assets/models/palm_detection_lite.tflite; do
    echo "$b $t $($H/$b bench $m --threads $t --runs 20 --warmup 5 --json 2>/dev/null | js)" >> $OUT/pool.txt
  done; done; done; done
echo "pool done $SECONDS"
for t in 1 2 4 8 16; do
  timeout 120 python3 scripts/bench_peers.py --models all --threads $t --engines heimdall,onnxruntime,xnnpack \
    --rounds 3 --runs 10 --warmup 3 --exe $H/pool --json $OUT/peers.json --append >> $OUT/peers.log 2>&1
  echo "peers t$t done $SECONDS"
done
