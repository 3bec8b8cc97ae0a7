// SPDX-License-Identifier: GPL-2.0

//! vgpu: per-container virtual NVIDIA GPUs.
//!
//! vgpu sits between containers and the NVIDIA driver. Each container gets
//! virtual device nodes (`/dev/vgpuctl`, `/dev/vgpuN`) instead of the real
//! ones; vgpu forwards their ioctls and mmaps to the driver and uses that
//! position to enforce a memory ceiling and a compute share per vGPU. It is
//! configured at run time through `/sys/class/vgpu/`.
//!
//! Layout, bottom up (a module uses only those below it; `docs/layers.md`
//! draws it): [`nv`], [`config`], [`ledger`] and [`compute`] are the
//! driver's ABI and pure logic, built on the host too; [`kapi`] holds the
//! safe wrappers over kernel APIs; `vgpu` is one vGPU (settings, ledger,
//! compute state), `vgpus` the table of them and their sysfs files,
//! `sched` the per-GPU compute scheduler, `objects` what a ctl file
//! created, `host` the host's GPUs and vgpu's own driver client; the
//! handlers (`rm/`, one file per escape family, and `uvm/`) act on those;
//! `file` is an open file's state and `proxy` the dispatcher that picks a
//! handler from the dispatch table; this file holds the module.

use core::fmt::Write;
use kernel::{prelude::*, str::CString, sync::Arc, types::ScopeGuard};

mod call;
mod clients;
pub mod compute;
pub mod config;
mod deny;
mod file;
mod host;
pub mod ledger;
pub mod nv;
#[deny(unsafe_code)]
mod objects;
mod procs;
mod proxy;
mod records;
#[deny(unsafe_code)]
mod rm;
mod rows;
#[deny(unsafe_code)]
mod sched;
mod state;
mod status;
pub mod uapi;
#[deny(unsafe_code)]
mod uvm;
mod vgpu;
mod vgpus;

// Shared with the driver double; what only the test modules use is
// `#[cfg(vgpu_test_glue)]`, which their Kbuilds set and vgpu's does not.
mod kapi;

use kapi::{
    cdevhook::{has_device, Hook, Kind as HookKind, ModuleWatch},
    chrdev::{Cdev, DevT, Node, Region},
    class::Class,
    kthread::Thread,
    realfile::RealNode,
    rmops::RmOps,
    sysfs::{ClassFiles, ClassFilesReg, DeviceFilesGroup, Emit, FileSpec},
};

module! {
    type: VgpuModule,
    name: "vgpu",
    authors: ["vgpu developers"],
    description: "Per-container virtual NVIDIA GPUs: memory ceilings and compute shares (NVIDIA drivers 595.45.04, 590.48.01, 580.142, 570.211.01, 550.163.01, 535.288.01)",
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
/// The real UVM tools node (profilers), whose open vgpu takes over too.
const NVIDIA_UVM_TOOLS: &CStr = c"/dev/nvidia-uvm-tools";
/// nvidia-uvm's module directory in sysfs: it is loaded.
const NVIDIA_UVM_MODULE: &CStr = c"/sys/module/nvidia_uvm";

/// The files of `/sys/class/vgpu/` itself: `create` and `remove` (the
/// sysfs entry points that need the module state), `driver_version`, the
/// NVIDIA driver release whose tables vgpu runs with, and `driver_nodes`,
/// the driver's device numbers whose open vgpu takes over (a container's
/// open of them is vgpu's): what a CDI spec that gives containers
/// NVIDIA's own nodes relies on, so `vgpuctl hook` checks for it.
pub(crate) struct ClassCtl;

const C_CREATE: usize = 0;
const C_REMOVE: usize = 1;
const C_DRIVER_VERSION: usize = 2;
const C_DRIVER_NODES: usize = 3;

impl ClassFiles for ClassCtl {
    const FILES: &'static [FileSpec] = &[
        FileSpec {
            name: c"create",
            mode: 0o200,
        },
        FileSpec {
            name: c"remove",
            mode: 0o200,
        },
        FileSpec {
            name: c"driver_version",
            mode: 0o444,
        },
        FileSpec {
            name: c"driver_nodes",
            mode: 0o444,
        },
    ];

    fn show(index: usize, out: &mut Emit<'_>) -> Result {
        match index {
            C_DRIVER_VERSION => {
                writeln!(out, "{}", nv::release::driver().name()).map_err(|_| EFBIG)
            }
            C_DRIVER_NODES => {
                let state = state::get()?;
                let b = &state.backend;
                let mut nodes = KVec::new();
                nodes.push(b.ctl.rdev(), GFP_KERNEL)?;
                for (_, n) in b.gpus.iter() {
                    nodes.push(n.rdev(), GFP_KERNEL)?;
                }
                if let Some(n) = &b.uvm {
                    nodes.push(n.rdev(), GFP_KERNEL)?;
                }
                for d in nodes.iter() {
                    writeln!(out, "{}:{}", d.major(), d.minor()).map_err(|_| EFBIG)?;
                }
                Ok(())
            }
            _ => Err(EPERM),
        }
    }

    fn store(index: usize, input: &[u8]) -> Result {
        if index == C_DRIVER_VERSION || index == C_DRIVER_NODES {
            return Err(EPERM);
        }
        let id = config::parse_index(input, vgpus::MAX_VGPU).map_err(vgpus::errno)?;
        let state = state::get()?;
        match index {
            C_CREATE => state.vgpus.create(&state.class, id),
            C_REMOVE => state.vgpus.remove(id),
            _ => Err(EPERM),
        }
    }
}

