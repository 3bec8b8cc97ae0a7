// SPDX-License-Identifier: GPL-2.0

//! How many calls reached vgpu's dispatch, per row of the release's
//! dispatch table: debugfs `vgpu/rows`, one line `KIND NUMBER COUNT` per
//! row reached (`escape`, `class`, `control` or `uvm`; the row's number
//! in hex), for the fuzzer's coverage report. A write to the file zeroes
//! the counts. The cost on the call path is one relaxed atomic add, in an
//! array indexed by the row's place in its table; counts are kept whether
//! the row then admits or refuses the call.

use core::sync::atomic::{AtomicU64, Ordering};
use kernel::{debugfs, prelude::*};

use crate::nv::release::{self, RELEASES};

/// The families of the dispatch table, and where each one's counts start.
#[derive(Clone, Copy)]
pub(crate) enum Family {
    Escape = 0,
    Uvm = 64,
    Class = 64 + 128,
    Control = 64 + 128 + 256,
}

/// Counts in all: the families' capacities (64 escapes, 128 UVM commands,
/// 256 classes, 1024 controls; checked against every release below).
const ALL: usize = Family::Control as usize + 1024;

static COUNTS: [AtomicU64; ALL] = [const { AtomicU64::new(0) }; ALL];

// Every release's tables fit their families' room.
const _: () = {
    let mut r = 0;
    while r < RELEASES.len() {
        let rel = &RELEASES[r];
        assert!(rel.escapes.len() <= Family::Uvm as usize, "escapes");
        assert!(
            rel.uvm.len() <= Family::Class as usize - Family::Uvm as usize,
            "UVM"
        );
        assert!(
            rel.classes.len() <= Family::Control as usize - Family::Class as usize,
            "classes"
        );
        assert!(
            rel.controls.len() <= ALL - Family::Control as usize,
            "controls"
        );
        r += 1;
    }
};

/// Counts a call that reached `row` of `table`, a table of `family`.
pub(crate) fn count<T>(family: Family, table: &'static [T], row: &'static T) {
    let size = core::mem::size_of::<T>().max(1);
    let i = (core::ptr::from_ref(row) as usize).wrapping_sub(table.as_ptr() as usize) / size;
    if i < table.len() {
        if let Some(c) = COUNTS.get(family as usize + i) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Zeroes the counts.
pub(crate) fn reset() {
    for c in COUNTS.iter() {
        c.store(0, Ordering::Relaxed);
    }
}

/// Writes the rows reached, one line each.
pub(crate) fn show(f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
    let rel = release::current();
    let mut family = |name: &str, base: Family, numbers: &mut dyn Iterator<Item = u32>| {
        for (i, n) in numbers.enumerate() {
            let c = COUNTS
                .get(base as usize + i)
                .map_or(0, |c| c.load(Ordering::Relaxed));
            if c > 0 {
                writeln!(f, "{name} {n:#x} {c}")?;
            }
        }
        Ok(())
    };
    family(
        "escape",
        Family::Escape,
        &mut rel.escapes.iter().map(|r| u32::from(r.nr)),
    )?;
    family("uvm", Family::Uvm, &mut rel.uvm.iter().map(|r| r.number))?;
    family(
        "class",
        Family::Class,
        &mut rel.classes.iter().map(|r| r.class),
    )?;
    family(
        "control",
        Family::Control,
        &mut rel.controls.iter().map(|r| r.cmd),
    )
}

/// The file `vgpu/rows`, in debugfs directory `dir`.
pub(crate) fn file(dir: &debugfs::Dir) -> Result<Pin<KBox<debugfs::File<()>>>> {
    KBox::pin_init(
        dir.read_write_callback_file(c"rows", (), &show_file, &reset_file),
        GFP_KERNEL,
    )
}

fn show_file(_: &(), f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
    show(f)
}

fn reset_file(_: &(), _r: &mut kernel::uaccess::UserSliceReader) -> Result {
    reset();
    Ok(())
}
