// SPDX-License-Identifier: GPL-2.0

//! vgpu behind the NVIDIA driver's own device nodes: the open of the
//! driver's character devices goes through vgpu (`src/c/cdevhook.c`), which
//! decides each open by its opener (`vgpu_cdev_open` in `src/proxy.rs`) and either makes
//! the file a proxy file of its own ([`adopt`]) or hands it to the
//! driver's own open.

use core::ptr::NonNull;
use kernel::{
    bindings,
    error::{from_err_ptr, to_result},
    prelude::*,
};

use super::chrdev::{DevT, FileOperations, Vtable};
use super::realfile::RealNode;

// The pointers are `c_void`: bindgen's `path` and `file` hold empty
// structs, which `improper_ctypes` rejects in an `extern` block.
extern "C" {
    /// `src/c/cdevhook.c`.
    fn vgpu_cdev_hook_install(path: *const c_void, kind: c_int) -> *mut c_void;
    /// `src/c/cdevhook.c`.
    fn vgpu_cdev_hook_remove(hook: *mut c_void);
    /// `src/c/cdevhook.c`.
    fn vgpu_cdev_present(path: *const c_void) -> bool;
    /// `src/c/cdevhook.c`.
    fn vgpu_cdev_file_mount(file: *const c_void) -> *const c_void;
    /// `src/c/cdevhook.c`.
    fn vgpu_cdev_adopt(file: *mut c_void, fops: *const c_void) -> c_int;
    /// `src/c/cdevhook.c`.
    fn vgpu_cdev_watch_modules() -> c_int;
    /// `src/c/cdevhook.c`.
    fn vgpu_cdev_unwatch_modules();
}

/// While it lives, the load of `nvidia_uvm` is refused: its device would
/// not be taken over (it makes no node vgpu could find it by).
///
/// # Invariants
///
/// The C side's module notifier is registered, once, until `drop`.
pub(crate) struct ModuleWatch(());

impl ModuleWatch {
    /// Starts refusing `nvidia_uvm`'s load.
    pub(crate) fn new() -> Result<Self> {
        // SAFETY: no preconditions; the notifier is static.
        to_result(unsafe { vgpu_cdev_watch_modules() })?;
        // INVARIANT: registered just now.
        Ok(Self(()))
    }
}

impl Drop for ModuleWatch {
    fn drop(&mut self) {
        // SAFETY: by the type invariants it is registered; unregistered
        // once, here.
        unsafe { vgpu_cdev_unwatch_modules() };
    }
}

/// Whether a driver serves `node` (a node left by a driver that is gone
/// has no device behind it).
pub(crate) fn has_device(node: &RealNode) -> bool {
    // SAFETY: `node.raw_path()` is a valid, referenced path to a character
    // device node for as long as `node` lives, which covers this call.
    unsafe { vgpu_cdev_present(node.raw_path().cast()) }
}

/// Which of the driver's devices a hook is on; passed back to
/// `vgpu_cdev_open` (`src/proxy.rs`) with the opened minor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub(crate) enum Kind {
    /// Major 195: `nvidia` (minors 0-254, a GPU each) and `nvidiactl` (255).
    Nv = 0,
    /// `nvidia-uvm`'s major: minor 0 the UVM node, 1 the tools node.
    Uvm = 1,
}

impl Kind {
    /// The kind the C side passes back.
    pub(crate) fn from_raw(k: c_int) -> Option<Self> {
        match k {
            0 => Some(Self::Nv),
            1 => Some(Self::Uvm),
            _ => None,
        }
    }
}

/// The open of one of the driver's character devices, taken over until
/// dropped.
///
/// # Invariants
///
/// `raw` is a hook `vgpu_cdev_hook_install` returned, removed only by
/// `drop`.
pub(crate) struct Hook {
    raw: NonNull<c_void>,
}

// SAFETY: by the type invariants the hook is live until `drop`; install and
// remove serialise on the C side's lock, and nothing else touches it from
// Rust.
unsafe impl Send for Hook {}
// SAFETY: no `&self` method touches the hook.
unsafe impl Sync for Hook {}

impl Hook {
    /// Takes over the open of the device behind `node` (its cdev, which
    /// the driver may share between several nodes): `Ok(None)` if it is
    /// already taken over through another node.
    pub(crate) fn install(node: &RealNode, kind: Kind) -> Result<Option<Self>> {
        // SAFETY: `node.raw_path()` is a valid, referenced path to a
        // character device node for as long as `node` lives, which covers
        // this call; the C side takes no reference to it.
        let raw = unsafe { vgpu_cdev_hook_install(node.raw_path().cast(), kind as c_int) };
        let raw = from_err_ptr(raw)?;
        // INVARIANT: a non-null result is a hook installed just now.
        Ok(NonNull::new(raw).map(|raw| Self { raw }))
    }
}

impl Drop for Hook {
    fn drop(&mut self) {
        // SAFETY: by the type invariants the hook is installed; it is
        // removed once, here.
        unsafe { vgpu_cdev_hook_remove(self.raw.as_ptr()) };
    }
}

/// Makes `raw`, a file in the open of a hooked device, a file of `T`'s
/// operations, opened as `T` opens device `dev`.
///
/// # Safety
///
/// `raw` is a valid file in its open (`f_op->open` is running on it, from
/// `chrdev_open`), whose `private_data` nothing else uses.
pub(crate) unsafe fn adopt<T: FileOperations>(raw: *mut bindings::file, dev: DevT) -> c_int {
    // SAFETY: the caller's contract: `raw` is a file in its open; the
    // vtable is `'static`.
    let r = unsafe { vgpu_cdev_adopt(raw.cast(), core::ptr::from_ref(Vtable::<T>::fops()).cast()) };
    if r != 0 {
        // vgpu is going: the file keeps the hook's operations, which the
        // failed open puts.
        return r;
    }
    // SAFETY: the caller's contract; the file's operations are `T`'s now.
    // Should `T::open` fail, the VFS puts them (and their owner's
    // reference) without calling release.
    unsafe { Vtable::<T>::open_as(raw, dev) }
}

/// The mount `raw` (an open file) lies on.
///
/// # Safety
///
/// `raw` is a valid file.
pub(crate) unsafe fn file_mount(raw: *mut bindings::file) -> *const c_void {
    // SAFETY: the caller's contract; an open file's path is set and fixed.
    unsafe { vgpu_cdev_file_mount(raw.cast()) }
}
