// SPDX-License-Identifier: GPL-2.0

//! Fault injection, through the kernel's framework
//! (`Documentation/fault-injection/fault-injection.rst`), on the debug
//! kernel (`scripts/kconfig/debug.config`):
//! - failslab and fail_page_alloc fail slab and page allocations that have
//!   vgpu.ko on the stack (`require-start`/`require-end` set to its text:
//!   vgpu's own allocations and those of the driver calls and kernel
//!   services it makes), sleeping ones included;
//! - fail_function fails vgpu's own injection points (`src/c/inject.c`):
//!   every call into the driver, and every record vgpu keeps that it must
//!   later undo.
//!
//! failslab and fail_page_alloc fail only tasks flagged through
//! `/proc/self/make-it-fail` (the fuzz workers); fail_function fails any
//! caller (see [`arm`]). Each fails up to `times` times; what it injected
//! is `times` used up.

use crate::sys::{read_file, write_file};
use crate::tap::Outcome;

const DBG: &str = "/sys/kernel/debug";
/// Failures each attribute may inject while armed (its budget).
/// (`times` is an int.)
const TIMES: u64 = 1_000_000_000;

/// The frameworks, by their debugfs directories.
pub const ATTRS: [&str; 3] = ["failslab", "fail_page_alloc", "fail_function"];

/// vgpu's injection points and the errno each fails with.
pub const POINTS: [(&str, i64); 2] = [("vgpu_inject_driver_call", -5), ("vgpu_inject_record", -12)];

/// Whether this kernel has all three (the debug kernel).
pub fn available() -> bool {
    ATTRS
        .iter()
        .all(|a| std::path::Path::new(&format!("{DBG}/{a}/probability")).exists())
}

fn set(attr: &str, file: &str, v: &str) -> Outcome {
    write_file(&format!("{DBG}/{attr}/{file}"), v)
        .map_err(|e| format!("{attr}/{file} = {v}: errno {e}"))
}

/// vgpu.ko's text: from its lowest function to past its highest one, as
/// `/proc/kallsyms` lists its text symbols.
fn vgpu_text() -> Result<(u64, u64), String> {
    let syms = read_file("/proc/kallsyms")?;
    let addrs: Vec<u64> = syms
        .lines()
        .filter(|l| l.ends_with("\t[vgpu]"))
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let a = u64::from_str_radix(w.next()?, 16).ok()?;
            matches!(w.next()?, "t" | "T").then_some(a)
        })
        .collect();
    let (lo, hi) = (addrs.iter().min(), addrs.iter().max());
    match (lo, hi) {
        (Some(&lo), Some(&hi)) if lo != 0 => Ok((lo, hi + 64 * 1024)),
        _ => Err("no text symbols of vgpu in /proc/kallsyms".into()),
    }
}

/// Arms failslab to fail `times` allocations of a flagged task with
/// vgpu.ko on the stack: the first ones once `space` bytes of such
/// allocations have been made.
pub fn arm_once(space: u64, times: u32) -> Outcome {
    arm("failslab", 0)?;
    set("failslab", "times", &times.to_string())?;
    set("failslab", "space", &space.to_string())?;
    set("failslab", "probability", "100")
}

/// Arms fail_function to fail `times` calls of vgpu's injection points
/// (driver calls and records alike) in a row, after `space` calls that
/// pass: any caller (see [`arm`]).
pub fn arm_points(space: u64, times: u32) -> Outcome {
    arm("fail_function", 0)?;
    set("fail_function", "times", &times.to_string())?;
    set("fail_function", "space", &space.to_string())?;
    set("fail_function", "probability", "100")
}

/// Whether a failure armed on `attr` for `times` failures
/// ([`arm_once`], [`arm_points`]) has happened.
pub fn fired(attr: &str, times: u32) -> Result<bool, String> {
    let left = read_file(&format!("{DBG}/{attr}/times"))?;
    Ok(left.trim() != times.to_string())
}

/// Arms one framework: `percent` of the flagged tasks' eligible calls fail.
///
/// fail_function cannot filter by task on x86: its kprobe handler runs
/// from the breakpoint trap (vgpu's points are `notrace`, so the kprobe is
/// a breakpoint, not an ftrace one: `src/c/inject.c`), where `in_task()`
/// is false, so a task filter
/// would refuse every failure. It fails every caller of vgpu's points
/// instead: the fuzz workers (nothing else uses vgpu while it is armed)
/// and vgpu's scheduler thread.
pub fn arm(attr: &str, percent: u32) -> Outcome {
    set(attr, "verbose", "0")?;
    set(
        attr,
        "task-filter",
        if attr == "fail_function" { "N" } else { "Y" },
    )?;
    set(attr, "interval", "1")?;
    set(attr, "space", "0")?;
    set(attr, "times", &TIMES.to_string())?;
    match attr {
        "fail_function" => {
            for (f, errno) in POINTS {
                set(attr, "inject", f)?;
                set(
                    attr,
                    &format!("{f}/retval"),
                    &format!("{:#x}", errno as u64),
                )?;
            }
        }
        _ => {
            let (start, end) = vgpu_text()?;
            set(attr, "require-start", &start.to_string())?;
            set(attr, "require-end", &end.to_string())?;
            set(attr, "stacktrace-depth", "32")?;
            set(attr, "ignore-gfp-wait", "N")?;
            if attr == "fail_page_alloc" {
                set(attr, "ignore-gfp-highmem", "N")?;
                set(attr, "min-order", "0")?;
            }
        }
    }
    set(attr, "probability", &percent.to_string())
}

/// Disarms one framework and returns how many failures it injected.
pub fn disarm(attr: &str) -> Result<u64, String> {
    set(attr, "probability", "0")?;
    let left: i64 = read_file(&format!("{DBG}/{attr}/times"))?
        .trim()
        .parse()
        .map_err(|e| format!("{attr}/times: {e}"))?;
    if attr == "fail_function" {
        // An empty line clears the list (an empty write does nothing).
        set(attr, "inject", "\n")?;
    }
    Ok(TIMES.saturating_sub(left.max(0) as u64))
}

/// Marks the start or end of an injection window in the kernel log, where
/// `scripts/vmcheck.py` reads it: inside one, the allocation-failure
/// warnings the injected failures cause are expected, not reports.
pub fn mark(on: bool) {
    let _ = write_file(
        "/dev/kmsg",
        if on {
            "vgpu-fuzz: fault injection armed"
        } else {
            "vgpu-fuzz: fault injection disarmed"
        },
    );
}
