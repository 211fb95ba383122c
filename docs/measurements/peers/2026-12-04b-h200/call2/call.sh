#!/usr/bin/env bash
# Call 2: call 1's five-model run had hand_landmark_lite at 2 threads 0.65x XNNPACK (2.89 against
# 1.89 ms, heimdall barely faster than at one thread). Six repetitions at 2 threads, the CLIs before
# and after 4680ee5 each with XNNPACK, alternately unpinned and pinned to cores 4-5; one thread
# pinned to core 2 twice; heimdall's per-op times at 2 threads (both CLIs, unpinned and pinned).
set -u
H=/tmp/h; mkdir -p $H /tmp/site $OUT/cpu
for v in base pool; do xz -dc .device/d14/heimdall-$v.xz > $H/$v; chmod +x $H/$v; done
xz -dc .device/d14/site.tar.xz | tar xf - -C /tmp/site
{ nproc; lscpu | grep -E "Model name|MHz|L2|L3"; uptime; sha256sum $H/base $H/pool; } > $OUT/cpu/env.txt 2>&1
b() { local name=$1 exe=$2 pin=$3; shift 3
      PYTHONPATH=/tmp/site timeout 100 $pin python3 scripts/bench_peers.py --engines heimdall,xnnpack --warmup 5 --exe $H/$exe --json $OUT/cpu/$name.json "$@" > $OUT/cpu/$name.log 2>&1
      PYTHONPATH=/tmp/site python3 scripts/bench_peers.py --table-from $OUT/cpu/$name.json 2>&1 | grep -E '\| (heimdall|xnnpack) ' | cut -d'|' -f4,6,9 | tr '\n' ' ' | sed "s/^/$name /"; echo; }
for rep in 1 2 3 4 5 6; do
  pin=""; [ $((rep % 2)) -eq 0 ] && pin="taskset -c 4-5"
  if [ $((rep % 4)) -lt 2 ]; then order="base pool"; else order="pool base"; fi
  for v in $order; do b hl2-$v-$rep $v "$pin" --models hand_landmark_lite --threads 2 --rounds 5 --runs 20; done
done
for rep in 1 2; do for v in base pool; do b hl1-$v-$rep $v "taskset -c 2" --models hand_landmark_lite --threads 1 --rounds 3 --runs 20; done; done
echo "peers at ${SECONDS}s"
for v in base pool; do for pin in "" "taskset -c 4-5"; do
  tag=$v-${pin:+pin}; $pin timeout 30 $H/$v bench --threads 2 --runs 300 --per-op assets/models/hand_landmark_lite.tflite > $OUT/cpu/perop2-$tag.txt 2>&1
  head -1 $OUT/cpu/perop2-$tag.txt
done; done
echo "done at ${SECONDS}s"
tar cJf $OUT/cpu.txz -C $OUT cpu && rm -rf $OUT/cpu
