// SPDX-License-Identifier: GPL-2.0

//! Break-out attempts from real containers (podman with crun, the spec
//! `vgpuctl cdi` writes, as the `containers` suite runs them). Two
//! containers, `a` with vGPU 0 on GPU 0 and `b` with vGPU 1 on GPU 1, and a
//! host process holding the driver's `/dev/nvidiactl` open. From inside
//! `a` (`podman exec`, so in its cgroup, namespaces, capabilities, seccomp
//! filter and device cgroup), `vgpu-selftest breakout-attempts` tries each
//! way to reach the driver's nodes, GPU 1 or `b`, and reports what the
//! kernel answered; the test compares every answer with the one the
//! kernel gives and says why:
//!
//! - `mknod` of 195:255, 195:1 (GPU 1), nvidia-uvm and `b`'s `/dev/vgpu1`:
//!   `EPERM`, podman's containers have no `CAP_MKNOD`; with
//!   `--cap-add MKNOD` the nodes are made (the device cgroup allows
//!   `mknod` of any node, `m`), but opening GPU 1, the UVM tools node or
//!   `/dev/vgpu1` is `EPERM` (the device cgroup lists only the spec's
//!   nodes), and the made 195:255 is vgpu's proxy, not the driver;
//! - `/proc/self/root/dev/nvidiactl`: the container's own root, vgpu's
//!   proxy again;
//! - the host process's `/proc/PID/fd/N`, `b`'s init by its host PID
//!   (`ptrace`, `kill 0`): `ENOENT` / `ESRCH`, the container's PID
//!   namespace has no such process;
//! - `/dev/vgpu1`, `/dev/nvidia1`: `ENOENT`, not in the container's `/dev`;
//! - an unprivileged user and mount namespace (`unshare -Urm`): a new
//!   devtmpfs is `EPERM` (not mountable in a user namespace), `mknod`
//!   `EPERM`, and the container's `/dev/nvidiactl` bound elsewhere is
//!   still vgpu's proxy.
//!
//! Through all of it `a`'s `calls_denied` and `b`'s vGPU do not move: the
//! refusals are the kernel's, before any file of vgpu or the driver is
//! made. Then a container whose runtime is killed (conmon, then its
//! init, SIGKILL) never runs its `poststop` hook: its vGPU stays bound to
//! a cgroup with no process, and the next container started on the vGPU
//! frees and takes it (`vgpuctl hook`, `docs/vgpuctl.md`).
//!
//! The probe, its targets and the tables of answers are shared with the
//! `dra` suite, which runs the same attempts from a DRA pod.

use crate::containers::{
    attr, cgroup_of, check_at_ceiling, podman, setup_on, start, teardown, ROOTFS,
};
use crate::ensure;
use crate::nodes::whose_path as whose_file;
use crate::sys::{char_major, read_file, Holder};
use crate::tap::{Outcome, Test};
use crate::tests;
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::time::{Duration, Instant};

/// `CAP_MKNOD` (`linux/capability.h`).
const CAP_MKNOD: u32 = 27;

/// Tests of this suite, in order.
pub const TESTS: &[Test] = tests![
    attempts_from_a_container_fail,
    a_killed_runtime_frees_its_vgpu_at_the_next_start,
];

/// Runs `body` with the double's two GPUs, vGPUs 0 and 2 on GPU 0 and
/// vGPU 1 on GPU 1 (1 GiB each), and the CDI spec; tears down after.
fn with_two_gpus(body: impl FnOnce() -> Outcome) -> Outcome {
    let r = setup_on(2, &[(0, 0, "1GiB"), (1, 1, "1GiB"), (2, 0, "1GiB")]).and_then(|()| body());
    let t = teardown();
    r.and(t)
}

/// `podman run -d` of a container that sleeps, with vGPU `id` and extra
/// podman arguments.
pub(crate) fn start_idle(name: &str, id: u32, extra: &[&str]) -> Outcome {
    let dev = format!("vgpu.dev/gpu={id}");
    let mut args = vec!["run", "-d", "--name", name, "--device", &dev];
    args.extend_from_slice(extra);
    args.extend(["--rootfs", ROOTFS, "sleep", "3600"]);
    let (code, out) = podman(&args)?;
    ensure!(code == 0, "podman run {name}: {out}");
    Ok(())
}

