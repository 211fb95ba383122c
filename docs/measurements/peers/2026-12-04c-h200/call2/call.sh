#!/usr/bin/env bash
# Issue 38, 2026-12-04 (ninth session), call 2: the expansion -> depthwise fusion with its mode
# chosen by a thread's share of the expanded tensor (by rows from 1 MiB a thread, else the two
# ops apart; heimdall-fuse2.xz) against main's CLI (heimdall-pool.xz, 4680ee5's engine, the same
# as main's dd2f7f4). First both CLIs' per-op times of hand_landmark_lite (`heimdall bench
# --per-op`, 1, 2 and 4 threads, interleaved, three times); then hand_landmark_lite at 1 (pinned
# to core 2), 2 and 4 threads (alternately unpinned and on cores 4-7), six repetitions, the CLIs'
# order swapped every repetition, each with XNNPACK (ai-edge-litert 2.3.0) in the same
# bench_peers.py call (5 interleaved rounds of 20 runs); then the five small models at 1, 2 and 4
# threads with both CLIs. Carry: .device/d15 (the two stripped CLIs, xz; site.tar.xz as in
# docs/peers.md).
set -u
H=/tmp/h; mkdir -p $H /tmp/site $OUT/cpu
for v in pool fuse2; do xz -dc .device/d15/heimdall-$v.xz > $H/$v; chmod +x $H/$v; done
xz -dc .device/d15/site.tar.xz | tar xf - -C /tmp/site
{ nproc; lscpu | grep -E "Model name|Socket|Core|Thread|NUMA node|L2"; uptime; python3 --version; sha256sum $H/pool $H/fuse2; } > $OUT/cpu/env.txt 2>&1
M=face_detection_short_range,palm_detection_lite,hand_landmark_lite,selfie_segmentation,face_landmark
b() { local name=$1 exe=$2 pin=$3; shift 3
      PYTHONPATH=/tmp/site timeout 100 $pin python3 scripts/bench_peers.py --engines heimdall,xnnpack --warmup 5 --exe $H/$exe --json $OUT/cpu/$name.json "$@" > $OUT/cpu/$name.log 2>&1
      PYTHONPATH=/tmp/site python3 scripts/bench_peers.py --table-from $OUT/cpu/$name.json 2>&1 | grep -E '\| (heimdall|xnnpack) ' | cut -d'|' -f2,4,6,9 | sed "s/^/$name /"; }
for rep in 1 2 3; do for t in 1 2 4; do for v in pool fuse2; do
  timeout 60 $H/$v bench assets/models/hand_landmark_lite.tflite --threads $t --per-op --runs 200 > $OUT/cpu/perop-$v-$t-$rep.txt 2>&1
  echo "perop $v $t $rep $(head -1 $OUT/cpu/perop-$v-$t-$rep.txt | grep -o 'median [0-9.]*')"
done; done; done
echo "per-op at ${SECONDS}s"
for rep in 1 2 3 4 5 6; do
  if [ $((rep % 2)) -eq 1 ]; then order="pool fuse2"; pin4=""; else order="fuse2 pool"; pin4="taskset -c 4-7"; fi
  for t in 1 2 4; do
    pin=$pin4; [ $t -eq 1 ] && pin="taskset -c 2"
    for v in $order; do b hl$t-$v-$rep $v "$pin" --models hand_landmark_lite --threads $t --rounds 5 --runs 20; done
  done
done
echo "hl at ${SECONDS}s"
for t in 1 2 4; do
  pin=""; [ $t -eq 1 ] && pin="taskset -c 2"
  for v in pool fuse2; do b all$t-$v $v "$pin" --models $M --threads $t --rounds 3 --runs 20; done
done
echo "done at ${SECONDS}s"
tar cJf $OUT/cpu.txz -C $OUT cpu && rm -rf $OUT/cpu
