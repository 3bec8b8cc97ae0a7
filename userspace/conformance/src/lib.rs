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
        self, class, ctrl, ctxshare, engine, fb_info, heap, os02, os33, pids, status, surface_info,
        vaspace, version, WireField,
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

/// The C macro naming each escape.
pub fn escape_c_name(e: Escape) -> &'static str {
    match e {
        Escape::RmAllocMemory => "NV_ESC_RM_ALLOC_MEMORY",
        Escape::RmFree => "NV_ESC_RM_FREE",
        Escape::RmControl => "NV_ESC_RM_CONTROL",
        Escape::RmAlloc => "NV_ESC_RM_ALLOC",
        Escape::RmDupObject => "NV_ESC_RM_DUP_OBJECT",
        Escape::RmShare => "NV_ESC_RM_SHARE",
        Escape::RmIdleChannels => "NV_ESC_RM_IDLE_CHANNELS",
        Escape::RmVidHeapControl => "NV_ESC_RM_VID_HEAP_CONTROL",
        Escape::RmMapMemory => "NV_ESC_RM_MAP_MEMORY",
        Escape::RmUnmapMemory => "NV_ESC_RM_UNMAP_MEMORY",
        Escape::RmMapMemoryDma => "NV_ESC_RM_MAP_MEMORY_DMA",
        Escape::RmUnmapMemoryDma => "NV_ESC_RM_UNMAP_MEMORY_DMA",
        Escape::RmUpdateDeviceMappingInfo => "NV_ESC_RM_UPDATE_DEVICE_MAPPING_INFO",
        Escape::CardInfo => "NV_ESC_CARD_INFO",
        Escape::RegisterFd => "NV_ESC_REGISTER_FD",
        Escape::AllocOsEvent => "NV_ESC_ALLOC_OS_EVENT",
        Escape::FreeOsEvent => "NV_ESC_FREE_OS_EVENT",
        Escape::StatusCode => "NV_ESC_STATUS_CODE",
        Escape::CheckVersionStr => "NV_ESC_CHECK_VERSION_STR",
        Escape::IoctlXferCmd => "NV_ESC_IOCTL_XFER_CMD",
        Escape::AttachGpusToFd => "NV_ESC_ATTACH_GPUS_TO_FD",
        Escape::SysParams => "NV_ESC_SYS_PARAMS",
        Escape::NumaInfo => "NV_ESC_NUMA_INFO",
        Escape::ExportToDmabufFd => "NV_ESC_EXPORT_TO_DMABUF_FD",
        Escape::WaitOpenComplete => "NV_ESC_WAIT_OPEN_COMPLETE",
    }
}

/// The C parameter types of each escape, in the order of its size rule's
/// sizes (RM_ALLOC takes two layouts; records give the record's type).
pub fn escape_c_params(e: Escape) -> &'static [&'static str] {
    match e {
        Escape::RmAllocMemory => &["nv_ioctl_nvos02_parameters_with_fd"],
        Escape::RmFree => &["NVOS00_PARAMETERS"],
        Escape::RmControl => &["NVOS54_PARAMETERS"],
        Escape::RmAlloc => &["NVOS21_PARAMETERS", "NVOS64_PARAMETERS"],
        Escape::RmDupObject => &["NVOS55_PARAMETERS"],
        Escape::RmShare => &["NVOS57_PARAMETERS"],
        Escape::RmIdleChannels => &["NVOS30_PARAMETERS"],
        Escape::RmVidHeapControl => &["NVOS32_PARAMETERS"],
        Escape::RmMapMemory => &["nv_ioctl_nvos33_parameters_with_fd"],
        Escape::RmUnmapMemory => &["NVOS34_PARAMETERS"],
        Escape::RmMapMemoryDma => &["NVOS46_PARAMETERS"],
        Escape::RmUnmapMemoryDma => &["NVOS47_PARAMETERS"],
        Escape::RmUpdateDeviceMappingInfo => &["NVOS56_PARAMETERS"],
        Escape::CardInfo => &["nv_ioctl_card_info_t"],
        Escape::RegisterFd => &["nv_ioctl_register_fd_t"],
        Escape::AllocOsEvent => &["nv_ioctl_alloc_os_event_t"],
        Escape::FreeOsEvent => &["nv_ioctl_free_os_event_t"],
        Escape::StatusCode => &["nv_ioctl_status_code_t"],
        Escape::CheckVersionStr => &["nv_ioctl_rm_api_version_t"],
        Escape::IoctlXferCmd => &["nv_ioctl_xfer_t"],
        Escape::AttachGpusToFd => &["NvU32"],
        Escape::SysParams => &["nv_ioctl_sys_params_t"],
        Escape::NumaInfo => &["nv_ioctl_numa_info_t"],
        Escape::ExportToDmabufFd => &["nv_ioctl_export_to_dma_buf_fd_t"],
        Escape::WaitOpenComplete => &["nv_ioctl_wait_open_complete_t"],
    }
}

/// The C macro naming each UVM command, and its parameter type (`None`:
/// the command has no block).
pub fn uvm_c_name(c: uvm::Command) -> (&'static str, Option<&'static str>) {
    use uvm::Command as C;
    match c {
        C::Initialize => ("UVM_INITIALIZE", Some("UVM_INITIALIZE_PARAMS")),
        C::Deinitialize => ("UVM_DEINITIALIZE", None),
        C::MmInitialize => ("UVM_MM_INITIALIZE", Some("UVM_MM_INITIALIZE_PARAMS")),
        C::RegisterGpu => ("UVM_REGISTER_GPU", Some("UVM_REGISTER_GPU_PARAMS")),
        C::UnregisterGpu => ("UVM_UNREGISTER_GPU", Some("UVM_UNREGISTER_GPU_PARAMS")),
        C::RegisterGpuVaspace => (
            "UVM_REGISTER_GPU_VASPACE",
            Some("UVM_REGISTER_GPU_VASPACE_PARAMS"),
        ),
        C::UnregisterGpuVaspace => (
            "UVM_UNREGISTER_GPU_VASPACE",
            Some("UVM_UNREGISTER_GPU_VASPACE_PARAMS"),
        ),
        C::RegisterChannel => ("UVM_REGISTER_CHANNEL", Some("UVM_REGISTER_CHANNEL_PARAMS")),
        C::UnregisterChannel => (
            "UVM_UNREGISTER_CHANNEL",
            Some("UVM_UNREGISTER_CHANNEL_PARAMS"),
        ),
        C::EnablePeerAccess => (
            "UVM_ENABLE_PEER_ACCESS",
            Some("UVM_ENABLE_PEER_ACCESS_PARAMS"),
        ),
        C::DisablePeerAccess => (
            "UVM_DISABLE_PEER_ACCESS",
            Some("UVM_DISABLE_PEER_ACCESS_PARAMS"),
        ),
        C::MapExternalAllocation => (
            "UVM_MAP_EXTERNAL_ALLOCATION",
            Some("UVM_MAP_EXTERNAL_ALLOCATION_PARAMS"),
        ),
        C::Free => ("UVM_FREE", Some("UVM_FREE_PARAMS")),
        C::PageableMemAccess => (
            "UVM_PAGEABLE_MEM_ACCESS",
            Some("UVM_PAGEABLE_MEM_ACCESS_PARAMS"),
        ),
        C::SetPreferredLocation => (
            "UVM_SET_PREFERRED_LOCATION",
            Some("UVM_SET_PREFERRED_LOCATION_PARAMS"),
        ),
        C::UnsetPreferredLocation => (
            "UVM_UNSET_PREFERRED_LOCATION",
            Some("UVM_UNSET_PREFERRED_LOCATION_PARAMS"),
        ),
        C::EnableReadDuplication => (
            "UVM_ENABLE_READ_DUPLICATION",
            Some("UVM_ENABLE_READ_DUPLICATION_PARAMS"),
        ),
        C::DisableReadDuplication => (
            "UVM_DISABLE_READ_DUPLICATION",
            Some("UVM_DISABLE_READ_DUPLICATION_PARAMS"),
        ),
        C::SetAccessedBy => ("UVM_SET_ACCESSED_BY", Some("UVM_SET_ACCESSED_BY_PARAMS")),
        C::UnsetAccessedBy => (
            "UVM_UNSET_ACCESSED_BY",
            Some("UVM_UNSET_ACCESSED_BY_PARAMS"),
        ),
        C::Migrate => ("UVM_MIGRATE", Some("UVM_MIGRATE_PARAMS")),
        C::UnmapExternal => ("UVM_UNMAP_EXTERNAL", Some("UVM_UNMAP_EXTERNAL_PARAMS")),
        C::AllocSemaphorePool => (
            "UVM_ALLOC_SEMAPHORE_POOL",
            Some("UVM_ALLOC_SEMAPHORE_POOL_PARAMS"),
        ),
        C::ValidateVaRange => (
            "UVM_VALIDATE_VA_RANGE",
            Some("UVM_VALIDATE_VA_RANGE_PARAMS"),
        ),
        C::CreateExternalRange => (
            "UVM_CREATE_EXTERNAL_RANGE",
            Some("UVM_CREATE_EXTERNAL_RANGE_PARAMS"),
        ),
        C::CreateRangeGroup => (
            "UVM_CREATE_RANGE_GROUP",
            Some("UVM_CREATE_RANGE_GROUP_PARAMS"),
        ),
        C::DestroyRangeGroup => (
            "UVM_DESTROY_RANGE_GROUP",
            Some("UVM_DESTROY_RANGE_GROUP_PARAMS"),
        ),
        C::SetRangeGroup => ("UVM_SET_RANGE_GROUP", Some("UVM_SET_RANGE_GROUP_PARAMS")),
        C::MigrateRangeGroup => (
            "UVM_MIGRATE_RANGE_GROUP",
            Some("UVM_MIGRATE_RANGE_GROUP_PARAMS"),
        ),
        C::ToolsReadProcessMemory => (
            "UVM_TOOLS_READ_PROCESS_MEMORY",
            Some("UVM_TOOLS_READ_PROCESS_MEMORY_PARAMS"),
        ),
        C::ToolsWriteProcessMemory => (
            "UVM_TOOLS_WRITE_PROCESS_MEMORY",
            Some("UVM_TOOLS_WRITE_PROCESS_MEMORY_PARAMS"),
        ),
        C::MapDynamicParallelismRegion => (
            "UVM_MAP_DYNAMIC_PARALLELISM_REGION",
            Some("UVM_MAP_DYNAMIC_PARALLELISM_REGION_PARAMS"),
        ),
    }
}

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

