// SPDX-License-Identifier: GPL-2.0

//! What a container sees of a GPU's processes (issue 21): two containers,
//! each in its own cgroup and its own PID namespace (`unshare(CLONE_NEWPID)`
//! then fork, as `unshare --pid --fork` does), share one GPU with a vGPU
//! each. In each, the namespace's first process (PID 1 there) and a second
//! one (PID 2) allocate VRAM and hold it. Then:
//!
//! - a process of each container (a third one, joined to its namespace
//!   with `setns`) asks GPU_GET_PIDS and GPU_GET_PID_INFO through vgpu, as
//!   nvidia-smi does: it sees its own container's processes only, by their
//!   namespace PIDs, with the bytes each allocated, adding up to its vGPU's
//!   `memory_used`;
//! - the host asks the driver double directly: it sees every process, by
//!   its host PID, with the same bytes;
//! - sysfs `vgpuN/processes` lists each container's processes by host PID,
//!   command and bytes;
//! - a process that exits leaves every view.
//!
//! Malformed queries get RM's errors (`bad_queries_get_rms_errors`).

use crate::ensure;
use crate::session::Session;
use crate::sys::{
    as_container, errno, in_child, join_cgroup, read_file, sh, write_file, Shared, SHARED_SLOTS,
};
use crate::tap::{Outcome, Test};
use crate::tests;
use nvclient::abi::{class, pids, status};
use nvclient::PidMemory;
use std::time::{Duration, Instant};

/// Tests of this suite, in order (later ones rely on the set-up).
pub const TESTS: &[Test] = tests![
    setup,
    each_container_sees_its_own_processes,
    in_the_hosts_pid_namespace_a_container_sees_only_its_own,
    the_host_sees_every_process_by_host_pid,
    sysfs_lists_each_vgpus_processes,
    bad_queries_get_rms_errors,
    an_exited_process_leaves_every_view,
    shared_data_page_refused_as_unsupported,
    teardown,
];

const MIB: u64 = 1 << 20;
/// The containers: cgroup, vGPU, and the bytes their namespace's PID 1
/// and PID 2 allocate (multiples of the double's 2 MiB page, so RM
/// allocates exactly that).
const CONTAINERS: [(&str, u32, [u64; 2]); 2] = [
    ("/pa", 0, [64 * MIB, 32 * MIB]),
    ("/pb", 1, [16 * MIB, 48 * MIB]),
];
/// Shared-page slots: per container `c`, at `c * 8`: the namespace PID 1's
/// host PID, PID 2's host PID, and a ready flag for each.
const SLOTS_PER_CONTAINER: usize = 8;
/// Shared-page slots where a query writes its answer.
const QUERY_AT: usize = 64;

fn vgpu_file(id: u32, f: &str) -> String {
    format!("/sys/class/vgpu/vgpu{id}/{f}")
}

fn set(path: &str, v: &str) -> Outcome {
    write_file(path, v).map_err(|e| format!("write {v:?} to {path}: errno {e}"))
}

/// The page the containers' processes report to; made once, before any
/// fork, and shared by every child (a process-wide static: the tests run
/// one after another in one process).
fn page() -> &'static Shared {
    static PAGE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let p = *PAGE.get_or_init(|| {
        let s = Shared::new().expect("shared page");
        Box::into_raw(Box::new(s)) as usize
    });
    // SAFETY: the pointer came from `Box::into_raw` above and is never freed.
    unsafe { &*(p as *const Shared) }
}

/// The caller's host PID (its `/proc/self` in the host's proc mount).
fn host_pid() -> u64 {
    std::fs::read_link("/proc/self")
        .ok()
        .and_then(|p| p.to_str().and_then(|s| s.parse().ok()))
        .unwrap_or(0)
}

