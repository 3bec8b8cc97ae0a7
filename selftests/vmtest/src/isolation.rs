// SPDX-License-Identifier: GPL-2.0

//! Isolation: what a container may not do never reaches the driver, and
//! what the driver has, vgpu does not refuse. One container (cgroup
//! `/iso`) with vGPU 0 on the double's GPU 0:
//!
//! - every Denied row of the running release's dispatch table, sent from
//!   the container, gets its row's refusal status, raises `calls_denied`
//!   by exactly one, and never reaches the double (its debugfs `ioctls`
//!   counter stays put);
//! - NV_ESC_NUMA_INFO, which every supported release's driver has, is
//!   answered through vgpu as the driver answers it directly;
//! - GPU_GET_ATTACHED_IDS lists the container's GPU only.

use crate::ensure;
use crate::memory::calls_denied;
use crate::session::Session;
use crate::sys::{as_container, read_file, sh, write_file};
use crate::tap::{Outcome, Test};
use crate::tests;
use nvclient::ioctl::Escape;
use nvclient::Error::{Os, Rm};

/// Tests of this suite, in order (later ones rely on earlier ones' state).
pub const TESTS: &[Test] = tests![
    setup,
    numa_info_answered_as_the_driver_does,
    denied_rows_never_reach_the_driver,
    attached_ids_only_the_containers_gpus,
    teardown,
];

const CG: &str = "/iso";
const IOCTLS: &str = "/sys/kernel/debug/nvidia-double/ioctls";

/// The container's session: its vGPU 0 is on GPU 1, device instance 1.
fn session() -> Result<Session, String> {
    Session::open_on("/dev/vgpuctl", "/dev/vgpu0", 1)
}

/// Ioctls the double's nodes have been given since load.
fn double_ioctls() -> Result<u64, String> {
    let t = read_file(IOCTLS)?;
    t.trim()
        .parse()
        .map_err(|e| format!("{IOCTLS}: {t:?}: {e}"))
}

fn setup() -> Outcome {
    sh("modprobe nvidia gpus=2 vram0_mib=4096 vram1_mib=4096")?;
    sh("modprobe vgpu")?;
    std::fs::create_dir_all(format!("/sys/fs/cgroup{CG}")).map_err(|e| format!("mkdir: {e}"))?;
    write_file("/sys/class/vgpu/create", "0").map_err(|e| format!("create: {e}"))?;
    for (f, v) in [("gpu", "1"), ("memory_limit", "1073741824"), ("cgroup", CG)] {
        write_file(&format!("/sys/class/vgpu/vgpu0/{f}"), v).map_err(|e| format!("{f}: {e}"))?;
    }
    Ok(())
}

const NUMA_INFO_SIZE: usize = 560;
/// Where `offline_addresses.numEntries` is (`nv-ioctl-numa.h:56-65`).
const NUMA_COUNT_AT: usize = 552;

/// NUMA_INFO on a GPU node with `count` in `numEntries`: the block back,
/// or the error.
fn numa_info(gpu: &nvclient::Gpu, count: u32) -> Result<Vec<u8>, nvclient::Error> {
    let mut p = vec![0u8; NUMA_INFO_SIZE];
    p[NUMA_COUNT_AT..NUMA_COUNT_AT + 4].copy_from_slice(&count.to_ne_bytes());
    gpu.node().ioctl_direct(Escape::NumaInfo.nr(), &mut p)?;
    Ok(p)
}

