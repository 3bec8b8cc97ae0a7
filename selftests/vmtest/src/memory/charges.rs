// SPDX-License-Identifier: GPL-2.0

//! What is charged: RM's sizes, XFER and heap allocations, dups, limits.

use super::*;

/// RM_ALLOC of VRAM in the NVOS21 layout with params at `ptr` and
/// `paramsSize` `psize`: the status RM (or vgpu) answered.
pub(super) fn vram_nvos21(s: &Session, ptr: u64, psize: u32) -> Result<u32, String> {
    use nvclient::abi::{class, Nvos21};
    let mut blk = Nvos21 {
        h_root: s.client,
        h_object_parent: s.device,
        h_class: class::NV01_MEMORY_LOCAL_USER,
        p_alloc_parms: ptr,
        params_size: psize,
        ..Default::default()
    }
    .to_bytes();
    s.ctl
        .ioctl(nvclient::ioctl::Escape::RmAlloc.nr(), &mut blk)
        .map_err(|e| format!("ioctl: {e:?}"))?;
    Ok(Nvos21::decode(&blk).status)
}

/// vgpu charges the size RM really allocates: RM rounds VRAM to 2 MiB
/// pages from 2 MiB up (`mem_mgr.c:1760-1765` at 595.45.04) and reads the
/// class's own params whatever `paramsSize` says (`resource_desc.c:181-214`),
/// so neither a size just over a page nor a short `paramsSize` makes the
/// charge smaller than the allocation, and a request that fits only before
/// rounding is refused at the ceiling.
pub(super) fn charges_what_rm_allocates() -> Outcome {
    use nvclient::abi::MemoryAllocationParams;
    as_container("/ma", || {
        let s = session(0)?;
        let m = s
            .ctl
            .alloc_vram(s.client, s.device, 0, 3 * MIB + 5)
            .map_err(|e| format!("3 MiB + 5: {e:?}"))?;
        ensure!(m.size == 4 * MIB, "size written back {}", m.size);
        ensure!(used(0)? == 4 * MIB, "charged {} for 3 MiB + 5", used(0)?);
        // `paramsSize` short (8 bytes) or long (4096): RM reads the 128
        // bytes of NV_MEMORY_ALLOCATION_PARAMS either way, and so does vgpu.
        let mut buf = vec![0u8; 4096];
        let mut expect = 4 * MIB;
        for psize in [8u32, 4096] {
            let mp = nvclient::vram_params(s.client, 3 * MIB).to_bytes();
            buf[..mp.len()].copy_from_slice(&mp);
            let st = vram_nvos21(&s, buf.as_mut_ptr() as u64, psize)?;
            ensure!(st == status::NV_OK, "paramsSize {psize}: status {st:#x}");
            let back = MemoryAllocationParams::decode(&buf[..MemoryAllocationParams::SIZE]);
            ensure!(
                back.size == 4 * MIB,
                "paramsSize {psize}: size written back {}",
                back.size
            );
            expect += 4 * MIB;
            ensure!(
                used(0)? == expect,
                "paramsSize {psize}: charged {}, want {expect}",
                used(0)?
            );
        }
        // Params RM cannot read are NV_ERR_INVALID_ADDRESS
        // (`os-interface.c:522-529`), NULL required params
        // NV_ERR_INVALID_ARGUMENT (`param_copy.c:314-315`), as from the
        // driver; neither is charged.
        for (ptr, want) in [
            (0x10u64, status::NV_ERR_INVALID_ADDRESS),
            (0, status::NV_ERR_INVALID_ARGUMENT),
        ] {
            let st = vram_nvos21(&s, ptr, MemoryAllocationParams::SIZE as u32)?;
            ensure!(
                st == want,
                "params at {ptr:#x}: status {st:#x}, want {want:#x}"
            );
        }
        ensure!(used(0)? == expect, "refused allocs charged: {}", used(0)?);
        // The heap path rounds the same way.
        let h = s
            .ctl
            .vid_heap_alloc_size(s.client, s.device, 5 * MIB + 3, 0, 0)
            .map_err(|e| format!("heap alloc: {e:?}"))?;
        ensure!(h.size == 6 * MIB, "heap size {}", h.size);
        expect += 6 * MIB;
        ensure!(used(0)? == expect, "after heap alloc: {}", used(0)?);
        // Leave 3 MiB under the 1 GiB ceiling: 2.5 MiB fits only before
        // RM rounds it to 4 MiB, so it is refused; 2 MiB is not.
        let fill = GIB - expect - 3 * MIB;
        let f = s
            .ctl
            .alloc_vram(s.client, s.device, 0, fill - MIB)
            .map_err(|e| format!("fill: {e:?}"))?;
        let g = s
            .ctl
            .alloc_vram(s.client, s.device, 0, MIB)
            .map_err(|e| format!("1 MiB: {e:?}"))?;
        ensure!(
            f.size + g.size == fill,
            "fill sizes {} + {}",
            f.size,
            g.size
        );
        ensure!(used(0)? == GIB - 3 * MIB, "filled to {}", used(0)?);
        let r = s.ctl.alloc_vram(s.client, s.device, 0, 5 * MIB / 2);
        ensure!(
            r.is_err_and(|e| e == Error::Rm(status::NV_ERR_NO_MEMORY)),
            "2.5 MiB into 3 MiB free: {r:?}"
        );
        ensure!(used(0)? == GIB - 3 * MIB, "refusal charged: {}", used(0)?);
        s.ctl
            .alloc_vram(s.client, s.device, 0, 2 * MIB)
            .map_err(|e| format!("2 MiB into 3 MiB free: {e:?}"))?;
        ensure!(used(0)? == GIB - MIB, "after 2 MiB: {}", used(0)?);
        Ok(())
    })?;
    ensure!(used(0)? == 0, "after exit: {}", used(0)?);
    Ok(())
}

