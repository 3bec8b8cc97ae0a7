// SPDX-License-Identifier: GPL-2.0

//! Device classes (`/sys/class/<name>/`).

use kernel::{bindings, error::from_err_ptr, prelude::*};

/// An owned device class, registered with the driver core.
///
/// Creating one makes `/sys/class/<name>/`; dropping it unregisters the class
/// and removes the directory.
///
/// # Invariants
///
/// `raw` came from a successful `class_create` and has not been destroyed:
/// it is a registered class, destroyed only by `drop`.
pub(crate) struct Class {
    raw: *mut bindings::class,
}

// SAFETY: by the type invariants `raw` is a registered class, which the
// driver core protects with its own locks: it may be used, and destroyed, from
// any thread.
unsafe impl Send for Class {}
// SAFETY: `Class` offers no `&self` method that mutates the class without the
// driver core's locking (see `Send`).
unsafe impl Sync for Class {}

impl Class {
    /// Registers a class named `name`.
    ///
    /// Fails with `EEXIST` if a class of that name exists, or `ENOMEM`.
    pub(crate) fn new(name: &'static CStr) -> Result<Self> {
        // SAFETY: `name` is a NUL-terminated string that lives for `'static`,
        // as `class_create` requires (it keeps the pointer, not a copy).
        let raw = from_err_ptr(unsafe { bindings::class_create(name.as_char_ptr()) })?;
        // INVARIANT: `class_create` succeeded.
        Ok(Self { raw })
    }

    /// The raw class, for registering devices in it: a registered class
    /// while `self` lives.
    pub(crate) fn as_raw(&self) -> *mut bindings::class {
        self.raw
    }
}

impl Drop for Class {
    fn drop(&mut self) {
        // SAFETY: by the type invariants `self.raw` came from a successful
        // `class_create` and has not been destroyed; it is destroyed once,
        // here.
        unsafe { bindings::class_destroy(self.raw) };
    }
}
