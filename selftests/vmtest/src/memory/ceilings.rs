// SPDX-License-Identifier: GPL-2.0

//! Refused numbers, each container at its own ceiling and size, giving back.

use super::*;

/// Default deny: numbers the dispatch table does not admit never reach the
/// driver. Each is answered as RM answers what it does not have, counted on
/// the container's vGPU, and an unknown one is named once in the log.
pub(super) fn unknown_numbers_are_refused_and_counted() -> Outcome {
    use nvclient::abi::{class, ctrl, status::*};
    use nvclient::Error::{Os, Rm};
    let before = calls_denied(0)?;
    as_container("/ma", || {
        let s = session(0)?;
        let mut p = [0u8; 4096];
        // A control no row admits (RM: NOT_SUPPORTED, rs_resource.c:131).
        let r = s
            .ctl
            .control(s.client, s.subdevice, 0x2080_0dea, &mut p[..16]);
        ensure!(r == Err(Rm(NV_ERR_NOT_SUPPORTED)), "unknown control: {r:?}");
        // A row the table denies: the FB's real layout and size.
        let r = s.ctl.control(
            s.client,
            s.subdevice,
            ctrl::NV2080_CTRL_CMD_FB_GET_FB_REGION_INFO,
            &mut p,
        );
        ensure!(
            r == Err(Rm(NV_ERR_NOT_SUPPORTED)),
            "FB_GET_FB_REGION_INFO: {r:?}"
        );
        // A class no row admits: RM's INVALID_CLASS. One the table denies
        // with the status RM gives where the feature is absent (fabric
        // memory without an NVLink fabric, `mem_fabric.c:591-596` at
        // 595.45.04; docs/dispatch-table.md): NOT_SUPPORTED.
        let r = s.ctl.alloc(s.client, s.device, 0, 0xdead, &mut []);
        ensure!(r == Err(Rm(NV_ERR_INVALID_CLASS)), "unknown class: {r:?}");
        let r = s
            .ctl
            .alloc(s.client, s.device, 0, class::NV_MEMORY_FABRIC, &mut p[..64]);
        ensure!(r == Err(Rm(NV_ERR_NOT_SUPPORTED)), "fabric memory: {r:?}");
        // An escape vgpu does not know: EINVAL, as from the driver.
        let mut b = [0u8; 8];
        let r = s.ctl.node().ioctl_direct(0x01, &mut b);
        ensure!(r == Err(Os(libc::EINVAL)), "unknown escape: {r:?}");
        Ok(())
    })?;
    let after = calls_denied(0)?;
    ensure!(
        after == before + 5,
        "calls_denied {before} before, {after} after five refusals"
    );
    ensure!(
        calls_denied(1)? == 0,
        "the other container's vGPU counted them"
    );
    let log = sh("dmesg")?;
    ensure!(
        log.contains(&format!(
            "control 0x20800dea is not in vgpu's tables for driver {}: refused (reported once)",
            crate::sys::claimed_release()
        )),
        "the unknown control is not named in the kernel log"
    );
    ensure!(
        log.contains("class 0xdead is not in vgpu's tables"),
        "the unknown class is not named in the kernel log"
    );
    Ok(())
}

/// Allocates `chunk`-byte VRAM objects until refused; returns the total.
pub(super) fn fill(s: &Session, chunk: u64) -> Result<(u64, Vec<u32>), String> {
    let mut total = 0;
    let mut handles = Vec::new();
    loop {
        match s.ctl.alloc_vram(s.client, s.device, 0, chunk) {
            Ok(m) => {
                total += m.size;
                handles.push(m.handle);
            }
            Err(Error::Rm(status::NV_ERR_NO_MEMORY)) => return Ok((total, handles)),
            Err(e) => return Err(format!("alloc after {total} bytes: {e:?}")),
        }
        if handles.len() > 10_000 {
            return Err("never refused".into());
        }
    }
}

