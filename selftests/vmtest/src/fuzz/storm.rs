// SPDX-License-Identifier: GPL-2.0

//! Kill storms: processes of the tenants loop on one kind of call each
//! (allocation, mapping, UVM migration, a DUP of another process's memory,
//! an enable that waits for a compute window that never comes, or random
//! fuzzing) and are SIGKILLed at random points of it, a batch at a time;
//! after each batch everything they held must have come back.

use super::check;
use super::mem::Scratch;
use super::ops::{Board, Fds, Tenant, Thread};
use super::rng::Rng;
use crate::session::Session;
use crate::sys::{errno, join_cgroup, Shared};
use nvclient::abi::class;
use nvclient::abi::status::NV_ERR_NO_MEMORY;
use nvclient::uvm::{UvmContext, CPU_UUID};
use std::time::{Duration, Instant};

/// What a victim loops on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Alloc,
    Map,
    Migrate,
    DupSource,
    Dup,
    Window,
    Fuzz,
}

const KINDS: [Kind; 6] = [
    Kind::Alloc,
    Kind::Map,
    Kind::Migrate,
    Kind::Dup,
    Kind::Window,
    Kind::Fuzz,
];

/// Victims per batch (a DUP victim brings its source along).
const BATCH: usize = 4;

/// Slots on the batch's page: victim `i` sets `READY + i` once it loops
/// (1), fails its set-up (2) or is refused at its vGPU's ceiling while
/// the batch holds that (3), and counts its turns in `TURNS + i`; a DUP
/// source posts its client and memory at `SRC + 2 * i`.
const READY: usize = 0;
const TURNS: usize = 64;
const SRC: usize = 128;

/// What the storms did.
#[derive(Default, Debug, Clone, Copy)]
pub struct StormTotals {
    /// Processes killed.
    pub kills: u64,
    /// Of them, killed after at least one turn of their loop.
    pub mid_loop: u64,
    /// Settled checks passed.
    pub checks: u64,
    /// Victims whose set-up was refused at their vGPU's ceiling, held by
    /// victims of their own batch (a fuzzing one, which frees at random).
    pub at_ceiling: u64,
}

/// The most VRAM a victim's set-up asks at once (a DUP source's 4 MiB;
/// a UVM context's VA space is 12 KiB).
const SETUP_MAX: u64 = 4 << 20;

/// Kills `kills` processes of `tenants`; `window` is a tenant whose vGPU
/// has share 0 (its enables wait for ever).
pub fn storms(
    seed: u64,
    tenants: &[Tenant],
    window: Tenant,
    kills: u64,
) -> Result<StormTotals, String> {
    let board = Board::new()?;
    let mut all: Vec<Tenant> = tenants.to_vec();
    all.push(window);
    let mut t = StormTotals::default();
    let mut batch = 0u64;
    while t.kills < kills {
        let mut rng = Rng::derive(seed, 1 << 32 | batch);
        one_batch(&mut rng, tenants, window, &all, &board, &mut t)
            .map_err(|e| format!("seed {seed} kill batch {batch}: {e}"))?;
        check::settled(&all).map_err(|e| format!("seed {seed} after kill batch {batch}: {e}"))?;
        t.checks += 1;
        batch += 1;
    }
    Ok(t)
}

