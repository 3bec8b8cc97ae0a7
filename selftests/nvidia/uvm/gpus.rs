// SPDX-License-Identifier: GPL-2.0

//! Registering GPUs, GPU VA spaces and channels in a VA space, and peer
//! access between GPUs.

use kernel::prelude::*;

use super::residency::{drop_channels, place, release_channel_ranges, unmap_external};
use super::state::{ChanReg, GpuReg, MmState, RangeKind, Space};
use crate::base::{gpu_uuid, ObjKind, StatusResult};
use crate::kapi::fdtable;
use crate::nv::abi::{self, status::*, Wire};
use crate::nv::uvm::{
    range_ok, Command, GpuParams, PeerAccessParams, RegisterChannelParams, RegisterGpuParams,
    RegisterGpuVaspaceParams, UnregisterChannelParams,
};
use crate::rm::grctx::{context_buffers, held_context, is_gr_engine};
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

    /// UVM_REGISTER_CHANNEL (`uvm_api_register_channel`,
    /// uvm_user_channel.c at 550.163.01): the channel must run in the GPU
    /// VA space registered for its GPU (RM compares VA spaces,
    /// `nvGpuOpsVerifyChannel`, nv_gpu_ops.c:8801-8809); each of its
    /// resources gets a CHANNEL range within `[base, base + length)`.
    pub(crate) fn uvm_register_channel(&self, id: u64, p: &mut [u8]) -> StatusResult {
        let q = RegisterChannelParams::decode(p);
        let gpu = self.gpu_by_uuid(&q.gpu_uuid).ok_or(NV_ERR_INVALID_DEVICE)?;
        self.with_space(id, |rm, si| {
            let registered = rm.uvm.spaces[si]
                .gpu(gpu)
                .and_then(|g| g.vaspace)
                .ok_or(NV_ERR_INVALID_DEVICE)?;
            // GUESS: an unknown client is reported like an unknown channel.
            let client = rm.any_client(q.h_client);
            let ch = client.and_then(|c| c.find(q.h_channel));
            let (Some(client), Some(ch)) = (client, ch) else {
                return Err(NV_ERR_INVALID_OBJECT_HANDLE);
            };
            let ObjKind::Channel {
                gpu: cgpu,
                token,
                tsg,
                own_tsg,
                vaspace,
                engine,
                ..
            } = ch.kind
            else {
                return Err(NV_ERR_INVALID_OBJECT_HANDLE);
            };
            if cgpu != gpu {
                return Err(NV_ERR_OTHER_DEVICE_FOUND);
            }
            if (q.h_client, vaspace) != registered {
                return Err(NV_ERR_INVALID_CHANNEL);
            }
            // Its resources: a GR channel's context buffers, which must be
            // there (NV_ERR_INVALID_OBJECT, `kgrctxGetCtxBuffers`,
            // `kernel_graphics_context.c:818-823`); none for a copy channel
            // (`_nvGpuOpsRetainChannelResources`, nv_gpu_ops.c:9572-9576).
            let gr = is_gr_engine(engine);
            if gr && held_context(client, ch) == 0 {
                return Err(NV_ERR_INVALID_OBJECT);
            }
            // Base and length count only for a channel with resources
            // (uvm_user_channel.c:192-197).
            if gr && !range_ok(q.base, q.length) {
                return Err(NV_ERR_INVALID_ADDRESS);
            }
            let s = &mut rm.uvm.spaces[si];
            if s.chans
                .iter()
                .any(|c| c.client == q.h_client && c.channel == q.h_channel)
            {
                return Err(NV_ERR_INVALID_CHANNEL);
            }
            // Past the GPU's channel VA: 2^57 on Hopper (uvm_hopper.c:86,
            // uvm_user_channel.c:570-574).
            if gr && q.base + (q.length - 1) >= MAX_CHANNEL_VA {
                return Err(NV_ERR_OUT_OF_RANGE);
            }
            s.chans
                .reserve(1, GFP_KERNEL)
                .map_err(|_| NV_ERR_NO_MEMORY)?;
            let mut ranges = KVec::new();
            if gr {
                let shared = (!own_tsg).then_some(tsg);
                if let Err(e) = carve_channel_ranges(s, &q, shared, &mut ranges) {
                    release_channel_ranges(rm, si, &ranges);
                    return Err(e);
                }
            }
            let reg = ChanReg {
                gpu,
                client: q.h_client,
                channel: q.h_channel,
                token,
                ranges,
            };
            if let Err(e) = rm.uvm.spaces[si].chans.push_within_capacity(reg) {
                release_channel_ranges(rm, si, &e.0.ranges);
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
            let Ok(c) = s.chans.remove(ci) else {
                return Err(NV_ERR_INVALID_CHANNEL);
            };
            release_channel_ranges(rm, si, &c.ranges);
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

/// The end of the channel VA of the H100 the double impersonates.
const MAX_CHANNEL_VA: u64 = 1 << 57;

/// Carves a CHANNEL range in space `s` for each of a GR channel's
/// resources, within the caller's `[base, base + length)`: the range a
/// channel of the same TSG (`shared`) made for that resource gains a
/// reference, else the first free address aligned for it is taken
/// (`create_va_range`, uvm_user_channel.c:297-361 at 550.163.01); none
/// free is NV_ERR_INVALID_ADDRESS. Pushes each range's start on `held`;
/// on error the caller releases what it holds.
fn carve_channel_ranges(
    s: &mut Space,
    q: &RegisterChannelParams,
    shared: Option<u32>,
    held: &mut KVec<u64>,
) -> StatusResult {
    let end = q.base + (q.length - 1);
    for (resource, size, align) in context_buffers() {
        let same = |k: &RangeKind| {
            matches!(*k, RangeKind::Channel { tsg: Some(t), resource: r, .. }
                if Some(t) == shared && r == resource)
        };
        if let Some(r) = s.ranges.iter_mut().find(|r| same(&r.kind)) {
            held.push(r.start, GFP_KERNEL)
                .map_err(|_| NV_ERR_NO_MEMORY)?;
            if let RangeKind::Channel { refs, .. } = &mut r.kind {
                *refs += 1;
            }
            continue;
        }
        let start = s
            .free_va_in(q.base, end, size, align)
            .ok_or(NV_ERR_INVALID_ADDRESS)?;
        let kind = RangeKind::Channel {
            tsg: shared,
            resource,
            refs: 1,
        };
        held.push(start, GFP_KERNEL).map_err(|_| NV_ERR_NO_MEMORY)?;
        if let Err(e) = s.add_range(start, size, kind) {
            held.pop();
            return Err(e);
        }
    }
    Ok(())
}
