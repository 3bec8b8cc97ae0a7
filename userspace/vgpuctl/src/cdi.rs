// SPDX-License-Identifier: GPL-2.0

//! A CDI (Container Device Interface, spec 0.5.0) description of the vGPUs,
//! so containerd, CRI-O, podman and Docker can give a container its vGPUs
//! by name: `--device vgpu.dev/gpu=3`.
//!
//! What a container gets, and why:
//!
//! - per vGPU `N` (device name `N`): `/dev/vgpuN` at `/dev/nvidiaK`, `K`
//!   being its backing GPU. libcuda opens the GPU nodes whose minor numbers
//!   `nvidiactl`'s CARD_INFO reports, and vgpu passes the real GPU's minor
//!   through, so the node must sit at the backing GPU's name (on a one-GPU
//!   host that is `/dev/nvidia0`). The vGPUs of one multi-GPU container are
//!   on distinct GPUs, so their names do not clash. A vGPU with no GPU set
//!   yet is left out (nothing could open it usefully).
//! - per vGPU `N`, unless `--no-hooks`: two OCI hooks, `createRuntime` and
//!   `poststop`, that run `vgpuctl hook create-runtime|poststop N`: vGPU
//!   `N` is bound to the container's cgroup before its first process runs,
//!   sized from its `VGPU_MEMORY`/`VGPU_COMPUTE`, and freed when it stops
//!   ([`crate::hook`]).
//! - for every device (spec-wide edits): `/dev/vgpuctl` at `/dev/nvidiactl`,
//!   `/dev/vgpu-uvm` at `/dev/nvidia-uvm`, and a read-only bind mount of a
//!   params file at `/proc/driver/nvidia/params` that says
//!   `ModifyDeviceFiles: 0`, so libcuda and nvidia-smi use the nodes as they
//!   are instead of trying to create or fix up `/dev/nvidia*` with the real
//!   device numbers. The file is the host's params with that one line
//!   changed (or just that line if the host has none), as the NVIDIA
//!   Container Toolkit does.
//! - UVM: CUDA opens `/dev/nvidia-uvm` in every process, so the spec always
//!   has vgpu's UVM proxy there. vgpu forwards it to the real nvidia-uvm,
//!   gives UVM_REGISTER_GPU the real GPU file it needs and charges managed
//!   memory to the vGPU's ceiling (`memory_managed`). The real
//!   `/dev/nvidia-uvm` is never passed, and neither is
//!   `/dev/nvidia-uvm-tools` (profilers' counters and events, which vgpu
//!   does not proxy): containers do not get it. `--with-uvm`, which used to
//!   add the real nodes, is accepted and has no effect. A module older than
//!   the proxy has `/dev/vgpuctl` but no `/dev/vgpu-uvm`; runtimes refuse a
//!   spec whose host node is missing, so `vgpuctl cdi` warns then
//!   ([`uvm_proxy_missing`]).
//!
//! Not included: the driver's user-space libraries (`libcuda.so`,
//! `nvidia-smi`). Containers bring them in their image or from the NVIDIA
//! Container Toolkit's own spec (its library mounts, not its devices).
//! Device numbers, type and device-cgroup rules are filled in by the runtime
//! from `hostPath` when it injects the device.

use std::path::Path;

use serde::Serialize;

use vgpu_logic::uapi;

use crate::hook::Stage;
use crate::model::VgpuInfo;

/// The CDI spec version written: the oldest that has everything the spec
/// uses (`hostPath` of device nodes came in 0.5.0; hooks and mounts are
/// older), as the CDI library's `MinimumRequiredVersion` picks it, so older
/// runtimes take it too (podman 4.3, Debian 12's, reads up to 0.5.0).
pub const CDI_VERSION: &str = "0.5.0";
/// The default device kind (`vendor/class`).
pub const DEFAULT_KIND: &str = "vgpu.dev/gpu";
/// The default host path of the params file.
pub const DEFAULT_PARAMS_FILE: &str = "/var/run/vgpu/params";
/// Where the driver publishes its params.
pub const HOST_PARAMS: &str = "/proc/driver/nvidia/params";
/// Where the container sees `/dev/vgpuctl`.
pub const CTL_NODE: &str = "/dev/nvidiactl";
/// Where the container sees `/dev/vgpu-uvm`.
pub const UVM_NODE: &str = "/dev/nvidia-uvm";

