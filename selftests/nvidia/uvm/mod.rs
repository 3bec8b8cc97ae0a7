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
//!
//! Layers, bottom first: `state.rs` (the UVM state, a field of RM's) and
//! `file.rs` (the node's files), `residency.rs` (managed residency and
//! range teardown), `vma.rs` (managed VMAs' operations), the handlers
//! (`init.rs`, `gpus.rs`, `external.rs`, `migrate.rs`, `groups.rs`,
//! `tools.rs`, `mmap.rs`, `view.rs`), `table.rs` (what is served, and by
//! which handler), this file (the commands' dispatcher) and `fops.rs` (the
//! file operations).

use crate::base::status_of;
use crate::nv::abi::status::*;
use crate::nv::uvm::Command;
use crate::rm::state::Driver;
use file::UvmFile;
use table::Serve;

mod external;
pub(crate) mod file;
mod fops;
mod gpus;
mod groups;
mod init;
mod migrate;
mod mmap;
mod pool;
mod residency;
pub(crate) mod state;
mod table;
mod tools;
mod view;
mod vma;

impl Driver {
    /// Serves one command on file `f` with its block `p` (exactly the
    /// command's size, copied in), by its row in the table; returns the
    /// status for `rmStatus`.
    pub(crate) fn uvm_ioctl(&self, f: &UvmFile, cmd: Command, p: &mut [u8]) -> u32 {
        let r = match table::command(cmd).map(|row| &row.serve) {
            Some(Serve::File(serve)) => serve(self, f, p),
            Some(Serve::Space(serve)) => match f.va_space() {
                None => Err(NV_ERR_ILLEGAL_ACTION),
                Some(id) => serve(self, id, p),
            },
            None => Err(NV_ERR_NOT_SUPPORTED),
        };
        status_of(r)
    }
}
