#!/usr/bin/env python3
"""Side-by-side benchmark of the ONNX models: heimdall's CPU backend, heimdall's GPU backend
(f32 and f16) and ONNX Runtime's CPU provider, in one script.

For multistyle26 (1x3x256x256) and PP-OCRv6_det_small (1x3x320x320), in one process and
interleaved model by model so that all columns see the same machine load:
  * CPU backend: `heimdall bench MODEL --input-shape ... --threads T --runs N --json`, median
    wall time per run, for T in --threads (default 1 and 2);
  * GPU backend: `heimdall bench MODEL --backend gpu --precision f32|f16 --runs N --json
    --per-op`: the sum of the per-step GPU timestamp medians ("GPU ms", each step in its own
    compute pass), the whole-run wall median including upload, submit and readback ("wall ms"),
    and the number of steps placed on the CPU (0 when every op has a GPU kernel);
  * ONNX Runtime (CPUExecutionProvider, intra_op_num_threads=T, default graph optimisations),
    median of N runs after 5 warm-up runs, on the same input sizes; skipped with --no-ort or
    when onnxruntime is not installed (the GPU machine has none).
Prints a Markdown table, the GPU device (a software rasteriser such as lavapipe/llvmpipe is
labelled as such) and, with --json, writes every measurement. Build and fetch first:
  cargo build --release -p heimdall-cli
  python3 -m pip install onnxruntime numpy && python3 scripts/fetch_onnx_models.py
  python3 scripts/bench_onnx.py [--runs 30] [--gpu-runs N] [--exe target/release/heimdall]
      [--json OUT.json] [--no-ort] [--no-gpu] [--no-cpu] [--threads 1,2] [--models-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from benchlib import default_exe, fmt, gpu_label, heimdall_bench, is_software, ort_session, time_calls  # noqa: E402
from fetch_onnx_models import fetch, sums  # noqa: E402

# name -> (image input name, shape)
MODELS = {
    "multistyle26": ("image", [1, 3, 256, 256]),
    "PP-OCRv6_det_small": ("x", [1, 3, 320, 320]),
}

def bench(exe: Path, path: Path, inp: str, shape: list[int], extra: list[str]) -> dict | None:
    return heimdall_bench(exe, path, extra, {inp: shape})


def ort_median(path: Path, inp: str, shape: list[int], threads: int, runs: int) -> float:
    import numpy as np

    sess = ort_session(path, threads)
    rng = np.random.default_rng(0)
    feeds = {}
    for i in sess.get_inputs():
        if i.name == inp:
            feeds[i.name] = rng.uniform(-1, 1, shape).astype(np.float32)
        else:
            feeds[i.name] = np.full([d if isinstance(d, int) else 1 for d in i.shape], 1.0 / 26, np.float32)
    return statistics.median(time_calls(lambda: sess.run(None, feeds), 5, runs))


def model_path(name: str, expected: dict[str, str], models_dir: Path | None) -> Path:
    if models_dir is not None and (models_dir / f"{name}.onnx").is_file():
        return models_dir / f"{name}.onnx"
    return fetch(name, expected[name])


def ort_version(skip: bool) -> str | None:
    """onnxruntime's version, or None when skipped or not installed."""
    if skip:
        return None
    try:
        import onnxruntime as ort
    except ImportError:
        print("onnxruntime is not installed: the ORT columns are skipped", file=sys.stderr)
        return None
    return ort.__version__


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=30)
    p.add_argument("--exe", type=Path, default=default_exe())
    p.add_argument("--gpu-runs", type=int, help="runs of the GPU backend (default: --runs; lavapipe is slow)")
    p.add_argument("--json", type=Path, help="write every measurement to this file")
    p.add_argument("--threads", default="1,2", help="CPU thread counts (heimdall CPU and ORT), comma-separated")
    p.add_argument("--no-ort", action="store_true", help="skip ONNX Runtime")
    p.add_argument("--no-gpu", action="store_true", help="skip heimdall's GPU backend")
    p.add_argument("--no-cpu", action="store_true", help="skip heimdall's CPU backend")
    p.add_argument("--models-dir", type=Path, help="a folder holding the .onnx files (no fetching)")
    args = p.parse_args()
    if not args.exe.exists():
        raise SystemExit(f"{args.exe} missing: cargo build --release -p heimdall-cli")
    threads = [int(t) for t in args.threads.split(",") if t]
    ort_ver = ort_version(args.no_ort)
    expected = sums()
    runs = ["--runs", str(args.runs)]
    rows = []
    device = None
    for name, (inp, shape) in MODELS.items():
        path = model_path(name, expected, args.models_dir)
        row: dict = {"model": name, "input": shape}
        if not args.no_cpu:
            for t in threads:
                d = bench(args.exe, path, inp, shape, ["--threads", str(t), *runs])
                row[f"cpu_t{t}"] = d
        if not args.no_gpu:
            for prec in ("f32", "f16"):
                gpu_runs = ["--runs", str(args.gpu_runs or args.runs)]
                d = bench(args.exe, path, inp, shape,
                          ["--backend", "gpu", "--precision", prec, "--per-op", *gpu_runs])
                if d is not None:
                    d["cpu_step_count"] = sum(1 for s in d.get("ops", []) if s.get("placement") != "Gpu")
                    device = device or d.get("device")
                row[f"gpu_{prec}"] = d
        if ort_ver is not None:
            for t in threads:
                row[f"ort_t{t}_ms"] = ort_median(path, inp, shape, t, args.runs)
        rows.append(row)

    software = is_software(device)
    # A software rasteriser is named as such in the header: its "GPU" times are CPU times.
    label = gpu_label(device)
    head = ["model", "input"]
    if not args.no_cpu:
        head += [f"heimdall CPU {t}T" for t in threads]
    if not args.no_gpu:
        head += [f"{label} f32 GPU / wall", f"{label} f16 GPU / wall", "CPU steps"]
    if ort_ver is not None:
        head += [f"ORT {t}T" for t in threads]
        if not args.no_cpu:
            head += [f"CPU/ORT {t}T" for t in threads]
    gpu_runs_note = f" ({args.gpu_runs} on the GPU)" if args.gpu_runs and not args.no_gpu else ""
    print(f"median ms, {args.runs} runs{gpu_runs_note}" + (f", onnxruntime {ort_ver}" if ort_ver else ", no onnxruntime"))
    print("| " + " | ".join(head) + " |")
    print("| --- | --- |" + " ---: |" * (len(head) - 2))
    for r in rows:
        cells = [r["model"], "x".join(map(str, r["input"]))]
        if not args.no_cpu:
            cells += [fmt((r[f"cpu_t{t}"] or {}).get("median_ms")) for t in threads]
        if not args.no_gpu:
            for prec in ("f32", "f16"):
                d = r[f"gpu_{prec}"]
                cells.append("fail" if d is None else f"{d['gpu_ms']:.1f} / {d['wall_median_ms']:.1f}")
            steps = {r[f"gpu_{prec}"]["cpu_step_count"] for prec in ("f32", "f16") if r[f"gpu_{prec}"]}
            cells.append(", ".join(map(str, sorted(steps))) or "n/a")
        if ort_ver is not None:
            cells += [fmt(r[f"ort_t{t}_ms"]) for t in threads]
            if not args.no_cpu:
                for t in threads:
                    c = (r[f"cpu_t{t}"] or {}).get("median_ms")
                    cells.append(fmt(c / r[f"ort_t{t}_ms"], 2) if c is not None else "n/a")
        print("| " + " | ".join(cells) + " |")
    if not args.no_gpu:
        kind = " (a software rasteriser: its times are CPU times, not a GPU's)" if software else ""
        print(f"\nGPU device: {device}{kind}")
        print("GPU columns: sum of per-step timestamp medians / whole-run wall median (upload, submit, readback)")
    if args.json:
        args.json.write_text(json.dumps({"onnxruntime": ort_ver, "device": device, "runs": args.runs,
                                         "gpu_runs": args.gpu_runs or args.runs, "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
