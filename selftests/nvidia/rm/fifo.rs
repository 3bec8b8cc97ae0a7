// SPDX-License-Identifier: GPL-2.0

//! The scheduling controls, on a TSG (NVA06C), a channel (NVA06F, NVC36F)
//! or a subdevice (NV2080 FIFO): each reaches the GPU's engine.

use super::call::{parse_params, parse_release_params, Ctl};
use super::grctx::is_compute_class;
use super::state::Driver;
use crate::base::{store, ObjKind, StatusResult};
use crate::nv::abi::{self, status::*};

/// NVC36F_CTRL_GET_CLASS_ENGINEID (NV906F's, `ctrl906f.h:95` and
/// `ctrlc36f.h` at 550.163.01).
pub(crate) const NVC36F_CTRL_GET_CLASS_ENGINEID: u32 = 0xc36f_0101;

impl Driver {
    /// NVA06C_/NVA06F_CTRL_CMD_GPFIFO_SCHEDULE: enables or disables the
    /// TSG (a channel's). 2 bytes before 580 (no `bSkipEnable`).
    pub(crate) fn gpfifo_schedule(&self, c: Ctl<'_>) -> StatusResult {
        let (gpu, id) = c.tsg()?;
        let q: abi::GpfifoScheduleParams = parse_release_params(c.cmd, c.p)?;
        self.gpus[gpu as usize].engine.schedule(id, q.b_enable != 0);
        Ok(())
    }

    /// NVA06C_CTRL_CMD_SET_TIMESLICE.
    pub(crate) fn set_timeslice(&self, c: Ctl<'_>) -> StatusResult {
        let (gpu, id) = c.tsg()?;
        let q: abi::TimesliceParams = parse_params(c.p)?;
        // No minimum: kernel RM enforces none (at 535 its minimum
        // is 0; at 595.45.04 it forwards the call to GSP,
        // `kernel_channel_group_api.c:1319-1333`). GUESS: GSP's own
        // check is not public; the double accepts every value.
        self.gpus[gpu as usize]
            .engine
            .set_timeslice(id, q.timeslice_us);
        Ok(())
    }

    /// NVA06C_CTRL_CMD_GET_TIMESLICE.
    pub(crate) fn get_timeslice(&self, c: Ctl<'_>) -> StatusResult {
        let (gpu, id) = c.tsg()?;
        let mut q: abi::TimesliceParams = parse_params(c.p)?;
        q.timeslice_us = self.gpus[gpu as usize]
            .engine
            .timeslice(id)
            .ok_or(NV_ERR_INVALID_OBJECT_HANDLE)?;
        store(&q, c.p);
        Ok(())
    }

    /// NVA06C_CTRL_CMD_PREEMPT.
    pub(crate) fn preempt(&self, c: Ctl<'_>) -> StatusResult {
        let (gpu, id) = c.tsg()?;
        let _q: abi::PreemptParams = parse_params(c.p)?;
        self.gpus[gpu as usize].engine.preempt(id);
        Ok(())
    }

    /// NVA06C_CTRL_CMD_SET_INTERLEAVE_LEVEL: accepted, not modelled.
    pub(crate) fn set_interleave_level(&self, c: Ctl<'_>) -> StatusResult {
        let _q: abi::InterleaveLevelParams = parse_params(c.p)?;
        Ok(())
    }

    /// NVA06C_CTRL_CMD_MAKE_REALTIME: accepted, not modelled.
    pub(crate) fn make_realtime(&self, c: Ctl<'_>) -> StatusResult {
        let _q: abi::MakeRealtimeParams = parse_params(c.p)?;
        Ok(())
    }

    /// NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN: the channel's token.
    pub(crate) fn work_submit_token(&self, c: Ctl<'_>) -> StatusResult {
        let Some(ObjKind::Channel { token, .. }) = c.kind else {
            return Err(NV_ERR_NOT_SUPPORTED);
        };
        let mut q: abi::WorkSubmitTokenParams = parse_params(c.p)?;
        q.work_submit_token = token;
        store(&q, c.p);
        Ok(())
    }

