// SPDX-License-Identifier: GPL-2.0

//! RM_CONTROL, by the control's row of the dispatch table: FB info is run
//! on kernel copies and rewritten to the vGPU (`FbInfo`); a tenant's
//! scheduling calls are decided against the vGPU's schedule (`Schedule`);
//! queries of the GPU's fixed description on the caller's own device or
//! subdevice run on kernel copies (`Kernel`); the process queries are
//! answered from the vGPU's list of processes (`Processes`); every other admitted control
//! is forwarded from vgpu's copy of the block inside the caller's compute
//! window; anything else is refused (default deny).

use core::sync::atomic::Ordering;

use kernel::{prelude::*, sync::Arc};

use super::ctx::{control_params, CtlFile, Ctx};
use crate::deny;
use crate::host::Host;
use crate::kapi::{rmops::RmOps, user};
use crate::ledger::fb_info_kib;
use crate::nv::abi::{self, ctrl, status::*, Wire};
use crate::nv::release;
use crate::nv::table::{self, ControlHandler, ControlRow, IdCount, IdList, ParamCheck};
use crate::objects::{Kind, Obj};
use crate::status::{self, Fail, RmResult};
use crate::vgpu::Vgpu;

/// RM_CONTROL: refused by default deny, or its row's handler; a control
/// no handler answers is forwarded.
pub(super) fn control(cx: &Ctx<'_>) -> Result<isize> {
    let addr = cx.call.addr;
    let mut blk = [0u8; abi::Nvos54::SIZE];
    user::read(addr, &mut blk)?;
    let mut a = abi::Nvos54::decode(&blk);
    let row = release::current().control_row(a.cmd);
    if let Some(r) = row {
        crate::rows::count(crate::rows::Family::Control, release::current().controls, r);
    }
    // Default deny: a control the table does not admit is refused the way
    // RM refuses a command it does not have (`NV_ERR_NOT_SUPPORTED`,
    // `rs_resource.c:131` at 595.45.04), or with its row's own refusal,
    // before anything reaches the driver.
    let policy = row.map(|r| r.policy);
    if deny::refuse(deny::Family::Control, a.cmd, policy, || {
        cx.file.count_denied()
    }) {
        a.status = row.map_or(NV_ERR_NOT_SUPPORTED, |r| r.refusal);
        user::write(addr, &a.to_bytes())?;
        return Ok(0);
    }
    let answered = match row {
        Some(r) => handle(cx, &a, r)?,
        // Admitted with no row (`unknown_calls=1`): forwarded.
        None => None,
    };
    if let Some(st) = answered {
        a.status = st;
        user::write(addr, &a.to_bytes())?;
        return Ok(0);
    }
    forwarded(cx.host, cx.file, || {
        cx.call.forward_block(cx.real, &mut blk)
    })
}

/// Runs the handler of admitted control row `r`: the RM status it answers
/// with, or `None` for the driver to answer (forwarded).
fn handle(cx: &Ctx<'_>, a: &abi::Nvos54, r: &ControlRow) -> Result<Option<u32>> {
    let answer = |res: RmResult| status::status(res).map(Some);
    match r.handler {
        ControlHandler::Forward => Ok(None),
        ControlHandler::TsgSchedule => {
            answer(scheduling(cx, a, |cx, a| gpfifo(cx, a, r, Kind::Tsg)))
        }
        ControlHandler::ChannelSchedule => {
            answer(scheduling(cx, a, |cx, a| gpfifo(cx, a, r, Kind::Channel)))
        }
        ControlHandler::DisableChannels => answer(scheduling(cx, a, disable_channels)),
        ControlHandler::Timeslice => answer(scheduling(cx, a, |cx, a| {
            tsg_setting(cx, a, abi::TimesliceParams::SIZE)
        })),
        ControlHandler::InterleaveLevel => answer(scheduling(cx, a, |cx, a| {
            tsg_setting(cx, a, abi::InterleaveLevelParams::SIZE)
        })),
        ControlHandler::Preemption => answer(scheduling(cx, a, preemption_mode)),
        ControlHandler::ComputeReservation => answer(compute_reservation(cx, a)),
        ControlHandler::Processes => {
            answer(super::processes::processes(cx, a, r.params_size as usize))
        }
        // Not this file's client, vGPU or object, or malformed: `None`, the
        // driver answers.
        ControlHandler::GpuIds => attached_ids(cx, a),
        ControlHandler::GpuIdsNamed { lists, unknown } => gpu_ids_named(cx, a, r, lists, unknown),
        ControlHandler::ProbedIds => probed_ids(cx, a, r),
        ControlHandler::DeviceIds => device_ids(cx, a),
        ControlHandler::ActiveDevices => active_devices(cx, a, r),
        ControlHandler::FbInfo => fb_info(cx, a),
        ControlHandler::Kernel => on_kernel_copies(cx, a, r),
        ControlHandler::Checked { check, refusal } => checked(cx, a, r, check, refusal),
    }
}

