// SPDX-License-Identifier: GPL-2.0

//! The NVIDIA driver's kernel-client interface (`nvidia_get_rm_ops`).
//!
//! `nvidia.ko` exports `nvidia_get_rm_ops(ops)`: the caller names the driver
//! version it was built for in `ops.version_string`; on a match the driver
//! fills in a function table whose `op` runs RM calls at kernel privilege,
//! with kernel pointers inside the parameters (layout from
//! `kernel-open/common/inc/nv-modeset-interface.h` and
//! `src/nvidia/arch/nvalloc/unix/include/nv-kernel-rmapi-ops.h`). On a
//! mismatch it returns an error and points `version_string` at its own
//! version, which [`RmOps::get`] uses to ask again.
//!
//! Every call here copies its parameters into kernel memory it owns: the
//! driver never sees a pointer into user memory through this interface.

use kernel::prelude::*;

use crate::nv::abi::{self, rm_op, status::NV_OK, Wire};

/// Size of the params union of an ops command: larger than any parameter
/// block `op` takes (the largest, NVOS46, is 64 bytes).
const OPS_PARAMS: usize = 256;

/// `nv_gpu_info_t`, one entry of `enumerate_gpus`.
#[repr(C)]
#[derive(Clone, Copy)]
struct GpuInfo {
    gpu_id: u32,
    domain: u32,
    bus: u8,
    slot: u8,
    function: u8,
    os_device_ptr: *mut c_void,
}

/// `NV_MAX_GPUS`: the size of the array `enumerate_gpus` fills.
const MAX_GPUS: usize = 32;

/// `nvidia_modeset_rm_ops_t`.
#[repr(C)]
struct RawOps {
    version_string: *const c_char,
    allow_write_combining: u8,
    alloc_stack: Option<unsafe extern "C" fn(*mut *mut c_void) -> c_int>,
    free_stack: Option<unsafe extern "C" fn(*mut c_void)>,
    enumerate_gpus: Option<unsafe extern "C" fn(*mut GpuInfo) -> u32>,
    open_gpu: Option<unsafe extern "C" fn(u32, *mut c_void) -> c_int>,
    close_gpu: Option<unsafe extern "C" fn(u32, *mut c_void)>,
    op: Option<unsafe extern "C" fn(*mut c_void, *mut c_void)>,
    set_callbacks: Option<unsafe extern "C" fn(*const c_void) -> c_int>,
}

extern "C" {
    fn nvidia_get_rm_ops(ops: *mut RawOps) -> u32;
}

/// The driver's function table, for kernel-privileged RM calls.
pub(crate) struct RmOps {
    alloc_stack: unsafe extern "C" fn(*mut *mut c_void) -> c_int,
    free_stack: unsafe extern "C" fn(*mut c_void),
    enumerate_gpus: unsafe extern "C" fn(*mut GpuInfo) -> u32,
    op: unsafe extern "C" fn(*mut c_void, *mut c_void),
    version: [u8; 64],
}

// SAFETY: the table holds function pointers into the driver, which may be
// called from any thread (each call takes its own stack).
unsafe impl Send for RmOps {}
// SAFETY: as above; `&self` methods only call the driver.
unsafe impl Sync for RmOps {}

fn empty_ops(version: *const c_char) -> RawOps {
    RawOps {
        version_string: version,
        allow_write_combining: 0,
        alloc_stack: None,
        free_stack: None,
        enumerate_gpus: None,
        open_gpu: None,
        close_gpu: None,
        op: None,
        set_callbacks: None,
    }
}

