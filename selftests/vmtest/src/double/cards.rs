// SPDX-License-Identifier: GPL-2.0

//! Nodes and module parameters; the version, card, REGISTER_FD and XFER escapes.

use super::*;

// 1. Nodes and module parameters.

pub(super) fn nodes_are_the_drivers_numbers() -> Outcome {
    fresh()?;
    ensure!(
        rdev("/dev/nvidiactl")? == (195, 255),
        "nvidiactl is {:?}",
        rdev("/dev/nvidiactl")?
    );
    for i in 0..2u32 {
        let p = format!("/dev/nvidia{i}");
        ensure!(rdev(&p)? == (195, i), "{p} is {:?}", rdev(&p)?);
    }
    ensure!(!exists("/dev/nvidia2"), "/dev/nvidia2 exists with gpus=2");
    // N follows the parameter.
    sh("rmmod nvidia")?;
    sh("modprobe nvidia gpus=3")?;
    for i in 0..3u32 {
        let p = format!("/dev/nvidia{i}");
        ensure!(rdev(&p)? == (195, i), "gpus=3: {p} is {:?}", rdev(&p)?);
    }
    ensure!(!exists("/dev/nvidia3"), "/dev/nvidia3 exists with gpus=3");
    sh("rmmod nvidia")?;
    let path = sh("modinfo -F filename nvidia")?;
    let r = crate::sys::finit_module(path.trim(), "gpus=9");
    ensure!(
        r == Err(libc::EINVAL),
        "gpus=9 (at most 8): {r:?}, want EINVAL"
    );
    ensure!(!module_loaded("nvidia"), "loaded after a refused load");
    Ok(())
}

pub(super) fn vram_sizes_from_module_params() -> Outcome {
    fresh()?;
    for gi in 0..2u32 {
        let s = session(gi)?;
        let g = gi as usize;
        for (idx, want) in [
            (fb_info::RAM_SIZE, VRAM[g]),
            (fb_info::TOTAL_RAM_SIZE, VRAM[g]),
            (fb_info::HEAP_SIZE, HEAP[g]),
            (fb_info::HEAP_FREE, HEAP[g]),
        ] {
            let got = s.fb(idx)?;
            ensure!(
                got == want,
                "GPU {gi} FB index {idx:#x}: {got} bytes, want {want}"
            );
        }
    }
    // Another size through the parameter.
    sh("rmmod nvidia")?;
    sh("modprobe nvidia gpus=2 vram1_mib=1024")?;
    let s = session(1)?;
    let ram = s.fb(fb_info::RAM_SIZE)?;
    ensure!(ram == 1024 * MIB, "vram1_mib=1024: RAM_SIZE {ram}");
    Ok(())
}

// 2. Version, cards, REGISTER_FD, XFER.

pub(super) fn check_version_str() -> Outcome {
    fresh()?;
    let ctl = Ctl::open_default().ctx("open")?;
    // Relative to the release the double claims (595.45.04 by default).
    let claimed = crate::sys::claimed_release();
    let major: u32 = claimed
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .ok_or("claimed release without a major")?;
    let prefix = &claimed[..claimed.rfind('.').ok_or("claimed release without a dot")?];
    let r = ctl
        .check_version(VersionCheck::Strict, &claimed)
        .ctx("strict, same version")?;
    ensure!(r.reply == 1, "strict reply {}", r.reply);
    want_os(
        ctl.check_version(VersionCheck::Strict, &format!("{major}.0.1")),
        libc::EINVAL,
        "strict, other minor",
    )?;
    want_os(
        ctl.check_version(VersionCheck::Strict, prefix),
        libc::EINVAL,
        "strict, prefix",
    )?;
    let r = ctl
        .check_version(VersionCheck::Relaxed, &format!("{major}.99.99"))
        .ctx("relaxed, same major")?;
    ensure!(r.reply == 1, "relaxed reply {}", r.reply);
    want_os(
        ctl.check_version(VersionCheck::Relaxed, &format!("{}.45.04", major + 1)),
        libc::EINVAL,
        "relaxed, other major",
    )?;
    let v = ctl.driver_version().ctx("query")?;
    ensure!(v == claimed, "query returned {v:?}");
    Ok(())
}