/// NV_ESC_NUMA_INFO is in every supported release's headers
/// (`nv-ioctl-numa.h:44`) and handled by its `nv.c` (2241 at 535.288.01,
/// 2728 at 595.45.04): through `/dev/vgpuN` a container gets the driver's
/// own answer, byte for byte (the call reaches the double once), and on
/// the ctl node the driver's `EINVAL` (`NV_ACTUAL_DEVICE_ONLY`); from 550
/// a `numEntries` over 64 is the driver's `EBUSY`.
fn numa_info_answered_as_the_driver_does() -> Outcome {
    let direct = {
        let g = nvclient::Gpu::open("/dev/nvidia1").map_err(|e| format!("nvidia1: {e:?}"))?;
        numa_info(&g, 0).map_err(|e| format!("NUMA_INFO directly: {e:?}"))?
    };
    ensure!(
        direct[0..4] == (-1i32).to_ne_bytes(),
        "the double gives nid {:?}, want -1",
        &direct[0..4]
    );
    let checks_count = !nvclient::speaks().name.starts_with("535.");
    as_container(CG, move || {
        let s = session()?;
        let before = double_ioctls()?;
        let through = numa_info(&s._gpu, 0).map_err(|e| format!("NUMA_INFO via vgpu: {e:?}"))?;
        let after = double_ioctls()?;
        ensure!(
            after == before + 1,
            "NUMA_INFO reached the double {} times, want once",
            after - before
        );
        ensure!(
            through == direct,
            "NUMA_INFO through vgpu differs from the driver's answer"
        );
        let mut p = vec![0u8; NUMA_INFO_SIZE];
        let r = s.ctl.node().ioctl_direct(Escape::NumaInfo.nr(), &mut p);
        ensure!(r == Err(Os(libc::EINVAL)), "NUMA_INFO on vgpuctl: {r:?}");
        let r = numa_info(&s._gpu, 65).map(|_| ());
        let want = if checks_count {
            Err(Os(libc::EBUSY))
        } else {
            Ok(())
        };
        ensure!(r == want, "NUMA_INFO with 65 entries: {r:?}, want {want:?}");
        Ok(())
    })
}

/// Every Denied row of the running release's table, from a process of the
/// container: each gets its row's refusal (a class or a control its
/// `refusal`: for a control NV_ERR_NOT_SUPPORTED, or
/// NV_ERR_INSUFFICIENT_PERMISSIONS for MAKE_REALTIME; an escape the
/// release lacks `EINVAL`), `calls_denied` rises by exactly one per call,
/// and the double's ioctl counter does not move.
fn denied_rows_never_reach_the_driver() -> Outcome {
    let rel = nvclient::speaks();
    // The table has no Denied escape or UVM rows: a refused escape is one
    // the release lacks, a refused UVM command one no row names. A Denied
    // row there must be swept here.
    ensure!(
        rel.escapes.iter().all(|r| r.policy.admits()) && rel.uvm.iter().all(|r| r.policy.admits()),
        "a Denied escape or UVM row: add it to this sweep"
    );
    let controls: Vec<_> = rel.controls.iter().filter(|r| !r.policy.admits()).collect();
    let classes: Vec<_> = rel.classes.iter().filter(|r| !r.policy.admits()).collect();
    let escapes: Vec<Escape> = Escape::ALL
        .iter()
        .copied()
        .filter(|e| rel.escape_rule(*e).is_none())
        .collect();
    // Decided rows that must be among them.
    let decided = [
        "NV2080_CTRL_CMD_RC_SOFT_DISABLE_WATCHDOG",
        "NV2080_CTRL_CMD_GPU_ACQUIRE_COMPUTE_MODE_RESERVATION",
        "NV2080_CTRL_CMD_GPU_RELEASE_COMPUTE_MODE_RESERVATION",
        "NV2080_CTRL_CMD_FB_GET_FB_REGION_INFO",
        "NV2080_CTRL_CMD_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2",
    ];
    if let Some(name) = decided
        .iter()
        .find(|n| !controls.iter().any(|r| r.name == **n))
    {
        return Err(format!("{name} is not Denied in {}'s table", rel.name));
    }
    let swept = controls.len() + classes.len() + escapes.len();
    ensure!(
        swept >= 8,
        "only {swept} Denied rows in {}'s table",
        rel.name
    );
    as_container(CG, move || {
        let s = session()?;
        let seen0 = double_ioctls()?;
        let mut calls = 0u64;
        let mut check = |what: &str, r: Result<(), nvclient::Error>, want| -> Outcome {
            ensure!(r == Err(want), "{what}: {r:?}, want {want:?}");
            calls += 1;
            Ok(())
        };
        for row in &controls {
            let d0 = calls_denied(0)?;
            let mut p = vec![0u8; row.params_size as usize];
            let obj = match row.cmd >> 16 {
                0x0000 => s.client,
                0x0080 => s.device,
                _ => s.subdevice,
            };
            let r = s.ctl.control(s.client, obj, row.cmd, &mut p);
            check(row.name, r, Rm(row.refusal))?;
            let d1 = calls_denied(0)?;
            ensure!(d1 == d0 + 1, "{}: calls_denied {d0} -> {d1}", row.name);
        }
        for row in &classes {
            let d0 = calls_denied(0)?;
            let mut p = vec![0u8; row.params_size as usize];
            let r = s
                .ctl
                .alloc(s.client, s.subdevice, 0, row.class, &mut p)
                .map(|_| ());
            check(row.name, r, Rm(row.refusal))?;
            let d1 = calls_denied(0)?;
            ensure!(d1 == d0 + 1, "{}: calls_denied {d0} -> {d1}", row.name);
        }
        for e in &escapes {
            let d0 = calls_denied(0)?;
            let mut p = [0u8; 8];
            let r = s.ctl.node().ioctl_direct(e.nr(), &mut p);
            check(&format!("escape {e:?}"), r, Os(libc::EINVAL))?;
            let d1 = calls_denied(0)?;
            ensure!(d1 == d0 + 1, "escape {e:?}: calls_denied {d0} -> {d1}");
        }
        let seen = double_ioctls()? - seen0;
        ensure!(
            seen == 0,
            "{seen} of the {calls} refused calls reached the double"
        );
        println!(
            "#   {calls} Denied rows of {} refused",
            nvclient::speaks().name
        );
        Ok(())
    })
}

