// SPDX-License-Identifier: GPL-2.0

//! Host tests of the pushbuffer format (src/nv/abi/pushbuf.rs): GPFIFO
//! entries, method headers of every opcode, the host's semaphores.

use vgpu_logic::nv::abi::pushbuf::*;

fn methods(words: &[u32]) -> Vec<Result<Method, StreamError>> {
    Methods::new(words).collect()
}

fn m(subch: u8, method: u32, data: u32) -> Result<Method, StreamError> {
    Ok(Method {
        subch,
        method,
        data,
    })
}

#[test]
fn gp_entries_round_trip() {
    let e = GpEntry::segment(0x12_3456_7890, 0x1f_ffff);
    let d = GpEntry::decode(e);
    assert_eq!(d.addr, 0x12_3456_7890);
    assert_eq!(d.words, 0x1f_ffff);
    assert!(!d.subroutine && !d.sync_wait);
    // Bits past 40 of the address and the low two are not the entry's.
    assert_eq!(
        GpEntry::decode(GpEntry::segment(0xff_0000_0003, 1)).addr,
        0xff_0000_0000
    );
    // LEVEL, SYNC and a control entry's opcode, set by hand
    // (`cla16f.h`: LEVEL 9:9, LENGTH 30:10, SYNC 31:31, OPCODE 7:0).
    let w1: u64 = 1 << 9 | 1 << 31 | 4;
    let d = GpEntry::decode(w1 << 32);
    assert!(d.subroutine && d.sync_wait);
    assert_eq!((d.words, d.opcode), (0, 4));
}

#[test]
fn every_header_opcode() {
    let words = [
        // Incrementing: three words to 0x100, 0x104, 0x108 of subch 2.
        incrementing(2, 0x100, 3),
        1,
        2,
        3,
        // A NOP word between headers.
        0,
        // Non-incrementing: two words to 0x200 of subch 1.
        non_incrementing(1, 0x200, 2),
        4,
        5,
        // Immediate: 0x1abc to 0x300 of subch 7.
        immediate(7, 0x300, 0x1abc),
        // Increment-once (SEC_OP 5): the first to 0x400, the rest to 0x404.
        5 << 29 | 3 << 16 | 0x400 >> 2,
        6,
        7,
        8,
        // SET_SUBDEVICE_MASK (31:16 = 1): no data, ignored.
        1 << 16 | 0xff << 4,
        // The legacy incrementing format (SEC_OP 0, TERT_OP 0): ADDRESS
        // 12:2, COUNT 28:18.
        2 << 18 | 0x50,
        9,
        10,
        // END_PB_SEGMENT: nothing after it runs.
        7 << 29,
        incrementing(0, 0x100, 1),
        11,
    ];
    assert_eq!(
        methods(&words),
        vec![
            m(2, 0x100, 1),
            m(2, 0x104, 2),
            m(2, 0x108, 3),
            m(1, 0x200, 4),
            m(1, 0x200, 5),
            m(7, 0x300, 0x1abc),
            m(0, 0x400, 6),
            m(0, 0x404, 7),
            m(0, 0x404, 8),
            m(0, 0x50, 9),
            m(0, 0x54, 10),
        ]
    );
}

#[test]
fn bad_streams_stop_with_one_error() {
    // Data that runs past the segment.
    assert_eq!(
        methods(&[incrementing(0, 0x100, 2), 1]),
        vec![m(0, 0x100, 1), Err(StreamError::Truncated(2))]
    );
    // The reserved opcode 6, and a GRP2 header with a TERT_OP.
    assert_eq!(
        methods(&[6 << 29, incrementing(0, 0, 1), 1]),
        vec![Err(StreamError::Malformed(0))]
    );
    assert_eq!(
        methods(&[2 << 29 | 1 << 16]),
        vec![Err(StreamError::Malformed(0))]
    );
    // An empty segment, and one of NOPs.
    assert!(methods(&[]).is_empty());
    assert!(methods(&[0, 0, 0]).is_empty());
}

