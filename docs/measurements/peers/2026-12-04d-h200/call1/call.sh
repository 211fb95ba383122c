#!/usr/bin/env bash
# Issue 38, 2026-12-04 (tenth session), call 1: where each thread's share of a 1x1
# convolution's weights lies. One CLI (d9f5d23 + exp.patch: the split of a 1x1 convolution
# chosen by HD_EXP, outputs bit-identical), variants rotated each round, pinned to cores 4-7
# (4 threads) or 4-5 (2 threads):
#   none   main's split (pixel rows; at 7x7 8 row parts by 2 channel halves, handed out by
#          position, so every thread reads every weight)
#   colsE  expansions whose weights outweigh their input and output (7x7 112 -> 672): one
#          band of output channels a thread
#   projx  projections likewise heavy (7x7 672 -> 112, 384 -> 112): 2 row halves by 2 channel halves
#   e14    the other expansions at 14x14 (48 -> 288, 64 -> 384): 2 by 2
# Then hand_landmark_lite beside XNNPACK (ai-edge-litert 2.3.0, bench_peers.py, 5 interleaved
# rounds of 20) at 4 threads with none and with all three, and the other small
# models paired. Carry: .device/d16.
set -u
H=/tmp/h; mkdir -p $H /tmp/site $OUT/cpu
xz -dc .device/d16/heimdall-exp.xz > $H/exp; chmod +x $H/exp
xz -dc .device/d16/site.tar.xz | tar xf - -C /tmp/site
{ nproc; lscpu | grep -E "Model name|L2|L3"; uptime; sha256sum $H/exp; } > $OUT/cpu/env.txt 2>&1
HL=assets/models/hand_landmark_lite.tflite
vs=(none colsE colsE,projx colsE,e14 colsE,projx,e14)
# Per op at 4 threads, 8 rounds, the variants rotated.
for i in $(seq 0 7); do for k in 0 1 2 3 4; do
  v=${vs[$(( (i + k) % 5 ))]}
  HD_EXP=$v timeout 30 taskset -c 4-7 $H/exp bench $HL --threads 4 --runs 100 --per-op > $OUT/cpu/perop-4-$v-$i.txt 2>/dev/null
done; done
echo "perop at ${SECONDS}s"
# Whole model, 12 rounds, 4 threads and 2 threads.
for i in $(seq 0 11); do
  for k in 0 1 2 3 4; do v=${vs[$(( (i + k) % 5 ))]}
    m=$(HD_EXP=$v timeout 30 taskset -c 4-7 $H/exp bench $HL --threads 4 --runs 100 2>/dev/null | grep -o 'median [0-9.]*' | cut -d' ' -f2)
    echo "whole 4 $i $v $m"
  done
  for k in 0 1 2; do v=${vs[$(( (i + k) % 3 ))]}
    m=$(HD_EXP=$v timeout 30 taskset -c 4-5 $H/exp bench $HL --threads 2 --runs 100 2>/dev/null | grep -o 'median [0-9.]*' | cut -d' ' -f2)
    echo "whole 2 $i $v $m"
  done
done | tee $OUT/cpu/whole.txt
echo "whole at ${SECONDS}s"
# The other small models at 4 threads, none against all three, 6 rounds.
for i in $(seq 0 5); do for m in face_detection_short_range palm_detection_lite selfie_segmentation face_landmark; do
  if [ $((i % 2)) -eq 0 ]; then order="none colsE,projx,e14"; else order="colsE,projx,e14 none"; fi
  for v in $order; do
    r=$(HD_EXP=$v timeout 30 taskset -c 4-7 $H/exp bench assets/models/$m.tflite --threads 4 --runs 100 2>/dev/null | grep -o 'median [0-9.]*' | cut -d' ' -f2)
    echo "other $m $i $v $r"
  done
done; done | tee $OUT/cpu/other.txt
echo "other at ${SECONDS}s"
b() { local name=$1 v=$2; shift 2
      HD_EXP=$v PYTHONPATH=/tmp/site timeout 100 taskset -c 4-7 python3 scripts/bench_peers.py --engines heimdall,xnnpack --warmup 5 --exe $H/exp --json $OUT/cpu/$name.json "$@" > $OUT/cpu/$name.log 2>&1
      PYTHONPATH=/tmp/site python3 scripts/bench_peers.py --table-from $OUT/cpu/$name.json 2>&1 | grep -E '\| (heimdall|xnnpack) ' | cut -d'|' -f2,4,6,9 | sed "s/^/$name /"; }
for rep in 1 2 3 4; do
  if [ $((rep % 2)) -eq 1 ]; then order="none colsE,projx,e14"; else order="colsE,projx,e14 none"; fi
  for v in $order; do b hl4-$v-$rep $v --models hand_landmark_lite --threads 4 --rounds 5 --runs 20; done
done
echo "done at ${SECONDS}s"
tar cJf $OUT/cpu.txz -C $OUT cpu && rm -rf $OUT/cpu
