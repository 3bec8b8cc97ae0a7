// SPDX-License-Identifier: GPL-2.0

//! The nvidia-uvm node (`/dev/nvidia-uvm`): its commands, typed, and managed
//! memory (`mmap` of the node).
//!
//! UVM's ioctl numbers are plain integers (no size or direction bits); the
//! driver copies the command's whole block in, and back out whatever
//! happened, with the verdict in the block's `rmStatus`. The ioctl itself
//! fails only for a bad pointer (`EFAULT`) or an unknown command
//! (`ENOSYS`). So every typed call here returns [`Error::Os`] for the
//! former and [`Error::Rm`] for a status other than `NV_OK`.
//!
//! The usual order (what libcuda does, `docs/uvm-abi.md` section 8):
//!
//! ```no_run
//! use nvclient::uvm::{Uvm, CPU_UUID};
//!
//! # fn main() -> nvclient::Result<()> {
//! # let (client, sub, device) = (0, 0, 0);
//! let ctl = nvclient::Ctl::open_default()?;
//! let _gpu = nvclient::Gpu::open_index(0)?; // REGISTER_GPU checks for it
//! let uvm = Uvm::open_default()?;
//! uvm.initialize(0)?;
//! let mm = Uvm::open_default()?;
//! mm.mm_initialize(uvm.fd())?;
//! let uuid = ctl.gpu_uuid(client, sub)?;
//! uvm.register_gpu(&uuid, -1, 0)?;
//! let vas = ctl.alloc_external_va_space(client, device, 0)?;
//! uvm.register_gpu_vaspace(&uuid, -1, client, vas)?;
//! let range = uvm.map_managed(4 << 20)?;
//! uvm.migrate(range.addr(), range.len() as u64, &uuid)?;
//! uvm.migrate(range.addr(), range.len() as u64, &CPU_UUID)?;
//! # Ok(())
//! # }
//! ```

use std::fs::File;
use std::os::fd::{AsRawFd, RawFd};
use std::path::Path;

use crate::abi::{
    ctrl, vaspace, GidInfoParams, Handle, VaSpaceAllocParams, Wire, GID_FLAGS_FORMAT_BINARY,
};
use crate::{rm_result, Ctl, Error, Node, Result};

use vgpu_logic::nv::table::UvmRow;
use vgpu_logic::nv::uvm::r580;
pub use vgpu_logic::nv::uvm::{
    init_flags, migrate_flags, AllocSemaphorePoolParams, Command, FreeParams, GpuMappingAttributes,
    GpuParams, InitializeParams, MapExternalAllocationParams, MigrateParams,
    MigrateRangeGroupParams, MmInitializeParams, PageableMemAccessParams, PeerAccessParams,
    RangeGpuParams, RangeGroupParams, RangeParams, RegisterChannelParams, RegisterGpuParams,
    RegisterGpuVaspaceParams, SetPreferredLocationParams, SetRangeGroupParams,
    ToolsProcessMemoryParams, UnregisterChannelParams, Uuid, CHUNK, CPU_UUID,
    DP_REGION_PAGE_TABLES, PAGE, RANGE_GROUP_NONE,
};

/// Whether `c` is a tools process-memory command (its block names a buffer).
fn is_tools_access(c: Command) -> bool {
    matches!(
        c,
        Command::ToolsReadProcessMemory | Command::ToolsWriteProcessMemory
    )
}

/// Command `c`'s row in the release the library speaks.
fn row(c: Command) -> &'static UvmRow {
    crate::speaks().uvm_command(c)
}

/// Command `c`'s block size in the release the library speaks.
pub fn block_size(c: Command) -> usize {
    row(c).size
}

/// Reads the `rmStatus` of command `cmd` from its block.
fn status_of(cmd: Command, block: &[u8]) -> Result<u32> {
    let at = row(cmd)
        .status_at
        .ok_or(Error::Invalid("command has no parameter block"))?;
    let b = block
        .get(at..at + 4)
        .ok_or(Error::Invalid("block shorter than the command's"))?;
    Ok(u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
}

/// The text form of a UUID, `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` (what
/// GET_GID_INFO returns without the binary flag).
pub fn uuid_text(u: &Uuid) -> String {
    let hex: Vec<String> = u.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "GPU-{}-{}-{}-{}-{}",
        hex[0..4].concat(),
        hex[4..6].concat(),
        hex[6..8].concat(),
        hex[8..10].concat(),
        hex[10..16].concat()
    )
}

/// A process's UVM state for one GPU, set up as libcuda does: a VA-space
/// file with its mm file, the GPU registered (the caller must hold the GPU's
/// node open: the driver checks its fd table) and an externally owned RM VA
/// space registered as the GPU's.
pub struct UvmContext {
    /// The VA-space file.
    pub uvm: Uvm,
    /// Its mm file.
    pub mm: Uvm,
    /// The GPU's UUID (binary GID).
    pub uuid: Uuid,
    /// What `UVM_REGISTER_GPU` returned.
    pub registered: RegisterGpuParams,
    /// The RM VA space (FERMI_VASPACE_A, externally owned).
    pub vas: Handle,
}

