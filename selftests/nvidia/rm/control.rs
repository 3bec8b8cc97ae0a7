// SPDX-License-Identifier: GPL-2.0

//! RM_CONTROL (and a kernel client's NV04_CONTROL): the params copied in
//! and out, the client and object looked up, and the control served by its
//! row's handler (`table.rs`, `CONTROLS`).

use kernel::{prelude::*, sync::ArcBorrow};

use super::call::Ctl;
use super::state::Driver;
use super::table;
use crate::base::{parse, status_of, store, Space, StatusResult};
use crate::file::NvFile;
use crate::nv::abi::{self, status::*};

impl Driver {
    /// RM_CONTROL on a file.
    pub(crate) fn ioctl_control(&self, f: &ArcBorrow<'_, NvFile>, p: &mut [u8]) -> Result {
        let mut a: abi::Nvos54 = parse(p)?;
        a.status = status_of(self.control(&a, Some(f.client_id()), &Space::User));
        store(&a, p);
        Ok(())
    }

    /// RM_CONTROL (also the kernel clients' NV04_CONTROL).
    pub(crate) fn control(
        &self,
        a: &abi::Nvos54,
        file: Option<u64>,
        space: &Space,
    ) -> StatusResult {
        crate::calls::count(crate::calls::Kind::Control, a.cmd, a.h_client);
        let size = a.params_size as usize;
        // A size without a pointer, or a pointer without a size, is
        // NV_ERR_INVALID_ARGUMENT (`control.c:448-456` at 595.45.04); a
        // pointer that cannot be copied is NV_ERR_INVALID_ADDRESS
        // (`control.c:261`, `param_copy.c:115`, `os-interface.c:522-529`).
        if size > abi::CONTROL_PARAMS_MAX || ((size > 0) != (a.params != 0)) {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        let mut params = KVec::new();
        params
            .resize(size, 0u8, GFP_KERNEL)
            .map_err(|_| NV_ERR_NO_MEMORY)?;
        space
            .read(a.params, &mut params)
            .map_err(|_| NV_ERR_INVALID_ADDRESS)?;
        self.control_inner(a.h_client, a.h_object, a.cmd, &mut params, file, space)?;
        space
            .write(a.params, &params)
            .map_err(|_| NV_ERR_INVALID_ADDRESS)?;
        Ok(())
    }

    fn control_inner(
        &self,
        h_client: u32,
        h_object: u32,
        cmd: u32,
        p: &mut [u8],
        file: Option<u64>,
        space: &Space,
    ) -> StatusResult {
        let mut rm = self.rm.lock();
        let ci = rm.client_for(h_client, file)?;
        let kind = if h_object == h_client {
            None
        } else {
            Some(
                rm.clients[ci]
                    .find(h_object)
                    .ok_or(NV_ERR_INVALID_OBJECT_HANDLE)?
                    .kind,
            )
        };
        let row = table::control(cmd, kind).ok_or(NV_ERR_NOT_SUPPORTED)?;
        (row.serve)(
            self,
            Ctl {
                rm,
                cmd,
                kind,
                ci,
                h_object,
                p,
                file,
                space,
            },
        )
    }
}
