// SPDX-License-Identifier: GPL-2.0

//! The outcome of an RM call: one type for the two ways a call fails.
//!
//! A call vgpu makes or serves fails either in the kernel (an errno: the
//! caller's ioctl fails, its block is not answered) or in RM (a status
//! other than `NV_OK`: the ioctl succeeds and the block carries the
//! status, as the driver answers). [`RmResult`] carries both, so handlers
//! use `?` for either and decide once, at the end, where the failure goes.

use kernel::{alloc::AllocError, prelude::*};

use crate::nv::abi::status::NV_OK;

/// Why an RM call did not succeed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fail {
    /// The kernel refused it: the caller's ioctl fails with this errno.
    Os(Error),
    /// RM answered this status (never `NV_OK`): the caller's block carries
    /// it.
    Rm(u32),
}

/// The result of an RM call.
pub(crate) type RmResult<T = ()> = core::result::Result<T, Fail>;

impl From<Error> for Fail {
    fn from(e: Error) -> Self {
        Fail::Os(e)
    }
}

impl From<AllocError> for Fail {
    fn from(_: AllocError) -> Self {
        Fail::Os(ENOMEM)
    }
}

/// `Ok` for `NV_OK`, else the status as [`Fail::Rm`].
pub(crate) const fn check(status: u32) -> RmResult {
    if status == NV_OK {
        Ok(())
    } else {
        Err(Fail::Rm(status))
    }
}

/// The status an RM outcome gives the caller's block, or the errno its
/// ioctl fails with.
pub(crate) fn status<T>(r: RmResult<T>) -> Result<u32> {
    match r {
        Ok(_) => Ok(NV_OK),
        Err(Fail::Rm(st)) => Ok(st),
        Err(Fail::Os(e)) => Err(e),
    }
}
