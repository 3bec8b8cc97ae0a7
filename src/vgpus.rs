// SPDX-License-Identifier: GPL-2.0

//! The vGPU table and its sysfs interface (`Documentation/ABI` style entries
//! are in `docs/sysfs-class-vgpu`).
//!
//! `/sys/class/vgpu/create` and `/sys/class/vgpu/remove` take a vGPU number;
//! each vGPU `N` has a node `/dev/vgpuN` and a directory
//! `/sys/class/vgpu/vgpuN/` with its settings and counters. Only root can
//! write (the files are 0644 or 0200, owned by root).

use core::fmt::Write;
use kernel::{
    new_mutex,
    prelude::*,
    str::CString,
    sync::{Arc, Mutex},
};

use crate::compute::{self, us};
use crate::config::{self, ParseError};
use crate::kapi::{
    chrdev::{DevT, Node},
    class::Class,
    sysfs::{ClassFiles, DeviceFiles, DeviceFilesGroup, Emit, FileSpec},
};
use crate::ledger::Ledger;
use crate::sched::{Compute, GpuSched};

/// vGPU numbers run from 0 to `MAX_VGPU`; vGPU `N` is minor `N + 1`.
pub(crate) const MAX_VGPU: u32 = 254;

fn errno(e: ParseError) -> Error {
    match e {
        ParseError::Invalid => EINVAL,
        ParseError::Range => ERANGE,
    }
}

/// A vGPU's settings.
pub(crate) struct Config {
    /// Index of the backing GPU (its `/dev/nvidiaK` minor), once set.
    pub(crate) gpu: Option<u32>,
    /// Memory ceiling (`u64::MAX`: none) and what is charged against it.
    pub(crate) memory: Ledger,
    /// The cgroup v2 path it is bound to; empty: unbound (nobody may open).
    pub(crate) cgroup: KVec<u8>,
    /// VRAM allocations refused for passing the memory limit.
    pub(crate) refused: u64,
    /// Bytes of `memory` charged for managed (nvidia-uvm) mappings.
    pub(crate) managed: u64,
    /// Calls of its container refused by default deny (`src/deny.rs`).
    pub(crate) denied: u64,
}

/// One vGPU.
#[pin_data]
pub(crate) struct Vgpu {
    /// Its number.
    pub(crate) id: u32,
    /// Settings.
    #[pin]
    pub(crate) config: Mutex<Config>,
    /// Open proxy files of `/dev/vgpuN`.
    #[pin]
    pub(crate) users: Mutex<u32>,
    /// Compute share, the TSGs it schedules, counters.
    #[pin]
    pub(crate) compute: Mutex<Compute>,
    /// Its node and sysfs directory, until removed.
    #[pin]
    node: Mutex<Option<Node>>,
    /// The nvidia-uvm spaces that hold charges on it (see [`crate::uvm`]).
    #[pin]
    pub(crate) uvm_spaces: Mutex<KVec<Arc<crate::uvm::Space>>>,
}

impl Vgpu {
    /// Whether the calling task's cgroup may open this vGPU.
    pub(crate) fn admits_current(&self) -> Result<bool> {
        let mut buf = KVec::with_capacity(config::CGROUP_PATH_MAX + 1, GFP_KERNEL)?;
        buf.resize(config::CGROUP_PATH_MAX + 1, 0, GFP_KERNEL)?;
        let len = crate::kapi::cgroup::current_path(&mut buf)?;
        let cfg = self.config.lock();
        Ok(config::cgroup_contains(&cfg.cgroup, &buf[..len]))
    }

    /// Charges `bytes` of VRAM. Over the ceiling, managed mappings that are
    /// gone are refunded first and the charge is tried once more; a refusal
    /// is counted. Takes mmap locks: call with no vgpu lock held.
    pub(crate) fn charge(&self, bytes: u64) -> bool {
        if self.config.lock().memory.reserve(bytes).is_ok() {
            return true;
        }
        crate::uvm::reconcile_vgpu(self);
        let mut cfg = self.config.lock();
        if cfg.memory.reserve(bytes).is_ok() {
            return true;
        }
        cfg.refused += 1;
        false
    }

    /// Counts a call of its container refused by default deny.
    pub(crate) fn count_denied(&self) {
        self.config.lock().denied += 1;
    }

