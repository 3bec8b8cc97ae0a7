// SPDX-License-Identifier: GPL-2.0

//! The dispatcher: vgpu's nodes and their forwarding to the real driver.
//!
//! Each open of a vgpu node opens a private file of the matching real node
//! (resolved when the module loaded) and forwards ioctl, mmap and poll to it.
//! An ioctl is decoded first, as the driver decodes it, so that vgpu sees
//! exactly what the driver will act on; its escape's row of the dispatch
//! table (`src/nv/table.rs`) then says on which nodes vgpu admits it and
//! which handler runs. A command the driver would refuse is refused here
//! with the same `EINVAL`; an escape vgpu does not know never reaches the
//! driver.

use kernel::{
    bindings,
    fs::File,
    mm::virt::VmaNew,
    new_mutex,
    prelude::*,
    sync::{Arc, ArcBorrow},
};

use crate::call::Call;
use crate::file::{self, ProxyFile, ProxyFops, Role};
use crate::kapi::cdevhook;
use crate::kapi::chrdev::{DevT, FileOperations, Poll};
use crate::kapi::user;
use crate::nv::ioctl;
use crate::nv::table::EscapeHandler;
use crate::objects::Objects;
use crate::rm::{self, CtlFile};
use crate::uvm::{self, space::UvmFile, UVM_MINOR};

/// Minor of `/dev/vgpuctl` in vgpu's number range.
pub(crate) const CTL_MINOR: u32 = 0;

/// Opens the proxy file of `dev` for `file`'s opener.
fn open(dev: DevT, file: &File) -> Result<Arc<ProxyFile>> {
    let state = crate::state::get()?;
    let host = state.host.clone();
    let made = |real, role| Arc::new(ProxyFile { real, role, host }, GFP_KERNEL);
    if dev.minor() == CTL_MINOR {
        let vgpus = state.vgpus.for_current()?;
        let ctl = Arc::pin_init(
            pin_init!(CtlFile {
                vgpus,
                objects <- new_mutex!(Objects::default()),
            }),
            GFP_KERNEL,
        )?;
        let real = state.backend.ctl.open(file)?;
        return Ok(made(real, Role::Ctl(ctl))?);
    }
    if dev.minor() == UVM_MINOR {
        // A container's UVM node: only for callers with vGPUs.
        let vgpus = state.vgpus.for_current()?;
        if vgpus.is_empty() {
            return Err(EACCES);
        }
        let real = state.backend.uvm.as_ref().ok_or(ENODEV)?.open(file)?;
        let uvm = UvmFile::new(vgpus, &real)?;
        return Ok(made(real, Role::Uvm(uvm))?);
    }
    let v = state.vgpus.get(dev.minor() - 1).ok_or(ENODEV)?;
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
    Ok(made(real, Role::Gpu(v.clone()))?)
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
    // SAFETY: the caller's contract, passed on.
    unsafe { cdevhook::adopt::<ProxyFops>(filp, DevT::new(state.vgpus.major(), m)) }
}

#[vtable]
impl FileOperations for ProxyFops {
    type OwnerModule = crate::VgpuModule;
    type Private = Arc<ProxyFile>;

    fn open(dev: DevT, file: &File) -> Result<Arc<ProxyFile>> {
        open(dev, file)
    }

    fn ioctl(me: ArcBorrow<'_, ProxyFile>, _file: &File, cmd: u32, arg: usize) -> Result<isize> {
        if let Role::Uvm(u) = &me.role {
            return uvm::ioctl(&me, u, cmd, arg);
        }
        let call = Call::decode(cmd, arg).inspect_err(|_| {
            // An escape vgpu does not know, or the driver's release does
            // not have, never reaches the driver, which answers unknown
            // escapes with EINVAL too; it is counted.
            let rel = crate::nv::release::current();
            if matches!(
                ioctl::decode_with(cmd, |e| rel.escape_rule(e)),
                Err(ioctl::DecodeError::UnknownEscape(_))
            ) {
                me.count_denied();
            }
        })?;
        let row = call.row;
        let ctl = match &me.role {
            Role::Ctl(c) => Some(c),
            _ => None,
        };
        // The row names the nodes vgpu admits the escape on: RM escapes on
        // the ctl node only (the driver would serve them on a GPU node too,
        // for the ctl file it is registered to, but they must pass vgpu's
        // accounting there), REGISTER_FD on GPU nodes only.
        if !row.nodes.admits(ctl.is_some()) {
            return Err(EPERM);
        }
        // An fd inside the parameters that names one of vgpu's proxy files
        // stands for that file's private real file.
        if let Some(off) = row.fd_at {
            if let Some(r) = forward_naming(&me, &call, off)? {
                report_heap_limit(&me, &call, row.handler)?;
                return Ok(r);
            }
        }
        let Some(ctl) = ctl else {
            let r = call.forward(&me.real)?;
            report_heap_limit(&me, &call, row.handler)?;
            return Ok(r);
        };
        let cx = rm::Ctx {
            host: &me.host,
            file: ctl,
            real: &me.real,
            call: &call,
        };
        rm::dispatch(&cx, row.handler)
    }

    fn mmap(me: ArcBorrow<'_, ProxyFile>, _file: &File, vma: &VmaNew) -> Result {
        if let Role::Uvm(u) = &me.role {
            return uvm::mmap(&me, u, vma);
        }
        me.real.mmap(vma)
    }

    fn poll(me: ArcBorrow<'_, ProxyFile>, _file: &File, table: &Poll<'_>) -> u32 {
        me.real.poll(table)
    }
}

/// RM_ALLOC_MEMORY of class 0x40 allocates nothing: it reports the heap as
/// `limit` (size - 1). Through a vGPU node it reports the vGPU's ceiling.
fn report_heap_limit(me: &ProxyFile, call: &Call, h: EscapeHandler) -> Result {
    use crate::nv::abi::{class, status::NV_OK, Nvos02WithFd, Wire};
    let (EscapeHandler::AllocMemory, Some(v)) = (h, me.vgpu()) else {
        return Ok(());
    };
    let mut b = [0u8; Nvos02WithFd::SIZE];
    user::read(call.addr, &mut b)?;
    let mut a = Nvos02WithFd::decode(&b);
    if a.params.status != NV_OK || a.params.h_class != class::NV01_MEMORY_LOCAL_USER {
        return Ok(());
    }
    let ceiling = v.config.lock().memory.limit();
    a.params.limit = a.params.limit.min(ceiling.saturating_sub(1));
    user::write(call.addr, &a.to_bytes())
}

/// If the fd at byte `off` of the call's block names a proxy file, forwards
/// the call with that file's real file in its place (from a kernel copy of
/// the block, see [`crate::kapi::realfile::RealFile::ioctl_block_naming`]);
/// the caller sees its own fd in its block again. `Ok(None)`: the fd is not
/// a proxy file; forward as is.
fn forward_naming(me: &ProxyFile, call: &Call, off: usize) -> Result<Option<isize>> {
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
    let Some(other) = file::of(&f) else {
        return Ok(None);
    };
    let r = me
        .real
        .ioctl_block_naming(&other.real, call.direct_cmd(), blk, off);
    blk[off..off + 4].copy_from_slice(&theirs);
    user::write(call.addr, blk)?;
    r.map(Some)
}

/// The largest block with an embedded fd (NVOS33 and NVOS02 with their fd).
const EMBEDDED_FD_BLOCK_MAX: usize = 64;
