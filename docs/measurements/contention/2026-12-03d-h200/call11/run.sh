#!/usr/bin/env bash
# Call 11 (2026-12-03, fourth session): main 621f900 + the CPU measurement at start-up as the fastest
# of up to three timed runs (a model's threads the same run to run); shopping high 60 Hz on 4 cores
# (3 runs per mode, with heimdall+early-frame-start as an ablation of the late frame start) and on all
# cores (2 per mode); then (issue 38) hand_landmark_lite per op, heimdall (main's CLI) beside XNNPACK
# (ai-edge-litert 2.3.0, prefix differences) at 4 threads.
set -u
D=.device/d5
R=$D/contention_run.sh
K=/tmp/keep; mkdir -p $K/bin /tmp/o11
bash $R setup 2>&1 | tail -2
xz -dc $D/shopping2.xz > $K/bin/shopping; chmod +x $K/bin/shopping
OUT=/tmp/o11 RUNS=3 SETS="shop_high_60_4c" MODES="heimdall,fifo,heimdall+early-frame-start" bash $R shopping
mv /tmp/o11/acceptance_shopping.txt $OUT/acceptance_4c.txt; mv /tmp/o11/summary_shopping.txt $OUT/summary_4c.txt
mv /tmp/o11/*.txz $OUT/
OUT=/tmp/o11 RUNS=2 SETS="shop_high_60" MODES="heimdall,fifo" bash $R shopping
mv /tmp/o11/acceptance_shopping.txt $OUT/acceptance_all.txt; mv /tmp/o11/summary_shopping.txt $OUT/summary_all.txt
mv /tmp/o11/*.txz $OUT/
for f in $OUT/summary_4c.txt $OUT/summary_all.txt; do grep -E '^== |style events|palm|multistyle' $f | cut -c1-250; done
echo "contention done at ${SECONDS}s"
xz -dc $D/heimdall.xz > $K/heimdall; chmod +x $K/heimdall
mkdir -p /tmp/site && xz -dc $D/site.tar.xz | tar xf - -C /tmp/site
for t in 4; do
  PYTHONPATH=/tmp/site timeout 100 python3 scripts/bench_cpu.py --exe $K/heimdall --xnnpack-prefix hand_landmark_lite \
      --threads $t --runs 60 --rounds 2 > /tmp/o11/prefix_t$t.md 2>&1
  echo "prefix t$t done at ${SECONDS}s"
done
tar cf $OUT/prefix.tar -C /tmp/o11 prefix_t4.md
grep -A40 'op kind' /tmp/o11/prefix_t4.md | head -30; grep 'whole model' /tmp/o11/prefix_t*.md
echo "all done at ${SECONDS}s"
