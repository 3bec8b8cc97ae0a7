// SPDX-License-Identifier: GPL-2.0

//! A real container runtime: Debian's podman 4.3 with crun and conmon
//! (`--cgroup-manager cgroupfs`, no network, containers started from a
//! local root filesystem with `--rootfs`, no image registry) gives
//! containers vGPUs by CDI name, `--device vgpu.dev/gpu=N`, with the spec
//! `vgpuctl cdi` writes. Its hooks bind vGPU `N` to the container's own
//! cgroup before the container's program runs, size it from `VGPU_MEMORY`
//! within the admin's bound, refuse a vGPU another container holds, and
//! free it when the container stops (`userspace/vgpuctl/src/hook.rs`).
//! The suite runs twice, with the same assertions: `containers` with crun
//! (podman's runtime here), `containers_runc` with Debian's runc 1.1.5
//! (`podman --runtime runc`), the runtime of containerd and Docker. Where
//! the two differ (their error text, runc's poststop hooks after a failed
//! create), each is checked for what it does.
//!
//! The spec's `createContainer` hook gives the container a
//! `/proc/driver/nvidia` whose `params` says `ModifyDeviceFiles: 0`, from
//! inside the container's mount namespace (runc refuses an OCI mount
//! inside `/proc`): every container checks it, and that the host's
//! `/proc` is untouched (`userspace/vgpuctl/src/procview.rs`).
//!
//! The container gets NVIDIA's own nodes, as NVIDIA's container toolkit
//! gives them: `/dev/nvidiactl` (195:255), `/dev/nvidia0` (195:0) and
//! `/dev/nvidia-uvm`, never `/dev/nvidia-uvm-tools` nor vgpu's own names;
//! vgpu answers their opens because the hook bound the container's cgroup
//! before its program ran. The client in each container is the demo's
//! CUDA-like sequence (`vgpu-selftest demo-alloc --nvidia 0`): it opens
//! `/dev/nvidiactl` and `/dev/nvidia0`, sets up UVM on `/dev/nvidia-uvm`
//! (registering the GPU, which the driver's own nvidia-uvm refuses to a
//! process whose GPU file is vgpu's), reads the GPU's memory size,
//! allocates VRAM until refused and holds it. The size it sees and stops
//! at is its vGPU's, and its vGPU counts its `/dev/nvidia0` as an open
//! file: each open was vgpu's.

use crate::ensure;
use crate::sys::{char_major, make_uvm_nodes, read_file, remove_uvm_nodes, run, sh};
use crate::tap::{Outcome, Test};
use crate::tests;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Tests of this suite, in order, with podman's runtime (crun).
pub const TESTS: &[Test] = tests![
    two_containers_each_at_its_own_ceiling = two_containers,
    environment_sizes_within_the_admin_bound = environment_sizes,
    a_vgpu_in_use_is_refused = in_use_refused,
    nvidia_userspace_passes_its_node_checks,
    an_oci_mount_inside_proc = oci_mount_inside_proc,
];

/// The same tests with runc (`containers_runc`).
pub const RUNC_TESTS: &[Test] = tests![
    two_containers_each_at_its_own_ceiling = || with_runc(two_containers),
    environment_sizes_within_the_admin_bound = || with_runc(environment_sizes),
    a_vgpu_in_use_is_refused = || with_runc(in_use_refused),
    nvidia_userspace_passes_its_node_checks = || with_runc(nvidia_userspace_passes_its_node_checks),
    an_oci_mount_inside_proc = || with_runc(oci_mount_inside_proc),
];

/// Whether podman runs its containers with runc (else its default, crun).
static RUNC: AtomicBool = AtomicBool::new(false);

fn runc() -> bool {
    RUNC.load(Ordering::Relaxed)
}

/// Runs `test` with `podman --runtime runc`.
fn with_runc(test: fn() -> Outcome) -> Outcome {
    RUNC.store(true, Ordering::Relaxed);
    let r = (|| {
        let (code, out) = podman(&["info", "--format", "{{.Host.OCIRuntime.Version}}"])?;
        ensure!(code == 0, "podman --runtime runc info: {out}");
        println!("# containers: {}", out.lines().next().unwrap_or("").trim());
        test()
    })();
    RUNC.store(false, Ordering::Relaxed);
    r
}

/// NVIDIA's userspace in the initramfs (scripts/nvidia-userspace.sh).
const NV_RELEASE: &str = "550.163.01";

