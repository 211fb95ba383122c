#!/usr/bin/env python3
"""Heimdall beside its peers: one command, same machine, same inputs, runs interleaved, every
output checked against the reference before it is timed.

Engines (rows), for each model:
  heimdall     CPU backend at --threads (`heimdall bench --threads N`); with --gpu also the GPU
               backend per precision (--gpu-precisions, default f32,f16), two rows each:
               timing "gpu_run" (GPU timestamps of one whole run, `gpu_run_ms`) and timing "wall"
               (host wall time of `GpuModel::run`: upload, submit, wait, readback; `wall_*_ms`)
  onnxruntime  CPUExecutionProvider, intra_op_num_threads=N, default graph optimisations (.onnx)
  xnnpack      ai-edge-litert's Interpreter(num_threads=N), default resolver = XNNPACK (.tflite)
  ncnn         PyPI ncnn on the CPU (N threads, fp16/bf16 storage and arithmetic off: "f32"), and
               with --gpu on Vulkan in f32 (fp16 storage/arithmetic off) and f16 (ncnn's
               default fp16 storage + arithmetic) (.onnx converted with PyPI pnnx; .tflite
               first to ONNX with tf2onnx, see below)
Every row but heimdall's GPU "gpu_run" rows is a host wall time around one call.

Inputs: the repository's golden inputs where they have the shape used (assets/goldens/<model>/
astronaut/: assets/images/astronaut.png, PIL bilinear, in the model's value range); else an image
of assets/images preprocessed here (PP-OCRv6_det_small at 1x3x320x640: text_scene.jpg, centre
crop to 1:2, BGR, (u8/255 - 0.5)/0.5 as rapidocr feeds it; multistyle26 at another size:
astronaut.png RGB in [0,1], one-hot style 3); else seeded uniform [0,1) noise. The same arrays go
to every engine; `heimdall bench` times its own input of the same shape (CNN run time does not
depend on the values); heimdall's outputs on the shared arrays come from `heimdall run --out DIR`.

Reference: .onnx: ONNX Runtime, 1 thread, ORT_DISABLE_ALL (as scripts/make_onnx_goldens.py);
.tflite: the TFLite interpreter with its builtin kernels, 1 thread (as scripts/make_goldens.py;
models with ops only the XNNPACK delegate has, selfie_segmentation, fall back to XNNPACK at 1
thread). Correct = every output within the bound of its precision (TOLERANCE below: the bounds of
the repository's golden suite, plugin/heimdall-testkit/src/goldens/bounds.rs) and finite; a
wrong engine is reported with its rel_l2 and correct=false and is not timed (median_ms null).

Timing: --rounds rounds; in each, every correct engine of the model in turn (the order rotated
by one each round) makes --warmup untimed and --runs timed calls (heimdall: one `heimdall bench
--warmup W --runs K` process per round, with a pipeline cache kept across rounds on the GPU).
Each round gives a median and a p90 (nearest rank, the CLI's rule); a row's median_ms is the
median of its round medians and p90_ms the median of its round p90s. Ratios: a row's median over
heimdall's on the same model and device (CPU: same threads; GPU: heimdall f32 wall); > 1 means
heimdall is faster.

ncnn conversion (scripts/ncnn_convert.py): `pnnx model.onnx inputshape=... fp16=0` (f32
weights), cached in --ncnn-dir (default .cache/ncnn/<model>-<shape>/ with meta.json); a .tflite
model is first converted to ONNX by scripts/tflite_onnx.py (tf2onnx's TFLite front end, run with
--tf2onnx-python), its NHWC image inputs made NCHW (ncnn is fed the same arrays transposed, before
the timed calls) and its outputs kept in TFLite's layout, so that every engine is compared with
the same reference. The hand-fixes each converter needs are automated there and listed in
meta.json and in the row's conversion_fix (multistyle26: Reductions without axes; the palm, face
detection and face landmark models: channel Pads that pnnx leaves for ncnn as an unknown layer;
selfie_segmentation: MediaPipe's custom transposed convolution, HardSwish kept in NHWC); the
output check proves each fix. A machine with the conversions needs neither pnnx nor tf2onnx.

Writes --json OUT as {"rows": [{"model", "engine", "device", "threads", "precision",
"median_ms", "p90_ms", "correct", "rel_l2", "timing", "bound", "input", "version", ...}]}
(rewritten after each model) and prints one Markdown table.

Usage:
  python3 -m pip install -r scripts/requirements-peers.txt
  python3 scripts/bench_peers.py --models multistyle26,selfie_segmentation --threads 2 \\
      --json out/peers.json [--gpu] [--rounds 5 --runs 10 --warmup 3] [--exe PATH]
  python3 scripts/bench_peers.py --models all --convert-only \\
      [--tf2onnx-python VENV/bin/python]                          # ncnn conversions only
  python3 scripts/bench_peers.py --table-from docs/measurements/peers/this_machine.json   # a saved table
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import math
import signal
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from ncnn_convert import ncnn_convert  # noqa: E402
from benchlib import (  # noqa: E402
    default_exe, gpu_label, heimdall_bench, heimdall_run, heimdall_version, is_software,
    nearest_rank, ort_session, tflite_interpreter, time_calls,
)

ALL_MODELS = [
    "multistyle26", "PP-OCRv6_det_small", "palm_detection_lite", "selfie_segmentation",
    "face_detection_short_range", "face_landmark", "hand_landmark_lite",
]
# Image input shape (NCHW) of the ONNX models with dynamic spatial dimensions.
ONNX_SHAPES = {"multistyle26": [1, 3, 256, 256], "PP-OCRv6_det_small": [1, 3, 320, 640]}
IMAGES = ROOT / "assets" / "images"

# (metric, bound) per (format, precision): the golden suite's bounds for our runtimes
# (bounds.rs). f32: the GPU-f32 bounds, the widest it grants an f32 runtime (ONNX rel-L2 1e-3;
# TFLite rel-L2 with a floor of 1e-3 RMS per value, for sigmoid flags near 0, <= 2e-4); our CPU
# is held to 1e-4 there, every f32 engine here to the same wider bound. f16: 1e-2 for every
# model (the suite's f16 runtimes meet it through the accuracy guard, with no exception list).
FLOOR = 1e-3
TOLERANCE = {
    ("onnx", "f32"): ("rel_l2", 1e-3), ("tflite", "f32"): ("rel_l2_floored", 2e-4),
    ("onnx", "f16"): ("rel_l2", 1e-2), ("tflite", "f16"): ("rel_l2_floored", 1e-2),
}
# What identifies a row (--append replaces rows with the same key).
KEY = ("model", "engine", "device", "threads", "precision", "timing")


def rel_l2(out: np.ndarray, ref: np.ndarray, floor_rms: float = 0.0) -> float:
    """||out - ref|| / max(||ref||, floor_rms * sqrt(n)) in f64 (testkit's rel_l2 and
    rel_l2_floored); NaN when out has NaN."""
    a, b = out.astype(np.float64).ravel(), ref.astype(np.float64).ravel()
    diff, norm = float(np.linalg.norm(a - b)), float(np.linalg.norm(b))
    den = max(norm, floor_rms * math.sqrt(b.size))
    return diff / den if den > 0 else diff


def tolerance(model: str, fmt: str, precision: str) -> tuple[str, float]:
    del model  # one bound per format and precision, for every model
    return TOLERANCE[(fmt, precision)]


# ---------------------------------------------------------------------------------------------
# Models, inputs, references


@dataclass
class Case:
    """One model with its inputs and reference outputs."""

    name: str
    fmt: str  # "onnx" | "tflite"
    path: Path
    inputs: list[np.ndarray]
    dynamic: dict[str, list[int]]  # --input-shape for the CLI (ONNX inputs with dynamic dims)
    input_desc: str
    reference: list[np.ndarray] = field(default_factory=list)
    reference_desc: str = ""


def find_model(name: str, dirs: list[Path]) -> Path | None:
    for d in [*dirs, ROOT / "assets" / "models", ROOT / ".cache" / "models"]:
        for ext in (".tflite", ".onnx"):
            if (d / f"{name}{ext}").is_file():
                return d / f"{name}{ext}"
    return None


def golden_inputs(name: str, shapes: list[list[int]]) -> list[np.ndarray] | None:
    d = ROOT / "assets" / "goldens" / name / "astronaut"
    xs = [np.load(d / f"input_{i}.npy") for i in range(len(shapes)) if (d / f"input_{i}.npy").is_file()]
    if len(xs) == len(shapes) and all(list(x.shape) == list(s) for x, s in zip(xs, shapes)):
        return [x.astype(np.float32) for x in xs]
    return None


def load_image(file: str, h: int, w: int) -> np.ndarray:
    """assets/images/FILE, centre-cropped to the aspect h:w, PIL bilinear to HxW, u8 RGB."""
    from PIL import Image

    img = Image.open(IMAGES / file).convert("RGB")
    iw, ih = img.size
    if iw * h > ih * w:
        cw = ih * w // h
        img = img.crop(((iw - cw) // 2, 0, (iw - cw) // 2 + cw, ih))
    else:
        ch = iw * h // w
        img = img.crop((0, (ih - ch) // 2, iw, (ih - ch) // 2 + ch))
    return np.asarray(img.resize((w, h), Image.BILINEAR))


def onnx_inputs(name: str, sess: Any, shape: list[int] | None) -> tuple[list[np.ndarray], dict[str, list[int]], str]:
    """(inputs, dynamic shapes for --input-shape, description) of an ONNX model."""
    specs = sess.get_inputs()
    shapes, dynamic = [], {}
    for k, i in enumerate(specs):
        s = [d if isinstance(d, int) else None for d in i.shape]
        if None in s:
            if k != 0 or shape is None:
                raise SystemExit(f"{name}: input {i.name} has dynamic dims {i.shape}: pass --shape {name}=...")
            s = list(shape)
            dynamic[i.name] = s
        shapes.append(s)
    xs = golden_inputs(name, shapes)
    if xs is not None:
        return xs, dynamic, "astronaut.png (golden input)"
    _, _, h, w = shapes[0]
    if name == "multistyle26":
        x = load_image("astronaut.png", h, w).astype(np.float32) / 255.0
        style = np.zeros(26, np.float32)
        style[3] = 1.0
        return [x.transpose(2, 0, 1)[None].copy(), style], dynamic, "astronaut.png, style 3"
    if name == "PP-OCRv6_det_small":
        x = load_image("text_scene.jpg", h, w)[:, :, ::-1].astype(np.float32)
        x = (x / 255.0 - 0.5) / 0.5
        return [x.transpose(2, 0, 1)[None].astype(np.float32).copy()], dynamic, "text_scene.jpg, BGR"
    rng = np.random.default_rng(0)
    return [rng.random(s, dtype=np.float32) for s in shapes], dynamic, "seeded noise [0,1)"


def load_case(name: str, args: argparse.Namespace) -> Case:
    path = find_model(name, args.models_dir)
    if path is None:
        raise SystemExit(f"{name}: no {name}.tflite/.onnx in assets/models, .cache/models or --models-dir "
                         "(python3 scripts/fetch_onnx_models.py)")
    if path.suffix == ".onnx":
        import onnxruntime as ort

        sess = ort_session(path, 1, optimize=False)
        inputs, dynamic, desc = onnx_inputs(name, sess, args.shape.get(name, ONNX_SHAPES.get(name)))
        case = Case(name, "onnx", path, inputs, dynamic, desc)
        case.reference = sess.run(None, {i.name: x for i, x in zip(sess.get_inputs(), inputs)})
        case.reference_desc = f"onnxruntime {ort.__version__}, 1 thread, ORT_DISABLE_ALL"
        return case
    try:
        it, resolver = tflite_interpreter(path, 1, "builtin"), "builtin kernels"
        run_reference = True
    except (RuntimeError, ValueError):
        it, resolver = tflite_interpreter(path, 1, "xnnpack"), "XNNPACK (custom op)"
        run_reference = False
    shapes = [list(d["shape"]) for d in it.get_input_details()]
    inputs = golden_inputs(name, shapes)
    desc = "astronaut.png (golden input)"
    if inputs is None:
        rng = np.random.default_rng(0)
        inputs, desc = [rng.random(s, dtype=np.float32) for s in shapes], "seeded noise [0,1)"
    case = Case(name, "tflite", path, inputs, {}, desc)
    for d, x in zip(it.get_input_details(), inputs):
        it.set_tensor(d["index"], x)
    try:
        it.invoke()
    except RuntimeError:
        if not run_reference:
            raise
        it, resolver = tflite_interpreter(path, 1, "xnnpack"), "XNNPACK (custom op)"
        for d, x in zip(it.get_input_details(), inputs):
            it.set_tensor(d["index"], x)
        it.invoke()
    case.reference = [np.array(it.get_tensor(o["index"]), np.float32) for o in it.get_output_details()]
    case.reference_desc = f"ai-edge-litert {importlib.metadata.version('ai-edge-litert')}, {resolver}, 1 thread"
    return case


# ---------------------------------------------------------------------------------------------
# Engines


@dataclass
class Row:
    """One output row: an engine on a device at a precision and timing kind."""

    model: str
    engine: str
    device: str
    threads: int
    precision: str
    timing: str
    input: str
    version: str
    bound: float
    metric: str
    correct: bool | None = None
    rel_l2: float | None = None
    note: str = ""
    medians: list[float] = field(default_factory=list)
    p90s: list[float] = field(default_factory=list)
    extra: dict = field(default_factory=dict)

    @property
    def median_ms(self) -> float | None:
        return round(statistics.median(self.medians), 4) if self.medians and self.correct else None

    @property
    def p90_ms(self) -> float | None:
        return round(statistics.median(self.p90s), 4) if self.p90s and self.correct else None

    def to_json(self) -> dict:
        d = {"model": self.model, "engine": self.engine, "device": self.device, "threads": self.threads,
             "precision": self.precision, "median_ms": self.median_ms, "p90_ms": self.p90_ms,
             "correct": bool(self.correct), "rel_l2": self.rel_l2, "timing": self.timing,
             "bound": self.bound, "metric": self.metric, "input": self.input, "version": self.version,
             "rounds": len(self.medians)}
        if self.note:
            d["note"] = self.note
        return {**d, **self.extra}


class Runner:
    """An engine set up for one case: its outputs for the check, then timed rounds."""

    engine = ""
    device = "cpu"
    precision = "f32"
    timings = ("wall",)

    def __init__(self, case: Case, threads: int, version: str) -> None:
        self.case = case
        metric, bound = tolerance(case.name, case.fmt, self.precision)
        self.metric, self.bound = metric, bound
        shapes = ",".join("x".join(map(str, x.shape)) for x in case.inputs)
        self.rows = [Row(case.name, self.engine, self.device, threads, self.precision, t, shapes, version,
                         bound, metric, extra={"input_source": case.input_desc}) for t in self.timings]

    def outputs(self) -> list[np.ndarray]:
        raise NotImplementedError

    def call(self) -> None:
        raise NotImplementedError

    def measure(self, warmup: int, runs: int) -> None:
        times = time_calls(self.call, warmup, runs)
        self.rows[0].medians.append(nearest_rank(times, 0.5))
        self.rows[0].p90s.append(nearest_rank(times, 0.9))

    def check(self) -> bool:
        """Compare with the reference; marks every row correct or not, with the worst output's error."""
        try:
            outs = self.outputs()
        except Exception as e:  # noqa: BLE001 - any engine failure is a wrong result
            return self.fail(f"run failed: {str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__}")
        ref = self.case.reference
        if len(outs) != len(ref):
            return self.fail(f"{len(outs)} outputs, reference has {len(ref)}")
        errs = []
        for k, (o, r) in enumerate(zip(outs, ref)):
            if o.size != r.size:
                return self.fail(f"output {k}: {o.size} values, reference {r.size}")
            errs.append(rel_l2(o.reshape(r.shape), r, FLOOR if self.metric == "rel_l2_floored" else 0.0))
        worst = max(errs)
        ok = all(math.isfinite(e) and e <= self.bound for e in errs)
        for row in self.rows:
            row.correct = ok
            row.rel_l2 = float(f"{worst:.3g}") if math.isfinite(worst) else None
            if not math.isfinite(worst):
                row.note = "NaN or inf in the output"
            if len(errs) > 1:
                row.extra["rel_l2_per_output"] = [float(f"{e:.3g}") for e in errs]
        return ok

    def fail(self, why: str) -> bool:
        for row in self.rows:
            row.correct, row.note = False, why
        return False

    def close(self) -> None:
        pass


