// SPDX-License-Identifier: GPL-2.0

//! Rounds of fuzzing: one worker process per tenant, each with several
//! threads stepping [`super::ops::Thread`]s, stopped every chunk for the
//! invariants; at the end of a round the workers exit or are killed, and
//! what they held must all come back.

use super::check;
use super::mem::Scratch;
use super::ops::{Board, Family, Fds, Stats, Tenant, Thread};
use super::rng::Rng;
use crate::sys::{errno, join_cgroup, Shared};
use crate::tap::Outcome;
use std::time::{Duration, Instant};

/// Threads per worker.
pub const THREADS: usize = 2;
/// Invariant checks per round (the workers stop after each chunk).
pub const CHUNKS: u64 = 4;

/// Rounds between two progress lines.
const PROGRESS_ROUNDS: u64 = 25;

/// Control slots of a worker on the control page: chunks done, calls,
/// refused calls.
const SLOT_DONE: usize = 0;
const SLOT_CALLS: usize = 1;
const SLOT_REFUSED: usize = 2;
/// The chunk workers may start (the parent raises it).
const SLOT_GO: usize = 500;

fn slot(w: usize, s: usize) -> usize {
    w * 4 + s
}

/// What rounds did.
#[derive(Default, Debug, Clone)]
pub struct Totals {
    /// Calls made.
    pub calls: u64,
    /// Calls refused.
    pub refused: u64,
    /// Invariant checks passed.
    pub checks: u64,
    /// Rounds whose workers were SIGKILLed (not exited).
    pub killed: u64,
    /// Time spent in calls (the workers' running time, not the checks).
    pub busy: Duration,
    /// Rows of the dispatch table the calls reached vgpu's dispatch
    /// with, per family (escapes, UVM commands, classes, controls):
    /// reached, of; from vgpu's per-row counts (debugfs `vgpu/rows`).
    pub cover: [(usize, usize); 4],
    /// Rows the raw calls drew, per family, of the same.
    pub drawn: [usize; 4],
    /// The rows that never reached vgpu's dispatch, each `FAMILY NUMBER
    /// NAME`, and `(never drawn)` after one the raw calls did not draw.
    pub missed: Vec<String>,
}

/// vgpu's per-row counts of calls that reached its dispatch.
const ROWS: &str = "/sys/kernel/debug/vgpu/rows";

/// The numbers of the rows of `kind` (`escape`, `uvm`, `class`,
/// `control`) that vgpu's per-row counts show reached, from `text`.
fn reached(text: &str, kind: &str) -> Vec<u32> {
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            if w.next() != Some(kind) {
                return None;
            }
            let n = u32::from_str_radix(w.next()?.trim_start_matches("0x"), 16).ok()?;
            let c: u64 = w.next()?.parse().ok()?;
            (c > 0).then_some(n)
        })
        .collect()
}

