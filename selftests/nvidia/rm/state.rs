// SPDX-License-Identifier: GPL-2.0

//! The double's resource manager state: clients, their object trees,
//! memory and its VRAM accounting, and the driver that holds them with the
//! fake GPUs' engines. Handlers (the other files of `rm/` and `uvm/`) are
//! methods of [`Driver`]; `table.rs` says which serves what.
//!
//! One mutex guards all RM state, the UVM state included (the double is a
//! correctness reference, not a performance one). Lock order: a UVM file's
//! state, then `current->mm`'s mmap lock (held by the VFS around mmap and VMA
//! callbacks), then RM, then an engine's lock, then a file's event lock. No
//! user memory is touched with the RM lock held (a copy may fault and take
//! the mmap lock, which the UVM VMA callbacks hold when they take RM).

use kernel::{
    new_mutex,
    prelude::*,
    sync::{Arc, Mutex},
};

use crate::base::{ObjKind, StatusResult, MAX_GPUS};
use crate::engine::{Engine, EngineWorker};
use crate::file::NvFile;
use crate::kapi::{kthread::Thread, pid::ProcessPid};
use crate::memory::Backing;
use crate::nv::abi::status::*;

/// First client handle, as RM hands them out.
pub(crate) const CLIENT_HANDLE_BASE: u32 = 0xc1d0_0000;
/// First RM-generated object handle. GUESS: RM's generated handles are
/// opaque; this base only has to differ from client handles.
pub(crate) const OBJECT_HANDLE_BASE: u32 = 0xcaf0_0000;
/// BAR1 aperture reported in CARD_INFO.fb_size and FB info.
pub(crate) const BAR1_SIZE: u64 = 256 << 20;

#[derive(Clone, Copy)]
pub(crate) struct Object {
    pub(crate) handle: u32,
    pub(crate) parent: u32,
    pub(crate) kind: ObjKind,
}

pub(crate) struct Client {
    pub(crate) handle: u32,
    /// The ctl file it is bound to.
    pub(crate) file: u64,
    /// The process (thread group id) that created it: RM stamps
    /// `ProcID = osGetCurrentProcess()` (`current->tgid`) at creation.
    pub(crate) proc: i32,
    /// A reference on that process's `struct pid`, which RM takes for
    /// clients below kernel privilege (`pOsPidInfo = osGetPidInfo()`,
    /// `rmapi/client.c:111-114` at 595.45.04) to number the process in the
    /// PID namespace of whoever asks later; none for kernel clients.
    pub(crate) pid: Option<ProcessPid>,
    pub(crate) objects: KVec<Object>,
    pub(crate) next_handle: u32,
}

pub(crate) struct Mem {
    pub(crate) id: u32,
    pub(crate) gpu: u32,
    pub(crate) size: u64,
    pub(crate) vram: bool,
    /// Handles and UVM mappings holding it; it is freed (and its VRAM
    /// returned) when the last goes.
    pub(crate) refs: u32,
    pub(crate) backing: Option<Arc<Backing>>,
}

/// A kernel client's CPU mapping of memory (NV04_MAP_MEMORY at kernel
/// privilege): it lives until unmapped or until its handle is freed.
pub(crate) struct KMap {
    pub(crate) client: u32,
    pub(crate) handle: u32,
    pub(crate) addr: u64,
    pub(crate) _backing: Arc<Backing>,
}

