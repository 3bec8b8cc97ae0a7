// SPDX-License-Identifier: GPL-2.0

//! What the double's RM serves, in one table, as `src/nv/table.rs` is for
//! vgpu: each escape of the NVIDIA nodes, each class RM_ALLOC makes and
//! each control RM_CONTROL answers, with the handler that serves it. The
//! dispatchers (`mod.rs` for escapes, `alloc.rs` for classes, `control.rs`
//! for controls) look a call up here once and call the row's handler; what
//! is not here is refused (an escape `EINVAL`, a class
//! NV_ERR_INVALID_CLASS, a control NV_ERR_NOT_SUPPORTED).

use kernel::{prelude::*, sync::ArcBorrow};

use super::call::{Ctl, NewObject};
use super::classes::is_engine_class;
use super::ctxsetup;
use super::cuda;
use super::gpuinfo;
use super::gpumgr;
use super::grctx;
use super::gss;
use super::state::Driver;
use super::subdevice;
use crate::base::{ObjKind, StatusResult};
use crate::file::NvFile;
use crate::nv::abi::{self, class, ctrl};
use crate::nv::ioctl::Escape;
use crate::settings;

/// An escape's handler: the file, and the params block (copied in; copied
/// back out on `Ok`). OS-level failures are `Err`; RM-level ones go into
/// the block's status field.
pub(crate) type EscapeFn = fn(&Driver, &ArcBorrow<'_, NvFile>, &mut [u8]) -> Result;

/// An escape the double serves.
pub(crate) struct EscapeRow {
    pub(crate) escape: Escape,
    pub(crate) serve: EscapeFn,
}

const fn esc(escape: Escape, serve: EscapeFn) -> EscapeRow {
    EscapeRow { escape, serve }
}

/// The escapes, by the handler that serves each. Known escapes not here
/// are not modelled (`EINVAL`).
static ESCAPES: [EscapeRow; 21] = [
    esc(Escape::CheckVersionStr, Driver::check_version),
    esc(Escape::CardInfo, Driver::card_info),
    esc(Escape::RegisterFd, Driver::register_fd),
    esc(Escape::RmAlloc, Driver::ioctl_alloc),
    esc(Escape::RmFree, Driver::ioctl_free),
    esc(Escape::RmControl, Driver::ioctl_control),
    esc(Escape::RmVidHeapControl, Driver::vid_heap),
    esc(Escape::RmAllocMemory, Driver::alloc_memory),
    esc(Escape::RmMapMemory, Driver::map_memory),
    esc(Escape::RmUnmapMemory, Driver::unmap_memory),
    esc(Escape::RmMapMemoryDma, Driver::map_memory_dma),
    esc(Escape::RmUnmapMemoryDma, Driver::unmap_memory_dma),
    esc(
        Escape::RmUpdateDeviceMappingInfo,
        Driver::update_device_mapping_info,
    ),
    esc(Escape::RmDupObject, Driver::dup),
    esc(Escape::AllocOsEvent, Driver::alloc_os_event),
    esc(Escape::FreeOsEvent, Driver::free_os_event),
    esc(Escape::SysParams, Driver::sys_params),
    esc(Escape::WaitOpenComplete, Driver::wait_open_complete),
    esc(Escape::NumaInfo, Driver::numa_info),
    esc(Escape::AttachGpusToFd, Driver::accept),
    esc(Escape::StatusCode, Driver::accept),
];

/// The row of escape `e`.
pub(crate) fn escape(e: Escape) -> Option<&'static EscapeRow> {
    ESCAPES.iter().find(|r| r.escape == e)
}

