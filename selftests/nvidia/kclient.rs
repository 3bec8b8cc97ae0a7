// SPDX-License-Identifier: GPL-2.0

//! The kernel-client interface: `nvidia_get_rm_ops`, as nvidia.ko exports it
//! (header `kernel-open/common/inc/nv-modeset-interface.h` in NVIDIA's open
//! modules).
//!
//! The caller fills `version_string` with the driver version it was built
//! for; on a match the driver fills in the function table. Its `op` runs RM
//! calls at kernel privilege, so the per-file client binding does not apply
//! and pointers inside the parameters are kernel pointers.
//!
//! The double implements `op` for NV04_CONTROL (params NVOS54), NV04_ALLOC
//! (params NVOS21), NV04_DUP_OBJECT (params NVOS55) and NV01_FREE (params
//! NVOS00); other ops fail with
//! NV_ERR_NOT_SUPPORTED in their status.

use kernel::prelude::*;

use crate::nv::abi::{self, rm_op, status::*, Wire};
use crate::rm::{gpu_id_of, status_of, Space};
use crate::{driver, DRIVER_VERSION};

/// The driver's version, NUL-terminated, for `version_string`.
static VERSION_CSTR: &CStr = c"595.45.04";

/// `nv_gpu_info_t`: one entry of `enumerate_gpus`' output array.
/// GUESS (layout from the header's field list, x86_64 C rules):
/// `{u32 gpu_id; {u32 domain; u8 bus, slot, function} pci_info; void *os_device_ptr}`.
#[repr(C)]
pub(crate) struct NvGpuInfo {
    gpu_id: u32,
    domain: u32,
    bus: u8,
    slot: u8,
    function: u8,
    os_device_ptr: *mut c_void,
}

/// The function table (`nvidia_modeset_rm_ops_t`), in the header's order.
#[repr(C)]
pub(crate) struct RmOps {
    version_string: *const c_char,
    allow_write_combining: u8,
    alloc_stack: Option<unsafe extern "C" fn(*mut *mut c_void) -> c_int>,
    free_stack: Option<unsafe extern "C" fn(*mut c_void)>,
    enumerate_gpus: Option<unsafe extern "C" fn(*mut NvGpuInfo) -> u32>,
    open_gpu: Option<unsafe extern "C" fn(u32, *mut c_void) -> c_int>,
    close_gpu: Option<unsafe extern "C" fn(u32, *mut c_void)>,
    op: Option<unsafe extern "C" fn(*mut c_void, *mut c_void)>,
    set_callbacks: Option<unsafe extern "C" fn(*const c_void) -> c_int>,
}

/// Copies `out.len()` bytes from kernel address `addr`.
pub(crate) fn kernel_read(addr: u64, out: &mut [u8]) -> Result {
    if addr == 0 && !out.is_empty() {
        return Err(EFAULT);
    }
    // SAFETY: kernel clients pass kernel pointers to buffers of the sizes
    // they declare (the interface's contract; such callers are trusted
    // kernel code, as with the real driver).
    unsafe {
        core::ptr::copy_nonoverlapping(addr as usize as *const u8, out.as_mut_ptr(), out.len())
    };
    Ok(())
}

/// Copies `data` to kernel address `addr`.
pub(crate) fn kernel_write(addr: u64, data: &[u8]) -> Result {
    if addr == 0 && !data.is_empty() {
        return Err(EFAULT);
    }
    // SAFETY: as in `kernel_read`.
    unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), addr as usize as *mut u8, data.len()) };
    Ok(())
}

/// `alloc_stack`: hands out a NULL stack.
///
/// # Safety
///
/// `sp` is NULL or a valid place for a pointer.
unsafe extern "C" fn alloc_stack(sp: *mut *mut c_void) -> c_int {
    // The double needs no per-thread stack: hand out NULL, which callers
    // must accept (the real driver does so on some configurations).
    if !sp.is_null() {
        // SAFETY: the caller passes a valid place for the result.
        unsafe { *sp = core::ptr::null_mut() };
    }
    0
}

/// `free_stack`: nothing to free.
///
/// # Safety
///
/// Any argument is accepted.
unsafe extern "C" fn free_stack(_sp: *mut c_void) {}

/// `enumerate_gpus`: fills one entry per fake GPU, returns the count.
///
/// # Safety
///
/// `out` points to an array of at least 32 entries.
unsafe extern "C" fn enumerate_gpus(out: *mut NvGpuInfo) -> u32 {
    let Ok(drv) = driver() else { return 0 };
    let n = drv.gpu_count();
    for i in 0..n {
        let info = NvGpuInfo {
            gpu_id: gpu_id_of(i as u32),
            domain: 0,
            bus: (i + 1) as u8,
            slot: 0,
            function: 0,
            os_device_ptr: core::ptr::null_mut(),
        };
        // SAFETY: the caller passes an array of NV_MAX_GPUS (32) entries, and
        // the double has at most 8 GPUs.
        unsafe { out.add(i).write(info) };
    }
    n as u32
}