/// GPU_ACQUIRE_COMPUTE_MODE_RESERVATION or _RELEASE_ on the caller's own
/// subdevice, answered from its vGPU's own holder
/// ([`crate::vgpu::Compute::reservation`]) as RM answers on a GPU in
/// compute mode RULES_NONE, at 550.163.01 (`subdevice_ctrl_gpu_kernel.c`):
/// acquire always succeeds and makes the caller's client the holder
/// (`:1998-2005`); release by the holder clears it, by any other client
/// `NV_ERR_STATE_IN_USE` (`:2063-2070`). A vGPU's compute mode is RULES_NONE
/// whatever the GPU's: the GPU's own reservation, one for every tenant,
/// is never taken (in an exclusive mode the first tenant to take it would
/// lock the others out, `:2008-2024`). The controls take no params: a size
/// or a pointer is `NV_ERR_INVALID_ARGUMENT`, as RM checks before it looks
/// the object up (`rmapi/control.c:452-461`).
fn compute_reservation(cx: &Ctx<'_>, a: &abi::Nvos54) -> RmResult {
    if a.params_size != 0 || a.params != 0 {
        return Err(Fail::Rm(NV_ERR_INVALID_ARGUMENT));
    }
    let v = super::processes::own_subdevice_vgpu(cx, a)?;
    let mut c = v.compute.lock();
    if a.cmd == ctrl::NV2080_CTRL_CMD_GPU_ACQUIRE_COMPUTE_MODE_RESERVATION {
        // Before the holder is set: a free that sees no flag has no
        // holder of this file to find.
        cx.file.reserved.store(true, Ordering::Relaxed);
        c.reservation = a.h_client;
        Ok(())
    } else if c.reservation == a.h_client {
        c.reservation = 0;
        Ok(())
    } else {
        Err(Fail::Rm(NV_ERR_STATE_IN_USE))
    }
}

/// A control of a [`ControlHandler::Kernel`] row, well formed, on this
/// file's own device (`0x0080` controls) or subdevice (`0x2080`): its params
/// are copied to the stack and the call goes through the kernel interface
/// on that copy, so it needs no bounce slot (another thread can change
/// neither the command nor the params the driver reads) and no compute
/// window (it can become no other call). The params go back to the caller
/// on success only, as RM copies them out (none of these rows has
/// `RMCTRL_FLAGS_COPYOUT_ON_ERROR`). Returns the RM status; `None` if the
/// call names an object this file did not make, its size is not the row's,
/// or its params cannot be read, for the driver to answer as it does.
///
/// The kernel interface runs with kernel privilege, which skips RM's own
/// check that a user client is the caller's (`rmclientValidate_IMPL`,
/// `rmapi/client.c:785` at 595.45.04): the check that the device or
/// subdevice is one this file made is what keeps a tenant on its own.
fn on_kernel_copies(cx: &Ctx<'_>, a: &abi::Nvos54, row: &ControlRow) -> Result<Option<u32>> {
    let Some(want) = target_kind(a.cmd) else {
        return Ok(None);
    };
    let size = row.params_size as usize;
    // Flags (LOCK_BYPASS, IRQL_RAISED, ...) are the caller's to ask for and
    // RM's to refuse a user: the kernel call would drop them, so a call
    // with any goes the forwarded way, where the driver answers as it does.
    if a.flags != 0 || a.params_size != row.params_size || size > table::KERNEL_PARAMS_MAX {
        return Ok(None);
    }
    if target(cx, a, want, |_| ()).is_none() {
        return Ok(None);
    }
    let mut buf = [0u8; table::KERNEL_PARAMS_MAX];
    let p = &mut buf[..size];
    if size > 0 && user::read(a.params, p).is_err() {
        return Ok(None);
    }
    let r = cx.host.rm.control(a.h_client, a.h_object, a.cmd, p);
    if r.is_err() {
        return status::status(r).map(Some);
    }
    if size > 0 && user::write(a.params, p).is_err() {
        return Ok(Some(NV_ERR_INVALID_ARGUMENT));
    }
    Ok(Some(NV_OK))
}

