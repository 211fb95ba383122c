#!/usr/bin/env python3
"""Import cycles between the files of each workspace crate, and files over the size limit.

For every crate (a `src/lib.rs` or `src/main.rs` under `plugin/`, `benches/`, `examples/`), this
builds the module tree from `mod` declarations, then a graph of files: an edge A -> B when file A
names an item (a private `use` statement or an inline `crate::`/`super::`/`self::` path, or a path through
a module imported with `use`) that is defined in file B. Re-exports (`pub use`) are followed to the
file that defines the item, so `crate::Error` re-exported by `lib.rs` counts as a use of
`error.rs`, not of `lib.rs`, and a `pub use` is not itself an edge (it is the module's facade).
Declaring a child module (`mod x;`) is not an edge. Comments, strings
and `#[cfg(test)]`-only use of the parent's items through `super::*` are counted like any use.

Prints every cycle (strongly connected component of more than one file) and every source file over
800 lines (generated files excepted), and exits 1 if there is any.

    python3 scripts/import_cycles.py [--max-lines 800] [ROOT]
"""

import argparse
import os
import re
import sys
from collections import defaultdict

ITEM_RE = re.compile(
    r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:unsafe\s+|async\s+|const\s+|extern\s+\"C\"\s+)*"
    r"(struct|enum|fn|trait|type|const|static|union|mod)\s+([A-Za-z_][A-Za-z0-9_]*)",
    re.M,
)
MACRO_RE = re.compile(r"^\s*(?:#\[macro_export\]\s*)?macro_rules!\s*([A-Za-z_][A-Za-z0-9_]*)", re.M)
MOD_DECL_RE = re.compile(
    r"^\s*(#\[path\s*=\s*\"([^\"]+)\"\]\s*)?(?:pub(?:\([^)]*\))?\s+)?mod\s+([A-Za-z_][A-Za-z0-9_]*)\s*;",
    re.M,
)
USE_RE = re.compile(r"^\s*(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", re.M)
PATH_RE = re.compile(r"(?<![A-Za-z0-9_:])((?:crate|super|self)(?:\s*::\s*[A-Za-z_][A-Za-z0-9_]*)+)")
IDENT_PATH_RE = re.compile(r"(?<![A-Za-z0-9_:.])([A-Za-z_][A-Za-z0-9_]*)\s*::\s*([A-Za-z_][A-Za-z0-9_]*)")


