// SPDX-License-Identifier: GPL-2.0

//! Memory escapes (RM_VID_HEAP_CONTROL, RM_ALLOC_MEMORY, RM_MAP_MEMORY,
//! RM_UNMAP_MEMORY), a kernel client's mappings, and NV0041
//! GET_SURFACE_INFO.

use kernel::prelude::*;
use kernel::{
    page::PAGE_SIZE,
    sync::{Arc, ArcBorrow},
};

use super::call::{fill_info_list, parse_params, Ctl};
use super::state::{Caller, CpuMap, DmaMap, Driver, KMap};
use crate::base::{current_tgid, heap_size, parse, status_of, store, ObjKind, StatusResult};
use crate::file::{self, Kind, MapCtx, NvFile};
use crate::kapi::fdtable;
use crate::memory::{Backing, MAX_BACKED};
use crate::nv::abi::{self, class, heap, status::*, surface_info, Wire};
use crate::settings;

impl Driver {
    /// RM_VID_HEAP_CONTROL: the heap sizes, an allocation, a free.
    pub(crate) fn vid_heap(&self, f: &ArcBorrow<'_, NvFile>, p: &mut [u8]) -> Result {
        let mut a: abi::Nvos32 = parse(p)?;
        let r: StatusResult = (|| {
            let mut rm = self.rm.lock();
            let ci = rm.client_for(a.h_root, Some(f.client_id()))?;
            let gpu = rm.clients[ci]
                .gpu_of(a.h_object_parent)
                .ok_or(NV_ERR_INVALID_OBJECT_PARENT)?;
            match a.function {
                heap::FUNCTION_INFO => {
                    let heap = heap_size(self.gpus[gpu as usize].vram);
                    a.total = heap;
                    a.free = heap - rm.vram_used[gpu as usize];
                    let mut info = a.info();
                    info.size = a.free;
                    info.offset = rm.vram_used[gpu as usize];
                    a.set_info(&info);
                    Ok(())
                }
                heap::FUNCTION_ALLOC_SIZE
                | heap::FUNCTION_ALLOC_SIZE_RANGE
                | heap::FUNCTION_ALLOC_TILED_PITCH_HEIGHT => {
                    drop(rm);
                    let (h_new, cls, mp) = a.heap_memory_params().ok_or(NV_ERR_INVALID_FUNCTION)?;
                    let mut buf = mp.to_bytes();
                    let h = self.alloc(
                        Caller::File(f.client_id()),
                        a.h_root,
                        a.h_object_parent,
                        h_new,
                        cls,
                        &mut buf,
                    )?;
                    a.set_heap_result(h, abi::MemoryAllocationParams::decode(&buf).size);
                    Ok(())
                }
                heap::FUNCTION_FREE => {
                    let fr = a.free_args();
                    self.free(&mut rm, a.h_root, fr.h_memory, Some(f.client_id()))
                }
                _ => Err(NV_ERR_INVALID_FUNCTION),
            }
        })();
        a.status = status_of(r);
        store(&a, p);
        Ok(())
    }

    /// RM_ALLOC_MEMORY: the heap's size (class 0x40), or OS-descriptor
    /// memory (`osdesc.rs`).
    pub(crate) fn alloc_memory(&self, f: &ArcBorrow<'_, NvFile>, p: &mut [u8]) -> Result {
        let mut a: abi::Nvos02WithFd = parse(p)?;
        if a.params.h_class == super::osdesc::NV01_MEMORY_SYSTEM_OS_DESCRIPTOR {
            a.params.status = status_of(self.alloc_os_descriptor(f.client_id(), &a.params));
            store(&a, p);
            return Ok(());
        }
        let r: StatusResult = (|| {
            let mut rm = self.rm.lock();
            let ci = rm.client_for(a.params.h_root, Some(f.client_id()))?;
            let gpu = rm.clients[ci]
                .gpu_of(a.params.h_object_parent)
                .ok_or(NV_ERR_INVALID_OBJECT_PARENT)?;
            if a.params.h_class != class::NV01_MEMORY_LOCAL_USER {
                return Err(NV_ERR_NOT_SUPPORTED);
            }
            // For a non-root caller this allocates nothing: it reports the heap.
            a.params.limit = heap_size(self.gpus[gpu as usize].vram) - 1;
            Ok(())
        })();
        a.params.status = status_of(r);
        store(&a, p);
        Ok(())
    }

