// SPDX-License-Identifier: GPL-2.0

use super::Uuid;

wire_struct! {
    /// UVM_UNREGISTER_CHANNEL_PARAMS before 590.
    pub struct UnregisterChannelParams, size 28 {
        /// In: the GPU of the channel.
        gpu_uuid @ 0: Uuid,
        /// In.
        h_client @ 16: u32,
        /// In.
        h_channel @ 20: u32,
        /// Out.
        rm_status @ 24: u32,
    }
}

wire_struct! {
    /// UVM_FREE_PARAMS before 590: the range must be given whole
    /// (`uvm_free()`, `uvm_va_range.c:663-685` at 580.142:
    /// NV_ERR_INVALID_ADDRESS unless `[base, base + length)` is exactly
    /// one range).
    pub struct FreeParams, size 24 {
        /// In: the start of a range that is not managed.
        base @ 0: u64,
        /// In: its length.
        length @ 8: u64,
        /// Out.
        rm_status @ 16: u32,
    }
}