#[test]
fn host_semaphores() {
    let mut h = HostSemaphore::default();
    for (method, data) in [
        (host::SEM_ADDR_LO, 0x1000_0003),
        (host::SEM_ADDR_HI, 0x12),
        (host::SEM_PAYLOAD_LO, 7),
        (host::SEM_PAYLOAD_HI, 9),
    ] {
        assert_eq!(h.method(method, data), None);
    }
    // A 32-bit release with a timestamp (OPERATION 1, RELEASE_TIMESTAMP
    // 25:25).
    let r = h.method(host::SEM_EXECUTE, 1 | 1 << 25).unwrap();
    assert_eq!(
        r,
        Semaphore {
            addr: 0x12_1000_0000,
            payload: 7,
            op: SemOp::Release,
            wide: false,
            timestamp: true,
        }
    );
    // A 64-bit acquire (PAYLOAD_SIZE 24:24).
    let a = h.method(host::SEM_EXECUTE, 1 << 24).unwrap();
    assert_eq!(
        (a.op, a.payload, a.wide),
        (SemOp::Acquire, 9 << 32 | 7, true)
    );
    assert!(a.satisfied(9 << 32 | 7) && !a.satisfied(7));
    // ACQ_CIRC_GEQ wraps: 1 is past 0xffff_fff0.
    h.method(host::SEM_PAYLOAD_LO, 0xffff_fff0);
    let c = h.method(host::SEM_EXECUTE, 3).unwrap();
    assert!(c.satisfied(1) && c.satisfied(0xffff_fff0) && !c.satisfied(0xffff_ffe0));
    let g = h.method(host::SEM_EXECUTE, 2).unwrap();
    assert!(!g.satisfied(1) && g.satisfied(0xffff_fff1));
    // Operation 7 is reserved.
    assert_eq!(h.method(host::SEM_EXECUTE, 7), None);
    // The legacy form: A is the upper 8 bits, B the lower, C the payload,
    // D's one-hot OPERATION runs it; a release is 16 bytes with the time
    // unless RELEASE_SIZE asks for 4.
    let mut l = HostSemaphore::default();
    l.method(host::SEMAPHORE_A, 0x1ff);
    l.method(host::SEMAPHORE_B, 0x2000);
    l.method(host::SEMAPHORE_C, 5);
    let r = l.method(host::SEMAPHORE_D, 0x2).unwrap();
    assert_eq!(
        (r.addr, r.payload, r.op, r.timestamp),
        (0xff_0000_2000, 5, SemOp::Release, true)
    );
    let r = l.method(host::SEMAPHORE_D, 0x2 | 1 << 24).unwrap();
    assert!(!r.timestamp);
    let a = l.method(host::SEMAPHORE_D, 0x4).unwrap();
    assert!(a.op == SemOp::AcquireGeq && a.satisfied(5) && !a.satisfied(4));
    assert_eq!(l.method(host::SEMAPHORE_D, 0x3), None);
}

/// Runs copy-engine methods; the launch of the last one.
fn launch(methods: &[(u32, u32)]) -> Launch {
    let mut ce = CopyEngine::default();
    let mut last = None;
    for &(m, d) in methods {
        last = ce.method(m, d);
    }
    last.expect("no launch")
}

/// LAUNCH_DMA flags: pitch layouts (7, 8), virtual addresses, a transfer
/// (`DATA_TRANSFER_TYPE_NON_PIPELINED`, 2).
const PITCH_COPY: u32 = 2 | 1 << 7 | 1 << 8;

