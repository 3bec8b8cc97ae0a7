// SPDX-License-Identifier: GPL-2.0

//! The driver double's kernel-client interface, tested in the kernel by the
//! KUnit suite of `nvidia_kclient_test.ko`: this suite loads it and checks
//! the suite's result line.

use crate::ensure;
use crate::sys::{module_loaded, sh};
use crate::tap::{Outcome, Test};
use crate::tests;

/// Tests of this suite.
pub const TESTS: &[Test] = tests![kunit_suite_passes];

fn kunit_suite_passes() -> Outcome {
    // The test module depends on the double: modprobe loads it first.
    sh("modprobe nvidia_kclient_test")?;
    ensure!(
        module_loaded("nvidia"),
        "modprobe did not load the double as a dependency"
    );
    let log = sh("dmesg")?;
    let line = log
        .lines()
        .rev()
        .find(|l| l.contains("# nvidia_double_kclient: pass:"))
        .ok_or("no result line from the nvidia_double_kclient suite")?
        .to_string();
    println!("# kclient: {}", line.trim());
    let field = |key: &str| -> Option<u32> {
        let rest = &line[line.find(key)? + key.len()..];
        rest.split(|c: char| !c.is_ascii_digit())
            .next()?
            .parse()
            .ok()
    };
    let (pass, total) = (field("pass:"), field("total:"));
    ensure!(
        pass.is_some_and(|p| p > 0) && pass == total && line.contains("fail:0"),
        "suite result: {line}"
    );
    sh("rmmod nvidia_kclient_test")?;
    sh("rmmod nvidia")?;
    Ok(())
}