class OrtRunner(Runner):
    engine = "onnxruntime"

    def __init__(self, case: Case, threads: int) -> None:
        import onnxruntime as ort

        super().__init__(case, threads, f"onnxruntime {ort.__version__}")
        self.sess = ort_session(case.path, threads)
        self.feeds = {i.name: x for i, x in zip(self.sess.get_inputs(), case.inputs)}

    def outputs(self) -> list[np.ndarray]:
        return self.sess.run(None, self.feeds)

    def call(self) -> None:
        self.sess.run(None, self.feeds)


class XnnpackRunner(Runner):
    engine = "xnnpack"

    def __init__(self, case: Case, threads: int) -> None:
        super().__init__(case, threads, f"ai-edge-litert {importlib.metadata.version('ai-edge-litert')}")
        self.it = tflite_interpreter(case.path, threads, "xnnpack")
        for d, x in zip(self.it.get_input_details(), case.inputs):
            self.it.set_tensor(d["index"], x)
        self.call = self.it.invoke

    def outputs(self) -> list[np.ndarray]:
        self.it.invoke()
        return [np.array(self.it.get_tensor(o["index"]), np.float32) for o in self.it.get_output_details()]


class NcnnRunner(Runner):
    engine = "ncnn"

    def __init__(self, case: Case, threads: int, folder: Path, vulkan: bool, precision: str) -> None:
        import ncnn

        self.device, self.precision = ("gpu" if vulkan else "cpu"), precision
        meta = json.loads((folder / "meta.json").read_text())
        super().__init__(case, threads, ncnn_version(ncnn.__version__, meta))
        net = ncnn.Net()
        net.opt.use_vulkan_compute = vulkan
        net.opt.num_threads = threads
        if precision == "f32":
            for opt in ("use_fp16_packed", "use_fp16_storage", "use_fp16_arithmetic",
                        "use_bf16_storage", "use_bf16_packed"):
                setattr(net.opt, opt, False)
        if vulkan:
            net.set_vulkan_device(0)
            self.rows[0].extra["device_name"] = ncnn.get_gpu_info(0).device_name()
        fixes = conversion_fixes(meta)
        if fixes:
            self.rows[0].extra["conversion_fix"] = fixes
        t0 = time.perf_counter()
        if net.load_param(str(folder / "model.ncnn.param")) != 0 or net.load_model(str(folder / "model.ncnn.bin")) != 0:
            raise RuntimeError(f"ncnn could not load {folder}")
        self.rows[0].extra["load_s"] = round(time.perf_counter() - t0, 2)
        self.net = net
        # A .tflite model's image inputs were converted as NCHW: the same arrays, transposed
        # (once, here, as ncnn.Mat's own copy is; not in the timed calls).
        self.mats = [(i["name"], ncnn.Mat(np.ascontiguousarray(x.transpose(0, 3, 1, 2) if i.get("nchw") else x),
                                          batch_index=i["batch_index"]).clone())
                     for i, x in zip(meta["inputs"], case.inputs)]
        self.out_names = meta["outputs"]

    def run(self) -> list[Any]:
        with self.net.create_extractor() as ex:
            for name, m in self.mats:
                ex.input(name, m)
            res = []
            for name in self.out_names:
                ret, out = ex.extract(name)
                if ret != 0:
                    raise RuntimeError(f"extract {name} returned {ret}")
                res.append(out)
            return res

    def outputs(self) -> list[np.ndarray]:
        return [np.array(m.numpy(), np.float32) for m in self.run()]

    def call(self) -> None:
        self.run()

    def close(self) -> None:
        self.net.clear()


