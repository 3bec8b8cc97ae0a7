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

use kernel::{prelude::*, str::CString, sync::Arc, types::ScopeGuard};

pub mod compute;
pub mod config;
mod ctl;
mod deny;
pub mod ledger;
pub mod nv;
mod proxy;
mod sched;
mod tracker;
pub mod uapi;
mod uvm;
mod vgpus;

// Shared with the driver double; each crate uses a subset of the glue.
#[allow(dead_code)]
mod kapi;

use kapi::{
    chrdev::{Cdev, DevT, Node, Region},
    class::Class,
    kthread::Thread,
    realfile::RealNode,
    rmops::RmOps,
    sysfs::{ClassFilesReg, DeviceFilesGroup},
};

module! {
    type: VgpuModule,
    name: "vgpu",
    authors: ["vgpu developers"],
    description: "Per-container virtual NVIDIA GPUs: memory ceilings and compute shares (NVIDIA driver 595.45.04)",
    license: "GPL",
    params: {
        unknown_calls: u32 {
            default: 0,
            description: "RM classes, RM controls and UVM commands not in vgpu's tables: 0 refuse (default), 1 forward and log once (a driver newer than the tables; at the operator's risk)",
        },
    },
}

/// How many numbers vgpu's character range holds: `/dev/vgpuctl`, the
/// vGPU nodes and `/dev/vgpu-uvm`.
const MINORS: u32 = uvm::UVM_MINOR + 1;

/// The real control node, resolved when the module loads.
const NVIDIACTL: &CStr = c"/dev/nvidiactl";

/// The real UVM node, resolved when the module loads if it exists.
const NVIDIA_UVM: &CStr = c"/dev/nvidia-uvm";

/// Module-wide state that open files and sysfs files reach.
pub(crate) struct State {
    /// The real driver's nodes.
    pub(crate) backend: proxy::Backend,
    /// The vGPUs.
    pub(crate) vgpus: Arc<vgpus::Vgpus>,
    /// `/sys/class/vgpu`.
    pub(crate) class: Class,
    /// The driver's kernel-client interface.
    pub(crate) rm: RmOps,
    /// Each GPU's compute scheduler, in GPU order.
    pub(crate) scheds: KVec<Arc<sched::GpuSched>>,
    /// vgpu's own client in the driver (kernel privilege), with a device per
    /// GPU: it holds the duplicates of the USERD memory the schedulers read.
    pub(crate) kclient: u32,
    /// Each GPU's UUID (binary GID), as UVM names GPUs; GPUs whose UUID the
    /// driver would not tell are missing.
    pub(crate) uuids: KVec<(u32, nv::uvm::Uuid)>,
    /// The host's CARD_INFO records, read at load.
    pub(crate) cards: ctl::Cards,
}

impl Drop for State {
    fn drop(&mut self) {
        // Frees its devices, duplicates and kernel mappings with it.
        let _ = self.rm.free(self.kclient, self.kclient, self.kclient);
    }
}

impl State {
    /// The GPU with UUID `uuid`.
    pub(crate) fn gpu_of_uuid(&self, uuid: &nv::uvm::Uuid) -> Option<u32> {
        self.uuids.iter().find(|(_, u)| u == uuid).map(|(g, _)| *g)
    }

    /// GPU `gpu`'s scheduler.
    pub(crate) fn sched(&self, gpu: u32) -> Option<&Arc<sched::GpuSched>> {
        self.scheds.iter().find(|g| g.gpu == gpu)
    }

    /// Removes the `gpuK` directories (before their file group goes).
    fn remove_gpu_nodes(&self) {
        for g in self.scheds.iter() {
            drop(g.node.lock().take());
        }
    }
}

kernel::sync::global_lock! {
    // SAFETY: initialised in `VgpuModule::init` before any node exists.
    unsafe(uninit) static STATE: Mutex<Option<Arc<State>>> = None;
}

