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

use kernel::{fs::File, mm::virt::VmaNew, prelude::*, sync::Arc};

use crate::clients;
use crate::file::{self, GpuFops, ProxyFile, UvmFops};
use crate::host::Host;
use crate::kapi::{fdtable, mm::UserMm, realfile::RealFile, user};
use crate::nv::abi::status::{
    NV_ERR_GPU_UUID_NOT_FOUND, NV_ERR_INSUFFICIENT_PERMISSIONS, NV_ERR_INVALID_ARGUMENT,
    NV_ERR_INVALID_DEVICE, NV_ERR_INVALID_OBJECT_HANDLE, NV_ERR_NO_MEMORY, NV_OK,
};
use crate::nv::abi::Wire;
use crate::nv::release;
use crate::nv::table::{UvmHandler, UvmRow};
use crate::nv::uvm::{self, init_flags, Command, Uuid};
use crate::objects::Charge;
use crate::vgpu::Vgpu;

pub(crate) mod space;

use space::{External, Managed, Space, UvmFile};

/// Minor of `/dev/vgpu-uvm` in vgpu's number range (after the vGPUs).
pub(crate) const UVM_MINOR: u32 = crate::vgpus::MAX_VGPU + 2;

/// What a handler of a UVM command is given.
struct Ctx<'a> {
    /// The host's GPUs.
    host: &'a Host,
    /// The caller's `/dev/vgpu-uvm` file.
    file: &'a UvmFile,
    /// Its private real file.
    real: &'a RealFile,
    /// The command's row of the dispatch table.
    row: &'static UvmRow,
    /// The caller's block.
    addr: u64,
    /// The caller's request word and argument, as it made the call.
    cmd: u32,
    arg: usize,
}

impl Ctx<'_> {
    /// The container's vGPUs.
    fn vgpus(&self) -> &[Arc<Vgpu>] {
        &self.file.space.vgpus
    }

    /// Writes `status` into the `rmStatus` of the caller's block.
    fn answer(&self, status: u32) -> Result<isize> {
        let off = self.row.status_at.ok_or(EINVAL)?;
        user::write(self.addr + off as u64, &status.to_ne_bytes())?;
        Ok(0)
    }

    /// The caller's block, copied in (on the heap: the largest is 9 KiB).
    fn block(&self) -> Result<KVec<u8>> {
        user::read_vec(self.addr, self.row.size)
    }

    /// The `rmStatus` the driver left in `blk`, vgpu's copy of the block.
    fn status(&self, blk: &[u8]) -> Result<u32> {
        let off = self.row.status_at.ok_or(EINVAL)?;
        decode(blk.get(off..).ok_or(EINVAL)?)
    }

    /// Forwards the command with `blk`, vgpu's copy of the block, as the
    /// block the driver reads (from a bounce slot: no other thread can
    /// change it first), and copies the answer to the caller's block.
    fn forward_block(&self, blk: &mut [u8]) -> Result<isize> {
        let r = self.real.ioctl_block(self.row.number, blk)?;
        user::write(self.addr, blk)?;
        Ok(r)
    }

    /// Forwards the call as the caller made it.
    fn forward(&self) -> Result<isize> {
        self.real.ioctl(self.cmd, self.arg)
    }

    /// Forwards the command with `blk` (which holds an fd at the row's
    /// `fd_at`) with that fd naming `target` in a table only the kernel can
    /// reach; the caller's block gets the answer with its own fd (`theirs`)
    /// back in place.
    fn forward_naming(&self, target: &RealFile, blk: &mut [u8], theirs: i32) -> Result<isize> {
        let off = self.row.fd_at.ok_or(EINVAL)?;
        let r = self
            .real
            .ioctl_block_naming(target, self.row.number, blk, off)?;
        blk[off..off + 4].copy_from_slice(&theirs.to_ne_bytes());
        user::write(self.addr, blk)?;
        Ok(r)
    }
}

/// Decodes a block of a few hundred bytes at most (the value lives on the
/// stack).
fn decode<T: Wire>(blk: &[u8]) -> Result<T> {
    Ok(T::decode(blk.get(..T::SIZE).ok_or(EINVAL)?))
}