    /// RM_MAP_MEMORY: sets up the mapping context of the file it names.
    pub(crate) fn map_memory(&self, f: &ArcBorrow<'_, NvFile>, p: &mut [u8]) -> Result {
        let delay = settings::MAP_DELAY_MS.load(core::sync::atomic::Ordering::Relaxed);
        if delay > 0 {
            kernel::time::delay::fsleep(kernel::time::Delta::from_millis(i64::from(delay)));
        }
        let mut a: abi::Nvos33WithFd = parse(p)?;
        let r: StatusResult = (|| {
            let m = &a.params;
            let target = fdtable::fget(a.fd).map_err(|_| NV_ERR_INVALID_ARGUMENT)?;
            let target = file::nv_file(&target).ok_or(NV_ERR_INVALID_ARGUMENT)?;
            let mut rm = self.rm.lock();
            let ci = rm.client_for(m.h_client, Some(f.client_id()))?;
            // The real driver creates the mmap context only for the process
            // that created the client (`rm_create_mmap_context`:
            // `ProcID != osGetCurrentProcess()` is NV_ERR_INVALID_CLIENT),
            // whichever file the call comes through.
            if rm.clients[ci].proc != current_tgid() {
                return Err(NV_ERR_INVALID_CLIENT);
            }
            let kind = rm.clients[ci]
                .find(m.h_memory)
                .map(|o| o.kind)
                .ok_or(NV_ERR_OBJECT_NOT_FOUND)?;
            let mem = match kind {
                ObjKind::Memory { mem } | ObjKind::Usermode { mem, .. } => mem,
                _ => return Err(NV_ERR_INVALID_OBJECT_HANDLE),
            };
            let (gpu, size, vram) = {
                let mm = rm.mem(mem).ok_or(NV_ERR_OBJECT_NOT_FOUND)?;
                (mm.gpu, mm.size, mm.vram)
            };
            // System memory maps through a ctl fd, VRAM and USERMODE through
            // the GPU's node.
            let node_ok = match (kind, vram) {
                (ObjKind::Memory { .. }, false) => target.kind == Kind::Ctl,
                _ => target.kind == Kind::Gpu(gpu),
            };
            if !node_ok {
                return Err(NV_ERR_INVALID_ARGUMENT);
            }
            // RM wants a length, and the mapping inside the memory; not a
            // whole number of pages (`rmapiMapToCpuWithSecInfoV2`,
            // `rmapi/mapping_cpu.c:283-302` at 550.163.01: libcuda maps
            // 0x5ea410 bytes of system memory). The process maps whole
            // pages, and the memory's backing has them.
            if m.length == 0
                || m.offset % 4096 != 0
                || m.offset.checked_add(m.length).is_none_or(|e| e > size)
            {
                return Err(NV_ERR_INVALID_LIMIT);
            }
            let len = m.length.next_multiple_of(4096);
            let backing = {
                let mm = rm.mem(mem).ok_or(NV_ERR_OBJECT_NOT_FOUND)?;
                match &mm.backing {
                    Some(b) => b.clone(),
                    None => {
                        if size > MAX_BACKED {
                            return Err(NV_ERR_INSUFFICIENT_RESOURCES);
                        }
                        let b = Backing::new(size).map_err(|_| NV_ERR_NO_MEMORY)?;
                        let b = Arc::new(b, GFP_KERNEL).map_err(|_| NV_ERR_NO_MEMORY)?;
                        mm.backing = Some(b.clone());
                        b
                    }
                }
            };
            let mut ctx = target.map.lock();
            if !matches!(*ctx, MapCtx::Unused) {
                return Err(NV_ERR_STATE_IN_USE);
            }
            *ctx = MapCtx::Ready {
                backing,
                offset: m.offset as usize,
                len: len as usize,
            };
            // GUESS: the linear address is only a cookie once the fresh fd
            // is mmapped at offset 0; report the offset the fd maps.
            let cm = CpuMap {
                client: m.h_client,
                memory: m.h_memory,
                proc: current_tgid(),
                address: 0,
            };
            rm.cpu_maps
                .push(cm, GFP_KERNEL)
                .map_err(|_| NV_ERR_NO_MEMORY)?;
            a.params.p_linear_address = 0;
            Ok(())
        })();
        a.params.status = status_of(r);
        store(&a, p);
        Ok(())
    }

