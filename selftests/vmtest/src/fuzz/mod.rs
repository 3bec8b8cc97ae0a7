// SPDX-License-Identifier: GPL-2.0

//! The reliability campaign (issue 19): a structure-aware fuzzer of every
//! entry point of vgpu's nodes, kill storms, fault injection and load and
//! unload cycles, with the invariants of `check.rs` checked throughout.
//!
//! The suite runs on request (`fuzz`): `make fuzz` for a long run, and a
//! bounded slice in `make test` on the debug kernel (KASAN, lockdep,
//! kmemleak, the fault-injection framework). Its budget comes from the
//! kernel command line, `vgpu_fuzz=calls=N,kills=N,cycles=N,seed=N`
//! (`scripts/vm.sh --fuzz`); what is not given takes the CI slice's value,
//! and the seed is the clock's when not given. The seed is printed first:
//! a failure names it and the round, and the same seed replays the same
//! calls (the interleaving of threads and kills is the emulator's);
//! `round=N` starts the calls phase at round N, so a failure late in a
//! long run replays in minutes (each round draws from the seed and its
//! number alone; only the board of handles posted between tenants starts
//! empty).
//!
//! Three tenants: vGPU 0 (256 MiB) on GPU 0 in `/fz0`, vGPU 1 (192 MiB,
//! share 60) on GPU 1 in `/fz1`, and vGPU 2 (64 MiB, share 0: its enables
//! wait for ever) on GPU 1 in `/fz2`, used by the kill storms only.

pub(crate) mod check;
mod cycles;
mod inject;
pub(crate) mod mem;
mod ops;
mod regress;
mod rng;
mod run;
mod storm;

pub use ops::exec_child;

use crate::ensure;
use crate::sys::{delete_module, make_uvm_nodes, module_loaded, sh, write_file};
use crate::tap::{Outcome, Test};
use crate::tests;
use ops::Tenant;
use std::sync::Mutex;
use std::time::Instant;

/// Tests of this suite.
pub const TESTS: &[Test] = tests![
    setup,
    failed_allocs_stay_accounted = regress::failed_allocs_stay_accounted,
    failed_frees_leave_nothing = regress::failed_frees_leave_nothing,
    failed_dp_regions_leave_the_ledger_exact = regress::failed_dp_regions_leave_the_ledger_exact,
    failed_closes_leave_nothing = regress::failed_closes_leave_nothing,
    closes_failing_one_allocation_leave_nothing =
        regress::closes_failing_one_allocation_leave_nothing,
    failed_opens_give_back = regress::failed_opens_give_back,
    calls,
    kill_storms,
    fault_injection,
    teardown,
    load_unload,
    figures,
];

/// The run's budget.
#[derive(Clone, Copy, Debug)]
struct Budget {
    calls: u64,
    kills: u64,
    cycles: u64,
    seed: u64,
    /// The calls phase's first round (a replay's).
    round: u64,
}

/// What the run did, for `figures`.
#[derive(Default, Debug)]
struct Figures {
    calls: u64,
    refused: u64,
    busy_s: f64,
    checks: u64,
    killed_rounds: u64,
    kills: u64,
    mid_loop: u64,
    injected: [u64; 3],
    injected_calls: u64,
    cycles: u64,
    refused_unloads: u64,
    raced_unloads: u64,
}

static FIGURES: Mutex<Option<Figures>> = Mutex::new(None);

fn record(f: impl FnOnce(&mut Figures)) {
    if let Ok(mut g) = FIGURES.lock() {
        f(g.get_or_insert_with(Figures::default));
    }
}

/// Adds what rounds of calls did to the figures.
fn record_rounds(t: &run::Totals) {
    record(|f| {
        f.calls += t.calls;
        f.refused += t.refused;
        f.busy_s += t.busy.as_secs_f64();
        f.checks += t.checks;
        f.killed_rounds += t.killed;
    });
}

/// The CI slice: 6 * 10^4 calls, 500 kill cycles, 100 load cycles.
const SLICE: Budget = Budget {
    calls: 60_000,
    kills: 500,
    cycles: 100,
    seed: 0,
    round: 0,
};

fn budget() -> Budget {
    static B: Mutex<Option<Budget>> = Mutex::new(None);
    let mut g = match B.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    *g.get_or_insert_with(|| {
        let mut b = SLICE;
        b.seed = crate::sys::monotonic_ns() ^ u64::from(std::process::id());
        let spec = std::env::var("vgpu_fuzz").unwrap_or_default();
        for kv in spec.split(',') {
            let Some((k, v)) = kv.split_once('=') else {
                continue;
            };
            let Ok(v) = v.parse::<u64>() else { continue };
            match k {
                "calls" => b.calls = v,
                "kills" => b.kills = v,
                "cycles" => b.cycles = v,
                "seed" => b.seed = v,
                "round" => b.round = v,
                _ => {}
            }
        }
        b
    })
}

