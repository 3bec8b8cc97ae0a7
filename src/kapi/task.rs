// SPDX-License-Identifier: GPL-2.0

//! The calling task, read from Rust, and the check that makes that safe.
//!
//! Rust reads `task_struct` fields through bindgen's layout of it
//! (`kernel::bindings::task_struct`): the kernel crate's own `Task` and
//! `CurrentTask::mm()` do, and so does this module. On a kernel built
//! without `CONFIG_SCHEDSTATS`, bindgen 0.73 lays the struct out 40 bytes
//! short of the C compiler from `stats` on (an empty `____cacheline_aligned`
//! struct loses its alignment), so every such read lands in the wrong field
//! (`docs/design-notes.md`, "task_struct from Rust"). [`check_layout`]
//! compares the offsets Rust uses with the C compiler's (`src/c/task.c`);
//! vgpu refuses to load when they disagree, and the KUnit suite
//! `vgpu_kapi_task` fails.

use core::mem::{offset_of, size_of};
use kernel::{bindings, cred::Credential, current, prelude::*};

/// `struct vgpu_task_layout` of `src/c/task.h`.
#[repr(C)]
#[derive(Default, Clone, Copy, PartialEq, Eq, Debug)]
struct Layout {
    size: usize,
    flags: usize,
    stats: usize,
    mm: usize,
    cred: usize,
    files: usize,
    signal: usize,
}

extern "C" {
    /// `src/c/task.c`.
    fn vgpu_task_layout(out: *mut Layout);
}

impl Layout {
    /// The C compiler's layout.
    fn c() -> Self {
        let mut out = Self::default();
        // SAFETY: `out` is a valid, writable `struct vgpu_task_layout`
        // (same `repr(C)` fields); the helper only writes it.
        unsafe { vgpu_task_layout(&mut out) };
        out
    }

    /// bindgen's layout, which Rust code reads fields through.
    const fn rust() -> Self {
        type T = bindings::task_struct;
        Self {
            size: size_of::<T>(),
            flags: offset_of!(T, flags),
            stats: offset_of!(T, stats),
            mm: offset_of!(T, mm),
            cred: offset_of!(T, cred),
            files: offset_of!(T, files),
            signal: offset_of!(T, signal),
        }
    }

    /// The fields, by name, for reporting.
    fn fields(&self) -> [(&'static str, usize); 7] {
        [
            ("size", self.size),
            ("flags", self.flags),
            ("stats", self.stats),
            ("mm", self.mm),
            ("cred", self.cred),
            ("files", self.files),
            ("signal", self.signal),
        ]
    }
}

/// Whether bindgen's layout of `struct task_struct` equals the C
/// compiler's for every field Rust reads (and the size). On a mismatch it
/// logs each field that differs, with both offsets, and fails with
/// `ENOEXEC`: nothing may read a `task_struct` field from Rust then, the
/// kernel crate's `Task` accessors included.
pub(crate) fn check_layout() -> Result {
    let (c, rust) = (Layout::c(), Layout::rust());
    if c == rust {
        return Ok(());
    }
    for ((name, c_off), (_, r_off)) in c.fields().into_iter().zip(rust.fields()) {
        if c_off != r_off {
            pr_err!(
                "struct task_struct: {name} is at {c_off} in C but at {r_off} in Rust's bindings\n"
            );
        }
    }
    pr_err!(
        "bindgen's task_struct does not match the C compiler's (a kernel without CONFIG_SCHEDSTATS? see docs/design-notes.md): refusing to load\n"
    );
    Err(ENOEXEC)
}

/// Whether the calling task is a user task: it has an address space and is
/// not a kernel thread (one that borrowed an mm with `kthread_use_mm` has
/// one, and is still refused).
pub(crate) fn current_is_user() -> bool {
    let task = current!();
    // SAFETY: `flags` of the current task is written only by the task
    // itself (or before it ran), so reading it from the task is no race;
    // the field's offset is checked against C's at load (`check_layout`).
    let flags = unsafe { (*task.as_ptr()).flags };
    task.mm().is_some() && flags & bindings::PF_KTHREAD == 0
}

/// Runs `f` with the calling task's credentials (`current_cred()`).
pub(crate) fn with_current_cred<R>(f: impl FnOnce(&Credential) -> R) -> R {
    let task = current!();
    // SAFETY: a task's own `cred` is replaced only by the task itself
    // (`commit_creds`), so while this task runs `f` the pointer stays valid,
    // as `current_cred()` relies on; the offset is checked at load.
    let cred = unsafe { Credential::from_ptr((*task.as_ptr()).cred) };
    f(cred)
}

#[kunit_tests(vgpu_kapi_task)]
mod tests {
    use super::Layout;

    #[test]
    fn task_struct_layout_matches_c() {
        let (c, rust) = (Layout::c(), Layout::rust());
        assert_eq!(c.size, rust.size);
        assert_eq!(c.flags, rust.flags);
        assert_eq!(c.stats, rust.stats);
        assert_eq!(c.mm, rust.mm);
        assert_eq!(c.cred, rust.cred);
        assert_eq!(c.files, rust.files);
        assert_eq!(c.signal, rust.signal);
        assert!(super::check_layout().is_ok());
    }

    #[test]
    fn a_kunit_thread_is_not_a_user_task() {
        // KUnit runs each case in a kernel thread: no address space.
        assert!(!super::current_is_user());
        assert!(kernel::current!().mm().is_none());
    }
}