    /// RM_UNMAP_MEMORY: only the client is checked; the CPU mapping of the
    /// memory at that address, if any, is forgotten.
    pub(crate) fn unmap_memory(&self, f: &ArcBorrow<'_, NvFile>, p: &mut [u8]) -> Result {
        let mut a: abi::Nvos34 = parse(p)?;
        let mut rm = self.rm.lock();
        a.status = match rm.client_for(a.h_client, Some(f.client_id())) {
            Ok(_) => NV_OK,
            Err(s) => s,
        };
        if a.status == NV_OK {
            let (c, h, at) = (a.h_client, a.h_memory, a.p_linear_address);
            if let Some(i) = rm
                .cpu_maps
                .iter()
                .position(|m| m.client == c && m.memory == h && m.address == at)
            {
                let _ = rm.cpu_maps.remove(i);
            }
        }
        store(&a, p);
        Ok(())
    }

    /// RM_MAP_MEMORY_DMA (NVOS46): maps `length` bytes at `offset` of memory
    /// object `hMemory` into NV50_MEMORY_VIRTUAL range `hDma` of device
    /// `hDevice`, at GPU virtual address `dmaOffset`, which is the caller's
    /// for a range that is not a context DMA (`nvos.h:2158-2161` at
    /// 550.163.01). As RM: the device a device or subdevice of the client,
    /// else `NV_ERR_INVALID_OBJECT` (`rmapi/mapping.c:80-90`); `offset +
    /// length` past the memory, `NV_ERR_INVALID_LIMIT` (`:158-166`).
    /// The double's own model (RM decides these in its GMMU code, which
    /// needs the GPU): the address range must lie in the virtual range,
    /// else `NV_ERR_INVALID_LIMIT`; a range the double did not place at a
    /// fixed address (it places none itself), a context DMA, or a length
    /// of 0 is `NV_ERR_NOT_SUPPORTED`; memory of another GPU
    /// `NV_ERR_INVALID_ARGUMENT`. The mapping is recorded on the range (no
    /// page tables are written: the double charges a range's page tables
    /// whole when it is made).
    pub(crate) fn map_memory_dma(&self, f: &ArcBorrow<'_, NvFile>, p: &mut [u8]) -> Result {
        let mut a = Nvos46::parse(p)?;
        let r: StatusResult = (|| {
            let mut rm = self.rm.lock();
            let ci = rm.client_for(a.h_client, Some(f.client_id()))?;
            let c = &rm.clients[ci];
            let gpu = match c.find(a.h_device).map(|o| o.kind) {
                Some(ObjKind::Device { gpu } | ObjKind::Subdevice { gpu }) => gpu,
                _ => return Err(NV_ERR_INVALID_OBJECT),
            };
            let (base, size) = match c.find(a.h_dma).map(|o| (o.parent, o.kind)) {
                Some((_, ObjKind::VirtualMemory { base: None, .. })) => {
                    return Err(NV_ERR_NOT_SUPPORTED)
                }
                Some((
                    parent,
                    ObjKind::VirtualMemory {
                        base: Some(b),
                        size,
                        ..
                    },
                )) => {
                    // Under this GPU's device.
                    if c.gpu_of(parent) != Some(gpu) {
                        return Err(NV_ERR_INVALID_ARGUMENT);
                    }
                    (b, size)
                }
                Some(_) => return Err(NV_ERR_NOT_SUPPORTED),
                None => return Err(NV_ERR_INVALID_OBJECT_HANDLE),
            };
            // Memory, or a compute object's MMIO page: RM_PAGE_SIZE bytes
            // nothing backs (`kgrobjGetMemInterMapParams_IMPL`,
            // `kgrobjSetComputeMmio_IMPL`, `gpu/gr/kernel_graphics_object.c:
            // 376-447` at 550.163.01; libcuda maps each channel's).
            let (mgpu, msize) = match c.find(a.h_memory).map(|o| o.kind) {
                Some(ObjKind::Memory { mem }) => rm
                    .mem(mem)
                    .map(|m| (m.gpu, m.size))
                    .ok_or(NV_ERR_INVALID_OBJECT_HANDLE)?,
                Some(ObjKind::Engine { gpu, class }) if super::grctx::is_compute_class(class) => {
                    (gpu, PAGE_SIZE as u64)
                }
                _ => return Err(NV_ERR_INVALID_OBJECT_HANDLE),
            };
            if a.offset.checked_add(a.length).is_none_or(|e| e > msize) {
                return Err(NV_ERR_INVALID_LIMIT);
            }
            if a.length == 0 {
                return Err(NV_ERR_NOT_SUPPORTED);
            }
            if mgpu != gpu {
                return Err(NV_ERR_INVALID_ARGUMENT);
            }
            let inside = a.dma_offset >= base
                && a.dma_offset
                    .checked_add(a.length)
                    .is_some_and(|e| e <= base.saturating_add(size));
            if !inside {
                return Err(NV_ERR_INVALID_LIMIT);
            }
            let m = DmaMap {
                client: a.h_client,
                virt: a.h_dma,
                memory: a.h_memory,
                va: a.dma_offset,
                length: a.length,
                offset: a.offset,
            };
            rm.dma_maps
                .push(m, GFP_KERNEL)
                .map_err(|_| NV_ERR_NO_MEMORY)?;
            Ok(())
        })();
        a.status = status_of(r);
        a.store(p);
        Ok(())
    }