/// GPU_GET_ATTACHED_IDS on one of this file's clients (the control goes
/// to the client object itself), well formed: run on a kernel copy through
/// the kernel interface, then only the ids of GPUs this file has a vGPU on
/// (their CARD_INFO records, read at load, give each id's minor) are kept,
/// in RM's order, the rest of the list `NV0000_CTRL_GPU_INVALID_ID`. RM
/// writes the whole list and reads nothing from it
/// (`gpumgrGetAttachedGpuIds`, `gpu_mgr.c:2315-2337` at 595.45.04).
/// Returns the RM status;
/// `None` for the driver to answer a call it would refuse as it does.
fn attached_ids(cx: &Ctx<'_>, a: &abi::Nvos54) -> Result<Option<u32>> {
    use abi::GpuGetAttachedIdsParams as Ids;
    if a.params_size as usize != Ids::SIZE
        || a.h_object != a.h_client
        || !cx.file.has_client(a.h_client)
    {
        return Ok(None);
    }
    let mut p = [0u8; Ids::SIZE];
    let r = cx.host.rm.control(a.h_client, a.h_object, a.cmd, &mut p);
    if r.is_err() {
        return status::status(r).map(Some);
    }
    let all = Ids::decode(&p);
    let mut mine = Ids {
        gpu_ids: [abi::GPU_INVALID_ID; 32],
    };
    for (slot, id) in mine
        .gpu_ids
        .iter_mut()
        .zip(all.ids().filter(|&id| owns_gpu(cx, id)))
    {
        *slot = id;
    }
    Ok(Some(match user::write(a.params, &mine.to_bytes()) {
        Ok(()) => NV_OK,
        Err(_) => NV_ERR_INVALID_ARGUMENT,
    }))
}

/// Whether GPU `id` is one this file has a vGPU on: its CARD_INFO record,
/// read at load, gives the id's minor.
fn owns_gpu(cx: &Ctx<'_>, id: u32) -> bool {
    cx.host.cards.records().any(|rec| {
        let c = abi::CardInfo::decode(rec);
        c.gpu_id == id && cx.file.vgpu_on(c.minor_number).is_some()
    })
}

/// The GPU ids `lists` name in params `p` (a list out of `p` names none:
/// RM refuses such params itself).
fn named_ids<'a>(p: &'a [u8], lists: &'a [IdList]) -> impl Iterator<Item = u32> + 'a {
    let word = move |at: usize| {
        p.get(at..at + 4)
            .map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
    };
    lists.iter().flat_map(move |l| {
        let ids = (0..l.max as usize).map_while(move |i| word(l.at as usize + 4 * i));
        let n = match l.count {
            IdCount::One => 1,
            IdCount::Field(at) => word(at as usize).map_or(0, |n| n as usize),
            IdCount::UntilInvalid => usize::MAX,
        };
        let all = l.count == IdCount::UntilInvalid && word(l.at as usize) == Some(table::ALL_GPUS);
        ids.take(if all { 0 } else { n })
            .take_while(move |&id| l.count != IdCount::UntilInvalid || id != abi::GPU_INVALID_ID)
    })
}

/// A control that names GPUs by id ([`ControlHandler::GpuIdsNamed`]), well
/// formed, on one of this file's clients: refused with `unknown`, RM's
/// status for an id it does not have, if it names a GPU this file has no
/// vGPU on (for such a caller RM has no such GPU); else forwarded with
/// vgpu's checked copy of the params, from a bounce slot, so the driver
/// acts on the ids vgpu checked. `None`: not this file's client, or not
/// the row's size, for the driver to refuse as it does (from the block
/// vgpu read: the driver sees the same header).
fn gpu_ids_named(
    cx: &Ctx<'_>,
    a: &abi::Nvos54,
    row: &ControlRow,
    lists: &[IdList],
    unknown: u32,
) -> Result<Option<u32>> {
    const PARAMS: usize = abi::field_offset(abi::Nvos54::FIELDS, "params");
    const STATUS: usize = abi::field_offset(abi::Nvos54::FIELDS, "status");
    if a.params_size != row.params_size
        || a.h_object != a.h_client
        || !cx.file.has_client(a.h_client)
    {
        return Ok(None);
    }
    // On the stack but for the P2P caps' (1352 and 8348 bytes): a heap
    // buffer for ID info would cost more than the check (the cost guard).
    let size = row.params_size as usize;
    let mut small = [0u8; table::KERNEL_PARAMS_MAX];
    let mut large;
    let p: &mut [u8] = match small.get_mut(..size) {
        Some(p) => p,
        None => {
            large = KVec::from_elem(0u8, size, GFP_KERNEL)?;
            &mut large
        }
    };
    if user::read(a.params, p).is_err() {
        // RM's copy-in of a bad pointer (`os-interface.c:522-529`).
        return Ok(Some(NV_ERR_INVALID_ADDRESS));
    }
    if !named_ids(p, lists).all(|id| owns_gpu(cx, id)) {
        return Ok(Some(unknown));
    }
    let mut blk = a.to_bytes();
    cx.call.forward_block_params(cx.real, &mut blk, PARAMS, p)?;
    user::write(a.params, p)?;
    Ok(Some(abi::read_field(&blk, STATUS)))
}

