// SPDX-License-Identifier: GPL-2.0

//! The classes the double allocates, one handler each (`table.rs`, `CLASSES`
//! names which serves which class): what an object of the class holds, and
//! the parent it needs.

use kernel::{prelude::*, sync::Arc};

use super::call::{parse_class_params, parse_params, NewObject};
use super::grctx::is_compute_class;
use super::state::{Driver, Rm};
use crate::base::{heap_size, store, ObjKind, StatusResult};
use crate::file;
use crate::kapi::fdtable;
use crate::memory::{Backing, MAX_BACKED};
use crate::nv::abi::{self, class, heap, status::*};
use crate::settings;

/// The GPU's big page size. GUESS: `kgmmuGetMaxBigPageSize_HAL` is 64 KiB
/// or 128 KiB depending on the GPU; the double's GPUs use 64 KiB.
const BIG_PAGE: u64 = 64 << 10;
/// RM's huge page (`RM_PAGE_SIZE_HUGE`, 2 MiB).
const HUGE_PAGE: u64 = 2 << 20;

/// The page size RM picks for a client's VRAM allocation of `size` bytes
/// with attributes `attr`/`attr2`; the size is rounded up to it. At
/// 595.45.04: an explicit `NVOS32_ATTR_PAGE_SIZE` wins (`mem.c:295-326`:
/// 4KB, BIG, or HUGE with attr2's 2 MiB / 512 MiB / 256 GiB); by default
/// an allocation of 2 MiB or more gets 2 MiB pages (`mem_mgr.c:1760-1765`)
/// and a smaller client allocation the big page (`mem_mgr.c:1766-1772`).
/// `memmgrAllocDetermineAlignment_GM107` rounds the size up to the page
/// (`mem_mgr_gm107.c:240,258`) and `vidmemConstruct` writes the rounded
/// size back into the params (`video_mem.c:824,1075`).
fn vram_page_size(size: u64, attr: u32, attr2: u32) -> u64 {
    match heap::ATTR_PAGE_SIZE.get(attr) {
        heap::ATTR_PAGE_SIZE_4KB => 4 << 10,
        heap::ATTR_PAGE_SIZE_BIG => BIG_PAGE,
        heap::ATTR_PAGE_SIZE_HUGE => match heap::ATTR2_PAGE_SIZE_HUGE.get(attr2) {
            heap::ATTR2_PAGE_SIZE_HUGE_512MB => 512 << 20,
            heap::ATTR2_PAGE_SIZE_HUGE_256GB => 256 << 30,
            _ => HUGE_PAGE,
        },
        _ if size >= HUGE_PAGE => HUGE_PAGE,
        _ => BIG_PAGE,
    }
}

/// Whether `c` is an engine class (compute, copy) of the claimed
/// release's table: what lives in a channel (RM's `ChannelDescendant`).
pub(crate) fn is_engine_class(c: u32) -> bool {
    settings::abi()
        .class_row(c)
        .is_some_and(|r| r.family == crate::nv::table::Family::Engine)
}

/// RM's answer to NV01_DEVICE_0 for device instance `gpu` when it has no
/// GPU there. An instance past NV_MAX_DEVICES (32) is NV_ERR_INVALID_ARGUMENT
/// (`gpumgrIsDeviceInstanceValid`, `gpu_mgr.c:563-564` at 550.163.01;
/// `device.c:359-360`). An instance in range with no GPU: from 550,
/// NV_ERR_INVALID_STATE (`_deviceInit`, `device.c:363-367` at 550.163.01:
/// `gpumgrGetPrimaryForDevice` finds none); at 535, NV_ERR_INVALID_CLASS
/// (`deviceConstruct`, `device.c:111-114` at 535.261.03). Both measured on
/// the real driver with no GPU (the real-driver lane's `device_refusal`).
fn absent_device_status(gpu: u32) -> u32 {
    const NV_MAX_DEVICES: u32 = 32;
    if gpu >= NV_MAX_DEVICES {
        NV_ERR_INVALID_ARGUMENT
    } else if settings::release().starts_with("535.") {
        NV_ERR_INVALID_CLASS
    } else {
        NV_ERR_INVALID_STATE
    }
}

