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
    /// its owner has enabled. A vGPU without is idle.
    pub busy: bool,
}

/// Each tenant's target for one period of `period_ns`, into `out` (same
/// length as `tenants`); returns the idle target (the rest of the period).
///
/// - Fixed: a tenant's target is `period * share / max(100, sum)`, where
///   the sum runs over every tenant, busy or not: shares that add up to more
///   than 100 are scaled down, and a cap does not grow when others idle.
///   Idle tenants' targets are 0 (their time stays idle).
/// - Work-conserving: busy tenants split the whole period in proportion to
///   their shares; nothing is left idle while a busy tenant has a share.
pub fn targets(policy: Policy, period_ns: u64, tenants: &[Tenant], out: &mut [u64]) -> u64 {
    let sum_all: u64 = tenants.iter().map(|t| u64::from(t.share)).sum();
    let sum_busy: u64 = tenants
        .iter()
        .filter(|t| t.busy)
        .map(|t| u64::from(t.share))
        .sum();
    let denom = match policy {
        Policy::Fixed => sum_all.max(100),
        Policy::WorkConserving => sum_busy,
    };
    let mut given = 0u64;
    for (t, o) in tenants.iter().zip(out.iter_mut()) {
        *o = if t.busy && denom > 0 {
            // share <= 100 and period <= 1 s in ns: no overflow in u64.
            period_ns * u64::from(t.share) / denom
        } else {
            0
        };
        given += *o;
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
