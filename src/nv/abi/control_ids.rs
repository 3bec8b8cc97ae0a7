// SPDX-License-Identifier: GPL-2.0

//! RM control command numbers and their list indices and bounds.

// ---------------------------------------------------------------------------
// Control commands.
// ---------------------------------------------------------------------------

/// RM control command numbers (`cmd` of RM_CONTROL). The top 16 bits name the
/// class of the object the control is sent to.
pub mod ctrl {
    /// `NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION` on a client
    /// (`ctrl/ctrl0000/ctrl0000system.h`).
    pub const NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION: u32 = 0x101;
    /// `NV0000_CTRL_CMD_SYSTEM_GET_CPU_INFO` on a client
    /// (`ctrl/ctrl0000/ctrl0000system.h`).
    pub const NV0000_CTRL_CMD_SYSTEM_GET_CPU_INFO: u32 = 0x102;
    /// `NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2` on a client: the
    /// driver's version strings inline, 256 bytes each, then two
    /// changelist numbers (`ctrl/ctrl0000/ctrl0000system.h`; from 560 a
    /// `driverBranch` string after `versionBuffer`).
    pub const NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2: u32 = 0x13e;
    /// `NV0000_CTRL_CMD_GPU_GET_ATTACHED_IDS` on a client: 32 gpu ids,
    /// unused slots `0xffffffff` (`ctrl/ctrl0000/ctrl0000gpu.h`);
    /// params [`super::GpuGetAttachedIdsParams`].
    pub const NV0000_CTRL_CMD_GPU_GET_ATTACHED_IDS: u32 = 0x201;
    /// `NV0000_CTRL_CMD_GPU_GET_ID_INFO` (deprecated, has a name pointer;
    /// `ctrl/ctrl0000/ctrl0000gpu.h`).
    pub const NV0000_CTRL_CMD_GPU_GET_ID_INFO: u32 = 0x202;
    /// `NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2` on a client: maps a gpu id (as in
    /// CARD_INFO) to its device and subdevice instance
    /// (`ctrl/ctrl0000/ctrl0000gpu.h`); params [`super::GpuGetIdInfoV2Params`].
    pub const NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2: u32 = 0x205;
    /// `NV0000_CTRL_CMD_GPU_GET_PROBED_IDS` (`ctrl/ctrl0000/ctrl0000gpu.h`).
    pub const NV0000_CTRL_CMD_GPU_GET_PROBED_IDS: u32 = 0x214;

    /// `NV0041_CTRL_CMD_GET_SURFACE_INFO` on a memory object; params
    /// [`super::GetSurfaceInfoParams`].
    pub const NV0041_CTRL_CMD_GET_SURFACE_INFO: u32 = 0x0041_0110;

    /// `NV0080_CTRL_CMD_GPU_GET_CLASSLIST_V2` on a device
    /// (`ctrl/ctrl0080/ctrl0080gpu.h`); params [`super::ClassListV2Params`].
    pub const NV0080_CTRL_CMD_GPU_GET_CLASSLIST_V2: u32 = 0x0080_0292;

