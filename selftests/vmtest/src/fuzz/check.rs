// SPDX-License-Identifier: GPL-2.0

//! The invariants the fuzzer checks between its steps and at the end.
//!
//! Checked with every tenant's threads stopped (no call in flight):
//! - each vGPU's `memory_used` is at most its `memory_limit`;
//! - on each GPU, the VRAM vgpu charged its vGPUs (`memory_used` less
//!   `memory_managed`) is what the double holds for RM objects (`used`
//!   less the managed residency in it), plus the page-table bound vgpu
//!   charges each dynamic-parallelism region the double has mapped there
//!   (those take no VRAM in the double: `selftests/nvidia/uvm/external.rs`);
//! - on each GPU, the TSGs vgpu's scheduler tracks (`compute_tsgs`, summed)
//!   are the TSGs the double's engine has;
//! - no process of a tenant has a real NVIDIA file in its fd table.
//!
//! Once every tenant process has gone: no charge, no TSG, nothing held
//! in the double (checked with a short wait, as the double returns
//! managed residency after the files close).

use super::ops::Tenant;
use crate::ensure;
use crate::sys::read_file;
use crate::tap::Outcome;
use nvclient::uvm::DP_REGION_PAGE_TABLES;
use std::time::{Duration, Instant};

/// One GPU of the double (debugfs `nvidia-double/gpus`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GpuView {
    /// VRAM taken from the heap: RM objects and managed residency.
    pub used: u64,
    /// Managed residency in it.
    pub managed: u64,
    /// Dynamic-parallelism regions mapped on the GPU.
    pub dp: u64,
    /// TSGs of its engine.
    pub tsgs: u64,
}

const VIEW: &str = "/sys/kernel/debug/nvidia-double/gpus";

/// The double's view of GPU `g`.
pub fn gpu(g: u32) -> Result<GpuView, String> {
    let text = read_file(VIEW)?;
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("gpu {g} ")))
        .ok_or(format!("no gpu {g} in {VIEW}: {text}"))?;
    let w: Vec<&str> = line.split_whitespace().collect();
    let field = |name: &str| -> Result<u64, String> {
        let i = w
            .iter()
            .position(|x| *x == name)
            .ok_or(format!("no {name} in {line:?}"))?;
        w.get(i + 1)
            .and_then(|v| v.parse().ok())
            .ok_or(format!("bad {name} in {line:?}"))
    };
    Ok(GpuView {
        used: field("used")?,
        managed: field("managed")?,
        dp: field("dp")?,
        tsgs: field("tsgs")?,
    })
}

/// Where vgpu's records and the double's objects disagree on GPU `g`:
/// each object whose bytes differ, from debugfs `nvidia-double/vram` and
/// `vgpu/records` (a line each, `client/handle: vgpu B, double B`).
fn explain(g: u32) -> String {
    use std::collections::BTreeMap;
    let Ok(view) = read_file("/sys/kernel/debug/nvidia-double/vram") else {
        return String::new();
    };
    let hex = |s: &str| u32::from_str_radix(s.trim_start_matches("0x"), 16).unwrap_or(0);
    let mut double: BTreeMap<(u32, u32), (u64, String)> = BTreeMap::new();
    let mut clients = Vec::new();
    let mut loose = Vec::new();
    for l in view.lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        match w.as_slice() {
            ["client", c] => clients.push(hex(c)),
            ["client", c, "handle", h, "parent", _, "kind", k, "gpu", gg, "bytes", b, "refs", _]
                if gg.parse() == Ok(g) =>
            {
                let e = double.entry((hex(c), hex(h))).or_default();
                e.0 += b.parse::<u64>().unwrap_or(0);
                e.1 = k.to_string();
            }
            ["mem", ..] => loose.push(l.to_string()),
            _ => {}
        }
    }
    let mut vgpu: BTreeMap<(u32, u32), (u64, String)> = BTreeMap::new();
    for &c in &clients {
        let Some(text) = records(c) else {
            continue;
        };
        for l in text.lines().skip(1) {
            let w: Vec<&str> = l.split_whitespace().collect();
            let (Some(h), Some(gg), Some(k)) = (w.first(), w.get(4), w.get(6)) else {
                continue;
            };
            if gg.parse() != Ok(g) {
                continue;
            }
            let num = |name: &str| {
                w.iter()
                    .position(|x| *x == name)
                    .and_then(|i| w.get(i + 1))
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0)
            };
            let bytes = num("charge") + num("gr");
            if bytes > 0 {
                vgpu.insert((c, hex(h)), (bytes, k.to_string()));
            }
        }
    }
    let mut out = String::new();
    let keys: std::collections::BTreeSet<_> = double.keys().chain(vgpu.keys()).copied().collect();
    for k in keys {
        let (v, d) = (vgpu.get(&k), double.get(&k));
        if v.map(|x| x.0) != d.map(|x| x.0) {
            out += &format!(
                "\n  {:#x}/{:#x}: vgpu {} ({}), double {} ({})",
                k.0,
                k.1,
                v.map_or(0, |x| x.0),
                v.map_or("-", |x| x.1.as_str()),
                d.map_or(0, |x| x.0),
                d.map_or("-", |x| x.1.as_str())
            );
        }
    }
    for l in loose {
        out += &format!("\n  unnamed: {l}");
    }
    out
}

