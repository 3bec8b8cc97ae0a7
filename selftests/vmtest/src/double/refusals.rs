// SPDX-License-Identifier: GPL-2.0

//! What the double refuses: foreign clients, fds and handles, bad pointers and sizes.

use super::*;

// 8. Refusals.

pub(super) fn client_bound_to_its_ctl_file() -> Outcome {
    fresh()?;
    let s = session(0)?;
    let m = s.vram(MIB).ctx("vram")?;
    let other = Ctl::open_default().ctx("second ctl")?;
    let c = s.client;
    want_rm(
        other.alloc_vram(c, s.device, 0, MIB),
        NV_ERR_INVALID_CLIENT,
        "alloc through another ctl file",
    )?;
    want_rm(
        other.fb_get_info_v2(c, s.sub, &[fb_info::HEAP_FREE]),
        NV_ERR_INVALID_CLIENT,
        "control through another ctl file",
    )?;
    want_rm(
        other.vid_heap_info(c, s.device),
        NV_ERR_INVALID_CLIENT,
        "VID_HEAP_CONTROL through another ctl file",
    )?;
    want_rm(
        other.map_memory(s.gpu_path(), c, s.device, m.handle, 0, 4096, 0),
        NV_ERR_INVALID_CLIENT,
        "map through another ctl file",
    )?;
    want_rm(
        other.free(c, c, m.handle),
        NV_ERR_INVALID_CLIENT,
        "free through another ctl file",
    )?;
    want_rm(
        other.free(c, c, c),
        NV_ERR_INVALID_CLIENT,
        "free client through another ctl file",
    )?;
    // Nothing happened to the client.
    let phys = s.ctl.surface_phys_size(c, m.handle).ctx("still there")?;
    ensure!(phys == MIB, "memory changed: {phys}");
    Ok(())
}

pub(super) fn device_needs_gpu_fd_in_process() -> Outcome {
    fresh()?;
    let ctl = Ctl::open_default().ctx("ctl")?;
    let c = ctl.alloc_root_client().ctx("client")?;
    want_rm(
        ctl.alloc_device(c, 0, 0),
        NV_ERR_INSUFFICIENT_PERMISSIONS,
        "device 0 with no GPU fd",
    )?;
    let g1 = Gpu::open_index(1).ctx("open GPU 1")?;
    want_rm(
        ctl.alloc_device(c, 0, 0),
        NV_ERR_INSUFFICIENT_PERMISSIONS,
        "device 0 with only GPU 1's fd",
    )?;
    let d1 = ctl.alloc_device(c, 0, 1).ctx("device 1 with GPU 1's fd")?;
    let g0 = Gpu::open_index(0).ctx("open GPU 0")?;
    let d0 = ctl.alloc_device(c, 0, 0).ctx("device 0 with its fd open")?;
    ensure!(d0 != d1, "same device handle");
    // Closing the fd refuses the next device, not the existing one.
    drop(g0);
    want_rm(
        ctl.alloc_device(c, 0, 0),
        NV_ERR_INSUFFICIENT_PERMISSIONS,
        "device 0 after closing its fd",
    )?;
    ctl.alloc_subdevice(c, d0, 0, 0)
        .ctx("subdevice of the old device")?;
    // RM's answer where it has no GPU at that instance (the real
    // driver's, measured with none): NV_ERR_INVALID_CLASS at 535,
    // NV_ERR_INVALID_STATE from 550.
    let absent = if claimed_release().starts_with("535.") {
        NV_ERR_INVALID_CLASS
    } else {
        NV_ERR_INVALID_STATE
    };
    want_rm(
        ctl.alloc_device(c, 0, 2),
        absent,
        "device of a GPU that does not exist",
    )?;
    drop(g1);
    Ok(())
}

