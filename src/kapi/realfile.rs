// SPDX-License-Identifier: GPL-2.0

//! Opening the real driver's device nodes and forwarding to them.
//!
//! vgpu resolves the real nodes once, when the module loads, in the loader's
//! mount namespace ([`RealNode::resolve`]). Each proxy file then opens its own
//! private file on that path ([`RealNode::open`]), with the opener's
//! credentials but without a lookup in the opener's namespace, and forwards
//! ioctl, mmap and poll to it ([`RealFile`]).

use kernel::{
    bindings,
    error::{from_err_ptr, to_result},
    fs::{File, LocalFile},
    mm::virt::VmaNew,
    prelude::*,
};

use super::{
    bounce::Slot,
    chrdev::{DevT, Poll},
};

/// `LOOKUP_FOLLOW` from `<linux/namei.h>`.
const LOOKUP_FOLLOW: c_uint = 1;

extern "C" {
    /// `<linux/namei.h>`, not among the generated bindings.
    fn kern_path(name: *const c_char, flags: c_uint, path: *mut c_void) -> c_int;
    /// `src/helpers.c`.
    fn vgpu_path_make_private(path: *mut c_void) -> c_int;
    /// `src/helpers.c`.
    fn vgpu_path_put_private(path: *mut c_void);
    /// `src/helpers.c`.
    fn vgpu_open_as_current(path: *const c_void, flags: c_int) -> *mut c_void;
}

/// A resolved path to a device node of the real driver.
///
/// It lies on a private clone of the node's mount with `MNT_NODEV` set
/// (where the kernel allows the clone): files opened on it work, but cannot
/// be reopened by path, e.g. through `/proc/<pid>/fd`, should one ever be
/// visible there.
pub(crate) struct RealNode {
    path: bindings::path,
    private: bool,
}

// SAFETY: a `struct path` is two reference-counted pointers; holding the
// references may be done from any thread and `path_put` may run on any.
unsafe impl Send for RealNode {}
// SAFETY: `&RealNode` only reads the path to open files on it, which the VFS
// allows concurrently.
unsafe impl Sync for RealNode {}

impl RealNode {
    /// Looks up `name` (an absolute path) now, in the current task's mount
    /// namespace, and keeps the result. Fails with `ENOENT` if it is missing
    /// and `ENODEV` if it is not a character device.
    pub(crate) fn resolve(name: &CStr) -> Result<Self> {
        let mut path = bindings::path {
            mnt: core::ptr::null_mut(),
            dentry: core::ptr::null_mut(),
        };
        // SAFETY: `name` is NUL-terminated; `path` is a valid place for the
        // result, which holds references on success.
        to_result(unsafe { kern_path(name.as_char_ptr(), LOOKUP_FOLLOW, (&raw mut path).cast()) })?;
        let mut node = Self {
            path,
            private: false,
        };
        // SAFETY: the path holds a reference to its dentry, whose inode of a
        // resolved path is valid.
        let mode = unsafe { (*(*node.path.dentry).d_inode).i_mode };
        if u32::from(mode) & bindings::S_IFMT != bindings::S_IFCHR {
            return Err(ENODEV);
        }
        // SAFETY: `node.path` holds the references `kern_path` took; on
        // success the helper has swapped its mount reference for the clone's.
        match unsafe { vgpu_path_make_private((&raw mut node.path).cast()) } {
            0 => node.private = true,
            e => pr_warn!("{name:?}: no private nodev mount for it ({e}); using the node's own\n"),
        }
        Ok(node)
    }

    /// The device number of the node.
    pub(crate) fn rdev(&self) -> DevT {
        // SAFETY: as in `resolve`, the inode is valid while we hold the path.
        DevT(unsafe { (*(*self.path.dentry).d_inode).i_rdev })
    }

