// SPDX-License-Identifier: GPL-2.0

//! The DRA kubelet plugin (`vgpu-dra-plugin`) against the real module and
//! the driver double, driven by `vgpu-dra-testkubelet`, which speaks the
//! kubelet's side of the plugin's gRPC over the plugin's real sockets and
//! starts "containers" the way a CDI-aware runtime does (in the pod's
//! cgroup, after the CDI spec's createRuntime hooks ran). The VM has no
//! network stack and no API server: the plugin reads claims from and
//! writes its ResourceSlice to a directory (`--kube-api dir:`), with the
//! objects an API server would hold.
//!
//! The pod's processes use NVIDIA's own node names, as the claim's CDI spec
//! gives them (`/dev/nvidiactl`, `/dev/nvidiaK`, `/dev/nvidia-uvm`, each at
//! its own host path: the testkubelet makes no mount namespace and checks
//! that each is a character device there): the vGPU bound to the pod's
//! cgroup by the spec's hook makes their opens vgpu's. The testkubelet is
//! no runtime: it runs the createRuntime hooks only. So one container of
//! a pod also goes through a real one, podman with runc (containerd's
//! runtime) in the pod's cgroup, with the claim's CDI device: the same
//! spec, all its hooks (the createContainer one too), a mount namespace.

use std::process::{Child, Command, Stdio};

use crate::breakout::{
    attempts_in, differing, expect_attempts, parse_report, targets, with_mknod, without_mknod, Row,
};
use crate::ensure;
use crate::sys::{exists, make_uvm_nodes, read_file, remove_uvm_nodes, run, sh};
use crate::tap::{Outcome, Test};
use crate::tests;

pub const TESTS: &[Test] = tests![
    a_pod_gets_its_claim_through_the_kubelet_plugin = pod_claim,
    claims_beyond_the_gpu_are_refused = refused,
    the_daemonsets_image_starts_and_registers = crate::dra_image::image_starts,
    a_pod_container_through_runc = pod_through_runc,
    attempts_from_a_dra_pod_container_fail = pod_breakout,
];

pub(crate) const GIB: u64 = 1 << 30;
const DIR: &str = "/tmp/dra";
const POD: &str = "5d0c7a1e-9b2f-4c3d-8e4f-a1b2c3d4e5f6";
pub(crate) const CLAIM_UID: &str = "c1a1e000-0000-4000-8000-000000000001";

pub(crate) fn path(rel: &str) -> String {
    format!("{DIR}/{rel}")
}

/// The plugin, running.
struct Plugin {
    child: Child,
}

impl Plugin {
    fn start(tag: &str) -> Result<Plugin, String> {
        Self::start_in(tag, &path("cdi"))
    }