/// The escapes of release `rel` (its rows: an escape it lacks has none),
/// with its size checks, and the `nv-ioctl.h` blocks they share.
fn escapes(t: &mut Table, rel: &release::Release) {
    for r in rel.escapes {
        let e = r.escape;
        let name = escape_c_name(e);
        t.konst(name, r.nr.into(), &format!("Escape::{e:?}.nr"));
        let types = escape_c_params(e);
        let sizes: Vec<usize> = match r.size {
            SizeRule::Exact(n) => vec![n],
            SizeRule::OneOf(a, b) => vec![a, b],
            SizeRule::Records(n) => vec![n],
            SizeRule::Any => vec![],
        };
        assert_eq!(types.len(), sizes.len(), "{e:?}: one C type per size");
        for (ty, n) in types.iter().zip(sizes) {
            t.konst(
                &format!("sizeof({ty})"),
                n as u64,
                &format!("Escape::{e:?}.size_rule"),
            );
        }
    }
    // An escape vgpu knows but the release's table lacks must be one the
    // release's headers lack too: a release that has it (and whose driver
    // handles it) would see vgpu refuse what the driver answers.
    for &e in Escape::ALL {
        if !rel.escapes.iter().any(|r| r.escape == e) {
            t.not_in_release(
                escape_c_name(e),
                &format!("Escape::{e:?}"),
                "the release's table has no row for it",
            );
        }
    }
    for r in rel.escapes {
        let e = r.escape;
        let (ty, field) = match e {
            Escape::RegisterFd => ("nv_ioctl_register_fd_t", "ctl_fd"),
            Escape::RmMapMemory => ("nv_ioctl_nvos33_parameters_with_fd", "fd"),
            Escape::RmAllocMemory => ("nv_ioctl_nvos02_parameters_with_fd", "fd"),
            Escape::AllocOsEvent => ("nv_ioctl_alloc_os_event_t", "fd"),
            Escape::FreeOsEvent => ("nv_ioctl_free_os_event_t", "fd"),
            _ => {
                assert_eq!(r.fd_at, None, "{e:?}: an fd the table does not know");
                continue;
            }
        };
        let off = r.fd_at.unwrap_or_else(|| panic!("{e:?} names no fd"));
        t.konst(
            &format!("offsetof({ty}, {field})"),
            off as u64,
            &format!("Escape::{e:?}.embedded_fd"),
        );
    }
    t.konst(
        "sizeof(nv_ioctl_card_info_t)",
        ioctl::CARD_INFO_SIZE as u64,
        "ioctl::CARD_INFO_SIZE",
    );
    t.konst(
        "NV_IOCTL_MAGIC",
        ioctl::NV_IOCTL_MAGIC.into(),
        "ioctl::NV_IOCTL_MAGIC",
    );
    t.konst(
        "sizeof(nv_ioctl_xfer_t)",
        ioctl::Xfer::SIZE as u64,
        "ioctl::Xfer::SIZE",
    );
    // Where `Xfer::from_bytes` reads each field: decode bytes that hold
    // their own offsets, and each field's low byte is its offset.
    let mut probe = [0u8; ioctl::Xfer::SIZE];
    for (i, b) in probe.iter_mut().enumerate() {
        *b = i as u8;
    }
    let x = ioctl::Xfer::from_bytes(&probe);
    t.konst(
        "offsetof(nv_ioctl_xfer_t, cmd)",
        (x.cmd & 0xff).into(),
        "ioctl::Xfer.cmd",
    );
    t.konst(
        "offsetof(nv_ioctl_xfer_t, size)",
        (x.size & 0xff).into(),
        "ioctl::Xfer.size",
    );
    t.konst(
        "offsetof(nv_ioctl_xfer_t, ptr)",
        x.ptr & 0xff,
        "ioctl::Xfer.ptr",
    );
}

/// The RM parameter blocks, and the `nv-ioctl.h` blocks of the escapes
/// release `rel` has (an escape it lacks has no block to check).
fn rm_blocks(t: &mut Table, rel: &release::Release) {
    layout!(t, abi::Nvos00, CStruct::camel("NVOS00_PARAMETERS"));
    layout!(t, abi::Nvos02, CStruct::camel("NVOS02_PARAMETERS"));
    layout!(
        t,
        abi::Nvos02WithFd,
        CStruct::snake("nv_ioctl_nvos02_parameters_with_fd")
    );
    layout!(t, abi::Nvos21, CStruct::camel("NVOS21_PARAMETERS"));
    layout!(t, abi::Nvos64, CStruct::camel("NVOS64_PARAMETERS"));
    layout!(t, abi::Nvos54, CStruct::camel("NVOS54_PARAMETERS"));
    layout!(t, abi::Nvos55, CStruct::camel("NVOS55_PARAMETERS"));
    layout!(
        t,
        abi::RsSharePolicy,
        CStruct::camel("RS_SHARE_POLICY").renamed(&[("share_type", "type")])
    );
    layout!(t, abi::Nvos57, CStruct::camel("NVOS57_PARAMETERS"));
    layout!(
        t,
        abi::Nvos32,
        CStruct::camel("NVOS32_PARAMETERS").renamed(&[("h_va_space", "hVASpace")])
    );
    const HEAP_RENAMES: &[(&str, &str)] = &[("surface_type", "type")];
    layout!(
        t,
        abi::Nvos32AllocSize,
        CStruct::camel("NVOS32_PARAMETERS")
            .within("data.AllocSize")
            .renamed(HEAP_RENAMES)
    );
    layout!(
        t,
        abi::Nvos32AllocSizeRange,
        CStruct::camel("NVOS32_PARAMETERS")
            .within("data.AllocSizeRange")
            .renamed(HEAP_RENAMES)
    );
    layout!(
        t,
        abi::Nvos32AllocTiledPitchHeight,
        CStruct::camel("NVOS32_PARAMETERS")
            .within("data.AllocTiledPitchHeight")
            .renamed(HEAP_RENAMES)
    );
    layout!(
        t,
        abi::Nvos32Free,
        CStruct::camel("NVOS32_PARAMETERS").within("data.Free")
    );
    layout!(
        t,
        abi::Nvos32Info,
        CStruct::camel("NVOS32_PARAMETERS").within("data.Info")
    );
    t.konst(
        "offsetof(NVOS32_PARAMETERS, data)",
        abi::NVOS32_DATA_OFFSET as u64,
        "abi::NVOS32_DATA_OFFSET",
    );
    layout!(t, abi::Nvos33, CStruct::camel("NVOS33_PARAMETERS"));
    layout!(
        t,
        abi::Nvos33WithFd,
        CStruct::snake("nv_ioctl_nvos33_parameters_with_fd")
    );
    layout!(t, abi::Nvos34, CStruct::camel("NVOS34_PARAMETERS"));
    let has = |e: Escape| rel.escape_row(e.nr()).is_some();
    if has(Escape::CardInfo) {
        layout!(t, abi::PciInfo, CStruct::snake("nv_pci_info_t"));
        layout!(t, abi::CardInfo, CStruct::snake("nv_ioctl_card_info_t"));
    }
    if has(Escape::CheckVersionStr) {
        layout!(
            t,
            abi::RmApiVersion,
            CStruct::camel("nv_ioctl_rm_api_version_t")
        );
    }
    if has(Escape::RegisterFd) {
        layout!(t, abi::RegisterFd, CStruct::snake("nv_ioctl_register_fd_t"));
    }
    if has(Escape::AllocOsEvent) {
        layout!(
            t,
            abi::OsEvent,
            CStruct::camel("nv_ioctl_alloc_os_event_t").renamed(&[("status", "Status")])
        );
    }
    if has(Escape::SysParams) {
        layout!(t, abi::SysParams, CStruct::snake("nv_ioctl_sys_params_t"));
    }
    if has(Escape::WaitOpenComplete) {
        layout!(
            t,
            abi::WaitOpenComplete,
            CStruct::camel("nv_ioctl_wait_open_complete_t")
        );
    }
}

fn params(t: &mut Table) {
    layout!(
        t,
        abi::MemoryAllocationParams,
        CStruct::camel("NV_MEMORY_ALLOCATION_PARAMS").renamed(&[
            ("surface_type", "type"),
            ("h_va_space", "hVASpace"),
            ("internal_flags", "internalflags"),
        ])
    );
    layout!(
        t,
        abi::DeviceAllocParams,
        CStruct::camel("NV0080_ALLOC_PARAMETERS")
    );
    layout!(
        t,
        abi::SubdeviceAllocParams,
        CStruct::camel("NV2080_ALLOC_PARAMETERS")
    );
    layout!(
        t,
        abi::EventAllocParams,
        CStruct::camel("NV0005_ALLOC_PARAMETERS")
    );
    layout!(
        t,
        abi::MemoryDescParams,
        CStruct::camel("NV_MEMORY_DESC_PARAMS")
    );
    layout!(
        t,
        abi::ChannelAllocParams,
        CStruct::camel("NV_CHANNEL_ALLOC_PARAMS").renamed(&[
            ("h_va_space", "hVASpace"),
            ("process_id", "ProcessID"),
            ("sub_process_id", "SubProcessID"),
            ("tpc_config_id", "tpcConfigID"),
        ])
    );
    layout!(
        t,
        abi::ChannelGroupAllocParams,
        CStruct::camel("NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS")
            .renamed(&[("h_va_space", "hVASpace")])
    );
    layout!(
        t,
        abi::CtxShareAllocParams,
        CStruct::camel("NV_CTXSHARE_ALLOCATION_PARAMETERS").renamed(&[("h_va_space", "hVASpace")])
    );
    layout!(
        t,
        abi::GidInfoParams,
        CStruct::camel("NV2080_CTRL_GPU_GET_GID_INFO_PARAMS")
    );
    layout!(
        t,
        abi::VaSpaceAllocParams,
        CStruct::camel("NV_VASPACE_ALLOCATION_PARAMETERS")
    );
    layout!(
        t,
        abi::UsermodeAllocParams,
        CStruct::camel("NV_HOPPER_USERMODE_A_PARAMS")
    );
    layout!(t, abi::InfoEntry, CStruct::camel("NV2080_CTRL_FB_INFO"));
    layout!(
        t,
        abi::GetPidsParams,
        CStruct::camel("NV2080_CTRL_GPU_GET_PIDS_PARAMS")
    );
    layout!(
        t,
        abi::PidInfo,
        CStruct::camel("NV2080_CTRL_GPU_PID_INFO").renamed(&[
            ("mem_private", "data.vidMemUsage.memPrivate"),
            ("mem_shared_owned", "data.vidMemUsage.memSharedOwned"),
            ("mem_shared_duped", "data.vidMemUsage.memSharedDuped"),
            (
                "protected_mem_private",
                "data.vidMemUsage.protectedMemPrivate"
            ),
            (
                "protected_mem_shared_owned",
                "data.vidMemUsage.protectedMemSharedOwned"
            ),
            (
                "protected_mem_shared_duped",
                "data.vidMemUsage.protectedMemSharedDuped"
            ),
            ("compute_instance_id", "smcSubscription.computeInstanceId"),
            ("gpu_instance_id", "smcSubscription.gpuInstanceId"),
        ])
    );
    layout!(
        t,
        abi::GetPidInfoParams,
        CStruct::camel("NV2080_CTRL_GPU_GET_PID_INFO_PARAMS")
            .renamed(&[("list_count", "pidInfoListCount"), ("list", "pidInfoList")])
    );
    layout!(
        t,
        abi::FbGetInfoV2Params,
        CStruct::camel("NV2080_CTRL_FB_GET_INFO_V2_PARAMS")
            .renamed(&[("list_size", "fbInfoListSize"), ("list", "fbInfoList")])
    );
    layout!(
        t,
        abi::FbGetInfoV1Params,
        CStruct::camel("NV2080_CTRL_FB_GET_INFO_PARAMS")
            .renamed(&[("list_size", "fbInfoListSize"), ("list_ptr", "fbInfoList")])
    );
    layout!(
        t,
        abi::GetSurfaceInfoParams,
        CStruct::camel("NV0041_CTRL_GET_SURFACE_INFO_PARAMS").renamed(&[
            ("list_size", "surfaceInfoListSize"),
            ("list_ptr", "surfaceInfoList"),
        ])
    );
    layout!(
        t,
        abi::GpuGetInfoV2Params,
        CStruct::camel("NV2080_CTRL_GPU_GET_INFO_V2_PARAMS")
            .renamed(&[("list_size", "gpuInfoListSize"), ("list", "gpuInfoList")])
    );
    layout!(
        t,
        abi::GpfifoScheduleParams,
        CStruct::camel("NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS")
    );
    layout!(
        t,
        abi::TimesliceParams,
        CStruct::camel("NVA06C_CTRL_TIMESLICE_PARAMS")
    );
    layout!(
        t,
        abi::PreemptParams,
        CStruct::camel("NVA06C_CTRL_PREEMPT_PARAMS")
    );
    layout!(
        t,
        abi::InterleaveLevelParams,
        CStruct::camel("NVA06C_CTRL_INTERLEAVE_LEVEL_PARAMS")
    );
    layout!(
        t,
        abi::MakeRealtimeParams,
        CStruct::camel("NVA06C_CTRL_MAKE_REALTIME_PARAMS")
    );
    layout!(
        t,
        abi::StopChannelParams,
        CStruct::camel("NVA06F_CTRL_STOP_CHANNEL_PARAMS")
    );
    layout!(
        t,
        abi::FifoDisableChannelsParams,
        CStruct::camel("NV2080_CTRL_FIFO_DISABLE_CHANNELS_PARAMS")
    );
    layout!(
        t,
        abi::WorkSubmitTokenParams,
        CStruct::camel("NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS")
    );
    layout!(
        t,
        abi::GpuGetIdInfoV2Params,
        CStruct::camel("NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS")
    );
    layout!(
        t,
        abi::GpuGetAttachedIdsParams,
        CStruct::camel("NV0000_CTRL_GPU_GET_ATTACHED_IDS_PARAMS")
    );
    layout!(
        t,
        abi::ClassListV2Params,
        CStruct::camel("NV0080_CTRL_GPU_GET_CLASSLIST_V2_PARAMS")
    );
}

