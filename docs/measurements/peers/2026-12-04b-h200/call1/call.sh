#!/usr/bin/env bash
# Issue 38, 2026-12-04 (eighth session): the max pool's interior path (4680ee5) on the device host.
# hand_landmark_lite at 4 threads, eight repetitions; in each, main's CLI before the change
# (heimdall-base.xz, e64c6e4) and after it (heimdall-pool.xz), the order swapped every repetition,
# each with XNNPACK (ai-edge-litert 2.3.0) in the same bench_peers.py call (5 interleaved rounds of
# 20 runs), alternately unpinned and pinned to cores 4-7; then the five small models at 1 (pinned
# to core 2), 2 and 4 threads with the new CLI, and its per-op profile of hand_landmark_lite.
# Carry: .device/d14 (the two stripped CLIs, xz; site.tar.xz as in docs/peers.md).
set -u
H=/tmp/h; mkdir -p $H /tmp/site $OUT/cpu
for v in base pool; do xz -dc .device/d14/heimdall-$v.xz > $H/$v; chmod +x $H/$v; done
xz -dc .device/d14/site.tar.xz | tar xf - -C /tmp/site
{ nproc; lscpu | grep -E "Model name|Socket|Core|Thread|NUMA node"; uptime; python3 --version; sha256sum $H/base $H/pool; } > $OUT/cpu/env.txt 2>&1
M=face_detection_short_range,palm_detection_lite,hand_landmark_lite,selfie_segmentation,face_landmark
b() { local name=$1 exe=$2 pin=$3; shift 3
      PYTHONPATH=/tmp/site timeout 100 $pin python3 scripts/bench_peers.py --engines heimdall,xnnpack --warmup 5 --exe $H/$exe --json $OUT/cpu/$name.json "$@" > $OUT/cpu/$name.log 2>&1
      PYTHONPATH=/tmp/site python3 scripts/bench_peers.py --table-from $OUT/cpu/$name.json 2>&1 | grep -E '\| (heimdall|xnnpack) ' | cut -d'|' -f2,4,6,10 | sed "s/^/$name /"; }
for rep in 1 2 3 4 5 6 7 8; do
  pin=""; [ $((rep % 2)) -eq 0 ] && pin="taskset -c 4-7"
  if [ $((rep % 4)) -lt 2 ]; then order="base pool"; else order="pool base"; fi
  for v in $order; do b hl4-$v-$rep $v "$pin" --models hand_landmark_lite --threads 4 --rounds 5 --runs 20; done
done
echo "hl4 at ${SECONDS}s"
b all1 pool "taskset -c 2" --models $M --threads 1 --rounds 3 --runs 20
b all2 pool "" --models $M --threads 2 --rounds 3 --runs 20
b all4 pool "" --models $M --threads 4 --rounds 3 --runs 20
echo "all at ${SECONDS}s"
PYTHONPATH=/tmp/site timeout 60 python3 scripts/bench_cpu.py --exe $H/pool --profile hand_landmark_lite --threads 1,4 --runs 40 --rounds 3 --top 12 --json $OUT/cpu/profile.json > $OUT/cpu/profile.md 2>&1
echo "done at ${SECONDS}s"
tar cJf $OUT/cpu.txz -C $OUT cpu && rm -rf $OUT/cpu
