// SPDX-License-Identifier: GPL-2.0

//! NVIDIA's own monitoring userspace (Debian's `nvidia-smi` and NVML,
//! `scripts/nvidia-userspace.sh`) directly on the driver double, a host
//! process, with no vgpu: every view the issue names and `nvmlprobe`
//! (`selftests/nvprobe`) run under nvtrace, and every figure they print
//! is checked against the double's own settings (its product name, the
//! UUID GET_GID_INFO gives, its memory in MiB, and the processes on it).
//! The double claims the userspace's release (NVML compares version
//! strings exactly): 535.261.03 (bookworm's) in a VM that claims it
//! (`scripts/vm.sh --release 535.261.03`), else 550.163.01 (trixie's).
//! NVIDIA's binaries missing from the initramfs is a failure, not a skip.

use crate::compute::Work;
use crate::ensure;
use crate::sys::{claimed_release, exists, insmod_double, make_uvm_nodes, remove_uvm_nodes, sh};
use crate::tap::{Outcome, Test};
use crate::tests;
use nvclient::abi::class;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Tests of this suite, in order (each loads and unloads the double).
pub const TESTS: &[Test] = tests![
    nvml_reports_the_gpu,
    nvml_reports_this_process,
    smi_lists_the_gpu,
    smi_query_gpu_figures,
    smi_compute_apps_show_this_process,
    smi_default_view,
    smi_query_all,
    smi_query_sections,
    cuda_device_setup_on_the_double,
    cuda_copies_and_launches_on_the_double,
    cuda_managed_on_the_double,
    cuda_fills_the_heap_on_the_double,
    cuda_killed_mid_context_leaves_nothing,
    containers_setup,
    containers_smi_show_their_vgpu,
    containers_smi_show_their_process,
    containers_nvml_sees_the_vgpu,
    containers_query_all_hides_the_other,
    containers_cuda_device_setup,
    containers_cuda_stop_at_their_ceilings,
    containers_cuda_managed_stops_at_their_ceilings,
    containers_cuda_context_charged_and_isolated,
    containers_cuda_launches_get_their_shares,
    host_smi_sees_every_process,
    containers_teardown,
];

/// The double's settings in this suite: one GPU of this many MiB.
const VRAM_MIB: u64 = 8192;

/// Its heap (`base.rs`, `heap_size`: VRAM less 1/64). NVML reports the
/// VRAM (FB_GET_INFO's RAM size) as total memory, the rest as reserved,
/// and the heap's use and what is left of it as used and free.
const HEAP_MIB: u64 = VRAM_MIB - VRAM_MIB / 64;

/// The product name the double gives its GPUs (`procfs.rs`'s Model, and
/// NV2080_CTRL_CMD_GPU_GET_NAME_STRING).
const NAME: &str = "vgpu driver double GPU";

/// The UUID of the double's GPU 0 (`base.rs`, `gpu_uuid`).
const UUID: &str = "GPU-d00b1e5e-0000-4000-8000-000000000001";

/// What this suite's test process allocates, to be listed with it.
const MINE_MIB: u64 = 64;

/// The GR context buffers of the holder's TSG, as the double reports them
/// (GR_GET_CTX_BUFFER_SIZE), set by [`hold_memory`].
static GR_CONTEXT: AtomicU64 = AtomicU64::new(0);

/// What the holder takes from the heap: its memory, its work channel's
/// instance block and its TSG's GR context buffers, which RM commits for
/// the channel and at its first compute object.
fn held() -> u64 {
    (MINE_MIB << 20) + u64::from(nvclient::abi::INSTANCE_BLOCK) + GR_CONTEXT.load(Ordering::Relaxed)
}

/// nvidia-smi's FB memory figure for `bytes`, in whole MiB: rounded up at
/// 550.163.01 (a use of 64 MiB + 4 KiB shows as 65 MiB, 7999.996 MiB free
/// as 8000 MiB) and down at 535.261.03 (195.77 MiB used shows as 195 MiB,
/// 828.23 MiB free as 828 MiB), as measured in the VM; a process's memory
/// is rounded down at both.
fn smi_mib(bytes: u64) -> u64 {
    if userspace_release() == "535.261.03" {
        bytes >> 20
    } else {
        bytes.div_ceil(1 << 20)
    }
}

/// The release of NVIDIA's userspace this VM runs: the claimed one where
/// Debian ships it, else trixie's.
fn userspace_release() -> String {
    let r = claimed_release();
    if r == "535.261.03" {
        r
    } else {
        "550.163.01".to_string()
    }
}

/// Runs `body` with the double loaded claiming [`userspace_release`],
/// with one GPU of [`VRAM_MIB`], and unloads it after (even on failure).
fn with_double(body: impl FnOnce(&str) -> Outcome) -> Outcome {
    let rel = userspace_release();
    let idx = crate::sys::DOUBLE_RELEASES
        .iter()
        .position(|r| *r == rel)
        .ok_or("the double cannot claim NVIDIA's userspace release")?;
    for p in [
        format!("/bin/nvidia-smi-{rel}"),
        format!("/bin/nvmlprobe-{rel}"),
    ] {
        ensure!(exists(&p), "{p} missing from the initramfs");
    }
    insmod_double(&format!("gpus=1 vram0_mib={VRAM_MIB} release={idx}"))?;
    RECORDING.store(true, Ordering::Relaxed);
    let r = make_uvm_nodes().map(drop).and_then(|()| body(&rel));
    RECORDING.store(false, Ordering::Relaxed);
    remove_uvm_nodes();
    let unload = sh("rmmod nvidia").map(drop);
    r.and(unload)
}

