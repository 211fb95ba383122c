#!/usr/bin/env bash
# Issue 36 item 3, 2026-12-04 (twelfth session): the emoji example before (main 3c12a2e) and after
# the run's events (branch obs a706a92), heimdall mode, every run recorded (--record-run: the
# recording observes the events), alternated, order swapped each round: 720p60 plain (the
# README's configuration) and 2560x1440 --quality high at 60 Hz, 3 rounds each, 600 measured
# frames after a 60-frame warm-up (scripts/compare_modes.py, one run per invocation).
# Carry: .gl .device/d22 (emoji-main.xz, emoji-obs.xz: stripped release builds). The goldens and
# docs/measurements are left out of the travelling tree for this call (git rm --cached, restored
# after).
set -u
export PYTHONUNBUFFERED=1
mkdir -p /tmp/gl && for d in .gl/*.deb; do dpkg -x $d /tmp/gl; done
export LD_LIBRARY_PATH=/tmp/gl/usr/lib/x86_64-linux-gnu
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export BEVY_ASSET_ROOT=$PWD HEIMDALL_CACHE_DIR=$PWD/.cache
K=/tmp/keep; mkdir -p $K
for b in main obs; do xz -dc .device/d22/emoji-$b.xz > $K/emoji-$b; chmod +x $K/emoji-$b; done
S=$OUT/emoji; mkdir -p $S
{ nproc; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv,noheader; sha256sum $K/*; } > $S/env.txt 2>&1
for cfg in "plain --resolution 1280x720 --fps 60" "high --resolution 2560x1440 --quality high --fps 60"; do
  name=${cfg%% *}; args=${cfg#* }
  for i in 1 2 3; do
    if [ $((i % 2)) -eq 1 ]; then order="main obs"; else order="obs main"; fi
    for b in $order; do
      python3 scripts/compare_modes.py --app emoji --bin $K/emoji-$b --modes heimdall --runs 1 --timeout 150 \
        --out $S/$name-$b-$i --json $S/$name-$b-$i.json -- --record-run --frames 660 --warmup 60 $args 2>&1 | grep -v '^run ' > $S/$name-$b-$i.md
      echo "$name $b $i at ${SECONDS}s"; grep -E "heimdall" $S/$name-$b-$i.md | head -5
    done
  done
done
find $S -name '*.png' -delete
find $S -name 'trace.json' -delete
tar cJf $OUT/emoji.txz -C $OUT emoji && rm -rf $S