impl UvmContext {
    /// Sets it up on the UVM node at `path` for the GPU of subdevice
    /// `h_subdevice` under device `h_device` of client `h_client` of `ctl`.
    pub fn open(
        path: impl AsRef<Path>,
        ctl: &Ctl,
        h_client: Handle,
        h_device: Handle,
        h_subdevice: Handle,
    ) -> Result<UvmContext> {
        let uvm = Uvm::open(&path)?;
        uvm.initialize(0)?;
        let mm = Uvm::open(&path)?;
        mm.mm_initialize(uvm.fd())?;
        let uuid = ctl.gpu_uuid(h_client, h_subdevice)?;
        let registered = uvm.register_gpu(&uuid, -1, 0)?;
        let vas = ctl.alloc_external_va_space(h_client, h_device, 0)?;
        uvm.register_gpu_vaspace(&uuid, -1, h_client, vas)?;
        Ok(UvmContext {
            uvm,
            mm,
            uuid,
            registered,
            vas,
        })
    }
}

/// Mapping attributes for `gpu` with every choice left to the driver.
pub fn default_attributes(gpu: &Uuid) -> GpuMappingAttributes {
    GpuMappingAttributes {
        gpu_uuid: *gpu,
        ..Default::default()
    }
}

/// An open file of the nvidia-uvm node.
#[derive(Debug)]
pub struct Uvm {
    node: Node,
}

impl Uvm {
    /// Where the node usually is (made from `/proc/devices`, major
    /// `nvidia-uvm`, minor 0).
    pub const DEFAULT_PATH: &'static str = "/dev/nvidia-uvm";
    /// The tools node (same major, minor 1).
    pub const TOOLS_PATH: &'static str = "/dev/nvidia-uvm-tools";

    /// Opens the node at `path` read-write (close-on-exec).
    pub fn open(path: impl AsRef<Path>) -> Result<Uvm> {
        Ok(Uvm {
            node: Node::open(path)?,
        })
    }

    /// Opens [`Uvm::DEFAULT_PATH`].
    pub fn open_default() -> Result<Uvm> {
        Uvm::open(Uvm::DEFAULT_PATH)
    }

    /// The path it was opened at.
    pub fn path(&self) -> &Path {
        self.node.path()
    }

    /// The open file.
    pub fn file(&self) -> &File {
        self.node.file()
    }

    /// The fd number (what `UVM_MM_INITIALIZE` names).
    pub fn fd(&self) -> RawFd {
        self.node.fd()
    }

    /// Issues ioctl `cmd` (a plain UVM command number) with `block` as its
    /// argument, as is: for tests that send odd numbers or sizes. The
    /// driver copies its own idea of the block size in and out, so `block`
    /// must be at least that long. `Err(Error::Os)` if the ioctl fails; the
    /// status is left in the block.
    /// The tools process-memory commands are refused here (their block
    /// names a buffer the driver writes to): use
    /// [`Uvm::tools_read_process_memory`] and its kin.
    pub fn call(&self, cmd: u32, block: &mut [u8]) -> Result<()> {
        if let Some(c) = Command::decode(cmd) {
            if block.len() < block_size(c) {
                return Err(Error::Invalid("block shorter than the command's"));
            }
            if is_tools_access(c) {
                return Err(Error::Invalid(
                    "tools process-memory blocks name a buffer: use the typed calls",
                ));
            }
        }
        // SAFETY: for a known command `block` is at least as long as the
        // block the driver copies in and out (checked above), and no UVM
        // block but the tools ones (refused above) holds pointers to other
        // memory; for an unknown number the driver copies nothing.
        unsafe { crate::node::ioctl_buf(self.file(), cmd, block) }
    }

    /// Issues ioctl `cmd` with `arg` as the raw argument word (e.g. a bad
    /// pointer, or none for `UVM_DEINITIALIZE`).
    pub fn call_raw(&self, cmd: u32, arg: usize) -> Result<()> {
        // SAFETY: the driver only touches user memory at `arg` through
        // copy_{from,to}_user, which fail with EFAULT for bad addresses.
        let rc = unsafe { libc::ioctl(self.fd(), cmd as libc::Ioctl, arg) };
        if rc < 0 {
            return Err(Error::last_os());
        }
        Ok(())
    }

    /// Issues command `cmd` with a raw block of exactly its size and checks
    /// the status.
    pub fn command_bytes(&self, cmd: Command, block: &mut [u8]) -> Result<()> {
        if block.len() != block_size(cmd) {
            return Err(Error::Invalid("block of the wrong size for the command"));
        }
        self.call(cmd.number(), block)?;
        rm_result(status_of(cmd, block)?)
    }

