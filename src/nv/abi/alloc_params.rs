// SPDX-License-Identifier: GPL-2.0

//! Alloc parameter blocks (pointed to by NVOS21/NVOS64).

use super::memory_flags::heap;
use crate::nv::wire::{field_offset, read_field, Wire};

// ---------------------------------------------------------------------------
// Alloc parameter blocks (pointed to by NVOS21/NVOS64).
// ---------------------------------------------------------------------------

wire_struct! {
    /// NV_MEMORY_ALLOCATION_PARAMS (>= 545 layout, 128 bytes): alloc params of
    /// NV01_MEMORY_LOCAL_USER (0x40), NV01_MEMORY_SYSTEM and
    /// NV50_MEMORY_VIRTUAL. Flags and attrs are the NVOS32 ones ([`heap`]).
    pub struct MemoryAllocationParams, size 128 {
        /// Owner id.
        owner @ 0: u32,
        /// Surface type.
        surface_type @ 4: u32,
        /// Allocation flags.
        flags @ 8: u32,
        /// Width.
        width @ 12: u32,
        /// Height.
        height @ 16: u32,
        /// In/out: pitch.
        pitch @ 20: i32,
        /// In/out: attributes (LOCATION in bits 26:25).
        attr @ 24: u32,
        /// In/out: attributes 2.
        attr2 @ 28: u32,
        /// In/out: format.
        format @ 32: u32,
        /// In/out: compression coverage.
        compr_covg @ 36: u32,
        /// Out: zcull coverage.
        zcull_covg @ 40: u32,
        /// Range low.
        range_lo @ 48: u64,
        /// Range high.
        range_hi @ 56: u64,
        /// In/out: size; out is the size allocated.
        size @ 64: u64,
        /// Alignment.
        alignment @ 72: u64,
        /// In/out: offset.
        offset @ 80: u64,
        /// Out: limit.
        limit @ 88: u64,
        /// Out: address.
        address @ 96: u64,
        /// Comptag offset.
        ctag_offset @ 104: u32,
        /// VA space (used with VIRTUAL).
        h_va_space @ 108: u32,
        /// Internal flags.
        internal_flags @ 112: u32,
        /// Debug tag.
        tag @ 116: u32,
        /// CPU NUMA node.
        numa_node @ 120: i32,
    }
}

impl MemoryAllocationParams {
    /// The fields vgpu decides a VRAM charge on (flags, attr, attr2,
    /// size), read from `b` without decoding the rest (every other field
    /// zero): a whole decode is about 200 guest instructions on the
    /// allocation path (`make bench`).
    pub fn decode_charge_fields(b: &[u8]) -> Self {
        const fn at(name: &str) -> usize {
            field_offset(MemoryAllocationParams::FIELDS, name)
        }
        Self {
            flags: read_field(b, const { at("flags") }),
            attr: read_field(b, const { at("attr") }),
            attr2: read_field(b, const { at("attr2") }),
            size: read_field(b, const { at("size") }),
            ..Self::ZERO
        }
    }

    /// Whether attr LOCATION (26:25) is VIDMEM (0).
    pub const fn is_vidmem(&self) -> bool {
        heap::ATTR_LOCATION.get(self.attr) == heap::ATTR_LOCATION_VIDMEM
    }

    /// Whether flags has NVOS32_ALLOC_FLAGS_VIRTUAL (0x80000).
    pub const fn is_virtual(&self) -> bool {
        self.flags & heap::ALLOC_FLAGS_VIRTUAL != 0
    }

    /// Whether an alloc of class 0x40 with these params commits VRAM: VIDMEM
    /// and not VIRTUAL (the rule the driver's own heap path applies).
    pub const fn allocates_vram(&self) -> bool {
        self.is_vidmem() && !self.is_virtual()
    }
}

