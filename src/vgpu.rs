// SPDX-License-Identifier: GPL-2.0

//! One vGPU: its settings, its memory ledger and its compute state.
//!
//! This is the bottom of vgpu's driver layer: a [`Vgpu`] calls nothing
//! above it. What the layers above keep on its behalf and can give back
//! when measured again (managed memory of nvidia-uvm spaces) reaches it as
//! a [`Reclaim`] they register, so a charge that would pass the ceiling
//! first reclaims what is gone without the vGPU knowing what UVM is.

use kernel::{
    prelude::*,
    sync::{Arc, Mutex},
};

use crate::compute;
use crate::config;
use crate::kapi::{chrdev::Node, userd::UserdMap};
use crate::ledger::Ledger;
use crate::procs::Procs;

/// Something that holds charges on a vGPU and can measure them again.
pub(crate) trait Reclaim: Send + Sync {
    /// Refunds what is no longer used. Returns whether nothing is left (the
    /// vGPU then forgets it). Takes address spaces' mmap locks: called with
    /// no vgpu lock held, outside mmap handlers.
    fn reclaim(&self) -> bool;

    /// As [`Reclaim::reclaim`], inside an mmap handler: what cannot be
    /// measured without taking a busy mmap lock is left for later.
    fn reclaim_in_mmap(&self);
}

/// A set of GPU indices (0..=255).
#[derive(Clone, Copy, Default)]
pub(crate) struct GpuSet([u64; 4]);

impl GpuSet {
    /// Adds GPU `gpu`.
    pub(crate) fn insert(&mut self, gpu: u32) {
        if let Some(w) = self.0.get_mut((gpu / 64) as usize) {
            *w |= 1 << (gpu % 64);
        }
    }

    /// Whether GPU `gpu` is in the set.
    pub(crate) fn contains(&self, gpu: u32) -> bool {
        self.0
            .get((gpu / 64) as usize)
            .is_some_and(|w| w & (1 << (gpu % 64)) != 0)
    }
}

/// A vGPU's settings.
pub(crate) struct Config {
    /// Index of the backing GPU (its `/dev/nvidiaK` minor), once set.
    pub(crate) gpu: Option<u32>,
    /// Memory ceiling (`u64::MAX`: none) and what is charged against it.
    pub(crate) memory: Ledger,
    /// The cgroup v2 path it is bound to; empty: unbound (nobody may open).
    pub(crate) cgroup: KVec<u8>,
    /// VRAM allocations refused for passing the memory limit.
    pub(crate) refused: u64,
    /// Bytes of `memory` charged for managed (nvidia-uvm) mappings.
    pub(crate) managed: u64,
    /// Calls of its container refused by default deny (`src/deny.rs`).
    pub(crate) denied: u64,
}

/// One vGPU.
#[pin_data]
pub(crate) struct Vgpu {
    /// Its number.
    pub(crate) id: u32,
    /// Settings.
    #[pin]
    pub(crate) config: Mutex<Config>,
    /// Open proxy files of `/dev/vgpuN`.
    #[pin]
    pub(crate) users: Mutex<u32>,
    /// Compute share, the TSGs it schedules, counters.
    #[pin]
    pub(crate) compute: Mutex<Compute>,
    /// Its node and sysfs directory, until removed.
    #[pin]
    pub(crate) node: Mutex<Option<Node>>,
    /// What holds charges it can give back when it is measured again
    /// (nvidia-uvm spaces with managed mappings): registered by the layer
    /// above, called without any of the vGPU's locks held.
    #[pin]
    pub(crate) reclaimers: Mutex<KVec<Arc<dyn Reclaim>>>,
    /// The processes using it (`src/procs.rs`): a leaf lock, taken with
    /// nothing else taken under it.
    #[pin]
    pub(crate) procs: Mutex<Procs>,
    /// The GPUs it may be backed by (those with a real node at load).
    pub(crate) backable: GpuSet,
}

