// SPDX-License-Identifier: GPL-2.0

//! `vgpuctl` against the real module: what it creates, sets, shows and
//! removes is what sysfs holds, refusals come back as clear errors with the
//! documented exit codes, and a failed create leaves nothing behind.

use crate::ensure;
use crate::session::Session;
use crate::sys::{
    become_nobody, exists, in_child, join_cgroup, make_uvm_nodes, read_file, remove_uvm_nodes, run,
    sh, Holder,
};
use crate::tap::{Outcome, Test};
use crate::tests;
use nvclient::uvm::UvmContext;
use std::process::Command;

/// Tests of this suite, in order.
pub const TESTS: &[Test] = tests![
    create_set_show_remove,
    refusals_and_exit_codes,
    exporter_once_reports_the_vgpus = exporter_once,
];

/// Runs vgpuctl; returns (exit code, stdout + stderr).
fn vgpuctl(args: &[&str]) -> Result<(i32, String), String> {
    run(Command::new("/bin/vgpuctl").args(args))
}

fn attr(id: u32, f: &str) -> Result<String, String> {
    read_file(&format!("/sys/class/vgpu/vgpu{id}/{f}"))
}

fn create_set_show_remove() -> Outcome {
    sh("modprobe nvidia gpus=2 vram0_mib=8192 vram1_mib=4096")?;
    make_uvm_nodes()?;
    sh("modprobe vgpu")?;
    std::fs::create_dir_all("/sys/fs/cgroup/pods/a").map_err(|e| format!("mkdir: {e}"))?;
    let (code, out) = vgpuctl(&[
        "create", "--id", "3", "--cgroup", "/pods/a", "--memory", "1.5GiB", "--gpu", "1",
    ])?;
    ensure!(code == 0, "create: {code}: {out}");
    ensure!(attr(3, "gpu")? == "1", "gpu {}", attr(3, "gpu")?);
    ensure!(
        attr(3, "memory_limit")? == (3u64 << 29).to_string(),
        "limit {}",
        attr(3, "memory_limit")?
    );
    ensure!(
        attr(3, "cgroup")? == "/pods/a",
        "cgroup {}",
        attr(3, "cgroup")?
    );
    let (code, out) = vgpuctl(&["set", "3", "--memory", "512MiB"])?;
    ensure!(code == 0, "set: {code}: {out}");
    // Compute: the share is the vGPU's, policy and period its GPU's.
    let (code, out) = vgpuctl(&[
        "set",
        "3",
        "--compute",
        "30%",
        "--compute-policy",
        "work-conserving",
        "--period-us",
        "20000",
    ])?;
    ensure!(code == 0, "set compute: {code}: {out}");
    ensure!(
        attr(3, "compute_share")? == "30",
        "share {}",
        attr(3, "compute_share")?
    );
    let gpu1 = |f: &str| read_file(&format!("/sys/class/vgpu/gpu1/{f}"));
    ensure!(
        gpu1("compute_policy")? == "work-conserving" && gpu1("compute_period_us")? == "20000",
        "gpu1: {} {}",
        gpu1("compute_policy")?,
        gpu1("compute_period_us")?
    );
    let (code, out) = vgpuctl(&["set", "3", "--compute", "101%"])?;
    ensure!(code == 2, "share over 100%: exit {code}: {out}");
    ensure!(
        attr(3, "memory_limit")? == (512u64 << 20).to_string(),
        "limit after set"
    );
    let (code, out) = vgpuctl(&["--json", "show", "3"])?;
    ensure!(
        code == 0 && out.contains("536870912") && out.contains("/pods/a"),
        "show --json: {out}"
    );
    let (code, out) = vgpuctl(&["list"])?;
    ensure!(code == 0 && out.contains("/pods/a"), "list: {out}");
    // An empty path unbinds (a write of no bytes would not reach the
    // module: vgpuctl writes the empty line).
    let (code, out) = vgpuctl(&["set", "3", "--cgroup", ""])?;
    ensure!(code == 0, "unbind: {code}: {out}");
    ensure!(
        attr(3, "cgroup")?.is_empty(),
        "still bound to {:?}",
        attr(3, "cgroup")?
    );
    let (code, out) = vgpuctl(&["remove", "3"])?;
    ensure!(code == 0, "remove: {code}: {out}");
    ensure!(!exists("/dev/vgpu3"), "/dev/vgpu3 left after remove");
    Ok(())
}

