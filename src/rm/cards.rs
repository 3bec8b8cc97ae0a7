// SPDX-License-Identifier: GPL-2.0

//! CARD_INFO: only the GPUs the caller has a vGPU on, first in the list,
//! answered from the records vgpu read when it loaded
//! ([`crate::host::Cards`]), so the other GPUs' records never reach the
//! caller's memory. A list too short for the host's GPUs is `EINVAL`, as the
//! driver answers it.

use kernel::prelude::*;

use super::ctx::Ctx;
use crate::kapi::user;
use crate::nv::abi::{self, Wire};
use crate::nv::ioctl::CARD_INFO_SIZE;

/// CARD_INFO.
pub(super) fn card_info(cx: &Ctx<'_>) -> Result<isize> {
    let cards = &cx.host.cards;
    let size = cx.call.size;
    if size / CARD_INFO_SIZE < cards.count() {
        return Err(EINVAL);
    }
    let mut out = KVec::from_elem(0u8, size, GFP_KERNEL)?;
    let mine = cards.records().filter(|rec| {
        cx.file
            .vgpu_on(abi::CardInfo::decode(rec).minor_number)
            .is_some()
    });
    for (dst, rec) in out.chunks_exact_mut(CARD_INFO_SIZE).zip(mine) {
        dst.copy_from_slice(rec);
    }
    user::write(cx.call.addr, &out)?;
    Ok(0)
}
