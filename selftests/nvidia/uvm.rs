// SPDX-License-Identifier: GPL-2.0

//! The double's nvidia-uvm node (`/dev/nvidia-uvm`, `/dev/nvidia-uvm-tools`).
//!
//! The real driver is a separate module (`nvidia-uvm.ko`) that reaches RM
//! through kernel calls into `nvidia.ko`. The double serves it from the
//! `nvidia` module itself, so that RM objects, the per-GPU VRAM heap and UVM's
//! residency live under one lock; a test cannot tell the difference except
//! through `/proc/modules`.
//!
//! What is modelled (facts in `docs/uvm-abi.md`, choices and guesses in
//! `docs/driver-double.md`):
//! - a dynamic chrdev region `nvidia-uvm` with minors 0 (the node) and 1
//!   (tools: every ioctl `EINVAL`, no mmap) and no class device: tests make
//!   the nodes from `/proc/devices`, as nvidia-modprobe does;
//! - the ioctl transport: plain command numbers, the exact block copied in
//!   once and copied back whole, status in `rmStatus`, `EFAULT`, `ENOSYS`;
//! - per-file types (uninitialised, VA space, mm file), the recorded mm and
//!   the mm-file rules;
//! - GPU, GPU VA space and channel registration against the double's RM
//!   (handles resolved globally), external ranges and mappings (which keep
//!   their RM memory alive), `UVM_FREE`, `UVM_VALIDATE_VA_RANGE`;
//! - managed ranges made by `mmap`, whose 2 MiB chunks become GPU-resident
//!   through `UVM_MIGRATE` or engine touches (see `engine.rs`), taking VRAM
//!   from the same per-GPU heap as RM allocations, with LRU eviction across
//!   VA spaces.

use core::fmt;
use core::ptr::NonNull;
use kernel::{
    bindings,
    fs::{File, LocalFile},
    mm::{
        virt::{flags as vm_flags, VmaNew},
        Mm, MmWithUser,
    },
    new_mutex,
    prelude::*,
    sync::{aref::ARef, Arc, ArcBorrow, Mutex},
    time::{delay::fsleep, Delta},
};

use crate::driver;
use crate::kapi::chrdev::{self, DevT, FileOperations};
use crate::kapi::{fdtable, user};
use crate::nv::abi::{self, status::*, Wire};
use crate::nv::uvm::{
    self, init_flags, migrate_flags, range_ok, Command, GpuMappingAttributes, GpuParams,
    InitializeParams, MigrateParams, MigrateRangeGroupParams, MmInitializeParams,
    PageableMemAccessParams, PeerAccessParams, RangeGpuParams, RangeGroupParams, RangeParams,
    RegisterChannelParams, RegisterGpuParams, RegisterGpuVaspaceParams, SetPreferredLocationParams,
    SetRangeGroupParams, ToolsProcessMemoryParams, UnregisterChannelParams, Uuid, CHUNK, CPU_UUID,
    PAGE, RANGE_GROUP_NONE,
};
use crate::rm::{heap_size, Driver, ObjKind, Rm, RmResult};
use crate::MAX_GPUS;

// Helpers in `exports.c`. Pointers to `mm_struct`, `vm_area_struct` and
// `vm_operations_struct` are passed as `void *` (the lint for FFI-safe types
// rejects some of bindgen's structs).
extern "C" {
    /// `current->mm` with an `mmgrab` reference, or NULL.
    fn nv_double_current_mm_grab() -> *mut c_void;
    /// `vma->vm_pgoff`.
    fn nv_double_vma_pgoff(vma: *mut c_void) -> c_ulong;
    /// `vma->vm_private_data`.
    fn nv_double_vma_private(vma: *mut c_void) -> *mut c_void;
    /// Sets `vma->vm_ops` (unless NULL) and `vma->vm_private_data`.
    fn nv_double_vma_set(vma: *mut c_void, ops: *const c_void, data: *mut c_void);
}

/// Minor of `/dev/nvidia-uvm-tools`.
const TOOLS_MINOR: u32 = 1;

/// Simulated time `UVM_MIGRATE` spends per chunk it moves, so that a test
/// can kill a process in the middle of a migration.
const MIGRATE_CHUNK_MS: i64 = 2;

/// The binary UUID of fake GPU `gpu` (what GET_GID_INFO returns with the
/// binary flag and UVM takes): `d0 0b 1e 5e 00 00 40 00 80 00 00 00 00 00
/// 00 NN`, NN = `gpu + 1`. GUESS: real UUIDs are SHA-1 based and opaque;
/// the double's only have to be fixed and distinct per GPU.
pub(crate) fn gpu_uuid(gpu: u32) -> Uuid {
    let mut u = [
        0xd0, 0x0b, 0x1e, 0x5e, 0x00, 0x00, 0x40, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00,
    ];
    u[15] = (gpu + 1) as u8;
    u
}

/// Writes `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` (the text form of
/// GET_GID_INFO) and a NUL into `out`; returns the text's length (40).
pub(crate) fn format_uuid(u: &Uuid, out: &mut [u8]) -> usize {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut text = [0u8; 40];
    text[..4].copy_from_slice(b"GPU-");
    let mut n = 4;
    for (i, &b) in u.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            text[n] = b'-';
            n += 1;
        }
        text[n] = HEX[usize::from(b >> 4)];
        text[n + 1] = HEX[usize::from(b & 0xf)];
        n += 2;
    }
    for (i, slot) in out.iter_mut().take(text.len() + 1).enumerate() {
        *slot = text.get(i).copied().unwrap_or(0);
    }
    text.len()
}

// ---------------------------------------------------------------------------
// State (guarded by the RM lock).
// ---------------------------------------------------------------------------

/// Where a VA space's mm file stands.
#[derive(Clone, Copy, PartialEq, Eq)]
enum MmState {
    /// No mm file yet.
    Unset,
    /// An mm file holds the recorded mm.
    Alive,
    /// The mm file was closed: GPU work of the VA space has ended.
    Released,
}

/// A GPU registered in a VA space.
struct GpuReg {
    gpu: u32,
    /// Its GPU VA space: the RM (client, VA space) registered.
    vaspace: Option<(u32, u32)>,
}

/// A registered channel.
struct ChanReg {
    gpu: u32,
    client: u32,
    channel: u32,
    /// Its work-submit token: how the engine names it.
    token: u32,
    /// Its CHANNEL range.
    base: u64,
}

/// A managed chunk resident on a GPU.
struct Resident {
    /// VA block index (address / 2 MiB).
    block: u64,
    gpu: u32,
    /// Last use, for eviction (higher is more recent).
    lru: u64,
}

/// One GPU's mapping of RM memory in an external range.
struct ExtMap {
    gpu: u32,
    base: u64,
    len: u64,
    /// The RM memory (one reference held).
    mem: u32,
}

enum RangeKind {
    /// Made by mmap; `mm` identifies the mapping's address space.
    Managed { mm: usize, resident: KVec<Resident> },
    /// Made by CREATE_EXTERNAL_RANGE.
    External { maps: KVec<ExtMap> },
    /// Made by REGISTER_CHANNEL.
    Channel,
    /// Made by MAP_DYNAMIC_PARALLELISM_REGION: SKED-reflected PTEs on one
    /// GPU (index `gpu`), no memory behind them (uvm_va_range.c:567).
    SkedReflected { gpu: u32 },
}

/// A range group (`UVM_CREATE_RANGE_GROUP`) and the addresses in it.
struct Group {
    /// Numbered per VA space from 1 (uvm_range_group.c:99).
    id: u64,
    /// `[start, start + len)` pieces; no address is in two groups (the
    /// driver keeps one tree per VA space, uvm_range_group.c:527-625).
    ranges: KVec<(u64, u64)>,
}

struct Range {
    start: u64,
    len: u64,
    kind: RangeKind,
}

impl Range {
    fn end(&self) -> u64 {
        self.start + self.len
    }

    fn contains(&self, addr: u64) -> bool {
        self.start <= addr && addr < self.end()
    }
}

/// A UVM VA space (one per `UVM_INITIALIZE`d file).
struct Space {
    id: u64,
    /// Process that created it (for the test-only residency view).
    tgid: i32,
    flags: u64,
    /// The recorded mm (an `mmgrab` reference); `None` in multi-process
    /// sharing mode.
    mm: Option<ARef<Mm>>,
    mm_state: MmState,
    gpus: KVec<GpuReg>,
    ranges: KVec<Range>,
    chans: KVec<ChanReg>,
    /// Range groups.
    groups: KVec<Group>,
    /// The last group id handed out.
    last_group: u64,
    /// Touches that could not be served.
    faults: u64,
}

impl Space {
    fn gpu(&self, gpu: u32) -> Option<&GpuReg> {
        self.gpus.iter().find(|g| g.gpu == gpu)
    }