pub(super) const TENANTS: [Tenant; 2] = [
    Tenant {
        index: 0,
        vgpu: 0,
        gpu: 0,
        limit: 256 << 20,
        cgroup: "/fz0",
    },
    Tenant {
        index: 1,
        vgpu: 1,
        gpu: 1,
        limit: 192 << 20,
        cgroup: "/fz1",
    },
];

const WINDOW: Tenant = Tenant {
    index: 2,
    vgpu: 2,
    gpu: 1,
    limit: 64 << 20,
    cgroup: "/fz2",
};

/// Calls per round of the plain fuzzing (4 invariant checks each).
const PER_ROUND: u64 = 4_000;
/// The share of the calls made under fault injection.
const INJECTED_PERCENT: u64 = 20;

fn setup() -> Outcome {
    let b = budget();
    println!(
        "# fuzz: seed {} (budget: {} calls from round {}, {} kill cycles, {} load cycles)",
        b.seed, b.calls, b.round, b.kills, b.cycles
    );
    sh("modprobe nvidia gpus=2 vram0_mib=1024 vram1_mib=1024")?;
    make_uvm_nodes()?;
    sh("modprobe vgpu")?;
    let w = |f: &str, v: &str| {
        write_file(&format!("/sys/class/vgpu/{f}"), v).map_err(|e| format!("{f} = {v}: errno {e}"))
    };
    for (t, share) in [(TENANTS[0], 100), (TENANTS[1], 60), (WINDOW, 0)] {
        std::fs::create_dir_all(format!("/sys/fs/cgroup{}", t.cgroup))
            .map_err(|e| format!("mkdir {}: {e}", t.cgroup))?;
        w("create", &t.vgpu.to_string())?;
        w(&format!("vgpu{}/gpu", t.vgpu), &t.gpu.to_string())?;
        w(
            &format!("vgpu{}/memory_limit", t.vgpu),
            &t.limit.to_string(),
        )?;
        w(&format!("vgpu{}/cgroup", t.vgpu), t.cgroup)?;
        w(&format!("vgpu{}/compute_share", t.vgpu), &share.to_string())?;
    }
    check::settled(&TENANTS)
}

fn calls() -> Outcome {
    let b = budget();
    let n = b.calls * (100 - INJECTED_PERCENT) / 100;
    let t = run::rounds(b.seed, b.round, &TENANTS, n, PER_ROUND, false)?;
    let (c, d) = (t.cover, t.drawn);
    println!(
        "# fuzz: dispatch-table rows reaching vgpu's dispatch (drawn): escapes {}/{} ({}), UVM commands {}/{} ({}), classes {}/{} ({}), controls {}/{} ({})",
        c[0].0, c[0].1, d[0], c[1].0, c[1].1, d[1], c[2].0, c[2].1, d[2], c[3].0, c[3].1, d[3]
    );
    println!(
        "# fuzz: {} calls ({} refused) in {:.1} s, {} invariant checks, {} rounds ended by SIGKILL",
        t.calls,
        t.refused,
        t.busy.as_secs_f64(),
        t.checks,
        t.killed
    );
    record_rounds(&t);
    // With 10^4 calls or more, every row has been drawn many times over:
    // one that never reached vgpu's dispatch (its per-row count in
    // debugfs) means the generator cannot reach it.
    if t.calls >= 10_000 {
        ensure!(
            t.missed.is_empty(),
            "{} dispatch-table row(s) never reached vgpu's dispatch ({c:?}, reached of, per family): {}",
            t.missed.len(),
            t.missed.join(", ")
        );
    }
    Ok(())
}

fn kill_storms() -> Outcome {
    let b = budget();
    let t0 = Instant::now();
    let t = storm::storms(b.seed, &TENANTS, WINDOW, b.kills)?;
    println!(
        "# fuzz: {} processes SIGKILLed ({} mid-loop, {} refused at their ceiling in set-up) in {:.1} s, {} settled checks",
        t.kills,
        t.mid_loop,
        t.at_ceiling,
        t0.elapsed().as_secs_f64(),
        t.checks
    );
    // A storm that never caught a victim inside its loop tested set-up
    // only.
    ensure!(
        t.mid_loop * 2 >= t.kills,
        "only {} of {} kills came after a victim's first turn",
        t.mid_loop,
        t.kills
    );
    record(|f| {
        f.kills += t.kills;
        f.mid_loop += t.mid_loop;
        f.checks += t.checks;
    });
    Ok(())
}

