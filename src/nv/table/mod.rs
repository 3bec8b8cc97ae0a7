// SPDX-License-Identifier: GPL-2.0

//! The dispatch table of RM classes and control commands: every class a
//! container may allocate (`hClass` of RM_ALLOC) and every control it may
//! send (`cmd` of RM_CONTROL), one row each, with what vgpu does with it.
//!
//! It also holds the rows of the two other families a container sends: the
//! frontend escapes of `/dev/nvidiactl` and `/dev/nvidiaN` ([`ESCAPES`]) and
//! the nvidia-uvm commands ([`UVM`]). Each of those rows names the handler
//! vgpu runs for it ([`EscapeHandler`], [`UvmHandler`]); the module's
//! dispatcher (`src/proxy.rs`, `src/uvm/mod.rs`) picks the handler from the
//! row and nothing else. Class and control rows are consulted by the
//! RM_ALLOC and RM_CONTROL handlers.
//!
//! core-only: this file uses nothing but `core`, contains no `unsafe` and
//! cannot panic.
//!
//! Rows. The rows are the classes and controls that gVisor's nvproxy admits
//! for its compute and utility capabilities at driver 590.48.01 (the table
//! its unsupported 595.71.05 inherits unchanged), plus the few that vgpu
//! already decides itself although nvproxy leaves them out (FB_GET_INFO V1,
//! SET_INTERLEAVE_LEVEL, and, as explicit denials, MAKE_REALTIME,
//! FB_GET_FB_REGION_INFO and SET_COMPUTE_POLICY_CONFIG), and
//! SYSTEM_GET_BUILD_VERSION_V2, which the real driver answers any client.
//! A number absent from the table is refused. Every row's number, and its params size where
//! it has params, is checked against NVIDIA's headers at 595.45.04 by the
//! conformance check (`userspace/conformance`); every admitted row is argued
//! in `docs/dispatch-table.md`, which also cites the sources of each row.
//!
//! `params_size` is the exact size RM checks for the row (controls: the
//! control's params, `paramsSize` must equal it; classes: the alloc params
//! RM copies, whatever `paramsSize` says), and 0 where the control or class
//! takes no params.
//!
//! Every admitted row is decided: checked, translated, charged, rewritten
//! or served, or forwarded with its argument (`docs/dispatch-table.md`).

// An ABI table shared with the host crate: the same lint settings as
// `abi/`.
#![allow(dead_code, unreachable_pub)]

#[macro_use]
mod keyed;
mod classes;
mod controls;
mod escapes;
mod policy;
mod uvm;

pub use classes::*;
pub use controls::*;
pub use escapes::*;
pub use policy::*;
pub use uvm::*;
