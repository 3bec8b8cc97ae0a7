// SPDX-License-Identifier: GPL-2.0

//! ALLOC_OS_EVENT and FREE_OS_EVENT, on either node: RM keys an OS event
//! by `hClient` and a number the caller chooses (`fd`; libcuda passes the
//! file's own fd), never looks the number up as an fd, and checks neither
//! (`nv.c:680-707`, `allocate_os_event` and `free_os_event`,
//! `osapi.c:468-582` at 550.163.01). The event is delivered to the real
//! file the escape went to, which is the caller's file's own.
//!
//! RM's event list is global: with another container's client a tenant
//! could free that container's events, or take the pair it is about to
//! use. So the client must be one of the caller's container, as a client
//! named in an allocation's params must (`alloc.rs`, `names_client`);
//! vgpu forwards its checked copy of the block, which no thread can change
//! after the check.

use kernel::prelude::*;

use super::ctx::Caller;
use crate::clients;
use crate::kapi::user;
use crate::nv::abi::{self, status::NV_ERR_INVALID_OBJECT_HANDLE, Wire};

/// Checks an OS-event escape's client and forwards vgpu's copy of it.
pub(super) fn os_event(on: &Caller<'_>) -> Result<isize> {
    let mut blk = [0u8; abi::OsEvent::SIZE];
    let blk = blk.get_mut(..on.call.size).ok_or(EINVAL)?;
    user::read(on.call.addr, blk)?;
    let mut e = abi::OsEvent::decode(blk);
    if !clients::client_in(on.host, e.h_client, on.vgpus) {
        // `NV_ERR_INVALID_OBJECT_HANDLE`, RM's status for a client it
        // does not have (as `names_client` answers).
        e.status = NV_ERR_INVALID_OBJECT_HANDLE;
        user::write(on.call.addr, &e.to_bytes())?;
        return Ok(0);
    }
    on.call.forward_block(on.real, blk)
}
