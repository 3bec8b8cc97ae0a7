// SPDX-License-Identifier: GPL-2.0

//! `/dev/vgpu-uvm`: the nvidia-uvm node of a container.
//!
//! A container is given this node as its `/dev/nvidia-uvm`. Each open opens
//! a private file of the real nvidia-uvm node (resolved when vgpu loaded)
//! and forwards ioctl and mmap to it, as the RM nodes do, with these
//! differences (the reasons are in `docs/design-notes.md`, "UVM"):
//!
//! - `UVM_INITIALIZE` always carries `DISABLE_HMM`: pageable memory
//!   migrated into VRAM would escape every ceiling.
//! - `UVM_MM_INITIALIZE` names the primary file by an fd of the caller's
//!   table, which holds only proxy files: the call runs with that file's
//!   private real file in its place.
//! - `UVM_REGISTER_GPU` needs a real GPU-node file in the caller's fd table.
//!   The caller must hold the `/dev/vgpuN` node of one of its vGPUs on that
//!   GPU (the same rule as the driver's, one level up); the call then runs
//!   with that node's private real file in the table it looks in.
//! - RM handles in UVM calls are looked up by the driver globally; vgpu
//!   lets through only clients verified for the caller's container.
//! - Managed memory (`mmap` of a VA-space file) is charged against the
//!   ceiling of each of the container's vGPUs when mapped, and refunded once
//!   the mapping is gone. RM memory mapped by `UVM_MAP_EXTERNAL_ALLOCATION`
//!   stays charged while UVM holds it, even after RM frees its handle.
//! - A dynamic-parallelism region (`UVM_MAP_DYNAMIC_PARALLELISM_REGION`)
//!   maps no memory but makes UVM allocate page tables: the bound of those
//!   is charged to the container's vGPU on its GPU while the region lives.
//! - Range groups and the tools process-memory calls are forwarded: they
//!   reach only the VA space's own managed memory, already charged.

use kernel::{
    fs::File,
    mm::virt::VmaNew,
    new_mutex,
    prelude::*,
    sync::{Arc, Mutex},
};

use crate::kapi::{fdtable, mm::UserMm, user};
use crate::nv::abi::status::{
    NV_ERR_GPU_UUID_NOT_FOUND, NV_ERR_INSUFFICIENT_PERMISSIONS, NV_ERR_INVALID_ARGUMENT,
    NV_ERR_INVALID_DEVICE, NV_ERR_INVALID_OBJECT_HANDLE, NV_ERR_NO_MEMORY, NV_OK,
};
use crate::nv::abi::Wire;
use crate::nv::uvm::{self, init_flags, Command, Uuid};
use crate::proxy::{ProxyFile, ProxyFops};
use crate::tracker::Charge;
use crate::vgpus::Vgpu;

/// Minor of `/dev/vgpu-uvm` in vgpu's number range (after the vGPUs).
pub(crate) const UVM_MINOR: u32 = crate::vgpus::MAX_VGPU + 2;

/// A managed mapping vgpu charged.
struct Managed {
    /// Tells mappings apart across the unlocked part of a reconciliation.
    id: u64,
    /// The address space it was made in.
    mm: UserMm,
    start: u64,
    end: u64,
    /// Bytes still charged (to each of the space's vGPUs).
    charged: u64,
}

/// RM memory that UVM maps into a range and keeps allocated until the range
/// is freed, or the page tables of a dynamic-parallelism region at `base`:
/// its charge is held as long.
struct External {
    base: u64,
    _charge: Arc<Charge>,
}

struct SpaceInner {
    /// Proxy files that stand for the real file (the primary and its mm
    /// file): while any is open, the real file may still be used.
    files: u32,
    next_id: u64,
    managed: KVec<Managed>,
    external: KVec<External>,
    /// Whether the space is in its vGPUs' lists (see [`Vgpu::uvm_spaces`]).
    listed: bool,
    /// For an mm file's own space: the space it is the mm file of, after
    /// `UVM_MM_INITIALIZE`.
    mm_of: Option<Arc<Space>>,
}

