#!/usr/bin/env python3
"""Methods per type and long functions in a crate's sources (issue 36: types with one job).

For each inherent `impl TypeName { ... }` block (generic or not; `impl Trait for TypeName` blocks
are trait impls and are left out) in the `.rs` files under DIR, counts the functions defined
directly in the block: all of them, and the public ones (`pub fn`, not `pub(crate)` nor
`pub(super)`). With `--long N` it also lists every function (free, method or nested) whose body
spans more than N lines, `#[cfg(test)]` modules and `tests.rs` files included unless `--no-tests`;
generated files (a name containing `generated`, as scripts/import_cycles.py excepts them from its
length limit: the flatc output `schema_generated.rs`) are left out of that list.

    python3 scripts/method_counts.py plugin/heimdall-gpu/src GpuModel
    python3 scripts/method_counts.py plugin/heimdall-coordinator/src --long 100 --no-tests

With `--calls` it also prints, for the listed types, which file's methods call which other file's
(`self.method(` calls) and every call cycle between files (parts that call down, not back).

    python3 scripts/method_counts.py plugin/heimdall-coordinator/src Coordinator --calls

Without type names it prints every type that has an inherent impl, the most public methods first.
Exits 1 when `--max-pub M` is given and a listed type has more than M public methods, when
`--long N` is given with `--fail-long` and a function is longer than N lines, or when `--calls`
finds a cycle.
"""

import argparse
import os
import re
import sys
from collections import defaultdict

# Comments, strings and char literals blanked with lines kept: the import-cycle check's reader.
from import_cycles import strip

IMPL_RE = re.compile(r"\bimpl\b")
FN_RE = re.compile(
    r"(?:^|[\s;{}])((?:pub(?:\s*\([^)]*\))?\s+)?)(?:const\s+|async\s+|unsafe\s+|extern\s+\"[^\"]*\"\s+)*fn\s+([A-Za-z_][A-Za-z0-9_]*)"
)