impl RmOps {
    /// Asks the driver for its table, learning its version on the way.
    pub(crate) fn get() -> Result<Self> {
        let mut version = [0u8; 64];
        let mut raw = empty_ops(c"vgpu".as_char_ptr());
        // SAFETY: `raw` is a valid table with a valid version string.
        let st = unsafe { nvidia_get_rm_ops(&mut raw) };
        if st != NV_OK {
            // The driver points `version_string` at its own version.
            if raw.version_string.is_null() {
                return Err(ENODEV);
            }
            // SAFETY: the driver set a valid C string of its own.
            let v = unsafe { CStr::from_char_ptr(raw.version_string) }.to_bytes();
            if v.len() >= version.len() {
                return Err(ENODEV);
            }
            version[..v.len()].copy_from_slice(v);
            raw = empty_ops(version.as_ptr().cast());
            // SAFETY: as above; `version` is NUL-terminated (zeroed tail).
            let st = unsafe { nvidia_get_rm_ops(&mut raw) };
            if st != NV_OK {
                return Err(ENODEV);
            }
        } else {
            version[..4].copy_from_slice(b"vgpu");
        }
        match (raw.alloc_stack, raw.free_stack, raw.enumerate_gpus, raw.op) {
            (Some(alloc_stack), Some(free_stack), Some(enumerate_gpus), Some(op)) => Ok(Self {
                alloc_stack,
                free_stack,
                enumerate_gpus,
                op,
                version,
            }),
            _ => Err(ENODEV),
        }
    }

    /// The driver's version string.
    pub(crate) fn version(&self) -> &[u8] {
        let n = self
            .version
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(self.version.len());
        &self.version[..n]
    }

    /// The gpu_ids the driver knows.
    pub(crate) fn gpu_ids(&self) -> Result<KVec<u32>> {
        let mut infos = KVec::with_capacity(MAX_GPUS, GFP_KERNEL)?;
        for _ in 0..MAX_GPUS {
            infos.push(
                GpuInfo {
                    gpu_id: 0,
                    domain: 0,
                    bus: 0,
                    slot: 0,
                    function: 0,
                    os_device_ptr: core::ptr::null_mut(),
                },
                GFP_KERNEL,
            )?;
        }
        // SAFETY: `infos` holds `MAX_GPUS` entries, as the interface requires.
        let n = unsafe { (self.enumerate_gpus)(infos.as_mut_ptr()) } as usize;
        let mut ids = KVec::new();
        for i in infos.iter().take(n.min(MAX_GPUS)) {
            ids.push(i.gpu_id, GFP_KERNEL)?;
        }
        Ok(ids)
    }

    /// Runs op `op` with `params` (an NVOSxx block) and copies it back.
    fn call(&self, op: u32, params: &mut [u8]) -> Result {
        if params.len() > OPS_PARAMS {
            return Err(EINVAL);
        }
        // On the stack: 264 bytes, and the call does not keep it.
        let mut cmd = [0u8; 8 + OPS_PARAMS];
        cmd[..4].copy_from_slice(&op.to_ne_bytes());
        cmd[8..8 + params.len()].copy_from_slice(params);
        let mut sp: *mut c_void = core::ptr::null_mut();
        // SAFETY: `sp` is a valid place for the stack pointer.
        if unsafe { (self.alloc_stack)(&mut sp) } != 0 {
            return Err(ENOMEM);
        }
        // SAFETY: `cmd` is an ops command (op, then the params union at 8)
        // of the union's size; pointers inside `params` point to kernel
        // buffers the caller keeps alive across this call. `sp` came from
        // `alloc_stack`.
        unsafe { (self.op)(sp, cmd.as_mut_ptr().cast()) };
        // SAFETY: `sp` came from `alloc_stack` and is freed once.
        unsafe { (self.free_stack)(sp) };
        let n = params.len();
        params.copy_from_slice(&cmd[8..8 + n]);
        Ok(())
    }

    /// NV04_CONTROL on `(h_client, h_object)` with `params` (kernel copy).
    /// Returns the RM status.
    pub(crate) fn control(
        &self,
        h_client: u32,
        h_object: u32,
        cmd: u32,
        params: &mut [u8],
    ) -> Result<u32> {
        let mut a = abi::Nvos54 {
            h_client,
            h_object,
            cmd,
            params: params.as_mut_ptr() as u64,
            params_size: u32::try_from(params.len()).map_err(|_| EINVAL)?,
            ..Default::default()
        };
        let mut b = a.to_bytes();
        self.call(rm_op::CONTROL, &mut b)?;
        a = abi::Nvos54::decode(&b);
        Ok(a.status)
    }

