// SPDX-License-Identifier: GPL-2.0

//! A stand-in for vgpu.ko's sysfs behaviour over a tree of ordinary files,
//! for tests and dry runs (`VGPUCTL_SIMULATE=1` with a `--sysfs-root` that is
//! not `/sys`).
//!
//! It follows `src/vgpus.rs` and parses values with the module's own parsers
//! (`src/config.rs`, `src/compute.rs`, through `vgpu-logic`):
//!
//! - `create N`: `EINVAL`/`ERANGE` for a bad number, `EEXIST` if it exists;
//!   makes `vgpuN/` with the module's defaults (and the compute files
//!   `compute_share` 100, `compute_priority` 1, `compute_frozen` 0,
//!   `compute_granted_us`, `compute_throttled_us`, `compute_busy_us`,
//!   `compute_tsgs` 0 if `class/vgpu/.sim-compute` exists, as a module with
//!   compute shares would).
//! - `remove N`: `ENOENT` if absent, `EBUSY` while `users`, `memory_used` or
//!   `compute_tsgs` is not 0.
//! - `gpu`: `ERANGE` above 247, `ENODEV` for a GPU not listed in
//!   `class/vgpu/gpus` (when that file exists) or, without it, one that has
//!   no `gpuK/` while others do; `EBUSY` while `users` or `compute_tsgs` is
//!   not 0.
//! - `memory_limit`, `cgroup`: the module's parsers; `compute_share`: `0` to
//!   `100`, `compute_priority`: `0` to `3`, `compute_frozen`: `0` or `1`
//!   (`ERANGE` above, `EINVAL` for anything but digits).
//! - `gpuK/compute_policy`: `fixed` or `work-conserving`, else `EINVAL`;
//!   `gpuK/compute_period_us`: `1000` to `1000000`, `ERANGE` outside,
//!   `EINVAL` for anything but digits. [`init_tree`] (with `compute`) and
//!   [`add_gpu`] make the `gpuK/` directories, as the module does at load
//!   for each GPU it finds.
//! - Read-only files: `EACCES`.
//!
//! The counters (`users`, `memory_used`, `memory_refused`, `memory_managed`,
//! `compute_*_us`, `compute_tsgs`) and `processes` are plain files a test
//! may write to.
//! Removing a vGPU's `compute_priority`, `compute_frozen` and
//! `compute_busy_us` makes it one of a module from before priorities. As
//! in the module, `memory_managed` (managed, nvidia-uvm, mappings) is a part
//! of `memory_used`, not added to it: a test that charges managed memory
//! writes both ([`set_memory`]). Removing a vGPU's `memory_managed` file
//! makes it one of a module from before the UVM proxy.
//!
//! Failure injection: each line `NAME ERRNO` of `class/vgpu/.sim-fail` (e.g.
//! `cgroup EBUSY`) makes every write to the file `NAME` (an attribute, a
//! GPU setting, or `create` / `remove`) fail with that errno; `vgpuN/NAME
//! ERRNO` only for vGPU `N`, `gpuK/NAME ERRNO` only for GPU `K`.

use std::fs;
use std::io;
use std::path::Path;

use vgpu_logic::compute;
use vgpu_logic::config::{self, ParseError};

use super::{Sysfs, MAX_VGPU};

/// The attributes a vGPU directory has, with their initial contents, as in
/// `src/vgpus.rs`.
const BASE_FILES: &[(&str, &str)] = &[
    ("gpu", ""),
    ("memory_limit", "max"),
    ("memory_used", "0"),
    ("memory_refused", "0"),
    ("memory_managed", "0"),
    ("cgroup", ""),
    ("users", "0"),
    ("processes", ""),
];

/// The per-vGPU compute files of a module with compute shares, with their
/// initial contents (`src/vgpus.rs`, `src/sched/files.rs`).
const COMPUTE_FILES: &[(&str, &str)] = &[
    ("compute_share", "100"),
    ("compute_priority", "1"),
    ("compute_frozen", "0"),
    ("compute_granted_us", "0"),
    ("compute_throttled_us", "0"),
    ("compute_busy_us", "0"),
    ("compute_tsgs", "0"),
];

/// The files of `gpuK/`, with their initial contents.
const GPU_FILES: &[(&str, &str)] = &[("compute_policy", "fixed"), ("compute_period_us", "50000")];

