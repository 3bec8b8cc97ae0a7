// SPDX-License-Identifier: GPL-2.0

//! KUnit tests of the kernel-client interface (`nvidia_get_rm_ops`) that the
//! driver double exports, driven through vgpu's wrapper of it, so that the
//! wrapper and the double are checked against the same contract. The suite
//! runs when the module loads (it depends on `nvidia`, which modprobe loads
//! first).

use kernel::prelude::*;

#[path = "../../src/nv/mod.rs"]
pub mod nv;
#[path = "../../src/kapi/rmops.rs"]
mod rmops;
/// vgpu's fault-injection points, which `rmops.rs` calls: none here (this
/// module tests the driver double's interface, not vgpu's error paths).
mod inject {
    /// Never fails.
    pub(crate) fn driver_call() -> kernel::error::Result {
        Ok(())
    }
}
#[path = "../../src/status.rs"]
mod status;

module! {
    type: KclientTest,
    name: "nvidia_kclient_test",
    authors: ["vgpu developers"],
    description: "KUnit tests of the NVIDIA kernel-client interface",
    license: "GPL",
}

struct KclientTest;

impl kernel::Module for KclientTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        Ok(KclientTest)
    }
}

#[kunit_tests(nvidia_double_kclient)]
mod tests {
    use crate::nv::abi::{self, class, ctrl, fb_info, status::*, surface_info, Wire};
    use crate::rmops::RmOps;
    use crate::status::{status, Fail};
    use kernel::prelude::*;

    fn heap_free_kib(ops: &RmOps, client: u32, subdev: u32) -> Result<u32> {
        let mut q = abi::FbGetInfoV2Params::new(&[fb_info::HEAP_FREE]).to_bytes();
        // The params as the driver's release sizes them (a shorter list
        // before 580).
        let n = crate::nv::release::current()
            .params_size(ctrl::NV2080_CTRL_CMD_FB_GET_INFO_V2)
            .unwrap_or(q.len());
        let q = q.get_mut(..n).ok_or(EINVAL)?;
        let st = status(ops.control(client, subdev, ctrl::NV2080_CTRL_CMD_FB_GET_INFO_V2, q))?;
        if st != NV_OK {
            return Err(EIO);
        }
        abi::FbGetInfoV2Params::decode(q)
            .get(fb_info::HEAP_FREE)
            .ok_or(EIO)
    }

    /// A client with device 0 and its subdevice, allocated at kernel privilege.
    fn client_device(ops: &RmOps) -> Result<(u32, u32, u32)> {
        let client = ops
            .alloc(0, 0, 0, class::NV01_ROOT, &mut [])
            .map_err(|_| EIO)?;
        let mut dp = abi::DeviceAllocParams::default().to_bytes();
        let dev = ops
            .alloc(client, client, 0, class::NV01_DEVICE_0, &mut dp)
            .map_err(|_| EIO)?;
        let mut sp = abi::SubdeviceAllocParams::default().to_bytes();
        let sub = ops
            .alloc(client, dev, 0, class::NV20_SUBDEVICE_0, &mut sp)
            .map_err(|_| EIO)?;
        Ok((client, dev, sub))
    }

    /// 1 MiB of VRAM under `dev`; returns the handle and the params as the
    /// driver left them.
    fn vram_1mib(ops: &RmOps, client: u32, dev: u32) -> Result<(u32, [u8; 128])> {
        let mut mp = abi::MemoryAllocationParams {
            size: 1 << 20,
            ..Default::default()
        }
        .to_bytes();
        let mem = ops
            .alloc(client, dev, 0, class::NV01_MEMORY_LOCAL_USER, &mut mp)
            .map_err(|_| EIO)?;
        Ok((mem, mp))
    }

    #[test]
    fn gets_the_table_for_the_checked_release() -> Result {
        // vgpu names only the release its tables were checked against, and
        // the double (at its default) is that release.
        assert_eq!(crate::nv::RELEASE, "595.45.04");
        let ops = RmOps::get()?;
        let ids = ops.gpu_ids()?;
        assert!(!ids.is_empty());
        Ok(())
    }