wire_struct! {
    /// NV0080_ALLOC_PARAMETERS: alloc params of NV01_DEVICE_0
    /// (`class/cl0080.h`).
    pub struct DeviceAllocParams, size 56 {
        /// Device instance (from GPU_GET_ID_INFO_V2.deviceInstance).
        device_id @ 0: u32,
        /// Client to share the VA space with.
        h_client_share @ 4: u32,
        /// Target client.
        h_target_client @ 8: u32,
        /// Target device.
        h_target_device @ 12: u32,
        /// Flags.
        flags @ 16: u32,
        /// VA space size.
        va_space_size @ 24: u64,
        /// Internal VA start.
        va_start_internal @ 32: u64,
        /// Internal VA limit.
        va_limit_internal @ 40: u64,
        /// VA mode.
        va_mode @ 48: u32,
    }
}

wire_struct! {
    /// NV2080_ALLOC_PARAMETERS: alloc params of NV20_SUBDEVICE_0
    /// (`class/cl2080.h`).
    pub struct SubdeviceAllocParams, size 4 {
        /// Subdevice instance.
        sub_device_id @ 0: u32,
    }
}

wire_struct! {
    /// NV0005_ALLOC_PARAMETERS: alloc params of NV01_EVENT* classes
    /// (`class/cl0005.h`).
    pub struct EventAllocParams, size 24 {
        /// Client of the source.
        h_parent_client @ 0: u32,
        /// Object whose notifier fires the event.
        h_src_resource @ 4: u32,
        /// Event class (e.g. [`class::NV01_EVENT_OS_EVENT`]).
        h_class @ 8: u32,
        /// Notifier index.
        notify_index @ 12: u32,
        /// Class-specific data (for OS events: the fd).
        data @ 16: u64,
    }
}

wire_struct! {
    /// NV_MEMORY_DESC_PARAMS (`alloc/alloc_channel.h`): a memory descriptor
    /// inside [`ChannelAllocParams`] (kernel clients only).
    pub struct MemoryDescParams, size 24 {
        /// Base address.
        base @ 0: u64,
        /// Size.
        size @ 8: u64,
        /// Address space.
        address_space @ 16: u32,
        /// Cache attribute.
        cache_attrib @ 20: u32,
    }
}

wire_struct! {
    /// NV_CHANNEL_ALLOC_PARAMS (`alloc/alloc_channel.h`): alloc params of the
    /// GPFIFO channel classes. Fields from `cid` on are reserved for RM or
    /// confidential compute.
    pub struct ChannelAllocParams, size 368 {
        /// Error notifier memory.
        h_object_error @ 0: u32,
        /// Unused.
        h_object_buffer @ 4: u32,
        /// GPU VA of the GPFIFO ring.
        gp_fifo_offset @ 8: u64,
        /// Number of GPFIFO entries.
        gp_fifo_entries @ 16: u32,
        /// NVOS04 flags.
        flags @ 20: u32,
        /// Context share (subcontext).
        h_context_share @ 24: u32,
        /// VA space.
        h_va_space @ 28: u32,
        /// USERD memory per subdevice (ignored if the first is 0).
        h_userd_memory @ 32: [u32; 8],
        /// Offset of USERD in that memory, per subdevice.
        userd_offset @ 64: [u64; 8],
        /// Engine (`NV2080_ENGINE_TYPE_*`).
        engine_type @ 128: u32,
        /// Out: channel id for the session.
        cid @ 132: u32,
        /// One-hot subdevice mask.
        sub_device_id @ 136: u32,
        /// ECC error notifier.
        h_object_ecc_error @ 140: u32,
        /// Instance memory (reserved).
        instance_mem @ 144: MemoryDescParams,
        /// USERD memory (reserved).
        userd_mem @ 168: MemoryDescParams,
        /// RAMFC memory (reserved).
        ramfc_mem @ 192: MemoryDescParams,
        /// Method buffer memory (reserved).
        mthdbuf_mem @ 216: MemoryDescParams,
        /// Reserved.
        h_phys_channel_group @ 240: u32,
        /// Reserved.
        internal_flags @ 244: u32,
        /// Reserved.
        error_notifier_mem @ 248: MemoryDescParams,
        /// Reserved.
        ecc_error_notifier_mem @ 272: MemoryDescParams,
        /// Reserved.
        process_id @ 296: u32,
        /// Reserved.
        sub_process_id @ 300: u32,
        /// Reserved (confidential compute).
        encrypt_iv @ 304: [u32; 3],
        /// Reserved (confidential compute).
        decrypt_iv @ 316: [u32; 3],
        /// Reserved (confidential compute).
        hmac_nonce @ 328: [u32; 8],
        /// TPC configuration id.
        tpc_config_id @ 360: u32,
    }
}

