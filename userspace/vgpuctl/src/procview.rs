// SPDX-License-Identifier: GPL-2.0

//! The container's view of `/proc/driver/nvidia`, put in place by the CDI
//! spec's `createContainer` hook (`vgpuctl hook create-container`).
//!
//! NVIDIA's userspace reads `/proc/driver/nvidia/params`; with the
//! driver's `ModifyDeviceFiles: 1` libcuda and nvidia-smi try to create or
//! fix up `/dev/nvidia*` themselves. A container must see
//! `ModifyDeviceFiles: 0`, as the NVIDIA Container Toolkit gives it. An
//! OCI mount at `/proc/driver/nvidia/params` does that under crun, but
//! runc refuses every mount destination inside `/proc` but a short lxcfs
//! list (`checkProcMount`, `libcontainer/rootfs_linux.go`: runc 1.1.5
//! lines 568-616, 1.1.12 564-616, 1.5.1 839-901), and runc is what
//! containerd and Docker run. So the hook does it from inside the
//! container's mount namespace, as NVIDIA's toolkit does with its own
//! `createContainer` hook (`nvidia-cdi-hook
//! disable-device-node-modification`, toolkit 1.17.8 and later).
//!
//! The OCI runtime spec runs `createContainer` hooks in the container's
//! mount namespace after the runtime has made the container's mounts
//! (its `/proc` among them) and before `pivot_root` (runtime-spec
//! `config.md`, "createContainer Hooks"; runc 1.1.5 `prepareRootfs`, crun
//! 1.8.1 `container_init_setup`). The hook then:
//!
//! 1. finds the container's root (`root.path` of the bundle's
//!    `config.json`, relative to the bundle) and walks
//!    `ROOT/proc/driver/nvidia` one component at a time without following
//!    symbolic links; `ROOT/proc` must be a procfs (the container's own);
//! 2. reads the driver's entries there, and what each row of [`ROWS`]
//!    rewrites;
//! 3. mounts a small tmpfs over the container's `/proc/driver/nvidia`,
//!    writes the rewritten files into it, binds every other entry
//!    (`version`, `gpus/`, `capabilities/`, ...) back from the driver's
//!    directory, and makes the tmpfs read-only.
//!
//! Everything it mounts is in the container's mount namespace, under the
//! container's own procfs: the host sees nothing of it and nothing is
//! written to a disk, so nothing is left behind when the container goes.
//! A hook that runs twice (a container given devices of two specs, e.g.
//! two DRA claims) finds the tmpfs in place and does nothing. A hook run in
//! the host's mount namespace (configured as `createRuntime` or
//! `prestart`, which run there) refuses, so it cannot change the host's
//! `/proc`. No `/proc/driver/nvidia` at all (NVIDIA's driver not loaded):
//! nothing to rewrite.
//!
//! More files become rows of [`ROWS`]: a name under `/proc/driver/nvidia`
//! and the function that makes its text from the driver's.

use std::ffi::CString;
use std::fs;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::cdi;
use crate::error::{Error, Result};

/// The directory the hook rewrites, relative to the container's root.
pub const DIR: [&str; 3] = ["proc", "driver", "nvidia"];

/// A file of `/proc/driver/nvidia` the container sees rewritten.
pub struct Row {
    /// Its name in the directory.
    pub name: &'static str,
    /// Its text in the container, from the driver's (`None`: the driver
    /// has no such file).
    pub rewrite: fn(Option<&str>) -> String,
}

/// The rewritten files; every other entry is the driver's own.
pub const ROWS: &[Row] = &[Row {
    // `ModifyDeviceFiles: 0`: the container's nodes are used as they are.
    name: "params",
    rewrite: params_row,
}];

fn params_row(driver: Option<&str>) -> String {
    cdi::params_text(driver)
}

/// What an entry of the driver's directory is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
}

/// One step of putting the view in place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Write a file of this text (a row of [`ROWS`]).
    Write {
        /// Its name.
        name: String,
        /// Its text.
        text: String,
    },
    /// Bind the driver's entry back, unchanged.
    Bind {
        /// Its name.
        name: String,
        /// File or directory (the mount point made for it).
        kind: Kind,
    },
}

/// The steps for a driver directory with `entries`, where `read` gives a
/// file's text: every row written, every other entry bound back. Entries
/// that are neither files nor directories (procfs has none here) are
/// left out. Sorted by name, so runs are alike.
pub fn plan(entries: &[(String, Kind)], read: impl Fn(&str) -> Option<String>) -> Vec<Step> {
    let mut steps: Vec<Step> = ROWS
        .iter()
        .map(|r| Step::Write {
            name: r.name.to_string(),
            text: (r.rewrite)(read(r.name).as_deref()),
        })
        .collect();
    for (name, kind) in entries {
        if ROWS.iter().any(|r| r.name == name) {
            continue;
        }
        steps.push(Step::Bind {
            name: name.clone(),
            kind: *kind,
        });
    }
    steps.sort_by(|a, b| step_name(a).cmp(step_name(b)));
    steps
}

