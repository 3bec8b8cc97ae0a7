// SPDX-License-Identifier: GPL-2.0

//! `vgpuctl hook`: the OCI hooks of the CDI spec, against a simulated
//! module, a fake `/proc`, cgroup tree and bundle, with the OCI state on
//! standard input as a runtime writes it.

mod common;

use std::fs;
use std::path::PathBuf;

use common::{Fake, Run, GIB};

/// A fake host: vGPUs 0 (1 GiB, 30%) and 1 (2 GiB) on GPU 0, unbound.
struct Host {
    f: Fake,
}

impl Host {
    fn new() -> Self {
        let f = Fake::new(1, Some(24), true);
        f.ok(&[
            "create",
            "--id",
            "0",
            "--gpu",
            "0",
            "--memory",
            "1GiB",
            "--compute",
            "30%",
        ]);
        f.ok(&["create", "--id", "1", "--gpu", "0", "--memory", "2GiB"]);
        Host { f }
    }

    fn state_dir(&self) -> PathBuf {
        self.f.path().join("run/vgpu/hooks")
    }

    /// The hooks' log (the kernel log on a host).
    fn log_path(&self) -> PathBuf {
        self.f.path().join("kmsg")
    }

    fn log(&self) -> String {
        fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// Container `id`: init process `pid` in cgroup `/ctr/ID` (with that
    /// process in it), its bundle with environment `env`.
    fn container(&self, id: &str, pid: u32, env: &[&str]) {
        self.container_with(id, pid, env, &[]);
    }

    /// [`Host::container`] with the createRuntime hooks of the CDI devices
    /// of vGPUs `vgpus` in its `config.json`, as the runtime writes them.
    fn container_with(&self, id: &str, pid: u32, env: &[&str], vgpus: &[u32]) {
        let proc_dir = self.f.path().join("proc").join(pid.to_string());
        fs::create_dir_all(&proc_dir).unwrap();
        fs::write(proc_dir.join("cgroup"), format!("0::/ctr/{id}\n")).unwrap();
        let cg = self.f.sys().join("fs/cgroup/ctr").join(id);
        fs::create_dir_all(&cg).unwrap();
        fs::write(cg.join("cgroup.procs"), format!("{pid}\n")).unwrap();
        let bundle = self.f.path().join("bundles").join(id);
        fs::create_dir_all(&bundle).unwrap();
        let hooks: Vec<serde_json::Value> = vgpus
            .iter()
            .map(|v| {
                serde_json::json!({"path": "/usr/bin/vgpuctl",
                    "args": ["vgpuctl", "hook", "create-runtime", v.to_string()]})
            })
            .collect();
        let config = serde_json::json!({
            "ociVersion": "1.0.2",
            "process": {"args": ["sh"], "env": env},
            "root": {"path": "rootfs"},
            "hooks": {"createRuntime": hooks, "poststop": []}
        });
        fs::write(bundle.join("config.json"), config.to_string()).unwrap();
    }

    /// Container `id`'s processes are gone (its cgroup is empty).
    fn vanish(&self, id: &str) {
        fs::write(
            self.f
                .sys()
                .join("fs/cgroup/ctr")
                .join(id)
                .join("cgroup.procs"),
            "",
        )
        .unwrap();
    }

    /// Runs hook `stage` for vGPU `vgpu` with `state` on standard input.
    fn hook_raw(&self, stage: &str, vgpu: u32, state: &str) -> Run {
        let proc_root = self.f.path().join("proc");
        let state_dir = self.state_dir();
        let log = self.log_path();
        if !log.exists() {
            fs::write(&log, "").unwrap();
        }
        let c = self.f.cmd(&[
            "hook",
            stage,
            &vgpu.to_string(),
            "--state-dir",
            state_dir.to_str().unwrap(),
            "--proc-root",
            proc_root.to_str().unwrap(),
            "--log",
            log.to_str().unwrap(),
        ]);
        common::run_with_input(c, state)
    }

    fn start(&self, vgpu: u32, id: &str, pid: u32) -> Run {
        let bundle = self.f.path().join("bundles").join(id);
        let state = serde_json::json!({
            "ociVersion": "1.0.2", "id": id, "status": "created", "pid": pid,
            "bundle": bundle, "annotations": {}
        });
        self.hook_raw("create-runtime", vgpu, &state.to_string())
    }

    fn stop(&self, vgpu: u32, id: &str) -> Run {
        let state = serde_json::json!({"ociVersion": "1.0.2", "id": id, "status": "stopped"});
        self.hook_raw("poststop", vgpu, &state.to_string())
    }

    fn attr(&self, vgpu: u32, name: &str) -> String {
        self.f.attr(vgpu, name)
    }

    fn record(&self, vgpu: u32) -> bool {
        self.state_dir().join(format!("vgpu{vgpu}.json")).exists()
    }

    /// vGPU `vgpu` as the admin left it: unbound, its limit and share, no record.
    fn assert_free(&self, vgpu: u32, limit: u64, share: &str) {
        assert_eq!(self.attr(vgpu, "cgroup"), "", "vgpu{vgpu} bound");
        assert_eq!(self.attr(vgpu, "memory_limit"), limit.to_string());
        assert_eq!(self.attr(vgpu, "compute_share"), share);
        assert!(!self.record(vgpu), "vgpu{vgpu}: record left");
    }
}

fn ok(r: &Run) {
    assert_eq!(r.code, 0, "{}{}", r.out, r.err);
}

/// Succeeded, saying `what`.
fn ok_saying(r: &Run, what: &str) {
    ok(r);
    assert!(r.out.contains(what), "{:?} lacks {what:?}", r.out);
}

/// Refused with exit status `code` and `why` on stderr.
fn refused_with(r: &Run, code: i32, why: &str) {
    assert_eq!(r.code, code, "{}{}", r.out, r.err);
    assert!(r.err.contains(why), "{:?} lacks {why:?}", r.err);
}

/// Refused because the vGPU is held (exit status 7).
fn refused(r: &Run, why: &str) {
    refused_with(r, 7, why);
}

#[test]
fn binds_at_start_and_frees_at_stop() {
    let h = Host::new();
    h.container("c1", 100, &["PATH=/bin"]);
    let r = h.start(0, "c1", 100);
    ok(&r);
    assert!(
        r.out
            .contains("vgpu0: bound to container c1 (cgroup /ctr/c1)"),
        "{}",
        r.out
    );
    assert_eq!(h.attr(0, "cgroup"), "/ctr/c1");
    assert_eq!(h.attr(0, "memory_limit"), GIB.to_string());
    assert!(h.record(0));
    // A runtime that runs the hook again: nothing changes.
    ok(&h.start(0, "c1", 100));
    assert_eq!(h.attr(0, "cgroup"), "/ctr/c1");
    ok_saying(&h.stop(0, "c1"), "vgpu0: freed from container c1");
    h.assert_free(0, GIB, "30");
    // And again: nothing to do.
    ok_saying(&h.stop(0, "c1"), "nothing to do");
}

#[test]
fn sizes_from_the_environment_within_the_admin_bound() {
    let h = Host::new();
    h.container("c1", 100, &["VGPU_MEMORY=512MiB", "VGPU_COMPUTE=20%"]);
    ok_saying(&h.start(0, "c1", 100), "memory 512 MiB, compute 20%");
    assert_eq!(h.attr(0, "memory_limit"), (512u64 << 20).to_string());
    assert_eq!(h.attr(0, "compute_share"), "20");
    ok(&h.stop(0, "c1"));
    h.assert_free(0, GIB, "30");

    // At the bound itself, and `max` under an unlimited admin.
    h.container("c2", 101, &["VGPU_MEMORY=1GiB", "VGPU_COMPUTE=30"]);
    ok(&h.start(0, "c2", 101));
    ok(&h.stop(0, "c2"));
    h.f.ok(&["set", "1", "--memory", "max", "--force"]);
    h.container("c3", 102, &["VGPU_MEMORY=max"]);
    ok(&h.start(1, "c3", 102));
    assert_eq!(h.attr(1, "memory_limit"), "max");
    ok(&h.stop(1, "c3"));

    // Over the bound, or not a size: refused, the vGPU untouched.
    for (env, why) in [
        (
            "VGPU_MEMORY=2GiB",
            "VGPU_MEMORY=2 GiB is over vGPU 0's memory limit, 1 GiB (set by its admin)",
        ),
        (
            "VGPU_MEMORY=max",
            "VGPU_MEMORY=max is over vGPU 0's memory limit, 1 GiB",
        ),
        (
            "VGPU_COMPUTE=31%",
            "VGPU_COMPUTE=31% is over vGPU 0's compute share, 30%",
        ),
        (
            "VGPU_MEMORY=6 apples",
            "VGPU_MEMORY=\"6 apples\": \"6 apples\" is not a size",
        ),
        ("VGPU_MEMORY=-1", "is not a size"),
        (
            "VGPU_COMPUTE=half",
            "VGPU_COMPUTE=\"half\": \"half\" is not a compute share",
        ),
        ("VGPU_COMPUTE=101%", "compute share 101% is over 100%"),
    ] {
        h.container("bad", 103, &[env]);
        let r = h.start(0, "bad", 103);
        assert_ne!(r.code, 0, "{env}: {}", r.out);
        assert!(r.err.contains(why), "{env}: {:?} lacks {why:?}", r.err);
        h.assert_free(0, GIB, "30");
    }
}

#[test]
fn a_vgpu_serves_one_container() {
    let h = Host::new();
    h.container("c1", 100, &[]);
    h.container("c2", 200, &[]);
    ok(&h.start(0, "c1", 100));
    refused(
        &h.start(0, "c2", 200),
        "refused: vGPU 0 is in use by container c1 (cgroup /ctr/c1): a vGPU serves one container at a time",
    );
    // The refused container's poststop leaves c1's vGPU alone.
    ok_saying(&h.stop(0, "c2"), "held by container c1, not c2; left alone");
    assert_eq!(h.attr(0, "cgroup"), "/ctr/c1");
    // c2 can have the other vGPU.
    ok(&h.start(1, "c2", 200));
    assert_eq!(h.attr(1, "cgroup"), "/ctr/c2");
}

#[test]
fn a_vanished_container_is_freed_by_the_next_start() {
    let h = Host::new();
    h.container("c1", 100, &["VGPU_MEMORY=256MiB"]);
    ok(&h.start(0, "c1", 100));
    // c1's runtime died without its poststop; its processes are gone.
    h.vanish("c1");
    h.container("c2", 200, &[]);
    let r = h.start(0, "c2", 200);
    ok(&r);
    assert_eq!(h.attr(0, "cgroup"), "/ctr/c2");
    // c1's smaller limit did not stay behind.
    assert_eq!(h.attr(0, "memory_limit"), GIB.to_string());
    // c1's late poststop does not free c2's vGPU.
    ok(&h.stop(0, "c1"));
    assert_eq!(h.attr(0, "cgroup"), "/ctr/c2");
}

#[test]
fn refuses_vgpus_the_admin_holds() {
    let h = Host::new();
    h.container("c1", 100, &[]);
    h.f.ok(&["set", "0", "--cgroup", "/pods/manual"]);
    refused(
        &h.start(0, "c1", 100),
        "vGPU 0 is bound to cgroup /pods/manual by its admin",
    );
    assert_eq!(h.attr(0, "cgroup"), "/pods/manual");
    h.f.set_users(1, 2);
    refused(
        &h.start(1, "c1", 100),
        "vGPU 1 still has 2 open file(s) from an earlier user",
    );
    assert!(!h.record(0) && !h.record(1));
    let r = h.start(7, "c1", 100);
    assert_eq!(r.code, 5, "{}", r.err);
    assert!(r.err.contains("no such vGPU: 7"), "{}", r.err);
}

#[test]
fn bad_states_and_cgroups() {
    let h = Host::new();
    for (state, why) in [
        ("", "standard input is not an OCI container state"),
        ("{\"id\": \"x\"}", "the OCI state has no pid"),
        (
            "{\"id\": \"x\", \"pid\": 0, \"bundle\": \"/b\"}",
            "the OCI state has no pid",
        ),
        ("{\"id\": \"\", \"pid\": 5}", "empty id"),
        ("not json", "not an OCI container state"),
    ] {
        let r = h.hook_raw("create-runtime", 0, state);
        assert_eq!(r.code, 2, "{state}: {}", r.err);
        assert!(r.err.contains(why), "{state}: {}", r.err);
    }
    // A container in the root cgroup would open the vGPU to everyone.
    h.container("root", 300, &[]);
    fs::write(h.f.path().join("proc/300/cgroup"), "0::/\n").unwrap();
    refused_with(
        &h.start(0, "root", 300),
        1,
        "the container runs in the root cgroup",
    );
    // cgroup v1 only.
    fs::write(h.f.path().join("proc/300/cgroup"), "4:memory:/x\n").unwrap();
    let r = h.start(0, "root", 300);
    assert!(r.err.contains("has no cgroup v2 line"), "{}", r.err);
    // Not root.
    let mut c = h.f.cmd(&["hook", "poststop", "0"]);
    c.env("VGPUCTL_EUID", "1000");
    let r = common::run(c);
    assert_eq!(r.code, 4, "{}", r.err);
    h.assert_free(0, GIB, "30");
}

/// A failure half-way (the bind refused by the module) undoes the sizes
/// and the record: nothing is left half-bound.
#[test]
fn a_failed_bind_leaves_nothing_behind() {
    let h = Host::new();
    h.container("c1", 100, &["VGPU_MEMORY=512MiB", "VGPU_COMPUTE=10%"]);
    h.f.fail("vgpu0/cgroup", "ENOMEM");
    let r = h.start(0, "c1", 100);
    assert_eq!(r.code, 1, "{}", r.err);
    assert!(r.err.contains("/ctr/c1"), "{}", r.err);
    assert!(h.log().contains("out of memory"), "{}", h.log());
    h.assert_free(0, GIB, "30");
}

/// An admin's change while the container runs wins over the restore.
#[test]
fn an_admin_change_survives_the_stop() {
    let h = Host::new();
    h.container("c1", 100, &["VGPU_MEMORY=512MiB"]);
    ok(&h.start(0, "c1", 100));
    h.f.ok(&["set", "0", "--memory", "768MiB", "--force"]);
    ok(&h.stop(0, "c1"));
    assert_eq!(h.attr(0, "memory_limit"), (768u64 << 20).to_string());
    assert_eq!(h.attr(0, "cgroup"), "");
}

/// Containers started at once on one vGPU: exactly one gets it (the hooks
/// hold a lock from the check to the bind).
#[test]
fn racing_starts_bind_once() {
    for round in 0..5 {
        let h = Host::new();
        let n = 8;
        for i in 0..n {
            h.container(&format!("r{i}"), 1000 + i, &[]);
        }
        let runs: Vec<Run> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..n)
                .map(|i| {
                    let h = &h;
                    s.spawn(move || h.start(0, &format!("r{i}"), 1000 + i))
                })
                .collect();
            hs.into_iter().map(|t| t.join().unwrap()).collect()
        });
        let won: Vec<usize> = (0..n as usize).filter(|&i| runs[i].code == 0).collect();
        assert_eq!(won.len(), 1, "round {round}: {} won", won.len());
        assert_eq!(h.attr(0, "cgroup"), format!("/ctr/r{}", won[0]));
        for (i, r) in runs.iter().enumerate() {
            if i != won[0] {
                assert!(r.err.contains("is in use by container"), "{}", r.err);
            }
        }
    }
}

