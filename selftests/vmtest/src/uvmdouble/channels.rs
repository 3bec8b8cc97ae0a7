// SPDX-License-Identifier: GPL-2.0

//! Channel registration and external ranges.

use super::*;

/// A TSG in `vas` and a channel in it (no ring), with a compute object,
/// whose GR context buffers UVM maps when the channel is registered.
pub(super) fn channel(s: &S, vas: Handle) -> Result<(Handle, Handle), String> {
    let (tsg, ch) = bare_channel(s, nvclient::tsg_params(vas))?;
    compute(s, ch)?;
    Ok((tsg, ch))
}

/// A TSG of `params` (which name its VA space) and a channel in it,
/// nothing more.
fn bare_channel(s: &S, params: abi::ChannelGroupAllocParams) -> Result<(Handle, Handle), String> {
    let tsg = s.ctl.alloc_tsg(s.client, s.device, 0, params).ctx("TSG")?;
    Ok((tsg, channel_in(s, tsg)?))
}

/// A channel (no ring) in TSG `tsg`.
fn channel_in(s: &S, tsg: Handle) -> Result<Handle, String> {
    s.ctl
        .alloc_channel(
            s.client,
            tsg,
            0,
            class::AMPERE_CHANNEL_GPFIFO_A,
            Default::default(),
        )
        .ctx("channel")
}

/// A compute object on channel `ch` (its TSG's GR context committed).
pub(super) fn compute(s: &S, ch: Handle) -> Result<Handle, String> {
    let mut params = [0u8; 16];
    s.ctl
        .alloc(s.client, ch, 0, class::HOPPER_COMPUTE_A, &mut params)
        .ctx("compute object")
}

