// SPDX-License-Identifier: GPL-2.0

//! The calling task's cgroup (v2, the default hierarchy).
//!
//! `task_dfl_cgroup()` is an inline function over an RCU-protected pointer
//! and the kernel crate has no cgroup abstraction, so the path comes from
//! `src/c/cgroup.c`.

use kernel::prelude::*;

extern "C" {
    /// `src/c/cgroup.c`.
    fn vgpu_current_cgroup_path(buf: *mut c_char, len: usize) -> c_int;
}

/// Writes the calling task's cgroup v2 path into `buf`, absolute from the
/// cgroup2 root (`/` for the root, `/a/b` below it), in the host's view: a
/// cgroup namespace does not change it. Returns its length.
///
/// `ENAMETOOLONG` if it does not fit.
pub(crate) fn current_path(buf: &mut [u8]) -> Result<usize> {
    // SAFETY: `buf` is valid for `buf.len()` bytes of writes; the helper
    // writes at most that many, NUL included.
    let r = unsafe { vgpu_current_cgroup_path(buf.as_mut_ptr().cast(), buf.len()) };
    if r < 0 {
        return Err(Error::from_errno(r));
    }
    let len = r as usize;
    if len >= buf.len() {
        return Err(ENAMETOOLONG);
    }
    Ok(len)
}
