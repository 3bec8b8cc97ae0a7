// SPDX-License-Identifier: GPL-2.0

//! Host tests of the nvidia-uvm ABI (src/nv/uvm.rs): command numbers, block
//! sizes, where each block keeps its status, and the offsets of the fields
//! vgpu reads or rewrites (docs/uvm-abi.md, section 4).

use vgpu_logic::nv::abi::GidInfoParams;
use vgpu_logic::nv::uvm::*;

#[test]
fn numbers_and_sizes_match_the_driver() {
    let table: &[(Command, u32, usize, Option<usize>)] = &[
        (Command::Initialize, 0x3000_0001, 16, Some(8)),
        (Command::Deinitialize, 0x3000_0002, 0, None),
        (Command::MmInitialize, 75, 8, Some(4)),
        (Command::RegisterGpu, 37, 40, Some(36)),
        (Command::UnregisterGpu, 38, 20, Some(16)),
        (Command::RegisterGpuVaspace, 25, 32, Some(28)),
        (Command::UnregisterGpuVaspace, 26, 20, Some(16)),
        (Command::RegisterChannel, 27, 56, Some(48)),
        (Command::UnregisterChannel, 28, 12, Some(8)),
        (Command::EnablePeerAccess, 29, 36, Some(32)),
        (Command::DisablePeerAccess, 30, 36, Some(32)),
        (Command::MapExternalAllocation, 33, 9264, Some(9260)),
        (Command::Free, 34, 16, Some(8)),
        (Command::PageableMemAccess, 39, 8, Some(4)),
        (Command::PageableMemAccessOnGpu, 70, 24, Some(20)),
        (Command::SetPreferredLocation, 42, 40, Some(36)),
        (Command::UnsetPreferredLocation, 43, 24, Some(16)),
        (Command::EnableReadDuplication, 44, 24, Some(16)),
        (Command::DisableReadDuplication, 45, 24, Some(16)),
        (Command::SetAccessedBy, 46, 40, Some(32)),
        (Command::UnsetAccessedBy, 47, 40, Some(32)),
        (Command::Migrate, 51, 80, Some(72)),
        (Command::UnmapExternal, 66, 40, Some(32)),
        (Command::AllocSemaphorePool, 68, 9248, Some(9240)),
        (Command::ValidateVaRange, 72, 24, Some(16)),
        (Command::CreateExternalRange, 73, 24, Some(16)),
        (Command::CreateRangeGroup, 23, 16, Some(8)),
        (Command::DestroyRangeGroup, 24, 16, Some(8)),
        (Command::SetRangeGroup, 31, 32, Some(24)),
        (Command::MigrateRangeGroup, 53, 32, Some(24)),
        (Command::ToolsReadProcessMemory, 62, 40, Some(32)),
        (Command::ToolsWriteProcessMemory, 63, 40, Some(32)),
        (Command::MapDynamicParallelismRegion, 65, 40, Some(32)),
    ];
    assert_eq!(table.len(), COMMANDS.len());
    for &(c, nr, size, status) in table {
        assert_eq!(c.number(), nr, "{c:?}");
        assert_eq!(c.size(), size, "{c:?}");
        assert_eq!(c.status_offset(), status, "{c:?}");
        assert_eq!(Command::decode(nr), Some(c));
        if let Some(off) = status {
            assert!(off + 4 <= size, "{c:?}: status past the block");
        }
    }
    // Unknown numbers, and RM-style encodings of known ones, are not UVM's.
    // 40/41 (migration policy of range groups) and 64 (tools UUID table)
    // stay unknown: CUDA's compute path does not issue them.
    for nr in [0, 1, 35, 40, 41, 64, 2047, 0xc020_462b, 0x3000_0003, 76] {
        assert_eq!(Command::decode(nr), None, "{nr:#x}");
    }
    assert_eq!(Command::MmInitialize.embedded_fd(), Some(0));
    assert_eq!(Command::RegisterGpu.embedded_fd(), Some(24));
    assert_eq!(Command::RegisterChannel.embedded_fd(), None);
    assert!(!Command::Initialize.init_checked());
    assert!(!Command::MmInitialize.init_checked());
    assert!(Command::RegisterGpu.init_checked());
    for c in [
        Command::CreateRangeGroup,
        Command::SetRangeGroup,
        Command::MigrateRangeGroup,
        Command::MapDynamicParallelismRegion,
        Command::ToolsReadProcessMemory,
    ] {
        assert!(c.init_checked(), "{c:?}");
        assert_eq!(c.embedded_fd(), None, "{c:?}");
    }
}

