// SPDX-License-Identifier: GPL-2.0

//! sysfs attribute files: on a class (`/sys/class/<class>/<file>`) and on the
//! devices of a class (`/sys/class/<class>/<device>/<file>`).
//!
//! An implementor lists its files (name and mode) and serves `show` and
//! `store` by index. The attribute structures are allocated once and live as
//! long as their registration; the driver core drains in-flight callbacks
//! when a file or device goes away, so a callback never outlives its data.

use core::fmt;
use core::marker::PhantomData;
use kernel::{bindings, error::to_result, page::PAGE_SIZE, prelude::*, sync::Arc, types::Opaque};

use super::{
    chrdev::{DevT, Node},
    class::Class,
};

/// A sysfs file: its name and mode (for example `0o644`).
pub(crate) struct FileSpec {
    /// File name.
    pub(crate) name: &'static CStr,
    /// Permission bits. Writable files should be root-only (`0o644`, `0o200`).
    pub(crate) mode: u16,
}

/// The text a `show` callback produces, at most one page.
pub(crate) struct Emit<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl Emit<'_> {
    /// Bytes left in the page.
    pub(crate) fn room(&self) -> usize {
        self.buf.len().saturating_sub(self.len)
    }
}

impl fmt::Write for Emit<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let b = s.as_bytes();
        let end = self.len.checked_add(b.len()).ok_or(fmt::Error)?;
        let dst = self.buf.get_mut(self.len..end).ok_or(fmt::Error)?;
        dst.copy_from_slice(b);
        self.len = end;
        Ok(())
    }
}

