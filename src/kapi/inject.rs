// SPDX-License-Identifier: GPL-2.0

//! vgpu's fault-injection points (`src/c/inject.c`): on a kernel with
//! `CONFIG_FAIL_FUNCTION`, `/sys/kernel/debug/fail_function` can make each
//! fail with an errno, so that a test drives the error paths behind it
//! (`docs/testing.md`, "Fuzzing"). Otherwise they always succeed.

use kernel::prelude::*;

extern "C" {
    fn vgpu_inject_driver_call() -> core::ffi::c_int;
    fn vgpu_inject_record() -> core::ffi::c_int;
}

/// A negative errno from an injection point as an error (EINVAL for a
/// value that is not an errno, as `Error::from_errno` maps it).
fn injected(r: core::ffi::c_int) -> Result {
    if r < 0 {
        Err(Error::from_errno(r))
    } else {
        Ok(())
    }
}

/// Called before every call into the driver: an error means the call must
/// not be made and fails with that error.
pub(crate) fn driver_call() -> Result {
    // SAFETY: a C function with no arguments and no side effects.
    injected(unsafe { vgpu_inject_driver_call() })
}

/// Called before vgpu records something it must later undo: an error means
/// the step fails as an allocation failure would.
pub(crate) fn record() -> Result {
    // SAFETY: as above.
    injected(unsafe { vgpu_inject_record() })
}
