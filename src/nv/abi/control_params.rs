// SPDX-License-Identifier: GPL-2.0

//! Control parameter blocks (pointed to by NVOS54).

use super::control_ids::{CLASSLIST_MAX_SIZE, DISABLE_CHANNELS_MAX_ENTRIES, GPU_INVALID_ID};

// ---------------------------------------------------------------------------
// Control parameter blocks (pointed to by NVOS54).
// ---------------------------------------------------------------------------

wire_struct! {
    /// `NVXXXX_CTRL_XXX_INFO` (`ctrl/ctrlxxxx.h`): one `{index, data}` entry of
    /// an info list (FB info, surface info, GPU info).
    pub struct InfoEntry, size 8 {
        /// Index (which value).
        index @ 0: u32,
        /// Out: value.
        data @ 4: u32,
    }
}

/// The first `len` entries of an info list (clamped to the list).
fn info_prefix(list: &[InfoEntry], len: u32) -> &[InfoEntry] {
    let n = usize::try_from(len).unwrap_or(usize::MAX).min(list.len());
    list.get(..n).unwrap_or(&[])
}

/// The first `len` entries of an info list, mutable (clamped to the list).
fn info_prefix_mut(list: &mut [InfoEntry], len: u32) -> &mut [InfoEntry] {
    let n = usize::try_from(len).unwrap_or(usize::MAX).min(list.len());
    list.get_mut(..n).unwrap_or(&mut [])
}

/// Fills `list` with `indices` (data zero) and returns how many it took.
fn info_fill(list: &mut [InfoEntry], indices: &[u32]) -> u32 {
    let mut n = 0u32;
    for (e, &i) in list.iter_mut().zip(indices) {
        *e = InfoEntry { index: i, data: 0 };
        n += 1;
    }
    n
}

wire_struct! {
    /// NV2080_CTRL_FB_GET_INFO_V2_PARAMS: the list inline (1028 bytes).
    pub struct FbGetInfoV2Params, size 1028 {
        /// Number of entries used.
        list_size @ 0: u32,
        /// The entries.
        list @ 4: [InfoEntry; 128],
    }
}

impl FbGetInfoV2Params {
    /// A request for `indices` (at most 128 are taken).
    pub fn new(indices: &[u32]) -> FbGetInfoV2Params {
        let mut p = FbGetInfoV2Params::default();
        p.list_size = info_fill(&mut p.list, indices);
        p
    }

    /// The used entries (`list_size` clamped to 128).
    pub fn entries(&self) -> &[InfoEntry] {
        info_prefix(&self.list, self.list_size)
    }

    /// The used entries, mutable.
    pub fn entries_mut(&mut self) -> &mut [InfoEntry] {
        info_prefix_mut(&mut self.list, self.list_size)
    }

    /// The data of the first used entry with `index`.
    pub fn get(&self, index: u32) -> Option<u32> {
        self.entries()
            .iter()
            .find(|e| e.index == index)
            .map(|e| e.data)
    }
}

wire_struct! {
    /// NV2080_CTRL_GPU_GET_PIDS_PARAMS (`ctrl/ctrl2080/ctrl2080gpu.h`): the
    /// processes with objects of class `id` on the GPU. 3812 bytes: handlers
    /// read and write it by field ([`GetPidsParams::PID_TBL`]), never
    /// whole on a kernel stack.
    pub struct GetPidsParams, size 3812 {
        /// [`pids::GET_PIDS_ID_TYPE_CLASS`] or `_VGPU_GUEST`.
        id_type @ 0: u32,
        /// The class.
        id @ 4: u32,
        /// Out: PIDs in `pid_tbl`.
        pid_tbl_count @ 8: u32,
        /// Out: the PIDs, in the caller's PID namespace.
        pid_tbl @ 12: [u32; 950],
    }
}

impl GetPidsParams {
    /// Offset of `pid_tbl`.
    pub const PID_TBL: usize = 12;
}

