// SPDX-License-Identifier: GPL-2.0

//! The NV0080 and NV2080 controls NVML asks when it opens a device
//! (`nvmlDeviceGetHandleByIndex`): how the GPU is virtualised, its chip
//! and its clock's correlation with the CPU's. Each is cited at 550.163.01
//! (`src/nvidia/src/kernel/`); 535.261.03 has the same code. The double
//! impersonates an H100 SXM5 (GH100, PCI device 0x2330) on bare metal.

use super::call::{Ctl, NewObject};
use super::state::Driver;
use crate::base::{ObjKind, StatusResult};
use crate::nv::abi::{class, status::*};
use crate::settings;

/// NV2081_BINAPI (`g_allclasses.h:239` at 550.163.01).
pub(crate) const NV2081_BINAPI: u32 = 0x2081;
/// NV0080_CTRL_CMD_GPU_GET_CLASSLIST_V2 (`ctrl0080gpu.h:507` at 550.163.01).
pub(crate) const GPU_GET_CLASSLIST_V2: u32 = 0x0080_0292;
/// NV0080_CTRL_CMD_GPU_GET_VGX_CAPS.
pub(crate) const GPU_GET_VGX_CAPS: u32 = 0x0080_028e;
/// NV0080_CTRL_CMD_GPU_GET_BRAND_CAPS.
pub(crate) const GPU_GET_BRAND_CAPS: u32 = 0x0080_0294;
/// NV2080_CTRL_CMD_GPU_GET_NAME_STRING (`ctrl2080gpu.h:293`).
pub(crate) const GPU_GET_NAME_STRING: u32 = 0x2080_0110;
/// NV2080_CTRL_CMD_GPU_GET_INFO_V2 (`ctrl2080gpu.h:260`).
pub(crate) const GPU_GET_INFO_V2: u32 = 0x2080_0102;
/// NV2080_CTRL_CMD_BUS_GET_PCI_INFO.
pub(crate) const BUS_GET_PCI_INFO: u32 = 0x2080_1801;

/// The product name of the double's GPUs, as `/proc/driver/nvidia`'s
/// Model line gives it (`procfs.rs`).
const NAME: &[u8] = b"vgpu driver double GPU";

/// NV0080_CTRL_CMD_GPU_GET_VIRTUALIZATION_MODE (`ctrl0080gpu.h:300` at
/// 550.163.01).
pub(crate) const GPU_GET_VIRTUALIZATION_MODE: u32 = 0x0080_0289;
/// NV2080_CTRL_CMD_MC_GET_ARCH_INFO (`ctrl2080mc.h:61`).
pub(crate) const MC_GET_ARCH_INFO: u32 = 0x2080_1701;
/// NV2080_CTRL_CMD_TIMER_GET_GPU_CPU_TIME_CORRELATION_INFO
/// (`ctrl2080tmr.h:195`).
pub(crate) const TIMER_GET_GPU_CPU_TIME_CORRELATION_INFO: u32 = 0x2080_0406;

/// Writes `v` at byte `at` of `p`.
fn put(p: &mut [u8], at: usize, v: &[u8]) {
    if let Some(s) = p.get_mut(at..at + v.len()) {
        s.copy_from_slice(v);
    }
}

/// The monotonic clock, in nanoseconds: the double's GPU timer (PTIMER
/// counts nanoseconds) and its CPU clock.
fn now_ns() -> u64 {
    // SAFETY: ktime_get has no preconditions; it reads the monotonic clock.
    let t = unsafe { kernel::bindings::ktime_get() };
    t.max(0) as u64
}

impl Driver {
    /// NV0080_CTRL_CMD_GPU_GET_VIRTUALIZATION_MODE: `{virtualizationMode}`.
    /// A GPU that is neither a vGPU guest's, passed through, nor a vGPU
    /// host's is NV0080_CTRL_GPU_VIRTUALIZATION_MODE_NONE, 0
    /// (`deviceCtrlCmdGpuGetVirtualizationMode_IMPL`,
    /// `gpu/device_ctrl.c:194-240`).
    pub(crate) fn virtualization_mode(&self, c: Ctl<'_>) -> StatusResult {
        if c.p.len() != 4 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        put(c.p, 0, &0u32.to_ne_bytes());
        Ok(())
    }

    /// NV2080_CTRL_CMD_MC_GET_ARCH_INFO: `{architecture, implementation,
    /// revision; u8 subRevision}` from PMC_BOOT_0
    /// (`subdeviceCtrlCmdMcGetArchInfo_IMPL`, `gpu/mc/kernel_mc.c:48-71`):
    /// GH100 is architecture 0x180 (NV_PMC_BOOT_0_ARCHITECTURE_GH100 0x18,
    /// `swref/published/nv_ref.h:130`, shifted as the header's 0x170 for
    /// GA100), implementation 0. GUESS: revision 0xa1 (an A1 part, major
    /// 0xa, minor 1) and no sub-revision.
    pub(crate) fn mc_arch_info(&self, c: Ctl<'_>) -> StatusResult {
        c.gpu()?;
        if c.p.len() != 16 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        put(c.p, 0, &0x180u32.to_ne_bytes());
        put(c.p, 4, &0u32.to_ne_bytes());
        put(c.p, 8, &0xa1u32.to_ne_bytes());
        put(c.p, 12, &[0]);
        Ok(())
    }

