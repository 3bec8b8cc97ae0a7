// SPDX-License-Identifier: GPL-2.0

//! The NVIDIA driver releases vgpu has tables for, and which one is in use.
//!
//! core-only: built into `vgpu.ko` and by the host test crate.
//!
//! One [`Release`] per driver branch fleets run, for its newest release:
//! every table of the dispatch table (escapes, classes, controls, UVM
//! commands) in that release's numbers, sizes and layouts, its
//! kernel-client interface, and the other releases of the branch with the
//! same ABI ([`Release::also`]). Each is 595.45.04's tables with the
//! release's differences applied as data by the const fns of
//! `nv::table` (`docs/driver-branches.md` lists the differences; the host
//! tests of `userspace/conformance` compare every release's tables with its
//! facts file). Where a release differs, the difference is in its table,
//! never in a handler. The module selects one when it loads, by the release
//! the driver reports ([`lookup`], [`select`]), and every lookup goes
//! through [`current`].

use core::sync::atomic::{AtomicUsize, Ordering};

use super::abi::{ctrl, fb_info, surface_info, InfoEntry};
use super::ioctl::{Escape, SizeRule};
use super::rmops::{KernelClient, KERNEL_CLIENT, KERNEL_CLIENT_535, KERNEL_CLIENT_570};
use super::table::{
    self, ClassRow, ControlRow, EscapeRow, UvmRow, CLASS_ROWS, CONTROL_ROWS, ESCAPE_ROWS, UVM_ROWS,
};
use super::uvm::{r535, r580, Command};