/// A process of a container: opens a session on its vGPU, allocates
/// `bytes` of VRAM, reports its host PID in `slot` and its readiness in
/// `slot + 2`, and holds everything until killed.
fn hold(vgpu: u32, bytes: u64, slot: usize) -> ! {
    let ok = (|| -> Result<(), String> {
        let s = Session::vgpu(vgpu)?;
        s.ctl
            .alloc_vram(s.client, s.device, 0, bytes)
            .map_err(|e| format!("{e:?}"))?;
        // Held for good: the process is killed, never returns.
        std::mem::forget(s);
        Ok(())
    })();
    page().set(slot, host_pid());
    page().set(slot + 2, if ok.is_ok() { 1 } else { 2 });
    if let Err(e) = ok {
        println!("#   container process: {e}");
    }
    loop {
        // SAFETY: waits for a signal; nothing else.
        unsafe { libc::pause() };
    }
}

/// Starts container `c`: a child joins its cgroup and a new PID namespace,
/// and forks the namespace's PID 1, which forks PID 2; both allocate and
/// hold. Returns once both reported.
fn start(c: usize) -> Outcome {
    let (cg, vgpu, bytes) = CONTAINERS[c];
    let base = c * SLOTS_PER_CONTAINER;
    // SAFETY: the test process is single-threaded when it forks; the child
    // runs only the code below and never returns.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(format!("fork: errno {}", errno()));
    }
    if pid == 0 {
        if join_cgroup(cg).is_err() {
            // SAFETY: leaving the child.
            unsafe { libc::_exit(100) };
        }
        // SAFETY: plain system calls; after `unshare`, the next child is
        // PID 1 of the new namespace.
        unsafe {
            if libc::unshare(libc::CLONE_NEWPID) != 0 {
                libc::_exit(101);
            }
            let init = libc::fork();
            if init == 0 {
                // PID 1 of the namespace: dies with the holder.
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                if libc::fork() == 0 {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    hold(vgpu, bytes[1], base + 1);
                }
                hold(vgpu, bytes[0], base);
            }
            loop {
                libc::pause();
            }
        }
    }
    page().set(base + 5, pid as u64);
    let deadline = Instant::now() + Duration::from_secs(60);
    while page().get(base + 2) == 0 || page().get(base + 3) == 0 {
        ensure!(
            Instant::now() < deadline,
            "{cg}: its processes did not report"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    ensure!(
        page().get(base + 2) == 1 && page().get(base + 3) == 1,
        "{cg}: a process could not allocate (see above)"
    );
    Ok(())
}

/// Kills container `c` (its holder; the namespace's processes die with it).
fn stop(c: usize) {
    let pid = page().get(c * SLOTS_PER_CONTAINER + 5) as i32;
    if pid > 0 {
        // SAFETY: our child, killed and reaped once.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, core::ptr::null_mut(), 0);
        }
        page().set(c * SLOTS_PER_CONTAINER + 5, 0);
    }
}

/// What one query saw.
#[derive(Debug)]
struct Seen {
    /// The querying process's own PID, in the namespace it asked from.
    me: u32,
    /// GET_PIDS (class NV20_SUBDEVICE_0).
    pids: Vec<u32>,
    /// GET_PID_INFO for each of those.
    memory: Vec<PidMemory>,
}