    #[test]
    fn kernel_privilege_skips_fd_check_and_accounts_vram() -> Result {
        let ops = RmOps::get()?;
        // No GPU file is open in this context: kernel privilege skips the
        // fd-table check for the device.
        let (client, dev, sub) = client_device(&ops)?;
        let before = heap_free_kib(&ops, client, sub)?;
        let (mem, mp) = vram_1mib(&ops, client, dev)?;
        assert_eq!(abi::MemoryAllocationParams::decode(&mp).size, 1 << 20);
        assert_eq!(heap_free_kib(&ops, client, sub)?, before - 1024);
        // The size, from the driver, through kernel pointers.
        let mut list = abi::InfoEntry {
            index: surface_info::PHYS_SIZE,
            data: 0,
        }
        .to_bytes();
        let mut q = abi::GetSurfaceInfoParams {
            list_size: 1,
            list_ptr: list.as_mut_ptr() as u64,
        }
        .to_bytes();
        let st = status(ops.control(client, mem, ctrl::NV0041_CTRL_CMD_GET_SURFACE_INFO, &mut q))?;
        assert_eq!(st, NV_OK);
        assert_eq!(abi::InfoEntry::decode(&list).data, (1 << 20) / 4096);
        // Freeing the client frees its memory.
        assert_eq!(status(ops.free(client, client, client))?, NV_OK);
        // A free under a client that is gone: RM's client lookup fails
        // (`rs_server.c:1059-1061` at 550.163.01; the real driver's answer).
        assert_eq!(
            status(ops.free(client, client, client))?,
            NV_ERR_INVALID_OBJECT_HANDLE
        );
        Ok(())
    }

    #[test]
    fn gid_info_through_kernel_control() -> Result {
        let ops = RmOps::get()?;
        let (client, _dev, sub) = client_device(&ops)?;
        // The binary UUID (what UVM takes), as vgpu reads it at load.
        let mut q = abi::GidInfoParams {
            flags: abi::GID_FLAGS_FORMAT_BINARY,
            ..Default::default()
        }
        .to_bytes();
        let st = status(ops.control(client, sub, ctrl::NV2080_CTRL_CMD_GPU_GET_GID_INFO, &mut q))?;
        assert_eq!(st, NV_OK);
        let g = abi::GidInfoParams::decode(&q);
        assert_eq!(g.length, 16);
        // The double's scheme: d00b1e5e-0000-4000-8000-0000000000NN, NN = GPU + 1.
        assert_eq!(&g.data[..4], &[0xd0, 0x0b, 0x1e, 0x5e]);
        assert_eq!(g.data[15], 1);
        // The text form.
        let mut q = abi::GidInfoParams::default().to_bytes();
        let st = status(ops.control(client, sub, ctrl::NV2080_CTRL_CMD_GPU_GET_GID_INFO, &mut q))?;
        assert_eq!(st, NV_OK);
        let g = abi::GidInfoParams::decode(&q);
        assert_eq!(g.length, 41);
        assert_eq!(&g.data[..13], b"GPU-d00b1e5e-");
        assert_eq!(status(ops.free(client, client, client))?, NV_OK);
        Ok(())
    }

    #[test]
    fn dup_shares_memory_charged_once() -> Result {
        let ops = RmOps::get()?;
        let (client, dev, sub) = client_device(&ops)?;
        let before = heap_free_kib(&ops, client, sub)?;
        let (mem, _) = vram_1mib(&ops, client, dev)?;
        let copy = ops.dup(client, dev, 0, client, mem).map_err(|_| EIO)?;
        assert!(copy != mem);
        assert_eq!(heap_free_kib(&ops, client, sub)?, before - 1024);
        assert_eq!(status(ops.free(client, dev, mem))?, NV_OK);
        assert_eq!(heap_free_kib(&ops, client, sub)?, before - 1024);
        assert_eq!(status(ops.free(client, dev, copy))?, NV_OK);
        assert_eq!(heap_free_kib(&ops, client, sub)?, before);
        assert_eq!(status(ops.free(client, client, client))?, NV_OK);
        Ok(())
    }

    #[test]
    fn kernel_maps_follow_the_handle() -> Result {
        let ops = RmOps::get()?;
        let (client, dev, _) = client_device(&ops)?;
        let attr = abi::heap::ATTR_LOCATION.set(0, abi::heap::ATTR_LOCATION_PCI);
        let mut mp = abi::MemoryAllocationParams {
            owner: client,
            attr,
            size: 8192,
            ..Default::default()
        }
        .to_bytes();
        let mem = ops
            .alloc(client, dev, 0, class::NV01_MEMORY_SYSTEM, &mut mp)
            .map_err(|_| EIO)?;
        let copy = ops.dup(client, dev, 0, client, mem).map_err(|_| EIO)?;
        let addr = ops.map_memory(client, dev, copy, 0x1000, 0x90);
        let Ok(addr) = addr else {
            return Err(EIO);
        };
        // SAFETY: the driver mapped 0x90 bytes there for this client.
        let word = unsafe { core::ptr::read_volatile((addr + 0x88) as *const u32) };
        assert_eq!(word, 0);
        // Within one page only; a bad handle is refused.
        assert_eq!(
            ops.map_memory(client, dev, copy, 0xff8, 0x90),
            Err(Fail::Rm(NV_ERR_NOT_SUPPORTED))
        );
        assert_eq!(
            ops.map_memory(client, dev, 0xbad, 0, 0x90),
            Err(Fail::Rm(NV_ERR_INVALID_OBJECT_HANDLE))
        );
        // Freeing the original keeps the copy's mapping; unmapping twice fails.
        assert_eq!(status(ops.free(client, dev, mem))?, NV_OK);
        assert_eq!(status(ops.unmap_memory(client, dev, copy, addr))?, NV_OK);
        assert_eq!(
            status(ops.unmap_memory(client, dev, copy, addr))?,
            NV_ERR_INVALID_ARGUMENT
        );
        // Freeing the mapped handle takes its mapping with it.
        let again = ops
            .map_memory(client, dev, copy, 0, 0x90)
            .map_err(|_| EIO)?;
        assert_eq!(status(ops.free(client, dev, copy))?, NV_OK);
        assert_eq!(
            status(ops.unmap_memory(client, dev, copy, again))?,
            NV_ERR_INVALID_ARGUMENT
        );
        assert_eq!(status(ops.free(client, client, client))?, NV_OK);
        Ok(())
    }