/// One release vgpu has tables for: every table of the dispatch table, in
/// that release's numbers and sizes.
#[derive(Debug)]
pub struct Release {
    /// The driver's version string (`NV_VERSION_STRING`).
    pub name: &'static str,
    /// [`Release::name`], NUL-terminated, for `nvidia_get_rm_ops`.
    pub name_nul: &'static [u8],
    /// Other releases of the branch that speak this release's ABI in
    /// everything vgpu touches (their facts files equal this release's
    /// tables: a host test compares them), NUL-terminated. vgpu runs on
    /// them with these tables.
    pub also: &'static [&'static [u8]],
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
    /// The kernel-client interface (`nvidia_get_rm_ops`' ops blocks).
    pub kernel: &'static KernelClient,
    /// How NV0041 GET_SURFACE_INFO tells a memory object's physical size:
    /// the indices to ask, each answer shifted left by its amount and
    /// summed (PHYS_SIZE_LO and _HI from 580 on; before, PHYS_SIZE in
    /// 4 KiB units, `ctrl0041.h` and `mem_ctrl.c:154-160` at 570.211.01).
    pub surface_size: &'static [(u32, u32)],
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

    /// Control `cmd`'s params size in this release, if it has the control.
    pub fn params_size(&self, cmd: u32) -> Option<usize> {
        self.control_row(cmd).map(|r| r.params_size as usize)
    }

    /// The entries FB_GET_INFO's lists hold in this release (V2's params
    /// are a count and the list): 128 from 580 on, 54 to 57 before.
    pub fn fb_info_entries(&self) -> usize {
        self.params_size(ctrl::NV2080_CTRL_CMD_FB_GET_INFO_V2)
            .map_or(fb_info::MAX_LIST_SIZE, |n| {
                n.saturating_sub(4) / InfoEntry::SIZE
            })
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
    table::with_params_sizes(CONTROL_ROWS, &[(0x2080_0110, 132)]);

// 580.142: 590.48.01's, and (`docs/driver-branches.md`, from the facts):
// - UVM_UNREGISTER_CHANNEL and UVM_FREE in their older layouts
//   ([`r580`]);
// - NV50_P2P's alloc params 72 bytes (`class/cl503b.h:75`);
// - the params of QUERY_ECC_STATUS (1464), GET_SKYLINE_INFO (220) and
//   NVLINK_GET_NVLINK_STATUS (13344) smaller (`ctrl2080gpu.h:1242, 4007`,
//   `ctrl2080nvlink.h:444`).
// NV_ESC_NUMA_INFO is in every release's table: `nv-ioctl-numa.h:44`
// defines it, its block is 560 bytes at every tag, and `nv.c` handles it
// (`nv.c:2633` at 580.142, 2598 at 570.211.01, 2559 at 550.163.01, 2241
// at 535.288.01); 590 only made `nv-ioctl.h` include that header.
const ESCAPES_580_142: [EscapeRow; ESCAPE_ROWS.len()] = ESCAPE_ROWS;
const CLASSES_580_142: [ClassRow; CLASS_ROWS.len()] =
    table::with_class_params_sizes(CLASS_ROWS, &[(0x503b, 72)]);
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

/// GET_SURFACE_INFO's byte size in two halves (580 on).
const SURFACE_LO_HI: &[(u32, u32)] = &[
    (surface_info::PHYS_SIZE_LO, 0),
    (surface_info::PHYS_SIZE_HI, 32),
];
/// GET_SURFACE_INFO's size in 4 KiB units (before 580).
const SURFACE_4K: &[(u32, u32)] = &[(surface_info::PHYS_SIZE, 12)];

// 570.211.01: 580.142's, and (`docs/driver-branches.md`, from the facts):
// - the kernel-client NV04_ALLOC block is an NVOS21 and RM_MAP_MEMORY_DMA
//   an NVOS46 of 56 bytes (`nvos.h:2180`);
// - FERMI_VASPACE_A's params have no `pasid` (48 bytes, `nvos.h:2768`);
// - the lists vgpu rewrites or serves are shorter: FB_GET_INFO_V2 57
//   entries, GPU_GET_INFO_V2 65, CLASSLIST_V2 100 (`ctrl2080fb.h:363`,
//   `ctrl2080gpu.h:115`, `ctrl0080gpu.h:504`), and GPFIFO_SCHEDULE has no
//   `bSkipEnable` (2 bytes, `ctrla06fgpfifo.h:60`);
// - GET_SKYLINE_INFO, THERMAL_SYSTEM_EXECUTE_V2 and
//   GET_SM_ISSUE_RATE_MODIFIER_V2 do not exist, and the DRAM encryption
//   queries are numbered one higher (`ctrl2080fb.h:2821, 2845`);
// - other params sizes (below), and GET_SURFACE_INFO has no PHYS_SIZE_LO/HI.
const ESCAPES_570_211_01: [EscapeRow; ESCAPE_ROWS.len()] =
    table::with_escape_size(ESCAPES_580_142, Escape::RmMapMemoryDma, SizeRule::Exact(56));
const CLASSES_570_211_01: [ClassRow; CLASS_ROWS.len()] =
    table::with_class_params_sizes(CLASSES_580_142, &[(0x90f1, 48)]);
/// The controls 570 and older share with 580 but at other sizes.
const SIZES_570: &[(u32, u32)] = &[
    (0x0000_0214, 256),
    (0x0080_0292, 404),
    (0x2080_0102, 524),
    (0x2080_012f, 1464),
    (0x2080_01a3, 48),
    (0x2080_121b, 6168),
    (0x2080_1303, 460),
    (0x2080_1320, 776),
    (0x2080_3001, 32),
    (0x2080_3002, 13320),
    (0xa06c_0101, 2),
    (0xa06f_0103, 2),
    (0xc56f_010b, 128),
];
const CONTROLS_570_211_01: [ControlRow; CONTROL_ROWS.len() - 3] = table::renumbered_control(
    table::renumbered_control(
        table::without_controls(
            table::with_params_sizes(CONTROLS_590_48_01, SIZES_570),
            &[0x2080_019f, 0x2080_0513, 0x2080_123c],
        ),
        0x2080_1358,
        0x2080_1359,
    ),
    0x2080_1357,
    0x2080_1358,
);

// 550.163.01: 570.211.01's, and: no Blackwell classes; channel params
// without `tpcConfigID` (360 bytes, `alloc_channel.h:341`); the dma-buf
// export block 2600 bytes (`nv-ioctl.h:143`); no DRAM encryption queries;
// the channels' NVC36F_CTRL_GET_CLASS_ENGINEID besides NV906F's
// (`table::NVC36F_GET_CLASS_ENGINEID`); other params sizes (below).
const ESCAPES_550_163_01: [EscapeRow; ESCAPE_ROWS.len()] = table::with_escape_size(
    ESCAPES_570_211_01,
    Escape::ExportToDmabufFd,
    SizeRule::Exact(2600),
);
const BLACKWELL: [u32; 7] = [0xc761, 0xc96f, 0xc9b5, 0xca6f, 0xcab5, 0xcdc0, 0xcec0];
const CLASSES_550_163_01: [ClassRow; CLASS_ROWS.len() - BLACKWELL.len()] =
    table::with_class_params_sizes(
        table::without_classes(CLASSES_570_211_01, &BLACKWELL),
        &[(0xc46f, 360), (0xc56f, 360), (0xc86f, 360)],
    );
const SIZES_550: &[(u32, u32)] = &[
    (0x0000_0102, 104),
    // SYSTEM_GET_BUILD_VERSION_V2: no `driverBranch` string (it came in
    // 560; `ctrl0000system.h:2266-2272` at 550.163.01).
    (0x0000_013e, 776),
    (0x0080_0289, 4),
    (0x0080_0292, 700),
    (0x2080_012f, 1024),
    (0x2080_0170, 260),
    (0x2080_1303, 444),
    (0x2080_182a, 104),
    (0x2080_2096, 50704),
    (0x2080_3001, 16),
    (0x2080_3002, 5896),
];
const CONTROLS_550_163_01: [ControlRow; CONTROL_ROWS.len() - 4] = table::with_params_sizes(
    table::with_control(
        table::without_controls::<{ CONTROL_ROWS.len() - 3 }, { CONTROL_ROWS.len() - 5 }>(
            CONTROLS_570_211_01,
            &[0x2080_1358, 0x2080_1359],
        ),
        table::NVC36F_GET_CLASS_ENGINEID,
    ),
    SIZES_550,
);

// 535.288.01: 550.163.01's, and: no WAIT_OPEN_COMPLETE escape, NVOS47 40
// bytes (`nvos.h:2148`); memory params without `numaNode` (120 bytes,
// `nvos.h:1634`); smaller RM_USER_SHARED_DATA and multicast-fabric params
// (`cl00de.h:46`, `cl00fd.h:72`); UVM's per-GPU arrays of 32 GPUs and
// SET_PREFERRED_LOCATION without a NUMA node ([`r535`]); NVOS47 40 bytes
// in the kernel-client union too; eight controls that do not exist yet
// and other params sizes (below).
const ESCAPES_535_288_01: [EscapeRow; ESCAPE_ROWS.len() - 1] = table::with_escape_size(
    table::without_escapes(ESCAPES_550_163_01, &[Escape::WaitOpenComplete.nr()]),
    Escape::RmUnmapMemoryDma,
    SizeRule::Exact(40),
);
//
// RM_USER_SHARED_DATA is admitted (Bounce) on 535: its page there is a
// sequence word, BAR1's size and free space and a GSP assert count
// (`cl00de.h:33-41` at 535.288.01), no VRAM figure and no process, and
// 535's RM offers it on every GPU (`gpu_user_shared_data.c:34-86`), so
// there is no path without it known to userspace.
const CLASSES_535_288_01: [ClassRow; CLASS_ROWS.len() - BLACKWELL.len()] = table::with_class_policy(
    table::with_class_params_sizes(
        CLASSES_550_163_01,
        &[
            (0x003e, 120),
            (0x0040, 120),
            (0x00de, 4),
            (0x00fd, 40),
            (0x50a0, 120),
        ],
    ),
    0x00de,
    table::Policy::Bounce,
);
const ABSENT_535: [u32; 7] = [
    0x0000_0288,
    0x0000_0289,
    0x0000_0290,
    0x0080_1909,
    0x00de_0001,
    0x2080_2068,
    0xcb33_010c,
];
const SIZES_535: &[(u32, u32)] = &[
    (0x0000_0127, 168),
    (0x0000_012b, 4252),
    (0x0000_3d08, 76),
    (0x0080_0292, 644),
    (0x2080_0102, 516),
    (0x2080_012f, 984),
    (0x2080_0170, 252),
    (0x2080_01a3, 40),
    (0x2080_1303, 436),
    (0x2080_2096, 34000),
    (0x2080_2a0a, 68),
    (0x906f_0102, 12),
    (0xc56f_010b, 124),
    (0xcb33_0101, 5),
];
const CONTROLS_535_288_01: [ControlRow; CONTROL_ROWS.len() - 11] = table::with_params_sizes(
    table::without_controls(CONTROLS_550_163_01, &ABSENT_535),
    SIZES_535,
);
const UVM_535_288_01: [UvmRow; UVM_ROWS.len()] = table::with_uvm_layout(
    table::with_uvm_layout(
        table::with_uvm_layout(
            UVM_580_142,
            Command::MapExternalAllocation,
            r535::MapExternalAllocationParams::SIZE,
            r535::MapExternalAllocationParams::FIELDS,
        ),
        Command::SetPreferredLocation,
        r535::SetPreferredLocationParams::SIZE,
        r535::SetPreferredLocationParams::FIELDS,
    ),
    Command::AllocSemaphorePool,
    r535::AllocSemaphorePoolParams::SIZE,
    r535::AllocSemaphorePoolParams::FIELDS,
);

/// The releases vgpu has tables for, newest first.
pub static RELEASES: [Release; 6] = [
    Release {
        name: "595.45.04",
        name_nul: b"595.45.04\0",
        also: &[b"595.44.03\0"],
        escapes: &ESCAPE_ROWS,
        classes: &CLASS_ROWS,
        controls: &CONTROL_ROWS,
        uvm: &UVM_ROWS,
        kernel: &KERNEL_CLIENT,
        surface_size: SURFACE_LO_HI,
    },
    Release {
        name: "590.48.01",
        name_nul: b"590.48.01\0",
        also: &[b"590.44.01\0"],
        escapes: &ESCAPE_ROWS,
        classes: &CLASS_ROWS,
        controls: &CONTROLS_590_48_01,
        uvm: &UVM_ROWS,
        kernel: &KERNEL_CLIENT,
        surface_size: SURFACE_LO_HI,
    },
    Release {
        name: "580.142",
        name_nul: b"580.142\0",
        also: &[b"580.126.20\0", b"580.105.08\0"],
        escapes: &ESCAPES_580_142,
        classes: &CLASSES_580_142,
        controls: &CONTROLS_580_142,
        uvm: &UVM_580_142,
        kernel: &KERNEL_CLIENT,
        surface_size: SURFACE_LO_HI,
    },
    Release {
        name: "570.211.01",
        name_nul: b"570.211.01\0",
        also: &[b"570.207\0", b"570.195.03\0"],
        escapes: &ESCAPES_570_211_01,
        classes: &CLASSES_570_211_01,
        controls: &CONTROLS_570_211_01,
        uvm: &UVM_580_142,
        kernel: &KERNEL_CLIENT_570,
        surface_size: SURFACE_4K,
    },
    Release {
        name: "550.163.01",
        name_nul: b"550.163.01\0",
        also: &[b"550.144.03\0", b"550.142\0"],
        escapes: &ESCAPES_550_163_01,
        classes: &CLASSES_550_163_01,
        controls: &CONTROLS_550_163_01,
        uvm: &UVM_580_142,
        kernel: &KERNEL_CLIENT_570,
        surface_size: SURFACE_4K,
    },
    Release {
        name: "535.288.01",
        name_nul: b"535.288.01\0",
        also: &[b"535.274.02\0", b"535.261.03\0"],
        escapes: &ESCAPES_535_288_01,
        classes: &CLASSES_535_288_01,
        controls: &CONTROLS_535_288_01,
        uvm: &UVM_535_288_01,
        kernel: &KERNEL_CLIENT_535,
        surface_size: SURFACE_4K,
    },
];

// Every name is its NUL-terminated name without the NUL, and every `also`
// name is NUL-terminated with no NUL before; every table is in key order
// (the lookups are binary searches); every release has a row for every
// UVM command.
const _: () = {
    let mut r = 0;
    while r < RELEASES.len() {
        let mut k = 0;
        while k < RELEASES[r].also.len() {
            let a = RELEASES[r].also[k];
            let mut i = 0;
            while i + 1 < a.len() {
                assert!(a[i] != 0, "a NUL inside an `also` name");
                i += 1;
            }
            assert!(
                !a.is_empty() && a[a.len() - 1] == 0,
                "an `also` name without its NUL"
            );
            k += 1;
        }
        let rel = &RELEASES[r];
        assert!(table::escapes_in_order(rel.escapes), "escapes out of order");
        assert!(table::classes_in_order(rel.classes), "classes out of order");
        assert!(
            table::controls_in_order(rel.controls),
            "controls out of order"
        );
        assert!(table::uvm_in_order(rel.uvm), "UVM out of order");
        let mut c = 0;
        while c < super::uvm::COMMANDS.len() {
            assert!(
                table::uvm_row_in(RELEASES[r].uvm, super::uvm::COMMANDS[c].number()).is_some(),
                "a release lacks a UVM command"
            );
            c += 1;
        }
        // `nul` is `name` with a NUL after it. (Written out here: rustc
        // 1.85 takes a function used only in a `const _` for dead code.)
        let (name, nul) = (RELEASES[r].name.as_bytes(), RELEASES[r].name_nul);
        assert!(
            name.len() + 1 == nul.len() && nul[name.len()] == 0,
            "a release's name_nul lacks its NUL"
        );
        let mut i = 0;
        while i < name.len() {
            assert!(name[i] == nul[i], "a release's name_nul is not its name");
            i += 1;
        }
        r += 1;
    }
};

/// The newest release of each driver branch fleets run, newest first: the
/// releases `userspace/conformance` has facts for and the driver double
/// can claim with their ABI (its `release` parameter indexes this list).
/// [`RELEASES`] holds vgpu's tables for each (a host test checks the two
/// name the same releases).
pub const BRANCHES: [&str; 6] = [
    "595.45.04",
    "590.48.01",
    "580.142",
    "570.211.01",
    "550.163.01",
    "535.288.01",
];

/// The index into [`RELEASES`] of the tables in use.
static SELECTED: AtomicUsize = AtomicUsize::new(0);
/// Which of their names the driver reported: 0 the tables' own
/// ([`Release::name`]), `k + 1` their `also[k]`.
static SELECTED_NAME: AtomicUsize = AtomicUsize::new(0);

/// A driver release vgpu has tables for: which tables, and its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Known {
    /// The index of its tables in [`RELEASES`].
    pub table: usize,
    /// Which of the tables' names it is (0: [`Release::name`], `k + 1`:
    /// [`Release::also`]`[k]`).
    pub alias: usize,
}

