// SPDX-License-Identifier: GPL-2.0

//! The simulated engine of one fake GPU.
//!
//! Work is submitted the way hardware sees it: the client writes work items
//! into its ring in mapped memory, then stores its channel's work-submit token
//! at offset 0x90 of a mapped USERMODE page (the doorbell). The engine thread
//! polls, as hardware fetches: a doorbell arms the channel; from then on the
//! engine compares the ring's `put` with its `get` on every turn. The engine
//! clears the doorbell slot when it takes a token; unlike hardware, a token
//! written over one not yet taken is lost, so writers wait for the slot to
//! read 0 first (nvclient's `Doorbell::ring` does).
//!
//! Ring layout, in the memory named by the channel's `hUserdMemory[0]` at
//! `userdOffset[0]`: the first 512 bytes are the channel's USERD, with
//! `GPGet` and `GPPut` where every GPFIFO class has them; the double keeps
//! its counters in USERD words hardware ignores, and its work items (instead
//! of GPFIFO entries pointing at pushbuffers) after USERD:
//!
//! | offset | field | written by |
//! |---|---|---|
//! | 0x00 | u64 completed: work items finished (double's own) | engine |
//! | 0x08 | u64 channel_ns: simulated ns this channel ran (double's own) | engine |
//! | 0x10 | u64 tsg_ns: simulated ns its TSG ran (double's own) | engine |
//! | 0x18 | u64 faults: touch items that could not be served (double's own) | engine |
//! | 0x88 | u32 GPGet: index of the next entry to run (as hardware) | engine |
//! | 0x8c | u32 GPPut: index of the next free entry (as hardware) | client |
//! | 0x200 | u64 entries[gpFifoEntries]: work items (below) | client |
//!
//! A work item is either GPU time (bit 63 clear: that many ns) or a *touch*
//! (bit 63 set): GPU work that accesses the managed (UVM) address
//! `entry & !(1 << 63)`, page aligned. A touch costs
//! [`crate::chan::TOUCH_NS`] of engine time; then, with the engine's lock
//! released, the driver makes that address's 2 MiB chunk resident on this
//! GPU in the UVM VA space where the channel was registered
//! (`UVM_REGISTER_CHANNEL`), as a GPU fault would. Only then does the item
//! complete (`GPGet` moves on, `completed` counts it), so a client that
//! saw it complete sees the residency. A touch that finds no VA space, no
//! managed range or no memory counts one `faults` and completes all the
//! same (a real fatal fault would stop the channel).
//!
//! Scheduling: runnable TSGs (enabled, with an armed channel that has work)
//! run round robin, each for its timeslice (default 1024 us) or until it runs
//! dry, is disabled or preempted. A TSG's time is the wall time it held the
//! engine, measured with the monotonic clock. Items are preempted where they
//! are (a channel's default, CTA or CILP compute preemption), except on a
//! channel set to wait-for-idle compute preemption (GR_SET_CTXSW_PREEMPTION_MODE
//! `COMPUTE_WFI`): its TSG leaves the engine, when disabled, preempted or at
//! the end of its timeslice, only once the item in progress is done.
//!
//! GPFIFO channels (issue 40): a channel allocated with a `gpFifoOffset`,
//! as NVIDIA's libcuda allocates them, has real GPFIFO entries at that GPU
//! virtual address, each naming a pushbuffer segment, and USERD's `GPGet`
//! and `GPPut` index them. Once its doorbell rang, and while its TSG is
//! enabled, the engine hands the channel's pending entries to the driver,
//! which resolves the addresses through its GPU mappings and runs the
//! methods ([`GpuMemory::gpfifo`], `rm/gpfifo.rs`); the channel's host
//! state ([`Pbdma`]) lives here between runs. Their methods take no engine
//! time, but a compute launch does: the driver stops the channel after it
//! with the grid's time ([`crate::pbdma::Grid`]), which the channel then
//! runs down in the round robin as a work item (timeslices, preemption,
//! wait-for-idle) before the driver completes the grid and goes on.
//! Enabling their TSG arms them as a doorbell does: libcuda 550.163.01's
//! `cuCtxCreate` writes `GPPut` on each new channel before GPFIFO_SCHEDULE,
//! rings no doorbell for that work and waits for it (VM runs, 2026-11-29),
//! so scheduling a TSG must make the host fetch its channels.

