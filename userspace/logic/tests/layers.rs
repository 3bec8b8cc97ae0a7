//! The module's files form layers, not a ring: the graph of `src/` by its
//! `use crate::...` and `use super::...` references between files has no
//! cycle. A file that calls up (a lower layer naming a higher one) fails
//! this test, naming the ring.
//!
//! Not edges: `mod` declarations (a parent declares its children) and the
//! crate root's module type named as a file operations' `OwnerModule` (the
//! kernel's `try_module_get` needs it; it is a type, not a call).

mod common;
use common::find_cycle;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../src")
}

/// Every `.rs` file under `src/`, as a path relative to `src/`.
fn files() -> Vec<String> {
    fn walk(dir: &Path, base: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, base, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p.strip_prefix(base).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    let mut out = Vec::new();
    walk(&src(), &src(), &mut out);
    out.sort();
    out
}

/// The module path of a file (`rm/alloc.rs` -> `["rm", "alloc"]`; the root
/// `vgpu_main.rs` -> `[]`).
fn module_of(file: &str) -> Vec<String> {
    if file == "vgpu_main.rs" {
        return Vec::new();
    }
    let f = file.trim_end_matches(".rs");
    let mut parts: Vec<String> = f.split('/').map(str::to_owned).collect();
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
    "vgpu_main.rs".to_owned()
}

/// Paths named in code (not comments): `crate::a::b` and `super::a`.
fn references(text: &str) -> Vec<(bool, Vec<String>)> {
    let mut out = Vec::new();
    // The code without comments, as one line: a `use` group spans lines.
    let joined: String = text
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .filter(|l| !l.contains("type OwnerModule = crate::"))
        .collect::<Vec<_>>()
        .join(" ");
    {
        let code = joined.as_str();
        for (prefix, is_crate) in [("crate::", true), ("super::", false)] {
            let mut rest = code;
            while let Some(i) = rest.find(prefix) {
                let before = rest[..i].chars().last();
                rest = &rest[i + prefix.len()..];
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
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
                // A `use crate::a::{b, c::{d}, e}` names each of b, c, e.
                if r.starts_with('{') && is_crate {
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
                        if depth >= 1 && ch != '{' || depth > 1 {
                            if let Some(last) = items.last_mut() {
                                last.push(ch);
                            }
                        }
                    }
                    for item in &items {
                        let item = item.trim().trim_start_matches(',').trim();
                        let item = item.split("::").next().unwrap_or("").trim();
                        if !item.is_empty() && item != "self" {
                            let mut p = path.clone();
                            p.push(item.to_owned());
                            out.push((true, p));
                        }
                    }
                }
                if !path.is_empty() {
                    out.push((is_crate, path));
                }
            }
        }
    }
    out
}

/// The file-level graph of the module (`nv/`, shared with the host crate,
/// included).
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let list = files();
    let all: BTreeSet<String> = list.iter().cloned().collect();
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &list {
        let text = std::fs::read_to_string(src().join(f)).unwrap();
        let me = module_of(f);
        let edges = g.entry(f.clone()).or_default();
        for (is_crate, path) in references(&text) {
            let target = if is_crate {
                path
            } else {
                // `super::x` from `a/b.rs` is `a::x` (a sibling, or an item
                // of the parent `a/mod.rs`).
                // `super::x` from `a/mod.rs` is the root's `x`.
                let mut parent = me.clone();
                parent.pop();
                parent.extend(path);
                parent
            };
            let to = file_of(&target, &all);
            if to != *f {
                edges.insert(to);
            }
        }
        // A parent's calls into its children by their bare names.
        for child in children(&text) {
            let used = text.lines().any(|l| {
                let code = l.split("//").next().unwrap_or("");
                !code.trim_start().starts_with("mod ")
                    && !code.contains("pub(crate) mod ")
                    && code.contains(&format!("{child}::"))
            });
            if used {
                let mut m = me.clone();
                m.push(child);
                let to = file_of(&m, &all);
                if to != *f {
                    edges.insert(to);
                }
            }
        }
    }
    g
}

/// The modules a file declares (`mod x;`, `pub mod x;`, `pub(crate) mod x;`).
fn children(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            let l = l
                .strip_prefix("pub(crate) ")
                .or_else(|| l.strip_prefix("pub "))
                .unwrap_or(l);
            let name = l.strip_prefix("mod ")?.strip_suffix(';')?;
            Some(name.trim().to_owned())
        })
        .collect()
}

