// SPDX-License-Identifier: GPL-2.0

//! The dispatch table of RM classes and control commands: every class a
//! container may allocate (`hClass` of RM_ALLOC) and every control it may
//! send (`cmd` of RM_CONTROL), one row each, with what vgpu does with it.
//!
//! It also holds the rows of the two other families a container sends: the
//! frontend escapes of `/dev/nvidiactl` and `/dev/nvidiaN` ([`ESCAPES`]) and
//! the nvidia-uvm commands ([`UVM`]). Each of those rows names the handler
//! vgpu runs for it ([`EscapeHandler`], [`UvmHandler`]); the module's
//! dispatcher (`src/proxy.rs`, `src/uvm/mod.rs`) picks the handler from the
//! row and nothing else. Class and control rows are consulted by the
//! RM_ALLOC and RM_CONTROL handlers.
//!
//! core-only: this file uses nothing but `core`, contains no `unsafe` and
//! cannot panic.
//!
//! Rows. The rows are the classes and controls that gVisor's nvproxy admits
//! for its compute and utility capabilities at driver 590.48.01 (the table
//! its unsupported 595.71.05 inherits unchanged), plus the few that vgpu
//! already decides itself although nvproxy leaves them out (FB_GET_INFO V1,
//! SET_INTERLEAVE_LEVEL, and, as explicit denials, MAKE_REALTIME,
//! FB_GET_FB_REGION_INFO and SET_COMPUTE_POLICY_CONFIG), and
//! SYSTEM_GET_BUILD_VERSION_V2, which the real driver answers any client.
//! A number absent from the table is refused. Every row's number, and its params size where
//! it has params, is checked against NVIDIA's headers at 595.45.04 by the
//! conformance check (`userspace/conformance`); every admitted row is argued
//! in `docs/dispatch-table.md`, which also cites the sources of each row.
//!
//! `params_size` is the exact size RM checks for the row (controls: the
//! control's params, `paramsSize` must equal it; classes: the alloc params
//! RM copies, whatever `paramsSize` says), and 0 where the control or class
//! takes no params.
//!
//! Rows marked `TODO(table)` are admitted although vgpu does not yet do
//! everything they need (a rewrite, a check or a charge): denying them would
//! break a CUDA program or nvidia-smi. The docs say what each needs.

// An ABI table shared with the host crate: the same lint settings as
// `abi/`.
#![allow(dead_code, unreachable_pub)]

use super::abi::{self, class, ctrl, find_field, WireField};
use super::ioctl::{Escape, Node, SizeRule};
use super::uvm::{self as uvmabi, Command};

/// What vgpu does with a class or control a container sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Forwarded as the caller wrote it: vgpu reads only the RM_ALLOC or
    /// RM_CONTROL header.
    Forward,
    /// Forwarded from a copy vgpu checked (and, for fds, translated): the
    /// driver reads vgpu's copy, not the caller's memory.
    Bounce,
    /// Executed by vgpu itself on its own copy, through the driver's
    /// kernel-client interface, with accounting (devices, VRAM, TSGs,
    /// channels), or answered by vgpu from its own records (the process
    /// queries).
    Served,
    /// Forwarded or executed with vgpu changing the request or the answer
    /// (FB sizes, client handles, a tenant's scheduling calls).
    Rewritten,
    /// Refused: forwarding it would show a container another tenant's data
    /// or change another tenant's GPU state, and vgpu has no rewrite yet.
    Denied,
}

impl Policy {
    /// Whether a container may use the row (anything but [`Policy::Denied`]).
    pub const fn admits(self) -> bool {
        !matches!(self, Policy::Denied)
    }

    /// The policy's name, as `docs/dispatch-table.md` writes it.
    pub const fn name(self) -> &'static str {
        match self {
            Policy::Forward => "Forward",
            Policy::Bounce => "Bounce",
            Policy::Served => "Served",
            Policy::Rewritten => "Rewritten",
            Policy::Denied => "Denied",
        }
    }
}

/// The group a row belongs to, for the docs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// Clients and system-wide queries (`NV0000_*`).
    Client,
    /// Sharing objects between clients and processes (export/import by fd,
    /// share policy).
    Sharing,
    /// Devices and device-wide objects (`NV0080_*`).
    Device,
    /// A subdevice's static GPU information (`NV2080_CTRL_CMD_GPU_*` etc.).
    GpuInfo,
    /// Framebuffer, memory objects and address spaces.
    Memory,
    /// FIFO: TSGs, channels, doorbells, scheduling.
    Fifo,
    /// Engine objects (compute, copy) and their GR and CE queries.
    Engine,
    /// Events and notifications.
    Event,
    /// Performance, power, clocks, thermal and timers.
    Perf,
    /// PCI, NVLink, P2P, RDMA and fabric.
    Interconnect,
    /// Debuggers, diagnostics and the RC watchdog.
    Debugging,
    /// Confidential computing.
    Security,
}

impl Family {
    /// Every family, in the order the docs list them.
    pub const ALL: &'static [Family] = &[
        Family::Client,
        Family::Sharing,
        Family::Device,
        Family::GpuInfo,
        Family::Memory,
        Family::Fifo,
        Family::Engine,
        Family::Event,
        Family::Perf,
        Family::Interconnect,
        Family::Debugging,
        Family::Security,
    ];

    /// The heading the docs give the family.
    pub const fn title(self) -> &'static str {
        match self {
            Family::Client => "Clients and system queries",
            Family::Sharing => "Sharing between clients",
            Family::Device => "Devices",
            Family::GpuInfo => "Subdevice GPU information",
            Family::Memory => "FB and memory",
            Family::Fifo => "FIFO: TSGs, channels, doorbells",
            Family::Engine => "Engines: compute, copy, GR",
            Family::Event => "Events",
            Family::Perf => "Perf, power, clocks, timers",
            Family::Interconnect => "PCI, NVLink, P2P, fabric",
            Family::Debugging => "Debugging and diagnostics",
            Family::Security => "Confidential computing",
        }
    }
}

/// One RM class (`hClass` of RM_ALLOC).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClassRow {
    /// The class number.
    pub class: u32,
    /// NVIDIA's name for it (the macro in `class/clXXXX.h` or `nvos.h`).
    pub name: &'static str,
    /// Size of the alloc params RM copies for it; 0: it takes none.
    pub params_size: u32,
    /// What vgpu does with it.
    pub policy: Policy,
    /// Its group in the docs.
    pub family: Family,
    /// The status a refused allocation of it gets (its policy
    /// [`Policy::Denied`]): `NV_ERR_INVALID_CLASS`, as RM answers a class it
    /// does not have, unless the row says RM answers otherwise where the
    /// class is unavailable ([`unsupported`]).
    pub refusal: u32,
    /// The handler the RM_ALLOC handler runs for it.
    pub handler: ClassHandler,
}

/// What the RM_ALLOC handler runs for a class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClassHandler {
    /// Forwarded from vgpu's copy of the RM_ALLOC block.
    Forward,
    /// A client (a `Rewritten` row): forwarded under a handle vgpu picks
    /// when the caller lets RM pick, and recorded.
    Client,
    /// A device (`Served`): decided against the file's vGPUs, executed
    /// through the kernel-client interface.
    Device,
    /// A subdevice of one of the file's devices (`Served`).
    Subdevice,
    /// A TSG under one of the file's devices (`Served`): enrolled in the
    /// vGPU's schedule.
    Tsg,
    /// A GPFIFO channel under one of the file's devices or TSGs (`Served`).
    Channel,
    /// Memory (`Served`): VRAM charged to the vGPU's ceiling.
    Memory,
}

impl ClassHandler {
    /// Whether the handler fits a row of `policy`: clients are the
    /// `Rewritten` rows, the accounted kinds the `Served` ones, and every
    /// other row is forwarded (if admitted).
    pub const fn fits(self, policy: Policy) -> bool {
        match self {
            ClassHandler::Forward => !matches!(policy, Policy::Served | Policy::Rewritten),
            ClassHandler::Client => matches!(policy, Policy::Rewritten),
            _ => matches!(policy, Policy::Served),
        }
    }
}

/// One RM control command (`cmd` of RM_CONTROL).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ControlRow {
    /// The command number; its top 16 bits name the class or interface it
    /// is sent to.
    pub cmd: u32,
    /// NVIDIA's name for it (the `*_CTRL_CMD_*` macro).
    pub name: &'static str,
    /// The exact `paramsSize` RM accepts; 0: it takes no params.
    pub params_size: u32,
    /// What vgpu does with it.
    pub policy: Policy,
    /// Its group in the docs.
    pub family: Family,
    /// The handler the RM_CONTROL handler runs for it.
    pub handler: ControlHandler,
    /// The status a refused control of it gets (its policy
    /// [`Policy::Denied`]): `NV_ERR_NOT_SUPPORTED`, as RM answers a command
    /// it does not have, unless the row says otherwise ([`refused_with`]).
    pub refusal: u32,
}

