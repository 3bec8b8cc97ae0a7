// SPDX-License-Identifier: GPL-2.0

//! Controls, VID_HEAP_CONTROL and ALLOC_MEMORY.

use super::*;

// 5. Controls.

pub(super) const FB_INDICES: [u32; 8] = [
    fb_info::RAM_SIZE,
    fb_info::TOTAL_RAM_SIZE,
    fb_info::HEAP_SIZE,
    fb_info::MAPPABLE_HEAP_SIZE,
    fb_info::FB_TAX_SIZE_KB,
    fb_info::LARGEST_FREE_REGION_SIZE_KB,
    fb_info::HEAP_FREE,
    fb_info::USABLE_RAM_SIZE,
];

pub(super) fn fb_info_v1_v2_and_surface_size() -> Outcome {
    fresh()?;
    let s = session(1)?;
    let v2 = s
        .ctl
        .fb_get_info_v2(s.client, s.sub, &FB_INDICES)
        .ctx("V2")?;
    let v1 = s
        .ctl
        .fb_get_info_v1(s.client, s.sub, &FB_INDICES)
        .ctx("V1")?;
    ensure!(v1 == v2, "V1 {v1:?} != V2 {v2:?}");
    ensure!(
        v2.len() == FB_INDICES.len(),
        "V2 returned {} entries",
        v2.len()
    );
    let get = |l: &[abi::InfoEntry], i: u32| l.iter().find(|e| e.index == i).map(|e| e.data);
    ensure!(
        get(&v2, fb_info::HEAP_SIZE) == Some((HEAP[1] >> 10) as u32),
        "GPU 1 HEAP_SIZE {:?}",
        get(&v2, fb_info::HEAP_SIZE)
    );
    let m = s.vram(3 * MIB + 1).ctx("vram")?;
    ensure!(m.size == 4 * MIB, "size {}", m.size);
    let v2b = s
        .ctl
        .fb_get_info_v2(s.client, s.sub, &FB_INDICES)
        .ctx("V2 after")?;
    let v1b = s
        .ctl
        .fb_get_info_v1(s.client, s.sub, &FB_INDICES)
        .ctx("V1 after")?;
    ensure!(v1b == v2b, "after alloc: V1 {v1b:?} != V2 {v2b:?}");
    let (f0, f1) = (
        get(&v2, fb_info::HEAP_FREE).unwrap_or(0),
        get(&v2b, fb_info::HEAP_FREE).unwrap_or(0),
    );
    ensure!(
        u64::from(f0 - f1) == m.size >> 10,
        "HEAP_FREE went {f0} -> {f1} KiB for {} bytes",
        m.size
    );
    let phys = s
        .ctl
        .surface_phys_size(s.client, m.handle)
        .ctx("PHYS_SIZE")?;
    ensure!(phys == m.size, "PHYS_SIZE {phys} != {}", m.size);
    let sys = s
        .ctl
        .alloc_sysmem(s.client, s.device, 0, 12288)
        .ctx("sysmem")?;
    let phys = s
        .ctl
        .surface_phys_size(s.client, sys.handle)
        .ctx("sys PHYS_SIZE")?;
    ensure!(phys == 12288, "sysmem PHYS_SIZE {phys}");
    // FB info needs a subdevice.
    want_rm(
        s.ctl
            .fb_get_info_v2(s.client, s.device, &[fb_info::HEAP_FREE]),
        NV_ERR_NOT_SUPPORTED,
        "FB info on a device",
    )?;
    Ok(())
}

