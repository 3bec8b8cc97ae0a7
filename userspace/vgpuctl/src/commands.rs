// SPDX-License-Identifier: GPL-2.0

//! The subcommands: each returns what to print, for people and as JSON.

use std::path::PathBuf;

use serde::Serialize;
use serde_json::{json, Value};

use crate::cdi;
use crate::cli::{
    CdiArgs, Cli, Command, ComputePolicy, CreateArgs, ExporterArgs, HookArgs, SetArgs,
};
use crate::error::{Error, Result};
use crate::exporter;
use crate::hook::{self, OciState, Stage};
use crate::inventory::{self, DevNodes, Gpu, GpuDirs, SysfsGpus};
use crate::model::{loads, GpuSettings, VgpuInfo};
use crate::placement::{self, Request};
use crate::sysfs::Sysfs;
use crate::table;
use crate::units::{format_bytes, format_limit, format_us, parse_share, Limit};

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
        Command::Freeze { id } => freeze(s, *id, true),
        Command::Thaw { id } => freeze(s, *id, false),
        Command::Show { id } => show(s, *id),
        Command::List => list(s),
        Command::Status => status(cli, s),
        Command::Cdi(a) => cdi_cmd(cli, s, a),
        Command::Exporter(a) => exporter_cmd(cli, s, a),
        Command::Hook(a) => hook_cmd(cli, s, a),
        Command::CheckDriver => check_driver(cli),
        Command::Guard { action } => match action {
            crate::cli::GuardAction::Load => crate::guard::load(s),
            crate::cli::GuardAction::Sync => crate::guard::sync(s),
            crate::cli::GuardAction::Status => crate::guard::status(s),
            crate::cli::GuardAction::Unload => crate::guard::unload(s),
        },
    }
}

