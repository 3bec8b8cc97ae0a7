// SPDX-License-Identifier: GPL-2.0

//! OS-descriptor memory: RM_ALLOC_MEMORY of class 0x71
//! (NV01_MEMORY_SYSTEM_OS_DESCRIPTOR, `class/cl0071.h`), a process's own
//! pages, which RM pins and the GPU may then map (RM_MAP_MEMORY_DMA).
//! libcuda 550.163.01's `cuCtxCreate` makes 2 MiB of it.
//!
//! As RM at 550.163.01 (`arch/nvalloc/unix/src/escape.c`):
//! `RmAllocOsDescriptor` (`:195-290`) wants location PCI and mapping
//! NO_MAP (else NV_ERR_INVALID_FLAGS) and a coherency of cached, write-back
//! or uncached (else NV_ERR_INVALID_FLAGS); `RmCreateOsDescriptor`
//! (`:134-193`) wants a page-aligned address (else NV_ERR_NOT_SUPPORTED)
//! and a limit that does not wrap (else NV_ERR_INVALID_LIMIT), pins the
//! pages, writable unless ALLOC_USER_READ_ONLY (`os_lock_user_pages`,
//! `kernel-open/nvidia/os-mlock.c:216-313`; pages it cannot pin are
//! NV_ERR_INVALID_ADDRESS: the double models no I/O memory behind them),
//! and makes the memory object under the caller's handle and parent
//! (NVOS32_FUNCTION_ALLOC_OS_DESCRIPTOR with MEMORY_HANDLE_PROVIDED). The
//! pages stay pinned until the object is freed (`os_unlock_user_pages`).
//! GUESS: more than [`MAX_BACKED`] bytes is NV_ERR_NO_MEMORY (the test VM's
//! memory is small; RM pins any size).

use kernel::{page::PAGE_SIZE, prelude::*, sync::Arc};

use super::state::{Driver, Object};
use crate::base::{ObjKind, StatusResult};
use crate::memory::{Backing, MAX_BACKED};
use crate::nv::abi::{self, status::*};

/// NV01_MEMORY_SYSTEM_OS_DESCRIPTOR (`class/cl0071.h:30` at 550.163.01).
pub(crate) const NV01_MEMORY_SYSTEM_OS_DESCRIPTOR: u32 = 0x71;

/// NVOS02 flag fields (`nvos.h:189-269` at 550.163.01): `(hi, lo)`.
const LOCATION: (u32, u32) = (11, 8);
const COHERENCY: (u32, u32) = (15, 12);
const ALLOC_USER_READ_ONLY: (u32, u32) = (21, 21);
const MAPPING: (u32, u32) = (31, 30);
const LOCATION_PCI: u32 = 0;
const COHERENCY_UNCACHED: u32 = 0;
const COHERENCY_CACHED: u32 = 1;
const COHERENCY_WRITE_BACK: u32 = 5;
const MAPPING_NO_MAP: u32 = 1;

fn field(flags: u32, (hi, lo): (u32, u32)) -> u32 {
    (flags >> lo) & ((1u32 << (hi - lo + 1)) - 1)
}

impl Driver {
    /// RM_ALLOC_MEMORY of an OS descriptor for client `a.h_root`, bound to
    /// the file `file`.
    pub(crate) fn alloc_os_descriptor(&self, file: u64, a: &abi::Nvos02) -> StatusResult {
        let fl = a.flags;
        if field(fl, LOCATION) != LOCATION_PCI || field(fl, MAPPING) != MAPPING_NO_MAP {
            return Err(NV_ERR_INVALID_FLAGS);
        }
        if !matches!(
            field(fl, COHERENCY),
            COHERENCY_UNCACHED | COHERENCY_CACHED | COHERENCY_WRITE_BACK
        ) {
            return Err(NV_ERR_INVALID_FLAGS);
        }
        if a.p_memory % PAGE_SIZE as u64 != 0 {
            return Err(NV_ERR_NOT_SUPPORTED);
        }
        let size = a.limit.checked_add(1).ok_or(NV_ERR_INVALID_LIMIT)?;
        if size > MAX_BACKED {
            return Err(NV_ERR_NO_MEMORY);
        }
        let pages = size.div_ceil(PAGE_SIZE as u64) as usize;
        let write = field(fl, ALLOC_USER_READ_ONLY) == 0;
        // Pinned before RM's lock is taken (it faults the pages in); a
        // failure below unpins them as the backing drops.
        let b = Backing::pin_user(a.p_memory, pages, write).map_err(|_| NV_ERR_INVALID_ADDRESS)?;
        let b = Arc::new(b, GFP_KERNEL).map_err(|_| NV_ERR_NO_MEMORY)?;
        let mut rm = self.rm.lock();
        let ci = rm.client_for(a.h_root, Some(file))?;
        let gpu = match rm.clients[ci].find(a.h_object_parent).map(|o| o.kind) {
            Some(ObjKind::Device { gpu }) => gpu,
            _ => return Err(NV_ERR_INVALID_OBJECT_PARENT),
        };
        let handle = match a.h_object_new {
            0 => rm.clients[ci].gen_handle(),
            h if rm.clients[ci].has(h) => return Err(NV_ERR_INSERT_DUPLICATE_NAME),
            h => h,
        };
        let mem = rm.new_mem(gpu, size, false, Some(b))?;
        let obj = Object {
            handle,
            parent: a.h_object_parent,
            kind: ObjKind::Memory { mem },
        };
        if rm.clients[ci].objects.push(obj, GFP_KERNEL).is_err() {
            rm.put_mem(mem);
            return Err(NV_ERR_NO_MEMORY);
        }
        Ok(())
    }
}
