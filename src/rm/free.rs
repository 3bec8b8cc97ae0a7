// SPDX-License-Identifier: GPL-2.0

//! RM_FREE: on a verified client, executed by vgpu on its kernel copy, so
//! the object freed is the one vgpu refunds (with its descendants); other
//! clients' frees are forwarded from vgpu's copy.

use kernel::prelude::*;

use super::ctx::Ctx;
use crate::clients;
use crate::kapi::user;
use crate::nv::abi::{self, Wire};
use crate::status::{self, RmResult};

/// RM_FREE.
pub(super) fn free(cx: &Ctx<'_>) -> Result<isize> {
    let addr = cx.call.addr;
    let mut blk = [0u8; abi::Nvos00::SIZE];
    user::read(addr, &mut blk)?;
    let mut a = abi::Nvos00::decode(&blk);
    // Not between another thread's allocation and its record (a client's
    // too: this free may name one being made).
    let _order = cx.file.order.lock();
    if !cx.file.has_client(a.h_root) {
        // Forwarded as vgpu read it: it cannot become a free on a verified
        // client behind vgpu's back.
        return cx.call.forward_block(cx.real, &mut blk);
    }
    let r = free_verified(cx, a.h_root, a.h_object_parent, a.h_object_old);
    a.status = status::status(r)?;
    user::write(addr, &a.to_bytes())?;
    Ok(0)
}

/// Frees `handle` of client `h_root`, one of the file's verified clients,
/// from the kernel (RM_FREE, or RM_VID_HEAP_CONTROL's FREE), with the
/// file's `order` held: what the driver freed is forgotten and refunded,
/// and a freed client leaves the index of verified clients (whichever
/// escape freed it: a stale entry would keep the file for good).
pub(super) fn free_verified(cx: &Ctx<'_>, h_root: u32, h_parent: u32, handle: u32) -> RmResult<()> {
    let r = cx.host.rm.free(h_root, h_parent, handle);
    if r.is_ok() {
        cx.file.objects.lock().freed(h_root, handle);
        cx.file.drop_reservations(h_root);
        if handle == h_root {
            clients::forget(cx.host, h_root);
        }
    }
    r
}
