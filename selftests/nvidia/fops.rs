// SPDX-License-Identifier: GPL-2.0

//! The file operations of the double's NVIDIA nodes: an entry point, which
//! reaches the driver through `global.rs` and hands each escape to the RM
//! dispatcher (`rm/mod.rs`).

use kernel::{
    fs::File,
    mm::virt::VmaNew,
    new_mutex,
    prelude::*,
    sync::{poll::PollCondVar, Arc, ArcBorrow},
};

use crate::base::CTL_MINOR;
use crate::file::{Kind, MapCtx, NvFile, NvFops};
use crate::global::driver;
use crate::kapi::chrdev::{self, DevT, FileOperations};
use crate::nv::ioctl::{self, Escape, Xfer};
use crate::settings;

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
            settings::gpu_files_changed(m, 1);
        }
        Ok(f)
    }

    fn release(me: Arc<NvFile>, _file: &File) {
        if let Kind::Gpu(m) = me.kind {
            settings::gpu_files_changed(m, -1);
        }
        if let Ok(drv) = driver() {
            drv.file_closed(&me);
        }
    }

    fn ioctl(me: ArcBorrow<'_, NvFile>, _file: &File, cmd: u32, arg: usize) -> Result<isize> {
        settings::count_ioctl();
        let drv = driver()?;
        let arg = arg as u64;
        // The claimed release's escapes and size checks: an escape newer
        // than it is unknown (`EINVAL`, as `nvidia_ioctl` answers one).
        let abi = settings::abi();
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
        crate::calls::count(crate::calls::Kind::Escape, u32::from(escape.nr()), 0);
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
