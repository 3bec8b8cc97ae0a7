// SPDX-License-Identifier: GPL-2.0

//! The node's GPUs and the facts its ResourceSlice publishes about each.
//!
//! vgpu.ko serves the GPUs `/dev/nvidiaK` it found at load; vgpuctl's
//! inventory lists them ([`vgpuctl::inventory`]). For each, the plugin asks
//! the NVIDIA driver what NVML asks it, through `/dev/nvidiactl` as root
//! (the plugin is no container of vgpu's, so the driver answers for the
//! whole GPU):
//!
//! - memory: NV2080_CTRL_CMD_FB_GET_INFO_V2 `RAM_SIZE` (KiB), on a
//!   subdevice of the GPU's device, found through CARD_INFO (the GPU whose
//!   `minor_number` is K) and NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2 (its
//!   device instance); vgpuctl's `--gpu-memory` stands in where the driver
//!   cannot be asked;
//! - UUID: NV2080_CTRL_CMD_GPU_GET_GID_INFO in text form;
//! - product name: the `Model:` line of the driver's
//!   `/proc/driver/nvidia/gpus/<bus>/information` whose `Device Minor:` is
//!   K (kernel-open/nvidia/nv-procfs.c, `nv_procfs_read_gpu_info`,
//!   595.45.04);
//! - driver version: vgpu.ko's `driver_version`, the release it speaks;
//! - compute policy: vgpu.ko's `gpuK/compute_policy`.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use nvclient::abi::fb_info;
use nvclient::{Ctl, Gpu};
use vgpuctl::inventory::{self, DevNodes, GpuDirs, SysfsGpus};
use vgpuctl::sysfs::Sysfs;

use crate::{Error, Result};

/// Room for this many CARD_INFO records: the driver's limit on GPUs
/// (`NV_MAX_DEVICES`, kernel-open/common/inc/nvlimits.h, 595.45.04).
const MAX_GPUS: usize = 32;

/// One GPU as the ResourceSlice describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuFacts {
    /// `K` of `/dev/nvidiaK`.
    pub index: u32,
    /// `GPU-...`, if the driver told.
    pub uuid: Option<String>,
    /// The product name, if the driver told.
    pub product: Option<String>,
    /// Its memory in bytes.
    pub memory: u64,
    /// `fixed` or `work-conserving`, if the module has compute shares.
    pub compute_policy: Option<String>,
}

/// Where the facts come from (tests point these at fake trees).
#[derive(Clone, Debug)]
pub struct Sources {
    /// `/dev`: `nvidiactl` and `nvidiaK` are opened here.
    pub dev_root: PathBuf,
    /// `/proc`.
    pub proc_root: PathBuf,
    /// Ask the driver through `dev_root/nvidiactl` (off in tests).
    pub ask_driver: bool,
    /// The size of a GPU whose size nothing else tells.
    pub fallback_memory: Option<u64>,
}

/// What the driver's procfs says of GPU minor K: (model, UUID).
pub fn procfs_facts(proc_root: &Path) -> BTreeMap<u32, (Option<String>, Option<String>)> {
    let mut out = BTreeMap::new();
    let Ok(dir) = fs::read_dir(proc_root.join("driver/nvidia/gpus")) else {
        return out;
    };
    for e in dir.flatten() {
        let Ok(text) = fs::read_to_string(e.path().join("information")) else {
            continue;
        };
        let (minor, model, uuid) = parse_information(&text);
        if let Some(m) = minor {
            out.insert(m, (model, uuid));
        }
    }
    out
}

/// Parses an `information` file: (Device Minor, Model, GPU UUID).
pub fn parse_information(text: &str) -> (Option<u32>, Option<String>, Option<String>) {
    let mut minor = None;
    let mut model = None;
    let mut uuid = None;
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match key.trim() {
            "Device Minor" => minor = value.parse().ok(),
            "Model" if !value.is_empty() => model = Some(value.to_string()),
            "GPU UUID" if !value.is_empty() => uuid = Some(value.to_string()),
            _ => {}
        }
    }
    (minor, model, uuid)
}

