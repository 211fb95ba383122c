#!/usr/bin/env python3
"""The start-up's late frames of app runs, and where their render-thread time went.

Each RUN is an app's `--out` directory (its `stats.json`). Per run: when every model was ready
and the camera started, s after the app was built (`startup.models_ready_ms`, recorded since
2026-11-28's third session; `-` before), the frames before the measured window
(`startup.frames`), how many of their intervals were late and the share on time,
and, over those late frames, the median of the render thread's `heimdall_encode` and `submit`
phases (both end in a `Queue::submit`) beside their medians in the window (`render_phases_ms`).
Runs made with `--blocking-gpu-waits` (the plugin's background work waiting for the GPU with a
blocking poll, as before 2026-11-28) against runs without show what the non-blocking waits change
(docs/pacing.md, "Where the start-up's late frames go").

Usage: python3 scripts/startup_late.py RUN [RUN...]
"""

import json
import os
import statistics
import sys


def median(v):
    return statistics.median(v) if v else None


def fmt(x):
    return "-" if x is None else f"{x:.2f}"


def row(run):
    with open(os.path.join(run, "stats.json")) as f:
        s = json.load(f)
    st = s.get("startup") or {}
    late = st.get("late_frame_phases") or []
    phase = lambda name: median([f["phases_ms"][name] for f in late if name in f.get("phases_ms", {})])
    window = s.get("render_phases_ms") or {}
    in_window = lambda name: (window.get(name) or {}).get("p50")
    return {
        "run": run,
        "frames": st.get("frames", 0),
        "ready_s": None if st.get("models_ready_ms") is None else st["models_ready_ms"] / 1e3,
        "late": len(st.get("late_frames") or []),
        "on_time": st.get("wall_on_time_rate"),
        "encode_late": phase("heimdall_encode"),
        "submit_late": phase("submit"),
        "encode_window": in_window("heimdall_encode"),
        "submit_window": in_window("submit"),
    }


def main(runs):
    if not runs:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    print("| run | models ready s | start-up frames | late | on time "
          "| heimdall_encode p50 late / window ms | submit p50 late / window ms |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for run in runs:
        try:
            r = row(run)
        except (OSError, KeyError, ValueError) as e:
            print(f"{run}: {e}", file=sys.stderr)
            return 2
        on = "-" if r["on_time"] is None else f"{100 * r['on_time']:.1f} %"
        print(f"| {r['run']} | {fmt(r['ready_s'])} | {r['frames']} | {r['late']} | {on} | "
              f"{fmt(r['encode_late'])} / {fmt(r['encode_window'])} | "
              f"{fmt(r['submit_late'])} / {fmt(r['submit_window'])} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
