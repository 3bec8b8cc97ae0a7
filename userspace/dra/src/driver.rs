// SPDX-License-Identifier: GPL-2.0

//! Prepare and unprepare: a claim's devices become vGPUs of vgpu.ko, and
//! back.
//!
//! **Prepare** (claim `ns/name`, UID `uid`): a claim already prepared
//! returns what it returned before. Otherwise the plugin reads the claim
//! from the API, finds its devices on this node ([`crate::claim`]), checks
//! that each GPU has the memory and cores left (the vGPUs already on it,
//! whoever made them, count), writes the claim down ([`crate::checkpoint`]),
//! creates one vGPU per device with the device's memory ceiling and compute
//! share, and writes the claim's CDI spec. Any failure undoes the vGPUs
//! made so far and forgets the claim.
//!
//! **Binding to the pod.** The vGPUs are bound to the pod's cgroup by the
//! CDI spec's `createRuntime` hook (`vgpuctl hook create-runtime N --pod
//! UID`), when the runtime starts each of the pod's containers, not here.
//! At prepare the pod's cgroup is only a guess: its path depends on the
//! kubelet's cgroup driver (cgroupfs or systemd), cgroup root and the
//! pod's QoS class, and a container that started before the cgroup was
//! bound would see the GPU unlimited. The hook reads the container's real
//! cgroup from `/proc/PID/cgroup`, finds in it the pod's own
//! (`pod<UID>` or `...-pod<UID with _>.slice`) and binds the vGPU there,
//! before the container's program runs; vgpu.ko applies a cgroup's vGPUs
//! to every cgroup below it, so every container of the pod gets them.
//!
//! **Unprepare** removes the claim's vGPUs (vgpu.ko refuses while a
//! process still has one open: the kubelet retries) and its CDI spec, then
//! forgets the claim. A claim this plugin does not know is done.

use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;
use std::sync::Mutex;

use vgpuctl::cdi;
use vgpuctl::model::VgpuInfo;
use vgpuctl::sysfs::Sysfs;

use crate::checkpoint::{Checkpoint, PreparedClaim, PreparedDevice, Stage, Store};
use crate::claim::{allocations, reserved_pods, Alloc};
use crate::gpus::GpuFacts;
use crate::kube::KubeApi;
use crate::quantity::format_bytes;
use crate::slice::{kept_consumable_capacity, resource_slice, whole_gpus};

use k8s_openapi::api::resource::v1::{Device, ResourceSlice};

/// What the plugin says once it finds the API server drops consumable
/// capacity.
const WHOLE_GPUS: &str = "the API server drops consumable capacity (feature gate DRAConsumableCapacity off): GPUs are published whole, one claim each";
use crate::{Error, Result};

/// The plugin's settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// DRA driver name.
    pub driver: String,
    /// This node's name (the pool).
    pub node: String,
    /// Where CDI specs go (`/var/run/cdi`).
    pub cdi_dir: PathBuf,
    /// The vgpuctl the CDI hooks run.
    pub hook_path: String,
}

/// A claim to prepare or unprepare, as the kubelet names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimRef {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// UID.
    pub uid: String,
}

/// The driver: prepares and unprepares claims, one at a time.
pub struct Driver {
    cfg: Config,
    sysfs: Sysfs,
    api: Box<dyn KubeApi>,
    gpus: Vec<GpuFacts>,
    store: Store,
    state: Mutex<Checkpoint>,
    /// Whether the API server keeps consumable capacity in the slice
    /// (`DRAConsumableCapacity` on); `None` until a publish finds out.
    consumable: Mutex<Option<bool>>,
}

impl Driver {
    /// A driver over these parts; reads the checkpoint and finishes what a
    /// plugin that died left half-done. Returns the driver and one line
    /// per thing recovered.
    pub fn new(
        cfg: Config,
        sysfs: Sysfs,
        api: Box<dyn KubeApi>,
        gpus: Vec<GpuFacts>,
        store: Store,
    ) -> Result<(Self, Vec<String>)> {
        let mut state = store.load()?;
        let mut notes = Vec::new();
        let mut forget = Vec::new();
        for (uid, c) in &state.claims {
            let lost: Vec<u32> = c
                .devices
                .iter()
                .map(|d| d.vgpu)
                .filter(|&v| !sysfs.exists(v))
                .collect();
            let why = if c.stage == Stage::Preparing {
                "was half-prepared"
            } else if !lost.is_empty() {
                // vgpu.ko was reloaded under us: the claim's vGPUs are gone.
                "lost vGPUs (module reloaded?)"
            } else {
                continue;
            };
            match undo(&sysfs, &cfg, uid, c) {
                Ok(()) => {
                    notes.push(format!(
                        "claim {}/{} ({uid}) {why}: its vGPUs are removed, the kubelet's retry prepares it again",
                        c.namespace, c.name
                    ));
                    forget.push(uid.clone());
                }
                // Kept: the next prepare of this claim tries again.
                Err(e) => notes.push(format!(
                    "claim {}/{} ({uid}) {why}, but its vGPUs could not be removed: {e}",
                    c.namespace, c.name
                )),
            }
        }
        if !forget.is_empty() {
            for uid in forget {
                state.claims.remove(&uid);
            }
            store.save(&state)?;
        }
        Ok((
            Driver {
                cfg,
                sysfs,
                api,
                gpus,
                store,
                state: Mutex::new(state),
                consumable: Mutex::new(None),
            },
            notes,
        ))
    }