    /// RM_UNMAP_MEMORY_DMA (NVOS47): removes the mapping of `hMemory` at
    /// `dmaOffset` in range `hDma`, whole (`size` 0 or the mapping's).
    /// Not found: `NV_ERR_INVALID_OBJECT_HANDLE`, as RM's
    /// `intermapGetDmaMapping` miss (`mem_mgr/virtual_mem.c:1623-1624` at
    /// 550.163.01). A partial unmap RM splits the mapping for
    /// (`:1625-1710`) is `NV_ERR_NOT_SUPPORTED` in the double. Before 550
    /// the block has no `size` (40 bytes: the whole mapping).
    pub(crate) fn unmap_memory_dma(&self, f: &ArcBorrow<'_, NvFile>, p: &mut [u8]) -> Result {
        let status_at = match p.len() {
            NVOS47_SIZE => 40,
            NVOS47_SIZE_535 => 32,
            _ => return Err(EINVAL),
        };
        let h_client = abi::read_field::<u32>(p, 0);
        let (h_dma, h_memory) = (abi::read_field::<u32>(p, 8), abi::read_field::<u32>(p, 12));
        let va = abi::read_field::<u64>(p, 24);
        let size = if status_at == 40 {
            abi::read_field::<u64>(p, 32)
        } else {
            0
        };
        let r: StatusResult = (|| {
            let mut rm = self.rm.lock();
            rm.client_for(h_client, Some(f.client_id()))?;
            let i = rm
                .dma_maps
                .iter()
                .position(|m| {
                    m.client == h_client && m.virt == h_dma && m.memory == h_memory && m.va == va
                })
                .ok_or(NV_ERR_INVALID_OBJECT_HANDLE)?;
            let whole = rm.dma_maps.get(i).map(|m| m.length);
            if size != 0 && Some(size) != whole {
                return Err(NV_ERR_NOT_SUPPORTED);
            }
            rm.dma_maps.remove(i).map_err(|_| NV_ERR_INVALID_ARGUMENT)?;
            Ok(())
        })();
        status_of(r).encode(p.get_mut(status_at..).unwrap_or_default());
        Ok(())
    }

    /// RM_UPDATE_DEVICE_MAPPING_INFO (NVOS56, ctl node): the CPU mapping of
    /// `hMemory` at `pOldCpuAddress` made by this process now lives at
    /// `pNewCpuAddress` (libcuda tells RM where it mmapped the fresh fd), as
    /// `RmUpdateDeviceMappingInfo` (`arch/nvalloc/unix/src/osapi.c:945-1021`
    /// at 550.163.01): a size other than NVOS56's NV_ERR_INVALID_ARGUMENT
    /// (`escape.c:818-830`); the device neither a device nor a subdevice of
    /// the client, or the object not memory, NV_ERR_INVALID_OBJECT_HANDLE;
    /// no such mapping NV_ERR_OBJECT_NOT_FOUND (`refFindCpuMappingWithFilter`,
    /// `resserv/src/rs_resource.c:408`).
    pub(crate) fn update_device_mapping_info(
        &self,
        f: &ArcBorrow<'_, NvFile>,
        p: &mut [u8],
    ) -> Result {
        if f.kind != Kind::Ctl {
            return Err(EINVAL);
        }
        if p.len() != NVOS56_SIZE {
            return Err(EINVAL);
        }
        let h_client = abi::read_field::<u32>(p, 0);
        let (h_device, h_memory) = (abi::read_field::<u32>(p, 4), abi::read_field::<u32>(p, 8));
        let (old, new) = (abi::read_field::<u64>(p, 16), abi::read_field::<u64>(p, 24));
        let r: StatusResult = (|| {
            let mut rm = self.rm.lock();
            let ci = rm.client_for(h_client, Some(f.client_id()))?;
            let c = &rm.clients[ci];
            if !matches!(
                c.find(h_device).map(|o| o.kind),
                Some(ObjKind::Device { .. } | ObjKind::Subdevice { .. })
            ) {
                return Err(NV_ERR_INVALID_OBJECT_HANDLE);
            }
            match c.find(h_memory).map(|o| o.kind) {
                Some(ObjKind::Memory { .. } | ObjKind::Usermode { .. }) => {}
                Some(_) => return Err(NV_ERR_INVALID_OBJECT_HANDLE),
                None => return Err(NV_ERR_OBJECT_NOT_FOUND),
            }
            let me = current_tgid();
            let m = rm
                .cpu_maps
                .iter_mut()
                .find(|m| {
                    m.client == h_client && m.memory == h_memory && m.address == old && m.proc == me
                })
                .ok_or(NV_ERR_OBJECT_NOT_FOUND)?;
            m.address = new;
            Ok(())
        })();
        status_of(r).encode(p.get_mut(32..).unwrap_or_default());
        Ok(())
    }