#[test]
fn copies_fills_and_their_semaphores() {
    let base = [
        (copy::OFFSET_IN_UPPER, 0x1),
        (copy::OFFSET_IN_LOWER, 0x2000),
        (copy::OFFSET_OUT_UPPER, 0x3),
        (copy::OFFSET_OUT_LOWER, 0x4000),
        (copy::LINE_LENGTH_IN, 4096),
        (copy::LINE_COUNT, 3),
        (copy::PITCH_IN, 8192),
        (copy::PITCH_OUT, 4096),
        (copy::SET_SEMAPHORE_A, 0x5),
        (copy::SET_SEMAPHORE_B, 0x6000),
        (copy::SET_SEMAPHORE_PAYLOAD, 42),
        (copy::SET_SEMAPHORE_PAYLOAD_UPPER, 1),
    ];
    // A one-line copy with a one-word semaphore (SEMAPHORE_TYPE 1, 4:3).
    let mut ms = base.to_vec();
    ms.push((copy::LAUNCH_DMA, PITCH_COPY | 1 << 3));
    let l = launch(&ms);
    assert_eq!(
        (l.src, l.dst, l.line_bytes, l.lines),
        (0x1_0000_2000, 0x3_0000_4000, 4096, 1)
    );
    assert!(l.plain && l.data == CopyData::Copy);
    let s = l.semaphore.unwrap();
    assert_eq!(
        (s.addr, s.payload, s.op, s.wide, s.timestamp),
        (0x5_0000_6000, 42, SemOp::Release, false, false)
    );
    // Multi-line (9:9), a two-word payload (27:27) with the time (type 2).
    let mut ms = base.to_vec();
    ms.push((copy::LAUNCH_DMA, PITCH_COPY | 1 << 9 | 2 << 3 | 1 << 27));
    let l = launch(&ms);
    assert_eq!((l.lines, l.pitch_in, l.pitch_out), (3, 8192, 4096));
    let s = l.semaphore.unwrap();
    assert_eq!((s.payload, s.wide, s.timestamp), (1 << 32 | 42, true, true));
    // A memset of 8-byte elements, as UVM pushes it: CONST_A then CONST_B,
    // components of four bytes, two of them; LINE_LENGTH_IN in elements.
    let mut ms = base.to_vec();
    ms.extend([
        (copy::SET_REMAP_CONST_A, 0x1122_3344),
        (copy::SET_REMAP_CONST_B, 0x5566_7788),
        (copy::SET_REMAP_COMPONENTS, 4 | 5 << 4 | 3 << 16 | 1 << 24),
        (copy::LAUNCH_DMA, PITCH_COPY | 1 << 10),
    ]);
    let l = launch(&ms);
    assert_eq!(l.line_bytes, 4096 * 8);
    let mut want = [0u8; 16];
    want[..8].copy_from_slice(&[0x44, 0x33, 0x22, 0x11, 0x88, 0x77, 0x66, 0x55]);
    assert_eq!(
        l.data,
        CopyData::Fill {
            element: want,
            size: 8
        }
    );
    // A byte fill: CONST_B, one component of one byte.
    let l = launch(&[
        (copy::SET_REMAP_CONST_B, 0xab),
        (copy::SET_REMAP_COMPONENTS, 5),
        (copy::LINE_LENGTH_IN, 10),
        (copy::LAUNCH_DMA, PITCH_COPY | 1 << 10),
    ]);
    let mut want = [0u8; 16];
    want[0] = 0xab;
    assert_eq!(
        (l.data, l.line_bytes),
        (
            CopyData::Fill {
                element: want,
                size: 1
            },
            10
        )
    );
    // A component from the source is not run; a scrub is zeros; no
    // transfer is only the semaphore; a block-linear or physical launch is
    // not plain.
    let l = launch(&[
        (copy::SET_REMAP_COMPONENTS, 0),
        (copy::LAUNCH_DMA, PITCH_COPY | 1 << 10),
    ]);
    assert_eq!(l.data, CopyData::Unsupported);
    assert_eq!(
        launch(&[(copy::LAUNCH_DMA, PITCH_COPY | 1 << 23)]).data,
        CopyData::Zero
    );
    let l = launch(&[(copy::LAUNCH_DMA, 1 << 3)]);
    assert!(l.data == CopyData::None && l.semaphore.is_some());
    assert!(!launch(&[(copy::LAUNCH_DMA, 2 | 1 << 8)]).plain);
    assert!(!launch(&[(copy::LAUNCH_DMA, PITCH_COPY | 1 << 12)]).plain);
    // A reduction (19:19) with its operation (17:14).
    let s = launch(&[(copy::LAUNCH_DMA, 1 << 3 | 1 << 19 | 5 << 14)])
        .semaphore
        .unwrap();
    assert_eq!(s.op, SemOp::Reduction(5));
}

