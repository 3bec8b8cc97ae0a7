// SPDX-License-Identifier: GPL-2.0

//! GPFIFO channels' work (issue 40): what the engine hands the driver for
//! a channel whose ring is at a GPU virtual address (`engine.rs`).
//!
//! Each entry from `GPGet` to `GPPut` names a pushbuffer segment; its
//! methods run in order (`src/nv/abi/pushbuf/`): SET_OBJECT binds a class to
//! a subchannel; the host's semaphores (`clc86f.h`), the copy engine's
//! copies, fills and semaphores (`clc8b5.h`) and the compute class's inline
//! data and report semaphores (`clc6c0.h`) read and write the memory the
//! client's RM_MAP_MEMORY_DMA mappings name; every other method is parsed
//! and ignored. An unsatisfied acquire stops the channel there, to be tried
//! again on the engine's next turn. `GPGet` moves past an entry once its
//! methods ran.
//!
//! A compute launch takes engine time: [`GRID_NS_PER_CTA`] for each CTA of
//! its grid (the QMD's grid size, `clcbc0qmd.h`), whatever its kernel, whose
//! instructions are not run. The channel stops after the launch method;
//! the engine runs the grid's time down in its round robin, as it runs the
//! double's own work items (shares, timeslices, preemption, wait-for-idle),
//! and then hands the channel back here, where the semaphores the QMD
//! names are released and the entry goes on. GUESS: a model, not
//! hardware's timing, which depends on the kernel; it gives libcuda's
//! launches a share of the engine to measure.
//!
//! Where hardware would take an MMU fault (an address no mapping of the
//! client covers, a segment that cannot be read) the double counts a fault
//! in USERD's `faults` word (0x18, which hardware ignores) and goes on: the
//! access is skipped, an acquire on it passes, a bad segment is skipped
//! whole. GUESS: hardware stops the channel and RM reports a robust-channel
//! error; the double keeps it running so that a fuzzed channel cannot hang
//! its engine thread.
//!
//! Addresses resolve through every mapping of the channel's client, not
//! only those of its VA space (a simplification: the double's VA ranges
//! are placed at fixed addresses per client): its RM_MAP_MEMORY_DMA
//! mappings, and the UVM external mappings of GPU VA spaces it registered.

use kernel::{prelude::*, sync::Arc};

use super::state::{Driver, Rm};
use crate::base::ObjKind;
use crate::engine::GpuMemory;
use crate::memory::{Backing, MAX_BACKED};
use crate::nv::abi::class;
use crate::nv::abi::pushbuf::compute::{
    qmd_ctas, qmd_major_version, qmd_releases, QMD_V03_BYTES, QMD_V04_BYTES,
};
use crate::nv::abi::pushbuf::{
    host, CopyData, GpEntry, Launch, Methods, SemOp, Semaphore, HOST_METHODS_END,
};
use crate::nv::abi::pushbuf::{ComputeOp, StreamError};
use crate::pbdma::{Fifo, Grid, Pbdma};
use crate::uvm::state::RangeKind;

/// Engine time a compute grid takes per CTA, in ns (see the module's doc).
pub(crate) const GRID_NS_PER_CTA: u64 = 1_000;
/// The most engine time one grid takes, in ns (10 s), however large.
const GRID_MAX_NS: u64 = 10_000_000_000;

/// The most words of one pushbuffer segment the double reads (256 KiB); a
/// longer segment is skipped as a fault.
const MAX_SEGMENT_WORDS: u32 = 1 << 16;
/// The most entries one run takes, so that one channel cannot hold the
/// engine thread (the rest wait for the next turn).
const ENTRIES_A_RUN: u32 = 64;
/// Bytes a copy moves at a time.
const CHUNK: usize = 4096;
/// The most bytes the copies and fills of one run write; past it a run's
/// copies write nothing more (GUESS: hardware copies whatever is asked;
/// the bound keeps a fuzzed channel from holding the engine thread).
const COPY_BUDGET: u64 = 64 << 20;

