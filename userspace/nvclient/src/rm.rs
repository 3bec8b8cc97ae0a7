// SPDX-License-Identifier: GPL-2.0

//! Resource manager calls on the control node: version, cards, clients,
//! objects, controls.

use crate::abi::{
    self, class, ctrl, version, CardInfo, ClassListV2Params, DeviceAllocParams,
    GpuGetAttachedIdsParams, GpuGetIdInfoV2Params, Handle, Nvos00, Nvos21, Nvos54, Nvos55, Nvos57,
    Nvos64, RmApiVersion, RsSharePolicy, SubdeviceAllocParams, Wire,
};
use crate::ioctl::Escape;
use crate::{len_u32, rm_result, user_ptr, Ctl, Error, Node, Result};

/// The three forms of CHECK_VERSION_STR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VersionCheck {
    /// Compare the whole string (`cmd` 0).
    Strict,
    /// Compare up to the first '.' (`cmd` '1').
    Relaxed,
    /// Copy the driver's version out (`cmd` '2').
    Query,
}

impl VersionCheck {
    /// The `cmd` value.
    pub fn cmd(self) -> u32 {
        match self {
            VersionCheck::Strict => version::CMD_STRICT,
            VersionCheck::Relaxed => version::CMD_RELAXED,
            VersionCheck::Query => version::CMD_QUERY,
        }
    }
}

/// The NVOS64 block of an RM_ALLOC whose params live at `params_ptr`.
pub(crate) fn nvos64(
    h_client: Handle,
    h_parent: Handle,
    h_new: Handle,
    class: u32,
    params_ptr: u64,
    params_size: u32,
) -> Nvos64 {
    Nvos64 {
        h_root: h_client,
        h_object_parent: h_parent,
        h_object_new: h_new,
        h_class: class,
        p_alloc_parms: params_ptr,
        params_size,
        ..Default::default()
    }
}

/// RM_ALLOC (NVOS64) on `node`, a ctl node ([`Ctl::alloc`]) or a GPU
/// node ([`crate::Gpu::alloc`]). Returns the new handle.
pub(crate) fn alloc_on(
    node: &Node,
    h_client: Handle,
    h_parent: Handle,
    h_new: Handle,
    class: u32,
    params: &mut [u8],
) -> Result<Handle> {
    let p = nvos64(
        h_client,
        h_parent,
        h_new,
        class,
        user_ptr(params),
        len_u32(params)?,
    );
    let mut b = p.to_bytes();
    // `params` stays exclusively borrowed across the ioctl, so RM's
    // accesses through `p_alloc_parms` are the only ones.
    node.ioctl(Escape::RmAlloc.nr(), &mut b)?;
    let out = Nvos64::decode(&b);
    rm_result(out.status)?;
    Ok(out.h_object_new)
}

impl Ctl {
    /// CHECK_VERSION_STR. Returns the reply block (for
    /// [`VersionCheck::Query`], [`RmApiVersion::version`] is the driver's
    /// version). A mismatch is `Err(Error::Os(EINVAL))`.
    pub fn check_version(&self, check: VersionCheck, client_version: &str) -> Result<RmApiVersion> {
        let mut p = RmApiVersion::new(check.cmd(), client_version.as_bytes());
        self.ioctl_with(Escape::CheckVersionStr.nr(), &mut p)?;
        Ok(p)
    }

    /// The driver's version string (a [`VersionCheck::Query`]).
    pub fn driver_version(&self) -> Result<String> {
        let r = self.check_version(VersionCheck::Query, "")?;
        Ok(String::from_utf8_lossy(r.version()).into_owned())
    }

    /// CARD_INFO with room for `max_gpus` records; returns the valid ones.
    /// The driver refuses (EINVAL) a buffer smaller than its number of GPUs.
    pub fn card_info(&self, max_gpus: usize) -> Result<Vec<CardInfo>> {
        if max_gpus == 0 {
            return Err(Error::Invalid("CARD_INFO needs room for one record"));
        }
        let mut b = vec![0u8; max_gpus.saturating_mul(CardInfo::SIZE)];
        self.ioctl(Escape::CardInfo.nr(), &mut b)?;
        Ok(b.chunks_exact(CardInfo::SIZE)
            .map(CardInfo::decode)
            .filter(CardInfo::is_valid)
            .collect())
    }

    /// ATTACH_GPUS_TO_FD with these gpu ids (once per file).
    pub fn attach_gpus(&self, gpu_ids: &[u32]) -> Result<()> {
        let mut b = vec![0u8; gpu_ids.len() * 4];
        for (chunk, id) in b.chunks_exact_mut(4).zip(gpu_ids) {
            id.encode(chunk);
        }
        self.ioctl(Escape::AttachGpusToFd.nr(), &mut b)
    }

