#!/usr/bin/env bash
# An app at 2560x1440, 60 Hz on the GPU machine: heimdall and fifo interleaved, 3 runs each.
# Usage: apps.sh APP -- APP_OPTIONS
set -u
export PYTHONUNBUFFERED=1
app=$1; shift; [ "${1:-}" = "--" ] && shift
mkdir -p /tmp/gl && for d in .gl/*.deb; do dpkg -x $d /tmp/gl; done
export LD_LIBRARY_PATH=/tmp/gl/usr/lib/x86_64-linux-gnu
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
xz -dc .devcarry/$app.xz > /tmp/$app && chmod +x /tmp/$app
export BEVY_ASSET_ROOT=$PWD
mkdir -p .cache/models && for m in .devcarry/am/*; do case $m in *.xz) xz -dc $m > .cache/models/$(basename ${m%.xz});; *) cp $m .cache/models/;; esac; done
nvidia-smi --query-gpu=name --format=csv,noheader; nproc; uptime
python3 scripts/compare_modes.py --app $app --bin /tmp/$app --modes heimdall,fifo --runs 3 \
  --out /tmp/a-$app --json $OUT/$app.json -- --fps 60 --resolution 2560x1440 --frames 660 --warmup 60 "$@" 2>&1 | tee $OUT/$app.md
