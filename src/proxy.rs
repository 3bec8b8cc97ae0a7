// SPDX-License-Identifier: GPL-2.0

//! The proxy transport: vgpu's nodes and their forwarding to the real driver.
//!
//! Each open of a vgpu node opens a private file of the matching real node
//! (resolved when the module loaded) and forwards ioctl, mmap and poll to it.
//! The command is decoded first, as the driver decodes it, so that vgpu sees
//! exactly what the driver will act on; a command the driver would refuse
//! is refused here with the same `EINVAL`.

use kernel::{
    fs::File,
    mm::virt::VmaNew,
    new_mutex,
    prelude::*,
    sync::{Arc, ArcBorrow},
};

use crate::ctl::Ctl;
use crate::kapi::user;
use crate::kapi::{
    chrdev::{DevT, FileOperations, Poll},
    realfile::{RealFile, RealNode},
};
use crate::nv::ioctl::{self, Escape, Xfer};
use crate::tracker::Tracker;
use crate::uvm::{UvmFile, UVM_MINOR};
use crate::vgpus::Vgpu;

/// Minor of `/dev/vgpuctl` in vgpu's number range.
pub(crate) const CTL_MINOR: u32 = 0;

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
    /// The real node of GPU `gpu`.
    pub(crate) fn gpu(&self, gpu: u32) -> Option<&RealNode> {
        self.gpus.iter().find(|(k, _)| *k == gpu).map(|(_, n)| n)
    }
}

/// State of one open proxy file.
pub(crate) struct ProxyFile {
    /// Its private file of the real driver.
    pub(crate) real: RealFile,
    /// The vGPU, for a `/dev/vgpuN` file.
    pub(crate) vgpu: Option<Arc<Vgpu>>,
    /// For a `/dev/vgpuctl` file: its vGPUs and what it created.
    pub(crate) ctl: Option<Arc<Ctl>>,
    /// For a `/dev/vgpu-uvm` file: what it charged.
    pub(crate) uvm: Option<UvmFile>,
    /// The module state, taken at open so that calls need no global lock.
    pub(crate) state: Arc<crate::State>,
}

impl Drop for ProxyFile {
    fn drop(&mut self) {
        if let Some(v) = &self.vgpu {
            let mut users = v.users.lock();
            *users = users.saturating_sub(1);
        }
        // Its clients leave the module-wide index; its objects go (and are
        // refunded) with the last reference to the `Ctl`.
        if let Some(c) = &self.ctl {
            crate::ctl::forget_clients(c);
        }
    }
}

/// The file operations of vgpu's nodes.
pub(crate) struct ProxyFops;

impl ProxyFile {
    /// Counts a call refused by default deny on the file's vGPUs: the ctl
    /// file's container's, or the GPU node's own.
    fn count_denied(&self) {
        if let Some(c) = &self.ctl {
            c.vgpus.iter().for_each(|v| v.count_denied());
        } else if let Some(v) = &self.vgpu {
            v.count_denied();
        }
    }
}

#[vtable]
impl FileOperations for ProxyFops {
    type OwnerModule = crate::VgpuModule;
    type Private = Arc<ProxyFile>;

