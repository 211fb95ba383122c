#!/usr/bin/env bash
# Issue 38, 2026-12-04 (ninth session), call 5: the depthwise convolution fused into the 1x1
# projection after it (heimdall-cpu fuse_dw.rs, ops/dw_pair.rs: branch cpu38b's pair on top of
# the expansion fusion; heimdall-dwpair.xz) against the expansion fusion alone (heimdall-fuse2.xz,
# f0b3155's engine): twelve alternations of `heimdall bench --runs 100` on hand_landmark_lite,
# order swapped each time, at 1 thread (core 2), 2 (cores 4-5) and 4 (cores 4-7); then both
# beside XNNPACK (ai-edge-litert 2.3.0) at 2 and 4 threads, four repetitions (bench_peers.py,
# 5 interleaved rounds of 20 runs, pinned as above). Carry: .device/d15.
set -u
H=/tmp/h; mkdir -p $H /tmp/site $OUT/cpu
for v in fuse2 dwpair; do xz -dc .device/d15/heimdall-$v.xz > $H/$v; chmod +x $H/$v; done
xz -dc .device/d15/site.tar.xz | tar xf - -C /tmp/site
{ nproc; lscpu | grep -E "Model name|L2"; uptime; sha256sum $H/fuse2 $H/dwpair; } > $OUT/cpu/env.txt 2>&1
MODEL=assets/models/hand_landmark_lite.tflite
pins=(x "taskset -c 2" "taskset -c 4-5" x "taskset -c 4-7")
for i in $(seq 1 12); do
  if [ $((i % 2)) -eq 1 ]; then order="fuse2 dwpair"; else order="dwpair fuse2"; fi
  for t in 1 2 4; do for v in $order; do
    m=$(timeout 30 ${pins[$t]} $H/$v bench $MODEL --threads $t --runs 100 2>&1 | grep -o 'median [0-9.]*' | cut -d' ' -f2)
    echo "whole $t $i $v $m"
  done; done
done | tee $OUT/cpu/whole.txt
echo "whole at ${SECONDS}s"
b() { local name=$1 exe=$2 pin=$3; shift 3
      PYTHONPATH=/tmp/site timeout 100 $pin python3 scripts/bench_peers.py --engines heimdall,xnnpack --warmup 5 --exe $H/$exe --json $OUT/cpu/$name.json "$@" > $OUT/cpu/$name.log 2>&1
      PYTHONPATH=/tmp/site python3 scripts/bench_peers.py --table-from $OUT/cpu/$name.json 2>&1 | grep -E '\| (heimdall|xnnpack) ' | cut -d'|' -f2,4,6,9 | sed "s/^/$name /"; }
for rep in 1 2 3 4; do
  if [ $((rep % 2)) -eq 1 ]; then order="fuse2 dwpair"; else order="dwpair fuse2"; fi
  for t in 2 4; do for v in $order; do
    b hl$t-$v-$rep $v "${pins[$t]}" --models hand_landmark_lite --threads $t --rounds 5 --runs 20
  done; done
done
for rep in 1 2; do for t in 1 2 4; do for v in fuse2 dwpair; do
  timeout 60 ${pins[$t]} $H/$v bench $MODEL --threads $t --per-op --runs 200 > $OUT/cpu/perop-$v-$t-$rep.txt 2>&1
done; done; done
echo "done at ${SECONDS}s"
tar cJf $OUT/cpu.txz -C $OUT cpu && rm -rf $OUT/cpu
