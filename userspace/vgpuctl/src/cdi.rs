// SPDX-License-Identifier: GPL-2.0

//! A CDI (Container Device Interface, spec 0.5.0) description of the vGPUs,
//! so containerd, CRI-O, podman and Docker can give a container its vGPUs
//! by name: `--device vgpu.dev/gpu=3`.
//!
//! What a container gets, and why:
//!
//! - NVIDIA's own device nodes, by NVIDIA's names and numbers, as NVIDIA's
//!   container toolkit gives them (`hostPath` = `path`): `/dev/nvidiactl`
//!   (195:255) and `/dev/nvidia-uvm` for every device, and per vGPU `N`
//!   (device name `N`) `/dev/nvidiaK` (195:K), `K` being its backing GPU.
//!   libcuda and NVML `stat` `/dev/nvidiactl` and refuse any number but
//!   the driver's, so vgpu's own nodes (`/dev/vgpuctl`, `/dev/vgpuN`,
//!   `/dev/vgpu-uvm`) cannot stand in for them. vgpu.ko takes over the open
//!   of the driver's nodes: an open from a cgroup bound to vGPUs becomes
//!   vgpu's proxy file (the same one vgpu's own nodes give), so the
//!   container's `/dev/nvidiaK` is its vGPU on GPU K, and any other GPU's
//!   minor is refused. libcuda opens the GPU nodes whose minors
//!   `nvidiactl`'s CARD_INFO reports, and vgpu reports the real GPU's, so
//!   the node is the backing GPU's (on a one-GPU host `/dev/nvidia0`). The
//!   vGPUs of one multi-GPU container are on distinct GPUs, so their names
//!   do not clash. A vGPU with no GPU set yet is left out (nothing could
//!   open it usefully).
//! - per vGPU `N`, unless `--no-hooks`: two OCI hooks, `createRuntime` and
//!   `poststop`, that run `vgpuctl hook create-runtime|poststop N`: vGPU
//!   `N` is bound to the container's cgroup before its first process runs,
//!   sized from its `VGPU_MEMORY`/`VGPU_COMPUTE`, and freed when it stops
//!   ([`crate::hook`]). **The binding must come before the container's
//!   first open:** vgpu decides an open of NVIDIA's nodes by the opener's
//!   cgroup when it is made, so a file opened while the cgroup was not yet
//!   bound is NVIDIA's own, past vgpu, for as long as it stays open. The
//!   `createRuntime` hook runs after the container's init process exists,
//!   in its cgroup, and before the container's program runs; with
//!   `--no-hooks` the admin binds the cgroup before starting the container.
//! - for every device (spec-wide edits), unless `--no-hooks`, a
//!   `createContainer` hook, `vgpuctl hook create-container`, that gives
//!   the container a `/proc/driver/nvidia/params` saying
//!   `ModifyDeviceFiles: 0`, so libcuda and nvidia-smi use the nodes as
//!   they are instead of trying to create or fix up `/dev/nvidia*`
//!   themselves: the driver's params with that one line changed, as the
//!   NVIDIA Container Toolkit does ([`crate::procview`]). Not an OCI
//!   mount: runc refuses any mount inside `/proc` (its `checkProcMount`),
//!   so the hook mounts from inside the container's mount namespace.
//! - UVM: CUDA opens `/dev/nvidia-uvm` in every process, so the spec always
//!   has it. Opened from the container it is vgpu's UVM proxy: vgpu
//!   forwards it to the real nvidia-uvm, gives UVM_REGISTER_GPU the real
//!   GPU file it needs and charges managed memory to the vGPU's ceiling
//!   (`memory_managed`). `/dev/nvidia-uvm-tools` (profilers' counters and
//!   events, which vgpu does not proxy) is never passed: containers do not
//!   get it. `--with-uvm`, which used to add the real UVM nodes, is
//!   accepted and has no effect. Runtimes refuse a spec whose host node is
//!   missing (`nvidia-uvm` makes no node of its own: `nvidia-modprobe -u`
//!   does), so `vgpuctl cdi` warns then ([`missing_host_nodes`]).
//!
//! Not included: the driver's user-space libraries (`libcuda.so`,
//! `nvidia-smi`). Containers bring them in their image or from the NVIDIA
//! Container Toolkit's own spec (its library mounts, not its devices).
//! Device numbers, type and device-cgroup rules are filled in by the runtime
//! from `hostPath` when it injects the device.

use std::path::Path;

use serde::Serialize;

use crate::hook::Stage;
use crate::model::VgpuInfo;

/// The CDI spec version written: the oldest that has everything the spec
/// uses (`hostPath` of device nodes came in 0.5.0; hooks and mounts are
/// older), as the CDI library's `MinimumRequiredVersion` picks it, so older
/// runtimes take it too (podman 4.3, Debian 12's, reads up to 0.5.0).
pub const CDI_VERSION: &str = "0.5.0";
/// The default device kind (`vendor/class`).
pub const DEFAULT_KIND: &str = "vgpu.dev/gpu";
/// Where older releases wrote the params file they mounted (now the
/// default of options kept only for old command lines).
pub const DEFAULT_PARAMS_FILE: &str = "/var/run/vgpu/params";
/// Where the driver publishes its params.
pub const HOST_PARAMS: &str = "/proc/driver/nvidia/params";
/// NVIDIA's control node (195:255), on the host and in the container.
pub const CTL_NODE: &str = "/dev/nvidiactl";
/// nvidia-uvm's node (its major, minor 0), on the host and in the
/// container.
pub const UVM_NODE: &str = "/dev/nvidia-uvm";

