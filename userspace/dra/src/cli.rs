// SPDX-License-Identifier: GPL-2.0

//! The plugin's command line (also the source of its man page).

use std::path::PathBuf;

use clap::Parser;

use crate::{DEFAULT_REGISTRY_DIR, DRIVER_NAME};

/// Serve vgpu.ko's GPUs to Kubernetes pods through Dynamic Resource
/// Allocation: one vGPU per allocated device, sized by the claim.
#[derive(Parser, Debug)]
#[command(name = "vgpu-dra-plugin", version)]
pub struct Args {
    /// This node's name: the ResourceSlice's pool.
    #[arg(long, env = "NODE_NAME")]
    pub node_name: String,
    /// The DRA driver name.
    #[arg(long, default_value = DRIVER_NAME)]
    pub driver_name: String,
    /// The kubelet's plugin registry directory.
    #[arg(long, default_value = DEFAULT_REGISTRY_DIR)]
    pub registry_dir: PathBuf,
    /// The plugin's directory: its DRA socket and checkpoint
    /// (default: /var/lib/kubelet/plugins/DRIVER).
    #[arg(long)]
    pub plugin_dir: Option<PathBuf>,
    /// Where CDI specs go.
    #[arg(long, default_value = "/var/run/cdi")]
    pub cdi_dir: PathBuf,
    /// The sysfs root.
    #[arg(long, default_value = "/sys")]
    pub sysfs: PathBuf,
    /// The device directory (nvidiactl, nvidiaK).
    #[arg(long, default_value = "/dev")]
    pub dev_root: PathBuf,
    /// The proc root.
    #[arg(long, default_value = "/proc")]
    pub proc_root: PathBuf,
    /// The API: `in-cluster` (the pod's service account), an
    /// `http(s)://` URL (no credentials), or `dir:PATH` (objects as JSON
    /// files, for nodes without an API server).
    #[arg(long, default_value = "in-cluster")]
    pub kube_api: String,
    /// The vgpuctl the CDI hooks run, as the host sees it.
    #[arg(long, default_value = "/usr/bin/vgpuctl")]
    pub hook_path: String,
    /// No effect, kept for old manifests: the claims' CDI specs no longer
    /// mount a params file; their createContainer hook rewrites the
    /// container's /proc/driver/nvidia/params (runc refuses mounts inside
    /// /proc).
    #[arg(long, value_name = "PATH", hide = true)]
    pub params_file: Option<PathBuf>,
    /// The memory of a GPU the driver cannot be asked about (e.g. 80GiB).
    #[arg(long, value_parser = parse_size)]
    pub gpu_memory: Option<u64>,
    /// Do not ask the NVIDIA driver for GPU sizes and UUIDs.
    #[arg(long)]
    pub no_driver_query: bool,
}

fn parse_size(s: &str) -> Result<u64, String> {
    vgpuctl::units::parse_bytes(s).map_err(|e| e.to_string())
}