pub(super) fn card_info() -> Outcome {
    fresh()?;
    let ctl = Ctl::open_default().ctx("open")?;
    let cards = ctl.card_info(2).ctx("CARD_INFO x2")?;
    ensure!(cards.len() == 2, "{} records for 2 GPUs", cards.len());
    for (i, c) in cards.iter().enumerate() {
        ensure!(
            c.minor_number == i as u32,
            "card {i}: minor {}",
            c.minor_number
        );
        ensure!(
            c.gpu_id == ((i as u32) + 1) << 8,
            "card {i}: gpu_id {:#x}",
            c.gpu_id
        );
        ensure!(
            c.pci_info.vendor_id == 0x10de,
            "card {i}: vendor {:#x}",
            c.pci_info.vendor_id
        );
    }
    let more = ctl.card_info(8).ctx("CARD_INFO x8")?;
    ensure!(more == cards, "room for 8 gives {more:?}");
    want_os(ctl.card_info(1), libc::EINVAL, "CARD_INFO with room for 1")?;
    // Only the ctl node answers it.
    let gpu = Gpu::open_index(0).ctx("open GPU")?;
    let mut b = vec![0u8; 2 * abi::CardInfo::SIZE];
    want_os(
        gpu.ioctl(Escape::CardInfo.nr(), &mut b),
        libc::EINVAL,
        "CARD_INFO on a GPU node",
    )?;
    Ok(())
}

/// The lines of `/proc/driver/nvidia/gpus/<bus location>/information`, in
/// order: each key with the whitespace `nv_procfs_read_gpu_info` prints
/// after it (`kernel-open/nvidia/nv-procfs.c`, 595.45.04).
pub(super) const INFORMATION_KEYS: [&str; 11] = [
    "Model: \t\t ",
    "IRQ:   \t\t ",
    "GPU UUID: \t ",
    "Video BIOS: \t ",
    "Bus Type: \t ",
    "DMA Size: \t ",
    "DMA Mask: \t ",
    "Bus Location: \t ",
    "Device Minor: \t ",
    "GPU Firmware: \t ",
    "GPU Excluded:\t ",
];

/// The directories under `/proc/driver/nvidia/gpus`, sorted.
pub(super) fn proc_gpu_dirs() -> Result<Vec<String>, String> {
    let mut dirs = std::fs::read_dir("/proc/driver/nvidia/gpus")
        .ctx("read /proc/driver/nvidia/gpus")?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<Result<Vec<_>, _>>()
        .ctx("read /proc/driver/nvidia/gpus")?;
    dirs.sort();
    Ok(dirs)
}