/// The loaded module. `Drop` takes down the class files, stops the
/// schedulers, removes the `gpuK` directories and the vGPUs; the fields then
/// drop in order: the `gpuK` file group, the control node, the cdevs (no new
/// opens), the number range, and last the state (with the class).
pub struct VgpuModule {
    /// debugfs `vgpu/` (the first field to drop).
    _debugfs: records::View,
    /// The open of the driver's own devices, taken over (removed first).
    hooks: KVec<Hook>,
    /// nvidia-uvm's load refused while vgpu is loaded.
    _uvm_watch: ModuleWatch,
    ctl_files: Option<ClassFilesReg<ClassCtl>>,
    schedulers: KVec<Thread>,
    _gpu_files: DeviceFilesGroup<sched::GpuFiles>,
    _ctl_node: Node,
    _uvm_node: Node,
    _cdevs: Cdevs,
    _region: Region,
    state: Arc<state::State>,
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

/// Takes over the open of the driver's character devices: `nvidiactl`
/// and the GPUs' `nvidia` (major 195), `nvidia-uvm` and its tools node
/// (`docs/design-notes.md`, "NVIDIA's own nodes"). vgpu's own opens of the
/// driver must stay the driver's, and are told apart by vgpu's private
/// mounts of the nodes: without them, vgpu does not load.
fn take_over_driver_nodes(backend: &state::Backend) -> Result<KVec<Hook>> {
    let tools = RealNode::resolve(NVIDIA_UVM_TOOLS)
        .ok()
        .filter(|n| backend.uvm.is_some() && has_device(n));
    let mut nodes = KVec::new();
    nodes.push((&backend.ctl, HookKind::Nv), GFP_KERNEL)?;
    for (_, n) in backend.gpus.iter() {
        nodes.push((n, HookKind::Nv), GFP_KERNEL)?;
    }
    for n in [backend.uvm.as_ref(), tools.as_ref()].into_iter().flatten() {
        nodes.push((n, HookKind::Uvm), GFP_KERNEL)?;
    }
    let mut hooks = KVec::new();
    for (node, kind) in nodes {
        if !node.is_private() {
            pr_err!("no private mount of the NVIDIA driver's nodes: cannot take over their open\n");
            return Err(ENODEV);
        }
        if let Some(h) = Hook::install(node, kind).inspect_err(|e| {
            pr_err!(
                "cannot take over the open of NVIDIA's device {:?} ({e:?})\n",
                node.rdev()
            );
        })? {
            hooks.push(h, GFP_KERNEL)?;
        }
    }
    Ok(hooks)
}

/// `/dev/nvidia-uvm`, if nvidia-uvm is there. A node with no device behind
/// it (left by an nvidia-uvm that is gone) is no UVM.
fn resolve_uvm() -> Result<Option<RealNode>> {
    let uvm = RealNode::resolve(NVIDIA_UVM)
        .ok()
        .filter(kapi::cdevhook::has_device);
    if uvm.is_none() {
        // nvidia-uvm loaded without its node: vgpu could not take over
        // its device, and a container could reach it past vgpu once the
        // node is made.
        if kapi::realfile::path_exists(NVIDIA_UVM_MODULE) {
            pr_err!("nvidia_uvm is loaded but {NVIDIA_UVM:?} does not exist: make it (nvidia-modprobe -u) and load vgpu again\n");
            return Err(ENODEV);
        }
        pr_info!("no {NVIDIA_UVM:?}: /dev/vgpu-uvm answers ENODEV\n");
    }
    Ok(uvm)
}

/// One cdev per kind of node in vgpu's number range.
struct Cdevs {
    _ctl: Cdev<file::CtlFops>,
    _gpu: Cdev<file::GpuFops>,
    _uvm: Cdev<file::UvmFops>,
}

impl Cdevs {
    /// The ctl node's, the vGPUs' nodes' (with the unused minor before the
    /// UVM node's, which opens as no vGPU: `ENODEV`) and the UVM node's.
    fn new(major: u32) -> Result<Self> {
        let first_gpu = proxy::CTL_MINOR + 1;
        Ok(Self {
            _ctl: Cdev::new(DevT::new(major, proxy::CTL_MINOR), 1)?,
            _gpu: Cdev::new(DevT::new(major, first_gpu), uvm::UVM_MINOR - first_gpu)?,
            _uvm: Cdev::new(DevT::new(major, uvm::UVM_MINOR), 1)?,
        })
    }
}

impl kernel::Module for VgpuModule {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        // SAFETY: called once, before anything else uses the state.
        unsafe { state::init() };
        // SAFETY: called once, before any file can be opened.
        unsafe { deny::init(module_parameters::unknown_calls.value() == 1) };
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
        let gpus = resolve_gpus()?;
        let mut indices = KVec::new();
        let mut backable = vgpu::GpuSet::default();
        for (k, _) in gpus.iter() {
            indices.push(*k, GFP_KERNEL)?;
            backable.insert(*k);
        }
        // From here on, dropping the host frees vgpu's client in the driver.
        let host = Arc::new(host::Host::new(rm, &ctl, &indices)?, GFP_KERNEL)?;
        let region = Region::dynamic(MINORS, c"vgpu")?;
        let vgpus = vgpus::Vgpus::new(region.base().major(), backable)?;
        let class = Class::new(c"vgpu")?;
        let uvm = resolve_uvm()?;
        let state = Arc::new(
            state::State {
                backend: state::Backend { ctl, gpus, uvm },
                vgpus,
                class,
                host,
            },
            GFP_KERNEL,
        )?;
        state::set(Some(state.clone()));
        // Until `init` succeeds, a failure must not leave the state behind.
        let unset = ScopeGuard::new(|| state::set(None));