impl Driver {
    /// NV01_DEVICE_0: a GPU the caller has open (its node in the fd table).
    pub(crate) fn new_device(&self, n: &mut NewObject<'_>) -> StatusResult<ObjKind> {
        if n.h_parent != n.h_root {
            return Err(NV_ERR_INVALID_OBJECT_PARENT);
        }
        // No params (a NULL pointer): the defaults, device 0.
        let dp: abi::DeviceAllocParams = if n.params.is_empty() {
            abi::DeviceAllocParams::default()
        } else {
            parse_params(n.params)?
        };
        let gpu = dp.device_id;
        if gpu as usize >= self.gpus.len() {
            return Err(absent_device_status(gpu));
        }
        if n.caller.checks_fds() && !fdtable::current_has_file(|file| file::is_gpu_file(file, gpu))
        {
            return Err(NV_ERR_INSUFFICIENT_PERMISSIONS);
        }
        Ok(ObjKind::Device { gpu })
    }

    /// NV20_SUBDEVICE_0, under a device.
    pub(crate) fn new_subdevice(&self, n: &mut NewObject<'_>) -> StatusResult<ObjKind> {
        Ok(match n.parent_kind {
            Some(ObjKind::Device { gpu }) => ObjKind::Subdevice { gpu },
            _ => return Err(NV_ERR_INVALID_OBJECT_PARENT),
        })
    }

    /// NV01_MEMORY_LOCAL_USER (VRAM, from the heap) and NV01_MEMORY_SYSTEM.
    pub(crate) fn new_memory(&self, n: &mut NewObject<'_>) -> StatusResult<ObjKind> {
        let gpu = n.parent_gpu.ok_or(NV_ERR_INVALID_OBJECT_PARENT)?;
        let mut mp: abi::MemoryAllocationParams = parse_class_params(n.params)?;
        let vram = n.class == class::NV01_MEMORY_LOCAL_USER && mp.allocates_vram();
        if mp.size == 0 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        let mem = if vram {
            let size = mp
                .size
                .checked_next_multiple_of(vram_page_size(mp.size, mp.attr, mp.attr2))
                .ok_or(NV_ERR_NO_MEMORY)?;
            let heap = heap_size(self.gpus[gpu as usize].vram);
            if n.rm.vram_used[gpu as usize] + size > heap {
                return Err(NV_ERR_NO_MEMORY);
            }
            mp.size = size;
            n.rm.new_mem(gpu, size, true, None)?
        } else if n.class == class::NV01_MEMORY_SYSTEM {
            let size = mp
                .size
                .checked_next_multiple_of(4096)
                .ok_or(NV_ERR_NO_MEMORY)?;
            if size > MAX_BACKED {
                return Err(NV_ERR_INSUFFICIENT_RESOURCES);
            }
            let b = Backing::new(size).map_err(|_| NV_ERR_NO_MEMORY)?;
            let b = Arc::new(b, GFP_KERNEL).map_err(|_| NV_ERR_NO_MEMORY)?;
            mp.size = size;
            n.rm.new_mem(gpu, size, false, Some(b))?
        } else {
            // 0x40 that is virtual or not in VIDMEM: no VRAM committed.
            n.rm.new_mem(gpu, mp.size, false, None)?
        };
        store(&mp, n.params);
        Ok(ObjKind::Memory { mem })
    }

    /// NV01_MEMORY_VIRTUAL: a range of the legacy system-memory DMA
    /// space, nothing committed.
    pub(crate) fn new_virtual_memory(&self, n: &mut NewObject<'_>) -> StatusResult<ObjKind> {
        n.parent_gpu.ok_or(NV_ERR_INVALID_OBJECT_PARENT)?;
        Ok(ObjKind::Other)
    }

    /// NV50_MEMORY_VIRTUAL: a GPU VA range, holding the page tables RM
    /// reserves for it in its page-level pool. RM reserves them as it
    /// makes the range (`virtual_mem.c:372-408` at 550.163.01), unless the
    /// range is `NVOS32_ALLOC_FLAGS_LAZY` or `EXTERNALLY_MANAGED`, and at
    /// each MAP_MEMORY_DMA into it (`rmapi/mapping.c:108-128`). The double
    /// charges no page tables at MAP_MEMORY_DMA, so it holds the whole range's at once
    /// (`abi::virtual_range_charge`, the bound of those mappings) for every
    /// range; a pool that cannot grow fails the allocation with
    /// `NV_ERR_NO_MEMORY`.
    pub(crate) fn new_gpu_virtual_memory(&self, n: &mut NewObject<'_>) -> StatusResult<ObjKind> {
        // Under a device only (`resource_list.h:463` at 550.163.01).
        let Some(ObjKind::Device { gpu }) = n.parent_kind else {
            return Err(NV_ERR_INVALID_OBJECT_PARENT);
        };
        let mp: abi::MemoryAllocationParams = parse_class_params(n.params)?;
        let mem = self.commit(n.rm, gpu, abi::virtual_range_charge(mp.size))?;
        let fixed = mp.flags & abi::heap::ALLOC_FLAGS_FIXED_ADDRESS_ALLOCATE != 0;
        Ok(ObjKind::VirtualMemory {
            mem,
            base: fixed.then_some(mp.offset),
            size: mp.size,
        })
    }

