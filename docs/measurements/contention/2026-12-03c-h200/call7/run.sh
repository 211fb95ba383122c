#!/usr/bin/env bash
# Call 7 (2026-12-03, third session): an event that fits the frame runs on the GPU (admission).
# shopping medium 60 (heimdall, fifo, 2 runs each), high 60 (2 each), high 60 on 4 cores (1 each).
set -u
R=.device/d1/contention_run.sh
K=/tmp/keep; mkdir -p $K/bin /tmp/o3/shophi /tmp/o3/shop /tmp/o3/shop4c
bash $R setup > /tmp/o3/setup.txt 2>&1; tail -2 /tmp/o3/setup.txt
xz -dc .device/d3/shopping.xz > $K/bin/shopping; chmod +x $K/bin/shopping
summ() {
python3 - <<'PY' >> /tmp/o3/summary.txt
import json, glob
for f in sorted(glob.glob('/tmp/contention/*/*/stats.json')):
    s = json.load(open(f))
    print('==', f.split('/contention/')[1], 'slots', s.get('cpu_slots'))
    def find(o, key):
        if isinstance(o, dict):
            if key in o: return o[key]
            for v in o.values():
                r = find(v, key)
                if r is not None: return r
    ev = find(s, 'style_events')
    if ev: print('   style events', ev.get('events'), 'answered', ev.get('answered'), json.dumps(ev.get('event_to_visible_ms')))
    for name, m in s['models'].items():
        c = m.get('cpu_runs')
        st = m['latency_stages_ms']
        stages = ' '.join(f"{k}={v['p50']:.1f}/{v['p99']:.1f}" for k, v in st.items() if isinstance(v, dict) and v.get('count'))
        line = f"  {name}: rate={m['rate_hz']:.1f} lat p50/p99={m['latency_ms']['p50']:.1f}/{m['latency_ms']['p99']:.1f} [{stages}]"
        if c:
            p50 = lambda k: round(c[k]['p50'], 2) if c[k]['count'] else None
            line += f" | cpu n={c['count']} thr={c['threads']} prep={p50('prepare_ms')} whole={p50('whole_run_ms')}"
        print(line)
PY
}
OUT=/tmp/o3/shop CALM_RUNS=2 SETS="shop_medium_60" MODES="heimdall,fifo" bash $R shopping
summ
OUT=/tmp/o3/shophi RUNS=2 SETS="shop_high_60" MODES="heimdall,fifo" bash $R shopping
summ
OUT=/tmp/o3/shop4c RUNS=1 SETS="shop_high_60_4c" MODES="heimdall,fifo" bash $R shopping
summ
cat /tmp/o3/summary.txt | grep -v '^  hand_landmark_lite#2\|rate=0.0' | head -120
cp /tmp/o3/summary.txt $OUT/
cd /tmp && tar cf $OUT/o3.tar o3
ls -la $OUT