/// The module state, while loaded.
pub(crate) fn state() -> Result<Arc<State>> {
    STATE.lock().as_ref().cloned().ok_or(ENODEV)
}

/// The loaded module. `Drop` takes down the class files, stops the
/// schedulers, removes the `gpuK` directories and the vGPUs; the fields then
/// drop in order: the `gpuK` file group, the control node, the cdev (no new
/// opens), the number range, and last the state (with the class).
pub struct VgpuModule {
    ctl_files: Option<ClassFilesReg<vgpus::ClassCtl>>,
    schedulers: KVec<Thread>,
    _gpu_files: DeviceFilesGroup<vgpus::GpuFiles>,
    _ctl_node: Node,
    _uvm_node: Node,
    _cdev: Cdev<proxy::ProxyFops>,
    _region: Region,
    state: Arc<State>,
}

/// GPU `gpu`'s UUID, asked of the driver through vgpu's client (a
/// subdevice of its device `kdevice`, freed again).
fn gpu_uuid(rm: &RmOps, kclient: u32, kdevice: u32) -> Result<nv::uvm::Uuid> {
    use nv::abi::{
        class, ctrl, GidInfoParams, SubdeviceAllocParams, Wire, GID_FLAGS_FORMAT_BINARY,
    };
    let mut sp = SubdeviceAllocParams::default().to_bytes();
    let sub = rm
        .alloc(kclient, kdevice, 0, class::NV20_SUBDEVICE_0, &mut sp)?
        .map_err(|_| EIO)?;
    let mut p = GidInfoParams {
        flags: GID_FLAGS_FORMAT_BINARY,
        ..Default::default()
    }
    .to_bytes();
    let st = rm.control(kclient, sub, ctrl::NV2080_CTRL_CMD_GPU_GET_GID_INFO, &mut p);
    let _ = rm.free(kclient, kdevice, sub);
    let p = GidInfoParams::decode(&p);
    if st? != nv::abi::status::NV_OK || p.length != 16 {
        return Err(EIO);
    }
    let mut uuid = [0u8; 16];
    uuid.copy_from_slice(&p.data[..16]);
    Ok(uuid)
}

/// Resolves `/dev/nvidia0` .. `/dev/nvidia31`, those that exist.
fn resolve_gpus() -> Result<KVec<(u32, RealNode)>> {
    let mut gpus = KVec::new();
    for k in 0..32u32 {
        let path = CString::try_from_fmt(fmt!("/dev/nvidia{k}"))?;
        if let Ok(node) = RealNode::resolve(&path) {
            if node.rdev() == DevT::new(195, k) {
                gpus.push((k, node), GFP_KERNEL)?;
            }
        }
    }
    Ok(gpus)
}

