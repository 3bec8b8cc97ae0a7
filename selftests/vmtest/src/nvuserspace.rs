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
    let r = make_uvm_nodes().map(drop).and_then(|()| body(&rel));
    remove_uvm_nodes();
    let unload = sh("rmmod nvidia").map(drop);
    r.and(unload)
}

/// Runs `cmd` (a program of `/bin`, with NVIDIA's libraries) under
/// nvtrace; returns its output and the calls RM refused, as nvtrace logs
/// them (a status other than 0, or an ioctl that failed).
fn traced(cmd: &str) -> Result<(String, Vec<String>), String> {
    let log = "/tmp/nvtrace-smi";
    let _ = std::fs::remove_file(log);
    let out = sh(&format!(
        "NVTRACE_LOG={log} LD_PRELOAD=/bin/nvtrace.so {cmd} 2>&1; echo rc=$?"
    ))?;
    let text = std::fs::read_to_string(log).unwrap_or_default();
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
fn hold_memory() -> Result<Work, String> {
    let w = Work::open("/dev/nvidiactl", "/dev/nvidia0", false)?;
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
        .alloc_vram(w.s.client, w.s.device, 0, MINE_MIB << 20)
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
            used2 == MINE_MIB << 20 && used2 + free2 == HEAP_MIB << 20,
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
            words.contains(&format!("{MINE_MIB}MiB / {VRAM_MIB}MiB")),
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
            ("Used", MINE_MIB),
            ("Free", HEAP_MIB - MINE_MIB),
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