/// Errno names accepted in `.sim-fail`.
const ERRNOS: &[(&str, i32)] = &[
    ("EBUSY", libc::EBUSY),
    ("ENODEV", libc::ENODEV),
    ("EEXIST", libc::EEXIST),
    ("ENOENT", libc::ENOENT),
    ("EINVAL", libc::EINVAL),
    ("ERANGE", libc::ERANGE),
    ("EPERM", libc::EPERM),
    ("EACCES", libc::EACCES),
    ("ENOMEM", libc::ENOMEM),
    ("EIO", libc::EIO),
];

fn errno(e: i32) -> io::Error {
    io::Error::from_raw_os_error(e)
}

fn parse_errno(e: ParseError) -> io::Error {
    errno(match e {
        ParseError::Invalid => libc::EINVAL,
        ParseError::Range => libc::ERANGE,
    })
}

/// Makes an empty fake `class/vgpu` under `root`, as a freshly loaded module
/// would have it. `gpus`, if given, is written to `class/vgpu/gpus` (one
/// `INDEX [BYTES]` line per GPU, see [`crate::inventory`]); `compute` makes
/// it a module with compute shares: new vGPUs carry the compute files, and
/// each GPU in `gpus` gets its `gpuK/` directory (see [`add_gpu`] for GPUs
/// not listed).
pub fn init_tree(
    root: &Path,
    gpus: Option<&[(u32, Option<u64>)]>,
    compute: bool,
) -> io::Result<()> {
    let class = root.join("class").join("vgpu");
    fs::create_dir_all(&class)?;
    fs::write(class.join("create"), "")?;
    fs::write(class.join("remove"), "")?;
    // A module that takes over NVIDIA's nodes lists them.
    fs::write(class.join("driver_nodes"), "195:255\n195:0\n")?;
    if let Some(gpus) = gpus {
        let mut s = String::new();
        for (i, size) in gpus {
            match size {
                Some(b) => s.push_str(&format!("{i} {b}\n")),
                None => s.push_str(&format!("{i}\n")),
            }
        }
        fs::write(class.join("gpus"), s)?;
    }
    if compute {
        fs::write(class.join(".sim-compute"), "")?;
        for (k, _) in gpus.unwrap_or(&[]) {
            add_gpu(root, *k)?;
        }
    }
    Ok(())
}

/// Makes `class/vgpu/gpuK/` with the module's defaults (`fixed`, 50000 µs),
/// as a module with compute shares does for each GPU it finds.
pub fn add_gpu(root: &Path, k: u32) -> io::Result<()> {
    let dir = root.join("class").join("vgpu").join(format!("gpu{k}"));
    fs::create_dir_all(&dir)?;
    for (name, v) in GPU_FILES {
        fs::write(dir.join(name), format!("{v}\n"))?;
    }
    Ok(())
}

/// Makes every write to `name` fail with `errno_name` (e.g. `"EBUSY"`);
/// `name` may be `vgpuN/NAME` or `gpuK/NAME` for one vGPU or GPU.
pub fn inject_failure(root: &Path, name: &str, errno_name: &str) -> io::Result<()> {
    let p = root.join("class").join("vgpu").join(".sim-fail");
    let mut s = fs::read_to_string(&p).unwrap_or_default();
    s.push_str(&format!("{name} {errno_name}\n"));
    fs::write(p, s)
}

/// Sets the open count of a fake vGPU (as if `/dev/vgpuN` were open).
pub fn set_users(root: &Path, id: u32, users: u32) -> io::Result<()> {
    let p = root
        .join("class")
        .join("vgpu")
        .join(format!("vgpu{id}"))
        .join("users");
    fs::write(p, format!("{users}\n"))
}

/// Sets the memory charged to a fake vGPU: `used` bytes in all, `managed`
/// of them for managed (nvidia-uvm) mappings (at most `used`, as the
/// module's ledger keeps it).
pub fn set_memory(root: &Path, id: u32, used: u64, managed: u64) -> io::Result<()> {
    if managed > used {
        return Err(errno(libc::EINVAL));
    }
    let dir = root.join("class").join("vgpu").join(format!("vgpu{id}"));
    fs::write(dir.join("memory_used"), format!("{used}\n"))?;
    fs::write(dir.join("memory_managed"), format!("{managed}\n"))
}

