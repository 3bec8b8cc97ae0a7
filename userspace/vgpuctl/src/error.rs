// SPDX-License-Identifier: GPL-2.0

//! vgpuctl's errors: one message per cause, and the exit status it gives.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// Exit statuses of `vgpuctl` (also listed in `docs/vgpuctl.md`).
pub mod exit {
    /// The kernel refused or failed an operation, or another I/O error.
    pub const FAILURE: i32 = 1;
    /// Bad command line or value (clap uses 2 for usage errors too).
    pub const USAGE: i32 = 2;
    /// `/sys/class/vgpu` is missing: vgpu.ko is not loaded.
    pub const NO_MODULE: i32 = 3;
    /// The operation needs root.
    pub const NOT_ROOT: i32 = 4;
    /// No such vGPU.
    pub const NOT_FOUND: i32 = 5;
    /// The request does not fit on the GPUs (memory, compute or count).
    pub const NO_FIT: i32 = 6;
    /// `hook`: the vGPU is held (by a running container, its admin, or an
    /// earlier user's open files).
    pub const IN_USE: i32 = 7;
    /// `hook`: the container asks for more than the admin set for the vGPU.
    pub const OVER_BOUND: i32 = 8;
    /// `check-driver`: the loaded NVIDIA driver is one vgpu cannot use.
    pub const DRIVER: i32 = 9;
    /// `guard`: the kernel cannot run the guard (no BPF LSM), or loading
    /// or updating it failed.
    pub const GUARD: i32 = 10;
}

/// Everything that can go wrong in a `vgpuctl` command.
#[derive(Debug)]
pub enum Error {
    /// `/sys/class/vgpu` does not exist under the sysfs root.
    ModuleNotLoaded(PathBuf),
    /// A write to sysfs was attempted without root.
    NotRoot,
    /// vGPU `N` does not exist.
    UnknownVgpu(u32),
    /// A value given on the command line or read back is not acceptable.
    BadValue(String),
    /// The kernel refused a write: which file, what was written, and the errno.
    Kernel {
        /// The sysfs file written.
        path: PathBuf,
        /// What was written (without newline).
        value: String,
        /// The error the write returned.
        source: io::Error,
    },
    /// Reading or writing a file failed outside a kernel write.
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// The kernel accepted a write but did not do what it should have
    /// (e.g. `create` without the vGPU's directory appearing).
    Unexpected(String),
    /// The request does not fit on the GPUs; the text says why.
    NoFit(String),
    /// This vgpu.ko has no such setting yet (e.g. compute shares).
    Unsupported(String),
    /// The request is well-formed but not allowed; the text says why.
    Refused(String),
    /// The vGPU is held by someone else; the text says by whom.
    InUse(String),
    /// A container's request is over the admin's bound; the text says which.
    OverBound(String),
    /// The loaded NVIDIA driver is one vgpu cannot use; the text says why.
    Driver(String),
    /// The guard (a BPF LSM program) is unavailable or failed; the text says why.
    Guard(String),
    /// A step failed and rolling it back failed too.
    RollbackFailed {
        /// The step's error.
        error: Box<Error>,
        /// What could not be undone.
        rollback: Vec<Error>,
    },
}

/// The words for an errno the module returns, in vgpuctl's terms.
pub fn errno_text(errno: i32) -> Option<&'static str> {
    Some(match errno {
        libc::EBUSY => "in use (its device node is open, or memory or TSGs are charged to it)",
        libc::ENODEV => "no such GPU (the module found no /dev/nvidiaK for it)",
        libc::EEXIST => "already exists",
        libc::ENOENT => "no such vGPU",
        libc::EINVAL => "invalid value",
        libc::ERANGE => "value out of range",
        libc::EPERM | libc::EACCES => "permission denied (only root can change vGPUs)",
        libc::ENOMEM => "out of memory",
        libc::ENOSPC => "no space left",
        libc::EFBIG => "value too large",
        libc::EOPNOTSUPP => "not supported by this vgpu module",
        _ => return None,
    })
}

impl Error {
    /// The process exit status for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::ModuleNotLoaded(_) => exit::NO_MODULE,
            Error::NotRoot => exit::NOT_ROOT,
            Error::UnknownVgpu(_) => exit::NOT_FOUND,
            Error::BadValue(_) => exit::USAGE,
            Error::NoFit(_) => exit::NO_FIT,
            Error::InUse(_) => exit::IN_USE,
            Error::OverBound(_) => exit::OVER_BOUND,
            Error::Driver(_) => exit::DRIVER,
            Error::Guard(_) => exit::GUARD,
            Error::Kernel { source, .. } => match source.raw_os_error() {
                Some(libc::EPERM | libc::EACCES) => exit::NOT_ROOT,
                Some(libc::ENOENT) => exit::NOT_FOUND,
                Some(libc::EINVAL | libc::ERANGE) => exit::USAGE,
                _ => exit::FAILURE,
            },
            Error::RollbackFailed { error, .. } => error.exit_code(),
            Error::Io { .. } | Error::Unexpected(_) | Error::Unsupported(_) | Error::Refused(_) => {
                exit::FAILURE
            }
        }
    }

    /// A kernel write error for `path` and `value`.
    pub fn kernel(path: PathBuf, value: &str, source: io::Error) -> Self {
        Error::Kernel {
            path,
            value: value.trim_end().to_string(),
            source,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::ModuleNotLoaded(p) => write!(
                f,
                "vgpu module not loaded ({} missing; try `modprobe vgpu`)",
                p.display()
            ),
            Error::NotRoot => write!(f, "permission denied: changing vGPUs needs root"),
            Error::UnknownVgpu(n) => write!(f, "no such vGPU: {n}"),
            Error::BadValue(s) => write!(f, "bad value: {s}"),
            Error::Kernel {
                path,
                value,
                source,
            } => {
                let what = match source.raw_os_error().and_then(errno_text) {
                    Some(t) => t.to_string(),
                    None => source.to_string(),
                };
                write!(f, "writing {value:?} to {}: {what}", path.display())
            }
            Error::Io { path, source } => write!(f, "{}: {source}", path.display()),
            Error::Unexpected(s) => write!(f, "{s}"),
            Error::NoFit(s) => write!(f, "does not fit: {s}"),
            Error::Driver(s) => write!(f, "{s}"),
            Error::Guard(s) => write!(f, "guard: {s}"),
            Error::Unsupported(s) => write!(f, "not supported by this vgpu module: {s}"),
            Error::Refused(s) | Error::InUse(s) | Error::OverBound(s) => {
                write!(f, "refused: {s}")
            }
            Error::RollbackFailed { error, rollback } => {
                write!(f, "{error}; rolling back failed too:")?;
                for e in rollback {
                    write!(f, " {e};")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for Error {}

/// Shorthand for vgpuctl results.
pub type Result<T> = std::result::Result<T, Error>;
