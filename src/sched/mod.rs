// SPDX-License-Identifier: GPL-2.0

//! The compute scheduler: each physical GPU's time divided between its
//! vGPUs.
//!
//! Work reaches the GPU without a system call (a doorbell write), so shares
//! are enforced on what runs, not on what is submitted: vgpu knows every TSG
//! (and every channel outside a TSG) a tenant creates, because it creates
//! them itself through the driver's kernel-client interface, and a kernel
//! thread per GPU opens one vGPU's *window* at a time: the owner's TSGs are
//! enabled, every other vGPU's are disabled and preempted. The window maths
//! is in [`crate::compute`].
//!
//! A tenant's own scheduling calls (GPFIFO_SCHEDULE, FIFO_DISABLE_CHANNELS)
//! are recorded as what it *wants*: a disable applies at once, an enable
//! only while its window is open (else at the window's start). The check and
//! the call happen under the GPU's switch lock, so a window cannot close
//! between them. Other controls a tenant with TSGs forwards run inside its
//! window too ([`GpuSched::in_window`]), since the driver reads them again
//! from memory another thread can change.
//!
//! Whether a vGPU has work (for the work-conserving policy) is read from its
//! channels' USERD (`GPGet` against `GPPut`), mapped through duplicates in
//! vgpu's own driver client ([`Watched`]).

mod enrolled;
mod files;
mod gpu;
mod worker;

pub(crate) use enrolled::{Enrolled, Watched};
pub(crate) use files::GpuFiles;
pub(crate) use gpu::GpuSched;
pub(crate) use worker::SchedWorker;
