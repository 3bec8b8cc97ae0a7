// SPDX-License-Identifier: GPL-2.0

//! Compute shares: the window maths of the per-GPU scheduler, and the
//! parsing of its sysfs values.
//!
//! core-only: built into `vgpu.ko` and by the host test crate.
//!
//! Each physical GPU runs periods of `period` ns. In a period every vGPU that
//! has work gets a *window* (its TSGs enabled, everyone else's disabled), in
//! turn, and under the fixed policy the unclaimed rest of the period is an
//! idle window. A window's length is the vGPU's *target* for the period plus
//! its *debt*: what it was owed (or overran) in earlier periods, because
//! sleeping and switching never hit a target to the nanosecond. Carrying the
//! difference over makes the long-run share exact, whatever the timer's
//! jitter, as long as it is bounded.

use crate::config::{parse_u64, trim, ParseError};

/// The default period: 50 ms (see [`DEFAULT_PERIOD_US`]).
///
/// At 1% granularity the smallest window is 500 us, about half the driver's
/// default TSG timeslice (1024 us), so a 1% vGPU still runs whole slices;
/// a switch costs two or three kernel-interface calls per TSG, which at 20
/// periods a second and a handful of vGPUs is noise; and a vGPU waits at most
/// `period * (1 - share)` for its turn, short enough for interactive work.
pub const DEFAULT_PERIOD_US: u32 = 50_000;
/// The shortest period accepted (1 ms: 10 us windows at 1%).
pub const MIN_PERIOD_US: u32 = 1_000;
/// The longest period accepted (1 s).
pub const MAX_PERIOD_US: u32 = 1_000_000;
/// A new vGPU's share: all of the GPU (scaled down when shares add up to
/// more than 100).
pub const DEFAULT_SHARE: u8 = 100;

/// The lowest priority level: best-effort work, which runs only in the time
/// every higher level leaves idle (Tencent qGPU's "offline").
pub const MIN_PRIORITY: u8 = 0;
/// The highest priority level.
pub const MAX_PRIORITY: u8 = 3;
/// A new vGPU's priority level: one above best-effort, so an admin can
/// demote batch work without touching anyone else, and promote online work
/// above everyone else's.
///
/// Four levels: two are what qGPU (online/offline) and HAMi offer; one
/// above "online" gives a critical tier (an inference SLO, system work)
/// that even online work yields to. A level is absolute (a higher level
/// that has work takes the GPU whatever the shares), so more levels would
/// give no finer control, only configurations harder to predict.
pub const DEFAULT_PRIORITY: u8 = 1;

/// How a GPU's time is divided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Each share is a cap: time nobody claims is left idle.
    Fixed,
    /// Idle vGPUs' shares go to busy ones, in proportion to their shares.
    WorkConserving,
}

impl Policy {
    /// The name sysfs shows and takes.
    pub const fn name(self) -> &'static str {
        match self {
            Policy::Fixed => "fixed",
            Policy::WorkConserving => "work-conserving",
        }
    }
}

/// `fixed` or `work-conserving`.
pub fn parse_policy(input: &[u8]) -> Result<Policy, ParseError> {
    match trim(input) {
        b"fixed" => Ok(Policy::Fixed),
        b"work-conserving" => Ok(Policy::WorkConserving),
        _ => Err(ParseError::Invalid),
    }
}

/// A share in percent of the GPU: `0` to `100`.
pub fn parse_share(input: &[u8]) -> Result<u8, ParseError> {
    match parse_u64(input)? {
        v @ 0..=100 => Ok(v as u8),
        _ => Err(ParseError::Range),
    }
}

/// A priority level, `MIN_PRIORITY..=MAX_PRIORITY`.
pub fn parse_priority(input: &[u8]) -> Result<u8, ParseError> {
    match parse_u64(input)? {
        v if v <= u64::from(MAX_PRIORITY) => Ok(v as u8),
        _ => Err(ParseError::Range),
    }
}

/// `0` (thawed) or `1` (frozen).
pub fn parse_frozen(input: &[u8]) -> Result<bool, ParseError> {
    match parse_u64(input)? {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(ParseError::Range),
    }
}

