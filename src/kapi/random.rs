// SPDX-License-Identifier: GPL-2.0

//! The kernel's random numbers.

/// A random `u32` (`get_random_u32`).
pub(crate) fn u32() -> u32 {
    // SAFETY: `get_random_u32` has no preconditions.
    unsafe { kernel::bindings::get_random_u32() }
}
