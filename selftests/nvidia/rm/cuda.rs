// SPDX-License-Identifier: GPL-2.0

//! The controls NVIDIA's libcuda asks (issue 40) that NVML does not: what
//! its `cuInit` asks setting up a device (docs/driver-double.md,
//! "libcuda"). Each is cited at 550.163.01 (files under `src/nvidia/src/`
//! unless a header); where RM asks GSP, the answer is a GUESS for an H100.

use kernel::prelude::*;

use super::call::{fill_info_list, Ctl};
use super::state::{Driver, BAR1_SIZE};
use crate::base::{ObjKind, StatusResult};
use crate::nv::abi::{self, status::*};
use crate::settings;

/// NV0000_CTRL_CMD_CLIENT_SET_INHERITED_SHARE_POLICY
/// (`common/sdk/nvidia/inc/ctrl/ctrl0000/ctrl0000client.h:123`).
pub(crate) const CLIENT_SET_INHERITED_SHARE_POLICY: u32 = 0xd04;

/// NV0000_CTRL_CMD_SYSTEM_GET_FEATURES
/// (`common/sdk/nvidia/inc/ctrl/ctrl0000/ctrl0000system.h:56`).
pub(crate) const SYSTEM_GET_FEATURES: u32 = 0x1f0;

/// NV0000_CTRL_CMD_SYNC_GPU_BOOST_GROUP_INFO (`ctrl0000syncgpuboost.h:100`).
pub(crate) const SYNC_GPU_BOOST_GROUP_INFO: u32 = 0xa04;

/// Its params: `groupCount` and 16 groups of 140 bytes (32 GPU ids,
/// `gpuCount`, `boostGroupId`, `bBridgeless`; `ctrl0000syncgpuboost.h:40,
/// 66-77`), at 550.163.01 and 535.261.03 alike.
const SYNC_GPU_BOOST_GROUP_INFO_SIZE: usize = 4 + 16 * 140;

/// NV0080_CTRL_CMD_GPU_GET_NUM_SUBDEVICES (`ctrl0080/ctrl0080gpu.h:91`).
pub(crate) const GPU_GET_NUM_SUBDEVICES: u32 = 0x800280;

/// NV0080_CTRL_CMD_HOST_GET_CAPS_V2 (`ctrl0080/ctrl0080host.h:103`).
pub(crate) const HOST_GET_CAPS_V2: u32 = 0x801402;

/// NV0080_CTRL_HOST_CAPS_TBL_SIZE (`ctrl0080host.h:101`).
const HOST_CAPS_TBL_SIZE: usize = 3;

/// NV0080_CTRL_HOST_CAPS_GPU_COHERENT_MAPPING_SUPPORTED, byte 0 bit
/// 0x04 (`ctrl0080host.h:81`).
const HOST_CAPS_GPU_COHERENT_MAPPING_SUPPORTED: u8 = 0x04;

/// NV2080_CTRL_CMD_BUS_GET_INFO_V2 (`ctrl2080/ctrl2080bus.h:588`).
pub(crate) const BUS_GET_INFO_V2: u32 = 0x20801823;

/// NV2080_CTRL_BUS_INFO_MAX_LIST_SIZE (`ctrl2080bus.h:341`).
const BUS_INFO_MAX_LIST_SIZE: usize = 0x34;

/// NV2080_CTRL_CMD_GPU_GET_ENGINES_V2 (`ctrl2080/ctrl2080gpu.h:748`).
pub(crate) const GPU_GET_ENGINES_V2: u32 = 0x20800170;

/// The engines of the double's H100 (NV2080_ENGINE_TYPE_*,
/// `class/cl2080_notification.h:269-311`): GR0 (1), COPY0 to COPY9 (9 to
/// 0x12), SEC2 (0x26), HOST (0x27). GUESS: GH100's graphics engine and
/// ten copy engines as the double's engine classes go; the video engines
/// (NVDEC, NVJPG, OFA) are left out, the double models none.
const ENGINES: [u32; 13] = [
    0x01, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x26, 0x27,
];

/// NV2080_CTRL_CMD_GPU_GET_SIMULATION_INFO (`ctrl2080gpu.h:441`).
pub(crate) const GPU_GET_SIMULATION_INFO: u32 = 0x20800119;

/// NV0000_CTRL_CMD_GPU_GET_MEMOP_ENABLE (`ctrl0000/ctrl0000gpu.h:798`).
pub(crate) const GPU_GET_MEMOP_ENABLE: u32 = 0x27b;

/// NV2080_CTRL_CMD_GR_GET_INFO (`ctrl2080/ctrl2080gr.h`), the list by
/// pointer.
pub(crate) const GR_GET_INFO: u32 = 0x20801201;

/// NV2080_CTRL_GR_INFO_MAX_SIZE (`ctrl0080/ctrl0080gr.h:165`).
const GR_INFO_MAX_SIZE: u32 = 0x38;

/// NV2080_CTRL_CMD_GR_GET_GLOBAL_SM_ORDER (`ctrl2080gr.h`).
pub(crate) const GR_GET_GLOBAL_SM_ORDER: u32 = 0x2080121b;

/// NV2080_CTRL_CMD_GR_GET_GLOBAL_SM_ORDER_MAX_SM_COUNT (`ctrl2080gr.h:1163`).
const GLOBAL_SM_ORDER_MAX: usize = 512;

/// NV2080_CTRL_CMD_GR_GET_SM_ISSUE_RATE_MODIFIER (`ctrl2080gr.h`).
pub(crate) const GR_GET_SM_ISSUE_RATE_MODIFIER: u32 = 0x20801230;

/// NV2080_CTRL_CMD_CE_GET_ALL_CAPS (`ctrl2080/ctrl2080ce.h`).
pub(crate) const CE_GET_ALL_CAPS: u32 = 0x20802a0a;