/// Fails if `.sim-fail` says so for the file `name` (in the directory
/// `dir`, `vgpuN` or `gpuK`, which a line may name as `DIR/NAME`).
fn injected(s: &Sysfs, dir: Option<&str>, name: &str) -> io::Result<()> {
    let Ok(text) = fs::read_to_string(s.class_dir().join(".sim-fail")) else {
        return Ok(());
    };
    let specific = dir.map(|d| format!("{d}/{name}"));
    for line in text.lines() {
        let mut w = line.split_whitespace();
        let target = w.next();
        if target == Some(name) || (target.is_some() && target == specific.as_deref()) {
            let e = w
                .next()
                .and_then(|n| ERRNOS.iter().find(|(k, _)| *k == n))
                .map_or(libc::EIO, |&(_, v)| v);
            return Err(errno(e));
        }
    }
    Ok(())
}

/// The number in file `name` of vGPU `id` (0 if absent or malformed).
fn counter(s: &Sysfs, id: u32, name: &str) -> u64 {
    fs::read_to_string(s.vgpu_dir(id).join(name))
        .ok()
        .and_then(|u| config::parse_u64(u.trim_end().as_bytes()).ok())
        .unwrap_or(0)
}

/// `class/vgpu/create`.
pub fn create(s: &Sysfs, id: u32) -> io::Result<()> {
    injected(s, Some(&format!("vgpu{id}")), "create")?;
    config::parse_index(id.to_string().as_bytes(), MAX_VGPU).map_err(parse_errno)?;
    let dir = s.vgpu_dir(id);
    if dir.exists() {
        return Err(errno(libc::EEXIST));
    }
    fs::create_dir(&dir)?;
    let compute = s.class_dir().join(".sim-compute").exists();
    for (name, v) in BASE_FILES
        .iter()
        .chain(if compute { COMPUTE_FILES } else { &[] })
    {
        fs::write(dir.join(name), format!("{v}\n"))?;
    }
    Ok(())
}

/// `class/vgpu/remove`.
pub fn remove(s: &Sysfs, id: u32) -> io::Result<()> {
    injected(s, Some(&format!("vgpu{id}")), "remove")?;
    let dir = s.vgpu_dir(id);
    if !dir.is_dir() {
        return Err(errno(libc::ENOENT));
    }
    if ["users", "memory_used", "compute_tsgs"]
        .iter()
        .any(|n| counter(s, id, n) > 0)
    {
        return Err(errno(libc::EBUSY));
    }
    fs::remove_dir_all(dir)
}

/// Whether the module knows GPU `g`: listed in `class/vgpu/gpus` if that
/// exists, else has `gpuK/` if any GPU has one, else any GPU.
fn knows_gpu(s: &Sysfs, g: u32) -> bool {
    if let Ok(list) = fs::read_to_string(s.class_dir().join("gpus")) {
        return list
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .any(|k| k == g.to_string());
    }
    match s.gpu_ids() {
        Ok(ids) if !ids.is_empty() => ids.contains(&g),
        _ => true,
    }
}

/// A write to attribute `name` of vGPU `id` (which exists, as does the file).
pub fn write_attr(s: &Sysfs, id: u32, name: &str, value: &str) -> io::Result<()> {
    injected(s, Some(&format!("vgpu{id}")), name)?;
    let input = value.as_bytes();
    let stored = match name {
        "gpu" => {
            let g = config::parse_index(input, 247).map_err(parse_errno)?;
            if !knows_gpu(s, g) {
                return Err(errno(libc::ENODEV));
            }
            // Not under open files, nor under TSGs running on the old GPU.
            if counter(s, id, "users") > 0 || counter(s, id, "compute_tsgs") > 0 {
                return Err(errno(libc::EBUSY));
            }
            g.to_string()
        }
        "memory_limit" => match config::parse_limit(input).map_err(parse_errno)? {
            u64::MAX => "max".to_string(),
            l => l.to_string(),
        },
        "cgroup" => {
            let p = config::parse_cgroup_path(input).map_err(parse_errno)?;
            String::from_utf8_lossy(p).into_owned()
        }
        "compute_share" => compute::parse_share(input)
            .map_err(parse_errno)?
            .to_string(),
        "compute_priority" => compute::parse_priority(input)
            .map_err(parse_errno)?
            .to_string(),
        "compute_frozen" => {
            u8::from(compute::parse_frozen(input).map_err(parse_errno)?).to_string()
        }
        _ => return Err(errno(libc::EACCES)),
    };
    fs::write(s.vgpu_dir(id).join(name), format!("{stored}\n"))
}