    /// A kernel client's NV04_MAP_MEMORY: a kernel address for `length`
    /// bytes at `offset` of memory object `h_memory`.
    ///
    /// GUESS: the double maps only system memory, within one page (what a
    /// kernel client reads: USERD words, notifiers); RM maps any memory.
    pub(crate) fn kernel_map(&self, a: &abi::Nvos33) -> StatusResult<u64> {
        let mut rm = self.rm.lock();
        let ci = rm.client_for(a.h_client, None)?;
        if !rm.clients[ci].has(a.h_device) {
            return Err(NV_ERR_INVALID_OBJECT_HANDLE);
        }
        let mem = match rm.clients[ci].find(a.h_memory).map(|o| o.kind) {
            Some(ObjKind::Memory { mem }) => mem,
            _ => return Err(NV_ERR_INVALID_OBJECT_HANDLE),
        };
        let backing = rm
            .mem(mem)
            .and_then(|m| m.backing.clone())
            .ok_or(NV_ERR_NOT_SUPPORTED)?;
        let page =
            usize::try_from(a.offset / PAGE_SIZE as u64).map_err(|_| NV_ERR_INVALID_LIMIT)?;
        let within = (a.offset % PAGE_SIZE as u64) as usize;
        let len = usize::try_from(a.length).map_err(|_| NV_ERR_INVALID_LIMIT)?;
        if len == 0 || within + len > PAGE_SIZE {
            return Err(NV_ERR_NOT_SUPPORTED);
        }
        let base = backing.page_address(page).ok_or(NV_ERR_INVALID_LIMIT)?;
        let addr = base as u64 + within as u64;
        rm.kmaps
            .push(
                KMap {
                    client: a.h_client,
                    handle: a.h_memory,
                    addr,
                    _backing: backing,
                },
                GFP_KERNEL,
            )
            .map_err(|_| NV_ERR_NO_MEMORY)?;
        Ok(addr)
    }

    /// A kernel client's NV04_UNMAP_MEMORY of an address `kernel_map` gave.
    pub(crate) fn kernel_unmap(&self, a: &abi::Nvos34) -> StatusResult {
        let mut rm = self.rm.lock();
        rm.client_for(a.h_client, None)?;
        let i = rm
            .kmaps
            .iter()
            .position(|k| {
                k.client == a.h_client && k.handle == a.h_memory && k.addr == a.p_linear_address
            })
            .ok_or(NV_ERR_INVALID_ARGUMENT)?;
        let _ = rm.kmaps.remove(i);
        Ok(())
    }

    /// NV04_BIND_CONTEXT_DMA (NVOS49: hClient, hCtxDma, hChannel, status).
    /// RM serves it as control NV0002_CTRL_CMD_BIND_CONTEXTDMA on
    /// (hClient, hCtxDma) (`rmapi_deprecated_misc.c:135-158` at
    /// 550.163.01), so a missing client is NV_ERR_INVALID_CLIENT, as for
    /// any control (measured against the real driver on zeros). The double
    /// has no context DMAs: under a live client the object is unknown.
    pub(crate) fn kernel_bind_context_dma(&self, h_client: u32) -> StatusResult {
        if self.rm.lock().client_index(h_client).is_none() {
            return Err(NV_ERR_INVALID_CLIENT);
        }
        Err(NV_ERR_INVALID_OBJECT_HANDLE)
    }

