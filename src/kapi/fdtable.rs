// SPDX-License-Identifier: GPL-2.0

//! Looking through the calling task's file descriptor table.
//!
//! The NVIDIA driver checks the *caller's* fd table in places (a device
//! allocation needs an open GPU-node file there; embedded fds must name the
//! driver's own files). Both the driver double and vgpu need that view.

use kernel::{
    bindings,
    fs::{File, LocalFile},
    prelude::*,
    sync::aref::ARef,
    task::Task,
};

/// Whether any open file in the calling task's fd table satisfies `pred`.
///
/// `pred` runs under the fd table's spinlock: it must not sleep (reading a
/// file's fields is fine).
pub(crate) fn current_has_file<F: Fn(&File) -> bool>(pred: F) -> bool {
    /// Trampoline for `iterate_fd`: returns non-zero (stop) on the first match.
    ///
    /// # Safety
    ///
    /// `data` points to the `F` passed by `current_has_file`; `file` is a
    /// valid file in the table, which `iterate_fd` keeps alive for the call.
    unsafe extern "C" fn visit<G: Fn(&File) -> bool>(
        data: *const c_void,
        file: *mut bindings::file,
        _fd: c_uint,
    ) -> c_int {
        // SAFETY: see the function's safety section.
        let pred = unsafe { &*data.cast::<G>() };
        // SAFETY: `file` is valid for the duration of this call (see above).
        let file = unsafe { File::from_raw_file(file) };
        c_int::from(pred(file))
    }

    let task = Task::current_raw();
    // SAFETY: `task` is the current task, alive while it runs this code; its
    // `files` pointer is only changed by the task itself (unshare, exit).
    let files = unsafe { (*task).files };
    if files.is_null() {
        return false;
    }
    // SAFETY: `files` is the current task's table (see above); `visit::<F>`
    // matches `iterate_fd`'s callback contract and `pred` outlives the call.
    let r = unsafe {
        bindings::iterate_fd(
            files,
            0,
            Some(visit::<F>),
            core::ptr::from_ref(&pred).cast(),
        )
    };
    r != 0
}

/// Takes a reference to the file behind `fd` in the caller's table.
///
/// `EBADF` if `fd` is negative or not open.
pub(crate) fn fget(fd: i32) -> Result<ARef<LocalFile>> {
    let fd = u32::try_from(fd).map_err(|_| EBADF)?;
    LocalFile::fget(fd).map_err(|_| EBADF)
}