    /// Issues command `cmd` with a typed block, decoding the driver's
    /// copy-out back into it (also on an RM failure), and checks the status.
    pub fn command<T: Wire>(&self, cmd: Command, params: &mut T) -> Result<()> {
        if T::SIZE != block_size(cmd) {
            return Err(Error::Invalid(
                "block type of the wrong size for the command",
            ));
        }
        let mut b = vec![0u8; T::SIZE];
        params.encode(&mut b);
        self.call(cmd.number(), &mut b)?;
        *params = T::decode(&b);
        rm_result(status_of(cmd, &b)?)
    }

    /// UVM_INITIALIZE with `flags` ([`init_flags`]): makes this file a VA
    /// space bound to the calling process's mm.
    pub fn initialize(&self, flags: u64) -> Result<()> {
        let mut p = InitializeParams {
            flags,
            rm_status: 0,
        };
        self.command(Command::Initialize, &mut p)
    }

    /// UVM_DEINITIALIZE (no block; does nothing).
    pub fn deinitialize(&self) -> Result<()> {
        self.call_raw(Command::Deinitialize.number(), 0)
    }

    /// UVM_MM_INITIALIZE on this (fresh) file for the VA-space file `uvm_fd`.
    pub fn mm_initialize(&self, uvm_fd: RawFd) -> Result<()> {
        let mut p = MmInitializeParams {
            uvm_fd,
            rm_status: 0,
        };
        self.command(Command::MmInitialize, &mut p)
    }

    /// UVM_REGISTER_GPU: returns the block as the driver left it (the UUID
    /// it registered, NUMA information).
    pub fn register_gpu(
        &self,
        uuid: &Uuid,
        rm_ctrl_fd: i32,
        h_client: Handle,
    ) -> Result<RegisterGpuParams> {
        let mut p = RegisterGpuParams {
            gpu_uuid: *uuid,
            rm_ctrl_fd,
            h_client,
            ..Default::default()
        };
        self.command(Command::RegisterGpu, &mut p)?;
        Ok(p)
    }

    /// UVM_UNREGISTER_GPU.
    pub fn unregister_gpu(&self, uuid: &Uuid) -> Result<()> {
        let mut p = GpuParams {
            gpu_uuid: *uuid,
            rm_status: 0,
        };
        self.command(Command::UnregisterGpu, &mut p)
    }

    /// UVM_REGISTER_GPU_VASPACE of RM VA space `(h_client, h_va_space)`.
    pub fn register_gpu_vaspace(
        &self,
        uuid: &Uuid,
        rm_ctrl_fd: i32,
        h_client: Handle,
        h_va_space: Handle,
    ) -> Result<()> {
        let mut p = RegisterGpuVaspaceParams {
            gpu_uuid: *uuid,
            rm_ctrl_fd,
            h_client,
            h_va_space,
            rm_status: 0,
        };
        self.command(Command::RegisterGpuVaspace, &mut p)
    }

    /// UVM_UNREGISTER_GPU_VASPACE.
    pub fn unregister_gpu_vaspace(&self, uuid: &Uuid) -> Result<()> {
        let mut p = GpuParams {
            gpu_uuid: *uuid,
            rm_status: 0,
        };
        self.command(Command::UnregisterGpuVaspace, &mut p)
    }

    /// UVM_REGISTER_CHANNEL of RM channel `(h_client, h_channel)`, its
    /// context buffers at `[base, base + length)`.
    pub fn register_channel(
        &self,
        uuid: &Uuid,
        rm_ctrl_fd: i32,
        h_client: Handle,
        h_channel: Handle,
        base: u64,
        length: u64,
    ) -> Result<()> {
        let mut p = RegisterChannelParams {
            gpu_uuid: *uuid,
            rm_ctrl_fd,
            h_client,
            h_channel,
            base,
            length,
            rm_status: 0,
        };
        self.command(Command::RegisterChannel, &mut p)
    }

    /// UVM_UNREGISTER_CHANNEL of a channel on GPU `gpu` (which releases
    /// before 590 name in the block).
    pub fn unregister_channel(
        &self,
        gpu: &Uuid,
        h_client: Handle,
        h_channel: Handle,
    ) -> Result<()> {
        if row(Command::UnregisterChannel).size != UnregisterChannelParams::SIZE {
            let mut p = r580::UnregisterChannelParams {
                gpu_uuid: *gpu,
                h_client,
                h_channel,
                rm_status: 0,
            };
            return self.command(Command::UnregisterChannel, &mut p);
        }
        let mut p = UnregisterChannelParams {
            h_client,
            h_channel,
            rm_status: 0,
        };
        self.command(Command::UnregisterChannel, &mut p)
    }

    /// UVM_ENABLE_PEER_ACCESS between two registered GPUs.
    pub fn enable_peer_access(&self, a: &Uuid, b: &Uuid) -> Result<()> {
        self.peer(Command::EnablePeerAccess, a, b)
    }

