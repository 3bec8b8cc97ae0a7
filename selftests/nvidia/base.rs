// SPDX-License-Identifier: GPL-2.0

//! The double's shared vocabulary, at the bottom of its layers: numbers of
//! the NVIDIA nodes, an RM outcome and its status, the fake GPUs' ids and
//! UUIDs, the kinds of RM objects, and where a call's pointers point. It
//! names nothing else of the double.

use kernel::{ffi::c_int, prelude::*};

use crate::kapi::user;
use crate::nv::abi::{self, status::NV_OK};
use crate::nv::uvm::Uuid;

/// The NVIDIA driver's character major.
pub(crate) const NV_MAJOR: u32 = 195;
/// Minor of `/dev/nvidiactl`.
pub(crate) const CTL_MINOR: u32 = 255;
/// Most fake GPUs the double serves.
pub(crate) const MAX_GPUS: usize = 8;

/// An RM-level outcome: `Err(status)` goes into the params' status field.
/// (Not `src/status.rs`'s `RmResult`, which is vgpu's.)
pub(crate) type StatusResult<T = ()> = core::result::Result<T, u32>;

/// The status an outcome reports.
pub(crate) fn status_of(r: StatusResult) -> u32 {
    match r {
        Ok(()) => NV_OK,
        Err(s) => s,
    }
}

extern "C" {
    /// `task_tgid_nr(current)` (`exports.c`).
    fn nv_double_current_tgid() -> c_int;
}

/// The calling task's thread group id, as RM's `osGetCurrentProcess()`.
pub(crate) fn current_tgid() -> i32 {
    // SAFETY: no preconditions; reads the calling task's own id.
    unsafe { nv_double_current_tgid() }
}

/// The gpu_id of fake GPU `i`: GUESS (RM derives it from the PCI location);
/// the double uses bus `i + 1`, so `(bus << 8)`.
pub(crate) const fn gpu_id_of(i: u32) -> u32 {
    (i + 1) << 8
}

/// The heap of a GPU with `vram` bytes.
pub(crate) fn heap_size(vram: u64) -> u64 {
    // GUESS: real boards reserve part of VRAM for RM (RAM_SIZE > HEAP_SIZE).
    // The double reserves 1/64 so readers that confuse the two are caught.
    vram - vram / 64
}

/// The binary UUID of fake GPU `gpu` (what GET_GID_INFO returns with the
/// binary flag and UVM takes): `d0 0b 1e 5e 00 00 40 00 80 00 00 00 00 00
/// 00 NN`, NN = `gpu + 1`. GUESS: real UUIDs are SHA-1 based and opaque;
/// the double's only have to be fixed and distinct per GPU.
pub(crate) fn gpu_uuid(gpu: u32) -> Uuid {
    let mut u = [
        0xd0, 0x0b, 0x1e, 0x5e, 0x00, 0x00, 0x40, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00,
    ];
    u[15] = (gpu + 1) as u8;
    u
}

/// Writes `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` (the text form of
/// GET_GID_INFO) and a NUL into `out`; returns the text's length (40).
pub(crate) fn format_uuid(u: &Uuid, out: &mut [u8]) -> usize {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut text = [0u8; 40];
    text[..4].copy_from_slice(b"GPU-");
    let mut n = 4;
    for (i, &b) in u.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            text[n] = b'-';
            n += 1;
        }
        text[n] = HEX[usize::from(b >> 4)];
        text[n + 1] = HEX[usize::from(b & 0xf)];
        n += 2;
    }
    for (i, slot) in out.iter_mut().take(text.len() + 1).enumerate() {
        *slot = text.get(i).copied().unwrap_or(0);
    }
    text.len()
}

/// Where a control's nested pointers point: user memory (ioctl callers) or
/// kernel memory (kernel clients).
pub(crate) enum Space {
    /// The calling process's memory.
    User,
    /// Kernel memory, for `nvidia_get_rm_ops` callers.
    Kernel,
}

