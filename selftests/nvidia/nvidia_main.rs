// SPDX-License-Identifier: GPL-2.0

//! A test double of the NVIDIA driver (`nvidia.ko`), for testing vgpu on
//! machines without a GPU.
//!
//! It registers the driver's real device numbers (`/dev/nvidiactl` at
//! 195:255, `/dev/nvidiaN` at 195:N), serves the slice of the RM ioctl ABI
//! that vgpu touches with the real numbers, layouts and statuses, enforces
//! the driver behaviours that shape a proxy (client bound to its ctl file,
//! device allocation needs a GPU file in the caller's fd table, embedded fds
//! must be the driver's own files, one mapping context per file), exports the
//! kernel-client interface (`nvidia_get_rm_ops`) and simulates each GPU's
//! engine: work submitted through the doorbell protocol runs in simulated GPU
//! time, time-sliced between enabled TSGs.
//!
//! It also serves the nvidia-uvm node (`uvm/`), which the real driver
//! ships as a module of its own: one module keeps RM objects, the VRAM heap
//! and UVM's managed residency under one lock. Its nodes have a dynamic
//! major and no class device (as the real `nvidia-uvm`): tests make them
//! from `/proc/devices`. A test-only view of managed residency is in
//! debugfs, `nvidia-double/uvm`.
//!
//! Where the double had to guess at the real driver's behaviour, the code
//! says so with `GUESS:`; `docs/driver-double.md` lists them.

use core::sync::atomic::Ordering;
use kernel::{debugfs, prelude::*};

// The safe kernel-API wrappers shared with vgpu (src/kapi/), those the
// double needs. They refer to each other as `super::<file>`, which resolves
// here as in vgpu's `kapi` module.
#[allow(dead_code)]
#[path = "../../src/kapi/chrdev.rs"]
mod chrdev;
#[allow(dead_code)]
#[path = "../../src/kapi/class.rs"]
mod class;
#[allow(dead_code)]
#[path = "../../src/kapi/fdtable.rs"]
mod fdtable;
#[allow(dead_code)]
#[path = "../../src/kapi/kthread.rs"]
mod kthread;
#[allow(dead_code)]
#[path = "../../src/kapi/pid.rs"]
mod pid;
#[allow(dead_code)]
#[path = "../../src/kapi/user.rs"]
mod user;

/// The shared wrappers under the name vgpu uses for them.
mod kapi {
    pub(crate) use super::{chrdev, class, fdtable, kthread, pid, user};
}
#[path = "../../src/nv/mod.rs"]
pub mod nv;

// The double's own files, bottom layer first: no file names one above it
// (checked by the host test `userspace/logic/tests/double_layers.rs`).
mod base;
mod calls;
mod chan;
mod engine;
mod file;
mod fops;
mod global;
mod kclient;
mod memory;
mod pbdma;
mod procfs;
mod rm;
mod settings;
mod uvm;

use base::{CTL_MINOR, MAX_GPUS, NV_MAJOR};
use global::driver;
use settings::{release, release_cstr, GPU_FILES, IOCTLS, MAP_DELAY_MS, PERF_BOOST, RUSD_POLLED};

use kapi::{
    chrdev::{Cdev, DevT, Node, Region},
    class::Class,
};

