// SPDX-License-Identifier: GPL-2.0

//! Host tests of sysfs value parsing (src/config.rs).

use vgpu_logic::config::*;

#[test]
fn u64_accepts_digits_and_one_newline() {
    assert_eq!(parse_u64(b"0"), Ok(0));
    assert_eq!(parse_u64(b"1073741824\n"), Ok(1 << 30));
    assert_eq!(parse_u64(b"18446744073709551615"), Ok(u64::MAX));
}

#[test]
fn u64_refuses_garbage() {
    for bad in [
        &b""[..],
        b"\n",
        b"-1",
        b"+1",
        b" 1",
        b"1 ",
        b"1\n\n",
        b"0x10",
        b"1e9",
        b"12a",
        b"\x001",
    ] {
        assert_eq!(parse_u64(bad), Err(ParseError::Invalid), "{bad:?}");
    }
    assert_eq!(parse_u64(b"18446744073709551616"), Err(ParseError::Range));
    assert_eq!(
        parse_u64(b"99999999999999999999999"),
        Err(ParseError::Range)
    );
}

#[test]
fn index_is_bounded() {
    assert_eq!(parse_index(b"7\n", 7), Ok(7));
    assert_eq!(parse_index(b"8", 7), Err(ParseError::Range));
    assert_eq!(parse_index(b"x", 7), Err(ParseError::Invalid));
}

#[test]
fn limit_takes_bytes_or_max() {
    assert_eq!(parse_limit(b"max\n"), Ok(u64::MAX));
    assert_eq!(parse_limit(b"4096"), Ok(4096));
    assert_eq!(parse_limit(b"MAX"), Err(ParseError::Invalid));
    assert_eq!(parse_limit(b"1GiB"), Err(ParseError::Invalid));
}

#[test]
fn cgroup_paths() {
    assert_eq!(parse_cgroup_path(b"/a/b\n"), Ok(&b"/a/b"[..]));
    assert_eq!(parse_cgroup_path(b"/"), Ok(&b"/"[..]));
    assert_eq!(parse_cgroup_path(b"\n"), Ok(&b""[..]));
    for bad in [
        &b"a/b"[..],
        b"/a/",
        b"//a",
        b"/a//b",
        b"/a/../b",
        b"/./a",
        b"/a\0b",
        b"/a\nb",
    ] {
        assert_eq!(parse_cgroup_path(bad), Err(ParseError::Invalid), "{bad:?}");
    }
    let long = [b'/'; 1]
        .iter()
        .chain([b'x'; 5000].iter())
        .copied()
        .collect::<Vec<u8>>();
    assert_eq!(parse_cgroup_path(&long), Err(ParseError::Range));
}

#[test]
fn cgroup_containment_respects_name_boundaries() {
    assert!(cgroup_contains(b"/pods/a", b"/pods/a"));
    assert!(cgroup_contains(b"/pods/a", b"/pods/a/c1"));
    assert!(!cgroup_contains(b"/pods/a", b"/pods/ab"));
    assert!(!cgroup_contains(b"/pods/a", b"/pods"));
    assert!(cgroup_contains(b"/", b"/anything"));
    assert!(!cgroup_contains(b"", b"/pods/a"));
}