pub(super) fn embedded_fds_must_be_the_drivers() -> Outcome {
    fresh()?;
    let s = session(0)?;
    let sys = s
        .ctl
        .alloc_sysmem(s.client, s.device, 0, 4096)
        .ctx("sysmem")?;
    let null = Node::open("/dev/null").ctx("open /dev/null")?;
    for (fd, what) in [(null.fd(), "/dev/null"), (-1, "-1"), (987, "an unused fd")] {
        let st = map_raw(&s, sys.handle, 4096, fd)?;
        ensure!(
            st == NV_ERR_INVALID_ARGUMENT,
            "MAP_MEMORY naming {what}: {}",
            abi::NvStatus(st)
        );
        let mut p = abi::RegisterFd { ctl_fd: fd };
        let g = Gpu::open_index(0).ctx("gpu")?;
        want_os(
            g.ioctl_with(Escape::RegisterFd.nr(), &mut p),
            libc::EINVAL,
            &format!("REGISTER_FD naming {what}"),
        )?;
        // ALLOC_OS_EVENT's `fd` is a key RM never looks up
        // (`os_events_by_client_and_number`), so it refuses none of these.
    }
    // The real file still works afterwards.
    let m = s
        .ctl
        .map_memory(s.ctl.path(), s.client, s.device, sys.handle, 0, 4096, 0)
        .ctx("map after refusals")?;
    ensure!(m.read_u32(0) == Some(0), "fresh sysmem not zeroed");
    Ok(())
}

pub(super) fn bad_pointers() -> Outcome {
    fresh()?;
    let s = session(0)?;
    let fd = s.ctl.fd();
    // Top-level argument pointers: EFAULT.
    for (nr, size) in [
        (Escape::RmAlloc.nr(), 48),
        (Escape::RmAlloc.nr(), 32),
        (Escape::RmControl.nr(), 32),
        (Escape::RmFree.nr(), 16),
        (Escape::CheckVersionStr.nr(), 72),
        (Escape::CardInfo.nr(), 144),
        (Escape::IoctlXferCmd.nr(), 16),
    ] {
        for bad in [0usize, 0x10, usize::MAX - 4095] {
            let r = raw_ioctl(fd, request(nr, size), bad);
            ensure!(
                r == Err(libc::EFAULT),
                "nr {nr:#x} size {size} arg {bad:#x}: {r:?}, want EFAULT"
            );
        }
    }
    // An XFER whose inner pointer is bad: EFAULT as well.
    let mut x = nvclient::xfer_header(&nvclient::ioctl::Xfer {
        cmd: u32::from(Escape::CardInfo.nr()),
        size: 2 * abi::CardInfo::SIZE as u32,
        ptr: 0x10,
    });
    let r = raw_ioctl(
        fd,
        request(Escape::IoctlXferCmd.nr(), 16),
        x.as_mut_ptr() as usize,
    );
    ensure!(
        r == Err(libc::EFAULT),
        "XFER with a bad inner pointer: {r:?}"
    );
    // Nested pointers: an RM status, not a crash.
    for ptr in [0x10u64, 0xffff_8000_0000_0000] {
        let a = abi::Nvos64 {
            h_root: s.client,
            h_object_parent: s.device,
            h_class: class::NV01_MEMORY_LOCAL_USER,
            p_alloc_parms: ptr,
            params_size: abi::MemoryAllocationParams::SIZE as u32,
            ..Default::default()
        };
        let mut b = a.to_bytes();
        s.ctl
            .ioctl(Escape::RmAlloc.nr(), &mut b)
            .ctx("RM_ALLOC with bad params")?;
        // `os_memcpy_from_user` fails: NV_ERR_INVALID_ADDRESS
        // (`os-interface.c:522-529` at 595.45.04).
        let st = abi::Nvos64::decode(&b).status;
        ensure!(
            st == NV_ERR_INVALID_ADDRESS,
            "alloc params at {ptr:#x}: {}",
            abi::NvStatus(st)
        );
        let c = abi::Nvos54 {
            h_client: s.client,
            h_object: s.sub,
            cmd: ctrl::NV2080_CTRL_CMD_FB_GET_INFO_V2,
            params: ptr,
            params_size: abi::FbGetInfoV2Params::SIZE as u32,
            ..Default::default()
        };
        let mut b = c.to_bytes();
        s.ctl
            .ioctl(Escape::RmControl.nr(), &mut b)
            .ctx("RM_CONTROL with bad params")?;
        // The same copy for controls (`control.c:261`, `param_copy.c:115`).
        let st = abi::Nvos54::decode(&b).status;
        ensure!(
            st == NV_ERR_INVALID_ADDRESS,
            "control params at {ptr:#x}: {}",
            abi::NvStatus(st)
        );
        // V1 FB info: the list pointer inside the params is bad.
        let mut v1 = abi::FbGetInfoV1Params {
            list_size: 2,
            list_ptr: ptr,
        };
        want_rm(
            s.ctl
                .control_with(s.client, s.sub, ctrl::NV2080_CTRL_CMD_FB_GET_INFO, &mut v1),
            NV_ERR_INVALID_ARGUMENT,
            "FB_GET_INFO V1 with a bad list",
        )?;
    }
    // A NULL pointer is refused before any copy: for a class whose params
    // are required (`param_copy.c:314-315`) and for a control with a size
    // (`control.c:448-456`), NV_ERR_INVALID_ARGUMENT.
    let a = abi::Nvos64 {
        h_root: s.client,
        h_object_parent: s.device,
        h_class: class::NV01_MEMORY_LOCAL_USER,
        p_alloc_parms: 0,
        params_size: abi::MemoryAllocationParams::SIZE as u32,
        ..Default::default()
    };
    let mut b = a.to_bytes();
    s.ctl
        .ioctl(Escape::RmAlloc.nr(), &mut b)
        .ctx("RM_ALLOC with NULL params")?;
    let st = abi::Nvos64::decode(&b).status;
    ensure!(
        st == NV_ERR_INVALID_ARGUMENT,
        "VRAM alloc with NULL params: {}",
        abi::NvStatus(st)
    );
    want_rm(
        s.ctl.control(
            s.client,
            s.sub,
            ctrl::NV2080_CTRL_CMD_FB_GET_INFO_V2,
            &mut [],
        ),
        NV_ERR_INVALID_ARGUMENT,
        "FB_GET_INFO_V2 with no params",
    )?;
    // Nothing was charged, and the driver still serves.
    ensure!(s.heap_free()? == HEAP[0], "bad allocs charged VRAM");
    s.vram(MIB).ctx("alloc after bad pointers")?;
    Ok(())
}