wire_struct! {
    /// NV2080_CTRL_GPU_PID_INFO (`ctrl/ctrl2080/ctrl2080gpu.h`): one entry of
    /// GPU_GET_PID_INFO, a process and its video memory (the
    /// `data.vidMemUsage` member of the union, its only one) and MIG
    /// subscription.
    pub struct PidInfo, size 72 {
        /// The process, in the caller's PID namespace.
        pid @ 0: u32,
        /// Which information ([`pids::PID_INFO_INDEX_VIDEO_MEMORY_USAGE`]).
        index @ 4: u32,
        /// Out: this entry's status.
        result @ 8: u32,
        /// Out: memory only this process's clients hold.
        mem_private @ 16: u64,
        /// Out: memory shared with other clients, owned by this process's.
        mem_shared_owned @ 24: u64,
        /// Out: memory duplicated from other clients' into this process's.
        mem_shared_duped @ 32: u64,
        /// Out: as `mem_private`, of protected memory.
        protected_mem_private @ 40: u64,
        /// Out: as `mem_shared_owned`, of protected memory.
        protected_mem_shared_owned @ 48: u64,
        /// Out: as `mem_shared_duped`, of protected memory.
        protected_mem_shared_duped @ 56: u64,
        /// Out: MIG compute instance ([`pids::PARTITION_ID_INVALID`]).
        compute_instance_id @ 64: u32,
        /// Out: MIG GPU instance ([`pids::PARTITION_ID_INVALID`]).
        gpu_instance_id @ 68: u32,
    }
}

impl PidInfo {
    /// Zeroes the memory figures, as RM clears the entry's data before it
    /// counts (`subdevice_ctrl_gpu_kernel.c:2395` at 595.45.04).
    pub fn clear_usage(&mut self) {
        self.mem_private = 0;
        self.mem_shared_owned = 0;
        self.mem_shared_duped = 0;
        self.protected_mem_private = 0;
        self.protected_mem_shared_owned = 0;
        self.protected_mem_shared_duped = 0;
    }
}

wire_struct! {
    /// NV2080_CTRL_GPU_GET_PID_INFO_PARAMS (`ctrl/ctrl2080/ctrl2080gpu.h`).
    /// 14408 bytes: handlers go through it entry by entry ([`PidInfo`] at
    /// [`GetPidInfoParams::LIST`]), never whole on a kernel stack.
    pub struct GetPidInfoParams, size 14408 {
        /// Entries used (1 to 200).
        list_count @ 0: u32,
        /// The entries.
        list @ 8: [PidInfo; 200],
    }
}

impl GetPidInfoParams {
    /// Offset of `list`.
    pub const LIST: usize = 8;
}

wire_struct! {
    /// NV2080_CTRL_FB_GET_INFO_PARAMS (V1): the list by user pointer.
    pub struct FbGetInfoV1Params, size 16 {
        /// Number of entries.
        list_size @ 0: u32,
        /// User pointer to `list_size` [`InfoEntry`] records.
        list_ptr @ 8: u64,
    }
}

wire_struct! {
    /// NV0041_CTRL_GET_SURFACE_INFO_PARAMS (`ctrl/ctrl0041.h`): the list by
    /// user pointer.
    pub struct GetSurfaceInfoParams, size 16 {
        /// Number of entries.
        list_size @ 0: u32,
        /// User pointer to `list_size` [`InfoEntry`] records.
        list_ptr @ 8: u64,
    }
}

wire_struct! {
    /// NV2080_CTRL_GPU_GET_INFO_V2_PARAMS (`ctrl/ctrl2080/ctrl2080gpu.h`).
    pub struct GpuGetInfoV2Params, size 564 {
        /// Number of entries used.
        list_size @ 0: u32,
        /// The entries.
        list @ 4: [InfoEntry; 70],
    }
}

impl GpuGetInfoV2Params {
    /// A request for `indices` (at most 70 are taken).
    pub fn new(indices: &[u32]) -> GpuGetInfoV2Params {
        let mut p = GpuGetInfoV2Params::default();
        p.list_size = info_fill(&mut p.list, indices);
        p
    }

    /// The used entries (`list_size` clamped to 70).
    pub fn entries(&self) -> &[InfoEntry] {
        info_prefix(&self.list, self.list_size)
    }
}

wire_struct! {
    /// NVA06C/NVA06F GPFIFO_SCHEDULE params (TSG and channel share the layout).
    pub struct GpfifoScheduleParams, size 3 {
        /// Enable (1) or disable (0) scheduling.
        b_enable @ 0: u8,
        /// Skip the submit.
        b_skip_submit @ 1: u8,
        /// Skip the enable.
        b_skip_enable @ 2: u8,
    }
}

