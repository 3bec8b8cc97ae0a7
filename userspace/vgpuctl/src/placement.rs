// SPDX-License-Identifier: GPL-2.0

//! Choosing GPUs for new vGPUs: pure logic, no I/O.
//!
//! A request for `n` vGPUs puts one vGPU on each of `n` distinct GPUs. A GPU
//! can take a vGPU when
//!
//! - memory: what its vGPUs are promised plus the new limit stays within the
//!   GPU's size (a vGPU without a limit, `max`, is promised the whole GPU;
//!   with an unknown size, memory is not checked), and
//! - compute: the shares on it plus the new share stay within 100%.
//!
//! Among the GPUs that can, **binpack** takes the most loaded first (to keep
//! whole GPUs free for large requests), **spread** the least loaded first
//! (to spread contention). Load is memory promised relative to the GPU's
//! size (bytes where the size is unknown), then compute promised, then the
//! number of vGPUs; ties go to the lower index.

use std::cmp::Ordering;

use serde::Serialize;

use crate::units::{format_bytes, Limit};

/// How to choose among GPUs that fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// Fill the most-used GPUs that still fit first.
    Binpack,
    /// Use the least-used GPUs first.
    Spread,
}

/// What a GPU already carries.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct GpuLoad {
    /// `K` of `/dev/nvidiaK`.
    pub index: u32,
    /// Its memory in bytes, if known.
    pub memory_total: Option<u64>,
    /// Sum of the memory limits of its vGPUs that have one.
    pub memory_promised: u64,
    /// How many of its vGPUs have no memory limit.
    pub unlimited: usize,
    /// Sum of its vGPUs' compute shares, percent.
    pub compute_promised: u32,
    /// Its vGPUs.
    pub vgpus: Vec<u32>,
}

impl GpuLoad {
    /// Memory promised, counting an unlimited vGPU as the whole GPU.
    pub fn effective_promised(&self) -> u64 {
        match self.memory_total {
            Some(t) if self.unlimited > 0 => t.max(self.memory_promised),
            _ => self.memory_promised,
        }
    }

    /// Why a vGPU of `memory` and `compute` does not fit here, if it does not.
    pub fn misfit(&self, memory: Limit, compute: Option<u32>) -> Option<String> {
        if let Some(total) = self.memory_total {
            let have = self.effective_promised();
            let need = memory.bytes().unwrap_or(total);
            if have.saturating_add(need) > total {
                let what = match memory {
                    Limit::Max => "a vGPU without a memory limit needs the whole GPU".to_string(),
                    Limit::Bytes(b) => format!("{} more would exceed it", format_bytes(b)),
                };
                return Some(format!(
                    "GPU {}: {} of {} memory already promised, {what}",
                    self.index,
                    format_bytes(have),
                    format_bytes(total),
                ));
            }
        }
        if let Some(c) = compute {
            if self.compute_promised.saturating_add(c) > 100 {
                return Some(format!(
                    "GPU {}: {}% compute already promised, {c}% more would exceed 100%",
                    self.index, self.compute_promised
                ));
            }
        }
        None
    }
}

/// A placement request: `count` vGPUs of `memory` and `compute` each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// How many vGPUs (each on its own GPU).
    pub count: usize,
    /// Each one's memory limit.
    pub memory: Limit,
    /// Each one's compute share in percent, if one is set.
    pub compute: Option<u32>,
    /// How to choose.
    pub policy: Policy,
}

/// Splits a total over `n` vGPUs: memory and compute divided evenly
/// (rounded down), `max` stays `max`. `n` must be at least 1.
pub fn split(total: Limit, compute: Option<u32>, n: usize) -> (Limit, Option<u32>) {
    let n = n.max(1);
    let mem = match total {
        Limit::Bytes(b) => Limit::Bytes(b / n as u64),
        Limit::Max => Limit::Max,
    };
    (mem, compute.map(|c| c / n as u32))
}

/// Orders GPUs from least to most loaded.
fn by_load(a: &GpuLoad, b: &GpuLoad) -> Ordering {
    let mem = match (a.memory_total, b.memory_total) {
        (Some(ta), Some(tb)) if ta > 0 && tb > 0 => (u128::from(a.effective_promised())
            * u128::from(tb))
        .cmp(&(u128::from(b.effective_promised()) * u128::from(ta))),
        _ => a.effective_promised().cmp(&b.effective_promised()),
    };
    mem.then(a.compute_promised.cmp(&b.compute_promised))
        .then(a.vgpus.len().cmp(&b.vgpus.len()))
}

