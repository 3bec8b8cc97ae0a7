// SPDX-License-Identifier: GPL-2.0

//! The OCI hooks that `vgpuctl cdi` puts in each device of its spec: a
//! container started with `--device vgpu.dev/gpu=N` gets vGPU `N` bound to
//! its own cgroup before its first process runs, sized from its environment
//! within what the admin set, and freed when it stops.
//!
//! The runtime (crun, runc) runs `vgpuctl hook create-runtime N` after it
//! has created the container (its init process exists, in its cgroup, and
//! has not run the container's program yet) and `vgpuctl hook poststop N`
//! after the container is deleted, each with the container's OCI state
//! (runtime-spec `State`: `id`, `pid`, `bundle`) on standard input.
//!
//! - **Start.** The container's cgroup is read from `/proc/PID/cgroup` (the
//!   cgroup v2 line, as the host sees it). vGPU `N` must be free: not bound
//!   to a cgroup, no open files, no other container holding it. If the
//!   container's environment (`process.env` of the bundle's `config.json`)
//!   sets `VGPU_MEMORY` and/or `VGPU_COMPUTE`, they must be within the
//!   vGPU's `memory_limit` and `compute_share` as the admin set them
//!   (`vgpuctl create`/`set`): a container may ask for less, never more.
//!   The hook writes a record (`/run/vgpu/hooks/vgpuN.json`: the
//!   container, its cgroup, the admin's values), applies the sizes and
//!   binds the cgroup. A step that fails undoes the earlier ones and removes
//!   the record, and the hook exits non-zero, so the runtime does not start
//!   the container and nothing is left half-bound.
//! - **Several vGPUs.** A container given several (one hook each) gets all
//!   of them from its first hook, or none: that hook reads the others from
//!   the bundle's `hooks.createRuntime`, checks them all, then binds them
//!   all; the later hooks find theirs bound to it. crun runs no poststop
//!   hook for a container whose creation failed, so a vGPU bound by an
//!   earlier hook would otherwise stay bound to a container that never
//!   ran.
//! - **Stop.** If the record names this container, the vGPU is unbound and
//!   the admin's values are put back (each only if still what the hook set:
//!   an admin's change in between wins), and the record is removed. A
//!   container refused at start has no record, so its poststop leaves the
//!   vGPU of the container that holds it alone.
//! - **A container that vanished** without its poststop (a runtime killed
//!   mid-way): its record names a cgroup with no process left; the next
//!   start on that vGPU frees it first.
//!
//! All of this runs under an exclusive lock of `/run/vgpu/hooks/lock`, so
//! two containers started at once cannot both take one vGPU.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::model::VgpuInfo;
use crate::sysfs::Sysfs;
use crate::units::{self, format_limit, Limit};

/// Where the hooks keep their records and lock.
pub const DEFAULT_STATE_DIR: &str = "/run/vgpu/hooks";
/// The container's memory ceiling, if it wants less than the admin's.
pub const MEMORY_ENV: &str = "VGPU_MEMORY";
/// The container's compute share, if it wants less than the admin's.
pub const COMPUTE_ENV: &str = "VGPU_COMPUTE";

/// Log level (`<6>`, KERN_INFO) of a hook that did its work.
pub const LOG_INFO: u8 = 6;
/// Log level (`<3>`, KERN_ERR) of a hook that refused or failed.
pub const LOG_ERR: u8 = 3;

/// Writes one line about a hook run to `path` (normally `/dev/kmsg`, where
/// `<LEVEL>` sets the kernel log level), as `vgpuctl hook: STAGE container
/// ID: WHAT`. Best effort: a log that cannot be written does not change
/// the hook's outcome.
pub fn log(path: &Path, level: u8, stage: Stage, container: &str, what: &str) {
    let line = format!(
        "<{level}>vgpuctl hook: {} container {}: {}\n",
        stage.oci_name(),
        short(container),
        what.replace('\n', " ")
    );
    if let Ok(mut f) = fs::OpenOptions::new().append(true).open(path) {
        // One write: /dev/kmsg takes one record per write.
        let _ = f.write_all(line.as_bytes());
    }
}