/// Runs `cmd` (a program of `/bin`, with NVIDIA's libraries) under
/// nvtrace; returns its output and the calls RM refused, as nvtrace logs
/// them (a status other than 0, or an ioctl that failed).
fn traced(cmd: &str) -> Result<(String, Vec<String>), String> {
    let log = "/tmp/nvtrace-smi";
    let rel = userspace_release();
    let _ = std::fs::remove_file(log);
    let out = sh(&format!(
        "NVTRACE_PARAMS=1 NVTRACE_RELEASE={rel} NVTRACE_LOG={log} LD_PRELOAD=/bin/nvtrace.so {cmd} 2>&1; echo rc=$?"
    ))?;
    let text = std::fs::read_to_string(log).unwrap_or_default();
    if RECORDING.load(Ordering::Relaxed) {
        record(cmd, "direct", &text, &[std::process::id()])?;
    }
    let calls: Vec<String> = text
        .lines()
        .map(|l| {
            l.split_whitespace()
                .enumerate()
                .filter(|(i, t)| {
                    *i == 3
                        || ["cmd=", "hClass=", "paramsSize=", "status="]
                            .iter()
                            .any(|k| t.starts_with(k))
                })
                .map(|(_, t)| t)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    println!("# {} calls: {}", calls.len(), calls.join("; "));
    let refused: Vec<String> = text
        .lines()
        .filter(|l| {
            l.split_whitespace()
                .any(|t| (t.starts_with("status=") && t != "status=0x0") || t == "ret=-1")
        })
        .map(|l| {
            l.split_whitespace()
                .filter(|t| !t.starts_with("pid="))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    println!("# {cmd}: {}", out.trim().replace('\n', " | "));
    for r in &refused {
        println!("#   refused: {r}");
    }
    Ok((out, refused))
}

/// Prints the trace of `cmd`'s run (nvtrace's log `text`) for
/// scripts/record-traces.sh, which writes it to
/// `selftests/traces/RELEASE/PROGRAM-MODE.trace` (docs/testing.md,
/// "Traces"): `# trace RELEASE/PROGRAM-MODE: LINE`. The setup lines say
/// what the replay must rebuild (`@gpus`, `@hold`, `@vgpu`); `pids` are
/// the run's PIDs besides the program's own.
fn record(cmd: &str, mode: &str, text: &str, pids: &[u32]) -> Outcome {
    let rel = userspace_release();
    let mut words = cmd.split_whitespace();
    let prog = words
        .next()
        .and_then(|p| p.rsplit('/').next())
        .map(|p| p.trim_end_matches(&format!("-{rel}")))
        .unwrap_or("?");
    // nvidia-smi-q-d, nvidia-smi-query-gpu, ...: the options' names.
    let mut name = prog.to_string();
    for w in words.filter(|w| w.starts_with('-') && !w.starts_with("--format")) {
        let o = w.trim_start_matches('-');
        name.push('-');
        name.push_str(o.split('=').next().unwrap_or(o));
    }
    let file = format!("{rel}/{name}-{mode}");
    let lines = crate::traces::normalize(text, pids, &rel)?;
    let held = match mode {
        "vgpu" => TENANTS[0].3,
        _ => MINE_MIB,
    };
    let holds = mode == "vgpu" || HOLDING.load(Ordering::Relaxed);
    let how = match mode {
        "vgpu" => "in a container, through vgpu",
        _ => "directly on the double",
    };
    println!("# trace {file}: # {cmd}, {how}: recorded by scripts/record-traces.sh");
    let gpus = if mode == "vgpu" { HOST_GPUS } else { 1 };
    println!("# trace {file}: @gpus {gpus}");
    if mode == "vgpu" {
        println!("# trace {file}: @vgpu {}", TENANTS[0].2);
    }
    if holds {
        println!("# trace {file}: @hold {held}");
    }
    for l in &lines {
        println!("# trace {file}: {l}");
    }
    Ok(())
}

/// Whether this process holds memory on the GPU ([`hold_memory`]), for
/// [`record`]'s `@hold`.
static HOLDING: AtomicBool = AtomicBool::new(false);

/// Whether [`traced`] records: in the tests on the double alone
/// ([`with_double`]), not on the host beside the containers.
static RECORDING: AtomicBool = AtomicBool::new(false);

/// The value of `key=` on the line of `out` that starts with `line`.
fn field<'a>(out: &'a str, line: &str, key: &str) -> Option<&'a str> {
    out.lines()
        .find(|l| l.starts_with(line))?
        .split_whitespace()
        .find_map(|t| t.strip_prefix(key)?.strip_prefix('='))
}

fn nvml_reports_the_gpu() -> Outcome {
    with_double(|rel| {
        let (out, _) = traced(&format!("/bin/nvmlprobe-{rel}"))?;
        ensure!(out.contains("nvmlInit_v2=0"), "nvmlInit: {out}");
        ensure!(
            out.contains("nvmlDeviceGetCount_v2=0 count=1"),
            "count: {out}"
        );
        ensure!(
            out.contains(&format!("gpu=0 name=0 value={NAME}")),
            "name: {out}"
        );
        ensure!(
            out.contains(&format!("gpu=0 uuid=0 value={UUID}")),
            "uuid: {out}"
        );
        ensure!(
            field(&out, "gpu=0 pci=", "pci") == Some("0")
                && field(&out, "gpu=0 pci=", "busId") == Some("00000000:01:00.0")
                && field(&out, "gpu=0 pci=", "pciDeviceId") == Some("0x233010de"),
            "PCI info: {out}"
        );
        let total = (VRAM_MIB << 20).to_string();
        for line in ["gpu=0 memory=", "gpu=0 memory_v2="] {
            ensure!(
                field(&out, line, &line[6..line.len() - 1]) == Some("0")
                    && field(&out, line, "total") == Some(total.as_str()),
                "{line} total: {out}"
            );
        }
        let reserved = ((VRAM_MIB - HEAP_MIB) << 20).to_string();
        ensure!(
            field(&out, "gpu=0 memory_v2=", "reserved") == Some(reserved.as_str()),
            "reserved: {out}"
        );
        Ok(())
    })
}

/// Opens a session on the double as a CUDA context does (a TSG, a
/// channel and a compute object in it: what makes RM list a process as a
/// compute process, GET_PIDS of HOPPER_COMPUTE_A) and allocates
/// [`MINE_MIB`] of VRAM in it.
fn hold_memory() -> Result<Held, String> {
    let w = hold_memory_on("/dev/nvidiactl", "/dev/nvidia0", MINE_MIB)?;
    let size = crate::memory::gr_context_size(&w.s, w.ch.h_channel)?;
    ensure!(size > 0, "the holder's TSG has no GR context");
    GR_CONTEXT.store(size, Ordering::Relaxed);
    HOLDING.store(true, Ordering::Relaxed);
    Ok(Held(w))
}

/// A session [`hold_memory`] opened; [`HOLDING`] while it lives.
struct Held(#[allow(dead_code)] Work);

impl Drop for Held {
    fn drop(&mut self) {
        HOLDING.store(false, Ordering::Relaxed);
    }
}

/// [`hold_memory`] on nodes `ctl` and `gpu`, holding `mib` MiB (the
/// `traces` suite's replays hold what their recorded run's holder did).
pub fn hold_memory_on(ctl: &str, gpu: &str, mib: u64) -> Result<Work, String> {
    let w = Work::open(ctl, gpu, false)?;
    let mut params = [0u8; 64];
    w.s.ctl
        .alloc(
            w.s.client,
            w.ch.h_channel,
            0,
            class::HOPPER_COMPUTE_A,
            &mut params,
        )
        .map_err(|e| format!("compute object: {e:?}"))?;
    w.s.ctl
        .alloc_vram(w.s.client, w.s.device, 0, mib << 20)
        .map_err(|e| format!("alloc_vram: {e:?}"))?;
    Ok(w)
}

fn nvml_reports_this_process() -> Outcome {
    with_double(|rel| {
        let _held = hold_memory()?;
        let me = std::process::id();
        let (out, _) = traced(&format!("/bin/nvmlprobe-{rel}"))?;
        ensure!(
            out.contains("gpu=0 processes=0 count=1"),
            "process count: {out}"
        );
        let mine = format!("gpu=0 process pid={me} used={}", MINE_MIB << 20);
        ensure!(out.contains(&mine), "want {mine:?}: {out}");
        // v2: used is the heap's use (this process's), free the rest of
        // the heap; v1 counts the reserved part as used.
        let num = |line: &str, key: &str| -> Result<u64, String> {
            field(&out, line, key)
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("{line} {key}: {out}"))
        };
        let (used2, free2) = (
            num("gpu=0 memory_v2=", "used")?,
            num("gpu=0 memory_v2=", "free")?,
        );
        ensure!(
            used2 == held() && used2 + free2 == HEAP_MIB << 20,
            "memory_v2 used {used2}, free {free2}: {out}"
        );
        let (used1, free1) = (num("gpu=0 memory=", "used")?, num("gpu=0 memory=", "free")?);
        ensure!(
            free1 == free2 && used1 == used2 + ((VRAM_MIB - HEAP_MIB) << 20),
            "memory used {used1}, free {free1}: {out}"
        );
        Ok(())
    })
}

fn smi_lists_the_gpu() -> Outcome {
    with_double(|rel| {
        let (out, _) = traced(&format!("/bin/nvidia-smi-{rel} -L"))?;
        let want = format!("GPU 0: {NAME} (UUID: {UUID})");
        ensure!(
            out.lines().next() == Some(want.as_str()),
            "want {want:?}: {out}"
        );
        ensure!(out.contains("rc=0"), "{out}");
        Ok(())
    })
}

fn smi_query_gpu_figures() -> Outcome {
    with_double(|rel| {
        let (out, _) = traced(&format!(
            "/bin/nvidia-smi-{rel} --query-gpu=name,uuid,memory.total,memory.used,memory.free --format=csv,noheader,nounits"
        ))?;
        let line = out.lines().next().unwrap_or("");
        let f: Vec<&str> = line.split(", ").collect();
        ensure!(f.len() == 5, "want 5 fields: {out}");
        ensure!(f[0] == NAME && f[1] == UUID, "name, uuid: {line}");
        ensure!(f[2] == VRAM_MIB.to_string(), "total {VRAM_MIB} MiB: {line}");
        let used: u64 = f[3].parse().map_err(|_| format!("used: {line}"))?;
        let free: u64 = f[4].parse().map_err(|_| format!("free: {line}"))?;
        ensure!(used + free == HEAP_MIB, "used + free != total: {line}");
        Ok(())
    })
}

fn smi_compute_apps_show_this_process() -> Outcome {
    with_double(|rel| {
        let _held = hold_memory()?;
        let me = std::process::id();
        let (out, _) = traced(&format!(
            "/bin/nvidia-smi-{rel} --query-compute-apps=pid,used_memory --format=csv,noheader,nounits"
        ))?;
        let want = format!("{me}, {MINE_MIB}");
        ensure!(
            out.lines().next() == Some(want.as_str()),
            "want {want:?}: {out}"
        );
        Ok(())
    })
}

fn smi_default_view() -> Outcome {
    with_double(|rel| {
        let _held = hold_memory()?;
        let me = std::process::id();
        let (out, _) = traced(&format!("/bin/nvidia-smi-{rel}"))?;
        ensure!(out.contains(&format!("Driver Version: {rel}")), "{out}");
        // The columns' widths differ by release: compare words.
        let words = out.split_whitespace().collect::<Vec<_>>().join(" ");
        ensure!(
            words.contains(&format!("{}MiB / {VRAM_MIB}MiB", smi_mib(held()))),
            "used / total: {out}"
        );
        ensure!(
            out.lines()
                .any(|l| l.contains(&format!(" {me} ")) && l.contains(&format!("{MINE_MIB}MiB"))),
            "no process line for {me}: {out}"
        );
        ensure!(out.contains("rc=0"), "{out}");
        Ok(())
    })
}

fn smi_query_all() -> Outcome {
    with_double(|rel| {
        let (out, _) = traced(&format!("/bin/nvidia-smi-{rel} -q"))?;
        ensure!(
            out.contains(&format!(
                "Driver Version                            : {rel}"
            )),
            "{out}"
        );
        ensure!(
            out.contains(&format!("Product Name                          : {NAME}")),
            "{out}"
        );
        ensure!(
            out.contains(&format!("GPU UUID                              : {UUID}")),
            "{out}"
        );
        ensure!(out.contains("rc=0"), "{out}");
        Ok(())
    })
}

fn smi_query_sections() -> Outcome {
    with_double(|rel| {
        let _held = hold_memory()?;
        let me = std::process::id();
        let (out, _) = traced(&format!(
            "/bin/nvidia-smi-{rel} -q -d MEMORY,PIDS,UTILIZATION,COMPUTE"
        ))?;
        for (what, mib) in [
            ("Total", VRAM_MIB),
            ("Reserved", VRAM_MIB - HEAP_MIB),
            ("Used", smi_mib(held())),
            ("Free", smi_mib((HEAP_MIB << 20) - held())),
        ] {
            let want = format!("{what:<34}: {mib} MiB");
            ensure!(out.contains(&want), "want {want:?}: {out}");
        }
        ensure!(
            out.contains(&format!("Process ID                        : {me}")),
            "{out}"
        );
        ensure!(out.contains("rc=0"), "{out}");
        Ok(())
    })
}

/// The controls NVIDIA's libcuda (550.163.01) asks in `cuInit` and
/// `cuCtxCreate` that the double serves for it (`rm/cuda.rs`,
/// docs/driver-double.md), each of which must be answered with NV_OK.
const CUDA_SERVED: &[u32] = &[
    0x0000_0d04, // CLIENT_SET_INHERITED_SHARE_POLICY
    0x0000_01f0, // SYSTEM_GET_FEATURES (550's libcuda only)
    0x0000_0a04, // SYNC_GPU_BOOST_GROUP_INFO
    0x0080_0280, // GPU_GET_NUM_SUBDEVICES
    0x0080_1402, // HOST_GET_CAPS_V2
    0x2080_1823, // BUS_GET_INFO_V2
    0x2080_1803, // BUS_GET_PCI_BAR_INFO
    0x2080_182a, // BUS_GET_PCIE_SUPPORTED_GPU_ATOMICS
    0x2080_0170, // GPU_GET_ENGINES_V2
    0x2080_0119, // GPU_GET_SIMULATION_INFO
    0x0000_027b, // GPU_GET_MEMOP_ENABLE
    0x2080_1201, // GR_GET_INFO
    0x2080_122a, // GR_GET_GPC_MASK
    0x2080_122b, // GR_GET_TPC_MASK
    0x2080_1227, // GR_GET_CAPS_V2
    0x2080_2a0a, // CE_GET_ALL_CAPS
    0x2080_1230, // GR_GET_SM_ISSUE_RATE_MODIFIER
    0x2080_121b, // GR_GET_GLOBAL_SM_ORDER
    0x0080_1307, // FB_GET_CAPS_V2
    0x2080_1303, // FB_GET_INFO_V2, its new indices included
    0x0000_0d01, // CLIENT_GET_ADDR_SPACE_TYPE
    0x2080_3601, // GSP_GET_FEATURES
    0x2080_0111, // GPU_GET_SHORT_NAME_STRING
    0x2080_0131, // GPU_QUERY_COMPUTE_MODE_RULES
    0x2080_8159, // GSS-legacy 0x59, GSP's (a GUESS): NV_OK
    0x2080_8161, // GSS-legacy 0x61 (535's libcuda only), likewise
    0x2080_220c, // RC_RELEASE_WATCHDOG_REQUESTS
    0x2080_2210, // RC_SOFT_DISABLE_WATCHDOG (vgpu refuses it)
    0x2080_0145, // GPU_ACQUIRE_COMPUTE_MODE_RESERVATION (vgpu: the vGPU's own)
    0x2080_0146, // GPU_RELEASE_COMPUTE_MODE_RESERVATION (likewise)
    0x2080_1210, // GR_SET_CTXSW_PREEMPTION_MODE, on libcuda's TSG
    0x906f_0102, // RESET_CHANNEL
    0x83de_0309, // DEBUG_SET_EXCEPTION_MASK, on its GT200_DEBUGGER
    0x0080_1909, // PERF_CUDA_LIMIT_SET_CONTROL
    0x0080_9909, // its GSS-legacy form (535's libcuda only)
];

/// Whether libcuda of the userspace release asks `cmd`: 535.261.03's
/// does not ask SYSTEM_GET_FEATURES nor PERF_CUDA_LIMIT_SET_CONTROL (it
/// asks 0x809909, which RM at 535.261.03 has not), 550.163.01's not
/// GSS-legacy 0x61.
fn cuda_asks(cmd: u32) -> bool {
    let r535 = userspace_release() == "535.261.03";
    match cmd {
        0x0000_01f0 | 0x0080_1909 => !r535,
        0x2080_8161 | 0x0080_9909 => r535,
        _ => true,
    }
}

/// What the double refuses libcuda on the way, and why: RM refuses it
/// too (GET_ACTIVE_PARTITION_IDS with MIG off; 0x80028b, which RM has not
/// at 550.163.01), or the double does not model it yet (docs/driver-double.md).
/// libcuda goes on after each.
const CUDA_REFUSED: &[u32] = &[
    0x2080_018b, // GPU_GET_ACTIVE_PARTITION_IDS: NOT_SUPPORTED, as RM
    0x0080_028b, // not in RM at 550.163.01: NOT_SUPPORTED, as RM
    0x2081_0108, // on NV2081_BINAPI: GSP's, not modelled
    0x2080_012f, // GPU_QUERY_ECC_STATUS: GSP's, not modelled
    0x2080_01a3, // GET_GPU_FABRIC_PROBE_INFO: not modelled
    0x2080_3002, // NVLINK_GET_NVLINK_STATUS: no NVLink modelled
    0x2080_182b, // BUS_GET_C2C_INFO: not modelled
    0x2080_9038, // not in RM at 550.163.01: NOT_SUPPORTED, as RM
];

/// What vgpu refuses libcuda (Denied rows, NV_ERR_NOT_SUPPORTED) that
/// the double answers: the GPU-wide watchdog's soft disable, after which
/// libcuda goes on. (The compute-mode reservation, where `cuCtxCreate`
/// stopped with 46, CUDA_ERROR_DEVICES_UNAVAILABLE, while vgpu refused
/// it, is now each vGPU's own.)
const CUDA_VGPU_DENIED: &[u32] = &[0x2080_2210];

/// The status cuprobe prints for libcuda's `call` (`cuInit=0`, ...).
/// cuprobe's report `out` (`who` in errors): every call up to
/// `cuCtxCreate` succeeded, `cuCtxCreate` returned `ctx`, and one device
/// of the double's name and `bytes` bytes was seen.
fn cuprobe_reached(out: &str, who: &str, ctx: &str, bytes: &str) -> Outcome {
    for (call, want) in [
        ("dlopen", "ok"),
        ("cuInit", "0"),
        ("cuDriverGetVersion", "0"),
        ("cuDeviceGetCount", "0"),
        ("cuDeviceGet", "0"),
        ("cuDeviceGetName", "0"),
        ("cuDeviceTotalMem_v2", "0"),
        ("cuCtxCreate_v2", ctx),
    ] {
        ensure!(
            cu_status(out, call) == Some(want),
            "{who}: {call} not {want}: {out}"
        );
    }
    ensure!(
        field(out, "cuDeviceGetCount=", "count") == Some("1")
            && field(out, "cuDeviceTotalMem_v2=", "bytes") == Some(bytes)
            && out.contains(&format!("name={NAME}")),
        "{who}: want one device {NAME:?} of {bytes} bytes: {out}"
    );
    Ok(())
}

/// `cuprobe --fill`'s report `out`: `cuMemAlloc_v2` in 64 MiB steps
/// failed with CUDA_ERROR_OUT_OF_MEMORY (2) once less than a step was
/// left of the free memory `cuMemGetInfo_v2` gave after `cuCtxCreate`,
/// and every step was freed; returns (free, bytes filled).
fn filled(out: &str, who: &str) -> Result<(u64, u64), String> {
    const STEP: u64 = 64 << 20;
    let num = |line: &str, k: &str| field(out, line, k).and_then(|v| v.parse::<u64>().ok());
    let free = num("cuMemGetInfo_v2=", "free").ok_or(format!("{who}: no free figure: {out}"))?;
    let bytes = num("fill=", "bytes").ok_or(format!("{who}: no fill: {out}"))?;
    ensure!(
        cu_status(out, "fill") == Some("2")
            && bytes <= free
            && free - bytes < STEP
            && cu_status(out, "fillfree") == Some("0"),
        "{who}: want 64 MiB steps to stop with 2 within a step of {free} free, all freed: {out}"
    );
    Ok((free, bytes))
}

/// After `cuCtxCreate`, cuprobe's `cuMemGetInfo_v2` succeeded with
/// `total` bytes in all and less free (the context's own memory), and
/// `cuCtxDestroy_v2` succeeded.
fn context_memory(out: &str, who: &str, total: &str) -> Outcome {
    let num = |k: &str| field(out, "cuMemGetInfo_v2=", k).and_then(|v| v.parse::<u64>().ok());
    let (t, f) = (num("total"), num("free"));
    ensure!(
        cu_status(out, "cuMemGetInfo_v2") == Some("0")
            && t.map(|t| t.to_string()).as_deref() == Some(total)
            && f.zip(t).is_some_and(|(f, t)| f > 0 && f < t)
            && cu_status(out, "cuCtxDestroy_v2") == Some("0"),
        "{who}: want cuMemGetInfo 0 with total {total} and less free, cuCtxDestroy 0: {out}"
    );
    Ok(())
}

fn cu_status<'a>(out: &'a str, call: &str) -> Option<&'a str> {
    out.lines().find_map(|l| {
        l.split_whitespace()
            .next()?
            .strip_prefix(call)?
            .strip_prefix('=')
    })
}

