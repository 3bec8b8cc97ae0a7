// SPDX-License-Identifier: GPL-2.0

//! The GR context buffers of a TSG's context: what RM commits at a TSG's
//! first compute object, and the controls that report their sizes. Files
//! are under `src/nvidia/src/kernel/` at 550.163.01 unless said.
//!
//! Every TSG gets a KernelGraphicsContext when MIG is off
//! (`gpu/fifo/kernel_channel_group_api.c:406-420`); its buffers are
//! allocated at the first graphics (compute) object of a channel of the
//! TSG (`kgrobjConstruct` -> `kgrctxAllocCtxBuffers`,
//! `gpu/gr/kernel_graphics_object.c:215`,
//! `gpu/gr/kernel_graphics_context.c:1346-1420`), kept when that object is
//! freed (`kernel_graphics_context.c:3040-3052`) and freed with the TSG
//! (`kgrctxFreeAssociatedCtxBuffers`, `:2975-3013`).

use super::call::{parse_params, Ctl};
use super::state::{Client, Driver, Object, Rm};
use crate::base::{heap_size, store, ObjKind, StatusResult};
use crate::nv::abi::{self, status::*};
use crate::settings;

/// NV2080_CTRL_CMD_GR_GET_CTX_BUFFER_SIZE.
pub(crate) const GR_GET_CTX_BUFFER_SIZE: u32 = 0x2080_1218;
/// NV2080_CTRL_CMD_GR_GET_ENGINE_CONTEXT_PROPERTIES.
pub(crate) const GR_GET_ENGINE_CONTEXT_PROPERTIES: u32 = 0x2080_122d;
/// NV0080_CTRL_CMD_FIFO_GET_ENGINE_CONTEXT_PROPERTIES.
pub(crate) const FIFO_GET_ENGINE_CONTEXT_PROPERTIES: u32 = 0x0080_1707;

/// `NV0080_CTRL_FIFO_GET_ENGINE_CONTEXT_PROPERTIES_ENGINE_ID_COUNT`.
const ENGINE_ID_COUNT: u32 = 0x1a;
/// Every buffer's alignment (RM_PAGE_SIZE).
const ALIGN: u32 = 0x1000;

/// One buffer type of the model: its engine id (0x801707's), size, and
/// whether a context has it once its first compute object is made.
struct Buffer {
    id: u32,
    size: u32,
    committed: bool,
}

/// The H100's context buffers as the double models them. GUESS, all: no
/// H100 was measured. The main context (0, GRAPHICS) and the patch buffer
/// (0x10) are each context's own (`kgrctxAllocMainCtxBuffer`,
/// `kgrctxAllocPatchBuffer`, `kernel_graphics_context.c:1115-1185`); the
/// bundle CB (0x11), global page pool (0x12), attribute CB (0x13) and
/// priv access map (0x18) are RM's global buffers, which GET_CTX_BUFFER_SIZE
/// counts in every context's total (`kgrctxGetCtxBuffers`, `:795-868`) and
/// which the double therefore commits per context too (RM allocates them
/// once per GPU: the double over-commits, never under). The PM buffer
/// (0x09) is allocated only on request (`kgrctxShouldPreAllocPmBuffer`),
/// which the double never gets; the graphics-only types are 0 on a
/// compute-only GPU.
const BUFFERS: [Buffer; 7] = [
    Buffer {
        id: 0x00,
        size: 0x20_0000,
        committed: true,
    },
    Buffer {
        id: 0x09,
        size: 0x8_0000,
        committed: false,
    },
    Buffer {
        id: 0x10,
        size: 0x1_0000,
        committed: true,
    },
    Buffer {
        id: 0x11,
        size: 0x3_0000,
        committed: true,
    },
    Buffer {
        id: 0x12,
        size: 0x8_0000,
        committed: true,
    },
    Buffer {
        id: 0x13,
        size: 0x10_0000,
        committed: true,
    },
    Buffer {
        id: 0x18,
        size: 0x2000,
        committed: true,
    },
];

/// The size of buffer type `id` (0 where the model has none).
fn size_of(id: u32) -> u32 {
    BUFFERS.iter().find(|b| b.id == id).map_or(0, |b| b.size)
}

/// What GET_CTX_BUFFER_SIZE reports for a context with its buffers, and
/// what the double commits for it: each buffer aligned, plus the
/// alignment once for each run of equal alignments
/// (`subdeviceCtrlCmdKGrGetCtxBufferSize_IMPL`,
/// `gpu/gr/kernel_graphics.c:3806-3820`); one run here, all being 4 KiB
/// aligned. 0x3c3000 bytes.
pub(crate) const fn context_total() -> u64 {
    let mut total = ALIGN as u64;
    let mut i = 0;
    while i < BUFFERS.len() {
        if BUFFERS[i].committed {
            total += BUFFERS[i].size as u64;
        }
        i += 1;
    }
    total
}