impl Rm {
    /// Where GPU virtual address `va` of client `client` lies: the backing
    /// of the memory mapped there (backed now if it was not yet), the
    /// offset in it and how many bytes from there the mapping covers.
    pub(crate) fn resolve(&mut self, client: u32, va: u64) -> Option<(Arc<Backing>, usize, u64)> {
        if let Some(hit) = self.pool_at(client, va) {
            return Some(hit);
        }
        let (mem, off, left) = self.mapped(client, va)?;
        let m = self.mem(mem)?;
        if m.backing.is_none() && m.size <= MAX_BACKED {
            m.backing = Backing::new(m.size)
                .ok()
                .and_then(|b| Arc::new(b, GFP_KERNEL).ok());
        }
        let b = m.backing.clone()?;
        let off = usize::try_from(off).ok()?;
        let room = b.len().checked_sub(off).filter(|&n| n > 0)?;
        Some((b, off, left.min(room as u64)))
    }

    /// The memory (`Rm::mems`) mapped at GPU virtual address `va` of
    /// client `client`, the offset in it and how many bytes from there the
    /// mapping covers: an RM_MAP_MEMORY_DMA mapping of the client, else a
    /// UVM external mapping on a GPU whose GPU VA space in a UVM VA space
    /// is one of the client's (`UVM_MAP_EXTERNAL_ALLOCATION`, as libcuda
    /// maps its memory when UVM is on).
    fn mapped(&self, client: u32, va: u64) -> Option<(u32, u64, u64)> {
        if let Some(m) = self
            .dma_maps
            .iter()
            .find(|m| m.client == client && va >= m.va && va - m.va < m.length)
        {
            let mem = match self.any_client(client)?.find(m.memory)?.kind {
                ObjKind::Memory { mem } => mem,
                _ => return None,
            };
            return Some((mem, m.offset + (va - m.va), m.length - (va - m.va)));
        }
        self.uvm.spaces.iter().find_map(|s| {
            let gpus = || {
                s.gpus
                    .iter()
                    .filter(|g| g.vaspace.is_some_and(|(c, _)| c == client))
            };
            s.ranges.iter().find_map(|r| match &r.kind {
                RangeKind::External { maps } if r.contains(va) => maps
                    .iter()
                    .find(|m| va >= m.base && va - m.base < m.len && gpus().any(|g| g.gpu == m.gpu))
                    .map(|m| (m.mem, m.offset + (va - m.base), m.len - (va - m.base))),
                _ => None,
            })
        })
    }
}

/// A channel's view of GPU virtual memory: its client's mappings.
struct View<'a> {
    drv: &'a Driver,
    client: u32,
    /// Accesses that found no memory.
    faults: u64,
    /// Bytes this run's copies and fills may still write.
    budget: u64,
}

