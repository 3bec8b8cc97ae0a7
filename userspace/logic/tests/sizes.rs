//! Sizes in `src/`: no Rust or C file over 800 lines, and no Rust function
//! over 100 lines (issue 36: a file that size mixes concerns, a function
//! that long does several things). Functions are measured by counting
//! braces from the line that declares them, outside comments, strings and
//! character literals.

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

/// The line's code: no `//` comment, no string or character literal.
fn code(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => break,
            '"' => {
                while let Some(d) = chars.next() {
                    match d {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
            }
            // A character literal ('{', '\''), not a lifetime ('a).
            '\'' => {
                let rest: String = chars.clone().take(3).collect();
                if rest.starts_with('\\') {
                    chars.nth(2);
                } else if rest.chars().nth(1) == Some('\'') {
                    chars.nth(1);
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// The name of the function a line declares, if it declares one.
fn declares(code: &str) -> Option<String> {
    let mut words = code.split_whitespace().peekable();
    while let Some(w) = words.next() {
        if w == "fn" {
            let name = words.next()?;
            let end = name.find(|c: char| !(c.is_alphanumeric() || c == '_'));
            return Some(name[..end.unwrap_or(name.len())].to_owned());
        }
        let prefix =
            w.starts_with("pub") || ["const", "unsafe", "extern", "async", "\"C\""].contains(&w);
        if !prefix {
            return None;
        }
    }
    None
}

/// Every function of `text` and its length in lines (declaration to
/// closing brace); declarations without a body are skipped.
fn functions(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<String> = text.lines().map(code).collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let Some(name) = declares(l) else {
            continue;
        };
        let mut depth = 0i64;
        let mut opened = false;
        for (j, m) in lines.iter().enumerate().skip(i) {
            for c in m.chars() {
                match c {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth -= 1,
                    ';' if !opened && depth == 0 => break,
                    _ => {}
                }
            }
            if !opened && m.contains(';') {
                break;
            }
            if opened && depth <= 0 {
                out.push((name.clone(), i + 1, j - i + 1));
                break;
            }
        }
    }
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