fn refusals_and_exit_codes() -> Outcome {
    // A GPU the module did not find: the create is rolled back.
    let (code, out) = vgpuctl(&[
        "create", "--id", "4", "--cgroup", "/pods/a", "--memory", "1GiB", "--gpu", "7",
    ])?;
    // The module refuses the GPU with ENODEV: vgpuctl's "kernel refused"
    // status (1), not a usage error.
    ensure!(code == 1, "create on a missing GPU: exit {code}: {out}");
    ensure!(
        !exists("/sys/class/vgpu/vgpu4"),
        "half-configured vGPU 4 left behind: {out}"
    );
    let (code, out) = vgpuctl(&["set", "9", "--memory", "1GiB"])?;
    ensure!(code == 5, "unknown vGPU: exit {code}: {out}");
    let (code, out) = vgpuctl(&["create", "--memory", "12 bananas", "--gpu", "0"])?;
    ensure!(code == 2, "bad value: exit {code}: {out}");
    let code = in_child(|| {
        if become_nobody().is_err() {
            return 100;
        }
        match vgpuctl(&["create", "--gpu", "0", "--memory", "1GiB"]) {
            Ok((c, _)) => c,
            Err(_) => 101,
        }
    })?;
    ensure!(code == 4, "not root: exit {code}");
    Ok(())
}

fn exporter_once() -> Outcome {
    let (code, out) = vgpuctl(&[
        "create", "--id", "5", "--cgroup", "/pods/a", "--memory", "2GiB", "--gpu", "0",
    ])?;
    ensure!(code == 0, "create: {out}");
    // A process of the container holds 4 MiB of managed memory.
    let holder = Holder::spawn(|| {
        if join_cgroup("/pods/a").is_err() {
            return false;
        }
        let Ok(s) = Session::vgpu(5) else {
            return false;
        };
        let Ok(u) = UvmContext::open("/dev/vgpu-uvm", &s.ctl, s.client, s.device, s.subdevice)
        else {
            return false;
        };
        let Ok(m) = u.uvm.map_managed(4 << 20) else {
            return false;
        };
        std::mem::forget((s, u, m));
        true
    })?;
    ensure!(holder.ready, "the container's managed mapping failed");
    let (code, out) = vgpuctl(&["exporter", "--once"])?;
    ensure!(code == 0, "exporter --once: {code}: {out}");
    ensure!(
        out.lines()
            .any(|l| l.starts_with("vgpu_memory_limit_bytes{")
                && l.contains("vgpu=\"5\"")
                && l.ends_with(" 2147483648")),
        "no limit series for vgpu 5:\n{out}"
    );
    ensure!(out.contains("vgpu_up 1"), "vgpu_up missing:\n{out}");
    // The compute and refusal families, from the module's own files.
    // Used: the managed memory and the page levels of the VA space the
    // UVM context made.
    let used = format!(" {}", (4 << 20) + nvclient::abi::VASPACE_PAGE_LEVELS);
    for (family, value) in [
        ("vgpu_compute_share_percent{", " 100"),
        ("vgpu_compute_tsgs{", " 0"),
        ("vgpu_alloc_refused_total{", " 0"),
        ("vgpu_granted_seconds_total{", ""),
        ("vgpu_memory_managed_bytes{", " 4194304"),
        ("vgpu_memory_used_bytes{", used.as_str()),
    ] {
        ensure!(
            out.lines()
                .any(|l| l.starts_with(family) && l.contains("vgpu=\"5\"") && l.ends_with(value)),
            "no {family}..}}{value} series for vgpu 5:\n{out}"
        );
    }
    ensure!(
        out.contains("vgpu_gpu_compute_policy{gpu=\"0\",policy=\"fixed\"} 1"),
        "no policy series for GPU 0:\n{out}"
    );
    let (code, out) = vgpuctl(&["show", "5"])?;
    ensure!(
        code == 0
            && out
                .lines()
                .any(|l| l.starts_with("memory_managed") && l.ends_with("4 MiB")),
        "show 5 without its managed memory: {out}"
    );
    drop(holder);
    let (code, _) = vgpuctl(&["remove", "5"])?;
    ensure!(code == 0, "remove 5");
    sh("rmmod vgpu")?;
    remove_uvm_nodes();
    sh("rmmod nvidia")?;
    let (code, out) = vgpuctl(&["list"])?;
    ensure!(code == 3, "module not loaded: exit {code}: {out}");
    Ok(())
}
