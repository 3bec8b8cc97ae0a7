// SPDX-License-Identifier: GPL-2.0

//! A GPFIFO channel's host (PBDMA) state, which the engine keeps between
//! runs, and the job the engine hands the driver to run its entries
//! (`engine.rs`, `rm/gpfifo.rs`).

use kernel::sync::Arc;

use crate::memory::Backing;
use crate::nv::abi::pushbuf::{Compute, CopyEngine, HostSemaphore, Semaphore};

/// A compute grid in progress: the engine time it still takes, then the
/// semaphores its QMD releases when it completes.
#[derive(Clone, Copy, Default)]
pub(crate) struct Grid {
    /// Engine time the grid takes, in ns: set by the driver at the launch,
    /// moved to the channel by the engine, which runs it down; 0 once
    /// done.
    pub(crate) ns: u64,
    /// Its QMD's RELEASE semaphores, run by the driver once it is done.
    pub(crate) releases: [Option<Semaphore>; 3],
}

/// A GPFIFO channel's host (PBDMA) state between runs: the class bound to
/// each subchannel (SET_OBJECT), the method state of the host's semaphore
/// and of each subchannel's engine object, and how many methods of the
/// entry at `GPGet` already ran (an unsatisfied acquire stopped it there;
/// they are not run again).
#[derive(Clone, Copy, Default)]
pub(crate) struct Pbdma {
    /// The class bound to each subchannel (0: none).
    pub(crate) classes: [u32; 8],
    /// The host's semaphore methods.
    pub(crate) host: HostSemaphore,
    /// Each subchannel's copy-engine methods.
    pub(crate) copy: [CopyEngine; 8],
    /// Each subchannel's compute methods.
    pub(crate) compute: [Compute; 8],
    /// Methods of the entry at `GPGet` already run.
    pub(crate) done: usize,
    /// The grid launched last, while it runs: the channel stops after its
    /// launch method until it is done.
    pub(crate) grid: Option<Grid>,
}

/// A GPFIFO channel's pending entries, for the driver to run without the
/// engine's lock ([`GpuMemory::gpfifo`]).
pub(crate) struct Fifo {
    /// The channel's work-submit token.
    pub(crate) token: u32,
    /// Its client, whose GPU mappings resolve the addresses.
    pub(crate) client: u32,
    /// The ring's GPU virtual address.
    pub(crate) gpfifo: u64,
    /// Entries in the ring.
    pub(crate) entries: u32,
    /// USERD (`GPGet`, `GPPut`) and its offset.
    pub(crate) userd: (Arc<Backing>, usize),
    /// The channel's host state, given back to the engine after the run.
    pub(crate) pb: Pbdma,
    /// Nanoseconds since the engine started (release timestamps).
    pub(crate) now_ns: u64,
}