/// A control of a [`ControlHandler::Checked`] row, well formed, on this
/// file's own device (`0x0080` controls) or subdevice (`0x2080`): its params
/// are read once into vgpu's copy and `check`ed there (a duration rewritten
/// in it), then forwarded from that copy, in a bounce slot, so the driver
/// acts on what vgpu checked. Params the check refuses get `refusal`, are
/// counted in `calls_denied` and never reach the driver; an object that is
/// not this file's device or subdevice is `NV_ERR_INVALID_OBJECT_HANDLE`,
/// as the scheduling controls' (nothing unchecked is forwarded). `None`:
/// not this file's client, or not the row's size, for the driver to refuse
/// as it does (from the block vgpu read).
fn checked(
    cx: &Ctx<'_>,
    a: &abi::Nvos54,
    row: &ControlRow,
    check: ParamCheck,
    refusal: u32,
) -> Result<Option<u32>> {
    const PARAMS: usize = abi::field_offset(abi::Nvos54::FIELDS, "params");
    const STATUS: usize = abi::field_offset(abi::Nvos54::FIELDS, "status");
    if a.params_size != row.params_size || !cx.file.has_client(a.h_client) {
        return Ok(None);
    }
    // Checked rows are NV0080 and NV2080 controls (`nv/table.rs`).
    let gpu = target_kind(a.cmd).and_then(|kind| target(cx, a, kind, |o| o.gpu));
    let Some(gpu) = gpu else {
        return Ok(Some(NV_ERR_INVALID_OBJECT_HANDLE));
    };
    let mut p = KVec::from_elem(0u8, row.params_size as usize, GFP_KERNEL)?;
    if user::read(a.params, &mut p).is_err() {
        // RM's copy-in of a bad pointer (`os-interface.c:522-529`).
        return Ok(Some(NV_ERR_INVALID_ADDRESS));
    }
    if !passes(cx, a.h_client, gpu, check, &mut p) {
        cx.file.count_denied();
        return Ok(Some(refusal));
    }
    let mut blk = a.to_bytes();
    cx.call
        .forward_block_params(cx.real, &mut blk, PARAMS, &mut p)?;
    user::write(a.params, &p)?;
    Ok(Some(abi::read_field(&blk, STATUS)))
}

/// Whether params `p` of a control on `client`'s object on GPU `gpu` hold
/// what `check` asks (a [`ParamCheck::Duration`] is rewritten in `p`).
fn passes(cx: &Ctx<'_>, client: u32, gpu: u32, check: ParamCheck, p: &mut [u8]) -> bool {
    let word = |p: &[u8], at: usize| {
        p.get(at..at + 4)
            .map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
    };
    match check {
        ParamCheck::OwnTsg { at } => word(p, at.into()).is_some_and(|h| {
            cx.file
                .objects
                .lock()
                .obj(client, h)
                .is_some_and(|o| o.kind == Kind::Tsg && o.gpu == gpu)
        }),
        ParamCheck::OneOf { at, allowed } => word(p, at.into())
            .is_some_and(|v| allowed.iter().any(|&(lo, hi)| (lo..=hi).contains(&v))),
        ParamCheck::Instructions { allowed } => {
            // `clientAPIVersion`, `clientAPIRevision`,
            // `clientInstructionSizeOf`, then `instructionListSize` at 20
            // and the instructions from 24, 44 bytes each, `opcode` at 8
            // (`ctrl2080thermal.h:38-39, 397-415` at 595.45.04). Another
            // version RM hands to the physical RM unread
            // (`subdevice_ctrl_gpu_kernel.c:4013-4021`): refused, as is
            // a list longer than RM's 32 (`:4001-4003`).
            const SIZE: u32 = 44;
            const MAX: u32 = 32;
            let (Some(1), Some(0), Some(SIZE), Some(n)) =
                (word(p, 0), word(p, 4), word(p, 8), word(p, 20))
            else {
                return false;
            };
            n <= MAX
                && (0..n as usize).all(|i| {
                    word(p, 24 + SIZE as usize * i + 8).is_some_and(|op| allowed.contains(&op))
                })
        }
        ParamCheck::Duration {
            at,
            infinite,
            to,
            max,
        } => {
            let at = usize::from(at);
            match (word(p, at), p.get_mut(at..at + 4)) {
                (Some(d), Some(b)) if d == infinite => {
                    b.copy_from_slice(&to.to_ne_bytes());
                    true
                }
                (Some(d), _) => d <= max,
                _ => false,
            }
        }
    }
}

