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
