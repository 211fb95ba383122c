"""Shared pieces of the benchmark scripts (bench_onnx.py, bench_tflite.py, bench_peers.py).

- `heimdall_bench` / `heimdall_run`: drive the `heimdall` CLI (`bench --json`, `run --out DIR`);
- `ort_session`, `tflite_interpreter`: the peers' sessions, built the same way everywhere;
- `time_calls`, `percentile`, `summary`: timing of Python-side calls and their statistics;
- `gpu_label`, `is_software`, `fmt`: labels for the printed tables.

Imports of numpy, onnxruntime and ai_edge_litert are deferred to the functions that need them,
so that a script using only part of this module runs where the other packages are missing.

Usage (a library, not a command):
  sys.path.insert(0, str(ROOT / "scripts")); from benchlib import heimdall_bench, time_calls
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

# Words in a wgpu adapter name that mark a software rasteriser (its "GPU" times are CPU times).
SOFTWARE = ("llvmpipe", "lavapipe", "swiftshader", "software", "cpu")


def default_exe() -> Path:
    """The release `heimdall` binary: $HEIMDALL_EXE, else $CARGO_TARGET_DIR/release, else target/."""
    if os.environ.get("HEIMDALL_EXE"):
        return Path(os.environ["HEIMDALL_EXE"])
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return target / "release" / "heimdall"


def shape_arg(name: str, shape: Sequence[int]) -> str:
    """`name=1x3x256x256`, the CLI's `--input-shape` value."""
    return f"{name}={'x'.join(map(str, shape))}"


def heimdall_bench(exe: Path, path: Path, extra: Sequence[str],
                   input_shapes: dict[str, Sequence[int]] | None = None,
                   timeout: float = 600.0) -> dict | None:
    """`heimdall bench PATH --json EXTRA...`'s JSON, or None (with the error on stderr)."""
    cmd = [str(exe), "bench", str(path), "--json", *extra]
    for name, shape in (input_shapes or {}).items():
        cmd += ["--input-shape", shape_arg(name, shape)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"  {path.stem} {' '.join(extra)}: timed out after {timeout:.0f} s", file=sys.stderr)
        return None
    if proc.returncode != 0:
        print(f"  {path.stem} {' '.join(extra)}: {proc.stderr.strip()}", file=sys.stderr)
        return None
    return json.loads(proc.stdout)


def heimdall_run(exe: Path, path: Path, inputs: Sequence[Any], extra: Sequence[str],
                 input_shapes: dict[str, Sequence[int]] | None = None,
                 timeout: float = 600.0) -> tuple[list[Any] | None, str]:
    """Run the model once with `heimdall run` on float32 arrays; (outputs, "") or (None, error).

    The inputs are written as `.npy` in a temporary folder and the outputs (`output_<i>.npy`, in
    the model's output order) read back.
    """
    import numpy as np

    with tempfile.TemporaryDirectory(prefix="heimdall-run-") as tmp:
        d = Path(tmp)
        cmd = [str(exe), "run", str(path), "--out", str(d / "out"), *extra]
        for i, x in enumerate(inputs):
            np.save(d / f"input_{i}.npy", np.ascontiguousarray(x, dtype=np.float32))
            cmd += ["--input", str(d / f"input_{i}.npy")]
        for name, shape in (input_shapes or {}).items():
            cmd += ["--input-shape", shape_arg(name, shape)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None, f"timed out after {timeout:.0f} s"
        if proc.returncode != 0:
            return None, (proc.stderr.strip().splitlines() or ["failed"])[-1]
        files = sorted((d / "out").glob("output_*.npy"), key=lambda p: int(p.stem.split("_")[1]))
        return [np.load(f) for f in files], ""


def heimdall_version(exe: Path) -> str:
    """`heimdall --version`'s answer, e.g. "heimdall 0.1.0"."""
    proc = subprocess.run([str(exe), "--version"], capture_output=True, text=True)
    return proc.stdout.strip() or "unknown"


def ort_session(path: Path, threads: int, optimize: bool = True) -> Any:
    """An ONNX Runtime CPU session: `threads` intra-op threads, one inter-op thread, default
    graph optimisations (or none, ORT_DISABLE_ALL, for a reference that runs the graph as stored)."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    if not optimize:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def tflite_interpreter(path: Path, threads: int, resolver: str = "xnnpack") -> Any:
    """An allocated ai-edge-litert Interpreter: resolver "xnnpack" is the default resolver (the
    XNNPACK delegate), "builtin" is BUILTIN_WITHOUT_DEFAULT_DELEGATES (TFLite's own kernels)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    kw: dict[str, Any] = {"model_path": str(path), "num_threads": threads}
    if resolver == "builtin":
        kw["experimental_op_resolver_type"] = OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    elif resolver != "xnnpack":
        raise ValueError(resolver)
    it = Interpreter(**kw)
    it.allocate_tensors()
    return it


def time_calls(fn: Callable[[], object], warmup: int, runs: int) -> list[float]:
    """`fn()` `warmup` times untimed, then `runs` times timed (perf_counter_ns, garbage collector
    off); the times in ms, in call order."""
    for _ in range(warmup):
        fn()
    times = []
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for _ in range(runs):
            t = time.perf_counter_ns()
            fn()
            times.append((time.perf_counter_ns() - t) / 1e6)
    finally:
        if gc_was:
            gc.enable()
    return times


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile, q in 0..100 (numpy's default method)."""
    import numpy as np

    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


def nearest_rank(values: Sequence[float], q: float) -> float:
    """The element at index round((n - 1) q) of the sorted values, q in 0..1: the rule of the
    CLI's own summaries (`plugin/heimdall-cli/src/timing.rs`), so Python-side timings and
    `heimdall bench` are summarised alike."""
    v = sorted(values)
    return v[round((len(v) - 1) * q)]


def summary(times_ms: Sequence[float]) -> dict[str, float]:
    """Median, p90, min and mean (linear percentiles), rounded to 4 decimals."""
    s = sorted(times_ms)
    return {
        "median_ms": round(percentile(s, 50), 4),
        "p90_ms": round(percentile(s, 90), 4),
        "min_ms": round(s[0], 4),
        "mean_ms": round(sum(s) / len(s), 4),
    }


def is_software(device: str | None) -> bool:
    """Whether a wgpu adapter description names a software rasteriser."""
    return device is not None and any(s in device.lower() for s in SOFTWARE)


def gpu_label(device: str | None) -> str:
    """"lavapipe" for Mesa's llvmpipe Vulkan driver, "GPU (software rasteriser)" for another
    software device, else "GPU"."""
    if device is not None and "llvmpipe" in device.lower():
        return "lavapipe"
    return "GPU (software rasteriser)" if is_software(device) else "GPU"


def fmt(v: float | None, digits: int = 1) -> str:
    """A number with `digits` decimals, or "n/a"."""
    return "n/a" if v is None else f"{v:.{digits}f}"
