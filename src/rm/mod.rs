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

use kernel::{
    prelude::*,
    sync::{Arc, Mutex},
};

use crate::call::Call;
use crate::host::Host;
use crate::kapi::{realfile::RealFile, user};
use crate::nv::abi::{self, status::*};
use crate::nv::table::EscapeHandler;
use crate::objects::Objects;
use crate::vgpu::Vgpu;

mod alloc;
mod cards;
pub(crate) mod clients;
mod control;
mod dup;
mod free;
mod heap;

/// The state of one `/dev/vgpuctl` file.
#[pin_data]
pub(crate) struct CtlFile {
    /// The opener's vGPUs, fixed at open (its cgroup's nearest bound ancestor).
    pub(crate) vgpus: KVec<Arc<Vgpu>>,
    /// Clients and objects created through this file.
    #[pin]
    pub(crate) objects: Mutex<Objects>,
}

impl CtlFile {
    /// Counts a call refused by default deny on each of the file's vGPUs.
    pub(crate) fn count_denied(&self) {
        self.vgpus.iter().for_each(|v| v.count_denied());
    }

    /// The vGPU this file has on GPU `gpu`.
    pub(crate) fn vgpu_on(&self, gpu: u32) -> Option<&Arc<Vgpu>> {
        self.vgpus.iter().find(|v| v.config.lock().gpu == Some(gpu))
    }

    /// Whether `h` is one of this file's verified clients.
    pub(crate) fn has_client(&self, h: u32) -> bool {
        self.objects.lock().has_client(h)
    }

    /// Whether this file and `other` share a vGPU (the same container).
    pub(crate) fn shares_vgpus(&self, other: &[Arc<Vgpu>]) -> bool {
        self.vgpus
            .iter()
            .any(|v| other.iter().any(|w| Arc::ptr_eq(v, w)))
    }
}


/// What a handler of an RM escape is given.
pub(crate) struct Ctx<'a> {
    /// The host's GPUs and the driver's kernel-client interface.
    pub(crate) host: &'a Host,
    /// The caller's `/dev/vgpuctl` file.
    pub(crate) file: &'a Arc<CtlFile>,
    /// Its private real file.
    pub(crate) real: &'a RealFile,
    /// The call, decoded.
    pub(crate) call: &'a Call,
}

/// Runs the handler `h` of an RM escape on a `/dev/vgpuctl` file.
pub(crate) fn dispatch(cx: &Ctx<'_>, h: EscapeHandler) -> Result<isize> {
    match h {
        EscapeHandler::Alloc => alloc::alloc(cx),
        EscapeHandler::Free => free::free(cx),
        EscapeHandler::Control => control::control(cx),
        EscapeHandler::Dup => dup::dup(cx),
        EscapeHandler::VidHeap => heap::vid_heap(cx),
        EscapeHandler::CardInfo => cards::card_info(cx),
        EscapeHandler::Forward | EscapeHandler::AllocMemory => cx.call.forward(cx.real),
    }
}

/// Copies a control's params, exactly `p.len()` bytes, into `p`; `Err` is
/// the RM status the driver answers (at 595.45.04): a wrong size or a NULL
/// pointer NV_ERR_INVALID_ARGUMENT (`control.c:448-456`), a pointer that
/// cannot be read NV_ERR_INVALID_ADDRESS (`control.c:261`,
/// `param_copy.c:115`, `os-interface.c:522-529`).
fn control_params(a: &abi::Nvos54, p: &mut [u8]) -> core::result::Result<(), u32> {
    if a.params_size as usize != p.len() || a.params == 0 {
        return Err(NV_ERR_INVALID_ARGUMENT);
    }
    user::read(a.params, p).map_err(|_| NV_ERR_INVALID_ADDRESS)
}
