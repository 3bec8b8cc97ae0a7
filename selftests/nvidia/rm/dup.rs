// SPDX-License-Identifier: GPL-2.0

//! RM_DUP_OBJECT (and a kernel client's NV04_DUP_OBJECT): a second handle
//! on memory.

use kernel::{prelude::*, sync::ArcBorrow};

use super::state::{Caller, Driver, Object};
use crate::base::{parse, store, ObjKind, StatusResult};
use crate::file::NvFile;
use crate::nv::abi::{self, status::*};

impl Driver {
    /// RM_DUP_OBJECT on a file.
    pub(crate) fn dup(&self, f: &ArcBorrow<'_, NvFile>, p: &mut [u8]) -> Result {
        let mut a: abi::Nvos55 = parse(p)?;
        let r = self.dup_as(Caller::File(f.client_id()), &a);
        match r {
            Ok(h) => {
                a.h_object = h;
                a.status = NV_OK;
            }
            Err(s) => a.status = s,
        }
        store(&a, p);
        Ok(())
    }

    /// A kernel client's NV04_DUP_OBJECT.
    pub(crate) fn kernel_dup(&self, a: &abi::Nvos55) -> StatusResult<u32> {
        self.dup_as(Caller::Kernel, a)
    }

    /// RM_DUP_OBJECT of memory: a new handle in `a.h_client` for the memory
    /// of `(a.h_client_src, a.h_object_src)`, charged once.
    fn dup_as(&self, caller: Caller, a: &abi::Nvos55) -> StatusResult<u32> {
        {
            let mut rm = self.rm.lock();
            let di = rm.client_for(a.h_client, caller.binding())?;
            // The source client may be bound to any file: RM validates only
            // the destination client against the caller (`serverCopyResource`,
            // `rs_server.c:1695-1697` at 595.45.04).
            let si = rm
                .client_index(a.h_client_src)
                .ok_or(NV_ERR_INVALID_CLIENT)?;
            let src = *rm.clients[si]
                .find(a.h_object_src)
                .ok_or(NV_ERR_OBJECT_NOT_FOUND)?;
            let ObjKind::Memory { mem } = src.kind else {
                return Err(NV_ERR_NOT_SUPPORTED);
            };
            if !rm.clients[di].has(a.h_parent) {
                return Err(NV_ERR_INVALID_OBJECT_PARENT);
            }
            // A kernel client may dup anything; a user client needs
            // RS_ACCESS_DUP_OBJECT on the source (`rs_client.c:535-547`),
            // which RM's default share policy grants only to clients of
            // the process that created the source client (RS_SHARE_TYPE_PID,
            // `sharing.c:347-353`; `ProcID` compared, `client_resource.c:217-230`).
            // The double models no RM_SHARE, so that is the only grant.
            if caller.checks_fds() && rm.clients[si].proc != rm.clients[di].proc {
                return Err(NV_ERR_INSUFFICIENT_PERMISSIONS);
            }
            let h = if a.h_object == 0 {
                rm.clients[di].gen_handle()
            } else if rm.clients[di].has(a.h_object) {
                return Err(NV_ERR_INVALID_OBJECT_NEW);
            } else {
                a.h_object
            };
            rm.clients[di]
                .objects
                .push(
                    Object {
                        handle: h,
                        parent: a.h_parent,
                        kind: ObjKind::Memory { mem },
                    },
                    GFP_KERNEL,
                )
                .map_err(|_| NV_ERR_NO_MEMORY)?;
            if let Some(m) = rm.mem(mem) {
                m.refs += 1;
            }
            Ok(h)
        }
    }
}