/// Runs `f` on the page sysfs gave us and returns the length for sysfs.
///
/// # Safety
///
/// `buf` is the `PAGE_SIZE` buffer sysfs passes to a `show` callback.
unsafe fn emit_into(buf: *mut c_char, f: impl FnOnce(&mut Emit<'_>) -> Result) -> isize {
    // SAFETY: see the function's safety section.
    let page = unsafe { core::slice::from_raw_parts_mut(buf.cast::<u8>(), PAGE_SIZE) };
    let mut e = Emit { buf: page, len: 0 };
    match f(&mut e) {
        Ok(()) => e.len as isize,
        Err(err) => err.to_errno() as isize,
    }
}

/// Gives `f` the bytes written to a `store` callback; returns what sysfs wants.
///
/// # Safety
///
/// `buf` points to `count` readable bytes (sysfs guarantees it).
unsafe fn store_from(buf: *const c_char, count: usize, f: impl FnOnce(&[u8]) -> Result) -> isize {
    // SAFETY: see the function's safety section.
    let input = unsafe { core::slice::from_raw_parts(buf.cast::<u8>(), count) };
    match f(input) {
        Ok(()) => count as isize,
        Err(err) => err.to_errno() as isize,
    }
}

/// `sysfs_attr_init`: an attribute that is not static needs a static lock
/// class key for lockdep (one for all of vgpu's files).
fn init_attr_key(_attr: &mut bindings::attribute) {
    #[cfg(CONFIG_DEBUG_LOCK_ALLOC)]
    {
        _attr.key = kernel::static_lock_class!().as_ptr();
    }
}

/// Files on a class.
pub(crate) trait ClassFiles: Sized + 'static {
    /// The files, in index order.
    const FILES: &'static [FileSpec];
    /// Shows file `index`.
    fn show(index: usize, out: &mut Emit<'_>) -> Result;
    /// Stores `input` into file `index` (it may end with a newline).
    fn store(index: usize, input: &[u8]) -> Result;
}

#[repr(C)]
struct ClassAttr {
    raw: Opaque<bindings::class_attribute>,
    index: usize,
}

/// The class files of `T`, registered on a class until dropped.
///
/// # Invariants
///
/// `class` is the registered class the files were added to, which outlives
/// `self` (the module keeps its [`Class`] longer); every attribute in
/// `attrs` was added to it as a file (with `T`'s callbacks and its index in
/// `T::FILES`) and is removed only by `drop`, before its box is freed.
pub(crate) struct ClassFilesReg<T: ClassFiles> {
    class: *mut bindings::class,
    attrs: KVec<KBox<ClassAttr>>,
    _t: PhantomData<T>,
}

// SAFETY: by the type invariants the class is registered; the registration
// only adds and removes files, under the driver core's locking, which any
// thread may do; the attribute structures are not touched otherwise.
unsafe impl<T: ClassFiles> Send for ClassFilesReg<T> {}
// SAFETY: no `&self` method.
unsafe impl<T: ClassFiles> Sync for ClassFilesReg<T> {}

impl<T: ClassFiles> ClassFilesReg<T> {
    /// # Safety
    ///
    /// Called by sysfs with an attribute registered by `ClassFilesReg::<T>`.
    unsafe extern "C" fn show(
        _class: *const bindings::class,
        attr: *const bindings::class_attribute,
        buf: *mut c_char,
    ) -> isize {
        // SAFETY: `attr` is the `raw` field (at offset 0) of a live `ClassAttr`.
        let index = unsafe { (*attr.cast::<ClassAttr>()).index };
        // SAFETY: sysfs passes its page.
        unsafe { emit_into(buf, |e| T::show(index, e)) }
    }

    /// # Safety
    ///
    /// Called by sysfs with an attribute registered by `ClassFilesReg::<T>`.
    unsafe extern "C" fn store(
        _class: *const bindings::class,
        attr: *const bindings::class_attribute,
        buf: *const c_char,
        count: usize,
    ) -> isize {
        // SAFETY: as in `show`.
        let index = unsafe { (*attr.cast::<ClassAttr>()).index };
        // SAFETY: sysfs passes `count` bytes.
        unsafe { store_from(buf, count, |b| T::store(index, b)) }
    }

    /// Adds every file of `T` to `class`, which must outlive the returned
    /// registration (drop it before the class).
    pub(crate) fn new(class: &Class) -> Result<Self> {
        let mut reg = Self {
            class: class.as_raw(),
            attrs: KVec::new(),
            _t: PhantomData,
        };
        for (index, spec) in T::FILES.iter().enumerate() {
            // SAFETY: all-zeroes is a valid `class_attribute` (no name, no
            // hooks; the lockdep fields of `attribute` when present).
            let mut raw: bindings::class_attribute = unsafe { core::mem::zeroed() };
            raw.attr.name = spec.name.as_char_ptr();
            raw.attr.mode = spec.mode;
            init_attr_key(&mut raw.attr);
            if spec.mode & 0o444 != 0 {
                raw.show = Some(Self::show);
            }
            if spec.mode & 0o222 != 0 {
                raw.store = Some(Self::store);
            }
            let a = KBox::new(
                ClassAttr {
                    raw: Opaque::new(raw),
                    index,
                },
                GFP_KERNEL,
            )?;
            let raw = a.raw.get();
            // Own the box first, so `drop` sees every file that may exist.
            reg.attrs.push(a, GFP_KERNEL)?;
            // SAFETY: the class is registered; the attribute lives in a box
            // that stays put until `drop` removes the file.
            let r = to_result(unsafe {
                bindings::class_create_file_ns(reg.class, raw, core::ptr::null())
            });
            if let Err(e) = r {
                // Never created: forget it, so `drop` leaves it alone.
                reg.attrs.pop();
                return Err(e);
            }
        }
        Ok(reg)
    }
}

impl<T: ClassFiles> Drop for ClassFilesReg<T> {
    fn drop(&mut self) {
        for a in self.attrs.iter() {
            // SAFETY: by the type invariants each attribute in `attrs` was
            // added to the still-registered `class` and not yet removed;
            // removal drains callbacks before the box is freed.
            unsafe { bindings::class_remove_file_ns(self.class, a.raw.get(), core::ptr::null()) };
        }
    }
}

/// Files on each device of a class. `Data` is what the device's driver data
/// points to (set when the device is created with [`DeviceFilesGroup::groups`]).
pub(crate) trait DeviceFiles: Sized + 'static {
    /// The per-device state the files show and change.
    type Data: Send + Sync + 'static;
    /// The files, in index order.
    const FILES: &'static [FileSpec];
    /// Shows file `index` of the device whose data is `data`.
    fn show(data: &Self::Data, index: usize, out: &mut Emit<'_>) -> Result;
    /// Stores `input` into file `index` (it may end with a newline).
    fn store(data: &Self::Data, index: usize, input: &[u8]) -> Result;
}

#[repr(C)]
struct DevAttr {
    raw: Opaque<bindings::device_attribute>,
    index: usize,
}

/// The attribute group of `T`, shared by every device created with it
/// ([`Node::with_groups`]).
pub(crate) struct DeviceFilesGroup<T: DeviceFiles> {
    tables: Arc<GroupTables>,
    _t: PhantomData<T>,
}

/// The structures of a [`DeviceFilesGroup`], shared with its devices' nodes,
/// which keep them until their devices are gone.
///
/// # Invariants
///
/// Built by [`DeviceFilesGroup::new`] and not changed after: `groups` is a
/// NULL-terminated list of `_group`, whose `attrs` is `_ptrs`, a
/// NULL-terminated list of the `raw` attributes of `_attrs`, each with the
/// callbacks of one `DeviceFilesGroup<T>` and its index in `T::FILES`. All
/// are boxed or in vectors that are never resized, so the pointers stay
/// valid while the value lives.
struct GroupTables {
    _attrs: KVec<KBox<DevAttr>>,
    _ptrs: KVec<*mut bindings::attribute>,
    _group: KBox<Opaque<bindings::attribute_group>>,
    groups: KBox<[*const bindings::attribute_group; 2]>,
}

// SAFETY: by the type invariants the structures are not changed after they
// are built; the driver core only reads them, from any thread.
unsafe impl Send for GroupTables {}
// SAFETY: as above.
unsafe impl Sync for GroupTables {}

impl<T: DeviceFiles> DeviceFilesGroup<T> {
    /// # Safety
    ///
    /// Called by sysfs on a device created with this group, whose driver
    /// data points to a live `T::Data`.
    unsafe extern "C" fn show(
        dev: *mut bindings::device,
        attr: *mut bindings::device_attribute,
        buf: *mut c_char,
    ) -> isize {
        // SAFETY: `attr` is the `raw` field (at offset 0) of a live `DevAttr`.
        let index = unsafe { (*attr.cast::<DevAttr>()).index };
        // SAFETY: the device's driver data is a `T::Data` that outlives the
        // device's files (see the function's safety section).
        let data = unsafe { &*(*dev).driver_data.cast::<T::Data>() };
        // SAFETY: sysfs passes its page.
        unsafe { emit_into(buf, |e| T::show(data, index, e)) }
    }

    /// # Safety
    ///
    /// As for `show`.
    unsafe extern "C" fn store(
        dev: *mut bindings::device,
        attr: *mut bindings::device_attribute,
        buf: *const c_char,
        count: usize,
    ) -> isize {
        // SAFETY: as in `show`.
        let index = unsafe { (*attr.cast::<DevAttr>()).index };
        // SAFETY: as in `show`.
        let data = unsafe { &*(*dev).driver_data.cast::<T::Data>() };
        // SAFETY: sysfs passes `count` bytes.
        unsafe { store_from(buf, count, |b| T::store(data, index, b)) }
    }

    /// Builds the group.
    pub(crate) fn new() -> Result<Self> {
        let mut attrs = KVec::new();
        let mut ptrs = KVec::new();
        for (index, spec) in T::FILES.iter().enumerate() {
            // SAFETY: all-zeroes is a valid `device_attribute` (no name, no hooks).
            let mut raw: bindings::device_attribute = unsafe { core::mem::zeroed() };
            raw.attr.name = spec.name.as_char_ptr();
            raw.attr.mode = spec.mode;
            init_attr_key(&mut raw.attr);
            if spec.mode & 0o444 != 0 {
                raw.__bindgen_anon_1.show = Some(Self::show);
            }
            if spec.mode & 0o222 != 0 {
                raw.__bindgen_anon_2.store = Some(Self::store);
            }
            let a = KBox::new(
                DevAttr {
                    raw: Opaque::new(raw),
                    index,
                },
                GFP_KERNEL,
            )?;
            // `attr` is the first field of `device_attribute`.
            ptrs.push(a.raw.get().cast::<bindings::attribute>(), GFP_KERNEL)?;
            attrs.push(a, GFP_KERNEL)?;
        }
        ptrs.push(core::ptr::null_mut(), GFP_KERNEL)?;
        // SAFETY: all-zeroes is a valid `attribute_group` (unnamed, no hooks).
        let mut g: bindings::attribute_group = unsafe { core::mem::zeroed() };
        g.__bindgen_anon_2.attrs = ptrs.as_mut_ptr();
        let group = KBox::new(Opaque::new(g), GFP_KERNEL)?;
        let groups = KBox::new([group.get().cast_const(), core::ptr::null()], GFP_KERNEL)?;
        // INVARIANT: the lists are complete and never change from here on.
        let tables = Arc::new(
            GroupTables {
                _attrs: attrs,
                _ptrs: ptrs,
                _group: group,
                groups,
            },
            GFP_KERNEL,
        )?;
        Ok(Self {
            tables,
            _t: PhantomData,
        })
    }
}

impl Node {
    /// Creates `/dev/<name>` for number `dev` in `class` (no node for
    /// `DevT(0)`, only the sysfs directory), with the files of `group`
    /// serving `data`. The node holds `data` and the group's structures
    /// until the device is gone, so the files never outlive what they use;
    /// its owner must drop the node to let `data` go (a node stored inside
    /// its own `data` is a cycle until taken out).
    pub(crate) fn with_groups<T: DeviceFiles>(
        class: &Class,
        dev: DevT,
        name: &CStr,
        group: &DeviceFilesGroup<T>,
        data: Arc<T::Data>,
    ) -> Result<Self> {
        let groups = group.tables.groups.as_ptr();
        let raw_data = Arc::as_ptr(&data).cast_mut().cast::<c_void>();
        let keep: [Arc<dyn Send + Sync>; 2] = [group.tables.clone(), data];
        // SAFETY: `groups` is the group's NULL-terminated list, valid while
        // its `GroupTables` is (its type invariants), which `keep` holds; its
        // callbacks are `DeviceFilesGroup::<T>`'s, which read the driver data
        // as a `T::Data`: `raw_data` points to one, kept alive by `keep`.
        unsafe { Node::with_raw_groups(class, dev, name, raw_data, groups, keep) }
    }
}
