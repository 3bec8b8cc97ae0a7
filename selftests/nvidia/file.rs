// SPDX-License-Identifier: GPL-2.0

//! Open files of the double's NVIDIA nodes (`/dev/nvidiactl`,
//! `/dev/nvidiaN`); their file operations are in `fops.rs`.

use kernel::{
    fs::LocalFile,
    prelude::*,
    sync::{poll::PollCondVar, Arc, ArcBorrow, Mutex},
};

use crate::base::NV_MAJOR;
use crate::kapi::chrdev::{self, DevT};
use crate::memory::Backing;

/// Which node a file was opened on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `/dev/nvidiactl`.
    Ctl,
    /// `/dev/nvidiaN`, GPU `N`.
    Gpu(u32),
}

/// A file's mapping context: set up by RM_MAP_MEMORY naming the file. A
/// file holds at most one in its life: it stays on the file after mmap,
/// until close, as the driver's list node does (`nv-usermap.c:102-116` at
/// 595.45.04: set once, a second is NV_ERR_STATE_IN_USE; `nvidia_mmap_helper`
/// only reads it, `nv-mmap.c:557-570`), so every mmap of the file maps the
/// same memory.
pub(crate) enum MapCtx {
    /// Never set up.
    Unused,
    /// Set up.
    Ready {
        /// What to map.
        backing: Arc<Backing>,
        /// Offset into it.
        offset: usize,
        /// Length RM_MAP_MEMORY asked for (a GPU node's mmap must have it).
        len: usize,
    },
}

/// State of one open file.
#[pin_data]
pub(crate) struct NvFile {
    /// Unique id of this open (clients are bound to it).
    pub(crate) id: u64,
    /// The node.
    pub(crate) kind: Kind,
    /// Mapping context.
    #[pin]
    pub(crate) map: Mutex<MapCtx>,
    /// For a GPU-node file, the id of the ctl file it was registered to.
    #[pin]
    pub(crate) registered: Mutex<Option<u64>>,
    /// A dataless OS event is pending (consumed by poll, as the driver does).
    #[pin]
    pub(crate) pending: Mutex<bool>,
    #[pin]
    pub(crate) cv: PollCondVar,
}

impl NvFile {
    /// The file id RM checks clients against: a GPU-node file registered
    /// with REGISTER_FD acts for its ctl file (the driver's
    /// `clientOSInfo = nvfp->ctl_nvfp`, else `nvfp`), e.g. for
    /// RM_ALLOC_MEMORY, which goes to the GPU node.
    pub(crate) fn client_id(&self) -> u64 {
        self.registered.lock().unwrap_or(self.id)
    }

    /// Marks an event pending and wakes pollers.
    pub(crate) fn post_event(&self) {
        *self.pending.lock() = true;
        self.cv.notify_all();
    }
}

/// The file operations of `/dev/nvidiactl` and `/dev/nvidiaN` (`fops.rs`).
pub(crate) struct NvFops;

/// Writes "nvidiaN\0" into `out`; returns the length without the NUL.
pub(crate) fn gpu_node_name(n: usize, out: &mut [u8; 16]) -> usize {
    let prefix = b"nvidia";
    out[..prefix.len()].copy_from_slice(prefix);
    let mut len = prefix.len();
    let mut digits = [0u8; 4];
    let mut k = 0;
    let mut v = n;
    loop {
        digits[k] = b'0' + (v % 10) as u8;
        k += 1;
        v /= 10;
        if v == 0 || k == digits.len() {
            break;
        }
    }
    while k > 0 {
        k -= 1;
        out[len] = digits[k];
        len += 1;
    }
    out[len] = 0;
    len
}

/// The double's file state behind `file`, if `file` is one of its nodes.
pub(crate) fn nv_file(file: &LocalFile) -> Option<ArcBorrow<'_, NvFile>> {
    chrdev::private::<NvFops>(file)
}

/// Whether `file` is a GPU-node file of the double for GPU `gpu`.
pub(crate) fn is_gpu_file(file: &LocalFile, gpu: u32) -> bool {
    chrdev::is_ours::<NvFops>(file) && chrdev::file_dev(file) == DevT::new(NV_MAJOR, gpu)
}
