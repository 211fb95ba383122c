#!/usr/bin/env python3
"""Removes superseded executables from a cargo target directory.

Cargo never deletes an old build: when a test, bench or example gets a new metadata hash (a
changed dependency or feature set), the previous executable stays beside the new one. With Bevy
linked in, each is about half a gigabyte, and a cache shared by many CI runs fills the disk
(CI failed on 2026-12-03 with "No space left on device"). For every `<name>-<16 hex>` executable
in `*/deps` and `*/examples` (any profile, any target triple) this keeps the newest and removes
the older ones with their `.d` files, plus leftover `.tmp*` link outputs. Libraries (`.rlib`,
`.rmeta`, `.so`) are left alone: several hashes of one crate can be live at once. A removed file
that was still wanted is rebuilt by cargo, so the worst case is a slower build, never a wrong one.

Usage: prune_target.py [TARGET_DIR]   (default: $CARGO_TARGET_DIR, else ./target)
"""
import collections
import os
import re
import shutil
import sys

HASHED = re.compile(r"^(?P<name>.+)-(?P<hash>[0-9a-f]{16})(?P<tmp>\.tmp\w*)?$")


def output_dirs(target):
    """The `deps` and `examples` folders of every profile and triple under `target`."""
    for root, dirs, _ in os.walk(target):
        for d in list(dirs):
            if d in ("deps", "examples"):
                yield os.path.join(root, d)
        # Do not descend into build scripts' outputs or incremental caches.
        dirs[:] = [d for d in dirs if d not in ("build", "incremental", ".fingerprint", "deps", "examples")]


def prune(folder):
    """Removes the superseded executables of one folder; returns the bytes freed."""
    groups = collections.defaultdict(list)
    freed = 0
    for entry in os.scandir(folder):
        if not entry.is_file(follow_symlinks=False):
            continue
        m = HASHED.match(entry.name)
        if not m:
            continue
        if m.group("tmp"):
            freed += entry.stat().st_size
            os.remove(entry.path)
        elif os.access(entry.path, os.X_OK):
            groups[m.group("name")].append((entry.stat().st_mtime, entry.path))
    for versions in groups.values():
        versions.sort()
        for _, path in versions[:-1]:
            freed += os.path.getsize(path)
            os.remove(path)
            if os.path.exists(path + ".d"):
                os.remove(path + ".d")
    return freed


def main():
    target = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("CARGO_TARGET_DIR", "target")
    if not os.path.isdir(target):
        print(f"prune_target: {target} does not exist yet, nothing to prune")
        return
    freed = sum(prune(d) for d in output_dirs(target))
    free = shutil.disk_usage(target).free
    print(f"prune_target: freed {freed / 1e9:.1f} GB in {target}; {free / 1e9:.1f} GB free on its disk")


if __name__ == "__main__":
    main()
