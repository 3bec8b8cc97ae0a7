// SPDX-License-Identifier: GPL-2.0

//! `vgpu-dra-plugin`: a Kubernetes DRA kubelet plugin for vgpu.ko.
//!
//! It registers with the kubelet's plugin registry as the DRA driver
//! [`DRIVER_NAME`], publishes one ResourceSlice per node (a device per GPU
//! with consumable `memory` and `cores`, shared by many claims), and, when
//! the kubelet prepares a claim, creates on each allocated GPU a vGPU of
//! the claim's consumed memory and cores, writes a CDI spec whose hooks
//! bind the vGPU to the pod's cgroup when its containers start, and
//! returns the spec's device IDs. Unprepare removes the vGPUs and the spec.
//!
//! Layout, lower layers first:
//! - [`quantity`]: Kubernetes quantities (`2Gi`, `30`), pure.
//! - [`gpus`]: which GPUs the node has and their facts.
//! - [`slice`]: the node's ResourceSlice, pure.
//! - [`claim`]: what an allocated ResourceClaim asks of this node, pure.
//! - [`checkpoint`]: the claims this plugin prepared, on disk.
//! - [`kube`]: the API server, or a directory standing in for it.
//! - [`driver`]: prepare and unprepare.
//! - [`server`]: the gRPC services on the kubelet's sockets.
//! - [`cli`]: the command line.
//! - [`proto`]: the generated gRPC code.

pub mod checkpoint;
pub mod claim;
pub mod cli;
pub mod driver;
pub mod gpus;
pub mod kube;
pub mod quantity;
pub mod server;
pub mod slice;

/// The gRPC code generated from `proto/` (see `build.rs`).
pub mod proto {
    /// The kubelet's DRA node service, v1.
    #[allow(missing_docs, clippy::all)]
    pub mod dra {
        tonic::include_proto!("k8s.io.kubelet.pkg.apis.dra.v1");
    }
    /// The kubelet's plugin registration service.
    #[allow(missing_docs, clippy::all)]
    pub mod registration {
        tonic::include_proto!("pluginregistration");
    }
}

/// The DRA driver name: ResourceSlices, DeviceClasses and allocation
/// results name it, and the CDI specs use it as their vendor.
pub const DRIVER_NAME: &str = "vgpu.dev";
/// The gRPC service the kubelet calls for prepare and unprepare, as the
/// plugin lists it in registration (k8s.io/kubelet v0.36.0,
/// pkg/apis/dra/v1/types.go, `DRAPluginService`).
pub const DRA_SERVICE_V1: &str = "v1.DRAPlugin";
/// The plugin type in registration (pkg/apis/pluginregistration/v1,
/// constants.go, `DRAPlugin`).
pub const PLUGIN_TYPE: &str = "DRAPlugin";
/// The kubelet's default registry directory (k8s.io/dynamic-resource-
/// allocation v0.36.0, kubeletplugin/draplugin.go, `KubeletRegistryDir`).
pub const DEFAULT_REGISTRY_DIR: &str = "/var/lib/kubelet/plugins_registry";
/// The kubelet's default plugin data directory (`KubeletPluginsDir`).
pub const DEFAULT_PLUGINS_DIR: &str = "/var/lib/kubelet/plugins";

/// The plugin's errors, each with the text a user sees in the pod's events.
#[derive(Debug)]
pub enum Error {
    /// The claim, its allocation or a value in it is not what this plugin
    /// can prepare; the text says why.
    Claim(String),
    /// The allocated GPU cannot hold the claim.
    NoRoom(String),
    /// The API server (or its stand-in) failed.
    Api(String),
    /// vgpu.ko refused or failed.
    Vgpu(vgpuctl::Error),
    /// A file of the plugin's own (checkpoint, CDI spec) failed.
    Io(String, std::io::Error),
    /// Anything else, said in words.
    Other(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Claim(s) | Error::NoRoom(s) | Error::Api(s) | Error::Other(s) => f.write_str(s),
            Error::Vgpu(e) => write!(f, "vgpu: {e}"),
            Error::Io(what, e) => write!(f, "{what}: {e}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<vgpuctl::Error> for Error {
    fn from(e: vgpuctl::Error) -> Self {
        Error::Vgpu(e)
    }
}

/// The plugin's results.
pub type Result<T> = std::result::Result<T, Error>;
