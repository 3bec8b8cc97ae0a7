// SPDX-License-Identifier: GPL-2.0

//! The nvidia-uvm node's state, guarded by the RM lock (it is a field of
//! `rm::state::Rm`): VA spaces, their GPUs, channels, ranges and range
//! groups, and managed residency per GPU.

use kernel::{mm::Mm, prelude::*, sync::aref::ARef, sync::Arc};

use crate::base::{StatusResult, MAX_GPUS};
use crate::memory::Backing;
use crate::nv::abi::status::*;
use crate::nv::abi::Wire;
use crate::nv::table::UvmRow;
use crate::nv::uvm::{self, GpuMappingAttributes, CHUNK};

/// Where a VA space's mm file stands.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum MmState {
    /// No mm file yet.
    Unset,
    /// An mm file holds the recorded mm.
    Alive,
    /// The mm file was closed: GPU work of the VA space has ended.
    Released,
}

/// A GPU registered in a VA space.
pub(crate) struct GpuReg {
    pub(crate) gpu: u32,
    /// Its GPU VA space: the RM (client, VA space) registered.
    pub(crate) vaspace: Option<(u32, u32)>,
}

/// A registered channel.
pub(crate) struct ChanReg {
    pub(crate) gpu: u32,
    pub(crate) client: u32,
    pub(crate) channel: u32,
    /// Its work-submit token: how the engine names it.
    pub(crate) token: u32,
    /// The starts of the CHANNEL ranges it holds a reference on, one per
    /// resource.
    pub(crate) ranges: KVec<u64>,
}

/// A managed chunk resident on a GPU.
pub(crate) struct Resident {
    /// VA block index (address / 2 MiB).
    pub(crate) block: u64,
    pub(crate) gpu: u32,
    /// Last use, for eviction (higher is more recent).
    pub(crate) lru: u64,
}

/// One GPU's mapping of RM memory in an external range.
pub(crate) struct ExtMap {
    pub(crate) gpu: u32,
    pub(crate) base: u64,
    pub(crate) len: u64,
    /// The RM memory (one reference held).
    pub(crate) mem: u32,
    /// Where in that memory `base` maps.
    pub(crate) offset: u64,
}

pub(crate) enum RangeKind {
    /// Made by mmap; `mm` identifies the mapping's address space.
    Managed { mm: usize, resident: KVec<Resident> },
    /// Made by CREATE_EXTERNAL_RANGE.
    External { maps: KVec<ExtMap> },
    /// Made by REGISTER_CHANNEL: one resource of a channel (a GR context
    /// buffer), shared by the channels of TSG `tsg` that register it
    /// (`None`: a channel with a TSG of its own shares nothing), with
    /// `refs` channels holding it (uvm_user_channel.c:236-262, 331-336 at
    /// 550.163.01).
    Channel {
        tsg: Option<u32>,
        resource: u32,
        refs: u32,
    },
    /// Made by ALLOC_SEMAPHORE_POOL: zeroed system memory every GPU VA
    /// space of the VA space maps (`pool.rs`); `cpu_mapped` while an mmap
    /// of the range maps it for the CPU.
    SemaphorePool {
        backing: Arc<Backing>,
        cpu_mapped: bool,
    },
    /// Made by MAP_DYNAMIC_PARALLELISM_REGION: SKED-reflected PTEs on one
    /// GPU (index `gpu`), no memory behind them (uvm_va_range.c:567).
    SkedReflected { gpu: u32 },
}

/// A range group (`UVM_CREATE_RANGE_GROUP`) and the addresses in it.
pub(crate) struct Group {
    /// Numbered per VA space from 1 (uvm_range_group.c:99).
    pub(crate) id: u64,
    /// `[start, start + len)` pieces; no address is in two groups (the
    /// driver keeps one tree per VA space, uvm_range_group.c:527-625).
    pub(crate) ranges: KVec<(u64, u64)>,
}

pub(crate) struct Range {
    pub(crate) start: u64,
    pub(crate) len: u64,
    pub(crate) kind: RangeKind,
}