/// NVIDIA's node of GPU `k` (195:k), on the host and in the container.
pub fn gpu_node(k: u32) -> String {
    format!("/dev/nvidia{k}")
}

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

/// NVIDIA's node `path`, at the same path in the container.
fn node(path: &str) -> DeviceNode {
    DeviceNode {
        path: path.to_string(),
        host_path: path.to_string(),
        kind: "c".to_string(),
        permissions: "rw".to_string(),
    }
}

/// Options of the generated spec.
#[derive(Debug, Clone)]
pub struct Options {
    /// Device kind, `vendor/class`.
    pub kind: String,
    /// The `vgpuctl` the hooks run ([`crate::hook`], [`crate::procview`]);
    /// `None`: no hooks (vGPUs bound by hand, the driver's params as they
    /// are).
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

/// The spec-wide hook: the container's `/proc/driver/nvidia` from inside
/// its mount namespace ([`crate::procview`]).
pub fn proc_hook(vgpuctl: &str) -> Hook {
    Hook {
        hook_name: Stage::CreateContainer.oci_name().to_string(),
        path: vgpuctl.to_string(),
        args: vec![
            "vgpuctl".to_string(),
            "hook".to_string(),
            Stage::CreateContainer.arg().to_string(),
        ],
    }
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
                    device_nodes: vec![node(&gpu_node(k))],
                    mounts: Vec::new(),
                    hooks: opts
                        .hook
                        .as_deref()
                        .map_or_else(Vec::new, |h| hooks(h, v.id)),
                },
            })
        })
        .collect();
    let nodes = vec![node(CTL_NODE), node(UVM_NODE)];
    Spec {
        cdi_version: CDI_VERSION.to_string(),
        kind: opts.kind.clone(),
        devices,
        container_edits: ContainerEdits {
            device_nodes: nodes,
            mounts: Vec::new(),
            hooks: opts.hook.as_deref().map(proc_hook).into_iter().collect(),
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

/// The host nodes of `spec` that are not under `dev_root` (the host's
/// `/dev`), as the spec names them: runtimes refuse a device whose host
/// node is missing.
pub fn missing_host_nodes(spec: &Spec, dev_root: &Path) -> Vec<String> {
    let edits = std::iter::once(&spec.container_edits)
        .chain(spec.devices.iter().map(|d| &d.container_edits));
    let mut missing: Vec<String> = edits
        .flat_map(|e| &e.device_nodes)
        .map(|n| n.host_path.clone())
        .filter(|h| !dev_root.join(h.trim_start_matches("/dev/")).exists())
        .collect();
    missing.sort();
    missing.dedup();
    missing
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
                ("/dev/nvidiactl", "/dev/nvidiactl"),
                ("/dev/nvidia-uvm", "/dev/nvidia-uvm")
            ]
        );
    }

    /// Nothing is mounted inside /proc (runc refuses it): the params file
    /// comes from the spec-wide createContainer hook, which every spec
    /// with hooks has, and which names no vGPU.
    #[test]
    fn nothing_mounted_under_proc() {
        for hook in [None, Some("/usr/bin/vgpuctl".to_string())] {
            let s = spec(
                &[],
                &Options {
                    kind: DEFAULT_KIND.to_string(),
                    hook: hook.clone(),
                },
            );
            let text = serde_json::to_string(&s).unwrap();
            assert!(!text.contains("\"mounts\""), "{text}");
            assert!(!text.contains("/proc"), "{text}");
            let wide: Vec<(&str, &[String])> = s
                .container_edits
                .hooks
                .iter()
                .map(|h| (h.hook_name.as_str(), h.args.as_slice()))
                .collect();
            match hook {
                None => assert!(wide.is_empty(), "{wide:?}"),
                Some(_) => assert_eq!(
                    wide,
                    [(
                        "createContainer",
                        &["vgpuctl", "hook", "create-container"].map(String::from)[..]
                    )]
                ),
            }
        }
    }

    #[test]
    fn missing_nodes() {
        let opts = Options {
            kind: DEFAULT_KIND.to_string(),
            hook: None,
        };
        let mut s = spec(&[], &opts);
        s.devices.push(Device {
            name: "3".to_string(),
            container_edits: ContainerEdits {
                device_nodes: vec![node(&gpu_node(1))],
                ..Default::default()
            },
        });
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            missing_host_nodes(&s, dir.path()),
            ["/dev/nvidia-uvm", "/dev/nvidia1", "/dev/nvidiactl"]
        );
        for n in ["nvidiactl", "nvidia1"] {
            std::fs::write(dir.path().join(n), "").unwrap();
        }
        assert_eq!(missing_host_nodes(&s, dir.path()), ["/dev/nvidia-uvm"]);
        std::fs::write(dir.path().join("nvidia-uvm"), "").unwrap();
        assert!(missing_host_nodes(&s, dir.path()).is_empty());
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
