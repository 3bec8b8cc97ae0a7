// SPDX-License-Identifier: GPL-2.0

//! NVIDIA RM parameter structures, classes, control commands and status codes.
//!
//! core-only: this file uses nothing but `core` and contains no `unsafe`. It is
//! built into `vgpu.ko` and by the host crate `userspace/logic` (and through it
//! by the `nvclient` test library), so every layout here is pinned by host
//! tests (`userspace/logic/tests/abi.rs`).
//!
//! Sources. The facts come from `shared/nvidia-abi.md` unless a doc comment
//! names a file: those were looked up in NVIDIA/open-gpu-kernel-modules (tag
//! 595.45.04); paths are relative to `src/common/sdk/nvidia/inc/` unless they
//! start with `kernel-open/` or `src/nvidia/`. Offsets of looked-up structures
//! were obtained by compiling `offsetof` probes against those headers on
//! x86_64. No code was copied; these are the project's own definitions.
//!
//! Layout model. Every structure is declared with `wire_struct!`: each field
//! names its byte offset and type, and the macro generates a plain Rust struct
//! whose fields are native values, plus `SIZE`, `from_bytes` and `to_bytes`
//! that encode field by field in native byte order (x86_64 and arm64 are
//! little-endian; the driver ABI is the C layout of the host). Bytes that no
//! field covers (C padding) encode as zero and are ignored when decoding.
//! A compile-time check rejects a struct whose fields overlap, run past its
//! size or sit at an offset their C alignment forbids, so a typo in an offset
//! fails the build.
//!
//! `from_bytes` takes exactly `SIZE` bytes (anything else is `None`): the
//! driver checks each parameter size exactly, and a block of another size is
//! another ABI version, which must not be read with this layout.

// An ABI table shared with the host crate: the module uses a subset of it, and
// its items must be `pub` for the host crate, while the module's `nv` is
// private. So the kernel build's dead-code and unreachable-pub lints, which
// would flag every unused entry, are off for this file.
#![allow(dead_code, unreachable_pub)]

// ---------------------------------------------------------------------------
// The wire encoding.
// ---------------------------------------------------------------------------

/// A value with a fixed native-endian encoding in the driver's C ABI.
///
/// Implemented for the integer types the ABI uses, for fixed arrays of wire
/// values and for every struct declared with `wire_struct!` (so structs nest).
pub trait Wire: Copy {
    /// Encoded size in bytes (`sizeof` in C).
    const SIZE: usize;
    /// C alignment in bytes (`_Alignof` on x86_64).
    const ALIGN: usize;
    /// The all-zero value.
    const ZERO: Self;

    /// Decodes a value from the start of `b`. Bytes missing at the end of a
    /// short `b` read as zero; this never panics.
    fn decode(b: &[u8]) -> Self;

    /// Encodes the value at the start of `out`. Bytes that do not fit in a
    /// short `out` are dropped; this never panics.
    fn encode(&self, out: &mut [u8]);
}

/// The part of `b` from `off` on (empty when `off` is past the end).
pub(super) fn tail(b: &[u8], off: usize) -> &[u8] {
    b.get(off..).unwrap_or(&[])
}

/// The part of `b` from `off` on (empty when `off` is past the end).
pub(super) fn tail_mut(b: &mut [u8], off: usize) -> &mut [u8] {
    b.get_mut(off..).unwrap_or(&mut [])
}

macro_rules! wire_int {
    ($($t:ty),*) => {$(
        impl Wire for $t {
            const SIZE: usize = core::mem::size_of::<$t>();
            const ALIGN: usize = core::mem::size_of::<$t>();
            const ZERO: Self = 0;

            fn decode(b: &[u8]) -> Self {
                const N: usize = core::mem::size_of::<$t>();
                // The common case, whole: one bounds check and a load (a
                // hot path: every block vgpu decides on is decoded).
                if let Some(Ok(a)) = b.get(..N).map(<[u8; N]>::try_from) {
                    return <$t>::from_ne_bytes(a);
                }
                let mut a = [0u8; N];
                for (d, s) in a.iter_mut().zip(b) {
                    *d = *s;
                }
                <$t>::from_ne_bytes(a)
            }

            fn encode(&self, out: &mut [u8]) {
                const N: usize = core::mem::size_of::<$t>();
                if let Some(d) = out.get_mut(..N) {
                    d.copy_from_slice(&self.to_ne_bytes());
                    return;
                }
                for (d, s) in out.iter_mut().zip(self.to_ne_bytes()) {
                    *d = s;
                }
            }
        }
    )*};
}

wire_int!(u8, u16, u32, u64, i8, i16, i32, i64);

impl<T: Wire, const N: usize> Wire for [T; N] {
    const SIZE: usize = T::SIZE * N;
    const ALIGN: usize = T::ALIGN;
    const ZERO: Self = [T::ZERO; N];

    fn decode(b: &[u8]) -> Self {
        let mut a = [T::ZERO; N];
        for (i, v) in a.iter_mut().enumerate() {
            *v = T::decode(tail(b, i * T::SIZE));
        }
        a
    }

    fn encode(&self, out: &mut [u8]) {
        for (i, v) in self.iter().enumerate() {
            v.encode(tail_mut(out, i * T::SIZE));
        }
    }
}

/// One field of a wire struct for the layout checks: offset, size, alignment.
pub(super) type FieldLayout = (usize, usize, usize);

/// One field of a `wire_struct!`, as its `FIELDS` table lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WireField {
    /// The Rust field name.
    pub name: &'static str,
    /// Byte offset in the C structure.
    pub offset: usize,
    /// Size in bytes (`sizeof` of the C member).
    pub size: usize,
}

/// The offset of field `name` in `fields` (a `wire_struct!`'s `FIELDS`), if
/// it has one.
pub const fn find_field(fields: &[WireField], name: &str) -> Option<usize> {
    let mut i = 0;
    while i < fields.len() {
        let (a, b) = (fields[i].name.as_bytes(), name.as_bytes());
        if a.len() == b.len() {
            let mut j = 0;
            while j < a.len() && a[j] == b[j] {
                j += 1;
            }
            if j == a.len() {
                return Some(fields[i].offset);
            }
        }
        i += 1;
    }
    None
}

/// The offset of field `name` in `fields` (a `wire_struct!`'s `FIELDS`).
/// Evaluated at compile time where it names a constant: a name that is not
/// a field fails the build.
pub const fn field_offset(fields: &[WireField], name: &str) -> usize {
    match find_field(fields, name) {
        Some(off) => off,
        None => panic!("no such field"),
    }
}

/// Copies every field of `from` (laid out as `from_fields`) that
/// `to_fields` also has, by name, to its place in `to`: a block of one
/// release's layout into another's. Fields the target lacks are dropped,
/// fields the source lacks keep what `to` holds, and a field whose size
/// differs (an array of per-GPU entries, 32 in one release and 256 in
/// another) gives its common prefix. Fields that do not fit their block are
/// skipped; this never panics.
pub fn relayout(from: &[u8], from_fields: &[WireField], to: &mut [u8], to_fields: &[WireField]) {
    for f in from_fields {
        let Some(t) = to_fields.iter().find(|t| t.name == f.name) else {
            continue;
        };
        let n = f.size.min(t.size);
        let src = from.get(f.offset..f.offset + n);
        let dst = to.get_mut(t.offset..t.offset + n);
        if let (Some(src), Some(dst)) = (src, dst) {
            dst.copy_from_slice(src);
        }
    }
}

/// One field of type `T` at byte `off` of a block, without decoding the
/// rest (a whole decode of a large block costs hundreds of instructions on
/// a hot path that needs one field).
pub fn read_field<T: Wire>(b: &[u8], off: usize) -> T {
    T::decode(tail(b, off))
}

/// Whether every field ends at or before `size`.
pub(super) const fn fields_fit(fields: &[FieldLayout], size: usize) -> bool {
    let mut i = 0;
    while i < fields.len() {
        if fields[i].0 + fields[i].1 > size {
            return false;
        }
        i += 1;
    }
    true
}

/// Whether no two fields share a byte.
pub(super) const fn fields_disjoint(fields: &[FieldLayout]) -> bool {
    let mut i = 0;
    while i < fields.len() {
        let mut j = i + 1;
        while j < fields.len() {
            let (a, alen, _) = fields[i];
            let (b, blen, _) = fields[j];
            if a < b + blen && b < a + alen {
                return false;
            }
            j += 1;
        }
        i += 1;
    }
    true
}

/// Whether every field sits at a multiple of its C alignment.
pub(super) const fn fields_aligned(fields: &[FieldLayout]) -> bool {
    let mut i = 0;
    while i < fields.len() {
        if !matches!(fields[i].0.checked_rem(fields[i].2), Some(0)) {
            return false;
        }
        i += 1;
    }
    true
}

/// The largest alignment of the fields (1 for none): the C struct's alignment.
pub(super) const fn max_align(fields: &[FieldLayout]) -> usize {
    let mut a = 1;
    let mut i = 0;
    while i < fields.len() {
        if fields[i].2 > a {
            a = fields[i].2;
        }
        i += 1;
    }
    a
}

