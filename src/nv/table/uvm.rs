// SPDX-License-Identifier: GPL-2.0

//! The nvidia-uvm commands vgpu knows, and their handlers.

use super::policy::Policy;
use crate::nv::abi::WireField;
use crate::nv::uvm::{self as uvmabi, Command};
use crate::nv::wire::find_field;
use Policy as P;

/// What vgpu runs for a UVM command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UvmHandler {
    /// Forwarded as the caller wrote it.
    Forward,
    /// UVM_INITIALIZE: `DISABLE_HMM` forced on.
    Initialize,
    /// UVM_MM_INITIALIZE: the fd translated to the primary's real file.
    MmInitialize,
    /// UVM_REGISTER_GPU: the container's GPU, through its vGPU node.
    RegisterGpu,
    /// An RM client in the block ([`UvmRow::client_at`]) must be the
    /// container's; forwarded from vgpu's copy.
    ClientChecked,
    /// UVM_MAP_EXTERNAL_ALLOCATION: client checked; the memory's charge is
    /// held while UVM maps it.
    MapExternal,
    /// UVM_UNMAP_EXTERNAL: forwarded from vgpu's copy; the holds of the
    /// GPU's mappings it removes go.
    UnmapExternal,
    /// UVM_UNREGISTER_GPU_VASPACE, UVM_UNREGISTER_GPU: forwarded from
    /// vgpu's copy; the holds of the GPU's external mappings go.
    UnregisterGpu,
    /// UVM_FREE: forwarded from vgpu's copy; held charges at its base go.
    Free,
    /// UVM_MAP_DYNAMIC_PARALLELISM_REGION: its page-table bound charged.
    DpRegion,
}

/// One nvidia-uvm ioctl command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UvmRow {
    /// The command.
    pub command: Command,
    /// Its number (the whole ioctl request word).
    pub number: u32,
    /// Its block's size (the driver copies exactly this much).
    pub size: usize,
    /// Where the block's `rmStatus` is (`None`: no block).
    pub status_at: Option<usize>,
    /// Where the block holds an fd.
    pub fd_at: Option<usize>,
    /// Where the block names an RM client (`hClient`).
    pub client_at: Option<usize>,
    /// The block's layout in this release, where vgpu declares one.
    pub fields: Option<&'static [WireField]>,
    /// What vgpu does with it.
    pub policy: Policy,
    /// The handler.
    pub handler: UvmHandler,
}

impl UvmRow {
    /// The offset of field `name` in the block, if the row's layout has it.
    pub const fn field(&self, name: &str) -> Option<usize> {
        match self.fields {
            Some(f) => find_field(f, name),
            None => None,
        }
    }
}

/// A UVM row: the facts from [`Command`] and its block's layout.
const fn uvm(command: Command, policy: Policy, handler: UvmHandler) -> UvmRow {
    UvmRow {
        command,
        number: command.number(),
        size: command.size(),
        status_at: command.status_offset(),
        fd_at: command.embedded_fd(),
        client_at: match command.fields() {
            Some(f) => find_field(f, "h_client"),
            None => None,
        },
        fields: command.fields(),
        policy,
        handler,
    }
}

use UvmHandler as U;

/// Every UVM command a container may send, in number order. Reasons per row
/// in `docs/dispatch-table.md`, "UVM commands", and `docs/uvm-abi.md`.
#[rustfmt::skip]
pub const UVM: &[UvmRow] = &UVM_ROWS;