    /// NVC36F_CTRL_GET_CLASS_ENGINEID (`{hObject; classEngineID; classID;
    /// engineID}`, `ctrl906f.h:95-104` at 550.163.01) on a channel: for an
    /// engine object made in it, its class as `classEngineID`
    /// (`SET_OBJECT`'s NVCLASS field, bits 15:0) and as `classID`, and the
    /// NV2080 engine type of its engine (`kchannelCtrlCmdGetClassEngineid_IMPL`,
    /// `kernel/gpu/fifo/kernel_channel.c:2937-2977`;
    /// `kchannelGetClassEngineID_GM107`,
    /// `arch/maxwell/kernel_channel_gm107.c:50-89`). `hObject` 0
    /// NV_ERR_OBJECT_NOT_FOUND, the client's own handle
    /// NV_ERR_INVALID_ARGUMENT, anything not made in the channel
    /// NV_ERR_OBJECT_NOT_FOUND. GUESS: a copy object's engine is COPY0 (RM
    /// gives the copy engine of the channel's runlist, which the double
    /// does not model). libcuda asks it in `cuCtxCreate`.
    pub(crate) fn get_class_engineid(&self, c: Ctl<'_>) -> StatusResult {
        if !matches!(c.kind, Some(ObjKind::Channel { .. })) {
            return Err(NV_ERR_NOT_SUPPORTED);
        }
        if c.p.len() != 16 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        let h: u32 = abi::read_field(c.p, 0);
        let client = c.rm.clients.get(c.ci).ok_or(NV_ERR_INVALID_CLIENT)?;
        if h == 0 {
            return Err(NV_ERR_OBJECT_NOT_FOUND);
        }
        if h == client.handle {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        let class = match client.find(h) {
            Some(o) if o.parent == c.h_object => match o.kind {
                ObjKind::Engine { class, .. } => class,
                _ => return Err(NV_ERR_OBJECT_NOT_FOUND),
            },
            _ => return Err(NV_ERR_OBJECT_NOT_FOUND),
        };
        let engine = if is_compute_class(class) {
            abi::engine::NV2080_ENGINE_TYPE_GRAPHICS
        } else {
            abi::engine::NV2080_ENGINE_TYPE_COPY0
        };
        for (at, v) in [(4, class & 0xffff), (8, class), (12, engine)] {
            c.p[at..at + 4].copy_from_slice(&v.to_ne_bytes());
        }
        Ok(())
    }

    /// NV2080_CTRL_CMD_GR_SET_CTXSW_PREEMPTION_MODE
    /// (`ctrl/ctrl2080/ctrl2080gr.h:783-850` at 595.45.04): sets the
    /// compute mode of the caller's channel `hChannel` on this GPU when
    /// `flags` has `CILP_SET` (the graphics mode is not modelled: the
    /// engine runs compute only). RM's kernel side only routes the call to
    /// GSP (flags `0x10348`, ROUTE_TO_PHYSICAL, `g_subdevice_nvoc.c:5400`),
    /// whose checks are not public. `hChannel` may name a TSG, whose
    /// channels share the GR context (libcuda 550.163.01 names its TSG).
    /// GUESS: a handle that is neither one of the client's channels nor
    /// its TSGs is NV_ERR_INVALID_CHANNEL and a mode past CILP
    /// NV_ERR_INVALID_ARGUMENT, as RM answers such arguments elsewhere.
    /// A channel starts in CTA (GUESS: the firmware's default is not
    /// public; CUDA asks for the modes it wants).
    pub(crate) fn set_preemption_mode(&self, c: Ctl<'_>) -> StatusResult {
        use abi::preemption;
        let gpu = c.gpu()?;
        let q: abi::CtxswPreemptionModeParams = parse_params(c.p)?;
        let target = match c.rm.clients[c.ci].find(q.h_channel).map(|o| o.kind) {
            Some(ObjKind::Channel { gpu: g, token, .. }) if g == gpu => Ok(token),
            Some(ObjKind::Tsg { gpu: g, id, .. }) if g == gpu => Err(id),
            _ => return Err(NV_ERR_INVALID_CHANNEL),
        };
        if q.flags & preemption::FLAGS_CILP_SET == 0 {
            return Ok(());
        }
        if q.cilp_preempt_mode > preemption::COMPUTE_CILP {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        let wfi = q.cilp_preempt_mode == preemption::COMPUTE_WFI;
        let engine = &self.gpus[gpu as usize].engine;
        match target {
            Ok(token) => engine.set_compute_wfi(token, wfi),
            Err(tsg) => engine.set_tsg_compute_wfi(tsg, wfi),
        };
        Ok(())
    }

    /// NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS: each listed channel's TSG,
    /// on this GPU, disabled or enabled.
    pub(crate) fn disable_channels(&self, mut c: Ctl<'_>) -> StatusResult {
        let gpu = c.gpu()?;
        let q: abi::FifoDisableChannelsParams = parse_params(c.p)?;
        let n = q.num_channels as usize;
        if n > q.h_channel_list.len() {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        for k in 0..n {
            let cj =
                c.rm.client_for(q.h_client_list[k], c.file)
                    .map_err(|_| NV_ERR_INVALID_CLIENT)?;
            match c.rm.clients[cj].find(q.h_channel_list[k]).map(|o| o.kind) {
                Some(ObjKind::Channel { gpu: g, tsg, .. }) if g == gpu => {
                    self.gpus[gpu as usize]
                        .engine
                        .schedule(tsg, q.b_disable == 0);
                }
                _ => return Err(NV_ERR_INVALID_CHANNEL),
            }
        }
        Ok(())
    }
}