/// The double's H100 (GUESS, an H100 SXM5's published figures): 8 GPCs,
/// 66 TPCs (six GPCs of 8 and two of 9), 2 SMs per TPC, 132 SMs.
const GPCS: u32 = 8;
/// TPCs of each GPC.
const TPCS_OF_GPC: [u32; 8] = [9, 9, 8, 8, 8, 8, 8, 8];
/// SMs of a TPC.
const SMS_PER_TPC: u32 = 2;
/// All TPCs.
const TPCS: u32 = 66;

/// GR_GET_INFO's entry `index` for the double's H100: GSP's static GR
/// info (NV2080_CTRL_INTERNAL_STATIC_GR_INFO, what kernel RM copies out;
/// `kernel/gpu/gr/kernel_graphics.c:2700-2704`), every value a GUESS from
/// an H100 SXM5's published figures (indices `ctrl0080gr.h:102-158`);
/// graphics-only entries 0.
fn gr_info(index: u32) -> u32 {
    match index {
        0x07 => TPCS,                     // SHADER_PIPE_COUNT (TPCs)
        0x09 => SMS_PER_TPC,              // SHADER_PIPE_SUB_COUNT
        0x0a => 4,                        // SM_REG_BANK_COUNT
        0x0b => 16384,                    // SM_REG_BANK_REG_COUNT
        0x0c => 0x0900,                   // SM_VERSION 9.0 (`ctrl2080gr.h:311`)
        0x0d => 64,                       // MAX_WARPS_PER_SM
        0x0e => 32,                       // MAX_THREADS_PER_WARP
        0x11 => 256,                      // FB_MEMORY_REQUEST_GRANULARITY
        0x12 => 128,                      // HOST_MEMORY_REQUEST_GRANULARITY
        0x13 => 128,                      // MAX_SP_PER_SM
        0x14 => GPCS,                     // LITTER_NUM_GPCS
        0x15 | 0x18 => 10,                // LITTER_NUM_FBPS, _MIN_FBPS
        0x17 | 0x2a => 9,                 // LITTER_NUM_TPC_PER_GPC, FAMILY_MAX
        0x1a => 1,                        // TIMESLICE_ENABLED
        0x1b => 20,                       // LITTER_NUM_FBPAS
        0x1c | 0x1e => 3,                 // PES_PER_GPC, TPCS_PER_PES
        0x1d => TPCS * SMS_PER_TPC * 128, // GPU_CORE_COUNT
        0x20 => SMS_PER_TPC,              // LITTER_NUM_SM_PER_TPC
        0x23 => TPCS * SMS_PER_TPC * 4,   // TENSOR_CORE_COUNT
        0x24 => 1,                        // LITTER_NUM_GRS
        0x25 => 20,                       // LITTER_NUM_LTCS
        0x26 => 80,                       // LITTER_NUM_LTC_SLICES
        0x27 => 1,                        // LITTER_NUM_GPCMMU_PER_GPC
        0x28 | 0x2b => 2,                 // LTC_PER_FBP, FBPA_PER_FBP
        0x2c..=0x2e => 64,                // MAX_*SUBCONTEXT_COUNT
        0x32 => 4,                        // LITTER_NUM_SLICES_PER_LTC
        0x35 | 0x36 => GPCS,              // MAX_MIG_ENGINES, _PARTITIONABLE_GPCS
        0x37 => 8,                        // LITTER_MIN_SUBCTX_PER_SMC_ENG
        _ => 0,
    }
}

/// NV2080_CTRL_CMD_GR_GET_GPC_MASK (`ctrl2080gr.h`).
pub(crate) const GR_GET_GPC_MASK: u32 = 0x2080122a;

/// NV2080_CTRL_CMD_GR_GET_CAPS_V2 (`ctrl2080gr.h`).
pub(crate) const GR_GET_CAPS_V2: u32 = 0x20801227;

/// NV0080_CTRL_CMD_FB_GET_CAPS_V2 (`ctrl0080/ctrl0080fb.h`).
pub(crate) const FB_GET_CAPS_V2: u32 = 0x801307;

/// NV2080_CTRL_CMD_GR_GET_TPC_MASK (`ctrl2080gr.h`).
pub(crate) const GR_GET_TPC_MASK: u32 = 0x2080122b;

/// NV0000_CTRL_CMD_CLIENT_GET_ADDR_SPACE_TYPE (`ctrl0000client.h:56`).
pub(crate) const CLIENT_GET_ADDR_SPACE_TYPE: u32 = 0xd01;

/// NV2080_CTRL_CMD_BUS_GET_PCI_BAR_INFO (`ctrl2080bus.h:638`).
pub(crate) const BUS_GET_PCI_BAR_INFO: u32 = 0x20801803;

/// NV2080_CTRL_CMD_BUS_GET_PCIE_SUPPORTED_GPU_ATOMICS
/// (`ctrl2080bus.h:1334`).
pub(crate) const BUS_GET_PCIE_SUPPORTED_GPU_ATOMICS: u32 = 0x2080182a;

/// NV2080_CTRL_CMD_GSP_GET_FEATURES (`ctrl2080/ctrl2080gsp.h:64`).
pub(crate) const GSP_GET_FEATURES: u32 = 0x20803601;

/// Its params: `{gspFeatures; bValid; bDefaultGspRmGpu;
/// firmwareVersion[64]}` (`ctrl2080gsp.h:70-75`), 72 bytes at 550.163.01
/// and 535.261.03 alike.
const GSP_GET_FEATURES_SIZE: usize = 72;
/// `NV2080_CTRL_GSP_GET_FEATURES_UVM_ENABLED` in `gspFeatures`' low byte
/// (`ctrl2080gsp.h:78-80` at 550.163.01).
const GSP_FEATURE_UVM_ENABLED: u8 = 1;

/// NV2080_CTRL_CMD_GPU_GET_SHORT_NAME_STRING (`ctrl2080gpu.h:331`).
pub(crate) const GPU_GET_SHORT_NAME_STRING: u32 = 0x20800111;