/// Serves an ioctl on a `/dev/vgpu-uvm` file, by the command's row of the
/// dispatch table. Every block vgpu decides on reaches the driver from
/// vgpu's copy.
pub(crate) fn ioctl(me: &ProxyFile<UvmFile>, cmd: u32, arg: usize) -> Result<isize> {
    let u = &me.kind;
    // Default deny: a number vgpu does not know never reaches the driver,
    // which answers unknown numbers with ENOSYS too; unless the operator
    // forwards unknown numbers (`unknown_calls=1`), as the caller wrote them.
    let row = release::current().uvm_row(cmd);
    if let Some(r) = row {
        crate::rows::count(crate::rows::Family::Uvm, release::current().uvm, r);
    }
    let policy = row.map(|r| r.policy);
    if crate::deny::refuse(crate::deny::Family::Uvm, cmd, policy, || u.count_denied()) {
        return Err(ENOSYS);
    }
    let Some(row) = row else {
        return me.real.ioctl(cmd, arg);
    };
    let cx = Ctx {
        host: &me.host,
        file: u,
        real: &me.real,
        row,
        addr: arg as u64,
        cmd,
        arg,
    };
    match row.handler {
        UvmHandler::Forward => cx.forward(),
        UvmHandler::Initialize => initialize(&cx),
        UvmHandler::MmInitialize => mm_initialize(&cx),
        UvmHandler::RegisterGpu => register_gpu(&cx),
        UvmHandler::ClientChecked => client_checked(&cx),
        UvmHandler::MapExternal => map_external(&cx),
        UvmHandler::UnmapExternal => unmap_external(&cx),
        UvmHandler::UnregisterGpu => unregister_gpu(&cx),
        UvmHandler::Free => free(&cx),
        UvmHandler::DpRegion => dp_region(&cx),
    }
}

/// UVM_INITIALIZE: HMM off, since pageable memory would reach VRAM without
/// passing here. The caller sees its own flags.
fn initialize(cx: &Ctx<'_>) -> Result<isize> {
    let mut blk = cx.block()?;
    let p: uvm::InitializeParams = decode(&blk)?;
    let forced = p.flags | init_flags::DISABLE_HMM;
    blk[..8].copy_from_slice(&forced.to_ne_bytes());
    let r = cx.real.ioctl_block(cx.row.number, &mut blk)?;
    blk[..8].copy_from_slice(&p.flags.to_ne_bytes());
    user::write(cx.addr, &blk)?;
    Ok(r)
}

