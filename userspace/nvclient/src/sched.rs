// SPDX-License-Identifier: GPL-2.0

//! Compute objects and scheduling: VA spaces, TSGs, subcontexts, channels,
//! usermode (doorbell) pages and the TSG/channel scheduling controls.

use crate::abi::{
    class, ctrl, engine, ChannelAllocParams, ChannelGroupAllocParams, CtxShareAllocParams,
    GpfifoScheduleParams, Handle, InterleaveLevelParams, PreemptParams, StopChannelParams,
    TimesliceParams, UsermodeAllocParams, VaSpaceAllocParams, WorkSubmitTokenParams,
};
use crate::{Ctl, Error, Result};

/// TSG alloc params for the graphics/compute engine in `h_va_space` (0 =
/// the device's default).
pub fn tsg_params(h_va_space: Handle) -> ChannelGroupAllocParams {
    ChannelGroupAllocParams {
        h_va_space,
        engine_type: engine::NV2080_ENGINE_TYPE_GRAPHICS,
        ..Default::default()
    }
}

impl Ctl {
    /// Allocates a FERMI_VASPACE_A under `h_device`; returns the handle and
    /// the params as RM left them (VA base and size out).
    pub fn alloc_va_space(
        &self,
        h_client: Handle,
        h_device: Handle,
        h_new: Handle,
        mut params: VaSpaceAllocParams,
    ) -> Result<(Handle, VaSpaceAllocParams)> {
        let h = self.alloc_with(
            h_client,
            h_device,
            h_new,
            class::FERMI_VASPACE_A,
            &mut params,
        )?;
        Ok((h, params))
    }

    /// Allocates a TSG (KEPLER_CHANNEL_GROUP_A) under `h_device`.
    pub fn alloc_tsg(
        &self,
        h_client: Handle,
        h_device: Handle,
        h_new: Handle,
        mut params: ChannelGroupAllocParams,
    ) -> Result<Handle> {
        self.alloc_with(
            h_client,
            h_device,
            h_new,
            class::KEPLER_CHANNEL_GROUP_A,
            &mut params,
        )
    }

    /// Allocates a subcontext (FERMI_CONTEXT_SHARE_A) under `h_tsg` in
    /// `h_va_space` with NV_CTXSHARE flags; returns the handle and the
    /// subcontext id RM assigned.
    pub fn alloc_context_share(
        &self,
        h_client: Handle,
        h_tsg: Handle,
        h_new: Handle,
        h_va_space: Handle,
        flags: u32,
    ) -> Result<(Handle, u32)> {
        let mut p = CtxShareAllocParams {
            h_va_space,
            flags,
            subctx_id: 0,
        };
        let h = self.alloc_with(h_client, h_tsg, h_new, class::FERMI_CONTEXT_SHARE_A, &mut p)?;
        Ok((h, p.subctx_id))
    }

    /// Allocates a GPFIFO channel of `class` (e.g. AMPERE_CHANNEL_GPFIFO_A)
    /// under `h_parent` (a TSG or a device).
    pub fn alloc_channel(
        &self,
        h_client: Handle,
        h_parent: Handle,
        h_new: Handle,
        class: u32,
        mut params: ChannelAllocParams,
    ) -> Result<Handle> {
        if !class::is_channel_class(class) {
            return Err(Error::Invalid("not a channel class"));
        }
        self.alloc_with(h_client, h_parent, h_new, class, &mut params)
    }

    /// Allocates a usermode (doorbell) page of `class` under `h_subdevice`.
    /// HOPPER_USERMODE_A and later take `params`; older classes take none.
    pub fn alloc_usermode(
        &self,
        h_client: Handle,
        h_subdevice: Handle,
        h_new: Handle,
        class: u32,
        params: Option<UsermodeAllocParams>,
    ) -> Result<Handle> {
        match params {
            Some(mut p) => self.alloc_with(h_client, h_subdevice, h_new, class, &mut p),
            None => self.alloc(h_client, h_subdevice, h_new, class, &mut []),
        }
    }

    /// NVA06C_CTRL_CMD_GPFIFO_SCHEDULE on a TSG: enable or disable its
    /// scheduling.
    pub fn gpfifo_schedule(&self, h_client: Handle, h_tsg: Handle, enable: bool) -> Result<()> {
        let mut p = GpfifoScheduleParams {
            b_enable: u8::from(enable),
            ..Default::default()
        };
        self.control_with(
            h_client,
            h_tsg,
            ctrl::NVA06C_CTRL_CMD_GPFIFO_SCHEDULE,
            &mut p,
        )
    }

