// SPDX-License-Identifier: GPL-2.0

//! The VRAM RM commits for objects of its own (issue 39): a VA space's page
//! levels, a GPU VA range's page tables, a TSG's GR context buffers. Each
//! is charged to the caller's vGPU before the driver sees the call, held on
//! the object's record and refunded when the driver frees it; a channel's
//! instance block is charged with the channel (`super::alloc`).

use kernel::prelude::*;

use super::block::{answer, status_at, Header};
use super::ctx::Ctx;
use crate::kapi::{rmops::RmOps, user};
use crate::nv::abi::{self, ctrl, status::*, Wire};
use crate::objects::{Held, Kind, Obj, Reservation};
use crate::status::RmResult;

/// A compute-engine object (a [`ClassHandler::GrObject`] row) under one of
/// the caller's channels. The first of a TSG makes RM allocate the TSG's GR
/// context buffers (`kgrobjConstruct` -> `kgrctxAllocCtxBuffers`,
/// `kernel_graphics_object.c:215`, `kernel_graphics_context.c:1346-1420`
/// at 550.163.01), which RM keeps until the TSG's channels go, whatever
/// becomes of the object (`kernel_graphics_context.c:3040-3052`). vgpu
/// reserves the GPU's bound for them ([`Host::gr_context_bound`]) before
/// the driver sees the call (past the ceiling: `NV_ERR_NO_MEMORY`), settles
/// the reservation to the size RM then reports for them
/// (NV2080_CTRL_CMD_GR_GET_CTX_BUFFER_SIZE on a subdevice of the caller's
/// client on that GPU, one of its own or one vgpu makes for the question;
/// the bound where neither answers) and holds the
/// charge on the TSG's record (a bare channel's own: its TSG is its own),
/// refunded when it goes. Later compute objects of the TSG are forwarded
/// as written. The file's `gr` lock is held throughout, so that of two
/// threads making a TSG's first compute objects, one charges and the other
/// sees it charged. A parent that is not one of the caller's channels is
/// RM's to refuse: forwarded as written.
///
/// Where the driver would not tell the bound (0), the charge is taken once
/// the buffers exist; should it not fit then, vgpu frees the object and
/// answers `NV_ERR_NO_MEMORY`, and the buffers RM keeps stay charged, so
/// that the ceiling still counts them: the vGPU is then over its ceiling
/// by at most one context until the TSG goes.
///
/// [`Host::gr_context_bound`]: crate::host::Host::gr_context_bound
pub(super) fn gr_object(cx: &Ctx<'_>, blk: &mut [u8], h: &Header, want: usize) -> Result<isize> {
    const H_NEW: usize = abi::field_offset(abi::Nvos21::FIELDS, "h_object_new");
    const _: () = assert!(H_NEW == abi::field_offset(abi::Nvos64::FIELDS, "h_object_new"));
    let file = cx.file;
    let _serial = file.gr.lock();
    // The record that holds the context's charge (the channel's TSG, or
    // the channel itself).
    let found = {
        let mut objects = file.objects.lock();
        let channel = match objects.obj(h.h_root, h.h_parent) {
            Some(o) if o.kind == Kind::Channel => Some((o.gpu, o.parent)),
            _ => None,
        };
        match channel {
            None => None,
            Some((gpu, parent)) => {
                let holder = match objects.obj(h.h_root, parent) {
                    Some(t) if t.kind == Kind::Tsg => parent,
                    _ => h.h_parent,
                };
                let charged = objects.obj(h.h_root, holder).is_none_or(|o| o.gr.is_some());
                if charged {
                    None
                } else {
                    let v = file.vgpu_on(gpu).ok_or(EACCES)?.clone();
                    let owner = objects.user_on(h.h_root, &v).ok();
                    Some((gpu, holder, v, owner))
                }
            }
        }
    };
    let Some((gpu, holder, v, owner)) = found else {
        return cx.call.forward_block(cx.real, blk);
    };
    let Some(mut params) = Params::read(h, want)? else {
        return answer(cx.call.addr, blk, h.h_new, NV_ERR_INVALID_ADDRESS);
    };
    let bound = cx.host.gr_context_bound(gpu);
    let Some(mut reserved) = Reservation::new(&v, bound) else {
        return answer(cx.call.addr, blk, h.h_new, NV_ERR_NO_MEMORY);
    };
    // A failure to run drops the reservation. The answer goes back once the
    // charge is held: a block or params that cannot be written must not
    // lose it.
    let r = params.run(cx, blk)?;
    let read = |at: usize| -> Result<u32> {
        let b = blk.get(at..at + 4).ok_or(EINVAL)?;
        Ok(u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
    };
    if r != 0 || read(status_at(blk))? != NV_OK {
        user::write(cx.call.addr, blk)?;
        return Ok(r);
    }
    let handle = read(H_NEW)?;
    let actual = {
        // No free of the file's objects in between: the subdevice asked on
        // stays, and a subdevice of the caller's is not refused for the
        // one vgpu makes.
        let _order = file.order.lock();
        let (sub, device) = {
            let objects = file.objects.lock();
            (
                objects.subdevice_on(h.h_root, gpu),
                objects.kind_on(h.h_root, gpu, Kind::Device),
            )
        };
        reported_size(&cx.host.rm, h.h_root, sub, device, h.h_parent)
    }
    .unwrap_or(bound);
    let fits = reserved.settle(actual);
    if !fits {
        // Only where the bound was unknown or short: charge what RM keeps
        // anyway, and refuse the object.
        let _ = cx.host.rm.free(h.h_root, h.h_parent, handle);
        reserved = Reservation::forced(&v, actual);
    }
    if let Some(o) = file.objects.lock().obj_mut(h.h_root, holder) {
        o.gr = Some(reserved.into_charge(owner));
    }
    if !fits {
        return answer(cx.call.addr, blk, handle, NV_ERR_NO_MEMORY);
    }
    params.deliver(cx, blk, h)?;
    Ok(r)
}

/// The alloc params of a class whose object vgpu records, in vgpu's copy:
/// the driver reads and answers them in the bounce slot, and vgpu copies
/// the answer back once the object is recorded. RM keeps an object whose
/// params it cannot copy back and answers the copy's failure
/// (`serverAllocApiCopyOut`, `rs_server.c:772`; `alloc_free.c:195-213`;
/// `param_copy.c:167-178` at 550.163.01): had the driver written to the
/// caller's params, such an object would be made, and its status would say
/// it was not, so vgpu would not charge it.
struct Params {
    /// The class's params (empty: the caller gave none).
    bytes: KVec<u8>,
}

impl Params {
    /// The caller's `want` bytes of params; `None` where they cannot be
    /// read, which RM answers `NV_ERR_INVALID_ADDRESS`
    /// (`os-interface.c:522-529`).
    fn read(h: &Header, want: usize) -> Result<Option<Self>> {
        let mut bytes = KVec::new();
        if h.pparams != 0 && want > 0 {
            bytes = KVec::from_elem(0u8, want, GFP_KERNEL)?;
            if user::read(h.pparams, &mut bytes).is_err() {
                return Ok(None);
            }
        }
        Ok(Some(Self { bytes }))
    }

    /// Runs the block with these params, the answer left in `blk` and
    /// `self`.
    fn run(&mut self, cx: &Ctx<'_>, blk: &mut [u8]) -> Result<isize> {
        const PPARAMS: usize = abi::field_offset(abi::Nvos21::FIELDS, "p_alloc_parms");
        const _: () = assert!(PPARAMS == abi::field_offset(abi::Nvos64::FIELDS, "p_alloc_parms"));
        if self.bytes.is_empty() {
            return cx.call.run_block(cx.real, blk);
        }
        cx.call
            .run_block_params(cx.real, blk, PPARAMS, &mut self.bytes)
    }

    /// Writes the answer back: the params, then the block, whose status
    /// becomes RM's `NV_ERR_INVALID_ADDRESS` where the params cannot be
    /// written (the object stays, as RM keeps it).
    fn deliver(&self, cx: &Ctx<'_>, blk: &mut [u8], h: &Header) -> Result {
        if !self.bytes.is_empty() && user::write(h.pparams, &self.bytes).is_err() {
            let at = status_at(blk);
            let ok = blk.get(at..at + 4) == Some(&NV_OK.to_ne_bytes()[..]);
            if ok {
                if let Some(st) = blk.get_mut(at..at + 4) {
                    st.copy_from_slice(&NV_ERR_INVALID_ADDRESS.to_ne_bytes());
                }
            }
        }
        user::write(cx.call.addr, blk)
    }
}

/// A [`ClassHandler::Charged`] row's class (FERMI_VASPACE_A): charged
/// `bytes` as [`charged`] does, its `want` bytes of params given to the
/// driver from vgpu's copy (see [`Params`]).
pub(super) fn charged_class(
    cx: &Ctx<'_>,
    blk: &mut [u8],
    h: &Header,
    bytes: u64,
    want: usize,
) -> Result<isize> {
    let Some(mut params) = Params::read(h, want)? else {
        return answer(cx.call.addr, blk, h.h_new, NV_ERR_INVALID_ADDRESS);
    };
    let given = (!params.bytes.is_empty()).then_some(&mut params.bytes[..]);
    let r = charged(cx, blk, h, bytes, Kind::VaSpace, given)?;
    params.deliver(cx, blk, h)?;
    Ok(r)
}

/// The size RM reports for the GR context buffers of channel `channel` of
/// client `client`, on a subdevice of that client (RM looks the channel up
/// in the subdevice's client, `kernel_graphics.c:3731,3776` at 550.163.01):
/// its own `sub`, else one vgpu makes for the question under the client's
/// device `device` on the GPU and frees again. A client need not keep a
/// subdevice for its channels, and the bound charged instead was 598,016
/// bytes over what the double holds on the fuzz's GPU (`make fuzz`, seed
/// 45761016684, round 35). `None` where neither answers: the caller
/// charges the bound.
fn reported_size(
    rm: &RmOps,
    client: u32,
    sub: Option<u32>,
    device: Option<u32>,
    channel: u32,
) -> Option<u64> {
    if let Some(sub) = sub {
        if let Ok(n) = gr_context_size(rm, client, sub, channel) {
            return Some(n);
        }
    }
    let mut sp = abi::SubdeviceAllocParams::default().to_bytes();
    // Freed again when this returns.
    let asked = rm
        .alloc_object(client, device?, 0, abi::class::NV20_SUBDEVICE_0, &mut sp)
        .ok()?;
    gr_context_size(rm, client, asked.handle(), channel).ok()
}

/// The size of the GR context buffers of channel `channel` of client
/// `client`, as RM reports them on its subdevice `sub`
/// (`subdeviceCtrlCmdKGrGetCtxBufferSize`, `kernel_graphics.c:3722` at
/// 550.163.01).
fn gr_context_size(rm: &RmOps, client: u32, sub: u32, channel: u32) -> RmResult<u64> {
    let mut p = abi::GrGetCtxBufferSizeParams {
        h_channel: channel,
        ..Default::default()
    }
    .to_bytes();
    rm.control(
        client,
        sub,
        ctrl::NV2080_CTRL_CMD_GR_GET_CTX_BUFFER_SIZE,
        &mut p,
    )?;
    Ok(abi::GrGetCtxBufferSizeParams::decode(&p).total_buffer_size)
}

/// NV50_MEMORY_VIRTUAL, a GPU VA range of the caller's: charged
/// [`abi::virtual_range_charge`] of the size in vgpu's copy of its `want`
/// bytes of params, which the driver then reads (a thread of the caller's
/// cannot grow the range after the charge), as [`charged`] does.
pub(super) fn virtual_memory(
    cx: &Ctx<'_>,
    blk: &mut [u8],
    h: &Header,
    want: usize,
) -> Result<isize> {
    let mut buf = [0u8; abi::MemoryAllocationParams::SIZE];
    let p = buf.get_mut(..want).ok_or(EINVAL)?;
    if h.pparams == 0 {
        // A required pointer that is NULL (`param_copy.c:314-315`).
        return answer(cx.call.addr, blk, h.h_new, NV_ERR_INVALID_ARGUMENT);
    }
    if user::read(h.pparams, p).is_err() {
        // `os_memcpy_from_user` (`os-interface.c:522-529`).
        return answer(cx.call.addr, blk, h.h_new, NV_ERR_INVALID_ADDRESS);
    }
    const SIZE: usize = abi::field_offset(abi::MemoryAllocationParams::FIELDS, "size");
    let bytes = abi::virtual_range_charge(abi::read_field(p, SIZE));
    let r = charged(cx, blk, h, bytes, Kind::VirtualMemory, Some(&mut *p))?;
    // In/out params (the range's offset and limit) back to the caller.
    user::write(h.pparams, p)?;
    Ok(r)
}

/// A class whose object commits `bytes` of RM-internal VRAM, recorded as
/// `kind`: forwarded as the caller wrote it (a [`ClassHandler::Charged`]
/// row, FERMI_VASPACE_A) or, with `params`, from vgpu's copy of its params
/// (NV50_MEMORY_VIRTUAL). The bytes are reserved on the vGPU of its
/// parent, one of the file's devices, before the driver sees the call;
/// past the ceiling the call is refused with `NV_ERR_NO_MEMORY`, RM's
/// status when its page-level pool cannot grow (`rmMemPoolReserve`). The
/// reservation becomes the object's charge when the driver made it,
/// refunded when the driver frees the object (its own free, its parent's
/// or its client's). A parent that is not a device or subdevice vgpu
/// recorded (every one of a verified client is) is RM's to refuse: the call
/// goes on uncharged (RM admits FERMI_VASPACE_A under either and
/// NV50_MEMORY_VIRTUAL under a device, `resource_list.h:463,623` at
/// 550.163.01, and answers another parent `NV_ERR_INVALID_OBJECT_PARENT`,
/// `alloc_free.c:844-855`). As for a DUP, should vgpu fail to record the
/// object, it frees it.
pub(super) fn charged(
    cx: &Ctx<'_>,
    blk: &mut [u8],
    h: &Header,
    bytes: u64,
    kind: Kind,
    params: Option<&mut [u8]>,
) -> Result<isize> {
    const H_NEW: usize = abi::field_offset(abi::Nvos21::FIELDS, "h_object_new");
    const _: () = assert!(H_NEW == abi::field_offset(abi::Nvos64::FIELDS, "h_object_new"));
    const PPARAMS: usize = abi::field_offset(abi::Nvos21::FIELDS, "p_alloc_parms");
    const _: () = assert!(PPARAMS == abi::field_offset(abi::Nvos64::FIELDS, "p_alloc_parms"));
    let (addr, h_new) = (cx.call.addr, h.h_new);
    let mut params = params;
    charged_by(cx, h.h_root, h.h_parent, bytes, kind, |step| match step {
        Step::Refuse(st) => Ok((answer(addr, blk, h_new, st)?, None)),
        Step::Run => {
            let r = match params.as_deref_mut() {
                Some(p) => cx.call.run_block_params(cx.real, blk, PPARAMS, p)?,
                None => cx.call.run_block(cx.real, blk)?,
            };
            let read = |at: usize| -> Result<u32> {
                let b = blk.get(at..at + 4).ok_or(EINVAL)?;
                Ok(u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
            };
            let made = (r == 0 && read(status_at(blk))? == NV_OK).then_some(read(H_NEW)?);
            Ok((r, made))
        }
        Step::Deliver => {
            user::write(addr, blk)?;
            Ok((0, None))
        }
    })
}

/// What [`charged_by`] asks of the call it charges.
enum Step {
    /// Answer the caller this status; the driver sees nothing.
    Refuse(u32),
    /// Run the call in the driver, the answer kept in vgpu's copy; give the
    /// handle the driver made, if it made one.
    Run,
    /// Write the driver's answer back to the caller.
    Deliver,
}

/// The core of [`charged`], for a call that allocates object kind `kind`
/// under `h_parent` of client `h_root` and commits `bytes` of RM-internal
/// VRAM, whichever escape carries it (RM_ALLOC, or VID_HEAP's
/// ALLOC_SIZE of a virtual range): `call` refuses it, or runs it and
/// delivers the answer. The object is recorded before the answer goes back,
/// so that a caller's block that cannot be written (the driver made the
/// object all the same) leaves it charged, not forgotten.
fn charged_by(
    cx: &Ctx<'_>,
    h_root: u32,
    h_parent: u32,
    bytes: u64,
    kind: Kind,
    mut call: impl FnMut(Step) -> Result<(isize, Option<u32>)>,
) -> Result<isize> {
    let file = cx.file;
    let on = {
        let mut objects = file.objects.lock();
        match objects.obj(h_root, h_parent) {
            Some(p) if matches!(p.kind, Kind::Device | Kind::Subdevice) => {
                let gpu = p.gpu;
                let v = file.vgpu_on(gpu).ok_or(EACCES)?.clone();
                match objects.user_on(h_root, &v) {
                    Ok(owner) => Some((gpu, v, owner)),
                    Err(_) => return Ok(call(Step::Refuse(NV_ERR_INVALID_CLIENT))?.0),
                }
            }
            _ => None,
        }
    };
    let Some((gpu, v, owner)) = on else {
        let (r, _) = call(Step::Run)?;
        call(Step::Deliver)?;
        return Ok(r);
    };
    let Some(reserved) = Reservation::new(&v, bytes) else {
        return Ok(call(Step::Refuse(NV_ERR_NO_MEMORY))?.0);
    };
    // A failure to run drops the reservation. Until the object is
    // recorded (see `CtlFile::order`).
    let order = file.order.lock();
    let (r, made) = call(Step::Run)?;
    let Some(handle) = made else {
        drop(order);
        call(Step::Deliver)?;
        return Ok(r);
    };
    let obj = Obj {
        handle,
        parent: h_parent,
        gpu,
        kind,
        charge: Some(Held::Own(reserved.into_charge(Some(owner)))),
        sched: None,
        watch: None,
        user: None,
        gr: None,
    };
    let made = cx.host.rm.guard(h_root, h_parent, handle);
    file.objects.lock().add_obj(h_root, obj)?;
    made.keep();
    drop(order);
    call(Step::Deliver)?;
    Ok(r)
}

/// RM_VID_HEAP_CONTROL's ALLOC_SIZE of a virtual range (`NVOS32_ALLOC_FLAGS_VIRTUAL`),
/// which RM makes an NV50_MEMORY_VIRTUAL of (`heap::alloc_class`): charged
/// its page tables as that class is ([`virtual_memory`]), the size read from
/// vgpu's copy of the block, which the driver then reads.
pub(super) fn heap_virtual(
    cx: &Ctx<'_>,
    blk: &mut [u8],
    h_root: u32,
    h_parent: u32,
    size: u64,
) -> Result<isize> {
    let addr = cx.call.addr;
    let bytes = abi::virtual_range_charge(size);
    charged_by(
        cx,
        h_root,
        h_parent,
        bytes,
        Kind::VirtualMemory,
        |step| match step {
            Step::Refuse(st) => {
                let mut a = abi::Nvos32::decode(blk);
                a.status = st;
                user::write(addr, &a.to_bytes())?;
                Ok((0, None))
            }
            Step::Run => {
                let r = cx.call.run_block(cx.real, blk)?;
                let a = abi::Nvos32::decode(blk);
                let made = match a.heap_alloc() {
                    Some(m) if r == 0 && a.status == NV_OK => Some(m.h_memory),
                    _ => None,
                };
                Ok((r, made))
            }
            Step::Deliver => {
                user::write(addr, blk)?;
                Ok((0, None))
            }
        },
    )
}
