// SPDX-License-Identifier: GPL-2.0

//! The driver while the module is loaded: the one global the entry points
//! (file operations, VMA callbacks, the kernel-client interface) reach it
//! through. Handlers never do: they are methods of the driver.

use kernel::{prelude::*, sync::Arc};

use crate::rm::state::Driver;

kernel::sync::global_lock! {
    // SAFETY: initialised in `NvidiaDouble::init` (through `init`) before
    // any file can be opened.
    unsafe(uninit) static DRIVER: Mutex<Option<Arc<Driver>>> = None;
}

/// Initialises the global.
///
/// # Safety
///
/// Called once, before anything else uses it.
pub(crate) unsafe fn init() {
    // SAFETY: the caller's contract: once, before any other use.
    unsafe { DRIVER.init() };
}

/// Installs the driver (at load).
pub(crate) fn set(drv: Arc<Driver>) {
    *DRIVER.lock() = Some(drv);
}

/// Takes the driver out (at unload, or a failed load).
pub(crate) fn take() -> Option<Arc<Driver>> {
    DRIVER.lock().take()
}

/// The driver state, while the module is loaded.
pub(crate) fn driver() -> Result<Arc<Driver>> {
    DRIVER.lock().as_ref().cloned().ok_or(ENODEV)
}
