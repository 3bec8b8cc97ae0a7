// SPDX-License-Identifier: GPL-2.0

//! What a handler of an RM escape is given: on a `/dev/vgpuctl` file a
//! [`Ctx`], on either node a [`Caller`].

use kernel::sync::Arc;

use crate::call::Call;
use crate::host::Host;
use crate::kapi::{realfile::RealFile, user};
use crate::nv::abi::{self, status::*};
pub(crate) use crate::objects::CtlFile;
use crate::vgpu::Vgpu;

/// Who makes a call, on either node: the container's vGPUs (a ctl file's,
/// or the one a GPU node stands for), the real file and the call.
pub(crate) struct Caller<'a> {
    /// The host's GPUs and clients.
    pub(crate) host: &'a Host,
    /// The container's vGPUs.
    pub(crate) vgpus: &'a [Arc<Vgpu>],
    /// The private real file the call goes to.
    pub(crate) real: &'a RealFile,
    /// The call, decoded.
    pub(crate) call: &'a Call,
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

impl<'a> Ctx<'a> {
    /// The caller as the handlers that serve either node see it: this
    /// file's vGPUs as the container's.
    pub(crate) fn caller(&self) -> Caller<'a> {
        Caller {
            host: self.host,
            vgpus: &self.file.vgpus,
            real: self.real,
            call: self.call,
        }
    }
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
