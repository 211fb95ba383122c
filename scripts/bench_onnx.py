#!/usr/bin/env python3
"""Side-by-side CPU benchmark of the ONNX models: heimdall's CPU backend vs ONNX Runtime.

For multistyle26 (1x3x256x256) and PP-OCRv6_det_small (1x3x320x320), in one process and
interleaved model by model so both see the same machine load:
  * `heimdall bench MODEL --input-shape ... --threads T --runs N --json` (release build),
  * ONNX Runtime (CPUExecutionProvider, intra_op_num_threads=T, default graph optimisations),
    median of N runs after 5 warm-up runs, on the same input sizes,
for T = 1 and 2, and prints a Markdown table. Build and fetch first:
  cargo build --release -p heimdall-cli
  python3 -m pip install onnxruntime numpy && python3 scripts/fetch_onnx_models.py
  python3 scripts/bench_onnx.py [--runs 30] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from fetch_onnx_models import fetch, sums  # noqa: E402

# name -> (input name, shape, extra inputs for ONNX Runtime)
MODELS = {
    "multistyle26": ("image", [1, 3, 256, 256]),
    "PP-OCRv6_det_small": ("x", [1, 3, 320, 320]),
}


def ours(exe: Path, path: Path, inp: str, shape: list[int], threads: int, runs: int) -> float:
    arg = f"{inp}={'x'.join(map(str, shape))}"
    out = subprocess.run([str(exe), "bench", str(path), "--input-shape", arg, "--threads", str(threads),
                          "--runs", str(runs), "--json"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)["median_ms"]


def ort_median(path: Path, inp: str, shape: list[int], threads: int, runs: int) -> float:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds = {}
    for i in sess.get_inputs():
        if i.name == inp:
            feeds[i.name] = rng.uniform(-1, 1, shape).astype(np.float32)
        else:
            feeds[i.name] = np.full([d if isinstance(d, int) else 1 for d in i.shape], 1.0 / 26, np.float32)
    for _ in range(5):
        sess.run(None, feeds)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def main() -> int:
    import onnxruntime as ort

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=30)
    p.add_argument("--exe", type=Path, default=ROOT / "target" / "release" / "heimdall")
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    if not args.exe.exists():
        raise SystemExit(f"{args.exe} missing: cargo build --release -p heimdall-cli")
    expected = sums()
    rows = []
    for name, (inp, shape) in MODELS.items():
        path = fetch(name, expected[name])
        row = {"model": name, "input": shape}
        for t in (1, 2):
            row[f"heimdall_t{t}_ms"] = ours(args.exe, path, inp, shape, t, args.runs)
            row[f"ort_t{t}_ms"] = ort_median(path, inp, shape, t, args.runs)
        rows.append(row)
    print(f"onnxruntime {ort.__version__}, {args.runs} runs, median ms")
    print("| model | input | heimdall 1T | ORT 1T | ratio | heimdall 2T | ORT 2T | ratio |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {r['model']} | {'x'.join(map(str, r['input']))} | {r['heimdall_t1_ms']:.1f} | {r['ort_t1_ms']:.1f} | "
              f"{r['heimdall_t1_ms'] / r['ort_t1_ms']:.2f} | {r['heimdall_t2_ms']:.1f} | {r['ort_t2_ms']:.1f} | "
              f"{r['heimdall_t2_ms'] / r['ort_t2_ms']:.2f} |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
