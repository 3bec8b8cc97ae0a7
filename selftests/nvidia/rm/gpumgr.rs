// SPDX-License-Identifier: GPL-2.0

//! The NV0000 controls of RM's GPU manager that NVML asks before it opens
//! a device (`nvmlInit`, `nvmlDeviceGetCount`): where each probed GPU is,
//! whether it is being drained, and attaching and detaching ids. Each is
//! cited at 550.163.01 (`src/nvidia/src/kernel/rmapi/client_resource.c`
//! and `gpu_mgr/gpu_mgr.c`); 535.261.03 has the same code.

use super::call::Ctl;
use super::state::Driver;
use crate::base::{gpu_id_of, StatusResult};
use crate::nv::abi::{self, status::*};

/// NV0000_CTRL_CMD_GPU_GET_PCI_INFO (`ctrl0000gpu.h:321` at 550.163.01).
pub(crate) const GPU_GET_PCI_INFO: u32 = 0x21b;
/// NV0000_CTRL_CMD_GPU_ATTACH_IDS (`ctrl0000gpu.h:380`).
pub(crate) const GPU_ATTACH_IDS: u32 = 0x215;
/// NV0000_CTRL_CMD_GPU_DETACH_IDS (`ctrl0000gpu.h:433`).
pub(crate) const GPU_DETACH_IDS: u32 = 0x216;
/// NV0000_CTRL_CMD_GPU_GET_ID_INFO (`ctrl0000gpu.h:73`).
pub(crate) const GPU_GET_ID_INFO: u32 = 0x202;
/// NV0000_CTRL_CMD_GPU_GET_INIT_STATUS (`ctrl0000gpu.h:222`).
pub(crate) const GPU_GET_INIT_STATUS: u32 = 0x203;
/// NV0000_CTRL_CMD_GPU_ASYNC_ATTACH_ID (`ctrl0000gpu.h:1055`).
pub(crate) const GPU_ASYNC_ATTACH_ID: u32 = 0x289;
/// NV0000_CTRL_CMD_GPU_WAIT_ATTACH_ID (`ctrl0000gpu.h:1090`).
pub(crate) const GPU_WAIT_ATTACH_ID: u32 = 0x290;
/// NV0000_CTRL_CMD_GPU_QUERY_DRAIN_STATE (`ctrl0000gpu.h:736`).
pub(crate) const GPU_QUERY_DRAIN_STATE: u32 = 0x279;

/// The id lists' length (NV0000_CTRL_GPU_MAX_PROBED_GPUS,
/// NV0000_CTRL_GPU_MAX_ATTACHED_GPUS: 32).
const MAX_IDS: usize = 32;

/// `gpuIds[0]` meaning every probed (attach) or attached (detach) GPU
/// (NV0000_CTRL_GPU_ATTACH_ALL_PROBED_IDS,
/// NV0000_CTRL_GPU_DETACH_ALL_ATTACHED_IDS: 0x0000ffff).
const ALL_IDS: u32 = 0x0000_ffff;

/// The `u32` at byte `at` of `p`.
fn word(p: &[u8], at: usize) -> u32 {
    abi::read_field(p, at)
}

/// Writes `v` at byte `at` of `p`.
fn put(p: &mut [u8], at: usize, v: u32) {
    if let Some(s) = p.get_mut(at..at + 4) {
        s.copy_from_slice(&v.to_ne_bytes());
    }
}

impl Driver {
    /// The index of the GPU with gpu_id `id` (RM's `probedGpus[]`).
    pub(super) fn probed(&self, id: u32) -> Option<u32> {
        (0..self.gpus.len() as u32).find(|&i| gpu_id_of(i) == id)
    }

    /// NV0000_CTRL_CMD_GPU_GET_PCI_INFO: `{u32 gpuId, domain; u16 bus,
    /// slot}` (`ctrl0000gpu.h:325-330`), the
    /// probed GPU's location (`cliresCtrlCmdGpuGetPciInfo_IMPL`,
    /// `client_resource.c:1472-1492`); an id RM did not probe is
    /// NV_ERR_OBJECT_NOT_FOUND, which NVML tells apart from other errors
    /// (`gpumgrGetProbedGpuDomainBusDevice`, `gpu_mgr.c:2513-2546`). The
    /// location is CARD_INFO's: domain 0, bus N + 1, slot 0.
    pub(crate) fn gpu_pci_info(&self, c: Ctl<'_>) -> StatusResult {
        if c.p.len() != 12 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        let gpu = self.probed(word(c.p, 0)).ok_or(NV_ERR_OBJECT_NOT_FOUND)?;
        put(c.p, 4, 0);
        // bus (u16) and slot (u16, 0) in one word.
        put(c.p, 8, gpu + 1);
        Ok(())
    }

    /// NV0000_CTRL_CMD_GPU_QUERY_DRAIN_STATE: `{gpuId; drainState; flags}`
    /// (`cliresCtrlCmdGpuQueryGpuDrainState_IMPL`,
    /// `client_resource.c:4305-4328`; `gpumgrQueryGpuDrainState`,
    /// `gpu_mgr.c:3130-3173`): the double drains no GPU, so DISABLED (0)
    /// and no flags; an id RM did not probe is NV_ERR_OBJECT_NOT_FOUND.
    pub(crate) fn gpu_query_drain_state(&self, c: Ctl<'_>) -> StatusResult {
        if c.p.len() != 12 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        self.probed(word(c.p, 0)).ok_or(NV_ERR_OBJECT_NOT_FOUND)?;
        put(c.p, 4, 0);
        put(c.p, 8, 0);
        Ok(())
    }