/// What the RM_CONTROL handler runs for a control.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ControlHandler {
    /// Forwarded from vgpu's copy of the RM_CONTROL block (inside the
    /// caller's compute window), or refused by default deny.
    Forward,
    /// FB_GET_INFO (V1, V2): run on kernel copies, sizes rewritten to the
    /// vGPU.
    FbInfo,
    /// A tenant's GPFIFO_SCHEDULE of one of its TSGs: decided against the
    /// vGPU's schedule and executed on kernel copies.
    TsgSchedule,
    /// A tenant's GPFIFO_SCHEDULE of one of its channels, as
    /// [`ControlHandler::TsgSchedule`].
    ChannelSchedule,
    /// A tenant's FIFO_DISABLE_CHANNELS of its own channels and TSGs:
    /// decided against the vGPU's schedule, executed on kernel copies.
    DisableChannels,
    /// SET_TIMESLICE on one of the tenant's TSGs, executed on kernel copies
    /// (it orders that vGPU's work inside its own window).
    Timeslice,
    /// SET_INTERLEAVE_LEVEL on one of the tenant's TSGs, as
    /// [`ControlHandler::Timeslice`].
    InterleaveLevel,
    /// A query of the GPU's fixed description, on the caller's own device or
    /// subdevice: run on kernel copies through the kernel interface (no
    /// bounce slot, no compute window), the answer copied back. Only for
    /// controls RM marks non-privileged, whose params hold no pointer RM
    /// follows and fit in [`KERNEL_PARAMS_MAX`] (the facts tests check all
    /// three), and whose implementation decides nothing on the caller's
    /// privilege (`docs/dispatch-table.md` argues each).
    Kernel,
    /// GPU_GET_ATTACHED_IDS on one of the caller's clients: run on kernel
    /// copies through the kernel interface, the list cut to the GPUs the
    /// caller has a vGPU on (as CARD_INFO is), so the host's other GPUs'
    /// ids never reach the caller's memory (`src/rm/control.rs`).
    GpuIds,
    /// GPU_GET_PIDS and GPU_GET_PID_INFO on the caller's own subdevice:
    /// answered by vgpu from the vGPU's list of processes (the container's
    /// own, numbered in the caller's PID namespace, with the bytes its
    /// ledger charged them); never forwarded (`src/rm/processes.rs`).
    Processes,
}

/// The largest params block a [`ControlHandler::Kernel`] control may have:
/// the handler copies it onto its stack.
pub const KERNEL_PARAMS_MAX: usize = 1024;

use Family as F;
use Policy as P;

/// A class row (keeps the table one line a row).
const fn cl(
    class: u32,
    name: &'static str,
    params_size: u32,
    policy: Policy,
    family: Family,
) -> ClassRow {
    ClassRow {
        class,
        name,
        params_size,
        policy,
        family,
        refusal: abi::status::NV_ERR_INVALID_CLASS,
        handler: match policy {
            Policy::Rewritten => ClassHandler::Client,
            _ => ClassHandler::Forward,
        },
    }
}

/// A class row with its own handler (a `Served` class: what it is).
const fn clh(handler: ClassHandler, row: ClassRow) -> ClassRow {
    ClassRow { handler, ..row }
}

/// A class row denied with `NV_ERR_NOT_SUPPORTED`: what RM itself answers
/// where the class is not offered, so that userspace takes the path it
/// takes on such a GPU.
const fn unsupported(row: ClassRow) -> ClassRow {
    ClassRow {
        policy: Policy::Denied,
        refusal: abi::status::NV_ERR_NOT_SUPPORTED,
        ..row
    }
}

/// A control row.
const fn ct(
    cmd: u32,
    name: &'static str,
    params_size: u32,
    policy: Policy,
    family: Family,
) -> ControlRow {
    ControlRow {
        cmd,
        name,
        params_size,
        policy,
        family,
        handler: ControlHandler::Forward,
        refusal: abi::status::NV_ERR_NOT_SUPPORTED,
    }
}

/// A denied control row refused with `status`, not `NV_ERR_NOT_SUPPORTED`.
const fn refused_with(status: u32, row: ControlRow) -> ControlRow {
    ControlRow {
        refusal: status,
        ..row
    }
}

/// A control row with its own handler.
const fn cth(
    cmd: u32,
    name: &'static str,
    params_size: u32,
    policy: Policy,
    family: Family,
    handler: ControlHandler,
) -> ControlRow {
    ControlRow {
        handler,
        ..ct(cmd, name, params_size, policy, family)
    }
}

use ClassHandler as K;
use ControlHandler as C;

/// Every class a container may name, by number. Sources per row in
/// `docs/dispatch-table.md`.
#[rustfmt::skip]
pub const CLASSES: &[ClassRow] = &CLASS_ROWS;

/// [`CLASSES`] as an array, so that a release's table can be a patched
/// copy of it (`nv::release`).
#[rustfmt::skip]
pub(crate) const CLASS_ROWS: [ClassRow; 45] = [
    cl(class::NV01_ROOT, "NV01_ROOT", 4, P::Rewritten, F::Client),
    cl(class::NV01_ROOT_NON_PRIV, "NV01_ROOT_NON_PRIV", 4, P::Rewritten, F::Client),
    cl(class::NV01_MEMORY_SYSTEM, "NV01_MEMORY_SYSTEM", 128, P::Forward, F::Memory),
    clh(K::Memory, cl(class::NV01_MEMORY_LOCAL_USER, "NV01_MEMORY_LOCAL_USER", 128, P::Served, F::Memory)),
    cl(class::NV01_ROOT_CLIENT, "NV01_ROOT_CLIENT", 4, P::Rewritten, F::Client),
    // TODO(table): check that hParentClient is one of this container's clients and translate
    //   the fd; today forwarded unchecked.
    cl(class::NV01_EVENT_OS_EVENT, "NV01_EVENT_OS_EVENT", 24, P::Bounce, F::Event),
    clh(K::Device, cl(class::NV01_DEVICE_0, "NV01_DEVICE_0", 56, P::Served, F::Device)),
    // The page shows the GPU's total and free VRAM, i.e. other tenants' use, and from 590 their
    //   per-process utilisation, with no ioctl when it is read: refused as RM refuses it on
    //   vGPU guests and under CPU confidential computing (`docs/dispatch-table.md`). 535's
    //   page has neither: admitted there (`nv::release`).
    unsupported(cl(abi::rusd::CLASS, "RM_USER_SHARED_DATA", 8, P::Denied, F::Perf)),
    // TODO(table): charge allocSize to the ceiling like NV01_MEMORY_LOCAL_USER, then Served
    //   (needed by fabric handles and NCCL NVLS on NVSwitch systems).
    cl(class::NV_MEMORY_FABRIC, "NV_MEMORY_FABRIC", 48, P::Denied, F::Interconnect),
    // TODO(table): allow with NV_MEMORY_FABRIC, translating the fd of ATTACH_GPU.
    cl(0x00fd, "NV_MEMORY_MULTICAST_FABRIC", 80, P::Denied, F::Interconnect),
    clh(K::Subdevice, cl(class::NV20_SUBDEVICE_0, "NV20_SUBDEVICE_0", 4, P::Served, F::Device)),
    cl(0x2081, "NV2081_BINAPI", 4, P::Forward, F::Device),
    cl(0x208f, "NV20_SUBDEVICE_DIAG", 0, P::Forward, F::Debugging),
    cl(0x503b, "NV50_P2P", 88, P::Forward, F::Interconnect),
    cl(0x503c, "NV50_THIRD_PARTY_P2P", 4, P::Forward, F::Interconnect),
    // TODO(table): charge page-table VRAM (not charged today).
    cl(class::NV50_MEMORY_VIRTUAL, "NV50_MEMORY_VIRTUAL", 128, P::Forward, F::Memory),
    // TODO(table): check that hAppClient is 0 or one of this container's clients; today
    //   forwarded unchecked.
    cl(0x83de, "GT200_DEBUGGER", 12, P::Bounce, F::Debugging),
    cl(0x900e, "MPS_COMPUTE", 0, P::Forward, F::Device),
    // TODO(table): charge its RM-internal VRAM (not charged today).
    cl(class::FERMI_CONTEXT_SHARE_A, "FERMI_CONTEXT_SHARE_A", 12, P::Forward, F::Fifo),
    cl(0x90e6, "GF100_SUBDEVICE_MASTER", 0, P::Forward, F::Device),
    // TODO(table): charge page-table VRAM (not charged today).
    cl(class::FERMI_VASPACE_A, "FERMI_VASPACE_A", 56, P::Forward, F::Memory),
    clh(K::Tsg, cl(class::KEPLER_CHANNEL_GROUP_A, "KEPLER_CHANNEL_GROUP_A", 20, P::Served, F::Fifo)),
    cl(class::TURING_USERMODE_A, "TURING_USERMODE_A", 0, P::Forward, F::Fifo),
    clh(K::Channel, cl(class::TURING_CHANNEL_GPFIFO_A, "TURING_CHANNEL_GPFIFO_A", 368, P::Served, F::Fifo)),
    clh(K::Channel, cl(class::AMPERE_CHANNEL_GPFIFO_A, "AMPERE_CHANNEL_GPFIFO_A", 368, P::Served, F::Fifo)),
    cl(0xc5b5, "TURING_DMA_COPY_A", 8, P::Forward, F::Engine),
    cl(0xc5c0, "TURING_COMPUTE_A", 16, P::Forward, F::Engine),
    cl(class::HOPPER_USERMODE_A, "HOPPER_USERMODE_A", 2, P::Forward, F::Fifo),
    cl(class::AMPERE_DMA_COPY_A, "AMPERE_DMA_COPY_A", 8, P::Forward, F::Engine),
    cl(class::AMPERE_COMPUTE_A, "AMPERE_COMPUTE_A", 16, P::Forward, F::Engine),
    cl(class::BLACKWELL_USERMODE_A, "BLACKWELL_USERMODE_A", 2, P::Forward, F::Fifo),
    cl(class::AMPERE_DMA_COPY_B, "AMPERE_DMA_COPY_B", 8, P::Forward, F::Engine),
    cl(class::AMPERE_COMPUTE_B, "AMPERE_COMPUTE_B", 16, P::Forward, F::Engine),
    clh(K::Channel, cl(class::HOPPER_CHANNEL_GPFIFO_A, "HOPPER_CHANNEL_GPFIFO_A", 368, P::Served, F::Fifo)),
    cl(class::HOPPER_DMA_COPY_A, "HOPPER_DMA_COPY_A", 8, P::Forward, F::Engine),
    clh(K::Channel, cl(class::BLACKWELL_CHANNEL_GPFIFO_A, "BLACKWELL_CHANNEL_GPFIFO_A", 368, P::Served, F::Fifo)),
    cl(0xc9b5, "BLACKWELL_DMA_COPY_A", 8, P::Forward, F::Engine),
    cl(class::ADA_COMPUTE_A, "ADA_COMPUTE_A", 16, P::Forward, F::Engine),
    clh(K::Channel, cl(class::BLACKWELL_CHANNEL_GPFIFO_B, "BLACKWELL_CHANNEL_GPFIFO_B", 368, P::Served, F::Fifo)),
    cl(0xcab5, "BLACKWELL_DMA_COPY_B", 8, P::Forward, F::Engine),
    cl(0xcb33, "NV_CONFIDENTIAL_COMPUTE", 4, P::Forward, F::Security),
    cl(0xcba2, "HOPPER_SEC2_WORK_LAUNCH_A", 0, P::Forward, F::Security),
    cl(class::HOPPER_COMPUTE_A, "HOPPER_COMPUTE_A", 16, P::Forward, F::Engine),
    cl(0xcdc0, "BLACKWELL_COMPUTE_A", 16, P::Forward, F::Engine),
    cl(0xcec0, "BLACKWELL_COMPUTE_B", 16, P::Forward, F::Engine),
];