    fn open(dev: DevT, file: &File) -> Result<Arc<ProxyFile>> {
        let state = crate::state()?;
        if dev.minor() == CTL_MINOR {
            let vgpus = state.vgpus.for_current()?;
            let ctl = Arc::pin_init(
                pin_init!(Ctl {
                    vgpus,
                    tracker <- new_mutex!(Tracker::default()),
                }),
                GFP_KERNEL,
            )?;
            let real = state.backend.ctl.open(file)?;
            return Ok(Arc::new(
                ProxyFile {
                    real,
                    vgpu: None,
                    ctl: Some(ctl),
                    uvm: None,
                    state: state.clone(),
                },
                GFP_KERNEL,
            )?);
        }
        if dev.minor() == UVM_MINOR {
            // A container's UVM node: only for callers with vGPUs.
            let vgpus = state.vgpus.for_current()?;
            if vgpus.is_empty() {
                return Err(EACCES);
            }
            let real = state.backend.uvm.as_ref().ok_or(ENODEV)?.open(file)?;
            let uvm = UvmFile::new(vgpus, &real)?;
            return Ok(Arc::new(
                ProxyFile {
                    real,
                    vgpu: None,
                    ctl: None,
                    uvm: Some(uvm),
                    state: state.clone(),
                },
                GFP_KERNEL,
            )?);
        }
        let v = state.vgpus.get(dev.minor() - 1).ok_or(ENODEV)?;
        // Users first, then the settings: the order sysfs writers take too.
        let mut users = v.users.lock();
        if !v.admits_current()? {
            return Err(EACCES);
        }
        let gpu = v.config.lock().gpu.ok_or(ENODEV)?;
        let real = state.backend.gpu(gpu).ok_or(ENODEV)?.open(file)?;
        let me = Arc::new(
            ProxyFile {
                real,
                vgpu: Some(v.clone()),
                ctl: None,
                uvm: None,
                state: state.clone(),
            },
            GFP_KERNEL,
        )?;
        *users += 1;
        Ok(me)
    }

    fn ioctl(me: ArcBorrow<'_, ProxyFile>, _file: &File, cmd: u32, arg: usize) -> Result<isize> {
        if let Some(u) = &me.uvm {
            return crate::uvm::ioctl(&me, u, cmd, arg);
        }
        let call = Call::decode(cmd, arg).inspect_err(|_| {
            // An escape vgpu does not know never reaches the driver, which
            // answers unknown escapes with EINVAL too; it is counted.
            if matches!(
                ioctl::decode(cmd),
                Err(ioctl::DecodeError::UnknownEscape(_))
            ) {
                me.count_denied();
            }
        })?;
        // A GPU node takes the GPU-node escapes only. The driver would serve
        // the RM calls there too, for the ctl file it is registered to, but
        // they must go through /dev/vgpuctl, where they are accounted and
        // their answers rewritten (libcuda issues them on the ctl node).
        if me.ctl.is_none() && call.escape.node() == ioctl::Node::Ctl {
            return Err(EPERM);
        }
        // The driver also takes REGISTER_FD on a ctl file (`escape.c:942-944`
        // at 595.45.04): the file would then act for the other ctl file, and
        // clients it creates would be bound to that file and outlive this
        // one, while vgpu keeps and refunds them with this file. libcuda
        // registers GPU files only, so the ctl node refuses it.
        if me.ctl.is_some() && call.escape == Escape::RegisterFd {
            return Err(EPERM);
        }
        // An fd inside the parameters that names one of vgpu's proxy files
        // stands for that file's private real file.
        if let Some(off) = call.escape.embedded_fd() {
            if let Some(r) = forward_naming(&me, &call, off)? {
                if call.escape == Escape::RmAllocMemory {
                    if let Some(v) = &me.vgpu {
                        report_heap_limit(v, call.addr)?;
                    }
                }
                return Ok(r);
            }
        }
        let Some(ctl) = &me.ctl else {
            let r = call.forward(&me.real)?;
            if call.escape == Escape::RmAllocMemory {
                if let Some(v) = &me.vgpu {
                    report_heap_limit(v, call.addr)?;
                }
            }
            return Ok(r);
        };
        match Ctl::escape(ctl, &me.state.rm, &me.real, &call)? {
            Some(r) => Ok(r),
            None => call.forward(&me.real),
        }
    }

    fn mmap(me: ArcBorrow<'_, ProxyFile>, _file: &File, vma: &VmaNew) -> Result {
        if let Some(u) = &me.uvm {
            return crate::uvm::mmap(&me, u, vma);
        }
        me.real.mmap(vma)
    }

    fn poll(me: ArcBorrow<'_, ProxyFile>, _file: &File, table: &Poll<'_>) -> u32 {
        me.real.poll(table)
    }
}