    /// `NV2080_CTRL_CMD_GPU_GET_INFO_V2` on a subdevice
    /// (`ctrl/ctrl2080/ctrl2080gpu.h`); params [`super::GpuGetInfoV2Params`].
    pub const NV2080_CTRL_CMD_GPU_GET_INFO_V2: u32 = 0x2080_0102;
    /// `NV2080_CTRL_CMD_GPU_GET_GID_INFO` on a subdevice: the GPU's UUID,
    /// as text or (flags [`super::GID_FLAGS_FORMAT_BINARY`]) the 16 bytes UVM
    /// takes (`ctrl/ctrl2080/ctrl2080gpu.h`); params [`super::GidInfoParams`].
    pub const NV2080_CTRL_CMD_GPU_GET_GID_INFO: u32 = 0x2080_014a;
    /// `NV2080_CTRL_CMD_GR_GET_CTX_BUFFER_SIZE`: the size of a channel's GR
    /// context buffers (`ctrl/ctrl2080/ctrl2080gr.h:1008`); params
    /// [`super::GrCtxBufferSizeParams`].
    pub const NV2080_CTRL_CMD_GR_GET_CTX_BUFFER_SIZE: u32 = 0x2080_1218;
    /// `NV2080_CTRL_CMD_GR_GET_ENGINE_CONTEXT_PROPERTIES`: a GR context
    /// buffer type's size and alignment (`ctrl/ctrl2080/ctrl2080gr.h`,
    /// served by kernel RM at every release, `kernel_graphics.c:3654-3713`
    /// at 550.163.01); params [`super::GrEngineContextPropertiesParams`].
    pub const NV2080_CTRL_CMD_GR_GET_ENGINE_CONTEXT_PROPERTIES: u32 = 0x2080_122d;
    /// `NV2080_CTRL_CMD_GPU_ACQUIRE_COMPUTE_MODE_RESERVATION`, no params
    /// (message id 0x45, `g_subdevice_nvoc.c:512` at 595.45.04; the open
    /// headers name no macro). Its release is 0x46.
    pub const NV2080_CTRL_CMD_GPU_ACQUIRE_COMPUTE_MODE_RESERVATION: u32 = 0x2080_0145;
    /// `NV2080_CTRL_CMD_GPU_GET_PIDS`: processes using the GPU.
    pub const NV2080_CTRL_CMD_GPU_GET_PIDS: u32 = 0x2080_018d;
    /// `NV2080_CTRL_CMD_GPU_GET_PID_INFO`: per-process video memory.
    pub const NV2080_CTRL_CMD_GPU_GET_PID_INFO: u32 = 0x2080_018e;
    /// Set compute policy (nvidia-smi `compute-policy --set-timeslice`);
    /// advisory. Message id 0x94 in `ctrl/ctrl2080/ctrl2080gpu.h`.
    pub const NV2080_CTRL_CMD_GPU_SET_COMPUTE_POLICY_CONFIG: u32 = 0x2080_0194;
    /// `NV2080_CTRL_CMD_GPU_GET_COMPUTE_POLICY_CONFIG`
    /// (`ctrl/ctrl2080/ctrl2080gpu.h`).
    pub const NV2080_CTRL_CMD_GPU_GET_COMPUTE_POLICY_CONFIG: u32 = 0x2080_0195;
    /// `NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS`; params
    /// [`super::FifoDisableChannelsParams`].
    pub const NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS: u32 = 0x2080_110b;
    /// `NV2080_CTRL_CMD_GR_SET_CTXSW_PREEMPTION_MODE`; params
    /// [`super::CtxswPreemptionModeParams`] (`ctrl/ctrl2080/ctrl2080gr.h`).
    pub const NV2080_CTRL_CMD_GR_SET_CTXSW_PREEMPTION_MODE: u32 = 0x2080_1210;
    /// `NV2080_CTRL_CMD_FB_GET_INFO` (V1): list passed by user pointer; params
    /// [`super::FbGetInfoV1Params`]. RM serves it through V2.
    pub const NV2080_CTRL_CMD_FB_GET_INFO: u32 = 0x2080_1301;
    /// `NV2080_CTRL_CMD_FB_GET_INFO_V2`: list inline; params
    /// [`super::FbGetInfoV2Params`].
    pub const NV2080_CTRL_CMD_FB_GET_INFO_V2: u32 = 0x2080_1303;
    /// `NV2080_CTRL_CMD_FB_GET_FB_REGION_INFO`: also reveals FB size.
    pub const NV2080_CTRL_CMD_FB_GET_FB_REGION_INFO: u32 = 0x2080_1320;

