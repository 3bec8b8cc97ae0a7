// SPDX-License-Identifier: GPL-2.0

//! The NV2080 controls the double answers on a subdevice, but for the
//! process lists (`pids.rs`) and the FIFO's (`fifo.rs`): the framebuffer's
//! sizes and the GPU's UUID; RUSD's REQUEST_DATA_POLL; and
//! MC_SERVICE_INTERRUPTS.

use super::call::{fill_info_list, parse_params, parse_release_params, Ctl};
use super::state::{Driver, Rm, BAR1_SIZE};
use crate::base::{format_uuid, gpu_uuid, heap_size, store, StatusResult};
use crate::nv::abi::{self, fb_info, status::*};
use crate::settings;

/// NV2080_CTRL_FB_INFO_INDEX_RAM_TYPE (`ctrl2080/ctrl2080fb.h:289`).
const FB_RAM_TYPE: u32 = 0x0d;
/// NV2080_CTRL_FB_INFO_INDEX_RAM_LOCATION (`ctrl2080fb.h:303`).
const FB_RAM_LOCATION: u32 = 0x17;
/// NV2080_CTRL_FB_INFO_INDEX_FB_IS_BROKEN (`ctrl2080fb.h:304`).
const FB_IS_BROKEN: u32 = 0x18;
/// NV2080_CTRL_FB_INFO_INDEX_FBP_COUNT (`ctrl2080fb.h:305`).
const FB_FBP_COUNT: u32 = 0x19;
/// NV2080_CTRL_FB_INFO_INDEX_L2CACHE_SIZE (`ctrl2080fb.h:307`).
const FB_L2CACHE_SIZE: u32 = 0x1b;
/// NV2080_CTRL_FB_INFO_INDEX_FBP_MASK (`ctrl2080fb.h:306`).
const FB_FBP_MASK: u32 = 0x1a;
/// NV2080_CTRL_FB_INFO_INDEX_LTC_COUNT (`ctrl2080fb.h:314`).
const FB_LTC_COUNT: u32 = 0x22;
/// NV2080_CTRL_FB_INFO_INDEX_LTS_COUNT (`ctrl2080fb.h:315`).
const FB_LTS_COUNT: u32 = 0x23;

/// NV2080_CTRL_CMD_MC_SERVICE_INTERRUPTS: `{engines}`, 4 bytes
/// (`ctrl2080mc.h`; `g_subdevice_nvoc.c:5579-5590` at 550.163.01).
pub(crate) const MC_SERVICE_INTERRUPTS: u32 = 0x2080_1702;

impl Driver {
    /// NV2080_CTRL_CMD_MC_SERVICE_INTERRUPTS: RM services the engines'
    /// pending interrupts and answers NV_OK, the params unchanged
    /// (`subdeviceCtrlCmdMcServiceInterrupts_IMPL`,
    /// `kernel/gpu/intr/intr.c:154-236` at 550.163.01). The double's
    /// engine raises none: completions are written to memory as the
    /// engine thread runs the work, and its events posted then.
    pub(crate) fn mc_service_interrupts(&self, c: Ctl<'_>) -> StatusResult {
        c.gpu()?;
        if c.p.len() != 4 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        Ok(())
    }

