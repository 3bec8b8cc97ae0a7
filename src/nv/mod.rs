// SPDX-License-Identifier: GPL-2.0

//! The NVIDIA driver's userspace ABI, as vgpu needs it.
//!
//! Every file in this folder is core-only (pure logic over bytes and numbers,
//! no kernel API), so the host crate `userspace/logic` builds and tests the same
//! source with `cargo test`. The compiler holds it to no `unsafe`.

#![forbid(unsafe_code)]

#[macro_use]
pub mod wire;
pub mod abi;
pub mod ioctl;
pub mod release;
pub mod rmops;
pub mod table;
pub mod uvm;

/// The NVIDIA driver release whose ABI the tables in this folder are
/// written for (`userspace/conformance/facts/595.45.04.facts`, compiled
/// from NVIDIA's headers at that tag). Other releases vgpu supports are
/// this one's tables with their differences ([`release::RELEASES`]); vgpu
/// refuses to load on any release it has no table for: layouts drift
/// between releases, and a wrong one faults in the driver.
pub const RELEASE: &str = "595.45.04";

/// [`RELEASE`], NUL-terminated, for `nvidia_get_rm_ops`.
pub const RELEASE_CSTR: &[u8] = b"595.45.04\0";

const _: () = {
    let (a, b) = (RELEASE.as_bytes(), RELEASE_CSTR);
    assert!(a.len() + 1 == b.len() && b[a.len()] == 0);
    let mut i = 0;
    while i < a.len() {
        assert!(a[i] == b[i]);
        i += 1;
    }
};
