#!/usr/bin/env python3
"""Check one test-VM run: read its logs and decide pass or fail.

Reads build/vm-<variant>/console.log (kernel log and init's markers) and
tap.log (the selftests' TAP). Prints a summary, writes `counts`
("<passed> <failed>", selftests plus KUnit cases), and exits non-zero if
 - any TAP test or KUnit case failed, or the TAP plan was not met,
 - no vgpu KUnit suite ran (when tests were run),
 - the kernel logged an oops, BUG, WARNING, KASAN, kmemleak or lockdep report,
 - the guest did not reach its end marker (crash, hang or timeout).
"""
import argparse
import os
import re
import sys

# Kernel log patterns that mean the run is bad, whatever the tests said. The
# first that matches names the report, so the specific ones (KASAN, kmemleak,
# lockdep, Rust panics) come before the generic ones their lines also match
# ("BUG: KASAN: ...", "WARNING: possible circular locking ...").
REPORTS = [
    (re.compile(r"KASAN"), "KASAN"),
    (re.compile(r"kmemleak: \d+ new suspected memory leaks|unreferenced object 0x"), "kmemleak"),
    (re.compile(r"possible (circular|recursive) locking|inconsistent lock state|"
                r"lockdep|DEBUG_LOCKS_WARN_ON|suspicious RCU usage"), "lockdep"),
    (re.compile(r"rust_panic|panicked at"), "Rust panic"),
    (re.compile(r"\bBUG[: ]"), "BUG"),
    (re.compile(r"\bOops\b|general protection fault|Kernel panic"), "oops/panic"),
    (re.compile(r"WARNING: "), "WARNING"),
    (re.compile(r"Call Trace:"), "call trace"),
]
# Lines that match a pattern above but are not reports.
BENIGN = [
    re.compile(r"kasan: KernelAddressSanitizer initialized"),
    re.compile(r"KernelAddressSanitizer"),
    re.compile(r"kmemleak: Kernel memory leak detector initialized"),
    re.compile(r"kmemleak: Automatic memory scanning thread"),
    re.compile(r"RCU lockdep checking is enabled"),
    re.compile(r"Lock dependency validator|lockdep: fixing up alternatives|"
               r"\.\.\. MAX_LOCKDEP|per task-struct memory footprint|\.\.\. CHAINHASH|\.\.\. CLASSHASH"),
    re.compile(r"Linux version"),
    re.compile(r"Command line:|Kernel command line:"),
]

INJECT_ON = re.compile(r"vgpu-fuzz: fault injection armed")
INJECT_OFF = re.compile(r"vgpu-fuzz: fault injection disarmed")
ALLOC_FAILURE = re.compile(r": (page allocation failure: order:\d+|vmalloc error: size \d+)")

KUNIT_SUITE = re.compile(r"# (\S+): pass:(\d+) fail:(\d+) skip:(\d+) total:(\d+)")
TAP_LINE = re.compile(r"^(not ok|ok) (\d+) (\S+)(.*)$")
OUR_SUITES = ("vgpu", "nvidia_double")
TAP_PLAN = re.compile(r"^1\.\.(\d+)$")
# Selftest suites that load vgpu.ko, whose KUnit suites run at load. A run of
# other suites only (e.g. "double") has no KUnit output to demand.
KUNIT_LOADERS = ("module", "vgpus", "memory", "vgpuctl", "proxy", "containers", "fuzz", "real_driver")


# Lines printed of the first kernel report: enough for registers, the
# code bytes and a call trace.
REPORT_CONTEXT = 60


