// SPDX-License-Identifier: GPL-2.0

//! Layouts of the map/unmap escapes and the frontend's own escapes (card
//! info, version check, fd registration, events, system parameters).

use super::memory_flags::version;

wire_struct! {
    /// NVOS33: the body of RM_MAP_MEMORY.
    pub struct Nvos33, size 48 {
        /// Client.
        h_client @ 0: u32,
        /// Device (or subdevice, for a usermode page).
        h_device @ 4: u32,
        /// Memory to map.
        h_memory @ 8: u32,
        /// Offset into the memory.
        offset @ 16: u64,
        /// Length to map.
        length @ 24: u64,
        /// Out: the linear address token (pass it to RM_UNMAP_MEMORY).
        p_linear_address @ 32: u64,
        /// Out: status.
        status @ 40: u32,
        /// NVOS33 flags (see [`os33`]).
        flags @ 44: u32,
    }
}

wire_struct! {
    /// RM_MAP_MEMORY's parameter block: NVOS33 plus the fresh fd to be
    /// mmapped (`nv_ioctl_nvos33_parameters_with_fd`).
    pub struct Nvos33WithFd, size 56 {
        /// The NVOS33 body.
        params @ 0: Nvos33,
        /// A fresh fd of the node to mmap (ctl for sysmem, GPU for FB/BAR).
        fd @ 48: i32,
    }
}

wire_struct! {
    /// NVOS34: RM_UNMAP_MEMORY.
    pub struct Nvos34, size 32 {
        /// Client.
        h_client @ 0: u32,
        /// Device.
        h_device @ 4: u32,
        /// Memory.
        h_memory @ 8: u32,
        /// The linear address RM_MAP_MEMORY returned.
        p_linear_address @ 16: u64,
        /// Out: status.
        status @ 24: u32,
        /// Flags.
        flags @ 28: u32,
    }
}

wire_struct! {
    /// `nv_pci_info_t` (inside a CARD_INFO record).
    pub struct PciInfo, size 12 {
        /// PCI domain.
        domain @ 0: u32,
        /// Bus.
        bus @ 4: u8,
        /// Slot.
        slot @ 5: u8,
        /// Function.
        function @ 6: u8,
        /// Vendor id (0x10de).
        vendor_id @ 8: u16,
        /// Device id.
        device_id @ 10: u16,
    }
}

wire_struct! {
    /// `nv_ioctl_card_info_t`: one record of CARD_INFO.
    pub struct CardInfo, size 72 {
        /// Non-zero for a present GPU.
        valid @ 0: u8,
        /// PCI location and ids.
        pci_info @ 4: PciInfo,
        /// The GPU id RM uses (see GPU_GET_ID_INFO_V2).
        gpu_id @ 16: u32,
        /// Interrupt line.
        interrupt_line @ 20: u16,
        /// BAR0 address.
        reg_address @ 24: u64,
        /// BAR0 size.
        reg_size @ 32: u64,
        /// BAR1 address.
        fb_address @ 40: u64,
        /// BAR1 aperture size (not VRAM).
        fb_size @ 48: u64,
        /// Minor number of /dev/nvidiaN (not necessarily PCI order).
        minor_number @ 56: u32,
        /// Device name, NUL-padded.
        dev_name @ 60: [u8; 10],
    }
}

/// The bytes of a NUL-terminated C string field, up to the first NUL.
pub fn c_str_bytes(field: &[u8]) -> &[u8] {
    let end = field.iter().position(|&c| c == 0).unwrap_or(field.len());
    field.get(..end).unwrap_or(field)
}

impl CardInfo {
    /// Whether the record describes a present GPU.
    pub const fn is_valid(&self) -> bool {
        self.valid != 0
    }

    /// The device name, up to its first NUL.
    pub fn dev_name(&self) -> &[u8] {
        c_str_bytes(&self.dev_name)
    }
}

wire_struct! {
    /// `nv_ioctl_rm_api_version_t`: CHECK_VERSION_STR.
    pub struct RmApiVersion, size 72 {
        /// [`version::CMD_STRICT`], [`version::CMD_RELAXED`] or
        /// [`version::CMD_QUERY`].
        cmd @ 0: u32,
        /// Out: reply (the driver always sets 1).
        reply @ 4: u32,
        /// In: the client's version; out (query): the driver's.
        version_string @ 8: [u8; 64],
    }
}

impl RmApiVersion {
    /// A request with `cmd` and `version` (truncated to 63 bytes, NUL-padded).
    pub fn new(cmd: u32, version: &[u8]) -> RmApiVersion {
        let mut v = RmApiVersion {
            cmd,
            ..RmApiVersion::default()
        };
        for (d, s) in v
            .version_string
            .iter_mut()
            .zip(version.iter().take(version::STRING_LENGTH - 1))
        {
            *d = *s;
        }
        v
    }

    /// The version string, up to its first NUL.
    pub fn version(&self) -> &[u8] {
        c_str_bytes(&self.version_string)
    }
}

wire_struct! {
    /// `nv_ioctl_register_fd_t`: REGISTER_FD on a GPU node.
    pub struct RegisterFd, size 4 {
        /// The ctl fd to tie the GPU fd to.
        ctl_fd @ 0: i32,
    }
}

wire_struct! {
    /// `nv_ioctl_alloc_os_event_t` / `nv_ioctl_free_os_event_t`: ALLOC_OS_EVENT
    /// and FREE_OS_EVENT. The event is bound to the file the ioctl is made on;
    /// `fd` is the key the client later names it by.
    pub struct OsEvent, size 16 {
        /// Client.
        h_client @ 0: u32,
        /// Device.
        h_device @ 4: u32,
        /// A number the event is keyed by with its client; libcuda passes
        /// the file's own fd, which RM never looks up (`nv.c:680-707`,
        /// `osapi.c:468-582` at 550.163.01).
        fd @ 8: u32,
        /// Out: status.
        status @ 12: u32,
    }
}

wire_struct! {
    /// `nv_ioctl_sys_params_t`: SYS_PARAMS.
    pub struct SysParams, size 8 {
        /// Memory block size.
        memblock_size @ 0: u64,
    }
}

wire_struct! {
    /// `nv_ioctl_wait_open_complete_t`: WAIT_OPEN_COMPLETE (driver >= 550).
    pub struct WaitOpenComplete, size 8 {
        /// Out: the open's return code.
        rc @ 0: i32,
        /// Out: adapter status.
        adapter_status @ 4: u32,
    }
}