/// What vgpu knows of one real nvidia-uvm file (a VA space once
/// initialised) and what it charged for it. It outlives the proxy files:
/// managed mappings hold the real file, so charges end when the mappings do.
#[pin_data]
pub(crate) struct Space {
    /// The container's vGPUs (fixed at open): each is charged for managed
    /// memory, which may become resident on any GPU the space registers.
    vgpus: KVec<Arc<Vgpu>>,
    /// Address of the real file (compared with VMAs' files, never followed).
    real: usize,
    #[pin]
    inner: Mutex<SpaceInner>,
}

impl Space {
    fn refund(&self, bytes: u64) {
        if bytes == 0 {
            return;
        }
        for v in self.vgpus.iter() {
            let mut cfg = v.config.lock();
            cfg.memory.release(bytes);
            cfg.managed = cfg.managed.saturating_sub(bytes);
        }
    }

    /// Charges `bytes` to every vGPU of the space, or to none.
    fn charge(&self, bytes: u64) -> bool {
        for (i, v) in self.vgpus.iter().enumerate() {
            let mut cfg = v.config.lock();
            if cfg.memory.reserve(bytes).is_err() {
                cfg.refused += 1;
                drop(cfg);
                for w in self.vgpus.iter().take(i) {
                    let mut c = w.config.lock();
                    c.memory.release(bytes);
                    c.managed = c.managed.saturating_sub(bytes);
                }
                return false;
            }
            cfg.managed += bytes;
        }
        true
    }

    /// Applies measured mapped sizes: refunds what is no longer mapped.
    fn settle(&self, inner: &mut SpaceInner, id: u64, mapped: u64) {
        if let Some(m) = inner.managed.iter_mut().find(|m| m.id == id) {
            if mapped < m.charged {
                self.refund(m.charged - mapped);
                m.charged = mapped;
            }
        }
        inner.managed.retain(|m| m.charged > 0);
    }

    /// Refunds the managed mappings that are gone, looking at their address
    /// spaces (takes their mmap locks: call without vgpu locks held and
    /// outside mmap handlers). Returns whether nothing is left to account:
    /// no proxy file, no managed mapping (the real file is then released,
    /// and with it UVM's hold on external memory, whose charges go too).
    pub(crate) fn reconcile(&self) -> bool {
        let mut snapshot = KVec::new();
        {
            let inner = self.inner.lock();
            for m in inner.managed.iter() {
                if snapshot
                    .push((m.id, m.mm.clone(), m.start, m.end), GFP_KERNEL)
                    .is_err()
                {
                    return false;
                }
            }
        }
        let mut measured = KVec::new();
        for (id, mm, start, end) in snapshot.iter() {
            let bytes = mm.mapped_bytes(self.real, *start, *end);
            if measured.push((*id, bytes), GFP_KERNEL).is_err() {
                return false;
            }
        }
        drop(snapshot);
        let mut inner = self.inner.lock();
        for (id, bytes) in measured.iter() {
            self.settle(&mut inner, *id, *bytes);
        }
        let done = inner.files == 0 && inner.managed.is_empty();
        let external = if done {
            core::mem::take(&mut inner.external)
        } else {
            KVec::new()
        };
        drop(inner);
        // Charges are refunded without the space's lock held.
        drop(external);
        done
    }

    /// As [`Self::reconcile`], inside an mmap handler (see
    /// [`UserMm::mapped_bytes_in_mmap`]): mappings whose address space is
    /// busy are left for later.
    fn reconcile_in_mmap(&self) {
        let mut inner = self.inner.lock();
        let mut measured = KVec::new();
        for m in inner.managed.iter() {
            if let Some(bytes) = m.mm.mapped_bytes_in_mmap(self.real, m.start, m.end) {
                if measured.push((m.id, bytes), GFP_KERNEL).is_err() {
                    return;
                }
            }
        }
        for (id, bytes) in measured.iter() {
            self.settle(&mut inner, *id, *bytes);
        }
    }

