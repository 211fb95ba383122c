#!/usr/bin/env bash
# Call 2 of 2026-12-03 (fifth session): shopping4 = main e3dd581 + the coordinator lent to the CPU lane from the
# end of the frame's DNN encoding (HeimdallSettings::cpu_lend_after_encode; ablation --cpu-lend-at-frame-end).
# Shopping high 60 Hz on 4 cores: heimdall, heimdall+cpu-lend-at-frame-end, fifo, 3 interleaved runs, recorded;
# then all cores: heimdall and the ablation, 2 runs each.
set -u
R=docs/measurements/contention/run.sh
bash $R setup > $OUT/setup.txt 2>&1
mkdir -p /tmp/keep/bin && xz -dc .device/d8/shopping4.xz > /tmp/keep/bin/shopping && chmod +x /tmp/keep/bin/shopping
sha256sum /tmp/keep/bin/shopping >> $OUT/setup.txt
echo "setup at ${SECONDS}s"
mkdir -p $OUT/a $OUT/b
OUT=$OUT/a RUNS=3 MODES=heimdall,heimdall+cpu-lend-at-frame-end,fifo SETS=shop_high_60_4c bash $R shopping
echo "4c at ${SECONDS}s"
OUT=$OUT/b RUNS=2 MODES=heimdall,heimdall+cpu-lend-at-frame-end SETS=shop_high_60 bash $R shopping
echo "all at ${SECONDS}s"
grep -E 'style events|hand_landmark|palm|^== ' $OUT/a/summary_shopping.txt | cut -c1-200 | head -60