/// RM_ALLOC_MEMORY of class 0x40 allocates nothing: it reports the heap as
/// `limit` (size - 1). Through a vGPU node it reports the vGPU's ceiling.
fn report_heap_limit(v: &Vgpu, addr: u64) -> Result {
    use crate::nv::abi::{class, status::NV_OK, Nvos02WithFd, Wire};
    let mut b = [0u8; Nvos02WithFd::SIZE];
    user::read(addr, &mut b)?;
    let mut a = Nvos02WithFd::decode(&b);
    if a.params.status != NV_OK || a.params.h_class != class::NV01_MEMORY_LOCAL_USER {
        return Ok(());
    }
    let ceiling = v.config.lock().memory.limit();
    a.params.limit = a.params.limit.min(ceiling.saturating_sub(1));
    user::write(addr, &a.to_bytes())
}

/// If the fd at byte `off` of the call's block names a proxy file, forwards
/// the call with that file's real file in its place (from a kernel copy of
/// the block, see [`RealFile::ioctl_block_naming`]); the caller sees its own
/// fd in its block again. `Ok(None)`: the fd is not a proxy file; forward as
/// is.
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
    let Ok(file) = crate::kapi::fdtable::fget(fd) else {
        return Ok(None);
    };
    let Some(other) = crate::kapi::chrdev::private::<ProxyFops>(&file) else {
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

/// An ioctl on a vgpu RM node, decoded as the driver decodes it (XFER
/// unwrapped).
pub(crate) struct Call {
    /// The caller's request word.
    cmd: u32,
    /// The caller's argument.
    arg: usize,
    /// The XFER header the caller sent, if it sent one.
    xfer: Option<[u8; Xfer::SIZE]>,
    /// The escape the driver would run.
    pub(crate) escape: Escape,
    /// User address of the escape's block.
    pub(crate) addr: u64,
    /// Size of the escape's block.
    pub(crate) size: usize,
}

impl Call {
    /// Decodes `cmd`: unknown escapes and wrong sizes are `EINVAL`, as the
    /// driver answers them, and never reach it.
    fn decode(cmd: u32, arg: usize) -> Result<Self> {
        let command = ioctl::decode(cmd).map_err(|_| EINVAL)?;
        if command.escape != Escape::IoctlXferCmd {
            return Ok(Self {
                cmd,
                arg,
                xfer: None,
                escape: command.escape,
                addr: arg as u64,
                size: command.size,
            });
        }
        let mut hdr = [0u8; Xfer::SIZE];
        user::read(arg as u64, &mut hdr)?;
        let x = Xfer::from_bytes(&hdr);
        let inner = x.inner().map_err(|_| EINVAL)?;
        Ok(Self {
            cmd,
            arg,
            xfer: Some(hdr),
            escape: inner.escape,
            addr: x.ptr,
            size: inner.size,
        })
    }

    /// The escape as a plain request word for its block (no XFER).
    fn direct_cmd(&self) -> u32 {
        ioctl::nv_iowr(self.escape.nr(), self.size)
    }

    /// Forwards the call as the caller made it. An XFER header goes from the
    /// copy vgpu decoded, so the driver runs the escape vgpu saw (its block
    /// is read from the caller's memory: vgpu decided nothing on it).
    pub(crate) fn forward(&self, real: &RealFile) -> Result<isize> {
        match self.xfer {
            Some(mut hdr) => real.ioctl_block(self.cmd, &mut hdr),
            None => real.ioctl(self.cmd, self.arg),
        }
    }

    /// Forwards the call with `blk`, vgpu's copy of its block, as the block
    /// the driver reads (from a bounce slot, so no other thread can change
    /// it first); the driver's answer goes to the caller's block and stays
    /// in `blk`. Blocks of the escapes vgpu decides on are small, so the
    /// call goes as a plain request even if the caller wrapped it in XFER.
    pub(crate) fn forward_block(&self, real: &RealFile, blk: &mut [u8]) -> Result<isize> {
        if blk.len() != self.size {
            return Err(EINVAL);
        }
        let r = real.ioctl_block(self.direct_cmd(), blk)?;
        user::write(self.addr, blk)?;
        Ok(r)
    }
}
