// SPDX-License-Identifier: GPL-2.0

//! Thin helpers over the system calls and tools the tests use.

use std::ffi::CString;
use std::os::unix::fs::FileTypeExt;
use std::process::Command;

/// Runs a busybox command; `Ok` with its output on exit 0, else `Err` with it.
pub fn sh(cmdline: &str) -> Result<String, String> {
    let out = Command::new("/bin/sh")
        .arg("-c")
        .arg(cmdline)
        .output()
        .map_err(|e| format!("{cmdline}: {e}"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        Ok(text)
    } else {
        Err(format!(
            "`{cmdline}` failed ({}): {}",
            out.status,
            text.trim()
        ))
    }
}

/// Whether `path` is a character device.
pub fn is_chardev(path: &str) -> bool {
    std::fs::metadata(path)
        .map(|m| m.file_type().is_char_device())
        .unwrap_or(false)
}

/// Whether `path` exists at all.
pub fn exists(path: &str) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

/// An open file descriptor, closed on drop.
pub struct Fd(pub i32);

impl Fd {
    /// `open(path, O_RDWR)`.
    pub fn open(path: &str) -> Result<Fd, i32> {
        let c = CString::new(path).map_err(|_| libc::EINVAL)?;
        // SAFETY: `c` is a valid NUL-terminated path; open has no other preconditions.
        let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        if fd < 0 {
            Err(errno())
        } else {
            Ok(Fd(fd))
        }
    }

    /// `ioctl(fd, cmd, arg)`; `Err(errno)` on failure.
    pub fn ioctl(&self, cmd: u32, arg: *mut u8) -> Result<i32, i32> {
        // SAFETY: the caller passes a pointer to a buffer sized for `cmd`, or
        // deliberately a bad one, which the kernel must reject with EFAULT.
        let r = unsafe { libc::ioctl(self.0, cmd as _, arg) };
        if r < 0 {
            Err(errno())
        } else {
            Ok(r)
        }
    }
}

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: `self.0` is an fd this value owns; it is closed once.
        unsafe { libc::close(self.0) };
    }
}

/// The calling thread's errno.
pub fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Whether a module is loaded, from /proc/modules.
pub fn module_loaded(name: &str) -> bool {
    std::fs::read_to_string("/proc/modules")
        .map(|s| s.lines().any(|l| l.split(' ').next() == Some(name)))
        .unwrap_or(false)
}