    /// UVM_DISABLE_PEER_ACCESS.
    pub fn disable_peer_access(&self, a: &Uuid, b: &Uuid) -> Result<()> {
        self.peer(Command::DisablePeerAccess, a, b)
    }

    fn peer(&self, cmd: Command, a: &Uuid, b: &Uuid) -> Result<()> {
        let mut p = PeerAccessParams {
            gpu_uuid_a: *a,
            gpu_uuid_b: *b,
            rm_status: 0,
        };
        self.command(cmd, &mut p)
    }

    fn range_command(&self, cmd: Command, base: u64, length: u64) -> Result<()> {
        let mut p = RangeParams {
            base,
            length,
            rm_status: 0,
        };
        self.command(cmd, &mut p)
    }

    fn range_gpu_command(&self, cmd: Command, base: u64, length: u64, uuid: &Uuid) -> Result<()> {
        let mut p = RangeGpuParams {
            base,
            length,
            uuid: *uuid,
            rm_status: 0,
        };
        self.command(cmd, &mut p)
    }

    /// UVM_CREATE_EXTERNAL_RANGE.
    pub fn create_external_range(&self, base: u64, length: u64) -> Result<()> {
        self.range_command(Command::CreateExternalRange, base, length)
    }

    /// UVM_MAP_EXTERNAL_ALLOCATION of `length` bytes at `offset` of RM memory
    /// `(h_client, h_memory)` at `base`, on the GPUs of `attributes`.
    pub fn map_external_allocation_with(
        &self,
        base: u64,
        length: u64,
        offset: u64,
        attributes: &[GpuMappingAttributes],
        h_client: Handle,
        h_memory: Handle,
    ) -> Result<()> {
        let mut p = Box::new(MapExternalAllocationParams {
            base,
            length,
            offset,
            gpu_attributes_count: attributes.len() as u64,
            rm_ctrl_fd: -1,
            h_client,
            h_memory,
            ..Default::default()
        });
        put_attributes(&mut p.per_gpu_attributes, attributes)?;
        self.send_in_release(
            Command::MapExternalAllocation,
            &*p,
            MapExternalAllocationParams::FIELDS,
        )
    }

    /// Encodes `p` and issues `cmd` with it ([`Uvm::command_in_release`]).
    fn send_in_release<T: Wire>(
        &self,
        cmd: Command,
        p: &T,
        fields: &'static [vgpu_logic::nv::abi::WireField],
    ) -> Result<()> {
        let mut b = vec![0u8; T::SIZE];
        p.encode(&mut b);
        self.command_in_release(cmd, &mut b, fields)
    }

    /// Issues command `cmd` with `block`, laid out as `fields` (the newest
    /// release's), in the layout of the release the library speaks (535's
    /// per-GPU arrays hold 32 GPUs, for one), and reads the answer back
    /// into `block`; checks the status.
    fn command_in_release(
        &self,
        cmd: Command,
        block: &mut [u8],
        fields: &'static [vgpu_logic::nv::abi::WireField],
    ) -> Result<()> {
        let r = row(cmd);
        let Some(theirs) = r.fields.filter(|f| *f != fields) else {
            return self.command_bytes(cmd, block);
        };
        let mut b = vec![0u8; r.size];
        vgpu_logic::nv::abi::relayout(block, fields, &mut b, theirs);
        let res = self.command_bytes(cmd, &mut b);
        vgpu_logic::nv::abi::relayout(&b, theirs, block, fields);
        res
    }

    /// UVM_ALLOC_SEMAPHORE_POOL of `[base, base + length)`, mapped on the
    /// GPUs of `attributes`; an mmap of this file at exactly that range
    /// then maps the pool for the CPU.
    pub fn alloc_semaphore_pool(
        &self,
        base: u64,
        length: u64,
        attributes: &[GpuMappingAttributes],
    ) -> Result<()> {
        let mut p = Box::new(AllocSemaphorePoolParams {
            base,
            length,
            gpu_attributes_count: attributes.len() as u64,
            ..Default::default()
        });
        put_attributes(&mut p.per_gpu_attributes, attributes)?;
        self.send_in_release(
            Command::AllocSemaphorePool,
            &*p,
            AllocSemaphorePoolParams::FIELDS,
        )
    }

    /// [`Uvm::map_external_allocation_with`] with default attributes on
    /// each GPU of `gpus`.
    pub fn map_external_allocation(
        &self,
        base: u64,
        length: u64,
        offset: u64,
        gpus: &[Uuid],
        h_client: Handle,
        h_memory: Handle,
    ) -> Result<()> {
        let attrs: Vec<GpuMappingAttributes> = gpus.iter().map(default_attributes).collect();
        self.map_external_allocation_with(base, length, offset, &attrs, h_client, h_memory)
    }