/// The hook names of the OCI runtime spec that `vgpuctl hook` serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Stage {
    /// `createRuntime`: bind.
    CreateRuntime,
    /// `createContainer`: the container's `/proc/driver/nvidia`
    /// ([`crate::procview`]); spec-wide, no vGPU.
    CreateContainer,
    /// `poststop`: free.
    Poststop,
}

impl Stage {
    /// The OCI (and CDI `hookName`) name.
    pub fn oci_name(self) -> &'static str {
        match self {
            Stage::CreateRuntime => "createRuntime",
            Stage::CreateContainer => "createContainer",
            Stage::Poststop => "poststop",
        }
    }

    /// The `vgpuctl hook` subcommand.
    pub fn arg(self) -> &'static str {
        match self {
            Stage::CreateRuntime => "create-runtime",
            Stage::CreateContainer => "create-container",
            Stage::Poststop => "poststop",
        }
    }
}

/// The fields of the OCI state (runtime-spec `State`) the hooks use.
#[derive(Debug, Deserialize)]
pub struct OciState {
    /// The container's ID.
    pub id: String,
    /// Its init process, on the host (absent once stopped).
    #[serde(default)]
    pub pid: Option<i64>,
    /// Its bundle directory (holds `config.json`).
    #[serde(default)]
    pub bundle: Option<PathBuf>,
}

impl OciState {
    /// Parses the state a runtime wrote to the hook's standard input.
    pub fn parse(text: &str) -> Result<Self> {
        let st: Self = serde_json::from_str(text).map_err(|e| {
            Error::BadValue(format!("standard input is not an OCI container state: {e}"))
        })?;
        if st.id.is_empty() {
            return Err(Error::BadValue("the OCI state has an empty id".into()));
        }
        Ok(st)
    }
}

/// Where the hooks look, besides sysfs (tests point them at fake trees).
#[derive(Clone, Debug)]
pub struct Paths {
    /// Records and lock ([`DEFAULT_STATE_DIR`]).
    pub state_dir: PathBuf,
    /// `/proc`.
    pub proc_root: PathBuf,
    /// The cgroup2 mount, `/sys/fs/cgroup`.
    pub cgroup_root: PathBuf,
}

/// What the container asked for in its environment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Request {
    /// `VGPU_MEMORY`.
    pub memory: Option<Limit>,
    /// `VGPU_COMPUTE`, in percent.
    pub compute: Option<u32>,
}

impl Request {
    /// Reads `VGPU_MEMORY` and `VGPU_COMPUTE` from an OCI `process.env`
    /// list (`KEY=VALUE`; the last one of a name wins, as in execve).
    pub fn from_env(env: &[String]) -> Result<Self> {
        let last = |name: &str| {
            env.iter()
                .rev()
                .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
        };
        let memory = last(MEMORY_ENV)
            .map(|v| {
                units::parse_size(v)
                    .map_err(|e| Error::BadValue(format!("{MEMORY_ENV}={v:?}: {}", bare(&e))))
            })
            .transpose()?;
        let compute = last(COMPUTE_ENV)
            .map(|v| {
                units::parse_share(v, 100)
                    .map_err(|e| Error::BadValue(format!("{COMPUTE_ENV}={v:?}: {}", bare(&e))))
            })
            .transpose()?;
        Ok(Self { memory, compute })
    }
}

/// The message of a [`Error::BadValue`] without its "bad value: " prefix.
fn bare(e: &Error) -> String {
    match e {
        Error::BadValue(s) => s.clone(),
        e => e.to_string(),
    }
}

/// The record of a vGPU a hook bound (`STATE_DIR/vgpuN.json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Binding {
    /// The container's ID.
    container: String,
    /// Its cgroup (what `cgroup` was set to).
    cgroup: String,
    /// `memory_limit` before the container, as read.
    admin_memory_limit: String,
    /// What the hook wrote to `memory_limit` (`None`: left alone).
    memory_limit: Option<String>,
    /// `compute_share` before the container, as read.
    admin_compute_share: Option<String>,
    /// What the hook wrote to `compute_share` (`None`: left alone).
    compute_share: Option<String>,
}

