// SPDX-License-Identifier: GPL-2.0

//! The rows the dispatch table calls Rewritten, driven through vgpu against
//! the driver double, each asserting the rewritten outcome rather than a
//! forwarded one: client handles vgpu picks, FB info showing the vGPU and
//! not the GPU, and scheduling calls that cannot reach another container's
//! TSG. Which test covers which row is listed in `coverage.rs` and checked
//! on the host (`userspace/logic/tests/table.rs`).
//!
//! Two containers share one 4 GiB GPU: `/ra` with a 1 GiB vGPU 0 and `/rb`
//! with a 2 GiB vGPU 1.

use crate::compute::{expect_rm, Enable, Work};
use crate::ensure;
use crate::session::Session;
use crate::sys::{as_container, join_cgroup, read_file, sh, write_file, Holder, Looper, Shared};
use crate::tap::{Outcome, Test};
use crate::tests;
use nvclient::abi::{class, ctrl, fb_info, status, FifoDisableChannelsParams};
use nvclient::{Ctl, Error, Gpu};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// Tests of this suite, in order (later ones rely on the set-up).
pub const TESTS: &[Test] = tests![
    setup,
    client_handles_picked_by_vgpu,
    taken_client_handle_never_recorded,
    fb_info_shows_the_ceiling_not_the_gpu,
    scheduling_another_containers_tsg_refused,
    kernel_copies_only_on_the_callers_objects,
    kernel_copies_answer_as_the_driver_does,
    teardown,
];

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;
/// The GPU's VRAM (`vram0_mib`).
const GPU_VRAM: u64 = 4 * GIB;
/// vGPU 0's ceiling (container `/ra`) and vGPU 1's (`/rb`).
const CEILING: [u64; 2] = [GIB, 2 * GIB];
/// The first handle vgpu picks for a client, and the mask of its range
/// (`CLIENT_HANDLE_BASE | random & 0xf_ffff`, `src/ctl.rs`).
const VGPU_CLIENT_BASE: u32 = 0xc1e0_0000;
/// The double's own client range (`selftests/nvidia/rm/state.rs`).
const DOUBLE_CLIENT_BASE: u32 = 0xc1d0_0000;
const CLIENT_RANGE_MASK: u32 = 0xfff0_0000;
/// The double's default TSG timeslice (`engine.rs`, DEFAULT_TIMESLICE_US).
const DEFAULT_TIMESLICE_US: u64 = 1024;
const MS: u64 = 1_000_000;

const CLIENT_CLASSES: [(u32, &str); 3] = [
    (class::NV01_ROOT, "NV01_ROOT"),
    (class::NV01_ROOT_NON_PRIV, "NV01_ROOT_NON_PRIV"),
    (class::NV01_ROOT_CLIENT, "NV01_ROOT_CLIENT"),
];

fn vgpu_file(id: u32, f: &str) -> String {
    format!("/sys/class/vgpu/vgpu{id}/{f}")
}

fn set(path: &str, v: &str) -> Outcome {
    write_file(path, v).map_err(|e| format!("write {v:?} to {path}: errno {e}"))
}

fn setup() -> Outcome {
    sh("modprobe nvidia gpus=1 vram0_mib=4096")?;
    sh("modprobe vgpu")?;
    for (id, cg) in [(0u32, "/ra"), (1, "/rb")] {
        std::fs::create_dir_all(format!("/sys/fs/cgroup{cg}"))
            .map_err(|e| format!("mkdir {cg}: {e}"))?;
        set("/sys/class/vgpu/create", &id.to_string())?;
        set(&vgpu_file(id, "gpu"), "0")?;
        set(
            &vgpu_file(id, "memory_limit"),
            &CEILING[id as usize].to_string(),
        )?;
        set(&vgpu_file(id, "cgroup"), cg)?;
    }
    Ok(())
}

/// RM_ALLOC of client class `class` asking for handle `want` (0: RM
/// picks), in the NVOS64 layout or the NVOS21 one. RM takes a requested
/// client handle from hRoot and ignores hObjectNew (`entry_points.c:241`,
/// `alloc_free.c:576`, `rs_server.c:612` at 595.45.04; measured on the
/// real 550.163.01 and 535.261.03): hObjectNew carries a decoy that must
/// not be taken.
fn alloc_client(ctl: &Ctl, class: u32, want: u32, v21: bool) -> Result<u32, Error> {
    const DECOY: u32 = 0x0dec_0001;
    if v21 {
        ctl.alloc_v21(want, 0, DECOY, class, &mut [])
    } else {
        ctl.alloc(want, 0, DECOY, class, &mut [])
    }
}

