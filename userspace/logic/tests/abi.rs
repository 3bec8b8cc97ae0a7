// SPDX-License-Identifier: GPL-2.0

//! Host tests of the NVIDIA ABI structures (src/nv/abi/).
//!
//! These pin every offset and size listed in shared/nvidia-abi.md (and the
//! ones looked up in NVIDIA's headers, noted in src/nv/abi/). Each test fills
//! every field of a struct with a distinct value (field k gets every byte = k),
//! encodes it, and compares with a byte image built independently here from
//! the documented offsets: a wrong offset, a missing field or a stray byte in
//! the padding fails. It then decodes the image back, and checks that a block
//! of any other length is refused.

use vgpu_logic::nv::abi::*;
use vgpu_logic::nv::ioctl::{Escape, SizeRule, CARD_INFO_SIZE};

/// An expected byte image, written at documented offsets.
struct Image(Vec<u8>);

impl Image {
    fn new(size: usize) -> Image {
        Image(vec![0; size])
    }
    fn put(mut self, off: usize, bytes: &[u8]) -> Image {
        let end = off + bytes.len();
        assert!(end <= self.0.len(), "offset {off} runs past the image");
        assert!(
            self.0[off..end].iter().all(|&b| b == 0),
            "image bytes at {off} written twice"
        );
        self.0[off..end].copy_from_slice(bytes);
        self
    }
    fn u8(self, off: usize, v: u8) -> Image {
        self.put(off, &[v])
    }
    fn u16(self, off: usize, v: u16) -> Image {
        self.put(off, &v.to_ne_bytes())
    }
    fn i16(self, off: usize, v: i16) -> Image {
        self.put(off, &v.to_ne_bytes())
    }
    fn u32(self, off: usize, v: u32) -> Image {
        self.put(off, &v.to_ne_bytes())
    }
    fn i32(self, off: usize, v: i32) -> Image {
        self.put(off, &v.to_ne_bytes())
    }
    fn u64(self, off: usize, v: u64) -> Image {
        self.put(off, &v.to_ne_bytes())
    }
}

/// Field k's u8 value: every byte k.
const fn b(k: u8) -> u8 {
    k
}
/// Field k's u16 value.
const fn w(k: u8) -> u16 {
    0x0101 * k as u16
}
/// Field k's u32 value.
const fn d(k: u8) -> u32 {
    0x0101_0101 * k as u32
}
/// Field k's u64 value.
const fn q(k: u8) -> u64 {
    0x0101_0101_0101_0101 * k as u64
}

/// Checks encode == image, decode(image) == value, and that other lengths are
/// refused.
macro_rules! check {
    ($ty:ty, $value:expr, $image:expr) => {{
        let value: $ty = $value;
        let image: Image = $image;
        assert_eq!(<$ty>::SIZE, image.0.len(), "{} size", stringify!($ty));
        assert_eq!(
            value.to_bytes().as_slice(),
            image.0.as_slice(),
            "{} encoding",
            stringify!($ty)
        );
        assert_eq!(
            <$ty>::from_bytes(&image.0),
            Some(value),
            "{} decoding",
            stringify!($ty)
        );
        assert_eq!(<$ty>::from_bytes(&image.0[..image.0.len() - 1]), None);
        let mut longer = image.0.clone();
        longer.push(0);
        assert_eq!(<$ty>::from_bytes(&longer), None);
        assert_eq!(<$ty>::from_bytes(&[]), None);
        // All-zero decodes to the default.
        let zeros = vec![0u8; <$ty>::SIZE];
        assert_eq!(<$ty>::from_bytes(&zeros), Some(<$ty>::default()));
    }};
}

/// Field k's value, by type: every byte k.
trait Nth {
    fn nth(k: u8) -> Self;
}
impl Nth for u8 {
    fn nth(k: u8) -> u8 {
        b(k)
    }
}
impl Nth for u16 {
    fn nth(k: u8) -> u16 {
        w(k)
    }
}
impl Nth for u32 {
    fn nth(k: u8) -> u32 {
        d(k)
    }
}
impl Nth for u64 {
    fn nth(k: u8) -> u64 {
        q(k)
    }
}

/// A layout as a case table, one row a field: its name, its type and its
/// documented offset. Field k (from 1, in the order written) gets the
/// value k in every byte, in the struct and at its offset in the image;
/// then `check!` compares them as for a hand-written pair.
macro_rules! layout {
    ($ty:ident [$size:expr] { $($field:ident: $kind:ident @ $off:expr),* $(,)? }) => {{
        let mut k = 0u8;
        let mut image = Image::new($size);
        let value = $ty {
            $($field: {
                k += 1;
                let v = <$kind as Nth>::nth(k);
                image = image.$kind($off, v);
                v
            }),*
        };
        check!($ty, value, image);
    }};
}

#[test]
fn nvos00_rm_free() {
    layout!(Nvos00 [16] {
        h_root: u32 @ 0,
        h_object_parent: u32 @ 4,
        h_object_old: u32 @ 8,
        status: u32 @ 12,
    });
}

#[test]
fn nvos21_rm_alloc_32() {
    layout!(Nvos21 [32] {
        h_root: u32 @ 0,
        h_object_parent: u32 @ 4,
        h_object_new: u32 @ 8,
        h_class: u32 @ 12,
        p_alloc_parms: u64 @ 16,
        params_size: u32 @ 24,
        status: u32 @ 28,
    });
}

#[test]
fn nvos64_rm_alloc_48() {
    layout!(Nvos64 [48] {
        h_root: u32 @ 0,
        h_object_parent: u32 @ 4,
        h_object_new: u32 @ 8,
        h_class: u32 @ 12,
        p_alloc_parms: u64 @ 16,
        p_rights_requested: u64 @ 24,
        params_size: u32 @ 32,
        flags: u32 @ 36,
        status: u32 @ 40,
    });
    assert_eq!(NVOS64_FLAGS_FINN_SERIALIZED, 1);
}

#[test]
fn nvos54_rm_control() {
    layout!(Nvos54 [32] {
        h_client: u32 @ 0,
        h_object: u32 @ 4,
        cmd: u32 @ 8,
        flags: u32 @ 12,
        params: u64 @ 16,
        params_size: u32 @ 24,
        status: u32 @ 28,
    });
    assert_eq!(CONTROL_PARAMS_MAX, 1 << 20);
}

