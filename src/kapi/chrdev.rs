// SPDX-License-Identifier: GPL-2.0

//! Character devices with file operations of our own.
//!
//! Rust-for-Linux's miscdevice has no `poll` hook, takes only dynamic minors
//! of major 10 and cannot choose its node's name apart from the device's. vgpu
//! and the driver double need all of these: the double registers the
//! NVIDIA driver's real numbers (195:N), and every proxy node forwards `poll`.
//!
//! The pieces:
//! - [`Region`]: a range of device numbers (fixed or dynamically allocated);
//! - [`Cdev`]: a `struct cdev` bound to a [`FileOperations`] vtable over a
//!   range of numbers;
//! - [`Node`]: a device in a class, which makes devtmpfs create `/dev/<name>`.
//!
//! An open file finds its device by number through the implementor's own
//! lookup (see [`FileOperations::open`]), never through `container_of` on the
//! cdev: a device can then be removed while an open of it races, and the open
//! simply fails with `ENODEV`.

use core::marker::PhantomData;
use kernel::{
    bindings,
    error::{from_err_ptr, to_result},
    fs::{File, LocalFile},
    mm::virt::VmaNew,
    module::{this_module, ModuleMetadata},
    prelude::*,
    sync::Arc,
    types::ForeignOwnable,
};

use super::class::Class;

/// `MINORBITS` from `<linux/kdev_t.h>`.
const MINORBITS: u32 = 20;

/// A device number: `MKDEV(major, minor)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DevT(pub(crate) u32);

impl DevT {
    /// `MKDEV(major, minor)`.
    pub(crate) const fn new(major: u32, minor: u32) -> Self {
        Self((major << MINORBITS) | minor)
    }

    /// `MAJOR(dev)`.
    pub(crate) const fn major(self) -> u32 {
        self.0 >> MINORBITS
    }

    /// `MINOR(dev)`.
    pub(crate) const fn minor(self) -> u32 {
        self.0 & ((1 << MINORBITS) - 1)
    }
}

/// A registered range of character device numbers.
pub(crate) struct Region {
    base: DevT,
    count: u32,
}

impl Region {
    /// Claims `count` numbers from `base`; `EBUSY` if any is taken.
    #[cfg(vgpu_test_glue)]
    pub(crate) fn fixed(base: DevT, count: u32, name: &'static CStr) -> Result<Self> {
        // SAFETY: `name` is NUL-terminated and `'static`, as the region keeps it.
        to_result(unsafe { bindings::register_chrdev_region(base.0, count, name.as_char_ptr()) })?;
        Ok(Self { base, count })
    }

    /// Allocates `count` numbers under a free major, minors from 0.
    pub(crate) fn dynamic(count: u32, name: &'static CStr) -> Result<Self> {
        let mut dev: bindings::dev_t = 0;
        // SAFETY: `dev` is a valid place for the result; `name` is NUL-terminated
        // and `'static`, as the region keeps it.
        to_result(unsafe {
            bindings::alloc_chrdev_region(&mut dev, 0, count, name.as_char_ptr())
        })?;
        Ok(Self {
            base: DevT(dev),
            count,
        })
    }

    /// The first number of the range.
    pub(crate) fn base(&self) -> DevT {
        self.base
    }

    /// How many numbers the range holds.
    #[cfg(vgpu_test_glue)]
    pub(crate) fn count(&self) -> u32 {
        self.count
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: the range was registered by `fixed` or `dynamic` and is
        // unregistered once, here.
        unsafe { bindings::unregister_chrdev_region(self.base.0, self.count) };
    }
}