        let cdevs = Cdevs::new(region.base().major())?;
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
        let gpu_files = DeviceFilesGroup::<sched::GpuFiles>::new()?;
        // Until `init` succeeds, a failure must take the directories down
        // before their file group goes.
        let nodes = ScopeGuard::new(|| state.host.remove_gpu_nodes());
        for g in state.host.gpus.iter().map(|g| &g.sched) {
            let cname = CString::try_from_fmt(fmt!("gpu{}", g.gpu))?;
            // No device number: a directory of settings, no /dev node. The
            // node holds the scheduler until `remove_gpu_nodes` drops it.
            let node = Node::with_groups(&state.class, DevT(0), &cname, &gpu_files, g.clone())?;
            *g.node.lock() = Some(node);
        }
        let mut schedulers = KVec::new();
        for g in state.host.gpus.iter().map(|g| &g.sched) {
            let cname = CString::try_from_fmt(fmt!("vgpu-sched{:02}", g.gpu))?;
            let worker = sched::SchedWorker::new(g.clone(), state.vgpus.clone(), state.host.rm)?;
            schedulers.push(Thread::spawn(&cname, worker)?, GFP_KERNEL)?;
        }
        let ctl_files = ClassFilesReg::new(&state.class)?;
        // Last: containers may open the driver's own nodes from here on.
        // nvidia-uvm is refused first: loaded after this, its device would
        // not be taken over.
        let uvm_watch = ModuleWatch::new()?;
        let hooks = take_over_driver_nodes(&state.backend)?;
        nodes.dismiss();
        unset.dismiss();
        pr_info!("{} GPU node(s) found\n", state.backend.gpus.len());
        let debugfs = records::View::new(state.host.clone())?;
        Ok(Self {
            _debugfs: debugfs,
            hooks,
            _uvm_watch: uvm_watch,
            ctl_files: Some(ctl_files),
            schedulers,
            _gpu_files: gpu_files,
            _ctl_node: ctl_node,
            _uvm_node: uvm_node,
            _cdevs: cdevs,
            _region: region,
            state,
        })
    }
}

impl Drop for VgpuModule {
    fn drop(&mut self) {
        // Opens of the driver's own nodes are the driver's again.
        self.hooks.clear();
        // No proxy file is open (each holds a module reference): no create or
        // remove after the class files go, then the vGPUs go.
        drop(self.ctl_files.take());
        self.schedulers.clear();
        self.state.host.remove_gpu_nodes();
        self.state.vgpus.clear();
        deny::clear();
        state::set(None);
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
        let t = |share, busy| Tenant {
            share,
            busy,
            level: 1,
        };
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
