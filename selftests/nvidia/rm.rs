// SPDX-License-Identifier: GPL-2.0

//! The double's resource manager: clients, their object trees, VRAM
//! accounting, and the escapes that act on them.
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

use crate::engine::{Engine, EngineWorker};
use crate::file::{self, Kind, MapCtx, NvFile};
use crate::kapi::{fdtable, kthread::Thread, pid::ProcessPid, user};
use crate::memory::{Backing, MAX_BACKED};
use crate::nv::abi::{self, class, ctrl, fb_info, heap, status::*, surface_info, version, Wire};
use crate::nv::ioctl::Escape;
use crate::{release, MAX_GPUS};
use kernel::page::PAGE_SIZE;

/// First client handle, as RM hands them out.
const CLIENT_HANDLE_BASE: u32 = 0xc1d0_0000;
/// First RM-generated object handle. GUESS: RM's generated handles are
/// opaque; this base only has to differ from client handles.
const OBJECT_HANDLE_BASE: u32 = 0xcaf0_0000;
/// The GPU's big page size. GUESS: `kgmmuGetMaxBigPageSize_HAL` is 64 KiB
/// or 128 KiB depending on the GPU; the double's GPUs use 64 KiB.
const BIG_PAGE: u64 = 64 << 10;
/// RM's huge page (`RM_PAGE_SIZE_HUGE`, 2 MiB).
const HUGE_PAGE: u64 = 2 << 20;

/// The page size RM picks for a client's VRAM allocation of `size` bytes
/// with attributes `attr`/`attr2`; the size is rounded up to it. At
/// 595.45.04: an explicit `NVOS32_ATTR_PAGE_SIZE` wins (`mem.c:295-326`:
/// 4KB, BIG, or HUGE with attr2's 2 MiB / 512 MiB / 256 GiB); by default
/// an allocation of 2 MiB or more gets 2 MiB pages (`mem_mgr.c:1760-1765`)
/// and a smaller client allocation the big page (`mem_mgr.c:1766-1772`).
/// `memmgrAllocDetermineAlignment_GM107` rounds the size up to the page
/// (`mem_mgr_gm107.c:240,258`) and `vidmemConstruct` writes the rounded
/// size back into the params (`video_mem.c:824,1075`).
fn vram_page_size(size: u64, attr: u32, attr2: u32) -> u64 {
    match heap::ATTR_PAGE_SIZE.get(attr) {
        heap::ATTR_PAGE_SIZE_4KB => 4 << 10,
        heap::ATTR_PAGE_SIZE_BIG => BIG_PAGE,
        heap::ATTR_PAGE_SIZE_HUGE => match heap::ATTR2_PAGE_SIZE_HUGE.get(attr2) {
            heap::ATTR2_PAGE_SIZE_HUGE_512MB => 512 << 20,
            heap::ATTR2_PAGE_SIZE_HUGE_256GB => 256 << 30,
            _ => HUGE_PAGE,
        },
        _ if size >= HUGE_PAGE => HUGE_PAGE,
        _ => BIG_PAGE,
    }
}
/// BAR1 aperture reported in CARD_INFO.fb_size and FB info.
const BAR1_SIZE: u64 = 256 << 20;

/// The PCI device id the fake GPUs report (an H100 SXM5).
const PCI_DEVICE_ID: u16 = 0x2330;

/// The gpu_id of fake GPU `i`: GUESS (RM derives it from the PCI location);
/// the double uses bus `i + 1`, so `(bus << 8)`.
pub(crate) const fn gpu_id_of(i: u32) -> u32 {
    (i + 1) << 8
}

/// Where a control's nested pointers point: user memory (ioctl callers) or
/// kernel memory (kernel clients).
pub(crate) enum Space {
    /// The calling process's memory.
    User,
    /// Kernel memory, for `nvidia_get_rm_ops` callers.
    Kernel,
}

impl Space {
    fn read(&self, addr: u64, out: &mut [u8]) -> Result {
        match self {
            Space::User => user::read(addr, out),
            Space::Kernel => crate::kclient::kernel_read(addr, out),
        }
    }