/// Which classes a row serves.
pub(crate) enum Classes {
    /// These.
    Of(&'static [u32]),
    /// Those of a family of the claimed release's class table.
    Where(fn(u32) -> bool),
}

/// The size of a class's alloc params.
#[derive(Clone, Copy)]
pub(crate) enum Size {
    /// This many bytes at every release.
    Fixed(usize),
    /// The class's row's in the claimed release, else this (595.45.04's).
    Release(usize),
}

impl Size {
    /// The bytes RM copies for class `c`.
    pub(crate) fn bytes(self, c: u32) -> usize {
        match self {
            Size::Fixed(n) => n,
            Size::Release(n) => class_size(c, n),
        }
    }
}

/// How RM takes a class's alloc params: `RS_REQUIRED`, `RS_OPTIONAL` or
/// `RS_NONE` of the class's own params struct (`resource_list.h` at
/// 595.45.04).
#[derive(Clone, Copy)]
pub(crate) enum Params {
    /// A pointer is required; RM copies this many bytes.
    Required(Size),
    /// A NULL pointer means the class's defaults; otherwise RM copies this
    /// many bytes.
    Optional(Size),
    /// No params; the pointer is not read.
    None,
}

/// The size of class `c`'s alloc params in the claimed release (its row of
/// the release's class table; older releases' blocks are shorter where a
/// field was added at the end), else `size`, 595.45.04's.
fn class_size(c: u32, size: usize) -> usize {
    settings::abi()
        .class_row(c)
        .map_or(size, |r| r.params_size as usize)
}

/// A class's handler: makes the object, returns what it is.
pub(crate) type ClassFn = fn(&Driver, &mut NewObject<'_>) -> StatusResult<ObjKind>;

/// What allocating a class makes.
pub(crate) enum New {
    /// A client (`alloc.rs`), before any client is looked up.
    Client,
    /// An object in a client, made by this handler (`classes.rs`).
    Object(ClassFn),
}

/// A class the double allocates.
pub(crate) struct ClassRow {
    pub(crate) classes: Classes,
    pub(crate) params: Params,
    pub(crate) new: New,
}

/// The classes, in the order they are matched, with how RM takes their
/// alloc params (`RS_REQUIRED`, `RS_OPTIONAL` or `RS_NONE`: the
/// `resource_list.h` lines at 595.45.04 in the comments).
static CLASSES: [ClassRow; 17] = {
    use Params::{Optional, Required};
    use Size::{Fixed, Release};
    [
        // RS_OPTIONAL(NvHandle) (64, 75, 85).
        ClassRow {
            classes: Classes::Of(&[
                class::NV01_ROOT,
                class::NV01_ROOT_NON_PRIV,
                class::NV01_ROOT_CLIENT,
            ]),
            params: Optional(Fixed(4)),
            new: New::Client,
        },
        // RS_OPTIONAL(NV0080_ALLOC_PARAMETERS) (175).
        ClassRow {
            classes: Classes::Of(&[class::NV01_DEVICE_0]),
            params: Optional(Fixed(abi::DeviceAllocParams::SIZE)),
            new: New::Object(Driver::new_device),
        },
        // RS_OPTIONAL(NV2080_ALLOC_PARAMETERS) (449).
        ClassRow {
            classes: Classes::Of(&[class::NV20_SUBDEVICE_0]),
            params: Optional(Fixed(abi::SubdeviceAllocParams::SIZE)),
            new: New::Object(Driver::new_subdevice),
        },
        // RS_REQUIRED(NV_MEMORY_ALLOCATION_PARAMS) (505, 526).
        ClassRow {
            classes: Classes::Of(&[class::NV01_MEMORY_LOCAL_USER, class::NV01_MEMORY_SYSTEM]),
            params: Required(Release(abi::MemoryAllocationParams::SIZE)),
            new: New::Object(Driver::new_memory),
        },
        // RS_REQUIRED(NV_MEMORY_ALLOCATION_PARAMS) (537).
        ClassRow {
            classes: Classes::Of(&[class::NV50_MEMORY_VIRTUAL]),
            params: Required(Release(abi::MemoryAllocationParams::SIZE)),
            new: New::Object(Driver::new_gpu_virtual_memory),
        },
        // RS_REQUIRED(NV_MEMORY_VIRTUAL_ALLOCATION_PARAMS) (547): offset,
        // limit, hVASpace, 24 bytes (`cl0070.h:66-70`).
        ClassRow {
            classes: Classes::Of(&[class::NV01_MEMORY_VIRTUAL]),
            params: Required(Fixed(24)),
            new: New::Object(Driver::new_virtual_memory),
        },
        // RS_REQUIRED(NV_VASPACE_ALLOCATION_PARAMETERS) (693).
        ClassRow {
            classes: Classes::Of(&[class::FERMI_VASPACE_A]),
            params: Required(Release(abi::VaSpaceAllocParams::SIZE)),
            new: New::Object(Driver::new_vaspace),
        },
        // RS_REQUIRED(NV_CTXSHARE_ALLOCATION_PARAMETERS) (416).
        ClassRow {
            classes: Classes::Of(&[class::FERMI_CONTEXT_SHARE_A]),
            params: Required(Fixed(abi::CtxShareAllocParams::SIZE)),
            new: New::Object(Driver::new_context_share),
        },
        // RS_REQUIRED(NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS) (484).
        ClassRow {
            classes: Classes::Of(&[class::KEPLER_CHANNEL_GROUP_A]),
            params: Required(Fixed(abi::ChannelGroupAllocParams::SIZE)),
            new: New::Object(Driver::new_channel_group),
        },
        // RS_REQUIRED(NV_CHANNEL_ALLOC_PARAMS) (293-392).
        ClassRow {
            classes: Classes::Where(class::is_channel_class),
            params: Required(Release(abi::ChannelAllocParams::SIZE)),
            new: New::Object(Driver::new_channel),
        },
        // RS_NONE (863, 874).
        ClassRow {
            classes: Classes::Of(&[class::TURING_USERMODE_A, class::AMPERE_USERMODE_A]),
            params: Params::None,
            new: New::Object(Driver::new_usermode),
        },
        // RS_OPTIONAL(NV_HOPPER_USERMODE_A_PARAMS) (885).
        ClassRow {
            classes: Classes::Of(&[class::HOPPER_USERMODE_A]),
            params: Optional(Fixed(abi::UsermodeAllocParams::SIZE)),
            new: New::Object(Driver::new_usermode),
        },
        // RS_REQUIRED(NV00DE_ALLOC_PARAMETERS) (845): 8 bytes, 4 before 550.
        ClassRow {
            classes: Classes::Of(&[abi::rusd::CLASS]),
            params: Required(Release(8)),
            new: New::Object(Driver::new_user_shared_data),
        },
        // RS_OPTIONAL(NV2081_ALLOC_PARAMETERS) (390 at 550.163.01).
        ClassRow {
            classes: Classes::Of(&[gpuinfo::NV2081_BINAPI]),
            params: Optional(Fixed(4)),
            new: New::Object(Driver::new_binapi),
        },
        // RS_REQUIRED(NV0005_ALLOC_PARAMETERS) (1531-1539 at 550.163.01):
        // 24 bytes (`cl0005.h`).
        ClassRow {
            classes: Classes::Of(&[class::NV01_EVENT_OS_EVENT]),
            params: Required(Fixed(24)),
            new: New::Object(Driver::new_os_event),
        },
        // RS_REQUIRED(NV83DE_ALLOC_PARAMETERS): 12 bytes (`cl83de.h:51-55`).
        ClassRow {
            classes: Classes::Of(&[0x83de]),
            params: Required(Fixed(12)),
            new: New::Object(Driver::new_debugger),
        },
        // RS_OPTIONAL(NV_GR_ALLOCATION_PARAMETERS) (2063) for compute,
        // RS_OPTIONAL(NVB0B5_ALLOCATION_PARAMETERS) (1594) for copy: the
        // release's row's size.
        ClassRow {
            classes: Classes::Where(is_engine_class),
            params: Optional(Release(0)),
            new: New::Object(Driver::new_engine_object),
        },
    ]
};

/// The row of class `c`.
pub(crate) fn class(c: u32) -> Option<&'static ClassRow> {
    CLASSES.iter().find(|r| match r.classes {
        Classes::Of(list) => list.contains(&c),
        Classes::Where(f) => f(c),
    })
}

/// What a control is on.
pub(crate) enum On {
    /// The client itself (its handle as the object).
    Client,
    /// A device.
    Device,
    /// A subdevice.
    Subdevice,
    /// A memory object.
    Memory,
    /// A TSG.
    Tsg,
    /// A channel.
    Channel,
    /// An object the double does not model (`ObjKind::Other`).
    Other,
}

impl On {
    /// Whether an object of kind `kind` (`None`: the client) is one.
    fn fits(&self, kind: Option<ObjKind>) -> bool {
        matches!(
            (self, kind),
            (On::Client, None)
                | (On::Device, Some(ObjKind::Device { .. }))
                | (On::Subdevice, Some(ObjKind::Subdevice { .. }))
                | (On::Memory, Some(ObjKind::Memory { .. }))
                | (On::Tsg, Some(ObjKind::Tsg { .. }))
                | (On::Channel, Some(ObjKind::Channel { .. }))
                | (On::Other, Some(ObjKind::Other))
        )
    }
}

/// A control's handler.
pub(crate) type ControlFn = fn(&Driver, Ctl<'_>) -> StatusResult;

/// A control the double answers, on one kind of object.
pub(crate) struct ControlRow {
    pub(crate) cmd: u32,
    pub(crate) on: On,
    pub(crate) serve: ControlFn,
}

const fn row(cmd: u32, on: On, serve: ControlFn) -> ControlRow {
    ControlRow { cmd, on, serve }
}

/// The controls. A control on another kind of object than its row's is
/// NV_ERR_NOT_SUPPORTED, as one not here.
static CONTROLS: [ControlRow; 83] = [
    // NV0000: on the client (`system.rs`).
    row(
        ctrl::NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2,
        On::Client,
        Driver::build_version_v2,
    ),
    row(
        ctrl::NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION,
        On::Client,
        Driver::build_version_v1,
    ),
    row(
        ctrl::NV0000_CTRL_CMD_GPU_GET_PROBED_IDS,
        On::Client,
        Driver::probed_ids,
    ),
    row(
        ctrl::NV0000_CTRL_CMD_SYSTEM_GET_CPU_INFO,
        On::Client,
        Driver::cpu_info,
    ),
    row(
        ctrl::NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2,
        On::Client,
        Driver::id_info_v2,
    ),
    row(
        ctrl::NV0000_CTRL_CMD_GPU_GET_ATTACHED_IDS,
        On::Client,
        Driver::attached_ids,
    ),
    // NV0000: what libcuda asks beside NVML (`cuda.rs`).
    row(
        cuda::CLIENT_SET_INHERITED_SHARE_POLICY,
        On::Client,
        Driver::client_set_inherited_share_policy,
    ),
    row(
        cuda::SYSTEM_GET_FEATURES,
        On::Client,
        Driver::system_get_features,
    ),
    row(
        cuda::SYNC_GPU_BOOST_GROUP_INFO,
        On::Client,
        Driver::sync_gpu_boost_group_info,
    ),
    row(
        cuda::GPU_GET_NUM_SUBDEVICES,
        On::Device,
        Driver::gpu_get_num_subdevices,
    ),
    row(cuda::HOST_GET_CAPS_V2, On::Device, Driver::host_get_caps_v2),
    row(
        cuda::BUS_GET_INFO_V2,
        On::Subdevice,
        Driver::bus_get_info_v2,
    ),
    row(cuda::GR_GET_INFO, On::Subdevice, Driver::gr_get_info),
    row(
        cuda::GR_GET_GLOBAL_SM_ORDER,
        On::Subdevice,
        Driver::gr_get_global_sm_order,
    ),
    row(
        cuda::GR_GET_SM_ISSUE_RATE_MODIFIER,
        On::Subdevice,
        Driver::gr_get_sm_issue_rate_modifier,
    ),
    row(
        cuda::CE_GET_ALL_CAPS,
        On::Subdevice,
        Driver::ce_get_all_caps,
    ),
    row(
        cuda::GR_GET_GPC_MASK,
        On::Subdevice,
        Driver::gr_get_gpc_mask,
    ),
    row(
        cuda::GR_GET_TPC_MASK,
        On::Subdevice,
        Driver::gr_get_tpc_mask,
    ),
    row(
        cuda::CLIENT_GET_ADDR_SPACE_TYPE,
        On::Client,
        Driver::client_get_addr_space_type,
    ),
    row(cuda::GR_GET_CAPS_V2, On::Subdevice, Driver::gr_get_caps_v2),
    row(cuda::FB_GET_CAPS_V2, On::Device, Driver::fb_get_caps_v2),
    row(
        cuda::GPU_GET_SIMULATION_INFO,
        On::Subdevice,
        Driver::gpu_get_simulation_info,
    ),
    row(
        cuda::GPU_GET_MEMOP_ENABLE,
        On::Client,
        Driver::gpu_get_memop_enable,
    ),
    row(
        cuda::GPU_GET_ENGINES_V2,
        On::Subdevice,
        Driver::gpu_get_engines_v2,
    ),
    row(
        cuda::BUS_GET_PCI_BAR_INFO,
        On::Subdevice,
        Driver::bus_get_pci_bar_info,
    ),
    row(
        cuda::BUS_GET_PCIE_SUPPORTED_GPU_ATOMICS,
        On::Subdevice,
        Driver::pcie_supported_gpu_atomics,
    ),
    row(
        cuda::GSP_GET_FEATURES,
        On::Subdevice,
        Driver::gsp_get_features,
    ),
    row(
        cuda::GPU_GET_SHORT_NAME_STRING,
        On::Subdevice,
        Driver::gpu_get_short_name_string,
    ),
    row(
        cuda::GPU_QUERY_COMPUTE_MODE_RULES,
        On::Subdevice,
        Driver::gpu_query_compute_mode_rules,
    ),
    row(
        cuda::FIFO_GET_CHANNELLIST,
        On::Device,
        Driver::fifo_get_channellist,
    ),
    row(
        cuda::GPU_ACQUIRE_COMPUTE_MODE_RESERVATION,
        On::Subdevice,
        Driver::gpu_acquire_compute_mode_reservation,
    ),
    row(
        cuda::GPU_RELEASE_COMPUTE_MODE_RESERVATION,
        On::Subdevice,
        Driver::gpu_release_compute_mode_reservation,
    ),
    row(
        cuda::RC_RELEASE_WATCHDOG_REQUESTS,
        On::Subdevice,
        Driver::rc_watchdog_request,
    ),
    row(
        cuda::RC_SOFT_DISABLE_WATCHDOG,
        On::Subdevice,
        Driver::rc_watchdog_request,
    ),
    row(
        subdevice::MC_SERVICE_INTERRUPTS,
        On::Subdevice,
        Driver::mc_service_interrupts,
    ),
    row(ctxsetup::RESET_CHANNEL, On::Channel, Driver::reset_channel),
    row(
        ctxsetup::DEBUG_SET_EXCEPTION_MASK,
        On::Other,
        Driver::debug_set_exception_mask,
    ),
    row(
        ctxsetup::PERF_CUDA_LIMIT_SET_CONTROL,
        On::Device,
        Driver::perf_cuda_limit,
    ),
    // RM hands these to GSP before its control table (`cuda.rs`).
    row(gss::GSS_LEGACY_8159, On::Subdevice, Driver::gss_legacy),
    row(gss::GSS_LEGACY_8161, On::Subdevice, Driver::gss_legacy),
    row(gss::GSS_LEGACY_PERF_9909, On::Device, Driver::gss_legacy),
    // NV0000: RM's GPU manager, as NVML asks it (`gpumgr.rs`).
    row(gpumgr::GPU_GET_PCI_INFO, On::Client, Driver::gpu_pci_info),
    row(
        gpumgr::GPU_QUERY_DRAIN_STATE,
        On::Client,
        Driver::gpu_query_drain_state,
    ),
    row(gpumgr::GPU_ATTACH_IDS, On::Client, Driver::gpu_attach_ids),
    row(gpumgr::GPU_DETACH_IDS, On::Client, Driver::gpu_detach_ids),
    row(gpumgr::GPU_GET_ID_INFO, On::Client, Driver::gpu_id_info_v1),
    row(
        gpumgr::GPU_GET_INIT_STATUS,
        On::Client,
        Driver::gpu_init_status,
    ),
    row(
        gpumgr::GPU_ASYNC_ATTACH_ID,
        On::Client,
        Driver::gpu_async_attach_id,
    ),
    row(
        gpumgr::GPU_WAIT_ATTACH_ID,
        On::Client,
        Driver::gpu_wait_attach_id,
    ),
    // NV0080 and NV2080 NVML asks opening a device (`gpuinfo.rs`).
    row(
        gpuinfo::GPU_GET_VIRTUALIZATION_MODE,
        On::Device,
        Driver::virtualization_mode,
    ),
    row(gpuinfo::GPU_GET_VGX_CAPS, On::Device, Driver::vgx_caps),
    row(
        gpuinfo::GPU_GET_CLASSLIST_V2,
        On::Device,
        Driver::classlist_v2,
    ),
    row(gpuinfo::GPU_GET_BRAND_CAPS, On::Device, Driver::brand_caps),
    row(
        gpuinfo::GPU_GET_NAME_STRING,
        On::Subdevice,
        Driver::name_string,
    ),
    row(gpuinfo::GPU_GET_INFO_V2, On::Subdevice, Driver::gpu_info_v2),
    row(
        gpuinfo::BUS_GET_PCI_INFO,
        On::Subdevice,
        Driver::bus_pci_info,
    ),
    row(
        gpuinfo::MC_GET_ARCH_INFO,
        On::Subdevice,
        Driver::mc_arch_info,
    ),
    row(
        gpuinfo::TIMER_GET_GPU_CPU_TIME_CORRELATION_INFO,
        On::Subdevice,
        Driver::time_correlation,
    ),
    row(0x0000_0204, On::Client, Driver::device_ids),
    row(0x0000_0275, On::Client, Driver::uuid_from_gpu_id),
    row(0x0000_0288, On::Client, Driver::active_device_ids),
    // NV2080: on a subdevice (`subdevice.rs`, `pids.rs`).
    row(
        ctrl::NV2080_CTRL_CMD_FB_GET_INFO_V2,
        On::Subdevice,
        Driver::fb_get_info_v2,
    ),
    row(
        ctrl::NV2080_CTRL_CMD_FB_GET_INFO,
        On::Subdevice,
        Driver::fb_get_info,
    ),
    row(
        ctrl::NV2080_CTRL_CMD_GPU_GET_GID_INFO,
        On::Subdevice,
        Driver::gid_info,
    ),
    row(
        abi::rusd::REQUEST_DATA_POLL,
        On::Other,
        Driver::rusd_request_data_poll,
    ),
    row(0x2080_200a, On::Subdevice, Driver::perf_boost),
    row(
        ctrl::NV2080_CTRL_CMD_GPU_GET_PIDS,
        On::Subdevice,
        Driver::get_pids,
    ),
    row(
        ctrl::NV2080_CTRL_CMD_GPU_GET_PID_INFO,
        On::Subdevice,
        Driver::get_pid_info,
    ),
    // NV0041: on memory (`memory.rs`).
    row(
        ctrl::NV0041_CTRL_CMD_GET_SURFACE_INFO,
        On::Memory,
        Driver::surface_info,
    ),
    // NVA06C, NVA06F, NVC36F, NV2080 FIFO: scheduling (`fifo.rs`).
    row(
        ctrl::NVA06C_CTRL_CMD_GPFIFO_SCHEDULE,
        On::Tsg,
        Driver::gpfifo_schedule,
    ),
    row(
        ctrl::NVA06F_CTRL_CMD_GPFIFO_SCHEDULE,
        On::Channel,
        Driver::gpfifo_schedule,
    ),
    row(
        ctrl::NVA06C_CTRL_CMD_SET_TIMESLICE,
        On::Tsg,
        Driver::set_timeslice,
    ),
    row(
        ctrl::NVA06C_CTRL_CMD_GET_TIMESLICE,
        On::Tsg,
        Driver::get_timeslice,
    ),
    row(ctrl::NVA06C_CTRL_CMD_PREEMPT, On::Tsg, Driver::preempt),
    row(
        ctrl::NVA06C_CTRL_CMD_SET_INTERLEAVE_LEVEL,
        On::Tsg,
        Driver::set_interleave_level,
    ),
    row(
        ctrl::NVA06C_CTRL_CMD_MAKE_REALTIME,
        On::Tsg,
        Driver::make_realtime,
    ),
    row(
        ctrl::NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN,
        On::Channel,
        Driver::work_submit_token,
    ),
    row(
        super::fifo::NVC36F_CTRL_GET_CLASS_ENGINEID,
        On::Channel,
        Driver::get_class_engineid,
    ),
    row(
        ctrl::NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS,
        On::Subdevice,
        Driver::disable_channels,
    ),
    row(
        ctrl::NV2080_CTRL_CMD_GR_SET_CTXSW_PREEMPTION_MODE,
        On::Subdevice,
        Driver::set_preemption_mode,
    ),
    // NV2080 GR, NV0080 FIFO: GR context buffers (`grctx.rs`).
    row(
        grctx::GR_GET_CTX_BUFFER_SIZE,
        On::Subdevice,
        Driver::gr_ctx_buffer_size,
    ),
    row(
        grctx::GR_GET_ENGINE_CONTEXT_PROPERTIES,
        On::Subdevice,
        Driver::gr_engine_context_properties,
    ),
    row(
        grctx::FIFO_GET_ENGINE_CONTEXT_PROPERTIES,
        On::Device,
        Driver::fifo_engine_context_properties,
    ),
];

/// The row of control `cmd` on an object of kind `kind` (`None`: the
/// client).
pub(crate) fn control(cmd: u32, kind: Option<ObjKind>) -> Option<&'static ControlRow> {
    CONTROLS.iter().find(|r| r.cmd == cmd && r.on.fits(kind))
}
