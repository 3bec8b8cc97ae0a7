#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Compare the dispatch table (src/nv/table/) with gVisor nvproxy's.

nvproxy (pkg/sentry/devices/nvproxy/version.go) builds, per driver version,
maps of control commands and allocation classes, each entry with the
capabilities it serves; a version's function copies its parent's maps and
adds or deletes entries. This script follows that chain for one version,
keeps the entries nvproxy admits for its compute and utility capabilities
(`compUtil`), and prints how they differ from the table's rows by name:

    scripts/nvproxy-rows.py GVISOR_GIT_DIR [VERSION]     (default 590.48.01)

GVISOR_GIT_DIR is a clone or bare mirror of google/gvisor; its HEAD is read
with `git show`, nothing is copied. Names carry over except nvproxy's
release suffixes (`_V575`: three digits), which are dropped. Exit status 1 if an nvproxy
row is missing from the table.
"""

import os
import re
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# nvproxy admits it, but RM at 595.45.04 has no handler or name for it
# (docs/dispatch-table.md, "Left out on purpose").
LEFT_OUT = {"UNKNOWN_CONTROL_COMMAND_80028B"}


def version_go(git_dir):
    return subprocess.run(
        ["git", "-C", git_dir, "show", "HEAD:pkg/sentry/devices/nvproxy/version.go"],
        check=True, capture_output=True, text=True).stdout.split("\n")


def abis(lines):
    """version name -> (parent, [(line number, text)])"""
    defs, cur = {}, None
    func = re.compile(r"^\s*(\w+) := add(?:Unsupported)?DriverABI\(\d+, \d+, \d+.*func\(\) \*driverABI \{")
    alias = re.compile(r"^\s*(\w+) := add(?:Unsupported)?DriverABI\(\d+, \d+, \d+,.*?(v\d+_\d+_\d+)\)")
    for n, line in enumerate(lines, 1):
        m = func.match(line)
        if m:
            cur = m.group(1)
            defs[cur] = [None, []]
            continue
        m = alias.match(line)
        if m:
            defs[m.group(1)] = [m.group(2), []]
            cur = None
            continue
        if cur:
            m = re.match(r"\s*abi := (v\w+)\(\)", line)
            if m and defs[cur][0] is None:
                defs[cur][0] = m.group(1)
            defs[cur][1].append((n, line))
            if re.match(r"^\t\t\}\)", line):
                cur = None
    return defs


def rows(defs, version):
    chain, v = [], version
    while v:
        chain.append(v)
        v = defs[v][0]
    chain.reverse()
    maps = {"controlCmd": {}, "allocationClass": {}}
    section = None
    for n, line in defs[chain[0]][1]:
        for name in maps:
            if name + ": map" in line:
                section = maps[name]
        if "uvmIoctl: map" in line or "frontendIoctl: map" in line or "getInfo:" in line:
            section = None
        m = re.match(r"\s*nvgpu\.(\w+):\s*(?:ctrl|alloc)Handler\(\w+(?:\[[^\]]*\])?, ([^)]*)\)", line)
        if m and section is not None:
            section[m.group(1)] = (n, m.group(2))
    for v in chain[1:]:
        for n, line in defs[v][1]:
            m = re.match(r"\s*abi\.(controlCmd|allocationClass)\[nvgpu\.(\w+)\] = \w+\(\w+(?:\[[^\]]*\])?, ([^)]*)\)", line)
            if m:
                maps[m.group(1)][m.group(2)] = (n, m.group(3))
            m = re.match(r"\s*delete\(abi\.(controlCmd|allocationClass), nvgpu\.(\w+)\)", line)
            if m:
                maps[m.group(1)].pop(m.group(2), None)
    keep = lambda m: {re.sub(r"_V\d{3}$", "", k): n for k, (n, caps) in m.items() if "compUtil" in caps}
    return keep(maps["controlCmd"]), keep(maps["allocationClass"])


def table_names():
    folder = os.path.join(TOP, "src/nv/table")
    text = "".join(open(os.path.join(folder, f)).read() for f in sorted(os.listdir(folder)))
    body = lambda name: text.split("pub const %s" % name, 1)[1].split("\n];", 1)[0]
    names = lambda s: set(re.findall(r'\bc[lt]h?\([^,()]+, "(\w+)"', s))
    return names(body("CONTROLS")), names(body("CLASSES"))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    version = "v" + (sys.argv[2] if len(sys.argv) > 2 else "590.48.01").replace(".", "_")
    ctrl, cls = rows(abis(version_go(sys.argv[1])), version)
    tctrl, tcls = table_names()
    missing = 0
    for kind, theirs, ours in (("control", ctrl, tctrl), ("class", cls, tcls)):
        for name in sorted(set(theirs) - ours - LEFT_OUT):
            print("missing %s %s (nvproxy version.go:%d)" % (kind, name, theirs[name]))
            missing += 1
        for name in sorted(ours - set(theirs)):
            print("vgpu's own %s %s (not in nvproxy's compute/utility set)" % (kind, name))
    print("%d nvproxy controls, %d classes; %d missing from the table" % (len(ctrl), len(cls), missing))
    sys.exit(1 if missing else 0)


if __name__ == "__main__":
    main()