impl Range {
    pub(crate) fn end(&self) -> u64 {
        self.start + self.len
    }

    pub(crate) fn contains(&self, addr: u64) -> bool {
        self.start <= addr && addr < self.end()
    }
}

/// A UVM VA space (one per `UVM_INITIALIZE`d file).
pub(crate) struct Space {
    pub(crate) id: u64,
    /// Process that created it (for the test-only residency view).
    pub(crate) tgid: i32,
    pub(crate) flags: u64,
    /// The recorded mm (an `mmgrab` reference); `None` in multi-process
    /// sharing mode.
    pub(crate) mm: Option<ARef<Mm>>,
    pub(crate) mm_state: MmState,
    pub(crate) gpus: KVec<GpuReg>,
    pub(crate) ranges: KVec<Range>,
    pub(crate) chans: KVec<ChanReg>,
    /// Range groups.
    pub(crate) groups: KVec<Group>,
    /// The last group id handed out.
    pub(crate) last_group: u64,
    /// Touches that could not be served.
    pub(crate) faults: u64,
}

impl Space {
    pub(crate) fn gpu(&self, gpu: u32) -> Option<&GpuReg> {
        self.gpus.iter().find(|g| g.gpu == gpu)
    }

    pub(crate) fn has_vaspace(&self, gpu: u32) -> bool {
        self.gpu(gpu).is_some_and(|g| g.vaspace.is_some())
    }

    pub(crate) fn overlaps(&self, start: u64, len: u64) -> bool {
        self.ranges
            .iter()
            .any(|r| uvm::overlaps(r.start, r.len, start, len))
    }

    /// The first address in `[base, end]` aligned to `align` where `size`
    /// bytes overlap no range, if any (`find_va_in_range`,
    /// uvm_user_channel.c:266-291 at 550.163.01). `size` and `align` are
    /// not 0.
    pub(crate) fn free_va_in(&self, base: u64, end: u64, size: u64, align: u64) -> Option<u64> {
        let mut at = base;
        loop {
            at = at.checked_next_multiple_of(align)?;
            let last = at.checked_add(size - 1)?;
            if at < base || last > end {
                return None;
            }
            let next = self
                .ranges
                .iter()
                .filter(|r| uvm::overlaps(r.start, r.len, at, size))
                .min_by_key(|r| r.start);
            match next {
                None => return Some(at),
                Some(r) => at = r.end(),
            }
        }
    }

    /// Adds a range at `[start, start + len)`; NV_ERR_UVM_ADDRESS_IN_USE
    /// if it overlaps one.
    pub(crate) fn add_range(&mut self, start: u64, len: u64, kind: RangeKind) -> StatusResult {
        if self.overlaps(start, len) {
            return Err(NV_ERR_UVM_ADDRESS_IN_USE);
        }
        self.ranges
            .push(Range { start, len, kind }, GFP_KERNEL)
            .map_err(|_| NV_ERR_NO_MEMORY)
    }

    pub(crate) fn range_at(&self, addr: u64) -> Option<usize> {
        self.ranges.iter().position(|r| r.contains(addr))
    }

    /// The semaphore pool holding `addr`: its backing and the offset.
    pub(crate) fn pool_at(&self, addr: u64) -> Option<(&Backing, usize)> {
        self.ranges.iter().find_map(|r| match &r.kind {
            RangeKind::SemaphorePool { backing, .. } if r.contains(addr) => {
                Some((&**backing, usize::try_from(addr - r.start).ok()?))
            }
            _ => None,
        })
    }

    pub(crate) fn managed_at(&self, addr: u64) -> Option<usize> {
        self.range_at(addr)
            .filter(|&i| matches!(self.ranges[i].kind, RangeKind::Managed { .. }))
    }

    /// Whether managed ranges cover all of `[base, base + len)`.
    pub(crate) fn fully_managed(&self, base: u64, len: u64) -> bool {
        let end = base + len;
        let mut cur = base;
        while cur < end {
            match self.managed_at(cur) {
                Some(i) => cur = self.ranges[i].end(),
                None => return false,
            }
        }
        true
    }