/// A client vgpu recorded is usable: a device and subdevice on the vGPU
/// under it (vgpu refuses both under a client it did not record, with
/// NV_ERR_INVALID_CLIENT), whose FB info shows the ceiling.
fn usable(ctl: &Ctl, h: u32, ceiling: u64) -> Outcome {
    let d = ctl
        .alloc_device(h, 0, 0)
        .map_err(|e| format!("device under {h:#x}: {e:?}"))?;
    let sub = ctl
        .alloc_subdevice(h, d, 0, 0)
        .map_err(|e| format!("subdevice under {h:#x}: {e:?}"))?;
    let info = ctl
        .fb_get_info_v2(h, sub, &[fb_info::RAM_SIZE])
        .map_err(|e| format!("FB info under {h:#x}: {e:?}"))?;
    let got = u64::from(info[0].data) << 10;
    ensure!(
        got == ceiling,
        "RAM_SIZE under {h:#x}: {got}, want {ceiling}"
    );
    Ok(())
}

/// When the caller lets RM pick a client handle (hRoot 0), vgpu picks
/// it from its own range, 0xc1e0_0000..=0xc1ef_ffff, for every client class
/// and both RM_ALLOC layouts; the client is verified, recorded and usable,
/// and gone once freed. Directly, the double picks from 0xc1d0_0000 up: the
/// handle is vgpu's doing. A handle the caller picks is kept.
fn client_handles_picked_by_vgpu() -> Outcome {
    {
        let d = Ctl::open("/dev/nvidiactl").map_err(|e| format!("{e:?}"))?;
        for (c, name) in CLIENT_CLASSES {
            let h = alloc_client(&d, c, 0, false).map_err(|e| format!("{name} directly: {e:?}"))?;
            ensure!(
                h & CLIENT_RANGE_MASK == DOUBLE_CLIENT_BASE,
                "{name} directly: {h:#x}, not in the double's range"
            );
            d.free(h, h, h).map_err(|e| format!("free: {e:?}"))?;
        }
    }
    as_container("/ra", || {
        let ctl = Ctl::open("/dev/vgpuctl").map_err(|e| format!("{e:?}"))?;
        let _g = Gpu::open("/dev/vgpu0").map_err(|e| format!("{e:?}"))?;
        let mut seen = Vec::new();
        for (c, name) in CLIENT_CLASSES {
            for v21 in [false, true] {
                let layout = if v21 { "NVOS21" } else { "NVOS64" };
                let h = alloc_client(&ctl, c, 0, v21)
                    .map_err(|e| format!("{name} ({layout}): {e:?}"))?;
                ensure!(
                    h & CLIENT_RANGE_MASK == VGPU_CLIENT_BASE,
                    "{name} ({layout}): RM-picked handle {h:#x} is not in vgpu's range {VGPU_CLIENT_BASE:#x}..={:#x}",
                    VGPU_CLIENT_BASE | !CLIENT_RANGE_MASK
                );
                ensure!(!seen.contains(&h), "{name} ({layout}): {h:#x} twice");
                seen.push(h);
                usable(&ctl, h, CEILING[0]).map_err(|e| format!("{name} ({layout}): {e}"))?;
                ctl.free(h, h, h)
                    .map_err(|e| format!("{name} ({layout}): free: {e:?}"))?;
                let r = ctl.alloc_device(h, 0, 0);
                ensure!(
                    r == Err(Error::Rm(status::NV_ERR_INVALID_CLIENT)),
                    "{name} ({layout}): device under the freed client {h:#x}: {r:?}, want NV_ERR_INVALID_CLIENT"
                );
            }
        }
        // A handle the caller picks is the caller's.
        for (k, (c, name)) in CLIENT_CLASSES.into_iter().enumerate() {
            let want = 0x5eed_0001 + k as u32;
            let h = alloc_client(&ctl, c, want, false).map_err(|e| format!("{name}: {e:?}"))?;
            ensure!(h == want, "{name}: asked for {want:#x}, got {h:#x}");
            usable(&ctl, h, CEILING[0]).map_err(|e| format!("{name} ({want:#x}): {e}"))?;
        }
        println!("# rewritten: vgpu picked client handles {seen:x?}");
        Ok(())
    })
}