/// Picks `req.count` distinct GPUs for the request, in the order vGPUs are
/// to be created, or says why they do not fit.
pub fn place(gpus: &[GpuLoad], req: &Request) -> Result<Vec<u32>, String> {
    if req.count == 0 {
        return Err("asked for no vGPUs".to_string());
    }
    if gpus.len() < req.count {
        return Err(format!(
            "{} GPUs asked for, {} known{}",
            req.count,
            gpus.len(),
            if gpus.is_empty() {
                " (give --gpu K, or --gpu-memory with GPUs present)"
            } else {
                ""
            }
        ));
    }
    let mut fit = Vec::new();
    let mut reasons = Vec::new();
    for g in gpus {
        match g.misfit(req.memory, req.compute) {
            None => fit.push(g),
            Some(r) => reasons.push(r),
        }
    }
    if fit.len() < req.count {
        return Err(format!(
            "{} GPUs asked for, {} have room: {}",
            req.count,
            fit.len(),
            reasons.join("; ")
        ));
    }
    fit.sort_by(|a, b| {
        let o = by_load(a, b);
        let o = match req.policy {
            Policy::Spread => o,
            Policy::Binpack => o.reverse(),
        };
        o.then(a.index.cmp(&b.index))
    });
    Ok(fit.iter().take(req.count).map(|g| g.index).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    fn gpu(index: u32, total: Option<u64>, promised: u64, compute: u32) -> GpuLoad {
        GpuLoad {
            index,
            memory_total: total.map(|t| t * GIB),
            memory_promised: promised * GIB,
            compute_promised: compute,
            ..Default::default()
        }
    }

    fn req(count: usize, mem_gib: u64, compute: Option<u32>, policy: Policy) -> Request {
        Request {
            count,
            memory: Limit::Bytes(mem_gib * GIB),
            compute,
            policy,
        }
    }

    #[test]
    fn splits_evenly() {
        assert_eq!(
            split(Limit::Bytes(18 * GIB), Some(240), 3),
            (Limit::Bytes(6 * GIB), Some(80))
        );
        assert_eq!(split(Limit::Max, None, 2), (Limit::Max, None));
        assert_eq!(
            split(Limit::Bytes(10), Some(100), 3),
            (Limit::Bytes(3), Some(33))
        );
    }

    #[test]
    fn binpack_fills_most_used_first() {
        let gpus = [
            gpu(0, Some(24), 0, 0),
            gpu(1, Some(24), 12, 0),
            gpu(2, Some(24), 18, 0),
            gpu(3, Some(24), 6, 0),
        ];
        // GPU 2 has 6 GiB left: an 6 GiB vGPU goes there first.
        assert_eq!(place(&gpus, &req(1, 6, None, Policy::Binpack)), Ok(vec![2]));
        // 8 GiB no longer fits on GPU 2.
        assert_eq!(place(&gpus, &req(1, 8, None, Policy::Binpack)), Ok(vec![1]));
        assert_eq!(
            place(&gpus, &req(3, 6, None, Policy::Binpack)),
            Ok(vec![2, 1, 3])
        );
    }

    #[test]
    fn spread_takes_least_used_first() {
        let gpus = [
            gpu(0, Some(24), 12, 0),
            gpu(1, Some(24), 0, 50),
            gpu(2, Some(24), 0, 0),
            gpu(3, Some(24), 6, 0),
        ];
        assert_eq!(
            place(&gpus, &req(3, 6, None, Policy::Spread)),
            Ok(vec![2, 1, 3])
        );
    }

    #[test]
    fn load_is_relative_to_size() {
        // 8 of 16 GiB is fuller than 10 of 80 GiB.
        let gpus = [gpu(0, Some(80), 10, 0), gpu(1, Some(16), 8, 0)];
        assert_eq!(place(&gpus, &req(1, 1, None, Policy::Binpack)), Ok(vec![1]));
        assert_eq!(place(&gpus, &req(1, 1, None, Policy::Spread)), Ok(vec![0]));
    }

    #[test]
    fn refuses_memory_overcommit() {
        let gpus = [gpu(0, Some(24), 20, 0), gpu(1, Some(24), 0, 0)];
        let e = place(&gpus, &req(2, 6, None, Policy::Binpack)).unwrap_err();
        assert!(e.contains("2 GPUs asked for, 1 have room"), "{e}");
        assert!(e.contains("GPU 0: 20 GiB of 24 GiB"), "{e}");
        // Exactly full is fine.
        assert_eq!(place(&gpus, &req(1, 4, None, Policy::Binpack)), Ok(vec![0]));
    }

    #[test]
    fn unlimited_vgpus_take_the_whole_gpu() {
        let mut full = gpu(0, Some(24), 0, 0);
        full.unlimited = 1;
        let gpus = [full, gpu(1, Some(24), 1, 0)];
        assert_eq!(place(&gpus, &req(1, 1, None, Policy::Binpack)), Ok(vec![1]));
        let whole = Request {
            count: 1,
            memory: Limit::Max,
            compute: None,
            policy: Policy::Binpack,
        };
        let e = place(&gpus, &whole).unwrap_err();
        assert!(
            e.contains("without a memory limit needs the whole GPU"),
            "{e}"
        );
    }

    #[test]
    fn refuses_compute_over_100() {
        let gpus = [
            gpu(0, Some(24), 0, 30),
            gpu(1, Some(24), 0, 80),
            gpu(2, None, 0, 0),
        ];
        let e = place(&gpus, &req(3, 1, Some(70), Policy::Spread)).unwrap_err();
        assert!(e.contains("GPU 1: 80% compute already promised"), "{e}");
        assert_eq!(
            place(&gpus, &req(2, 1, Some(70), Policy::Spread)),
            Ok(vec![2, 0])
        );
    }

    #[test]
    fn unknown_sizes_check_counts_only() {
        let gpus = [gpu(0, None, 100, 0), gpu(1, None, 0, 0)];
        assert_eq!(
            place(&gpus, &req(2, 1000, None, Policy::Binpack)),
            Ok(vec![0, 1])
        );
        let e = place(&gpus, &req(3, 1, None, Policy::Binpack)).unwrap_err();
        assert_eq!(e, "3 GPUs asked for, 2 known");
        let e = place(&[], &req(1, 1, None, Policy::Binpack)).unwrap_err();
        assert!(e.contains("0 known (give --gpu K"), "{e}");
        assert!(place(&gpus, &req(0, 1, None, Policy::Binpack)).is_err());
    }

    #[test]
    fn ties_go_to_the_lower_index() {
        let gpus = [
            gpu(2, Some(8), 0, 0),
            gpu(0, Some(8), 0, 0),
            gpu(1, Some(8), 0, 0),
        ];
        assert_eq!(
            place(&gpus, &req(2, 1, None, Policy::Binpack)),
            Ok(vec![0, 1])
        );
        assert_eq!(
            place(&gpus, &req(2, 1, None, Policy::Spread)),
            Ok(vec![0, 1])
        );
    }
}
