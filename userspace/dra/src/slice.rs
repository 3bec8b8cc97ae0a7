// SPDX-License-Identifier: GPL-2.0

//! The node's ResourceSlice (`resource.k8s.io/v1`, Kubernetes 1.36).
//!
//! One slice per node, its pool named after the node. A device per GPU,
//! named `gpu-K`, with:
//! - attributes `uuid`, `productName` (strings, when the driver told),
//!   `driverVersion` (a semantic version: the release with leading zeros
//!   dropped, `580.95.05` -> `580.95.5`), `index` (K) and `computePolicy`;
//! - `allowMultipleAllocations: true` (KEP-5075, consumable capacity): many
//!   claims share the GPU, each consuming part of its capacity;
//! - capacity `memory` (bytes: any multiple of 1 MiB from 1 MiB to the
//!   GPU's size) and `cores` (percent: 1 to 100). A request that names no
//!   capacity consumes each one's default, the whole GPU: a plain request
//!   (or a classic `vgpu.dev/gpu: 1` limit through the DeviceClass's
//!   extended resource name) gets a GPU of its own.
//!
//! An API server whose `DRAConsumableCapacity` gate is off (the default in
//! Kubernetes 1.34 and 1.35) drops `allowMultipleAllocations` and each
//! capacity's `requestPolicy` when it stores a slice whose previous version
//! did not use them (pkg/registry/resource/resourceslice/strategy.go,
//! `dropDisabledDRAConsumableCapacityFields`). [`whole_gpus`] is the slice
//! such a server keeps: each GPU allocated once, whole, its capacities
//! still there for selectors to read.

use std::collections::BTreeMap;

use k8s_openapi::api::resource::v1::{
    CapacityRequestPolicy, CapacityRequestPolicyRange, Device, DeviceAttribute, DeviceCapacity,
    ResourcePool, ResourceSlice, ResourceSliceSpec,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::gpus::GpuFacts;
use crate::quantity::format_bytes;

/// The capacity a claim consumes in bytes of GPU memory.
pub const MEMORY: &str = "memory";
/// The capacity a claim consumes in percent of the GPU's time.
pub const CORES: &str = "cores";
/// Memory is handed out in steps of this many bytes.
pub const MEMORY_STEP: u64 = 1 << 20;

/// The device name of GPU `k`.
pub fn device_name(k: u32) -> String {
    format!("gpu-{k}")
}

/// The GPU index of device `name`, if it is one of ours.
pub fn device_index(name: &str) -> Option<u32> {
    let k = name.strip_prefix("gpu-")?;
    if k.is_empty() || (k.len() > 1 && k.starts_with('0')) {
        return None;
    }
    k.parse().ok()
}

/// `release` as a semantic version (DRA's `version` attribute): numeric
/// parts without leading zeros, padded to three; `None` if not numeric.
pub fn semver(release: &str) -> Option<String> {
    let parts: Vec<u64> = release
        .trim()
        .split('.')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    if parts.is_empty() || parts.len() > 3 {
        return None;
    }
    let mut p = parts;
    p.resize(3, 0);
    Some(format!("{}.{}.{}", p[0], p[1], p[2]))
}

fn string(s: &str) -> DeviceAttribute {
    DeviceAttribute {
        string: Some(s.to_string()),
        ..Default::default()
    }
}

/// The device of one GPU.
pub fn device(g: &GpuFacts, driver_version: Option<&str>) -> Device {
    let mut attributes = BTreeMap::new();
    attributes.insert(
        "index".to_string(),
        DeviceAttribute {
            int: Some(i64::from(g.index)),
            ..Default::default()
        },
    );
    if let Some(u) = &g.uuid {
        attributes.insert("uuid".to_string(), string(u));
    }
    if let Some(p) = &g.product {
        attributes.insert("productName".to_string(), string(p));
    }
    if let Some(v) = driver_version.and_then(semver) {
        attributes.insert(
            "driverVersion".to_string(),
            DeviceAttribute {
                version: Some(v),
                ..Default::default()
            },
        );
    }
    if let Some(p) = &g.compute_policy {
        attributes.insert("computePolicy".to_string(), string(p));
    }
    // Whole MiB: a claim can only be given what a step reaches.
    let memory = g.memory / MEMORY_STEP * MEMORY_STEP;
    let mut capacity = BTreeMap::new();
    capacity.insert(
        MEMORY.to_string(),
        DeviceCapacity {
            value: Quantity(format_bytes(memory)),
            request_policy: Some(CapacityRequestPolicy {
                default: Some(Quantity(format_bytes(memory))),
                valid_range: Some(CapacityRequestPolicyRange {
                    min: Quantity(format_bytes(MEMORY_STEP)),
                    max: Some(Quantity(format_bytes(memory))),
                    step: Some(Quantity(format_bytes(MEMORY_STEP))),
                }),
                valid_values: None,
            }),
        },
    );
    capacity.insert(
        CORES.to_string(),
        DeviceCapacity {
            value: Quantity("100".to_string()),
            request_policy: Some(CapacityRequestPolicy {
                default: Some(Quantity("100".to_string())),
                valid_range: Some(CapacityRequestPolicyRange {
                    min: Quantity("1".to_string()),
                    max: Some(Quantity("100".to_string())),
                    step: Some(Quantity("1".to_string())),
                }),
                valid_values: None,
            }),
        },
    );
    Device {
        name: device_name(g.index),
        allow_multiple_allocations: Some(true),
        attributes: Some(attributes),
        capacity: Some(capacity),
        ..Default::default()
    }
}

/// The slice's object name: one per node and driver.
pub fn slice_name(node: &str, driver: &str) -> String {
    format!("{node}-{}", driver.replace('.', "-"))
}

/// The node's ResourceSlice. `generation` goes up each time the plugin
/// publishes a changed set of devices (a restart reads it back).
pub fn resource_slice(
    driver: &str,
    node: &str,
    gpus: &[GpuFacts],
    driver_version: Option<&str>,
    generation: i64,
) -> ResourceSlice {
    ResourceSlice {
        metadata: ObjectMeta {
            name: Some(slice_name(node, driver)),
            ..Default::default()
        },
        spec: ResourceSliceSpec {
            driver: driver.to_string(),
            node_name: Some(node.to_string()),
            pool: ResourcePool {
                name: node.to_string(),
                generation,
                resource_slice_count: 1,
            },
            devices: Some(gpus.iter().map(|g| device(g, driver_version)).collect()),
            ..Default::default()
        },
    }
}

/// `devices` without consumable capacity: what an API server whose
/// `DRAConsumableCapacity` gate is off stores of them. Each device is then
/// allocated to one claim at a time, whole.
pub fn whole_gpus(devices: &[Device]) -> Vec<Device> {
    devices
        .iter()
        .map(|d| {
            let mut d = d.clone();
            d.allow_multiple_allocations = None;
            if let Some(c) = &mut d.capacity {
                for cap in c.values_mut() {
                    cap.request_policy = None;
                }
            }
            d
        })
        .collect()
}

/// Whether an API server that was sent `sent` kept its consumable
/// capacity in `kept` (its answer to a create or replace): `None` when
/// `sent` has none to keep (no GPUs), so nothing can be told.
pub fn kept_consumable_capacity(sent: &[Device], kept: &[Device]) -> Option<bool> {
    let shared = |d: &Device| d.allow_multiple_allocations == Some(true);
    if !sent.iter().any(shared) {
        return None;
    }
    Some(kept.iter().any(shared))
}
