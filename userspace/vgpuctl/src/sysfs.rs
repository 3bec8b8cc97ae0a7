// SPDX-License-Identifier: GPL-2.0

//! All of vgpuctl's access to `/sys/class/vgpu`, rooted at a configurable
//! sysfs root so tests can run against a fake tree.
//!
//! The module's interface (see `src/vgpus.rs`):
//!
//! | file | |
//! |---|---|
//! | `class/vgpu/create`, `remove` | write a vGPU number |
//! | `class/vgpu/driver_nodes` | the NVIDIA device numbers whose open the module takes over |
//! | `class/vgpu/gpus` | (future) the GPUs the module found, see [`crate::inventory`] |
//! | `class/vgpu/vgpuN/gpu` | backing GPU index, empty when unset |
//! | `class/vgpu/vgpuN/memory_limit` | bytes or `max` |
//! | `class/vgpu/vgpuN/memory_used`, `users` | read-only counters |
//! | `class/vgpu/vgpuN/memory_managed` | read-only: the part of `memory_used` charged for managed (nvidia-uvm) mappings |
//! | `class/vgpu/vgpuN/memory_refused` | read-only: allocations refused for passing the limit |
//! | `class/vgpu/vgpuN/cgroup` | bound cgroup v2 path, empty when unbound |
//! | `class/vgpu/vgpuN/compute_share` | share of its GPU in percent, 0 to 100 (default 100) |
//! | `class/vgpu/vgpuN/compute_granted_us`, `compute_throttled_us` | read-only counters: µs its window was open; µs it had work while another window (or the idle one) was open |
//! | `class/vgpu/vgpuN/compute_tsgs` | read-only: TSGs and channels outside TSGs the scheduler tracks for it |
//! | `class/vgpu/vgpuN/compute_priority` | priority level, 0 (best-effort) to 3 (default 1): while a vGPU of a higher level on its GPU has work, lower levels do not run |
//! | `class/vgpu/vgpuN/compute_frozen` | `1` while its work is frozen (TSGs disabled and preempted, memory still charged), `0` to thaw |
//! | `class/vgpu/vgpuN/compute_busy_us` | read-only counter: µs it had runnable work, whether or not its window was open |
//! | `class/vgpu/gpuK/compute_policy` | GPU `K`'s policy, `fixed` (default) or `work-conserving` |
//! | `class/vgpu/gpuK/compute_period_us` | GPU `K`'s scheduling period in µs, 1000 to 1000000 (default 50000) |
//!
//! The compute files are absent on modules without compute shares (and
//! `compute_priority`, `compute_frozen`, `compute_busy_us` on modules from
//! before priorities), and `memory_managed` on modules from before the UVM
//! proxy; the readers here
//! return `None` for a missing file so older modules still work. `gpuK/` (one per GPU the module found, no `/dev` node) holds the
//! settings shared by all vGPUs on GPU `K`; `class/vgpu` also has the
//! `vgpuctl` device's directory, so only canonical `vgpuN` and `gpuK`
//! names are taken for vGPUs and GPUs.
//!
//! With [`Sysfs::simulated`] the writes are not plain file writes but are
//! checked and carried out the way the module would (see [`sim`]), so a
//! tree of ordinary files under a temporary directory behaves like the real
//! one, across several `vgpuctl` runs.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

pub mod sim;

/// The highest vGPU number the module accepts.
pub const MAX_VGPU: u32 = vgpu_logic::uapi::VGPU_MAX_ID;

/// A view of vgpu's sysfs files under a sysfs root (normally `/sys`).
#[derive(Clone, Debug)]
pub struct Sysfs {
    root: PathBuf,
    simulate: bool,
}