/// The calls of `cmd` (NVIDIA's program, run with its libraries on the
/// host) as nvtrace logs them, without PIDs and handles; and its output.
fn host_trace(cmd: &str) -> Result<(Vec<String>, String), String> {
    let log = "/tmp/nvtrace-host";
    let _ = std::fs::remove_file(log);
    let out = sh(&format!(
        "NVTRACE_LOG={log} LD_PRELOAD=/bin/nvtrace.so {cmd} 2>&1; echo rc=$?"
    ))?;
    let calls = std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            // Handles (the driver's picks differ from run to run, and
            // nvtrace logs the ones given as `in.hRoot=` and so on) and
            // PIDs are left out.
            l.split_whitespace()
                .filter(|t| {
                    let key = t.strip_prefix("in.").unwrap_or(t);
                    !t.starts_with("pid=") && !key.starts_with('h')
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    Ok((calls, out))
}

fn nvidia_userspace_passes_its_node_checks() -> Outcome {
    // The double claims the release of NVIDIA's userspace in the VM
    // (libcuda and NVML compare version strings exactly), loaded with it
    // alone (a lane's own claim is in /etc/modprobe.d).
    let idx = crate::sys::DOUBLE_RELEASES
        .iter()
        .position(|r| *r == NV_RELEASE)
        .ok_or("the double cannot claim NVIDIA's userspace release")?;
    crate::sys::insmod_double(&format!("gpus=1 vram0_mib=8192 release={idx}"))?;
    make_uvm_nodes()?;
    let smi = format!("/bin/nvidia-smi-{NV_RELEASE}");
    let r = (|| -> Outcome {
        // A host process's nvidia-smi: the same calls and answers with
        // vgpu loaded as without it.
        let (without, out) = host_trace(&smi)?;
        sh("modprobe vgpu")?;
        let (with, _) = host_trace(&smi)?;
        println!(
            "# containers: host nvidia-smi, {} calls: {}",
            with.len(),
            out.trim().replace('\n', " | ")
        );
        ensure!(!without.is_empty(), "nvidia-smi made no call: {out}");
        ensure!(
            with == without,
            "a host process's nvidia-smi with vgpu loaded:\n  {}\nwithout:\n  {}",
            with.join("\n  "),
            without.join("\n  ")
        );
        // In a podman container given a vGPU by CDI, NVIDIA's programs find
        // NVIDIA's own nodes (195:255), get past the checks that refused
        // vgpu's numbers, and reach vgpu.
        vgpuctl("create --id 0 --gpu 0 --memory 1GiB")?;
        vgpuctl("cdi --output /etc/cdi/vgpu.json")?;
        let lib = format!("/opt/nvidia-{NV_RELEASE}");
        let vols = [
            format!("{lib}:{lib}:ro"),
            "/lib/x86_64-linux-gnu:/lib/x86_64-linux-gnu:ro".to_string(),
            "/lib64:/lib64:ro".to_string(),
            "/bin/cuprobe:/usr/local/bin/cuprobe:ro".to_string(),
            "/bin/nvtrace.so:/usr/local/lib/nvtrace.so:ro".to_string(),
            "/tmp/nvtrace-ctr:/out".to_string(),
        ];
        std::fs::create_dir_all("/tmp/nvtrace-ctr").map_err(|e| format!("{e}"))?;
        let _ = std::fs::remove_file("/tmp/nvtrace-ctr/trace");
        let script = format!(
            "stat -c %t:%T /dev/nvidiactl; export LD_LIBRARY_PATH={lib}/lib; \
             export NVTRACE_LOG=/out/trace LD_PRELOAD=/usr/local/lib/nvtrace.so; \
             {lib}/bin/nvidia-smi 2>&1; echo smi-rc=$?; /usr/local/bin/cuprobe 2>&1"
        );
        let mut args = vec!["run", "--rm", "--device", "vgpu.dev/gpu=0"];
        for v in &vols {
            args.extend(["-v", v.as_str()]);
        }
        args.extend(["--rootfs", ROOTFS, "sh", "-c", script.as_str()]);
        let (code, out) = podman(&args)?;
        println!(
            "# containers: NVIDIA's programs in podman: {}",
            out.trim().replace('\n', " | ")
        );
        ensure!(code == 0, "podman run: {code}: {out}");
        ensure!(
            out.starts_with("c3:ff"),
            "/dev/nvidiactl in the container: {out}"
        );
        ensure!(
            !out.contains("blocked by the operating system") && out.contains("smi-rc="),
            "nvidia-smi did not get past its node checks: {out}"
        );
        ensure!(
            out.contains("cuInit=") && !out.contains("cuInit=304"),
            "libcuda did not get past its node check: {out}"
        );
        // The container's calls reached vgpu: its clients have handles
        // vgpu picked (0xc1eX_XXXX; the double picks 0xc1dX_XXXX).
        let trace = read_file("/tmp/nvtrace-ctr/trace")?;
        let clients: Vec<&str> = trace
            .split_whitespace()
            .filter(|t| t.starts_with("hObjectNew=0xc1"))
            .collect();
        ensure!(
            !clients.is_empty() && clients.iter().all(|t| t.starts_with("hObjectNew=0xc1e")),
            "the container's clients are not vgpu's: {clients:?}"
        );
        println!(
            "# containers: NVIDIA's programs made {} calls in the container, {} clients, all vgpu's",
            trace.lines().count(),
            clients.len()
        );
        Ok(())
    })();
    let t = teardown();
    r.and(t)
}

const MIB: u64 = 1 << 20;
/// The containers' root filesystem (scripts/podman-root.sh).
pub(crate) const ROOTFS: &str = "/var/lib/vgpu-rootfs";
/// The client's allocation step.
const CHUNK_MIB: u64 = 64;

/// Runs podman (with runc if [`runc`]); returns (exit code, stdout +
/// stderr).
pub(crate) fn podman(args: &[&str]) -> Result<(i32, String), String> {
    let mut c = Command::new("/usr/bin/podman");
    if runc() {
        c.args(["--runtime", "runc"]);
    }
    run(c.args(args).env("PATH", "/usr/bin:/bin"))
}

pub(crate) fn attr(id: u32, f: &str) -> Result<String, String> {
    read_file(&format!("/sys/class/vgpu/vgpu{id}/{f}"))
}

pub(crate) fn vgpuctl(args: &str) -> Result<String, String> {
    sh(&format!("vgpuctl {args}"))
}

/// The double with one 8 GiB GPU, vgpu, vGPUs `(id, memory)` on it (30%
/// of its time each, unbound), and the CDI spec in /etc/cdi.
fn setup(vgpus: &[(u32, &str)]) -> Outcome {
    setup_on(
        1,
        &vgpus.iter().map(|&(id, m)| (id, 0, m)).collect::<Vec<_>>(),
    )
}

/// [`setup`] with `gpus` GPUs of 8 GiB and vGPUs `(id, gpu, memory)`.
pub(crate) fn setup_on(gpus: u32, vgpus: &[(u32, u32, &str)]) -> Outcome {
    let vram: String = (0..gpus).map(|i| format!(" vram{i}_mib=8192")).collect();
    sh(&format!("modprobe nvidia gpus={gpus}{vram}"))?;
    make_uvm_nodes()?;
    sh("modprobe vgpu")?;
    for (id, gpu, mem) in vgpus {
        vgpuctl(&format!(
            "create --id {id} --gpu {gpu} --memory {mem} --compute 30%"
        ))?;
    }
    vgpuctl("cdi --output /etc/cdi/vgpu.json")?;
    let spec = read_file("/etc/cdi/vgpu.json")?;
    ensure!(
        spec.contains("\"createRuntime\"") && spec.contains("\"poststop\""),
        "the spec has no hooks: {spec}"
    );
    Ok(())
}

/// Removes every container, then the modules; every step is tried, the
/// first failure is reported.
pub(crate) fn teardown() -> Outcome {
    let rm = match podman(&["rm", "--all", "--force", "--time", "0"]) {
        Ok((0, _)) => Ok(()),
        Ok((code, out)) => Err(format!("podman rm: {code}: {out}")),
        Err(e) => Err(e),
    };
    let vgpu = sh("rmmod vgpu").map(drop);
    remove_uvm_nodes();
    let nvidia = sh("rmmod nvidia").map(drop);
    rm.and(vgpu).and(nvidia)
}

/// Runs `body` between [`setup`] and [`teardown`]; the teardown runs even
/// when the body fails (its error is reported first).
fn with_vgpus(vgpus: &[(u32, &str)], body: impl FnOnce() -> Outcome) -> Outcome {
    let r = setup(vgpus).and_then(|()| body());
    let t = teardown();
    r.and(t)
}

/// `podman run -d` of the client on vGPU `id`, its output in
/// `/tmp/ctr-NAME/log`; returns (exit code, podman's output).
pub(crate) fn start(name: &str, id: u32, env: &[&str]) -> Result<(i32, String), String> {
    start_with(name, &[id], env)
}

/// [`start`] with the CDI devices of vGPUs `ids`, in that order.
fn start_with(name: &str, ids: &[u32], env: &[&str]) -> Result<(i32, String), String> {
    let dir = format!("/tmp/ctr-{name}");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{dir}: {e}"))?;
    // A log of an earlier container of the same name (the crun run of
    // this suite, before the runc one) would be read as this one's
    // report before it has opened anything.
    match std::fs::remove_file(format!("{dir}/log")) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(format!("{dir}/log: {e}"));
        }
        _ => {}
    }
    let devices: Vec<String> = ids.iter().map(|id| format!("vgpu.dev/gpu={id}")).collect();
    let volume = format!("{dir}:/out");
    let mut args = vec!["run", "-d", "--name", name, "-v", &volume];
    for d in &devices {
        args.extend(["--device", d.as_str()]);
    }
    let release = std::env::var("vgpu_release").map(|r| format!("vgpu_release={r}"));
    if let Ok(r) = &release {
        args.extend(["-e", r.as_str()]);
    }
    for e in env {
        args.extend(["-e", e]);
    }
    let chunk = CHUNK_MIB.to_string();
    args.extend([
        "--rootfs",
        ROOTFS,
        "sh",
        "-c",
        "exec vgpu-selftest demo-alloc --nvidia 0 \"$0\" 3600 > /out/log 2>&1",
        &chunk,
    ]);
    podman(&args)
}

