// SPDX-License-Identifier: GPL-2.0

//! The dispatcher: vgpu's nodes and their forwarding to the real driver.
//!
//! Each open of a vgpu node opens a private file of the matching real node
//! (resolved when the module loaded) and forwards ioctl, mmap and poll to it.
//! An ioctl is decoded first, as the driver decodes it, so that vgpu sees
//! exactly what the driver will act on; its escape's row of the dispatch
//! table (`src/nv/table/`) then says on which nodes vgpu admits it and
//! which handler runs. A command the driver would refuse is refused here
//! with the same `EINVAL`; an escape vgpu does not know never reaches the
//! driver.

use core::sync::atomic::AtomicBool;

use kernel::{
    bindings,
    fs::File,
    mm::virt::VmaNew,
    new_mutex,
    prelude::*,
    sync::{Arc, ArcBorrow},
};

use crate::call::Call;
use crate::deny;
use crate::file::{self, CtlFops, GpuFops, Kind, ProxyFile, UvmFops};
use crate::kapi::cdevhook;
use crate::kapi::chrdev::{DevT, FileOperations, Poll};
use crate::kapi::realfile::RealFile;
use crate::kapi::user;
use crate::nv::ioctl;
use crate::objects::Objects;
use crate::rm::{self, CtlFile};
use crate::uvm::{self, space::UvmFile, UVM_MINOR};
use crate::vgpu::Vgpu;

/// Minor of `/dev/vgpuctl` in vgpu's number range.
pub(crate) const CTL_MINOR: u32 = 0;

/// A `/dev/vgpuctl` file.
type CtlProxy = ProxyFile<Arc<CtlFile>>;
/// A `/dev/vgpuN` file.
type GpuProxy = ProxyFile<Arc<Vgpu>>;
/// A `/dev/vgpu-uvm` file.
type UvmProxy = ProxyFile<UvmFile>;

/// Opens a `/dev/vgpuctl` file for `file`'s opener.
fn open_ctl(file: &File) -> Result<Arc<CtlProxy>> {
    let state = crate::state::get()?;
    let vgpus = state.vgpus.for_current()?;
    let ctl = Arc::pin_init(
        pin_init!(CtlFile {
            vgpus,
            objects <- new_mutex!(Objects::default()),
            gr <- new_mutex!(()),
            order <- new_mutex!(()),
            reserved: AtomicBool::new(false),
        }),
        GFP_KERNEL,
    )?;
    let real = state.backend.ctl.open(file)?;
    let host = state.host.clone();
    Ok(Arc::new(
        ProxyFile {
            real,
            kind: ctl,
            host,
        },
        GFP_KERNEL,
    )?)
}

/// Opens a container's `/dev/vgpu-uvm` file: only for callers with vGPUs.
fn open_uvm(file: &File) -> Result<Arc<UvmProxy>> {
    let state = crate::state::get()?;
    let vgpus = state.vgpus.for_current()?;
    if vgpus.is_empty() {
        return Err(EACCES);
    }
    let real = state.backend.uvm.as_ref().ok_or(ENODEV)?.open(file)?;
    let uvm = UvmFile::new(vgpus, &real)?;
    let host = state.host.clone();
    Ok(Arc::new(
        ProxyFile {
            real,
            kind: uvm,
            host,
        },
        GFP_KERNEL,
    )?)
}

/// Opens the `/dev/vgpuN` file of `dev` for `file`'s opener.
fn open_gpu(dev: DevT, file: &File) -> Result<Arc<GpuProxy>> {
    let state = crate::state::get()?;
    let v = state.vgpus.get(dev.minor().wrapping_sub(1)).ok_or(ENODEV)?;
    let real = {
        // Users first, then the settings: the order sysfs writers take too.
        let mut users = v.users.lock();
        if !v.admits_current()? {
            return Err(EACCES);
        }
        let gpu = v.config.lock().gpu.ok_or(ENODEV)?;
        let real = state.backend.gpu(gpu).ok_or(ENODEV)?.open(file)?;
        // Counted before the proxy file is made, with the lock released:
        // if making it fails, its drop gives the count back, taking this
        // lock (found by the fuzz suite's fault injection: the drop ran
        // with the lock held, and the open deadlocked).
        *users += 1;
        real
    };
    let host = state.host.clone();
    Ok(Arc::new(
        ProxyFile {
            real,
            kind: v.clone(),
            host,
        },
        GFP_KERNEL,
    )?)
}

