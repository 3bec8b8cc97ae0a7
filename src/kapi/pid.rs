// SPDX-License-Identifier: GPL-2.0

//! Processes by their `struct pid`, as RM keeps them for its clients (a
//! reference on the creating thread group's pid, `os_get_pid_info`,
//! `kernel-open/nvidia/os-interface.c:2758-2765` at 595.45.04), so that a
//! view can name a process in whichever PID namespace asks (`pid_vnr`, as
//! `os_find_ns_pid` does, `os-interface.c:2773-2785`). 7.3's kernel crate
//! has no type for `struct pid`: the calls are in `src/c/pid.c`.

use core::ptr::NonNull;
use kernel::prelude::*;

/// `struct pid`, opaque.
#[repr(C)]
struct RawPid {
    _private: [u8; 0],
}

extern "C" {
    fn vgpu_pid_current_tgid() -> *mut RawPid;
    fn vgpu_pid_put(pid: *mut RawPid);
    fn vgpu_pid_get(pid: *mut RawPid);
    fn vgpu_pid_host_nr(pid: *mut RawPid) -> c_int;
    fn vgpu_pid_vnr(pid: *mut RawPid) -> c_int;
    fn vgpu_pid_alive(pid: *mut RawPid) -> bool;
    fn vgpu_current_comm(out: *mut u8);
}

/// Length of a command name (`TASK_COMM_LEN`).
pub(crate) const COMM_LEN: usize = 16;

/// A thread group, by a reference on its `struct pid`.
///
/// # Invariants
///
/// `ptr` points to a `struct pid` on which this value holds one reference
/// (taken by `get_task_pid` or `get_pid`, dropped in [`Drop`]), so it stays
/// valid, whatever becomes of the process, as long as the value lives.
pub(crate) struct ProcessPid {
    ptr: NonNull<RawPid>,
}

// SAFETY: a `struct pid` is reference counted atomically (`get_pid`,
// `put_pid`), and the calls made on it (`pid_nr`, `pid_vnr`, `pid_task`
// under RCU) may run on any thread at once.
unsafe impl Send for ProcessPid {}
// SAFETY: as for `Send`: every method takes `&self` and is safe to call
// from several threads at once.
unsafe impl Sync for ProcessPid {}

impl ProcessPid {
    /// The calling thread group; `ESRCH` if it is exiting.
    pub(crate) fn current() -> Result<Self> {
        // SAFETY: no preconditions; returns a new reference or NULL.
        let ptr = unsafe { vgpu_pid_current_tgid() };
        // INVARIANT: a non-NULL pointer comes with a reference of its own.
        NonNull::new(ptr).map(|ptr| Self { ptr }).ok_or(ESRCH)
    }

    /// The same process, by another reference.
    pub(crate) fn clone_ref(&self) -> Self {
        // SAFETY: `self.ptr` is valid (type invariant); `get_pid` takes one
        // more reference on it.
        unsafe { vgpu_pid_get(self.ptr.as_ptr()) };
        // INVARIANT: the reference just taken is the new value's.
        Self { ptr: self.ptr }
    }

    /// Whether `other` is the same process.
    pub(crate) fn same(&self, other: &ProcessPid) -> bool {
        self.ptr == other.ptr
    }

    /// Its PID on the host (the initial PID namespace).
    pub(crate) fn host_nr(&self) -> i32 {
        // SAFETY: `self.ptr` is valid (type invariant).
        unsafe { vgpu_pid_host_nr(self.ptr.as_ptr()) }
    }

    /// Its PID in the caller's PID namespace; 0 if the caller cannot see it.
    pub(crate) fn nr_seen_by_caller(&self) -> i32 {
        // SAFETY: `self.ptr` is valid (type invariant).
        unsafe { vgpu_pid_vnr(self.ptr.as_ptr()) }
    }

    /// Whether the process still exists (has not been reaped).
    pub(crate) fn alive(&self) -> bool {
        // SAFETY: `self.ptr` is valid (type invariant); the helper reads
        // the pid's task under RCU.
        unsafe { vgpu_pid_alive(self.ptr.as_ptr()) }
    }
}

impl Drop for ProcessPid {
    fn drop(&mut self) {
        // SAFETY: this value holds one reference on `self.ptr` (type
        // invariant) and gives it back here, once.
        unsafe { vgpu_pid_put(self.ptr.as_ptr()) }
    }
}

/// The caller's command name, NUL-padded.
pub(crate) fn current_comm() -> [u8; COMM_LEN] {
    let mut out = [0u8; COMM_LEN];
    // SAFETY: `out` is a writable buffer of `TASK_COMM_LEN` bytes, all the
    // helper writes.
    unsafe { vgpu_current_comm(out.as_mut_ptr()) };
    out
}