// Each class row's handler fits its policy: clients rewritten, accounted
// kinds served, the rest forwarded.
const _: () = {
    let mut i = 0;
    while i < CLASS_ROWS.len() {
        assert!(CLASS_ROWS[i].handler.fits(CLASS_ROWS[i].policy));
        i += 1;
    }
};

/// Every control a container may send, by number. Sources per row in
/// `docs/dispatch-table.md`.
#[rustfmt::skip]
pub const CONTROLS: &[ControlRow] = &CONTROL_ROWS;

/// [`CONTROLS`] as an array, so that a release's table can be a patched
/// copy of it (`nv::release`).
#[rustfmt::skip]
pub(crate) const CONTROL_ROWS: [ControlRow; 143] = [
    ct(ctrl::NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION, "NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION", 40, P::Forward, F::Client),
    ct(ctrl::NV0000_CTRL_CMD_SYSTEM_GET_CPU_INFO, "NV0000_CTRL_CMD_SYSTEM_GET_CPU_INFO", 108, P::Forward, F::Client),
    // TODO(table): answer only for the container's GPUs.
    ct(0x0000_0127, "NV0000_CTRL_CMD_SYSTEM_GET_P2P_CAPS", 176, P::Forward, F::Interconnect),
    // TODO(table): answer only for the container's GPUs.
    ct(0x0000_012b, "NV0000_CTRL_CMD_SYSTEM_GET_P2P_CAPS_V2", 8348, P::Forward, F::Interconnect),
    ct(0x0000_0136, "NV0000_CTRL_CMD_SYSTEM_GET_FABRIC_STATUS", 4, P::Forward, F::Interconnect),
    // TODO(table): answer only for the container's GPUs.
    ct(0x0000_013a, "NV0000_CTRL_CMD_SYSTEM_GET_P2P_CAPS_MATRIX", 1352, P::Forward, F::Interconnect),
    ct(ctrl::NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2, "NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2", 1032, P::Forward, F::Client),
    ct(0x0000_01f0, "NV0000_CTRL_CMD_SYSTEM_GET_FEATURES", 4, P::Forward, F::Client),
    cth(ctrl::NV0000_CTRL_CMD_GPU_GET_ATTACHED_IDS, "NV0000_CTRL_CMD_GPU_GET_ATTACHED_IDS", 128, P::Rewritten, F::Client, C::GpuIds),
    // TODO(table): answer only for the container's GPUs.
    ct(ctrl::NV0000_CTRL_CMD_GPU_GET_ID_INFO, "NV0000_CTRL_CMD_GPU_GET_ID_INFO", 40, P::Forward, F::Client),
    // TODO(table): list only the container's GPUs.
    ct(0x0000_0204, "NV0000_CTRL_CMD_GPU_GET_DEVICE_IDS", 4, P::Forward, F::Client),
    // TODO(table): answer only for the container's GPUs.
    ct(ctrl::NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2, "NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2", 32, P::Forward, F::Client),
    // TODO(table): list only the container's GPUs.
    ct(ctrl::NV0000_CTRL_CMD_GPU_GET_PROBED_IDS, "NV0000_CTRL_CMD_GPU_GET_PROBED_IDS", 384, P::Forward, F::Client),
    // TODO(table): check that every id is a GPU of the container's vGPUs; today forwarded
    //   unchecked.
    ct(0x0000_0215, "NV0000_CTRL_CMD_GPU_ATTACH_IDS", 132, P::Bounce, F::Client),
    // TODO(table): check that every id is a GPU of the container's vGPUs.
    ct(0x0000_0216, "NV0000_CTRL_CMD_GPU_DETACH_IDS", 128, P::Bounce, F::Client),
    ct(0x0000_021b, "NV0000_CTRL_CMD_GPU_GET_PCI_INFO", 12, P::Forward, F::Client),
    // TODO(table): answer only for the container's GPUs.
    ct(0x0000_0275, "NV0000_CTRL_CMD_GPU_GET_UUID_FROM_GPU_ID", 268, P::Forward, F::Client),
    ct(0x0000_0279, "NV0000_CTRL_CMD_GPU_QUERY_DRAIN_STATE", 12, P::Forward, F::Client),
    ct(0x0000_027b, "NV0000_CTRL_CMD_GPU_GET_MEMOP_ENABLE", 4, P::Forward, F::Client),
    // TODO(table): list only the container's GPUs.
    ct(0x0000_0288, "NV0000_CTRL_CMD_GPU_GET_ACTIVE_DEVICE_IDS", 3076, P::Forward, F::Client),
    // TODO(table): check that the id is a GPU of the container's vGPUs.
    ct(0x0000_0289, "NV0000_CTRL_CMD_GPU_ASYNC_ATTACH_ID", 4, P::Bounce, F::Client),
    // TODO(table): check that the id is a GPU of the container's vGPUs.
    ct(0x0000_0290, "NV0000_CTRL_CMD_GPU_WAIT_ATTACH_ID", 4, P::Bounce, F::Client),
    ct(0x0000_0a04, "NV0000_CTRL_CMD_SYNC_GPU_BOOST_GROUP_INFO", 2244, P::Forward, F::Perf),
    ct(0x0000_0d01, "NV0000_CTRL_CMD_CLIENT_GET_ADDR_SPACE_TYPE", 12, P::Forward, F::Memory),
    ct(0x0000_0d04, "NV0000_CTRL_CMD_CLIENT_SET_INHERITED_SHARE_POLICY", 12, P::Forward, F::Sharing),
    // TODO(table): translate the proxy fd to the real file; today a proxy fd fails in the
    //   driver.
    ct(0x0000_3d05, "NV0000_CTRL_CMD_OS_UNIX_EXPORT_OBJECT_TO_FD", 24, P::Bounce, F::Sharing),
    // TODO(table): translate the fd and refuse an export made by another container, charging
    //   imports as DUPs are.
    ct(0x0000_3d06, "NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECT_FROM_FD", 20, P::Bounce, F::Sharing),
    // TODO(table): translate the fd.
    ct(0x0000_3d08, "NV0000_CTRL_CMD_OS_UNIX_GET_EXPORT_OBJECT_INFO", 80, P::Bounce, F::Sharing),
    // TODO(table): translate the fd.
    ct(0x0000_3d0b, "NV0000_CTRL_CMD_OS_UNIX_EXPORT_OBJECTS_TO_FD", 2128, P::Bounce, F::Sharing),
    // TODO(table): translate the fd and refuse another container's export, charging as DUPs
    //   are.
    ct(0x0000_3d0c, "NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECTS_FROM_FD", 652, P::Bounce, F::Sharing),
    ct(ctrl::NV0041_CTRL_CMD_GET_SURFACE_INFO, "NV0041_CTRL_CMD_GET_SURFACE_INFO", 16, P::Forward, F::Memory),
    ct(0x0080_0201, "NV0080_CTRL_CMD_GPU_GET_CLASSLIST", 16, P::Forward, F::Device),
    cth(0x0080_0280, "NV0080_CTRL_CMD_GPU_GET_NUM_SUBDEVICES", 4, P::Forward, F::Device, C::Kernel),
    ct(0x0080_0288, "NV0080_CTRL_CMD_GPU_QUERY_SW_STATE_PERSISTENCE", 4, P::Forward, F::Device),
    cth(0x0080_0289, "NV0080_CTRL_CMD_GPU_GET_VIRTUALIZATION_MODE", 8, P::Forward, F::Device, C::Kernel),
    cth(ctrl::NV0080_CTRL_CMD_GPU_GET_CLASSLIST_V2, "NV0080_CTRL_CMD_GPU_GET_CLASSLIST_V2", 804, P::Forward, F::Device, C::Kernel),
    // TODO(table): verify on hardware that it cannot change another tenant's TPC partition.
    ct(0x0080_1108, "NV0080_CTRL_CMD_GR_SET_TPC_PARTITION_MODE", 32, P::Forward, F::Engine),
    cth(0x0080_1307, "NV0080_CTRL_CMD_FB_GET_CAPS_V2", 3, P::Forward, F::Memory, C::Kernel),
    cth(0x0080_1402, "NV0080_CTRL_CMD_HOST_GET_CAPS_V2", 3, P::Forward, F::Fifo, C::Kernel),
    ct(0x0080_170d, "NV0080_CTRL_CMD_FIFO_GET_CHANNELLIST", 24, P::Forward, F::Fifo),
    ct(0x0080_1806, "NV0080_CTRL_CMD_DMA_ADV_SCHED_GET_VA_CAPS", 192, P::Forward, F::Memory),
    cth(0x0080_180d, "NV0080_CTRL_CMD_DMA_GET_CAPS", 12, P::Forward, F::Memory, C::Kernel),
    ct(0x0080_1909, "NV0080_CTRL_CMD_PERF_CUDA_LIMIT_SET_CONTROL", 1, P::Forward, F::Perf),
    ct(abi::rusd::REQUEST_DATA_POLL, "NV00DE_CTRL_CMD_REQUEST_DATA_POLL", 8, P::Denied, F::Perf),
    // TODO(table): allow with NV_MEMORY_FABRIC.
    ct(0x00f8_0103, "NV00F8_CTRL_CMD_ATTACH_MEM", 2064, P::Denied, F::Interconnect),
    // TODO(table): allow with NV_MEMORY_MULTICAST_FABRIC.
    ct(0x00fd_0101, "NV00FD_CTRL_CMD_GET_INFO", 32, P::Denied, F::Interconnect),
    // TODO(table): allow with NV_MEMORY_MULTICAST_FABRIC.
    ct(0x00fd_0102, "NV00FD_CTRL_CMD_ATTACH_MEM", 40, P::Denied, F::Interconnect),
    // TODO(table): allow with NV_MEMORY_MULTICAST_FABRIC, translating the fd.
    ct(0x00fd_0104, "NV00FD_CTRL_CMD_ATTACH_GPU", 16, P::Denied, F::Interconnect),
    // TODO(table): allow with NV_MEMORY_MULTICAST_FABRIC.
    ct(0x00fd_0105, "NV00FD_CTRL_CMD_DETACH_MEM", 24, P::Denied, F::Interconnect),
    cth(ctrl::NV2080_CTRL_CMD_GPU_GET_INFO_V2, "NV2080_CTRL_CMD_GPU_GET_INFO_V2", 564, P::Forward, F::GpuInfo, C::Kernel),
    cth(0x2080_0110, "NV2080_CTRL_CMD_GPU_GET_NAME_STRING", 68, P::Forward, F::GpuInfo, C::Kernel),
    cth(0x2080_0111, "NV2080_CTRL_CMD_GPU_GET_SHORT_NAME_STRING", 64, P::Forward, F::GpuInfo, C::Kernel),
    cth(0x2080_0119, "NV2080_CTRL_CMD_GPU_GET_SIMULATION_INFO", 4, P::Forward, F::GpuInfo, C::Kernel),
    ct(0x2080_012f, "NV2080_CTRL_CMD_GPU_QUERY_ECC_STATUS", 1664, P::Forward, F::GpuInfo),
    ct(0x2080_0131, "NV2080_CTRL_CMD_GPU_QUERY_COMPUTE_MODE_RULES", 4, P::Forward, F::GpuInfo),
    ct(0x2080_0133, "NV2080_CTRL_CMD_GPU_QUERY_ECC_CONFIGURATION", 8, P::Forward, F::GpuInfo),
    ct(0x2080_013f, "NV2080_CTRL_CMD_GPU_GET_OEM_BOARD_INFO", 136, P::Forward, F::GpuInfo),
    cth(0x2080_0142, "NV2080_CTRL_CMD_GPU_GET_ID", 4, P::Forward, F::GpuInfo, C::Kernel),
    // TODO(table): refuse vGPUs on GPUs in an exclusive compute mode, or serve it per vGPU, so
    //   one tenant cannot lock others out.
    ct(0x2080_0145, "NV2080_CTRL_CMD_GPU_ACQUIRE_COMPUTE_MODE_RESERVATION", 0, P::Forward, F::GpuInfo),
    ct(0x2080_0146, "NV2080_CTRL_CMD_GPU_RELEASE_COMPUTE_MODE_RESERVATION", 0, P::Forward, F::GpuInfo),
    cth(ctrl::NV2080_CTRL_CMD_GPU_GET_GID_INFO, "NV2080_CTRL_CMD_GPU_GET_GID_INFO", 268, P::Forward, F::GpuInfo, C::Kernel),
    ct(0x2080_014b, "NV2080_CTRL_CMD_GPU_GET_INFOROM_OBJECT_VERSION", 5, P::Forward, F::GpuInfo),
    ct(0x2080_0156, "NV2080_CTRL_CMD_GPU_GET_INFOROM_IMAGE_VERSION", 16, P::Forward, F::GpuInfo),
    ct(0x2080_0157, "NV2080_CTRL_CMD_GPU_QUERY_INFOROM_ECC_SUPPORT", 0, P::Forward, F::GpuInfo),
    cth(0x2080_0170, "NV2080_CTRL_CMD_GPU_GET_ENGINES_V2", 340, P::Forward, F::GpuInfo, C::Kernel),
    ct(0x2080_018b, "NV2080_CTRL_CMD_GPU_GET_ACTIVE_PARTITION_IDS", 40, P::Forward, F::GpuInfo),
    cth(ctrl::NV2080_CTRL_CMD_GPU_GET_PIDS, "NV2080_CTRL_CMD_GPU_GET_PIDS", 3812, P::Served, F::GpuInfo, C::Processes),
    cth(ctrl::NV2080_CTRL_CMD_GPU_GET_PID_INFO, "NV2080_CTRL_CMD_GPU_GET_PID_INFO", 14408, P::Served, F::GpuInfo, C::Processes),
    ct(ctrl::NV2080_CTRL_CMD_GPU_SET_COMPUTE_POLICY_CONFIG, "NV2080_CTRL_CMD_GPU_SET_COMPUTE_POLICY_CONFIG", 8, P::Denied, F::GpuInfo),
    ct(ctrl::NV2080_CTRL_CMD_GPU_GET_COMPUTE_POLICY_CONFIG, "NV2080_CTRL_CMD_GPU_GET_COMPUTE_POLICY_CONFIG", 260, P::Forward, F::GpuInfo),
    ct(0x2080_019f, "NV2080_CTRL_CMD_GPU_GET_SKYLINE_INFO", 400, P::Forward, F::GpuInfo),
    ct(0x2080_01a3, "NV2080_CTRL_CMD_GET_GPU_FABRIC_PROBE_INFO", 56, P::Forward, F::Interconnect),
    // TODO(table): check which GPU-wide notifiers (e.g. Xid of other channels) a tenant can
    //   arm.
    ct(0x2080_0301, "NV2080_CTRL_CMD_EVENT_SET_NOTIFICATION", 20, P::Forward, F::Event),
    ct(0x2080_0403, "NV2080_CTRL_CMD_TIMER_GET_TIME", 8, P::Forward, F::Perf),
    ct(0x2080_0406, "NV2080_CTRL_CMD_TIMER_GET_GPU_CPU_TIME_CORRELATION_INFO", 264, P::Forward, F::Perf),
    ct(0x2080_0407, "NV2080_CTRL_CMD_TIMER_SET_GR_TICK_FREQ", 1, P::Forward, F::Perf),
    // TODO(table): admit only those opcodes (bounce and check the list).
    ct(0x2080_0513, "NV2080_CTRL_CMD_THERMAL_SYSTEM_EXECUTE_V2", 1432, P::Forward, F::Perf),
    ct(0x2080_0802, "NV2080_CTRL_CMD_BIOS_GET_INFO", 16, P::Forward, F::GpuInfo),
    cth(ctrl::NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS, "NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS", 536, P::Rewritten, F::Fifo, C::DisableChannels),
    ct(0x2080_1201, "NV2080_CTRL_CMD_GR_GET_INFO", 32, P::Forward, F::Engine),
    // TODO(table): refuse WFI compute preemption, which would let a long kernel outlast the
    //   vGPU's window.
    ct(0x2080_1210, "NV2080_CTRL_CMD_GR_SET_CTXSW_PREEMPTION_MODE", 32, P::Forward, F::Engine),
    ct(0x2080_1218, "NV2080_CTRL_CMD_GR_GET_CTX_BUFFER_SIZE", 16, P::Forward, F::Engine),
    ct(0x2080_121b, "NV2080_CTRL_CMD_GR_GET_GLOBAL_SM_ORDER", 9240, P::Forward, F::Engine),
    cth(0x2080_1227, "NV2080_CTRL_CMD_GR_GET_CAPS_V2", 48, P::Forward, F::Engine, C::Kernel),
    ct(0x2080_122a, "NV2080_CTRL_CMD_GR_GET_GPC_MASK", 24, P::Forward, F::Engine),
    ct(0x2080_122b, "NV2080_CTRL_CMD_GR_GET_TPC_MASK", 24, P::Forward, F::Engine),
    ct(0x2080_1230, "NV2080_CTRL_CMD_GR_GET_SM_ISSUE_RATE_MODIFIER", 32, P::Forward, F::Engine),
    ct(0x2080_123c, "NV2080_CTRL_CMD_GR_GET_SM_ISSUE_RATE_MODIFIER_V2", 2044, P::Forward, F::Engine),
    cth(ctrl::NV2080_CTRL_CMD_FB_GET_INFO, "NV2080_CTRL_CMD_FB_GET_INFO", 16, P::Rewritten, F::Memory, C::FbInfo),
    cth(ctrl::NV2080_CTRL_CMD_FB_GET_INFO_V2, "NV2080_CTRL_CMD_FB_GET_INFO_V2", 1028, P::Rewritten, F::Memory, C::FbInfo),
    // TODO(table): rewrite the regions to the ceiling.
    ct(ctrl::NV2080_CTRL_CMD_FB_GET_FB_REGION_INFO, "NV2080_CTRL_CMD_FB_GET_FB_REGION_INFO", 904, P::Denied, F::Memory),
    ct(0x2080_1357, "NV2080_CTRL_CMD_FB_QUERY_DRAM_ENCRYPTION_INFOROM_SUPPORT", 4, P::Forward, F::Memory),
    ct(0x2080_1358, "NV2080_CTRL_CMD_FB_QUERY_DRAM_ENCRYPTION_STATUS", 4, P::Forward, F::Memory),
    cth(0x2080_1701, "NV2080_CTRL_CMD_MC_GET_ARCH_INFO", 16, P::Forward, F::GpuInfo, C::Kernel),
    ct(0x2080_1702, "NV2080_CTRL_CMD_MC_SERVICE_INTERRUPTS", 4, P::Forward, F::Fifo),
    ct(0x2080_1801, "NV2080_CTRL_CMD_BUS_GET_PCI_INFO", 16, P::Forward, F::Interconnect),
    ct(0x2080_1802, "NV2080_CTRL_CMD_BUS_GET_INFO", 16, P::Forward, F::Interconnect),
    ct(0x2080_1803, "NV2080_CTRL_CMD_BUS_GET_PCI_BAR_INFO", 200, P::Forward, F::Interconnect),
    ct(0x2080_1823, "NV2080_CTRL_CMD_BUS_GET_INFO_V2", 420, P::Forward, F::Interconnect),
    ct(0x2080_182a, "NV2080_CTRL_CMD_BUS_GET_PCIE_SUPPORTED_GPU_ATOMICS", 112, P::Forward, F::Interconnect),
    ct(0x2080_182b, "NV2080_CTRL_CMD_BUS_GET_C2C_INFO", 28, P::Forward, F::Interconnect),
    // TODO(table): confirm on hardware that boost requests are per client and cleared at its
    //   exit.
    ct(0x2080_200a, "NV2080_CTRL_CMD_PERF_BOOST", 8, P::Forward, F::Perf),
    ct(0x2080_2068, "NV2080_CTRL_CMD_PERF_GET_CURRENT_PSTATE", 4, P::Forward, F::Perf),
    // TODO(table): serve the vGPU's own utilization (nvidia-smi's GPU-Util).
    ct(0x2080_2096, "NV2080_CTRL_CMD_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2", 55888, P::Denied, F::Perf),
    ct(0x2080_2209, "NV2080_CTRL_CMD_RC_GET_WATCHDOG_INFO", 4, P::Forward, F::Debugging),
    ct(0x2080_220c, "NV2080_CTRL_CMD_RC_RELEASE_WATCHDOG_REQUESTS", 0, P::Forward, F::Debugging),
    // Pauses the GPU-wide hang watchdog for every tenant: refused with NOT_SUPPORTED, RM's
    //   answer where it has no watchdog (`kernel_rc_watchdog_ctrl.c:91` at 595.45.04).
    ct(0x2080_2210, "NV2080_CTRL_CMD_RC_SOFT_DISABLE_WATCHDOG", 0, P::Denied, F::Debugging),
    ct(0x2080_2a03, "NV2080_CTRL_CMD_CE_GET_CAPS_V2", 8, P::Forward, F::Engine),
    ct(0x2080_2a0a, "NV2080_CTRL_CMD_CE_GET_ALL_CAPS", 136, P::Forward, F::Engine),
    ct(0x2080_3001, "NV2080_CTRL_CMD_NVLINK_GET_NVLINK_CAPS", 48, P::Forward, F::Interconnect),
    ct(0x2080_3002, "NV2080_CTRL_CMD_NVLINK_GET_NVLINK_STATUS", 13864, P::Forward, F::Interconnect),
    ct(0x2080_3125, "NV2080_CTRL_CMD_FLCN_GET_CTX_BUFFER_SIZE", 16, P::Forward, F::Engine),
    ct(0x2080_3601, "NV2080_CTRL_CMD_GSP_GET_FEATURES", 72, P::Forward, F::GpuInfo),
    ct(0x2080_3801, "NV2080_CTRL_CMD_GRMGR_GET_GR_FS_INFO", 1928, P::Forward, F::Engine),
    ct(0x208f_1105, "NV208F_CTRL_CMD_GPU_VERIFY_INFOROM", 8, P::Forward, F::Debugging),
    ct(0x503c_0102, "NV503C_CTRL_CMD_REGISTER_VA_SPACE", 16, P::Forward, F::Interconnect),
    ct(0x503c_0104, "NV503C_CTRL_CMD_REGISTER_VIDMEM", 32, P::Forward, F::Interconnect),
    ct(0x503c_0105, "NV503C_CTRL_CMD_UNREGISTER_VIDMEM", 4, P::Forward, F::Interconnect),
    ct(0x83de_0307, "NV83DE_CTRL_CMD_DEBUG_SET_MODE_MMU_DEBUG", 4, P::Forward, F::Debugging),
    ct(0x83de_0309, "NV83DE_CTRL_CMD_DEBUG_SET_EXCEPTION_MASK", 4, P::Forward, F::Debugging),
    ct(0x83de_030c, "NV83DE_CTRL_CMD_DEBUG_READ_ALL_SM_ERROR_STATES", 4824, P::Forward, F::Debugging),
    ct(0x83de_0310, "NV83DE_CTRL_CMD_DEBUG_CLEAR_ALL_SM_ERROR_STATES", 8, P::Forward, F::Debugging),
    ct(0x83de_0315, "NV83DE_CTRL_CMD_DEBUG_READ_MEMORY", 24, P::Forward, F::Debugging),
    ct(0x83de_0317, "NV83DE_CTRL_CMD_DEBUG_SUSPEND_CONTEXT", 8, P::Forward, F::Debugging),
    ct(0x83de_0318, "NV83DE_CTRL_CMD_DEBUG_RESUME_CONTEXT", 0, P::Forward, F::Debugging),
    ct(0x83de_031f, "NV83DE_CTRL_CMD_DEBUG_SET_MODE_ERRBAR_DEBUG", 4, P::Forward, F::Debugging),
    ct(0x906f_0101, "NV906F_CTRL_GET_CLASS_ENGINEID", 16, P::Forward, F::Fifo),
    ct(0x906f_0102, "NV906F_CTRL_CMD_RESET_CHANNEL", 16, P::Forward, F::Fifo),
    ct(0x90e6_0102, "NV90E6_CTRL_CMD_MASTER_GET_VIRTUAL_FUNCTION_ERROR_CONT_INTR_MASK", 8, P::Forward, F::GpuInfo),
    cth(ctrl::NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, "NVA06C_CTRL_CMD_GPFIFO_SCHEDULE", 3, P::Rewritten, F::Fifo, C::TsgSchedule),
    cth(ctrl::NVA06C_CTRL_CMD_SET_TIMESLICE, "NVA06C_CTRL_CMD_SET_TIMESLICE", 8, P::Rewritten, F::Fifo, C::Timeslice),
    ct(ctrl::NVA06C_CTRL_CMD_GET_TIMESLICE, "NVA06C_CTRL_CMD_GET_TIMESLICE", 8, P::Forward, F::Fifo),
    ct(ctrl::NVA06C_CTRL_CMD_PREEMPT, "NVA06C_CTRL_CMD_PREEMPT", 8, P::Forward, F::Fifo),
    ct(ctrl::NVA06C_CTRL_CMD_GET_INFO, "NVA06C_CTRL_CMD_GET_INFO", 4, P::Forward, F::Fifo),
    cth(ctrl::NVA06C_CTRL_CMD_SET_INTERLEAVE_LEVEL, "NVA06C_CTRL_CMD_SET_INTERLEAVE_LEVEL", 4, P::Rewritten, F::Fifo, C::InterleaveLevel),
    refused_with(abi::status::NV_ERR_INSUFFICIENT_PERMISSIONS, ct(ctrl::NVA06C_CTRL_CMD_MAKE_REALTIME, "NVA06C_CTRL_CMD_MAKE_REALTIME", 1, P::Denied, F::Fifo)),
    cth(ctrl::NVA06F_CTRL_CMD_GPFIFO_SCHEDULE, "NVA06F_CTRL_CMD_GPFIFO_SCHEDULE", 3, P::Rewritten, F::Fifo, C::ChannelSchedule),
    ct(ctrl::NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN, "NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN", 4, P::Forward, F::Fifo),
    ct(0xc56f_010b, "NVC56F_CTRL_CMD_GET_KMB", 144, P::Forward, F::Security),
    ct(0xcb33_0101, "NV_CONF_COMPUTE_CTRL_CMD_SYSTEM_GET_CAPABILITIES", 6, P::Forward, F::Security),
    ct(0xcb33_0104, "NV_CONF_COMPUTE_CTRL_CMD_SYSTEM_GET_GPUS_STATE", 1, P::Forward, F::Security),
    ct(0xcb33_010b, "NV_CONF_COMPUTE_CTRL_CMD_GPU_GET_NUM_SECURE_CHANNELS", 12, P::Forward, F::Security),
    ct(0xcb33_010c, "NV_CONF_COMPUTE_CTRL_CMD_GPU_GET_KEY_ROTATION_STATE", 8, P::Forward, F::Security),
];