pub(super) fn tsg_and_channel_controls() -> Outcome {
    fresh()?;
    let s = session(0)?;
    let (c, ctl) = (s.client, &s.ctl);
    let tsg = ctl
        .alloc_tsg(c, s.device, 0, nvclient::tsg_params(0))
        .ctx("tsg")?;
    let ts = ctl.get_timeslice(c, tsg).ctx("GET_TIMESLICE")?;
    ensure!(ts == 1024, "default timeslice {ts}");
    ctl.set_timeslice(c, tsg, 2000).ctx("SET_TIMESLICE")?;
    let ts = ctl.get_timeslice(c, tsg).ctx("GET_TIMESLICE")?;
    ensure!(ts == 2000, "timeslice {ts} after setting 2000");
    // Kernel RM enforces no minimum (at 595.45.04 GSP decides): a small
    // timeslice is taken as it is.
    ctl.set_timeslice(c, tsg, 99).ctx("SET_TIMESLICE 99 us")?;
    let ts = ctl.get_timeslice(c, tsg).ctx("get")?;
    ensure!(ts == 99, "timeslice {ts} after setting 99");
    ctl.gpfifo_schedule(c, tsg, true)
        .ctx("GPFIFO_SCHEDULE on")?;
    ctl.gpfifo_schedule(c, tsg, false)
        .ctx("GPFIFO_SCHEDULE off")?;
    ctl.preempt(c, tsg, true, Some(1000)).ctx("PREEMPT")?;
    ctl.preempt(c, tsg, false, None).ctx("PREEMPT no wait")?;
    let params = abi::ChannelAllocParams {
        gp_fifo_entries: 16,
        ..Default::default()
    };
    let ch1 = ctl
        .alloc_channel(c, tsg, 0, class::AMPERE_CHANNEL_GPFIFO_A, params)
        .ctx("channel 1")?;
    let ch2 = ctl
        .alloc_channel(c, s.device, 0, class::HOPPER_CHANNEL_GPFIFO_A, params)
        .ctx("channel 2 (own TSG)")?;
    let t1 = ctl.work_submit_token(c, ch1).ctx("token 1")?;
    let t2 = ctl.work_submit_token(c, ch2).ctx("token 2")?;
    ensure!(t1 != 0 && t2 != 0 && t1 != t2, "tokens {t1} {t2}");
    ensure!(
        ctl.work_submit_token(c, ch1).ctx("token again")? == t1,
        "token changed"
    );
    ctl.channel_gpfifo_schedule(c, ch2, true)
        .ctx("channel GPFIFO_SCHEDULE")?;
    // TSG controls on other objects, and tokens of non-channels.
    want_rm(
        ctl.get_timeslice(c, s.device),
        NV_ERR_NOT_SUPPORTED,
        "GET_TIMESLICE on a device",
    )?;
    want_rm(
        ctl.work_submit_token(c, tsg),
        NV_ERR_NOT_SUPPORTED,
        "token of a TSG",
    )?;
    want_rm(
        ctl.gpfifo_schedule(c, 0xbad0_0001, true),
        NV_ERR_INVALID_OBJECT_HANDLE,
        "GPFIFO_SCHEDULE on an unknown handle",
    )?;
    Ok(())
}

pub(super) fn gpu_id_info() -> Outcome {
    fresh()?;
    let ctl = Ctl::open_default().ctx("open")?;
    let c = ctl.alloc_root_client().ctx("client")?;
    let ids = ctl.attached_gpu_ids(c).ctx("ATTACHED_IDS")?;
    ensure!(ids == [0x100, 0x200], "attached ids {ids:x?}");
    for (i, id) in ids.iter().enumerate() {
        let info = ctl.gpu_id_info(c, *id).ctx("GET_ID_INFO_V2")?;
        ensure!(
            info.device_instance == i as u32 && info.sub_device_instance == 0,
            "gpu {id:#x}: device {} subdevice {}",
            info.device_instance,
            info.sub_device_instance
        );
    }
    want_rm(
        ctl.gpu_id_info(c, 0x300),
        NV_ERR_INVALID_ARGUMENT,
        "GET_ID_INFO_V2 of an unknown gpu id",
    )?;
    Ok(())
}

// 6. VID_HEAP_CONTROL, ALLOC_MEMORY.

