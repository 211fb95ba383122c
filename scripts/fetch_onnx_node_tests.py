#!/usr/bin/env python3
"""Fetch ONNX's backend node conformance tests into .cache/onnx-node-tests/ (not committed).

The onnx 1.22.0 wheel on PyPI ships them as
onnx/backend/test/data/node/test_*/{model.onnx,test_data_set_0/{input,output}_*.pb}.
This script downloads the wheel with `python3 -m pip download --no-deps` into
.cache/wheels/ (skipped when present) and extracts every node test directory
into .cache/onnx-node-tests/<test name>/. Idempotent (skips when the marker file
.cache/onnx-node-tests/.complete-1.22.0 exists); exits non-zero on failure.

Usage:
  python3 scripts/fetch_onnx_node_tests.py
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

VERSION = "1.22.0"
REPO_ROOT = Path(__file__).resolve().parent.parent
WHEELS = REPO_ROOT / ".cache" / "wheels"
OUT = REPO_ROOT / ".cache" / "onnx-node-tests"
PREFIX = "onnx/backend/test/data/node/"


def main() -> int:
    marker = OUT / f".complete-{VERSION}"
    if marker.exists():
        print(OUT)
        return 0
    WHEELS.mkdir(parents=True, exist_ok=True)
    wheels = sorted(WHEELS.glob(f"onnx-{VERSION}-*.whl"))
    if not wheels:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--python-version", "3.11", "--platform", "manylinux_2_28_x86_64",
               f"onnx=={VERSION}", "-d", str(WHEELS)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        wheels = sorted(WHEELS.glob(f"onnx-{VERSION}-*.whl"))
        if r.returncode != 0 or not wheels:
            print(f"fetch_onnx_node_tests: cannot download onnx=={VERSION}:\n{r.stderr}", file=sys.stderr)
            return 1
    count = 0
    with zipfile.ZipFile(wheels[0]) as z:
        for member in z.namelist():
            if not member.startswith(PREFIX) or member.endswith("/"):
                continue
            rel = member[len(PREFIX):]
            target = OUT / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(z.read(member))
            count += rel.endswith("model.onnx")
    if count == 0:
        print("fetch_onnx_node_tests: no node tests in the wheel", file=sys.stderr)
        return 1
    marker.write_text(f"{count} tests\n")
    print(f"{OUT} ({count} tests)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
