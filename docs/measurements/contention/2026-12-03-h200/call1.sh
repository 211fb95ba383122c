#!/usr/bin/env bash
# Call 1 (2026-12-03): shopping on main after issue 36's merges: acceptance sets (+ palm ablation on 4 cores),
# then an A/B against 3ac83f6 (the 2026-12-02 merged build) on 4 cores, alternated.
set -u
R=.device/c1/contention_run.sh
bash $R setup > $OUT/setup.txt 2>&1
K=/tmp/keep; mkdir -p $K/bin
xz -dc .device/c1/shopping.xz > $K/bin/shopping && chmod +x $K/bin/shopping
xz -dc .device/c1/shopping_old.xz > $K/bin/shopping_old && chmod +x $K/bin/shopping_old
RUNS=3 CALM_RUNS=2 SETS="shop_high_60 shop_high_60_4c shop_medium_60 shop_high_90" MODES=heimdall,fifo \
  MODES_4C="heimdall,fifo,heimdall+palm-search-every-frame" bash $R shopping
export LD_LIBRARY_PATH=/tmp/gl/usr/lib/x86_64-linux-gnu VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export BEVY_ASSET_ROOT=$PWD HEIMDALL_CACHE_DIR=$PWD/.cache
mkdir -p /tmp/ab
A="--record-run --frames 660 --warmup 60 --resolution 2560x1440 --quality high --fps 60 --events 1"
for i in 1 2; do for b in shopping_old shopping; do
  python3 scripts/compare_modes.py --app shopping --bin $K/bin/$b --modes heimdall --runs 1 --timeout 150 --cpus 0-3 \
    --out /tmp/ab/$b-$i --json /tmp/ab/$b-$i.json -- $A 2>&1 | grep -v '^run ' > /tmp/ab/$b-$i.md
done; done
python3 - <<'PY' | tee $OUT/ab_summary.txt
import json,glob
for d in sorted(glob.glob('/tmp/ab/*-[12]/*/stats.json')):
    s=json.load(open(d)); m=s['models']
    h=[(n,x) for n,x in m.items() if n.startswith('hand') and x['count']]
    worst=max((x['deadline_miss_rate'],n) for n,x in m.items() if x['count'])
    print(d.split('/')[3], 'wall on time %.1f %%' % (100*s['wall_on_time_rate']),
          ' '.join('%s %.1f Hz miss %.1f %%' % (n[-2:], x['rate_hz'], 100*x['deadline_miss_rate']) for n,x in h),
          'palm %.1f Hz' % m['palm_detection_lite']['rate_hz'],
          'mask %.1f Hz' % m['selfie_segmentation']['rate_hz'], 'style p99 %.0f ms' % m['multistyle26']['latency_ms']['p99'],
          'worst misses %.1f %% (%s)' % (100*worst[0], worst[1][:12]))
PY
cd /tmp/ab && XZ_OPT=-T0 tar cJf $OUT/ab_runs.txz $(find . -maxdepth 1 -name '*.md' -o -maxdepth 1 -name '*.json') $(find . -name stats.json)
