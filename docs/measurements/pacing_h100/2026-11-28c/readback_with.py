#!/usr/bin/env python3
"""Each DNN's readback (from the end of the GPU work to its outputs copied out, per frame, from
a run's replay.json recorded with --record-run) in the frames where another DNN (OTHER, default
the text detector) was read in the same frame, and in the others: median and p90, ms.

Usage: python3 readback_with.py [--other NAME] RUN_DIR [RUN_DIR...]
"""
import argparse
import json
import os
import statistics


def p90(v):
    v = sorted(v)
    return v[min(len(v) - 1, int(0.9 * len(v)))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--other", default="PP-OCRv6_det_small")
    ap.add_argument("runs", nargs="+")
    a = ap.parse_args()
    for run in a.runs:
        with open(os.path.join(run, "replay.json")) as f:
            models = json.load(f)["models"]
        other = models.get(a.other, {}).get("readback_ms", [])
        cells = []
        for name, trace in sorted(models.items()):
            if name == a.other:
                continue
            rb = trace.get("readback_ms", [])
            together = [x for k, x in enumerate(rb)
                        if x is not None and k < len(other) and other[k] is not None]
            alone = [x for k, x in enumerate(rb)
                     if x is not None and not (k < len(other) and other[k] is not None)]
            if together and alone:
                cells.append(f"{name}: with {len(together)}x {statistics.median(together):.2f}"
                             f" (p90 {p90(together):.2f}), without {statistics.median(alone):.2f}")
        print(f"{run}: " + "; ".join(cells))


if __name__ == "__main__":
    main()
