// SPDX-License-Identifier: GPL-2.0

//! The RM controls (`cmd` of RM_CONTROL): rows, handlers, lookup and the
//! patchers a release's table is built with.

use super::policy::{Family, Policy};
use crate::nv::abi::{self, ctrl};

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
    /// GR_SET_CTXSW_PREEMPTION_MODE on the caller's own subdevice, executed
    /// on kernel copies; a compute mode of wait-for-idle is refused
    /// (`NV_ERR_NOT_SUPPORTED`), since a context that switches only when
    /// idle keeps the engine past its vGPU's window (`src/rm/control.rs`).
    Preemption,
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
    /// An NV0000 control that names GPUs by id in its params (the lists
    /// in [`IdList`]s), on one of the caller's clients: every id named must
    /// be a GPU the caller has a vGPU on (by its CARD_INFO record, as for
    /// [`ControlHandler::GpuIds`]), or the call is refused with `unknown`,
    /// the status RM gives an id it does not know (`docs/dispatch-table.md`
    /// cites each); else it is forwarded from vgpu's checked copy of the
    /// params, in a bounce slot (`src/rm/control.rs`).
    GpuIdsNamed {
        /// Where the ids are.
        lists: &'static [IdList],
        /// RM's status for an id it does not know.
        unknown: u32,
    },
    /// GPU_GET_PROBED_IDS on one of the caller's clients: run on kernel
    /// copies, the probed list cut to the GPUs the caller has a vGPU on
    /// (their flags with them), the excluded list emptied: the host's other
    /// GPUs never reach the caller's memory (`src/rm/control.rs`).
    ProbedIds,
    /// GPU_GET_DEVICE_IDS on one of the caller's clients: run on kernel
    /// copies, the device-instance mask cut to the instances of the GPUs
    /// the caller has a vGPU on (`src/rm/control.rs`).
    DeviceIds,
    /// GPU_GET_ACTIVE_DEVICE_IDS on one of the caller's clients: run on
    /// kernel copies, the list cut to the devices of the GPUs the caller
    /// has a vGPU on (`src/rm/control.rs`).
    ActiveDevices,
    /// GPU_ACQUIRE_COMPUTE_MODE_RESERVATION and _RELEASE_ on the caller's
    /// own subdevice: answered by vgpu from the vGPU's own reservation, as
    /// RM answers on a GPU in compute mode RULES_NONE; never forwarded, so
    /// the GPU's one reservation, which in an exclusive compute mode would
    /// let one tenant lock the others out, is never taken
    /// (`src/rm/control.rs`).
    ComputeReservation,
    /// GPU_GET_PIDS and GPU_GET_PID_INFO on the caller's own subdevice:
    /// answered by vgpu from the vGPU's list of processes (the container's
    /// own, numbered in the caller's PID namespace, with the bytes its
    /// ledger charged them); never forwarded (`src/rm/processes.rs`).
    Processes,
    /// A control on the caller's own device (`0x0080`) or subdevice
    /// (`0x2080`) whose params vgpu decides on ([`ParamCheck`]): they are
    /// read once into vgpu's copy, checked (a duration rewritten) there, and
    /// forwarded from that copy in a bounce slot, so no other thread can
    /// change them after the check. A call the check refuses gets `refusal`,
    /// RM's status for such params (`docs/dispatch-table.md` cites each), is
    /// counted in `calls_denied` and never reaches the driver
    /// (`src/rm/control.rs`).
    Checked {
        /// What is checked.
        check: ParamCheck,
        /// RM's status for params the check refuses.
        refusal: u32,
    },
}

/// What a [`ControlHandler::Checked`] row's params must hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamCheck {
    /// The handle at this byte is a TSG of the caller's, in the control's
    /// client, on the device's GPU.
    OwnTsg {
        /// Its byte offset in the params.
        at: u16,
    },
    /// The `u32` at byte `at` lies in one of the inclusive ranges `allowed`.
    OneOf {
        /// Its byte offset in the params.
        at: u16,
        /// The values admitted.
        allowed: &'static [(u32, u32)],
    },
    /// THERMAL_SYSTEM_EXECUTE_V2's instruction list, in the layout of
    /// `THERMAL_SYSTEM_API_VER` 1, revision 0 (`ctrl2080thermal.h:38-39,
    /// 397-415` at 595.45.04): at most 32 instructions, each opcode one of
    /// `allowed`.
    Instructions {
        /// The opcodes admitted.
        allowed: &'static [u32],
    },
    /// A duration in seconds (the `u32` at byte `at`): `infinite` becomes
    /// `to`, and any other value above `max` is refused.
    Duration {
        /// Its byte offset in the params.
        at: u16,
        /// The value that asks for no end.
        infinite: u32,
        /// What vgpu makes of it.
        to: u32,
        /// The longest finite duration admitted.
        max: u32,
    },
}

