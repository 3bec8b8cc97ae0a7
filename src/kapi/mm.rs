// SPDX-License-Identifier: GPL-2.0

//! Address spaces: which process mapped what of a file.
//!
//! vgpu charges a managed mapping of the nvidia-uvm file when it is made and
//! refunds it once the mapping is gone, which it learns by looking at the
//! address space it was made in ([`UserMm::mapped_bytes`]). The address
//! space is held by an `mm_count` reference (`mmgrab`): that keeps the
//! `mm_struct` itself, not the process's memory, alive.
//!
//! `task_struct` is reached only from C (`src/helpers.c`): bindgen's layout
//! of it is not the compiler's on the test kernels.

use kernel::prelude::*;

extern "C" {
    fn vgpu_mm_grab_current() -> *mut c_void;
    fn vgpu_mm_grab(mm: *mut c_void);
    fn vgpu_mm_drop(mm: *mut c_void);
    fn vgpu_mapped_bytes(
        mm: *mut c_void,
        file: *const c_void,
        start: c_ulong,
        end: c_ulong,
    ) -> c_ulong;
    fn vgpu_scratch_map(len: c_ulong) -> c_ulong;
    fn vgpu_scratch_unmap(addr: c_ulong, len: c_ulong);
    fn vgpu_mapped_bytes_in_mmap(
        mm: *mut c_void,
        file: *const c_void,
        start: c_ulong,
        end: c_ulong,
    ) -> c_ulong;
}

/// An address space, held by an `mm_count` reference.
pub(crate) struct UserMm {
    raw: *mut c_void,
}

// SAFETY: an mm_count reference may be taken, used and dropped on any
// thread; the helpers synchronise on the mm's own locks.
unsafe impl Send for UserMm {}
// SAFETY: `&UserMm` only reads through helpers that lock as needed.
unsafe impl Sync for UserMm {}

impl UserMm {
    /// The calling task's address space; `None` for a kernel thread.
    pub(crate) fn current() -> Option<Self> {
        // SAFETY: no preconditions; a non-null result carries a reference.
        let raw = unsafe { vgpu_mm_grab_current() };
        (!raw.is_null()).then_some(Self { raw })
    }

    /// Bytes of `[start, end)` mapped from the file at `file` (an address,
    /// compared only, never followed). 0 once the address space has no
    /// users left. Takes its mmap lock for reading: the caller must not
    /// hold it, nor any lock that an mmap handler takes.
    pub(crate) fn mapped_bytes(&self, file: usize, start: u64, end: u64) -> u64 {
        // SAFETY: `raw` is valid while we hold our reference; the helper
        // takes a user reference only if one is left and locks the mm.
        let n = unsafe {
            vgpu_mapped_bytes(
                self.raw,
                file as *const c_void,
                start as c_ulong,
                end as c_ulong,
            )
        };
        n as u64
    }

    /// As [`Self::mapped_bytes`], from inside an mmap handler (whose caller
    /// holds the calling task's mmap lock): the caller's own address space
    /// is walked under that lock, another only if its lock is free at once.
    /// `None` when it cannot tell.
    pub(crate) fn mapped_bytes_in_mmap(&self, file: usize, start: u64, end: u64) -> Option<u64> {
        // SAFETY: `raw` is valid while we hold our reference; the helper
        // walks the caller's own VMAs only under the mmap lock the mmap
        // handler's caller holds, and another mm's only under a lock it
        // took without waiting.
        let n = unsafe {
            vgpu_mapped_bytes_in_mmap(
                self.raw,
                file as *const c_void,
                start as c_ulong,
                end as c_ulong,
            )
        };
        (n != c_ulong::MAX).then_some(n as u64)
    }
}

impl Clone for UserMm {
    fn clone(&self) -> Self {
        // SAFETY: we hold a reference, so the mm is valid to take another.
        unsafe { vgpu_mm_grab(self.raw) };
        Self { raw: self.raw }
    }
}

impl Drop for UserMm {
    fn drop(&mut self) {
        // SAFETY: drops the reference this value holds, once.
        unsafe { vgpu_mm_drop(self.raw) };
    }
}

/// Anonymous user memory in the calling task's address space, for a call
/// vgpu makes to the driver itself while it loads (the loading task is
/// trusted). Unmapped when dropped, which must happen in the same task.
pub(crate) struct Scratch {
    addr: c_ulong,
    len: c_ulong,
}

impl Scratch {
    /// Maps `len` bytes; `EINVAL` in a task without an address space.
    pub(crate) fn new(len: usize) -> Result<Self> {
        let len = len as c_ulong;
        // SAFETY: no preconditions; the helper checks for an address space.
        let addr = unsafe { vgpu_scratch_map(len) };
        if addr >= (-4095i64) as c_ulong {
            return Err(Error::from_errno(addr as i64 as i32));
        }
        Ok(Self { addr, len })
    }

    /// The user address of the memory.
    pub(crate) fn addr(&self) -> u64 {
        self.addr as u64
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // SAFETY: the range was mapped by `new` in this task's address
        // space and is unmapped once.
        unsafe { vgpu_scratch_unmap(self.addr, self.len) };
    }
}
