// SPDX-License-Identifier: GPL-2.0

//! The scheduler's window maths: targets per policy, debt carrying, and a
//! simulation of many periods with a jittery timer that must still land
//! every share within a fraction of a point.

use vgpu_logic::compute::{
    parse_frozen, parse_period_us, parse_policy, parse_priority, parse_share, settle, targets,
    window, Policy, Tenant, DEFAULT_PERIOD_US, DEFAULT_PRIORITY, MAX_PRIORITY,
};
use vgpu_logic::config::ParseError;

const P: u64 = 50_000_000;

fn t(share: u8, busy: bool) -> Tenant {
    Tenant {
        share,
        busy,
        level: DEFAULT_PRIORITY,
    }
}

/// A tenant at priority `level`.
fn at(level: u8, share: u8, busy: bool) -> Tenant {
    Tenant { share, busy, level }
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

#[test]
fn work_conserving_gives_the_period_to_the_highest_busy_level() {
    let mut out = [0u64; 4];
    // Level 2 busy: it takes the whole period, split by its shares; the
    // lower levels get nothing planned however large their shares.
    let tenants = [
        at(2, 30, true),
        at(2, 10, true),
        at(1, 100, true),
        at(0, 50, true),
    ];
    let idle = targets(Policy::WorkConserving, P, &tenants, &mut out);
    assert_eq!(idle, 0);
    assert_eq!(out, [P * 3 / 4, P / 4, 0, 0]);
    // Level 2 idle: level 1 takes it all; then level 0.
    let tenants = [
        at(2, 30, false),
        at(2, 10, false),
        at(1, 100, true),
        at(0, 50, true),
    ];
    targets(Policy::WorkConserving, P, &tenants, &mut out);
    assert_eq!(out, [0, 0, P, 0]);
    let tenants = [
        at(2, 30, false),
        at(2, 10, false),
        at(1, 100, false),
        at(0, 50, true),
    ];
    targets(Policy::WorkConserving, P, &tenants, &mut out);
    assert_eq!(out, [0, 0, 0, P]);
    // A busy level whose shares are all 0 never runs: the next level down
    // gets the period.
    let tenants = [
        at(3, 0, true),
        at(2, 10, false),
        at(1, 40, true),
        at(1, 60, true),
    ];
    targets(Policy::WorkConserving, P, &tenants, &mut out);
    assert_eq!(out, [0, 0, P * 2 / 5, P * 3 / 5]);
    // Nobody busy: all idle.
    let tenants = [at(3, 10, false), at(0, 10, false)];
    let mut two = [1u64; 2];
    assert_eq!(targets(Policy::WorkConserving, P, &tenants, &mut two), P);
    assert_eq!(two, [0, 0]);
}

#[test]
fn fixed_caps_do_not_depend_on_levels() {
    // Caps are caps whatever the level: levels only order the windows.
    let mut a = [0u64; 3];
    let mut b = [0u64; 3];
    let same = [t(20, true), t(30, true), t(10, false)];
    let mixed = [at(3, 20, true), at(0, 30, true), at(2, 10, false)];
    let ia = targets(Policy::Fixed, P, &same, &mut a);
    let ib = targets(Policy::Fixed, P, &mixed, &mut b);
    assert_eq!((a, ia), (b, ib));
    assert_eq!(b, [P / 5, P * 3 / 10, 0]);
    assert_eq!(ib, P / 2);
}

#[test]
fn one_level_is_the_plain_policy() {
    // Every tenant at the same level, whichever: the targets of the
    // policies without priority (checked against the default level).
    for level in 0..=MAX_PRIORITY {
        for policy in [Policy::Fixed, Policy::WorkConserving] {
            let plain = [t(10, true), t(50, false), t(40, true), t(0, true)];
            let lvl = plain.map(|x| at(level, x.share, x.busy));
            let (mut a, mut b) = ([0u64; 4], [0u64; 4]);
            let ia = targets(policy, P, &plain, &mut a);
            let ib = targets(policy, P, &lvl, &mut b);
            assert_eq!((a, ia), (b, ib), "{policy:?} at level {level}");
        }
    }
}

#[test]
fn priority_and_frozen_values() {
    assert_eq!(parse_priority(b"0\n"), Ok(0));
    assert_eq!(parse_priority(b"3"), Ok(MAX_PRIORITY));
    assert_eq!(parse_priority(b"4"), Err(ParseError::Range));
    assert_eq!(parse_priority(b"-1"), Err(ParseError::Invalid));
    assert_eq!(parse_priority(b"high"), Err(ParseError::Invalid));
    assert_eq!(parse_priority(b""), Err(ParseError::Invalid));
    assert_eq!(parse_frozen(b"1\n"), Ok(true));
    assert_eq!(parse_frozen(b"0"), Ok(false));
    assert_eq!(parse_frozen(b"2"), Err(ParseError::Range));
    assert_eq!(parse_frozen(b"yes"), Err(ParseError::Invalid));
}
