// SPDX-License-Identifier: GPL-2.0

//! Registering GPUs, GPU VA spaces and channels in a VA space, and peer
//! access between GPUs.

use kernel::prelude::*;

use super::residency::{drop_channels, place, remove_channel_range, unmap_external};
use super::state::{ChanReg, GpuReg, MmState, RangeKind};
use crate::base::{gpu_uuid, ObjKind, StatusResult};
use crate::kapi::fdtable;
use crate::nv::abi::{self, status::*, Wire};
use crate::nv::uvm::{
    range_ok, Command, GpuParams, PeerAccessParams, RegisterChannelParams, RegisterGpuParams,
    RegisterGpuVaspaceParams, UnregisterChannelParams,
};
use crate::rm::state::Driver;

impl Driver {
    pub(crate) fn uvm_register_gpu(&self, id: u64, p: &mut [u8]) -> StatusResult {
        let mut q = RegisterGpuParams::decode(p);
        let gpu = self
            .gpu_by_uuid(&q.gpu_uuid)
            .ok_or(NV_ERR_GPU_UUID_NOT_FOUND)?;
        // RM's check of the caller's fd table (`nv_is_gpu_accessible`): a GPU
        // node of this GPU, not the ctl node.
        if !fdtable::current_has_file(|f| crate::file::is_gpu_file(f, gpu)) {
            return Err(NV_ERR_INSUFFICIENT_PERMISSIONS);
        }
        self.with_space(id, |rm, si| {
            let s = &mut rm.uvm.spaces[si];
            if s.gpu(gpu).is_some() {
                return Err(NV_ERR_INVALID_DEVICE);
            }
            s.gpus
                .push(GpuReg { gpu, vaspace: None }, GFP_KERNEL)
                .map_err(|_| NV_ERR_NO_MEMORY)
        })?;
        q.numa_enabled = 0;
        q.numa_node_id = -1;
        q.gpu_uuid = gpu_uuid(gpu);
        q.encode(p);
        Ok(())
    }

    pub(crate) fn uvm_unregister_gpu(&self, id: u64, p: &mut [u8]) -> StatusResult {
        let q = GpuParams::decode(p);
        let gpu = self.gpu_by_uuid(&q.gpu_uuid).ok_or(NV_ERR_INVALID_DEVICE)?;
        self.with_space(id, |rm, si| {
            if rm.uvm.spaces[si].gpu(gpu).is_none() {
                return Err(NV_ERR_INVALID_DEVICE);
            }
            drop_channels(rm, si, gpu);
            unmap_external(rm, si, gpu, None);
            // Its resident chunks go back to system memory.
            let n = rm.uvm.spaces[si].ranges.len();
            for ri in 0..n {
                loop {
                    let block = match &rm.uvm.spaces[si].ranges[ri].kind {
                        RangeKind::Managed { resident, .. } => {
                            resident.iter().find(|c| c.gpu == gpu).map(|c| c.block)
                        }
                        _ => None,
                    };
                    let Some(block) = block else { break };
                    place(rm, 0, si, ri, block, None)?;
                }
            }
            rm.uvm.spaces[si].gpus.retain(|g| g.gpu != gpu);
            Ok(())
        })
    }

    pub(crate) fn uvm_register_gpu_vaspace(&self, id: u64, p: &mut [u8]) -> StatusResult {
        let q = RegisterGpuVaspaceParams::decode(p);
        let gpu = self.gpu_by_uuid(&q.gpu_uuid).ok_or(NV_ERR_INVALID_DEVICE)?;
        self.with_space(id, |rm, si| {
            let s = &rm.uvm.spaces[si];
            if s.gpu(gpu).is_none() {
                return Err(NV_ERR_INVALID_DEVICE);
            }
            // Without the mm association (multi-process mode) UVM uses the
            // caller's mm; with it, the mm file must hold the mm.
            if s.mm.is_some() && s.mm_state != MmState::Alive {
                return Err(NV_ERR_PAGE_TABLE_NOT_AVAIL);
            }
            // GUESS: RM's statuses for a missing client and object.
            let obj = rm
                .any_client(q.h_client)
                .ok_or(NV_ERR_INVALID_CLIENT)?
                .find(q.h_va_space)
                .ok_or(NV_ERR_OBJECT_NOT_FOUND)?
                .kind;
            let ObjKind::VaSpace {
                gpu: vgpu, flags, ..
            } = obj
            else {
                return Err(NV_ERR_INVALID_OBJECT);
            };
            if vgpu != gpu {
                return Err(NV_ERR_OTHER_DEVICE_FOUND);
            }
            if flags & abi::vaspace::FLAGS_IS_EXTERNALLY_OWNED == 0 {
                return Err(NV_ERR_INVALID_FLAGS);
            }
            let s = &mut rm.uvm.spaces[si];
            let reg = s
                .gpus
                .iter_mut()
                .find(|g| g.gpu == gpu)
                .ok_or(NV_ERR_INVALID_DEVICE)?;
            if reg.vaspace.is_some() {
                return Err(NV_ERR_INVALID_DEVICE);
            }
            reg.vaspace = Some((q.h_client, q.h_va_space));
            Ok(())
        })
    }

