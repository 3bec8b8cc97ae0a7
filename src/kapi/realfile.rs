// SPDX-License-Identifier: GPL-2.0

//! Opening the real driver's device nodes and forwarding to them.
//!
//! vgpu resolves the real nodes once, when the module loads, in the loader's
//! mount namespace ([`RealNode::resolve`]). Each proxy file then opens its own
//! private file on that path ([`RealNode::open`]), with the opener's
//! credentials but without a lookup in the opener's namespace, and forwards
//! ioctl, mmap and poll to it ([`RealFile`]).

use core::ptr::NonNull;
use kernel::{
    bindings,
    error::{from_err_ptr, to_result},
    fs::{File, LocalFile},
    mm::virt::VmaNew,
    prelude::*,
    sync::aref::ARef,
};

use super::{
    bounce::Slot,
    chrdev::{DevT, Poll},
    task,
};

/// `LOOKUP_FOLLOW` from `<linux/namei.h>`.
const LOOKUP_FOLLOW: c_uint = 1;

// The pointers are `c_void`: bindgen's `path` and `file` hold empty structs,
// which `improper_ctypes` rejects in an `extern` block.
extern "C" {
    /// `<linux/namei.h>`, not among the generated bindings.
    fn kern_path(name: *const c_char, flags: c_uint, path: *mut c_void) -> c_int;
    /// `src/c/mount.c`.
    fn vgpu_path_make_private(path: *mut c_void) -> c_int;
    /// `src/c/mount.c`.
    fn vgpu_path_put_private(path: *mut c_void);
}

/// A resolved path to a device node of the real driver.
///
/// It lies on a private clone of the node's mount with `MNT_NODEV` set
/// (where the kernel allows the clone): files opened on it work, but cannot
/// be reopened by path, e.g. through `/proc/<pid>/fd`, should one ever be
/// visible there.
///
/// # Invariants
///
/// `path` holds a reference to its mount and to its dentry, whose inode is a
/// character device; if `private`, the mount is the private clone made by
/// `vgpu_path_make_private` (released with `vgpu_path_put_private`), else
/// the references are those `kern_path` took (released with `path_put`).
pub(crate) struct RealNode {
    path: bindings::path,
    private: bool,
}

// SAFETY: by the type invariants the path holds references of its own to
// its mount and dentry; holding them may be done from any thread, and
// `path_put` or `vgpu_path_put_private` may run on any.
unsafe impl Send for RealNode {}
// SAFETY: `&RealNode` only reads the path (fixed after `resolve`) to open
// files on it, which the VFS allows concurrently.
unsafe impl Sync for RealNode {}

