#!/bin/bash
# CPU scaling and GPU wall, heimdall before (old: 43a4538) and after (new) this session's CPU and
# pass changes, interleaved; then bench_peers (correctness first) at 1..16 threads beside ONNX
# Runtime and XNNPACK. Writes env.txt, cpu_oldnew.txt, gpu_oldnew.txt, peers.json, peers.log.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
H=/tmp/h; mkdir -p $H /tmp/site
for b in old new; do xz -dc .devcpu/heimdall-$b.xz > $H/$b; chmod +x $H/$b; done
mkdir -p .cache/models; xz -dc .devcpu/ppocr.onnx.xz > .cache/models/PP-OCRv6_det_small.onnx
xz -dc .devcpu/site.tar.xz | tar xf - -C /tmp/site; export PYTHONPATH=/tmp/site
(nproc; lscpu | grep -E "Model name|Flags" | cut -c1-200; sha256sum $H/old $H/new; python3 -c "import onnxruntime, numpy, ai_edge_litert; print('ort', onnxruntime.__version__, 'numpy', numpy.__version__, 'litert ok')"; nvidia-smi -L) > $OUT/env.txt 2>&1
PP=".cache/models/PP-OCRv6_det_small.onnx --input-shape x=1x3x320x640"
MS="assets/models/multistyle26.onnx --input-shape image=1x3x256x256"
js() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["model"], round(d["median_ms"],2))'; }
for r in 1 2 3; do for t in 1 2 4 8 16; do for b in old new; do for m in "$PP" "$MS"; do
  echo "$b $t $($H/$b bench $m --threads $t --runs 10 --warmup 3 --json 2>/dev/null | js)" >> $OUT/cpu_oldnew.txt
done; done; done; done
echo "cpu done $SECONDS"
for r in 1 2 3; do for b in old new; do for p in f32 f16; do for m in "$PP" "$MS"; do
  echo "$b $p $($H/$b bench $m --backend gpu --precision $p --runs 30 --warmup 10 --json 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["model"], "run", round(d["gpu_run_ms"],3), "wall", round(d["wall_median_ms"],3))')" >> $OUT/gpu_oldnew.txt
done; done; done; done
echo "gpu done $SECONDS"
for t in 1 2 4 8 16; do
  timeout 150 python3 scripts/bench_peers.py --models all --threads $t --engines heimdall,onnxruntime,xnnpack \
    --rounds 3 --runs 10 --warmup 3 --exe $H/new --json $OUT/peers.json --append >> $OUT/peers.log 2>&1
  echo "peers t$t done $SECONDS"
done
