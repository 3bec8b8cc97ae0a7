// SPDX-License-Identifier: GPL-2.0

//! The TSGs and channels enrolled in a vGPU's schedule ([`Enrolled`]) and
//! the USERD the scheduler watches to tell whether they have work
//! ([`Watched`]).

use kernel::{prelude::*, sync::Arc, types::ScopeGuard};

use super::gpu::GpuSched;
use crate::kapi::{rmops::RmOps, userd::UserdMap};
use crate::vgpu::{Entry, Vgpu, Watch, USERD_WATCHED};

/// A TSG or channel enrolled in its vGPU's schedule, shared by the handles
/// that reach it (the TSG and its channels); leaves the schedule when the
/// last of them is freed.
pub(crate) struct Enrolled {
    vgpu: Arc<Vgpu>,
    id: u64,
}

impl Enrolled {
    /// Enrols `handle` of `client` (a TSG if `tsg`, else a channel outside a
    /// TSG) with `vgpu`. The driver creates both disabled.
    pub(crate) fn new(vgpu: &Arc<Vgpu>, client: u32, handle: u32, tsg: bool) -> Result<Arc<Self>> {
        crate::kapi::inject::record()?;
        let id = {
            let mut c = vgpu.compute.lock();
            let id = c.next_id;
            c.entries.push(
                Entry {
                    id,
                    client,
                    handle,
                    tsg,
                    wanted: false,
                },
                GFP_KERNEL,
            )?;
            c.next_id += 1;
            id
        };
        let e = Arc::new(
            Enrolled {
                vgpu: vgpu.clone(),
                id,
            },
            GFP_KERNEL,
        );
        // On failure the new `Enrolled` was never made: drop the entry here.
        if e.is_err() {
            vgpu.compute.lock().entries.retain(|x| x.id != id);
        }
        Ok(e?)
    }

    /// The vGPU it runs on.
    pub(crate) fn vgpu(&self) -> &Arc<Vgpu> {
        &self.vgpu
    }

    /// Its entry's number in the vGPU's schedule.
    pub(crate) fn id(&self) -> u64 {
        self.id
    }
}

impl Drop for Enrolled {
    fn drop(&mut self) {
        let id = self.id;
        self.vgpu.compute.lock().entries.retain(|e| e.id != id);
    }
}

/// A channel's USERD, duplicated into vgpu's own client and mapped into the
/// kernel, so the scheduler can tell whether the channel has work queued
/// (`GPGet != GPPut`). The duplicate keeps the memory alive whatever the
/// container frees; dropping this unmaps it and frees the duplicate.
pub(crate) struct Watched {
    rm: RmOps,
    vgpu: Arc<Vgpu>,
    id: u64,
    kclient: u32,
    kdevice: u32,
    h_dup: u32,
    addr: usize,
}

impl Watched {
    /// Watches the USERD at `offset` of memory `h_userd` of `client`, a
    /// channel in schedule entry `entry` of `vgpu` on `gpu`. `None` if the
    /// driver will not duplicate or map it (the entry then counts as busy
    /// whenever it is enabled).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        rm: &RmOps,
        kclient: u32,
        gpu: &GpuSched,
        vgpu: &Arc<Vgpu>,
        entry: u64,
        client: u32,
        h_userd: u32,
        offset: u64,
    ) -> Result<Option<Arc<Self>>> {
        use crate::status::Fail;
        let kdevice = gpu.kdevice;
        // Freed when this returns, unless it is kept at the end.
        let dup = match rm.dup_object(kclient, kdevice, 0, client, h_userd) {
            Ok(o) => o,
            Err(Fail::Rm(_)) => return Ok(None),
            Err(Fail::Os(e)) => return Err(e),
        };
        let h_dup = dup.handle();
        let addr = match rm.map_memory(kclient, kdevice, h_dup, offset, USERD_WATCHED) {
            Ok(a) if a % 4 == 0 => a,
            Ok(a) => {
                let _ = rm.unmap_memory(kclient, kdevice, h_dup, a);
                return Ok(None);
            }
            Err(Fail::Rm(_)) => return Ok(None),
            Err(Fail::Os(e)) => return Err(e),
        };
        // Unmapped when this fails (before the duplicate goes: dropped
        // first, as declared later).
        let unmap = ScopeGuard::new(|| {
            let _ = rm.unmap_memory(kclient, kdevice, h_dup, addr);
        });
        // The one unsafe call outside kapi/ (`sched` denies unsafe code):
        // only here are the mapping and the watch that drops it known.
        // SAFETY: `addr` maps `USERD_WATCHED` (`UserdMap::LEN`) bytes of the
        // channel's USERD, 4-aligned (checked above); `Watched::drop` takes
        // the watch holding `userd` out of the list before it unmaps them.
        #[allow(unsafe_code)]
        let userd = unsafe { UserdMap::new(addr) };
        crate::kapi::inject::record()?;
        let id = {
            let mut c = vgpu.compute.lock();
            let id = c.next_id;
            c.watches.push(Watch { id, entry, userd }, GFP_KERNEL)?;
            c.next_id += 1;
            id
        };
        match Arc::new(
            Watched {
                rm: *rm,
                vgpu: vgpu.clone(),
                id,
                kclient,
                kdevice,
                h_dup,
                addr,
            },
            GFP_KERNEL,
        ) {
            Ok(w) => {
                unmap.dismiss();
                dup.keep();
                Ok(Some(w))
            }
            Err(e) => {
                vgpu.compute.lock().watches.retain(|w| w.id != id);
                Err(e.into())
            }
        }
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        let id = self.id;
        // Out of the list first: nobody reads the address after this.
        self.vgpu.compute.lock().watches.retain(|w| w.id != id);
        let _ = self
            .rm
            .unmap_memory(self.kclient, self.kdevice, self.h_dup, self.addr);
        let _ = self.rm.free(self.kclient, self.kdevice, self.h_dup);
    }
}