/// RM copies a class's own params whatever `paramsSize` says
/// (`resource_desc.c:181-214`, `param_copy.c:297-320` at 595.45.04): a
/// short or long size allocates the same and writes the whole struct back;
/// optional params may be NULL (a device then is device 0).
pub(super) fn alloc_params_are_the_classs_size() -> Outcome {
    fresh()?;
    let s = session(0)?;
    let f0 = s.heap_free()?;
    let mut buf = vec![0u8; 4096];
    let mut charged = 0;
    for psize in [0u32, 8, 4096] {
        let mp = nvclient::vram_params(s.client, MIB + 1).to_bytes();
        buf[..mp.len()].copy_from_slice(&mp);
        let a = abi::Nvos64 {
            h_root: s.client,
            h_object_parent: s.device,
            h_class: class::NV01_MEMORY_LOCAL_USER,
            p_alloc_parms: buf.as_mut_ptr() as u64,
            params_size: psize,
            ..Default::default()
        };
        let mut b = a.to_bytes();
        s.ctl.ioctl(Escape::RmAlloc.nr(), &mut b).ctx("RM_ALLOC")?;
        let st = abi::Nvos64::decode(&b).status;
        ensure!(st == NV_OK, "paramsSize {psize}: {}", abi::NvStatus(st));
        let back = abi::MemoryAllocationParams::decode(&buf[..abi::MemoryAllocationParams::SIZE]);
        let want = MIB + (64 << 10);
        ensure!(
            back.size == want,
            "paramsSize {psize}: size back {}",
            back.size
        );
        charged += want;
        ensure!(
            s.heap_free()? == f0 - charged,
            "paramsSize {psize}: heap charged {}",
            f0 - s.heap_free()?
        );
    }
    // NULL optional params: the defaults (device 0); a GPU node is open.
    let c = s.ctl.alloc_root_client().ctx("client")?;
    let a = abi::Nvos64 {
        h_root: c,
        h_object_parent: c,
        h_class: class::NV01_DEVICE_0,
        ..Default::default()
    };
    let mut b = a.to_bytes();
    s.ctl
        .ioctl(Escape::RmAlloc.nr(), &mut b)
        .ctx("device with NULL params")?;
    let a = abi::Nvos64::decode(&b);
    ensure!(
        a.status == NV_OK,
        "device with NULL params: {}",
        abi::NvStatus(a.status)
    );
    let sub = s
        .ctl
        .alloc_subdevice(c, a.h_object_new, 0, 0)
        .ctx("subdevice of it")?;
    let v = s
        .ctl
        .fb_get_info_v2(c, sub, &[fb_info::HEAP_SIZE])
        .ctx("FB info")?;
    ensure!(
        v.first().map(|e| u64::from(e.data) << 10) == Some(HEAP[0]),
        "the NULL-params device is not GPU 0: {v:?}"
    );
    Ok(())
}