fn one_batch(
    rng: &mut Rng,
    tenants: &[Tenant],
    window: Tenant,
    all: &[Tenant],
    board: &Board,
    t: &mut StormTotals,
) -> Result<(), String> {
    let page = Shared::new()?;
    let mut victims: Vec<(i32, usize)> = Vec::new();
    let mut i = 0;
    while i < BATCH {
        let kind = KINDS[rng.index(KINDS.len())];
        let tenant = if kind == Kind::Window {
            window
        } else {
            tenants[rng.index(tenants.len())]
        };
        let n = all.len();
        let mut go = |kind, i, src| -> Result<(), String> {
            let v = Victim {
                kind,
                i,
                src,
                tenant,
                tenants: n,
                seed: rng.next(),
            };
            victims.push((spawn(v, &page, board)?, i));
            Ok(())
        };
        if kind == Kind::Dup {
            // Its source first, in the same container.
            go(Kind::DupSource, i, i)?;
            go(Kind::Dup, i + 1, i)?;
            i += 2;
        } else {
            go(kind, i, i)?;
            i += 1;
        }
    }
    // Every victim in its loop (or failed to get there: then it exits).
    let t0 = Instant::now();
    while victims.iter().any(|&(_, i)| page.get(READY + i) == 0) {
        if t0.elapsed() > Duration::from_secs(60) {
            for &(p, _) in &victims {
                // SAFETY: our children.
                unsafe { libc::kill(p, libc::SIGKILL) };
            }
            reap(&victims);
            return Err("victims did not start in 60 s".into());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    // Then a random order, a random pause before each kill.
    let mut order = victims.clone();
    for k in (1..order.len()).rev() {
        order.swap(k, rng.index(k + 1));
    }
    let mut failed = Vec::new();
    for &(p, i) in &order {
        std::thread::sleep(Duration::from_micros(rng.below(3000)));
        match page.get(READY + i) {
            2 => failed.push(i),
            3 => t.at_ceiling += 1,
            _ => {}
        }
        // SAFETY: our child.
        unsafe { libc::kill(p, libc::SIGKILL) };
        t.kills += 1;
        t.mid_loop += u64::from(page.get(TURNS + i) > 0);
    }
    reap(&victims);
    if !failed.is_empty() {
        return Err(format!("victims {failed:?} could not set up"));
    }
    Ok(())
}

fn reap(victims: &[(i32, usize)]) {
    for &(p, _) in victims {
        // SAFETY: our child, reaped once.
        unsafe { libc::waitpid(p, core::ptr::null_mut(), 0) };
    }
}

/// One victim: what it loops on, its slot `i` on the batch's page, the
/// slot of its DUP source (`src`), its tenant, how many tenants the run
/// has, and its random stream's seed.
#[derive(Clone, Copy)]
struct Victim {
    kind: Kind,
    i: usize,
    src: usize,
    tenant: Tenant,
    tenants: usize,
    seed: u64,
}

/// Forks a victim; a DUP victim finds its source's handles at
/// `SRC + 2 * src`.
fn spawn(v: Victim, page: &Shared, board: &Board) -> Result<i32, String> {
    // SAFETY: the test program is single-threaded here; the child runs
    // the victim and never returns.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(format!("fork: errno {}", errno()));
    }
    if pid == 0 {
        let mut state = 2;
        if let Err(e) = victim(v, page, board) {
            // Refused at the ceiling (its retries spent) while its vGPU is
            // that full: the ceiling at work, not a failure. The settled
            // check after the batch still finds any charge left behind.
            let refused = format!("{:?}", nvclient::Error::Rm(NV_ERR_NO_MEMORY));
            if e.ends_with(&refused) && ceiling_held(v.tenant) {
                state = 3;
            }
            println!(
                "#   kill storm: {:?} victim could not set up: {e}{}",
                v.kind,
                if state == 3 {
                    " (its vGPU at its ceiling)"
                } else {
                    ""
                }
            );
        }
        page.set(READY + v.i, state);
        // SAFETY: leaving the child.
        unsafe { libc::_exit(1) };
    }
    Ok(pid)
}

/// Whether `t`'s vGPU has less than [`SETUP_MAX`] left under its
/// ceiling now.
fn ceiling_held(t: Tenant) -> bool {
    check::attr(t.vgpu, "memory_used").is_ok_and(|used| used + SETUP_MAX > t.limit)
}

/// Tries `f` until it succeeds, for up to 5 s: a victim's set-up can meet
/// its vGPU's ceiling while a fuzzing victim of its batch holds memory.
fn retry<T>(mut f: impl FnMut() -> nvclient::Result<T>) -> nvclient::Result<T> {
    let t0 = Instant::now();
    loop {
        match f() {
            Err(_) if t0.elapsed() < Duration::from_secs(5) => {
                std::thread::sleep(Duration::from_millis(2))
            }
            r => return r,
        }
    }
}

/// The victim's set-up, then its loop (it never returns on success).
fn victim(v: Victim, page: &Shared, board: &Board) -> Result<(), String> {
    let Victim {
        kind,
        i,
        src,
        tenant,
        tenants,
        seed,
    } = v;
    join_cgroup(tenant.cgroup).map_err(|e| format!("join: errno {e}"))?;
    let e = |what: &'static str| move |err: nvclient::Error| format!("{what}: {err:?}");
    let node = format!("/dev/vgpu{}", tenant.vgpu);
    let mut rng = Rng::new(seed);
    let turn = |page: &Shared| page.set(TURNS + i, page.get(TURNS + i) + 1);
    if kind == Kind::Fuzz {
        let scratch = Scratch::new()?;
        let fds = Fds::default();
        let mut th = Thread::new(rng, tenant, tenants, scratch, &fds, board);
        page.set(READY + i, 1);
        loop {
            th.step();
            turn(page);
        }
    }
    let s = Session::open_on("/dev/vgpuctl", &node, tenant.gpu)?;
    let (c, d) = (s.client, s.device);
    match kind {
        Kind::Alloc => {
            page.set(READY + i, 1);
            loop {
                let size = (1 + rng.below(8)) << 20;
                if let Ok(m) = s.ctl.alloc_vram(c, d, 0, size) {
                    let _ = s.ctl.free(c, d, m.handle);
                }
                turn(page);
            }
        }
        Kind::Map => {
            let m = retry(|| s.ctl.alloc_vram(c, d, 0, 2 << 20)).map_err(e("vram"))?;
            page.set(READY + i, 1);
            loop {
                if let Ok(map) = s.ctl.map_memory(&node, c, d, m.handle, 0, 2 << 20, 0) {
                    let _ = map.write_u32(0, 1);
                    drop(map);
                }
                turn(page);
            }
        }
        Kind::Migrate => {
            // Its VA space is charged (12 KiB) like any allocation: retried
            // while the tenant's earlier victims still hold its ceiling.
            let u = retry(|| UvmContext::open("/dev/vgpu-uvm", &s.ctl, c, d, s.subdevice))
                .map_err(e("uvm"))?;
            let r = retry(|| u.uvm.map_managed(4 << 20)).map_err(e("managed"))?;
            page.set(READY + i, 1);
            loop {
                let _ = u.uvm.migrate(r.addr(), r.len() as u64, &u.uuid);
                let _ = u.uvm.migrate(r.addr(), r.len() as u64, &CPU_UUID);
                turn(page);
            }
        }
        Kind::DupSource => {
            let m = retry(|| s.ctl.alloc_vram(c, d, 0, 4 << 20)).map_err(e("vram"))?;
            page.set(SRC + 2 * src, c as u64);
            page.set(SRC + 2 * src + 1, m.handle as u64);
            page.set(READY + i, 1);
            loop {
                // Hold it (and allocate a little more now and then).
                if let Ok(m) = s.ctl.alloc_vram(c, d, 0, 1 << 20) {
                    let _ = s.ctl.free(c, d, m.handle);
                }
                turn(page);
            }
        }
        Kind::Dup => {
            let t0 = Instant::now();
            while page.get(SRC + 2 * src + 1) == 0 {
                if page.get(READY + src) == 2 || t0.elapsed() > Duration::from_secs(30) {
                    return Err("no DUP source".into());
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            let (sc, sm) = (
                page.get(SRC + 2 * src) as u32,
                page.get(SRC + 2 * src + 1) as u32,
            );
            page.set(READY + i, 1);
            loop {
                if let Ok(h) = s.ctl.dup_object(c, d, 0, sc, sm, 0) {
                    let _ = s.ctl.free(c, d, h);
                }
                turn(page);
            }
        }
        Kind::Window => {
            let tsg = s
                .ctl
                .alloc_tsg(c, d, 0, nvclient::tsg_params(0))
                .map_err(e("tsg"))?;
            page.set(READY + i, 1);
            loop {
                turn(page);
                // Each waits for a window a share of 0 never opens: the
                // enable, or a forwarded control (the channel's set-up
                // asks for its work-submit token).
                if rng.chance(50) {
                    let _ = s.ctl.gpfifo_schedule(c, tsg, true);
                } else {
                    let _ = s
                        .ctl
                        .alloc_work_channel(c, d, tsg, class::AMPERE_CHANNEL_GPFIFO_A, 8);
                }
            }
        }
        Kind::Fuzz => Ok(()),
    }
}