def ncnn_version(version: str, meta: dict) -> str:
    """ncnn's version with the converters that made its model."""
    conv = f"pnnx {meta['pnnx']}"
    if meta.get("tf2onnx"):
        conv = f"tf2onnx {meta['tf2onnx']}, tensorflow {meta['tensorflow']}, {conv}"
    return f"ncnn {version} ({conv})"


def conversion_fixes(meta: dict) -> str:
    """The hand-fixes of the conversion (ncnn_convert.py), in a few words; "" if none."""
    parts = [*meta.get("onnx_fixes", [])]
    if meta.get("fixed_reductions"):
        parts.append(f"{len(meta['fixed_reductions'])} Reductions given axis 0")
    if meta.get("fixed_pads"):
        parts.append(f"{len(meta['fixed_pads'])} ONNX Pads as ncnn Padding")
    return "; ".join(parts)


def convert(case: Case, args: argparse.Namespace) -> tuple[Path | None, str]:
    """The case's ncnn conversion (cached in --ncnn-dir), or (None, why not)."""
    return ncnn_convert(case.name, case.fmt, case.path, case.inputs, args.ncnn_dir, args.tf2onnx_python)


class HeimdallRunner(Runner):
    """Ours: `heimdall run` for the check, one `heimdall bench` process per round."""

    engine = "heimdall"

    def __init__(self, case: Case, threads: int, exe: Path, gpu: bool, precision: str, tmp: Path) -> None:
        self.device, self.precision = ("gpu" if gpu else "cpu"), precision
        self.timings = ("gpu_run", "wall") if gpu else ("wall",)
        super().__init__(case, threads, heimdall_version(exe))
        self.exe, self.threads = exe, threads
        self.backend = ["--backend", "gpu", "--precision", precision] if gpu else ["--threads", str(threads)]
        self.cache = ["--pipeline-cache", str(tmp / f"{case.name}-{precision}.bin")] if gpu else []

    def outputs(self) -> list[np.ndarray]:
        outs, err = heimdall_run(self.exe, self.case.path, self.case.inputs, self.backend, self.case.dynamic)
        if outs is None:
            raise RuntimeError(err)
        return outs

    def measure(self, warmup: int, runs: int) -> None:
        extra = [*self.backend, *self.cache, "--warmup", str(warmup), "--runs", str(runs)]
        d = heimdall_bench(self.exe, self.case.path, extra, self.case.dynamic)
        if d is None:
            return
        if self.device == "cpu":
            self.rows[0].medians.append(d["median_ms"])
            self.rows[0].p90s.append(d["p90_ms"])
            return
        run_row, wall_row = self.rows
        for row in self.rows:
            row.extra.update(device_name=d["device"], cpu_steps_ms=round(d["cpu_steps_ms"], 4),
                             compile_warm_ms=round(d["compile_warm_ms"], 1))
        if d.get("gpu_run_ms") is not None:
            run_row.medians.append(d["gpu_run_ms"])
            run_row.p90s.append(d["gpu_run_ms"])  # the CLI gives the median only: p90 = median
            run_row.extra["gpu_steps_ms"] = round(d["gpu_ms"], 4)
        wall_row.medians.append(d["wall_median_ms"])
        wall_row.p90s.append(d["wall_p90_ms"])


