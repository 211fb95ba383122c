#!/usr/bin/env bash
# Issue 38, 2026-12-04 (tenth session), call 2: where hand_landmark_lite's 4-thread time goes,
# heimdall per op beside XNNPACK's per-op proxy (bench_cpu.py --xnnpack-prefix: the model cut
# after each op, consecutive prefixes' differences; 5 rounds of 100 calls), twice, pinned to
# cores 4-7; heimdall is call 1's CLI with main's split (HD_EXP unset). Carry: .device/d16.
set -u
H=/tmp/h; mkdir -p $H /tmp/site $OUT/cpu
xz -dc .device/d16/heimdall-exp.xz > $H/exp; chmod +x $H/exp
xz -dc .device/d16/site.tar.xz | tar xf - -C /tmp/site
{ nproc; lscpu | grep -E "Model name|L2|L3"; uptime; sha256sum $H/exp; } > $OUT/cpu/env.txt 2>&1
for rep in 1 2; do
  PYTHONPATH=/tmp/site timeout 280 taskset -c 4-7 python3 scripts/bench_cpu.py --exe $H/exp \
    --xnnpack-prefix hand_landmark_lite --threads 4 --runs 100 --rounds 5 > $OUT/cpu/prefix4-$rep.md 2>&1
  echo "rep $rep at ${SECONDS}s"; tail -12 $OUT/cpu/prefix4-$rep.md
done
tar cJf $OUT/cpu.txz -C $OUT cpu && rm -rf $OUT/cpu
