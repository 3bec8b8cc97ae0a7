// SPDX-License-Identifier: GPL-2.0

//! Rows of the escapes and the RM parameter blocks.

use crate::*;

/// The escapes of release `rel` (its rows: an escape it lacks has none),
/// with its size checks, and the `nv-ioctl.h` blocks they share.
pub(crate) fn escapes(t: &mut Table, rel: &release::Release) {
    for r in rel.escapes {
        let e = r.escape;
        let name = escape_c_name(e);
        t.konst(name, r.nr.into(), &format!("Escape::{e:?}.nr"));
        let types = escape_c_params(e);
        let sizes: Vec<usize> = match r.size {
            SizeRule::Exact(n) => vec![n],
            SizeRule::OneOf(a, b) => vec![a, b],
            SizeRule::Records(n) => vec![n],
            SizeRule::Any => vec![],
        };
        assert_eq!(types.len(), sizes.len(), "{e:?}: one C type per size");
        for (ty, n) in types.iter().zip(sizes) {
            t.konst(
                &format!("sizeof({ty})"),
                n as u64,
                &format!("Escape::{e:?}.size_rule"),
            );
        }
    }
    // An escape vgpu knows but the release's table lacks must be one the
    // release's headers lack too: a release that has it (and whose driver
    // handles it) would see vgpu refuse what the driver answers.
    for &e in Escape::ALL {
        if !rel.escapes.iter().any(|r| r.escape == e) {
            t.not_in_release(
                escape_c_name(e),
                &format!("Escape::{e:?}"),
                "the release's table has no row for it",
            );
        }
    }
    for r in rel.escapes {
        let e = r.escape;
        let (ty, field) = match e {
            Escape::RegisterFd => ("nv_ioctl_register_fd_t", "ctl_fd"),
            Escape::RmMapMemory => ("nv_ioctl_nvos33_parameters_with_fd", "fd"),
            Escape::RmAllocMemory => ("nv_ioctl_nvos02_parameters_with_fd", "fd"),
            _ => {
                assert_eq!(r.fd_at, None, "{e:?}: an fd the table does not know");
                continue;
            }
        };
        let off = r.fd_at.unwrap_or_else(|| panic!("{e:?} names no fd"));
        t.konst(
            &format!("offsetof({ty}, {field})"),
            off as u64,
            &format!("Escape::{e:?}.embedded_fd"),
        );
    }
    t.konst(
        "sizeof(nv_ioctl_card_info_t)",
        ioctl::CARD_INFO_SIZE as u64,
        "ioctl::CARD_INFO_SIZE",
    );
    t.konst(
        "NV_IOCTL_MAGIC",
        ioctl::NV_IOCTL_MAGIC.into(),
        "ioctl::NV_IOCTL_MAGIC",
    );
    t.konst(
        "sizeof(nv_ioctl_xfer_t)",
        ioctl::Xfer::SIZE as u64,
        "ioctl::Xfer::SIZE",
    );
    // Where `Xfer::from_bytes` reads each field: decode bytes that hold
    // their own offsets, and each field's low byte is its offset.
    let mut probe = [0u8; ioctl::Xfer::SIZE];
    for (i, b) in probe.iter_mut().enumerate() {
        *b = i as u8;
    }
    let x = ioctl::Xfer::from_bytes(&probe);
    t.konst(
        "offsetof(nv_ioctl_xfer_t, cmd)",
        (x.cmd & 0xff).into(),
        "ioctl::Xfer.cmd",
    );
    t.konst(
        "offsetof(nv_ioctl_xfer_t, size)",
        (x.size & 0xff).into(),
        "ioctl::Xfer.size",
    );
    t.konst(
        "offsetof(nv_ioctl_xfer_t, ptr)",
        x.ptr & 0xff,
        "ioctl::Xfer.ptr",
    );
}

