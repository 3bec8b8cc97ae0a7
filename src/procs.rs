// SPDX-License-Identifier: GPL-2.0

//! Who uses a vGPU: one entry per process, with what its clients hold on
//! the vGPU (devices, channels) and the bytes it is charged.
//!
//! RM keeps, for each client, the process that created it (a reference on
//! its `struct pid`, `rmclientConstruct_IMPL`, `rmapi/client.c:111-114` at
//! 595.45.04), and answers GPU_GET_PIDS and GPU_GET_PID_INFO by walking
//! every client of the GPU (`gpuGetProcWithObject_IMPL`,
//! `gpuFindClientInfoWithPidIterator_IMPL`, `gpu/gpu_rmapi.c`), other
//! tenants' included. vgpu keeps the same facts per vGPU instead, so a
//! container's view is built from its own vGPU alone: its processes only,
//! numbered in the caller's PID namespace, with the bytes its ledger
//! charged them (`src/rm/processes.rs`, sysfs `processes`).
//!
//! An entry is created when a client of a process first holds something on
//! the vGPU, and counts what holds it ([`Hold`]): the client itself, its
//! devices and channels, and nvidia-uvm spaces the process opened. Charges
//! add their bytes while they live. An entry with nothing counted is idle:
//! views skip it, and the next new entry replaces it. Counts only rise
//! under the list's lock, and only on entries something holds, so an idle
//! entry is never revived after it was dropped.

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use kernel::{prelude::*, sync::Arc};

use crate::kapi::pid::{ProcessPid, COMM_LEN};

/// What a [`Hold`] counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Counter {
    /// A client of the process (while it lives, its memory charges can be
    /// added to the entry).
    Client,
    /// A device (NV01_DEVICE_0) on the vGPU's GPU.
    Device,
    /// A channel on the vGPU's GPU.
    Channel,
    /// An nvidia-uvm space the process opened, whose managed memory is
    /// charged to it.
    Space,
}

/// One process's use of one vGPU.
pub(crate) struct ProcUse {
    /// The process (the creator of its clients, as RM records it).
    pid: ProcessPid,
    /// Its command name when it first used the vGPU.
    comm: [u8; COMM_LEN],
    /// Clients, devices, channels, spaces ([`Counter`] order).
    counts: [AtomicU32; 4],
    /// Bytes charged to it on the vGPU's ledger.
    bytes: AtomicU64,
}

impl ProcUse {
    fn count(&self, c: Counter) -> &AtomicU32 {
        &self.counts[c as usize]
    }

    /// How many of `c` it holds.
    pub(crate) fn held(&self, c: Counter) -> u32 {
        self.count(c).load(Ordering::Relaxed)
    }

    /// Bytes charged to it.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// The process.
    pub(crate) fn pid(&self) -> &ProcessPid {
        &self.pid
    }

    /// Its command name (up to the first NUL).
    pub(crate) fn comm(&self) -> &[u8] {
        let n = self.comm.iter().position(|&b| b == 0).unwrap_or(COMM_LEN);
        &self.comm[..n]
    }

    /// Whether nothing holds it and nothing is charged to it.
    fn idle(&self) -> bool {
        self.bytes() == 0 && self.counts.iter().all(|c| c.load(Ordering::Relaxed) == 0)
    }

    /// Whether it is one the views show: something held or charged, and
    /// the process not reaped.
    pub(crate) fn visible(&self) -> bool {
        !self.idle() && self.pid.alive()
    }

    /// Adds `bytes` charged to it (the caller holds it: see [`Hold`]).
    pub(crate) fn charged(&self, bytes: u64) {
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Takes back `bytes` charged to it.
    pub(crate) fn refunded(&self, bytes: u64) {
        // Saturating, as the ledger's release is.
        let _ = self
            .bytes
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
                Some(b.saturating_sub(bytes))
            });
    }
}

/// One count of a [`ProcUse`], given back when dropped.
pub(crate) struct Hold {
    user: Arc<ProcUse>,
    what: Counter,
}

impl Hold {
    /// Another count on the same entry. The entry is held (by `self`), so
    /// it is not idle and cannot be dropped from its list meanwhile.
    pub(crate) fn also(&self, what: Counter) -> Hold {
        self.user.count(what).fetch_add(1, Ordering::Relaxed);
        Hold {
            user: self.user.clone(),
            what,
        }
    }

    /// The entry held.
    pub(crate) fn user(&self) -> &Arc<ProcUse> {
        &self.user
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        let _ =
            self.user
                .count(self.what)
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                    Some(n.saturating_sub(1))
                });
    }
}

/// The processes of one vGPU.
#[derive(Default)]
pub(crate) struct Procs {
    list: KVec<Arc<ProcUse>>,
}

impl Procs {
    /// A count of `what` on `pid`'s entry, created (with command `comm`)
    /// if it has none; an idle entry makes room for it.
    pub(crate) fn hold(
        &mut self,
        pid: &ProcessPid,
        comm: &[u8; COMM_LEN],
        what: Counter,
    ) -> Result<Hold> {
        let user = match self.list.iter().find(|u| u.pid.same(pid)) {
            Some(u) => u.clone(),
            None => {
                crate::kapi::inject::record()?;
                let u = Arc::new(
                    ProcUse {
                        pid: pid.clone_ref(),
                        comm: *comm,
                        counts: Default::default(),
                        bytes: AtomicU64::new(0),
                    },
                    GFP_KERNEL,
                )?;
                match self.list.iter().position(|u| u.idle()) {
                    Some(i) => self.list[i] = u.clone(),
                    None => self.list.push(u.clone(), GFP_KERNEL)?,
                }
                u
            }
        };
        user.count(what).fetch_add(1, Ordering::Relaxed);
        Ok(Hold { user, what })
    }

    /// The entries the views show ([`ProcUse::visible`]).
    pub(crate) fn visible(&self) -> impl Iterator<Item = &Arc<ProcUse>> {
        self.list.iter().filter(|u| u.visible())
    }
}

/// `comm` with every byte outside printable ASCII, and spaces, replaced by
/// `?`, in `out`: a word that fits a line of text.
pub(crate) fn printable<'a>(comm: &[u8], out: &'a mut [u8; COMM_LEN]) -> &'a str {
    let n = comm.len().min(COMM_LEN);
    for (o, &b) in out.iter_mut().zip(comm.iter().take(n)) {
        *o = if b.is_ascii_graphic() { b } else { b'?' };
    }
    // Only ASCII bytes were written.
    core::str::from_utf8(&out[..n]).unwrap_or("?")
}
