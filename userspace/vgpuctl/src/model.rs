// SPDX-License-Identifier: GPL-2.0

//! What vgpuctl reads about vGPUs and GPUs, as printed with `--json`.

use serde::Serialize;

use crate::error::{Error, Result};
use crate::inventory::Gpu;
use crate::placement::GpuLoad;
use crate::sysfs::Sysfs;
use crate::units::Limit;

/// One vGPU's settings and counters.
///
/// In JSON, `gpu` is `null` when unset, `memory_limit` is `null` for no
/// limit (`max`), `cgroup` is `null` when unbound, and the compute fields are
/// left out when the module has no compute shares.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct VgpuInfo {
    /// The vGPU number `N`.
    pub id: u32,
    /// Its node on the host, `/dev/vgpuN`.
    pub device: String,
    /// Backing GPU index.
    pub gpu: Option<u32>,
    /// Memory ceiling in bytes; `None`: no limit.
    pub memory_limit: Option<u64>,
    /// Bytes charged.
    pub memory_used: u64,
    /// Bound cgroup v2 path; `None`: unbound.
    pub cgroup: Option<String>,
    /// Open files of `/dev/vgpuN`.
    pub users: u64,
    /// Compute share in percent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compute_share: Option<u32>,
    /// `fixed` or `work-conserving`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compute_policy: Option<String>,
    /// Scheduling period in microseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period_us: Option<u64>,
    /// Time granted so far, microseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub granted_us: Option<u64>,
    /// Time held back so far, microseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throttled_us: Option<u64>,
}

fn number<T: std::str::FromStr>(id: u32, name: &str, v: &str) -> Result<T> {
    v.parse()
        .map_err(|_| Error::Unexpected(format!("vgpu{id}/{name} holds {v:?}, not a number")))
}

impl VgpuInfo {
    /// Reads vGPU `id`.
    pub fn read(s: &Sysfs, id: u32) -> Result<Self> {
        let required = |name: &str| -> Result<String> {
            s.read_attr(id, name)?
                .ok_or_else(|| Error::Unexpected(format!("vgpu{id} has no {name} file")))
        };
        let optional_num = |name: &str| -> Result<Option<u64>> {
            s.read_attr(id, name)?
                .map(|v| number(id, name, &v))
                .transpose()
        };
        let gpu = required("gpu")?;
        let limit = required("memory_limit")?;
        let cgroup = required("cgroup")?;
        Ok(Self {
            id,
            device: format!("/dev/vgpu{id}"),
            gpu: if gpu.is_empty() {
                None
            } else {
                Some(number(id, "gpu", &gpu)?)
            },
            memory_limit: if limit == "max" {
                None
            } else {
                Some(number(id, "memory_limit", &limit)?)
            },
            memory_used: number(id, "memory_used", &required("memory_used")?)?,
            cgroup: (!cgroup.is_empty()).then_some(cgroup),
            users: number(id, "users", &required("users")?)?,
            compute_share: s
                .read_attr(id, "compute_share")?
                .map(|v| number(id, "compute_share", &v))
                .transpose()?,
            compute_policy: s.read_attr(id, "compute_policy")?,
            period_us: optional_num("period_us")?,
            granted_us: optional_num("granted_us")?,
            throttled_us: optional_num("throttled_us")?,
        })
    }

    /// Reads every vGPU, by number.
    pub fn read_all(s: &Sysfs) -> Result<Vec<Self>> {
        s.ids()?.into_iter().map(|id| Self::read(s, id)).collect()
    }

    /// The memory limit as a [`Limit`].
    pub fn limit(&self) -> Limit {
        self.memory_limit.map_or(Limit::Max, Limit::Bytes)
    }
}

/// Per-GPU load from the GPU list and the vGPUs (a GPU that only vGPUs name
/// is added with an unknown size), by index, plus the vGPUs with no GPU.
/// `skip` is left out of the sums (the vGPU being changed by `set`).
pub fn loads(gpus: &[Gpu], vgpus: &[VgpuInfo], skip: Option<u32>) -> (Vec<GpuLoad>, Vec<u32>) {
    let mut out: Vec<GpuLoad> = gpus
        .iter()
        .map(|g| GpuLoad {
            index: g.index,
            memory_total: g.memory,
            ..Default::default()
        })
        .collect();
    let mut unassigned = Vec::new();
    for v in vgpus.iter().filter(|v| Some(v.id) != skip) {
        let Some(k) = v.gpu else {
            unassigned.push(v.id);
            continue;
        };
        let i = match out.iter().position(|g| g.index == k) {
            Some(i) => i,
            None => {
                out.push(GpuLoad {
                    index: k,
                    ..Default::default()
                });
                out.len() - 1
            }
        };
        let g = &mut out[i];
        match v.memory_limit {
            Some(b) => g.memory_promised = g.memory_promised.saturating_add(b),
            None => g.unlimited += 1,
        }
        g.compute_promised = g
            .compute_promised
            .saturating_add(v.compute_share.unwrap_or(0));
        g.vgpus.push(v.id);
    }
    out.sort_by_key(|g| g.index);
    (out, unassigned)
}
