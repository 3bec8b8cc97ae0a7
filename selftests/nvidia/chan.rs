// SPDX-License-Identifier: GPL-2.0

//! One channel of the simulated engine (`engine.rs`): its ring, the item
//! or grid in progress and the time it ran.

use kernel::{prelude::*, sync::Arc};

use crate::memory::Backing;
use crate::pbdma::Pbdma;

/// Offset of the first ring entry (after the 512-byte USERD).
pub(crate) const RING_ENTRIES_OFFSET: usize = 0x200;
/// USERD `GPGet`: the engine's read index.
pub(crate) const USERD_GP_GET: usize = crate::nv::abi::userd::GP_GET;
/// USERD `GPPut`: the client's write index.
pub(crate) const USERD_GP_PUT: usize = crate::nv::abi::userd::GP_PUT;
/// USERD's `completed` word: work items finished (double's own).
const RING_COMPLETED: usize = 0x00;
/// USERD's `channel_ns` word: ns the channel ran (double's own).
const RING_CHANNEL_NS: usize = 0x08;
/// USERD's `tsg_ns` word: ns its TSG ran (double's own).
const RING_TSG_NS: usize = 0x10;
/// USERD's `faults` word (double's own).
pub(crate) const RING_FAULTS: usize = 0x18;
/// Bit 63 of a work item: the item is a touch of a managed address.
pub(crate) const TOUCH_BIT: u64 = 1 << 63;
/// Engine time a touch item costs, ns.
pub(crate) const TOUCH_NS: u64 = 5_000;
/// A touch item whose engine time is done: the driver applies it, then
/// [`crate::engine::Engine::finish_touch`] completes it.
pub(crate) struct Touch {
    /// The channel's work-submit token.
    pub(crate) token: u32,
    /// The managed address it touches.
    pub(crate) addr: u64,
}

/// A channel: the double's own work items in a ring, or (with `gpfifo`) a
/// GPFIFO channel whose entries the driver runs and whose grids take the
/// engine's time (`rm/gpfifo.rs`).
pub(crate) struct Chan {
    /// Its work-submit token (what a doorbell write names).
    pub(crate) token: u32,
    /// The memory of its USERD (and, for the double's own items, its ring)
    /// and the offset there.
    pub(crate) ring: Option<(Arc<Backing>, usize)>,
    /// Entries in its ring.
    pub(crate) entries: u32,
    /// A doorbell (or, for GPFIFO channels, a schedule) armed it.
    pub(crate) armed: bool,
    /// ns left of the item (or GPFIFO grid) at `get`, 0 = none started.
    pub(crate) left_ns: u64,
    /// Engine time it has run, in ns.
    pub(crate) ns: u64,
    /// The item at `get` is a touch of this address.
    pub(crate) touch: Option<u64>,
    /// Its touch ran and waits for the driver to apply it.
    pub(crate) blocked: bool,
    /// Wait-for-idle compute preemption: an item in progress is not
    /// preempted.
    pub(crate) wfi: bool,
    /// A GPFIFO channel's ring, at this GPU virtual address (`None`: the
    /// double's own work items).
    pub(crate) gpfifo: Option<u64>,
    /// Its host state between runs.
    pub(crate) pb: Pbdma,
}

impl Chan {
    /// Whether the channel wants the engine's time: work items, or a
    /// GPFIFO channel's grid still running.
    pub(crate) fn pending(&self) -> bool {
        match self.gpfifo {
            None => self.has_work(),
            Some(_) => self.left_ns > 0 && !self.blocked,
        }
    }

    /// Whether a GPFIFO channel has entries (or a grid whose time is done)
    /// for the driver to run.
    pub(crate) fn fifo_ready(&self) -> bool {
        self.gpfifo.is_some() && self.left_ns == 0 && self.has_work()
    }

    fn has_work(&self) -> bool {
        let Some((ring, off)) = &self.ring else {
            return false;
        };
        if !self.armed || self.blocked || self.entries == 0 {
            return false;
        }
        match (
            ring.read_u32(*off + USERD_GP_PUT),
            ring.read_u32(*off + USERD_GP_GET),
        ) {
            (Ok(put), Ok(get)) => put % self.entries != get,
            _ => false,
        }
    }

    /// Runs for up to `budget` ns; returns how much it used and whether an
    /// item completed. A touch whose time is done goes to `touches` and
    /// blocks the channel until
    /// [`crate::engine::Engine::finish_touch`].
    pub(crate) fn run(
        &mut self,
        budget: u64,
        tsg_ns: u64,
        touches: &mut KVec<Touch>,
    ) -> (u64, bool) {
        if self.gpfifo.is_some() {
            // A grid: its time runs down; the driver completes it
            // ([`Chan::fifo_ready`]). USERD is the client's here: no
            // counters are written to it.
            let used = budget.min(self.left_ns);
            self.left_ns -= used;
            self.ns += used;
            return (used, false);
        }
        let Some((ring, off)) = &self.ring else {
            return (0, false);
        };
        let off = *off;
        let Ok(get) = ring.read_u32(off + USERD_GP_GET) else {
            return (0, false);
        };
        if self.left_ns == 0 {
            let entry = off + RING_ENTRIES_OFFSET + (get as usize) * 8;
            let item = ring.read_u64(entry).unwrap_or(1);
            if item & TOUCH_BIT != 0 {
                self.touch = Some(item & !TOUCH_BIT);
                self.left_ns = TOUCH_NS;
            } else {
                // An item of 0 ns still costs a minimum of 1 ns, so a ring
                // of zeros cannot spin the engine for free.
                self.touch = None;
                self.left_ns = item.max(1);
            }
        }
        let used = budget.min(self.left_ns);
        self.left_ns -= used;
        self.ns += used;
        let mut done = false;
        if self.left_ns == 0 {
            match self.touch {
                Some(addr) => {
                    // If the list cannot grow, the touch runs again later.
                    if touches
                        .push(
                            Touch {
                                token: self.token,
                                addr,
                            },
                            GFP_KERNEL,
                        )
                        .is_ok()
                    {
                        self.blocked = true;
                    }
                }
                None => {
                    complete(ring, off, get, self.entries);
                    done = true;
                }
            }
        }
        let _ = ring.write_u64(off + RING_CHANNEL_NS, self.ns);
        let _ = ring.write_u64(off + RING_TSG_NS, tsg_ns + used);
        (used, done)
    }
}

/// Completes the item at `get`: the engine moves `GPGet` on and counts it.
pub(crate) fn complete(ring: &Backing, off: usize, get: u32, entries: u32) {
    let _ = ring.write_u32(off + USERD_GP_GET, (get + 1) % entries);
    let completed = ring.read_u64(off + RING_COMPLETED).unwrap_or(0);
    let _ = ring.write_u64(off + RING_COMPLETED, completed + 1);
}
