// SPDX-License-Identifier: GPL-2.0

//! Controls libcuda 550.163.01's `cuCtxCreate` asks once its channels run
//! (VM runs, 2026-11-29): each is one RM hands to GSP or keeps no state
//! the double models, answered as RM does where its kernel side decides.

use super::call::Ctl;
use super::state::Driver;
use crate::base::StatusResult;
use crate::nv::abi::status::*;
use crate::settings;

/// NV906F_CTRL_CMD_RESET_CHANNEL: `{engineID; subdeviceInstance;
/// resetReason; bIsRcPending}`, 16 bytes (`ctrl906f.h:128-148` at
/// 550.163.01).
pub(crate) const RESET_CHANNEL: u32 = 0x906f_0102;
/// NV906F_CTRL_CMD_RESET_CHANNEL_REASON_ENUM_MAX (`ctrl906f.h:131`).
const RESET_REASON_ENUM_MAX: u32 = 3;
/// NV83DE_CTRL_CMD_DEBUG_SET_EXCEPTION_MASK: `{exceptionMask}`, 4 bytes
/// (`ctrl83de/ctrl83dedebug.h:225` at 550.163.01).
pub(crate) const DEBUG_SET_EXCEPTION_MASK: u32 = 0x83de_0309;
/// NV0080_CTRL_CMD_PERF_CUDA_LIMIT_SET_CONTROL: `{bCudaLimit}`, 1 byte
/// (`ctrl0080/ctrl0080perf.h:58` at 550.163.01).
pub(crate) const PERF_CUDA_LIMIT_SET_CONTROL: u32 = 0x0080_1909;

impl Driver {
    /// NV906F_CTRL_CMD_RESET_CHANNEL on a channel: a reason past the enum
    /// NV_ERR_INVALID_PARAMETER, else `bIsRcPending` (never, in the
    /// double) and NV_OK (`kchannelCtrlCmdResetChannel_IMPL`,
    /// `gpu/fifo/kernel_channel.c:3049-3091` at 550.163.01; the reset
    /// itself is GSP's, GUESS NV_OK: the double's channels hold no error
    /// state to clear).
    pub(crate) fn reset_channel(&self, c: Ctl<'_>) -> StatusResult {
        // 12 bytes before 550, without `bIsRcPending` (`ctrl906f.h:140-144`
        // at 535.261.03): the claimed release's size.
        if c.p.len() != settings::abi().params_size(c.cmd).unwrap_or(16) || c.p.len() < 12 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        let reason = u32::from_ne_bytes([c.p[8], c.p[9], c.p[10], c.p[11]]);
        if reason >= RESET_REASON_ENUM_MAX {
            return Err(NV_ERR_INVALID_PARAMETER);
        }
        if let Some(pending) = c.p.get_mut(12..16) {
            pending.copy_from_slice(&0u32.to_ne_bytes());
        }
        Ok(())
    }

    /// NV83DE_CTRL_CMD_DEBUG_SET_EXCEPTION_MASK on a GT200_DEBUGGER: RM
    /// routes it to GSP (`ksmdbgssnCtrlCmdDebugSetExceptionMask`,
    /// ROUTE_TO_PHYSICAL, `generated/g_kernel_sm_debugger_session_nvoc.c:
    /// 500-512` at 550.163.01). GUESS: NV_OK; the double raises no SM
    /// exceptions to mask.
    pub(crate) fn debug_set_exception_mask(&self, c: Ctl<'_>) -> StatusResult {
        if c.p.len() != 4 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        Ok(())
    }

    /// NV0080_CTRL_CMD_PERF_CUDA_LIMIT_SET_CONTROL on a device: RM counts
    /// the clients asking and tells GSP when the limit turns on or off
    /// (`deviceCtrlCmdKPerfCudaLimitSetControl_IMPL`,
    /// `gpu/perf/kern_cuda_limit.c:95-131` at 550.163.01). The double has
    /// no clocks to limit: NV_OK.
    pub(crate) fn perf_cuda_limit(&self, c: Ctl<'_>) -> StatusResult {
        if c.p.len() != 1 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        Ok(())
    }
}
