#!/usr/bin/env bash
# Call 5 of 2026-12-03 (fifth session). (1) Issue 38: branch cpu38b (a depthwise convolution fused into the
# 1x1 projection reading it, f75664d) against cpu38 (= main's CPU engine, the pool's waits), beside XNNPACK,
# interleaved: hand_landmark_lite at 4 threads, 3 rounds each; the five small models at 2 and 4 threads once.
# (2) Issue 34: emoji at 60 Hz (main's emoji, the CPU lane lent from the encoding), 2 runs per mode.
set -u
R=docs/measurements/contention/run.sh
mkdir -p .device/models
bash $R setup > $OUT/setup.txt 2>&1
H=/tmp/h; mkdir -p $H /tmp/site /tmp/keep/bin $OUT/cpu $OUT/emoji
xz -dc .device/d11/heimdall-38.xz > $H/cpu38; xz -dc .device/d11/heimdall-38b.xz > $H/cpu38b; chmod +x $H/*
xz -dc .device/d11/site.tar.xz | tar xf - -C /tmp/site
xz -dc .device/d11/emoji.xz > /tmp/keep/bin/emoji && chmod +x /tmp/keep/bin/emoji
sha256sum $H/* /tmp/keep/bin/emoji >> $OUT/setup.txt
echo "setup at ${SECONDS}s"
M=face_detection_short_range,palm_detection_lite,hand_landmark_lite,selfie_segmentation,face_landmark
b() { PYTHONPATH=/tmp/site timeout 90 python3 scripts/bench_peers.py --engines heimdall,xnnpack --warmup 5 --exe $H/$1 --json $OUT/cpu/$2.json "${@:3}" > $OUT/cpu/$2.log 2>&1
      PYTHONPATH=/tmp/site python3 scripts/bench_peers.py --table-from $OUT/cpu/$2.json 2>&1 | grep -E '\| (heimdall|xnnpack) ' | cut -d'|' -f2,4,6,10,11,14 | sed "s/^/$2 /"; }
for rep in 1 2 3; do for e in cpu38 cpu38b; do b $e $e-hl4-$rep --models hand_landmark_lite --threads 4 --rounds 5 --runs 20; done; done
for t in 2 4; do for e in cpu38 cpu38b; do b $e $e-all$t --models $M --threads $t --rounds 3 --runs 20; done; done
echo "cpu at ${SECONDS}s"
OUT=$OUT/emoji bash $R emoji
echo "emoji at ${SECONDS}s"
tar cJf $OUT/all.txz -C $OUT cpu emoji setup.txt && rm -rf $OUT/cpu $OUT/emoji
