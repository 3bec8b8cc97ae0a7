#!/usr/bin/env python3
"""Tests of vmcheck.py: the VM checker must fail loudly on every kind of bad run."""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
GOOD_CONSOLE = """[    0.1] Linux version 7.3.4
[    1.2]     # Subtest: vgpu_nv_ioctl
[    1.2] # vgpu_nv_ioctl: pass:2 fail:0 skip:0 total:2
[    1.2] # Totals: pass:2 fail:0 skip:0 total:2
VGPU-VM-DONE rc=0
"""
GOOD_TAP = "TAP version 13\n1..2\nok 1 a.x\nok 2 a.y\n"


def check(console, tap, qemu_rc=0, suites="", variant="fast"):
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "console.log"), "w") as f:
            f.write(console)
        with open(os.path.join(d, "tap.log"), "w") as f:
            f.write(tap)
        r = subprocess.run([sys.executable, os.path.join(HERE, "vmcheck.py"), d,
                            "--qemu-rc", str(qemu_rc), "--suites", suites,
                            "--variant", variant],
                           capture_output=True, text=True)
        with open(os.path.join(d, "counts")) as f:
            counts = tuple(int(x) for x in f.read().split())
        return r.returncode, counts, r.stdout


class VmCheck(unittest.TestCase):
    def test_clean_run_passes_and_counts(self):
        rc, counts, _ = check(GOOD_CONSOLE, GOOD_TAP)
        self.assertEqual(rc, 0)
        self.assertEqual(counts, (4, 0))

    def test_failed_selftest(self):
        rc, counts, out = check(GOOD_CONSOLE, GOOD_TAP.replace("ok 2", "not ok 2"))
        self.assertNotEqual(rc, 0)
        self.assertEqual(counts, (3, 1))
        self.assertIn("a.y", out)

    def test_short_tap_plan(self):
        rc, counts, _ = check(GOOD_CONSOLE, "TAP version 13\n1..3\nok 1 a.x\n")
        self.assertNotEqual(rc, 0)
        self.assertGreater(counts[1], 0)

    def test_final_unload_failure(self):
        # guest-init.sh's last rmmod of a module still held fails the run,
        # naming the module, even with every selftest passed.
        line = "vgpu-vm: rmmod nvidia failed at the end of the run: nvidia 8192 1 - Live\n"
        console = GOOD_CONSOLE.replace("VGPU-VM-DONE rc=0", line + "VGPU-VM-DONE rc=125")
        rc, counts, out = check(console, GOOD_TAP)
        self.assertNotEqual(rc, 0)
        self.assertIn("rmmod nvidia failed", out)

    def test_no_tap_at_all(self):
        rc, counts, _ = check(GOOD_CONSOLE, "")
        self.assertNotEqual(rc, 0)
        self.assertGreater(counts[1], 0)

    def test_injected_allocation_failures(self):
        # Inside a fuzz injection window an allocator's warning and its
        # stack are the injection working; outside one, or anything else
        # inside one, is a report.
        warning = ("[  9.1] vgpu-selftest: page allocation failure: order:0, mode:0xcc0(GFP_KERNEL)\n"
                   "[  9.1] CPU: 0 UID: 0 PID: 7 Comm: vgpu-selftest\n"
                   "[  9.1] Call Trace:\n[  9.1]  <TASK>\n[  9.1]  dump_stack_lvl+0x1\n[  9.1]  </TASK>\n"
                   "[  9.2] vgpu-selftest: vmalloc error: size 131072, failed to allocate\n"
                   "[  9.2] Call Trace:\n[  9.2]  <TASK>\n[  9.2]  </TASK>\n")
        on, off = "[  9.0] vgpu-fuzz: fault injection armed\n", "[  9.3] vgpu-fuzz: fault injection disarmed\n"
        head, tail = GOOD_CONSOLE.split("VGPU-VM-DONE")
        rc, _, out = check(head + on + warning + off + "VGPU-VM-DONE" + tail, GOOD_TAP)
        self.assertEqual(rc, 0, out)
        self.assertIn("2 allocation-failure warnings", out)
        rc, _, out = check(head + warning + "VGPU-VM-DONE" + tail, GOOD_TAP)
        self.assertNotEqual(rc, 0)
        self.assertIn("call trace", out)
        lockdep = "[  9.1] WARNING: possible recursive locking detected\n[  9.1] Call Trace:\n"
        rc, _, out = check(head + on + lockdep + off + "VGPU-VM-DONE" + tail, GOOD_TAP)
        self.assertNotEqual(rc, 0)
        self.assertIn("lockdep", out)

    def test_kernel_reports(self):
        # Each sample must be caught by its own pattern, not only by a
        # generic one it also matches ("BUG: KASAN" matches "BUG").
        for line, what in [("WARNING: CPU: 0 PID: 1 at mm/slub.c:1 foo", "WARNING"),
                           ("BUG: KASAN: slab-use-after-free in vgpu_ioctl", "KASAN"),
                           ("BUG: unable to handle page fault for address: 0", "BUG"),
                           ("Oops: general protection fault", "oops/panic"),
                           ("kmemleak: 3 new suspected memory leaks (see /sys/kernel/debug/kmemleak)",
                            "kmemleak"),
                           ("unreferenced object 0xffff888003a1b000 (size 64):", "kmemleak"),
                           ("WARNING: possible circular locking dependency detected", "lockdep"),
                           ("WARNING: inconsistent lock state", "lockdep"),
                           ("rust_kernel: panicked at src/vgpu.rs:10:5", "Rust panic"),
                           ("Call Trace:", "call trace")]:
            rc, counts, out = check(GOOD_CONSOLE.replace("VGPU-VM-DONE", line + "\nVGPU-VM-DONE"), GOOD_TAP)
            self.assertNotEqual(rc, 0, line)
            self.assertGreater(counts[1], 0, line)
            self.assertIn(f"kernel report ({what})", out, line)

    def test_the_first_report_is_printed_with_its_trace(self):
        oops = ("Oops: int3: 0000 [#1] SMP NOPTI\nRIP: 0010:vgpu_tick+0x1/0x10 [vgpu]\n"
                "Call Trace:\n <TASK>\n hrtimer_run_queues+0x1\n")
        rc, _, out = check(GOOD_CONSOLE.replace("VGPU-VM-DONE", oops + "VGPU-VM-DONE"), GOOD_TAP)
        self.assertNotEqual(rc, 0)
        self.assertIn("the first kernel report, as logged", out)
        self.assertIn("| RIP: 0010:vgpu_tick+0x1/0x10 [vgpu]", out)
        self.assertIn("|  hrtimer_run_queues+0x1", out)
        rc, _, out = check(GOOD_CONSOLE, GOOD_TAP)
        self.assertNotIn("the first kernel report", out)

    def test_kunit_failure_in_any_run(self):
        console = GOOD_CONSOLE + "# vgpu_nv_ioctl: pass:1 fail:1 skip:0 total:2\n"
        rc, _, out = check(console, GOOD_TAP)
        self.assertNotEqual(rc, 0)
        self.assertIn("KUnit", out)

    def test_missing_kunit(self):
        rc, _, _ = check("VGPU-VM-DONE rc=0\n", GOOD_TAP)
        self.assertNotEqual(rc, 0)

    def test_kunit_only_demanded_when_a_chosen_suite_loads_vgpu(self):
        no_kunit = "VGPU-VM-DONE rc=0\n"
        rc, _, out = check(no_kunit, GOOD_TAP, suites="double")
        self.assertEqual(rc, 0, out)
        for suites in ["module", "double,module", ""]:
            rc, _, _ = check(no_kunit, GOOD_TAP, suites=suites)
            self.assertNotEqual(rc, 0, suites)
        # A KUnit failure still fails a run that did not demand KUnit.
        rc, _, _ = check(no_kunit + "# vgpu_nv_ioctl: pass:1 fail:1 skip:0 total:2\n",
                         GOOD_TAP, suites="double")
        self.assertNotEqual(rc, 0)

    def test_stock_kernel_demands_no_kunit(self):
        # Debian's kernel has no KUnit: a stock run passes without it, but
        # its reports and failed tests still fail it.
        no_kunit = "VGPU-VM-DONE rc=0\n"
        rc, counts, out = check(no_kunit, GOOD_TAP, variant="stock")
        self.assertEqual(rc, 0, out)
        self.assertEqual(counts, (2, 0))
        rc, _, _ = check(no_kunit, GOOD_TAP.replace("ok 2", "not ok 2"), variant="stock")
        self.assertNotEqual(rc, 0)
        rc, _, _ = check("[ 2.0] BUG: kernel NULL pointer dereference\n" + no_kunit, GOOD_TAP,
                         variant="stock")
        self.assertNotEqual(rc, 0)
        rc, _, _ = check(no_kunit, GOOD_TAP, variant="fast")
        self.assertNotEqual(rc, 0)

    def test_hang_or_timeout(self):
        rc, counts, _ = check(GOOD_CONSOLE.replace("VGPU-VM-DONE rc=0", ""), GOOD_TAP)
        self.assertNotEqual(rc, 0)
        self.assertGreater(counts[1], 0)
        rc, counts, out = check(GOOD_CONSOLE, GOOD_TAP, qemu_rc=124)
        self.assertNotEqual(rc, 0)
        self.assertGreater(counts[1], 0)
        self.assertIn("timed out", out)

    def test_guest_program_failure(self):
        rc, counts, out = check(GOOD_CONSOLE.replace("rc=0", "rc=1"), GOOD_TAP)
        self.assertNotEqual(rc, 0)
        self.assertIn("exited with status 1", out)

    def test_boot_banners_are_not_reports(self):
        console = ("kasan: KernelAddressSanitizer initialized (generic)\n"
                   "kmemleak: Kernel memory leak detector initialized (mem pool available: 15000)\n"
                   + GOOD_CONSOLE)
        rc, _, out = check(console, GOOD_TAP)
        self.assertEqual(rc, 0, out)


