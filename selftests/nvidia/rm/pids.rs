// SPDX-License-Identifier: GPL-2.0

//! The process lists of a GPU (NV2080 GET_PIDS, GET_PID_INFO): which
//! processes use it, and how much of its memory.

use kernel::prelude::*;

use super::call::Ctl;
use super::state::{Client, Driver, Rm};
use crate::base::{ObjKind, StatusResult};
use crate::nv::abi::{self, class, status::*, Wire};
use crate::settings;

impl Driver {
    /// NV2080_CTRL_CMD_GPU_GET_PIDS ([`Rm::pids_into`]).
    pub(crate) fn get_pids(&self, c: Ctl<'_>) -> StatusResult {
        let gpu = c.gpu()?;
        if c.p.len() != abi::GetPidsParams::SIZE {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        c.rm.pids_into(gpu, c.p)
    }

    /// NV2080_CTRL_CMD_GPU_GET_PID_INFO ([`Rm::pid_info_into`]).
    pub(crate) fn get_pid_info(&self, mut c: Ctl<'_>) -> StatusResult {
        let gpu = c.gpu()?;
        if c.p.len() != abi::GetPidInfoParams::SIZE {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        c.rm.pid_info_into(gpu, c.p)
    }
}

/// Whether GET_PID_INFO numbers a client's process in the caller's PID
/// namespace (from 565.57: `_gpuMatchClientPid`, `gpu/gpu_rmapi.c:973-988`
/// at 570.211.01) or compares its host PID (`ProcID == pid`,
/// `gpu_rmapi.c:982-983` at 550.163.01; 535.288.01 likewise).
fn pid_info_in_caller_ns() -> bool {
    let major = settings::release()
        .split('.')
        .next()
        .and_then(|m| m.parse::<u32>().ok())
        .unwrap_or(0);
    major >= 565
}

/// A client's process as the caller's PID namespace numbers it, as
/// `_gpuConvertPid` does (`gpu/gpu_rmapi.c:810-822` at 595.45.04): by its
/// `struct pid` (0 where the namespace cannot see it), else its `ProcID`.
fn ns_pid(c: &Client) -> u32 {
    match &c.pid {
        Some(p) => p.nr_seen_by_caller().max(0) as u32,
        None => c.proc as u32,
    }
}

impl Rm {
    /// GPU_GET_PIDS on GPU `gpu` (`subdeviceCtrlCmdGpuGetPids_IMPL`,
    /// `gpu/subdevice/subdevice_ctrl_gpu_kernel.c:2242-2321`;
    /// `gpuGetProcWithObject_IMPL`, `gpu/gpu_rmapi.c:833-1010`, at
    /// 595.45.04): every client of every process, kernel clients left out,
    /// that has a device on the GPU and an object of class `id` (for
    /// NV20_SUBDEVICE_0, any subdevice; for another class, an engine object
    /// of that class on the GPU), numbered in the caller's PID namespace
    /// (a process it cannot see is left out), each process once, at most
    /// 950. GUESS: RM skips a process already listed by comparing its host
    /// `ProcID` with the namespace PIDs listed; the double compares
    /// namespace PIDs.
    fn pids_into(&self, gpu: u32, p: &mut [u8]) -> StatusResult {
        use abi::pids;
        let id_type: u32 = abi::read_field(p, 0);
        let id: u32 = abi::read_field(p, 4);
        match id_type {
            pids::GET_PIDS_ID_TYPE_CLASS => {}
            // No vGPU guests on the double's GPUs.
            pids::GET_PIDS_ID_TYPE_VGPU_GUEST => {
                p[8..12].copy_from_slice(&0u32.to_ne_bytes());
                return Ok(());
            }
            _ => return Err(NV_ERR_INVALID_ARGUMENT),
        }
        let mut n = 0usize;
        for c in self.clients.iter().filter(|c| c.file != 0) {
            if n == pids::GET_PIDS_MAX_COUNT as usize {
                break;
            }
            let on_gpu = c.objects.iter().any(|o| o.kind == ObjKind::Device { gpu });
            let has = c.objects.iter().any(|o| match o.kind {
                ObjKind::Subdevice { .. } => id == class::NV20_SUBDEVICE_0,
                ObjKind::Engine { gpu: g, class } => g == gpu && class == id,
                _ => false,
            });
            if !on_gpu || !has {
                continue;
            }
            let pid = ns_pid(c);
            let listed = (0..n).any(|k| {
                let at = abi::GetPidsParams::PID_TBL + k * 4;
                abi::read_field::<u32>(p, at) == pid
            });
            if pid == 0 || listed {
                continue;
            }
            let at = abi::GetPidsParams::PID_TBL + n * 4;
            p[at..at + 4].copy_from_slice(&pid.to_ne_bytes());
            n += 1;
        }
        p[8..12].copy_from_slice(&(n as u32).to_ne_bytes());
        Ok(())
    }

    /// GPU_GET_PID_INFO on GPU `gpu` (`subdeviceCtrlCmdGpuGetPidInfo_IMPL`,
    /// `subdevice_ctrl_gpu_kernel.c:2328-2400`;
    /// `gpuFindClientInfoWithPidIterator_IMPL` and `_gpuCollectMemInfo`,
    /// `gpu/gpu_rmapi.c` at 595.45.04): for each entry, the video memory
    /// of every client of that process (kernel clients left out) under its
    /// devices on the GPU: VRAM held by one handle is `memPrivate`, by
    /// several `memSharedOwned` (GUESS: RM tells the handle that owns the
    /// memory, `memSharedOwned`, from its duplicates, `memSharedDuped`;
    /// the double does not record which handle came first). A PID no
    /// client has gives zeros, NV_OK.
    fn pid_info_into(&mut self, gpu: u32, p: &mut [u8]) -> StatusResult {
        use abi::pids;
        const ENTRY: usize = abi::PidInfo::SIZE;
        let count: u32 = abi::read_field(p, 0);
        if count == 0 || count > pids::GET_PID_INFO_MAX_COUNT {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        let in_ns = pid_info_in_caller_ns();
        for i in 0..count as usize {
            let at = abi::GetPidInfoParams::LIST + i * ENTRY;
            let mut e = abi::PidInfo::decode(&p[at..at + ENTRY]);
            e.compute_instance_id = pids::PARTITION_ID_INVALID;
            e.gpu_instance_id = pids::PARTITION_ID_INVALID;
            if e.index != pids::PID_INFO_INDEX_VIDEO_MEMORY_USAGE {
                e.result = NV_ERR_INVALID_ARGUMENT;
            } else {
                e.clear_usage();
                e.result = if e.pid == 0 {
                    NV_ERR_INVALID_ARGUMENT
                } else {
                    NV_OK
                };
                for ci in 0..self.clients.len() {
                    let c = &self.clients[ci];
                    let pid = if in_ns { ns_pid(c) } else { c.proc as u32 };
                    if e.pid == 0 || c.file == 0 || pid != e.pid {
                        continue;
                    }
                    let mut mems = KVec::new();
                    for o in c.objects.iter() {
                        if let ObjKind::Memory { mem } = o.kind {
                            if c.gpu_of(o.parent) == Some(gpu) {
                                mems.push(mem, GFP_KERNEL).map_err(|_| NV_ERR_NO_MEMORY)?;
                            }
                        }
                    }
                    for mem in mems {
                        if let Some(m) = self.mem(mem).filter(|m| m.vram) {
                            if m.refs > 1 {
                                e.mem_shared_owned += m.size;
                            } else {
                                e.mem_private += m.size;
                            }
                        }
                    }
                }
            }
            e.encode(&mut p[at..at + ENTRY]);
        }
        Ok(())
    }
}