fn step_name(s: &Step) -> &str {
    match s {
        Step::Write { name, .. } | Step::Bind { name, .. } => name,
    }
}

/// The container's root directory: `root.path` of `bundle/config.json`,
/// relative to the bundle unless absolute.
pub fn container_root(bundle: &Path) -> Result<PathBuf> {
    #[derive(Deserialize)]
    struct Config {
        root: Option<Root>,
    }
    #[derive(Deserialize)]
    struct Root {
        path: String,
    }
    let path = bundle.join("config.json");
    let text = fs::read_to_string(&path).map_err(|source| Error::Io {
        path: path.clone(),
        source,
    })?;
    let cfg: Config = serde_json::from_str(&text)
        .map_err(|e| Error::Unexpected(format!("{}: not an OCI config ({e})", path.display())))?;
    let root = cfg
        .root
        .map(|r| r.path)
        .filter(|p| !p.is_empty())
        .ok_or_else(|| Error::Unexpected(format!("{}: no root.path", path.display())))?;
    Ok(bundle.join(root))
}

/// Whether this process runs in the host's mount namespace: the same
/// `mnt` namespace as process 1 of `proc_root` (which, before the
/// container's `pivot_root`, is the host's `/proc`). `None` when it cannot
/// tell (process 1's namespace is not readable, e.g. from a user
/// namespace).
pub fn in_host_mount_ns(proc_root: &Path) -> Option<bool> {
    let own = fs::read_link(proc_root.join("self/ns/mnt")).ok()?;
    let init = fs::read_link(proc_root.join("1/ns/mnt")).ok()?;
    Some(own == init)
}