/// How many GPU ids an [`IdList`] holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdCount {
    /// One.
    One,
    /// Those before the first `NV0000_CTRL_GPU_INVALID_ID` (or all `max`);
    /// none if the first is [`ALL_GPUS`] (attach, detach: RM acts on no GPU
    /// for it).
    UntilInvalid,
    /// As many as the `u32` at this byte of the params says (at most
    /// `max`: RM refuses more).
    Field(u16),
}

/// A list of GPU ids in a control's params.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdList {
    /// Its byte offset in the params.
    pub at: u16,
    /// Its length, in ids.
    pub max: u16,
    /// How many of them are named.
    pub count: IdCount,
}

/// `NV0000_CTRL_GPU_ATTACH_ALL_PROBED_IDS`, which is also
/// `NV0000_CTRL_GPU_DETACH_ALL_ATTACHED_IDS` (`ctrl0000gpu.h:414, 467` at
/// 595.45.04).
pub const ALL_GPUS: u32 = 0x0000_ffff;

/// One id at the start of the params.
const ONE_ID: &[IdList] = &[IdList {
    at: 0,
    max: 1,
    count: IdCount::One,
}];
/// Attach and detach: up to 32 ids at the start, ended by an invalid one.
const ID_LIST: &[IdList] = &[IdList {
    at: 0,
    max: 32,
    count: IdCount::UntilInvalid,
}];
/// P2P caps (V1, V2): `gpuIds[32]`, then `gpuCount`
/// (`ctrl0000system.h:1034-1036, 1194-1196` at 595.45.04).
const P2P_IDS: &[IdList] = &[IdList {
    at: 0,
    max: 32,
    count: IdCount::Field(128),
}];
/// P2P caps matrix: `grpACount`, `grpBCount`, `gpuIdGrpA[8]`,
/// `gpuIdGrpB[8]` (`ctrl0000system.h:1309-1313` at 595.45.04).
const P2P_GROUPS: &[IdList] = &[
    IdList {
        at: 8,
        max: 8,
        count: IdCount::Field(0),
    },
    IdList {
        at: 40,
        max: 8,
        count: IdCount::Field(4),
    },
];

/// A [`ControlHandler::GpuIdsNamed`] row's handler.
const fn named(lists: &'static [IdList], unknown: u32) -> ControlHandler {
    ControlHandler::GpuIdsNamed { lists, unknown }
}

/// A [`ControlHandler::Checked`] row's handler.
const fn checked(check: ParamCheck, refusal: u32) -> ControlHandler {
    ControlHandler::Checked { check, refusal }
}

/// The NV2080 notifiers a tenant may arm (EVENT_SET_NOTIFICATION's `event`,
/// `cl2080_notification.h:36-240` at 595.45.04, the same numbers at
/// 535.288.01 up to its last, 180, `:32-207`): the engines' non-stall interrupts
/// (GR0-7, NVDEC0-7, CE0-19, NVENC0-3, NVJPG0-7, OFA0-1), which wake a
/// waiter when a semaphore is released, and the P-state and clock
/// changes, which are the GPU's. The rest (among them RC_ERROR, the Xid of
/// any channel on the GPU, the ECC and page-fault reports, and the
/// scheduler's) report on other tenants' channels and memory or on the
/// host: refused (`docs/dispatch-table.md`).
const NOTIFIERS: &[(u32, u32)] = &[
    (12, 12),   // GR0
    (14, 21),   // NVDEC0-7
    (23, 32),   // CE0-9
    (33, 33),   // PSTATE_CHANGE
    (38, 40),   // NVENC0-2
    (119, 119), // CLOCKS_CHANGE
    (126, 133), // NVJPG0-7
    (146, 153), // GR1-7, OFA0
    (166, 175), // CE10-19 (none at 535.288.01)
    (180, 180), // OFA1 (AUX_POWER_STATE_CHANGE at 535.288.01)
    (183, 183), // NVENC3
];

/// The thermal opcodes a tenant may run: the GET opcodes the headers
/// define, which nvidia-smi and NVML use (`ctrl2080thermal.h:156, 183,
/// 207, 225, 245, 271, 292, 316` at 595.45.04); RM hands any other to the
/// physical RM as its own internal client (`subdevice_ctrl_gpu_kernel.c:
/// 4264-4281`).
const THERMAL_GETS: &[u32] = &[0x100, 0x101, 0x301, 0x500, 0x510, 0x520, 0x540, 0x1500];

/// The largest params block a [`ControlHandler::Kernel`] control may have:
/// the handler copies it onto its stack.
pub const KERNEL_PARAMS_MAX: usize = 1024;

use Family as F;
use Policy as P;

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

