// SPDX-License-Identifier: GPL-2.0

//! Parsing and printing of sizes (`6GiB`, `1.5GiB`, `512MiB`, bytes, `max`),
//! compute shares (`30%`) and times in microseconds (`50 ms`).

use crate::error::{Error, Result};

/// A memory limit: bytes, or no limit (`max`, as sysfs and cgroup v2 write it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// At most this many bytes.
    Bytes(u64),
    /// No limit.
    Max,
}

impl Limit {
    /// The value as written to `memory_limit`.
    pub fn sysfs(self) -> String {
        match self {
            Limit::Bytes(b) => b.to_string(),
            Limit::Max => "max".to_string(),
        }
    }

    /// Bytes, or `None` for no limit.
    pub fn bytes(self) -> Option<u64> {
        match self {
            Limit::Bytes(b) => Some(b),
            Limit::Max => None,
        }
    }
}

/// Multipliers of the accepted unit suffixes (case-insensitive): IEC
/// binary units (`KiB`, `Ki`, ...), SI decimal ones (`kB`, `k`, ...) as in
/// Kubernetes quantities, and `B` or nothing for bytes.
const UNITS: &[(&str, u64)] = &[
    ("", 1),
    ("b", 1),
    ("kib", 1 << 10),
    ("ki", 1 << 10),
    ("mib", 1 << 20),
    ("mi", 1 << 20),
    ("gib", 1 << 30),
    ("gi", 1 << 30),
    ("tib", 1 << 40),
    ("ti", 1 << 40),
    ("kb", 1_000),
    ("k", 1_000),
    ("mb", 1_000_000),
    ("m", 1_000_000),
    ("gb", 1_000_000_000),
    ("g", 1_000_000_000),
    ("tb", 1_000_000_000_000),
    ("t", 1_000_000_000_000),
];

/// Parses a size: a decimal number (fraction allowed: `1.5GiB`) with an
/// optional unit, or `max`. Fractions of a byte are rounded down.
pub fn parse_size(s: &str) -> Result<Limit> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("max") {
        return Ok(Limit::Max);
    }
    parse_bytes(t).map(Limit::Bytes)
}

/// Parses a size that must be a number of bytes (no `max`).
pub fn parse_bytes(s: &str) -> Result<u64> {
    let bad = || {
        Error::BadValue(format!(
            "{s:?} is not a size (e.g. 6GiB, 1.5GiB, 512MiB, 1000000)"
        ))
    };
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let unit = unit.trim().to_ascii_lowercase();
    let mult = UNITS
        .iter()
        .find(|(u, _)| *u == unit)
        .map(|&(_, m)| m)
        .ok_or_else(bad)?;
    let (int, frac) = match num.split_once('.') {
        Some((i, f)) => (i, f),
        None => (num, ""),
    };
    if int.is_empty() && frac.is_empty() {
        return Err(bad());
    }
    if !int.chars().chain(frac.chars()).all(|c| c.is_ascii_digit()) || frac.len() > 18 {
        return Err(bad());
    }
    let too_big = || Error::BadValue(format!("{s:?} is too large"));
    let int_v: u128 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| too_big())?
    };
    let frac_v: u128 = if frac.is_empty() {
        0
    } else {
        frac.parse().map_err(|_| bad())?
    };
    let scale = 10u128.pow(frac.len() as u32);
    let total = int_v
        .checked_mul(scale)
        .and_then(|v| v.checked_add(frac_v))
        .and_then(|v| v.checked_mul(u128::from(mult)))
        .ok_or_else(too_big)?
        / scale;
    u64::try_from(total).map_err(|_| too_big())
}

/// Parses a compute share in percent: `30%` or `30`, at most `max`.
pub fn parse_share(s: &str, max: u32) -> Result<u32> {
    let t = s.trim();
    let digits = t.strip_suffix('%').unwrap_or(t).trim();
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return Err(Error::BadValue(format!(
            "{s:?} is not a compute share (a whole percentage, e.g. 30%)"
        )));
    }
    let v: u32 = digits
        .parse()
        .map_err(|_| Error::BadValue(format!("{s:?} is too large")))?;
    if v > max {
        return Err(Error::BadValue(format!(
            "compute share {v}% is over {max}%"
        )));
    }
    Ok(v)
}

/// Prints bytes for people: `6 GiB`, `1.5 GiB`, `512 MiB`, `100 B`.
pub fn format_bytes(b: u64) -> String {
    const NAMES: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut unit = 0;
    while unit + 1 < NAMES.len() && b >= 1u64 << (10 * (unit + 1)) {
        unit += 1;
    }
    if unit == 0 {
        return format!("{b} B");
    }
    let v = b as f64 / (1u64 << (10 * unit)) as f64;
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s} {}", NAMES[unit])
}

