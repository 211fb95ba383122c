#!/usr/bin/env bash
# Issue 38, 2026-12-04 (tenth session), call 3: 494ea29's channel bands for weight-bound
# expansions (heimdall-bands.xz) against main's split (call 1's CLI, heimdall-exp.xz with HD_EXP
# unset: d9f5d23's engine), hand_landmark_lite: twelve paired alternations of `heimdall bench
# --runs 100` at 1 thread (core 2), 2 (cores 4-5) and 4 (cores 4-7), order swapped each time;
# then beside XNNPACK (ai-edge-litert 2.3.0, bench_peers.py, 5 interleaved rounds of 20 runs)
# at 1, 2 and 4 threads with both CLIs, three repetitions. Carry: .device/d16.
set -u
H=/tmp/h; mkdir -p $H /tmp/site $OUT/cpu
for v in exp bands; do xz -dc .device/d16/heimdall-$v.xz > $H/$v; chmod +x $H/$v; done
xz -dc .device/d16/site.tar.xz | tar xf - -C /tmp/site
{ nproc; lscpu | grep -E "Model name|L2|L3"; uptime; sha256sum $H/exp $H/bands; } > $OUT/cpu/env.txt 2>&1
MODEL=assets/models/hand_landmark_lite.tflite
pins=(x "taskset -c 2" "taskset -c 4-5" x "taskset -c 4-7")
for i in $(seq 1 12); do
  if [ $((i % 2)) -eq 1 ]; then order="exp bands"; else order="bands exp"; fi
  for t in 1 2 4; do for v in $order; do
    m=$(timeout 30 ${pins[$t]} $H/$v bench $MODEL --threads $t --runs 100 2>&1 | grep -o 'median [0-9.]*' | cut -d' ' -f2)
    echo "whole $t $i $v $m"
  done; done
done | tee $OUT/cpu/whole.txt
echo "whole at ${SECONDS}s"
b() { local name=$1 exe=$2 pin=$3; shift 3
      PYTHONPATH=/tmp/site timeout 100 $pin python3 scripts/bench_peers.py --engines heimdall,xnnpack --warmup 5 --exe $H/$exe --json $OUT/cpu/$name.json "$@" > $OUT/cpu/$name.log 2>&1
      PYTHONPATH=/tmp/site python3 scripts/bench_peers.py --table-from $OUT/cpu/$name.json 2>&1 | grep -E '\| (heimdall|xnnpack) ' | cut -d'|' -f2,4,6,9 | sed "s/^/$name /"; }
for rep in 1 2 3; do
  if [ $((rep % 2)) -eq 1 ]; then order="exp bands"; else order="bands exp"; fi
  for t in 1 2 4; do for v in $order; do
    b hl$t-$v-$rep $v "${pins[$t]}" --models hand_landmark_lite --threads $t --rounds 5 --runs 20
  done; done
done
echo "done at ${SECONDS}s"
tar cJf $OUT/cpu.txz -C $OUT cpu && rm -rf $OUT/cpu
