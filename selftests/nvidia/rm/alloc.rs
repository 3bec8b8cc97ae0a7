// SPDX-License-Identifier: GPL-2.0

//! RM_ALLOC (and a kernel client's NV04_ALLOC): the params copied in as RM
//! copies them, a client made, or an object checked against its client and
//! parent and made by its class's handler (`table.rs`, `CLASSES`).

use kernel::{prelude::*, sync::ArcBorrow};

use super::call::NewObject;
use super::state::{Caller, Client, Driver, Object, Rm, CLIENT_HANDLE_BASE};
use super::table::{self, ClassRow, New, Params};
use crate::base::{current_tgid, parse, store, Space, StatusResult};
use crate::file::{Kind, NvFile};
use crate::kapi::{pid::ProcessPid, user};
use crate::nv::abi::{self, class, status::*};

impl Driver {
    /// RM_ALLOC on a file (NVOS21 or NVOS64).
    pub(crate) fn ioctl_alloc(&self, f: &ArcBorrow<'_, NvFile>, p: &mut [u8]) -> Result {
        // Both layouts carry the same fields; NVOS64 adds rights and flags.
        // `paramsSize` is not among them: RM ignores it (below).
        let (h_root, h_parent, h_new, h_class, pparams) = match p.len() {
            abi::Nvos21::SIZE => {
                let a: abi::Nvos21 = parse(p)?;
                (
                    a.h_root,
                    a.h_object_parent,
                    a.h_object_new,
                    a.h_class,
                    a.p_alloc_parms,
                )
            }
            _ => {
                let a: abi::Nvos64 = parse(p)?;
                (
                    a.h_root,
                    a.h_object_parent,
                    a.h_object_new,
                    a.h_class,
                    a.p_alloc_parms,
                )
            }
        };
        crate::calls::count(crate::calls::Kind::Class, h_class, h_root);
        // On a GPU node RM makes the event classes only; anything else is
        // `NV_CTL_DEVICE_ONLY`'s NV_ERR_INVALID_ARGUMENT, which `nv.c`
        // answers with EINVAL (`escape.c:386-410`, `nv.c:2684-2685` at
        // 550.163.01). The client RM checks is the registered ctl file's
        // (`client_id`).
        if f.kind != Kind::Ctl && !class::ON_GPU_NODES.contains(&h_class) {
            return Err(EINVAL);
        }
        let mut params = KVec::new();
        let r = alloc_params(h_class, pparams, &Space::User, &mut params).and_then(|()| {
            self.alloc(
                Caller::File(f.client_id()),
                h_root,
                h_parent,
                h_new,
                h_class,
                &mut params,
            )
        });
        let (h_out, mut st) = match r {
            Ok(h) => (h, NV_OK),
            Err(s) => (h_new, s),
        };
        if st == NV_OK && pparams != 0 && !params.is_empty() {
            // Alloc params are in/out (e.g. the VRAM size rounded up): RM
            // copies the class's params back after the object is made, and
            // a copy that fails becomes the call's status, the object kept
            // (`serverAllocApiCopyOut`, `rs_server.c:772`,
            // `alloc_free.c:195-213`; `rmapiParamsRelease`,
            // `param_copy.c:167-178` at 550.163.01; `os_memcpy_to_user`'s
            // failure is NV_ERR_INVALID_ADDRESS, `os-interface.c:508-515`).
            if user::write(pparams, &params).is_err() {
                st = NV_ERR_INVALID_ADDRESS;
            }
        }
        // RmIoctl forces a user's client allocation to NV01_ROOT_CLIENT in
        // the block it copies back (`escape.c:386-396` at 550.163.01).
        let class_out = if class::is_client_class(h_class) {
            class::NV01_ROOT_CLIENT
        } else {
            h_class
        };
        match p.len() {
            abi::Nvos21::SIZE => {
                let mut a: abi::Nvos21 = parse(p)?;
                a.h_object_new = h_out;
                a.h_class = class_out;
                a.status = st;
                store(&a, p);
            }
            _ => {
                let mut a: abi::Nvos64 = parse(p)?;
                a.h_object_new = h_out;
                a.h_class = class_out;
                a.status = st;
                store(&a, p);
            }
        }
        Ok(())
    }

    /// A kernel client's NV04_ALLOC: `a` is this release's ops block (an
    /// NVOS64) whose alloc params are in kernel memory. Returns the new
    /// handle.
    pub(crate) fn kernel_alloc(&self, a: &crate::nv::rmops::Alloc) -> StatusResult<u32> {
        // At kernel privilege RM uses the caller's buffer directly, at the
        // class's size, not `paramsSize` (`param_copy.c:55-80`).
        crate::calls::count(crate::calls::Kind::Class, a.h_class, a.h_root);
        let mut params = KVec::new();
        alloc_params(a.h_class, a.p_alloc_parms, &Space::Kernel, &mut params)?;
        let h = self.alloc(
            Caller::Kernel,
            a.h_root,
            a.h_object_parent,
            a.h_object_new,
            a.h_class,
            &mut params,
        )?;
        if a.p_alloc_parms != 0 && !params.is_empty() {
            Space::Kernel
                .write(a.p_alloc_parms, &params)
                .map_err(|_| NV_ERR_INVALID_ADDRESS)?;
        }
        Ok(h)
    }