wire_struct! {
    /// NVA06C_CTRL_TIMESLICE_PARAMS: SET_TIMESLICE / GET_TIMESLICE.
    pub struct TimesliceParams, size 8 {
        /// Timeslice in microseconds.
        timeslice_us @ 0: u64,
    }
}

wire_struct! {
    /// NVA06C_CTRL_PREEMPT_PARAMS.
    pub struct PreemptParams, size 8 {
        /// Wait for the preemption to finish.
        b_wait @ 0: u8,
        /// Use `timeout_us` instead of the default.
        b_manual_timeout @ 1: u8,
        /// Timeout (at most [`PREEMPT_MAX_MANUAL_TIMEOUT_US`]).
        timeout_us @ 4: u32,
    }
}

wire_struct! {
    /// NV2080_CTRL_GR_SET_CTXSW_PREEMPTION_MODE_PARAMS
    /// (`ctrl/ctrl2080/ctrl2080gr.h:826-832` at 595.45.04); its
    /// `grRouteInfo` (bytes 16..32) is left as the caller wrote it.
    pub struct CtxswPreemptionModeParams, size 32 {
        /// Which modes are set ([`super::preemption::FLAGS_CILP_SET`]).
        flags @ 0: u32,
        /// The channel whose modes are set (in the caller's client).
        h_channel @ 4: u32,
        /// The graphics mode.
        gfxp_preempt_mode @ 8: u32,
        /// The compute mode (`..._COMPUTE_*`, [`super::preemption`]).
        cilp_preempt_mode @ 12: u32,
    }
}

wire_struct! {
    /// NVA06C_CTRL_INTERLEAVE_LEVEL_PARAMS (`ctrl/ctrla06c.h`).
    pub struct InterleaveLevelParams, size 4 {
        /// Interleave level.
        tsg_interleave_level @ 0: u32,
    }
}

wire_struct! {
    /// NVA06C_CTRL_MAKE_REALTIME_PARAMS (`ctrl/ctrla06c.h`).
    pub struct MakeRealtimeParams, size 1 {
        /// Make the TSG realtime.
        b_realtime @ 0: u8,
    }
}

wire_struct! {
    /// NVA06F_CTRL_STOP_CHANNEL_PARAMS (`ctrl/ctrla06f/ctrla06fgpfifo.h`).
    pub struct StopChannelParams, size 1 {
        /// Stop immediately.
        b_immediate @ 0: u8,
    }
}

wire_struct! {
    /// NV2080_CTRL_FIFO_DISABLE_CHANNELS_PARAMS (536 bytes;
    /// `ctrl/ctrl2080/ctrl2080fifo.h` for the fields between numChannels and
    /// the lists).
    pub struct FifoDisableChannelsParams, size 536 {
        /// Disable (1) or enable (0).
        b_disable @ 0: u8,
        /// Number of list entries used (at most 64).
        num_channels @ 4: u32,
        /// Only disable scheduling.
        b_only_disable_scheduling @ 8: u8,
        /// Rewind GP_PUT.
        b_rewind_gp_put @ 9: u8,
        /// Runlist preempt event pointer.
        p_runlist_preempt_event @ 16: u64,
        /// Client of each channel.
        h_client_list @ 24: [u32; 64],
        /// Channel (or TSG) handles.
        h_channel_list @ 280: [u32; 64],
    }
}

impl FifoDisableChannelsParams {
    /// The used `(client, channel)` pairs (`num_channels` clamped to 64).
    pub fn entries(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        let n = usize::try_from(self.num_channels)
            .unwrap_or(usize::MAX)
            .min(DISABLE_CHANNELS_MAX_ENTRIES);
        self.h_client_list
            .iter()
            .zip(self.h_channel_list.iter())
            .take(n)
            .map(|(&c, &h)| (c, h))
    }
}

wire_struct! {
    /// NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS (`ctrl/ctrlc36f.h`).
    pub struct WorkSubmitTokenParams, size 4 {
        /// Out: the token to write at the doorbell.
        work_submit_token @ 0: u32,
    }
}

wire_struct! {
    /// NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS (`ctrl/ctrl0000/ctrl0000gpu.h`).
    pub struct GpuGetIdInfoV2Params, size 32 {
        /// In: gpu id (CARD_INFO.gpu_id).
        gpu_id @ 0: u32,
        /// Out: flags.
        gpu_flags @ 4: u32,
        /// Out: device instance (NV0080 deviceId).
        device_instance @ 8: u32,
        /// Out: subdevice instance (NV2080 subDeviceId).
        sub_device_instance @ 12: u32,
        /// Out: SLI status.
        sli_status @ 16: u32,
        /// Out: board id.
        board_id @ 20: u32,
        /// Out: GPU instance (bus-probe order).
        gpu_instance @ 24: u32,
        /// Out: NUMA node (-1 = none).
        numa_id @ 28: i32,
    }
}