/// Everything the RM lock guards.
pub(crate) struct Rm {
    pub(crate) clients: KVec<Client>,
    pub(crate) kmaps: KVec<KMap>,
    pub(crate) next_client: u32,
    pub(crate) mems: KVec<Mem>,
    pub(crate) next_mem: u32,
    pub(crate) next_tsg: u32,
    pub(crate) next_token: u32,
    /// VRAM in use per GPU: RM allocations and GPU-resident managed chunks.
    pub(crate) vram_used: [u64; MAX_GPUS],
    /// Per GPU, the client holding its compute-mode reservation (0:
    /// none; `hComputeModeReservation`, `kernel/gpu/gpu.c:431` at
    /// 550.163.01).
    pub(crate) compute_reservation: [u32; MAX_GPUS],
    /// The memory block size SYS_PARAMS set (0: not yet).
    pub(crate) memblock_size: u64,
    /// The nvidia-uvm node's state (VA spaces, their ranges, residency).
    pub(crate) uvm: crate::uvm::state::Uvm,
    /// GPU mappings made by RM_MAP_MEMORY_DMA, of every client.
    pub(crate) dma_maps: KVec<DmaMap>,
    /// CPU mappings made by RM_MAP_MEMORY, of every client.
    pub(crate) cpu_maps: KVec<CpuMap>,
    /// The OS events of ALLOC_OS_EVENT, of every client (RM's
    /// `nv->event_list` on the ctl state).
    pub(crate) os_events: KVec<OsEvent>,
}

/// An OS event (ALLOC_OS_EVENT): RM keys it by its client and a number
/// the caller chooses, `fd`, which RM never looks up as an fd; it is
/// delivered to the file the escape came on (`allocate_os_event`,
/// `osapi.c:468-535` at 550.163.01; `nv.c:680-693`). NV01_EVENT_OS_EVENT
/// objects name it by the same pair (`osUserHandleToKernelPtr`,
/// `os.c:1440-1466`).
#[derive(Clone, Copy)]
pub(crate) struct OsEvent {
    /// `hClient` of the escape (RM's `hParent`).
    pub(crate) client: u32,
    /// The caller's number.
    pub(crate) fd: u32,
    /// The id of the file the escape came on.
    pub(crate) file: u64,
}

/// A CPU mapping of a memory object (RM_MAP_MEMORY): RM's `RsCpuMapping`
/// on the object, with the address RM gave and the process that asked
/// (`resserv/src/rs_resource.c`, `rmapi/mapping_cpu.c` at 550.163.01).
#[derive(Clone, Copy)]
pub(crate) struct CpuMap {
    /// The client of the memory object.
    pub(crate) client: u32,
    /// The memory object.
    pub(crate) memory: u32,
    /// The process that made it.
    pub(crate) proc: i32,
    /// Its address: what RM_MAP_MEMORY returned, until
    /// RM_UPDATE_DEVICE_MAPPING_INFO moves it.
    pub(crate) address: u64,
}

/// A mapping of a memory object into a GPU VA range (RM_MAP_MEMORY_DMA):
/// RM's `CLI_DMA_MAPPING_INFO` on the virtual memory object
/// (`mem_mgr/virtual_mem.c` at 550.163.01).
#[derive(Clone, Copy)]
pub(crate) struct DmaMap {
    /// The client of both objects.
    pub(crate) client: u32,
    /// The NV50_MEMORY_VIRTUAL object mapped into.
    pub(crate) virt: u32,
    /// The memory object mapped.
    pub(crate) memory: u32,
    /// Its GPU virtual address.
    pub(crate) va: u64,
    /// Bytes mapped.
    pub(crate) length: u64,
    /// Where in the memory the mapping starts.
    pub(crate) offset: u64,
}

pub(crate) struct Gpu {
    pub(crate) vram: u64,
    pub(crate) engine: Arc<Engine>,
}

/// The whole driver double.
#[pin_data]
pub(crate) struct Driver {
    pub(crate) gpus: KVec<Gpu>,
    #[pin]
    pub(crate) threads: Mutex<KVec<Thread>>,
    #[pin]
    pub(crate) rm: Mutex<Rm>,
    #[pin]
    pub(crate) next_file: Mutex<u64>,
}

/// Who makes an RM call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Caller {
    /// A process, through the file with this id: clients are bound to it and
    /// the driver checks the caller's fd table.
    File(u64),
    /// A kernel client (`nvidia_get_rm_ops`): kernel privilege, so neither
    /// the client binding nor the fd-table check applies.
    Kernel,
}