    /// Drops its list of nvidia-uvm spaces (it is going away): the spaces
    /// hold the vGPU too.
    fn forget_spaces(&self) {
        drop(core::mem::take(&mut *self.uvm_spaces.lock()));
    }
}

/// All vGPUs, and what creating one needs.
#[pin_data]
pub(crate) struct Vgpus {
    #[pin]
    table: Mutex<KVec<Arc<Vgpu>>>,
    files: DeviceFilesGroup<VgpuFiles>,
    major: u32,
    /// GPUs that have a real node (`/dev/nvidiaK` resolved at load).
    gpus: KVec<u32>,
}

impl Vgpus {
    /// An empty table for nodes under `major`, over the real GPUs `gpus`.
    pub(crate) fn new(major: u32, gpus: KVec<u32>) -> Result<Arc<Self>> {
        Arc::pin_init(
            try_pin_init!(Self {
                table <- new_mutex!(KVec::new()),
                files: DeviceFilesGroup::new()?,
                major,
                gpus,
            }),
            GFP_KERNEL,
        )
    }

    /// vGPU `id`, if it exists.
    pub(crate) fn get(&self, id: u32) -> Option<Arc<Vgpu>> {
        self.table.lock().iter().find(|v| v.id == id).cloned()
    }

    /// The calling task's vGPUs: those bound to its cgroup's nearest
    /// ancestor-or-self that has any.
    pub(crate) fn for_current(&self) -> Result<KVec<Arc<Vgpu>>> {
        let mut buf = KVec::with_capacity(config::CGROUP_PATH_MAX + 1, GFP_KERNEL)?;
        buf.resize(config::CGROUP_PATH_MAX + 1, 0, GFP_KERNEL)?;
        let len = crate::kapi::cgroup::current_path(&mut buf)?;
        let path = &buf[..len];
        let table = self.table.lock();
        let mut best = 0;
        for v in table.iter() {
            let cfg = v.config.lock();
            if config::cgroup_contains(&cfg.cgroup, path) {
                best = best.max(cfg.cgroup.len());
            }
        }
        let mut out = KVec::new();
        for v in table.iter() {
            let cfg = v.config.lock();
            if best > 0 && cfg.cgroup.len() == best && config::cgroup_contains(&cfg.cgroup, path) {
                drop(cfg);
                out.push(v.clone(), GFP_KERNEL)?;
            }
        }
        Ok(out)
    }

    /// The vGPUs backed by GPU `gpu`, in number order.
    pub(crate) fn on_gpu(&self, gpu: u32) -> Result<KVec<Arc<Vgpu>>> {
        let table = self.table.lock();
        let mut out = KVec::new();
        for v in table.iter() {
            if v.config.lock().gpu == Some(gpu) {
                out.push(v.clone(), GFP_KERNEL)?;
            }
        }
        out.sort_unstable_by_key(|v| v.id);
        Ok(out)
    }

    /// Creates vGPU `id`: unbound, no GPU, no memory limit.
    pub(crate) fn create(&self, class: &Class, id: u32) -> Result {
        let mut table = self.table.lock();
        if table.iter().any(|v| v.id == id) {
            return Err(EEXIST);
        }
        let v = Arc::pin_init(
            try_pin_init!(Vgpu {
                id,
                config <- new_mutex!(Config {
                    gpu: None,
                    memory: Ledger::new(u64::MAX),
                    cgroup: KVec::new(),
                    refused: 0,
                    denied: 0,
                    managed: 0,
                }),
                users <- new_mutex!(0),
                compute <- new_mutex!(Compute::new()),
                node <- new_mutex!(None),
                uvm_spaces <- new_mutex!(KVec::new()),
            }),
            GFP_KERNEL,
        )?;
        let cname = CString::try_from_fmt(fmt!("vgpu{id}"))?;
        table.reserve(1, GFP_KERNEL)?;
        // The device's driver data is the vGPU, which the node holds until
        // `remove` (or `clear`) takes it out and drops it.
        let node = Node::with_groups(
            class,
            DevT::new(self.major, id + 1),
            &cname,
            &self.files,
            v.clone(),
        )?;
        *v.node.lock() = Some(node);
        table.push(v, GFP_KERNEL)?;
        Ok(())
    }

