// SPDX-License-Identifier: GPL-2.0

//! GPU_GET_PIDS and GPU_GET_PID_INFO: what nvidia-smi and NVML ask to list
//! a GPU's processes and their memory (`nvmlDeviceGetComputeRunningProcesses`
//! asks GET_PIDS for the GPU's compute class, then GET_PID_INFO for each
//! PID's video memory).
//!
//! RM answers both from every client on the GPU, other tenants' included
//! (`gpuGetProcWithObject_IMPL`, `gpuFindClientInfoWithPidIterator_IMPL`,
//! `gpu/gpu_rmapi.c` at 595.45.04): forwarded, a container would list its
//! neighbours' processes wherever its PID namespace can see them (all of
//! them, in the host's), and their memory. vgpu answers both itself, from
//! the caller's vGPU's list of processes (`src/procs.rs`): its container's
//! processes only, each numbered in the caller's PID namespace and left
//! out where that namespace cannot see it, with the bytes its ledger
//! charged each. The driver never sees these calls.

use kernel::prelude::*;

use super::ctx::{control_params, Ctx};
use crate::kapi::user;
use crate::nv::abi::{self, class, ctrl, pids, status::*, Wire};
use crate::nv::release;
use crate::nv::table::Family;
use crate::procs::Counter;
use crate::status::{Fail, RmResult};
use crate::vgpu::Vgpu;
use kernel::sync::Arc;

/// Answers GPU_GET_PIDS or GPU_GET_PID_INFO (`a.cmd`) of `a` in place;
/// returns the RM status.
pub(super) fn processes(cx: &Ctx<'_>, a: &abi::Nvos54, params_size: usize) -> RmResult {
    let v = own_subdevice_vgpu(cx, a)?;
    let mut p = KVec::from_elem(0u8, params_size, GFP_KERNEL)?;
    control_params(a, &mut p).map_err(Fail::Rm)?;
    if a.cmd == ctrl::NV2080_CTRL_CMD_GPU_GET_PIDS {
        get_pids(&v, &mut p)?;
    } else {
        get_pid_info(&v, &mut p)?;
    }
    user::write(a.params, &p).map_err(|_| Fail::Rm(NV_ERR_INVALID_ADDRESS))
}

/// The vGPU of the subdevice `a` names, which must be one of the caller's
/// file (RM's own checks, in this order: the client is the caller's, the
/// object is in it, it is a subdevice).
pub(super) fn own_subdevice_vgpu(cx: &Ctx<'_>, a: &abi::Nvos54) -> RmResult<Arc<Vgpu>> {
    if !cx.file.has_client(a.h_client) {
        return Err(Fail::Rm(NV_ERR_INVALID_CLIENT));
    }
    cx.file
        .subdevice_vgpu(a.h_client, a.h_object)
        .ok_or(Fail::Rm(NV_ERR_INVALID_OBJECT_HANDLE))
}

/// Which processes GET_PIDS of class `id` lists: those with a subdevice
/// (`NV20_SUBDEVICE_0`: any process with a device on the GPU, as RM), or
/// with a channel (a class RM creates in channels, compute and copy: every
/// such object is in a channel of the process, and a CUDA channel has
/// both). `None`: no container process can hold an object of that class
/// (MPS servers are not tracked; anything else the table refuses).
fn counter_for(id: u32) -> Option<Counter> {
    if id == class::NV20_SUBDEVICE_0 {
        return Some(Counter::Device);
    }
    match release::current().class_row(id) {
        Some(r) if r.family == Family::Engine && r.policy.admits() => Some(Counter::Channel),
        _ => None,
    }
}

