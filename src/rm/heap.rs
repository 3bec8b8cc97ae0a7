// SPDX-License-Identifier: GPL-2.0

//! RM_VID_HEAP_CONTROL: an allocation of VRAM (ALLOC_SIZE, ALLOC_SIZE_RANGE,
//! ALLOC_TILED_PITCH_HEIGHT) becomes the class-0x40 allocation RM would
//! make of it, accounted like any other; one of a virtual range is charged
//! the range's page tables, as NV50_MEMORY_VIRTUAL is; INFO is rewritten to the vGPU; a
//! FREE on a verified client runs on vgpu's copy. Any other function is
//! forwarded from vgpu's copy of the block, so it cannot turn into an
//! allocation on the way.

use kernel::prelude::*;

use super::alloc;
use super::ctx::Ctx;
use crate::kapi::user;
use crate::nv::abi::{self, status::*, Wire};
use crate::status::{self, Fail};

/// RM_VID_HEAP_CONTROL.
pub(super) fn vid_heap(cx: &Ctx<'_>) -> Result<isize> {
    let addr = cx.call.addr;
    let mut blk = [0u8; abi::Nvos32::SIZE];
    user::read(addr, &mut blk)?;
    let mut a = abi::Nvos32::decode(&blk);
    if let Some((h_new, abi::class::NV01_MEMORY_LOCAL_USER, mp)) = a.heap_memory_params() {
        let mut params = mp.to_bytes();
        a.status = match alloc::heap_memory(cx, a.h_root, a.h_object_parent, h_new, &mut params) {
            Ok(h) => {
                a.set_heap_result(h, abi::MemoryAllocationParams::decode(&params).size);
                NV_OK
            }
            Err(Fail::Rm(st)) => st,
            Err(Fail::Os(e)) => return Err(e),
        };
        user::write(addr, &a.to_bytes())?;
        return Ok(0);
    }
    if let Some((_, abi::class::NV50_MEMORY_VIRTUAL, mp)) = a.heap_memory_params() {
        return super::internal::heap_virtual(cx, &mut blk, a.h_root, a.h_object_parent, mp.size);
    }
    if a.function == abi::heap::FUNCTION_FREE && cx.file.has_client(a.h_root) {
        // On a verified client the free runs on the kernel copy, so the
        // refund matches what went.
        let h = a.free_args().h_memory;
        let _order = cx.file.order.lock();
        let r = super::free::free_verified(cx, a.h_root, a.h_object_parent, h);
        a.status = status::status(r)?;
        user::write(addr, &a.to_bytes())?;
        return Ok(0);
    }
    if a.function != abi::heap::FUNCTION_INFO {
        return cx.call.forward_block(cx.real, &mut blk);
    }
    let gpu = cx
        .file
        .objects
        .lock()
        .obj(a.h_root, a.h_object_parent)
        .map(|o| o.gpu);
    let r = cx.call.forward_block(cx.real, &mut blk)?;
    let Some(v) = gpu.and_then(|g| cx.file.vgpu_on(g).cloned()) else {
        return Ok(r);
    };
    let mut a = abi::Nvos32::decode(&blk);
    if a.status == NV_OK {
        let ledger = v.config.lock().memory;
        let view = crate::ledger::View::of(&ledger, a.total, a.free);
        a.total = view.total;
        a.free = view.free;
        user::write(addr, &a.to_bytes())?;
    }
    Ok(r)
}