/// The file operations of a [`Cdev`].
///
/// `Private` is what `open` attaches to the file (its `private_data`); the
/// other hooks borrow it. It is dropped by `release`.
#[vtable]
pub(crate) trait FileOperations: Sized + 'static {
    /// The module that owns the operations: it stays loaded while a file is open.
    type OwnerModule: ModuleMetadata;
    /// Per-open-file state.
    type Private: ForeignOwnable + Send + Sync;

    /// Opens device `dev`. Return `ENODEV` if the number no longer names a device.
    fn open(dev: DevT, file: &File) -> Result<Self::Private>;

    /// The last reference to the file is gone.
    fn release(private: Self::Private, _file: &File) {
        drop(private);
    }

    /// `unlocked_ioctl` (also used for compat callers).
    fn ioctl(
        _private: <Self::Private as ForeignOwnable>::Borrowed<'_>,
        _file: &File,
        _cmd: u32,
        _arg: usize,
    ) -> Result<isize> {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// `mmap`.
    fn mmap(
        _private: <Self::Private as ForeignOwnable>::Borrowed<'_>,
        _file: &File,
        _vma: &VmaNew,
    ) -> Result {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// `poll`: register on wait queues through `table`, return the ready mask.
    fn poll(
        _private: <Self::Private as ForeignOwnable>::Borrowed<'_>,
        _file: &File,
        _table: &Poll<'_>,
    ) -> u32 {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }
}

/// The `file_operations` of a [`FileOperations`] implementor.
pub(crate) struct Vtable<T: FileOperations>(PhantomData<T>);

impl<T: FileOperations> Vtable<T> {
    /// The operations, as a cdev installs them and [`is_ours`] compares
    /// them.
    pub(crate) fn fops() -> &'static bindings::file_operations {
        &Self::FOPS
    }

    /// # Safety
    ///
    /// Called by the VFS with a valid inode and a file being opened.
    unsafe extern "C" fn open(inode: *mut bindings::inode, raw: *mut bindings::file) -> c_int {
        // SAFETY: the VFS passes a valid inode.
        let dev = DevT(unsafe { (*inode).i_rdev });
        // SAFETY: the VFS passes a valid file being opened, whose operations
        // are these.
        unsafe { Self::open_as(raw, dev) }
    }

    /// Opens `raw` as `T` opens device `dev`, and attaches what `T::open`
    /// made to it. Returns 0 or a negative errno.
    ///
    /// # Safety
    ///
    /// `raw` is a valid file in its open whose operations are these (set by
    /// the VFS, or by `kapi::cdevhook::adopt`), and whose `private_data`
    /// nothing else uses.
    pub(crate) unsafe fn open_as(raw: *mut bindings::file, dev: DevT) -> c_int {
        // SAFETY: the caller's contract: the file is valid for its open,
        // which outlives this call.
        let file = unsafe { File::from_raw_file(raw) };
        match T::open(dev, file) {
            Ok(private) => {
                // SAFETY: `raw` is valid; nothing else uses `private_data` of
                // a file of this vtable, whose release takes it back.
                unsafe { (*raw).private_data = private.into_foreign().cast() };
                0
            }
            Err(e) => e.to_errno(),
        }
    }

    /// # Safety
    ///
    /// Called once by the VFS when the last reference to a file of ours goes.
    unsafe extern "C" fn release(_inode: *mut bindings::inode, raw: *mut bindings::file) -> c_int {
        // SAFETY: `private_data` was set by a successful `open` from
        // `into_foreign`, and release runs once, so ownership comes back once.
        let private = unsafe { T::Private::from_foreign((*raw).private_data.cast()) };
        // SAFETY: the file is valid for the duration of this call.
        T::release(private, unsafe { File::from_raw_file(raw) });
        0
    }

    /// # Safety
    ///
    /// Called by the VFS on an open file of ours.
    unsafe extern "C" fn ioctl(raw: *mut bindings::file, cmd: c_uint, arg: c_ulong) -> c_long {
        // SAFETY: the file is open, so `private_data` holds what `open` stored
        // and `release` has not run; the borrow ends before this call returns.
        let private = unsafe { T::Private::borrow((*raw).private_data.cast()) };
        // SAFETY: the file is valid for the duration of this call.
        let file = unsafe { File::from_raw_file(raw) };
        match T::ioctl(private, file, cmd, arg) {
            Ok(r) => r as c_long,
            Err(e) => e.to_errno() as c_long,
        }
    }

    /// # Safety
    ///
    /// Called by the VFS on an open file of ours with a VMA being set up.
    unsafe extern "C" fn mmap(
        raw: *mut bindings::file,
        vma: *mut bindings::vm_area_struct,
    ) -> c_int {
        // SAFETY: as in `ioctl`.
        let private = unsafe { T::Private::borrow((*raw).private_data.cast()) };
        // SAFETY: the file is valid for the duration of this call.
        let file = unsafe { File::from_raw_file(raw) };
        // SAFETY: `mmap` is called with a VMA under construction that is not
        // yet visible to other threads, as `VmaNew` requires.
        let area = unsafe { VmaNew::from_raw(vma) };
        match T::mmap(private, file, area) {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }

    /// # Safety
    ///
    /// Called by the VFS on an open file of ours.
    unsafe extern "C" fn poll(
        raw: *mut bindings::file,
        table: *mut bindings::poll_table,
    ) -> c_uint {
        // SAFETY: as in `ioctl`.
        let private = unsafe { T::Private::borrow((*raw).private_data.cast()) };
        // SAFETY: the file is valid for the duration of this call.
        let file = unsafe { File::from_raw_file(raw) };
        let table = Poll {
            raw: table,
            _call: PhantomData,
        };
        T::poll(private, file, &table)
    }

    const FOPS: bindings::file_operations = bindings::file_operations {
        owner: this_module::<T::OwnerModule>().as_ptr(),
        open: Some(Self::open),
        release: Some(Self::release),
        unlocked_ioctl: if T::HAS_IOCTL {
            Some(Self::ioctl)
        } else {
            None
        },
        compat_ioctl: if T::HAS_IOCTL {
            Some(Self::ioctl)
        } else {
            None
        },
        mmap: if T::HAS_MMAP { Some(Self::mmap) } else { None },
        poll: if T::HAS_POLL { Some(Self::poll) } else { None },
        // SAFETY: all-zeroes is a valid `file_operations` (every hook absent).
        ..unsafe { core::mem::MaybeUninit::zeroed().assume_init() }
    };
}

/// The poll table of one `poll` call.
///
/// # Invariants
///
/// `raw` is the (null or valid) poll table the VFS passed to the `poll` call
/// this value was made in, and `'a` does not outlive that call.
pub(crate) struct Poll<'a> {
    raw: *mut bindings::poll_table,
    _call: PhantomData<&'a bindings::poll_table>,
}

