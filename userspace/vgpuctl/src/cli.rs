// SPDX-License-Identifier: GPL-2.0

//! The command line.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::placement::Policy;
use crate::sysfs::MAX_VGPU;
use crate::units::{self, Limit};

/// Create, configure and inspect vgpu.ko's virtual GPUs.
///
/// Reads and writes /sys/class/vgpu (changes need root). Sizes: 6GiB, 1.5GiB,
/// 512MiB, bytes or max. Shares: 30%.
#[derive(Debug, Parser)]
#[command(name = "vgpuctl", version)]
pub struct Cli {
    /// Root of sysfs (tests point this at a fake tree).
    #[arg(long, global = true, env = "VGPU_SYSFS_ROOT", default_value = "/sys")]
    pub sysfs_root: PathBuf,
    /// Where the host's device nodes are: /dev/nvidiaK (to count GPUs when
    /// the module does not list them), the nodes of the CDI spec (cdi checks
    /// that they exist).
    #[arg(long, global = true, env = "VGPU_DEV_ROOT", default_value = "/dev")]
    pub dev_root: PathBuf,
    /// Memory of each GPU whose size the module does not report.
    #[arg(long, global = true, env = "VGPU_GPU_MEMORY", value_name = "SIZE", value_parser = bytes_arg)]
    pub gpu_memory: Option<u64>,
    /// Print JSON instead of tables.
    #[arg(long, global = true)]
    pub json: bool,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create vGPUs (one, or one per GPU with --gpus) and configure them;
    /// nothing is left behind if a step fails. --compute-policy and
    /// --period-us set the GPUs' (per GPU, for all vGPUs on them).
    Create(CreateArgs),
    /// Remove vGPUs (refused while their node is open).
    Remove {
        /// vGPU numbers.
        #[arg(required = true, value_parser = id_arg)]
        ids: Vec<u32>,
    },
    /// Change a vGPU's settings (--compute-policy and --period-us: its GPU's,
    /// for all vGPUs on that GPU).
    Set(SetArgs),
    /// Freeze a vGPU's work: its TSGs are disabled and preempted until
    /// `thaw` (its memory stays charged, its processes keep running on the
    /// CPU).
    Freeze {
        /// vGPU number.
        #[arg(value_parser = id_arg)]
        id: u32,
    },
    /// Thaw a vGPU frozen with `freeze`: its work runs again.
    Thaw {
        /// vGPU number.
        #[arg(value_parser = id_arg)]
        id: u32,
    },
    /// Show one vGPU.
    Show {
        /// vGPU number.
        #[arg(value_parser = id_arg)]
        id: u32,
    },
    /// List all vGPUs.
    List,
    /// Per physical GPU: its vGPUs, memory promised against its size, use.
    Status,
    /// Write a CDI spec with one device per vGPU (and the params file it mounts).
    Cdi(CdiArgs),
    /// Serve Prometheus metrics at http://ADDR:PORT/metrics (or print them once with --once).
    Exporter(ExporterArgs),
    /// Run by the container runtime, as the OCI hooks of `vgpuctl cdi`'s
    /// spec: bind vGPU N to the container whose OCI state is on standard
    /// input (create-runtime, sized by its VGPU_MEMORY and VGPU_COMPUTE),
    /// or free it (poststop); put the container's /proc/driver/nvidia in
    /// place (create-container, no N).
    Hook(HookArgs),
    /// Check that the loaded NVIDIA driver is one vgpu can load against:
    /// NVIDIA's open kernel modules. Run by modprobe before vgpu (the
    /// modprobe.d file's `install` line), so that a proprietary driver gets
    /// this message instead of the loader's symbol error.
    CheckDriver,
    /// The guard: a BPF LSM program that refuses NVIDIA's driver files
    /// passed into a container bound to a vGPU (SCM_RIGHTS, pidfd_getfd).
    /// Needs BPF LSM active (`bpf` among the LSMs the kernel lists).
    Guard {
        /// load: attach it (if not yet) and fill its map from sysfs;
        /// sync: refill the map; status: report; unload: detach it.
        #[arg(value_enum, default_value = "status")]
        action: GuardAction,
    },
}

/// What `vgpuctl guard` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum GuardAction {
    /// Attach the program (if not yet) and fill its map from sysfs.
    Load,
    /// Refill the map of bound cgroups from sysfs.
    Sync,
    /// Report whether it is available and loaded, and what it covers.
    Status,
    /// Detach the program and drop its map.
    Unload,
}

/// Compute scheduling policies of the module (per physical GPU).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ComputePolicy {
    /// Each share is a cap: time nobody claims is left idle.
    Fixed,
    /// Idle vGPUs' time goes to busy ones, in proportion to their shares.
    WorkConserving,
}

