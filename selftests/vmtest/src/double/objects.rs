// SPDX-License-Identifier: GPL-2.0

//! RM_ALLOC of every class in both layouts, VRAM accounting, and RM_FREE's cascades.

use super::*;

// 3. RM_ALLOC of every class in both layouts; VRAM accounting.

pub(super) fn alloc_classes(v21: bool) -> Outcome {
    fresh()?;
    let obs = session(0)?;
    let ctl = &obs.ctl;
    let _gpu = &obs.gpu;
    let alloc = |client: Handle, parent: Handle, cls: u32, p: &mut [u8]| {
        if v21 {
            ctl.alloc_v21(client, parent, 0, cls, p)
        } else {
            ctl.alloc(client, parent, 0, cls, p)
        }
    };
    let lay = if v21 { "NVOS21" } else { "NVOS64" };
    let c = alloc(0, 0, class::NV01_ROOT_CLIENT, &mut []).ctx("root client")?;
    ensure!(
        c & 0xfff0_0000 == 0xc1d0_0000,
        "{lay}: client handle {c:#x}"
    );
    let mut dp = abi::DeviceAllocParams::default().to_bytes();
    let dev = alloc(c, c, class::NV01_DEVICE_0, &mut dp).ctx("device")?;
    let mut sp = abi::SubdeviceAllocParams::default().to_bytes();
    let sub = alloc(c, dev, class::NV20_SUBDEVICE_0, &mut sp).ctx("subdevice")?;

    let free0 = obs.heap_free()?;
    let mut vp = nvclient::vram_params(c, 3 * MIB + 5).to_bytes();
    let vram = alloc(c, dev, class::NV01_MEMORY_LOCAL_USER, &mut vp).ctx("VRAM")?;
    let size = abi::MemoryAllocationParams::decode(&vp).size;
    // 2 MiB pages from 2 MiB up (`mem_mgr.c:1760-1765` at 595.45.04).
    ensure!(
        size == 4 * MIB,
        "{lay}: VRAM size written back {size}, want 4 MiB"
    );
    ensure!(
        obs.heap_free()? == free0 - size,
        "{lay}: VRAM not charged exactly"
    );
    let phys = ctl.surface_phys_size(c, vram).ctx("PHYS_SIZE")?;
    ensure!(phys == size, "{lay}: PHYS_SIZE {phys} != {size}");

    let mut sm = nvclient::sysmem_params(c, 5000).to_bytes();
    let sys = alloc(c, dev, class::NV01_MEMORY_SYSTEM, &mut sm).ctx("sysmem")?;
    let ssize = abi::MemoryAllocationParams::decode(&sm).size;
    ensure!(ssize == 8192, "{lay}: sysmem size {ssize}, want 8192");

    let mut virt = nvclient::vram_params(c, 64 * MIB);
    virt.flags |= heap::ALLOC_FLAGS_VIRTUAL;
    let mut vb = virt.to_bytes();
    let va = alloc(c, dev, class::NV50_MEMORY_VIRTUAL, &mut vb).ctx("virtual")?;
    // System memory commits no VRAM; a virtual range its page tables.
    let tables = abi::virtual_range_charge(64 * MIB);
    ensure!(
        obs.heap_free()? == free0 - size - tables,
        "{lay}: sysmem charged VRAM, or a virtual range other than its {tables} bytes of page tables"
    );

    let mut vs = abi::VaSpaceAllocParams::default().to_bytes();
    let vas = alloc(c, dev, class::FERMI_VASPACE_A, &mut vs).ctx("VA space")?;
    let mut tp = nvclient::tsg_params(vas).to_bytes();
    let tsg = alloc(c, dev, class::KEPLER_CHANNEL_GROUP_A, &mut tp).ctx("TSG")?;
    let mut cs = abi::CtxShareAllocParams {
        h_va_space: vas,
        flags: abi::ctxshare::FLAGS_SUBCONTEXT_ASYNC,
        subctx_id: 0,
    }
    .to_bytes();
    let ctx = alloc(c, tsg, class::FERMI_CONTEXT_SHARE_A, &mut cs).ctx("context share")?;
    let mut chp = abi::ChannelAllocParams {
        h_context_share: ctx,
        h_va_space: vas,
        gp_fifo_entries: 32,
        ..Default::default()
    }
    .to_bytes();
    let ch = alloc(c, tsg, class::AMPERE_CHANNEL_GPFIFO_A, &mut chp).ctx("channel")?;
    let token = ctl.work_submit_token(c, ch).ctx("token")?;
    ensure!(token != 0, "{lay}: token 0");
    let mut up = abi::UsermodeAllocParams::default().to_bytes();
    let um = alloc(c, sub, class::HOPPER_USERMODE_A, &mut up).ctx("usermode")?;

    let hs = [dev, sub, vram, sys, va, vas, tsg, ctx, ch, um];
    for (i, a) in hs.iter().enumerate() {
        ensure!(*a != 0 && *a != c, "{lay}: handle {i} is {a:#x}");
        ensure!(
            !hs[i + 1..].contains(a),
            "{lay}: handle {a:#x} handed out twice"
        );
    }
    // Wrong parents are refused with the parent status.
    let mut up = abi::UsermodeAllocParams::default().to_bytes();
    want_rm(
        alloc(c, dev, class::HOPPER_USERMODE_A, &mut up),
        NV_ERR_INVALID_OBJECT_PARENT,
        "usermode under a device",
    )?;
    let mut tp = nvclient::tsg_params(vas).to_bytes();
    want_rm(
        alloc(c, sub, class::KEPLER_CHANNEL_GROUP_A, &mut tp),
        NV_ERR_INVALID_OBJECT_PARENT,
        "TSG under a subdevice",
    )?;
    ctl.free(c, c, c).ctx("free client")?;
    ensure!(obs.heap_free()? == free0, "{lay}: VRAM not returned");
    Ok(())
}