/// What vgpu records of client `c` (debugfs `vgpu/records`): a line
/// `vgpus N...` (those of the `/dev/vgpuctl` file that verified it), then
/// its objects; `None` where no file did. The file names its client by a
/// write before the read: the pair holds a lock on a file of `/tmp`, which
/// every fuzz process takes for it.
pub fn records(c: u32) -> Option<String> {
    const PATH: &str = "/sys/kernel/debug/vgpu/records";
    let lock = std::fs::File::create("/tmp/vgpu-records.lock").ok()?;
    // SAFETY: flock on an fd we own; released when `lock` closes.
    if unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX) } != 0 {
        return None;
    }
    crate::sys::write_file(PATH, &format!("{c:#x}")).ok()?;
    let text = read_file(PATH).ok()?;
    text.starts_with("vgpus").then_some(text)
}

/// The vGPUs of the `/dev/vgpuctl` file that verified client `c`, if one
/// did (see [`records`]).
pub fn client_vgpus(c: u32) -> Option<Vec<u32>> {
    let text = records(c)?;
    let first = text.lines().next()?;
    Some(
        first
            .split_whitespace()
            .skip(1)
            .filter_map(|v| v.parse().ok())
            .collect(),
    )
}

/// vGPU `v`'s sysfs number `name`.
pub fn attr(v: u32, name: &str) -> Result<u64, String> {
    let s = read_file(&format!("/sys/class/vgpu/vgpu{v}/{name}"))?;
    s.trim()
        .parse()
        .map_err(|_| format!("vgpu{v}/{name}: {s:?}"))
}

/// Every invariant, with the tenants' processes `pids` stopped.
pub fn live(tenants: &[Tenant], pids: &[i32]) -> Outcome {
    let mut errs = Vec::new();
    let mut gpus: Vec<u32> = tenants.iter().map(|t| t.gpu).collect();
    gpus.sort_unstable();
    gpus.dedup();
    for &g in &gpus {
        let d = gpu(g)?;
        let (mut vram, mut tsgs) = (0u64, 0u64);
        for t in tenants.iter().filter(|t| t.gpu == g) {
            let (used, managed) = (
                attr(t.vgpu, "memory_used")?,
                attr(t.vgpu, "memory_managed")?,
            );
            if used > t.limit {
                errs.push(format!(
                    "vgpu{}: memory_used {used} over memory_limit {}",
                    t.vgpu, t.limit
                ));
            }
            vram += used.saturating_sub(managed);
            tsgs += attr(t.vgpu, "compute_tsgs")?;
        }
        let held = d.used - d.managed + d.dp * DP_REGION_PAGE_TABLES;
        if vram != held {
            errs.push(format!(
                "GPU {g}: vgpu charged {vram} bytes of VRAM, the double holds {} for RM objects and has {} DP regions ({held} in all){}",
                d.used - d.managed,
                d.dp,
                explain(g)
            ));
        }
        if tsgs != d.tsgs {
            errs.push(format!(
                "GPU {g}: vgpu's scheduler tracks {tsgs} TSGs, the double's engine has {}",
                d.tsgs
            ));
        }
    }
    for &pid in pids {
        if let Err(e) = no_real_files(pid) {
            errs.push(e);
        }
    }
    ensure!(errs.is_empty(), "{}", errs.join("\n"));
    Ok(())
}

