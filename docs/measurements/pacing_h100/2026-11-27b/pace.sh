#!/usr/bin/env bash
# #15: pacing with the f16 guard, DNN work first vs after the scene vs fifo, 3 interleaved runs.
# usage: bash .devpace/pace.sh emoji|ws|shop
set -u
export PYTHONUNBUFFERED=1
mkdir -p /tmp/gl && for d in .gl/*.deb; do dpkg -x $d /tmp/gl; done
export LD_LIBRARY_PATH=/tmp/gl/usr/lib/x86_64-linux-gnu
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
for a in emoji workspace shopping; do [ -f .devpace/$a.xz ] && xz -dc .devpace/$a.xz > /tmp/$a && chmod +x /tmp/$a; done
mkdir -p .cache/models && for m in .devpace/am/*.xz; do [ -f $m ] || continue; xz -dc $m > .cache/models/$(basename ${m%.xz}); done
export BEVY_ASSET_ROOT=$PWD
nproc; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
MODES=${MODES:-heimdall,heimdall+dnn-after-scene,fifo}
RUNS=${RUNS:-3}
mkdir -p $OUT/p
case $1 in
emoji)
  for load in plain s600; do
    extra=""; [ $load = s600 ] && extra="--scene-load 600"
    python3 scripts/compare_modes.py --app emoji --bin /tmp/emoji --modes $MODES --runs $RUNS \
      --out /tmp/pe-$load --json $OUT/p/emoji_$load.json -- --fps 60 --resolution 1280x720 --frames 600 --warmup 60 $extra 2>&1 | grep '^|' > $OUT/p/emoji_$load.md
  done;;
ws)
  python3 scripts/compare_modes.py --app workspace --bin /tmp/workspace --modes $MODES --runs $RUNS \
    --out /tmp/pw --json $OUT/p/workspace.json -- --fps 60 --resolution 2560x1440 --frames 600 --warmup 60 --quality high 2>&1 | grep '^|' > $OUT/p/workspace.md;;
shop)
  python3 scripts/compare_modes.py --app shopping --bin /tmp/shopping --modes $MODES --runs $RUNS \
    --out /tmp/ps --json $OUT/p/shopping.json -- --fps 60 --resolution 2560x1440 --frames 600 --warmup 60 --quality medium --instances 30 2>&1 | grep '^|' > $OUT/p/shopping.md;;
esac
for d in /tmp/pe-*/* /tmp/pw/* /tmp/ps/*; do [ -f $d/stats.json ] || continue; n=$(basename $(dirname $d))_$(basename $d); cp $d/stats.json $OUT/p/$n.json; done
cat $OUT/p/*.md
cd $OUT && tar czf pace_$1.tgz p && rm -rf p