/// Asks GET_PIDS and GET_PID_INFO as nvidia-smi would: through `ctl` and
/// `gpu` (vgpu's nodes or the double's), from a process in cgroup `cg`
/// (None: the test's own) in the PID namespace of host process `ns_of`
/// (None: the host's).
fn query(ctl: &str, gpu: &str, cg: Option<&str>, ns_of: Option<u64>) -> Result<Seen, String> {
    let p = page();
    for i in 0..(SHARED_SLOTS - QUERY_AT) {
        p.set(QUERY_AT + i, 0);
    }
    let (ctl, gpu, cg) = (ctl.to_string(), gpu.to_string(), cg.map(str::to_string));
    let code = in_child(move || {
        if let Some(cg) = &cg {
            if join_cgroup(cg).is_err() {
                return 100;
            }
        }
        if let Some(pid) = ns_of {
            let path = format!("/proc/{pid}/ns/pid\0");
            // SAFETY: a NUL-terminated path; the fd is ours.
            let fd = unsafe { libc::open(path.as_ptr().cast(), libc::O_RDONLY) };
            // SAFETY: `fd` names a PID namespace; the next fork's child
            // is in it.
            if fd < 0 || unsafe { libc::setns(fd, libc::CLONE_NEWPID) } != 0 {
                return 101;
            }
        }
        let asker = move || -> i32 {
            let r = (|| -> Result<(), String> {
                let s = Session::open(&ctl, &gpu)?;
                let list = s
                    .ctl
                    .get_pids(s.client, s.subdevice, class::NV20_SUBDEVICE_0)
                    .map_err(|e| format!("GET_PIDS: {e:?}"))?;
                let mem = s
                    .ctl
                    .pid_memory(s.client, s.subdevice, &list)
                    .map_err(|e| format!("GET_PID_INFO: {e:?}"))?;
                let q = page();
                q.set(QUERY_AT, std::process::id() as u64);
                q.set(QUERY_AT + 1, list.len() as u64);
                for (k, m) in mem.iter().enumerate() {
                    let at = QUERY_AT + 2 + 3 * k;
                    q.set(at, u64::from(m.pid));
                    q.set(at + 1, u64::from(m.result));
                    q.set(at + 2, m.private + m.shared_owned);
                }
                Ok(())
            })();
            match r {
                Ok(()) => 0,
                Err(e) => {
                    println!("#   query: {e}");
                    let _ = std::io::Write::flush(&mut std::io::stdout());
                    1
                }
            }
        };
        if ns_of.is_some() {
            // In the namespace: only a child of ours is.
            in_child(asker).unwrap_or(102)
        } else {
            asker()
        }
    })?;
    ensure!(code == 0, "the query failed (code {code})");
    let n = p.get(QUERY_AT + 1) as usize;
    ensure!(
        QUERY_AT + 2 + 3 * n <= SHARED_SLOTS,
        "{n} PIDs: more than this test can read back"
    );
    let memory: Vec<PidMemory> = (0..n)
        .map(|k| {
            let at = QUERY_AT + 2 + 3 * k;
            PidMemory {
                pid: p.get(at) as u32,
                result: p.get(at + 1) as u32,
                private: p.get(at + 2),
                shared_owned: 0,
                shared_duped: 0,
            }
        })
        .collect();
    Ok(Seen {
        me: p.get(QUERY_AT) as u32,
        pids: memory.iter().map(|m| m.pid).collect(),
        memory,
    })
}

/// Container `c`'s view through its vGPU, asked from its namespace.
fn container_view(c: usize) -> Result<Seen, String> {
    let (cg, vgpu, _) = CONTAINERS[c];
    let init = page().get(c * SLOTS_PER_CONTAINER);
    query(
        "/dev/vgpuctl",
        &format!("/dev/vgpu{vgpu}"),
        Some(cg),
        Some(init),
    )
}

/// The bytes `seen` reports for `pid` (with status NV_OK).
fn bytes_of(seen: &Seen, pid: u32) -> Result<u64, String> {
    let m = seen
        .memory
        .iter()
        .find(|m| m.pid == pid)
        .ok_or(format!("PID {pid} not listed in {seen:?}"))?;
    ensure!(
        m.result == status::NV_OK,
        "PID {pid}: result {:#x}",
        m.result
    );
    Ok(m.private)
}

fn setup() -> Outcome {
    sh("modprobe nvidia gpus=1 vram0_mib=4096")?;
    sh("modprobe vgpu")?;
    for (cg, id, _) in CONTAINERS {
        std::fs::create_dir_all(format!("/sys/fs/cgroup{cg}"))
            .map_err(|e| format!("mkdir {cg}: {e}"))?;
        set("/sys/class/vgpu/create", &id.to_string())?;
        set(&vgpu_file(id, "gpu"), "0")?;
        set(&vgpu_file(id, "memory_limit"), &(1u64 << 30).to_string())?;
        set(&vgpu_file(id, "cgroup"), cg)?;
    }
    let _ = page();
    for c in 0..CONTAINERS.len() {
        start(c)?;
    }
    Ok(())
}

