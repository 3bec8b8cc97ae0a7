// SPDX-License-Identifier: GPL-2.0

//! The NV0000 controls the double answers, on a client: the driver's build,
//! the CPU, and the GPUs RM probed and attached.

use kernel::prelude::*;

use super::call::{parse_params, Ctl};
use super::state::Driver;
use crate::base::{format_uuid, gpu_id_of, gpu_uuid, store, Space, StatusResult};
use crate::nv::abi::{self, ctrl, status::*};
use crate::settings::{self, release};

impl Driver {
    /// NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2 ([`build_version_v2_into`]).
    pub(crate) fn build_version_v2(&self, c: Ctl<'_>) -> StatusResult {
        build_version_v2_into(c.cmd, c.p)
    }

    /// NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION ([`build_version_v1_from`]).
    /// It writes through the caller's pointers, which may fault and take
    /// mmap_lock: not under the RM lock, which the UVM node's mmap takes
    /// under mmap_lock (lockdep found the inversion).
    pub(crate) fn build_version_v1(&self, c: Ctl<'_>) -> StatusResult {
        drop(c.rm);
        build_version_v1_from(c.p, c.space)
    }

    /// NV0000_CTRL_CMD_GPU_GET_PROBED_IDS ([`probed_ids_into`]).
    pub(crate) fn probed_ids(&self, c: Ctl<'_>) -> StatusResult {
        probed_ids_into(self.gpus.len(), c.p)
    }

    /// NV0000_CTRL_CMD_SYSTEM_GET_CPU_INFO ([`cpu_info_into`]).
    pub(crate) fn cpu_info(&self, c: Ctl<'_>) -> StatusResult {
        cpu_info_into(c.cmd, c.p)
    }

    /// NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2: the instances of the GPU with
    /// `gpuId`.
    pub(crate) fn id_info_v2(&self, c: Ctl<'_>) -> StatusResult {
        let mut q: abi::GpuGetIdInfoV2Params = parse_params(c.p)?;
        let i = (0..self.gpus.len() as u32)
            .find(|&i| gpu_id_of(i) == q.gpu_id)
            .ok_or(NV_ERR_INVALID_ARGUMENT)?;
        q.device_instance = i;
        q.sub_device_instance = 0;
        q.gpu_instance = i;
        q.numa_id = -1;
        store(&q, c.p);
        Ok(())
    }

    /// NV0000_CTRL_CMD_GPU_GET_UUID_FROM_GPU_ID: the GPU's UUID, as
    /// GET_GID_INFO gives it, for `flags`; `NV_ERR_OBJECT_NOT_FOUND` for an
    /// id RM has no GPU of (`cliresCtrlCmdGpuGetUuidFromGpuId_IMPL`,
    /// `client_resource.c:4618-4660` at 595.45.04, `:4189-4231` at
    /// 550.163.01). Params: `gpuId`, `flags`, `gpuUuid[256]`, `uuidStrLen`
    /// (`ctrl0000gpu.h:630-635`).
    pub(crate) fn uuid_from_gpu_id(&self, c: Ctl<'_>) -> StatusResult {
        if c.p.len() != 268 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        let word = |i: usize| u32::from_ne_bytes([c.p[i], c.p[i + 1], c.p[i + 2], c.p[i + 3]]);
        let gpu = self
            .probed_index(word(0))
            .map_err(|_| NV_ERR_OBJECT_NOT_FOUND)?;
        let flags = word(4);
        let uuid = gpu_uuid(gpu);
        let out = &mut c.p[8..264];
        out.fill(0);
        let len = if flags & abi::GID_FLAGS_FORMAT_BINARY != 0 {
            out[..uuid.len()].copy_from_slice(&uuid);
            uuid.len()
        } else {
            format_uuid(&uuid, out) + 1
        };
        c.p[264..268].copy_from_slice(&(len as u32).to_ne_bytes());
        Ok(())
    }

    /// The index of the GPU with id `id`: `NV_ERR_INVALID_ARGUMENT` if no
    /// fake GPU has it (every fake GPU is probed and attached).
    fn probed_index(&self, id: u32) -> StatusResult<u32> {
        self.probed(id).ok_or(NV_ERR_INVALID_ARGUMENT)
    }

