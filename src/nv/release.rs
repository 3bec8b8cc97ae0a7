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

use super::ioctl::{Escape, SizeRule};
use super::table::{
    self, ClassRow, ControlRow, EscapeRow, UvmRow, CLASS_ROWS, CONTROL_ROWS, ESCAPE_ROWS, UVM_ROWS,
};
use super::uvm::{r580, Command};

/// One release vgpu has tables for: every table of the dispatch table, in
/// that release's numbers and sizes.
#[derive(Debug)]
pub struct Release {
    /// The driver's version string (`NV_VERSION_STRING`).
    pub name: &'static str,
    /// [`Release::name`], NUL-terminated, for `nvidia_get_rm_ops`.
    pub name_nul: &'static [u8],
    /// The escapes a container may send, in number order, with this
    /// release's size checks; an escape the release lacks has no row.
    pub escapes: &'static [EscapeRow],
    /// The classes a container may allocate, in number order, with this
    /// release's alloc params sizes.
    pub classes: &'static [ClassRow],
    /// The controls a container may send, in number order, with this
    /// release's params sizes.
    pub controls: &'static [ControlRow],
    /// The UVM commands, in number order, with this release's block
    /// layouts.
    pub uvm: &'static [UvmRow],
}

impl Release {
    /// The row of the escape numbered `nr`, if this release has it.
    pub fn escape_row(&self, nr: u8) -> Option<&'static EscapeRow> {
        table::escape_row_in(self.escapes, nr)
    }

    /// The size check of escape `e` in this release, `None` if it lacks
    /// the escape (for [`super::ioctl::decode_with`]).
    pub fn escape_rule(&self, e: Escape) -> Option<SizeRule> {
        self.escape_row(e.nr()).map(|r| r.size)
    }

    /// The row of class `c`, if this release's table has one.
    pub fn class_row(&self, c: u32) -> Option<&'static ClassRow> {
        table::class_row_in(self.classes, c)
    }

    /// The row of control `cmd` in this release's table, if it has one.
    pub fn control_row(&self, cmd: u32) -> Option<&'static ControlRow> {
        table::control_row_in(self.controls, cmd)
    }

    /// The row of UVM command number `number`, if this release has it.
    pub fn uvm_row(&self, number: u32) -> Option<&'static UvmRow> {
        table::uvm_row_in(self.uvm, number)
    }

    /// The row of UVM command `c` (every release has every command vgpu
    /// knows; checked at compile time below).
    pub fn uvm_command(&self, c: Command) -> &'static UvmRow {
        match self.uvm_row(c.number()) {
            Some(r) => r,
            None => &self.uvm[0],
        }
    }
}

// 590.48.01: as 595.45.04 but for `NV2080_CTRL_GPU_GET_NAME_STRING_PARAMS`
// (132 bytes, not 68: its name buffer was halved in 595;
// `ctrl/ctrl2080/ctrl2080gpu.h` at both tags). What else differs is
// `nv_gpu_info_t.is_soc_disp`, which 590 does not have (its byte is padding
// there): vgpu never reads it.
const CONTROLS_590_48_01: [ControlRow; CONTROL_ROWS.len()] =
    table::with_params_size(CONTROL_ROWS, 0x2080_0110, 132);

// 580.142: 590.48.01's, and (`docs/driver-branches.md`, from the facts):
// - no NV_ESC_NUMA_INFO (`nv-ioctl-numbers.h`; 590 added it);
// - UVM_UNREGISTER_CHANNEL and UVM_FREE in their older layouts
//   ([`r580`]);
// - NV50_P2P's alloc params 72 bytes (`class/cl503b.h:75`);
// - the params of QUERY_ECC_STATUS (1464), GET_SKYLINE_INFO (220) and
//   NVLINK_GET_NVLINK_STATUS (13344) smaller (`ctrl2080gpu.h:1242, 4007`,
//   `ctrl2080nvlink.h:444`).
const ESCAPES_580_142: [EscapeRow; ESCAPE_ROWS.len() - 1] =
    table::without_escape(ESCAPE_ROWS, Escape::NumaInfo);
const CLASSES_580_142: [ClassRow; CLASS_ROWS.len()] =
    table::with_class_params_size(CLASS_ROWS, 0x503b, 72);
const CONTROLS_580_142: [ControlRow; CONTROL_ROWS.len()] = table::with_params_sizes(
    CONTROLS_590_48_01,
    &[
        (0x2080_012f, 1464),
        (0x2080_019f, 220),
        (0x2080_3002, 13344),
    ],
);
const UVM_580_142: [UvmRow; UVM_ROWS.len()] = table::with_uvm_layout(
    table::with_uvm_layout(
        UVM_ROWS,
        Command::UnregisterChannel,
        r580::UnregisterChannelParams::SIZE,
        r580::UnregisterChannelParams::FIELDS,
    ),
    Command::Free,
    r580::FreeParams::SIZE,
    r580::FreeParams::FIELDS,
);

/// The releases vgpu has tables for, newest first.
pub static RELEASES: [Release; 3] = [
    Release {
        name: "595.45.04",
        name_nul: b"595.45.04\0",
        escapes: &ESCAPE_ROWS,
        classes: &CLASS_ROWS,
        controls: &CONTROL_ROWS,
        uvm: &UVM_ROWS,
    },
    Release {
        name: "590.48.01",
        name_nul: b"590.48.01\0",
        escapes: &ESCAPE_ROWS,
        classes: &CLASS_ROWS,
        controls: &CONTROLS_590_48_01,
        uvm: &UVM_ROWS,
    },
    Release {
        name: "580.142",
        name_nul: b"580.142\0",
        escapes: &ESCAPES_580_142,
        classes: &CLASSES_580_142,
        controls: &CONTROLS_580_142,
        uvm: &UVM_580_142,
    },
];

// Every name is its NUL-terminated name without the NUL; every release
// has a row for every UVM command.
const _: () = {
    let mut r = 0;
    while r < RELEASES.len() {
        let mut c = 0;
        while c < super::uvm::COMMANDS.len() {
            assert!(
                table::uvm_row_in(RELEASES[r].uvm, super::uvm::COMMANDS[c].number()).is_some(),
                "a release lacks a UVM command"
            );
            c += 1;
        }
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