/// The double's H100's short name (GUESS: its chip's, GH100).
const SHORT_NAME: &[u8] = b"GH100";

/// NV2080_CTRL_CMD_GPU_QUERY_COMPUTE_MODE_RULES (`ctrl2080gpu.h:1305`).
pub(crate) const GPU_QUERY_COMPUTE_MODE_RULES: u32 = 0x20800131;

/// NV2080_CTRL_CMD_GPU_ACQUIRE_COMPUTE_MODE_RESERVATION and
/// RELEASE_COMPUTE_MODE_RESERVATION, no params (`ctrl2080gpu.h`; message
/// ids 0x45 and 0x46 from RM's export table,
/// `generated/g_subdevice_nvoc.c:632-653` at 550.163.01).
pub(crate) const GPU_ACQUIRE_COMPUTE_MODE_RESERVATION: u32 = 0x20800145;
/// See [`GPU_ACQUIRE_COMPUTE_MODE_RESERVATION`].
pub(crate) const GPU_RELEASE_COMPUTE_MODE_RESERVATION: u32 = 0x20800146;

/// NV0080_CTRL_CMD_FIFO_GET_CHANNELLIST: `{numChannels; pChannelHandleList;
/// pChannelList}`, 24 bytes (`ctrl0080fifo.h:332-340` at 550.163.01).
pub(crate) const FIFO_GET_CHANNELLIST: u32 = 0x0080170d;
/// What GET_CHANNELLIST gives a handle that is not one of the client's
/// channels (`NV0080_CTRL_FIFO_GET_CHANNELLIST_INVALID_CHANNEL`).
const INVALID_CHANNEL: u32 = 0xffff_ffff;
/// RM copies no embedded list over 1 MiB (`RMAPI_PARAM_COPY_MAX_PARAMS_SIZE`,
/// `inc/kernel/rmapi/param_copy.h:63` at 550.163.01).
const PARAM_COPY_MAX: usize = 1 << 20;

/// NV2080_CTRL_CMD_RC_RELEASE_WATCHDOG_REQUESTS, no params
/// (`ctrl2080/ctrl2080rc.h`; `g_subdevice_nvoc.c:6422-6430`).
pub(crate) const RC_RELEASE_WATCHDOG_REQUESTS: u32 = 0x2080220c;

/// NV2080_CTRL_CMD_RC_SOFT_DISABLE_WATCHDOG, no params
/// (`ctrl2080rc.h`; `g_subdevice_nvoc.c:6467-6475`).
pub(crate) const RC_SOFT_DISABLE_WATCHDOG: u32 = 0x20802210;

/// RS_SHARE_TYPE_MAX (`common/sdk/nvidia/inc/rs_access.h:250`).
const RS_SHARE_TYPE_MAX: u16 = 8;

