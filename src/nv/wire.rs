// SPDX-License-Identifier: GPL-2.0

//! The wire encoding of the driver's C ABI: the [`Wire`] trait, `wire_struct!`
//! (structures declared by explicit byte offsets, with compile-time layout
//! checks), field lookups by name, handles and DRF bit fields.
//!
//! core-only: nothing but `core`, no `unsafe`, built into `vgpu.ko` and by the
//! host crate `userspace/logic`. The layouts themselves are in [`super::abi`].

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
                Some(<Self as crate::nv::wire::Wire>::decode(b))
            }

            /// Each field's name, byte offset and size, in declaration order:
            /// what the conformance check (`userspace/conformance`) compares
            /// with the C compiler's `offsetof` and `sizeof` on NVIDIA's headers.
            pub const FIELDS: &'static [crate::nv::wire::WireField] = &[
                $(crate::nv::wire::WireField {
                    name: stringify!($field),
                    offset: $off,
                    size: <$ty as crate::nv::wire::Wire>::SIZE,
                },)*
            ];

            /// Encodes the structure field by field; padding bytes are zero.
            pub fn to_bytes(self) -> [u8; $size] {
                let mut out = [0u8; $size];
                <Self as crate::nv::wire::Wire>::encode(&self, &mut out);
                out
            }
        }

        impl Default for $name {
            fn default() -> Self {
                <Self as crate::nv::wire::Wire>::ZERO
            }
        }

        impl crate::nv::wire::Wire for $name {
            const SIZE: usize = $size;
            const ALIGN: usize = crate::nv::wire::max_align(&[$(($off, <$ty as crate::nv::wire::Wire>::SIZE, <$ty as crate::nv::wire::Wire>::ALIGN)),*]);
            const ZERO: Self = Self {
                $($field: <$ty as crate::nv::wire::Wire>::ZERO,)*
            };

            #[allow(unused_variables)]
            fn decode(b: &[u8]) -> Self {
                Self {
                    $($field: <$ty as crate::nv::wire::Wire>::decode(crate::nv::wire::tail(b, $off)),)*
                }
            }

            #[allow(unused_variables)]
            fn encode(&self, out: &mut [u8]) {
                $(<$ty as crate::nv::wire::Wire>::encode(&self.$field, crate::nv::wire::tail_mut(out, $off));)*
            }
        }

        const _: () = {
            let fields: &[crate::nv::wire::FieldLayout] = &[$(($off, <$ty as crate::nv::wire::Wire>::SIZE, <$ty as crate::nv::wire::Wire>::ALIGN)),*];
            assert!(
                crate::nv::wire::fields_fit(fields, $size),
                concat!(stringify!($name), ": a field runs past the struct's size")
            );
            assert!(
                crate::nv::wire::fields_disjoint(fields),
                concat!(stringify!($name), ": two fields overlap")
            );
            assert!(
                crate::nv::wire::fields_aligned(fields),
                concat!(stringify!($name), ": a field is not at its C alignment")
            );
            assert!(
                ($size % crate::nv::wire::max_align(fields)) == 0,
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
