// SPDX-License-Identifier: GPL-2.0

//! The NVIDIA driver releases vgpu has tables for, and which one is in use.
//!
//! core-only: built into `vgpu.ko` and by the host test crate.
//!
//! Each [`Release`] carries the tables that differ between releases in what
//! vgpu touches (`docs/driver-branches.md` lists the differences, generated
//! from the facts files of `userspace/conformance`). Where a release
//! differs, the difference is in its table, never in a handler. The module
//! selects one when it loads, by the release the driver reports
//! ([`select`]), and every lookup goes through [`current`].

use core::sync::atomic::{AtomicUsize, Ordering};

use super::table::{self, ControlRow, CONTROL_ROWS};

/// One release vgpu has tables for.
#[derive(Debug)]
pub struct Release {
    /// The driver's version string (`NV_VERSION_STRING`).
    pub name: &'static str,
    /// [`Release::name`], NUL-terminated, for `nvidia_get_rm_ops`.
    pub name_nul: &'static [u8],
    /// The controls a container may send, in number order, with this
    /// release's params sizes.
    pub controls: &'static [ControlRow],
}

impl Release {
    /// The row of control `cmd` in this release's table, if it has one.
    pub fn control_row(&self, cmd: u32) -> Option<&'static ControlRow> {
        table::control_row_in(self.controls, cmd)
    }
}

/// 590.48.01's controls: as 595.45.04's but for
/// `NV2080_CTRL_GPU_GET_NAME_STRING_PARAMS` (132 bytes, not 68: its name
/// buffer was halved in 595; `ctrl/ctrl2080/ctrl2080gpu.h` at both tags).
const CONTROLS_590_48_01: [ControlRow; CONTROL_ROWS.len()] =
    table::with_params_size(CONTROL_ROWS, 0x2080_0110, 132);

/// The releases vgpu has tables for, newest first.
pub static RELEASES: [Release; 2] = [
    Release {
        name: "595.45.04",
        name_nul: b"595.45.04\0",
        controls: &CONTROL_ROWS,
    },
    // What else differs from 595.45.04 is `nv_gpu_info_t.is_soc_disp`,
    // which 590 does not have (its byte is padding there): vgpu never
    // reads it.
    Release {
        name: "590.48.01",
        name_nul: b"590.48.01\0",
        controls: &CONTROLS_590_48_01,
    },
];

// Every name is its NUL-terminated name without the NUL.
const _: () = {
    let mut r = 0;
    while r < RELEASES.len() {
        let (a, b) = (RELEASES[r].name.as_bytes(), RELEASES[r].name_nul);
        assert!(a.len() + 1 == b.len() && b[a.len()] == 0);
        let mut i = 0;
        while i < a.len() {
            assert!(a[i] == b[i]);
            i += 1;
        }
        r += 1;
    }
};

/// The newest release of each driver branch fleets run, newest first: the
/// releases `userspace/conformance` has facts for and the driver double
/// can claim (its `release` parameter indexes this list). vgpu has tables
/// for those of [`RELEASES`] only.
pub const BRANCHES: [&str; 6] = [
    "595.45.04",
    "590.48.01",
    "580.142",
    "570.211.01",
    "550.163.01",
    "535.288.01",
];

/// The index into [`RELEASES`] of the release in use.
static SELECTED: AtomicUsize = AtomicUsize::new(0);

/// The release named `name`, if vgpu has tables for it.
pub fn find(name: &[u8]) -> Option<usize> {
    RELEASES.iter().position(|r| r.name.as_bytes() == name)
}

/// Makes release `index` (of [`RELEASES`]) the one in use. The module does
/// this once, when it loads, before any file can be opened.
pub fn select(index: usize) {
    if index < RELEASES.len() {
        SELECTED.store(index, Ordering::Release);
    }
}

/// The release in use (the newest until [`select`] says otherwise).
pub fn current() -> &'static Release {
    let i = SELECTED.load(Ordering::Acquire);
    RELEASES.get(i).unwrap_or(&RELEASES[0])
}
