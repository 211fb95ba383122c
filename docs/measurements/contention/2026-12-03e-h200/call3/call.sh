#!/usr/bin/env bash
# Call 3 of 2026-12-03 (fifth session): main 9735402's shopping (the CPU lane lent from the end of the DNN
# encoding + on-demand jobs that the GPU stopped advancing move to the CPU). Issue 34's shopping configurations
# at 60 Hz as run.sh has them: high on all cores and on 4 cores (3 interleaved runs per mode), medium (2).
set -u
R=docs/measurements/contention/run.sh
bash $R setup > $OUT/setup.txt 2>&1
mkdir -p /tmp/keep/bin && xz -dc .device/d9/shopping5.xz > /tmp/keep/bin/shopping && chmod +x /tmp/keep/bin/shopping
sha256sum /tmp/keep/bin/shopping >> $OUT/setup.txt
echo "setup at ${SECONDS}s"
SETS="shop_high_60 shop_high_60_4c shop_medium_60" bash $R shopping
echo "runs at ${SECONDS}s"
grep -E '^== |style events|palm' $OUT/summary_shopping.txt | cut -c1-200 | head -60
