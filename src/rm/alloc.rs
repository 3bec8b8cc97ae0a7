// SPDX-License-Identifier: GPL-2.0

//! RM_ALLOC: clients are forwarded and verified; devices, subdevices, VRAM,
//! TSGs and channels (the classes the table marks `Served`) are decided and
//! accounted on kernel copies and executed through the kernel-client
//! interface; other admitted classes are forwarded from vgpu's copy of the
//! block, so the driver allocates the class vgpu saw.

use kernel::{prelude::*, sync::Arc};

use super::block::{answer, status_at, Header};
use super::ctx::{Caller, CtlFile, Ctx};
use super::internal;
use crate::clients;
use crate::deny;
use crate::kapi::pid::{current_comm, ProcessPid};
use crate::kapi::{rmops::RmOps, user};
use crate::nv::abi::{self, class, ctrl, status::*, Wire};
use crate::nv::release;
use crate::nv::table::ClassHandler;
use crate::objects::{Held, Kind, Obj, Reservation};
use crate::procs::{Counter, ProcUse};
use crate::sched::{Enrolled, Watched};
use crate::status::{Fail, RmResult};

/// First byte of client handles vgpu picks (`0xC1E0_0000 | random`): a range
/// apart from the driver's own (`0xC1D0_0000` up).
const CLIENT_HANDLE_BASE: u32 = 0xc1e0_0000;

/// RM_ALLOC, by the class's row: refused by default deny, or its handler:
/// a client, an accounted kind, or forwarded from vgpu's copy.
pub(super) fn alloc(cx: &Ctx<'_>) -> Result<isize> {
    let (addr, size) = (cx.call.addr, cx.call.size);
    let mut buf = [0u8; abi::Nvos64::SIZE];
    let blk = buf.get_mut(..size).ok_or(EINVAL)?;
    user::read(addr, blk)?;
    // `paramsSize` is not read: RM ignores it (see `accounted`).
    let h = Header::decode(blk);
    let row = release::current().class_row(h.h_class);
    if let Some(r) = row {
        crate::rows::count(crate::rows::Family::Class, release::current().classes, r);
    }
    // Default deny: a class the table does not admit is refused the way RM
    // refuses a class it does not have (`rs_server.c:4149` at 595.45.04),
    // or as its row says RM refuses it where it is not offered, before
    // anything reaches the driver.
    let policy = row.map(|r| r.policy);
    if deny::refuse(deny::Family::Class, h.h_class, policy, || {
        cx.file.count_denied()
    }) {
        let status = row.map_or(NV_ERR_INVALID_CLASS, |r| r.refusal);
        return answer(addr, blk, h.h_new, status);
    }
    // An admitted class with no row (`unknown_calls=1`) is forwarded.
    let Some(row) = row else {
        return cx.call.forward_block(cx.real, blk);
    };
    let result = match row.handler {
        ClassHandler::Forward => return cx.call.forward_block(cx.real, blk),
        ClassHandler::Charged => {
            let want = row.params_size as usize;
            return internal::charged_class(cx, blk, &h, u64::from(row.commits), want);
        }
        ClassHandler::VirtualMemory => {
            return internal::virtual_memory(cx, blk, &h, row.params_size as usize)
        }
        ClassHandler::GrObject => {
            return internal::gr_object(cx, blk, &h, row.params_size as usize)
        }
        ClassHandler::Client => return client(cx, blk, h.h_root),
        ClassHandler::NamesClient { at } => {
            return names_client(cx, blk, &h, row.params_size as usize, at as usize)
        }
        kind => accounted(cx, &h, kind, row.params_size as usize, row.commits),
    };
    match result {
        Ok(handle) => answer(addr, blk, handle, NV_OK),
        Err(Fail::Rm(st)) => answer(addr, blk, h.h_new, st),
        Err(Fail::Os(e)) => Err(e),
    }
}