    fn has_vaspace(&self, gpu: u32) -> bool {
        self.gpu(gpu).is_some_and(|g| g.vaspace.is_some())
    }

    fn overlaps(&self, start: u64, len: u64) -> bool {
        self.ranges
            .iter()
            .any(|r| uvm::overlaps(r.start, r.len, start, len))
    }

    /// Adds a range at `[start, start + len)`; NV_ERR_UVM_ADDRESS_IN_USE
    /// if it overlaps one.
    fn add_range(&mut self, start: u64, len: u64, kind: RangeKind) -> RmResult {
        if self.overlaps(start, len) {
            return Err(NV_ERR_UVM_ADDRESS_IN_USE);
        }
        self.ranges
            .push(Range { start, len, kind }, GFP_KERNEL)
            .map_err(|_| NV_ERR_NO_MEMORY)
    }

    fn range_at(&self, addr: u64) -> Option<usize> {
        self.ranges.iter().position(|r| r.contains(addr))
    }

    fn managed_at(&self, addr: u64) -> Option<usize> {
        self.range_at(addr)
            .filter(|&i| matches!(self.ranges[i].kind, RangeKind::Managed { .. }))
    }

    /// Whether managed ranges cover all of `[base, base + len)`.
    fn fully_managed(&self, base: u64, len: u64) -> bool {
        let end = base + len;
        let mut cur = base;
        while cur < end {
            match self.managed_at(cur) {
                Some(i) => cur = self.ranges[i].end(),
                None => return false,
            }
        }
        true
    }

    /// Takes `[base, base + len)` out of every range group, splitting
    /// pieces that stick out (uvm_range_group.c:545-604).
    fn ungroup(&mut self, base: u64, len: u64) -> RmResult {
        let end = base + len;
        for g in self.groups.iter_mut() {
            let mut kept = KVec::new();
            for &(s, l) in g.ranges.iter() {
                let e = s + l;
                if !uvm::overlaps(s, l, base, len) {
                    kept.push((s, l), GFP_KERNEL)
                        .map_err(|_| NV_ERR_NO_MEMORY)?;
                    continue;
                }
                if s < base {
                    kept.push((s, base - s), GFP_KERNEL)
                        .map_err(|_| NV_ERR_NO_MEMORY)?;
                }
                if e > end {
                    kept.push((end, e - end), GFP_KERNEL)
                        .map_err(|_| NV_ERR_NO_MEMORY)?;
                }
            }
            g.ranges = kept;
        }
        Ok(())
    }

    fn resident_bytes(&self, gpu: u32) -> u64 {
        let mut n = 0;
        for r in self.ranges.iter() {
            if let RangeKind::Managed { resident, .. } = &r.kind {
                n += resident.iter().filter(|c| c.gpu == gpu).count() as u64 * CHUNK;
            }
        }
        n
    }
}

/// The UVM state of the whole double.
pub(crate) struct Uvm {
    spaces: KVec<Space>,
    next_space: u64,
    /// The LRU clock.
    tick: u64,
    /// Managed bytes resident per GPU (all VA spaces).
    resident: [u64; MAX_GPUS],
}

impl Uvm {
    /// No VA spaces.
    pub(crate) const fn new() -> Self {
        Self {
            spaces: KVec::new(),
            next_space: 1,
            tick: 0,
            resident: [0; MAX_GPUS],
        }
    }

    fn index(&self, id: u64) -> Option<usize> {
        self.spaces.iter().position(|s| s.id == id)
    }
}

/// Returns a chunk's VRAM on `gpu` to the heap.
fn uncharge(rm: &mut Rm, gpu: u32) {
    let g = gpu as usize;
    rm.vram_used[g] = rm.vram_used[g].saturating_sub(CHUNK);
    rm.uvm.resident[g] = rm.uvm.resident[g].saturating_sub(CHUNK);
}

/// Moves the least recently used chunk resident on `gpu`, in any VA space,
/// back to system memory. False if there is none.
fn evict_one(rm: &mut Rm, gpu: u32) -> bool {
    let mut best: Option<(usize, usize, usize, u64)> = None;
    for (si, s) in rm.uvm.spaces.iter().enumerate() {
        for (ri, r) in s.ranges.iter().enumerate() {
            if let RangeKind::Managed { resident, .. } = &r.kind {
                for (ki, c) in resident.iter().enumerate() {
                    if c.gpu == gpu && best.is_none_or(|b| c.lru < b.3) {
                        best = Some((si, ri, ki, c.lru));
                    }
                }
            }
        }
    }
    let Some((si, ri, ki, _)) = best else {
        return false;
    };
    if let RangeKind::Managed { resident, .. } = &mut rm.uvm.spaces[si].ranges[ri].kind {
        let _ = resident.remove(ki);
    }
    uncharge(rm, gpu);
    true
}

/// Makes block `block` of managed range `ri` of space `si` resident on
/// `gpu` (`None`: on the CPU), evicting other chunks of that GPU if its
/// heap is short. Returns whether anything moved.
fn place(
    rm: &mut Rm,
    heap: u64,
    si: usize,
    ri: usize,
    block: u64,
    gpu: Option<u32>,
) -> RmResult<bool> {
    rm.uvm.tick += 1;
    let tick = rm.uvm.tick;
    let RangeKind::Managed { resident, .. } = &mut rm.uvm.spaces[si].ranges[ri].kind else {
        return Err(NV_ERR_INVALID_ADDRESS);
    };
    let old = resident.iter().position(|c| c.block == block);
    if let (Some(k), Some(g)) = (old, gpu) {
        if resident[k].gpu == g {
            resident[k].lru = tick;
            return Ok(false);
        }
    }
    if let Some(k) = old {
        let from = resident[k].gpu;
        let _ = resident.remove(k);
        uncharge(rm, from);
    }
    let Some(g) = gpu else {
        return Ok(old.is_some());
    };
    while rm.vram_used[g as usize] + CHUNK > heap {
        if !evict_one(rm, g) {
            return Err(NV_ERR_NO_MEMORY);
        }
    }
    let RangeKind::Managed { resident, .. } = &mut rm.uvm.spaces[si].ranges[ri].kind else {
        return Err(NV_ERR_INVALID_ADDRESS);
    };
    resident
        .push(
            Resident {
                block,
                gpu: g,
                lru: tick,
            },
            GFP_KERNEL,
        )
        .map_err(|_| NV_ERR_NO_MEMORY)?;
    rm.vram_used[g as usize] += CHUNK;
    rm.uvm.resident[g as usize] += CHUNK;
    Ok(true)
}

/// Removes range `ri` of space `si`, returning its VRAM and RM memory.
fn destroy_range(rm: &mut Rm, si: usize, ri: usize) {
    let Ok(r) = rm.uvm.spaces[si].ranges.remove(ri) else {
        return;
    };
    match r.kind {
        RangeKind::Managed { resident, .. } => {
            for c in resident.iter() {
                uncharge(rm, c.gpu);
            }
            // A managed range leaves its range groups as it goes
            // (uvm_va_range.c:504-507). GUESS: should the split fail for
            // lack of memory, the pieces stay (the driver asserts it cannot).
            let _ = rm.uvm.spaces[si].ungroup(r.start, r.len);
        }
        RangeKind::External { maps } => {
            for m in maps.iter() {
                rm.put_mem(m.mem);
            }
        }
        RangeKind::Channel | RangeKind::SkedReflected { .. } => {}
    }
}

/// Removes `gpu`'s mappings from the external ranges of space `si` (those
/// overlapping `[base, base + len)` only, if given).
fn unmap_external(rm: &mut Rm, si: usize, gpu: u32, within: Option<(u64, u64)>) {
    let mut freed = KVec::new();
    for r in rm.uvm.spaces[si].ranges.iter_mut() {
        if let RangeKind::External { maps } = &mut r.kind {
            maps.retain(|m| {
                let hit =
                    m.gpu == gpu && within.is_none_or(|(b, l)| uvm::overlaps(m.base, m.len, b, l));
                if hit && freed.push(m.mem, GFP_KERNEL).is_err() {
                    // Keep it mapped rather than lose the reference.
                    return true;
                }
                !hit
            });
        }
    }
    for mem in freed.iter() {
        rm.put_mem(*mem);
    }
}

/// Removes the channels of space `si` on `gpu` and their ranges.
fn drop_channels(rm: &mut Rm, si: usize, gpu: u32) {
    loop {
        let s = &rm.uvm.spaces[si];
        let Some(ci) = s.chans.iter().position(|c| c.gpu == gpu) else {
            return;
        };
        let base = s.chans[ci].base;
        let _ = rm.uvm.spaces[si].chans.remove(ci);
        remove_channel_range(rm, si, base);
    }
}

