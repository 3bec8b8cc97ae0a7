// SPDX-License-Identifier: GPL-2.0

//! The lookups and patchers every family's table is built with.

/// Defines, for a table of `$row`s in `$key` order: `$lookup(rows, key)`,
/// the row of `key` (a binary search, on the path of every call);
/// `$in_order(rows)`, whether the rows are in strictly increasing `$key`
/// order (what the lookup relies on; `nv::release` checks every release's
/// tables with it at compile time); and `$without(rows, absent)`, `rows`
/// without the rows whose `$key` is in `absent` (what a release lacks), all
/// of which must be in `rows`, `M` being `N - absent.len()` (both checked
/// at compile time).
macro_rules! keyed_rows {
    ($row:ty, $key:ident: $k:ty, $lookup:ident, $in_order:ident, $without:ident) => {
        keyed_rows!($row, $key: $k, $lookup, $in_order);

        /// `rows` without the rows whose key is in `absent`.
        pub const fn $without<const N: usize, const M: usize>(
            rows: [$row; N],
            absent: &[$k],
        ) -> [$row; M] {
            assert!(
                M + absent.len() == N,
                concat!(stringify!($without), ": M must be N - absent")
            );
            let mut out = [rows[0]; M];
            let (mut i, mut o) = (0, 0);
            while i < N {
                let mut gone = false;
                let mut k = 0;
                while k < absent.len() {
                    gone = gone || rows[i].$key == absent[k];
                    k += 1;
                }
                if !gone {
                    assert!(o < M, concat!(stringify!($without), ": a row is not in the table"));
                    out[o] = rows[i];
                    o += 1;
                }
                i += 1;
            }
            assert!(o == M, concat!(stringify!($without), ": a row is not in the table"));
            out
        }
    };
    ($row:ty, $key:ident: $k:ty, $lookup:ident, $in_order:ident) => {
        /// The row of `key` in `rows` (a release's table, in key order), if
        /// it has one.
        pub const fn $lookup(rows: &'static [$row], key: $k) -> Option<&'static $row> {
            let (mut lo, mut hi) = (0, rows.len());
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                let row = &rows[mid];
                if row.$key == key {
                    return Some(row);
                }
                if row.$key < key {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            None
        }

        /// Whether `rows` are in strictly increasing key order (no key
        /// twice).
        pub const fn $in_order(rows: &[$row]) -> bool {
            let mut i = 1;
            while i < rows.len() {
                if rows[i - 1].$key >= rows[i].$key {
                    return false;
                }
                i += 1;
            }
            true
        }
    };
}

/// Defines `$name(rows, sizes)`: `rows` with the params size of each
/// `(key, size)` of `sizes` set (a release whose params blocks differ);
/// every key must be in `rows` (checked at compile time).
macro_rules! sized_rows {
    ($name:ident, $row:ty, $key:ident) => {
        /// `rows` with each `(key, size)` of `sizes` applied.
        pub const fn $name<const N: usize>(mut rows: [$row; N], sizes: &[(u32, u32)]) -> [$row; N] {
            let mut k = 0;
            while k < sizes.len() {
                let mut found = false;
                let mut i = 0;
                while i < N {
                    if rows[i].$key == sizes[k].0 {
                        rows[i].params_size = sizes[k].1;
                        found = true;
                    }
                    i += 1;
                }
                assert!(
                    found,
                    concat!(stringify!($name), ": a row is not in the table")
                );
                k += 1;
            }
            rows
        }
    };
}
