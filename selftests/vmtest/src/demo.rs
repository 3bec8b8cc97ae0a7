// SPDX-License-Identifier: GPL-2.0

//! The demo's workload (`vgpu-selftest demo-alloc N CHUNK_MIB [HOLD_S]`):
//! a CUDA-like client that opens `/dev/vgpuctl` and `/dev/vgpuN` as a
//! container would, reports the GPU size it is shown, allocates VRAM in
//! chunks until the driver says no, reports what it got, and optionally
//! holds it for a while.

use crate::session::Session;
use nvclient::abi::{fb_info, status};
use nvclient::Error;

const MIB: u64 = 1 << 20;

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
    let id: u32 = args
        .first()
        .and_then(|s| s.parse().ok())
        .ok_or("usage: demo-alloc N CHUNK_MIB [HOLD_S]")?;
    let chunk: u64 = args
        .get(1)
        .and_then(|s| s.parse().ok())
        .ok_or("bad CHUNK_MIB")?;
    let hold: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(0);
    let s = Session::vgpu(id)?;
    let (ctl, client, device, sub) = (&s.ctl, s.client, s.device, s.subdevice);
    let seen = ctl
        .fb_get_info_v2(client, sub, &[fb_info::RAM_SIZE])
        .map_err(|e| format!("fb info: {e:?}"))?;
    let total_seen = u64::from(seen[0].data) << 10;
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
    println!(
        "GPU size seen {:>6} MiB | allocated {:>6} MiB in {chunk} MiB chunks, then {refusal}",
        total_seen / MIB,
        got / MIB
    );
    if hold > 0 {
        std::thread::sleep(std::time::Duration::from_secs(hold));
    }
    Ok(())
}
