#!/usr/bin/env python3
"""Time the TFLite reference interpreter (ai-edge-litert, default XNNPACK
delegate) on the MediaPipe models: the CPU yardstick for heimdall's Rust backend.

For each model: build `Interpreter(model_path=p, num_threads=N)` (default
resolver, i.e. the XNNPACK delegate; the models' fp16 weights are dequantised
to fp32 at load), feed a fixed random input in [0,1], run --warmup untimed
invocations, then time --runs calls of `invoke()` alone (perf_counter_ns) and
report the median and p90 in milliseconds.

Models whose ops the interpreter cannot run (face_landmark_with_attention's
custom ops) are reported as skipped.

Usage:
  python3 scripts/bench_tflite.py                          # all 14 from .cache/models
  python3 scripts/bench_tflite.py .cache/models/face_landmark.tflite assets/models/*.tflite
  python3 scripts/bench_tflite.py --only pose_landmark_full --threads 2 --runs 100
  python3 scripts/bench_tflite.py --json > /tmp/tflite_bench.json
  python3 scripts/bench_tflite.py --resolver builtin       # builtin kernels, no delegate
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from benchlib import summary, tflite_interpreter, time_calls  # noqa: E402
from fetch_models import MODELS  # noqa: E402


def find_model(name: str, models_dir: Path) -> Path | None:
    for d in (models_dir, REPO_ROOT / "assets" / "models"):
        p = d / f"{name}.tflite"
        if p.is_file():
            return p
    return None


def bench_one(path: Path, threads: int, warmup: int, runs: int, resolver: str) -> dict:
    t0 = time.perf_counter()
    it = tflite_interpreter(path, threads, resolver)
    load_ms = (time.perf_counter() - t0) * 1e3
    rng = np.random.default_rng(0)
    for d in it.get_input_details():
        it.set_tensor(d["index"], rng.random(tuple(d["shape"])).astype(d["dtype"]))
    times = time_calls(it.invoke, warmup, runs)
    return {
        **summary(times),
        "runs": runs,
        "warmup": warmup,
        "threads": threads,
        "load_ms": round(load_ms, 2),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*", type=Path, help=".tflite paths (default: all 14 by name)")
    ap.add_argument("--only", action="append", default=[], metavar="NAME", help="model name (repeatable)")
    ap.add_argument("--models-dir", type=Path, default=REPO_ROOT / ".cache" / "models",
                    help="where to look for <name>.tflite (then assets/models/)")
    ap.add_argument("--threads", type=int, default=1, help="interpreter threads (default 1)")
    ap.add_argument("--runs", type=int, default=50, help="timed invocations (default 50)")
    ap.add_argument("--warmup", type=int, default=5, help="untimed invocations first (default 5)")
    ap.add_argument("--resolver", choices=("xnnpack", "builtin"), default="xnnpack",
                    help="xnnpack: default resolver with the XNNPACK delegate (default); "
                         "builtin: BUILTIN_WITHOUT_DEFAULT_DELEGATES")
    ap.add_argument("--json", action="store_true",
                    help="print a JSON dict name -> {median_ms, p90_ms, runs, ...} instead of a table")
    args = ap.parse_args(argv)

    jobs: list[tuple[str, Path | None]] = []
    if args.models:
        jobs = [(p.stem, p) for p in args.models]
    else:
        names = [n for item in args.only for n in item.split(",") if n] or list(MODELS)
        unknown = [n for n in names if n not in MODELS]
        if unknown:
            print(f"unknown model(s): {unknown}", file=sys.stderr)
            return 2
        jobs = [(n, find_model(n, args.models_dir)) for n in names]

    results: dict[str, dict] = {}
    if not args.json:
        print(f"# ai-edge-litert {__import__('importlib.metadata').metadata.version('ai-edge-litert')}, "
              f"resolver {args.resolver}, threads {args.threads}, warmup {args.warmup}, runs {args.runs}")
        print(f"{'model':34s} {'median ms':>10s} {'p90 ms':>9s} {'min ms':>9s}")
    for name, path in jobs:
        if path is None or not path.is_file():
            results[name] = {"skipped": "model file not found (run scripts/fetch_models.py)"}
        else:
            try:
                results[name] = bench_one(path, args.threads, args.warmup, args.runs, args.resolver)
            except (RuntimeError, ValueError) as e:
                results[name] = {"skipped": str(e).splitlines()[0]}
        r = results[name]
        if not args.json:
            if "skipped" in r:
                print(f"{name:34s} skipped: {r['skipped']}")
            else:
                print(f"{name:34s} {r['median_ms']:10.3f} {r['p90_ms']:9.3f} {r['min_ms']:9.3f}", flush=True)
    if args.json:
        print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
