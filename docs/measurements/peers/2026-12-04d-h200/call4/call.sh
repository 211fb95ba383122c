#!/usr/bin/env bash
# Issue 38, 2026-12-04 (tenth session), call 4: where the 4-thread time of hand_landmark_lite
# goes on the device host. (a) criterion: benches/cpu_kernels.rs's pool jobs (the fixed cost of
# a split op) and the 7x7 112 -> 672 expansion at 1, 2 and 4 threads, pinned to cores 4-7;
# (b) `heimdall bench --per-op --runs 100` with 494ea29's CLI at 1 thread (core 4) and at 4
# threads (cores 4-7), alternated, eight of each. Carry: .device/d16.
set -u
H=/tmp/h; mkdir -p $H $OUT/cpu
xz -dc .device/d16/heimdall-bands.xz > $H/bands; chmod +x $H/bands
xz -dc .device/d16/cpu_kernels.xz > $H/ck; chmod +x $H/ck
{ nproc; lscpu | grep -E "Model name|L2|L3"; uptime; sha256sum $H/bands $H/ck; } > $OUT/cpu/env.txt 2>&1
timeout 200 taskset -c 4-7 $H/ck --bench "pool|7x7" > $OUT/cpu/criterion.txt 2>&1
grep -E "^(pool|conv)/|time:" $OUT/cpu/criterion.txt
echo "criterion at ${SECONDS}s"
MODEL=assets/models/hand_landmark_lite.tflite
for i in $(seq 1 8); do
  timeout 30 taskset -c 4 $H/bands bench $MODEL --threads 1 --runs 100 --per-op > $OUT/cpu/perop-1-$i.txt 2>&1
  timeout 30 taskset -c 4-7 $H/bands bench $MODEL --threads 4 --runs 100 --per-op > $OUT/cpu/perop-4-$i.txt 2>&1
done
head -1 $OUT/cpu/perop-*.txt | grep median
echo "done at ${SECONDS}s"
tar cJf $OUT/cpu.txz -C $OUT cpu && rm -rf $OUT/cpu
