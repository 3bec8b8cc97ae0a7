// SPDX-License-Identifier: GPL-2.0

//! The escapes that are not RM object calls: the version check, card info,
//! file registration, system parameters, NUMA info, and those the double
//! accepts without a model.

use kernel::{prelude::*, sync::ArcBorrow};

use super::state::{Driver, BAR1_SIZE};
use crate::base::{gpu_id_of, parse, store};
use crate::file::{self, Kind, NvFile};
use crate::kapi::fdtable;
use crate::nv::abi::{self, version};
use crate::settings::release;

/// The PCI device id the fake GPUs report (an H100 SXM5).
const PCI_DEVICE_ID: u16 = 0x2330;

impl Driver {
    /// CHECK_VERSION_STR: the version the caller was built for against the claimed one.
    pub(crate) fn check_version(&self, _f: &ArcBorrow<'_, NvFile>, p: &mut [u8]) -> Result {
        let mut v: abi::RmApiVersion = parse(p)?;
        v.reply = version::REPLY_RECOGNIZED;
        let ours = release().as_bytes();
        let theirs = {
            let s = &v.version_string;
            let n = s.iter().position(|&b| b == 0).unwrap_or(s.len());
            &s[..n]
        };
        let ok = match v.cmd {
            version::CMD_QUERY => {
                v.version_string = [0; version::STRING_LENGTH];
                v.version_string[..ours.len()].copy_from_slice(ours);
                true
            }
            version::CMD_RELAXED => {
                let major = |s: &[u8]| s.iter().position(|&b| b == b'.').map_or(s.len(), |i| i);
                ours[..major(ours)] == theirs[..major(theirs)]
            }
            _ => theirs == ours,
        };
        store(&v, p);
        if ok {
            Ok(())
        } else {
            Err(EINVAL)
        }
    }

    /// CARD_INFO, on the ctl node: one entry per fake GPU.
    pub(crate) fn card_info(&self, f: &ArcBorrow<'_, NvFile>, p: &mut [u8]) -> Result {
        if f.kind != Kind::Ctl {
            return Err(EINVAL);
        }
        let n = p.len() / crate::nv::ioctl::CARD_INFO_SIZE;
        if n < self.gpus.len() {
            return Err(EINVAL);
        }
        p.fill(0);
        for (i, g) in self.gpus.iter().enumerate() {
            let mut ci = abi::CardInfo {
                valid: 1,
                gpu_id: gpu_id_of(i as u32),
                interrupt_line: 0,
                reg_address: 0xf000_0000 + ((i as u64) << 24),
                reg_size: 16 << 20,
                fb_address: 0x38_0000_0000 + ((i as u64) << 36),
                fb_size: BAR1_SIZE.min(g.vram),
                minor_number: i as u32,
                ..Default::default()
            };
            let at = crate::procfs::pci_location(i as u32);
            ci.pci_info.domain = at.domain;
            ci.pci_info.bus = at.bus;
            ci.pci_info.slot = at.slot;
            ci.pci_info.vendor_id = 0x10de;
            ci.pci_info.device_id = PCI_DEVICE_ID;
            let off = i * abi::CardInfo::SIZE;
            store(&ci, &mut p[off..off + abi::CardInfo::SIZE]);
        }
        Ok(())
    }

    /// REGISTER_FD, as `RmIoctl` serves it at 595.45.04 (`escape.c:915-1004`):
    /// valid on a ctl file as on a GPU file (`escape.c:942-944`); once per
    /// file (`escape.c:932-939`); the fd must be an open ctl file
    /// (`escape.c:946-955`), not the file itself and not a file that is
    /// registered in turn (`escape.c:958-966`). Every refusal is an RM error,
    /// which the ioctl returns as `-EINVAL` (`nv.c:2853-2854`).
    pub(crate) fn register_fd(&self, f: &ArcBorrow<'_, NvFile>, p: &mut [u8]) -> Result {
        let r: abi::RegisterFd = parse(p)?;
        let ctl = fdtable::fget(r.ctl_fd).map_err(|_| EINVAL)?;
        let ctl = file::nv_file(&ctl).ok_or(EINVAL)?;
        if ctl.kind != Kind::Ctl || ctl.id == f.id {
            return Err(EINVAL);
        }
        // The RM lock serialises registrations, as the driver's API lock
        // does: two files cannot register to each other at once. One
        // `registered` lock at a time (RM, then a file's: the usual order).
        let _rm = self.rm.lock();
        if ctl.registered.lock().is_some() {
            return Err(EINVAL);
        }
        let mut reg = f.registered.lock();
        if reg.is_some() {
            return Err(EINVAL);
        }
        *reg = Some(ctl.id);
        Ok(())
    }

