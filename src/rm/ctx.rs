// SPDX-License-Identifier: GPL-2.0

//! The state of a `/dev/vgpuctl` file, and what a handler of one of its RM
//! escapes is given.

use kernel::{
    prelude::*,
    sync::{Arc, Mutex},
};

use crate::call::Call;
use crate::host::Host;
use crate::kapi::{realfile::RealFile, user};
use crate::nv::abi::{self, status::*};
use crate::objects::Objects;
use crate::vgpu::Vgpu;

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

/// Copies a control's params, exactly `p.len()` bytes, into `p`; `Err` is
/// the RM status the driver answers (at 595.45.04): a wrong size or a NULL
/// pointer NV_ERR_INVALID_ARGUMENT (`control.c:448-456`), a pointer that
/// cannot be read NV_ERR_INVALID_ADDRESS (`control.c:261`,
/// `param_copy.c:115`, `os-interface.c:522-529`).
pub(super) fn control_params(a: &abi::Nvos54, p: &mut [u8]) -> core::result::Result<(), u32> {
    if a.params_size as usize != p.len() || a.params == 0 {
        return Err(NV_ERR_INVALID_ARGUMENT);
    }
    user::read(a.params, p).map_err(|_| NV_ERR_INVALID_ADDRESS)
}
