// SPDX-License-Identifier: GPL-2.0

//! The NVIDIA driver's userspace ABI, as vgpu needs it.
//!
//! Every file in this folder is core-only (pure logic over bytes and numbers,
//! no kernel API), so the host crate `userspace/logic` builds and tests the same
//! source with `cargo test`.

#[macro_use]
pub mod abi;
pub mod ioctl;
pub mod uvm;