    /// NVA06F_CTRL_CMD_GPFIFO_SCHEDULE on a single channel.
    pub fn channel_gpfifo_schedule(
        &self,
        h_client: Handle,
        h_channel: Handle,
        enable: bool,
    ) -> Result<()> {
        let mut p = GpfifoScheduleParams {
            b_enable: u8::from(enable),
            ..Default::default()
        };
        self.control_with(
            h_client,
            h_channel,
            ctrl::NVA06F_CTRL_CMD_GPFIFO_SCHEDULE,
            &mut p,
        )
    }

    /// NVA06F_CTRL_CMD_STOP_CHANNEL on a channel.
    pub fn stop_channel(&self, h_client: Handle, h_channel: Handle, immediate: bool) -> Result<()> {
        let mut p = StopChannelParams {
            b_immediate: u8::from(immediate),
        };
        self.control_with(
            h_client,
            h_channel,
            ctrl::NVA06F_CTRL_CMD_STOP_CHANNEL,
            &mut p,
        )
    }

    /// NVA06C_CTRL_CMD_SET_TIMESLICE on a TSG.
    pub fn set_timeslice(&self, h_client: Handle, h_tsg: Handle, timeslice_us: u64) -> Result<()> {
        let mut p = TimesliceParams { timeslice_us };
        self.control_with(h_client, h_tsg, ctrl::NVA06C_CTRL_CMD_SET_TIMESLICE, &mut p)
    }

    /// NVA06C_CTRL_CMD_GET_TIMESLICE on a TSG, in microseconds.
    pub fn get_timeslice(&self, h_client: Handle, h_tsg: Handle) -> Result<u64> {
        let mut p = TimesliceParams::default();
        self.control_with(h_client, h_tsg, ctrl::NVA06C_CTRL_CMD_GET_TIMESLICE, &mut p)?;
        Ok(p.timeslice_us)
    }

    /// NVA06C_CTRL_CMD_PREEMPT on a TSG; `timeout_us` sets a manual timeout.
    pub fn preempt(
        &self,
        h_client: Handle,
        h_tsg: Handle,
        wait: bool,
        timeout_us: Option<u32>,
    ) -> Result<()> {
        let mut p = PreemptParams {
            b_wait: u8::from(wait),
            b_manual_timeout: u8::from(timeout_us.is_some()),
            timeout_us: timeout_us.unwrap_or(0),
        };
        self.control_with(h_client, h_tsg, ctrl::NVA06C_CTRL_CMD_PREEMPT, &mut p)
    }

    /// NVA06C_CTRL_CMD_SET_INTERLEAVE_LEVEL on a TSG.
    pub fn set_interleave_level(&self, h_client: Handle, h_tsg: Handle, level: u32) -> Result<()> {
        let mut p = InterleaveLevelParams {
            tsg_interleave_level: level,
        };
        self.control_with(
            h_client,
            h_tsg,
            ctrl::NVA06C_CTRL_CMD_SET_INTERLEAVE_LEVEL,
            &mut p,
        )
    }

    /// NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN on a channel: the value
    /// to write at the doorbell ([`crate::Mapping::ring_doorbell`]).
    pub fn work_submit_token(&self, h_client: Handle, h_channel: Handle) -> Result<u32> {
        let mut p = WorkSubmitTokenParams::default();
        self.control_with(
            h_client,
            h_channel,
            ctrl::NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN,
            &mut p,
        )?;
        Ok(p.work_submit_token)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsg_defaults() {
        let p = tsg_params(0x5);
        assert_eq!(p.h_va_space, 5);
        assert_eq!(p.engine_type, 1);
        let b = p.to_bytes();
        assert_eq!(&b[8..12], &5u32.to_ne_bytes());
        assert_eq!(&b[12..16], &1u32.to_ne_bytes());
    }

    #[test]
    fn schedule_params_encode_booleans_as_bytes() {
        let p = GpfifoScheduleParams {
            b_enable: u8::from(true),
            ..Default::default()
        };
        assert_eq!(p.to_bytes(), [1, 0, 0]);
        let p = PreemptParams {
            b_wait: 1,
            b_manual_timeout: 1,
            timeout_us: 500,
        };
        let b = p.to_bytes();
        assert_eq!(&b[..4], &[1, 1, 0, 0]);
        assert_eq!(&b[4..], &500u32.to_ne_bytes());
    }
}