use kernel::{
    new_mutex,
    prelude::*,
    sync::{Arc, Mutex},
    time::{delay::fsleep, Delta, Instant, Monotonic},
};

use crate::chan::{complete, Chan};
pub(crate) use crate::chan::{Touch, RING_ENTRIES_OFFSET, RING_FAULTS, USERD_GP_GET, USERD_GP_PUT};
use crate::file::NvFile;
use crate::kapi::kthread::{sleep_us, Stop, Worker};
use crate::memory::Backing;
use crate::pbdma::{Fifo, Pbdma};

/// Doorbell offset in a USERMODE page.
pub(crate) const DOORBELL_OFFSET: usize = crate::nv::abi::class::USERMODE_DOORBELL_OFFSET;
/// TIME_0 (and TIME_1 after it) in a USERMODE page.
const USERMODE_TIME: usize = 0x80;
/// Default TSG timeslice, as the driver's.
pub(crate) const DEFAULT_TIMESLICE_US: u64 = 1024;

struct Tsg {
    id: u32,
    client: u32,
    enabled: bool,
    timeslice_ns: u64,
    ns: u64,
    chans: KVec<Chan>,
    next_chan: usize,
}

struct Event {
    client: u32,
    fd: u32,
    file: Arc<NvFile>,
}

struct State {
    tsgs: KVec<Tsg>,
    usermodes: KVec<Arc<Backing>>,
    events: KVec<Event>,
    /// Touches waiting to be applied.
    touches: KVec<Touch>,
    current: Option<u32>,
    last_ran: Option<u32>,
    slice_ns: u64,
    /// The TSG on the engine was preempted while a wait-for-idle item held
    /// it: it leaves once that item is done.
    leaving: bool,
    last: Instant<Monotonic>,
    busy_ns: u64,
    /// When the engine started (GPFIFO release timestamps count from it).
    born: Instant<Monotonic>,
}

/// One fake GPU's engine.
#[pin_data]
pub(crate) struct Engine {
    #[pin]
    state: Mutex<State>,
}

impl Tsg {
    fn runnable(&self) -> bool {
        self.enabled && self.chans.iter().any(Chan::pending)
    }

    /// ns left of a time item in progress on a wait-for-idle channel: the
    /// TSG cannot leave the engine before they are done (0: it can).
    fn wfi_left(&self) -> u64 {
        self.chans
            .iter()
            .filter(|c| c.wfi && c.touch.is_none() && c.pending())
            .map(|c| c.left_ns)
            .max()
            .unwrap_or(0)
    }

    /// Gives the TSG `budget` ns of engine time; returns what it used and
    /// whether any item completed.
    fn run(&mut self, mut budget: u64, touches: &mut KVec<Touch>) -> (u64, bool) {
        let mut used = 0;
        let mut done = false;
        let n = self.chans.len();
        let mut idle_passes = 0;
        while budget > 0 && n > 0 && idle_passes < n {
            let i = self.next_chan % n;
            let tsg_ns = self.ns + used;
            let c = &mut self.chans[i];
            if c.pending() {
                let (u, d) = c.run(budget, tsg_ns, touches);
                used += u;
                budget -= u;
                done |= d;
                idle_passes = 0;
                if d {
                    self.next_chan = i + 1;
                }
            } else {
                self.next_chan = i + 1;
                idle_passes += 1;
            }
        }
        self.ns += used;
        (used, done)
    }
}