/// GET_PIDS: `pidTblCount` and `pidTbl` filled with the vGPU's processes
/// that hold what class `id` asks for and that the caller's PID namespace
/// can see, as RM fills them (at most 950; no duplicates).
fn get_pids(v: &Vgpu, p: &mut [u8]) -> RmResult {
    const COUNT: usize = abi::field_offset(abi::GetPidsParams::FIELDS, "pid_tbl_count");
    let id_type: u32 = abi::read_field(p, 0);
    let id: u32 = abi::read_field(p, 4);
    let counter = match id_type {
        pids::GET_PIDS_ID_TYPE_CLASS => counter_for(id),
        // Processes of vGPU guests: a container has none.
        pids::GET_PIDS_ID_TYPE_VGPU_GUEST => None,
        _ => return Err(Fail::Rm(NV_ERR_INVALID_ARGUMENT)),
    };
    let mut n = 0usize;
    if let Some(c) = counter {
        let procs = v.procs.lock();
        for u in procs.visible().filter(|u| u.held(c) > 0) {
            if n == pids::GET_PIDS_MAX_COUNT as usize {
                break;
            }
            let pid = u.pid().nr_seen_by_caller();
            if pid <= 0 {
                continue;
            }
            let at = abi::GetPidsParams::PID_TBL + n * 4;
            p.get_mut(at..at + 4)
                .ok_or(Fail::Rm(NV_ERR_INVALID_ARGUMENT))?
                .copy_from_slice(&(pid as u32).to_ne_bytes());
            n += 1;
        }
    }
    p.get_mut(COUNT..COUNT + 4)
        .ok_or(Fail::Rm(NV_ERR_INVALID_ARGUMENT))?
        .copy_from_slice(&(n as u32).to_ne_bytes());
    Ok(())
}

/// GET_PID_INFO: each entry answered for the vGPU's process with that PID
/// in the caller's namespace, as RM answers it
/// (`subdeviceCtrlCmdGpuGetPidInfo_IMPL`,
/// `gpu/subdevice/subdevice_ctrl_gpu_kernel.c:2328-2400` at 595.45.04):
/// a list of 0 or more than 200 entries is NV_ERR_INVALID_ARGUMENT; each
/// entry's MIG ids are PARTITION_ID_INVALID; an index other than
/// VIDEO_MEMORY_USAGE, or PID 0, is that entry's NV_ERR_INVALID_ARGUMENT;
/// a PID none of the vGPU's processes has is NV_OK with zeros, as RM
/// answers a PID it has no client of. The bytes are what the process is
/// charged, all as `memPrivate` (vgpu charges shared memory once, to the
/// process that allocated it), so the entries of all its processes add up
/// to the vGPU's `memory_used`.
fn get_pid_info(v: &Vgpu, p: &mut [u8]) -> RmResult {
    const ENTRY: usize = abi::PidInfo::SIZE;
    let count: u32 = abi::read_field(p, 0);
    if count == 0 || count > pids::GET_PID_INFO_MAX_COUNT {
        return Err(Fail::Rm(NV_ERR_INVALID_ARGUMENT));
    }
    let procs = v.procs.lock();
    for i in 0..count as usize {
        let at = abi::GetPidInfoParams::LIST + i * ENTRY;
        let slot = p
            .get_mut(at..at + ENTRY)
            .ok_or(Fail::Rm(NV_ERR_INVALID_ARGUMENT))?;
        let mut e = abi::PidInfo::decode(slot);
        e.compute_instance_id = pids::PARTITION_ID_INVALID;
        e.gpu_instance_id = pids::PARTITION_ID_INVALID;
        if e.index != pids::PID_INFO_INDEX_VIDEO_MEMORY_USAGE {
            e.result = NV_ERR_INVALID_ARGUMENT;
        } else {
            e.clear_usage();
            if e.pid == 0 {
                e.result = NV_ERR_INVALID_ARGUMENT;
            } else {
                e.result = NV_OK;
                let seen =
                    |u: &&Arc<crate::procs::ProcUse>| u.pid().nr_seen_by_caller() == e.pid as i32;
                if let Some(u) = procs.visible().find(seen) {
                    e.mem_private = u.bytes();
                }
            }
        }
        e.encode(slot);
    }
    Ok(())
}
