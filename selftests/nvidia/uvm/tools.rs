// SPDX-License-Identifier: GPL-2.0

//! Dynamic-parallelism regions, and the tools' reads and writes of a
//! process's memory.

use kernel::prelude::*;

use super::state::RangeKind;
use crate::base::StatusResult;
use crate::kapi::user;
use crate::nv::abi::{status::*, Wire};
use crate::nv::uvm::{range_ok, RangeGpuParams, ToolsProcessMemoryParams, PAGE};
use crate::rm::state::Driver;

impl Driver {
    /// UVM_MAP_DYNAMIC_PARALLELISM_REGION (uvm_va_range.c:1736-1807): 4 KiB
    /// aligned, non-zero, not wrapping (NV_ERR_INVALID_ADDRESS); a GPU with
    /// a GPU VA space (NV_ERR_INVALID_DEVICE); exactly one GPU page: a
    /// power of two the GPU maps, aligned to itself
    /// (NV_ERR_INVALID_ADDRESS); no overlap (NV_ERR_UVM_ADDRESS_IN_USE).
    /// Takes no VRAM: the PTEs have no physical backing. GUESS: the double's
    /// GPUs map Ampere's page sizes (uvm_ampere_mmu.c:50-53) and reach every
    /// address below 2^49 (NV_ERR_OUT_OF_RANGE above).
    pub(crate) fn uvm_map_dp_region(&self, id: u64, p: &mut [u8]) -> StatusResult {
        const PAGE_SIZES: u64 = (512 << 20) | (2 << 20) | (64 << 10) | (4 << 10);
        const VA_LIMIT: u64 = 1 << 49;
        let q = RangeGpuParams::decode(p);
        if !range_ok(q.base, q.length) || q.base == 0 {
            return Err(NV_ERR_INVALID_ADDRESS);
        }
        let gpu = self.gpu_by_uuid(&q.uuid);
        self.with_space(id, |rm, si| {
            let s = &mut rm.uvm.spaces[si];
            let Some(gpu) = gpu.filter(|&g| s.has_vaspace(g)) else {
                return Err(NV_ERR_INVALID_DEVICE);
            };
            if q.base + q.length > VA_LIMIT {
                return Err(NV_ERR_OUT_OF_RANGE);
            }
            if !q.length.is_power_of_two()
                || q.base & (q.length - 1) != 0
                || PAGE_SIZES & q.length == 0
            {
                return Err(NV_ERR_INVALID_ADDRESS);
            }
            s.add_range(q.base, q.length, RangeKind::SkedReflected { gpu })
        })
    }

    /// UVM_TOOLS_READ/WRITE_PROCESS_MEMORY (uvm_tools.c:2438-2610), a page
    /// at a time: the target must be in a managed range
    /// (NV_ERR_INVALID_ADDRESS, HMM off); the caller's buffer is copied
    /// with its own address space (a fault: NV_ERR_INVALID_ARGUMENT);
    /// `bytes_done` counts what was copied. GUESS: the double keeps no
    /// contents of managed pages: reads give zeros (what UVM reads from a
    /// page resident nowhere, uvm_va_block.c:12752-12754) and writes are
    /// taken and dropped.
    pub(crate) fn uvm_tools_access(&self, id: u64, write: bool, p: &mut [u8]) -> StatusResult {
        let mut q = ToolsProcessMemoryParams::decode(p);
        q.bytes_done = 0;
        let mut status = Ok(());
        let mut page = KVec::new();
        while q.bytes_done < q.size {
            let target = q.target_va.wrapping_add(q.bytes_done);
            let now = (q.size - q.bytes_done).min(PAGE - target % PAGE);
            let buf = q.buffer.wrapping_add(q.bytes_done);
            if write {
                match user::read_vec(buf, now as usize) {
                    Ok(v) => page = v,
                    Err(_) => {
                        status = Err(NV_ERR_INVALID_ARGUMENT);
                        break;
                    }
                }
            }
            let inside = self.with_space(id, |rm, si| {
                Ok(rm.uvm.spaces[si]
                    .managed_at(target - target % PAGE)
                    .is_some())
            });
            match inside {
                Ok(true) => {}
                Ok(false) => {
                    status = Err(NV_ERR_INVALID_ADDRESS);
                    break;
                }
                Err(e) => {
                    status = Err(e);
                    break;
                }
            }
            if !write {
                page.clear();
                if page.resize(now as usize, 0, GFP_KERNEL).is_err() {
                    status = Err(NV_ERR_NO_MEMORY);
                    break;
                }
                if user::write(buf, &page).is_err() {
                    status = Err(NV_ERR_INVALID_ARGUMENT);
                    break;
                }
            }
            q.bytes_done += now;
        }
        q.encode(p);
        status
    }

    /// UVM_TOOLS_READ_PROCESS_MEMORY.
    pub(crate) fn uvm_tools_read(&self, id: u64, p: &mut [u8]) -> StatusResult {
        self.uvm_tools_access(id, false, p)
    }

    /// UVM_TOOLS_WRITE_PROCESS_MEMORY.
    pub(crate) fn uvm_tools_write(&self, id: u64, p: &mut [u8]) -> StatusResult {
        self.uvm_tools_access(id, true, p)
    }
}