def make_runners(case: Case, args: argparse.Namespace, tmp: Path) -> list[Runner]:
    """Every engine of the case; one that cannot be set up gives a failed (untimed) row."""
    t = args.threads
    gpu_precisions = args.gpu_precisions if args.gpu else []
    plans: list[tuple[str, str, str, Any]] = [
        ("heimdall", "cpu", "f32", lambda: HeimdallRunner(case, t, args.exe, False, "f32", tmp))]
    if case.fmt == "onnx":
        plans.append(("onnxruntime", "cpu", "f32", lambda: OrtRunner(case, t)))
    else:
        plans.append(("xnnpack", "cpu", "f32", lambda: XnnpackRunner(case, t)))
    for p in gpu_precisions:
        plans.append(("heimdall", "gpu", p, lambda p=p: HeimdallRunner(case, t, args.exe, True, p, tmp)))
    if "ncnn" in args.engines:
        folder, why = convert(case, args)
        for vulkan, p in [(False, "f32")] + [(True, p) for p in gpu_precisions]:
            plans.append(("ncnn", "gpu" if vulkan else "cpu", p,
                          lambda v=vulkan, p=p: ncnn_runner(case, t, folder, why, v, p)))
    runners: list[Runner] = []
    for engine, device, precision, make in plans:
        if engine not in args.engines:
            continue
        try:
            runners.append(make())
        except Exception as e:  # noqa: BLE001 - a missing package or device is reported, not fatal
            msg = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
            runners.append(NotRun(case, t, engine, device, precision, f"not set up: {msg}"))
    return runners


