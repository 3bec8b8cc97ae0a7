// SPDX-License-Identifier: GPL-2.0

//! The RM escapes vgpu admits on a vGPU's GPU node (`/dev/vgpuN`): each is
//! forwarded, and RM_ALLOC_MEMORY's heap query answered with the vGPU's
//! ceiling.

use kernel::prelude::*;

pub(crate) use super::ctx::Caller;
use crate::call::Call;
use crate::kapi::user;
use crate::nv::abi::{class, status::NV_OK, Nvos02WithFd, Wire};
use crate::nv::table::EscapeHandler;
use crate::vgpu::Vgpu;

/// Runs the handler `h` of an escape on vGPU `v`'s GPU node, for `on` (its
/// `vgpus` is `v` alone): `forward` forwards it (with an embedded fd
/// translated, if it names a proxy file), then the handler rewrites the
/// answer; RM_ALLOC (event classes only) and the OS-event escapes are
/// checked before anything is forwarded.
pub(crate) fn dispatch(
    v: &Vgpu,
    on: &Caller<'_>,
    h: EscapeHandler,
    forward: impl FnOnce() -> Result<isize>,
) -> Result<isize> {
    match h {
        EscapeHandler::Alloc => super::alloc::alloc_on_gpu_node(on, || v.count_denied()),
        EscapeHandler::OsEvent => super::event::os_event(on),
        EscapeHandler::AllocMemory => {
            let r = forward()?;
            heap_limit(v, on.call)?;
            Ok(r)
        }
        _ => forward(),
    }
}

/// RM_ALLOC_MEMORY of class 0x40 allocates nothing: it reports the heap as
/// `limit` (size - 1). Through a vGPU node it reports the vGPU's ceiling.
fn heap_limit(v: &Vgpu, call: &Call) -> Result {
    let mut b = [0u8; Nvos02WithFd::SIZE];
    user::read(call.addr, &mut b)?;
    let mut a = Nvos02WithFd::decode(&b);
    if a.params.status != NV_OK || a.params.h_class != class::NV01_MEMORY_LOCAL_USER {
        return Ok(());
    }
    let ceiling = v.config.lock().memory.limit();
    a.params.limit = a.params.limit.min(ceiling.saturating_sub(1));
    user::write(call.addr, &a.to_bytes())
}