fn remove_channel_range(rm: &mut Rm, si: usize, base: u64) {
    let s = &rm.uvm.spaces[si];
    if let Some(ri) = s
        .ranges
        .iter()
        .position(|r| r.start == base && matches!(r.kind, RangeKind::Channel))
    {
        destroy_range(rm, si, ri);
    }
}

// ---------------------------------------------------------------------------
// Files.
// ---------------------------------------------------------------------------

/// What a file of the UVM node has become.
enum FileState {
    /// Opened, not initialised.
    Uninit,
    /// `UVM_INITIALIZE`d: the VA space with this id.
    VaSpace(u64),
    /// `UVM_MM_INITIALIZE`d for VA space `space`.
    Mm {
        space: u64,
        /// An `mm_users` reference on the VA space's recorded mm.
        _mm: ARef<MmWithUser>,
        /// The primary (VA space) file, kept open until this one closes.
        _primary: ARef<File>,
    },
}

/// An open file of the UVM node.
#[pin_data]
pub(crate) struct UvmFile {
    /// Opened on the tools minor.
    tools: bool,
    #[pin]
    state: Mutex<FileState>,
}

impl UvmFile {
    /// The VA space this file is, if it is one.
    fn va_space(&self) -> Option<u64> {
        match *self.state.lock() {
            FileState::VaSpace(id) => Some(id),
            _ => None,
        }
    }
}

/// The file operations of the UVM node's two minors.
pub(crate) struct UvmFops;

#[vtable]
impl FileOperations for UvmFops {
    type OwnerModule = crate::NvidiaDouble;
    type Private = Arc<UvmFile>;

    fn open(dev: DevT, _file: &File) -> Result<Arc<UvmFile>> {
        driver()?;
        Arc::pin_init(
            try_pin_init!(UvmFile {
                tools: dev.minor() == TOOLS_MINOR,
                state <- new_mutex!(FileState::Uninit),
            }),
            GFP_KERNEL,
        )
    }

    fn release(me: Arc<UvmFile>, _file: &File) {
        let state = core::mem::replace(&mut *me.state.lock(), FileState::Uninit);
        if let Ok(drv) = driver() {
            drv.uvm_file_closed(state);
        }
    }

    fn ioctl(me: ArcBorrow<'_, UvmFile>, _file: &File, cmd: u32, arg: usize) -> Result<isize> {
        crate::count_ioctl();
        if me.tools {
            // The tools minor serves only event-tracker commands, which the
            // double does not model.
            return Err(EINVAL);
        }
        let command = Command::decode(cmd).ok_or(ENOSYS)?;
        // The block as the claimed release lays it out.
        let row = crate::abi().uvm_command(command);
        let Some(status_at) = row.status_at else {
            // UVM_DEINITIALIZE: reads no block and does nothing.
            return Ok(0);
        };
        let drv = driver()?;
        let arg = arg as u64;
        let mut p = user::read_vec(arg, row.size)?;
        let status = drv.uvm_ioctl(&me, command, &mut p);
        if let Some(slot) = p.get_mut(status_at..status_at + 4) {
            slot.copy_from_slice(&status.to_ne_bytes());
        }
        user::write(arg, &p)?;
        Ok(0)
    }

    fn mmap(me: ArcBorrow<'_, UvmFile>, _file: &File, vma: &VmaNew) -> Result {
        if me.tools {
            // The tools node has no mmap.
            return Err(ENODEV);
        }
        let id = me.va_space().ok_or(EBADFD)?;
        driver()?.uvm_mmap(id, vma)
    }
}

/// The UVM file behind `file`, if it is one of the double's.
fn uvm_file(file: &LocalFile) -> Option<ArcBorrow<'_, UvmFile>> {
    chrdev::private::<UvmFops>(file)
}

// ---------------------------------------------------------------------------
// Managed VMAs.
// ---------------------------------------------------------------------------

/// A `vm_operations_struct` that may be a `static`: with
/// `CONFIG_USERFAULTFD` (Debian's kernels) it has a raw pointer
/// (`uffd_ops`), which is not `Sync`.
#[repr(transparent)]
struct VmOps(bindings::vm_operations_struct);

// SAFETY: the table is never written after it is built, and its pointers
// are functions and null: shared references on any thread are sound.
unsafe impl Sync for VmOps {}

/// The managed VMAs' operations. `vm_private_data` holds the VA space id
/// (null: a disabled copy).
static VM_OPS: VmOps = VmOps(bindings::vm_operations_struct {
    open: Some(vm_open),
    close: Some(vm_close),
    may_split: Some(vm_may_split),
    mremap: Some(vm_mremap),
    fault: Some(vm_fault),
    // SAFETY: all-zeroes is a valid `vm_operations_struct` (every hook absent).
    ..unsafe { core::mem::MaybeUninit::zeroed().assume_init() }
});

/// A copy of a managed VMA (fork with `MADV_DOFORK`, or the new VMA of a
/// move, which `vm_mremap` then refuses) is disabled: it owns no range and
/// faults with SIGBUS, as UVM disables VMAs of another mm.
///
/// # Safety
///
/// Called by the mm with a valid VMA under construction, mmap lock held.
unsafe extern "C" fn vm_open(vma: *mut bindings::vm_area_struct) {
    // SAFETY: `vma` is valid (see above); only its private data changes.
    unsafe { nv_double_vma_set(vma.cast(), core::ptr::null(), core::ptr::null_mut()) };
}

/// The VMA is going away (munmap, exit): its managed range goes with it,
/// and the range's GPU-resident chunks return to the heap.
///
/// # Safety
///
/// Called by the mm with a valid VMA, mmap lock held.
unsafe extern "C" fn vm_close(vma: *mut bindings::vm_area_struct) {
    // SAFETY: `vma` is valid for the call (see above).
    let id = unsafe { nv_double_vma_private(vma.cast()) } as u64;
    if id == 0 {
        return;
    }
    // SAFETY: `vma` is valid and the mmap lock is held, as `VmaRef` needs.
    let area = unsafe { kernel::mm::virt::VmaRef::from_raw(vma) };
    let (start, end) = (area.start() as u64, area.end() as u64);
    let mm = area.mm().as_raw() as usize;
    if let Ok(drv) = driver() {
        drv.uvm_vma_closed(id, start, end - start, mm);
    }
}

/// Managed VMAs cannot be split (a documented simplification: UVM splits
/// its ranges).
///
/// # Safety
///
/// Called by the mm with a valid VMA.
unsafe extern "C" fn vm_may_split(_vma: *mut bindings::vm_area_struct, _addr: c_ulong) -> c_int {
    EINVAL.to_errno()
}

/// Managed VMAs cannot be moved (a documented simplification: UVM
/// disables the moved VMA).
///
/// # Safety
///
/// Called by the mm with a valid VMA.
unsafe extern "C" fn vm_mremap(_vma: *mut bindings::vm_area_struct) -> c_int {
    EINVAL.to_errno()
}

/// CPU accesses are not served: the double populates no CPU pages.
///
/// # Safety
///
/// Called by the mm with a valid fault.
unsafe extern "C" fn vm_fault(_vmf: *mut bindings::vm_fault) -> bindings::vm_fault_t {
    bindings::vm_fault_reason_VM_FAULT_SIGBUS as bindings::vm_fault_t
}

// ---------------------------------------------------------------------------
// Commands.
// ---------------------------------------------------------------------------

/// Reads a `u64` of a parameter block (for blocks too large to decode on
/// the stack).
fn rd_u64(p: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    if let Some(s) = p.get(at..at + 8) {
        b.copy_from_slice(s);
    }
    u64::from_ne_bytes(b)
}

/// Reads a `u32` of a parameter block.
fn rd_u32(p: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    if let Some(s) = p.get(at..at + 4) {
        b.copy_from_slice(s);
    }
    u32::from_ne_bytes(b)
}

impl Driver {
    fn heap(&self, gpu: u32) -> u64 {
        heap_size(self.gpus[gpu as usize].vram)
    }

    /// The fake GPU with UUID `u`.
    fn gpu_by_uuid(&self, u: &Uuid) -> Option<u32> {
        (0..self.gpus.len() as u32).find(|&g| gpu_uuid(g) == *u)
    }

    /// Runs `f` on VA space `id` with the RM lock held.
    fn with_space<R>(&self, id: u64, f: impl FnOnce(&mut Rm, usize) -> RmResult<R>) -> RmResult<R> {
        let mut rm = self.rm.lock();
        let si = rm.uvm.index(id).ok_or(NV_ERR_INVALID_STATE)?;
        f(&mut rm, si)
    }