    /// NV2080_CTRL_CMD_TIMER_GET_GPU_CPU_TIME_CORRELATION_INFO: `{u8
    /// cpuClkId, sampleCount; {u64 gpuTime, cpuTime} samples[16]}`
    /// (`ctrl2080tmr.h:199-205`, 264 bytes;
    /// `subdeviceCtrlCmdTimerGetGpuCpuTimeCorrelationInfo_IMPL`,
    /// `gpu/subdevice/subdevice_ctrl_timer_kernel.c:281-440`): more than
    /// 16 samples is NV_ERR_INVALID_ARGUMENT; the processor GSP (bits 7:4
    /// = 1) is forwarded to GSP, which an H100 has; the CPU's sources
    /// OSTIME (1: microseconds), TSC (2) and PLATFORM_API (3, one sample)
    /// are answered, another is NV_ERR_NOT_SUPPORTED. GUESS: the double's
    /// GPU time and its CPU's TSC and platform counter are the monotonic
    /// clock in nanoseconds, and GSP answers as the CPU path does.
    pub(crate) fn time_correlation(&self, c: Ctl<'_>) -> StatusResult {
        c.gpu()?;
        if c.p.len() != 8 + 16 * 16 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        let (clk, count) = (c.p[0], usize::from(c.p[1]));
        if count > 16 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        let samples = match clk & 0xf {
            1..=2 => count,
            3 => 1,
            _ => return Err(NV_ERR_NOT_SUPPORTED),
        };
        for i in 0..samples {
            let t = now_ns();
            let cpu = if clk & 0xf == 1 { t / 1000 } else { t };
            put(c.p, 8 + 16 * i, &t.to_ne_bytes());
            put(c.p, 16 + 16 * i, &cpu.to_ne_bytes());
        }
        Ok(())
    }

    /// NV0080_CTRL_CMD_GPU_GET_VGX_CAPS: `{NvBool isVgx}`, whether the
    /// board is vGPU-branded (`deviceCtrlCmdGpuGetVgxCaps_IMPL`,
    /// `gpu/device_ctrl.c:498-507`). GUESS: an H100 SXM5 is not.
    pub(crate) fn vgx_caps(&self, c: Ctl<'_>) -> StatusResult {
        if c.p.len() != 1 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        c.p[0] = 0;
        Ok(())
    }

    /// NV0080_CTRL_CMD_GPU_GET_BRAND_CAPS: `{brands}`, a mask of the
    /// Quadro, NVS and Titan brands (`deviceCtrlCmdGpuGetBrandCaps_IMPL`,
    /// `g_device_nvoc.c:446`). GUESS: none for a data-centre H100.
    pub(crate) fn brand_caps(&self, c: Ctl<'_>) -> StatusResult {
        if c.p.len() != 4 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        put(c.p, 0, &0u32.to_ne_bytes());
        Ok(())
    }

    /// NV2080_CTRL_CMD_GPU_GET_NAME_STRING: `{gpuNameStringFlags; union
    /// {u8 ascii[64]; u16 unicode[64]}}` (`ctrl2080gpu.h:307-313`, 132
    /// bytes; `subdeviceCtrlCmdGpuGetNameString_IMPL`,
    /// `gpu/subdevice/subdevice_ctrl_gpu_kernel.c:3209-3222`, which
    /// `gpuGetNameString` fills): flags 0 ASCII, 1 UTF-16, another
    /// NV_ERR_INVALID_ARGUMENT. GUESS: RM gives the board's name from the
    /// GSP's static info; the double gives its one product name (below).
    pub(crate) fn name_string(&self, c: Ctl<'_>) -> StatusResult {
        c.gpu()?;
        if c.p.len() != 4 + 128 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        let flags = u32::from_ne_bytes([c.p[0], c.p[1], c.p[2], c.p[3]]);
        let buf = &mut c.p[4..];
        buf.fill(0);
        match flags {
            0 => buf[..NAME.len()].copy_from_slice(NAME),
            1 => {
                for (i, &b) in NAME.iter().enumerate() {
                    put(buf, 2 * i, &u16::from(b).to_ne_bytes());
                }
            }
            _ => return Err(NV_ERR_INVALID_ARGUMENT),
        }
        Ok(())
    }

    /// NV2080_CTRL_CMD_BUS_GET_PCI_INFO: `{pciDeviceId, pciSubSystemId,
    /// pciRevisionId, pciExtDeviceId}`, the ids RM read from config space,
    /// the device's in the high half and the vendor's in the low, and the
    /// device id alone (`subdeviceCtrlCmdBusGetPciInfo_IMPL`,
    /// `gpu/bus/kern_bus_ctrl.c:177-198`): 0x233010de (CARD_INFO's ids).
    /// GUESS: subsystem 0x16c110de and revision 0xa1 (an H100 SXM5's).
    pub(crate) fn bus_pci_info(&self, c: Ctl<'_>) -> StatusResult {
        c.gpu()?;
        if c.p.len() != 16 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        for (at, v) in [
            (0, 0x2330_10de_u32),
            (4, 0x16c1_10de),
            (8, 0xa1),
            (12, 0x2330),
        ] {
            put(c.p, at, &v.to_ne_bytes());
        }
        Ok(())
    }