def matching_brace(s, open_idx):
    depth = 0
    for j in range(open_idx, len(s)):
        if s[j] == "{":
            depth += 1
        elif s[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(s) - 1


def test_ranges(s):
    """Spans of `#[cfg(test)] mod x { ... }` blocks."""
    spans = []
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{", s):
        open_idx = m.end() - 1
        spans.append((m.start(), matching_brace(s, open_idx)))
    return spans


def impl_blocks(s):
    """(type name, body start, body end) of each inherent impl block."""
    for m in IMPL_RE.finditer(s):
        open_idx = s.find("{", m.end())
        semi = s.find(";", m.end())
        if open_idx < 0 or (0 <= semi < open_idx):
            continue
        header = " ".join(s[m.end() : open_idx].split())
        header = re.sub(r"\bwhere\b.*$", "", header)
        # Drop the impl's generic parameters: `impl<'a, T: X> Type<'a>`.
        if header.startswith("<"):
            depth = 0
            for k, ch in enumerate(header):
                depth += ch == "<"
                depth -= ch == ">"
                if depth == 0:
                    header = header[k + 1 :]
                    break
        if re.search(r"\bfor\b", header):
            continue
        name = re.match(r"\s*(?:[A-Za-z_][A-Za-z0-9_]*::)*([A-Za-z_][A-Za-z0-9_]*)", header)
        if name:
            yield name.group(1), open_idx, matching_brace(s, open_idx)


def functions(s):
    """(name, first line, line count) of every function with a body."""
    for m in FN_RE.finditer(s):
        open_idx = s.find("{", m.end())
        semi = s.find(";", m.end())
        if open_idx < 0 or (0 <= semi < open_idx):
            continue  # a declaration without a body (trait method)
        close = matching_brace(s, open_idx)
        first = s.count("\n", 0, m.start(2)) + 1
        last = s.count("\n", 0, close) + 1
        yield m.group(2), first, last - first + 1, m.start()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("types", nargs="*")
    ap.add_argument("--long", type=int, help="list functions longer than this many lines")
    ap.add_argument("--no-tests", action="store_true", help="leave out #[cfg(test)] modules and tests.rs files")
    ap.add_argument("--max-pub", type=int, help="exit 1 if a listed type has more public methods")
    ap.add_argument("--calls", action="store_true", help="call graph between files and its cycles")
    ap.add_argument("--fail-long", action="store_true", help="exit 1 if --long finds a function")
    args = ap.parse_args()

    counts = defaultdict(lambda: [0, 0, set()])  # type -> [all, pub, files]
    methods = defaultdict(dict)  # type -> method -> file
    bodies = defaultdict(list)  # type -> [(file, body text)]
    long_fns = []
    for root, _, files in os.walk(args.dir):
        for f in sorted(files):
            if not f.endswith(".rs"):
                continue
            path = os.path.join(root, f)
            is_test_file = f == "tests.rs" or f.endswith("_tests.rs")
            s = strip(open(path, encoding="utf-8").read())
            tests = test_ranges(s)
            in_tests = lambda pos: is_test_file or any(a <= pos <= b for a, b in tests)
            for name, a, b in impl_blocks(s):
                if in_tests(a):
                    continue
                # Depth-1 functions of the block: track depth relative to the block.
                depth, last = 0, a
                for m in FN_RE.finditer(s, a, b):
                    depth += s.count("{", last, m.start()) - s.count("}", last, m.start())
                    last = m.start()
                    if depth == 1:
                        rel = os.path.relpath(path, args.dir)
                        methods[name].setdefault(m.group(2), rel)
                        open_idx = s.find("{", m.end())
                        if 0 <= open_idx < b:
                            bodies[name].append((rel, s[open_idx : matching_brace(s, open_idx)]))
                        c = counts[name]
                        c[0] += 1
                        c[1] += m.group(1).replace(" ", "") == "pub"
                        c[2].add(os.path.relpath(path, args.dir))
            if args.long and "generated" not in f:
                for name, first, lines, pos in functions(s):
                    if lines > args.long and not (args.no_tests and in_tests(pos)):
                        long_fns.append((lines, os.path.relpath(path, args.dir), first, name))

    types = args.types or sorted(counts, key=lambda t: (-counts[t][1], -counts[t][0], t))
    status = 0
    if types:
        print(f"{'type':<28} {'pub':>4} {'all':>4} {'files':>5}")
    for t in types:
        all_, pub, files = counts.get(t, [0, 0, set()])
        print(f"{t:<28} {pub:>4} {all_:>4} {len(files):>5}")
        if args.max_pub is not None and pub > args.max_pub and t in args.types:
            status = 1
    if args.calls:
        for t in args.types:
            edges = defaultdict(set)
            for rel, body in bodies[t]:
                for callee in set(re.findall(r"self\s*\.\s*([A-Za-z_][A-Za-z0-9_]*)\s*\(", body)):
                    target = methods[t].get(callee)
                    if target and target != rel:
                        edges[rel].add(target)
            print(f"\ncalls between the files of {t}'s methods:")
            for a in sorted(edges):
                print(f"  {a} -> {', '.join(sorted(edges[a]))}")
            cyclic = []
            for a in sorted(edges):
                seen, stack = set(), [a]
                while stack:
                    for y in edges[stack.pop()]:
                        if y not in seen:
                            seen.add(y)
                            stack.append(y)
                if a in seen:
                    cyclic.append(a)
            print(f"  files in a call cycle: {', '.join(cyclic) if cyclic else 'none'}")
            status |= 1 if cyclic else 0
    if args.long:
        print(f"\nfunctions over {args.long} lines in {args.dir}: {len(long_fns)}")
        for lines, path, first, name in sorted(long_fns, reverse=True):
            print(f"  {lines:>4}  {path}:{first}  {name}")
        if args.fail_long and long_fns:
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