/// Runs rounds from round `first` until `calls` calls are made, `tenants`
/// fuzzed at once.
/// `make_it_fail` flags the workers for fault injection
/// (`/proc/self/make-it-fail`). Fails at the first broken invariant,
/// naming the seed and round.
pub fn rounds(
    seed: u64,
    first: u64,
    tenants: &[Tenant],
    calls: u64,
    per_round: u64,
    make_it_fail: bool,
) -> Result<Totals, String> {
    let board = Board::new()?;
    let mut totals = Totals::default();
    crate::sys::write_file(ROWS, "0").map_err(|e| format!("{ROWS}: errno {e}"))?;
    let mut round = first;
    while totals.calls < calls {
        let per_thread = (per_round / CHUNKS / (tenants.len() * THREADS) as u64).max(1);
        let r = one_round(
            seed,
            round,
            tenants,
            &board,
            per_thread,
            make_it_fail,
            &mut totals,
        );
        r.map_err(|e| format!("seed {seed} round {round}: {e}"))?;
        round += 1;
        // A long run's progress, for whoever watches its TAP log.
        if (round - first).is_multiple_of(PROGRESS_ROUNDS) {
            println!(
                "# fuzz: round {round}: {} calls in {:.0} s",
                totals.calls,
                totals.busy.as_secs_f64()
            );
        }
    }
    let r = nvclient::speaks();
    totals.drawn = [
        (Family::Escape, r.escapes.len()),
        (Family::Uvm, r.uvm.len()),
        (Family::Class, r.classes.len()),
        (Family::Control, r.controls.len()),
    ]
    .map(|(f, n)| board.coverage(f, n));
    let text = crate::sys::read_file(ROWS)?;
    let mut missed = Vec::new();
    let mut count = |kind: &str, family: Family, rows: Vec<(u32, String)>| {
        let seen = reached(&text, kind);
        for (k, (n, name)) in rows.iter().enumerate() {
            if !seen.contains(n) {
                let drawn = if board.drawn(family, k) {
                    ""
                } else {
                    " (never drawn)"
                };
                missed.push(format!("{kind} {n:#x} {name}{drawn}"));
            }
        }
        let hit = rows.iter().filter(|(n, _)| seen.contains(n)).count();
        (hit, rows.len())
    };
    totals.cover = [
        count(
            "escape",
            Family::Escape,
            r.escapes
                .iter()
                .map(|x| (u32::from(x.nr), format!("{:?}", x.escape)))
                .collect(),
        ),
        count(
            "uvm",
            Family::Uvm,
            r.uvm
                .iter()
                .map(|x| (x.number, format!("{:?}", x.command)))
                .collect(),
        ),
        count(
            "class",
            Family::Class,
            r.classes
                .iter()
                .map(|x| (x.class, x.name.to_string()))
                .collect(),
        ),
        count(
            "control",
            Family::Control,
            r.controls
                .iter()
                .map(|x| (x.cmd, x.name.to_string()))
                .collect(),
        ),
    ];
    totals.missed = missed;
    Ok(totals)
}

