#!/usr/bin/env bash
# Call 1 of 2026-12-03 (fifth session): shopping3 = main 1c50398's shopping (start-up threads + backfilling a
# held CPU slot; main e3dd581 changes no app code after it). Shopping high 60 Hz on 4 cores, heimdall vs fifo,
# 3 interleaved runs, recorded; shopping high 90 Hz on all cores, heimdall, 1 run, recorded (fixed recorder).
set -u
R=docs/measurements/contention/run.sh
bash $R setup > $OUT/setup.txt 2>&1
mkdir -p /tmp/keep/bin && xz -dc .device/d7/shopping3.xz > /tmp/keep/bin/shopping && chmod +x /tmp/keep/bin/shopping
echo "setup at ${SECONDS}s"
mkdir -p $OUT/a $OUT/b
OUT=$OUT/a RUNS=3 SETS=shop_high_60_4c bash $R shopping
echo "4c at ${SECONDS}s"
OUT=$OUT/b RUNS=1 MODES=heimdall SETS=shop_high_90 bash $R shopping
echo "90 at ${SECONDS}s"
grep -E 'style events|hand_landmark|palm|^== ' $OUT/a/summary_shopping.txt | cut -c1-220 | head -40