/// A client handle another container's client already has is never
/// recorded as the caller's: asking for it is refused by the driver
/// (NV_ERR_INSERT_DUPLICATE_NAME, RM's answer to a duplicate client),
/// vgpu does not take it for the caller's (a device under it is
/// NV_ERR_INVALID_CLIENT), and the owner's client still works.
fn taken_client_handle_never_recorded() -> Outcome {
    let page = Shared::new()?;
    let pg = &page;
    let owner = Holder::spawn(move || {
        if join_cgroup("/ra").is_err() {
            return false;
        }
        let Ok(ctl) = Ctl::open("/dev/vgpuctl") else {
            return false;
        };
        let Ok(h) = ctl.alloc_root_client() else {
            return false;
        };
        pg.set(0, u64::from(h));
        // Held open (and the client alive) until the holder is killed.
        std::mem::forget(ctl);
        true
    })?;
    ensure!(owner.ready, "the owner in /ra could not set up");
    let taken = page.get(0) as u32;
    ensure!(
        taken & CLIENT_RANGE_MASK == VGPU_CLIENT_BASE,
        "the owner's client {taken:#x}"
    );
    as_container("/rb", move || {
        let ctl = Ctl::open("/dev/vgpuctl").map_err(|e| format!("{e:?}"))?;
        let _g = Gpu::open("/dev/vgpu1").map_err(|e| format!("{e:?}"))?;
        for (c, name) in CLIENT_CLASSES {
            for v21 in [false, true] {
                let r = alloc_client(&ctl, c, taken, v21);
                ensure!(
                    r == Err(Error::Rm(status::NV_ERR_INSERT_DUPLICATE_NAME)),
                    "{name} (v21 {v21}) with /ra's handle {taken:#x}: {r:?}, want NV_ERR_INSERT_DUPLICATE_NAME"
                );
                let d = ctl.alloc_device(taken, 0, 0);
                ensure!(
                    d == Err(Error::Rm(status::NV_ERR_INVALID_CLIENT)),
                    "device under /ra's client {taken:#x} from /rb: {d:?}, want NV_ERR_INVALID_CLIENT"
                );
            }
        }
        // The caller's own clients still work.
        let h = ctl.alloc_root_client().map_err(|e| format!("{e:?}"))?;
        usable(&ctl, h, CEILING[1])
    })?;
    drop(owner);
    Ok(())
}

/// The FB info indices vgpu lowers to the ceiling, those it lowers to the
/// vGPU's free memory, and some it passes through.
const SIZES: [u32; 5] = [
    fb_info::RAM_SIZE,
    fb_info::TOTAL_RAM_SIZE,
    fb_info::USABLE_RAM_SIZE,
    fb_info::HEAP_SIZE,
    fb_info::MAPPABLE_HEAP_SIZE,
];
const FREES: [u32; 2] = [fb_info::HEAP_FREE, fb_info::LARGEST_FREE_REGION_SIZE_KB];
const PASSED: [u32; 2] = [fb_info::BAR1_SIZE, fb_info::BUS_WIDTH];

fn all_indices() -> Vec<u32> {
    SIZES.iter().chain(&FREES).chain(&PASSED).copied().collect()
}