/// The RM parameter blocks, and the `nv-ioctl.h` blocks of the escapes
/// release `rel` has (an escape it lacks has no block to check).
pub(crate) fn rm_blocks(t: &mut Table, rel: &release::Release) {
    layout!(t, abi::Nvos00, CStruct::camel("NVOS00_PARAMETERS"));
    layout!(t, abi::Nvos02, CStruct::camel("NVOS02_PARAMETERS"));
    layout!(
        t,
        abi::Nvos02WithFd,
        CStruct::snake("nv_ioctl_nvos02_parameters_with_fd")
    );
    layout!(t, abi::Nvos21, CStruct::camel("NVOS21_PARAMETERS"));
    layout!(t, abi::Nvos64, CStruct::camel("NVOS64_PARAMETERS"));
    layout!(t, abi::Nvos54, CStruct::camel("NVOS54_PARAMETERS"));
    layout!(t, abi::Nvos55, CStruct::camel("NVOS55_PARAMETERS"));
    layout!(
        t,
        abi::RsSharePolicy,
        CStruct::camel("RS_SHARE_POLICY").renamed(&[("share_type", "type")])
    );
    layout!(t, abi::Nvos57, CStruct::camel("NVOS57_PARAMETERS"));
    layout!(
        t,
        abi::Nvos32,
        CStruct::camel("NVOS32_PARAMETERS").renamed(&[("h_va_space", "hVASpace")])
    );
    const HEAP_RENAMES: &[(&str, &str)] = &[("surface_type", "type")];
    layout!(
        t,
        abi::Nvos32AllocSize,
        CStruct::camel("NVOS32_PARAMETERS")
            .within("data.AllocSize")
            .renamed(HEAP_RENAMES)
    );
    layout!(
        t,
        abi::Nvos32AllocSizeRange,
        CStruct::camel("NVOS32_PARAMETERS")
            .within("data.AllocSizeRange")
            .renamed(HEAP_RENAMES)
    );
    layout!(
        t,
        abi::Nvos32AllocTiledPitchHeight,
        CStruct::camel("NVOS32_PARAMETERS")
            .within("data.AllocTiledPitchHeight")
            .renamed(HEAP_RENAMES)
    );
    layout!(
        t,
        abi::Nvos32Free,
        CStruct::camel("NVOS32_PARAMETERS").within("data.Free")
    );
    layout!(
        t,
        abi::Nvos32Info,
        CStruct::camel("NVOS32_PARAMETERS").within("data.Info")
    );
    t.konst(
        "offsetof(NVOS32_PARAMETERS, data)",
        abi::NVOS32_DATA_OFFSET as u64,
        "abi::NVOS32_DATA_OFFSET",
    );
    layout!(t, abi::Nvos33, CStruct::camel("NVOS33_PARAMETERS"));
    layout!(
        t,
        abi::Nvos33WithFd,
        CStruct::snake("nv_ioctl_nvos33_parameters_with_fd")
    );
    layout!(t, abi::Nvos34, CStruct::camel("NVOS34_PARAMETERS"));
    let has = |e: Escape| rel.escape_row(e.nr()).is_some();
    if has(Escape::CardInfo) {
        layout!(t, abi::PciInfo, CStruct::snake("nv_pci_info_t"));
        layout!(t, abi::CardInfo, CStruct::snake("nv_ioctl_card_info_t"));
    }
    if has(Escape::CheckVersionStr) {
        layout!(
            t,
            abi::RmApiVersion,
            CStruct::camel("nv_ioctl_rm_api_version_t")
        );
    }
    if has(Escape::RegisterFd) {
        layout!(t, abi::RegisterFd, CStruct::snake("nv_ioctl_register_fd_t"));
    }
    if has(Escape::AllocOsEvent) {
        layout!(
            t,
            abi::OsEvent,
            CStruct::camel("nv_ioctl_alloc_os_event_t").renamed(&[("status", "Status")])
        );
    }
    if has(Escape::SysParams) {
        layout!(t, abi::SysParams, CStruct::snake("nv_ioctl_sys_params_t"));
    }
    if has(Escape::WaitOpenComplete) {
        layout!(
            t,
            abi::WaitOpenComplete,
            CStruct::camel("nv_ioctl_wait_open_complete_t")
        );
    }
}