/// Checks nvtrace's log `log` of libcuda (cuprobe): every control of
/// [`CUDA_SERVED`] it asks (less `denied`, and the reservation's release
/// where its acquisition is denied) answered NV_OK, every one of
/// `denied` refused NV_ERR_NOT_SUPPORTED, and nothing else refused
/// beyond [`CUDA_REFUSED`] and the NV_CONFIDENTIAL_COMPUTE class (no
/// escape refused at all).
fn check_cuda_log(who: &str, log: &str, denied: &[u32]) -> Outcome {
    let key = |c: &u32| format!("cmd={c:#010x} ");
    // A reservation refused is not released.
    let asked = |c: &u32| {
        cuda_asks(*c)
            && !denied.contains(c)
            && !(*c == 0x2080_0146 && denied.contains(&0x2080_0145))
    };
    for cmd in CUDA_SERVED.iter().filter(|c| asked(c)) {
        ensure!(
            log.lines()
                .any(|l| l.contains(&key(cmd)) && l.contains(" status=0x0 ")),
            "{who}: libcuda's {cmd:#010x} not answered with NV_OK: {log}"
        );
    }
    for cmd in denied {
        ensure!(
            log.lines()
                .any(|l| l.contains(&key(cmd)) && l.contains(" status=0x56 ")),
            "{who}: libcuda's {cmd:#010x} not refused with NOT_SUPPORTED: {log}"
        );
    }
    for l in log.lines().filter(|l| {
        l.split_whitespace()
            .any(|t| (t.starts_with("status=") && t != "status=0x0") || t == "ret=-1")
    }) {
        // NV_CONFIDENTIAL_COMPUTE, and OS-descriptor memory (user pages
        // RM pins: RM_ALLOC_MEMORY of class 0x71), which the double does
        // not model.
        let known = l.contains("hClass=0xcb33")
            || (l.contains(" ALLOC_MEMORY ") && l.contains(" hClass=0x0071 "))
            || CUDA_REFUSED
                .iter()
                .chain(denied)
                .any(|c| l.contains(&key(c)));
        ensure!(known, "{who}: refused, and not a known gap: {l}");
    }
    Ok(())
}