impl kernel::Module for VgpuModule {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        // SAFETY: called once, before anything else uses `STATE`.
        unsafe { STATE.init() };
        // SAFETY: called once, before any file can be opened.
        unsafe { ctl::init_clients() };
        // SAFETY: called once, before any file can be opened.
        unsafe { deny::init() };
        // First of all, the driver's release: every layout vgpu uses below
        // (CARD_INFO, the kernel-client blocks) is that of the release its
        // tables were checked against. This logs why it failed (e.g. a
        // driver release vgpu was not checked against, named with the one
        // it was).
        let rm = RmOps::get()?;
        // Rust reads task_struct fields: refuse a kernel whose bindgen
        // layout of it is not the C compiler's (this logs the fields).
        kapi::task::check_layout()?;
        let ctl = RealNode::resolve(NVIDIACTL).inspect_err(|e| {
            pr_err!("cannot open {NVIDIACTL:?} ({e:?}): load the NVIDIA driver first\n");
        })?;
        if ctl.rdev() != DevT::new(195, 255) {
            pr_err!("{NVIDIACTL:?} is not the NVIDIA control node (195:255)\n");
            return Err(ENODEV);
        }
        let cards = ctl::Cards::read(&ctl).inspect_err(|e| {
            pr_err!("cannot read CARD_INFO from {NVIDIACTL:?} ({e:?})\n");
        })?;
        let gpus = resolve_gpus()?;
        let mut indices = KVec::new();
        for (k, _) in gpus.iter() {
            indices.push(*k, GFP_KERNEL)?;
        }
        let region = Region::dynamic(MINORS, c"vgpu")?;
        let mut backed = KVec::with_capacity(indices.len(), GFP_KERNEL)?;
        backed.extend_from_slice(&indices, GFP_KERNEL)?;
        let vgpus = vgpus::Vgpus::new(region.base().major(), backed)?;
        let class = Class::new(c"vgpu")?;
        let kclient = rm
            .alloc(0, 0, 0, nv::abi::class::NV01_ROOT, &mut [])?
            .map_err(|st| {
                pr_err!("the NVIDIA driver refused vgpu a client (status {st:#x})\n");
                EIO
            })?;
        let free_kclient = ScopeGuard::new(|| {
            let _ = rm.free(kclient, kclient, kclient);
        });
        let mut scheds = KVec::new();
        let mut uuids = KVec::new();
        for k in indices.iter() {
            let mut p = nv::abi::DeviceAllocParams {
                device_id: *k,
                ..Default::default()
            }
            .to_bytes();
            let kdevice = rm
                .alloc(kclient, kclient, 0, nv::abi::class::NV01_DEVICE_0, &mut p)?
                .map_err(|st| {
                    pr_err!("the NVIDIA driver refused vgpu GPU {k} (status {st:#x})\n");
                    EIO
                })?;
            match gpu_uuid(&rm, kclient, kdevice) {
                Ok(u) => uuids.push((*k, u), GFP_KERNEL)?,
                Err(e) => pr_warn!("GPU {k}: no UUID from the driver ({e:?}): no UVM on it\n"),
            }
            scheds.push(sched::GpuSched::new(*k, kdevice)?, GFP_KERNEL)?;
        }
        let uvm = RealNode::resolve(NVIDIA_UVM).ok();
        if uvm.is_none() {
            pr_info!("no {NVIDIA_UVM:?}: /dev/vgpu-uvm answers ENODEV\n");
        }
        free_kclient.dismiss();
        // From here on, dropping the state (or this value, should the
        // allocation fail) frees the client.
        let state = Arc::new(
            State {
                backend: proxy::Backend { ctl, gpus, uvm },
                vgpus,
                class,
                rm,
                scheds,
                kclient,
                uuids,
                cards,
            },
            GFP_KERNEL,
        )?;
        *STATE.lock() = Some(state.clone());
        // Until `init` succeeds, a failure must not leave the state behind.
        let unset = ScopeGuard::new(|| drop(STATE.lock().take()));

        let cdev = Cdev::<proxy::ProxyFops>::new(region.base(), MINORS)?;
        let ctl_node = Node::new(
            &state.class,
            DevT::new(region.base().major(), proxy::CTL_MINOR),
            c"vgpuctl",
        )?;
        let uvm_node = Node::new(
            &state.class,
            DevT::new(region.base().major(), uvm::UVM_MINOR),
            c"vgpu-uvm",
        )?;
        let gpu_files = DeviceFilesGroup::<vgpus::GpuFiles>::new()?;
        // Until `init` succeeds, a failure must take the directories down
        // before their file group goes.
        let nodes = ScopeGuard::new(|| state.remove_gpu_nodes());
        for g in state.scheds.iter() {
            let cname = CString::try_from_fmt(fmt!("gpu{}", g.gpu))?;
            // No device number: a directory of settings, no /dev node. The
            // node holds the scheduler until `remove_gpu_nodes` drops it.
            let node = Node::with_groups(&state.class, DevT(0), &cname, &gpu_files, g.clone())?;
            *g.node.lock() = Some(node);
        }
        let mut schedulers = KVec::new();
        for g in state.scheds.iter() {
            let cname = CString::try_from_fmt(fmt!("vgpu-sched{:02}", g.gpu))?;
            let worker = sched::SchedWorker::new(g.clone(), state.clone())?;
            schedulers.push(Thread::spawn(&cname, worker)?, GFP_KERNEL)?;
        }
        let ctl_files = ClassFilesReg::new(&state.class)?;
        nodes.dismiss();
        unset.dismiss();
        pr_info!("{} GPU node(s) found\n", state.backend.gpus.len());
        Ok(Self {
            ctl_files: Some(ctl_files),
            schedulers,
            _gpu_files: gpu_files,
            _ctl_node: ctl_node,
            _uvm_node: uvm_node,
            _cdev: cdev,
            _region: region,
            state,
        })
    }
}