    /// [`Plugin::start`] writing its CDI specs to `cdi_dir`.
    fn start_in(tag: &str, cdi_dir: &str) -> Result<Plugin, String> {
        let log = std::fs::File::create(path(&format!("plugin-{tag}.log")))
            .map_err(|e| format!("plugin log: {e}"))?;
        let child = Command::new("/bin/vgpu-dra-plugin")
            .args([
                "--node-name",
                "vm",
                "--kube-api",
                &format!("dir:{}", path("api")),
                "--registry-dir",
                &path("registry"),
                "--plugin-dir",
                &path("plugin"),
                "--cdi-dir",
                cdi_dir,
                "--hook-path",
                "/bin/vgpuctl",
            ])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("vgpu-dra-plugin: {e}"))?;
        Ok(Plugin { child })
    }

    fn log(tag: &str) -> String {
        read_file(&path(&format!("plugin-{tag}.log"))).unwrap_or_default()
    }

    /// SIGTERM, and wait for it to go; its registration socket goes with it.
    fn stop(mut self) -> Outcome {
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let t0 = std::time::Instant::now();
        let st = loop {
            if let Some(st) = self.child.try_wait().map_err(|e| format!("wait: {e}"))? {
                break st;
            }
            ensure!(
                t0.elapsed() < std::time::Duration::from_secs(20),
                "the plugin did not stop within 20 s of SIGTERM"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        ensure!(st.success(), "the plugin exited with {st} on SIGTERM");
        ensure!(
            !exists(&path("registry/vgpu.dev-reg.sock")),
            "the registration socket outlived the plugin"
        );
        Ok(())
    }
}

impl Drop for Plugin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `vgpu-dra-testkubelet ARGS`: its stdout parsed as JSON.
fn kubelet(args: &[&str]) -> Result<serde_json::Value, String> {
    // Every call is bounded: a hang fails the test, not the whole VM run.
    let (code, out) = run(Command::new("timeout")
        .args(["60", "/bin/vgpu-dra-testkubelet"])
        .args(args))?;
    ensure!(code == 0, "testkubelet {args:?}: exit {code}: {out}");
    serde_json::from_str(out.trim()).map_err(|e| format!("testkubelet {args:?}: {e}: {out}"))
}

pub(crate) fn call(what: &str, uid: &str, name: &str) -> Result<serde_json::Value, String> {
    kubelet(&[
        what,
        "--endpoint",
        &path("plugin/dra.sock"),
        "--namespace",
        "team-a",
        "--name",
        name,
        "--uid",
        uid,
    ])
}

/// Writes claim `name` (UID `uid`) to the API directory, allocated on
/// `gpu-0` with `memory` bytes and `cores` percent, reserved for [`POD`].
pub(crate) fn put_claim(name: &str, uid: &str, memory: u64, cores: u32) -> Outcome {
    let claim = serde_json::json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "team-a", "uid": uid},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": "vgpu.dev",
            "capacity": {"requests": {"memory": memory.to_string(), "cores": cores.to_string()}}}}]}},
        "status": {
            "allocation": {"devices": {"results": [{"request": "gpu", "driver": "vgpu.dev",
                "pool": "vm", "device": "gpu-0", "shareID": "0b0c0d0e-0000-4000-8000-00000000000a",
                "consumedCapacity": {"memory": memory.to_string(), "cores": cores.to_string()}}]}},
            "reservedFor": [{"resource": "pods", "name": "trainer", "uid": POD}]
        }
    });
    let d = path("api/namespaces/team-a/resourceclaims");
    std::fs::create_dir_all(&d).map_err(|e| format!("{d}: {e}"))?;
    std::fs::write(format!("{d}/{name}.json"), claim.to_string()).map_err(|e| format!("{e}"))
}

pub(crate) fn vgpus() -> Vec<String> {
    std::fs::read_dir("/sys/class/vgpu")
        .map(|d| {
            let mut v: Vec<String> = d
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("vgpu") && n[4..].parse::<u32>().is_ok())
                .collect();
            v.sort();
            v
        })
        .unwrap_or_default()
}

fn attr(v: &str, f: &str) -> Result<String, String> {
    read_file(&format!("/sys/class/vgpu/{v}/{f}"))
}

/// The double with two 4 GiB GPUs, vgpu, the directories.
fn setup() -> Outcome {
    let _ = std::fs::remove_dir_all(DIR);
    for d in ["api/nodes", "registry", "plugin", "cdi"] {
        std::fs::create_dir_all(path(d)).map_err(|e| format!("{d}: {e}"))?;
    }
    std::fs::write(
        path("api/nodes/vm.json"),
        r#"{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "vm", "uid": "0d0d0d0d-0000-4000-8000-000000000000"}}"#,
    )
    .map_err(|e| format!("node: {e}"))?;
    sh("modprobe nvidia gpus=2 vram0_mib=4096 vram1_mib=4096")?;
    make_uvm_nodes()?;
    sh("modprobe vgpu")?;
    Ok(())
}

fn teardown() -> Outcome {
    let _ = sh("rmdir /sys/fs/cgroup/kubepods/besteffort/pod*/* /sys/fs/cgroup/kubepods/besteffort/pod* /sys/fs/cgroup/kubepods/besteffort /sys/fs/cgroup/kubepods /sys/fs/cgroup/other 2>/dev/null; true");
    let vgpu = sh("rmmod vgpu").map(drop);
    remove_uvm_nodes();
    let nvidia = sh("rmmod nvidia").map(drop);
    vgpu.and(nvidia)
}

pub(crate) fn with_node(body: impl FnOnce() -> Outcome) -> Outcome {
    let r = setup().and_then(|()| body());
    let t = teardown();
    r.and(t)
}

