#!/usr/bin/env bash
# Call 3 (2026-12-03, second session): where the in-app CPU runs' time goes (stats.json
# cpu_runs: queued, lock, prepare, ops; the caller's time on a core and runnable; the caller's
# share of the split ops' parts). workspace high 90 Hz (heimdall, heimdall with 8 CPU slots, fifo)
# and shopping medium 60 Hz (heimdall, fifo), 1 run each; the CLI's text bench alone.
set -u
R=.device/c3/contention_run.sh
K=/tmp/keep; mkdir -p $K/bin /tmp/o3
bash $R setup > /tmp/o3/setup.txt 2>&1; tail -3 /tmp/o3/setup.txt
xz -dc .device/c3/apps.tar.xz | tar xf - -C $K/bin
xz -dc .device/c3/heimdall.xz > $K/bin/heimdall; chmod +x $K/bin/*
summ() {
python3 - <<'PY' >> /tmp/o3/cpu_runs.txt
import json, glob
for f in sorted(glob.glob('/tmp/contention/*/*/stats.json')):
    s = json.load(open(f))
    print('==', f.split('/contention/')[1], 'busy', s.get('cpu_cores'), 'slots', s.get('cpu_slots'))
    for name, m in s['models'].items():
        c = m.get('cpu_runs')
        if not c: continue
        p50 = lambda k: c[k]['p50'] if c[k]['count'] else None
        print(f"  {name}: n={c['count']} thr={c['threads']} queued={p50('queued_ms')} lock={p50('lock_ms')} prep={p50('prepare_ms')} "
              f"whole={p50('whole_run_ms')} (p99 {c['whole_run_ms']['p99']}) oncpu={p50('caller_on_cpu_share')} runnable={p50('caller_runnable_ms')} "
              f"parts={p50('caller_parts_share')} jobs={c['pool_jobs']} waking={c['pool_jobs_waking_share']:.3f} inline={c['pool_inline_jobs']} rate={m['rate_hz']:.1f}")
PY
}
OUT=/tmp/o3/ws RUNS=1 SETS="ws_high_90" MODES="heimdall,heimdall+cpu-workers=8,fifo" bash $R workspace
summ
OUT=/tmp/o3/shop CALM_RUNS=1 SETS="shop_medium_60" MODES="heimdall,fifo" bash $R shopping
summ
(
export LD_LIBRARY_PATH=/tmp/gl/usr/lib/x86_64-linux-gnu VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
M=$K/models/PP-OCRv6_det_small.onnx
for t in 7 4; do echo "== CLI alone, $t threads"; $K/bin/heimdall bench $M --runs 8 --warmup 2 --input-shape x=1x3x736x1312 --threads $t 2>&1 | tail -1; done
) > /tmp/o3/text_bench.txt 2>&1
cat /tmp/o3/text_bench.txt
cat /tmp/o3/cpu_runs.txt
cp /tmp/o3/cpu_runs.txt /tmp/o3/text_bench.txt $OUT/
cd /tmp && tar cJf $OUT/o3.txz o3
ls -la $OUT
