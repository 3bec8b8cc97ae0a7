// SPDX-License-Identifier: GPL-2.0

//! GR context buffers: committed at a TSG's first compute object, reported
//! by GR_GET_CTX_BUFFER_SIZE, bounded by the engine context properties.

use super::*;

const GR_GET_CTX_BUFFER_SIZE: u32 = 0x2080_1218;
const GR_GET_ENGINE_CONTEXT_PROPERTIES: u32 = 0x2080_122d;
const FIFO_GET_ENGINE_CONTEXT_PROPERTIES: u32 = 0x0080_1707;

/// GR_GET_CTX_BUFFER_SIZE of channel `ch` through subdevice `sub`.
pub(crate) fn ctx_size(s: &S, obj: Handle, ch: Handle) -> nvclient::Result<u64> {
    let mut p = [0u8; 16];
    p[..4].copy_from_slice(&ch.to_ne_bytes());
    s.ctl
        .control(s.client, obj, GR_GET_CTX_BUFFER_SIZE, &mut p)?;
    Ok(u64::from_ne_bytes(p[8..16].try_into().unwrap_or_default()))
}

/// `(size, alignment)` of engine context buffer type `id` by the
/// subdevice control (0x2080122d).
pub(crate) fn gr_props(s: &S, id: u32) -> nvclient::Result<(u32, u32)> {
    let mut p = [0u8; 32];
    p[16..20].copy_from_slice(&id.to_ne_bytes());
    s.ctl
        .control(s.client, s.sub, GR_GET_ENGINE_CONTEXT_PROPERTIES, &mut p)?;
    let w = |i: usize| u32::from_ne_bytes(p[i..i + 4].try_into().unwrap_or_default());
    Ok((w(24), w(20)))
}

/// `(size, alignment)` by the device control (0x801707).
fn fifo_props(s: &S, id: u32) -> nvclient::Result<(u32, u32)> {
    let mut p = [0u8; 12];
    p[..4].copy_from_slice(&id.to_ne_bytes());
    s.ctl.control(
        s.client,
        s.device,
        FIFO_GET_ENGINE_CONTEXT_PROPERTIES,
        &mut p,
    )?;
    let w = |i: usize| u32::from_ne_bytes(p[i..i + 4].try_into().unwrap_or_default());
    Ok((w(8), w(4)))
}

/// The GR engine ids (GRAPHICS and 0x08..=0x19).
fn gr_ids() -> impl Iterator<Item = u32> {
    core::iter::once(0).chain(0x08..=0x19)
}

fn compute(s: &S, ch: Handle) -> nvclient::Result<Handle> {
    let mut params = [0u8; 16];
    s.ctl
        .alloc(s.client, ch, 0, class::HOPPER_COMPUTE_A, &mut params)
}

