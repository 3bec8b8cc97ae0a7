// SPDX-License-Identifier: GPL-2.0

//! RM status codes (numbers).

// ---------------------------------------------------------------------------
// Status codes.
// ---------------------------------------------------------------------------

/// RM status codes (`NV_STATUS`), returned in the `status` field of a
/// parameter block. Values from `nvstatuscodes.h`.
pub mod status {
    /// Success.
    pub const NV_OK: u32 = 0x00;
    /// The caller's buffer is too small (`nvstatuscodes.h`).
    pub const NV_ERR_BUFFER_TOO_SMALL: u32 = 0x02;
    /// Busy, try again (`nvstatuscodes.h`; UVM: a concurrent UVM_INITIALIZE).
    pub const NV_ERR_BUSY_RETRY: u32 = 0x03;
    /// No GPU with this UUID (`nvstatuscodes.h`).
    pub const NV_ERR_GPU_UUID_NOT_FOUND: u32 = 0x12;
    /// Not allowed in this state (`nvstatuscodes.h`; UVM: before UVM_INITIALIZE).
    pub const NV_ERR_ILLEGAL_ACTION: u32 = 0x16;
    /// Generic "in use".
    pub const NV_ERR_IN_USE: u32 = 0x17;
    /// Out of some resource other than memory.
    pub const NV_ERR_INSUFFICIENT_RESOURCES: u32 = 0x1A;
    /// The caller may not do this (e.g. no GPU fd for a device alloc).
    pub const NV_ERR_INSUFFICIENT_PERMISSIONS: u32 = 0x1B;
    /// A handle already in use, e.g. a client handle asked for twice
    /// (`nvstatuscodes.h:54` at 550.163.01).
    pub const NV_ERR_INSERT_DUPLICATE_NAME: u32 = 0x19;
    /// Bad address (`nvstatuscodes.h`).
    pub const NV_ERR_INVALID_ADDRESS: u32 = 0x1E;
    /// Bad argument.
    pub const NV_ERR_INVALID_ARGUMENT: u32 = 0x1F;
    /// Bad channel (`nvstatuscodes.h`).
    pub const NV_ERR_INVALID_CHANNEL: u32 = 0x21;
    /// Unknown or unallowed class.
    pub const NV_ERR_INVALID_CLASS: u32 = 0x22;
    /// Unknown client handle.
    pub const NV_ERR_INVALID_CLIENT: u32 = 0x23;
    /// Unknown control command (`nvstatuscodes.h`).
    pub const NV_ERR_INVALID_COMMAND: u32 = 0x24;
    /// Bad device (`nvstatuscodes.h`).
    pub const NV_ERR_INVALID_DEVICE: u32 = 0x26;
    /// No such OS event (`nvstatuscodes.h`).
    pub const NV_ERR_INVALID_EVENT: u32 = 0x28;
    /// Bad flags (`nvstatuscodes.h`).
    pub const NV_ERR_INVALID_FLAGS: u32 = 0x29;
    /// Bad function, e.g. an unknown VID_HEAP function (`nvstatuscodes.h`).
    pub const NV_ERR_INVALID_FUNCTION: u32 = 0x2A;
    /// Bad limit (`nvstatuscodes.h`).
    pub const NV_ERR_INVALID_LIMIT: u32 = 0x2E;
    /// Bad object (`nvstatuscodes.h`).
    pub const NV_ERR_INVALID_OBJECT: u32 = 0x31;
    /// Unknown object handle.
    pub const NV_ERR_INVALID_OBJECT_HANDLE: u32 = 0x33;
    /// The new handle is unusable, e.g. already taken (`nvstatuscodes.h`).
    pub const NV_ERR_INVALID_OBJECT_NEW: u32 = 0x34;
    /// The handle to free is unusable (`nvstatuscodes.h`).
    pub const NV_ERR_INVALID_OBJECT_OLD: u32 = 0x35;
    /// The parent is unusable (`nvstatuscodes.h`).
    pub const NV_ERR_INVALID_OBJECT_PARENT: u32 = 0x36;
    /// A parameter is not valid, e.g. an fd that is not an NVIDIA file
    /// (`nvstatuscodes.h:88` at 595.45.04).
    pub const NV_ERR_INVALID_PARAMETER: u32 = 0x3B;
    /// Bad offset (`nvstatuscodes.h`).
    pub const NV_ERR_INVALID_OFFSET: u32 = 0x37;
    /// A parameter block of the wrong size (`nvstatuscodes.h`).
    pub const NV_ERR_INVALID_PARAM_STRUCT: u32 = 0x3A;
    /// A bad user pointer (`nvstatuscodes.h`).
    pub const NV_ERR_INVALID_POINTER: u32 = 0x3D;
    /// Wrong state for this call.
    pub const NV_ERR_INVALID_STATE: u32 = 0x40;
    /// Call again (`nvstatuscodes.h`).
    pub const NV_ERR_MORE_PROCESSING_REQUIRED: u32 = 0x4D;
    /// Out of memory; CUDA reports it as `cudaErrorMemoryAllocation` for VRAM.
    pub const NV_ERR_NO_MEMORY: u32 = 0x51;
    /// Not supported here.
    pub const NV_ERR_NOT_SUPPORTED: u32 = 0x56;
    /// No such object.
    pub const NV_ERR_OBJECT_NOT_FOUND: u32 = 0x57;
    /// An OS call failed (`nvstatuscodes.h`).
    pub const NV_ERR_OPERATING_SYSTEM: u32 = 0x59;
    /// The object belongs to another device (`nvstatuscodes.h`).
    pub const NV_ERR_OTHER_DEVICE_FOUND: u32 = 0x5A;
    /// Out of range (`nvstatuscodes.h`).
    pub const NV_ERR_OUT_OF_RANGE: u32 = 0x5B;
    /// No page tables, e.g. no mm for a UVM VA space (`nvstatuscodes.h`).
    pub const NV_ERR_PAGE_TABLE_NOT_AVAIL: u32 = 0x5D;
    /// The state is already in use (e.g. a second mapping context on a file).
    pub const NV_ERR_STATE_IN_USE: u32 = 0x63;
    /// A fatal signal stopped the call (UVM checks between steps of long
    /// operations). Value from secondary sources (`nvstatuscodes.h` itself
    /// unchecked): 0x64, between STATE_IN_USE and TIMEOUT.
    pub const NV_ERR_SIGNAL_PENDING: u32 = 0x64;
    /// Timed out (`nvstatuscodes.h`).
    pub const NV_ERR_TIMEOUT: u32 = 0x65;
    /// A UVM range overlaps another (`nvstatuscodes.h`).
    pub const NV_ERR_UVM_ADDRESS_IN_USE: u32 = 0x68;
    /// Generic failure.
    pub const NV_ERR_GENERIC: u32 = 0xFFFF;
    /// Nothing was done (a warning, `nvstatuscodes.h`).
    pub const NV_WARN_NOTHING_TO_DO: u32 = 0x10006;