/// NVIDIA's libcuda (`cuprobe`) directly on the double, as far as the
/// double carries it (issue 40): `cuInit` succeeds, the device is
/// counted, got and named, and its memory is the double's heap; every
/// control the double serves for it is answered and every call refused
/// is one RM refuses too or one the double does not model yet
/// ([`CUDA_REFUSED`]; the NV_CONFIDENTIAL_COMPUTE class besides).
/// `cuCtxCreate` maps memory into GPU VA ranges (RM_MAP_MEMORY_DMA), moves
/// a CPU mapping (RM_UPDATE_DEVICE_MAPPING_INFO), makes its TSG, context
/// share, channels and their compute and copy objects and its OS events
/// (on a GPU node), every call answered; the double's engine runs the
/// work it pushes (`rm/gpfifo.rs`), it pins OS-descriptor memory, maps
/// its compute objects' MMIO pages, and `cuCtxCreate` succeeds:
/// `cuMemGetInfo` then gives the heap as total and less as free (what the
/// context took), and `cuCtxDestroy` succeeds. The test prints what
/// cuprobe reports.
fn cuda_device_setup_on_the_double() -> Outcome {
    with_double(|rel| {
        ensure!(
            exists(&format!("/bin/cuprobe-{rel}")),
            "cuprobe missing from the initramfs"
        );
        let (out, _) = traced(&format!("/bin/cuprobe-{rel}"))?;
        let heap = (HEAP_MIB << 20).to_string();
        cuprobe_reached(&out, "cuprobe", "0", &heap)?;
        context_memory(&out, "cuprobe", &heap)?;
        let log = std::fs::read_to_string("/tmp/nvtrace-smi").unwrap_or_default();
        check_cuda_log("directly", &log, &[])?;
        println!(
            "# libcuda on the double: {}",
            out.lines()
                .filter(|l| l.starts_with("cu"))
                .collect::<Vec<_>>()
                .join(" | ")
        );
        Ok(())
    })
}

/// libcuda's copies and launches on the double (`cuprobe --copy
/// --launch`): 1 MiB goes to device memory (`cuMemcpyHtoD_v2`) and comes
/// back byte for byte (`cuMemcpyDtoH_v2`), through the copy engine the
/// double runs; a PTX kernel, compiled on the CPU by NVIDIA's PTX JIT,
/// is launched and `cuCtxSynchronize` returns (the double releases the
/// semaphores its QMD names; the kernel's instructions are not run).
/// cuprobe runs under `timeout`: a launch whose completion never comes
/// fails the test instead of hanging it.
fn cuda_copies_and_launches_on_the_double() -> Outcome {
    with_double(|rel| {
        let out = sh(&format!(
            "timeout 300 /bin/cuprobe-{rel} --copy --launch 2>&1; echo rc=$?"
        ))?;
        println!(
            "# libcuda on the double: {}",
            out.trim().replace('\n', " | ")
        );
        copied_and_launched(&out, "cuprobe --copy --launch")?;
        ensure!(
            cu_status(&out, "cuCtxDestroy_v2") == Some("0"),
            "cuprobe --copy --launch: {out}"
        );
        Ok(())
    })
}

/// libcuda's managed memory on the double (`cuprobe --managed`): on
/// (CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY 1), 64 steps of 64 MiB allocated
/// and each prefetched to the GPU (4 GiB of its heap), and once cuprobe
/// is gone the double holds nothing on the GPU: no VRAM, no managed
/// residency.
fn cuda_managed_on_the_double() -> Outcome {
    with_double(|rel| {
        let (out, _) = traced(&format!("/bin/cuprobe-{rel} --managed"))?;
        println!(
            "# libcuda on the double: {}",
            out.trim().replace('\n', " | ")
        );
        ensure!(
            field(&out, "attributes=", "managed") == Some("1")
                && cu_status(&out, "managed") == Some("0")
                && field(&out, "managed=", "prefetch") == Some("0")
                && field(&out, "managed=", "steps") == Some("64"),
            "cuprobe --managed: want managed memory on, 64 steps allocated and prefetched: {out}"
        );
        let g = crate::fuzz::check::gpu(0)?;
        ensure!(
            g.used == 0 && g.managed == 0,
            "after cuprobe the double holds {} bytes on GPU 0, {} of them managed",
            g.used,
            g.managed
        );
        Ok(())
    })
}

/// libcuda SIGKILLed while it makes its context, through vgpu (a process
/// in a cgroup bound to a vGPU of the whole GPU, whose opens of NVIDIA's
/// nodes are vgpu's proxy files): at each of several points of
/// `cuprobe`'s run, once it is gone the vGPU's `memory_used`,
/// `memory_managed`, `compute_tsgs` and `users` are 0 and the double holds
/// nothing on the GPU (no VRAM, no TSG: every object freed). The points
/// are times after the start, spread over a run (which takes about 2 s of
/// guest time on the stock kernel); the test prints how far each got.
fn cuda_killed_mid_context_leaves_nothing() -> Outcome {
    with_double(|rel| {
        sh("modprobe vgpu")?;
        let r = (|| {
            std::fs::create_dir_all("/sys/fs/cgroup/cudakill")
                .map_err(|e| format!("mkdir: {e}"))?;
            sh("echo 0 > /sys/class/vgpu/create; echo 0 > /sys/class/vgpu/vgpu0/gpu")?;
            sh("echo /cudakill > /sys/class/vgpu/vgpu0/cgroup")?;
            let mut got = Vec::new();
            for ms in [30u64, 250, 900, 1400, 2000, 3000] {
                let mut child = std::process::Command::new("sh")
                    .arg("-c")
                    .arg(format!(
                        "echo $$ > /sys/fs/cgroup/cudakill/cgroup.procs && exec /bin/cuprobe-{rel}"
                    ))
                    .stdout(std::process::Stdio::piped())
                    .spawn()
                    .map_err(|e| format!("spawn: {e}"))?;
                std::thread::sleep(std::time::Duration::from_millis(ms));
                let _ = child.kill();
                let out = child.wait_with_output().map_err(|e| format!("wait: {e}"))?;
                let text = String::from_utf8_lossy(&out.stdout);
                let last = text.lines().last().unwrap_or("(nothing)").to_string();
                settled_after_kill()
                    .map_err(|e| format!("killed after {ms} ms (last: {last}): {e}"))?;
                got.push(format!("{ms} ms: {last}"));
            }
            println!("# killed and settled: {}", got.join("; "));
            Ok(())
        })();
        let _ = sh("echo > /sys/class/vgpu/vgpu0/cgroup; echo 0 > /sys/class/vgpu/remove");
        let _ = std::fs::remove_dir("/sys/fs/cgroup/cudakill");
        let unload = sh("rmmod vgpu").map(drop);
        r.and(unload)
    })
}

