// SPDX-License-Identifier: GPL-2.0

//! The subcommands: each returns what to print, for people and as JSON.

use std::fs;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{json, Value};

use crate::cdi;
use crate::cli::{CdiArgs, Cli, Command, CreateArgs, ExporterArgs, SetArgs};
use crate::error::{Error, Result};
use crate::exporter;
use crate::inventory::{self, DevNodes, Gpu, SysfsGpus};
use crate::model::{loads, VgpuInfo};
use crate::placement::{self, Request};
use crate::sysfs::Sysfs;
use crate::table;
use crate::units::{format_bytes, format_limit, parse_share, Limit};

/// What a command prints.
#[derive(Debug, Default)]
pub struct Output {
    /// For people (stdout, without `--json`).
    pub human: String,
    /// With `--json` (stdout).
    pub json: Value,
    /// Notes for stderr (either way).
    pub warnings: Vec<String>,
}

/// Test hook: `VGPUCTL_EUID` overrides the effective uid used for the root
/// check (the kernel still enforces its own permissions).
const EUID_OVERRIDE: &str = "VGPUCTL_EUID";

fn euid() -> u32 {
    if let Some(u) = std::env::var(EUID_OVERRIDE)
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return u;
    }
    // SAFETY: geteuid() has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Fails with [`Error::NotRoot`] unless running as root: the module's files
/// are writable by root only, and failing early keeps a multi-step change
/// from starting at all.
pub fn require_root() -> Result<()> {
    if euid() == 0 {
        Ok(())
    } else {
        Err(Error::NotRoot)
    }
}

/// Runs the command of `cli` against `s`.
pub fn run(cli: &Cli, s: &Sysfs) -> Result<Output> {
    match &cli.command {
        Command::Create(a) => create(cli, s, a),
        Command::Remove { ids } => remove(s, ids),
        Command::Set(a) => set(cli, s, a),
        Command::Show { id } => show(s, *id),
        Command::List => list(s),
        Command::Status => status(cli, s),
        Command::Cdi(a) => cdi_cmd(s, a),
        Command::Exporter(a) => exporter_cmd(cli, s, a),
    }
}

/// The GPU list (see [`inventory`]).
fn gpus(cli: &Cli, s: &Sysfs) -> Result<Vec<Gpu>> {
    inventory::discover(
        &[&SysfsGpus(s), &DevNodes(cli.dev_root.clone())],
        cli.gpu_memory,
    )
}

fn check_cgroup(c: &str) -> Result<()> {
    vgpu_logic::config::parse_cgroup_path(c.as_bytes())
        .map(|_| ())
        .map_err(|_| {
            Error::BadValue(format!(
                "{c:?} is not a cgroup v2 path (absolute from the cgroup2 root, e.g. /kubepods/pod1)"
            ))
        })
}

fn to_json<T: Serialize>(v: &T) -> Result<Value> {
    serde_json::to_value(v).map_err(|e| Error::Unexpected(format!("JSON: {e}")))
}

fn share(v: Option<u32>) -> String {
    v.map_or("-".to_string(), |c| format!("{c}%"))
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or("-".to_string(), |x| x.to_string())
}

/// One line about a vGPU, for `create`.
fn summary(v: &VgpuInfo) -> String {
    let mut s = format!(
        "created vgpu{} ({}): GPU {}, memory {}",
        v.id,
        v.device,
        opt(v.gpu),
        format_limit(v.limit())
    );
    if let Some(c) = v.compute_share {
        s.push_str(&format!(", compute {c}%"));
    }
    s.push_str(&format!(
        ", cgroup {}",
        v.cgroup.as_deref().unwrap_or("(unbound)")
    ));
    s
}