/// FB info through vgpu, V1 (list by pointer) and V2 (list inline), shows
/// the vGPU: every size index is the ceiling where the GPU's own answer is
/// 4 GiB, free memory is the ceiling minus the container's own use (not
/// the GPU's free memory, which another container's allocation lowered),
/// and indices that are not sizes are the GPU's, unchanged.
fn fb_info_shows_the_ceiling_not_the_gpu() -> Outcome {
    // Another container holds 512 MiB of the GPU.
    let other = Holder::spawn(|| {
        if join_cgroup("/rb").is_err() {
            return false;
        }
        let Ok(s) = Session::vgpu(1) else {
            return false;
        };
        let ok = s.ctl.alloc_vram(s.client, s.device, 0, 512 * MIB).is_ok();
        std::mem::forget(s);
        ok
    })?;
    ensure!(other.ready, "/rb could not allocate 512 MiB");
    let idx = all_indices();
    let direct: Vec<u32> = {
        let d = crate::double::session(0)?;
        d.ctl
            .fb_get_info_v2(d.client, d.sub, &idx)
            .map_err(|e| format!("FB info directly: {e:?}"))?
            .iter()
            .map(|e| e.data)
            .collect()
    };
    let kib = |b: u64| (b >> 10) as u32;
    ensure!(
        direct[0] == kib(GPU_VRAM),
        "the GPU's RAM_SIZE is {} KiB, want {}",
        direct[0],
        kib(GPU_VRAM)
    );
    // The GPU's free memory shows the other container's 512 MiB.
    let gpu_free = direct[SIZES.len()];
    ensure!(
        u64::from(gpu_free) << 10 <= GPU_VRAM - 512 * MIB,
        "the GPU's HEAP_FREE {gpu_free} KiB does not show /rb's 512 MiB"
    );
    let direct2 = direct.clone();
    as_container("/ra", move || {
        let s = Session::vgpu(0)?;
        let check = |use_: u64| -> Outcome {
            let v2 = s
                .ctl
                .fb_get_info_v2(s.client, s.subdevice, &idx)
                .map_err(|e| format!("V2: {e:?}"))?;
            let v1 = s
                .ctl
                .fb_get_info_v1(s.client, s.subdevice, &idx)
                .map_err(|e| format!("V1: {e:?}"))?;
            for (form, got) in [("V1", &v1), ("V2", &v2)] {
                for (k, e) in got.iter().enumerate() {
                    ensure!(e.index == idx[k], "{form}: entry {k} is index {}", e.index);
                    let want = if k < SIZES.len() {
                        kib(CEILING[0])
                    } else if k < SIZES.len() + FREES.len() {
                        kib(CEILING[0] - use_)
                    } else {
                        direct2[k]
                    };
                    ensure!(
                        e.data == want,
                        "{form} index {:#x}: {} KiB, want {want} KiB (the GPU says {} KiB)",
                        e.index,
                        e.data,
                        direct2[k]
                    );
                }
            }
            Ok(())
        };
        check(0)?;
        s.ctl
            .alloc_vram(s.client, s.device, 0, 256 * MIB)
            .map_err(|e| format!("alloc: {e:?}"))?;
        check(256 * MIB)
    })?;
    drop(other);
    Ok(())
}