/// vGPU 0 on GPU 0 with nothing charged, tracked or used, and the
/// double holding nothing on GPU 0, within 10 s.
fn settled_after_kill() -> Outcome {
    use crate::fuzz::check::{attr, gpu, GpuView};
    let t0 = std::time::Instant::now();
    loop {
        let mut left = Vec::new();
        for a in ["memory_used", "memory_managed", "compute_tsgs", "users"] {
            let v = attr(0, a)?;
            if v != 0 {
                left.push(format!("vgpu0/{a} = {v}"));
            }
        }
        let d = gpu(0)?;
        if d != GpuView::default() {
            left.push(format!("the double holds {d:?}"));
        }
        if left.is_empty() {
            return Ok(());
        }
        ensure!(
            t0.elapsed() < std::time::Duration::from_secs(10),
            "{}",
            left.join(", ")
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// libcuda's `cuMemAlloc_v2` in 64 MiB steps on the double
/// (`cuprobe --fill`) stops with CUDA_ERROR_OUT_OF_MEMORY within one step
/// of the free memory `cuMemGetInfo_v2` reported, and every step is freed
/// (with 535.261.03's libcuda no context is made, so no fill runs).
fn cuda_fills_the_heap_on_the_double() -> Outcome {
    with_double(|rel| {
        let out = sh(&format!("/bin/cuprobe-{rel} --fill 2>&1"))?;
        let (free, bytes) = filled(&out, "cuprobe")?;
        println!("# libcuda on the double: {free} bytes free, {bytes} allocated in 64 MiB steps");
        Ok(())
    })
}

// Through vgpu: two podman containers, each given a vGPU of its own size
// on GPU 0 of two (`--device vgpu.dev/gpu=N`, the CDI spec vgpuctl
// writes, crun), each with one CUDA-like process that holds memory
// (`vgpu-selftest demo-hold`, the container's PID 1). NVIDIA's nvidia-smi
// and nvmlprobe run in each (`podman exec`) and on the host; every figure
// is checked against sysfs and the other tenant's absence.

/// The containers: name, vGPU, its memory_limit and what its process holds
/// (MiB; distinct figures, so that one tenant's cannot pass for another's).
const TENANTS: [(&str, u32, u64, u64); 2] = [("smia", 0, 1024, 192), ("smib", 1, 3072, 320)];

/// GPUs of the double in the container tests: two, so that `-L` in a
/// container shows that the other GPU is hidden, on both releases.
const HOST_GPUS: usize = 2;

/// The containers' root filesystem (scripts/podman-root.sh).
const ROOTFS: &str = "/var/lib/vgpu-rootfs";

fn podman(args: &[&str]) -> Result<(i32, String), String> {
    crate::sys::run(
        std::process::Command::new("/usr/bin/podman")
            .args(args)
            .env("PATH", "/usr/bin:/bin"),
    )
}

fn vgpu_attr(id: u32, f: &str) -> Result<u64, String> {
    let t = crate::sys::read_file(&format!("/sys/class/vgpu/vgpu{id}/{f}"))?;
    t.trim().parse().map_err(|_| format!("vgpu{id}/{f}: {t:?}"))
}

/// Tenant 0's libcuda holds a live context (`cuprobe --hold`, stopped
/// at "held" right after `cuMemGetInfo_v2`):
/// - every byte of VRAM the double holds on GPU 0 (`nvidia-double/gpus`:
///   RM objects, contexts included) is charged to a vGPU: the two
///   tenants' `memory_used` add up to it exactly, and tenant 0's has grown
///   by the context's memory, which its `cuMemGetInfo_v2` showed as taken
///   (`memory_limit` less free);
/// - tenant 1's libcuda beside it (`cuprobe --fill`) sees its own vGPU
///   only (`cuMemGetInfo_v2`'s total its `memory_limit`) and stops at its
///   own ceiling, and tenant 0's `memory_used` does not move meanwhile.
///
/// Once released, tenant 0's `memory_used` is what it was before; then
/// its libcuda copies 1 MiB there and back byte for byte and launches a
/// kernel that completes (`cuprobe --copy --launch`), through vgpu.
/// The lines of a child's standard output.
type OutLines = std::io::Lines<std::io::BufReader<std::process::ChildStdout>>;

/// `podman exec -i name sh -c script`, started: the child, its standard
/// input and the lines of its standard output.
fn exec_piped(
    name: &str,
    script: &str,
) -> Result<(std::process::Child, std::process::ChildStdin, OutLines), String> {
    use std::io::BufRead;
    let mut child = std::process::Command::new("/usr/bin/podman")
        .args(["exec", "-i", name, "sh", "-c", script])
        .env("PATH", "/usr/bin:/bin")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("podman exec {name}: {e}"))?;
    let stdin = child.stdin.take().ok_or("no stdin")?;
    let lines = std::io::BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
    Ok((child, stdin, lines))
}

fn containers_cuda_context_charged_and_isolated() -> Outcome {
    use std::io::Write;
    let rel = userspace_release();
    let (name, id, limit, _) = TENANTS[0];
    let before = vgpu_attr(id, "memory_used")?;
    let script = format!(
        "export LD_LIBRARY_PATH=/opt/nvidia-{rel}/lib; export PATH=/opt/nvidia-{rel}/bin:/usr/local/bin:$PATH; \
         timeout 600 cuprobe --hold 2>&1; echo rc=$?"
    );
    let (mut child, mut stdin, mut lines) = exec_piped(name, &script)?;
    let mut out = String::new();
    let held = loop {
        match lines.next() {
            Some(Ok(l)) => {
                out.push_str(&l);
                out.push('\n');
                if l == "held" {
                    break true;
                }
            }
            _ => break false,
        }
    };
    let checked = (|| {
        ensure!(held, "{name}: cuprobe ended before holding: {out}");
        let used = vgpu_attr(id, "memory_used")?;
        let mut charged = 0;
        for (_, v, _, _) in TENANTS {
            charged += vgpu_attr(v, "memory_used")? - vgpu_attr(v, "memory_managed")?;
        }
        let g = crate::fuzz::check::gpu(0)?;
        let free = field(&out, "cuMemGetInfo_v2=", "free")
            .and_then(|v| v.parse::<u64>().ok())
            .ok_or(format!("{name}: no free figure: {out}"))?;
        // RM's objects, and the page tables of libcuda's dynamic-parallelism
        // region, which vgpu charges at their bound and the double does not
        // model (as the fuzz suite's oracle counts them).
        let held = g.used - g.managed + g.dp * nvclient::uvm::DP_REGION_PAGE_TABLES;
        println!(
            "# {name}: context live: memory_used {used} (was {before}), cuMemGetInfo free {free} of {}, the double holds {} on GPU 0 and has {} DP regions, the vGPUs are charged {charged}",
            limit << 20,
            g.used - g.managed,
            g.dp
        );
        ensure!(
            charged == held,
            "the vGPUs are charged {charged} bytes, the double holds {} on GPU 0 with {} DP regions",
            g.used - g.managed,
            g.dp
        );
        ensure!(
            used > before && (limit << 20) - free == used,
            "{name}: memory_used {used} (before {before}); libcuda saw {free} free of {} MiB",
            limit
        );
        // The other tenant's libcuda meanwhile.
        let (other, oid, olimit, _) = TENANTS[1];
        let (_, fill) = podman(&[
            "exec",
            other,
            "sh",
            "-c",
            &format!(
                "export LD_LIBRARY_PATH=/opt/nvidia-{rel}/lib; export PATH=/opt/nvidia-{rel}/bin:/usr/local/bin:$PATH; \
                 cuprobe --fill 2>&1"
            ),
        ])?;
        let (ofree, obytes) = filled(&fill, other)?;
        ensure!(
            field(&fill, "cuMemGetInfo_v2=", "total").map(str::to_string)
                == Some((olimit << 20).to_string()),
            "{other}: not its own vGPU's total: {fill}"
        );
        let after = vgpu_attr(id, "memory_used")?;
        ensure!(
            after == used,
            "{name}: memory_used went from {used} to {after} while {other} filled its vGPU"
        );
        println!(
            "# {other} (vGPU {oid}) beside it: {ofree} free, {obytes} allocated in 64 MiB steps; {name}'s memory_used unchanged"
        );
        Ok(())
    })();
    let _ = stdin.write_all(b"\n");
    drop(stdin);
    for l in lines.map_while(Result::ok) {
        out.push_str(&l);
        out.push('\n');
    }
    let _ = child.wait();
    checked?;
    ensure!(
        cu_status(&out, "cuCtxDestroy_v2") == Some("0") && out.trim_end().ends_with("rc=0"),
        "{name}: {out}"
    );
    let end = vgpu_attr(id, "memory_used")?;
    ensure!(
        end == before,
        "{name}: memory_used {end} after cuprobe, {before} before"
    );
    let (_, run) = podman(&[
        "exec",
        name,
        "sh",
        "-c",
        &format!(
            "export LD_LIBRARY_PATH=/opt/nvidia-{rel}/lib; export PATH=/opt/nvidia-{rel}/bin:/usr/local/bin:$PATH; \
             timeout 300 cuprobe --copy --launch 2>&1; echo rc=$?"
        ),
    ])?;
    println!(
        "# {name} $ cuprobe --copy --launch: {}",
        run.trim().replace('\n', " | ")
    );
    copied_and_launched(&run, &format!("{name}: cuprobe --copy --launch"))
}

/// The compute shares of the two containers in
/// [`containers_cuda_launches_get_their_shares`], per cent (fixed policy).
const SPIN_SHARES: [u32; 2] = [30, 70];

/// The cgroup of each tenant's container (that of its first process, as
/// /proc/PID/cgroup gives it).
fn tenant_cgroups() -> Result<Vec<String>, String> {
    let mut groups = Vec::new();
    for (t, (name, _, _, _)) in TENANTS.iter().enumerate() {
        let (host, _) = tenant_pids(t)?;
        groups.push(
            std::fs::read_to_string(format!("/proc/{host}/cgroup"))
                .map_err(|e| format!("{name}: cgroup: {e}"))?,
        );
    }
    Ok(groups)
}

/// The engine time (ns) the double's TSGs of each tenant's processes had
/// run in `view`, a read of debugfs `nvidia-double/engine`: a TSG is a
/// tenant's when the process that made its client is in the tenant's
/// cgroup, `groups` ([`tenant_cgroups`]).
fn engine_ns_by_tenant(view: &str, groups: &[String]) -> Result<[u64; 2], String> {
    let mut ns = [0u64; 2];
    for l in view.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        let (Some(tgid), Some(n)) = (f.get(7), f.get(9).and_then(|v| v.parse::<u64>().ok())) else {
            return Err(format!("engine view: {l}"));
        };
        let Ok(g) = std::fs::read_to_string(format!("/proc/{tgid}/cgroup")) else {
            continue;
        };
        if let Some(t) = groups.iter().position(|c| *c == g) {
            ns[t] += n;
        }
    }
    Ok(ns)
}

/// The scheduling period of [`containers_cuda_launches_get_their_shares`],
/// us: each of libcuda's contexts has 11 TSGs, and under emulation a
/// switch of 22 TSGs takes milliseconds, which at the default 50 ms period
/// is a large part of a 30% window (measured with 10 ms grids: the 30%
/// tenant's ran 12% of the GPU, the 70% tenant's 19%, 38.5/61.5 of the
/// engine time).
const SPIN_PERIOD_US: u32 = 500_000;

/// libcuda's launches in both containers at once, at shares of 30 and 70
/// (fixed policy, a period of [`SPIN_PERIOD_US`]): `cuprobe --spin` in
/// each (a context, the kernel loaded, then 100000-CTA grids, each CTA 1
/// us of the double's engine, in batches of two with one batch always
/// queued, for 10 s), started together once both are ready. Over 16
/// periods (8 s) from 1 s after the start, each container's engine time
/// (the double's, per TSG of its processes), over the sum of both, must be
/// its share within 2 points, as the project's own client's is (`make
/// bench`); and both
/// must have run at least 70% of their share of those 8 s (they kept
/// their windows busy: under emulation, 80-90% measured).
fn containers_cuda_launches_get_their_shares() -> Outcome {
    use std::io::Write;
    let rel = userspace_release();
    let period = "/sys/class/vgpu/gpu0/compute_period_us";
    crate::sys::write_file(period, &SPIN_PERIOD_US.to_string())
        .map_err(|e| format!("{period}: errno {e}"))?;
    for ((_, id, _, _), pct) in TENANTS.iter().zip(SPIN_SHARES) {
        crate::compute::set_share(*id, pct)?;
    }
    let script = format!(
        "export LD_LIBRARY_PATH=/opt/nvidia-{rel}/lib; export PATH=/opt/nvidia-{rel}/bin:/usr/local/bin:$PATH; \
         timeout 600 cuprobe --spin 2>&1; echo rc=$?"
    );
    let mut runs = Vec::new();
    let r = (|| {
        for (name, _, _, _) in TENANTS {
            let (child, stdin, lines) = exec_piped(name, &script)?;
            runs.push((name, child, Some(stdin), lines, String::new()));
        }
        for (name, _, _, lines, out) in runs.iter_mut() {
            let ready = lines.map_while(Result::ok).any(|l| {
                out.push_str(&l);
                out.push('\n');
                l == "ready"
            });
            ensure!(ready, "{name}: cuprobe --spin never got ready: {out}");
        }
        let groups = tenant_cgroups()?;
        // Both go at once.
        for (_, _, stdin, _, _) in runs.iter_mut() {
            if let Some(mut i) = stdin.take() {
                let _ = i.write_all(b"go\n");
            }
        }
        // Whole periods (16), each read of the view as short as can be:
        // time outside whole periods goes to one tenant only.
        std::thread::sleep(std::time::Duration::from_secs(1));
        let engine = "/sys/kernel/debug/nvidia-double/engine";
        let t0 = std::time::Instant::now();
        let first = crate::sys::read_file(engine)?;
        std::thread::sleep(std::time::Duration::from_micros(
            16 * u64::from(SPIN_PERIOD_US),
        ));
        let last = crate::sys::read_file(engine)?;
        let wall = t0.elapsed().as_nanos() as f64;
        let before = engine_ns_by_tenant(&first, &groups)?;
        let after = engine_ns_by_tenant(&last, &groups)?;
        let ran = [
            after[0].saturating_sub(before[0]),
            after[1].saturating_sub(before[1]),
        ];
        let sum = (ran[0] + ran[1]) as f64;
        for (name, _, _, lines, out) in runs.iter_mut() {
            for l in lines.map_while(Result::ok) {
                out.push_str(&l);
                out.push('\n');
            }
            ensure!(
                cu_status(out, "spin") == Some("0"),
                "{name}: cuprobe --spin: {out}"
            );
            println!(
                "# {name}: {}",
                out.lines().find(|l| l.starts_with("spin=")).unwrap_or("")
            );
        }
        ensure!(
            ran[0] > 0 && ran[1] > 0,
            "no engine time: {before:?} then {after:?}; the engine: {}",
            crate::sys::read_file("/sys/kernel/debug/nvidia-double/engine")?.replace('\n', " | ")
        );
        let mut worst = 0.0f64;
        let mut saturated = true;
        for (((name, _, _, _), ran), pct) in TENANTS.iter().zip(ran).zip(SPIN_SHARES) {
            let got = 100.0 * ran as f64 / sum;
            let used = 100.0 * ran as f64 / wall;
            worst = worst.max((got - f64::from(pct)).abs());
            saturated &= used >= 0.7 * f64::from(pct);
            println!(
                "# {name}: share {pct}%: libcuda's 100000-CTA grids ran {} ms of the engine in {:.0} ms ({used:.1}% of the GPU), {got:.1}% of both containers' engine time",
                ran / 1_000_000,
                wall / 1e6
            );
        }
        let within = worst <= 2.0;
        ensure!(
            within && saturated,
            "libcuda's grids missed their shares by {worst:.1} points, or did not fill their windows"
        );
        Ok(())
    })();
    for (_, child, stdin, _, _) in runs.iter_mut() {
        drop(stdin.take());
        let _ = child.wait();
    }
    for (_, id, _, _) in TENANTS {
        crate::compute::set_share(id, 100)?;
    }
    crate::sys::write_file(period, "50000").map_err(|e| format!("{period}: errno {e}"))?;
    r?;
    for (name, _, _, _, out) in &runs {
        ensure!(
            cu_status(out, "cuCtxDestroy_v2") == Some("0") && out.trim_end().ends_with("rc=0"),
            "{name}: {out}"
        );
    }
    Ok(())
}

/// `cuprobe --copy --launch`'s report `out` (`who` in errors), run with
/// `echo rc=$?` after it: the 1 MiB round trip matched, the kernel
/// loaded, launched and synchronized, and cuprobe exited 0.
fn copied_and_launched(out: &str, who: &str) -> Outcome {
    ensure!(
        out.lines().any(|l| l == "copy=0 htod=0 dtoh=0 match=1")
            && out.lines().any(|l| l == "module=0 launch=0 sync=0")
            && out.trim_end().ends_with("rc=0"),
        "{who}: {out}"
    );
    Ok(())
}

/// Tenant `t`'s process: its host PID (podman's State.Pid: the holder is
/// the container's init) and the PID it says it has in the container.
fn tenant_pids(t: usize) -> Result<(u32, u32), String> {
    let name = TENANTS[t].0;
    let (code, out) = podman(&["inspect", "--format", "{{.State.Pid}}", name])?;
    ensure!(code == 0, "inspect {name}: {out}");
    let host: u32 = out.trim().parse().map_err(|_| format!("{name}: {out}"))?;
    let log = crate::sys::read_file(&format!("/tmp/ctr-{name}/log"))?;
    let inner: u32 = log
        .split_whitespace()
        .find_map(|w| w.strip_prefix("pid=")?.parse().ok())
        .ok_or(format!("{name}: {log}"))?;
    Ok((host, inner))
}

/// Runs `cmd` (a shell line, NVIDIA's libraries on the path) in tenant
/// `t`'s container; returns its output.
fn in_tenant(t: usize, cmd: &str) -> Result<String, String> {
    let rel = userspace_release();
    let name = TENANTS[t].0;
    let log = format!("/tmp/ctr-{name}/trace");
    let _ = std::fs::remove_file(&log);
    let script = format!(
        "export LD_LIBRARY_PATH=/opt/nvidia-{rel}/lib; export PATH=/opt/nvidia-{rel}/bin:/usr/local/bin:$PATH; \
         NVTRACE_PARAMS=1 NVTRACE_RELEASE={rel} NVTRACE_LOG=/out/trace LD_PRELOAD=/usr/local/lib/nvtrace.so {cmd} 2>&1; echo rc=$?"
    );
    let (code, out) = podman(&["exec", name, "sh", "-c", &script])?;
    println!("# {name} $ {cmd}: {}", out.trim().replace('\n', " | "));
    // What vgpu refused them (nvtrace's lines with a status other than 0).
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    if t == 0 {
        let (host, inner) = tenant_pids(t)?;
        record(cmd, "vgpu", &text, &[host, inner])?;
    }
    for l in text.lines().filter(|l| {
        l.split_whitespace()
            .any(|t| (t.starts_with("status=") && t != "status=0x0") || t == "ret=-1")
    }) {
        let keep: Vec<&str> = l
            .split_whitespace()
            .filter(|t| {
                ["cmd=", "hClass=", "paramsSize=", "status=", "nr="]
                    .iter()
                    .any(|k| t.starts_with(k))
            })
            .collect();
        println!("#   refused in {name}: {}", keep.join(" "));
    }
    ensure!(code == 0, "podman exec: {code}: {out}");
    Ok(out)
}

/// The double (two GPUs of [`VRAM_MIB`]) claiming NVIDIA's userspace
/// release, vgpu, a vGPU per tenant on GPU 0, the CDI spec, and each
/// tenant's container with its process holding its memory.
fn containers_setup() -> Outcome {
    let rel = userspace_release();
    let idx = crate::sys::DOUBLE_RELEASES
        .iter()
        .position(|r| *r == rel)
        .ok_or("the double cannot claim NVIDIA's userspace release")?;
    for p in [
        format!("/opt/nvidia-{rel}/bin/nvidia-smi"),
        "/bin/nvmlprobe".into(),
    ] {
        ensure!(exists(&p), "{p} missing from the initramfs");
    }
    insmod_double(&format!(
        "gpus={} vram0_mib={VRAM_MIB} vram1_mib={VRAM_MIB} release={idx}",
        HOST_GPUS
    ))?;
    make_uvm_nodes()?;
    sh("modprobe vgpu")?;
    for (_, id, limit, _) in TENANTS {
        sh(&format!(
            "vgpuctl create --id {id} --gpu 0 --memory {limit}MiB"
        ))?;
    }
    sh("vgpuctl cdi --output /etc/cdi/vgpu.json")?;
    let opt = format!("/opt/nvidia-{rel}");
    let vols = [
        format!("{opt}:{opt}:ro"),
        "/lib/x86_64-linux-gnu:/lib/x86_64-linux-gnu:ro".to_string(),
        "/lib64:/lib64:ro".to_string(),
        "/bin/nvmlprobe:/usr/local/bin/nvmlprobe:ro".to_string(),
        "/bin/cuprobe:/usr/local/bin/cuprobe:ro".to_string(),
        "/bin/nvtrace.so:/usr/local/lib/nvtrace.so:ro".to_string(),
    ];
    let env = format!("vgpu_release={rel}");
    for (name, id, _, mine) in TENANTS {
        let dir = format!("/tmp/ctr-{name}");
        std::fs::create_dir_all(&dir).map_err(|e| format!("{dir}: {e}"))?;
        let _ = std::fs::remove_file(format!("{dir}/log"));
        let out_vol = format!("{dir}:/out");
        let dev = format!("vgpu.dev/gpu={id}");
        let script = format!("exec vgpu-selftest demo-hold --nvidia 0 {mine} 3600 > /out/log 2>&1");
        let mut args = vec!["run", "-d", "--name", name, "--device", &dev, "-e", &env];
        args.extend(["-v", &out_vol]);
        for v in &vols {
            args.extend(["-v", v.as_str()]);
        }
        args.extend(["--rootfs", ROOTFS, "sh", "-c", &script]);
        let (code, out) = podman(&args)?;
        ensure!(code == 0, "podman run {name}: {code}: {out}");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let log = std::fs::read_to_string(format!("{dir}/log")).unwrap_or_default();
            if log.contains("holding") {
                break;
            }
            ensure!(
                !log.contains("demo-hold:") || log.contains("holding"),
                "{name}: {log}"
            );
            ensure!(
                std::time::Instant::now() < deadline,
                "{name}: no report: {log:?}"
            );
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        ensure!(
            vgpu_attr(id, "memory_used")? >= mine << 20,
            "vgpu{id} charged less than its process holds"
        );
    }
    Ok(())
}

/// Removes the containers, then the modules, as the containers suite does.
fn containers_teardown() -> Outcome {
    crate::containers::teardown()
}

/// In each container, `--query-gpu` gives the vGPU's size as total,
/// sysfs `memory_used` as used and the difference as free (MiB); `-L`
/// lists one GPU, the container's.
fn containers_smi_show_their_vgpu() -> Outcome {
    for (t, (name, id, limit, _)) in TENANTS.iter().enumerate() {
        let out = in_tenant(
            t,
            "nvidia-smi --query-gpu=name,uuid,memory.total,memory.used,memory.free --format=csv",
        )?;
        // Bytes: beside the tenant's memory, its channel's instance block.
        let used = vgpu_attr(*id, "memory_used")?;
        ensure!(
            vgpu_attr(*id, "memory_limit")? >> 20 == *limit,
            "vgpu{id}: memory_limit"
        );
        let want = format!(
            "{NAME}, {UUID}, {limit} MiB, {} MiB, {} MiB",
            smi_mib(used),
            smi_mib((limit << 20) - used)
        );
        let lines: Vec<&str> = out.lines().collect();
        ensure!(
            lines.len() >= 2
                && lines[0]
                    == "name, uuid, memory.total [MiB], memory.used [MiB], memory.free [MiB]"
                && lines[1] == want
                && lines[2] == "rc=0",
            "{name}: want {want:?}: {out}"
        );
        let out = in_tenant(t, "nvidia-smi -L")?;
        let want = format!("GPU 0: {NAME} (UUID: {UUID})\nrc=0");
        ensure!(out.trim() == want, "{name}: want {want:?}: {out}");
    }
    Ok(())
}

/// In each container, the process list is its own process, by the PID it
/// has there, with the memory its vGPU charged it.
fn containers_smi_show_their_process() -> Outcome {
    for (t, (name, id, _, _)) in TENANTS.iter().enumerate() {
        let (_, inner) = tenant_pids(t)?;
        let used = vgpu_attr(*id, "memory_used")? >> 20;
        let out = in_tenant(
            t,
            "nvidia-smi --query-compute-apps=pid,used_memory --format=csv",
        )?;
        let want = format!("pid, used_gpu_memory [MiB]\n{inner}, {used} MiB\nrc=0");
        ensure!(out.trim() == want, "{name}: want {want:?}: {out}");
    }
    Ok(())
}

/// In each container, NVML (nvmlprobe) sees one GPU: the vGPU's size as
/// total, `memory_used` as used (v1 and v2), nothing reserved, its own
/// process with its memory, and utilisation N/A.
fn containers_nvml_sees_the_vgpu() -> Outcome {
    for (t, (name, id, limit, _)) in TENANTS.iter().enumerate() {
        let (_, inner) = tenant_pids(t)?;
        let out = in_tenant(t, "nvmlprobe")?;
        let used = vgpu_attr(*id, "memory_used")?;
        let total = limit << 20;
        ensure!(
            out.contains("nvmlDeviceGetCount_v2=0 count=1"),
            "{name}: count: {out}"
        );
        for line in ["gpu=0 memory=", "gpu=0 memory_v2="] {
            let num = |k: &str| field(&out, line, k).and_then(|v| v.parse::<u64>().ok());
            ensure!(
                num("total") == Some(total)
                    && num("used") == Some(used)
                    && num("free") == Some(total - used),
                "{name}: {line} want total {total} used {used}: {out}"
            );
        }
        ensure!(
            field(&out, "gpu=0 memory_v2=", "reserved") == Some("0"),
            "{name}: reserved: {out}"
        );
        ensure!(
            out.contains("gpu=0 processes=0 count=1")
                && out.contains(&format!("gpu=0 process pid={inner} used={used}")),
            "{name}: processes: {out}"
        );
        ensure!(
            field(&out, "gpu=0 utilization=", "utilization") != Some("0"),
            "{name}: utilisation served, not N/A: {out}"
        );
    }
    Ok(())
}

/// `nvidia-smi -q` in each container shows its own size, process and
/// memory, and nothing of the other tenant's (its host or container PID's
/// memory, its size) nor the GPU's size.
fn containers_query_all_hides_the_other() -> Outcome {
    for (t, (name, id, limit, _)) in TENANTS.iter().enumerate() {
        let o = 1 - t;
        let (other_host, _) = tenant_pids(o)?;
        let (_, _, other_limit, other_mine) = TENANTS[o];
        let (my_host, inner) = tenant_pids(t)?;
        let used_bytes = vgpu_attr(*id, "memory_used")?;
        let used = used_bytes >> 20;
        let out = in_tenant(t, "nvidia-smi -q")?;
        ensure!(
            out.contains("Attached GPUs                             : 1"),
            "{name}: {out}"
        );
        // The indentation differs by section: compare words.
        let words: Vec<&str> = out.split_whitespace().collect();
        let text = words.join(" ");
        for want in [
            format!("FB Memory Usage Total : {limit} MiB Reserved : 0 MiB"),
            format!(
                "Used : {} MiB Free : {} MiB",
                smi_mib(used_bytes),
                smi_mib((limit << 20) - used_bytes)
            ),
            format!("Process ID : {inner} Type : C"),
            format!("Used GPU Memory : {used} MiB"),
        ] {
            ensure!(text.contains(&want), "{name}: want {want:?}: {out}");
        }
        // The PIDs it names (each "Process ID : N"); not every number in
        // the report, which a host PID can equal by chance (a host PID 196
        // once matched "Used : 196 MiB").
        let named: Vec<&str> = words
            .windows(4)
            .filter(|w| w[0] == "Process" && w[1] == "ID" && w[2] == ":")
            .map(|w| w[3])
            .collect();
        ensure!(!named.is_empty(), "{name}: no process in its view: {out}");
        for pid in [other_host, my_host] {
            ensure!(
                pid == inner || !named.contains(&pid.to_string().as_str()),
                "{name}: a host PID {pid} in its view: {out}"
            );
        }
        for mib in [other_limit, other_mine, VRAM_MIB] {
            ensure!(
                !out.contains(&format!(": {mib} MiB")),
                "{name}: {mib} MiB (not its own) in its view: {out}"
            );
        }
        ensure!(out.contains("rc=0"), "{name}: {out}");
    }
    Ok(())
}

/// In each container, libcuda (`cuprobe`) through vgpu: `cuInit`
/// succeeds and the device is counted, got and named as directly, its
/// memory the vGPU's `memory_limit` (vgpu rewrites FB_GET_INFO); every control of [`CUDA_SERVED`] it
/// asks is answered with NV_OK (vgpu's table forwards each) but the two
/// vgpu refuses ([`CUDA_VGPU_DENIED`]), and nothing else is refused
/// beyond [`CUDA_REFUSED`] and the NV_CONFIDENTIAL_COMPUTE class.
/// `cuCtxCreate` goes past the compute-mode reservation (the vGPU's own)
/// and makes the same objects as directly, its OS events through the
/// vGPU's node included, and succeeds: `cuMemGetInfo` gives the vGPU's
/// `memory_limit` as total and less as free.
fn containers_cuda_device_setup() -> Outcome {
    for (t, (name, _, limit, _)) in TENANTS.iter().enumerate() {
        let out = in_tenant(t, "cuprobe")?;
        let bytes = (limit << 20).to_string();
        cuprobe_reached(&out, &format!("{name}: cuprobe"), "0", &bytes)?;
        context_memory(&out, &format!("{name}: cuprobe"), &bytes)?;
        let log = std::fs::read_to_string(format!("/tmp/ctr-{name}/trace"))
            .map_err(|e| format!("{name}: trace: {e}"))?;
        check_cuda_log(name, &log, CUDA_VGPU_DENIED)?;
    }
    Ok(())
}

/// In each container, libcuda's `cuMemAlloc_v2` in 64 MiB steps
/// (`cuprobe --fill`) stops with CUDA_ERROR_OUT_OF_MEMORY within one step
/// of the free memory `cuMemGetInfo_v2` reported, that free memory being
/// the vGPU's `memory_limit` less what the container's other process
/// holds and the context's own; every step is freed, and once cuprobe is
/// gone `memory_used` is what it was before.
fn containers_cuda_stop_at_their_ceilings() -> Outcome {
    let rel = userspace_release();
    for (name, id, limit, _) in TENANTS.iter() {
        let before = vgpu_attr(*id, "memory_used")?;
        let script = format!(
            "export LD_LIBRARY_PATH=/opt/nvidia-{rel}/lib; export PATH=/opt/nvidia-{rel}/bin:/usr/local/bin:$PATH; \
             cuprobe --fill 2>&1; echo rc=$?"
        );
        let (_, out) = podman(&["exec", name, "sh", "-c", &script])?;
        println!(
            "# {name} $ cuprobe --fill: {}",
            out.trim().replace('\n', " | ")
        );
        let (free, bytes) = filled(&out, name)?;
        ensure!(
            free < (limit << 20) - before,
            "{name}: {free} free of {limit} MiB with {before} used: the context took nothing"
        );
        println!(
            "# {name}: memory_limit {limit} MiB, {before} bytes used before, {free} free in the context, {bytes} allocated"
        );
        let after = vgpu_attr(*id, "memory_used")?;
        ensure!(
            after == before,
            "{name}: memory_used {after} after cuprobe, {before} before"
        );
    }
    Ok(())
}

/// In each container, libcuda's managed memory (`cuprobe --managed`:
/// `cuMemAllocManaged` in 64 MiB steps, each prefetched to the GPU by
/// `cuMemPrefetchAsync` and `cuCtxSynchronize`) is on
/// (CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY 1) and held to the vGPU's ceiling:
/// every step that fits the free memory `cuMemGetInfo_v2` reported is
/// allocated and prefetched, and the next allocation is refused. vgpu
/// charges a managed mapping whole at its mmap (docs/design-notes.md,
/// "Managed memory under the ceiling"), which it refuses past the ceiling;
/// libcuda 550.163.01 reports that refusal as CUDA_ERROR_UNKNOWN (999).
/// Once cuprobe is gone `memory_used` and `memory_managed` are what they
/// were before.
fn containers_cuda_managed_stops_at_their_ceilings() -> Outcome {
    const STEP: u64 = 64 << 20;
    for (t, (name, id, limit, _)) in TENANTS.iter().enumerate() {
        let before = vgpu_attr(*id, "memory_used")?;
        let managed_before = vgpu_attr(*id, "memory_managed")?;
        let out = in_tenant(t, "cuprobe --managed")?;
        let num = |line: &str, k: &str| field(&out, line, k).and_then(|v| v.parse::<u64>().ok());
        let free = num("cuMemGetInfo_v2=", "free").ok_or(format!("{name}: no free: {out}"))?;
        let steps = num("managed=", "steps").ok_or(format!("{name}: no steps: {out}"))?;
        ensure!(
            cu_status(&out, "attributes") == Some("0")
                && field(&out, "attributes=", "managed") == Some("1"),
            "{name}: want managed memory on: {out}"
        );
        ensure!(
            cu_status(&out, "managed") == Some("999")
                && field(&out, "managed=", "prefetch") == Some("0")
                && steps * STEP <= free
                && free < (steps + 1) * STEP,
            "{name}: want {steps} steps allocated and prefetched, the next refused (999), \
             with {free} free: {out}"
        );
        println!(
            "# {name}: memory_limit {limit} MiB, {before} bytes used before, {free} free in the context, \
             {} MiB managed allocated and prefetched, the next 64 MiB refused",
            steps * 64
        );
        let (after, managed_after) = (
            vgpu_attr(*id, "memory_used")?,
            vgpu_attr(*id, "memory_managed")?,
        );
        ensure!(
            after == before && managed_after == managed_before,
            "{name}: memory_used {after} and memory_managed {managed_after} after cuprobe, \
             {before} and {managed_before} before"
        );
    }
    Ok(())
}

/// On the host, nvidia-smi (the driver's, no vgpu) shows both GPUs whole
/// and both tenants' processes by host PID with what they hold.
fn host_smi_sees_every_process() -> Outcome {
    let rel = userspace_release();
    let (out, _) = traced(&format!("/bin/nvidia-smi-{rel} -L"))?;
    ensure!(
        out.lines().filter(|l| l.starts_with("GPU ")).count() == HOST_GPUS,
        "{out}"
    );
    let (out, _) = traced(&format!(
        "/bin/nvidia-smi-{rel} -i 0 --query-gpu=memory.total --format=csv,noheader,nounits"
    ))?;
    ensure!(
        out.lines().next() == Some(VRAM_MIB.to_string().as_str()),
        "{out}"
    );
    let (out, _) = traced(&format!(
        "/bin/nvidia-smi-{rel} -i 0 --query-compute-apps=pid,used_memory --format=csv,noheader,nounits"
    ))?;
    for (t, (_, _, _, mine)) in TENANTS.iter().enumerate() {
        let (host, _) = tenant_pids(t)?;
        let want = format!("{host}, {mine}");
        ensure!(out.lines().any(|l| l == want), "want {want:?}: {out}");
    }
    Ok(())
}