    /// RM_ALLOC (NVOS64 layout, what current libcuda sends) of `class` under
    /// `h_parent`, with `params` as the class's alloc params (the driver
    /// reads and may write them). `h_new` 0 lets RM pick the handle. Returns
    /// the new handle.
    pub fn alloc(
        &self,
        h_client: Handle,
        h_parent: Handle,
        h_new: Handle,
        class: u32,
        params: &mut [u8],
    ) -> Result<Handle> {
        alloc_on(self, h_client, h_parent, h_new, class, params)
    }

    /// RM_ALLOC in the 32-byte NVOS21 layout (older clients); otherwise as
    /// [`Ctl::alloc`].
    pub fn alloc_v21(
        &self,
        h_client: Handle,
        h_parent: Handle,
        h_new: Handle,
        class: u32,
        params: &mut [u8],
    ) -> Result<Handle> {
        let p = Nvos21 {
            h_root: h_client,
            h_object_parent: h_parent,
            h_object_new: h_new,
            h_class: class,
            p_alloc_parms: user_ptr(params),
            params_size: len_u32(params)?,
            status: 0,
        };
        let mut b = p.to_bytes();
        self.ioctl(Escape::RmAlloc.nr(), &mut b)?;
        let out = Nvos21::decode(&b);
        rm_result(out.status)?;
        Ok(out.h_object_new)
    }

    /// [`Ctl::alloc`] with typed alloc params, decoded back after the call.
    pub fn alloc_with<T: Wire>(
        &self,
        h_client: Handle,
        h_parent: Handle,
        h_new: Handle,
        class: u32,
        params: &mut T,
    ) -> Result<Handle> {
        let mut b = vec![0u8; T::SIZE];
        params.encode(&mut b);
        let h = self.alloc(h_client, h_parent, h_new, class, &mut b)?;
        *params = T::decode(&b);
        Ok(h)
    }

    /// Allocates a client (NV01_ROOT_CLIENT); RM picks the handle.
    pub fn alloc_root_client(&self) -> Result<Handle> {
        self.alloc(0, 0, 0, class::NV01_ROOT_CLIENT, &mut [])
    }

    /// RM_FREE of `h_object` (its children go too; freeing the client handle
    /// frees the client).
    pub fn free(&self, h_client: Handle, h_parent: Handle, h_object: Handle) -> Result<()> {
        let mut p = Nvos00 {
            h_root: h_client,
            h_object_parent: h_parent,
            h_object_old: h_object,
            status: 0,
        };
        self.ioctl_with(Escape::RmFree.nr(), &mut p)?;
        rm_result(p.status)
    }

    /// RM_CONTROL `cmd` on `h_object` with `params` (read and written by RM).
    pub fn control(
        &self,
        h_client: Handle,
        h_object: Handle,
        cmd: u32,
        params: &mut [u8],
    ) -> Result<()> {
        let p = Nvos54 {
            h_client,
            h_object,
            cmd,
            flags: 0,
            params: user_ptr(params),
            params_size: len_u32(params)?,
            status: 0,
        };
        let mut b = p.to_bytes();
        // `params` stays exclusively borrowed across the ioctl.
        self.ioctl(Escape::RmControl.nr(), &mut b)?;
        rm_result(Nvos54::decode(&b).status)
    }

    /// [`Ctl::control`] with typed params, decoded back after the call.
    pub fn control_with<T: Wire>(
        &self,
        h_client: Handle,
        h_object: Handle,
        cmd: u32,
        params: &mut T,
    ) -> Result<()> {
        // The params as the release the library speaks sizes them: older
        // releases' blocks are prefixes (shorter lists, fields added at the
        // end), whose missing tail reads back as zero.
        let n = crate::speaks().params_size(cmd).unwrap_or(T::SIZE);
        let mut b = vec![0u8; n.max(T::SIZE)];
        params.encode(&mut b);
        b[n..].fill(0);
        self.control(h_client, h_object, cmd, &mut b[..n])?;
        *params = T::decode(&b);
        Ok(())
    }

    /// RM_DUP_OBJECT: duplicates `h_object_src` of `h_client_src` as a child
    /// of `h_parent` in `h_client`. Returns the new handle.
    pub fn dup_object(
        &self,
        h_client: Handle,
        h_parent: Handle,
        h_new: Handle,
        h_client_src: Handle,
        h_object_src: Handle,
        flags: u32,
    ) -> Result<Handle> {
        let mut p = Nvos55 {
            h_client,
            h_parent,
            h_object: h_new,
            h_client_src,
            h_object_src,
            flags,
            status: 0,
        };
        self.ioctl_with(Escape::RmDupObject.nr(), &mut p)?;
        rm_result(p.status)?;
        Ok(p.h_object)
    }

