// SPDX-License-Identifier: GPL-2.0

//! Mappings, dup and events.

use super::*;

// 7. Mappings, dup, events.

pub(super) fn mappings_share_data() -> Outcome {
    fresh()?;
    let s = session(0)?;
    let sys = s
        .ctl
        .alloc_sysmem(s.client, s.device, 0, 64 << 10)
        .ctx("sysmem")?;
    let vram = s.vram(MIB).ctx("vram")?;
    let ctl_path = s.ctl.path().to_path_buf();
    for (h, node, len, what) in [
        (sys.handle, ctl_path.clone(), 64 << 10, "sysmem"),
        (vram.handle, s.gpu_path().into(), MIB, "vram"),
    ] {
        let a = s
            .ctl
            .map_memory(&node, s.client, s.device, h, 0, len, 0)
            .ctx(&format!("{what}: map a"))?;
        let b = s
            .ctl
            .map_memory(&node, s.client, s.device, h, 0, len, 0)
            .ctx(&format!("{what}: map b"))?;
        ensure!(a.as_ptr() != b.as_ptr(), "{what}: same address twice");
        for (i, off) in [0usize, 0x1238, len as usize - 8].into_iter().enumerate() {
            let v = 0x5151_0000_0000_0000 | (i as u64) << 8 | h as u64;
            ensure!(a.write_u64(off, v), "{what}: write at {off:#x}");
            ensure!(
                b.read_u64(off) == Some(v),
                "{what}: b reads {:?} at {off:#x}, a wrote {v:#x}",
                b.read_u64(off)
            );
        }
        // A partial mapping at an offset sees the same bytes.
        let c = s
            .ctl
            .map_memory(&node, s.client, s.device, h, 0x1000, 0x1000, 0)
            .ctx(&format!("{what}: map c"))?;
        ensure!(
            c.read_u64(0x238) == a.read_u64(0x1238),
            "{what}: offset mapping differs"
        );
        s.ctl
            .unmap_memory(s.client, s.device, h, a.linear_address(), 0)
            .ctx("UNMAP_MEMORY")?;
    }
    // Node rules: sysmem through ctl, VRAM through the GPU's node.
    want_rm(
        s.ctl
            .map_memory(s.gpu_path(), s.client, s.device, sys.handle, 0, 4096, 0),
        NV_ERR_INVALID_ARGUMENT,
        "sysmem through a GPU node",
    )?;
    want_rm(
        s.ctl
            .map_memory(&ctl_path, s.client, s.device, vram.handle, 0, 4096, 0),
        NV_ERR_INVALID_ARGUMENT,
        "VRAM through the ctl node",
    )?;
    want_rm(
        s.ctl
            .map_memory(&ctl_path, s.client, s.device, sys.handle, 0, 128 << 10, 0),
        NV_ERR_INVALID_LIMIT,
        "mapping past the end",
    )?;
    Ok(())
}

/// RM_MAP_MEMORY naming `fd`; returns the status.
pub(super) fn map_raw(s: &S, h_memory: Handle, len: u64, fd: i32) -> Result<u32, String> {
    let mut p = abi::Nvos33WithFd {
        params: abi::Nvos33 {
            h_client: s.client,
            h_device: s.device,
            h_memory,
            length: len,
            ..Default::default()
        },
        fd,
    };
    s.ctl
        .ioctl_with(Escape::RmMapMemory.nr(), &mut p)
        .ctx("RM_MAP_MEMORY ioctl")?;
    Ok(p.params.status)
}