    /// UVM_UNMAP_EXTERNAL of `gpu`'s mappings in `[base, base + length)`.
    pub fn unmap_external(&self, base: u64, length: u64, gpu: &Uuid) -> Result<()> {
        self.range_gpu_command(Command::UnmapExternal, base, length, gpu)
    }

    /// UVM_FREE of the range `[base, base + length)` (releases before 590
    /// want the length, and the range whole).
    pub fn free(&self, base: u64, length: u64) -> Result<()> {
        if row(Command::Free).size != FreeParams::SIZE {
            let mut p = r580::FreeParams {
                base,
                length,
                rm_status: 0,
            };
            return self.command(Command::Free, &mut p);
        }
        let mut p = FreeParams { base, rm_status: 0 };
        self.command(Command::Free, &mut p)
    }

    /// UVM_CREATE_RANGE_GROUP: a new range group of this VA space; returns
    /// its id (numbered from 1 per VA space).
    pub fn create_range_group(&self) -> Result<u64> {
        let mut p = RangeGroupParams::default();
        self.command(Command::CreateRangeGroup, &mut p)?;
        Ok(p.range_group_id)
    }

    /// UVM_DESTROY_RANGE_GROUP of group `id`.
    pub fn destroy_range_group(&self, id: u64) -> Result<()> {
        let mut p = RangeGroupParams {
            range_group_id: id,
            rm_status: 0,
        };
        self.command(Command::DestroyRangeGroup, &mut p)
    }

    /// UVM_SET_RANGE_GROUP: puts the managed memory `[base, base + length)`
    /// in group `id` ([`RANGE_GROUP_NONE`]: in none).
    pub fn set_range_group(&self, id: u64, base: u64, length: u64) -> Result<()> {
        let mut p = SetRangeGroupParams {
            range_group_id: id,
            requested_base: base,
            length,
            rm_status: 0,
        };
        self.command(Command::SetRangeGroup, &mut p)
    }

    /// UVM_MIGRATE_RANGE_GROUP: migrates group `id`'s memory to `dest` (a
    /// GPU's UUID or [`CPU_UUID`]).
    pub fn migrate_range_group(&self, id: u64, dest: &Uuid) -> Result<()> {
        let mut p = MigrateRangeGroupParams {
            range_group_id: id,
            destination_uuid: *dest,
            rm_status: 0,
        };
        self.command(Command::MigrateRangeGroup, &mut p)
    }

    /// UVM_MAP_DYNAMIC_PARALLELISM_REGION: one GPU page at `base` (`length`
    /// a page size of the GPU, `base` aligned to it) of `gpu`'s
    /// SKED-reflected mapping. Freed by [`Uvm::free`].
    pub fn map_dynamic_parallelism_region(&self, base: u64, length: u64, gpu: &Uuid) -> Result<()> {
        self.range_gpu_command(Command::MapDynamicParallelismRegion, base, length, gpu)
    }

    /// UVM_TOOLS_READ_PROCESS_MEMORY: reads `buf.len()` bytes of this VA
    /// space at `target` into `buf`. Returns the bytes read; on an RM
    /// failure the error (what was read before it stays in `buf`).
    pub fn tools_read_process_memory(&self, target: u64, buf: &mut [u8]) -> Result<u64> {
        let mut p = ToolsProcessMemoryParams {
            buffer: buf.as_mut_ptr() as u64,
            size: buf.len() as u64,
            target_va: target,
            ..Default::default()
        };
        // SAFETY: `buf` is borrowed mutably for the call and is `size` long.
        unsafe { self.tools_process_memory(Command::ToolsReadProcessMemory, &mut p) }?;
        Ok(p.bytes_done)
    }

    /// UVM_TOOLS_WRITE_PROCESS_MEMORY: writes `buf` into this VA space at
    /// `target`. Returns the bytes written.
    pub fn tools_write_process_memory(&self, target: u64, buf: &[u8]) -> Result<u64> {
        let mut p = ToolsProcessMemoryParams {
            buffer: buf.as_ptr() as u64,
            size: buf.len() as u64,
            target_va: target,
            ..Default::default()
        };
        // SAFETY: `buf` is borrowed for the call and is `size` long; the
        // driver only reads it.
        unsafe { self.tools_process_memory(Command::ToolsWriteProcessMemory, &mut p) }?;
        Ok(p.bytes_done)
    }

    /// A tools read or write with a whole block, which may name any buffer
    /// address (an unmapped one is the driver's `NV_ERR_INVALID_ARGUMENT`,
    /// not a fault: the driver copies it with copy_{to,from}_user). The
    /// block comes back decoded (`bytes_done`), also on an RM failure.
    ///
    /// # Safety
    ///
    /// `params.buffer` must be unmapped, or valid for `params.size` bytes of
    /// writes (a read: the driver writes there) or reads (a write) for the
    /// call.
    pub unsafe fn tools_process_memory(
        &self,
        cmd: Command,
        params: &mut ToolsProcessMemoryParams,
    ) -> Result<()> {
        if !is_tools_access(cmd) {
            return Err(Error::Invalid("not a tools process-memory command"));
        }
        let mut b = vec![0u8; ToolsProcessMemoryParams::SIZE];
        params.encode(&mut b);
        // SAFETY: `b` is the command's whole block; the buffer it names is
        // the caller's to vouch for.
        unsafe { crate::node::ioctl_buf(self.file(), cmd.number(), &mut b) }?;
        *params = ToolsProcessMemoryParams::decode(&b);
        rm_result(status_of(cmd, &b)?)
    }