impl Vgpu {
    /// Whether the calling task's cgroup may open this vGPU.
    pub(crate) fn admits_current(&self) -> Result<bool> {
        let mut buf = KVec::with_capacity(config::CGROUP_PATH_MAX + 1, GFP_KERNEL)?;
        buf.resize(config::CGROUP_PATH_MAX + 1, 0, GFP_KERNEL)?;
        let len = crate::kapi::cgroup::current_path(&mut buf)?;
        let cfg = self.config.lock();
        Ok(config::cgroup_contains(&cfg.cgroup, &buf[..len]))
    }

    /// Charges `bytes` of VRAM. Over the ceiling, managed mappings that are
    /// gone are refunded first and the charge is tried once more; a refusal
    /// is counted. Takes mmap locks: call with no vgpu lock held.
    pub(crate) fn charge(&self, bytes: u64) -> bool {
        if self.config.lock().memory.reserve(bytes).is_ok() {
            return true;
        }
        self.reclaim();
        let mut cfg = self.config.lock();
        if cfg.memory.reserve(bytes).is_ok() {
            return true;
        }
        cfg.refused += 1;
        false
    }

    /// Counts a call of its container refused by default deny.
    pub(crate) fn count_denied(&self) {
        self.config.lock().denied += 1;
    }

    /// Asks every registered [`Reclaim`] to give back what is no longer
    /// used, and forgets those with nothing left. Takes address spaces'
    /// mmap locks: call with no vgpu lock held.
    pub(crate) fn reclaim(&self) {
        let Ok(listed) = self.reclaimers() else {
            return;
        };
        for r in listed.iter() {
            if r.reclaim() {
                self.reclaimers.lock().retain(|t| !Arc::ptr_eq(t, r));
            }
        }
    }

    /// A copy of the registered [`Reclaim`]s, to use without the lock.
    pub(crate) fn reclaimers(&self) -> Result<KVec<Arc<dyn Reclaim>>> {
        let list = self.reclaimers.lock();
        let mut out = KVec::with_capacity(list.len(), GFP_KERNEL)?;
        for r in list.iter() {
            out.push(r.clone(), GFP_KERNEL)?;
        }
        Ok(out)
    }

    /// Registers `r` (once: a second registration of the same object is
    /// ignored).
    pub(crate) fn register(&self, r: Arc<dyn Reclaim>) -> Result {
        let mut list = self.reclaimers.lock();
        if list.iter().any(|t| Arc::ptr_eq(t, &r)) {
            return Ok(());
        }
        list.push(r, GFP_KERNEL)?;
        Ok(())
    }

    /// Drops its list of [`Reclaim`]s (it is going away): they hold the
    /// vGPU too.
    pub(crate) fn forget_reclaimers(&self) {
        drop(core::mem::take(&mut *self.reclaimers.lock()));
    }
}

/// A TSG, or a channel outside a TSG, of one of a vGPU's tenants.
#[derive(Clone, Copy)]
pub(crate) struct Entry {
    /// Its number in the vGPU's schedule.
    pub(crate) id: u64,
    /// The client that owns it.
    pub(crate) client: u32,
    /// Its handle.
    pub(crate) handle: u32,
    /// A TSG (else a channel outside a TSG).
    pub(crate) tsg: bool,
    /// Whether its owner wants it enabled.
    pub(crate) wanted: bool,
}