impl Engine {
    /// A new, idle engine.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                state <- new_mutex!(State {
                    tsgs: KVec::new(),
                    usermodes: KVec::new(),
                    events: KVec::new(),
                    touches: KVec::new(),
                    current: None,
                    last_ran: None,
                    slice_ns: 0,
                    leaving: false,
                    last: Instant::now(),
                    busy_ns: 0,
                    born: Instant::now(),
                }),
            }),
            GFP_KERNEL,
        )
    }

    /// Adds a TSG (disabled, as the driver creates them).
    pub(crate) fn add_tsg(&self, id: u32, client: u32) -> Result {
        let mut s = self.state.lock();
        s.tsgs.push(
            Tsg {
                id,
                client,
                enabled: false,
                timeslice_ns: DEFAULT_TIMESLICE_US * 1000,
                ns: 0,
                chans: KVec::new(),
                next_chan: 0,
            },
            GFP_KERNEL,
        )?;
        Ok(())
    }

    /// How many TSGs the engine has.
    pub(crate) fn tsg_count(&self) -> usize {
        self.state.lock().tsgs.len()
    }

    /// Each TSG's id, client and engine time so far in ns (the TSG on the
    /// engine credited up to now).
    pub(crate) fn tsg_times(&self) -> Result<KVec<(u32, u32, u64)>> {
        let mut s = self.state.lock();
        s.advance();
        let mut out = KVec::with_capacity(s.tsgs.len(), GFP_KERNEL)?;
        for t in s.tsgs.iter() {
            out.push((t.id, t.client, t.ns), GFP_KERNEL)?;
        }
        Ok(out)
    }

    /// Removes a TSG and its channels.
    pub(crate) fn remove_tsg(&self, id: u32) {
        let mut s = self.state.lock();
        s.tsgs.retain(|t| t.id != id);
        if s.current == Some(id) {
            s.current = None;
        }
    }

    /// Adds a channel to TSG `tsg`, with its ring (if any): the double's
    /// work items, or with `gpfifo` GPFIFO entries at that GPU virtual
    /// address.
    pub(crate) fn add_channel(
        &self,
        tsg: u32,
        token: u32,
        ring: Option<(Arc<Backing>, usize)>,
        entries: u32,
        gpfifo: Option<u64>,
    ) -> Result {
        let mut s = self.state.lock();
        let t = s.tsgs.iter_mut().find(|t| t.id == tsg).ok_or(EINVAL)?;
        t.chans.push(
            Chan {
                token,
                ring,
                entries,
                armed: false,
                left_ns: 0,
                ns: 0,
                touch: None,
                blocked: false,
                wfi: false,
                gpfifo,
                pb: Pbdma::default(),
            },
            GFP_KERNEL,
        )?;
        Ok(())
    }

    /// Removes a channel.
    pub(crate) fn remove_channel(&self, token: u32) {
        let mut s = self.state.lock();
        for t in s.tsgs.iter_mut() {
            t.chans.retain(|c| c.token != token);
        }
    }

    /// GPFIFO_SCHEDULE: enables or disables a TSG. Takes effect at the
    /// call, as on hardware: the TSG on the engine is credited up to now,
    /// a disabled one leaves the engine at once, and an idle engine starts
    /// a newly enabled runnable TSG at once (not at the next poll).
    pub(crate) fn schedule(&self, tsg: u32, enable: bool) -> bool {
        let mut s = self.state.lock();
        if !s.tsgs.iter().any(|t| t.id == tsg) {
            return false;
        }
        s.advance();
        if let Some(t) = s.tsgs.iter_mut().find(|t| t.id == tsg) {
            t.enabled = enable;
            // Scheduled, the TSG's GPFIFO channels are loaded and their
            // GPPut fetched, doorbell or not (see the module's doc).
            for c in t.chans.iter_mut().filter(|c| enable && c.gpfifo.is_some()) {
                c.armed = true;
            }
        }
        if !enable && s.current == Some(tsg) && !s.holds_engine(tsg) {
            s.current = None;
        }
        s.pick();
        true
    }

    /// PREEMPT: takes the TSG off the engine now, credited up to now (it
    /// may run again on its turn).
    pub(crate) fn preempt(&self, tsg: u32) -> bool {
        let mut s = self.state.lock();
        if !s.tsgs.iter().any(|t| t.id == tsg) {
            return false;
        }
        s.advance();
        if s.current == Some(tsg) {
            if s.holds_engine(tsg) {
                s.leaving = true;
            } else {
                s.current = None;
                s.pick();
            }
        }
        true
    }

    /// GR_SET_CTXSW_PREEMPTION_MODE's compute mode of channel `token`:
    /// wait-for-idle or not.
    pub(crate) fn set_compute_wfi(&self, token: u32, wfi: bool) -> bool {
        let mut s = self.state.lock();
        let mut found = false;
        for t in s.tsgs.iter_mut() {
            for c in t.chans.iter_mut().filter(|c| c.token == token) {
                c.wfi = wfi;
                found = true;
            }
        }
        found
    }

    /// As [`Engine::set_compute_wfi`] for every channel of TSG `tsg` (a
    /// TSG shares one GR context).
    pub(crate) fn set_tsg_compute_wfi(&self, tsg: u32, wfi: bool) -> bool {
        let mut s = self.state.lock();
        let Some(t) = s.tsgs.iter_mut().find(|t| t.id == tsg) else {
            return false;
        };
        for c in t.chans.iter_mut() {
            c.wfi = wfi;
        }
        true
    }

    /// Sets a TSG's timeslice.
    pub(crate) fn set_timeslice(&self, tsg: u32, us: u64) -> bool {
        let mut s = self.state.lock();
        match s.tsgs.iter_mut().find(|t| t.id == tsg) {
            Some(t) => {
                t.timeslice_ns = us.saturating_mul(1000);
                true
            }
            None => false,
        }
    }

    /// A TSG's timeslice in us.
    pub(crate) fn timeslice(&self, tsg: u32) -> Option<u64> {
        let s = self.state.lock();
        s.tsgs
            .iter()
            .find(|t| t.id == tsg)
            .map(|t| t.timeslice_ns / 1000)
    }

    /// Adds a USERMODE page to poll for doorbells.
    pub(crate) fn add_usermode(&self, page: Arc<Backing>) -> Result {
        self.state.lock().usermodes.push(page, GFP_KERNEL)?;
        Ok(())
    }

    /// Stops polling a USERMODE page.
    pub(crate) fn remove_usermode(&self, page: &Arc<Backing>) {
        self.state
            .lock()
            .usermodes
            .retain(|p| !core::ptr::eq(&**p, &**page));
    }

    /// Delivers completion events of `client`'s channels to `file`, for
    /// the OS event `(client, fd)`.
    pub(crate) fn add_event(&self, client: u32, fd: u32, file: Arc<NvFile>) -> Result {
        self.state
            .lock()
            .events
            .push(Event { client, fd, file }, GFP_KERNEL)?;
        Ok(())
    }

    /// Stops the delivery of the events that match: of `client`, of OS
    /// event number `fd`, to `file` (`None`: any).
    pub(crate) fn remove_events(
        &self,
        client: Option<u32>,
        fd: Option<u32>,
        file: Option<&NvFile>,
    ) {
        self.state.lock().events.retain(|e| {
            let c = client.is_none_or(|c| c == e.client);
            let n = fd.is_none_or(|n| n == e.fd);
            let f = file.is_none_or(|f| core::ptr::eq(&*e.file, f));
            !(c && n && f)
        });
    }

    /// Completes a touch the driver has applied (`served`: it found its
    /// VA space, range and memory; otherwise it counts a fault).
    pub(crate) fn finish_touch(&self, token: u32, served: bool) {
        let mut s = self.state.lock();
        let client = s.unblock(token, |c| {
            c.touch = None;
            let Some((ring, off)) = &c.ring else {
                return false;
            };
            if !served {
                let faults = ring.read_u64(*off + RING_FAULTS).unwrap_or(0);
                let _ = ring.write_u64(*off + RING_FAULTS, faults + 1);
            }
            let Ok(get) = ring.read_u32(*off + USERD_GP_GET) else {
                return false;
            };
            complete(ring, *off, get, c.entries);
            true
        });
        s.post_events(client);
        s.pick();
    }

    /// Gives back a GPFIFO channel's host state after the driver ran its
    /// entries, and posts completion events for its client if any entry
    /// completed.
    pub(crate) fn finish_fifo(&self, token: u32, pb: Pbdma, completed: bool) {
        let mut s = self.state.lock();
        let client = s.unblock(token, |c| {
            c.pb = pb;
            // A grid just launched: its time is the channel's to run.
            if let Some(g) = c.pb.grid.as_mut() {
                c.left_ns = core::mem::take(&mut g.ns);
            }
            completed
        });
        s.post_events(client);
    }

    /// The GPFIFO channels of enabled TSGs with entries to run, each held
    /// (`blocked`) until [`Engine::finish_fifo`].
    fn take_fifos(s: &mut State) -> KVec<Fifo> {
        let mut jobs = KVec::new();
        let now_ns = s.born.elapsed().as_nanos().max(0) as u64;
        for t in s.tsgs.iter_mut().filter(|t| t.enabled) {
            for c in t.chans.iter_mut().filter(|c| c.fifo_ready()) {
                let (Some(gpfifo), Some(userd)) = (c.gpfifo, c.ring.clone()) else {
                    continue;
                };
                let job = Fifo {
                    token: c.token,
                    client: t.client,
                    gpfifo,
                    entries: c.entries,
                    userd,
                    pb: c.pb,
                    now_ns,
                };
                // If the list cannot grow, the channel runs on a later turn.
                if jobs.push(job, GFP_KERNEL).is_ok() {
                    c.blocked = true;
                }
            }
        }
        jobs
    }

    /// One scheduling step; returns whether anything is on the engine or
    /// enabled, the ns until the item on the engine ends (or its TSG's timeslice does,
    /// whichever is first; `None` with nothing on the engine), the
    /// touches that finished their engine time and the GPFIFO channels with
    /// entries to run (both for the driver, without the lock).
    fn step(&self) -> (bool, Option<u64>, KVec<Touch>, KVec<Fifo>) {
        let mut s = self.state.lock();
        // The GPU's timer, TIME_0 and TIME_1 of every USERMODE page
        // (`clc361.h:31-32`: ns, the low 5 bits 0), which libcuda reads to
        // time its waits; one aligned 8-byte store, so a reader never sees
        // half of it. GUESS: counted from the engine's start, on its turns.
        let now_ns = s.born.elapsed().as_nanos().max(0) as u64;
        for page in s.usermodes.iter() {
            let _ = page.write_u64(USERMODE_TIME, now_ns & !0x1f);
        }
        // Doorbells: arm the channel whose token was written.
        let mut tokens = KVec::new();
        for page in s.usermodes.iter() {
            if let Ok(tok) = page.read_u32(DOORBELL_OFFSET) {
                if tok != 0 {
                    let _ = page.write_u32(DOORBELL_OFFSET, 0);
                    let _ = tokens.push(tok, GFP_KERNEL);
                }
            }
        }
        for tok in tokens.iter() {
            for t in s.tsgs.iter_mut() {
                for c in t.chans.iter_mut().filter(|c| c.token == *tok) {
                    c.armed = true;
                }
            }
        }
        s.advance();
        s.pick();
        let next = s.current.and_then(|cur| {
            let t = s.tsgs.iter().find(|t| t.id == cur)?;
            let wfi = t.wfi_left();
            if wfi > 0 && (!t.enabled || s.leaving || s.slice_ns >= t.timeslice_ns) {
                return Some(wfi);
            }
            let item = t
                .chans
                .iter()
                .filter(|c| c.pending() && c.left_ns > 0)
                .map(|c| c.left_ns)
                .min()
                .unwrap_or(1);
            Some(item.min(t.timeslice_ns.saturating_sub(s.slice_ns)))
        });
        // An enabled TSG may get work any time: poll as when busy.
        let ready = s.current.is_some() || s.tsgs.iter().any(|t| t.enabled);
        let fifos = Self::take_fifos(&mut s);
        (ready, next, core::mem::take(&mut s.touches), fifos)
    }
}

