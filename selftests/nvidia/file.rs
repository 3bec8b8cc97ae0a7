// SPDX-License-Identifier: GPL-2.0

//! Open files of the double's nodes and their file operations.

use kernel::{
    fs::{File, LocalFile},
    mm::virt::VmaNew,
    new_mutex,
    prelude::*,
    sync::{poll::PollCondVar, Arc, ArcBorrow, Mutex},
};

use crate::kapi::chrdev::{self, DevT, FileOperations};
use crate::memory::Backing;
use crate::nv::ioctl::{self, Escape, Xfer};
use crate::{driver, CTL_MINOR, NV_MAJOR};

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
    pending: Mutex<bool>,
    #[pin]
    cv: PollCondVar,
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

/// The file operations of `/dev/nvidiactl` and `/dev/nvidiaN`.
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

#[vtable]
impl FileOperations for NvFops {
    type OwnerModule = crate::NvidiaDouble;
    type Private = Arc<NvFile>;

    fn open(dev: DevT, _file: &File) -> Result<Arc<NvFile>> {
        let drv = driver()?;
        let kind = match dev.minor() {
            CTL_MINOR => Kind::Ctl,
            m if (m as usize) < drv.gpu_count() => Kind::Gpu(m),
            _ => return Err(ENODEV),
        };
        let f = Arc::pin_init(
            try_pin_init!(NvFile {
                id: drv.next_file_id(),
                kind,
                map <- new_mutex!(MapCtx::Unused),
                registered <- new_mutex!(None),
                pending <- new_mutex!(false),
                cv <- PollCondVar::new(c"nvfile", kernel::static_lock_class!()),
            }),
            GFP_KERNEL,
        )?;
        if let Kind::Gpu(m) = kind {
            crate::gpu_files_changed(m, 1);
        }
        Ok(f)
    }

    fn release(me: Arc<NvFile>, _file: &File) {
        if let Kind::Gpu(m) = me.kind {
            crate::gpu_files_changed(m, -1);
        }
        if let Ok(drv) = driver() {
            drv.file_closed(&me);
        }
    }

    fn ioctl(me: ArcBorrow<'_, NvFile>, _file: &File, cmd: u32, arg: usize) -> Result<isize> {
        crate::count_ioctl();
        let drv = driver()?;
        let arg = arg as u64;
        // The claimed release's escapes and size checks: an escape newer
        // than it is unknown (`EINVAL`, as `nvidia_ioctl` answers one).
        let abi = crate::abi();
        let rule = |e| abi.escape_rule(e);
        let command = ioctl::decode_with(cmd, rule).map_err(|_| EINVAL)?;
        let (escape, size, params_addr) = if command.escape == Escape::IoctlXferCmd {
            let mut hdr = [0u8; Xfer::SIZE];
            crate::kapi::user::read(arg, &mut hdr)?;
            let x = Xfer::from_bytes(&hdr);
            let inner = x.inner_with(rule).map_err(|_| EINVAL)?;
            (inner.escape, inner.size, x.ptr)
        } else {
            (command.escape, command.size, arg)
        };
        let mut params = crate::kapi::user::read_vec(params_addr, size)?;
        drv.escape(&me, escape, &mut params)?;
        crate::kapi::user::write(params_addr, &params)?;
        Ok(0)
    }

    fn mmap(me: ArcBorrow<'_, NvFile>, _file: &File, vma: &VmaNew) -> Result {
        let ctx = me.map.lock();
        // No mapping context: `EINVAL`, and the file can still get one
        // (`nv-mmap.c:561-566` at 595.45.04). With one, the mmap uses it
        // and leaves it on the file (see [`MapCtx`]).
        let MapCtx::Ready {
            backing,
            offset,
            len,
        } = &*ctx
        else {
            return Err(EINVAL);
        };
        let want = vma.end() - vma.start();
        match me.kind {
            // A GPU node maps exactly the context's range, else `ENXIO`
            // (`nv-mmap.c:600-603`).
            Kind::Gpu(_) if want != *len => Err(ENXIO),
            // The ctl node maps system memory from the context's first page
            // up to the allocation's end, else `ERANGE` (`nv-mmap.c:697-702`).
            Kind::Ctl if offset.checked_add(want).is_none_or(|e| e > backing.len()) => Err(ERANGE),
            _ => backing.map_into(vma, *offset, want),
        }
    }

    fn poll(me: ArcBorrow<'_, NvFile>, file: &File, table: &chrdev::Poll<'_>) -> u32 {
        table.register_wait(file, &me.cv);
        let mut pending = me.pending.lock();
        if core::mem::replace(&mut *pending, false) {
            bindings_poll::POLLIN | bindings_poll::POLLPRI
        } else {
            0
        }
    }
}

mod bindings_poll {
    pub(super) const POLLIN: u32 = kernel::bindings::POLLIN;
    pub(super) const POLLPRI: u32 = kernel::bindings::POLLPRI;
}

/// The double's file state behind `file`, if `file` is one of its nodes.
pub(crate) fn nv_file(file: &LocalFile) -> Option<ArcBorrow<'_, NvFile>> {
    chrdev::private::<NvFops>(file)
}

/// Whether `file` is a GPU-node file of the double for GPU `gpu`.
pub(crate) fn is_gpu_file(file: &LocalFile, gpu: u32) -> bool {
    chrdev::is_ours::<NvFops>(file) && chrdev::file_dev(file) == DevT::new(NV_MAJOR, gpu)
}
