#!/usr/bin/env bash
# Issue 38, 2026-12-04 (tenth session), call 7: the pool's knobs at 4 threads (cores 4-7).
# One CLI (494ea29 + exp.patch: HD_PAUSE_US, how long a waiting thread pauses before it yields,
# default 10 µs; HD_CHUNKS, the most parts a thread a split aims at, default 4), variants rotated:
#   base, pause100, pause1000, chunks2, chunks8
# twelve rounds of `heimdall bench --runs 100` on hand_landmark_lite, then beside XNNPACK with
# main's values only (3 repetitions).
# Carry: .device/d17.
set -u
H=/tmp/h; mkdir -p $H /tmp/site $OUT/cpu
xz -dc .device/d17/heimdall-knobs.xz > $H/k; chmod +x $H/k
xz -dc .device/d17/site.tar.xz | tar xf - -C /tmp/site
{ nproc; lscpu | grep -E "Model name|L2|L3"; uptime; sha256sum $H/k; } > $OUT/cpu/env.txt 2>&1
MODEL=assets/models/hand_landmark_lite.tflite
names=(base pause100 pause1000 chunks2 chunks8)
vals=("HD_X=1" "HD_PAUSE_US=100" "HD_PAUSE_US=1000" "HD_CHUNKS=2" "HD_CHUNKS=8")
for i in $(seq 0 11); do for k in 0 1 2 3 4; do j=$(( (i + k) % 5 ))
  m=$(env ${vals[$j]} timeout 30 taskset -c 4-7 $H/k bench $MODEL --threads 4 --runs 100 2>/dev/null | grep -o 'median [0-9.]*' | cut -d' ' -f2)
  echo "whole 4 $i ${names[$j]} $m"
done; done > $OUT/cpu/whole.txt
echo "whole at ${SECONDS}s"
awk '{a[$4]=a[$4]" "$5} END{for (k in a) print k, a[k]}' $OUT/cpu/whole.txt
for rep in 1 2 3; do
  PYTHONPATH=/tmp/site timeout 100 taskset -c 4-7 python3 scripts/bench_peers.py --engines heimdall,xnnpack --warmup 5 --exe $H/k --json $OUT/cpu/hl4-base-$rep.json --models hand_landmark_lite --threads 4 --rounds 5 --runs 20 > $OUT/cpu/hl4-base-$rep.log 2>&1
  PYTHONPATH=/tmp/site python3 scripts/bench_peers.py --table-from $OUT/cpu/hl4-base-$rep.json 2>&1 | grep -E '\| (heimdall|xnnpack) ' | cut -d'|' -f2,4,6,9 | sed "s/^/$rep /"
done
echo "done at ${SECONDS}s"
tar cJf $OUT/cpu.txz -C $OUT cpu && rm -rf $OUT/cpu
