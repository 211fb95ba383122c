#!/usr/bin/env bash
# Call 3: in call 2 every op of hand_landmark_lite ran only 1.0-1.4x faster on 2 threads than on
# one, and 2-3x on 4: as if neighbouring vCPUs shared a physical core. Both engines at 2 threads
# pinned to cores 4-5, 4 and 6, 4 and 8, 4 and 12, and one thread on core 4, twice; the new CLI.
set -u
H=/tmp/h; mkdir -p $H /tmp/site $OUT/cpu
xz -dc .device/d14/heimdall-pool.xz > $H/pool; chmod +x $H/pool
xz -dc .device/d14/site.tar.xz | tar xf - -C /tmp/site
{ nproc; lscpu; uptime; cat /sys/devices/system/cpu/cpu4/topology/thread_siblings_list; } > $OUT/cpu/env.txt 2>&1
b() { local name=$1 pin=$2; shift 2
      PYTHONPATH=/tmp/site timeout 100 taskset -c $pin python3 scripts/bench_peers.py --engines heimdall,xnnpack --warmup 5 --exe $H/pool --json $OUT/cpu/$name.json "$@" > $OUT/cpu/$name.log 2>&1
      PYTHONPATH=/tmp/site python3 scripts/bench_peers.py --table-from $OUT/cpu/$name.json 2>&1 | grep -E '\| (heimdall|xnnpack) ' | cut -d'|' -f4,6,9 | tr '\n' ' ' | sed "s/^/$name /"; echo; }
for rep in 1 2; do
  b t1-c4-$rep 4 --models hand_landmark_lite --threads 1 --rounds 3 --runs 20
  for pin in 4-5 4,6 4,8 4,12; do b t2-${pin/,/+}-$rep $pin --models hand_landmark_lite --threads 2 --rounds 3 --runs 20; done
  b t4-4-7-$rep 4-7 --models hand_landmark_lite --threads 4 --rounds 3 --runs 20
  b t4-4+6+8+10-$rep 4,6,8,10 --models hand_landmark_lite --threads 4 --rounds 3 --runs 20
done
echo "done at ${SECONDS}s"
tar cJf $OUT/cpu.txz -C $OUT cpu && rm -rf $OUT/cpu