    #[test]
    fn an_object_guard_frees_unless_kept() -> Result {
        let ops = RmOps::get()?;
        let (client, dev, sub) = client_device(&ops)?;
        // One subdevice 0 at a time: the helper's goes first.
        assert_eq!(status(ops.free(client, dev, sub))?, NV_OK);
        let mut sp = abi::SubdeviceAllocParams { sub_device_id: 0 }.to_bytes();
        let dropped = ops
            .alloc_object(client, dev, 0, class::NV20_SUBDEVICE_0, &mut [0; 4])
            .map_err(|_| EIO)?;
        let h = dropped.handle();
        drop(dropped);
        // Gone with the guard: a second free finds nothing, which RM
        // (RS_COMPATABILITY_MODE, `rs_server.c:1072-1081` at 550.163.01)
        // answers NV_OK, and subdevice 0 can be allocated again below.
        assert_eq!(status(ops.free(client, dev, h))?, NV_OK);
        let kept = ops
            .alloc_object(client, dev, 0, class::NV20_SUBDEVICE_0, &mut sp)
            .map_err(|_| EIO)?
            .keep();
        // A duplicate's guard frees the duplicate, not the original.
        let (mem, _) = vram_1mib(&ops, client, dev)?;
        let copy = ops
            .dup_object(client, dev, 0, client, mem)
            .map_err(|_| EIO)?;
        let h_copy = copy.handle();
        assert!(h_copy != mem);
        drop(copy);
        // Gone: a second free is RM's NV_OK on nothing (above), and the
        // original is still there to free.
        assert_eq!(status(ops.free(client, dev, h_copy))?, NV_OK);
        assert_eq!(status(ops.free(client, dev, mem))?, NV_OK);
        assert_eq!(status(ops.free(client, dev, kept))?, NV_OK);
        assert_eq!(status(ops.free(client, client, client))?, NV_OK);
        Ok(())
    }

    #[test]
    fn refusals_come_back_as_statuses() -> Result {
        let ops = RmOps::get()?;
        // A missing client: RM's client lookup fails first (the real
        // driver's answer, 550.163.01 and 595.45.04).
        assert_eq!(
            ops.alloc(0x1234, 0x1234, 0, class::NV01_DEVICE_0, &mut [0; 56]),
            Err(Fail::Rm(NV_ERR_INVALID_OBJECT_HANDLE))
        );
        let client = ops
            .alloc(0, 0, 0, class::NV01_ROOT, &mut [])
            .map_err(|_| EIO)?;
        assert_eq!(
            ops.alloc(client, client, 0, 0xdead, &mut []),
            Err(Fail::Rm(NV_ERR_INVALID_CLASS))
        );
        // An op the union has no member for never reaches the driver.
        let mut b = [0u8; 16];
        assert_eq!(ops.raw_op(0x7f, &mut b), Err(EINVAL));
        // Nor does a block of another size than its member in the driver's
        // release (an NVOS21 for NV04_ALLOC is 575+'s fault at load, an
        // NVOS64 an older release's).
        let ours = crate::nv::release::current()
            .kernel
            .member_size(crate::nv::rmops::op::ALLOC);
        let mut b = [0u8; abi::Nvos64::SIZE];
        let other = if ours == Some(abi::Nvos21::SIZE) {
            abi::Nvos64::SIZE
        } else {
            abi::Nvos21::SIZE
        };
        assert_eq!(
            ops.raw_op(crate::nv::rmops::op::ALLOC, &mut b[..other]),
            Err(EINVAL)
        );
        // NV04_BIND_CONTEXT_DMA on zeros (NVOS49: status at 12 as in
        // NVOS00) is a control under client 0: NV_ERR_INVALID_CLIENT, the
        // real driver's answer.
        let mut b = [0u8; 16];
        ops.raw_op(crate::nv::rmops::op::BIND_CONTEXT_DMA, &mut b)?;
        assert_eq!(abi::Nvos00::decode(&b).status, NV_ERR_INVALID_CLIENT);
        assert_eq!(status(ops.free(client, client, client))?, NV_OK);
        Ok(())
    }
}
