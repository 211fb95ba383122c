#!/usr/bin/env bash
# Issue 38, 2026-12-04 (eleventh session), call 1: each pool thread pinned to its own core
# (HD_PIN=1: the caller to the first CPU of the process's mask, worker w to the w-th) against
# the same CLI unpinned (HD_PIN unset: main's engine). Paired alternations of `heimdall bench
# --runs 100`, then bench_peers.py beside XNNPACK. Carry: .device/d16 .device/d18.
set -u
H=/tmp/h; mkdir -p $H /tmp/site $OUT/cpu
xz -dc .device/d18/heimdall-pin.xz > $H/pin; chmod +x $H/pin
xz -dc .device/d16/site.tar.xz | tar xf - -C /tmp/site
{ nproc; lscpu | grep -E "Model name|L2|L3|NUMA"; uptime; sha256sum $H/pin; HD_PIN=1 HD_PIN_SAY=1 taskset -c 4-7 $H/pin bench assets/models/hand_landmark_lite.tflite --threads 4 --runs 3; } > $OUT/cpu/env.txt 2>&1
M=assets/models
run() { local v=$1 pin=$2 t=$3 model=$4
  if [ $v = pin ]; then e="HD_PIN=1"; else e="HD_UNPIN=1"; fi
  env $e timeout 30 $pin $H/pin bench $M/$model.tflite --threads $t --runs 100 2>&1 | grep -o 'median [0-9.]*' | cut -d' ' -f2; }
for i in $(seq 1 12); do
  if [ $((i % 2)) -eq 1 ]; then order="none pin"; else order="pin none"; fi
  for cfg in "4 taskset -c 4-7" "2 taskset -c 4-5" "4 env" "1 taskset -c 2"; do
    t=${cfg%% *}; pin=${cfg#* }
    for v in $order; do echo "hl $t ${pin// /_} $i $v $(run $v "$pin" $t hand_landmark_lite)"; done
  done
done | tee $OUT/cpu/whole.txt
echo "whole at ${SECONDS}s"
for i in $(seq 1 6); do
  if [ $((i % 2)) -eq 1 ]; then order="none pin"; else order="pin none"; fi
  for m in face_detection_short_range face_landmark palm_detection_lite selfie_segmentation; do
    for v in $order; do echo "$m 4 $i $v $(run $v "taskset -c 4-7" 4 $m)"; done
  done
done | tee $OUT/cpu/others.txt
echo "others at ${SECONDS}s"
b() { local name=$1 e=$2; shift 2
      env $e PYTHONPATH=/tmp/site timeout 100 taskset -c 4-7 python3 scripts/bench_peers.py --engines heimdall,xnnpack --warmup 5 --exe $H/pin --json $OUT/cpu/$name.json "$@" > $OUT/cpu/$name.log 2>&1
      PYTHONPATH=/tmp/site python3 scripts/bench_peers.py --table-from $OUT/cpu/$name.json 2>&1 | grep -E '\| (heimdall|xnnpack) ' | cut -d'|' -f2,4,6,9 | sed "s/^/$name /"; }
for rep in 1 2 3 4; do
  if [ $((rep % 2)) -eq 1 ]; then order="none pin"; else order="pin none"; fi
  for v in $order; do
    if [ $v = pin ]; then e="HD_PIN=1"; else e="HD_UNPIN=1"; fi
    b hl4-$v-$rep $e --models hand_landmark_lite --threads 4 --rounds 5 --runs 20
  done
done | tee $OUT/cpu/peers.txt
echo "done at ${SECONDS}s"
tar cJf $OUT/cpu.txz -C $OUT cpu && rm -rf $OUT/cpu
