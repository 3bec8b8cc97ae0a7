// SPDX-License-Identifier: GPL-2.0

//! The fuzzer's calls: what one thread of a tenant does, one step at a time.
//!
//! Half the steps are the calls CUDA makes, in order but with arguments
//! drawn from what the thread (and its neighbours) hold: sessions, VRAM,
//! mappings, TSGs with channels, UVM contexts with managed memory, DUPs,
//! external mappings, closes and forks. The other half are raw calls built
//! from the dispatch table of the release the double claims: every escape,
//! UVM command, class and control, plus numbers the table does not have;
//! each block is filled field by field from the ABI layouts (handles live,
//! stale, foreign or random; sizes at, under and over the rule; pointers
//! valid, unmapped, read-only, in the kernel, unaligned, running off a page
//! or in the bounce area), and handed over in a slot other threads write
//! too.

use super::mem::{Place, Scratch, PLACES};
use super::rng::Rng;
use crate::session::Session;
use crate::sys::Shared;
use nvclient::abi::{self, class, WireField};
use nvclient::ioctl::{Escape, SizeRule};
use nvclient::uvm::{UvmContext, CPU_UUID};
use nvclient::{ManagedRange, Mapping, WorkChannel};
use std::sync::Mutex;

/// What a tenant is: its vGPU, the GPU under it, its ceiling and cgroup.
#[derive(Clone, Copy, Debug)]
pub struct Tenant {
    /// Index among the run's tenants (its slots on the board).
    pub index: usize,
    /// vGPU id.
    pub vgpu: u32,
    /// The fake GPU backing it.
    pub gpu: u32,
    /// memory_limit, bytes.
    pub limit: u64,
    /// Its cgroup, from the cgroup2 root.
    pub cgroup: &'static str,
}

/// Handles every tenant's threads post for the others to use (foreign
/// handles for them): `BOARD_SLOTS` pairs of (client, object) per tenant;
/// which rows of the dispatch table the raw calls have used; and the
/// isolation oracle's first breach.
///
/// The board is also the oracle's ownership record: the double numbers
/// clients from a counter (`selftests/nvidia/rm/alloc.rs`), so a client
/// handle a tenant posted is that tenant's for the run, and a call made
/// with a client another tenant posted is a call on another tenant's
/// objects. Such a call must fail, and the data a tenant reads back (PIDs,
/// sizes) must be its own: the first call that breaks this is recorded
/// here and fails the round ([`Board::breached`]).
pub struct Board {
    handles: Shared,
    cover: Shared,
    breach: Shared,
}

/// What a breach of isolation was (the oracle's record, for the message).
#[derive(Clone, Copy, Debug)]
#[repr(u64)]
pub enum Breach {
    /// RM_ALLOC_MEMORY under another tenant's client succeeded.
    AllocMemory = 1,
    /// RM_FREE on another tenant's client succeeded.
    Free,
    /// RM_DUP_OBJECT from another tenant's client succeeded.
    Dup,
    /// A raw RM_ALLOC under another tenant's client succeeded.
    Alloc,
    /// FB_GET_INFO_V2 answered a size over the tenant's ceiling.
    FbInfo,
    /// VID_HEAP_CONTROL INFO answered a free heap over the ceiling.
    HeapInfo,
    /// GET_PIDS listed a process of another cgroup.
    Pids,
}

/// Pairs per tenant on the board.
pub const BOARD_SLOTS: usize = 80;

/// The families of the dispatch table, for the coverage bitmap: each
/// family's rows start at its base bit.
#[derive(Clone, Copy, Debug)]
pub enum Family {
    /// Escapes.
    Escape = 0,
    /// UVM commands.
    Uvm = 1024,
    /// RM classes.
    Class = 2048,
    /// RM controls.
    Control = 4096,
}

impl Family {
    /// The family's place among the four (its sweep cursor's slot).
    fn index(self) -> usize {
        match self {
            Family::Escape => 0,
            Family::Uvm => 1,
            Family::Class => 2,
            Family::Control => 3,
        }
    }
}

/// The slots of the cover page that hold the families' sweep cursors
/// (past the bitmap, which ends below bit 4096 + 1024).
const SWEEP_SLOT: usize = 500;
/// Whole passes of a family's table that its raw calls make first, each
/// row once a pass, well formed enough to reach vgpu's dispatch (see
/// [`Thread::row`]); random draws come after, with a sweep draw a quarter
/// of the time.
const SWEEP_PASSES: usize = 2;

impl Board {
    /// A new board, shared with the processes forked after.
    pub fn new() -> Result<Board, String> {
        Ok(Board {
            handles: Shared::new()?,
            cover: Shared::new()?,
            breach: Shared::new()?,
        })
    }

    /// Whether `tenant` posted client handle `c` (never 0).
    fn posted(&self, tenant: usize, c: u32) -> bool {
        c != 0
            && (0..BOARD_SLOTS)
                .any(|k| self.handles.get((tenant * BOARD_SLOTS + k) * 2) == c as u64)
    }

    /// Whether client `c` is another tenant's than `me` (of `tenants`):
    /// posted by one of them, never by `me`.
    pub fn foreign(&self, me: usize, tenants: usize, c: u32) -> bool {
        !self.posted(me, c) && (0..tenants).any(|t| t != me && self.posted(t, c))
    }

    /// Records a breach by `tenant`: `what`, with values `a` and `b`
    /// (client and object, or the size or PID answered).
    pub fn breached_by(&self, tenant: usize, what: Breach, a: u64, b: u64) {
        if self.breach.get(0) == 0 {
            self.breach.set(1, tenant as u64);
            self.breach.set(2, a);
            self.breach.set(3, b);
            self.breach.set(0, what as u64);
        }
    }

    /// The first breach recorded, if any, in words.
    pub fn breached(&self) -> Option<String> {
        let what = self.breach.get(0);
        if what == 0 {
            return None;
        }
        let (t, a, b) = (self.breach.get(1), self.breach.get(2), self.breach.get(3));
        let s = match what {
            1 => format!(
                "RM_ALLOC_MEMORY under client {a:#x} (another tenant's) succeeded: handle {b:#x}"
            ),
            2 => format!("RM_FREE of object {b:#x} of client {a:#x} (another tenant's) succeeded"),
            3 => format!(
                "RM_DUP_OBJECT of object {b:#x} of client {a:#x} (another tenant's) succeeded"
            ),
            4 => {
                format!("RM_ALLOC under client {a:#x} (another tenant's) succeeded: handle {b:#x}")
            }
            5 => format!("FB_GET_INFO_V2 index {a} answered {b} KiB, over the ceiling"),
            6 => format!("VID_HEAP_CONTROL INFO answered {a} bytes free of {b}, over the ceiling"),
            _ => format!("GET_PIDS listed PID {a}, a process outside its cgroup"),
        };
        Some(format!("isolation breached by tenant {t}: {s}"))
    }

