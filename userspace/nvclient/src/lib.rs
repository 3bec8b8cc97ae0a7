// SPDX-License-Identifier: GPL-2.0

//! A client of the NVIDIA driver's userspace ABI, speaking it the way libcuda
//! does, for vgpu's tests and benchmarks.
//!
//! It talks to whatever sits behind the device nodes: the real driver, vgpu's
//! proxy nodes, or the test double of the driver. Parameter layouts and
//! constants come from vgpu's own core-only ABI files (`src/nv/abi/`,
//! `src/nv/ioctl.rs`, re-exported here as [`abi`] and [`ioctl`]), so the
//! client and the module agree by construction and host tests pin both.
//!
//! Every call returns the driver's verdict as a typed [`Result`]: an errno
//! from `ioctl()` itself ([`Error::Os`]) or an RM status from the parameter
//! block ([`Error::Rm`]).
//!
//! A typical sequence (what libcuda does):
//!
//! ```no_run
//! use nvclient::{abi, Ctl, Gpu, VersionCheck};
//!
//! # fn main() -> nvclient::Result<()> {
//! let ctl = Ctl::open_default()?;
//! let client = ctl.alloc_root_client()?;
//! let version = ctl.check_version(VersionCheck::Query, "")?;
//! let cards = ctl.card_info(32)?;
//! let gpu = Gpu::open_index(cards[0].minor_number)?;
//! gpu.register_fd(&ctl)?;
//! let ids = ctl.gpu_id_info(client, cards[0].gpu_id)?;
//! let device = ctl.alloc_device(client, 0, ids.device_instance)?;
//! let subdevice = ctl.alloc_subdevice(client, device, 0, 0)?;
//! let mem = ctl.alloc_vram(client, device, 0, 2 << 20)?;
//! let free = ctl.fb_get_info_v2(client, subdevice, &[abi::fb_info::HEAP_FREE])?;
//! ctl.free(client, 0, client)?;
//! # let _ = (version, mem, free);
//! # Ok(())
//! # }
//! ```
//!
//! Handles: every allocating call takes the new handle (`h_new`); 0 asks RM to
//! generate one. The handle actually used is returned.

#![warn(missing_docs)]
#![warn(clippy::undocumented_unsafe_blocks)]
#![deny(unsafe_op_in_unsafe_fn)]

mod memory;
mod node;
mod processes;
mod rm;
mod sched;
pub mod uvm;
pub mod work;

pub use memory::{sysmem_params, vram_params, HeapInfo, Mapping, Memory};
pub use node::{needs_xfer, request, xfer_header, Ctl, Gpu, Node};
pub use processes::PidMemory;
pub use rm::VersionCheck;
pub use sched::tsg_params;
pub use uvm::{ManagedRange, Uvm};
pub use vgpu_logic::nv::abi;
pub use vgpu_logic::nv::abi::Handle;
pub use vgpu_logic::nv::ioctl;
pub use vgpu_logic::nv::table;
pub use work::{Doorbell, Ring, WorkChannel};

use abi::NvStatus;

use std::sync::atomic::{AtomicUsize, Ordering};
use vgpu_logic::nv::release::{self, Release, RELEASES};

/// The release whose ABI the library speaks (an index into [`RELEASES`]).
static SPEAKS: AtomicUsize = AtomicUsize::new(0);

/// Makes the library speak the ABI of driver release `name` from now on,
/// as a libcuda built for that release does: its UVM blocks and the sizes
/// vgpu's tables give for it. `false` (and no change) for a release vgpu
/// has no tables for. The default is the newest.
pub fn speak_release(name: &str) -> bool {
    match release::find(name.as_bytes()) {
        Some(i) => {
            SPEAKS.store(i, Ordering::Relaxed);
            true
        }
        None => false,
    }
}

/// The release whose ABI the library speaks.
pub fn speaks() -> &'static Release {
    RELEASES
        .get(SPEAKS.load(Ordering::Relaxed))
        .unwrap_or(&RELEASES[0])
}

/// Why a call failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// A system call (`ioctl`, `open`, `mmap`, `poll`) failed with this
    /// errno. The driver answers an unknown escape, a wrong parameter size or
    /// a version mismatch this way (`EINVAL`).
    Os(i32),
    /// The call reached RM, which returned this status (never `NV_OK`) in the
    /// parameter block.
    Rm(u32),
    /// The library refused the request or could not read the driver's
    /// answer (e.g. an empty CARD_INFO buffer, a reply that does not fit).
    Invalid(&'static str),
}

impl Error {
    /// The errno of the last failed system call.
    pub(crate) fn last_os() -> Error {
        Error::Os(
            std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO),
        )
    }

    /// The RM status, if this is an RM failure.
    pub fn rm_status(&self) -> Option<u32> {
        match *self {
            Error::Rm(s) => Some(s),
            _ => None,
        }
    }

    /// The errno, if this is a system call failure.
    pub fn errno(&self) -> Option<i32> {
        match *self {
            Error::Os(e) => Some(e),
            _ => None,
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        Error::Os(e.raw_os_error().unwrap_or(libc::EIO))
    }
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            Error::Os(e) => write!(f, "{}", std::io::Error::from_raw_os_error(e)),
            Error::Rm(s) => write!(f, "RM: {}", NvStatus(s)),
            Error::Invalid(why) => write!(f, "nvclient: {why}"),
        }
    }
}

impl std::error::Error for Error {}

/// The result of a driver call.
pub type Result<T> = core::result::Result<T, Error>;

/// `Ok` for `NV_OK`, otherwise [`Error::Rm`].
pub(crate) fn rm_result(status: u32) -> Result<()> {
    if status == abi::status::NV_OK {
        Ok(())
    } else {
        Err(Error::Rm(status))
    }
}

/// A user pointer to `b` for a parameter block (0 for an empty slice).
///
/// The driver writes through it during the ioctl, so callers derive it from a
/// `&mut` borrow that outlives the call.
pub(crate) fn user_ptr(b: &mut [u8]) -> u64 {
    if b.is_empty() {
        0
    } else {
        b.as_mut_ptr().expose_provenance() as u64
    }
}

/// A `u32` length for a parameter block, or [`Error::Invalid`].
pub(crate) fn len_u32(b: &[u8]) -> Result<u32> {
    u32::try_from(b.len()).map_err(|_| Error::Invalid("parameter block larger than 4 GiB"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_display_and_classify() {
        assert_eq!(
            Error::Rm(abi::status::NV_ERR_NO_MEMORY).to_string(),
            "RM: NV_ERR_NO_MEMORY (0x51)"
        );
        assert!(Error::Os(libc::EINVAL)
            .to_string()
            .contains("Invalid argument"));
        assert_eq!(Error::Rm(0x51).rm_status(), Some(0x51));
        assert_eq!(Error::Rm(0x51).errno(), None);
        assert_eq!(Error::Os(22).errno(), Some(22));
        assert_eq!(rm_result(0), Ok(()));
        assert_eq!(rm_result(0x1f), Err(Error::Rm(0x1f)));
        let io = std::io::Error::from_raw_os_error(libc::ENOENT);
        assert_eq!(Error::from(io), Error::Os(libc::ENOENT));
    }

    #[test]
    fn user_pointers() {
        let mut empty: [u8; 0] = [];
        assert_eq!(user_ptr(&mut empty), 0);
        let mut b = [0u8; 4];
        let p = user_ptr(&mut b);
        assert_eq!(p, b.as_ptr() as u64);
        assert_eq!(len_u32(&b), Ok(4));
    }
}