    /// The GPUs this driver serves.
    pub fn gpus(&self) -> &[GpuFacts] {
        &self.gpus
    }

    /// Whether the API server keeps the slice's consumable capacity (GPUs
    /// shared by capacity) or drops it (GPUs published whole), once a
    /// publish has found out.
    pub fn consumable_capacity(&self) -> Option<bool> {
        *self.consumable.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Publishes the node's ResourceSlice: created if missing, replaced
    /// (generation + 1) if its devices differ, else left alone. Each GPU's
    /// compute policy is read afresh (an administrator may change it at
    /// any time; the profiles' DeviceClasses select by it).
    ///
    /// The devices share each GPU by capacity where the API server keeps
    /// `allowMultipleAllocations` and the request policies; where it drops
    /// them (`DRAConsumableCapacity` off, the default in 1.34 and 1.35) the
    /// plugin publishes them as that server stores them, whole GPUs
    /// ([`whole_gpus`]), and so finds its slice up to date next time
    /// instead of replacing it at every check. Which of the two it is, the
    /// plugin learns once per start: from the stored slice when that has
    /// the shared devices, else from a dry-run replace (nothing stored),
    /// and again from the answer to each real write.
    pub fn publish(&self, driver_version: Option<&str>) -> Result<String> {
        let mut gpus = self.gpus.clone();
        for g in &mut gpus {
            g.compute_policy = self
                .sysfs
                .read_gpu_attr(g.index, "compute_policy")?
                .map(|p| p.trim().to_string())
                .filter(|p| !p.is_empty());
        }
        let mut want = resource_slice(&self.cfg.driver, &self.cfg.node, &gpus, driver_version, 0);
        let name = want.metadata.name.clone().unwrap_or_default();
        let shared = want.spec.devices.clone().unwrap_or_default();
        let have = self.api.slice(&name)?;
        let same = |h: &ResourceSlice, devices: &[Device]| {
            h.spec.devices.as_deref().unwrap_or_default() == devices
                && h.spec.node_name == want.spec.node_name
                && h.spec.driver == want.spec.driver
        };
        if let Some(h) = &have {
            want.spec.pool.generation = h.spec.pool.generation + 1;
            want.metadata.resource_version = h.metadata.resource_version.clone();
        }
        if let Some(uid) = self.api.node_uid(&self.cfg.node)? {
            want.metadata.owner_references = Some(vec![
                k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                    api_version: "v1".into(),
                    kind: "Node".into(),
                    name: self.cfg.node.clone(),
                    uid,
                    controller: Some(true),
                    block_owner_deletion: None,
                },
            ]);
        }
        let mut note = String::new();
        let mut consumable = self.consumable_capacity();
        if consumable.is_none() {
            consumable = match &have {
                Some(h) if same(h, &shared) => kept_consumable_capacity(&shared, &shared),
                _ => {
                    // Ask the server what it would keep of the shared
                    // devices; a dry run stores nothing and bumps nothing.
                    let kept = self.api.put_slice(&want, have.is_some(), true)?;
                    kept_consumable_capacity(
                        &shared,
                        kept.spec.devices.as_deref().unwrap_or_default(),
                    )
                }
            };
            if consumable == Some(false) {
                note = format!("{}; ", WHOLE_GPUS);
            }
            self.set_consumable(consumable);
        }
        if consumable == Some(false) {
            want.spec.devices = Some(whole_gpus(&shared));
        }
        let devices = want.spec.devices.clone().unwrap_or_default();
        if let Some(h) = &have {
            if same(h, &devices) {
                return Ok(format!("{note}ResourceSlice {name}: up to date"));
            }
        }
        let kept = self.api.put_slice(&want, have.is_some(), false)?;
        if consumable != Some(false)
            && kept_consumable_capacity(&devices, kept.spec.devices.as_deref().unwrap_or_default())
                == Some(false)
        {
            // The gate went off under a running plugin: what the server
            // kept is the whole-GPU slice, which the next check finds up
            // to date.
            self.set_consumable(Some(false));
            note = format!("{}; ", WHOLE_GPUS);
        }
        Ok(format!(
            "{note}ResourceSlice {name}: {} ({} GPUs, generation {})",
            if have.is_some() {
                "replaced"
            } else {
                "created"
            },
            self.gpus.len(),
            want.spec.pool.generation
        ))
    }