pub(super) fn alloc_classes_nvos21() -> Outcome {
    alloc_classes(true)
}

pub(super) fn alloc_classes_nvos64() -> Outcome {
    alloc_classes(false)
}

pub(super) fn vram_accounting_stops_at_heap_size() -> Outcome {
    fresh()?;
    let s = session(0)?;
    let s1 = session(1)?;
    let heap = s.fb(fb_info::HEAP_SIZE)?;
    ensure!(heap == HEAP[0], "HEAP_SIZE {heap}");
    let mut held = Vec::new();
    let mut total = 0;
    loop {
        match s.vram(GIB) {
            Ok(m) => {
                total += m.size;
                held.push(m);
            }
            Err(Error::Rm(NV_ERR_NO_MEMORY)) => break,
            Err(e) => return Err(format!("1 GiB alloc: {e}")),
        }
        ensure!(held.len() <= 8, "more than 8 GiB allocated from 8 GiB");
    }
    ensure!(
        total == heap / GIB * GIB,
        "stopped after {total} bytes of 1 GiB chunks, heap {heap}"
    );
    let rest = heap - total;
    let m = s.vram(rest).ctx("the exact remainder")?;
    ensure!(m.size == rest, "remainder rounded to {}", m.size);
    held.push(m);
    ensure!(
        s.heap_free()? == 0,
        "HEAP_FREE {} when full",
        s.heap_free()?
    );
    want_rm(
        s.vram(64 << 10),
        NV_ERR_NO_MEMORY,
        "64 KiB into a full heap",
    )?;
    want_rm(s.vram(1), NV_ERR_NO_MEMORY, "1 byte into a full heap")?;
    // The other GPU has its own heap.
    ensure!(s1.heap_free()? == HEAP[1], "GPU 1 charged for GPU 0");
    let m1 = s1.vram(GIB).ctx("GPU 1 while GPU 0 is full")?;
    // Freeing gives it back exactly.
    let first = held.remove(0);
    s.free(first.handle).ctx("free 1 GiB")?;
    ensure!(s.heap_free()? == GIB, "HEAP_FREE after freeing 1 GiB");
    let again = s.vram(GIB).ctx("1 GiB again")?;
    held.push(again);
    want_rm(s.vram(64 << 10), NV_ERR_NO_MEMORY, "full again")?;
    for m in held {
        s.free(m.handle).ctx("free")?;
    }
    s1.free(m1.handle).ctx("free GPU 1")?;
    ensure!(s.heap_free()? == heap, "HEAP_FREE after freeing all");
    ensure!(s1.heap_free()? == HEAP[1], "GPU 1 HEAP_FREE after free");
    Ok(())
}

