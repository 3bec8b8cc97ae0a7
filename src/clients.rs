// SPDX-License-Identifier: GPL-2.0

//! The index of verified clients: which `/dev/vgpuctl` file verified each
//! RM client handle (an `XArray` keyed by the handle, in [`Host`]). UVM
//! calls name RM clients by handle (the driver looks them up globally), so
//! `/dev/vgpu-uvm` asks here whether a client is its container's.

use kernel::{prelude::*, sync::Arc};

use crate::host::Host;
use crate::objects::{share, Charge, CtlFile};
use crate::vgpu::Vgpu;

/// Records that `file` verified client `handle` (a handle verified fresh
/// is in no other entry; any stale entry for it goes).
pub(crate) fn record(host: &Host, handle: u32, file: &Arc<CtlFile>) -> Result {
    let mut index = host.clients.lock();
    let old = index.store(handle as usize, file.clone(), GFP_KERNEL)?;
    drop(index);
    drop(old);
    Ok(())
}

/// Client `handle` was freed.
pub(crate) fn forget(host: &Host, handle: u32) {
    let gone = host.clients.lock().remove(handle as usize);
    drop(gone);
}

/// Removes every client of `file` from the index (its file is going away).
///
/// Allocates nothing, so it cannot stop half-way: the entries it removes
/// are references to `file` itself, which the caller holds too, so none
/// is the last and each drops at once, under the index's spinlock, as a
/// count going down. (It once gathered them in a list to drop later; an
/// allocation failing there left entries in the index, and with them the
/// file and its records for good: found by the fuzz suite.)
pub(crate) fn forget_file(host: &Host, file: &Arc<CtlFile>) {
    let objects = file.objects.lock();
    let mut index = host.clients.lock();
    for h in objects.client_handles() {
        let mine = index
            .get(h as usize)
            .is_some_and(|c| core::ptr::eq(&*c, &**file));
        if mine {
            drop(index.remove(h as usize));
        }
    }
}

/// The file that verified client `handle`, if any.
pub(crate) fn owner_of(host: &Host, handle: u32) -> Option<Arc<CtlFile>> {
    host.clients.lock().get(handle as usize).map(|c| c.into())
}

/// Whether client `handle` was verified by a `/dev/vgpuctl` file of the
/// container whose vGPUs are `vgpus` (one in common is enough: the sets are
/// fixed per cgroup at open).
pub(crate) fn client_in(host: &Host, handle: u32, vgpus: &[Arc<Vgpu>]) -> bool {
    owner_of(host, handle).is_some_and(|c| c.shares_vgpus(vgpus))
}

/// The charge of memory object `h_memory` of verified client `h_client`,
/// if vgpu charged it (shared from now on: the caller holds it too).
pub(crate) fn charge_of(host: &Host, h_client: u32, h_memory: u32) -> Option<Arc<Charge>> {
    let owner = owner_of(host, h_client)?;
    let mut objects = owner.objects.lock();
    share(&mut objects.obj_mut(h_client, h_memory)?.charge)
        .ok()
        .flatten()
}