pub(super) fn gr_context_buffers() -> Outcome {
    fresh()?;
    let s = session(0)?;
    // The bound: each GR type's size rounded up to its alignment.
    let mut bound = 0u64;
    for id in gr_ids() {
        let (size, align) = gr_props(&s, id).ctx("GR engine context properties")?;
        ensure!(
            align != 0 && size % align == 0,
            "type {id:#x}: {size:#x} / {align:#x}"
        );
        bound += u64::from(size).next_multiple_of(u64::from(align));
    }
    want_rm(gr_props(&s, 0x1a), NV_ERR_INVALID_ARGUMENT, "type COUNT")?;
    // Bits 4:0 only: 0x20 is GRAPHICS.
    ensure!(
        gr_props(&s, 0x20).ctx("0x20")? == gr_props(&s, 0).ctx("0")?,
        "0x20 != 0"
    );
    // From 555 on bare metal the device control is not supported; before,
    // it answers as the subdevice's twin (`engine_context_properties_550`).
    if release_major() >= 555 {
        want_rm(fifo_props(&s, 0), NV_ERR_NOT_SUPPORTED, "0x801707 from 555")?;
    }
    let params = abi::ChannelAllocParams {
        gp_fifo_entries: 16,
        ..Default::default()
    };
    let tsg = s
        .ctl
        .alloc_tsg(s.client, s.device, 0, nvclient::tsg_params(0))
        .ctx("tsg")?;
    let ch1 = s
        .ctl
        .alloc_channel(s.client, tsg, 0, class::HOPPER_CHANNEL_GPFIFO_A, params)
        .ctx("channel 1")?;
    let ch2 = s
        .ctl
        .alloc_channel(s.client, tsg, 0, class::HOPPER_CHANNEL_GPFIFO_A, params)
        .ctx("channel 2")?;
    want_rm(
        ctx_size(&s, s.sub, ch1),
        NV_ERR_INVALID_OBJECT,
        "before compute",
    )?;
    want_rm(ctx_size(&s, s.sub, tsg), NV_ERR_INVALID_CHANNEL, "a TSG")?;
    want_rm(
        ctx_size(&s, s.sub, 0xbad0_0001),
        NV_ERR_OBJECT_NOT_FOUND,
        "unknown",
    )?;
    let mut short = [0u8; 8];
    want_rm(
        s.ctl
            .control(s.client, s.sub, GR_GET_CTX_BUFFER_SIZE, &mut short),
        NV_ERR_INVALID_ARGUMENT,
        "8-byte params",
    )?;
    // A copy engine commits nothing.
    let free0 = s.heap_free()?;
    let mut cp = [0u8; 8];
    s.ctl
        .alloc(s.client, ch1, 0, class::HOPPER_DMA_COPY_A, &mut cp)
        .ctx("copy object")?;
    ensure!(s.heap_free()? == free0, "a copy object committed VRAM");
    let o1 = compute(&s, ch1).ctx("compute 1")?;
    let total = ctx_size(&s, s.sub, ch1).ctx("size after compute")?;
    let free1 = s.heap_free()?;
    ensure!(
        total > 0 && total <= bound,
        "total {total:#x}, bound {bound:#x}"
    );
    ensure!(
        free0 - free1 == total,
        "heap fell {:#x} for {total:#x}",
        free0 - free1
    );
    ensure!(
        ctx_size(&s, s.sub, ch2).ctx("ch2")? == total,
        "channels of a TSG differ"
    );
    compute(&s, ch2).ctx("compute 2")?;
    ensure!(s.heap_free()? == free1, "a second compute object committed");
    s.free(o1).ctx("free compute 1")?;
    ensure!(
        s.heap_free()? == free1,
        "freeing a compute object released the context"
    );
    ensure!(
        ctx_size(&s, s.sub, ch1).ctx("after free")? == total,
        "size changed"
    );
    s.free(tsg).ctx("free TSG")?;
    ensure!(
        s.heap_free()? == free0 + 2 * INSTANCE_BLOCK,
        "TSG freed: heap free {:#x}, before {free0:#x}",
        s.heap_free()?
    );
    // A bare channel's own TSG: freed with the channel.
    let free2 = s.heap_free()?;
    let bare = s
        .ctl
        .alloc_channel(
            s.client,
            s.device,
            0,
            class::HOPPER_CHANNEL_GPFIFO_A,
            params,
        )
        .ctx("bare channel")?;
    compute(&s, bare).ctx("compute on bare")?;
    ensure!(
        free2 - s.heap_free()? == INSTANCE_BLOCK + total,
        "bare channel's context"
    );
    s.free(bare).ctx("free bare")?;
    ensure!(s.heap_free()? == free2, "bare channel freed: context kept");
    Ok(())
}

/// The major number of the release the double claims.
fn release_major() -> u32 {
    crate::sys::claimed_release()
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .unwrap_or(0)
}

/// At 550.163.01 the device control answers (GUESS of GSP's answer), as
/// the subdevice's twin does.
pub(super) fn engine_context_properties_550() -> Outcome {
    // A lane that claims a release before 555 asks its own double; the
    // others load the double as 550.163.01.
    let reload = release_major() >= 555;
    if reload {
        if module_loaded("nvidia") {
            sh("rmmod nvidia")?;
        }
        sh(&format!("{LOAD} release=4"))?;
    }
    let s = session(0)?;
    for id in gr_ids() {
        let f = fifo_props(&s, id).ctx("0x801707")?;
        let g = gr_props(&s, id).ctx("0x2080122d")?;
        ensure!(f == g, "type {id:#x}: device {f:?} subdevice {g:?}");
    }
    want_rm(fifo_props(&s, 0x1a), NV_ERR_INVALID_ARGUMENT, "type COUNT")?;
    let mut short = [0u8; 8];
    want_rm(
        s.ctl.control(
            s.client,
            s.device,
            FIFO_GET_ENGINE_CONTEXT_PROPERTIES,
            &mut short,
        ),
        NV_ERR_INVALID_ARGUMENT,
        "8-byte params",
    )?;
    drop(s);
    if reload {
        fresh()
    } else {
        Ok(())
    }
}