// 4. RM_FREE cascades.

pub(super) fn free_device_cascades() -> Outcome {
    fresh()?;
    let obs = session(0)?;
    let s = session(0)?;
    let before = obs.heap_free()?;
    let a = s.vram(4 * MIB).ctx("a")?;
    let b = s.vram(6 * MIB).ctx("b")?;
    // Memory under the subdevice belongs to the device's tree too.
    let c = s
        .ctl
        .alloc_vram(s.client, s.sub, 0, 2 * MIB)
        .ctx("c under subdevice")?;
    ensure!(
        obs.heap_free()? == before - 12 * MIB,
        "charged {} for 12 MiB",
        before - obs.heap_free()?
    );
    s.free(s.device).ctx("free device")?;
    ensure!(
        obs.heap_free()? == before,
        "HEAP_FREE {} after freeing the device, want {before}",
        obs.heap_free()?
    );
    for (h, what) in [(a.handle, "a"), (b.handle, "b"), (c.handle, "c")] {
        want_rm(
            s.ctl.surface_phys_size(s.client, h),
            NV_ERR_INVALID_OBJECT_HANDLE,
            &format!("memory {what} after its device was freed"),
        )?;
        // RM_FREE of an object the client no longer has succeeds and
        // frees nothing (RS_COMPATABILITY_MODE, `rs_server.c:1072-1081` at
        // 550.163.01; the real driver's answer).
        s.free(h).ctx("freeing it again")?;
    }
    want_rm(
        s.ctl.fb_get_info_v2(s.client, s.sub, &[fb_info::HEAP_FREE]),
        NV_ERR_INVALID_OBJECT_HANDLE,
        "the subdevice after its device was freed",
    )?;
    // The client itself lives on.
    let d = s.ctl.alloc_device(s.client, 0, 0).ctx("new device")?;
    ensure!(d != 0, "no device handle");
    Ok(())
}

pub(super) fn free_client_frees_everything() -> Outcome {
    fresh()?;
    let obs = session(0)?;
    let s = session(0)?;
    let before = obs.heap_free()?;
    let m = s.vram(10 * MIB).ctx("vram")?;
    let tsg = s
        .ctl
        .alloc_tsg(s.client, s.device, 0, nvclient::tsg_params(0))
        .ctx("tsg")?;
    let _ch = s
        .ctl
        .alloc_work_channel(s.client, s.device, tsg, class::AMPERE_CHANNEL_GPFIFO_A, 16)
        .ctx("channel")?;
    let dup = s
        .ctl
        .dup_object(s.client, s.device, 0, s.client, m.handle, 0)
        .ctx("dup")?;
    ensure!(dup != m.handle, "dup kept the handle");
    // The memory, and the channel's instance block.
    ensure!(
        obs.heap_free()? == before - 10 * MIB - INSTANCE_BLOCK,
        "charge: HEAP_FREE {}",
        obs.heap_free()?
    );
    s.free(s.client).ctx("free client")?;
    ensure!(
        obs.heap_free()? == before,
        "HEAP_FREE {} after freeing the client",
        obs.heap_free()?
    );
    // RM's client lookup fails first: NV_ERR_INVALID_OBJECT_HANDLE
    // (`rs_server.c:2590-2593` at 550.163.01; the real driver's answer).
    want_rm(
        s.vram(MIB),
        NV_ERR_INVALID_OBJECT_HANDLE,
        "alloc in a freed client",
    )?;
    want_rm(
        s.free(s.client),
        NV_ERR_INVALID_OBJECT_HANDLE,
        "freeing it twice",
    )?;
    Ok(())
}
