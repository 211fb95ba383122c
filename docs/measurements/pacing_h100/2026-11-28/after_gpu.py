#!/usr/bin/env python3
"""Frames on screen by the headline's wall clock against the display that also waits for each
frame's GPU work (`swapchain.after_gpu` in stats.json), per run.

Usage: python3 after_gpu.py RUN_DIR...   (each an app's --out with stats.json)
"""
import json
import os
import sys

print("| run | wall clock on time | after its GPU work | GPU proxy | frames whose GPU work ended "
      "after their blank | GPU done after submit p50 / p99 ms |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for run in sys.argv[1:]:
    with open(os.path.join(run, "stats.json")) as f:
        s = json.load(f)
    a = s["swapchain"]["after_gpu"]
    g = a["gpu_done_after_submit_ms"]
    name = "/".join(os.path.normpath(run).split(os.sep)[-2:])
    print(f"| {name} | {100 * s['wall_on_time_rate']:.2f} % | {100 * a['on_time_rate']:.2f} % | "
          f"{100 * s['on_time_rate']:.2f} % | {a['frames_whose_gpu_work_ended_after_their_blank']} "
          f"of {g['count']} | {g['p50']:.1f} / {g['p99']:.1f} |")