/// Each GPU's `information` file: one directory per GPU, named by the PCI
/// location CARD_INFO reports; its lines in the real driver's format, the
/// minor that of an existing `/dev/nvidiaK`, the UUID what GET_GID_INFO
/// answers in text form on that GPU; gone with the module.
pub(super) fn procfs_gpu_information() -> Outcome {
    fresh()?;
    let ctl = Ctl::open_default().ctx("open")?;
    let cards = ctl.card_info(2).ctx("CARD_INFO")?;
    drop(ctl);
    let dirs = proc_gpu_dirs()?;
    ensure!(dirs.len() == 2, "gpus/ holds {dirs:?} with gpus=2");
    let mut uuids = Vec::new();
    for c in &cards {
        let p = c.pci_info;
        let loc = format!(
            "{:04x}:{:02x}:{:02x}.{:x}",
            p.domain, p.bus, p.slot, p.function
        );
        ensure!(
            dirs.contains(&loc),
            "no gpus/{loc} (CARD_INFO's) in {dirs:?}"
        );
        let path = format!("/proc/driver/nvidia/gpus/{loc}/information");
        let text = read_file(&path)?;
        let lines: Vec<&str> = text.lines().collect();
        ensure!(
            lines.len() == INFORMATION_KEYS.len(),
            "{path}: {} lines, want {}: {text:?}",
            lines.len(),
            INFORMATION_KEYS.len()
        );
        let mut value = std::collections::HashMap::new();
        for (line, key) in lines.iter().zip(INFORMATION_KEYS) {
            let v = line
                .strip_prefix(key)
                .ok_or_else(|| format!("{path}: line {line:?}, want it to start {key:?}"))?;
            value.insert(key.split(':').next().unwrap_or(key), v);
        }
        let model = value.get("Model").copied().unwrap_or("");
        ensure!(!model.is_empty(), "{path}: an empty Model");
        ensure!(
            value.get("Bus Location") == Some(&loc.as_str()),
            "{path}: Bus Location {:?}, want {loc}",
            value.get("Bus Location")
        );
        let minor: u32 = value
            .get("Device Minor")
            .and_then(|m| m.parse().ok())
            .ok_or_else(|| format!("{path}: Device Minor {:?}", value.get("Device Minor")))?;
        ensure!(
            minor == c.minor_number,
            "{path}: Device Minor {minor}, CARD_INFO minor {}",
            c.minor_number
        );
        let node = format!("/dev/nvidia{minor}");
        ensure!(rdev(&node)? == (195, minor), "{node} is {:?}", rdev(&node)?);
        let s = session(minor)?;
        let want = s.ctl.gpu_uuid_text(s.client, s.sub).ctx("GID text")?;
        ensure!(
            value.get("GPU UUID") == Some(&want.as_str()),
            "{path}: GPU UUID {:?}, GET_GID_INFO {want:?}",
            value.get("GPU UUID")
        );
        ensure!(!uuids.contains(&want), "{path} repeats UUID {want}");
        uuids.push(want);
        for (k, want) in [
            ("IRQ", "0"),
            ("Bus Type", "PCIe"),
            ("DMA Size", "47 bits"),
            ("DMA Mask", "0x7fffffffffff"),
            ("GPU Excluded", "No"),
        ] {
            ensure!(
                value.get(k) == Some(&want),
                "{path}: {k} {:?}, want {want:?}",
                value.get(k)
            );
        }
        let fw = crate::sys::claimed_release();
        ensure!(
            value.get("GPU Firmware") == Some(&fw.as_str()),
            "{path}: GPU Firmware {:?}, want {fw:?}",
            value.get("GPU Firmware")
        );
    }
    // One directory per GPU the parameter asks for, and none left behind.
    sh("rmmod nvidia")?;
    ensure!(
        !exists("/proc/driver/nvidia"),
        "/proc/driver/nvidia left behind"
    );
    sh("modprobe nvidia gpus=3")?;
    let dirs = proc_gpu_dirs()?;
    ensure!(
        dirs == ["0000:01:00.0", "0000:02:00.0", "0000:03:00.0"],
        "gpus=3: gpus/ holds {dirs:?}"
    );
    Ok(())
}

pub(super) fn register_fd() -> Outcome {
    fresh()?;
    let ctl = Ctl::open_default().ctx("open ctl")?;
    let gpu = Gpu::open_index(0).ctx("open GPU")?;
    gpu.register_fd(&ctl).ctx("first REGISTER_FD")?;
    want_os(gpu.register_fd(&ctl), libc::EINVAL, "second REGISTER_FD")?;
    // The named fd must be a ctl file of the driver.
    let gpu2 = Gpu::open_index(0).ctx("open GPU")?;
    let other = Gpu::open_index(1).ctx("open GPU 1")?;
    let null = Node::open("/dev/null").ctx("open /dev/null")?;
    for (fd, what) in [
        (other.fd(), "a GPU fd"),
        (null.fd(), "/dev/null"),
        (-1, "fd -1"),
    ] {
        let mut p = abi::RegisterFd { ctl_fd: fd };
        want_os(
            gpu2.ioctl_with(Escape::RegisterFd.nr(), &mut p),
            libc::EINVAL,
            &format!("REGISTER_FD naming {what}"),
        )?;
    }
    // gpu2 can still register after the refusals.
    let ctl2 = Ctl::open_default().ctx("open ctl")?;
    gpu2.register_fd(&ctl2).ctx("REGISTER_FD after refusals")?;
    // A ctl file takes it too (`escape.c:942-944` at 595.45.04), and then
    // acts for the file it names: its clients are that file's. Not to
    // itself, and not to a file that is registered in turn
    // (`escape.c:958-966`).
    let ctl3 = Ctl::open_default().ctx("open ctl 3")?;
    let mut p = abi::RegisterFd { ctl_fd: ctl3.fd() };
    want_os(
        ctl3.ioctl_with(Escape::RegisterFd.nr(), &mut p),
        libc::EINVAL,
        "REGISTER_FD of a ctl file to itself",
    )?;
    let mut p = abi::RegisterFd { ctl_fd: ctl2.fd() };
    ctl3.ioctl_with(Escape::RegisterFd.nr(), &mut p)
        .ctx("REGISTER_FD on a ctl node")?;
    let mut p = abi::RegisterFd { ctl_fd: ctl3.fd() };
    want_os(
        ctl.ioctl_with(Escape::RegisterFd.nr(), &mut p),
        libc::EINVAL,
        "REGISTER_FD naming a registered ctl file",
    )?;
    let c2 = ctl2.alloc_root_client().ctx("client on ctl2")?;
    let d2 = ctl3
        .alloc_device(c2, 0, 0)
        .ctx("ctl2's client through ctl3")?;
    let c3 = ctl3.alloc_root_client().ctx("client through ctl3")?;
    ctl2.alloc_device(c3, 0, 0)
        .ctx("ctl3's client through ctl2")?;
    want_rm(
        ctl.alloc_device(c2, 0, 0),
        NV_ERR_INVALID_CLIENT,
        "ctl2's client through an unrelated ctl file",
    )?;
    // Its clients are ctl2's: closing ctl3 leaves them, closing ctl2
    // frees them.
    drop(ctl3);
    ctl2.free(c2, c2, d2)
        .ctx("free ctl2's device after ctl3 closed")?;
    ctl2.free(c3, c3, c3)
        .ctx("client made through ctl3 after it closed")?;
    Ok(())
}