def targets(report, want):
    r = subprocess.run(["awk", "-v", f"want={want}", "-f",
                        os.path.join(HERE, "bench-targets.awk")],
                       input=report, capture_output=True, text=True)
    return r.returncode, r.stdout


class BenchTargets(unittest.TestCase):
    """make bench's target check (bench-targets.awk): a broken figure is a
    miss, named, never the number printed before it."""

    def test_met_targets_pass(self):
        rc, out = targets("a: direct 9 ns, ratio 1.2 (target <= 1.5)\n"
                          "b: filled 95.7% of what it left idle (target >= 95)\n"
                          "c: error 0.30 points (target <= 2)\n", 3)
        self.assertEqual(rc, 0, out)
        self.assertIn("all 3 targets met", out)

    def test_nan_and_inf_are_misses(self):
        for bad in ("NaN", "nan", "inf", "-inf", "infx"):
            rc, out = targets(f"a: direct 1.0 ns, ratio {bad} (target <= 1.5)\n", 1)
            self.assertEqual(rc, 1, out)
            self.assertIn(f"[not a number: {bad}]", out)

    def test_a_missing_figure_is_a_miss(self):
        rc, out = targets("a: no measurement (target >= 1)\n", 1)
        self.assertEqual(rc, 1, out)
        self.assertIn("[no figure]", out)

    def test_a_missed_target_and_a_missing_line(self):
        rc, out = targets("a: ratio 1.6 (target <= 1.5)\n", 2)
        self.assertEqual(rc, 1, out)
        self.assertIn("MISSED: a: ratio 1.6", out)
        self.assertIn("only 1 of 2 targets reported", out)


