// SPDX-License-Identifier: GPL-2.0

//! What the module was loaded as (the release it claims, whether it
//! models MMU notifiers and ATS), set once at load from its parameters, and the test-only
//! counters and hooks its debugfs files show: the bottom of the double's
//! layers, with `base.rs`.

use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use kernel::prelude::*;

use crate::base::MAX_GPUS;

/// The releases the double can claim to be (module parameter `release`),
/// newest first. For those vgpu has tables for, the double speaks that
/// release's ABI in everything it serves ([`abi`]: escapes, UVM blocks,
/// params sizes, the kernel-client blocks); then 560.35.05, a release vgpu
/// has no tables for, only a version string, enough to test that vgpu
/// refuses it; then 580.105.08, a release of the 580 branch with 580.142's
/// ABI (vgpu's `also`), to test that vgpu runs on it with those tables;
/// then 535.261.03, a point release of the 535 branch with 535.288.01's
/// ABI, which Debian bookworm's NVIDIA userspace is (NVML and libcuda
/// compare the driver's version string with their own exactly).
// `crate::nv::release::BRANCHES`, NUL-terminated (checked below).
const RELEASES: [&CStr; 9] = [
    c"595.45.04",
    c"590.48.01",
    c"580.142",
    c"570.211.01",
    c"550.163.01",
    c"535.288.01",
    c"560.35.05",
    c"580.105.08",
    c"535.261.03",
];

const _: () = {
    let mut r = 0;
    while r < crate::nv::release::BRANCHES.len() {
        let (a, b) = (
            RELEASES[r].to_bytes(),
            crate::nv::release::BRANCHES[r].as_bytes(),
        );
        assert!(a.len() == b.len());
        let mut i = 0;
        while i < a.len() {
            assert!(a[i] == b[i]);
            i += 1;
        }
        r += 1;
    }
};

/// The index in [`RELEASES`] of the release the double claims (module
/// parameter `release`), set at load.
static RELEASE: AtomicUsize = AtomicUsize::new(0);

/// Whether the double models a kernel with MMU notifiers (module
/// parameter `uvm_mm`), set at load.
static UVM_MM: AtomicBool = AtomicBool::new(true);

/// Whether the double models an nvidia-uvm with ATS enabled (module
/// parameter `uvm_ats`), set at load.
static UVM_ATS: AtomicBool = AtomicBool::new(false);

/// Records the module parameters, once, at load (they cannot change
/// after): the release to claim (an index into [`RELEASES`]), `uvm_mm`
/// and `uvm_ats`.
pub(crate) fn load(release: u32, uvm_mm: bool, uvm_ats: bool) {
    RELEASE.store(release as usize, Ordering::Relaxed);
    UVM_MM.store(uvm_mm, Ordering::Relaxed);
    UVM_ATS.store(uvm_ats, Ordering::Relaxed);
    ABI.store(
        crate::nv::release::find(self::release().as_bytes()).unwrap_or(0),
        Ordering::Relaxed,
    );
}

/// The driver version the double claims to be, NUL-terminated.
pub(crate) fn release_cstr() -> &'static CStr {
    RELEASES
        .get(RELEASE.load(Ordering::Relaxed))
        .copied()
        .unwrap_or(RELEASES[0])
}

/// The driver version the double claims to be.
pub(crate) fn release() -> &'static str {
    release_cstr().to_str().unwrap_or("595.45.04")
}

/// The ABI the double speaks: the tables of the release it claims, where
/// vgpu has them (`crate::nv::release`, each checked against that
/// release's headers by the conformance facts), else 595.45.04's (a release
/// vgpu refuses at load: only its version string matters then).
pub(crate) fn abi() -> &'static crate::nv::release::Release {
    let r = &crate::nv::release::RELEASES;
    r.get(ABI.load(Ordering::Relaxed)).unwrap_or(&r[0])
}

/// The index of [`abi`]'s tables, found once when the module loads (the
/// parameter cannot change after): every call the double serves asks.
static ABI: AtomicUsize = AtomicUsize::new(0);

/// Whether the double models a kernel on which nvidia-uvm can track a VA
/// space's mm (`uvm_mm`, default 1: a GPU host's). The real nvidia-uvm
/// needs MMU notifiers for it (`uvm_va_space_mm.c`,
/// `UVM_CAN_USE_MMU_NOTIFIERS()` in `uvm_linux.h` at 550.163.01): Debian's
/// kernel has them, the project's test kernels do not, and the real-driver
/// lane sets `uvm_mm` by the kernel it runs on.
pub(crate) fn uvm_mm() -> bool {
    UVM_MM.load(Ordering::Relaxed)
}

/// Whether the double models an nvidia-uvm with ATS enabled (`uvm_ats`,
/// default 0: an x86 GPU host's, where the GPU's probe clears
/// `nv_ats_supported`, `nv-pci.c:789-796` at 550.163.01). With ATS,
/// pageable memory access is ATS's, whatever the VA space's DISABLE_HMM
/// (`uvm_va_space_pageable_mem_access_supported()`,
/// `uvm_va_space.c:1966-1978`; `uvm_ats_init()`, `uvm_ats.c:35-43`). The
/// real driver on Debian's kernel without a GPU has it: no probe clears
/// `nv_ats_supported` (`nv.c:195`: NV_TRUE), and the kernel has MMU
/// notifiers and IOMMU SVA (`UVM_ATS_SVA_SUPPORTED()`, `uvm_ats_sva.h`).
pub(crate) fn uvm_ats() -> bool {
    uvm_mm() && UVM_ATS.load(Ordering::Relaxed)
}

/// Test hook (debugfs `nvidia-double/map_delay_ms`, 0 to 1000): every
/// RM_MAP_MEMORY sleeps this long first, so that a test can act while a
/// proxy's call is inside the driver. 0 (the default) adds nothing.
pub(crate) static MAP_DELAY_MS: AtomicU32 = AtomicU32::new(0);

/// Every RUSD `polledDataMask` the double has been given (at allocation or
/// by REQUEST_DATA_POLL), ORed together: a test-only view in debugfs,
/// `rusd_polled` (hex), reset by writing to it, so a test sees whether a
/// bit vgpu refuses ever reached the driver.
pub(crate) static RUSD_POLLED: AtomicU64 = AtomicU64::new(0);

/// The last PERF_BOOST the double was given, `flags` in the high half and
/// `duration` in the low (test-only view in debugfs, `perf_boost`, hex;
/// reset to 0 by writing to it), so a test sees the duration that reached
/// the driver.
pub(crate) static PERF_BOOST: AtomicU64 = AtomicU64::new(0);

/// Every ioctl the double's nodes (the NVIDIA nodes and nvidia-uvm) have
/// been given since load, or since a write to debugfs `ioctls`: a test
/// sees whether a call vgpu refuses ever reached the driver.
pub(crate) static IOCTLS: AtomicU64 = AtomicU64::new(0);

/// Counts one ioctl on a node of the double.
pub(crate) fn count_ioctl() {
    IOCTLS.fetch_add(1, Ordering::Relaxed);
}

/// Open files of each GPU node (test-only view in debugfs, `gpu_files`): a
/// test sees which GPU a proxy's private file reaches.
pub(crate) static GPU_FILES: [AtomicI32; MAX_GPUS] = [const { AtomicI32::new(0) }; MAX_GPUS];

/// Counts a GPU node file opened (`delta` 1) or released (-1).
pub(crate) fn gpu_files_changed(minor: u32, delta: i32) {
    if let Some(c) = GPU_FILES.get(minor as usize) {
        c.fetch_add(delta, Ordering::Relaxed);
    }
}
