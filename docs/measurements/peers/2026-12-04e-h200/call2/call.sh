#!/usr/bin/env bash
# Issue 38, 2026-12-04 (eleventh session), call 2: the five small models beside XNNPACK at 1, 2
# and 4 threads with main's engine (.device/d16/heimdall-bands.xz, 494ea29's CLI: no engine
# change since), bench_peers.py, outputs checked first, 5 interleaved rounds of 20 runs, three
# repetitions; 1 thread on core 2, 2 on cores 4-5, 4 on cores 4-7. Carry: .device/d16 .device/d18.
set -u
H=/tmp/h; mkdir -p $H /tmp/site $OUT/cpu
xz -dc .device/d16/heimdall-bands.xz > $H/main; chmod +x $H/main
xz -dc .device/d16/site.tar.xz | tar xf - -C /tmp/site
{ nproc; lscpu | grep -E "Model name|L2|L3"; uptime; sha256sum $H/main; } > $OUT/cpu/env.txt 2>&1
MODELS=face_detection_short_range,face_landmark,hand_landmark_lite,palm_detection_lite,selfie_segmentation
pins=(x "taskset -c 2" "taskset -c 4-5" x "taskset -c 4-7")
for rep in 1 2 3; do for t in 1 2 4; do
  n=t$t-$rep
  PYTHONPATH=/tmp/site timeout 170 ${pins[$t]} python3 scripts/bench_peers.py --engines heimdall,xnnpack --warmup 5 --exe $H/main --json $OUT/cpu/$n.json --models $MODELS --threads $t --rounds 5 --runs 20 > $OUT/cpu/$n.log 2>&1
  PYTHONPATH=/tmp/site python3 scripts/bench_peers.py --table-from $OUT/cpu/$n.json 2>&1 | grep -E '\| (heimdall|xnnpack) ' | cut -d'|' -f2,3,4,6,9 | sed "s/^/$n /"
  echo "$n at ${SECONDS}s"
done; done | tee $OUT/cpu/peers.txt
tar cJf $OUT/cpu.txz -C $OUT cpu && rm -rf $OUT/cpu