class NotRun(Runner):
    """A placeholder for an engine that could not be set up (reported as not correct)."""

    def __init__(self, case: Case, threads: int, engine: str, device: str, precision: str, why: str) -> None:
        self.engine, self.device, self.precision = engine, device, precision
        super().__init__(case, threads, "")
        self.fail(why)

    def check(self) -> bool:
        return False


def ncnn_runner(case: Case, threads: int, folder: Path | None, why: str, vulkan: bool, precision: str) -> Runner:
    device = "gpu" if vulkan else "cpu"
    try:
        import ncnn
    except ImportError:
        return NotRun(case, threads, "ncnn", device, precision, "ncnn is not installed")
    if folder is None:
        return NotRun(case, threads, "ncnn", device, precision, why)
    if vulkan and ncnn.get_gpu_count() == 0:
        return NotRun(case, threads, "ncnn", device, precision, "ncnn sees no Vulkan device")
    return NcnnRunner(case, threads, folder, vulkan, precision)


# ---------------------------------------------------------------------------------------------
# Report


def ratio_base(rows: list[Row], r: Row) -> Row | None:
    for b in rows:
        if (b.model, b.engine, b.device, b.threads, b.precision, b.timing) == (
                r.model, "heimdall", r.device, r.threads, "f32", "wall"):
            return b
    return None


