// SPDX-License-Identifier: GPL-2.0

//! Policies on managed ranges (preferred location, accessed-by, read
//! duplication), UVM_MIGRATE, and whether GPUs reach pageable memory.

use kernel::time::{delay::fsleep, Delta};

use super::residency::place;
use crate::base::StatusResult;
use crate::nv::abi::{status::*, Wire};
use crate::nv::uvm::{
    init_flags, migrate_flags, range_ok, MigrateParams, PageableMemAccessOnGpuParams,
    PageableMemAccessParams, RangeGpuParams, RangeParams, SetPreferredLocationParams, Uuid, CHUNK,
    CPU_UUID,
};
use crate::rm::state::Driver;
use crate::settings;

/// Simulated time `UVM_MIGRATE` spends per chunk it moves, so that a test
/// can kill a process in the middle of a migration.
const MIGRATE_CHUNK_MS: i64 = 2;

/// Whether a VA space initialised with `flags` reaches pageable memory.
/// GUESS: the double models a kernel with HMM (no ATS): GPUs reach pageable
/// memory unless the VA space was initialised with DISABLE_HMM, as
/// uvm_va_space_pageable_mem_access_supported() reports on such kernels.
/// Without an mm (`uvm_mm=0`), never; with ATS (`uvm_ats=1`), always, as
/// ATS takes priority over HMM there.
fn pageable(flags: u64) -> bool {
    settings::uvm_ats() || (settings::uvm_mm() && flags & init_flags::DISABLE_HMM == 0)
}

impl Driver {
    /// The policy commands: checked, then accepted and ignored (the double
    /// has no CPU pages and no faults to steer).
    pub(crate) fn uvm_policy(
        &self,
        id: u64,
        base: u64,
        len: u64,
        processor: Option<Uuid>,
    ) -> StatusResult {
        if !range_ok(base, len) {
            return Err(NV_ERR_INVALID_ADDRESS);
        }
        let gpu = processor
            .filter(|u| *u != CPU_UUID)
            .map(|u| self.gpu_by_uuid(&u));
        self.with_space(id, |rm, si| {
            let s = &rm.uvm.spaces[si];
            if !s.fully_managed(base, len) {
                return Err(NV_ERR_INVALID_ADDRESS);
            }
            match gpu {
                Some(Some(g)) if s.gpu(g).is_some() => Ok(()),
                Some(_) => Err(NV_ERR_INVALID_DEVICE),
                None => Ok(()),
            }
        })
    }

