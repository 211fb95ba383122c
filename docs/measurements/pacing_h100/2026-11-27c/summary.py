#!/usr/bin/env python3
"""Per run: frames on time by wall clock, and per DNN with a deadline its misses, latency
p50/p99 and where the latency went (stats.json's latency_stages_ms, p50 / p99 ms).
usage: python3 summary.py STATS.json...   (the apps' stats.json files, pace.sh copies them)"""
import json, re, sys

STAGES = [("capture_to_start", "to start"), ("start_to_last_submission", "chunks"),
          ("gpu_and_readback_or_cpu", "GPU+readback"), ("decode", "decode"),
          ("to_the_main_world", "to the world")]
for f in sys.argv[1:]:
    s = json.load(open(f))
    name = re.sub(r"\.json$", "", f.split("/")[-1])
    print(f"{name}: on screen {100 * s['wall_on_time_rate']:.1f} %, pacer update p50 "
          f"{s['pacer']['update_ms']['p50']:.1f} ms")
    for k, m in sorted(s["models"].items()):
        if not m["count"] or not m.get("deadline_ms"):
            continue
        lat, st = m["latency_ms"], m.get("latency_stages_ms", {})
        stages = ", ".join(f"{label} {st[key]['p50']:.1f}/{st[key]['p99']:.1f}"
                           for key, label in STAGES if key in st)
        print(f"  {k}: {m['deadline_misses']} of {m['count']} past {m['deadline_ms']:.0f} ms, "
              f"latency {lat['p50']:.1f}/{lat['p99']:.1f}; {stages}")