    /// RM_SHARE: shares `h_object` under `policy`.
    pub fn share(&self, h_client: Handle, h_object: Handle, policy: RsSharePolicy) -> Result<()> {
        let mut p = Nvos57 {
            h_client,
            h_object,
            share_policy: policy,
            status: 0,
        };
        self.ioctl_with(Escape::RmShare.nr(), &mut p)?;
        rm_result(p.status)
    }

    /// NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2: the device and subdevice instance
    /// of a gpu id (CARD_INFO's `gpu_id`).
    pub fn gpu_id_info(&self, h_client: Handle, gpu_id: u32) -> Result<GpuGetIdInfoV2Params> {
        let mut p = GpuGetIdInfoV2Params {
            gpu_id,
            ..Default::default()
        };
        self.control_with(
            h_client,
            h_client,
            ctrl::NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2,
            &mut p,
        )?;
        Ok(p)
    }

    /// NV0000_CTRL_CMD_GPU_GET_ATTACHED_IDS: the attached gpu ids.
    pub fn attached_gpu_ids(&self, h_client: Handle) -> Result<Vec<u32>> {
        let mut p = GpuGetAttachedIdsParams::default();
        self.control_with(
            h_client,
            h_client,
            ctrl::NV0000_CTRL_CMD_GPU_GET_ATTACHED_IDS,
            &mut p,
        )?;
        Ok(p.ids().collect())
    }

    /// Allocates NV01_DEVICE_0 with `deviceId = device_id` (the gpu's
    /// `device_instance`). The driver requires this process to hold an open
    /// GPU node of that GPU.
    pub fn alloc_device(&self, h_client: Handle, h_new: Handle, device_id: u32) -> Result<Handle> {
        let mut p = DeviceAllocParams {
            device_id,
            ..Default::default()
        };
        self.alloc_with(h_client, h_client, h_new, class::NV01_DEVICE_0, &mut p)
    }

    /// Allocates NV20_SUBDEVICE_0 `subdevice_id` under `h_device`.
    pub fn alloc_subdevice(
        &self,
        h_client: Handle,
        h_device: Handle,
        h_new: Handle,
        subdevice_id: u32,
    ) -> Result<Handle> {
        let mut p = SubdeviceAllocParams {
            sub_device_id: subdevice_id,
        };
        self.alloc_with(h_client, h_device, h_new, class::NV20_SUBDEVICE_0, &mut p)
    }

    /// NV0080_CTRL_CMD_GPU_GET_CLASSLIST_V2: the classes the device supports.
    pub fn class_list(&self, h_client: Handle, h_device: Handle) -> Result<Vec<u32>> {
        let mut p = ClassListV2Params::default();
        self.control_with(
            h_client,
            h_device,
            ctrl::NV0080_CTRL_CMD_GPU_GET_CLASSLIST_V2,
            &mut p,
        )?;
        Ok(p.classes().to_vec())
    }

    /// NV2080_CTRL_CMD_GPU_GET_INFO_V2 for `indices` on a subdevice.
    pub fn gpu_info(
        &self,
        h_client: Handle,
        h_subdevice: Handle,
        indices: &[u32],
    ) -> Result<Vec<abi::InfoEntry>> {
        let mut p = abi::GpuGetInfoV2Params::new(indices);
        self.control_with(
            h_client,
            h_subdevice,
            ctrl::NV2080_CTRL_CMD_GPU_GET_INFO_V2,
            &mut p,
        )?;
        Ok(p.entries().to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_commands() {
        assert_eq!(VersionCheck::Strict.cmd(), 0);
        assert_eq!(VersionCheck::Relaxed.cmd(), u32::from(b'1'));
        assert_eq!(VersionCheck::Query.cmd(), u32::from(b'2'));
    }

    #[test]
    fn alloc_block() {
        let p = nvos64(
            0xc1d0_0001,
            0xc1d0_0001,
            0,
            class::NV01_DEVICE_0,
            0x1000,
            56,
        );
        let b = p.to_bytes();
        assert_eq!(b.len(), 48);
        assert_eq!(&b[0..4], &0xc1d0_0001u32.to_ne_bytes());
        assert_eq!(&b[12..16], &0x80u32.to_ne_bytes());
        assert_eq!(&b[16..24], &0x1000u64.to_ne_bytes());
        assert_eq!(&b[24..32], &[0; 8]); // no rights requested
        assert_eq!(&b[32..36], &56u32.to_ne_bytes());
        assert_eq!(&b[36..40], &[0; 4]); // not FINN-serialized
    }
}
