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
    sysfs::{DeviceFiles, DeviceFilesGroup, Emit, FileSpec},
};
use crate::ledger::Ledger;
use crate::procs::Procs;
use crate::vgpu::{Compute, Config, GpuSet, Vgpu};

/// vGPU numbers run from 0 to `MAX_VGPU`; vGPU `N` is minor `N + 1`.
pub(crate) const MAX_VGPU: u32 = 254;

/// The errno a sysfs write that does not parse fails with.
pub(crate) fn errno(e: ParseError) -> Error {
    match e {
        ParseError::Invalid => EINVAL,
        ParseError::Range => ERANGE,
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
    gpus: GpuSet,
}

impl Vgpus {
    /// An empty table for nodes under `major`, over the real GPUs `gpus`.
    pub(crate) fn new(major: u32, gpus: GpuSet) -> Result<Arc<Self>> {
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

    /// The major of the vGPUs' nodes.
    pub(crate) fn major(&self) -> u32 {
        self.major
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
        // An insertion sort of a handful: `core`'s sorts, as rustc 1.85
        // builds them, end in a panic objtool does not know returns never.
        for i in 1..out.len() {
            let mut j = i;
            while j > 0 && out[j - 1].id > out[j].id {
                out.swap(j - 1, j);
                j -= 1;
            }
        }
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
                reclaimers <- new_mutex!(KVec::new()),
                procs <- new_mutex!(Procs::default()),
                backable: self.gpus,
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
            v.reclaim();
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
        v.forget_reclaimers();
        Ok(())
    }

    /// Removes every vGPU (module unload: no node is open).
    pub(crate) fn clear(&self) {
        let table = core::mem::take(&mut *self.table.lock());
        for v in table.iter() {
            drop(v.node.lock().take());
            v.forget_reclaimers();
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
const F_COMPUTE_PRIORITY: usize = 12;
const F_COMPUTE_FROZEN: usize = 13;
const F_COMPUTE_BUSY_US: usize = 14;
const F_PROCESSES: usize = 15;

/// Waits until `v`'s window is closed: at most [`FREEZE_WAIT_MS`] (the
/// scheduler closes it within one of its steps; a stopped scheduler has
/// closed it already).
fn wait_closed(v: &Vgpu) {
    for _ in 0..FREEZE_WAIT_MS {
        if !v.compute.lock().window_open {
            return;
        }
        crate::kapi::kthread::sleep_us(1000);
    }
}

/// `processes`: one line per process using the vGPU (`src/procs.rs`):
/// its PID on the host, the bytes charged to it, and its command name
/// (bytes outside printable ASCII, and spaces, written `?`, so a line
/// always has three fields). Processes past what one page holds are left
/// out, and a last line `...` says so.
fn show_processes(v: &Vgpu, out: &mut Emit<'_>) -> Result {
    let procs = v.procs.lock();
    for u in procs.visible() {
        let mut comm = [0u8; crate::kapi::pid::COMM_LEN];
        let name = crate::procs::printable(u.comm(), &mut comm);
        if out.room() < LINE_MAX + 4 {
            return writeln!(out, "...").map_err(|_| EFBIG);
        }
        writeln!(out, "{} {} {}", u.pid().host_nr(), u.bytes(), name).map_err(|_| EFBIG)?;
    }
    Ok(())
}

/// The longest line of `processes`: a PID, a byte count, a command name.
const LINE_MAX: usize = 11 + 1 + 20 + 1 + crate::kapi::pid::COMM_LEN + 1;

/// How long a freeze waits for the vGPU's window to close, in ms.
const FREEZE_WAIT_MS: u32 = 1000;

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
        FileSpec {
            name: c"compute_priority",
            mode: 0o644,
        },
        FileSpec {
            name: c"compute_frozen",
            mode: 0o644,
        },
        FileSpec {
            name: c"compute_busy_us",
            mode: 0o444,
        },
        FileSpec {
            name: c"processes",
            mode: 0o444,
        },
    ];

    fn show(v: &Vgpu, index: usize, out: &mut Emit<'_>) -> Result {
        if index == F_PROCESSES {
            v.reclaim();
            return show_processes(v, out);
        }
        if matches!(index, F_MEMORY_USED | F_MEMORY_MANAGED) {
            // Exact at every reading: managed mappings that are gone are
            // refunded first.
            v.reclaim();
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
            F_COMPUTE_SHARE
            | F_COMPUTE_GRANTED_US
            | F_COMPUTE_THROTTLED_US
            | F_COMPUTE_TSGS
            | F_COMPUTE_PRIORITY
            | F_COMPUTE_FROZEN
            | F_COMPUTE_BUSY_US => {
                drop(cfg);
                let c = v.compute.lock();
                match index {
                    F_COMPUTE_SHARE => writeln!(out, "{}", c.share),
                    F_COMPUTE_GRANTED_US => writeln!(out, "{}", us(c.granted_ns)),
                    F_COMPUTE_THROTTLED_US => writeln!(out, "{}", us(c.throttled_ns)),
                    F_COMPUTE_PRIORITY => writeln!(out, "{}", c.priority),
                    F_COMPUTE_FROZEN => writeln!(out, "{}", u8::from(c.frozen)),
                    F_COMPUTE_BUSY_US => writeln!(out, "{}", us(c.busy_ns)),
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
                if !v.backable.contains(g) {
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
            F_COMPUTE_PRIORITY => {
                v.compute.lock().priority = compute::parse_priority(input).map_err(errno)?;
                Ok(())
            }
            F_COMPUTE_FROZEN => {
                let frozen = compute::parse_frozen(input).map_err(errno)?;
                v.compute.lock().frozen = frozen;
                if frozen {
                    // The scheduler closes an open window of a frozen vGPU
                    // at its next step (its TSGs disabled and preempted):
                    // the write returns once that is done.
                    wait_closed(v);
                }
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