/// A CDI spec (the fields vgpuctl writes).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Spec {
    /// [`CDI_VERSION`].
    pub cdi_version: String,
    /// `vendor/class`.
    pub kind: String,
    /// One per vGPU.
    pub devices: Vec<Device>,
    /// Edits for any device of this spec.
    pub container_edits: ContainerEdits,
}

/// One CDI device.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Device {
    /// The vGPU number.
    pub name: String,
    /// Its edits.
    pub container_edits: ContainerEdits,
}

/// Edits to a container.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerEdits {
    /// Device nodes to create.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub device_nodes: Vec<DeviceNode>,
    /// Mounts.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mounts: Vec<Mount>,
    /// OCI hooks.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<Hook>,
}

/// An OCI hook.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hook {
    /// When the runtime runs it (`createRuntime`, `poststop`).
    pub hook_name: String,
    /// The program, on the host.
    pub path: String,
    /// Its argv, `argv[0]` included.
    pub args: Vec<String>,
}

/// A device node.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceNode {
    /// Path in the container.
    pub path: String,
    /// Path on the host.
    pub host_path: String,
    /// `c`: character device.
    #[serde(rename = "type")]
    pub kind: String,
    /// Device-cgroup access: `rw` (no mknod).
    pub permissions: String,
}

/// A mount.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Mount {
    /// Source on the host.
    pub host_path: String,
    /// Target in the container.
    pub container_path: String,
    /// Mount options.
    pub options: Vec<String>,
}

fn node(host: &str, container: &str) -> DeviceNode {
    DeviceNode {
        path: container.to_string(),
        host_path: host.to_string(),
        kind: "c".to_string(),
        permissions: "rw".to_string(),
    }
}

/// Options of the generated spec.
#[derive(Debug, Clone)]
pub struct Options {
    /// Device kind, `vendor/class`.
    pub kind: String,
    /// Host path of the params file mounted at `/proc/driver/nvidia/params`.
    pub params_file: String,
    /// The `vgpuctl` each device's hooks run ([`crate::hook`]); `None`:
    /// no hooks (vGPUs bound by hand).
    pub hook: Option<String>,
}

/// The hooks of vGPU `id`'s device: bind at `createRuntime`, free at
/// `poststop` ([`crate::hook`]).
fn hooks(vgpuctl: &str, id: u32) -> Vec<Hook> {
    [Stage::CreateRuntime, Stage::Poststop]
        .into_iter()
        .map(|st| Hook {
            hook_name: st.oci_name().to_string(),
            path: vgpuctl.to_string(),
            args: vec![
                "vgpuctl".to_string(),
                "hook".to_string(),
                st.arg().to_string(),
                id.to_string(),
            ],
        })
        .collect()
}

/// Whether `kind` is a valid CDI kind: `vendor/class`, the vendor a domain
/// name-like string (letters, digits, `-`, `_`, `.`; starting with a letter
/// and ending with a letter or digit), the class letters, digits, `-`, `_`
/// (same ends).
pub fn valid_kind(kind: &str) -> bool {
    let Some((vendor, class)) = kind.split_once('/') else {
        return false;
    };
    let ok = |s: &str, extra: &[char]| {
        let first = s.chars().next();
        let last = s.chars().last();
        first.is_some_and(|c| c.is_ascii_alphabetic())
            && last.is_some_and(|c| c.is_ascii_alphanumeric())
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || extra.contains(&c))
    };
    ok(vendor, &['.']) && ok(class, &[])
}

