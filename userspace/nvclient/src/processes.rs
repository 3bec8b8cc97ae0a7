// SPDX-License-Identifier: GPL-2.0

//! The process queries nvidia-smi and NVML send: GPU_GET_PIDS (which
//! processes use a GPU) and GPU_GET_PID_INFO (each one's video memory).

use crate::abi::{ctrl, pids, GetPidInfoParams, GetPidsParams, Handle, PidInfo, Wire};
use crate::{Ctl, Error, Result};

/// One process's video memory, as GPU_GET_PID_INFO answers it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PidMemory {
    /// The PID asked about.
    pub pid: u32,
    /// The entry's status.
    pub result: u32,
    /// `memPrivate`.
    pub private: u64,
    /// `memSharedOwned`.
    pub shared_owned: u64,
    /// `memSharedDuped`.
    pub shared_duped: u64,
}

impl Ctl {
    /// NV2080_CTRL_CMD_GPU_GET_PIDS on a subdevice: the processes with an
    /// object of class `class` on its GPU, as the caller's PID namespace
    /// numbers them.
    pub fn get_pids(&self, h_client: Handle, h_subdevice: Handle, class: u32) -> Result<Vec<u32>> {
        let mut p = vec![0u8; GetPidsParams::SIZE];
        p[0..4].copy_from_slice(&pids::GET_PIDS_ID_TYPE_CLASS.to_ne_bytes());
        p[4..8].copy_from_slice(&class.to_ne_bytes());
        self.control(
            h_client,
            h_subdevice,
            ctrl::NV2080_CTRL_CMD_GPU_GET_PIDS,
            &mut p,
        )?;
        let n = u32::from_ne_bytes([p[8], p[9], p[10], p[11]]) as usize;
        if n > pids::GET_PIDS_MAX_COUNT as usize {
            return Err(Error::Invalid(
                "GET_PIDS answered more PIDs than its table holds",
            ));
        }
        Ok((0..n)
            .map(|k| {
                let at = GetPidsParams::PID_TBL + 4 * k;
                u32::from_ne_bytes([p[at], p[at + 1], p[at + 2], p[at + 3]])
            })
            .collect())
    }

    /// NV2080_CTRL_CMD_GPU_GET_PID_INFO on a subdevice: the video memory of
    /// each of `pids` (1 to 200) on its GPU.
    pub fn pid_memory(
        &self,
        h_client: Handle,
        h_subdevice: Handle,
        pids_asked: &[u32],
    ) -> Result<Vec<PidMemory>> {
        self.pid_info_raw(
            h_client,
            h_subdevice,
            pids_asked,
            pids::PID_INFO_INDEX_VIDEO_MEMORY_USAGE,
        )
    }

    /// GPU_GET_PID_INFO with info index `index` for each of `pids` (its
    /// count unchecked here, so a caller can send 0 or too many).
    pub fn pid_info_raw(
        &self,
        h_client: Handle,
        h_subdevice: Handle,
        pids_asked: &[u32],
        index: u32,
    ) -> Result<Vec<PidMemory>> {
        const ENTRY: usize = PidInfo::SIZE;
        let mut p = vec![0u8; GetPidInfoParams::SIZE];
        p[0..4].copy_from_slice(&(pids_asked.len() as u32).to_ne_bytes());
        for (i, &pid) in pids_asked
            .iter()
            .take(pids::GET_PID_INFO_MAX_COUNT as usize)
            .enumerate()
        {
            let at = GetPidInfoParams::LIST + i * ENTRY;
            // Garbage in the answer fields: RM must overwrite them.
            let e = PidInfo {
                pid,
                index,
                result: 0xdead,
                mem_private: 0x5a5a,
                mem_shared_owned: 0x5a5a,
                mem_shared_duped: 0x5a5a,
                protected_mem_private: 0,
                protected_mem_shared_owned: 0,
                protected_mem_shared_duped: 0,
                compute_instance_id: 7,
                gpu_instance_id: 7,
            };
            e.encode(&mut p[at..at + ENTRY]);
        }
        self.control(
            h_client,
            h_subdevice,
            ctrl::NV2080_CTRL_CMD_GPU_GET_PID_INFO,
            &mut p,
        )?;
        Ok(pids_asked
            .iter()
            .take(pids::GET_PID_INFO_MAX_COUNT as usize)
            .enumerate()
            .map(|(i, _)| {
                let at = GetPidInfoParams::LIST + i * ENTRY;
                let e = PidInfo::decode(&p[at..at + ENTRY]);
                PidMemory {
                    pid: e.pid,
                    result: e.result,
                    private: e.mem_private,
                    shared_owned: e.mem_shared_owned,
                    shared_duped: e.mem_shared_duped,
                }
            })
            .collect())
    }
}