use ControlHandler as C;
/// RM's status for a GPU id it does not know, in most controls.
const IA: u32 = abi::status::NV_ERR_INVALID_ARGUMENT;
/// RM's status for an fd that is not one of its files.
const IP: u32 = abi::status::NV_ERR_INVALID_PARAMETER;

/// Every control a container may send, by number. Sources per row in
/// `docs/dispatch-table.md`.
#[rustfmt::skip]
pub const CONTROLS: &[ControlRow] = &CONTROL_ROWS;

/// [`CONTROLS`] as an array, so that a release's table can be a patched
/// copy of it (`nv::release`).
#[rustfmt::skip]
pub(crate) const CONTROL_ROWS: [ControlRow; 148] = [
    ct(ctrl::NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION, "NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION", 40, P::Forward, F::Client),
    ct(ctrl::NV0000_CTRL_CMD_SYSTEM_GET_CPU_INFO, "NV0000_CTRL_CMD_SYSTEM_GET_CPU_INFO", 108, P::Forward, F::Client),
    cth(0x0000_0127, "NV0000_CTRL_CMD_SYSTEM_GET_P2P_CAPS", 176, P::Bounce, F::Interconnect, named(P2P_IDS, IA)),
    cth(0x0000_012b, "NV0000_CTRL_CMD_SYSTEM_GET_P2P_CAPS_V2", 8348, P::Bounce, F::Interconnect, named(P2P_IDS, IA)),
    ct(0x0000_0136, "NV0000_CTRL_CMD_SYSTEM_GET_FABRIC_STATUS", 4, P::Forward, F::Interconnect),
    cth(0x0000_013a, "NV0000_CTRL_CMD_SYSTEM_GET_P2P_CAPS_MATRIX", 1352, P::Bounce, F::Interconnect, named(P2P_GROUPS, IA)),
    ct(ctrl::NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2, "NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2", 1032, P::Forward, F::Client),
    ct(0x0000_01f0, "NV0000_CTRL_CMD_SYSTEM_GET_FEATURES", 4, P::Forward, F::Client),
    cth(ctrl::NV0000_CTRL_CMD_GPU_GET_ATTACHED_IDS, "NV0000_CTRL_CMD_GPU_GET_ATTACHED_IDS", 128, P::Rewritten, F::Client, C::GpuIds),
    cth(ctrl::NV0000_CTRL_CMD_GPU_GET_ID_INFO, "NV0000_CTRL_CMD_GPU_GET_ID_INFO", 40, P::Bounce, F::Client, named(ONE_ID, IA)),
    cth(0x0000_0204, "NV0000_CTRL_CMD_GPU_GET_DEVICE_IDS", 4, P::Rewritten, F::Client, C::DeviceIds),
    cth(ctrl::NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2, "NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2", 32, P::Bounce, F::Client, named(ONE_ID, IA)),
    cth(ctrl::NV0000_CTRL_CMD_GPU_GET_PROBED_IDS, "NV0000_CTRL_CMD_GPU_GET_PROBED_IDS", 384, P::Rewritten, F::Client, C::ProbedIds),
    cth(0x0000_0215, "NV0000_CTRL_CMD_GPU_ATTACH_IDS", 132, P::Bounce, F::Client, named(ID_LIST, IA)),
    cth(0x0000_0216, "NV0000_CTRL_CMD_GPU_DETACH_IDS", 128, P::Bounce, F::Client, named(ID_LIST, IA)),
    ct(0x0000_021b, "NV0000_CTRL_CMD_GPU_GET_PCI_INFO", 12, P::Forward, F::Client),
    cth(0x0000_0275, "NV0000_CTRL_CMD_GPU_GET_UUID_FROM_GPU_ID", 268, P::Bounce, F::Client, named(ONE_ID, abi::status::NV_ERR_OBJECT_NOT_FOUND)),
    ct(0x0000_0279, "NV0000_CTRL_CMD_GPU_QUERY_DRAIN_STATE", 12, P::Forward, F::Client),
    ct(0x0000_027b, "NV0000_CTRL_CMD_GPU_GET_MEMOP_ENABLE", 4, P::Forward, F::Client),
    cth(0x0000_0288, "NV0000_CTRL_CMD_GPU_GET_ACTIVE_DEVICE_IDS", 3076, P::Rewritten, F::Client, C::ActiveDevices),
    cth(0x0000_0289, "NV0000_CTRL_CMD_GPU_ASYNC_ATTACH_ID", 4, P::Bounce, F::Client, named(ONE_ID, IA)),
    // RM does nothing with the id and answers NV_OK for any (`client_resource.c:1735-1760`
    //   at 595.45.04): forwarded as written.
    ct(0x0000_0290, "NV0000_CTRL_CMD_GPU_WAIT_ATTACH_ID", 4, P::Forward, F::Client),
    ct(0x0000_0a04, "NV0000_CTRL_CMD_SYNC_GPU_BOOST_GROUP_INFO", 2244, P::Forward, F::Perf),
    ct(0x0000_0d01, "NV0000_CTRL_CMD_CLIENT_GET_ADDR_SPACE_TYPE", 12, P::Forward, F::Memory),
    ct(0x0000_0d04, "NV0000_CTRL_CMD_CLIENT_SET_INHERITED_SHARE_POLICY", 12, P::Forward, F::Sharing),
    // Export and import by fd: refused with NV_ERR_INVALID_PARAMETER, what RM answers an fd
    //   that is not an NVIDIA file (`os.c:2304-2309` at 595.45.04), as every fd a container
    //   holds of vgpu's is; forwarded, an import could name a real file passed in from outside
    //   (`docs/dispatch-table.md`).
    refused_with(IP, ct(0x0000_3d05, "NV0000_CTRL_CMD_OS_UNIX_EXPORT_OBJECT_TO_FD", 24, P::Denied, F::Sharing)),
    refused_with(IP, ct(0x0000_3d06, "NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECT_FROM_FD", 20, P::Denied, F::Sharing)),
    refused_with(IP, ct(0x0000_3d08, "NV0000_CTRL_CMD_OS_UNIX_GET_EXPORT_OBJECT_INFO", 80, P::Denied, F::Sharing)),
    refused_with(IP, ct(0x0000_3d0b, "NV0000_CTRL_CMD_OS_UNIX_EXPORT_OBJECTS_TO_FD", 2128, P::Denied, F::Sharing)),
    refused_with(IP, ct(0x0000_3d0c, "NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECTS_FROM_FD", 652, P::Denied, F::Sharing)),
    ct(ctrl::NV0041_CTRL_CMD_GET_SURFACE_INFO, "NV0041_CTRL_CMD_GET_SURFACE_INFO", 16, P::Forward, F::Memory),
    ct(0x0080_0201, "NV0080_CTRL_CMD_GPU_GET_CLASSLIST", 16, P::Forward, F::Device),
    cth(0x0080_0280, "NV0080_CTRL_CMD_GPU_GET_NUM_SUBDEVICES", 4, P::Forward, F::Device, C::Kernel),
    cth(0x0080_0288, "NV0080_CTRL_CMD_GPU_QUERY_SW_STATE_PERSISTENCE", 4, P::Forward, F::Device, C::Kernel),
    cth(0x0080_0289, "NV0080_CTRL_CMD_GPU_GET_VIRTUALIZATION_MODE", 8, P::Forward, F::Device, C::Kernel),
    // NVML asks both on opening a device (issue 37); refused, it reports
    // no compute processes at all (NVML_ERROR_NOT_SUPPORTED).
    cth(0x0080_028e, "NV0080_CTRL_CMD_GPU_GET_VGX_CAPS", 1, P::Forward, F::Device, C::Kernel),
    cth(ctrl::NV0080_CTRL_CMD_GPU_GET_CLASSLIST_V2, "NV0080_CTRL_CMD_GPU_GET_CLASSLIST_V2", 804, P::Forward, F::Device, C::Kernel),
    cth(0x0080_0294, "NV0080_CTRL_CMD_GPU_GET_BRAND_CAPS", 4, P::Forward, F::Device, C::Kernel),
    // The mode of one TSG's graphics context (`ctrl0080gr.h:204-206` at 595.45.04; the TSG's
    //   own form goes to its context, `g_kernel_channel_group_api_nvoc.h:517-518`): hChannelGroup
    //   must be the caller's TSG, else NV_ERR_OBJECT_NOT_FOUND, RM's status for a handle its
    //   client lacks (`rs_client.c:390-392`).
    cth(0x0080_1108, "NV0080_CTRL_CMD_GR_SET_TPC_PARTITION_MODE", 32, P::Bounce, F::Engine, checked(ParamCheck::OwnTsg { at: 0 }, abi::status::NV_ERR_OBJECT_NOT_FOUND)),
    cth(0x0080_1307, "NV0080_CTRL_CMD_FB_GET_CAPS_V2", 3, P::Forward, F::Memory, C::Kernel),
    cth(0x0080_1402, "NV0080_CTRL_CMD_HOST_GET_CAPS_V2", 3, P::Forward, F::Fifo, C::Kernel),
    ct(0x0080_170d, "NV0080_CTRL_CMD_FIFO_GET_CHANNELLIST", 24, P::Forward, F::Fifo),
    ct(0x0080_1806, "NV0080_CTRL_CMD_DMA_ADV_SCHED_GET_VA_CAPS", 192, P::Forward, F::Memory),
    cth(0x0080_180d, "NV0080_CTRL_CMD_DMA_GET_CAPS", 12, P::Forward, F::Memory, C::Kernel),
    ct(0x0080_1909, "NV0080_CTRL_CMD_PERF_CUDA_LIMIT_SET_CONTROL", 1, P::Forward, F::Perf),
    ct(0x0080_9909, "NV0080_CTRL_CMD_PERF_LEGACY_NON_PRIVILEGED_09", 0, P::Forward, F::Perf),
    ct(abi::rusd::REQUEST_DATA_POLL, "NV00DE_CTRL_CMD_REQUEST_DATA_POLL", 8, P::Denied, F::Perf),
    // Controls of the fabric classes, which vGPUs do not offer (no NVLink fabric): refused
    //   with NV_ERR_NOT_SUPPORTED, as the classes are (`docs/dispatch-table.md`).
    ct(0x00f8_0103, "NV00F8_CTRL_CMD_ATTACH_MEM", 2064, P::Denied, F::Interconnect),
    ct(0x00fd_0101, "NV00FD_CTRL_CMD_GET_INFO", 32, P::Denied, F::Interconnect),
    ct(0x00fd_0102, "NV00FD_CTRL_CMD_ATTACH_MEM", 40, P::Denied, F::Interconnect),
    ct(0x00fd_0104, "NV00FD_CTRL_CMD_ATTACH_GPU", 16, P::Denied, F::Interconnect),
    ct(0x00fd_0105, "NV00FD_CTRL_CMD_DETACH_MEM", 24, P::Denied, F::Interconnect),
    cth(ctrl::NV2080_CTRL_CMD_GPU_GET_INFO_V2, "NV2080_CTRL_CMD_GPU_GET_INFO_V2", 564, P::Forward, F::GpuInfo, C::Kernel),
    cth(0x2080_0110, "NV2080_CTRL_CMD_GPU_GET_NAME_STRING", 68, P::Forward, F::GpuInfo, C::Kernel),
    cth(0x2080_0111, "NV2080_CTRL_CMD_GPU_GET_SHORT_NAME_STRING", 64, P::Forward, F::GpuInfo, C::Kernel),
    cth(0x2080_0119, "NV2080_CTRL_CMD_GPU_GET_SIMULATION_INFO", 4, P::Forward, F::GpuInfo, C::Kernel),
    ct(0x2080_012f, "NV2080_CTRL_CMD_GPU_QUERY_ECC_STATUS", 1664, P::Forward, F::GpuInfo),
    cth(0x2080_0131, "NV2080_CTRL_CMD_GPU_QUERY_COMPUTE_MODE_RULES", 4, P::Forward, F::GpuInfo, C::Kernel),
    cth(0x2080_0133, "NV2080_CTRL_CMD_GPU_QUERY_ECC_CONFIGURATION", 8, P::Forward, F::GpuInfo, C::Kernel),
    cth(0x2080_013f, "NV2080_CTRL_CMD_GPU_GET_OEM_BOARD_INFO", 136, P::Forward, F::GpuInfo, C::Kernel),
    cth(0x2080_0142, "NV2080_CTRL_CMD_GPU_GET_ID", 4, P::Forward, F::GpuInfo, C::Kernel),
    // The GPU-wide reservation would let one tenant lock the others out in an exclusive compute
    //   mode, and libcuda's cuCtxCreate needs it (CUDA_ERROR_DEVICES_UNAVAILABLE when refused):
    //   each vGPU has its own, in compute mode RULES_NONE (`subdevice_ctrl_gpu_kernel.c:1998-2005,
    //   2063-2070` at 550.163.01).
    cth(ctrl::NV2080_CTRL_CMD_GPU_ACQUIRE_COMPUTE_MODE_RESERVATION, "NV2080_CTRL_CMD_GPU_ACQUIRE_COMPUTE_MODE_RESERVATION", 0, P::Served, F::GpuInfo, C::ComputeReservation),
    cth(0x2080_0146, "NV2080_CTRL_CMD_GPU_RELEASE_COMPUTE_MODE_RESERVATION", 0, P::Served, F::GpuInfo, C::ComputeReservation),
    cth(ctrl::NV2080_CTRL_CMD_GPU_GET_GID_INFO, "NV2080_CTRL_CMD_GPU_GET_GID_INFO", 268, P::Forward, F::GpuInfo, C::Kernel),
    cth(0x2080_014b, "NV2080_CTRL_CMD_GPU_GET_INFOROM_OBJECT_VERSION", 5, P::Forward, F::GpuInfo, C::Kernel),
    cth(0x2080_0156, "NV2080_CTRL_CMD_GPU_GET_INFOROM_IMAGE_VERSION", 16, P::Forward, F::GpuInfo, C::Kernel),
    ct(0x2080_0157, "NV2080_CTRL_CMD_GPU_QUERY_INFOROM_ECC_SUPPORT", 0, P::Forward, F::GpuInfo),
    cth(0x2080_0170, "NV2080_CTRL_CMD_GPU_GET_ENGINES_V2", 340, P::Forward, F::GpuInfo, C::Kernel),
    cth(0x2080_018b, "NV2080_CTRL_CMD_GPU_GET_ACTIVE_PARTITION_IDS", 40, P::Forward, F::GpuInfo, C::Kernel),
    cth(ctrl::NV2080_CTRL_CMD_GPU_GET_PIDS, "NV2080_CTRL_CMD_GPU_GET_PIDS", 3812, P::Served, F::GpuInfo, C::Processes),
    cth(ctrl::NV2080_CTRL_CMD_GPU_GET_PID_INFO, "NV2080_CTRL_CMD_GPU_GET_PID_INFO", 14408, P::Served, F::GpuInfo, C::Processes),
    ct(ctrl::NV2080_CTRL_CMD_GPU_SET_COMPUTE_POLICY_CONFIG, "NV2080_CTRL_CMD_GPU_SET_COMPUTE_POLICY_CONFIG", 8, P::Denied, F::GpuInfo),
    cth(ctrl::NV2080_CTRL_CMD_GPU_GET_COMPUTE_POLICY_CONFIG, "NV2080_CTRL_CMD_GPU_GET_COMPUTE_POLICY_CONFIG", 260, P::Forward, F::GpuInfo, C::Kernel),
    cth(0x2080_019f, "NV2080_CTRL_CMD_GPU_GET_SKYLINE_INFO", 400, P::Forward, F::GpuInfo, C::Kernel),
    cth(0x2080_01a3, "NV2080_CTRL_CMD_GET_GPU_FABRIC_PROBE_INFO", 56, P::Forward, F::Interconnect, C::Kernel),
    // Only the notifiers in NOTIFIERS, else NV_ERR_INVALID_ARGUMENT, RM's status for a bad
    //   index (`subdevice_ctrl_event_kernel.c:95-99` at 595.45.04).
    cth(0x2080_0301, "NV2080_CTRL_CMD_EVENT_SET_NOTIFICATION", 20, P::Bounce, F::Event, checked(ParamCheck::OneOf { at: 0, allowed: NOTIFIERS }, IA)),
    cth(0x2080_0403, "NV2080_CTRL_CMD_TIMER_GET_TIME", 8, P::Forward, F::Perf, C::Kernel),
    cth(0x2080_0406, "NV2080_CTRL_CMD_TIMER_GET_GPU_CPU_TIME_CORRELATION_INFO", 264, P::Forward, F::Perf, C::Kernel),
    ct(0x2080_0407, "NV2080_CTRL_CMD_TIMER_SET_GR_TICK_FREQ", 1, P::Forward, F::Perf),
    // Only the GET opcodes, else NV_ERR_INVALID_ARGUMENT, RM's status for a list it cannot
    //   run (`subdevice_ctrl_gpu_kernel.c:4001-4003` at 595.45.04).
    cth(0x2080_0513, "NV2080_CTRL_CMD_THERMAL_SYSTEM_EXECUTE_V2", 1432, P::Bounce, F::Perf, checked(ParamCheck::Instructions { allowed: THERMAL_GETS }, IA)),
    ct(0x2080_0802, "NV2080_CTRL_CMD_BIOS_GET_INFO", 16, P::Forward, F::GpuInfo),
    cth(ctrl::NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS, "NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS", 536, P::Rewritten, F::Fifo, C::DisableChannels),
    ct(0x2080_1201, "NV2080_CTRL_CMD_GR_GET_INFO", 32, P::Forward, F::Engine),
    // WFI compute preemption would let a long kernel outlast the vGPU's window: refused
    //   (`ControlHandler::Preemption`).
    cth(ctrl::NV2080_CTRL_CMD_GR_SET_CTXSW_PREEMPTION_MODE, "NV2080_CTRL_CMD_GR_SET_CTXSW_PREEMPTION_MODE", 32, P::Rewritten, F::Engine, C::Preemption),
    cth(0x2080_1218, "NV2080_CTRL_CMD_GR_GET_CTX_BUFFER_SIZE", 16, P::Forward, F::Engine, C::Kernel),
    ct(0x2080_121b, "NV2080_CTRL_CMD_GR_GET_GLOBAL_SM_ORDER", 9240, P::Forward, F::Engine),
    cth(0x2080_1227, "NV2080_CTRL_CMD_GR_GET_CAPS_V2", 48, P::Forward, F::Engine, C::Kernel),
    cth(0x2080_122a, "NV2080_CTRL_CMD_GR_GET_GPC_MASK", 24, P::Forward, F::Engine, C::Kernel),
    cth(0x2080_122b, "NV2080_CTRL_CMD_GR_GET_TPC_MASK", 24, P::Forward, F::Engine, C::Kernel),
    cth(0x2080_1230, "NV2080_CTRL_CMD_GR_GET_SM_ISSUE_RATE_MODIFIER", 32, P::Forward, F::Engine, C::Kernel),
    ct(0x2080_123c, "NV2080_CTRL_CMD_GR_GET_SM_ISSUE_RATE_MODIFIER_V2", 2044, P::Forward, F::Engine),
    cth(ctrl::NV2080_CTRL_CMD_FB_GET_INFO, "NV2080_CTRL_CMD_FB_GET_INFO", 16, P::Rewritten, F::Memory, C::FbInfo),
    cth(ctrl::NV2080_CTRL_CMD_FB_GET_INFO_V2, "NV2080_CTRL_CMD_FB_GET_INFO_V2", 1028, P::Rewritten, F::Memory, C::FbInfo),
    // The real FB layout and size: refused (CUDA and nvidia-smi do not send it;
    //   `docs/dispatch-table.md`).
    ct(ctrl::NV2080_CTRL_CMD_FB_GET_FB_REGION_INFO, "NV2080_CTRL_CMD_FB_GET_FB_REGION_INFO", 904, P::Denied, F::Memory),
    cth(0x2080_1357, "NV2080_CTRL_CMD_FB_QUERY_DRAM_ENCRYPTION_INFOROM_SUPPORT", 4, P::Forward, F::Memory, C::Kernel),
    cth(0x2080_1358, "NV2080_CTRL_CMD_FB_QUERY_DRAM_ENCRYPTION_STATUS", 4, P::Forward, F::Memory, C::Kernel),
    cth(0x2080_1701, "NV2080_CTRL_CMD_MC_GET_ARCH_INFO", 16, P::Forward, F::GpuInfo, C::Kernel),
    ct(0x2080_1702, "NV2080_CTRL_CMD_MC_SERVICE_INTERRUPTS", 4, P::Forward, F::Fifo),
    cth(0x2080_1801, "NV2080_CTRL_CMD_BUS_GET_PCI_INFO", 16, P::Forward, F::Interconnect, C::Kernel),
    ct(0x2080_1802, "NV2080_CTRL_CMD_BUS_GET_INFO", 16, P::Forward, F::Interconnect),
    cth(0x2080_1803, "NV2080_CTRL_CMD_BUS_GET_PCI_BAR_INFO", 200, P::Forward, F::Interconnect, C::Kernel),
    cth(0x2080_1823, "NV2080_CTRL_CMD_BUS_GET_INFO_V2", 420, P::Forward, F::Interconnect, C::Kernel),
    cth(0x2080_182a, "NV2080_CTRL_CMD_BUS_GET_PCIE_SUPPORTED_GPU_ATOMICS", 112, P::Forward, F::Interconnect, C::Kernel),
    cth(0x2080_182b, "NV2080_CTRL_CMD_BUS_GET_C2C_INFO", 28, P::Forward, F::Interconnect, C::Kernel),
    // A boost "until cleared" becomes 1 s, as RM makes it where it cannot clear a boost at
    //   the client's exit (`kern_perf_boost.c:69-84` at 595.45.04); a finite one past
    //   DURATION_MAX is NV_ERR_INVALID_ARGUMENT, as RM answers there (`:54-61`).
    cth(0x2080_200a, "NV2080_CTRL_CMD_PERF_BOOST", 8, P::Rewritten, F::Perf, checked(ParamCheck::Duration { at: 4, infinite: 0xffff_ffff, to: 1, max: 3600 }, IA)),
    cth(0x2080_2068, "NV2080_CTRL_CMD_PERF_GET_CURRENT_PSTATE", 4, P::Forward, F::Perf, C::Kernel),
    // Samples of the whole GPU with other tenants' processes: refused with NOT_SUPPORTED, RM's
    //   answer where it has no figure (`kern_perf_ctrl.c:63-67,104-107` at 595.45.04), which
    //   nvidia-smi shows as N/A; the vGPU's own busy time is in sysfs (`compute_busy_us`).
    ct(0x2080_2096, "NV2080_CTRL_CMD_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2", 55888, P::Denied, F::Perf),
    cth(0x2080_2209, "NV2080_CTRL_CMD_RC_GET_WATCHDOG_INFO", 4, P::Forward, F::Debugging, C::Kernel),
    ct(0x2080_220c, "NV2080_CTRL_CMD_RC_RELEASE_WATCHDOG_REQUESTS", 0, P::Forward, F::Debugging),
    // Pauses the GPU-wide hang watchdog for every tenant: refused with NOT_SUPPORTED, RM's
    //   answer where it has no watchdog (`kernel_rc_watchdog_ctrl.c:91` at 595.45.04).
    ct(0x2080_2210, "NV2080_CTRL_CMD_RC_SOFT_DISABLE_WATCHDOG", 0, P::Denied, F::Debugging),
    cth(0x2080_2a03, "NV2080_CTRL_CMD_CE_GET_CAPS_V2", 8, P::Forward, F::Engine, C::Kernel),
    cth(0x2080_2a0a, "NV2080_CTRL_CMD_CE_GET_ALL_CAPS", 136, P::Forward, F::Engine, C::Kernel),
    cth(0x2080_3001, "NV2080_CTRL_CMD_NVLINK_GET_NVLINK_CAPS", 48, P::Forward, F::Interconnect, C::Kernel),
    ct(0x2080_3002, "NV2080_CTRL_CMD_NVLINK_GET_NVLINK_STATUS", 13864, P::Forward, F::Interconnect),
    cth(0x2080_3125, "NV2080_CTRL_CMD_FLCN_GET_CTX_BUFFER_SIZE", 16, P::Forward, F::Engine, C::Kernel),
    cth(0x2080_3601, "NV2080_CTRL_CMD_GSP_GET_FEATURES", 72, P::Forward, F::GpuInfo, C::Kernel),
    ct(0x2080_3801, "NV2080_CTRL_CMD_GRMGR_GET_GR_FS_INFO", 1928, P::Forward, F::Engine),
    // GSS-legacy controls libcuda asks in cuInit (550.163.01's 0x59, 535.261.03's 0x61): no open
    //   header or export table names them; RM hands a command with RM_GSS_LEGACY_MASK (0x8000) to
    //   GSP before its control table, checking no size (`rmapi_deprecated_control.c:143-148`,
    //   `rmapi_gss_legacy_control.c:60-151` at 550.163.01), so the row has none
    //   (`docs/dispatch-table.md`).
    ct(0x2080_8159, "NV2080_CTRL_CMD_GPU_LEGACY_NON_PRIVILEGED_59", 0, P::Forward, F::GpuInfo),
    ct(0x2080_8161, "NV2080_CTRL_CMD_GPU_LEGACY_NON_PRIVILEGED_61", 0, P::Forward, F::GpuInfo),
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

/// NVC36F_CTRL_GET_CLASS_ENGINEID, the Volta channel classes' number for
/// NV906F_CTRL_GET_CLASS_ENGINEID (`ctrlc36f.h:65-74` at 550.163.01), which
/// RM's channels export beside 0x906f0101 up to 550 and not from 570
/// (`g_kernel_channel_nvoc.c`); libcuda 550.163.01 and 535.261.03 ask it in
/// `cuCtxCreate`. Forwarded as 0x906f0101 is: the class and engine of an
/// object in the caller's own channel, which RM looks up in the channel's
/// client.
pub const NVC36F_GET_CLASS_ENGINEID: ControlRow = ct(
    0xc36f_0101,
    "NVC36F_CTRL_GET_CLASS_ENGINEID",
    16,
    P::Forward,
    F::Fifo,
);

/// `rows` (in number order) with `row` added in its place: a control an
/// older release has that the newer ones do not. `M` must be `N + 1`; a
/// number already in `rows` fails to compile.
pub const fn with_control<const N: usize, const M: usize>(
    rows: [ControlRow; N],
    row: ControlRow,
) -> [ControlRow; M] {
    assert!(M == N + 1, "with_control: M must be N + 1");
    let mut out = [row; M];
    let (mut i, mut o) = (0, 0);
    let mut placed = false;
    while i < N {
        assert!(
            rows[i].cmd != row.cmd,
            "with_control: the control is in the table"
        );
        if !placed && row.cmd < rows[i].cmd {
            out[o] = row;
            o += 1;
            placed = true;
        }
        out[o] = rows[i];
        o += 1;
        i += 1;
    }
    if !placed {
        out[o] = row;
    }
    out
}

keyed_rows!(ControlRow, cmd: u32, control_row_in, controls_in_order, without_controls);
sized_rows!(with_params_sizes, ControlRow, cmd);

// The table is in strictly increasing number order: what the lookup relies
// on, and no number twice.
const _: () = assert!(controls_in_order(CONTROLS), "CONTROLS out of order");

/// What vgpu does with control `cmd`: its row's policy, [`Policy::Denied`]
/// for a control the table lacks (default deny).
pub const fn control_policy(cmd: u32) -> Policy {
    match control_row(cmd) {
        Some(r) => r.policy,
        None => Policy::Denied,
    }
}