    /// Puts the space in its vGPUs' lists, so that their accounting
    /// decisions and counters can reconcile it.
    fn list(this: &Arc<Self>) -> Result {
        let mut inner = this.inner.lock();
        if inner.listed {
            return Ok(());
        }
        for v in this.vgpus.iter() {
            v.uvm_spaces.lock().push(this.clone(), GFP_KERNEL)?;
        }
        inner.listed = true;
        Ok(())
    }

    fn close_file(&self) {
        let mut inner = self.inner.lock();
        inner.files = inner.files.saturating_sub(1);
    }
}

/// State of one open `/dev/vgpu-uvm` file.
pub(crate) struct UvmFile {
    /// Its real file's space.
    space: Arc<Space>,
}

impl UvmFile {
    /// State for a new proxy file whose private real file is `real`, for a
    /// container with vGPUs `vgpus`.
    pub(crate) fn new(
        vgpus: KVec<Arc<Vgpu>>,
        real: &crate::kapi::realfile::RealFile,
    ) -> Result<Self> {
        let space = Arc::pin_init(
            pin_init!(Space {
                vgpus,
                real: real.file().as_ptr() as usize,
                inner <- new_mutex!(SpaceInner {
                    files: 1,
                    next_id: 0,
                    managed: KVec::new(),
                    external: KVec::new(),
                    listed: false,
                    mm_of: None,
                }),
            }),
            GFP_KERNEL,
        )?;
        Ok(Self { space })
    }
}

impl Drop for UvmFile {
    fn drop(&mut self) {
        self.space.close_file();
        let primary = self.space.inner.lock().mm_of.take();
        if let Some(s) = primary {
            s.close_file();
        }
    }
}

/// Writes `status` into the `rmStatus` of the block of `c` at `addr`.
fn answer(c: Command, addr: u64, status: u32) -> Result<isize> {
    let off = c.status_offset().ok_or(EINVAL)?;
    user::write(addr + off as u64, &status.to_ne_bytes())?;
    Ok(0)
}

/// The caller's block of command `c`, copied in (on the heap: the largest is
/// 9 KiB).
fn block(c: Command, addr: u64) -> Result<KVec<u8>> {
    user::read_vec(addr, c.size())
}

/// Decodes a block of a few hundred bytes at most (the value lives on the
/// stack).
fn decode<T: Wire>(blk: &[u8]) -> Result<T> {
    Ok(T::decode(blk.get(..T::SIZE).ok_or(EINVAL)?))
}

/// The `rmStatus` the driver left in the block `blk` of `c`.
fn status(c: Command, blk: &[u8]) -> Result<u32> {
    let off = c.status_offset().ok_or(EINVAL)?;
    decode(blk.get(off..).ok_or(EINVAL)?)
}

/// Forwards `c` with `blk`, vgpu's copy of the block, as the block the
/// driver reads (from a bounce slot: no other thread can change it first),
/// and copies the answer to the caller's block at `addr`.
fn forward(me: &ProxyFile, c: Command, addr: u64, blk: &mut [u8]) -> Result<isize> {
    let r = me.real.ioctl_block(c.number(), blk)?;
    user::write(addr, blk)?;
    Ok(r)
}