/// Registers a freshly started plugin the way the kubelet does.
pub(crate) fn register() -> Outcome {
    let info = kubelet(&[
        "register",
        "--registry-dir",
        &path("registry"),
        "--driver",
        "vgpu.dev",
    ])?;
    ensure!(
        info["type"] == "DRAPlugin"
            && info["name"] == "vgpu.dev"
            && info["endpoint"] == path("plugin/dra.sock")
            && info["supportedVersions"] == serde_json::json!(["v1.DRAPlugin"]),
        "plugin info {info}"
    );
    Ok(())
}

/// The slice the plugin published: two GPUs of 4 GiB with the double's
/// UUIDs and product name, shared by capacity.
pub(crate) fn check_slice() -> Outcome {
    let s: serde_json::Value =
        serde_json::from_str(&read_file(&path("api/resourceslices/vm-vgpu-dev.json"))?)
            .map_err(|e| format!("slice: {e}"))?;
    ensure!(
        s["spec"]["driver"] == "vgpu.dev" && s["spec"]["nodeName"] == "vm",
        "slice {s}"
    );
    ensure!(
        s["metadata"]["ownerReferences"][0]["kind"] == "Node",
        "no owner reference to the node: {s}"
    );
    let devs = s["spec"]["devices"].as_array().ok_or("no devices")?;
    ensure!(devs.len() == 2, "{} devices", devs.len());
    for (k, d) in devs.iter().enumerate() {
        ensure!(d["name"] == format!("gpu-{k}"), "device {k}: {d}");
        ensure!(d["allowMultipleAllocations"] == true, "device {k}: {d}");
        ensure!(
            d["capacity"]["memory"]["value"] == "4Gi",
            "device {k} memory: {d}"
        );
        ensure!(
            d["capacity"]["cores"]["value"] == "100",
            "device {k} cores: {d}"
        );
        let uuid = d["attributes"]["uuid"]["string"].as_str().unwrap_or("");
        let info = sh(&format!("cat /proc/driver/nvidia/gpus/*/information | grep -A8 'GPU UUID: \t {uuid}' | grep 'Device Minor'"))
            .unwrap_or_default();
        ensure!(
            uuid.starts_with("GPU-") && info.trim().ends_with(&k.to_string()),
            "device {k}: uuid {uuid:?} is not GPU {k}'s in procfs ({info:?})"
        );
        ensure!(
            d["attributes"]["productName"]["string"] == "vgpu driver double GPU",
            "device {k} product: {d}"
        );
    }
    Ok(())
}

/// Starts `cmd` as container `ctr` of [`POD`] with CDI device `cdi`;
/// returns (exit code, output).
fn in_pod(ctr: &str, cdi: &str, cmd: &[&str]) -> Result<(i32, String), String> {
    in_pod_from(&path("cdi"), ctr, cdi, cmd)
}

/// [`in_pod`] with the CDI specs in `cdi_dir`.
fn in_pod_from(cdi_dir: &str, ctr: &str, cdi: &str, cmd: &[&str]) -> Result<(i32, String), String> {
    let mut args = vec![
        "run",
        "--cdi-dir",
        cdi_dir,
        "--device",
        cdi,
        "--cgroup-root",
        "/sys/fs/cgroup",
        "--pod-cgroup",
    ];
    let pod_cg = format!("/kubepods/besteffort/pod{POD}");
    args.push(&pod_cg);
    args.extend(["--container", ctr, "--"]);
    args.extend(cmd);
    run(Command::new("timeout")
        .args(["60", "/bin/vgpu-dra-testkubelet"])
        .args(&args))
}

