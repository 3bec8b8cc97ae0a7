#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Where each name the conformance probe checks is defined in one release.

    scripts/where-defined.py ROOT FACTS > RELEASE.where

ROOT is an exported source tree of one release (scripts/conformance.sh
makes it), FACTS that release's facts file. For the name each expression
is about (the macro, or the struct of a sizeof/offsetof), prints
`NAME<TAB>path:line` of its definition in the release's headers: a
`#define NAME`, or the line closing a `typedef struct ... } NAME;`. Names
whose definition is not found that way are left out. docs/driver-branches.md
cites these for every difference between releases.
"""
import os
import pathlib
import re
import sys

DEFINE = re.compile(r"^\s*#\s*define\s+(\w+)")
TYPEDEF_END = re.compile(r"^\s*\}\s*(\w+)\s*;")


def subject(expr):
    """The macro or type an expression is about."""
    m = re.match(r"sizeof\(\(\((\w+) \*\)0\)->", expr)
    if m:
        return m.group(1)
    m = re.match(r"(?:sizeof|offsetof)\((\w+)", expr)
    if m:
        return m.group(1)
    m = re.fullmatch(r"\w+", expr)
    return m.group(0) if m else None


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    root = pathlib.Path(sys.argv[1])
    wanted = set()
    for line in pathlib.Path(sys.argv[2]).read_text().splitlines():
        if line.startswith("#") or "\t" not in line:
            continue
        name = subject(line.split("\t", 1)[0])
        if name:
            wanted.add(name)
    found = {}
    for dirpath, _, files in os.walk(root):
        for f in sorted(files):
            if not f.endswith(".h"):
                continue
            path = pathlib.Path(dirpath) / f
            rel = path.relative_to(root).as_posix()
            for n, text in enumerate(path.read_text(errors="replace").splitlines(), 1):
                m = DEFINE.match(text) or TYPEDEF_END.match(text)
                if m and m.group(1) in wanted and m.group(1) not in found:
                    found[m.group(1)] = f"{rel}:{n}"
    for name in sorted(found):
        print(f"{name}\t{found[name]}")


if __name__ == "__main__":
    main()