    /// Opens a new file on the node with `opener`'s flags and credentials.
    pub(crate) fn open(&self, opener: &File) -> Result<RealFile> {
        // SAFETY: `opener` is a valid open file; its flags and credentials
        // are fixed for its life.
        let (flags, cred) = unsafe {
            let f = opener.as_ptr();
            ((*f).f_flags, (*f).f_cred)
        };
        let flags =
            flags as c_int & !(bindings::O_CREAT | bindings::O_TRUNC | bindings::O_EXCL) as c_int;
        // SAFETY: `self.path` is a valid, referenced path; `cred` is a valid
        // credential (the opener's), which `dentry_open` takes its own
        // reference to.
        let raw = from_err_ptr(unsafe { bindings::dentry_open(&self.path, flags, cred) })?;
        Ok(RealFile { raw })
    }
}

impl RealNode {
    /// Opens a new file on the node for vgpu's own use while it loads,
    /// read-write, with the loading task's credentials.
    pub(crate) fn open_as_loader(&self) -> Result<RealFile> {
        // SAFETY: `self.path` is a valid, referenced path; the helper opens
        // it with the current task's credentials.
        let raw = from_err_ptr(unsafe {
            vgpu_open_as_current((&raw const self.path).cast(), bindings::O_RDWR as c_int)
        })?;
        Ok(RealFile { raw: raw.cast() })
    }
}

impl Drop for RealNode {
    fn drop(&mut self) {
        if self.private {
            // SAFETY: the path was made private by `vgpu_path_make_private`
            // and is released once, as it requires.
            unsafe { vgpu_path_put_private((&raw mut self.path).cast()) };
        } else {
            // SAFETY: the references were taken by `kern_path` and are
            // dropped once.
            unsafe { bindings::path_put(&self.path) };
        }
    }
}

/// A private open file of the real driver, owned by one proxy file.
pub(crate) struct RealFile {
    raw: *mut bindings::file,
}

// SAFETY: a `struct file` is reference-counted and its operations are
// callable from any thread; we hold one reference.
unsafe impl Send for RealFile {}
// SAFETY: the driver's file operations synchronise concurrent callers
// themselves, as for any file shared between threads.
unsafe impl Sync for RealFile {}

impl RealFile {
    /// The file, for comparisons and fd checks.
    pub(crate) fn file(&self) -> &LocalFile {
        // SAFETY: we hold a reference, so the file is valid for our lifetime.
        unsafe { LocalFile::from_raw_file(self.raw) }
    }

    /// Forwards an ioctl. `arg` is the caller's own argument (user pointer):
    /// the driver copies from and to user memory itself.
    pub(crate) fn ioctl(&self, cmd: u32, arg: usize) -> Result<isize> {
        // SAFETY: `raw` is a valid file we hold; `f_op` is fixed once open.
        let f = unsafe { (*self.raw).f_op };
        // SAFETY: `f_op` of an open file points to valid operations.
        let Some(op) = (unsafe { (*f).unlocked_ioctl }) else {
            return Err(ENOTTY);
        };
        // SAFETY: calling the driver's own ioctl on its own file, from the
        // task that made the system call, with that task's argument: the
        // same context the VFS would call it in.
        ioctl_result(unsafe { op(self.raw, cmd, arg as c_ulong) })
    }

    /// Forwards an ioctl whose argument is the block `blk` (a kernel copy):
    /// the driver reads it from a bounce slot that no other thread can
    /// change (see [`super::bounce`]), and its answer comes back into `blk`.
    /// `cmd` must name a block of `blk.len()` bytes.
    pub(crate) fn ioctl_block(&self, cmd: u32, blk: &mut [u8]) -> Result<isize> {
        bounced(blk, |slot| self.ioctl(cmd, slot.user_addr(0) as usize))
    }