/// Serves an ioctl on a `/dev/vgpu-uvm` file. Every block vgpu decides on
/// reaches the driver from vgpu's copy ([`forward`]).
pub(crate) fn ioctl(me: &ProxyFile, u: &UvmFile, cmd: u32, arg: usize) -> Result<isize> {
    let vgpus = &u.space.vgpus;
    // Default deny: a number vgpu does not know never reaches the driver,
    // which answers unknown numbers with ENOSYS too; unless the operator
    // forwards unknown numbers (`unknown_calls=1`), as the caller wrote them.
    let Some(c) = Command::decode(cmd) else {
        if crate::deny::admits(crate::deny::Family::Uvm, cmd, None) {
            return me.real.ioctl(cmd, arg);
        }
        vgpus.iter().for_each(|v| v.count_denied());
        return Err(ENOSYS);
    };
    let addr = arg as u64;
    match c {
        Command::Initialize => {
            let mut blk = block(c, addr)?;
            let p: uvm::InitializeParams = decode(&blk)?;
            // HMM off: pageable memory would reach VRAM without passing here.
            let forced = p.flags | init_flags::DISABLE_HMM;
            blk[..8].copy_from_slice(&forced.to_ne_bytes());
            let r = me.real.ioctl_block(c.number(), &mut blk)?;
            // The caller sees its own flags.
            blk[..8].copy_from_slice(&p.flags.to_ne_bytes());
            user::write(addr, &blk)?;
            Ok(r)
        }
        Command::MmInitialize => {
            let mut blk = block(c, addr)?;
            let p: uvm::MmInitializeParams = decode(&blk)?;
            let Ok(file) = fdtable::fget(p.uvm_fd) else {
                return answer(c, addr, NV_ERR_INVALID_ARGUMENT);
            };
            // The fd must name a /dev/vgpu-uvm file: it stands for its
            // private real file.
            let Some(other) = crate::kapi::chrdev::private::<ProxyFops>(&file) else {
                return answer(c, addr, NV_ERR_INVALID_ARGUMENT);
            };
            let Some(ou) = &other.uvm else {
                return answer(c, addr, NV_ERR_INVALID_ARGUMENT);
            };
            let r = call_naming(me, &other.real, c, addr, &mut blk, p.uvm_fd)?;
            if status(c, &blk)? == NV_OK && !Arc::ptr_eq(&ou.space, &u.space) {
                // One space's lock at a time (they are of one lock class).
                let linked = {
                    let mut mine = u.space.inner.lock();
                    let first = mine.mm_of.is_none();
                    if first {
                        mine.mm_of = Some(ou.space.clone());
                    }
                    first
                };
                if linked {
                    ou.space.inner.lock().files += 1;
                }
            }
            Ok(r)
        }
        Command::RegisterGpu => {
            let mut blk = block(c, addr)?;
            let p: uvm::RegisterGpuParams = decode(&blk)?;
            let Some(gpu) = container_gpu(me, vgpus, &p.gpu_uuid) else {
                return answer(c, addr, NV_ERR_GPU_UUID_NOT_FOUND);
            };
            if p.h_client != 0 && !crate::ctl::client_in(p.h_client, vgpus) {
                return answer(c, addr, NV_ERR_INSUFFICIENT_PERMISSIONS);
            }
            // The driver looks for a GPU-node file of this GPU in the
            // caller's table: the caller must hold its vGPU node there.
            let Some(node) = fdtable::current_find_file(|f| holds_node(f, vgpus, gpu)) else {
                return answer(c, addr, NV_ERR_INSUFFICIENT_PERMISSIONS);
            };
            let Some(pf) = crate::kapi::chrdev::private::<ProxyFops>(&node) else {
                return answer(c, addr, NV_ERR_INSUFFICIENT_PERMISSIONS);
            };
            call_naming(me, &pf.real, c, addr, &mut blk, p.rm_ctrl_fd)
        }
        Command::RegisterGpuVaspace | Command::RegisterChannel => {
            let mut blk = block(c, addr)?;
            let h_client = if c == Command::RegisterChannel {
                decode::<uvm::RegisterChannelParams>(&blk)?.h_client
            } else {
                decode::<uvm::RegisterGpuVaspaceParams>(&blk)?.h_client
            };
            if !crate::ctl::client_in(h_client, vgpus) {
                return answer(c, addr, NV_ERR_INVALID_OBJECT_HANDLE);
            }
            forward(me, c, addr, &mut blk)
        }
        Command::UnregisterChannel => {
            let mut blk = block(c, addr)?;
            let p: uvm::UnregisterChannelParams = decode(&blk)?;
            if !crate::ctl::client_in(p.h_client, vgpus) {
                return answer(c, addr, NV_ERR_INVALID_OBJECT_HANDLE);
            }
            forward(me, c, addr, &mut blk)
        }
        Command::MapExternalAllocation => {
            // Field by field: the block is 9 KiB, too large to decode on the
            // stack.
            use uvm::map_external as mx;
            let mut blk = block(c, addr)?;
            let base: u64 = decode(blk.get(mx::BASE..).ok_or(EINVAL)?)?;
            let h_client: u32 = decode(blk.get(mx::H_CLIENT..).ok_or(EINVAL)?)?;
            let h_memory: u32 = decode(blk.get(mx::H_MEMORY..).ok_or(EINVAL)?)?;
            if !crate::ctl::client_in(h_client, vgpus) {
                return answer(c, addr, NV_ERR_INVALID_OBJECT_HANDLE);
            }
            let r = forward(me, c, addr, &mut blk)?;
            if status(c, &blk)? == NV_OK {
                if let Some(charge) = crate::ctl::charge_of(h_client, h_memory) {
                    hold_external(&u.space, base, charge)?;
                }
            }
            Ok(r)
        }
        Command::Free => {
            let mut blk = block(c, addr)?;
            let p: uvm::FreeParams = decode(&blk)?;
            let r = forward(me, c, addr, &mut blk)?;
            if status(c, &blk)? == NV_OK {
                let gone = {
                    let mut inner = u.space.inner.lock();
                    let mut gone = KVec::new();
                    let mut i = 0;
                    while i < inner.external.len() {
                        if inner.external[i].base == p.base {
                            if let Ok(e) = inner.external.remove(i) {
                                gone.push(e, GFP_KERNEL)?;
                            }
                        } else {
                            i += 1;
                        }
                    }
                    gone
                };
                drop(gone);
            }
            Ok(r)
        }
        // Range groups, forwarded as they are (reasons from
        // NVIDIA/open-gpu-kernel-modules 595.45.04, kernel-open/nvidia-uvm/):
        // - a group is a number in its VA space's own radix tree, counted
        //   per VA space (uvm_range_group.c:99-116, 148; uvm_va_space.h:
        //   218-221): a file reaches only its own space's groups, never
        //   another tenant's;
        // - creating one allocates a small kernel object (sysmem,
        //   uvm_range_group.c:95), no GPU memory;
        // - SET_RANGE_GROUP refuses any range not covered, without a gap, by
        //   managed ranges of this VA space (uvm_range_group.c:321-333,
        //   NV_ERR_INVALID_ADDRESS), and the only pages it moves are those
        //   managed ranges', to their preferred location (:340-354,
        //   :189-214);
        // - MIGRATE_RANGE_GROUP moves to the CPU or to a GPU with a GPU VA
        //   space in this VA space (uvm_migrate.c:1117-1128; GPUs are
        //   registered only through the checks above), and only ranges that
        //   start in managed memory (:1149-1165), through the same
        //   uvm_migrate() as UVM_MIGRATE.
        // Managed memory was charged its whole length at mmap and HMM is off
        // (UVM_INITIALIZE above): no page these commands make resident can
        // pass the ceiling.
        Command::CreateRangeGroup
        | Command::DestroyRangeGroup
        | Command::SetRangeGroup
        | Command::MigrateRangeGroup => me.real.ioctl(cmd, arg),
        // Checked and charged. The region is one GPU page
        // (uvm_va_range.c:1767-1773) of SKED-reflected PTEs, which have no
        // physical backing (uvm_va_range.c:567; uvm_turing_mmu.c:317-325: a
        // valid PTE of kind SMSKED_MESSAGE and no address), but its page
        // tables are allocated in this VA space's GPU page tree, from VRAM
        // first (uvm_va_range.c:1784-1789; uvm_mmu.c:1063-1077), and
        // nothing bounds how many regions a VA space makes: each is charged
        // their bound (`DP_REGION_PAGE_TABLES`) to the container's vGPU on
        // that GPU until UVM_FREE of the region or the end of the VA space.
        // The GPU must be the container's (the driver also wants a GPU VA
        // space there, :1752-1756, which only such a GPU can have).
        Command::MapDynamicParallelismRegion => {
            let mut blk = block(c, addr)?;
            let p: uvm::RangeGpuParams = decode(&blk)?;
            let Some(v) = container_vgpu(me, vgpus, &p.uuid) else {
                return answer(c, addr, NV_ERR_INVALID_DEVICE);
            };
            if !v.charge(uvm::DP_REGION_PAGE_TABLES) {
                return answer(c, addr, NV_ERR_NO_MEMORY);
            }
            // Refunded when dropped: at once unless the region is made.
            let charge = Arc::new(
                Charge {
                    vgpu: v.clone(),
                    bytes: uvm::DP_REGION_PAGE_TABLES,
                },
                GFP_KERNEL,
            )
            .inspect_err(|_| v.config.lock().memory.release(uvm::DP_REGION_PAGE_TABLES))?;
            let r = me.real.ioctl_block(c.number(), &mut blk)?;
            // Held before the answer is copied out, so a caller whose block
            // faults by then still has its region paid for.
            if status(c, &blk)? == NV_OK {
                if let Err(e) = hold_external(&u.space, p.base, charge) {
                    // No record, no region: it goes (and the charge with it).
                    let mut free = [0u8; uvm::FreeParams::SIZE];
                    uvm::FreeParams {
                        base: p.base,
                        rm_status: 0,
                    }
                    .encode(&mut free);
                    let _ = me.real.ioctl_block(Command::Free.number(), &mut free);
                    return Err(e);
                }
            }
            user::write(addr, &blk)?;
            Ok(r)
        }
        // Forwarded, in the caller's task: the target address is looked up
        // in this file's VA space only, managed ranges only with HMM off
        // (uvm_tools.c:2494-2501; uvm_va_block.c:12553-12554;
        // uvm_hmm.c:627-628), and `buffer` is copied with copy_to_user /
        // copy_from_user (uvm_tools.c:2483, 2561), so in the caller's own
        // address space. A read of a page resident nowhere returns zeros
        // (uvm_va_block.c:12752-12754); a write makes the page resident where
        // it already is closest, else on the CPU (uvm_va_block.c:
        // 12639-12660): never new VRAM. Staging is one page of sysmem
        // (uvm_tools.c:2460).
        Command::ToolsReadProcessMemory | Command::ToolsWriteProcessMemory => {
            me.real.ioctl(cmd, arg)
        }
        _ => me.real.ioctl(cmd, arg),
    }
}