module! {
    type: NvidiaDouble,
    name: "nvidia",
    authors: ["vgpu developers"],
    description: "Test double of the NVIDIA driver for vgpu's tests",
    license: "GPL",
    params: {
        gpus: u32 {
            default: 1,
            description: "Number of fake GPUs (0-8)",
        },
        release: u32 {
            default: 0,
            description: "Driver release to claim: 0 595.45.04, 1 590.48.01, 2 580.142, 3 570.211.01, 4 550.163.01, 5 535.288.01 (each with its ABI), 6 560.35.05 (version string only), 7 580.105.08 (580.142's ABI), 8 535.261.03 (535.288.01's ABI)",
        },
        uvm_mm: u32 {
            default: 1,
            description: "1: model a kernel with MMU notifiers (UVM tracks each VA space's mm); 0: a kernel without (as the project's test kernels, where the real nvidia-uvm answers so)",
        },
        uvm_ats: u32 {
            default: 0,
            description: "1: model an nvidia-uvm with ATS enabled (GPUs reach pageable memory whatever DISABLE_HMM; needs uvm_mm=1), as the real one without a GPU on Debian's kernel; 0: without (an x86 GPU host's)",
        },
        vram0_mib: u64 {
            default: 8192,
            description: "VRAM of GPU 0 in MiB",
        },
        vram1_mib: u64 {
            default: 8192,
            description: "VRAM of GPU 1 in MiB",
        },
        vram2_mib: u64 {
            default: 8192,
            description: "VRAM of GPU 2 in MiB",
        },
        vram3_mib: u64 {
            default: 8192,
            description: "VRAM of GPU 3 in MiB",
        },
        vram4_mib: u64 {
            default: 8192,
            description: "VRAM of GPU 4 in MiB",
        },
        vram5_mib: u64 {
            default: 8192,
            description: "VRAM of GPU 5 in MiB",
        },
        vram6_mib: u64 {
            default: 8192,
            description: "VRAM of GPU 6 in MiB",
        },
        vram7_mib: u64 {
            default: 8192,
            description: "VRAM of GPU 7 in MiB",
        },
    },
}

/// The loaded module. Fields drop in order: the debugfs view, nodes, then
/// the cdevs (no new opens), then the number ranges and the class; `Drop`
/// stops the engines first.
struct NvidiaDouble {
    _view: Pin<KBox<debugfs::File<()>>>,
    _gpus_view: Pin<KBox<debugfs::File<()>>>,
    _engine_view: Pin<KBox<debugfs::File<()>>>,
    _vram_view: Pin<KBox<debugfs::File<()>>>,
    _map_delay: Pin<KBox<debugfs::File<()>>>,
    _gpu_files: Pin<KBox<debugfs::File<()>>>,
    _rusd_polled: Pin<KBox<debugfs::File<()>>>,
    _perf_boost: Pin<KBox<debugfs::File<()>>>,
    _ioctls: Pin<KBox<debugfs::File<()>>>,
    _calls: Pin<KBox<debugfs::File<()>>>,
    _debugfs: debugfs::Dir,
    _nodes: KVec<Node>,
    _cdev: Cdev<file::NvFops>,
    _uvm_cdev: Cdev<uvm::file::UvmFops>,
    _region: Region,
    _uvm_region: Region,
    _class: Class,
    _proc: procfs::ProcFiles,
}

/// Writes the test-only per-GPU view (see `uvm/view.rs`, `gpus_view`).
fn write_gpus_view(_: &(), f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
    match driver() {
        Ok(drv) => drv.gpus_view(f),
        Err(_) => Ok(()),
    }
}

/// Writes the test-only engine view (see `uvm/view.rs`, `engine_view`).
fn write_engine_view(_: &(), f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
    match driver() {
        Ok(drv) => drv.engine_view(f),
        Err(_) => Ok(()),
    }
}

/// Writes the test-only VRAM view (see `uvm/view.rs`, `vram_view`).
fn write_vram_view(_: &(), f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
    match driver() {
        Ok(drv) => drv.vram_view(f),
        Err(_) => Ok(()),
    }
}

/// Writes the test-only UVM residency view (see `uvm/view.rs`).
fn write_uvm_view(_: &(), f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
    match driver() {
        Ok(drv) => drv.uvm_view(f),
        Err(_) => Ok(()),
    }
}

fn show_rusd_polled(_: &(), f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
    writeln!(f, "{:#x}", RUSD_POLLED.load(Ordering::Relaxed))
}

fn reset_rusd_polled(_: &(), _r: &mut kernel::uaccess::UserSliceReader) -> Result {
    RUSD_POLLED.store(0, Ordering::Relaxed);
    Ok(())
}

fn show_perf_boost(_: &(), f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
    writeln!(f, "{:#x}", PERF_BOOST.load(Ordering::Relaxed))
}