    /// Removes vGPU `id`; `EBUSY` while one of its nodes is open.
    pub(crate) fn remove(&self, id: u32) -> Result {
        // Managed mappings that are gone no longer hold it.
        if let Some(v) = self.get(id) {
            crate::uvm::reconcile_vgpu(&v);
        }
        let mut table = self.table.lock();
        let i = table.iter().position(|v| v.id == id).ok_or(ENOENT)?;
        if *table[i].users.lock() > 0 {
            return Err(EBUSY);
        }
        // Memory charged to it (by processes that hold /dev/vgpuctl open)
        // keeps it too; a /dev/vgpuctl file that merely knows it finds it
        // backed by no GPU from now on.
        {
            let mut cfg = table[i].config.lock();
            if cfg.memory.used() > 0 || table[i].compute.lock().objects() > 0 {
                return Err(EBUSY);
            }
            cfg.gpu = None;
            cfg.cgroup.clear();
        }
        let v = table.remove(i).map_err(|_| ENOENT)?;
        // Device and files go while we still hold the vGPU.
        drop(v.node.lock().take());
        v.forget_spaces();
        Ok(())
    }

    /// Removes every vGPU (module unload: no node is open).
    pub(crate) fn clear(&self) {
        let table = core::mem::take(&mut *self.table.lock());
        for v in table.iter() {
            drop(v.node.lock().take());
            v.forget_spaces();
        }
    }

    fn has_gpu(&self, gpu: u32) -> bool {
        self.gpus.contains(&gpu)
    }
}

/// `/sys/class/vgpu/{create,remove}`.
pub(crate) struct ClassCtl;

impl ClassFiles for ClassCtl {
    const FILES: &'static [FileSpec] = &[
        FileSpec {
            name: c"create",
            mode: 0o200,
        },
        FileSpec {
            name: c"remove",
            mode: 0o200,
        },
    ];

    fn show(_index: usize, _out: &mut Emit<'_>) -> Result {
        Err(EPERM)
    }

    fn store(index: usize, input: &[u8]) -> Result {
        let id = config::parse_index(input, MAX_VGPU).map_err(errno)?;
        let state = crate::state()?;
        match index {
            0 => state.vgpus.create(&state.class, id),
            _ => state.vgpus.remove(id),
        }
    }
}

/// The files of `/sys/class/vgpu/vgpuN/`.
pub(crate) struct VgpuFiles;

const F_GPU: usize = 0;
const F_MEMORY_LIMIT: usize = 1;
const F_MEMORY_USED: usize = 2;
const F_CGROUP: usize = 3;
const F_USERS: usize = 4;
const F_COMPUTE_SHARE: usize = 5;
const F_COMPUTE_GRANTED_US: usize = 6;
const F_COMPUTE_THROTTLED_US: usize = 7;
const F_COMPUTE_TSGS: usize = 8;
const F_MEMORY_REFUSED: usize = 9;
const F_MEMORY_MANAGED: usize = 10;
const F_CALLS_DENIED: usize = 11;

impl DeviceFiles for VgpuFiles {
    type Data = Vgpu;