/// A tenant in `/ra` runs work on its TSG and publishes its handles, its
/// TSG's engine time and its TSG's timeslice (as the double reports it).
/// From `/rb`, every scheduling call on that TSG, its channel or its
/// channel through FIFO_DISABLE_CHANNELS is refused with the exact status,
/// and none reaches the double: the tenant's timeslice stays the double's
/// default, and its TSG keeps running. The same calls on `/rb`'s own
/// objects of the wrong kind are NV_ERR_INVALID_OBJECT_HANDLE (the double
/// would answer NV_ERR_NOT_SUPPORTED), and SET_TIMESLICE on its own TSG
/// reaches the double.
fn scheduling_another_containers_tsg_refused() -> Outcome {
    let page = Shared::new()?;
    let pg = &page;
    let tenant = Looper::spawn(move || {
        join_cgroup("/ra").map_err(|e| format!("join /ra: errno {e}"))?;
        let w = Work::open("/dev/vgpuctl", "/dev/vgpu0", false)?;
        w.start(MS)?;
        w.enable(Enable::Tsg, true)
            .map_err(|e| format!("enable: {e:?}"))?;
        pg.set(0, u64::from(w.s.client));
        pg.set(1, u64::from(w.tsg));
        pg.set(2, u64::from(w.ch.h_channel));
        Ok(move || {
            let w = &w;
            w.ch.ring.fill(MS);
            pg.set(3, w.ch.ring.tsg_ns());
            if let Ok(ts) = w.s.ctl.get_timeslice(w.s.client, w.tsg) {
                pg.set(4, ts);
                pg.set(5, pg.get(5) + 1);
            }
            sleep(Duration::from_millis(5));
        })
    })?;
    let wait_for = |what: &str, cond: &dyn Fn() -> bool| -> Outcome {
        let t0 = Instant::now();
        while !cond() {
            ensure!(t0.elapsed() < Duration::from_secs(5), "{what}");
            sleep(Duration::from_millis(5));
        }
        Ok(())
    };
    wait_for("the /ra tenant never ran", &|| page.get(3) > 0)?;
    wait_for("the /ra tenant never read its timeslice", &|| {
        page.get(5) > 0
    })?;
    ensure!(
        page.get(4) == DEFAULT_TIMESLICE_US,
        "the tenant's timeslice is {} before the test",
        page.get(4)
    );
    let (a_client, a_tsg, a_ch) = (page.get(0) as u32, page.get(1) as u32, page.get(2) as u32);
    as_container("/rb", move || {
        let w = Work::open("/dev/vgpuctl", "/dev/vgpu1", false)?;
        let (c, ctl) = (w.s.client, &w.s.ctl);
        let foreign = "on /ra's TSG";
        expect_rm(
            ctl.gpfifo_schedule(a_client, a_tsg, false),
            status::NV_ERR_INVALID_CLIENT,
            &format!("NVA06C GPFIFO_SCHEDULE(disable) {foreign}"),
        )?;
        expect_rm(
            ctl.channel_gpfifo_schedule(a_client, a_ch, false),
            status::NV_ERR_INVALID_CLIENT,
            "NVA06F GPFIFO_SCHEDULE(disable) on /ra's channel",
        )?;
        expect_rm(
            ctl.set_timeslice(a_client, a_tsg, 1),
            status::NV_ERR_INVALID_CLIENT,
            &format!("SET_TIMESLICE {foreign}"),
        )?;
        expect_rm(
            ctl.set_interleave_level(a_client, a_tsg, 2),
            status::NV_ERR_INVALID_CLIENT,
            &format!("SET_INTERLEAVE_LEVEL {foreign}"),
        )?;
        let mut p = FifoDisableChannelsParams {
            b_disable: 1,
            num_channels: 1,
            ..Default::default()
        };
        p.h_client_list[0] = a_client;
        p.h_channel_list[0] = a_ch;
        expect_rm(
            ctl.control_with(
                c,
                w.s.subdevice,
                ctrl::NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS,
                &mut p,
            ),
            status::NV_ERR_INSUFFICIENT_PERMISSIONS,
            "FIFO_DISABLE_CHANNELS(disable) listing /ra's channel",
        )?;
        // The caller's own client, objects of the wrong kind.
        expect_rm(
            ctl.gpfifo_schedule(c, w.ch.h_channel, true),
            status::NV_ERR_INVALID_OBJECT_HANDLE,
            "NVA06C GPFIFO_SCHEDULE on the caller's channel",
        )?;
        expect_rm(
            ctl.channel_gpfifo_schedule(c, w.tsg, true),
            status::NV_ERR_INVALID_OBJECT_HANDLE,
            "NVA06F GPFIFO_SCHEDULE on the caller's TSG",
        )?;
        expect_rm(
            ctl.set_timeslice(c, w.ch.h_channel, 1),
            status::NV_ERR_INVALID_OBJECT_HANDLE,
            "SET_TIMESLICE on the caller's channel",
        )?;
        expect_rm(
            ctl.set_interleave_level(c, w.s.subdevice, 2),
            status::NV_ERR_INVALID_OBJECT_HANDLE,
            "SET_INTERLEAVE_LEVEL on the caller's subdevice",
        )?;
        // The caller's own TSG: applied by the double.
        ctl.set_timeslice(c, w.tsg, 2048)
            .map_err(|e| format!("SET_TIMESLICE on the caller's TSG: {e:?}"))?;
        let ts = ctl.get_timeslice(c, w.tsg);
        ensure!(
            ts == Ok(2048),
            "the caller's TSG's timeslice after SET_TIMESLICE 2048: {ts:?}"
        );
        ctl.set_interleave_level(c, w.tsg, 2)
            .map_err(|e| format!("SET_INTERLEAVE_LEVEL on the caller's TSG: {e:?}"))?;
        Ok(())
    })?;
    // The refused calls never reached the double: the tenant's timeslice
    // (read fresh from the double after the calls) is still the default,
    // and its TSG still runs.
    let reads = page.get(5);
    wait_for("the /ra tenant stopped reading its timeslice", &|| {
        page.get(5) > reads + 1
    })?;
    ensure!(
        page.get(4) == DEFAULT_TIMESLICE_US,
        "/ra's TSG's timeslice is {} us after /rb's refused SET_TIMESLICE, want {DEFAULT_TIMESLICE_US}",
        page.get(4)
    );
    let ns0 = page.get(3);
    wait_for("/ra's TSG stopped running", &|| page.get(3) > ns0)?;
    drop(tenant);
    Ok(())
}