/// The GR context buffers channel `ch` of `client` runs with (`Rm::mems`):
/// its TSG's, or its own when it has a TSG of its own; 0 while they are
/// not committed, or when `ch` is no channel.
pub(crate) fn held_context(client: &Client, ch: &Object) -> u32 {
    match ch.kind {
        ObjKind::Channel {
            own_tsg: true,
            grctx,
            ..
        } => grctx,
        ObjKind::Channel { .. } => match client.find(ch.parent).map(|o| o.kind) {
            Some(ObjKind::Tsg { grctx, .. }) => grctx,
            _ => 0,
        },
        _ => 0,
    }
}

/// The buffers of a committed context as NV2080_CTRL_CMD_GR_GET_CTX_BUFFER_INFO
/// lists them, each `(type, size, alignment)`: the main buffer, the patch
/// buffer, the PM buffer where it is allocated (never, here), then the
/// global buffers (`kgrctxGetCtxBuffers`, `kernel_graphics_context.c:795-868`),
/// stably sorted by falling alignment (`kgrctxGetCtxBufferInfo`, `:931-990`),
/// which leaves the double's order, every alignment being 4 KiB: a
/// buffer's alignment is its page size (`kgrctxFillCtxBufferInfo`,
/// `:437-441`), GUESS 4 KiB for each.
pub(crate) fn context_buffers() -> impl Iterator<Item = (u32, u64, u64)> {
    BUFFERS
        .iter()
        .filter(|b| b.committed)
        .map(|b| (b.id, u64::from(b.size), u64::from(ALIGN)))
}

/// Whether engine `e` (`NV2080_ENGINE_TYPE_*`) is a graphics engine,
/// GR0..GR7 (`RM_ENGINE_TYPE_IS_GR`, `inc/kernel/gpu/gpu_engine_type.h:145`;
/// `NV2080_ENGINE_TYPE_GR0..GR7` are 1..8, `class/cl2080_notification.h:270-277`).
pub(crate) fn is_gr_engine(e: u32) -> bool {
    (1..=8).contains(&e)
}

/// Whether `c` is a compute class (a KernelGraphicsObject: its buffers
/// need the context); copy engines' do not.
pub(crate) fn is_compute_class(c: u32) -> bool {
    settings::abi().class_row(c).is_some_and(|r| {
        r.family == crate::nv::table::Family::Engine && r.name.contains("_COMPUTE_")
    })
}

/// The engine id a caller's word names: bits 4:0 (`DRF_VAL(.._ENGINE_ID)`);
/// COUNT and above NV_ERR_INVALID_ARGUMENT (`gpu/gr/kernel_graphics.c:3671-3676`).
fn engine_id(word: u32) -> StatusResult<u32> {
    let id = word & 0x1f;
    if id >= ENGINE_ID_COUNT {
        return Err(NV_ERR_INVALID_ARGUMENT);
    }
    Ok(id)
}

impl Driver {
    /// Commits the context of a compute object in channel `h_channel` of
    /// client `ci`, unless its TSG's context has its buffers. The holder
    /// is the channel's TSG, or the channel itself when it has its own.
    /// A heap that cannot hold them is NV_ERR_NO_MEMORY, and nothing is
    /// committed.
    pub(crate) fn commit_gr_context(&self, rm: &mut Rm, ci: usize, h_channel: u32) -> StatusResult {
        let Some(ch) = rm.clients[ci].find(h_channel).copied() else {
            return Err(NV_ERR_INVALID_OBJECT_PARENT);
        };
        let ObjKind::Channel {
            gpu,
            own_tsg,
            grctx,
            ..
        } = ch.kind
        else {
            return Err(NV_ERR_INVALID_OBJECT_PARENT);
        };
        let holder = if own_tsg { h_channel } else { ch.parent };
        let held = match rm.clients[ci].find(holder).map(|o| o.kind) {
            Some(ObjKind::Tsg { grctx, .. }) => grctx,
            _ if own_tsg => grctx,
            _ => return Err(NV_ERR_INVALID_OBJECT_PARENT),
        };
        if held != 0 {
            return Ok(());
        }
        let bytes = context_total();
        let heap = heap_size(self.gpus[gpu as usize].vram);
        if bytes > heap.saturating_sub(rm.vram_used[gpu as usize]) {
            return Err(NV_ERR_NO_MEMORY);
        }
        let mem = rm.new_mem(gpu, bytes, true, None)?;
        if let Some(o) = rm.clients[ci]
            .objects
            .iter_mut()
            .find(|o| o.handle == holder)
        {
            match &mut o.kind {
                ObjKind::Tsg { grctx, .. } | ObjKind::Channel { grctx, .. } => *grctx = mem,
                _ => {}
            }
        }
        Ok(())
    }

