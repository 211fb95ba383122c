#!/usr/bin/env python3
"""Bundled 3D furniture (`assets/scenes/furniture/*.glb`) from Debian's sweethome3d-furniture.

Source: the Debian package `sweethome3d-furniture` 1.8-1 (bookworm, section main), whose
`usr/share/sweethome3d/furniture/BlendSwap-CC-0.sh3f` is a zip of Wavefront OBJ models from
Blend Swap, each released under CC0 1.0 (public domain dedication) by its author, with the
author's licence file next to it.

For each chosen model the script:
  1. takes the OBJ, MTL and texture files out of the .sh3f (a zip);
  2. rewrites the vertex positions: centimetres -> metres (x 0.01), then translated so that the
     centre of the footprint (the x/z bounding box) is at the origin and the lowest point is at
     y = 0. No rotation: Sweet Home 3D's models are Y up with their front facing +Z (the
     catalog entries have no modelRotation), which is kept. The OBJs have no normals, so
     per-corner normals are added (faces around a vertex within 40 degrees are smoothed);
  3. re-encodes each texture as JPEG (quality 85, longest side at most 1024 px, Pillow);
  4. converts to binary glTF with obj2gltf 3.2.0 (npm; `npx obj2gltf -i m.obj -o m.glb`);
  5. loads the .glb back with trimesh and pygltflib and prints bounds, triangles, materials.

Usage (needs apt-get, dpkg-deb, npx; python with pillow numpy trimesh pygltflib):
  apt-get download sweethome3d-furniture=1.8-1        # in some folder, e.g. /tmp/shf
  python3 scripts/make_furniture.py --deb /tmp/shf/sweethome3d-furniture_1.8-1_all.deb
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "assets" / "scenes" / "furniture"
DEB_SHA256 = "3ccb90c63f9525e887a767b9cd5c8b6933b8b6b2973a615a5359ee68a2118668"
SH3F = "usr/share/sweethome3d/furniture/BlendSwap-CC-0.sh3f"
OBJ2GLTF = "obj2gltf@3.2.0"

# output name -> (folder in the .sh3f, licence file in that folder)
MODELS = {
    "couch": ("couch", "78318 - Contemporary Couch - License.html"),
    "desk": ("desk", "BLENDSWAP_LICENSE.txt"),
    "bookcase": ("bookcase", "BLENDSWAP_LICENSE.txt"),
    "desk_lamp": ("desklamp", "BLENDSWAP_LICENSE.txt"),
}
MAX_TEX = 1024
JPEG_Q = 85
CREASE_DEG = 40.0


def sha256(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def transform_obj(text: str) -> str:
    """Positions cm -> m, footprint centred, floor at y = 0; adds per-corner normals (the OBJs
    have none): area-weighted average of the faces around a vertex whose normals are within
    CREASE_DEG of the corner's own face (smooth on curved parts, sharp on hard edges)."""
    lines = text.splitlines()
    vs = np.array([[float(x) for x in l.split()[1:4]] for l in lines if l.startswith("v ")], np.float64)
    vs *= 0.01  # cm -> m
    lo, hi = vs.min(0), vs.max(0)
    vs += np.array([-(lo[0] + hi[0]) / 2, -lo[1], -(lo[2] + hi[2]) / 2])
    faces = []  # (line index, [(v, vt)], normal*area)
    for li, l in enumerate(lines):
        if l.startswith("f "):
            corners = []
            for t in l.split()[1:]:
                parts = t.split("/")
                v = int(parts[0])
                v = v - 1 if v > 0 else len(vs) + v
                vt = parts[1] if len(parts) > 1 and parts[1] else ""
                corners.append((v, vt))
            P = vs[[c[0] for c in corners]]
            n = np.cross(P - P.mean(0), np.roll(P, -1, 0) - P.mean(0)).sum(0) / 2  # Newell
            faces.append((li, corners, n))
    around: dict[int, list[int]] = {}
    for fi, (_, corners, _) in enumerate(faces):
        for v, _ in corners:
            around.setdefault(v, []).append(fi)
    unit = [n / (np.linalg.norm(n) + 1e-30) for _, _, n in faces]
    cos_crease = np.cos(np.radians(CREASE_DEG))
    normals: dict[tuple, int] = {}
    new_face = {}
    for fi, (li, corners, _) in enumerate(faces):
        toks = []
        for v, vt in corners:
            acc = sum(faces[g][2] for g in around[v] if float(unit[g] @ unit[fi]) >= cos_crease)
            acc = acc / (np.linalg.norm(acc) + 1e-30) if np.linalg.norm(acc) > 0 else unit[fi]
            key = tuple(round(float(c), 4) + 0.0 for c in acc)
            ni = normals.setdefault(key, len(normals) + 1)
            toks.append(f"{v + 1}/{vt}/{ni}")
        new_face[li] = "f " + " ".join(toks)
    out = []
    for li, l in enumerate(lines):
        if l.startswith("v "):
            continue
        if l.startswith("vn "):
            continue
        out.append(new_face.get(li, l))
    head = [f"v {x:.6f} {y:.6f} {z:.6f}" for x, y, z in vs]
    head += [f"vn {a:.4f} {b:.4f} {c:.4f}" for a, b, c in normals]
    return "\n".join(head + out) + "\n"