    /// NV04_ALLOC of class `class` under `h_parent` of client `h_root`
    /// (`h_root == 0` and a root class: a new client). `h_new` 0 lets RM
    /// choose. Returns the handle, or the RM status as `Err`.
    pub(crate) fn alloc(
        &self,
        h_root: u32,
        h_parent: u32,
        h_new: u32,
        class: u32,
        params: &mut [u8],
    ) -> Result<core::result::Result<u32, u32>> {
        let mut a = abi::Nvos21 {
            h_root,
            h_object_parent: h_parent,
            h_object_new: h_new,
            h_class: class,
            p_alloc_parms: if params.is_empty() {
                0
            } else {
                params.as_mut_ptr() as u64
            },
            params_size: u32::try_from(params.len()).map_err(|_| EINVAL)?,
            ..Default::default()
        };
        let mut b = a.to_bytes();
        self.call(rm_op::ALLOC, &mut b)?;
        a = abi::Nvos21::decode(&b);
        Ok(if a.status == NV_OK {
            Ok(a.h_object_new)
        } else {
            Err(a.status)
        })
    }

    /// NV04_DUP_OBJECT: a handle `h_new` (0: RM picks) under `h_parent` of
    /// client `h_client` for object `h_obj_src` of client `h_client_src`.
    /// Returns the handle, or the RM status as `Err`.
    pub(crate) fn dup(
        &self,
        h_client: u32,
        h_parent: u32,
        h_new: u32,
        h_client_src: u32,
        h_obj_src: u32,
    ) -> Result<core::result::Result<u32, u32>> {
        let a = abi::Nvos55 {
            h_client,
            h_parent,
            h_object: h_new,
            h_client_src,
            h_object_src: h_obj_src,
            flags: 0,
            status: 0,
        };
        let mut b = a.to_bytes();
        self.call(rm_op::DUP, &mut b)?;
        let a = abi::Nvos55::decode(&b);
        Ok(if a.status == NV_OK {
            Ok(a.h_object)
        } else {
            Err(a.status)
        })
    }

    /// NV01_FREE of `h_obj` (the client itself when `h_obj == h_root`).
    /// Returns the RM status.
    pub(crate) fn free(&self, h_root: u32, h_parent: u32, h_obj: u32) -> Result<u32> {
        let a = abi::Nvos00 {
            h_root,
            h_object_parent: h_parent,
            h_object_old: h_obj,
            status: 0,
        };
        let mut b = a.to_bytes();
        self.call(rm_op::FREE, &mut b)?;
        Ok(abi::Nvos00::decode(&b).status)
    }

    /// NV04_MAP_MEMORY at kernel privilege: the kernel address of `length`
    /// bytes at `offset` of memory `h_memory` (under `h_device` of client
    /// `h_client`), or the RM status as `Err`. The address stays valid until
    /// [`RmOps::unmap_memory`] or until `h_memory` is freed.
    pub(crate) fn map_memory(
        &self,
        h_client: u32,
        h_device: u32,
        h_memory: u32,
        offset: u64,
        length: u64,
    ) -> Result<core::result::Result<usize, u32>> {
        let a = abi::Nvos33 {
            h_client,
            h_device,
            h_memory,
            offset,
            length,
            ..Default::default()
        };
        let mut b = a.to_bytes();
        self.call(rm_op::MAP_MEMORY, &mut b)?;
        let a = abi::Nvos33::decode(&b);
        Ok(match (a.status, usize::try_from(a.p_linear_address)) {
            (NV_OK, Ok(addr)) if addr != 0 => Ok(addr),
            (NV_OK, _) => Err(abi::status::NV_ERR_INVALID_ADDRESS),
            (st, _) => Err(st),
        })
    }

    /// NV04_UNMAP_MEMORY of an address [`RmOps::map_memory`] gave. Returns
    /// the RM status.
    pub(crate) fn unmap_memory(
        &self,
        h_client: u32,
        h_device: u32,
        h_memory: u32,
        addr: usize,
    ) -> Result<u32> {
        let a = abi::Nvos34 {
            h_client,
            h_device,
            h_memory,
            p_linear_address: addr as u64,
            ..Default::default()
        };
        let mut b = a.to_bytes();
        self.call(rm_op::UNMAP_MEMORY, &mut b)?;
        Ok(abi::Nvos34::decode(&b).status)
    }

    /// An arbitrary op with an NVOS00-sized block, for testing refusals.
    pub(crate) fn raw_op(&self, op: u32, params: &mut [u8]) -> Result {
        self.call(op, params)
    }
}
