// SPDX-License-Identifier: GPL-2.0

//! RM_FREE: on a verified client, executed by vgpu on its kernel copy, so
//! the object freed is the one vgpu refunds (with its descendants); other
//! clients' frees are forwarded from vgpu's copy.

use kernel::prelude::*;

use super::ctx::Ctx;
use crate::clients;
use crate::kapi::user;
use crate::nv::abi::{self, Wire};
use crate::status;

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
    let r = cx.host.rm.free(a.h_root, a.h_object_parent, a.h_object_old);
    if r.is_ok() {
        cx.file.objects.lock().freed(a.h_root, a.h_object_old);
        cx.file.drop_reservations(a.h_root);
        if a.h_object_old == a.h_root {
            clients::forget(cx.host, a.h_root);
        }
    }
    a.status = status::status(r)?;
    user::write(addr, &a.to_bytes())?;
    Ok(0)
}
