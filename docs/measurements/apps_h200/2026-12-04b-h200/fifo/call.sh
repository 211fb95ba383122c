#!/usr/bin/env bash
# Issue 36 item 3, 2026-12-04 (twelfth session), shopping beside fifo: the after build (branch obs
# a706a92, the run's events; main 23b51fd differs by a module move only) with heimdall and fifo
# interleaved in one command, shop_high_60 (2560x1440, --quality high, 60 Hz, a style event a
# second), 2 runs each, every run recorded, 600 measured frames after a 60-frame warm-up.
# Carry: .gl .device/d24 (shopping-obs.xz, the SSD model); goldens and docs/measurements left out
# of the travelling tree for the call (git rm --cached, restored after).
set -u
export PYTHONUNBUFFERED=1
mkdir -p /tmp/gl && for d in .gl/*.deb; do dpkg -x $d /tmp/gl; done
export LD_LIBRARY_PATH=/tmp/gl/usr/lib/x86_64-linux-gnu
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export BEVY_ASSET_ROOT=$PWD HEIMDALL_CACHE_DIR=$PWD/.cache
mkdir -p .cache/models
gzip -dc .device/d24/object_detection_ssd_mobilenetv2_oidv4_fp16.tflite.gz > .cache/models/object_detection_ssd_mobilenetv2_oidv4_fp16.tflite
cp .device/d24/*.labels.txt .cache/models/
K=/tmp/keep; mkdir -p $K
xz -dc .device/d24/shopping-obs.xz > $K/shopping; chmod +x $K/shopping
S=$OUT/fifo; mkdir -p $S
python3 scripts/compare_modes.py --app shopping --bin $K/shopping --modes heimdall,fifo --runs 2 --timeout 150 \
  --out $S/runs --json $S/high60.json -- --record-run --frames 660 --warmup 60 \
  --resolution 2560x1440 --quality high --fps 60 --events 1 2>&1 | grep -v '^run ' > $S/high60.md
cat $S/high60.md
rm -rf $S/runs
tar cJf $OUT/fifo.txz -C $OUT fifo && rm -rf $S
