// SPDX-License-Identifier: GPL-2.0

//! The controls NVIDIA's libcuda asks (issue 40) that NVML does not:
//! `cuInit` and the device queries up to `cuDeviceTotalMem`. Each is
//! cited at 550.163.01 (files under `src/nvidia/src/` unless a header);
//! 535.261.03 has the same code.

use super::call::Ctl;
use super::state::Driver;
use crate::base::StatusResult;
use crate::nv::abi::{self, status::*};

/// NV0000_CTRL_CMD_CLIENT_SET_INHERITED_SHARE_POLICY
/// (`common/sdk/nvidia/inc/ctrl/ctrl0000/ctrl0000client.h:123`).
pub(crate) const CLIENT_SET_INHERITED_SHARE_POLICY: u32 = 0xd04;

/// RS_SHARE_TYPE_MAX (`common/sdk/nvidia/inc/rs_access.h:250`).
const RS_SHARE_TYPE_MAX: u16 = 8;

impl Driver {
    /// NV0000_CTRL_CMD_CLIENT_SET_INHERITED_SHARE_POLICY: an
    /// RS_SHARE_POLICY `{u32 target; u32 accessMask; u16 type; u8
    /// action}` (`rs_access.h:267-272`), applied to the client itself as
    /// SHARE_OBJECT would (`cliresCtrlCmdClientSetInheritedSharePolicy_IMPL`,
    /// `kernel/rmapi/client_resource.c:4676-4689`): a type from
    /// RS_SHARE_TYPE_MAX up is NV_ERR_INVALID_ARGUMENT (`:4703-4704`).
    /// libcuda sets type PID (4, `rs_access.h:245`): its objects shared
    /// with its own process, which is the sharing the double's default
    /// policy already allows (`dup.rs`); the double records no policy
    /// (RM_SHARE is not modelled), so another type shares nothing more.
    pub(crate) fn client_set_inherited_share_policy(&self, c: Ctl<'_>) -> StatusResult {
        if c.p.len() != 12 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        let ty: u32 = abi::read_field(c.p, 8);
        if (ty & 0xffff) as u16 >= RS_SHARE_TYPE_MAX {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        Ok(())
    }
}