pub(super) fn xfer_heap_and_explicit_handles_are_charged() -> Outcome {
    use nvclient::abi::{class, heap, Nvos64};
    as_container("/ma", || {
        let s = session(0)?;
        // RM_ALLOC of VRAM wrapped in IOCTL_XFER_CMD, with a handle of ours.
        // The params as the driver reads them: the wire bytes.
        let mut mp = nvclient::vram_params(s.client, 64 * MIB).to_bytes();
        let mut blk = Nvos64 {
            h_root: s.client,
            h_object_parent: s.device,
            h_object_new: 0xbeef_0001,
            h_class: class::NV01_MEMORY_LOCAL_USER,
            p_alloc_parms: mp.as_mut_ptr() as u64,
            params_size: nvclient::abi::MemoryAllocationParams::SIZE as u32,
            ..Default::default()
        }
        .to_bytes();
        s.ctl
            .ioctl_xfer(nvclient::ioctl::Escape::RmAlloc.nr(), &mut blk)
            .map_err(|e| format!("xfer: {e:?}"))?;
        let out = Nvos64::decode(&blk);
        ensure!(
            out.status == status::NV_OK,
            "xfer alloc status {:#x}",
            out.status
        );
        ensure!(
            out.h_object_new == 0xbeef_0001,
            "handle {:#x}, want ours",
            out.h_object_new
        );
        ensure!(used(0)? == 64 * MIB, "after XFER alloc: {}", used(0)?);
        // Through the old heap interface.
        let m = s
            .ctl
            .vid_heap_alloc_size(s.client, s.device, 32 * MIB, 0, 0)
            .map_err(|e| format!("heap alloc: {e:?}"))?;
        ensure!(m.size == 32 * MIB, "heap size {}", m.size);
        ensure!(used(0)? == 96 * MIB, "after heap alloc: {}", used(0)?);
        s.ctl
            .vid_heap_free(s.client, s.device, m.handle)
            .map_err(|e| format!("heap free: {e:?}"))?;
        ensure!(used(0)? == 64 * MIB, "after heap free: {}", used(0)?);
        // The two other heap allocation functions: 16 MiB in a range, and a
        // pitch surface of 8192 x 2048 bytes (16 MiB).
        for function in [
            heap::FUNCTION_ALLOC_SIZE_RANGE,
            heap::FUNCTION_ALLOC_TILED_PITCH_HEIGHT,
        ] {
            let (h, size) = heap_alloc_other(&s, function)?;
            ensure!(size == 16 * MIB, "function {function}: size {size}");
            ensure!(
                used(0)? == 80 * MIB,
                "function {function}: used {}",
                used(0)?
            );
            s.ctl
                .vid_heap_free(s.client, s.device, h)
                .map_err(|e| format!("heap free: {e:?}"))?;
            ensure!(
                used(0)? == 64 * MIB,
                "function {function}: after free {}",
                used(0)?
            );
        }
        // The heap path stops at the ceiling too.
        let r = s.ctl.vid_heap_alloc_size(s.client, s.device, GIB, 0, 0);
        ensure!(
            r.is_err_and(|e| e == Error::Rm(status::NV_ERR_NO_MEMORY)),
            "heap past the ceiling: {r:?}"
        );
        s.ctl
            .free(s.client, s.device, 0xbeef_0001)
            .map_err(|e| format!("free: {e:?}"))?;
        ensure!(used(0)? == 0, "after free: {}", used(0)?);
        let _ = heap::FUNCTION_ALLOC_SIZE;
        Ok(())
    })
}

