// SPDX-License-Identifier: GPL-2.0

//! The NVIDIA driver's kernel-client interface (`nvidia_get_rm_ops`).
//!
//! `nvidia.ko` exports `nvidia_get_rm_ops(ops)`: the caller names the driver
//! version it was built for in `ops.version_string`; on a match the driver
//! fills in a function table whose `op` runs RM calls at kernel privilege,
//! with kernel pointers inside the parameters (layout from
//! `kernel-open/common/inc/nv-modeset-interface.h` and
//! `src/nvidia/arch/nvalloc/unix/include/nv-kernel-rmapi-ops.h`). On a
//! mismatch it returns an error and points `version_string` at its own
//! version. vgpu names only releases it has tables for
//! ([`release::RELEASES`], each checked against that release's headers;
//! `src/nv/rmops.rs` holds the layouts, shared with the driver double), and
//! refuses to run on any other.
//!
//! Every call here copies its parameters into kernel memory it owns: the
//! driver never sees a pointer into user memory through this interface.

use kernel::prelude::*;

use crate::status::{check, Fail, RmResult};

use crate::nv::{
    abi::{self, status::NV_OK, Wire},
    release,
    rmops::{self as ops, op, OpsCmd, RmOpsTable},
};

extern "C" {
    fn nvidia_get_rm_ops(ops: *mut RmOpsTable) -> u32;
}

/// The driver's function table, for kernel-privileged RM calls.
///
/// # Invariants
///
/// The function pointers are the driver's own, from a successful
/// `nvidia_get_rm_ops` for a release of [`release::RELEASES`] (the one
/// [`release::current`] names); they stay valid while
/// vgpu is loaded, since vgpu's symbol dependency pins `nvidia.ko`.
/// A copy is as good as the original (the pointers are the driver's).
#[derive(Clone, Copy)]
pub(crate) struct RmOps {
    alloc_stack: ops::AllocStackFn,
    free_stack: ops::FreeStackFn,
    #[cfg(vgpu_test_glue)]
    enumerate_gpus: ops::EnumerateGpusFn,
    op: ops::OpFn,
}

// SAFETY: the table holds function pointers into the driver, which may be
// called from any thread (each call takes its own stack).
unsafe impl Send for RmOps {}
// SAFETY: as above; `&self` methods only call the driver.
unsafe impl Sync for RmOps {}

impl RmOps {
    /// Asks the driver for its table, naming the newest release vgpu has
    /// tables for. The driver refuses any other name
    /// (`kernel-open/nvidia/nv-modeset-interface.c:162-166` at 595.45.04)
    /// and reports its own. If vgpu has tables for that release too
    /// ([`release::RELEASES`]), it selects them and asks again under that
    /// name; otherwise it logs the driver's release and the supported ones
    /// and fails with `ENODEV`. It never asks under a name it has no table
    /// for: its layouts would be wrong for that release.
    pub(crate) fn get() -> Result<Self> {
        let mut raw = RmOpsTable::asking(release::RELEASES[0].name_nul.as_ptr());
        // SAFETY: `raw` is a valid table whose version string is a static
        // NUL-terminated string.
        let mut st = unsafe { nvidia_get_rm_ops(&mut raw) };
        let mut selected = release::Known { table: 0, alias: 0 };
        if st != NV_OK {
            if raw.version_string.is_null()
                || raw.version_string == release::RELEASES[0].name_nul.as_ptr()
            {
                pr_err!("the NVIDIA driver's kernel-client interface refused (status {st:#x})\n");
                return Err(ENODEV);
            }
            // SAFETY: on a mismatch the driver points `version_string` at
            // its own static NUL-terminated version string.
            let theirs = unsafe { CStr::from_char_ptr(raw.version_string.cast()) };
            let Some(k) = release::lookup(theirs.to_bytes()) else {
                pr_err!(
                    "NVIDIA driver {} is not supported: vgpu has ABI tables for {} only\n",
                    theirs.to_str().unwrap_or("(unprintable)"),
                    Supported
                );
                return Err(ENODEV);
            };
            // Our own copy of the name, not the driver's pointer: only a
            // release vgpu has tables for is ever named.
            raw = RmOpsTable::asking(k.name_nul().as_ptr());
            // SAFETY: as above, with another static NUL-terminated string.
            st = unsafe { nvidia_get_rm_ops(&mut raw) };
            if st != NV_OK {
                pr_err!("the NVIDIA driver's kernel-client interface refused (status {st:#x})\n");
                return Err(ENODEV);
            }
            selected = k;
        }
        release::select(selected);
        if selected.alias == 0 {
            pr_info!(
                "NVIDIA driver {}: using vgpu's tables for it\n",
                selected.name()
            );
        } else {
            pr_info!(
                "NVIDIA driver {}: using vgpu's tables for {} (the same ABI)\n",
                selected.name(),
                release::current().name
            );
        }
        match (raw.alloc_stack, raw.free_stack, raw.enumerate_gpus, raw.op) {
            // Every entry must be there, though vgpu itself never
            // enumerates (only the test modules do).
            (Some(alloc_stack), Some(free_stack), Some(_enumerate_gpus), Some(op)) => Ok(Self {
                alloc_stack,
                free_stack,
                #[cfg(vgpu_test_glue)]
                enumerate_gpus: _enumerate_gpus,
                op,
            }),
            _ => {
                pr_err!("the NVIDIA driver's kernel-client table is incomplete\n");
                Err(ENODEV)
            }
        }
    }