    /// `NVA06C_CTRL_CMD_GPFIFO_SCHEDULE` on a TSG; params
    /// [`super::GpfifoScheduleParams`].
    pub const NVA06C_CTRL_CMD_GPFIFO_SCHEDULE: u32 = 0xa06c_0101;
    /// `NVA06C_CTRL_CMD_BIND` (`ctrl/ctrla06c.h`).
    pub const NVA06C_CTRL_CMD_BIND: u32 = 0xa06c_0102;
    /// `NVA06C_CTRL_CMD_SET_TIMESLICE`; params [`super::TimesliceParams`].
    pub const NVA06C_CTRL_CMD_SET_TIMESLICE: u32 = 0xa06c_0103;
    /// `NVA06C_CTRL_CMD_GET_TIMESLICE`; params [`super::TimesliceParams`].
    pub const NVA06C_CTRL_CMD_GET_TIMESLICE: u32 = 0xa06c_0104;
    /// `NVA06C_CTRL_CMD_PREEMPT`; params [`super::PreemptParams`].
    pub const NVA06C_CTRL_CMD_PREEMPT: u32 = 0xa06c_0105;
    /// `NVA06C_CTRL_CMD_GET_INFO` (`{u32 tsgID}`, `ctrl/ctrla06c.h`).
    pub const NVA06C_CTRL_CMD_GET_INFO: u32 = 0xa06c_0106;
    /// `NVA06C_CTRL_CMD_SET_INTERLEAVE_LEVEL`; params
    /// [`super::InterleaveLevelParams`].
    pub const NVA06C_CTRL_CMD_SET_INTERLEAVE_LEVEL: u32 = 0xa06c_0107;
    /// `NVA06C_CTRL_CMD_GET_INTERLEAVE_LEVEL` (`ctrl/ctrla06c.h`).
    pub const NVA06C_CTRL_CMD_GET_INTERLEAVE_LEVEL: u32 = 0xa06c_0108;
    /// `NVA06C_CTRL_CMD_MAKE_REALTIME`; params [`super::MakeRealtimeParams`].
    pub const NVA06C_CTRL_CMD_MAKE_REALTIME: u32 = 0xa06c_0110;

    /// `NVA06F_CTRL_CMD_GPFIFO_SCHEDULE` on a channel; params
    /// [`super::GpfifoScheduleParams`] (same layout as the TSG form,
    /// `ctrl/ctrla06f/ctrla06fgpfifo.h`).
    pub const NVA06F_CTRL_CMD_GPFIFO_SCHEDULE: u32 = 0xa06f_0103;
    /// `NVA06F_CTRL_CMD_STOP_CHANNEL`; params [`super::StopChannelParams`].
    pub const NVA06F_CTRL_CMD_STOP_CHANNEL: u32 = 0xa06f_0112;

    /// `NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN` on a channel: the token
    /// to write to the doorbell (`ctrl/ctrlc36f.h`); params
    /// [`super::WorkSubmitTokenParams`].
    pub const NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN: u32 = 0xc36f_0108;

    /// The class a control command is addressed to (its top 16 bits).
    pub const fn class_of(cmd: u32) -> u32 {
        cmd >> 16
    }
}

/// `NV2080_CTRL_FB_INFO_INDEX_*`: indices of FB_GET_INFO (V1 and V2).
/// Sizes are in KiB.
pub mod fb_info {
    /// BAR1 size (`ctrl/ctrl2080/ctrl2080fb.h`).
    pub const BAR1_SIZE: u32 = 0x05;
    /// RAM physically present.
    pub const RAM_SIZE: u32 = 0x07;
    /// Total RAM.
    pub const TOTAL_RAM_SIZE: u32 = 0x08;
    /// Heap size.
    pub const HEAP_SIZE: u32 = 0x09;
    /// Mappable heap size.
    pub const MAPPABLE_HEAP_SIZE: u32 = 0x0A;
    /// Memory bus width (`ctrl/ctrl2080/ctrl2080fb.h`).
    pub const BUS_WIDTH: u32 = 0x0B;
    /// FB tax (vGPU host reservation).
    pub const FB_TAX_SIZE_KB: u32 = 0x10;
    /// Heap base (`ctrl/ctrl2080/ctrl2080fb.h`; used by VID_HEAP INFO).
    pub const HEAP_BASE_KB: u32 = 0x11;
    /// Largest free region.
    pub const LARGEST_FREE_REGION_SIZE_KB: u32 = 0x12;
    /// Base of the largest free region (`ctrl/ctrl2080/ctrl2080fb.h`).
    pub const LARGEST_FREE_REGION_BASE_KB: u32 = 0x13;
    /// Free heap.
    pub const HEAP_FREE: u32 = 0x16;
    /// BAR1 available (`ctrl/ctrl2080/ctrl2080fb.h`).
    pub const BAR1_AVAIL_SIZE: u32 = 0x1D;
    /// Heap start (`ctrl/ctrl2080/ctrl2080fb.h`).
    pub const HEAP_START: u32 = 0x1E;
    /// Usable RAM.
    pub const USABLE_RAM_SIZE: u32 = 0x20;
    /// Most entries one FB_GET_INFO call takes (`NV2080_CTRL_FB_INFO_MAX_LIST_SIZE`).
    pub const MAX_LIST_SIZE: usize = 128;

