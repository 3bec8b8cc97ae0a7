// SPDX-License-Identifier: GPL-2.0

//! What `/dev/vgpuctl` does with the RM escapes it must see: allocation and
//! free of clients, devices and memory (the memory ceiling), controls, DUP,
//! the old heap interface, and the answers that reveal the GPU's size or the
//! host's GPUs (rewritten to the vGPUs). One file per escape family; the
//! dispatcher (`src/proxy.rs`) picks the handler from the escape's row of
//! the dispatch table.
//!
//! Parameters are copied into the kernel once and decisions are made on the
//! copies. Devices, subdevices and memory are then allocated by executing
//! the copies through the driver's kernel-client interface, on a client
//! verified to belong to this file, so no other thread can change what the
//! driver acts on, and the results (handles, sizes) come from the driver,
//! not from user memory.

use kernel::prelude::*;

use crate::nv::table::EscapeHandler;

mod alloc;
mod block;
mod cards;
mod control;
mod ctx;
mod dup;
mod event;
mod free;
pub(crate) mod gpu;
mod heap;
mod internal;
mod processes;

pub(crate) use ctx::{CtlFile, Ctx};

/// Runs the handler `h` of an RM escape on a `/dev/vgpuctl` file (on a GPU
/// node: [`gpu::dispatch`]).
pub(crate) fn dispatch(cx: &Ctx<'_>, h: EscapeHandler) -> Result<isize> {
    match h {
        EscapeHandler::Alloc => alloc::alloc(cx),
        EscapeHandler::Free => free::free(cx),
        EscapeHandler::Control => control::control(cx),
        EscapeHandler::Dup => dup::dup(cx),
        EscapeHandler::VidHeap => heap::vid_heap(cx),
        EscapeHandler::CardInfo => cards::card_info(cx),
        EscapeHandler::OsEvent => event::os_event(&cx.caller()),
        // RM_ALLOC_MEMORY's heap query is rewritten on GPU nodes only.
        EscapeHandler::Forward | EscapeHandler::AllocMemory => cx.call.forward(cx.real),
    }
}