/// The settings to write to one vGPU, in order; the cgroup comes last so
/// that nobody can open a vGPU before it is fully set up.
fn writes(
    gpu: Option<u32>,
    memory: Option<Limit>,
    compute: Option<u32>,
    policy: Option<&str>,
    period: Option<u64>,
    cgroup: Option<&str>,
) -> Vec<(&'static str, String)> {
    let mut w = Vec::new();
    if let Some(g) = gpu {
        w.push(("gpu", g.to_string()));
    }
    if let Some(m) = memory {
        w.push(("memory_limit", m.sysfs()));
    }
    if let Some(p) = policy {
        w.push(("compute_policy", p.to_string()));
    }
    if let Some(p) = period {
        w.push(("period_us", p.to_string()));
    }
    if let Some(c) = compute {
        w.push(("compute_share", c.to_string()));
    }
    if let Some(c) = cgroup {
        w.push(("cgroup", c.to_string()));
    }
    w
}

/// Removes `created` (newest first) after `error`; returns the error to
/// report.
fn rollback(s: &Sysfs, created: &[u32], error: Error) -> Error {
    let failed: Vec<Error> = created
        .iter()
        .rev()
        .filter_map(|&id| s.remove(id).err())
        .collect();
    if failed.is_empty() {
        error
    } else {
        Error::RollbackFailed {
            error: Box::new(error),
            rollback: failed,
        }
    }
}

/// `vgpuctl create`.
fn create(cli: &Cli, s: &Sysfs, a: &CreateArgs) -> Result<Output> {
    s.check_loaded()?;
    require_root()?;
    if let Some(c) = &a.cgroup {
        check_cgroup(c)?;
    }
    let count = a.gpus.unwrap_or(1) as usize;
    let total_compute = a
        .compute
        .as_deref()
        .map(|c| parse_share(c, 100 * count as u32))
        .transpose()?;
    let (memory, compute) = placement::split(a.memory, total_compute, count);
    if memory == Limit::Bytes(0) {
        return Err(Error::BadValue("a memory limit of 0 bytes".to_string()));
    }

    // vGPU numbers.
    let ids = if a.id.is_empty() {
        let mut ids = Vec::new();
        for _ in 0..count {
            ids.push(s.free_id(&ids)?);
        }
        ids
    } else {
        if a.id.len() != count {
            return Err(Error::BadValue(format!(
                "{} vGPU numbers given for {count} vGPUs",
                a.id.len()
            )));
        }
        for (i, id) in a.id.iter().enumerate() {
            if s.exists(*id) || a.id[..i].contains(id) {
                return Err(Error::BadValue(format!("vGPU {id} already exists")));
            }
        }
        a.id.clone()
    };

    // GPUs.
    let vgpus = VgpuInfo::read_all(s)?;
    let (gpu_loads, _) = loads(&gpus(cli, s)?, &vgpus, None);
    let placed = match a.gpu {
        Some(k) => {
            if !a.force {
                if let Some(r) = gpu_loads
                    .iter()
                    .find(|g| g.index == k)
                    .and_then(|g| g.misfit(memory, compute))
                {
                    return Err(Error::NoFit(format!("{r} (--force to override)")));
                }
            }
            vec![k]
        }
        None => placement::place(
            &gpu_loads,
            &Request {
                count,
                memory,
                compute,
                policy: a.policy,
            },
        )
        .map_err(Error::NoFit)?,
    };

    // Create and configure all, then bind all; undo everything on failure.
    let mut created = Vec::new();
    let policy = a.compute_policy.map(|p| p.sysfs());
    let result = (|| -> Result<()> {
        for (&id, &k) in ids.iter().zip(&placed) {
            s.create(id)?;
            created.push(id);
            let mem = (memory != Limit::Max).then_some(memory);
            for (name, v) in writes(Some(k), mem, compute, policy, a.period_us, None) {
                s.write_attr(id, name, &v)?;
            }
        }
        if let Some(c) = &a.cgroup {
            for &id in &ids {
                s.write_attr(id, "cgroup", c)?;
            }
        }
        Ok(())
    })();
    if let Err(e) = result {
        return Err(rollback(s, &created, e));
    }

    let infos: Vec<VgpuInfo> = ids
        .iter()
        .map(|&id| VgpuInfo::read(s, id))
        .collect::<Result<_>>()?;
    let mut out = Output {
        human: infos.iter().map(|v| summary(v) + "\n").collect(),
        json: to_json(&infos)?,
        warnings: Vec::new(),
    };
    if a.cgroup.is_none() {
        out.warnings.push(
            "no --cgroup given: nobody can open the new vGPU until `vgpuctl set N --cgroup PATH`"
                .to_string(),
        );
    }
    if let (Some(t), Some(c)) = (total_compute, compute) {
        if c as usize * count != t as usize {
            out.warnings
                .push(format!("{t}% does not split evenly: {c}% each"));
        }
    }
    Ok(out)
}