fn teardown() -> Outcome {
    for id in [0u32, 1] {
        let used = read_file(&vgpu_file(id, "memory_used"))?;
        ensure!(used == "0", "vgpu{id} still charged {used}");
        set("/sys/class/vgpu/remove", &id.to_string())?;
    }
    sh("rmmod vgpu")?;
    sh("rmmod nvidia")?;
    Ok(())
}

/// A process of container `/ra` holding a session on vGPU 0, and its
/// client, device and subdevice handles (for calls on another
/// container's objects). Dropping the `Looper` ends it.
fn ra_tenant() -> Result<(Looper, u32, u32, u32), String> {
    let page = Shared::new()?;
    let pg = &page;
    let tenant = Looper::spawn(move || {
        join_cgroup("/ra").map_err(|e| format!("join /ra: errno {e}"))?;
        let s = Session::open("/dev/vgpuctl", "/dev/vgpu0")?;
        pg.set(0, u64::from(s.client));
        pg.set(1, u64::from(s.device));
        pg.set(2, u64::from(s.subdevice));
        pg.set(3, 1);
        Ok(move || {
            let _s = &s;
            sleep(Duration::from_millis(5));
        })
    })?;
    let t0 = Instant::now();
    while page.get(3) == 0 {
        ensure!(
            t0.elapsed() < Duration::from_secs(5),
            "the /ra tenant never opened"
        );
        sleep(Duration::from_millis(5));
    }
    Ok((
        tenant,
        page.get(0) as u32,
        page.get(1) as u32,
        page.get(2) as u32,
    ))
}

fn kernel_copies_only_on_the_callers_objects() -> Outcome {
    // GPU_GET_GID_INFO is a `Kernel` row: vgpu runs it through the kernel
    // interface, whose kernel privilege skips RM's own check that a client
    // is the caller's. On the caller's subdevice it is answered at once,
    // even when the caller's vGPU has no window (share 0) and forwarded
    // calls wait; on another container's it must be refused as the driver
    // refuses it, not answered with that container's GPU.
    let (tenant, a_client, _, a_sub) = ra_tenant()?;
    let direct = {
        let d = Session::open("/dev/nvidiactl", "/dev/nvidia0")?;
        d.ctl
            .gpu_uuid_text(d.client, d.subdevice)
            .map_err(|e| format!("GID directly: {e:?}"))?
    };
    let r = as_container("/rb", move || {
        let w = Work::open("/dev/vgpuctl", "/dev/vgpu1", false)?;
        let (c, sub, ctl) = (w.s.client, w.s.subdevice, &w.s.ctl);
        // No window: forwarded controls wait; this one must not.
        set(&vgpu_file(1, "compute_share"), "0")?;
        sleep(Duration::from_millis(120));
        let t0 = Instant::now();
        let own = ctl.gpu_uuid_text(c, sub);
        let took = t0.elapsed();
        set(&vgpu_file(1, "compute_share"), "100")?;
        let own = own.map_err(|e| format!("GID of the caller's subdevice: {e:?}"))?;
        ensure!(
            own == direct,
            "GID through vgpu {own:?}, directly {direct:?}"
        );
        ensure!(
            took < Duration::from_millis(300),
            "GID waited {took:?} for a window: not run on kernel copies"
        );
        // Another container's client and subdevice: the driver's answer.
        expect_rm(
            ctl.gid_info(a_client, a_sub, 0).map(|_| ()),
            status::NV_ERR_INVALID_CLIENT,
            "GPU_GET_GID_INFO on /ra's subdevice",
        )?;
        // A wrong params size is the driver's to answer: refused.
        let mut short = [0u8; 8];
        let r = ctl.control(c, sub, ctrl::NV2080_CTRL_CMD_GPU_GET_GID_INFO, &mut short);
        ensure!(
            matches!(r, Err(Error::Rm(_))),
            "GID_INFO with 8 bytes of params: {r:?}"
        );
        Ok(())
    });
    drop(tenant);
    r
}