/// Whether class `c`'s constants are checked in release `rel`: unless the
/// base table has a row for the class and `rel`'s does not (the release
/// lacks the class, as 550 and 535 lack Blackwell's).
fn class_in(rel: &release::Release, c: u32) -> bool {
    rel.class_row(c).is_some() || release::RELEASES[0].class_row(c).is_none()
}

/// Pairs constants' names with their values.
macro_rules! named {
    ($m:ident : $($name:ident),* $(,)?) => {
        [$((stringify!($name), ($m::$name) as u64)),*]
    };
}

/// The constants vgpu uses, those of classes release `rel` lacks left out
/// ([`class_in`]), the list lengths as `rel`'s params sizes give them
/// ([`Table::list_length`]).
fn constants(t: &mut Table, rel: &release::Release) {
    consts!(t, "", status:
        NV_OK, NV_ERR_BUFFER_TOO_SMALL, NV_ERR_BUSY_RETRY, NV_ERR_GPU_UUID_NOT_FOUND,
        NV_ERR_ILLEGAL_ACTION, NV_ERR_IN_USE, NV_ERR_INSERT_DUPLICATE_NAME,
        NV_ERR_INSUFFICIENT_RESOURCES, NV_ERR_INSUFFICIENT_PERMISSIONS, NV_ERR_INVALID_ADDRESS,
        NV_ERR_INVALID_ARGUMENT, NV_ERR_INVALID_CHANNEL, NV_ERR_INVALID_CLASS, NV_ERR_INVALID_CLIENT,
        NV_ERR_INVALID_COMMAND, NV_ERR_INVALID_DEVICE, NV_ERR_INVALID_FLAGS,
        NV_ERR_INVALID_FUNCTION, NV_ERR_INVALID_LIMIT, NV_ERR_INVALID_OBJECT,
        NV_ERR_INVALID_OBJECT_HANDLE, NV_ERR_INVALID_OBJECT_NEW, NV_ERR_INVALID_OBJECT_OLD,
        NV_ERR_INVALID_OBJECT_PARENT, NV_ERR_INVALID_OFFSET, NV_ERR_INVALID_PARAM_STRUCT,
        NV_ERR_INVALID_POINTER, NV_ERR_INVALID_STATE, NV_ERR_MORE_PROCESSING_REQUIRED,
        NV_ERR_NO_MEMORY, NV_ERR_NOT_SUPPORTED, NV_ERR_OBJECT_NOT_FOUND,
        NV_ERR_OPERATING_SYSTEM, NV_ERR_OTHER_DEVICE_FOUND, NV_ERR_OUT_OF_RANGE,
        NV_ERR_PAGE_TABLE_NOT_AVAIL, NV_ERR_STATE_IN_USE, NV_ERR_SIGNAL_PENDING,
        NV_ERR_TIMEOUT, NV_ERR_UVM_ADDRESS_IN_USE, NV_ERR_GENERIC, NV_WARN_NOTHING_TO_DO,
    );
    let classes = named!(class:
        NV01_ROOT, NV01_ROOT_NON_PRIV, NV01_ROOT_CLIENT, NV01_EVENT, NV01_EVENT_OS_EVENT,
        NV01_DEVICE_0, NV20_SUBDEVICE_0, NV01_MEMORY_SYSTEM, NV01_MEMORY_LOCAL_USER,
        NV01_MEMORY_VIRTUAL, NV01_MEMORY_LOCAL_PHYSICAL, NV_MEMORY_FABRIC,
        NV50_MEMORY_VIRTUAL, FERMI_CONTEXT_SHARE_A, FERMI_VASPACE_A, KEPLER_CHANNEL_GROUP_A,
        MPS_COMPUTE, KEPLER_CHANNEL_GPFIFO_A, KEPLER_CHANNEL_GPFIFO_B, MAXWELL_CHANNEL_GPFIFO_A,
        PASCAL_CHANNEL_GPFIFO_A, VOLTA_CHANNEL_GPFIFO_A, TURING_CHANNEL_GPFIFO_A,
        AMPERE_CHANNEL_GPFIFO_A, HOPPER_CHANNEL_GPFIFO_A, BLACKWELL_CHANNEL_GPFIFO_A,
        BLACKWELL_CHANNEL_GPFIFO_B, VOLTA_USERMODE_A, TURING_USERMODE_A, AMPERE_USERMODE_A,
        HOPPER_USERMODE_A, BLACKWELL_USERMODE_A, AMPERE_COMPUTE_A, AMPERE_COMPUTE_B,
        ADA_COMPUTE_A, HOPPER_COMPUTE_A, AMPERE_DMA_COPY_A, AMPERE_DMA_COPY_B,
        HOPPER_DMA_COPY_A,
    );
    for (name, c) in classes {
        if class_in(rel, c as u32) {
            t.konst(name, c, &format!("class::{name}"));
        }
    }
    t.konst(
        "NVC361_NOTIFY_CHANNEL_PENDING",
        class::USERMODE_DOORBELL_OFFSET as u64,
        "class::USERMODE_DOORBELL_OFFSET",
    );
    consts!(t, "", engine: NV2080_ENGINE_TYPE_GRAPHICS, NV2080_ENGINE_TYPE_COPY0);
    // Blackwell's USERD (clc96f.h, clca6f.h) has `GPPut` only.
    // Each USERD with its channel class: checked where the release has it.
    for (ty, has_get, c) in [
        ("Nvc36fControl", true, class::VOLTA_CHANNEL_GPFIFO_A),
        ("Nvc46fControl", true, class::TURING_CHANNEL_GPFIFO_A),
        ("Nvc56fControl", true, class::AMPERE_CHANNEL_GPFIFO_A),
        ("Nvc86fControl", true, class::HOPPER_CHANNEL_GPFIFO_A),
        ("Nvc96fControl", false, class::BLACKWELL_CHANNEL_GPFIFO_A),
        ("Nvca6fControl", false, class::BLACKWELL_CHANNEL_GPFIFO_B),
    ] {
        if !class_in(rel, c) {
            continue;
        }
        if has_get {
            t.konst(
                &format!("offsetof({ty}, GPGet)"),
                abi::userd::GP_GET as u64,
                "abi::userd::GP_GET",
            );
        }
        t.konst(
            &format!("offsetof({ty}, GPPut)"),
            abi::userd::GP_PUT as u64,
            "abi::userd::GP_PUT",
        );
    }
    consts!(t, "", ctrl:
        NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION, NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2,
        NV0000_CTRL_CMD_SYSTEM_GET_CPU_INFO,
        NV0000_CTRL_CMD_GPU_GET_ATTACHED_IDS,
        NV0000_CTRL_CMD_GPU_GET_ID_INFO, NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2,
        NV0000_CTRL_CMD_GPU_GET_PROBED_IDS, NV0041_CTRL_CMD_GET_SURFACE_INFO,
        NV0080_CTRL_CMD_GPU_GET_CLASSLIST_V2, NV2080_CTRL_CMD_GPU_GET_INFO_V2,
        NV2080_CTRL_CMD_GPU_GET_GID_INFO, NV2080_CTRL_CMD_GPU_GET_PIDS,
        NV2080_CTRL_CMD_GPU_GET_PID_INFO, NV2080_CTRL_CMD_GPU_GET_COMPUTE_POLICY_CONFIG, NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS,
        NV2080_CTRL_CMD_FB_GET_INFO, NV2080_CTRL_CMD_FB_GET_INFO_V2,
        NV2080_CTRL_CMD_FB_GET_FB_REGION_INFO, NVA06C_CTRL_CMD_GPFIFO_SCHEDULE,
        NVA06C_CTRL_CMD_BIND, NVA06C_CTRL_CMD_SET_TIMESLICE, NVA06C_CTRL_CMD_GET_TIMESLICE,
        NVA06C_CTRL_CMD_PREEMPT, NVA06C_CTRL_CMD_GET_INFO, NVA06C_CTRL_CMD_SET_INTERLEAVE_LEVEL,
        NVA06C_CTRL_CMD_GET_INTERLEAVE_LEVEL, NVA06C_CTRL_CMD_MAKE_REALTIME,
        NVA06F_CTRL_CMD_GPFIFO_SCHEDULE, NVA06F_CTRL_CMD_STOP_CHANNEL,
        NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN,
    );
    // The open headers leave out the command macro of this privileged
    // control; its number is its GET sibling's interface with its own
    // message id, the way FINN builds every control number.
    t.konst(
        "((NV2080_CTRL_CMD_GPU_GET_COMPUTE_POLICY_CONFIG & ~0xffU) | NV2080_CTRL_GPU_SET_COMPUTE_POLICY_CONFIG_PARAMS_MESSAGE_ID)",
        ctrl::NV2080_CTRL_CMD_GPU_SET_COMPUTE_POLICY_CONFIG.into(),
        "ctrl::NV2080_CTRL_CMD_GPU_SET_COMPUTE_POLICY_CONFIG",
    );
    consts!(t, "NV2080_CTRL_FB_INFO_INDEX_", fb_info:
        BAR1_SIZE, RAM_SIZE, TOTAL_RAM_SIZE, HEAP_SIZE, MAPPABLE_HEAP_SIZE, BUS_WIDTH,
        FB_TAX_SIZE_KB, HEAP_BASE_KB, LARGEST_FREE_REGION_SIZE_KB,
        LARGEST_FREE_REGION_BASE_KB, HEAP_FREE, BAR1_AVAIL_SIZE, HEAP_START,
        USABLE_RAM_SIZE,
    );
    t.list_length(
        "NV2080_CTRL_FB_INFO_MAX_LIST_SIZE",
        fb_info::MAX_LIST_SIZE,
        "fb_info::MAX_LIST_SIZE",
        "NV2080_CTRL_FB_GET_INFO_V2_PARAMS",
        abi::FbGetInfoV2Params::FIELDS,
        "list",
    );
    // RM_USER_SHARED_DATA and REQUEST_DATA_POLL are checked as the table's
    // rows (which name them by `abi::rusd`).
    // The per-process utilisation bit exists from 590 on (`cl00de.h`);
    // vgpu refuses the class from 550 on, and the double records the bit.
    let major: u32 = rel
        .name
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .unwrap_or(0);
    if major >= 590 {
        t.konst(
            "NV00DE_RUSD_POLL_PROC_UTIL",
            abi::rusd::POLL_PROC_UTIL,
            "rusd::POLL_PROC_UTIL",
        );
    }
    consts!(t, "NV2080_CTRL_GPU_", pids:
        GET_PIDS_MAX_COUNT, GET_PIDS_ID_TYPE_CLASS, GET_PIDS_ID_TYPE_VGPU_GUEST,
        GET_PID_INFO_MAX_COUNT, PID_INFO_INDEX_VIDEO_MEMORY_USAGE, PARTITION_ID_INVALID,
    );
    consts!(t, "NV0041_CTRL_SURFACE_INFO_INDEX_", surface_info:
        ATTRS, PHYS_SIZE_LO, PHYS_SIZE_HI, COMPR_COVERAGE, PHYS_SIZE, PHYS_ATTR,
        ADDR_SPACE_TYPE,
    );
    t.list_length(
        "NV2080_CTRL_GPU_INFO_MAX_LIST_SIZE",
        abi::GPU_INFO_MAX_LIST_SIZE,
        "abi::GPU_INFO_MAX_LIST_SIZE",
        "NV2080_CTRL_GPU_GET_INFO_V2_PARAMS",
        abi::GpuGetInfoV2Params::FIELDS,
        "list",
    );
    t.list_length(
        "NV0080_CTRL_GPU_CLASSLIST_MAX_SIZE",
        abi::CLASSLIST_MAX_SIZE,
        "abi::CLASSLIST_MAX_SIZE",
        "NV0080_CTRL_GPU_GET_CLASSLIST_V2_PARAMS",
        abi::ClassListV2Params::FIELDS,
        "class_list",
    );
    t.konst(
        "NV0000_CTRL_GPU_MAX_ATTACHED_GPUS",
        abi::MAX_ATTACHED_GPUS as u64,
        "abi::MAX_ATTACHED_GPUS",
    );
    t.konst(
        "NV0000_CTRL_GPU_INVALID_ID",
        abi::GPU_INVALID_ID.into(),
        "abi::GPU_INVALID_ID",
    );
    t.konst(
        "NV2080_CTRL_FIFO_DISABLE_CHANNELS_MAX_ENTRIES",
        abi::DISABLE_CHANNELS_MAX_ENTRIES as u64,
        "abi::DISABLE_CHANNELS_MAX_ENTRIES",
    );
    t.konst(
        "NV_MAX_SUBDEVICES",
        abi::MAX_SUBDEVICES as u64,
        "abi::MAX_SUBDEVICES",
    );
    t.konst(
        "NVA06C_CTRL_CMD_PREEMPT_MAX_MANUAL_TIMEOUT_US",
        abi::PREEMPT_MAX_MANUAL_TIMEOUT_US.into(),
        "abi::PREEMPT_MAX_MANUAL_TIMEOUT_US",
    );
    t.konst(
        "NV2080_GPU_CMD_GPU_GET_GID_FLAGS_FORMAT_BINARY",
        abi::GID_FLAGS_FORMAT_BINARY.into(),
        "abi::GID_FLAGS_FORMAT_BINARY",
    );
    t.konst(
        "NVOS64_FLAGS_FINN_SERIALIZED",
        abi::NVOS64_FLAGS_FINN_SERIALIZED.into(),
        "abi::NVOS64_FLAGS_FINN_SERIALIZED",
    );
    consts!(t, "NVOS32_", heap:
        FUNCTION_ALLOC_SIZE, FUNCTION_FREE, FUNCTION_INFO, FUNCTION_ALLOC_TILED_PITCH_HEIGHT,
        FUNCTION_ALLOC_SIZE_RANGE, TYPE_IMAGE, ALLOC_FLAGS_IGNORE_BANK_PLACEMENT,
        ALLOC_FLAGS_ALIGNMENT_FORCE, ALLOC_FLAGS_MEMORY_HANDLE_PROVIDED,
        ALLOC_FLAGS_MAP_NOT_REQUIRED, ALLOC_FLAGS_PERSISTENT_VIDMEM, ALLOC_FLAGS_VIRTUAL,
        ATTR_PAGE_SIZE_DEFAULT, ATTR_PAGE_SIZE_4KB, ATTR_PAGE_SIZE_BIG, ATTR_PAGE_SIZE_HUGE,
        ATTR_LOCATION_VIDMEM, ATTR_LOCATION_PCI, ATTR_LOCATION_ANY,
        ATTR_PHYSICALITY_DEFAULT, ATTR_PHYSICALITY_NONCONTIGUOUS,
        ATTR_PHYSICALITY_CONTIGUOUS, ATTR_PHYSICALITY_ALLOW_NONCONTIGUOUS,
        ATTR_COHERENCY_UNCACHED, ATTR_COHERENCY_CACHED, ATTR_COHERENCY_WRITE_COMBINE,
        ATTR2_GPU_CACHEABLE_YES, ATTR2_GPU_CACHEABLE_NO, ATTR2_PAGE_SIZE_HUGE_DEFAULT,
        ATTR2_PAGE_SIZE_HUGE_2MB, ATTR2_PAGE_SIZE_HUGE_512MB, ATTR2_PAGE_SIZE_HUGE_256GB,
    );
    t.konst(
        "NVOS32_FREE_FLAGS_MEMORY_HANDLE_PROVIDED",
        heap::FREE_FLAGS_MEMORY_HANDLE_PROVIDED.into(),
        "heap::FREE_FLAGS_MEMORY_HANDLE_PROVIDED",
    );
    for (c, f, item) in [
        (
            "NVOS32_ATTR_PAGE_SIZE",
            heap::ATTR_PAGE_SIZE,
            "heap::ATTR_PAGE_SIZE",
        ),
        (
            "NVOS32_ATTR_LOCATION",
            heap::ATTR_LOCATION,
            "heap::ATTR_LOCATION",
        ),
        (
            "NVOS32_ATTR_PHYSICALITY",
            heap::ATTR_PHYSICALITY,
            "heap::ATTR_PHYSICALITY",
        ),
        (
            "NVOS32_ATTR_COHERENCY",
            heap::ATTR_COHERENCY,
            "heap::ATTR_COHERENCY",
        ),
        (
            "NVOS32_ATTR2_GPU_CACHEABLE",
            heap::ATTR2_GPU_CACHEABLE,
            "heap::ATTR2_GPU_CACHEABLE",
        ),
        (
            "NVOS32_ATTR2_PAGE_SIZE_HUGE",
            heap::ATTR2_PAGE_SIZE_HUGE,
            "heap::ATTR2_PAGE_SIZE_HUGE",
        ),
        (
            "NVOS02_FLAGS_PHYSICALITY",
            os02::FLAGS_PHYSICALITY,
            "os02::FLAGS_PHYSICALITY",
        ),
        (
            "NVOS02_FLAGS_LOCATION",
            os02::FLAGS_LOCATION,
            "os02::FLAGS_LOCATION",
        ),
        (
            "NVOS02_FLAGS_COHERENCY",
            os02::FLAGS_COHERENCY,
            "os02::FLAGS_COHERENCY",
        ),
        ("NVOS02_FLAGS_ALLOC", os02::FLAGS_ALLOC, "os02::FLAGS_ALLOC"),
        (
            "NVOS33_FLAGS_ACCESS",
            os33::FLAGS_ACCESS,
            "os33::FLAGS_ACCESS",
        ),
        (
            "NVOS33_FLAGS_MAPPING",
            os33::FLAGS_MAPPING,
            "os33::FLAGS_MAPPING",
        ),
        (
            "NVOS33_FLAGS_CACHING_TYPE",
            os33::FLAGS_CACHING_TYPE,
            "os33::FLAGS_CACHING_TYPE",
        ),
    ] {
        t.bitfield(c, f, item);
    }
    consts!(t, "NVOS02_", os02: FLAGS_LOCATION_PCI, FLAGS_LOCATION_VIDMEM, FLAGS_ALLOC_NONE);
    consts!(t, "NVOS33_", os33:
        FLAGS_ACCESS_READ_WRITE, FLAGS_ACCESS_READ_ONLY, FLAGS_ACCESS_WRITE_ONLY,
        FLAGS_CACHING_TYPE_CACHED, FLAGS_CACHING_TYPE_UNCACHED,
        FLAGS_CACHING_TYPE_WRITECOMBINED, FLAGS_CACHING_TYPE_DEFAULT,
    );
    consts!(t, "NV_VASPACE_ALLOCATION_", vaspace:
        INDEX_GPU_NEW, INDEX_GPU_HOST, FLAGS_IS_EXTERNALLY_OWNED, FLAGS_ENABLE_PAGE_FAULTING,
    );
    consts!(t, "NV_VASPACE_", vaspace: BIG_PAGE_SIZE_64K, BIG_PAGE_SIZE_128K);
    consts!(t, "NV_CTXSHARE_ALLOCATION_", ctxshare:
        FLAGS_SUBCONTEXT_SYNC, FLAGS_SUBCONTEXT_ASYNC, FLAGS_SUBCONTEXT_SPECIFIED,
    );
    consts!(t, "NV_RM_API_VERSION_", version:
        CMD_STRICT, CMD_RELAXED, CMD_QUERY, REPLY_UNRECOGNIZED, REPLY_RECOGNIZED,
        STRING_LENGTH,
    );
}

