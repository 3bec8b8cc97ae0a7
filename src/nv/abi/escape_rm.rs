// SPDX-License-Identifier: GPL-2.0

//! Layouts of the RM object escapes: free, alloc memory, alloc, control,
//! dup and share.

// ---------------------------------------------------------------------------
// Top-level escape parameter blocks.
// ---------------------------------------------------------------------------

wire_struct! {
    /// NVOS00: RM_FREE. Freeing a client's root handle frees the client;
    /// freeing an object frees its children.
    pub struct Nvos00, size 16 {
        /// Client.
        h_root @ 0: u32,
        /// Parent of the object.
        h_object_parent @ 4: u32,
        /// Object to free.
        h_object_old @ 8: u32,
        /// Out: status.
        status @ 12: u32,
    }
}

wire_struct! {
    /// NVOS02: the body of RM_ALLOC_MEMORY. For class 0x40 and a non-root
    /// caller it allocates nothing and returns `limit = heap size - 1`.
    pub struct Nvos02, size 48 {
        /// Client.
        h_root @ 0: u32,
        /// Parent (device).
        h_object_parent @ 4: u32,
        /// New handle.
        h_object_new @ 8: u32,
        /// Class.
        h_class @ 12: u32,
        /// NVOS02 flags (see [`os02`]).
        flags @ 16: u32,
        /// In/out: memory address (a user pointer).
        p_memory @ 24: u64,
        /// In/out: limit (size - 1).
        limit @ 32: u64,
        /// Out: status.
        status @ 40: u32,
    }
}

wire_struct! {
    /// RM_ALLOC_MEMORY's parameter block: NVOS02 plus the fd of a real
    /// nvidia file (`nv_ioctl_nvos02_parameters_with_fd`). Served on GPU nodes
    /// only.
    pub struct Nvos02WithFd, size 56 {
        /// The NVOS02 body.
        params @ 0: Nvos02,
        /// An fd in the caller's table.
        fd @ 48: i32,
    }
}

wire_struct! {
    /// NVOS21: RM_ALLOC, 32-byte layout (status at 28 since 535).
    pub struct Nvos21, size 32 {
        /// Client (0 when allocating a client).
        h_root @ 0: u32,
        /// Parent.
        h_object_parent @ 4: u32,
        /// In/out: new handle (0 = RM generates).
        h_object_new @ 8: u32,
        /// Class.
        h_class @ 12: u32,
        /// User pointer to the class's alloc params.
        p_alloc_parms @ 16: u64,
        /// Size of the alloc params.
        params_size @ 24: u32,
        /// Out: status.
        status @ 28: u32,
    }
}

wire_struct! {
    /// NVOS64: RM_ALLOC, 48-byte layout (what current libcuda uses).
    pub struct Nvos64, size 48 {
        /// Client (0 when allocating a client).
        h_root @ 0: u32,
        /// Parent.
        h_object_parent @ 4: u32,
        /// In/out: new handle (0 = RM generates).
        h_object_new @ 8: u32,
        /// Class.
        h_class @ 12: u32,
        /// User pointer to the class's alloc params.
        p_alloc_parms @ 16: u64,
        /// User pointer to requested rights (0 = default).
        p_rights_requested @ 24: u64,
        /// Size of the alloc params.
        params_size @ 32: u32,
        /// Flags (bit 0 [`NVOS64_FLAGS_FINN_SERIALIZED`]).
        flags @ 36: u32,
        /// Out: status.
        status @ 40: u32,
    }
}

wire_struct! {
    /// NVOS54: RM_CONTROL. Control params are at most 1 MiB.
    pub struct Nvos54, size 32 {
        /// Client.
        h_client @ 0: u32,
        /// Object the control is sent to.
        h_object @ 4: u32,
        /// Control command (see [`ctrl`]).
        cmd @ 8: u32,
        /// Flags.
        flags @ 12: u32,
        /// User pointer to the control's params.
        params @ 16: u64,
        /// Size of the params.
        params_size @ 24: u32,
        /// Out: status.
        status @ 28: u32,
    }
}

/// Largest RM_CONTROL parameter block.
pub const CONTROL_PARAMS_MAX: usize = 1 << 20;

wire_struct! {
    /// NVOS55: RM_DUP_OBJECT.
    pub struct Nvos55, size 28 {
        /// Destination client.
        h_client @ 0: u32,
        /// Destination parent.
        h_parent @ 4: u32,
        /// In/out: new handle.
        h_object @ 8: u32,
        /// Source client.
        h_client_src @ 12: u32,
        /// Source object.
        h_object_src @ 16: u32,
        /// Flags.
        flags @ 20: u32,
        /// Out: status.
        status @ 24: u32,
    }
}

wire_struct! {
    /// `RS_SHARE_POLICY` (`rs_access.h`): the share policy inside NVOS57.
    pub struct RsSharePolicy, size 12 {
        /// Target (client handle or pid, by type).
        target @ 0: u32,
        /// Access rights mask (`RS_ACCESS_MASK`, one 32-bit limb).
        access_mask @ 4: u32,
        /// `RS_SHARE_TYPE_*`.
        share_type @ 8: u16,
        /// `RS_SHARE_ACTION_*`.
        action @ 10: u8,
    }
}

wire_struct! {
    /// NVOS57: RM_SHARE.
    pub struct Nvos57, size 24 {
        /// Owner client.
        h_client @ 0: u32,
        /// Object to share.
        h_object @ 4: u32,
        /// Policy entry (`rs_access.h`).
        share_policy @ 8: RsSharePolicy,
        /// Out: status.
        status @ 20: u32,
    }
}