/// UVM_MM_INITIALIZE: the fd must name a `/dev/vgpu-uvm` file; it stands
/// for its private real file.
fn mm_initialize(cx: &Ctx<'_>) -> Result<isize> {
    let mut blk = cx.block()?;
    let p: uvm::MmInitializeParams = decode(&blk)?;
    let Ok(f) = fdtable::fget(p.uvm_fd) else {
        return cx.answer(NV_ERR_INVALID_ARGUMENT);
    };
    let Some(other) = file::of::<UvmFops>(&f) else {
        return cx.answer(NV_ERR_INVALID_ARGUMENT);
    };
    let ou = &other.kind;
    let r = cx.forward_naming(&other.real, &mut blk, p.uvm_fd)?;
    let space = &cx.file.space;
    if cx.status(&blk)? == NV_OK && !Arc::ptr_eq(&ou.space, space) {
        // One space's lock at a time (they are of one lock class).
        let linked = {
            let mut mine = space.inner.lock();
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

/// UVM_REGISTER_GPU: the driver looks for a GPU-node file of this GPU in
/// the caller's table; the caller must hold its vGPU node there, and the
/// call runs with that node's private real file in the table it looks in.
fn register_gpu(cx: &Ctx<'_>) -> Result<isize> {
    let mut blk = cx.block()?;
    let p: uvm::RegisterGpuParams = decode(&blk)?;
    let vgpus = cx.vgpus();
    let Some(gpu) = container_gpu(cx.host, vgpus, &p.gpu_uuid) else {
        return cx.answer(NV_ERR_GPU_UUID_NOT_FOUND);
    };
    if p.h_client != 0 && !clients::client_in(cx.host, p.h_client, vgpus) {
        return cx.answer(NV_ERR_INSUFFICIENT_PERMISSIONS);
    }
    let Some(node) = fdtable::current_find_file(|f| holds_node(f, vgpus, gpu)) else {
        return cx.answer(NV_ERR_INSUFFICIENT_PERMISSIONS);
    };
    let Some(pf) = file::of::<GpuFops>(&node) else {
        return cx.answer(NV_ERR_INSUFFICIENT_PERMISSIONS);
    };
    cx.forward_naming(&pf.real, &mut blk, p.rm_ctrl_fd)
}

/// The RM client the block names (at the row's `client_at`); `EINVAL` for
/// a row without one.
fn client_of(cx: &Ctx<'_>, blk: &[u8]) -> Result<u32> {
    let off = cx.row.client_at.ok_or(EINVAL)?;
    decode(blk.get(off..).ok_or(EINVAL)?)
}

/// RM handles in UVM calls are looked up by the driver globally: only
/// clients verified for the caller's container pass, and the call goes from
/// vgpu's copy of the block.
fn client_checked(cx: &Ctx<'_>) -> Result<isize> {
    let mut blk = cx.block()?;
    if !clients::client_in(cx.host, client_of(cx, &blk)?, cx.vgpus()) {
        return cx.answer(NV_ERR_INVALID_OBJECT_HANDLE);
    }
    cx.forward_block(&mut blk)
}

/// UVM_MAP_EXTERNAL_ALLOCATION: the client checked; RM memory UVM maps stays
/// charged while a GPU maps it, even after RM frees its handle. A mapping
/// replaces what its GPUs mapped where it lies (UVM unmaps that first,
/// `uvm_map_external.c` at 595.45.04, as the double does). Field by field:
/// the block is 9 KiB, too large to decode on the stack.
fn map_external(cx: &Ctx<'_>) -> Result<isize> {
    let mut blk = cx.block()?;
    // Where the release's layout has them (535's block is 1,200 bytes).
    let at = |name| cx.row.field(name).and_then(|o| blk.get(o..)).ok_or(EINVAL);
    let base: u64 = decode(at("base")?)?;
    let length: u64 = decode(at("length")?)?;
    let h_memory: u32 = decode(at("h_memory")?)?;
    let count: u64 = decode(at("gpu_attributes_count")?)?;
    let attrs = cx.row.field("per_gpu_attributes").ok_or(EINVAL)?;
    let h_client = client_of(cx, &blk)?;
    if !clients::client_in(cx.host, h_client, cx.vgpus()) {
        return cx.answer(NV_ERR_INVALID_OBJECT_HANDLE);
    }
    // The container's GPUs it maps on (the driver refuses any other: it
    // needs a GPU VA space there, which only those can have).
    let mut gpus = 0u32;
    for k in 0..count.min(uvm::MAX_GPU_ATTRIBUTES as u64) as usize {
        let off = attrs + k * uvm::GpuMappingAttributes::SIZE;
        let Some(uuid) = blk.get(off..off + 16) else {
            break;
        };
        let mut u: Uuid = [0; 16];
        u.copy_from_slice(uuid);
        gpus |= gpu_bit(cx, &u);
    }
    let r = cx.forward_block(&mut blk)?;
    if cx.status(&blk)? == NV_OK {
        unmapped(&cx.file.space, gpus, Some((base, length)));
        if let Some(charge) = clients::charge_of(cx.host, h_client, h_memory) {
            if let Err(e) = hold_external(&cx.file.space, base, length, Some(gpus), charge) {
                // No hold, no mapping: each GPU's goes again, or the
                // driver would keep memory nobody is charged for.
                for g in 0..count.min(uvm::MAX_GPU_ATTRIBUTES as u64) as usize {
                    let off = attrs + g * uvm::GpuMappingAttributes::SIZE;
                    if let Some(uuid) = blk.get(off..off + 16) {
                        let (b, l) = (base.to_ne_bytes(), length.to_ne_bytes());
                        undo(
                            cx,
                            Command::UnmapExternal,
                            &[("base", &b), ("length", &l), ("uuid", uuid)],
                        );
                    }
                }
                return Err(e);
            }
        }
    }
    Ok(r)
}

/// Sends `command` with `fields` set in the release's layout, from a kernel
/// copy, to undo what a call did when vgpu could not record it. Tried
/// again, a millisecond apart, while it fails for want of memory (an errno,
/// or `NV_ERR_NO_MEMORY`), up to 16 times: an undo given up leaves the
/// driver holding what nobody is charged for (found by the fuzz suite's
/// fault injection).
fn undo(cx: &Ctx<'_>, command: Command, fields: &[(&str, &[u8])]) {
    let row = release::current().uvm_command(command);
    let mut b = [0u8; 64];
    let Some(blk) = b.get_mut(..row.size) else {
        return;
    };
    for (name, value) in fields {
        if let Some(d) = row
            .field(name)
            .and_then(|o| blk.get_mut(o..o + value.len()))
        {
            d.copy_from_slice(value);
        }
    }
    let mut work = [0u8; 64];
    for _ in 0..16 {
        let Some(w) = work.get_mut(..blk.len()) else {
            return;
        };
        w.copy_from_slice(blk);
        let status = match cx.real.ioctl_block(command.number(), w) {
            Ok(_) => row
                .status_at
                .and_then(|o| w.get(o..o + 4))
                .map_or(NV_OK, |s| u32::from_ne_bytes([s[0], s[1], s[2], s[3]])),
            Err(_) => NV_ERR_NO_MEMORY,
        };
        if status != NV_ERR_NO_MEMORY {
            return;
        }
        kernel::time::delay::fsleep(kernel::time::Delta::from_millis(1));
    }
    pr_warn!("vgpu: could not undo UVM command {}\n", command.number());
}

/// UVM_UNMAP_EXTERNAL: forwarded from vgpu's copy; once the driver has
/// unmapped the GPU's mappings that overlap the range, their holds on that
/// GPU go (UVM drops the memory with its last mapping).
fn unmap_external(cx: &Ctx<'_>) -> Result<isize> {
    let mut blk = cx.block()?;
    let at = |name| cx.row.field(name).and_then(|o| blk.get(o..)).ok_or(EINVAL);
    let base: u64 = decode(at("base")?)?;
    let length: u64 = decode(at("length")?)?;
    let uuid: Uuid = decode(at("uuid")?)?;
    let r = cx.forward_block(&mut blk)?;
    if cx.status(&blk)? == NV_OK {
        unmapped(&cx.file.space, gpu_bit(cx, &uuid), Some((base, length)));
    }
    Ok(r)
}

/// UVM_UNREGISTER_GPU_VASPACE and UVM_UNREGISTER_GPU: forwarded from
/// vgpu's copy; once the driver has unregistered the GPU, every external
/// mapping on it is gone (`uvm_va_space.c`, the GPU VA space's removal
/// unmaps them, at 595.45.04; the double likewise), and their holds on
/// that GPU with them.
fn unregister_gpu(cx: &Ctx<'_>) -> Result<isize> {
    let mut blk = cx.block()?;
    let at = cx.row.field("gpu_uuid").ok_or(EINVAL)?;
    let uuid: Uuid = decode(blk.get(at..).ok_or(EINVAL)?)?;
    let r = cx.forward_block(&mut blk)?;
    if cx.status(&blk)? == NV_OK {
        unmapped(&cx.file.space, gpu_bit(cx, &uuid), None);
    }
    Ok(r)
}

/// The bit of the GPU with UUID `uuid` in a hold's set of GPUs, if the
/// container has a vGPU on it (0 otherwise: the driver maps only on those).
fn gpu_bit(cx: &Ctx<'_>, uuid: &Uuid) -> u32 {
    container_gpu(cx.host, cx.vgpus(), uuid)
        .filter(|&g| g < 32)
        .map_or(0, |g| 1 << g)
}

/// The GPUs in `gpus` no longer map what they mapped in `space` (where it
/// overlaps `[base, base + length)`, if given): mappings no GPU maps any
/// more let their charges go. Allocates nothing: the charges drop under
/// the space's lock (refunds take a vGPU's lock, which comes after it).
fn unmapped(space: &Arc<Space>, gpus: u32, within: Option<(u64, u64)>) {
    let mut inner = space.inner.lock();
    for e in inner.external.iter_mut() {
        let hit = within.is_none_or(|(b, l)| uvm::overlaps(e.base, e.end - e.base, b, l));
        if let (Some(g), true) = (e.gpus.as_mut(), hit) {
            *g &= !gpus;
        }
    }
    inner.external.retain(|e| e.gpus != Some(0));
}

/// UVM_FREE: what was held at its base goes with it. Allocates nothing
/// (it once gathered the holds into a list, and an allocation failure
/// left them held): the charges drop under the space's lock.
fn free(cx: &Ctx<'_>) -> Result<isize> {
    let mut blk = cx.block()?;
    // `base` where the release's layout has it (first, in every release).
    let at = cx.row.field("base").ok_or(EINVAL)?;
    let base: u64 = decode(blk.get(at..).ok_or(EINVAL)?)?;
    let r = cx.forward_block(&mut blk)?;
    if cx.status(&blk)? == NV_OK {
        cx.file
            .space
            .inner
            .lock()
            .external
            .retain(|e| e.base != base);
    }
    Ok(r)
}

// Why the rows of range groups (23, 24, 31, 53) and the tools process-
// memory calls (62, 63) are `Forward`.
//
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

/// UVM_MAP_DYNAMIC_PARALLELISM_REGION, checked and charged. The region is one GPU page
/// (uvm_va_range.c:1767-1773) of SKED-reflected PTEs, which have no
/// physical backing (uvm_va_range.c:567; uvm_turing_mmu.c:317-325: a
/// valid PTE of kind SMSKED_MESSAGE and no address), but its page
/// tables are allocated in this VA space's GPU page tree, from VRAM
/// first (uvm_va_range.c:1784-1789; uvm_mmu.c:1063-1077), and
/// nothing bounds how many regions a VA space makes: each is charged
/// their bound (`DP_REGION_PAGE_TABLES`) to the container's vGPU on
/// that GPU until UVM_FREE of the region or the end of the VA space.
/// The GPU must be the container's (the driver also wants a GPU VA
/// space there, :1752-1756, which only such a GPU can have).
fn dp_region(cx: &Ctx<'_>) -> Result<isize> {
    let mut blk = cx.block()?;
    let p: uvm::RangeGpuParams = decode(&blk)?;
    let Some(v) = container_vgpu(cx.host, cx.vgpus(), &p.uuid) else {
        return cx.answer(NV_ERR_INVALID_DEVICE);
    };
    if !v.charge(uvm::DP_REGION_PAGE_TABLES) {
        return cx.answer(NV_ERR_NO_MEMORY);
    }
    // Charged to the space's opener too. Refunded when dropped: at once
    // unless the region is made (a failed `Arc::new` drops the charge,
    // which refunds both).
    let owner = cx.file.space.user_on(v);
    let charge = Arc::new(
        Charge::new(v.clone(), uvm::DP_REGION_PAGE_TABLES, owner),
        GFP_KERNEL,
    )?;
    let r = cx.real.ioctl_block(cx.row.number, &mut blk)?;
    // Held before the answer is copied out, so a caller whose block faults
    // by then still has its region paid for.
    if cx.status(&blk)? == NV_OK {
        if let Err(e) = hold_external(&cx.file.space, p.base, p.length, None, charge) {
            // No record, no region: it goes (and the charge with it), by
            // UVM_FREE in the release's layout (580 and older want the
            // length too).
            let (b, l) = (p.base.to_ne_bytes(), p.length.to_ne_bytes());
            undo(cx, Command::Free, &[("base", &b), ("length", &l)]);
            return Err(e);
        }
    }
    user::write(cx.addr, &blk)?;
    Ok(r)
}

/// Keeps `charge` while UVM maps its memory on `gpus` (or a region) at
/// `[base, base + length)`.
fn hold_external(
    space: &Arc<Space>,
    base: u64,
    length: u64,
    gpus: Option<u32>,
    charge: Arc<Charge>,
) -> Result {
    crate::kapi::inject::record()?;
    space.inner.lock().external.push(
        External {
            base,
            end: base.saturating_add(length),
            gpus,
            _charge: charge,
        },
        GFP_KERNEL,
    )?;
    Space::list(space)
}

/// The container's vGPU on the GPU with UUID `uuid`, if it has one.
fn container_vgpu<'a>(host: &Host, vgpus: &'a [Arc<Vgpu>], uuid: &Uuid) -> Option<&'a Arc<Vgpu>> {
    let gpu = host.gpu_of_uuid(uuid)?;
    vgpus.iter().find(|v| v.config.lock().gpu == Some(gpu))
}

/// The GPU with UUID `uuid`, if the container has a vGPU on it.
fn container_gpu(host: &Host, vgpus: &[Arc<Vgpu>], uuid: &Uuid) -> Option<u32> {
    container_vgpu(host, vgpus, uuid).and_then(|v| v.config.lock().gpu)
}

/// Whether `f` is a `/dev/vgpuN` file of one of `vgpus` backed by `gpu`.
fn holds_node(f: &File, vgpus: &[Arc<Vgpu>], gpu: u32) -> bool {
    let Some(p) = file::of::<GpuFops>(f) else {
        return false;
    };
    let v = &p.kind;
    vgpus.iter().any(|w| Arc::ptr_eq(v, w)) && v.config.lock().gpu == Some(gpu)
}

/// Serves an mmap of a `/dev/vgpu-uvm` file: a managed range (or a pool
/// UVM allocated). Its size is charged to each of the container's vGPUs
/// first; the mapping fails with `ENOMEM` if a ceiling would be passed.
pub(crate) fn mmap(me: &ProxyFile<UvmFile>, vma: &VmaNew) -> Result {
    let u = &me.kind;
    let start = vma.start() as u64;
    let end = vma.end() as u64;
    let len = end.saturating_sub(start);
    let Some(mm) = UserMm::current() else {
        return Err(EINVAL);
    };
    let space = &u.space;
    // Mappings that are gone are refunded first.
    for v in space.vgpus.iter() {
        for r in v.reclaimers()?.iter() {
            r.reclaim_in_mmap();
        }
    }
    space.reconcile_in_mmap();
    if !space.charge(len) {
        return Err(ENOMEM);
    }
    if let Err(e) = crate::kapi::inject::record() {
        space.refund(len);
        return Err(e);
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
