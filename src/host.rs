// SPDX-License-Identifier: GPL-2.0

//! What vgpu learns of the host's GPUs when it loads, and its own client in
//! the driver: the kernel-client interface, a device per GPU, each GPU's
//! UUID and scheduler, and the driver's CARD_INFO records.
//!
//! Handlers reach this through their context, never through a global.

use kernel::{
    prelude::*,
    sync::Arc,
    types::ScopeGuard,
    xarray::{AllocKind, XArray},
};

use crate::kapi::{mm::Scratch, realfile::RealNode, rmops::RmOps, user};
use crate::nv::{
    self,
    abi::{self, Wire},
    ioctl::{self, Escape, CARD_INFO_SIZE},
};
use crate::objects::CtlFile;
use crate::sched::GpuSched;

/// One GPU of the host.
pub(crate) struct HostGpu {
    /// Its index (its `/dev/nvidiaK` minor).
    pub(crate) index: u32,
    /// Its UUID (binary GID), as UVM names GPUs; `None` if the driver would
    /// not tell it (no UVM on it then).
    pub(crate) uuid: Option<nv::uvm::Uuid>,
    /// Its compute scheduler.
    pub(crate) sched: Arc<GpuSched>,
    /// The most VRAM a GR context's buffers can take on it, in bytes, as
    /// the driver tells their sizes ([`gr_context_bound`]); 0 if it would
    /// not tell.
    pub(crate) gr_context_bound: u64,
}

/// The host's GPUs as vgpu's client in the driver sees them.
pub(crate) struct Host {
    /// The driver's kernel-client interface.
    pub(crate) rm: RmOps,
    /// vgpu's own client in the driver (kernel privilege), with a device per
    /// GPU: it holds the duplicates of the USERD memory the schedulers read.
    pub(crate) kclient: u32,
    /// The GPUs, in index order.
    pub(crate) gpus: KVec<HostGpu>,
    /// The host's CARD_INFO records.
    pub(crate) cards: Cards,
    /// Verified clients by handle: the `/dev/vgpuctl` file that verified
    /// each (`src/rm/clients.rs`).
    pub(crate) clients: Pin<KBox<XArray<Arc<CtlFile>>>>,
}

impl Drop for Host {
    fn drop(&mut self) {
        // Frees its devices, duplicates and kernel mappings with it.
        let _ = self.rm.free(self.kclient, self.kclient, self.kclient);
    }
}

impl Host {
    /// Opens vgpu's client and a device on each of GPUs `indices`, asks each
    /// its UUID and reads CARD_INFO through the control node `ctl`.
    pub(crate) fn new(rm: RmOps, ctl: &RealNode, indices: &[u32]) -> Result<Self> {
        let cards = Cards::read(ctl).inspect_err(|e| {
            pr_err!("cannot read CARD_INFO from /dev/nvidiactl ({e:?})\n");
        })?;
        let kclient = rm
            .alloc(0, 0, 0, abi::class::NV01_ROOT, &mut [])
            .map_err(|st| {
                pr_err!("the NVIDIA driver refused vgpu a client ({st:?})\n");
                EIO
            })?;
        let free_kclient = ScopeGuard::new(|| {
            let _ = rm.free(kclient, kclient, kclient);
        });
        let mut gpus = KVec::new();
        for k in indices.iter() {
            let mut p = abi::DeviceAllocParams {
                device_id: *k,
                ..Default::default()
            }
            .to_bytes();
            let kdevice = rm
                .alloc(kclient, kclient, 0, abi::class::NV01_DEVICE_0, &mut p)
                .map_err(|st| {
                    pr_err!("the NVIDIA driver refused vgpu GPU {k} ({st:?})\n");
                    EIO
                })?;
            let uuid = match gpu_uuid(&rm, kclient, kdevice) {
                Ok(u) => Some(u),
                Err(e) => {
                    pr_warn!("GPU {k}: no UUID from the driver ({e:?}): no UVM on it\n");
                    None
                }
            };
            let gr_context_bound = gr_context_bound(&rm, kclient, kdevice);
            gpus.push(
                HostGpu {
                    index: *k,
                    uuid,
                    sched: GpuSched::new(*k, kdevice)?,
                    gr_context_bound,
                },
                GFP_KERNEL,
            )?;
        }
        let clients = KBox::pin_init(XArray::new(AllocKind::Alloc), GFP_KERNEL)?;
        free_kclient.dismiss();
        Ok(Self {
            rm,
            kclient,
            gpus,
            cards,
            clients,
        })
    }

    /// The GPU with UUID `uuid`.
    pub(crate) fn gpu_of_uuid(&self, uuid: &nv::uvm::Uuid) -> Option<u32> {
        self.gpus
            .iter()
            .find(|g| g.uuid.as_ref() == Some(uuid))
            .map(|g| g.index)
    }

    /// Whether the host has a GPU with index `gpu` (one vgpu found at load).
    pub(crate) fn has_gpu(&self, gpu: u32) -> bool {
        self.gpus.iter().any(|g| g.index == gpu)
    }

    /// The bound of a GR context's buffers on GPU `gpu` (0: unknown).
    pub(crate) fn gr_context_bound(&self, gpu: u32) -> u64 {
        self.gpus
            .iter()
            .find(|g| g.index == gpu)
            .map_or(0, |g| g.gr_context_bound)
    }

