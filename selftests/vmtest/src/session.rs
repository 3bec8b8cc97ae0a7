// SPDX-License-Identifier: GPL-2.0

//! A CUDA-like session: a ctl node and a GPU node open, a client, device 0
//! and its subdevice, as libcuda sets them up.

use nvclient::{Ctl, Gpu};

/// An open session.
pub struct Session {
    /// The ctl node (`/dev/nvidiactl` or `/dev/vgpuctl`).
    pub ctl: Ctl,
    /// The GPU node, held open as libcuda holds it.
    pub _gpu: Gpu,
    /// The client.
    pub client: u32,
    /// Device 0.
    pub device: u32,
    /// Its subdevice 0.
    pub subdevice: u32,
}

impl Session {
    /// Opens `ctl` and `gpu` and allocates client, device and subdevice.
    pub fn open(ctl: &str, gpu: &str) -> Result<Session, String> {
        Self::open_on(ctl, gpu, 0)
    }

    /// As [`Session::open`], with device instance `device_id` (the index
    /// of the GPU the device is for).
    pub fn open_on(ctl: &str, gpu: &str, device_id: u32) -> Result<Session, String> {
        let c = Ctl::open(ctl).map_err(|e| format!("open {ctl}: {e:?}"))?;
        let g = Gpu::open(gpu).map_err(|e| format!("open {gpu}: {e:?}"))?;
        let client = c
            .alloc_root_client()
            .map_err(|e| format!("client: {e:?}"))?;
        let device = c
            .alloc_device(client, 0, device_id)
            .map_err(|e| format!("device: {e:?}"))?;
        let subdevice = c
            .alloc_subdevice(client, device, 0, 0)
            .map_err(|e| format!("subdevice: {e:?}"))?;
        Ok(Session {
            ctl: c,
            _gpu: g,
            client,
            device,
            subdevice,
        })
    }

    /// A session as a container with vGPU `id` sees it: `/dev/vgpuctl` as
    /// its nvidiactl and `/dev/vgpuN` as its nvidia0.
    pub fn vgpu(id: u32) -> Result<Session, String> {
        Self::open("/dev/vgpuctl", &format!("/dev/vgpu{id}"))
    }
}
