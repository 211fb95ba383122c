#!/bin/bash
# Issue #38 on the device host's CPU, 2026-12-03 (third session): main's CLI (8888c91 engine,
# after the even depthwise/1x1 splits) against XNNPACK (ai-edge-litert 2.3.0) on the five small
# MediaPipe models at 1 (pinned), 2 and 4 threads, outputs checked first; then per-op profiles.
set -u
OUT=${OUT:?set OUT}
H=/tmp/h38; mkdir -p $H /tmp/site38
xz -dc .devcpu/heimdall-arm.xz > $H/arm; chmod +x $H/arm
xz -dc .devcpu/site.tar.xz | tar xf - -C /tmp/site38
export PYTHONPATH=/tmp/site38
{ nproc; lscpu | grep -E "Model name|Thread|Core|Socket|MHz" | cut -c1-160; python3 --version; sha256sum $H/arm; } > $OUT/env.txt 2>&1
MODELS=face_detection_short_range,palm_detection_lite,hand_landmark_lite,selfie_segmentation,face_landmark
timeout 110 taskset -c 2 python3 scripts/bench_peers.py --models "$MODELS" --threads 1 \
    --engines heimdall,xnnpack --rounds 5 --runs 20 --warmup 5 --exe $H/arm \
    --json $OUT/peers.json >> $OUT/peers.log 2>&1
echo "t1 done at ${SECONDS}s"
for t in 2 4; do
  for rep in 1 2; do
    timeout 80 python3 scripts/bench_peers.py --models "$MODELS" --threads $t \
        --engines heimdall,xnnpack --rounds 5 --runs 20 --warmup 5 --exe $H/arm \
        --json $OUT/peers_r$rep.json $( [ $t = 2 ] && [ $rep = 1 ] || echo --append ) >> $OUT/peers.log 2>&1
  done
  echo "t$t done at ${SECONDS}s"
done
cp $OUT/peers.json $OUT/peers_t1.json
python3 scripts/bench_peers.py --table-from $OUT/peers.json > $OUT/peers_t1.md 2>&1
for rep in 1 2; do python3 scripts/bench_peers.py --table-from $OUT/peers_r$rep.json > $OUT/peers_r$rep.md 2>&1; done
cat $OUT/peers_t1.md $OUT/peers_r1.md $OUT/peers_r2.md | grep -E 'heimdall|xnnpack' | grep -v gpu
timeout 100 python3 scripts/bench_cpu.py --exe $H/arm --profile hand_landmark_lite --threads 1,2,4 \
    --runs 40 --rounds 3 --top 12 --json $OUT/profile.json > $OUT/profile.md 2>&1
echo "all done at ${SECONDS}s"