    /// NV0000_CTRL_CMD_GPU_GET_DEVICE_IDS: the mask of the attached GPUs'
    /// device instances (`gpumgrGetDeviceInstanceMask`,
    /// `client_resource.c:1518-1529`, `gpu_mgr.c:1782-1795` at 595.45.04):
    /// fake GPU `i` is device instance `i` (as ID_INFO_V2 says).
    pub(crate) fn device_ids(&self, c: Ctl<'_>) -> StatusResult {
        if c.p.len() != 4 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        let mask = (0..self.gpus.len().min(32)).fold(0u32, |m, i| m | 1 << i);
        c.p.copy_from_slice(&mask.to_ne_bytes());
        Ok(())
    }

    /// NV0000_CTRL_CMD_GPU_GET_ACTIVE_DEVICE_IDS: every probed GPU, none in
    /// MIG mode, so `{gpuId, NV0000_CTRL_GPU_INVALID_ID,
    /// NV0000_CTRL_GPU_INVALID_ID}` each, in probe order, and their count
    /// (`gpumgrCacheGetActiveDeviceIds`, `gpu_mgr.c:4445-4537` at
    /// 595.45.04; params `ctrl0000gpu.h:996-1026`).
    pub(crate) fn active_device_ids(&self, c: Ctl<'_>) -> StatusResult {
        const ENTRY: usize = 12;
        if c.p.len() != 4 + 256 * ENTRY {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        let n = self.gpus.len().min(256);
        c.p.fill(0);
        c.p[..4].copy_from_slice(&(n as u32).to_ne_bytes());
        for (i, e) in c.p[4..].chunks_exact_mut(ENTRY).take(n).enumerate() {
            e[..4].copy_from_slice(&gpu_id_of(i as u32).to_ne_bytes());
            e[4..8].copy_from_slice(&abi::GPU_INVALID_ID.to_ne_bytes());
            e[8..].copy_from_slice(&abi::GPU_INVALID_ID.to_ne_bytes());
        }
        Ok(())
    }

    /// NV0000_CTRL_CMD_GPU_GET_ATTACHED_IDS: every fake GPU.
    pub(crate) fn attached_ids(&self, c: Ctl<'_>) -> StatusResult {
        let mut q: abi::GpuGetAttachedIdsParams = parse_params(c.p)?;
        q.gpu_ids = [abi::GPU_INVALID_ID; 32];
        for i in 0..self.gpus.len() {
            q.gpu_ids[i] = gpu_id_of(i as u32);
        }
        store(&q, c.p);
        Ok(())
    }
}

/// The build constants of each release the double can claim: its
/// `NV_BUILD_BRANCH`, `NV_BUILD_BRANCH_VERSION` (also its `NV_BUILD_NAME`)
/// and `NV_BUILD_CHANGELIST_NUM` (also `NV_LAST_OFFICIAL_CHANGELIST_NUM`),
/// Linux values of `src/common/inc/nvBldVer.h:38-50` at each tag. The
/// changelist is the official build's (550.163.01's real driver answered
/// 0x101 with "rel/gpu_drv/r550/r553_74-609" and 35802577).
const BUILDS: [(&str, &str, &str, u32); 8] = [
    (
        "595.45.04",
        "r595_59",
        "rel/gpu_drv/r595/r595_59-167",
        37420354,
    ),
    (
        "590.48.01",
        "r591_47",
        "rel/gpu_drv/r590/r591_47-174",
        37007394,
    ),
    (
        "580.142",
        "r580_00",
        "rel/gpu_drv/r580/r580_00-480",
        37438274,
    ),
    (
        "580.105.08",
        "r581_66",
        "rel/gpu_drv/r580/r581_66-314",
        36773567,
    ),
    (
        "570.211.01",
        "r573_96",
        "rel/gpu_drv/r570/r573_96-1",
        36945344,
    ),
    (
        "550.163.01",
        "r553_74",
        "rel/gpu_drv/r550/r553_74-609",
        35802577,
    ),
    (
        "535.288.01",
        "r539_62",
        "rel/gpu_drv/r535/r539_62-1069",
        36903621,
    ),
    (
        "535.261.03",
        "r539_41",
        "rel/gpu_drv/r535/r539_41-927",
        36124219,
    ),
];

/// NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2 as RM answers it at the
/// claimed release (`cliresCtrlCmdSystemGetBuildVersionV2_IMPL`,
/// `src/nvidia/src/kernel/rmapi/client_resource.c:833-859` at 595.45.04,
/// `:834-857` at 550.163.01): each string and its NUL copied into its
/// 256-byte buffer (the rest of the buffer left as the caller sent it),
/// then the two changelist numbers. The buffers are `driverVersionBuffer`,
/// `versionBuffer`, `driverBranch` (from 560 only: 776 bytes without it,
/// `ctrl0000system.h:2266-2272` at 550.163.01) and `titleBuffer`
/// (`ctrl0000system.h:2352-2359` at 595.45.04). GUESS: the title is
/// `NV_DISPLAY_DRIVER_TITLE` as the header composes it for an official
/// build ("Official BRANCH NAME AUTHOR", `nvBldVer.h:71`), with the
/// header's default author; NVIDIA's build may set another. A release
/// without a [`BUILDS`] entry (560.35.05, which the double claims only for
/// vgpu to refuse) gets its version string and empty build strings.
fn build_version_v2_into(cmd: u32, p: &mut [u8]) -> StatusResult {
    /// Writes `parts` joined by spaces, and a NUL, at `p[at..]`.
    fn put(p: &mut [u8], mut at: usize, parts: &[&str]) -> StatusResult {
        for (i, s) in parts.iter().enumerate() {
            if i > 0 {
                *p.get_mut(at).ok_or(NV_ERR_INVALID_STATE)? = b' ';
                at += 1;
            }
            p.get_mut(at..at + s.len())
                .ok_or(NV_ERR_INVALID_STATE)?
                .copy_from_slice(s.as_bytes());
            at += s.len();
        }
        *p.get_mut(at).ok_or(NV_ERR_INVALID_STATE)? = 0;
        Ok(())
    }
    const LEN: usize = 256;
    if p.len() != settings::abi().params_size(cmd).unwrap_or(4 * LEN + 8) {
        return Err(NV_ERR_INVALID_ARGUMENT);
    }
    let version = release();
    let build = BUILDS.iter().find(|b| b.0 == version);
    let (branch, name, cl) = build.map_or(("", "", 0), |b| (b.1, b.2, b.3));
    // The open modules built from NVIDIA's sources (Debian's among them)
    // are not buildmeister builds: `NV_BUILD_TYPE` is "Private" and
    // `NV_BUILD_CHANGELIST_NUM` is `DVS_SW_CHANGELIST`, 0
    // (`nvBldVer.h:17-27, 62-69` at 550.163.01; the real 550.163.01 open
    // module answers so). NVIDIA's own binary builds say "Official" and
    // give the changelist twice.
    let title = ["Private", branch, name, "unknown"];
    let title: &[&str] = if build.is_some() { &title } else { &[] };
    let (v, nm, br) = ([version], [name], [branch]);
    let with_branch = p.len() == 4 * LEN + 8;
    let fields: [&[&str]; 4] = if with_branch {
        [&v, &nm, &br, title]
    } else {
        [&v, &nm, title, &[]]
    };
    let count = if with_branch { 4 } else { 3 };
    for (k, parts) in fields.iter().take(count).enumerate() {
        put(p, k * LEN, parts)?;
    }
    for (k, n) in [0, cl].into_iter().enumerate() {
        let at = count * LEN + 4 * k;
        p.get_mut(at..at + 4)
            .ok_or(NV_ERR_INVALID_STATE)?
            .copy_from_slice(&n.to_ne_bytes());
    }
    Ok(())
}

/// NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION, the deprecated form RM serves
/// from the V2 control (`rmapi_deprecated_control.c:453-560` at
/// 550.163.01): with any of the three string pointers NULL, only
/// `sizeOfStrings` (the longest string and its NUL); else each string and
/// its NUL copied through its pointer (NV_ERR_INVALID_PARAM_STRUCT if
/// `sizeOfStrings` is smaller than that, or a copy fails), then the two
/// changelists. Params: `sizeOfStrings` at 0, the pointers at 8, 16 and 24,
/// the changelists at 32 and 36 (`ctrl0000system.h:117-124`).
fn build_version_v1_from(p: &mut [u8], space: &Space) -> StatusResult {
    const LEN: usize = 256;
    if p.len() != 40 {
        return Err(NV_ERR_INVALID_ARGUMENT);
    }
    let v2_size = settings::abi()
        .params_size(ctrl::NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2)
        .unwrap_or(4 * LEN + 8);
    let mut v2 = KVec::new();
    v2.resize(v2_size, 0u8, GFP_KERNEL)
        .map_err(|_| NV_ERR_NO_MEMORY)?;
    build_version_v2_into(ctrl::NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2, &mut v2)?;
    // The driver version, the version and the title (the branch, from
    // 560, is not in the V1 form).
    let title_at = if v2_size == 4 * LEN + 8 {
        3 * LEN
    } else {
        2 * LEN
    };
    let string = |at: usize| -> StatusResult<&[u8]> {
        let b = v2.get(at..at + LEN).ok_or(NV_ERR_INVALID_STATE)?;
        Ok(&b[..=b.iter().position(|&c| c == 0).unwrap_or(LEN - 1)])
    };
    let strings = [string(0)?, string(LEN)?, string(title_at)?];
    let longest = strings.iter().map(|s| s.len()).max().unwrap_or(0) as u32;
    let mut a = [0u8; 40];
    a.copy_from_slice(p);
    let word = |at: usize| u64::from_ne_bytes(a[at..at + 8].try_into().unwrap_or([0; 8]));
    let ptrs = [word(8), word(16), word(24)];
    if ptrs.contains(&0) {
        p[0..4].copy_from_slice(&longest.to_ne_bytes());
        return Ok(());
    }
    if u32::from_ne_bytes([a[0], a[1], a[2], a[3]]) < longest {
        return Err(NV_ERR_INVALID_PARAM_STRUCT);
    }
    for (ptr, s) in ptrs.iter().zip(strings.iter()) {
        space
            .write(*ptr, s)
            .map_err(|_| NV_ERR_INVALID_PARAM_STRUCT)?;
    }
    let cls = v2.get(v2_size - 8..v2_size).ok_or(NV_ERR_INVALID_STATE)?;
    p[32..40].copy_from_slice(cls);
    Ok(())
}

/// NV0000_CTRL_CMD_SYSTEM_GET_CPU_INFO: RM describes the host's CPU from
/// CPUID (`cliresCtrlCmdSystemGetCpuInfo_IMPL`, `client_resource.c:1026`
/// at 550.163.01). GUESS: the double models no CPU and answers zeros; the
/// real-driver lane compares only the status.
fn cpu_info_into(cmd: u32, p: &mut [u8]) -> StatusResult {
    if p.len() != settings::abi().params_size(cmd).unwrap_or(p.len()) {
        return Err(NV_ERR_INVALID_ARGUMENT);
    }
    p.fill(0);
    Ok(())
}

/// NV0000_CTRL_CMD_GPU_GET_PROBED_IDS: the GPUs RM probed, in `gpuIds`,
/// and those it excluded, in `excludedGpuIds`, each list 32 ids with
/// unused slots NV0000_CTRL_GPU_INVALID_ID (`cliresCtrlCmdGpuGetProbedIds_IMPL`,
/// `client_resource.c` at 550.163.01; `ctrl0000gpu.h:290-293`). The double
/// excludes none.
fn probed_ids_into(gpus: usize, p: &mut [u8]) -> StatusResult {
    const MAX: usize = 32;
    // gpuIds, excludedGpuIds, and from 580 on gpuFlags (`ctrl0000gpu.h:316-320`
    // at 595.45.04): the flags are 0.
    if p.len() != 2 * 4 * MAX && p.len() != 3 * 4 * MAX {
        return Err(NV_ERR_INVALID_ARGUMENT);
    }
    for (k, slot) in p.chunks_exact_mut(4).enumerate() {
        let id = if k < gpus.min(MAX) {
            gpu_id_of(k as u32)
        } else if k < 2 * MAX {
            abi::GPU_INVALID_ID
        } else {
            0
        };
        slot.copy_from_slice(&id.to_ne_bytes());
    }
    Ok(())
}