/// Whether `name` (an absolute path) exists now, in the current task's
/// mount namespace (e.g. a module's `/sys/module/NAME`).
pub(crate) fn path_exists(name: &CStr) -> bool {
    let mut path = bindings::path {
        mnt: core::ptr::null_mut(),
        dentry: core::ptr::null_mut(),
    };
    // SAFETY: `name` is NUL-terminated; `path` is a valid place for the
    // result, which holds references on success.
    if unsafe { kern_path(name.as_char_ptr(), LOOKUP_FOLLOW, (&raw mut path).cast()) } != 0 {
        return false;
    }
    // SAFETY: drops the references `kern_path` took, once.
    unsafe { bindings::path_put(&path) };
    true
}

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
        // SAFETY: the path holds a reference to its dentry, whose inode of a
        // resolved path is valid.
        let mode = unsafe { (*(*path.dentry).d_inode).i_mode };
        if u32::from(mode) & bindings::S_IFMT != bindings::S_IFCHR {
            // SAFETY: drops the references `kern_path` took, once.
            unsafe { bindings::path_put(&path) };
            return Err(ENODEV);
        }
        // INVARIANT: `path` holds the references `kern_path` took, to a
        // character device.
        let mut node = Self {
            path,
            private: false,
        };
        // SAFETY: `node.path` holds the references `kern_path` took; on
        // success the helper has swapped its mount reference for the clone's
        // (INVARIANT: `private` then says so), on failure it left it alone.
        match unsafe { vgpu_path_make_private((&raw mut node.path).cast()) } {
            0 => node.private = true,
            e => pr_warn!("{name:?}: no private nodev mount for it ({e}); using the node's own\n"),
        }
        Ok(node)
    }

    /// The node's path, for C helpers that work on it: valid and
    /// referenced for as long as `self` is.
    pub(crate) fn raw_path(&self) -> *const bindings::path {
        &self.path
    }

    /// The mount the node is resolved on (vgpu's private clone where it
    /// could make one): files vgpu opens on the node lie on it.
    pub(crate) fn mount(&self) -> *const c_void {
        self.path.mnt.cast()
    }

    /// Whether the node lies on vgpu's private clone of its mount (so that
    /// files vgpu opens on it can be told from everyone else's).
    pub(crate) fn is_private(&self) -> bool {
        self.private
    }

    /// The device number of the node.
    pub(crate) fn rdev(&self) -> DevT {
        // SAFETY: by the type invariants we hold the path's dentry, whose
        // inode is valid while we do.
        DevT(unsafe { (*(*self.path.dentry).d_inode).i_rdev })
    }

    /// Opens a new file on the node with `opener`'s flags and credentials.
    pub(crate) fn open(&self, opener: &File) -> Result<RealFile> {
        let flags = opener.flags() & !(bindings::O_CREAT | bindings::O_TRUNC | bindings::O_EXCL);
        self.open_with(flags as c_int, opener.cred().as_ptr())
    }

    /// Opens a new file on the node for vgpu's own use while it loads,
    /// read-write, with the loading task's credentials.
    pub(crate) fn open_as_loader(&self) -> Result<RealFile> {
        task::with_current_cred(|cred| self.open_with(bindings::O_RDWR as c_int, cred.as_ptr()))
    }

    /// `dentry_open` on the node.
    fn open_with(&self, flags: c_int, cred: *const bindings::cred) -> Result<RealFile> {
        // SAFETY: by the type invariants `self.path` is a valid, referenced
        // path; `cred` is a valid credential (the callers borrow it for the
        // call), which `dentry_open` takes its own reference to.
        let raw = from_err_ptr(unsafe { bindings::dentry_open(&self.path, flags, cred) })?;
        // `dentry_open` returns a new file or an error, never NULL.
        let raw = NonNull::new(raw).ok_or(ENOMEM)?;
        // SAFETY: the new file's one reference passes to the `ARef`. It is in
        // no fd table a user process can reach, so there is no `fdget_pos`
        // call on it, as `File` requires.
        let file = unsafe { ARef::from_raw(raw.cast()) };
        Ok(RealFile { file })
    }
}

impl Drop for RealNode {
    fn drop(&mut self) {
        if self.private {
            // SAFETY: by the type invariants the path was made private by
            // `vgpu_path_make_private`; it is released once, as it requires.
            unsafe { vgpu_path_put_private((&raw mut self.path).cast()) };
        } else {
            // SAFETY: by the type invariants the references were taken by
            // `kern_path`; they are dropped once.
            unsafe { bindings::path_put(&self.path) };
        }
    }
}

/// A private open file of the real driver, owned by one proxy file.
///
/// It is `Send` and `Sync` through [`File`]: the file is vgpu's own, opened
/// by [`RealNode`], and never in a user process's fd table (the kernel's
/// table holds it only for the duration of one call, see
/// [`RealFile::ioctl_block_naming`]), so nothing calls `fdget_pos` on it.
pub(crate) struct RealFile {
    file: ARef<File>,
}

impl RealFile {
    /// The file, for comparisons and fd checks.
    pub(crate) fn file(&self) -> &LocalFile {
        &self.file
    }

    /// The raw file; valid while `self` is.
    fn raw(&self) -> *mut bindings::file {
        self.file.as_ptr()
    }

    /// The file's operations, fixed once it is open.
    fn fops(&self) -> &bindings::file_operations {
        // SAFETY: we hold a reference, so the file is valid for as long as
        // `self`; `f_op` of an open file is set before it is returned by
        // `dentry_open`, never changes, and points to operations that stay
        // valid while the file is open (its owner module is pinned by it).
        unsafe { &*(*self.raw()).f_op }
    }

    /// Forwards an ioctl. `arg` is the caller's own argument (user pointer):
    /// the driver copies from and to user memory itself.
    pub(crate) fn ioctl(&self, cmd: u32, arg: usize) -> Result<isize> {
        super::inject::driver_call()?;
        let Some(op) = self.fops().unlocked_ioctl else {
            return Err(ENOTTY);
        };
        // SAFETY: calling the driver's own ioctl on its own file (valid while
        // we hold `self.file`), from the task that made the system call,
        // with that task's argument: the same context the VFS would call it
        // in.
        ioctl_result(unsafe { op(self.raw(), cmd, arg as c_ulong) })
    }

