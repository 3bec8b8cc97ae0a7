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
/// limit (`max`), `cgroup` is `null` when unbound, and `memory_managed` and
/// each `compute_*` field are left out when their file is missing (on a
/// module from before the UVM proxy, or without compute shares or
/// priorities), and `compute_policy` / `compute_period_us` (its GPU's
/// settings) also while the vGPU has no GPU. `compute_frozen` is a boolean
/// (the file holds `0` or `1`).
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
    /// `vgpuN/memory_managed`: the part of `memory_used` charged for
    /// managed (nvidia-uvm) mappings; `None` on a module without the file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_managed: Option<u64>,
    /// Bound cgroup v2 path; `None`: unbound.
    pub cgroup: Option<String>,
    /// Open files of `/dev/vgpuN`.
    pub users: u64,
    /// `vgpuN/compute_share`: its share of its GPU in percent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compute_share: Option<u32>,
    /// `gpuK/compute_policy` of its GPU `K`: `fixed` or `work-conserving`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compute_policy: Option<String>,
    /// `gpuK/compute_period_us` of its GPU `K`: the scheduling period, µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compute_period_us: Option<u64>,
    /// `vgpuN/compute_priority`: its priority level, 0 (best-effort) to 3;
    /// while a vGPU of a higher level on its GPU has work, it does not run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compute_priority: Option<u32>,
    /// `vgpuN/compute_frozen`: whether its work is frozen (`1` in the file;
    /// its TSGs disabled and preempted, its memory still charged).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compute_frozen: Option<bool>,
    /// `vgpuN/compute_granted_us`: µs its scheduling window was open.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compute_granted_us: Option<u64>,
    /// `vgpuN/compute_throttled_us`: µs it had work while another vGPU's
    /// window (or the idle window) was open.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compute_throttled_us: Option<u64>,
    /// `vgpuN/compute_busy_us`: µs it had runnable work, whether or not its
    /// window was open.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compute_busy_us: Option<u64>,
    /// `vgpuN/compute_tsgs`: TSGs and channels outside TSGs the scheduler
    /// tracks for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compute_tsgs: Option<u64>,
    /// `vgpuN/processes`: the processes using it; `None` on a module
    /// without the file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub processes: Option<Vec<Process>>,
}

/// One process using a vGPU: a line of `vgpuN/processes`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Process {
    /// Its PID on the host.
    pub pid: u32,
    /// Bytes charged to it on the vGPU's ledger.
    pub memory_used: u64,
    /// Its command name (non-printable bytes and spaces as `?`).
    pub command: String,
}

/// Parses `vgpuN/processes` (`file` names it in errors): one line
/// `PID BYTES COMMAND` per process; a last line `...` (more processes
/// than one page holds) is left out.
pub fn parse_processes(file: &str, text: &str) -> Result<Vec<Process>> {
    let bad =
        |l: &str| Error::Unexpected(format!("{file} has a line {l:?}, not PID BYTES COMMAND"));
    text.lines()
        .filter(|l| !l.is_empty() && *l != "...")
        .map(|l| {
            let mut f = l.splitn(3, ' ');
            let (Some(pid), Some(bytes), Some(command)) = (f.next(), f.next(), f.next()) else {
                return Err(bad(l));
            };
            Ok(Process {
                pid: pid.parse().map_err(|_| bad(l))?,
                memory_used: bytes.parse().map_err(|_| bad(l))?,
                command: command.to_string(),
            })
        })
        .collect()
}

/// The contents of a `0`/`1` file (`compute_frozen`) as a flag.
fn flag(file: &str, v: &str) -> Result<bool> {
    match v {
        "0" => Ok(false),
        "1" => Ok(true),
        _ => Err(Error::Unexpected(format!("{file} holds {v:?}, not 0 or 1"))),
    }
}

fn number<T: std::str::FromStr>(file: &str, v: &str) -> Result<T> {
    v.parse()
        .map_err(|_| Error::Unexpected(format!("{file} holds {v:?}, not a number")))
}