impl Drop for VgpuModule {
    fn drop(&mut self) {
        // No proxy file is open (each holds a module reference): no create or
        // remove after the class files go, then the vGPUs go.
        drop(self.ctl_files.take());
        self.schedulers.clear();
        self.state.remove_gpu_nodes();
        self.state.vgpus.clear();
        ctl::clear_clients();
        deny::clear();
        STATE.lock().take();
    }
}

#[kunit_tests(vgpu_nv_ioctl)]
mod tests {
    use crate::nv::ioctl::{decode, nv_iowr, DecodeError, Escape};

    #[test]
    fn decodes_rm_alloc_in_both_layouts() {
        assert_eq!(
            decode(nv_iowr(0x2b, 32)).map(|c| c.escape),
            Ok(Escape::RmAlloc)
        );
        assert_eq!(
            decode(nv_iowr(0x2b, 48)).map(|c| c.escape),
            Ok(Escape::RmAlloc)
        );
    }

    #[test]
    fn refuses_unknown_and_missized() {
        assert_eq!(
            decode(nv_iowr(0x01, 8)),
            Err(DecodeError::UnknownEscape(0x01))
        );
        assert!(decode(nv_iowr(0x2a, 33)).is_err());
    }
}

#[kunit_tests(vgpu_ledger)]
mod ledger_tests {
    use crate::config::{cgroup_contains, parse_limit};
    use crate::ledger::Ledger;

    #[test]
    fn ceiling_is_exact() {
        let mut l = Ledger::new(1 << 30);
        assert!(l.reserve((1 << 30) - 4096).is_ok());
        assert!(l.reserve(4096).is_ok());
        assert!(l.reserve(1).is_err());
        l.release(4096);
        assert!(l.reserve(4096).is_ok());
    }

    #[test]
    fn sysfs_values() {
        assert_eq!(parse_limit(b"max\n"), Ok(u64::MAX));
        assert!(cgroup_contains(b"/a", b"/a/b"));
        assert!(!cgroup_contains(b"/a", b"/ab"));
    }
}

#[kunit_tests(vgpu_compute)]
mod compute_tests {
    use crate::compute::{settle, targets, window, Policy, Tenant};

    const P: u64 = 50_000_000;

    #[test]
    fn windows_follow_the_shares() {
        let t = |share, busy| Tenant { share, busy };
        let mut out = [0u64; 4];
        let idle = targets(
            Policy::Fixed,
            P,
            &[t(10, true), t(20, true), t(30, true), t(40, true)],
            &mut out,
        );
        assert_eq!(out, [5_000_000, 10_000_000, 15_000_000, 20_000_000]);
        assert_eq!(idle, 0);
        let mut two = [0u64; 2];
        assert_eq!(
            targets(
                Policy::WorkConserving,
                P,
                &[t(30, true), t(70, false)],
                &mut two
            ),
            0
        );
        assert_eq!(two, [P, 0]);
    }

    #[test]
    fn overruns_are_paid_back() {
        let mut debt = 0;
        settle(&mut debt, 1_000_000, 1_200_000, P);
        assert_eq!(window(1_000_000, debt), 800_000);
    }
}