    /// NV2080_CTRL_CMD_GR_GET_CTX_BUFFER_SIZE
    /// (`subdeviceCtrlCmdKGrGetCtxBufferSize_IMPL`,
    /// `gpu/gr/kernel_graphics.c:3722-3820`): `hChannel` looked up in the
    /// subdevice's client: none NV_ERR_OBJECT_NOT_FOUND
    /// (`libraries/resserv/src/rs_client.c:390-392`), not a channel
    /// NV_ERR_INVALID_CHANNEL (`CliGetKernelChannel`,
    /// `gpu/fifo/kernel_channel.c:1678-1687`); a context without its main
    /// buffer yet NV_ERR_INVALID_OBJECT (`kgrctxGetCtxBuffers`,
    /// `kernel_graphics_context.c:821-823`).
    pub(crate) fn gr_ctx_buffer_size(&self, c: Ctl<'_>) -> StatusResult {
        c.gpu()?;
        let mut q: abi::GrGetCtxBufferSizeParams = parse_params(c.p)?;
        let client = &c.rm.clients[c.ci];
        let ch = client.find(q.h_channel).ok_or(NV_ERR_OBJECT_NOT_FOUND)?;
        if !matches!(ch.kind, ObjKind::Channel { .. }) {
            return Err(NV_ERR_INVALID_CHANNEL);
        }
        if held_context(client, ch) == 0 {
            return Err(NV_ERR_INVALID_OBJECT);
        }
        q.total_buffer_size = context_total();
        store(&q, c.p);
        Ok(())
    }

    /// NV0080_CTRL_CMD_FIFO_GET_ENGINE_CONTEXT_PROPERTIES. At 550 and 535
    /// kernel RM has no handler: the control's flags (0x2a10) route it to
    /// GSP (`NVOC_EXPORTED_METHOD_DISABLED_BY_FLAG`,
    /// `inc/kernel/rmapi/control.h:152-154`; `generated/g_device_nvoc.c:713-727`),
    /// whose code is not open. GUESS: GSP answers as the subdevice's twin
    /// does (below). From 555 a bare-metal GPU's handler is
    /// NV_ERR_NOT_SUPPORTED (`deviceCtrlCmdFifoGetEngineContextProperties_92bfc3`,
    /// `generated/g_device_nvoc.h:1135-1138` at 595.45.04; only a vGPU guest's
    /// `_VF` answers), which the double answers for every newer release.
    pub(crate) fn fifo_engine_context_properties(&self, c: Ctl<'_>) -> StatusResult {
        let release = settings::release();
        if !(release.starts_with("550.") || release.starts_with("535.")) {
            return Err(NV_ERR_NOT_SUPPORTED);
        }
        let mut q: abi::FifoEngineContextPropertiesParams = parse_params(c.p)?;
        let id = engine_id(q.engine_id)?;
        q.size = size_of(id);
        q.alignment = ALIGN;
        store(&q, c.p);
        Ok(())
    }

    /// NV2080_CTRL_CMD_GR_GET_ENGINE_CONTEXT_PROPERTIES
    /// (`subdeviceCtrlCmdKGrGetEngineContextProperties_IMPL`,
    /// `gpu/gr/kernel_graphics.c:3654-3713`, kernel RM at every release):
    /// the type's size and alignment from the static info, the larger of
    /// those and the caller's when `bInfoPopulated`; an id past COUNT
    /// NV_ERR_INVALID_ARGUMENT. The route is not checked (MIG off).
    pub(crate) fn gr_engine_context_properties(&self, c: Ctl<'_>) -> StatusResult {
        c.gpu()?;
        let mut q: abi::GrEngineContextPropertiesParams = parse_params(c.p)?;
        let id = engine_id(q.engine_id)?;
        let (mut size, mut alignment) = (size_of(id), ALIGN);
        if q.b_info_populated != 0 {
            size = size.max(q.size);
            alignment = alignment.max(q.alignment);
        }
        q.size = size;
        q.alignment = alignment;
        q.b_info_populated = 1;
        store(&q, c.p);
        Ok(())
    }
}
