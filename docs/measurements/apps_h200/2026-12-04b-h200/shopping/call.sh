#!/usr/bin/env bash
# Issue 36 item 3, 2026-12-04 (twelfth session): shopping before (main 3c12a2e) and after the
# run's events (branch obs: the scheduler and the CPU lane send RunEvents, the RunLog observes
# them after the decision), shop_high_60 (2560x1440, --quality high, 60 Hz, a style event a
# second), every run recorded (--record-run), heimdall mode, alternated, order swapped each round,
# 4 rounds, 600 measured frames after a 60-frame warm-up (scripts/compare_modes.py, one run per
# invocation). Carry: .gl .device/d21 (shopping-main.xz, shopping-obs.xz, the SSD model).
# The goldens and docs/measurements are left out of the travelling tree (git rm --cached,
# restored after): the two binaries and the tree are otherwise over the tool's 64 MiB.
set -u
export PYTHONUNBUFFERED=1
mkdir -p /tmp/gl && for d in .gl/*.deb; do dpkg -x $d /tmp/gl; done
export LD_LIBRARY_PATH=/tmp/gl/usr/lib/x86_64-linux-gnu
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export BEVY_ASSET_ROOT=$PWD HEIMDALL_CACHE_DIR=$PWD/.cache
mkdir -p .cache/models
gzip -dc .device/d21/object_detection_ssd_mobilenetv2_oidv4_fp16.tflite.gz > .cache/models/object_detection_ssd_mobilenetv2_oidv4_fp16.tflite
cp .device/d21/*.labels.txt .cache/models/
K=/tmp/keep; mkdir -p $K
for b in main obs; do xz -dc .device/d21/shopping-$b.xz > $K/shopping-$b; chmod +x $K/shopping-$b; done
S=$OUT/shopping; mkdir -p $S
{ nproc; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv,noheader; sha256sum $K/*; } > $S/env.txt 2>&1
for i in 1 2 3 4; do
  if [ $((i % 2)) -eq 1 ]; then order="main obs"; else order="obs main"; fi
  for b in $order; do
    python3 scripts/compare_modes.py --app shopping --bin $K/shopping-$b --modes heimdall --runs 1 --timeout 150 \
      --out $S/high60-$b-$i --json $S/high60-$b-$i.json -- --record-run --frames 660 --warmup 60 \
      --resolution 2560x1440 --quality high --fps 60 --events 1 2>&1 | grep -v '^run ' > $S/high60-$b-$i.md
    echo "high60 $b $i at ${SECONDS}s"; grep -E "heimdall" $S/high60-$b-$i.md | head -3
  done
done
find $S -name '*.png' -delete
find $S -name 'trace.json' -delete
tar cJf $OUT/shopping.txz -C $OUT shopping && rm -rf $S