def strip(src):
    """Source without comments, string and char literals (kept as blanks, lines preserved)."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif src.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if src.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif src.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    if src[i] == "\n":
                        out.append("\n")
                    i += 1
        elif c == "r" and re.match(r'r#*"', src[i:i + 10]) and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            m = re.match(r'r(#*)"', src[i:])
            end = '"' + m.group(1)
            j = src.find(end, i + len(m.group(0)))
            j = n if j < 0 else j + len(end)
            out.append('""' + "\n" * src.count("\n", i, j))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            out.append('""' + "\n" * src.count("\n", i, j))
            i = j + 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", src[i:i + 12]):
            m = re.match(r"'(\\.|[^\\'])'", src[i:])
            out.append("' '")
            i += len(m.group(0))
        else:
            out.append(c)
            i += 1
    return "".join(out)


def split_top(s, sep=","):
    parts, depth, cur = [], 0, []
    for ch in s:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def expand_use(tree):
    """`a::{b, c::d as e, f::*}` -> [(path segments, alias or None or '*')]."""
    out = []

    # Re-split aliases before whitespace removal loses them.
    def rec_raw(prefix, t):
        t = t.strip()
        if t.endswith("}") and "{" in t:
            head, body = t.split("{", 1)
            head = re.sub(r"\s+", "", head).rstrip(":")
            base = prefix + ([s for s in head.split("::") if s] if head else [])
            for part in split_top(body[:-1]):
                rec_raw(base, part)
            return
        m = re.match(r"^(.*?)\s+as\s+([A-Za-z_][A-Za-z0-9_]*)$", t)
        alias = None
        if m:
            t, alias = m.group(1), m.group(2)
        segs = [s for s in re.sub(r"\s+", "", t).split("::") if s]
        out.append((prefix + segs, alias))

    rec_raw([], tree)
    return out


class Module:
    def __init__(self, path, file, parent):
        self.path = path  # list of names from the crate root
        self.file = file
        self.parent = parent
        self.children = {}
        self.items = set()
        self.reexports = {}  # name -> segments (relative to this module)
        self.globs = []  # segments of `pub use x::*`
        self.imports = {}  # local name -> segments (any use)


def file_module_children(file, text):
    d = os.path.dirname(file)
    base = os.path.basename(file)
    if base in ("lib.rs", "main.rs", "mod.rs"):
        child_dir = d
    else:
        child_dir = os.path.join(d, base[:-3])
    res = []
    for m in MOD_DECL_RE.finditer(text):
        name = m.group(3)
        if m.group(2):
            res.append((name, os.path.normpath(os.path.join(d, m.group(2)))))
            continue
        for cand in (os.path.join(child_dir, name + ".rs"), os.path.join(child_dir, name, "mod.rs")):
            if os.path.exists(cand):
                res.append((name, cand))
                break
    return res


def load_crate(root_file):
    texts = {}
    mods = {}

    def build(file, path, parent):
        text = strip(open(file, encoding="utf-8").read())
        texts[file] = text
        m = Module(path, file, parent)
        mods[file] = m
        for name, child_file in file_module_children(file, text):
            if child_file in mods:
                continue
            m.children[name] = build(child_file, path + [name], m)
        for im in ITEM_RE.finditer(text):
            m.items.add(im.group(2))
        for im in MACRO_RE.finditer(text):
            m.items.add(im.group(1))
        for um in USE_RE.finditer(text):
            public = um.group(1) is not None
            for segs, alias in expand_use(um.group(2)):
                if not segs:
                    continue
                if segs[-1] == "*":
                    if public:
                        m.globs.append(segs[:-1])
                    continue
                name = alias or (segs[-2] if segs[-1] == "self" and len(segs) > 1 else segs[-1])
                if segs[-1] == "self":
                    segs = segs[:-1]
                m.imports[name] = segs
                if public:
                    m.reexports[name] = segs
        return m

    root = build(root_file, [], None)
    return root, mods, texts


def start_module(mod, root, segs):
    """The module a path starts from, and the remaining segments."""
    cur = mod
    i = 0
    if segs and segs[0] == "crate":
        cur, i = root, 1
    elif segs and segs[0] in ("self", "super"):
        while i < len(segs) and segs[i] in ("self", "super"):
            if segs[i] == "super":
                cur = cur.parent or cur
            i += 1
    else:
        return None, segs
    return cur, segs[i:]


def resolve(mod, root, segs, depth=0):
    """Files that define the item named by `segs` used from `mod` (empty when external)."""
    if depth > 20 or not segs:
        return set()
    start, rest = start_module(mod, root, segs)
    if start is None:
        # `a::b` where `a` is a child module, or an imported name, of `mod`.
        head = segs[0]
        if head in mod.children:
            start, rest = mod, segs
        elif head in mod.imports and mod.imports[head][0] in ("crate", "self", "super"):
            return resolve(mod, root, mod.imports[head] + segs[1:], depth + 1)
        else:
            return set()
    return walk(start, root, rest, depth)


def walk(cur, root, rest, depth):
    if depth > 20:
        return set()
    if not rest:
        return {cur.file}
    name = rest[0]
    if name in cur.children:
        return walk(cur.children[name], root, rest[1:], depth)
    if name in cur.items:
        return {cur.file}
    if name in cur.reexports:
        target = cur.reexports[name]
        return resolve(cur, root, target + rest[1:], depth + 1) if target[0] in ("crate", "self", "super") or target[0] in cur.children else set()
    for g in cur.globs:
        if g and (g[0] in ("crate", "self", "super") or g[0] in cur.children):
            r = resolve(cur, root, g + rest, depth + 1)
            if r:
                return r
    return set()


def edges_of(mod, root, text):
    out = set()
    for name, segs in mod.imports.items():
        # A re-export (`pub use`) is the module's facade, not a use by its own code: paths
        # through it are resolved to the defining file instead.
        if name in mod.reexports:
            continue
        if segs and (segs[0] in ("crate", "self", "super") or segs[0] in mod.children):
            for f in resolve(mod, root, segs):
                # Importing a module itself is not a use of its items: paths through it are
                # counted below.
                if f != mod.file and not is_module_target(mod, root, segs):
                    out.add(f)
    for pm in PATH_RE.finditer(text):
        segs = [s.strip() for s in pm.group(1).split("::")]
        for f in resolve(mod, root, segs):
            if not is_module_target(mod, root, segs):
                out.add(f)
    for pm in IDENT_PATH_RE.finditer(text):
        head = pm.group(1)
        if head in ("crate", "self", "super", "Self"):
            continue
        if head in mod.imports or head in mod.children:
            segs = [head, pm.group(2)]
            for f in resolve(mod, root, segs):
                if not is_module_target(mod, root, segs):
                    out.add(f)
    out.discard(mod.file)
    return out


def is_module_target(mod, root, segs):
    start, rest = start_module(mod, root, segs)
    if start is None:
        if segs[0] in mod.children:
            start, rest = mod, segs
        elif segs[0] in mod.imports:
            return is_module_target(mod, root, mod.imports[segs[0]] + segs[1:]) if mod.imports[segs[0]][0] in ("crate", "self", "super") else False
        else:
            return False
    cur = start
    for s in rest:
        if s in cur.children:
            cur = cur.children[s]
        else:
            return False
    return True


def sccs(graph):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(comp)

    sys.setrecursionlimit(10000)
    for v in list(graph):
        if v not in index:
            strong(v)
    return out


def crate_roots(root):
    roots = []
    for base in ("plugin", "benches", "examples"):
        top = os.path.join(root, base)
        if not os.path.isdir(top):
            continue
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = [d for d in dirnames if d not in ("target", ".git")]
            for f in filenames:
                p = os.path.join(dirpath, f)
                if f in ("lib.rs", "main.rs") and (os.path.basename(dirpath) == "src" or base != "plugin"):
                    roots.append(p)
    # Integration tests and examples: each file is its own crate root.
    for dirpath, _, filenames in os.walk(os.path.join(root, "plugin")):
        if os.path.basename(dirpath) in ("tests", "benches", "examples"):
            for f in filenames:
                if f.endswith(".rs"):
                    roots.append(os.path.join(dirpath, f))
    return sorted(set(roots))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", nargs="?", default=os.path.join(os.path.dirname(__file__), ".."))
    ap.add_argument("--max-lines", type=int, default=800)
    ap.add_argument("--verbose", action="store_true", help="print every edge")
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    bad = 0
    seen_files = set()
    for crate_root in crate_roots(root):
        try:
            rmod, mods, texts = load_crate(crate_root)
        except (OSError, UnicodeDecodeError) as e:
            print(f"skip {crate_root}: {e}")
            continue
        graph = defaultdict(set)
        for f, m in mods.items():
            graph[f] |= edges_of(m, rmod, texts[f])
            if args.verbose:
                for t in sorted(graph[f]):
                    print(f"{os.path.relpath(f, root)} -> {os.path.relpath(t, root)}")
        for comp in sccs(graph):
            if len(comp) > 1:
                bad += 1
                names = sorted(os.path.relpath(f, root) for f in comp)
                print(f"cycle ({len(names)} files): " + ", ".join(names))
                for f in sorted(comp):
                    inner = sorted(os.path.relpath(t, root) for t in graph[f] if t in comp)
                    print(f"    {os.path.relpath(f, root)} -> {', '.join(inner)}")
        seen_files |= set(mods)
    for f in sorted(seen_files):
        if "generated" in os.path.basename(f):
            continue
        n = sum(1 for _ in open(f, encoding="utf-8"))
        if n > args.max_lines:
            bad += 1
            print(f"too long: {os.path.relpath(f, root)} ({n} lines > {args.max_lines})")
    if bad == 0:
        print(f"no import cycles, no file over {args.max_lines} lines ({len(seen_files)} files)")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