/// The row of class `c`, if the table has one (binary search: the rows
/// are in number order, checked at compile time below).
pub const fn class_row(c: u32) -> Option<&'static ClassRow> {
    class_row_in(CLASSES, c)
}

/// The row of control `cmd` in [`CONTROLS`] (the 595.45.04 table), if it
/// has one (binary search, as [`class_row`]).
pub const fn control_row(cmd: u32) -> Option<&'static ControlRow> {
    control_row_in(CONTROLS, cmd)
}

/// `rows` with control `old` numbered `new`: a release that numbers it
/// otherwise. The order must stay (`nv::release` checks every release's
/// tables at compile time).
pub const fn renumbered_control<const N: usize>(
    mut rows: [ControlRow; N],
    old: u32,
    new: u32,
) -> [ControlRow; N] {
    let mut i = 0;
    let mut found = false;
    while i < N {
        if rows[i].cmd == old && !found {
            rows[i].cmd = new;
            found = true;
        }
        i += 1;
    }
    assert!(found, "renumbered_control: the control is not in the table");
    rows
}

/// Defines, for a table of `$row`s in `$key` order: `$lookup(rows, key)`,
/// the row of `key` (a binary search, on the path of every call);
/// `$in_order(rows)`, whether the rows are in strictly increasing `$key`
/// order (what the lookup relies on; `nv::release` checks every release's
/// tables with it at compile time); and `$without(rows, absent)`, `rows`
/// without the rows whose `$key` is in `absent` (what a release lacks), all
/// of which must be in `rows`, `M` being `N - absent.len()` (both checked
/// at compile time).
macro_rules! keyed_rows {
    ($row:ty, $key:ident: $k:ty, $lookup:ident, $in_order:ident, $without:ident) => {
        keyed_rows!($row, $key: $k, $lookup, $in_order);

        /// `rows` without the rows whose key is in `absent`.
        pub const fn $without<const N: usize, const M: usize>(
            rows: [$row; N],
            absent: &[$k],
        ) -> [$row; M] {
            assert!(
                M + absent.len() == N,
                concat!(stringify!($without), ": M must be N - absent")
            );
            let mut out = [rows[0]; M];
            let (mut i, mut o) = (0, 0);
            while i < N {
                let mut gone = false;
                let mut k = 0;
                while k < absent.len() {
                    gone = gone || rows[i].$key == absent[k];
                    k += 1;
                }
                if !gone {
                    assert!(o < M, concat!(stringify!($without), ": a row is not in the table"));
                    out[o] = rows[i];
                    o += 1;
                }
                i += 1;
            }
            assert!(o == M, concat!(stringify!($without), ": a row is not in the table"));
            out
        }
    };
    ($row:ty, $key:ident: $k:ty, $lookup:ident, $in_order:ident) => {
        /// The row of `key` in `rows` (a release's table, in key order), if
        /// it has one.
        pub const fn $lookup(rows: &'static [$row], key: $k) -> Option<&'static $row> {
            let (mut lo, mut hi) = (0, rows.len());
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                let row = &rows[mid];
                if row.$key == key {
                    return Some(row);
                }
                if row.$key < key {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            None
        }

        /// Whether `rows` are in strictly increasing key order (no key
        /// twice).
        pub const fn $in_order(rows: &[$row]) -> bool {
            let mut i = 1;
            while i < rows.len() {
                if rows[i - 1].$key >= rows[i].$key {
                    return false;
                }
                i += 1;
            }
            true
        }
    };
}

keyed_rows!(ClassRow, class: u32, class_row_in, classes_in_order, without_classes);
keyed_rows!(ControlRow, cmd: u32, control_row_in, controls_in_order, without_controls);
keyed_rows!(EscapeRow, nr: u8, escape_row_in, escapes_in_order, without_escapes);
keyed_rows!(UvmRow, number: u32, uvm_row_in, uvm_in_order);

/// Defines `$name(rows, sizes)`: `rows` with the params size of each
/// `(key, size)` of `sizes` set (a release whose params blocks differ);
/// every key must be in `rows` (checked at compile time).
macro_rules! sized_rows {
    ($name:ident, $row:ty, $key:ident) => {
        /// `rows` with each `(key, size)` of `sizes` applied.
        pub const fn $name<const N: usize>(mut rows: [$row; N], sizes: &[(u32, u32)]) -> [$row; N] {
            let mut k = 0;
            while k < sizes.len() {
                let mut found = false;
                let mut i = 0;
                while i < N {
                    if rows[i].$key == sizes[k].0 {
                        rows[i].params_size = sizes[k].1;
                        found = true;
                    }
                    i += 1;
                }
                assert!(
                    found,
                    concat!(stringify!($name), ": a row is not in the table")
                );
                k += 1;
            }
            rows
        }
    };
}

sized_rows!(with_params_sizes, ControlRow, cmd);
sized_rows!(with_class_params_sizes, ClassRow, class);

/// `rows` with class `c` given `policy` (and the refusal of a class RM
/// does not have).
pub const fn with_class_policy<const N: usize>(
    mut rows: [ClassRow; N],
    c: u32,
    policy: Policy,
) -> [ClassRow; N] {
    let mut i = 0;
    let mut found = false;
    while i < N {
        if rows[i].class == c {
            rows[i].policy = policy;
            rows[i].refusal = abi::status::NV_ERR_INVALID_CLASS;
            found = true;
        }
        i += 1;
    }
    assert!(found, "with_class_policy: the class is not in the table");
    rows
}

/// `rows` with escape `e`'s size check `size`.
pub const fn with_escape_size<const N: usize>(
    mut rows: [EscapeRow; N],
    e: Escape,
    size: SizeRule,
) -> [EscapeRow; N] {
    let mut i = 0;
    let mut found = false;
    while i < N {
        if rows[i].nr == e.nr() {
            rows[i].size = size;
            found = true;
        }
        i += 1;
    }
    assert!(found, "with_escape_size: the escape is not in the table");
    rows
}

/// `rows` with UVM command `c`'s block laid out as `fields`, `size` bytes:
/// its status and client offsets follow the layout.
pub const fn with_uvm_layout<const N: usize>(
    mut rows: [UvmRow; N],
    c: Command,
    size: usize,
    fields: &'static [WireField],
) -> [UvmRow; N] {
    let mut i = 0;
    let mut found = false;
    while i < N {
        if rows[i].number == c.number() {
            rows[i].size = size;
            rows[i].status_at = find_field(fields, "rm_status");
            rows[i].client_at = find_field(fields, "h_client");
            rows[i].fields = Some(fields);
            found = true;
        }
        i += 1;
    }
    assert!(found, "with_uvm_layout: the command is not in the table");
    rows
}

// Both tables are in strictly increasing number order: what the lookups
// rely on, and no number twice.
const _: () = {
    assert!(classes_in_order(CLASSES), "CLASSES out of order");
    assert!(controls_in_order(CONTROLS), "CONTROLS out of order");
};

/// What vgpu does with class `c`: its row's policy, [`Policy::Denied`] for
/// a class the table lacks (default deny).
pub const fn class_policy(c: u32) -> Policy {
    match class_row(c) {
        Some(r) => r.policy,
        None => Policy::Denied,
    }
}

/// What vgpu does with control `cmd`: its row's policy, [`Policy::Denied`]
/// for a control the table lacks (default deny).
pub const fn control_policy(cmd: u32) -> Policy {
    match control_row(cmd) {
        Some(r) => r.policy,
        None => Policy::Denied,
    }
}

/// Where vgpu admits an escape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nodes {
    /// `/dev/vgpuctl` only.
    Ctl,
    /// `/dev/vgpuN` only.
    Gpu,
    /// Both.
    Both,
}

impl Nodes {
    /// Whether a call on a ctl node (`ctl`) or a GPU node (`!ctl`) is
    /// admitted.
    pub const fn admits(self, ctl: bool) -> bool {
        match self {
            Nodes::Ctl => ctl,
            Nodes::Gpu => !ctl,
            Nodes::Both => true,
        }
    }
}

/// What vgpu runs for an escape (the module's dispatcher matches on this,
/// and on nothing else of the call, to choose a handler).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EscapeHandler {
    /// Forwarded; an fd in the block ([`EscapeRow::fd_at`]) that names one
    /// of vgpu's files is translated to that file's real file.
    Forward,
    /// RM_ALLOC_MEMORY: forwarded (fd translated); on a GPU node the heap
    /// size class 0x40 reports is the vGPU's ceiling.
    AllocMemory,
    /// RM_ALLOC: classes by their rows ([`CLASSES`]).
    Alloc,
    /// RM_FREE: executed by vgpu on its verified clients (refunds).
    Free,
    /// RM_CONTROL: controls by their rows ([`CONTROLS`]).
    Control,
    /// RM_DUP_OBJECT: within a container only, charges shared.
    Dup,
    /// RM_VID_HEAP_CONTROL: allocations accounted, INFO rewritten.
    VidHeap,
    /// CARD_INFO: only the container's GPUs, from vgpu's records.
    CardInfo,
}

