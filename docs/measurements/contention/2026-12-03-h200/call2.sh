#!/usr/bin/env bash
# Call 2 (2026-12-03): workspace (60 Hz, 60 Hz on 4 cores, 90 Hz with the palm ablation), the text model's
# CPU time alone and beside a running app, emoji.
set -u
R=.device/c2/contention_run.sh
K=/tmp/keep; mkdir -p $K/bin $K/models /tmp/o2
mkdir -p /tmp/gl && for d in .gl/*.deb; do dpkg -x $d /tmp/gl; done
gzip -dc .device/c2/PP-OCRv6_det_small.onnx.gz > $K/models/PP-OCRv6_det_small.onnx
for a in workspace emoji heimdall; do xz -dc .device/c2/$a.xz > $K/bin/$a && chmod +x $K/bin/$a; done
nproc; nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
mkdir -p /tmp/o2/ws60 /tmp/o2/ws90 /tmp/o2/emoji
OUT=/tmp/o2/ws60 RUNS=2 SETS="ws_high_60 ws_high_60_4c" MODES=heimdall,fifo bash $R workspace
OUT=/tmp/o2/ws90 RUNS=2 SETS="ws_high_90" MODES="heimdall,fifo,heimdall+palm-search-every-frame" bash $R workspace
export LD_LIBRARY_PATH=/tmp/gl/usr/lib/x86_64-linux-gnu VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export BEVY_ASSET_ROOT=$PWD HEIMDALL_CACHE_DIR=$PWD/.cache
M=$K/models/PP-OCRv6_det_small.onnx
B="$K/bin/heimdall bench $M --runs 8 --warmup 2 --input-shape x=1x3x736x1312"
{
for r in 1 2; do
  echo "== round $r: alone, 7 threads"; $B --threads 7 2>&1 | tail -1
  for mode in fifo heimdall; do
    $K/bin/workspace --headless --mode $mode --frames 1400 --resolution 2560x1440 --quality high --fps 90 --out /tmp/o2/app_$mode$r > /tmp/o2/app_$mode$r.log 2>&1 &
    P=$!; sleep 6
    echo "== round $r: beside workspace --mode $mode at 90 Hz, 7 threads"; $B --threads 7 2>&1 | tail -1
    kill $P 2>/dev/null; wait $P 2>/dev/null
  done
done
echo "== per-op alone"; $B --threads 7 --per-op > /tmp/o2/perop_alone.txt 2>&1; tail -1 /tmp/o2/perop_alone.txt
$K/bin/workspace --headless --mode fifo --frames 1400 --resolution 2560x1440 --quality high --fps 90 --out /tmp/o2/app_perop > /tmp/o2/app_perop.log 2>&1 &
P=$!; sleep 6
echo "== per-op beside fifo app"; $B --threads 7 --per-op > /tmp/o2/perop_app.txt 2>&1; tail -1 /tmp/o2/perop_app.txt
kill $P 2>/dev/null; wait $P 2>/dev/null
} 2>&1 | tee $OUT/text_bench.txt
OUT=/tmp/o2/emoji CALM_RUNS=2 MODES=heimdall,fifo bash $R emoji
cat /tmp/o2/*/acceptance_*.txt > $OUT/acceptance_all.txt
grep -E '^## |FAIL|PASS' $OUT/acceptance_all.txt | grep -E '^## |FAIL'
for d in /tmp/o2/ws90/*.txz; do :; done
cd /tmp/o2 && tar cf $OUT/call2.tar ws60 ws90 emoji perop_alone.txt perop_app.txt
ls -la $OUT
