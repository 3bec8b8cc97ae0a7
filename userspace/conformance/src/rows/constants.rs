// SPDX-License-Identifier: GPL-2.0

//! Rows of the constants: classes, controls, statuses, flags.

use crate::*;

/// Whether class `c`'s constants are checked in release `rel`: unless the
/// base table has a row for the class and `rel`'s does not (the release
/// lacks the class, as 550 and 535 lack Blackwell's).
pub(crate) fn class_in(rel: &release::Release, c: u32) -> bool {
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
pub(crate) fn constants(t: &mut Table, rel: &release::Release) {
    consts!(t, "", status:
        NV_OK, NV_ERR_BUFFER_TOO_SMALL, NV_ERR_BUSY_RETRY, NV_ERR_GPU_UUID_NOT_FOUND,
        NV_ERR_ILLEGAL_ACTION, NV_ERR_IN_USE, NV_ERR_INSERT_DUPLICATE_NAME,
        NV_ERR_INSUFFICIENT_RESOURCES, NV_ERR_INSUFFICIENT_PERMISSIONS, NV_ERR_INVALID_ADDRESS,
        NV_ERR_INVALID_ARGUMENT, NV_ERR_INVALID_CHANNEL, NV_ERR_INVALID_CLASS, NV_ERR_INVALID_CLIENT,
        NV_ERR_INVALID_COMMAND, NV_ERR_INVALID_DEVICE, NV_ERR_INVALID_FLAGS,
        NV_ERR_INVALID_FUNCTION, NV_ERR_INVALID_LIMIT, NV_ERR_INVALID_OBJECT,
        NV_ERR_INVALID_OBJECT_HANDLE, NV_ERR_INVALID_OBJECT_NEW, NV_ERR_INVALID_OBJECT_OLD,
        NV_ERR_INVALID_OBJECT_PARENT, NV_ERR_INVALID_OFFSET, NV_ERR_INVALID_PARAMETER,
        NV_ERR_INVALID_PARAM_STRUCT,
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
        NV2080_CTRL_CMD_GR_SET_CTXSW_PREEMPTION_MODE,
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
    consts!(t, "NV2080_CTRL_SET_CTXSW_PREEMPTION_MODE_", preemption:
        COMPUTE_WFI, COMPUTE_CTA, COMPUTE_CILP,
    );
    t.konst(
        "NV2080_CTRL_GR_SET_CTXSW_PREEMPTION_MODE_FLAGS_CILP_SET",
        abi::preemption::FLAGS_CILP_SET.into(),
        "preemption::FLAGS_CILP_SET",
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
