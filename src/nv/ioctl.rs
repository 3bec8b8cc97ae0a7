// SPDX-License-Identifier: GPL-2.0

//! NVIDIA driver ioctl commands: encoding, the escape table and decoding.
//!
//! core-only: this file uses nothing but `core`. It is built into `vgpu.ko` and
//! by the host test crate (`userspace/logic`), so its behaviour is tested with
//! `cargo test` in milliseconds.
//!
//! Facts (from `shared/nvidia-abi.md`): every command is
//! `_IOWR('F', nr, sizeof(params))`; the driver looks only at `_IOC_NR` and
//! `_IOC_SIZE`, never at the type or direction bits, and checks the size per
//! command. An unknown nr or a wrong size is `-EINVAL`.

/// The ioctl type byte of every NVIDIA escape ('F').
pub const NV_IOCTL_MAGIC: u8 = b'F';

const IOC_NRBITS: u32 = 8;
const IOC_TYPEBITS: u32 = 8;
const IOC_SIZEBITS: u32 = 14;
const IOC_NRSHIFT: u32 = 0;
const IOC_TYPESHIFT: u32 = IOC_NRSHIFT + IOC_NRBITS;
const IOC_SIZESHIFT: u32 = IOC_TYPESHIFT + IOC_TYPEBITS;
const IOC_DIRSHIFT: u32 = IOC_SIZESHIFT + IOC_SIZEBITS;
const IOC_WRITE: u32 = 1;
const IOC_READ: u32 = 2;

/// The largest size the 14-bit `_IOC_SIZE` field can hold.
pub const IOC_SIZE_MAX: usize = (1 << IOC_SIZEBITS) - 1;

/// The largest inner parameter block an `IOCTL_XFER_CMD` may carry.
pub const XFER_MAX_SIZE: usize = 16384;

/// Size of one `nv_ioctl_card_info_t` record.
pub const CARD_INFO_SIZE: usize = 72;

/// `_IOC_NR(cmd)`.
pub const fn ioc_nr(cmd: u32) -> u8 {
    ((cmd >> IOC_NRSHIFT) & ((1 << IOC_NRBITS) - 1)) as u8
}

/// `_IOC_TYPE(cmd)`.
pub const fn ioc_type(cmd: u32) -> u8 {
    ((cmd >> IOC_TYPESHIFT) & ((1 << IOC_TYPEBITS) - 1)) as u8
}

/// `_IOC_SIZE(cmd)`.
pub const fn ioc_size(cmd: u32) -> usize {
    ((cmd >> IOC_SIZESHIFT) & ((1 << IOC_SIZEBITS) - 1)) as usize
}

/// `_IOWR('F', nr, size)`: the form every NVIDIA escape takes.
///
/// `size` is truncated to the 14-bit field, as the C macro does.
pub const fn nv_iowr(nr: u8, size: usize) -> u32 {
    ((IOC_READ | IOC_WRITE) << IOC_DIRSHIFT)
        | (((size as u32) & ((1 << IOC_SIZEBITS) - 1)) << IOC_SIZESHIFT)
        | ((NV_IOCTL_MAGIC as u32) << IOC_TYPESHIFT)
        | ((nr as u32) << IOC_NRSHIFT)
}

/// Which device node an escape is meant for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Node {
    /// `/dev/nvidiactl` (195:255).
    Ctl,
    /// A GPU node, `/dev/nvidiaN`.
    Gpu,
    /// Either node.
    Either,
}

/// How the driver checks an escape's parameter size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeRule {
    /// Exactly this many bytes.
    Exact(usize),
    /// One of two sizes (two layouts of the same command).
    OneOf(usize, usize),
    /// A whole, non-zero number of records of this size.
    Records(usize),
    /// Not checked by the driver.
    Any,
}

impl SizeRule {
    /// Whether `size` satisfies this rule.
    pub const fn accepts(self, size: usize) -> bool {
        match self {
            SizeRule::Exact(n) => size == n,
            SizeRule::OneOf(a, b) => size == a || size == b,
            // `checked_rem`, not `%`: no panic path for objtool to follow
            // (rustc 1.85's rem-by-zero panic is not on its noreturn list).
            SizeRule::Records(n) => size != 0 && matches!(size.checked_rem(n), Some(0)),
            SizeRule::Any => true,
        }
    }
}

