// SPDX-License-Identifier: GPL-2.0

//! The RM_ALLOC block (NVOS21 or NVOS64): the fields vgpu decides on, and
//! the answer it writes back.

use kernel::prelude::*;

use crate::kapi::user;
use crate::nv::abi;

/// The fields of an RM_ALLOC block vgpu decides on, from either layout.
pub(super) struct Header {
    pub(super) h_root: u32,
    pub(super) h_parent: u32,
    pub(super) h_new: u32,
    pub(super) h_class: u32,
    pub(super) pparams: u64,
}

impl Header {
    /// Decodes NVOS21 (32 bytes) or NVOS64 (48 bytes): the five fields
    /// only (the two layouts share their offsets, checked at compile time).
    pub(super) fn decode(blk: &[u8]) -> Self {
        const fn at(name: &str) -> usize {
            let o = abi::field_offset(abi::Nvos21::FIELDS, name);
            assert!(o == abi::field_offset(abi::Nvos64::FIELDS, name));
            o
        }
        Self {
            h_root: abi::read_field(blk, const { at("h_root") }),
            h_parent: abi::read_field(blk, const { at("h_object_parent") }),
            h_new: abi::read_field(blk, const { at("h_object_new") }),
            h_class: abi::read_field(blk, const { at("h_class") }),
            pparams: abi::read_field(blk, const { at("p_alloc_parms") }),
        }
    }
}

/// The offset of `status` in an RM_ALLOC block of `blk`'s layout (NVOS21
/// or NVOS64), both found at compile time.
pub(super) fn status_at(blk: &[u8]) -> usize {
    const NVOS21: usize = abi::field_offset(abi::Nvos21::FIELDS, "status");
    const NVOS64: usize = abi::field_offset(abi::Nvos64::FIELDS, "status");
    if blk.len() == abi::Nvos21::SIZE {
        NVOS21
    } else {
        NVOS64
    }
}

/// Writes `handle` and `status` into the caller's block `blk` at `addr`
/// (the two fields patched in vgpu's copy, which goes back whole).
pub(super) fn answer(addr: u64, blk: &mut [u8], handle: u32, status: u32) -> Result<isize> {
    const H_NEW: usize = abi::field_offset(abi::Nvos21::FIELDS, "h_object_new");
    const _: () = assert!(H_NEW == abi::field_offset(abi::Nvos64::FIELDS, "h_object_new"));
    let status_at = status_at(blk);
    blk.get_mut(H_NEW..H_NEW + 4)
        .ok_or(EINVAL)?
        .copy_from_slice(&handle.to_ne_bytes());
    blk.get_mut(status_at..status_at + 4)
        .ok_or(EINVAL)?
        .copy_from_slice(&status.to_ne_bytes());
    user::write(addr, blk)?;
    Ok(0)
}
