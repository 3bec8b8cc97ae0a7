// SPDX-License-Identifier: GPL-2.0

//! A channel's USERD, mapped into the kernel: where the scheduler reads
//! whether the channel has work queued.
//!
//! The driver maps it for vgpu's own client (`RmOps::map_memory`); the GPU
//! and the tenant write it at any time, so each word is read once, with a
//! volatile load (a `READ_ONCE`), and the value is only a hint.

use crate::nv::abi::userd::{GP_GET, GP_PUT};

/// The first [`UserdMap::LEN`] bytes of a channel's USERD, mapped into the
/// kernel.
///
/// # Invariants
///
/// `addr` is 4-aligned and is the kernel address of at least
/// [`UserdMap::LEN`] bytes of a channel's USERD, which stay mapped for as
/// long as this value exists.
pub(crate) struct UserdMap {
    addr: usize,
}

impl UserdMap {
    /// Bytes of USERD a mapping must cover: up to and including `GPPut`.
    pub(crate) const LEN: usize = GP_PUT + 4;

    /// Wraps the kernel mapping at `addr`.
    ///
    /// # Safety
    ///
    /// `addr` is 4-aligned and the kernel address of at least [`Self::LEN`]
    /// bytes of a channel's USERD, and the caller keeps them mapped until
    /// the returned value is dropped.
    pub(crate) unsafe fn new(addr: usize) -> Self {
        // INVARIANT: the function's safety section.
        Self { addr }
    }

    /// `GPGet` (the GPU's read index into the GPFIFO) and `GPPut` (the
    /// client's write index), each read once.
    pub(crate) fn gp_get_put(&self) -> (u32, u32) {
        // Both words lie inside the mapping, 4-aligned.
        const {
            assert!(GP_GET % 4 == 0 && GP_GET + 4 <= UserdMap::LEN);
            assert!(GP_PUT % 4 == 0 && GP_PUT + 4 <= UserdMap::LEN);
        };
        // SAFETY: by the type invariants `addr` is 4-aligned and maps `LEN`
        // bytes while `self` exists; `GP_GET` and `GP_PUT` are 4-aligned
        // offsets of words inside them (checked above at compile time).
        // Volatile: the GPU and the client write the words behind the
        // compiler's back.
        unsafe {
            (
                core::ptr::read_volatile((self.addr + GP_GET) as *const u32),
                core::ptr::read_volatile((self.addr + GP_PUT) as *const u32),
            )
        }
    }

    /// Whether the channel has GPFIFO entries the GPU has not fetched
    /// (`GPGet != GPPut`).
    pub(crate) fn pending(&self) -> bool {
        let (get, put) = self.gp_get_put();
        get != put
    }
}