fn one_round(
    seed: u64,
    round: u64,
    tenants: &[Tenant],
    board: &Board,
    per_thread: u64,
    make_it_fail: bool,
    totals: &mut Totals,
) -> Outcome {
    let ctl = Shared::new()?;
    let mut rng = Rng::derive(seed, round);
    let mut pids = Vec::new();
    for (w, t) in tenants.iter().enumerate() {
        let wseed = rng.next();
        // SAFETY: the test program is single-threaded here; the child
        // runs the worker and exits without returning.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(format!("fork: errno {}", errno()));
        }
        if pid == 0 {
            let code = worker(
                w,
                *t,
                tenants.len(),
                wseed,
                board,
                &ctl,
                per_thread,
                make_it_fail,
            );
            // SAFETY: leaving the child.
            unsafe { libc::_exit(code) };
        }
        pids.push(pid);
    }
    // Half the rounds end with SIGKILL in the middle of the last chunk,
    // at a random point of it.
    let kill = rng.chance(50);
    let mut result = Ok(());
    let t0 = Instant::now();
    let mut last = Duration::from_millis(100);
    for chunk in 1..=CHUNKS {
        let c0 = Instant::now();
        if kill && chunk == CHUNKS {
            std::thread::sleep(last.mul_f64(rng.below(1000) as f64 / 1000.0));
            totals.busy += c0.elapsed();
            break;
        }
        // Wait for every worker to finish the chunk (or die).
        loop {
            let done = (0..tenants.len()).all(|w| ctl.get(slot(w, SLOT_DONE)) >= chunk);
            if done {
                break;
            }
            if pids.iter().any(|&p| exited(p)) {
                result = Err(format!("a worker died in chunk {chunk}"));
                break;
            }
            if t0.elapsed() > Duration::from_secs(600) {
                result = Err(format!("chunk {chunk} did not end in 600 s"));
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        last = c0.elapsed();
        totals.busy += last;
        if result.is_err() {
            break;
        }
        if let Some(e) = board.breached() {
            result = Err(format!("in chunk {chunk}: {e}"));
            break;
        }
        if let Err(e) = check::live(tenants, &pids) {
            result = Err(format!("after chunk {chunk}: {e}"));
            break;
        }
        totals.checks += 1;
        ctl.set(SLOT_GO, chunk);
    }
    if kill || result.is_err() {
        for &p in &pids {
            // SAFETY: our children.
            unsafe { libc::kill(p, libc::SIGKILL) };
        }
        totals.killed += u64::from(kill);
    } else {
        ctl.set(SLOT_GO, CHUNKS + 1);
    }
    for &p in &pids {
        let mut st = 0;
        // SAFETY: our child, reaped once.
        unsafe { libc::waitpid(p, &mut st, 0) };
        if !kill && result.is_ok() && !(libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0) {
            result = Err(format!("worker {p} ended with status {st:#x}"));
        }
    }
    for w in 0..tenants.len() {
        totals.calls += ctl.get(slot(w, SLOT_CALLS));
        totals.refused += ctl.get(slot(w, SLOT_REFUSED));
    }
    result?;
    if let Some(e) = board.breached() {
        return Err(e);
    }
    check::settled(tenants).map_err(|e| {
        format!(
            "after the workers {}: {e}",
            if kill { "were killed" } else { "exited" }
        )
    })?;
    totals.checks += 1;
    Ok(())
}

/// Whether child `pid` has ended (without reaping it).
fn exited(pid: i32) -> bool {
    // SAFETY: a zeroed siginfo for waitid to fill.
    let mut info: libc::siginfo_t = unsafe { core::mem::zeroed() };
    // SAFETY: our child; WNOWAIT leaves it to be reaped later.
    let r = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    // SAFETY: waitid filled `info` (si_pid 0 when nothing ended).
    r == 0 && unsafe { info.si_pid() } != 0
}

/// One worker process: joins its tenant's cgroup, runs `CHUNKS` chunks of
/// `per_thread` steps on `THREADS` threads, reporting after each and
/// waiting for the parent's go. Returns its exit code.
#[allow(clippy::too_many_arguments)]
fn worker(
    w: usize,
    tenant: Tenant,
    tenants: usize,
    seed: u64,
    board: &Board,
    ctl: &Shared,
    per_thread: u64,
    make_it_fail: bool,
) -> i32 {
    if join_cgroup(tenant.cgroup).is_err() {
        return 2;
    }
    if make_it_fail && crate::sys::write_file("/proc/self/make-it-fail", "1").is_err() {
        return 3;
    }
    let Ok(scratch) = Scratch::new() else {
        return 4;
    };
    let fds: Fds = Fds::default();
    let mut threads: Vec<Thread<'_>> = (0..THREADS)
        .map(|i| {
            Thread::new(
                Rng::derive(seed, i as u64),
                tenant,
                tenants,
                scratch,
                &fds,
                board,
            )
        })
        .collect();
    for chunk in 1..=CHUNKS {
        std::thread::scope(|sc| {
            for t in threads.iter_mut() {
                sc.spawn(move || {
                    for _ in 0..per_thread {
                        t.step();
                    }
                    t.reap();
                });
            }
        });
        let s = threads.iter().fold(Stats::default(), |a, t| Stats {
            calls: a.calls + t.stats.calls,
            refused: a.refused + t.stats.refused,
        });
        ctl.set(slot(w, SLOT_CALLS), s.calls);
        ctl.set(slot(w, SLOT_REFUSED), s.refused);
        ctl.set(slot(w, SLOT_DONE), chunk);
        while ctl.get(SLOT_GO) < chunk {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    if std::env::var("vgpu_fuzz").is_ok_and(|v| v.contains("profile=1")) {
        for t in threads.iter() {
            println!("# fuzz profile: worker {w}: {}", t.profile());
        }
    }
    for t in threads.iter_mut() {
        t.finish();
    }
    if let Ok(mut f) = fds.lock() {
        for fd in f.drain(..) {
            // SAFETY: fds of the shared set, closed once.
            unsafe { libc::close(fd) };
        }
    }
    0
}
