// SPDX-License-Identifier: GPL-2.0

//! vgpu: per-container virtual NVIDIA GPUs.
//!
//! vgpu sits between containers and the NVIDIA driver. Each container gets
//! virtual device nodes (`/dev/vgpuctl`, `/dev/vgpuN`) instead of the real
//! ones; vgpu forwards their ioctls and mmaps to the driver and uses that
//! position to enforce a memory ceiling and a compute share per vGPU. It is
//! configured at run time through `/sys/class/vgpu/`.
//!
//! Layout: [`nv`] holds the driver's ABI as pure, host-tested logic; [`kapi`]
//! holds the safe wrappers over kernel APIs; the rest is the driver.

use kernel::{prelude::*, sync::Arc, types::ScopeGuard};

// Shared with the driver double; each crate uses a subset of the glue.
#[allow(dead_code)]
mod kapi;
pub mod nv;
mod proxy;

use kapi::{
    chrdev::{Cdev, DevT, Node, Region},
    class::Class,
    realfile::RealNode,
};

module! {
    type: VgpuModule,
    name: "vgpu",
    authors: ["vgpu developers"],
    description: "Per-container virtual NVIDIA GPUs: memory ceilings and compute shares",
    license: "GPL",
}

/// How many numbers vgpu's character range holds: `/dev/vgpuctl` and the
/// vGPU nodes.
const MINORS: u32 = 256;

/// The real control node, resolved when the module loads.
const NVIDIACTL: &CStr = c"/dev/nvidiactl";

/// Module-wide state that open files reach.
pub(crate) struct State {
    /// The real driver's nodes.
    pub(crate) backend: proxy::Backend,
}

kernel::sync::global_lock! {
    // SAFETY: initialised in `VgpuModule::init` before any node exists.
    unsafe(uninit) static STATE: Mutex<Option<Arc<State>>> = None;
}

/// The module state, while loaded.
pub(crate) fn state() -> Result<Arc<State>> {
    STATE.lock().as_ref().cloned().ok_or(ENODEV)
}

/// The loaded module. Fields drop in declaration order: the nodes go first,
/// then the cdev (no new opens), the number range and the class.
pub struct VgpuModule {
    _nodes: KVec<Node>,
    _cdev: Cdev<proxy::ProxyFops>,
    _region: Region,
    _class: Class,
}

impl kernel::Module for VgpuModule {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        // SAFETY: called once, before anything else uses `STATE`.
        unsafe { STATE.init() };
        let ctl = RealNode::resolve(NVIDIACTL).inspect_err(|e| {
            pr_err!("cannot open {NVIDIACTL:?} ({e:?}): load the NVIDIA driver first\n");
        })?;
        if ctl.rdev() != DevT::new(195, 255) {
            pr_err!("{NVIDIACTL:?} is not the NVIDIA control node (195:255)\n");
            return Err(ENODEV);
        }
        let state = Arc::new(
            State {
                backend: proxy::Backend { ctl },
            },
            GFP_KERNEL,
        )?;
        *STATE.lock() = Some(state);
        // Until `init` succeeds, a failure must not leave the state behind.
        let unset = ScopeGuard::new(|| drop(STATE.lock().take()));

        let class = Class::new(c"vgpu")?;
        let region = Region::dynamic(MINORS, c"vgpu")?;
        let cdev = Cdev::<proxy::ProxyFops>::new(region.base(), MINORS)?;
        let mut nodes = KVec::new();
        let base = region.base();
        nodes.push(
            Node::new(&class, DevT::new(base.major(), proxy::CTL_MINOR), c"vgpuctl")?,
            GFP_KERNEL,
        )?;
        unset.dismiss();
        Ok(Self {
            _nodes: nodes,
            _cdev: cdev,
            _region: region,
            _class: class,
        })
    }
}

impl Drop for VgpuModule {
    fn drop(&mut self) {
        // No proxy file is open (each holds a module reference).
        STATE.lock().take();
    }
}

#[kunit_tests(vgpu_nv_ioctl)]
mod tests {
    use crate::nv::ioctl::{decode, nv_iowr, DecodeError, Escape};

    #[test]
    fn decodes_rm_alloc_in_both_layouts() {
        assert_eq!(decode(nv_iowr(0x2b, 32)).map(|c| c.escape), Ok(Escape::RmAlloc));
        assert_eq!(decode(nv_iowr(0x2b, 48)).map(|c| c.escape), Ok(Escape::RmAlloc));
    }

    #[test]
    fn refuses_unknown_and_missized() {
        assert_eq!(decode(nv_iowr(0x01, 8)), Err(DecodeError::UnknownEscape(0x01)));
        assert!(decode(nv_iowr(0x2a, 33)).is_err());
    }
}