    /// FERMI_VASPACE_A, with its flags, committing its top page levels
    /// (`abi::VASPACE_PAGE_LEVELS`: RM reserves them in the device's
    /// page-level pool, `vaspace_api.c:714-735` at 550.163.01; a pool that
    /// cannot grow fails the allocation with `NV_ERR_NO_MEMORY`).
    pub(crate) fn new_vaspace(&self, n: &mut NewObject<'_>) -> StatusResult<ObjKind> {
        // Under a device or subdevice only (`resource_list.h:623` at
        // 550.163.01; another parent: `alloc_free.c:844-855`).
        let gpu = match n.parent_kind {
            Some(ObjKind::Device { gpu } | ObjKind::Subdevice { gpu }) => gpu,
            _ => return Err(NV_ERR_INVALID_OBJECT_PARENT),
        };
        // The params are the class's size (see `alloc_params`).
        let flags = parse_class_params::<abi::VaSpaceAllocParams>(n.params).map_or(0, |v| v.flags);
        let mem = self.commit(n.rm, gpu, abi::VASPACE_PAGE_LEVELS.into())?;
        Ok(ObjKind::VaSpace { gpu, flags, mem })
    }

    /// Commits `bytes` of VRAM on `gpu` for an object of RM's own (a VA
    /// space's page levels, a channel's instance block), from the heap as
    /// any VRAM: `NV_ERR_NO_MEMORY` when it is full.
    fn commit(&self, rm: &mut Rm, gpu: u32, bytes: u64) -> StatusResult<u32> {
        let heap = heap_size(self.gpus[gpu as usize].vram);
        if bytes > heap.saturating_sub(rm.vram_used[gpu as usize]) {
            return Err(NV_ERR_NO_MEMORY);
        }
        rm.new_mem(gpu, bytes, true, None)
    }

    /// FERMI_CONTEXT_SHARE_A, with the VA space it names.
    pub(crate) fn new_context_share(&self, n: &mut NewObject<'_>) -> StatusResult<ObjKind> {
        n.parent_gpu.ok_or(NV_ERR_INVALID_OBJECT_PARENT)?;
        let vaspace =
            parse_params::<abi::CtxShareAllocParams>(n.params).map_or(0, |c| c.h_va_space);
        Ok(ObjKind::CtxShare { vaspace })
    }

    /// KEPLER_CHANNEL_GROUP_A (a TSG), under a device: the engine gets it.
    pub(crate) fn new_channel_group(&self, n: &mut NewObject<'_>) -> StatusResult<ObjKind> {
        let gpu = match n.parent_kind {
            Some(ObjKind::Device { gpu }) => gpu,
            _ => return Err(NV_ERR_INVALID_OBJECT_PARENT),
        };
        let (vaspace, engine) = parse_params::<abi::ChannelGroupAllocParams>(n.params)
            .map_or((0, 0), |t| (t.h_va_space, t.engine_type));
        let id = n.rm.next_tsg;
        n.rm.next_tsg += 1;
        let client = n.rm.clients[n.ci].handle;
        self.gpus[gpu as usize]
            .engine
            .add_tsg(id, client)
            .map_err(|_| NV_ERR_NO_MEMORY)?;
        Ok(ObjKind::Tsg {
            gpu,
            id,
            vaspace,
            engine,
            grctx: 0,
        })
    }

