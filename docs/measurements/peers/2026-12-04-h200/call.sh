#!/usr/bin/env bash
# Call 1 of 2026-12-04. Issue 38's open cell: hand_landmark_lite at 4 threads on the device host,
# main's CPU engine (heimdall-38.xz, the merged cpu38 work) against XNNPACK (ai-edge-litert 2.3.0),
# 8 calls of bench_peers.py (5 interleaved rounds of 20 runs each), alternating unpinned and pinned to
# cores 4-7; then 1 (pinned) and 2 threads twice, the five small models at 4 threads twice, and
# per-op times of both engines at 4 threads (bench_cpu.py --xnnpack-prefix, a proxy).
set -u
H=/tmp/h; mkdir -p $H /tmp/site $OUT/cpu
xz -dc .device/d12/heimdall-38.xz > $H/main; chmod +x $H/main
xz -dc .device/d12/site.tar.xz | tar xf - -C /tmp/site
{ nproc; lscpu | grep -E "Model name|Socket|Core|Thread|NUMA node"; uptime; python3 --version; sha256sum $H/main; } > $OUT/cpu/env.txt 2>&1
M=face_detection_short_range,palm_detection_lite,hand_landmark_lite,selfie_segmentation,face_landmark
b() { local name=$1 pin=$2; shift 2
      PYTHONPATH=/tmp/site timeout 100 $pin python3 scripts/bench_peers.py --engines heimdall,xnnpack --warmup 5 --exe $H/main --json $OUT/cpu/$name.json "$@" > $OUT/cpu/$name.log 2>&1
      PYTHONPATH=/tmp/site python3 scripts/bench_peers.py --table-from $OUT/cpu/$name.json 2>&1 | grep -E '\| (heimdall|xnnpack) ' | cut -d'|' -f2,4,6,10,11,14 | sed "s/^/$name /"; }
for rep in 1 2 3 4; do
  b hl4-free-$rep "" --models hand_landmark_lite --threads 4 --rounds 5 --runs 20
  b hl4-pin-$rep "taskset -c 4-7" --models hand_landmark_lite --threads 4 --rounds 5 --runs 20
done
echo "hl4 at ${SECONDS}s"
for rep in 1 2; do
  b hl1-$rep "taskset -c 2" --models hand_landmark_lite --threads 1 --rounds 5 --runs 20
  b hl2-$rep "" --models hand_landmark_lite --threads 2 --rounds 5 --runs 20
  b all4-$rep "" --models $M --threads 4 --rounds 3 --runs 20
done
echo "rest at ${SECONDS}s"
PYTHONPATH=/tmp/site timeout 150 python3 scripts/bench_cpu.py --exe $H/main --xnnpack-prefix hand_landmark_lite --threads 4 --runs 100 --json $OUT/cpu/prefix4.json > $OUT/cpu/prefix4.md 2>&1
PYTHONPATH=/tmp/site timeout 60 python3 scripts/bench_cpu.py --exe $H/main --profile hand_landmark_lite --threads 1,4 --runs 40 --rounds 3 --top 12 --json $OUT/cpu/profile.json > $OUT/cpu/profile.md 2>&1
echo "all at ${SECONDS}s"
tar cJf $OUT/cpu.txz -C $OUT cpu && rm -rf $OUT/cpu
