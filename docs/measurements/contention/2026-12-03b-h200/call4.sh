#!/usr/bin/env bash
# Call 4 (2026-12-03, second session): after the fast resample. workspace high 90 Hz (heimdall,
# fifo, 2 runs each) and shopping medium 60 Hz (heimdall, fifo, 2 runs each), with cpu_runs.
set -u
R=.device/c3/contention_run.sh
K=/tmp/keep; mkdir -p $K/bin /tmp/o4/ws /tmp/o4/shop
bash $R setup > /tmp/o4/setup.txt 2>&1; tail -2 /tmp/o4/setup.txt
xz -dc .device/c3/apps.tar.xz | tar xf - -C $K/bin; chmod +x $K/bin/*
summ() {
python3 - <<'PY' >> /tmp/o4/cpu_runs.txt
import json, glob
for f in sorted(glob.glob('/tmp/contention/*/*/stats.json')):
    s = json.load(open(f))
    print('==', f.split('/contention/')[1], 'slots', s.get('cpu_slots'))
    for name, m in s['models'].items():
        c = m.get('cpu_runs')
        st = m['latency_stages_ms']
        stages = ' '.join(f"{k}={v['p50']:.1f}" for k, v in st.items() if isinstance(v, dict) and v.get('count'))
        line = f"  {name}: rate={m['rate_hz']:.1f} lat p50/p99={m['latency_ms']['p50']:.1f}/{m['latency_ms']['p99']:.1f} [{stages}]"
        if c:
            p50 = lambda k: round(c[k]['p50'], 2) if c[k]['count'] else None
            line += (f" | cpu n={c['count']} thr={c['threads']} prep={p50('prepare_ms')} whole={p50('whole_run_ms')}"
                     f" oncpu={p50('caller_on_cpu_share')} runnable={p50('caller_runnable_ms')} parts={p50('caller_parts_share')}")
        print(line)
PY
}
OUT=/tmp/o4/ws RUNS=2 SETS="ws_high_90" MODES="heimdall,fifo" bash $R workspace
summ
OUT=/tmp/o4/shop CALM_RUNS=2 SETS="shop_medium_60" MODES="heimdall,fifo" bash $R shopping
summ
cat /tmp/o4/cpu_runs.txt
cp /tmp/o4/cpu_runs.txt $OUT/
cd /tmp && tar cf $OUT/o4.tar o4
ls -la $OUT