impl Sysfs {
    /// The real interface under `root` (normally `/sys`): reads and writes
    /// are plain file operations and the kernel does the rest.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            simulate: false,
        }
    }

    /// A fake tree under `root` whose writes are checked and carried out by
    /// [`sim`] the way the module would (for tests and dry runs).
    pub fn simulated(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            simulate: true,
        }
    }

    /// Whether writes are simulated.
    pub fn is_simulated(&self) -> bool {
        self.simulate
    }

    /// The sysfs root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `ROOT/class/vgpu`.
    pub fn class_dir(&self) -> PathBuf {
        self.root.join("class").join("vgpu")
    }

    /// `ROOT/class/vgpu/vgpuN`.
    pub fn vgpu_dir(&self, id: u32) -> PathBuf {
        self.class_dir().join(format!("vgpu{id}"))
    }

    /// `ROOT/class/vgpu/gpuK`: GPU `K`'s scheduling settings.
    pub fn gpu_dir(&self, k: u32) -> PathBuf {
        self.class_dir().join(format!("gpu{k}"))
    }

    /// Fails with [`Error::ModuleNotLoaded`] unless `class/vgpu` exists.
    pub fn check_loaded(&self) -> Result<()> {
        let d = self.class_dir();
        if d.is_dir() {
            Ok(())
        } else {
            Err(Error::ModuleNotLoaded(d))
        }
    }

    /// Fails unless the module takes over the open of NVIDIA's own device
    /// nodes (`class/vgpu/driver_nodes`): the CDI specs give containers
    /// those nodes, which without it reach the driver past vgpu.
    pub fn check_takes_over_nodes(&self) -> Result<()> {
        self.check_loaded()?;
        match self.read_class("driver_nodes")? {
            Some(_) => Ok(()),
            None => Err(Error::Refused(
                "this vgpu.ko does not take over the open of NVIDIA's device nodes \
                 (class/vgpu/driver_nodes is missing: a module older than the CDI spec), \
                 so a container given /dev/nvidiactl would reach the driver past vgpu; \
                 install the matching vgpu-dkms and reload vgpu"
                    .into(),
            )),
        }
    }

    /// Whether vGPU `id` exists.
    pub fn exists(&self, id: u32) -> bool {
        self.vgpu_dir(id).is_dir()
    }

    /// Fails with [`Error::UnknownVgpu`] unless vGPU `id` exists.
    pub fn check_exists(&self, id: u32) -> Result<()> {
        self.check_loaded()?;
        if self.exists(id) {
            Ok(())
        } else {
            Err(Error::UnknownVgpu(id))
        }
    }

    /// The numbers of all vGPUs (`vgpuN/`), ascending.
    pub fn ids(&self) -> Result<Vec<u32>> {
        self.numbered_dirs("vgpu")
    }

    /// The GPUs that have a `gpuK/` directory (a module with compute
    /// shares makes one per GPU it found), ascending; empty for a module
    /// without them.
    pub fn gpu_ids(&self) -> Result<Vec<u32>> {
        self.numbered_dirs("gpu")
    }

    /// The numbers `N` of the directories `PREFIXN` in `class/vgpu`, only
    /// canonical ones: `vgpu07`, `vgpuctl` or `gpus` are not such.
    fn numbered_dirs(&self, prefix: &str) -> Result<Vec<u32>> {
        self.check_loaded()?;
        let dir = self.class_dir();
        let entries = fs::read_dir(&dir).map_err(|source| Error::Io {
            path: dir.clone(),
            source,
        })?;
        let mut ids = Vec::new();
        for e in entries {
            let e = e.map_err(|source| Error::Io {
                path: dir.clone(),
                source,
            })?;
            let name = e.file_name();
            let Some(n) = name.to_str().and_then(|s| s.strip_prefix(prefix)) else {
                continue;
            };
            if let Ok(id) = n.parse::<u32>() {
                if id.to_string() == n && e.path().is_dir() {
                    ids.push(id);
                }
            }
        }
        ids.sort_unstable();
        Ok(ids)
    }

    /// The lowest vGPU number not in use, skipping `taken`.
    pub fn free_id(&self, taken: &[u32]) -> Result<u32> {
        let ids = self.ids()?;
        (0..=MAX_VGPU)
            .find(|i| !ids.contains(i) && !taken.contains(i))
            .ok_or_else(|| Error::NoFit(format!("all {} vGPU numbers are in use", MAX_VGPU + 1)))
    }

    /// A class-level file (`class/vgpu/NAME`), trimmed; `None` if absent.
    pub fn read_class(&self, name: &str) -> Result<Option<String>> {
        read_opt(&self.class_dir().join(name))
    }

    /// Attribute `name` of vGPU `id`, trimmed of its newline; `None` if this
    /// module has no such file.
    pub fn read_attr(&self, id: u32, name: &str) -> Result<Option<String>> {
        self.check_exists(id)?;
        read_opt(&self.vgpu_dir(id).join(name))
    }

    /// Writes `value` to attribute `name` of vGPU `id`.
    ///
    /// [`Error::UnknownVgpu`] if the vGPU does not exist,
    /// [`Error::Unsupported`] if this module has no such file, and
    /// [`Error::Kernel`] with the errno if the module refuses the value.
    pub fn write_attr(&self, id: u32, name: &str, value: &str) -> Result<()> {
        self.check_exists(id)?;
        let path = self.vgpu_dir(id).join(name);
        if !path.exists() {
            return Err(Error::Unsupported(format!("vGPU setting {name:?}")));
        }
        if self.simulate {
            sim::write_attr(self, id, name, value).map_err(|e| Error::kernel(path, value, e))
        } else if name == "cgroup" {
            // A bind or unbind: the guard's map follows it.
            crate::guard::follow(self, value, || {
                write_file(&path, value).map_err(|e| Error::kernel(path.clone(), value, e))
            })
        } else {
            write_file(&path, value).map_err(|e| Error::kernel(path, value, e))
        }
    }

    /// Setting `name` of GPU `k` (`gpuK/NAME`), trimmed of its newline;
    /// `None` if the module has no `gpuK/` or no such file in it.
    pub fn read_gpu_attr(&self, k: u32, name: &str) -> Result<Option<String>> {
        self.check_loaded()?;
        read_opt(&self.gpu_dir(k).join(name))
    }

    /// Writes `value` to setting `name` of GPU `k` (`gpuK/NAME`), which
    /// applies to every vGPU on that GPU.
    ///
    /// [`Error::Unsupported`] if the module has no such file (no compute
    /// shares), [`Error::Unexpected`] if it has `gpuL/` directories but
    /// none for `k`, and [`Error::Kernel`] with the errno if the module
    /// refuses the value.
    pub fn write_gpu_attr(&self, k: u32, name: &str, value: &str) -> Result<()> {
        self.check_loaded()?;
        let dir = self.gpu_dir(k);
        if !dir.is_dir() && !self.gpu_ids()?.is_empty() {
            return Err(Error::Unexpected(format!(
                "{} does not exist: the module did not find GPU {k}",
                dir.display()
            )));
        }
        let path = dir.join(name);
        if !path.exists() {
            return Err(Error::Unsupported(format!("GPU setting {name:?}")));
        }
        if self.simulate {
            sim::write_gpu_attr(self, k, name, value).map_err(|e| Error::kernel(path, value, e))
        } else {
            write_file(&path, value).map_err(|e| Error::kernel(path, value, e))
        }
    }

    /// Creates vGPU `id` (`class/vgpu/create`) and checks that it appeared.
    pub fn create(&self, id: u32) -> Result<()> {
        self.check_loaded()?;
        let path = self.class_dir().join("create");
        let v = id.to_string();
        if self.simulate {
            sim::create(self, id).map_err(|e| Error::kernel(path, &v, e))?;
        } else {
            write_file(&path, &v).map_err(|e| Error::kernel(path, &v, e))?;
        }
        if !self.exists(id) {
            return Err(Error::Unexpected(format!(
                "the module accepted vGPU {id} but {} did not appear",
                self.vgpu_dir(id).display()
            )));
        }
        Ok(())
    }

    /// Removes vGPU `id` (`class/vgpu/remove`).
    pub fn remove(&self, id: u32) -> Result<()> {
        self.check_exists(id)?;
        let path = self.class_dir().join("remove");
        let v = id.to_string();
        if self.simulate {
            sim::remove(self, id).map_err(|e| Error::kernel(path, &v, e))
        } else {
            write_file(&path, &v).map_err(|e| Error::kernel(path, &v, e))?;
            crate::guard::after_remove(self)
        }
    }
}

/// Reads a sysfs file, trimmed of trailing whitespace; `None` if absent.
fn read_opt(path: &Path) -> Result<Option<String>> {
    match fs::read_to_string(path) {
        Ok(s) => Ok(Some(s.trim_end().to_string())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(Error::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// One `write(2)` of `value` to an existing file, the way `echo -n` does:
/// sysfs hands one write to the attribute's `store` and returns its errno.
/// An empty value is written as a newline: a write of no bytes never
/// reaches `store` (the empty line is what unbinds `cgroup`).
fn write_file(path: &Path, value: &str) -> io::Result<()> {
    let value = if value.is_empty() { "\n" } else { value };
    let mut f = fs::OpenOptions::new().write(true).open(path)?;
    let n = f.write(value.as_bytes())?;
    if n != value.len() {
        return Err(io::Error::new(
            io::ErrorKind::WriteZero,
            format!("short write ({n} of {} bytes)", value.len()),
        ));
    }
    Ok(())
}