/// A vGPU's compute share, what it runs, and its counters.
pub(crate) struct Compute {
    /// Share of the GPU, in percent.
    pub(crate) share: u8,
    /// Priority level (`compute::MIN_PRIORITY..=compute::MAX_PRIORITY`).
    pub(crate) priority: u8,
    /// Frozen: it gets no window until thawed.
    pub(crate) frozen: bool,
    /// Whether its window is open (set by the scheduler as it switches).
    pub(crate) window_open: bool,
    /// Its TSGs and channels outside TSGs.
    pub(crate) entries: KVec<Entry>,
    /// The next entry or watch number.
    pub(crate) next_id: u64,
    /// Time its window was open, in ns.
    pub(crate) granted_ns: u64,
    /// Time it had work but another vGPU's window (or the idle window) was
    /// open, in ns.
    pub(crate) throttled_ns: u64,
    /// Time it had runnable work ([`Compute::runnable`]), in ns: sampled
    /// by its GPU's scheduler at every step (see `crate::sched`).
    pub(crate) busy_ns: u64,
    /// Whether it was runnable at the last sample.
    pub(crate) was_runnable: bool,
    /// Forwarded calls waiting for its window.
    pub(crate) waiting: u32,
    /// The USERD of its channels that vgpu could map.
    pub(crate) watches: KVec<Watch>,
    /// The client holding its compute-mode reservation, or 0
    /// (`NV01_NULL_OBJECT`): a vGPU's own, in compute mode RULES_NONE
    /// (`ControlHandler::ComputeReservation`).
    pub(crate) reservation: u32,
}

/// Bytes of USERD vgpu maps: up to and including `GPPut` (`GPGet` too on
/// Volta to Hopper GPFIFO classes; Blackwell's USERD has none: see the
/// design notes).
pub(crate) const USERD_WATCHED: u64 = UserdMap::LEN as u64;

/// A channel's USERD mapped into the kernel: `userd` stays mapped while the
/// watch is in its vGPU's list (see [`crate::sched::Watched`]).
pub(crate) struct Watch {
    /// Its number.
    pub(crate) id: u64,
    /// The schedule entry (TSG or bare channel) the channel runs in.
    pub(crate) entry: u64,
    /// The mapping.
    pub(crate) userd: UserdMap,
}

impl Watch {
    /// Whether the channel has work the GPU has not fetched.
    fn pending(&self) -> bool {
        self.userd.pending()
    }
}

impl Compute {
    /// A vGPU's starting state: the default share, nothing running.
    pub(crate) fn new() -> Self {
        Self {
            share: compute::DEFAULT_SHARE,
            priority: compute::DEFAULT_PRIORITY,
            frozen: false,
            window_open: false,
            entries: KVec::new(),
            next_id: 1,
            granted_ns: 0,
            throttled_ns: 0,
            busy_ns: 0,
            was_runnable: false,
            waiting: 0,
            watches: KVec::new(),
            reservation: 0,
        }
    }

    /// Whether entry `id` has work: `Some(true)` if one of its channels has
    /// GPFIFO entries the GPU has not fetched, `Some(false)` if none has,
    /// `None` if vgpu watches none of its channels.
    fn pending(&self, id: u64) -> Option<bool> {
        let mut watched = self.watches.iter().filter(|w| w.entry == id).peekable();
        watched.peek()?;
        Some(watched.any(Watch::pending))
    }

    /// Whether it has work: a forwarded call waiting for its window, or a
    /// TSG (or channel outside a TSG) its owner enabled whose channels have
    /// work queued (or whose channels vgpu cannot watch).
    pub(crate) fn busy(&self) -> bool {
        self.waiting > 0
            || self
                .entries
                .iter()
                .any(|e| e.wanted && self.pending(e.id) != Some(false))
    }

    /// Whether it has work it may run: busy and not frozen.
    pub(crate) fn runnable(&self) -> bool {
        !self.frozen && self.busy()
    }

    /// Adds a sample of [`Compute::runnable`] taken `dt` ns after the last
    /// one to `busy_ns`: all of `dt` if it was runnable at both, half if at
    /// one (the change fell somewhere in between), none if at neither.
    pub(crate) fn sample(&mut self, dt: u64) {
        let now = self.runnable();
        self.busy_ns += match (self.was_runnable, now) {
            (true, true) => dt,
            (false, false) => 0,
            _ => dt / 2,
        };
        self.was_runnable = now;
    }

    /// How many TSGs and channels outside TSGs it has.
    pub(crate) fn objects(&self) -> usize {
        self.entries.len()
    }
}