/// In each container, GET_PIDS lists exactly its namespace's PIDs 1 and 2
/// and the asking process itself (a client with a device on the GPU, as
/// nvidia-smi is), by namespace PID; GET_PID_INFO gives each the bytes it
/// allocated (the asker none), and they add up to the vGPU's
/// `memory_used`. Both containers' processes are PIDs 1 and 2 in their own
/// namespaces: each sees its own bytes, never the other's.
fn each_container_sees_its_own_processes() -> Outcome {
    for (c, (cg, vgpu, bytes)) in CONTAINERS.iter().enumerate() {
        let seen = container_view(c)?;
        let mut got = seen.pids.clone();
        got.sort_unstable();
        let mut want = vec![1, 2, seen.me];
        want.sort_unstable();
        ensure!(
            got == want,
            "{cg}: GET_PIDS {got:?}, want its PIDs 1, 2 and the asker {}",
            seen.me
        );
        ensure!(
            bytes_of(&seen, 1)? == bytes[0] && bytes_of(&seen, 2)? == bytes[1],
            "{cg}: memory {:?}, want {bytes:?} for PIDs 1 and 2",
            seen.memory
        );
        ensure!(bytes_of(&seen, seen.me)? == 0, "{cg}: the asker has memory");
        let used: u64 = read_file(&vgpu_file(*vgpu, "memory_used"))?
            .parse()
            .map_err(|e| format!("memory_used: {e}"))?;
        let sum: u64 = seen.memory.iter().map(|m| m.private).sum();
        ensure!(
            sum == used,
            "{cg}: its processes' memory adds up to {sum}, memory_used is {used}"
        );
        println!(
            "# processes: {cg} sees PIDs {got:?}, {} MiB in all",
            sum / MIB
        );
    }
    Ok(())
}

/// A process of the second container that shares the host's PID namespace
/// (as a pod with `hostPID`, or a container started without a PID
/// namespace, runs), where every process is visible: through vgpu it still
/// sees its own container's processes only, by host PID, and the first
/// container's PIDs give it zeros. Forwarded, the driver would list the
/// other container's processes and their memory (RM lists every client's
/// process the caller's namespace can see).
fn in_the_hosts_pid_namespace_a_container_sees_only_its_own() -> Outcome {
    let (cg, vgpu, bytes) = CONTAINERS[1];
    let seen = query("/dev/vgpuctl", &format!("/dev/vgpu{vgpu}"), Some(cg), None)?;
    let mut got = seen.pids.clone();
    got.sort_unstable();
    let base = SLOTS_PER_CONTAINER;
    let own = [page().get(base) as u32, page().get(base + 1) as u32];
    let mut want = vec![own[0], own[1], seen.me];
    want.sort_unstable();
    ensure!(
        got == want,
        "{cg} in the host's PID namespace: GET_PIDS {got:?}, want its own {want:?} (the other container's are {} and {})",
        page().get(0),
        page().get(1)
    );
    ensure!(
        bytes_of(&seen, own[0])? == bytes[0] && bytes_of(&seen, own[1])? == bytes[1],
        "{cg}: memory {:?}, want {bytes:?}",
        seen.memory
    );
    // The other container's processes, asked by their host PIDs: zeros.
    let others = [page().get(0) as u32, page().get(1) as u32];
    as_container(cg, move || {
        let s = Session::vgpu(vgpu)?;
        let m = s
            .ctl
            .pid_memory(s.client, s.subdevice, &others)
            .map_err(|e| format!("{e:?}"))?;
        ensure!(
            m.iter().all(|e| e.result == status::NV_OK
                && e.private == 0
                && e.shared_owned == 0
                && e.shared_duped == 0),
            "the other container's processes: {m:?}"
        );
        Ok(())
    })
    .map_err(|e| format!("{cg} saw the other container's memory: {e}"))?;
    Ok(())
}