/// UVM_REGISTER_CHANNEL: a GR channel's context buffers get one CHANNEL
/// range each, carved from the caller's region at the first free aligned
/// address and shared by the channels of one TSG (`create_va_range`,
/// uvm_user_channel.c:297-361 at 550.163.01); a copy channel has none and
/// its region is ignored.
pub(super) fn channel_registration() -> Outcome {
    fresh()?;
    let f = full(0)?;
    let s = &f.s;
    let base = 0x7000_0000_0000u64;
    let len = 64 * MIB;
    // Before its compute object the context has no buffers.
    let (_, bare) = bare_channel(s, nvclient::tsg_params(f.vas))?;
    want_rm(
        f.uvm
            .register_channel(&f.uuid, -1, s.client, bare, base, len),
        NV_ERR_INVALID_OBJECT,
        "a GR channel whose context has no buffers",
    )?;
    let (tsg, ch) = channel(s, f.vas)?;
    let total = crate::double::grctx::ctx_size(s, s.sub, ch).ctx("GR_GET_CTX_BUFFER_SIZE")?;
    let (main, _) = crate::double::grctx::gr_props(s, 0).ctx("main buffer size")?;
    let main = u64::from(main);
    let g1 = Gpu::open_index(1).ctx("nvidia1")?;
    f.uvm
        .register_gpu(&double_uuid(1), -1, 0)
        .ctx("REGISTER_GPU 1")?;
    drop(g1);
    want_rm(
        f.uvm
            .register_channel(&double_uuid(1), -1, s.client, ch, base, len),
        NV_ERR_INVALID_DEVICE,
        "GPU without a GPU VA space",
    )?;
    want_rm(
        f.uvm
            .register_channel(&f.uuid, -1, s.client, tsg, base, len),
        NV_ERR_INVALID_OBJECT_HANDLE,
        "a TSG, not a channel",
    )?;
    let other_vas = s.vas()?;
    let (_, other) = channel(s, other_vas)?;
    want_rm(
        f.uvm
            .register_channel(&f.uuid, -1, s.client, other, base, len),
        NV_ERR_INVALID_CHANNEL,
        "a channel in another VA space",
    )?;
    for (b, l) in [(base + 1, len), (base, 0), (base, 100)] {
        want_rm(
            f.uvm.register_channel(&f.uuid, -1, s.client, ch, b, l),
            NV_ERR_INVALID_ADDRESS,
            &format!("base {b:#x} length {l:#x}"),
        )?;
    }
    want_rm(
        f.uvm
            .register_channel(&f.uuid, -1, s.client, ch, base, main),
        NV_ERR_INVALID_ADDRESS,
        "a region with room for the main buffer only",
    )?;
    want_rm(
        f.uvm.validate_va_range(base, main),
        NV_ERR_INVALID_ADDRESS,
        "a range left by the refused registration",
    )?;
    want_rm(
        f.uvm
            .register_channel(&f.uuid, -1, s.client, ch, 1 << 57, len),
        NV_ERR_OUT_OF_RANGE,
        "a region past Hopper's channel VA",
    )?;
    // The region GR_GET_CTX_BUFFER_SIZE sizes holds them all, as libcuda
    // asks; the main buffer comes first, at the base.
    f.uvm
        .register_channel(&f.uuid, -1, s.client, ch, base, total)
        .ctx("REGISTER_CHANNEL")?;
    f.uvm
        .validate_va_range(base, main)
        .ctx("VALIDATE_VA_RANGE of the main buffer's range")?;
    want_rm(
        f.uvm
            .register_channel(&f.uuid, -1, s.client, ch, base + len, len),
        NV_ERR_INVALID_CHANNEL,
        "the same channel twice",
    )?;
    // Another channel of the same TSG shares the ranges: the same region
    // again is no conflict.
    let sibling = channel_in(s, tsg)?;
    f.uvm
        .register_channel(&f.uuid, -1, s.client, sibling, base, total)
        .ctx("REGISTER_CHANNEL of the TSG's second channel")?;
    // Another TSG's channel finds the region full; beside it, it fits.
    let (_, ch2) = channel(s, f.vas)?;
    want_rm(
        f.uvm
            .register_channel(&f.uuid, -1, s.client, ch2, base, total),
        NV_ERR_INVALID_ADDRESS,
        "another TSG's channel in a full region",
    )?;
    want_rm(
        f.uvm.free(base, main),
        NV_ERR_INVALID_ADDRESS,
        "UVM_FREE of a channel range",
    )?;
    // A copy channel has no resources: its region is not looked at.
    let copy = abi::ChannelGroupAllocParams {
        engine_type: abi::engine::NV2080_ENGINE_TYPE_COPY0,
        ..nvclient::tsg_params(f.vas)
    };
    let (_, ce) = bare_channel(s, copy)?;
    f.uvm
        .register_channel(&f.uuid, -1, s.client, ce, 0, 0)
        .ctx("REGISTER_CHANNEL of a copy channel, no region")?;
    // The ranges stay while one channel of the TSG holds them.
    f.uvm
        .unregister_channel(&f.uuid, s.client, ch)
        .ctx("UNREGISTER_CHANNEL")?;
    want_rm(
        f.uvm.unregister_channel(&f.uuid, s.client, ch),
        NV_ERR_INVALID_CHANNEL,
        "unregister twice",
    )?;
    f.uvm
        .validate_va_range(base, main)
        .ctx("the shared range while the sibling holds it")?;
    f.uvm
        .unregister_channel(&f.uuid, s.client, sibling)
        .ctx("UNREGISTER_CHANNEL of the sibling")?;
    want_rm(
        f.uvm.validate_va_range(base, main),
        NV_ERR_INVALID_ADDRESS,
        "the channel range after both unregistered",
    )?;
    f.uvm
        .register_channel(&f.uuid, -1, s.client, ch2, base, total)
        .ctx("REGISTER_CHANNEL in the freed VA")?;
    // A channel on GPU 1 for GPU 0.
    let s1 = session(1)?;
    let v1 = s1.vas()?;
    let (_, c1) = channel(&s1, v1)?;
    want_rm(
        f.uvm
            .register_channel(&f.uuid, -1, s1.client, c1, base + 4 * len, len),
        NV_ERR_OTHER_DEVICE_FOUND,
        "GPU 1's channel for GPU 0",
    )?;
    Ok(())
}