wire_struct! {
    /// NV0000_CTRL_GPU_GET_ATTACHED_IDS_PARAMS (`ctrl/ctrl0000/ctrl0000gpu.h`).
    pub struct GpuGetAttachedIdsParams, size 128 {
        /// Out: gpu ids, valid ones first, then [`GPU_INVALID_ID`].
        gpu_ids @ 0: [u32; 32],
    }
}

impl GpuGetAttachedIdsParams {
    /// The valid ids (up to the first [`GPU_INVALID_ID`]).
    pub fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.gpu_ids
            .iter()
            .copied()
            .take_while(|&id| id != GPU_INVALID_ID)
    }
}

wire_struct! {
    /// NV0080_CTRL_GPU_GET_CLASSLIST_V2_PARAMS (`ctrl/ctrl0080/ctrl0080gpu.h`).
    pub struct ClassListV2Params, size 804 {
        /// Out: number of classes.
        num_classes @ 0: u32,
        /// Out: the classes.
        class_list @ 4: [u32; 200],
    }
}

impl ClassListV2Params {
    /// The reported classes (`num_classes` clamped to 200).
    pub fn classes(&self) -> &[u32] {
        let n = usize::try_from(self.num_classes)
            .unwrap_or(usize::MAX)
            .min(CLASSLIST_MAX_SIZE);
        self.class_list.get(..n).unwrap_or(&[])
    }
}

wire_struct! {
    /// NV2080_CTRL_GR_GET_CTX_BUFFER_SIZE_PARAMS (`ctrl/ctrl2080/ctrl2080gr.h`):
    /// the total size of the GR context buffers of a channel's context.
    pub struct GrGetCtxBufferSizeParams, size 16 {
        /// The channel, in the subdevice's client.
        h_channel @ 0: u32,
        /// Out: the buffers' total, with their alignments.
        total_buffer_size @ 8: u64,
    }
}

wire_struct! {
    /// NV0080_CTRL_FIFO_GET_ENGINE_CONTEXT_PROPERTIES_PARAMS
    /// (`ctrl/ctrl0080/ctrl0080fifo.h`): one engine context buffer type's
    /// size and alignment.
    pub struct FifoEngineContextPropertiesParams, size 12 {
        /// The buffer type (`ENGINE_ID`, bits 4:0).
        engine_id @ 0: u32,
        /// Out: its alignment.
        alignment @ 4: u32,
        /// Out: its size.
        size @ 8: u32,
    }
}

wire_struct! {
    /// NV2080_CTRL_GR_GET_ENGINE_CONTEXT_PROPERTIES_PARAMS
    /// (`ctrl/ctrl2080/ctrl2080gr.h`): the subdevice's twin of
    /// [`FifoEngineContextPropertiesParams`], with a GR route.
    pub struct GrEngineContextPropertiesParams, size 32 {
        /// NV2080_CTRL_GR_ROUTE_INFO's `flags`.
        route_flags @ 0: u32,
        /// NV2080_CTRL_GR_ROUTE_INFO's `route`.
        route @ 8: u64,
        /// The buffer type, as 0x801707's.
        engine_id @ 16: u32,
        /// In (with `b_info_populated`) and out: the alignment.
        alignment @ 20: u32,
        /// In (with `b_info_populated`) and out: the size.
        size @ 24: u32,
        /// In: `alignment` and `size` hold an earlier answer; out: 1.
        b_info_populated @ 28: u8,
    }
}

/// The engine context buffer types a GR context can hold
/// (`NV0080_CTRL_FIFO_GET_ENGINE_CONTEXT_PROPERTIES_ENGINE_ID_GRAPHICS`, 0,
/// and `_GRAPHICS_ZCULL` 0x08 to `_GRAPHICS_SETUP` 0x19,
/// `ctrl0080fifo.h:168-193` at 550.163.01).
pub const GR_CONTEXT_BUFFER_TYPES: [u32; 19] = [
    0x00, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16,
    0x17, 0x18, 0x19,
];