wire_struct! {
    /// NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS (`nvos.h`): alloc params of
    /// KEPLER_CHANNEL_GROUP_A (a TSG).
    pub struct ChannelGroupAllocParams, size 20 {
        /// Error notifier.
        h_object_error @ 0: u32,
        /// ECC error notifier.
        h_object_ecc_error @ 4: u32,
        /// VA space.
        h_va_space @ 8: u32,
        /// Engine of all its channels (`NV2080_ENGINE_TYPE_*`).
        engine_type @ 12: u32,
        /// Whether the caller is the vGPU plugin.
        b_is_calling_context_vgpu_plugin @ 16: u8,
    }
}

wire_struct! {
    /// NV_CTXSHARE_ALLOCATION_PARAMETERS (`nvos.h`): alloc params of
    /// FERMI_CONTEXT_SHARE_A (a subcontext, child of a TSG).
    pub struct CtxShareAllocParams, size 12 {
        /// VA space.
        h_va_space @ 0: u32,
        /// Flags (see [`ctxshare`]).
        flags @ 4: u32,
        /// In/out: subcontext id (bit 31 reports ASYNC_PREFER_LOWER success).
        subctx_id @ 8: u32,
    }
}

/// `NV2080_GPU_CMD_GPU_GET_GID_FLAGS_FORMAT_BINARY` (bit 1 of the flags of
/// [`GidInfoParams`]): the UUID as 16 raw bytes instead of `GPU-xxxxxxxx-...`.
pub const GID_FLAGS_FORMAT_BINARY: u32 = 0x2;

wire_struct! {
    /// NV2080_CTRL_GPU_GET_GID_INFO_PARAMS (`ctrl/ctrl2080/ctrl2080gpu.h`).
    pub struct GidInfoParams, size 268 {
        /// Subdevice index (0).
        index @ 0: u32,
        /// Type (bit 0: SHA-1) and format (bit 1: binary).
        flags @ 4: u32,
        /// Out: bytes of `data` used (16 binary, 41 as text).
        length @ 8: u32,
        /// Out: the UUID.
        data @ 12: [u8; 256],
    }
}

wire_struct! {
    /// NV_VASPACE_ALLOCATION_PARAMETERS (`nvos.h`): alloc params of
    /// FERMI_VASPACE_A.
    pub struct VaSpaceAllocParams, size 56 {
        /// Index (see [`vaspace`]).
        index @ 0: u32,
        /// Flags.
        flags @ 4: u32,
        /// In/out: VA size.
        va_size @ 8: u64,
        /// Internal VA start.
        va_start_internal @ 16: u64,
        /// Internal VA limit.
        va_limit_internal @ 24: u64,
        /// Big page size (0 = default).
        big_page_size @ 32: u32,
        /// In/out: VA base.
        va_base @ 40: u64,
        /// PASID.
        pasid @ 48: u32,
    }
}

wire_struct! {
    /// NV_HOPPER_USERMODE_A_PARAMS (`nvos.h`): alloc params of
    /// HOPPER_USERMODE_A (older usermode classes take none).
    pub struct UsermodeAllocParams, size 2 {
        /// Map through BAR1 rather than BAR0.
        b_bar1_mapping @ 0: u8,
        /// Allocate the privileged page.
        b_priv @ 1: u8,
    }
}
