// SPDX-License-Identifier: GPL-2.0

//! Channel registration and external ranges.

use super::*;

/// A TSG in `vas` and a channel in it (no ring).
pub(super) fn channel(s: &S, vas: Handle) -> Result<(Handle, Handle), String> {
    let tsg = s
        .ctl
        .alloc_tsg(s.client, s.device, 0, nvclient::tsg_params(vas))
        .ctx("TSG")?;
    let ch = s
        .ctl
        .alloc_channel(
            s.client,
            tsg,
            0,
            class::AMPERE_CHANNEL_GPFIFO_A,
            Default::default(),
        )
        .ctx("channel")?;
    Ok((tsg, ch))
}

pub(super) fn channel_registration() -> Outcome {
    fresh()?;
    let f = full(0)?;
    let s = &f.s;
    let (tsg, ch) = channel(s, f.vas)?;
    let base = 0x7000_0000_0000u64;
    let len = 64 * MIB;
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
    f.uvm
        .register_channel(&f.uuid, -1, s.client, ch, base, len)
        .ctx("REGISTER_CHANNEL")?;
    want_rm(
        f.uvm
            .register_channel(&f.uuid, -1, s.client, ch, base + len, len),
        NV_ERR_INVALID_CHANNEL,
        "the same channel twice",
    )?;
    let (_, ch2) = channel(s, f.vas)?;
    want_rm(
        f.uvm
            .register_channel(&f.uuid, -1, s.client, ch2, base + len / 2, len),
        NV_ERR_UVM_ADDRESS_IN_USE,
        "overlapping channel ranges",
    )?;
    f.uvm
        .validate_va_range(base, len)
        .ctx("VALIDATE_VA_RANGE of the channel range")?;
    want_rm(
        f.uvm.free(base, len),
        NV_ERR_INVALID_ADDRESS,
        "UVM_FREE of a channel range",
    )?;
    f.uvm
        .unregister_channel(&f.uuid, s.client, ch)
        .ctx("UNREGISTER_CHANNEL")?;
    want_rm(
        f.uvm.unregister_channel(&f.uuid, s.client, ch),
        NV_ERR_INVALID_CHANNEL,
        "unregister twice",
    )?;
    want_rm(
        f.uvm.validate_va_range(base, len),
        NV_ERR_INVALID_ADDRESS,
        "the channel range after unregistering",
    )?;
    f.uvm
        .register_channel(&f.uuid, -1, s.client, ch2, base + len / 2, len)
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
