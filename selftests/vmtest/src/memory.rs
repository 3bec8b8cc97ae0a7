// SPDX-License-Identifier: GPL-2.0

//! Memory ceilings through vgpu: two containers (cgroups) share one fake
//! 8 GiB GPU with 1 GiB and 3 GiB vGPUs; allocations stop exactly at each
//! ceiling, each sees its own size, neither affects the other, and charges
//! come back on free, close and SIGKILL, whatever a racing thread does.

use crate::ensure;
use crate::session::Session;
use crate::sys::{
    as_container, in_child, join_cgroup, read_file, sh, while_racing, write_file, Holder,
};
use crate::tap::{Outcome, Test};
use crate::tests;
use nvclient::abi::Wire;
use nvclient::abi::{fb_info, status};
use nvclient::{Ctl, Error, Gpu};

/// Tests of this suite, in order (later ones rely on earlier ones' state).
pub const TESTS: &[Test] = tests![
    setup_two_containers = setup,
    unknown_numbers_are_refused_and_counted,
    each_stops_exactly_at_its_ceiling,
    each_sees_its_own_size,
    fb_info_malformed_as_directly,
    free_and_close_give_back,
    sigkill_gives_back,
    racing_size_cannot_pass_the_ceiling,
    racing_class_cannot_pass_the_ceiling,
    racing_xfer_cannot_pass_the_ceiling,
    xfer_heap_and_explicit_handles_are_charged,
    charges_what_rm_allocates,
    ceiling_spans_processes_and_layouts,
    dup_is_charged_once,
    alloc_memory_limit_shows_the_ceiling,
    lowered_limit_blocks_until_usage_drops,
    foreign_gpu_refused_and_hidden,
    card_info_never_shows_foreign_gpus,
    remove_refused_while_charged,
    teardown,
];

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

fn used(id: u32) -> Result<u64, String> {
    read_file(&format!("/sys/class/vgpu/vgpu{id}/memory_used"))?
        .parse()
        .map_err(|e| format!("memory_used: {e}"))
}

fn setup() -> Outcome {
    sh("modprobe nvidia gpus=2 vram0_mib=8192 vram1_mib=4096")?;
    sh("modprobe vgpu")?;
    for (id, cg, limit) in [(0, "/ma", GIB), (1, "/mb", 3 * GIB)] {
        std::fs::create_dir_all(format!("/sys/fs/cgroup{cg}"))
            .map_err(|e| format!("mkdir {cg}: {e}"))?;
        write_file("/sys/class/vgpu/create", &id.to_string())
            .map_err(|e| format!("create: {e}"))?;
        let a = |f: &str| format!("/sys/class/vgpu/vgpu{id}/{f}");
        write_file(&a("gpu"), "0").map_err(|e| format!("gpu: {e}"))?;
        write_file(&a("memory_limit"), &limit.to_string()).map_err(|e| format!("limit: {e}"))?;
        write_file(&a("cgroup"), cg).map_err(|e| format!("cgroup: {e}"))?;
    }
    Ok(())
}

fn session(vgpu: u32) -> Result<Session, String> {
    Session::vgpu(vgpu)
}

/// `calls_denied` of vGPU `id`.
pub(crate) fn calls_denied(id: u32) -> Result<u64, String> {
    let s = read_file(&format!("/sys/class/vgpu/vgpu{id}/calls_denied"))?;
    s.trim().parse().map_err(|_| format!("calls_denied: {s:?}"))
}