/// `open_gpu`: succeeds for a gpu_id of the double.
///
/// # Safety
///
/// Any argument is accepted.
unsafe extern "C" fn open_gpu(gpu_id: u32, _sp: *mut c_void) -> c_int {
    let Ok(drv) = driver() else {
        return -(ENODEV.to_errno());
    };
    if (0..drv.gpu_count() as u32).any(|i| gpu_id_of(i) == gpu_id) {
        0
    } else {
        ENODEV.to_errno()
    }
}

/// `close_gpu`: nothing to do.
///
/// # Safety
///
/// Any argument is accepted.
unsafe extern "C" fn close_gpu(_gpu_id: u32, _sp: *mut c_void) {}

/// `set_callbacks`: accepted and ignored.
///
/// # Safety
///
/// Any argument is accepted.
unsafe extern "C" fn set_callbacks(_cb: *const c_void) -> c_int {
    0
}

/// `op(sp, ops_cmd)`: `ops_cmd` is `{u32 op; union params}` with the params
/// 8-byte aligned at offset 8. Status comes back in the params.
///
/// # Safety
///
/// `cmd` is NULL or points to an ops command whose params, and the buffers
/// they point to, are valid kernel memory of the sizes they declare.
unsafe extern "C" fn op(_sp: *mut c_void, cmd: *mut c_void) {
    if cmd.is_null() {
        return;
    }
    let base = cmd as usize as u64;
    let mut opb = [0u8; 4];
    if kernel_read(base, &mut opb).is_err() {
        return;
    }
    let Ok(drv) = driver() else { return };
    let at = base + 8;
    match u32::from_ne_bytes(opb) {
        rm_op::CONTROL => serve(at, |a: &mut abi::Nvos54| {
            a.status = status_of(drv.control(a, None, &Space::Kernel));
        }),
        rm_op::ALLOC => serve(at, |a: &mut abi::Nvos21| match drv.kernel_alloc(a) {
            Ok(h) => (a.h_object_new, a.status) = (h, NV_OK),
            Err(s) => a.status = s,
        }),
        rm_op::DUP => serve(at, |a: &mut abi::Nvos55| match drv.kernel_dup(a) {
            Ok(h) => (a.h_object, a.status) = (h, NV_OK),
            Err(s) => a.status = s,
        }),
        rm_op::FREE => serve(at, |a: &mut abi::Nvos00| {
            a.status = status_of(drv.kernel_free(a));
        }),
        rm_op::MAP_MEMORY => serve(at, |a: &mut abi::Nvos33| match drv.kernel_map(a) {
            Ok(addr) => (a.p_linear_address, a.status) = (addr, NV_OK),
            Err(s) => a.status = s,
        }),
        rm_op::UNMAP_MEMORY => serve(at, |a: &mut abi::Nvos34| {
            a.status = status_of(drv.kernel_unmap(a));
        }),
        // GUESS: unsupported ops report NOT_SUPPORTED in the NVOS00-style
        // status of their params; the double writes it where NVOS00 has it.
        _ => serve(at, |a: &mut abi::Nvos00| a.status = NV_ERR_NOT_SUPPORTED),
    }
}

/// Serves one op: decodes its params block `T` at kernel address `addr`,
/// lets `f` fill in the results (status included) and writes them back.
fn serve<T: Wire>(addr: u64, f: impl FnOnce(&mut T)) {
    // Every ops params block is at most 64 bytes (NVOS33, the largest
    // served, is 48).
    let mut buf = [0u8; 64];
    let Some(b) = buf.get_mut(..T::SIZE) else {
        return;
    };
    if kernel_read(addr, b).is_err() {
        return;
    }
    let mut a = T::decode(b);
    f(&mut a);
    a.encode(b);
    let _ = kernel_write(addr, b);
}

/// `NV_STATUS nvidia_get_rm_ops(nvidia_modeset_rm_ops_t *rm_ops)`, exported
/// by `exports.c`.
///
/// # Safety
///
/// `ops` points to a writable `RmOps` whose `version_string` is a valid C
/// string (or NULL).
#[no_mangle]
pub(crate) unsafe extern "C" fn nvidia_get_rm_ops(ops: *mut RmOps) -> u32 {
    if ops.is_null() {
        return NV_ERR_INVALID_ARGUMENT;
    }
    // SAFETY: see the function's safety section.
    let ops = unsafe { &mut *ops };
    let theirs = if ops.version_string.is_null() {
        None
    } else {
        // SAFETY: a non-NULL `version_string` is a valid C string (contract).
        Some(unsafe { CStr::from_char_ptr(ops.version_string) })
    };
    let matches = theirs.is_some_and(|s| s.to_bytes() == DRIVER_VERSION.as_bytes());
    ops.version_string = VERSION_CSTR.as_char_ptr();
    if !matches {
        return NV_ERR_GENERIC;
    }
    ops.allow_write_combining = 0;
    ops.alloc_stack = Some(alloc_stack);
    ops.free_stack = Some(free_stack);
    ops.enumerate_gpus = Some(enumerate_gpus);
    ops.open_gpu = Some(open_gpu);
    ops.close_gpu = Some(close_gpu);
    ops.op = Some(op);
    ops.set_callbacks = Some(set_callbacks);
    NV_OK
}