/// `vgpuctl remove`.
fn remove(s: &Sysfs, ids: &[u32]) -> Result<Output> {
    s.check_loaded()?;
    require_root()?;
    for &id in ids {
        s.check_exists(id)?;
    }
    let mut human = String::new();
    for &id in ids {
        s.remove(id)?;
        human.push_str(&format!("removed vgpu{id}\n"));
    }
    Ok(Output {
        human,
        json: json!({ "removed": ids }),
        warnings: Vec::new(),
    })
}

/// `vgpuctl set`.
fn set(cli: &Cli, s: &Sysfs, a: &SetArgs) -> Result<Output> {
    s.check_loaded()?;
    require_root()?;
    s.check_exists(a.id)?;
    if let Some(c) = &a.cgroup {
        check_cgroup(c)?;
    }
    let compute = a
        .compute
        .as_deref()
        .map(|c| parse_share(c, 100))
        .transpose()?;
    let w = writes(
        a.gpu,
        a.memory,
        compute,
        a.compute_policy.map(|p| p.sysfs()),
        a.period_us,
        a.cgroup.as_deref(),
    );
    if w.is_empty() {
        return Err(Error::BadValue(
            "nothing to set (give --memory, --compute, --cgroup, --gpu, ...)".to_string(),
        ));
    }
    let old = VgpuInfo::read(s, a.id)?;
    if !a.force && (a.gpu.is_some() || a.memory.is_some() || compute.is_some()) {
        let vgpus = VgpuInfo::read_all(s)?;
        let (gpu_loads, _) = loads(&gpus(cli, s)?, &vgpus, Some(a.id));
        let target = a.gpu.or(old.gpu);
        let memory = a.memory.unwrap_or(old.limit());
        if let Some(r) = gpu_loads
            .iter()
            .find(|g| Some(g.index) == target)
            .and_then(|g| g.misfit(memory, compute.or(old.compute_share)))
        {
            return Err(Error::NoFit(format!("{r} (--force to override)")));
        }
    }
    // Apply in order; on failure put back what was already changed.
    let mut done: Vec<(&str, String)> = Vec::new();
    for (name, v) in &w {
        let before = s.read_attr(a.id, name)?.unwrap_or_default();
        if let Err(e) = s.write_attr(a.id, name, v) {
            let failed: Vec<Error> = done
                .iter()
                .rev()
                // An unset GPU cannot be written back: leave it.
                .filter(|(n, b)| !(*n == "gpu" && b.is_empty()))
                .filter_map(|(n, b)| s.write_attr(a.id, n, b).err())
                .collect();
            return Err(if failed.is_empty() {
                e
            } else {
                Error::RollbackFailed {
                    error: Box::new(e),
                    rollback: failed,
                }
            });
        }
        done.push((name, before));
    }
    let v = VgpuInfo::read(s, a.id)?;
    Ok(Output {
        human: show_text(&v),
        json: to_json(&v)?,
        warnings: Vec::new(),
    })
}

fn show_text(v: &VgpuInfo) -> String {
    let rows: Vec<(&str, String)> = vec![
        ("vgpu", v.id.to_string()),
        ("device", v.device.clone()),
        (
            "gpu",
            v.gpu.map_or("(unset)".to_string(), |g| g.to_string()),
        ),
        ("memory_limit", format_limit(v.limit())),
        ("memory_used", format_bytes(v.memory_used)),
        (
            "cgroup",
            v.cgroup.clone().unwrap_or("(unbound)".to_string()),
        ),
        ("users", v.users.to_string()),
        ("compute_share", share(v.compute_share)),
        ("compute_policy", opt(v.compute_policy.clone())),
        ("period_us", opt(v.period_us)),
        ("granted_us", opt(v.granted_us)),
        ("throttled_us", opt(v.throttled_us)),
    ];
    rows.iter().map(|(k, v)| format!("{k:<15} {v}\n")).collect()
}