def table(rows: list[Row]) -> str:
    head = ["model", "input", "engine", "device", "threads", "precision", "timing", "median ms", "p90 ms",
            "rel-L2 (bound)", "correct", "ratio to heimdall"]
    lines = ["| " + " | ".join(head) + " |", "| --- | --- | --- | --- | ---: | --- | --- | ---: | ---: | ---: | --- | ---: |"]
    for r in rows:
        base = ratio_base(rows, r)
        ratio = (f"{r.median_ms / base.median_ms:.2f}" if base is not None and r.median_ms is not None
                 and base.median_ms else "n/a")
        err = "n/a" if r.rel_l2 is None else f"{r.rel_l2:.2g}"
        device = r.device
        if r.device == "gpu" and is_software(r.extra.get("device_name")):
            device = f"gpu ({gpu_label(r.extra.get('device_name'))})"
        ok = "yes" if r.correct else ("no: " + r.note if r.note else "no")
        lines.append("| " + " | ".join([
            r.model, r.input, r.engine, device, str(r.threads), r.precision, r.timing,
            "n/a" if r.median_ms is None else f"{r.median_ms:.2f}", "n/a" if r.p90_ms is None else f"{r.p90_ms:.2f}",
            f"{err} ({r.bound:g})", ok, ratio]) + " |")
    return "\n".join(lines)


