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

With --xnnpack-prefix MODEL[,MODEL...] (needs ai-edge-litert) it estimates XNNPACK's time per op
beside heimdall's: for every op k of heimdall's graph, the .tflite model cut after the file op it
comes from (its operators up to that one, its output the model's output; object API of
`ai_edge_litert.schema_py_generated`, as scripts/make_goldens.py cuts models) is timed with the
interpreter (XNNPACK delegate, --threads), and op k's XNNPACK time is the difference of the
medians of two consecutive prefixes (a proxy: XNNPACK plans each prefix on its own; noise of a
few microseconds per op; each prefix's 10th percentile of --runs calls, as a shared machine's
other processes give a call's time a long tail). heimdall's per-op medians come from `heimdall
bench --per-op` as above.
  python3 scripts/bench_cpu.py --xnnpack-prefix hand_landmark_lite --threads 1 --runs 100

With --cpu-time MODEL[,MODEL...] it compares one thread's CPU time per call, which a shared
machine's other processes do not inflate as they do wall time (a proxy for the one-thread
latency on an idle core; caches are still shared): heimdall's as the difference of the CPU time
(user + system, getrusage of the child) of two `heimdall bench --threads 1` processes making
--runs and 10 x --runs calls, divided by the difference of the calls (start-up and compile
cancel out), for each --exe given (comma-separated: e.g. main's CLI and this branch's); XNNPACK's
as `time.thread_time()` around --runs calls of the interpreter with one thread (all its work on
the calling thread). --rounds rounds, engines interleaved, median of the rounds.
  python3 scripts/bench_cpu.py --cpu-time face_landmark,hand_landmark_lite --exe /tmp/main,/tmp/arm
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