    /// UVM_PAGEABLE_MEM_ACCESS: whether GPUs can access pageable memory.
    pub fn pageable_mem_access(&self) -> Result<bool> {
        let mut p = PageableMemAccessParams::default();
        self.command(Command::PageableMemAccess, &mut p)?;
        Ok(p.pageable_mem_access != 0)
    }

    /// UVM_VALIDATE_VA_RANGE: whether one range is exactly there.
    pub fn validate_va_range(&self, base: u64, length: u64) -> Result<()> {
        self.range_command(Command::ValidateVaRange, base, length)
    }

    /// UVM_MIGRATE with a whole block (flags, semaphore, NUMA node).
    pub fn migrate_with(&self, params: &mut MigrateParams) -> Result<()> {
        self.command(Command::Migrate, params)
    }

    /// Synchronous UVM_MIGRATE of `[base, base + length)` to `dest` (a GPU's
    /// UUID or [`CPU_UUID`]).
    pub fn migrate(&self, base: u64, length: u64, dest: &Uuid) -> Result<()> {
        let mut p = MigrateParams {
            base,
            length,
            destination_uuid: *dest,
            cpu_numa_node: -1,
            ..Default::default()
        };
        self.migrate_with(&mut p)
    }

    /// UVM_SET_PREFERRED_LOCATION.
    pub fn set_preferred_location(&self, base: u64, length: u64, location: &Uuid) -> Result<()> {
        let p = SetPreferredLocationParams {
            requested_base: base,
            length,
            preferred_location: *location,
            preferred_cpu_numa_node: -1,
            rm_status: 0,
        };
        let mut b = p.to_bytes();
        self.command_in_release(
            Command::SetPreferredLocation,
            &mut b,
            SetPreferredLocationParams::FIELDS,
        )
    }

    /// UVM_UNSET_PREFERRED_LOCATION.
    pub fn unset_preferred_location(&self, base: u64, length: u64) -> Result<()> {
        self.range_command(Command::UnsetPreferredLocation, base, length)
    }

    /// UVM_ENABLE_READ_DUPLICATION.
    pub fn enable_read_duplication(&self, base: u64, length: u64) -> Result<()> {
        self.range_command(Command::EnableReadDuplication, base, length)
    }

    /// UVM_DISABLE_READ_DUPLICATION.
    pub fn disable_read_duplication(&self, base: u64, length: u64) -> Result<()> {
        self.range_command(Command::DisableReadDuplication, base, length)
    }

    /// UVM_SET_ACCESSED_BY.
    pub fn set_accessed_by(&self, base: u64, length: u64, processor: &Uuid) -> Result<()> {
        self.range_gpu_command(Command::SetAccessedBy, base, length, processor)
    }

    /// UVM_UNSET_ACCESSED_BY.
    pub fn unset_accessed_by(&self, base: u64, length: u64, processor: &Uuid) -> Result<()> {
        self.range_gpu_command(Command::UnsetAccessedBy, base, length, processor)
    }