fn kernel_copies_answer_as_the_driver_does() -> Outcome {
    // Every `Kernel` row of the running release's dispatch table (its
    // sizes and rows differ from the base table's on older releases), sent through vgpu on
    // the caller's own device or subdevice and directly to the driver on
    // the same GPU: the status and the params bytes must be the same. They
    // must come back while the caller's vGPU has no window (share 0), as a
    // forwarded call would not (it waits; a guard opens the window again
    // after 3 s, so a row that is forwarded fails here rather than hangs).
    // On another container's objects each must get the forwarded path's
    // answer (the driver refuses a client that is not the caller's), not
    // the kernel interface's, which sees every client.
    use std::sync::atomic::{AtomicBool, Ordering};
    use vgpu_logic::nv::table::ControlHandler;
    let rel = nvclient::speaks();
    let rows: Vec<_> = rel
        .controls
        .iter()
        .filter(|r| r.handler == ControlHandler::Kernel)
        .collect();
    ensure!(rows.len() >= 40, "{} Kernel rows", rows.len());
    let (tenant, a_client, a_dev, a_sub) = ra_tenant()?;
    // The driver's answers, on a direct session of the same GPU.
    let direct = Session::open("/dev/nvidiactl", "/dev/nvidia0")?;
    let on = |s: &Session, cmd: u32| {
        if cmd >> 16 == 0x0080 {
            s.device
        } else {
            s.subdevice
        }
    };
    let mut want = Vec::new();
    for r in &rows {
        let mut p = vec![0u8; r.params_size as usize];
        let st = direct
            .ctl
            .control(direct.client, on(&direct, r.cmd), r.cmd, &mut p);
        want.push((st, p));
    }
    let rows = &rows;
    let want = &want;
    let r = as_container("/rb", move || {
        let w = Work::open("/dev/vgpuctl", "/dev/vgpu1", false)?;
        let (c, ctl) = (w.s.client, &w.s.ctl);
        set(&vgpu_file(1, "compute_share"), "0")?;
        sleep(Duration::from_millis(120));
        let (done, fired) = (AtomicBool::new(false), AtomicBool::new(false));
        let (got, took) = std::thread::scope(|sc| {
            sc.spawn(|| {
                let t0 = Instant::now();
                while !done.load(Ordering::Acquire) {
                    if t0.elapsed() > Duration::from_secs(3) {
                        fired.store(true, Ordering::Release);
                        let _ = set(&vgpu_file(1, "compute_share"), "100");
                        return;
                    }
                    sleep(Duration::from_millis(10));
                }
            });
            let t0 = Instant::now();
            let got: Vec<_> = rows
                .iter()
                .map(|r| {
                    let mut p = vec![0u8; r.params_size as usize];
                    let st = ctl.control(c, on(&w.s, r.cmd), r.cmd, &mut p);
                    (st, p)
                })
                .collect();
            let took = t0.elapsed();
            done.store(true, Ordering::Release);
            (got, took)
        });
        set(&vgpu_file(1, "compute_share"), "100")?;
        for ((r, (gs, gp)), (ws, wp)) in rows.iter().zip(&got).zip(want) {
            ensure!(
                format!("{gs:?}") == format!("{ws:?}"),
                "{}: through vgpu {gs:?}, directly {ws:?}",
                r.name
            );
            ensure!(gp == wp, "{}: the params differ from the driver's", r.name);
        }
        ensure!(
            !fired.load(Ordering::Acquire),
            "{} controls took {took:?} with no window: one waited for it, not run on kernel copies",
            rows.len()
        );
        // Another container's device and subdevice: forwarded, refused.
        for r in rows {
            let obj = if r.cmd >> 16 == 0x0080 { a_dev } else { a_sub };
            let mut p = vec![0u8; r.params_size as usize];
            expect_rm(
                ctl.control(a_client, obj, r.cmd, &mut p),
                status::NV_ERR_INVALID_CLIENT,
                &format!("{} on /ra's object", r.name),
            )?;
        }
        Ok(())
    });
    drop(tenant);
    r
}