impl Poll<'_> {
    /// Registers the caller on `cv`'s wait queue.
    #[cfg(vgpu_test_glue)]
    pub(crate) fn register_wait(&self, file: &File, cv: &kernel::sync::poll::PollCondVar) {
        // SAFETY: by the type invariants `raw` is the null or valid poll table
        // of the call this `Poll` lives in, which is still running.
        let table = unsafe { kernel::sync::poll::PollTable::from_raw(self.raw) };
        table.register_wait(file, cv);
    }

    /// The raw table, for forwarding the poll to another file: null or
    /// valid for as long as `self` is.
    pub(crate) fn as_raw(&self) -> *mut bindings::poll_table {
        self.raw
    }
}

/// Whether `file` was opened through the operations `T`.
pub(crate) fn is_ours<T: FileOperations>(file: &LocalFile) -> bool {
    // SAFETY: `file` is a valid, open file; `f_op` is set before the file is
    // reachable and never changes afterwards.
    let fop = unsafe { (*file.as_ptr()).f_op };
    core::ptr::eq(fop, &Vtable::<T>::FOPS)
}

/// The device number of the inode behind `file`.
#[cfg(vgpu_test_glue)]
pub(crate) fn file_dev(file: &LocalFile) -> DevT {
    // SAFETY: an open file's inode is valid for as long as the file is.
    DevT(unsafe { (*(*file.as_ptr()).f_inode).i_rdev })
}

/// A `struct cdev` serving a range of numbers with the operations `T`.
///
/// # Invariants
///
/// `raw` came from `cdev_alloc`, its `ops` are `T`'s vtable, and it was
/// added with `cdev_add`: it is live and deleted only by `drop` (files open
/// on it hold references of their own).
pub(crate) struct Cdev<T: FileOperations> {
    raw: *mut bindings::cdev,
    _t: PhantomData<T>,
}

// SAFETY: by the type invariants the cdev is live; it is only touched by
// `cdev_add` (in `new`) and `cdev_del` (in `drop`), both of which take the
// chrdev lock, so it may be deleted from any thread; the VFS uses it under
// its own locking.
unsafe impl<T: FileOperations> Send for Cdev<T> {}
// SAFETY: no `&self` method touches the cdev.
unsafe impl<T: FileOperations> Sync for Cdev<T> {}

impl<T: FileOperations> Cdev<T> {
    /// Adds a cdev for `count` numbers from `base`. Opens may start at once.
    pub(crate) fn new(base: DevT, count: u32) -> Result<Self> {
        // SAFETY: `cdev_alloc` has no preconditions; the cdev it returns is
        // reference-counted and freed by its kobject release.
        let raw = unsafe { bindings::cdev_alloc() };
        if raw.is_null() {
            return Err(ENOMEM);
        }
        // SAFETY: `raw` is a fresh cdev; `FOPS` is a `'static` vtable and the
        // owner module outlives every file opened through it.
        unsafe {
            (*raw).ops = &Vtable::<T>::FOPS;
            (*raw).owner = this_module::<T::OwnerModule>().as_ptr();
        }
        // SAFETY: `raw` is a valid, not yet added cdev.
        let r = unsafe { bindings::cdev_add(raw, base.0, count) };
        if r != 0 {
            // SAFETY: drops the reference `cdev_alloc` gave us; the cdev was
            // never added, so nothing else holds it.
            unsafe { bindings::kobject_put(&mut (*raw).kobj) };
            return Err(Error::from_errno(r));
        }
        // INVARIANT: allocated, given `T`'s vtable and added above.
        Ok(Self {
            raw,
            _t: PhantomData,
        })
    }
}