pub(super) fn each_stops_exactly_at_its_ceiling() -> Outcome {
    for (id, cg, limit) in [(0u32, "/ma", GIB), (1, "/mb", 3 * GIB)] {
        let refused = |id: u32| -> Result<u64, String> {
            read_file(&format!("/sys/class/vgpu/vgpu{id}/memory_refused"))?
                .parse()
                .map_err(|e| format!("memory_refused: {e}"))
        };
        let refused_before = refused(id)?;
        as_container(cg, move || {
            let s = session(id)?;
            // 100 MiB chunks, then the remainder, then one more granule.
            let (mut total, _h) = fill(&s, 100 * MIB)?;
            ensure!(
                total == limit / (100 * MIB) * 100 * MIB,
                "100 MiB chunks gave {total}"
            );
            let rest = limit - total;
            let m = s
                .ctl
                .alloc_vram(s.client, s.device, 0, rest)
                .map_err(|e| format!("rest: {e:?}"))?;
            total += m.size;
            ensure!(total == limit, "stopped at {total}, ceiling {limit}");
            let r = s.ctl.alloc_vram(s.client, s.device, 0, 64 << 10);
            ensure!(
                r.is_err_and(|e| e == Error::Rm(status::NV_ERR_NO_MEMORY)),
                "past the ceiling: {r:?}"
            );
            let u = used(id)?;
            ensure!(u == limit, "memory_used {u}, want {limit}");
            println!("# memory: vgpu{id} in {cg}: ceiling {limit}, allocated {total}, then NV_ERR_NO_MEMORY");
            Ok(())
        })?;
        ensure!(
            used(id)? == 0,
            "vGPU {id} still charged after its process exited"
        );
        // The refusal that ended the fill and the one past the ceiling.
        let n = refused(id)? - refused_before;
        ensure!(n == 2, "memory_refused grew by {n}, want 2");
    }
    Ok(())
}

pub(super) fn each_sees_its_own_size() -> Outcome {
    for (id, cg, limit) in [(0u32, "/ma", GIB), (1, "/mb", 3 * GIB)] {
        as_container(cg, move || {
            let s = session(id)?;
            let m = s
                .ctl
                .alloc_vram(s.client, s.device, 0, 256 * MIB)
                .map_err(|e| format!("{e:?}"))?;
            let info = s
                .ctl
                .fb_get_info_v2(
                    s.client,
                    s.subdevice,
                    &[fb_info::RAM_SIZE, fb_info::HEAP_SIZE, fb_info::HEAP_FREE],
                )
                .map_err(|e| format!("fb info: {e:?}"))?;
            let kib = |i: usize| u64::from(info[i].data) << 10;
            ensure!(kib(0) == limit, "RAM_SIZE {} want {limit}", kib(0));
            ensure!(kib(1) == limit, "HEAP_SIZE {} want {limit}", kib(1));
            ensure!(
                kib(2) == limit - m.size,
                "HEAP_FREE {} want {}",
                kib(2),
                limit - m.size
            );
            // V1 passes the list by pointer: the same answer.
            let v1 = s
                .ctl
                .fb_get_info_v1(
                    s.client,
                    s.subdevice,
                    &[fb_info::RAM_SIZE, fb_info::HEAP_SIZE, fb_info::HEAP_FREE],
                )
                .map_err(|e| format!("fb info v1: {e:?}"))?;
            ensure!(
                v1.iter().map(|e| e.data).eq(info.iter().map(|e| e.data)),
                "V1 {v1:?} differs from V2 {info:?}"
            );
            // VID_HEAP INFO shows the vGPU too.
            let h = s
                .ctl
                .vid_heap_info(s.client, s.device)
                .map_err(|e| format!("heap info: {e:?}"))?;
            ensure!(
                h.free == limit - m.size && h.total <= limit,
                "VID_HEAP INFO {h:?}, limit {limit}"
            );
            println!(
                "# memory: vgpu{id} sees RAM_SIZE {} HEAP_SIZE {} HEAP_FREE {} bytes",
                kib(0),
                kib(1),
                kib(2)
            );
            Ok(())
        })?;
    }
    Ok(())
}

