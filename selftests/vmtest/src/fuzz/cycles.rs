// SPDX-License-Identifier: GPL-2.0

//! Load and unload cycles with vGPUs configured: while a tenant holds its
//! files the unload is refused (EAGAIN, the module stays); a tenant killed
//! while another thread keeps trying to unload lets the unload through
//! once its files are closed; every other cycle unloads after the tenant
//! is gone. After each unload the double must hold nothing on either GPU:
//! what vgpu's exit left in the driver would show there.

use super::check;
use super::rng::Rng;
use crate::ensure;
use crate::session::Session;
use crate::sys::{delete_module, finit_module, join_cgroup, module_loaded, sh, write_file, Holder};
use crate::tap::Outcome;
use std::time::{Duration, Instant};

/// What the cycles did.
#[derive(Default, Debug, Clone, Copy)]
pub struct CycleTotals {
    /// Loads and unloads.
    pub cycles: u64,
    /// Unloads refused while a tenant was alive.
    pub refused: u64,
    /// Tenants killed while another thread was unloading.
    pub raced: u64,
}

fn configure() -> Outcome {
    let w = |f: &str, v: &str| {
        write_file(&format!("/sys/class/vgpu/{f}"), v).map_err(|e| format!("{f} = {v}: errno {e}"))
    };
    for (id, gpu, limit, cg) in [(0, 0, 64 << 20, "/fz0"), (1, 1, 32 << 20, "/fz1")] {
        w("create", &id.to_string())?;
        w(&format!("vgpu{id}/gpu"), &gpu.to_string())?;
        w(
            &format!("vgpu{id}/memory_limit"),
            &(limit as u64).to_string(),
        )?;
        w(&format!("vgpu{id}/cgroup"), cg)?;
        w(&format!("vgpu{id}/compute_share"), "50")?;
    }
    Ok(())
}

/// A tenant of vGPU 0 holding a session and 1 MiB of VRAM.
fn tenant() -> Result<Holder, String> {
    let h = Holder::spawn(|| {
        join_cgroup("/fz0").is_ok()
            && Session::vgpu(0)
                .and_then(|s| {
                    s.ctl
                        .alloc_vram(s.client, s.device, 0, 1 << 20)
                        .map_err(|e| format!("{e:?}"))?;
                    std::mem::forget(s);
                    Ok(())
                })
                .is_ok()
    })?;
    ensure!(h.ready, "the tenant could not allocate");
    Ok(h)
}

/// `n` cycles (vgpu must be unloaded first; the double loaded).
pub fn cycles(seed: u64, n: u64) -> Result<CycleTotals, String> {
    let path = sh("modinfo -F filename vgpu")?.trim().to_string();
    let mut rng = Rng::derive(seed, 3 << 32);
    let mut t = CycleTotals::default();
    for i in 0..n {
        let at = |e: String| format!("cycle {i}: {e}");
        finit_module(&path, "").map_err(|e| at(format!("load: errno {e}")))?;
        configure().map_err(at)?;
        let holder = tenant().map_err(at)?;
        match i % 4 {
            0 => {
                let r = delete_module("vgpu");
                ensure!(
                    r == Err(libc::EAGAIN) && module_loaded("vgpu"),
                    "cycle {i}: unload with a tenant alive: {r:?}, want EAGAIN"
                );
                t.refused += 1;
                drop(holder);
            }
            1 => {
                // Another thread unloads in a loop while the tenant dies.
                let unloader = std::thread::spawn(|| {
                    let t0 = Instant::now();
                    loop {
                        match delete_module("vgpu") {
                            Ok(()) => return Ok(()),
                            Err(libc::EAGAIN) if t0.elapsed() < Duration::from_secs(10) => {
                                std::thread::yield_now()
                            }
                            Err(e) => return Err(format!("unload: errno {e}")),
                        }
                    }
                });
                std::thread::sleep(Duration::from_micros(rng.below(5000)));
                drop(holder);
                unloader
                    .join()
                    .map_err(|_| at("the unloader panicked".into()))?
                    .map_err(at)?;
                check::double_empty(&[0, 1]).map_err(at)?;
                t.raced += 1;
                t.cycles += 1;
                continue;
            }
            _ => drop(holder),
        }
        delete_module("vgpu")
            .map_err(|e| at(format!("unload after the tenant died: errno {e}")))?;
        check::double_empty(&[0, 1]).map_err(at)?;
        t.cycles += 1;
    }
    ensure!(!module_loaded("vgpu"), "vgpu loaded after the cycles");
    Ok(t)
}
