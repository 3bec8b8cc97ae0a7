// SPDX-License-Identifier: GPL-2.0

//! The proxy transport: vgpu's nodes and their forwarding to the real driver.
//!
//! Each open of a vgpu node opens a private file of the matching real node
//! (resolved when the module loaded) and forwards ioctl, mmap and poll to it.
//! The command is decoded first, as the driver decodes it, so that vgpu sees
//! exactly what the driver will act on; a command the driver would refuse
//! is refused here with the same `EINVAL`.

use kernel::{
    fs::File,
    mm::virt::VmaNew,
    prelude::*,
    sync::{Arc, ArcBorrow},
};

use crate::kapi::{
    chrdev::{DevT, FileOperations, Poll},
    realfile::{RealFile, RealNode},
};
use crate::nv::ioctl;

/// Minor of `/dev/vgpuctl` in vgpu's number range.
pub(crate) const CTL_MINOR: u32 = 0;

/// The real driver's nodes vgpu forwards to.
pub(crate) struct Backend {
    /// `/dev/nvidiactl`.
    pub(crate) ctl: RealNode,
}

/// State of one open proxy file.
pub(crate) struct ProxyFile {
    /// Its private file of the real driver.
    pub(crate) real: RealFile,
}

/// The file operations of vgpu's nodes.
pub(crate) struct ProxyFops;

#[vtable]
impl FileOperations for ProxyFops {
    type OwnerModule = crate::VgpuModule;
    type Private = Arc<ProxyFile>;

    fn open(dev: DevT, file: &File) -> Result<Arc<ProxyFile>> {
        let state = crate::state()?;
        let node = match dev.minor() {
            CTL_MINOR => &state.backend.ctl,
            _ => return Err(ENODEV),
        };
        let real = node.open(file)?;
        Ok(Arc::new(ProxyFile { real }, GFP_KERNEL)?)
    }

    fn ioctl(me: ArcBorrow<'_, ProxyFile>, _file: &File, cmd: u32, arg: usize) -> Result<isize> {
        // Unknown escapes and wrong sizes never reach the driver.
        ioctl::decode(cmd).map_err(|_| EINVAL)?;
        me.real.ioctl(cmd, arg)
    }

    fn mmap(me: ArcBorrow<'_, ProxyFile>, _file: &File, vma: &VmaNew) -> Result {
        me.real.mmap(vma)
    }

    fn poll(me: ArcBorrow<'_, ProxyFile>, _file: &File, table: &Poll<'_>) -> u32 {
        me.real.poll(table)
    }
}