/// The RM statuses of malformed FB_GET_INFO requests (V1: no entries, too
/// many, a bad list pointer; V2: too many entries, a wrong size), in order.
pub(super) fn malformed_fb_statuses(ctl: &Ctl, client: u32, sub: u32) -> Vec<String> {
    use nvclient::abi::{ctrl, FbGetInfoV1Params, FbGetInfoV2Params};
    let mut out = Vec::new();
    let mut list = [0u8; 8];
    for (n, ptr) in [
        (0u32, list.as_mut_ptr() as u64),
        (129, list.as_mut_ptr() as u64),
        (1, 8),
    ] {
        let mut p = FbGetInfoV1Params {
            list_size: n,
            list_ptr: ptr,
        }
        .to_bytes();
        let r = ctl.control(client, sub, ctrl::NV2080_CTRL_CMD_FB_GET_INFO, &mut p);
        out.push(format!("{r:?}"));
    }
    let mut p = FbGetInfoV2Params {
        list_size: 129,
        ..Default::default()
    }
    .to_bytes();
    let r = ctl.control(client, sub, ctrl::NV2080_CTRL_CMD_FB_GET_INFO_V2, &mut p);
    out.push(format!("{r:?}"));
    let mut short = [0u8; 64];
    let r = ctl.control(
        client,
        sub,
        ctrl::NV2080_CTRL_CMD_FB_GET_INFO_V2,
        &mut short,
    );
    out.push(format!("{r:?}"));
    out
}

/// vgpu answers well-formed FB_GET_INFO itself (from kernel copies);
/// malformed ones get the driver's own statuses.
pub(super) fn fb_info_malformed_as_directly() -> Outcome {
    let direct = {
        let d = crate::double::session(0)?;
        malformed_fb_statuses(&d.ctl, d.client, d.sub)
    };
    ensure!(
        direct.iter().all(|r| r.starts_with("Err(")),
        "the driver accepted a malformed request: {direct:?}"
    );
    as_container("/ma", move || {
        let s = session(0)?;
        let through = malformed_fb_statuses(&s.ctl, s.client, s.subdevice);
        ensure!(
            through == direct,
            "through vgpu {through:?}, directly {direct:?}"
        );
        Ok(())
    })
}

pub(super) fn free_and_close_give_back() -> Outcome {
    as_container("/ma", || {
        let s = session(0)?;
        let a = s
            .ctl
            .alloc_vram(s.client, s.device, 0, 300 * MIB)
            .map_err(|e| format!("{e:?}"))?;
        let b = s
            .ctl
            .alloc_vram(s.client, s.device, 0, 200 * MIB)
            .map_err(|e| format!("{e:?}"))?;
        ensure!(used(0)? == 500 * MIB, "used {}", used(0)?);
        s.ctl
            .free(s.client, s.device, a.handle)
            .map_err(|e| format!("free: {e:?}"))?;
        ensure!(used(0)? == 200 * MIB, "after free: {}", used(0)?);
        // Freeing the device frees what is under it.
        s.ctl
            .free(s.client, s.client, s.device)
            .map_err(|e| format!("free device: {e:?}"))?;
        ensure!(used(0)? == 0, "after freeing the device: {}", used(0)?);
        let _ = b;
        let s2 = session(0)?;
        s2.ctl
            .alloc_vram(s2.client, s2.device, 0, 128 * MIB)
            .map_err(|e| format!("{e:?}"))?;
        ensure!(used(0)? == 128 * MIB, "second session: {}", used(0)?);
        drop(s2);
        ensure!(used(0)? == 0, "after close: {}", used(0)?);
        Ok(())
    })
}

pub(super) fn sigkill_gives_back() -> Outcome {
    let holder = Holder::spawn(|| {
        join_cgroup("/mb").is_ok()
            && session(1)
                .and_then(|s| {
                    s.ctl
                        .alloc_vram(s.client, s.device, 0, 512 * MIB)
                        .map_err(|e| format!("{e:?}"))?;
                    std::mem::forget(s);
                    Ok(())
                })
                .is_ok()
    })?;
    let held = used(1)?;
    let ready = holder.ready;
    drop(holder);
    ensure!(ready, "child could not allocate");
    ensure!(held == 512 * MIB, "charged {held} while alive");
    ensure!(used(1)? == 0, "still charged after SIGKILL: {}", used(1)?);
    Ok(())
}
