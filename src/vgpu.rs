// SPDX-License-Identifier: GPL-2.0

//! vgpu: per-container virtual NVIDIA GPUs.
//!
//! vgpu sits between containers and the NVIDIA driver. Each container gets
//! virtual device nodes (`/dev/vgpuctl`, `/dev/vgpuN`) instead of the real
//! ones; vgpu forwards their ioctls and mmaps to the driver and uses that
//! position to enforce a memory ceiling and a compute share per vGPU. It is
//! configured at run time through `/sys/class/vgpu/`.
//!
//! Layout: [`nv`] holds the driver's ABI as pure, host-tested logic; [`kapi`]
//! holds the safe wrappers over kernel APIs; the rest is the driver.

use kernel::{
    miscdevice::{MiscDeviceOptions, MiscDeviceRegistration},
    prelude::*,
};

mod ctl;
// Shared with the driver double; each crate uses a subset of the glue.
#[allow(dead_code)]
mod kapi;
pub mod nv;

module! {
    type: VgpuModule,
    name: "vgpu",
    authors: ["vgpu developers"],
    description: "Per-container virtual NVIDIA GPUs: memory ceilings and compute shares",
    license: "GPL",
}

/// The loaded module: its class and its control node.
///
/// Fields drop in declaration order: the node goes before the class.
#[pin_data]
pub struct VgpuModule {
    #[pin]
    _ctl: MiscDeviceRegistration<ctl::CtlFile>,
    _class: kapi::class::Class,
}

impl kernel::InPlaceModule for VgpuModule {
    fn init(_module: &'static ThisModule) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            _class: kapi::class::Class::new(c"vgpu")?,
            _ctl <- MiscDeviceRegistration::register(MiscDeviceOptions { name: c"vgpuctl" }),
        })
    }
}

#[kunit_tests(vgpu_nv_ioctl)]
mod tests {
    use crate::nv::ioctl::{decode, nv_iowr, DecodeError, Escape};

    #[test]
    fn decodes_rm_alloc_in_both_layouts() {
        assert_eq!(decode(nv_iowr(0x2b, 32)).map(|c| c.escape), Ok(Escape::RmAlloc));
        assert_eq!(decode(nv_iowr(0x2b, 48)).map(|c| c.escape), Ok(Escape::RmAlloc));
    }

    #[test]
    fn refuses_unknown_and_missized() {
        assert_eq!(decode(nv_iowr(0x01, 8)), Err(DecodeError::UnknownEscape(0x01)));
        assert!(decode(nv_iowr(0x2a, 33)).is_err());
    }
}
