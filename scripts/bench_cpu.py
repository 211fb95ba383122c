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

With --profile MODEL[,MODEL...] it prints instead where heimdall's CPU time goes, per op: for each
model and each --threads count, `heimdall bench --per-op --json` (--rounds processes, each op's
median of its round medians) joined with `heimdall inspect --json` (shapes, attributes, FLOPs):
the time per op kind and the --top slowest ops with their GFLOP/s and share of the run.
  python3 scripts/bench_cpu.py --profile hand_landmark_lite,palm_detection_lite --threads 1,2
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


def median(v: list[float]) -> float:
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def profile(exe: Path, name: str, threads: int, runs: int, rounds: int, top: int) -> dict:
    """Per-op medians of `heimdall bench --per-op` joined with `heimdall inspect`."""
    path = model_path(name)
    info = json.loads(subprocess.run([str(exe), "inspect", "--json", str(path)], check=True,
                                     capture_output=True, text=True).stdout)
    per_op: list[list[float]] = []
    totals = []
    for _ in range(rounds):
        out = json.loads(subprocess.run([str(exe), "bench", str(path), "--threads", str(threads), "--runs",
                                         str(runs), "--warmup", str(max(5, runs // 5)), "--per-op", "--json"],
                                        check=True, capture_output=True, text=True).stdout)
        totals.append(out["median_ms"])
        for k, op in enumerate(out["ops"]):
            if len(per_op) <= k:
                per_op.append([])
            per_op[k].append(op["median_ms"])
    ops = []
    for k, times in enumerate(per_op):
        meta = info["ops"][k] if k < len(info["ops"]) else {}
        ms = median(times)
        flops = meta.get("flops", 0)
        ops.append({"index": k, "op": meta.get("op", "?"), "ms": ms, "mflop": flops / 1e6,
                    "gflops": flops / 1e6 / ms if ms > 0 else 0.0,
                    "in": "x".join(map(str, (meta.get("inputs") or [[]])[0][1:])),
                    "out": "x".join(map(str, (meta.get("outputs") or [[]])[0][1:])),
                    "attrs": meta.get("attributes", ""), "epilogue": meta.get("epilogue", "")})
    run_ms = median(totals)
    sum_ms = sum(o["ms"] for o in ops)
    print(f"\n### {name}, {threads} thread(s): run median {run_ms:.3f} ms (ops sum {sum_ms:.3f} ms), "
          f"{rounds} rounds of {runs}")
    kinds: dict[str, list[float]] = {}
    for o in ops:
        k = kinds.setdefault(o["op"], [0, 0.0, 0.0])
        k[0] += 1
        k[1] += o["ms"]
        k[2] += o["mflop"]
    print("\n| op kind | count | ms | share | MFLOP | GFLOP/s |\n| --- | ---: | ---: | ---: | ---: | ---: |")
    for op, (n, ms, mf) in sorted(kinds.items(), key=lambda kv: -kv[1][1]):
        print(f"| {op} | {n} | {ms:.3f} | {100 * ms / sum_ms:.1f} % | {mf:.1f} | {mf / ms if ms else 0:.1f} |")
    print(f"\n| # | op | input | output | attributes | ms | share | MFLOP | GFLOP/s |\n"
          "| ---: | --- | --- | --- | --- | ---: | ---: | ---: | ---: |")
    for o in sorted(ops, key=lambda o: -o["ms"])[:top]:
        print(f"| {o['index']} | {o['op']} | {o['in']} | {o['out']} | {o['attrs']} | {o['ms']:.4f} | "
              f"{100 * o['ms'] / sum_ms:.1f} % | {o['mflop']:.2f} | {o['gflops']:.1f} |")
    return {"model": name, "threads": threads, "run_ms": run_ms, "ops": ops}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--exe", type=Path, default=ROOT / "target" / "release" / "heimdall")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--profile", help="comma-separated models: print per-op profiles instead")
    ap.add_argument("--threads", default="1", help="--profile: comma-separated thread counts (default 1)")
    ap.add_argument("--rounds", type=int, default=3, help="--profile: bench processes per model and count")
    ap.add_argument("--top", type=int, default=15, help="--profile: slowest ops listed per model")
    args = ap.parse_args()
    if args.profile:
        profiles = [profile(args.exe, m, int(t), args.runs, args.rounds, args.top)
                    for m in args.profile.split(",") for t in args.threads.split(",")]
        if args.json:
            args.json.write_text(json.dumps(profiles, indent=2))
        return
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
