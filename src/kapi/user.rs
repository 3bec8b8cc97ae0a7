// SPDX-License-Identifier: GPL-2.0

//! Copying parameter blocks between user memory and the kernel.
//!
//! A bad address is `EFAULT`, never a crash: the copies go through
//! `UserSlice`, which handles faults.

use kernel::{
    prelude::*,
    uaccess::{UserPtr, UserSlice},
};

/// Reads `out.len()` bytes from user address `addr`.
pub(crate) fn read(addr: u64, out: &mut [u8]) -> Result {
    let addr = usize::try_from(addr).map_err(|_| EFAULT)?;
    UserSlice::new(UserPtr::from_addr(addr), out.len())
        .reader()
        .read_slice(out)
}

/// Writes `data` to user address `addr`.
pub(crate) fn write(addr: u64, data: &[u8]) -> Result {
    let addr = usize::try_from(addr).map_err(|_| EFAULT)?;
    UserSlice::new(UserPtr::from_addr(addr), data.len())
        .writer()
        .write_slice(data)
}

/// Reads `len` bytes from user address `addr` into a new buffer.
pub(crate) fn read_vec(addr: u64, len: usize) -> Result<KVec<u8>> {
    let mut v = KVec::with_capacity(len, GFP_KERNEL)?;
    v.resize(len, 0, GFP_KERNEL)?;
    read(addr, &mut v)?;
    Ok(v)
}
