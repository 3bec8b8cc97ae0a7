// SPDX-License-Identifier: GPL-2.0

//! Semaphore pools: UVM_ALLOC_SEMAPHORE_POOL makes a range of zeroed
//! system memory that every GPU with a GPU VA space maps at its own
//! address, and that an mmap of the VA-space file at exactly that range
//! maps for the CPU; UVM_FREE frees it once the CPU mapping is gone. Lines
//! are of `kernel-open/nvidia-uvm/` at 550.163.01.
//!
//! libcuda allocates one when UVM is on, and its channels' semaphores live
//! there: the engine reads and writes the pool's pages as the GPU would
//! (`Rm::resolve`).

use kernel::{prelude::*, sync::Arc};

use super::state::{attribute, attribute_count, rd_u64, RangeKind};
use crate::base::StatusResult;
use crate::memory::Backing;
use crate::nv::abi::status::*;
use crate::nv::uvm::{range_ok, Command};
use crate::rm::state::{Driver, Rm};

impl Driver {
    /// UVM_ALLOC_SEMAPHORE_POOL (`uvm_api_alloc_semaphore_pool`,
    /// uvm_va_range.c:1846-1895; `uvm_va_range_create_semaphore_pool`,
    /// :333-424): a range that is not page aligned is
    /// NV_ERR_INVALID_ADDRESS, more attributes than the array holds
    /// NV_ERR_INVALID_ARGUMENT; each attribute's mapping and caching types
    /// must be known (NV_ERR_INVALID_ARGUMENT) and its GPU registered
    /// (NV_ERR_INVALID_DEVICE), and at most one GPU may cache the pool
    /// (NV_ERR_INVALID_ARGUMENT, :389-400); a range overlapping another is
    /// NV_ERR_UVM_ADDRESS_IN_USE. GUESS (the double's bound, not UVM's): a
    /// pool larger than the double backs (`memory::MAX_BACKED`) is
    /// NV_ERR_NO_MEMORY.
    pub(crate) fn uvm_alloc_semaphore_pool(&self, id: u64, p: &mut [u8]) -> StatusResult {
        let row = crate::settings::abi().uvm_command(Command::AllocSemaphorePool);
        let at = |name| row.field(name).unwrap_or(p.len());
        let base = rd_u64(p, at("base"));
        let len = rd_u64(p, at("length"));
        let (count, max) = attribute_count(p, row);
        if !range_ok(base, len) {
            return Err(NV_ERR_INVALID_ADDRESS);
        }
        if count > max {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        let mut attrs = KVec::new();
        for i in 0..count as usize {
            let a = attribute(p, row, i)?;
            let gpu = self.gpu_by_uuid(&a.gpu_uuid);
            attrs
                .push((a.gpu_mapping_type, a.gpu_caching_type, gpu), GFP_KERNEL)
                .map_err(|_| NV_ERR_NO_MEMORY)?;
        }
        self.with_space(id, |rm, si| {
            let s = &mut rm.uvm.spaces[si];
            // The range first (uvm_va_range.c:352-365), then each
            // attribute in order (:381-405; uvm_mem.c:238-269): mapping
            // types 0-3 and caching types 0-2 (2: ForceCached), a GPU of
            // the VA space, one caching GPU at most.
            if s.overlaps(base, len) {
                return Err(NV_ERR_UVM_ADDRESS_IN_USE);
            }
            let mut cached = 0;
            for &(mapping, caching, gpu) in attrs.iter() {
                if mapping > 3 || caching > 2 {
                    return Err(NV_ERR_INVALID_ARGUMENT);
                }
                if gpu.and_then(|g| s.gpu(g)).is_none() {
                    return Err(NV_ERR_INVALID_DEVICE);
                }
                if caching == 2 {
                    cached += 1;
                    if cached > 1 {
                        return Err(NV_ERR_INVALID_ARGUMENT);
                    }
                }
            }
            let backing = Backing::new(len)
                .ok()
                .and_then(|b| Arc::new(b, GFP_KERNEL).ok())
                .ok_or(NV_ERR_NO_MEMORY)?;
            let pool = RangeKind::SemaphorePool {
                backing,
                cpu_mapped: false,
            };
            s.add_range(base, len, pool)
        })
    }
}

impl Rm {
    /// The pool page backing GPU virtual address `va` of client `client`:
    /// a semaphore pool of a UVM VA space where one of the client's GPU VA
    /// spaces is registered (the pool is mapped on every such GPU,
    /// uvm_va_range.c:1871-1883). The backing, the offset in it and the
    /// bytes left in the pool from there.
    pub(crate) fn pool_at(&self, client: u32, va: u64) -> Option<(Arc<Backing>, usize, u64)> {
        self.uvm.spaces.iter().find_map(|s| {
            if !s
                .gpus
                .iter()
                .any(|g| g.vaspace.is_some_and(|(c, _)| c == client))
            {
                return None;
            }
            s.ranges.iter().find_map(|r| match &r.kind {
                RangeKind::SemaphorePool { backing, .. } if r.contains(va) => {
                    let off = usize::try_from(va - r.start).ok()?;
                    Some((backing.clone(), off, r.end() - va))
                }
                _ => None,
            })
        })
    }
}