fn reset_perf_boost(_: &(), _r: &mut kernel::uaccess::UserSliceReader) -> Result {
    PERF_BOOST.store(0, Ordering::Relaxed);
    Ok(())
}

fn show_ioctls(_: &(), f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
    writeln!(f, "{}", IOCTLS.load(Ordering::Relaxed))
}

fn reset_ioctls(_: &(), _r: &mut kernel::uaccess::UserSliceReader) -> Result {
    IOCTLS.store(0, Ordering::Relaxed);
    Ok(())
}

fn show_calls(_: &(), f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
    calls::show(f)
}

fn reset_calls(_: &(), _r: &mut kernel::uaccess::UserSliceReader) -> Result {
    calls::reset();
    Ok(())
}

fn show_gpu_files(_: &(), f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
    let n = driver().map_or(0, |d| d.gpu_count());
    for (i, c) in GPU_FILES.iter().take(n).enumerate() {
        writeln!(f, "gpu{i} {}", c.load(Ordering::Relaxed))?;
    }
    Ok(())
}

fn show_map_delay(_: &(), f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
    writeln!(f, "{}", MAP_DELAY_MS.load(Ordering::Relaxed))
}

fn set_map_delay(_: &(), r: &mut kernel::uaccess::UserSliceReader) -> Result {
    let mut buf = [0u8; 16];
    let n = r.len();
    let b = buf.get_mut(..n).ok_or(EINVAL)?;
    r.read_slice(b)?;
    let ms: u32 = core::str::from_utf8(b)
        .map_err(|_| EINVAL)?
        .trim()
        .parse()
        .map_err(|_| EINVAL)?;
    if ms > 1000 {
        return Err(ERANGE);
    }
    MAP_DELAY_MS.store(ms, Ordering::Relaxed);
    Ok(())
}

fn vram_mib(i: usize) -> u64 {
    match i {
        0 => module_parameters::vram0_mib.value(),
        1 => module_parameters::vram1_mib.value(),
        2 => module_parameters::vram2_mib.value(),
        3 => module_parameters::vram3_mib.value(),
        4 => module_parameters::vram4_mib.value(),
        5 => module_parameters::vram5_mib.value(),
        6 => module_parameters::vram6_mib.value(),
        _ => module_parameters::vram7_mib.value(),
    }
}

impl kernel::Module for NvidiaDouble {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        settings::load(
            module_parameters::release.value(),
            module_parameters::uvm_mm.value() != 0,
            module_parameters::uvm_ats.value() != 0,
        );
        // gpus=0 is a host without a GPU, as NVIDIA's driver runs in the
        // real-driver lane (RM core up, only an NVSwitch-class function on
        // the bus): the double is compared with it there.
        let n = module_parameters::gpus.value() as usize;
        if n > MAX_GPUS {
            pr_err!("gpus={n}: must be 0..={MAX_GPUS}\n");
            return Err(EINVAL);
        }
        let mut sizes = KVec::new();
        for i in 0..n {
            let mib = vram_mib(i);
            if !(64..=(1 << 24)).contains(&mib) {
                pr_err!("vram{i}_mib={mib}: must be 64..=16777216\n");
                return Err(EINVAL);
            }
            sizes.push(mib << 20, GFP_KERNEL)?;
        }
        // SAFETY: called once, before anything else uses the global.
        unsafe { global::init() };
        global::set(rm::state::Driver::new(&sizes)?);
        Self::register(n).inspect_err(|_| {
            let drv = global::take();
            if let Some(drv) = drv {
                drv.shutdown();
            }
        })
    }
}

