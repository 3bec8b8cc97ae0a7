// SPDX-License-Identifier: GPL-2.0

//! `/dev/vgpuctl`: the proxy a container sees as `/dev/nvidiactl`.
//!
//! In this skeleton it only classifies the commands it receives, as the
//! driver would, and refuses them: forwarding to the real driver comes with
//! the proxy transport.

use kernel::{
    fs::File,
    miscdevice::{MiscDevice, MiscDeviceRegistration},
    prelude::*,
};

use crate::nv::ioctl;

/// State of one open file of `/dev/vgpuctl`.
pub(crate) struct CtlFile;

#[vtable]
impl MiscDevice for CtlFile {
    type Ptr = KBox<Self>;

    fn open(_file: &File, _misc: &MiscDeviceRegistration<Self>) -> Result<KBox<Self>> {
        Ok(KBox::new(CtlFile, GFP_KERNEL)?)
    }

    fn ioctl(_me: &CtlFile, _file: &File, cmd: u32, _arg: usize) -> Result<isize> {
        match ioctl::decode(cmd) {
            // A command the driver would take, but nothing backs it yet.
            Ok(_) => Err(ENODEV),
            // What the driver answers for an unknown nr or a wrong size.
            Err(_) => Err(EINVAL),
        }
    }
}