/// A VRAM allocation of 16 MiB through VID_HEAP `function`
/// (ALLOC_SIZE_RANGE or ALLOC_TILED_PITCH_HEIGHT); returns the handle and
/// size the driver reported.
pub(super) fn heap_alloc_other(s: &Session, function: u32) -> Result<(u32, u64), String> {
    use nvclient::abi::{heap, Nvos32, Nvos32AllocSizeRange, Nvos32AllocTiledPitchHeight};
    let mut p = Nvos32 {
        h_root: s.client,
        h_object_parent: s.device,
        function,
        ..Default::default()
    };
    if function == heap::FUNCTION_ALLOC_SIZE_RANGE {
        p.set_alloc_size_range(&Nvos32AllocSizeRange {
            owner: s.client,
            surface_type: heap::TYPE_IMAGE,
            size: 16 * MIB,
            range_begin: 0,
            range_end: 4 * GIB - 1,
            ..Default::default()
        });
    } else {
        p.set_alloc_tiled_pitch_height(&Nvos32AllocTiledPitchHeight {
            owner: s.client,
            surface_type: heap::TYPE_IMAGE,
            width: 2048,
            height: 2048,
            pitch: 8192,
            ..Default::default()
        });
    }
    s.ctl
        .vid_heap(&mut p)
        .map_err(|e| format!("VID_HEAP function {function}: {e:?}"))?;
    let out = p.heap_alloc().ok_or("no result")?;
    Ok((out.h_memory, out.size))
}

pub(super) fn ceiling_spans_processes_and_layouts() -> Outcome {
    // Two processes of container A share its 1 GiB: one holds 768 MiB, the
    // other gets only what is left, through the 32-byte NVOS21 layout.
    let holder = Holder::spawn(|| {
        join_cgroup("/ma").is_ok()
            && session(0)
                .and_then(|s| {
                    s.ctl
                        .alloc_vram(s.client, s.device, 0, 768 * MIB)
                        .map_err(|e| format!("{e:?}"))?;
                    std::mem::forget(s);
                    Ok(())
                })
                .is_ok()
    })?;
    let r = as_container("/ma", || {
        let s = session(0)?;
        let alloc21 = |size: u64| -> Result<u32, String> {
            let mut mp = nvclient::vram_params(s.client, size).to_bytes();
            vram_nvos21(&s, mp.as_mut_ptr() as u64, mp.len() as u32)
        };
        let st = alloc21(512 * MIB)?;
        ensure!(
            st == status::NV_ERR_NO_MEMORY,
            "512 MiB more than the 256 left: status {st:#x}"
        );
        let st = alloc21(256 * MIB)?;
        ensure!(st == status::NV_OK, "the 256 MiB left: status {st:#x}");
        ensure!(used(0)? == GIB, "both processes: {}", used(0)?);
        Ok(())
    });
    let ready = holder.ready;
    drop(holder);
    ensure!(ready, "first process could not allocate");
    r?;
    ensure!(used(0)? == 0, "after both exited: {}", used(0)?);
    Ok(())
}

