// SPDX-License-Identifier: GPL-2.0

//! One open file of vgpu's nodes: its private real file and what it stands
//! for. The file operations are implemented by the dispatcher
//! (`src/proxy.rs`); handlers that meet another of vgpu's files through an
//! fd in a call's parameters find its state here ([`of`]), without knowing
//! the dispatcher.

use kernel::{
    fs::LocalFile,
    sync::{Arc, ArcBorrow},
};

use crate::host::Host;
use crate::kapi::{chrdev, realfile::RealFile};
use crate::objects::CtlFile;
use crate::rm::clients;
use crate::uvm::space::UvmFile;
use crate::vgpu::Vgpu;

/// The file operations of vgpu's nodes (implemented in `src/proxy.rs`).
pub(crate) struct ProxyFops;

/// What an open file stands for.
pub(crate) enum Role {
    /// A `/dev/vgpuctl` file: its vGPUs and what it created.
    Ctl(Arc<CtlFile>),
    /// A `/dev/vgpuN` file of this vGPU.
    Gpu(Arc<Vgpu>),
    /// A `/dev/vgpu-uvm` file: what it charged.
    Uvm(UvmFile),
}

/// State of one open proxy file.
pub(crate) struct ProxyFile {
    /// Its private file of the real driver.
    pub(crate) real: RealFile,
    /// What it stands for.
    pub(crate) role: Role,
    /// The host's GPUs, taken at open so that calls need no global lock.
    pub(crate) host: Arc<Host>,
}

impl ProxyFile {
    /// The vGPU of a `/dev/vgpuN` file.
    pub(crate) fn vgpu(&self) -> Option<&Arc<Vgpu>> {
        match &self.role {
            Role::Gpu(v) => Some(v),
            _ => None,
        }
    }

    /// The state of a `/dev/vgpu-uvm` file.
    pub(crate) fn uvm(&self) -> Option<&UvmFile> {
        match &self.role {
            Role::Uvm(u) => Some(u),
            _ => None,
        }
    }

    /// Counts a call refused by default deny on the file's vGPUs.
    pub(crate) fn count_denied(&self) {
        match &self.role {
            Role::Ctl(c) => c.count_denied(),
            Role::Gpu(v) => v.count_denied(),
            Role::Uvm(u) => u.count_denied(),
        }
    }
}

impl Drop for ProxyFile {
    fn drop(&mut self) {
        match &self.role {
            Role::Gpu(v) => {
                let mut users = v.users.lock();
                *users = users.saturating_sub(1);
            }
            // Its clients leave the module-wide index; its objects go (and
            // are refunded) with the last reference to the `CtlFile`.
            Role::Ctl(c) => clients::forget_file(&self.host, c),
            Role::Uvm(_) => {}
        }
    }
}

/// The state of `file` if it is one of vgpu's proxy files.
pub(crate) fn of(file: &LocalFile) -> Option<ArcBorrow<'_, ProxyFile>> {
    chrdev::private::<ProxyFops>(file)
}