/// One frontend escape (the `_IOC_NR` of an ioctl on an RM node).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EscapeRow {
    /// The escape.
    pub escape: Escape,
    /// Its `_IOC_NR`.
    pub nr: u8,
    /// The driver's size check.
    pub size: SizeRule,
    /// The node the driver serves it on.
    pub driver_node: Node,
    /// The nodes vgpu admits it on (a call on another is `EPERM`).
    pub nodes: Nodes,
    /// Where the block holds an fd the driver looks up in the caller's
    /// table.
    pub fd_at: Option<usize>,
    /// Where the block's RM status is (`None`: none, or two layouts).
    pub status_at: Option<usize>,
    /// What vgpu does with it.
    pub policy: Policy,
    /// The handler.
    pub handler: EscapeHandler,
}

/// The layout of an escape's block, where it has one vgpu declares.
const fn escape_fields(e: Escape) -> Option<&'static [WireField]> {
    Some(match e {
        Escape::RmFree => abi::Nvos00::FIELDS,
        Escape::RmControl => abi::Nvos54::FIELDS,
        Escape::RmDupObject => abi::Nvos55::FIELDS,
        Escape::RmShare => abi::Nvos57::FIELDS,
        Escape::RmVidHeapControl => abi::Nvos32::FIELDS,
        Escape::RmUnmapMemory => abi::Nvos34::FIELDS,
        Escape::AllocOsEvent | Escape::FreeOsEvent => abi::OsEvent::FIELDS,
        _ => return None,
    })
}