/// The kernel-client interface of a release (`Release::kernel`; a test
/// passes a seeded wrong one): the ops command block at its size, every
/// member of its params union, and the NV04_ALLOC member's layout.
pub fn kernel_client(t: &mut Table, kc: &rmops::KernelClient) {
    use core::mem::{offset_of, size_of};
    use rmops::{GpuInfo, PciLocation, RmOpsTable};
    let ty = "nvidia_kernel_rmapi_ops_t";
    t.konst(
        &format!("sizeof({ty})"),
        kc.cmd_size() as u64,
        "rmops::KernelClient::cmd_size",
    );
    t.konst(
        &format!("offsetof({ty}, params)"),
        rmops::PARAMS_OFFSET as u64,
        "rmops::PARAMS_OFFSET",
    );
    t.konst(
        &format!("sizeof((({ty} *)0)->params)"),
        kc.params_size as u64,
        "rmops::KernelClient.params_size",
    );
    for m in kc.members {
        let name = m.name;
        t.konst(
            &format!("sizeof((({ty} *)0)->params.{name})"),
            m.size as u64,
            &format!("rmops::KernelClient.members[{name}].size"),
        );
        t.konst(
            &format!("offsetof({ty}, params.{name})"),
            rmops::PARAMS_OFFSET as u64,
            &format!("rmops::KernelClient.members[{name}]"),
        );
    }
    // The NV04_ALLOC member is the block kc.alloc lays out (an NVOS64 or an
    // NVOS21: the releases differ there).
    let alloc_size = kc
        .member_size(op::ALLOC)
        .expect("the union has an NV04_ALLOC member");
    t.layout(
        "rmops::KernelClient.alloc",
        alloc_size,
        kc.alloc.fields(),
        CStruct::camel(ty).within("params.alloc"),
    );
    consts!(t, "NV01_", op: FREE, ALLOC_MEMORY);
    consts!(t, "NV04_", op:
        VID_HEAP_CONTROL, MAP_MEMORY, UNMAP_MEMORY, ALLOC_CONTEXT_DMA, MAP_MEMORY_DMA,
        UNMAP_MEMORY_DMA, BIND_CONTEXT_DMA, CONTROL, ADD_VBLANK_CALLBACK, SHARE,
    );
    t.konst("NV04_ALLOC", op::ALLOC.into(), "rmops::op::ALLOC");
    t.konst("NV04_DUP_OBJECT", op::DUP.into(), "rmops::op::DUP");

    let ty = "nvidia_modeset_rm_ops_t";
    t.konst(
        &format!("sizeof({ty})"),
        size_of::<RmOpsTable>() as u64,
        "rmops::RmOpsTable",
    );
    for (c, off) in [
        ("version_string", offset_of!(RmOpsTable, version_string)),
        (
            "system_info.allow_write_combining",
            offset_of!(RmOpsTable, allow_write_combining),
        ),
        ("alloc_stack", offset_of!(RmOpsTable, alloc_stack)),
        ("free_stack", offset_of!(RmOpsTable, free_stack)),
        ("enumerate_gpus", offset_of!(RmOpsTable, enumerate_gpus)),
        ("open_gpu", offset_of!(RmOpsTable, open_gpu)),
        ("close_gpu", offset_of!(RmOpsTable, close_gpu)),
        ("op", offset_of!(RmOpsTable, op)),
        ("set_callbacks", offset_of!(RmOpsTable, set_callbacks)),
    ] {
        t.konst(
            &format!("offsetof({ty}, {c})"),
            off as u64,
            &format!("rmops::RmOpsTable.{c}"),
        );
    }
    let ty = "nv_gpu_info_t";
    t.konst(
        &format!("sizeof({ty})"),
        size_of::<GpuInfo>() as u64,
        "rmops::GpuInfo",
    );
    for (c, off, size) in [
        ("gpu_id", offset_of!(GpuInfo, gpu_id), 4),
        (
            "pci_info",
            offset_of!(GpuInfo, pci_info),
            size_of::<PciLocation>(),
        ),
        (
            "pci_info.domain",
            offset_of!(GpuInfo, pci_info) + offset_of!(PciLocation, domain),
            4,
        ),
        (
            "pci_info.bus",
            offset_of!(GpuInfo, pci_info) + offset_of!(PciLocation, bus),
            1,
        ),
        (
            "pci_info.slot",
            offset_of!(GpuInfo, pci_info) + offset_of!(PciLocation, slot),
            1,
        ),
        (
            "pci_info.function",
            offset_of!(GpuInfo, pci_info) + offset_of!(PciLocation, function),
            1,
        ),
        ("needs_numa_setup", offset_of!(GpuInfo, needs_numa_setup), 1),
        ("is_soc_disp", offset_of!(GpuInfo, is_soc_disp), 1),
        ("os_device_ptr", offset_of!(GpuInfo, os_device_ptr), 8),
    ] {
        t.konst(
            &format!("offsetof({ty}, {c})"),
            off as u64,
            &format!("rmops::GpuInfo.{c}"),
        );
        t.konst(
            &format!("sizeof((({ty} *)0)->{c})"),
            size as u64,
            &format!("rmops::GpuInfo.{c}"),
        );
    }
    t.konst("NV_MAX_GPUS", rmops::MAX_GPUS as u64, "rmops::MAX_GPUS");
}

