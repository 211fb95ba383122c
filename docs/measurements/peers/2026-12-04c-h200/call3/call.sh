#!/usr/bin/env bash
# Issue 38, 2026-12-04 (ninth session), call 3: main's CLI (heimdall-pool.xz) against the
# expansion -> depthwise fusion (heimdall-fuse2.xz) on hand_landmark_lite alone, in short paired
# runs so that a host whose speed drifts compares like with like: twelve alternations (order
# swapped each time) of `heimdall bench --runs 100` at 1 thread (core 2), 2 (cores 4-5) and 4
# (cores 4-7); then six alternations of `--per-op` at 1 and 2 threads.
# Carry: .device/d15.
set -u
H=/tmp/h; mkdir -p $H $OUT/cpu
for v in pool fuse2; do xz -dc .device/d15/heimdall-$v.xz > $H/$v; chmod +x $H/$v; done
{ nproc; lscpu | grep -E "Model name|L2"; uptime; sha256sum $H/pool $H/fuse2; } > $OUT/cpu/env.txt 2>&1
MODEL=assets/models/hand_landmark_lite.tflite
pins=(x "taskset -c 2" "taskset -c 4-5" x "taskset -c 4-7")
for i in $(seq 1 12); do
  if [ $((i % 2)) -eq 1 ]; then order="pool fuse2"; else order="fuse2 pool"; fi
  for t in 1 2 4; do for v in $order; do
    m=$(timeout 30 ${pins[$t]} $H/$v bench $MODEL --threads $t --runs 100 2>&1 | grep -o 'median [0-9.]*' | cut -d' ' -f2)
    echo "whole $t $i $v $m"
  done; done
done | tee $OUT/cpu/whole.txt
echo "whole at ${SECONDS}s"
for i in $(seq 1 6); do
  if [ $((i % 2)) -eq 1 ]; then order="pool fuse2"; else order="fuse2 pool"; fi
  for t in 1 2; do for v in $order; do
    timeout 30 ${pins[$t]} $H/$v bench $MODEL --threads $t --per-op --runs 100 > $OUT/cpu/perop-$v-$t-$i.txt 2>&1
  done; done
done
echo "done at ${SECONDS}s"
tar cJf $OUT/cpu.txz -C $OUT cpu && rm -rf $OUT/cpu