    pub(crate) fn uvm_unregister_gpu_vaspace(&self, id: u64, p: &mut [u8]) -> StatusResult {
        let q = GpuParams::decode(p);
        let gpu = self.gpu_by_uuid(&q.gpu_uuid).ok_or(NV_ERR_INVALID_DEVICE)?;
        self.with_space(id, |rm, si| {
            if !rm.uvm.spaces[si].has_vaspace(gpu) {
                return Err(NV_ERR_INVALID_DEVICE);
            }
            drop_channels(rm, si, gpu);
            unmap_external(rm, si, gpu, None);
            if let Some(reg) = rm.uvm.spaces[si].gpus.iter_mut().find(|g| g.gpu == gpu) {
                reg.vaspace = None;
            }
            Ok(())
        })
    }

    pub(crate) fn uvm_register_channel(&self, id: u64, p: &mut [u8]) -> StatusResult {
        let q = RegisterChannelParams::decode(p);
        let gpu = self.gpu_by_uuid(&q.gpu_uuid).ok_or(NV_ERR_INVALID_DEVICE)?;
        self.with_space(id, |rm, si| {
            let registered = rm.uvm.spaces[si]
                .gpu(gpu)
                .and_then(|g| g.vaspace)
                .ok_or(NV_ERR_INVALID_DEVICE)?;
            // GUESS: an unknown client is reported like an unknown channel.
            let obj = rm
                .any_client(q.h_client)
                .and_then(|c| c.find(q.h_channel))
                .map(|o| o.kind);
            let Some(ObjKind::Channel {
                gpu: cgpu,
                token,
                vaspace,
                ..
            }) = obj
            else {
                return Err(NV_ERR_INVALID_OBJECT_HANDLE);
            };
            if cgpu != gpu {
                return Err(NV_ERR_OTHER_DEVICE_FOUND);
            }
            if (q.h_client, vaspace) != registered {
                return Err(NV_ERR_INVALID_CHANNEL);
            }
            let s = &mut rm.uvm.spaces[si];
            if s.chans
                .iter()
                .any(|c| c.client == q.h_client && c.channel == q.h_channel)
            {
                return Err(NV_ERR_INVALID_CHANNEL);
            }
            if !range_ok(q.base, q.length) {
                return Err(NV_ERR_INVALID_ADDRESS);
            }
            s.add_range(q.base, q.length, RangeKind::Channel)?;
            let reg = ChanReg {
                gpu,
                client: q.h_client,
                channel: q.h_channel,
                token,
                base: q.base,
            };
            if s.chans.push(reg, GFP_KERNEL).is_err() {
                remove_channel_range(rm, si, q.base);
                return Err(NV_ERR_NO_MEMORY);
            }
            Ok(())
        })
    }

    pub(crate) fn uvm_unregister_channel(&self, id: u64, p: &mut [u8]) -> StatusResult {
        // The release's layout (before 590 the GPU's UUID comes first;
        // the channel is found by its handles in both).
        let row = crate::settings::abi().uvm_command(Command::UnregisterChannel);
        let at = |name| row.field(name).and_then(|o| p.get(o..)).unwrap_or(&[]);
        let q = UnregisterChannelParams {
            h_client: u32::decode(at("h_client")),
            h_channel: u32::decode(at("h_channel")),
            rm_status: 0,
        };
        self.with_space(id, |rm, si| {
            let s = &mut rm.uvm.spaces[si];
            let ci = s
                .chans
                .iter()
                .position(|c| c.client == q.h_client && c.channel == q.h_channel)
                .ok_or(NV_ERR_INVALID_CHANNEL)?;
            let base = s.chans[ci].base;
            let _ = s.chans.remove(ci);
            remove_channel_range(rm, si, base);
            Ok(())
        })
    }

    /// ENABLE/DISABLE_PEER_ACCESS: both GPUs registered and distinct, else
    /// NV_ERR_INVALID_DEVICE. The double has no peer links: enabling answers
    /// NV_ERR_NOT_SUPPORTED, so there is never a pair to disable
    /// (NV_ERR_INVALID_DEVICE).
    pub(crate) fn uvm_peer_access(&self, id: u64, enable: bool, p: &mut [u8]) -> StatusResult {
        let q = PeerAccessParams::decode(p);
        let a = self.gpu_by_uuid(&q.gpu_uuid_a);
        let b = self.gpu_by_uuid(&q.gpu_uuid_b);
        self.with_space(id, |rm, si| {
            let s = &rm.uvm.spaces[si];
            match (a, b) {
                (Some(a), Some(b)) if a != b && s.gpu(a).is_some() && s.gpu(b).is_some() => {}
                _ => return Err(NV_ERR_INVALID_DEVICE),
            }
            Err(if enable {
                NV_ERR_NOT_SUPPORTED
            } else {
                NV_ERR_INVALID_DEVICE
            })
        })
    }

    /// UVM_ENABLE_PEER_ACCESS.
    pub(crate) fn uvm_enable_peer_access(&self, id: u64, p: &mut [u8]) -> StatusResult {
        self.uvm_peer_access(id, true, p)
    }

    /// UVM_DISABLE_PEER_ACCESS.
    pub(crate) fn uvm_disable_peer_access(&self, id: u64, p: &mut [u8]) -> StatusResult {
        self.uvm_peer_access(id, false, p)
    }
}
