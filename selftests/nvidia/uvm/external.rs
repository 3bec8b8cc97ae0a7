// SPDX-License-Identifier: GPL-2.0

//! External ranges: made by CREATE_EXTERNAL_RANGE, RM memory mapped into
//! them and unmapped, and UVM_FREE of a range; UVM_VALIDATE_VA_RANGE.

use kernel::prelude::*;

use super::residency::{destroy_range, unmap_external};
use super::state::{attribute, attribute_count, rd_u32, rd_u64, ExtMap, RangeKind};
use crate::base::{ObjKind, StatusResult};
use crate::nv::abi::{status::*, Wire};
use crate::nv::uvm::{range_ok, Command, RangeGpuParams, RangeParams, PAGE};
use crate::rm::state::Driver;

impl Driver {
    pub(crate) fn uvm_create_external_range(&self, id: u64, p: &mut [u8]) -> StatusResult {
        let q = RangeParams::decode(p);
        if !range_ok(q.base, q.length) {
            return Err(NV_ERR_INVALID_ADDRESS);
        }
        self.with_space(id, |rm, si| {
            let s = &mut rm.uvm.spaces[si];
            s.add_range(q.base, q.length, RangeKind::External { maps: KVec::new() })
        })
    }

    pub(crate) fn uvm_map_external(&self, id: u64, p: &mut [u8]) -> StatusResult {
        // The claimed release's layout (`attribute_count`).
        let row = crate::settings::abi().uvm_command(Command::MapExternalAllocation);
        let at = |name| row.field(name).unwrap_or(p.len());
        let base = rd_u64(p, at("base"));
        let len = rd_u64(p, at("length"));
        let offset = rd_u64(p, at("offset"));
        let h_client = rd_u32(p, at("h_client"));
        let h_memory = rd_u32(p, at("h_memory"));
        let (count, max) = attribute_count(p, row);
        if !range_ok(base, len) || offset & (PAGE - 1) != 0 {
            return Err(NV_ERR_INVALID_ADDRESS);
        }
        if count == 0 || count > max {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        let mut gpus = KVec::new();
        for i in 0..count as usize {
            let a = attribute(p, row, i)?;
            if a.gpu_mapping_type > 3 || a.gpu_caching_type > 2 || a.gpu_compression_type > 1 {
                return Err(NV_ERR_INVALID_ARGUMENT);
            }
            // GUESS: an unknown UUID is treated like a GPU without a GPU VA
            // space.
            let gpu = self.gpu_by_uuid(&a.gpu_uuid).ok_or(NV_ERR_INVALID_DEVICE)?;
            gpus.push(gpu, GFP_KERNEL).map_err(|_| NV_ERR_NO_MEMORY)?;
        }
        self.with_space(id, |rm, si| {
            let s = &rm.uvm.spaces[si];
            let ri = s
                .range_at(base)
                .filter(|&ri| {
                    let r = &s.ranges[ri];
                    matches!(r.kind, RangeKind::External { .. }) && base + len <= r.end()
                })
                .ok_or(NV_ERR_INVALID_ADDRESS)?;
            if gpus.iter().any(|&g| !s.has_vaspace(g)) {
                return Err(NV_ERR_INVALID_DEVICE);
            }
            // RM's dup of the memory (global handles), as `dupMemory` looks
            // it up at 595.45.04 (`nv_gpu_ops.c:11660-11669`): a missing
            // client is NV_ERR_INVALID_OBJECT_HANDLE (`_serverFindClient`,
            // `rs_server.c:3056-3058`), a missing object
            // NV_ERR_OBJECT_NOT_FOUND (`rs_client.c:390-392`).
            let kind = rm
                .any_client(h_client)
                .ok_or(NV_ERR_INVALID_OBJECT_HANDLE)?
                .find(h_memory)
                .ok_or(NV_ERR_OBJECT_NOT_FOUND)?
                .kind;
            let ObjKind::Memory { mem } = kind else {
                return Err(NV_ERR_INVALID_OBJECT_HANDLE);
            };
            let (owner, size, vram) = {
                let m = rm.mem(mem).ok_or(NV_ERR_OBJECT_NOT_FOUND)?;
                (m.gpu, m.size, m.vram)
            };
            // VRAM maps on its own GPU only: the double has no peer access,
            // and the owning GPU must be registered.
            if vram && (rm.uvm.spaces[si].gpu(owner).is_none() || gpus.iter().any(|&g| g != owner))
            {
                return Err(NV_ERR_INVALID_DEVICE);
            }
            if offset.checked_add(len).is_none_or(|e| e > size) {
                return Err(NV_ERR_INVALID_OFFSET);
            }
            for &g in gpus.iter() {
                // Mappings already there on that GPU are replaced.
                unmap_external(rm, si, g, Some((base, len)));
                if let RangeKind::External { maps } = &mut rm.uvm.spaces[si].ranges[ri].kind {
                    maps.push(
                        ExtMap {
                            gpu: g,
                            base,
                            len,
                            mem,
                            offset,
                        },
                        GFP_KERNEL,
                    )
                    .map_err(|_| NV_ERR_NO_MEMORY)?;
                }
                // The mapping holds the memory (and its VRAM) until it goes.
                if let Some(m) = rm.mem(mem) {
                    m.refs += 1;
                }
            }
            Ok(())
        })
    }

    pub(crate) fn uvm_unmap_external(&self, id: u64, p: &mut [u8]) -> StatusResult {
        let q = RangeGpuParams::decode(p);
        if !range_ok(q.base, q.length) {
            return Err(NV_ERR_INVALID_ADDRESS);
        }
        let gpu = self.gpu_by_uuid(&q.uuid);
        self.with_space(id, |rm, si| {
            let s = &rm.uvm.spaces[si];
            let inside = s.range_at(q.base).is_some_and(|ri| {
                let r = &s.ranges[ri];
                matches!(r.kind, RangeKind::External { .. }) && q.base + q.length <= r.end()
            });
            if !inside {
                return Err(NV_ERR_INVALID_ADDRESS);
            }
            let gpu = gpu
                .filter(|&g| s.has_vaspace(g))
                .ok_or(NV_ERR_INVALID_DEVICE)?;
            unmap_external(rm, si, gpu, Some((q.base, q.length)));
            Ok(())
        })
    }

    pub(crate) fn uvm_free(&self, id: u64, p: &mut [u8]) -> StatusResult {
        // The release's layout: before 590 the block has the length too,
        // and the range must be given whole (`uvm_free()`,
        // `uvm_va_range.c:671-685` at 580.142).
        let row = crate::settings::abi().uvm_command(Command::Free);
        let at = |name| row.field(name).and_then(|o| p.get(o..));
        let q = at("base").map_or(0, u64::decode);
        let length = at("length").map(u64::decode);
        self.with_space(id, |rm, si| {
            let s = &rm.uvm.spaces[si];
            let ri = s
                .ranges
                .iter()
                .position(|r| r.start == q)
                .ok_or(NV_ERR_INVALID_ADDRESS)?;
            if let Some(len) = length {
                if s.ranges[ri].len != len {
                    return Err(NV_ERR_INVALID_ADDRESS);
                }
            }
            // Managed memory goes with munmap, channel ranges with
            // UNREGISTER_CHANNEL; dynamic-parallelism regions and semaphore
            // pools go here too, a pool once the CPU's mapping is gone
            // (NV_ERR_INVALID_ARGUMENT, uvm_map_external.c:1381-1398 at
            // 550.163.01).
            match s.ranges[ri].kind {
                RangeKind::External { .. } | RangeKind::SkedReflected { .. } => {}
                RangeKind::SemaphorePool {
                    cpu_mapped: false, ..
                } => {}
                RangeKind::SemaphorePool { .. } => return Err(NV_ERR_INVALID_ARGUMENT),
                _ => return Err(NV_ERR_INVALID_ADDRESS),
            }
            destroy_range(rm, si, ri);
            Ok(())
        })
    }

    /// UVM_VALIDATE_VA_RANGE: a range starts exactly at `base` with
    /// exactly `length`.
    pub(crate) fn uvm_validate_va_range(&self, id: u64, p: &mut [u8]) -> StatusResult {
        let q = RangeParams::decode(p);
        self.with_space(id, |rm, si| {
            let s = &rm.uvm.spaces[si];
            match s.range_at(q.base) {
                Some(i) if s.ranges[i].start == q.base && s.ranges[i].len == q.length => Ok(()),
                _ => Err(NV_ERR_INVALID_ADDRESS),
            }
        })
    }
}