pub(super) fn external_ranges_keep_memory() -> Outcome {
    fresh()?;
    let f = full(0)?;
    let s = &f.s;
    let base = 0x7100_0000_0000u64;
    let len = 8 * MIB;
    want_rm(
        f.uvm.create_external_range(base + 4096 + 1, len),
        NV_ERR_INVALID_ADDRESS,
        "unaligned external range",
    )?;
    f.uvm
        .create_external_range(base, len)
        .ctx("CREATE_EXTERNAL_RANGE")?;
    want_rm(
        f.uvm.create_external_range(base + MIB, len),
        NV_ERR_UVM_ADDRESS_IN_USE,
        "overlapping external range",
    )?;
    let f0 = s.heap_free()?;
    let mem = s
        .ctl
        .alloc_vram(s.client, s.device, 0, 4 * MIB)
        .ctx("VRAM")?;
    ensure!(s.heap_free()? == f0 - 4 * MIB, "VRAM not charged");
    let map = |b: u64, l: u64, off: u64, gpus: &[Uuid]| {
        f.uvm
            .map_external_allocation(b, l, off, gpus, s.client, mem.handle)
    };
    want_rm(
        map(base, 2 * MIB, 0, &[]),
        NV_ERR_INVALID_ARGUMENT,
        "no GPUs",
    )?;
    want_rm(
        map(base + len - MIB, 2 * MIB, 0, &[f.uuid]),
        NV_ERR_INVALID_ADDRESS,
        "past the external range",
    )?;
    want_rm(
        map(0x7200_0000_0000, 2 * MIB, 0, &[f.uuid]),
        NV_ERR_INVALID_ADDRESS,
        "outside any external range",
    )?;
    want_rm(
        map(base, 2 * MIB, 100, &[f.uuid]),
        NV_ERR_INVALID_ADDRESS,
        "unaligned offset",
    )?;
    want_rm(
        map(base, 4 * MIB, 2 * MIB, &[f.uuid]),
        NV_ERR_INVALID_OFFSET,
        "offset + length past the memory",
    )?;
    want_rm(
        map(base, 2 * MIB, 0, &[double_uuid(1)]),
        NV_ERR_INVALID_DEVICE,
        "a GPU without a GPU VA space",
    )?;
    let bad = GpuMappingAttributes {
        gpu_mapping_type: 9,
        ..uvm::default_attributes(&f.uuid)
    };
    want_rm(
        f.uvm
            .map_external_allocation_with(base, 2 * MIB, 0, &[bad], s.client, mem.handle),
        NV_ERR_INVALID_ARGUMENT,
        "mapping type 9",
    )?;
    want_rm(
        f.uvm
            .map_external_allocation(base, 2 * MIB, 0, &[f.uuid], s.client, 0x4242),
        NV_ERR_OBJECT_NOT_FOUND,
        "unknown memory handle",
    )?;
    // RM's lookup of a missing client (`nv_gpu_ops.c:11660-11669`,
    // `rs_server.c:3056-3058` at 595.45.04).
    want_rm(
        f.uvm
            .map_external_allocation(base, 2 * MIB, 0, &[f.uuid], 0xdead_0000, mem.handle),
        NV_ERR_INVALID_OBJECT_HANDLE,
        "unknown client",
    )?;
    map(base, 4 * MIB, 0, &[f.uuid]).ctx("MAP_EXTERNAL_ALLOCATION")?;
    // RM frees its handle; the UVM mapping keeps the VRAM.
    s.ctl
        .free(s.client, s.client, mem.handle)
        .ctx("RM_FREE of the mapped memory")?;
    ensure!(
        s.heap_free()? == f0 - 4 * MIB,
        "VRAM returned while UVM still maps it"
    );
    want_rm(
        f.uvm.free(base + 4096, len - 4096),
        NV_ERR_INVALID_ADDRESS,
        "FREE inside a range",
    )?;
    f.uvm
        .validate_va_range(base, len)
        .ctx("VALIDATE external")?;
    f.uvm.free(base, len).ctx("UVM_FREE")?;
    ensure!(s.heap_free()? == f0, "VRAM not returned after UVM_FREE");
    want_rm(f.uvm.free(base, len), NV_ERR_INVALID_ADDRESS, "FREE twice")?;
    // UNMAP_EXTERNAL drops the reference too.
    let mem = s
        .ctl
        .alloc_vram(s.client, s.device, 0, 2 * MIB)
        .ctx("VRAM")?;
    f.uvm.create_external_range(base, len).ctx("range")?;
    f.uvm
        .map_external_allocation(base, 2 * MIB, 0, &[f.uuid], s.client, mem.handle)
        .ctx("map")?;
    s.ctl.free(s.client, s.client, mem.handle).ctx("RM_FREE")?;
    ensure!(s.heap_free()? == f0 - 2 * MIB, "VRAM returned while mapped");
    f.uvm
        .unmap_external(base, 2 * MIB, &f.uuid)
        .ctx("UNMAP_EXTERNAL")?;
    ensure!(s.heap_free()? == f0, "VRAM kept after UNMAP_EXTERNAL");
    // Closing the VA space drops what is still mapped.
    let mem = s
        .ctl
        .alloc_vram(s.client, s.device, 0, 2 * MIB)
        .ctx("VRAM")?;
    f.uvm
        .map_external_allocation(base, 2 * MIB, 0, &[f.uuid], s.client, mem.handle)
        .ctx("map again")?;
    s.ctl.free(s.client, s.client, mem.handle).ctx("RM_FREE")?;
    let Full { s, uvm, _mm, .. } = f;
    drop(_mm);
    drop(uvm);
    ensure!(s.heap_free()? == f0, "VRAM kept after the VA space closed");
    Ok(())
}
