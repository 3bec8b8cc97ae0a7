// SPDX-License-Identifier: GPL-2.0

//! A stand-in for vgpu.ko's sysfs behaviour over a tree of ordinary files,
//! for tests and dry runs (`VGPUCTL_SIMULATE=1` with a `--sysfs-root` that is
//! not `/sys`).
//!
//! It follows `src/vgpus.rs` and parses values with the module's own parsers
//! (`src/config.rs`, through `vgpu-logic`):
//!
//! - `create N`: `EINVAL`/`ERANGE` for a bad number, `EEXIST` if it exists;
//!   makes `vgpuN/` with the module's defaults (and the compute files if
//!   `class/vgpu/.sim-compute` exists, as a module with compute shares would).
//! - `remove N`: `ENOENT` if absent, `EBUSY` while `users` is not 0.
//! - `gpu`: `ENODEV` for a GPU not listed in `class/vgpu/gpus` (when that
//!   file exists), `EBUSY` while open.
//! - `memory_limit`, `cgroup`: the module's parsers; read-only files: `EACCES`.
//!
//! Failure injection: each line `NAME ERRNO` of `class/vgpu/.sim-fail` (e.g.
//! `cgroup EBUSY`) makes every write to the file `NAME` (an attribute, or
//! `create` / `remove`) fail with that errno; `vgpuN/NAME ERRNO` only for
//! vGPU `N`.

use std::fs;
use std::io;
use std::path::Path;

use vgpu_logic::config::{self, ParseError};

use super::{Sysfs, MAX_VGPU};

/// The attributes a vGPU directory has, with their initial contents, as in
/// `src/vgpus.rs` (`memory_used` is 0 until the ledger exists).
const BASE_FILES: &[(&str, &str)] = &[
    ("gpu", ""),
    ("memory_limit", "max"),
    ("memory_used", "0"),
    ("cgroup", ""),
    ("users", "0"),
];

/// The compute files a module with compute shares is expected to add. The
/// initial values are guesses until the module has them.
const COMPUTE_FILES: &[(&str, &str)] = &[
    ("compute_share", "0"),
    ("compute_policy", "fixed"),
    ("period_us", "50000"),
    ("granted_us", "0"),
    ("throttled_us", "0"),
];

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
/// new vGPUs carry the compute files.
pub fn init_tree(
    root: &Path,
    gpus: Option<&[(u32, Option<u64>)]>,
    compute: bool,
) -> io::Result<()> {
    let class = root.join("class").join("vgpu");
    fs::create_dir_all(&class)?;
    fs::write(class.join("create"), "")?;
    fs::write(class.join("remove"), "")?;
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
    }
    Ok(())
}

/// Makes every write to `name` fail with `errno_name` (e.g. `"EBUSY"`).
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

/// Fails if `.sim-fail` says so for the file `name` (of vGPU `id`, which a
/// line may name as `vgpuN/NAME`).
fn injected(s: &Sysfs, id: Option<u32>, name: &str) -> io::Result<()> {
    let Ok(text) = fs::read_to_string(s.class_dir().join(".sim-fail")) else {
        return Ok(());
    };
    let specific = id.map(|i| format!("vgpu{i}/{name}"));
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

fn users(s: &Sysfs, id: u32) -> u64 {
    fs::read_to_string(s.vgpu_dir(id).join("users"))
        .ok()
        .and_then(|u| config::parse_u64(u.trim_end().as_bytes()).ok())
        .unwrap_or(0)
}

/// `class/vgpu/create`.
pub fn create(s: &Sysfs, id: u32) -> io::Result<()> {
    injected(s, Some(id), "create")?;
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
    injected(s, Some(id), "remove")?;
    let dir = s.vgpu_dir(id);
    if !dir.is_dir() {
        return Err(errno(libc::ENOENT));
    }
    if users(s, id) > 0 {
        return Err(errno(libc::EBUSY));
    }
    fs::remove_dir_all(dir)
}

/// A write to attribute `name` of vGPU `id` (which exists, as does the file).
pub fn write_attr(s: &Sysfs, id: u32, name: &str, value: &str) -> io::Result<()> {
    injected(s, Some(id), name)?;
    let input = value.as_bytes();
    let stored = match name {
        "gpu" => {
            let g = config::parse_index(input, 247).map_err(parse_errno)?;
            if let Ok(list) = fs::read_to_string(s.class_dir().join("gpus")) {
                let known = list
                    .lines()
                    .filter_map(|l| l.split_whitespace().next())
                    .any(|k| k == g.to_string());
                if !known {
                    return Err(errno(libc::ENODEV));
                }
            }
            if users(s, id) > 0 {
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
        "compute_share" => config::parse_index(input, 100)
            .map_err(parse_errno)?
            .to_string(),
        "compute_policy" => match config::trim(input) {
            b"fixed" => "fixed".to_string(),
            b"work-conserving" => "work-conserving".to_string(),
            _ => return Err(errno(libc::EINVAL)),
        },
        "period_us" => {
            let p = config::parse_u64(input).map_err(parse_errno)?;
            if p == 0 {
                return Err(errno(libc::ERANGE));
            }
            p.to_string()
        }
        _ => return Err(errno(libc::EACCES)),
    };
    fs::write(s.vgpu_dir(id).join(name), format!("{stored}\n"))
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
    }
}
