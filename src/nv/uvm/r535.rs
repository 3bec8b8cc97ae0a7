// SPDX-License-Identifier: GPL-2.0

use super::GpuMappingAttributes;

wire_struct! {
    /// UVM_MAP_EXTERNAL_ALLOCATION_PARAMS at 535.
    pub struct MapExternalAllocationParams, size 1200 {
        /// In: inside one external range.
        base @ 0: u64,
        /// In.
        length @ 8: u64,
        /// In: offset into the RM memory.
        offset @ 16: u64,
        /// In: where and how to map.
        per_gpu_attributes @ 24: [GpuMappingAttributes; 32],
        /// In: entries of `per_gpu_attributes` used (1..=32).
        gpu_attributes_count @ 1176: u64,
        /// In (unread).
        rm_ctrl_fd @ 1184: i32,
        /// In: the memory's client (looked up globally by RM).
        h_client @ 1188: u32,
        /// In: the RM memory object.
        h_memory @ 1192: u32,
        /// Out.
        rm_status @ 1196: u32,
    }
}

wire_struct! {
    /// UVM_SET_PREFERRED_LOCATION_PARAMS at 535.
    pub struct SetPreferredLocationParams, size 40 {
        /// In.
        requested_base @ 0: u64,
        /// In.
        length @ 8: u64,
        /// In.
        preferred_location @ 16: [u8; 16],
        /// Out.
        rm_status @ 32: u32,
    }
}

wire_struct! {
    /// UVM_ALLOC_SEMAPHORE_POOL_PARAMS at 535.
    pub struct AllocSemaphorePoolParams, size 1184 {
        /// In.
        base @ 0: u64,
        /// In.
        length @ 8: u64,
        /// In.
        per_gpu_attributes @ 16: [GpuMappingAttributes; 32],
        /// In.
        gpu_attributes_count @ 1168: u64,
        /// Out.
        rm_status @ 1176: u32,
    }
}
