// SPDX-License-Identifier: GPL-2.0

//! The demo's workloads, CUDA-like clients that open vgpu's own nodes,
//! `/dev/vgpuctl` and `/dev/vgpuN`, or with `--nvidia K` NVIDIA's, as
//! libcuda does in a container (whose opens of them vgpu answers):
//!
//! - `vgpu-selftest demo-alloc N CHUNK_MIB [HOLD_S]` reports the GPU size it
//!   is shown, allocates VRAM in chunks until the driver says no, reports
//!   what it got, and optionally holds it for a while; with `--nvidia K`
//!   for `N` it opens `/dev/nvidiactl` and `/dev/nvidiaK` instead, and
//!   first sets up UVM on `/dev/nvidia-uvm` as libcuda does at start
//!   (initialise, register the GPU and its VA space: the registration
//!   needs the GPU's real file, which only vgpu's UVM proxy supplies when
//!   the GPU node is vgpu's), and says so;
//! - `vgpu-selftest demo-managed N CHUNK_MIB` maps managed memory
//!   (cudaMallocManaged: an mmap of `/dev/vgpu-uvm`) in chunks and migrates
//!   each to the GPU until a mapping is refused, and reports what it got;
//! - `vgpu-selftest demo-compute N|--nvidia K SECONDS [SPLIT_S]` keeps a TSG busy with
//!   1 ms work items for SECONDS and reports the share of the GPU's time it
//!   got, separately before and after SPLIT_S if given (to show a live
//!   change).

use crate::compute::Work;
use crate::session::Session;
use nvclient::abi::{fb_info, status};
use nvclient::Error;
use std::time::{Duration, Instant};

const MIB: u64 = 1 << 20;
/// NVIDIA's UVM node.
const UVM_NODE: &str = "/dev/nvidia-uvm";

/// Runs the workload; returns the process exit code.
pub fn alloc(args: &[String]) -> i32 {
    match run(args) {
        Ok(()) => 0,
        Err(e) => {
            println!("demo-alloc: {e}");
            1
        }
    }
}

fn run(args: &[String]) -> Result<(), String> {
    let usage = "usage: demo-alloc N|--nvidia K CHUNK_MIB [HOLD_S]";
    let (nvidia, args) = match args.first().map(String::as_str) {
        Some("--nvidia") => (true, &args[1..]),
        _ => (false, args),
    };
    let id: u32 = args.first().and_then(|s| s.parse().ok()).ok_or(usage)?;
    let chunk: u64 = args
        .get(1)
        .and_then(|s| s.parse().ok())
        .ok_or("bad CHUNK_MIB")?;
    let hold: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(0);
    let s = if nvidia {
        Session::open("/dev/nvidiactl", &format!("/dev/nvidia{id}"))?
    } else {
        Session::vgpu(id)?
    };
    let (ctl, client, device, sub) = (&s.ctl, s.client, s.device, s.subdevice);
    // Held until the end, as libcuda holds it.
    let _uvm = if nvidia {
        let c = nvclient::uvm::UvmContext::open(UVM_NODE, ctl, client, device, sub)
            .map_err(|e| format!("UVM on {UVM_NODE}: {e:?}"))?;
        println!("opened /dev/nvidiactl, /dev/nvidia{id} and {UVM_NODE}; GPU registered with UVM");
        Some(c)
    } else {
        None
    };
    let seen = ctl
        .fb_get_info_v2(client, sub, &[fb_info::RAM_SIZE, fb_info::HEAP_FREE])
        .map_err(|e| format!("fb info: {e:?}"))?;
    let total_seen = u64::from(seen[0].data) << 10;
    // What the context itself took before any allocation (RM's own VRAM
    // for the UVM VA space, charged as the driver commits it), as the
    // GPU's free memory shows it.
    let own = total_seen - (u64::from(seen[1].data) << 10);
    let mut got = 0u64;
    let refusal = loop {
        match ctl.alloc_vram(client, device, 0, chunk * MIB) {
            Ok(m) => got += m.size,
            Err(Error::Rm(status::NV_ERR_NO_MEMORY)) => {
                break "NV_ERR_NO_MEMORY (cudaErrorMemoryAllocation)"
            }
            Err(e) => return Err(format!("alloc: {e:?}")),
        }
    };
    let left = ctl
        .fb_get_info_v2(client, sub, &[fb_info::HEAP_FREE])
        .map_err(|e| format!("fb info: {e:?}"))?;
    println!(
        "GPU size seen {:>6} MiB | allocated {:>6} MiB in {chunk} MiB chunks, then {refusal} | context {} KiB, {} KiB left",
        total_seen / MIB,
        got / MIB,
        own >> 10,
        left[0].data
    );
    if hold > 0 {
        std::thread::sleep(std::time::Duration::from_secs(hold));
    }
    Ok(())
}

/// Runs the managed-memory workload; returns the process exit code.
pub fn managed(args: &[String]) -> i32 {
    match run_managed(args) {
        Ok(()) => 0,
        Err(e) => {
            println!("demo-managed: {e}");
            1
        }
    }
}