impl Caller {
    /// The file a client must be bound to, if any.
    pub(crate) fn binding(self) -> Option<u64> {
        match self {
            Caller::File(id) => Some(id),
            Caller::Kernel => None,
        }
    }

    /// The owner recorded for a client this caller creates (0: the kernel;
    /// file ids start at 2).
    pub(crate) fn owner(self) -> u64 {
        match self {
            Caller::File(id) => id,
            Caller::Kernel => 0,
        }
    }

    pub(crate) fn checks_fds(self) -> bool {
        matches!(self, Caller::File(_))
    }
}

impl Client {
    pub(crate) fn find(&self, h: u32) -> Option<&Object> {
        self.objects.iter().find(|o| o.handle == h)
    }

    pub(crate) fn has(&self, h: u32) -> bool {
        h == self.handle || self.find(h).is_some()
    }

    pub(crate) fn gen_handle(&mut self) -> u32 {
        loop {
            let h = OBJECT_HANDLE_BASE + self.next_handle;
            self.next_handle = self.next_handle.wrapping_add(1);
            if !self.has(h) {
                return h;
            }
        }
    }

    /// The GPU an object belongs to, following parents up to a device.
    pub(crate) fn gpu_of(&self, h: u32) -> Option<u32> {
        let mut h = h;
        for _ in 0..16 {
            let o = self.find(h)?;
            match o.kind {
                ObjKind::Device { gpu }
                | ObjKind::Subdevice { gpu }
                | ObjKind::Tsg { gpu, .. }
                | ObjKind::Channel { gpu, .. }
                | ObjKind::Usermode { gpu, .. }
                | ObjKind::Engine { gpu, .. }
                | ObjKind::VaSpace { gpu, .. } => return Some(gpu),
                _ => h = o.parent,
            }
        }
        None
    }
}

impl Rm {
    /// Drops kernel mappings whose memory handle is gone (freed with its
    /// parent or client): as RM tears them down, the address is then dead.
    pub(crate) fn purge_kmaps(&mut self) {
        let mut i = 0;
        while i < self.kmaps.len() {
            let (c, h) = (self.kmaps[i].client, self.kmaps[i].handle);
            let alive = self
                .client_index(c)
                .is_some_and(|ci| self.clients[ci].has(h));
            if alive {
                i += 1;
            } else {
                let _ = self.kmaps.remove(i);
            }
        }
    }

    pub(crate) fn client_index(&self, h: u32) -> Option<usize> {
        self.clients.iter().position(|c| c.handle == h)
    }

    /// The client `h`, whatever file it is bound to (UVM resolves RM
    /// handles globally).
    pub(crate) fn any_client(&self, h: u32) -> Option<&Client> {
        self.clients.iter().find(|c| c.handle == h)
    }

    /// The client `h`, which must be bound to `file` (unless `file` is
    /// `None`: a kernel client, which may use any client).
    pub(crate) fn client_for(&mut self, h: u32, file: Option<u64>) -> StatusResult<usize> {
        let i = self.client_index(h).ok_or(NV_ERR_INVALID_CLIENT)?;
        if let Some(f) = file {
            if self.clients[i].file != f {
                return Err(NV_ERR_INVALID_CLIENT);
            }
        }
        Ok(i)
    }

    /// Forgets client `client`'s GPU mappings into or of object `h`.
    pub(crate) fn forget_dma_maps(&mut self, client: u32, h: u32) {
        self.dma_maps
            .retain(|m| m.client != client || (m.virt != h && m.memory != h));
        self.cpu_maps
            .retain(|m| m.client != client || m.memory != h);
    }

    pub(crate) fn mem(&mut self, id: u32) -> Option<&mut Mem> {
        self.mems.iter_mut().find(|m| m.id == id)
    }

    pub(crate) fn new_mem(
        &mut self,
        gpu: u32,
        size: u64,
        vram: bool,
        backing: Option<Arc<Backing>>,
    ) -> StatusResult<u32> {
        let id = self.next_mem;
        self.next_mem = self.next_mem.wrapping_add(1);
        self.mems
            .push(
                Mem {
                    id,
                    gpu,
                    size,
                    vram,
                    refs: 1,
                    backing,
                },
                GFP_KERNEL,
            )
            .map_err(|_| NV_ERR_NO_MEMORY)?;
        if vram {
            self.vram_used[gpu as usize] += size;
        }
        Ok(id)
    }