/// Forwards command `c` with `blk`, vgpu's copy of its block (which holds an
/// fd at [`Command::embedded_fd`]), with that fd naming `target` in a table
/// only the kernel can reach; the caller's block at `addr` gets the answer
/// with its own fd (`theirs`) back in place.
fn call_naming(
    me: &ProxyFile,
    target: &crate::kapi::realfile::RealFile,
    c: Command,
    addr: u64,
    blk: &mut [u8],
    theirs: i32,
) -> Result<isize> {
    let off = c.embedded_fd().ok_or(EINVAL)?;
    let r = me.real.ioctl_block_naming(target, c.number(), blk, off)?;
    blk[off..off + 4].copy_from_slice(&theirs.to_ne_bytes());
    user::write(addr, blk)?;
    Ok(r)
}

/// Keeps `charge` while UVM maps its memory (or a region) at `base`.
fn hold_external(space: &Arc<Space>, base: u64, charge: Arc<Charge>) -> Result {
    space.inner.lock().external.push(
        External {
            base,
            _charge: charge,
        },
        GFP_KERNEL,
    )?;
    Space::list(space)
}

/// The container's vGPU on the GPU with UUID `uuid`, if it has one.
fn container_vgpu<'a>(
    me: &ProxyFile,
    vgpus: &'a [Arc<Vgpu>],
    uuid: &Uuid,
) -> Option<&'a Arc<Vgpu>> {
    let gpu = me.state.gpu_of_uuid(uuid)?;
    vgpus.iter().find(|v| v.config.lock().gpu == Some(gpu))
}