/// GPU_GET_PROBED_IDS on one of this file's clients, well formed: run on a
/// kernel copy through the kernel interface, then only the probed ids of
/// GPUs this file has a vGPU on are kept, in RM's order, each with its
/// flags (the third list, from 580 on: `ctrl0000gpu.h:316-320` at
/// 595.45.04); the rest of the lists is `NV0000_CTRL_GPU_INVALID_ID` (flags
/// 0), the excluded list whole: GPUs the host left out are the host's. RM
/// writes the lists and reads nothing from them (`gpumgrGetProbedGpuIds`).
/// `None` for the driver to answer a call it would refuse as it does.
fn probed_ids(cx: &Ctx<'_>, a: &abi::Nvos54, row: &ControlRow) -> Result<Option<u32>> {
    /// Ids in each list (`NV0000_CTRL_GPU_MAX_PROBED_GPUS`).
    const MAX: usize = 32;
    const LIST: usize = 4 * MAX;
    let size = row.params_size as usize;
    if a.params_size != row.params_size
        || !(2 * LIST..=3 * LIST).contains(&size)
        || a.h_object != a.h_client
        || !cx.file.has_client(a.h_client)
    {
        return Ok(None);
    }
    let mut all = [0u8; 3 * LIST];
    let all = &mut all[..size];
    let r = cx.host.rm.control(a.h_client, a.h_object, a.cmd, all);
    if r.is_err() {
        return status::status(r).map(Some);
    }
    let word = |b: &[u8], i: usize| {
        b.get(4 * i..4 * i + 4).map_or(abi::GPU_INVALID_ID, |w| {
            u32::from_ne_bytes([w[0], w[1], w[2], w[3]])
        })
    };
    let mut mine = [0u8; 3 * LIST];
    let mine = &mut mine[..size];
    for w in mine[..2 * LIST].chunks_exact_mut(4) {
        w.copy_from_slice(&abi::GPU_INVALID_ID.to_ne_bytes());
    }
    let flags = size == 3 * LIST;
    let kept = (0..MAX)
        .map(|i| (i, word(all, i)))
        .take_while(|&(_, id)| id != abi::GPU_INVALID_ID)
        .filter(|&(_, id)| owns_gpu(cx, id));
    for (n, (i, id)) in kept.enumerate() {
        mine[4 * n..4 * n + 4].copy_from_slice(&id.to_ne_bytes());
        if flags {
            let f = word(all, 2 * MAX + i);
            mine[2 * LIST + 4 * n..2 * LIST + 4 * n + 4].copy_from_slice(&f.to_ne_bytes());
        }
    }
    Ok(Some(match user::write(a.params, mine) {
        Ok(()) => NV_OK,
        Err(_) => NV_ERR_INVALID_ARGUMENT,
    }))
}

/// GPU_GET_DEVICE_IDS on one of this file's clients, well formed: run on a
/// kernel copy through the kernel interface, then the mask of device
/// instances (`gpumgrGetDeviceInstanceMask`, `client_resource.c:1518-1529`
/// at 595.45.04) cut to the instances of the GPUs this file has a vGPU
/// on, each asked of RM by ID_INFO_V2 on the same client. `None` for the
/// driver to answer a call it would refuse as it does.
fn device_ids(cx: &Ctx<'_>, a: &abi::Nvos54) -> Result<Option<u32>> {
    if a.params_size != 4 || a.h_object != a.h_client || !cx.file.has_client(a.h_client) {
        return Ok(None);
    }
    let rm = &cx.host.rm;
    let mut p = [0u8; 4];
    let r = rm.control(a.h_client, a.h_object, a.cmd, &mut p);
    if r.is_err() {
        return status::status(r).map(Some);
    }
    let mut mine = 0u32;
    for rec in cx.host.cards.records() {
        let c = abi::CardInfo::decode(rec);
        if cx.file.vgpu_on(c.minor_number).is_none() {
            continue;
        }
        // ID_INFO_V2: `gpuId` in, `deviceInstance` at byte 8 out
        // (`ctrl0000gpu.h:176-185` at 595.45.04).
        let mut q = [0u8; 32];
        q[..4].copy_from_slice(&c.gpu_id.to_ne_bytes());
        let info = ctrl::NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2;
        if rm.control(a.h_client, a.h_client, info, &mut q).is_ok() {
            let instance = u32::from_ne_bytes([q[8], q[9], q[10], q[11]]);
            mine |= 1u32.checked_shl(instance).unwrap_or(0);
        }
    }
    let all = u32::from_ne_bytes(p);
    Ok(Some(
        match user::write(a.params, &(all & mine).to_ne_bytes()) {
            Ok(()) => NV_OK,
            Err(_) => NV_ERR_INVALID_ARGUMENT,
        },
    ))
}