/// A container with several vGPUs gets all of them from its first hook, or
/// none: a refusal on one leaves the others untouched (crun runs no
/// poststop for a container whose creation failed).
#[test]
fn several_vgpus_all_or_none() {
    let h = Host::new();
    h.f.ok(&[
        "create",
        "--id",
        "2",
        "--gpu",
        "0",
        "--memory",
        "1GiB",
        "--compute",
        "10%",
        "--force",
    ]);
    h.container("holder", 100, &[]);
    ok(&h.start(0, "holder", 100));
    // Its first hook (vGPU 1) checks vGPU 0 too, and refuses.
    h.container_with("multi", 200, &["VGPU_MEMORY=512MiB"], &[1, 0]);
    refused(
        &h.start(1, "multi", 200),
        "vGPU 0 is in use by container holder",
    );
    assert_eq!(
        h.attr(1, "cgroup"),
        "",
        "vGPU 1 bound to a container that never ran"
    );
    assert_eq!(h.attr(1, "memory_limit"), (2 * GIB).to_string());
    assert!(!h.record(1));
    // Both free: the first hook binds both, the second finds its own bound.
    ok(&h.stop(0, "holder"));
    h.container_with("pair", 300, &["VGPU_MEMORY=512MiB"], &[2, 0]);
    ok_saying(
        &h.start(0, "pair", 300),
        "vgpu0, vgpu2: bound to container pair",
    );
    for v in [0, 2] {
        assert_eq!(h.attr(v, "cgroup"), "/ctr/pair");
        assert_eq!(h.attr(v, "memory_limit"), (512u64 << 20).to_string());
    }
    ok_saying(&h.start(2, "pair", 300), "already bound to container pair");
    // A bind that fails on the second vGPU undoes the first.
    h.container_with("late", 400, &[], &[1, 2]);
    ok(&h.stop(0, "pair"));
    ok(&h.stop(2, "pair"));
    h.f.fail("vgpu2/cgroup", "EBUSY");
    let r = h.start(1, "late", 400);
    assert_eq!(r.code, 1, "{}", r.err);
    h.assert_free(1, 2 * GIB, "100");
    h.assert_free(2, GIB, "10");
}