impl Space {
    pub(crate) fn read(&self, addr: u64, out: &mut [u8]) -> Result {
        match self {
            Space::User => user::read(addr, out),
            Space::Kernel => kernel_read(addr, out),
        }
    }

    pub(crate) fn write(&self, addr: u64, data: &[u8]) -> Result {
        match self {
            Space::User => user::write(addr, data),
            Space::Kernel => kernel_write(addr, data),
        }
    }
}

/// Copies `out.len()` bytes from kernel address `addr`.
pub(crate) fn kernel_read(addr: u64, out: &mut [u8]) -> Result {
    if addr == 0 && !out.is_empty() {
        return Err(EFAULT);
    }
    // SAFETY: kernel clients pass kernel pointers to buffers of the sizes
    // they declare (the interface's contract; such callers are trusted
    // kernel code, as with the real driver).
    unsafe {
        core::ptr::copy_nonoverlapping(addr as usize as *const u8, out.as_mut_ptr(), out.len())
    };
    Ok(())
}

/// Copies `data` to kernel address `addr`.
pub(crate) fn kernel_write(addr: u64, data: &[u8]) -> Result {
    if addr == 0 && !data.is_empty() {
        return Err(EFAULT);
    }
    // SAFETY: as in `kernel_read`.
    unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), addr as usize as *mut u8, data.len()) };
    Ok(())
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ObjKind {
    Device {
        gpu: u32,
    },
    Subdevice {
        gpu: u32,
    },
    Memory {
        mem: u32,
    },
    Tsg {
        gpu: u32,
        id: u32,
        /// The VA space handle its alloc params named (0: none).
        vaspace: u32,
        /// The engine its alloc params named (`NV2080_ENGINE_TYPE_*`).
        engine: u32,
        /// Its GR context's buffers (`Rm::mems`; 0: not yet committed).
        grctx: u32,
    },
    Channel {
        gpu: u32,
        token: u32,
        tsg: u32,
        own_tsg: bool,
        /// The VA space it runs in: its own alloc params', else its context
        /// share's, else its TSG's (0: none).
        vaspace: u32,
        /// Its engine (`NV2080_ENGINE_TYPE_*`): its TSG's, or with
        /// `own_tsg` its own alloc params'.
        engine: u32,
        /// Its instance block (`Rm::mems`).
        mem: u32,
        /// With `own_tsg`, its TSG's GR context buffers (`Rm::mems`; 0:
        /// not yet committed).
        grctx: u32,
    },
    /// FERMI_VASPACE_A, with its allocation flags.
    VaSpace {
        gpu: u32,
        flags: u32,
        /// Its top page levels (`Rm::mems`).
        mem: u32,
    },
    /// FERMI_CONTEXT_SHARE_A, with the VA space it named.
    CtxShare {
        vaspace: u32,
    },
    Usermode {
        gpu: u32,
        mem: u32,
    },
    /// An engine object (compute, copy) in a channel: RM's
    /// `ChannelDescendant`, with its class.
    Engine {
        gpu: u32,
        class: u32,
    },
    /// NV50_MEMORY_VIRTUAL: a GPU VA range, with the page tables it holds
    /// (`Rm::mems`).
    VirtualMemory {
        mem: u32,
        /// Where it starts, if the caller fixed it
        /// (`NVOS32_ALLOC_FLAGS_FIXED_ADDRESS_ALLOCATE`); the double does
        /// not place a range itself.
        base: Option<u64>,
        /// Its size in bytes.
        size: u64,
    },
    Other,
}

/// Reads a wire struct of exactly `T::SIZE` bytes from `p`.
pub(crate) fn parse<T: abi::Wire>(p: &[u8]) -> Result<T> {
    if p.len() != T::SIZE {
        return Err(EINVAL);
    }
    Ok(T::decode(p))
}

/// Writes a wire struct into `p`.
pub(crate) fn store<T: abi::Wire>(v: &T, p: &mut [u8]) {
    v.encode(p);
}