fn pod_claim() -> Outcome {
    with_node(|| {
        let p = Plugin::start("1")?;
        register()?;
        check_slice()?;
        put_claim("trainer-gpu", CLAIM_UID, 2 * GIB, 30)?;
        let r = call("prepare", CLAIM_UID, "trainer-gpu")?;
        ensure!(r["error"] == "", "prepare: {r}");
        let cdi = r["devices"][0]["cdiDeviceIds"][0]
            .as_str()
            .unwrap_or("")
            .to_string();
        ensure!(
            r["devices"][0]["deviceName"] == "gpu-0"
                && r["devices"][0]["poolName"] == "vm"
                && r["devices"][0]["requestNames"] == serde_json::json!(["gpu"])
                && cdi == format!("vgpu.dev/claim={CLAIM_UID}-0"),
            "prepare: {r}"
        );
        let made = vgpus();
        ensure!(made.len() == 1, "vGPUs after prepare: {made:?}");
        let v = made[0].clone();
        ensure!(
            attr(&v, "memory_limit")? == (2 * GIB).to_string(),
            "{v} memory_limit"
        );
        ensure!(attr(&v, "compute_share")? == "30", "{v} compute_share");
        ensure!(attr(&v, "gpu")? == "0", "{v} gpu");

        // The plugin restarts in between: the claim is still prepared, once.
        p.stop()?;
        let p = Plugin::start("2")?;
        register()?;
        let again = call("prepare", CLAIM_UID, "trainer-gpu")?;
        ensure!(again == r, "prepare after restart: {again}, before: {r}");
        ensure!(vgpus() == made, "vGPUs after restart: {:?}", vgpus());
        let log2 = Plugin::log("2");
        ensure!(
            log2.contains("up to date"),
            "the restarted plugin republished: {log2}"
        );

        // The claim's spec gives NVIDIA's nodes, by NVIDIA's names.
        let spec: serde_json::Value = serde_json::from_str(&read_file(&path(&format!(
            "cdi/vgpu.dev-claim_{CLAIM_UID}.json"
        )))?)
        .map_err(|e| format!("the claim's CDI spec: {e}"))?;
        let nodes: Vec<&str> = [
            &spec["containerEdits"],
            &spec["devices"][0]["containerEdits"],
        ]
        .iter()
        .flat_map(|e| e["deviceNodes"].as_array().into_iter().flatten())
        .map(|n| {
            if n["hostPath"] == n["path"] {
                n["path"].as_str().unwrap_or("?")
            } else {
                "?"
            }
        })
        .collect();
        ensure!(
            nodes == ["/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia0"],
            "the claim's device nodes: {nodes:?} in {spec}"
        );

        // A process of the pod, through NVIDIA's nodes, stops at exactly
        // 2 GiB.
        let k = attr(&v, "gpu")?;
        let (code, out) = in_pod(
            "trainer",
            &cdi,
            &["/bin/vgpu-selftest", "demo-alloc", "--nvidia", &k, "64"],
        )?;
        ensure!(code == 0, "the pod's workload: exit {code}: {out}");
        let pod_cg = format!("/kubepods/besteffort/pod{POD}");
        ensure!(
            attr(&v, "cgroup")? == pod_cg,
            "{v} bound to {:?}",
            attr(&v, "cgroup")
        );
        ensure!(
            // The context's own 12 KiB (its UVM VA space) leaves the last chunk out.
            out.contains("GPU size seen   2048 MiB | allocated   1984 MiB in 64 MiB chunks, then NV_ERR_NO_MEMORY (cudaErrorMemoryAllocation) | context 12 KiB, 65524 KiB left"),
            "the pod's workload: {out}"
        );
        ensure!(
            out.contains(&format!(
                "opened /dev/nvidiactl, /dev/nvidia{k} and /dev/nvidia-uvm; GPU registered with UVM"
            )),
            "the pod's workload did not set up UVM: {out}"
        );

        // ... and gets 30% of the GPU's time next to a 70% neighbour.
        sh("mkdir -p /sys/fs/cgroup/other")?;
        sh("vgpuctl create --id 9 --gpu 0 --memory 1GiB --compute 70% --cgroup /other")?;
        let neighbour = Command::new("sh")
            .args(["-c", "echo $$ > /sys/fs/cgroup/other/cgroup.procs && exec /bin/vgpu-selftest demo-compute 9 4"])
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("neighbour: {e}"))?;
        let (code, out) = in_pod(
            "trainer-2",
            &cdi,
            &["/bin/vgpu-selftest", "demo-compute", "--nvidia", &k, "4"],
        )?;
        let n = neighbour
            .wait_with_output()
            .map_err(|e| format!("neighbour: {e}"))?;
        let nout = String::from_utf8_lossy(&n.stdout).to_string();
        ensure!(code == 0, "the pod's compute workload: exit {code}: {out}");
        let share = |s: &str| -> Option<f64> {
            s.split("GPU time")
                .nth(1)?
                .trim()
                .trim_end_matches('%')
                .trim()
                .parse()
                .ok()
        };
        let (mine, theirs) = (share(&out), share(&nout));
        println!("# the pod's share {mine:?}%, its neighbour's {theirs:?}%");
        let (lo, hi) = if std::env::var("vgpu_variant").as_deref() == Ok("debug") {
            (20.0, 36.0)
        } else {
            (27.0, 33.0)
        };
        ensure!(
            mine.is_some_and(|m| (lo..=hi).contains(&m)),
            "the pod got {mine:?}% of the GPU (want 30, {lo}..{hi}); neighbour {theirs:?}"
        );
        sh("vgpuctl remove 9")?;

        // Unprepare: the vGPU and the spec are gone.
        let u = call("unprepare", CLAIM_UID, "trainer-gpu")?;
        ensure!(u["error"] == "", "unprepare: {u}");
        ensure!(vgpus().is_empty(), "vGPUs after unprepare: {:?}", vgpus());
        ensure!(
            !exists(&path(&format!("cdi/vgpu.dev-claim_{CLAIM_UID}.json"))),
            "the claim's CDI spec outlived it"
        );
        let u = call("unprepare", CLAIM_UID, "trainer-gpu")?;
        ensure!(u["error"] == "", "a second unprepare: {u}");
        p.stop()
    })
}