impl ComputePolicy {
    /// As written to `gpuK/compute_policy`.
    pub fn sysfs(self) -> &'static str {
        match self {
            ComputePolicy::Fixed => vgpu_logic::compute::Policy::Fixed.name(),
            ComputePolicy::WorkConserving => vgpu_logic::compute::Policy::WorkConserving.name(),
        }
    }
}

/// The scheduling periods the module accepts, in microseconds.
pub const PERIOD_US: std::ops::RangeInclusive<u64> =
    vgpu_logic::compute::MIN_PERIOD_US as u64..=vgpu_logic::compute::MAX_PERIOD_US as u64;

/// `vgpuctl create`.
#[derive(Debug, Args)]
pub struct CreateArgs {
    /// cgroup v2 path (from the cgroup2 root) allowed to open the vGPUs, e.g. /kubepods/pod1.
    #[arg(long)]
    pub cgroup: Option<String>,
    /// Memory ceiling (the total with --gpus, split evenly).
    #[arg(long, value_name = "SIZE", default_value = "max", value_parser = size_arg)]
    pub memory: Limit,
    /// Compute share, e.g. 30% (the total with --gpus, split evenly).
    #[arg(long, value_name = "SHARE")]
    pub compute: Option<String>,
    /// Compute priority level, 0 (best-effort: runs only in time higher
    /// levels leave idle) to 3; higher levels preempt lower ones on the
    /// same GPU (default: the module's, 1). With --gpus, for each vGPU.
    #[arg(long, value_name = "LEVEL", value_parser = priority_arg)]
    pub priority: Option<u32>,
    /// Compute policy of the GPU(s) the new vGPUs go on. Per GPU: it
    /// applies to every vGPU on that GPU.
    #[arg(long, value_enum)]
    pub compute_policy: Option<ComputePolicy>,
    /// Scheduling period of the GPU(s) the new vGPUs go on, in microseconds
    /// (1000 to 1000000). Per GPU: it applies to every vGPU on that GPU.
    #[arg(long, value_name = "US", value_parser = period_arg)]
    pub period_us: Option<u64>,
    /// Put the vGPU on GPU K (/dev/nvidiaK).
    #[arg(long, value_name = "K", conflicts_with = "gpus")]
    pub gpu: Option<u32>,
    /// Create this many vGPUs, each on its own GPU.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=255))]
    pub gpus: Option<u32>,
    /// How to choose GPUs.
    #[arg(long, value_enum, default_value_t = Policy::Binpack)]
    pub policy: Policy,
    /// vGPU numbers to use (comma-separated, one per vGPU); default: the lowest free.
    #[arg(long, value_name = "N[,N...]", value_delimiter = ',', value_parser = id_arg)]
    pub id: Vec<u32>,
    /// With --gpu: skip the memory and compute checks.
    #[arg(long)]
    pub force: bool,
}

/// `vgpuctl set`.
#[derive(Debug, Args)]
pub struct SetArgs {
    /// vGPU number.
    #[arg(value_parser = id_arg)]
    pub id: u32,
    /// Memory ceiling.
    #[arg(long, value_name = "SIZE", value_parser = size_arg)]
    pub memory: Option<Limit>,
    /// Compute share, e.g. 30%.
    #[arg(long, value_name = "SHARE")]
    pub compute: Option<String>,
    /// Compute priority level, 0 (best-effort: runs only in time higher
    /// levels leave idle) to 3; higher levels preempt lower ones on the
    /// same GPU.
    #[arg(long, value_name = "LEVEL", value_parser = priority_arg)]
    pub priority: Option<u32>,
    /// Compute policy of the vGPU's GPU (with --gpu, of the new one). Per
    /// GPU: it applies to every vGPU on that GPU.
    #[arg(long, value_enum)]
    pub compute_policy: Option<ComputePolicy>,
    /// Scheduling period of the vGPU's GPU (with --gpu, of the new one), in
    /// microseconds (1000 to 1000000). Per GPU: it applies to every vGPU on
    /// that GPU.
    #[arg(long, value_name = "US", value_parser = period_arg)]
    pub period_us: Option<u64>,
    /// Bind to this cgroup v2 path ("" unbinds).
    #[arg(long)]
    pub cgroup: Option<String>,
    /// Move to GPU K (refused while open).
    #[arg(long, value_name = "K")]
    pub gpu: Option<u32>,
    /// Skip the memory and compute checks.
    #[arg(long)]
    pub force: bool,
}