/// A DUP of charged memory under an object vgpu does not record (here
/// system memory, a forwarded class): the driver frees the copy with any
/// ancestor of that object, and vgpu's walk of the freed ancestor never
/// reaches it, so its charge outlived the memory (a candidate for the long
/// fuzz's over-charge, `docs/runs.md`). vgpu refuses such a DUP with
/// `NV_ERR_INVALID_OBJECT_PARENT`; memory's own parents in RM are a
/// device or a subdevice, which vgpu records. After the original and the
/// device are freed, nothing may stay charged.
pub(super) fn dup_under_an_unrecorded_parent_refused() -> Outcome {
    as_container("/ma", move || {
        let base = used(0)?;
        let s = session(0)?;
        let m = s
            .ctl
            .alloc_vram(s.client, s.device, 0, 64 * MIB)
            .map_err(|e| format!("{e:?}"))?;
        let sys = s
            .ctl
            .alloc_sysmem(s.client, s.device, 0, 4096)
            .map_err(|e| format!("sysmem: {e:?}"))?;
        let dup = s
            .ctl
            .dup_object(s.client, sys.handle, 0, s.client, m.handle, 0);
        s.ctl
            .free(s.client, s.device, m.handle)
            .map_err(|e| format!("free original: {e:?}"))?;
        s.ctl
            .free(s.client, s.client, s.device)
            .map_err(|e| format!("free device: {e:?}"))?;
        ensure!(
            used(0)? == base,
            "the device and the original freed, {} bytes stay charged (DUP: {dup:?})",
            used(0)? - base
        );
        ensure!(
            dup == Err(Error::Rm(status::NV_ERR_INVALID_OBJECT_PARENT)),
            "DUP under system memory: {dup:?}"
        );
        Ok(())
    })
}

/// RM_VID_HEAP_CONTROL's FREE names any handle of its client, the client's
/// own too, and RM then frees the client (the double as RM_FREE does). vgpu
/// ran it on its kernel copy and forgot the client's objects, but left the
/// client in its index of verified clients, whose entry held the file (and
/// its vGPUs) for as long as the handle was not reused: after such a free,
/// vgpu must know nothing of the client (debugfs `vgpu/records`), and
/// nothing may stay charged.
pub(super) fn heap_free_of_a_client_forgets_it() -> Outcome {
    as_container("/ma", move || {
        let base = used(0)?;
        let s = session(0)?;
        s.ctl
            .alloc_vram(s.client, s.device, 0, 64 * MIB)
            .map_err(|e| format!("{e:?}"))?;
        ensure!(
            crate::fuzz::check::client_vgpus(s.client) == Some(vec![0]),
            "before the free, vgpu/records: {:?}",
            crate::fuzz::check::records(s.client)
        );
        s.ctl
            .vid_heap_free(s.client, s.device, s.client)
            .map_err(|e| format!("heap FREE of the client: {e:?}"))?;
        ensure!(used(0)? == base, "{} bytes stay charged", used(0)? - base);
        let left = crate::fuzz::check::records(s.client);
        ensure!(left.is_none(), "vgpu still knows the client: {left:?}");
        Ok(())
    })
}