/// The block layout a `wire_struct!` gives a UVM command: the Rust type
/// (for messages), its size and fields, and the C side.
struct UvmLayout<'a> {
    item: &'static str,
    size: usize,
    fields: &'static [WireField],
    c: CStruct<'a>,
}

/// Pairs a `wire_struct!` type with its C side.
macro_rules! uvm_layout {
    ($ty:path, $c:expr) => {
        Some(UvmLayout {
            item: stringify!($ty),
            size: <$ty>::SIZE,
            fields: <$ty>::FIELDS,
            c: $c,
        })
    };
}

/// The layout the project decodes UVM command `c`'s block (C type `ty`)
/// with in [`RELEASE`], where it decodes one.
fn uvm_base_layout(c: uvm::Command, ty: &str) -> Option<UvmLayout<'_>> {
    use uvm::Command as C;
    let gpu_uuid_snake: &'static [(&str, &str)] = &[("gpu_uuid", "gpu_uuid")];
    let requested: &'static [(&str, &str)] = &[("base", "requestedBase")];
    match c {
        C::Deinitialize => None,
        C::Initialize => uvm_layout!(uvm::InitializeParams, CStruct::camel(ty)),
        C::MmInitialize => uvm_layout!(uvm::MmInitializeParams, CStruct::camel(ty)),
        C::RegisterGpu => uvm_layout!(
            uvm::RegisterGpuParams,
            CStruct::camel(ty).renamed(gpu_uuid_snake)
        ),
        C::UnregisterGpu => uvm_layout!(uvm::GpuParams, CStruct::camel(ty).renamed(gpu_uuid_snake)),
        C::UnregisterGpuVaspace => uvm_layout!(uvm::GpuParams, CStruct::camel(ty)),
        C::RegisterGpuVaspace => uvm_layout!(uvm::RegisterGpuVaspaceParams, CStruct::camel(ty)),
        C::RegisterChannel => uvm_layout!(uvm::RegisterChannelParams, CStruct::camel(ty)),
        C::UnregisterChannel => uvm_layout!(uvm::UnregisterChannelParams, CStruct::camel(ty)),
        C::EnablePeerAccess | C::DisablePeerAccess => {
            uvm_layout!(uvm::PeerAccessParams, CStruct::camel(ty))
        }
        C::MapExternalAllocation => {
            uvm_layout!(uvm::MapExternalAllocationParams, CStruct::camel(ty))
        }
        C::Free => uvm_layout!(uvm::FreeParams, CStruct::camel(ty)),
        C::PageableMemAccess => uvm_layout!(uvm::PageableMemAccessParams, CStruct::camel(ty)),
        C::SetPreferredLocation => uvm_layout!(uvm::SetPreferredLocationParams, CStruct::camel(ty)),
        C::UnsetPreferredLocation | C::EnableReadDuplication | C::DisableReadDuplication => {
            uvm_layout!(uvm::RangeParams, CStruct::camel(ty).renamed(requested))
        }
        C::ValidateVaRange | C::CreateExternalRange => {
            uvm_layout!(uvm::RangeParams, CStruct::camel(ty))
        }
        C::SetAccessedBy | C::UnsetAccessedBy => uvm_layout!(
            uvm::RangeGpuParams,
            CStruct::camel(ty).renamed(&[("base", "requestedBase"), ("uuid", "accessedByUuid")])
        ),
        C::CreateRangeGroup | C::DestroyRangeGroup => {
            uvm_layout!(uvm::RangeGroupParams, CStruct::camel(ty))
        }
        C::SetRangeGroup => uvm_layout!(uvm::SetRangeGroupParams, CStruct::camel(ty)),
        C::MigrateRangeGroup => uvm_layout!(uvm::MigrateRangeGroupParams, CStruct::camel(ty)),
        C::ToolsReadProcessMemory => uvm_layout!(
            uvm::ToolsProcessMemoryParams,
            CStruct::camel(ty).renamed(&[("bytes_done", "bytesRead")])
        ),
        C::ToolsWriteProcessMemory => uvm_layout!(
            uvm::ToolsProcessMemoryParams,
            CStruct::camel(ty).renamed(&[("bytes_done", "bytesWritten")])
        ),
        C::UnmapExternal | C::MapDynamicParallelismRegion => uvm_layout!(
            uvm::RangeGpuParams,
            CStruct::camel(ty).renamed(&[("uuid", "gpuUuid")])
        ),
        C::Migrate => uvm_layout!(uvm::MigrateParams, CStruct::camel(ty)),
        C::AllocSemaphorePool => uvm_layout!(uvm::AllocSemaphorePoolParams, CStruct::camel(ty)),
    }
}

/// The UVM commands of release `rel` (its rows: numbers, block sizes,
/// status and fd offsets, layouts), and the UVM constants vgpu uses.
fn uvm_rows(t: &mut Table, rel: &release::Release) {
    use uvm::Command as C;
    for c in uvm::COMMANDS {
        let Some(row) = rel.uvm_row(c.number()) else {
            continue;
        };
        let (name, params) = uvm_c_name(c);
        t.konst(
            name,
            row.number.into(),
            &format!("uvm::Command::{c:?}.number"),
        );
        let Some(ty) = params else {
            assert_eq!(row.size, 0, "{c:?} has a block");
            continue;
        };
        t.konst(
            &format!("sizeof({ty})"),
            row.size as u64,
            &format!("uvm::Command::{c:?}.size"),
        );
        if let Some(off) = row.status_at {
            t.konst(
                &format!("offsetof({ty}, rmStatus)"),
                off as u64,
                &format!("uvm::Command::{c:?}.status_offset"),
            );
        }
        // The block's layout, field by field, where the project decodes it:
        // the release's own where its row lays the block out otherwise.
        let (Some(base), Some(fields)) = (uvm_base_layout(c, ty), row.fields) else {
            continue;
        };
        if (row.size, fields) == (base.size, base.fields) {
            t.layout(base.item, base.size, base.fields, base.c);
        } else {
            let item = format!("release::RELEASES[{}].uvm[{c:?}]", rel.name);
            t.layout(&item, row.size, fields, base.c);
        }
    }
    for (c, ty, field) in [
        (C::MmInitialize, "UVM_MM_INITIALIZE_PARAMS", "uvmFd"),
        (C::RegisterGpu, "UVM_REGISTER_GPU_PARAMS", "rmCtrlFd"),
    ] {
        let Some(row) = rel.uvm_row(c.number()) else {
            continue;
        };
        let off = row.fd_at.unwrap_or_else(|| panic!("{c:?} names no fd"));
        t.konst(
            &format!("offsetof({ty}, {field})"),
            off as u64,
            &format!("uvm::Command::{c:?}.embedded_fd"),
        );
    }
    layout!(
        t,
        uvm::GpuMappingAttributes,
        CStruct::camel("UvmGpuMappingAttributes")
    );
    t.konst(
        "UVM_MAX_GPUS",
        uvm::MAX_GPU_ATTRIBUTES as u64,
        "uvm::MAX_GPU_ATTRIBUTES",
    );
    consts!(t, "UVM_INIT_FLAGS_", init_flags: DISABLE_HMM, MULTI_PROCESS_SHARING_MODE);
    t.konst(
        "UVM_RANGE_GROUP_ID_NONE",
        uvm::RANGE_GROUP_NONE,
        "uvm::RANGE_GROUP_NONE",
    );
    // The project's single-field offsets of MAP_EXTERNAL_ALLOCATION's block
    // are its base layout's: where the release's row lays the block out
    // otherwise (535), the row's own layout above checks the same
    // expressions, and vgpu reads the fields where the row has them.
    let base_layout = rel
        .uvm_row(C::MapExternalAllocation.number())
        .is_some_and(|r| {
            (r.size, r.fields)
                == (
                    uvm::MapExternalAllocationParams::SIZE,
                    Some(uvm::MapExternalAllocationParams::FIELDS),
                )
        });
    let fields = [
        ("base", uvm::map_external::BASE),
        ("length", uvm::map_external::LENGTH),
        ("offset", uvm::map_external::OFFSET),
        ("perGpuAttributes", uvm::map_external::ATTRIBUTES),
        ("gpuAttributesCount", uvm::map_external::COUNT),
        ("hClient", uvm::map_external::H_CLIENT),
        ("hMemory", uvm::map_external::H_MEMORY),
    ];
    if base_layout {
        for (field, off) in fields {
            t.konst(
                &format!("offsetof(UVM_MAP_EXTERNAL_ALLOCATION_PARAMS, {field})"),
                off as u64,
                &format!("uvm::map_external::{field}"),
            );
        }
    }
    t.konst(
        "UVM_MIGRATE_FLAG_ASYNC",
        uvm::migrate_flags::ASYNC.into(),
        "uvm::migrate_flags::ASYNC",
    );
    t.konst(
        "sizeof(NvProcessorUuid)",
        core::mem::size_of::<uvm::Uuid>() as u64,
        "uvm::Uuid",
    );
    for (i, b) in uvm::CPU_UUID.iter().enumerate() {
        t.konst(
            &format!("NV_PROCESSOR_UUID_CPU_DEFAULT.uuid[{i}]"),
            (*b).into(),
            &format!("uvm::CPU_UUID[{i}]"),
        );
    }
}