def rows_from_json(path: Path) -> list[Row]:
    """The rows of a --json file, to print its table again (--table-from)."""
    rows = []
    for d in json.loads(path.read_text())["rows"]:
        d = dict(d)
        median, p90 = d.pop("median_ms"), d.pop("p90_ms")
        fields = {k: d.pop(k) for k in ("model", "engine", "device", "threads", "precision", "timing", "input",
                                         "version", "bound", "metric", "correct", "rel_l2")}
        note = d.pop("note", "")
        d.pop("rounds", None)
        rows.append(Row(**fields, note=note, medians=[] if median is None else [median],
                        p90s=[] if p90 is None else [p90], extra=d))
    return rows


def versions(rows: list[Row]) -> list[str]:
    seen: dict[str, None] = {}
    for r in rows:
        if r.version:
            seen[r.version] = None
        if r.extra.get("device_name"):
            seen[f"{r.engine} GPU: {r.extra['device_name']}"] = None
    return list(seen)


# ---------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default="all", help="comma-separated model names (file names without "
                   "extension), or 'all': " + ",".join(ALL_MODELS))
    p.add_argument("--threads", type=int, default=1, help="CPU threads of every CPU engine (default 1)")
    p.add_argument("--gpu", action="store_true", help="also heimdall's GPU backend and ncnn's Vulkan path")
    p.add_argument("--gpu-precisions", default="f32,f16", help="GPU precisions (default f32,f16)")
    p.add_argument("--json", type=Path, help="write the rows here (rewritten after every model)")
    p.add_argument("--append", action="store_true", help="keep the rows already in --json (except "
                   "those this run measures again: same model, engine, device, threads, precision, timing)")
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    p.add_argument("--runs", type=int, default=10, help="timed calls per engine and round (default 10)")
    p.add_argument("--warmup", type=int, default=3, help="untimed calls per engine and round (default 3)")
    p.add_argument("--pause", type=float, default=0.1, help="seconds of idle between engines (default 0.1)")
    p.add_argument("--exe", type=Path, default=default_exe(), help="the heimdall CLI (default: %(default)s)")
    p.add_argument("--engines", default="heimdall,onnxruntime,xnnpack,ncnn", help="engines to run")
    p.add_argument("--models-dir", type=Path, action="append", default=[], help="more folders to find models in")
    p.add_argument("--ncnn-dir", type=Path, default=ROOT / ".cache" / "ncnn", help="ncnn conversions (cache)")
    p.add_argument("--shape", action="append", default=[], metavar="MODEL=1x3xHxW",
                   help="image input shape of an ONNX model with dynamic dims (defaults: "
                   + ", ".join(f"{k}={'x'.join(map(str, v))}" for k, v in ONNX_SHAPES.items()) + ")")
    p.add_argument("--convert-only", action="store_true", help="make the ncnn conversions and stop")
    p.add_argument("--tf2onnx-python", default=sys.executable, help="the Python with tf2onnx and "
                   "TensorFlow, to convert .tflite models for ncnn (default: this one)")
    p.add_argument("--table-from", type=Path, metavar="JSON", help="print the table of a --json file and stop")
    args = p.parse_args(argv)
    args.models = ALL_MODELS if args.models == "all" else [m for m in args.models.split(",") if m]
    args.engines = set(args.engines.split(","))
    args.gpu_precisions = [x for x in args.gpu_precisions.split(",") if x]
    args.shape = {k: [int(v) for v in s.split("x")] for k, s in (a.split("=", 1) for a in args.shape)}
    if not (args.convert_only or args.table_from) and "heimdall" in args.engines and not args.exe.is_file():
        raise SystemExit(f"{args.exe} missing: cargo build --release -p heimdall-cli, or pass --exe")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # On SIGTERM (`timeout`), exit through Python so that subprocess.run kills a running heimdall.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.table_from:
        engines = ["heimdall", "onnxruntime", "xnnpack", "ncnn"]
        order = {m: i for i, m in enumerate(ALL_MODELS)}
        rows = sorted(rows_from_json(args.table_from), key=lambda r: (
            order.get(r.model, len(order)), r.model, r.device, r.threads, engines.index(r.engine)
            if r.engine in engines else 9, r.precision, r.timing))
        print(table(rows))
        return 0
    rows: list[Row] = []
    refs: dict[str, str] = {}
    kept: list[dict] = []
    if args.append and args.json and args.json.is_file():
        kept = json.loads(args.json.read_text())["rows"]
    with tempfile.TemporaryDirectory(prefix="bench-peers-") as tmp:
        for name in args.models:
            t0 = time.perf_counter()
            case = load_case(name, args)
            refs[name] = f"{case.input_desc}, reference {case.reference_desc}"
            if args.convert_only:
                folder, why = convert(case, args)
                print(f"{name}: {folder or why}")
                continue
            print(f"{name} ({case.input_desc}; reference {case.reference_desc})", file=sys.stderr)
            runners = make_runners(case, args, Path(tmp))
            timed = []
            for r in runners:
                ok = r.check()
                row = r.rows[0]
                print(f"  {r.engine:11s} {r.device} {r.precision}: rel_l2 {row.rel_l2} (bound {r.bound:g}) "
                      f"{'ok' if ok else 'WRONG, not timed: ' + row.note}", file=sys.stderr)
                if ok:
                    timed.append(r)
            for k in range(args.rounds if timed else 0):
                for r in timed[k % len(timed):] + timed[:k % len(timed)]:
                    r.measure(args.warmup, args.runs)
                    time.sleep(args.pause)
            for r in runners:
                r.close()
                rows.extend(r.rows)
            print(f"  {time.perf_counter() - t0:.1f} s", file=sys.stderr)
            if args.json:
                args.json.parent.mkdir(parents=True, exist_ok=True)
                new = [r.to_json() for r in rows]
                keys = {tuple(r[k] for k in KEY) for r in new}
                old = [r for r in kept if tuple(r[k] for k in KEY) not in keys]
                part = args.json.with_name(args.json.name + ".part")
                part.write_text(json.dumps({"rows": old + new}, indent=1) + "\n")
                part.replace(args.json)  # whole files only, also when a time limit stops the run
    if args.convert_only:
        return 0
    print(f"median of {args.rounds} round medians, {args.runs} timed + {args.warmup} warm-up calls per "
          f"engine and round; ratio = median / heimdall's (same device; GPU: heimdall f32 wall)\n")
    print(table(rows))
    print("\ninputs and references: " + "; ".join(f"{k}: {v}" for k, v in refs.items()))
    print("versions: " + "; ".join(versions(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