/// GPU_GET_ACTIVE_DEVICE_IDS on one of this file's clients, well formed:
/// run on a kernel copy through the kernel interface, then only the
/// devices (a GPU, or a MIG compute instance of one) of GPUs this file has
/// a vGPU on are kept, in RM's order, and `numDevices` says how many
/// (`gpumgrCacheGetActiveDeviceIds`, `gpu_mgr.c:4445-4537` at 595.45.04;
/// params `ctrl0000gpu.h:996-1026`). `None` for the driver to answer a
/// call it would refuse as it does.
fn active_devices(cx: &Ctx<'_>, a: &abi::Nvos54, row: &ControlRow) -> Result<Option<u32>> {
    /// `{gpuId, gpuInstanceId, computeInstanceId}`.
    const ENTRY: usize = 12;
    let size = row.params_size as usize;
    if a.params_size != row.params_size
        || size < 4
        || a.h_object != a.h_client
        || !cx.file.has_client(a.h_client)
    {
        return Ok(None);
    }
    let mut all = KVec::from_elem(0u8, size, GFP_KERNEL)?;
    let r = cx.host.rm.control(a.h_client, a.h_object, a.cmd, &mut all);
    if r.is_err() {
        return status::status(r).map(Some);
    }
    let n = u32::from_ne_bytes([all[0], all[1], all[2], all[3]]) as usize;
    let mut mine = KVec::from_elem(0u8, size, GFP_KERNEL)?;
    let kept = all[4..]
        .chunks_exact(ENTRY)
        .take(n)
        .filter(|e| owns_gpu(cx, u32::from_ne_bytes([e[0], e[1], e[2], e[3]])));
    let mut count = 0usize;
    for (dst, e) in mine[4..].chunks_exact_mut(ENTRY).zip(kept) {
        dst.copy_from_slice(e);
        count += 1;
    }
    mine[..4].copy_from_slice(&(count as u32).to_ne_bytes());
    Ok(Some(match user::write(a.params, &mine) {
        Ok(()) => NV_OK,
        Err(_) => NV_ERR_INVALID_ARGUMENT,
    }))
}

/// FB_GET_INFO (V1 or V2), well formed, on a subdevice of this file's
/// vGPU: run as V2 on kernel copies through the kernel interface (no other
/// thread can change the request, or the answer before it is rewritten),
/// the sizes and free memory rewritten to the vGPU. Returns the RM status;
/// `None` if the request is not on this file's vGPU or is malformed, for
/// the driver to answer as it does.
fn fb_info(cx: &Ctx<'_>, a: &abi::Nvos54) -> Result<Option<u32>> {
    use abi::{FbGetInfoV1Params as V1, FbGetInfoV2Params as V2};
    const ENTRY: usize = abi::InfoEntry::SIZE;
    let Some(v) = cx.file.subdevice_vgpu(a.h_client, a.h_object) else {
        return Ok(None);
    };
    // On the stack (1 KiB): a heap buffer costs more than the rest of the
    // rewrite (`make bench`, FB info). V2's params in the driver's release:
    // its list holds 54 to 57 entries before 580, 128 from 580 on.
    let mut whole = [0u8; V2::SIZE];
    let rel = release::current();
    let max_list = rel.fb_info_entries();
    let v2 = 4 + max_list * ENTRY;
    let Some(p) = whole.get_mut(..v2) else {
        return Ok(None);
    };
    // `n` entries, and where the caller's list is: V1's by pointer, V2's at
    // byte 4 of its params (after `list_size`, which RM leaves as it was).
    // The answer is that list.
    let (n, list_at) = if a.cmd == ctrl::NV2080_CTRL_CMD_FB_GET_INFO {
        let mut b = [0u8; V1::SIZE];
        if a.params_size as usize != V1::SIZE || user::read(a.params, &mut b).is_err() {
            return Ok(None);
        }
        let q = V1::decode(&b);
        let n = q.list_size as usize;
        if n == 0 || n > max_list || q.list_ptr == 0 {
            return Ok(None);
        }
        if user::read(q.list_ptr, &mut p[4..4 + n * ENTRY]).is_err() {
            return Ok(None);
        }
        (n, q.list_ptr)
    } else {
        if a.params_size as usize != v2 || user::read(a.params, p).is_err() {
            return Ok(None);
        }
        let n = u32::from_ne_bytes([p[0], p[1], p[2], p[3]]) as usize;
        if n > max_list {
            return Ok(None);
        }
        (n, a.params + 4)
    };
    p[..4].copy_from_slice(&(n as u32).to_ne_bytes());
    let r = cx.host.rm.control(
        a.h_client,
        a.h_object,
        ctrl::NV2080_CTRL_CMD_FB_GET_INFO_V2,
        p,
    );
    if r.is_err() {
        return status::status(r).map(Some);
    }
    let ledger = v.config.lock().memory;
    let list = &mut p[4..4 + n * ENTRY];
    for chunk in list.chunks_exact_mut(ENTRY) {
        let mut e = abi::InfoEntry::decode(chunk);
        e.data = fb_info_kib(e.index, e.data, &ledger);
        e.encode(chunk);
    }
    Ok(Some(match user::write(list_at, list) {
        Ok(()) => NV_OK,
        Err(_) => NV_ERR_INVALID_ARGUMENT,
    }))
}