#[test]
fn src_is_layered() {
    let g = graph();
    if let Some(ring) = find_cycle(&g) {
        panic!("src/ calls up: {}", ring.join(" -> "));
    }
}

#[test]
fn the_check_sees_a_ring() {
    // The detector itself: a ring of three is found, a chain is not.
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let e = |a: &str, b: &str, g: &mut BTreeMap<String, BTreeSet<String>>| {
        g.entry(a.into()).or_default().insert(b.into());
    };
    e("a", "b", &mut g);
    e("b", "c", &mut g);
    assert!(find_cycle(&g).is_none());
    e("c", "a", &mut g);
    assert!(find_cycle(&g).is_some());
    // And the parser sees both `crate::` and braced imports.
    let r = references("use crate::kapi::{user, rmops::RmOps};\nlet x = super::ctx::Ctx;");
    assert!(r.contains(&(true, vec!["kapi".into(), "user".into()])));
    assert!(r.contains(&(true, vec!["kapi".into(), "rmops".into()])));
    assert!(r.contains(&(false, vec!["ctx".into(), "Ctx".into()])));
}

#[test]
fn the_handlers_do_not_reach_the_module_state() {
    // Handlers get a context; only the entry points (opens, the class's
    // sysfs files) reach `state::get`.
    for (f, edges) in graph() {
        if edges.contains("state.rs") {
            assert!(
                ["proxy.rs", "vgpu_main.rs"].contains(&f.as_str()),
                "{f} reaches the module state"
            );
        }
    }
}

/// Prints the layers (`cargo test -p vgpu-logic --test layers -- --nocapture
/// print_layers`): each file after everything it uses.
#[test]
fn print_layers() {
    let g = graph();
    let mut level: BTreeMap<String, usize> = BTreeMap::new();
    fn depth(
        n: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        level: &mut BTreeMap<String, usize>,
    ) -> usize {
        if let Some(&d) = level.get(n) {
            return d;
        }
        level.insert(n.to_owned(), 0);
        let d = g
            .get(n)
            .into_iter()
            .flatten()
            .map(|m| depth(m, g, level) + 1)
            .max()
            .unwrap_or(0);
        level.insert(n.to_owned(), d);
        d
    }
    for n in g.keys() {
        depth(n, &g, &mut level);
    }
    let mut by: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for (n, d) in level {
        by.entry(d).or_default().push(n);
    }
    for (d, ns) in by {
        println!("{d:2}: {}", ns.join(" "));
    }
}

/// The folder of a file (`rm/alloc.rs` -> `rm/`), or the file itself for
/// one at the top of `src/`.
fn folder(file: &str) -> String {
    match file.split_once('/') {
        Some((dir, _)) => format!("{dir}/"),
        None => file.to_owned(),
    }
}

/// The graph of folders (each top-level file its own node), without the
/// edges inside one folder.
fn folder_graph() -> BTreeMap<String, BTreeSet<String>> {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (f, edges) in graph() {
        let from = folder(&f);
        let out = g.entry(from.clone()).or_default();
        for e in edges {
            let to = folder(&e);
            if to != from {
                out.insert(to);
            }
        }
    }
    g
}

#[test]
fn folders_are_layered() {
    let g = folder_graph();
    if let Some(ring) = find_cycle(&g) {
        panic!("a folder loop in src/: {}", ring.join(" -> "));
    }
}

#[test]
fn folders_keep_their_rules() {
    let g = folder_graph();
    let edges = |f: &str| g.get(f).cloned().unwrap_or_default();
    // The ABI is core-only: it imports nothing else of vgpu.
    assert!(edges("nv/").is_empty(), "nv/ imports {:?}", edges("nv/"));
    // The kernel wrappers sit on the ABI and on files that import nothing
    // but the ABI (`status.rs`): nothing above them.
    let bottom = |f: &str| f == "nv/" || edges(f).iter().all(|e| e == "nv/");
    let above: Vec<_> = edges("kapi/").into_iter().filter(|e| !bottom(e)).collect();
    assert!(above.is_empty(), "kapi/ imports {above:?}");
    // The RM and UVM handlers are apart.
    assert!(!edges("rm/").contains("uvm/"), "rm/ imports uvm/");
    assert!(!edges("uvm/").contains("rm/"), "uvm/ imports rm/");
}