impl State {
    /// Unblocks the blocked channel `token` (what the driver held), running
    /// `f` on it; the channel's TSG's client if `f` says an item completed.
    fn unblock(&mut self, token: u32, mut f: impl FnMut(&mut Chan) -> bool) -> Option<u32> {
        let mut client = None;
        for t in self.tsgs.iter_mut() {
            let tsg_client = t.client;
            for c in t.chans.iter_mut().filter(|c| c.token == token && c.blocked) {
                c.blocked = false;
                if f(c) {
                    client = Some(tsg_client);
                }
            }
        }
        client
    }

    /// Posts a completion event to every OS event of `client`, if any.
    fn post_events(&self, client: Option<u32>) {
        let Some(client) = client else {
            return;
        };
        for e in self.events.iter().filter(|e| e.client == client) {
            e.file.post_event();
        }
    }

    /// Whether TSG `tsg` cannot leave the engine yet: it has a
    /// wait-for-idle item in progress.
    fn holds_engine(&self, tsg: u32) -> bool {
        self.tsgs.iter().any(|t| t.id == tsg && t.wfi_left() > 0)
    }

    /// Gives the time since the last advance to the TSG on the engine, as
    /// hardware would have run it, and posts completion events.
    fn advance(&mut self) {
        let now = Instant::<Monotonic>::now();
        let dt = (now - self.last).as_nanos().max(0) as u64;
        self.last = now;
        let mut completed_client = None;
        if let Some(cur) = self.current {
            let slice = self.slice_ns;
            let touches = &mut self.touches;
            let on = |t: &Tsg| t.id == cur && (t.runnable() || t.wfi_left() > 0);
            if let Some(t) = self.tsgs.iter_mut().find(|t| on(t)) {
                // Disabled, preempted or past its timeslice, a TSG held on
                // the engine by a wait-for-idle item runs only that item.
                let budget = if t.enabled && !self.leaving && slice < t.timeslice_ns {
                    dt
                } else {
                    dt.min(t.wfi_left())
                };
                let (used, done) = t.run(budget, touches);
                if done {
                    completed_client = Some(t.client);
                }
                let over = (self.leaving || slice + used >= t.timeslice_ns || !t.runnable())
                    && t.wfi_left() == 0;
                self.busy_ns += used;
                self.slice_ns += used;
                if over {
                    self.current = None;
                }
            } else {
                self.current = None;
            }
        }
        self.post_events(completed_client);
    }