/// A tenant's scheduling control, decided and executed on kernel copies
/// (never forwarded, so no other thread can change what the driver acts
/// on), by `run` once the client is found to be this file's.
///
/// - GPFIFO_SCHEDULE (TSG or channel) and FIFO_DISABLE_CHANNELS on this
///   file's own TSGs and channels: a disable applies at once, an enable
///   only within the vGPU's window (else it is recorded and applied when
///   the window opens). Any other target is refused.
/// - MAKE_REALTIME is denied by its row (default deny, before any
///   handler): a realtime TSG could preempt other vGPUs' windows, and
///   nothing a container runs needs it.
/// - SET_TIMESLICE and SET_INTERLEAVE_LEVEL are applied to this file's own
///   TSGs only: only one vGPU's TSGs are enabled at a time, so they order
///   that vGPU's work inside its own window.
fn scheduling(
    cx: &Ctx<'_>,
    a: &abi::Nvos54,
    run: impl FnOnce(&Ctx<'_>, &abi::Nvos54) -> RmResult,
) -> RmResult {
    if !cx.file.has_client(a.h_client) {
        return Err(Fail::Rm(NV_ERR_INVALID_CLIENT));
    }
    run(cx, a)
}

/// SET_TIMESLICE or SET_INTERLEAVE_LEVEL (`size` bytes of params) on one of
/// this file's TSGs.
fn tsg_setting(cx: &Ctx<'_>, a: &abi::Nvos54, size: usize) -> RmResult {
    let mut p = [0u8; abi::TimesliceParams::SIZE];
    let p = p.get_mut(..size).ok_or(Fail::Rm(NV_ERR_INVALID_ARGUMENT))?;
    control_params(a, p).map_err(Fail::Rm)?;
    if target(cx, a, Kind::Tsg, |o| o.sched.is_some()) != Some(true) {
        return Err(Fail::Rm(NV_ERR_INVALID_OBJECT_HANDLE));
    }
    cx.host.rm.control(a.h_client, a.h_object, a.cmd, p)
}

/// GR_SET_CTXSW_PREEMPTION_MODE on this file's subdevice, executed on a
/// kernel copy (another thread cannot turn the mode into WFI after the
/// check). A compute mode of WFI (`flags` with `CILP_SET`, mode
/// `COMPUTE_WFI`, `ctrl/ctrl2080/ctrl2080gr.h:826-850` at 595.45.04) is
/// refused with `NV_ERR_NOT_SUPPORTED`, the status the header gives a
/// channel whose mode cannot be changed (`ctrl2080gr.h:785-786`): a context
/// that is switched out only when idle would hold the engine past its
/// vGPU's window for as long as its kernel runs, so the time-slice quota
/// would not hold. The other modes switch within an item and are set as
/// asked; RM looks the channel up in the caller's client.
fn preemption_mode(cx: &Ctx<'_>, a: &abi::Nvos54) -> RmResult {
    use abi::{preemption, CtxswPreemptionModeParams as Params};
    let mut p = [0u8; Params::SIZE];
    control_params(a, &mut p).map_err(Fail::Rm)?;
    if target(cx, a, Kind::Subdevice, |_| ()).is_none() {
        return Err(Fail::Rm(NV_ERR_INVALID_OBJECT_HANDLE));
    }
    let q = Params::decode(&p);
    if q.flags & preemption::FLAGS_CILP_SET != 0 && q.cilp_preempt_mode == preemption::COMPUTE_WFI {
        return Err(Fail::Rm(NV_ERR_NOT_SUPPORTED));
    }
    cx.host.rm.control(a.h_client, a.h_object, a.cmd, &mut p)
}

/// GPFIFO_SCHEDULE on one of this file's objects of `kind` (a TSG or a
/// channel), by the vGPU's schedule.
fn gpfifo(cx: &Ctx<'_>, a: &abi::Nvos54, row: &ControlRow, kind: Kind) -> RmResult {
    let rm = &cx.host.rm;
    // The release's params (2 bytes before 580, whose missing
    // `bSkipEnable` decodes as 0).
    let mut p = [0u8; abi::GpfifoScheduleParams::SIZE];
    let n = row.params_size as usize;
    let p = p.get_mut(..n).ok_or(Fail::Rm(NV_ERR_INVALID_ARGUMENT))?;
    control_params(a, p).map_err(Fail::Rm)?;
    let found = target(cx, a, kind, |o| Some((o.gpu, o.sched.clone()?))).flatten();
    let Some((gpu, e)) = found else {
        return Err(Fail::Rm(NV_ERR_INVALID_OBJECT_HANDLE));
    };
    let Some(g) = cx.host.sched(gpu) else {
        return Err(Fail::Rm(NV_ERR_INVALID_OBJECT_HANDLE));
    };
    let enable = abi::GpfifoScheduleParams::decode(p).b_enable != 0;
    g.request(e.vgpu(), &[e.id()], enable, || {
        rm.control(a.h_client, a.h_object, a.cmd, p)
    })
}

/// FIFO_DISABLE_CHANNELS on a subdevice: every listed channel must be one
/// of this file's on that GPU, or nothing happens.
fn disable_channels(cx: &Ctx<'_>, a: &abi::Nvos54) -> RmResult {
    let mut p = KVec::from_elem(0u8, abi::FifoDisableChannelsParams::SIZE, GFP_KERNEL)?;
    control_params(a, &mut p).map_err(Fail::Rm)?;
    let q = abi::FifoDisableChannelsParams::decode(&p);
    // The event pointer would be read at kernel privilege: refused.
    if q.num_channels as usize > abi::DISABLE_CHANNELS_MAX_ENTRIES || q.p_runlist_preempt_event != 0
    {
        return Err(Fail::Rm(NV_ERR_INVALID_ARGUMENT));
    }
    let mut ids = KVec::new();
    let mut vgpu = None;
    let gpu = {
        let t = cx.file.objects.lock();
        let gpu = match t.obj(a.h_client, a.h_object) {
            Some(o) if o.kind == Kind::Subdevice => o.gpu,
            _ => return Err(Fail::Rm(NV_ERR_INVALID_OBJECT_HANDLE)),
        };
        for (client, h) in q.entries() {
            let e = t
                .obj(client, h)
                .filter(|o| o.gpu == gpu && matches!(o.kind, Kind::Channel | Kind::Tsg))
                .and_then(|o| o.sched.clone());
            let Some(e) = e else {
                return Err(Fail::Rm(NV_ERR_INSUFFICIENT_PERMISSIONS));
            };
            ids.push(e.id(), GFP_KERNEL)?;
            vgpu = Some(e.vgpu().clone());
        }
        gpu
    };
    let (Some(v), Some(g)) = (vgpu, cx.host.sched(gpu)) else {
        // No channels listed: nothing to do.
        return Ok(());
    };
    g.request(&v, &ids, q.b_disable == 0, || {
        cx.host.rm.control(a.h_client, a.h_object, a.cmd, &mut p)
    })
}

/// The kind of object a control of `cmd`'s class runs on: NV0080's on a
/// device, NV2080's on a subdevice; `None` for the other classes.
fn target_kind(cmd: u32) -> Option<Kind> {
    match cmd >> 16 {
        0x0080 => Some(Kind::Device),
        0x2080 => Some(Kind::Subdevice),
        _ => None,
    }
}

/// What `read` takes from the object control `a` names, if that object is
/// one of this file's and of `kind`: the one lookup of a control's target.
fn target<T>(cx: &Ctx<'_>, a: &abi::Nvos54, kind: Kind, read: impl FnOnce(&Obj) -> T) -> Option<T> {
    cx.file
        .objects
        .lock()
        .obj(a.h_client, a.h_object)
        .filter(|o| o.kind == kind)
        .map(read)
}

/// Forwards a control. A control is read from the caller's memory twice
/// (by vgpu, then by the driver), so another thread may turn it into a
/// scheduling call on the way: it runs under the rules of
/// [`crate::sched::GpuSched::in_window`] for this file's first vGPU that
/// has TSGs (or its first vGPU), and the file's other vGPUs, on other GPUs,
/// have their TSGs disabled again afterwards unless their window is open.
fn forwarded(host: &Host, file: &CtlFile, call: impl FnOnce() -> Result<isize>) -> Result<isize> {
    let rm: &RmOps = &host.rm;
    let sched_of = |v: &Arc<Vgpu>| {
        let gpu = v.config.lock().gpu;
        gpu.and_then(|g| host.sched(g))
    };
    let first = file
        .vgpus
        .iter()
        .find(|v| v.compute.lock().objects() > 0)
        .or(file.vgpus.first());
    let Some((first, g)) = first.and_then(|v| Some((v, sched_of(v)?))) else {
        return call();
    };
    let r = g.in_window(rm, first, call)?;
    for v in file.vgpus.iter().filter(|v| !Arc::ptr_eq(v, first)) {
        if let Some(g) = sched_of(v) {
            g.restop(rm, v)?;
        }
    }
    r
}