    /// Whether an index reports a memory size or free amount that a vGPU's
    /// ceiling must rewrite.
    pub const fn reveals_memory_size(index: u32) -> bool {
        matches!(
            index,
            RAM_SIZE
                | TOTAL_RAM_SIZE
                | HEAP_SIZE
                | MAPPABLE_HEAP_SIZE
                | FB_TAX_SIZE_KB
                | LARGEST_FREE_REGION_SIZE_KB
                | HEAP_FREE
                | USABLE_RAM_SIZE
        )
    }
}

/// RM_USER_SHARED_DATA (`class/cl00de.h`, `ctrl/ctrl00de.h`): what a
/// caller may ask RM to keep polling into its page.
pub mod rusd {
    /// The class (`RM_USER_SHARED_DATA`).
    pub const CLASS: u32 = 0x00de;
    /// `NV00DE_CTRL_CMD_REQUEST_DATA_POLL`: params one `NvU64
    /// polledDataMask`, as the class's alloc params (4 reserved bytes
    /// before 550).
    pub const REQUEST_DATA_POLL: u32 = 0x00de_0001;
    /// `NV00DE_RUSD_POLL_PROC_UTIL` (from 590): per-process utilisation,
    /// with the process ids of every tenant on the GPU.
    pub const POLL_PROC_UTIL: u64 = 0x80;
}

/// GR_SET_CTXSW_PREEMPTION_MODE's flags and compute modes
/// (`ctrl/ctrl2080/ctrl2080gr.h:835-850` at 595.45.04).
pub mod preemption {
    /// `flags` bit 0 (`..._FLAGS_CILP_SET`): `cilpPreemptMode`, the
    /// compute mode, is to be set; clear, it is ignored.
    pub const FLAGS_CILP_SET: u32 = 1;
    /// `NV2080_CTRL_SET_CTXSW_PREEMPTION_MODE_COMPUTE_WFI`: the compute
    /// engine switches only once the context is idle.
    pub const COMPUTE_WFI: u32 = 0;
    /// `NV2080_CTRL_SET_CTXSW_PREEMPTION_MODE_COMPUTE_CTA`: between thread
    /// blocks.
    pub const COMPUTE_CTA: u32 = 1;
    /// `NV2080_CTRL_SET_CTXSW_PREEMPTION_MODE_COMPUTE_CILP`: at the
    /// instruction level.
    pub const COMPUTE_CILP: u32 = 2;
}