/// `vgpuctl show`.
fn show(s: &Sysfs, id: u32) -> Result<Output> {
    s.check_exists(id)?;
    let v = VgpuInfo::read(s, id)?;
    Ok(Output {
        human: show_text(&v),
        json: to_json(&v)?,
        warnings: Vec::new(),
    })
}

/// `vgpuctl list`.
fn list(s: &Sysfs) -> Result<Output> {
    let vgpus = VgpuInfo::read_all(s)?;
    let rows: Vec<Vec<String>> = vgpus
        .iter()
        .map(|v| {
            vec![
                v.id.to_string(),
                v.device.clone(),
                opt(v.gpu),
                format_limit(v.limit()),
                format_bytes(v.memory_used),
                share(v.compute_share),
                opt(v.compute_policy.clone()),
                v.cgroup.clone().unwrap_or("-".to_string()),
                v.users.to_string(),
            ]
        })
        .collect();
    let human = if vgpus.is_empty() {
        "no vGPUs\n".to_string()
    } else {
        table::render(
            &[
                "ID", "DEVICE", "GPU", "MEMORY", "USED", "COMPUTE", "POLICY", "CGROUP", "USERS",
            ],
            &rows,
        )
    };
    Ok(Output {
        human,
        json: to_json(&vgpus)?,
        warnings: Vec::new(),
    })
}

/// One GPU in `vgpuctl status --json`.
#[derive(Serialize)]
struct GpuStatus {
    index: u32,
    /// Bytes, `null` if unknown.
    memory_total: Option<u64>,
    /// Sum of the limits of its vGPUs that have one.
    memory_promised: u64,
    /// vGPUs without a memory limit.
    unlimited_vgpus: usize,
    /// Sum of its vGPUs' use.
    memory_used: u64,
    /// Sum of its vGPUs' shares; left out without compute shares.
    #[serde(skip_serializing_if = "Option::is_none")]
    compute_promised: Option<u32>,
    vgpus: Vec<u32>,
}

/// `vgpuctl status`.
fn status(cli: &Cli, s: &Sysfs) -> Result<Output> {
    let vgpus = VgpuInfo::read_all(s)?;
    let (gpu_loads, unassigned) = loads(&gpus(cli, s)?, &vgpus, None);
    let compute_known = vgpus.iter().any(|v| v.compute_share.is_some());
    let gs: Vec<GpuStatus> = gpu_loads
        .iter()
        .map(|g| GpuStatus {
            index: g.index,
            memory_total: g.memory_total,
            memory_promised: g.memory_promised,
            unlimited_vgpus: g.unlimited,
            memory_used: vgpus
                .iter()
                .filter(|v| v.gpu == Some(g.index))
                .map(|v| v.memory_used)
                .sum(),
            compute_promised: compute_known.then_some(g.compute_promised),
            vgpus: g.vgpus.clone(),
        })
        .collect();
    let rows: Vec<Vec<String>> = gs
        .iter()
        .map(|g| {
            let mut promised = format_bytes(g.memory_promised);
            if let Some(t) = g.memory_total.filter(|&t| t > 0) {
                promised.push_str(&format!(
                    " ({}%)",
                    (u128::from(g.memory_promised) * 100 / u128::from(t))
                ));
            }
            if g.unlimited_vgpus > 0 {
                promised.push_str(&format!(" + {} unlimited", g.unlimited_vgpus));
            }
            vec![
                g.index.to_string(),
                g.memory_total.map_or("?".to_string(), format_bytes),
                promised,
                format_bytes(g.memory_used),
                share(g.compute_promised),
                if g.vgpus.is_empty() {
                    "-".to_string()
                } else {
                    g.vgpus
                        .iter()
                        .map(u32::to_string)
                        .collect::<Vec<_>>()
                        .join(",")
                },
            ]
        })
        .collect();
    let mut human = if gs.is_empty() {
        "no GPUs known\n".to_string()
    } else {
        table::render(
            &["GPU", "MEMORY", "PROMISED", "USED", "COMPUTE", "VGPUS"],
            &rows,
        )
    };
    if !unassigned.is_empty() {
        human.push_str(&format!(
            "vGPUs without a GPU: {}\n",
            unassigned
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(",")
        ));
    }
    Ok(Output {
        human,
        json: json!({ "gpus": to_json(&gs)?, "unassigned": unassigned }),
        warnings: Vec::new(),
    })
}