    /// Serves one command on file `f` with its block `p` (exactly the
    /// command's size, copied in); returns the status for `rmStatus`.
    pub(crate) fn uvm_ioctl(&self, f: &UvmFile, cmd: Command, p: &mut [u8]) -> u32 {
        let r = match cmd {
            Command::Initialize => self.uvm_initialize(f, p),
            Command::MmInitialize => self.uvm_mm_initialize(f, p),
            _ => match f.va_space() {
                None => Err(NV_ERR_ILLEGAL_ACTION),
                Some(id) => self.uvm_command(id, cmd, p),
            },
        };
        match r {
            Ok(()) => NV_OK,
            Err(s) => s,
        }
    }

    fn uvm_command(&self, id: u64, cmd: Command, p: &mut [u8]) -> RmResult {
        match cmd {
            Command::RegisterGpu => self.uvm_register_gpu(id, p),
            Command::UnregisterGpu => self.uvm_unregister_gpu(id, p),
            Command::RegisterGpuVaspace => self.uvm_register_gpu_vaspace(id, p),
            Command::UnregisterGpuVaspace => self.uvm_unregister_gpu_vaspace(id, p),
            Command::RegisterChannel => self.uvm_register_channel(id, p),
            Command::UnregisterChannel => self.uvm_unregister_channel(id, p),
            Command::EnablePeerAccess | Command::DisablePeerAccess => {
                self.uvm_peer_access(id, cmd == Command::EnablePeerAccess, p)
            }
            Command::CreateExternalRange => self.uvm_create_external_range(id, p),
            Command::MapExternalAllocation => self.uvm_map_external(id, p),
            Command::UnmapExternal => self.uvm_unmap_external(id, p),
            Command::Free => self.uvm_free(id, p),
            Command::PageableMemAccess => {
                // GUESS: the double models a kernel with HMM (no ATS): GPUs
                // reach pageable memory unless the VA space was initialised
                // with DISABLE_HMM, as uvm_va_space_pageable_mem_access_supported()
                // reports on such kernels.
                // Without HMM (`uvm_mm=0`), never.
                let flags = self.with_space(id, |rm, si| Ok(rm.uvm.spaces[si].flags))?;
                let mut q = PageableMemAccessParams::decode(p);
                q.pageable_mem_access =
                    u8::from(crate::uvm_mm() && flags & init_flags::DISABLE_HMM == 0);
                q.encode(p);
                Ok(())
            }
            Command::ValidateVaRange => {
                let q = RangeParams::decode(p);
                self.with_space(id, |rm, si| {
                    let s = &rm.uvm.spaces[si];
                    match s.range_at(q.base) {
                        Some(i) if s.ranges[i].start == q.base && s.ranges[i].len == q.length => {
                            Ok(())
                        }
                        _ => Err(NV_ERR_INVALID_ADDRESS),
                    }
                })
            }
            Command::Migrate => self.uvm_migrate(id, p),
            Command::SetPreferredLocation => {
                let q = SetPreferredLocationParams::decode(p);
                self.uvm_policy(id, q.requested_base, q.length, Some(q.preferred_location))
            }
            Command::SetAccessedBy | Command::UnsetAccessedBy => {
                let q = RangeGpuParams::decode(p);
                self.uvm_policy(id, q.base, q.length, Some(q.uuid))
            }
            Command::UnsetPreferredLocation
            | Command::EnableReadDuplication
            | Command::DisableReadDuplication => {
                let q = RangeParams::decode(p);
                self.uvm_policy(id, q.base, q.length, None)
            }
            // GUESS: semaphore pools are not modelled; the double refuses
            // them rather than pretend.
            Command::AllocSemaphorePool => Err(NV_ERR_NOT_SUPPORTED),
            Command::CreateRangeGroup => self.uvm_create_range_group(id, p),
            Command::DestroyRangeGroup => self.uvm_destroy_range_group(id, p),
            Command::SetRangeGroup => self.uvm_set_range_group(id, p),
            Command::MigrateRangeGroup => self.uvm_migrate_range_group(id, p),
            Command::MapDynamicParallelismRegion => self.uvm_map_dp_region(id, p),
            Command::ToolsReadProcessMemory | Command::ToolsWriteProcessMemory => {
                self.uvm_tools_access(id, cmd == Command::ToolsWriteProcessMemory, p)
            }
            Command::Initialize | Command::MmInitialize | Command::Deinitialize => {
                Err(NV_ERR_INVALID_STATE)
            }
        }
    }

    fn uvm_initialize(&self, f: &UvmFile, p: &mut [u8]) -> RmResult {
        let q = InitializeParams::decode(p);
        if q.flags & !init_flags::ALL != 0 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        // The file's lock serialises initialisers, so the double never
        // answers NV_ERR_BUSY_RETRY.
        let mut state = f.state.lock();
        match *state {
            FileState::Uninit => {}
            FileState::VaSpace(id) => {
                let flags = self.with_space(id, |rm, si| Ok(rm.uvm.spaces[si].flags))?;
                return if flags == q.flags {
                    Ok(())
                } else {
                    Err(NV_ERR_INVALID_ARGUMENT)
                };
            }
            FileState::Mm { .. } => return Err(NV_ERR_INVALID_ARGUMENT),
        }
        let mm = if q.flags & init_flags::MULTI_PROCESS_SHARING_MODE == 0 {
            // SAFETY: no preconditions; a non-null result carries an
            // `mmgrab` reference, which the `ARef` takes over.
            let raw = unsafe { nv_double_current_mm_grab() };
            let raw = NonNull::new(raw).ok_or(NV_ERR_INVALID_STATE)?;
            // SAFETY: `raw` is a live mm with an `mmgrab` reference that is
            // ours to give (see above); `Mm` wraps `mm_struct` transparently.
            Some(unsafe { ARef::<Mm>::from_raw(raw.cast()) })
        } else {
            None
        };
        let tgid = crate::rm::current_tgid();
        let mut rm = self.rm.lock();
        let id = rm.uvm.next_space;
        let space = Space {
            id,
            tgid,
            flags: q.flags,
            mm,
            mm_state: MmState::Unset,
            gpus: KVec::new(),
            ranges: KVec::new(),
            chans: KVec::new(),
            groups: KVec::new(),
            last_group: 0,
            faults: 0,
        };
        rm.uvm
            .spaces
            .push(space, GFP_KERNEL)
            .map_err(|_| NV_ERR_NO_MEMORY)?;
        rm.uvm.next_space += 1;
        drop(rm);
        *state = FileState::VaSpace(id);
        Ok(())
    }

    fn uvm_mm_initialize(&self, f: &UvmFile, p: &mut [u8]) -> RmResult {
        let q = MmInitializeParams::decode(p);
        let primary = fdtable::fget(q.uvm_fd).map_err(|_| NV_ERR_INVALID_ARGUMENT)?;
        let space = {
            let pf = uvm_file(&primary).ok_or(NV_ERR_INVALID_ARGUMENT)?;
            if pf.tools {
                return Err(NV_ERR_INVALID_ARGUMENT);
            }
            pf.va_space().ok_or(NV_ERR_INVALID_ARGUMENT)?
        };
        // No mm to track (MULTI_PROCESS_SHARING_MODE, or a kernel without
        // MMU notifiers: `uvm_mm=0`): NV_WARN_NOTHING_TO_DO (`uvm.c:123-127`
        // at 550.163.01).
        let has_mm = self.with_space(space, |rm, si| Ok(rm.uvm.spaces[si].mm.is_some()))?;
        if !has_mm || !crate::uvm_mm() {
            return Err(NV_WARN_NOTHING_TO_DO);
        }
        let mut state = f.state.lock();
        if !matches!(*state, FileState::Uninit) {
            return Err(NV_ERR_IN_USE);
        }
        let mm = self.with_space(space, |rm, si| {
            let s = &mut rm.uvm.spaces[si];
            match s.mm_state {
                MmState::Alive => Err(NV_ERR_INVALID_STATE),
                MmState::Released => Err(NV_ERR_PAGE_TABLE_NOT_AVAIL),
                MmState::Unset => {
                    let mm =
                        s.mm.as_ref()
                            .and_then(|m| m.mmget_not_zero())
                            .ok_or(NV_ERR_PAGE_TABLE_NOT_AVAIL)?;
                    s.mm_state = MmState::Alive;
                    Ok(mm)
                }
            }
        })?;
        // SAFETY: `primary` comes from `fget` in an ioctl, which holds no
        // `fdget_pos` on this thread.
        let primary = unsafe { LocalFile::assume_no_fdget_pos(primary) };
        *state = FileState::Mm {
            space,
            _mm: mm,
            _primary: primary,
        };
        Ok(())
    }

