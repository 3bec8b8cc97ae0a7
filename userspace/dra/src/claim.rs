// SPDX-License-Identifier: GPL-2.0

//! What an allocated ResourceClaim (`resource.k8s.io/v1`) asks of this
//! node: one [`Alloc`] per device result of this driver, each a vGPU to
//! create.
//!
//! **Sizes.** A vGPU gets the capacity the scheduler consumed on its
//! device for the claim (`consumedCapacity`, KEP-5075): `memory` in bytes,
//! `cores` in percent. A result without `consumedCapacity` comes from a
//! scheduler that allocates devices whole (consumable capacity off): its
//! vGPU gets the whole GPU.
//!
//! **Totals over several GPUs.** A request for N devices may also carry,
//! in the claim's or its class's opaque configuration for this driver,
//! totals for the request ([`Parameters`]): then each of its N vGPUs gets
//! memory L/N and cores M/N (rounded down, memory to whole MiB), as
//! Volcano's mGPU splits a multi-GPU request. The scheduler accounts per
//! device, so each device must have been given at least that much
//! (`capacity.requests` of L/N and M/N): a vGPU never holds more than the
//! scheduler set aside for it, and a claim whose totals do not fit what
//! was consumed is refused.

use std::collections::BTreeMap;

use k8s_openapi::api::resource::v1::{DeviceRequestAllocationResult, ResourceClaim};
use serde::{Deserialize, Serialize};

use crate::gpus::GpuFacts;
use crate::quantity::parse_whole;
use crate::slice::{device_index, CORES, MEMORY, MEMORY_STEP};
use crate::{Error, Result};

/// The API version of [`Parameters`].
pub const PARAMETERS_API_VERSION: &str = "vgpu.dev/v1";
/// The kind of [`Parameters`].
pub const PARAMETERS_KIND: &str = "VgpuParameters";

/// One device of the claim, as a vGPU to create.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Alloc {
    /// The request it satisfies (`request` or `request/subrequest`).
    pub request: String,
    /// Its pool (this node).
    pub pool: String,
    /// Its device (`gpu-K`).
    pub device: String,
    /// K.
    pub gpu: u32,
    /// The vGPU's memory ceiling in bytes.
    pub memory: u64,
    /// The vGPU's compute share in percent.
    pub cores: u32,
    /// The allocation's share ID, if it shares the device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share_id: Option<String>,
}

/// A request's totals, from an opaque configuration:
/// `{"apiVersion": "vgpu.dev/v1", "kind": "VgpuParameters",
/// "memory": "4Gi", "cores": 60}`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Parameters {
    /// [`PARAMETERS_API_VERSION`].
    pub api_version: String,
    /// [`PARAMETERS_KIND`].
    pub kind: String,
    /// Total memory of the request's vGPUs (a quantity).
    #[serde(default)]
    pub memory: Option<serde_json::Value>,
    /// Total cores of the request's vGPUs, in percent (a quantity).
    #[serde(default)]
    pub cores: Option<serde_json::Value>,
}

fn quantity(v: &serde_json::Value) -> Option<u64> {
    match v {
        serde_json::Value::Number(n) => n.as_u64(),
        serde_json::Value::String(s) => parse_whole(s),
        _ => None,
    }
}

/// The pods the claim is reserved for (UIDs).
pub fn reserved_pods(claim: &ResourceClaim) -> Vec<String> {
    claim
        .status
        .as_ref()
        .and_then(|s| s.reserved_for.as_ref())
        .map(|r| {
            r.iter()
                .filter(|c| c.resource == "pods" && c.api_group.as_deref().unwrap_or("").is_empty())
                .map(|c| c.uid.clone())
                .collect()
        })
        .unwrap_or_default()
}

fn consumed(r: &DeviceRequestAllocationResult, what: &str, whole: u64) -> Result<u64> {
    let Some(map) = &r.consumed_capacity else {
        return Ok(whole);
    };
    let Some(q) = map.get(what) else {
        return Ok(whole);
    };
    parse_whole(&q.0).ok_or_else(|| {
        Error::Claim(format!(
            "device {}: consumed {what} {:?} is not a whole number",
            r.device, q.0
        ))
    })
}

/// The totals per request name from the allocation's opaque configs for
/// `driver` (a config naming no requests applies to all; a claim's config
/// comes after its class's and wins).
fn totals(claim: &ResourceClaim, driver: &str) -> Result<BTreeMap<Option<String>, Parameters>> {
    let mut out = BTreeMap::new();
    let configs = claim
        .status
        .as_ref()
        .and_then(|s| s.allocation.as_ref())
        .and_then(|a| a.devices.as_ref())
        .and_then(|d| d.config.as_ref());
    for c in configs.into_iter().flatten() {
        let Some(o) = &c.opaque else { continue };
        if o.driver != driver {
            continue;
        }
        let p: Parameters = serde_json::from_value(o.parameters.0.clone()).map_err(|e| {
            Error::Claim(format!(
                "the opaque parameters for {driver} are not {PARAMETERS_KIND}: {e}"
            ))
        })?;
        if p.api_version != PARAMETERS_API_VERSION || p.kind != PARAMETERS_KIND {
            return Err(Error::Claim(format!(
                "opaque parameters of {}/{}: this driver reads {PARAMETERS_API_VERSION}/{PARAMETERS_KIND}",
                p.api_version, p.kind
            )));
        }
        match c.requests.as_deref() {
            None | Some([]) => {
                out.insert(None, p);
            }
            Some(reqs) => {
                for r in reqs {
                    out.insert(Some(r.clone()), p.clone());
                }
            }
        }
    }
    Ok(out)
}

