// SPDX-License-Identifier: GPL-2.0

//! The UVM node's file operations: an entry point, which reaches the
//! driver through `global.rs` and hands each command to the UVM
//! dispatcher (`mod.rs`), and each mmap to `mmap.rs`.

use kernel::{
    fs::File,
    mm::virt::VmaNew,
    new_mutex,
    prelude::*,
    sync::{Arc, ArcBorrow},
};

use super::file::{FileState, UvmFile, UvmFops};
use crate::global::driver;
use crate::kapi::chrdev::{DevT, FileOperations};
use crate::kapi::user;
use crate::nv::uvm::Command;
use crate::settings;

/// Minor of `/dev/nvidia-uvm-tools`.
const TOOLS_MINOR: u32 = 1;

#[vtable]
impl FileOperations for UvmFops {
    type OwnerModule = crate::NvidiaDouble;
    type Private = Arc<UvmFile>;

    fn open(dev: DevT, _file: &File) -> Result<Arc<UvmFile>> {
        driver()?;
        Arc::pin_init(
            try_pin_init!(UvmFile {
                tools: dev.minor() == TOOLS_MINOR,
                state <- new_mutex!(FileState::Uninit),
            }),
            GFP_KERNEL,
        )
    }

    fn release(me: Arc<UvmFile>, _file: &File) {
        let state = core::mem::replace(&mut *me.state.lock(), FileState::Uninit);
        if let Ok(drv) = driver() {
            drv.uvm_file_closed(state);
        }
    }

    fn ioctl(me: ArcBorrow<'_, UvmFile>, _file: &File, cmd: u32, arg: usize) -> Result<isize> {
        settings::count_ioctl();
        if me.tools {
            // The tools minor serves only event-tracker commands, which the
            // double does not model.
            return Err(EINVAL);
        }
        let command = Command::decode(cmd).ok_or(ENOSYS)?;
        crate::calls::count(crate::calls::Kind::Uvm, cmd, 0);
        // The block as the claimed release lays it out.
        let row = settings::abi().uvm_command(command);
        let Some(status_at) = row.status_at else {
            // UVM_DEINITIALIZE: reads no block and does nothing.
            return Ok(0);
        };
        let drv = driver()?;
        let arg = arg as u64;
        let mut p = user::read_vec(arg, row.size)?;
        let status = drv.uvm_ioctl(&me, command, &mut p);
        if let Some(slot) = p.get_mut(status_at..status_at + 4) {
            slot.copy_from_slice(&status.to_ne_bytes());
        }
        user::write(arg, &p)?;
        Ok(0)
    }

    fn mmap(me: ArcBorrow<'_, UvmFile>, _file: &File, vma: &VmaNew) -> Result {
        if me.tools {
            // The tools node has no mmap.
            return Err(ENODEV);
        }
        let id = me.va_space().ok_or(EBADFD)?;
        driver()?.uvm_mmap(id, vma)
    }
}
