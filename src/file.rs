// SPDX-License-Identifier: GPL-2.0

//! One open file of vgpu's nodes: its private real file and what it stands
//! for. Each kind of node has its own file operations ([`CtlFops`],
//! [`GpuFops`], [`UvmFops`], implemented by the dispatcher `src/proxy.rs`)
//! and its own state, a [`ProxyFile`] of that kind; handlers that meet
//! another of vgpu's files through an fd in a call's parameters find its
//! state here ([`of`], [`real_of`]), without knowing the dispatcher.

use kernel::{fs::LocalFile, sync::Arc};

use crate::clients;
use crate::host::Host;
use crate::kapi::chrdev::{self, FileOperations};
use crate::kapi::realfile::RealFile;
use crate::objects::CtlFile;
use crate::vgpu::Vgpu;

/// The file operations of `/dev/vgpuctl` (private: `Arc<ProxyFile<Arc<CtlFile>>>`).
pub(crate) struct CtlFops;

/// The file operations of a vGPU's `/dev/vgpuN` (private:
/// `Arc<ProxyFile<Arc<Vgpu>>>`).
pub(crate) struct GpuFops;

/// The file operations of `/dev/vgpu-uvm` (private: a [`ProxyFile`] of the
/// UVM node's state, `uvm::space::UvmFile`).
pub(crate) struct UvmFops;

/// What an open file stands for: a ctl file's vGPUs and objects, a GPU
/// node's vGPU, a UVM file's space.
pub(crate) trait Kind {
    /// Counts a call refused by default deny on the file's vGPUs.
    fn count_denied(&self);

    /// Undoes what the open did, when the file goes.
    fn release(&self, host: &Host);
}

impl Kind for Arc<CtlFile> {
    fn count_denied(&self) {
        CtlFile::count_denied(self);
    }

    // Its clients leave the module-wide index, then are freed in the driver
    // and refunded. The driver frees a file's clients only when its own
    // file goes, and a mapping made through this file holds that file past
    // this close (`RealFile::mmap` gives the VMA the driver's file):
    // refunding without freeing would leave their VRAM in the driver,
    // uncharged, and closing and reopening would pass the ceiling. A client
    // the driver will not free is left to its own release, and refunded
    // with the last reference to the `CtlFile`, as before.
    fn release(&self, host: &Host) {
        clients::forget_file(host, self);
        let mut kept = 0;
        loop {
            // The lock is not held across the driver's call.
            let next = self.objects.lock().client_handles().nth(kept);
            let Some(h) = next else {
                break;
            };
            if host.rm.free(h, h, h).is_ok() {
                self.objects.lock().freed(h, h);
                self.drop_reservations(h);
            } else {
                kept += 1;
            }
        }
    }
}

impl Kind for Arc<Vgpu> {
    fn count_denied(&self) {
        Vgpu::count_denied(self);
    }

    fn release(&self, _host: &Host) {
        let mut users = self.users.lock();
        *users = users.saturating_sub(1);
    }
}

/// State of one open proxy file of kind `K`.
pub(crate) struct ProxyFile<K: Kind> {
    /// Its private file of the real driver.
    pub(crate) real: RealFile,
    /// What it stands for.
    pub(crate) kind: K,
    /// The host's GPUs, taken at open so that calls need no global lock.
    pub(crate) host: Arc<Host>,
}

impl<K: Kind> ProxyFile<K> {
    /// Counts a call refused by default deny on the file's vGPUs.
    pub(crate) fn count_denied(&self) {
        self.kind.count_denied();
    }
}

impl<K: Kind> Drop for ProxyFile<K> {
    fn drop(&mut self) {
        self.kind.release(&self.host);
    }
}

/// The state of `file` if it was opened through the operations `T`.
pub(crate) fn of<T: FileOperations>(
    file: &LocalFile,
) -> Option<<T::Private as kernel::types::ForeignOwnable>::Borrowed<'_>> {
    chrdev::private::<T>(file)
}

/// Runs `f` on the private real file of `file` if it is one of vgpu's proxy
/// files, of any kind.
pub(crate) fn real_of<R>(file: &LocalFile, f: impl FnOnce(&RealFile) -> R) -> Option<R> {
    if let Some(p) = of::<CtlFops>(file) {
        return Some(f(&p.real));
    }
    if let Some(p) = of::<GpuFops>(file) {
        return Some(f(&p.real));
    }
    of::<UvmFops>(file).map(|p| f(&p.real))
}
