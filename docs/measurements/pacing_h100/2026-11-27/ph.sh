#!/usr/bin/env bash
# #15: the render thread's phases of late frames (binaries of 1fc718a): workspace 1440p high
# heimdall / fifo / heimdall --force-cpu, emoji 720p --scene-load 600 heimdall / fifo; 2 interleaved runs.
set -u
export PYTHONUNBUFFERED=1
mkdir -p /tmp/gl && for d in .gl/*.deb; do dpkg -x $d /tmp/gl; done
export LD_LIBRARY_PATH=/tmp/gl/usr/lib/x86_64-linux-gnu
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
for a in workspace emoji; do [ -f .devcarry4/$a.xz ] && xz -dc .devcarry4/$a.xz > /tmp/$a && chmod +x /tmp/$a; done
export BEVY_ASSET_ROOT=$PWD
mkdir -p /tmp/models && for m in .devcarry/amw/*.xz; do [ -f $m ] || continue; xz -dc $m > /tmp/models/$(basename ${m%.xz}); done
mkdir -p .cache/models && cp /tmp/models/* .cache/models/ 2>/dev/null; ls .cache/models
nproc; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
mkdir -p $OUT/ph
[ ${1:-ws} = ws ] && python3 scripts/compare_modes.py --app workspace --bin /tmp/workspace --modes heimdall,fifo,heimdall+force-cpu --runs 2 \
  --out /tmp/phw --json $OUT/ph/ws.json -- --fps 60 --resolution 2560x1440 --frames 660 --warmup 60 --quality high 2>&1 | grep '^|' > $OUT/ph/ws.md
[ ${1:-ws} = emoji ] && python3 scripts/compare_modes.py --app emoji --bin /tmp/emoji --modes heimdall,fifo --runs 2 \
  --out /tmp/phe --json $OUT/ph/emoji.json -- --fps 60 --resolution 1280x720 --frames 600 --warmup 60 --scene-load 600 2>&1 | grep '^|' > $OUT/ph/emoji.md
for d in /tmp/phw/* /tmp/phe/*; do [ -f $d/stats.json ] || continue; n=$(basename $(dirname $d))_$(basename $d); cp $d/stats.json $OUT/ph/$n.json; done
cd $OUT && tar czf ph_${1:-ws}.tgz ph && rm -rf ph