fn refused() -> Outcome {
    with_node(|| {
        let p = Plugin::start("3")?;
        register()?;
        put_claim("big", CLAIM_UID, 3 * GIB, 60)?;
        let r = call("prepare", CLAIM_UID, "big")?;
        ensure!(r["error"] == "", "prepare: {r}");
        let uid2 = "c1a1e000-0000-4000-8000-000000000002";
        put_claim("more", uid2, 2 * GIB, 10)?;
        let r2 = call("prepare", uid2, "more")?;
        let e = r2["error"].as_str().unwrap_or("");
        ensure!(
            e.contains("GPU 0 has 1Gi and 40% cores left")
                && e.contains("the claim asks 2Gi and 10%"),
            "second claim: {r2}"
        );
        ensure!(vgpus().len() == 1, "vGPUs: {:?}", vgpus());
        // A UID the API does not have for that name: the claim was replaced.
        let r3 = call("prepare", "c1a1e000-0000-4000-8000-00000000dead", "big")?;
        ensure!(
            r3["error"]
                .as_str()
                .unwrap_or("")
                .contains("it was deleted"),
            "stale UID: {r3}"
        );
        let u = call("unprepare", CLAIM_UID, "big")?;
        ensure!(u["error"] == "" && vgpus().is_empty(), "unprepare: {u}");
        p.stop()
    })
}

/// A container of [`POD`] started by podman with runc (`--cgroup-parent`
/// the pod's cgroup, as the kubelet's cgroupfs driver names it) and the
/// claim's CDI device from the plugin's spec in /var/run/cdi: the spec's
/// createRuntime hook binds the vGPU to the pod's cgroup, its
/// createContainer hook gives the container `ModifyDeviceFiles: 0`, and
/// the workload stops at the claim's 1 GiB.
/// Where CDI-aware runtimes read specs: the runc tests' plugin writes the
/// claim's spec there.
const RUNTIME_CDI: &str = "/var/run/cdi";

/// Starts the plugin (log `tag`) writing its specs to [`RUNTIME_CDI`],
/// registers it and prepares claim `name` of 1 GiB: the plugin and the
/// claim's CDI device.
fn prepared_for_runc(tag: &str, name: &str) -> Result<(Plugin, String), String> {
    std::fs::create_dir_all(RUNTIME_CDI).map_err(|e| format!("{RUNTIME_CDI}: {e}"))?;
    let p = Plugin::start_in(tag, RUNTIME_CDI)?;
    register()?;
    put_claim(name, CLAIM_UID, GIB, 30)?;
    let r = call("prepare", CLAIM_UID, name)?;
    ensure!(r["error"] == "", "prepare: {r}");
    let cdi = r["devices"][0]["cdiDeviceIds"][0]
        .as_str()
        .unwrap_or("")
        .to_string();
    Ok((p, cdi))
}

