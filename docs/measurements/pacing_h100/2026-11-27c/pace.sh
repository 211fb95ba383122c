#!/usr/bin/env bash
# #15 on the H100: the emoji, workspace and shopping apps, 3 interleaved runs of each mode
# (MODES, default heimdall and fifo). The device tool's carry (64 MiB with the tree) takes one app binary per
# call, so the models and Vulkan loader go in a call of their own first and are kept in
# /tmp/keep (see "setup").
# usage: bash docs/measurements/pacing_h100/2026-11-27c/pace.sh setup|emoji|ws|shop      (env MODES, RUNS)
set -u
export PYTHONUNBUFFERED=1
K=/tmp/keep
mkdir -p $K/models
if [ "$1" = setup ]; then
  mkdir -p /tmp/gl && for d in .gl/*.deb; do dpkg -x $d /tmp/gl; done
  for m in .devpace/am/*.xz; do xz -dc $m > $K/models/$(basename ${m%.xz}); done
  [ -f .devcpu/site.tar.xz ] && cp .devcpu/site.tar.xz $K/
  ls -la $K $K/models; nproc; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv,noheader
  exit 0
fi
export LD_LIBRARY_PATH=/tmp/gl/usr/lib/x86_64-linux-gnu
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
mkdir -p .cache/models && cp -n $K/models/* .cache/models/
for a in emoji workspace shopping heimdall-new heimdall-old; do
  [ -f .devpace/$a.xz ] && xz -dc .devpace/$a.xz > $K/$a && chmod +x $K/$a
done
export BEVY_ASSET_ROOT=$PWD
MODES=${MODES:-heimdall,fifo}
RUNS=${RUNS:-3}
rm -rf /tmp/pe-* /tmp/pw /tmp/ps
mkdir -p $OUT/p
case $1 in
emoji)
  for load in plain s600; do
    extra=""; [ $load = s600 ] && extra="--scene-load 600"
    timeout 270 python3 scripts/compare_modes.py --app emoji --bin $K/emoji --modes $MODES --runs $RUNS --timeout 100 \
      --out /tmp/pe-$load --json $OUT/p/emoji_$load.json -- --fps 60 --resolution 1280x720 --frames 600 --warmup 60 $extra 2>&1 | grep -v '^run ' > $OUT/p/emoji_$load.md
  done;;
ws)
  timeout 540 python3 scripts/compare_modes.py --app workspace --bin $K/workspace --modes $MODES --runs $RUNS --timeout 150 \
    --out /tmp/pw --json $OUT/p/workspace.json -- --fps 60 --resolution 2560x1440 --frames 600 --warmup 60 --quality high 2>&1 | grep -v '^run ' > $OUT/p/workspace.md;;
shop)
  timeout 540 python3 scripts/compare_modes.py --app shopping --bin $K/shopping --modes $MODES --runs $RUNS --timeout 150 \
    --out /tmp/ps --json $OUT/p/shopping.json -- --fps 60 --resolution 2560x1440 --frames 600 --warmup 60 --quality medium --instances 30 2>&1 | grep -v '^run ' > $OUT/p/shopping.md;;
esac
for d in /tmp/pe-*/* /tmp/pw/* /tmp/ps/*; do [ -f $d/stats.json ] || continue; n=$(basename $(dirname $d))_$(basename $d); cp $d/stats.json $OUT/p/$n.json; done
cat $OUT/p/*.md
cd $OUT && tar czf pace_$1.tgz p && rm -rf p
