// SPDX-License-Identifier: GPL-2.0

// Which VM tests cover each row that `src/nv/table.rs` (and
// `docs/dispatch-table.md`) call Rewritten: issue 15, item 7, "every row the
// docs call rewritten is tested through vgpu against the double". One entry
// per Rewritten row: its number, NVIDIA's name, and the tests ("suite.test",
// as `vgpu-selftest` names them) that drive the rewrite through
// /dev/vgpuctl against the driver double and assert its outcome.
//
// Data only, with plain `//` comments: the host test
// `userspace/logic/tests/table.rs` reads this file with `include!` and fails
// if a Rewritten row has no entry (or an entry is not a Rewritten row, or
// names it wrongly), or if a listed test is not in the TESTS list of its
// suite's source. A new Rewritten row therefore needs a test here first.

/// Rewritten classes (`hClass` of RM_ALLOC): (class, name, covering tests).
pub const REWRITTEN_CLASSES: &[(u32, &str, &[&str])] = &[
    (
        0x0000,
        "NV01_ROOT",
        &[
            "rewritten.client_handles_picked_by_vgpu",
            "rewritten.taken_client_handle_never_recorded",
        ],
    ),
    (
        0x0001,
        "NV01_ROOT_NON_PRIV",
        &[
            "rewritten.client_handles_picked_by_vgpu",
            "rewritten.taken_client_handle_never_recorded",
        ],
    ),
    (
        0x0041,
        "NV01_ROOT_CLIENT",
        &[
            "rewritten.client_handles_picked_by_vgpu",
            "rewritten.taken_client_handle_never_recorded",
        ],
    ),
];

/// Rewritten controls (`cmd` of RM_CONTROL): (command, name, covering
/// tests).
pub const REWRITTEN_CONTROLS: &[(u32, &str, &[&str])] = &[
    (
        0x0000_0201,
        "NV0000_CTRL_CMD_GPU_GET_ATTACHED_IDS",
        &["isolation.attached_ids_only_the_containers_gpus"],
    ),
    (
        0x0000_0204,
        "NV0000_CTRL_CMD_GPU_GET_DEVICE_IDS",
        &["isolation.gpu_ids_of_other_gpus_refused"],
    ),
    (
        0x0000_0214,
        "NV0000_CTRL_CMD_GPU_GET_PROBED_IDS",
        &["isolation.gpu_ids_of_other_gpus_refused"],
    ),
    (
        0x0000_0288,
        "NV0000_CTRL_CMD_GPU_GET_ACTIVE_DEVICE_IDS",
        &["isolation.gpu_ids_of_other_gpus_refused"],
    ),
    (
        0x2080_110b,
        "NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS",
        &[
            "compute.enables_wait_for_the_window",
            "compute.scheduling_calls_filtered",
            "rewritten.scheduling_another_containers_tsg_refused",
        ],
    ),
    (
        0x2080_1210,
        "NV2080_CTRL_CMD_GR_SET_CTXSW_PREEMPTION_MODE",
        &["compute.wfi_preemption_cannot_outlast_the_window"],
    ),
    (
        0x2080_1301,
        "NV2080_CTRL_CMD_FB_GET_INFO",
        &[
            "memory.each_sees_its_own_size",
            "memory.fb_info_malformed_as_directly",
            "rewritten.fb_info_shows_the_ceiling_not_the_gpu",
        ],
    ),
    (
        0x2080_1303,
        "NV2080_CTRL_CMD_FB_GET_INFO_V2",
        &[
            "memory.each_sees_its_own_size",
            "memory.fb_info_malformed_as_directly",
            "rewritten.fb_info_shows_the_ceiling_not_the_gpu",
        ],
    ),
    (
        0xa06c_0101,
        "NVA06C_CTRL_CMD_GPFIFO_SCHEDULE",
        &[
            "compute.enables_wait_for_the_window",
            "compute.scheduling_calls_filtered",
            "rewritten.scheduling_another_containers_tsg_refused",
        ],
    ),
    (
        0xa06c_0103,
        "NVA06C_CTRL_CMD_SET_TIMESLICE",
        &[
            "compute.scheduling_calls_filtered",
            "rewritten.scheduling_another_containers_tsg_refused",
        ],
    ),
    (
        0xa06c_0107,
        "NVA06C_CTRL_CMD_SET_INTERLEAVE_LEVEL",
        &[
            "compute.scheduling_calls_filtered",
            "rewritten.scheduling_another_containers_tsg_refused",
        ],
    ),
    (
        0xa06f_0103,
        "NVA06F_CTRL_CMD_GPFIFO_SCHEDULE",
        &[
            "compute.enables_wait_for_the_window",
            "rewritten.scheduling_another_containers_tsg_refused",
        ],
    ),
];
