// SPDX-License-Identifier: GPL-2.0

//! `/proc/driver/nvidia` (`params`, `version`, `gpus/<bus location>/information`),
//! made by `procfs.c` as the real driver makes it at load and as it probes
//! each GPU (`kernel-open/nvidia/nv-procfs.c`, 595.45.04).

use crate::nv::rmops::PciLocation;
use kernel::error::to_result;
use kernel::prelude::*;

extern "C" {
    fn nv_double_procfs_init(release: *const u8) -> core::ffi::c_int;
    fn nv_double_procfs_add_gpu(
        minor: core::ffi::c_uint,
        domain: core::ffi::c_uint,
        bus: core::ffi::c_uint,
        slot: core::ffi::c_uint,
        function: core::ffi::c_uint,
        model: *const u8,
        uuid: *const u8,
    ) -> core::ffi::c_int;
    fn nv_double_procfs_exit();
}

// `NV_DOUBLE_PROCFS_MAX_GPUS` of procfs.h: `procfs.c` keeps a slot per GPU.
const _: () = assert!(crate::base::MAX_GPUS <= 8);

/// The Model line of every fake GPU's `information`. The double's own name,
/// not a product's: the real driver names the board from its PCI ids
/// (`rm_get_device_name`), and the product of the double's device id
/// (0x2330, an H100 SXM5) has sizes the double's GPUs do not.
const MODEL: &CStr = c"vgpu driver double GPU";

/// The PCI location of fake GPU `gpu`: domain 0, bus `gpu + 1`, slot 0,
/// function 0, the one location every interface of the double reports for
/// it (CARD_INFO in `rm/escape.rs`, `enumerate_gpus` in `kclient.rs`, the procfs
/// directory here).
pub(crate) fn pci_location(gpu: u32) -> PciLocation {
    PciLocation {
        domain: 0,
        bus: (gpu + 1) as u8,
        slot: 0,
        function: 0,
    }
}

/// The files, removed when dropped. At most one exists (the module holds
/// it from load to unload).
pub(crate) struct ProcFiles(());

impl ProcFiles {
    /// Makes the files for `release`, with a `gpus/` directory for each of
    /// fake GPUs `0..gpus`. On an error nothing is left.
    pub(crate) fn new(release: &CStr, gpus: u32) -> Result<Self> {
        // SAFETY: `release` is a valid NUL-terminated string for the call,
        // which copies it; nothing else makes the files (one module
        // instance, called once from its init).
        to_result(unsafe { nv_double_procfs_init(release.as_char_ptr()) })?;
        let mut files = Self(());
        for gpu in 0..gpus {
            // On an error `files` drops, which removes everything made.
            files.add_gpu(gpu)?;
        }
        Ok(files)
    }

    /// Makes `gpus/<bus location>/information` for fake GPU `gpu`, the GPU
    /// of `/dev/nvidia<gpu>`, with the UUID GET_GID_INFO gives for it.
    fn add_gpu(&mut self, gpu: u32) -> Result {
        let mut text = [0u8; 41];
        let len = crate::base::format_uuid(&crate::base::gpu_uuid(gpu), &mut text);
        let uuid =
            CStr::from_bytes_with_nul(text.get(..=len).ok_or(EINVAL)?).map_err(|_| EINVAL)?;
        let at = pci_location(gpu);
        let (model, uuid) = (MODEL.as_char_ptr(), uuid.as_char_ptr());
        // SAFETY: `&mut self` means `nv_double_procfs_init` succeeded and
        // `nv_double_procfs_exit` has not run, and no other call into
        // procfs.c runs at the same time (the one instance is borrowed
        // exclusively). `model` and `uuid` point to NUL-terminated strings
        // that outlive the call, which copies them into its own storage.
        let r = unsafe {
            nv_double_procfs_add_gpu(
                gpu,
                at.domain,
                at.bus.into(),
                at.slot.into(),
                at.function.into(),
                model,
                uuid,
            )
        };
        to_result(r)
    }
}

impl Drop for ProcFiles {
    fn drop(&mut self) {
        // SAFETY: the files exist (made by `new`); proc_remove waits for
        // readers to finish, so no `information` file reads a GPU's
        // storage after it is cleared.
        unsafe { nv_double_procfs_exit() };
    }
}