impl Driver {
    /// NV0000_CTRL_CMD_CLIENT_SET_INHERITED_SHARE_POLICY: an
    /// RS_SHARE_POLICY `{u32 target; u32 accessMask; u16 type; u8
    /// action}` (`rs_access.h:267-272`), applied to the client itself as
    /// SHARE_OBJECT would (`cliresCtrlCmdClientSetInheritedSharePolicy_IMPL`,
    /// `kernel/rmapi/client_resource.c:4676-4689`): a type from
    /// RS_SHARE_TYPE_MAX up is NV_ERR_INVALID_ARGUMENT (`:4703-4704`).
    /// libcuda sets type PID (4, `rs_access.h:245`): its objects shared
    /// with its own process, which is the sharing the double's default
    /// policy already allows (`dup.rs`); the double records no policy
    /// (RM_SHARE is not modelled), so another type shares nothing more.
    pub(crate) fn client_set_inherited_share_policy(&self, c: Ctl<'_>) -> StatusResult {
        if c.p.len() != 12 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        let ty: u32 = abi::read_field(c.p, 8);
        if (ty & 0xffff) as u16 >= RS_SHARE_TYPE_MAX {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        Ok(())
    }

    /// NV0000_CTRL_CMD_SYSTEM_GET_FEATURES: `featuresMask`
    /// (`cliresCtrlCmdSystemGetFeatures_IMPL`,
    /// `kernel/rmapi/client_resource.c:789-823`): UEFI, EFI_INIT and
    /// UUID_BASED_MEM_SHARING from the system's properties; the double's
    /// host is none of them (GUESS: a legacy-boot host without IMEX
    /// channels), so 0.
    pub(crate) fn system_get_features(&self, mut c: Ctl<'_>) -> StatusResult {
        c.cleared(4)?;
        Ok(())
    }

    /// NV0000_CTRL_CMD_SYNC_GPU_BOOST_GROUP_INFO: the synchronized boost
    /// groups (`cliresCtrlCmdSyncGpuBoostGroupInfo_IMPL`,
    /// `client_resource.c:4462-4477`; `gpuboostmgrQueryGroups_IMPL`,
    /// `kernel/power/gpu_boost_mgr.c:224-250`). Nobody made one on the
    /// double, so `groupCount` 0 and the groups left as sent.
    pub(crate) fn sync_gpu_boost_group_info(&self, c: Ctl<'_>) -> StatusResult {
        if c.p.len() != SYNC_GPU_BOOST_GROUP_INFO_SIZE {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        c.p[..4].fill(0);
        Ok(())
    }

    /// NV0080_CTRL_CMD_GPU_GET_NUM_SUBDEVICES: `numSubDevices` is always 1
    /// (`deviceCtrlCmdGpuGetNumSubdevices_IMPL`,
    /// `kernel/gpu/device_ctrl.c:96-104`).
    pub(crate) fn gpu_get_num_subdevices(&self, c: Ctl<'_>) -> StatusResult {
        if c.p.len() != 4 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        c.p.copy_from_slice(&1u32.to_ne_bytes());
        Ok(())
    }

    /// NV0080_CTRL_CMD_HOST_GET_CAPS_V2: `capsTbl[3]`
    /// (`deviceCtrlCmdHostGetCapsV2_IMPL`,
    /// `kernel/gpu/bus/kern_bus_ctrl.c:158-170`; `kbusGetDeviceCaps_IMPL`,
    /// `kernel/gpu/bus/kern_bus.c:1065-1104`): RM always sets
    /// GPU_COHERENT_MAPPING_SUPPORTED; EXPLICIT_CACHE_FLUSH_REQD only on
    /// ARM or a chipset that is not I/O coherent and CPU_WRITE_WAR only
    /// behind NVIDIA's own host bridges, neither on the double's x86 host
    /// (GUESS: an I/O-coherent x86 chipset).
    pub(crate) fn host_get_caps_v2(&self, mut c: Ctl<'_>) -> StatusResult {
        c.cleared(HOST_CAPS_TBL_SIZE)?;
        c.p[0] = HOST_CAPS_GPU_COHERENT_MAPPING_SUPPORTED;
        Ok(())
    }

    /// NV2080_CTRL_CMD_BUS_GET_INFO_V2: `{busInfoListSize; {index,
    /// data}[52]}`; 0 or more than 52 entries NV_ERR_INVALID_ARGUMENT
    /// (`subdeviceCtrlCmdBusGetInfoV2_IMPL`,
    /// `kernel/gpu/bus/kern_bus_ctrl.c:595-610`). The indices libcuda
    /// asks, by `getBusInfos` (`:273-580`; values `ctrl2080bus.h:258-388`):
    /// - TYPE (0): the bus interface, PCI_EXPRESS (3) (`:328-331`);
    /// - CAPS (2): only CHIP_INTEGRATED, on Tegra (`:338-341`,
    ///   `kbusControlGetCaps` `:47-60`): 0;
    /// - COHERENT_DMA_FLAGS (0xb): CTXDMA where the bus snoops (`:400-438`,
    ///   `gpu/bif/kernel_bif.c:296`; GUESS: an x86 host that snoops, no
    ///   GPU GART): 1;
    /// - BUS_NUMBER (0xf), DEVICE_NUMBER (0x10), DOMAIN_NUMBER (0x2c): the
    ///   GPU's PCI location (`:504-541`), CARD_INFO's: bus N + 1, device
    ///   0, domain 0;
    /// - PCIE_GPU_LINK_CAPS (3), PCIE_DOWNSTREAM_LINK_CAPS (6): the link
    ///   capabilities RM reads from PCI config space (`:343-399`,
    ///   `kbifControlGetPCIEInfo`), GUESS for an H100 SXM5 behind a Gen5
    ///   switch: 32 GT/s x16 (0x105);
    /// - PCIE_GEN_INFO (0x2d): from GSP (`:288-300`); GUESS Gen5 capable,
    ///   at Gen5, the GPU Gen5 (0x444000).
    ///
    /// Any other index is not modelled: its data 0 and
    /// NV_ERR_INVALID_ARGUMENT, what RM gives an index it does not know
    /// (`:559-564`).
    pub(crate) fn bus_get_info_v2(&self, c: Ctl<'_>) -> StatusResult {
        let gpu = c.gpu()?;
        if c.p.len() != 4 + 8 * BUS_INFO_MAX_LIST_SIZE {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        let n: u32 = abi::read_field(c.p, 0);
        if n == 0 || n as usize > BUS_INFO_MAX_LIST_SIZE {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        for k in 0..n as usize {
            let at = 4 + 8 * k;
            let index: u32 = abi::read_field(c.p, at);
            let data: Option<u32> = match index {
                0x0 => Some(3),
                0x2 | 0x10 | 0x2c => Some(0),
                0x3 | 0x6 => Some(0x105),
                0xb => Some(1),
                0xf => Some(gpu + 1),
                0x2d => Some(0x44_4000),
                _ => None,
            };
            c.p[at + 4..at + 8].copy_from_slice(&data.unwrap_or(0).to_ne_bytes());
            if data.is_none() {
                return Err(NV_ERR_INVALID_ARGUMENT);
            }
        }
        Ok(())
    }

    /// NV2080_CTRL_CMD_BUS_GET_PCIE_SUPPORTED_GPU_ATOMICS: kernel RM has
    /// no code for it and routes it to GSP (flags 0x6210, with
    /// RMCTRL_FLAGS_ROUTE_TO_PHYSICAL 0x200: `generated/g_subdevice_nvoc.c`
    /// around `:6083`, `inc/kernel/rmapi/control.h:226`). GSP's answer is
    /// a GUESS: the params zeroed, no PCIe atomic operation supported.
    /// The size is the claimed release's (104 bytes at 550.163.01).
    /// (GPU_QUERY_ECC_STATUS, 0x2080012f, routed the same way, stays
    /// refused: the committed nvidia-smi traces record it so.)
    pub(crate) fn pcie_supported_gpu_atomics(&self, c: Ctl<'_>) -> StatusResult {
        if settings::abi().params_size(c.cmd) != Some(c.p.len()) {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        c.p.fill(0);
        Ok(())
    }

    /// NV2080_CTRL_CMD_BUS_GET_PCI_BAR_INFO: `{pciBarCount; {flags,
    /// barSize (MiB), barSizeBytes, barOffset}[8]}` (`ctrl2080bus.h:612-617`),
    /// RM's BARs, the rest zeroed, flags 0
    /// (`subdeviceCtrlCmdBusGetPciBarInfo_IMPL`,
    /// `kernel/gpu/bus/kern_bus_ctrl.c:613-649`). GUESS for an H100: three
    /// BARs, 16 MiB of registers, BAR1 as FB_GET_INFO's BAR1_SIZE reports
    /// it, 32 MiB of BAR2; bus offsets the double makes up, each GPU's in
    /// its own 1 TiB window.
    pub(crate) fn bus_get_pci_bar_info(&self, c: Ctl<'_>) -> StatusResult {
        let gpu = c.gpu()?;
        if c.p.len() != 8 + 8 * 24 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        let vram = self.gpus[gpu as usize].vram;
        let base = u64::from(gpu + 1) << 40;
        let bars: [(u64, u64); 3] = [
            (16 << 20, base),
            (BAR1_SIZE.min(vram), base + (1 << 36)),
            (32 << 20, base + (1 << 37)),
        ];
        c.p.fill(0);
        c.p[..4].copy_from_slice(&(bars.len() as u32).to_ne_bytes());
        for (k, (size, offset)) in bars.iter().enumerate() {
            let at = 8 + 24 * k;
            c.p[at + 4..at + 8].copy_from_slice(&((size >> 20) as u32).to_ne_bytes());
            c.p[at + 8..at + 16].copy_from_slice(&size.to_ne_bytes());
            c.p[at + 16..at + 24].copy_from_slice(&offset.to_ne_bytes());
        }
        Ok(())
    }

    /// NV2080_CTRL_CMD_GPU_GET_ENGINES_V2: `{engineCount; engineList[64]}`,
    /// the GPU's engine table, filtered by MIG (off: all of them)
    /// (`subdeviceCtrlCmdGpuGetEnginesV2_IMPL`,
    /// `kernel/gpu/subdevice/subdevice_ctrl_gpu_kernel.c:1306-1352`);
    /// the double's is [`ENGINES`], the rest of the list left as sent.
    pub(crate) fn gpu_get_engines_v2(&self, c: Ctl<'_>) -> StatusResult {
        // 64 entries, 62 before 550 (`ctrl2080gpu.h:753` at 535.261.03).
        if settings::abi().params_size(c.cmd) != Some(c.p.len())
            || c.p.len() < 4 * (ENGINES.len() + 1)
        {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        c.p[..4].copy_from_slice(&(ENGINES.len() as u32).to_ne_bytes());
        for (k, e) in ENGINES.iter().enumerate() {
            c.p[4 + 4 * k..8 + 4 * k].copy_from_slice(&e.to_ne_bytes());
        }
        Ok(())
    }

    /// NV2080_CTRL_CMD_GPU_GET_SIMULATION_INFO: `type`, NONE (0,
    /// `ctrl2080gpu.h:449`) on silicon (`subdeviceCtrlCmdGpuGetSimulationInfo_IMPL`,
    /// `kernel/gpu/subdevice/subdevice_ctrl_gpu_kernel.c:1238-1257`): the
    /// double impersonates silicon.
    pub(crate) fn gpu_get_simulation_info(&self, mut c: Ctl<'_>) -> StatusResult {
        c.gpu()?;
        c.cleared(4)?;
        Ok(())
    }

    /// NV0000_CTRL_CMD_GPU_GET_MEMOP_ENABLE: `enableMask`, MEMOP_ENABLE
    /// only where the system property ENABLE_STREAM_MEMOPS is set
    /// (`cliresCtrlCmdGpuGetMemOpEnable_IMPL`,
    /// `kernel/rmapi/client_resource.c:4834-4850`); GUESS: not set on the
    /// double's host (no registry override), so 0.
    pub(crate) fn gpu_get_memop_enable(&self, mut c: Ctl<'_>) -> StatusResult {
        c.cleared(4)?;
        Ok(())
    }

    /// NV2080_CTRL_CMD_GR_GET_INFO: `{grInfoListSize; grInfoList (a
    /// pointer to {index, data}[]); grRouteInfo}`; the size clamped to
    /// GR_INFO_MAX_SIZE, a NULL list NV_ERR_INVALID_ARGUMENT
    /// (`subdeviceCtrlCmdKGrGetInfo_IMPL`,
    /// `kernel/gpu/gr/kernel_graphics.c:2851-2887`), as is a size of 0
    /// or an index from GR_INFO_MAX_SIZE up (`_kgraphicsCtrlCmdGrGetInfoV2`,
    /// `:2628-2706`); each entry from [`gr_info`].
    pub(crate) fn gr_get_info(&self, c: Ctl<'_>) -> StatusResult {
        c.gpu()?;
        if c.p.len() != 32 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        let n: u32 = abi::read_field(c.p, 0);
        let ptr: u64 = abi::read_field(c.p, 8);
        drop(c.rm);
        let n = n.min(GR_INFO_MAX_SIZE);
        fill_info_list(c.space, n, ptr, GR_INFO_MAX_SIZE as usize, |index| {
            if index >= GR_INFO_MAX_SIZE {
                return Err(NV_ERR_INVALID_ARGUMENT);
            }
            Ok(gr_info(index))
        })
    }

    /// NV2080_CTRL_CMD_GR_GET_GLOBAL_SM_ORDER: `{ {gpcId, localTpcId,
    /// localSmId, globalTpcId, virtualGpcId, migratableTpcId} (u16 each)
    /// [512]; numSm; numTpc; grRouteInfo}` (`ctrl2080gr.h:1169-1182`),
    /// GSP's static order copied out (`subdeviceCtrlCmdKGrGetGlobalSmOrder_IMPL`,
    /// `kernel/gpu/gr/kernel_graphics.c:2966-3011`). The double's order
    /// (GUESS): GPC by GPC, TPC by TPC, its SMs in turn; virtual GPC = GPC,
    /// migratable TPC = local TPC.
    pub(crate) fn gr_get_global_sm_order(&self, c: Ctl<'_>) -> StatusResult {
        c.gpu()?;
        if c.p.len() != GLOBAL_SM_ORDER_MAX * 12 + 8 + 16 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        let mut sm = 0usize;
        let mut global_tpc = 0u32;
        for (gpc, &tpcs) in TPCS_OF_GPC.iter().enumerate() {
            for tpc in 0..tpcs {
                for local_sm in 0..SMS_PER_TPC {
                    let at = 12 * sm;
                    let ids = [gpc as u32, tpc, local_sm, global_tpc, gpc as u32, tpc];
                    for (k, v) in ids.iter().enumerate() {
                        c.p[at + 2 * k..at + 2 * k + 2].copy_from_slice(&(*v as u16).to_ne_bytes());
                    }
                    sm += 1;
                }
                global_tpc += 1;
            }
        }
        let at = 12 * GLOBAL_SM_ORDER_MAX;
        c.p[at..at + 2].copy_from_slice(&(sm as u16).to_ne_bytes());
        c.p[at + 2..at + 4].copy_from_slice(&(global_tpc as u16).to_ne_bytes());
        Ok(())
    }

    /// NV2080_CTRL_CMD_GR_GET_SM_ISSUE_RATE_MODIFIER: `{grRouteInfo;
    /// imla0, fmla16, dp, fmla32, ffma, imla1..4 (u8)}`
    /// (`ctrl2080gr.h:1630-1641`), GSP's static answer copied out
    /// (`subdeviceCtrlCmdKGrGetSmIssueRateModifier_IMPL`,
    /// `kernel_graphics.c:3024-3070`). GUESS: a data-center H100 runs every
    /// unit at FULL_SPEED (0, `ctrl2080gr.h:1564-1620`).
    pub(crate) fn gr_get_sm_issue_rate_modifier(&self, c: Ctl<'_>) -> StatusResult {
        c.gpu()?;
        if c.p.len() != 32 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        c.p[16..25].fill(0);
        Ok(())
    }

    /// NV2080_CTRL_CMD_CE_GET_ALL_CAPS: `{capsTbl[64][2]; u64 present}`
    /// (`ctrl2080ce.h:330-333`), zeroed, then GSP's physical caps
    /// (`subdeviceCtrlCmdCeGetAllCaps_IMPL`, `kernel/gpu/ce/kernel_ce_shared.c:174-230`).
    /// GUESS for an H100: ten copy engines (as GET_ENGINES_V2 lists), each
    /// reading and writing system memory and peers, blocks over 64 KiB,
    /// pipelined and not (0xec, 0x03; `ctrl2080ce.h:91-101`), CE0 also the
    /// GR copy engine (0x01).
    pub(crate) fn ce_get_all_caps(&self, c: Ctl<'_>) -> StatusResult {
        c.gpu()?;
        // 64 CEs and a u64 mask; 32 (NV2080_CTRL_MAX_PCES) and a u32
        // before 550 (`ctrl2080ce.h:328-331` at 535.261.03).
        let (ces, mask_size) = match c.p.len() {
            136 => (64, 8),
            68 => (32, 4),
            _ => return Err(NV_ERR_INVALID_ARGUMENT),
        };
        if settings::abi().params_size(c.cmd) != Some(c.p.len()) {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        c.p.fill(0);
        for ce in 0..10usize {
            c.p[2 * ce] = 0xec | if ce == 0 { 0x01 } else { 0 };
            c.p[2 * ce + 1] = 0x03;
        }
        let at = 2 * ces;
        c.p[at..at + mask_size].copy_from_slice(&0x3ffu64.to_ne_bytes()[..mask_size]);
        Ok(())
    }

    /// NV2080_CTRL_CMD_GR_GET_GPC_MASK: `{grRouteInfo; gpcMask}`, MIG off:
    /// the legacy GPC mask (`subdeviceCtrlCmdKGrGetGpcMask_IMPL`,
    /// `kernel/gpu/gr/kernel_graphics.c:3082-3115`), the double's eight GPCs
    /// (GUESS, as GR_GET_INFO's LITTER_NUM_GPCS): 0xff.
    pub(crate) fn gr_get_gpc_mask(&self, c: Ctl<'_>) -> StatusResult {
        c.gpu()?;
        if c.p.len() != 24 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        let mask: u32 = (1 << GPCS) - 1;
        c.p[16..20].copy_from_slice(&mask.to_ne_bytes());
        Ok(())
    }

    /// NV2080_CTRL_CMD_GR_GET_CAPS_V2: `{capsTbl[23]; grRouteInfo;
    /// bCapsPopulated}`: where not yet populated, GSP's static GR caps and
    /// `bCapsPopulated` set (`subdeviceCtrlCmdKGrGetCapsV2_IMPL`,
    /// `kernel/gpu/gr/kernel_graphics.c:2807-2840`). GUESS: none of the
    /// (graphics) caps on the double's H100, so a zeroed table.
    pub(crate) fn gr_get_caps_v2(&self, c: Ctl<'_>) -> StatusResult {
        c.gpu()?;
        if c.p.len() != 48 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        if c.p[40] == 0 {
            c.p[..23].fill(0);
            c.p[40] = 1;
        }
        Ok(())
    }

    /// NV0080_CTRL_CMD_FB_GET_CAPS_V2: `capsTbl[3]` (`deviceCtrlCmdFbGetCapsV2_IMPL`,
    /// `kernel/gpu/mem_mgr/mem_mgr_ctrl.c:235-250`; `memmgrGetDeviceCaps`,
    /// `:56-125`; bits `ctrl0080/ctrl0080fb.h:73-94`): always
    /// RENDER_TO_SYSMEM, BLOCKLINEAR and BLOCKLINEAR_GOBS_512; GUESS for an
    /// H100 of the properties the rest depend on: the GPU cache enabled
    /// (SUPPORT_CACHED_SYSMEM), generic page kinds (GENERIC_PAGE_KIND),
    /// scrub on free (VIDMEM_ALLOCS_ARE_CLEARED), no sysmem scanout or
    /// compression.
    pub(crate) fn fb_get_caps_v2(&self, c: Ctl<'_>) -> StatusResult {
        if c.p.len() != 3 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        c.p.copy_from_slice(&[0x01 | 0x02 | 0x08, 0x01 | 0x80, 0x02]);
        Ok(())
    }

    /// NV2080_CTRL_CMD_GR_GET_TPC_MASK: `{grRouteInfo; gpcId; tpcMask}`,
    /// MIG off: the legacy TPC mask of that physical GPC
    /// (`subdeviceCtrlCmdKGrGetTpcMask_IMPL`, `kernel_graphics.c:3128-3170`),
    /// the double's (GUESS, [`TPCS_OF_GPC`]); a GPC it has not, 0.
    pub(crate) fn gr_get_tpc_mask(&self, c: Ctl<'_>) -> StatusResult {
        c.gpu()?;
        if c.p.len() != 24 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        let gpc: u32 = abi::read_field(c.p, 16);
        let tpcs = TPCS_OF_GPC.get(gpc as usize).copied().unwrap_or(0);
        let mask: u32 = (1u32 << tpcs) - 1;
        c.p[20..24].copy_from_slice(&mask.to_ne_bytes());
        Ok(())
    }

    /// NV0000_CTRL_CMD_CLIENT_GET_ADDR_SPACE_TYPE: `{hObject; mapFlags;
    /// addrSpaceType}` (`ctrl0000client.h:58-70`): the address space a
    /// mapping of the client's object would reach
    /// (`cliresCtrlCmdClientGetAddrSpaceType_IMPL`,
    /// `kernel/rmapi/client_resource.c`): an unknown handle
    /// NV_ERR_OBJECT_NOT_FOUND (`clientGetResourceRef`,
    /// `libraries/resserv/src/rs_client.c:392`); memory its own, SYSMEM (1)
    /// or VIDMEM (2) (`mem_mgr/mem.c:107-140`; the double has no reflected
    /// or EGM memory); a USERMODE object, a GPU resource with registers,
    /// REGMEM (3) (`gpu/gpu_resource.c:337-356`). Other objects are not
    /// modelled: NV_ERR_NOT_SUPPORTED.
    pub(crate) fn client_get_addr_space_type(&self, mut c: Ctl<'_>) -> StatusResult {
        if c.p.len() != 12 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        let h: u32 = abi::read_field(c.p, 0);
        let kind = c.rm.clients[c.ci]
            .find(h)
            .ok_or(NV_ERR_OBJECT_NOT_FOUND)?
            .kind;
        let ty: u32 = match kind {
            ObjKind::Usermode { .. } => 3,
            ObjKind::Memory { mem } => match c.rm.mem(mem) {
                Some(m) if m.vram => 2,
                Some(_) => 1,
                None => return Err(NV_ERR_OBJECT_NOT_FOUND),
            },
            _ => return Err(NV_ERR_NOT_SUPPORTED),
        };
        c.p[8..12].copy_from_slice(&ty.to_ne_bytes());
        Ok(())
    }
    /// NV2080_CTRL_CMD_GSP_GET_FEATURES: kernel RM routes it to GSP on
    /// bare metal (flags 0x404a11 with RMCTRL_FLAGS_ROUTE_TO_PHYSICAL,
    /// `generated/g_subdevice_nvoc.c:7967-7975`; `kernel/rmapi/resource.c:218-222`);
    /// its own `_KERNEL` form, which clears `bValid`, is a vGPU guest's
    /// (`subdevice_ctrl_gpu_kernel.c:3194-3201`, chosen for the VF variant
    /// only, `g_subdevice_nvoc.c:10063-10071`). GSP's answer is a GUESS
    /// after the header (`ctrl2080gsp.h:38-62`): `bValid` set, as for
    /// "a GSP client with GPU support offloaded", `bDefaultGspRmGpu` set
    /// (an H100 runs GSP-RM by default), UVM_ENABLED (bit 0,
    /// `ctrl2080gsp.h:78-80`) and the firmware's build version, which is
    /// the driver's: the claimed release's string (what
    /// `rm_get_firmware_version` shows as "GPU Firmware",
    /// `arch/nvalloc/unix/src/osapi.c:4864-4909`). UVM_ENABLED because
    /// libcuda 550.163.01 turns managed memory off for a GPU whose answer
    /// is valid without it (found with gdb, docs/driver-double.md,
    /// "libcuda's managed memory"), and an H100 on that driver has managed
    /// memory; VGPU_GSP_MIG_REFACTORING (bit 1) is a vGPU's.
    pub(crate) fn gsp_get_features(&self, c: Ctl<'_>) -> StatusResult {
        c.gpu()?;
        if c.p.len() != GSP_GET_FEATURES_SIZE {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        let version = settings::release().as_bytes();
        c.p.fill(0);
        c.p[0] = GSP_FEATURE_UVM_ENABLED;
        c.p[4] = 1;
        c.p[5] = 1;
        let n = version.len().min(GSP_GET_FEATURES_SIZE - 8 - 1);
        c.p[8..8 + n].copy_from_slice(&version[..n]);
        Ok(())
    }

    /// NV2080_CTRL_CMD_GPU_GET_SHORT_NAME_STRING: `gpuShortNameString[64]`
    /// (`ctrl2080gpu.h:335-337`), GSP's short name copied out
    /// (`subdeviceCtrlCmdGpuGetShortNameString_IMPL`,
    /// `subdevice_ctrl_gpu_kernel.c:3231-3242`; `gpuGetShortNameString_KERNEL`
    /// asks the physical RM, `kernel/gpu/gpu_name_kernel.c:58-76`). GUESS:
    /// [`SHORT_NAME`].
    pub(crate) fn gpu_get_short_name_string(&self, mut c: Ctl<'_>) -> StatusResult {
        c.gpu()?;
        c.cleared(64)?;
        c.p[..SHORT_NAME.len()].copy_from_slice(SHORT_NAME);
        Ok(())
    }

    /// NV2080_CTRL_CMD_GPU_QUERY_COMPUTE_MODE_RULES: `rules`, the GPU's
    /// compute mode (`subdeviceCtrlCmdGpuQueryComputeModeRules_IMPL`,
    /// `subdevice_ctrl_gpu_kernel.c:1953-1974`; the vGPU-profile rule does
    /// not apply to bare metal). RM starts at RULES_NONE (0) unless the
    /// registry says otherwise (`kernel/gpu/gpu_registry.c:82-86`); the
    /// double has no registry and no SET_COMPUTE_MODE_RULES, so NONE.
    pub(crate) fn gpu_query_compute_mode_rules(&self, mut c: Ctl<'_>) -> StatusResult {
        c.gpu()?;
        c.cleared(4)?;
        Ok(())
    }

    /// NV0080_CTRL_CMD_FIFO_GET_CHANNELLIST: for each of `numChannels`
    /// handles in the caller's list, the channel's ID (the double's: its
    /// work-submit token), or INVALID_CHANNEL for a handle that is not one
    /// of the client's channels, into the caller's second list
    /// (`deviceCtrlCmdFifoGetChannelList_IMPL`,
    /// `kernel/gpu/fifo/kernel_fifo_ctrl.c:56-95` at 550.163.01); 0 channels
    /// NV_ERR_INVALID_ARGUMENT (`:68-73`). RM copies both lists in and the
    /// second out (`rmapi/embedded_param_copy.c:312-328`): a list over
    /// 1 MiB NV_ERR_INVALID_ARGUMENT, one it cannot read or write
    /// NV_ERR_INVALID_ADDRESS. libcuda asks it in `cuCtxCreate`.
    pub(crate) fn fifo_get_channellist(&self, c: Ctl<'_>) -> StatusResult {
        if c.p.len() != 24 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        let n: u32 = abi::read_field(c.p, 0);
        let handles_at: u64 = abi::read_field(c.p, 8);
        let ids_at: u64 = abi::read_field(c.p, 16);
        let bytes = n as usize * 4;
        if n == 0 || bytes > PARAM_COPY_MAX {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        let (ci, space) = (c.ci, c.space);
        // No copy with RM locked (`Ctl::rm`).
        drop(c.rm);
        let mut handles = KVec::new();
        handles
            .resize(bytes, 0u8, GFP_KERNEL)
            .map_err(|_| NV_ERR_NO_MEMORY)?;
        space
            .read(handles_at, &mut handles)
            .map_err(|_| NV_ERR_INVALID_ADDRESS)?;
        {
            let rm = self.rm.lock();
            let client = rm.clients.get(ci).ok_or(NV_ERR_INVALID_CLIENT)?;
            for h in handles.chunks_exact_mut(4) {
                let handle = u32::from_ne_bytes([h[0], h[1], h[2], h[3]]);
                let id = match client.find(handle).map(|o| o.kind) {
                    Some(ObjKind::Channel { token, .. }) => token,
                    _ => INVALID_CHANNEL,
                };
                h.copy_from_slice(&id.to_ne_bytes());
            }
        }
        space
            .write(ids_at, &handles)
            .map_err(|_| NV_ERR_INVALID_ADDRESS)
    }

    /// NV2080_CTRL_CMD_GPU_ACQUIRE_COMPUTE_MODE_RESERVATION: with MIG off
    /// and the GPU's compute mode RULES_NONE (the double's, see
    /// [`Driver::gpu_query_compute_mode_rules`]), "the caller can always
    /// get the reservation": the GPU's holder becomes the control's
    /// client, NV_OK (`subdeviceCtrlCmdGpuAcquireComputeModeReservation_IMPL`,
    /// `subdevice_ctrl_gpu_kernel.c:1981-2005`). libcuda asks it in
    /// `cuCtxCreate`.
    pub(crate) fn gpu_acquire_compute_mode_reservation(&self, mut c: Ctl<'_>) -> StatusResult {
        let gpu = c.gpu()?;
        if !c.p.is_empty() {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        let client = c.rm.clients[c.ci].handle;
        let slot =
            c.rm.compute_reservation
                .get_mut(gpu as usize)
                .ok_or(NV_ERR_INVALID_ARGUMENT)?;
        *slot = client;
        Ok(())
    }

    /// NV2080_CTRL_CMD_GPU_RELEASE_COMPUTE_MODE_RESERVATION: the holder
    /// gives the reservation up; another client's call is
    /// NV_ERR_STATE_IN_USE (`subdeviceCtrlCmdGpuReleaseComputeModeReservation_IMPL`,
    /// `subdevice_ctrl_gpu_kernel.c:2044-2071`). Freeing the holder's
    /// subdevice gives it up too (`free.rs`).
    pub(crate) fn gpu_release_compute_mode_reservation(&self, mut c: Ctl<'_>) -> StatusResult {
        let gpu = c.gpu()?;
        if !c.p.is_empty() {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        let client = c.rm.clients[c.ci].handle;
        let slot =
            c.rm.compute_reservation
                .get_mut(gpu as usize)
                .ok_or(NV_ERR_INVALID_ARGUMENT)?;
        if *slot != client {
            return Err(NV_ERR_STATE_IN_USE);
        }
        *slot = 0;
        Ok(())
    }

    /// NV2080_CTRL_CMD_RC_RELEASE_WATCHDOG_REQUESTS and
    /// RC_SOFT_DISABLE_WATCHDOG, which libcuda asks in `cuInit`, in that
    /// order. With MIG off RM records the subdevice's request (none, or a
    /// soft disable) in its RC watchdog's counts and may start or stop the
    /// watchdog (`subdeviceCtrlCmdRcReleaseWatchdogRequests_IMPL`,
    /// `subdeviceCtrlCmdRcSoftDisableWatchdog_IMPL`,
    /// `kernel/gpu/rc/kernel_rc_watchdog_ctrl.c:80-122`;
    /// `krcWatchdogChangeState_IMPL`, `kernel_rc_watchdog.c:111-330`).
    /// Only an ENABLE or DISABLE request can conflict (NV_ERR_STATE_IN_USE,
    /// `:247-261`), and the double serves neither (nor GET_WATCHDOG_INFO,
    /// which would show the state), so both are NV_OK and the double keeps
    /// no watchdog state: none of it could be seen.
    pub(crate) fn rc_watchdog_request(&self, c: Ctl<'_>) -> StatusResult {
        c.gpu()?;
        if !c.p.is_empty() {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        Ok(())
    }
}