/// An escape row: the facts from [`Escape`] and the block layouts, the
/// decision from the arguments.
const fn esc(escape: Escape, nodes: Nodes, policy: Policy, handler: EscapeHandler) -> EscapeRow {
    EscapeRow {
        escape,
        nr: escape.nr(),
        size: escape.size_rule(),
        driver_node: escape.node(),
        nodes,
        fd_at: escape.embedded_fd(),
        status_at: match escape_fields(escape) {
            Some(f) => find_field(f, "status"),
            None => None,
        },
        policy,
        handler,
    }
}

use EscapeHandler as H;

/// Every escape a container may send, in `nr` order. RM escapes (the
/// driver's ctl node) are admitted on `/dev/vgpuctl` only: the driver would
/// serve them on a GPU node too, for the ctl file it is registered to, but
/// they must pass vgpu's accounting and rewrites there. Reasons per row in
/// `docs/dispatch-table.md`, "Escapes".
#[rustfmt::skip]
pub const ESCAPES: &[EscapeRow] = &ESCAPE_ROWS;

/// [`ESCAPES`] as an array, for releases' patched copies.
#[rustfmt::skip]
pub(crate) const ESCAPE_ROWS: [EscapeRow; 25] = [
    esc(Escape::RmAllocMemory, Nodes::Both, P::Rewritten, H::AllocMemory),
    esc(Escape::RmFree, Nodes::Ctl, P::Served, H::Free),
    esc(Escape::RmControl, Nodes::Ctl, P::Bounce, H::Control),
    esc(Escape::RmAlloc, Nodes::Ctl, P::Served, H::Alloc),
    esc(Escape::RmDupObject, Nodes::Ctl, P::Bounce, H::Dup),
    esc(Escape::RmShare, Nodes::Ctl, P::Forward, H::Forward),
    esc(Escape::RmIdleChannels, Nodes::Ctl, P::Forward, H::Forward),
    esc(Escape::RmVidHeapControl, Nodes::Ctl, P::Served, H::VidHeap),
    esc(Escape::RmMapMemory, Nodes::Ctl, P::Bounce, H::Forward),
    esc(Escape::RmUnmapMemory, Nodes::Ctl, P::Forward, H::Forward),
    esc(Escape::RmMapMemoryDma, Nodes::Ctl, P::Forward, H::Forward),
    esc(Escape::RmUnmapMemoryDma, Nodes::Ctl, P::Forward, H::Forward),
    esc(Escape::RmUpdateDeviceMappingInfo, Nodes::Ctl, P::Forward, H::Forward),
    esc(Escape::CardInfo, Nodes::Ctl, P::Served, H::CardInfo),
    // The driver takes REGISTER_FD on either node (`escape.c:942-944` at
    // 595.45.04); a ctl file registered to another would create clients
    // that outlive the file vgpu charges them to: GPU nodes only (libcuda
    // registers GPU files only).
    esc(Escape::RegisterFd, Nodes::Gpu, P::Bounce, H::Forward),
    esc(Escape::AllocOsEvent, Nodes::Both, P::Bounce, H::Forward),
    esc(Escape::FreeOsEvent, Nodes::Both, P::Bounce, H::Forward),
    esc(Escape::StatusCode, Nodes::Ctl, P::Forward, H::Forward),
    esc(Escape::CheckVersionStr, Nodes::Ctl, P::Forward, H::Forward),
    esc(Escape::IoctlXferCmd, Nodes::Both, P::Bounce, H::Forward),
    esc(Escape::AttachGpusToFd, Nodes::Ctl, P::Forward, H::Forward),
    esc(Escape::SysParams, Nodes::Ctl, P::Forward, H::Forward),
    esc(Escape::NumaInfo, Nodes::Both, P::Forward, H::Forward),
    esc(Escape::ExportToDmabufFd, Nodes::Both, P::Forward, H::Forward),
    esc(Escape::WaitOpenComplete, Nodes::Both, P::Forward, H::Forward),
];

