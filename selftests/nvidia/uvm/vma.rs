// SPDX-License-Identifier: GPL-2.0

//! Managed VMAs: their operations (entry points from the mm, which reach
//! the driver through `global.rs`), and the helpers in `exports.c` that
//! reach into an mm and a VMA.

use kernel::{bindings, prelude::*};

use crate::global::driver;

// Helpers in `exports.c`. Pointers to `mm_struct`, `vm_area_struct` and
// `vm_operations_struct` are passed as `void *` (the lint for FFI-safe types
// rejects some of bindgen's structs).
extern "C" {
    /// `current->mm` with an `mmgrab` reference, or NULL.
    pub(crate) fn nv_double_current_mm_grab() -> *mut c_void;
    /// `vma->vm_pgoff`.
    pub(crate) fn nv_double_vma_pgoff(vma: *mut c_void) -> c_ulong;
    /// `vma->vm_private_data`.
    pub(crate) fn nv_double_vma_private(vma: *mut c_void) -> *mut c_void;
    /// Sets `vma->vm_ops` (unless NULL) and `vma->vm_private_data`.
    pub(crate) fn nv_double_vma_set(vma: *mut c_void, ops: *const c_void, data: *mut c_void);
}

/// A `vm_operations_struct` that may be a `static`: with
/// `CONFIG_USERFAULTFD` (Debian's kernels) it has a raw pointer
/// (`uffd_ops`), which is not `Sync`.
#[repr(transparent)]
pub(crate) struct VmOps(pub(crate) bindings::vm_operations_struct);

// SAFETY: the table is never written after it is built, and its pointers
// are functions and null: shared references on any thread are sound.
unsafe impl Sync for VmOps {}

/// The managed VMAs' operations. `vm_private_data` holds the VA space id
/// (null: a disabled copy).
pub(crate) static VM_OPS: VmOps = VmOps(bindings::vm_operations_struct {
    open: Some(vm_open),
    close: Some(vm_close),
    may_split: Some(vm_may_split),
    mremap: Some(vm_mremap),
    fault: Some(vm_fault),
    // SAFETY: all-zeroes is a valid `vm_operations_struct` (every hook absent).
    ..unsafe { core::mem::MaybeUninit::zeroed().assume_init() }
});

/// A copy of a managed VMA (fork with `MADV_DOFORK`, or the new VMA of a
/// move, which `vm_mremap` then refuses) is disabled: it owns no range and
/// faults with SIGBUS, as UVM disables VMAs of another mm.
///
/// # Safety
///
/// Called by the mm with a valid VMA under construction, mmap lock held.
unsafe extern "C" fn vm_open(vma: *mut bindings::vm_area_struct) {
    // SAFETY: `vma` is valid (see above); only its private data changes.
    unsafe { nv_double_vma_set(vma.cast(), core::ptr::null(), core::ptr::null_mut()) };
}

/// The VMA is going away (munmap, exit): its managed range goes with it,
/// and the range's GPU-resident chunks return to the heap.
///
/// # Safety
///
/// Called by the mm with a valid VMA, mmap lock held.
unsafe extern "C" fn vm_close(vma: *mut bindings::vm_area_struct) {
    // SAFETY: `vma` is valid for the call (see above).
    let id = unsafe { nv_double_vma_private(vma.cast()) } as u64;
    if id == 0 {
        return;
    }
    // SAFETY: `vma` is valid and the mmap lock is held, as `VmaRef` needs.
    let area = unsafe { kernel::mm::virt::VmaRef::from_raw(vma) };
    let (start, end) = (area.start() as u64, area.end() as u64);
    let mm = area.mm().as_raw() as usize;
    if let Ok(drv) = driver() {
        drv.uvm_vma_closed(id, start, end - start, mm);
    }
}

/// Managed VMAs cannot be split (a documented simplification: UVM splits
/// its ranges).
///
/// # Safety
///
/// Called by the mm with a valid VMA.
unsafe extern "C" fn vm_may_split(_vma: *mut bindings::vm_area_struct, _addr: c_ulong) -> c_int {
    EINVAL.to_errno()
}

/// Managed VMAs cannot be moved (a documented simplification: UVM
/// disables the moved VMA).
///
/// # Safety
///
/// Called by the mm with a valid VMA.
unsafe extern "C" fn vm_mremap(_vma: *mut bindings::vm_area_struct) -> c_int {
    EINVAL.to_errno()
}

/// CPU accesses are not served: the double populates no CPU pages.
///
/// # Safety
///
/// Called by the mm with a valid fault.
unsafe extern "C" fn vm_fault(_vmf: *mut bindings::vm_fault) -> bindings::vm_fault_t {
    bindings::vm_fault_reason_VM_FAULT_SIGBUS as bindings::vm_fault_t
}