#[test]
fn compute_inline_data_launches_and_reports() {
    let mut c = Compute::default();
    for (m, d) in [
        (compute::LINE_LENGTH_IN, 6),
        (compute::LINE_COUNT, 2),
        (compute::OFFSET_OUT_UPPER, 0x1),
        (compute::OFFSET_OUT, 0x1000),
        (compute::PITCH_OUT, 0x100),
        (compute::SET_I2M_SEMAPHORE_A, 0x2),
        (compute::SET_I2M_SEMAPHORE_B, 0x3000),
        (compute::SET_I2M_SEMAPHORE_C, 9),
    ] {
        assert_eq!(c.method(m, d), None);
    }
    // Pitch (0:0), a one-word semaphore release after it (5:4 = 2, 12:12).
    assert_eq!(c.method(compute::LAUNCH_DMA, 1 | 2 << 4 | 1 << 12), None);
    let words: Vec<_> = (0..5)
        .map(|w| c.method(compute::LOAD_INLINE_DATA, w))
        .collect();
    let sem = Semaphore {
        addr: 0x2_0000_3000,
        payload: 9,
        op: SemOp::Release,
        wide: false,
        timestamp: false,
    };
    let w = |addr: u64, word: u32, len: u8, then| {
        Some(ComputeOp::Inline {
            addr,
            word,
            len,
            then,
        })
    };
    // Two lines of 6 bytes: 4 + 2 on each, the second line a pitch on; a
    // word past the transfer does nothing.
    assert_eq!(
        words,
        vec![
            w(0x1_0000_1000, 0, 4, None),
            w(0x1_0000_1004, 1, 2, None),
            w(0x1_0000_1100, 2, 4, None),
            w(0x1_0000_1104, 3, 2, Some(sem)),
            None,
        ]
    );
    // A launch: the QMD address shifted by 8, scheduled by PCAS2_B's
    // action 3 (INVALIDATE_COPY_SCHEDULE); NOP (0) launches nothing.
    c.method(compute::SEND_PCAS_A, 0x12_3456);
    assert_eq!(c.method(compute::SEND_SIGNALING_PCAS2_B, 0), None);
    assert_eq!(
        c.method(compute::SEND_SIGNALING_PCAS2_B, 3),
        Some(ComputeOp::Launch(0x1234_5600))
    );
    // A four-word report release, and a one-word reduction (ADD, 0).
    c.method(compute::SET_REPORT_SEMAPHORE_A, 0x4);
    c.method(compute::SET_REPORT_SEMAPHORE_B, 0x5000);
    c.method(compute::SET_REPORT_SEMAPHORE_C, 77);
    let Some(ComputeOp::Report(r)) = c.method(compute::SET_REPORT_SEMAPHORE_D, 0) else {
        panic!("no report");
    };
    assert_eq!(
        (r.addr, r.payload, r.op, r.timestamp),
        (0x4_0000_5000, 77, SemOp::Release, true)
    );
    let Some(ComputeOp::Report(r)) = c.method(compute::SET_REPORT_SEMAPHORE_D, 1 << 3 | 1 << 28)
    else {
        panic!("no reduction");
    };
    // RED_ADD (0) is the host's IADD (5), which the engine runs.
    assert_eq!((r.op, r.timestamp), (SemOp::Reduction(5), false));
    // TRAP is not run; a block-linear transfer's words are skipped.
    assert_eq!(c.method(compute::SET_REPORT_SEMAPHORE_D, 3), None);
    c.method(compute::LAUNCH_DMA, 0);
    assert_eq!(
        c.method(compute::LOAD_INLINE_DATA, 1),
        Some(ComputeOp::InlineSkipped)
    );
}

/// Sets `MW(hi:lo)` of QMD words `q` to `v` (within one word).
fn set_mw(q: &mut [u32], hi: u32, lo: u32, v: u32) {
    let width = hi - lo + 1;
    let mask = if width == 32 {
        u32::MAX
    } else {
        (1 << width) - 1
    };
    let w = &mut q[(lo / 32) as usize];
    *w = (*w & !(mask << (lo % 32))) | ((v & mask) << (lo % 32));
}