    fn set_consumable(&self, v: Option<bool>) {
        *self.consumable.lock().unwrap_or_else(|p| p.into_inner()) = v;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Checkpoint> {
        // A panic while holding the lock left the state as the checkpoint
        // on disk has it at worst; go on with it.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Prepares `c`: its devices as the kubelet's answer wants them.
    pub fn prepare(&self, c: &ClaimRef) -> Result<Vec<PreparedDevice>> {
        let mut state = self.lock();
        if let Some(p) = state.claims.get(&c.uid).cloned() {
            if p.stage == Stage::Prepared {
                return Ok(p.devices.clone());
            }
            // An earlier attempt stopped half-way and could not be undone
            // then: undo it now, or refuse while its vGPUs are busy.
            undo(&self.sysfs, &self.cfg, &c.uid, &p)?;
            state.claims.remove(&c.uid);
            self.store.save(&state)?;
        }
        let claim = self.api.claim(&c.namespace, &c.name)?;
        let allocs = allocations(&claim, &c.uid, &self.cfg.driver, &self.cfg.node, &self.gpus)?;
        if allocs.is_empty() {
            return Err(Error::Claim(format!(
                "claim {}/{} has no device of {} on this node",
                c.namespace, c.name, self.cfg.driver
            )));
        }
        // Each vGPU appears in the container as its GPU's /dev/nvidiaK:
        // two of one GPU in one claim would be one device node.
        for (i, a) in allocs.iter().enumerate() {
            if allocs[..i].iter().any(|b| b.gpu == a.gpu) {
                return Err(Error::Claim(format!(
                    "claim {}/{} has two devices on GPU {} ({}): a container sees one vGPU per GPU; ask for distinct GPUs (constraints: distinctAttribute: vgpu.dev/uuid)",
                    c.namespace, c.name, a.gpu, a.device
                )));
            }
        }
        let pods = reserved_pods(&claim);
        let pod = match pods.as_slice() {
            [p] => p.clone(),
            [] => {
                return Err(Error::Claim(format!(
                    "claim {}/{} is reserved for no pod",
                    c.namespace, c.name
                )))
            }
            _ => {
                return Err(Error::Claim(format!(
                    "claim {}/{} is reserved for {} pods: a vGPU serves the containers of one pod",
                    c.namespace,
                    c.name,
                    pods.len()
                )))
            }
        };
        self.check_room(&allocs)?;

        // Write down what is about to be made, then make it.
        let mut taken = Vec::new();
        let mut devices = Vec::new();
        for (i, a) in allocs.iter().enumerate() {
            let id = self.sysfs.free_id(&taken)?;
            taken.push(id);
            devices.push(PreparedDevice {
                vgpu: id,
                alloc: a.clone(),
                cdi_device: format!("{}={}-{i}", self.kind(), c.uid),
            });
        }
        state.claims.insert(
            c.uid.clone(),
            PreparedClaim {
                namespace: c.namespace.clone(),
                name: c.name.clone(),
                stage: Stage::Preparing,
                devices: devices.clone(),
            },
        );
        self.store.save(&state)?;

        let made = self.make(c, &devices, &pod);
        if let Err(e) = made {
            for d in &devices {
                if self.sysfs.exists(d.vgpu) {
                    let _ = self.sysfs.remove(d.vgpu);
                }
            }
            let _ = fs::remove_file(spec_path(&self.cfg, &c.uid));
            state.claims.remove(&c.uid);
            // The vGPUs are gone either way; a failed save leaves a
            // Preparing record that the next start clears.
            let _ = self.store.save(&state);
            return Err(e);
        }
        if let Some(p) = state.claims.get_mut(&c.uid) {
            p.stage = Stage::Prepared;
        }
        self.store.save(&state)?;
        Ok(devices)
    }

    fn kind(&self) -> String {
        format!("{}/claim", self.cfg.driver)
    }

    /// Whether every GPU of `allocs` has their memory and cores left.
    fn check_room(&self, allocs: &[Alloc]) -> Result<()> {
        let vgpus = VgpuInfo::read_all(&self.sysfs)?;
        let mut want: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
        for a in allocs {
            let w = want.entry(a.gpu).or_default();
            w.0 += a.memory;
            w.1 += u64::from(a.cores);
        }
        for (k, (mem, cores)) in want {
            let Some(g) = self.gpus.iter().find(|g| g.index == k) else {
                continue;
            };
            let on: Vec<&VgpuInfo> = vgpus.iter().filter(|v| v.gpu == Some(k)).collect();
            let mem_used: u64 = on.iter().map(|v| v.memory_limit.unwrap_or(g.memory)).sum();
            let cores_used: u64 = on
                .iter()
                .map(|v| u64::from(v.compute_share.unwrap_or(100)))
                .sum();
            let mem_left = g.memory.saturating_sub(mem_used);
            let cores_left = 100u64.saturating_sub(cores_used);
            if mem > mem_left || cores > cores_left {
                return Err(Error::NoRoom(format!(
                    "GPU {k} has {} and {cores_left}% cores left ({} vGPUs on it); the claim asks {} and {cores}%",
                    format_bytes(mem_left),
                    on.len(),
                    format_bytes(mem)
                )));
            }
        }
        Ok(())
    }

    /// Creates the vGPUs of `devices` and writes the claim's CDI spec.
    fn make(&self, c: &ClaimRef, devices: &[PreparedDevice], pod: &str) -> Result<()> {
        let s = &self.sysfs;
        for d in devices {
            s.create(d.vgpu)?;
            s.write_attr(d.vgpu, "gpu", &d.alloc.gpu.to_string())?;
            s.write_attr(d.vgpu, "memory_limit", &d.alloc.memory.to_string())?;
            s.write_attr(d.vgpu, "compute_share", &d.alloc.cores.to_string())?;
        }
        let infos: Vec<VgpuInfo> = devices
            .iter()
            .map(|d| VgpuInfo::read(s, d.vgpu))
            .collect::<vgpuctl::Result<_>>()?;
        let mut spec = cdi::spec(
            &infos,
            &cdi::Options {
                kind: self.kind(),
                hook: None,
            },
        );
        // The container's /proc/driver/nvidia/params, from inside its mount
        // namespace (runc refuses OCI mounts inside /proc).
        spec.container_edits
            .hooks
            .push(cdi::proc_hook(&self.cfg.hook_path));
        for (i, (dev, d)) in spec.devices.iter_mut().zip(devices).enumerate() {
            dev.name = format!("{}-{i}", c.uid);
            dev.container_edits.hooks.push(cdi::Hook {
                hook_name: "createRuntime".into(),
                path: self.cfg.hook_path.clone(),
                args: vec![
                    "vgpuctl".into(),
                    "hook".into(),
                    "create-runtime".into(),
                    d.vgpu.to_string(),
                    "--pod".into(),
                    pod.to_string(),
                ],
            });
        }
        if spec.devices.len() != devices.len() {
            return Err(Error::Other("a new vGPU has no GPU".into()));
        }
        let text = serde_json::to_vec_pretty(&spec).map_err(|e| Error::Other(e.to_string()))?;
        Ok(vgpuctl::write_atomic(&spec_path(&self.cfg, &c.uid), &text)?)
    }

    /// Unprepares `c`.
    pub fn unprepare(&self, c: &ClaimRef) -> Result<()> {
        let mut state = self.lock();
        let Some(p) = state.claims.get(&c.uid).cloned() else {
            return Ok(());
        };
        undo(&self.sysfs, &self.cfg, &c.uid, &p)?;
        state.claims.remove(&c.uid);
        self.store.save(&state)
    }

    /// The claims prepared now (UIDs).
    pub fn prepared(&self) -> Vec<String> {
        self.lock().claims.keys().cloned().collect()
    }
}

/// Removes claim `uid`'s vGPUs that exist and its CDI spec.
fn undo(sysfs: &Sysfs, cfg: &Config, uid: &str, c: &PreparedClaim) -> Result<()> {
    for d in &c.devices {
        if sysfs.exists(d.vgpu) {
            sysfs.remove(d.vgpu)?;
        }
    }
    match fs::remove_file(spec_path(cfg, uid)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(Error::Io(spec_path(cfg, uid).display().to_string(), e))
        }
        _ => Ok(()),
    }
}

/// The CDI spec file of claim `uid`.
pub fn spec_path(cfg: &Config, uid: &str) -> PathBuf {
    // Claim UIDs are the API server's (RFC 4122 text), but the kubelet's
    // request is input: keep only what a UID has.
    let safe: String = uid
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect();
    cfg.cdi_dir
        .join(format!("{}-claim_{safe}.json", cfg.driver))
}