    /// NV0041_CTRL_CMD_GET_SURFACE_INFO: the memory's size.
    pub(crate) fn surface_info(&self, mut c: Ctl<'_>) -> StatusResult {
        let Some(ObjKind::Memory { mem }) = c.kind else {
            return Err(NV_ERR_NOT_SUPPORTED);
        };
        let size =
            c.rm.mem(mem)
                .map(|m| m.size)
                .ok_or(NV_ERR_OBJECT_NOT_FOUND)?;
        let q: abi::GetSurfaceInfoParams = parse_params(c.p)?;
        drop(c.rm);
        // PHYS_SIZE_LO/HI exist from 580 on; before, an index RM
        // does not know is NV_ERR_INVALID_ARGUMENT (`mem_ctrl.c:
        // 210-212` at 570.211.01).
        let lo_hi = settings::abi()
            .surface_size
            .iter()
            .any(|&(i, _)| i == surface_info::PHYS_SIZE_LO);
        fill_info_list(c.space, q.list_size, q.list_ptr, 32, |index| {
            Ok(match index {
                surface_info::PHYS_SIZE => u32::try_from(size / surface_info::PHYS_SIZE_SCALE)
                    .map_err(|_| NV_ERR_OUT_OF_RANGE)?,
                surface_info::PHYS_SIZE_LO if lo_hi => size as u32,
                surface_info::PHYS_SIZE_HI if lo_hi => (size >> 32) as u32,
                surface_info::PHYS_SIZE_LO | surface_info::PHYS_SIZE_HI => {
                    return Err(NV_ERR_INVALID_ARGUMENT)
                }
                _ => 0,
            })
        })
    }
}

/// NVOS56 (RM_UPDATE_DEVICE_MAPPING_INFO): hClient, hDevice, hMemory,
/// pOldCpuAddress at 16, pNewCpuAddress at 24, status at 32
/// (`nvos.h:2264-2272` at 550.163.01).
const NVOS56_SIZE: usize = 40;

/// NVOS47 (RM_UNMAP_MEMORY_DMA): hClient, hDevice, hDma, hMemory, flags,
/// dmaOffset at 24, size at 32, status at 40 (`nvos.h:2174-2184` at
/// 550.163.01; the same at 595.45.04).
const NVOS47_SIZE: usize = 48;
/// NVOS47 before 550: no `size`, status at 32 (`nvos.h:2139-2148` at
/// 535.288.01).
const NVOS47_SIZE_535: usize = 40;

/// NVOS46 (RM_MAP_MEMORY_DMA) in the claimed release's layout: 56 bytes
/// before 580 (`nvos.h:2149-2163` at 550.163.01), 64 from 580, where
/// `flags2` and `kindOverride` come before `dmaOffset` (`nvos.h:2171-2187`
/// at 595.45.04). Told apart by the block's size, which the escape's row
/// fixes per release.
struct Nvos46 {
    h_client: u32,
    h_device: u32,
    h_dma: u32,
    h_memory: u32,
    offset: u64,
    length: u64,
    dma_offset: u64,
    status: u32,
    /// Where `dmaOffset` is (`status` follows it).
    dma_at: usize,
}

impl Nvos46 {
    fn parse(p: &[u8]) -> Result<Self> {
        let dma_at = match p.len() {
            56 => 40,
            64 => 48,
            _ => return Err(EINVAL),
        };
        // The size is checked: every field is inside `p`.
        Ok(Self {
            h_client: abi::read_field::<u32>(p, 0),
            h_device: abi::read_field::<u32>(p, 4),
            h_dma: abi::read_field::<u32>(p, 8),
            h_memory: abi::read_field::<u32>(p, 12),
            offset: abi::read_field::<u64>(p, 16),
            length: abi::read_field::<u64>(p, 24),
            dma_offset: abi::read_field::<u64>(p, dma_at),
            status: 0,
            dma_at,
        })
    }

    /// Writes the outputs back: `dmaOffset` and `status`.
    fn store(&self, p: &mut [u8]) {
        self.dma_offset
            .encode(p.get_mut(self.dma_at..).unwrap_or_default());
        self.status
            .encode(p.get_mut(self.dma_at + 8..).unwrap_or_default());
    }
}
