// SPDX-License-Identifier: GPL-2.0

//! Plain-text tables for people.

/// Renders `rows` under `header`, columns left-aligned and two spaces apart,
/// with no trailing spaces.
pub fn render(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(c.chars().count());
            }
        }
    }
    let mut out = String::new();
    let mut line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut l = String::new();
        for (i, c) in cells.enumerate() {
            if i > 0 {
                l.push_str("  ");
            }
            l.push_str(c);
            let pad = widths
                .get(i)
                .copied()
                .unwrap_or(0)
                .saturating_sub(c.chars().count());
            l.extend(std::iter::repeat_n(' ', pad));
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(&mut header.iter().copied());
    for r in rows {
        line(&mut r.iter().map(String::as_str));
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn aligns() {
        let t = super::render(
            &["ID", "CGROUP"],
            &[vec!["10".into(), "/a".into()], vec!["2".into(), "".into()]],
        );
        assert_eq!(t, "ID  CGROUP\n10  /a\n2\n");
    }
}