    /// A GPFIFO channel, in a TSG or (with a TSG of its own) under a device.
    pub(crate) fn new_channel(&self, n: &mut NewObject<'_>) -> StatusResult<ObjKind> {
        let (gpu, tsg, own_tsg, tsg_vaspace, tsg_engine) = match n.parent_kind {
            Some(ObjKind::Tsg {
                gpu,
                id,
                vaspace,
                engine,
                ..
            }) => (gpu, id, false, vaspace, Some(engine)),
            Some(ObjKind::Device { gpu }) => {
                // A channel outside a TSG gets an internal TSG of its own.
                let id = n.rm.next_tsg;
                n.rm.next_tsg += 1;
                let client = n.rm.clients[n.ci].handle;
                self.gpus[gpu as usize]
                    .engine
                    .add_tsg(id, client)
                    .map_err(|_| NV_ERR_NO_MEMORY)?;
                (gpu, id, true, 0, None)
            }
            _ => return Err(NV_ERR_INVALID_OBJECT_PARENT),
        };
        let made = self.channel_in_tsg(n, gpu, tsg, (tsg_vaspace, tsg_engine), own_tsg);
        if made.is_err() && own_tsg {
            self.gpus[gpu as usize].engine.remove_tsg(tsg);
        }
        made
    }

    /// The channel itself, once its TSG exists; the caller removes a TSG
    /// made for it alone when this fails.
    fn channel_in_tsg(
        &self,
        n: &mut NewObject<'_>,
        gpu: u32,
        tsg: u32,
        (tsg_vaspace, tsg_engine): (u32, Option<u32>),
        own_tsg: bool,
    ) -> StatusResult<ObjKind> {
        let cp: abi::ChannelAllocParams = parse_class_params(n.params)?;
        let ring = match cp.h_userd_memory[0] {
            0 => None,
            h => Some(Self::userd_ring(n, h, &cp)?),
        };
        // Its instance block, from framebuffer (`kchannelAllocMem_GM107`,
        // `kernel_channel_gm107.c:197-236` at 550.163.01).
        let mem = self.commit(n.rm, gpu, abi::INSTANCE_BLOCK.into())?;
        let token = n.rm.next_token;
        n.rm.next_token += 1;
        let engine = &self.gpus[gpu as usize].engine;
        // A ring at a GPU virtual address holds GPFIFO entries (libcuda's
        // channels); without one, the double's own work items follow USERD.
        let gpfifo = (cp.gp_fifo_offset != 0).then_some(cp.gp_fifo_offset);
        if engine
            .add_channel(tsg, token, ring, cp.gp_fifo_entries, gpfifo)
            .is_err()
        {
            n.rm.put_mem(mem);
            return Err(NV_ERR_NO_MEMORY);
        }
        let ctx_vaspace = match n.rm.clients[n.ci].find(cp.h_context_share).map(|o| o.kind) {
            Some(ObjKind::CtxShare { vaspace }) if cp.h_context_share != 0 => vaspace,
            _ => 0,
        };
        let vaspace = [cp.h_va_space, ctx_vaspace, tsg_vaspace]
            .into_iter()
            .find(|&h| h != 0)
            .unwrap_or(0);
        Ok(ObjKind::Channel {
            gpu,
            token,
            tsg,
            own_tsg,
            vaspace,
            // A channel of a TSG takes the TSG's engine
            // (`gpu/fifo/kernel_channel.c:701` at 550.163.01).
            engine: tsg_engine.unwrap_or(cp.engine_type),
            mem,
            grctx: 0,
        })
    }

    /// The ring a channel's USERD memory `h` holds. RM needs no CPU
    /// mapping of USERD: memory the caller has not mapped yet (the double
    /// backs VRAM when it is first mapped) is backed here.
    fn userd_ring(
        n: &mut NewObject<'_>,
        h: u32,
        cp: &abi::ChannelAllocParams,
    ) -> StatusResult<(Arc<Backing>, usize)> {
        let b = match n.rm.clients[n.ci].find(h).map(|o| o.kind) {
            Some(ObjKind::Memory { mem }) => n.rm.mem(mem).and_then(|m| {
                if m.backing.is_none() && m.size <= MAX_BACKED {
                    m.backing = Backing::new(m.size)
                        .ok()
                        .and_then(|b| Arc::new(b, GFP_KERNEL).ok());
                }
                m.backing.clone()
            }),
            _ => None,
        };
        let off = cp.userd_offset[0] as usize;
        // USERD, then the double's own work items (a GPFIFO channel's
        // entries are at `gpFifoOffset`, in GPU virtual memory).
        let need = match cp.gp_fifo_offset {
            0 => crate::engine::RING_ENTRIES_OFFSET + cp.gp_fifo_entries as usize * 8,
            _ => crate::engine::RING_ENTRIES_OFFSET,
        };
        match b {
            // A fuzzed offset near the top of the range must not overflow
            // (it did: an add-overflow BUG in the double).
            Some(b) if off % 8 == 0 && off.checked_add(need).is_some_and(|e| e <= b.len()) => {
                Ok((b, off))
            }
            _ => Err(NV_ERR_INVALID_ARGUMENT),
        }
    }

