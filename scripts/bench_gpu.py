#!/usr/bin/env python3
"""GPU backend benchmark table: per model, GPU time in f32 and f16 (sum of per-step timestamp
medians, each step in its own compute pass, and per run: the median of whole runs, each GPU range
in one timestamped pass), compile time cold (empty pipeline cache) and warm (pipeline cache from the cold compile), and
the CPU backend beside it, all from `heimdall bench --json` in one run.

  cargo build --release -p heimdall-cli && python3 scripts/fetch_models.py
  python3 scripts/bench_gpu.py [--runs 30] [--exe target/release/heimdall] [--json OUT.json]

On the device machine (NVIDIA, Vulkan) the same script runs with the carried binary and models
(`--models-dir` for a folder holding all the .tflite files).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = [
    "face_detection_short_range", "face_detection_full_range_sparse", "face_landmark",
    "face_landmark_with_attention", "iris_landmark", "palm_detection_lite", "palm_detection_full",
    "hand_landmark_lite", "hand_landmark_full", "hand_recrop", "pose_detection", "pose_landmark_full",
    "selfie_segmentation", "selfie_segmentation_landscape",
]


def find(name: str, extra: Path | None) -> Path | None:
    for d in [extra, ROOT / "assets" / "models", ROOT / ".cache" / "models"]:
        if d is not None and (d / f"{name}.tflite").is_file():
            return d / f"{name}.tflite"
    return None


def bench(exe: Path, model: Path, args: list[str]) -> dict | None:
    proc = subprocess.run([str(exe), "bench", str(model), "--json", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"  {model.stem} {' '.join(args)}: {proc.stderr.strip()}", file=sys.stderr)
        return None
    return json.loads(proc.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--exe", type=Path, default=ROOT / "target" / "release" / "heimdall")
    ap.add_argument("--models-dir", type=Path)
    ap.add_argument("--threads", type=int, default=1, help="CPU backend threads for the side-by-side column")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    rows = []
    device = None
    print("| model | GPU f32 ms steps / run | GPU f16 ms steps / run | CPU-step ms | compile f32 cold / warm ms | activations f32 peak/sum MiB | CPU backend ms |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name in MODELS:
        path = find(name, args.models_dir)
        if path is None:
            print(f"| {name} | missing | | | | | |", flush=True)
            continue
        runs = ["--runs", str(args.runs), "--warmup", str(args.warmup)]
        f32 = bench(args.exe, path, ["--backend", "gpu", "--precision", "f32", *runs])
        f16 = bench(args.exe, path, ["--backend", "gpu", "--precision", "f16", *runs])
        cpu = bench(args.exe, path, ["--backend", "cpu", "--threads", str(args.threads), *runs])
        device = device or (f32 or {}).get("device")
        g = lambda d, k: f"{d[k]:.3f}" if d and d.get(k) is not None else "fail"
        both = lambda d: f"{g(d, 'gpu_ms')} / {g(d, 'gpu_run_ms')}"
        mib = lambda d: f"{d['peak_activation_bytes'] / 2**20:.1f} / {d['total_activation_bytes'] / 2**20:.1f}" if d else ""
        compile_ms = f"{f32['compile_ms']:.0f} / {f32.get('compile_warm_ms', float('nan')):.0f}" if f32 else "fail"
        print(f"| {name} | {both(f32)} | {both(f16)} | {g(f32, 'cpu_steps_ms')} | {compile_ms} | {mib(f32)} | {g(cpu, 'median_ms')} |", flush=True)
        rows.append({"model": name, "gpu_f32": f32, "gpu_f16": f16, "cpu": cpu})
    print(f"\ndevice: {device}")
    if rows and rows[0]["gpu_f32"]:
        r = rows[0]["gpu_f32"]
        print(f"pipeline cache: cold {r.get('pipeline_cache_cold')}, warm {r.get('pipeline_cache_warm')}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