/// mmaps `len` bytes of `fd` at offset 0, shared read-write.
pub(super) fn mmap_fd(fd: i32, len: usize) -> Result<*mut u8, i32> {
    // SAFETY: a null hint lets the kernel pick the address; nothing in this
    // process is replaced.
    let p = unsafe {
        libc::mmap(
            core::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        Err(crate::sys::errno())
    } else {
        Ok(p.cast())
    }
}

pub(super) fn munmap(p: *mut u8, len: usize) {
    // SAFETY: `p`/`len` come from a successful `mmap_fd`, unmapped once, and
    // no reference into the mapping survives.
    unsafe { libc::munmap(p.cast(), len) };
}

pub(super) fn map_context_once_per_file() -> Outcome {
    fresh()?;
    let s = session(0)?;
    let sys = s
        .ctl
        .alloc_sysmem(s.client, s.device, 0, 8192)
        .ctx("sysmem")?;
    let fresh_fd = Node::open(s.ctl.path()).ctx("fresh fd")?;
    // No context yet: mmap is refused with EINVAL and the file can get one
    // (`nv-mmap.c:561-566` at 595.45.04).
    ensure!(
        mmap_fd(fresh_fd.fd(), 8192) == Err(libc::EINVAL),
        "mmap without a mapping context"
    );
    let st = map_raw(&s, sys.handle, 8192, fresh_fd.fd())?;
    ensure!(st == NV_OK, "first MAP_MEMORY: {}", abi::NvStatus(st));
    let st = map_raw(&s, sys.handle, 8192, fresh_fd.fd())?;
    ensure!(
        st == NV_ERR_STATE_IN_USE,
        "second MAP_MEMORY naming the same fd: {}",
        abi::NvStatus(st)
    );
    // The ctl node maps system memory up to the allocation's end
    // (`nv-mmap.c:697-702`): less is fine, more is ERANGE.
    ensure!(
        mmap_fd(fresh_fd.fd(), 3 * 4096) == Err(libc::ERANGE),
        "mmap past the allocation"
    );
    let half = mmap_fd(fresh_fd.fd(), 4096).map_err(|e| format!("mmap 4 KiB: errno {e}"))?;
    let p = mmap_fd(fresh_fd.fd(), 8192).map_err(|e| format!("mmap: errno {e}"))?;
    // The context stays on the file until it is closed
    // (`nv-usermap.c:102-116`): another mmap maps the same memory again,
    // and the file still cannot take a second context.
    let q = mmap_fd(fresh_fd.fd(), 8192).map_err(|e| format!("second mmap: errno {e}"))?;
    // SAFETY: `p`, `q` and `half` are live shared mappings of at least 4 KiB;
    // volatile accesses to plain memory.
    let seen = unsafe {
        core::ptr::write_volatile(p.cast::<u32>(), 0x5eed_cafe);
        (
            core::ptr::read_volatile(q.cast::<u32>()),
            core::ptr::read_volatile(half.cast::<u32>()),
        )
    };
    ensure!(
        seen == (0x5eed_cafe, 0x5eed_cafe),
        "mappings of one context see different memory: {seen:x?}"
    );
    munmap(q, 8192);
    munmap(p, 8192);
    munmap(half, 4096);
    let st = map_raw(&s, sys.handle, 8192, fresh_fd.fd())?;
    ensure!(
        st == NV_ERR_STATE_IN_USE,
        "MAP_MEMORY on a mapped file: {}",
        abi::NvStatus(st)
    );
    // A GPU node maps exactly the context's range, else ENXIO
    // (`nv-mmap.c:600-603`).
    let vram = s.vram(MIB).ctx("vram")?;
    let gpu_fd = Node::open(s.gpu_path()).ctx("fresh GPU fd")?;
    let st = map_raw(&s, vram.handle, 8192, gpu_fd.fd())?;
    ensure!(st == NV_OK, "VRAM MAP_MEMORY: {}", abi::NvStatus(st));
    ensure!(
        mmap_fd(gpu_fd.fd(), 4096) == Err(libc::ENXIO),
        "GPU-node mmap shorter than its context"
    );
    let g = mmap_fd(gpu_fd.fd(), 8192).map_err(|e| format!("GPU mmap: errno {e}"))?;
    munmap(g, 8192);
    let g = mmap_fd(gpu_fd.fd(), 8192).map_err(|e| format!("GPU mmap again: errno {e}"))?;
    munmap(g, 8192);
    Ok(())
}

pub(super) fn dup_is_not_double_charged() -> Outcome {
    fresh()?;
    let s = session(0)?;
    let obs = session(0)?;
    let f0 = obs.heap_free()?;
    let m = s.vram(4 * MIB).ctx("vram")?;
    let f1 = obs.heap_free()?;
    ensure!(f1 == f0 - 4 * MIB, "charge {}", f0 - f1);
    let d = s
        .ctl
        .dup_object(s.client, s.device, 0, s.client, m.handle, 0)
        .ctx("DUP")?;
    ensure!(obs.heap_free()? == f1, "dup charged VRAM again");
    let phys = s.ctl.surface_phys_size(s.client, d).ctx("dup PHYS_SIZE")?;
    ensure!(phys == 4 * MIB, "dup PHYS_SIZE {phys}");
    // A dup into another client (same process) shares the same memory.
    let d2 = obs
        .ctl
        .dup_object(obs.client, obs.device, 0, s.client, m.handle, 0)
        .ctx("DUP into another client")?;
    ensure!(obs.heap_free()? == f1, "cross-client dup charged VRAM");
    // A client of another process may not: RM's default share policy
    // grants DUP only within the process that created the source client
    // (`rs_client.c:535-547`, `sharing.c:347-353` at 595.45.04).
    let (sc, sm) = (s.client, m.handle);
    let code = crate::sys::in_child(move || {
        let Ok(c) = session(0) else { return 2 };
        let r = c.ctl.dup_object(c.client, c.device, 0, sc, sm, 0);
        i32::from(r != Err(Error::Rm(NV_ERR_INSUFFICIENT_PERMISSIONS)))
    })?;
    ensure!(code == 0, "DUP from another process's client ({code})");
    ensure!(obs.heap_free()? == f1, "refused dup changed the heap");
    // Data written through the original is seen through the dup.
    let a = s
        .ctl
        .map_memory(s.gpu_path(), s.client, s.device, m.handle, 0, 4096, 0)
        .ctx("map original")?;
    let b = obs
        .ctl
        .map_memory(obs.gpu_path(), obs.client, obs.device, d2, 0, 4096, 0)
        .ctx("map dup")?;
    a.write_u32(0x10, 0xd0d0_cafe);
    ensure!(
        b.read_u32(0x10) == Some(0xd0d0_cafe),
        "dup sees other memory"
    );
    drop((a, b));
    s.free(m.handle).ctx("free original")?;
    ensure!(
        obs.heap_free()? == f1,
        "freeing the original released memory its dups hold"
    );
    s.free(d).ctx("free dup")?;
    ensure!(
        obs.heap_free()? == f1,
        "released while the second dup holds it"
    );
    obs.free(d2).ctx("free second dup")?;
    ensure!(obs.heap_free()? == f0, "not released after the last dup");
    want_rm(
        s.ctl
            .dup_object(s.client, s.device, 0, s.client, m.handle, 0),
        NV_ERR_OBJECT_NOT_FOUND,
        "dup of a freed object",
    )?;
    Ok(())
}

pub(super) fn os_event_by_poll() -> Outcome {
    fresh()?;
    let w = work(0, 1, 16)?;
    let ctl = &w.s.ctl;
    ctl.alloc_os_event(w.s.client, w.s.device)
        .ctx("ALLOC_OS_EVENT")?;
    let r = ctl.poll(POLL_EVENT, 0).ctx("poll")?;
    ensure!(r == 0, "event pending before any work: {r:#x}");
    w.schedule(0, true)?;
    for round in 1..=2u64 {
        w.submit(0, &[MS])?;
        let r = ctl.poll(POLL_EVENT, 10_000).ctx("poll")?;
        ensure!(
            r == POLL_EVENT,
            "round {round}: poll revents {r:#x}, want POLLIN|POLLPRI"
        );
        ensure!(
            w.chans[0].ring.completed() == round,
            "round {round}: event before the work completed"
        );
        let r = ctl.poll(POLL_EVENT, 200).ctx("poll again")?;
        ensure!(
            r == 0,
            "round {round}: second event {r:#x} without new work"
        );
    }
    // Events go to the file the event names: another ctl file sees none.
    ctl.free_os_event(w.s.client, w.s.device)
        .ctx("FREE_OS_EVENT")?;
    w.submit(0, &[MS])?;
    w.wait_completed(0, 3, Duration::from_secs(10))?;
    let r = ctl.poll(POLL_EVENT, 200).ctx("poll after free")?;
    ensure!(r == 0, "event after FREE_OS_EVENT: {r:#x}");
    Ok(())
}

/// OS events as RM keeps them (`osapi.c:468-582`, `os.c:1440-1466`,
/// `escape.c:386-410` at 550.163.01): keyed by client and a number RM
/// never looks up as an fd, one per pair; NV01_EVENT_OS_EVENT names the
/// pair in `data`; a GPU node registered to the ctl file makes the event
/// classes and nothing else.
pub(super) fn os_events_by_client_and_number() -> Outcome {
    fresh()?;
    let s = session(0)?;
    let ev = |e: Escape, fd: u32| -> Result<u32, String> {
        let mut p = abi::OsEvent {
            h_client: s.client,
            h_device: s.device,
            fd,
            status: 0,
        };
        s.ctl.ioctl_with(e.nr(), &mut p).ctx("OS event escape")?;
        Ok(p.status)
    };
    let want = |got: u32, want: u32, what: &str| -> Outcome {
        ensure!(
            got == want,
            "{what}: {}, want {}",
            abi::NvStatus(got),
            abi::NvStatus(want)
        );
        Ok(())
    };
    // 987 is no fd of this process.
    want(ev(Escape::AllocOsEvent, 987)?, NV_OK, "ALLOC_OS_EVENT 987")?;
    want(
        ev(Escape::AllocOsEvent, 987)?,
        NV_ERR_INSUFFICIENT_RESOURCES,
        "the same pair again",
    )?;
    let params = |data: u32| -> Vec<u8> {
        [0, s.sub, class::NV01_EVENT_OS_EVENT, 0, data, 0]
            .iter()
            .flat_map(|w| w.to_ne_bytes())
            .collect()
    };
    s.ctl
        .alloc(
            s.client,
            s.sub,
            0,
            class::NV01_EVENT_OS_EVENT,
            &mut params(987),
        )
        .ctx("NV01_EVENT_OS_EVENT on the pair")?;
    want_rm(
        s.ctl.alloc(
            s.client,
            s.sub,
            0,
            class::NV01_EVENT_OS_EVENT,
            &mut params(988),
        ),
        NV_ERR_OBJECT_NOT_FOUND,
        "NV01_EVENT_OS_EVENT on no pair",
    )?;
    // On a GPU node registered to the ctl file, as libcuda makes them.
    let g = Gpu::open_index(0).ctx("gpu")?;
    g.register_fd(&s.ctl).ctx("REGISTER_FD")?;
    g.alloc(
        s.client,
        s.sub,
        0,
        class::NV01_EVENT_OS_EVENT,
        &mut params(987),
    )
    .ctx("NV01_EVENT_OS_EVENT on the GPU node")?;
    let mut sub = [0u8; 4];
    want_os(
        g.alloc(s.client, s.device, 0, class::NV20_SUBDEVICE_0, &mut sub),
        libc::EINVAL,
        "a subdevice on the GPU node",
    )?;
    want(ev(Escape::FreeOsEvent, 987)?, NV_OK, "FREE_OS_EVENT 987")?;
    want(
        ev(Escape::FreeOsEvent, 987)?,
        NV_ERR_INVALID_EVENT,
        "FREE_OS_EVENT of a freed pair",
    )?;
    Ok(())
}

/// An NVOS46 of the claimed release's size (56 bytes before 580, 64 from:
/// `flags2` and `kindOverride` before `dmaOffset`), its `dmaOffset` at
/// `dma_at`, `status` 8 bytes after.
pub(super) fn nvos46(
    h: [Handle; 4],
    offset: u64,
    length: u64,
    dma: u64,
) -> Result<(Vec<u8>, usize), String> {
    let n = match nvclient::speaks().escape_rule(Escape::RmMapMemoryDma) {
        Some(nvclient::ioctl::SizeRule::Exact(n)) => n,
        r => return Err(format!("RM_MAP_MEMORY_DMA's size rule: {r:?}")),
    };
    let dma_at = if n == 64 { 48 } else { 40 };
    let mut b = vec![0u8; n];
    for (i, w) in h.iter().enumerate() {
        b[4 * i..4 * i + 4].copy_from_slice(&w.to_ne_bytes());
    }
    b[16..24].copy_from_slice(&offset.to_ne_bytes());
    b[24..32].copy_from_slice(&length.to_ne_bytes());
    // NVOS46_FLAGS_DMA_OFFSET_FIXED_TRUE, as libcuda sends it.
    b[32..36].copy_from_slice(&0x8000u32.to_ne_bytes());
    b[dma_at..dma_at + 8].copy_from_slice(&dma.to_ne_bytes());
    Ok((b, dma_at))
}

fn word(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// RM_MAP_MEMORY_DMA and RM_UNMAP_MEMORY_DMA, as libcuda's cuCtxCreate
/// makes them (docs/driver-double.md): 8 KiB of VRAM mapped into an
/// NV50_MEMORY_VIRTUAL range allocated at a fixed address (8 GiB) is
/// NV_OK; the mapping's end past the range or `offset + length` past the
/// memory NV_ERR_INVALID_LIMIT; a range the double did not place (no fixed
/// address) NV_ERR_NOT_SUPPORTED; the device handle naming memory
/// NV_ERR_INVALID_OBJECT; the unmap of the mapping NV_OK, once (then
/// NV_ERR_INVALID_OBJECT_HANDLE); a mapping whose memory is freed goes
/// with it (its unmap then NV_ERR_INVALID_OBJECT_HANDLE).
pub(super) fn map_memory_dma_into_fixed_ranges() -> Outcome {
    fresh()?;
    let s = session(0)?;
    let (ctl, c, dev) = (&s.ctl, s.client, s.device);
    const BASE: u64 = 8 * GIB;
    let range = |fixed: bool| -> Result<Handle, String> {
        let mut v = nvclient::vram_params(c, 4 * MIB);
        v.flags |= heap::ALLOC_FLAGS_VIRTUAL;
        if fixed {
            v.flags |= heap::ALLOC_FLAGS_FIXED_ADDRESS_ALLOCATE;
            v.offset = BASE;
        }
        let mut b = v.to_bytes();
        ctl.alloc(c, dev, 0, class::NV50_MEMORY_VIRTUAL, &mut b)
            .ctx("virtual range")
    };
    let va = range(true)?;
    let floating = range(false)?;
    let vram = |size: u64| -> Result<Handle, String> {
        let mut b = nvclient::vram_params(c, size).to_bytes();
        ctl.alloc(c, dev, 0, class::NV01_MEMORY_LOCAL_USER, &mut b)
            .ctx("VRAM")
    };
    let mem = vram(2 * MIB)?;
    let map = |h: [Handle; 4], offset: u64, length: u64, dma: u64| -> Result<u32, String> {
        let (mut b, at) = nvos46(h, offset, length, dma)?;
        ctl.ioctl(Escape::RmMapMemoryDma.nr(), &mut b)
            .ctx("RM_MAP_MEMORY_DMA")?;
        Ok(word(&b, at + 8))
    };
    // NVOS47: 48 bytes, status at 40; before 550 40 bytes without `size`,
    // status at 32.
    let n47 = match nvclient::speaks().escape_rule(Escape::RmUnmapMemoryDma) {
        Some(nvclient::ioctl::SizeRule::Exact(n)) => n,
        r => return Err(format!("RM_UNMAP_MEMORY_DMA's size rule: {r:?}")),
    };
    let unmap = |virt: Handle, memory: Handle, dma: u64| -> Result<u32, String> {
        let mut b = vec![0u8; n47];
        for (i, w) in [c, dev, virt, memory].iter().enumerate() {
            b[4 * i..4 * i + 4].copy_from_slice(&w.to_ne_bytes());
        }
        b[24..32].copy_from_slice(&dma.to_ne_bytes());
        ctl.ioctl(Escape::RmUnmapMemoryDma.nr(), &mut b)
            .ctx("RM_UNMAP_MEMORY_DMA")?;
        Ok(word(&b, n47 - 8))
    };
    let end = BASE + 4 * MIB;
    for (what, got, want) in [
        (
            "8 KiB at the range's start",
            map([c, dev, va, mem], 0, 0x2000, BASE)?,
            NV_OK,
        ),
        (
            "its last 8 KiB",
            map([c, dev, va, mem], 0, 0x2000, end - 0x2000)?,
            NV_OK,
        ),
        (
            "past the range's end",
            map([c, dev, va, mem], 0, 0x2000, end - 0x1000)?,
            NV_ERR_INVALID_LIMIT,
        ),
        (
            "below the range",
            map([c, dev, va, mem], 0, 0x2000, BASE - 0x2000)?,
            NV_ERR_INVALID_LIMIT,
        ),
        (
            "past the memory",
            map([c, dev, va, mem], 2 * MIB - 0x1000, 0x2000, BASE)?,
            NV_ERR_INVALID_LIMIT,
        ),
        (
            "into a range not placed",
            map([c, dev, floating, mem], 0, 0x2000, 0)?,
            NV_ERR_NOT_SUPPORTED,
        ),
        (
            "with memory as the device",
            map([c, mem, va, mem], 0, 0x2000, BASE)?,
            NV_ERR_INVALID_OBJECT,
        ),
        ("unmapped", unmap(va, mem, BASE)?, NV_OK),
        (
            "unmapped again",
            unmap(va, mem, BASE)?,
            NV_ERR_INVALID_OBJECT_HANDLE,
        ),
    ] {
        ensure!(got == want, "{what}: status {got:#x}, want {want:#x}");
    }
    ctl.free(c, dev, mem).ctx("free the memory")?;
    let got = unmap(va, mem, end - 0x2000)?;
    ensure!(
        got == NV_ERR_INVALID_OBJECT_HANDLE,
        "a mapping of freed memory unmapped with {got:#x}: it outlived its memory"
    );
    ctl.free(c, c, c).ctx("free client")?;
    Ok(())
}
