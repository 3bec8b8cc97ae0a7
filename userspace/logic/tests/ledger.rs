// SPDX-License-Identifier: GPL-2.0

//! Host tests of the memory ledger (src/ledger.rs).

use vgpu_logic::ledger::*;
use vgpu_logic::nv::abi::fb_info;

const GIB: u64 = 1 << 30;

#[test]
fn reserve_stops_exactly_at_the_ceiling() {
    let mut l = Ledger::new(GIB);
    assert_eq!(l.reserve(GIB - 4096), Ok(()));
    assert_eq!(l.reserve(4096), Ok(()));
    assert_eq!(l.used(), GIB);
    assert_eq!(l.free(), 0);
    let e = l.reserve(1).unwrap_err();
    assert_eq!(
        e,
        OverLimit {
            used: GIB,
            limit: GIB,
            asked: 1
        }
    );
    assert_eq!(l.used(), GIB, "a refused charge changes nothing");
    assert_eq!(l.refused(), 1);
}

#[test]
fn release_gives_back_and_never_underflows() {
    let mut l = Ledger::new(GIB);
    l.reserve(100).unwrap();
    l.release(40);
    assert_eq!(l.used(), 60);
    l.release(1000);
    assert_eq!(l.used(), 0);
    assert_eq!(l.peak(), 100);
}

#[test]
fn overflow_is_a_refusal_not_a_wrap() {
    let mut l = Ledger::new(u64::MAX);
    l.reserve(u64::MAX - 1).unwrap();
    assert!(l.reserve(2).is_err());
    assert_eq!(l.used(), u64::MAX - 1);
}

#[test]
fn settle_shrinks_or_grows_within_the_ceiling() {
    let mut l = Ledger::new(GIB);
    l.reserve(1000).unwrap();
    l.settle(1000, 4096).unwrap();
    assert_eq!(l.used(), 4096);
    l.reserve(8192).unwrap();
    l.settle(8192, 4096).unwrap();
    assert_eq!(l.used(), 8192);
}

#[test]
fn settle_refuses_growth_past_the_ceiling_and_drops_the_reservation() {
    // A size raced up after the check: the driver allocated more than asked.
    let mut l = Ledger::new(GIB);
    l.reserve(GIB / 2).unwrap();
    l.reserve(4096).unwrap();
    assert!(l.settle(4096, GIB).is_err());
    assert_eq!(
        l.used(),
        GIB / 2,
        "the object is to be freed; nothing stays charged"
    );
}

#[test]
fn lowering_the_ceiling_blocks_new_charges_until_usage_drops() {
    let mut l = Ledger::new(GIB);
    l.reserve(GIB / 2).unwrap();
    l.set_limit(GIB / 4);
    assert_eq!(l.used(), GIB / 2, "nothing running is touched");
    assert_eq!(l.free(), 0);
    assert!(l.reserve(1).is_err());
    l.release(GIB / 2 - GIB / 8);
    assert_eq!(l.reserve(GIB / 8), Ok(()));
}

#[test]
fn view_shows_the_ceiling_and_never_more_than_the_gpu_has() {
    let mut l = Ledger::new(GIB);
    l.reserve(GIB / 4).unwrap();
    assert_eq!(
        View::of(&l, 8 * GIB, 7 * GIB),
        View {
            total: GIB,
            free: 3 * GIB / 4
        }
    );
    // The GPU is nearly full with other tenants' memory.
    assert_eq!(
        View::of(&l, 8 * GIB, GIB / 8),
        View {
            total: GIB,
            free: GIB / 8
        }
    );
    // A ceiling above the GPU shows the GPU.
    let l = Ledger::new(u64::MAX);
    assert_eq!(
        View::of(&l, 8 * GIB, 8 * GIB),
        View {
            total: 8 * GIB,
            free: 8 * GIB
        }
    );
}

#[test]
fn fb_info_rewrite() {
    let mut l = Ledger::new(GIB);
    l.reserve(GIB / 4).unwrap();
    let real_total = 8 * 1024 * 1024; // 8 GiB in KiB
    for idx in [
        fb_info::RAM_SIZE,
        fb_info::TOTAL_RAM_SIZE,
        fb_info::USABLE_RAM_SIZE,
        fb_info::HEAP_SIZE,
        fb_info::MAPPABLE_HEAP_SIZE,
    ] {
        assert_eq!(fb_info_kib(idx, real_total, &l), 1024 * 1024, "index {idx}");
    }
    for idx in [fb_info::HEAP_FREE, fb_info::LARGEST_FREE_REGION_SIZE_KB] {
        assert_eq!(fb_info_kib(idx, real_total, &l), 768 * 1024, "index {idx}");
        // Never more than the GPU really has free.
        assert_eq!(fb_info_kib(idx, 1000, &l), 1000, "index {idx}");
    }
    assert_eq!(fb_info_kib(fb_info::BUS_WIDTH, 5120, &l), 5120);
    // No ceiling: everything passes through.
    let none = Ledger::new(u64::MAX);
    assert_eq!(
        fb_info_kib(fb_info::HEAP_SIZE, real_total, &none),
        real_total
    );
}

#[test]
fn vram_floor_follows_rms_page_size() {
    use vgpu_logic::nv::abi::heap;
    const KIB: u64 = 1 << 10;
    const MIB: u64 = 1 << 20;
    // Default page size: 2 MiB pages from 2 MiB up, 64 KiB below.
    assert_eq!(vram_floor(1, 0, 0), 64 * KIB);
    assert_eq!(vram_floor(MIB + 1, 0, 0), MIB + 64 * KIB);
    assert_eq!(vram_floor(2 * MIB - 1, 0, 0), 2 * MIB);
    assert_eq!(vram_floor(2 * MIB, 0, 0), 2 * MIB);
    assert_eq!(vram_floor(2 * MIB + 1, 0, 0), 4 * MIB);
    assert_eq!(vram_floor(3 * MIB + 5, 0, 0), 4 * MIB);
    // An explicit page size wins, whatever the size.
    let attr = |v: u32| heap::ATTR_PAGE_SIZE.set(0, v);
    assert_eq!(
        vram_floor(3 * MIB + 5, attr(heap::ATTR_PAGE_SIZE_4KB), 0),
        3 * MIB + 4 * KIB
    );
    assert_eq!(
        vram_floor(3 * MIB + 5, attr(heap::ATTR_PAGE_SIZE_BIG), 0),
        3 * MIB + 64 * KIB
    );
    assert_eq!(vram_floor(5, attr(heap::ATTR_PAGE_SIZE_HUGE), 0), 2 * MIB);
    let a2 = heap::ATTR2_PAGE_SIZE_HUGE.set(0, heap::ATTR2_PAGE_SIZE_HUGE_512MB);
    assert_eq!(
        vram_floor(5, attr(heap::ATTR_PAGE_SIZE_HUGE), a2),
        512 * MIB
    );
    // Rounding past u64::MAX is no size that fits.
    assert_eq!(vram_floor(u64::MAX - 5, 0, 0), u64::MAX);
}
