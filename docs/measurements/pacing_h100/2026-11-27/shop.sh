#!/usr/bin/env bash
# #15: shopping 1440p, medium --instances 30, heimdall vs fifo, 3 interleaved runs (binary of the vsync display commit).
set -u
export PYTHONUNBUFFERED=1
mkdir -p /tmp/gl && for d in .gl/*.deb; do dpkg -x $d /tmp/gl; done
export LD_LIBRARY_PATH=/tmp/gl/usr/lib/x86_64-linux-gnu
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
mkdir -p /tmp/models && for m in .devcarry4/am/*; do [ -f $m ] || continue; case $m in *.xz) xz -dc $m > /tmp/models/$(basename ${m%.xz});; *) cp $m /tmp/models/;; esac; done
[ "$1" = none ] && { ls -la /tmp/models; exit 0; }
xz -dc .devcarry4/shopping.xz > /tmp/shopping && chmod +x /tmp/shopping
export BEVY_ASSET_ROOT=$PWD
mkdir -p .cache/models && cp /tmp/models/* .cache/models/
mkdir -p $OUT/shop
python3 scripts/compare_modes.py --app shopping --bin /tmp/shopping --modes heimdall,fifo --runs 3 \
  --out /tmp/shop --json $OUT/shop/shopping.json -- --fps 60 --resolution 2560x1440 --frames 660 --warmup 60 --quality medium --instances 30 2>&1 | grep '^|' > $OUT/shop/shopping.md
for d in /tmp/shop/*; do [ -f $d/stats.json ] && cp $d/stats.json $OUT/shop/$(basename $d).json; done
cd $OUT && tar czf shop.tgz shop && rm -rf shop