/// The range-group, dynamic-parallelism and tools blocks, against offsets
/// computed from `uvm_ioctl.h` (595.45.04) and checked by compiling a probe
/// against that header.
#[test]
fn range_group_and_region_blocks() {
    let g = RangeGroupParams {
        range_group_id: 0x0102_0304_0506_0708,
        rm_status: 0x57,
    };
    let b = g.to_bytes();
    assert_eq!(&b[0..8], &0x0102_0304_0506_0708u64.to_ne_bytes());
    assert_eq!(&b[8..12], &0x57u32.to_ne_bytes());
    assert_eq!(RangeGroupParams::from_bytes(&b), Some(g));

    let s = SetRangeGroupParams {
        range_group_id: 3,
        requested_base: 0x7000_0000,
        length: 0x20_0000,
        rm_status: 0x1e,
    };
    let b = s.to_bytes();
    assert_eq!(&b[0..8], &3u64.to_ne_bytes());
    assert_eq!(&b[8..16], &0x7000_0000u64.to_ne_bytes());
    assert_eq!(&b[16..24], &0x20_0000u64.to_ne_bytes());
    assert_eq!(&b[24..28], &0x1eu32.to_ne_bytes());
    assert_eq!(RANGE_GROUP_NONE, 0);

    let m = MigrateRangeGroupParams {
        range_group_id: 9,
        destination_uuid: CPU_UUID,
        rm_status: 0x26,
    };
    let b = m.to_bytes();
    assert_eq!(&b[0..8], &9u64.to_ne_bytes());
    assert_eq!(&b[8..24], &CPU_UUID);
    assert_eq!(&b[24..28], &0x26u32.to_ne_bytes());
    assert_eq!(MigrateRangeGroupParams::from_bytes(&b[..31]), None);

    // MAP_DYNAMIC_PARALLELISM_REGION shares UNMAP_EXTERNAL's layout.
    let r = RangeGpuParams {
        base: 0x1_0000_0000,
        length: 0x1_0000,
        uuid: [5; 16],
        rm_status: 0x5b,
    };
    let b = r.to_bytes();
    assert_eq!(&b[8..16], &0x1_0000u64.to_ne_bytes());
    assert_eq!(&b[16..32], &[5; 16]);
    assert_eq!(&b[32..36], &0x5bu32.to_ne_bytes());

    let t = ToolsProcessMemoryParams {
        buffer: 0x1000,
        size: 0x2000,
        target_va: 0x3000,
        bytes_done: 0x4000,
        rm_status: 0x1f,
    };
    let b = t.to_bytes();
    for (i, v) in [0x1000u64, 0x2000, 0x3000, 0x4000].iter().enumerate() {
        assert_eq!(&b[i * 8..i * 8 + 8], &v.to_ne_bytes());
    }
    assert_eq!(&b[32..36], &0x1fu32.to_ne_bytes());
    // At most 5 page-table levels below the root, 4 KiB each.
    assert_eq!(DP_REGION_PAGE_TABLES, 20 << 10);
}