    /// GPU `gpu`'s scheduler.
    pub(crate) fn sched(&self, gpu: u32) -> Option<&Arc<GpuSched>> {
        self.gpus.iter().find(|g| g.index == gpu).map(|g| &g.sched)
    }

    /// Removes the `gpuK` directories (before their file group goes).
    pub(crate) fn remove_gpu_nodes(&self) {
        for g in self.gpus.iter() {
            drop(g.sched.node.lock().take());
        }
    }
}

/// The most VRAM the GR context buffers of one context can take on the GPU
/// of vgpu's device `kdevice`: for every GR context buffer type
/// (`abi::GR_CONTEXT_BUFFER_TYPES`), its size rounded up to its alignment,
/// and one alignment more, as NV2080_CTRL_CMD_GR_GET_ENGINE_CONTEXT_PROPERTIES
/// tells them on a subdevice of vgpu's own (freed again). RM sizes the
/// buffers from the same static information (`kgraphicsGetMainCtxBufferSize`,
/// `kernel_graphics_context.c:1147` at 550.163.01), and the total it reports
/// for a context pads each run of equal alignments with one alignment more
/// (`kernel_graphics.c:3806-3820`). A type the driver refuses counts 0; a
/// driver that refuses them all gives 0, and compute contexts are then
/// charged only once they exist (`src/rm/alloc.rs`, `gr_object`).
fn gr_context_bound(rm: &RmOps, kclient: u32, kdevice: u32) -> u64 {
    use abi::{class, ctrl, GrEngineContextPropertiesParams, SubdeviceAllocParams};
    let mut sp = SubdeviceAllocParams::default().to_bytes();
    // Freed again when this returns.
    let Ok(sub) = rm.alloc_object(kclient, kdevice, 0, class::NV20_SUBDEVICE_0, &mut sp) else {
        return 0;
    };
    abi::GR_CONTEXT_BUFFER_TYPES
        .iter()
        .map(|&engine_id| {
            let mut p = GrEngineContextPropertiesParams {
                engine_id,
                ..Default::default()
            }
            .to_bytes();
            let asked = rm.control(
                kclient,
                sub.handle(),
                ctrl::NV2080_CTRL_CMD_GR_GET_ENGINE_CONTEXT_PROPERTIES,
                &mut p,
            );
            if asked.is_err() {
                return 0;
            }
            let p = GrEngineContextPropertiesParams::decode(&p);
            let align = u64::from(p.alignment.max(1));
            u64::from(p.size)
                .checked_next_multiple_of(align)
                .and_then(|s| s.checked_add(align))
                .unwrap_or(u64::MAX)
        })
        .fold(0u64, u64::saturating_add)
}

/// GPU `gpu`'s UUID, asked of the driver through vgpu's client (a
/// subdevice of its device `kdevice`, freed again).
fn gpu_uuid(rm: &RmOps, kclient: u32, kdevice: u32) -> Result<nv::uvm::Uuid> {
    use abi::{class, ctrl, GidInfoParams, SubdeviceAllocParams, GID_FLAGS_FORMAT_BINARY};
    let mut sp = SubdeviceAllocParams::default().to_bytes();
    // Freed again when this returns.
    let sub = rm
        .alloc_object(kclient, kdevice, 0, class::NV20_SUBDEVICE_0, &mut sp)
        .map_err(|_| EIO)?;
    let mut p = GidInfoParams {
        flags: GID_FLAGS_FORMAT_BINARY,
        ..Default::default()
    }
    .to_bytes();
    rm.control(
        kclient,
        sub.handle(),
        ctrl::NV2080_CTRL_CMD_GPU_GET_GID_INFO,
        &mut p,
    )
    .map_err(|_| EIO)?;
    let p = GidInfoParams::decode(&p);
    if p.length != 16 {
        return Err(EIO);
    }
    let mut uuid = [0u8; 16];
    uuid.copy_from_slice(&p.data[..16]);
    Ok(uuid)
}

/// The most GPUs the driver lists (`NV_MAX_DEVICES`).
const MAX_CARDS: usize = 32;

/// The driver's CARD_INFO records of the host's GPUs, read once when vgpu
/// loads, from a file and memory of the loading task (trusted), never from
/// a container's.
pub(crate) struct Cards {
    /// The valid records, [`CARD_INFO_SIZE`] bytes each, in the driver's
    /// order.
    records: KVec<u8>,
}

impl Cards {
    /// Asks the driver through the control node `ctl`.
    pub(crate) fn read(ctl: &RealNode) -> Result<Self> {
        let file = ctl.open_as_loader()?;
        let len = MAX_CARDS * CARD_INFO_SIZE;
        let scratch = Scratch::new(len)?;
        file.ioctl(
            ioctl::nv_iowr(Escape::CardInfo.nr(), len),
            scratch.addr() as usize,
        )?;
        let all = user::read_vec(scratch.addr(), len)?;
        let mut records = KVec::new();
        for rec in all.chunks_exact(CARD_INFO_SIZE) {
            if abi::CardInfo::decode(rec).valid != 0 {
                records.extend_from_slice(rec, GFP_KERNEL)?;
            }
        }
        Ok(Self { records })
    }

    /// The number of the host's GPUs.
    pub(crate) fn count(&self) -> usize {
        self.records.len() / CARD_INFO_SIZE
    }

    /// The records.
    pub(crate) fn records(&self) -> impl Iterator<Item = &[u8]> {
        self.records.chunks_exact(CARD_INFO_SIZE)
    }
}