    /// Puts the next runnable TSG on an idle engine, round robin after the
    /// last one.
    fn pick(&mut self) {
        if self.current.is_some() {
            return;
        }
        let n = self.tsgs.len();
        let start = self
            .tsgs
            .iter()
            .position(|t| Some(t.id) == self.last_ran)
            .map_or(0, |i| i + 1);
        for k in 0..n {
            let t = &self.tsgs[(start + k) % n];
            if t.runnable() {
                let id = t.id;
                self.current = Some(id);
                self.last_ran = Some(id);
                self.slice_ns = 0;
                self.leaving = false;
                break;
            }
        }
    }
}

/// What serves the engine's accesses to memory it cannot reach itself:
/// managed addresses (the driver's UVM, `uvm/mmap.rs`) and GPU virtual
/// addresses (its RM mappings, `rm/gpfifo.rs`). The engine knows no more of
/// the driver than this.
pub(crate) trait GpuMemory: Send + Sync + 'static {
    /// GPU work of channel `token` on `gpu` accessed managed address
    /// `addr`: make it resident there. False: a fault.
    fn touch(&self, gpu: u32, token: u32, addr: u64) -> bool;

    /// Runs GPFIFO channel `job`'s pending entries on `gpu`, up to an
    /// unsatisfied acquire; returns whether any entry completed.
    fn gpfifo(&self, gpu: u32, job: &mut Fifo) -> bool;
}

