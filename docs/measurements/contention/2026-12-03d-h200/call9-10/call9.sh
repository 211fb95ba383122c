#!/usr/bin/env bash
# Call 9 (2026-12-03, fourth session): issue 34's full acceptance for shopping on main 621f900
# (docs/measurements/contention/run.sh: high 60/90 Hz, all cores and taskset 4 cores, 3 runs per mode;
# medium 60 Hz 2 runs per mode; heimdall and fifo interleaved).
set -u
R=.device/d4/contention_run.sh
K=/tmp/keep; mkdir -p $K/bin
bash $R setup 2>&1 | tail -3
xz -dc .device/d4/shopping.xz > $K/bin/shopping; chmod +x $K/bin/shopping
RUNS=3 CALM_RUNS=2 MODES="heimdall,fifo" bash $R shopping
grep -E '^== |style events|steal' $OUT/summary_shopping.txt | head -80
