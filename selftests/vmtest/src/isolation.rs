// SPDX-License-Identifier: GPL-2.0

//! Isolation: what a container may not do never reaches the driver, and
//! what the driver has, vgpu does not refuse. One container (cgroup
//! `/iso`) with vGPU 0 on the double's GPU 0:
//!
//! - every Denied row of the running release's dispatch table, sent from
//!   the container, gets its row's refusal status, raises `calls_denied`
//!   by exactly one, and never reaches the double (its debugfs `ioctls`
//!   counter stays put, and so does the row's own count in `calls`);
//! - every forwarded control, class and escape row reaches the double
//!   exactly once per call, a control or class with the container's own
//!   client (the double's `calls` names the client of each row's last
//!   call);
//! - NV_ESC_NUMA_INFO, which every supported release's driver has, is
//!   answered through vgpu as the driver answers it directly;
//! - GPU_GET_ATTACHED_IDS lists the container's GPU only.
//! - GPU_GET_PROBED_IDS, GET_DEVICE_IDS and GET_ACTIVE_DEVICE_IDS list it
//!   alone too; the NV0000 controls that name a
//!   GPU by id (ID info, UUID, attach) are refused for GPU 0, as RM refuses
//!   an id it does not have, without reaching the driver.
//! - GT200_DEBUGGER naming a client outside the container is refused as RM
//!   refuses a client it does not have, without reaching the driver.
//! - the checked controls (`ControlHandler::Checked`): a TSG's TPC
//!   partition mode, the notifiers a tenant arms, the thermal opcodes it
//!   runs and the duration of its clock boost reach the double as vgpu
//!   checked them, or are refused with RM's status, counted in
//!   `calls_denied`, and never reach the double.
//! - the compute-mode reservation is the vGPU's own: taken and released
//!   through vgpu as RM does in compute mode RULES_NONE, it never reaches
//!   the double, whose GPU-wide reservation the host keeps.

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
    forwarded_rows_reach_the_driver_with_the_containers_client,
    attached_ids_only_the_containers_gpus,
    gpu_ids_of_other_gpus_refused,
    debugger_names_only_the_containers_clients,
    os_event_names_only_the_containers_clients,
    os_events_are_the_containers_own,
    tpc_partition_mode_only_on_own_tsgs,
    notifiers_of_other_tenants_refused,
    thermal_only_get_opcodes,
    perf_boost_cut_to_a_second,
    compute_reservation_is_the_vgpus_own,
    teardown,
];

const CG: &str = "/iso";
const IOCTLS: &str = "/sys/kernel/debug/nvidia-double/ioctls";
const CALLS: &str = "/sys/kernel/debug/nvidia-double/calls";

/// The double's per-row counts (debugfs `calls`): `(kind, number)` to
/// (calls, client of the last call).
type Calls = std::collections::HashMap<(String, u32), (u64, u32)>;

fn double_calls() -> Result<Calls, String> {
    let t = read_file(CALLS)?;
    let hex = |w: &str| u32::from_str_radix(w.trim_start_matches("0x"), 16);
    let mut m = Calls::new();
    for l in t.lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        let bad = || format!("{CALLS}: {l:?}");
        ensure!(w.len() == 4, "{}", bad());
        if w[0] == "dropped" {
            ensure!(w[2] == "0", "the double dropped {} rows' counts", w[2]);
            continue;
        }
        let n = hex(w[1]).map_err(|_| bad())?;
        let c: u64 = w[2].parse().map_err(|_| bad())?;
        let h = hex(w[3]).map_err(|_| bad())?;
        m.insert((w[0].to_string(), n), (c, h));
    }
    Ok(m)
}

/// How many more calls of `(kind, number)` `after` has than `before`, and
/// the client of the last.
fn calls_of(before: &Calls, after: &Calls, kind: &str, n: u32) -> (u64, u32) {
    let key = (kind.to_string(), n);
    let b = before.get(&key).map_or(0, |v| v.0);
    after.get(&key).map_or((0, 0), |&(c, h)| (c - b, h))
}

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
        "NV0000_CTRL_CMD_OS_UNIX_EXPORT_OBJECT_TO_FD",
        "NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECT_FROM_FD",
        "NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECTS_FROM_FD",
        "NV00FD_CTRL_CMD_ATTACH_GPU",
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
        let rows0 = double_calls()?;
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
        let rows = double_calls()?;
        let reached: Vec<String> = controls
            .iter()
            .map(|r| ("control", r.cmd, r.name))
            .chain(classes.iter().map(|r| ("class", r.class, r.name)))
            .filter(|(k, n, _)| calls_of(&rows0, &rows, k, *n).0 != 0)
            .map(|(_, _, name)| name.to_string())
            .chain(
                escapes
                    .iter()
                    .filter(|e| calls_of(&rows0, &rows, "escape", u32::from(e.nr())).0 != 0)
                    .map(|e| format!("escape {e:?}")),
            )
            .collect();
        ensure!(
            reached.is_empty(),
            "Denied rows the double counted: {reached:?}"
        );
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

