// SPDX-License-Identifier: GPL-2.0

//! What vgpu knows of one real nvidia-uvm file and what it charged for it:
//! managed mappings (charged when mapped, refunded when gone) and RM memory
//! or page tables UVM holds. A [`Space`] registers itself with its vGPUs as
//! a [`Reclaim`], so their charges can measure it again.

use kernel::{
    new_mutex,
    prelude::*,
    sync::{Arc, Mutex},
};

use crate::file::Kind;
use crate::host::Host;
use crate::kapi::mm::UserMm;
use crate::kapi::pid::{current_comm, ProcessPid};
use crate::objects::Charge;
use crate::procs::{Counter, Hold, ProcUse};
use crate::vgpu::{Reclaim, Vgpu};

/// A managed mapping vgpu charged.
pub(super) struct Managed {
    /// Tells mappings apart across the unlocked part of a reconciliation.
    pub(super) id: u64,
    /// The address space it was made in.
    pub(super) mm: UserMm,
    /// Its start.
    pub(super) start: u64,
    /// Its end.
    pub(super) end: u64,
    /// Bytes still charged (to each of the space's vGPUs).
    pub(super) charged: u64,
}

/// RM memory that UVM maps into a range, held by UVM as long as a GPU maps
/// it there, or the page tables of a dynamic-parallelism region at `base`,
/// held until the region is freed: its charge is held as long.
pub(super) struct External {
    /// Where UVM maps it (or the region starts).
    pub(super) base: u64,
    /// Where the mapping ends.
    pub(super) end: u64,
    /// A mapping: the GPUs (by index, a bit each) that map it; the hold
    /// goes when the last one unmaps. `None`: a region, held until
    /// UVM_FREE or the end of the VA space.
    pub(super) gpus: Option<u32>,
    /// Held while it is mapped.
    pub(super) _charge: Arc<Charge>,
}

pub(super) struct SpaceInner {
    /// Proxy files that stand for the real file (the primary and its mm
    /// file): while any is open, the real file may still be used.
    pub(super) files: u32,
    pub(super) next_id: u64,
    pub(super) managed: KVec<Managed>,
    pub(super) external: KVec<External>,
    /// Whether the space is registered with its vGPUs (see [`Reclaim`]).
    listed: bool,
    /// For an mm file's own space: the space it is the mm file of, after
    /// `UVM_MM_INITIALIZE`.
    pub(super) mm_of: Option<Arc<Space>>,
}

/// What vgpu knows of one real nvidia-uvm file (a VA space once
/// initialised) and what it charged for it. It outlives the proxy files:
/// managed mappings hold the real file, so charges end when the mappings do.
#[pin_data]
pub(crate) struct Space {
    /// The container's vGPUs (fixed at open): each is charged for managed
    /// memory, which may become resident on any GPU the space registers.
    pub(super) vgpus: KVec<Arc<Vgpu>>,
    /// The opener's entry in each vGPU's list of processes (as `vgpus`),
    /// which managed memory is charged to.
    users: KVec<Hold>,
    /// Address of the real file (compared with VMAs' files, never followed).
    real: usize,
    #[pin]
    pub(super) inner: Mutex<SpaceInner>,
}

impl Space {
    pub(super) fn refund(&self, bytes: u64) {
        if bytes == 0 {
            return;
        }
        for v in self.vgpus.iter() {
            let mut cfg = v.config.lock();
            cfg.memory.release(bytes);
            cfg.managed = cfg.managed.saturating_sub(bytes);
        }
        self.users.iter().for_each(|u| u.user().refunded(bytes));
    }

    /// The opener's entry in the list of processes of `v`, one of the
    /// space's vGPUs.
    pub(super) fn user_on(&self, v: &Arc<Vgpu>) -> Option<Arc<ProcUse>> {
        let i = self.vgpus.iter().position(|w| Arc::ptr_eq(w, v))?;
        self.users.get(i).map(|h| h.user().clone())
    }

    /// Charges `bytes` to every vGPU of the space, or to none.
    pub(super) fn charge(&self, bytes: u64) -> bool {
        for (i, v) in self.vgpus.iter().enumerate() {
            let mut cfg = v.config.lock();
            if cfg.memory.reserve(bytes).is_err() {
                cfg.refused += 1;
                drop(cfg);
                for w in self.vgpus.iter().take(i) {
                    let mut c = w.config.lock();
                    c.memory.release(bytes);
                    c.managed = c.managed.saturating_sub(bytes);
                }
                return false;
            }
            cfg.managed += bytes;
        }
        self.users.iter().for_each(|u| u.user().charged(bytes));
        true
    }

    /// Applies measured mapped sizes: refunds what is no longer mapped.
    pub(super) fn settle(&self, inner: &mut SpaceInner, id: u64, mapped: u64) {
        if let Some(m) = inner.managed.iter_mut().find(|m| m.id == id) {
            if mapped < m.charged {
                self.refund(m.charged - mapped);
                m.charged = mapped;
            }
        }
        inner.managed.retain(|m| m.charged > 0);
    }

