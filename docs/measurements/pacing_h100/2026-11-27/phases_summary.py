#!/usr/bin/env python3
"""Prints each run's render-thread phases (p50/p99/max ms) and its late frames' phases (>0.3 ms).

    python3 phases_summary.py OUT/*/stats.json

(The *_phases.txt files beside it were printed by an earlier version that cut phase names to 12
characters, so both Bevy prepare phases read `bevy_prepare`: the first is the one before ours.)
"""
import json
import sys

for f in sys.argv[1:]:
    s = json.load(open(f))
    print("==", f, "wall on time %.1f %%" % (s["wall_on_time_rate"] * 100))
    rp = s["render_phases_ms"]
    print("  phase p50/p99/max:", "; ".join(
        "%s %.2f/%.2f/%.2f" % (k, v["p50"], v["p99"], v["max"]) for k, v in rp.items()))
    for late in s["late_frame_phases"][:20]:
        ph = late["phases_ms"]
        gpu = late["gpu_total_ms"]
        print("  late #%d %.1f ms, frame %s, GPU %s ms: %s" % (
            late["index"], late["interval_ms"], late["frame"],
            "-" if gpu is None else "%.1f" % gpu,
            " ".join("%s=%.1f" % (k, v) for k, v in ph.items() if v > 0.3)))