    /// The gpu_ids the driver knows.
    #[cfg(vgpu_test_glue)]
    pub(crate) fn gpu_ids(&self) -> Result<KVec<u32>> {
        use crate::nv::rmops::{GpuInfo, MAX_GPUS};
        let mut infos = KVec::with_capacity(MAX_GPUS, GFP_KERNEL)?;
        for _ in 0..MAX_GPUS {
            infos.push(GpuInfo::EMPTY, GFP_KERNEL)?;
        }
        // SAFETY: `infos` holds `MAX_GPUS` entries, as the interface requires.
        let n = unsafe { (self.enumerate_gpus)(infos.as_mut_ptr()) } as usize;
        let mut ids = KVec::new();
        for i in infos.iter().take(n.min(MAX_GPUS)) {
            ids.push(i.gpu_id, GFP_KERNEL)?;
        }
        Ok(ids)
    }

    /// Runs op `op` with `params` (its member of the ops union, exactly
    /// that member's size, the same in every release of [`release::RELEASES`])
    /// and copies the block back.
    fn call(&self, op: u32, params: &mut [u8]) -> Result {
        super::inject::driver_call()?;
        let mut cmd = OpsCmd::new_in(release::current().kernel, op, params).ok_or(EINVAL)?;
        let mut sp: *mut c_void = core::ptr::null_mut();
        // SAFETY: `sp` is a valid place for the stack pointer.
        if unsafe { (self.alloc_stack)(&mut sp) } != 0 {
            return Err(ENOMEM);
        }
        // SAFETY: `cmd` is an ops command block of this release's layout
        // (`OpsCmd`, checked by the conformance test); pointers inside the
        // params point to kernel buffers the caller keeps alive across this
        // call. `sp` came from `alloc_stack`.
        unsafe { (self.op)(sp, (&raw mut cmd).cast()) };
        // SAFETY: `sp` came from `alloc_stack` and is freed once.
        unsafe { (self.free_stack)(sp) };
        let n = params.len();
        params.copy_from_slice(&cmd.params()[..n]);
        Ok(())
    }

    /// NV04_CONTROL on `(h_client, h_object)` with `params` (kernel copy).
    pub(crate) fn control(
        &self,
        h_client: u32,
        h_object: u32,
        cmd: u32,
        params: &mut [u8],
    ) -> RmResult {
        let mut a = abi::Nvos54 {
            h_client,
            h_object,
            cmd,
            params: params.as_mut_ptr() as u64,
            params_size: u32::try_from(params.len()).map_err(|_| EINVAL)?,
            ..Default::default()
        };
        let mut b = a.to_bytes();
        self.call(op::CONTROL, &mut b)?;
        a = abi::Nvos54::decode(&b);
        check(a.status)
    }

