#!/usr/bin/env bash
# Call 4 of 2026-12-03 (fifth session). (1) Issue 38: hand_landmark_lite at 4 threads, main 9735402's CLI
# against branch cpu38's (e58905b: the pool's waits), each beside XNNPACK, interleaved, 2 rounds each.
# (2) Issue 34: workspace high at 60/90 Hz on all cores and on 4 cores, main 9735402, 2 runs per mode.
set -u
R=docs/measurements/contention/run.sh
mkdir -p .device/models && cp .device/m2/*.gz .device/models/
bash $R setup > $OUT/setup.txt 2>&1
H=/tmp/h; mkdir -p $H /tmp/site /tmp/keep/bin
xz -dc .device/d10/heimdall-main.xz > $H/main; xz -dc .device/d10/heimdall-38.xz > $H/cpu38; chmod +x $H/*
xz -dc .device/d10/site.tar.xz | tar xf - -C /tmp/site
xz -dc .device/d10/workspace5.xz > /tmp/keep/bin/workspace && chmod +x /tmp/keep/bin/workspace
sha256sum $H/* /tmp/keep/bin/workspace >> $OUT/setup.txt
echo "setup at ${SECONDS}s"
mkdir -p $OUT/cpu
for rep in 1 2; do for e in main cpu38; do
  PYTHONPATH=/tmp/site timeout 60 python3 scripts/bench_peers.py --models hand_landmark_lite --threads 4 \
    --engines heimdall,xnnpack --rounds 5 --runs 20 --warmup 5 --exe $H/$e \
    --json $OUT/cpu/$e-$rep.json > $OUT/cpu/$e-$rep.log 2>&1
  PYTHONPATH=/tmp/site python3 scripts/bench_peers.py --table-from $OUT/cpu/$e-$rep.json 2>&1 | grep -E '\| (heimdall|xnnpack) ' | sed "s/^/$e-$rep /"
done; done
echo "cpu at ${SECONDS}s"
mkdir -p $OUT/ws
OUT=$OUT/ws RUNS=2 bash $R workspace
echo "ws at ${SECONDS}s"
grep -E '^== |text|hand_landmark' $OUT/ws/summary_workspace.txt | cut -c1-180 | head -50