/// Default deny: numbers the dispatch table does not admit never reach the
/// driver. Each is answered as RM answers what it does not have, counted on
/// the container's vGPU, and an unknown one is named once in the log.
fn unknown_numbers_are_refused_and_counted() -> Outcome {
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
        // A class no row admits, and one the table denies (fabric memory,
        // which the ledger does not charge): RM's INVALID_CLASS.
        let r = s.ctl.alloc(s.client, s.device, 0, 0xdead, &mut []);
        ensure!(r == Err(Rm(NV_ERR_INVALID_CLASS)), "unknown class: {r:?}");
        let r = s
            .ctl
            .alloc(s.client, s.device, 0, class::NV_MEMORY_FABRIC, &mut p[..64]);
        ensure!(r == Err(Rm(NV_ERR_INVALID_CLASS)), "fabric memory: {r:?}");
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
fn fill(s: &Session, chunk: u64) -> Result<(u64, Vec<u32>), String> {
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

fn each_stops_exactly_at_its_ceiling() -> Outcome {
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

fn each_sees_its_own_size() -> Outcome {
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
fn malformed_fb_statuses(ctl: &Ctl, client: u32, sub: u32) -> Vec<String> {
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
fn fb_info_malformed_as_directly() -> Outcome {
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

fn free_and_close_give_back() -> Outcome {
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

fn sigkill_gives_back() -> Outcome {
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

/// The size in the alloc params the driver would read flips between 64 KiB
/// and 8 GiB (past the 1 GiB ceiling) while the container allocates with
/// that very block: vgpu decides and allocates from its own copy, so every
/// byte the driver holds was charged, and both sizes were seen (some calls
/// allocated, some were refused over the ceiling).
fn racing_size_cannot_pass_the_ceiling() -> Outcome {
    use nvclient::abi::{class, status::*, Nvos21};
    as_container("/ma", || {
        let s = session(0)?;
        let mut mp = Box::new(nvclient::vram_params(s.client, 64 << 10).to_bytes());
        let fresh = vram_block(&s, class::NV01_MEMORY_LOCAL_USER, &mut mp[..]);
        let mut blk = Box::new(fresh);
        // The params' `size`, the word the driver would read.
        let word = mp.as_mut_ptr() as usize + 64;
        let req = nvclient::request(nvclient::ioctl::Escape::RmAlloc.nr(), Nvos21::SIZE);
        let fd = s.ctl.node().fd();
        let p = blk.as_mut_ptr();
        // RM writes its choices back into the params (rounded size, page
        // attributes): each call starts from the same params, the racer
        // keeps flipping the size in them.
        let (fresh_mp, pm) = (*mp, mp.as_mut_ptr());
        let (mut allocated, mut refused) = (0, 0);
        // 2 GiB: past vGPU 0's 1 GiB ceiling, but within what the 8 GiB
        // GPU's heap can give: a driver that read the flipped size
        // allocates it, so the comparison below sees it. (8 GiB, more than
        // the heap, would be refused by the driver itself, and a vgpu that
        // let the driver read the size again would pass.)
        // The racer lands in the window between our restore and vgpu's
        // read only now and then (about one call in a hundred under
        // emulation on a busy host): up to 3000 calls, the rest skipped
        // once both outcomes have been seen a few times.
        race_then_compare(word, 64 << 10, 2 * GIB, 3000, || {
            if allocated >= 3 && refused >= 3 {
                return Ok(());
            }
            // SAFETY: `pm` is the live params buffer above (the racer writes
            // only its size word, with single aligned stores).
            unsafe { std::ptr::copy_nonoverlapping(fresh_mp.as_ptr(), pm, fresh_mp.len()) };
            // SAFETY: `p` is the live block above, written only here; its
            // params pointer is `mp`, which the racer flips.
            unsafe { std::ptr::copy_nonoverlapping(fresh.as_ptr(), p, fresh.len()) };
            // SAFETY: as above.
            let rc = unsafe { libc::ioctl(fd, req as _, p) };
            ensure!(rc == 0, "RM_ALLOC: errno {}", crate::sys::errno());
            // SAFETY: as above; read back after the call.
            let st = Nvos21::decode(unsafe { std::slice::from_raw_parts(p, Nvos21::SIZE) }).status;
            match st {
                NV_OK => allocated += 1,
                NV_ERR_NO_MEMORY => refused += 1,
                // The size word torn between the racer's store and a copy
                // into the params (ours, or the driver's answer written
                // back) can read 0: RM's answer to a zero size.
                NV_ERR_INVALID_ARGUMENT => {}
                st => return Err(format!("RM_ALLOC: status {st:#x}")),
            }
            Ok(())
        })?;
        ensure!(
            allocated > 0 && refused > 0,
            "the flip never reached a call: {allocated} allocated, {refused} refused"
        );
        let u = used(0)?;
        ensure!(u <= GIB, "used {u} past the 1 GiB ceiling");
        let _ = (&mut mp, &mut blk);
        Ok(())
    })?;
    ensure!(used(0)? == 0, "charged after exit: {}", used(0)?);
    Ok(())
}

/// Runs `attempts` calls of `call` while another thread keeps flipping the
/// `u64` at `word` between `a` and `b`; then checks, in the driver itself,
/// that every byte of VRAM it holds for the container was charged to the
/// container's vGPU.
fn race_then_compare(
    word: usize,
    a: u64,
    b: u64,
    attempts: usize,
    mut call: impl FnMut() -> Result<(), String>,
) -> Outcome {
    let obs = crate::double::session(0)?;
    // What earlier tests released may still be on its way back to the
    // double's heap (a last file reference dropped from a work queue): start
    // from a heap and a ledger that have stopped changing.
    let (mut free0, mut used0) = (obs.heap_free()?, used(0)?);
    let mut steady = 0;
    for _ in 0..100 {
        std::thread::sleep(std::time::Duration::from_millis(20));
        let now = (obs.heap_free()?, used(0)?);
        steady = if now == (free0, used0) { steady + 1 } else { 0 };
        (free0, used0) = now;
        if steady == 3 {
            break;
        }
    }
    ensure!(
        steady == 3,
        "the heap or the ledger kept changing before the race"
    );
    let mut flip = false;
    let flipper = move || {
        flip = !flip;
        // SAFETY: the word lives on the heap until `while_racing` has joined
        // this thread; racing writes are the point.
        unsafe { (word as *mut u64).write_volatile(if flip { b } else { a }) };
    };
    // Up to five rounds, until the race has reached VRAM at least once (a
    // round whose flips all fell between the calls tests nothing; one
    // in the 535.288.01 lane did so once); every round must hold.
    for _ in 0..5 {
        // (The flipper captures only `Copy` values: each round gets a copy.)
        while_racing(flipper, |race| {
            (0..attempts).try_for_each(|_| race.call(&mut call))
        })?;
        let vram = free0 - obs.heap_free()?;
        let charged = used(0)? - used0;
        ensure!(
            vram == charged,
            "the driver holds {vram} bytes of VRAM for the container, vgpu charged {charged}"
        );
        if charged > 0 {
            return Ok(());
        }
    }
    Err("the race never reached VRAM in 5 rounds: nothing was tested".into())
}

/// An NVOS21 block allocating class `h_class` under the session's device
/// with the params `mp` (which must outlive its use).
fn vram_block(s: &Session, h_class: u32, mp: &mut [u8]) -> [u8; nvclient::abi::Nvos21::SIZE] {
    nvclient::abi::Nvos21 {
        h_root: s.client,
        h_object_parent: s.device,
        h_class,
        p_alloc_parms: mp.as_mut_ptr() as u64,
        params_size: mp.len() as u32,
        ..Default::default()
    }
    .to_bytes()
}

/// The class of an RM_ALLOC flips between system memory (0x3e, a class vgpu
/// forwards) and VRAM (0x40) while the container allocates: the driver
/// allocates what vgpu saw, so VRAM is never allocated uncharged.
fn racing_class_cannot_pass_the_ceiling() -> Outcome {
    use nvclient::abi::{class, Nvos21};
    as_container("/ma", || {
        let s = session(0)?;
        // Params that allocate 64 KiB of VRAM as 0x40, and 64 KiB of system
        // memory as 0x3e.
        let mut mp = nvclient::vram_params(s.client, 64 << 10).to_bytes();
        let fresh = vram_block(&s, class::NV01_MEMORY_SYSTEM, &mut mp);
        let mut blk = Box::new([0u8; Nvos21::SIZE]);
        blk.copy_from_slice(&fresh);
        let p = blk.as_mut_ptr();
        // hObjectNew (RM picks) and hClass, as one word.
        let word = p as usize + 8;
        let (sys, vram) = (
            u64::from(class::NV01_MEMORY_SYSTEM) << 32,
            u64::from(class::NV01_MEMORY_LOCAL_USER) << 32,
        );
        let req = nvclient::request(nvclient::ioctl::Escape::RmAlloc.nr(), Nvos21::SIZE);
        let fd = s.ctl.node().fd();
        race_then_compare(word, sys, vram, 300, || {
            // SAFETY: `p` is the heap block above, alive for the call; the
            // flipper only changes its class word.
            let rc = unsafe { libc::ioctl(fd, req as _, p) };
            ensure!(rc == 0, "RM_ALLOC: errno {}", crate::sys::errno());
            Ok(())
        })?;
        let _ = &mut mp;
        Ok(())
    })
}

/// The escape inside an IOCTL_XFER_CMD header flips between RM_UNMAP_MEMORY
/// (which vgpu forwards as it is) and RM_ALLOC of VRAM, on the same 32-byte
/// block: the driver runs the escape vgpu saw.
fn racing_xfer_cannot_pass_the_ceiling() -> Outcome {
    use nvclient::abi::{class, Nvos21};
    use nvclient::ioctl::{Escape, Xfer};
    as_container("/ma", || {
        let s = session(0)?;
        let mut mp = nvclient::vram_params(s.client, 64 << 10).to_bytes();
        let alloc = vram_block(&s, class::NV01_MEMORY_LOCAL_USER, &mut mp);
        // The inner block: read as NVOS34 (its client is the caller's) or as
        // the RM_ALLOC block.
        let mut inner = Box::new([0u8; Nvos21::SIZE]);
        let mut hdr = Box::new(nvclient::xfer_header(&Xfer {
            cmd: u32::from(Escape::RmUnmapMemory.nr()),
            size: Nvos21::SIZE as u32,
            ptr: inner.as_mut_ptr() as u64,
        }));
        let word = hdr.as_mut_ptr() as usize;
        let size = (Nvos21::SIZE as u64) << 32;
        let unmap = u64::from(Escape::RmUnmapMemory.nr()) | size;
        let rm_alloc = u64::from(Escape::RmAlloc.nr()) | size;
        let req = nvclient::request(Escape::IoctlXferCmd.nr(), Xfer::SIZE);
        let fd = s.ctl.node().fd();
        let (ip, hp) = (inner.as_mut_ptr(), hdr.as_mut_ptr());
        race_then_compare(word, unmap, rm_alloc, 300, || {
            // SAFETY: `ip` points to the live inner buffer, only this thread
            // writes it.
            unsafe { std::ptr::copy_nonoverlapping(alloc.as_ptr(), ip, alloc.len()) };
            // SAFETY: `hp` is the live header; the flipper only changes its
            // first word.
            let rc = unsafe { libc::ioctl(fd, req as _, hp) };
            ensure!(rc == 0, "XFER: errno {}", crate::sys::errno());
            Ok(())
        })?;
        let _ = (&mut mp, &mut inner, &mut hdr);
        Ok(())
    })
}

/// RM_ALLOC of VRAM in the NVOS21 layout with params at `ptr` and
/// `paramsSize` `psize`: the status RM (or vgpu) answered.
fn vram_nvos21(s: &Session, ptr: u64, psize: u32) -> Result<u32, String> {
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
fn charges_what_rm_allocates() -> Outcome {
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

fn xfer_heap_and_explicit_handles_are_charged() -> Outcome {
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
fn heap_alloc_other(s: &Session, function: u32) -> Result<(u32, u64), String> {
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

fn ceiling_spans_processes_and_layouts() -> Outcome {
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

fn dup_is_charged_once() -> Outcome {
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

fn alloc_memory_limit_shows_the_ceiling() -> Outcome {
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

fn lowered_limit_blocks_until_usage_drops() -> Outcome {
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

fn foreign_gpu_refused_and_hidden() -> Outcome {
    as_container("/ma", || {
        let ctl = Ctl::open("/dev/vgpuctl").map_err(|e| format!("{e:?}"))?;
        let client = ctl.alloc_root_client().map_err(|e| format!("{e:?}"))?;
        // GPU 1 exists, but this container has no vGPU on it.
        let r = ctl.alloc_device(client, 0, 1);
        ensure!(
            r == Err(Error::Os(libc::EACCES)),
            "device on a foreign GPU: {r:?}"
        );
        // RM calls on a vGPU node itself would escape the ledger and the
        // rewritten answers: only GPU-node escapes are served there.
        let g = Gpu::open("/dev/vgpu0").map_err(|e| format!("{e:?}"))?;
        let mut blk = nvclient::abi::Nvos64 {
            h_class: nvclient::abi::class::NV01_ROOT_CLIENT,
            ..Default::default()
        }
        .to_bytes();
        let r = g.ioctl(nvclient::ioctl::Escape::RmAlloc.nr(), &mut blk);
        ensure!(
            r == Err(Error::Os(libc::EPERM)),
            "RM_ALLOC on /dev/vgpu0: {r:?}"
        );
        // The driver takes REGISTER_FD on a ctl file too (`escape.c:942-944`
        // at 595.45.04), which would bind the clients this file creates to
        // another file that outlives it: refused on /dev/vgpuctl. A GPU
        // node still takes it.
        let other = Ctl::open("/dev/vgpuctl").map_err(|e| format!("{e:?}"))?;
        let mut p = nvclient::abi::RegisterFd { ctl_fd: other.fd() };
        let r = ctl.ioctl_with(nvclient::ioctl::Escape::RegisterFd.nr(), &mut p);
        ensure!(
            r == Err(Error::Os(libc::EPERM)),
            "REGISTER_FD on /dev/vgpuctl: {r:?}"
        );
        g.register_fd(&other)
            .map_err(|e| format!("REGISTER_FD on /dev/vgpu0: {e:?}"))?;
        let cards = ctl.card_info(8).map_err(|e| format!("card info: {e:?}"))?;
        let minors: Vec<u32> = cards
            .iter()
            .filter(|c| c.valid != 0)
            .map(|c| c.minor_number)
            .collect();
        ensure!(minors == [0], "CARD_INFO shows GPUs {minors:?}, want [0]");
        Ok(())
    })
}

/// While a container asks CARD_INFO again and again, another of its threads
/// watches the answer buffer: GPU 1's record (no vGPU of the container)
/// never appears in it, not even for a moment.
fn card_info_never_shows_foreign_gpus() -> Outcome {
    use nvclient::ioctl::{Escape, CARD_INFO_SIZE};
    use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
    use std::sync::Arc;
    as_container("/ma", || {
        let ctl = Ctl::open("/dev/vgpuctl").map_err(|e| format!("{e:?}"))?;
        const N: usize = 8;
        let mut buf = Box::new([0u8; N * CARD_INFO_SIZE]);
        let addr = buf.as_mut_ptr() as usize;
        let seen = Arc::new(AtomicU32::new(0));
        let watch = {
            let seen = seen.clone();
            move || {
                for i in 0..N {
                    let rec = addr + i * CARD_INFO_SIZE;
                    // SAFETY: the buffer lives until `while_racing` has
                    // joined this thread; the kernel writes it concurrently,
                    // which is what is watched.
                    let (valid, minor) = unsafe {
                        (
                            (rec as *const u8).read_volatile(),
                            ((rec + 56) as *const u32).read_volatile(),
                        )
                    };
                    if valid != 0 && minor == 1 {
                        seen.fetch_add(1, Relaxed);
                    }
                }
            }
        };
        let req = nvclient::request(Escape::CardInfo.nr(), N * CARD_INFO_SIZE);
        let fd = ctl.node().fd();
        while_racing(watch, |race| {
            (0..300).try_for_each(|_| {
                // SAFETY: `addr` is the live buffer of N records.
                if race.call(|| unsafe { libc::ioctl(fd, req as _, addr) }) != 0 {
                    return Err(format!("CARD_INFO: errno {}", crate::sys::errno()));
                }
                Ok(())
            })
        })?;
        let n = seen.load(Relaxed);
        ensure!(n == 0, "GPU 1's record was seen {n} times");
        let _ = &mut buf;
        Ok(())
    })
}

fn remove_refused_while_charged() -> Outcome {
    // A process holds VRAM with only /dev/vgpuctl open.
    let holder = Holder::spawn(|| {
        join_cgroup("/ma").is_ok()
            && session(0)
                .and_then(|s| {
                    s.ctl
                        .alloc_vram(s.client, s.device, 0, 64 * MIB)
                        .map_err(|e| format!("{e:?}"))?;
                    let Session { ctl, _gpu, .. } = s;
                    drop(_gpu);
                    std::mem::forget(ctl);
                    Ok(())
                })
                .is_ok()
    })?;
    let users = read_file("/sys/class/vgpu/vgpu0/users")?;
    let busy = write_file("/sys/class/vgpu/remove", "0");
    let ready = holder.ready;
    drop(holder);
    ensure!(ready, "child could not allocate");
    ensure!(users == "0", "vgpu0 still open: users {users}");
    ensure!(
        busy == Err(libc::EBUSY),
        "remove while memory is charged: {busy:?}"
    );
    write_file("/sys/class/vgpu/remove", "0")
        .map_err(|e| format!("remove after the holder died: {e}"))?;
    Ok(())
}

fn teardown() -> Outcome {
    // vGPU 0 went in the test before.
    write_file("/sys/class/vgpu/remove", "1").map_err(|e| format!("remove 1: {e}"))?;
    sh("rmmod vgpu")?;
    sh("rmmod nvidia")?;
    Ok(())
}