/// The GPU with UUID `uuid`, if the container has a vGPU on it.
fn container_gpu(me: &ProxyFile, vgpus: &[Arc<Vgpu>], uuid: &Uuid) -> Option<u32> {
    let gpu = me.state.gpu_of_uuid(uuid)?;
    vgpus
        .iter()
        .any(|v| v.config.lock().gpu == Some(gpu))
        .then_some(gpu)
}

/// Whether `f` is a `/dev/vgpuN` file of one of `vgpus` backed by `gpu`.
fn holds_node(f: &File, vgpus: &[Arc<Vgpu>], gpu: u32) -> bool {
    let Some(p) = crate::kapi::chrdev::private::<ProxyFops>(f) else {
        return false;
    };
    let Some(v) = &p.vgpu else {
        return false;
    };
    vgpus.iter().any(|w| Arc::ptr_eq(v, w)) && v.config.lock().gpu == Some(gpu)
}

/// Serves an mmap of a `/dev/vgpu-uvm` file: a managed range (or a pool
/// UVM allocated). Its size is charged to each of the container's vGPUs
/// first; the mapping fails with `ENOMEM` if a ceiling would be passed.
pub(crate) fn mmap(me: &ProxyFile, u: &UvmFile, vma: &VmaNew) -> Result {
    let start = vma.start() as u64;
    let end = vma.end() as u64;
    let len = end.saturating_sub(start);
    let Some(mm) = UserMm::current() else {
        return Err(EINVAL);
    };
    let space = &u.space;
    // Mappings that are gone are refunded first.
    for v in space.vgpus.iter() {
        let listed = v.uvm_spaces.lock().clone_list()?;
        for s in listed.iter() {
            s.reconcile_in_mmap();
        }
    }
    space.reconcile_in_mmap();
    if !space.charge(len) {
        return Err(ENOMEM);
    }
    let id = {
        let mut inner = space.inner.lock();
        let id = inner.next_id;
        inner.next_id += 1;
        let m = Managed {
            id,
            mm,
            start,
            end,
            charged: len,
        };
        if let Err(e) = inner.managed.push(m, GFP_KERNEL) {
            drop(inner);
            space.refund(len);
            return Err(e.into());
        }
        id
    };
    let undo = |e: Error| {
        let mut inner = space.inner.lock();
        space.settle(&mut inner, id, 0);
        e
    };
    Space::list(space).map_err(undo)?;
    me.real.mmap(vma).map_err(undo)
}

/// A copy of a vGPU's list of spaces, to use without its lock.
pub(crate) trait CloneList {
    /// The copy.
    fn clone_list(&self) -> Result<KVec<Arc<Space>>>;
}

impl CloneList for KVec<Arc<Space>> {
    fn clone_list(&self) -> Result<KVec<Arc<Space>>> {
        let mut out = KVec::with_capacity(self.len(), GFP_KERNEL)?;
        for s in self.iter() {
            out.push(s.clone(), GFP_KERNEL)?;
        }
        Ok(out)
    }
}

/// Refunds what `v`'s spaces no longer map and forgets spaces with nothing
/// left. Takes address spaces' mmap locks: call with no vgpu lock held.
pub(crate) fn reconcile_vgpu(v: &Vgpu) {
    let Ok(listed) = v.uvm_spaces.lock().clone_list() else {
        return;
    };
    for s in listed.iter() {
        if s.reconcile() {
            v.uvm_spaces.lock().retain(|t| !Arc::ptr_eq(t, s));
        }
    }
}