    /// Takes `[base, base + len)` out of every range group, splitting
    /// pieces that stick out (uvm_range_group.c:545-604).
    pub(crate) fn ungroup(&mut self, base: u64, len: u64) -> StatusResult {
        let end = base + len;
        for g in self.groups.iter_mut() {
            let mut kept = KVec::new();
            for &(s, l) in g.ranges.iter() {
                let e = s + l;
                if !uvm::overlaps(s, l, base, len) {
                    kept.push((s, l), GFP_KERNEL)
                        .map_err(|_| NV_ERR_NO_MEMORY)?;
                    continue;
                }
                if s < base {
                    kept.push((s, base - s), GFP_KERNEL)
                        .map_err(|_| NV_ERR_NO_MEMORY)?;
                }
                if e > end {
                    kept.push((end, e - end), GFP_KERNEL)
                        .map_err(|_| NV_ERR_NO_MEMORY)?;
                }
            }
            g.ranges = kept;
        }
        Ok(())
    }

    pub(crate) fn resident_bytes(&self, gpu: u32) -> u64 {
        let mut n = 0;
        for r in self.ranges.iter() {
            if let RangeKind::Managed { resident, .. } = &r.kind {
                n += resident.iter().filter(|c| c.gpu == gpu).count() as u64 * CHUNK;
            }
        }
        n
    }
}

/// The UVM state of the whole double.
pub(crate) struct Uvm {
    pub(crate) spaces: KVec<Space>,
    pub(crate) next_space: u64,
    /// The LRU clock.
    pub(crate) tick: u64,
    /// Managed bytes resident per GPU (all VA spaces).
    pub(crate) resident: [u64; MAX_GPUS],
}

impl Uvm {
    /// No VA spaces.
    pub(crate) const fn new() -> Self {
        Self {
            spaces: KVec::new(),
            next_space: 1,
            tick: 0,
            resident: [0; MAX_GPUS],
        }
    }

    pub(crate) fn index(&self, id: u64) -> Option<usize> {
        self.spaces.iter().position(|s| s.id == id)
    }
}

/// Reads a `u64` of a parameter block (for blocks too large to decode on
/// the stack).
/// The per-GPU mapping attributes of block `p`, laid out as `row` (the
/// claimed release's: 535's array holds 32 GPUs, `uvm_ioctl.h:492-504` at
/// 535.288.01, later ones 256): `gpuAttributesCount`, and how many the
/// array holds.
pub(crate) fn attribute_count(p: &[u8], row: &UvmRow) -> (u64, u64) {
    let at = |name| row.field(name).unwrap_or(p.len());
    let count = rd_u64(p, at("gpu_attributes_count"));
    let room = at("gpu_attributes_count").saturating_sub(at("per_gpu_attributes"))
        / GpuMappingAttributes::SIZE;
    (count, room.min(uvm::MAX_GPU_ATTRIBUTES) as u64)
}

/// Attribute `i` of that array; past the block NV_ERR_INVALID_ARGUMENT.
pub(crate) fn attribute(p: &[u8], row: &UvmRow, i: usize) -> StatusResult<GpuMappingAttributes> {
    let at = row.field("per_gpu_attributes").unwrap_or(p.len()) + i * GpuMappingAttributes::SIZE;
    p.get(at..at + GpuMappingAttributes::SIZE)
        .map(GpuMappingAttributes::decode)
        .ok_or(NV_ERR_INVALID_ARGUMENT)
}

pub(crate) fn rd_u64(p: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    if let Some(s) = p.get(at..at + 8) {
        b.copy_from_slice(s);
    }
    u64::from_ne_bytes(b)
}

/// Reads a `u32` of a parameter block.
pub(crate) fn rd_u32(p: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    if let Some(s) = p.get(at..at + 4) {
        b.copy_from_slice(s);
    }
    u32::from_ne_bytes(b)
}