    /// NV2080_CTRL_CMD_FB_GET_INFO_V2: the claimed release's list (54 to 57
    /// entries before 580).
    pub(crate) fn fb_get_info_v2(&self, c: Ctl<'_>) -> StatusResult {
        let gpu = c.gpu()?;
        let mut q: abi::FbGetInfoV2Params = parse_release_params(c.cmd, c.p)?;
        if q.list_size as usize > settings::abi().fb_info_entries() {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        for e in q.entries_mut() {
            e.data = self.fb_info(&c.rm, gpu, e.index)?;
        }
        store(&q, c.p);
        Ok(())
    }

    /// NV2080_CTRL_CMD_FB_GET_INFO: the list is in the caller's memory, so
    /// no copy with RM locked.
    pub(crate) fn fb_get_info(&self, c: Ctl<'_>) -> StatusResult {
        let gpu = c.gpu()?;
        let q: abi::FbGetInfoV1Params = parse_params(c.p)?;
        drop(c.rm);
        fill_info_list(
            c.space,
            q.list_size,
            q.list_ptr,
            settings::abi().fb_info_entries(),
            |index| self.fb_info(&self.rm.lock(), gpu, index),
        )
    }

    /// NV2080_CTRL_CMD_GPU_GET_GID_INFO: the GPU's UUID, binary or text.
    pub(crate) fn gid_info(&self, c: Ctl<'_>) -> StatusResult {
        let gpu = c.gpu()?;
        let mut q: abi::GidInfoParams = parse_params(c.p)?;
        let uuid = gpu_uuid(gpu);
        q.data = [0; 256];
        if q.flags & abi::GID_FLAGS_FORMAT_BINARY != 0 {
            q.data[..uuid.len()].copy_from_slice(&uuid);
            q.length = uuid.len() as u32;
        } else {
            // The text form and its NUL.
            q.length = format_uuid(&uuid, &mut q.data) as u32 + 1;
        }
        store(&q, c.p);
        Ok(())
    }

    /// RUSD's REQUEST_DATA_POLL. GUESS: the double does not tell a RUSD
    /// object from other objects it does not model; the mask is recorded.
    pub(crate) fn rusd_request_data_poll(&self, c: Ctl<'_>) -> StatusResult {
        let p = c.p;
        if p.len() != 8 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        let mask = u64::from_ne_bytes(p[..8].try_into().map_err(|_| NV_ERR_INVALID_ARGUMENT)?);
        settings::RUSD_POLLED.fetch_or(mask, core::sync::atomic::Ordering::Relaxed);
        Ok(())
    }

    /// NV2080_CTRL_CMD_PERF_BOOST: RM's kernel half hands `flags` and
    /// `duration` to the physical RM under the caller's client, which
    /// tracks each client's boost (`kern_perf_boost.c:100-125`,
    /// `ctrl2080internal.h:1914` at 595.45.04; `:62-87`, `:1929` at
    /// 535.288.01); the params are not written. GUESS: the physical RM
    /// takes any duration; the double records the last request.
    pub(crate) fn perf_boost(&self, c: Ctl<'_>) -> StatusResult {
        let b: [u8; 8] = (&*c.p).try_into().map_err(|_| NV_ERR_INVALID_ARGUMENT)?;
        let word = |i: usize| u32::from_ne_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let last = (u64::from(word(0)) << 32) | u64::from(word(4));
        settings::PERF_BOOST.store(last, core::sync::atomic::Ordering::Relaxed);
        Ok(())
    }

    /// Entry `index` of GPU `gpu` in the FB info list.
    fn fb_info(&self, rm: &Rm, gpu: u32, index: u32) -> StatusResult<u32> {
        let vram = self.gpus[gpu as usize].vram;
        let heap = heap_size(vram);
        let free = heap - rm.vram_used[gpu as usize];
        let kib = |b: u64| (b >> 10) as u32;
        Ok(match index {
            fb_info::RAM_SIZE | fb_info::TOTAL_RAM_SIZE | fb_info::USABLE_RAM_SIZE => kib(vram),
            fb_info::HEAP_SIZE | fb_info::MAPPABLE_HEAP_SIZE => kib(heap),
            fb_info::HEAP_FREE | fb_info::LARGEST_FREE_REGION_SIZE_KB => kib(free),
            fb_info::BAR1_SIZE | fb_info::BAR1_AVAIL_SIZE => kib(BAR1_SIZE.min(vram)),
            fb_info::FB_TAX_SIZE_KB | fb_info::HEAP_BASE_KB | fb_info::HEAP_START => 0,
            fb_info::LARGEST_FREE_REGION_BASE_KB => kib(rm.vram_used[gpu as usize]),
            fb_info::BUS_WIDTH => 5120,
            // What libcuda asks besides (issue 40), at 550.163.01
            // (`kernel/gpu/mem_sys/kern_mem_sys_ctrl.c`): RAM_LOCATION is
            // GPU_DEDICATED (0, `:689-692`), FB_IS_BROKEN 0 for a sound FB
            // (`:694-698`); FBP_COUNT, L2CACHE_SIZE (bytes) and RAM_TYPE
            // go to GSP (`:870-905`), as FBP_MASK, LTC_COUNT and LTS_COUNT
            // do, whose answers are GUESSes for an H100 SXM5: 10 FBPs
            // (mask 0x3ff), 20 LTCs of 4 slices, 50 MiB of L2, HBM3 (0x14,
            // `ctrl2080fb.h:362`).
            FB_RAM_LOCATION | FB_IS_BROKEN => 0,
            FB_FBP_COUNT => 10,
            FB_FBP_MASK => 0x3ff,
            FB_LTC_COUNT => 20,
            FB_LTS_COUNT => 80,
            FB_L2CACHE_SIZE => 50 << 20,
            FB_RAM_TYPE => 0x14,
            _ => return Err(NV_ERR_INVALID_ARGUMENT),
        })
    }
}
