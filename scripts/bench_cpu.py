#!/usr/bin/env python3
"""Side-by-side CPU benchmark: heimdall's CPU backend vs the TFLite interpreter with XNNPACK.

For each of the 13 MediaPipe models the reference interpreter can run (plus
face_landmark_with_attention, ours only), in one process and interleaved model by model so both
see the same machine load:
  * `heimdall bench MODEL --threads 1` and `--threads 2` (release build, median of --runs),
  * `scripts/bench_tflite.py --only MODEL --threads 1` (ai-edge-litert 2.3.0, default XNNPACK
    delegate, one thread, median of --runs),
and prints a Markdown table with the ratios ours/TFLite. Build first:
  cargo build --release -p heimdall-cli
  python3 -m pip install -r scripts/requirements.txt && python3 scripts/fetch_models.py
  python3 scripts/bench_cpu.py [--runs 50] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from fetch_models import MODELS  # noqa: E402


def model_path(name: str) -> Path:
    for d in (ROOT / "assets" / "models", ROOT / ".cache" / "models"):
        p = d / f"{name}.tflite"
        if p.is_file():
            return p
    raise SystemExit(f"{name}: missing, run scripts/fetch_models.py")


def ours(exe: Path, path: Path, threads: int, runs: int) -> float:
    out = subprocess.run([str(exe), "bench", str(path), "--threads", str(threads), "--runs", str(runs), "--json"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["median_ms"]


def tflite(name: str, runs: int) -> float | None:
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_tflite.py"), "--only", name, "--threads", "1",
                           "--runs", str(runs), "--json"], capture_output=True, text=True)
    if proc.returncode != 0:
        return None
    entry = json.loads(proc.stdout).get(name) or {}
    return entry.get("median_ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--exe", type=Path, default=ROOT / "target" / "release" / "heimdall")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    rows = []
    print("| model | TFLite XNNPACK 1T ms | heimdall 1T ms | heimdall 2T ms | ratio 1T | ratio 2T |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name in MODELS:
        path = model_path(name)
        ref = tflite(name, args.runs)
        o1 = ours(args.exe, path, 1, args.runs)
        o2 = ours(args.exe, path, 2, args.runs)
        r1 = o1 / ref if ref else None
        r2 = o2 / ref if ref else None
        fmt = lambda v: f"{v:.2f}" if v is not None else "n/a"
        print(f"| {name} | {fmt(ref)} | {o1:.2f} | {o2:.2f} | {fmt(r1)} | {fmt(r2)} |", flush=True)
        rows.append({"model": name, "tflite_ms": ref, "ours_1t_ms": o1, "ours_2t_ms": o2, "ratio_1t": r1, "ratio_2t": r2})
    within = sum(1 for r in rows if r["ratio_2t"] is not None and r["ratio_2t"] <= 2.0)
    within1 = sum(1 for r in rows if r["ratio_1t"] is not None and r["ratio_1t"] <= 2.0)
    compared = sum(1 for r in rows if r["ratio_2t"] is not None)
    print(f"\nratio <= 2: {within}/{compared} models with 2 threads, {within1}/{compared} with 1 thread")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