    /// UVM_MIGRATE of a managed range to a GPU or the CPU, one chunk at a
    /// time, about 2 ms per chunk moved (`uvm_api_migrate`,
    /// uvm_migrate.c:879-1060 at 550.163.01). An asynchronous call may
    /// name a semaphore, 4-byte aligned in a semaphore pool
    /// (NV_ERR_INVALID_ADDRESS otherwise), which gets its payload once the
    /// pages moved; with a semaphore, a length of 0 only releases it. A
    /// fatal signal does not stop it: UVM's migration has no such check at
    /// 595.45.04 (`uvm_common.c:274` leaves it a TODO; `uvm_migrate.c` has
    /// none), so a killed caller dies when the call returns.
    pub(crate) fn uvm_migrate(&self, id: u64, p: &mut [u8]) -> StatusResult {
        let q = MigrateParams::decode(p);
        let is_async = q.flags & migrate_flags::ASYNC != 0;
        if (q.length > 0 || !is_async || q.semaphore_address == 0) && !range_ok(q.base, q.length) {
            return Err(NV_ERR_INVALID_ADDRESS);
        }
        if q.flags & !migrate_flags::ASYNC != 0 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        if (!is_async && q.semaphore_address != 0)
            || (is_async && q.semaphore_address == 0 && q.semaphore_payload != 0)
        {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        let dest = if q.destination_uuid == CPU_UUID {
            // GUESS: node 0 is the only memory node of the test VM.
            if q.cpu_numa_node != -1 && q.cpu_numa_node != 0 {
                return Err(NV_ERR_INVALID_ARGUMENT);
            }
            None
        } else {
            Some(
                self.gpu_by_uuid(&q.destination_uuid)
                    .ok_or(NV_ERR_INVALID_DEVICE)?,
            )
        };
        self.with_space(id, |rm, si| {
            let s = &rm.uvm.spaces[si];
            if q.semaphore_address != 0
                && (q.semaphore_address % 4 != 0 || s.pool_at(q.semaphore_address).is_none())
            {
                return Err(NV_ERR_INVALID_ADDRESS);
            }
            if dest.is_some_and(|g| !s.has_vaspace(g)) {
                return Err(NV_ERR_INVALID_DEVICE);
            }
            if q.length > 0 && !s.fully_managed(q.base, q.length) {
                return Err(NV_ERR_INVALID_ADDRESS);
            }
            Ok(())
        })?;
        // Asynchronous migrations complete before the call returns.
        self.migrate_chunks(id, q.base, q.length, dest)?;
        if q.semaphore_address != 0 {
            self.with_space(id, |rm, si| {
                // GUESS: a pool freed meanwhile takes the release with it
                // (UVM holds the VA space's lock throughout).
                if let Some((b, off)) = rm.uvm.spaces[si].pool_at(q.semaphore_address) {
                    let _ = b.write_u32(off, q.semaphore_payload);
                }
                Ok(())
            })?;
        }
        Ok(())
    }

    /// Moves the managed pages of `[base, base + len)` to `dest` (`None`:
    /// the CPU), one chunk at a time, about 2 ms per chunk moved. A fatal
    /// signal does not stop it (no such check in UVM's production code,
    /// `uvm_common.c:274` at 595.45.04).
    pub(crate) fn migrate_chunks(
        &self,
        id: u64,
        base: u64,
        len: u64,
        dest: Option<u32>,
    ) -> StatusResult {
        let heap = dest.map_or(0, |g| self.heap(g));
        let end = base + len;
        let mut cur = base;
        while cur < end {
            let moved = self.with_space(id, |rm, si| {
                // Re-found each step: another thread may have unmapped it.
                let ri = rm.uvm.spaces[si]
                    .managed_at(cur)
                    .ok_or(NV_ERR_INVALID_ADDRESS)?;
                let block = cur / CHUNK;
                let next = ((block + 1) * CHUNK)
                    .min(rm.uvm.spaces[si].ranges[ri].end())
                    .min(end);
                let moved = place(rm, heap, si, ri, block, dest)?;
                Ok((moved, next))
            })?;
            cur = moved.1;
            if moved.0 {
                fsleep(Delta::from_millis(MIGRATE_CHUNK_MS));
            }
        }
        Ok(())
    }

    /// UVM_PAGEABLE_MEM_ACCESS: [`pageable`].
    pub(crate) fn uvm_pageable_mem_access(&self, id: u64, p: &mut [u8]) -> StatusResult {
        let flags = self.with_space(id, |rm, si| Ok(rm.uvm.spaces[si].flags))?;
        let mut q = PageableMemAccessParams::decode(p);
        q.pageable_mem_access = u8::from(pageable(flags));
        q.encode(p);
        Ok(())
    }

    /// UVM_PAGEABLE_MEM_ACCESS_ON_GPU (`uvm_api_pageable_mem_access_on_gpu`,
    /// `uvm_gpu.c:3412-3432` at 550.163.01): a GPU not registered in the
    /// VA space is NV_ERR_INVALID_DEVICE; a registered one reaches
    /// pageable memory when the VA space does ([`pageable`]) and its parent has
    /// replayable faults, which every GPU since Pascal has, the double's
    /// H100 among them.
    pub(crate) fn uvm_pageable_mem_access_on_gpu(&self, id: u64, p: &mut [u8]) -> StatusResult {
        let mut q = PageableMemAccessOnGpuParams::decode(p);
        let gpu = self.gpu_by_uuid(&q.gpu_uuid).ok_or(NV_ERR_INVALID_DEVICE)?;
        let flags = self.with_space(id, |rm, si| {
            let s = &rm.uvm.spaces[si];
            s.gpu(gpu).map(|_| s.flags).ok_or(NV_ERR_INVALID_DEVICE)
        })?;
        q.pageable_mem_access = u8::from(pageable(flags));
        q.encode(p);
        Ok(())
    }

    /// UVM_SET_PREFERRED_LOCATION.
    pub(crate) fn uvm_set_preferred_location(&self, id: u64, p: &mut [u8]) -> StatusResult {
        let q = SetPreferredLocationParams::decode(p);
        self.uvm_policy(id, q.requested_base, q.length, Some(q.preferred_location))
    }

    /// UVM_SET_ACCESSED_BY and UVM_UNSET_ACCESSED_BY.
    pub(crate) fn uvm_accessed_by(&self, id: u64, p: &mut [u8]) -> StatusResult {
        let q = RangeGpuParams::decode(p);
        self.uvm_policy(id, q.base, q.length, Some(q.uuid))
    }

    /// UVM_UNSET_PREFERRED_LOCATION, UVM_ENABLE_READ_DUPLICATION and
    /// UVM_DISABLE_READ_DUPLICATION.
    pub(crate) fn uvm_range_policy(&self, id: u64, p: &mut [u8]) -> StatusResult {
        let q = RangeParams::decode(p);
        self.uvm_policy(id, q.base, q.length, None)
    }
}