/// No fd of process `pid` is a real NVIDIA node. A tenant opens NVIDIA's
/// own node names too (issue 33: its opens of them are vgpu's), so a file
/// of `/dev/nvidiactl` or `/dev/nvidiaK` is checked by what answers it,
/// through a duplicate of it ([`vgpus_file`]); any other NVIDIA node
/// fails.
pub fn no_real_files(pid: i32) -> Outcome {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Ok(());
    };
    for e in dir.flatten() {
        if let Ok(t) = std::fs::read_link(e.path()) {
            let t = t.to_string_lossy();
            if !t.starts_with("/dev/nvidia") {
                continue;
            }
            let fd: i32 = e.file_name().to_string_lossy().parse().unwrap_or(-1);
            let ctl = t == "/dev/nvidiactl";
            let gpu = t
                .strip_prefix("/dev/nvidia")
                .is_some_and(|k| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()));
            ensure!(
                (ctl || gpu) && vgpus_file(pid, fd, ctl)?,
                "process {pid}: fd {fd} is the real {t}"
            );
        }
    }
    Ok(())
}

/// Whether fd `fd` of process `pid` (a ctl file if `ctl`, else a GPU
/// node's) is vgpu's proxy file, asked of a duplicate of the file with a
/// call each side answers differently before doing anything (so fault
/// injection cannot blur it): REGISTER_FD of fd -1 on a ctl file, which
/// vgpu refuses there with EPERM and the driver with EINVAL (no such fd);
/// RM_FREE of nothing on a GPU node, which vgpu refuses there with EPERM
/// and the driver with EINVAL (`NV_CTL_DEVICE_ONLY`, `escape.c:427` at
/// 550.163.01; the double answers a status). (RM_ALLOC no longer tells
/// them apart: vgpu admits its event classes on GPU nodes and refuses the
/// rest with the driver's EINVAL.) `Ok(true)` also if the fd is gone
/// meanwhile.
fn vgpus_file(pid: i32, fd: i32, ctl: bool) -> Result<bool, String> {
    // SAFETY: plain system calls; a new fd or -1 comes back.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) as i32 };
    if pidfd < 0 {
        return Ok(true);
    }
    // SAFETY: as above.
    let dup = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd, fd, 0) as i32 };
    // SAFETY: the fd pidfd_open gave us.
    unsafe { libc::close(pidfd) };
    if dup < 0 {
        return Ok(true);
    }
    let mut b = if ctl {
        (-1i32).to_ne_bytes().to_vec()
    } else {
        nvclient::abi::Nvos00::default().to_bytes().to_vec()
    };
    let nr = if ctl { 0xc9 } else { 0x29 };
    let req = vgpu_logic::nv::ioctl::nv_iowr(nr, b.len());
    // SAFETY: `b` is a whole block of the escape, which the driver reads
    // and writes.
    let r = unsafe { libc::ioctl(dup, req as _, b.as_mut_ptr()) };
    let errno = std::io::Error::last_os_error().raw_os_error();
    // SAFETY: the fd pidfd_getfd gave us.
    unsafe { libc::close(dup) };
    Ok(r != 0 && errno == Some(libc::EPERM))
}

/// With every tenant process gone: nothing charged, tracked or held.
pub fn settled(tenants: &[Tenant]) -> Outcome {
    let t0 = Instant::now();
    loop {
        let r = zero(tenants);
        if r.is_ok() || t0.elapsed() > Duration::from_secs(10) {
            return r;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Once vgpu is unloaded: the double holds nothing on GPUs `gpus` (no
/// VRAM, no managed residency, no DP region, no TSG), checked with the
/// same short wait as [`settled`], since the double returns managed
/// residency after the files close.
pub fn double_empty(gpus: &[u32]) -> Outcome {
    let t0 = Instant::now();
    loop {
        let mut errs = Vec::new();
        for &g in gpus {
            let d = gpu(g)?;
            if d != GpuView::default() {
                errs.push(format!("GPU {g}: the double still holds {d:?}"));
            }
        }
        if errs.is_empty() {
            return Ok(());
        }
        ensure!(
            t0.elapsed() < Duration::from_secs(10),
            "{}",
            errs.join("\n")
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn zero(tenants: &[Tenant]) -> Outcome {
    let mut errs = Vec::new();
    for t in tenants {
        for a in ["memory_used", "memory_managed", "compute_tsgs", "users"] {
            let v = attr(t.vgpu, a)?;
            if v != 0 {
                errs.push(format!("vgpu{}/{a} = {v} with no tenant left", t.vgpu));
            }
        }
        let d = gpu(t.gpu)?;
        if d != GpuView::default() {
            errs.push(format!("GPU {}: the double still holds {d:?}", t.gpu));
        }
    }
    ensure!(errs.is_empty(), "{}", errs.join("\n"));
    Ok(())
}