    /// `mmap(addr, len, prot, flags, fd, offset)` of this file, as is: the
    /// mapped address, or the errno (`Error::Os`). A managed range needs
    /// `MAP_SHARED | MAP_FIXED`, `PROT_READ | PROT_WRITE` and `offset ==
    /// addr`; [`Uvm::map_managed`] does it right.
    pub fn mmap_raw(
        &self,
        addr: u64,
        len: usize,
        prot: i32,
        flags: i32,
        offset: u64,
    ) -> Result<u64> {
        let off = libc::off_t::try_from(offset).map_err(|_| Error::Invalid("offset too large"))?;
        // SAFETY: with MAP_FIXED the caller names an address it owns (a
        // reservation from `reserve_va`); without it the address is a hint.
        // No Rust object lives in such a reservation.
        let p = unsafe {
            libc::mmap(
                addr as usize as *mut libc::c_void,
                len,
                prot,
                flags,
                self.fd(),
                off,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(Error::last_os());
        }
        Ok(p as usize as u64)
    }

    /// A managed range of `len` bytes of this file's VA space
    /// ([`map_managed_fd`]).
    pub fn map_managed(&self, len: usize) -> Result<ManagedRange> {
        map_managed_fd(self.fd(), len)
    }
}

/// Copies `src` to the front of a block's per-GPU attribute array `dst`.
fn put_attributes(dst: &mut [GpuMappingAttributes], src: &[GpuMappingAttributes]) -> Result<()> {
    dst.get_mut(..src.len())
        .ok_or(Error::Invalid("more GPU attributes than the block holds"))?
        .copy_from_slice(src);
    Ok(())
}

/// A managed range of `len` bytes (a multiple of 4 KiB), 2 MiB aligned,
/// of the VA space of UVM file `fd`: VA reserved with an anonymous
/// `PROT_NONE` mapping, then replaced by a shared read-write mapping of the
/// file at offset = address, as `cudaMallocManaged` does. Unmapped on drop.
pub fn map_managed_fd(fd: RawFd, len: usize) -> Result<ManagedRange> {
    let va = Reservation::new(len, CHUNK as usize)?;
    let addr = va.addr;
    // SAFETY: MAP_FIXED over our own reservation; no Rust object lives there.
    let p = unsafe {
        libc::mmap(
            addr as usize as *mut libc::c_void,
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_FIXED,
            fd,
            addr as libc::off_t,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(Error::last_os());
    }
    // The reservation is now this mapping.
    std::mem::forget(va);
    Ok(ManagedRange { addr, len })
}

impl Uvm {}

impl AsRawFd for Uvm {
    fn as_raw_fd(&self) -> RawFd {
        self.fd()
    }
}

/// An anonymous `PROT_NONE` reservation of address space, unmapped on drop.
#[derive(Debug)]
pub struct Reservation {
    addr: u64,
    len: usize,
}

impl Reservation {
    /// Reserves `len` bytes aligned to `align` (a power of two).
    pub fn new(len: usize, align: usize) -> Result<Reservation> {
        if len == 0 || !len.is_multiple_of(PAGE as usize) || !align.is_power_of_two() {
            return Err(Error::Invalid("reservation length or alignment"));
        }
        let total = len
            .checked_add(align)
            .ok_or(Error::Invalid("reservation too large"))?;
        // SAFETY: a fresh anonymous mapping at an address the kernel picks.
        let p = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                total,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(Error::last_os());
        }
        let raw = p as usize;
        let addr = raw.next_multiple_of(align);
        let head = addr - raw;
        let tail = total - head - len;
        // SAFETY: both pieces are parts of the reservation just made, outside
        // `[addr, addr + len)`; nothing else uses them.
        unsafe {
            if head > 0 {
                libc::munmap(p, head);
            }
            if tail > 0 {
                libc::munmap((addr + len) as *mut libc::c_void, tail);
            }
        }
        Ok(Reservation {
            addr: addr as u64,
            len,
        })
    }

    /// Its address.
    pub fn addr(&self) -> u64 {
        self.addr
    }

    /// Its length.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it is empty (never).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        // SAFETY: our reservation (or what replaced it with MAP_FIXED),
        // unmapped once.
        unsafe { libc::munmap(self.addr as usize as *mut libc::c_void, self.len) };
    }
}

/// A managed range mapped by [`Uvm::map_managed`]; unmapped (which
/// destroys the range and frees its memory) on drop.
#[derive(Debug)]
pub struct ManagedRange {
    addr: u64,
    len: usize,
}

impl ManagedRange {
    /// Its address.
    pub fn addr(&self) -> u64 {
        self.addr
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it is empty (never).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Unmaps it now; the errno if munmap fails (the range stays mapped).
    pub fn unmap(self) -> Result<()> {
        // SAFETY: our mapping; on success `forget` keeps drop from unmapping
        // it again.
        let rc = unsafe { libc::munmap(self.addr as usize as *mut libc::c_void, self.len) };
        if rc != 0 {
            return Err(Error::last_os());
        }
        std::mem::forget(self);
        Ok(())
    }
}

impl Drop for ManagedRange {
    fn drop(&mut self) {
        // SAFETY: our mapping, unmapped once.
        unsafe { libc::munmap(self.addr as usize as *mut libc::c_void, self.len) };
    }
}

impl Ctl {
    /// NV2080_CTRL_CMD_GPU_GET_GID_INFO with the binary flag: the GPU's
    /// UUID as UVM takes it.
    pub fn gpu_uuid(&self, h_client: Handle, h_subdevice: Handle) -> Result<Uuid> {
        let p = self.gid_info(h_client, h_subdevice, GID_FLAGS_FORMAT_BINARY)?;
        if p.length as usize != 16 {
            return Err(Error::Invalid("binary GID of a length other than 16"));
        }
        let mut u = [0u8; 16];
        u.copy_from_slice(&p.data[..16]);
        Ok(u)
    }

    /// GET_GID_INFO in text form (`GPU-...`).
    pub fn gpu_uuid_text(&self, h_client: Handle, h_subdevice: Handle) -> Result<String> {
        let p = self.gid_info(h_client, h_subdevice, 0)?;
        let n = (p.length as usize).min(p.data.len());
        let text = &p.data[..n];
        let end = text.iter().position(|&b| b == 0).unwrap_or(n);
        String::from_utf8(text[..end].to_vec()).map_err(|_| Error::Invalid("GID text not UTF-8"))
    }