    /// Row `k` of `family` was used.
    fn covered(&self, family: Family, k: usize) {
        let bit = family as usize + k;
        self.cover.or(bit / 64, 1 << (bit % 64));
    }

    /// Whether row `k` of `family` was used.
    pub fn drawn(&self, family: Family, k: usize) -> bool {
        let bit = family as usize + k;
        self.cover.get(bit / 64) & (1 << (bit % 64)) != 0
    }

    /// How many of the first `rows` rows of `family` were used.
    pub fn coverage(&self, family: Family, rows: usize) -> usize {
        (0..rows).filter(|&k| self.drawn(family, k)).count()
    }

    /// The next row of `family`'s sweep (of `rows` rows). One cursor per
    /// family, shared by every tenant's threads for the whole run, so that
    /// the sweep draws of all of them together walk the table in order.
    fn sweep(&self, family: Family, rows: usize) -> usize {
        self.cover.add(SWEEP_SLOT + family.index(), 1) as usize % rows.max(1)
    }

    /// Whether `family`'s sweep (of `rows` rows) is still in its first
    /// [`SWEEP_PASSES`] passes.
    fn sweeping(&self, family: Family, rows: usize) -> bool {
        (self.cover.get(SWEEP_SLOT + family.index()) as usize) < rows * SWEEP_PASSES
    }

    fn post(&self, rng: &mut Rng, t: usize, client: u32, object: u32) {
        let i = (t * BOARD_SLOTS + rng.index(BOARD_SLOTS)) * 2;
        self.handles.set(i, client as u64);
        self.handles.set(i + 1, object as u64);
    }

    /// A pair posted by tenant `t` (zeros where none was).
    fn get(&self, rng: &mut Rng, t: usize) -> (u32, u32) {
        let i = (t * BOARD_SLOTS + rng.index(BOARD_SLOTS)) * 2;
        (self.handles.get(i) as u32, self.handles.get(i + 1) as u32)
    }
}

/// Counters of one thread's steps.
#[derive(Default, Clone, Copy, Debug)]
pub struct Stats {
    /// System calls made on vgpu's nodes (ioctl, mmap, munmap, close,
    /// open) and forks and execs of processes holding them.
    pub calls: u64,
    /// Of those, ioctls that returned an error or a non-zero RM status.
    pub refused: u64,
}

/// Raw fds of vgpu's nodes the threads of a worker share (opened without
/// close-on-exec, so forked and exec'd children inherit them).
pub type Fds = Mutex<Vec<i32>>;

/// What one thread holds.
///
/// It holds mappings (raw pointers inside nvclient's `Mapping`), which is
/// why it is not `Send` by itself; see the `Send` impl.
pub struct Thread<'a> {
    /// Its random stream.
    pub rng: Rng,
    /// Its tenant.
    pub tenant: Tenant,
    /// How many tenants the run has (for foreign handles).
    pub tenants: usize,
    /// The worker's shared blocks.
    pub scratch: &'static Scratch,
    /// The worker's shared fds.
    pub fds: &'a Fds,
    /// The run's handle board.
    pub board: &'a Board,
    /// Counters.
    pub stats: Stats,
    sessions: Vec<Session>,
    objects: Vec<(u32, u32, u32)>,
    memory: Vec<(usize, u32)>,
    maps: Vec<Mapping>,
    works: Vec<(usize, u32, WorkChannel)>,
    uvm: Vec<(usize, UvmContext)>,
    managed: Vec<(usize, ManagedRange)>,
    raw_maps: Vec<(usize, usize)>,
    children: Vec<i32>,
    profile: [(u64, u64); OPS],
}

/// Kinds of step.
const OPS: usize = 20;

// SAFETY: a `Thread` is moved to the one OS thread that steps it and used
// there alone; the mappings it holds are process-wide memory (any thread
// may touch or unmap them), and everything else in it is `Send`.
unsafe impl Send for Thread<'_> {}

/// Kernel escapes and their block layouts (offset of each struct in the
/// block, its fields), where the ABI files declare one.
fn layout(e: Escape, size: usize) -> &'static [(usize, &'static [WireField])] {
    match e {
        Escape::RmAllocMemory => &[(0, abi::Nvos02::FIELDS), (0, abi::Nvos02WithFd::FIELDS)],
        Escape::RmFree => &[(0, abi::Nvos00::FIELDS)],
        Escape::RmControl => &[(0, abi::Nvos54::FIELDS)],
        Escape::RmAlloc if size == abi::Nvos21::SIZE => &[(0, abi::Nvos21::FIELDS)],
        Escape::RmAlloc => &[(0, abi::Nvos64::FIELDS)],
        Escape::RmDupObject => &[(0, abi::Nvos55::FIELDS)],
        Escape::RmShare => &[(0, abi::Nvos57::FIELDS)],
        Escape::RmVidHeapControl => &[(0, abi::Nvos32::FIELDS), (40, abi::Nvos32AllocSize::FIELDS)],
        Escape::RmMapMemory => &[(0, abi::Nvos33::FIELDS), (0, abi::Nvos33WithFd::FIELDS)],
        Escape::RmUnmapMemory => &[(0, abi::Nvos34::FIELDS)],
        Escape::RegisterFd => &[(0, abi::RegisterFd::FIELDS)],
        Escape::AllocOsEvent | Escape::FreeOsEvent => &[(0, abi::OsEvent::FIELDS)],
        Escape::SysParams => &[(0, abi::SysParams::FIELDS)],
        Escape::WaitOpenComplete => &[(0, abi::WaitOpenComplete::FIELDS)],
        _ => &[],
    }
}

fn put(b: &mut [u8], at: usize, v: &[u8]) {
    if let Some(d) = b.get_mut(at..at + v.len()) {
        d.copy_from_slice(v);
    }
}

/// Writes `v` as a field of `size` bytes (1, 2, 4 or 8) at `at`.
fn put_field(b: &mut [u8], at: usize, size: usize, v: u64) {
    match size {
        1 => put(b, at, &[v as u8]),
        2 => put(b, at, &(v as u16).to_ne_bytes()),
        4 => put(b, at, &(v as u32).to_ne_bytes()),
        8 => put(b, at, &v.to_ne_bytes()),
        _ => {}
    }
}