impl NvidiaDouble {
    /// Registers the nodes of `n` GPUs, the UVM node and the debugfs view.
    fn register(n: usize) -> Result<Self> {
        let class = Class::new(c"nvidia")?;
        let region = Region::fixed(DevT::new(NV_MAJOR, 0), 256, c"nvidia")?;
        let cdev = Cdev::<file::NvFops>::new(region.base(), 256)?;
        let mut nodes = KVec::new();
        nodes.push(
            Node::new(&class, DevT::new(NV_MAJOR, CTL_MINOR), c"nvidiactl")?,
            GFP_KERNEL,
        )?;
        for i in 0..n {
            let mut name = [0u8; 16];
            let len = file::gpu_node_name(i, &mut name);
            let name = CStr::from_bytes_with_nul(&name[..=len]).map_err(|_| EINVAL)?;
            nodes.push(
                Node::new(&class, DevT::new(NV_MAJOR, i as u32), name)?,
                GFP_KERNEL,
            )?;
        }
        // The UVM node: a dynamic major, minors 0 (nvidia-uvm) and 1
        // (tools), and no class device, like the real nvidia-uvm.
        let uvm_region = Region::dynamic(2, c"nvidia-uvm")?;
        let uvm_cdev = Cdev::<uvm::file::UvmFops>::new(uvm_region.base(), 2)?;
        let debugfs = debugfs::Dir::new(c"nvidia-double");
        let view = KBox::pin_init(
            debugfs.read_callback_file(c"uvm", (), &write_uvm_view),
            GFP_KERNEL,
        )?;
        let gpus_view = KBox::pin_init(
            debugfs.read_callback_file(c"gpus", (), &write_gpus_view),
            GFP_KERNEL,
        )?;
        let engine_view = KBox::pin_init(
            debugfs.read_callback_file(c"engine", (), &write_engine_view),
            GFP_KERNEL,
        )?;
        let vram_view = KBox::pin_init(
            debugfs.read_callback_file(c"vram", (), &write_vram_view),
            GFP_KERNEL,
        )?;
        let gpu_files = KBox::pin_init(
            debugfs.read_callback_file(c"gpu_files", (), &show_gpu_files),
            GFP_KERNEL,
        )?;
        let map_delay = KBox::pin_init(
            debugfs.read_write_callback_file(c"map_delay_ms", (), &show_map_delay, &set_map_delay),
            GFP_KERNEL,
        )?;
        let rusd_polled = KBox::pin_init(
            debugfs.read_write_callback_file(
                c"rusd_polled",
                (),
                &show_rusd_polled,
                &reset_rusd_polled,
            ),
            GFP_KERNEL,
        )?;
        let perf_boost = KBox::pin_init(
            debugfs.read_write_callback_file(
                c"perf_boost",
                (),
                &show_perf_boost,
                &reset_perf_boost,
            ),
            GFP_KERNEL,
        )?;
        let ioctls = KBox::pin_init(
            debugfs.read_write_callback_file(c"ioctls", (), &show_ioctls, &reset_ioctls),
            GFP_KERNEL,
        )?;
        let calls = KBox::pin_init(
            debugfs.read_write_callback_file(c"calls", (), &show_calls, &reset_calls),
            GFP_KERNEL,
        )?;
        let proc = procfs::ProcFiles::new(release_cstr(), n as u32)?;
        pr_info!(
            "driver double {}: {n} fake GPU(s), nvidia-uvm major {}\n",
            release(),
            uvm_region.base().major()
        );
        Ok(Self {
            _view: view,
            _gpus_view: gpus_view,
            _engine_view: engine_view,
            _vram_view: vram_view,
            _map_delay: map_delay,
            _gpu_files: gpu_files,
            _rusd_polled: rusd_polled,
            _perf_boost: perf_boost,
            _ioctls: ioctls,
            _calls: calls,
            _debugfs: debugfs,
            _nodes: nodes,
            _cdev: cdev,
            _uvm_cdev: uvm_cdev,
            _region: region,
            _uvm_region: uvm_region,
            _class: class,
            _proc: proc,
        })
    }
}

impl Drop for NvidiaDouble {
    fn drop(&mut self) {
        // No file is open (each holds a module reference), so nothing else
        // uses the driver: stopping its engines here is the last word.
        let drv = global::take();
        if let Some(drv) = drv {
            drv.shutdown();
        }
    }
}