    /// TURING/AMPERE/HOPPER_USERMODE_A: the doorbell page, under a subdevice.
    pub(crate) fn new_usermode(&self, n: &mut NewObject<'_>) -> StatusResult<ObjKind> {
        let gpu = match n.parent_kind {
            Some(ObjKind::Subdevice { gpu }) => gpu,
            _ => return Err(NV_ERR_INVALID_OBJECT_PARENT),
        };
        let b = Backing::new(64 << 10).map_err(|_| NV_ERR_NO_MEMORY)?;
        let b = Arc::new(b, GFP_KERNEL).map_err(|_| NV_ERR_NO_MEMORY)?;
        self.gpus[gpu as usize]
            .engine
            .add_usermode(b.clone())
            .map_err(|_| NV_ERR_NO_MEMORY)?;
        let mem = n.rm.new_mem(gpu, 64 << 10, false, Some(b))?;
        Ok(ObjKind::Usermode { gpu, mem })
    }

    /// RM_USER_SHARED_DATA: a page of telemetry (not modelled: the
    /// double maps nothing for it). Its `polledDataMask` (8 bytes;
    /// 4 reserved ones before 550) is recorded for the tests.
    /// Parent: a subdevice (`resource_list.h:844`).
    pub(crate) fn new_user_shared_data(&self, n: &mut NewObject<'_>) -> StatusResult<ObjKind> {
        if !matches!(n.parent_kind, Some(ObjKind::Subdevice { .. })) {
            return Err(NV_ERR_INVALID_OBJECT_PARENT);
        }
        let mut m = [0u8; 8];
        let len = n.params.len().min(8);
        m[..len].copy_from_slice(&n.params[..len]);
        settings::RUSD_POLLED
            .fetch_or(u64::from_ne_bytes(m), core::sync::atomic::Ordering::Relaxed);
        Ok(ObjKind::Other)
    }

    /// GT200_DEBUGGER, as RM constructs it (`ksmdbgssnConstruct_IMPL`,
    /// `kernel_sm_debugger_session.c:241-308` at 595.45.04 and 550.163.01):
    /// `hAppClient` 0 is the caller's own client (245-249); a client RM does
    /// not have is `NV_ERR_INVALID_OBJECT_HANDLE` (252-253, from
    /// `rs_server.c:3057-3059`), whichever file it is bound to (RM looks it
    /// up globally); `hClass3dObject` not an object of that client is
    /// `NV_ERR_INVALID_OBJECT_PARENT` (255-261), and one that is not a
    /// graphics (engine) object `NV_ERR_INVALID_OBJECT` (304-308). GUESS:
    /// the debugging-rights check (283-301) passes, as for clients of one
    /// user under RM's default share policy.
    pub(crate) fn new_debugger(&self, n: &mut NewObject<'_>) -> StatusResult<ObjKind> {
        let word = |i: usize| {
            n.params
                .get(i..i + 4)
                .map_or(0, |b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
        };
        let app = match word(4) {
            0 => n.h_root,
            h => h,
        };
        let object = word(8);
        let client = n.rm.any_client(app).ok_or(NV_ERR_INVALID_OBJECT_HANDLE)?;
        if !client.has(object) {
            return Err(NV_ERR_INVALID_OBJECT_PARENT);
        }
        match client.find(object).map(|o| &o.kind) {
            Some(ObjKind::Engine { .. }) => Ok(ObjKind::Other),
            _ => Err(NV_ERR_INVALID_OBJECT),
        }
    }

    /// An engine object of the release's (compute, copy), in a
    /// channel. GUESS: RM accepts only the GPU's own engine classes;
    /// the double takes every engine class its release's table has. A
    /// compute object commits its TSG's GR context buffers if they are
    /// not yet (`grctx.rs`); without the memory it fails.
    pub(crate) fn new_engine_object(&self, n: &mut NewObject<'_>) -> StatusResult<ObjKind> {
        let Some(ObjKind::Channel { gpu, .. }) = n.parent_kind else {
            return Err(NV_ERR_INVALID_OBJECT_PARENT);
        };
        if is_compute_class(n.class) {
            self.commit_gr_context(n.rm, n.ci, n.h_parent)?;
        }
        Ok(ObjKind::Engine {
            gpu,
            class: n.class,
        })
    }
}