    /// NV0000_CTRL_CMD_GPU_ATTACH_IDS: `gpuIds[32]`, ended by
    /// NV0000_CTRL_GPU_INVALID_ID, then `failedId` (`ctrl0000gpu.h:386-389`,
    /// left as sent: RM's core does not set it). RM only checks each id against the
    /// probed ones (NV_ERR_INVALID_ARGUMENT for another; ALL_PROBED_IDS is
    /// accepted as it is): attaching happens in userspace
    /// (`cliresCtrlCmdGpuAttachIds_IMPL`, `client_resource.c:1547-1592`).
    pub(crate) fn gpu_attach_ids(&self, c: Ctl<'_>) -> StatusResult {
        if c.p.len() != 4 * MAX_IDS + 4 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        if word(c.p, 0) == ALL_IDS {
            return Ok(());
        }
        for k in 0..MAX_IDS {
            let id = word(c.p, 4 * k);
            if id == abi::GPU_INVALID_ID {
                break;
            }
            self.probed(id).ok_or(NV_ERR_INVALID_ARGUMENT)?;
        }
        Ok(())
    }

    /// NV0000_CTRL_CMD_GPU_DETACH_IDS: `gpuIds[32]`. RM checks only the
    /// first id against the attached ones (its loop breaks after it:
    /// NV_ERR_INVALID_ARGUMENT where it is not attached) and detaches
    /// nothing (`cliresCtrlCmdGpuDetachIds_IMPL`,
    /// `client_resource.c:1679-1739`). Every GPU of the double is
    /// attached.
    pub(crate) fn gpu_detach_ids(&self, c: Ctl<'_>) -> StatusResult {
        if c.p.len() != 4 * MAX_IDS {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        let first = word(c.p, 0);
        if first == ALL_IDS || first == abi::GPU_INVALID_ID {
            return Ok(());
        }
        self.probed(first).map(drop).ok_or(NV_ERR_INVALID_ARGUMENT)
    }

    /// NV0000_CTRL_CMD_GPU_ASYNC_ATTACH_ID: `{gpuId}`, checked against the
    /// probed ids (NV_ERR_INVALID_ARGUMENT for another); the attach itself
    /// is userspace's (`cliresCtrlCmdGpuAsyncAttachId_IMPL`,
    /// `client_resource.c:1602-1641`).
    pub(crate) fn gpu_async_attach_id(&self, c: Ctl<'_>) -> StatusResult {
        if c.p.len() != 4 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        self.probed(word(c.p, 0))
            .map(drop)
            .ok_or(NV_ERR_INVALID_ARGUMENT)
    }

    /// NV0000_CTRL_CMD_GPU_WAIT_ATTACH_ID: `{gpuId}`; RM tracks no
    /// background attach and answers NV_OK
    /// (`cliresCtrlCmdGpuWaitAttachId_IMPL`, `client_resource.c:1649-1669`).
    pub(crate) fn gpu_wait_attach_id(&self, c: Ctl<'_>) -> StatusResult {
        if c.p.len() != 4 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        Ok(())
    }

    /// NV0000_CTRL_CMD_GPU_GET_INIT_STATUS: `{gpuId; status}`, the status
    /// of the probed GPU's initialisation (`gpumgrGetGpuInitStatus`,
    /// `gpu_mgr.c:2475-2510`): every GPU of the double was initialised
    /// without error (NV_OK); an id RM did not probe is
    /// NV_ERR_INVALID_ARGUMENT.
    pub(crate) fn gpu_init_status(&self, c: Ctl<'_>) -> StatusResult {
        if c.p.len() != 8 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        self.probed(word(c.p, 0)).ok_or(NV_ERR_INVALID_ARGUMENT)?;
        put(c.p, 4, NV_OK);
        Ok(())
    }

    /// NV0000_CTRL_CMD_GPU_GET_ID_INFO, the deprecated form RM answers from
    /// the V2 one (`gpumgrGetGpuIdInfo`, `gpu_mgr.c:2444-2466`;
    /// `gpumgrGetGpuIdInfoV2`, `:2322-2443`): `{gpuId, gpuFlags,
    /// deviceInstance, subDeviceInstance; NvP64 szName; sliStatus, boardId,
    /// gpuInstance; NvS32 numaId}` (`ctrl0000gpu.h:81-91`, 40 bytes;
    /// `szName` is not touched). An id of no attached GPU is
    /// NV_ERR_INVALID_ARGUMENT. GUESS: flags, SLI status and board id 0
    /// (RM sets the in-use flag for a GPU with clients, `gpuIsInUse`; an
    /// H100 has no SLI).
    pub(crate) fn gpu_id_info_v1(&self, c: Ctl<'_>) -> StatusResult {
        if c.p.len() != 40 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        let gpu = self.probed(word(c.p, 0)).ok_or(NV_ERR_INVALID_ARGUMENT)?;
        for (at, v) in [(4, 0), (8, gpu), (12, 0), (24, 0), (28, 0), (32, gpu)] {
            put(c.p, at, v);
        }
        put(c.p, 36, (-1i32) as u32);
        Ok(())
    }
}