    /// A UVM file was released: a VA space is torn down, an mm file ends
    /// its VA space's GPU work. References to mms and files are dropped
    /// after the RM lock (an `mmput` may tear the address space down, which
    /// closes managed VMAs, which take the RM lock).
    fn uvm_file_closed(&self, state: FileState) {
        match &state {
            FileState::Uninit => {}
            FileState::VaSpace(id) => {
                let mut rm = self.rm.lock();
                let Some(si) = rm.uvm.index(*id) else {
                    return;
                };
                while !rm.uvm.spaces[si].ranges.is_empty() {
                    let last = rm.uvm.spaces[si].ranges.len() - 1;
                    destroy_range(&mut rm, si, last);
                }
                let space = rm.uvm.spaces.remove(si);
                drop(rm);
                drop(space);
            }
            FileState::Mm { space, .. } => {
                let _ = self.with_space(*space, |rm, si| {
                    rm.uvm.spaces[si].mm_state = MmState::Released;
                    Ok(())
                });
            }
        }
        drop(state);
    }

    fn uvm_register_gpu(&self, id: u64, p: &mut [u8]) -> RmResult {
        let mut q = RegisterGpuParams::decode(p);
        let gpu = self
            .gpu_by_uuid(&q.gpu_uuid)
            .ok_or(NV_ERR_GPU_UUID_NOT_FOUND)?;
        // RM's check of the caller's fd table (`nv_is_gpu_accessible`): a GPU
        // node of this GPU, not the ctl node.
        if !fdtable::current_has_file(|f| crate::file::is_gpu_file(f, gpu)) {
            return Err(NV_ERR_INSUFFICIENT_PERMISSIONS);
        }
        self.with_space(id, |rm, si| {
            let s = &mut rm.uvm.spaces[si];
            if s.gpu(gpu).is_some() {
                return Err(NV_ERR_INVALID_DEVICE);
            }
            s.gpus
                .push(GpuReg { gpu, vaspace: None }, GFP_KERNEL)
                .map_err(|_| NV_ERR_NO_MEMORY)
        })?;
        q.numa_enabled = 0;
        q.numa_node_id = -1;
        q.gpu_uuid = gpu_uuid(gpu);
        q.encode(p);
        Ok(())
    }

    fn uvm_unregister_gpu(&self, id: u64, p: &mut [u8]) -> RmResult {
        let q = GpuParams::decode(p);
        let gpu = self.gpu_by_uuid(&q.gpu_uuid).ok_or(NV_ERR_INVALID_DEVICE)?;
        self.with_space(id, |rm, si| {
            if rm.uvm.spaces[si].gpu(gpu).is_none() {
                return Err(NV_ERR_INVALID_DEVICE);
            }
            drop_channels(rm, si, gpu);
            unmap_external(rm, si, gpu, None);
            // Its resident chunks go back to system memory.
            let n = rm.uvm.spaces[si].ranges.len();
            for ri in 0..n {
                loop {
                    let block = match &rm.uvm.spaces[si].ranges[ri].kind {
                        RangeKind::Managed { resident, .. } => {
                            resident.iter().find(|c| c.gpu == gpu).map(|c| c.block)
                        }
                        _ => None,
                    };
                    let Some(block) = block else { break };
                    place(rm, 0, si, ri, block, None)?;
                }
            }
            rm.uvm.spaces[si].gpus.retain(|g| g.gpu != gpu);
            Ok(())
        })
    }

    fn uvm_register_gpu_vaspace(&self, id: u64, p: &mut [u8]) -> RmResult {
        let q = RegisterGpuVaspaceParams::decode(p);
        let gpu = self.gpu_by_uuid(&q.gpu_uuid).ok_or(NV_ERR_INVALID_DEVICE)?;
        self.with_space(id, |rm, si| {
            let s = &rm.uvm.spaces[si];
            if s.gpu(gpu).is_none() {
                return Err(NV_ERR_INVALID_DEVICE);
            }
            // Without the mm association (multi-process mode) UVM uses the
            // caller's mm; with it, the mm file must hold the mm.
            if s.mm.is_some() && s.mm_state != MmState::Alive {
                return Err(NV_ERR_PAGE_TABLE_NOT_AVAIL);
            }
            // GUESS: RM's statuses for a missing client and object.
            let obj = rm
                .any_client(q.h_client)
                .ok_or(NV_ERR_INVALID_CLIENT)?
                .find(q.h_va_space)
                .ok_or(NV_ERR_OBJECT_NOT_FOUND)?
                .kind;
            let ObjKind::VaSpace { gpu: vgpu, flags } = obj else {
                return Err(NV_ERR_INVALID_OBJECT);
            };
            if vgpu != gpu {
                return Err(NV_ERR_OTHER_DEVICE_FOUND);
            }
            if flags & abi::vaspace::FLAGS_IS_EXTERNALLY_OWNED == 0 {
                return Err(NV_ERR_INVALID_FLAGS);
            }
            let s = &mut rm.uvm.spaces[si];
            let reg = s
                .gpus
                .iter_mut()
                .find(|g| g.gpu == gpu)
                .ok_or(NV_ERR_INVALID_DEVICE)?;
            if reg.vaspace.is_some() {
                return Err(NV_ERR_INVALID_DEVICE);
            }
            reg.vaspace = Some((q.h_client, q.h_va_space));
            Ok(())
        })
    }

    fn uvm_unregister_gpu_vaspace(&self, id: u64, p: &mut [u8]) -> RmResult {
        let q = GpuParams::decode(p);
        let gpu = self.gpu_by_uuid(&q.gpu_uuid).ok_or(NV_ERR_INVALID_DEVICE)?;
        self.with_space(id, |rm, si| {
            if !rm.uvm.spaces[si].has_vaspace(gpu) {
                return Err(NV_ERR_INVALID_DEVICE);
            }
            drop_channels(rm, si, gpu);
            unmap_external(rm, si, gpu, None);
            if let Some(reg) = rm.uvm.spaces[si].gpus.iter_mut().find(|g| g.gpu == gpu) {
                reg.vaspace = None;
            }
            Ok(())
        })
    }

    fn uvm_register_channel(&self, id: u64, p: &mut [u8]) -> RmResult {
        let q = RegisterChannelParams::decode(p);
        let gpu = self.gpu_by_uuid(&q.gpu_uuid).ok_or(NV_ERR_INVALID_DEVICE)?;
        self.with_space(id, |rm, si| {
            let registered = rm.uvm.spaces[si]
                .gpu(gpu)
                .and_then(|g| g.vaspace)
                .ok_or(NV_ERR_INVALID_DEVICE)?;
            // GUESS: an unknown client is reported like an unknown channel.
            let obj = rm
                .any_client(q.h_client)
                .and_then(|c| c.find(q.h_channel))
                .map(|o| o.kind);
            let Some(ObjKind::Channel {
                gpu: cgpu,
                token,
                vaspace,
                ..
            }) = obj
            else {
                return Err(NV_ERR_INVALID_OBJECT_HANDLE);
            };
            if cgpu != gpu {
                return Err(NV_ERR_OTHER_DEVICE_FOUND);
            }
            if (q.h_client, vaspace) != registered {
                return Err(NV_ERR_INVALID_CHANNEL);
            }
            let s = &mut rm.uvm.spaces[si];
            if s.chans
                .iter()
                .any(|c| c.client == q.h_client && c.channel == q.h_channel)
            {
                return Err(NV_ERR_INVALID_CHANNEL);
            }
            if !range_ok(q.base, q.length) {
                return Err(NV_ERR_INVALID_ADDRESS);
            }
            s.add_range(q.base, q.length, RangeKind::Channel)?;
            let reg = ChanReg {
                gpu,
                client: q.h_client,
                channel: q.h_channel,
                token,
                base: q.base,
            };
            if s.chans.push(reg, GFP_KERNEL).is_err() {
                remove_channel_range(rm, si, q.base);
                return Err(NV_ERR_NO_MEMORY);
            }
            Ok(())
        })
    }

    fn uvm_unregister_channel(&self, id: u64, p: &mut [u8]) -> RmResult {
        // The release's layout (before 590 the GPU's UUID comes first;
        // the channel is found by its handles in both).
        let row = crate::abi().uvm_command(Command::UnregisterChannel);
        let at = |name| row.field(name).and_then(|o| p.get(o..)).unwrap_or(&[]);
        let q = UnregisterChannelParams {
            h_client: u32::decode(at("h_client")),
            h_channel: u32::decode(at("h_channel")),
            rm_status: 0,
        };
        self.with_space(id, |rm, si| {
            let s = &mut rm.uvm.spaces[si];
            let ci = s
                .chans
                .iter()
                .position(|c| c.client == q.h_client && c.channel == q.h_channel)
                .ok_or(NV_ERR_INVALID_CHANNEL)?;
            let base = s.chans[ci].base;
            let _ = s.chans.remove(ci);
            remove_channel_range(rm, si, base);
            Ok(())
        })
    }

