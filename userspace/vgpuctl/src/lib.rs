// SPDX-License-Identifier: GPL-2.0

//! `vgpuctl`: create, configure and inspect the virtual GPUs of `vgpu.ko`
//! through `/sys/class/vgpu`, and describe them to container runtimes (CDI).
//!
//! Layout: [`sysfs`] is the only code that touches the module's files (with
//! a simulated module for tests, [`sysfs::sim`]); [`inventory`] says which
//! GPUs exist; [`placement`] is the pure choice of GPUs; [`commands`] runs
//! the subcommands parsed by [`cli`]; [`cdi`] writes CDI specs, whose
//! OCI hooks ([`hook`]) bind a vGPU to the container that got it and
//! ([`procview`]) rewrite the container's `/proc/driver/nvidia`;
//! [`exporter`] serves Prometheus metrics; [`guard`] keeps NVIDIA's
//! driver files out of bound containers (a BPF LSM program).

pub mod cdi;
pub mod cli;
pub mod commands;
pub mod error;
pub mod exporter;
pub mod guard;
pub mod hook;
pub mod inventory;
pub mod model;
pub mod placement;
pub mod procview;
pub mod sysfs;
pub mod table;
pub mod units;

use std::path::Path;

pub use error::{Error, Result};

/// Environment variable that makes vgpuctl simulate the module's behaviour
/// over a fake tree (see [`sysfs::sim`]); refused for `/sys` itself.
pub const SIMULATE_ENV: &str = "VGPUCTL_SIMULATE";

/// The [`sysfs::Sysfs`] for `root`: simulated if `simulate`, which is
/// refused for the real `/sys`.
pub fn open_sysfs(root: &Path, simulate: bool) -> Result<sysfs::Sysfs> {
    if !simulate {
        return Ok(sysfs::Sysfs::new(root));
    }
    let real = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    if real == Path::new("/sys") {
        return Err(Error::BadValue(format!(
            "{SIMULATE_ENV} is for fake trees, not /sys"
        )));
    }
    Ok(sysfs::Sysfs::simulated(root))
}

/// Replaces `path` with `data` atomically and durably: a temporary file
/// beside it, synced, renamed over it, the directory synced; missing
/// parent directories are made. Readers (a runtime watching a CDI
/// directory, a restarted DRA plugin) see the old file or the new one,
/// never half of one.
pub fn write_atomic(path: &Path, data: &[u8]) -> Result<()> {
    use std::io::Write;
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io)?;
    let mut tmp = path.to_path_buf();
    tmp.as_mut_os_string().push(".tmp");
    let mut f = std::fs::File::create(&tmp).map_err(io)?;
    f.write_all(data).map_err(io)?;
    f.sync_all().map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)?;
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io)
}
