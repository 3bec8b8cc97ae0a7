// SPDX-License-Identifier: GPL-2.0

//! The double's resource manager (RM): clients, their object trees, VRAM
//! accounting, and the escapes of the NVIDIA nodes that act on them.
//!
//! Layers, bottom first: `state.rs` (the driver, RM's state and lock
//! order), `call.rs` (what a handler gets), the handlers (one file per
//! escape family: `alloc.rs` with `classes.rs`, `free.rs`, `control.rs`
//! with the controls in `system.rs`, `gpumgr.rs`, `gpuinfo.rs`, `cuda.rs`, `ctxsetup.rs`, `subdevice.rs`, `pids.rs`, `fifo.rs`, `grctx.rs`
//! and `memory.rs` with `osdesc.rs`, `dup.rs`, `event.rs`, `escape.rs`), `gpfifo.rs` (the
//! GPFIFO channels' work the engine hands over), `table.rs` (what
//! is served, and by which handler), and this file, the escapes'
//! dispatcher.

use kernel::{prelude::*, sync::ArcBorrow};

use crate::file::NvFile;
use crate::nv::ioctl::Escape;
use state::Driver;

mod alloc;
mod call;
mod classes;
mod control;
mod ctxsetup;
mod cuda;
mod dup;
mod escape;
mod event;
mod fifo;
mod free;
mod gpfifo;
mod gpuinfo;
mod gpumgr;
pub(crate) mod grctx;
mod gss;
mod memory;
mod osdesc;
mod pids;
pub(crate) mod state;
mod subdevice;
mod system;
mod table;

impl Driver {
    /// Serves one escape on file `f` with its parameter block `p` (already
    /// copied in; copied back out on `Ok`), by its row in the table.
    /// OS-level failures are `Err`; RM-level ones go into the block's
    /// status field. Known escapes the double does not model: `EINVAL`.
    pub(crate) fn escape(&self, f: &ArcBorrow<'_, NvFile>, esc: Escape, p: &mut [u8]) -> Result {
        match table::escape(esc) {
            Some(row) => (row.serve)(self, f, p),
            None => Err(EINVAL),
        }
    }
}