impl View<'_> {
    /// Runs `f` on each piece of the `len` bytes at `va` (its backing,
    /// offset there, and the piece's range within the `len`); false (a
    /// fault) if any byte is unmapped or `f` fails.
    fn pieces(
        &mut self,
        va: u64,
        len: usize,
        mut f: impl FnMut(&Backing, usize, core::ops::Range<usize>) -> Result,
    ) -> bool {
        let mut done = 0;
        while done < len {
            let at = va.wrapping_add(done as u64);
            let Some((b, off, left)) = self.drv.rm.lock().resolve(self.client, at) else {
                self.faults += 1;
                return false;
            };
            let n = (len - done).min(usize::try_from(left).unwrap_or(usize::MAX));
            if f(&b, off, done..done + n).is_err() {
                self.faults += 1;
                return false;
            }
            done += n;
        }
        true
    }

    /// Reads `buf.len()` bytes at `va`; false (a fault) if any is unmapped.
    fn read(&mut self, va: u64, buf: &mut [u8]) -> bool {
        self.pieces(va, buf.len(), |b, off, r| b.read_bytes(off, &mut buf[r]))
    }

    /// Writes `buf` at `va`; false (a fault) if any byte is unmapped.
    fn write(&mut self, va: u64, buf: &[u8]) -> bool {
        self.pieces(va, buf.len(), |b, off, r| b.write_bytes(off, &buf[r]))
    }

    /// The grid of the QMD at `va`: its engine time ([`qmd_ctas`]) and
    /// its release semaphores ([`qmd_releases`]), from version 03_00's 256
    /// bytes or 04_00's 384; a grid of 1 ns that releases nothing if it
    /// cannot be read (a fault).
    fn qmd(&mut self, va: u64) -> Grid {
        let fault = Grid {
            ns: 1,
            releases: [None; 3],
        };
        let mut bytes = [0u8; QMD_V04_BYTES];
        if !self.read(va, &mut bytes[..QMD_V03_BYTES]) {
            return fault;
        }
        let mut words = [0u32; QMD_V04_BYTES / 4];
        let fill = |words: &mut [u32], bytes: &[u8]| {
            for (w, b) in words.iter_mut().zip(bytes.chunks_exact(4)) {
                *w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
        };
        fill(&mut words, &bytes);
        if qmd_major_version(&words) == 4 {
            if !self.read(va + QMD_V03_BYTES as u64, &mut bytes[QMD_V03_BYTES..]) {
                return fault;
            }
            fill(&mut words, &bytes);
        }
        Grid {
            ns: qmd_ctas(&words)
                .saturating_mul(GRID_NS_PER_CTA)
                .clamp(1, GRID_MAX_NS),
            releases: qmd_releases(&words),
        }
    }

    /// The word or double word at `va` (0 on a fault).
    fn value(&mut self, va: u64, wide: bool) -> u64 {
        let mut b = [0u8; 8];
        let n = if wide { 8 } else { 4 };
        if !self.read(va, &mut b[..n]) {
            return 0;
        }
        u64::from_le_bytes(b)
    }

    /// Runs semaphore `s`; false for an acquire not yet satisfied (one
    /// that faults passes).
    fn semaphore(&mut self, s: &Semaphore, now_ns: u64) -> bool {
        let n = if s.wide { 8 } else { 4 };
        match s.op {
            SemOp::Release => {
                self.write(s.addr, &s.payload.to_le_bytes()[..n]);
                if s.timestamp {
                    self.write(s.addr + 8, &now_ns.to_le_bytes());
                }
                true
            }
            SemOp::Reduction(op) => {
                let v = self.value(s.addr, s.wide);
                let r = reduce(op, v, s.payload, s.wide);
                self.write(s.addr, &r.to_le_bytes()[..n]);
                true
            }
            _ => {
                let faults = self.faults;
                let v = self.value(s.addr, s.wide);
                self.faults != faults || s.satisfied(v)
            }
        }
    }

    /// Runs a copy engine's LAUNCH_DMA: its lines, then its semaphore.
    fn launch(&mut self, l: &Launch, now_ns: u64) {
        if l.plain {
            for line in 0..u64::from(l.lines) {
                let len = l.line_bytes.min(self.budget);
                let src = l.src.wrapping_add(line * u64::from(l.pitch_in));
                let dst = l.dst.wrapping_add(line * u64::from(l.pitch_out));
                if len == 0 || !self.line(&l.data, src, dst, len) {
                    break;
                }
                self.budget -= len;
            }
        }
        if let Some(s) = &l.semaphore {
            self.semaphore(s, now_ns);
        }
    }

    /// One line of a copy or fill; false once a fault stopped it.
    fn line(&mut self, data: &CopyData, src: u64, dst: u64, len: u64) -> bool {
        let mut buf = [0u8; CHUNK];
        let mut at = 0u64;
        while at < len {
            let n = (len - at).min(CHUNK as u64) as usize;
            let chunk = &mut buf[..n];
            match data {
                CopyData::Copy => {
                    if !self.read(src.wrapping_add(at), chunk) {
                        return false;
                    }
                }
                CopyData::Fill { element, size } => {
                    let size = usize::from(*size).max(1);
                    for (i, b) in chunk.iter_mut().enumerate() {
                        *b = element[(at as usize + i) % size];
                    }
                }
                CopyData::Zero => chunk.fill(0),
                CopyData::None | CopyData::Unsupported => return true,
            }
            if !self.write(dst.wrapping_add(at), chunk) {
                return false;
            }
            at += n as u64;
        }
        true
    }
}