impl<T: FileOperations> Drop for Cdev<T> {
    fn drop(&mut self) {
        // SAFETY: by the type invariants the cdev was added in `new` and not
        // yet deleted; it is deleted once, here. Files already open keep
        // their own reference to it.
        unsafe { bindings::cdev_del(self.raw) };
    }
}

/// A device in a class: devtmpfs shows it as `/dev/<name>`.
///
/// # Invariants
///
/// `raw` came from a successful `device_create` or
/// `device_create_with_groups` and is unregistered only by `drop`. When the
/// device has sysfs files, `_keep` holds what they use, their attribute
/// group and the device's driver data, until after the device is
/// unregistered (which drains the files' callbacks).
pub(crate) struct Node {
    raw: *mut bindings::device,
    _keep: Option<[Arc<dyn Send + Sync>; 2]>,
}

// SAFETY: by the type invariants the device is registered; it is only
// unregistered (in `drop`), under the driver core's locking, which any thread
// may do; what `_keep` holds is `Send + Sync`.
unsafe impl Send for Node {}
// SAFETY: no `&self` method touches the device; what `_keep` holds is
// `Send + Sync`.
unsafe impl Sync for Node {}

impl Node {
    /// Creates `/dev/<name>` for number `dev` in `class`.
    pub(crate) fn new(class: &Class, dev: DevT, name: &CStr) -> Result<Self> {
        // SAFETY: `class` is a registered class; "%s" consumes exactly the one
        // NUL-terminated string argument that follows it, which the driver
        // core copies before returning.
        let raw = from_err_ptr(unsafe {
            bindings::device_create(
                class.as_raw(),
                core::ptr::null_mut(),
                dev.0,
                core::ptr::null_mut(),
                c"%s".as_char_ptr(),
                name.as_char_ptr(),
            )
        })?;
        // INVARIANT: `device_create` succeeded; the device has no files.
        Ok(Self { raw, _keep: None })
    }

    /// Creates `/dev/<name>` for number `dev` in `class`, with the sysfs
    /// files of `groups` (a NULL-terminated list) and driver data `data`.
    /// The node keeps `keep` until the device is gone. The typed, safe
    /// interface is `Node::with_groups` (`sysfs.rs`).
    ///
    /// # Safety
    ///
    /// `groups`, its groups and their attributes stay valid while `keep`
    /// does, and their callbacks read the driver data as the type that
    /// `data` points to, which `keep` keeps alive.
    pub(super) unsafe fn with_raw_groups(
        class: &Class,
        dev: DevT,
        name: &CStr,
        data: *mut c_void,
        groups: *const *const bindings::attribute_group,
        keep: [Arc<dyn Send + Sync>; 2],
    ) -> Result<Self> {
        // SAFETY: `class` is registered; `groups` is a valid NULL-terminated
        // list whose callbacks fit `data`, both valid while `keep` is (the
        // function's safety section), which the node holds until after the
        // device is unregistered; "%s" consumes the one NUL-terminated
        // argument that follows, which the driver core copies.
        let raw = from_err_ptr(unsafe {
            bindings::device_create_with_groups(
                class.as_raw(),
                core::ptr::null_mut(),
                dev.0,
                data,
                groups.cast_mut(),
                c"%s".as_char_ptr(),
                name.as_char_ptr(),
            )
        })?;
        // INVARIANT: `device_create_with_groups` succeeded; `keep` holds what
        // its files use.
        Ok(Self {
            raw,
            _keep: Some(keep),
        })
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        // SAFETY: by the type invariants the device was created in `new` or
        // `with_raw_groups` and not yet unregistered; it is unregistered once,
        // here, which removes its files and drains their callbacks before
        // `_keep` (a field, dropped after this) lets their data go.
        unsafe { bindings::device_unregister(self.raw) };
    }
}

/// The private data of `file`, if it was opened through the operations `T`.
///
/// Used to reach the state of a file named by an fd inside ioctl parameters.
pub(crate) fn private<T: FileOperations>(
    file: &LocalFile,
) -> Option<<T::Private as ForeignOwnable>::Borrowed<'_>> {
    if !is_ours::<T>(file) {
        return None;
    }
    // SAFETY: the file is ours and open (the caller holds it), so its
    // `private_data` holds what `Vtable::open` stored, and `release` cannot
    // run while the borrow (tied to `file`) lives.
    Some(unsafe { T::Private::borrow((*file.as_ptr()).private_data.cast()) })
}
