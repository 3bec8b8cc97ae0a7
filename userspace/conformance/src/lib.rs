// SPDX-License-Identifier: GPL-2.0

//! The conformance check: every NVIDIA ABI number and layout that vgpu, its
//! driver double and `nvclient` define (all of them live in `src/nv/`, which
//! the three share), paired with the C expression that gives the same fact
//! from NVIDIA's own headers.
//!
//! Two halves:
//!
//! - [`table`] lists the project's side: one [`Row`] per fact, with the C
//!   expression (`sizeof(NVOS64_PARAMETERS)`, `offsetof(UVM_MIGRATE_PARAMS,
//!   rmStatus)`, `NV_ESC_RM_ALLOC`, ...) and the value the project uses.
//! - The driver's side is a *facts file* per release (`facts/<release>.facts`):
//!   what the C compiler printed for each expression, compiled against that
//!   release's headers by `scripts/conformance.sh` (the probe it compiles
//!   is [`probe_source`]). Only numbers are committed, never the headers.
//!
//! The host tests (`tests/facts.rs`) compare the two on every run; a value
//! that differs, or an expression the facts file lacks, fails.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use vgpu_logic::nv::{
    self,
    abi::{
        self, class, ctrl, ctxshare, engine, fb_info, heap, os02, os33, pids, preemption, status,
        surface_info, vaspace, version, WireField,
    },
    ioctl::{self, Escape, SizeRule},
    release,
    rmops::{self, op},
    uvm::{self, init_flags},
};

/// One fact: a C expression over NVIDIA's headers and the value the project
/// uses for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// The C expression (also the key in a facts file).
    pub expr: String,
    /// The project's value.
    pub value: u64,
    /// Where the project defines it (for messages).
    pub item: String,
}

/// How a Rust struct's field names become the C member names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Names {
    /// `h_object_parent` -> `hObjectParent` (RM's headers).
    Camel,
    /// Unchanged (`nv-ioctl.h`'s structs).
    Snake,
}