/// `NVC86F_SEM_EXECUTE_REDUCTION` op `op` of `payload` into `v`
/// (`clc86f.h:240-248` at 550.163.01; INC wraps to 0 past the payload,
/// DEC to the payload below 1, as the class documents them).
fn reduce(op: u8, v: u64, payload: u64, wide: bool) -> u64 {
    let r = match op {
        0 => v.min(payload),
        1 => v.max(payload),
        2 => v ^ payload,
        3 => v & payload,
        4 => v | payload,
        5 => v.wrapping_add(payload),
        6 if v >= payload => 0,
        6 => v + 1,
        7 if v == 0 || v > payload => payload,
        7 => v - 1,
        _ => v,
    };
    if wide {
        r
    } else {
        r & 0xffff_ffff
    }
}

/// What one method did to the channel.
enum Step {
    /// Done; on to the next.
    Ran,
    /// An acquire not yet satisfied: stop here.
    Wait,
    /// A grid was launched (`pb.grid`): stop after this method until the
    /// engine has run its time.
    Launched,
}

/// Runs method `m` of subchannel `subch` on the channel's state.
fn method(pb: &mut Pbdma, v: &mut View<'_>, subch: usize, m: u32, data: u32, now: u64) -> Step {
    if m < HOST_METHODS_END {
        if m == host::SET_OBJECT {
            // NVCLASS, 15:0 (`clc86f.h:46-50`).
            pb.classes[subch] = data & 0xffff;
        } else if let Some(s) = pb.host.method(m, data) {
            if !v.semaphore(&s, now) {
                return Step::Wait;
            }
        }
        // NON_STALL_INTERRUPT and the rest: completion events go out when
        // the run ends (`Engine::finish_fifo`).
        return Step::Ran;
    }
    match pb.classes[subch] {
        class::AMPERE_DMA_COPY_A | class::AMPERE_DMA_COPY_B | class::HOPPER_DMA_COPY_A => {
            if let Some(l) = pb.copy[subch].method(m, data) {
                v.launch(&l, now);
            }
        }
        class::AMPERE_COMPUTE_A
        | class::AMPERE_COMPUTE_B
        | class::ADA_COMPUTE_A
        | class::HOPPER_COMPUTE_A => match pb.compute[subch].method(m, data) {
            Some(ComputeOp::Inline {
                addr,
                word,
                len,
                then,
            }) => {
                v.write(addr, &word.to_le_bytes()[..usize::from(len.clamp(1, 4))]);
                if let Some(s) = then {
                    v.semaphore(&s, now);
                }
            }
            Some(ComputeOp::Report(s)) => {
                v.semaphore(&s, now);
            }
            // The grid takes its engine time; the kernel is not run.
            Some(ComputeOp::Launch(qmd)) => {
                pb.grid = Some(v.qmd(qmd));
                return Step::Launched;
            }
            Some(ComputeOp::InlineSkipped) | None => {}
        },
        // Methods of other classes (or of no object) are ignored.
        _ => {}
    }
    Step::Ran
}

/// Reads the segment of entry `e`: its words, or `None` (a fault).
fn segment(v: &mut View<'_>, e: &GpEntry) -> Option<KVec<u32>> {
    if e.words > MAX_SEGMENT_WORDS {
        v.faults += 1;
        return None;
    }
    let n = e.words as usize;
    let mut bytes = KVec::from_elem(0u8, n * 4, GFP_KERNEL).ok()?;
    if !v.read(e.addr, &mut bytes) {
        return None;
    }
    let mut words = KVec::with_capacity(n, GFP_KERNEL).ok()?;
    for w in bytes.chunks_exact(4) {
        words
            .push(u32::from_le_bytes([w[0], w[1], w[2], w[3]]), GFP_KERNEL)
            .ok()?;
    }
    Some(words)
}