/// The C type of the params of every row of the dispatch table that takes
/// params (`src/nv/table.rs`), by the row's name: its `sizeof` must be the
/// row's `params_size`. Classes: the alloc params type RM copies for the
/// class (`resource_list.h`); controls: the type RM's export table checks
/// `paramsSize` against (`src/nvidia/generated/g_*_nvoc.c`), or, for the
/// deprecated list forms RM converts (`rmapi_deprecated_control.c`), their
/// V1 params.
pub const DISPATCH_PARAMS: &[(&str, &str)] = &[
    ("NV01_ROOT", "NvHandle"),
    ("NV01_ROOT_NON_PRIV", "NvHandle"),
    ("NV01_MEMORY_SYSTEM", "NV_MEMORY_ALLOCATION_PARAMS"),
    ("NV01_MEMORY_LOCAL_USER", "NV_MEMORY_ALLOCATION_PARAMS"),
    ("NV01_ROOT_CLIENT", "NvHandle"),
    ("NV01_EVENT_OS_EVENT", "NV0005_ALLOC_PARAMETERS"),
    ("NV01_DEVICE_0", "NV0080_ALLOC_PARAMETERS"),
    ("RM_USER_SHARED_DATA", "NV00DE_ALLOC_PARAMETERS"),
    ("NV_MEMORY_FABRIC", "NV00F8_ALLOCATION_PARAMETERS"),
    ("NV_MEMORY_MULTICAST_FABRIC", "NV00FD_ALLOCATION_PARAMETERS"),
    ("NV20_SUBDEVICE_0", "NV2080_ALLOC_PARAMETERS"),
    ("NV2081_BINAPI", "NV2081_ALLOC_PARAMETERS"),
    ("NV50_P2P", "NV503B_ALLOC_PARAMETERS"),
    ("NV50_THIRD_PARTY_P2P", "NV503C_ALLOC_PARAMETERS"),
    ("NV50_MEMORY_VIRTUAL", "NV_MEMORY_ALLOCATION_PARAMS"),
    ("GT200_DEBUGGER", "NV83DE_ALLOC_PARAMETERS"),
    ("FERMI_CONTEXT_SHARE_A", "NV_CTXSHARE_ALLOCATION_PARAMETERS"),
    ("FERMI_VASPACE_A", "NV_VASPACE_ALLOCATION_PARAMETERS"),
    (
        "KEPLER_CHANNEL_GROUP_A",
        "NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS",
    ),
    ("TURING_CHANNEL_GPFIFO_A", "NV_CHANNEL_ALLOC_PARAMS"),
    ("AMPERE_CHANNEL_GPFIFO_A", "NV_CHANNEL_ALLOC_PARAMS"),
    ("TURING_DMA_COPY_A", "NVB0B5_ALLOCATION_PARAMETERS"),
    ("TURING_COMPUTE_A", "NV_GR_ALLOCATION_PARAMETERS"),
    ("HOPPER_USERMODE_A", "NV_HOPPER_USERMODE_A_PARAMS"),
    ("AMPERE_DMA_COPY_A", "NVB0B5_ALLOCATION_PARAMETERS"),
    ("AMPERE_COMPUTE_A", "NV_GR_ALLOCATION_PARAMETERS"),
    ("BLACKWELL_USERMODE_A", "NV_HOPPER_USERMODE_A_PARAMS"),
    ("AMPERE_DMA_COPY_B", "NVB0B5_ALLOCATION_PARAMETERS"),
    ("AMPERE_COMPUTE_B", "NV_GR_ALLOCATION_PARAMETERS"),
    ("HOPPER_CHANNEL_GPFIFO_A", "NV_CHANNEL_ALLOC_PARAMS"),
    ("HOPPER_DMA_COPY_A", "NVB0B5_ALLOCATION_PARAMETERS"),
    ("BLACKWELL_CHANNEL_GPFIFO_A", "NV_CHANNEL_ALLOC_PARAMS"),
    ("BLACKWELL_DMA_COPY_A", "NVB0B5_ALLOCATION_PARAMETERS"),
    ("ADA_COMPUTE_A", "NV_GR_ALLOCATION_PARAMETERS"),
    ("BLACKWELL_CHANNEL_GPFIFO_B", "NV_CHANNEL_ALLOC_PARAMS"),
    ("BLACKWELL_DMA_COPY_B", "NVB0B5_ALLOCATION_PARAMETERS"),
    (
        "NV_CONFIDENTIAL_COMPUTE",
        "NV_CONFIDENTIAL_COMPUTE_ALLOC_PARAMS",
    ),
    ("HOPPER_COMPUTE_A", "NV_GR_ALLOCATION_PARAMETERS"),
    ("BLACKWELL_COMPUTE_A", "NV_GR_ALLOCATION_PARAMETERS"),
    ("BLACKWELL_COMPUTE_B", "NV_GR_ALLOCATION_PARAMETERS"),
    (
        "NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION",
        "NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_PARAMS",
    ),
    (
        "NV0000_CTRL_CMD_SYSTEM_GET_CPU_INFO",
        "NV0000_CTRL_SYSTEM_GET_CPU_INFO_PARAMS",
    ),
    (
        "NV0000_CTRL_CMD_SYSTEM_GET_P2P_CAPS",
        "NV0000_CTRL_SYSTEM_GET_P2P_CAPS_PARAMS",
    ),
    (
        "NV0000_CTRL_CMD_SYSTEM_GET_P2P_CAPS_V2",
        "NV0000_CTRL_SYSTEM_GET_P2P_CAPS_V2_PARAMS",
    ),
    (
        "NV0000_CTRL_CMD_SYSTEM_GET_FABRIC_STATUS",
        "NV0000_CTRL_SYSTEM_GET_FABRIC_STATUS_PARAMS",
    ),
    (
        "NV0000_CTRL_CMD_SYSTEM_GET_P2P_CAPS_MATRIX",
        "NV0000_CTRL_SYSTEM_GET_P2P_CAPS_MATRIX_PARAMS",
    ),
    (
        "NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2",
        "NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS",
    ),
    (
        "NV0000_CTRL_CMD_SYSTEM_GET_FEATURES",
        "NV0000_CTRL_SYSTEM_GET_FEATURES_PARAMS",
    ),
    (
        "NV0000_CTRL_CMD_GPU_GET_ATTACHED_IDS",
        "NV0000_CTRL_GPU_GET_ATTACHED_IDS_PARAMS",
    ),
    (
        "NV0000_CTRL_CMD_GPU_GET_ID_INFO",
        "NV0000_CTRL_GPU_GET_ID_INFO_PARAMS",
    ),
    (
        "NV0000_CTRL_CMD_GPU_GET_DEVICE_IDS",
        "NV0000_CTRL_GPU_GET_DEVICE_IDS_PARAMS",
    ),
    (
        "NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2",
        "NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS",
    ),
    (
        "NV0000_CTRL_CMD_GPU_GET_PROBED_IDS",
        "NV0000_CTRL_GPU_GET_PROBED_IDS_PARAMS",
    ),
    (
        "NV0000_CTRL_CMD_GPU_ATTACH_IDS",
        "NV0000_CTRL_GPU_ATTACH_IDS_PARAMS",
    ),
    (
        "NV0000_CTRL_CMD_GPU_DETACH_IDS",
        "NV0000_CTRL_GPU_DETACH_IDS_PARAMS",
    ),
    (
        "NV0000_CTRL_CMD_GPU_GET_PCI_INFO",
        "NV0000_CTRL_GPU_GET_PCI_INFO_PARAMS",
    ),
    (
        "NV0000_CTRL_CMD_GPU_GET_UUID_FROM_GPU_ID",
        "NV0000_CTRL_GPU_GET_UUID_FROM_GPU_ID_PARAMS",
    ),
    (
        "NV0000_CTRL_CMD_GPU_QUERY_DRAIN_STATE",
        "NV0000_CTRL_GPU_QUERY_DRAIN_STATE_PARAMS",
    ),
    (
        "NV0000_CTRL_CMD_GPU_GET_MEMOP_ENABLE",
        "NV0000_CTRL_GPU_GET_MEMOP_ENABLE_PARAMS",
    ),
    (
        "NV0000_CTRL_CMD_GPU_GET_ACTIVE_DEVICE_IDS",
        "NV0000_CTRL_GPU_GET_ACTIVE_DEVICE_IDS_PARAMS",
    ),
    (
        "NV0000_CTRL_CMD_GPU_ASYNC_ATTACH_ID",
        "NV0000_CTRL_GPU_ASYNC_ATTACH_ID_PARAMS",
    ),
    (
        "NV0000_CTRL_CMD_GPU_WAIT_ATTACH_ID",
        "NV0000_CTRL_GPU_WAIT_ATTACH_ID_PARAMS",
    ),
    (
        "NV0000_CTRL_CMD_SYNC_GPU_BOOST_GROUP_INFO",
        "NV0000_SYNC_GPU_BOOST_GROUP_INFO_PARAMS",
    ),
    (
        "NV0000_CTRL_CMD_CLIENT_GET_ADDR_SPACE_TYPE",
        "NV0000_CTRL_CLIENT_GET_ADDR_SPACE_TYPE_PARAMS",
    ),
    (
        "NV0000_CTRL_CMD_CLIENT_SET_INHERITED_SHARE_POLICY",
        "NV0000_CTRL_CLIENT_SET_INHERITED_SHARE_POLICY_PARAMS",
    ),
    (
        "NV0000_CTRL_CMD_OS_UNIX_EXPORT_OBJECT_TO_FD",
        "NV0000_CTRL_OS_UNIX_EXPORT_OBJECT_TO_FD_PARAMS",
    ),
    (
        "NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECT_FROM_FD",
        "NV0000_CTRL_OS_UNIX_IMPORT_OBJECT_FROM_FD_PARAMS",
    ),
    (
        "NV0000_CTRL_CMD_OS_UNIX_GET_EXPORT_OBJECT_INFO",
        "NV0000_CTRL_OS_UNIX_GET_EXPORT_OBJECT_INFO_PARAMS",
    ),
    (
        "NV0000_CTRL_CMD_OS_UNIX_EXPORT_OBJECTS_TO_FD",
        "NV0000_CTRL_OS_UNIX_EXPORT_OBJECTS_TO_FD_PARAMS",
    ),
    (
        "NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECTS_FROM_FD",
        "NV0000_CTRL_OS_UNIX_IMPORT_OBJECTS_FROM_FD_PARAMS",
    ),
    (
        "NV0041_CTRL_CMD_GET_SURFACE_INFO",
        "NV0041_CTRL_GET_SURFACE_INFO_PARAMS",
    ),
    (
        "NV0080_CTRL_CMD_GPU_GET_CLASSLIST",
        "NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS",
    ),
    (
        "NV0080_CTRL_CMD_GPU_GET_NUM_SUBDEVICES",
        "NV0080_CTRL_GPU_GET_NUM_SUBDEVICES_PARAMS",
    ),
    (
        "NV0080_CTRL_CMD_GPU_QUERY_SW_STATE_PERSISTENCE",
        "NV0080_CTRL_GPU_QUERY_SW_STATE_PERSISTENCE_PARAMS",
    ),
    (
        "NV0080_CTRL_CMD_GPU_GET_VIRTUALIZATION_MODE",
        "NV0080_CTRL_GPU_GET_VIRTUALIZATION_MODE_PARAMS",
    ),
    (
        "NV0080_CTRL_CMD_GPU_GET_CLASSLIST_V2",
        "NV0080_CTRL_GPU_GET_CLASSLIST_V2_PARAMS",
    ),
    (
        "NV0080_CTRL_CMD_GR_SET_TPC_PARTITION_MODE",
        "NV0080_CTRL_GR_TPC_PARTITION_MODE_PARAMS",
    ),
    (
        "NV0080_CTRL_CMD_FB_GET_CAPS_V2",
        "NV0080_CTRL_FB_GET_CAPS_V2_PARAMS",
    ),
    (
        "NV0080_CTRL_CMD_HOST_GET_CAPS_V2",
        "NV0080_CTRL_HOST_GET_CAPS_V2_PARAMS",
    ),
    (
        "NV0080_CTRL_CMD_FIFO_GET_CHANNELLIST",
        "NV0080_CTRL_FIFO_GET_CHANNELLIST_PARAMS",
    ),
    (
        "NV0080_CTRL_CMD_DMA_ADV_SCHED_GET_VA_CAPS",
        "NV0080_CTRL_DMA_ADV_SCHED_GET_VA_CAPS_PARAMS",
    ),
    (
        "NV0080_CTRL_CMD_DMA_GET_CAPS",
        "NV0080_CTRL_DMA_GET_CAPS_PARAMS",
    ),
    (
        "NV0080_CTRL_CMD_PERF_CUDA_LIMIT_SET_CONTROL",
        "NV0080_CTRL_PERF_CUDA_LIMIT_CONTROL_PARAMS",
    ),
    (
        "NV00DE_CTRL_CMD_REQUEST_DATA_POLL",
        "NV00DE_CTRL_REQUEST_DATA_POLL_PARAMS",
    ),
    (
        "NV00F8_CTRL_CMD_ATTACH_MEM",
        "NV00F8_CTRL_ATTACH_MEM_PARAMS",
    ),
    ("NV00FD_CTRL_CMD_GET_INFO", "NV00FD_CTRL_GET_INFO_PARAMS"),
    (
        "NV00FD_CTRL_CMD_ATTACH_MEM",
        "NV00FD_CTRL_ATTACH_MEM_PARAMS",
    ),
    (
        "NV00FD_CTRL_CMD_ATTACH_GPU",
        "NV00FD_CTRL_ATTACH_GPU_PARAMS",
    ),
    (
        "NV00FD_CTRL_CMD_DETACH_MEM",
        "NV00FD_CTRL_DETACH_MEM_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_GPU_GET_INFO_V2",
        "NV2080_CTRL_GPU_GET_INFO_V2_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_GPU_GET_NAME_STRING",
        "NV2080_CTRL_GPU_GET_NAME_STRING_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_GPU_GET_SHORT_NAME_STRING",
        "NV2080_CTRL_GPU_GET_SHORT_NAME_STRING_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_GPU_GET_SIMULATION_INFO",
        "NV2080_CTRL_GPU_GET_SIMULATION_INFO_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_GPU_QUERY_ECC_STATUS",
        "NV2080_CTRL_GPU_QUERY_ECC_STATUS_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_GPU_QUERY_COMPUTE_MODE_RULES",
        "NV2080_CTRL_GPU_QUERY_COMPUTE_MODE_RULES_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_GPU_QUERY_ECC_CONFIGURATION",
        "NV2080_CTRL_GPU_QUERY_ECC_CONFIGURATION_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_GPU_GET_OEM_BOARD_INFO",
        "NV2080_CTRL_GPU_GET_OEM_BOARD_INFO_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_GPU_GET_ID",
        "NV2080_CTRL_GPU_GET_ID_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_GPU_GET_GID_INFO",
        "NV2080_CTRL_GPU_GET_GID_INFO_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_GPU_GET_INFOROM_OBJECT_VERSION",
        "NV2080_CTRL_GPU_GET_INFOROM_OBJECT_VERSION_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_GPU_GET_INFOROM_IMAGE_VERSION",
        "NV2080_CTRL_GPU_GET_INFOROM_IMAGE_VERSION_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_GPU_GET_ENGINES_V2",
        "NV2080_CTRL_GPU_GET_ENGINES_V2_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_GPU_GET_ACTIVE_PARTITION_IDS",
        "NV2080_CTRL_GPU_GET_ACTIVE_PARTITION_IDS_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_GPU_GET_PIDS",
        "NV2080_CTRL_GPU_GET_PIDS_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_GPU_GET_PID_INFO",
        "NV2080_CTRL_GPU_GET_PID_INFO_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_GPU_SET_COMPUTE_POLICY_CONFIG",
        "NV2080_CTRL_GPU_SET_COMPUTE_POLICY_CONFIG_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_GPU_GET_COMPUTE_POLICY_CONFIG",
        "NV2080_CTRL_GPU_GET_COMPUTE_POLICY_CONFIG_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_GPU_GET_SKYLINE_INFO",
        "NV2080_CTRL_GPU_GET_SKYLINE_INFO_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_GET_GPU_FABRIC_PROBE_INFO",
        "NV2080_CTRL_CMD_GET_GPU_FABRIC_PROBE_INFO_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_EVENT_SET_NOTIFICATION",
        "NV2080_CTRL_EVENT_SET_NOTIFICATION_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_TIMER_GET_TIME",
        "NV2080_CTRL_TIMER_GET_TIME_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_TIMER_GET_GPU_CPU_TIME_CORRELATION_INFO",
        "NV2080_CTRL_TIMER_GET_GPU_CPU_TIME_CORRELATION_INFO_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_TIMER_SET_GR_TICK_FREQ",
        "NV2080_CTRL_CMD_TIMER_SET_GR_TICK_FREQ_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_THERMAL_SYSTEM_EXECUTE_V2",
        "NV2080_CTRL_THERMAL_SYSTEM_EXECUTE_V2_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_BIOS_GET_INFO",
        "NV2080_CTRL_BIOS_GET_INFO_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS",
        "NV2080_CTRL_FIFO_DISABLE_CHANNELS_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_GR_GET_INFO",
        "NV2080_CTRL_GR_GET_INFO_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_GR_SET_CTXSW_PREEMPTION_MODE",
        "NV2080_CTRL_GR_SET_CTXSW_PREEMPTION_MODE_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_GR_GET_CTX_BUFFER_SIZE",
        "NV2080_CTRL_GR_GET_CTX_BUFFER_SIZE_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_GR_GET_GLOBAL_SM_ORDER",
        "NV2080_CTRL_GR_GET_GLOBAL_SM_ORDER_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_GR_GET_CAPS_V2",
        "NV2080_CTRL_GR_GET_CAPS_V2_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_GR_GET_GPC_MASK",
        "NV2080_CTRL_GR_GET_GPC_MASK_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_GR_GET_TPC_MASK",
        "NV2080_CTRL_GR_GET_TPC_MASK_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_GR_GET_SM_ISSUE_RATE_MODIFIER",
        "NV2080_CTRL_GR_GET_SM_ISSUE_RATE_MODIFIER_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_GR_GET_SM_ISSUE_RATE_MODIFIER_V2",
        "NV2080_CTRL_GR_GET_SM_ISSUE_RATE_MODIFIER_V2_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_FB_GET_INFO",
        "NV2080_CTRL_FB_GET_INFO_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_FB_GET_INFO_V2",
        "NV2080_CTRL_FB_GET_INFO_V2_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_FB_GET_FB_REGION_INFO",
        "NV2080_CTRL_CMD_FB_GET_FB_REGION_INFO_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_FB_QUERY_DRAM_ENCRYPTION_INFOROM_SUPPORT",
        "NV2080_CTRL_FB_DRAM_ENCRYPTION_INFOROM_SUPPORT_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_FB_QUERY_DRAM_ENCRYPTION_STATUS",
        "NV2080_CTRL_FB_QUERY_DRAM_ENCRYPTION_STATUS_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_MC_GET_ARCH_INFO",
        "NV2080_CTRL_MC_GET_ARCH_INFO_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_MC_SERVICE_INTERRUPTS",
        "NV2080_CTRL_MC_SERVICE_INTERRUPTS_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_BUS_GET_PCI_INFO",
        "NV2080_CTRL_BUS_GET_PCI_INFO_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_BUS_GET_INFO",
        "NV2080_CTRL_BUS_GET_INFO_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_BUS_GET_PCI_BAR_INFO",
        "NV2080_CTRL_BUS_GET_PCI_BAR_INFO_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_BUS_GET_INFO_V2",
        "NV2080_CTRL_BUS_GET_INFO_V2_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_BUS_GET_PCIE_SUPPORTED_GPU_ATOMICS",
        "NV2080_CTRL_CMD_BUS_GET_PCIE_SUPPORTED_GPU_ATOMICS_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_BUS_GET_C2C_INFO",
        "NV2080_CTRL_CMD_BUS_GET_C2C_INFO_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_PERF_BOOST",
        "NV2080_CTRL_PERF_BOOST_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_PERF_GET_CURRENT_PSTATE",
        "NV2080_CTRL_PERF_GET_CURRENT_PSTATE_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2",
        "NV2080_CTRL_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_RC_GET_WATCHDOG_INFO",
        "NV2080_CTRL_RC_GET_WATCHDOG_INFO_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_CE_GET_CAPS_V2",
        "NV2080_CTRL_CE_GET_CAPS_V2_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_CE_GET_ALL_CAPS",
        "NV2080_CTRL_CE_GET_ALL_CAPS_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_NVLINK_GET_NVLINK_CAPS",
        "NV2080_CTRL_CMD_NVLINK_GET_NVLINK_CAPS_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_NVLINK_GET_NVLINK_STATUS",
        "NV2080_CTRL_CMD_NVLINK_GET_NVLINK_STATUS_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_FLCN_GET_CTX_BUFFER_SIZE",
        "NV2080_CTRL_FLCN_GET_CTX_BUFFER_SIZE_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_GSP_GET_FEATURES",
        "NV2080_CTRL_GSP_GET_FEATURES_PARAMS",
    ),
    (
        "NV2080_CTRL_CMD_GRMGR_GET_GR_FS_INFO",
        "NV2080_CTRL_GRMGR_GET_GR_FS_INFO_PARAMS",
    ),
    (
        "NV208F_CTRL_CMD_GPU_VERIFY_INFOROM",
        "NV208F_CTRL_GPU_VERIFY_INFOROM_PARAMS",
    ),
    (
        "NV503C_CTRL_CMD_REGISTER_VA_SPACE",
        "NV503C_CTRL_REGISTER_VA_SPACE_PARAMS",
    ),
    (
        "NV503C_CTRL_CMD_REGISTER_VIDMEM",
        "NV503C_CTRL_REGISTER_VIDMEM_PARAMS",
    ),
    (
        "NV503C_CTRL_CMD_UNREGISTER_VIDMEM",
        "NV503C_CTRL_UNREGISTER_VIDMEM_PARAMS",
    ),
    (
        "NV83DE_CTRL_CMD_DEBUG_SET_MODE_MMU_DEBUG",
        "NV83DE_CTRL_DEBUG_SET_MODE_MMU_DEBUG_PARAMS",
    ),
    (
        "NV83DE_CTRL_CMD_DEBUG_SET_EXCEPTION_MASK",
        "NV83DE_CTRL_DEBUG_SET_EXCEPTION_MASK_PARAMS",
    ),
    (
        "NV83DE_CTRL_CMD_DEBUG_READ_ALL_SM_ERROR_STATES",
        "NV83DE_CTRL_DEBUG_READ_ALL_SM_ERROR_STATES_PARAMS",
    ),
    (
        "NV83DE_CTRL_CMD_DEBUG_CLEAR_ALL_SM_ERROR_STATES",
        "NV83DE_CTRL_DEBUG_CLEAR_ALL_SM_ERROR_STATES_PARAMS",
    ),
    (
        "NV83DE_CTRL_CMD_DEBUG_READ_MEMORY",
        "NV83DE_CTRL_DEBUG_READ_MEMORY_PARAMS",
    ),
    (
        "NV83DE_CTRL_CMD_DEBUG_SUSPEND_CONTEXT",
        "NV83DE_CTRL_CMD_DEBUG_SUSPEND_CONTEXT_PARAMS",
    ),
    (
        "NV83DE_CTRL_CMD_DEBUG_SET_MODE_ERRBAR_DEBUG",
        "NV83DE_CTRL_DEBUG_SET_MODE_ERRBAR_DEBUG_PARAMS",
    ),
    (
        "NV906F_CTRL_GET_CLASS_ENGINEID",
        "NV906F_CTRL_GET_CLASS_ENGINEID_PARAMS",
    ),
    (
        "NV906F_CTRL_CMD_RESET_CHANNEL",
        "NV906F_CTRL_CMD_RESET_CHANNEL_PARAMS",
    ),
    (
        "NV90E6_CTRL_CMD_MASTER_GET_VIRTUAL_FUNCTION_ERROR_CONT_INTR_MASK",
        "NV90E6_CTRL_MASTER_GET_VIRTUAL_FUNCTION_ERROR_CONT_INTR_MASK_PARAMS",
    ),
    (
        "NVA06C_CTRL_CMD_GPFIFO_SCHEDULE",
        "NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS",
    ),
    (
        "NVA06C_CTRL_CMD_SET_TIMESLICE",
        "NVA06C_CTRL_TIMESLICE_PARAMS",
    ),
    (
        "NVA06C_CTRL_CMD_GET_TIMESLICE",
        "NVA06C_CTRL_GET_TIMESLICE_PARAMS",
    ),
    ("NVA06C_CTRL_CMD_PREEMPT", "NVA06C_CTRL_PREEMPT_PARAMS"),
    ("NVA06C_CTRL_CMD_GET_INFO", "NVA06C_CTRL_GET_INFO_PARAMS"),
    (
        "NVA06C_CTRL_CMD_SET_INTERLEAVE_LEVEL",
        "NVA06C_CTRL_INTERLEAVE_LEVEL_PARAMS",
    ),
    (
        "NVA06C_CTRL_CMD_MAKE_REALTIME",
        "NVA06C_CTRL_MAKE_REALTIME_PARAMS",
    ),
    (
        "NVA06F_CTRL_CMD_GPFIFO_SCHEDULE",
        "NVA06F_CTRL_GPFIFO_SCHEDULE_PARAMS",
    ),
    (
        "NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN",
        "NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS",
    ),
    ("NVC56F_CTRL_CMD_GET_KMB", "NVC56F_CTRL_CMD_GET_KMB_PARAMS"),
    (
        "NV_CONF_COMPUTE_CTRL_CMD_SYSTEM_GET_CAPABILITIES",
        "NV_CONF_COMPUTE_CTRL_CMD_SYSTEM_GET_CAPABILITIES_PARAMS",
    ),
    (
        "NV_CONF_COMPUTE_CTRL_CMD_SYSTEM_GET_GPUS_STATE",
        "NV_CONF_COMPUTE_CTRL_CMD_SYSTEM_GET_GPUS_STATE_PARAMS",
    ),
    (
        "NV_CONF_COMPUTE_CTRL_CMD_GPU_GET_NUM_SECURE_CHANNELS",
        "NV_CONF_COMPUTE_CTRL_CMD_GPU_GET_NUM_SECURE_CHANNELS_PARAMS",
    ),
    (
        "NV_CONF_COMPUTE_CTRL_CMD_GPU_GET_KEY_ROTATION_STATE",
        "NV_CONF_COMPUTE_CTRL_CMD_GPU_GET_KEY_ROTATION_STATE_PARAMS",
    ),
];

