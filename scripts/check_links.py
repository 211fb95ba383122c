#!/usr/bin/env python3
"""Every relative link in the pages people read resolves to a file or folder of the tree.

Checks README.md and docs/**/*.md (the measurement sets' notes under docs/measurements/
included): inline links and images `[text](target)`, `![alt](target)` and reference
definitions `[name]: target`. Links to the web (`http:`, `https:`, `mailto:`) and to an anchor
of the same page (`#...`) are not checked; a `#fragment` on a relative link is dropped before
the file is looked up. Fenced code blocks and inline code are skipped.

Usage: python3 scripts/check_links.py [ROOT]       (exit 1 and one line per broken link)
"""

import os
import re
import sys

INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s+.*)?$")
FENCE = re.compile(r"^\s{0,3}(```|~~~)")
INLINE_CODE = re.compile(r"`+[^`]*`+")
EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def pages(root):
    """README.md and every markdown file under docs/, sorted."""
    found = []
    readme = os.path.join(root, "README.md")
    if os.path.isfile(readme):
        found.append(readme)
    for top, dirs, files in os.walk(os.path.join(root, "docs")):
        dirs.sort()
        found.extend(os.path.join(top, f) for f in sorted(files) if f.endswith(".md"))
    return found


def links(path):
    """(line number, target) for every link in the file outside code."""
    out = []
    in_fence = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if FENCE.match(line):
                in_fence = not in_fence
                continue
            if in_fence:
                continue
            text = INLINE_CODE.sub("", line)
            out.extend((number, m.group(1)) for m in INLINE.finditer(text))
            m = REFERENCE.match(text)
            if m:
                out.append((number, m.group(1)))
    return out


def broken(root):
    """(page, line, target, checked) for every relative link whose file is missing; and the count."""
    bad = []
    checked = 0
    for page in pages(root):
        for number, target in links(page):
            if EXTERNAL.match(target) or target.startswith("#"):
                continue
            checked += 1
            file_part = target.split("#", 1)[0].split("?", 1)[0]
            if file_part.startswith("/"):
                resolved = os.path.join(root, file_part.lstrip("/"))
            else:
                resolved = os.path.join(os.path.dirname(page), file_part)
            if not os.path.exists(resolved):
                bad.append((os.path.relpath(page, root), number, target))
    return bad, checked


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    root = os.path.abspath(root)
    bad, checked = broken(root)
    for page, number, target in bad:
        print(f"{page}:{number}: broken link {target}")
    print(f"check_links: {len(pages(root))} pages, {checked} relative links, {len(bad)} broken")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