pub(super) fn xfer_matches_direct() -> Outcome {
    fresh()?;
    let s = session(0)?;
    // CARD_INFO: byte for byte.
    let mut direct = vec![0u8; 4 * abi::CardInfo::SIZE];
    let mut xfer = direct.clone();
    s.ctl
        .ioctl_direct(Escape::CardInfo.nr(), &mut direct)
        .ctx("CARD_INFO direct")?;
    s.ctl
        .ioctl_xfer(Escape::CardInfo.nr(), &mut xfer)
        .ctx("CARD_INFO xfer")?;
    ensure!(direct == xfer, "CARD_INFO differs through XFER");
    let mut small = vec![0u8; abi::CardInfo::SIZE];
    want_os(
        s.ctl.ioctl_xfer(Escape::CardInfo.nr(), &mut small),
        libc::EINVAL,
        "CARD_INFO x1 through XFER",
    )?;
    // RM_ALLOC of VRAM: same status, same size written back, same charge.
    let mut out = Vec::new();
    for via_xfer in [false, true] {
        let before = s.heap_free()?;
        let mut params = nvclient::vram_params(s.client, MIB + 1).to_bytes();
        let a = abi::Nvos64 {
            h_root: s.client,
            h_object_parent: s.device,
            h_class: class::NV01_MEMORY_LOCAL_USER,
            p_alloc_parms: params.as_mut_ptr() as u64,
            params_size: params.len() as u32,
            ..Default::default()
        };
        let mut b = a.to_bytes();
        let r = if via_xfer {
            s.ctl.ioctl_xfer(Escape::RmAlloc.nr(), &mut b)
        } else {
            s.ctl.ioctl_direct(Escape::RmAlloc.nr(), &mut b)
        };
        r.ctx("RM_ALLOC")?;
        let a = abi::Nvos64::decode(&b);
        let p = abi::MemoryAllocationParams::decode(&params);
        let charged = before - s.heap_free()?;
        ensure!(a.h_object_new != 0, "xfer={via_xfer}: no handle");
        out.push((a.status, p.size, charged));
        // A refused alloc too: unknown class.
        let bad = abi::Nvos64 {
            h_root: s.client,
            h_object_parent: s.device,
            h_class: 0xdead,
            ..Default::default()
        };
        let mut b = bad.to_bytes();
        if via_xfer {
            s.ctl.ioctl_xfer(Escape::RmAlloc.nr(), &mut b)
        } else {
            s.ctl.ioctl_direct(Escape::RmAlloc.nr(), &mut b)
        }
        .ctx("RM_ALLOC bad class")?;
        out.push((abi::Nvos64::decode(&b).status, 0, 0));
    }
    let want_size = MIB + (64 << 10);
    ensure!(
        out[0] == (NV_OK, want_size, want_size) && out[1] == (NV_ERR_INVALID_CLASS, 0, 0),
        "direct gave {:?} / {:?}",
        out[0],
        out[1]
    );
    ensure!(
        out[0] == out[2] && out[1] == out[3],
        "direct {out:?} differs from XFER"
    );
    Ok(())
}