/// Prints a limit for people (`max` for none).
pub fn format_limit(l: Limit) -> String {
    match l {
        Limit::Bytes(b) => format_bytes(b),
        Limit::Max => "max".to_string(),
    }
}

/// Prints microseconds for people, in the largest unit that is at least 1
/// (`250 us`, `50 ms`, `1.5 s`), with at most 3 decimals, rounded down.
pub fn format_us(us: u64) -> String {
    let (div, unit): (u64, &str) = match us {
        0 => return "0 s".to_string(),
        1..=999 => return format!("{us} us"),
        1_000..=999_999 => (1_000, "ms"),
        _ => (1_000_000, "s"),
    };
    let milli = (us % div) * 1000 / div;
    let frac = format!("{milli:03}");
    let frac = frac.trim_end_matches('0');
    if frac.is_empty() {
        format!("{} {unit}", us / div)
    } else {
        format!("{}.{frac} {unit}", us / div)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("512MiB").unwrap(), Limit::Bytes(512 << 20));
        assert_eq!(parse_size("6GiB").unwrap(), Limit::Bytes(6 << 30));
        assert_eq!(parse_size("6gib").unwrap(), Limit::Bytes(6 << 30));
        assert_eq!(parse_size("6Gi").unwrap(), Limit::Bytes(6 << 30));
        assert_eq!(parse_size("1.5GiB").unwrap(), Limit::Bytes(3 << 29));
        assert_eq!(parse_size(".5KiB").unwrap(), Limit::Bytes(512));
        assert_eq!(parse_size("1000000").unwrap(), Limit::Bytes(1_000_000));
        assert_eq!(parse_size("4096B").unwrap(), Limit::Bytes(4096));
        assert_eq!(parse_size("2GB").unwrap(), Limit::Bytes(2_000_000_000));
        assert_eq!(parse_size("2 GiB").unwrap(), Limit::Bytes(2 << 30));
        assert_eq!(parse_size("max").unwrap(), Limit::Max);
        assert_eq!(parse_size("MAX").unwrap(), Limit::Max);
        // Fractions of a byte round down.
        assert_eq!(parse_size("0.1KiB").unwrap(), Limit::Bytes(102));
        assert_eq!(parse_size("16TiB").unwrap(), Limit::Bytes(16 << 40));
    }

    #[test]
    fn bad_sizes() {
        for s in [
            "", "GiB", "-1", "1.2.3GiB", "6 XiB", "abc", "1e9", ".", "6GiBs", "0x10",
        ] {
            let e = parse_size(s).unwrap_err();
            assert!(matches!(e, Error::BadValue(_)), "{s}: {e}");
        }
        assert!(parse_size("99999999999TiB").is_err());
        assert!(parse_size("18446744073709551616").is_err());
        assert_eq!(
            parse_size("18446744073709551615").unwrap(),
            Limit::Bytes(u64::MAX)
        );
    }

    #[test]
    fn shares() {
        assert_eq!(parse_share("30%", 100).unwrap(), 30);
        assert_eq!(parse_share("30", 100).unwrap(), 30);
        assert_eq!(parse_share("0%", 100).unwrap(), 0);
        assert_eq!(parse_share("100%", 100).unwrap(), 100);
        assert_eq!(parse_share("240%", 300).unwrap(), 240);
        assert!(parse_share("101%", 100).is_err());
        assert!(parse_share("30.5%", 100).is_err());
        assert!(parse_share("-3%", 100).is_err());
        assert!(parse_share("%", 100).is_err());
        assert!(parse_share("99999999999%", 100).is_err());
    }

    #[test]
    fn printing() {
        assert_eq!(format_bytes(6 << 30), "6 GiB");
        assert_eq!(format_bytes(3 << 29), "1.5 GiB");
        assert_eq!(format_bytes(512 << 20), "512 MiB");
        assert_eq!(format_bytes(100), "100 B");
        assert_eq!(format_bytes(0), "0 B");
        assert_eq!(format_limit(Limit::Max), "max");
        assert_eq!(format_us(0), "0 s");
        assert_eq!(format_us(250), "250 us");
        assert_eq!(format_us(1_000), "1 ms");
        assert_eq!(format_us(1_500), "1.5 ms");
        assert_eq!(format_us(50_000), "50 ms");
        assert_eq!(format_us(999_999), "999.999 ms");
        assert_eq!(format_us(1_000_000), "1 s");
        assert_eq!(format_us(1_234_567), "1.234 s");
        assert_eq!(format_us(3_600_000_000), "3600 s");
        assert_eq!(format_us(u64::MAX), "18446744073709.551 s");
    }
}