    /// The C name of a status code, for logs; `None` for codes this file does
    /// not list.
    pub const fn name(status: u32) -> Option<&'static str> {
        Some(match status {
            NV_OK => "NV_OK",
            NV_ERR_BUFFER_TOO_SMALL => "NV_ERR_BUFFER_TOO_SMALL",
            NV_ERR_IN_USE => "NV_ERR_IN_USE",
            NV_ERR_INSUFFICIENT_RESOURCES => "NV_ERR_INSUFFICIENT_RESOURCES",
            NV_ERR_INSUFFICIENT_PERMISSIONS => "NV_ERR_INSUFFICIENT_PERMISSIONS",
            NV_ERR_INSERT_DUPLICATE_NAME => "NV_ERR_INSERT_DUPLICATE_NAME",
            NV_ERR_INVALID_ADDRESS => "NV_ERR_INVALID_ADDRESS",
            NV_ERR_INVALID_ARGUMENT => "NV_ERR_INVALID_ARGUMENT",
            NV_ERR_INVALID_CHANNEL => "NV_ERR_INVALID_CHANNEL",
            NV_ERR_INVALID_CLASS => "NV_ERR_INVALID_CLASS",
            NV_ERR_INVALID_CLIENT => "NV_ERR_INVALID_CLIENT",
            NV_ERR_INVALID_COMMAND => "NV_ERR_INVALID_COMMAND",
            NV_ERR_INVALID_DEVICE => "NV_ERR_INVALID_DEVICE",
            NV_ERR_INVALID_EVENT => "NV_ERR_INVALID_EVENT",
            NV_ERR_INVALID_FLAGS => "NV_ERR_INVALID_FLAGS",
            NV_ERR_INVALID_FUNCTION => "NV_ERR_INVALID_FUNCTION",
            NV_ERR_INVALID_LIMIT => "NV_ERR_INVALID_LIMIT",
            NV_ERR_INVALID_OBJECT => "NV_ERR_INVALID_OBJECT",
            NV_ERR_INVALID_OBJECT_HANDLE => "NV_ERR_INVALID_OBJECT_HANDLE",
            NV_ERR_INVALID_OBJECT_NEW => "NV_ERR_INVALID_OBJECT_NEW",
            NV_ERR_INVALID_OBJECT_OLD => "NV_ERR_INVALID_OBJECT_OLD",
            NV_ERR_INVALID_OBJECT_PARENT => "NV_ERR_INVALID_OBJECT_PARENT",
            NV_ERR_INVALID_PARAMETER => "NV_ERR_INVALID_PARAMETER",
            NV_ERR_INVALID_PARAM_STRUCT => "NV_ERR_INVALID_PARAM_STRUCT",
            NV_ERR_INVALID_POINTER => "NV_ERR_INVALID_POINTER",
            NV_ERR_INVALID_STATE => "NV_ERR_INVALID_STATE",
            NV_ERR_NO_MEMORY => "NV_ERR_NO_MEMORY",
            NV_ERR_NOT_SUPPORTED => "NV_ERR_NOT_SUPPORTED",
            NV_ERR_OBJECT_NOT_FOUND => "NV_ERR_OBJECT_NOT_FOUND",
            NV_ERR_OPERATING_SYSTEM => "NV_ERR_OPERATING_SYSTEM",
            NV_ERR_OUT_OF_RANGE => "NV_ERR_OUT_OF_RANGE",
            NV_ERR_STATE_IN_USE => "NV_ERR_STATE_IN_USE",
            NV_ERR_SIGNAL_PENDING => "NV_ERR_SIGNAL_PENDING",
            NV_ERR_TIMEOUT => "NV_ERR_TIMEOUT",
            NV_ERR_GENERIC => "NV_ERR_GENERIC",
            NV_ERR_BUSY_RETRY => "NV_ERR_BUSY_RETRY",
            NV_ERR_GPU_UUID_NOT_FOUND => "NV_ERR_GPU_UUID_NOT_FOUND",
            NV_ERR_ILLEGAL_ACTION => "NV_ERR_ILLEGAL_ACTION",
            NV_ERR_INVALID_OFFSET => "NV_ERR_INVALID_OFFSET",
            NV_ERR_MORE_PROCESSING_REQUIRED => "NV_ERR_MORE_PROCESSING_REQUIRED",
            NV_ERR_OTHER_DEVICE_FOUND => "NV_ERR_OTHER_DEVICE_FOUND",
            NV_ERR_PAGE_TABLE_NOT_AVAIL => "NV_ERR_PAGE_TABLE_NOT_AVAIL",
            NV_ERR_UVM_ADDRESS_IN_USE => "NV_ERR_UVM_ADDRESS_IN_USE",
            NV_WARN_NOTHING_TO_DO => "NV_WARN_NOTHING_TO_DO",
            _ => return None,
        })
    }
}

/// An RM status code with a readable `Display` (`NV_ERR_NO_MEMORY (0x51)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NvStatus(pub u32);

impl NvStatus {
    /// Whether this is `NV_OK`.
    pub const fn is_ok(self) -> bool {
        self.0 == status::NV_OK
    }

    /// The C name, if known.
    pub const fn name(self) -> Option<&'static str> {
        status::name(self.0)
    }
}

impl core::fmt::Display for NvStatus {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.name() {
            Some(n) => write!(f, "{n} ({:#x})", self.0),
            None => write!(f, "NV status {:#x}", self.0),
        }
    }
}