    /// ENABLE/DISABLE_PEER_ACCESS: both GPUs registered and distinct, else
    /// NV_ERR_INVALID_DEVICE. The double has no peer links: enabling answers
    /// NV_ERR_NOT_SUPPORTED, so there is never a pair to disable
    /// (NV_ERR_INVALID_DEVICE).
    fn uvm_peer_access(&self, id: u64, enable: bool, p: &mut [u8]) -> RmResult {
        let q = PeerAccessParams::decode(p);
        let a = self.gpu_by_uuid(&q.gpu_uuid_a);
        let b = self.gpu_by_uuid(&q.gpu_uuid_b);
        self.with_space(id, |rm, si| {
            let s = &rm.uvm.spaces[si];
            match (a, b) {
                (Some(a), Some(b)) if a != b && s.gpu(a).is_some() && s.gpu(b).is_some() => {}
                _ => return Err(NV_ERR_INVALID_DEVICE),
            }
            Err(if enable {
                NV_ERR_NOT_SUPPORTED
            } else {
                NV_ERR_INVALID_DEVICE
            })
        })
    }

    fn uvm_create_external_range(&self, id: u64, p: &mut [u8]) -> RmResult {
        let q = RangeParams::decode(p);
        if !range_ok(q.base, q.length) {
            return Err(NV_ERR_INVALID_ADDRESS);
        }
        self.with_space(id, |rm, si| {
            let s = &mut rm.uvm.spaces[si];
            s.add_range(q.base, q.length, RangeKind::External { maps: KVec::new() })
        })
    }

    fn uvm_map_external(&self, id: u64, p: &mut [u8]) -> RmResult {
        // The claimed release's layout: 535's arrays hold 32 GPUs
        // (`uvm_ioctl.h:492-504` at 535.288.01), later ones 256.
        let row = crate::abi().uvm_command(Command::MapExternalAllocation);
        let at = |name| row.field(name).unwrap_or(p.len());
        let base = rd_u64(p, at("base"));
        let len = rd_u64(p, at("length"));
        let offset = rd_u64(p, at("offset"));
        let count = rd_u64(p, at("gpu_attributes_count"));
        let h_client = rd_u32(p, at("h_client"));
        let h_memory = rd_u32(p, at("h_memory"));
        let attributes = at("per_gpu_attributes");
        let max = (at("gpu_attributes_count").saturating_sub(attributes)
            / GpuMappingAttributes::SIZE)
            .min(uvm::MAX_GPU_ATTRIBUTES);
        if !range_ok(base, len) || offset & (PAGE - 1) != 0 {
            return Err(NV_ERR_INVALID_ADDRESS);
        }
        if count == 0 || count > max as u64 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        let mut gpus = KVec::new();
        for i in 0..count as usize {
            let at = attributes + i * GpuMappingAttributes::SIZE;
            let a = GpuMappingAttributes::decode(
                p.get(at..at + GpuMappingAttributes::SIZE)
                    .ok_or(NV_ERR_INVALID_ARGUMENT)?,
            );
            if a.gpu_mapping_type > 3 || a.gpu_caching_type > 2 || a.gpu_compression_type > 1 {
                return Err(NV_ERR_INVALID_ARGUMENT);
            }
            // GUESS: an unknown UUID is treated like a GPU without a GPU VA
            // space.
            let gpu = self.gpu_by_uuid(&a.gpu_uuid).ok_or(NV_ERR_INVALID_DEVICE)?;
            gpus.push(gpu, GFP_KERNEL).map_err(|_| NV_ERR_NO_MEMORY)?;
        }
        self.with_space(id, |rm, si| {
            let s = &rm.uvm.spaces[si];
            let ri = s
                .range_at(base)
                .filter(|&ri| {
                    let r = &s.ranges[ri];
                    matches!(r.kind, RangeKind::External { .. }) && base + len <= r.end()
                })
                .ok_or(NV_ERR_INVALID_ADDRESS)?;
            if gpus.iter().any(|&g| !s.has_vaspace(g)) {
                return Err(NV_ERR_INVALID_DEVICE);
            }
            // RM's dup of the memory (global handles), as `dupMemory` looks
            // it up at 595.45.04 (`nv_gpu_ops.c:11660-11669`): a missing
            // client is NV_ERR_INVALID_OBJECT_HANDLE (`_serverFindClient`,
            // `rs_server.c:3056-3058`), a missing object
            // NV_ERR_OBJECT_NOT_FOUND (`rs_client.c:390-392`).
            let kind = rm
                .any_client(h_client)
                .ok_or(NV_ERR_INVALID_OBJECT_HANDLE)?
                .find(h_memory)
                .ok_or(NV_ERR_OBJECT_NOT_FOUND)?
                .kind;
            let ObjKind::Memory { mem } = kind else {
                return Err(NV_ERR_INVALID_OBJECT_HANDLE);
            };
            let (owner, size, vram) = {
                let m = rm.mem(mem).ok_or(NV_ERR_OBJECT_NOT_FOUND)?;
                (m.gpu, m.size, m.vram)
            };
            // VRAM maps on its own GPU only: the double has no peer access,
            // and the owning GPU must be registered.
            if vram && (rm.uvm.spaces[si].gpu(owner).is_none() || gpus.iter().any(|&g| g != owner))
            {
                return Err(NV_ERR_INVALID_DEVICE);
            }
            if offset.checked_add(len).is_none_or(|e| e > size) {
                return Err(NV_ERR_INVALID_OFFSET);
            }
            for &g in gpus.iter() {
                // Mappings already there on that GPU are replaced.
                unmap_external(rm, si, g, Some((base, len)));
                if let RangeKind::External { maps } = &mut rm.uvm.spaces[si].ranges[ri].kind {
                    maps.push(
                        ExtMap {
                            gpu: g,
                            base,
                            len,
                            mem,
                        },
                        GFP_KERNEL,
                    )
                    .map_err(|_| NV_ERR_NO_MEMORY)?;
                }
                // The mapping holds the memory (and its VRAM) until it goes.
                if let Some(m) = rm.mem(mem) {
                    m.refs += 1;
                }
            }
            Ok(())
        })
    }

    fn uvm_unmap_external(&self, id: u64, p: &mut [u8]) -> RmResult {
        let q = RangeGpuParams::decode(p);
        if !range_ok(q.base, q.length) {
            return Err(NV_ERR_INVALID_ADDRESS);
        }
        let gpu = self.gpu_by_uuid(&q.uuid);
        self.with_space(id, |rm, si| {
            let s = &rm.uvm.spaces[si];
            let inside = s.range_at(q.base).is_some_and(|ri| {
                let r = &s.ranges[ri];
                matches!(r.kind, RangeKind::External { .. }) && q.base + q.length <= r.end()
            });
            if !inside {
                return Err(NV_ERR_INVALID_ADDRESS);
            }
            let gpu = gpu
                .filter(|&g| s.has_vaspace(g))
                .ok_or(NV_ERR_INVALID_DEVICE)?;
            unmap_external(rm, si, gpu, Some((q.base, q.length)));
            Ok(())
        })
    }

    fn uvm_free(&self, id: u64, p: &mut [u8]) -> RmResult {
        // The release's layout: before 590 the block has the length too,
        // and the range must be given whole (`uvm_free()`,
        // `uvm_va_range.c:671-685` at 580.142).
        let row = crate::abi().uvm_command(Command::Free);
        let at = |name| row.field(name).and_then(|o| p.get(o..));
        let q = at("base").map_or(0, u64::decode);
        let length = at("length").map(u64::decode);
        self.with_space(id, |rm, si| {
            let s = &rm.uvm.spaces[si];
            let ri = s
                .ranges
                .iter()
                .position(|r| r.start == q)
                .ok_or(NV_ERR_INVALID_ADDRESS)?;
            if let Some(len) = length {
                if s.ranges[ri].len != len {
                    return Err(NV_ERR_INVALID_ADDRESS);
                }
            }
            // Managed memory goes with munmap, channel ranges with
            // UNREGISTER_CHANNEL; dynamic-parallelism regions go here too
            // (uvm_va_range.c:689-707).
            if !matches!(
                s.ranges[ri].kind,
                RangeKind::External { .. } | RangeKind::SkedReflected { .. }
            ) {
                return Err(NV_ERR_INVALID_ADDRESS);
            }
            destroy_range(rm, si, ri);
            Ok(())
        })
    }

    /// The policy commands: checked, then accepted and ignored (the double
    /// has no CPU pages and no faults to steer).
    fn uvm_policy(&self, id: u64, base: u64, len: u64, processor: Option<Uuid>) -> RmResult {
        if !range_ok(base, len) {
            return Err(NV_ERR_INVALID_ADDRESS);
        }
        let gpu = processor
            .filter(|u| *u != CPU_UUID)
            .map(|u| self.gpu_by_uuid(&u));
        self.with_space(id, |rm, si| {
            let s = &rm.uvm.spaces[si];
            if !s.fully_managed(base, len) {
                return Err(NV_ERR_INVALID_ADDRESS);
            }
            match gpu {
                Some(Some(g)) if s.gpu(g).is_some() => Ok(()),
                Some(_) => Err(NV_ERR_INVALID_DEVICE),
                None => Ok(()),
            }
        })
    }