/// `snake_case` -> `camelCase`.
pub fn camel(s: &str) -> String {
    let mut out = String::new();
    let mut up = false;
    for c in s.chars() {
        if c == '_' {
            up = true;
        } else if up {
            out.extend(c.to_uppercase());
            up = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// The C side of one `wire_struct!`.
#[derive(Clone, Copy, Debug)]
pub struct CStruct<'a> {
    /// The C type (`NVOS64_PARAMETERS`).
    pub ty: &'a str,
    /// For a view of a union member: its path (`data.AllocSize`). Offsets
    /// are then taken relative to it, and the size row is left out (the
    /// project's view spans the whole union).
    pub member: Option<&'a str>,
    /// The naming rule.
    pub names: Names,
    /// Fields whose C name the rule does not give: (Rust, C).
    pub renames: &'a [(&'a str, &'a str)],
}

impl<'a> CStruct<'a> {
    /// A plain C struct with camelCase members.
    pub const fn camel(ty: &'a str) -> Self {
        CStruct {
            ty,
            member: None,
            names: Names::Camel,
            renames: &[],
        }
    }

    /// A plain C struct with members named as the Rust fields.
    pub const fn snake(ty: &'a str) -> Self {
        CStruct {
            ty,
            member: None,
            names: Names::Snake,
            renames: &[],
        }
    }

    /// With renamed fields.
    pub const fn renamed(mut self, renames: &'a [(&'a str, &'a str)]) -> Self {
        self.renames = renames;
        self
    }

    /// As a view of union member `member`.
    pub const fn within(mut self, member: &'a str) -> Self {
        self.member = Some(member);
        self
    }

    fn c_name(&self, field: &str) -> String {
        if let Some((_, c)) = self.renames.iter().find(|(r, _)| *r == field) {
            return (*c).to_string();
        }
        match self.names {
            Names::Camel => camel(field),
            Names::Snake => field.to_string(),
        }
    }
}

/// An expression the release must not have (its facts must say
/// `absent`), and why vgpu does without it there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Absent {
    /// The C expression.
    pub expr: String,
    /// The project's definition it belongs to (for messages).
    pub item: String,
    /// Why the release lacking it is right for vgpu.
    pub why: String,
}

/// The rows being collected for one release.
#[derive(Default)]
pub struct Table {
    /// The rows: each expression must be in the release's facts, with the
    /// row's value.
    pub rows: Vec<Row>,
    /// The expressions the release must not have.
    pub absent: Vec<Absent>,
    /// The size the release's dispatch rows give each params type they
    /// name (C type -> bytes; a type whose rows disagree is left out, the
    /// rows' own `sizeof` checks show the disagreement). [`Table::layout`]
    /// lays a block out as the prefix of the project's layout where this
    /// is smaller (the prefix rule), [`Table::list_length`] ends a list
    /// where it does. Empty: every layout whole.
    pub sizes: BTreeMap<String, usize>,
}

impl Table {
    /// A constant: C expression `expr` has the project's value `value`.
    pub fn konst(&mut self, expr: &str, value: u64, item: &str) {
        self.rows.push(Row {
            expr: expr.to_string(),
            value,
            item: item.to_string(),
        });
    }

    /// An expression the release must not have, with why.
    pub fn not_in_release(&mut self, expr: &str, item: &str, why: &str) {
        self.absent.push(Absent {
            expr: expr.to_string(),
            item: item.to_string(),
            why: why.to_string(),
        });
    }

    /// A DRF bit field `hi:lo` (a C macro that expands to `hi:lo`): its
    /// low and high bits, through the headers' own `(0 ? f)` / `(1 ? f)`.
    pub fn bitfield(&mut self, c: &str, f: abi::BitField, item: &str) {
        self.konst(&format!("(0 ? {c})"), f.lo.into(), &format!("{item}.lo"));
        self.konst(&format!("(1 ? {c})"), f.hi.into(), &format!("{item}.hi"));
    }

    /// The release's size of params type `ty`, where its rows give it
    /// fewer bytes than `size`, the project's layout: vgpu and the driver
    /// double then copy that many (the row's params size) and decode the
    /// layout's prefix, a field past the end reading as zero.
    fn cut(&self, ty: &str, size: usize) -> Option<usize> {
        self.sizes.get(ty).copied().filter(|&n| n < size)
    }

    /// A `wire_struct!` layout: its size (unless a view), and each field's
    /// offset and size. The prefix rule: where the release's rows give the
    /// block fewer bytes ([`Table::sizes`]), its size is theirs, a field
    /// that ends past them is cut to them (the trailing list of a list
    /// block: the release's list is shorter), and a field that starts past
    /// them must be absent in the release.
    pub fn layout(&mut self, item: &str, size: usize, fields: &[WireField], c: CStruct<'_>) {
        let ty = c.ty;
        let cut = match c.member {
            None => self.cut(ty, size),
            Some(_) => None,
        };
        let whole = item.to_string();
        let item = match cut {
            Some(n) => format!("{item} (its first {n} bytes, the release's params size)"),
            None => whole.clone(),
        };
        if c.member.is_none() {
            self.konst(&format!("sizeof({ty})"), cut.unwrap_or(size) as u64, &item);
        }
        for f in fields {
            let name = c.c_name(f.name);
            let path = match c.member {
                None => name,
                Some(m) => format!("{m}.{name}"),
            };
            let off = match c.member {
                None => format!("offsetof({ty}, {path})"),
                Some(m) => format!("(offsetof({ty}, {path}) - offsetof({ty}, {m}))"),
            };
            let size_expr = format!("sizeof((({ty} *)0)->{path})");
            let it = format!("{whole}.{}", f.name);
            match cut {
                Some(n) if f.offset >= n => {
                    let why = format!(
                        "past the {n} bytes the release's rows give {ty}: vgpu decodes the \
                         prefix, the field reading as zero"
                    );
                    self.not_in_release(&off, &it, &why);
                    self.not_in_release(&size_expr, &it, &why);
                }
                Some(n) if f.offset + f.size > n => {
                    let it = format!("{it} (cut to the release's {n} bytes)");
                    self.konst(&off, f.offset as u64, &it);
                    self.konst(&size_expr, (n - f.offset) as u64, &it);
                }
                _ => {
                    self.konst(&off, f.offset as u64, &it);
                    self.konst(&size_expr, f.size as u64, &it);
                }
            }
        }
    }

    /// A list-length constant `expr` the project defines as `len`: the
    /// length of list field `list` of params block `ty` (laid out by
    /// `fields`). Where the release's rows give the block fewer bytes, the
    /// release's list ends where they do, and so does its length.
    pub fn list_length(
        &mut self,
        expr: &str,
        len: usize,
        item: &str,
        ty: &str,
        fields: &[WireField],
        list: &str,
    ) {
        let f = fields
            .iter()
            .find(|f| f.name == list)
            .unwrap_or_else(|| panic!("{ty} has no field {list}"));
        assert!(
            f.size.is_multiple_of(len),
            "{item}: {list} is no list of {len}"
        );
        let entry = f.size / len;
        match self.cut(ty, f.offset + f.size) {
            Some(n) => {
                let bytes = n
                    .checked_sub(f.offset)
                    .expect("the release's block ends before its list");
                assert!(
                    bytes.is_multiple_of(entry),
                    "{ty}: {n} bytes is no whole list"
                );
                self.konst(
                    expr,
                    (bytes / entry) as u64,
                    &format!("{item} (the release's {n}-byte {ty})"),
                );
            }
            None => self.konst(expr, len as u64, item),
        }
    }
}

/// Adds a `wire_struct!` type's layout.
macro_rules! layout {
    ($t:expr, $ty:path, $c:expr) => {
        $t.layout(stringify!($ty), <$ty>::SIZE, <$ty>::FIELDS, $c)
    };
}

/// Adds constants whose C name is a prefix plus the Rust name.
macro_rules! consts {
    ($t:expr, $prefix:literal, $m:ident : $($name:ident),* $(,)?) => {
        $($t.konst(
            concat!($prefix, stringify!($name)),
            ($m::$name) as u64,
            concat!(stringify!($m), "::", stringify!($name)),
        );)*
    };
}

mod facts;
mod rows;

pub use facts::*;
pub use rows::*;

/// The headers the probe includes, in order, relative to the include
/// directories `scripts/conformance.sh` passes.
pub const HEADERS: &[&str] = &[
    "nvtypes.h",
    "nvstatus.h",
    "nvos.h",
    "nv-kernel-rmapi-ops.h",
    "nv-modeset-interface.h",
    "nv-gpu-info.h",
    "nv_escape.h",
    "nv-ioctl.h",
    "nv-ioctl-numbers.h",
    // NV_ESC_NUMA_INFO and its block: here at every tag (590 on, nv-ioctl.h
    // includes it too; before, only nv.c does).
    "nv-ioctl-numa.h",
    "nv-unix-nvos-params-wrappers.h",
    "uvm_ioctl.h",
    "uvm_linux_ioctl.h",
    "uvm_types.h",
    "nvCpuUuid.h",
    "class/cl0000.h",
    "class/cl0001.h",
    "class/cl0005.h",
    "class/cl003e.h",
    "class/cl0040.h",
    "class/cl0041.h",
    "class/cl0070.h",
    "class/cl0080.h",
    "class/cl00c2.h",
    "class/cl00f8.h",
    "class/cl2080.h",
    "class/cl50a0.h",
    "class/cl9067.h",
    "class/cl90f1.h",
    "class/cla06c.h",
    "class/cla06f.h",
    "class/cla16f.h",
    "class/clb06f.h",
    "class/clc06f.h",
    "class/clc36f.h",
    "class/clc46f.h",
    "class/clc56f.h",
    "class/clc86f.h",
    "class/clc96f.h",
    "class/clca6f.h",
    "class/clc361.h",
    "class/clc461.h",
    "class/clc561.h",
    "class/clc661.h",
    "class/clc761.h",
    "class/clc6c0.h",
    "class/clc7c0.h",
    "class/clc9c0.h",
    "class/clcbc0.h",
    "class/clc6b5.h",
    "class/clc7b5.h",
    "class/clc8b5.h",
    "ctrl/ctrl0000/ctrl0000system.h",
    "ctrl/ctrl0000/ctrl0000gpu.h",
    "ctrl/ctrl0041.h",
    "ctrl/ctrl0080/ctrl0080gpu.h",
    "ctrl/ctrl2080/ctrl2080gpu.h",
    "ctrl/ctrl2080/ctrl2080fb.h",
    "ctrl/ctrl2080/ctrl2080fifo.h",
    "ctrl/ctrla06c.h",
    "ctrl/ctrla06f/ctrla06fgpfifo.h",
    "ctrl/ctrlc36f.h",
    // The dispatch table's rows (`src/nv/table.rs`).
    "ctrl/ctrl0000/ctrl0000syncgpuboost.h",
    "ctrl/ctrl0000/ctrl0000client.h",
    "ctrl/ctrl0000/ctrl0000unix.h",
    "ctrl/ctrl0080/ctrl0080gr.h",
    "ctrl/ctrl0080/ctrl0080fb.h",
    "ctrl/ctrl0080/ctrl0080host.h",
    "ctrl/ctrl0080/ctrl0080fifo.h",
    "ctrl/ctrl0080/ctrl0080dma.h",
    "ctrl/ctrl0080/ctrl0080perf.h",
    "ctrl/ctrl00de.h",
    "ctrl/ctrl00f8.h",
    "ctrl/ctrl00fd.h",
    "ctrl/ctrl2080/ctrl2080event.h",
    "ctrl/ctrl2080/ctrl2080tmr.h",
    "ctrl/ctrl2080/ctrl2080thermal.h",
    "ctrl/ctrl2080/ctrl2080bios.h",
    "ctrl/ctrl2080/ctrl2080gr.h",
    "ctrl/ctrl2080/ctrl2080mc.h",
    "ctrl/ctrl2080/ctrl2080bus.h",
    "ctrl/ctrl2080/ctrl2080perf.h",
    "ctrl/ctrl2080/ctrl2080rc.h",
    "ctrl/ctrl2080/ctrl2080ce.h",
    "ctrl/ctrl2080/ctrl2080nvlink.h",
    "ctrl/ctrl2080/ctrl2080flcn.h",
    "ctrl/ctrl2080/ctrl2080gsp.h",
    "ctrl/ctrl2080/ctrl2080grmgr.h",
    "ctrl/ctrl208f/ctrl208fgpu.h",
    "ctrl/ctrl503c.h",
    "ctrl/ctrl83de/ctrl83dedebug.h",
    "ctrl/ctrl906f.h",
    "ctrl/ctrl90e6.h",
    "ctrl/ctrlc56f.h",
    "ctrl/ctrlcb33.h",
    "class/cl00de.h",
    "class/cl00fd.h",
    "class/cl2081.h",
    "class/cl208f.h",
    "class/cl503b.h",
    "class/cl503c.h",
    "class/cl83de.h",
    "class/cl900e.h",
    "class/cl90e6.h",
    "alloc/alloc_channel.h",
    "class/clc5b5.h",
    "class/clb0b5sw.h",
    "class/clc5c0.h",
    "class/clc9b5.h",
    "class/clcab5.h",
    "class/clcb33.h",
    "class/clcba2.h",
    "class/clcdc0.h",
    "class/clcec0.h",
];

/// Every fact the project defines, with the C expression for it: the
/// table of [`RELEASE`], the release vgpu's tables are written for (the
/// first of the module's [`release::RELEASES`]).
pub fn table() -> Table {
    table_for(&release::RELEASES[0])
}

/// The table for release `r` of the module's [`release::RELEASES`]: what
/// the project defines, with that release's own tables (its escapes,
/// classes, controls, UVM rows, kernel-client interface and surface-size
/// query). What the release's rows lack is not in it; a params block its
/// rows give fewer bytes than the project's layout is checked as a prefix
/// ([`Table::layout`]); what vgpu does without there is expected absent or
/// at the release's value ([`NOT_IN_RELEASE`], [`DIFFERS_IN_RELEASE`]).
pub fn table_for(r: &release::Release) -> Table {
    let mut t = Table {
        sizes: release_sizes(r),
        ..Table::default()
    };
    escapes(&mut t, r);
    rm_blocks(&mut t, r);
    params(&mut t);
    constants(&mut t, r);
    kernel_client(&mut t, r.kernel);
    uvm_rows(&mut t, r);
    dispatch_table(&mut t, r);
    exceptions(&mut t, r.name);
    // After the exceptions: what vgpu asks in this release is never one.
    surface_size(&mut t, r);
    for a in &t.absent {
        assert!(
            !t.rows.iter().any(|row| row.expr == a.expr),
            "{}: `{}` is both checked and expected absent ({})",
            r.name,
            a.expr,
            a.why
        );
    }
    t
}

/// The size release `r`'s dispatch rows give each params type
/// ([`DISPATCH_PARAMS`]), where all its rows agree ([`Table::sizes`]).
fn release_sizes(r: &release::Release) -> BTreeMap<String, usize> {
    let mut by_type: BTreeMap<&str, std::collections::BTreeSet<usize>> = BTreeMap::new();
    let rows = r
        .classes
        .iter()
        .map(|c| (c.name, c.params_size as usize))
        .chain(r.controls.iter().map(|c| (c.name, c.params_size as usize)));
    for (name, size) in rows {
        if let Some((_, ty)) = DISPATCH_PARAMS.iter().find(|(n, _)| *n == name) {
            by_type.entry(ty).or_default().insert(size);
        }
    }
    by_type
        .into_iter()
        .filter_map(|(ty, sizes)| match sizes.len() {
            1 => sizes.first().map(|&n| (ty.to_string(), n)),
            _ => None,
        })
        .collect()
}

/// What the probe prints: the expressions of every release's table
/// ([`table_for`] of each of the module's [`release::RELEASES`]), those
/// it must have and those it must not, so that a facts file has the
/// expressions only an older release's table names (its own UVM layouts);
/// [`probe_source`] prints each expression once.
pub fn probe_table() -> Table {
    let mut t = Table::default();
    for r in release::RELEASES.iter() {
        let rt = table_for(r);
        t.rows.extend(rt.rows);
        t.absent.extend(rt.absent);
    }
    t
}

/// The releases before 595.45.04 (those `nv_gpu_info_t.is_soc_disp` is
/// padding in).
const BEFORE_595: &[&str] = &[
    "590.48.01",
    "580.142",
    "570.211.01",
    "550.163.01",
    "535.288.01",
];
/// The releases before 580.142.
const BEFORE_580: &[&str] = &["570.211.01", "550.163.01", "535.288.01"];
/// The releases before 570.211.01.
const BEFORE_570: &[&str] = &["550.163.01", "535.288.01"];

/// Expressions of the project's table that a release it supports does
/// not have, and that vgpu does not use there (releases, expressions,
/// why): [`table_for`] expects them absent from those releases' facts.
/// Nothing vgpu uses may be here: what a release lacks that vgpu's own
/// tables name (a row, a layout's field past the release's params size)
/// leaves its table by that release's data, not by this list.
pub const NOT_IN_RELEASE: &[(&[&str], &[&str], &str)] = &[
    (
        BEFORE_595,
        &[
            "offsetof(nv_gpu_info_t, is_soc_disp)",
            "sizeof(((nv_gpu_info_t *)0)->is_soc_disp)",
        ],
        "nv_gpu_info_t.is_soc_disp is new in 595 (its byte is padding before, \
         the entry 16 bytes either way): vgpu never reads it",
    ),
    (
        BEFORE_580,
        &[
            "offsetof(nv_gpu_info_t, needs_numa_setup)",
            "sizeof(((nv_gpu_info_t *)0)->needs_numa_setup)",
        ],
        "nv_gpu_info_t.needs_numa_setup is new in 580 (its byte is padding \
         before, the entry 16 bytes either way): vgpu never reads it",
    ),
    (
        BEFORE_580,
        &[
            "NV0041_CTRL_SURFACE_INFO_INDEX_PHYS_SIZE_LO",
            "NV0041_CTRL_SURFACE_INFO_INDEX_PHYS_SIZE_HI",
        ],
        "GET_SURFACE_INFO's PHYS_SIZE_LO and _HI are new in 580: before, vgpu \
         asks PHYS_SIZE (the release's surface_size, checked in its table)",
    ),
    (
        BEFORE_570,
        &["NVOS32_ATTR2_PAGE_SIZE_HUGE_256GB"],
        "the 256 GiB huge page is new in 570 (value 3 of ATTR2_PAGE_SIZE_HUGE \
         names no page size before): vgpu only reads the value to round a \
         memory charge up (ledger::vram_floor), never sends it, and a request \
         naming it is charged more, never less",
    ),
    (
        &["535.288.01"],
        &[
            "(offsetof(NVOS32_PARAMETERS, data.AllocSize.numaNode) - offsetof(NVOS32_PARAMETERS, data.AllocSize))",
            "sizeof(((NVOS32_PARAMETERS *)0)->data.AllocSize.numaNode)",
            "(offsetof(NVOS32_PARAMETERS, data.AllocSizeRange.numaNode) - offsetof(NVOS32_PARAMETERS, data.AllocSizeRange))",
            "sizeof(((NVOS32_PARAMETERS *)0)->data.AllocSizeRange.numaNode)",
            "(offsetof(NVOS32_PARAMETERS, data.AllocTiledPitchHeight.numaNode) - offsetof(NVOS32_PARAMETERS, data.AllocTiledPitchHeight))",
            "sizeof(((NVOS32_PARAMETERS *)0)->data.AllocTiledPitchHeight.numaNode)",
        ],
        "NVOS32's numaNode is new in 550 (the union members' bytes are \
         unnamed before, NVOS32 the same size): vgpu never reads or sets it",
    ),
];

/// Constants of the project's table whose value a release it supports
/// has otherwise, and that vgpu does not use there (releases, expression,
/// the release's value, why): [`table_for`] expects the release's value,
/// so a wrong claim still fails.
pub const DIFFERS_IN_RELEASE: &[(&[&str], &str, u64, &str)] = &[(
    BEFORE_570,
    "UVM_MAX_GPUS",
    32,
    "UVM_MAX_GPUS is NV_MAX_DEVICES (32) before 570: vgpu takes the length \
     of the per-GPU attribute arrays from the release's UVM rows (256 \
     entries in 550, UVM_MAX_GPUS_V2; 32 in 535, uvm::r535), never from \
     this macro",
)];

/// Applies [`NOT_IN_RELEASE`] and [`DIFFERS_IN_RELEASE`] to release
/// `rel`'s table. An entry that names an expression the table does not
/// check, or a value the project already has, is stale: a panic.
fn exceptions(t: &mut Table, rel: &str) {
    for (_, exprs, why) in NOT_IN_RELEASE.iter().filter(|(r, _, _)| r.contains(&rel)) {
        for e in *exprs {
            let (gone, kept): (Vec<Row>, Vec<Row>) = std::mem::take(&mut t.rows)
                .into_iter()
                .partition(|r| r.expr == *e);
            t.rows = kept;
            let row = gone.first().unwrap_or_else(|| {
                panic!("NOT_IN_RELEASE names `{e}` for {rel}, which its table does not check")
            });
            t.not_in_release(e, &row.item, why);
        }
    }
    for (_, e, v, why) in DIFFERS_IN_RELEASE.iter().filter(|(r, ..)| r.contains(&rel)) {
        let mut n = 0;
        for r in t.rows.iter_mut().filter(|r| r.expr == *e) {
            assert_ne!(
                r.value, *v,
                "DIFFERS_IN_RELEASE gives `{e}` in {rel} the value the project has"
            );
            r.value = *v;
            r.item = format!("{} (in {rel}: {why})", r.item);
            n += 1;
        }
        assert!(
            n > 0,
            "DIFFERS_IN_RELEASE names `{e}` for {rel}, which its table does not check"
        );
    }
}

/// How release `r` asks a memory object's size (`Release::surface_size`):
/// the GET_SURFACE_INFO indices, and for PHYS_SIZE its unit.
fn surface_size(t: &mut Table, r: &release::Release) {
    let item = format!("release::RELEASES[{}].surface_size", r.name);
    for &(index, shift) in r.surface_size {
        let name = [
            ("PHYS_SIZE_LO", surface_info::PHYS_SIZE_LO),
            ("PHYS_SIZE_HI", surface_info::PHYS_SIZE_HI),
            ("PHYS_SIZE", surface_info::PHYS_SIZE),
        ]
        .into_iter()
        .find(|&(_, i)| i == index)
        .map(|(n, _)| n)
        .unwrap_or_else(|| panic!("{item}: index {index} is no size index"));
        t.konst(
            &format!("NV0041_CTRL_SURFACE_INFO_INDEX_{name}"),
            index.into(),
            &item,
        );
        if index == surface_info::PHYS_SIZE {
            t.konst(
                "NV0041_CTRL_SURFACE_INFO_PHYS_SIZE_SCALE_FACTOR",
                1u64 << shift,
                &format!("{item}.shift"),
            );
        }
    }
}

/// [`compare`] for release `release` (its facts file `text`): every row
/// of `t` must be there with its value, every expression `t` expects
/// absent ([`Table::absent`]) absent.
pub fn compare_release(t: &Table, text: &str, release: &str) -> Result<Vec<String>, String> {
    let facts = parse_facts(text)?;
    let absent = absent_facts(text);
    let mut bad = Vec::new();
    for r in &t.rows {
        if absent.contains(&r.expr) {
            bad.push(format!(
                "{}: `{}` is not in {release} (its headers lack it)",
                r.item, r.expr
            ));
        } else if let Some(m) = row_mismatch(r, &facts) {
            bad.push(format!("{release}: {m}"));
        }
    }
    for a in &t.absent {
        if facts.contains_key(&a.expr) {
            bad.push(format!(
                "{}: `{}` should not be in {release} ({}), but its facts have it",
                a.item, a.expr, a.why
            ));
        } else if !absent.contains(&a.expr) {
            bad.push(format!(
                "{}: `{}` is not in the facts file of {release} (regenerate it with \
                 scripts/conformance.sh)",
                a.item, a.expr
            ));
        }
    }
    Ok(bad)
}
