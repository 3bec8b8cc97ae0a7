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
/// Walks the table with `fget_task_next`, which hands out one referenced file
/// at a time (taking the task's lock to reach `files`), so `pred` runs
/// without any lock held.
#[cfg(vgpu_test_glue)]
pub(crate) fn current_has_file<F: Fn(&File) -> bool>(pred: F) -> bool {
    let task = Task::current_raw();
    let mut fd: c_uint = 0;
    loop {
        // SAFETY: `task` is the current task, alive while it runs this code;
        // `fd` is a valid place for the cursor. A non-null result carries a
        // reference to the file, which this loop drops with `fput`.
        let file = unsafe { bindings::fget_task_next(task, &mut fd) };
        if file.is_null() {
            return false;
        }
        // SAFETY: `file` is valid while we hold the reference taken above;
        // the borrow ends before `fput`.
        let hit = pred(unsafe { File::from_raw_file(file) });
        // SAFETY: drops the reference `fget_task_next` took, once.
        unsafe { bindings::fput(file) };
        if hit {
            return true;
        }
        fd = match fd.checked_add(1) {
            Some(n) => n,
            None => return false,
        };
    }
}

/// Takes a reference to the file behind `fd` in the caller's table.
///
/// `EBADF` if `fd` is negative or not open.
pub(crate) fn fget(fd: i32) -> Result<ARef<LocalFile>> {
    let fd = u32::try_from(fd).map_err(|_| EBADF)?;
    LocalFile::fget(fd).map_err(|_| EBADF)
}

/// The first open file in the calling task's fd table that satisfies
/// `pred`, with a reference (see [`current_has_file`] for the walk).
pub(crate) fn current_find_file<F: Fn(&File) -> bool>(pred: F) -> Option<ARef<LocalFile>> {
    let task = Task::current_raw();
    let mut fd: c_uint = 0;
    loop {
        // SAFETY: as in `current_has_file`.
        let file = unsafe { bindings::fget_task_next(task, &mut fd) };
        let raw = core::ptr::NonNull::new(file)?;
        // SAFETY: `file` is valid while we hold the reference taken above.
        if pred(unsafe { File::from_raw_file(file) }) {
            // SAFETY: `LocalFile` is a transparent wrapper of `struct file`,
            // and the reference `fget_task_next` took passes to the `ARef`.
            return Some(unsafe { ARef::from_raw(raw.cast()) });
        }
        // SAFETY: drops the reference `fget_task_next` took, once.
        unsafe { bindings::fput(file) };
        fd = fd.checked_add(1)?;
    }
}