def xnnpack_prefix(exe: Path, name: str, threads: int, runs: int, rounds: int) -> dict:
    """XNNPACK's time per op estimated from prefixes of the model, beside heimdall's per op."""
    import os
    import time

    import numpy as np
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import flatbuffers
    from ai_edge_litert import schema_py_generated as S
    from ai_edge_litert.interpreter import Interpreter

    ours = profile(exe, name, threads, runs, rounds, 0)
    path = model_path(name)
    info = json.loads(subprocess.run([str(exe), "inspect", "--json", str(path)], check=True,
                                     capture_output=True, text=True).stdout)
    x = np.load(ROOT / "assets" / "goldens" / name / "astronaut" / "input_0.npy")
    raw = path.read_bytes()

    def prefix_ms(end: int) -> float:
        m = S.ModelT.InitFromPackedBuf(raw, 0)
        sg = m.subgraphs[0]
        last = sg.operators[end - 1]
        # The ops the output needs, in file order (a DEQUANTIZE of weights whose consumer was
        # cut would stay out of XNNPACK's partition and run on every call).
        needed = {int(last.outputs[0])}
        kept = []
        for op in reversed(sg.operators[:end]):
            if any(int(t) in needed for t in op.outputs):
                kept.append(op)
                needed.update(int(t) for t in op.inputs if t >= 0)
        sg.operators = kept[::-1]
        sg.outputs = [int(last.outputs[0])]
        m.signatureDefs = None
        builder = flatbuffers.Builder(1 << 20)
        builder.Finish(m.Pack(builder), file_identifier=b"TFL3")
        it = Interpreter(model_content=bytes(builder.Output()), num_threads=threads)
        it.allocate_tensors()
        it.set_tensor(it.get_input_details()[0]["index"], x)
        for _ in range(max(5, runs // 5)):
            it.invoke()
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            it.invoke()
            times.append((time.perf_counter() - t0) * 1e3)
        # The 10th percentile: on a shared machine a call's time has a long tail (other
        # processes), which a median of consecutive prefixes turns into swings of milliseconds.
        return sorted(times)[len(times) // 10]

    ends = [op["source_index"] + 1 for op in info["ops"]]
    cum = {}
    for _ in range(rounds):
        for e in sorted(set(ends)):
            cum.setdefault(e, []).append(prefix_ms(e))
    cum = {e: median(v) for e, v in cum.items()}
    rows = []
    prev = 0.0
    print(f"\n### {name}, {threads} thread(s): heimdall per op vs XNNPACK per op (prefix differences)\n")
    print("| # | op | output | heimdall ms | XNNPACK ms | XNNPACK / heimdall |\n| ---: | --- | --- | ---: | ---: | ---: |")
    for o, e in zip(ours["ops"], ends):
        xn = cum[e] - prev
        prev = cum[e]
        rows.append({**o, "xnnpack_ms": xn})
        ratio = xn / o["ms"] if o["ms"] > 0 else float("nan")
        print(f"| {o['index']} | {o['op']} | {o['out']} | {o['ms']:.4f} | {xn:.4f} | {ratio:.2f} |")
    kinds: dict[str, list[float]] = {}
    for r in rows:
        k = kinds.setdefault(r["op"], [0.0, 0.0])
        k[0] += r["ms"]
        k[1] += r["xnnpack_ms"]
    print("\n| op kind | heimdall ms | XNNPACK ms |\n| --- | ---: | ---: |")
    for op, (h, xn) in sorted(kinds.items(), key=lambda kv: -kv[1][0]):
        print(f"| {op} | {h:.3f} | {xn:.3f} |")
    print(f"\nwhole model: heimdall {ours['run_ms']:.3f} ms (ops sum {sum(r['ms'] for r in rows):.3f}), "
          f"XNNPACK {cum[max(ends)]:.3f} ms (last prefix)")
    return {"model": name, "threads": threads, "ops": rows}


def cpu_time(exes: list[Path], names: list[str], runs: int, rounds: int) -> list[dict]:
    """One thread's CPU time per call: heimdall CLIs (child rusage difference) and XNNPACK."""
    import os
    import resource
    import time

    import numpy as np
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from ai_edge_litert.interpreter import Interpreter

    def child_cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime

    def ours(exe: Path, path: Path, n: int) -> float:
        before = child_cpu()
        subprocess.run([str(exe), "bench", str(path), "--threads", "1", "--runs", str(n), "--warmup", "5"],
                       check=True, capture_output=True)
        return child_cpu() - before

    rows = []
    for name in names:
        path = model_path(name)
        x = np.load(ROOT / "assets" / "goldens" / name / "astronaut" / "input_0.npy")
        it = Interpreter(model_path=str(path), num_threads=1)
        it.allocate_tensors()
        it.set_tensor(it.get_input_details()[0]["index"], x)
        for _ in range(10):
            it.invoke()
        per: dict[str, list[float]] = {}
        for _ in range(rounds):
            for exe in exes:
                small, big = ours(exe, path, runs), ours(exe, path, 10 * runs)
                per.setdefault(str(exe), []).append((big - small) / (9 * runs) * 1e3)
            t0 = time.thread_time()
            for _ in range(runs):
                it.invoke()
            per.setdefault("xnnpack", []).append((time.thread_time() - t0) / runs * 1e3)
        row = {"model": name, **{k: median(v) for k, v in per.items()}}
        rows.append(row)
        cells = " | ".join(f"{row[str(e)]:.3f}" for e in exes)
        ratio = row["xnnpack"] / row[str(exes[-1])]
        print(f"| {name} | {cells} | {row['xnnpack']:.3f} | {ratio:.2f}x |", flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--exe", default=str(ROOT / "target" / "release" / "heimdall"),
                    help="the CLI (--cpu-time: comma-separated CLIs to compare)")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--profile", help="comma-separated models: print per-op profiles instead")
    ap.add_argument("--threads", default="1", help="--profile: comma-separated thread counts (default 1)")
    ap.add_argument("--rounds", type=int, default=3, help="--profile: bench processes per model and count")
    ap.add_argument("--top", type=int, default=15, help="--profile: slowest ops listed per model")
    ap.add_argument("--xnnpack-prefix", help="comma-separated models: heimdall and XNNPACK per op")
    ap.add_argument("--cpu-time", help="comma-separated models: one thread's CPU time per call")
    args = ap.parse_args()
    if args.cpu_time:
        exes = [Path(e) for e in str(args.exe).split(",")]
        print("| model | " + " | ".join(f"heimdall {e.name} ms" for e in exes)
              + " | XNNPACK ms | XNNPACK / last heimdall |\n| --- |" + " ---: |" * (len(exes) + 2))
        rows = cpu_time(exes, args.cpu_time.split(","), args.runs, args.rounds)
        if args.json:
            args.json.write_text(json.dumps(rows, indent=2))
        return
    if args.xnnpack_prefix:
        out = [xnnpack_prefix(Path(args.exe), m, int(t), args.runs, args.rounds)
               for m in args.xnnpack_prefix.split(",") for t in args.threads.split(",")]
        if args.json:
            args.json.write_text(json.dumps(out, indent=2))
        return
    if args.profile:
        args.exe = Path(args.exe)
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
        o1 = ours(Path(args.exe), path, 1, args.runs)
        o2 = ours(Path(args.exe), path, 2, args.runs)
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