fn pod_through_runc() -> Outcome {
    with_node(|| {
        let (p, cdi) = prepared_for_runc("4", "runc-gpu")?;
        let made = vgpus();
        ensure!(made.len() == 1, "vGPUs after prepare: {made:?}");
        let v = made[0].clone();
        let k = attr(&v, "gpu")?;
        let pod_cg = format!("/kubepods/besteffort/pod{POD}");
        let release = std::env::var("vgpu_release").map(|r| format!("vgpu_release={r}"));
        let script = format!(
            "grep ModifyDeviceFiles /proc/driver/nvidia/params; exec vgpu-selftest demo-alloc --nvidia {k} 64"
        );
        let mut args = vec![
            "--runtime",
            "runc",
            "run",
            "--rm",
            "--cgroup-parent",
            &pod_cg,
            "--device",
            &cdi,
        ];
        if let Ok(r) = &release {
            args.extend(["-e", r.as_str()]);
        }
        args.extend(["--rootfs", "/var/lib/vgpu-rootfs", "sh", "-c", &script]);
        let (code, out) = run(Command::new("/usr/bin/podman")
            .args(&args)
            .env("PATH", "/usr/bin:/bin"))?;
        println!(
            "# dra: the pod's container under runc: {}",
            out.trim().replace('\n', " | ")
        );
        ensure!(code == 0, "podman --runtime runc: exit {code}: {out}");
        ensure!(
            out.starts_with("ModifyDeviceFiles: 0"),
            "the container's params: {out}"
        );
        ensure!(
            out.contains("GPU size seen   1024 MiB | allocated    960 MiB in 64 MiB chunks, then NV_ERR_NO_MEMORY (cudaErrorMemoryAllocation) | context 12 KiB, 65524 KiB left"),
            "the pod's workload: {out}"
        );
        ensure!(
            attr(&v, "cgroup")? == pod_cg,
            "{v} bound to {:?}, not the pod's {pod_cg}",
            attr(&v, "cgroup")
        );
        let u = call("unprepare", CLAIM_UID, "runc-gpu")?;
        ensure!(u["error"] == "", "unprepare: {u}");
        ensure!(vgpus().is_empty(), "vGPUs after unprepare: {:?}", vgpus());
        ensure!(
            !exists(&format!("{RUNTIME_CDI}/vgpu.dev-claim_{CLAIM_UID}.json")),
            "the claim's CDI spec outlived it"
        );
        p.stop()
    })
}

/// `podman --runtime runc run -d` of container `name` of [`POD`] (in its
/// cgroup, as [`pod_through_runc`] runs one) with CDI device `cdi`, asleep.
fn start_in_pod(name: &str, cdi: &str, extra: &[&str]) -> Outcome {
    let pod_cg = format!("/kubepods/besteffort/pod{POD}");
    let mut args = vec![
        "--runtime",
        "runc",
        "run",
        "-d",
        "--name",
        name,
        "--cgroup-parent",
        &pod_cg,
        "--device",
        cdi,
    ];
    args.extend_from_slice(extra);
    args.extend(["--rootfs", crate::containers::ROOTFS, "sleep", "3600"]);
    let (code, out) = run(Command::new("/usr/bin/podman")
        .args(&args)
        .env("PATH", "/usr/bin:/bin"))?;
    ensure!(
        code == 0,
        "podman --runtime runc run {name}: exit {code}: {out}"
    );
    Ok(())
}

