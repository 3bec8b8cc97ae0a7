// SPDX-License-Identifier: GPL-2.0

//! Random numbers from the kernel's CRNG.

use kernel::bindings;

/// A random `u32` (`get_random_u32`): uniformly distributed and
/// cryptographically secure once the CRNG is seeded (the kernel seeds it
/// before modules load on any machine with a usable entropy source).
pub(crate) fn u32() -> u32 {
    // SAFETY: `get_random_u32` has no preconditions and may be called from
    // any context.
    unsafe { bindings::get_random_u32() }
}