/// What the client in container `name` reported, once it has: GPU size
/// seen and allocated (MiB), the chunk (MiB), and the context's own VRAM
/// and what was left (KiB).
fn report(name: &str) -> Result<Report, String> {
    let path = format!("/tmp/ctr-{name}/log");
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        if let Some(line) = text.lines().find(|l| l.contains("GPU size seen")) {
            // "GPU size seen   1024 MiB | allocated    960 MiB in 64 MiB
            // chunks, then ... | context 12 KiB, 65524 KiB left"
            let nums: Vec<u64> = line
                .split_whitespace()
                .filter_map(|w| w.trim_end_matches(',').parse().ok())
                .collect();
            ensure!(nums.len() == 5, "{name}: {line}");
            return Ok(Report {
                seen: nums[0],
                got: nums[1],
                own_kib: nums[3],
                left_kib: nums[4],
            });
        }
        if text.contains("demo-alloc:") || Instant::now() > deadline {
            return Err(format!("{name}: no report: {text:?}"));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A container client's report ([`report`]).
struct Report {
    /// GPU size seen, MiB.
    seen: u64,
    /// Allocated in chunks, MiB.
    got: u64,
    /// The context's own VRAM (RM's, for its UVM VA space), KiB.
    own_kib: u64,
    /// Left when a chunk was refused, KiB.
    left_kib: u64,
}

/// The host cgroup of container `name`'s init process.
pub(crate) fn cgroup_of(name: &str) -> Result<String, String> {
    let (code, pid) = podman(&["inspect", "--format", "{{.State.Pid}}", name])?;
    ensure!(code == 0, "inspect {name}: {pid}");
    let text = read_file(&format!("/proc/{}/cgroup", pid.trim()))?;
    text.lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(str::to_string)
        .ok_or(format!("{name}: no cgroup v2 line in {text:?}"))
}

/// Container `name` on vGPU `id` sees `limit_mib` and stops at it; its
/// vGPU is bound to its own cgroup and charged what it holds, and its
/// client's opens of NVIDIA's nodes were vgpu's: it registered the GPU with
/// UVM, and the vGPU counts its `/dev/nvidia0`.
pub(crate) fn check_at_ceiling(name: &str, id: u32, limit_mib: u64) -> Outcome {
    let Report {
        seen,
        got,
        own_kib,
        left_kib,
    } = report(name)?;
    let log = read_file(&format!("/tmp/ctr-{name}/log"))?;
    ensure!(
        log.contains(
            "opened /dev/nvidiactl, /dev/nvidia0 and /dev/nvidia-uvm; GPU registered with UVM"
        ),
        "{name}: the client did not set up UVM on /dev/nvidia-uvm: {log:?}"
    );
    ensure!(
        attr(id, "users")? == "1",
        "vgpu{id}: users {} while container {name} holds /dev/nvidia0",
        attr(id, "users")?
    );
    ensure!(
        seen == limit_mib,
        "{name}: GPU size seen {seen} MiB, vGPU {id}'s limit {limit_mib} MiB"
    );
    // The context's own VRAM (its UVM VA space's page levels) is charged
    // too, so the chunks stop where the next no longer fits: every KiB of
    // the ceiling is the chunks', the context's or left.
    ensure!(
        own_kib == u64::from(nvclient::abi::VASPACE_PAGE_LEVELS) >> 10
            && (got << 10) + own_kib + left_kib == limit_mib << 10
            && left_kib < CHUNK_MIB << 10,
        "{name}: allocated {got} MiB under a {limit_mib} MiB ceiling in {CHUNK_MIB} MiB chunks, the context {own_kib} KiB, {left_kib} KiB left"
    );
    let cg = cgroup_of(name)?;
    ensure!(
        attr(id, "cgroup")? == cg,
        "vgpu{id} bound to {:?}, container {name} is in {cg:?}",
        attr(id, "cgroup")?
    );
    ensure!(cg != "/" && !cg.is_empty(), "{name} in cgroup {cg:?}");
    let used: u64 = attr(id, "memory_used")?
        .parse()
        .map_err(|e| format!("{e}"))?;
    ensure!(
        used == got * MIB + (own_kib << 10),
        "vgpu{id}: memory_used {used}, the client holds {got} MiB and its context {own_kib} KiB"
    );
    Ok(())
}

/// Container `name` has NVIDIA's nodes with NVIDIA's numbers, as libcuda
/// and NVML check them (`stat` in the container), and none of vgpu's own
/// nor the UVM tools node.
fn check_nodes(name: &str) -> Outcome {
    let exec = |cmd: &[&str]| -> Result<String, String> {
        let mut args = vec!["exec", name];
        args.extend(cmd);
        let (code, out) = podman(&args)?;
        ensure!(code == 0, "{name}: {cmd:?}: exit {code}: {out}");
        Ok(out.trim().to_string())
    };
    let ctl = exec(&["stat", "-c", "%t:%T", "/dev/nvidiactl"])?;
    ensure!(
        ctl == "c3:ff",
        "{name}: /dev/nvidiactl is {ctl}, not 195:255 (c3:ff)"
    );
    let uvm = char_major("nvidia-uvm").ok_or("no nvidia-uvm in /proc/devices")?;
    let others = exec(&["stat", "-c", "%n %t:%T", "/dev/nvidia0", "/dev/nvidia-uvm"])?;
    let want = format!("/dev/nvidia0 c3:0\n/dev/nvidia-uvm {uvm:x}:0");
    ensure!(others == want, "{name}: {others:?}, want {want:?}");
    // The createContainer hook's /proc/driver/nvidia: params says
    // ModifyDeviceFiles: 0, the rest is the driver's own.
    let params = exec(&["cat", "/proc/driver/nvidia/params"])?;
    ensure!(
        params.lines().any(|l| l == "ModifyDeviceFiles: 0")
            && !params.contains("ModifyDeviceFiles: 1"),
        "{name}: /proc/driver/nvidia/params is {params:?}"
    );
    let host_params = read_file("/proc/driver/nvidia/params")?;
    ensure!(
        host_params.contains("ModifyDeviceFiles: 1"),
        "the host's params changed: {host_params:?}"
    );
    ensure!(
        params.lines().count() == host_params.lines().count(),
        "{name}: params {params:?}, the driver's {host_params:?}"
    );
    let version = exec(&["cat", "/proc/driver/nvidia/version"])?;
    ensure!(
        version == read_file("/proc/driver/nvidia/version")?.trim(),
        "{name}: /proc/driver/nvidia/version {version:?}"
    );
    let gpus = exec(&["ls", "/proc/driver/nvidia/gpus"])?;
    let host_gpus = sh("ls /proc/driver/nvidia/gpus")?;
    ensure!(
        !gpus.is_empty() && gpus == host_gpus.trim(),
        "{name}: /proc/driver/nvidia/gpus {gpus:?}, the host's {host_gpus:?}"
    );
    let w = exec(&[
        "sh",
        "-c",
        "echo x > /proc/driver/nvidia/params; echo rc=$?",
    ])?;
    ensure!(
        w.contains("rc=") && !w.ends_with("rc=0"),
        "{name}: writing params: {w:?}"
    );
    check_host_proc()?;
    let dev = exec(&["ls", "/dev"])?;
    for absent in [
        "nvidia-uvm-tools",
        "nvidia1",
        "vgpuctl",
        "vgpu0",
        "vgpu1",
        "vgpu-uvm",
    ] {
        ensure!(
            !dev.split_whitespace().any(|n| n == absent),
            "{name}: /dev/{absent} is there: {dev:?}"
        );
    }
    Ok(())
}

/// The CDI spec as it was before the createContainer hook: its params
/// file an OCI mount at `/proc/driver/nvidia/params`. crun mounts it;
/// runc refuses every mount inside `/proc` (`checkProcMount`, runc 1.1.5
/// `libcontainer/rootfs_linux.go:568-616`), which is why the hook does it.
/// Then the same container with the spec `vgpuctl cdi` writes now starts
/// under both, with `ModifyDeviceFiles: 0` in its params; and with the
/// devices of two such specs, whose createContainer hooks both run, the
/// second finds the first's view in place.
fn oci_mount_inside_proc() -> Outcome {
    with_vgpus(&[(0, "1GiB")], || {
        let spec: serde_json::Value =
            serde_json::from_str(&read_file("/etc/cdi/vgpu.json")?).map_err(|e| e.to_string())?;
        let mut old = spec.clone();
        old["kind"] = "vgpu.dev/old".into();
        old["containerEdits"]["hooks"] = serde_json::json!([]);
        old["containerEdits"]["mounts"] = serde_json::json!([{
            "hostPath": "/tmp/old-params", "containerPath": "/proc/driver/nvidia/params",
            "options": ["ro", "nosuid", "nodev", "bind"]}]);
        std::fs::write("/tmp/old-params", "ModifyDeviceFiles: 0\n").map_err(|e| e.to_string())?;
        std::fs::write("/etc/cdi/old.json", old.to_string()).map_err(|e| e.to_string())?;
        // Two copies of the spec, their createContainer hooks logging to a
        // file: the hook runs in the container's device cgroup, which does
        // not allow /dev/kmsg.
        std::fs::write("/tmp/cc-log", "").map_err(|e| e.to_string())?;
        for k in ["twin", "twin2"] {
            let mut twin = spec.clone();
            twin["kind"] = format!("vgpu.dev/{k}").into();
            let args = twin["containerEdits"]["hooks"][0]["args"]
                .as_array_mut()
                .ok_or("no createContainer hook in the spec")?;
            args.extend(["--log".into(), "/tmp/cc-log".into()]);
            std::fs::write(format!("/etc/cdi/{k}.json"), twin.to_string())
                .map_err(|e| e.to_string())?;
        }
        let cat2 = |devs: &[&str]| {
            let mut a = vec!["run", "--rm"];
            for d in devs {
                a.extend(["--device", d]);
            }
            a.extend(["--rootfs", ROOTFS, "cat", "/proc/driver/nvidia/params"]);
            podman(&a)
        };
        let cat = |dev: &str| cat2(&[dev]);
        let r = (|| {
            let (code, out) = cat("vgpu.dev/old=0")?;
            if runc() {
                ensure!(
                    code != 0 && out.contains("cannot be mounted because it is inside /proc"),
                    "runc took a mount inside /proc: exit {code}: {out}"
                );
            } else {
                ensure!(
                    code == 0 && out.trim() == "ModifyDeviceFiles: 0",
                    "crun with the old spec: exit {code}: {out}"
                );
            }
            check_freed(0, 1 << 30)?;
            let (code, out) = cat("vgpu.dev/gpu=0")?;
            ensure!(code == 0, "the spec of vgpuctl cdi: exit {code}: {out}");
            ensure!(
                out.lines().any(|l| l == "ModifyDeviceFiles: 0"),
                "params in the container: {out}"
            );
            check_freed(0, 1 << 30)?;
            let (code, out) = cat2(&["vgpu.dev/twin=0", "vgpu.dev/twin2=0"])?;
            ensure!(code == 0, "two specs' devices: exit {code}: {out}");
            ensure!(
                out.lines().any(|l| l == "ModifyDeviceFiles: 0"),
                "params with two specs' hooks: {out}"
            );
            let log = read_file("/tmp/cc-log")?;
            let runs: Vec<&str> = log
                .lines()
                .filter(|l| l.contains("vgpuctl hook: createContainer"))
                .collect();
            ensure!(
                runs.len() == 2
                    && runs[0].contains("params rewritten")
                    && runs[1].contains("already in place"),
                "the createContainer hooks of two specs: {runs:?}"
            );
            check_freed(0, 1 << 30)?;
            check_host_proc()
        })();
        for k in ["twin", "twin2"] {
            let _ = std::fs::remove_file(format!("/etc/cdi/{k}.json"));
        }
        let _ = std::fs::remove_file("/etc/cdi/old.json");
        let _ = std::fs::remove_file("/tmp/old-params");
        r
    })
}

/// The host's `/proc/driver/nvidia` is the driver's: no mount over it or
/// under it (the hook mounts in the container's namespace only), and no
/// params file of the old OCI mount on the host.
fn check_host_proc() -> Outcome {
    let mounts = read_file("/proc/self/mountinfo")?;
    ensure!(
        !mounts.contains("/driver/nvidia"),
        "a mount under /proc/driver/nvidia on the host: {mounts}"
    );
    for old in ["/run/vgpu/params", "/var/run/vgpu/params"] {
        ensure!(!std::path::Path::new(old).exists(), "{old} on the host");
    }
    Ok(())
}

/// Waits (up to 60 s) for vGPU `id` to be unbound: podman deletes a
/// stopped container in the runtime, which runs its poststop hooks, from
/// the cleanup conmon starts when the container exits.
pub(crate) fn wait_unbound(id: u32) -> Outcome {
    let t0 = Instant::now();
    while !attr(id, "cgroup")?.is_empty() {
        ensure!(
            t0.elapsed() < Duration::from_secs(60),
            "vgpu{id} still bound to {:?} 60 s after podman returned",
            attr(id, "cgroup")?
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    println!(
        "# vgpu{id} unbound {} ms after podman returned",
        t0.elapsed().as_millis()
    );
    Ok(())
}

/// The kernel log (where the hooks log what they did).
pub(crate) fn kernel_log() -> Result<String, String> {
    sh("dmesg")
}

/// A `podman run` the hook refused: crun names the hook's exit status
/// (it sends hooks' output to /dev/null), runc its exit status and its
/// standard error, and the kernel log has the reason.
fn check_refused(out: &str, status: i32, why: &str) -> Outcome {
    if runc() {
        ensure!(
            out.contains(&format!("exit status {status}")) && out.contains(why),
            "podman (runc) said {out:?}, not the hook's exit status {status} and {why:?}"
        );
    } else {
        ensure!(
            out.contains(&format!(
                "error executing hook `/bin/vgpuctl` (exit code: {status})"
            )),
            "podman said {out:?}, not the hook's exit status {status}"
        );
    }
    let log = kernel_log()?;
    ensure!(
        log.lines()
            .any(|l| l.contains("vgpuctl hook: createRuntime") && l.contains(why)),
        "no \"{why}\" in the kernel log"
    );
    Ok(())
}

/// After `podman stop`, vGPU `id` is unbound, uncharged, has no open files,
/// its admin limit back, and no hook record.
pub(crate) fn check_freed(id: u32, admin_limit: u64) -> Outcome {
    wait_unbound(id)?;
    ensure!(
        attr(id, "cgroup")?.is_empty(),
        "vgpu{id} still bound to {:?}",
        attr(id, "cgroup")?
    );
    ensure!(
        attr(id, "memory_used")? == "0",
        "vgpu{id} memory_used {}",
        attr(id, "memory_used")?
    );
    ensure!(
        attr(id, "users")? == "0",
        "vgpu{id} users {}",
        attr(id, "users")?
    );
    ensure!(
        attr(id, "memory_limit")? == admin_limit.to_string(),
        "vgpu{id} memory_limit {} after the container, the admin's was {admin_limit}",
        attr(id, "memory_limit")?
    );
    let rec = format!("/run/vgpu/hooks/vgpu{id}.json");
    ensure!(!std::path::Path::new(&rec).exists(), "{rec} left behind");
    Ok(())
}

pub(crate) fn stop(names: &[&str]) -> Outcome {
    let mut args = vec!["stop", "--time", "0"];
    args.extend_from_slice(names);
    let (code, out) = podman(&args)?;
    ensure!(code == 0, "podman stop {names:?}: {out}");
    Ok(())
}

fn two_containers() -> Outcome {
    with_vgpus(&[(0, "1GiB"), (1, "768MiB")], || {
        for (name, id) in [("a", 0), ("b", 1)] {
            let (code, out) = start(name, id, &[])?;
            ensure!(code == 0, "podman run {name} with vgpu.dev/gpu={id}: {out}");
        }
        check_at_ceiling("a", 0, 1024)?;
        check_at_ceiling("b", 1, 768)?;
        check_nodes("a")?;
        check_nodes("b")?;
        let log = kernel_log()?;
        for id in [0, 1] {
            ensure!(
                log.contains(&format!("vgpu{id}: bound to container")),
                "no bind of vgpu{id} in the kernel log"
            );
        }
        ensure!(cgroup_of("a")? != cgroup_of("b")?, "a and b share a cgroup");
        stop(&["a", "b"])?;
        check_freed(0, 1 << 30)?;
        check_freed(1, 768 * MIB)?;
        check_host_proc()
    })
}

fn environment_sizes() -> Outcome {
    with_vgpus(&[(2, "1GiB")], || {
        // Within the admin's 1 GiB: the container sees and gets 512 MiB.
        let (code, out) = start("small", 2, &["VGPU_MEMORY=512MiB", "VGPU_COMPUTE=20%"])?;
        ensure!(code == 0, "podman run with VGPU_MEMORY=512MiB: {out}");
        check_at_ceiling("small", 2, 512)?;
        ensure!(
            attr(2, "compute_share")? == "20",
            "compute_share {}",
            attr(2, "compute_share")?
        );
        stop(&["small"])?;
        check_freed(2, 1 << 30)?;
        ensure!(
            attr(2, "compute_share")? == "30",
            "compute_share {} after",
            attr(2, "compute_share")?
        );

        // Over the admin's bound (vgpuctl's exit status 8), or not a size
        // (2): the container does not start, the reason is logged, and the
        // vGPU is left as it was.
        for (i, (env, status, why)) in [
            (
                "VGPU_MEMORY=2GiB",
                8,
                "VGPU_MEMORY=2 GiB is over vGPU 2's memory limit, 1 GiB",
            ),
            (
                "VGPU_MEMORY=lots",
                2,
                "VGPU_MEMORY=\"lots\": \"lots\" is not a size",
            ),
            (
                "VGPU_COMPUTE=50%",
                8,
                "VGPU_COMPUTE=50% is over vGPU 2's compute share, 30%",
            ),
        ]
        .into_iter()
        .enumerate()
        {
            let name = format!("bad{i}");
            let (code, out) = start(&name, 2, &[env])?;
            ensure!(code != 0, "{env}: the container started: {out}");
            check_refused(&out, status, why)?;
            check_freed(2, 1 << 30)?;
            ensure!(
                attr(2, "compute_share")? == "30",
                "{env}: compute_share {}",
                attr(2, "compute_share")?
            );
        }
        Ok(())
    })
}

fn in_use_refused() -> Outcome {
    with_vgpus(&[(0, "1GiB"), (1, "512MiB")], || {
        let (code, out) = start("holder", 0, &[])?;
        ensure!(code == 0, "podman run holder: {out}");
        check_at_ceiling("holder", 0, 1024)?;
        let cg = attr(0, "cgroup")?;
        // A container asking for free vGPU 1 and held vGPU 0: vGPU 1's hook
        // binds, vGPU 0's refuses, the container does not start, and the
        // runtime's cleanup (the poststop hooks) frees vGPU 1 again.
        let poststops = || -> Result<Vec<String>, String> {
            Ok(kernel_log()?
                .lines()
                .filter(|l| l.contains("vgpuctl hook: poststop"))
                .map(str::to_string)
                .collect())
        };
        let before = poststops()?.len();
        let (code, out) = start_with("second", &[1, 0], &["VGPU_MEMORY=256MiB"])?;
        ensure!(code != 0, "a second container got vGPU 0: {out}");
        check_refused(&out, 7, "vGPU 0 is in use by container")?;
        check_freed(1, 512 * MIB)?;
        // The two runtimes part here: runc runs the refused container's
        // poststop hooks (its create's clean-up destroys the container),
        // crun does not. Either way vGPU 1 is free (the hook bound none of
        // the two) and vGPU 0 stays the holder's.
        let after = poststops()?;
        let new = &after[before..];
        if runc() {
            ensure!(
                new.iter()
                    .any(|l| l.contains("vgpu0: held by container") && l.contains("left alone"))
                    && new
                        .iter()
                        .any(|l| l.contains("vgpu1: not bound by a hook; nothing to do")),
                "runc ran no poststop hooks for the refused container: {new:?}"
            );
        } else {
            ensure!(
                new.is_empty(),
                "crun ran poststop hooks after a failed create: {new:?}"
            );
        }
        println!(
            "# containers: {} poststop hook runs after the refused create",
            new.len()
        );
        // The refused container's poststop left the holder's vGPU alone.
        ensure!(
            attr(0, "cgroup")? == cg,
            "vgpu0 now bound to {:?}",
            attr(0, "cgroup")?
        );
        let used: u64 = attr(0, "memory_used")?
            .parse()
            .map_err(|e| format!("{e}"))?;
        ensure!(
            used >= 960 * MIB,
            "vgpu0 memory_used {used} after the refusal"
        );
        stop(&["holder"])?;
        check_freed(0, 1 << 30)?;
        // Free again: a new container gets it.
        let (code, out) = start("third", 0, &[])?;
        ensure!(code == 0, "podman run after the holder stopped: {out}");
        check_at_ceiling("third", 0, 1024)
    })
}