impl Known {
    /// Its NUL-terminated name, for `nvidia_get_rm_ops`.
    pub fn name_nul(self) -> &'static [u8] {
        let r = &RELEASES[self.table];
        match self.alias.checked_sub(1) {
            None => r.name_nul,
            Some(k) => r.also.get(k).copied().unwrap_or(r.name_nul),
        }
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        let b = self.name_nul();
        core::str::from_utf8(b.get(..b.len().saturating_sub(1)).unwrap_or(&[]))
            .unwrap_or(RELEASES[self.table].name)
    }
}

/// The release named `name`, if vgpu has tables for it (its own or, for
/// another release of the branch with the same ABI, those of the branch's
/// newest).
pub fn lookup(name: &[u8]) -> Option<Known> {
    for (table, r) in RELEASES.iter().enumerate() {
        if r.name.as_bytes() == name {
            return Some(Known { table, alias: 0 });
        }
        for (k, a) in r.also.iter().enumerate() {
            if a.split_last().map(|(_, n)| n) == Some(name) {
                return Some(Known {
                    table,
                    alias: k + 1,
                });
            }
        }
    }
    None
}

/// The index of the tables for the release named `name`, if vgpu has
/// them ([`lookup`]).
pub fn find(name: &[u8]) -> Option<usize> {
    lookup(name).map(|k| k.table)
}

/// Makes release `k` the one in use. The module does this once, when it
/// loads, before any file can be opened.
pub fn select(k: Known) {
    if k.table < RELEASES.len() {
        SELECTED_NAME.store(k.alias, Ordering::Release);
        SELECTED.store(k.table, Ordering::Release);
    }
}

/// The tables in use (the newest until [`select`] says otherwise).
pub fn current() -> &'static Release {
    let i = SELECTED.load(Ordering::Acquire);
    RELEASES.get(i).unwrap_or(&RELEASES[0])
}

/// The driver release in use, as the driver names it.
pub fn driver() -> Known {
    let table = SELECTED.load(Ordering::Acquire).min(RELEASES.len() - 1);
    Known {
        table,
        alias: SELECTED_NAME.load(Ordering::Acquire),
    }
}
