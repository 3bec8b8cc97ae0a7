// SPDX-License-Identifier: GPL-2.0

//! What the double's nvidia-uvm serves, in one table: each UVM command,
//! with the handler that serves it. The dispatcher (`mod.rs`) looks a
//! command up here once and calls the row's handler.

use super::file::UvmFile;
use crate::base::StatusResult;
use crate::nv::abi::status::*;
use crate::nv::uvm::{Command, COMMANDS};
use crate::rm::state::Driver;

/// How a command is served.
pub(crate) enum Serve {
    /// On the file itself (it makes the file what it is).
    File(fn(&Driver, &UvmFile, &mut [u8]) -> StatusResult),
    /// On the file's VA space (by id): a file that is none is refused
    /// with NV_ERR_ILLEGAL_ACTION first.
    Space(fn(&Driver, u64, &mut [u8]) -> StatusResult),
}

/// A UVM command the double serves.
pub(crate) struct UvmRow {
    pub(crate) command: Command,
    pub(crate) serve: Serve,
}

const fn file(command: Command, f: fn(&Driver, &UvmFile, &mut [u8]) -> StatusResult) -> UvmRow {
    UvmRow {
        command,
        serve: Serve::File(f),
    }
}

const fn space(command: Command, f: fn(&Driver, u64, &mut [u8]) -> StatusResult) -> UvmRow {
    UvmRow {
        command,
        serve: Serve::Space(f),
    }
}

/// UVM_DEINITIALIZE, and the initialisers on a VA space already made.
fn invalid_state(_: &Driver, _: u64, _: &mut [u8]) -> StatusResult {
    Err(NV_ERR_INVALID_STATE)
}

/// Every command vgpu and the double know, in the order of
/// `nv::uvm::COMMANDS` (checked below).
static COMMAND_ROWS: [UvmRow; COMMANDS.len()] = [
    file(Command::Initialize, Driver::uvm_initialize),
    space(Command::Deinitialize, invalid_state),
    file(Command::MmInitialize, Driver::uvm_mm_initialize),
    space(Command::RegisterGpu, Driver::uvm_register_gpu),
    space(Command::UnregisterGpu, Driver::uvm_unregister_gpu),
    space(
        Command::RegisterGpuVaspace,
        Driver::uvm_register_gpu_vaspace,
    ),
    space(
        Command::UnregisterGpuVaspace,
        Driver::uvm_unregister_gpu_vaspace,
    ),
    space(Command::RegisterChannel, Driver::uvm_register_channel),
    space(Command::UnregisterChannel, Driver::uvm_unregister_channel),
    space(Command::EnablePeerAccess, Driver::uvm_enable_peer_access),
    space(Command::DisablePeerAccess, Driver::uvm_disable_peer_access),
    space(Command::MapExternalAllocation, Driver::uvm_map_external),
    space(Command::Free, Driver::uvm_free),
    space(Command::PageableMemAccess, Driver::uvm_pageable_mem_access),
    space(
        Command::PageableMemAccessOnGpu,
        Driver::uvm_pageable_mem_access_on_gpu,
    ),
    space(
        Command::SetPreferredLocation,
        Driver::uvm_set_preferred_location,
    ),
    space(Command::UnsetPreferredLocation, Driver::uvm_range_policy),
    space(Command::EnableReadDuplication, Driver::uvm_range_policy),
    space(Command::DisableReadDuplication, Driver::uvm_range_policy),
    space(Command::SetAccessedBy, Driver::uvm_accessed_by),
    space(Command::UnsetAccessedBy, Driver::uvm_accessed_by),
    space(Command::Migrate, Driver::uvm_migrate),
    space(Command::UnmapExternal, Driver::uvm_unmap_external),
    space(
        Command::AllocSemaphorePool,
        Driver::uvm_alloc_semaphore_pool,
    ),
    space(Command::ValidateVaRange, Driver::uvm_validate_va_range),
    space(
        Command::CreateExternalRange,
        Driver::uvm_create_external_range,
    ),
    space(Command::CreateRangeGroup, Driver::uvm_create_range_group),
    space(Command::DestroyRangeGroup, Driver::uvm_destroy_range_group),
    space(Command::SetRangeGroup, Driver::uvm_set_range_group),
    space(Command::MigrateRangeGroup, Driver::uvm_migrate_range_group),
    space(
        Command::MapDynamicParallelismRegion,
        Driver::uvm_map_dp_region,
    ),
    space(Command::ToolsReadProcessMemory, Driver::uvm_tools_read),
    space(Command::ToolsWriteProcessMemory, Driver::uvm_tools_write),
];

// Every command has its row, in `COMMANDS`' order.
const _: () = {
    let mut i = 0;
    while i < COMMANDS.len() {
        assert!(COMMAND_ROWS[i].command.number() == COMMANDS[i].number());
        i += 1;
    }
};

/// The row of `command`.
pub(crate) fn command(command: Command) -> Option<&'static UvmRow> {
    COMMAND_ROWS.iter().find(|r| r.command == command)
}