/// Every forwarded row of the running release's table (controls and
/// classes whose handler is `Forward`, escapes whose handler is `Forward`),
/// sent once from a process of the container with zeroed params: each
/// reaches the double exactly once (its row's count in debugfs `calls`
/// rises by one, whatever the double answers), a control or class with
/// the container's own client, and none is counted as denied.
fn forwarded_rows_reach_the_driver_with_the_containers_client() -> Outcome {
    use nvclient::ioctl::SizeRule;
    use nvclient::table::{ClassHandler, ControlHandler, EscapeHandler};
    let rel = nvclient::speaks();
    let controls: Vec<_> = rel
        .controls
        .iter()
        .filter(|r| r.policy.admits() && r.handler == ControlHandler::Forward)
        .collect();
    let classes: Vec<_> = rel
        .classes
        .iter()
        .filter(|r| r.policy.admits() && r.handler == ClassHandler::Forward)
        .collect();
    let escapes: Vec<_> = rel
        .escapes
        .iter()
        .filter(|r| r.policy.admits() && r.handler == EscapeHandler::Forward)
        // The wrapper of the large blocks: zeroed, it names no escape, and
        // every large call above goes through it.
        .filter(|r| r.escape != Escape::IoctlXferCmd)
        .map(|r| match r.size {
            SizeRule::Exact(n) | SizeRule::OneOf(n, _) | SizeRule::Records(n) => (r, n),
            SizeRule::Any => (r, 8),
        })
        .collect();
    ensure!(
        controls.len() >= 40 && classes.len() >= 5,
        "{} forwarded controls, {} classes",
        controls.len(),
        classes.len()
    );
    as_container(CG, move || {
        let s = session()?;
        let d0 = calls_denied(0)?;
        let before = double_calls()?;
        for row in &controls {
            let mut p = vec![0u8; row.params_size as usize];
            let obj = match row.cmd >> 16 {
                0x0000 => s.client,
                0x0080 => s.device,
                _ => s.subdevice,
            };
            let _ = s.ctl.control(s.client, obj, row.cmd, &mut p);
        }
        for row in &classes {
            let mut p = vec![0u8; row.params_size as usize];
            let _ = s.ctl.alloc(s.client, s.subdevice, 0, row.class, &mut p);
        }
        for (row, size) in &escapes {
            let mut p = vec![0u8; *size];
            let _ = if row.nodes.admits(true) {
                s.ctl.node().ioctl(row.nr, &mut p)
            } else {
                s._gpu.node().ioctl(row.nr, &mut p)
            };
        }
        let after = double_calls()?;
        let mut wrong = Vec::new();
        for row in &controls {
            let (n, h) = calls_of(&before, &after, "control", row.cmd);
            if n != 1 || h != s.client {
                wrong.push(format!("{}: {n} calls, client {h:#x}", row.name));
            }
        }
        for row in &classes {
            let (n, h) = calls_of(&before, &after, "class", row.class);
            if n != 1 || h != s.client {
                wrong.push(format!("{}: {n} calls, client {h:#x}", row.name));
            }
        }
        for (row, _) in &escapes {
            let (n, _) = calls_of(&before, &after, "escape", u32::from(row.nr));
            if n != 1 {
                wrong.push(format!("escape {:?}: {n} calls", row.escape));
            }
        }
        ensure!(
            wrong.is_empty(),
            "forwarded rows that did not reach the double once with client {:#x}: {wrong:?}",
            s.client
        );
        let d1 = calls_denied(0)?;
        ensure!(d1 == d0, "calls_denied {d0} -> {d1} for forwarded rows");
        println!(
            "#   {} controls, {} classes, {} escapes forwarded on {}",
            controls.len(),
            classes.len(),
            escapes.len(),
            rel.name
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

/// The ids of the double's GPU 0 and GPU 1, from their CARD_INFO records
/// (the host's view, on `/dev/nvidiactl` directly).
fn gpu_ids(host: &Session) -> Result<(u32, u32), String> {
    use nvclient::abi::Wire;
    let mut buf = vec![0u8; 2 * nvclient::ioctl::CARD_INFO_SIZE];
    host.ctl
        .node()
        .ioctl(Escape::CardInfo.nr(), &mut buf)
        .map_err(|e| format!("CARD_INFO: {e:?}"))?;
    let id = |minor| {
        buf.chunks_exact(nvclient::ioctl::CARD_INFO_SIZE)
            .map(nvclient::abi::CardInfo::decode)
            .find(|c| c.minor_number == minor)
            .map(|c| c.gpu_id)
            .ok_or(format!("no CARD_INFO record of GPU {minor}"))
    };
    Ok((id(0)?, id(1)?))
}

/// The NV0000 controls that name a GPU by id, from the container (vGPU on
/// GPU 1): for GPU 1 each is answered by the driver; for GPU 0, which the
/// container has no vGPU on, each gets the status RM gives an id it does
/// not have (`NV_ERR_INVALID_ARGUMENT` from ID_INFO_V2 and the attach
/// checks, `client_resource.c:1605-1727` at 595.45.04 and `gpu_mgr.c`;
/// `NV_ERR_OBJECT_NOT_FOUND` from UUID_FROM_GPU_ID, `:4633-4634`) and
/// never reaches the double, which knows GPU 0 and would answer. And
/// GPU_GET_PROBED_IDS lists GPU 1 alone, the excluded list empty.
fn gpu_ids_of_other_gpus_refused() -> Outcome {
    use nvclient::abi::{ctrl, status::*, GPU_INVALID_ID};
    let host = Session::open_on("/dev/nvidiactl", "/dev/nvidia1", 1)?;
    let (gpu0, gpu1) = gpu_ids(&host)?;
    // ASYNC_ATTACH_ID and GET_ACTIVE_DEVICE_IDS came in 550: 535's table
    // lacks them (`nv::release`).
    let has_async = nvclient::speaks()
        .controls
        .iter()
        .any(|r| r.cmd == 0x0000_0289 && r.policy.admits());
    let probed_size = nvclient::speaks()
        .controls
        .iter()
        .find(|r| r.cmd == ctrl::NV0000_CTRL_CMD_GPU_GET_PROBED_IDS)
        .ok_or("no GET_PROBED_IDS row")?
        .params_size as usize;
    as_container(CG, move || {
        let s = session()?;
        let ask = |cmd: u32, p: &mut [u8]| s.ctl.control(s.client, s.client, cmd, p);
        let id_info = |id: u32| {
            let mut p = vec![0u8; 32];
            p[..4].copy_from_slice(&id.to_ne_bytes());
            ask(ctrl::NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2, &mut p).map(|_| p)
        };
        let uuid = |id: u32| {
            let mut p = vec![0u8; 268];
            p[..4].copy_from_slice(&id.to_ne_bytes());
            ask(0x0000_0275, &mut p)
        };
        let attach = |ids: &[u32]| {
            let mut p = vec![0xffu8; 132];
            for (i, id) in ids.iter().enumerate() {
                p[4 * i..4 * i + 4].copy_from_slice(&id.to_ne_bytes());
            }
            ask(0x0000_0215, &mut p)
        };
        let async_attach = |id: u32| ask(0x0000_0289, &mut id.to_ne_bytes());
        // Its own GPU: the driver's answers.
        let own = id_info(gpu1).map_err(|e| format!("ID_INFO_V2 of GPU 1: {e:?}"))?;
        ensure!(
            own[8..12] == 1u32.to_ne_bytes(),
            "ID_INFO_V2 of GPU 1: device instance {:?}, want 1",
            &own[8..12]
        );
        uuid(gpu1).map_err(|e| format!("UUID of GPU 1: {e:?}"))?;
        attach(&[gpu1]).map_err(|e| format!("ATTACH_IDS of GPU 1: {e:?}"))?;
        if has_async {
            async_attach(gpu1).map_err(|e| format!("ASYNC_ATTACH_ID of GPU 1: {e:?}"))?;
        }
        // GPU 0's id: refused by vgpu, the double never asked.
        let seen0 = double_ioctls()?;
        let r = id_info(gpu0).map(|_| ());
        ensure!(
            r == Err(Rm(NV_ERR_INVALID_ARGUMENT)),
            "ID_INFO_V2 of GPU 0: {r:?}"
        );
        let r = uuid(gpu0);
        ensure!(
            r == Err(Rm(NV_ERR_OBJECT_NOT_FOUND)),
            "UUID of GPU 0: {r:?}"
        );
        let r = attach(&[gpu1, gpu0]);
        ensure!(
            r == Err(Rm(NV_ERR_INVALID_ARGUMENT)),
            "ATTACH_IDS of GPUs 1, 0: {r:?}"
        );
        if has_async {
            let r = async_attach(gpu0);
            ensure!(
                r == Err(Rm(NV_ERR_INVALID_ARGUMENT)),
                "ASYNC_ATTACH_ID of GPU 0: {r:?}"
            );
        }
        let seen = double_ioctls()? - seen0;
        ensure!(
            seen == 0,
            "{seen} of the calls naming GPU 0 reached the double"
        );
        // The device-instance mask: GPU 1's instance (1) alone.
        let mut p = [0u8; 4];
        ask(0x0000_0204, &mut p).map_err(|e| format!("GET_DEVICE_IDS: {e:?}"))?;
        let mask = u32::from_ne_bytes(p);
        ensure!(
            mask == 1 << 1,
            "the container's device mask {mask:#x}, want 0x2"
        );
        // The active devices (from 550): GPU 1 alone.
        if has_async {
            let mut p = vec![0u8; 4 + 256 * 12];
            ask(0x0000_0288, &mut p).map_err(|e| format!("GET_ACTIVE_DEVICE_IDS: {e:?}"))?;
            let word = |i: usize| u32::from_ne_bytes([p[i], p[i + 1], p[i + 2], p[i + 3]]);
            ensure!(
                word(0) == 1 && word(4) == gpu1,
                "the container's active devices: {} first {:#x}, want GPU 1's {gpu1:#x} alone",
                word(0),
                word(4)
            );
        }
        // The probed list: GPU 1 alone.
        let mut p = vec![0u8; probed_size];
        ask(ctrl::NV0000_CTRL_CMD_GPU_GET_PROBED_IDS, &mut p)
            .map_err(|e| format!("GET_PROBED_IDS: {e:?}"))?;
        let words: Vec<u32> = p
            .chunks_exact(4)
            .map(|w| u32::from_ne_bytes([w[0], w[1], w[2], w[3]]))
            .collect();
        ensure!(
            words[0] == gpu1 && words[1..64].iter().all(|&w| w == GPU_INVALID_ID),
            "the container's probed and excluded lists: {:x?}, want GPU 1's {gpu1:#x} alone",
            &words[..64]
        );
        Ok(())
    })
}

/// GT200_DEBUGGER from the container: with `hAppClient` a client of the
/// host's (not the container's), vgpu refuses it with
/// `NV_ERR_INVALID_OBJECT_HANDLE`, RM's status for a client it does not
/// have, and the double never sees it (it would look the client up
/// globally, as RM does); with 0 (the caller's own client) or the
/// container's own client it reaches the double, which refuses the
/// subdevice named as the compute object (`NV_ERR_INVALID_OBJECT`,
/// `kernel_sm_debugger_session.c:304-308` at 595.45.04).
fn debugger_names_only_the_containers_clients() -> Outcome {
    use nvclient::abi::status::NV_ERR_INVALID_OBJECT;
    // GT200_DEBUGGER_ALLOC_PARAMETERS: hDebuggerClient_Obsolete,
    // hAppClient, hClass3dObject; allocated under the device.
    names_only_the_containers_clients("a debugger", NV_ERR_INVALID_OBJECT, |s, app, obj| {
        let mut p = words(&[0, app, obj]);
        s.ctl.alloc(s.client, s.device, 0, 0x83de, &mut p).map(drop)
    })
}

/// Whether the running release's table admits control `cmd`. A release
/// that lacks it refuses it by default deny (`NV_ERR_NOT_SUPPORTED`,
/// counted, never forwarded): [`absent`] checks that instead.
fn has_control(cmd: u32) -> bool {
    nvclient::speaks()
        .controls
        .iter()
        .any(|r| r.cmd == cmd && r.policy.admits())
}

/// Sends control `cmd` from the container's session `s` on `obj`: its
/// result, how many times it reached the double (its row's count in
/// debugfs `calls`, with the container's client), and by how much
/// `calls_denied` rose.
fn checked_call(
    s: &Session,
    obj: u32,
    cmd: u32,
    p: &mut [u8],
) -> Result<(nvclient::Result<()>, u64, u64), String> {
    let d0 = calls_denied(0)?;
    let before = double_calls()?;
    let r = s.ctl.control(s.client, obj, cmd, p);
    let (n, h) = calls_of(&before, &double_calls()?, "control", cmd);
    ensure!(
        n == 0 || h == s.client,
        "{cmd:#x} reached the double with client {h:#x}, not {:#x}",
        s.client
    );
    Ok((r, n, calls_denied(0)? - d0))
}

/// Control `cmd`, which the running release lacks, sent from the
/// container with `p` on `obj` (the device for NV0080, else the
/// subdevice): refused as RM refuses a command it does not have.
fn absent(name: &str, cmd: u32, mut p: Vec<u8>) -> Outcome {
    use nvclient::abi::status::NV_ERR_NOT_SUPPORTED;
    println!("#   no {name} row on this release: refused by default deny");
    as_container(CG, move || {
        let s = session()?;
        let obj = if cmd >> 16 == 0x0080 {
            s.device
        } else {
            s.subdevice
        };
        refused(
            name,
            NV_ERR_NOT_SUPPORTED,
            checked_call(&s, obj, cmd, &mut p)?,
        )
    })
}

/// A call vgpu must pass: it reached the double once and was not counted
/// as denied.
fn passed(what: &str, (r, n, d): (nvclient::Result<()>, u64, u64)) -> Outcome {
    ensure!(
        n == 1 && d == 0,
        "{what}: {n} calls reached the double, calls_denied +{d} ({r:?})"
    );
    Ok(())
}

/// A call vgpu must refuse with `status`: it never reached the double and
/// raised `calls_denied` by one.
fn refused(what: &str, status: u32, (r, n, d): (nvclient::Result<()>, u64, u64)) -> Outcome {
    ensure!(r == Err(Rm(status)), "{what}: {r:?}, want {status:#x}");
    ensure!(
        n == 0 && d == 1,
        "{what}: {n} calls reached the double, calls_denied +{d}"
    );
    Ok(())
}

/// NV0080_CTRL_CMD_GR_SET_TPC_PARTITION_MODE from the container: on its
/// own TSG it reaches the double; naming the host's TSG, or an object of
/// its own that is not a TSG (its subdevice), it is refused with
/// `NV_ERR_OBJECT_NOT_FOUND`, RM's status for a handle the client lacks
/// (`rs_client.c:390-392` at 595.45.04), before the driver.
fn tpc_partition_mode_only_on_own_tsgs() -> Outcome {
    use nvclient::abi::status::*;
    const CMD: u32 = 0x0080_1108;
    if !has_control(CMD) {
        return absent("SET_TPC_PARTITION_MODE", CMD, vec![0; 32]);
    }
    // The host's TSG, under a handle the container's objects do not have.
    const THEIRS: u32 = 0x5a5a_0001;
    let host = Session::open_on("/dev/nvidiactl", "/dev/nvidia1", 1)?;
    let theirs = host
        .ctl
        .alloc_tsg(host.client, host.device, THEIRS, nvclient::tsg_params(0))
        .map_err(|e| format!("the host's TSG: {e:?}"))?;
    as_container(CG, move || {
        let s = session()?;
        let mine = s
            .ctl
            .alloc_tsg(s.client, s.device, 0, nvclient::tsg_params(0))
            .map_err(|e| format!("the container's TSG: {e:?}"))?;
        // hChannelGroup, mode STATIC, bEnableAllTpcs, grRouteInfo.
        let params = |tsg: u32| {
            let mut p = vec![0u8; 32];
            p[..4].copy_from_slice(&tsg.to_ne_bytes());
            p[4..8].copy_from_slice(&1u32.to_ne_bytes());
            p
        };
        passed(
            "the mode of its own TSG",
            checked_call(&s, s.device, CMD, &mut params(mine))?,
        )?;
        ensure!(
            theirs != mine && mine != s.subdevice,
            "TSG handles: the host's {theirs:#x}, the container's {mine:#x}"
        );
        for (what, h) in [("the host's TSG", theirs), ("its subdevice", s.subdevice)] {
            refused(
                &format!("the mode of {what}"),
                NV_ERR_OBJECT_NOT_FOUND,
                checked_call(&s, s.device, CMD, &mut params(h))?,
            )?;
        }
        drop(host);
        Ok(())
    })
}

/// NV2080_CTRL_CMD_EVENT_SET_NOTIFICATION from the container: an engine's
/// non-stall notifier (GR0, 12) and CLOCKS_CHANGE (119) reach the double;
/// RC_ERROR (37, the Xid of any channel on the GPU), PHYSICAL_PAGE_FAULT
/// (121) and an index past every release's last are refused with
/// `NV_ERR_INVALID_ARGUMENT`, RM's status for a bad index
/// (`subdevice_ctrl_event_kernel.c:95-99` at 595.45.04), before the driver.
fn notifiers_of_other_tenants_refused() -> Outcome {
    use nvclient::abi::status::*;
    const CMD: u32 = 0x2080_0301;
    if !has_control(CMD) {
        return absent("EVENT_SET_NOTIFICATION", CMD, vec![0; 20]);
    }
    as_container(CG, move || {
        let s = session()?;
        // event, action REPEAT (2), the rest 0.
        let params = |event: u32| {
            let mut p = vec![0u8; 20];
            p[..4].copy_from_slice(&event.to_ne_bytes());
            p[4..8].copy_from_slice(&2u32.to_ne_bytes());
            p
        };
        for event in [12, 119] {
            passed(
                &format!("notifier {event}"),
                checked_call(&s, s.subdevice, CMD, &mut params(event))?,
            )?;
        }
        for event in [37, 121, 1000] {
            refused(
                &format!("notifier {event}"),
                NV_ERR_INVALID_ARGUMENT,
                checked_call(&s, s.subdevice, CMD, &mut params(event))?,
            )?;
        }
        Ok(())
    })
}

/// NV2080_CTRL_CMD_THERMAL_SYSTEM_EXECUTE_V2 (580 on) from the container:
/// a list of GET opcodes reaches the double; a list with one opcode that
/// is not a GET (0x1501), one of 33 instructions, or one of another API
/// version is refused with `NV_ERR_INVALID_ARGUMENT`
/// (`subdevice_ctrl_gpu_kernel.c:4001-4003` at 595.45.04), before the
/// driver. Before 580 the control does not exist: refused by default deny.
fn thermal_only_get_opcodes() -> Outcome {
    use nvclient::abi::status::*;
    const CMD: u32 = 0x2080_0513;
    if !has_control(CMD) {
        return absent("THERMAL_SYSTEM_EXECUTE_V2", CMD, vec![0; 1432]);
    }
    as_container(CG, move || {
        let s = session()?;
        // Version 1.0, 44-byte instructions, `n` of them with `ops`.
        let params = |version: u32, n: u32, ops: &[u32]| {
            let mut p = vec![0u8; 1432];
            let mut put = |at: usize, v: u32| p[at..at + 4].copy_from_slice(&v.to_ne_bytes());
            put(0, version);
            put(8, 44);
            put(20, n);
            for (i, &op) in ops.iter().enumerate() {
                put(24 + 44 * i + 8, op);
            }
            p
        };
        passed(
            "GET opcodes",
            checked_call(
                &s,
                s.subdevice,
                CMD,
                &mut params(1, 3, &[0x500, 0x520, 0x1500]),
            )?,
        )?;
        for (what, mut p) in [
            ("opcode 0x1501", params(1, 2, &[0x1500, 0x1501])),
            ("33 instructions", params(1, 33, &[0x1500; 32])),
            ("version 2", params(2, 1, &[0x1500])),
        ] {
            refused(
                what,
                NV_ERR_INVALID_ARGUMENT,
                checked_call(&s, s.subdevice, CMD, &mut p)?,
            )?;
        }
        Ok(())
    })
}

const PERF_BOOST: &str = "/sys/kernel/debug/nvidia-double/perf_boost";

/// NV2080_CTRL_CMD_PERF_BOOST from the container, as CUDA sends it
/// (BOOST_TO_MAX and CUDA, until cleared): the double is given a duration
/// of 1 s (its debugfs `perf_boost`), as RM cuts it where it cannot clear
/// a boost at the client's exit (`kern_perf_boost.c:69-84` at 595.45.04);
/// 60 s reaches it as asked; 3601 s, over `DURATION_MAX`, is refused with
/// `NV_ERR_INVALID_ARGUMENT` (`:54-61`) before the driver.
fn perf_boost_cut_to_a_second() -> Outcome {
    use nvclient::abi::status::*;
    const CMD: u32 = 0x2080_200a;
    const FLAGS: u32 = 0x2 | 0x10;
    if !has_control(CMD) {
        return absent("PERF_BOOST", CMD, vec![0; 8]);
    }
    let last = || -> Result<u64, String> {
        let t = read_file(PERF_BOOST)?;
        u64::from_str_radix(t.trim().trim_start_matches("0x"), 16)
            .map_err(|e| format!("{PERF_BOOST}: {t:?}: {e}"))
    };
    as_container(CG, move || {
        let s = session()?;
        let params = |duration: u32| {
            [FLAGS, duration]
                .iter()
                .flat_map(|w| w.to_ne_bytes())
                .collect::<Vec<u8>>()
        };
        for (asked, given) in [(u32::MAX, 1u32), (60, 60)] {
            write_file(PERF_BOOST, "0").map_err(|e| format!("{PERF_BOOST}: {e}"))?;
            passed(
                &format!("a boost of {asked:#x} s"),
                checked_call(&s, s.subdevice, CMD, &mut params(asked))?,
            )?;
            let got = last()?;
            let want = (u64::from(FLAGS) << 32) | u64::from(given);
            ensure!(
                got == want,
                "a boost of {asked:#x} s reached the double as {got:#x}, want {want:#x}"
            );
        }
        refused(
            "a boost of 3601 s",
            NV_ERR_INVALID_ARGUMENT,
            checked_call(&s, s.subdevice, CMD, &mut params(3601))?,
        )?;
        Ok(())
    })
}

/// GPU_ACQUIRE_COMPUTE_MODE_RESERVATION (0x20800145) and _RELEASE_
/// (0x20800146), which libcuda's `cuCtxCreate` sends: the host takes the
/// GPU's reservation directly; in the container two clients take and
/// release the vGPU's own, as RM answers in compute mode RULES_NONE (the
/// last to acquire holds it; another client's release is
/// `NV_ERR_STATE_IN_USE`, `subdevice_ctrl_gpu_kernel.c:1998-2005,
/// 2063-2070` at 550.163.01), and params are `NV_ERR_INVALID_ARGUMENT`
/// (`rmapi/control.c:452-461`); none of it reaches the double or counts as
/// denied, and the host's release then succeeds (no container call took
/// the GPU's reservation from it).
fn compute_reservation_is_the_vgpus_own() -> Outcome {
    use nvclient::abi::status::*;
    const ACQUIRE: u32 = 0x2080_0145;
    const RELEASE: u32 = 0x2080_0146;
    let host = Session::open_on("/dev/nvidiactl", "/dev/nvidia1", 1)?;
    host.ctl
        .control(host.client, host.subdevice, ACQUIRE, &mut [])
        .map_err(|e| format!("the host's acquire: {e:?}"))?;
    as_container(CG, move || {
        let a = session()?;
        let b = session()?;
        let seen0 = double_ioctls()?;
        let d0 = calls_denied(0)?;
        let call =
            |s: &Session, cmd: u32, p: &mut [u8]| s.ctl.control(s.client, s.subdevice, cmd, p);
        for (what, r, want) in [
            ("a acquires", call(&a, ACQUIRE, &mut []), Ok(())),
            ("b acquires", call(&b, ACQUIRE, &mut []), Ok(())),
            (
                "a releases b's",
                call(&a, RELEASE, &mut []),
                Err(Rm(NV_ERR_STATE_IN_USE)),
            ),
            ("b releases", call(&b, RELEASE, &mut []), Ok(())),
            (
                "b releases again",
                call(&b, RELEASE, &mut []),
                Err(Rm(NV_ERR_STATE_IN_USE)),
            ),
            (
                "a acquires with params",
                call(&a, ACQUIRE, &mut [0; 4]),
                Err(Rm(NV_ERR_INVALID_ARGUMENT)),
            ),
            ("a acquires", call(&a, ACQUIRE, &mut []), Ok(())),
            ("a releases", call(&a, RELEASE, &mut []), Ok(())),
        ] {
            ensure!(r == want, "{what}: {r:?}, want {want:?}");
        }
        let seen = double_ioctls()? - seen0;
        let denied = calls_denied(0)? - d0;
        ensure!(
            seen == 0 && denied == 0,
            "the container's reservation calls: {seen} reached the double, calls_denied +{denied}"
        );
        Ok(())
    })?;
    host.ctl
        .control(host.client, host.subdevice, RELEASE, &mut [])
        .map_err(|e| format!("the host's release after the container's calls: {e:?}"))
}

/// NV01_EVENT_OS_EVENT from the container, as
/// [`debugger_names_only_the_containers_clients`]: its `hParentClient`
/// (byte 0 of NV0005_ALLOC_PARAMETERS) naming the host's client is
/// refused with `NV_ERR_INVALID_OBJECT_HANDLE` before the double; 0 (the
/// caller's own client, `event_api.c:65-71` at 595.45.04) or the
/// container's own client reaches it once, and the double answers
/// `NV_ERR_OBJECT_NOT_FOUND`: `data` 0 names no OS event of the client.
fn os_event_names_only_the_containers_clients() -> Outcome {
    use nvclient::abi::status::NV_ERR_OBJECT_NOT_FOUND;
    // NV0005_ALLOC_PARAMETERS: hParentClient, hSrcResource, hClass,
    // notifyIndex, data (NvP64); allocated under the subdevice.
    names_only_the_containers_clients("an event", NV_ERR_OBJECT_NOT_FOUND, |s, parent, src| {
        let mut p = words(&[parent, src, 0x79, 0, 0, 0]);
        s.ctl
            .alloc(s.client, s.subdevice, 0, 0x79, &mut p)
            .map(drop)
    })
}

/// OS events from a container, as libcuda makes them: ALLOC_OS_EVENT and
/// FREE_OS_EVENT on the container's own client reach the double with the
/// caller's number as written (RM never looks it up), and on the host's
/// client are refused with `NV_ERR_INVALID_OBJECT_HANDLE` before it (RM's
/// event list is global: a tenant could free a neighbour's events). On
/// the GPU node, registered to the container's ctl file, RM_ALLOC makes
/// an NV01_EVENT_OS_EVENT on that pair, checked as on the ctl node; any
/// other class there is `EINVAL`, as the driver answers, before the
/// double.
fn os_events_are_the_containers_own() -> Outcome {
    use nvclient::abi::{class, status::*, OsEvent};
    use nvclient::Gpu;
    let host = Session::open_on("/dev/nvidiactl", "/dev/nvidia1", 1)?;
    let host_client = host.client;
    as_container(CG, move || {
        let s = session()?;
        let g = Gpu::open("/dev/vgpu0").map_err(|e| format!("open /dev/vgpu0: {e:?}"))?;
        g.register_fd(&s.ctl)
            .map_err(|e| format!("REGISTER_FD: {e:?}"))?;
        let key = g.fd() as u32;
        let ev = |e: Escape, client: u32| -> Result<u32, String> {
            let mut p = OsEvent {
                h_client: client,
                h_device: s.device,
                fd: key,
                status: 0,
            };
            g.ioctl_with(e.nr(), &mut p)
                .map_err(|x| format!("{e:?}: {x:?}"))?;
            Ok(p.status)
        };
        let seen0 = double_ioctls()?;
        for (e, client) in [
            (Escape::AllocOsEvent, host_client),
            (Escape::FreeOsEvent, host_client),
        ] {
            let st = ev(e, client)?;
            ensure!(
                st == NV_ERR_INVALID_OBJECT_HANDLE,
                "{e:?} on the host's client: {st:#x}"
            );
        }
        ensure!(
            double_ioctls()? == seen0,
            "an OS event on the host's client reached the double"
        );
        let st = ev(Escape::AllocOsEvent, s.client)?;
        ensure!(
            st == NV_OK,
            "ALLOC_OS_EVENT on the container's client: {st:#x}"
        );
        let params = |parent: u32| -> Vec<u8> {
            [parent, s.subdevice, class::NV01_EVENT_OS_EVENT, 0, key, 0]
                .iter()
                .flat_map(|w| w.to_ne_bytes())
                .collect()
        };
        g.alloc(
            s.client,
            s.subdevice,
            0,
            class::NV01_EVENT_OS_EVENT,
            &mut params(0),
        )
        .map_err(|e| format!("NV01_EVENT_OS_EVENT on the GPU node: {e:?}"))?;
        let seen0 = double_ioctls()?;
        let r = g.alloc(
            s.client,
            s.subdevice,
            0,
            class::NV01_EVENT_OS_EVENT,
            &mut params(host_client),
        );
        ensure!(
            r == Err(Rm(NV_ERR_INVALID_OBJECT_HANDLE)),
            "NV01_EVENT_OS_EVENT naming the host's client on the GPU node: {r:?}"
        );
        let mut sub = [0u8; 4];
        let r = g.alloc(s.client, s.device, 0, class::NV20_SUBDEVICE_0, &mut sub);
        ensure!(
            r == Err(Os(libc::EINVAL)),
            "a subdevice on the GPU node: {r:?}"
        );
        ensure!(
            double_ioctls()? == seen0,
            "a refused RM_ALLOC on the GPU node reached the double"
        );
        let st = ev(Escape::FreeOsEvent, s.client)?;
        ensure!(
            st == NV_OK,
            "FREE_OS_EVENT on the container's client: {st:#x}"
        );
        drop(host);
        Ok(())
    })
}

/// An allocation whose params name an RM client, made from the container
/// by `alloc(session, client, object)`: naming the host's client (and
/// its subdevice) is refused with `NV_ERR_INVALID_OBJECT_HANDLE` and never
/// reaches the double; naming 0 or the container's own client (and the
/// container's subdevice) reaches the double once, which answers
/// `reached` for it.
fn names_only_the_containers_clients(
    what: &'static str,
    reached: u32,
    alloc: fn(&Session, u32, u32) -> Result<(), nvclient::Error>,
) -> Outcome {
    use nvclient::abi::status::NV_ERR_INVALID_OBJECT_HANDLE;
    let host = Session::open_on("/dev/nvidiactl", "/dev/nvidia1", 1)?;
    let (other, other_obj) = (host.client, host.subdevice);
    as_container(CG, move || {
        let s = session()?;
        let seen0 = double_ioctls()?;
        let r = alloc(&s, other, other_obj);
        ensure!(
            r == Err(Rm(NV_ERR_INVALID_OBJECT_HANDLE)),
            "{what} on the host's client: {r:?}"
        );
        let seen = double_ioctls()? - seen0;
        ensure!(seen == 0, "{what} on the host's client reached the double");
        for client in [0, s.client] {
            let seen0 = double_ioctls()?;
            let r = alloc(&s, client, s.subdevice);
            ensure!(
                r == Err(Rm(reached)),
                "{what} on client {client:#x}: {r:?}, want the double's {reached:#x}"
            );
            let seen = double_ioctls()? - seen0;
            ensure!(
                seen == 1,
                "{what} on client {client:#x} reached the double {seen} times"
            );
        }
        drop(host);
        Ok(())
    })
}

/// Native-endian bytes of `w`.
fn words(w: &[u32]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_ne_bytes()).collect()
}

fn teardown() -> Outcome {
    write_file("/sys/class/vgpu/remove", "0").map_err(|e| format!("remove: {e}"))?;
    sh("rmmod vgpu")?;
    sh("rmmod nvidia")?;
    Ok(())
}