/// Declares a driver structure by explicit byte offsets.
///
/// ```text
/// wire_struct! {
///     /// Doc of the struct.
///     pub struct Name, size 16 {
///         /// Doc of the field.
///         field_a @ 0: u32,
///         field_b @ 8: [u8; 8],
///     }
/// }
/// ```
///
/// Generates the struct (`Clone, Copy, Debug, PartialEq, Eq`, and a `Default`
/// that is all zero, written by hand because arrays longer than 32 have no
/// derived `Default`), `SIZE`, `from_bytes` (exactly `SIZE` bytes) and
/// `to_bytes` (padding zeroed), an impl of [`Wire`], and compile-time checks
/// that the fields fit, do not overlap, are aligned, and that `SIZE` is a
/// multiple of the struct's alignment (as C requires).
macro_rules! wire_struct {
    (
        $(#[$meta:meta])*
        pub struct $name:ident, size $size:literal {
            $(
                $(#[$fmeta:meta])*
                $field:ident @ $off:literal : $ty:ty
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $name {
            $(
                $(#[$fmeta])*
                pub $field: $ty,
            )*
        }

        impl $name {
            /// Size of the C structure in bytes (x86_64).
            pub const SIZE: usize = $size;

            /// Decodes the structure from exactly [`Self::SIZE`] native-endian
            /// bytes; `None` for any other length.
            pub fn from_bytes(b: &[u8]) -> Option<Self> {
                if b.len() != Self::SIZE {
                    return None;
                }
                Some(<Self as Wire>::decode(b))
            }

            /// Each field's name, byte offset and size, in declaration order:
            /// what the conformance check (`userspace/conformance`) compares
            /// with the C compiler's `offsetof` and `sizeof` on NVIDIA's headers.
            pub const FIELDS: &'static [crate::nv::abi::WireField] = &[
                $(crate::nv::abi::WireField {
                    name: stringify!($field),
                    offset: $off,
                    size: <$ty as Wire>::SIZE,
                },)*
            ];

            /// Encodes the structure field by field; padding bytes are zero.
            pub fn to_bytes(self) -> [u8; $size] {
                let mut out = [0u8; $size];
                <Self as Wire>::encode(&self, &mut out);
                out
            }
        }

        impl Default for $name {
            fn default() -> Self {
                <Self as Wire>::ZERO
            }
        }

        impl Wire for $name {
            const SIZE: usize = $size;
            const ALIGN: usize = max_align(&[$(($off, <$ty as Wire>::SIZE, <$ty as Wire>::ALIGN)),*]);
            const ZERO: Self = Self {
                $($field: <$ty as Wire>::ZERO,)*
            };

            #[allow(unused_variables)]
            fn decode(b: &[u8]) -> Self {
                Self {
                    $($field: <$ty as Wire>::decode(tail(b, $off)),)*
                }
            }

            #[allow(unused_variables)]
            fn encode(&self, out: &mut [u8]) {
                $(<$ty as Wire>::encode(&self.$field, tail_mut(out, $off));)*
            }
        }

        const _: () = {
            let fields: &[FieldLayout] = &[$(($off, <$ty as Wire>::SIZE, <$ty as Wire>::ALIGN)),*];
            assert!(
                fields_fit(fields, $size),
                concat!(stringify!($name), ": a field runs past the struct's size")
            );
            assert!(
                fields_disjoint(fields),
                concat!(stringify!($name), ": two fields overlap")
            );
            assert!(
                fields_aligned(fields),
                concat!(stringify!($name), ": a field is not at its C alignment")
            );
            assert!(
                ($size % max_align(fields)) == 0,
                concat!(stringify!($name), ": size is not a multiple of its alignment")
            );
        };
    };
}

// ---------------------------------------------------------------------------
// Basic types and bit fields.
// ---------------------------------------------------------------------------

/// An RM object handle (`NvHandle`).
pub type Handle = u32;

/// A DRF-style bit field `hi:lo` of a 32-bit word, as NVIDIA's headers write
/// them (e.g. `NVOS32_ATTR_LOCATION 26:25`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BitField {
    /// Highest bit, inclusive.
    pub hi: u32,
    /// Lowest bit.
    pub lo: u32,
}

impl BitField {
    /// The field `hi:lo`.
    pub const fn new(hi: u32, lo: u32) -> BitField {
        BitField { hi, lo }
    }

    /// The field's mask, unshifted (e.g. `0b11` for a two-bit field); zero
    /// for a field with `hi < lo`.
    pub const fn mask(self) -> u32 {
        if self.hi < self.lo {
            return 0;
        }
        let width = self.hi.saturating_sub(self.lo).saturating_add(1);
        if width >= 32 {
            u32::MAX
        } else {
            (1u32 << width) - 1
        }
    }

    /// Reads the field from `word`.
    pub const fn get(self, word: u32) -> u32 {
        match word.checked_shr(self.lo) {
            Some(v) => v & self.mask(),
            None => 0,
        }
    }

    /// `word` with the field replaced by `value` (truncated to the field).
    pub const fn set(self, word: u32, value: u32) -> u32 {
        let m = match self.mask().checked_shl(self.lo) {
            Some(m) => m,
            None => 0,
        };
        let v = match (value & self.mask()).checked_shl(self.lo) {
            Some(v) => v,
            None => 0,
        };
        (word & !m) | v
    }
}

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
            NV_ERR_INVALID_FLAGS => "NV_ERR_INVALID_FLAGS",
            NV_ERR_INVALID_FUNCTION => "NV_ERR_INVALID_FUNCTION",
            NV_ERR_INVALID_LIMIT => "NV_ERR_INVALID_LIMIT",
            NV_ERR_INVALID_OBJECT => "NV_ERR_INVALID_OBJECT",
            NV_ERR_INVALID_OBJECT_HANDLE => "NV_ERR_INVALID_OBJECT_HANDLE",
            NV_ERR_INVALID_OBJECT_NEW => "NV_ERR_INVALID_OBJECT_NEW",
            NV_ERR_INVALID_OBJECT_OLD => "NV_ERR_INVALID_OBJECT_OLD",
            NV_ERR_INVALID_OBJECT_PARENT => "NV_ERR_INVALID_OBJECT_PARENT",
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

// ---------------------------------------------------------------------------
// Classes.
// ---------------------------------------------------------------------------

/// RM object classes (`hClass` of RM_ALLOC).
pub mod class {
    /// A privileged client.
    pub const NV01_ROOT: u32 = 0x0;
    /// A non-privileged client.
    pub const NV01_ROOT_NON_PRIV: u32 = 0x1;
    /// A client (what libcuda allocates); its handles start at 0xC1D00000.
    pub const NV01_ROOT_CLIENT: u32 = 0x41;
    /// An event object (`class/cl0005.h`); params [`super::EventAllocParams`].
    pub const NV01_EVENT: u32 = 0x5;
    /// An OS event, delivered by poll on the file it was allocated on (`nvos.h`).
    pub const NV01_EVENT_OS_EVENT: u32 = 0x79;
    /// A device; params [`super::DeviceAllocParams`] (deviceId at 0).
    pub const NV01_DEVICE_0: u32 = 0x80;
    /// A subdevice (one GPU of a device); params [`super::SubdeviceAllocParams`].
    pub const NV20_SUBDEVICE_0: u32 = 0x2080;
    /// Pinned host memory (not VRAM).
    pub const NV01_MEMORY_SYSTEM: u32 = 0x3e;
    /// Physical VRAM; params [`super::MemoryAllocationParams`] (size at 64).
    pub const NV01_MEMORY_LOCAL_USER: u32 = 0x40;
    /// A VA range object.
    pub const NV01_MEMORY_VIRTUAL: u32 = 0x70;
    /// The whole-FB handle (privileged).
    pub const NV01_MEMORY_LOCAL_PHYSICAL: u32 = 0xc2;
    /// Fabric memory; allocSize at offset 8 of its params.
    pub const NV_MEMORY_FABRIC: u32 = 0xf8;
    /// A GPU VA reservation with no backing.
    pub const NV50_MEMORY_VIRTUAL: u32 = 0x50a0;
    /// An MPS server's marker object (`class/cl900e.h`).
    pub const MPS_COMPUTE: u32 = 0x900e;
    /// A subcontext; params [`super::CtxShareAllocParams`].
    pub const FERMI_CONTEXT_SHARE_A: u32 = 0x9067;
    /// A GPU address space; params [`super::VaSpaceAllocParams`].
    pub const FERMI_VASPACE_A: u32 = 0x90f1;
    /// A TSG (time-slice group), child of a device; params
    /// [`super::ChannelGroupAllocParams`].
    pub const KEPLER_CHANNEL_GROUP_A: u32 = 0xa06c;

    /// Kepler GPFIFO channel.
    pub const KEPLER_CHANNEL_GPFIFO_A: u32 = 0xa06f;
    /// Kepler B GPFIFO channel (`class/cla16f.h`).
    pub const KEPLER_CHANNEL_GPFIFO_B: u32 = 0xa16f;
    /// Maxwell GPFIFO channel (`class/clb06f.h`).
    pub const MAXWELL_CHANNEL_GPFIFO_A: u32 = 0xb06f;
    /// Pascal GPFIFO channel (`class/clc06f.h`).
    pub const PASCAL_CHANNEL_GPFIFO_A: u32 = 0xc06f;
    /// Volta GPFIFO channel.
    pub const VOLTA_CHANNEL_GPFIFO_A: u32 = 0xc36f;
    /// Turing GPFIFO channel.
    pub const TURING_CHANNEL_GPFIFO_A: u32 = 0xc46f;
    /// Ampere GPFIFO channel.
    pub const AMPERE_CHANNEL_GPFIFO_A: u32 = 0xc56f;
    /// Hopper GPFIFO channel.
    pub const HOPPER_CHANNEL_GPFIFO_A: u32 = 0xc86f;
    /// Blackwell GPFIFO channel.
    pub const BLACKWELL_CHANNEL_GPFIFO_A: u32 = 0xc96f;
    /// Blackwell B GPFIFO channel.
    pub const BLACKWELL_CHANNEL_GPFIFO_B: u32 = 0xca6f;

    /// Volta usermode (doorbell) page (`class/clc361.h`).
    pub const VOLTA_USERMODE_A: u32 = 0xc361;
    /// Turing usermode (doorbell) page, 64 KiB.
    pub const TURING_USERMODE_A: u32 = 0xc461;
    /// Ampere usermode page (`class/clc561.h`).
    pub const AMPERE_USERMODE_A: u32 = 0xc561;
    /// Hopper usermode page; params [`super::UsermodeAllocParams`].
    pub const HOPPER_USERMODE_A: u32 = 0xc661;
    /// Blackwell usermode page (`class/clc761.h`).
    pub const BLACKWELL_USERMODE_A: u32 = 0xc761;

    /// Ampere compute engine class (`class/clc6c0.h`).
    pub const AMPERE_COMPUTE_A: u32 = 0xc6c0;
    /// Ampere B compute engine class (`class/clc7c0.h`).
    pub const AMPERE_COMPUTE_B: u32 = 0xc7c0;
    /// Ada compute engine class (`class/clc9c0.h`).
    pub const ADA_COMPUTE_A: u32 = 0xc9c0;
    /// Hopper compute engine class (`class/clcbc0.h`).
    pub const HOPPER_COMPUTE_A: u32 = 0xcbc0;
    /// Ampere copy engine class (`class/clc6b5.h`).
    pub const AMPERE_DMA_COPY_A: u32 = 0xc6b5;
    /// Ampere B copy engine class (`class/clc7b5.h`).
    pub const AMPERE_DMA_COPY_B: u32 = 0xc7b5;
    /// Hopper copy engine class (`class/clc8b5.h`).
    pub const HOPPER_DMA_COPY_A: u32 = 0xc8b5;

    /// Whether `c` is a GPFIFO channel class (parent: a device or a TSG).
    pub const fn is_channel_class(c: u32) -> bool {
        matches!(
            c,
            KEPLER_CHANNEL_GPFIFO_A
                | KEPLER_CHANNEL_GPFIFO_B
                | MAXWELL_CHANNEL_GPFIFO_A
                | PASCAL_CHANNEL_GPFIFO_A
                | VOLTA_CHANNEL_GPFIFO_A
                | TURING_CHANNEL_GPFIFO_A
                | AMPERE_CHANNEL_GPFIFO_A
                | HOPPER_CHANNEL_GPFIFO_A
                | BLACKWELL_CHANNEL_GPFIFO_A
                | BLACKWELL_CHANNEL_GPFIFO_B
        )
    }

    /// Whether `c` is a usermode (doorbell page) class.
    pub const fn is_usermode_class(c: u32) -> bool {
        matches!(
            c,
            VOLTA_USERMODE_A
                | TURING_USERMODE_A
                | AMPERE_USERMODE_A
                | HOPPER_USERMODE_A
                | BLACKWELL_USERMODE_A
        )
    }

    /// Whether `c` is a client (root) class.
    pub const fn is_client_class(c: u32) -> bool {
        matches!(c, NV01_ROOT | NV01_ROOT_NON_PRIV | NV01_ROOT_CLIENT)
    }

    /// The byte offset in a usermode page where a work-submit token is
    /// written to ring the doorbell (`NVC361_NOTIFY_CHANNEL_PENDING`,
    /// `class/clc361.h`).
    pub const USERMODE_DOORBELL_OFFSET: usize = 0x90;

    /// Size of the usermode page that is mapped (64 KiB).
    pub const USERMODE_PAGE_SIZE: u64 = 0x10000;
}

/// A GPFIFO channel's USERD (the control area the client and the GPU share):
/// `Nvc36fControl` .. `Nvc86fControl` (`class/clc36f.h` etc.). Blackwell's
/// (`Nvc96fControl`, `Nvca6fControl`) keeps `GPPut` but has no `GPGet`.
pub mod userd {
    /// `GPGet`: the GPU's read index into the GPFIFO ring (Volta to Hopper;
    /// not in Blackwell's USERD).
    pub const GP_GET: usize = 0x88;
    /// `GPPut`: the client's write index.
    pub const GP_PUT: usize = 0x8c;
}

/// Engine types (`NV2080_ENGINE_TYPE_*`, `class/cl2080_notification.h`).
pub mod engine {
    /// The graphics/compute engine (`NV2080_ENGINE_TYPE_GRAPHICS`, = GR0).
    pub const NV2080_ENGINE_TYPE_GRAPHICS: u32 = 0x1;
    /// Copy engine 0 (`NV2080_ENGINE_TYPE_COPY0`).
    pub const NV2080_ENGINE_TYPE_COPY0: u32 = 0x9;
}

// ---------------------------------------------------------------------------
// Control commands.
// ---------------------------------------------------------------------------

/// RM control command numbers (`cmd` of RM_CONTROL). The top 16 bits name the
/// class of the object the control is sent to.
pub mod ctrl {
    /// `NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION` on a client
    /// (`ctrl/ctrl0000/ctrl0000system.h`).
    pub const NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION: u32 = 0x101;
    /// `NV0000_CTRL_CMD_SYSTEM_GET_CPU_INFO` on a client
    /// (`ctrl/ctrl0000/ctrl0000system.h`).
    pub const NV0000_CTRL_CMD_SYSTEM_GET_CPU_INFO: u32 = 0x102;
    /// `NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2` on a client: the
    /// driver's version strings inline, 256 bytes each, then two
    /// changelist numbers (`ctrl/ctrl0000/ctrl0000system.h`; from 560 a
    /// `driverBranch` string after `versionBuffer`).
    pub const NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2: u32 = 0x13e;
    /// `NV0000_CTRL_CMD_GPU_GET_ATTACHED_IDS` on a client: 32 gpu ids,
    /// unused slots `0xffffffff` (`ctrl/ctrl0000/ctrl0000gpu.h`);
    /// params [`super::GpuGetAttachedIdsParams`].
    pub const NV0000_CTRL_CMD_GPU_GET_ATTACHED_IDS: u32 = 0x201;
    /// `NV0000_CTRL_CMD_GPU_GET_ID_INFO` (deprecated, has a name pointer;
    /// `ctrl/ctrl0000/ctrl0000gpu.h`).
    pub const NV0000_CTRL_CMD_GPU_GET_ID_INFO: u32 = 0x202;
    /// `NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2` on a client: maps a gpu id (as in
    /// CARD_INFO) to its device and subdevice instance
    /// (`ctrl/ctrl0000/ctrl0000gpu.h`); params [`super::GpuGetIdInfoV2Params`].
    pub const NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2: u32 = 0x205;
    /// `NV0000_CTRL_CMD_GPU_GET_PROBED_IDS` (`ctrl/ctrl0000/ctrl0000gpu.h`).
    pub const NV0000_CTRL_CMD_GPU_GET_PROBED_IDS: u32 = 0x214;

    /// `NV0041_CTRL_CMD_GET_SURFACE_INFO` on a memory object; params
    /// [`super::GetSurfaceInfoParams`].
    pub const NV0041_CTRL_CMD_GET_SURFACE_INFO: u32 = 0x0041_0110;

    /// `NV0080_CTRL_CMD_GPU_GET_CLASSLIST_V2` on a device
    /// (`ctrl/ctrl0080/ctrl0080gpu.h`); params [`super::ClassListV2Params`].
    pub const NV0080_CTRL_CMD_GPU_GET_CLASSLIST_V2: u32 = 0x0080_0292;

    /// `NV2080_CTRL_CMD_GPU_GET_INFO_V2` on a subdevice
    /// (`ctrl/ctrl2080/ctrl2080gpu.h`); params [`super::GpuGetInfoV2Params`].
    pub const NV2080_CTRL_CMD_GPU_GET_INFO_V2: u32 = 0x2080_0102;
    /// `NV2080_CTRL_CMD_GPU_GET_GID_INFO` on a subdevice: the GPU's UUID,
    /// as text or (flags [`super::GID_FLAGS_FORMAT_BINARY`]) the 16 bytes UVM
    /// takes (`ctrl/ctrl2080/ctrl2080gpu.h`); params [`super::GidInfoParams`].
    pub const NV2080_CTRL_CMD_GPU_GET_GID_INFO: u32 = 0x2080_014a;
    /// `NV2080_CTRL_CMD_GPU_GET_PIDS`: processes using the GPU.
    pub const NV2080_CTRL_CMD_GPU_GET_PIDS: u32 = 0x2080_018d;
    /// `NV2080_CTRL_CMD_GPU_GET_PID_INFO`: per-process video memory.
    pub const NV2080_CTRL_CMD_GPU_GET_PID_INFO: u32 = 0x2080_018e;
    /// Set compute policy (nvidia-smi `compute-policy --set-timeslice`);
    /// advisory. Message id 0x94 in `ctrl/ctrl2080/ctrl2080gpu.h`.
    pub const NV2080_CTRL_CMD_GPU_SET_COMPUTE_POLICY_CONFIG: u32 = 0x2080_0194;
    /// `NV2080_CTRL_CMD_GPU_GET_COMPUTE_POLICY_CONFIG`
    /// (`ctrl/ctrl2080/ctrl2080gpu.h`).
    pub const NV2080_CTRL_CMD_GPU_GET_COMPUTE_POLICY_CONFIG: u32 = 0x2080_0195;
    /// `NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS`; params
    /// [`super::FifoDisableChannelsParams`].
    pub const NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS: u32 = 0x2080_110b;
    /// `NV2080_CTRL_CMD_FB_GET_INFO` (V1): list passed by user pointer; params
    /// [`super::FbGetInfoV1Params`]. RM serves it through V2.
    pub const NV2080_CTRL_CMD_FB_GET_INFO: u32 = 0x2080_1301;
    /// `NV2080_CTRL_CMD_FB_GET_INFO_V2`: list inline; params
    /// [`super::FbGetInfoV2Params`].
    pub const NV2080_CTRL_CMD_FB_GET_INFO_V2: u32 = 0x2080_1303;
    /// `NV2080_CTRL_CMD_FB_GET_FB_REGION_INFO`: also reveals FB size.
    pub const NV2080_CTRL_CMD_FB_GET_FB_REGION_INFO: u32 = 0x2080_1320;

    /// `NVA06C_CTRL_CMD_GPFIFO_SCHEDULE` on a TSG; params
    /// [`super::GpfifoScheduleParams`].
    pub const NVA06C_CTRL_CMD_GPFIFO_SCHEDULE: u32 = 0xa06c_0101;
    /// `NVA06C_CTRL_CMD_BIND` (`ctrl/ctrla06c.h`).
    pub const NVA06C_CTRL_CMD_BIND: u32 = 0xa06c_0102;
    /// `NVA06C_CTRL_CMD_SET_TIMESLICE`; params [`super::TimesliceParams`].
    pub const NVA06C_CTRL_CMD_SET_TIMESLICE: u32 = 0xa06c_0103;
    /// `NVA06C_CTRL_CMD_GET_TIMESLICE`; params [`super::TimesliceParams`].
    pub const NVA06C_CTRL_CMD_GET_TIMESLICE: u32 = 0xa06c_0104;
    /// `NVA06C_CTRL_CMD_PREEMPT`; params [`super::PreemptParams`].
    pub const NVA06C_CTRL_CMD_PREEMPT: u32 = 0xa06c_0105;
    /// `NVA06C_CTRL_CMD_GET_INFO` (`{u32 tsgID}`, `ctrl/ctrla06c.h`).
    pub const NVA06C_CTRL_CMD_GET_INFO: u32 = 0xa06c_0106;
    /// `NVA06C_CTRL_CMD_SET_INTERLEAVE_LEVEL`; params
    /// [`super::InterleaveLevelParams`].
    pub const NVA06C_CTRL_CMD_SET_INTERLEAVE_LEVEL: u32 = 0xa06c_0107;
    /// `NVA06C_CTRL_CMD_GET_INTERLEAVE_LEVEL` (`ctrl/ctrla06c.h`).
    pub const NVA06C_CTRL_CMD_GET_INTERLEAVE_LEVEL: u32 = 0xa06c_0108;
    /// `NVA06C_CTRL_CMD_MAKE_REALTIME`; params [`super::MakeRealtimeParams`].
    pub const NVA06C_CTRL_CMD_MAKE_REALTIME: u32 = 0xa06c_0110;

    /// `NVA06F_CTRL_CMD_GPFIFO_SCHEDULE` on a channel; params
    /// [`super::GpfifoScheduleParams`] (same layout as the TSG form,
    /// `ctrl/ctrla06f/ctrla06fgpfifo.h`).
    pub const NVA06F_CTRL_CMD_GPFIFO_SCHEDULE: u32 = 0xa06f_0103;
    /// `NVA06F_CTRL_CMD_STOP_CHANNEL`; params [`super::StopChannelParams`].
    pub const NVA06F_CTRL_CMD_STOP_CHANNEL: u32 = 0xa06f_0112;

    /// `NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN` on a channel: the token
    /// to write to the doorbell (`ctrl/ctrlc36f.h`); params
    /// [`super::WorkSubmitTokenParams`].
    pub const NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN: u32 = 0xc36f_0108;

    /// The class a control command is addressed to (its top 16 bits).
    pub const fn class_of(cmd: u32) -> u32 {
        cmd >> 16
    }
}

/// `NV2080_CTRL_FB_INFO_INDEX_*`: indices of FB_GET_INFO (V1 and V2).
/// Sizes are in KiB.
pub mod fb_info {
    /// BAR1 size (`ctrl/ctrl2080/ctrl2080fb.h`).
    pub const BAR1_SIZE: u32 = 0x05;
    /// RAM physically present.
    pub const RAM_SIZE: u32 = 0x07;
    /// Total RAM.
    pub const TOTAL_RAM_SIZE: u32 = 0x08;
    /// Heap size.
    pub const HEAP_SIZE: u32 = 0x09;
    /// Mappable heap size.
    pub const MAPPABLE_HEAP_SIZE: u32 = 0x0A;
    /// Memory bus width (`ctrl/ctrl2080/ctrl2080fb.h`).
    pub const BUS_WIDTH: u32 = 0x0B;
    /// FB tax (vGPU host reservation).
    pub const FB_TAX_SIZE_KB: u32 = 0x10;
    /// Heap base (`ctrl/ctrl2080/ctrl2080fb.h`; used by VID_HEAP INFO).
    pub const HEAP_BASE_KB: u32 = 0x11;
    /// Largest free region.
    pub const LARGEST_FREE_REGION_SIZE_KB: u32 = 0x12;
    /// Base of the largest free region (`ctrl/ctrl2080/ctrl2080fb.h`).
    pub const LARGEST_FREE_REGION_BASE_KB: u32 = 0x13;
    /// Free heap.
    pub const HEAP_FREE: u32 = 0x16;
    /// BAR1 available (`ctrl/ctrl2080/ctrl2080fb.h`).
    pub const BAR1_AVAIL_SIZE: u32 = 0x1D;
    /// Heap start (`ctrl/ctrl2080/ctrl2080fb.h`).
    pub const HEAP_START: u32 = 0x1E;
    /// Usable RAM.
    pub const USABLE_RAM_SIZE: u32 = 0x20;
    /// Most entries one FB_GET_INFO call takes (`NV2080_CTRL_FB_INFO_MAX_LIST_SIZE`).
    pub const MAX_LIST_SIZE: usize = 128;

    /// Whether an index reports a memory size or free amount that a vGPU's
    /// ceiling must rewrite.
    pub const fn reveals_memory_size(index: u32) -> bool {
        matches!(
            index,
            RAM_SIZE
                | TOTAL_RAM_SIZE
                | HEAP_SIZE
                | MAPPABLE_HEAP_SIZE
                | FB_TAX_SIZE_KB
                | LARGEST_FREE_REGION_SIZE_KB
                | HEAP_FREE
                | USABLE_RAM_SIZE
        )
    }
}

/// RM_USER_SHARED_DATA (`class/cl00de.h`, `ctrl/ctrl00de.h`): what a
/// caller may ask RM to keep polling into its page.
pub mod rusd {
    /// The class (`RM_USER_SHARED_DATA`).
    pub const CLASS: u32 = 0x00de;
    /// `NV00DE_CTRL_CMD_REQUEST_DATA_POLL`: params one `NvU64
    /// polledDataMask`, as the class's alloc params (4 reserved bytes
    /// before 550).
    pub const REQUEST_DATA_POLL: u32 = 0x00de_0001;
    /// `NV00DE_RUSD_POLL_PROC_UTIL` (from 590): per-process utilisation,
    /// with the process ids of every tenant on the GPU.
    pub const POLL_PROC_UTIL: u64 = 0x80;
}

/// GPU_GET_PIDS and GPU_GET_PID_INFO (`ctrl/ctrl2080/ctrl2080gpu.h`):
/// list bounds, id types and info indices.
pub mod pids {
    /// Most PIDs one GPU_GET_PIDS answer holds
    /// (`NV2080_CTRL_GPU_GET_PIDS_MAX_COUNT`).
    pub const GET_PIDS_MAX_COUNT: u32 = 950;
    /// `idType`: `id` is a class (`NV2080_CTRL_GPU_GET_PIDS_ID_TYPE_CLASS`).
    pub const GET_PIDS_ID_TYPE_CLASS: u32 = 0;
    /// `idType`: processes of vGPU guests (a host's view; not a
    /// container's).
    pub const GET_PIDS_ID_TYPE_VGPU_GUEST: u32 = 1;
    /// Most entries one GPU_GET_PID_INFO call takes
    /// (`NV2080_CTRL_GPU_GET_PID_INFO_MAX_COUNT`).
    pub const GET_PID_INFO_MAX_COUNT: u32 = 200;
    /// The only info index: video memory usage
    /// (`NV2080_CTRL_GPU_PID_INFO_INDEX_VIDEO_MEMORY_USAGE`).
    pub const PID_INFO_INDEX_VIDEO_MEMORY_USAGE: u32 = 0;
    /// No MIG partition (`NV2080_CTRL_GPU_PARTITION_ID_INVALID`).
    pub const PARTITION_ID_INVALID: u32 = 0xffff_ffff;
}

/// `NV0041_CTRL_SURFACE_INFO_INDEX_*` (`ctrl/ctrl0041.h`).
pub mod surface_info {
    /// Hardware attributes.
    pub const ATTRS: u32 = 1;
    /// Low 32 bits of the physical size in bytes.
    pub const PHYS_SIZE_LO: u32 = 2;
    /// High 32 bits of the physical size in bytes.
    pub const PHYS_SIZE_HI: u32 = 3;
    /// Compression coverage in 64 KiB units.
    pub const COMPR_COVERAGE: u32 = 5;
    /// Physical size in units of [`PHYS_SIZE_SCALE`] (4 KiB); RM fails with
    /// NV_ERR_OUT_OF_RANGE when it does not fit 32 bits
    /// (`src/nvidia/src/kernel/gpu/mem_mgr/mem_ctrl.c`).
    pub const PHYS_SIZE: u32 = 7;
    /// Physical attributes.
    pub const PHYS_ATTR: u32 = 8;
    /// Address space type.
    pub const ADDR_SPACE_TYPE: u32 = 9;
    /// Unit of [`PHYS_SIZE`] (`NV0041_CTRL_SURFACE_INFO_PHYS_SIZE_SCALE_FACTOR`).
    pub const PHYS_SIZE_SCALE: u64 = 0x1000;
}

/// `NV2080_CTRL_GPU_INFO_MAX_LIST_SIZE` (`ctrl/ctrl2080/ctrl2080gpu.h`).
pub const GPU_INFO_MAX_LIST_SIZE: usize = 70;

/// `NV0080_CTRL_GPU_CLASSLIST_MAX_SIZE` (`ctrl/ctrl0080/ctrl0080gpu.h`).
pub const CLASSLIST_MAX_SIZE: usize = 200;

/// `NV0000_CTRL_GPU_MAX_ATTACHED_GPUS` (`ctrl/ctrl0000/ctrl0000gpu.h`).
pub const MAX_ATTACHED_GPUS: usize = 32;

/// An unused gpu id slot (`NV0000_CTRL_GPU_INVALID_ID`).
pub const GPU_INVALID_ID: u32 = 0xffff_ffff;

/// `NV2080_CTRL_FIFO_DISABLE_CHANNELS_MAX_ENTRIES`.
pub const DISABLE_CHANNELS_MAX_ENTRIES: usize = 64;

/// `NV_MAX_SUBDEVICES` (`nvlimits.h`): length of the per-subdevice arrays of
/// [`ChannelAllocParams`].
pub const MAX_SUBDEVICES: usize = 8;

/// Default TSG timeslice in microseconds.
pub const DEFAULT_TIMESLICE_US: u64 = 1024;

/// Largest manual preempt timeout (`NVA06C_CTRL_CMD_PREEMPT_MAX_MANUAL_TIMEOUT_US`,
/// `ctrl/ctrla06c.h`).
pub const PREEMPT_MAX_MANUAL_TIMEOUT_US: u32 = 1_000_000;

// ---------------------------------------------------------------------------
// Memory attributes and VID_HEAP functions.
// ---------------------------------------------------------------------------

/// NVOS32 heap functions, allocation flags and attributes (`nvos.h`). The
/// flags and attr words are shared by [`Nvos32`] and
/// [`MemoryAllocationParams`].
pub mod heap {
    use super::BitField;

    /// `NVOS32_FUNCTION_ALLOC_SIZE`.
    pub const FUNCTION_ALLOC_SIZE: u32 = 2;
    /// `NVOS32_FUNCTION_FREE` (`nvos.h`).
    pub const FUNCTION_FREE: u32 = 3;
    /// `NVOS32_FUNCTION_INFO`: fills total/free (and the Info union member).
    pub const FUNCTION_INFO: u32 = 5;
    /// `NVOS32_FUNCTION_ALLOC_TILED_PITCH_HEIGHT`: also allocates memory, with
    /// its own union layout (`nvos.h`,
    /// `src/nvidia/interface/deprecated/rmapi_deprecated_vidheapctrl.c`).
    pub const FUNCTION_ALLOC_TILED_PITCH_HEIGHT: u32 = 6;
    /// `NVOS32_FUNCTION_ALLOC_SIZE_RANGE`: also allocates memory, with its own
    /// union layout (`nvos.h`).
    pub const FUNCTION_ALLOC_SIZE_RANGE: u32 = 14;

    /// `NVOS32_TYPE_IMAGE`: the ordinary surface type.
    pub const TYPE_IMAGE: u32 = 0;

    /// `NVOS32_ALLOC_FLAGS_IGNORE_BANK_PLACEMENT`.
    pub const ALLOC_FLAGS_IGNORE_BANK_PLACEMENT: u32 = 0x0000_0001;
    /// `NVOS32_ALLOC_FLAGS_ALIGNMENT_FORCE`.
    pub const ALLOC_FLAGS_ALIGNMENT_FORCE: u32 = 0x0000_0100;
    /// `NVOS32_ALLOC_FLAGS_MEMORY_HANDLE_PROVIDED`: hMemory is an input.
    pub const ALLOC_FLAGS_MEMORY_HANDLE_PROVIDED: u32 = 0x0000_4000;
    /// `NVOS32_ALLOC_FLAGS_MAP_NOT_REQUIRED`.
    pub const ALLOC_FLAGS_MAP_NOT_REQUIRED: u32 = 0x0000_8000;
    /// `NVOS32_ALLOC_FLAGS_PERSISTENT_VIDMEM`.
    pub const ALLOC_FLAGS_PERSISTENT_VIDMEM: u32 = 0x0001_0000;
    /// `NVOS32_ALLOC_FLAGS_VIRTUAL`: a VA reservation, no backing.
    pub const ALLOC_FLAGS_VIRTUAL: u32 = 0x0008_0000;
    /// `NVOS32_FREE_FLAGS_MEMORY_HANDLE_PROVIDED`: required by FUNCTION_FREE.
    pub const FREE_FLAGS_MEMORY_HANDLE_PROVIDED: u32 = 0x1;

    /// `NVOS32_ATTR_PAGE_SIZE` 24:23.
    pub const ATTR_PAGE_SIZE: BitField = BitField::new(24, 23);
    /// Page size: default.
    pub const ATTR_PAGE_SIZE_DEFAULT: u32 = 0;
    /// Page size: 4 KiB.
    pub const ATTR_PAGE_SIZE_4KB: u32 = 1;
    /// Page size: big.
    pub const ATTR_PAGE_SIZE_BIG: u32 = 2;
    /// Page size: huge.
    pub const ATTR_PAGE_SIZE_HUGE: u32 = 3;
    /// `NVOS32_ATTR_LOCATION` 26:25.
    pub const ATTR_LOCATION: BitField = BitField::new(26, 25);
    /// Location: video memory.
    pub const ATTR_LOCATION_VIDMEM: u32 = 0;
    /// Location: system memory over PCI.
    pub const ATTR_LOCATION_PCI: u32 = 1;
    /// Location: any.
    pub const ATTR_LOCATION_ANY: u32 = 3;
    /// `NVOS32_ATTR_PHYSICALITY` 28:27.
    pub const ATTR_PHYSICALITY: BitField = BitField::new(28, 27);
    /// Physicality: default.
    pub const ATTR_PHYSICALITY_DEFAULT: u32 = 0;
    /// Physicality: non-contiguous.
    pub const ATTR_PHYSICALITY_NONCONTIGUOUS: u32 = 1;
    /// Physicality: contiguous.
    pub const ATTR_PHYSICALITY_CONTIGUOUS: u32 = 2;
    /// Physicality: contiguous preferred, non-contiguous allowed.
    pub const ATTR_PHYSICALITY_ALLOW_NONCONTIGUOUS: u32 = 3;
    /// `NVOS32_ATTR_COHERENCY` 31:29.
    pub const ATTR_COHERENCY: BitField = BitField::new(31, 29);
    /// Coherency: uncached.
    pub const ATTR_COHERENCY_UNCACHED: u32 = 0;
    /// Coherency: cached.
    pub const ATTR_COHERENCY_CACHED: u32 = 1;
    /// Coherency: write-combined.
    pub const ATTR_COHERENCY_WRITE_COMBINE: u32 = 2;
    /// `NVOS32_ATTR2_GPU_CACHEABLE` 3:2.
    pub const ATTR2_GPU_CACHEABLE: BitField = BitField::new(3, 2);
    /// GPU cacheable: yes.
    pub const ATTR2_GPU_CACHEABLE_YES: u32 = 1;
    /// GPU cacheable: no.
    pub const ATTR2_GPU_CACHEABLE_NO: u32 = 2;
    /// `NVOS32_ATTR2_PAGE_SIZE_HUGE` 21:20: which huge page when
    /// [`ATTR_PAGE_SIZE`] is [`ATTR_PAGE_SIZE_HUGE`].
    pub const ATTR2_PAGE_SIZE_HUGE: BitField = BitField::new(21, 20);
    /// Huge page: default (2 MiB).
    pub const ATTR2_PAGE_SIZE_HUGE_DEFAULT: u32 = 0;
    /// Huge page: 2 MiB.
    pub const ATTR2_PAGE_SIZE_HUGE_2MB: u32 = 1;
    /// Huge page: 512 MiB.
    pub const ATTR2_PAGE_SIZE_HUGE_512MB: u32 = 2;
    /// Huge page: 256 GiB.
    pub const ATTR2_PAGE_SIZE_HUGE_256GB: u32 = 3;

    /// The class RM allocates for a heap request with these flags and attr:
    /// VIRTUAL wins, then VIDMEM location gives VRAM, anything else system
    /// memory (`_rmVidHeapControlAllocCommon`,
    /// `src/nvidia/interface/deprecated/rmapi_deprecated_vidheapctrl.c`).
    pub const fn alloc_class(flags: u32, attr: u32) -> u32 {
        if flags & ALLOC_FLAGS_VIRTUAL != 0 {
            super::class::NV50_MEMORY_VIRTUAL
        } else if ATTR_LOCATION.get(attr) == ATTR_LOCATION_VIDMEM {
            super::class::NV01_MEMORY_LOCAL_USER
        } else {
            super::class::NV01_MEMORY_SYSTEM
        }
    }
}

/// NVOS02 (RM_ALLOC_MEMORY) flags (`nvos.h`).
pub mod os02 {
    use super::BitField;

    /// `NVOS02_FLAGS_PHYSICALITY` 7:4.
    pub const FLAGS_PHYSICALITY: BitField = BitField::new(7, 4);
    /// `NVOS02_FLAGS_LOCATION` 11:8.
    pub const FLAGS_LOCATION: BitField = BitField::new(11, 8);
    /// Location: PCI (system memory).
    pub const FLAGS_LOCATION_PCI: u32 = 0;
    /// Location: video memory.
    pub const FLAGS_LOCATION_VIDMEM: u32 = 2;
    /// `NVOS02_FLAGS_COHERENCY` 15:12.
    pub const FLAGS_COHERENCY: BitField = BitField::new(15, 12);
    /// `NVOS02_FLAGS_ALLOC` 17:16.
    pub const FLAGS_ALLOC: BitField = BitField::new(17, 16);
    /// `NVOS02_FLAGS_ALLOC_NONE`: describe, do not allocate.
    pub const FLAGS_ALLOC_NONE: u32 = 1;
}

/// NVOS33 (RM_MAP_MEMORY) flags (`nvos.h`).
pub mod os33 {
    use super::BitField;

    /// `NVOS33_FLAGS_ACCESS` 1:0.
    pub const FLAGS_ACCESS: BitField = BitField::new(1, 0);
    /// Access: read-write.
    pub const FLAGS_ACCESS_READ_WRITE: u32 = 0;
    /// Access: read-only.
    pub const FLAGS_ACCESS_READ_ONLY: u32 = 1;
    /// Access: write-only.
    pub const FLAGS_ACCESS_WRITE_ONLY: u32 = 2;
    /// `NVOS33_FLAGS_MAPPING` 16:15.
    pub const FLAGS_MAPPING: BitField = BitField::new(16, 15);
    /// `NVOS33_FLAGS_CACHING_TYPE` 25:23.
    pub const FLAGS_CACHING_TYPE: BitField = BitField::new(25, 23);
    /// Caching: cached.
    pub const FLAGS_CACHING_TYPE_CACHED: u32 = 0;
    /// Caching: uncached.
    pub const FLAGS_CACHING_TYPE_UNCACHED: u32 = 1;
    /// Caching: write-combined.
    pub const FLAGS_CACHING_TYPE_WRITECOMBINED: u32 = 2;
    /// Caching: default.
    pub const FLAGS_CACHING_TYPE_DEFAULT: u32 = 6;
}

/// NVOS64 `flags` bit 0: the alloc params are FINN-serialized.
pub const NVOS64_FLAGS_FINN_SERIALIZED: u32 = 0x1;

/// NV_VASPACE_ALLOCATION_PARAMETERS `index` values (`nvos.h`).
pub mod vaspace {
    /// `NV_VASPACE_ALLOCATION_INDEX_GPU_NEW`: create a new VA space.
    pub const INDEX_GPU_NEW: u32 = 0;
    /// `NV_VASPACE_ALLOCATION_INDEX_GPU_HOST`: the BAR1 VA space.
    pub const INDEX_GPU_HOST: u32 = 1;
    /// `NV_VASPACE_ALLOCATION_FLAGS_IS_EXTERNALLY_OWNED` (bit 3): the VA
    /// space's page tables are managed outside RM (by UVM);
    /// `UVM_REGISTER_GPU_VASPACE` requires it.
    pub const FLAGS_IS_EXTERNALLY_OWNED: u32 = 1 << 3;
    /// `NV_VASPACE_ALLOCATION_FLAGS_ENABLE_PAGE_FAULTING` (bit 6).
    pub const FLAGS_ENABLE_PAGE_FAULTING: u32 = 1 << 6;
    /// 64 KiB big pages.
    pub const BIG_PAGE_SIZE_64K: u32 = 64 * 1024;
    /// 128 KiB big pages.
    pub const BIG_PAGE_SIZE_128K: u32 = 128 * 1024;
}

/// NV_CTXSHARE_ALLOCATION_PARAMETERS `flags` (`nvos.h`): subcontext kind in
/// bits 1:0.
pub mod ctxshare {
    /// `NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT_SYNC`.
    pub const FLAGS_SUBCONTEXT_SYNC: u32 = 0;
    /// `NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT_ASYNC`.
    pub const FLAGS_SUBCONTEXT_ASYNC: u32 = 1;
    /// `NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT_SPECIFIED`: subctxId is an input.
    pub const FLAGS_SUBCONTEXT_SPECIFIED: u32 = 2;
}

/// CHECK_VERSION_STR commands and replies (`kernel-open/common/inc/nv-ioctl.h`).
pub mod version {
    /// Compare the whole version string.
    pub const CMD_STRICT: u32 = 0;
    /// Compare up to the first '.' (the character '1').
    pub const CMD_RELAXED: u32 = 0x31;
    /// Copy the driver's version string out (the character '2').
    pub const CMD_QUERY: u32 = 0x32;
    /// Reply: not recognized.
    pub const REPLY_UNRECOGNIZED: u32 = 0;
    /// Reply: recognized (the driver always sets this).
    pub const REPLY_RECOGNIZED: u32 = 1;
    /// Length of the version string field.
    pub const STRING_LENGTH: usize = 64;
}

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

wire_struct! {
    /// NVOS32: RM_VID_HEAP_CONTROL, the old heap interface. `data` is a union
    /// whose member depends on `function`; read it through the typed views
    /// ([`Nvos32::alloc_size`], [`Nvos32::free_args`], [`Nvos32::info`], ...).
    pub struct Nvos32, size 184 {
        /// Client.
        h_root @ 0: u32,
        /// Parent (device).
        h_object_parent @ 4: u32,
        /// Heap function (see [`heap`]).
        function @ 8: u32,
        /// VA space.
        h_va_space @ 12: u32,
        /// IVC heap number.
        ivc_heap_number @ 16: i16,
        /// Out: status.
        status @ 20: u32,
        /// Out: heap total (INFO).
        total @ 24: u64,
        /// Out: heap free (INFO).
        free @ 32: u64,
        /// The function-specific union, raw.
        data @ 40: [u8; 144],
    }
}

/// Offset of [`Nvos32::data`] in the NVOS32 block (add it to the offsets of
/// the union views to get offsets in the whole block).
pub const NVOS32_DATA_OFFSET: usize = 40;

wire_struct! {
    /// NVOS32 union member for FUNCTION_ALLOC_SIZE (offsets inside `data`;
    /// add 40 for the block: hMemory@44, attr@56, size@88, attr2@144).
    /// Layout from `nvos.h`.
    pub struct Nvos32AllocSize, size 144 {
        /// Owner id.
        owner @ 0: u32,
        /// In/out: memory handle (in only with MEMORY_HANDLE_PROVIDED).
        h_memory @ 4: u32,
        /// Surface type.
        surface_type @ 8: u32,
        /// Allocation flags.
        flags @ 12: u32,
        /// In/out: attributes.
        attr @ 16: u32,
        /// In/out: format.
        format @ 20: u32,
        /// In/out: compression coverage.
        compr_covg @ 24: u32,
        /// Out: zcull coverage.
        zcull_covg @ 28: u32,
        /// In/out: partition stride.
        partition_stride @ 32: u32,
        /// Width hint.
        width @ 36: u32,
        /// Height hint.
        height @ 40: u32,
        /// In/out: size; out is the size allocated.
        size @ 48: u64,
        /// Alignment.
        alignment @ 56: u64,
        /// In/out: offset.
        offset @ 64: u64,
        /// Out: limit.
        limit @ 72: u64,
        /// Out: address.
        address @ 80: u64,
        /// Range begin.
        range_begin @ 88: u64,
        /// Range end.
        range_end @ 96: u64,
        /// In/out: attributes 2.
        attr2 @ 104: u32,
        /// Comptag offset.
        ctag_offset @ 108: u32,
        /// NUMA node.
        numa_node @ 112: i32,
    }
}

impl Nvos32AllocSize {
    /// The class-0x40/0x3e alloc params RM turns this heap request into.
    pub fn memory_params(&self) -> MemoryAllocationParams {
        MemoryAllocationParams {
            owner: self.owner,
            flags: self.flags,
            attr: self.attr,
            attr2: self.attr2,
            size: self.size,
            alignment: self.alignment,
            ..Default::default()
        }
    }

    /// The handle the caller chose (MEMORY_HANDLE_PROVIDED), or 0 for RM to pick.
    pub const fn requested_handle(&self) -> u32 {
        if self.flags & heap::ALLOC_FLAGS_MEMORY_HANDLE_PROVIDED != 0 {
            self.h_memory
        } else {
            0
        }
    }
}

wire_struct! {
    /// NVOS32 union member for FUNCTION_ALLOC_SIZE_RANGE (`nvos.h`): same
    /// leading fields as ALLOC_SIZE, but no width/height, so size sits at 40
    /// (block offset 80).
    pub struct Nvos32AllocSizeRange, size 144 {
        /// Owner id.
        owner @ 0: u32,
        /// In/out: memory handle.
        h_memory @ 4: u32,
        /// Surface type.
        surface_type @ 8: u32,
        /// Allocation flags.
        flags @ 12: u32,
        /// In/out: attributes.
        attr @ 16: u32,
        /// In/out: format.
        format @ 20: u32,
        /// In/out: compression coverage.
        compr_covg @ 24: u32,
        /// Out: zcull coverage.
        zcull_covg @ 28: u32,
        /// In/out: partition stride.
        partition_stride @ 32: u32,
        /// In/out: size.
        size @ 40: u64,
        /// Alignment.
        alignment @ 48: u64,
        /// In/out: offset.
        offset @ 56: u64,
        /// Out: limit.
        limit @ 64: u64,
        /// Range begin.
        range_begin @ 72: u64,
        /// Range end.
        range_end @ 80: u64,
        /// Out: address.
        address @ 88: u64,
        /// In/out: attributes 2.
        attr2 @ 96: u32,
        /// Comptag offset.
        ctag_offset @ 100: u32,
        /// NUMA node.
        numa_node @ 104: i32,
    }
}

wire_struct! {
    /// NVOS32 union member for FUNCTION_ALLOC_TILED_PITCH_HEIGHT (`nvos.h`):
    /// attr at 24 (block 64), size at 48 (block 88).
    pub struct Nvos32AllocTiledPitchHeight, size 144 {
        /// Owner id.
        owner @ 0: u32,
        /// In/out: memory handle.
        h_memory @ 4: u32,
        /// Surface type.
        surface_type @ 8: u32,
        /// Allocation flags.
        flags @ 12: u32,
        /// Height in pixels.
        height @ 16: u32,
        /// In/out: pitch.
        pitch @ 20: i32,
        /// In/out: attributes.
        attr @ 24: u32,
        /// Width in pixels.
        width @ 28: u32,
        /// In/out: format.
        format @ 32: u32,
        /// In/out: compression coverage.
        compr_covg @ 36: u32,
        /// Out: zcull coverage.
        zcull_covg @ 40: u32,
        /// In/out: partition stride.
        partition_stride @ 44: u32,
        /// In/out: size.
        size @ 48: u64,
        /// Alignment.
        alignment @ 56: u64,
        /// In/out: offset.
        offset @ 64: u64,
        /// Out: limit.
        limit @ 72: u64,
        /// Out: address.
        address @ 80: u64,
        /// Range begin.
        range_begin @ 88: u64,
        /// Range end.
        range_end @ 96: u64,
        /// In/out: attributes 2.
        attr2 @ 104: u32,
        /// Comptag offset.
        ctag_offset @ 108: u32,
        /// NUMA node.
        numa_node @ 112: i32,
    }
}

wire_struct! {
    /// NVOS32 union member for FUNCTION_FREE (`nvos.h`); hMemory shares
    /// offset 4 (block 44) with the ALLOC_SIZE member.
    pub struct Nvos32Free, size 144 {
        /// Owner id.
        owner @ 0: u32,
        /// Memory to free.
        h_memory @ 4: u32,
        /// Must be [`heap::FREE_FLAGS_MEMORY_HANDLE_PROVIDED`].
        flags @ 8: u32,
    }
}

wire_struct! {
    /// NVOS32 union member for FUNCTION_INFO (`nvos.h`). RM fills it from
    /// FB_GET_INFO_V2 issued internally: base = HEAP_BASE_KB, size =
    /// LARGEST_FREE_REGION_SIZE_KB, offset = LARGEST_FREE_REGION_BASE_KB, all
    /// in bytes; the block's `total` = HEAP_SIZE + FB_TAX and `free` =
    /// HEAP_FREE (`_nvos32FunctionInfo`,
    /// `src/nvidia/interface/deprecated/rmapi_deprecated_vidheapctrl.c`).
    pub struct Nvos32Info, size 144 {
        /// Requested heap attributes.
        attr @ 0: u32,
        /// Out: base of the largest free block.
        offset @ 8: u64,
        /// Out: size of the largest free block.
        size @ 16: u64,
        /// Out: heap physical base.
        base @ 24: u64,
    }
}

/// A heap allocation request read out of an NVOS32 block, whichever of the
/// three allocating functions it uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeapAlloc {
    /// The function (ALLOC_SIZE, ALLOC_SIZE_RANGE or ALLOC_TILED_PITCH_HEIGHT).
    pub function: u32,
    /// In/out: memory handle.
    pub h_memory: u32,
    /// Allocation flags.
    pub flags: u32,
    /// Attributes.
    pub attr: u32,
    /// Attributes 2.
    pub attr2: u32,
    /// Size (in: requested; out: allocated).
    pub size: u64,
    /// Out: limit.
    pub limit: u64,
}

impl HeapAlloc {
    /// The class RM turns this request into ([`heap::alloc_class`]).
    pub const fn class(&self) -> u32 {
        heap::alloc_class(self.flags, self.attr)
    }

    /// Whether this request allocates VRAM (class 0x40: VIDMEM location and
    /// not VIRTUAL).
    pub const fn allocates_vram(&self) -> bool {
        self.class() == class::NV01_MEMORY_LOCAL_USER
    }
}

impl Nvos32 {
    /// The ALLOC_SIZE view of `data`.
    pub fn alloc_size(&self) -> Nvos32AllocSize {
        Wire::decode(&self.data)
    }

    /// Stores an ALLOC_SIZE view into `data`.
    pub fn set_alloc_size(&mut self, v: &Nvos32AllocSize) {
        v.encode(&mut self.data);
    }

    /// The ALLOC_SIZE_RANGE view of `data`.
    pub fn alloc_size_range(&self) -> Nvos32AllocSizeRange {
        Wire::decode(&self.data)
    }

    /// Stores an ALLOC_SIZE_RANGE view into `data`.
    pub fn set_alloc_size_range(&mut self, v: &Nvos32AllocSizeRange) {
        v.encode(&mut self.data);
    }

    /// The ALLOC_TILED_PITCH_HEIGHT view of `data`.
    pub fn alloc_tiled_pitch_height(&self) -> Nvos32AllocTiledPitchHeight {
        Wire::decode(&self.data)
    }

    /// Stores an ALLOC_TILED_PITCH_HEIGHT view into `data`.
    pub fn set_alloc_tiled_pitch_height(&mut self, v: &Nvos32AllocTiledPitchHeight) {
        v.encode(&mut self.data);
    }

    /// The FREE view of `data`.
    pub fn free_args(&self) -> Nvos32Free {
        Wire::decode(&self.data)
    }

    /// Stores a FREE view into `data`.
    pub fn set_free_args(&mut self, v: &Nvos32Free) {
        v.encode(&mut self.data);
    }

    /// The INFO view of `data`.
    pub fn info(&self) -> Nvos32Info {
        Wire::decode(&self.data)
    }

    /// Stores an INFO view into `data`.
    pub fn set_info(&mut self, v: &Nvos32Info) {
        v.encode(&mut self.data);
    }

    /// The allocation this block requests (or reports, after the call), if
    /// its function allocates memory; `None` for FREE, INFO and the rest.
    pub fn heap_alloc(&self) -> Option<HeapAlloc> {
        let function = self.function;
        match function {
            heap::FUNCTION_ALLOC_SIZE => {
                let a = self.alloc_size();
                Some(HeapAlloc {
                    function,
                    h_memory: a.h_memory,
                    flags: a.flags,
                    attr: a.attr,
                    attr2: a.attr2,
                    size: a.size,
                    limit: a.limit,
                })
            }
            heap::FUNCTION_ALLOC_SIZE_RANGE => {
                let a = self.alloc_size_range();
                Some(HeapAlloc {
                    function,
                    h_memory: a.h_memory,
                    flags: a.flags,
                    attr: a.attr,
                    attr2: a.attr2,
                    size: a.size,
                    limit: a.limit,
                })
            }
            heap::FUNCTION_ALLOC_TILED_PITCH_HEIGHT => {
                let a = self.alloc_tiled_pitch_height();
                Some(HeapAlloc {
                    function,
                    h_memory: a.h_memory,
                    flags: a.flags,
                    attr: a.attr,
                    attr2: a.attr2,
                    size: a.size,
                    limit: a.limit,
                })
            }
            _ => None,
        }
    }

    /// Whether this block asks RM to allocate VRAM (an allocating function
    /// whose request becomes class 0x40).
    pub fn is_vram_alloc(&self) -> bool {
        self.heap_alloc().is_some_and(|a| a.allocates_vram())
    }

    /// The memory allocation RM makes of this block's heap allocation
    /// function: the handle asked for (0: RM picks), the class and the
    /// class's alloc params. `None` for other functions.
    ///
    /// ALLOC_SIZE_RANGE passes its range as `rangeLo`/`rangeHi`;
    /// ALLOC_TILED_PITCH_HEIGHT its width, height and pitch, and a size of
    /// `|pitch| * height` (what a pitch surface of that height occupies).
    pub fn heap_memory_params(&self) -> Option<(u32, u32, MemoryAllocationParams)> {
        let a = self.heap_alloc()?;
        let handle = if a.flags & heap::ALLOC_FLAGS_MEMORY_HANDLE_PROVIDED != 0 {
            a.h_memory
        } else {
            0
        };
        let params = match self.function {
            heap::FUNCTION_ALLOC_SIZE => self.alloc_size().memory_params(),
            heap::FUNCTION_ALLOC_SIZE_RANGE => {
                let r = self.alloc_size_range();
                MemoryAllocationParams {
                    owner: r.owner,
                    flags: r.flags,
                    attr: r.attr,
                    attr2: r.attr2,
                    size: r.size,
                    alignment: r.alignment,
                    range_lo: r.range_begin,
                    range_hi: r.range_end,
                    ..Default::default()
                }
            }
            _ => {
                let t = self.alloc_tiled_pitch_height();
                MemoryAllocationParams {
                    owner: t.owner,
                    flags: t.flags,
                    attr: t.attr,
                    attr2: t.attr2,
                    width: t.width,
                    height: t.height,
                    pitch: t.pitch,
                    size: u64::from(t.pitch.unsigned_abs()) * u64::from(t.height),
                    alignment: t.alignment,
                    ..Default::default()
                }
            }
        };
        Some((handle, a.class(), params))
    }

    /// Writes the result of this block's heap allocation back into its
    /// function's arguments: the handle, the size and the limit.
    pub fn set_heap_result(&mut self, handle: u32, size: u64) {
        let limit = size.saturating_sub(1);
        match self.function {
            heap::FUNCTION_ALLOC_SIZE => {
                let mut v = self.alloc_size();
                (v.h_memory, v.size, v.limit) = (handle, size, limit);
                self.set_alloc_size(&v);
            }
            heap::FUNCTION_ALLOC_SIZE_RANGE => {
                let mut v = self.alloc_size_range();
                (v.h_memory, v.size, v.limit) = (handle, size, limit);
                self.set_alloc_size_range(&v);
            }
            heap::FUNCTION_ALLOC_TILED_PITCH_HEIGHT => {
                let mut v = self.alloc_tiled_pitch_height();
                (v.h_memory, v.size, v.limit) = (handle, size, limit);
                self.set_alloc_tiled_pitch_height(&v);
            }
            _ => {}
        }
    }
}

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
        /// The fd (libcuda passes the file's own fd).
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

// ---------------------------------------------------------------------------
// Control parameter blocks (pointed to by NVOS54).
// ---------------------------------------------------------------------------

wire_struct! {
    /// `NVXXXX_CTRL_XXX_INFO` (`ctrl/ctrlxxxx.h`): one `{index, data}` entry of
    /// an info list (FB info, surface info, GPU info).
    pub struct InfoEntry, size 8 {
        /// Index (which value).
        index @ 0: u32,
        /// Out: value.
        data @ 4: u32,
    }
}

/// The first `len` entries of an info list (clamped to the list).
fn info_prefix(list: &[InfoEntry], len: u32) -> &[InfoEntry] {
    let n = usize::try_from(len).unwrap_or(usize::MAX).min(list.len());
    list.get(..n).unwrap_or(&[])
}

/// The first `len` entries of an info list, mutable (clamped to the list).
fn info_prefix_mut(list: &mut [InfoEntry], len: u32) -> &mut [InfoEntry] {
    let n = usize::try_from(len).unwrap_or(usize::MAX).min(list.len());
    list.get_mut(..n).unwrap_or(&mut [])
}

/// Fills `list` with `indices` (data zero) and returns how many it took.
fn info_fill(list: &mut [InfoEntry], indices: &[u32]) -> u32 {
    let mut n = 0u32;
    for (e, &i) in list.iter_mut().zip(indices) {
        *e = InfoEntry { index: i, data: 0 };
        n += 1;
    }
    n
}

wire_struct! {
    /// NV2080_CTRL_FB_GET_INFO_V2_PARAMS: the list inline (1028 bytes).
    pub struct FbGetInfoV2Params, size 1028 {
        /// Number of entries used.
        list_size @ 0: u32,
        /// The entries.
        list @ 4: [InfoEntry; 128],
    }
}

impl FbGetInfoV2Params {
    /// A request for `indices` (at most 128 are taken).
    pub fn new(indices: &[u32]) -> FbGetInfoV2Params {
        let mut p = FbGetInfoV2Params::default();
        p.list_size = info_fill(&mut p.list, indices);
        p
    }

    /// The used entries (`list_size` clamped to 128).
    pub fn entries(&self) -> &[InfoEntry] {
        info_prefix(&self.list, self.list_size)
    }

    /// The used entries, mutable.
    pub fn entries_mut(&mut self) -> &mut [InfoEntry] {
        info_prefix_mut(&mut self.list, self.list_size)
    }

    /// The data of the first used entry with `index`.
    pub fn get(&self, index: u32) -> Option<u32> {
        self.entries()
            .iter()
            .find(|e| e.index == index)
            .map(|e| e.data)
    }
}

wire_struct! {
    /// NV2080_CTRL_GPU_GET_PIDS_PARAMS (`ctrl/ctrl2080/ctrl2080gpu.h`): the
    /// processes with objects of class `id` on the GPU. 3812 bytes: handlers
    /// read and write it by field ([`GetPidsParams::PID_TBL`]), never
    /// whole on a kernel stack.
    pub struct GetPidsParams, size 3812 {
        /// [`pids::GET_PIDS_ID_TYPE_CLASS`] or `_VGPU_GUEST`.
        id_type @ 0: u32,
        /// The class.
        id @ 4: u32,
        /// Out: PIDs in `pid_tbl`.
        pid_tbl_count @ 8: u32,
        /// Out: the PIDs, in the caller's PID namespace.
        pid_tbl @ 12: [u32; 950],
    }
}

impl GetPidsParams {
    /// Offset of `pid_tbl`.
    pub const PID_TBL: usize = 12;
}

wire_struct! {
    /// NV2080_CTRL_GPU_PID_INFO (`ctrl/ctrl2080/ctrl2080gpu.h`): one entry of
    /// GPU_GET_PID_INFO, a process and its video memory (the
    /// `data.vidMemUsage` member of the union, its only one) and MIG
    /// subscription.
    pub struct PidInfo, size 72 {
        /// The process, in the caller's PID namespace.
        pid @ 0: u32,
        /// Which information ([`pids::PID_INFO_INDEX_VIDEO_MEMORY_USAGE`]).
        index @ 4: u32,
        /// Out: this entry's status.
        result @ 8: u32,
        /// Out: memory only this process's clients hold.
        mem_private @ 16: u64,
        /// Out: memory shared with other clients, owned by this process's.
        mem_shared_owned @ 24: u64,
        /// Out: memory duplicated from other clients' into this process's.
        mem_shared_duped @ 32: u64,
        /// Out: as `mem_private`, of protected memory.
        protected_mem_private @ 40: u64,
        /// Out: as `mem_shared_owned`, of protected memory.
        protected_mem_shared_owned @ 48: u64,
        /// Out: as `mem_shared_duped`, of protected memory.
        protected_mem_shared_duped @ 56: u64,
        /// Out: MIG compute instance ([`pids::PARTITION_ID_INVALID`]).
        compute_instance_id @ 64: u32,
        /// Out: MIG GPU instance ([`pids::PARTITION_ID_INVALID`]).
        gpu_instance_id @ 68: u32,
    }
}

impl PidInfo {
    /// Zeroes the memory figures, as RM clears the entry's data before it
    /// counts (`subdevice_ctrl_gpu_kernel.c:2395` at 595.45.04).
    pub fn clear_usage(&mut self) {
        self.mem_private = 0;
        self.mem_shared_owned = 0;
        self.mem_shared_duped = 0;
        self.protected_mem_private = 0;
        self.protected_mem_shared_owned = 0;
        self.protected_mem_shared_duped = 0;
    }
}

wire_struct! {
    /// NV2080_CTRL_GPU_GET_PID_INFO_PARAMS (`ctrl/ctrl2080/ctrl2080gpu.h`).
    /// 14408 bytes: handlers go through it entry by entry ([`PidInfo`] at
    /// [`GetPidInfoParams::LIST`]), never whole on a kernel stack.
    pub struct GetPidInfoParams, size 14408 {
        /// Entries used (1 to 200).
        list_count @ 0: u32,
        /// The entries.
        list @ 8: [PidInfo; 200],
    }
}

impl GetPidInfoParams {
    /// Offset of `list`.
    pub const LIST: usize = 8;
}

wire_struct! {
    /// NV2080_CTRL_FB_GET_INFO_PARAMS (V1): the list by user pointer.
    pub struct FbGetInfoV1Params, size 16 {
        /// Number of entries.
        list_size @ 0: u32,
        /// User pointer to `list_size` [`InfoEntry`] records.
        list_ptr @ 8: u64,
    }
}

wire_struct! {
    /// NV0041_CTRL_GET_SURFACE_INFO_PARAMS (`ctrl/ctrl0041.h`): the list by
    /// user pointer.
    pub struct GetSurfaceInfoParams, size 16 {
        /// Number of entries.
        list_size @ 0: u32,
        /// User pointer to `list_size` [`InfoEntry`] records.
        list_ptr @ 8: u64,
    }
}

wire_struct! {
    /// NV2080_CTRL_GPU_GET_INFO_V2_PARAMS (`ctrl/ctrl2080/ctrl2080gpu.h`).
    pub struct GpuGetInfoV2Params, size 564 {
        /// Number of entries used.
        list_size @ 0: u32,
        /// The entries.
        list @ 4: [InfoEntry; 70],
    }
}

impl GpuGetInfoV2Params {
    /// A request for `indices` (at most 70 are taken).
    pub fn new(indices: &[u32]) -> GpuGetInfoV2Params {
        let mut p = GpuGetInfoV2Params::default();
        p.list_size = info_fill(&mut p.list, indices);
        p
    }

    /// The used entries (`list_size` clamped to 70).
    pub fn entries(&self) -> &[InfoEntry] {
        info_prefix(&self.list, self.list_size)
    }
}

wire_struct! {
    /// NVA06C/NVA06F GPFIFO_SCHEDULE params (TSG and channel share the layout).
    pub struct GpfifoScheduleParams, size 3 {
        /// Enable (1) or disable (0) scheduling.
        b_enable @ 0: u8,
        /// Skip the submit.
        b_skip_submit @ 1: u8,
        /// Skip the enable.
        b_skip_enable @ 2: u8,
    }
}

wire_struct! {
    /// NVA06C_CTRL_TIMESLICE_PARAMS: SET_TIMESLICE / GET_TIMESLICE.
    pub struct TimesliceParams, size 8 {
        /// Timeslice in microseconds.
        timeslice_us @ 0: u64,
    }
}

wire_struct! {
    /// NVA06C_CTRL_PREEMPT_PARAMS.
    pub struct PreemptParams, size 8 {
        /// Wait for the preemption to finish.
        b_wait @ 0: u8,
        /// Use `timeout_us` instead of the default.
        b_manual_timeout @ 1: u8,
        /// Timeout (at most [`PREEMPT_MAX_MANUAL_TIMEOUT_US`]).
        timeout_us @ 4: u32,
    }
}

wire_struct! {
    /// NVA06C_CTRL_INTERLEAVE_LEVEL_PARAMS (`ctrl/ctrla06c.h`).
    pub struct InterleaveLevelParams, size 4 {
        /// Interleave level.
        tsg_interleave_level @ 0: u32,
    }
}

wire_struct! {
    /// NVA06C_CTRL_MAKE_REALTIME_PARAMS (`ctrl/ctrla06c.h`).
    pub struct MakeRealtimeParams, size 1 {
        /// Make the TSG realtime.
        b_realtime @ 0: u8,
    }
}

wire_struct! {
    /// NVA06F_CTRL_STOP_CHANNEL_PARAMS (`ctrl/ctrla06f/ctrla06fgpfifo.h`).
    pub struct StopChannelParams, size 1 {
        /// Stop immediately.
        b_immediate @ 0: u8,
    }
}

wire_struct! {
    /// NV2080_CTRL_FIFO_DISABLE_CHANNELS_PARAMS (536 bytes;
    /// `ctrl/ctrl2080/ctrl2080fifo.h` for the fields between numChannels and
    /// the lists).
    pub struct FifoDisableChannelsParams, size 536 {
        /// Disable (1) or enable (0).
        b_disable @ 0: u8,
        /// Number of list entries used (at most 64).
        num_channels @ 4: u32,
        /// Only disable scheduling.
        b_only_disable_scheduling @ 8: u8,
        /// Rewind GP_PUT.
        b_rewind_gp_put @ 9: u8,
        /// Runlist preempt event pointer.
        p_runlist_preempt_event @ 16: u64,
        /// Client of each channel.
        h_client_list @ 24: [u32; 64],
        /// Channel (or TSG) handles.
        h_channel_list @ 280: [u32; 64],
    }
}

impl FifoDisableChannelsParams {
    /// The used `(client, channel)` pairs (`num_channels` clamped to 64).
    pub fn entries(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        let n = usize::try_from(self.num_channels)
            .unwrap_or(usize::MAX)
            .min(DISABLE_CHANNELS_MAX_ENTRIES);
        self.h_client_list
            .iter()
            .zip(self.h_channel_list.iter())
            .take(n)
            .map(|(&c, &h)| (c, h))
    }
}

wire_struct! {
    /// NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS (`ctrl/ctrlc36f.h`).
    pub struct WorkSubmitTokenParams, size 4 {
        /// Out: the token to write at the doorbell.
        work_submit_token @ 0: u32,
    }
}

wire_struct! {
    /// NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS (`ctrl/ctrl0000/ctrl0000gpu.h`).
    pub struct GpuGetIdInfoV2Params, size 32 {
        /// In: gpu id (CARD_INFO.gpu_id).
        gpu_id @ 0: u32,
        /// Out: flags.
        gpu_flags @ 4: u32,
        /// Out: device instance (NV0080 deviceId).
        device_instance @ 8: u32,
        /// Out: subdevice instance (NV2080 subDeviceId).
        sub_device_instance @ 12: u32,
        /// Out: SLI status.
        sli_status @ 16: u32,
        /// Out: board id.
        board_id @ 20: u32,
        /// Out: GPU instance (bus-probe order).
        gpu_instance @ 24: u32,
        /// Out: NUMA node (-1 = none).
        numa_id @ 28: i32,
    }
}

wire_struct! {
    /// NV0000_CTRL_GPU_GET_ATTACHED_IDS_PARAMS (`ctrl/ctrl0000/ctrl0000gpu.h`).
    pub struct GpuGetAttachedIdsParams, size 128 {
        /// Out: gpu ids, valid ones first, then [`GPU_INVALID_ID`].
        gpu_ids @ 0: [u32; 32],
    }
}

impl GpuGetAttachedIdsParams {
    /// The valid ids (up to the first [`GPU_INVALID_ID`]).
    pub fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.gpu_ids
            .iter()
            .copied()
            .take_while(|&id| id != GPU_INVALID_ID)
    }
}

wire_struct! {
    /// NV0080_CTRL_GPU_GET_CLASSLIST_V2_PARAMS (`ctrl/ctrl0080/ctrl0080gpu.h`).
    pub struct ClassListV2Params, size 804 {
        /// Out: number of classes.
        num_classes @ 0: u32,
        /// Out: the classes.
        class_list @ 4: [u32; 200],
    }
}

impl ClassListV2Params {
    /// The reported classes (`num_classes` clamped to 200).
    pub fn classes(&self) -> &[u32] {
        let n = usize::try_from(self.num_classes)
            .unwrap_or(usize::MAX)
            .min(CLASSLIST_MAX_SIZE);
        self.class_list.get(..n).unwrap_or(&[])
    }
}