def first_report_block(console):
    """The first report's line and up to REPORT_CONTEXT lines after it."""
    lines = console.splitlines()
    for i, line in enumerate(lines):
        if any(b.search(line) for b in BENIGN):
            continue
        if any(pat.search(line) for pat, _ in REPORTS):
            return [l.rstrip() for l in lines[max(i - 2, 0):i + REPORT_CONTEXT]]
    return []


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--variant", default="fast")
    ap.add_argument("--mode", default="test")
    ap.add_argument("--qemu-rc", type=int, default=0)
    ap.add_argument("--suites", default="", help="comma-separated suites run (empty: all)")
    a = ap.parse_args()

    def read(name):
        try:
            with open(os.path.join(a.dir, name), errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    console, tap = read("console.log"), read("tap.log")
    problems = []

    if a.qemu_rc == 124:
        problems.append("the VM timed out")
    m = re.search(r"VGPU-VM-DONE rc=(\d+)", console)
    if not m:
        problems.append("the guest never reached its end marker (crash or hang?)")
    elif m.group(1) != "0":
        problems.append(f"the guest's {a.mode} program exited with status {m.group(1)}")
    # guest-init.sh's final unloads: a module that stayed names a leak.
    for line in console.splitlines():
        if re.match(r"vgpu-vm: rmmod \S+ failed", line.strip()):
            problems.append(line.strip())

    # Inside a fault-injection window of the fuzz suite (its markers in
    # the kernel log), an allocation that fails on purpose may print the
    # page allocator's warning and the stack that asked (warn_alloc): that
    # block, up to the end of its stack, is the injection working, not a
    # report. Anything else in the window still is.
    armed = in_alloc_warning = False
    injected_warnings = 0
    for line in console.splitlines():
        if INJECT_ON.search(line):
            armed = True
        elif INJECT_OFF.search(line):
            armed = in_alloc_warning = False
        if armed and ALLOC_FAILURE.search(line):
            in_alloc_warning = True
            injected_warnings += 1
            continue
        if in_alloc_warning:
            if "</TASK>" in line:
                in_alloc_warning = False
            continue
        if any(b.search(line) for b in BENIGN):
            continue
        for pat, what in REPORTS:
            if pat.search(line):
                problems.append(f"kernel report ({what}): {line.strip()}")
                break

    passed = failed = 0
    if a.mode == "test":
        plan = None
        seen = 0
        for line in tap.splitlines():
            pm = TAP_PLAN.match(line)
            if pm and plan is None:
                plan = int(pm.group(1))
            tm = TAP_LINE.match(line)
            if tm:
                seen += 1
                if tm.group(1) == "ok" and "# SKIP" not in tm.group(4):
                    passed += 1
                else:
                    failed += 1
                    problems.append(f"selftest failed: {tm.group(3)}")
        if plan is None or plan == 0:
            problems.append("no TAP plan from the selftests")
        elif seen != plan:
            problems.append(f"TAP plan was {plan} tests but {seen} reported")
            failed += max(plan - seen, 0)

        # KUnit suites run each time their module loads, and the selftests
        # load modules many times: count each of our suites once (its first
        # run), but any failing run of any suite fails the check.
        k_pass = k_fail = 0
        suites = []
        for km in KUNIT_SUITE.finditer(console):
            name, kp, kf = km.group(1), int(km.group(2)), int(km.group(3))
            if name == "Totals":
                continue
            if kf:
                problems.append(f"KUnit suite {name} has {kf} failures")
            if not name.startswith(OUR_SUITES) or name in suites:
                continue
            suites.append(name)
            k_pass += kp
            k_fail += kf
        # "-SUITE" leaves a suite out of all of them.
        chosen = [x for x in a.suites.split(",") if x and not x.startswith("-")]
        # Debian's stock kernel has no KUnit (scripts/vm.sh --variant stock).
        kunit_expected = a.variant != "stock" and (
            not chosen or any(x in KUNIT_LOADERS for x in chosen))
        if not suites and kunit_expected:
            problems.append("no vgpu KUnit suite ran")
        passed += k_pass
        failed += k_fail
        print(f"vm({a.variant}): selftests {passed - k_pass} passed, {failed - k_fail} failed; "
              f"KUnit {k_pass} passed, {k_fail} failed ({', '.join(suites) or 'none'})")

    with open(os.path.join(a.dir, "counts"), "w") as f:
        f.write(f"{passed} {failed + (1 if problems and failed == 0 else 0)}\n")

    if problems:
        for p in problems[:40]:
            print(f"vm({a.variant}): FAIL: {p}")
        # The logs stay on the machine that ran; CI keeps only what is
        # printed. Print the first report with the lines after it, so
        # the oops's registers and trace reach the record.
        block = first_report_block(console)
        if block:
            print(f"vm({a.variant}): the first kernel report, as logged:")
            for line in block:
                print(f"vm({a.variant}): | {line}")
        print(f"vm({a.variant}): logs in {a.dir}")
        return 1
    if injected_warnings:
        print(f"vm({a.variant}): {injected_warnings} allocation-failure warnings inside fault-injection windows (expected)")
    print(f"vm({a.variant}): clean (no kernel reports)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
