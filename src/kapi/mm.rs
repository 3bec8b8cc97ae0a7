// SPDX-License-Identifier: GPL-2.0

//! Address spaces: which process mapped what of a file.
//!
//! vgpu charges a managed mapping of the nvidia-uvm file when it is made and
//! refunds it once the mapping is gone, which it learns by looking at the
//! address space it was made in ([`UserMm::mapped_bytes`]). The address
//! space is held by an `mm_count` reference (`ARef<Mm>`, `mmgrab`): that
//! keeps the `mm_struct` itself, not the process's memory, alive; a walk
//! takes a user reference (`mmget_not_zero`) and the mmap lock through
//! `kernel::mm`. Only the VMA walk itself is C (`src/c/mm.c`): 7.3's
//! `kernel::mm` has no VMA iterator.

use kernel::{
    bindings, current,
    mm::{Mm, MmWithUser},
    prelude::*,
    sync::aref::ARef,
};

use super::task;

// The pointers are `c_void`: bindgen's `mm_struct` and `file` hold empty
// structs, which `improper_ctypes` rejects in an `extern` block.
extern "C" {
    /// `src/c/mm.c`.
    fn vgpu_mm_mapped_bytes_locked(
        mm: *mut c_void,
        file: *const c_void,
        start: c_ulong,
        end: c_ulong,
    ) -> c_ulong;
}

/// Bytes of `[start, end)` in `mm` mapped from the file at address `file`,
/// walked under the mmap lock the caller holds; `None` if the helper found
/// the lock not held.
///
/// # Safety
///
/// `mm` has a user reference the caller holds for the call, and its mmap
/// lock is held (for reading or writing) for the call.
unsafe fn walk_locked(mm: &MmWithUser, file: usize, start: u64, end: u64) -> Option<u64> {
    // SAFETY: `mm` is valid with users left and its mmap lock held (the
    // function's safety section), as the walk requires; `file` is compared,
    // never followed.
    let n = unsafe {
        vgpu_mm_mapped_bytes_locked(
            mm.as_raw().cast(),
            file as *const c_void,
            start as c_ulong,
            end as c_ulong,
        )
    };
    (n != c_ulong::MAX).then_some(n as u64)
}

/// An address space, held by an `mm_count` reference.
///
/// `Clone` takes another reference (`mmgrab`); dropping one drops it
/// (`mmdrop`), which may sleep.
#[derive(Clone)]
pub(crate) struct UserMm {
    mm: ARef<Mm>,
}

impl UserMm {
    /// The calling task's address space; `None` for a kernel thread.
    pub(crate) fn current() -> Option<Self> {
        let task = current!();
        let mm: &Mm = task.mm()?;
        Some(Self { mm: ARef::from(mm) })
    }

    /// Bytes of `[start, end)` mapped from the file at `file` (an address,
    /// compared only, never followed). 0 once the address space has no
    /// users left. Takes its mmap lock for reading: the caller must not
    /// hold it, nor any lock that an mmap handler takes.
    pub(crate) fn mapped_bytes(&self, file: usize, start: u64, end: u64) -> u64 {
        let Some(mm) = self.mm.mmget_not_zero() else {
            return 0;
        };
        let locked = mm.mmap_read_lock();
        // SAFETY: we hold a user reference on `mm` and, in `locked`, its
        // mmap lock for reading.
        let bytes = unsafe { walk_locked(&mm, file, start, end) }.unwrap_or(0);
        drop(locked);
        // The user reference goes (`mmput`) after the lock.
        drop(mm);
        bytes
    }

    /// As [`Self::mapped_bytes`], from inside an mmap handler (whose caller
    /// holds the calling task's mmap lock for writing): the caller's own
    /// address space is walked under that lock, another only if its lock is
    /// free at once (two tasks mapping at once must not wait for each
    /// other). `None` when it cannot tell.
    pub(crate) fn mapped_bytes_in_mmap(&self, file: usize, start: u64, end: u64) -> Option<u64> {
        let task = current!();
        if let Some(own) = task.mm() {
            if core::ptr::eq(own.as_raw(), self.mm.as_raw()) {
                // SAFETY: `own` is the calling task's mm, whose user
                // reference the task holds while it runs; the mmap handler's
                // caller holds its mmap lock for writing (the helper checks
                // that it is held, and answers `None` if not).
                return unsafe { walk_locked(own, file, start, end) };
            }
        }
        let Some(mm) = self.mm.mmget_not_zero() else {
            return Some(0);
        };
        // A last `mmput` must not tear an address space down under the
        // caller's own mmap lock: drop the user reference asynchronously.
        let mm = MmWithUser::into_mmput_async(mm);
        let _locked = mm.mmap_read_trylock()?;
        // SAFETY: we hold a user reference on `mm` and, in `_locked`, its
        // mmap lock for reading, both until after the walk.
        Some(unsafe { walk_locked(&mm, file, start, end) }.unwrap_or(0))
    }
}

/// `PROT_READ` (`<uapi/asm-generic/mman-common.h>`; the mmap constants are
/// not among the generated bindings).
const PROT_READ: c_ulong = 0x1;
/// `PROT_WRITE` (`<uapi/asm-generic/mman-common.h>`).
const PROT_WRITE: c_ulong = 0x2;
/// `MAP_PRIVATE` (`<uapi/linux/mman.h>`).
const MAP_PRIVATE: c_ulong = 0x02;
/// `MAP_ANONYMOUS` (`<uapi/asm-generic/mman-common.h>`).
const MAP_ANONYMOUS: c_ulong = 0x20;

/// Anonymous user memory in the calling task's address space, for a call
/// vgpu makes to the driver itself while it loads (the loading task is
/// trusted). Unmapped when dropped, which must happen in the same task.
///
/// # Invariants
///
/// `[addr, addr + len)` was mapped by [`Scratch::new`] in the address space
/// of the task that made it, and is unmapped only by `drop`.
pub(crate) struct Scratch {
    addr: c_ulong,
    len: usize,
}

impl Scratch {
    /// Maps `len` bytes; `EINVAL` in a task without an address space.
    pub(crate) fn new(len: usize) -> Result<Self> {
        if !task::current_is_user() {
            return Err(EINVAL);
        }
        // SAFETY: the calling task is a user task with an address space
        // (checked above); `vm_mmap` with no file maps fresh anonymous
        // memory there, or returns a negative errno.
        let addr = unsafe {
            bindings::vm_mmap(
                core::ptr::null_mut(),
                0,
                len as c_ulong,
                PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS,
                0,
            )
        };
        if addr >= (-i64::from(bindings::MAX_ERRNO)) as c_ulong {
            return Err(Error::from_errno(addr as i64 as i32));
        }
        // INVARIANT: `vm_mmap` mapped `len` bytes at `addr` in this task's
        // address space.
        Ok(Self { addr, len })
    }

    /// The user address of the memory.
    pub(crate) fn addr(&self) -> u64 {
        self.addr as u64
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // SAFETY: by the type invariants the range was mapped by `new` in
        // this task's address space (it is dropped in the same task) and is
        // unmapped once, here.
        unsafe { bindings::vm_munmap(self.addr, self.len) };
    }
}