/// SYS_PARAMS is an input the driver keeps once (`nv.c:2702-2725` at
/// 595.45.04): the same value again is fine, another is `EBUSY`, nothing is
/// written back, and only the ctl node takes it.
pub(super) fn sys_params_set_once() -> Outcome {
    fresh()?;
    let ctl = Ctl::open_default().ctx("open ctl")?;
    let block = |v: u64| v.to_ne_bytes();
    let mut p = block(0);
    ctl.ioctl(Escape::SysParams.nr(), &mut p)
        .ctx("SYS_PARAMS 0")?;
    ensure!(p == block(0), "SYS_PARAMS wrote {p:?}");
    // 0 leaves it unset: the first real value is still taken.
    let mut p = block(128 << 20);
    ctl.ioctl(Escape::SysParams.nr(), &mut p)
        .ctx("SYS_PARAMS 128 MiB")?;
    ensure!(p == block(128 << 20), "SYS_PARAMS changed its input");
    let other = Ctl::open_default().ctx("open ctl 2")?;
    let mut p = block(128 << 20);
    other
        .ioctl(Escape::SysParams.nr(), &mut p)
        .ctx("SYS_PARAMS same value, other file")?;
    let mut p = block(2 << 30);
    want_os(
        other.ioctl(Escape::SysParams.nr(), &mut p),
        libc::EBUSY,
        "SYS_PARAMS with another value",
    )?;
    let gpu = Gpu::open_index(0).ctx("open GPU")?;
    let mut p = block(128 << 20);
    want_os(
        gpu.ioctl(Escape::SysParams.nr(), &mut p),
        libc::EINVAL,
        "SYS_PARAMS on a GPU node",
    )?;
    Ok(())
}

pub(super) fn wrong_sizes_and_unknown_escapes() -> Outcome {
    fresh()?;
    let s = session(0)?;
    let mut buf = vec![0u8; 4096];
    let fd = s.ctl.fd();
    for (nr, size, what) in [
        (0x01u8, 8usize, "unknown nr 0x01"),
        (0xff, 16, "unknown nr 0xff"),
        (Escape::RmAlloc.nr(), 40, "RM_ALLOC 40 (the pre-535 NVOS64)"),
        (Escape::RmAlloc.nr(), 36, "RM_ALLOC 36"),
        (Escape::RmControl.nr(), 36, "RM_CONTROL 36"),
        (Escape::RmFree.nr(), 12, "RM_FREE 12"),
        (Escape::CheckVersionStr.nr(), 68, "CHECK_VERSION_STR 68"),
        (Escape::CardInfo.nr(), 71, "CARD_INFO 71"),
        (Escape::CardInfo.nr(), 0, "CARD_INFO 0"),
        (Escape::RmMapMemory.nr(), 48, "MAP_MEMORY without the fd"),
        (Escape::IoctlXferCmd.nr(), 24, "XFER 24"),
    ] {
        let r = raw_ioctl(fd, request(nr, size), buf.as_mut_ptr() as usize);
        ensure!(r == Err(libc::EINVAL), "{what}: {r:?}, want EINVAL");
    }
    // Through XFER: unknown inner escape, wrong inner size, too large.
    let mut inner = vec![0u8; 20000];
    for (cmd, size, what) in [
        (0x01u32, 8u32, "XFER of nr 0x01"),
        (u32::from(Escape::RmAlloc.nr()), 40, "XFER of RM_ALLOC 40"),
        (u32::from(Escape::CardInfo.nr()), 16416, "XFER over 16384"),
        (0x1_002b, 48, "XFER cmd with high bits"),
    ] {
        let mut x = nvclient::xfer_header(&nvclient::ioctl::Xfer {
            cmd,
            size,
            ptr: inner.as_mut_ptr() as u64,
        });
        let r = raw_ioctl(
            fd,
            request(Escape::IoctlXferCmd.nr(), 16),
            x.as_mut_ptr() as usize,
        );
        ensure!(r == Err(libc::EINVAL), "{what}: {r:?}, want EINVAL");
    }
    // A control's params of the wrong size are an RM error.
    let mut short = vec![0u8; abi::FbGetInfoV2Params::SIZE - 4];
    want_rm(
        s.ctl.control(
            s.client,
            s.sub,
            ctrl::NV2080_CTRL_CMD_FB_GET_INFO_V2,
            &mut short,
        ),
        NV_ERR_INVALID_ARGUMENT,
        "FB_GET_INFO_V2 params 1024 bytes",
    )?;
    // A control the double does not know.
    want_rm(
        s.ctl.control(s.client, s.sub, 0x2080_dead, &mut [0u8; 8]),
        NV_ERR_NOT_SUPPORTED,
        "unknown control",
    )?;
    Ok(())
}