/// A write to setting `name` of GPU `k` (whose directory and file exist).
pub fn write_gpu_attr(s: &Sysfs, k: u32, name: &str, value: &str) -> io::Result<()> {
    injected(s, Some(&format!("gpu{k}")), name)?;
    let input = value.as_bytes();
    let stored = match name {
        "compute_policy" => compute::parse_policy(input)
            .map_err(parse_errno)?
            .name()
            .to_string(),
        "compute_period_us" => compute::parse_period_us(input)
            .map_err(parse_errno)?
            .to_string(),
        _ => return Err(errno(libc::EACCES)),
    };
    fs::write(s.gpu_dir(k).join(name), format!("{stored}\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    fn raw(e: Error) -> Option<i32> {
        match e {
            Error::Kernel { source, .. } => source.raw_os_error(),
            _ => None,
        }
    }

    #[test]
    fn behaves_like_the_module() {
        let t = tempfile::tempdir().unwrap();
        init_tree(t.path(), Some(&[(0, Some(1 << 30))]), false).unwrap();
        let s = Sysfs::simulated(t.path());
        s.create(3).unwrap();
        assert_eq!(s.ids().unwrap(), vec![3]);
        assert_eq!(raw(s.create(3).unwrap_err()), Some(libc::EEXIST));
        assert_eq!(raw(s.create(255).unwrap_err()), Some(libc::ERANGE));
        assert_eq!(s.read_attr(3, "memory_limit").unwrap().unwrap(), "max");
        assert_eq!(
            raw(s.write_attr(3, "gpu", "1").unwrap_err()),
            Some(libc::ENODEV)
        );
        s.write_attr(3, "gpu", "0").unwrap();
        assert_eq!(
            raw(s.write_attr(3, "memory_limit", "12x").unwrap_err()),
            Some(libc::EINVAL)
        );
        assert_eq!(
            raw(s.write_attr(3, "cgroup", "pods/a").unwrap_err()),
            Some(libc::EINVAL)
        );
        assert_eq!(
            raw(s.write_attr(3, "users", "0").unwrap_err()),
            Some(libc::EACCES)
        );
        assert!(matches!(
            s.write_attr(3, "compute_share", "10"),
            Err(Error::Unsupported(_))
        ));
        set_users(t.path(), 3, 1).unwrap();
        assert_eq!(
            raw(s.write_attr(3, "gpu", "0").unwrap_err()),
            Some(libc::EBUSY)
        );
        assert_eq!(raw(s.remove(3).unwrap_err()), Some(libc::EBUSY));
        set_users(t.path(), 3, 0).unwrap();
        s.remove(3).unwrap();
        assert!(matches!(s.remove(3), Err(Error::UnknownVgpu(3))));
        inject_failure(t.path(), "create", "ENOMEM").unwrap();
        assert_eq!(raw(s.create(1).unwrap_err()), Some(libc::ENOMEM));
        // Memory still charged keeps a vGPU, as in the module.
        std::fs::remove_file(s.class_dir().join(".sim-fail")).unwrap();
        s.create(1).unwrap();
        std::fs::write(s.vgpu_dir(1).join("memory_used"), "4096\n").unwrap();
        assert_eq!(raw(s.remove(1).unwrap_err()), Some(libc::EBUSY));
        // Without compute shares: no gpuK/, no GPU settings.
        assert_eq!(s.gpu_ids().unwrap(), Vec::<u32>::new());
        assert_eq!(s.read_gpu_attr(0, "compute_policy").unwrap(), None);
        assert!(matches!(
            s.write_gpu_attr(0, "compute_policy", "fixed"),
            Err(Error::Unsupported(_))
        ));
    }

    #[test]
    fn managed_memory_like_the_module() {
        let t = tempfile::tempdir().unwrap();
        init_tree(t.path(), None, false).unwrap();
        let s = Sysfs::simulated(t.path());
        s.create(2).unwrap();
        assert_eq!(s.read_attr(2, "memory_managed").unwrap().unwrap(), "0");
        assert_eq!(
            raw(s.write_attr(2, "memory_managed", "0").unwrap_err()),
            Some(libc::EACCES)
        );
        assert!(set_memory(t.path(), 2, 4096, 8192).is_err());
        set_memory(t.path(), 2, 8192, 4096).unwrap();
        assert_eq!(s.read_attr(2, "memory_used").unwrap().unwrap(), "8192");
        assert_eq!(s.read_attr(2, "memory_managed").unwrap().unwrap(), "4096");
        // Managed memory is charged memory: the vGPU stays.
        assert_eq!(raw(s.remove(2).unwrap_err()), Some(libc::EBUSY));
        set_memory(t.path(), 2, 0, 0).unwrap();
        // An older module has no such file: read as absent.
        std::fs::remove_file(s.vgpu_dir(2).join("memory_managed")).unwrap();
        assert_eq!(s.read_attr(2, "memory_managed").unwrap(), None);
        s.remove(2).unwrap();
    }

    #[test]
    fn compute_files_like_the_module() {
        let t = tempfile::tempdir().unwrap();
        init_tree(t.path(), Some(&[(0, None), (1, None)]), true).unwrap();
        let s = Sysfs::simulated(t.path());
        s.create(3).unwrap();
        // Defaults.
        for (name, v) in [
            ("compute_share", "100"),
            ("compute_priority", "1"),
            ("compute_frozen", "0"),
            ("compute_granted_us", "0"),
            ("compute_throttled_us", "0"),
            ("compute_busy_us", "0"),
            ("compute_tsgs", "0"),
        ] {
            assert_eq!(s.read_attr(3, name).unwrap().as_deref(), Some(v), "{name}");
        }
        assert_eq!(s.gpu_ids().unwrap(), vec![0, 1]);
        assert_eq!(
            s.read_gpu_attr(0, "compute_policy").unwrap().as_deref(),
            Some("fixed")
        );
        assert_eq!(
            s.read_gpu_attr(1, "compute_period_us").unwrap().as_deref(),
            Some("50000")
        );

        // compute_share: 0..=100, digits only.
        s.write_attr(3, "compute_share", "0").unwrap();
        s.write_attr(3, "compute_share", "30\n").unwrap();
        assert_eq!(s.read_attr(3, "compute_share").unwrap().unwrap(), "30");
        for (v, e) in [
            ("101", libc::ERANGE),
            ("30%", libc::EINVAL),
            ("-1", libc::EINVAL),
            ("", libc::EINVAL),
        ] {
            assert_eq!(
                raw(s.write_attr(3, "compute_share", v).unwrap_err()),
                Some(e),
                "{v:?}"
            );
        }
        // compute_priority: 0..=3; compute_frozen: 0 or 1.
        s.write_attr(3, "compute_priority", "0").unwrap();
        s.write_attr(3, "compute_priority", "3\n").unwrap();
        assert_eq!(s.read_attr(3, "compute_priority").unwrap().unwrap(), "3");
        s.write_attr(3, "compute_frozen", "1\n").unwrap();
        assert_eq!(s.read_attr(3, "compute_frozen").unwrap().unwrap(), "1");
        s.write_attr(3, "compute_frozen", "0").unwrap();
        assert_eq!(s.read_attr(3, "compute_frozen").unwrap().unwrap(), "0");
        for (name, v, e) in [
            ("compute_priority", "4", libc::ERANGE),
            ("compute_priority", "high", libc::EINVAL),
            ("compute_priority", "-1", libc::EINVAL),
            ("compute_frozen", "2", libc::ERANGE),
            ("compute_frozen", "yes", libc::EINVAL),
            ("compute_frozen", "", libc::EINVAL),
        ] {
            assert_eq!(
                raw(s.write_attr(3, name, v).unwrap_err()),
                Some(e),
                "{name} {v:?}"
            );
        }
        assert_eq!(s.read_attr(3, "compute_priority").unwrap().unwrap(), "3");
        for name in [
            "compute_granted_us",
            "compute_throttled_us",
            "compute_busy_us",
            "compute_tsgs",
        ] {
            assert_eq!(
                raw(s.write_attr(3, name, "0").unwrap_err()),
                Some(libc::EACCES)
            );
        }

        // gpuK/compute_policy: the two exact names.
        s.write_gpu_attr(0, "compute_policy", "work-conserving\n")
            .unwrap();
        assert_eq!(
            s.read_gpu_attr(0, "compute_policy").unwrap().as_deref(),
            Some("work-conserving")
        );
        for v in ["Fixed", "work_conserving", "", "fixed x"] {
            assert_eq!(
                raw(s.write_gpu_attr(0, "compute_policy", v).unwrap_err()),
                Some(libc::EINVAL),
                "{v:?}"
            );
        }
        // gpuK/compute_period_us: 1000..=1000000.
        s.write_gpu_attr(1, "compute_period_us", "1000").unwrap();
        s.write_gpu_attr(1, "compute_period_us", "1000000").unwrap();
        for (v, e) in [
            ("999", libc::ERANGE),
            ("0", libc::ERANGE),
            ("1000001", libc::ERANGE),
            ("5e4", libc::EINVAL),
            ("50ms", libc::EINVAL),
        ] {
            assert_eq!(
                raw(s.write_gpu_attr(1, "compute_period_us", v).unwrap_err()),
                Some(e),
                "{v:?}"
            );
        }
        assert_eq!(
            s.read_gpu_attr(1, "compute_period_us").unwrap().as_deref(),
            Some("1000000")
        );
        // A GPU the module did not find.
        assert!(matches!(
            s.write_gpu_attr(2, "compute_policy", "fixed"),
            Err(Error::Unexpected(_))
        ));
        assert_eq!(s.read_gpu_attr(2, "compute_policy").unwrap(), None);

        // Tracked TSGs pin the vGPU to its GPU and keep it.
        s.write_attr(3, "gpu", "1").unwrap();
        std::fs::write(s.vgpu_dir(3).join("compute_tsgs"), "2\n").unwrap();
        assert_eq!(
            raw(s.write_attr(3, "gpu", "0").unwrap_err()),
            Some(libc::EBUSY)
        );
        assert_eq!(raw(s.remove(3).unwrap_err()), Some(libc::EBUSY));
        std::fs::write(s.vgpu_dir(3).join("compute_tsgs"), "0\n").unwrap();

        // Injected failures, for every GPU or for one.
        inject_failure(t.path(), "gpu1/compute_policy", "EBUSY").unwrap();
        assert_eq!(
            raw(s.write_gpu_attr(1, "compute_policy", "fixed").unwrap_err()),
            Some(libc::EBUSY)
        );
        s.write_gpu_attr(0, "compute_policy", "fixed").unwrap();
        inject_failure(t.path(), "compute_period_us", "EIO").unwrap();
        assert_eq!(
            raw(s
                .write_gpu_attr(0, "compute_period_us", "2000")
                .unwrap_err()),
            Some(libc::EIO)
        );
        s.remove(3).unwrap();
    }

    #[test]
    fn gpu_directories_are_not_vgpus() {
        let t = tempfile::tempdir().unwrap();
        init_tree(t.path(), Some(&[(0, None)]), true).unwrap();
        add_gpu(t.path(), 12).unwrap();
        let s = Sysfs::simulated(t.path());
        s.create(0).unwrap();
        s.create(3).unwrap();
        // The ctl node's device directory, and non-canonical names.
        for d in ["vgpuctl", "vgpu07", "gpu01", "gpux"] {
            std::fs::create_dir(s.class_dir().join(d)).unwrap();
        }
        assert!(s.class_dir().join("gpu0").is_dir());
        assert_eq!(s.ids().unwrap(), vec![0, 3]);
        assert_eq!(s.gpu_ids().unwrap(), vec![0, 12]);
        // vGPUs can be put on GPUs that have a gpuK/ (the list file wins).
        std::fs::remove_file(s.class_dir().join("gpus")).unwrap();
        s.write_attr(0, "gpu", "12").unwrap();
        assert_eq!(
            raw(s.write_attr(0, "gpu", "1").unwrap_err()),
            Some(libc::ENODEV)
        );
    }
}
