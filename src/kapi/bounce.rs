// SPDX-License-Identifier: GPL-2.0

//! Parameter blocks handed to the driver from memory the caller cannot
//! change.
//!
//! The driver reads an ioctl's block from the user address it is given. A
//! block vgpu has checked must reach the driver as checked, so vgpu writes
//! its kernel copy into a [`Slot`] of the caller's bounce area and gives the
//! driver the slot's user address: until the driver has read it, no other
//! thread (or process) can write the slot. The mechanism (a sealed
//! `VM_PFNMAP` mapping whose write faults are allowed only to the task that
//! holds the slot) is in `src/c/bounce.c`, which stays C: 7.3's kernel
//! crate can neither supply a mapping's `vm_operations_struct` nor insert PFNs.
//!
//! What the driver writes back into a slot is *not* protected the same way:
//! it is the caller's to read, never a fact vgpu acts on.

use kernel::{error::from_err_ptr, prelude::*};

/// `struct vgpu_bounce` of `src/c/bounce.c`, opaque to Rust.
#[repr(C)]
struct Area {
    _opaque: [u8; 0],
}

extern "C" {
    /// `src/c/bounce.c`.
    fn vgpu_bounce_get(
        slot: *mut c_uint,
        kaddr: *mut *mut c_void,
        uaddr: *mut c_ulong,
    ) -> *mut Area;
    /// `src/c/bounce.c`.
    fn vgpu_bounce_put(area: *mut Area, slot: c_uint);
}

/// A slot of the calling task's bounce area, held for one call.
///
/// It is neither `Send` nor `Sync` (raw pointers): a slot is held by the
/// task that took it, which the area lets write it through the user mapping.
///
/// # Invariants
///
/// `area`, `slot`, `kaddr` and `uaddr` came from one successful
/// `vgpu_bounce_get` in the task holding `self`, and the slot has not been
/// given back: `kaddr` points to the slot's [`Slot::SIZE`] bytes of kernel
/// memory, which stay allocated while the area is mapped in the task's
/// address space (longer than the task's call holding `self`); `uaddr` is
/// the same bytes' user address there. Only the holder writes the slot
/// until it has given the block to the driver.
pub(crate) struct Slot {
    area: *mut Area,
    slot: c_uint,
    kaddr: *mut u8,
    uaddr: u64,
}

impl Slot {
    /// Bytes in a slot: the largest block vgpu bounces (an XFER's inner
    /// block, at most 16 KiB).
    pub(crate) const SIZE: usize = 16 * 1024;

    /// Holds a free slot of the calling task's bounce area, mapping the area
    /// into its address space on first use. Waits while all the area's
    /// slots are in use (`EINTR` if killed meanwhile); `ENOMEM` if the area
    /// cannot be made.
    pub(crate) fn get() -> Result<Self> {
        let mut slot: c_uint = 0;
        let mut kaddr: *mut c_void = core::ptr::null_mut();
        let mut uaddr: c_ulong = 0;
        // SAFETY: the out-pointers are valid for writes; the helper checks
        // that the caller is a user task.
        let area = unsafe { vgpu_bounce_get(&mut slot, &mut kaddr, &mut uaddr) };
        let area = from_err_ptr(area)?;
        // INVARIANT: the helper succeeded, holding `slot` of `area` for the
        // calling task, whose kernel and user addresses it wrote out.
        Ok(Self {
            area,
            slot,
            kaddr: kaddr.cast(),
            uaddr: uaddr as u64,
        })
    }

    /// The user address of byte `off` of the slot, for the driver.
    pub(crate) fn user_addr(&self, off: usize) -> u64 {
        self.uaddr + off as u64
    }

    /// The kernel address of bytes `[off, off + len)` of the slot;
    /// `EINVAL` if they are not all inside it.
    fn at(&self, off: usize, len: usize) -> Result<*mut u8> {
        let end = off.checked_add(len).ok_or(EINVAL)?;
        if end > Self::SIZE {
            return Err(EINVAL);
        }
        // SAFETY: by the type invariants `kaddr` points to `SIZE` allocated
        // bytes, and `off` is inside them (checked above).
        Ok(unsafe { self.kaddr.add(off) })
    }

    /// The kernel address of byte `off` of the slot, with `len` bytes
    /// there, for a helper that fills a field before the driver reads the
    /// block (through the kernel mapping, so the slot's user mapping stays
    /// read-only). Valid while `self` is held.
    pub(crate) fn kernel_ptr(&mut self, off: usize, len: usize) -> Result<*mut u8> {
        self.at(off, len)
    }

    /// Writes `data` at byte `off` of the slot.
    pub(crate) fn write(&mut self, off: usize, data: &[u8]) -> Result {
        let dst = self.at(off, data.len())?;
        // SAFETY: `dst` has `data.len()` bytes of the slot, allocated while
        // `self` is held (see `at` and the type invariants); only this task
        // may write the slot while it holds it, and it is not in the driver
        // now (`&mut self`), so nothing writes it concurrently.
        unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) };
        Ok(())
    }

    /// Reads `out.len()` bytes at byte `off` of the slot.
    pub(crate) fn read(&self, off: usize, out: &mut [u8]) -> Result {
        let src = self.at(off, out.len())?;
        // SAFETY: `src` has `out.len()` bytes of the slot, allocated while
        // `self` is held (see `at` and the type invariants); bytes written
        // since the driver answered (by any thread) are untrusted, not
        // invalid: any bit pattern is a valid `u8`.
        unsafe { core::ptr::copy_nonoverlapping(src, out.as_mut_ptr(), out.len()) };
        Ok(())
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        // SAFETY: by the type invariants `area` and `slot` came from
        // `vgpu_bounce_get` and have not been given back; this gives them back
        // once.
        unsafe { vgpu_bounce_put(self.area, self.slot) };
    }
}
