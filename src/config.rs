// SPDX-License-Identifier: GPL-2.0

//! Parsing what admins write to vgpu's sysfs files.
//!
//! core-only: built into `vgpu.ko` and by the host test crate. Every parser
//! takes the raw bytes of a `store` (which usually end with a newline from
//! `echo`) and accepts exactly one value; anything else is an error, so a
//! typo never half-applies.

/// Why a value was refused. Each maps to an errno in the module (`EINVAL`,
/// `ERANGE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// Not of the expected form (`EINVAL`).
    Invalid,
    /// Of the right form but out of range (`ERANGE`).
    Range,
}

/// The longest cgroup path accepted (`PATH_MAX` less the NUL).
pub const CGROUP_PATH_MAX: usize = 4095;

/// The value written, without one trailing newline.
pub fn trim(input: &[u8]) -> &[u8] {
    input.strip_suffix(b"\n").unwrap_or(input)
}

/// A decimal `u64`: digits only, no sign, no spaces, no empty string.
pub fn parse_u64(input: &[u8]) -> Result<u64, ParseError> {
    let s = trim(input);
    if s.is_empty() {
        return Err(ParseError::Invalid);
    }
    let mut v: u64 = 0;
    for &c in s {
        if !c.is_ascii_digit() {
            return Err(ParseError::Invalid);
        }
        v = v
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(c - b'0')))
            .ok_or(ParseError::Range)?;
    }
    Ok(v)
}

/// A decimal `u32` in `0..=max`.
pub fn parse_index(input: &[u8], max: u32) -> Result<u32, ParseError> {
    let v = parse_u64(input)?;
    if v > u64::from(max) {
        return Err(ParseError::Range);
    }
    Ok(v as u32)
}

/// A memory limit in bytes, or `max` for none (returned as `u64::MAX`), the
/// way cgroup v2 writes its limits.
pub fn parse_limit(input: &[u8]) -> Result<u64, ParseError> {
    if trim(input) == b"max" {
        return Ok(u64::MAX);
    }
    parse_u64(input)
}

/// A cgroup v2 path relative to the cgroup2 root: `/` alone, or `/`-separated
/// names, each non-empty and neither `.` nor `..`; no NUL, no trailing `/`.
/// An empty write unbinds (returned as an empty slice).
pub fn parse_cgroup_path(input: &[u8]) -> Result<&[u8], ParseError> {
    let s = trim(input);
    if s.is_empty() {
        return Ok(s);
    }
    if s.len() > CGROUP_PATH_MAX {
        return Err(ParseError::Range);
    }
    if s[0] != b'/' || s.contains(&0) {
        return Err(ParseError::Invalid);
    }
    if s == b"/" {
        return Ok(s);
    }
    for part in s[1..].split(|&c| c == b'/') {
        if part.is_empty() || part == b"." || part == b".." || part.contains(&b'\n') {
            return Err(ParseError::Invalid);
        }
    }
    Ok(s)
}

/// Whether cgroup `path` is `bound` or below it (both as accepted by
/// [`parse_cgroup_path`]). An empty `bound` (unbound) contains nothing.
pub fn cgroup_contains(bound: &[u8], path: &[u8]) -> bool {
    if bound.is_empty() {
        return false;
    }
    if bound == b"/" {
        return path.first() == Some(&b'/');
    }
    path.starts_with(bound) && matches!(path.get(bound.len()), None | Some(b'/'))
}
