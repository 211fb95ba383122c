#!/usr/bin/env bash
# #15: the vsync display emulation (binaries of c75df1b): emoji plain and --scene-load 600, workspace 1440p high;
# heimdall vs fifo, 3 interleaved runs.
set -u
export PYTHONUNBUFFERED=1
mkdir -p /tmp/gl && for d in .gl/*.deb; do dpkg -x $d /tmp/gl; done
export LD_LIBRARY_PATH=/tmp/gl/usr/lib/x86_64-linux-gnu
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
for a in workspace emoji; do [ -f .devcarry4/$a.xz ] && xz -dc .devcarry4/$a.xz > /tmp/$a && chmod +x /tmp/$a; done
export BEVY_ASSET_ROOT=$PWD
mkdir -p /tmp/models && for m in .devcarry/amw/*.xz; do [ -f $m ] || continue; xz -dc $m > /tmp/models/$(basename ${m%.xz}); done
mkdir -p .cache/models && cp /tmp/models/* .cache/models/ 2>/dev/null
nproc; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
mkdir -p $OUT/vs
if [ $1 = emoji ]; then
for load in plain s600; do
  extra=""; [ $load = s600 ] && extra="--scene-load 600"
  python3 scripts/compare_modes.py --app emoji --bin /tmp/emoji --modes heimdall,fifo --runs 3 \
    --out /tmp/vse-$load --json $OUT/vs/emoji_$load.json -- --fps 60 --resolution 1280x720 --frames 600 --warmup 60 $extra 2>&1 | grep '^|' > $OUT/vs/emoji_$load.md
done
else
python3 scripts/compare_modes.py --app workspace --bin /tmp/workspace --modes heimdall,fifo --runs 3 \
  --out /tmp/vsw --json $OUT/vs/ws.json -- --fps 60 --resolution 2560x1440 --frames 660 --warmup 60 --quality high 2>&1 | grep '^|' > $OUT/vs/ws.md
fi
for d in /tmp/vse-*/* /tmp/vsw/*; do [ -f $d/stats.json ] || continue; n=$(basename $(dirname $d))_$(basename $d); cp $d/stats.json $OUT/vs/$n.json; done
cd $OUT && tar czf vs_$1.tgz vs && rm -rf vs