    /// Forwards an mmap: the mapping's file becomes the real file (the
    /// driver's vm_ops find their state through it), then the driver sets
    /// the mapping up.
    pub(crate) fn mmap(&self, vma: &VmaNew) -> Result {
        // SAFETY: as in `ioctl`.
        let f = unsafe { (*self.raw).f_op };
        // SAFETY: as in `ioctl`.
        let Some(op) = (unsafe { (*f).mmap }) else {
            return Err(ENODEV);
        };
        // SAFETY: the VMA is under construction in the caller's mmap, not yet
        // visible; `vma_set_file` takes a reference to the real file and drops
        // the one to the proxy file, as the dma-buf exporters do.
        unsafe { bindings::vma_set_file(vma.as_ptr(), self.raw) };
        // SAFETY: calling the driver's mmap on its own file with a VMA whose
        // file is now that file: the context the VFS would call it in.
        to_result(unsafe { op(self.raw, vma.as_ptr()) })
    }

    /// Forwards a poll, registering the caller's poll table with the real
    /// file's wait queues.
    pub(crate) fn poll(&self, table: &Poll<'_>) -> u32 {
        // SAFETY: as in `ioctl`.
        let f = unsafe { (*self.raw).f_op };
        // SAFETY: as in `ioctl`.
        match unsafe { (*f).poll } {
            // SAFETY: the real file is valid; the poll table is the caller's,
            // valid for this call.
            Some(op) => unsafe { op(self.raw, table.as_raw()) },
            None => {
                bindings::POLLIN | bindings::POLLOUT | bindings::POLLRDNORM | bindings::POLLWRNORM
            }
        }
    }
}

impl Drop for RealFile {
    fn drop(&mut self) {
        // SAFETY: we own one reference, dropped once.
        unsafe { bindings::fput(self.raw) };
    }
}

extern "C" {
    /// `src/helpers.c`.
    fn vgpu_ioctl_with_private_fd(
        on: *mut c_void,
        target: *mut c_void,
        cmd: c_uint,
        arg: c_ulong,
        fd_field: *mut c_int,
    ) -> c_long;
}

impl RealFile {
    /// Forwards an ioctl whose block `blk` (a kernel copy) names a driver
    /// file by fd at byte `fd_off`: the block goes from a bounce slot, as
    /// with [`RealFile::ioctl_block`], its fd field set to an fd that names
    /// `target` in the kernel's own fd table, and the call runs where that
    /// table is the current one, so the real file never enters a user
    /// process's table (see `src/helpers.c`). The answer comes back into
    /// `blk`, where the fd field then holds the kernel-table fd; the caller
    /// puts its own back.
    pub(crate) fn ioctl_block_naming(
        &self,
        target: &RealFile,
        cmd: u32,
        blk: &mut [u8],
        fd_off: usize,
    ) -> Result<isize> {
        if fd_off.checked_add(4).is_none_or(|end| end > blk.len()) {
            return Err(EINVAL);
        }
        bounced(blk, |slot| {
            let fd_field = slot.kernel_ptr(fd_off, 4)?.cast::<c_int>();
            let arg = slot.user_addr(0) as c_ulong;
            // SAFETY: the files are valid while borrowed; `arg` (the slot's
            // user address) and `fd_field` (its kernel address, through
            // which the helper sets the fd) are valid while `slot` is held.
            ioctl_result(unsafe {
                vgpu_ioctl_with_private_fd(self.raw.cast(), target.raw.cast(), cmd, arg, fd_field)
            })
        })
    }
}

/// An ioctl's return value: a negative errno, or the result.
fn ioctl_result(r: c_long) -> Result<c_long> {
    if r < 0 {
        Err(Error::from_errno(r as i32))
    } else {
        Ok(r)
    }
}

/// Runs `call` with `blk` copied into a bounce slot it holds, then copies the
/// slot, where the driver answered, back into `blk`.
fn bounced(blk: &mut [u8], call: impl FnOnce(&mut Slot) -> Result<isize>) -> Result<isize> {
    let mut slot = Slot::get()?;
    slot.write(0, blk)?;
    let r = call(&mut slot);
    slot.read(0, blk)?;
    r
}