/// GPU_GET_PIDS and GPU_GET_PID_INFO (`ctrl/ctrl2080/ctrl2080gpu.h`):
/// list bounds, id types and info indices.
pub mod pids {
    /// Most PIDs one GPU_GET_PIDS answer holds
    /// (`NV2080_CTRL_GPU_GET_PIDS_MAX_COUNT`).
    pub const GET_PIDS_MAX_COUNT: u32 = 950;
    /// `idType`: `id` is a class (`NV2080_CTRL_GPU_GET_PIDS_ID_TYPE_CLASS`).
    pub const GET_PIDS_ID_TYPE_CLASS: u32 = 0;
    /// `idType`: processes of vGPU guests (a host's view; not a
    /// container's).
    pub const GET_PIDS_ID_TYPE_VGPU_GUEST: u32 = 1;
    /// Most entries one GPU_GET_PID_INFO call takes
    /// (`NV2080_CTRL_GPU_GET_PID_INFO_MAX_COUNT`).
    pub const GET_PID_INFO_MAX_COUNT: u32 = 200;
    /// The only info index: video memory usage
    /// (`NV2080_CTRL_GPU_PID_INFO_INDEX_VIDEO_MEMORY_USAGE`).
    pub const PID_INFO_INDEX_VIDEO_MEMORY_USAGE: u32 = 0;
    /// No MIG partition (`NV2080_CTRL_GPU_PARTITION_ID_INVALID`).
    pub const PARTITION_ID_INVALID: u32 = 0xffff_ffff;
}

/// `NV0041_CTRL_SURFACE_INFO_INDEX_*` (`ctrl/ctrl0041.h`).
pub mod surface_info {
    /// Hardware attributes.
    pub const ATTRS: u32 = 1;
    /// Low 32 bits of the physical size in bytes.
    pub const PHYS_SIZE_LO: u32 = 2;
    /// High 32 bits of the physical size in bytes.
    pub const PHYS_SIZE_HI: u32 = 3;
    /// Compression coverage in 64 KiB units.
    pub const COMPR_COVERAGE: u32 = 5;
    /// Physical size in units of [`PHYS_SIZE_SCALE`] (4 KiB); RM fails with
    /// NV_ERR_OUT_OF_RANGE when it does not fit 32 bits
    /// (`src/nvidia/src/kernel/gpu/mem_mgr/mem_ctrl.c`).
    pub const PHYS_SIZE: u32 = 7;
    /// Physical attributes.
    pub const PHYS_ATTR: u32 = 8;
    /// Address space type.
    pub const ADDR_SPACE_TYPE: u32 = 9;
    /// Unit of [`PHYS_SIZE`] (`NV0041_CTRL_SURFACE_INFO_PHYS_SIZE_SCALE_FACTOR`).
    pub const PHYS_SIZE_SCALE: u64 = 0x1000;
}

/// `NV2080_CTRL_GPU_INFO_MAX_LIST_SIZE` (`ctrl/ctrl2080/ctrl2080gpu.h`).
pub const GPU_INFO_MAX_LIST_SIZE: usize = 70;

/// `NV0080_CTRL_GPU_CLASSLIST_MAX_SIZE` (`ctrl/ctrl0080/ctrl0080gpu.h`).
pub const CLASSLIST_MAX_SIZE: usize = 200;

/// `NV0000_CTRL_GPU_MAX_ATTACHED_GPUS` (`ctrl/ctrl0000/ctrl0000gpu.h`).
pub const MAX_ATTACHED_GPUS: usize = 32;

/// An unused gpu id slot (`NV0000_CTRL_GPU_INVALID_ID`).
pub const GPU_INVALID_ID: u32 = 0xffff_ffff;

/// `NV2080_CTRL_FIFO_DISABLE_CHANNELS_MAX_ENTRIES`.
pub const DISABLE_CHANNELS_MAX_ENTRIES: usize = 64;

/// `NV_MAX_SUBDEVICES` (`nvlimits.h`): length of the per-subdevice arrays of
/// [`ChannelAllocParams`].
pub const MAX_SUBDEVICES: usize = 8;

/// Default TSG timeslice in microseconds.
pub const DEFAULT_TIMESLICE_US: u64 = 1024;

/// Largest manual preempt timeout (`NVA06C_CTRL_CMD_PREEMPT_MAX_MANUAL_TIMEOUT_US`,
/// `ctrl/ctrla06c.h`).
pub const PREEMPT_MAX_MANUAL_TIMEOUT_US: u32 = 1_000_000;
