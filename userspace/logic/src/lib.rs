// SPDX-License-Identifier: GPL-2.0

//! The module's pure logic, compiled on the host.
//!
//! These are the very files `vgpu.ko` is built from (under `src/`), included by
//! path, so a host `cargo test` exercises the code that runs in the kernel.
//! Such files use only `core`.

#![no_std]

/// The NVIDIA ABI: ioctl encoding and decoding (`src/nv/`).
#[path = "../../../src/nv/mod.rs"]
pub mod nv;

/// Parsing of sysfs writes (`src/config.rs`).
#[path = "../../../src/config.rs"]
pub mod config;

/// A vGPU's memory ledger and what it shows (`src/ledger.rs`).
#[path = "../../../src/ledger.rs"]
pub mod ledger;

/// The user-space interface as constants (`src/uapi.rs`), also exported to
/// C as `include/vgpu.h`.
#[path = "../../../src/uapi.rs"]
pub mod uapi;

/// The compute scheduler's window maths (`src/compute.rs`).
#[path = "../../../src/compute.rs"]
pub mod compute;
