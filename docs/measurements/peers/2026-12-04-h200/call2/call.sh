#!/usr/bin/env bash
# Call 2 of 2026-12-04. Issue 38's one-thread cell of hand_landmark_lite, which call 1 measured at
# 0.80x and 1.14x in two calls pinned to core 2: six calls of bench_peers.py (5 interleaved rounds of
# 20 runs), alternately pinned to core 2 and core 9, main's CPU engine against XNNPACK; then the five
# small models at one thread pinned to core 9 twice.
set -u
H=/tmp/h; mkdir -p $H /tmp/site $OUT/cpu1
xz -dc .device/d13/heimdall-38.xz > $H/main; chmod +x $H/main
xz -dc .device/d13/site.tar.xz | tar xf - -C /tmp/site
{ nproc; lscpu | grep -E "Model name|MHz"; uptime; sha256sum $H/main; } > $OUT/cpu1/env.txt 2>&1
M=face_detection_short_range,palm_detection_lite,hand_landmark_lite,selfie_segmentation,face_landmark
b() { local name=$1 pin=$2; shift 2
      PYTHONPATH=/tmp/site timeout 100 taskset -c $pin python3 scripts/bench_peers.py --engines heimdall,xnnpack --warmup 5 --exe $H/main --json $OUT/cpu1/$name.json "$@" > $OUT/cpu1/$name.log 2>&1
      PYTHONPATH=/tmp/site python3 -c "
import json,sys
d={}
for r in json.load(open('$OUT/cpu1/$name.json'))['rows']: d.setdefault(r['model'],{})[r['engine']]=r['median_ms']
for m,e in d.items(): print('$name', m, e['heimdall'], e['xnnpack'], round(e['xnnpack']/e['heimdall'],2))"; }
for rep in 1 2 3; do
  b hl1-c2-$rep 2 --models hand_landmark_lite --threads 1 --rounds 5 --runs 20
  b hl1-c9-$rep 9 --models hand_landmark_lite --threads 1 --rounds 5 --runs 20
done
for rep in 1 2; do b all1-c9-$rep 9 --models $M --threads 1 --rounds 3 --runs 20; done
echo "all at ${SECONDS}s"
tar cJf $OUT/cpu1.txz -C $OUT cpu1 && rm -rf $OUT/cpu1