/// The break-out attempts of the `breakout` suite from the DRA pod: from
/// its containers under runc (`pa` with podman's capabilities, `pm` with
/// `CAP_MKNOD`, both with the claim's CDI device on GPU 0), with the
/// `breakout` suite's tables, and from the testkubelet's process in the
/// pod's cgroup. The neighbour is podman container `b` (crun) on vGPU 1,
/// GPU 1, made by `vgpuctl`. The testkubelet's process is root in the
/// VM's namespaces with no device cgroup (it is no runtime), so only
/// vgpu's own answers are pinned there: the opener's cgroup makes
/// 195:255, the pod's GPU and nvidia-uvm vgpu's, wherever the node and
/// whichever path, and everything else (GPU 1, the UVM tools node,
/// `/dev/vgpu1`) is vgpu's `EACCES`. Nothing moves `calls_denied` or
/// `b`'s users: every refusal comes before a file exists.
fn pod_breakout() -> Outcome {
    with_node(|| {
        let (p, cdi) = prepared_for_runc("5", "break-gpu")?;
        ensure!(
            vgpus() == ["vgpu0"] && attr("vgpu0", "gpu")? == "0",
            "vGPUs after prepare: {:?}",
            vgpus()
        );
        let body = || -> Outcome {
            sh("vgpuctl create --id 1 --gpu 1 --memory 1GiB --compute 30%")?;
            sh("vgpuctl cdi --output /etc/cdi/vgpu.json")?;
            crate::breakout::start_idle("b", 1, &[])?;
            start_in_pod("pa", &cdi, &[])?;
            start_in_pod("pm", &cdi, &["--cap-add", "MKNOD"])?;
            let pod_cg = format!("/kubepods/besteffort/pod{POD}");
            ensure!(
                attr("vgpu0", "cgroup")? == pod_cg,
                "vgpu0 bound to {:?}, not the pod's {pod_cg}",
                attr("vgpu0", "cgroup")
            );
            let t = targets("b")?;
            let denied = || -> Result<(u64, u64), String> {
                Ok((
                    crate::memory::calls_denied(0)?,
                    crate::memory::calls_denied(1)?,
                ))
            };
            let before = denied()?;
            let users1 = attr("vgpu1", "users")?;
            let got = attempts_in("pa", &t.args)?;
            println!("# dra breakout: pa: {got:?}");
            expect_attempts("the pod's container pa (runc)", &got, &without_mknod())?;
            let got = attempts_in("pm", &t.args)?;
            println!("# dra breakout: pm: {got:?}");
            expect_attempts("the pod's container pm (runc)", &got, &with_mknod())?;
            let mut cmd = vec!["/bin/vgpu-selftest", "breakout-attempts"];
            cmd.extend(t.args.iter().map(String::as_str));
            let (code, out) = in_pod_from(RUNTIME_CDI, "breaker", &cdi, &cmd)?;
            ensure!(code == 0, "the testkubelet's probe: exit {code}: {out}");
            let got = parse_report(&out);
            println!("# dra breakout: testkubelet: {got:?}");
            expect_attempts("the testkubelet's pod process", &got, &kubelet_rows())?;
            let after = denied()?;
            ensure!(
                after == before,
                "calls_denied of vgpu0, vgpu1 moved: {before:?} -> {after:?}"
            );
            ensure!(
                attr("vgpu1", "users")? == users1,
                "b's vGPU got a user: {users1} -> {}",
                attr("vgpu1", "users")?
            );
            drop(t);
            Ok(())
        };
        let r = body();
        let rm = match crate::containers::podman(&["rm", "--force", "--time", "0", "pa", "pm", "b"])
        {
            Ok((0, _)) => Ok(()),
            Ok((code, out)) => Err(format!("podman rm: {code}: {out}")),
            Err(e) => Err(e),
        };
        let _ = std::fs::remove_file("/etc/cdi/vgpu.json");
        let _ = sh("vgpuctl remove 1");
        let u = call("unprepare", CLAIM_UID, "break-gpu").and_then(|u| {
            ensure!(u["error"] == "", "unprepare: {u}");
            Ok(())
        });
        r.and(rm).and(u).and_then(|()| p.stop())
    })
}

/// The answers from the testkubelet's process in [`pod_breakout`]: the
/// rows of the `breakout` suite that vgpu decides, with vgpu's own answers
/// where no namespace or device cgroup comes first.
fn kubelet_rows() -> Vec<Row> {
    let eacces = format!("errno {}", libc::EACCES);
    let made_eacces = format!("made, {eacces}");
    let mknods: Vec<Row> = with_mknod()
        .into_iter()
        .filter(|r| r.0.starts_with("mknod "))
        .collect();
    // Root in the VM's PID namespace reaches `b`: no runtime's answer.
    let rows: Vec<Row> = without_mknod()
        .into_iter()
        .filter(|r| !["cap_mknod", "ptrace b", "kill b"].contains(&r.0))
        .collect();
    let rows = differing(rows, mknods);
    differing(
        rows,
        vec![
            (
                "mknod 195:1",
                made_eacces.clone(),
                "no device cgroup: vgpu refuses a GPU not the claim's",
            ),
            (
                "mknod uvm:1",
                made_eacces.clone(),
                "no device cgroup: vgpu refuses the UVM tools node",
            ),
            (
                "mknod vgpu1",
                made_eacces,
                "no device cgroup: vgpu1 is not bound to the pod",
            ),
            (
                "open host /proc/PID/fd",
                "ok vgpu".into(),
                "the host's PID namespace: the reopen is the pod's, vgpu's",
            ),
            (
                "open /dev/vgpu1",
                eacces.clone(),
                "the host's /dev: vgpu1 is not bound to the pod",
            ),
            (
                "open /dev/nvidia1",
                eacces,
                "the host's /dev: vgpu refuses a GPU not the claim's",
            ),
        ],
    )
}
