#!/usr/bin/env bash
# Issue 38, 2026-12-04 (tenth session), call 5: hand_landmark_lite's 3x3 depthwise convolution on
# 14x14x288 alone (criterion, benches/cpu_kernels.rs) at 1, 2 and 4 threads pinned to cores
# 4-7, beside the pool's empty jobs: does it scale alone, or only not inside the model?
# Then its per-op time in the model at 1, 2 and 4 threads (494ea29's CLI), alternated, six each.
set -u
H=/tmp/h; mkdir -p $H $OUT/cpu
xz -dc .device/d16/heimdall-bands.xz > $H/bands; chmod +x $H/bands
xz -dc .device/d16/cpu_kernels.xz > $H/ck; chmod +x $H/ck
{ nproc; lscpu | grep -E "Model name|L2|L3"; uptime; sha256sum $H/bands $H/ck; } > $OUT/cpu/env.txt 2>&1
timeout 200 taskset -c 4-7 $H/ck --bench "pool|14x14x288|7x7" > $OUT/cpu/criterion.txt 2>&1
grep -E "^(pool|conv|depthwise)/|time:" $OUT/cpu/criterion.txt
echo "criterion at ${SECONDS}s"
MODEL=assets/models/hand_landmark_lite.tflite
pins=(x "taskset -c 4" "taskset -c 4-5" x "taskset -c 4-7")
for i in $(seq 1 6); do for t in 1 2 4; do
  timeout 30 ${pins[$t]} $H/bands bench $MODEL --threads $t --runs 100 --per-op > $OUT/cpu/perop-$t-$i.txt 2>&1
done; done
for t in 1 2 4; do echo "threads $t"; for i in $(seq 1 6); do awk '$1==19||$1==20||$1==22||$1==23||$1==35||$1==47 {printf "%s:%s ", $1, $3} /median/{printf "all %s ", $9}' $OUT/cpu/perop-$t-$i.txt; echo; done; done
echo "done at ${SECONDS}s"
tar cJf $OUT/cpu.txz -C $OUT cpu && rm -rf $OUT/cpu
