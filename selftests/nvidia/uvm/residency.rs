// SPDX-License-Identifier: GPL-2.0

//! Managed residency and range teardown, across VA spaces: chunks made
//! resident on a GPU (evicting the least recently used when its heap is
//! short) or sent back, and ranges destroyed with what they hold.

use kernel::prelude::*;

use super::state::{RangeKind, Resident};
use crate::base::{gpu_uuid, heap_size, StatusResult};
use crate::nv::abi::status::*;
use crate::nv::uvm::{self, Uuid, CHUNK};
use crate::rm::state::{Driver, Rm};

/// Returns a chunk's VRAM on `gpu` to the heap.
pub(crate) fn uncharge(rm: &mut Rm, gpu: u32) {
    let g = gpu as usize;
    rm.vram_used[g] = rm.vram_used[g].saturating_sub(CHUNK);
    rm.uvm.resident[g] = rm.uvm.resident[g].saturating_sub(CHUNK);
}

/// Moves the least recently used chunk resident on `gpu`, in any VA space,
/// back to system memory. False if there is none.
pub(crate) fn evict_one(rm: &mut Rm, gpu: u32) -> bool {
    let mut best: Option<(usize, usize, usize, u64)> = None;
    for (si, s) in rm.uvm.spaces.iter().enumerate() {
        for (ri, r) in s.ranges.iter().enumerate() {
            if let RangeKind::Managed { resident, .. } = &r.kind {
                for (ki, c) in resident.iter().enumerate() {
                    if c.gpu == gpu && best.is_none_or(|b| c.lru < b.3) {
                        best = Some((si, ri, ki, c.lru));
                    }
                }
            }
        }
    }
    let Some((si, ri, ki, _)) = best else {
        return false;
    };
    if let RangeKind::Managed { resident, .. } = &mut rm.uvm.spaces[si].ranges[ri].kind {
        let _ = resident.remove(ki);
    }
    uncharge(rm, gpu);
    true
}

/// Makes block `block` of managed range `ri` of space `si` resident on
/// `gpu` (`None`: on the CPU), evicting other chunks of that GPU if its
/// heap is short. Returns whether anything moved.
pub(crate) fn place(
    rm: &mut Rm,
    heap: u64,
    si: usize,
    ri: usize,
    block: u64,
    gpu: Option<u32>,
) -> StatusResult<bool> {
    rm.uvm.tick += 1;
    let tick = rm.uvm.tick;
    let RangeKind::Managed { resident, .. } = &mut rm.uvm.spaces[si].ranges[ri].kind else {
        return Err(NV_ERR_INVALID_ADDRESS);
    };
    let old = resident.iter().position(|c| c.block == block);
    if let (Some(k), Some(g)) = (old, gpu) {
        if resident[k].gpu == g {
            resident[k].lru = tick;
            return Ok(false);
        }
    }
    if let Some(k) = old {
        let from = resident[k].gpu;
        let _ = resident.remove(k);
        uncharge(rm, from);
    }
    let Some(g) = gpu else {
        return Ok(old.is_some());
    };
    while rm.vram_used[g as usize] + CHUNK > heap {
        if !evict_one(rm, g) {
            return Err(NV_ERR_NO_MEMORY);
        }
    }
    let RangeKind::Managed { resident, .. } = &mut rm.uvm.spaces[si].ranges[ri].kind else {
        return Err(NV_ERR_INVALID_ADDRESS);
    };
    resident
        .push(
            Resident {
                block,
                gpu: g,
                lru: tick,
            },
            GFP_KERNEL,
        )
        .map_err(|_| NV_ERR_NO_MEMORY)?;
    rm.vram_used[g as usize] += CHUNK;
    rm.uvm.resident[g as usize] += CHUNK;
    Ok(true)
}

/// Removes range `ri` of space `si`, returning its VRAM and RM memory.
pub(crate) fn destroy_range(rm: &mut Rm, si: usize, ri: usize) {
    let Ok(r) = rm.uvm.spaces[si].ranges.remove(ri) else {
        return;
    };
    match r.kind {
        RangeKind::Managed { resident, .. } => {
            for c in resident.iter() {
                uncharge(rm, c.gpu);
            }
            // A managed range leaves its range groups as it goes
            // (uvm_va_range.c:504-507). GUESS: should the split fail for
            // lack of memory, the pieces stay (the driver asserts it cannot).
            let _ = rm.uvm.spaces[si].ungroup(r.start, r.len);
        }
        RangeKind::External { maps } => {
            for m in maps.iter() {
                rm.put_mem(m.mem);
            }
        }
        RangeKind::Channel { .. }
        | RangeKind::SkedReflected { .. }
        | RangeKind::SemaphorePool { .. } => {}
    }
}

/// Removes `gpu`'s mappings from the external ranges of space `si` (those
/// overlapping `[base, base + len)` only, if given).
pub(crate) fn unmap_external(rm: &mut Rm, si: usize, gpu: u32, within: Option<(u64, u64)>) {
    let mut freed = KVec::new();
    for r in rm.uvm.spaces[si].ranges.iter_mut() {
        if let RangeKind::External { maps } = &mut r.kind {
            maps.retain(|m| {
                let hit =
                    m.gpu == gpu && within.is_none_or(|(b, l)| uvm::overlaps(m.base, m.len, b, l));
                if hit && freed.push(m.mem, GFP_KERNEL).is_err() {
                    // Keep it mapped rather than lose the reference.
                    return true;
                }
                !hit
            });
        }
    }
    for mem in freed.iter() {
        rm.put_mem(*mem);
    }
}

/// Removes the channels of space `si` on `gpu` and their ranges.
pub(crate) fn drop_channels(rm: &mut Rm, si: usize, gpu: u32) {
    loop {
        let s = &mut rm.uvm.spaces[si];
        let Some(ci) = s.chans.iter().position(|c| c.gpu == gpu) else {
            return;
        };
        if let Ok(c) = s.chans.remove(ci) {
            release_channel_ranges(rm, si, &c.ranges);
        }
    }
}

/// Drops one reference on each CHANNEL range of space `si` starting at an
/// address of `starts`, destroying those no channel holds any more
/// (`destroy_va_ranges`, uvm_user_channel.c:363-393 at 550.163.01).
pub(crate) fn release_channel_ranges(rm: &mut Rm, si: usize, starts: &[u64]) {
    for &start in starts {
        let s = &mut rm.uvm.spaces[si];
        let Some(ri) = s.ranges.iter().position(|r| r.start == start) else {
            continue;
        };
        if let RangeKind::Channel { refs, .. } = &mut s.ranges[ri].kind {
            *refs = refs.saturating_sub(1);
            if *refs == 0 {
                destroy_range(rm, si, ri);
            }
        }
    }
}

impl Driver {
    /// The heap of GPU `gpu`.
    pub(crate) fn heap(&self, gpu: u32) -> u64 {
        heap_size(self.gpus[gpu as usize].vram)
    }

    /// The fake GPU with UUID `u`.
    pub(crate) fn gpu_by_uuid(&self, u: &Uuid) -> Option<u32> {
        (0..self.gpus.len() as u32).find(|&g| gpu_uuid(g) == *u)
    }

    /// Runs `f` on VA space `id` with the RM lock held.
    pub(crate) fn with_space<R>(
        &self,
        id: u64,
        f: impl FnOnce(&mut Rm, usize) -> StatusResult<R>,
    ) -> StatusResult<R> {
        let mut rm = self.rm.lock();
        let si = rm.uvm.index(id).ok_or(NV_ERR_INVALID_STATE)?;
        f(&mut rm, si)
    }
}