    /// NUMA_INFO (`nv.c:2728-2752` at 595.45.04, `nv.c:2241-2283` at
    /// 535.288.01, the same at every supported tag): on a GPU node only
    /// (`NV_ACTUAL_DEVICE_ONLY`, else `EINVAL`). The double's GPUs are PCIe
    /// GPUs without coherent memory, for which RM's FB_GET_NUMA_INFO gives
    /// no node: `nid` -1 (`NV0000_CTRL_NO_NUMA_NODE`), no memory range, no
    /// offline address, the status DISABLED (0) and no auto-online; the
    /// memory block size is what SYS_PARAMS set (`nv_ctl_device`). From 550
    /// on a caller's `numEntries` over 64 is RM's INVALID_ARGUMENT, `EBUSY`
    /// to the caller (`osapi.c:5250-5255` at 595.45.04); 535's `nv.c` sets
    /// it to 64 itself first. The block (`nv-ioctl-numa.h:56-65`): `nid`
    /// at 0, `status` 4, `memblock_size` 8, `numa_mem_addr` 16,
    /// `numa_mem_size` 24, `use_auto_online` 32, the 64 offline addresses
    /// at 40 and their count at 552; 560 bytes.
    pub(crate) fn numa_info(&self, f: &ArcBorrow<'_, NvFile>, p: &mut [u8]) -> Result {
        const MAX_OFFLINE: u32 = 64;
        const COUNT_AT: usize = 552;
        if f.kind == Kind::Ctl || p.len() != 560 {
            return Err(EINVAL);
        }
        let count = u32::from_ne_bytes([
            p[COUNT_AT],
            p[COUNT_AT + 1],
            p[COUNT_AT + 2],
            p[COUNT_AT + 3],
        ]);
        if !release().starts_with("535.") && count > MAX_OFFLINE {
            return Err(EBUSY);
        }
        let memblock = self.rm.lock().memblock_size;
        p.fill(0);
        p[0..4].copy_from_slice(&(-1i32).to_ne_bytes());
        p[8..16].copy_from_slice(&memblock.to_ne_bytes());
        Ok(())
    }

    /// SYS_PARAMS: an input, on the ctl node only (`nv.c:2702-2725` at
    /// 595.45.04): the driver keeps the first memory block size it is
    /// given (0 leaves it unset) and answers a later call with another
    /// value `-EBUSY`; nothing is written back.
    pub(crate) fn sys_params(&self, f: &ArcBorrow<'_, NvFile>, p: &mut [u8]) -> Result {
        if f.kind != Kind::Ctl {
            return Err(EINVAL);
        }
        let want = u64::from_ne_bytes(p.try_into().map_err(|_| EINVAL)?);
        let mut rm = self.rm.lock();
        if rm.memblock_size == 0 {
            rm.memblock_size = want;
            Ok(())
        } else if rm.memblock_size == want {
            Ok(())
        } else {
            Err(EBUSY)
        }
    }

    /// WAIT_OPEN_COMPLETE: the open is complete, with no error.
    pub(crate) fn wait_open_complete(&self, _f: &ArcBorrow<'_, NvFile>, p: &mut [u8]) -> Result {
        p.fill(0);
        Ok(())
    }

    /// An escape the double accepts and answers nothing to
    /// (ATTACH_GPUS_TO_FD, STATUS_CODE).
    pub(crate) fn accept(&self, _f: &ArcBorrow<'_, NvFile>, _p: &mut [u8]) -> Result {
        Ok(())
    }
}