    /// NV04_ALLOC of class `class` under `h_parent` of client `h_root`
    /// (`h_root == 0` and a root class: a new client). `h_new` 0 lets RM
    /// choose. Returns the handle.
    pub(crate) fn alloc(
        &self,
        h_root: u32,
        h_parent: u32,
        h_new: u32,
        class: u32,
        params: &mut [u8],
    ) -> RmResult<u32> {
        let mut a = ops::Alloc {
            h_root,
            h_object_parent: h_parent,
            h_object_new: h_new,
            h_class: class,
            p_alloc_parms: if params.is_empty() {
                0
            } else {
                params.as_mut_ptr() as u64
            },
            // No rights requested: RM grants the class's defaults.
            p_rights_requested: 0,
            params_size: u32::try_from(params.len()).map_err(|_| EINVAL)?,
            ..Default::default()
        };
        // In the release's layout (an NVOS21 before 580: no rights pointer,
        // the status elsewhere).
        release::current()
            .kernel
            .alloc
            .round_trip(&mut a, |b| self.call(op::ALLOC, b))?;
        check(a.status).map(|()| a.h_object_new)
    }

    /// As [`RmOps::alloc`], the object held by a guard that frees it unless
    /// kept.
    pub(crate) fn alloc_object(
        &self,
        h_root: u32,
        h_parent: u32,
        h_new: u32,
        class: u32,
        params: &mut [u8],
    ) -> RmResult<RmObject<'_>> {
        let handle = self.alloc(h_root, h_parent, h_new, class, params)?;
        Ok(self.guard(h_root, h_parent, handle))
    }

    /// NV04_DUP_OBJECT: a handle `h_new` (0: RM picks) under `h_parent` of
    /// client `h_client` for object `h_obj_src` of client `h_client_src`.
    /// Returns the new handle.
    pub(crate) fn dup(
        &self,
        h_client: u32,
        h_parent: u32,
        h_new: u32,
        h_client_src: u32,
        h_obj_src: u32,
    ) -> RmResult<u32> {
        let a = abi::Nvos55 {
            h_client,
            h_parent,
            h_object: h_new,
            h_client_src,
            h_object_src: h_obj_src,
            flags: 0,
            status: 0,
        };
        let mut b = a.to_bytes();
        self.call(op::DUP, &mut b)?;
        let a = abi::Nvos55::decode(&b);
        check(a.status).map(|()| a.h_object)
    }

    /// As [`RmOps::dup`], the new handle held by a guard that frees it
    /// unless kept.
    pub(crate) fn dup_object(
        &self,
        h_client: u32,
        h_parent: u32,
        h_new: u32,
        h_client_src: u32,
        h_obj_src: u32,
    ) -> RmResult<RmObject<'_>> {
        let handle = self.dup(h_client, h_parent, h_new, h_client_src, h_obj_src)?;
        Ok(self.guard(h_client, h_parent, handle))
    }

    /// A guard for object `handle` under `h_parent` of `h_client`, which the
    /// caller just had the driver create (through this interface or, for a
    /// tenant's DUP, through the tenant's own file) and has not handed on.
    pub(crate) fn guard(&self, h_client: u32, h_parent: u32, handle: u32) -> RmObject<'_> {
        // INVARIANT: the caller's contract: the object exists and is the
        // caller's to free.
        RmObject {
            rm: self,
            client: h_client,
            parent: h_parent,
            handle,
        }
    }

    /// NV01_FREE of `h_obj` (the client itself when `h_obj == h_root`).
    pub(crate) fn free(&self, h_root: u32, h_parent: u32, h_obj: u32) -> RmResult {
        let a = abi::Nvos00 {
            h_root,
            h_object_parent: h_parent,
            h_object_old: h_obj,
            status: 0,
        };
        let mut b = a.to_bytes();
        self.call(op::FREE, &mut b)?;
        check(abi::Nvos00::decode(&b).status)
    }

    /// NV04_MAP_MEMORY at kernel privilege: the kernel address of `length`
    /// bytes at `offset` of memory `h_memory` (under `h_device` of client
    /// `h_client`). The address stays valid until
    /// [`RmOps::unmap_memory`] or until `h_memory` is freed.
    pub(crate) fn map_memory(
        &self,
        h_client: u32,
        h_device: u32,
        h_memory: u32,
        offset: u64,
        length: u64,
    ) -> RmResult<usize> {
        let a = abi::Nvos33 {
            h_client,
            h_device,
            h_memory,
            offset,
            length,
            ..Default::default()
        };
        let mut b = a.to_bytes();
        self.call(op::MAP_MEMORY, &mut b)?;
        let a = abi::Nvos33::decode(&b);
        match (a.status, usize::try_from(a.p_linear_address)) {
            (NV_OK, Ok(addr)) if addr != 0 => Ok(addr),
            (NV_OK, _) => Err(Fail::Rm(abi::status::NV_ERR_INVALID_ADDRESS)),
            (st, _) => Err(Fail::Rm(st)),
        }
    }

    /// NV04_UNMAP_MEMORY of an address [`RmOps::map_memory`] gave.
    pub(crate) fn unmap_memory(
        &self,
        h_client: u32,
        h_device: u32,
        h_memory: u32,
        addr: usize,
    ) -> RmResult {
        let a = abi::Nvos34 {
            h_client,
            h_device,
            h_memory,
            p_linear_address: addr as u64,
            ..Default::default()
        };
        let mut b = a.to_bytes();
        self.call(op::UNMAP_MEMORY, &mut b)?;
        check(abi::Nvos34::decode(&b).status)
    }

    /// An arbitrary op with its union member's block, for testing refusals.
    #[cfg(vgpu_test_glue)]
    pub(crate) fn raw_op(&self, op: u32, params: &mut [u8]) -> Result {
        self.call(op, params)
    }
}