pub(super) fn other_clients_handles_refused() -> Outcome {
    fresh()?;
    let a = session(0)?;
    // B lives on the same ctl file, so only handle ownership refuses it.
    let b = a.ctl.alloc_root_client().ctx("client B")?;
    // Handles are per client: give B's device a handle A does not use, so
    // A's handles name nothing in B.
    let bd = a.ctl.alloc_device(b, 0xb0b0_0001, 0).ctx("B device")?;
    ensure!(bd == 0xb0b0_0001, "B device handle {bd:#x}");
    let m = a.vram(MIB).ctx("A vram")?;
    want_rm(
        a.ctl.alloc_vram(b, a.device, 0, MIB),
        NV_ERR_INVALID_OBJECT_PARENT,
        "B allocating under A's device",
    )?;
    // Under B's client, A's handle names nothing: RM's free succeeds and
    // frees nothing (RS_COMPATABILITY_MODE), and A's memory lives on.
    a.ctl.free(b, b, m.handle).ctx("B freeing A's memory")?;
    a.ctl
        .surface_phys_size(a.client, m.handle)
        .ctx("A's memory after B's free")?;
    want_rm(
        a.ctl.surface_phys_size(b, m.handle),
        NV_ERR_INVALID_OBJECT_HANDLE,
        "B's control on A's memory",
    )?;
    want_rm(
        a.ctl.fb_get_info_v2(b, a.sub, &[fb_info::HEAP_FREE]),
        NV_ERR_INVALID_OBJECT_HANDLE,
        "B's control on A's subdevice",
    )?;
    want_rm(
        a.ctl.map_memory(a.gpu_path(), b, bd, m.handle, 0, 4096, 0),
        NV_ERR_OBJECT_NOT_FOUND,
        "B mapping A's memory",
    )?;
    // RM's free, under B's client: NV_OK, nothing freed.
    a.ctl
        .vid_heap_free(b, bd, m.handle)
        .ctx("B's VID_HEAP FREE of A's memory")?;
    a.ctl
        .surface_phys_size(a.client, m.handle)
        .ctx("A's memory after B's VID_HEAP FREE")?;
    want_rm(
        a.ctl.free(0xc1d0_0fff, 0xc1d0_0fff, 0xc1d0_0fff),
        NV_ERR_INVALID_OBJECT_HANDLE,
        "a client that does not exist",
    )?;
    ensure!(
        a.ctl
            .surface_phys_size(a.client, m.handle)
            .ctx("A's memory")?
            == MIB,
        "A's memory changed"
    );
    Ok(())
}