/// The host, asking the double directly (its own PID namespace), sees
/// every container process by host PID with the bytes it allocated.
fn the_host_sees_every_process_by_host_pid() -> Outcome {
    let seen = query("/dev/nvidiactl", "/dev/nvidia0", None, None)?;
    for (c, (cg, _, bytes)) in CONTAINERS.iter().enumerate() {
        for (k, want) in bytes.iter().enumerate() {
            let pid = page().get(c * SLOTS_PER_CONTAINER + k) as u32;
            ensure!(
                seen.pids.contains(&pid),
                "{cg}: host PID {pid} not in the host's list {:?}",
                seen.pids
            );
            let got = bytes_of(&seen, pid)?;
            ensure!(
                got == *want,
                "{cg}: host PID {pid} has {got} bytes, want {want}"
            );
        }
    }
    ensure!(
        seen.pids.contains(&seen.me),
        "the asker {} is not in its own list {:?}",
        seen.me,
        seen.pids
    );
    Ok(())
}

/// `vgpuN/processes` lists each container process of that vGPU, by host
/// PID, with its bytes and command name, and nothing of the other.
fn sysfs_lists_each_vgpus_processes() -> Outcome {
    let comm = read_file("/proc/self/comm")?;
    for (c, (cg, vgpu, bytes)) in CONTAINERS.iter().enumerate() {
        let text = read_file(&vgpu_file(*vgpu, "processes"))?;
        let lines: Vec<&str> = text.lines().collect();
        ensure!(lines.len() == 2, "{cg}: processes is {text:?}");
        for (k, want) in bytes.iter().enumerate() {
            let pid = page().get(c * SLOTS_PER_CONTAINER + k);
            let line = format!("{pid} {want} {comm}");
            ensure!(
                lines.contains(&line.as_str()),
                "{cg}: no line {line:?} in {text:?}"
            );
        }
    }
    Ok(())
}

/// Through vgpu, malformed process queries get the statuses RM gives them
/// (`subdevice_ctrl_gpu_kernel.c:2242-2400` at 595.45.04): a PID list of
/// 0 or 201 entries NV_ERR_INVALID_ARGUMENT; an unknown info index, or PID
/// 0, that entry's NV_ERR_INVALID_ARGUMENT; a PID nobody has zeros and
/// NV_OK; an unknown id type NV_ERR_INVALID_ARGUMENT; a class no process
/// holds an empty list. The MIG ids are PARTITION_ID_INVALID. A control on
/// a handle that is not the caller's subdevice is refused.
fn bad_queries_get_rms_errors() -> Outcome {
    let (cg, vgpu, _) = CONTAINERS[0];
    as_container(cg, move || {
        let s = Session::vgpu(vgpu)?;
        let (c, sub) = (s.client, s.subdevice);
        let bad = |r: nvclient::Result<Vec<PidMemory>>, what: &str| -> Outcome {
            ensure!(
                r == Err(nvclient::Error::Rm(status::NV_ERR_INVALID_ARGUMENT)),
                "{what}: {r:?}, want NV_ERR_INVALID_ARGUMENT"
            );
            Ok(())
        };
        bad(s.ctl.pid_memory(c, sub, &[]), "no entries")?;
        bad(s.ctl.pid_memory(c, sub, &[1; 201]), "201 entries")?;
        let m = s
            .ctl
            .pid_info_raw(c, sub, &[1, 0, 99999], 1)
            .map_err(|e| format!("index 1: {e:?}"))?;
        ensure!(
            m.iter()
                .all(|e| e.result == status::NV_ERR_INVALID_ARGUMENT),
            "index 1: {m:?}"
        );
        let m = s
            .ctl
            .pid_memory(c, sub, &[0, 99999])
            .map_err(|e| format!("PIDs 0, 99999: {e:?}"))?;
        ensure!(
            m[0].result == status::NV_ERR_INVALID_ARGUMENT
                && m[1].result == status::NV_OK
                && m[1].private == 0
                && m[1].shared_owned == 0
                && m[1].shared_duped == 0,
            "PIDs 0, 99999: {m:?}"
        );
        // Another class: no process has a compute object here.
        let l = s
            .ctl
            .get_pids(c, sub, class::AMPERE_COMPUTE_A)
            .map_err(|e| format!("compute class: {e:?}"))?;
        ensure!(l.is_empty(), "compute class: {l:?}");
        // An unknown id type.
        let mut p = vec![0u8; nvclient::abi::GetPidsParams::SIZE];
        p[0..4].copy_from_slice(&7u32.to_ne_bytes());
        let r = s.ctl.control(
            c,
            sub,
            nvclient::abi::ctrl::NV2080_CTRL_CMD_GPU_GET_PIDS,
            &mut p,
        );
        ensure!(
            r == Err(nvclient::Error::Rm(status::NV_ERR_INVALID_ARGUMENT)),
            "id type 7: {r:?}"
        );
        // On the device, not the subdevice.
        let r = s.ctl.get_pids(c, s.device, class::NV20_SUBDEVICE_0);
        ensure!(
            r == Err(nvclient::Error::Rm(status::NV_ERR_INVALID_OBJECT_HANDLE)),
            "on the device: {r:?}"
        );
        // A wrong size.
        let mut short = vec![0u8; 16];
        let r = s.ctl.control(
            c,
            sub,
            nvclient::abi::ctrl::NV2080_CTRL_CMD_GPU_GET_PID_INFO,
            &mut short,
        );
        ensure!(
            r == Err(nvclient::Error::Rm(status::NV_ERR_INVALID_ARGUMENT)),
            "16 bytes of params: {r:?}"
        );
        let _ = pids::PARTITION_ID_INVALID;
        Ok(())
    })
    .map_err(|e| format!("a malformed query was not refused as RM refuses it: {e}"))?;
    Ok(())
}