fn fault_injection() -> Outcome {
    ensure!(
        inject::available(),
        "this kernel lacks failslab, fail_page_alloc or fail_function (the debug kernel has them)"
    );
    let b = budget();
    let n = (b.calls * INJECTED_PERCENT / 100).max(1);
    let mut injected = [0u64; 3];
    let mut calls = 0;
    // Allocations first (failslab and fail_page_alloc together), then
    // vgpu's own points; each for half the calls.
    for (phase, attrs, percent) in [
        (0u64, &inject::ATTRS[..2], 10u32),
        (1, &inject::ATTRS[2..], 20),
    ] {
        inject::mark(true);
        let armed = attrs.iter().try_for_each(|a| inject::arm(a, percent));
        let r = armed.and_then(|()| {
            run::rounds(
                b.seed ^ (phase + 1) << 48,
                0,
                &TENANTS,
                n / 2,
                PER_ROUND / 2,
                true,
            )
        });
        let mut counts = Vec::new();
        for a in attrs {
            counts.push(inject::disarm(a));
        }
        inject::mark(false);
        let t = r?;
        for (a, c) in attrs.iter().zip(counts) {
            let i = inject::ATTRS.iter().position(|x| x == a).unwrap_or(0);
            injected[i] += c?;
        }
        calls += t.calls;
        record_rounds(&t);
    }
    println!(
        "# fuzz: {calls} calls under fault injection; injected: failslab {}, fail_page_alloc {}, fail_function {}",
        injected[0], injected[1], injected[2]
    );
    ensure!(
        injected.iter().all(|&n| n > 0),
        "a framework injected nothing: {injected:?}"
    );
    record(|f| {
        f.injected = injected;
        f.injected_calls = calls;
    });
    Ok(())
}

fn teardown() -> Outcome {
    let mut all = TENANTS.to_vec();
    all.push(WINDOW);
    check::settled(&all)?;
    for t in all {
        write_file("/sys/class/vgpu/remove", &t.vgpu.to_string())
            .map_err(|e| format!("remove vgpu{}: errno {e}", t.vgpu))?;
    }
    delete_module("vgpu").map_err(|e| format!("rmmod vgpu: errno {e}"))?;
    ensure!(!module_loaded("vgpu"), "vgpu still loaded");
    kmemleak_clean()
}

/// A kmemleak scan finds nothing (where the kernel has kmemleak).
fn kmemleak_clean() -> Outcome {
    let kml = "/sys/kernel/debug/kmemleak";
    if !std::path::Path::new(kml).exists() {
        return Ok(());
    }
    for _ in 0..2 {
        write_file(kml, "scan").map_err(|e| format!("kmemleak scan: errno {e}"))?;
    }
    let report = std::fs::read_to_string(kml).map_err(|e| format!("kmemleak: {e}"))?;
    ensure!(report.trim().is_empty(), "kmemleak: {report}");
    Ok(())
}

fn load_unload() -> Outcome {
    let b = budget();
    let t0 = Instant::now();
    let t = cycles::cycles(b.seed, b.cycles)?;
    println!(
        "# fuzz: {} load/unload cycles in {:.1} s ({} unloads refused with a tenant alive, {} tenants killed during an unload)",
        t.cycles,
        t0.elapsed().as_secs_f64(),
        t.refused,
        t.raced
    );
    record(|f| {
        f.cycles += t.cycles;
        f.refused_unloads += t.refused;
        f.raced_unloads += t.raced;
    });
    kmemleak_clean()
}

fn figures() -> Outcome {
    let g = FIGURES.lock().map_err(|_| "figures lock")?;
    let f = g.as_ref().ok_or("nothing ran")?;
    let b = budget();
    println!("# fuzz figures: seed {}", b.seed);
    println!(
        "# fuzz figures: calls {} ({} refused), {:.0} calls/s",
        f.calls,
        f.refused,
        f.calls as f64 / f.busy_s.max(1e-9)
    );
    println!(
        "# fuzz figures: kill cycles {} ({} mid-loop), {} rounds ended by SIGKILL",
        f.kills, f.mid_loop, f.killed_rounds
    );
    println!(
        "# fuzz figures: injected faults {} (failslab {}, fail_page_alloc {}, fail_function {}) over {} calls",
        f.injected.iter().sum::<u64>(),
        f.injected[0],
        f.injected[1],
        f.injected[2],
        f.injected_calls
    );
    println!(
        "# fuzz figures: load/unload cycles {} ({} refused while a tenant lived, {} raced with a kill)",
        f.cycles, f.refused_unloads, f.raced_unloads
    );
    println!("# fuzz figures: invariant checks {}", f.checks);
    ensure!(
        f.calls >= b.calls && f.kills >= b.kills && f.cycles >= b.cycles,
        "the budget was not spent: {f:?}"
    );
    Ok(())
}