    /// Forwards an ioctl whose argument is the block `blk` (a kernel copy):
    /// the driver reads it from a bounce slot that no other thread can
    /// change (see [`super::bounce`]), and its answer comes back into `blk`.
    /// `cmd` must name a block of `blk.len()` bytes.
    pub(crate) fn ioctl_block(&self, cmd: u32, blk: &mut [u8]) -> Result<isize> {
        bounced(blk, |slot| self.ioctl(cmd, slot.user_addr(0) as usize))
    }

    /// As [`RealFile::ioctl_block`], for a block whose 8-byte field at
    /// `ptr_off` points to params the driver reads (RM_ALLOC's, RM_CONTROL's):
    /// `params` (a kernel copy vgpu checked) go into the same slot, after
    /// the block, and the slot's copy of the field points to them, so the
    /// driver reads the params vgpu checked, not the caller's. The answer
    /// comes back into `blk` and `params`; `blk`'s pointer field is the
    /// caller's again, for the caller's block.
    pub(crate) fn ioctl_block_params(
        &self,
        cmd: u32,
        blk: &mut [u8],
        ptr_off: usize,
        params: &mut [u8],
    ) -> Result<isize> {
        /// Where the params go in the slot: after any block that has them
        /// (NVOS64, 48 bytes, is the largest), 8-byte aligned.
        const PARAMS_AT: usize = 64;
        let field = ptr_off
            .checked_add(8)
            .and_then(|end| blk.get(ptr_off..end))
            .ok_or(EINVAL)?;
        let theirs: [u8; 8] = field.try_into().map_err(|_| EINVAL)?;
        if blk.len() > PARAMS_AT {
            return Err(EINVAL);
        }
        let mut slot = Slot::get()?;
        let at = slot.user_addr(PARAMS_AT);
        blk[ptr_off..ptr_off + 8].copy_from_slice(&at.to_ne_bytes());
        slot.write(0, blk)?;
        slot.write(PARAMS_AT, params)?;
        let r = self.ioctl(cmd, slot.user_addr(0) as usize);
        slot.read(0, blk)?;
        slot.read(PARAMS_AT, params)?;
        blk[ptr_off..ptr_off + 8].copy_from_slice(&theirs);
        r
    }

    /// Forwards an mmap: the mapping's file becomes the real file (the
    /// driver's vm_ops find their state through it), then the driver sets
    /// the mapping up.
    pub(crate) fn mmap(&self, vma: &VmaNew) -> Result {
        super::inject::driver_call()?;
        let Some(op) = self.fops().mmap else {
            return Err(ENODEV);
        };
        // SAFETY: the VMA is under construction in the caller's mmap, not yet
        // visible; `vma_set_file` takes a reference to the real file (valid
        // while we hold `self.file`) and drops the one to the proxy file, as
        // the dma-buf exporters do.
        unsafe { bindings::vma_set_file(vma.as_ptr(), self.raw()) };
        // SAFETY: calling the driver's mmap on its own file with a VMA whose
        // file is now that file: the context the VFS would call it in.
        to_result(unsafe { op(self.raw(), vma.as_ptr()) })
    }

    /// Forwards a poll, registering the caller's poll table with the real
    /// file's wait queues.
    pub(crate) fn poll(&self, table: &Poll<'_>) -> u32 {
        match self.fops().poll {
            // SAFETY: the real file is valid while we hold `self.file`; the
            // poll table is the caller's, valid for this call.
            Some(op) => unsafe { op(self.raw(), table.as_raw()) },
            None => {
                bindings::POLLIN | bindings::POLLOUT | bindings::POLLRDNORM | bindings::POLLWRNORM
            }
        }
    }
}

extern "C" {
    /// `src/c/privfd.c`.
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
    /// process's table (see `src/c/privfd.c`). The answer comes back into
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
        super::inject::driver_call()?;
        bounced(blk, |slot| {
            let fd_field = slot.kernel_ptr(fd_off, 4)?.cast::<c_int>();
            let arg = slot.user_addr(0) as c_ulong;
            // SAFETY: both files are valid while borrowed (each `RealFile`
            // holds a reference); `arg` (the slot's user address) and
            // `fd_field` (its kernel address, 4 bytes inside the slot,
            // through which the helper sets the fd) are valid while `slot` is
            // held, which outlasts the call. The helper installs `target`
            // with a reference of its own and closes it before returning.
            ioctl_result(unsafe {
                vgpu_ioctl_with_private_fd(
                    self.raw().cast(),
                    target.raw().cast(),
                    cmd,
                    arg,
                    fd_field,
                )
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
