// SPDX-License-Identifier: GPL-2.0

//! The module-wide state: the real driver's nodes, the vGPUs, the class and
//! the host. Only the entry points that have no other way to it reach it
//! here (an open of a node, a write to `/sys/class/vgpu/create`); a call on
//! an open file finds what it needs in its file.

use kernel::{prelude::*, sync::Arc};

use crate::host::Host;
use crate::kapi::{class::Class, realfile::RealNode};
use crate::vgpus::Vgpus;

/// The real driver's nodes vgpu forwards to.
pub(crate) struct Backend {
    /// `/dev/nvidiactl`.
    pub(crate) ctl: RealNode,
    /// `/dev/nvidiaK` for each GPU index `K` found at load.
    pub(crate) gpus: KVec<(u32, RealNode)>,
    /// `/dev/nvidia-uvm`, if it existed at load.
    pub(crate) uvm: Option<RealNode>,
}

impl Backend {
    /// Whether `mnt` is the mount of one of the real nodes, on which vgpu
    /// opens its own files of the driver.
    pub(crate) fn owns_mount(&self, mnt: *const c_void) -> bool {
        let mine = |n: &RealNode| n.is_private() && core::ptr::eq(n.mount(), mnt);
        mine(&self.ctl)
            || self.gpus.iter().any(|(_, n)| mine(n))
            || self.uvm.as_ref().is_some_and(mine)
    }

    /// The real node of GPU `gpu`.
    pub(crate) fn gpu(&self, gpu: u32) -> Option<&RealNode> {
        self.gpus.iter().find(|(k, _)| *k == gpu).map(|(_, n)| n)
    }
}

/// Module-wide state that opens and sysfs writes reach.
pub(crate) struct State {
    /// The real driver's nodes.
    pub(crate) backend: Backend,
    /// The vGPUs.
    pub(crate) vgpus: Arc<Vgpus>,
    /// `/sys/class/vgpu`.
    pub(crate) class: Class,
    /// The host's GPUs, the driver's kernel-client interface and vgpu's own
    /// client in the driver.
    pub(crate) host: Arc<Host>,
}

kernel::sync::global_lock! {
    // SAFETY: initialised by `init` in `VgpuModule::init` before any node
    // exists.
    unsafe(uninit) static STATE: Mutex<Option<Arc<State>>> = None;
}

/// Sets up the state's place (module `init`).
///
/// # Safety
///
/// Called once, before any other function of this file.
pub(crate) unsafe fn init() {
    // SAFETY: the caller's contract.
    unsafe { STATE.init() };
}

/// Publishes `state` (`Some`, at the end of a successful load) or takes it
/// down (`None`, at unload or on a failed load).
pub(crate) fn set(state: Option<Arc<State>>) {
    *STATE.lock() = state;
}

/// The module state, while loaded: for opens and the class's sysfs files,
/// the entry points that have no other way to it.
pub(crate) fn get() -> Result<Arc<State>> {
    STATE.lock().as_ref().cloned().ok_or(ENODEV)
}
