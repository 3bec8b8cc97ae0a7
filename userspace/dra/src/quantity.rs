// SPDX-License-Identifier: GPL-2.0

//! Kubernetes quantities (`k8s.io/apimachinery/pkg/api/resource`,
//! `Quantity`): a decimal number with an optional binary (`Ki`..`Ei`),
//! decimal (`k`, `M`..`E`, `m`) or exponent (`e3`, `E3`) suffix. The
//! plugin reads whole numbers only (bytes, percent): a quantity that is
//! not a whole number, negative or over `u64` is refused.

/// The whole number `q` stands for, or `None`.
pub fn parse_whole(q: &str) -> Option<u64> {
    let q = q.trim();
    let split = q
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+'))
        .unwrap_or(q.len());
    let (num, suffix) = q.split_at(split);
    let num = num.strip_prefix('+').unwrap_or(num);
    if num.is_empty() || num.starts_with('.') && num.len() == 1 {
        return None;
    }
    let (int, frac) = match num.split_once('.') {
        Some((i, f)) => (i, f),
        None => (num, ""),
    };
    if !int.chars().all(|c| c.is_ascii_digit()) || !frac.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    // value = digits * 10^-frac.len() * base^exp
    let digits: u128 = format!("{int}{frac}").parse().ok()?;
    let (mul, div_pow10): (u128, u32) = match suffix {
        "" => (1, 0),
        "Ki" => (1 << 10, 0),
        "Mi" => (1 << 20, 0),
        "Gi" => (1 << 30, 0),
        "Ti" => (1 << 40, 0),
        "Pi" => (1 << 50, 0),
        "Ei" => (1 << 60, 0),
        "m" => (1, 3),
        "k" => (1_000, 0),
        "M" => (1_000_000, 0),
        "G" => (1_000_000_000, 0),
        "T" => (1_000_000_000_000, 0),
        "P" => (1_000_000_000_000_000, 0),
        "E" => (1_000_000_000_000_000_000, 0),
        s if s.starts_with(['e', 'E']) => {
            let e: u32 = s[1..].parse().ok()?;
            (10u128.checked_pow(e)?, 0)
        }
        _ => return None,
    };
    let scaled = digits.checked_mul(mul)?;
    let div = 10u128.checked_pow(frac.len() as u32 + div_pow10)?;
    if scaled % div != 0 {
        return None;
    }
    u64::try_from(scaled / div).ok()
}

/// `bytes` as a quantity: `Gi` or `Mi` when exact, plain bytes otherwise.
pub fn format_bytes(bytes: u64) -> String {
    const MI: u64 = 1 << 20;
    const GI: u64 = 1 << 30;
    if bytes > 0 && bytes.is_multiple_of(GI) {
        format!("{}Gi", bytes / GI)
    } else if bytes > 0 && bytes.is_multiple_of(MI) {
        format!("{}Mi", bytes / MI)
    } else {
        bytes.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_numbers() {
        assert_eq!(parse_whole("30"), Some(30));
        assert_eq!(parse_whole("2Gi"), Some(2 << 30));
        assert_eq!(parse_whole("1.5Gi"), Some(3 << 29));
        assert_eq!(parse_whole("512Mi"), Some(512 << 20));
        assert_eq!(parse_whole("2G"), Some(2_000_000_000));
        assert_eq!(parse_whole("1e3"), Some(1000));
        assert_eq!(parse_whole("30000m"), Some(30));
        assert_eq!(parse_whole("+4k"), Some(4000));
    }

    #[test]
    fn refused() {
        for q in [
            "",
            "-1",
            "1.5",
            "30500m",
            "2GiB",
            "Gi",
            "1e",
            "99999999999Ei",
            "1..2",
            ".",
        ] {
            assert_eq!(parse_whole(q), None, "{q:?}");
        }
    }

    #[test]
    fn formats() {
        assert_eq!(format_bytes(2 << 30), "2Gi");
        assert_eq!(format_bytes(768 << 20), "768Mi");
        assert_eq!(format_bytes(1000), "1000");
        assert_eq!(format_bytes(0), "0");
        for b in [1u64 << 20, 3 << 29, 12345, 80 << 30] {
            assert_eq!(parse_whole(&format_bytes(b)), Some(b));
        }
    }
}