/// Decides an open of one of the NVIDIA driver's own devices, which vgpu
/// took over at load (`kapi::cdevhook`): from a task whose cgroup is bound
/// to vGPUs, the file becomes vgpu's proxy file, as if opened on vgpu's
/// node: `nvidiactl` (195:255) the container's ctl node, `nvidiaK` (195:K)
/// its vGPU on GPU K, `nvidia-uvm` its UVM node; any other minor is
/// `EACCES`. Every other open, and vgpu's own opens of the driver (on its
/// private mounts), runs the driver's own open: returns 1.
///
/// # Safety
///
/// Called by `src/c/cdevhook.c` from the open of a hooked device: `filp`
/// is a valid file in its open, whose `private_data` nothing else uses.
#[no_mangle]
unsafe extern "C" fn vgpu_cdev_open(
    kind: c_int,
    minor: c_uint,
    filp: *mut bindings::file,
) -> c_int {
    const DRIVER: c_int = 1;
    let Ok(state) = crate::state::get() else {
        return DRIVER;
    };
    // SAFETY: the caller's contract: `filp` is a valid file.
    let mnt = unsafe { cdevhook::file_mount(filp) };
    if state.backend.owns_mount(mnt) {
        return DRIVER;
    }
    let vgpus = match state.vgpus.for_current() {
        Ok(v) if v.is_empty() => return DRIVER,
        Ok(v) => v,
        Err(e) => return e.to_errno(),
    };
    let ours = match (cdevhook::Kind::from_raw(kind), minor) {
        (Some(cdevhook::Kind::Nv), 255) => Some(CTL_MINOR),
        (Some(cdevhook::Kind::Nv), k) => vgpus
            .iter()
            .find(|v| v.config.lock().gpu == Some(k))
            .map(|v| v.id + 1),
        (Some(cdevhook::Kind::Uvm), 0) => Some(UVM_MINOR),
        _ => None,
    };
    let Some(m) = ours else {
        return EACCES.to_errno();
    };
    let dev = DevT::new(state.vgpus.major(), m);
    // SAFETY: the caller's contract, passed on.
    unsafe {
        match m {
            CTL_MINOR => cdevhook::adopt::<CtlFops>(filp, dev),
            UVM_MINOR => cdevhook::adopt::<UvmFops>(filp, dev),
            _ => cdevhook::adopt::<GpuFops>(filp, dev),
        }
    }
}

/// Decodes an escape on a ctl or GPU node: an escape vgpu does not know,
/// or the driver's release does not have, never reaches the driver, which
/// answers unknown escapes with EINVAL too; it is counted.
fn decode<K: Kind>(me: &ProxyFile<K>, cmd: u32, arg: usize) -> Result<Call> {
    Call::decode(cmd, arg).inspect_err(|_| {
        let rel = crate::nv::release::current();
        if let Err(ioctl::DecodeError::UnknownEscape(nr)) =
            ioctl::decode_with(cmd, |e| rel.escape_rule(e))
        {
            deny::refuse(deny::Family::Escape, nr.into(), None, || me.count_denied());
        }
    })
}

/// An fd inside the parameters at the row's `fd_at` that names one of
/// vgpu's proxy files stands for that file's private real file: the call
/// forwarded so, or `None` (no such fd).
fn named(real: &RealFile, call: &Call) -> Result<Option<isize>> {
    match call.row.fd_at {
        Some(off) => forward_naming(real, call, off),
        None => Ok(None),
    }
}

// The row names the nodes vgpu admits an escape on: RM escapes on the ctl
// node only (the driver would serve them on a GPU node too, for the ctl
// file it is registered to, but they must pass vgpu's accounting there)
// but RM_ALLOC of the event classes, REGISTER_FD on GPU nodes only.

#[vtable]
impl FileOperations for CtlFops {
    type OwnerModule = crate::VgpuModule;
    type Private = Arc<CtlProxy>;

    fn open(_dev: DevT, file: &File) -> Result<Arc<CtlProxy>> {
        open_ctl(file)
    }

