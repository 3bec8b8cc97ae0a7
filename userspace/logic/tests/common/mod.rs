// SPDX-License-Identifier: GPL-2.0

//! What the structure tests share: the cycle search over an import graph
//! (`layers.rs`, `double_layers.rs`) and the measure of a function's
//! length (`sizes.rs`, `double_layers.rs`). Each test file uses a part.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};

/// A cycle in `g`, if it has one.
pub fn find_cycle(g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    fn visit(
        n: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        mark: &mut BTreeMap<String, Mark>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        mark.insert(n.to_owned(), Mark::Open);
        stack.push(n.to_owned());
        for m in g.get(n).into_iter().flatten() {
            match mark.get(m.as_str()).copied().unwrap_or(Mark::New) {
                Mark::Open => {
                    let i = stack.iter().position(|s| s == m).unwrap();
                    let mut ring = stack[i..].to_vec();
                    ring.push(m.clone());
                    return Some(ring);
                }
                Mark::New => {
                    if let Some(c) = visit(m, g, mark, stack) {
                        return Some(c);
                    }
                }
                Mark::Done => {}
            }
        }
        stack.pop();
        mark.insert(n.to_owned(), Mark::Done);
        None
    }
    let mut mark = BTreeMap::new();
    for n in g.keys() {
        if mark.get(n.as_str()).copied().unwrap_or(Mark::New) == Mark::New {
            let mut stack = Vec::new();
            if let Some(c) = visit(n, g, &mut mark, &mut stack) {
                return Some(c);
            }
        }
    }
    None
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
pub fn functions(text: &str) -> Vec<(String, usize, usize)> {
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