#[test]
fn fields_sit_at_their_offsets() {
    let g = RegisterGpuParams {
        gpu_uuid: [7; 16],
        rm_ctrl_fd: -1,
        h_client: 0x1122_3344,
        rm_status: 0x51,
        ..Default::default()
    };
    let b = g.to_bytes();
    assert_eq!(&b[0..16], &[7; 16]);
    assert_eq!(&b[24..28], &(-1i32).to_ne_bytes());
    assert_eq!(&b[28..32], &0x1122_3344u32.to_ne_bytes());
    assert_eq!(&b[36..40], &0x51u32.to_ne_bytes());
    assert_eq!(RegisterGpuParams::from_bytes(&b), Some(g));
    assert_eq!(RegisterGpuParams::from_bytes(&b[..39]), None);

    let mut m = MapExternalAllocationParams::default();
    m.per_gpu_attributes[255].gpu_compression_type = 1;
    m.gpu_attributes_count = 2;
    m.h_client = 5;
    m.h_memory = 6;
    let b = m.to_bytes();
    assert_eq!(b[24 + 255 * 36 + 32], 1);
    assert_eq!(&b[9240..9248], &2u64.to_ne_bytes());
    assert_eq!(&b[9252..9256], &5u32.to_ne_bytes());
    assert_eq!(&b[9256..9260], &6u32.to_ne_bytes());
    // The single-field offsets agree with the struct.
    use vgpu_logic::nv::uvm::map_external as mx;
    let at = |o: usize, n: usize| b[o..o + n].to_vec();
    assert_eq!(at(mx::H_CLIENT, 4), 5u32.to_ne_bytes());
    assert_eq!(at(mx::H_MEMORY, 4), 6u32.to_ne_bytes());
    assert_eq!(at(mx::COUNT, 8), 2u64.to_ne_bytes());
    assert_eq!(mx::ATTRIBUTES + 255 * 36 + 32, 24 + 255 * 36 + 32);
    let mut m2 = MapExternalAllocationParams {
        base: 0x1111,
        length: 0x2222,
        offset: 0x3333,
        ..Default::default()
    };
    m2.per_gpu_attributes[0].gpu_uuid = [9; 16];
    let b2 = m2.to_bytes();
    assert_eq!(b2[mx::BASE..mx::BASE + 8], 0x1111u64.to_ne_bytes());
    assert_eq!(b2[mx::LENGTH..mx::LENGTH + 8], 0x2222u64.to_ne_bytes());
    assert_eq!(b2[mx::OFFSET..mx::OFFSET + 8], 0x3333u64.to_ne_bytes());
    assert_eq!(b2[mx::ATTRIBUTES..mx::ATTRIBUTES + 16], [9; 16]);

    let v = RegisterGpuVaspaceParams {
        h_client: 1,
        h_va_space: 2,
        ..Default::default()
    };
    let b = v.to_bytes();
    assert_eq!(&b[20..24], &1u32.to_ne_bytes());
    assert_eq!(&b[24..28], &2u32.to_ne_bytes());

    let c = RegisterChannelParams {
        h_client: 3,
        h_channel: 4,
        base: 1 << 40,
        ..Default::default()
    };
    let b = c.to_bytes();
    assert_eq!(&b[20..24], &3u32.to_ne_bytes());
    assert_eq!(&b[24..28], &4u32.to_ne_bytes());
    assert_eq!(&b[32..40], &(1u64 << 40).to_ne_bytes());

    let mi = MigrateParams {
        destination_uuid: CPU_UUID,
        flags: migrate_flags::ASYNC,
        cpu_numa_node: -1,
        ..Default::default()
    };
    let b = mi.to_bytes();
    assert_eq!(&b[16..32], &CPU_UUID);
    assert_eq!(&b[32..36], &1u32.to_ne_bytes());
    assert_eq!(&b[52..56], &(-1i32).to_ne_bytes());

    let mm = MmInitializeParams {
        uvm_fd: 9,
        ..Default::default()
    };
    assert_eq!(&mm.to_bytes()[0..4], &9i32.to_ne_bytes());

    let mut gid = GidInfoParams {
        flags: 2,
        length: 16,
        ..Default::default()
    };
    gid.data[15] = 0xab;
    let b = gid.to_bytes();
    assert_eq!(b.len(), 268);
    assert_eq!(&b[4..8], &2u32.to_ne_bytes());
    assert_eq!(&b[8..12], &16u32.to_ne_bytes());
    assert_eq!(b[12 + 15], 0xab);
}

#[test]
fn range_rules() {
    assert!(range_ok(0x1000, 0x1000));
    assert!(!range_ok(0x1000, 0));
    assert!(!range_ok(0x1001, 0x1000));
    assert!(!range_ok(0x1000, 0x1001));
    assert!(!range_ok(u64::MAX - 0xfff, 0x2000));
    assert!(overlaps(0, 0x2000, 0x1000, 0x1000));
    assert!(!overlaps(0, 0x1000, 0x1000, 0x1000));
    assert_eq!(chunks(0, CHUNK), (0, 1));
    assert_eq!(chunks(CHUNK - PAGE, 2 * PAGE), (0, 2));
    assert_eq!(chunks(3 * CHUNK, 0), (3, 3));
}
