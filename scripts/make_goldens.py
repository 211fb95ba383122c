#!/usr/bin/env python3
"""Generate golden reference outputs for the MediaPipe models with the TFLite
reference interpreter (ai-edge-litert 2.3.0).

For every model the reference interpreter can run, and for two inputs,

  astronaut  assets/images/astronaut.png (NASA portrait, public domain), RGB,
             resized with PIL bilinear to the model's input HxW, normalised to
             the model's value range: [0,1] as u8/255, [-1,1] as u8/127.5 - 1
  synthetic  a seeded (numpy default_rng(1234)) smooth random image: low-res
             noise upsampled bilinearly, two finer octaves, sharp-edged
             rectangles and discs, a little pixel noise; same value range

it writes

  assets/goldens/<model>/<case>/input_0.npy      float32, the model's NHWC input shape
  assets/goldens/<model>/<case>/output_<i>.npy   float32, the model's own output shapes,
                                                 <i> = index in the model's output order
  assets/goldens/<model>/meta.json               names, shapes, value range, resolver,
                                                 versions, max |value| per output

Interpreter: `Interpreter(model_path=p, num_threads=1,
experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)`
(builtin kernels, no delegate: bit-exact run to run). Models with a custom op
the builtin resolver lacks (the selfie models' Convolution2DTransposeBias) fall
back to the default resolver (AUTO), whose XNNPACK delegate implements it;
meta.json records the resolver used.

face_landmark_with_attention has three custom ops (Landmarks2TransformMatrix,
TransformTensorBilinear, TransformLandmarks) that no resolver here has. The
script writes a copy cut down to the ops that the outputs independent of those
ops need (the mesh, output 0, and the face flag, output 6) to
.cache/models/face_landmark_with_attention_cut.tflite (never committed), runs
that, and stores its outputs under the ORIGINAL output indices
(output_0.npy, output_6.npy); meta.json lists "covered_outputs".

Deterministic: re-running rewrites the same bytes (check with --out-dir and cmp).

Usage:
  python3 scripts/fetch_models.py                 # models into .cache/models
  python3 scripts/make_goldens.py                 # all 14 (13 + the cut one)
  python3 scripts/make_goldens.py --only face_landmark --only selfie_segmentation
  python3 scripts/make_goldens.py --out-dir /tmp/goldens2   # e.g. to check determinism
  python3 scripts/make_goldens.py --xnnpack-check # also print XNNPACK-vs-golden rel. error
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata as md
import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
from PIL import Image

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
from ai_edge_litert.interpreter import Interpreter, OpResolverType  # noqa: E402
from ai_edge_litert import schema_py_generated as S  # noqa: E402
import flatbuffers  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from fetch_models import MODELS, MEDIAPIPE_VERSION  # noqa: E402

IMAGE = REPO_ROOT / "assets" / "images" / "astronaut.png"
SYNTH_SEED = 1234

# Value range of each model's input (MODELS.md).
VALUE_RANGE: dict[str, tuple[float, float]] = {
    "face_detection_short_range": (-1.0, 1.0),
    "face_detection_full_range_sparse": (-1.0, 1.0),
    "face_landmark": (0.0, 1.0),
    "face_landmark_with_attention": (0.0, 1.0),
    "iris_landmark": (0.0, 1.0),
    "palm_detection_lite": (0.0, 1.0),
    "palm_detection_full": (0.0, 1.0),
    "hand_landmark_lite": (0.0, 1.0),
    "hand_landmark_full": (0.0, 1.0),
    "hand_recrop": (0.0, 1.0),
    "pose_detection": (-1.0, 1.0),
    "pose_landmark_full": (0.0, 1.0),
    "selfie_segmentation": (0.0, 1.0),
    "selfie_segmentation_landscape": (0.0, 1.0),
}
assert set(VALUE_RANGE) == set(MODELS)

CUT_MODELS = {
    # model -> custom ops that the reference interpreter cannot run
    "face_landmark_with_attention": {"Landmarks2TransformMatrix", "TransformTensorBilinear", "TransformLandmarks"},
}

CASES = ("astronaut", "synthetic")


# ----------------------------------------------------------------------------- inputs

def normalise_u8(img_u8: np.ndarray, vrange: tuple[float, float]) -> np.ndarray:
    x = img_u8.astype(np.float32)
    if vrange == (0.0, 1.0):
        return x / np.float32(255.0)
    if vrange == (-1.0, 1.0):
        return x / np.float32(127.5) - np.float32(1.0)
    raise ValueError(vrange)


def astronaut_input(h: int, w: int, vrange) -> np.ndarray:
    with Image.open(IMAGE) as im:
        im = im.convert("RGB")
        if im.size != (512, 512):
            raise SystemExit(f"{IMAGE}: expected 512x512, got {im.size}")
        small = im.resize((w, h), resample=Image.BILINEAR)
    arr = np.asarray(small, dtype=np.uint8)
    return normalise_u8(arr, vrange)[None]  # 1xHxWx3


def _upsample_bilinear(a: np.ndarray, h: int, w: int) -> np.ndarray:
    """Bilinear resize (align-corners style) of an (h0, w0, c) float64 array, pure numpy."""
    h0, w0 = a.shape[:2]
    ys = np.linspace(0.0, h0 - 1.0, h)
    xs = np.linspace(0.0, w0 - 1.0, w)
    y0 = np.minimum(np.floor(ys).astype(int), h0 - 2)
    x0 = np.minimum(np.floor(xs).astype(int), w0 - 2)
    fy = (ys - y0)[:, None, None]
    fx = (xs - x0)[None, :, None]
    a00 = a[y0][:, x0]
    a01 = a[y0][:, x0 + 1]
    a10 = a[y0 + 1][:, x0]
    a11 = a[y0 + 1][:, x0 + 1]
    return (a00 * (1 - fx) + a01 * fx) * (1 - fy) + (a10 * (1 - fx) + a11 * fx) * fy


def synthetic_u01(h: int, w: int) -> np.ndarray:
    """Smooth-ish random RGB image in [0,1], HxWx3 float64; depends only on (h, w)."""
    rng = np.random.default_rng(SYNTH_SEED)
    img = np.zeros((h, w, 3))
    # three octaves of value noise: coarse blobs dominate, finer detail on top
    for cells, amp in ((4, 0.55), (12, 0.25), (32, 0.12)):
        gh = max(2, round(h / max(h, w) * cells) + 1)
        gw = max(2, round(w / max(h, w) * cells) + 1)
        img += amp * (_upsample_bilinear(rng.random((gh, gw, 3)), h, w) - 0.5)
    img += 0.5
    yy, xx = np.mgrid[0:h, 0:w]
    # sharp edges: rectangles and discs of random flat colour, partly transparent
    for _ in range(6):
        y0, x0 = rng.integers(0, h), rng.integers(0, w)
        hh, ww = rng.integers(h // 10, h // 3), rng.integers(w // 10, w // 3)
        col, alpha = rng.random(3), rng.uniform(0.5, 0.9)
        m = (yy >= y0) & (yy < y0 + hh) & (xx >= x0) & (xx < x0 + ww)
        img[m] = (1 - alpha) * img[m] + alpha * col
    for _ in range(3):
        cy, cx = rng.uniform(0, h), rng.uniform(0, w)
        r = rng.uniform(min(h, w) / 12, min(h, w) / 4)
        col, alpha = rng.random(3), rng.uniform(0.5, 0.9)
        m = (yy - cy) ** 2 + (xx - cx) ** 2 < r * r
        img[m] = (1 - alpha) * img[m] + alpha * col
    img += rng.normal(0.0, 0.02, size=img.shape)  # sensor-like pixel noise
    return np.clip(img, 0.0, 1.0)


def synthetic_input(h: int, w: int, vrange) -> np.ndarray:
    u = synthetic_u01(h, w)
    lo, hi = vrange
    return (lo + (hi - lo) * u).astype(np.float32)[None]


def make_input(case: str, h: int, w: int, vrange) -> np.ndarray:
    return astronaut_input(h, w, vrange) if case == "astronaut" else synthetic_input(h, w, vrange)


INPUT_DESCRIPTION = {
    "astronaut": ("assets/images/astronaut.png, RGB, PIL Image.resize((W, H), Image.BILINEAR) on uint8, "
                  "then float32: u8/255 for [0,1], u8/127.5 - 1 for [-1,1]"),
    "synthetic": (f"numpy default_rng({SYNTH_SEED}) per input shape: 3 octaves of bilinearly upsampled "
                  "value noise, 6 rectangles + 3 discs of flat colour (sharp edges), N(0,0.02) pixel noise, "
                  "clipped to [0,1], mapped linearly to the value range, float32 "
                  "(scripts/make_goldens.py:synthetic_u01)"),
}


# ----------------------------------------------------------------------------- model cut

def _opname(m, op) -> str:
    c = m.operatorCodes[op.opcodeIndex]
    if c.customCode:
        return c.customCode.decode()
    b = max(c.builtinCode, c.deprecatedBuiltinCode)
    return {v: k for k, v in vars(S.BuiltinOperator).items() if isinstance(v, int)}[b]


def _pack_buffer_aligned(self, builder):
    """BufferT.Pack with 16-byte aligned data (as the TFLite converter writes it)."""
    data = None
    if self.data is not None:
        payload = np.asarray(self.data, dtype=np.uint8).tobytes()
        builder.StartVector(1, len(payload), 16)
        builder.head = builder.head - len(payload)
        builder.Bytes[builder.head: builder.head + len(payload)] = payload
        builder.vectorNumElems = len(payload)
        data = builder.EndVector()
    S.BufferStart(builder)
    if data is not None:
        S.BufferAddData(builder, data)
    S.BufferAddOffset(builder, self.offset)
    S.BufferAddSize(builder, self.size)
    return S.BufferEnd(builder)


def cut_model(src: Path, dst: Path, bad_ops: set[str]) -> dict:
    """Keep only the ops needed by the outputs that do not depend on `bad_ops`.

    Rewrites the flatbuffer: the subgraph's outputs become those outputs (in the
    original order), unused operators, tensors, buffers and operator codes are
    dropped (indices remapped), metadata and signatures are removed.
    """
    m = S.ModelT.InitFromPackedBuf(src.read_bytes(), 0)
    assert len(m.subgraphs) == 1
    g = m.subgraphs[0]
    ops = g.operators
    producer = {int(t): i for i, op in enumerate(ops) for t in op.outputs}

    def closure(t: int) -> set[int]:
        need, stack = set(), [t]
        while stack:
            p = producer.get(stack.pop())
            if p is None or p in need:
                continue
            need.add(p)
            stack.extend(int(x) for x in ops[p].inputs if x >= 0)
        return need

    orig_outputs = [int(t) for t in g.outputs]
    covered, keep = [], set()
    for k, t in enumerate(orig_outputs):
        need = closure(t)
        if not {_opname(m, ops[i]) for i in need} & bad_ops:
            covered.append(k)
            keep |= need
    if not covered:
        raise SystemExit(f"{src.name}: every output depends on {sorted(bad_ops)}")
    kept_ops = [ops[i] for i in sorted(keep)]

    new_outputs = [orig_outputs[k] for k in covered]
    used_t = set(int(t) for t in g.inputs) | set(new_outputs)
    for op in kept_ops:
        used_t |= {int(t) for t in op.inputs if t >= 0} | {int(t) for t in op.outputs}
    t_order = sorted(used_t)
    t_map = {old: new for new, old in enumerate(t_order)}

    b_map = {0: 0}  # buffer 0 is the empty sentinel
    new_buffers = [m.buffers[0]]
    for old in t_order:
        b = g.tensors[old].buffer
        if b not in b_map:
            b_map[b] = len(new_buffers)
            new_buffers.append(m.buffers[b])

    c_order = sorted({op.opcodeIndex for op in kept_ops})
    c_map = {old: new for new, old in enumerate(c_order)}

    new_tensors = []
    for old in t_order:
        t = g.tensors[old]
        t.buffer = b_map[t.buffer]
        new_tensors.append(t)
    for op in kept_ops:
        op.inputs = np.array([t_map[int(t)] if t >= 0 else -1 for t in op.inputs], dtype=np.int32)
        op.outputs = np.array([t_map[int(t)] for t in op.outputs], dtype=np.int32)
        op.opcodeIndex = c_map[op.opcodeIndex]

    g.tensors = new_tensors
    g.operators = kept_ops
    g.inputs = np.array([t_map[int(t)] for t in g.inputs], dtype=np.int32)
    g.outputs = np.array([t_map[t] for t in new_outputs], dtype=np.int32)
    m.operatorCodes = [m.operatorCodes[i] for i in c_order]
    m.buffers = new_buffers
    m.metadata = None
    m.metadataBuffer = None
    m.signatureDefs = None
    m.description = (f"{src.stem} cut by heimdall scripts/make_goldens.py: outputs {covered} of the "
                     f"original only").encode()

    orig_pack = S.BufferT.Pack
    S.BufferT.Pack = _pack_buffer_aligned
    try:
        builder = flatbuffers.Builder(1 << 20)
        builder.Finish(m.Pack(builder), file_identifier=b"TFL3")
    finally:
        S.BufferT.Pack = orig_pack
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(bytes(builder.Output()))

    kept_names: dict[str, int] = {}
    for op in kept_ops:
        n = _opname(m, op)
        kept_names[n] = kept_names.get(n, 0) + 1
    return {
        "covered_outputs": covered,
        "dropped_outputs": [k for k in range(len(orig_outputs)) if k not in covered],
        "original_ops": len(ops),
        "kept_ops": len(kept_ops),
        "kept_op_counts": dict(sorted(kept_names.items())),
        "tensors": len(new_tensors),
        "buffers": len(new_buffers),
    }


# ----------------------------------------------------------------------------- running

def make_interpreter(path: Path, resolver: str) -> Interpreter:
    kw = {"model_path": str(path), "num_threads": 1}
    if resolver == "BUILTIN_WITHOUT_DEFAULT_DELEGATES":
        kw["experimental_op_resolver_type"] = OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    elif resolver != "AUTO":
        raise ValueError(resolver)
    it = Interpreter(**kw)
    it.allocate_tensors()
    return it


def open_reference(path: Path) -> tuple[Interpreter, str, str | None]:
    try:
        return make_interpreter(path, "BUILTIN_WITHOUT_DEFAULT_DELEGATES"), "BUILTIN_WITHOUT_DEFAULT_DELEGATES", None
    except RuntimeError as e:
        why = str(e).splitlines()[0]
        return make_interpreter(path, "AUTO"), "AUTO", why


def run(it: Interpreter, x: np.ndarray) -> list[np.ndarray]:
    (inp,) = it.get_input_details()
    it.set_tensor(inp["index"], x)
    it.invoke()
    return [np.array(it.get_tensor(o["index"]), dtype=np.float32, copy=True) for o in it.get_output_details()]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def relerr(a: np.ndarray, ref: np.ndarray) -> float:
    a64, r64 = a.astype(np.float64), ref.astype(np.float64)
    n = np.linalg.norm(r64)
    return float(np.linalg.norm(a64 - r64) / n) if n > 0 else float(np.linalg.norm(a64))


def generate(name: str, models_dir: Path, out_root: Path, xnnpack_check: bool) -> int:
    model_path = models_dir / f"{name}.tflite"
    if not model_path.is_file():
        raise SystemExit(f"{model_path} missing: run scripts/fetch_models.py first")
    vrange = VALUE_RANGE[name]

    cut_info = None
    run_path = model_path
    if name in CUT_MODELS:
        run_path = models_dir / f"{name}_cut.tflite"
        cut_info = cut_model(model_path, run_path, CUT_MODELS[name])

    it, resolver, why = open_reference(run_path)
    (inp,) = it.get_input_details()
    outs = it.get_output_details()
    _, h, w, c = (int(v) for v in inp["shape"])
    assert c == 3 and inp["dtype"] == np.float32

    # names/shapes of the ORIGINAL model's outputs (read from the flatbuffer, no interpreter needed)
    om = S.ModelT.InitFromPackedBuf(model_path.read_bytes(), 0)
    og = om.subgraphs[0]
    orig_out = [{"index": k, "name": og.tensors[t].name.decode(), "shape": [int(v) for v in og.tensors[t].shape],
                 "dtype": "float32"} for k, t in enumerate(og.outputs)]
    out_index = cut_info["covered_outputs"] if cut_info else list(range(len(outs)))
    assert len(out_index) == len(outs)
    for k, o in zip(out_index, outs):  # the cut keeps names and shapes
        assert o["name"] == orig_out[k]["name"] and list(o["shape"]) == orig_out[k]["shape"], (o, orig_out[k])

    model_dir = out_root / name
    if model_dir.exists():
        shutil.rmtree(model_dir)
    cases_meta = {}
    total = 0
    for case in CASES:
        x = make_input(case, h, w, vrange)
        assert x.shape == (1, h, w, 3) and x.dtype == np.float32
        assert vrange[0] <= float(x.min()) and float(x.max()) <= vrange[1]
        ys = run(it, x)
        ys2 = run(it, x)
        for a, b in zip(ys, ys2):  # bit-exact run to run
            if not np.array_equal(a, b):
                raise SystemExit(f"{name}/{case}: two invocations differ")
        d = model_dir / case
        d.mkdir(parents=True)
        np.save(d / "input_0.npy", x)
        for k, y in zip(out_index, ys):
            if not np.all(np.isfinite(y)):
                raise SystemExit(f"{name}/{case}: output {k} has non-finite values")
            np.save(d / f"output_{k}.npy", np.ascontiguousarray(y, dtype=np.float32))
        total += sum(f.stat().st_size for f in d.iterdir())
        cases_meta[case] = {
            "input_min": float(x.min()), "input_max": float(x.max()),
            "max_abs": {str(k): float(np.max(np.abs(y))) for k, y in zip(out_index, ys)},
            "l2_norm": {str(k): float(np.linalg.norm(y.astype(np.float64))) for k, y in zip(out_index, ys)},
        }
        if xnnpack_check:
            xi = make_interpreter(run_path, "AUTO")
            yx = run(xi, x)
            errs = ", ".join(f"out{k} {relerr(a, b):.2e}" for k, a, b in zip(out_index, yx, ys))
            print(f"    {case}: XNNPACK(AUTO) vs golden rel. L2 error: {errs}")

    meta = {
        "model": name,
        "model_file": f"{name}.tflite",
        "model_sha256": sha256(model_path),
        "model_source": f"mediapipe=={MEDIAPIPE_VERSION} wheel, {MODELS[name]}",
        "inputs": [{"index": 0, "name": inp["name"], "shape": [int(v) for v in inp["shape"]], "dtype": "float32",
                    "layout": "NHWC", "channels": "RGB"}],
        "outputs": orig_out,
        "value_range": list(vrange),
        "cases": {k: {"input": INPUT_DESCRIPTION[k], **v} for k, v in cases_meta.items()},
        "files": "<case>/input_0.npy, <case>/output_<i>.npy (float32, model shapes, i = model output index)",
        "interpreter": {
            "package": f"ai-edge-litert=={md.version('ai-edge-litert')}",
            "resolver": resolver,
            "num_threads": 1,
            "delegate": "XNNPACK (default delegate of the AUTO resolver)" if resolver == "AUTO" else None,
            "why_not_builtin": why,
            "bit_exact_run_to_run": True,
        },
        "generator": {
            "script": "scripts/make_goldens.py",
            "numpy": np.__version__,
            "pillow": md.version("Pillow"),
        },
        "compare": "relative L2 error ||out - ref|| / ||ref|| per output (magnitudes vary widely)",
    }
    if resolver == "AUTO":
        meta["interpreter"]["note"] = ("goldens come from the XNNPACK delegate; its float results can differ "
                                       "in the last bits between CPU instruction sets")
    if cut_info:
        meta["covered_outputs"] = cut_info["covered_outputs"]
        meta["cut"] = {
            "why": f"the reference interpreter cannot run the custom ops {sorted(CUT_MODELS[name])}",
            "how": ("flatbuffer rewritten to keep only the ops the covered outputs need; subgraph outputs = "
                    "covered outputs in original order; files written under the ORIGINAL output indices"),
            "cut_model": f".cache/models/{name}_cut.tflite (not committed)",
            **{k: v for k, v in cut_info.items() if k != "covered_outputs"},
        }
    (model_dir / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    total += (model_dir / "meta.json").stat().st_size
    extra = f", covered outputs {cut_info['covered_outputs']} ({cut_info['kept_ops']}/{cut_info['original_ops']} ops)" if cut_info else ""
    print(f"{name:34s} {resolver:34s} {total / 1e6:6.2f} MB{extra}")
    return total


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", action="append", default=[], metavar="NAME",
                    help="only this model (repeatable, or comma-separated)")
    ap.add_argument("--models-dir", type=Path, default=REPO_ROOT / ".cache" / "models")
    ap.add_argument("--out-dir", type=Path, default=REPO_ROOT / "assets" / "goldens")
    ap.add_argument("--xnnpack-check", action="store_true",
                    help="also run the default (XNNPACK) resolver and print its relative error")
    args = ap.parse_args(argv)
    names = [n for item in args.only for n in item.split(",") if n] or list(MODELS)
    bad = [n for n in names if n not in MODELS]
    if bad:
        print(f"unknown model(s): {bad}", file=sys.stderr)
        return 2
    total = sum(generate(n, args.models_dir, args.out_dir, args.xnnpack_check) for n in names)
    print(f"total {total / 1e6:.2f} MB in {args.out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