/// Runs the methods of segment `words` from method `pb.done` on; false if
/// an acquire or a launch stopped it (`pb.done` says where it goes on).
fn run_segment(pb: &mut Pbdma, v: &mut View<'_>, words: &[u32], now: u64) -> bool {
    for (i, m) in Methods::new(words).enumerate().skip(pb.done) {
        let m = match m {
            Ok(m) => m,
            // A malformed or truncated stream ends the segment there.
            Err(StreamError::Malformed(_) | StreamError::Truncated(_)) => break,
        };
        let subch = usize::from(m.subch & 7);
        match method(pb, v, subch, m.method, m.data, now) {
            Step::Ran => {}
            Step::Wait => {
                pb.done = i;
                return false;
            }
            Step::Launched => {
                pb.done = i + 1;
                return false;
            }
        }
    }
    pb.done = 0;
    true
}

impl Driver {
    /// Runs GPFIFO channel `job`'s entries from `GPGet` to `GPPut` (at
    /// most [`ENTRIES_A_RUN`]), after releasing the semaphores of a grid
    /// whose time is done; returns whether any entry or grid completed.
    fn run_gpfifo(&self, job: &mut Fifo) -> bool {
        let (userd, off) = (&job.userd.0, job.userd.1);
        let gp_get = off + crate::engine::USERD_GP_GET;
        let gp_put = off + crate::engine::USERD_GP_PUT;
        let mut v = View {
            drv: self,
            client: job.client,
            faults: 0,
            budget: COPY_BUDGET,
        };
        let mut completed = false;
        if let Some(g) = job.pb.grid.take_if(|g| g.ns == 0) {
            for s in g.releases.iter().flatten() {
                v.semaphore(s, job.now_ns);
            }
            count_faults(userd, off, &mut v.faults);
            completed = true;
        }
        if job.pb.grid.is_some() {
            // Its time is not done (the engine does not hand such a
            // channel over).
            return completed;
        }
        for _ in 0..ENTRIES_A_RUN {
            let (Ok(get), Ok(put)) = (userd.read_u32(gp_get), userd.read_u32(gp_put)) else {
                break;
            };
            let get = get % job.entries.max(1);
            if get == put % job.entries.max(1) {
                break;
            }
            let mut raw = [0u8; 8];
            let at = job.gpfifo.wrapping_add(u64::from(get) * 8);
            let ran = if v.read(at, &mut raw) {
                let e = GpEntry::decode(u64::from_le_bytes(raw));
                match (e.words, segment(&mut v, &e)) {
                    // A control entry (NOP and the rest) does nothing.
                    (0, _) | (_, None) => true,
                    (_, Some(words)) => run_segment(&mut job.pb, &mut v, &words, job.now_ns),
                }
            } else {
                true
            };
            // Faults are counted before GPGet moves: a client that sees the
            // entry done sees its faults.
            count_faults(userd, off, &mut v.faults);
            if !ran {
                break;
            }
            job.pb.done = 0;
            let _ = userd.write_u32(gp_get, (get + 1) % job.entries);
            completed = true;
        }
        completed
    }
}

/// Adds `faults` to USERD's `faults` word and clears it.
fn count_faults(userd: &Backing, off: usize, faults: &mut u64) {
    if *faults > 0 {
        let at = off + crate::engine::RING_FAULTS;
        let n = userd.read_u64(at).unwrap_or(0);
        let _ = userd.write_u64(at, n.saturating_add(*faults));
        *faults = 0;
    }
}

impl GpuMemory for Driver {
    fn touch(&self, gpu: u32, token: u32, addr: u64) -> bool {
        self.uvm_touch(gpu, token, addr)
    }

    fn gpfifo(&self, _gpu: u32, job: &mut Fifo) -> bool {
        self.run_gpfifo(job)
    }
}
