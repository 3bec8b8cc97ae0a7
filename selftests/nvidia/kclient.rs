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
//! The table, the GPU list entry and the ops command block are the shared
//! definitions of `src/nv/rmops.rs` (595.45.04's layouts, checked against
//! NVIDIA's headers by the conformance test), so vgpu and the double cannot
//! drift apart, and neither can drift from the driver without that test
//! failing.
//!
//! The double implements `op` for NV04_CONTROL (params NVOS54), NV04_ALLOC
//! (params NVOS64 since 575.51.02; its `pRightsRequested` is read at kernel
//! privilege when non-zero, as RM does: `src/nvidia/src/kernel/rmapi/
//! alloc_free.c:155-170`), NV04_DUP_OBJECT (NVOS55), NV01_FREE (NVOS00),
//! NV04_MAP_MEMORY (NVOS33) and NV04_UNMAP_MEMORY (NVOS34); other ops fail
//! with NV_ERR_NOT_SUPPORTED in their status.

use kernel::prelude::*;

use crate::base::{gpu_id_of, kernel_read, kernel_write, status_of, Space};
use crate::global::driver;
use crate::nv::{
    abi::{self, status::*, Wire},
    rmops::{op, Alloc, AllocBlock, GpuInfo, OpsCmd, RmOpsTable, CMD_SIZE},
};
use crate::settings::{self, release_cstr};

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
unsafe extern "C" fn enumerate_gpus(out: *mut GpuInfo) -> u32 {
    let Ok(drv) = driver() else { return 0 };
    let n = drv.gpu_count();
    for i in 0..n {
        let info = GpuInfo {
            gpu_id: gpu_id_of(i as u32),
            pci_info: crate::procfs::pci_location(i as u32),
            ..GpuInfo::EMPTY
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
unsafe extern "C" fn open_gpu(gpu_id: u32, _sp: *mut c_void, _reset_aware: u8) -> c_int {
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
unsafe extern "C" fn close_gpu(_gpu_id: u32, _sp: *mut c_void, _reset_aware: u8) {}

/// `set_callbacks`: accepted and ignored.
///
/// # Safety
///
/// Any argument is accepted.
unsafe extern "C" fn set_callbacks(_cb: *const c_void) -> c_int {
    0
}

/// `op(sp, ops_cmd)`: `ops_cmd` is an [`OpsCmd`] (`{u32 op; union params}`,
/// the params 8-byte aligned at offset 8). Status comes back in the params.
///
/// # Safety
///
/// `cmd` is NULL or points to an ops command block of this release's size
/// whose params, and the buffers they point to, are valid kernel memory of
/// the sizes they declare.
unsafe extern "C" fn op(_sp: *mut c_void, cmd: *mut c_void) {
    if cmd.is_null() {
        return;
    }
    let base = cmd as usize as u64;
    // The claimed release's block: its union is 56 bytes before 580.
    let kc = settings::abi().kernel;
    let mut bytes = [0u8; CMD_SIZE];
    let Some(ours) = bytes.get_mut(..kc.cmd_size()) else {
        return;
    };
    if kernel_read(base, ours).is_err() {
        return;
    }
    let mut cmd = OpsCmd::from_bytes(bytes);
    let Ok(drv) = driver() else { return };
    let which = cmd.op();
    let params = cmd.params_mut();
    match which {
        op::CONTROL => serve(params, |a: &mut abi::Nvos54| {
            a.status = status_of(drv.control(a, None, &Space::Kernel));
        }),
        // The release's NV04_ALLOC block (an NVOS21 before 580), served as
        // the newest layout: a field the release lacks reads 0.
        op::ALLOC => serve_alloc(params, kc.alloc, |a: &mut Alloc| {
            // RM copies the requested rights mask (an RS_ACCESS_MASK, one
            // 32-bit limb) from this pointer with the caller's privilege,
            // here kernel (alloc_free.c:155-170, param_copy.c:224): a block
            // of the old NVOS21 layout puts its paramsSize here.
            if a.p_rights_requested != 0 {
                let mut rights = [0u8; 4];
                if kernel_read(a.p_rights_requested, &mut rights).is_err() {
                    a.status = NV_ERR_INVALID_ADDRESS;
                    return;
                }
            }
            match drv.kernel_alloc(a) {
                Ok(h) => (a.h_object_new, a.status) = (h, NV_OK),
                Err(s) => a.status = s,
            }
        }),
        op::DUP => serve(params, |a: &mut abi::Nvos55| match drv.kernel_dup(a) {
            Ok(h) => (a.h_object, a.status) = (h, NV_OK),
            Err(s) => a.status = s,
        }),
        op::FREE => serve(params, |a: &mut abi::Nvos00| {
            a.status = status_of(drv.kernel_free(a));
        }),
        op::MAP_MEMORY => serve(params, |a: &mut abi::Nvos33| match drv.kernel_map(a) {
            Ok(addr) => (a.p_linear_address, a.status) = (addr, NV_OK),
            Err(s) => a.status = s,
        }),
        op::UNMAP_MEMORY => serve(params, |a: &mut abi::Nvos34| {
            a.status = status_of(drv.kernel_unmap(a));
        }),
        // NVOS49 puts hClient first and its status at 12, as NVOS00 does.
        op::BIND_CONTEXT_DMA => serve(params, |a: &mut abi::Nvos00| {
            a.status = status_of(drv.kernel_bind_context_dma(a.h_root));
        }),
        // GUESS: unsupported ops report NOT_SUPPORTED in the NVOS00-style
        // status of their params; the double writes it where NVOS00 has it.
        _ => serve(params, |a: &mut abi::Nvos00| {
            a.status = NV_ERR_NOT_SUPPORTED
        }),
    }
    let _ = kernel_write(base, &cmd.bytes()[..kc.cmd_size()]);
}

/// Serves one op: decodes its params block `T` from the union, lets `f`
/// fill in the results (status included) and writes them back.
/// As [`serve`], for an NV04_ALLOC block in the claimed release's layout
/// (`layout`), served in the newest ([`Alloc`]).
fn serve_alloc(params: &mut [u8], layout: AllocBlock, f: impl FnOnce(&mut Alloc)) {
    let Some(b) = params.get_mut(..layout.size()) else {
        return;
    };
    let mut a = layout.decode(b);
    f(&mut a);
    layout.encode(&a, b);
}

fn serve<T: Wire>(params: &mut [u8], f: impl FnOnce(&mut T)) {
    let Some(b) = params.get_mut(..T::SIZE) else {
        return;
    };
    let mut a = T::decode(b);
    f(&mut a);
    a.encode(b);
}

/// `NV_STATUS nvidia_get_rm_ops(nvidia_modeset_rm_ops_t *rm_ops)`, exported
/// by `exports.c`.
///
/// # Safety
///
/// `ops` points to a writable `RmOpsTable` whose `version_string` is a valid C
/// string (or NULL).
#[no_mangle]
pub(crate) unsafe extern "C" fn nvidia_get_rm_ops(ops: *mut RmOpsTable) -> u32 {
    if ops.is_null() {
        return NV_ERR_INVALID_ARGUMENT;
    }
    // SAFETY: see the function's safety section.
    let ops = unsafe { &mut *ops };
    let ours = release_cstr();
    let theirs = if ops.version_string.is_null() {
        None
    } else {
        // SAFETY: a non-NULL `version_string` is a valid C string (contract).
        Some(unsafe { CStr::from_char_ptr(ops.version_string.cast()) })
    };
    // As the driver (nv-modeset-interface.c:162-166): a mismatch points
    // `version_string` at the driver's own and fails; a match fills in the
    // whole table, version string included.
    let matches = theirs.is_some_and(|s| s.to_bytes() == ours.to_bytes());
    ops.version_string = ours.as_char_ptr().cast();
    if !matches {
        return NV_ERR_GENERIC;
    }
    *ops = RmOpsTable {
        version_string: ours.as_char_ptr().cast(),
        allow_write_combining: 0,
        alloc_stack: Some(alloc_stack),
        free_stack: Some(free_stack),
        enumerate_gpus: Some(enumerate_gpus),
        open_gpu: Some(open_gpu),
        close_gpu: Some(close_gpu),
        op: Some(op),
        set_callbacks: Some(set_callbacks),
    };
    NV_OK
}