/// The GPU list (see [`inventory`]).
fn gpus(cli: &Cli, s: &Sysfs) -> Result<Vec<Gpu>> {
    inventory::discover(
        &[&SysfsGpus(s), &GpuDirs(s), &DevNodes(cli.dev_root.clone())],
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

/// Bytes for people, `-` if unknown.
fn bytes(v: Option<u64>) -> String {
    v.map_or("-".to_string(), format_bytes)
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or("-".to_string(), |x| x.to_string())
}

/// Microseconds for people (`50 ms`), `-` if unknown.
fn duration(v: Option<u64>) -> String {
    v.map_or("-".to_string(), format_us)
}

/// `compute_frozen` for people: `yes`, `no`, `-` if unknown.
fn frozen(v: Option<bool>) -> String {
    v.map_or("-", |f| if f { "yes" } else { "no" }).to_string()
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
    if let Some(p) = v.compute_priority {
        s.push_str(&format!(", priority {p}"));
    }
    match (&v.compute_policy, v.compute_period_us) {
        (None, None) => {}
        (p, t) => s.push_str(&format!(
            " (GPU {}: {}, period {})",
            opt(v.gpu),
            p.as_deref().unwrap_or("-"),
            duration(t)
        )),
    }
    s.push_str(&format!(
        ", cgroup {}",
        v.cgroup.as_deref().unwrap_or("(unbound)")
    ));
    s
}

/// The settings to write to one vGPU (`vgpuN/`), in order. Its GPU's
/// settings ([`gpu_writes`]) come after them and the `cgroup` comes last,
/// so that nobody can open a vGPU before it is fully set up.
fn vgpu_writes(
    gpu: Option<u32>,
    memory: Option<Limit>,
    compute: Option<u32>,
    priority: Option<u32>,
) -> Vec<(&'static str, String)> {
    let mut w = Vec::new();
    if let Some(g) = gpu {
        w.push(("gpu", g.to_string()));
    }
    if let Some(m) = memory {
        w.push(("memory_limit", m.sysfs()));
    }
    if let Some(c) = compute {
        w.push(("compute_share", c.to_string()));
    }
    if let Some(p) = priority {
        w.push(("compute_priority", p.to_string()));
    }
    w
}

/// The settings to write to a physical GPU (`gpuK/`): they apply to every
/// vGPU on it.
fn gpu_writes(
    policy: Option<ComputePolicy>,
    period_us: Option<u64>,
) -> Vec<(&'static str, String)> {
    let mut w = Vec::new();
    if let Some(p) = policy {
        w.push(("compute_policy", p.sysfs().to_string()));
    }
    if let Some(p) = period_us {
        w.push(("compute_period_us", p.to_string()));
    }
    w
}

/// A GPU setting a command changed, to put back if a later step fails.
struct GpuChange {
    gpu: u32,
    name: &'static str,
    before: String,
    after: String,
}

/// Writes `settings` to GPU `k`, skipping those it already has (any change
/// makes the module's scheduler start afresh on that GPU, dropping what it
/// carried over for the vGPUs there); records what it changed.
fn apply_gpu(
    s: &Sysfs,
    k: u32,
    settings: &[(&'static str, String)],
    changed: &mut Vec<GpuChange>,
) -> Result<()> {
    for (name, v) in settings {
        let before = s.read_gpu_attr(k, name)?;
        if before.as_deref() == Some(v.as_str()) {
            continue;
        }
        s.write_gpu_attr(k, name, v)?;
        changed.push(GpuChange {
            gpu: k,
            name,
            before: before.unwrap_or_default(),
            after: v.clone(),
        });
    }
    Ok(())
}

/// Puts back the GPU settings in `changed` (newest first); returns what
/// could not be.
fn restore_gpus(s: &Sysfs, changed: &[GpuChange]) -> Vec<Error> {
    changed
        .iter()
        .rev()
        .filter_map(|c| s.write_gpu_attr(c.gpu, c.name, &c.before).err())
        .collect()
}

/// Notes, for stderr, that the GPU settings in `changed` also apply to
/// vGPUs other than `ours` on the same GPUs.
fn shared_notes(s: &Sysfs, changed: &[GpuChange], ours: &[u32]) -> Vec<String> {
    if changed.is_empty() {
        return Vec::new();
    }
    let Ok(vgpus) = VgpuInfo::read_all(s) else {
        return Vec::new();
    };
    let mut gpus: Vec<u32> = changed.iter().map(|c| c.gpu).collect();
    gpus.dedup();
    let mut notes = Vec::new();
    for k in gpus {
        let others: Vec<String> = vgpus
            .iter()
            .filter(|v| v.gpu == Some(k) && !ours.contains(&v.id))
            .map(|v| format!("vgpu{}", v.id))
            .collect();
        if others.is_empty() {
            continue;
        }
        let what: Vec<String> = changed
            .iter()
            .filter(|c| c.gpu == k)
            .map(|c| format!("{} {}", c.name, c.after))
            .collect();
        notes.push(format!(
            "GPU {k} now has {}: a per-GPU setting, so for {} too",
            what.join(", "),
            others.join(", ")
        ));
    }
    notes
}

/// Removes `created` (newest first) and puts back the GPU settings in
/// `changed` after `error`; returns the error to report.
fn rollback(s: &Sysfs, created: &[u32], changed: &[GpuChange], error: Error) -> Error {
    let mut failed: Vec<Error> = created
        .iter()
        .rev()
        .filter_map(|&id| s.remove(id).err())
        .collect();
    failed.extend(restore_gpus(s, changed));
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

    // Create and configure all, then set their GPUs' policy and period,
    // then bind all; undo everything on failure (the GPU settings too).
    let gpu_settings = gpu_writes(a.compute_policy, a.period_us);
    let mut created = Vec::new();
    let mut changed = Vec::new();
    let result = (|| -> Result<()> {
        for (&id, &k) in ids.iter().zip(&placed) {
            s.create(id)?;
            created.push(id);
            let mem = (memory != Limit::Max).then_some(memory);
            for (name, v) in vgpu_writes(Some(k), mem, compute, a.priority) {
                s.write_attr(id, name, &v)?;
            }
        }
        for &k in &placed {
            apply_gpu(s, k, &gpu_settings, &mut changed)?;
        }
        if let Some(c) = &a.cgroup {
            for &id in &ids {
                s.write_attr(id, "cgroup", c)?;
            }
        }
        Ok(())
    })();
    if let Err(e) = result {
        return Err(rollback(s, &created, &changed, e));
    }

    let infos: Vec<VgpuInfo> = ids
        .iter()
        .map(|&id| VgpuInfo::read(s, id))
        .collect::<Result<_>>()?;
    let mut out = Output {
        human: infos.iter().map(|v| summary(v) + "\n").collect(),
        json: to_json(&infos)?,
        warnings: shared_notes(s, &changed, &ids),
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
    let vw = vgpu_writes(a.gpu, a.memory, compute, a.priority);
    let gw = gpu_writes(a.compute_policy, a.period_us);
    if vw.is_empty() && gw.is_empty() && a.cgroup.is_none() {
        return Err(Error::BadValue(
            "nothing to set (give --memory, --compute, --priority, --compute-policy, --period-us, --cgroup or --gpu)".to_string(),
        ));
    }
    let old = VgpuInfo::read(s, a.id)?;
    // The policy and period are the GPU's: the one it moves to with --gpu.
    let target = a.gpu.or(old.gpu);
    if !gw.is_empty() && target.is_none() {
        return Err(Error::BadValue(format!(
            "vgpu{} has no GPU, and --compute-policy and --period-us set a GPU's (give --gpu K too)",
            a.id
        )));
    }
    if !a.force && (a.gpu.is_some() || a.memory.is_some() || compute.is_some()) {
        let vgpus = VgpuInfo::read_all(s)?;
        let (gpu_loads, _) = loads(&gpus(cli, s)?, &vgpus, Some(a.id));
        let memory = a.memory.unwrap_or(old.limit());
        if let Some(r) = gpu_loads
            .iter()
            .find(|g| Some(g.index) == target)
            .and_then(|g| g.misfit(memory, compute.or(old.compute_share)))
        {
            return Err(Error::NoFit(format!("{r} (--force to override)")));
        }
    }
    // Apply in order (the vGPU's settings, its GPU's, its cgroup); on
    // failure put back what was already changed.
    let mut done: Vec<(&str, String)> = Vec::new();
    let mut changed = Vec::new();
    let result = (|| -> Result<()> {
        for (name, v) in &vw {
            let before = s.read_attr(a.id, name)?.unwrap_or_default();
            s.write_attr(a.id, name, v)?;
            done.push((name, before));
        }
        if let Some(k) = target {
            apply_gpu(s, k, &gw, &mut changed)?;
        }
        if let Some(c) = &a.cgroup {
            s.write_attr(a.id, "cgroup", c)?;
        }
        Ok(())
    })();
    if let Err(e) = result {
        let mut failed = restore_gpus(s, &changed);
        failed.extend(
            done.iter()
                .rev()
                // An unset GPU cannot be written back: leave it.
                .filter(|(n, b)| !(*n == "gpu" && b.is_empty()))
                .filter_map(|(n, b)| s.write_attr(a.id, n, b).err()),
        );
        return Err(if failed.is_empty() {
            e
        } else {
            Error::RollbackFailed {
                error: Box::new(e),
                rollback: failed,
            }
        });
    }
    let v = VgpuInfo::read(s, a.id)?;
    Ok(Output {
        human: show_text(&v),
        json: to_json(&v)?,
        warnings: shared_notes(s, &changed, &[a.id]),
    })
}

/// `vgpuctl freeze` (`frozen`) and `vgpuctl thaw`.
fn freeze(s: &Sysfs, id: u32, frozen: bool) -> Result<Output> {
    s.check_loaded()?;
    require_root()?;
    s.check_exists(id)?;
    let value = if frozen { "1" } else { "0" };
    let before = s.read_attr(id, "compute_frozen")?;
    // Written even when it is so already: a freeze returns once the
    // module has stopped the vGPU's work, whatever the file said.
    s.write_attr(id, "compute_frozen", value)?;
    let v = VgpuInfo::read(s, id)?;
    let human = match (frozen, before.as_deref() == Some(value)) {
        (true, false) => format!(
            "froze vgpu{id}: its work is stopped (memory stays charged) until `vgpuctl thaw {id}`\n"
        ),
        (true, true) => format!("vgpu{id} was already frozen\n"),
        (false, false) => format!("thawed vgpu{id}: its work runs again\n"),
        (false, true) => format!("vgpu{id} was not frozen\n"),
    };
    Ok(Output {
        human,
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
        ("memory_managed", bytes(v.memory_managed)),
        (
            "cgroup",
            v.cgroup.clone().unwrap_or("(unbound)".to_string()),
        ),
        ("users", v.users.to_string()),
        ("compute_share", share(v.compute_share)),
        ("compute_policy", opt(v.compute_policy.clone())),
        ("compute_period_us", opt(v.compute_period_us)),
        ("compute_priority", opt(v.compute_priority)),
        ("compute_frozen", frozen(v.compute_frozen)),
        ("compute_granted_us", opt(v.compute_granted_us)),
        ("compute_throttled_us", opt(v.compute_throttled_us)),
        ("compute_busy_us", opt(v.compute_busy_us)),
        ("compute_tsgs", opt(v.compute_tsgs)),
    ];
    let mut out: String = rows.iter().map(|(k, v)| format!("{k:<20} {v}\n")).collect();
    if let Some(procs) = &v.processes {
        out.push_str(&format!("{:<20} {}\n", "processes", procs.len()));
        for p in procs {
            out.push_str(&format!(
                "  {:>8}  {:>10}  {}\n",
                p.pid,
                format_bytes(p.memory_used),
                p.command
            ));
        }
    }
    out
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
                bytes(v.memory_managed),
                share(v.compute_share),
                opt(v.compute_priority),
                frozen(v.compute_frozen),
                opt(v.compute_policy.clone()),
                duration(v.compute_period_us),
                duration(v.compute_granted_us),
                duration(v.compute_throttled_us),
                duration(v.compute_busy_us),
                opt(v.compute_tsgs),
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
                "ID",
                "DEVICE",
                "GPU",
                "MEMORY",
                "USED",
                "MANAGED",
                "COMPUTE",
                "PRIO",
                "FROZEN",
                "POLICY",
                "PERIOD",
                "GRANTED",
                "THROTTLED",
                "BUSY",
                "TSGS",
                "CGROUP",
                "USERS",
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
    /// Sum of its vGPUs' `memory_managed` (part of `memory_used`); left out
    /// when a vGPU lacks the file (a module without the UVM proxy).
    #[serde(skip_serializing_if = "Option::is_none")]
    memory_managed: Option<u64>,
    /// Sum of its vGPUs' shares; left out without compute shares.
    #[serde(skip_serializing_if = "Option::is_none")]
    compute_promised: Option<u32>,
    /// `gpuK/compute_policy`; left out without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    compute_policy: Option<String>,
    /// `gpuK/compute_period_us`; left out without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    compute_period_us: Option<u64>,
    /// Sum of its vGPUs' `compute_tsgs`; left out without compute shares.
    #[serde(skip_serializing_if = "Option::is_none")]
    compute_tsgs: Option<u64>,
    vgpus: Vec<u32>,
}

/// `vgpuctl status`.
fn status(cli: &Cli, s: &Sysfs) -> Result<Output> {
    let vgpus = VgpuInfo::read_all(s)?;
    let (gpu_loads, unassigned) = loads(&gpus(cli, s)?, &vgpus, None);
    let compute_known = vgpus.iter().any(|v| v.compute_share.is_some()) || !s.gpu_ids()?.is_empty();
    // With no vGPUs nothing is managed, whatever the module.
    let managed_known = vgpus.iter().all(|v| v.memory_managed.is_some());
    let gs: Vec<GpuStatus> = gpu_loads
        .iter()
        .map(|g| {
            let settings = GpuSettings::read(s, g.index)?;
            let on_it = || vgpus.iter().filter(|v| v.gpu == Some(g.index));
            Ok(GpuStatus {
                index: g.index,
                memory_total: g.memory_total,
                memory_promised: g.memory_promised,
                unlimited_vgpus: g.unlimited,
                memory_used: on_it().map(|v| v.memory_used).sum(),
                memory_managed: managed_known
                    .then(|| on_it().filter_map(|v| v.memory_managed).sum()),
                compute_promised: compute_known.then_some(g.compute_promised),
                compute_policy: settings.compute_policy,
                compute_period_us: settings.compute_period_us,
                compute_tsgs: compute_known.then(|| on_it().filter_map(|v| v.compute_tsgs).sum()),
                vgpus: g.vgpus.clone(),
            })
        })
        .collect::<Result<_>>()?;
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
                bytes(g.memory_managed),
                share(g.compute_promised),
                opt(g.compute_policy.clone()),
                duration(g.compute_period_us),
                opt(g.compute_tsgs),
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
            &[
                "GPU", "MEMORY", "PROMISED", "USED", "MANAGED", "COMPUTE", "POLICY", "PERIOD",
                "TSGS", "VGPUS",
            ],
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

/// `vgpuctl cdi`.
fn cdi_cmd(cli: &Cli, s: &Sysfs, a: &CdiArgs) -> Result<Output> {
    if !cdi::valid_kind(&a.kind) {
        return Err(Error::BadValue(format!(
            "{:?} is not a CDI kind (vendor/class, e.g. {})",
            a.kind,
            cdi::DEFAULT_KIND
        )));
    }
    let vgpus = VgpuInfo::read_all(s)?;
    let hook = if a.no_hooks {
        None
    } else {
        let path = match &a.hook_path {
            Some(p) => p.clone(),
            None => std::env::current_exe().map_err(|source| Error::Io {
                path: PathBuf::from("/proc/self/exe"),
                source,
            })?,
        };
        if !path.is_absolute() {
            return Err(Error::BadValue(format!(
                "--hook-path {}: runtimes need an absolute path",
                path.display()
            )));
        }
        Some(path.to_string_lossy().into_owned())
    };
    let opts = cdi::Options {
        kind: a.kind.clone(),
        hook,
    };
    let spec = cdi::spec(&vgpus, &opts);
    let mut warnings: Vec<String> = vgpus
        .iter()
        .filter(|v| v.gpu.is_none())
        .map(|v| format!("vgpu{} has no GPU: left out of the spec", v.id))
        .collect();
    for (flag, given) in [
        ("--params-file", &a.params_file),
        ("--host-params", &a.host_params),
    ] {
        if given.is_some() {
            warnings.push(format!(
                "{flag} has no effect: the spec's createContainer hook rewrites the container's {} (runc refuses mounts inside /proc)",
                cdi::HOST_PARAMS
            ));
        }
    }
    if a.with_uvm {
        warnings.push(format!(
            "--with-uvm has no effect: the spec always has {}, which vgpu answers for the container, and never the tools node",
            cdi::UVM_NODE
        ));
    }
    for n in cdi::missing_host_nodes(&spec, &cli.dev_root) {
        let fix = if n == cdi::UVM_NODE {
            " (nvidia-uvm makes no node of its own: `nvidia-modprobe -u -c 0` does)"
        } else {
            ""
        };
        warnings.push(format!(
            "{n} is missing on this host{fix}: runtimes will refuse these devices until it exists"
        ));
    }
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
            crate::write_atomic(path, text.as_bytes())?;
            Ok(Output {
                human: format!(
                    "wrote {} ({} devices: {})\n",
                    path.display(),
                    names.len(),
                    names.join(" "),
                ),
                json: json!({
                    "output": path,
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

/// The most of an OCI state `hook` reads from standard input.
const MAX_STATE: u64 = 1 << 20;

fn hook_cmd(cli: &Cli, s: &Sysfs, a: &HookArgs) -> Result<Output> {
    use std::io::Read;
    require_root()?;
    let mut text = String::new();
    std::io::stdin()
        .take(MAX_STATE)
        .read_to_string(&mut text)
        .map_err(|source| Error::Io {
            path: PathBuf::from("(standard input)"),
            source,
        })?;
    let state = OciState::parse(&text)?;
    let paths = hook::Paths {
        state_dir: a.state_dir.clone(),
        proc_root: a.proc_root.clone(),
        cgroup_root: cli.sysfs_root.join("fs").join("cgroup"),
    };
    let result = match (a.stage, a.id, &a.pod) {
        (Stage::CreateContainer, None, None) => create_container(&a.proc_root, &state),
        (Stage::CreateContainer, _, _) => Err(Error::BadValue(
            "create-container takes no vGPU and no --pod: it serves the whole container".into(),
        )),
        (_, None, _) => Err(Error::BadValue(format!(
            "{} needs the vGPU's number",
            a.stage.arg()
        ))),
        (Stage::CreateRuntime, Some(id), None) => hook::create_runtime(s, &paths, id, &state),
        (Stage::Poststop, Some(id), None) => hook::poststop(s, &paths, id, &state),
        (Stage::CreateRuntime, Some(id), Some(pod)) => {
            hook::create_runtime_pod(s, &paths, id, &state, pod)
        }
        (Stage::Poststop, Some(id), Some(pod)) => Ok(format!(
            "vgpu{id}: pod {pod}'s vGPU stays until its claim is unprepared"
        )),
    };
    let what_vgpu =
        a.id.map_or_else(|| "/proc".to_string(), |id| format!("vgpu{id}"));
    // One line per hook run in the log (the kernel log by default): the
    // only place crun's users find why a container did not start.
    let (level, what) = match &result {
        Ok(m) => (hook::LOG_INFO, m.clone()),
        Err(e) => (
            hook::LOG_ERR,
            format!("{what_vgpu}: {e} (exit status {})", e.exit_code()),
        ),
    };
    hook::log(&a.log, level, a.stage, &state.id, &what);
    let msg = result?;
    Ok(Output {
        human: format!("{msg}\n"),
        json: json!({ "vgpu": a.id, "container": state.id, "stage": a.stage.oci_name(), "result": msg }),
        warnings: Vec::new(),
    })
}

/// `hook create-container`: the container's `/proc/driver/nvidia`
/// ([`crate::procview`]), from inside its mount namespace; refused from the
/// host's, where it would change the host's `/proc`.
fn create_container(proc_root: &std::path::Path, state: &OciState) -> Result<String> {
    if crate::procview::in_host_mount_ns(proc_root) == Some(true) {
        return Err(Error::Refused(
            "this runs in the host's mount namespace: vgpuctl hook create-container must be a createContainer hook, which runtimes run in the container's".into(),
        ));
    }
    let bundle = state.bundle.as_deref().ok_or_else(|| {
        Error::BadValue("the OCI state has no bundle: run this as a createContainer hook".into())
    })?;
    let root = crate::procview::container_root(bundle)?;
    crate::procview::apply(&root)
}

/// `check-driver`: whether the loaded `nvidia` module is NVIDIA's open
/// kernel module. vgpu is a GPL module that calls the driver's
/// `nvidia_get_rm_ops`; the kernel refuses to let a module that uses
/// GPL-only symbols link against a proprietary one ("module using
/// GPL-only symbols uses symbols nvidia_get_rm_ops from proprietary module
/// nvidia", `kernel/module/main.c`, `inherit_taint`), and the proprietary
/// driver taints the kernel with P, which `/sys/module/nvidia/taint` shows.
/// No `nvidia` module loaded: nothing to check (vgpu's own load then says
/// what is missing).
fn check_driver(cli: &Cli) -> Result<Output> {
    let module = cli.sysfs_root.join("module/nvidia");
    let read = |name: &str| {
        std::fs::read_to_string(module.join(name))
            .ok()
            .map(|v| v.trim().to_string())
    };
    let version = read("version").unwrap_or_else(|| "of unknown version".into());
    let (human, open) = match read("taint") {
        None if !module.exists() => ("nvidia: not loaded; nothing to check\n".to_string(), None),
        Some(t) if t.contains('P') => {
            return Err(Error::Driver(format!(
                "the loaded NVIDIA driver (nvidia {version}) is NVIDIA's proprietary kernel \
                 module; vgpu needs NVIDIA's open kernel modules (the \"open\" flavour, e.g. \
                 Debian's nvidia-open-kernel-dkms; Turing and newer GPUs), because the kernel \
                 does not let a GPL module use a proprietary module's symbols. See \
                 docs/operators.md, \"The NVIDIA driver\"."
            )))
        }
        _ => (
            format!("nvidia {version}: an open kernel module; vgpu can load against it\n"),
            Some(true),
        ),
    };
    Ok(Output {
        human,
        json: json!({ "nvidia_loaded": open.is_some(), "open": open, "version": version }),
        warnings: Vec::new(),
    })
}