/// A client: forwarded (the driver binds it to this file's real ctl file),
/// under a handle vgpu picks when the caller lets RM pick, and recorded when
/// the driver's own answer says it made that client.
///
/// RM takes a requested client handle from `hRoot`, not `hObjectNew`
/// (`entry_points.c:241` -> `alloc_free.c:576` -> `rs_server.c:612` at
/// 595.45.04, the same at 550.163.01 and 535.261.03; `hObjectNew` is only
/// written back, `alloc_free.c:591`), so that is where vgpu's pick goes.
/// The answer comes back into vgpu's copy from a slot no other thread can
/// write, so its status and handle are the driver's: no probe of the
/// handle is needed (a probe of a missing client makes RM log an error,
/// `rmapi_deprecated_control.c:100-110`). A handle that already exists
/// (another file's client) is refused by RM with
/// `NV_ERR_INSERT_DUPLICATE_NAME` (`rs_server.c:2508-2512` at 550.163.01)
/// and never recorded; when the handle was vgpu's pick, vgpu picks again.
fn client(cx: &Ctx<'_>, blk: &mut [u8], h_root: u32) -> Result<isize> {
    const H_ROOT: usize = abi::field_offset(abi::Nvos21::FIELDS, "h_root");
    const H_NEW: usize = abi::field_offset(abi::Nvos21::FIELDS, "h_object_new");
    const _: () = assert!(H_ROOT == abi::field_offset(abi::Nvos64::FIELDS, "h_root"));
    const _: () = assert!(H_NEW == abi::field_offset(abi::Nvos64::FIELDS, "h_object_new"));
    /// Picks of vgpu's before a duplicate goes back to the caller (one in
    /// 2^20 per live client collides).
    const TRIES: usize = 4;
    let status_at = status_at(blk);
    let ours = h_root == 0;
    let read = |blk: &[u8], at: usize| -> Result<u32> {
        let b = blk.get(at..at + 4).ok_or(EINVAL)?;
        Ok(u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
    };
    let mut tries = 0;
    loop {
        let handle = if ours {
            CLIENT_HANDLE_BASE | (crate::kapi::random::u32() & 0xf_ffff)
        } else {
            h_root
        };
        blk.get_mut(H_ROOT..H_ROOT + 4)
            .ok_or(EINVAL)?
            .copy_from_slice(&handle.to_ne_bytes());
        // Until the client is recorded (see `CtlFile::order`).
        let _order = cx.file.order.lock();
        let r = cx.call.forward_block(cx.real, blk)?;
        let status = read(blk, status_at)?;
        tries += 1;
        if ours && status == NV_ERR_INSERT_DUPLICATE_NAME && tries < TRIES {
            continue;
        }
        if r != 0 || status != NV_OK || read(blk, H_NEW)? != handle {
            return Ok(r);
        }
        let mut objects = cx.file.objects.lock();
        if !objects.has_client(handle) {
            // RM records the creating process for the client's views
            // (`rmapi/client.c:111-114` at 595.45.04): so does vgpu.
            objects.add_client(handle, ProcessPid::current()?, current_comm())?;
            drop(objects);
            if let Err(e) = clients::record(cx.host, handle, cx.file) {
                cx.file.objects.lock().freed(handle, handle);
                return Err(e);
            }
        }
        return Ok(r);
    }
}

/// A class whose params name an RM client at byte `at` of its `size`
/// bytes (GT200_DEBUGGER's `hAppClient`, NV01_EVENT_OS_EVENT's
/// `hParentClient`): the handle must be 0, which RM takes as the caller's
/// own client (`kernel_sm_debugger_session.c:245-249`, `event_api.c:65-71`
/// at 595.45.04), or a client verified by a vgpuctl file of the caller's
/// container. Any other is refused as RM refuses a client it does not have,
/// `NV_ERR_INVALID_OBJECT_HANDLE` (`serverGetClientUnderLock` ->
/// `_serverFindClient`, `rs_server.c:3057-3059` at 595.45.04): RM itself
/// lets a client of the same user name another's, whichever container it
/// is in. The params the driver reads are vgpu's checked copy, from the
/// bounce slot the block goes in (no other thread can change the handle
/// after the check).
fn names_client(cx: &Ctx<'_>, blk: &mut [u8], h: &Header, size: usize, at: usize) -> Result<isize> {
    names_client_on(&cx.caller(), blk, h, size, at)
}

/// RM_ALLOC on a GPU node, which RM takes for the event classes only
/// (`RmIoctl`, `escape.c:386-410` at 550.163.01; every other class is
/// `NV_CTL_DEVICE_ONLY`'s NV_ERR_INVALID_ARGUMENT, answered `EINVAL` by
/// `nv.c:2684-2685`, which vgpu answers before the driver). The client RM
/// checks is the one of the ctl file the GPU file was registered to (its
/// `clientOSInfo`); vgpu checks the client the params name, by the class's
/// row, as on the ctl node.
pub(super) fn alloc_on_gpu_node(on: &Caller<'_>, count_denied: impl FnOnce()) -> Result<isize> {
    let (addr, size) = (on.call.addr, on.call.size);
    let mut buf = [0u8; abi::Nvos64::SIZE];
    let blk = buf.get_mut(..size).ok_or(EINVAL)?;
    user::read(addr, blk)?;
    let h = Header::decode(blk);
    if !class::ON_GPU_NODES.contains(&h.h_class) {
        return Err(EINVAL);
    }
    let row = release::current().class_row(h.h_class);
    if let Some(r) = row {
        crate::rows::count(crate::rows::Family::Class, release::current().classes, r);
    }
    let policy = row.map(|r| r.policy);
    if deny::refuse(deny::Family::Class, h.h_class, policy, count_denied) {
        let status = row.map_or(NV_ERR_INVALID_CLASS, |r| r.refusal);
        return answer(addr, blk, h.h_new, status);
    }
    match row.map(|r| (r.handler, r.params_size)) {
        Some((ClassHandler::NamesClient { at }, want)) => {
            names_client_on(on, blk, &h, want as usize, at as usize)
        }
        // An event class admitted without a row of its own
        // (`unknown_calls=1`) or with another handler: not one vgpu makes
        // on a GPU node.
        _ => Err(EINVAL),
    }
}

/// [`names_client`] for a caller on either node.
fn names_client_on(
    on: &Caller<'_>,
    blk: &mut [u8],
    h: &Header,
    size: usize,
    at: usize,
) -> Result<isize> {
    const PPARAMS: usize = abi::field_offset(abi::Nvos21::FIELDS, "p_alloc_parms");
    const _: () = assert!(PPARAMS == abi::field_offset(abi::Nvos64::FIELDS, "p_alloc_parms"));
    // The two rows' params (12 and 24 bytes).
    let mut buf = [0u8; 32];
    let p = buf.get_mut(..size).ok_or(EINVAL)?;
    if h.pparams == 0 {
        // A required pointer that is NULL (`param_copy.c:314-315`).
        return answer(on.call.addr, blk, h.h_new, NV_ERR_INVALID_ARGUMENT);
    }
    if user::read(h.pparams, p).is_err() {
        // `os_memcpy_from_user` (`os-interface.c:522-529`).
        return answer(on.call.addr, blk, h.h_new, NV_ERR_INVALID_ADDRESS);
    }
    let named = p
        .get(at..at + 4)
        .map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or(EINVAL)?;
    if named != 0 && !clients::client_in(on.host, named, on.vgpus) {
        return answer(on.call.addr, blk, h.h_new, NV_ERR_INVALID_OBJECT_HANDLE);
    }
    let r = on.call.forward_block_params(on.real, blk, PPARAMS, p)?;
    // In/out params back to the caller, as for the accounted classes.
    user::write(h.pparams, p)?;
    Ok(r)
}

/// Devices, subdevices, memory, TSGs and channels (the class's handler
/// `kind`): decided on kernel copies, executed through the kernel
/// interface, `want` bytes of alloc params (the class's in the driver's
/// release), the object charged what the row says RM `commits` for it
/// (channels: their instance block). Returns the new handle.
fn accounted(
    cx: &Ctx<'_>,
    h: &Header,
    kind: ClassHandler,
    want: usize,
    commits: u32,
) -> RmResult<u32> {
    // A device is checked against the file's clients here; anything else
    // when its parent is looked up (`plan`), under the same lock.
    if kind == ClassHandler::Device && !cx.file.has_client(h.h_root) {
        return Err(Fail::Rm(NV_ERR_INVALID_CLIENT));
    }
    // RM copies the class's own params, whatever `paramsSize` says (at
    // 595.45.04: `rmapiGetClassAllocParamSize`, `resource_desc.c:181-214`;
    // `rmapiParamsCopyInit`, `param_copy.c:297-320`), so vgpu reads,
    // decides on and passes on exactly that many bytes: a short or long
    // `paramsSize` changes nothing, the charge included. The size is the
    // class row's in the driver's release (older releases' blocks are
    // prefixes of 595.45.04's, whose missing fields decode as zero).
    // RS_OPTIONAL (`resource_list.h:175,449`): devices and subdevices;
    // RS_REQUIRED (`resource_list.h:484,505`, channels 283-392): the rest.
    let optional = matches!(kind, ClassHandler::Device | ClassHandler::Subdevice);
    // Channel params are the largest of the accounted classes'; the rest
    // fit in a memory class's, which is all most allocations need zeroed.
    let mut small = [0u8; abi::MemoryAllocationParams::SIZE];
    let mut large;
    let params = if want <= small.len() {
        &mut small[..want]
    } else {
        large = [0u8; abi::ChannelAllocParams::SIZE];
        large.get_mut(..want).ok_or(EINVAL)?
    };
    if h.pparams == 0 {
        if !optional {
            // A required pointer that is NULL (`param_copy.c:314-315`).
            return Err(Fail::Rm(NV_ERR_INVALID_ARGUMENT));
        }
        // NULL optional params: the class's defaults, passed on as NULL.
        return execute(cx, h, kind, &mut [], commits);
    }
    if user::read(h.pparams, params).is_err() {
        // `os_memcpy_from_user` (`os-interface.c:522-529`).
        return Err(Fail::Rm(NV_ERR_INVALID_ADDRESS));
    }
    let handle = execute(cx, h, kind, params, commits)?;
    // In/out params (the rounded size) back to the caller.
    user::write(h.pparams, params)?;
    Ok(handle)
}

/// The device instance of NV01_DEVICE_0 params: the GPU's index (its
/// minor); no params (a NULL pointer) is RM's default, device 0.
fn device_instance(params: &[u8]) -> u32 {
    if params.is_empty() {
        0
    } else {
        abi::DeviceAllocParams::decode(params).device_id
    }
}

/// NV01_DEVICE_0 for a device instance the host has no GPU for (none with
/// that index when vgpu loaded). RM's own answer is asked for with vgpu's
/// client and vgpu's copy of the params, so the container gets the status
/// RM gives for a device that is not there (`NV_ERR_INVALID_STATE` at
/// 550.163.01 and 595.45.04, `NV_ERR_INVALID_CLASS` at 535.261.03, measured
/// on the real driver with no GPU) and holds nothing. Should RM make the
/// device (a GPU that appeared after vgpu loaded, which vgpu does not
/// manage), vgpu frees it at once and the container gets EACCES, as for
/// any GPU it has no vGPU on.
fn absent_device(cx: &Ctx<'_>, params: &mut [u8]) -> RmResult<u32> {
    let (rm, k) = (&cx.host.rm, cx.host.kclient);
    let dev = rm.alloc(k, k, 0, class::NV01_DEVICE_0, params)?;
    let _ = rm.free(k, k, dev);
    Err(Fail::Os(EACCES))
}

/// What an accounted allocation is, decided before the driver sees it.
struct Plan {
    gpu: u32,
    kind: Kind,
    /// VRAM: the vGPU charged and the floor reserved.
    vram: Option<(Arc<crate::vgpu::Vgpu>, u64)>,
    /// A channel in a TSG: the TSG's schedule entry.
    in_tsg: Option<Arc<Enrolled>>,
    /// VRAM: the entry of the client's process on the vGPU's list of
    /// processes, charged with it (found under the lock that found the
    /// parent: one lock of the file's objects fewer per allocation).
    owner: Option<Arc<ProcUse>>,
}

/// Decides what allocating `h`, of handler `kind`, from `params` is on this
/// file, the object itself committing `commits` bytes of VRAM.
fn plan(
    file: &CtlFile,
    h: &Header,
    kind: ClassHandler,
    params: &[u8],
    commits: u32,
) -> RmResult<Plan> {
    let plan = |gpu, kind| Plan {
        gpu,
        kind,
        vram: None,
        in_tsg: None,
        owner: None,
    };
    if kind == ClassHandler::Device {
        if h.h_parent != h.h_root {
            return Err(Fail::Rm(NV_ERR_INVALID_OBJECT_PARENT));
        }
        let gpu = device_instance(params);
        if file.vgpu_on(gpu).is_none() {
            return Err(EACCES.into());
        }
        return Ok(plan(gpu, Kind::Device));
    }
    // Held to the end: memory finds its owner under it.
    let mut objects = file.objects.lock();
    let (gpu, pkind, psched) = {
        if !objects.has_client(h.h_root) {
            return Err(Fail::Rm(NV_ERR_INVALID_CLIENT));
        }
        let Some(parent) = objects.obj(h.h_root, h.h_parent) else {
            return Err(Fail::Rm(NV_ERR_INVALID_OBJECT_PARENT));
        };
        (parent.gpu, parent.kind, parent.sched.clone())
    };
    let p = match kind {
        ClassHandler::Subdevice => plan(gpu, Kind::Subdevice),
        ClassHandler::Tsg if pkind == Kind::Device => plan(gpu, Kind::Tsg),
        ClassHandler::Channel if pkind == Kind::Device => plan(gpu, Kind::Channel),
        ClassHandler::Channel if pkind == Kind::Tsg => Plan {
            in_tsg: psched,
            ..plan(gpu, Kind::Channel)
        },
        ClassHandler::Tsg | ClassHandler::Channel => {
            return Err(Fail::Rm(NV_ERR_INVALID_OBJECT_PARENT))
        }
        // Not accounted (`alloc` runs no such handler here).
        ClassHandler::Device
        | ClassHandler::Client
        | ClassHandler::Forward
        | ClassHandler::Charged
        | ClassHandler::VirtualMemory
        | ClassHandler::GrObject
        | ClassHandler::NamesClient { .. } => return Err(Fail::Os(EINVAL)),
        ClassHandler::Memory => {
            let mp = abi::MemoryAllocationParams::decode_charge_fields(params);
            if !mp.allocates_vram() {
                return Ok(plan(gpu, Kind::Memory));
            }
            let v = file.vgpu_on(gpu).ok_or(EACCES)?.clone();
            // The client was found above, under this lock.
            let owner = objects
                .user_on(h.h_root, &v)
                .map_err(|_| Fail::Rm(NV_ERR_INVALID_CLIENT))?;
            // Reserved: at least what RM will allocate, its page-rounded
            // size (settled after the call).
            let floor = crate::ledger::vram_floor(mp.size, mp.attr, mp.attr2);
            return Ok(Plan {
                vram: Some((v, floor)),
                owner: Some(owner),
                ..plan(gpu, Kind::Memory)
            });
        }
    };
    if commits == 0 {
        return Ok(p);
    }
    // What the driver commits for the object itself (a channel's instance
    // block), charged as VRAM is.
    let v = file.vgpu_on(gpu).ok_or(EACCES)?.clone();
    let owner = objects
        .user_on(h.h_root, &v)
        .map_err(|_| Fail::Rm(NV_ERR_INVALID_CLIENT))?;
    Ok(Plan {
        vram: Some((v, u64::from(commits))),
        owner: Some(owner),
        ..p
    })
}

/// Allocates `h` from kernel copies `params` (the class's alloc params,
/// updated in place): the decision, the charge, the call through the kernel
/// interface, the settling and the record. Every step that fails unwinds
/// what came before by dropping its guard (the reservation, the RM object,
/// the schedule entry).
fn execute(
    cx: &Ctx<'_>,
    h: &Header,
    kind: ClassHandler,
    params: &mut [u8],
    commits: u32,
) -> RmResult<u32> {
    let rm = &cx.host.rm;
    let file = cx.file;
    if kind == ClassHandler::Device && !cx.host.has_gpu(device_instance(params)) {
        return absent_device(cx, params);
    }
    let p = plan(file, h, kind, params, commits)?;
    // A TSG, or a channel outside one, runs on this file's vGPU there.
    let sched_on = match (p.kind, &p.in_tsg) {
        (Kind::Tsg, _) | (Kind::Channel, None) => Some(file.vgpu_on(p.gpu).ok_or(EACCES)?.clone()),
        _ => None,
    };
    // What the client's process holds on the vGPU there (devices,
    // channels) or is charged (memory), on its list of processes.
    // (The owner of VRAM was found by `plan`.)
    let user = match p.kind {
        Kind::Device | Kind::Channel => {
            let what = if p.kind == Kind::Device {
                Counter::Device
            } else {
                Counter::Channel
            };
            let v = file.vgpu_on(p.gpu).ok_or(EACCES)?;
            let held = file.objects.lock().hold_on(h.h_root, v, what);
            Some(held.map_err(|_| Fail::Rm(NV_ERR_INVALID_CLIENT))?)
        }
        _ => None,
    };
    let mut reserved = match &p.vram {
        Some((v, floor)) => Some(Reservation::new(v, *floor).ok_or(Fail::Rm(NV_ERR_NO_MEMORY))?),
        None => None,
    };
    // Until the object is recorded (see `CtlFile::order`).
    let _order = file.order.lock();
    let object = rm.alloc_object(h.h_root, h.h_parent, h.h_new, h.h_class, params)?;
    let handle = object.handle();
    let mut charge = None;
    // Memory settles at the size the driver allocated; what an object
    // commits for itself is exact.
    if let (Some(r), Some((_, floor)), Kind::Memory) = (reserved.as_mut(), &p.vram, p.kind) {
        // The size the driver really allocated: it wrote it into our kernel
        // copy of the params, which no user thread can touch. Should a
        // driver not report it there, ask (GET_SURFACE_INFO).
        // One field, not the whole block (`make bench`: alloc).
        const SIZE: usize = abi::field_offset(abi::MemoryAllocationParams::FIELDS, "size");
        let reported: u64 = abi::read_field(params, SIZE);
        let actual = if reported >= *floor {
            reported
        } else {
            surface_size(rm, h.h_root, handle).unwrap_or(*floor)
        };
        if !r.settle(actual) {
            return Err(Fail::Rm(NV_ERR_NO_MEMORY));
        }
    }
    if let Some(r) = reserved.take() {
        charge = Some(Held::Own(r.into_charge(p.owner)));
    }
    let sched = match sched_on {
        Some(v) => Some(Enrolled::new(&v, h.h_root, handle, p.kind == Kind::Tsg)?),
        None => p.in_tsg,
    };
    let watch = match (p.kind, &sched) {
        (Kind::Channel, Some(e)) => watch_userd(cx, p.gpu, h.h_root, e, params)?,
        _ => None,
    };
    let obj = Obj {
        handle,
        parent: h.h_parent,
        gpu: p.gpu,
        kind: p.kind,
        charge,
        sched,
        watch,
        user,
        gr: None,
    };
    file.objects.lock().add_obj(h.h_root, obj)?;
    Ok(object.keep())
}

/// Watches the USERD a new channel names (its first), so that the scheduler
/// can tell when the channel has work queued.
fn watch_userd(
    cx: &Ctx<'_>,
    gpu: u32,
    client: u32,
    entry: &Arc<Enrolled>,
    params: &[u8],
) -> Result<Option<Arc<Watched>>> {
    let p = abi::ChannelAllocParams::decode(params);
    let (h_userd, offset) = (p.h_userd_memory[0], p.userd_offset[0]);
    if h_userd == 0 {
        return Ok(None);
    }
    let Some(g) = cx.host.sched(gpu) else {
        return Ok(None);
    };
    Watched::new(
        &cx.host.rm,
        cx.host.kclient,
        g,
        entry.vgpu(),
        entry.id(),
        client,
        h_userd,
        offset,
    )
}

/// The physical size of memory object `h` of client `client`, in bytes,
/// asked the way the driver's release tells it (`Release::surface_size`).
fn surface_size(rm: &RmOps, client: u32, h: u32) -> RmResult<u64> {
    let how = release::current().surface_size;
    let mut list = [0u8; 2 * abi::InfoEntry::SIZE];
    let n = how.len().min(2);
    for (k, &(index, _)) in how.iter().take(n).enumerate() {
        abi::InfoEntry { index, data: 0 }.encode(&mut list[k * 8..k * 8 + 8]);
    }
    let mut q = abi::GetSurfaceInfoParams {
        list_size: n as u32,
        list_ptr: list.as_mut_ptr() as u64,
    }
    .to_bytes();
    rm.control(client, h, ctrl::NV0041_CTRL_CMD_GET_SURFACE_INFO, &mut q)?;
    Ok(how
        .iter()
        .take(n)
        .enumerate()
        .fold(0u64, |size, (k, &(_, shift))| {
            let data = abi::InfoEntry::decode(&list[k * 8..k * 8 + 8]).data;
            size | u64::from(data) << shift
        }))
}

/// Allocates VRAM for VID_HEAP (an NV01_MEMORY_LOCAL_USER of `params` under
/// `h_parent` of `h_root`, `h_new` or RM's pick), accounted as any other.
pub(super) fn heap_memory(
    cx: &Ctx<'_>,
    h_root: u32,
    h_parent: u32,
    h_new: u32,
    params: &mut [u8],
) -> RmResult<u32> {
    // `plan` checks the client, as for any other memory allocation.
    let h = Header {
        h_root,
        h_parent,
        h_new,
        h_class: class::NV01_MEMORY_LOCAL_USER,
        pparams: 0,
    };
    execute(cx, &h, ClassHandler::Memory, params, 0)
}