/// debugfs `vgpu/records` takes a client handle, decimal or `0x` hex, and
/// nothing else: garbage, an empty write and one past its 16 bytes are
/// `EINVAL`; a handle no file verified reads as nothing.
pub(super) fn records_refuse_garbage() -> Outcome {
    const PATH: &str = "/sys/kernel/debug/vgpu/records";
    for bad in [
        "zz",
        "0x",
        "-1",
        "0x1_0000",
        "4294967296",
        "",
        "0x00000000000000001",
    ] {
        let r = write_file(PATH, bad);
        ensure!(
            r == Err(libc::EINVAL) || (bad.is_empty() && r.is_ok()),
            "{bad:?}: {r:?}"
        );
    }
    write_file(PATH, "0xc1e00000").map_err(|e| format!("hex: errno {e}"))?;
    let text = read_file(PATH)?;
    ensure!(text.is_empty(), "an unknown client reads {text:?}");
    write_file(PATH, "12345").map_err(|e| format!("decimal: errno {e}"))?;
    Ok(())
}

pub(super) fn dup_is_charged_once() -> Outcome {
    // A file of the real driver, opened before the process joins the
    // container (an open from inside it is vgpu's): its clients are ones
    // vgpu never verified.
    let direct = Ctl::open("/dev/nvidiactl").map_err(|e| format!("{e:?}"))?;
    as_container("/ma", move || {
        let s = session(0)?;
        let m = s
            .ctl
            .alloc_vram(s.client, s.device, 0, 256 * MIB)
            .map_err(|e| format!("{e:?}"))?;
        let copy = s
            .ctl
            .dup_object(s.client, s.device, 0, s.client, m.handle, 0)
            .map_err(|e| format!("dup: {e:?}"))?;
        ensure!(used(0)? == 256 * MIB, "after DUP: {}", used(0)?);
        // The memory lives on in the copy: still charged.
        s.ctl
            .free(s.client, s.device, m.handle)
            .map_err(|e| format!("free original: {e:?}"))?;
        ensure!(
            used(0)? == 256 * MIB,
            "original freed, copy alive: {}",
            used(0)?
        );
        s.ctl
            .free(s.client, s.device, copy)
            .map_err(|e| format!("free copy: {e:?}"))?;
        ensure!(used(0)? == 0, "both freed: {}", used(0)?);
        // From another /dev/vgpuctl file of the same process: the driver's
        // share policy lets a process's clients dup each other's objects,
        // and it is still charged once.
        let other = session(0)?;
        let om = other
            .ctl
            .alloc_vram(other.client, other.device, 0, 128 * MIB)
            .map_err(|e| format!("{e:?}"))?;
        let copy = s
            .ctl
            .dup_object(s.client, s.device, 0, other.client, om.handle, 0)
            .map_err(|e| format!("dup from the other file: {e:?}"))?;
        ensure!(used(0)? == 128 * MIB, "after cross-file DUP: {}", used(0)?);
        // Another process of the same container gets the driver's answer:
        // a user client may not dup a client of another process that did
        // not share it (RM's default share policy, `rs_client.c:535-547`,
        // `sharing.c:347-353` at 595.45.04). vgpu must not lift that by
        // running the DUP at kernel privilege.
        let (oc, oh) = (other.client, om.handle);
        let code = in_child(move || {
            let Ok(b) = session(0) else { return 3 };
            let r = b.ctl.dup_object(b.client, b.device, 0, oc, oh, 0);
            i32::from(r != Err(Error::Rm(status::NV_ERR_INSUFFICIENT_PERMISSIONS)))
        })?;
        ensure!(
            code == 0,
            "DUP from another process of the container was not refused ({code})"
        );
        ensure!(used(0)? == 128 * MIB, "after the refused DUP: {}", used(0)?);
        // Another container cannot take it.
        let (oc, oh) = (other.client, om.handle);
        let code = in_child(move || {
            if join_cgroup("/mb").is_err() {
                return 2;
            }
            let Ok(b) = session(1) else { return 3 };
            let r = b.ctl.dup_object(b.client, b.device, 0, oc, oh, 0);
            i32::from(r != Err(Error::Rm(status::NV_ERR_INSUFFICIENT_PERMISSIONS)))
        })?;
        ensure!(
            code == 0,
            "DUP into another container was not refused ({code})"
        );
        // Nor can anyone take from a client vgpu never verified.
        let dc = direct.alloc_root_client().map_err(|e| format!("{e:?}"))?;
        let r = s.ctl.dup_object(s.client, s.device, 0, dc, dc, 0);
        ensure!(
            r == Err(Error::Rm(status::NV_ERR_INSUFFICIENT_PERMISSIONS)),
            "DUP from an unverified client: {r:?}"
        );
        // The original's file closes: the copy keeps the charge.
        drop(other);
        ensure!(
            used(0)? == 128 * MIB,
            "original's file closed: {}",
            used(0)?
        );
        s.ctl
            .free(s.client, s.device, copy)
            .map_err(|e| format!("free copy: {e:?}"))?;
        ensure!(used(0)? == 0, "copy freed: {}", used(0)?);
        Ok(())
    })
}