/// [`UVM`] as an array, for releases' patched copies.
#[rustfmt::skip]
pub(crate) const UVM_ROWS: [UvmRow; 33] = [
    uvm(Command::CreateRangeGroup, P::Forward, U::Forward),
    uvm(Command::DestroyRangeGroup, P::Forward, U::Forward),
    uvm(Command::RegisterGpuVaspace, P::Bounce, U::ClientChecked),
    uvm(Command::UnregisterGpuVaspace, P::Bounce, U::UnregisterGpu),
    uvm(Command::RegisterChannel, P::Bounce, U::ClientChecked),
    uvm(Command::UnregisterChannel, P::Bounce, U::ClientChecked),
    uvm(Command::EnablePeerAccess, P::Forward, U::Forward),
    uvm(Command::DisablePeerAccess, P::Forward, U::Forward),
    uvm(Command::SetRangeGroup, P::Forward, U::Forward),
    uvm(Command::MapExternalAllocation, P::Bounce, U::MapExternal),
    uvm(Command::Free, P::Bounce, U::Free),
    uvm(Command::RegisterGpu, P::Bounce, U::RegisterGpu),
    uvm(Command::UnregisterGpu, P::Bounce, U::UnregisterGpu),
    uvm(Command::PageableMemAccess, P::Forward, U::Forward),
    uvm(Command::SetPreferredLocation, P::Forward, U::Forward),
    uvm(Command::UnsetPreferredLocation, P::Forward, U::Forward),
    uvm(Command::EnableReadDuplication, P::Forward, U::Forward),
    uvm(Command::DisableReadDuplication, P::Forward, U::Forward),
    uvm(Command::SetAccessedBy, P::Forward, U::Forward),
    uvm(Command::UnsetAccessedBy, P::Forward, U::Forward),
    uvm(Command::Migrate, P::Forward, U::Forward),
    uvm(Command::MigrateRangeGroup, P::Forward, U::Forward),
    uvm(Command::ToolsReadProcessMemory, P::Forward, U::Forward),
    uvm(Command::ToolsWriteProcessMemory, P::Forward, U::Forward),
    uvm(Command::MapDynamicParallelismRegion, P::Bounce, U::DpRegion),
    uvm(Command::UnmapExternal, P::Bounce, U::UnmapExternal),
    uvm(Command::AllocSemaphorePool, P::Forward, U::Forward),
    uvm(Command::PageableMemAccessOnGpu, P::Forward, U::Forward),
    uvm(Command::ValidateVaRange, P::Forward, U::Forward),
    uvm(Command::CreateExternalRange, P::Forward, U::Forward),
    uvm(Command::MmInitialize, P::Bounce, U::MmInitialize),
    uvm(Command::Initialize, P::Rewritten, U::Initialize),
    uvm(Command::Deinitialize, P::Forward, U::Forward),
];

/// The row of UVM command number `number`, if the table has one.
pub const fn uvm_row(number: u32) -> Option<&'static UvmRow> {
    uvm_row_in(UVM, number)
}

keyed_rows!(UvmRow, number: u32, uvm_row_in, uvm_in_order);

/// `rows` with UVM command `c`'s block laid out as `fields`, `size` bytes:
/// its status and client offsets follow the layout.
pub const fn with_uvm_layout<const N: usize>(
    mut rows: [UvmRow; N],
    c: Command,
    size: usize,
    fields: &'static [WireField],
) -> [UvmRow; N] {
    let mut i = 0;
    let mut found = false;
    while i < N {
        if rows[i].number == c.number() {
            rows[i].size = size;
            rows[i].status_at = find_field(fields, "rm_status");
            rows[i].client_at = find_field(fields, "h_client");
            rows[i].fields = Some(fields);
            found = true;
        }
        i += 1;
    }
    assert!(found, "with_uvm_layout: the command is not in the table");
    rows
}

// Every UVM command vgpu knows has exactly one row; the rows are in number
// order (the lookup relies on it).
const _: () = {
    assert!(
        UVM.len() == uvmabi::COMMANDS.len(),
        "a UVM command row missing or twice"
    );
    assert!(uvm_in_order(UVM), "UVM out of order");
    let mut i = 0;
    while i < uvmabi::COMMANDS.len() {
        let c = uvmabi::COMMANDS[i];
        assert!(
            match uvm_row(c.number()) {
                Some(r) => r.number == c.number(),
                None => false,
            },
            "a UVM command has no row"
        );
        i += 1;
    }
};
