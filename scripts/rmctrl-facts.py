#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Facts about RM controls that live in NVIDIA's sources, not its headers.

    scripts/rmctrl-facts.py ROOT FACTS

ROOT is an exported source tree of one release (scripts/conformance.sh
makes it); FACTS is that release's facts file, whose `NAME<TAB>value` lines
for control commands (`NVxxxx_CTRL_*` whose value's top half is xxxx) the
C compiler wrote. For each of
those controls this prints two facts, numbers only:

  rmctrl_flags(NAME)             the RMCTRL_FLAGS_* word of the control's
                                 exported-method entry in
                                 src/nvidia/generated/g_*_nvoc.c (matched by
                                 methodId); absent if no class exports it
  rmctrl_embedded_pointers(NAME) 1 if src/nvidia/src/kernel/rmapi/
                                 embedded_param_copy.c names it (RM copies
                                 memory its params point at), else 0

vgpu runs a control on kernel copies through the kernel interface only if
these facts allow it (userspace/conformance/tests/facts.rs checks them).
"""
import pathlib
import re
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    root = pathlib.Path(sys.argv[1])
    controls = {}
    for line in pathlib.Path(sys.argv[2]).read_text().splitlines():
        if line.startswith("#") or "\t" not in line:
            continue
        expr, value = line.split("\t", 1)
        if not value.isdigit():
            continue
        # A control's macro names its class, whose number is the
        # command's top half (NV906F_CTRL_GET_CLASS_ENGINEID: 0x906f....).
        # Interfaces without a class number in their name (NV_CONF_COMPUTE)
        # name their commands *_CTRL_CMD_*.
        m = re.fullmatch(r"NV([0-9A-F]{4})_CTRL_\w+", expr)
        if m and int(value) >> 16 == int(m.group(1), 16):
            controls[expr] = int(value)
        elif re.fullmatch(r"NV_\w+_CTRL_CMD_\w+", expr) and int(value) > 0xFFFF:
            controls[expr] = int(value)

    entry = re.compile(
        r"/\*flags=\*/\s*(0x[0-9a-fA-F]+)u,\s*/\*accessRight=\*/[^\n]*\n"
        r"\s*/\*methodId=\*/\s*(0x[0-9a-fA-F]+)u"
    )
    flags = {}
    gen = root / "src/nvidia/generated"
    if not gen.is_dir():
        sys.exit(f"rmctrl-facts: {gen} is missing")
    for f in sorted(gen.glob("g_*_nvoc.c")):
        for m in entry.finditer(f.read_text(errors="replace")):
            method = int(m.group(2), 16)
            value = int(m.group(1), 16)
            if flags.setdefault(method, value) != value:
                sys.exit(f"rmctrl-facts: method {method:#x} has two flag words")
    if not flags:
        sys.exit("rmctrl-facts: no exported methods found")

    epc = root / "src/nvidia/src/kernel/rmapi/embedded_param_copy.c"
    if not epc.is_file():
        sys.exit(f"rmctrl-facts: {epc} is missing")
    embedded = set(re.findall(r"case\s+(NV\w*_CTRL_\w+)\s*:", epc.read_text()))
    if not embedded:
        sys.exit("rmctrl-facts: no controls with embedded pointers found")

    for name, cmd in sorted(controls.items()):
        if cmd in flags:
            print(f"rmctrl_flags({name})\t{flags[cmd]}")
        print(f"rmctrl_embedded_pointers({name})\t{int(name in embedded)}")


if __name__ == "__main__":
    main()