    const FILES: &'static [FileSpec] = &[
        FileSpec {
            name: c"gpu",
            mode: 0o644,
        },
        FileSpec {
            name: c"memory_limit",
            mode: 0o644,
        },
        FileSpec {
            name: c"memory_used",
            mode: 0o444,
        },
        FileSpec {
            name: c"cgroup",
            mode: 0o644,
        },
        FileSpec {
            name: c"users",
            mode: 0o444,
        },
        FileSpec {
            name: c"compute_share",
            mode: 0o644,
        },
        FileSpec {
            name: c"compute_granted_us",
            mode: 0o444,
        },
        FileSpec {
            name: c"compute_throttled_us",
            mode: 0o444,
        },
        FileSpec {
            name: c"compute_tsgs",
            mode: 0o444,
        },
        FileSpec {
            name: c"memory_refused",
            mode: 0o444,
        },
        FileSpec {
            name: c"memory_managed",
            mode: 0o444,
        },
        FileSpec {
            name: c"calls_denied",
            mode: 0o444,
        },
    ];

    fn show(v: &Vgpu, index: usize, out: &mut Emit<'_>) -> Result {
        if matches!(index, F_MEMORY_USED | F_MEMORY_MANAGED) {
            // Exact at every reading: managed mappings that are gone are
            // refunded first.
            crate::uvm::reconcile_vgpu(v);
        }
        let cfg = v.config.lock();
        let r = match index {
            F_GPU => match cfg.gpu {
                Some(g) => writeln!(out, "{g}"),
                None => writeln!(out),
            },
            F_MEMORY_LIMIT => match cfg.memory.limit() {
                u64::MAX => writeln!(out, "max"),
                l => writeln!(out, "{l}"),
            },
            F_MEMORY_USED => writeln!(out, "{}", cfg.memory.used()),
            F_MEMORY_REFUSED => writeln!(out, "{}", cfg.refused),
            F_MEMORY_MANAGED => writeln!(out, "{}", cfg.managed),
            F_CALLS_DENIED => writeln!(out, "{}", cfg.denied),
            F_CGROUP => {
                let s = core::str::from_utf8(&cfg.cgroup).unwrap_or("?");
                writeln!(out, "{s}")
            }
            F_USERS => {
                drop(cfg);
                writeln!(out, "{}", *v.users.lock())
            }
            F_COMPUTE_SHARE | F_COMPUTE_GRANTED_US | F_COMPUTE_THROTTLED_US | F_COMPUTE_TSGS => {
                drop(cfg);
                let c = v.compute.lock();
                match index {
                    F_COMPUTE_SHARE => writeln!(out, "{}", c.share),
                    F_COMPUTE_GRANTED_US => writeln!(out, "{}", us(c.granted_ns)),
                    F_COMPUTE_THROTTLED_US => writeln!(out, "{}", us(c.throttled_ns)),
                    _ => writeln!(out, "{}", c.objects()),
                }
            }
            _ => return Err(EINVAL),
        };
        r.map_err(|_| EFBIG)
    }

    fn store(v: &Vgpu, index: usize, input: &[u8]) -> Result {
        match index {
            F_GPU => {
                let g = config::parse_index(input, 247).map_err(errno)?;
                if !crate::state()?.vgpus.has_gpu(g) {
                    return Err(ENODEV);
                }
                // The backing GPU cannot change under open files, nor
                // under TSGs running on the old one.
                let users = v.users.lock();
                if *users > 0 || v.compute.lock().objects() > 0 {
                    return Err(EBUSY);
                }
                v.config.lock().gpu = Some(g);
                drop(users);
                Ok(())
            }
            F_MEMORY_LIMIT => {
                let l = config::parse_limit(input).map_err(errno)?;
                v.config.lock().memory.set_limit(l);
                Ok(())
            }
            F_COMPUTE_SHARE => {
                v.compute.lock().share = compute::parse_share(input).map_err(errno)?;
                Ok(())
            }
            F_CGROUP => {
                let p = config::parse_cgroup_path(input).map_err(errno)?;
                let mut path = KVec::with_capacity(p.len(), GFP_KERNEL)?;
                path.extend_from_slice(p, GFP_KERNEL)?;
                v.config.lock().cgroup = path;
                Ok(())
            }
            _ => Err(EPERM),
        }
    }
}

/// The files of `/sys/class/vgpu/gpuK/`: GPU `K`'s scheduling settings.
pub(crate) struct GpuFiles;

const G_POLICY: usize = 0;
const G_PERIOD_US: usize = 1;

impl DeviceFiles for GpuFiles {
    type Data = GpuSched;

    const FILES: &'static [FileSpec] = &[
        FileSpec {
            name: c"compute_policy",
            mode: 0o644,
        },
        FileSpec {
            name: c"compute_period_us",
            mode: 0o644,
        },
    ];

    fn show(g: &GpuSched, index: usize, out: &mut Emit<'_>) -> Result {
        let s = g.settings();
        match index {
            G_POLICY => writeln!(out, "{}", s.policy.name()),
            G_PERIOD_US => writeln!(out, "{}", s.period_us),
            _ => return Err(EINVAL),
        }
        .map_err(|_| EFBIG)
    }

    fn store(g: &GpuSched, index: usize, input: &[u8]) -> Result {
        match index {
            G_POLICY => {
                let p = compute::parse_policy(input).map_err(errno)?;
                g.update(|s| s.policy = p);
            }
            G_PERIOD_US => {
                let us = compute::parse_period_us(input).map_err(errno)?;
                g.update(|s| s.period_us = us);
            }
            _ => return Err(EPERM),
        }
        Ok(())
    }
}
