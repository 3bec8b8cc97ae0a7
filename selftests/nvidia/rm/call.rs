// SPDX-License-Identifier: GPL-2.0

//! What a handler of the RM table (`table.rs`) gets: a control's call, or
//! the object a class's handler makes; and the params parsers they share.

use kernel::prelude::*;
use kernel::sync::MutexGuard;

use super::state::{Caller, Rm};
use crate::base::{ObjKind, Space, StatusResult};
use crate::nv::abi::{self, status::*, Wire};
use crate::settings;

/// One RM_CONTROL (or a kernel client's NV04_CONTROL), for its handler.
pub(crate) struct Ctl<'a> {
    /// The RM lock, held. A handler that copies through the caller's
    /// pointers drops it first: a copy may fault and take the mmap lock,
    /// which the UVM node's mmap holds when it takes RM (lockdep found the
    /// inversion).
    pub(crate) rm: MutexGuard<'a, Rm>,
    /// The control's number.
    pub(crate) cmd: u32,
    /// What the control is on: `None` for the client itself, else its
    /// object's kind (the row's `on` matched it).
    pub(crate) kind: Option<ObjKind>,
    /// The index in `rm.clients` of the client the control came in on.
    pub(crate) ci: usize,
    /// The object the control is on (the client's own handle for the
    /// client).
    pub(crate) h_object: u32,
    /// The params, copied in; copied back out on success.
    pub(crate) p: &'a mut [u8],
    /// The file the client must be bound to (`None`: a kernel client).
    pub(crate) file: Option<u64>,
    /// Where the params' nested pointers point.
    pub(crate) space: &'a Space,
}

impl Ctl<'_> {
    /// Checks that the params are `len` bytes (RM's
    /// NV_ERR_INVALID_ARGUMENT for another size) and clears them: the
    /// start of every fixed-size answer, and the whole of an all-zero one.
    pub(crate) fn cleared(&mut self, len: usize) -> StatusResult {
        if self.p.len() != len {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        self.p.fill(0);
        Ok(())
    }

    /// The GPU of the object the control is on (a subdevice, TSG or
    /// channel).
    pub(crate) fn gpu(&self) -> StatusResult<u32> {
        match self.kind {
            Some(
                ObjKind::Subdevice { gpu }
                | ObjKind::Tsg { gpu, .. }
                | ObjKind::Channel { gpu, .. },
            ) => Ok(gpu),
            _ => Err(NV_ERR_NOT_SUPPORTED),
        }
    }

    /// The TSG the control acts on, with its GPU: the object, a TSG, or a
    /// channel's.
    pub(crate) fn tsg(&self) -> StatusResult<(u32, u32)> {
        match self.kind {
            Some(ObjKind::Tsg { gpu, id, .. }) | Some(ObjKind::Channel { gpu, tsg: id, .. }) => {
                Ok((gpu, id))
            }
            _ => Err(NV_ERR_NOT_SUPPORTED),
        }
    }
}

/// An object being allocated, for its class's handler, once the client,
/// the parent and the new handle are checked.
pub(crate) struct NewObject<'a> {
    /// The RM state, locked.
    pub(crate) rm: &'a mut Rm,
    /// Who allocates it.
    pub(crate) caller: Caller,
    /// Its client's index in `rm.clients`.
    pub(crate) ci: usize,
    /// Its client's handle.
    pub(crate) h_root: u32,
    /// Its parent's handle.
    pub(crate) h_parent: u32,
    /// Its class.
    pub(crate) class: u32,
    /// Its alloc params, the class's size (empty: none given); in/out.
    pub(crate) params: &'a mut [u8],
    /// The parent's kind (`None`: the parent is the client).
    pub(crate) parent_kind: Option<ObjKind>,
    /// The parent's GPU, following parents up to a device.
    pub(crate) parent_gpu: Option<u32>,
}

/// As [`parse_params`], for a control whose params size is the claimed
/// release's (older releases' blocks are prefixes of 595.45.04's: shorter
/// lists, no field added since; what is missing decodes as zero, and
/// [`crate::base::store`] writes back only the release's bytes).
pub(crate) fn parse_release_params<T: abi::Wire>(cmd: u32, p: &[u8]) -> StatusResult<T> {
    if p.len() != settings::abi().params_size(cmd).unwrap_or(T::SIZE) {
        return Err(NV_ERR_INVALID_ARGUMENT);
    }
    Ok(T::decode(p))
}

/// Parses a class's alloc params, `p` being the class's size in the
/// claimed release (`alloc.rs`, `class_size`): a prefix of 595.45.04's block where
/// the release's is shorter (a field added since reads 0).
pub(crate) fn parse_class_params<T: abi::Wire>(p: &[u8]) -> StatusResult<T> {
    if p.is_empty() || p.len() > T::SIZE {
        return Err(NV_ERR_INVALID_ARGUMENT);
    }
    Ok(T::decode(p))
}

/// Parses a class's or control's params; a wrong size is
/// NV_ERR_INVALID_PARAM_STRUCT... GUESS: RM's exact status for a params size
/// mismatch varies by path; the double uses INVALID_ARGUMENT throughout.
pub(crate) fn parse_params<T: abi::Wire>(p: &[u8]) -> StatusResult<T> {
    if p.len() != T::SIZE {
        return Err(NV_ERR_INVALID_ARGUMENT);
    }
    Ok(T::decode(p))
}

/// Serves an info list passed by pointer (`{u32 index; u32 data}[n]`):
/// reads it from `space`, fills each `data` with `value(index)`, writes it
/// back. `n` must be 1..=`max`.
pub(crate) fn fill_info_list(
    space: &Space,
    n: u32,
    ptr: u64,
    max: usize,
    value: impl Fn(u32) -> StatusResult<u32>,
) -> StatusResult {
    let n = n as usize;
    if n == 0 || n > max || ptr == 0 {
        return Err(NV_ERR_INVALID_ARGUMENT);
    }
    let mut list = KVec::new();
    list.resize(n * abi::InfoEntry::SIZE, 0u8, GFP_KERNEL)
        .map_err(|_| NV_ERR_NO_MEMORY)?;
    space
        .read(ptr, &mut list)
        .map_err(|_| NV_ERR_INVALID_ARGUMENT)?;
    for chunk in list.chunks_exact_mut(abi::InfoEntry::SIZE) {
        let mut e = abi::InfoEntry::decode(chunk);
        e.data = value(e.index)?;
        e.encode(chunk);
    }
    space.write(ptr, &list).map_err(|_| NV_ERR_INVALID_ARGUMENT)
}
