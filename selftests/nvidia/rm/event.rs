// SPDX-License-Identifier: GPL-2.0

//! ALLOC_OS_EVENT and FREE_OS_EVENT: a client's events, delivered to the
//! file an fd names.

use kernel::prelude::*;

use super::state::Driver;
use crate::base::{parse, status_of, store, StatusResult};
use crate::file::{self, NvFile};
use crate::kapi::fdtable;
use crate::nv::abi::{self, status::*};

impl Driver {
    /// ALLOC_OS_EVENT.
    pub(crate) fn alloc_os_event(&self, f: &NvFile, p: &mut [u8]) -> Result {
        self.os_event(f, p, true)
    }

    /// FREE_OS_EVENT.
    pub(crate) fn free_os_event(&self, f: &NvFile, p: &mut [u8]) -> Result {
        self.os_event(f, p, false)
    }

    fn os_event(&self, f: &NvFile, p: &mut [u8], alloc: bool) -> Result {
        let mut a: abi::OsEvent = parse(p)?;
        let r: StatusResult = (|| {
            let target = fdtable::fget(a.fd as i32).map_err(|_| NV_ERR_INVALID_ARGUMENT)?;
            let target = file::nv_file(&target).ok_or(NV_ERR_INVALID_ARGUMENT)?;
            let mut rm = self.rm.lock();
            let ci = rm.client_for(a.h_client, Some(f.client_id()))?;
            let gpu = rm.clients[ci]
                .gpu_of(a.h_device)
                .ok_or(NV_ERR_INVALID_OBJECT_HANDLE)?;
            let engine = &self.gpus[gpu as usize].engine;
            if alloc {
                engine
                    .add_event(a.h_client, target.into())
                    .map_err(|_| NV_ERR_NO_MEMORY)
            } else {
                engine.remove_events(Some(a.h_client), Some(&target));
                Ok(())
            }
        })();
        a.status = status_of(r);
        store(&a, p);
        Ok(())
    }
}
