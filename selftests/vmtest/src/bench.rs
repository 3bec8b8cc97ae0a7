// SPDX-License-Identifier: GPL-2.0

//! Benchmarks (run only when named: `vgpu-selftest bench`, via `make bench`).
//!
//! Per-ioctl cost through vgpu against the cost directly to the driver
//! double, as ratios measured in one VM run (software emulation makes
//! absolute times meaningless): an FB info control, and a VRAM alloc plus
//! free pair; then the same ratio with 128 vGPUs configured. Rounds
//! alternate direct and proxied runs and the median of the rounds is kept.

use crate::ensure;
use crate::session::Session;
use crate::sys::{join_cgroup, sh, write_file};
use crate::tap::{Outcome, Test};
use nvclient::abi::fb_info;
use std::time::Instant;

/// Tests of this suite.
pub const TESTS: &[Test] = &[Test {
    name: "ioctl_cost",
    run: ioctl_cost,
}];

fn session(ctl: &str, gpu: &str) -> Result<Session, String> {
    Session::open(ctl, gpu)
}

/// ns per FB_GET_INFO_V2 over `n` calls.
fn fb_cost(s: &Session, n: u32) -> Result<f64, String> {
    let t = Instant::now();
    for _ in 0..n {
        s.ctl
            .fb_get_info_v2(
                s.client,
                s.subdevice,
                &[fb_info::HEAP_SIZE, fb_info::HEAP_FREE],
            )
            .map_err(|e| format!("fb info: {e:?}"))?;
    }
    Ok(t.elapsed().as_nanos() as f64 / f64::from(n))
}

/// ns per VRAM alloc + free pair over `n` pairs.
fn mem_cost(s: &Session, n: u32) -> Result<f64, String> {
    let t = Instant::now();
    for _ in 0..n {
        let m = s
            .ctl
            .alloc_vram(s.client, s.device, 0, 1 << 20)
            .map_err(|e| format!("alloc: {e:?}"))?;
        s.ctl
            .free(s.client, s.device, m.handle)
            .map_err(|e| format!("free: {e:?}"))?;
    }
    Ok(t.elapsed().as_nanos() as f64 / f64::from(n))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Median over `rounds` of (direct, proxied) costs of `f`.
fn ratio(
    direct: &Session,
    proxied: &Session,
    rounds: usize,
    f: impl Fn(&Session) -> Result<f64, String>,
) -> Result<(f64, f64, f64), String> {
    let (mut d, mut p) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        d.push(f(direct)?);
        p.push(f(proxied)?);
    }
    let (d, p) = (median(d), median(p));
    Ok((d, p, p / d))
}

fn ioctl_cost() -> Outcome {
    sh("modprobe nvidia gpus=1 vram0_mib=8192")?;
    sh("modprobe vgpu")?;
    std::fs::create_dir_all("/sys/fs/cgroup/bench").map_err(|e| format!("mkdir: {e}"))?;
    let cfg = |id: u32, cg: &str| -> Result<(), String> {
        write_file("/sys/class/vgpu/create", &id.to_string())
            .map_err(|e| format!("create {id}: {e}"))?;
        write_file(&format!("/sys/class/vgpu/vgpu{id}/gpu"), "0")
            .map_err(|e| format!("gpu: {e}"))?;
        write_file(&format!("/sys/class/vgpu/vgpu{id}/cgroup"), cg)
            .map_err(|e| format!("cgroup: {e}"))
    };
    cfg(0, "/bench")?;
    join_cgroup("/bench").map_err(|e| format!("join: {e}"))?;
    let direct = session("/dev/nvidiactl", "/dev/nvidia0")?;
    let proxied = session("/dev/vgpuctl", "/dev/vgpu0")?;

    let rounds = 11;
    let (fd, fp, fr) = ratio(&direct, &proxied, rounds, |s| fb_cost(s, 2000))?;
    let (md, mp, mr) = ratio(&direct, &proxied, rounds, |s| mem_cost(s, 2000))?;
    println!("# bench: fb_info: direct {fd:.0} ns, through vgpu {fp:.0} ns, ratio {fr:.2} (target <= 1.5)");
    println!("# bench: alloc+free: direct {md:.0} ns, through vgpu {mp:.0} ns, ratio {mr:.2} (target <= 1.5)");

    // 127 more vGPUs, bound elsewhere, on the same GPU.
    for id in 1..128 {
        let cg = format!("/other{id}");
        std::fs::create_dir_all(format!("/sys/fs/cgroup{cg}"))
            .map_err(|e| format!("mkdir: {e}"))?;
        cfg(id, &cg)?;
    }
    let proxied128 = session("/dev/vgpuctl", "/dev/vgpu0")?;
    let (_, _, fr128) = ratio(&direct, &proxied128, rounds, |s| fb_cost(s, 2000))?;
    let (_, _, mr128) = ratio(&direct, &proxied128, rounds, |s| mem_cost(s, 2000))?;
    println!(
        "# bench: fb_info ratio with 128 vGPUs {fr128:.2}, vs 1 vGPU: {:.2} (target <= 1.1)",
        fr128 / fr
    );
    println!(
        "# bench: alloc+free ratio with 128 vGPUs {mr128:.2}, vs 1 vGPU: {:.2} (target <= 1.1)",
        mr128 / mr
    );
    drop((direct, proxied, proxied128));
    join_cgroup("/").map_err(|e| format!("leave: {e}"))?;
    for id in 0..128 {
        write_file("/sys/class/vgpu/remove", &id.to_string())
            .map_err(|e| format!("remove {id}: {e}"))?;
    }
    sh("rmmod vgpu")?;
    sh("rmmod nvidia")?;
    ensure!(fr > 0.0 && mr > 0.0, "no measurement");
    Ok(())
}