/// The engine thread's loop body.
pub(crate) struct EngineWorker<T: GpuMemory> {
    /// The engine it drives.
    pub(crate) engine: Arc<Engine>,
    /// Its GPU's index.
    pub(crate) gpu: u32,
    /// The driver, which applies touches (RM lock; never taken with the
    /// engine's lock held).
    pub(crate) driver: Arc<T>,
}

impl<T: GpuMemory> Worker for EngineWorker<T> {
    fn turn(&self, _stop: &Stop) {
        let (busy, next, touches, mut fifos) = self.engine.step();
        for t in touches.iter() {
            let served = self.driver.touch(self.gpu, t.token, t.addr);
            self.engine.finish_touch(t.token, served);
        }
        for f in fifos.iter_mut() {
            let completed = self.driver.gpfifo(self.gpu, f);
            self.engine.finish_fifo(f.token, f.pb, completed);
        }
        // Poll fast while there is work, slower when idle (hardware would
        // sleep until a doorbell; polling keeps the double simple). With an
        // item on the engine, wake when it ends (at least 20 us on), on a
        // timer without slack: hardware completes an item when its time is
        // done, and so moves GPGet on, not up to a poll later (a guess at
        // hardware's timing, as the ns items are the double's own).
        match next {
            Some(ns) if busy => sleep_us(ns.div_ceil(1000).clamp(20, 200)),
            _ => fsleep(Delta::from_micros(if busy { 200 } else { 1000 })),
        }
    }
}