/// The spec for `vgpus` (those without a GPU are left out).
pub fn spec(vgpus: &[VgpuInfo], opts: &Options) -> Spec {
    let devices = vgpus
        .iter()
        .filter_map(|v| {
            let k = v.gpu?;
            Some(Device {
                name: v.id.to_string(),
                container_edits: ContainerEdits {
                    device_nodes: vec![node(&v.device, &format!("/dev/nvidia{k}"))],
                    mounts: Vec::new(),
                    hooks: opts
                        .hook
                        .as_deref()
                        .map_or_else(Vec::new, |h| hooks(h, v.id)),
                },
            })
        })
        .collect();
    let nodes = vec![
        node(uapi::VGPU_CTL_DEV, CTL_NODE),
        node(uapi::VGPU_UVM_DEV, UVM_NODE),
    ];
    Spec {
        cdi_version: CDI_VERSION.to_string(),
        kind: opts.kind.clone(),
        devices,
        container_edits: ContainerEdits {
            device_nodes: nodes,
            mounts: vec![Mount {
                host_path: opts.params_file.clone(),
                container_path: HOST_PARAMS.to_string(),
                options: ["ro", "nosuid", "nodev", "bind"].map(String::from).to_vec(),
            }],
            hooks: Vec::new(),
        },
    }
}

/// The params file: the host's `params` (if any) with `ModifyDeviceFiles`
/// set to 0, or just that line.
pub fn params_text(host: Option<&str>) -> String {
    let mut out = String::new();
    let mut seen = false;
    for line in host.unwrap_or("").lines() {
        if line.trim_start().starts_with("ModifyDeviceFiles:") {
            out.push_str("ModifyDeviceFiles: 0\n");
            seen = true;
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    if !seen {
        out.push_str("ModifyDeviceFiles: 0\n");
    }
    out
}

/// Whether the host's `/dev` (`dev_root`) has vgpu's `/dev/vgpuctl` but
/// not `/dev/vgpu-uvm`: a vgpu module from before the UVM proxy, whose
/// spec would name a host node that is not there.
pub fn uvm_proxy_missing(dev_root: &Path) -> bool {
    let in_root = |dev: &str| dev_root.join(dev.trim_start_matches("/dev/"));
    in_root(uapi::VGPU_CTL_DEV).exists() && !in_root(uapi::VGPU_UVM_DEV).exists()
}

/// Reads the host's params file, if there is one.
pub fn read_host_params(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds() {
        assert!(valid_kind("vgpu.dev/gpu"));
        assert!(valid_kind("example.com/v-gpu_2"));
        for k in [
            "vgpu.dev",
            "/gpu",
            "vgpu.dev/",
            "1vgpu.dev/gpu",
            "vgpu.dev/g.pu",
            "v/g-",
        ] {
            assert!(!valid_kind(k), "{k}");
        }
    }

    #[test]
    fn spec_wide_nodes() {
        let opts = Options {
            kind: DEFAULT_KIND.to_string(),
            params_file: DEFAULT_PARAMS_FILE.to_string(),
            hook: None,
        };
        let s = spec(&[], &opts);
        let nodes: Vec<(&str, &str)> = s
            .container_edits
            .device_nodes
            .iter()
            .map(|n| (n.host_path.as_str(), n.path.as_str()))
            .collect();
        assert_eq!(
            nodes,
            [
                ("/dev/vgpuctl", "/dev/nvidiactl"),
                ("/dev/vgpu-uvm", "/dev/nvidia-uvm")
            ]
        );
    }

    #[test]
    fn old_module_without_uvm_proxy() {
        let dir = tempfile::tempdir().unwrap();
        // No vgpu nodes at all (not loaded, or another /dev): no warning.
        assert!(!uvm_proxy_missing(dir.path()));
        std::fs::write(dir.path().join("vgpuctl"), "").unwrap();
        assert!(uvm_proxy_missing(dir.path()));
        std::fs::write(dir.path().join("vgpu-uvm"), "").unwrap();
        assert!(!uvm_proxy_missing(dir.path()));
    }

    #[test]
    fn params() {
        assert_eq!(params_text(None), "ModifyDeviceFiles: 0\n");
        assert_eq!(
            params_text(Some(
                "ResmanDebugLevel: 4294967295\nModifyDeviceFiles: 1\nDeviceFileMode: 438\n"
            )),
            "ResmanDebugLevel: 4294967295\nModifyDeviceFiles: 0\nDeviceFileMode: 438\n"
        );
    }
}
