//! Sizes in `src/`: no Rust or C file over 800 lines, and no Rust function
//! over 100 lines (issue 36: a file that size mixes concerns, a function
//! that long does several things). Functions are measured by counting
//! braces from the line that declares them, outside comments, strings and
//! character literals.

mod common;
use common::functions;
use std::path::{Path, PathBuf};

const FILE_MAX: usize = 800;
const FN_MAX: usize = 100;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../src")
}

/// Every file under `src/` with one of `exts`, relative to `src/`.
fn files(exts: &[&str]) -> Vec<(String, String)> {
    fn walk(dir: &Path, base: &Path, exts: &[&str], out: &mut Vec<(String, String)>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, base, exts, out);
            } else if p.extension().is_some_and(|x| exts.iter().any(|e| x == *e)) {
                let name = p.strip_prefix(base).unwrap().to_string_lossy().into_owned();
                out.push((name, std::fs::read_to_string(&p).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(&src(), &src(), exts, &mut out);
    out.sort();
    out
}

#[test]
fn no_file_is_over_800_lines() {
    let big: Vec<_> = files(&["rs", "c", "h"])
        .into_iter()
        .map(|(f, t)| (f, t.lines().count()))
        .filter(|(_, n)| *n > FILE_MAX)
        .collect();
    assert!(big.is_empty(), "files over {FILE_MAX} lines: {big:?}");
}

#[test]
fn no_function_is_over_100_lines() {
    let mut long = Vec::new();
    for (f, t) in files(&["rs"]) {
        for (name, line, n) in functions(&t) {
            if n > FN_MAX {
                long.push(format!("{f}:{line} {name} ({n} lines)"));
            }
        }
    }
    assert!(long.is_empty(), "functions over {FN_MAX} lines: {long:?}");
}

#[test]
fn the_measure_sees_a_function() {
    let text = "pub(crate) fn a(x: u32) -> u32 {\n    let s = \"}\";\n    if x > 0 {\n        x // }\n    } else {\n        '{' as u32\n    }\n}\nfn b();\nconst fn c<'a>(x: &'a u8) -> &'a u8 { x }\n";
    assert_eq!(
        functions(text),
        vec![("a".to_owned(), 1, 8), ("c".to_owned(), 10, 1)]
    );
}