def convert_textures(mtl: str, src: dict[str, bytes], work: Path) -> str:
    def repl(m: re.Match) -> str:
        name = m.group(2).strip()
        im = Image.open(io.BytesIO(src[name])).convert("RGB")
        if max(im.size) > MAX_TEX:
            s = MAX_TEX / max(im.size)
            im = im.resize((round(im.width * s), round(im.height * s)), Image.LANCZOS)
        new = Path(name).stem + ".jpg"
        im.save(work / new, "JPEG", quality=JPEG_Q, optimize=True)
        return f"{m.group(1)}{new}"

    return re.sub(r"^(\s*map_Kd\s+)(.+)$", repl, mtl, flags=re.M)


def report(glb: Path) -> dict:
    import pygltflib
    import trimesh

    scene = trimesh.load(glb, force="scene")
    lo, hi = scene.bounds
    tris = sum(len(g.faces) for g in scene.geometry.values())
    g = pygltflib.GLTF2().load(str(glb))
    mats = []
    for m in g.materials:
        pbr = m.pbrMetallicRoughness
        tex = pbr.baseColorTexture is not None if pbr else False
        mats.append({"name": m.name, "base_color": [round(c, 3) for c in (pbr.baseColorFactor or [1, 1, 1, 1])],
                     "texture": tex, "alpha_mode": m.alphaMode})
    imgs = []
    for im in g.images:
        bv = g.bufferViews[im.bufferView]
        data = g.binary_blob()[bv.byteOffset or 0:(bv.byteOffset or 0) + bv.byteLength]
        imgs.append({"mime": im.mimeType, "size": list(Image.open(io.BytesIO(data)).size), "bytes": bv.byteLength})
    return {"file": glb.name, "bytes": glb.stat().st_size, "sha256": sha256(glb),
            "bounds_min_m": [round(float(v), 4) for v in lo], "bounds_max_m": [round(float(v), 4) for v in hi],
            "size_m": [round(float(v), 4) for v in hi - lo], "triangles": int(tris),
            "materials": mats, "images": imgs}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--deb", required=True, type=Path, help="sweethome3d-furniture_1.8-1_all.deb")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--npx", default="npx")
    args = ap.parse_args()
    if sha256(args.deb) != DEB_SHA256:
        raise SystemExit(f"{args.deb}: unexpected SHA-256 (want {DEB_SHA256})")
    args.out.mkdir(parents=True, exist_ok=True)
    stats = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        subprocess.run(["dpkg-deb", "-x", str(args.deb), str(tmp / "deb")], check=True)
        zf = zipfile.ZipFile(tmp / "deb" / SH3F)
        (args.out / "LICENSE-BlendSwap-CC-0.txt").write_bytes(zf.read("LICENSE.TXT"))
        for name, (folder, lic) in MODELS.items():
            pre = f"blendswap-cc-0/{folder}/"
            files = {n[len(pre):]: zf.read(n) for n in zf.namelist() if n.startswith(pre) and not n.endswith("/")}
            work = tmp / name
            work.mkdir()
            obj = transform_obj(files[f"{folder}.obj"].decode("utf-8", "replace"))
            mtl = convert_textures(files[f"{folder}.mtl"].decode("utf-8", "replace"), files, work)
            obj = re.sub(r"^mtllib .*$", f"mtllib {name}.mtl", obj, flags=re.M)
            (work / f"{name}.obj").write_text(obj)
            (work / f"{name}.mtl").write_text(mtl)
            glb = args.out / f"{name}.glb"
            subprocess.run([args.npx, "--yes", OBJ2GLTF, "-i", str(work / f"{name}.obj"), "-o", str(glb)],
                           check=True, stdout=subprocess.DEVNULL)
            ext = Path(lic).suffix
            (args.out / f"{name}.LICENSE{ext}").write_bytes(files[lic])
            s = report(glb)
            s["source"] = f"{SH3F} :: {pre}{folder}.obj"
            stats.append(s)
            print(json.dumps(s))
    return 0


if __name__ == "__main__":
    sys.exit(main())
