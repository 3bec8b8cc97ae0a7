// SPDX-License-Identifier: GPL-2.0

//! `/sys/class/vgpu/gpuK/`: a GPU's scheduling settings.

use core::fmt::Write;
use kernel::prelude::*;

use super::gpu::GpuSched;
use crate::compute;
use crate::kapi::sysfs::{DeviceFiles, Emit, FileSpec};
use crate::vgpus::errno;

/// The files of `/sys/class/vgpu/gpuK/`: GPU `K`'s scheduling settings.
pub(crate) struct GpuFiles;

const G_POLICY: usize = 0;
const G_PERIOD_US: usize = 1;

impl DeviceFiles for GpuFiles {
    type Data = GpuSched;

    const FILES: &'static [FileSpec] = &[
        FileSpec {
            name: c"compute_policy",
            mode: 0o644,
        },
        FileSpec {
            name: c"compute_period_us",
            mode: 0o644,
        },
    ];

    fn show(g: &GpuSched, index: usize, out: &mut Emit<'_>) -> Result {
        let s = g.settings();
        match index {
            G_POLICY => writeln!(out, "{}", s.policy.name()),
            G_PERIOD_US => writeln!(out, "{}", s.period_us),
            _ => return Err(EINVAL),
        }
        .map_err(|_| EFBIG)
    }

    fn store(g: &GpuSched, index: usize, input: &[u8]) -> Result {
        match index {
            G_POLICY => {
                let p = compute::parse_policy(input).map_err(errno)?;
                g.update(|s| s.policy = p);
            }
            G_PERIOD_US => {
                let us = compute::parse_period_us(input).map_err(errno)?;
                g.update(|s| s.period_us = us);
            }
            _ => return Err(EPERM),
        }
        Ok(())
    }
}
