// SPDX-License-Identifier: GPL-2.0

//! A small TAP 13 producer, kselftest style.

use std::io::Write;

/// The outcome of one test: `Err` carries the reason it failed.
pub type Outcome = Result<(), String>;

/// A test: a name and the function that runs it.
#[derive(Clone, Copy)]
pub struct Test {
    /// Name printed on the TAP line.
    pub name: &'static str,
    /// Body.
    pub run: fn() -> Outcome,
}

/// Runs `tests` in order, printing TAP to stdout. Returns the number that failed.
pub fn run(suite: &str, tests: &[Test]) -> usize {
    let mut out = std::io::stdout();
    let _ = writeln!(out, "# suite: {suite}");
    let mut failed = 0;
    for t in tests {
        let n = next_number();
        match std::panic::catch_unwind(t.run) {
            Ok(Ok(())) => {
                let _ = writeln!(out, "ok {n} {suite}.{}", t.name);
            }
            Ok(Err(why)) => {
                failed += 1;
                let _ = writeln!(out, "not ok {n} {suite}.{}", t.name);
                for line in why.lines() {
                    let _ = writeln!(out, "#   {line}");
                }
            }
            Err(_) => {
                failed += 1;
                let _ = writeln!(out, "not ok {n} {suite}.{} # panicked", t.name);
            }
        }
        let _ = out.flush();
    }
    failed
}

static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);

fn next_number() -> usize {
    COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// How many tests have been numbered so far.
pub fn count() -> usize {
    COUNTER.load(std::sync::atomic::Ordering::Relaxed) - 1
}

/// Fails the current test with a formatted reason unless `cond` holds.
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $($why:tt)+) => {
        if !$cond {
            return Err(format!($($why)+));
        }
    };
}

/// Builds a suite's list of tests, in order: `name` runs the function
/// `name`; `name = run` runs `run` (a path or a closure) under that name.
/// The host test `userspace/logic/tests/table.rs` reads these lists.
#[macro_export]
macro_rules! tests {
    (@run $name:ident) => {
        $name
    };
    (@run $name:ident, $run:expr) => {
        $run
    };
    ($($name:ident $(= $run:expr)?),* $(,)?) => {
        &[$($crate::tap::Test {
            name: stringify!($name),
            run: $crate::tests!(@run $name $(, $run)?),
        }),*]
    };
}
