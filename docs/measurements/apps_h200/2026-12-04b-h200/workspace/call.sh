#!/usr/bin/env bash
# Issue 36 item 3, 2026-12-04 (twelfth session): the workspace example before (main 3c12a2e) and
# after (main 23b51fd: the run's events, the main world's measurement in stats/), 2560x1440
# --quality high at 60 Hz (docs/apps.md's workspace configuration), heimdall mode, every run
# recorded (--record-run), alternated with the order swapped each round, 3 rounds, 600 measured
# frames after a 60-frame warm-up (scripts/compare_modes.py, one run per invocation).
# Carry: .gl .device/d23 (workspace-before.xz, workspace-after.xz: stripped release builds; the
# text detector, gzipped, which the example fetches when missing). The goldens and
# docs/measurements are left out of the travelling tree for this call (git rm --cached, restored
# after).
set -u
export PYTHONUNBUFFERED=1
mkdir -p /tmp/gl && for d in .gl/*.deb; do dpkg -x $d /tmp/gl; done
export LD_LIBRARY_PATH=/tmp/gl/usr/lib/x86_64-linux-gnu
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export BEVY_ASSET_ROOT=$PWD HEIMDALL_CACHE_DIR=$PWD/.cache
mkdir -p .cache/models
gzip -dc .device/d23/PP-OCRv6_det_small.onnx.gz > .cache/models/PP-OCRv6_det_small.onnx
K=/tmp/keep; mkdir -p $K
for b in before after; do xz -dc .device/d23/workspace-$b.xz > $K/workspace-$b; chmod +x $K/workspace-$b; done
S=$OUT/workspace; mkdir -p $S
{ nproc; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv,noheader; sha256sum $K/*; } > $S/env.txt 2>&1
for i in 1 2 3; do
  if [ $((i % 2)) -eq 1 ]; then order="before after"; else order="after before"; fi
  for b in $order; do
    python3 scripts/compare_modes.py --app workspace --bin $K/workspace-$b --modes heimdall --runs 1 --timeout 150 \
      --out $S/high-$b-$i --json $S/high-$b-$i.json -- --record-run --frames 660 --warmup 60 \
      --resolution 2560x1440 --quality high --fps 60 2>&1 | grep -v '^run ' > $S/high-$b-$i.md
    echo "high $b $i at ${SECONDS}s"; grep -E "heimdall" $S/high-$b-$i.md | head -8
  done
done
find $S -name '*.png' -delete
find $S -name 'trace.json' -delete
find $S -name 'replay.json' -delete
tar cJf $OUT/workspace.txz -C $OUT workspace && rm -rf $S
