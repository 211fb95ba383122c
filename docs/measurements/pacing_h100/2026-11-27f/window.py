#!/usr/bin/env python3
"""Per run of the apps (stats.json files): the measured window (after the warm-up) and the
start-up before it (stats.json's "startup": camera start, guard checks, warm-up), side by side:
frames on screen, interval p99/max, and per DNN with a deadline its results past it.
usage: python3 window.py DIR...   (each DIR holds MODE-RUN/stats.json, as compare_modes.py writes)"""
import json, pathlib, sys

for d in sys.argv[1:]:
    for f in sorted(pathlib.Path(d).glob("*/stats.json"), key=lambda p: (p.parent.name.split("-")[-1], p.parent.name)):
        s = json.load(open(f))
        st = s.get("startup", {})
        fi, sfi = s["frame_interval_ms"], st.get("frame_interval_ms", {})
        print(f"{d}/{f.parent.name}: window {s['frames']} frames, on screen {100 * s['wall_on_time_rate']:.1f} %, "
              f"interval p99/max {fi['p99']:.1f}/{fi['max']:.1f} ms | start-up {st.get('frames', '?')} camera frames, "
              f"on screen {100 * st.get('wall_on_time_rate', 0):.1f} %, interval max {sfi.get('max', 0):.1f} ms, "
              f"{len(st.get('late_frames', []))} late")
        for k, m in sorted(s["models"].items()):
            if not m["count"] or not m.get("deadline_ms"):
                continue
            sm = st.get("models", {}).get(k, {})
            lat = m["latency_ms"]
            print(f"    {k}: window {m['deadline_misses']} of {m['count']} past {m['deadline_ms']:.0f} ms, "
                  f"latency p50/p99/max {lat['p50']:.1f}/{lat['p99']:.1f}/{lat['max']:.1f} | start-up "
                  f"{sm.get('deadline_misses', 0)} of {sm.get('count', 0)}, max {sm.get('latency_ms', {}).get('max', 0):.1f}")