fn run_managed(args: &[String]) -> Result<(), String> {
    use nvclient::uvm::UvmContext;
    let id: u32 = args
        .first()
        .and_then(|s| s.parse().ok())
        .ok_or("usage: demo-managed N CHUNK_MIB")?;
    let chunk: u64 = args
        .get(1)
        .and_then(|s| s.parse().ok())
        .ok_or("bad CHUNK_MIB")?;
    let e = |w: &'static str| move |err: Error| format!("{w}: {err:?}");
    let s = Session::vgpu(id)?;
    let c = UvmContext::open("/dev/vgpu-uvm", &s.ctl, s.client, s.device, s.subdevice)
        .map_err(e("UVM context"))?;
    let (uvm, uuid) = (&c.uvm, c.uuid);
    let mut ranges = Vec::new();
    let refusal = loop {
        match uvm.map_managed((chunk * MIB) as usize) {
            Ok(m) => {
                uvm.migrate(m.addr(), m.len() as u64, &uuid)
                    .map_err(e("UVM_MIGRATE"))?;
                ranges.push(m);
            }
            Err(Error::Os(libc::ENOMEM)) => break "ENOMEM (cudaErrorMemoryAllocation)",
            Err(err) => return Err(format!("managed mmap: {err:?}")),
        }
    };
    println!(
        "managed {:>6} MiB mapped and migrated to the GPU in {chunk} MiB chunks, then {refusal}",
        ranges.len() as u64 * chunk
    );
    Ok(())
}

/// Runs the compute workload; returns the process exit code.
pub fn compute(args: &[String]) -> i32 {
    match run_compute(args) {
        Ok(()) => 0,
        Err(e) => {
            println!("demo-compute: {e}");
            1
        }
    }
}

fn run_compute(args: &[String]) -> Result<(), String> {
    let (nvidia, args) = match args.first().map(String::as_str) {
        Some("--nvidia") => (true, &args[1..]),
        _ => (false, args),
    };
    let num = |i: usize| args.get(i).and_then(|s| s.parse::<f64>().ok());
    let usage = "usage: demo-compute N|--nvidia K SECONDS [SPLIT_S]";
    let id = num(0).ok_or(usage)? as u32;
    let secs = num(1).ok_or(usage)?;
    let split = num(2);
    let w = if nvidia {
        Work::open("/dev/nvidiactl", &format!("/dev/nvidia{id}"), false)?
    } else {
        Work::open("/dev/vgpuctl", &format!("/dev/vgpu{id}"), false)?
    };
    w.start(1_000_000)?;
    w.enable(crate::compute::Enable::Tsg, true)
        .map_err(|e| format!("enable: {e:?}"))?;
    let t0 = Instant::now();
    // (time in s, engine ns) every 5 ms.
    let mut samples = Vec::new();
    while t0.elapsed().as_secs_f64() < secs {
        w.ch.ring.fill(1_000_000);
        samples.push((t0.elapsed().as_secs_f64(), w.ch.ring.tsg_ns()));
        std::thread::sleep(Duration::from_millis(5));
    }
    // Share over [a, b], leaving half a second around changes.
    let share = |a: f64, b: f64| -> f64 {
        let at = |t: f64| samples.iter().find(|s| s.0 >= t).copied();
        match (at(a), at(b)) {
            (Some(x), Some(y)) if y.0 > x.0 => (y.1 - x.1) as f64 / ((y.0 - x.0) * 1e9) * 100.0,
            _ => 0.0,
        }
    };
    match split {
        Some(m) => println!(
            "GPU time {:>5.1}% before the change, {:>5.1}% after",
            share(0.5, m - 0.5),
            share(m + 0.5, secs - 0.2)
        ),
        None => println!("GPU time {:>5.1}%", share(0.5, secs - 0.2)),
    }
    Ok(())
}

/// `vgpu-selftest demo-hold --nvidia K MIB HOLD_S`: a CUDA-like process
/// as RM lists it among a GPU's compute processes (GET_PIDS of the
/// compute class): it opens NVIDIA's nodes `/dev/nvidiactl` and
/// `/dev/nvidiaK`, makes a TSG, a channel and a compute object in it, as
/// a CUDA context does, allocates MIB of VRAM, says
/// `demo-hold: pid=P holding MIB MiB` (P: its PID where it runs) and holds
/// it all for HOLD_S seconds. Returns the process exit code.
pub fn hold(args: &[String]) -> i32 {
    match run_hold(args) {
        Ok(()) => 0,
        Err(e) => {
            println!("demo-hold: {e}");
            1
        }
    }
}

fn run_hold(args: &[String]) -> Result<(), String> {
    let usage = "usage: demo-hold --nvidia K MIB HOLD_S";
    let num = |i: usize| -> Result<u64, String> {
        args.get(i)
            .and_then(|s| s.parse().ok())
            .ok_or(usage.to_string())
    };
    if args.first().map(String::as_str) != Some("--nvidia") {
        return Err(usage.to_string());
    }
    let (k, mib, secs) = (num(1)?, num(2)?, num(3)?);
    let w = Work::open("/dev/nvidiactl", &format!("/dev/nvidia{k}"), false)?;
    let mut params = [0u8; 64];
    w.s.ctl
        .alloc(
            w.s.client,
            w.ch.h_channel,
            0,
            nvclient::abi::class::HOPPER_COMPUTE_A,
            &mut params,
        )
        .map_err(|e| format!("compute object: {e:?}"))?;
    w.s.ctl
        .alloc_vram(w.s.client, w.s.device, 0, mib * MIB)
        .map_err(|e| format!("alloc_vram: {e:?}"))?;
    println!("demo-hold: pid={} holding {mib} MiB", std::process::id());
    let _ = std::io::Write::flush(&mut std::io::stdout());
    std::thread::sleep(Duration::from_secs(secs));
    Ok(())
}
