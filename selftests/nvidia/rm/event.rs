// SPDX-License-Identifier: GPL-2.0

//! ALLOC_OS_EVENT and FREE_OS_EVENT: a client's OS events, keyed by the
//! client and a number the caller chooses, delivered to the file the
//! escape came on.

use kernel::{prelude::*, sync::ArcBorrow};

use super::call::NewObject;
use super::state::{Driver, OsEvent};
use crate::base::{parse, status_of, store, ObjKind, StatusResult};
use crate::file::NvFile;
use crate::nv::abi::{self, status::*};

impl Driver {
    /// ALLOC_OS_EVENT: RM checks neither the client nor `fd` (the number
    /// is a key, never looked up in a table) and keeps one event per pair
    /// (`allocate_os_event`, `osapi.c:468-535` at 550.163.01: a second is
    /// NV_ERR_INSUFFICIENT_RESOURCES from `RmAllocOsEvent`, `osapi.c:523-535`).
    /// `hDevice` is not read. The double then delivers completions of the
    /// client's channels, on every GPU, to the calling file (its model of
    /// the NV01_EVENT_OS_EVENT notifiers RM binds to the pair).
    pub(crate) fn alloc_os_event(&self, f: &ArcBorrow<'_, NvFile>, p: &mut [u8]) -> Result {
        let mut a: abi::OsEvent = parse(p)?;
        let r: StatusResult = (|| {
            let mut rm = self.rm.lock();
            if rm
                .os_events
                .iter()
                .any(|e| e.client == a.h_client && e.fd == a.fd)
            {
                return Err(NV_ERR_INSUFFICIENT_RESOURCES);
            }
            let e = OsEvent {
                client: a.h_client,
                fd: a.fd,
                file: f.id,
            };
            rm.os_events
                .push(e, GFP_KERNEL)
                .map_err(|_| NV_ERR_INSUFFICIENT_RESOURCES)?;
            for (i, g) in self.gpus.iter().enumerate() {
                if g.engine.add_event(a.h_client, a.fd, (*f).into()).is_err() {
                    for g in self.gpus.iter().take(i) {
                        g.engine.remove_events(Some(a.h_client), Some(a.fd), None);
                    }
                    rm.os_events.pop();
                    return Err(NV_ERR_INSUFFICIENT_RESOURCES);
                }
            }
            Ok(())
        })();
        a.status = status_of(r);
        store(&a, p);
        Ok(())
    }

    /// FREE_OS_EVENT: the pair's event, whoever made it; none is
    /// NV_ERR_INVALID_EVENT (`free_os_event`, `osapi.c:537-582`).
    pub(crate) fn free_os_event(&self, _f: &ArcBorrow<'_, NvFile>, p: &mut [u8]) -> Result {
        let mut a: abi::OsEvent = parse(p)?;
        let r: StatusResult = (|| {
            let mut rm = self.rm.lock();
            let i = rm
                .os_events
                .iter()
                .position(|e| e.client == a.h_client && e.fd == a.fd)
                .ok_or(NV_ERR_INVALID_EVENT)?;
            rm.os_events.remove(i).map_err(|_| NV_ERR_INVALID_EVENT)?;
            for g in self.gpus.iter() {
                g.engine.remove_events(Some(a.h_client), Some(a.fd), None);
            }
            Ok(())
        })();
        a.status = status_of(r);
        store(&a, p);
        Ok(())
    }

    /// Whether client `client` has the OS event `fd` (what an
    /// NV01_EVENT_OS_EVENT's `data` must name).
    pub(crate) fn has_os_event(rm: &super::state::Rm, client: u32, fd: u32) -> bool {
        rm.os_events
            .iter()
            .any(|e| e.client == client && e.fd == fd)
    }
}

impl Driver {
    /// NV01_EVENT_OS_EVENT: NV0005_ALLOC_PARAMETERS (`hParentClient`,
    /// `hSrcResource`, `hClass`, `notifyIndex`, `data`), under any parent
    /// (`RS_ANY_PARENT`, `resource_list.h:1531-1539` at 550.163.01).
    /// `hParentClient` 0 is the caller's client (`event.c:64-71`); RM
    /// takes the notifier `hSrcResource` from the allocation's parent,
    /// whatever the params say (`rmapiFixupAllocParams`,
    /// `rmapi_specific.c:58-71`), which must be an object of that
    /// client, else NV_ERR_INVALID_OBJECT (`eventInit`,
    /// `event.c:368-389`; a client RM does not have is its lookup's
    /// status); `data` must name an OS
    /// event of the calling client (`event.c:173-181`,
    /// `osUserHandleToKernelPtr`, `os.c:1440-1466`: else
    /// NV_ERR_OBJECT_NOT_FOUND). GUESS: every object the double models is
    /// a notifier (RM: those that are an `INotifier`). The double
    /// delivers through ALLOC_OS_EVENT's pair (`alloc_os_event`), so the
    /// object itself holds nothing.
    pub(crate) fn new_os_event(&self, n: &mut NewObject<'_>) -> StatusResult<ObjKind> {
        let word = |i: usize| -> u32 { abi::read_field(n.params, i) };
        let notifier_client = match word(0) {
            0 => n.h_root,
            h => h,
        };
        let src = n.h_parent;
        let client =
            n.rm.any_client(notifier_client)
                .ok_or(NV_ERR_INVALID_CLIENT)?;
        if !client.has(src) {
            return Err(NV_ERR_INVALID_OBJECT);
        }
        if !Self::has_os_event(n.rm, n.h_root, word(16)) {
            return Err(NV_ERR_OBJECT_NOT_FOUND);
        }
        Ok(ObjKind::Other)
    }
}