/// The row of escape `e`. Every [`Escape`] has one (checked at compile time
/// below), so a lookup never fails for an escape that decoded.
pub const fn escape_row(e: Escape) -> &'static EscapeRow {
    match escape_row_in(ESCAPES, e.nr()) {
        Some(r) => r,
        // Unreachable: every escape has a row (the assertion below).
        None => &ESCAPES[0],
    }
}

/// What vgpu runs for a UVM command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UvmHandler {
    /// Forwarded as the caller wrote it.
    Forward,
    /// UVM_INITIALIZE: `DISABLE_HMM` forced on.
    Initialize,
    /// UVM_MM_INITIALIZE: the fd translated to the primary's real file.
    MmInitialize,
    /// UVM_REGISTER_GPU: the container's GPU, through its vGPU node.
    RegisterGpu,
    /// An RM client in the block ([`UvmRow::client_at`]) must be the
    /// container's; forwarded from vgpu's copy.
    ClientChecked,
    /// UVM_MAP_EXTERNAL_ALLOCATION: client checked; the memory's charge is
    /// held while UVM maps it.
    MapExternal,
    /// UVM_UNMAP_EXTERNAL: forwarded from vgpu's copy; the holds of the
    /// GPU's mappings it removes go.
    UnmapExternal,
    /// UVM_UNREGISTER_GPU_VASPACE, UVM_UNREGISTER_GPU: forwarded from
    /// vgpu's copy; the holds of the GPU's external mappings go.
    UnregisterGpu,
    /// UVM_FREE: forwarded from vgpu's copy; held charges at its base go.
    Free,
    /// UVM_MAP_DYNAMIC_PARALLELISM_REGION: its page-table bound charged.
    DpRegion,
}

