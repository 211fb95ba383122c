import json, subprocess, sys, glob, statistics
old, new = sys.argv[1], sys.argv[2]
runs = sys.argv[3:]
def sim(exe, d):
    out = subprocess.run([exe, "simulate", f"{d}/scenario.json", "--replay", f"{d}/replay.json", "--json"], capture_output=True, text=True)
    return {m["name"]: m for m in json.loads(out.stdout)["dnns"]}
rows = []
for d in runs:
    a, b = sim(old, d), sim(new, d)
    line = [d.split('/')[-3] + '/' + d.split('/')[-2]]
    for n in a:
        if not a[n]["completed"] and not b[n]["completed"]: continue
        short = n.split('_')[0][:6] + ('#2' if n.endswith('#2') else '')
        ma, mb = a[n], b[n]
        line.append(f"{short}: n {ma['completed']}->{mb['completed']} mean {ma['latency_ms']['mean']:.1f}->{mb['latency_ms']['mean']:.1f} p99 {ma['latency_ms']['p99']:.1f}->{mb['latency_ms']['p99']:.1f} miss {100*ma['deadline_miss_rate']:.1f}->{100*mb['deadline_miss_rate']:.1f}%")
    print(line[0]); [print("   ", l) for l in line[1:]]