/// `/proc/self/fd/N`: a path the kernel resolves to what `fd` is open on,
/// without looking at names again.
fn fd_path(fd: &OwnedFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

fn cstr(p: &Path) -> Result<CString> {
    CString::new(p.as_os_str().as_encoded_bytes())
        .map_err(|_| Error::BadValue(format!("{}: a NUL in the path", p.display())))
}

/// `openat(dir, name, O_PATH | O_DIRECTORY | O_NOFOLLOW)`.
fn open_dir_at(dir: &OwnedFd, name: &str) -> io::Result<OwnedFd> {
    let c = CString::new(name).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: `dir` is an open descriptor and `c` a NUL-terminated string,
    // both alive for the call; openat returns a new descriptor or -1.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            c.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by openat and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The filesystem type (`f_type`) of what `fd` is open on.
fn fs_type(fd: &OwnedFd) -> io::Result<i64> {
    // SAFETY: statfs is plain data; all-zero is a valid value of it.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is open and `st` a writable statfs for the call.
    if unsafe { libc::fstatfs(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    #[allow(clippy::unnecessary_cast)]
    Ok(st.f_type as i64)
}

const PROC_MAGIC: i64 = 0x9fa0;
const TMPFS_MAGIC: i64 = 0x0102_1994;

fn mount(
    src: Option<&Path>,
    target: &Path,
    fstype: Option<&str>,
    flags: libc::c_ulong,
    data: Option<&str>,
) -> io::Result<()> {
    let bad = |_| io::Error::from_raw_os_error(libc::EINVAL);
    let src = src
        .map(|p| CString::new(p.as_os_str().as_encoded_bytes()).map_err(bad))
        .transpose()?;
    let target = CString::new(target.as_os_str().as_encoded_bytes()).map_err(bad)?;
    let fstype = fstype.map(|s| CString::new(s).map_err(bad)).transpose()?;
    let data = data.map(|s| CString::new(s).map_err(bad)).transpose()?;
    let ptr = |c: &Option<CString>| c.as_ref().map_or(std::ptr::null(), |c| c.as_ptr());
    // SAFETY: every pointer is NULL or a NUL-terminated string alive for
    // the call; mount(2) only reads them.
    let r = unsafe {
        libc::mount(
            ptr(&src),
            target.as_ptr(),
            ptr(&fstype),
            flags,
            ptr(&data).cast(),
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn detach(target: &Path) {
    if let Ok(c) = cstr(target) {
        // SAFETY: `c` is a NUL-terminated path alive for the call. Best
        // effort: an undo that fails leaves a mount in the container's
        // namespace only, which goes with it.
        unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
    }
}

/// Puts the view in place under `root` (the container's root, in this
/// process's mount namespace); returns what it did, for the log.
pub fn apply(root: &Path) -> Result<String> {
    let shown = root.join(DIR.join("/"));
    let io_err = |what: &str, source: io::Error| Error::Io {
        path: PathBuf::from(format!("{} ({what})", shown.display())),
        source,
    };
    let rootc = cstr(root)?;
    // SAFETY: `rootc` is a NUL-terminated path alive for the call.
    let fd = unsafe {
        libc::open(
            rootc.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(Error::Io {
            path: root.to_path_buf(),
            source: io::Error::last_os_error(),
        });
    }
    // SAFETY: `fd` was just returned by open and is owned by nobody else.
    let rootfd = unsafe { OwnedFd::from_raw_fd(fd) };
    let proc = open_dir_at(&rootfd, DIR[0]).map_err(|e| io_err("the container's /proc", e))?;
    if fs_type(&proc).map_err(|e| io_err("statfs", e))? != PROC_MAGIC {
        return Err(Error::Refused(format!(
            "{}/proc is not a procfs: run this as a createContainer hook, after the runtime mounted the container's /proc",
            root.display()
        )));
    }
    let driver = match open_dir_at(&proc, DIR[1]) {
        Ok(d) => d,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Ok(format!(
                "{}: absent (NVIDIA's driver is not loaded); nothing to rewrite",
                shown.display()
            ))
        }
        Err(e) => return Err(io_err("open", e)),
    };
    let real = match open_dir_at(&driver, DIR[2]) {
        Ok(d) => d,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Ok(format!(
                "{}: absent (NVIDIA's driver is not loaded); nothing to rewrite",
                shown.display()
            ))
        }
        Err(e) => return Err(io_err("open", e)),
    };
    match fs_type(&real).map_err(|e| io_err("statfs", e))? {
        PROC_MAGIC => {}
        TMPFS_MAGIC => return already_done(&real, &shown),
        t => {
            return Err(Error::Refused(format!(
                "{} is on a filesystem of type {t:#x}, neither the driver's procfs nor this hook's tmpfs",
                shown.display()
            )))
        }
    }

    // The driver's entries and the rows' sources, read before they are
    // covered.
    let real_path = fd_path(&real);
    let mut entries = Vec::new();
    for e in fs::read_dir(&real_path).map_err(|e| io_err("read", e))? {
        let e = e.map_err(|e| io_err("read", e))?;
        let Ok(name) = e.file_name().into_string() else {
            continue;
        };
        let t = e.file_type().map_err(|e| io_err("read", e))?;
        if t.is_dir() {
            entries.push((name, Kind::Dir));
        } else if t.is_file() {
            entries.push((name, Kind::File));
        }
    }
    let steps = plan(&entries, |n| fs::read_to_string(real_path.join(n)).ok());

    let size = 64 * 1024
        + steps
            .iter()
            .map(|s| match s {
                Step::Write { text, .. } => text.len(),
                Step::Bind { .. } => 0,
            })
            .sum::<usize>();
    let base = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
    mount(
        Some(Path::new("tmpfs")),
        &real_path,
        Some("tmpfs"),
        base,
        Some(&format!("mode=0555,size={size}")),
    )
    .map_err(|e| io_err("mounting a tmpfs over it", e))?;
    // The tmpfs now covers the driver's directory at that name.
    let top = match open_dir_at(&driver, DIR[2]) {
        Ok(t) if fs_type(&t).ok() == Some(TMPFS_MAGIC) => t,
        Ok(_) => {
            return Err(Error::Unexpected(format!(
                "{}: the tmpfs just mounted is not there",
                shown.display()
            )))
        }
        Err(e) => return Err(io_err("open after mounting", e)),
    };
    let top_path = fd_path(&top);
    let fill = || -> Result<()> {
        for s in &steps {
            match s {
                Step::Write { name, text } => {
                    let p = top_path.join(name);
                    let mut f = fs::OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .mode(0o444)
                        .custom_flags(libc::O_NOFOLLOW)
                        .open(&p)
                        .map_err(|e| io_err(name, e))?;
                    io::Write::write_all(&mut f, text.as_bytes()).map_err(|e| io_err(name, e))?;
                }
                Step::Bind { name, kind } => {
                    let p = top_path.join(name);
                    match kind {
                        Kind::Dir => fs::DirBuilder::new().mode(0o555).create(&p),
                        Kind::File => fs::OpenOptions::new()
                            .write(true)
                            .create_new(true)
                            .mode(0o444)
                            .open(&p)
                            .map(drop),
                    }
                    .map_err(|e| io_err(name, e))?;
                    mount(
                        Some(&real_path.join(name)),
                        &p,
                        None,
                        libc::MS_BIND | libc::MS_REC,
                        None,
                    )
                    .map_err(|e| io_err(&format!("binding {name} back"), e))?;
                }
            }
        }
        mount(
            None,
            &top_path,
            None,
            base | libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY,
            None,
        )
        .map_err(|e| io_err("making it read-only", e))
    };
    if let Err(e) = fill() {
        detach(&top_path);
        return Err(e);
    }
    let written: Vec<&str> = steps
        .iter()
        .filter_map(|s| match s {
            Step::Write { name, .. } => Some(name.as_str()),
            Step::Bind { .. } => None,
        })
        .collect();
    Ok(format!(
        "{}: {} rewritten, {} of the driver's entries bound through",
        shown.display(),
        written.join(", "),
        steps.len() - written.len()
    ))
}

/// The directory is a tmpfs: this hook's, from an earlier run, if every
/// row's file is there as the row makes it (`ModifyDeviceFiles: 0`).
fn already_done(top: &OwnedFd, shown: &Path) -> Result<String> {
    let p = fd_path(top);
    let text = fs::read_to_string(p.join("params")).unwrap_or_default();
    if text.lines().any(|l| l.trim() == "ModifyDeviceFiles: 0") {
        Ok(format!("{}: already in place", shown.display()))
    } else {
        Err(Error::Refused(format!(
            "{} is a tmpfs this hook did not make (its params does not say ModifyDeviceFiles: 0)",
            shown.display()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_rewrites_rows_and_binds_the_rest() {
        let entries = vec![
            ("version".to_string(), Kind::File),
            ("params".to_string(), Kind::File),
            ("gpus".to_string(), Kind::Dir),
            ("capabilities".to_string(), Kind::Dir),
        ];
        let steps = plan(&entries, |n| {
            (n == "params").then(|| "ResmanDebugLevel: 1\nModifyDeviceFiles: 1\n".to_string())
        });
        assert_eq!(
            steps,
            vec![
                Step::Bind {
                    name: "capabilities".into(),
                    kind: Kind::Dir
                },
                Step::Bind {
                    name: "gpus".into(),
                    kind: Kind::Dir
                },
                Step::Write {
                    name: "params".into(),
                    text: "ResmanDebugLevel: 1\nModifyDeviceFiles: 0\n".into()
                },
                Step::Bind {
                    name: "version".into(),
                    kind: Kind::File
                },
            ]
        );
        // A driver without params: the row still gives the line.
        let steps = plan(&[("version".to_string(), Kind::File)], |_| None);
        assert_eq!(
            steps[0],
            Step::Write {
                name: "params".into(),
                text: "ModifyDeviceFiles: 0\n".into()
            }
        );
    }

    #[test]
    fn root_from_the_bundle() {
        let d = tempfile::tempdir().unwrap();
        let put = |t: &str| fs::write(d.path().join("config.json"), t).unwrap();
        put(r#"{"ociVersion":"1.0.2","root":{"path":"rootfs","readonly":true}}"#);
        assert_eq!(container_root(d.path()).unwrap(), d.path().join("rootfs"));
        put(r#"{"root":{"path":"/var/lib/x/merged"}}"#);
        assert_eq!(
            container_root(d.path()).unwrap(),
            Path::new("/var/lib/x/merged")
        );
        for bad in [r#"{}"#, r#"{"root":{"path":""}}"#, "[", r#"{"root":1}"#] {
            put(bad);
            assert!(container_root(d.path()).is_err(), "{bad}");
        }
        fs::remove_file(d.path().join("config.json")).unwrap();
        assert!(container_root(d.path()).is_err());
    }

    #[test]
    fn host_namespace_is_told_apart() {
        let d = tempfile::tempdir().unwrap();
        for (pid, ns) in [("self", "mnt:[1]"), ("1", "mnt:[1]")] {
            fs::create_dir_all(d.path().join(pid).join("ns")).unwrap();
            std::os::unix::fs::symlink(ns, d.path().join(pid).join("ns/mnt")).unwrap();
        }
        assert_eq!(in_host_mount_ns(d.path()), Some(true));
        fs::remove_file(d.path().join("self/ns/mnt")).unwrap();
        std::os::unix::fs::symlink("mnt:[2]", d.path().join("self/ns/mnt")).unwrap();
        assert_eq!(in_host_mount_ns(d.path()), Some(false));
        fs::remove_file(d.path().join("1/ns/mnt")).unwrap();
        assert_eq!(in_host_mount_ns(d.path()), None);
    }

    /// On a directory that is not a procfs (what a hook run outside the
    /// container's mount namespace finds under the root), nothing is
    /// mounted and the reason is given.
    #[test]
    fn refuses_a_root_without_procfs() {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir_all(d.path().join("proc/driver/nvidia")).unwrap();
        let e = apply(d.path()).unwrap_err().to_string();
        assert!(e.contains("/proc is not a procfs"), "{e}");
        assert!(e.contains("createContainer"), "{e}");
        // A symbolic link for /proc is not followed.
        let d2 = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/proc", d2.path().join("proc")).unwrap();
        assert!(apply(d2.path()).is_err());
    }
}