#[test]
fn qmd_releases_of_both_versions() {
    use compute::{host_reduction, qmd_major_version, qmd_releases};
    // Version 03_00: RELEASE0 a four-word release, RELEASE1 off, RELEASE2
    // a 64-bit INC reduction (clcbc0qmd.h).
    let mut q = [0u32; 96];
    set_mw(&mut q, 583, 580, 3);
    set_mw(&mut q, 799, 768, 0x1000);
    set_mw(&mut q, 807, 800, 0x12);
    set_mw(&mut q, 823, 823, 1);
    set_mw(&mut q, 863, 832, 0xabcd);
    set_mw(&mut q, 895, 864, 0x77);
    set_mw(&mut q, 927, 896, 0x2000);
    set_mw(&mut q, 1695, 1664, 0x3000);
    set_mw(&mut q, 1719, 1719, 1);
    set_mw(&mut q, 1718, 1716, 3);
    set_mw(&mut q, 1722, 1722, 1);
    set_mw(&mut q, 1725, 1725, 1);
    set_mw(&mut q, 1727, 1726, 1);
    set_mw(&mut q, 1759, 1728, 5);
    set_mw(&mut q, 1791, 1760, 1);
    assert_eq!(qmd_major_version(&q), 3);
    let r = qmd_releases(&q);
    assert_eq!(
        r[0],
        Some(Semaphore {
            addr: 0x12_0000_1000,
            payload: 0xabcd,
            op: SemOp::Release,
            wide: false,
            timestamp: true,
        })
    );
    assert_eq!(r[1], None);
    assert_eq!(
        r[2],
        Some(Semaphore {
            addr: 0x3000,
            payload: 0x1_0000_0005,
            op: SemOp::Reduction(6),
            wide: true,
            timestamp: false,
        })
    );
    // Version 04_00: only RELEASE_SEMAPHORE1, two words (64 bits).
    let mut q = [0u32; 96];
    set_mw(&mut q, 583, 580, 4);
    set_mw(&mut q, 336, 336, 1);
    set_mw(&mut q, 338, 337, 2);
    set_mw(&mut q, 799, 768, 0x4000);
    set_mw(&mut q, 824, 800, 0x1_0000);
    set_mw(&mut q, 863, 832, 9);
    set_mw(&mut q, 895, 864, 2);
    let r = qmd_releases(&q);
    assert_eq!((r[0], r[2]), (None, None));
    assert_eq!(
        r[1],
        Some(Semaphore {
            addr: 0x1_0000_0000_4000,
            payload: 0x2_0000_0009,
            op: SemOp::Release,
            wide: true,
            timestamp: false,
        })
    );
    // Another version releases nothing, whatever its bits say.
    set_mw(&mut q, 583, 580, 5);
    assert_eq!(qmd_releases(&q), [None; 3]);
    // Every compute reduction maps to the host's operation of that name.
    let names = [5, 0, 1, 6, 7, 3, 4, 2];
    for (op, host) in names.into_iter().enumerate() {
        assert_eq!(host_reduction(op as u32), host);
    }
}

#[test]
fn qmd_grid_sizes_of_both_versions() {
    use compute::qmd_ctas;
    // Version 03_00: a 7 x 3 x 2 grid (clcbc0qmd.h, CTA_RASTER_*).
    let mut q = [0u32; 96];
    set_mw(&mut q, 583, 580, 3);
    set_mw(&mut q, 415, 384, 7);
    set_mw(&mut q, 431, 416, 3);
    set_mw(&mut q, 463, 448, 2);
    assert_eq!(qmd_ctas(&q), 42);
    // The widest grid does not overflow.
    set_mw(&mut q, 415, 384, u32::MAX);
    set_mw(&mut q, 431, 416, 0xffff);
    set_mw(&mut q, 463, 448, 0xffff);
    assert_eq!(qmd_ctas(&q), u64::from(u32::MAX) * 0xffff * 0xffff);
    // Version 04_00: 1000 x 1 x 1 (GRID_*); its 03_00 fields are unused.
    let mut q = [0u32; 96];
    set_mw(&mut q, 583, 580, 4);
    set_mw(&mut q, 1055, 1024, 1000);
    set_mw(&mut q, 1071, 1056, 1);
    set_mw(&mut q, 1103, 1088, 1);
    set_mw(&mut q, 415, 384, 5);
    assert_eq!(qmd_ctas(&q), 1000);
    // Another version: no grid the double knows.
    set_mw(&mut q, 583, 580, 2);
    assert_eq!(qmd_ctas(&q), 0);
}