    /// Refunds the managed mappings that are gone, looking at their address
    /// spaces (takes their mmap locks: call without vgpu locks held and
    /// outside mmap handlers). Returns whether nothing is left to account:
    /// no proxy file, no managed mapping (the real file is then released,
    /// and with it UVM's hold on external memory, whose charges go too).
    pub(crate) fn reconcile(&self) -> bool {
        let mut snapshot = KVec::new();
        {
            let inner = self.inner.lock();
            for m in inner.managed.iter() {
                if snapshot
                    .push((m.id, m.mm.clone(), m.start, m.end), GFP_KERNEL)
                    .is_err()
                {
                    return false;
                }
            }
        }
        let mut measured = KVec::new();
        for (id, mm, start, end) in snapshot.iter() {
            let bytes = mm.mapped_bytes(self.real, *start, *end);
            if measured.push((*id, bytes), GFP_KERNEL).is_err() {
                return false;
            }
        }
        drop(snapshot);
        let mut inner = self.inner.lock();
        for (id, bytes) in measured.iter() {
            self.settle(&mut inner, *id, *bytes);
        }
        let done = inner.files == 0 && inner.managed.is_empty();
        let external = if done {
            core::mem::take(&mut inner.external)
        } else {
            KVec::new()
        };
        drop(inner);
        // Charges are refunded without the space's lock held.
        drop(external);
        done
    }

    /// As [`Self::reconcile`], inside an mmap handler (see
    /// [`UserMm::mapped_bytes_in_mmap`]): mappings whose address space is
    /// busy are left for later.
    pub(super) fn reconcile_in_mmap(&self) {
        let mut inner = self.inner.lock();
        let mut measured = KVec::new();
        for m in inner.managed.iter() {
            if let Some(bytes) = m.mm.mapped_bytes_in_mmap(self.real, m.start, m.end) {
                if measured.push((m.id, bytes), GFP_KERNEL).is_err() {
                    return;
                }
            }
        }
        for (id, bytes) in measured.iter() {
            self.settle(&mut inner, *id, *bytes);
        }
    }

    /// Registers the space with its vGPUs, so that their accounting
    /// decisions and counters can reconcile it.
    pub(super) fn list(this: &Arc<Self>) -> Result {
        let mut inner = this.inner.lock();
        if inner.listed {
            return Ok(());
        }
        for v in this.vgpus.iter() {
            v.register(this.clone())?;
        }
        inner.listed = true;
        Ok(())
    }

    pub(super) fn close_file(&self) {
        let mut inner = self.inner.lock();
        inner.files = inner.files.saturating_sub(1);
    }
}

/// State of one open `/dev/vgpu-uvm` file.
pub(crate) struct UvmFile {
    /// Its real file's space.
    pub(super) space: Arc<Space>,
}

impl UvmFile {
    /// State for a new proxy file whose private real file is `real`, for a
    /// container with vGPUs `vgpus`.
    pub(crate) fn new(
        vgpus: KVec<Arc<Vgpu>>,
        real: &crate::kapi::realfile::RealFile,
    ) -> Result<Self> {
        // The opener is charged its managed memory on each vGPU.
        let pid = ProcessPid::current()?;
        let comm = current_comm();
        let mut users = KVec::with_capacity(vgpus.len(), GFP_KERNEL)?;
        for v in vgpus.iter() {
            let h = v.procs.lock().hold(&pid, &comm, Counter::Space)?;
            users.push_within_capacity(h).map_err(|_| ENOMEM)?;
        }
        let space = Arc::pin_init(
            pin_init!(Space {
                vgpus,
                users,
                real: real.file().as_ptr() as usize,
                inner <- new_mutex!(SpaceInner {
                    files: 1,
                    next_id: 0,
                    managed: KVec::new(),
                    external: KVec::new(),
                    listed: false,
                    mm_of: None,
                }),
            }),
            GFP_KERNEL,
        )?;
        Ok(Self { space })
    }

    /// Counts a call refused by default deny on its container's vGPUs.
    pub(crate) fn count_denied(&self) {
        self.space.vgpus.iter().for_each(|v| v.count_denied());
    }
}

impl Kind for UvmFile {
    fn count_denied(&self) {
        UvmFile::count_denied(self);
    }

    fn release(&self, _host: &Host) {}
}

impl Drop for UvmFile {
    fn drop(&mut self) {
        self.space.close_file();
        let primary = self.space.inner.lock().mm_of.take();
        if let Some(s) = primary {
            s.close_file();
        }
    }
}

impl Reclaim for Space {
    fn reclaim(&self) -> bool {
        self.reconcile()
    }

    fn reclaim_in_mmap(&self) {
        self.reconcile_in_mmap()
    }
}
