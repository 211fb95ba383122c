#!/usr/bin/env bash
# Call 10 (2026-12-03, fourth session): issue 34's full acceptance for workspace (high 60/90 Hz,
set -u
R=.device/d4/contention_run.sh
K=/tmp/keep; mkdir -p $K/bin
bash $R setup 2>&1 | tail -3
xz -dc .device/d4/workspace.xz > $K/bin/workspace; chmod +x $K/bin/workspace
RUNS=3 MODES="heimdall,fifo" bash $R workspace
grep -E '^== ' $OUT/summary_workspace.txt | head -40
