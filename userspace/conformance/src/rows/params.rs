// SPDX-License-Identifier: GPL-2.0

//! Rows of the alloc and control parameter blocks.

use crate::*;

pub(crate) fn params(t: &mut Table) {
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
        abi::CtxswPreemptionModeParams,
        CStruct::camel("NV2080_CTRL_GR_SET_CTXSW_PREEMPTION_MODE_PARAMS")
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