/// Container `ctr` of pod `uid`, init process `pid`, in cgroup `cg`.
fn pod_container(h: &Host, pid: u32, cg: &str) {
    let proc_dir = h.f.path().join("proc").join(pid.to_string());
    fs::create_dir_all(&proc_dir).unwrap();
    fs::write(proc_dir.join("cgroup"), format!("0::{cg}\n")).unwrap();
}

/// createRuntime of a DRA claim's vGPU (`--pod UID`) for process `pid`.
fn pod_start(h: &Host, vgpu: u32, pid: u32, pod: &str) -> Run {
    let state = serde_json::json!({
        "ociVersion": "1.0.2", "id": format!("ctr{pid}"), "status": "created", "pid": pid,
        "bundle": "/nonexistent"
    });
    let c = h.f.cmd(&[
        "hook",
        "create-runtime",
        &vgpu.to_string(),
        "--pod",
        pod,
        "--state-dir",
        h.state_dir().to_str().unwrap(),
        "--proc-root",
        h.f.path().join("proc").to_str().unwrap(),
        "--log",
        h.log_path().to_str().unwrap(),
    ]);
    common::run_with_input(c, &state.to_string())
}

#[test]
fn a_claims_vgpu_binds_to_its_pod() {
    let h = Host::new();
    fs::write(h.log_path(), "").unwrap();
    let uid = "6f1c2a9e-0b7d-4e53-9a0c-2d4b8e7f1a35";
    // cgroupfs driver: two containers of the pod share the pod's cgroup.
    pod_container(&h, 200, &format!("/kubepods/besteffort/pod{uid}/ctr-a"));
    pod_container(&h, 201, &format!("/kubepods/besteffort/pod{uid}/ctr-b"));
    ok_saying(&pod_start(&h, 0, 200, uid), "bound to pod");
    assert_eq!(
        h.attr(0, "cgroup"),
        format!("/kubepods/besteffort/pod{uid}")
    );
    ok_saying(&pod_start(&h, 0, 201, uid), "already bound to pod");
    // Sizes are the claim's: the admin values stay.
    assert_eq!(h.attr(0, "memory_limit"), GIB.to_string());
    // Another pod's container: refused, the binding stays.
    let other = "0a0a0a0a-1111-2222-3333-444444444444";
    pod_container(&h, 202, &format!("/kubepods/besteffort/pod{other}/ctr"));
    refused(&pod_start(&h, 0, 202, other), "not to pod");
    assert_eq!(
        h.attr(0, "cgroup"),
        format!("/kubepods/besteffort/pod{uid}")
    );
    // A container not in the pod named: refused, nothing bound.
    refused_with(&pod_start(&h, 1, 202, uid), 1, "not in pod");
    assert_eq!(h.attr(1, "cgroup"), "");
    // systemd driver naming.
    let sd = format!(
        "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{}.slice/cri-containerd-1.scope",
        other.replace('-', "_")
    );
    pod_container(&h, 203, &sd);
    ok(&pod_start(&h, 1, 203, other));
    assert_eq!(
        h.attr(1, "cgroup"),
        sd.rsplit_once('/').unwrap().0.to_string()
    );
    // Bad UIDs are refused before anything is read.
    refused_with(&pod_start(&h, 1, 203, "../../x"), 2, "not a pod UID");
    // Poststop leaves the binding to the plugin.
    let c = h.f.cmd(&[
        "hook",
        "poststop",
        "0",
        "--pod",
        uid,
        "--state-dir",
        h.state_dir().to_str().unwrap(),
        "--log",
        h.log_path().to_str().unwrap(),
    ]);
    ok_saying(
        &common::run_with_input(c, r#"{"ociVersion":"1.0.2","id":"x","status":"stopped"}"#),
        "stays until its claim is unprepared",
    );
    assert_eq!(
        h.attr(0, "cgroup"),
        format!("/kubepods/besteffort/pod{uid}")
    );
}

/// A module that does not take over NVIDIA's nodes (no
/// `class/vgpu/driver_nodes`) would let a container given NVIDIA's own
/// nodes reach the driver: the hook refuses to start it, and binds
/// nothing.
#[test]
fn refuses_a_module_that_leaves_nvidias_nodes_to_the_driver() {
    let h = Host::new();
    h.container("c1", 100, &["PATH=/bin"]);
    fs::remove_file(h.f.sys().join("class/vgpu/driver_nodes")).unwrap();
    let r = h.start(0, "c1", 100);
    refused_with(
        &r,
        1,
        "does not take over the open of NVIDIA's device nodes",
    );
    assert_eq!(h.attr(0, "cgroup"), "", "bound by a refused hook");
    assert!(!h.record(0));
}

/// `hook create-container` with `state` on standard input, `proc` as
/// the hook's /proc.
fn proc_hook(h: &Host, args: &[&str], state: &serde_json::Value) -> Run {
    let mut a = vec!["hook", "create-container"];
    a.extend_from_slice(args);
    let proc_root = h.f.path().join("proc");
    let log = h.log_path();
    a.extend([
        "--proc-root",
        proc_root.to_str().unwrap(),
        "--log",
        log.to_str().unwrap(),
    ]);
    common::run_with_input(h.f.cmd(&a), &state.to_string())
}

/// The createContainer hook mounts only from inside a container's mount
/// namespace, over the container's own procfs: run in the host's, or on a
/// root whose /proc is not a procfs, it refuses, mounts nothing, and logs
/// why. It takes no vGPU; the vGPU hooks need one. (Its mounting is
/// tested in the VM, under crun and runc: the containers suite.)
#[test]
fn the_proc_hook_refuses_outside_a_container() {
    let h = Host::new();
    fs::write(h.log_path(), "").unwrap();
    h.container("p1", 300, &[]);
    let bundle = h.f.path().join("bundles/p1");
    let rootfs = bundle.join("rootfs");
    fs::create_dir_all(rootfs.join("proc/driver/nvidia")).unwrap();
    let state = serde_json::json!({"ociVersion": "1.0.2", "id": "p1", "status": "creating",
        "pid": 1, "bundle": bundle});
    let ns = |pid: &str, target: &str| {
        let d = h.f.path().join("proc").join(pid).join("ns");
        fs::create_dir_all(&d).unwrap();
        let _ = fs::remove_file(d.join("mnt"));
        std::os::unix::fs::symlink(target, d.join("mnt")).unwrap();
    };
    // The host's mount namespace: refused before anything is looked at.
    ns("self", "mnt:[4026531841]");
    ns("1", "mnt:[4026531841]");
    let r = proc_hook(&h, &[], &state);
    assert_eq!(r.code, 1, "{}", r.err);
    assert!(
        r.err.contains("runs in the host's mount namespace: vgpuctl hook create-container must be a createContainer hook"),
        "{}",
        r.err
    );
    assert!(
        h.log().contains("vgpuctl hook: createContainer container p1: /proc: refused: this runs in the host's mount namespace"),
        "{}",
        h.log()
    );
    // Another namespace, but the root's /proc is a plain directory (what
    // the host sees of a container's root).
    ns("self", "mnt:[4026532000]");
    let r = proc_hook(&h, &[], &state);
    assert_eq!(r.code, 1, "{}", r.err);
    assert!(
        r.err
            .contains("/proc is not a procfs: run this as a createContainer hook"),
        "{}",
        r.err
    );
    // No bundle in the state.
    let r = proc_hook(&h, &[], &serde_json::json!({"id": "p1"}));
    assert_eq!(r.code, 2, "{}", r.err);
    // It names no vGPU; the others need one.
    let r = proc_hook(&h, &["3"], &state);
    assert_eq!(r.code, 2, "{}", r.err);
    assert!(
        r.err.contains("create-container takes no vGPU"),
        "{}",
        r.err
    );
    let r = common::run_with_input(
        h.f.cmd(&[
            "hook",
            "create-runtime",
            "--log",
            h.log_path().to_str().unwrap(),
        ]),
        &state.to_string(),
    );
    assert_eq!(r.code, 2, "{}", r.err);
    assert!(
        r.err.contains("create-runtime needs the vGPU's number"),
        "{}",
        r.err
    );
}