/// The C expression for a dispatch-table row's number: its NVIDIA macro,
/// except for the three controls the open headers name no macro for. The
/// privileged SET_COMPUTE_POLICY_CONFIG is built from its params' message
/// id (as in [`constants`]); the two compute-mode reservation controls take
/// no params and have no message id in the headers, so only their
/// interface is checked here, their message ids (0x45, 0x46) coming from
/// RM's export table (`g_subdevice_nvoc.c:512,527` at 595.45.04).
pub fn dispatch_c_expr(name: &str) -> String {
    match name {
        "NV2080_CTRL_CMD_GPU_SET_COMPUTE_POLICY_CONFIG" => {
            "((NV2080_CTRL_CMD_GPU_GET_COMPUTE_POLICY_CONFIG & ~0xffU) | NV2080_CTRL_GPU_SET_COMPUTE_POLICY_CONFIG_PARAMS_MESSAGE_ID)".to_string()
        }
        "NV2080_CTRL_CMD_GPU_ACQUIRE_COMPUTE_MODE_RESERVATION" => {
            "((NV2080_CTRL_CMD_GPU_GET_INFO_V2 & ~0xffU) | 0x45U)".to_string()
        }
        "NV2080_CTRL_CMD_GPU_RELEASE_COMPUTE_MODE_RESERVATION" => {
            "((NV2080_CTRL_CMD_GPU_GET_INFO_V2 & ~0xffU) | 0x46U)".to_string()
        }
        _ => name.to_string(),
    }
}