fn nvos02_value() -> Nvos02 {
    Nvos02 {
        h_root: d(1),
        h_object_parent: d(2),
        h_object_new: d(3),
        h_class: d(4),
        flags: d(5),
        p_memory: q(6),
        limit: q(7),
        status: d(8),
    }
}

fn nvos02_image(size: usize) -> Image {
    Image::new(size)
        .u32(0, d(1))
        .u32(4, d(2))
        .u32(8, d(3))
        .u32(12, d(4))
        .u32(16, d(5))
        .u64(24, q(6))
        .u64(32, q(7))
        .u32(40, d(8))
}

#[test]
fn nvos02_alloc_memory_and_fd_form() {
    check!(Nvos02, nvos02_value(), nvos02_image(48));
    check!(
        Nvos02WithFd,
        Nvos02WithFd {
            params: nvos02_value(),
            fd: d(9) as i32,
        },
        nvos02_image(56).i32(48, d(9) as i32)
    );
}

fn nvos33_value() -> Nvos33 {
    Nvos33 {
        h_client: d(1),
        h_device: d(2),
        h_memory: d(3),
        offset: q(4),
        length: q(5),
        p_linear_address: q(6),
        status: d(7),
        flags: d(8),
    }
}

fn nvos33_image(size: usize) -> Image {
    Image::new(size)
        .u32(0, d(1))
        .u32(4, d(2))
        .u32(8, d(3))
        .u64(16, q(4))
        .u64(24, q(5))
        .u64(32, q(6))
        .u32(40, d(7))
        .u32(44, d(8))
}

#[test]
fn nvos33_map_memory_and_fd_form() {
    check!(Nvos33, nvos33_value(), nvos33_image(48));
    check!(
        Nvos33WithFd,
        Nvos33WithFd {
            params: nvos33_value(),
            fd: -2,
        },
        nvos33_image(56).i32(48, -2)
    );
}

#[test]
fn nvos34_unmap_memory() {
    layout!(Nvos34 [32] {
        h_client: u32 @ 0,
        h_device: u32 @ 4,
        h_memory: u32 @ 8,
        p_linear_address: u64 @ 16,
        status: u32 @ 24,
        flags: u32 @ 28,
    });
}

#[test]
fn nvos55_dup_object() {
    layout!(Nvos55 [28] {
        h_client: u32 @ 0,
        h_parent: u32 @ 4,
        h_object: u32 @ 8,
        h_client_src: u32 @ 12,
        h_object_src: u32 @ 16,
        flags: u32 @ 20,
        status: u32 @ 24,
    });
}

#[test]
fn nvos57_share() {
    check!(
        Nvos57,
        Nvos57 {
            h_client: d(1),
            h_object: d(2),
            share_policy: RsSharePolicy {
                target: d(3),
                access_mask: d(4),
                share_type: w(5),
                action: b(6),
            },
            status: d(7),
        },
        Image::new(24)
            .u32(0, d(1))
            .u32(4, d(2))
            .u32(8, d(3))
            .u32(12, d(4))
            .u16(16, w(5))
            .u8(18, b(6))
            .u32(20, d(7))
    );
}

#[test]
fn nvos32_header_and_alloc_size() {
    let mut v = Nvos32 {
        h_root: d(1),
        h_object_parent: d(2),
        function: d(3),
        h_va_space: d(4),
        ivc_heap_number: w(5) as i16,
        status: d(6),
        total: q(7),
        free: q(8),
        data: [0; 144],
    };
    v.set_alloc_size(&Nvos32AllocSize {
        owner: d(9),
        h_memory: d(10),
        surface_type: d(11),
        flags: d(12),
        attr: d(13),
        format: d(14),
        compr_covg: d(15),
        zcull_covg: d(16),
        partition_stride: d(17),
        width: d(18),
        height: d(19),
        size: q(20),
        alignment: q(21),
        offset: q(22),
        limit: q(23),
        address: q(24),
        range_begin: q(25),
        range_end: q(26),
        attr2: d(27),
        ctag_offset: d(28),
        numa_node: d(29) as i32,
    });
    check!(
        Nvos32,
        v,
        Image::new(184)
            // Documented in nvidia-abi.md.
            .u32(0, d(1))
            .u32(4, d(2))
            .u32(8, d(3))
            .u32(12, d(4))
            .i16(16, w(5) as i16)
            .u32(20, d(6))
            .u64(24, q(7))
            .u64(32, q(8))
            .u32(44, d(10)) // hMemory
            .u32(56, d(13)) // attr
            .u64(88, q(20)) // size
            .u32(144, d(27)) // attr2
            // Looked up in nvos.h.
            .u32(40, d(9))
            .u32(48, d(11))
            .u32(52, d(12))
            .u32(60, d(14))
            .u32(64, d(15))
            .u32(68, d(16))
            .u32(72, d(17))
            .u32(76, d(18))
            .u32(80, d(19))
            .u64(96, q(21))
            .u64(104, q(22))
            .u64(112, q(23))
            .u64(120, q(24))
            .u64(128, q(25))
            .u64(136, q(26))
            .u32(148, d(28))
            .i32(152, d(29) as i32)
    );
    assert_eq!(NVOS32_DATA_OFFSET, 40);
    assert_eq!(v.alloc_size().size, q(20));
}