impl<'a> Thread<'a> {
    /// A thread of `tenant` with stream `rng`.
    pub fn new(
        rng: Rng,
        tenant: Tenant,
        tenants: usize,
        scratch: &'static Scratch,
        fds: &'a Fds,
        board: &'a Board,
    ) -> Thread<'a> {
        Thread {
            rng,
            tenant,
            tenants,
            scratch,
            fds,
            board,
            stats: Stats::default(),
            sessions: Vec::new(),
            objects: Vec::new(),
            memory: Vec::new(),
            maps: Vec::new(),
            works: Vec::new(),
            uvm: Vec::new(),
            managed: Vec::new(),
            raw_maps: Vec::new(),
            children: Vec::new(),
            profile: [(0, 0); OPS],
        }
    }

    /// One step.
    pub fn step(&mut self) {
        let t0 = std::time::Instant::now();
        let op = if self.sessions.is_empty() || self.rng.chance(2) {
            0
        } else {
            match self.rng.below(100) {
                0..=7 => 1,
                8..=11 => 2,
                12..=14 => 3,
                15..=17 => 4,
                18..=20 => 5,
                21..=23 => 6,
                24..=26 => 7,
                27..=28 => 8,
                29..=33 => 9,
                34..=36 => 10,
                37 => 11,
                38 => 12,
                39 => 13,
                40..=41 => 14,
                42..=44 => 15,
                45..=69 => 16,
                70..=79 => 17,
                80..=86 => 18,
                _ => 19,
            }
        };
        match op {
            0 => self.open_session(),
            1 => self.alloc_memory(),
            2 => self.free(),
            3 => self.dup(),
            4 => self.map(),
            5 => self.drop_some(),
            6 => self.work(),
            7 => self.schedule(),
            8 => self.uvm_context(),
            9 => self.uvm_call(),
            10 => self.raw_mmap(),
            11 => self.close_fd(),
            12 => self.open_fd(),
            13 => self.fork_child(),
            14 => self.close_session(),
            15 => self.queries(),
            16 => self.raw_escape(),
            17 => self.raw_control(),
            18 => self.raw_alloc(),
            _ => self.raw_uvm(),
        }
        let p = &mut self.profile[op];
        p.0 += 1;
        p.1 += t0.elapsed().as_micros() as u64;
    }

    /// Per kind of step: how many ran and the microseconds they took.
    pub fn profile(&self) -> String {
        const NAMES: [&str; OPS] = [
            "session",
            "alloc",
            "free",
            "dup",
            "map",
            "unmap",
            "work",
            "schedule",
            "uvm_ctx",
            "uvm",
            "mmap",
            "close",
            "open",
            "fork",
            "close_session",
            "query",
            "escape",
            "control",
            "alloc_raw",
            "uvm_raw",
        ];
        NAMES
            .iter()
            .zip(self.profile.iter())
            .filter(|(_, p)| p.0 > 0)
            .map(|(n, p)| format!("{n} {}x{}us", p.0, p.1 / p.0))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Reaps the children the thread forked.
    pub fn reap(&mut self) {
        for pid in self.children.drain(..) {
            // SAFETY: our own child, reaped once.
            unsafe { libc::waitpid(pid, core::ptr::null_mut(), 0) };
        }
    }

    /// Ends the thread's work: reaps its children and lets everything it
    /// holds go (closing files frees what is under them).
    pub fn finish(&mut self) {
        self.reap();
        self.managed.clear();
        self.uvm.clear();
        self.works.clear();
        self.maps.clear();
        for (a, l) in self.raw_maps.drain(..) {
            // SAFETY: a mapping this thread made and recorded once.
            unsafe { libc::munmap(a as *mut libc::c_void, l) };
        }
        self.sessions.clear();
    }

    fn count<T, E>(&mut self, n: u64, r: &Result<T, E>) {
        self.stats.calls += n;
        if r.is_err() {
            self.stats.refused += 1;
        }
    }

    /// Whether client `c` is another tenant's (see [`Board`]).
    fn foreign(&self, c: u32) -> bool {
        // A client this thread made itself (a client class's raw RM_ALLOC
        // under a handle another tenant had, then freed) is its own.
        if self.objects.iter().any(|&(_, _, h)| h == c)
            || !self.board.foreign(self.tenant.index, self.tenants, c)
        {
            return false;
        }
        // The board keeps what tenants posted, and handles come again: vgpu
        // picks a client's handle at random among 2^20 (`src/rm/alloc.rs`),
        // so a handle another tenant posted and freed may be one of this
        // tenant's clients now (its post here overwritten since). Whose it
        // is, vgpu tells: the vGPUs of the file that verified it. A client
        // gone since the call cannot be told, and is not counted.
        super::check::client_vgpus(c).is_some_and(|vs| !vs.contains(&self.tenant.vgpu))
    }

    /// A (client, object) pair another tenant posted, if there is one.
    fn foreign_pair(&mut self) -> (u32, u32) {
        if self.tenants < 2 {
            return (0, 0);
        }
        let t = (self.tenant.index + 1 + self.rng.index(self.tenants - 1)) % self.tenants;
        self.board.get(&mut self.rng, t)
    }

    /// Fails the run if call `what` with client `c` succeeded and `c` is
    /// another tenant's.
    fn oracle<T>(&self, what: Breach, c: u32, o: u32, r: &Result<T, nvclient::Error>) {
        if r.is_ok() && self.foreign(c) {
            self.board
                .breached_by(self.tenant.index, what, c as u64, o as u64);
        }
    }

    fn session(&mut self) -> Option<usize> {
        if self.sessions.is_empty() {
            None
        } else {
            Some(self.rng.index(self.sessions.len()))
        }
    }

    /// The tenant's ctl and GPU node: vgpu's names, or NVIDIA's own (its
    /// opens of which are vgpu's, issue 33), half the time each.
    fn node(&mut self) -> (String, String) {
        if self.rng.chance(50) {
            (
                "/dev/nvidiactl".into(),
                format!("/dev/nvidia{}", self.tenant.gpu),
            )
        } else {
            (
                "/dev/vgpuctl".into(),
                format!("/dev/vgpu{}", self.tenant.vgpu),
            )
        }
    }

    fn open_session(&mut self) {
        let (c, g) = self.node();
        let r = Session::open_on(&c, &g, self.tenant.gpu);
        self.count(5, &r);
        if let Ok(s) = r {
            self.board
                .post(&mut self.rng, self.tenant.index, s.client, s.device);
            self.objects.push((s.client, s.client, s.device));
            self.objects.push((s.client, s.device, s.subdevice));
            self.sessions.push(s);
            if self.sessions.len() > 4 {
                self.close_session();
            }
        }
    }

    fn close_session(&mut self) {
        if let Some(i) = self.session() {
            self.works.retain(|w| w.0 != i);
            self.uvm.retain(|u| u.0 != i);
            self.managed.retain(|u| u.0 != i);
            self.memory.retain(|m| m.0 != i);
            for w in self.works.iter_mut().filter(|w| w.0 > i) {
                w.0 -= 1;
            }
            for u in self.uvm.iter_mut().filter(|u| u.0 > i) {
                u.0 -= 1;
            }
            for u in self.managed.iter_mut().filter(|u| u.0 > i) {
                u.0 -= 1;
            }
            for m in self.memory.iter_mut().filter(|m| m.0 > i) {
                m.0 -= 1;
            }
            self.sessions.remove(i);
            self.stats.calls += 2;
        }
    }

    /// A client handle: this thread's, a neighbour's, another tenant's,
    /// a stale or a random one.
    fn client(&mut self) -> u32 {
        match self.rng.below(10) {
            0..=5 => match self.session() {
                Some(i) => self.sessions[i].client,
                None => 0,
            },
            6 => self.board.get(&mut self.rng, self.tenant.index).0,
            7 => {
                let t = self.rng.index(self.tenants.max(1));
                self.board.get(&mut self.rng, t).0
            }
            8 => 0xc1e0_0000 | self.rng.below(64) as u32,
            _ => self.rng.edgy_u32(),
        }
    }

    /// An object handle, drawn as [`Thread::client`] draws clients.
    fn handle(&mut self) -> u32 {
        match self.rng.below(10) {
            0..=5 => match self.rng.pick(&self.objects) {
                Some(o) => o.2,
                None => 0,
            },
            6 => self.board.get(&mut self.rng, self.tenant.index).1,
            7 => {
                let t = self.rng.index(self.tenants.max(1));
                self.board.get(&mut self.rng, t).1
            }
            8 => 0xcaf0_0000 | self.rng.below(256) as u32,
            _ => self.rng.edgy_u32(),
        }
    }

    /// A VRAM size: small, at the ceiling, just over it, or anything.
    fn size(&mut self) -> u64 {
        let limit = self.tenant.limit;
        match self.rng.below(10) {
            0..=3 => (1 + self.rng.below(16)) << 16,
            4 => 2 << 20,
            5 => limit / 4,
            6 => limit,
            7 => limit + 1,
            8 => self.rng.below(2 * limit),
            _ => self.rng.edgy_u64(),
        }
    }

    fn alloc_memory(&mut self) {
        let Some(i) = self.session() else { return };
        let size = self.size();
        let (client, device) = if self.rng.chance(85) {
            (self.sessions[i].client, self.sessions[i].device)
        } else if self.rng.chance(50) {
            // Another tenant's client and device.
            self.foreign_pair()
        } else {
            (self.client(), self.handle())
        };
        let s = &self.sessions[i];
        let r = if self.rng.chance(80) {
            s.ctl.alloc_vram(client, device, 0, size).map(|m| m.handle)
        } else {
            s.ctl
                .alloc_sysmem(client, device, 0, size & 0xff_ffff)
                .map(|m| m.handle)
        };
        self.count(1, &r);
        self.oracle(Breach::AllocMemory, client, *r.as_ref().unwrap_or(&0), &r);
        if let Ok(h) = r {
            self.objects.push((client, device, h));
            self.memory.push((i, h));
            self.board.post(&mut self.rng, self.tenant.index, client, h);
        }
    }

    fn free(&mut self) {
        let Some(i) = self.session() else { return };
        let (c, p, h) = match self.rng.below(10) {
            0..=6 if !self.objects.is_empty() => {
                let k = self.rng.index(self.objects.len());
                self.objects.swap_remove(k)
            }
            7 => {
                let c = self.sessions[i].client;
                (c, 0, c)
            }
            8 => {
                // Another tenant's client, or an object of it.
                let (c, o) = self.foreign_pair();
                if self.rng.chance(50) {
                    (c, 0, c)
                } else {
                    (c, c, o)
                }
            }
            _ => (self.client(), self.handle(), self.handle()),
        };
        let r = self.sessions[i].ctl.free(c, p, h);
        self.count(1, &r);
        self.oracle(Breach::Free, c, h, &r);
    }

    fn dup(&mut self) {
        let Some(i) = self.session() else { return };
        let (src_c, src_o) = match self.rng.below(4) {
            0 => {
                let t = self.rng.index(self.tenants.max(1));
                self.board.get(&mut self.rng, t)
            }
            1 => self.board.get(&mut self.rng, self.tenant.index),
            _ => match self.rng.pick(&self.objects) {
                Some(&(c, _, h)) => (c, h),
                None => (0, 0),
            },
        };
        let s = &self.sessions[i];
        let (c, d) = (s.client, s.device);
        let r = s.ctl.dup_object(c, d, 0, src_c, src_o, 0);
        self.count(1, &r);
        self.oracle(Breach::Dup, src_c, src_o, &r);
        if let Ok(h) = r {
            self.objects.push((c, d, h));
            self.memory.push((i, h));
        }
    }

    fn map(&mut self) {
        let Some(&(i, h)) = self.rng.pick(&self.memory) else {
            return;
        };
        let Some(s) = self.sessions.get(i) else {
            return;
        };
        let len = match self.rng.below(4) {
            0 => 4096,
            1 => 64 << 10,
            2 => 2 << 20,
            _ => self.rng.edgy_u64() & 0xfff_ffff,
        };
        let g = format!("/dev/vgpu{}", self.tenant.vgpu);
        let node = if self.rng.chance(80) {
            g
        } else {
            "/dev/vgpuctl".into()
        };
        let r = s.ctl.map_memory(&node, s.client, s.device, h, 0, len, 0);
        self.count(4, &r);
        if let Ok(m) = r {
            // Touch it: a fault through vgpu's mapping.
            let _ = m.write_u32(0, 0x5eed);
            self.maps.push(m);
        }
    }

    fn drop_some(&mut self) {
        let n = self.maps.len();
        if n > 0 {
            let m = self.maps.swap_remove(self.rng.index(n));
            drop(m);
            self.stats.calls += 1;
        }
        let n = self.managed.len();
        if n > 0 && self.rng.chance(50) {
            self.managed.swap_remove(self.rng.index(n));
            self.stats.calls += 1;
        }
    }

    fn work(&mut self) {
        let Some(i) = self.session() else { return };
        let s = &self.sessions[i];
        let (c, d) = (s.client, s.device);
        let bare = self.rng.chance(30);
        let parent = if bare {
            Ok(d)
        } else {
            s.ctl.alloc_tsg(c, d, 0, nvclient::tsg_params(0))
        };
        self.count(1, &parent);
        let Ok(parent) = parent else { return };
        let s = &self.sessions[i];
        let r = s
            .ctl
            .alloc_work_channel(c, d, parent, class::AMPERE_CHANNEL_GPFIFO_A, 8);
        self.count(5, &r);
        if let Ok(w) = r {
            self.objects.push((c, d, parent));
            self.objects.push((c, parent, w.h_channel));
            self.works.push((i, if bare { 0 } else { parent }, w));
        }
    }

    fn schedule(&mut self) {
        let n = self.works.len();
        if n == 0 {
            return;
        }
        let k = self.rng.index(n);
        let (i, tsg, h_channel) = {
            let w = &self.works[k];
            (w.0, w.1, w.2.h_channel)
        };
        let Some(s) = self.sessions.get(i) else {
            return;
        };
        let c = s.client;
        let on = self.rng.chance(60);
        let r = match self.rng.below(5) {
            0 if tsg != 0 => s.ctl.set_timeslice(c, tsg, self.rng.below(5000)),
            1 if tsg != 0 => s.ctl.preempt(c, tsg, self.rng.chance(50), None),
            2 => {
                let w = &self.works[k].2;
                w.ring.fill(1000);
                Ok(())
            }
            _ if tsg != 0 => s.ctl.gpfifo_schedule(c, tsg, on),
            _ => s.ctl.channel_gpfifo_schedule(c, h_channel, on),
        };
        self.count(1, &r);
    }

    fn uvm_context(&mut self) {
        let Some(i) = self.session() else { return };
        if self.uvm.len() >= 2 {
            let k = self.rng.index(self.uvm.len());
            self.uvm.remove(k);
            self.stats.calls += 2;
            return;
        }
        let s = &self.sessions[i];
        let r = UvmContext::open("/dev/vgpu-uvm", &s.ctl, s.client, s.device, s.subdevice);
        self.count(8, &r);
        if let Ok(u) = r {
            self.uvm.push((i, u));
        }
    }

    fn uvm_call(&mut self) {
        let n = self.uvm.len();
        if n == 0 {
            return;
        }
        let k = self.rng.index(n);
        let i = self.uvm[k].0;
        let pick = self.rng.below(8);
        let mem = self.memory.iter().find(|m| m.0 == i).map(|m| m.1);
        let range = self
            .managed
            .iter()
            .filter(|m| m.0 == i)
            .map(|m| (m.1.addr(), m.1.len() as u64))
            .next();
        let client = self.sessions.get(i).map_or(0, |s| s.client);
        let edgy = self.rng.edgy_u64();
        let u = &self.uvm[k].1;
        let dest = if self.rng.chance(50) {
            u.uuid
        } else {
            CPU_UUID
        };
        let r = match (pick, range) {
            (0, _) => {
                let len = ((1 + self.rng.below(2)) << 21) as usize;
                match u.uvm.map_managed(len) {
                    Ok(m) => {
                        self.managed.push((i, m));
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            }
            (1 | 2, Some((a, l))) => u.uvm.migrate(a, l, &dest),
            (3, Some((a, l))) => u.uvm.set_preferred_location(a, l, &dest),
            (4, _) => {
                let base = 0x7f00_0000_0000 + (self.rng.below(64) << 21);
                let r = u.uvm.create_external_range(base, 2 << 20);
                match (r, mem) {
                    (Ok(()), Some(h)) => {
                        u.uvm
                            .map_external_allocation(base, 2 << 20, 0, &[u.uuid], client, h)
                    }
                    (r, _) => r,
                }
            }
            (5, _) => {
                let base = 0x7e00_0000_0000 + (self.rng.below(64) << 16);
                u.uvm
                    .map_dynamic_parallelism_region(base, 64 << 10, &u.uuid)
            }
            (6, Some((a, l))) => u.uvm.free(a, l),
            _ => u.uvm.free(edgy & !0xfff, 2 << 20),
        };
        self.count(1, &r);
    }

    fn raw_mmap(&mut self) {
        if !self.raw_maps.is_empty() && self.rng.chance(50) {
            let (a, l) = self
                .raw_maps
                .swap_remove(self.rng.index(self.raw_maps.len()));
            // SAFETY: a mapping this thread made and recorded once.
            unsafe { libc::munmap(a as *mut libc::c_void, l) };
            self.stats.calls += 1;
            return;
        }
        let fd = self.any_fd();
        let len = [4096usize, 8192, 64 << 10, 2 << 20][self.rng.index(4)];
        let off = match self.rng.below(3) {
            0 => 0,
            1 => (self.rng.below(1 << 20) << 12) as i64,
            _ => (self.rng.edgy_u64() & !0xfff & 0x7fff_ffff_ffff) as i64,
        };
        let prot = [libc::PROT_READ, libc::PROT_READ | libc::PROT_WRITE][self.rng.index(2)];
        let flags = [libc::MAP_SHARED, libc::MAP_PRIVATE][self.rng.index(2)];
        // SAFETY: a new mapping wherever the kernel puts it; nothing of
        // ours is replaced.
        let p = unsafe { libc::mmap(core::ptr::null_mut(), len, prot, flags, fd, off) };
        self.stats.calls += 1;
        if p == libc::MAP_FAILED {
            self.stats.refused += 1;
        } else {
            self.raw_maps.push((p as usize, len));
        }
    }

    /// An fd of the shared set, a session's, or garbage.
    fn any_fd(&mut self) -> i32 {
        match self.rng.below(6) {
            0..=2 => {
                let fds = self.fds.lock().map(|f| f.clone()).unwrap_or_default();
                self.rng.pick(&fds).copied().unwrap_or(-1)
            }
            3 | 4 => match self.session() {
                Some(i) => self.sessions[i].ctl.node().fd(),
                None => -1,
            },
            _ => self.rng.below(64) as i32 - 1,
        }
    }

    fn open_fd(&mut self) {
        let (c, g) = self.node();
        let path = match self.rng.below(3) {
            0 => c,
            1 => g,
            _ => "/dev/vgpu-uvm".into(),
        };
        let Ok(p) = std::ffi::CString::new(path) else {
            return;
        };
        // SAFETY: a valid path; the fd is recorded and closed once.
        let fd = unsafe { libc::open(p.as_ptr(), libc::O_RDWR) };
        self.stats.calls += 1;
        if fd >= 0 {
            if let Ok(mut f) = self.fds.lock() {
                f.push(fd);
                if f.len() > 8 {
                    let old = f.remove(0);
                    // SAFETY: an fd of the shared set, removed from it first.
                    unsafe { libc::close(old) };
                }
            }
        }
    }

    fn close_fd(&mut self) {
        let fd = match self.fds.lock() {
            Ok(mut f) if !f.is_empty() => {
                let k = self.rng.index(f.len());
                f.swap_remove(k)
            }
            _ => return,
        };
        // SAFETY: an fd of the shared set, removed from it first, so closed
        // once (other threads may still name its number: they get EBADF or
        // whatever took the number, never our memory).
        unsafe { libc::close(fd) };
        self.stats.calls += 1;
    }

    /// Forks a child that makes a few raw calls on the files it inherited
    /// and exits, or execs this program to make them from a new image.
    fn fork_child(&mut self) {
        if self.children.len() >= 4 {
            if let Some(pid) = self.children.pop() {
                // SAFETY: our own child, reaped once.
                unsafe { libc::waitpid(pid, core::ptr::null_mut(), 0) };
            }
        }
        let fd = self.any_fd();
        let exec = self.rng.chance(10);
        let mut card = [0u8; 72 * 2];
        let req = nvclient::request(Escape::CardInfo.nr(), card.len());
        let prog = std::ffi::CString::new("/proc/self/exe").unwrap_or_default();
        let a0 = std::ffi::CString::new("vgpu-selftest").unwrap_or_default();
        let a1 = std::ffi::CString::new("fuzz-exec").unwrap_or_default();
        let a2 = std::ffi::CString::new(fd.to_string()).unwrap_or_default();
        let argv = [a0.as_ptr(), a1.as_ptr(), a2.as_ptr(), core::ptr::null()];
        let envp = [core::ptr::null()];
        // SAFETY: the child makes only async-signal-safe calls (ioctl,
        // execve, _exit) on memory prepared before the fork.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: as above.
            unsafe {
                libc::ioctl(fd, req as _, card.as_mut_ptr());
                if exec {
                    libc::execve(prog.as_ptr(), argv.as_ptr(), envp.as_ptr());
                }
                libc::_exit(0);
            }
        }
        self.stats.calls += 2 + u64::from(exec);
        if pid > 0 {
            self.children.push(pid);
        }
    }

    /// Queries whose answers are checked to be the tenant's own: sizes at
    /// most its ceiling, PIDs of its own cgroup.
    fn queries(&mut self) {
        let Some(i) = self.session() else { return };
        let s = &self.sessions[i];
        let (me, limit, cg) = (self.tenant.index, self.tenant.limit, self.tenant.cgroup);
        let r = match self.rng.below(5) {
            0 => s
                .ctl
                .fb_get_info_v2(
                    s.client,
                    s.subdevice,
                    &[abi::fb_info::HEAP_FREE, abi::fb_info::RAM_SIZE],
                )
                .map(|e| {
                    for x in e {
                        if u64::from(x.data) * 1024 > limit {
                            self.board.breached_by(
                                me,
                                Breach::FbInfo,
                                x.index.into(),
                                x.data.into(),
                            );
                        }
                    }
                }),
            1 => s.ctl.card_info(4).map(|_| ()),
            2 => s.ctl.vid_heap_info(s.client, s.device).map(|h| {
                if h.free > limit {
                    self.board
                        .breached_by(me, Breach::HeapInfo, h.free, h.total);
                }
            }),
            3 => s
                .ctl
                .get_pids(s.client, s.subdevice, class::NV20_SUBDEVICE_0)
                .map(|pids| {
                    for p in pids {
                        if let Ok(c) = std::fs::read_to_string(format!("/proc/{p}/cgroup")) {
                            if !c.trim_end().ends_with(cg) {
                                self.board.breached_by(me, Breach::Pids, p.into(), 0);
                            }
                        }
                    }
                }),
            _ => std::fs::read_to_string(format!(
                "/sys/class/vgpu/vgpu{}/memory_used",
                self.tenant.vgpu
            ))
            .map(|_| ())
            .map_err(|_| nvclient::Error::Invalid("sysfs")),
        };
        self.count(1, &r);
    }

    /// A size by `rule`: right (mostly), or just off, or far off.
    fn size_by(&mut self, rule: SizeRule) -> usize {
        let right = match rule {
            SizeRule::Exact(n) => n,
            SizeRule::OneOf(a, b) => {
                if self.rng.chance(50) {
                    a
                } else {
                    b
                }
            }
            SizeRule::Records(n) => n * (1 + self.rng.index(4)),
            SizeRule::Any => self.rng.index(256),
        };
        match self.rng.below(10) {
            0..=6 => right,
            7 => right.saturating_sub(1 + self.rng.index(8)),
            8 => right + 1 + self.rng.index(8),
            _ => self.rng.index(nvclient::ioctl::IOC_SIZE_MAX + 1),
        }
    }

    fn place(&mut self) -> Place {
        if self.rng.chance(75) {
            Place::Valid
        } else {
            PLACES[self.rng.index(PLACES.len())]
        }
    }

    /// A params block of `len` bytes for a control or class, filled with
    /// zeros, noise, or handles at word boundaries; its address by
    /// [`Thread::place`].
    fn params(&mut self, len: usize) -> u64 {
        let len = len.min(super::mem::AREA / super::mem::SLOTS);
        let mut b = vec![0u8; len];
        match self.rng.below(3) {
            0 => {}
            1 => b.iter_mut().for_each(|x| *x = self.rng.next() as u8),
            _ => {
                for at in (0..len.saturating_sub(3)).step_by(4) {
                    let v = match self.rng.below(4) {
                        0 => self.client(),
                        1 => self.handle(),
                        2 => self.rng.edgy_u32(),
                        _ => 0,
                    };
                    put(&mut b, at, &v.to_ne_bytes());
                }
            }
        }
        let place = self.place();
        self.scratch.place(&mut self.rng, place, &b) as u64
    }

    /// Fills `b` field by field.
    fn fill(&mut self, b: &mut [u8], base: usize, fields: &[WireField], params: usize) {
        for f in fields {
            let at = base + f.offset;
            let n = f.name;
            let v: u64 = if n == "status" || n == "rm_status" {
                self.rng.next()
            } else if n.contains("client") || n == "h_root" {
                self.client() as u64
            } else if n == "h_class" {
                let rows = nvclient::speaks().classes;
                match self.rng.pick(rows) {
                    Some(r) if self.rng.chance(85) => r.class as u64,
                    _ => self.rng.edgy_u32() as u64,
                }
            } else if n.starts_with("h_") {
                self.handle() as u64
            } else if n == "fd" || n == "ctl_fd" {
                self.any_fd() as u32 as u64
            } else if f.size == 8 && (n.starts_with("p_") || n == "params") {
                if n == "p_rights_requested" && self.rng.chance(80) {
                    0
                } else {
                    self.params(params)
                }
            } else if n == "params_size" {
                match self.rng.below(10) {
                    0..=6 => params as u64,
                    7 => params.saturating_sub(1) as u64,
                    8 => params as u64 + 1 + self.rng.below(4096),
                    _ => self.rng.edgy_u32() as u64,
                }
            } else if f.size == 8 {
                self.rng.edgy_u64()
            } else {
                self.rng.edgy_u32() as u64
            };
            put_field(b, at, f.size, v);
        }
    }

    /// Issues `req` with `block` placed by [`Thread::place`] on `fd`.
    fn issue(&mut self, fd: i32, req: u32, block: &[u8]) {
        let place = self.place();
        self.issue_at(fd, req, block, place);
    }

    /// Issues `req` with `block` at `place` on `fd`.
    fn issue_at(&mut self, fd: i32, req: u32, block: &[u8], place: Place) {
        let at = self.scratch.place(&mut self.rng, place, block);
        // SAFETY: `at` is one of the fuzzer's places: memory of this
        // process or a bad address the kernel must refuse; nothing of ours
        // depends on what the call writes there.
        let r = unsafe { libc::ioctl(fd, req as _, at) };
        self.stats.calls += 1;
        if r < 0 {
            self.stats.refused += 1;
        }
    }

    /// The row of `family` (of `rows` rows) a raw call uses: `Some((k,
    /// sweep))` for row `k`, `None` for a number the table does not have
    /// (`other` percent of the random draws). A sweep draw (`sweep`
    /// true) is one of the families' shared walks over their tables
    /// ([`Board::sweep`]): its call must reach vgpu's dispatch (the block
    /// at a valid address, the row's own size), so that every row of the
    /// table is shown reached in a run of 10^4 calls; a uniform draw alone
    /// left a few of 145 controls undrawn or refused before the lookup.
    fn row(&mut self, family: Family, rows: usize, other: u64) -> Option<(usize, bool)> {
        if rows == 0 {
            return None;
        }
        if self.board.sweeping(family, rows) || self.rng.chance(25) {
            let k = self.board.sweep(family, rows);
            self.board.covered(family, k);
            return Some((k, true));
        }
        let k = self.rng.index(rows);
        if self.rng.chance(other) {
            return None;
        }
        self.board.covered(family, k);
        Some((k, false))
    }

    fn raw_escape(&mut self) {
        let rows = nvclient::speaks().escapes;
        let k = self.rng.index(rows.len());
        let (nr, rule, esc) = match rows.get(k) {
            Some(r) if self.rng.chance(92) => {
                self.board.covered(Family::Escape, k);
                (r.nr, r.size, Some(r.escape))
            }
            _ => (self.rng.next() as u8, SizeRule::Any, None),
        };
        let size = self.size_by(rule);
        let mut b = vec![0u8; size];
        match esc {
            Some(e) => {
                for &(base, fields) in layout(e, size) {
                    let params = match e {
                        Escape::RmControl => self.control_size(),
                        _ => 64 + self.rng.index(256),
                    };
                    self.fill(&mut b, base, fields, params);
                }
                if e == Escape::IoctlXferCmd {
                    let inner = self.rng.pick(rows).map_or(0, |r| r.nr);
                    let len = 4096 + self.rng.index(8192);
                    let p = self.params(len);
                    put(&mut b, 0, &(inner as u32).to_ne_bytes());
                    put(&mut b, 4, &(len as u32).to_ne_bytes());
                    put(&mut b, 8, &p.to_ne_bytes());
                }
                if layout(e, size).is_empty() && e != Escape::IoctlXferCmd && self.rng.chance(50) {
                    b.iter_mut().for_each(|x| *x = self.rng.next() as u8);
                }
            }
            None => b.iter_mut().for_each(|x| *x = self.rng.next() as u8),
        }
        let fd = self.any_fd();
        self.issue(fd, nvclient::request(nr, size), &b);
    }

    fn control_size(&mut self) -> usize {
        self.rng.index(2048)
    }

    fn raw_control(&mut self) {
        let Some(i) = self.session() else { return };
        let rows = nvclient::speaks().controls;
        let drawn = self.row(Family::Control, rows.len(), 10);
        let sweep = drawn.is_some_and(|d| d.1);
        let (cmd, size) = match drawn.and_then(|(k, _)| rows.get(k)) {
            Some(r) => (r.cmd, r.params_size as usize),
            None => (self.rng.next() as u32, self.rng.index(1024)),
        };
        let s = &self.sessions[i];
        let (c, sub, dev) = (s.client, s.subdevice, s.device);
        let obj = match self.rng.below(5) {
            0 | 1 => sub,
            2 => dev,
            3 => c,
            _ => self.handle(),
        };
        let psize = match self.rng.below(10) {
            0..=7 => size,
            8 => size.saturating_sub(1),
            _ => size + 1,
        };
        let params = self.params(psize.max(1));
        let client = if self.rng.chance(90) {
            c
        } else {
            self.client()
        };
        let blk = abi::Nvos54 {
            h_client: client,
            h_object: obj,
            cmd,
            flags: 0,
            params,
            params_size: psize as u32,
            status: 0,
        };
        let mut b = vec![0u8; abi::Nvos54::SIZE];
        abi::Wire::encode(&blk, &mut b);
        let fd = self.sessions[i].ctl.node().fd();
        let req = nvclient::request(Escape::RmControl.nr(), b.len());
        if sweep {
            self.issue_at(fd, req, &b, Place::Valid);
        } else {
            self.issue(fd, req, &b);
        }
    }

    fn raw_alloc(&mut self) {
        let Some(i) = self.session() else { return };
        let rows = nvclient::speaks().classes;
        let drawn = self.row(Family::Class, rows.len(), 10);
        let sweep = drawn.is_some_and(|d| d.1);
        let (cls, size) = match drawn.and_then(|(k, _)| rows.get(k)) {
            Some(r) => (r.class, r.params_size as usize),
            None => (self.rng.next() as u32, self.rng.index(512)),
        };
        let s = &self.sessions[i];
        let (c, dev, sub) = (s.client, s.device, s.subdevice);
        let parent = match self.rng.below(4) {
            0 | 1 => dev,
            2 => sub,
            _ => self.handle(),
        };
        let params = if size == 0 && self.rng.chance(70) {
            0
        } else {
            self.params(size.max(1))
        };
        let client = if self.rng.chance(90) {
            c
        } else {
            self.client()
        };
        let blk = abi::Nvos64 {
            h_root: client,
            h_object_parent: parent,
            h_object_new: 0,
            h_class: cls,
            p_alloc_parms: params,
            p_rights_requested: 0,
            params_size: size as u32,
            flags: 0,
            status: 0,
        };
        let mut b = vec![0u8; abi::Nvos64::SIZE];
        abi::Wire::encode(&blk, &mut b);
        let fd = self.sessions[i].ctl.node().fd();
        let place = if sweep { Place::Valid } else { self.place() };
        let at = self.scratch.place(&mut self.rng, place, &b);
        let req = nvclient::request(Escape::RmAlloc.nr(), b.len());
        // SAFETY: as in `issue`.
        let r = unsafe { libc::ioctl(fd, req as _, at) };
        self.stats.calls += 1;
        if r < 0 || place != Place::Valid {
            self.stats.refused += u64::from(r < 0);
            return;
        }
        let mut out = [0u8; abi::Nvos64::SIZE];
        // SAFETY: a valid slot of the read-write area, read racily (another
        // thread may have written it since: then the handle is noise).
        unsafe { core::ptr::copy_nonoverlapping(at as *const u8, out.as_mut_ptr(), out.len()) };
        let a = <abi::Nvos64 as abi::Wire>::decode(&out);
        // (The slot is shared: only a block still naming our client and
        // class is ours.) A client class is no allocation under `client`:
        // RM takes its requested handle from hRoot and refuses one that
        // exists (`NV_ERR_INSERT_DUPLICATE_NAME`, `rs_server.c:2508-2512` at
        // 550.163.01), so a success made a new client of the caller's under
        // a handle its old owner had freed.
        let makes_client = matches!(
            cls,
            class::NV01_ROOT | class::NV01_ROOT_NON_PRIV | class::NV01_ROOT_CLIENT
        );
        if a.status == 0
            && a.h_object_new != 0
            && a.h_root == client
            && a.h_class == cls
            && !makes_client
            && self.foreign(client)
        {
            self.board.breached_by(
                self.tenant.index,
                Breach::Alloc,
                client as u64,
                a.h_object_new as u64,
            );
        }
        if a.status == 0 && a.h_object_new != 0 && makes_client && a.h_class == cls {
            // Ours now, for this tenant's other threads too.
            self.board
                .post(&mut self.rng, self.tenant.index, a.h_object_new, 0);
        }
        if a.status == 0 && a.h_object_new != 0 {
            self.objects.push((client, parent, a.h_object_new));
            if cls == class::NV01_MEMORY_LOCAL_USER {
                self.memory.push((i, a.h_object_new));
            }
        }
    }

    fn raw_uvm(&mut self) {
        let rows = nvclient::speaks().uvm;
        let k = self.rng.index(rows.len());
        let Some(row) = rows.get(k).copied() else {
            return;
        };
        let (num, size) = if self.rng.chance(92) {
            self.board.covered(Family::Uvm, k);
            (row.number, row.size)
        } else {
            (self.rng.below(128) as u32, self.rng.index(256))
        };
        let size = match self.rng.below(10) {
            0..=7 => size,
            8 => size.saturating_sub(1 + self.rng.index(8)),
            _ => size + 1 + self.rng.index(64),
        };
        let mut b = vec![0u8; size];
        let range = self
            .rng
            .pick(&self.managed)
            .map(|m| (m.1.addr(), m.1.len() as u64));
        let uuid = match self.rng.below(4) {
            0 => CPU_UUID,
            1 => crate::uvmdouble::double_uuid(self.rng.below(2) as u32),
            2 => crate::uvmdouble::double_uuid(self.tenant.gpu),
            _ => {
                let mut u = [0u8; 16];
                u.iter_mut().for_each(|x| *x = self.rng.next() as u8);
                u
            }
        };
        if let Some(fields) = row.fields {
            for f in fields {
                let n = f.name;
                let v: u64 = if n.contains("uuid") {
                    put(&mut b, f.offset, &uuid);
                    continue;
                } else if n == "base" || n == "requested_base" {
                    match range {
                        Some((a, _)) if self.rng.chance(70) => a,
                        _ => self.rng.edgy_u64(),
                    }
                } else if n == "length" {
                    match range {
                        Some((_, l)) if self.rng.chance(70) => l,
                        _ => self.rng.edgy_u64(),
                    }
                } else if n.contains("client") {
                    self.client() as u64
                } else if n.starts_with("h_") {
                    self.handle() as u64
                } else if n.contains("fd") {
                    self.any_fd() as u32 as u64
                } else if f.size == 8 {
                    self.rng.edgy_u64()
                } else {
                    self.rng.edgy_u32() as u64
                };
                put_field(&mut b, f.offset, f.size, v);
            }
        } else {
            b.iter_mut().for_each(|x| *x = self.rng.next() as u8);
        }
        let fd = match self.rng.below(3) {
            0 | 1 => match self.rng.pick(&self.uvm) {
                Some(u) => u.1.uvm.fd(),
                None => self.any_fd(),
            },
            _ => self.any_fd(),
        };
        self.issue(fd, num, &b);
    }
}

/// `fuzz-exec FD`: what an exec'd child runs: one CARD_INFO on the
/// inherited fd, then exit.
pub fn exec_child(args: &[String]) -> i32 {
    let fd: i32 = args.first().and_then(|a| a.parse().ok()).unwrap_or(-1);
    let mut card = [0u8; 72 * 2];
    let req = nvclient::request(Escape::CardInfo.nr(), card.len());
    // SAFETY: a buffer of the request's size.
    unsafe { libc::ioctl(fd, req as _, card.as_mut_ptr()) };
    0
}
