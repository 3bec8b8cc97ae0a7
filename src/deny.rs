// SPDX-License-Identifier: GPL-2.0

//! Default deny: what vgpu does with an escape, RM class, RM control or UVM
//! command that its dispatch table (`src/nv/table/`, `src/nv/uvm.rs`) does
//! not admit. [`refuse`] is the one place that decides it, before any
//! handler runs; the caller answers with the row's refusal status.
//!
//! A number the table denies is refused whatever the operator set. A number
//! the table does not know is refused too, unless the module parameter
//! `unknown_calls` is 1 (an operator running a driver newer than the tables,
//! who accepts the risk): then it is forwarded as the caller wrote it. Either
//! way the kernel log names each number once (at most [`LOGGED_MAX`]
//! distinct numbers, so a tenant cannot flood the log), and every refusal is
//! counted on the caller's vGPUs (sysfs `calls_denied`).

use core::sync::atomic::{AtomicBool, Ordering};
use kernel::prelude::*;

use crate::nv::table::Policy;

/// What a number is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Family {
    /// An escape of the NVIDIA frontend (the ioctl number on a ctl or GPU
    /// node). An unknown escape is always refused, whatever
    /// `unknown_calls` says, and not logged (the driver answers unknown
    /// escapes with `EINVAL` too).
    Escape,
    /// An RM allocation class (RM_ALLOC's `hClass`).
    Class,
    /// An RM control command (RM_CONTROL's `cmd`).
    Control,
    /// An nvidia-uvm ioctl command.
    Uvm,
}

impl Family {
    fn name(self) -> &'static str {
        match self {
            Family::Escape => "escape",
            Family::Class => "class",
            Family::Control => "control",
            Family::Uvm => "UVM command",
        }
    }
}

/// How many distinct numbers the log names; later ones are counted only.
pub(crate) const LOGGED_MAX: usize = 64;

kernel::sync::global_lock! {
    // SAFETY: initialised in `init` when the module loads, before any file
    // can be opened.
    unsafe(uninit) static LOGGED: Mutex<KVec<(Family, u32)>> = KVec::new();
}

/// Whether an unknown number is forwarded (module parameter
/// `unknown_calls` = 1, read once at load) rather than refused.
static FORWARD_UNKNOWN: AtomicBool = AtomicBool::new(false);

/// Sets up the log's memory and the operator's choice (`forward_unknown`:
/// the module parameter `unknown_calls` is 1); call once at load.
///
/// # Safety
///
/// Called once, before any other function of this file.
pub(crate) unsafe fn init(forward_unknown: bool) {
    // SAFETY: the caller's contract.
    unsafe { LOGGED.init() };
    FORWARD_UNKNOWN.store(forward_unknown, Ordering::Relaxed);
}

/// Forgets the numbers logged (frees the list): call when the module
/// unloads.
pub(crate) fn clear() {
    drop(core::mem::take(&mut *LOGGED.lock()));
}

/// Whether an unknown number is forwarded rather than refused.
fn forward_unknown() -> bool {
    FORWARD_UNKNOWN.load(Ordering::Relaxed)
}

/// Logs `number` of `family` once: `verdict` says what vgpu did with it.
fn log_once(family: Family, number: u32, verdict: &str) {
    let mut logged = LOGGED.lock();
    if logged.len() >= LOGGED_MAX || logged.contains(&(family, number)) {
        return;
    }
    if logged.push((family, number), GFP_KERNEL).is_err() {
        return;
    }
    drop(logged);
    pr_warn!(
        "{} {number:#x} is not in vgpu's tables for driver {}: {verdict} (reported once)\n",
        family.name(),
        crate::nv::release::driver().name()
    );
}

/// Whether a call of `family` with `number`, whose table row has policy
/// `row` (`None`: no row), is refused. A refusal is counted (`count`: on the
/// caller's vGPUs, sysfs `calls_denied`); an unknown number is logged once.
/// The caller answers a refusal with its row's refusal status (or the
/// family's status for a number with no row), before any handler runs.
pub(crate) fn refuse(
    family: Family,
    number: u32,
    row: Option<Policy>,
    count: impl FnOnce(),
) -> bool {
    let admitted = match row {
        Some(policy) => policy.admits(),
        None if family == Family::Escape => false,
        None if forward_unknown() => {
            log_once(family, number, "forwarded (unknown_calls=1)");
            true
        }
        None => {
            log_once(family, number, "refused");
            false
        }
    };
    if !admitted {
        count();
    }
    !admitted
}