/// `vgpuctl cdi`.
#[derive(Debug, Args)]
pub struct CdiArgs {
    /// Write the spec here (e.g. /etc/cdi/vgpu.json) instead of stdout.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// CDI kind, vendor/class.
    #[arg(long, default_value = crate::cdi::DEFAULT_KIND)]
    pub kind: String,
    /// No effect, kept for old scripts: the spec's createContainer hook
    /// rewrites the container's /proc/driver/nvidia/params; no file is
    /// written on the host.
    #[arg(long, value_name = "PATH", hide = true)]
    pub params_file: Option<PathBuf>,
    /// No effect, kept for old scripts (see --params-file).
    #[arg(long, value_name = "PATH", hide = true)]
    pub host_params: Option<PathBuf>,
    /// The vgpuctl the container runtime runs for the spec's hooks
    /// (default: this program).
    #[arg(long, value_name = "PATH", conflicts_with = "no_hooks")]
    pub hook_path: Option<PathBuf>,
    /// Write no hooks: vGPUs are bound to cgroups by hand
    /// (`vgpuctl set N --cgroup`) before their containers start, and
    /// containers see the driver's own /proc/driver/nvidia/params.
    #[arg(long)]
    pub no_hooks: bool,
    /// No effect, kept for old scripts: the spec always has /dev/nvidia-uvm
    /// (vgpu's UVM proxy for the container), never /dev/nvidia-uvm-tools.
    #[arg(long)]
    pub with_uvm: bool,
}

/// `vgpuctl hook`.
#[derive(Debug, Args)]
pub struct HookArgs {
    /// Which OCI hook this is.
    #[arg(value_enum)]
    pub stage: crate::hook::Stage,
    /// The vGPU (the CDI device's name); none for create-container.
    #[arg(value_parser = id_arg)]
    pub id: Option<u32>,
    /// Where the hooks keep their records and lock.
    #[arg(long, value_name = "DIR", default_value = crate::hook::DEFAULT_STATE_DIR)]
    pub state_dir: PathBuf,
    /// The vGPU belongs to a Kubernetes claim prepared for this pod (the
    /// DRA plugin writes it): bind it to the pod's cgroup, not the
    /// container's; nothing to do at poststop.
    #[arg(long, value_name = "UID")]
    pub pod: Option<String>,
    /// Root of procfs (tests point this at a fake tree).
    #[arg(long, value_name = "DIR", default_value = "/proc", hide = true)]
    pub proc_root: PathBuf,
    /// Where each hook logs what it did or why it refused: the kernel log
    /// by default (crun sends hooks' own output to /dev/null; runc shows
    /// their standard error too).
    #[arg(long, value_name = "FILE", default_value = "/dev/kmsg")]
    pub log: PathBuf,
}

/// `vgpuctl exporter`.
#[derive(Debug, Args)]
pub struct ExporterArgs {
    /// Address and port to listen on (e.g. 0.0.0.0:9835 for all interfaces; port 0: any free one).
    #[arg(long, value_name = "ADDR:PORT", default_value = crate::exporter::DEFAULT_LISTEN)]
    pub listen: String,
    /// Print the metrics to stdout once and exit (for tests, cron, node_exporter's textfile collector).
    #[arg(long)]
    pub once: bool,
    /// Seconds a client has to send its request (and to take the response).
    #[arg(long, value_name = "SECS", default_value = "10", value_parser = secs_arg)]
    pub timeout: std::time::Duration,
}

fn secs_arg(s: &str) -> Result<std::time::Duration, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 3600.0 => Ok(std::time::Duration::from_secs_f64(v)),
        _ => Err(format!(
            "{s:?} is not a number of seconds between 0 and 3600"
        )),
    }
}

/// The priority levels the module accepts.
pub const PRIORITY: std::ops::RangeInclusive<u32> =
    vgpu_logic::uapi::VGPU_COMPUTE_PRIORITY_MIN..=vgpu_logic::uapi::VGPU_COMPUTE_PRIORITY_MAX;

fn priority_arg(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(v) if PRIORITY.contains(&v) => Ok(v),
        _ => Err(format!(
            "{s:?} is not a priority level ({} to {}: {} is best-effort, higher levels preempt lower ones; default {})",
            PRIORITY.start(),
            PRIORITY.end(),
            PRIORITY.start(),
            vgpu_logic::uapi::VGPU_COMPUTE_PRIORITY_DEFAULT
        )),
    }
}

fn period_arg(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(v) if PERIOD_US.contains(&v) => Ok(v),
        _ => Err(format!(
            "{s:?} is not a scheduling period (microseconds, {} to {})",
            PERIOD_US.start(),
            PERIOD_US.end()
        )),
    }
}

fn size_arg(s: &str) -> Result<Limit, String> {
    units::parse_size(s).map_err(|e| e.to_string())
}

fn bytes_arg(s: &str) -> Result<u64, String> {
    units::parse_bytes(s).map_err(|e| e.to_string())
}

fn id_arg(s: &str) -> Result<u32, String> {
    let n: u32 = s
        .trim()
        .strip_prefix("vgpu")
        .unwrap_or(s.trim())
        .parse()
        .map_err(|_| format!("{s:?} is not a vGPU number"))?;
    if n > MAX_VGPU {
        return Err(format!("vGPU numbers go from 0 to {MAX_VGPU}"));
    }
    Ok(n)
}