LOG = """# icount: fb_info: direct 18090 instructions, through vgpu 18222, vgpu adds 132, ratio {fb} (target <= 1.05)
# icount: alloc+free: direct 8814 instructions, through vgpu 9832, vgpu adds 1017, ratio {af} (target <= 1.15)
# icount: alloc+free with 128 vGPUs: direct 8655 instructions, through vgpu 9672 (with 1: 8814, 9832); vgpu's ratio 128 vs 1: 1.002 (target <= 1.02)
ok 1 bench.ioctl_instructions
"""
BASELINE = "# comment\nfb_info ratio\t1.007\nalloc+free ratio\t1.117\nalloc+free 128 vs 1\t0.998\n"


def guard(fb, af):
    with tempfile.TemporaryDirectory() as d:
        log, base = os.path.join(d, "tap.log"), os.path.join(d, "baseline")
        with open(log, "w") as f:
            f.write(LOG.format(fb=fb, af=af))
        with open(base, "w") as f:
            f.write(BASELINE)
        r = subprocess.run([os.path.join(HERE, "cost-guard.sh"), "--check", log, base],
                           capture_output=True, text=True)
        return r.returncode, r.stdout + r.stderr


class CostGuard(unittest.TestCase):
    """make test's cost guard (cost-guard.sh): a ratio more than 2% above
    its baseline, a missing or broken figure, or a missed target fails."""

    def test_at_baseline_passes(self):
        rc, out = guard("1.007", "1.117")
        self.assertEqual(rc, 0, out)
        self.assertIn("costs: 6 passed, 0 failed", out)

    def test_within_two_percent_passes(self):
        rc, out = guard("1.007", "1.139")
        self.assertEqual(rc, 0, out)

    def test_a_rise_over_two_percent_fails(self):
        rc, out = guard("1.007", "1.145")
        self.assertEqual(rc, 1, out)
        self.assertIn("FAIL: alloc+free ratio: 1.145: 2.5% above its baseline 1.117", out)

    def test_a_missed_target_fails(self):
        rc, out = guard("1.060", "1.117")
        self.assertEqual(rc, 1, out)
        self.assertIn("FAIL: target missed:", out)

    def test_a_broken_figure_fails(self):
        rc, out = guard("1.007", "nan")
        self.assertEqual(rc, 1, out)
        self.assertIn("FAIL: alloc+free ratio: nan: not a number", out)


if __name__ == "__main__":
    unittest.main()
