#!/usr/bin/env python3
"""Fetch ONNX's backend node conformance tests into .cache/onnx-node-tests/ (not committed).

The onnx 1.22.0 wheel on PyPI ships them as
onnx/backend/test/data/node/test_*/{model.onnx,test_data_set_0/{input,output}_*.pb}.
This script downloads the wheel with `python3 -m pip download --no-deps` into
.cache/wheels/ (skipped when present; a downloaded wheel is checked against its
SHA-256) and extracts every node test directory into .cache/onnx-node-tests/<test name>/.
Idempotent (skips when the marker file .cache/onnx-node-tests/.complete-1.22.0 exists);
exits non-zero on failure, saying what to do offline.

Safe when many tests fetch at once (see fetchlib.py): the fetch holds a lock on the
output's parent folder, and the tests are extracted into a temporary folder beside the
output, marked complete, and renamed into place, so a reader sees all of them or none.
The cache root is $HEIMDALL_CACHE_DIR if set, else .cache/ in the repository.

Usage:
  python3 scripts/fetch_onnx_node_tests.py [--out DIR] [--wheels-dir DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path

from fetchlib import FetchError, cache_root, locked, pip_download

VERSION = "1.22.0"
PREFIX = "onnx/backend/test/data/node/"
# The wheel pip picks for the arguments below (its SHA-256 as published on PyPI).
WHEEL_SHA256 = {
    "onnx-1.22.0-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl":
        "1d0a2bdb15eb2b3cb65c438f3423d9620d14fdce32f92380e6bb1b2e09568ef5",
}


def fetch(out: Path, wheels_dir: Path) -> int:
    marker = out / f".complete-{VERSION}"
    offline = (f"offline: copy an onnx-{VERSION}-*.whl (any platform tag) into {wheels_dir}, "
               f"or a complete {out.name}/ folder (with {marker.name}) to {out}, and run again")
    with locked(out.parent):
        if marker.exists():
            return 0
        (expected,) = WHEEL_SHA256.values()
        wheel = pip_download(
            f"onnx=={VERSION}", wheels_dir, f"onnx-{VERSION}-*.whl",
            ["--python-version", "3.11", "--platform", "manylinux_2_28_x86_64"], offline,
            expected_sha256=expected)
        count = 0
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
        try:
            with zipfile.ZipFile(wheel) as z:
                for member in z.namelist():
                    if not member.startswith(PREFIX) or member.endswith("/"):
                        continue
                    rel = member[len(PREFIX):]
                    target = tmp / rel
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(z.read(member))
                    count += rel.endswith("model.onnx")
            if count == 0:
                raise FetchError(f"no node tests in {wheel}; delete it and retry")
            (tmp / marker.name).write_text(f"{count} tests\n")
            if out.exists():
                shutil.rmtree(out)  # an incomplete copy from an older, unsafe fetch
            os.replace(tmp, out)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        print(f"{out} ({count} tests)")
        return count


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, default=cache_root() / "onnx-node-tests",
                   help=f"where the tests go (default: {cache_root() / 'onnx-node-tests'})")
    p.add_argument("--wheels-dir", type=Path, default=cache_root() / "wheels",
                   help=f"wheel cache (default: {cache_root() / 'wheels'})")
    args = p.parse_args()
    try:
        fetch(args.out, args.wheels_dir)
    except (FetchError, OSError, zipfile.BadZipFile) as e:
        print(f"fetch_onnx_node_tests: error: {e}", file=sys.stderr)
        return 1
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