/// When a container process exits (PID 2 of the first container, killed),
/// it leaves the container's view, the host's and sysfs, and its bytes
/// leave `memory_used`.
fn an_exited_process_leaves_every_view() -> Outcome {
    let (cg, vgpu, bytes) = CONTAINERS[0];
    let host = page().get(1) as i32;
    let before: u64 = read_file(&vgpu_file(vgpu, "memory_used"))?
        .parse()
        .map_err(|e| format!("{e}"))?;
    // SAFETY: a process of ours (a grandchild), killed once.
    unsafe { libc::kill(host, libc::SIGKILL) };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = read_file(&vgpu_file(vgpu, "processes"))?;
        if !text.lines().any(|l| l.starts_with(&format!("{host} "))) {
            break;
        }
        ensure!(
            Instant::now() < deadline,
            "{cg}: {host} still listed: {text}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let after: u64 = read_file(&vgpu_file(vgpu, "memory_used"))?
        .parse()
        .map_err(|e| format!("{e}"))?;
    ensure!(
        after + bytes[1] == before,
        "{cg}: memory_used {before} -> {after}, want {} less",
        bytes[1]
    );
    let seen = container_view(0)?;
    ensure!(
        !seen.pids.contains(&2) && seen.pids.contains(&1),
        "{cg}: GET_PIDS after PID 2 exited: {:?}",
        seen.pids
    );
    let host_view = query("/dev/nvidiactl", "/dev/nvidia0", None, None)?;
    ensure!(
        !host_view.pids.contains(&(host as u32)),
        "the host still lists {host}: {:?}",
        host_view.pids
    );
    Ok(())
}

/// The double's record of every RUSD mask it was given (debugfs).
const RUSD_POLLED: &str = "/sys/kernel/debug/nvidia-double/rusd_polled";

fn rusd_polled() -> Result<u64, String> {
    let t = read_file(RUSD_POLLED)?;
    u64::from_str_radix(t.trim_start_matches("0x"), 16)
        .map_err(|e| format!("{RUSD_POLLED}: {t:?}: {e}"))
}

/// RUSD (`RM_USER_SHARED_DATA`) maps a page RM keeps current with the
/// GPU's total and free VRAM (other tenants' use) and, from 590, every
/// polling tenant's per-process utilisation: from 550 on a container's
/// allocation is refused with NV_ERR_NOT_SUPPORTED, as RM refuses it on a
/// vGPU guest, whatever its mask, and counted in `calls_denied`;
/// REQUEST_DATA_POLL is refused too, and the driver never sees a
/// container's RUSD. On 535, whose page has no VRAM figure and no process,
/// the allocation passes. The host, on the double directly, allocates one
/// with PROC_UTIL: the refusal is vgpu's, not the double's.
fn shared_data_page_refused_as_unsupported() -> Outcome {
    use nvclient::abi::rusd;
    // By the release the double claims, not by vgpu's table: 535's page
    // has no VRAM figure (`cl00de.h:33-41` at 535.288.01).
    let admitted = nvclient::speaks().name.starts_with("535.");
    let (cg, vgpu, _) = CONTAINERS[0];
    set(RUSD_POLLED, "0")?;
    let denied0: u64 = read_file(&vgpu_file(vgpu, "calls_denied"))?
        .parse()
        .map_err(|e| format!("{e}"))?;
    as_container(cg, move || {
        let s = Session::vgpu(vgpu)?;
        for m in [0u64, 0x4, rusd::POLL_PROC_UTIL | 0x4] {
            let mut mask = m.to_ne_bytes();
            let r = s
                .ctl
                .alloc(s.client, s.subdevice, 0, rusd::CLASS, &mut mask);
            match (admitted, r) {
                (false, Err(nvclient::Error::Rm(status::NV_ERR_NOT_SUPPORTED))) | (true, Ok(_)) => {
                }
                (_, r) => return Err(format!("RUSD with mask {m:#x}: {r:?}")),
            }
        }
        // No RUSD to poll: the request goes to the subdevice, and is
        // refused before the driver sees it whatever the release.
        let mut p = (rusd::POLL_PROC_UTIL).to_ne_bytes();
        let r = s
            .ctl
            .control(s.client, s.subdevice, rusd::REQUEST_DATA_POLL, &mut p);
        ensure!(
            r == Err(nvclient::Error::Rm(status::NV_ERR_NOT_SUPPORTED)),
            "REQUEST_DATA_POLL: {r:?}"
        );
        Ok(())
    })
    .map_err(|e| format!("RUSD was not refused: {e}"))?;
    let seen = rusd_polled()?;
    // 535's params are 4 reserved bytes, which the double records.
    let want_seen = if admitted {
        rusd::POLL_PROC_UTIL | 0x4
    } else {
        0
    };
    ensure!(
        seen == want_seen,
        "the driver was given the masks {seen:#x}, want {want_seen:#x}"
    );
    let denied: u64 = read_file(&vgpu_file(vgpu, "calls_denied"))?
        .parse()
        .map_err(|e| format!("{e}"))?;
    let want_denied = if admitted { 1 } else { 4 };
    ensure!(
        denied == denied0 + want_denied,
        "calls_denied {denied0} -> {denied}, want {want_denied} more"
    );
    if !admitted {
        let host = Session::open("/dev/nvidiactl", "/dev/nvidia0")?;
        let mut mask = (rusd::POLL_PROC_UTIL | 0x4).to_ne_bytes();
        host.ctl
            .alloc(host.client, host.subdevice, 0, rusd::CLASS, &mut mask)
            .map_err(|e| format!("the host's RUSD: {e:?}"))?;
        let seen = rusd_polled()?;
        ensure!(
            seen == rusd::POLL_PROC_UTIL | 0x4,
            "the double was given {seen:#x} by the host"
        );
    }
    Ok(())
}

fn teardown() -> Outcome {
    for c in 0..CONTAINERS.len() {
        stop(c);
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while sh("rmmod vgpu").is_err() {
        ensure!(Instant::now() < deadline, "vgpu would not unload");
        std::thread::sleep(Duration::from_millis(50));
    }
    sh("rmmod nvidia")?;
    Ok(())
}