    /// GET_GID_INFO with raw `flags`; the block as RM left it.
    pub fn gid_info(
        &self,
        h_client: Handle,
        h_subdevice: Handle,
        flags: u32,
    ) -> Result<GidInfoParams> {
        let mut p = GidInfoParams {
            flags,
            ..Default::default()
        };
        self.control_with(
            h_client,
            h_subdevice,
            ctrl::NV2080_CTRL_CMD_GPU_GET_GID_INFO,
            &mut p,
        )?;
        Ok(p)
    }

    /// A FERMI_VASPACE_A UVM can take over (`IS_EXTERNALLY_OWNED |
    /// ENABLE_PAGE_FAULTING`, as CUDA and tinygrad allocate it).
    pub fn alloc_external_va_space(
        &self,
        h_client: Handle,
        h_device: Handle,
        h_new: Handle,
    ) -> Result<Handle> {
        let p = VaSpaceAllocParams {
            flags: vaspace::FLAGS_IS_EXTERNALLY_OWNED | vaspace::FLAGS_ENABLE_PAGE_FAULTING,
            va_base: PAGE,
            ..Default::default()
        };
        self.alloc_va_space(h_client, h_device, h_new, p)
            .map(|(h, _)| h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_text_form() {
        let u = [
            0xd0, 0x0b, 0x1e, 0x5e, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, 1,
        ];
        assert_eq!(uuid_text(&u), "GPU-d00b1e5e-0000-4000-8000-000000000001");
        assert_eq!(uuid_text(&u).len(), 40);
        assert_eq!(
            uuid_text(&CPU_UUID),
            "GPU-a65e0f4e-d7d4-7ba2-5047-412c142a7773"
        );
    }

    #[test]
    fn status_is_read_where_the_command_keeps_it() {
        let mut b = vec![0u8; block_size(Command::MapExternalAllocation)];
        b[9260..9264].copy_from_slice(&0x1fu32.to_ne_bytes());
        assert_eq!(status_of(Command::MapExternalAllocation, &b), Ok(0x1f));
        assert!(status_of(Command::Deinitialize, &b).is_err());
        assert!(status_of(Command::Initialize, &b[..4]).is_err());
    }

    #[test]
    fn reservations_are_aligned_and_released() {
        let r = Reservation::new(4 << 20, CHUNK as usize).unwrap();
        assert_eq!(r.addr() % CHUNK, 0);
        assert_eq!(r.len(), 4 << 20);
        assert!(Reservation::new(100, 4096).is_err());
        assert!(Reservation::new(4096, 3).is_err());
    }

    #[test]
    fn raw_tools_blocks_are_refused_before_the_driver() {
        // The block names a buffer the driver would write: only the typed
        // (or unsafe) calls may send it. /dev/null would answer ENOTTY, so
        // an Invalid error shows nothing was sent.
        let n = Uvm::open("/dev/null").unwrap();
        for c in [
            Command::ToolsReadProcessMemory,
            Command::ToolsWriteProcessMemory,
        ] {
            let mut b = vec![0u8; block_size(c)];
            assert!(matches!(n.call(c.number(), &mut b), Err(Error::Invalid(_))));
            let mut p = ToolsProcessMemoryParams::default();
            assert!(matches!(n.command(c, &mut p), Err(Error::Invalid(_))));
        }
        let mut p = ToolsProcessMemoryParams::default();
        // SAFETY: size 0, and the command is refused before any ioctl.
        let r = unsafe { n.tools_process_memory(Command::Migrate, &mut p) };
        assert!(matches!(r, Err(Error::Invalid(_))));
        // The typed calls do reach the node.
        let mut buf = [0u8; 8];
        assert!(matches!(
            n.tools_read_process_memory(0x1000, &mut buf),
            Err(Error::Os(libc::ENOTTY))
        ));
        assert!(matches!(
            n.create_range_group(),
            Err(Error::Os(libc::ENOTTY))
        ));
    }

    #[test]
    fn calls_on_a_file_that_is_not_uvm() {
        // /dev/null has no ioctls: the transport reports ENOTTY.
        let n = Uvm::open("/dev/null").unwrap();
        assert_eq!(n.initialize(0), Err(Error::Os(libc::ENOTTY)));
        assert_eq!(n.deinitialize(), Err(Error::Os(libc::ENOTTY)));
        let mut short = [0u8; 4];
        assert!(matches!(
            n.call(Command::Initialize.number(), &mut short),
            Err(Error::Invalid(_))
        ));
        let mut wrong = vec![0u8; 17];
        assert!(matches!(
            n.command_bytes(Command::Initialize, &mut wrong),
            Err(Error::Invalid(_))
        ));
        assert!(
            n.map_managed(4096).is_err(),
            "/dev/null cannot be mapped shared"
        );
    }
}