    /// NV2081_BINAPI, under a subdevice (`resource_list.h:385-395`,
    /// RS_OPTIONAL(NV2081_ALLOC_PARAMETERS), 4 bytes): an object the
    /// double does not model further. Another parent is
    /// NV_ERR_INVALID_OBJECT_PARENT.
    pub(crate) fn new_binapi(&self, n: &mut NewObject<'_>) -> StatusResult<ObjKind> {
        if !matches!(n.parent_kind, Some(ObjKind::Subdevice { .. })) {
            return Err(NV_ERR_INVALID_OBJECT_PARENT);
        }
        Ok(ObjKind::Other)
    }

    /// NV0080_CTRL_CMD_GPU_GET_CLASSLIST_V2: `{numClasses; classList[N]}`,
    /// N = NV0080_CTRL_GPU_CLASSLIST_MAX_SIZE, the claimed release's (160
    /// at 535.261.03, `ctrl0080gpu.h:497`; 174 at 550.163.01, `:503`; its
    /// params size in vgpu's table of the release): the classes the
    /// GPU's engines support (`deviceCtrlCmdGpuGetClasslistV2_IMPL`,
    /// `gpu/device_ctrl.c:75-88`, `gpuGetClassList`). NVML looks for the
    /// compute class there before it lists compute processes. GUESS: RM
    /// lists every class of GH100's engines; the double lists those of an
    /// H100 that it allocates.
    pub(crate) fn classlist_v2(&self, c: Ctl<'_>) -> StatusResult {
        const HAS: [u32; 14] = [
            class::NV01_DEVICE_0,
            class::NV20_SUBDEVICE_0,
            class::NV01_MEMORY_SYSTEM,
            class::NV01_MEMORY_LOCAL_USER,
            class::NV50_MEMORY_VIRTUAL,
            class::FERMI_VASPACE_A,
            class::FERMI_CONTEXT_SHARE_A,
            class::KEPLER_CHANNEL_GROUP_A,
            class::HOPPER_CHANNEL_GPFIFO_A,
            class::HOPPER_USERMODE_A,
            class::HOPPER_DMA_COPY_A,
            class::HOPPER_COMPUTE_A,
            NV2081_BINAPI,
            crate::nv::abi::rusd::CLASS,
        ];
        if Some(c.p.len()) != settings::abi().params_size(c.cmd) {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        c.p.fill(0);
        put(c.p, 0, &(HAS.len() as u32).to_ne_bytes());
        for (i, k) in HAS.iter().enumerate() {
            put(c.p, 4 + 4 * i, &k.to_ne_bytes());
        }
        Ok(())
    }

    /// NV2080_CTRL_CMD_GPU_GET_INFO_V2: `{gpuInfoListSize; {index, data}
    /// gpuInfoList[N]}`, N = NV2080_CTRL_GPU_INFO_MAX_LIST_SIZE, the
    /// claimed release's (0x41 at 550.163.01, `ctrl2080gpu.h:113`; 0x40 at
    /// 535.261.03, `:115`), answered by `getGpuInfos`
    /// (`gpu/subdevice/subdevice_ctrl_gpu_kernel.c:71-482`): a list size
    /// of 0 or over N, or an index of N or more, is
    /// NV_ERR_INVALID_ARGUMENT (`:79-90`). What the kernel side answers
    /// for a bare-metal H100 without MIG: SYSMEM_ACCESS (0x1f) YES, 1
    /// (`:123-126`); GPU_SMC_MODE (0x2a) DISABLED, 2, from GSP (`:184-216`;
    /// MIG off); PROFILING and DEBUGGING_CAPABILITY (0x36, 0x37) ENABLED,
    /// 1, on bare metal (`:336-379`). GUESS: every other index 0 (the
    /// kernel's NO answers, and what GSP answers for the indices it is
    /// forwarded, `:446-459`, which the double does not know).
    pub(crate) fn gpu_info_v2(&self, c: Ctl<'_>) -> StatusResult {
        c.gpu()?;
        let size = settings::abi().params_size(c.cmd).unwrap_or(4 + 8 * 65);
        if c.p.len() != size {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        let max = (size - 4) / 8;
        let n = u32::from_ne_bytes([c.p[0], c.p[1], c.p[2], c.p[3]]) as usize;
        if n == 0 || n > max {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        for i in 0..n {
            let at = 4 + 8 * i;
            let index = u32::from_ne_bytes([c.p[at], c.p[at + 1], c.p[at + 2], c.p[at + 3]]);
            let data: u32 = match index {
                0x1f | 0x36 | 0x37 => 1,
                0x2a => 2,
                i if i as usize >= max => return Err(NV_ERR_INVALID_ARGUMENT),
                _ => 0,
            };
            put(c.p, at + 4, &data.to_ne_bytes());
        }
        Ok(())
    }
}
