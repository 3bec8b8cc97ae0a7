//! The driver double (`selftests/nvidia/`) is built like `src/`: its files
//! form layers with no import loop, no file is over 800 lines and no
//! function over 100.
//!
//! The graph: an edge from a file to each file it names through `crate::`,
//! `super::` or `self::` paths, and from a parent to a child module it calls
//! by its bare name (`table::ESCAPES`). Not edges: `mod` declarations, the
//! root module type named as a file operations' `OwnerModule` (a type the
//! kernel's `try_module_get` needs, not a call), and the shared code the
//! double includes from `src/` by `#[path]` (`kapi`, `nv`): layered by
//! `layers.rs`, and it names nothing of the double.

mod common;
use common::{find_cycle, functions};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const ROOT: &str = "nvidia_main.rs";
const MAX_FILE_LINES: usize = 800;
const MAX_FN_LINES: usize = 100;

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../selftests/nvidia")
}

/// Every file under the double's folder, relative to it.
fn all_files() -> Vec<String> {
    fn walk(d: &Path, base: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, base, out);
            } else {
                out.push(p.strip_prefix(base).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    let mut out = Vec::new();
    walk(&dir(), &dir(), &mut out);
    out.sort();
    out
}

fn rust_files() -> Vec<String> {
    all_files()
        .into_iter()
        .filter(|f| f.ends_with(".rs"))
        .collect()
}

fn read(f: &str) -> String {
    std::fs::read_to_string(dir().join(f)).unwrap()
}

fn at(c: &[char], i: usize) -> Option<char> {
    c.get(i).copied()
}

/// `text` with comments, string and char literals blanked (newlines kept),
/// so that braces and paths are counted in code only.
fn code_only(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |ch: char| if ch == '\n' { '\n' } else { ' ' };
    while i < c.len() {
        if c[i] == '/' && at(&c, i + 1) == Some('/') {
            while i < c.len() && c[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c[i] == '/' && at(&c, i + 1) == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && at(&c, i + 1) == Some('*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if c[i] == '*' && at(&c, i + 1) == Some('/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(c[i]));
                    i += 1;
                }
            }
        } else if c[i] == 'r'
            && (at(&c, i + 1) == Some('"')
                || (at(&c, i + 1) == Some('#') && at(&c, i + 2) == Some('"')))
            && !c
                .get(i.wrapping_sub(1))
                .is_some_and(|p| p.is_alphanumeric() || *p == '_')
        {
            // A raw string: r"..." or r#"..."#.
            let hashes = if at(&c, i + 1) == Some('#') { 1 } else { 0 };
            let mut close = String::from("\"");
            close.push_str(&"#".repeat(hashes));
            let skip = 2 + hashes;
            out.push_str(&" ".repeat(skip));
            i += skip;
            while i < c.len() {
                let s: String = c[i..(i + close.len()).min(c.len())].iter().collect();
                if s == close {
                    out.push_str(&" ".repeat(close.len()));
                    i += close.len();
                    break;
                }
                out.push(blank(c[i]));
                i += 1;
            }
        } else if c[i] == '"' {
            out.push(' ');
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < c.len() {
                    out.push(blank(c[i]));
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if c[i] == '\'' && (at(&c, i + 2) == Some('\'') || at(&c, i + 1) == Some('\\')) {
            // A char literal ('x', '\n', '\u{7f}'); a lifetime has no
            // closing quote.
            out.push(' ');
            i += 1;
            if c[i] == '\\' {
                out.push(' ');
                i += 1;
            }
            while i < c.len() && c[i] != '\'' {
                out.push(' ');
                i += 1;
            }
            out.push(' ');
            i += 1;
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// The module path of a file (`rm/alloc.rs` -> `["rm", "alloc"]`; the root
/// -> `[]`).
fn module_of(file: &str) -> Vec<String> {
    if file == ROOT {
        return Vec::new();
    }
    let mut parts: Vec<String> = file
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_owned)
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The file that holds module path `m`, or the closest ancestor that exists.
fn file_of(m: &[String], all: &BTreeSet<String>) -> String {
    for n in (1..=m.len()).rev() {
        let p = m[..n].join("/");
        for cand in [format!("{p}.rs"), format!("{p}/mod.rs")] {
            if all.contains(&cand) {
                return cand;
            }
        }
    }
    ROOT.to_owned()
}

/// The modules the root takes from `src/` (`#[path = "../../src/..."]`, and
/// the inline `mod kapi` that renames them).
fn shared_modules() -> BTreeSet<String> {
    let text = read(ROOT);
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let mut out = BTreeSet::new();
    for (i, l) in lines.iter().enumerate() {
        if l.starts_with("#[path = \"../../src/") {
            if let Some(m) = lines[i + 1..].iter().find_map(|n| mod_name(n)) {
                out.insert(m);
            }
        }
        if let Some(m) = l.strip_prefix("mod ").and_then(|m| m.strip_suffix(" {")) {
            out.insert(m.trim().to_owned());
        }
    }
    out
}

fn mod_name(l: &str) -> Option<String> {
    let l = l.trim();
    let l = l
        .strip_prefix("pub(crate) ")
        .or_else(|| l.strip_prefix("pub "))
        .unwrap_or(l);
    Some(l.strip_prefix("mod ")?.strip_suffix(';')?.trim().to_owned())
}

/// Paths named in code: `(prefix, path)` for `crate::a::b`, `super::a`,
/// `self::a`, each item of a braced group named separately.
fn references(code: &str) -> Vec<(&'static str, Vec<String>)> {
    let code: String = code
        .lines()
        .filter(|l| !l.contains("type OwnerModule = crate::"))
        .collect::<Vec<_>>()
        .join(" ");
    let mut out = Vec::new();
    for prefix in ["crate::", "super::", "self::"] {
        let mut rest = code.as_str();
        while let Some(i) = rest.find(prefix) {
            let before = rest[..i].chars().last();
            rest = &rest[i + prefix.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let mut path = Vec::new();
            let mut r = rest;
            loop {
                let end = r
                    .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .unwrap_or(r.len());
                if end == 0 {
                    break;
                }
                path.push(r[..end].to_owned());
                r = &r[end..];
                if let Some(n) = r.strip_prefix("::") {
                    r = n;
                } else {
                    break;
                }
            }
            if r.starts_with('{') {
                for item in braced(r) {
                    let mut p = path.clone();
                    p.push(item);
                    out.push((prefix, p));
                }
            }
            out.push((prefix, path));
        }
    }
    out
}

/// The first segment of each item of the group `r` starts with
/// (`{b, c::{d}, self}` -> `b`, `c`).
fn braced(r: &str) -> Vec<String> {
    let mut depth = 0;
    let mut items = vec![String::new()];
    for ch in r.chars() {
        match ch {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            ',' if depth == 1 => items.push(String::new()),
            _ => {}
        }
        if (depth >= 1 && ch != '{') || depth > 1 {
            if let Some(last) = items.last_mut() {
                last.push(ch);
            }
        }
    }
    items
        .iter()
        .map(|i| {
            let i = i.trim().trim_start_matches(',').trim();
            i.split("::").next().unwrap_or("").trim().to_owned()
        })
        .filter(|i| !i.is_empty() && i != "self")
        .collect()
}

/// The file-level import graph of the double.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let list = rust_files();
    let all: BTreeSet<String> = list.iter().cloned().collect();
    let shared = shared_modules();
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &list {
        let text = read(f);
        let code = code_only(&text);
        let me = module_of(f);
        let edges = g.entry(f.clone()).or_default();
        let add = |target: Vec<String>, edges: &mut BTreeSet<String>| {
            if target.first().is_some_and(|m| shared.contains(m)) {
                return;
            }
            let to = file_of(&target, &all);
            if to != *f {
                edges.insert(to);
            }
        };
        for (prefix, path) in references(&code) {
            let target = match prefix {
                "crate::" => path,
                // `self::x` in `a/mod.rs` is `a::x`; in `a/b.rs`, `a::b::x`.
                "self::" => me.iter().cloned().chain(path).collect(),
                // `super::x` from `a/b.rs` is `a::x`; from `a/mod.rs` (or a
                // top-level file) the level above.
                _ => {
                    let mut parent = me.clone();
                    parent.pop();
                    parent.extend(path);
                    parent
                }
            };
            add(target, edges);
        }
        // A parent's calls into its children by their bare names.
        for child in code.lines().filter_map(mod_name) {
            let used = code.lines().any(|l| {
                mod_name(l).is_none() && l.contains(&format!("{child}::")) && {
                    // `crate::x::child::` is counted above; a bare name only.
                    l.split(&format!("{child}::")).next().is_some_and(|b| {
                        !b.ends_with("::")
                            && !b.ends_with(|c: char| c.is_alphanumeric() || c == '_')
                    })
                }
            });
            if used {
                let mut m = me.clone();
                m.push(child);
                add(m, edges);
            }
        }
    }
    g
}

#[test]
fn the_double_has_no_import_loop() {
    let g = graph();
    if let Some(ring) = find_cycle(&g) {
        panic!(
            "selftests/nvidia/ has an import loop: {}",
            ring.join(" -> ")
        );
    }
}

#[test]
fn no_file_of_the_double_is_over_800_lines() {
    let big: Vec<String> = all_files()
        .iter()
        .map(|f| (f, read(f).lines().count()))
        .filter(|(_, n)| *n > MAX_FILE_LINES)
        .map(|(f, n)| format!("{f} ({n})"))
        .collect();
    assert!(
        big.is_empty(),
        "over {MAX_FILE_LINES} lines: {}",
        big.join(", ")
    );
}

#[test]
fn no_function_of_the_double_is_over_100_lines() {
    let mut long = Vec::new();
    for f in rust_files() {
        for (name, line, n) in functions(&code_only(&read(&f))) {
            if n > MAX_FN_LINES {
                long.push(format!("{f}:{line} {name} ({n})"));
            }
        }
    }
    assert!(
        long.is_empty(),
        "over {MAX_FN_LINES} lines: {}",
        long.join(", ")
    );
}

#[test]
fn the_checks_see_what_they_look_for() {
    // A ring of three is found, a chain is not.
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut e = |a: &str, b: &str| {
        g.entry(a.into()).or_default().insert(b.into());
    };
    e("a", "b");
    e("b", "c");
    let chain = g.clone();
    assert!(find_cycle(&chain).is_none());
    g.entry("c".into()).or_default().insert("a".into());
    assert_eq!(find_cycle(&g).map(|r| r.len()), Some(4));
    // Paths in braces, `super::` and `self::`; none in comments or strings.
    let code = code_only(
        "use crate::rm::{alloc, table::Row};\n// crate::uvm::x\nlet s = \"crate::engine\";\n\
         let c = '{';\nlet x = super::ctx::Ctx; use self::t::T;",
    );
    let r = references(&code);
    assert!(r.contains(&("crate::", vec!["rm".into(), "alloc".into()])));
    assert!(r.contains(&("crate::", vec!["rm".into(), "table".into()])));
    assert!(r.contains(&("super::", vec!["ctx".into(), "Ctx".into()])));
    assert!(r.contains(&("self::", vec!["t".into(), "T".into()])));
    assert!(!r
        .iter()
        .any(|(_, p)| p.first().is_some_and(|m| m == "uvm" || m == "engine")));
    // A function's length counts its lines; braces in literals do not count.
    let f = functions(&code_only(
        "fn a() {\n    let c = '}';\n    let s = \"}\";\n}\nextern \"C\" {\n    fn b();\n}\n",
    ));
    assert_eq!(f, vec![("a".to_owned(), 1, 4)]);
}

/// Prints the double's layers (`cargo test -p vgpu-logic --test
/// double_layers -- --nocapture print_double_layers`): each file after
/// everything it uses.
#[test]
fn print_double_layers() {
    let g = graph();
    fn depth(n: &str, g: &BTreeMap<String, BTreeSet<String>>, seen: &mut Vec<String>) -> usize {
        if seen.iter().any(|s| s == n) {
            return 0;
        }
        seen.push(n.to_owned());
        let d = g
            .get(n)
            .into_iter()
            .flatten()
            .map(|m| depth(m, g, seen) + 1)
            .max()
            .unwrap_or(0);
        seen.pop();
        d
    }
    let mut by: BTreeMap<usize, Vec<&str>> = BTreeMap::new();
    for n in g.keys() {
        by.entry(depth(n, &g, &mut Vec::new())).or_default().push(n);
    }
    for (d, files) in by {
        println!("{d:2} {}", files.join(" "));
    }
}
