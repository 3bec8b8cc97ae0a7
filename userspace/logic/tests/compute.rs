// SPDX-License-Identifier: GPL-2.0

//! The scheduler's window maths: targets per policy, debt carrying, and a
//! simulation of many periods with a jittery timer that must still land
//! every share within a fraction of a point.

use vgpu_logic::compute::{
    parse_period_us, parse_policy, parse_share, settle, targets, window, Policy, Tenant,
    DEFAULT_PERIOD_US,
};
use vgpu_logic::config::ParseError;

const P: u64 = 50_000_000;

fn t(share: u8, busy: bool) -> Tenant {
    Tenant { share, busy }
}

#[test]
fn fixed_targets_are_caps() {
    let mut out = [0; 2];
    let idle = targets(Policy::Fixed, P, &[t(30, true), t(70, true)], &mut out);
    assert_eq!(out, [15_000_000, 35_000_000]);
    assert_eq!(idle, 0);
    // An idle tenant's time stays idle under a cap.
    let idle = targets(Policy::Fixed, P, &[t(30, true), t(70, false)], &mut out);
    assert_eq!(out, [15_000_000, 0]);
    assert_eq!(idle, 35_000_000);
    // Shares under 100 leave the rest idle.
    let mut one = [0; 1];
    assert_eq!(
        targets(Policy::Fixed, P, &[t(10, true)], &mut one),
        45_000_000
    );
    assert_eq!(one, [5_000_000]);
}

#[test]
fn overcommitted_fixed_shares_scale_down() {
    let mut out = [0; 2];
    let idle = targets(Policy::Fixed, P, &[t(100, true), t(100, true)], &mut out);
    assert_eq!(out, [25_000_000, 25_000_000]);
    assert_eq!(idle, 0);
    // The scale counts idle tenants too: a cap does not grow when others idle.
    targets(Policy::Fixed, P, &[t(100, true), t(100, false)], &mut out);
    assert_eq!(out, [25_000_000, 0]);
}

#[test]
fn work_conserving_gives_idle_share_to_busy_ones() {
    let mut out = [0; 3];
    let idle = targets(
        Policy::WorkConserving,
        P,
        &[t(10, true), t(30, true), t(60, false)],
        &mut out,
    );
    assert_eq!(out, [12_500_000, 37_500_000, 0]);
    assert_eq!(idle, 0);
    let mut one = [0; 1];
    assert_eq!(
        targets(Policy::WorkConserving, P, &[t(10, true)], &mut one),
        0
    );
    assert_eq!(one, [P]);
    // Nobody busy, or only zero shares: all idle.
    assert_eq!(
        targets(Policy::WorkConserving, P, &[t(0, true)], &mut one),
        P
    );
    assert_eq!(one, [0]);
}

#[test]
fn zero_share_never_runs() {
    let mut out = [0; 2];
    targets(Policy::Fixed, P, &[t(0, true), t(50, true)], &mut out);
    assert_eq!(out[0], 0);
    targets(
        Policy::WorkConserving,
        P,
        &[t(0, true), t(50, true)],
        &mut out,
    );
    assert_eq!(out, [0, P]);
}

#[test]
fn debt_lengthens_and_shortens_windows_within_a_period() {
    assert_eq!(window(1000, 200), 1200);
    assert_eq!(window(1000, -200), 800);
    assert_eq!(window(1000, -5000), 0);
    let mut d = 0;
    settle(&mut d, 1000, 1300, P);
    assert_eq!(d, -300);
    settle(&mut d, 1000, 500, P);
    assert_eq!(d, 200);
    // Bounded by one period either way.
    settle(&mut d, 0, 10 * P, P);
    assert_eq!(d, -(P as i64));
    settle(&mut d, 20 * P, 0, P);
    assert_eq!(d, P as i64);
}

/// Runs `periods` periods with a timer that overshoots every window by a
/// pseudo-random 0..=`jitter` ns (as sleeps do); returns each tenant's share
/// of the whole time, in percent.
fn simulate(policy: Policy, tenants: &[Tenant], periods: u32, jitter: u64) -> Vec<f64> {
    let mut debts = vec![0i64; tenants.len()];
    let mut idle_debt = 0i64;
    let mut got = vec![0u64; tenants.len()];
    let mut total = 0u64;
    let mut seed = 0x1234_5678u64;
    let mut rnd = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % (jitter + 1)
    };
    let mut out = vec![0; tenants.len()];
    for _ in 0..periods {
        let idle = targets(policy, P, tenants, &mut out);
        for i in 0..tenants.len() {
            if out[i] == 0 {
                continue;
            }
            let w = window(out[i], debts[i]);
            let actual = w + rnd();
            settle(&mut debts[i], out[i], actual, P);
            got[i] += actual;
            total += actual;
        }
        if idle > 0 {
            let w = window(idle, idle_debt);
            let actual = w + rnd();
            settle(&mut idle_debt, idle, actual, P);
            total += actual;
        }
    }
    got.iter()
        .map(|&g| g as f64 * 100.0 / total as f64)
        .collect()
}

#[test]
fn jittery_timer_still_gives_exact_shares() {
    // 10 s of 50 ms periods, windows overshooting by up to 2 ms.
    for (policy, tenants, want) in [
        (
            Policy::Fixed,
            vec![t(50, true), t(50, true)],
            vec![50.0, 50.0],
        ),
        (
            Policy::Fixed,
            vec![t(30, true), t(70, true)],
            vec![30.0, 70.0],
        ),
        (
            Policy::Fixed,
            vec![t(10, true), t(90, true)],
            vec![10.0, 90.0],
        ),
        (
            Policy::Fixed,
            vec![t(10, true), t(20, true), t(30, true), t(40, true)],
            vec![10.0, 20.0, 30.0, 40.0],
        ),
        (Policy::Fixed, vec![t(25, true)], vec![25.0]),
        (
            Policy::WorkConserving,
            vec![t(30, true), t(70, false)],
            vec![100.0, 0.0],
        ),
    ] {
        let got = simulate(policy, &tenants, 200, 2_000_000);
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() < 0.5, "{policy:?} {tenants:?}: got {got:?}");
        }
    }
}

#[test]
fn sysfs_values() {
    assert_eq!(parse_policy(b"fixed\n"), Ok(Policy::Fixed));
    assert_eq!(parse_policy(b"work-conserving"), Ok(Policy::WorkConserving));
    assert_eq!(parse_policy(b"Fixed"), Err(ParseError::Invalid));
    assert_eq!(parse_policy(b""), Err(ParseError::Invalid));
    assert_eq!(Policy::WorkConserving.name(), "work-conserving");
    assert_eq!(parse_share(b"0\n"), Ok(0));
    assert_eq!(parse_share(b"100"), Ok(100));
    assert_eq!(parse_share(b"101"), Err(ParseError::Range));
    assert_eq!(parse_share(b"30%"), Err(ParseError::Invalid));
    assert_eq!(parse_share(b"-1"), Err(ParseError::Invalid));
    assert_eq!(parse_period_us(b"50000\n"), Ok(DEFAULT_PERIOD_US));
    assert_eq!(parse_period_us(b"999"), Err(ParseError::Range));
    assert_eq!(parse_period_us(b"1000001"), Err(ParseError::Range));
    assert_eq!(
        parse_period_us(b"99999999999999999999999"),
        Err(ParseError::Range)
    );
    assert_eq!(parse_period_us(b"1e3"), Err(ParseError::Invalid));
}
