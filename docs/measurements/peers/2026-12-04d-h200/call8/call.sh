#!/usr/bin/env bash
# Issue 38, 2026-12-04 (tenth session), call 8: what reading another core's writes costs the 3x3
# depthwise convolution on 14x14x288 (criterion `locality/*` of benches/cpu_kernels.rs: its input
# rewritten before each run by the pool in even row bands, or by the calling thread alone, beside
# the writes alone and the untouched input) at 1, 2 and 4 threads, pinned to cores 4-7, twice.
# Carry: .device/d17 (the stripped bench binary, cpu_kernels.xz).
set -u
H=/tmp/h; mkdir -p $H $OUT/cpu
xz -dc .device/d17/cpu_kernels.xz > $H/ck; chmod +x $H/ck
{ nproc; lscpu | grep -E "Model name|L2|L3"; uptime; sha256sum $H/ck; } > $OUT/cpu/env.txt 2>&1
for rep in 1 2; do
  timeout 250 taskset -c 4-7 $H/ck --bench "locality" > $OUT/cpu/criterion-$rep.txt 2>&1
  grep -E "time:" $OUT/cpu/criterion-$rep.txt | sed 's/ *time: *//'
  echo "rep $rep at ${SECONDS}s"
done
tar cJf $OUT/cpu.txz -C $OUT cpu && rm -rf $OUT/cpu