pub(super) fn vid_heap_control() -> Outcome {
    fresh()?;
    let s = session(0)?;
    let info = s.ctl.vid_heap_info(s.client, s.device).ctx("INFO")?;
    ensure!(
        info.total == s.fb(fb_info::HEAP_SIZE)? && info.free == s.heap_free()?,
        "INFO total {} free {} vs FB info {} {}",
        info.total,
        info.free,
        s.fb(fb_info::HEAP_SIZE)?,
        s.heap_free()?
    );
    ensure!(info.total == HEAP[0], "INFO total {}", info.total);
    let attr = heap::ATTR_LOCATION.set(0, heap::ATTR_LOCATION_VIDMEM);
    let m = s
        .ctl
        .vid_heap_alloc_size(s.client, s.device, 5 * MIB + 3, attr, 0)
        .ctx("ALLOC_SIZE")?;
    // RM's 2 MiB pages from 2 MiB up (`mem_mgr.c:1760-1765` at 595.45.04).
    ensure!(m.size == 6 * MIB, "ALLOC_SIZE size {}", m.size);
    let after = s.ctl.vid_heap_info(s.client, s.device).ctx("INFO")?;
    ensure!(
        after.free == info.free - m.size && after.total == info.total,
        "INFO after ALLOC_SIZE: {after:?}"
    );
    ensure!(after.free == s.heap_free()?, "INFO free != FB HEAP_FREE");
    let phys = s
        .ctl
        .surface_phys_size(s.client, m.handle)
        .ctx("PHYS_SIZE")?;
    ensure!(phys == m.size, "PHYS_SIZE {phys}");
    // A virtual ALLOC_SIZE commits its range's page tables (an
    // NV50_MEMORY_VIRTUAL, `abi::virtual_range_charge`).
    let v = s
        .ctl
        .vid_heap_alloc_size(
            s.client,
            s.device,
            64 * MIB,
            attr,
            heap::ALLOC_FLAGS_VIRTUAL,
        )
        .ctx("virtual ALLOC_SIZE")?;
    let tables = abi::virtual_range_charge(64 * MIB);
    ensure!(
        s.heap_free()? == after.free - tables,
        "virtual ALLOC_SIZE: heap free {}, want {} less its {tables} bytes of page tables",
        s.heap_free()?,
        after.free
    );
    s.ctl
        .vid_heap_free(s.client, s.device, m.handle)
        .ctx("FREE")?;
    s.ctl
        .vid_heap_free(s.client, s.device, v.handle)
        .ctx("FREE virtual")?;
    let back = s.ctl.vid_heap_info(s.client, s.device).ctx("INFO")?;
    ensure!(back.free == info.free, "INFO free after FREE {}", back.free);
    // VID_HEAP FREE is RM's free (`rmapi_deprecated_vidheapctrl.c:323-339`
    // at 550.163.01): of an object already gone, NV_OK, nothing freed
    // (RS_COMPATABILITY_MODE, `rs_server.c:1072-1081`).
    s.ctl
        .vid_heap_free(s.client, s.device, m.handle)
        .ctx("FREE twice")?;
    let again = s.ctl.vid_heap_info(s.client, s.device).ctx("INFO")?;
    ensure!(
        again.free == info.free,
        "INFO free after FREE twice {}",
        again.free
    );
    // ALLOC_SIZE_RANGE (16 MiB in a range) and ALLOC_TILED_PITCH_HEIGHT
    // (8192-byte pitch x 2048 rows: 16 MiB) allocate VRAM the same way.
    for function in [
        heap::FUNCTION_ALLOC_SIZE_RANGE,
        heap::FUNCTION_ALLOC_TILED_PITCH_HEIGHT,
    ] {
        let mut p = nvclient::abi::Nvos32 {
            h_root: s.client,
            h_object_parent: s.device,
            function,
            ..Default::default()
        };
        if function == heap::FUNCTION_ALLOC_SIZE_RANGE {
            p.set_alloc_size_range(&nvclient::abi::Nvos32AllocSizeRange {
                owner: s.client,
                attr,
                size: 16 * MIB,
                range_end: u64::MAX,
                ..Default::default()
            });
        } else {
            p.set_alloc_tiled_pitch_height(&nvclient::abi::Nvos32AllocTiledPitchHeight {
                owner: s.client,
                attr,
                width: 2048,
                height: 2048,
                pitch: 8192,
                ..Default::default()
            });
        }
        s.ctl.vid_heap(&mut p).ctx("other heap function")?;
        let out = p.heap_alloc().ok_or("no result")?;
        ensure!(
            out.size == 16 * MIB && s.heap_free()? == info.free - 16 * MIB,
            "function {function}: size {}, heap free {}",
            out.size,
            s.heap_free()?
        );
        s.ctl
            .vid_heap_free(s.client, s.device, out.h_memory)
            .ctx("FREE")?;
    }
    Ok(())
}

pub(super) fn alloc_memory_reports_heap_limit() -> Outcome {
    fresh()?;
    for gi in 0..2u32 {
        let s = session(gi)?;
        let before = s.heap_free()?;
        let limit = s
            .gpu
            .alloc_memory_limit(s.client, s.device, 0, class::NV01_MEMORY_LOCAL_USER)
            .ctx("ALLOC_MEMORY")?;
        let heap = s.fb(fb_info::HEAP_SIZE)?;
        ensure!(
            limit == heap - 1,
            "GPU {gi}: limit {limit:#x}, heap {heap:#x}"
        );
        ensure!(s.heap_free()? == before, "ALLOC_MEMORY allocated VRAM");
    }
    // The client check goes through the ctl file the GPU file is registered
    // to: an unregistered GPU file is not the client's file.
    let s = session(0)?;
    let lone = Gpu::open_index(0).ctx("open")?;
    want_rm(
        lone.alloc_memory_limit(s.client, s.device, 0, class::NV01_MEMORY_LOCAL_USER),
        NV_ERR_INVALID_CLIENT,
        "ALLOC_MEMORY on an unregistered GPU file",
    )?;
    Ok(())
}
