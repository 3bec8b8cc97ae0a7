// SPDX-License-Identifier: GPL-2.0

//! GSS-legacy controls libcuda asks (issue 40): commands with RM's legacy
//! GSS bit that RM hands to GSP before its control table, which the
//! double answers as a GSP that takes them.

use super::call::Ctl;
use super::state::Driver;
use crate::base::{ObjKind, StatusResult};
use crate::nv::abi::status::*;

/// A GSS-legacy control libcuda 550.163.01 asks in `cuInit`: RM's legacy
/// GSS bit (RM_GSS_LEGACY_MASK 0x8000,
/// `interface/deprecated/rmapi_deprecated.h:41`) on NV2080's GPU
/// interface, message 0x59. No open header or export table names it at
/// any tag up to 595.45.04; RM hands it to GSP as it is.
pub(crate) const GSS_LEGACY_8159: u32 = 0x2080_8159;

/// The same for 535.261.03's libcuda, message 0x61.
pub(crate) const GSS_LEGACY_8161: u32 = 0x2080_8161;

/// The same path on NV0080's PERF interface, message 0x09: 535.261.03's
/// libcuda asks it on its device in `cuCtxCreate` with `{bCudaLimit}` 1
/// (1 byte), where 550's asks NV0080_CTRL_CMD_PERF_CUDA_LIMIT_SET_CONTROL
/// 0x801909 (`ctrl0080perf.h:58` at 550.163.01); 535.261.03's RM exports
/// no 0x801909 (`generated/g_device_nvoc.c`), and `cuCtxCreate` fails with
/// 801 (CUDA_ERROR_NOT_SUPPORTED) when this is refused (VM runs,
/// 2026-11-29).
pub(crate) const GSS_LEGACY_PERF_9909: u32 = 0x0080_9909;

impl Driver {
    /// A GSS-legacy control ([`GSS_LEGACY_8159`], [`GSS_LEGACY_8161`],
    /// [`GSS_LEGACY_PERF_9909`]): RM looks for it before its control
    /// table: a command with RM_GSS_LEGACY_MASK on an object of a
    /// GSP-client GPU (one `gpuGetByHandle` finds a GPU for: a device or a
    /// subdevice, as the rows say) goes to
    /// `RmGssLegacyRpcCmd` (`interface/deprecated/rmapi_deprecated_control.c:97-100,
    /// 143-148`), which checks only privilege (0xc000 needs root,
    /// `rmapi_gss_legacy_control.c:54-58`), copies `paramsSize` bytes in,
    /// hands them to GSP's physical RM under the same number and copies
    /// them back on NV_OK (`:60-151`); no size check. What GSP does is not
    /// open: GUESS, NV_OK with the params as sent (docs/driver-double.md,
    /// "NVIDIA's libcuda", says how libcuda takes each answer).
    pub(crate) fn gss_legacy(&self, c: Ctl<'_>) -> StatusResult {
        match c.kind {
            Some(ObjKind::Device { .. } | ObjKind::Subdevice { .. }) => Ok(()),
            _ => Err(NV_ERR_NOT_SUPPORTED),
        }
    }
}