/// The vGPUs claim `uid` asks of node `node`'s GPUs.
pub fn allocations(
    claim: &ResourceClaim,
    uid: &str,
    driver: &str,
    node: &str,
    gpus: &[GpuFacts],
) -> Result<Vec<Alloc>> {
    let name = claim.metadata.name.as_deref().unwrap_or("?");
    if claim.metadata.uid.as_deref() != Some(uid) {
        return Err(Error::Claim(format!(
            "claim {name} has UID {:?}, not {uid}: it was deleted (and maybe made again)",
            claim.metadata.uid.as_deref().unwrap_or("")
        )));
    }
    let results = claim
        .status
        .as_ref()
        .and_then(|s| s.allocation.as_ref())
        .and_then(|a| a.devices.as_ref())
        .and_then(|d| d.results.as_ref())
        .ok_or_else(|| Error::Claim(format!("claim {name} is not allocated")))?;
    let totals = totals(claim, driver)?;
    let ours: Vec<&DeviceRequestAllocationResult> =
        results.iter().filter(|r| r.driver == driver).collect();
    let mut out = Vec::new();
    for r in &ours {
        if r.pool != node {
            return Err(Error::Claim(format!(
                "device {} of pool {} is not on this node ({node})",
                r.device, r.pool
            )));
        }
        if r.admin_access == Some(true) {
            return Err(Error::Claim(format!(
                "device {}: admin access is not supported (a vGPU is always a tenant's)",
                r.device
            )));
        }
        let gpu = device_index(&r.device)
            .and_then(|k| gpus.iter().find(|g| g.index == k))
            .ok_or_else(|| {
                Error::Claim(format!("device {} is not a GPU of this node", r.device))
            })?;
        let memory = consumed(r, MEMORY, gpu.memory / MEMORY_STEP * MEMORY_STEP)?;
        let cores = consumed(r, CORES, 100)?;
        if memory == 0 || cores == 0 || cores > 100 {
            return Err(Error::Claim(format!(
                "device {}: memory {memory} bytes and {cores}% cores: memory must be above 0 and cores 1 to 100",
                r.device
            )));
        }
        let mut a = Alloc {
            request: r.request.clone(),
            pool: r.pool.clone(),
            device: r.device.clone(),
            gpu: gpu.index,
            memory,
            cores: cores as u32,
            share_id: r.share_id.clone(),
        };
        // The request's totals, split over its devices.
        let parent = r
            .request
            .split('/')
            .next()
            .unwrap_or(&r.request)
            .to_string();
        let total = totals
            .get(&Some(r.request.clone()))
            .or_else(|| totals.get(&Some(parent)))
            .or_else(|| totals.get(&None));
        if let Some(p) = total {
            let n = ours.iter().filter(|o| o.request == r.request).count() as u64;
            if let Some(m) = &p.memory {
                let l = quantity(m).ok_or_else(|| {
                    Error::Claim(format!(
                        "{PARAMETERS_KIND}: memory {m} is not a whole quantity"
                    ))
                })?;
                let each = l / n / MEMORY_STEP * MEMORY_STEP;
                check_split(r, MEMORY, l, n, each, a.memory)?;
                a.memory = each;
            }
            if let Some(c) = &p.cores {
                let m = quantity(c).ok_or_else(|| {
                    Error::Claim(format!(
                        "{PARAMETERS_KIND}: cores {c} is not a whole number"
                    ))
                })?;
                let each = m / n;
                check_split(r, CORES, m, n, each, u64::from(a.cores))?;
                a.cores = each as u32;
            }
        }
        out.push(a);
    }
    Ok(out)
}

fn check_split(
    r: &DeviceRequestAllocationResult,
    what: &str,
    total: u64,
    n: u64,
    each: u64,
    consumed: u64,
) -> Result<()> {
    if each == 0 {
        return Err(Error::Claim(format!(
            "request {}: {what} {total} over {n} devices leaves none for each",
            r.request
        )));
    }
    if each > consumed {
        return Err(Error::Claim(format!(
            "request {}: {what} {total} over {n} devices is {each} each, but the scheduler set aside {consumed} on {}: ask capacity.requests.{what} of at least {each}",
            r.request, r.device
        )));
    }
    Ok(())
}