macro_rules! escapes {
    ($($(#[$doc:meta])* $name:ident = $nr:literal, $rule:expr, $node:ident;)*) => {
        /// An NVIDIA escape (the `_IOC_NR` of a command).
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Escape {
            $($(#[$doc])* $name,)*
        }

        impl Escape {
            /// Every escape vgpu knows, in nr order.
            pub const ALL: &'static [Escape] = &[$(Escape::$name,)*];

            /// The escape with this `_IOC_NR`, if vgpu knows it.
            pub const fn from_nr(nr: u8) -> Option<Escape> {
                match nr {
                    $($nr => Some(Escape::$name),)*
                    _ => None,
                }
            }

            /// Its `_IOC_NR`.
            pub const fn nr(self) -> u8 {
                match self {
                    $(Escape::$name => $nr,)*
                }
            }

            /// The driver's size check for its parameters.
            pub const fn size_rule(self) -> SizeRule {
                match self {
                    $(Escape::$name => $rule,)*
                }
            }

            /// The node the driver serves it on.
            pub const fn node(self) -> Node {
                match self {
                    $(Escape::$name => Node::$node,)*
                }
            }
        }
    };
}

escapes! {
    /// NVOS02 with an fd: maps or describes memory; not an allocation.
    RmAllocMemory = 0x27, SizeRule::Exact(56), Gpu;
    /// NVOS00: frees an object and its children.
    RmFree = 0x29, SizeRule::Exact(16), Ctl;
    /// NVOS54: an RM control call.
    RmControl = 0x2a, SizeRule::Exact(32), Ctl;
    /// NVOS21 (32 bytes) or NVOS64 (48 bytes): allocates an object.
    RmAlloc = 0x2b, SizeRule::OneOf(32, 48), Ctl;
    /// NVOS55: duplicates an object handle.
    RmDupObject = 0x34, SizeRule::Exact(28), Ctl;
    /// NVOS57: shares an object.
    RmShare = 0x35, SizeRule::Exact(24), Ctl;
    /// NVOS30.
    RmIdleChannels = 0x41, SizeRule::Exact(56), Ctl;
    /// NVOS32: the old heap interface (ALLOC_SIZE, FREE, INFO).
    RmVidHeapControl = 0x4a, SizeRule::Exact(184), Ctl;
    /// NVOS33 with an fd: sets up a CPU mapping on a fresh fd.
    RmMapMemory = 0x4e, SizeRule::Exact(56), Ctl;
    /// NVOS34.
    RmUnmapMemory = 0x4f, SizeRule::Exact(32), Ctl;
    /// NVOS46.
    RmMapMemoryDma = 0x57, SizeRule::Exact(64), Ctl;
    /// NVOS47.
    RmUnmapMemoryDma = 0x58, SizeRule::Exact(48), Ctl;
    /// NVOS56.
    RmUpdateDeviceMappingInfo = 0x5e, SizeRule::Exact(40), Ctl;
    /// An array of `nv_ioctl_card_info_t`, one per GPU or more.
    CardInfo = 0xc8, SizeRule::Records(CARD_INFO_SIZE), Ctl;
    /// `{int ctl_fd}`: ties an fd to a ctl fd; the driver takes it on
    /// either node (`escape.c:942-944` at 595.45.04), libcuda on GPU nodes.
    RegisterFd = 0xc9, SizeRule::Exact(4), Either;
    /// `{hClient, hDevice, fd, status}`.
    AllocOsEvent = 0xce, SizeRule::Exact(16), Either;
    /// `{hClient, hDevice, fd, status}`.
    FreeOsEvent = 0xcf, SizeRule::Exact(16), Either;
    /// Status code query.
    StatusCode = 0xd1, SizeRule::Exact(12), Ctl;
    /// `{u32 cmd; u32 reply; char version[64]}`.
    CheckVersionStr = 0xd2, SizeRule::Exact(72), Ctl;
    /// `{u32 cmd; u32 size; u64 ptr}`: wraps a command too large for the size field.
    IoctlXferCmd = 0xd3, SizeRule::Exact(16), Either;
    /// `u32 gpu_id[N]`.
    AttachGpusToFd = 0xd4, SizeRule::Records(4), Ctl;
    /// `{u64 memblock_size}`.
    SysParams = 0xd6, SizeRule::Exact(8), Ctl;
    /// NUMA information of a GPU.
    NumaInfo = 0xd7, SizeRule::Exact(560), Gpu;
    /// Export memory to a dma-buf fd.
    ExportToDmabufFd = 0xd9, SizeRule::Exact(2608), Gpu;
    /// `{int rc; u32 adapterStatus}` (driver >= 550).
    WaitOpenComplete = 0xda, SizeRule::Exact(8), Either;
}

impl Escape {
    /// Where the escape's parameters hold an fd the driver looks up in the
    /// caller's table, if any (the layouts' own `fd` fields).
    pub const fn embedded_fd(self) -> Option<usize> {
        use super::abi::{field_offset, Nvos02WithFd, Nvos33WithFd, RegisterFd};
        const REGISTER: usize = field_offset(RegisterFd::FIELDS, "ctl_fd");
        const MAP: usize = field_offset(Nvos33WithFd::FIELDS, "fd");
        const ALLOC: usize = field_offset(Nvos02WithFd::FIELDS, "fd");
        match self {
            Escape::RegisterFd => Some(REGISTER),
            Escape::RmMapMemory => Some(MAP),
            Escape::RmAllocMemory => Some(ALLOC),
            // ALLOC_OS_EVENT's and FREE_OS_EVENT's `fd` is a key RM never
            // looks up (`nv.c:680-707` at 550.163.01).
            _ => None,
        }
    }
}

/// Why a command was not accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// The nr names no escape vgpu knows.
    UnknownEscape(u8),
    /// The size does not fit the escape.
    BadSize {
        /// The escape.
        escape: Escape,
        /// The size the caller gave.
        size: usize,
    },
    /// An XFER's inner command is itself an XFER.
    NestedXfer,
}

/// A command the driver would accept: which escape, and its parameter size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Command {
    /// The escape.
    pub escape: Escape,
    /// The size of its parameter block, in bytes.
    pub size: usize,
}

/// Decodes an ioctl command as the driver does: by `_IOC_NR` and `_IOC_SIZE`
/// alone.
pub fn decode(cmd: u32) -> Result<Command, DecodeError> {
    decode_parts(ioc_nr(cmd), ioc_size(cmd))
}

/// [`decode`] for a release whose escapes and size checks `rule` gives
/// (`None`: the release has no such escape).
pub fn decode_with(
    cmd: u32,
    rule: impl Fn(Escape) -> Option<SizeRule>,
) -> Result<Command, DecodeError> {
    decode_parts_with(ioc_nr(cmd), ioc_size(cmd), rule)
}

/// Decodes an nr and size pair (used for the inner command of an XFER, whose
/// size is carried outside the command word).
pub fn decode_parts(nr: u8, size: usize) -> Result<Command, DecodeError> {
    decode_parts_with(nr, size, |e| Some(e.size_rule()))
}

/// [`decode_parts`] with a release's escapes and size checks (`rule`).
pub fn decode_parts_with(
    nr: u8,
    size: usize,
    rule: impl Fn(Escape) -> Option<SizeRule>,
) -> Result<Command, DecodeError> {
    let escape = Escape::from_nr(nr).ok_or(DecodeError::UnknownEscape(nr))?;
    let rule = rule(escape).ok_or(DecodeError::UnknownEscape(nr))?;
    if !rule.accepts(size) {
        return Err(DecodeError::BadSize { escape, size });
    }
    Ok(Command { escape, size })
}

/// The header of an `IOCTL_XFER_CMD`: `{u32 cmd; u32 size; u64 ptr}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Xfer {
    /// The inner escape's nr (the driver takes `_IOC_NR` of this field).
    pub cmd: u32,
    /// The inner parameter size.
    pub size: u32,
    /// User address of the inner parameters.
    pub ptr: u64,
}

impl Xfer {
    /// Size of the XFER header.
    pub const SIZE: usize = 16;

    /// Reads the header from its native-endian bytes.
    pub fn from_bytes(b: &[u8; Self::SIZE]) -> Xfer {
        Xfer {
            cmd: u32::from_ne_bytes([b[0], b[1], b[2], b[3]]),
            size: u32::from_ne_bytes([b[4], b[5], b[6], b[7]]),
            ptr: u64::from_ne_bytes([b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]]),
        }
    }

    /// Decodes the inner command. `cmd` holds the bare escape number (the
    /// driver compares it with the escape numbers as is, so a full request
    /// word is an unknown escape). The inner size may exceed the 14-bit field
    /// of an ordinary command but not [`XFER_MAX_SIZE`]; an XFER never wraps
    /// another XFER.
    pub fn inner(&self) -> Result<Command, DecodeError> {
        self.inner_with(|e| Some(e.size_rule()))
    }

    /// [`Xfer::inner`] with a release's escapes and size checks (`rule`).
    pub fn inner_with(
        &self,
        rule: impl Fn(Escape) -> Option<SizeRule>,
    ) -> Result<Command, DecodeError> {
        let size = self.size as usize;
        let nr =
            u8::try_from(self.cmd).map_err(|_| DecodeError::UnknownEscape(ioc_nr(self.cmd)))?;
        if nr == Escape::IoctlXferCmd.nr() {
            return Err(DecodeError::NestedXfer);
        }
        let escape = Escape::from_nr(nr).ok_or(DecodeError::UnknownEscape(nr))?;
        if size > XFER_MAX_SIZE {
            return Err(DecodeError::BadSize { escape, size });
        }
        decode_parts_with(nr, size, rule)
    }
}