    fn write(&self, addr: u64, data: &[u8]) -> Result {
        match self {
            Space::User => user::write(addr, data),
            Space::Kernel => crate::kclient::kernel_write(addr, data),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ObjKind {
    Device {
        gpu: u32,
    },
    Subdevice {
        gpu: u32,
    },
    Memory {
        mem: u32,
    },
    Tsg {
        gpu: u32,
        id: u32,
        /// The VA space handle its alloc params named (0: none).
        vaspace: u32,
    },
    Channel {
        gpu: u32,
        token: u32,
        tsg: u32,
        own_tsg: bool,
        /// The VA space it runs in: its own alloc params', else its context
        /// share's, else its TSG's (0: none).
        vaspace: u32,
    },
    /// FERMI_VASPACE_A, with its allocation flags.
    VaSpace {
        gpu: u32,
        flags: u32,
    },
    /// FERMI_CONTEXT_SHARE_A, with the VA space it named.
    CtxShare {
        vaspace: u32,
    },
    Usermode {
        gpu: u32,
        mem: u32,
    },
    /// An engine object (compute, copy) in a channel: RM's
    /// `ChannelDescendant`, with its class.
    Engine {
        gpu: u32,
        class: u32,
    },
    Other,
}

#[derive(Clone, Copy)]
pub(crate) struct Object {
    handle: u32,
    pub(crate) parent: u32,
    pub(crate) kind: ObjKind,
}

pub(crate) struct Client {
    pub(crate) handle: u32,
    /// The ctl file it is bound to.
    file: u64,
    /// The process (thread group id) that created it: RM stamps
    /// `ProcID = osGetCurrentProcess()` (`current->tgid`) at creation.
    proc: i32,
    /// A reference on that process's `struct pid`, which RM takes for
    /// clients below kernel privilege (`pOsPidInfo = osGetPidInfo()`,
    /// `rmapi/client.c:111-114` at 595.45.04) to number the process in the
    /// PID namespace of whoever asks later; none for kernel clients.
    pid: Option<ProcessPid>,
    objects: KVec<Object>,
    next_handle: u32,
}

pub(crate) struct Mem {
    id: u32,
    pub(crate) gpu: u32,
    pub(crate) size: u64,
    pub(crate) vram: bool,
    /// Handles and UVM mappings holding it; it is freed (and its VRAM
    /// returned) when the last goes.
    pub(crate) refs: u32,
    backing: Option<Arc<Backing>>,
}

/// A kernel client's CPU mapping of memory (NV04_MAP_MEMORY at kernel
/// privilege): it lives until unmapped or until its handle is freed.
struct KMap {
    client: u32,
    handle: u32,
    addr: u64,
    _backing: Arc<Backing>,
}

/// Everything the RM lock guards.
pub(crate) struct Rm {
    clients: KVec<Client>,
    kmaps: KVec<KMap>,
    next_client: u32,
    mems: KVec<Mem>,
    next_mem: u32,
    next_tsg: u32,
    next_token: u32,
    /// VRAM in use per GPU: RM allocations and GPU-resident managed chunks.
    pub(crate) vram_used: [u64; MAX_GPUS],
    /// The memory block size SYS_PARAMS set (0: not yet).
    memblock_size: u64,
    /// The nvidia-uvm node's state (VA spaces, their ranges, residency).
    pub(crate) uvm: crate::uvm::Uvm,
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
    threads: Mutex<KVec<Thread>>,
    #[pin]
    pub(crate) rm: Mutex<Rm>,
    #[pin]
    next_file: Mutex<u64>,
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
    fn binding(self) -> Option<u64> {
        match self {
            Caller::File(id) => Some(id),
            Caller::Kernel => None,
        }
    }

    /// The owner recorded for a client this caller creates (0: the kernel;
    /// file ids start at 2).
    fn owner(self) -> u64 {
        match self {
            Caller::File(id) => id,
            Caller::Kernel => 0,
        }
    }

    fn checks_fds(self) -> bool {
        matches!(self, Caller::File(_))
    }
}

/// An RM-level outcome: `Err(status)` goes into the params' status field.
pub(crate) type RmResult<T = ()> = core::result::Result<T, u32>;

pub(crate) fn status_of(r: RmResult) -> u32 {
    match r {
        Ok(()) => NV_OK,
        Err(s) => s,
    }
}

extern "C" {
    /// `task_tgid_nr(current)` (`exports.c`).
    fn nv_double_current_tgid() -> c_int;
}

/// The calling task's thread group id, as RM's `osGetCurrentProcess()`.
pub(crate) fn current_tgid() -> i32 {
    // SAFETY: no preconditions; reads the calling task's own id.
    unsafe { nv_double_current_tgid() }
}

/// Reads a wire struct of exactly `T::SIZE` bytes from `p`.
fn parse<T: abi::Wire>(p: &[u8]) -> Result<T> {
    if p.len() != T::SIZE {
        return Err(EINVAL);
    }
    Ok(T::decode(p))
}

fn store<T: abi::Wire>(v: &T, p: &mut [u8]) {
    v.encode(p);
}

impl Client {
    pub(crate) fn find(&self, h: u32) -> Option<&Object> {
        self.objects.iter().find(|o| o.handle == h)
    }

    fn has(&self, h: u32) -> bool {
        h == self.handle || self.find(h).is_some()
    }

    fn gen_handle(&mut self) -> u32 {
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

/// Whether `c` is an engine class (compute, copy) of the claimed
/// release's table: what lives in a channel (RM's `ChannelDescendant`).
fn is_engine_class(c: u32) -> bool {
    crate::abi()
        .class_row(c)
        .is_some_and(|r| r.family == crate::nv::table::Family::Engine)
}

/// Whether GET_PID_INFO numbers a client's process in the caller's PID
/// namespace (from 565.57: `_gpuMatchClientPid`, `gpu/gpu_rmapi.c:973-988`
/// at 570.211.01) or compares its host PID (`ProcID == pid`,
/// `gpu_rmapi.c:982-983` at 550.163.01; 535.288.01 likewise).
fn pid_info_in_caller_ns() -> bool {
    let major = crate::release()
        .split('.')
        .next()
        .and_then(|m| m.parse::<u32>().ok())
        .unwrap_or(0);
    major >= 565
}

/// A client's process as the caller's PID namespace numbers it, as
/// `_gpuConvertPid` does (`gpu/gpu_rmapi.c:810-822` at 595.45.04): by its
/// `struct pid` (0 where the namespace cannot see it), else its `ProcID`.
fn ns_pid(c: &Client) -> u32 {
    match &c.pid {
        Some(p) => p.nr_seen_by_caller().max(0) as u32,
        None => c.proc as u32,
    }
}

impl Rm {
    /// GPU_GET_PIDS on GPU `gpu` (`subdeviceCtrlCmdGpuGetPids_IMPL`,
    /// `gpu/subdevice/subdevice_ctrl_gpu_kernel.c:2242-2321`;
    /// `gpuGetProcWithObject_IMPL`, `gpu/gpu_rmapi.c:833-1010`, at
    /// 595.45.04): every client of every process, kernel clients left out,
    /// that has a device on the GPU and an object of class `id` (for
    /// NV20_SUBDEVICE_0, any subdevice; for another class, an engine object
    /// of that class on the GPU), numbered in the caller's PID namespace
    /// (a process it cannot see is left out), each process once, at most
    /// 950. GUESS: RM skips a process already listed by comparing its host
    /// `ProcID` with the namespace PIDs listed; the double compares
    /// namespace PIDs.
    fn get_pids(&self, gpu: u32, p: &mut [u8]) -> RmResult {
        use abi::pids;
        let id_type: u32 = abi::read_field(p, 0);
        let id: u32 = abi::read_field(p, 4);
        match id_type {
            pids::GET_PIDS_ID_TYPE_CLASS => {}
            // No vGPU guests on the double's GPUs.
            pids::GET_PIDS_ID_TYPE_VGPU_GUEST => {
                p[8..12].copy_from_slice(&0u32.to_ne_bytes());
                return Ok(());
            }
            _ => return Err(NV_ERR_INVALID_ARGUMENT),
        }
        let mut n = 0usize;
        for c in self.clients.iter().filter(|c| c.file != 0) {
            if n == pids::GET_PIDS_MAX_COUNT as usize {
                break;
            }
            let on_gpu = c.objects.iter().any(|o| o.kind == ObjKind::Device { gpu });
            let has = c.objects.iter().any(|o| match o.kind {
                ObjKind::Subdevice { .. } => id == class::NV20_SUBDEVICE_0,
                ObjKind::Engine { gpu: g, class } => g == gpu && class == id,
                _ => false,
            });
            if !on_gpu || !has {
                continue;
            }
            let pid = ns_pid(c);
            let listed = (0..n).any(|k| {
                let at = abi::GetPidsParams::PID_TBL + k * 4;
                abi::read_field::<u32>(p, at) == pid
            });
            if pid == 0 || listed {
                continue;
            }
            let at = abi::GetPidsParams::PID_TBL + n * 4;
            p[at..at + 4].copy_from_slice(&pid.to_ne_bytes());
            n += 1;
        }
        p[8..12].copy_from_slice(&(n as u32).to_ne_bytes());
        Ok(())
    }

    /// GPU_GET_PID_INFO on GPU `gpu` (`subdeviceCtrlCmdGpuGetPidInfo_IMPL`,
    /// `subdevice_ctrl_gpu_kernel.c:2328-2400`;
    /// `gpuFindClientInfoWithPidIterator_IMPL` and `_gpuCollectMemInfo`,
    /// `gpu/gpu_rmapi.c` at 595.45.04): for each entry, the video memory
    /// of every client of that process (kernel clients left out) under its
    /// devices on the GPU: VRAM held by one handle is `memPrivate`, by
    /// several `memSharedOwned` (GUESS: RM tells the handle that owns the
    /// memory, `memSharedOwned`, from its duplicates, `memSharedDuped`;
    /// the double does not record which handle came first). A PID no
    /// client has gives zeros, NV_OK.
    fn get_pid_info(&mut self, gpu: u32, p: &mut [u8]) -> RmResult {
        use abi::pids;
        const ENTRY: usize = abi::PidInfo::SIZE;
        let count: u32 = abi::read_field(p, 0);
        if count == 0 || count > pids::GET_PID_INFO_MAX_COUNT {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        let in_ns = pid_info_in_caller_ns();
        for i in 0..count as usize {
            let at = abi::GetPidInfoParams::LIST + i * ENTRY;
            let mut e = abi::PidInfo::decode(&p[at..at + ENTRY]);
            e.compute_instance_id = pids::PARTITION_ID_INVALID;
            e.gpu_instance_id = pids::PARTITION_ID_INVALID;
            if e.index != pids::PID_INFO_INDEX_VIDEO_MEMORY_USAGE {
                e.result = NV_ERR_INVALID_ARGUMENT;
            } else {
                e.clear_usage();
                e.result = if e.pid == 0 {
                    NV_ERR_INVALID_ARGUMENT
                } else {
                    NV_OK
                };
                for ci in 0..self.clients.len() {
                    let c = &self.clients[ci];
                    let pid = if in_ns { ns_pid(c) } else { c.proc as u32 };
                    if e.pid == 0 || c.file == 0 || pid != e.pid {
                        continue;
                    }
                    let mut mems = KVec::new();
                    for o in c.objects.iter() {
                        if let ObjKind::Memory { mem } = o.kind {
                            if c.gpu_of(o.parent) == Some(gpu) {
                                mems.push(mem, GFP_KERNEL).map_err(|_| NV_ERR_NO_MEMORY)?;
                            }
                        }
                    }
                    for mem in mems {
                        if let Some(m) = self.mem(mem).filter(|m| m.vram) {
                            if m.refs > 1 {
                                e.mem_shared_owned += m.size;
                            } else {
                                e.mem_private += m.size;
                            }
                        }
                    }
                }
            }
            e.encode(&mut p[at..at + ENTRY]);
        }
        Ok(())
    }

    /// Drops kernel mappings whose memory handle is gone (freed with its
    /// parent or client): as RM tears them down, the address is then dead.
    fn purge_kmaps(&mut self) {
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

    fn client_index(&self, h: u32) -> Option<usize> {
        self.clients.iter().position(|c| c.handle == h)
    }

    /// The client `h`, whatever file it is bound to (UVM resolves RM
    /// handles globally).
    pub(crate) fn any_client(&self, h: u32) -> Option<&Client> {
        self.clients.iter().find(|c| c.handle == h)
    }

    /// The client `h`, which must be bound to `file` (unless `file` is
    /// `None`: a kernel client, which may use any client).
    fn client_for(&mut self, h: u32, file: Option<u64>) -> RmResult<usize> {
        let i = self.client_index(h).ok_or(NV_ERR_INVALID_CLIENT)?;
        if let Some(f) = file {
            if self.clients[i].file != f {
                return Err(NV_ERR_INVALID_CLIENT);
            }
        }
        Ok(i)
    }

    pub(crate) fn mem(&mut self, id: u32) -> Option<&mut Mem> {
        self.mems.iter_mut().find(|m| m.id == id)
    }

    fn new_mem(
        &mut self,
        gpu: u32,
        size: u64,
        vram: bool,
        backing: Option<Arc<Backing>>,
    ) -> RmResult<u32> {
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

/// The heap of a GPU with `vram` bytes.
pub(crate) fn heap_size(vram: u64) -> u64 {
    // GUESS: real boards reserve part of VRAM for RM (RAM_SIZE > HEAP_SIZE).
    // The double reserves 1/64 so readers that confuse the two are caught.
    vram - vram / 64
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
                    memblock_size: 0,
                    uvm: crate::uvm::Uvm::new(),
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
        for g in self.gpus.iter() {
            g.engine.remove_events(None, Some(f));
        }
    }

    /// Serves one escape on file `f` with its parameter block `p` (already
    /// copied in; copied back out on `Ok`). OS-level failures are `Err`;
    /// RM-level ones go into the block's status field.
    pub(crate) fn escape(&self, f: &NvFile, esc: Escape, p: &mut [u8]) -> Result {
        match esc {
            Escape::CheckVersionStr => self.check_version(p),
            Escape::CardInfo => self.card_info(f, p),
            Escape::RegisterFd => self.register_fd(f, p),
            Escape::RmAlloc => self.ioctl_alloc(f, p),
            Escape::RmFree => {
                let mut a: abi::Nvos00 = parse(p)?;
                let mut rm = self.rm.lock();
                a.status =
                    status_of(self.free(&mut rm, a.h_root, a.h_object_old, Some(f.client_id())));
                store(&a, p);
                Ok(())
            }
            Escape::RmControl => {
                let mut a: abi::Nvos54 = parse(p)?;
                a.status = status_of(self.control(&a, Some(f.client_id()), &Space::User));
                store(&a, p);
                Ok(())
            }
            Escape::RmVidHeapControl => self.vid_heap(f, p),
            Escape::RmAllocMemory => self.alloc_memory(f, p),
            Escape::RmMapMemory => self.map_memory(f, p),
            Escape::RmUnmapMemory => {
                let mut a: abi::Nvos34 = parse(p)?;
                let mut rm = self.rm.lock();
                a.status = match rm.client_for(a.h_client, Some(f.client_id())) {
                    Ok(_) => NV_OK,
                    Err(s) => s,
                };
                store(&a, p);
                Ok(())
            }
            Escape::RmDupObject => self.dup(f, p),
            Escape::AllocOsEvent => self.os_event(f, p, true),
            Escape::FreeOsEvent => self.os_event(f, p, false),
            Escape::SysParams => {
                // An input, on the ctl node only (`nv.c:2702-2725` at
                // 595.45.04): the driver keeps the first memory block size
                // it is given (0 leaves it unset) and answers a later call
                // with another value `-EBUSY`; nothing is written back.
                if f.kind != Kind::Ctl {
                    return Err(EINVAL);
                }
                let want = u64::from_ne_bytes(p.try_into().map_err(|_| EINVAL)?);
                let mut rm = self.rm.lock();
                if rm.memblock_size == 0 {
                    rm.memblock_size = want;
                    Ok(())
                } else if rm.memblock_size == want {
                    Ok(())
                } else {
                    Err(EBUSY)
                }
            }
            Escape::WaitOpenComplete => {
                p.fill(0);
                Ok(())
            }
            Escape::NumaInfo => self.numa_info(f, p),
            Escape::AttachGpusToFd | Escape::StatusCode => Ok(()),
            // Known escapes the double does not model.
            _ => Err(EINVAL),
        }
    }

    /// NUMA_INFO (`nv.c:2728-2752` at 595.45.04, `nv.c:2241-2283` at
    /// 535.288.01, the same at every supported tag): on a GPU node only
    /// (`NV_ACTUAL_DEVICE_ONLY`, else `EINVAL`). The double's GPUs are PCIe
    /// GPUs without coherent memory, for which RM's FB_GET_NUMA_INFO gives
    /// no node: `nid` -1 (`NV0000_CTRL_NO_NUMA_NODE`), no memory range, no
    /// offline address, the status DISABLED (0) and no auto-online; the
    /// memory block size is what SYS_PARAMS set (`nv_ctl_device`). From 550
    /// on a caller's `numEntries` over 64 is RM's INVALID_ARGUMENT, `EBUSY`
    /// to the caller (`osapi.c:5250-5255` at 595.45.04); 535's `nv.c` sets
    /// it to 64 itself first. The block (`nv-ioctl-numa.h:56-65`): `nid`
    /// at 0, `status` 4, `memblock_size` 8, `numa_mem_addr` 16,
    /// `numa_mem_size` 24, `use_auto_online` 32, the 64 offline addresses
    /// at 40 and their count at 552; 560 bytes.
    fn numa_info(&self, f: &NvFile, p: &mut [u8]) -> Result {
        const MAX_OFFLINE: u32 = 64;
        const COUNT_AT: usize = 552;
        if f.kind == Kind::Ctl || p.len() != 560 {
            return Err(EINVAL);
        }
        let count = u32::from_ne_bytes([
            p[COUNT_AT],
            p[COUNT_AT + 1],
            p[COUNT_AT + 2],
            p[COUNT_AT + 3],
        ]);
        if !release().starts_with("535.") && count > MAX_OFFLINE {
            return Err(EBUSY);
        }
        let memblock = self.rm.lock().memblock_size;
        p.fill(0);
        p[0..4].copy_from_slice(&(-1i32).to_ne_bytes());
        p[8..16].copy_from_slice(&memblock.to_ne_bytes());
        Ok(())
    }

    fn check_version(&self, p: &mut [u8]) -> Result {
        let mut v: abi::RmApiVersion = parse(p)?;
        v.reply = version::REPLY_RECOGNIZED;
        let ours = release().as_bytes();
        let theirs = {
            let s = &v.version_string;
            let n = s.iter().position(|&b| b == 0).unwrap_or(s.len());
            &s[..n]
        };
        let ok = match v.cmd {
            version::CMD_QUERY => {
                v.version_string = [0; version::STRING_LENGTH];
                v.version_string[..ours.len()].copy_from_slice(ours);
                true
            }
            version::CMD_RELAXED => {
                let major = |s: &[u8]| s.iter().position(|&b| b == b'.').map_or(s.len(), |i| i);
                ours[..major(ours)] == theirs[..major(theirs)]
            }
            _ => theirs == ours,
        };
        store(&v, p);
        if ok {
            Ok(())
        } else {
            Err(EINVAL)
        }
    }

    fn card_info(&self, f: &NvFile, p: &mut [u8]) -> Result {
        if f.kind != Kind::Ctl {
            return Err(EINVAL);
        }
        let n = p.len() / crate::nv::ioctl::CARD_INFO_SIZE;
        if n < self.gpus.len() {
            return Err(EINVAL);
        }
        p.fill(0);
        for (i, g) in self.gpus.iter().enumerate() {
            let mut ci = abi::CardInfo {
                valid: 1,
                gpu_id: gpu_id_of(i as u32),
                interrupt_line: 0,
                reg_address: 0xf000_0000 + ((i as u64) << 24),
                reg_size: 16 << 20,
                fb_address: 0x38_0000_0000 + ((i as u64) << 36),
                fb_size: BAR1_SIZE.min(g.vram),
                minor_number: i as u32,
                ..Default::default()
            };
            let at = crate::procfs::pci_location(i as u32);
            ci.pci_info.domain = at.domain;
            ci.pci_info.bus = at.bus;
            ci.pci_info.slot = at.slot;
            ci.pci_info.vendor_id = 0x10de;
            ci.pci_info.device_id = PCI_DEVICE_ID;
            let off = i * abi::CardInfo::SIZE;
            store(&ci, &mut p[off..off + abi::CardInfo::SIZE]);
        }
        Ok(())
    }

    /// REGISTER_FD, as `RmIoctl` serves it at 595.45.04 (`escape.c:915-1004`):
    /// valid on a ctl file as on a GPU file (`escape.c:942-944`); once per
    /// file (`escape.c:932-939`); the fd must be an open ctl file
    /// (`escape.c:946-955`), not the file itself and not a file that is
    /// registered in turn (`escape.c:958-966`). Every refusal is an RM error,
    /// which the ioctl returns as `-EINVAL` (`nv.c:2853-2854`).
    fn register_fd(&self, f: &NvFile, p: &mut [u8]) -> Result {
        let r: abi::RegisterFd = parse(p)?;
        let ctl = fdtable::fget(r.ctl_fd).map_err(|_| EINVAL)?;
        let ctl = file::nv_file(&ctl).ok_or(EINVAL)?;
        if ctl.kind != Kind::Ctl || ctl.id == f.id {
            return Err(EINVAL);
        }
        // The RM lock serialises registrations, as the driver's API lock
        // does: two files cannot register to each other at once. One
        // `registered` lock at a time (RM, then a file's: the usual order).
        let _rm = self.rm.lock();
        if ctl.registered.lock().is_some() {
            return Err(EINVAL);
        }
        let mut reg = f.registered.lock();
        if reg.is_some() {
            return Err(EINVAL);
        }
        *reg = Some(ctl.id);
        Ok(())
    }

    fn ioctl_alloc(&self, f: &NvFile, p: &mut [u8]) -> Result {
        // Both layouts carry the same fields; NVOS64 adds rights and flags.
        // `paramsSize` is not among them: RM ignores it (below).
        let (h_root, h_parent, h_new, h_class, pparams) = match p.len() {
            abi::Nvos21::SIZE => {
                let a: abi::Nvos21 = parse(p)?;
                (
                    a.h_root,
                    a.h_object_parent,
                    a.h_object_new,
                    a.h_class,
                    a.p_alloc_parms,
                )
            }
            _ => {
                let a: abi::Nvos64 = parse(p)?;
                (
                    a.h_root,
                    a.h_object_parent,
                    a.h_object_new,
                    a.h_class,
                    a.p_alloc_parms,
                )
            }
        };
        let mut params = KVec::new();
        let r = alloc_params(h_class, pparams, &Space::User, &mut params).and_then(|()| {
            self.alloc(
                Caller::File(f.client_id()),
                h_root,
                h_parent,
                h_new,
                h_class,
                &mut params,
            )
        });
        let (h_out, st) = match r {
            Ok(h) => (h, NV_OK),
            Err(s) => (h_new, s),
        };
        if st == NV_OK && pparams != 0 && !params.is_empty() {
            // Alloc params are in/out (e.g. the VRAM size rounded up): RM
            // copies the class's params back (`alloc_free.c:205-214`).
            user::write(pparams, &params)?;
        }
        // RmIoctl forces a user's client allocation to NV01_ROOT_CLIENT in
        // the block it copies back (`escape.c:386-396` at 550.163.01).
        let class_out = if class::is_client_class(h_class) {
            class::NV01_ROOT_CLIENT
        } else {
            h_class
        };
        match p.len() {
            abi::Nvos21::SIZE => {
                let mut a: abi::Nvos21 = parse(p)?;
                a.h_object_new = h_out;
                a.h_class = class_out;
                a.status = st;
                store(&a, p);
            }
            _ => {
                let mut a: abi::Nvos64 = parse(p)?;
                a.h_object_new = h_out;
                a.h_class = class_out;
                a.status = st;
                store(&a, p);
            }
        }
        Ok(())
    }

    /// Allocates an object; returns its handle. `check_fds`: apply the
    /// caller-fd-table check (user callers).
    #[allow(clippy::too_many_arguments)]
    fn alloc(
        &self,
        caller: Caller,
        h_root: u32,
        h_parent: u32,
        h_new: u32,
        h_class: u32,
        params: &mut [u8],
    ) -> RmResult<u32> {
        let mut rm = self.rm.lock();
        if matches!(
            h_class,
            class::NV01_ROOT | class::NV01_ROOT_NON_PRIV | class::NV01_ROOT_CLIENT
        ) {
            // RM takes a requested client handle from hRoot; hObjectNew
            // is only written back (`entry_points.c:241` ->
            // `alloc_free.c:576` -> `rs_server.c:612`, `alloc_free.c:591`
            // at 595.45.04; the same at 550.163.01 and 535.261.03,
            // measured against the real driver). A handle in use:
            // NV_ERR_INSERT_DUPLICATE_NAME (`rs_server.c:2508-2512` at
            // 550.163.01).
            let handle = if h_root != 0 {
                if rm.client_index(h_root).is_some() {
                    return Err(NV_ERR_INSERT_DUPLICATE_NAME);
                }
                h_root
            } else {
                loop {
                    let h = CLIENT_HANDLE_BASE + rm.next_client;
                    rm.next_client = rm.next_client.wrapping_add(1) & 0xfffff;
                    if rm.client_index(h).is_none() {
                        break h;
                    }
                }
            };
            rm.clients
                .push(
                    Client {
                        handle,
                        file: caller.owner(),
                        proc: current_tgid(),
                        pid: match caller {
                            Caller::File(_) => ProcessPid::current().ok(),
                            Caller::Kernel => None,
                        },
                        objects: KVec::new(),
                        next_handle: 0,
                    },
                    GFP_KERNEL,
                )
                .map_err(|_| NV_ERR_NO_MEMORY)?;
            return Ok(handle);
        }

        // No such client: RM's lookup of the client fails before any
        // binding check (`_serverLockClient` -> `_serverFindClientEntry`,
        // `rs_server.c:2590-2593, 2322-2336` at 550.163.01).
        if rm.client_index(h_root).is_none() {
            return Err(NV_ERR_INVALID_OBJECT_HANDLE);
        }
        let ci = rm.client_for(h_root, caller.binding())?;
        if !rm.clients[ci].has(h_parent) {
            return Err(NV_ERR_INVALID_OBJECT_PARENT);
        }
        let handle = if h_new == 0 {
            rm.clients[ci].gen_handle()
        } else if rm.clients[ci].has(h_new) {
            return Err(NV_ERR_INVALID_OBJECT_NEW);
        } else {
            h_new
        };
        let parent_kind = rm.clients[ci].find(h_parent).map(|o| o.kind);
        let parent_gpu = rm.clients[ci].gpu_of(h_parent);

        let kind = match h_class {
            class::NV01_DEVICE_0 => {
                if h_parent != h_root {
                    return Err(NV_ERR_INVALID_OBJECT_PARENT);
                }
                // No params (a NULL pointer): the defaults, device 0.
                let dp: abi::DeviceAllocParams = if params.is_empty() {
                    abi::DeviceAllocParams::default()
                } else {
                    parse_params(params)?
                };
                let gpu = dp.device_id;
                if gpu as usize >= self.gpus.len() {
                    return Err(absent_device_status(gpu));
                }
                if caller.checks_fds()
                    && !fdtable::current_has_file(|file| file::is_gpu_file(file, gpu))
                {
                    return Err(NV_ERR_INSUFFICIENT_PERMISSIONS);
                }
                ObjKind::Device { gpu }
            }
            class::NV20_SUBDEVICE_0 => match parent_kind {
                Some(ObjKind::Device { gpu }) => ObjKind::Subdevice { gpu },
                _ => return Err(NV_ERR_INVALID_OBJECT_PARENT),
            },
            class::NV01_MEMORY_LOCAL_USER | class::NV01_MEMORY_SYSTEM => {
                let gpu = parent_gpu.ok_or(NV_ERR_INVALID_OBJECT_PARENT)?;
                let mut mp: abi::MemoryAllocationParams = parse_class_params(params)?;
                let vram = h_class == class::NV01_MEMORY_LOCAL_USER && mp.allocates_vram();
                if mp.size == 0 {
                    return Err(NV_ERR_INVALID_ARGUMENT);
                }
                let mem = if vram {
                    let size = mp
                        .size
                        .checked_next_multiple_of(vram_page_size(mp.size, mp.attr, mp.attr2))
                        .ok_or(NV_ERR_NO_MEMORY)?;
                    let heap = heap_size(self.gpus[gpu as usize].vram);
                    if rm.vram_used[gpu as usize] + size > heap {
                        return Err(NV_ERR_NO_MEMORY);
                    }
                    mp.size = size;
                    rm.new_mem(gpu, size, true, None)?
                } else if h_class == class::NV01_MEMORY_SYSTEM {
                    let size = mp
                        .size
                        .checked_next_multiple_of(4096)
                        .ok_or(NV_ERR_NO_MEMORY)?;
                    if size > MAX_BACKED {
                        return Err(NV_ERR_INSUFFICIENT_RESOURCES);
                    }
                    let b = Backing::new(size).map_err(|_| NV_ERR_NO_MEMORY)?;
                    let b = Arc::new(b, GFP_KERNEL).map_err(|_| NV_ERR_NO_MEMORY)?;
                    mp.size = size;
                    rm.new_mem(gpu, size, false, Some(b))?
                } else {
                    // 0x40 that is virtual or not in VIDMEM: no VRAM committed.
                    rm.new_mem(gpu, mp.size, false, None)?
                };
                store(&mp, params);
                ObjKind::Memory { mem }
            }
            class::NV50_MEMORY_VIRTUAL | class::NV01_MEMORY_VIRTUAL => {
                parent_gpu.ok_or(NV_ERR_INVALID_OBJECT_PARENT)?;
                ObjKind::Other
            }
            class::FERMI_VASPACE_A => {
                let gpu = parent_gpu.ok_or(NV_ERR_INVALID_OBJECT_PARENT)?;
                // The params are the class's size (see `alloc_params`).
                let flags =
                    parse_class_params::<abi::VaSpaceAllocParams>(params).map_or(0, |v| v.flags);
                ObjKind::VaSpace { gpu, flags }
            }
            class::FERMI_CONTEXT_SHARE_A => {
                parent_gpu.ok_or(NV_ERR_INVALID_OBJECT_PARENT)?;
                let vaspace =
                    parse_params::<abi::CtxShareAllocParams>(params).map_or(0, |c| c.h_va_space);
                ObjKind::CtxShare { vaspace }
            }
            class::KEPLER_CHANNEL_GROUP_A => {
                let gpu = match parent_kind {
                    Some(ObjKind::Device { gpu }) => gpu,
                    _ => return Err(NV_ERR_INVALID_OBJECT_PARENT),
                };
                let vaspace = parse_params::<abi::ChannelGroupAllocParams>(params)
                    .map_or(0, |t| t.h_va_space);
                let id = rm.next_tsg;
                rm.next_tsg += 1;
                let client = rm.clients[ci].handle;
                self.gpus[gpu as usize]
                    .engine
                    .add_tsg(id, client)
                    .map_err(|_| NV_ERR_NO_MEMORY)?;
                ObjKind::Tsg { gpu, id, vaspace }
            }
            c if class::is_channel_class(c) => {
                let (gpu, tsg, own_tsg, tsg_vaspace) = match parent_kind {
                    Some(ObjKind::Tsg { gpu, id, vaspace }) => (gpu, id, false, vaspace),
                    Some(ObjKind::Device { gpu }) => {
                        // A channel outside a TSG gets an internal TSG of its own.
                        let id = rm.next_tsg;
                        rm.next_tsg += 1;
                        let client = rm.clients[ci].handle;
                        self.gpus[gpu as usize]
                            .engine
                            .add_tsg(id, client)
                            .map_err(|_| NV_ERR_NO_MEMORY)?;
                        (gpu, id, true, 0)
                    }
                    _ => return Err(NV_ERR_INVALID_OBJECT_PARENT),
                };
                let cp: abi::ChannelAllocParams = match parse_class_params(params) {
                    Ok(cp) => cp,
                    Err(s) => {
                        if own_tsg {
                            self.gpus[gpu as usize].engine.remove_tsg(tsg);
                        }
                        return Err(s);
                    }
                };
                let ring = match cp.h_userd_memory[0] {
                    0 => None,
                    h => {
                        let b = match rm.clients[ci].find(h).map(|o| o.kind) {
                            Some(ObjKind::Memory { mem }) => {
                                rm.mem(mem).and_then(|m| m.backing.clone())
                            }
                            _ => None,
                        };
                        let off = cp.userd_offset[0] as usize;
                        let need =
                            crate::engine::RING_ENTRIES_OFFSET + cp.gp_fifo_entries as usize * 8;
                        match b {
                            Some(b) if off % 8 == 0 && off + need <= b.len() => Some((b, off)),
                            _ => {
                                if own_tsg {
                                    self.gpus[gpu as usize].engine.remove_tsg(tsg);
                                }
                                return Err(NV_ERR_INVALID_ARGUMENT);
                            }
                        }
                    }
                };
                let token = rm.next_token;
                rm.next_token += 1;
                let engine = &self.gpus[gpu as usize].engine;
                if engine
                    .add_channel(tsg, token, ring, cp.gp_fifo_entries)
                    .is_err()
                {
                    if own_tsg {
                        engine.remove_tsg(tsg);
                    }
                    return Err(NV_ERR_NO_MEMORY);
                }
                let ctx_vaspace = match rm.clients[ci].find(cp.h_context_share).map(|o| o.kind) {
                    Some(ObjKind::CtxShare { vaspace }) if cp.h_context_share != 0 => vaspace,
                    _ => 0,
                };
                let vaspace = [cp.h_va_space, ctx_vaspace, tsg_vaspace]
                    .into_iter()
                    .find(|&h| h != 0)
                    .unwrap_or(0);
                ObjKind::Channel {
                    gpu,
                    token,
                    tsg,
                    own_tsg,
                    vaspace,
                }
            }
            class::TURING_USERMODE_A | class::AMPERE_USERMODE_A | class::HOPPER_USERMODE_A => {
                let gpu = match parent_kind {
                    Some(ObjKind::Subdevice { gpu }) => gpu,
                    _ => return Err(NV_ERR_INVALID_OBJECT_PARENT),
                };
                let b = Backing::new(64 << 10).map_err(|_| NV_ERR_NO_MEMORY)?;
                let b = Arc::new(b, GFP_KERNEL).map_err(|_| NV_ERR_NO_MEMORY)?;
                self.gpus[gpu as usize]
                    .engine
                    .add_usermode(b.clone())
                    .map_err(|_| NV_ERR_NO_MEMORY)?;
                let mem = rm.new_mem(gpu, 64 << 10, false, Some(b))?;
                ObjKind::Usermode { gpu, mem }
            }
            // RM_USER_SHARED_DATA: a page of telemetry (not modelled: the
            // double maps nothing for it). Its `polledDataMask` (8 bytes;
            // 4 reserved ones before 550) is recorded for the tests.
            // Parent: a subdevice (`resource_list.h:844`).
            abi::rusd::CLASS => {
                if !matches!(parent_kind, Some(ObjKind::Subdevice { .. })) {
                    return Err(NV_ERR_INVALID_OBJECT_PARENT);
                }
                let mut m = [0u8; 8];
                let n = params.len().min(8);
                m[..n].copy_from_slice(&params[..n]);
                crate::RUSD_POLLED
                    .fetch_or(u64::from_ne_bytes(m), core::sync::atomic::Ordering::Relaxed);
                ObjKind::Other
            }
            // An engine object of the release's (compute, copy), in a
            // channel. GUESS: RM accepts only the GPU's own engine classes;
            // the double takes every engine class its release's table has.
            c if is_engine_class(c) => match parent_kind {
                Some(ObjKind::Channel { gpu, .. }) => ObjKind::Engine { gpu, class: c },
                _ => return Err(NV_ERR_INVALID_OBJECT_PARENT),
            },
            _ => return Err(NV_ERR_INVALID_CLASS),
        };
        let obj = Object {
            handle,
            parent: h_parent,
            kind,
        };
        if rm.clients[ci].objects.push(obj, GFP_KERNEL).is_err() {
            self.release_object(&mut rm, obj);
            return Err(NV_ERR_NO_MEMORY);
        }
        Ok(handle)
    }

    /// Undoes what an object holds outside the client's list.
    fn release_object(&self, rm: &mut Rm, o: Object) {
        match o.kind {
            ObjKind::Memory { mem } => rm.put_mem(mem),
            ObjKind::Usermode { gpu, mem } => {
                if let Some(b) = rm.mem(mem).and_then(|m| m.backing.clone()) {
                    self.gpus[gpu as usize].engine.remove_usermode(&b);
                }
                rm.put_mem(mem);
            }
            ObjKind::Tsg { gpu, id, .. } => self.gpus[gpu as usize].engine.remove_tsg(id),
            ObjKind::Channel {
                gpu,
                token,
                tsg,
                own_tsg,
                ..
            } => {
                let e = &self.gpus[gpu as usize].engine;
                e.remove_channel(token);
                if own_tsg {
                    e.remove_tsg(tsg);
                }
            }
            _ => {}
        }
    }

    fn free_client(&self, rm: &mut Rm, h: u32) {
        let Some(i) = rm.client_index(h) else {
            return;
        };
        let Ok(client) = rm.clients.remove(i) else {
            return;
        };
        // Children before parents: release in reverse allocation order.
        for o in client.objects.iter().rev() {
            self.release_object(rm, *o);
        }
        for g in self.gpus.iter() {
            g.engine.remove_events(Some(h), None);
        }
        rm.purge_kmaps();
    }

    /// RM_FREE: frees a client (its root handle) or an object and its subtree.
    fn free(&self, rm: &mut Rm, h_client: u32, h_obj: u32, file: Option<u64>) -> RmResult {
        // No such client: RM's client lookup fails first
        // (`serverFreeResourceTree` -> `_serverLockClientWithLockInfo`,
        // `rs_server.c:1059-1061` at 550.163.01), client frees included.
        if rm.client_index(h_client).is_none() {
            return Err(NV_ERR_INVALID_OBJECT_HANDLE);
        }
        let ci = rm.client_for(h_client, file)?;
        if h_obj == h_client {
            self.free_client(rm, h_client);
            return Ok(());
        }
        if rm.clients[ci].find(h_obj).is_none() {
            // RM is built with RS_COMPATABILITY_MODE: freeing an object
            // the client does not have succeeds and frees nothing
            // (`rs_server.c:1072-1081` at 550.163.01; measured on the real
            // driver).
            return Ok(());
        }
        // Collect the subtree: repeat until no object has a parent in the set.
        let mut doomed: KVec<u32> = KVec::new();
        doomed
            .push(h_obj, GFP_KERNEL)
            .map_err(|_| NV_ERR_NO_MEMORY)?;
        loop {
            let mut grew = false;
            for o in rm.clients[ci].objects.iter() {
                if doomed.contains(&o.parent) && !doomed.contains(&o.handle) {
                    doomed
                        .push(o.handle, GFP_KERNEL)
                        .map_err(|_| NV_ERR_NO_MEMORY)?;
                    grew = true;
                }
            }
            if !grew {
                break;
            }
        }
        // Release children first (reverse order of discovery).
        for h in doomed.iter().rev() {
            let objs = &mut rm.clients[ci].objects;
            if let Some(pos) = objs.iter().position(|o| o.handle == *h) {
                let o = objs.remove(pos).map_err(|_| NV_ERR_GENERIC)?;
                self.release_object(rm, o);
            }
        }
        rm.purge_kmaps();
        Ok(())
    }

    /// A kernel client's NV04_MAP_MEMORY: a kernel address for `length`
    /// bytes at `offset` of memory object `h_memory`.
    ///
    /// GUESS: the double maps only system memory, within one page (what a
    /// kernel client reads: USERD words, notifiers); RM maps any memory.
    pub(crate) fn kernel_map(&self, a: &abi::Nvos33) -> RmResult<u64> {
        let mut rm = self.rm.lock();
        let ci = rm.client_for(a.h_client, None)?;
        if !rm.clients[ci].has(a.h_device) {
            return Err(NV_ERR_INVALID_OBJECT_HANDLE);
        }
        let mem = match rm.clients[ci].find(a.h_memory).map(|o| o.kind) {
            Some(ObjKind::Memory { mem }) => mem,
            _ => return Err(NV_ERR_INVALID_OBJECT_HANDLE),
        };
        let backing = rm
            .mem(mem)
            .and_then(|m| m.backing.clone())
            .ok_or(NV_ERR_NOT_SUPPORTED)?;
        let page =
            usize::try_from(a.offset / PAGE_SIZE as u64).map_err(|_| NV_ERR_INVALID_LIMIT)?;
        let within = (a.offset % PAGE_SIZE as u64) as usize;
        let len = usize::try_from(a.length).map_err(|_| NV_ERR_INVALID_LIMIT)?;
        if len == 0 || within + len > PAGE_SIZE {
            return Err(NV_ERR_NOT_SUPPORTED);
        }
        let base = backing.page_address(page).ok_or(NV_ERR_INVALID_LIMIT)?;
        let addr = base as u64 + within as u64;
        rm.kmaps
            .push(
                KMap {
                    client: a.h_client,
                    handle: a.h_memory,
                    addr,
                    _backing: backing,
                },
                GFP_KERNEL,
            )
            .map_err(|_| NV_ERR_NO_MEMORY)?;
        Ok(addr)
    }

    /// A kernel client's NV04_UNMAP_MEMORY of an address `kernel_map` gave.
    pub(crate) fn kernel_unmap(&self, a: &abi::Nvos34) -> RmResult {
        let mut rm = self.rm.lock();
        rm.client_for(a.h_client, None)?;
        let i = rm
            .kmaps
            .iter()
            .position(|k| {
                k.client == a.h_client && k.handle == a.h_memory && k.addr == a.p_linear_address
            })
            .ok_or(NV_ERR_INVALID_ARGUMENT)?;
        let _ = rm.kmaps.remove(i);
        Ok(())
    }

    /// A kernel client's NV04_ALLOC: `a` is this release's ops block (an
    /// NVOS64) whose alloc params are in kernel memory. Returns the new
    /// handle.
    pub(crate) fn kernel_alloc(&self, a: &crate::nv::rmops::Alloc) -> RmResult<u32> {
        // At kernel privilege RM uses the caller's buffer directly, at the
        // class's size, not `paramsSize` (`param_copy.c:55-80`).
        let mut params = KVec::new();
        alloc_params(a.h_class, a.p_alloc_parms, &Space::Kernel, &mut params)?;
        let h = self.alloc(
            Caller::Kernel,
            a.h_root,
            a.h_object_parent,
            a.h_object_new,
            a.h_class,
            &mut params,
        )?;
        if a.p_alloc_parms != 0 && !params.is_empty() {
            Space::Kernel
                .write(a.p_alloc_parms, &params)
                .map_err(|_| NV_ERR_INVALID_ADDRESS)?;
        }
        Ok(h)
    }

    /// A kernel client's NV01_FREE.
    pub(crate) fn kernel_free(&self, a: &abi::Nvos00) -> RmResult {
        let mut rm = self.rm.lock();
        self.free(&mut rm, a.h_root, a.h_object_old, None)
    }

    /// NV04_BIND_CONTEXT_DMA (NVOS49: hClient, hCtxDma, hChannel, status).
    /// RM serves it as control NV0002_CTRL_CMD_BIND_CONTEXTDMA on
    /// (hClient, hCtxDma) (`rmapi_deprecated_misc.c:135-158` at
    /// 550.163.01), so a missing client is NV_ERR_INVALID_CLIENT, as for
    /// any control (measured against the real driver on zeros). The double
    /// has no context DMAs: under a live client the object is unknown.
    pub(crate) fn kernel_bind_context_dma(&self, h_client: u32) -> RmResult {
        if self.rm.lock().client_index(h_client).is_none() {
            return Err(NV_ERR_INVALID_CLIENT);
        }
        Err(NV_ERR_INVALID_OBJECT_HANDLE)
    }

    /// RM_CONTROL (also the kernel clients' NV04_CONTROL).
    pub(crate) fn control(&self, a: &abi::Nvos54, file: Option<u64>, space: &Space) -> RmResult {
        let size = a.params_size as usize;
        // A size without a pointer, or a pointer without a size, is
        // NV_ERR_INVALID_ARGUMENT (`control.c:448-456` at 595.45.04); a
        // pointer that cannot be copied is NV_ERR_INVALID_ADDRESS
        // (`control.c:261`, `param_copy.c:115`, `os-interface.c:522-529`).
        if size > abi::CONTROL_PARAMS_MAX || ((size > 0) != (a.params != 0)) {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        let mut params = KVec::new();
        params
            .resize(size, 0u8, GFP_KERNEL)
            .map_err(|_| NV_ERR_NO_MEMORY)?;
        space
            .read(a.params, &mut params)
            .map_err(|_| NV_ERR_INVALID_ADDRESS)?;
        self.control_inner(a.h_client, a.h_object, a.cmd, &mut params, file, space)?;
        space
            .write(a.params, &params)
            .map_err(|_| NV_ERR_INVALID_ADDRESS)?;
        Ok(())
    }

    fn control_inner(
        &self,
        h_client: u32,
        h_object: u32,
        cmd: u32,
        p: &mut [u8],
        file: Option<u64>,
        space: &Space,
    ) -> RmResult {
        let mut rm = self.rm.lock();
        let ci = rm.client_for(h_client, file)?;
        let kind = if h_object == h_client {
            None
        } else {
            Some(
                rm.clients[ci]
                    .find(h_object)
                    .ok_or(NV_ERR_INVALID_OBJECT_HANDLE)?
                    .kind,
            )
        };
        match (cmd, kind) {
            (ctrl::NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2, None) => build_version_v2(cmd, p),
            // It writes through the caller's pointers, which may fault and
            // take mmap_lock: not under the RM lock, which the UVM node's
            // mmap takes under mmap_lock (lockdep found the inversion).
            (ctrl::NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION, None) => {
                drop(rm);
                build_version_v1(p, space)
            }
            (ctrl::NV0000_CTRL_CMD_GPU_GET_PROBED_IDS, None) => probed_ids(self.gpus.len(), p),
            (ctrl::NV0000_CTRL_CMD_SYSTEM_GET_CPU_INFO, None) => cpu_info(cmd, p),
            (ctrl::NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2, None) => {
                let mut q: abi::GpuGetIdInfoV2Params = parse_params(p)?;
                let i = (0..self.gpus.len() as u32)
                    .find(|&i| gpu_id_of(i) == q.gpu_id)
                    .ok_or(NV_ERR_INVALID_ARGUMENT)?;
                q.device_instance = i;
                q.sub_device_instance = 0;
                q.gpu_instance = i;
                q.numa_id = -1;
                store(&q, p);
                Ok(())
            }
            (ctrl::NV0000_CTRL_CMD_GPU_GET_ATTACHED_IDS, None) => {
                let mut q: abi::GpuGetAttachedIdsParams = parse_params(p)?;
                q.gpu_ids = [abi::GPU_INVALID_ID; 32];
                for i in 0..self.gpus.len() {
                    q.gpu_ids[i] = gpu_id_of(i as u32);
                }
                store(&q, p);
                Ok(())
            }
            (ctrl::NV2080_CTRL_CMD_FB_GET_INFO_V2, Some(ObjKind::Subdevice { gpu })) => {
                // The claimed release's list (54 to 57 entries before 580).
                let mut q: abi::FbGetInfoV2Params = parse_release_params(cmd, p)?;
                if q.list_size as usize > crate::abi().fb_info_entries() {
                    return Err(NV_ERR_INVALID_ARGUMENT);
                }
                for e in q.entries_mut() {
                    e.data = self.fb_info(&rm, gpu, e.index)?;
                }
                store(&q, p);
                Ok(())
            }
            (ctrl::NV2080_CTRL_CMD_FB_GET_INFO, Some(ObjKind::Subdevice { gpu })) => {
                let q: abi::FbGetInfoV1Params = parse_params(p)?;
                // The list is in the caller's memory: no copy with RM locked.
                drop(rm);
                fill_info_list(
                    space,
                    q.list_size,
                    q.list_ptr,
                    crate::abi().fb_info_entries(),
                    |index| self.fb_info(&self.rm.lock(), gpu, index),
                )
            }
            (ctrl::NV2080_CTRL_CMD_GPU_GET_GID_INFO, Some(ObjKind::Subdevice { gpu })) => {
                let mut q: abi::GidInfoParams = parse_params(p)?;
                let uuid = crate::uvm::gpu_uuid(gpu);
                q.data = [0; 256];
                if q.flags & abi::GID_FLAGS_FORMAT_BINARY != 0 {
                    q.data[..uuid.len()].copy_from_slice(&uuid);
                    q.length = uuid.len() as u32;
                } else {
                    // The text form and its NUL.
                    q.length = crate::uvm::format_uuid(&uuid, &mut q.data) as u32 + 1;
                }
                store(&q, p);
                Ok(())
            }
            (abi::rusd::REQUEST_DATA_POLL, Some(ObjKind::Other)) => {
                // GUESS: the double does not tell a RUSD object from other
                // objects it does not model; the mask is recorded.
                if p.len() != 8 {
                    return Err(NV_ERR_INVALID_ARGUMENT);
                }
                let mask =
                    u64::from_ne_bytes(p[..8].try_into().map_err(|_| NV_ERR_INVALID_ARGUMENT)?);
                crate::RUSD_POLLED.fetch_or(mask, core::sync::atomic::Ordering::Relaxed);
                Ok(())
            }
            (ctrl::NV2080_CTRL_CMD_GPU_GET_PIDS, Some(ObjKind::Subdevice { gpu })) => {
                if p.len() != abi::GetPidsParams::SIZE {
                    return Err(NV_ERR_INVALID_ARGUMENT);
                }
                rm.get_pids(gpu, p)
            }
            (ctrl::NV2080_CTRL_CMD_GPU_GET_PID_INFO, Some(ObjKind::Subdevice { gpu })) => {
                if p.len() != abi::GetPidInfoParams::SIZE {
                    return Err(NV_ERR_INVALID_ARGUMENT);
                }
                rm.get_pid_info(gpu, p)
            }
            (ctrl::NV0041_CTRL_CMD_GET_SURFACE_INFO, Some(ObjKind::Memory { mem })) => {
                let size = rm.mem(mem).map(|m| m.size).ok_or(NV_ERR_OBJECT_NOT_FOUND)?;
                let q: abi::GetSurfaceInfoParams = parse_params(p)?;
                drop(rm);
                // PHYS_SIZE_LO/HI exist from 580 on; before, an index RM
                // does not know is NV_ERR_INVALID_ARGUMENT (`mem_ctrl.c:
                // 210-212` at 570.211.01).
                let lo_hi = crate::abi()
                    .surface_size
                    .iter()
                    .any(|&(i, _)| i == surface_info::PHYS_SIZE_LO);
                fill_info_list(space, q.list_size, q.list_ptr, 32, |index| {
                    Ok(match index {
                        surface_info::PHYS_SIZE => {
                            u32::try_from(size / surface_info::PHYS_SIZE_SCALE)
                                .map_err(|_| NV_ERR_OUT_OF_RANGE)?
                        }
                        surface_info::PHYS_SIZE_LO if lo_hi => size as u32,
                        surface_info::PHYS_SIZE_HI if lo_hi => (size >> 32) as u32,
                        surface_info::PHYS_SIZE_LO | surface_info::PHYS_SIZE_HI => {
                            return Err(NV_ERR_INVALID_ARGUMENT)
                        }
                        _ => 0,
                    })
                })
            }
            (ctrl::NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, Some(ObjKind::Tsg { gpu, id, .. }))
            | (
                ctrl::NVA06F_CTRL_CMD_GPFIFO_SCHEDULE,
                Some(ObjKind::Channel { gpu, tsg: id, .. }),
            ) => {
                // 2 bytes before 580 (no `bSkipEnable`).
                let q: abi::GpfifoScheduleParams = parse_release_params(cmd, p)?;
                self.gpus[gpu as usize].engine.schedule(id, q.b_enable != 0);
                Ok(())
            }
            (ctrl::NVA06C_CTRL_CMD_SET_TIMESLICE, Some(ObjKind::Tsg { gpu, id, .. })) => {
                let q: abi::TimesliceParams = parse_params(p)?;
                // No minimum: kernel RM enforces none (at 535 its minimum
                // is 0; at 595.45.04 it forwards the call to GSP,
                // `kernel_channel_group_api.c:1319-1333`). GUESS: GSP's own
                // check is not public; the double accepts every value.
                self.gpus[gpu as usize]
                    .engine
                    .set_timeslice(id, q.timeslice_us);
                Ok(())
            }
            (ctrl::NVA06C_CTRL_CMD_GET_TIMESLICE, Some(ObjKind::Tsg { gpu, id, .. })) => {
                let mut q: abi::TimesliceParams = parse_params(p)?;
                q.timeslice_us = self.gpus[gpu as usize]
                    .engine
                    .timeslice(id)
                    .ok_or(NV_ERR_INVALID_OBJECT_HANDLE)?;
                store(&q, p);
                Ok(())
            }
            (ctrl::NVA06C_CTRL_CMD_PREEMPT, Some(ObjKind::Tsg { gpu, id, .. })) => {
                let _q: abi::PreemptParams = parse_params(p)?;
                self.gpus[gpu as usize].engine.preempt(id);
                Ok(())
            }
            (ctrl::NVA06C_CTRL_CMD_SET_INTERLEAVE_LEVEL, Some(ObjKind::Tsg { .. })) => {
                let _q: abi::InterleaveLevelParams = parse_params(p)?;
                Ok(())
            }
            (ctrl::NVA06C_CTRL_CMD_MAKE_REALTIME, Some(ObjKind::Tsg { .. })) => {
                let _q: abi::MakeRealtimeParams = parse_params(p)?;
                Ok(())
            }
            (
                ctrl::NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN,
                Some(ObjKind::Channel { token, .. }),
            ) => {
                let mut q: abi::WorkSubmitTokenParams = parse_params(p)?;
                q.work_submit_token = token;
                store(&q, p);
                Ok(())
            }
            (ctrl::NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS, Some(ObjKind::Subdevice { gpu })) => {
                let q: abi::FifoDisableChannelsParams = parse_params(p)?;
                let n = q.num_channels as usize;
                if n > q.h_channel_list.len() {
                    return Err(NV_ERR_INVALID_ARGUMENT);
                }
                for k in 0..n {
                    let cj = rm
                        .client_for(q.h_client_list[k], file)
                        .map_err(|_| NV_ERR_INVALID_CLIENT)?;
                    match rm.clients[cj].find(q.h_channel_list[k]).map(|o| o.kind) {
                        Some(ObjKind::Channel { gpu: g, tsg, .. }) if g == gpu => {
                            self.gpus[gpu as usize]
                                .engine
                                .schedule(tsg, q.b_disable == 0);
                        }
                        _ => return Err(NV_ERR_INVALID_CHANNEL),
                    }
                }
                Ok(())
            }
            (_, _) => Err(NV_ERR_NOT_SUPPORTED),
        }
    }

    fn fb_info(&self, rm: &Rm, gpu: u32, index: u32) -> RmResult<u32> {
        let vram = self.gpus[gpu as usize].vram;
        let heap = heap_size(vram);
        let free = heap - rm.vram_used[gpu as usize];
        let kib = |b: u64| (b >> 10) as u32;
        Ok(match index {
            fb_info::RAM_SIZE | fb_info::TOTAL_RAM_SIZE | fb_info::USABLE_RAM_SIZE => kib(vram),
            fb_info::HEAP_SIZE | fb_info::MAPPABLE_HEAP_SIZE => kib(heap),
            fb_info::HEAP_FREE | fb_info::LARGEST_FREE_REGION_SIZE_KB => kib(free),
            fb_info::BAR1_SIZE | fb_info::BAR1_AVAIL_SIZE => kib(BAR1_SIZE.min(vram)),
            fb_info::FB_TAX_SIZE_KB | fb_info::HEAP_BASE_KB | fb_info::HEAP_START => 0,
            fb_info::LARGEST_FREE_REGION_BASE_KB => kib(rm.vram_used[gpu as usize]),
            fb_info::BUS_WIDTH => 5120,
            _ => return Err(NV_ERR_INVALID_ARGUMENT),
        })
    }

    fn vid_heap(&self, f: &NvFile, p: &mut [u8]) -> Result {
        let mut a: abi::Nvos32 = parse(p)?;
        let r: RmResult = (|| {
            let mut rm = self.rm.lock();
            let ci = rm.client_for(a.h_root, Some(f.client_id()))?;
            let gpu = rm.clients[ci]
                .gpu_of(a.h_object_parent)
                .ok_or(NV_ERR_INVALID_OBJECT_PARENT)?;
            match a.function {
                heap::FUNCTION_INFO => {
                    let heap = heap_size(self.gpus[gpu as usize].vram);
                    a.total = heap;
                    a.free = heap - rm.vram_used[gpu as usize];
                    let mut info = a.info();
                    info.size = a.free;
                    info.offset = rm.vram_used[gpu as usize];
                    a.set_info(&info);
                    Ok(())
                }
                heap::FUNCTION_ALLOC_SIZE
                | heap::FUNCTION_ALLOC_SIZE_RANGE
                | heap::FUNCTION_ALLOC_TILED_PITCH_HEIGHT => {
                    drop(rm);
                    let (h_new, cls, mp) = a.heap_memory_params().ok_or(NV_ERR_INVALID_FUNCTION)?;
                    let mut buf = mp.to_bytes();
                    let h = self.alloc(
                        Caller::File(f.client_id()),
                        a.h_root,
                        a.h_object_parent,
                        h_new,
                        cls,
                        &mut buf,
                    )?;
                    a.set_heap_result(h, abi::MemoryAllocationParams::decode(&buf).size);
                    Ok(())
                }
                heap::FUNCTION_FREE => {
                    let fr = a.free_args();
                    self.free(&mut rm, a.h_root, fr.h_memory, Some(f.client_id()))
                }
                _ => Err(NV_ERR_INVALID_FUNCTION),
            }
        })();
        a.status = status_of(r);
        store(&a, p);
        Ok(())
    }

    fn alloc_memory(&self, f: &NvFile, p: &mut [u8]) -> Result {
        let mut a: abi::Nvos02WithFd = parse(p)?;
        let r: RmResult = (|| {
            let mut rm = self.rm.lock();
            let ci = rm.client_for(a.params.h_root, Some(f.client_id()))?;
            let gpu = rm.clients[ci]
                .gpu_of(a.params.h_object_parent)
                .ok_or(NV_ERR_INVALID_OBJECT_PARENT)?;
            if a.params.h_class != class::NV01_MEMORY_LOCAL_USER {
                return Err(NV_ERR_NOT_SUPPORTED);
            }
            // For a non-root caller this allocates nothing: it reports the heap.
            a.params.limit = heap_size(self.gpus[gpu as usize].vram) - 1;
            Ok(())
        })();
        a.params.status = status_of(r);
        store(&a, p);
        Ok(())
    }

    fn map_memory(&self, f: &NvFile, p: &mut [u8]) -> Result {
        let delay = crate::MAP_DELAY_MS.load(core::sync::atomic::Ordering::Relaxed);
        if delay > 0 {
            kernel::time::delay::fsleep(kernel::time::Delta::from_millis(i64::from(delay)));
        }
        let mut a: abi::Nvos33WithFd = parse(p)?;
        let r: RmResult = (|| {
            let m = &a.params;
            let target = fdtable::fget(a.fd).map_err(|_| NV_ERR_INVALID_ARGUMENT)?;
            let target = file::nv_file(&target).ok_or(NV_ERR_INVALID_ARGUMENT)?;
            let mut rm = self.rm.lock();
            let ci = rm.client_for(m.h_client, Some(f.client_id()))?;
            // The real driver creates the mmap context only for the process
            // that created the client (`rm_create_mmap_context`:
            // `ProcID != osGetCurrentProcess()` is NV_ERR_INVALID_CLIENT),
            // whichever file the call comes through.
            if rm.clients[ci].proc != current_tgid() {
                return Err(NV_ERR_INVALID_CLIENT);
            }
            let kind = rm.clients[ci]
                .find(m.h_memory)
                .map(|o| o.kind)
                .ok_or(NV_ERR_OBJECT_NOT_FOUND)?;
            let mem = match kind {
                ObjKind::Memory { mem } | ObjKind::Usermode { mem, .. } => mem,
                _ => return Err(NV_ERR_INVALID_OBJECT_HANDLE),
            };
            let (gpu, size, vram) = {
                let mm = rm.mem(mem).ok_or(NV_ERR_OBJECT_NOT_FOUND)?;
                (mm.gpu, mm.size, mm.vram)
            };
            // System memory maps through a ctl fd, VRAM and USERMODE through
            // the GPU's node.
            let node_ok = match (kind, vram) {
                (ObjKind::Memory { .. }, false) => target.kind == Kind::Ctl,
                _ => target.kind == Kind::Gpu(gpu),
            };
            if !node_ok {
                return Err(NV_ERR_INVALID_ARGUMENT);
            }
            let len = m.length;
            if len == 0
                || m.offset % 4096 != 0
                || len % 4096 != 0
                || m.offset.checked_add(len).is_none_or(|e| e > size)
            {
                return Err(NV_ERR_INVALID_LIMIT);
            }
            let backing = {
                let mm = rm.mem(mem).ok_or(NV_ERR_OBJECT_NOT_FOUND)?;
                match &mm.backing {
                    Some(b) => b.clone(),
                    None => {
                        if size > MAX_BACKED {
                            return Err(NV_ERR_INSUFFICIENT_RESOURCES);
                        }
                        let b = Backing::new(size).map_err(|_| NV_ERR_NO_MEMORY)?;
                        let b = Arc::new(b, GFP_KERNEL).map_err(|_| NV_ERR_NO_MEMORY)?;
                        mm.backing = Some(b.clone());
                        b
                    }
                }
            };
            let mut ctx = target.map.lock();
            if !matches!(*ctx, MapCtx::Unused) {
                return Err(NV_ERR_STATE_IN_USE);
            }
            *ctx = MapCtx::Ready {
                backing,
                offset: m.offset as usize,
                len: len as usize,
            };
            // GUESS: the linear address is only a cookie once the fresh fd
            // is mmapped at offset 0; report the offset the fd maps.
            a.params.p_linear_address = 0;
            Ok(())
        })();
        a.params.status = status_of(r);
        store(&a, p);
        Ok(())
    }

    fn dup(&self, f: &NvFile, p: &mut [u8]) -> Result {
        let mut a: abi::Nvos55 = parse(p)?;
        let r = self.dup_as(Caller::File(f.client_id()), &a);
        match r {
            Ok(h) => {
                a.h_object = h;
                a.status = NV_OK;
            }
            Err(s) => a.status = s,
        }
        store(&a, p);
        Ok(())
    }

    /// A kernel client's NV04_DUP_OBJECT.
    pub(crate) fn kernel_dup(&self, a: &abi::Nvos55) -> RmResult<u32> {
        self.dup_as(Caller::Kernel, a)
    }

    /// RM_DUP_OBJECT of memory: a new handle in `a.h_client` for the memory
    /// of `(a.h_client_src, a.h_object_src)`, charged once.
    fn dup_as(&self, caller: Caller, a: &abi::Nvos55) -> RmResult<u32> {
        {
            let mut rm = self.rm.lock();
            let di = rm.client_for(a.h_client, caller.binding())?;
            // The source client may be bound to any file: RM validates only
            // the destination client against the caller (`serverCopyResource`,
            // `rs_server.c:1695-1697` at 595.45.04).
            let si = rm
                .client_index(a.h_client_src)
                .ok_or(NV_ERR_INVALID_CLIENT)?;
            let src = *rm.clients[si]
                .find(a.h_object_src)
                .ok_or(NV_ERR_OBJECT_NOT_FOUND)?;
            let ObjKind::Memory { mem } = src.kind else {
                return Err(NV_ERR_NOT_SUPPORTED);
            };
            if !rm.clients[di].has(a.h_parent) {
                return Err(NV_ERR_INVALID_OBJECT_PARENT);
            }
            // A kernel client may dup anything; a user client needs
            // RS_ACCESS_DUP_OBJECT on the source (`rs_client.c:535-547`),
            // which RM's default share policy grants only to clients of
            // the process that created the source client (RS_SHARE_TYPE_PID,
            // `sharing.c:347-353`; `ProcID` compared, `client_resource.c:217-230`).
            // The double models no RM_SHARE, so that is the only grant.
            if caller.checks_fds() && rm.clients[si].proc != rm.clients[di].proc {
                return Err(NV_ERR_INSUFFICIENT_PERMISSIONS);
            }
            let h = if a.h_object == 0 {
                rm.clients[di].gen_handle()
            } else if rm.clients[di].has(a.h_object) {
                return Err(NV_ERR_INVALID_OBJECT_NEW);
            } else {
                a.h_object
            };
            rm.clients[di]
                .objects
                .push(
                    Object {
                        handle: h,
                        parent: a.h_parent,
                        kind: ObjKind::Memory { mem },
                    },
                    GFP_KERNEL,
                )
                .map_err(|_| NV_ERR_NO_MEMORY)?;
            if let Some(m) = rm.mem(mem) {
                m.refs += 1;
            }
            Ok(h)
        }
    }

    fn os_event(&self, f: &NvFile, p: &mut [u8], alloc: bool) -> Result {
        let mut a: abi::OsEvent = parse(p)?;
        let r: RmResult = (|| {
            let target = fdtable::fget(a.fd as i32).map_err(|_| NV_ERR_INVALID_ARGUMENT)?;
            let target = file::nv_file(&target).ok_or(NV_ERR_INVALID_ARGUMENT)?;
            let mut rm = self.rm.lock();
            let ci = rm.client_for(a.h_client, Some(f.client_id()))?;
            let gpu = rm.clients[ci]
                .gpu_of(a.h_device)
                .ok_or(NV_ERR_INVALID_OBJECT_HANDLE)?;
            let engine = &self.gpus[gpu as usize].engine;
            if alloc {
                engine
                    .add_event(a.h_client, target.into())
                    .map_err(|_| NV_ERR_NO_MEMORY)
            } else {
                engine.remove_events(Some(a.h_client), Some(&target));
                Ok(())
            }
        })();
        a.status = status_of(r);
        store(&a, p);
        Ok(())
    }
}

/// How RM takes a class's alloc params: `RS_REQUIRED`, `RS_OPTIONAL` or
/// `RS_NONE` of the class's own params struct (`resource_list.h` at
/// 595.45.04).
enum ParamsRule {
    /// A pointer is required; RM copies this many bytes.
    Required(usize),
    /// A NULL pointer means the class's defaults; otherwise RM copies this
    /// many bytes.
    Optional(usize),
    /// No params; the pointer is not read.
    None,
}

/// The size of class `c`'s alloc params in the claimed release (its row of
/// the release's class table; older releases' blocks are shorter where a
/// field was added at the end), else `size`, 595.45.04's.
fn class_size(c: u32, size: usize) -> usize {
    crate::abi()
        .class_row(c)
        .map_or(size, |r| r.params_size as usize)
}

/// The params rule of each class the double serves (`resource_list.h`
/// lines at 595.45.04 in the comments); `None` for any other class.
fn params_rule(h_class: u32) -> Option<ParamsRule> {
    use ParamsRule::*;
    Some(match h_class {
        // RS_OPTIONAL(NvHandle) (64, 75, 85).
        class::NV01_ROOT | class::NV01_ROOT_NON_PRIV | class::NV01_ROOT_CLIENT => Optional(4),
        // RS_OPTIONAL(NV0080_ALLOC_PARAMETERS) (175).
        class::NV01_DEVICE_0 => Optional(abi::DeviceAllocParams::SIZE),
        // RS_OPTIONAL(NV2080_ALLOC_PARAMETERS) (449).
        class::NV20_SUBDEVICE_0 => Optional(abi::SubdeviceAllocParams::SIZE),
        // RS_REQUIRED(NV_MEMORY_ALLOCATION_PARAMS) (505, 526, 537).
        c @ (class::NV01_MEMORY_LOCAL_USER
        | class::NV01_MEMORY_SYSTEM
        | class::NV50_MEMORY_VIRTUAL) => Required(class_size(c, abi::MemoryAllocationParams::SIZE)),
        // RS_REQUIRED(NV_MEMORY_VIRTUAL_ALLOCATION_PARAMS) (547): offset,
        // limit, hVASpace, 24 bytes (`cl0070.h:66-70`).
        class::NV01_MEMORY_VIRTUAL => Required(24),
        // RS_REQUIRED(NV_VASPACE_ALLOCATION_PARAMETERS) (693).
        c @ class::FERMI_VASPACE_A => Required(class_size(c, abi::VaSpaceAllocParams::SIZE)),
        // RS_REQUIRED(NV_CTXSHARE_ALLOCATION_PARAMETERS) (416).
        class::FERMI_CONTEXT_SHARE_A => Required(abi::CtxShareAllocParams::SIZE),
        // RS_REQUIRED(NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS) (484).
        class::KEPLER_CHANNEL_GROUP_A => Required(abi::ChannelGroupAllocParams::SIZE),
        // RS_REQUIRED(NV_CHANNEL_ALLOC_PARAMS) (293-392).
        c if class::is_channel_class(c) => Required(class_size(c, abi::ChannelAllocParams::SIZE)),
        // RS_NONE (863, 874).
        class::TURING_USERMODE_A | class::AMPERE_USERMODE_A => None,
        // RS_OPTIONAL(NV_HOPPER_USERMODE_A_PARAMS) (885).
        class::HOPPER_USERMODE_A => Optional(abi::UsermodeAllocParams::SIZE),
        // RS_REQUIRED(NV00DE_ALLOC_PARAMETERS) (845): 8 bytes, 4 before 550.
        c @ abi::rusd::CLASS => Required(class_size(c, 8)),
        // RS_OPTIONAL(NV_GR_ALLOCATION_PARAMETERS) (2063) for compute,
        // RS_OPTIONAL(NVB0B5_ALLOCATION_PARAMETERS) (1594) for copy: the
        // release's row's size.
        c if is_engine_class(c) => Optional(crate::abi().class_row(c)?.params_size as usize),
        _ => return Option::None,
    })
}

/// Copies the alloc params of class `h_class` from `ptr` in `space` into
/// `out`, as RM does at 595.45.04: the size is the class's own, whatever
/// `paramsSize` says (`rmapiGetClassAllocParamSize`, `resource_desc.c:181-214`;
/// `rmapiParamsCopyInit`, `param_copy.c:300-320`); an unknown class is
/// NV_ERR_INVALID_CLASS before anything is read; a required pointer that is
/// NULL is NV_ERR_INVALID_ARGUMENT (`param_copy.c:314-315`); a pointer that
/// cannot be read is NV_ERR_INVALID_ADDRESS (`os_memcpy_from_user`,
/// `os-interface.c:522-529`). A NULL optional pointer gives the class's
/// defaults, all zero here, and `out` stays empty (nothing is copied back).
fn alloc_params(h_class: u32, ptr: u64, space: &Space, out: &mut KVec<u8>) -> RmResult {
    let size = match params_rule(h_class).ok_or(NV_ERR_INVALID_CLASS)? {
        ParamsRule::None => return Ok(()),
        ParamsRule::Required(_) if ptr == 0 => return Err(NV_ERR_INVALID_ARGUMENT),
        ParamsRule::Optional(_) if ptr == 0 => return Ok(()),
        ParamsRule::Required(n) | ParamsRule::Optional(n) => n,
    };
    out.resize(size, 0u8, GFP_KERNEL)
        .map_err(|_| NV_ERR_NO_MEMORY)?;
    space.read(ptr, out).map_err(|_| NV_ERR_INVALID_ADDRESS)
}

/// Serves an info list passed by pointer (`{u32 index; u32 data}[n]`):
/// reads it from `space`, fills each `data` with `value(index)`, writes it
/// back. `n` must be 1..=`max`.
fn fill_info_list(
    space: &Space,
    n: u32,
    ptr: u64,
    max: usize,
    value: impl Fn(u32) -> RmResult<u32>,
) -> RmResult {
    let n = n as usize;
    if n == 0 || n > max || ptr == 0 {
        return Err(NV_ERR_INVALID_ARGUMENT);
    }
    let mut list = KVec::new();
    list.resize(n * abi::InfoEntry::SIZE, 0u8, GFP_KERNEL)
        .map_err(|_| NV_ERR_NO_MEMORY)?;
    space
        .read(ptr, &mut list)
        .map_err(|_| NV_ERR_INVALID_ARGUMENT)?;
    for chunk in list.chunks_exact_mut(abi::InfoEntry::SIZE) {
        let mut e = abi::InfoEntry::decode(chunk);
        e.data = value(e.index)?;
        e.encode(chunk);
    }
    space.write(ptr, &list).map_err(|_| NV_ERR_INVALID_ARGUMENT)
}

/// The build constants of each release the double can claim: its
/// `NV_BUILD_BRANCH`, `NV_BUILD_BRANCH_VERSION` (also its `NV_BUILD_NAME`)
/// and `NV_BUILD_CHANGELIST_NUM` (also `NV_LAST_OFFICIAL_CHANGELIST_NUM`),
/// Linux values of `src/common/inc/nvBldVer.h:38-50` at each tag. The
/// changelist is the official build's (550.163.01's real driver answered
/// 0x101 with "rel/gpu_drv/r550/r553_74-609" and 35802577).
const BUILDS: [(&str, &str, &str, u32); 7] = [
    (
        "595.45.04",
        "r595_59",
        "rel/gpu_drv/r595/r595_59-167",
        37420354,
    ),
    (
        "590.48.01",
        "r591_47",
        "rel/gpu_drv/r590/r591_47-174",
        37007394,
    ),
    (
        "580.142",
        "r580_00",
        "rel/gpu_drv/r580/r580_00-480",
        37438274,
    ),
    (
        "580.105.08",
        "r581_66",
        "rel/gpu_drv/r580/r581_66-314",
        36773567,
    ),
    (
        "570.211.01",
        "r573_96",
        "rel/gpu_drv/r570/r573_96-1",
        36945344,
    ),
    (
        "550.163.01",
        "r553_74",
        "rel/gpu_drv/r550/r553_74-609",
        35802577,
    ),
    (
        "535.288.01",
        "r539_62",
        "rel/gpu_drv/r535/r539_62-1069",
        36903621,
    ),
];

/// NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2 as RM answers it at the
/// claimed release (`cliresCtrlCmdSystemGetBuildVersionV2_IMPL`,
/// `src/nvidia/src/kernel/rmapi/client_resource.c:833-859` at 595.45.04,
/// `:834-857` at 550.163.01): each string and its NUL copied into its
/// 256-byte buffer (the rest of the buffer left as the caller sent it),
/// then the two changelist numbers. The buffers are `driverVersionBuffer`,
/// `versionBuffer`, `driverBranch` (from 560 only: 776 bytes without it,
/// `ctrl0000system.h:2266-2272` at 550.163.01) and `titleBuffer`
/// (`ctrl0000system.h:2352-2359` at 595.45.04). GUESS: the title is
/// `NV_DISPLAY_DRIVER_TITLE` as the header composes it for an official
/// build ("Official BRANCH NAME AUTHOR", `nvBldVer.h:71`), with the
/// header's default author; NVIDIA's build may set another. A release
/// without a [`BUILDS`] entry (560.35.05, which the double claims only for
/// vgpu to refuse) gets its version string and empty build strings.
fn build_version_v2(cmd: u32, p: &mut [u8]) -> RmResult {
    /// Writes `parts` joined by spaces, and a NUL, at `p[at..]`.
    fn put(p: &mut [u8], mut at: usize, parts: &[&str]) -> RmResult {
        for (i, s) in parts.iter().enumerate() {
            if i > 0 {
                *p.get_mut(at).ok_or(NV_ERR_INVALID_STATE)? = b' ';
                at += 1;
            }
            p.get_mut(at..at + s.len())
                .ok_or(NV_ERR_INVALID_STATE)?
                .copy_from_slice(s.as_bytes());
            at += s.len();
        }
        *p.get_mut(at).ok_or(NV_ERR_INVALID_STATE)? = 0;
        Ok(())
    }
    const LEN: usize = 256;
    if p.len() != crate::abi().params_size(cmd).unwrap_or(4 * LEN + 8) {
        return Err(NV_ERR_INVALID_ARGUMENT);
    }
    let version = release();
    let build = BUILDS.iter().find(|b| b.0 == version);
    let (branch, name, cl) = build.map_or(("", "", 0), |b| (b.1, b.2, b.3));
    // The open modules built from NVIDIA's sources (Debian's among them)
    // are not buildmeister builds: `NV_BUILD_TYPE` is "Private" and
    // `NV_BUILD_CHANGELIST_NUM` is `DVS_SW_CHANGELIST`, 0
    // (`nvBldVer.h:17-27, 62-69` at 550.163.01; the real 550.163.01 open
    // module answers so). NVIDIA's own binary builds say "Official" and
    // give the changelist twice.
    let title = ["Private", branch, name, "unknown"];
    let title: &[&str] = if build.is_some() { &title } else { &[] };
    let (v, nm, br) = ([version], [name], [branch]);
    let with_branch = p.len() == 4 * LEN + 8;
    let fields: [&[&str]; 4] = if with_branch {
        [&v, &nm, &br, title]
    } else {
        [&v, &nm, title, &[]]
    };
    let count = if with_branch { 4 } else { 3 };
    for (k, parts) in fields.iter().take(count).enumerate() {
        put(p, k * LEN, parts)?;
    }
    for (k, n) in [0, cl].into_iter().enumerate() {
        let at = count * LEN + 4 * k;
        p.get_mut(at..at + 4)
            .ok_or(NV_ERR_INVALID_STATE)?
            .copy_from_slice(&n.to_ne_bytes());
    }
    Ok(())
}

/// NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION, the deprecated form RM serves
/// from the V2 control (`rmapi_deprecated_control.c:453-560` at
/// 550.163.01): with any of the three string pointers NULL, only
/// `sizeOfStrings` (the longest string and its NUL); else each string and
/// its NUL copied through its pointer (NV_ERR_INVALID_PARAM_STRUCT if
/// `sizeOfStrings` is smaller than that, or a copy fails), then the two
/// changelists. Params: `sizeOfStrings` at 0, the pointers at 8, 16 and 24,
/// the changelists at 32 and 36 (`ctrl0000system.h:117-124`).
fn build_version_v1(p: &mut [u8], space: &Space) -> RmResult {
    const LEN: usize = 256;
    if p.len() != 40 {
        return Err(NV_ERR_INVALID_ARGUMENT);
    }
    let v2_size = crate::abi()
        .params_size(ctrl::NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2)
        .unwrap_or(4 * LEN + 8);
    let mut v2 = KVec::new();
    v2.resize(v2_size, 0u8, GFP_KERNEL)
        .map_err(|_| NV_ERR_NO_MEMORY)?;
    build_version_v2(ctrl::NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2, &mut v2)?;
    // The driver version, the version and the title (the branch, from
    // 560, is not in the V1 form).
    let title_at = if v2_size == 4 * LEN + 8 {
        3 * LEN
    } else {
        2 * LEN
    };
    let string = |at: usize| -> RmResult<&[u8]> {
        let b = v2.get(at..at + LEN).ok_or(NV_ERR_INVALID_STATE)?;
        Ok(&b[..=b.iter().position(|&c| c == 0).unwrap_or(LEN - 1)])
    };
    let strings = [string(0)?, string(LEN)?, string(title_at)?];
    let longest = strings.iter().map(|s| s.len()).max().unwrap_or(0) as u32;
    let mut a = [0u8; 40];
    a.copy_from_slice(p);
    let word = |at: usize| u64::from_ne_bytes(a[at..at + 8].try_into().unwrap_or([0; 8]));
    let ptrs = [word(8), word(16), word(24)];
    if ptrs.contains(&0) {
        p[0..4].copy_from_slice(&longest.to_ne_bytes());
        return Ok(());
    }
    if u32::from_ne_bytes([a[0], a[1], a[2], a[3]]) < longest {
        return Err(NV_ERR_INVALID_PARAM_STRUCT);
    }
    for (ptr, s) in ptrs.iter().zip(strings.iter()) {
        space
            .write(*ptr, s)
            .map_err(|_| NV_ERR_INVALID_PARAM_STRUCT)?;
    }
    let cls = v2.get(v2_size - 8..v2_size).ok_or(NV_ERR_INVALID_STATE)?;
    p[32..40].copy_from_slice(cls);
    Ok(())
}

/// NV0000_CTRL_CMD_SYSTEM_GET_CPU_INFO: RM describes the host's CPU from
/// CPUID (`cliresCtrlCmdSystemGetCpuInfo_IMPL`, `client_resource.c:1026`
/// at 550.163.01). GUESS: the double models no CPU and answers zeros; the
/// real-driver lane compares only the status.
fn cpu_info(cmd: u32, p: &mut [u8]) -> RmResult {
    if p.len() != crate::abi().params_size(cmd).unwrap_or(p.len()) {
        return Err(NV_ERR_INVALID_ARGUMENT);
    }
    p.fill(0);
    Ok(())
}

/// NV0000_CTRL_CMD_GPU_GET_PROBED_IDS: the GPUs RM probed, in `gpuIds`,
/// and those it excluded, in `excludedGpuIds`, each list 32 ids with
/// unused slots NV0000_CTRL_GPU_INVALID_ID (`cliresCtrlCmdGpuGetProbedIds_IMPL`,
/// `client_resource.c` at 550.163.01; `ctrl0000gpu.h:290-293`). The double
/// excludes none.
fn probed_ids(gpus: usize, p: &mut [u8]) -> RmResult {
    const MAX: usize = 32;
    if p.len() != 2 * 4 * MAX {
        return Err(NV_ERR_INVALID_ARGUMENT);
    }
    for (k, slot) in p.chunks_exact_mut(4).enumerate() {
        let id = if k < gpus.min(MAX) {
            gpu_id_of(k as u32)
        } else {
            abi::GPU_INVALID_ID
        };
        slot.copy_from_slice(&id.to_ne_bytes());
    }
    Ok(())
}

/// As [`parse_params`], for a control whose params size is the claimed
/// release's (older releases' blocks are prefixes of 595.45.04's: shorter
/// lists, no field added since; what is missing decodes as zero, and
/// [`store`] writes back only the release's bytes).
fn parse_release_params<T: abi::Wire>(cmd: u32, p: &[u8]) -> RmResult<T> {
    if p.len() != crate::abi().params_size(cmd).unwrap_or(T::SIZE) {
        return Err(NV_ERR_INVALID_ARGUMENT);
    }
    Ok(T::decode(p))
}

/// Parses a class's alloc params, `p` being the class's size in the
/// claimed release ([`class_size`]): a prefix of 595.45.04's block where
/// the release's is shorter (a field added since reads 0).
fn parse_class_params<T: abi::Wire>(p: &[u8]) -> RmResult<T> {
    if p.is_empty() || p.len() > T::SIZE {
        return Err(NV_ERR_INVALID_ARGUMENT);
    }
    Ok(T::decode(p))
}

/// Parses a class's or control's params; a wrong size is
/// NV_ERR_INVALID_PARAM_STRUCT... GUESS: RM's exact status for a params size
/// mismatch varies by path; the double uses INVALID_ARGUMENT throughout.
fn parse_params<T: abi::Wire>(p: &[u8]) -> RmResult<T> {
    if p.len() != T::SIZE {
        return Err(NV_ERR_INVALID_ARGUMENT);
    }
    Ok(T::decode(p))
}

/// RM's answer to NV01_DEVICE_0 for device instance `gpu` when it has no
/// GPU there. An instance past NV_MAX_DEVICES (32) is NV_ERR_INVALID_ARGUMENT
/// (`gpumgrIsDeviceInstanceValid`, `gpu_mgr.c:563-564` at 550.163.01;
/// `device.c:359-360`). An instance in range with no GPU: from 550,
/// NV_ERR_INVALID_STATE (`_deviceInit`, `device.c:363-367` at 550.163.01:
/// `gpumgrGetPrimaryForDevice` finds none); at 535, NV_ERR_INVALID_CLASS
/// (`deviceConstruct`, `device.c:111-114` at 535.261.03). Both measured on
/// the real driver with no GPU (the real-driver lane's `device_refusal`).
fn absent_device_status(gpu: u32) -> u32 {
    const NV_MAX_DEVICES: u32 = 32;
    if gpu >= NV_MAX_DEVICES {
        NV_ERR_INVALID_ARGUMENT
    } else if crate::release().starts_with("535.") {
        NV_ERR_INVALID_CLASS
    } else {
        NV_ERR_INVALID_STATE
    }
}
