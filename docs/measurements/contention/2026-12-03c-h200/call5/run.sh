#!/usr/bin/env bash
# Call 1 (2026-12-03, third session): late delivery (results also at the start of PostUpdate).
# shopping medium 60 Hz: heimdall, fifo, each with and without late delivery, 2 runs each;
# workspace high 90 Hz: heimdall, fifo, 2 runs each (the CPU input prepared on the model's threads).
set -u
R=.device/d1/contention_run.sh
K=/tmp/keep; mkdir -p $K/bin /tmp/o1/ws /tmp/o1/shop
bash $R setup > /tmp/o1/setup.txt 2>&1; tail -2 /tmp/o1/setup.txt
xz -dc .device/d1/apps.tar.xz | tar xf - -C $K/bin; chmod +x $K/bin/*
summ() {
python3 - <<'PY' >> /tmp/o1/summary.txt
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
OUT=/tmp/o1/shop CALM_RUNS=2 SETS="shop_medium_60" MODES="heimdall,fifo,heimdall+no-late-delivery,fifo+no-late-delivery" bash $R shopping
summ
OUT=/tmp/o1/ws RUNS=2 SETS="ws_high_90" MODES="heimdall,fifo" bash $R workspace
summ
cat /tmp/o1/summary.txt | grep -v '^  hand_landmark_lite#2\|rate=0.0' | head -120
cp /tmp/o1/summary.txt $OUT/
cd /tmp && tar cf $OUT/o1.tar o1
ls -la $OUT