/// An exclusive `flock` of `STATE_DIR/lock`, held until dropped (closing
/// the file releases it).
struct Lock {
    _file: fs::File,
}

impl Lock {
    fn take(dir: &Path) -> Result<Self> {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|source| Error::Io {
                path: dir.to_path_buf(),
                source,
            })?;
        let path = dir.join("lock");
        let f = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&path)
            .map_err(|source| Error::Io {
                path: path.clone(),
                source,
            })?;
        // SAFETY: `f` is an open file for the whole call; flock only reads
        // the descriptor number and blocks until the lock is granted.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(Error::Io {
                path,
                source: io::Error::last_os_error(),
            });
        }
        Ok(Self { _file: f })
    }
}

fn record_path(dir: &Path, id: u32) -> PathBuf {
    dir.join(format!("vgpu{id}.json"))
}

fn read_record(dir: &Path, id: u32) -> Result<Option<Binding>> {
    let path = record_path(dir, id);
    match fs::read_to_string(&path) {
        Ok(t) => serde_json::from_str(&t).map(Some).map_err(|e| {
            Error::Unexpected(format!(
                "{}: not a vgpuctl hook record ({e}); remove it once vGPU {id} is free",
                path.display()
            ))
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(Error::Io { path, source }),
    }
}

fn write_record(dir: &Path, id: u32, b: &Binding) -> Result<()> {
    let path = record_path(dir, id);
    let tmp = dir.join(format!(".vgpu{id}.json.tmp"));
    let text = serde_json::to_string(b).map_err(|e| Error::Unexpected(format!("JSON: {e}")))?;
    let io_err = |source| Error::Io {
        path: path.clone(),
        source,
    };
    let mut f = fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(io_err)?;
    f.write_all(text.as_bytes()).map_err(io_err)?;
    f.sync_all().map_err(io_err)?;
    fs::rename(&tmp, &path).map_err(io_err)
}

fn remove_record(dir: &Path, id: u32) -> Result<()> {
    let path = record_path(dir, id);
    match fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(Error::Io { path, source }),
    }
}

/// The cgroup v2 path of process `pid` as the host sees it (the `0::` line
/// of `/proc/PID/cgroup`).
pub fn cgroup_of(proc_root: &Path, pid: i64) -> Result<String> {
    let path = proc_root.join(pid.to_string()).join("cgroup");
    let text = fs::read_to_string(&path).map_err(|source| Error::Io {
        path: path.clone(),
        source,
    })?;
    let cg = text
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .ok_or_else(|| {
            Error::Unsupported(format!(
                "{} has no cgroup v2 line: vgpu binds vGPUs to cgroup v2 cgroups",
                path.display()
            ))
        })?;
    if vgpu_logic::config::parse_cgroup_path(cg.as_bytes()).is_err() {
        return Err(Error::Unexpected(format!(
            "process {pid} is in cgroup {cg:?}, which vgpu cannot bind"
        )));
    }
    if cg == "/" {
        return Err(Error::Refused(
            "the container runs in the root cgroup: binding a vGPU there would let every process on the host open it (run it with a cgroup of its own, e.g. podman's default)".to_string(),
        ));
    }
    Ok(cg.to_string())
}

/// Whether cgroup `cg` still has a process (`cgroup.procs` not empty).
fn cgroup_alive(cgroup_root: &Path, cg: &str) -> bool {
    let procs = cgroup_root
        .join(cg.trim_start_matches('/'))
        .join("cgroup.procs");
    fs::read_to_string(procs).is_ok_and(|t| !t.trim().is_empty())
}

/// What the hooks read of the bundle's `config.json`: the container's
/// environment and the vGPUs its `createRuntime` hooks name.
#[derive(Debug, Default)]
struct Bundle {
    /// `process.env`.
    env: Vec<String>,
    /// `N` of every `createRuntime` hook `... hook create-runtime N`.
    vgpus: Vec<u32>,
}

impl Bundle {
    fn read(bundle: &Path) -> Result<Self> {
        #[derive(Deserialize)]
        struct Config {
            #[serde(default)]
            process: Option<Process>,
            #[serde(default)]
            hooks: Option<Hooks>,
        }
        #[derive(Deserialize)]
        struct Process {
            #[serde(default)]
            env: Vec<String>,
        }
        #[derive(Deserialize)]
        struct Hooks {
            #[serde(default, rename = "createRuntime")]
            create_runtime: Vec<Hook>,
        }
        #[derive(Deserialize)]
        struct Hook {
            #[serde(default)]
            args: Vec<String>,
        }
        let path = bundle.join("config.json");
        let text = fs::read_to_string(&path).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
        let cfg: Config = serde_json::from_str(&text).map_err(|e| {
            Error::Unexpected(format!("{}: not an OCI config ({e})", path.display()))
        })?;
        let mut vgpus: Vec<u32> = cfg
            .hooks
            .map(|h| h.create_runtime)
            .unwrap_or_default()
            .iter()
            .filter_map(|h| match h.args.as_slice() {
                [_, hook, stage, n, ..]
                    if hook == "hook" && stage == Stage::CreateRuntime.arg() =>
                {
                    n.parse().ok()
                }
                _ => None,
            })
            .collect();
        vgpus.sort_unstable();
        vgpus.dedup();
        Ok(Self {
            env: cfg.process.map(|p| p.env).unwrap_or_default(),
            vgpus,
        })
    }
}

fn short(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

/// Whether `uid` is a Kubernetes object UID as the API server makes them
/// (RFC 4122 text: lower-case hex digits and dashes); anything else is
/// refused before it names a cgroup, a file or a CDI device.
pub fn valid_uid(uid: &str) -> bool {
    !uid.is_empty()
        && uid.len() <= 64
        && uid
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// The cgroup of pod `uid` that a container's cgroup `cg` lies in: the
/// nearest ancestor-or-self whose last component names the pod the way the
/// kubelet names pod cgroups: `pod<UID>` with the cgroupfs driver,
/// `kubepods[-<qos>]-pod<UID, '-' as '_'>.slice` with the systemd driver
/// (kubelet `pkg/kubelet/cm/pod_container_manager_linux.go` and
/// `cgroup_manager_linux.go`, Kubernetes 1.36).
pub fn pod_cgroup(cg: &str, uid: &str) -> Result<String> {
    if !valid_uid(uid) {
        return Err(Error::BadValue(format!("{uid:?} is not a pod UID")));
    }
    let plain = format!("pod{uid}");
    let systemd = format!("-pod{}.slice", uid.replace('-', "_"));
    let parts: Vec<&str> = cg.split('/').collect();
    for end in (1..=parts.len()).rev() {
        let last = parts[end - 1];
        if last == plain || last.ends_with(&systemd) {
            return Ok(parts[..end].join("/"));
        }
    }
    Err(Error::Refused(format!(
        "the container's cgroup {cg} is not in pod {uid}'s cgroup: the claim was prepared for another pod"
    )))
}

/// `createRuntime` for vGPU `id` of a Kubernetes claim prepared for pod
/// `pod` (`--pod UID`, written by the DRA plugin): binds the vGPU to the
/// pod's cgroup, found above the container's own ([`pod_cgroup`]). The
/// first container of the pod binds it; the others find it bound to their
/// pod. A vGPU bound anywhere else is refused. The plugin removes the vGPU
/// when the claim is unprepared: there is no poststop work.
pub fn create_runtime_pod(
    s: &Sysfs,
    p: &Paths,
    id: u32,
    state: &OciState,
    pod: &str,
) -> Result<String> {
    let pid = state.pid.filter(|&p| p > 0).ok_or_else(|| {
        Error::BadValue("the OCI state has no pid: run this as a createRuntime hook".into())
    })?;
    let cg = cgroup_of(&p.proc_root, pid)?;
    let pod_cg = pod_cgroup(&cg, pod)?;
    s.check_exists(id)?;
    s.check_takes_over_nodes()?;
    let _lock = Lock::take(&p.state_dir)?;
    let info = VgpuInfo::read(s, id)?;
    match info.cgroup.as_deref() {
        Some(c) if c == pod_cg => Ok(format!("vgpu{id}: already bound to pod {pod} ({pod_cg})")),
        Some(c) => Err(Error::InUse(format!(
            "vGPU {id} is bound to {c}, not to pod {pod} ({pod_cg})"
        ))),
        None => {
            s.write_attr(id, "cgroup", &pod_cg)?;
            Ok(format!("vgpu{id}: bound to pod {pod} ({pod_cg})"))
        }
    }
}

/// `createRuntime` for vGPU `id`: binds every vGPU the container's hooks
/// name (`id` among them) to its cgroup, all or none, so that a container
/// refused on one of its vGPUs holds none (crun runs no poststop hook for
/// a container whose creation failed). The hooks of its other vGPUs then
/// find them bound to it. Returns what it did, for the log.
pub fn create_runtime(s: &Sysfs, p: &Paths, id: u32, state: &OciState) -> Result<String> {
    let pid = state.pid.filter(|&p| p > 0).ok_or_else(|| {
        Error::BadValue("the OCI state has no pid: run this as a createRuntime hook".into())
    })?;
    let bundle_dir = state.bundle.as_deref().ok_or_else(|| {
        Error::BadValue("the OCI state has no bundle: run this as a createRuntime hook".into())
    })?;
    let bundle = Bundle::read(bundle_dir)?;
    let req = Request::from_env(&bundle.env)?;
    let cgroup = cgroup_of(&p.proc_root, pid)?;
    let mut ids = bundle.vgpus;
    if !ids.contains(&id) {
        ids.push(id);
        ids.sort_unstable();
    }
    for &v in &ids {
        s.check_exists(v)?;
    }
    s.check_takes_over_nodes()?;

    let _lock = Lock::take(&p.state_dir)?;
    // Check every vGPU first; nothing is written until all are free.
    let mut plan = Vec::new();
    for &v in &ids {
        if let Some(b) = plan_one(s, p, v, state, &cgroup, req)? {
            plan.push((v, b));
        }
    }
    if plan.is_empty() {
        return Ok(format!(
            "vgpu{id}: already bound to container {} ({cgroup})",
            short(&state.id)
        ));
    }
    let mut done: Vec<(u32, &Binding)> = Vec::new();
    for (v, b) in &plan {
        // The record first: if this process dies half-way, the next start
        // or the poststop finds what to undo.
        let r = write_record(&p.state_dir, *v, b).and_then(|()| {
            done.push((*v, b));
            apply(s, *v, b)
        });
        if let Err(e) = r {
            let mut rollback = Vec::new();
            for (v, b) in done.iter().rev() {
                rollback.extend(release(s, *v, b));
                if let Err(e) = remove_record(&p.state_dir, *v) {
                    rollback.push(e);
                }
            }
            return Err(if rollback.is_empty() {
                e
            } else {
                Error::RollbackFailed {
                    error: Box::new(e),
                    rollback,
                }
            });
        }
    }
    let names: Vec<String> = plan.iter().map(|(v, _)| format!("vgpu{v}")).collect();
    let mut msg = format!(
        "{}: bound to container {} (cgroup {cgroup})",
        names.join(", "),
        short(&state.id)
    );
    if let Some(m) = req.memory {
        msg.push_str(&format!(", memory {}", format_limit(m)));
    }
    if let Some(c) = req.compute {
        msg.push_str(&format!(", compute {c}%"));
    }
    Ok(msg)
}

/// Whether vGPU `v` can go to the container of `state`: `None` if it is
/// already bound to it, else the binding to make; an error if it is held
/// or the request is over its admin's values. A record whose container has
/// no process left is undone first.
fn plan_one(
    s: &Sysfs,
    p: &Paths,
    v: u32,
    state: &OciState,
    cgroup: &str,
    req: Request,
) -> Result<Option<Binding>> {
    if let Some(old) = read_record(&p.state_dir, v)? {
        if old.container == state.id {
            return Ok(None);
        }
        if cgroup_alive(&p.cgroup_root, &old.cgroup) {
            return Err(Error::InUse(format!(
                "vGPU {v} is in use by container {} (cgroup {}): a vGPU serves one container at a time",
                short(&old.container),
                old.cgroup
            )));
        }
        // Its container is gone without a poststop: free it first.
        free(s, p, v, &old)?;
    }
    let info = VgpuInfo::read(s, v)?;
    if let Some(bound) = &info.cgroup {
        return Err(Error::InUse(format!(
            "vGPU {v} is bound to cgroup {bound} by its admin (`vgpuctl set {v} --cgroup ''` frees it for containers)"
        )));
    }
    if info.users > 0 {
        return Err(Error::InUse(format!(
            "vGPU {v} still has {} open file(s) from an earlier user",
            info.users
        )));
    }
    let admin = info.limit();
    let memory_limit = match req.memory {
        None => None,
        Some(m) => {
            let over = match (m, admin) {
                (_, Limit::Max) => false,
                (Limit::Max, Limit::Bytes(_)) => true,
                (Limit::Bytes(a), Limit::Bytes(b)) => a > b,
            };
            if over {
                return Err(Error::OverBound(format!(
                    "{MEMORY_ENV}={} is over vGPU {v}'s memory limit, {} (set by its admin)",
                    format_limit(m),
                    format_limit(admin)
                )));
            }
            Some(m.sysfs())
        }
    };
    let compute_share = match req.compute {
        None => None,
        Some(c) => {
            let admin = info.compute_share.ok_or_else(|| {
                Error::Unsupported(format!("{COMPUTE_ENV}: this vgpu has no compute shares"))
            })?;
            if c > admin {
                return Err(Error::OverBound(format!(
                    "{COMPUTE_ENV}={c}% is over vGPU {v}'s compute share, {admin}% (set by its admin)"
                )));
            }
            Some(c.to_string())
        }
    };
    Ok(Some(Binding {
        container: state.id.clone(),
        cgroup: cgroup.to_string(),
        admin_memory_limit: admin.sysfs(),
        memory_limit,
        admin_compute_share: info.compute_share.map(|c| c.to_string()),
        compute_share,
    }))
}

/// Writes the container's sizes, then binds its cgroup (last: until then
/// nobody can open the vGPU).
fn apply(s: &Sysfs, id: u32, b: &Binding) -> Result<()> {
    if let Some(m) = &b.memory_limit {
        s.write_attr(id, "memory_limit", m)?;
    }
    if let Some(c) = &b.compute_share {
        s.write_attr(id, "compute_share", c)?;
    }
    s.write_attr(id, "cgroup", &b.cgroup)
}

/// Undoes [`apply`]: unbinds first (nobody new may open), then puts the
/// admin's values back; each only where the vGPU still has what the hook
/// wrote (an admin's change in between wins). Every step is tried; returns
/// the errors of those that failed.
fn release(s: &Sysfs, id: u32, b: &Binding) -> Vec<Error> {
    if !s.exists(id) {
        return Vec::new();
    }
    let mut errs = Vec::new();
    let mut undo = |name: &str, ours: Option<&str>, admin: Option<&str>| {
        let (Some(ours), Some(admin)) = (ours, admin) else {
            return;
        };
        match s.read_attr(id, name) {
            Ok(Some(now)) if now == ours => {
                if let Err(e) = s.write_attr(id, name, admin) {
                    errs.push(e);
                }
            }
            Ok(_) => {}
            Err(e) => errs.push(e),
        }
    };
    undo("cgroup", Some(&b.cgroup), Some(""));
    undo(
        "memory_limit",
        b.memory_limit.as_deref(),
        Some(&b.admin_memory_limit),
    );
    undo(
        "compute_share",
        b.compute_share.as_deref(),
        b.admin_compute_share.as_deref(),
    );
    errs
}

/// [`release`] and the removal of the record, as one step that fails if
/// any part of it did.
fn free(s: &Sysfs, p: &Paths, id: u32, b: &Binding) -> Result<()> {
    let mut errs = release(s, id, b);
    if let Err(e) = remove_record(&p.state_dir, id) {
        errs.push(e);
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(Error::RollbackFailed {
            error: Box::new(Error::Unexpected(format!("freeing vgpu{id}"))),
            rollback: errs,
        })
    }
}

/// `poststop`: frees vGPU `id` if the container of `state` holds it;
/// returns what it did, for the log.
pub fn poststop(s: &Sysfs, p: &Paths, id: u32, state: &OciState) -> Result<String> {
    let _lock = Lock::take(&p.state_dir)?;
    let Some(rec) = read_record(&p.state_dir, id)? else {
        return Ok(format!("vgpu{id}: not bound by a hook; nothing to do"));
    };
    if rec.container != state.id {
        return Ok(format!(
            "vgpu{id}: held by container {}, not {}; left alone",
            short(&rec.container),
            short(&state.id)
        ));
    }
    free(s, p, id, &rec)?;
    Ok(format!(
        "vgpu{id}: freed from container {}",
        short(&state.id)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn requests_from_the_environment() {
        assert_eq!(
            Request::from_env(&env(&["PATH=/bin"])).unwrap(),
            Request::default()
        );
        assert_eq!(
            Request::from_env(&env(&["VGPU_MEMORY=512MiB", "VGPU_COMPUTE=30%"])).unwrap(),
            Request {
                memory: Some(Limit::Bytes(512 << 20)),
                compute: Some(30)
            }
        );
        // The last one wins, as for execve; names must match whole.
        assert_eq!(
            Request::from_env(&env(&[
                "VGPU_MEMORY=1GiB",
                "VGPU_MEMORY=2GiB",
                "VGPU_MEMORYX=1"
            ]))
            .unwrap()
            .memory,
            Some(Limit::Bytes(2 << 30))
        );
        for (bad, want) in [
            (
                "VGPU_MEMORY=lots",
                "VGPU_MEMORY=\"lots\": \"lots\" is not a size",
            ),
            ("VGPU_MEMORY=", "VGPU_MEMORY=\"\""),
            (
                "VGPU_COMPUTE=30.5%",
                "VGPU_COMPUTE=\"30.5%\": \"30.5%\" is not a compute share",
            ),
            ("VGPU_COMPUTE=101%", "compute share 101% is over 100%"),
        ] {
            let e = Request::from_env(&env(&[bad])).unwrap_err().to_string();
            assert!(e.contains(want), "{bad}: {e}");
        }
    }

    #[test]
    fn oci_state() {
        let st = OciState::parse(
            r#"{"ociVersion":"1.0.2","id":"abc","status":"created","pid":42,"bundle":"/b","annotations":{}}"#,
        )
        .unwrap();
        assert_eq!((st.id.as_str(), st.pid), ("abc", Some(42)));
        assert_eq!(st.bundle.as_deref(), Some(Path::new("/b")));
        // poststop: no pid.
        assert_eq!(
            OciState::parse(r#"{"id":"abc","status":"stopped"}"#)
                .unwrap()
                .pid,
            None
        );
        for bad in ["", "{}", r#"{"id":""}"#, "[1]"] {
            assert!(OciState::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn cgroup_lines() {
        let d = tempfile::tempdir().unwrap();
        let put = |pid: &str, text: &str| {
            fs::create_dir_all(d.path().join(pid)).unwrap();
            fs::write(d.path().join(pid).join("cgroup"), text).unwrap();
        };
        put("1", "0::/libpod_parent/libpod-abc\n");
        put("2", "12:memory:/x\n1:name=systemd:/x\n");
        put("3", "0::/\n");
        put("4", "0::/a/../b\n");
        assert_eq!(cgroup_of(d.path(), 1).unwrap(), "/libpod_parent/libpod-abc");
        assert!(cgroup_of(d.path(), 2)
            .unwrap_err()
            .to_string()
            .contains("no cgroup v2 line"));
        assert!(cgroup_of(d.path(), 3)
            .unwrap_err()
            .to_string()
            .contains("root cgroup"));
        assert!(cgroup_of(d.path(), 4).is_err());
        assert!(cgroup_of(d.path(), 5).is_err());
    }
}