    /// Allocates an object; returns its handle. `caller.checks_fds()`:
    /// apply the caller-fd-table check (user callers).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn alloc(
        &self,
        caller: Caller,
        h_root: u32,
        h_parent: u32,
        h_new: u32,
        h_class: u32,
        params: &mut [u8],
    ) -> StatusResult<u32> {
        let mut rm = self.rm.lock();
        let row = table::class(h_class);
        if let Some(ClassRow {
            new: New::Client, ..
        }) = row
        {
            return alloc_client(&mut rm, caller, h_root);
        }

        // No such client: RM's lookup of the client fails before any
        // binding check (`_serverLockClient` -> `_serverFindClientEntry`,
        // `rs_server.c:2590-2593, 2322-2336` at 550.163.01).
        if rm.client_index(h_root).is_none() {
            return Err(NV_ERR_INVALID_OBJECT_HANDLE);
        }
        let ci = rm.client_for(h_root, caller.binding())?;
        if !rm.clients[ci].has(h_parent) {
            return Err(NV_ERR_INVALID_OBJECT_PARENT);
        }
        let handle = if h_new == 0 {
            rm.clients[ci].gen_handle()
        } else if rm.clients[ci].has(h_new) {
            return Err(NV_ERR_INVALID_OBJECT_NEW);
        } else {
            h_new
        };
        let parent_kind = rm.clients[ci].find(h_parent).map(|o| o.kind);
        let parent_gpu = rm.clients[ci].gpu_of(h_parent);
        let Some(ClassRow {
            new: New::Object(make),
            ..
        }) = row
        else {
            return Err(NV_ERR_INVALID_CLASS);
        };
        let kind = make(
            self,
            &mut NewObject {
                rm: &mut rm,
                caller,
                ci,
                h_root,
                h_parent,
                class: h_class,
                params,
                parent_kind,
                parent_gpu,
            },
        )?;
        let obj = Object {
            handle,
            parent: h_parent,
            kind,
        };
        if rm.clients[ci].objects.push(obj, GFP_KERNEL).is_err() {
            self.release_object(&mut rm, h_root, obj);
            return Err(NV_ERR_NO_MEMORY);
        }
        Ok(handle)
    }
}

/// A client (NV01_ROOT, NV01_ROOT_NON_PRIV, NV01_ROOT_CLIENT) for `caller`.
fn alloc_client(rm: &mut Rm, caller: Caller, h_root: u32) -> StatusResult<u32> {
    // RM takes a requested client handle from hRoot; hObjectNew
    // is only written back (`entry_points.c:241` ->
    // `alloc_free.c:576` -> `rs_server.c:612`, `alloc_free.c:591`
    // at 595.45.04; the same at 550.163.01 and 535.261.03,
    // measured against the real driver). A handle in use:
    // NV_ERR_INSERT_DUPLICATE_NAME (`rs_server.c:2508-2512` at
    // 550.163.01).
    let handle = if h_root != 0 {
        if rm.client_index(h_root).is_some() {
            return Err(NV_ERR_INSERT_DUPLICATE_NAME);
        }
        h_root
    } else {
        loop {
            let h = CLIENT_HANDLE_BASE + rm.next_client;
            rm.next_client = rm.next_client.wrapping_add(1) & 0xfffff;
            if rm.client_index(h).is_none() {
                break h;
            }
        }
    };
    rm.clients
        .push(
            Client {
                handle,
                file: caller.owner(),
                proc: current_tgid(),
                pid: match caller {
                    Caller::File(_) => ProcessPid::current().ok(),
                    Caller::Kernel => None,
                },
                objects: KVec::new(),
                next_handle: 0,
            },
            GFP_KERNEL,
        )
        .map_err(|_| NV_ERR_NO_MEMORY)?;
    Ok(handle)
}

/// Copies the alloc params of class `h_class` from `ptr` in `space` into
/// `out`, as RM does at 595.45.04: the size is the class's own, whatever
/// `paramsSize` says (`rmapiGetClassAllocParamSize`, `resource_desc.c:181-214`;
/// `rmapiParamsCopyInit`, `param_copy.c:300-320`); an unknown class is
/// NV_ERR_INVALID_CLASS before anything is read; a required pointer that is
/// NULL is NV_ERR_INVALID_ARGUMENT (`param_copy.c:314-315`); a pointer that
/// cannot be read is NV_ERR_INVALID_ADDRESS (`os_memcpy_from_user`,
/// `os-interface.c:522-529`). A NULL optional pointer gives the class's
/// defaults, all zero here, and `out` stays empty (nothing is copied back).
fn alloc_params(h_class: u32, ptr: u64, space: &Space, out: &mut KVec<u8>) -> StatusResult {
    let size = match table::class(h_class).ok_or(NV_ERR_INVALID_CLASS)?.params {
        Params::None => return Ok(()),
        Params::Required(_) if ptr == 0 => return Err(NV_ERR_INVALID_ARGUMENT),
        Params::Optional(_) if ptr == 0 => return Ok(()),
        Params::Required(n) | Params::Optional(n) => n.bytes(h_class),
    };
    out.resize(size, 0u8, GFP_KERNEL)
        .map_err(|_| NV_ERR_NO_MEMORY)?;
    space.read(ptr, out).map_err(|_| NV_ERR_INVALID_ADDRESS)
}