/// An RM object allocated through the kernel interface, freed when the guard
/// drops unless [`RmObject::keep`] hands its handle on: the unwinding of a
/// failed allocation step is the guard's drop, not a hand-written `free`.
///
/// # Invariants
///
/// `handle` is an object under `parent` of client `client` that the
/// guard's creator had the driver make and has not handed on, and nothing
/// has freed it through this guard yet.
pub(crate) struct RmObject<'a> {
    rm: &'a RmOps,
    client: u32,
    parent: u32,
    handle: u32,
}

impl RmObject<'_> {
    /// Its handle.
    pub(crate) fn handle(&self) -> u32 {
        self.handle
    }

    /// Keeps the object: it is no longer freed by this guard.
    pub(crate) fn keep(self) -> u32 {
        let h = self.handle;
        core::mem::forget(self);
        h
    }
}

/// How many times an undoing free is tried (a millisecond apart) before
/// the object is left to its client's free.
const UNDO_TRIES: u32 = 16;

impl Drop for RmObject<'_> {
    fn drop(&mut self) {
        // By the type invariant the object exists and is this guard's to
        // free. The guard undoes a step that failed after the driver made
        // the object, whose charge the caller has already given back: a
        // free that fails for want of memory (the driver's call stack, an
        // injected failure: `Fail::Os`, or RM's NV_ERR_NO_MEMORY) is tried
        // again rather than leave the object held uncharged until its
        // client goes (found by the fuzz suite's fault injection). Any
        // other answer is final.
        for _ in 0..UNDO_TRIES {
            match self.rm.free(self.client, self.parent, self.handle) {
                Err(Fail::Os(_)) | Err(Fail::Rm(abi::status::NV_ERR_NO_MEMORY)) => {
                    kernel::time::delay::fsleep(kernel::time::Delta::from_millis(1))
                }
                _ => return,
            }
        }
        pr_warn!(
            "vgpu: could not free object {:#x} of client {:#x}: left to the client's free\n",
            self.handle,
            self.client
        );
    }
}

/// The releases vgpu has tables for, for a log line: "a, b (c, d)", each
/// table's release followed by the others of its branch with its ABI.
struct Supported;

impl kernel::fmt::Display for Supported {
    fn fmt(&self, f: &mut kernel::fmt::Formatter<'_>) -> kernel::fmt::Result {
        for (i, r) in release::RELEASES.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(r.name)?;
            for (k, _) in r.also.iter().enumerate() {
                let name = release::Known {
                    table: i,
                    alias: k + 1,
                }
                .name();
                f.write_str(if k == 0 { " (" } else { ", " })?;
                f.write_str(name)?;
            }
            if !r.also.is_empty() {
                f.write_str(")")?;
            }
        }
        Ok(())
    }
}