    /// Drops one reference to memory `id`; the last returns its VRAM.
    pub(crate) fn put_mem(&mut self, id: u32) {
        if let Some(i) = self.mems.iter().position(|m| m.id == id) {
            let m = &mut self.mems[i];
            m.refs -= 1;
            if m.refs == 0 {
                if m.vram {
                    let (g, s) = (m.gpu as usize, m.size);
                    self.vram_used[g] -= s;
                }
                let _ = self.mems.remove(i);
            }
        }
    }
}

impl Driver {
    /// Creates the driver with one fake GPU per entry of `vram` (bytes) and
    /// starts their engines.
    pub(crate) fn new(vram: &[u64]) -> Result<Arc<Self>> {
        let mut gpus = KVec::new();
        for &v in vram {
            gpus.push(
                Gpu {
                    vram: v,
                    engine: Engine::new()?,
                },
                GFP_KERNEL,
            )?;
        }
        let drv = Arc::pin_init(
            try_pin_init!(Self {
                gpus,
                threads <- new_mutex!(KVec::new()),
                rm <- new_mutex!(Rm {
                    clients: KVec::new(),
                    kmaps: KVec::new(),
                    next_client: 0,
                    mems: KVec::new(),
                    next_mem: 1,
                    next_tsg: 1,
                    next_token: 1,
                    vram_used: [0; MAX_GPUS],
                    compute_reservation: [0; MAX_GPUS],
                    memblock_size: 0,
                    uvm: crate::uvm::state::Uvm::new(),
                    dma_maps: KVec::new(),
                    os_events: KVec::new(),
                    cpu_maps: KVec::new(),
                }),
                next_file <- new_mutex!(1),
            }),
            GFP_KERNEL,
        )?;
        for (i, g) in drv.gpus.iter().enumerate() {
            let t = Thread::spawn(
                c"nv-double-engine",
                Arc::new(
                    EngineWorker {
                        engine: g.engine.clone(),
                        gpu: i as u32,
                        driver: drv.clone(),
                    },
                    GFP_KERNEL,
                )?,
            )?;
            drv.threads.lock().push(t, GFP_KERNEL)?;
        }
        Ok(drv)
    }

    /// Stops the engine threads. Each holds a reference to the driver (to
    /// apply its engine's managed-memory touches), so this also breaks
    /// that cycle; it must run before the last outside reference goes.
    pub(crate) fn shutdown(&self) {
        let threads = core::mem::take(&mut *self.threads.lock());
        drop(threads);
    }

    /// Number of fake GPUs.
    pub(crate) fn gpu_count(&self) -> usize {
        self.gpus.len()
    }

    /// A fresh file id.
    pub(crate) fn next_file_id(&self) -> u64 {
        let mut n = self.next_file.lock();
        *n += 1;
        *n
    }

    /// A file was closed: free the clients bound to it, stop its events.
    pub(crate) fn file_closed(&self, f: &NvFile) {
        let mut rm = self.rm.lock();
        // Every client bound to the file goes, as RM frees them all at
        // close; one at a time, so that nothing here allocates (a list of
        // them could fail to grow and leave clients, and their VRAM,
        // behind: the fuzz suite's fault injection found the double
        // holding 20 KiB of VRAM vgpu had refunded).
        for _ in 0..rm.clients.len() {
            let Some(h) = rm.clients.iter().find(|c| c.file == f.id).map(|c| c.handle) else {
                break;
            };
            self.free_client(&mut rm, h);
        }
        // Events delivered to this file (allocated by any client).
        rm.os_events.retain(|e| e.file != f.id);
        for g in self.gpus.iter() {
            g.engine.remove_events(None, None, Some(f));
        }
    }
}