    /// UVM_MIGRATE of a managed range to a GPU or the CPU, one chunk at a
    /// time, about 2 ms per chunk moved. A fatal signal does not stop it:
    /// UVM's migration has no such check at 595.45.04 (`uvm_common.c:274`
    /// leaves it a TODO; `uvm_migrate.c` has none), so a killed caller dies
    /// when the call returns.
    fn uvm_migrate(&self, id: u64, p: &mut [u8]) -> RmResult {
        let q = MigrateParams::decode(p);
        if q.flags & !migrate_flags::ASYNC != 0 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        let is_async = q.flags & migrate_flags::ASYNC != 0;
        if (!is_async && q.semaphore_address != 0)
            || (is_async && q.semaphore_address == 0 && q.semaphore_payload != 0)
        {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        if !range_ok(q.base, q.length) {
            return Err(NV_ERR_INVALID_ADDRESS);
        }
        if q.semaphore_address != 0 {
            // No semaphore pools in the double.
            return Err(NV_ERR_INVALID_ADDRESS);
        }
        let dest = if q.destination_uuid == CPU_UUID {
            // GUESS: node 0 is the only memory node of the test VM.
            if q.cpu_numa_node != -1 && q.cpu_numa_node != 0 {
                return Err(NV_ERR_INVALID_ARGUMENT);
            }
            None
        } else {
            Some(
                self.gpu_by_uuid(&q.destination_uuid)
                    .ok_or(NV_ERR_INVALID_DEVICE)?,
            )
        };
        self.with_space(id, |rm, si| {
            let s = &rm.uvm.spaces[si];
            if dest.is_some_and(|g| !s.has_vaspace(g)) {
                return Err(NV_ERR_INVALID_DEVICE);
            }
            if !s.fully_managed(q.base, q.length) {
                return Err(NV_ERR_INVALID_ADDRESS);
            }
            Ok(())
        })?;
        // Asynchronous migrations complete before the call returns.
        self.migrate_chunks(id, q.base, q.length, dest)
    }

    /// Moves the managed pages of `[base, base + len)` to `dest` (`None`:
    /// the CPU), one chunk at a time, about 2 ms per chunk moved. A fatal
    /// signal does not stop it (no such check in UVM's production code,
    /// `uvm_common.c:274` at 595.45.04).
    fn migrate_chunks(&self, id: u64, base: u64, len: u64, dest: Option<u32>) -> RmResult {
        let heap = dest.map_or(0, |g| self.heap(g));
        let end = base + len;
        let mut cur = base;
        while cur < end {
            let moved = self.with_space(id, |rm, si| {
                // Re-found each step: another thread may have unmapped it.
                let ri = rm.uvm.spaces[si]
                    .managed_at(cur)
                    .ok_or(NV_ERR_INVALID_ADDRESS)?;
                let block = cur / CHUNK;
                let next = ((block + 1) * CHUNK)
                    .min(rm.uvm.spaces[si].ranges[ri].end())
                    .min(end);
                let moved = place(rm, heap, si, ri, block, dest)?;
                Ok((moved, next))
            })?;
            cur = moved.1;
            if moved.0 {
                fsleep(Delta::from_millis(MIGRATE_CHUNK_MS));
            }
        }
        Ok(())
    }

    /// UVM_CREATE_RANGE_GROUP: a new group, numbered per VA space from 1
    /// (uvm_range_group.c:88-122).
    fn uvm_create_range_group(&self, id: u64, p: &mut [u8]) -> RmResult {
        let gid = self.with_space(id, |rm, si| {
            let s = &mut rm.uvm.spaces[si];
            let gid = s.last_group + 1;
            s.groups
                .push(
                    Group {
                        id: gid,
                        ranges: KVec::new(),
                    },
                    GFP_KERNEL,
                )
                .map_err(|_| NV_ERR_NO_MEMORY)?;
            s.last_group = gid;
            Ok(gid)
        })?;
        let mut q = RangeGroupParams::decode(p);
        q.range_group_id = gid;
        q.encode(p);
        Ok(())
    }

    /// UVM_DESTROY_RANGE_GROUP: a group of this VA space, else
    /// NV_ERR_OBJECT_NOT_FOUND (uvm_range_group.c:148-152); its addresses
    /// leave it, the memory stays.
    fn uvm_destroy_range_group(&self, id: u64, p: &mut [u8]) -> RmResult {
        let q = RangeGroupParams::decode(p);
        self.with_space(id, |rm, si| {
            let s = &mut rm.uvm.spaces[si];
            let gi = s
                .groups
                .iter()
                .position(|g| g.id == q.range_group_id)
                .ok_or(NV_ERR_OBJECT_NOT_FOUND)?;
            let _ = s.groups.remove(gi);
            Ok(())
        })
    }

    /// UVM_SET_RANGE_GROUP (uvm_range_group.c:287-365): page-aligned range
    /// (NV_ERR_INVALID_ADDRESS), a group of this VA space or none
    /// (NV_ERR_OBJECT_NOT_FOUND), covered by managed ranges without a gap
    /// (NV_ERR_INVALID_ADDRESS). The double's groups always allow migration
    /// (PREVENT_MIGRATION is not modelled), so nothing moves (:340-341).
    fn uvm_set_range_group(&self, id: u64, p: &mut [u8]) -> RmResult {
        let q = SetRangeGroupParams::decode(p);
        if !range_ok(q.requested_base, q.length) || q.requested_base == 0 {
            return Err(NV_ERR_INVALID_ADDRESS);
        }
        self.with_space(id, |rm, si| {
            let s = &mut rm.uvm.spaces[si];
            let gi = if q.range_group_id == RANGE_GROUP_NONE {
                None
            } else {
                Some(
                    s.groups
                        .iter()
                        .position(|g| g.id == q.range_group_id)
                        .ok_or(NV_ERR_OBJECT_NOT_FOUND)?,
                )
            };
            if !s.fully_managed(q.requested_base, q.length) {
                return Err(NV_ERR_INVALID_ADDRESS);
            }
            s.ungroup(q.requested_base, q.length)?;
            if let Some(gi) = gi {
                s.groups[gi]
                    .ranges
                    .push((q.requested_base, q.length), GFP_KERNEL)
                    .map_err(|_| NV_ERR_NO_MEMORY)?;
            }
            Ok(())
        })
    }

    /// UVM_MIGRATE_RANGE_GROUP (uvm_migrate.c:1093-1200): the destination
    /// is the CPU or a GPU with a GPU VA space (NV_ERR_INVALID_DEVICE,
    /// checked first), the group one of this VA space
    /// (NV_ERR_OBJECT_NOT_FOUND); each of its ranges is migrated as by
    /// UVM_MIGRATE (managed memory only, NV_ERR_INVALID_ADDRESS).
    fn uvm_migrate_range_group(&self, id: u64, p: &mut [u8]) -> RmResult {
        let q = MigrateRangeGroupParams::decode(p);
        let dest = if q.destination_uuid == CPU_UUID {
            None
        } else {
            Some(
                self.gpu_by_uuid(&q.destination_uuid)
                    .ok_or(NV_ERR_INVALID_DEVICE)?,
            )
        };
        let pieces = self.with_space(id, |rm, si| {
            let s = &rm.uvm.spaces[si];
            if dest.is_some_and(|g| !s.has_vaspace(g)) {
                return Err(NV_ERR_INVALID_DEVICE);
            }
            let g = s
                .groups
                .iter()
                .find(|g| g.id == q.range_group_id)
                .ok_or(NV_ERR_OBJECT_NOT_FOUND)?;
            let mut pieces = KVec::new();
            for &r in g.ranges.iter() {
                pieces.push(r, GFP_KERNEL).map_err(|_| NV_ERR_NO_MEMORY)?;
            }
            Ok(pieces)
        })?;
        for &(base, len) in pieces.iter() {
            self.migrate_chunks(id, base, len, dest)?;
        }
        Ok(())
    }

    /// UVM_MAP_DYNAMIC_PARALLELISM_REGION (uvm_va_range.c:1736-1807): 4 KiB
    /// aligned, non-zero, not wrapping (NV_ERR_INVALID_ADDRESS); a GPU with
    /// a GPU VA space (NV_ERR_INVALID_DEVICE); exactly one GPU page: a
    /// power of two the GPU maps, aligned to itself
    /// (NV_ERR_INVALID_ADDRESS); no overlap (NV_ERR_UVM_ADDRESS_IN_USE).
    /// Takes no VRAM: the PTEs have no physical backing. GUESS: the double's
    /// GPUs map Ampere's page sizes (uvm_ampere_mmu.c:50-53) and reach every
    /// address below 2^49 (NV_ERR_OUT_OF_RANGE above).
    fn uvm_map_dp_region(&self, id: u64, p: &mut [u8]) -> RmResult {
        const PAGE_SIZES: u64 = (512 << 20) | (2 << 20) | (64 << 10) | (4 << 10);
        const VA_LIMIT: u64 = 1 << 49;
        let q = RangeGpuParams::decode(p);
        if !range_ok(q.base, q.length) || q.base == 0 {
            return Err(NV_ERR_INVALID_ADDRESS);
        }
        let gpu = self.gpu_by_uuid(&q.uuid);
        self.with_space(id, |rm, si| {
            let s = &mut rm.uvm.spaces[si];
            let Some(gpu) = gpu.filter(|&g| s.has_vaspace(g)) else {
                return Err(NV_ERR_INVALID_DEVICE);
            };
            if q.base + q.length > VA_LIMIT {
                return Err(NV_ERR_OUT_OF_RANGE);
            }
            if !q.length.is_power_of_two()
                || q.base & (q.length - 1) != 0
                || PAGE_SIZES & q.length == 0
            {
                return Err(NV_ERR_INVALID_ADDRESS);
            }
            s.add_range(q.base, q.length, RangeKind::SkedReflected { gpu })
        })
    }

    /// UVM_TOOLS_READ/WRITE_PROCESS_MEMORY (uvm_tools.c:2438-2610), a page
    /// at a time: the target must be in a managed range
    /// (NV_ERR_INVALID_ADDRESS, HMM off); the caller's buffer is copied
    /// with its own address space (a fault: NV_ERR_INVALID_ARGUMENT);
    /// `bytes_done` counts what was copied. GUESS: the double keeps no
    /// contents of managed pages: reads give zeros (what UVM reads from a
    /// page resident nowhere, uvm_va_block.c:12752-12754) and writes are
    /// taken and dropped.
    fn uvm_tools_access(&self, id: u64, write: bool, p: &mut [u8]) -> RmResult {
        let mut q = ToolsProcessMemoryParams::decode(p);
        q.bytes_done = 0;
        let mut status = Ok(());
        let mut page = KVec::new();
        while q.bytes_done < q.size {
            let target = q.target_va.wrapping_add(q.bytes_done);
            let now = (q.size - q.bytes_done).min(PAGE - target % PAGE);
            let buf = q.buffer.wrapping_add(q.bytes_done);
            if write {
                match user::read_vec(buf, now as usize) {
                    Ok(v) => page = v,
                    Err(_) => {
                        status = Err(NV_ERR_INVALID_ARGUMENT);
                        break;
                    }
                }
            }
            let inside = self.with_space(id, |rm, si| {
                Ok(rm.uvm.spaces[si]
                    .managed_at(target - target % PAGE)
                    .is_some())
            });
            match inside {
                Ok(true) => {}
                Ok(false) => {
                    status = Err(NV_ERR_INVALID_ADDRESS);
                    break;
                }
                Err(e) => {
                    status = Err(e);
                    break;
                }
            }
            if !write {
                page.clear();
                if page.resize(now as usize, 0, GFP_KERNEL).is_err() {
                    status = Err(NV_ERR_NO_MEMORY);
                    break;
                }
                if user::write(buf, &page).is_err() {
                    status = Err(NV_ERR_INVALID_ARGUMENT);
                    break;
                }
            }
            q.bytes_done += now;
        }
        q.encode(p);
        status
    }

    /// mmap of a VA-space file: a new managed range covering the VMA.
    fn uvm_mmap(&self, id: u64, vma: &VmaNew) -> Result {
        let start = vma.start() as u64;
        let len = (vma.end() - vma.start()) as u64;
        let mm = vma.mm().as_raw() as usize;
        let mut rm = self.rm.lock();
        let si = rm.uvm.index(id).ok_or(EBADFD)?;
        let s = &mut rm.uvm.spaces[si];
        if s.mm.as_ref().is_some_and(|m| m.as_raw() as usize != mm) {
            return Err(EOPNOTSUPP);
        }
        // SAFETY: `vma` is the VMA being set up, valid for the call.
        let pgoff = unsafe { nv_double_vma_pgoff(vma.as_ptr().cast()) } as u64;
        if pgoff.checked_mul(PAGE) != Some(start) {
            return Err(EINVAL);
        }
        let want = vm_flags::SHARED | vm_flags::READ | vm_flags::WRITE;
        if vma.flags() & want != want {
            return Err(EINVAL);
        }
        let managed = RangeKind::Managed {
            mm,
            resident: KVec::new(),
        };
        s.add_range(start, len, managed).map_err(|st| match st {
            NV_ERR_UVM_ADDRESS_IN_USE => EADDRINUSE,
            _ => ENOMEM,
        })?;
        drop(rm);
        vma.set_mixedmap();
        vma.set_dontexpand();
        vma.set_dontcopy();
        // SAFETY: the VMA is under construction and ours to set up; `VM_OPS`
        // is static. The id is a plain number, never dereferenced.
        unsafe {
            nv_double_vma_set(
                vma.as_ptr().cast(),
                core::ptr::from_ref(&VM_OPS.0).cast(),
                id as usize as *mut c_void,
            )
        };
        Ok(())
    }

    /// A managed VMA of VA space `id` closed: its range (exactly
    /// `[start, start + len)` in address space `mm`) goes.
    fn uvm_vma_closed(&self, id: u64, start: u64, len: u64, mm: usize) {
        let _ = self.with_space(id, |rm, si| {
            let s = &rm.uvm.spaces[si];
            if let Some(ri) = s.ranges.iter().position(|r| {
                r.start == start
                    && r.len == len
                    && matches!(r.kind, RangeKind::Managed { mm: m, .. } if m == mm)
            }) {
                destroy_range(rm, si, ri);
            }
            Ok(())
        });
    }

    /// An engine touch: GPU work of channel `token` on `gpu` accessed
    /// managed address `addr`. Makes its chunk resident on `gpu` in the VA
    /// space that registered the channel; false (a fault) if there is no
    /// such VA space, no managed range there, or no memory.
    pub(crate) fn uvm_touch(&self, gpu: u32, token: u32, addr: u64) -> bool {
        let heap = self.heap(gpu);
        let mut rm = self.rm.lock();
        let Some(si) = rm
            .uvm
            .spaces
            .iter()
            .position(|s| s.chans.iter().any(|c| c.gpu == gpu && c.token == token))
        else {
            return false;
        };
        let s = &rm.uvm.spaces[si];
        let ok = if s.mm_state == MmState::Released || !s.has_vaspace(gpu) {
            false
        } else {
            match s.managed_at(addr) {
                Some(ri) => place(&mut rm, heap, si, ri, addr / CHUNK, Some(gpu)).is_ok(),
                None => false,
            }
        };
        if !ok {
            rm.uvm.spaces[si].faults += 1;
        }
        ok
    }

    /// The test-only residency view (debugfs `nvidia-double/uvm`).
    /// The test-only view of each GPU's state (debugfs
    /// `nvidia-double/gpus`), one line a GPU: `gpu G heap H used U managed
    /// M dp D tsgs T`, where `used` is the VRAM taken from the heap (RM
    /// objects and managed residency), `managed` the managed residency in
    /// it, `dp` the dynamic-parallelism regions mapped on the GPU and
    /// `tsgs` the TSGs its engine has (a bare channel's own TSG included).
    pub(crate) fn gpus_view(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rm = self.rm.lock();
        for g in 0..self.gpus.len() {
            let dp = rm
                .uvm
                .spaces
                .iter()
                .flat_map(|s| s.ranges.iter())
                .filter(|r| matches!(r.kind, RangeKind::SkedReflected { gpu } if gpu as usize == g))
                .count();
            writeln!(
                f,
                "gpu {g} heap {} used {} managed {} dp {dp} tsgs {}",
                self.heap(g as u32),
                rm.vram_used[g],
                rm.uvm.resident[g],
                self.gpus[g].engine.tsg_count(),
            )?;
        }
        Ok(())
    }

    pub(crate) fn uvm_view(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rm = self.rm.lock();
        for g in 0..self.gpus.len() {
            writeln!(
                f,
                "gpu {g} heap {} used {} managed {}",
                self.heap(g as u32),
                rm.vram_used[g],
                rm.uvm.resident[g]
            )?;
        }
        for s in rm.uvm.spaces.iter() {
            write!(
                f,
                "space {} tgid {} ranges {} faults {} resident",
                s.id,
                s.tgid,
                s.ranges.len(),
                s.faults
            )?;
            for g in 0..self.gpus.len() {
                write!(f, " {}", s.resident_bytes(g as u32))?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}
