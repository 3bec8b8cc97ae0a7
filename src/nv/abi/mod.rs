// SPDX-License-Identifier: GPL-2.0

//! NVIDIA RM parameter structures, classes, control commands and status codes.
//!
//! One file per kind of number and per escape family, all re-exported
//! here (`nv::abi::X`): the numbers in `status_codes`, `class_ids`,
//! `control_ids` and `memory_flags`; the layouts of the RM object escapes
//! in `escape_rm`, of VID_HEAP in `escape_heap`, of the map and frontend
//! escapes in `escape_frontend`, and the blocks they point to in
//! `alloc_params` and `control_params`; the GPFIFO and pushbuffer format
//! of a channel's work in `pushbuf` (the double's engine runs it). The
//! encoding machinery
//! (`Wire`, `wire_struct!`) is [`super::wire`].
//!
//! core-only: this file uses nothing but `core` and contains no `unsafe`. It is
//! built into `vgpu.ko` and by the host crate `userspace/logic` (and through it
//! by the `nvclient` test library), so every layout here is pinned by host
//! tests (`userspace/logic/tests/abi.rs`).
//!
//! Sources. The facts come from `shared/nvidia-abi.md` unless a doc comment
//! names a file: those were looked up in NVIDIA/open-gpu-kernel-modules (tag
//! 595.45.04); paths are relative to `src/common/sdk/nvidia/inc/` unless they
//! start with `kernel-open/` or `src/nvidia/`. Offsets of looked-up structures
//! were obtained by compiling `offsetof` probes against those headers on
//! x86_64. No code was copied; these are the project's own definitions.
//!
//! Layout model. Every structure is declared with `wire_struct!`: each field
//! names its byte offset and type, and the macro generates a plain Rust struct
//! whose fields are native values, plus `SIZE`, `from_bytes` and `to_bytes`
//! that encode field by field in native byte order (x86_64 and arm64 are
//! little-endian; the driver ABI is the C layout of the host). Bytes that no
//! field covers (C padding) encode as zero and are ignored when decoding.
//! A compile-time check rejects a struct whose fields overlap, run past its
//! size or sit at an offset their C alignment forbids, so a typo in an offset
//! fails the build.
//!
//! `from_bytes` takes exactly `SIZE` bytes (anything else is `None`): the
//! driver checks each parameter size exactly, and a block of another size is
//! another ABI version, which must not be read with this layout.

// An ABI table shared with the host crate: the module uses a subset of it, and
// its items must be `pub` for the host crate, while the module's `nv` is
// private. So the kernel build's dead-code and unreachable-pub lints, which
// would flag every unused entry, are off for this folder.
#![allow(dead_code, unreachable_pub)]

pub use super::wire::{
    field_offset, find_field, read_field, relayout, BitField, Handle, Wire, WireField,
};

mod alloc_params;
mod class_ids;
mod control_ids;
mod control_params;
mod escape_frontend;
mod escape_heap;
mod escape_rm;
mod memory_flags;
pub mod pushbuf;
mod status_codes;

pub use alloc_params::*;
pub use class_ids::*;
pub use control_ids::*;
pub use control_params::*;
pub use escape_frontend::*;
pub use escape_heap::*;
pub use escape_rm::*;
pub use memory_flags::*;
pub use status_codes::*;