/// The dispatch table of release `rel` (its classes and controls,
/// `src/nv/table.rs` patched by `src/nv/release.rs`): every row's number
/// by its NVIDIA name, and the params size of every row that takes params.
fn dispatch_table(t: &mut Table, rel: &release::Release) {
    let size_of = |name: &str| {
        DISPATCH_PARAMS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, ty)| format!("sizeof({ty})"))
    };
    for r in rel.classes {
        let item = format!("table::CLASSES[{}]", r.name);
        t.konst(
            &dispatch_c_expr(r.name),
            r.class.into(),
            &format!("{item}.class"),
        );
        if let Some(e) = size_of(r.name) {
            t.konst(&e, r.params_size.into(), &format!("{item}.params_size"));
        }
    }
    for r in rel.controls {
        let item = format!("table::CONTROLS[{}]", r.name);
        t.konst(
            &dispatch_c_expr(r.name),
            r.cmd.into(),
            &format!("{item}.cmd"),
        );
        if let Some(e) = size_of(r.name) {
            t.konst(&e, r.params_size.into(), &format!("{item}.params_size"));
        }
    }
}

/// The C program that prints every row's expression and its value, one
/// `expr<TAB>value` line each: compiled by `scripts/conformance.sh` against
/// a release's headers.
pub fn probe_source(t: &Table) -> String {
    let mut s = String::new();
    s.push_str("/* Generated by `cargo run -p vgpu-conformance --bin probe`: do not edit. */\n");
    s.push_str("#include <stddef.h>\n#include <stdio.h>\n");
    for h in HEADERS {
        let _ = writeln!(s, "#include \"{h}\"");
    }
    s.push_str("int main(void)\n{\n");
    let mut seen = std::collections::BTreeSet::new();
    let exprs = t
        .rows
        .iter()
        .map(|r| r.expr.as_str())
        .chain(t.absent.iter().map(|a| a.expr.as_str()));
    for e in exprs.filter(|e| seen.insert(*e)) {
        let _ = writeln!(
            s,
            "    printf(\"%s\\t%llu\\n\", \"{e}\", (unsigned long long)({e}));"
        );
    }
    s.push_str("    return 0;\n}\n");
    s
}

/// A facts file: `expr<TAB>value` lines; `#` starts a comment line. The
/// expressions the release lacks ([`ABSENT`]) are not in the map
/// ([`absent_facts`] lists them).
pub fn parse_facts(text: &str) -> Result<BTreeMap<String, u64>, String> {
    let mut m = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let (k, v) = line
            .split_once('\t')
            .ok_or_else(|| format!("line {}: no tab", i + 1))?;
        if v == ABSENT {
            continue;
        }
        let v: u64 = v
            .parse()
            .map_err(|_| format!("line {}: bad value {v:?}", i + 1))?;
        if m.insert(k.to_string(), v).is_some() {
            return Err(format!("line {}: {k} twice", i + 1));
        }
    }
    Ok(m)
}

/// The value a facts file gives an expression the release does not have
/// (the compiler rejected it: `scripts/probe-fit.py`).
pub const ABSENT: &str = "absent";

/// The expressions a facts file says the release does not have.
pub fn absent_facts(text: &str) -> std::collections::BTreeSet<String> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('\t'))
        .filter(|(_, v)| *v == ABSENT)
        .map(|(k, _)| k.to_string())
        .collect()
}

/// Every row whose value differs from the facts, or that the facts lack:
/// one message each (the rows only: [`compare_release`] also checks
/// [`Table::absent`]).
pub fn compare(t: &Table, facts: &BTreeMap<String, u64>) -> Vec<String> {
    t.rows
        .iter()
        .filter_map(|r| row_mismatch(r, facts))
        .collect()
}

/// Why row `r` does not hold against `facts`, if it does not.
fn row_mismatch(r: &Row, facts: &BTreeMap<String, u64>) -> Option<String> {
    match facts.get(&r.expr) {
        None => Some(format!(
            "{}: `{}` is not in the facts file (regenerate it with scripts/conformance.sh)",
            r.item, r.expr
        )),
        Some(&v) if v != r.value => Some(format!(
            "{}: the project says {} ({:#x}), NVIDIA's headers say `{}` = {} ({:#x})",
            r.item, r.value, r.value, r.expr, v, v
        )),
        Some(_) => None,
    }
}

/// The release the project's tables are for.
pub const RELEASE: &str = nv::RELEASE;

/// The newest release of each driver branch the conformance checker has a
/// facts file for, newest first. vgpu's tables are written for the first.
pub const RELEASES: &[&str] = &release::BRANCHES;

/// A `.where` file (`scripts/where-defined.py`): name -> `path:line`.
pub fn parse_where(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The macro or type expression `expr` is about (as
/// `scripts/where-defined.py` finds it).
pub fn subject(expr: &str) -> Option<&str> {
    fn ident(s: &str) -> Option<&str> {
        let end = s
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(s.len());
        s.get(..end).filter(|i| !i.is_empty())
    }
    if let Some(rest) = expr.strip_prefix("sizeof(((") {
        return ident(rest);
    }
    if let Some(rest) = expr
        .strip_prefix("sizeof(")
        .or_else(|| expr.strip_prefix("offsetof("))
    {
        return ident(rest);
    }
    ident(expr).filter(|i| i.len() == expr.len())
}

/// Where `release`'s facts differ from what the project's table says (its
/// table is written for [`RELEASE`]): one line per expression, Markdown,
/// with the project's value, the release's (or `absent`), and where the
/// name is defined in the release (in [`RELEASE`] if the release lacks
/// it). `text` is the release's facts file, `here` and `base` the `.where`
/// files of the release and of [`RELEASE`].
pub fn drift(
    t: &Table,
    text: &str,
    here: &BTreeMap<String, String>,
    base: &BTreeMap<String, String>,
) -> Result<Vec<String>, String> {
    let facts = parse_facts(text)?;
    let absent = absent_facts(text);
    let mut out = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for r in &t.rows {
        if !seen.insert(r.expr.clone()) {
            continue;
        }
        let (theirs, loc) = match facts.get(&r.expr) {
            Some(&v) if v == r.value => continue,
            Some(&v) => (v.to_string(), subject(&r.expr).and_then(|n| here.get(n))),
            None if absent.contains(&r.expr) => (
                ABSENT.to_string(),
                subject(&r.expr).and_then(|n| base.get(n)),
            ),
            None => return Err(format!("`{}` is not in the facts file", r.expr)),
        };
        let loc = loc.map_or_else(|| "-".to_string(), |l| format!("`{l}`"));
        out.push(format!(
            "| `{}` | {} | {} | {} |",
            r.expr, r.value, theirs, loc
        ));
    }
    Ok(out)
}

/// The generated part of `docs/driver-branches.md`: for every release of
/// [`RELEASES`] after the first, the rows of the project's table whose
/// value differs there. `file(release, ext)` gives a release's `.facts` or
/// `.where` file.
pub fn support_matrix(t: &Table, file: impl Fn(&str, &str) -> String) -> Result<String, String> {
    let mut s = String::new();
    let base = parse_where(&file(RELEASE, "where"));
    let checked = t
        .rows
        .iter()
        .map(|r| r.expr.as_str())
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    for rel in RELEASES.iter().skip(1) {
        let here = parse_where(&file(rel, "where"));
        let lines = drift(t, &file(rel, "facts"), &here, &base)?;
        s.push_str(&format!(
            "### {rel}\n\n{} of the {checked} expressions vgpu checks differ from {RELEASE}.\n\n",
            lines.len()
        ));
        if !lines.is_empty() {
            s.push_str(&format!(
                "| expression | {RELEASE} | {rel} | defined at ({rel}; {RELEASE} if absent) |\n|---|---|---|---|\n"
            ));
            for l in lines {
                s.push_str(&l);
                s.push('\n');
            }
            s.push('\n');
        }
    }
    Ok(s)
}
