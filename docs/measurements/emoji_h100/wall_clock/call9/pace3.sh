#!/usr/bin/env bash
# Emoji pacing: the harness's old swap-chain emulation (HEIMDALL_SWAPCHAIN_WAIT=all) against the
# new one (wait for frame N-2), interleaved run by run, heimdall and fifo each.
# Usage: pace3.sh LOAD WAITS [RUNS]  (LOAD plain|s600, WAITS e.g. "all frame" or "frame")
set -u
export PYTHONUNBUFFERED=1
load=$1; bins=$2; runs=${3:-3}
R=/tmp/res; mkdir -p $R
mkdir -p /tmp/gl && for d in .gl/*.deb; do dpkg -x $d /tmp/gl; done
export LD_LIBRARY_PATH=/tmp/gl/usr/lib/x86_64-linux-gnu
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
[ -x /tmp/emoji_new ] || { xz -dc .devcarry/emoji_new.xz > /tmp/emoji_new; chmod +x /tmp/emoji_new; }
export BEVY_ASSET_ROOT=$PWD
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader; nproc; uptime
extra=""; [ $load != plain ] && extra="--scene-load ${load#s}"
for run in $(seq 1 $runs); do
  for bin in $bins; do
    HEIMDALL_SWAPCHAIN_WAIT=$bin python3 scripts/compare_modes.py --app emoji --bin /tmp/emoji_new --modes heimdall,fifo --runs 1 \
      --out /tmp/p-$load-$bin-$run --json $R/$load-$bin-$run.json -- --fps 60 --resolution 1280x720 --frames 900 --warmup 300 $extra > $R/$load-$bin-$run.md 2>&1
    for f in /tmp/p-$load-$bin-$run/*/stats.json; do
      python3 - "$f" "$bin" "$run" <<'PY'
import json,sys
s=json.load(open(sys.argv[1])); p=s.get("pacer",{}); w=s.get("swapchain",{})
print(sys.argv[2], sys.argv[3], sys.argv[1].split("/")[-2].split("-")[0], "wall %.1f" % (100*s.get("wall_on_time_rate",0)), "loop %.1f" % (100*(s.get("update_on_time_rate") or 0)),
      "upd_p99", round(p.get("update_ms",{}).get("p99",0),1), "long", p.get("updates_longer_than_a_period"),
      "gpuwait", w.get("frames_that_waited"), round((w.get("wait_ms") or {}).get("p99") or 0,1),
      "late", [[l[0], round(l[1],1)] for l in (s.get("late_frames") or [])][:10])
PY
    done
  done
done 2>&1 | tee $R/summary-$load.txt
tar czf $OUT/res-$load.tgz -C /tmp res
