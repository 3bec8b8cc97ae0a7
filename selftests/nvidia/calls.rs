// SPDX-License-Identifier: GPL-2.0

//! Test-only instrumentation: how many times each row reached the double
//! (debugfs `nvidia-double/calls`, one line `KIND NUMBER COUNT CLIENT` per
//! row seen: `escape`, `class`, `control` or `uvm`, the number in hex,
//! the count, and the `hClient` of the last call of a class or control,
//! else 0). A write to the file zeroes the counts. A fixed table, lock
//! free: a row claims a slot by its key and keeps it until unload; rows
//! past its size are counted in `dropped`.

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// What a counted number is.
#[derive(Clone, Copy)]
#[repr(u64)]
pub(crate) enum Kind {
    Escape = 1,
    Class = 2,
    Control = 3,
    Uvm = 4,
}

const SLOTS: usize = 1024;

struct Slot {
    /// `kind << 32 | number`; 0: free.
    key: AtomicU64,
    count: AtomicU64,
    client: AtomicU32,
}

static TABLE: [Slot; SLOTS] = [const {
    Slot {
        key: AtomicU64::new(0),
        count: AtomicU64::new(0),
        client: AtomicU32::new(0),
    }
}; SLOTS];

static DROPPED: AtomicU64 = AtomicU64::new(0);

/// Counts one call of row `number` of `kind`, by client `client` (0: none).
pub(crate) fn count(kind: Kind, number: u32, client: u32) {
    let key = ((kind as u64) << 32) | u64::from(number);
    let start = (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 54) as usize % SLOTS;
    for i in 0..SLOTS {
        let s = &TABLE[(start + i) % SLOTS];
        let k = match s
            .key
            .compare_exchange(0, key, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => key,
            Err(k) => k,
        };
        if k == key {
            s.client.store(client, Ordering::Relaxed);
            s.count.fetch_add(1, Ordering::Relaxed);
            return;
        }
    }
    DROPPED.fetch_add(1, Ordering::Relaxed);
}

/// Writes the table, one line per row seen.
pub(crate) fn show(f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
    for s in TABLE.iter() {
        let key = s.key.load(Ordering::Acquire);
        let kind = match key >> 32 {
            1 => "escape",
            2 => "class",
            3 => "control",
            4 => "uvm",
            _ => continue,
        };
        writeln!(
            f,
            "{kind} {:#x} {} {:#x}",
            key as u32,
            s.count.load(Ordering::Relaxed),
            s.client.load(Ordering::Relaxed)
        )?;
    }
    writeln!(f, "dropped 0 {} 0", DROPPED.load(Ordering::Relaxed))
}

/// Zeroes every count.
pub(crate) fn reset() {
    for s in TABLE.iter() {
        s.count.store(0, Ordering::Relaxed);
    }
    DROPPED.store(0, Ordering::Relaxed);
}