/// Memory and UUID of GPU minor `k`, asked of the driver.
fn ask_driver(dev_root: &Path, k: u32) -> std::result::Result<(u64, String), String> {
    let ctl = Ctl::open(dev_root.join("nvidiactl")).map_err(|e| format!("nvidiactl: {e:?}"))?;
    let _gpu =
        Gpu::open(dev_root.join(format!("nvidia{k}"))).map_err(|e| format!("nvidia{k}: {e:?}"))?;
    let client = ctl
        .alloc_root_client()
        .map_err(|e| format!("client: {e:?}"))?;
    let result = (|| {
        let cards = ctl
            .card_info(MAX_GPUS)
            .map_err(|e| format!("CARD_INFO: {e:?}"))?;
        let card = cards
            .iter()
            .find(|c| c.minor_number == k)
            .ok_or_else(|| format!("no GPU of minor {k} in CARD_INFO"))?;
        ctl.attach_gpus(&[card.gpu_id])
            .map_err(|e| format!("attach: {e:?}"))?;
        let id = ctl
            .gpu_id_info(client, card.gpu_id)
            .map_err(|e| format!("GPU_GET_ID_INFO_V2: {e:?}"))?;
        let device = ctl
            .alloc_device(client, 0, id.device_instance)
            .map_err(|e| format!("device: {e:?}"))?;
        let sub = ctl
            .alloc_subdevice(client, device, 0, id.sub_device_instance)
            .map_err(|e| format!("subdevice: {e:?}"))?;
        let ram = ctl
            .fb_get_info_v2(client, sub, &[fb_info::RAM_SIZE])
            .map_err(|e| format!("FB_GET_INFO_V2: {e:?}"))?;
        let kib = ram.first().map(|e| u64::from(e.data)).unwrap_or(0);
        let uuid = ctl
            .gpu_uuid_text(client, sub)
            .map_err(|e| format!("GET_GID_INFO: {e:?}"))?;
        Ok((kib << 10, uuid))
    })();
    // Freeing the client frees everything under it.
    let _ = ctl.free(client, client, client);
    result
}

/// The node's GPUs with their facts. A GPU whose size is unknown (the
/// driver could not be asked and no fallback was given) is an error: the
/// slice must say how much memory it has.
pub fn discover(s: &Sysfs, src: &Sources) -> Result<Vec<GpuFacts>> {
    let listed = inventory::discover(
        &[&SysfsGpus(s), &GpuDirs(s), &DevNodes(src.dev_root.clone())],
        None,
    )?;
    if src.ask_driver {
        // Ask in the ABI of the release vgpu.ko speaks with the driver.
        if let Some(v) = driver_version(s)? {
            nvclient::speak_release(&v);
        }
    }
    let procfs = procfs_facts(&src.proc_root);
    let mut out = Vec::new();
    for g in listed {
        let k = g.index;
        let (mut product, mut uuid) = procfs.get(&k).cloned().unwrap_or((None, None));
        let mut memory = g.memory;
        let mut why = String::from("the driver was not asked");
        if src.ask_driver {
            match ask_driver(&src.dev_root, k) {
                Ok((m, u)) => {
                    if m > 0 {
                        memory = Some(m);
                    }
                    uuid = uuid.or(Some(u));
                }
                Err(e) => why = e,
            }
        }
        let memory = memory.or(src.fallback_memory).ok_or_else(|| {
            Error::Other(format!(
                "GPU {k}: its memory size is unknown ({why}); give --gpu-memory"
            ))
        })?;
        product = product.filter(|p| !p.is_empty());
        let compute_policy = s
            .read_gpu_attr(k, "compute_policy")?
            .map(|p| p.trim().to_string())
            .filter(|p| !p.is_empty());
        out.push(GpuFacts {
            index: k,
            uuid,
            product,
            memory,
            compute_policy,
        });
    }
    Ok(out)
}

/// The driver release vgpu.ko speaks (`driver_version`), if it says.
pub fn driver_version(s: &Sysfs) -> Result<Option<String>> {
    Ok(s.read_class("driver_version")?
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_information() {
        let text = "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 0\nGPU UUID: \t GPU-12345678-1234-1234-1234-123456789abc\nBus Location: \t 0000:01:00.0\nDevice Minor: \t 3\n";
        let (m, model, uuid) = parse_information(text);
        assert_eq!(m, Some(3));
        assert_eq!(model.as_deref(), Some("NVIDIA H100 80GB HBM3"));
        assert_eq!(
            uuid.as_deref(),
            Some("GPU-12345678-1234-1234-1234-123456789abc")
        );
        assert_eq!(parse_information("garbage\n"), (None, None, None));
    }
}