#[test]
fn nvos32_union_views() {
    // Each view of the union: what it sets, and the image it must give.
    type Case = (&'static str, fn(&mut Nvos32), Image);
    let cases: [Case; 4] = [
        (
            "FREE: owner@40, hMemory@44 (shared with ALLOC_SIZE), flags@48",
            |v| {
                v.set_free_args(&Nvos32Free {
                    owner: d(1),
                    h_memory: d(2),
                    flags: d(3),
                })
            },
            Image::new(184).u32(40, d(1)).u32(44, d(2)).u32(48, d(3)),
        ),
        (
            "INFO: attr@40, offset@48, size@56, base@64",
            |v| {
                v.set_info(&Nvos32Info {
                    attr: d(1),
                    offset: q(2),
                    size: q(3),
                    base: q(4),
                })
            },
            Image::new(184)
                .u32(40, d(1))
                .u64(48, q(2))
                .u64(56, q(3))
                .u64(64, q(4)),
        ),
        (
            "ALLOC_SIZE_RANGE: flags@52, attr@56, size@80, limit@104, attr2@136",
            |v| {
                v.set_alloc_size_range(&Nvos32AllocSizeRange {
                    h_memory: d(1),
                    flags: d(2),
                    attr: d(3),
                    size: q(4),
                    limit: q(5),
                    attr2: d(6),
                    ..Default::default()
                })
            },
            Image::new(184)
                .u32(44, d(1))
                .u32(52, d(2))
                .u32(56, d(3))
                .u64(80, q(4))
                .u64(104, q(5))
                .u32(136, d(6)),
        ),
        (
            "ALLOC_TILED_PITCH_HEIGHT: flags@52, attr@64, size@88, limit@112, attr2@144",
            |v| {
                v.set_alloc_tiled_pitch_height(&Nvos32AllocTiledPitchHeight {
                    h_memory: d(1),
                    flags: d(2),
                    attr: d(3),
                    size: q(4),
                    limit: q(5),
                    attr2: d(6),
                    ..Default::default()
                })
            },
            Image::new(184)
                .u32(44, d(1))
                .u32(52, d(2))
                .u32(64, d(3))
                .u64(88, q(4))
                .u64(112, q(5))
                .u32(144, d(6)),
        ),
    ];
    for (what, set, img) in &cases {
        let mut v = Nvos32::default();
        set(&mut v);
        assert_eq!(v.to_bytes().as_slice(), img.0.as_slice(), "{what}");
    }
    // FREE's hMemory is ALLOC_SIZE's.
    let mut v = Nvos32::default();
    (cases[0].1)(&mut v);
    assert_eq!(v.alloc_size().h_memory, d(2));
}

#[test]
fn nvos32_vram_classification() {
    let vidmem = heap::ATTR_LOCATION.set(0, heap::ATTR_LOCATION_VIDMEM);
    let pci = heap::ATTR_LOCATION.set(0, heap::ATTR_LOCATION_PCI);
    let mut v = Nvos32 {
        function: heap::FUNCTION_ALLOC_SIZE,
        ..Default::default()
    };
    v.set_alloc_size(&Nvos32AllocSize {
        attr: vidmem,
        size: 1 << 20,
        ..Default::default()
    });
    assert!(v.is_vram_alloc());
    let a = v.heap_alloc().unwrap();
    assert_eq!(a.size, 1 << 20);
    assert_eq!(a.class(), class::NV01_MEMORY_LOCAL_USER);

    // VIRTUAL wins over VIDMEM.
    v.set_alloc_size(&Nvos32AllocSize {
        attr: vidmem,
        flags: heap::ALLOC_FLAGS_VIRTUAL,
        ..Default::default()
    });
    assert!(!v.is_vram_alloc());
    assert_eq!(v.heap_alloc().unwrap().class(), class::NV50_MEMORY_VIRTUAL);

    // System memory.
    v.set_alloc_size(&Nvos32AllocSize {
        attr: pci,
        ..Default::default()
    });
    assert!(!v.is_vram_alloc());
    assert_eq!(v.heap_alloc().unwrap().class(), class::NV01_MEMORY_SYSTEM);

    // The other two allocating functions read their own layouts.
    let mut r = Nvos32 {
        function: heap::FUNCTION_ALLOC_SIZE_RANGE,
        ..Default::default()
    };
    r.set_alloc_size_range(&Nvos32AllocSizeRange {
        attr: vidmem,
        size: 4096,
        ..Default::default()
    });
    assert!(r.is_vram_alloc());
    assert_eq!(r.heap_alloc().unwrap().size, 4096);
    let mut t = Nvos32 {
        function: heap::FUNCTION_ALLOC_TILED_PITCH_HEIGHT,
        ..Default::default()
    };
    t.set_alloc_tiled_pitch_height(&Nvos32AllocTiledPitchHeight {
        attr: pci,
        size: 8192,
        ..Default::default()
    });
    assert!(!t.is_vram_alloc());
    assert_eq!(t.heap_alloc().unwrap().size, 8192);

    // FREE and INFO allocate nothing.
    for f in [heap::FUNCTION_FREE, heap::FUNCTION_INFO, 0, 99] {
        let v = Nvos32 {
            function: f,
            ..Default::default()
        };
        assert_eq!(v.heap_alloc(), None);
        assert!(!v.is_vram_alloc());
    }
}

#[test]
fn heap_function_numbers() {
    assert_eq!(heap::FUNCTION_ALLOC_SIZE, 2);
    assert_eq!(heap::FUNCTION_FREE, 3);
    assert_eq!(heap::FUNCTION_INFO, 5);
    assert_eq!(heap::FUNCTION_ALLOC_TILED_PITCH_HEIGHT, 6);
    assert_eq!(heap::FUNCTION_ALLOC_SIZE_RANGE, 14);
    assert_eq!(heap::ALLOC_FLAGS_VIRTUAL, 0x80000);
}

#[test]
fn memory_allocation_params_545() {
    check!(
        MemoryAllocationParams,
        MemoryAllocationParams {
            owner: d(1),
            surface_type: d(2),
            flags: d(3),
            width: d(4),
            height: d(5),
            pitch: d(6) as i32,
            attr: d(7),
            attr2: d(8),
            format: d(9),
            compr_covg: d(10),
            zcull_covg: d(11),
            range_lo: q(12),
            range_hi: q(13),
            size: q(14),
            alignment: q(15),
            offset: q(16),
            limit: q(17),
            address: q(18),
            ctag_offset: d(19),
            h_va_space: d(20),
            internal_flags: d(21),
            tag: d(22),
            numa_node: d(23) as i32,
        },
        Image::new(128)
            .u32(0, d(1))
            .u32(4, d(2))
            .u32(8, d(3))
            .u32(12, d(4))
            .u32(16, d(5))
            .i32(20, d(6) as i32)
            .u32(24, d(7))
            .u32(28, d(8))
            .u32(32, d(9))
            .u32(36, d(10))
            .u32(40, d(11))
            .u64(48, q(12))
            .u64(56, q(13))
            .u64(64, q(14))
            .u64(72, q(15))
            .u64(80, q(16))
            .u64(88, q(17))
            .u64(96, q(18))
            .u32(104, d(19))
            .u32(108, d(20))
            .u32(112, d(21))
            .u32(116, d(22))
            .i32(120, d(23) as i32)
    );
}

#[test]
fn memory_allocation_params_helpers() {
    let mut p = MemoryAllocationParams::default();
    assert!(p.is_vidmem() && !p.is_virtual() && p.allocates_vram());
    // LOCATION is bits 26:25.
    p.attr = 1 << 25;
    assert!(!p.is_vidmem() && !p.allocates_vram());
    p.attr = 1 << 26;
    assert!(!p.is_vidmem());
    p.attr = (1 << 24) | (1 << 27) | 0xffff; // neighbours of the field
    assert!(p.is_vidmem());
    p.flags = 0x80000;
    assert!(p.is_virtual() && !p.allocates_vram());
    p.flags = !0x80000;
    assert!(!p.is_virtual() && p.allocates_vram());
}

#[test]
fn card_info() {
    let mut name = [0u8; 10];
    name.copy_from_slice(b"nvidia0\0\0\0");
    let v = CardInfo {
        valid: b(1),
        pci_info: PciInfo {
            domain: d(2),
            bus: b(3),
            slot: b(4),
            function: b(5),
            vendor_id: w(6),
            device_id: w(7),
        },
        gpu_id: d(8),
        interrupt_line: w(9),
        reg_address: q(10),
        reg_size: q(11),
        fb_address: q(12),
        fb_size: q(13),
        minor_number: d(14),
        dev_name: name,
    };
    check!(
        CardInfo,
        v,
        Image::new(72)
            .u8(0, b(1))
            .u32(4, d(2))
            .u8(8, b(3))
            .u8(9, b(4))
            .u8(10, b(5))
            .u16(12, w(6))
            .u16(14, w(7))
            .u32(16, d(8))
            .u16(20, w(9))
            .u64(24, q(10))
            .u64(32, q(11))
            .u64(40, q(12))
            .u64(48, q(13))
            .u32(56, d(14))
            .put(60, b"nvidia0")
    );
    assert_eq!(CardInfo::SIZE, CARD_INFO_SIZE);
    assert!(v.is_valid());
    assert_eq!(v.dev_name(), b"nvidia0");
    assert_eq!(c_str_bytes(b"abc"), b"abc");
    assert_eq!(c_str_bytes(b""), b"");
}

#[test]
fn check_version_str() {
    let mut version = [0u8; 64];
    version[..9].copy_from_slice(b"595.45.04");
    check!(
        RmApiVersion,
        RmApiVersion {
            cmd: d(1),
            reply: d(2),
            version_string: version,
        },
        Image::new(72)
            .u32(0, d(1))
            .u32(4, d(2))
            .put(8, b"595.45.04")
    );
    let r = RmApiVersion::new(version::CMD_QUERY, b"595.45.04");
    assert_eq!(r.cmd, u32::from(b'2'));
    assert_eq!(r.version(), b"595.45.04");
    assert_eq!(version::CMD_STRICT, 0);
    assert_eq!(version::CMD_RELAXED, u32::from(b'1'));
    // A too-long version is truncated so a NUL always ends it.
    let long = [b'9'; 100];
    let r = RmApiVersion::new(version::CMD_STRICT, &long);
    assert_eq!(r.version().len(), 63);
    assert_eq!(r.version_string[63], 0);
}

#[test]
fn small_escape_blocks() {
    check!(
        RegisterFd,
        RegisterFd { ctl_fd: 7 },
        Image::new(4).i32(0, 7)
    );
    layout!(OsEvent [16] {
        h_client: u32 @ 0,
        h_device: u32 @ 4,
        fd: u32 @ 8,
        status: u32 @ 12,
    });
    layout!(SysParams [8] {
        memblock_size: u64 @ 0,
    });
    check!(
        WaitOpenComplete,
        WaitOpenComplete {
            rc: -5,
            adapter_status: d(2),
        },
        Image::new(8).i32(0, -5).u32(4, d(2))
    );
}

#[test]
fn escape_sizes_match_the_structs() {
    let exact = |e: Escape| match e.size_rule() {
        SizeRule::Exact(n) => n,
        r => panic!("{e:?}: {r:?}"),
    };
    assert_eq!(exact(Escape::RmAllocMemory), Nvos02WithFd::SIZE);
    assert_eq!(exact(Escape::RmFree), Nvos00::SIZE);
    assert_eq!(exact(Escape::RmControl), Nvos54::SIZE);
    assert_eq!(
        Escape::RmAlloc.size_rule(),
        SizeRule::OneOf(Nvos21::SIZE, Nvos64::SIZE)
    );
    assert_eq!(exact(Escape::RmDupObject), Nvos55::SIZE);
    assert_eq!(exact(Escape::RmShare), Nvos57::SIZE);
    assert_eq!(exact(Escape::RmVidHeapControl), Nvos32::SIZE);
    assert_eq!(exact(Escape::RmMapMemory), Nvos33WithFd::SIZE);
    assert_eq!(exact(Escape::RmUnmapMemory), Nvos34::SIZE);
    assert_eq!(
        Escape::CardInfo.size_rule(),
        SizeRule::Records(CardInfo::SIZE)
    );
    assert_eq!(exact(Escape::RegisterFd), RegisterFd::SIZE);
    assert_eq!(exact(Escape::AllocOsEvent), OsEvent::SIZE);
    assert_eq!(exact(Escape::FreeOsEvent), OsEvent::SIZE);
    assert_eq!(exact(Escape::CheckVersionStr), RmApiVersion::SIZE);
    assert_eq!(exact(Escape::SysParams), SysParams::SIZE);
    assert_eq!(exact(Escape::WaitOpenComplete), WaitOpenComplete::SIZE);
}

#[test]
fn fb_get_info_v2() {
    let mut v = FbGetInfoV2Params {
        list_size: d(1),
        ..Default::default()
    };
    let mut img = Image::new(1028).u32(0, d(1));
    for i in 0..128usize {
        v.list[i] = InfoEntry {
            index: i as u32 + 1,
            data: 0x1000 + i as u32,
        };
        img = img
            .u32(4 + 8 * i, i as u32 + 1)
            .u32(8 + 8 * i, 0x1000 + i as u32);
    }
    check!(FbGetInfoV2Params, v, img);
    layout!(InfoEntry [8] {
        index: u32 @ 0,
        data: u32 @ 4,
    });

    let mut p = FbGetInfoV2Params::new(&[fb_info::RAM_SIZE, fb_info::HEAP_FREE]);
    assert_eq!(p.list_size, 2);
    assert_eq!(p.entries().len(), 2);
    p.entries_mut()[1].data = 77;
    assert_eq!(p.get(fb_info::HEAP_FREE), Some(77));
    assert_eq!(p.get(fb_info::RAM_SIZE), Some(0));
    assert_eq!(p.get(fb_info::HEAP_SIZE), None);
    // A hostile list size is clamped, not trusted.
    p.list_size = u32::MAX;
    assert_eq!(p.entries().len(), 128);
    // More than 128 indices: the rest are dropped.
    let many: Vec<u32> = (0..300).collect();
    assert_eq!(FbGetInfoV2Params::new(&many).list_size, 128);
}

#[test]
fn fb_get_info_v1_and_surface_info() {
    layout!(FbGetInfoV1Params [16] {
        list_size: u32 @ 0,
        list_ptr: u64 @ 8,
    });
    layout!(GetSurfaceInfoParams [16] {
        list_size: u32 @ 0,
        list_ptr: u64 @ 8,
    });
    assert_eq!(surface_info::PHYS_SIZE, 7);
    assert_eq!(surface_info::PHYS_SIZE_SCALE, 4096);
}

#[test]
fn fb_info_indices() {
    assert_eq!(fb_info::RAM_SIZE, 0x07);
    assert_eq!(fb_info::TOTAL_RAM_SIZE, 0x08);
    assert_eq!(fb_info::HEAP_SIZE, 0x09);
    assert_eq!(fb_info::MAPPABLE_HEAP_SIZE, 0x0A);
    assert_eq!(fb_info::FB_TAX_SIZE_KB, 0x10);
    assert_eq!(fb_info::LARGEST_FREE_REGION_SIZE_KB, 0x12);
    assert_eq!(fb_info::HEAP_FREE, 0x16);
    assert_eq!(fb_info::USABLE_RAM_SIZE, 0x20);
    assert_eq!(fb_info::MAX_LIST_SIZE, 128);
    for i in [0x07, 0x08, 0x09, 0x0A, 0x10, 0x12, 0x16, 0x20] {
        assert!(fb_info::reveals_memory_size(i), "{i:#x}");
    }
    assert!(!fb_info::reveals_memory_size(fb_info::BUS_WIDTH));
}

#[test]
fn tsg_control_params() {
    layout!(GpfifoScheduleParams [3] {
        b_enable: u8 @ 0,
        b_skip_submit: u8 @ 1,
        b_skip_enable: u8 @ 2,
    });
    layout!(TimesliceParams [8] {
        timeslice_us: u64 @ 0,
    });
    layout!(PreemptParams [8] {
        b_wait: u8 @ 0,
        b_manual_timeout: u8 @ 1,
        timeout_us: u32 @ 4,
    });
    layout!(InterleaveLevelParams [4] {
        tsg_interleave_level: u32 @ 0,
    });
    layout!(MakeRealtimeParams [1] {
        b_realtime: u8 @ 0,
    });
    layout!(StopChannelParams [1] {
        b_immediate: u8 @ 0,
    });
    layout!(WorkSubmitTokenParams [4] {
        work_submit_token: u32 @ 0,
    });
    assert_eq!(DEFAULT_TIMESLICE_US, 1024);
}

#[test]
fn fifo_disable_channels() {
    let mut v = FifoDisableChannelsParams {
        b_disable: b(1),
        num_channels: d(2),
        b_only_disable_scheduling: b(3),
        b_rewind_gp_put: b(4),
        p_runlist_preempt_event: q(5),
        ..Default::default()
    };
    let mut img = Image::new(536)
        .u8(0, b(1))
        .u32(4, d(2))
        .u8(8, b(3))
        .u8(9, b(4))
        .u64(16, q(5));
    for i in 0..64usize {
        v.h_client_list[i] = 0xc1d0_0000 + i as u32;
        v.h_channel_list[i] = 0xcafe_0000 + i as u32;
        img = img
            .u32(24 + 4 * i, 0xc1d0_0000 + i as u32)
            .u32(280 + 4 * i, 0xcafe_0000 + i as u32);
    }
    check!(FifoDisableChannelsParams, v, img);
    v.num_channels = 2;
    let e: Vec<_> = v.entries().collect();
    assert_eq!(e, [(0xc1d0_0000, 0xcafe_0000), (0xc1d0_0001, 0xcafe_0001)]);
    v.num_channels = 1000;
    assert_eq!(v.entries().count(), 64);
}

#[test]
fn device_and_subdevice_alloc_params() {
    layout!(DeviceAllocParams [56] {
        device_id: u32 @ 0,
        h_client_share: u32 @ 4,
        h_target_client: u32 @ 8,
        h_target_device: u32 @ 12,
        flags: u32 @ 16,
        va_space_size: u64 @ 24,
        va_start_internal: u64 @ 32,
        va_limit_internal: u64 @ 40,
        va_mode: u32 @ 48,
    });
    layout!(SubdeviceAllocParams [4] {
        sub_device_id: u32 @ 0,
    });
    layout!(EventAllocParams [24] {
        h_parent_client: u32 @ 0,
        h_src_resource: u32 @ 4,
        h_class: u32 @ 8,
        notify_index: u32 @ 12,
        data: u64 @ 16,
    });
}

fn memdesc(k: u8) -> (MemoryDescParams, [u8; 24]) {
    let m = MemoryDescParams {
        base: q(k),
        size: q(k + 1),
        address_space: d(k + 2),
        cache_attrib: d(k + 3),
    };
    let img = Image::new(24)
        .u64(0, q(k))
        .u64(8, q(k + 1))
        .u32(16, d(k + 2))
        .u32(20, d(k + 3));
    let mut a = [0u8; 24];
    a.copy_from_slice(&img.0);
    (m, a)
}

#[test]
fn channel_alloc_params() {
    let (m1, i1) = memdesc(40);
    let (m2, i2) = memdesc(50);
    let (m3, i3) = memdesc(60);
    let (m4, i4) = memdesc(70);
    let (m5, i5) = memdesc(80);
    let (m6, i6) = memdesc(90);
    let v = ChannelAllocParams {
        h_object_error: d(1),
        h_object_buffer: d(2),
        gp_fifo_offset: q(3),
        gp_fifo_entries: d(4),
        flags: d(5),
        h_context_share: d(6),
        h_va_space: d(7),
        h_userd_memory: [d(8), d(9), d(10), d(11), d(12), d(13), d(14), d(15)],
        userd_offset: [q(16), q(17), q(18), q(19), q(20), q(21), q(22), q(23)],
        engine_type: d(24),
        cid: d(25),
        sub_device_id: d(26),
        h_object_ecc_error: d(27),
        instance_mem: m1,
        userd_mem: m2,
        ramfc_mem: m3,
        mthdbuf_mem: m4,
        h_phys_channel_group: d(28),
        internal_flags: d(29),
        error_notifier_mem: m5,
        ecc_error_notifier_mem: m6,
        process_id: d(30),
        sub_process_id: d(31),
        encrypt_iv: [d(100), d(101), d(102)],
        decrypt_iv: [d(103), d(104), d(105)],
        hmac_nonce: [
            d(106),
            d(107),
            d(108),
            d(109),
            d(110),
            d(111),
            d(112),
            d(113),
        ],
        tpc_config_id: d(114),
    };
    let mut img = Image::new(368)
        .u32(0, d(1))
        .u32(4, d(2))
        .u64(8, q(3))
        .u32(16, d(4))
        .u32(20, d(5))
        .u32(24, d(6))
        .u32(28, d(7));
    for i in 0..8u8 {
        img = img
            .u32(32 + 4 * i as usize, d(8 + i))
            .u64(64 + 8 * i as usize, q(16 + i));
    }
    img = img
        .u32(128, d(24))
        .u32(132, d(25))
        .u32(136, d(26))
        .u32(140, d(27))
        .put(144, &i1)
        .put(168, &i2)
        .put(192, &i3)
        .put(216, &i4)
        .u32(240, d(28))
        .u32(244, d(29))
        .put(248, &i5)
        .put(272, &i6)
        .u32(296, d(30))
        .u32(300, d(31));
    for i in 0..3u8 {
        img = img
            .u32(304 + 4 * i as usize, d(100 + i))
            .u32(316 + 4 * i as usize, d(103 + i));
    }
    for i in 0..8u8 {
        img = img.u32(328 + 4 * i as usize, d(106 + i));
    }
    img = img.u32(360, d(114));
    check!(ChannelAllocParams, v, img);
    assert_eq!(MAX_SUBDEVICES, 8);
}

#[test]
fn tsg_ctxshare_vaspace_usermode_alloc_params() {
    layout!(ChannelGroupAllocParams [20] {
        h_object_error: u32 @ 0,
        h_object_ecc_error: u32 @ 4,
        h_va_space: u32 @ 8,
        engine_type: u32 @ 12,
        b_is_calling_context_vgpu_plugin: u8 @ 16,
    });
    layout!(CtxShareAllocParams [12] {
        h_va_space: u32 @ 0,
        flags: u32 @ 4,
        subctx_id: u32 @ 8,
    });
    layout!(VaSpaceAllocParams [56] {
        index: u32 @ 0,
        flags: u32 @ 4,
        va_size: u64 @ 8,
        va_start_internal: u64 @ 16,
        va_limit_internal: u64 @ 24,
        big_page_size: u32 @ 32,
        va_base: u64 @ 40,
        pasid: u32 @ 48,
    });
    layout!(UsermodeAllocParams [2] {
        b_bar1_mapping: u8 @ 0,
        b_priv: u8 @ 1,
    });
}

#[test]
fn root_gpu_controls() {
    check!(
        GpuGetIdInfoV2Params,
        GpuGetIdInfoV2Params {
            gpu_id: d(1),
            gpu_flags: d(2),
            device_instance: d(3),
            sub_device_instance: d(4),
            sli_status: d(5),
            board_id: d(6),
            gpu_instance: d(7),
            numa_id: -1,
        },
        Image::new(32)
            .u32(0, d(1))
            .u32(4, d(2))
            .u32(8, d(3))
            .u32(12, d(4))
            .u32(16, d(5))
            .u32(20, d(6))
            .u32(24, d(7))
            .i32(28, -1)
    );
    let mut ids = GpuGetAttachedIdsParams {
        gpu_ids: [GPU_INVALID_ID; 32],
    };
    ids.gpu_ids[0] = 0x100;
    ids.gpu_ids[1] = 0x200;
    let mut img = Image::new(128).u32(0, 0x100).u32(4, 0x200);
    for i in 2..32 {
        img = img.u32(4 * i, GPU_INVALID_ID);
    }
    check!(GpuGetAttachedIdsParams, ids, img);
    assert_eq!(ids.ids().collect::<Vec<_>>(), [0x100, 0x200]);

    let mut cl = ClassListV2Params {
        num_classes: 2,
        ..Default::default()
    };
    cl.class_list[0] = class::AMPERE_CHANNEL_GPFIFO_A;
    cl.class_list[1] = class::AMPERE_COMPUTE_A;
    check!(
        ClassListV2Params,
        cl,
        Image::new(804)
            .u32(0, 2)
            .u32(4, class::AMPERE_CHANNEL_GPFIFO_A)
            .u32(8, class::AMPERE_COMPUTE_A)
    );
    assert_eq!(cl.classes(), [0xc56f, 0xc6c0]);
    cl.num_classes = 9999;
    assert_eq!(cl.classes().len(), 200);

    let g = GpuGetInfoV2Params::new(&[1, 2, 3]);
    assert_eq!(GpuGetInfoV2Params::SIZE, 564);
    assert_eq!(g.entries().len(), 3);
    let img = g.to_bytes();
    assert_eq!(&img[..4], &3u32.to_ne_bytes());
    assert_eq!(&img[4..8], &1u32.to_ne_bytes());
    assert_eq!(&img[20..24], &3u32.to_ne_bytes());
}

#[test]
fn status_codes() {
    use status::*;
    let table = [
        (NV_OK, 0x00),
        (NV_ERR_IN_USE, 0x17),
        (NV_ERR_INSUFFICIENT_RESOURCES, 0x1A),
        (NV_ERR_INSUFFICIENT_PERMISSIONS, 0x1B),
        (NV_ERR_INVALID_ARGUMENT, 0x1F),
        (NV_ERR_INVALID_CLASS, 0x22),
        (NV_ERR_INVALID_CLIENT, 0x23),
        (NV_ERR_INVALID_OBJECT_HANDLE, 0x33),
        (NV_ERR_INVALID_STATE, 0x40),
        (NV_ERR_NO_MEMORY, 0x51),
        (NV_ERR_NOT_SUPPORTED, 0x56),
        (NV_ERR_OBJECT_NOT_FOUND, 0x57),
        (NV_ERR_STATE_IN_USE, 0x63),
        (NV_ERR_GENERIC, 0xFFFF),
    ];
    for (c, v) in table {
        assert_eq!(c, v);
        assert!(name(c).is_some(), "{c:#x} has a name");
    }
    assert_eq!(name(0x51), Some("NV_ERR_NO_MEMORY"));
    assert_eq!(name(0x1234), None);
    assert_eq!(
        format!("{}", NvStatus(NV_ERR_NO_MEMORY)),
        "NV_ERR_NO_MEMORY (0x51)"
    );
    assert_eq!(format!("{}", NvStatus(0x1234)), "NV status 0x1234");
    assert!(NvStatus(0).is_ok());
}

#[test]
fn classes() {
    use class::*;
    // Each number as NVIDIA's headers define it.
    let table = [
        (NV01_ROOT, 0x0, "NV01_ROOT"),
        (NV01_ROOT_NON_PRIV, 0x1, "NV01_ROOT_NON_PRIV"),
        (NV01_ROOT_CLIENT, 0x41, "NV01_ROOT_CLIENT"),
        (NV01_DEVICE_0, 0x80, "NV01_DEVICE_0"),
        (NV20_SUBDEVICE_0, 0x2080, "NV20_SUBDEVICE_0"),
        (NV01_MEMORY_LOCAL_USER, 0x40, "NV01_MEMORY_LOCAL_USER"),
        (NV01_MEMORY_SYSTEM, 0x3e, "NV01_MEMORY_SYSTEM"),
        (
            NV01_MEMORY_LOCAL_PHYSICAL,
            0xc2,
            "NV01_MEMORY_LOCAL_PHYSICAL",
        ),
        (NV50_MEMORY_VIRTUAL, 0x50a0, "NV50_MEMORY_VIRTUAL"),
        (NV01_MEMORY_VIRTUAL, 0x70, "NV01_MEMORY_VIRTUAL"),
        (FERMI_VASPACE_A, 0x90f1, "FERMI_VASPACE_A"),
        (NV_MEMORY_FABRIC, 0xf8, "NV_MEMORY_FABRIC"),
        (KEPLER_CHANNEL_GROUP_A, 0xa06c, "KEPLER_CHANNEL_GROUP_A"),
        (FERMI_CONTEXT_SHARE_A, 0x9067, "FERMI_CONTEXT_SHARE_A"),
        (TURING_USERMODE_A, 0xc461, "TURING_USERMODE_A"),
        (HOPPER_USERMODE_A, 0xc661, "HOPPER_USERMODE_A"),
    ];
    for (number, want, what) in table {
        assert_eq!(number, want, "{what}");
    }
    assert_eq!(USERMODE_DOORBELL_OFFSET, 0x90);
    for c in [0xa06f, 0xc36f, 0xc46f, 0xc56f, 0xc86f, 0xc96f, 0xca6f] {
        assert!(is_channel_class(c), "{c:#x}");
    }
    for c in [0xa06c, 0x9067, 0x40, 0xc461, 0xc6c0, 0] {
        assert!(!is_channel_class(c), "{c:#x}");
    }
    assert!(is_usermode_class(0xc461) && is_usermode_class(0xc661));
    assert!(!is_usermode_class(0xc56f));
    assert!(is_client_class(0x41) && !is_client_class(0x80));
}

#[test]
fn control_commands() {
    use ctrl::*;
    // Each number as NVIDIA's headers define it.
    let table = [
        (
            NV2080_CTRL_CMD_FB_GET_INFO,
            0x2080_1301,
            "NV2080_CTRL_CMD_FB_GET_INFO",
        ),
        (
            NV2080_CTRL_CMD_FB_GET_INFO_V2,
            0x2080_1303,
            "NV2080_CTRL_CMD_FB_GET_INFO_V2",
        ),
        (
            NV0041_CTRL_CMD_GET_SURFACE_INFO,
            0x0041_0110,
            "NV0041_CTRL_CMD_GET_SURFACE_INFO",
        ),
        (
            NVA06C_CTRL_CMD_GPFIFO_SCHEDULE,
            0xa06c_0101,
            "NVA06C_CTRL_CMD_GPFIFO_SCHEDULE",
        ),
        (
            NVA06C_CTRL_CMD_SET_TIMESLICE,
            0xa06c_0103,
            "NVA06C_CTRL_CMD_SET_TIMESLICE",
        ),
        (
            NVA06C_CTRL_CMD_GET_TIMESLICE,
            0xa06c_0104,
            "NVA06C_CTRL_CMD_GET_TIMESLICE",
        ),
        (
            NVA06C_CTRL_CMD_PREEMPT,
            0xa06c_0105,
            "NVA06C_CTRL_CMD_PREEMPT",
        ),
        (
            NVA06C_CTRL_CMD_SET_INTERLEAVE_LEVEL,
            0xa06c_0107,
            "NVA06C_CTRL_CMD_SET_INTERLEAVE_LEVEL",
        ),
        (
            NVA06C_CTRL_CMD_MAKE_REALTIME,
            0xa06c_0110,
            "NVA06C_CTRL_CMD_MAKE_REALTIME",
        ),
        (
            NVA06F_CTRL_CMD_GPFIFO_SCHEDULE,
            0xa06f_0103,
            "NVA06F_CTRL_CMD_GPFIFO_SCHEDULE",
        ),
        (
            NVA06F_CTRL_CMD_STOP_CHANNEL,
            0xa06f_0112,
            "NVA06F_CTRL_CMD_STOP_CHANNEL",
        ),
        (
            NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS,
            0x2080_110b,
            "NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS",
        ),
        (
            NV2080_CTRL_CMD_FB_GET_FB_REGION_INFO,
            0x2080_1320,
            "NV2080_CTRL_CMD_FB_GET_FB_REGION_INFO",
        ),
        (
            NV2080_CTRL_CMD_GPU_GET_PID_INFO,
            0x2080_018e,
            "NV2080_CTRL_CMD_GPU_GET_PID_INFO",
        ),
        (
            NV2080_CTRL_CMD_GPU_GET_PIDS,
            0x2080_018d,
            "NV2080_CTRL_CMD_GPU_GET_PIDS",
        ),
        (
            NV2080_CTRL_CMD_GPU_SET_COMPUTE_POLICY_CONFIG,
            0x2080_0194,
            "NV2080_CTRL_CMD_GPU_SET_COMPUTE_POLICY_CONFIG",
        ),
        (
            NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN,
            0xc36f_0108,
            "NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN",
        ),
        (
            NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2,
            0x205,
            "NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2",
        ),
    ];
    for (number, want, what) in table {
        assert_eq!(number, want, "{what}");
    }
    assert_eq!(
        class_of(NVA06C_CTRL_CMD_PREEMPT),
        class::KEPLER_CHANNEL_GROUP_A
    );
    assert_eq!(
        class_of(NV2080_CTRL_CMD_FB_GET_INFO_V2),
        class::NV20_SUBDEVICE_0
    );
    assert_eq!(class_of(NV0041_CTRL_CMD_GET_SURFACE_INFO), 0x41);
}

#[test]
fn bit_fields() {
    let f = BitField::new(26, 25);
    assert_eq!(f.mask(), 0b11);
    assert_eq!(f.get(0b11 << 25), 3);
    assert_eq!(f.get(!(0b11 << 25)), 0);
    assert_eq!(f.set(u32::MAX, 0), !(0b11 << 25));
    assert_eq!(f.set(0, 0xff), 0b11 << 25); // truncated to the field
    let all = BitField::new(31, 0);
    assert_eq!(all.mask(), u32::MAX);
    assert_eq!(all.get(0xdead_beef), 0xdead_beef);
    let top = BitField::new(31, 29);
    assert_eq!(top.set(0, 5), 5 << 29);
    // Nonsense fields never panic.
    assert_eq!(BitField::new(3, 40).get(u32::MAX), 0);
    assert_eq!(BitField::new(0, 5).set(7, 1), 7);
}

#[test]
fn wire_decoding_never_panics_on_short_input() {
    // The Wire trait reads missing bytes as zero and drops bytes that do not
    // fit, so a proxy can read a field out of any buffer.
    let v = <Nvos64 as Wire>::decode(&[1, 0, 0, 0, 2]);
    assert_eq!(v.h_root, 1);
    assert_eq!(v.h_object_parent, 2);
    assert_eq!(v.status, 0);
    let mut short = [0u8; 6];
    Nvos64 {
        h_root: 0x0403_0201,
        h_object_parent: 0x0807_0605,
        ..Default::default()
    }
    .encode(&mut short);
    assert_eq!(short, [1, 2, 3, 4, 5, 6]);
    assert_eq!(<u64 as Wire>::decode(&[]), 0);
}

#[test]
fn relayout_moves_fields_by_name_between_release_layouts() {
    use vgpu_logic::nv::abi::{relayout, Nvos21, Nvos64, Wire};
    // An NVOS64 (580 on) into an NVOS21 (before 580): the handles and the
    // params pointer stay, the rights pointer and flags go, the status and
    // paramsSize move.
    let a = Nvos64 {
        h_root: 1,
        h_object_parent: 2,
        h_object_new: 3,
        h_class: 0x40,
        p_alloc_parms: 0xdead_0000,
        p_rights_requested: 0x1234,
        params_size: 128,
        flags: 7,
        status: 0x1f,
    };
    let mut old = [0xffu8; Nvos21::SIZE];
    relayout(&a.to_bytes(), Nvos64::FIELDS, &mut old, Nvos21::FIELDS);
    let b = Nvos21::decode(&old);
    assert_eq!(
        (b.h_root, b.h_object_parent, b.h_object_new, b.h_class),
        (1, 2, 3, 0x40)
    );
    assert_eq!(
        (b.p_alloc_parms, b.params_size, b.status),
        (0xdead_0000, 128, 0x1f)
    );
    // And back: what NVOS21 lacks keeps what the target held.
    let mut back = Nvos64::default().to_bytes();
    relayout(&old, Nvos21::FIELDS, &mut back, Nvos64::FIELDS);
    let c = Nvos64::decode(&back);
    assert_eq!((c.status, c.p_rights_requested, c.flags), (0x1f, 0, 0));
    // One layout: the bytes as they are.
    let mut same = [0u8; Nvos64::SIZE];
    relayout(&a.to_bytes(), Nvos64::FIELDS, &mut same, Nvos64::FIELDS);
    assert_eq!(same, a.to_bytes());
}

#[test]
fn relayout_gives_arrays_of_other_lengths_their_common_prefix() {
    use vgpu_logic::nv::abi::{relayout, Wire};
    use vgpu_logic::nv::uvm::{r535, MapExternalAllocationParams as New};
    let mut n = New {
        base: 0x1000,
        gpu_attributes_count: 2,
        h_client: 5,
        h_memory: 6,
        ..Default::default()
    };
    n.per_gpu_attributes[1].gpu_uuid = [9; 16];
    let mut b = vec![0u8; New::SIZE];
    n.encode(&mut b);
    let mut old = vec![0u8; r535::MapExternalAllocationParams::SIZE];
    relayout(
        &b,
        New::FIELDS,
        &mut old,
        r535::MapExternalAllocationParams::FIELDS,
    );
    let o = r535::MapExternalAllocationParams::decode(&old);
    assert_eq!(
        (o.base, o.gpu_attributes_count, o.h_client, o.h_memory),
        (0x1000, 2, 5, 6)
    );
    assert_eq!(o.per_gpu_attributes[1].gpu_uuid, [9; 16]);
}