/// The host PID of container `name`'s init.
fn pid_of(name: &str) -> Result<u32, String> {
    let (code, out) = podman(&["inspect", "--format", "{{.State.Pid}}", name])?;
    ensure!(code == 0, "inspect {name}: {out}");
    out.trim()
        .parse()
        .map_err(|_| format!("pid of {name}: {out:?}"))
}

/// One attempt's wanted answer: its name in the probe's report, the
/// answer (`errno N`, `ok`, `ok vgpu`, `made, ...`), why.
pub(crate) type Row = (&'static str, String, &'static str);

/// Each attempt of `want` came out as wanted in `who`'s report `got`; else
/// every one that did not.
pub(crate) fn expect_attempts(who: &str, got: &BTreeMap<String, String>, want: &[Row]) -> Outcome {
    let mut wrong = Vec::new();
    for (k, v, why) in want {
        match got.get(*k) {
            Some(g) if g == v => {}
            g => wrong.push(format!("{k}: {g:?}, want {v:?} ({why})")),
        }
    }
    ensure!(wrong.is_empty(), "in {who}:\n  {}", wrong.join("\n  "));
    Ok(())
}

/// `rows` with the rows of `differ` in place of those of the same name: a
/// row where a caller's answer legitimately differs, with its reason.
pub(crate) fn differing(mut rows: Vec<Row>, differ: Vec<Row>) -> Vec<Row> {
    for d in differ {
        match rows.iter_mut().find(|r| r.0 == d.0) {
            Some(r) => *r = d,
            None => rows.push(d),
        }
    }
    rows
}

