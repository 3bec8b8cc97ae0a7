// SPDX-License-Identifier: GPL-2.0

//! Host tests of the ioctl decoder (src/nv/ioctl.rs).

use vgpu_logic::nv::ioctl::*;

#[test]
fn iowr_matches_the_c_macro() {
    // _IOWR('F', 0x2b, 48) as computed by the C macro: dir=3, size=48, type='F', nr=0x2b.
    assert_eq!(nv_iowr(0x2b, 48), 0xc030_462b);
    // _IOWR('F', 0xd2, 72): CHECK_VERSION_STR.
    assert_eq!(nv_iowr(0xd2, 72), 0xc048_46d2);
    let cmd = nv_iowr(0xc8, 72 * 3);
    assert_eq!(ioc_nr(cmd), 0xc8);
    assert_eq!(ioc_type(cmd), b'F');
    assert_eq!(ioc_size(cmd), 216);
}

#[test]
fn every_escape_round_trips_by_nr() {
    for &e in Escape::ALL {
        assert_eq!(Escape::from_nr(e.nr()), Some(e), "{e:?}");
    }
    // The table is sorted and has no duplicates.
    for w in Escape::ALL.windows(2) {
        assert!(w[0].nr() < w[1].nr(), "{:?} before {:?}", w[0], w[1]);
    }
}

#[test]
fn rm_alloc_accepts_both_layouts_only() {
    assert_eq!(
        decode(nv_iowr(0x2b, 32)),
        Ok(Command {
            escape: Escape::RmAlloc,
            size: 32
        })
    );
    assert_eq!(
        decode(nv_iowr(0x2b, 48)),
        Ok(Command {
            escape: Escape::RmAlloc,
            size: 48
        })
    );
    assert_eq!(
        decode(nv_iowr(0x2b, 40)),
        Err(DecodeError::BadSize {
            escape: Escape::RmAlloc,
            size: 40
        })
    );
}

#[test]
fn driver_ignores_type_and_direction() {
    // Same nr and size, wrong magic and no direction bits: the driver still accepts it.
    let cmd = 0x2a | (b'X' as u32) << 8 | (32 << 16);
    assert_eq!(decode(cmd).map(|c| c.escape), Ok(Escape::RmControl));
}

#[test]
fn unknown_nr_and_wrong_sizes_are_refused() {
    assert_eq!(
        decode(nv_iowr(0x01, 8)),
        Err(DecodeError::UnknownEscape(0x01))
    );
    assert!(matches!(
        decode(nv_iowr(0x2a, 31)),
        Err(DecodeError::BadSize {
            escape: Escape::RmControl,
            size: 31
        })
    ));
    // CARD_INFO takes whole records only, at least one.
    assert!(decode(nv_iowr(0xc8, 0)).is_err());
    assert!(decode(nv_iowr(0xc8, 71)).is_err());
    assert!(decode(nv_iowr(0xc8, 72 * 32)).is_ok());
    // ATTACH_GPUS_TO_FD takes whole u32s.
    assert!(decode(nv_iowr(0xd4, 6)).is_err());
    assert!(decode(nv_iowr(0xd4, 8)).is_ok());
}

#[test]
fn sizes_of_fixed_escapes_match_the_abi_facts() {
    let expect: &[(u8, usize)] = &[
        (0x27, 56),
        (0x29, 16),
        (0x2a, 32),
        (0x34, 28),
        (0x35, 24),
        (0x4a, 184),
        (0x4e, 56),
        (0x4f, 32),
        (0x57, 64),
        (0x58, 48),
        (0x5e, 40),
        (0xc9, 4),
        (0xce, 16),
        (0xcf, 16),
        (0xd2, 72),
        (0xd3, 16),
        (0xd6, 8),
        (0xda, 8),
    ];
    for &(nr, size) in expect {
        let e = Escape::from_nr(nr).unwrap();
        assert_eq!(e.size_rule(), SizeRule::Exact(size), "{e:?}");
        assert!(decode(nv_iowr(nr, size)).is_ok());
        assert!(decode(nv_iowr(nr, size + 8)).is_err());
    }
}

fn xfer_bytes(cmd: u32, size: u32, ptr: u64) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[0..4].copy_from_slice(&cmd.to_ne_bytes());
    b[4..8].copy_from_slice(&size.to_ne_bytes());
    b[8..16].copy_from_slice(&ptr.to_ne_bytes());
    b
}

#[test]
fn xfer_unwraps_to_the_inner_command() {
    let x = Xfer::from_bytes(&xfer_bytes(0x2b, 48, 0x7fff_0000_1000));
    assert_eq!(x.ptr, 0x7fff_0000_1000);
    assert_eq!(
        x.inner(),
        Ok(Command {
            escape: Escape::RmAlloc,
            size: 48
        })
    );
    // CARD_INFO for more GPUs than the 14-bit size field can describe.
    let x = Xfer::from_bytes(&xfer_bytes(0xc8, 72 * 200, 0));
    assert_eq!(
        x.inner(),
        Ok(Command {
            escape: Escape::CardInfo,
            size: 14400
        })
    );
}

#[test]
fn xfer_refuses_nesting_oversize_and_unknown() {
    let nested = Xfer::from_bytes(&xfer_bytes(0xd3, 16, 0));
    assert_eq!(nested.inner(), Err(DecodeError::NestedXfer));
    let big = Xfer::from_bytes(&xfer_bytes(0xc8, (XFER_MAX_SIZE + 72) as u32, 0));
    assert!(matches!(big.inner(), Err(DecodeError::BadSize { .. })));
    let unknown = Xfer::from_bytes(&xfer_bytes(0x02, 8, 0));
    assert_eq!(unknown.inner(), Err(DecodeError::UnknownEscape(0x02)));
    // The driver takes `cmd` as a bare escape number: a full request word is unknown.
    let word = Xfer::from_bytes(&xfer_bytes(nv_iowr(0x2b, 48), 48, 0));
    assert!(matches!(word.inner(), Err(DecodeError::UnknownEscape(_))));
}

#[test]
fn nodes_are_the_drivers() {
    // REGISTER_FD is served on either node (`escape.c:942-944` at 595.45.04);
    // SYS_PARAMS and CARD_INFO on the ctl node only (`NV_CTL_DEVICE_ONLY`).
    assert_eq!(Escape::RegisterFd.node(), Node::Either);
    assert_eq!(Escape::SysParams.node(), Node::Ctl);
    assert_eq!(Escape::CardInfo.node(), Node::Ctl);
    assert_eq!(Escape::NumaInfo.node(), Node::Gpu);
}