/// Writes `text` to `path` through a temporary file and a rename, so readers
/// (a runtime watching /etc/cdi) never see half a file.
fn write_atomic(path: &Path, text: &str) -> Result<()> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).map_err(io)?;
    }
    let mut tmp = PathBuf::from(path);
    tmp.as_mut_os_string().push(".tmp");
    fs::write(&tmp, text).map_err(io)?;
    fs::rename(&tmp, path).map_err(io)
}

/// `vgpuctl cdi`.
fn cdi_cmd(s: &Sysfs, a: &CdiArgs) -> Result<Output> {
    if !cdi::valid_kind(&a.kind) {
        return Err(Error::BadValue(format!(
            "{:?} is not a CDI kind (vendor/class, e.g. {})",
            a.kind,
            cdi::DEFAULT_KIND
        )));
    }
    let vgpus = VgpuInfo::read_all(s)?;
    let opts = cdi::Options {
        kind: a.kind.clone(),
        params_file: a.params_file.to_string_lossy().into_owned(),
        with_uvm: a.with_uvm,
    };
    let spec = cdi::spec(&vgpus, &opts);
    let mut warnings: Vec<String> = vgpus
        .iter()
        .filter(|v| v.gpu.is_none())
        .map(|v| format!("vgpu{} has no GPU: left out of the spec", v.id))
        .collect();
    let params = cdi::params_text(cdi::read_host_params(&a.host_params).as_deref());
    write_atomic(&a.params_file, &params)?;
    let text = serde_json::to_string_pretty(&spec)
        .map_err(|e| Error::Unexpected(format!("JSON: {e}")))?
        + "\n";
    let names: Vec<String> = spec
        .devices
        .iter()
        .map(|d| format!("{}={}", spec.kind, d.name))
        .collect();
    match &a.output {
        Some(path) => {
            write_atomic(path, &text)?;
            Ok(Output {
                human: format!(
                    "wrote {} ({} devices: {}) and {}\n",
                    path.display(),
                    names.len(),
                    names.join(" "),
                    a.params_file.display()
                ),
                json: json!({
                    "output": path,
                    "params_file": a.params_file,
                    "devices": names,
                }),
                warnings,
            })
        }
        None => {
            if vgpus.is_empty() {
                warnings.push("no vGPUs: the spec has no devices".to_string());
            }
            Ok(Output {
                human: text,
                json: to_json(&spec)?,
                warnings,
            })
        }
    }
}

/// `exporter`: the metrics once on stdout, or served until SIGTERM.
fn exporter_cmd(cli: &Cli, s: &Sysfs, a: &ExporterArgs) -> Result<Output> {
    if cli.json {
        return Err(Error::BadValue(
            "--json does not apply to exporter (it prints the Prometheus text format)".into(),
        ));
    }
    if a.once {
        return Ok(Output {
            human: exporter::render(s, &exporter::Stats::default()),
            ..Default::default()
        });
    }
    let listener = std::net::TcpListener::bind(&a.listen)
        .map_err(|e| Error::Unexpected(format!("cannot listen on {}: {e}", a.listen)))?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::Unexpected(format!("cannot listen on {}: {e}", a.listen)))?;
    exporter::install_signal_handlers()
        .map_err(|e| Error::Unexpected(format!("signal handlers: {e}")))?;
    eprintln!("vgpuctl: exporter: listening on http://{addr}/metrics");
    exporter::serve(
        listener,
        s.clone(),
        exporter::ServerConfig { timeout: a.timeout },
    )?;
    eprintln!("vgpuctl: exporter: stopped");
    Ok(Output::default())
}
