#!/usr/bin/env python3
"""One line per DNN of every recorded app run under a folder: where its time went.

`docs/measurements/contention/run.sh` leaves each configuration's runs in
`ROOT/CONFIG/MODE-N/stats.json` and the `compare_modes.py` JSON beside them in
`ROOT/CONFIG.json`. For every run this prints the CPU slots, the host's steal time (the share
of the host's CPU time the hypervisor took during the run, from compare_modes' `/proc/stat`
counters), the style events' event → visible figures where the app has them,
and per DNN: rate, latency p50/p99, each latency stage's p50/p99 and, for CPU runs, their
count, threads, input preparation and whole-run p50.

    python3 scripts/contention_summary.py /tmp/contention > summary.txt
"""
import argparse
import json
from pathlib import Path


def find(o, key):
    """The first value under `key` anywhere in a JSON tree (None where there is none)."""
    if isinstance(o, dict):
        if key in o:
            return o[key]
        for v in o.values():
            r = find(v, key)
            if r is not None:
                return r
    return None


def host_steal_pct(root, config, run_dir):
    """The share of the host's CPU time stolen by the hypervisor during one run (%), from
    compare_modes' JSON (None where it has none)."""
    path = root / f"{config}.json"
    if not path.exists():
        return None
    for r in json.loads(path.read_text()).get("runs", []):
        name = f"{r['mode'].replace(':', '').replace('+', '_')}-{r['run']}"
        if name == run_dir and r.get("host"):
            return r["host"]["steal_pct"]
    return None


def cpu_line(c):
    """The CPU runs' figures of one DNN (count, threads, preparation and whole run p50 ms)."""
    def p50(k):
        return round(c[k]["p50"], 2) if c.get(k, {}).get("count") else None
    return f" | cpu n={c['count']} thr={c['threads']} prep={p50('prepare_ms')} whole={p50('whole_run_ms')}"


def summarize(root):
    """Prints the summary of every run under `root`."""
    for stats_path in sorted(root.glob("*/*/stats.json")):
        config, run_dir = stats_path.parent.parent.name, stats_path.parent.name
        s = json.loads(stats_path.read_text())
        steal = host_steal_pct(root, config, run_dir)
        steal_txt = "-" if steal is None else f"{steal:.2f} %"
        print(f"== {config}/{run_dir} slots {s.get('cpu_slots')} host steal {steal_txt}")
        ev = find(s, "style_events")
        if ev:
            print("   style events", ev.get("events"), "answered", ev.get("answered"),
                  json.dumps(ev.get("event_to_visible_ms")))
        for name, m in s.get("models", {}).items():
            if not m.get("rate_hz"):
                continue
            stages = " ".join(f"{k}={v['p50']:.1f}/{v['p99']:.1f}"
                              for k, v in m.get("latency_stages_ms", {}).items()
                              if isinstance(v, dict) and v.get("count"))
            lat = m["latency_ms"]
            line = (f"  {name}: rate={m['rate_hz']:.1f} lat p50/p99={lat['p50']:.1f}/{lat['p99']:.1f}"
                    f" [{stages}]")
            if m.get("cpu_runs"):
                line += cpu_line(m["cpu_runs"])
            print(line)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", type=Path, help="the folder run.sh wrote (/tmp/contention)")
    summarize(ap.parse_args().root)


if __name__ == "__main__":
    main()
