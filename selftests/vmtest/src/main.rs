// SPDX-License-Identifier: GPL-2.0

//! vgpu's VM selftests. Runs inside the test VM as root and prints TAP 13.
//!
//! Usage: `vgpu-selftest [SUITE | SUITE.TEST | -SUITE | -SUITE.TEST | -SUITE.PREFIX*]...`; with no
//! argument (or only `-SUITE`s, which leave suites out) every suite runs. A test named alone must not rely on its suite's earlier tests.
//! Exit status: 0 if every test passed.

mod bench;
mod breakout;
mod compute;
mod containers;
// Read by the host test `userspace/logic/tests/table.rs` (`include!`);
// compiled here so that it stays valid Rust and rustfmt'd with the suites.
#[allow(dead_code)]
mod coverage;
mod ctltool;
mod demo;
mod double;
mod dra;
mod dra_image;
mod expect;
mod fuzz;
mod guard;
mod isolation;
mod kclient;
mod memory;
mod module;
mod nodes;
mod nvuserspace;
mod priority;
mod processes;
mod proxy;
mod realdriver;
mod rewritten;
mod session;
mod sys;
mod tap;
mod traces;
mod uvm;
mod uvmdouble;
mod vgpus;

type Suite = (&'static str, &'static [tap::Test]);

const SUITES: &[Suite] = &[
    ("module", module::TESTS),
    ("double", double::TESTS),
    ("uvm_double", uvmdouble::TESTS),
    ("kclient", kclient::TESTS),
    ("memory", memory::TESTS),
    ("vgpus", vgpus::TESTS),
    ("proxy", proxy::TESTS),
    ("nodes", nodes::TESTS),
    ("guard", guard::TESTS),
    ("uvm", uvm::TESTS),
    ("compute", compute::TESTS),
    ("priority", priority::TESTS),
    ("rewritten", rewritten::TESTS),
    ("processes", processes::TESTS),
    ("isolation", isolation::TESTS),
    ("vgpuctl", ctltool::TESTS),
    ("nvidia_userspace", nvuserspace::TESTS),
    ("traces", traces::TESTS),
    ("containers", containers::TESTS),
    ("containers_runc", containers::RUNC_TESTS),
    ("dra", dra::TESTS),
    ("breakout", breakout::TESTS),
];

/// Suites that run only when named (benchmarks, the fuzzer).
const ON_REQUEST: &[Suite] = &[
    ("bench", bench::TESTS),
    ("fuzz", fuzz::TESTS),
    // NVIDIA's own driver: the VM of `scripts/vm.sh --driver real`.
    ("real_driver", realdriver::TESTS),
];

/// The tests `wanted` names, per suite, in suite order. `-SUITE` leaves a
/// suite out (of all suites when nothing else is named), `-SUITE.TEST` a
/// test and `-SUITE.PREFIX*` the tests named so: the debug lane of `make
/// test` leaves out what starts podman (a minute a start under KASAN).
fn select(wanted: &[String]) -> Vec<(&'static str, Vec<tap::Test>)> {
    let (left_out, wanted): (Vec<&String>, Vec<&String>) =
        wanted.iter().partition(|w| w.starts_with('-'));
    // `-SUITE.PREFIX*` leaves out every test of SUITE whose name starts
    // with PREFIX.
    let left_out = |name: &str| {
        left_out.iter().any(|w| match w[1..].strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => w[1..] == *name,
        })
    };
    SUITES
        .iter()
        .chain(ON_REQUEST.iter().filter(|(name, _)| {
            wanted
                .iter()
                .any(|w| *w == name || w.starts_with(&format!("{name}.")))
        }))
        .filter(|(name, _)| !left_out(name))
        .map(|(name, tests)| {
            let picked = tests
                .iter()
                .filter(|t| {
                    wanted.is_empty()
                        || wanted
                            .iter()
                            .any(|w| *w == name || **w == format!("{name}.{}", t.name))
                })
                // `-SUITE.TEST` leaves one test out.
                .filter(|t| !left_out(&format!("{name}.{}", t.name)))
                .copied()
                .collect();
            (*name, picked)
        })
        .filter(|(_, t): &(&str, Vec<tap::Test>)| !t.is_empty())
        .collect()
}

fn main() {
    let wanted: Vec<String> = std::env::args().skip(1).collect();
    // The client sequences speak the ABI of the release the double claims,
    // as the libcuda of that driver does (the newest where vgpu has no
    // tables for it: those runs test that vgpu refuses to load).
    nvclient::speak_release(&sys::claimed_release());
    if wanted.first().map(String::as_str) == Some("fuzz-exec") {
        std::process::exit(fuzz::exec_child(&wanted[1..]));
    }
    if wanted.first().map(String::as_str) == Some("breakout-attempts") {
        std::process::exit(breakout::attempts(&wanted[1..]));
    }
    if wanted.first().map(String::as_str) == Some("demo-alloc") {
        std::process::exit(demo::alloc(&wanted[1..]));
    }
    if wanted.first().map(String::as_str) == Some("demo-managed") {
        std::process::exit(demo::managed(&wanted[1..]));
    }
    if wanted.first().map(String::as_str) == Some("demo-hold") {
        std::process::exit(demo::hold(&wanted[1..]));
    }
    if wanted.first().map(String::as_str) == Some("demo-compute") {
        std::process::exit(demo::compute(&wanted[1..]));
    }
    if let Err(e) = sys::claim_release() {
        println!("TAP version 13\n1..1\nnot ok 1 setup.claim_release\n#   {e}");
        std::process::exit(1);
    }
    let chosen = select(&wanted);
    let total: usize = chosen.iter().map(|(_, t)| t.len()).sum();
    println!("TAP version 13");
    println!("1..{total}");
    if total == 0 {
        println!("# no suite matched {wanted:?}");
        std::process::exit(1);
    }
    let failed: usize = chosen
        .iter()
        .map(|(name, tests)| tap::run(name, tests))
        .sum();
    println!("# {} passed, {} failed", tap::count() - failed, failed);
    std::process::exit(if failed == 0 { 0 } else { 1 });
}