/// GPU_GET_ATTACHED_IDS on the two-GPU double: the host, directly, gets
/// both GPUs' ids; the container, whose vGPU is on GPU 1, gets GPU 1's id
/// alone, the rest of the list `NV0000_CTRL_GPU_INVALID_ID` (as RM pads
/// it, `gpu_mgr.c:2333-2334` at 595.45.04), so GPU 0 never reaches it.
fn attached_ids_only_the_containers_gpus() -> Outcome {
    use nvclient::abi::{ctrl, GpuGetAttachedIdsParams as Ids, Wire, GPU_INVALID_ID};
    fn ids(s: &Session) -> Result<Vec<u32>, String> {
        let mut p = vec![0u8; Ids::SIZE];
        s.ctl
            .control(
                s.client,
                s.client,
                ctrl::NV0000_CTRL_CMD_GPU_GET_ATTACHED_IDS,
                &mut p,
            )
            .map_err(|e| format!("GET_ATTACHED_IDS: {e:?}"))?;
        let q = Ids::decode(&p);
        let n = q.ids().count();
        ensure!(
            q.gpu_ids[n..].iter().all(|&i| i == GPU_INVALID_ID),
            "a valid id after the first invalid one: {:x?}",
            q.gpu_ids
        );
        Ok(q.ids().collect())
    }
    // GPU 1's id, from its CARD_INFO record (the host's view).
    let host = Session::open_on("/dev/nvidiactl", "/dev/nvidia1", 1)?;
    let all = ids(&host)?;
    ensure!(all.len() == 2, "the host sees {all:x?}, want two ids");
    let gpu1 = {
        let mut buf = vec![0u8; 2 * nvclient::ioctl::CARD_INFO_SIZE];
        host.ctl
            .node()
            .ioctl(Escape::CardInfo.nr(), &mut buf)
            .map_err(|e| format!("CARD_INFO: {e:?}"))?;
        buf.chunks_exact(nvclient::ioctl::CARD_INFO_SIZE)
            .map(nvclient::abi::CardInfo::decode)
            .find(|c| c.minor_number == 1)
            .ok_or("no CARD_INFO record of GPU 1")?
            .gpu_id
    };
    ensure!(all.contains(&gpu1), "GPU 1's id {gpu1:#x} not in {all:x?}");
    as_container(CG, move || {
        let s = session()?;
        let mine = ids(&s)?;
        ensure!(
            mine == [gpu1],
            "the container sees {mine:x?}, want GPU 1's {gpu1:#x} alone"
        );
        Ok(())
    })
}

fn teardown() -> Outcome {
    write_file("/sys/class/vgpu/remove", "0").map_err(|e| format!("remove: {e}"))?;
    sh("rmmod vgpu")?;
    sh("rmmod nvidia")?;
    Ok(())
}