pub(super) fn close_in_any_order() -> Outcome {
    fresh()?;
    // (a) ctl before the GPU fd, with memory and a mapping alive.
    {
        let s = session(0)?;
        let sys = s
            .ctl
            .alloc_sysmem(s.client, s.device, 0, 8192)
            .ctx("sysmem")?;
        s.vram(16 * MIB).ctx("vram")?;
        let map = s
            .ctl
            .map_memory(s.ctl.path(), s.client, s.device, sys.handle, 0, 8192, 0)
            .ctx("map")?;
        map.write_u64(8, 0x1122_3344);
        let S { ctl, gpu, .. } = s;
        drop(ctl);
        // The client is gone, but the pages stay mapped until munmap.
        ensure!(
            map.read_u64(8) == Some(0x1122_3344),
            "mapping lost its data"
        );
        map.write_u64(16, 7);
        drop(gpu);
        drop(map);
    }
    // (b) the GPU fd before ctl.
    {
        let s = session(0)?;
        s.vram(16 * MIB).ctx("vram")?;
        let S { ctl, gpu, .. } = s;
        drop(gpu);
        drop(ctl);
    }
    // (c) the fresh mapping fd closed after munmap, and closed before it
    // (nvclient's map_memory closes it right after mmap).
    {
        let s = session(0)?;
        let sys = s
            .ctl
            .alloc_sysmem(s.client, s.device, 0, 8192)
            .ctx("sysmem")?;
        let f = Node::open(s.ctl.path()).ctx("fresh")?;
        let st = map_raw(&s, sys.handle, 8192, f.fd())?;
        ensure!(st == NV_OK, "MAP_MEMORY {}", abi::NvStatus(st));
        let p = mmap_fd(f.fd(), 8192).map_err(|e| format!("mmap errno {e}"))?;
        munmap(p, 8192);
        drop(f);
        // Mapped but never mmapped: the context is dropped with the file.
        let g = Node::open(s.gpu_path()).ctx("fresh gpu")?;
        let v = s.vram(MIB).ctx("vram")?;
        let st = map_raw(&s, v.handle, 4096, g.fd())?;
        ensure!(st == NV_OK, "MAP_MEMORY vram {}", abi::NvStatus(st));
        drop(g);
        let m = s
            .ctl
            .map_memory(s.ctl.path(), s.client, s.device, sys.handle, 0, 8192, 0)
            .ctx("map")?;
        // Free the memory while it is mapped: the mapping stays valid.
        s.free(sys.handle).ctx("free mapped memory")?;
        m.write_u32(0, 1);
        ensure!(m.read_u32(0) == Some(1), "mapping of freed memory");
        drop(s);
        drop(m);
    }
    let s = session(0)?;
    ensure!(s.heap_free()? == HEAP[0], "VRAM left over after closes");
    drop(s);
    // No file holds the module.
    sh("rmmod nvidia")?;
    Ok(())
}

pub(super) fn client_freed_when_ctl_closes() -> Outcome {
    fresh()?;
    let obs = session(0)?;
    let s = session(0)?;
    let t = s
        .ctl
        .alloc_tsg(s.client, s.device, 0, nvclient::tsg_params(0))
        .ctx("tsg")?;
    let _ch = s
        .ctl
        .alloc_work_channel(s.client, s.device, t, class::AMPERE_CHANNEL_GPFIFO_A, 16)
        .ctx("channel")?;
    s.vram(100 * MIB).ctx("vram")?;
    let c2 = s.ctl.alloc_root_client().ctx("second client on the file")?;
    s.ctl.alloc_device(c2, 0, 0).ctx("its device")?;
    // The memory, and the channel's instance block.
    ensure!(
        obs.heap_free()? == HEAP[0] - 100 * MIB - INSTANCE_BLOCK,
        "observer sees {}",
        obs.heap_free()?
    );
    let S {
        ctl, gpu, client, ..
    } = s;
    drop(ctl);
    ensure!(
        obs.heap_free()? == HEAP[0],
        "HEAP_FREE {} after the ctl file closed",
        obs.heap_free()?
    );
    // The client is gone, not just unreachable from the closed file.
    // (A free under a client that does not exist: RM's client lookup
    // fails, NV_ERR_INVALID_OBJECT_HANDLE; another file's would be
    // NV_ERR_INVALID_CLIENT.)
    want_rm(
        obs.ctl.free(client, client, client),
        NV_ERR_INVALID_OBJECT_HANDLE,
        "the closed file's client",
    )?;
    drop(gpu);
    Ok(())
}
