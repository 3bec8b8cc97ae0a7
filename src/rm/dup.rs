// SPDX-License-Identifier: GPL-2.0

//! RM_DUP_OBJECT, within a container only.

use kernel::{prelude::*, sync::Arc};

use super::ctx::Ctx;
use crate::clients;
use crate::kapi::user;
use crate::nv::abi::{self, status::*, Wire};
use crate::objects::{Charge, Held, Kind, Obj, Objects};

/// DUP: into one of this file's verified clients, from one of them or
/// from a client another `/dev/vgpuctl` file of the same container
/// verified, as long as the memory's vGPU is the caller's too. Refused
/// here: DUPs from any other client (another container's, or one vgpu
/// never verified) and of TSGs and channels (a second handle would
/// outlive the one the schedule knows). What passes is forwarded from
/// vgpu's kernel copy of the block, so the driver applies its own rules
/// to the caller, as to any user client: its share policy lets a user
/// client dup only objects of clients its own process created, unless
/// their owner shared them (`rs_client.c:535-547`, `sharing.c:347-353`
/// at 595.45.04). vgpu never runs a tenant's DUP at kernel privilege,
/// which would skip that check. A copy of charged memory shares the
/// original's charge, so the memory is charged once and refunded when
/// its last handle goes.
pub(super) fn dup(cx: &Ctx<'_>) -> Result<isize> {
    let file = cx.file;
    let addr = cx.call.addr;
    let mut blk = [0u8; abi::Nvos55::SIZE];
    user::read(addr, &mut blk)?;
    let a = abi::Nvos55::decode(&blk);
    let refuse = |mut a: abi::Nvos55| -> Result<isize> {
        a.status = NV_ERR_INSUFFICIENT_PERMISSIONS;
        user::write(addr, &a.to_bytes())?;
        Ok(0)
    };
    if !file.objects.lock().has_client(a.h_client) {
        return refuse(a);
    }
    type Src = Option<(u32, Kind, Option<Arc<Charge>>, bool)>;
    // The source's charge is shared from here on (the copy will hold it).
    let look = |t: &mut Objects| -> Result<Src> {
        let Some(o) = t.obj_mut(a.h_client_src, a.h_object_src) else {
            return Ok(None);
        };
        let charge = crate::objects::share(&mut o.charge)?;
        Ok(Some((o.gpu, o.kind, charge, o.sched.is_some())))
    };
    let src = if file.objects.lock().has_client(a.h_client_src) {
        look(&mut file.objects.lock())?
    } else {
        let Some(other) = clients::owner_of(cx.host, a.h_client_src) else {
            return refuse(a);
        };
        // The same container: the two files share their vGPUs.
        if !file.shares_vgpus(&other.vgpus) {
            return refuse(a);
        }
        let src = look(&mut other.objects.lock())?;
        if let Some((gpu, ..)) = src {
            // The memory's vGPU must be this file's on that GPU too.
            let theirs = other.vgpu_on(gpu);
            let mine = file.vgpu_on(gpu);
            if !matches!((theirs, mine), (Some(t), Some(m)) if Arc::ptr_eq(t, m)) {
                return refuse(a);
            }
        }
        src
    };
    if src.as_ref().is_some_and(|s| s.3) {
        return refuse(a);
    }
    // A copy vgpu records is refunded when the walk of a freed ancestor
    // reaches it (`Objects::freed`), which goes through recorded objects
    // only: under an object vgpu does not record (a forwarded class: system
    // memory, a context share, an engine object, an event) the driver would
    // free the copy with that object's ancestors and the copy's charge would
    // stay. RM's parents for memory are a device or a subdevice
    // (`resource_list.h:433` at 550.163.01), which vgpu records; any other
    // parent is refused with RM's status for a wrong parent.
    if src.is_some()
        && a.h_parent != a.h_client
        && file.objects.lock().obj(a.h_client, a.h_parent).is_none()
    {
        let mut a = a;
        a.status = NV_ERR_INVALID_OBJECT_PARENT;
        user::write(addr, &a.to_bytes())?;
        return Ok(0);
    }
    // The driver acts on `blk`, vgpu's copy, and answers in it; the answer
    // goes back once the copy is recorded (a block that cannot be written
    // must not leave a copy the driver holds unrecorded, its charge not
    // shared).
    // Until the copy is recorded (see `CtlFile::order`).
    let order = file.order.lock();
    let r = cx.call.run_block(cx.real, &mut blk)?;
    let out = abi::Nvos55::decode(&blk);
    if out.status == NV_OK {
        if let Some((gpu, kind, charge, _)) = src {
            let obj = Obj {
                handle: out.h_object,
                parent: a.h_parent,
                gpu,
                kind,
                charge: charge.map(Held::Shared),
                sched: None,
                watch: None,
                // A copy of a device counts for nothing in the views
                // (only devices and channels vgpu allocated do).
                user: None,
                gr: None,
            };
            // The copy goes again if vgpu cannot record it.
            let copy = cx.host.rm.guard(a.h_client, a.h_parent, out.h_object);
            file.objects.lock().add_obj(a.h_client, obj)?;
            copy.keep();
        }
    }
    drop(order);
    user::write(addr, &blk)?;
    Ok(r)
}