/// The probe's report (`NAME: ANSWER` lines).
pub(crate) fn parse_report(out: &str) -> BTreeMap<String, String> {
    out.lines()
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// `podman exec NAME vgpu-selftest breakout-attempts ARGS`: its report.
pub(crate) fn attempts_in(name: &str, args: &[String]) -> Result<BTreeMap<String, String>, String> {
    let mut cmd = vec!["exec", name, "vgpu-selftest", "breakout-attempts"];
    cmd.extend(args.iter().map(String::as_str));
    let (code, out) = podman(&cmd)?;
    ensure!(code == 0, "podman exec {name}: {code}: {out}");
    Ok(parse_report(&out))
}

/// What the attempts aim at from outside the container: a host process
/// holding the driver's `/dev/nvidiactl` (kept while this lives), and the
/// probe's arguments: its PID and fd, the neighbour's init (podman
/// container `neighbour`, on vGPU 1: `/dev/vgpu1`), the UVM major.
pub(crate) struct Targets {
    _holder: Holder,
    pub args: Vec<String>,
}

pub(crate) fn targets(neighbour: &str) -> Result<Targets, String> {
    let holder = crate::nodes::host_holds_nvidiactl()?;
    let hpid = holder.pid();
    let hfd = std::fs::read_dir(format!("/proc/{hpid}/fd"))
        .map_err(|e| format!("/proc/{hpid}/fd: {e}"))?
        .filter_map(Result::ok)
        .find(|e| {
            std::fs::read_link(e.path()).is_ok_and(|p| p.to_string_lossy() == "/dev/nvidiactl")
        })
        .ok_or("the holder's fd of /dev/nvidiactl")?
        .file_name()
        .to_string_lossy()
        .to_string();
    let uvm = char_major("nvidia-uvm").ok_or("no nvidia-uvm major")?;
    let v1 = std::fs::metadata("/dev/vgpu1").map_err(|e| format!("/dev/vgpu1: {e}"))?;
    let (vmaj, vmin) = (libc::major(v1.rdev()), libc::minor(v1.rdev()));
    let b_pid = pid_of(neighbour)?;
    let args = [
        hpid.to_string(),
        hfd,
        b_pid.to_string(),
        uvm.to_string(),
        vmaj.to_string(),
        vmin.to_string(),
    ]
    .to_vec();
    Ok(Targets {
        _holder: holder,
        args,
    })
}

fn errno(e: i32) -> String {
    format!("errno {e}")
}

/// The answers in a container with podman's default capabilities (no
/// `CAP_MKNOD`), its own PID namespace and the spec's device cgroup, on
/// GPU 0; the neighbour is on vGPU 1, GPU 1.
pub(crate) fn without_mknod() -> Vec<Row> {
    let (eperm, enoent, esrch) = (errno(libc::EPERM), errno(libc::ENOENT), errno(libc::ESRCH));
    vec![
        ("cap_mknod", "no".into(), "podman's default capabilities"),
        ("mknod 195:255", eperm.clone(), "no CAP_MKNOD"),
        ("mknod 195:1", eperm.clone(), "no CAP_MKNOD"),
        ("mknod uvm:0", eperm.clone(), "no CAP_MKNOD"),
        ("mknod uvm:1", eperm.clone(), "no CAP_MKNOD"),
        ("mknod vgpu1", eperm.clone(), "no CAP_MKNOD"),
        (
            "open /proc/self/root/dev/nvidiactl",
            "ok vgpu".into(),
            "the container's own root",
        ),
        (
            "open /dev/nvidiactl",
            "ok vgpu".into(),
            "the spec's node, bound cgroup",
        ),
        (
            "open host /proc/PID/fd",
            enoent.clone(),
            "not in the PID namespace",
        ),
        (
            "open /dev/vgpu1",
            enoent.clone(),
            "not in the container's /dev",
        ),
        ("open /dev/nvidia1", enoent, "not in the container's /dev"),
        ("ptrace b", esrch.clone(), "not in the PID namespace"),
        ("kill b", esrch, "not in the PID namespace"),
        ("unshare -Urm", "ok".into(), "unprivileged user namespaces"),
        (
            "userns mount devtmpfs",
            eperm.clone(),
            "devtmpfs is not user-mountable",
        ),
        (
            "userns mknod 195:255",
            eperm,
            "no CAP_MKNOD in the init namespace",
        ),
        (
            "userns bind /dev/nvidiactl",
            "ok vgpu".into(),
            "a bind of the spec's node",
        ),
    ]
}

/// The `mknod`s in a container with `--cap-add MKNOD`: every node is made
/// (the device cgroup allows `mknod` of any), but only the spec's nodes
/// open: the others are the device cgroup's `EPERM`, and the made 195:255
/// is vgpu's.
pub(crate) fn with_mknod() -> Vec<Row> {
    let made_eperm = format!("made, {}", errno(libc::EPERM));
    vec![
        ("cap_mknod", "yes".into(), "--cap-add MKNOD"),
        (
            "mknod 195:255",
            "made, ok vgpu".into(),
            "the spec's node: vgpu's proxy",
        ),
        ("mknod uvm:0", "made, ok".into(), "the spec's node"),
        (
            "mknod 195:1",
            made_eperm.clone(),
            "GPU 1 is not in the device cgroup",
        ),
        (
            "mknod uvm:1",
            made_eperm.clone(),
            "UVM tools are not in the device cgroup",
        ),
        (
            "mknod vgpu1",
            made_eperm,
            "vgpu's nodes are not in the device cgroup",
        ),
    ]
}

fn calls_denied(id: u32) -> Result<u64, String> {
    crate::memory::calls_denied(id)
}

fn attempts_from_a_container_fail() -> Outcome {
    with_two_gpus(|| {
        start_idle("a", 0, &[])?;
        start_idle("b", 1, &[])?;
        // With CAP_MKNOD, on vGPU 2 (GPU 0).
        start_idle("m", 2, &["--cap-add", "MKNOD"])?;
        let t = targets("b")?;
        let (d0, d1) = (calls_denied(0)?, calls_denied(1)?);
        let users1 = attr(1, "users")?;
        let got = attempts_in("a", &t.args)?;
        println!("# breakout: a: {got:?}");
        expect_attempts("container a", &got, &without_mknod())?;
        let got = attempts_in("m", &t.args)?;
        println!("# breakout: m: {got:?}");
        expect_attempts("container m", &got, &with_mknod())?;
        let (e0, e1) = (calls_denied(0)?, calls_denied(1)?);
        ensure!(
            e0 == d0 && e1 == d1,
            "calls_denied moved: vgpu0 {d0} -> {e0}, vgpu1 {d1} -> {e1}"
        );
        ensure!(attr(1, "users")? == users1, "b's vGPU got a user");
        drop(t);
        Ok(())
    })
}

fn a_killed_runtime_frees_its_vgpu_at_the_next_start() -> Outcome {
    with_two_gpus(|| {
        let (code, out) = start("k", 0, &[])?;
        ensure!(code == 0, "podman run k: {out}");
        check_at_ceiling("k", 0, 1024)?;
        let cg = cgroup_of("k")?;
        let (code, out) = podman(&["inspect", "--format", "{{.State.ConmonPid}}", "k"])?;
        ensure!(code == 0, "inspect k: {out}");
        let conmon: i32 = out.trim().parse().map_err(|_| format!("conmon {out:?}"))?;
        let init = pid_of("k")? as i32;
        // SAFETY: kill(2) of two processes this test's podman started.
        unsafe {
            libc::kill(conmon, libc::SIGKILL);
            libc::kill(init, libc::SIGKILL);
        }
        // The container's cgroup empties; nothing runs its poststop.
        let procs = format!("/sys/fs/cgroup{cg}/cgroup.procs");
        let t0 = Instant::now();
        while !read_file(&procs).unwrap_or_default().trim().is_empty() {
            ensure!(
                t0.elapsed() < Duration::from_secs(30),
                "{procs} never emptied"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        std::thread::sleep(Duration::from_secs(2));
        ensure!(
            attr(0, "cgroup")? == cg,
            "vgpu0 bound to {:?} after the kill, want the dead {cg} (a poststop ran?)",
            attr(0, "cgroup")?
        );
        ensure!(
            std::path::Path::new("/run/vgpu/hooks/vgpu0.json").exists(),
            "no hook record of the killed container"
        );
        // The next container on vGPU 0: its hook frees the dead one's
        // binding and takes the vGPU, at the vGPU's full ceiling.
        let (code, out) = start("k2", 0, &[])?;
        ensure!(
            code == 0,
            "podman run k2 on the killed container's vGPU: {out}"
        );
        check_at_ceiling("k2", 0, 1024)?;
        let cg2 = cgroup_of("k2")?;
        ensure!(
            attr(0, "cgroup")? == cg2 && cg2 != cg,
            "vgpu0 bound to {:?}, k2 is in {cg2}",
            attr(0, "cgroup")?
        );
        Ok(())
    })
}

/// `vgpu-selftest breakout-attempts HOSTPID HOSTFD BPID UVMMAJOR VMAJ VMIN`,
/// run inside a container: every attempt, one line `NAME: ANSWER`.
pub fn attempts(args: &[String]) -> i32 {
    let [hpid, hfd, bpid, uvm, vmaj, vmin] = args else {
        eprintln!("breakout-attempts: HOSTPID HOSTFD BPID UVMMAJOR VMAJ VMIN");
        return 2;
    };
    let num = |s: &String| s.parse::<u32>().unwrap_or(u32::MAX);
    let (uvm, vmaj, vmin, bpid) = (num(uvm), num(vmaj), num(vmin), num(bpid));
    let report = |k: &str, v: String| println!("{k}: {v}");
    let errno = || std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
    let res = |rc: libc::c_int| {
        if rc == 0 {
            "ok".to_string()
        } else {
            format!("errno {}", errno())
        }
    };
    let cap_mknod = read_file("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .and_then(|h| u64::from_str_radix(h.trim(), 16).ok())
        })
        .is_some_and(|c| c & (1 << CAP_MKNOD) != 0);
    report("cap_mknod", if cap_mknod { "yes" } else { "no" }.into());
    let mknod = |path: &str, maj: u32, min: u32| -> String {
        let _ = std::fs::remove_file(path);
        let Ok(c) = std::ffi::CString::new(path) else {
            return "bad path".into();
        };
        // SAFETY: a NUL-terminated path; mknod(2) reads nothing else.
        let rc = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o600, libc::makedev(maj, min)) };
        match res(rc).as_str() {
            "ok" => format!("made, {}", open_whose(path)),
            e => e.to_string(),
        }
    };
    for (k, path, maj, min) in [
        ("mknod 195:255", "/tmp/ctl", 195, 255),
        ("mknod 195:1", "/tmp/gpu1", 195, 1),
        ("mknod uvm:0", "/tmp/uvm", uvm, 0),
        ("mknod uvm:1", "/tmp/uvm-tools", uvm, 1),
        ("mknod vgpu1", "/tmp/vgpu1", vmaj, vmin),
    ] {
        report(k, mknod(path, maj, min));
    }
    for (k, path) in [
        ("open /dev/nvidiactl", "/dev/nvidiactl".to_string()),
        (
            "open /proc/self/root/dev/nvidiactl",
            "/proc/self/root/dev/nvidiactl".to_string(),
        ),
        ("open host /proc/PID/fd", format!("/proc/{hpid}/fd/{hfd}")),
        ("open /dev/vgpu1", "/dev/vgpu1".to_string()),
        ("open /dev/nvidia1", "/dev/nvidia1".to_string()),
    ] {
        report(k, open_whose(&path));
    }
    let b = bpid as libc::pid_t;
    // SAFETY: ptrace(2) ATTACH of a PID, no pointers; detached at once if
    // it ever succeeds.
    let rc = unsafe { libc::ptrace(libc::PTRACE_ATTACH, b, 0, 0) } as libc::c_int;
    let r = res(rc);
    if rc == 0 {
        // SAFETY: as above.
        unsafe { libc::ptrace(libc::PTRACE_DETACH, b, 0, 0) };
    }
    report("ptrace b", r);
    // SAFETY: signal 0 only checks that the process can be reached.
    report("kill b", res(unsafe { libc::kill(b, 0) }));
    // An unprivileged user and mount namespace, in a child (the
    // namespaces stay there).
    use std::io::Write;
    let _ = std::io::stdout().flush();
    // SAFETY: single-threaded; the child only makes system calls, prints
    // and exits.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: unshare(2) with flags only.
        let rc = unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) };
        report("unshare -Urm", res(rc));
        if rc == 0 {
            let _ = std::fs::write("/proc/self/setgroups", "deny");
            let _ = std::fs::write("/proc/self/uid_map", "0 0 1");
            let _ = std::fs::write("/proc/self/gid_map", "0 0 1");
            let _ = std::fs::create_dir_all("/tmp/ns");
            let mnt = |src: &str, dst: &str, fs: &str, flags: libc::c_ulong| -> libc::c_int {
                let (s, d, f) = (
                    std::ffi::CString::new(src).unwrap_or_default(),
                    std::ffi::CString::new(dst).unwrap_or_default(),
                    std::ffi::CString::new(fs).unwrap_or_default(),
                );
                // SAFETY: NUL-terminated strings; no data argument.
                unsafe { libc::mount(s.as_ptr(), d.as_ptr(), f.as_ptr(), flags, std::ptr::null()) }
            };
            report(
                "userns mount devtmpfs",
                res(mnt("devtmpfs", "/tmp/ns", "devtmpfs", 0)),
            );
            report("userns mknod 195:255", mknod("/tmp/ns-ctl", 195, 255));
            let _ = std::fs::write("/tmp/ns-bind", "");
            let r = mnt("/dev/nvidiactl", "/tmp/ns-bind", "", libc::MS_BIND);
            report(
                "userns bind /dev/nvidiactl",
                if r == 0 {
                    open_whose("/tmp/ns-bind")
                } else {
                    format!("errno {}", errno())
                },
            );
        }
        let _ = std::io::stdout().flush();
        // SAFETY: ends the child without running the parent's destructors.
        unsafe { libc::_exit(0) };
    }
    let mut st = 0;
    // SAFETY: reaps the child forked above.
    unsafe { libc::waitpid(pid, &mut st, 0) };
    0
}

/// Opens `path` read-write: `errno N`, or `ok vgpu` / `ok driver` for an
/// NVIDIA ctl node (by who picks its client handle), or `ok`.
fn open_whose(path: &str) -> String {
    match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
    {
        Err(e) => format!("errno {}", e.raw_os_error().unwrap_or(0)),
        Ok(f) => {
            let rdev = f.metadata().map(|m| m.rdev()).unwrap_or(0);
            drop(f);
            if libc::major(rdev) == 195 && libc::minor(rdev) == 255 {
                match whose_file(path) {
                    Ok(w) => format!("ok {w}"),
                    Err(e) => format!("ok, {e}"),
                }
            } else {
                "ok".into()
            }
        }
    }
}
