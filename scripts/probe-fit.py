#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Builds the conformance probe against one release, whatever it lacks.

    scripts/probe-fit.py PROBE.c OUT CC -I DIR... -- EXTRA.c...

The probe (one printf line per expression of userspace/conformance's table)
names everything vgpu decodes for the newest release it supports; an older
release lacks some of it (a class header, a control, a struct member). This
compiles the probe to OUT, and where the compiler rejects an expression,
replaces its line with one that prints the expression as `absent`; a header
the release does not have is left out (every expression that needs it then
becomes absent). It repeats until the probe compiles. An error anywhere but
on an expression's line (in a header, say) is fatal: the release's headers
do not build as the probe includes them, and that must be looked at.

Prints the headers left out on standard output, one per line.
"""
import os
import re
import subprocess
import sys

PRINTF = re.compile(r'^\s*printf\("%s\\t%llu\\n", "((?:[^"\\]|\\.)*)", ')


def main():
    args = sys.argv[1:]
    if len(args) < 4 or "--" not in args:
        sys.exit(__doc__)
    probe, out, cc = args[0], args[1], args[2]
    sep = args.index("--")
    flags, extra = args[3:sep], args[sep + 1:]
    dirs = [flags[i + 1] for i, f in enumerate(flags) if f == "-I"]
    lines = open(probe).read().split("\n")

    missing = []
    for i, line in enumerate(lines):
        m = re.match(r'#include "([^"]+)"', line)
        if m and not any(os.path.exists(os.path.join(d, m.group(1))) for d in dirs):
            missing.append(m.group(1))
            lines[i] = f"/* not in this release: {m.group(1)} */"

    fitted = out + ".c"
    for _ in range(30):
        with open(fitted, "w") as f:
            f.write("\n".join(lines))
        r = subprocess.run([cc, "-std=gnu11", "-w", *flags, "-o", out, fitted, *extra],
                           capture_output=True, text=True)
        if r.returncode == 0:
            for h in missing:
                print(h)
            return
        bad = set()
        for m in re.finditer(r"^(.*?):(\d+):\d+: error:", r.stderr, re.M):
            if os.path.basename(m.group(1)) != os.path.basename(fitted):
                sys.exit(f"probe-fit: an error outside the probe's expressions:\n{r.stderr[:3000]}")
            bad.add(int(m.group(2)) - 1)
        if not bad:
            sys.exit(f"probe-fit: the probe does not compile:\n{r.stderr[:3000]}")
        for i in sorted(bad):
            m = PRINTF.match(lines[i])
            if not m:
                sys.exit(f"probe-fit: line {i + 1} is not an expression: {lines[i]}\n"
                         f"{r.stderr[:3000]}")
            lines[i] = f'    printf("%s\\tabsent\\n", "{m.group(1)}");'
    sys.exit("probe-fit: still failing after 30 rounds")


if __name__ == "__main__":
    main()