    fn ioctl(me: ArcBorrow<'_, CtlProxy>, _file: &File, cmd: u32, arg: usize) -> Result<isize> {
        let call = decode(&me, cmd, arg)?;
        if !call.row.nodes.admits(true) {
            return Err(EPERM);
        }
        if let Some(r) = named(&me.real, &call)? {
            return Ok(r);
        }
        let cx = rm::Ctx {
            host: &me.host,
            file: &me.kind,
            real: &me.real,
            call: &call,
        };
        rm::dispatch(&cx, call.row.handler)
    }

    fn mmap(me: ArcBorrow<'_, CtlProxy>, _file: &File, vma: &VmaNew) -> Result {
        me.real.mmap(vma)
    }

    fn poll(me: ArcBorrow<'_, CtlProxy>, _file: &File, table: &Poll<'_>) -> u32 {
        me.real.poll(table)
    }
}

#[vtable]
impl FileOperations for GpuFops {
    type OwnerModule = crate::VgpuModule;
    type Private = Arc<GpuProxy>;

    fn open(dev: DevT, file: &File) -> Result<Arc<GpuProxy>> {
        open_gpu(dev, file)
    }

    fn ioctl(me: ArcBorrow<'_, GpuProxy>, _file: &File, cmd: u32, arg: usize) -> Result<isize> {
        let call = decode(&me, cmd, arg)?;
        if !call.row.nodes.admits(false) {
            return Err(EPERM);
        }
        let named = named(&me.real, &call)?;
        let on = rm::gpu::Caller {
            host: &me.host,
            vgpus: core::slice::from_ref(&me.kind),
            real: &me.real,
            call: &call,
        };
        rm::gpu::dispatch(&me.kind, &on, call.row.handler, || match named {
            Some(r) => Ok(r),
            None => call.forward(&me.real),
        })
    }

    fn mmap(me: ArcBorrow<'_, GpuProxy>, _file: &File, vma: &VmaNew) -> Result {
        me.real.mmap(vma)
    }

    fn poll(me: ArcBorrow<'_, GpuProxy>, _file: &File, table: &Poll<'_>) -> u32 {
        me.real.poll(table)
    }
}

#[vtable]
impl FileOperations for UvmFops {
    type OwnerModule = crate::VgpuModule;
    type Private = Arc<UvmProxy>;

    fn open(_dev: DevT, file: &File) -> Result<Arc<UvmProxy>> {
        open_uvm(file)
    }

    fn ioctl(me: ArcBorrow<'_, UvmProxy>, _file: &File, cmd: u32, arg: usize) -> Result<isize> {
        uvm::ioctl(&me, cmd, arg)
    }

    fn mmap(me: ArcBorrow<'_, UvmProxy>, _file: &File, vma: &VmaNew) -> Result {
        uvm::mmap(&me, vma)
    }

    fn poll(me: ArcBorrow<'_, UvmProxy>, _file: &File, table: &Poll<'_>) -> u32 {
        me.real.poll(table)
    }
}

/// If the fd at byte `off` of the call's block names a proxy file, forwards
/// the call with that file's real file in its place (from a kernel copy of
/// the block, see [`crate::kapi::realfile::RealFile::ioctl_block_naming`]);
/// the caller sees its own fd in its block again. `Ok(None)`: the fd is not
/// a proxy file; forward as is.
fn forward_naming(real: &RealFile, call: &Call, off: usize) -> Result<Option<isize>> {
    let mut blk = [0u8; EMBEDDED_FD_BLOCK_MAX];
    let blk = blk.get_mut(..call.size).ok_or(EINVAL)?;
    user::read(call.addr, blk)?;
    let theirs: [u8; 4] = blk
        .get(off..off + 4)
        .ok_or(EINVAL)?
        .try_into()
        .map_err(|_| EINVAL)?;
    let fd = i32::from_ne_bytes(theirs);
    let Ok(f) = crate::kapi::fdtable::fget(fd) else {
        return Ok(None);
    };
    let Some(r) = file::real_of(&f, |other| {
        real.ioctl_block_naming(other, call.direct_cmd(), blk, off)
    }) else {
        return Ok(None);
    };
    blk[off..off + 4].copy_from_slice(&theirs);
    user::write(call.addr, blk)?;
    r.map(Some)
}

/// The largest block with an embedded fd (NVOS33 and NVOS02 with their fd).
const EMBEDDED_FD_BLOCK_MAX: usize = 64;
