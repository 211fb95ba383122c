#!/usr/bin/env python3
"""No main-world file of heimdall-bevy names the render world (issue 36).

heimdall-bevy runs in two worlds: the main world (the app's components and resources, the
files at the top of `src/` and their folders) and Bevy's render world (`src/render/`). What
both worlds share (the channel's messages, shared handles, the render thread's phases, ...)
lives in `src/bridge/`, which both import; the main world must not import `render` itself
(nor must `src/bridge/`, checked like the main world).
This lists every main-world `.rs` file under SRC that names the render module in code: a `use`
of `crate::render`/`super::render`/`render::...` or an inline path through it
(`crate::render::x::Y`, `render::x`). `lib.rs` is excepted: it assembles both worlds (adds the
render plugin, re-exports `render::HeimdallRenderSystems`). Comments, doc comments and strings
are left out (the import-cycle check's reader blanks them), as are paths through another crate's
`render` module (`bevy::render::...`) and names that merely start with `render`
(`crate::render_plugin`).

    python3 scripts/render_boundary.py [SRC]      (default plugin/heimdall-bevy/src)

Prints one line per file and path found; exits 1 if there is any.
"""

import os
import re
import sys

# Comments, strings and char literals blanked with lines kept: the import-cycle check's reader.
from import_cycles import strip

# `crate::render`, `super::render` (any number of `super::`) followed by `::` or the end of the
# name (`crate::render_plugin` is another item), or a bare `render::` that is not the tail of a
# longer path (`bevy::render::`): `use crate::{render::x, y}`, `render::x::Y` after `use crate::render`.
RENDER_PATH = re.compile(
    r"(?<![A-Za-z0-9_:])(?:crate|super)\s*::\s*(?:super\s*::\s*)*render(?![A-Za-z0-9_])"
    r"|(?<![A-Za-z0-9_:])render(?=\s*::)"
)
# The rest of the path, for the report (`crate::render` + `::phases::FramePhases`).
PATH_TAIL = re.compile(r"(?:\s*::\s*[A-Za-z_][A-Za-z0-9_]*)*")
RENDER_DIR = "render"
EXCEPTED = {"lib.rs"}


def main_world_files(src):
    """Every `.rs` file under `src` outside `src/render/`, lib.rs excepted, sorted."""
    found = []
    for top, dirs, files in os.walk(src):
        rel_top = os.path.relpath(top, src)
        if rel_top == RENDER_DIR or rel_top.startswith(RENDER_DIR + os.sep):
            dirs[:] = []
            continue
        dirs.sort()
        for name in sorted(files):
            rel = os.path.normpath(os.path.join(rel_top, name))
            if name.endswith(".rs") and rel not in EXCEPTED:
                found.append(rel)
    return found


def render_paths(text):
    """(line, path) for each place the code names the render module."""
    code = strip(text)
    hits = []
    for m in RENDER_PATH.finditer(code):
        line = code.count("\n", 0, m.start()) + 1
        tail = PATH_TAIL.match(code, m.end()).group(0)
        hits.append((line, "".join((m.group(0) + tail).split())))
    return hits


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "plugin/heimdall-bevy/src"
    bad = 0
    for rel in main_world_files(src):
        with open(os.path.join(src, rel), encoding="utf-8") as f:
            text = f.read()
        for line, path in render_paths(text):
            print(f"{os.path.join(src, rel)}:{line}: names the render world: {path}")
            bad += 1
    if bad:
        print(f"{bad} place(s) where the main world names `render` (share it through src/bridge/)")
        return 1
    print(f"render boundary: no main-world file of {src} names `render` ({RENDER_DIR}/ and lib.rs aside)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
