// SPDX-License-Identifier: GPL-2.0

//! Memory escapes (RM_VID_HEAP_CONTROL, RM_ALLOC_MEMORY, RM_MAP_MEMORY,
//! RM_UNMAP_MEMORY), a kernel client's mappings, and NV0041
//! GET_SURFACE_INFO.

use kernel::prelude::*;
use kernel::{page::PAGE_SIZE, sync::Arc};

use super::call::{fill_info_list, parse_params, Ctl};
use super::state::{Caller, Driver, KMap};
use crate::base::{current_tgid, heap_size, parse, status_of, store, ObjKind, StatusResult};
use crate::file::{self, Kind, MapCtx, NvFile};
use crate::kapi::fdtable;
use crate::memory::{Backing, MAX_BACKED};
use crate::nv::abi::{self, class, heap, status::*, surface_info, Wire};
use crate::settings;

impl Driver {
    /// RM_VID_HEAP_CONTROL: the heap sizes, an allocation, a free.
    pub(crate) fn vid_heap(&self, f: &NvFile, p: &mut [u8]) -> Result {
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

    /// RM_ALLOC_MEMORY.
    pub(crate) fn alloc_memory(&self, f: &NvFile, p: &mut [u8]) -> Result {
        let mut a: abi::Nvos02WithFd = parse(p)?;
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
    pub(crate) fn map_memory(&self, f: &NvFile, p: &mut [u8]) -> Result {
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
            let len = m.length;
            if len == 0
                || m.offset % 4096 != 0
                || len % 4096 != 0
                || m.offset.checked_add(len).is_none_or(|e| e > size)
            {
                return Err(NV_ERR_INVALID_LIMIT);
            }
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
            a.params.p_linear_address = 0;
            Ok(())
        })();
        a.params.status = status_of(r);
        store(&a, p);
        Ok(())
    }

    /// RM_UNMAP_MEMORY: only the client is checked.
    pub(crate) fn unmap_memory(&self, f: &NvFile, p: &mut [u8]) -> Result {
        let mut a: abi::Nvos34 = parse(p)?;
        let mut rm = self.rm.lock();
        a.status = match rm.client_for(a.h_client, Some(f.client_id())) {
            Ok(_) => NV_OK,
            Err(s) => s,
        };
        store(&a, p);
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