/// A period in microseconds, `MIN_PERIOD_US..=MAX_PERIOD_US`.
pub fn parse_period_us(input: &[u8]) -> Result<u32, ParseError> {
    let v = parse_u64(input)?;
    if v < u64::from(MIN_PERIOD_US) || v > u64::from(MAX_PERIOD_US) {
        return Err(ParseError::Range);
    }
    Ok(v as u32)
}

/// What the scheduler knows of one vGPU at the start of a period.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tenant {
    /// Its share, in percent.
    pub share: u8,
    /// Whether it has work: at least one TSG (or channel outside a TSG) that
    /// its owner has enabled, and is not frozen. A vGPU without is idle.
    pub busy: bool,
    /// Its priority level.
    pub level: u8,
}

/// Each tenant's target for one period of `period_ns`, into `out` (same
/// length as `tenants`); returns the idle target (the rest of the period).
///
/// - Fixed: a tenant's target is `period * share / max(100, sum)`, where
///   the sum runs over every tenant, busy or not, of every level: shares
///   that add up to more than 100 are scaled down, and a cap does not grow
///   when others idle. Idle tenants' targets are 0 (their time stays idle).
///   The caps fit in the period together, so levels change only the order
///   of the windows (higher levels first) and who may cut in (see the
///   scheduler).
/// - Work-conserving: the busy tenants of the highest level that has any
///   (with a share) split the whole period in proportion to their shares;
///   lower levels get nothing planned. What the higher level leaves idle
///   (its windows end when it runs dry) goes to the lower levels in the
///   periods that follow, planned the same way.
///
/// With every tenant at one level, both are the plain policies.
pub fn targets(policy: Policy, period_ns: u64, tenants: &[Tenant], out: &mut [u64]) -> u64 {
    for o in out.iter_mut() {
        *o = 0;
    }
    let sum_all: u64 = tenants.iter().map(|t| u64::from(t.share)).sum();
    let busy_at = |level: u8| {
        tenants
            .iter()
            .filter(move |t| t.busy && t.level == level)
            .map(|t| u64::from(t.share))
            .sum::<u64>()
    };
    let mut given = 0u64;
    match policy {
        Policy::Fixed => {
            let denom = sum_all.max(100);
            for (t, o) in tenants.iter().zip(out.iter_mut()) {
                if t.busy {
                    // share <= 100 and period <= 1 s in ns: no overflow.
                    *o = period_ns * u64::from(t.share) / denom;
                    given += *o;
                }
            }
        }
        Policy::WorkConserving => {
            let top = (MIN_PRIORITY..=MAX_PRIORITY)
                .rev()
                .find(|&l| busy_at(l) > 0);
            if let Some(level) = top {
                let denom = busy_at(level);
                for (t, o) in tenants.iter().zip(out.iter_mut()) {
                    if t.busy && t.level == level {
                        *o = period_ns * u64::from(t.share) / denom;
                        given += *o;
                    }
                }
            }
        }
    }
    period_ns.saturating_sub(given)
}

/// The window to give for `target` ns when `debt` ns are owed (negative:
/// overrun).
pub fn window(target: u64, debt: i64) -> u64 {
    if debt >= 0 {
        target.saturating_add(debt as u64)
    } else {
        target.saturating_sub(debt.unsigned_abs())
    }
}

/// Carries over what a window of `target` ns (plus `debt`) really lasted
/// (`actual` ns). The debt is kept within one period either way, so a long
/// stall (a suspended VM, a debugger) is not paid back as a burst.
pub fn settle(debt: &mut i64, target: u64, actual: u64, period_ns: u64) {
    let bound = i64::try_from(period_ns).unwrap_or(i64::MAX);
    let owed = i128::from(*debt) + i128::from(target) - i128::from(actual);
    *debt = owed.clamp(-i128::from(bound), i128::from(bound)) as i64;
}

/// Microseconds from nanoseconds, for the sysfs counters.
pub const fn us(ns: u64) -> u64 {
    ns / 1000
}
