// SPDX-License-Identifier: GPL-2.0

//! The module-wide index of verified clients: which `/dev/vgpuctl` file
//! verified each RM client handle. UVM calls name RM clients by handle (the
//! driver looks them up globally), so `/dev/vgpu-uvm` asks here whether a
//! client is its container's.

use kernel::{prelude::*, sync::Arc};

use super::ctx::CtlFile;
use crate::objects::Charge;
use crate::vgpu::Vgpu;

kernel::sync::global_lock! {
    // SAFETY: initialised by `init` in the module's `init`, before any file
    // can be opened.
    unsafe(uninit) static CLIENTS: Mutex<KVec<(u32, Arc<CtlFile>)>> = KVec::new();
}

/// Sets up the index (module `init`).
///
/// # Safety
///
/// Called once, before any `/dev/vgpuctl` file is opened.
pub(crate) unsafe fn init() {
    // SAFETY: see the function's safety section.
    unsafe { CLIENTS.init() };
}

/// Empties the index and frees its storage (module unload: a static is
/// never dropped).
pub(crate) fn clear() {
    drop(core::mem::take(&mut *CLIENTS.lock()));
}

/// Records that `file` verified client `handle` (a handle verified fresh
/// is in no other entry; any stale entry for it goes).
pub(super) fn record(handle: u32, file: &Arc<CtlFile>) -> Result {
    let mut index = CLIENTS.lock();
    index.retain(|(h, _)| *h != handle);
    index.push((handle, file.clone()), GFP_KERNEL)?;
    Ok(())
}

/// Client `handle` was freed.
pub(super) fn forget(handle: u32) {
    CLIENTS.lock().retain(|(h, _)| *h != handle);
}

/// Removes every client of `file` from the index (its file is going away).
pub(crate) fn forget_file(file: &Arc<CtlFile>) {
    CLIENTS.lock().retain(|(_, c)| !Arc::ptr_eq(c, file));
}

/// The file that verified client `handle`, if any.
pub(super) fn owner_of(handle: u32) -> Option<Arc<CtlFile>> {
    CLIENTS
        .lock()
        .iter()
        .find(|(h, _)| *h == handle)
        .map(|(_, c)| c.clone())
}

/// Whether client `handle` was verified by a `/dev/vgpuctl` file of the
/// container whose vGPUs are `vgpus` (one in common is enough: the sets are
/// fixed per cgroup at open).
pub(crate) fn client_in(handle: u32, vgpus: &[Arc<Vgpu>]) -> bool {
    owner_of(handle).is_some_and(|c| c.shares_vgpus(vgpus))
}

/// The charge of memory object `h_memory` of verified client `h_client`,
/// if vgpu charged it.
pub(crate) fn charge_of(h_client: u32, h_memory: u32) -> Option<Arc<Charge>> {
    let owner = owner_of(h_client)?;
    let mut objects = owner.objects.lock();
    crate::objects::share(&mut objects.obj_mut(h_client, h_memory)?.charge)
        .ok()
        .flatten()
}
