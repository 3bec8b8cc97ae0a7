// SPDX-License-Identifier: GPL-2.0

//! The project's side of the check, one file per kind of fact: each adds
//! its [`crate::Row`]s to the table.

mod constants;
mod dispatch;
mod escapes;
mod kernel_client;
mod names;
mod params;
mod uvm;

pub(crate) use constants::*;
pub use dispatch::*;
pub(crate) use escapes::*;
pub use kernel_client::*;
pub use names::*;
pub(crate) use params::*;
pub(crate) use uvm::*;