/// A physical GPU's scheduling settings, from `class/vgpu/gpuK/`; `None`
/// where the module has no such file (no compute shares).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct GpuSettings {
    /// `compute_policy`: `fixed` or `work-conserving`.
    pub compute_policy: Option<String>,
    /// `compute_period_us`: the scheduling period in microseconds.
    pub compute_period_us: Option<u64>,
}

impl GpuSettings {
    /// Reads GPU `k`'s settings (both `None` if it has no `gpuK/`).
    pub fn read(s: &Sysfs, k: u32) -> Result<Self> {
        let period = "compute_period_us";
        Ok(Self {
            compute_policy: s.read_gpu_attr(k, "compute_policy")?,
            compute_period_us: s
                .read_gpu_attr(k, period)?
                .map(|v| number(&format!("gpu{k}/{period}"), &v))
                .transpose()?,
        })
    }
}

impl VgpuInfo {
    /// Reads vGPU `id`, and the settings of its GPU.
    pub fn read(s: &Sysfs, id: u32) -> Result<Self> {
        let required = |name: &str| -> Result<String> {
            s.read_attr(id, name)?
                .ok_or_else(|| Error::Unexpected(format!("vgpu{id} has no {name} file")))
        };
        let num = |name: &str, v: &str| number(&format!("vgpu{id}/{name}"), v);
        let optional_num = |name: &str| -> Result<Option<u64>> {
            s.read_attr(id, name)?.map(|v| num(name, &v)).transpose()
        };
        let gpu = required("gpu")?;
        let limit = required("memory_limit")?;
        let cgroup = required("cgroup")?;
        let gpu: Option<u32> = if gpu.is_empty() {
            None
        } else {
            Some(number(&format!("vgpu{id}/gpu"), &gpu)?)
        };
        let settings = match gpu {
            Some(k) => GpuSettings::read(s, k)?,
            None => GpuSettings::default(),
        };
        Ok(Self {
            id,
            device: format!("/dev/vgpu{id}"),
            gpu,
            memory_limit: if limit == "max" {
                None
            } else {
                Some(num("memory_limit", &limit)?)
            },
            memory_used: num("memory_used", &required("memory_used")?)?,
            memory_managed: optional_num("memory_managed")?,
            cgroup: (!cgroup.is_empty()).then_some(cgroup),
            users: num("users", &required("users")?)?,
            compute_share: s
                .read_attr(id, "compute_share")?
                .map(|v| number(&format!("vgpu{id}/compute_share"), &v))
                .transpose()?,
            compute_policy: settings.compute_policy,
            compute_period_us: settings.compute_period_us,
            compute_priority: s
                .read_attr(id, "compute_priority")?
                .map(|v| number(&format!("vgpu{id}/compute_priority"), &v))
                .transpose()?,
            compute_frozen: s
                .read_attr(id, "compute_frozen")?
                .map(|v| flag(&format!("vgpu{id}/compute_frozen"), &v))
                .transpose()?,
            compute_granted_us: optional_num("compute_granted_us")?,
            compute_throttled_us: optional_num("compute_throttled_us")?,
            compute_busy_us: optional_num("compute_busy_us")?,
            compute_tsgs: optional_num("compute_tsgs")?,
            processes: s
                .read_attr(id, "processes")?
                .map(|t| parse_processes(&format!("vgpu{id}/processes"), &t))
                .transpose()?,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn processes_parse_and_refuse_garbage() {
        let got = parse_processes("f", "12 4096 a.out\n7 0 my prog?\n...\n").unwrap();
        assert_eq!(
            got,
            vec![
                Process {
                    pid: 12,
                    memory_used: 4096,
                    command: "a.out".into()
                },
                Process {
                    pid: 7,
                    memory_used: 0,
                    command: "my prog?".into()
                },
            ]
        );
        assert_eq!(parse_processes("f", "").unwrap(), vec![]);
        for bad in ["12 4096\n", "x 1 a\n", "1 -2 a\n", "1\n"] {
            assert!(parse_processes("f", bad).is_err(), "{bad:?}");
        }
    }
}