pub(super) fn alloc_memory_limit_shows_the_ceiling() -> Outcome {
    use nvclient::abi::class;
    // Files of the real driver, opened before joining the container (an
    // open from inside it is vgpu's).
    let ctl = Ctl::open("/dev/nvidiactl").map_err(|e| format!("{e:?}"))?;
    let real_gpu = Gpu::open("/dev/nvidia0").map_err(|e| format!("{e:?}"))?;
    as_container("/ma", move || {
        // RM_ALLOC_MEMORY of 0x40 is a GPU-node escape that only reports the
        // heap. The client lives on a real ctl file here (fd translation for
        // REGISTER_FD with a container's own vgpuctl fd is still to come).
        let client = ctl.alloc_root_client().map_err(|e| format!("{e:?}"))?;
        let device = ctl
            .alloc_device(client, 0, 0)
            .map_err(|e| format!("{e:?}"))?;
        real_gpu
            .register_fd(&ctl)
            .map_err(|e| format!("register real: {e:?}"))?;
        let direct = real_gpu
            .alloc_memory_limit(client, device, 0, class::NV01_MEMORY_LOCAL_USER)
            .map_err(|e| format!("direct: {e:?}"))?;
        let vgpu = Gpu::open("/dev/vgpu0").map_err(|e| format!("{e:?}"))?;
        vgpu.register_fd(&ctl)
            .map_err(|e| format!("register vgpu0: {e:?}"))?;
        let through = vgpu
            .alloc_memory_limit(client, device, 0, class::NV01_MEMORY_LOCAL_USER)
            .map_err(|e| format!("through vgpu0: {e:?}"))?;
        ensure!(direct == 8064 * MIB - 1, "direct limit {direct}");
        ensure!(
            through == GIB - 1,
            "limit through /dev/vgpu0: {through}, want {}",
            GIB - 1
        );
        Ok(())
    })
}

pub(super) fn lowered_limit_blocks_until_usage_drops() -> Outcome {
    as_container("/ma", || {
        let s = session(0)?;
        let a = s
            .ctl
            .alloc_vram(s.client, s.device, 0, 512 * MIB)
            .map_err(|e| format!("{e:?}"))?;
        write_file(
            "/sys/class/vgpu/vgpu0/memory_limit",
            &(256 * MIB).to_string(),
        )
        .map_err(|e| format!("lower: {e}"))?;
        ensure!(used(0)? == 512 * MIB, "running allocation touched");
        let r = s.ctl.alloc_vram(s.client, s.device, 0, 64 << 10);
        ensure!(
            r.is_err_and(|e| e == Error::Rm(status::NV_ERR_NO_MEMORY)),
            "allowed over a lowered limit: {r:?}"
        );
        s.ctl
            .free(s.client, s.device, a.handle)
            .map_err(|e| format!("free: {e:?}"))?;
        s.ctl
            .alloc_vram(s.client, s.device, 0, 128 * MIB)
            .map_err(|e| format!("after drop: {e:?}"))?;
        write_file("/sys/class/vgpu/vgpu0/memory_limit", &GIB.to_string())
            .map_err(|e| format!("{e}"))?;
        Ok(())
    })
}
