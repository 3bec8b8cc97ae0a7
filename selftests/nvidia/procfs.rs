// SPDX-License-Identifier: GPL-2.0

//! `/proc/driver/nvidia` (`params`, `version`), made by `procfs.c` as the
//! real driver makes it at load (`kernel-open/nvidia/nv-procfs.c`,
//! 595.45.04).

use kernel::error::to_result;
use kernel::prelude::*;

extern "C" {
    fn nv_double_procfs_init(release: *const u8) -> core::ffi::c_int;
    fn nv_double_procfs_exit();
}

/// The files, removed when dropped. At most one exists (the module holds
/// it from load to unload).
pub(crate) struct ProcFiles(());

impl ProcFiles {
    /// Makes the files for `release`.
    pub(crate) fn new(release: &CStr) -> Result<Self> {
        // SAFETY: `release` is a valid NUL-terminated string for the call,
        // which copies it; nothing else makes the files (one module
        // instance, called once from its init).
        to_result(unsafe { nv_double_procfs_init(release.as_char_ptr()) })?;
        Ok(Self(()))
    }
}

impl Drop for ProcFiles {
    fn drop(&mut self) {
        // SAFETY: the files exist (made by `new`); proc_remove waits for
        // readers to finish.
        unsafe { nv_double_procfs_exit() };
    }
}