/// One nvidia-uvm ioctl command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UvmRow {
    /// The command.
    pub command: Command,
    /// Its number (the whole ioctl request word).
    pub number: u32,
    /// Its block's size (the driver copies exactly this much).
    pub size: usize,
    /// Where the block's `rmStatus` is (`None`: no block).
    pub status_at: Option<usize>,
    /// Where the block holds an fd.
    pub fd_at: Option<usize>,
    /// Where the block names an RM client (`hClient`).
    pub client_at: Option<usize>,
    /// The block's layout in this release, where vgpu declares one.
    pub fields: Option<&'static [WireField]>,
    /// What vgpu does with it.
    pub policy: Policy,
    /// The handler.
    pub handler: UvmHandler,
}

impl UvmRow {
    /// The offset of field `name` in the block, if the row's layout has it.
    pub const fn field(&self, name: &str) -> Option<usize> {
        match self.fields {
            Some(f) => find_field(f, name),
            None => None,
        }
    }
}

/// A UVM row: the facts from [`Command`] and its block's layout.
const fn uvm(command: Command, policy: Policy, handler: UvmHandler) -> UvmRow {
    UvmRow {
        command,
        number: command.number(),
        size: command.size(),
        status_at: command.status_offset(),
        fd_at: command.embedded_fd(),
        client_at: match command.fields() {
            Some(f) => find_field(f, "h_client"),
            None => None,
        },
        fields: command.fields(),
        policy,
        handler,
    }
}

use UvmHandler as U;

/// Every UVM command a container may send, in number order. Reasons per row
/// in `docs/dispatch-table.md`, "UVM commands", and `docs/uvm-abi.md`.
#[rustfmt::skip]
pub const UVM: &[UvmRow] = &UVM_ROWS;

/// [`UVM`] as an array, for releases' patched copies.
#[rustfmt::skip]
pub(crate) const UVM_ROWS: [UvmRow; 32] = [
    uvm(Command::CreateRangeGroup, P::Forward, U::Forward),
    uvm(Command::DestroyRangeGroup, P::Forward, U::Forward),
    uvm(Command::RegisterGpuVaspace, P::Bounce, U::ClientChecked),
    uvm(Command::UnregisterGpuVaspace, P::Bounce, U::UnregisterGpu),
    uvm(Command::RegisterChannel, P::Bounce, U::ClientChecked),
    uvm(Command::UnregisterChannel, P::Bounce, U::ClientChecked),
    uvm(Command::EnablePeerAccess, P::Forward, U::Forward),
    uvm(Command::DisablePeerAccess, P::Forward, U::Forward),
    uvm(Command::SetRangeGroup, P::Forward, U::Forward),
    uvm(Command::MapExternalAllocation, P::Bounce, U::MapExternal),
    uvm(Command::Free, P::Bounce, U::Free),
    uvm(Command::RegisterGpu, P::Bounce, U::RegisterGpu),
    uvm(Command::UnregisterGpu, P::Bounce, U::UnregisterGpu),
    uvm(Command::PageableMemAccess, P::Forward, U::Forward),
    uvm(Command::SetPreferredLocation, P::Forward, U::Forward),
    uvm(Command::UnsetPreferredLocation, P::Forward, U::Forward),
    uvm(Command::EnableReadDuplication, P::Forward, U::Forward),
    uvm(Command::DisableReadDuplication, P::Forward, U::Forward),
    uvm(Command::SetAccessedBy, P::Forward, U::Forward),
    uvm(Command::UnsetAccessedBy, P::Forward, U::Forward),
    uvm(Command::Migrate, P::Forward, U::Forward),
    uvm(Command::MigrateRangeGroup, P::Forward, U::Forward),
    uvm(Command::ToolsReadProcessMemory, P::Forward, U::Forward),
    uvm(Command::ToolsWriteProcessMemory, P::Forward, U::Forward),
    uvm(Command::MapDynamicParallelismRegion, P::Bounce, U::DpRegion),
    uvm(Command::UnmapExternal, P::Bounce, U::UnmapExternal),
    uvm(Command::AllocSemaphorePool, P::Forward, U::Forward),
    uvm(Command::ValidateVaRange, P::Forward, U::Forward),
    uvm(Command::CreateExternalRange, P::Forward, U::Forward),
    uvm(Command::MmInitialize, P::Bounce, U::MmInitialize),
    uvm(Command::Initialize, P::Rewritten, U::Initialize),
    uvm(Command::Deinitialize, P::Forward, U::Forward),
];

/// The row of UVM command number `number`, if the table has one.
pub const fn uvm_row(number: u32) -> Option<&'static UvmRow> {
    uvm_row_in(UVM, number)
}

// Every escape and every UVM command vgpu knows has exactly one row; the
// rows are in number order (the lookups rely on it).
const _: () = {
    let mut i = 0;
    while i < Escape::ALL.len() {
        let e = Escape::ALL[i];
        assert!(escape_row(e).nr == e.nr(), "an escape has no row");
        i += 1;
    }
    assert!(ESCAPES.len() == Escape::ALL.len(), "an escape row twice");
    assert!(escapes_in_order(ESCAPES), "ESCAPES out of order");
    assert!(
        UVM.len() == uvmabi::COMMANDS.len(),
        "a UVM command row missing or twice"
    );
    assert!(uvm_in_order(UVM), "UVM out of order");
    let mut i = 0;
    while i < uvmabi::COMMANDS.len() {
        let c = uvmabi::COMMANDS[i];
        assert!(
            match uvm_row(c.number()) {
                Some(r) => r.number == c.number(),
                None => false,
            },
            "a UVM command has no row"
        );
        i += 1;
    }
};
