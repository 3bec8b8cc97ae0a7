// SPDX-License-Identifier: GPL-2.0

//! An ioctl on one of vgpu's RM nodes, decoded as the driver decodes it,
//! with its row of the dispatch table, and the two ways of forwarding it.

use kernel::prelude::*;

use crate::kapi::{realfile::RealFile, user};
use crate::nv::ioctl::{self, Escape, Xfer};
use crate::nv::release;
use crate::nv::table::EscapeRow;

/// An ioctl on a vgpu RM node, decoded as the driver decodes it (XFER
/// unwrapped).
pub(crate) struct Call {
    /// The caller's request word.
    cmd: u32,
    /// The caller's argument.
    arg: usize,
    /// The XFER header the caller sent, if it sent one.
    xfer: Option<[u8; Xfer::SIZE]>,
    /// The escape the driver would run.
    pub(crate) escape: Escape,
    /// User address of the escape's block.
    pub(crate) addr: u64,
    /// Size of the escape's block.
    pub(crate) size: usize,
    /// The escape's row of the dispatch table.
    pub(crate) row: &'static EscapeRow,
}

impl Call {
    /// Decodes `cmd` by the escapes of the driver's release: unknown
    /// escapes (an escape newer than the release included) and wrong sizes
    /// are `EINVAL`, as the driver answers them, and never reach it.
    pub(crate) fn decode(cmd: u32, arg: usize) -> Result<Self> {
        let rel = release::current();
        // The release's row of the escape, and its size check (one lookup:
        // every ioctl passes here).
        let size = ioctl::ioc_size(cmd);
        let row = rel.escape_row(ioctl::ioc_nr(cmd)).ok_or(EINVAL)?;
        crate::rows::count(crate::rows::Family::Escape, rel.escapes, row);
        if !row.size.accepts(size) {
            return Err(EINVAL);
        }
        if row.escape != Escape::IoctlXferCmd {
            return Ok(Self {
                cmd,
                arg,
                xfer: None,
                escape: row.escape,
                addr: arg as u64,
                size,
                row,
            });
        }
        let rule = |e| rel.escape_rule(e);
        let mut hdr = [0u8; Xfer::SIZE];
        user::read(arg as u64, &mut hdr)?;
        let x = Xfer::from_bytes(&hdr);
        let inner = x.inner_with(rule).map_err(|_| EINVAL)?;
        Ok(Self {
            cmd,
            arg,
            xfer: Some(hdr),
            escape: inner.escape,
            addr: x.ptr,
            size: inner.size,
            row: rel.escape_row(inner.escape.nr()).ok_or(EINVAL)?,
        })
    }

    /// The escape as a plain request word for its block (no XFER).
    pub(crate) fn direct_cmd(&self) -> u32 {
        ioctl::nv_iowr(self.escape.nr(), self.size)
    }

    /// Forwards the call as the caller made it. An XFER header goes from the
    /// copy vgpu decoded, so the driver runs the escape vgpu saw (its block
    /// is read from the caller's memory: vgpu decided nothing on it).
    pub(crate) fn forward(&self, real: &RealFile) -> Result<isize> {
        match self.xfer {
            Some(mut hdr) => real.ioctl_block(self.cmd, &mut hdr),
            None => real.ioctl(self.cmd, self.arg),
        }
    }

    /// Forwards the call with `blk`, vgpu's copy of its block, as the block
    /// the driver reads (from a bounce slot, so no other thread can change
    /// it first); the driver's answer goes to the caller's block and stays
    /// in `blk`. Blocks of the escapes vgpu decides on are small, so the
    /// call goes as a plain request even if the caller wrapped it in XFER.
    pub(crate) fn forward_block(&self, real: &RealFile, blk: &mut [u8]) -> Result<isize> {
        let r = self.run_block(real, blk)?;
        user::write(self.addr, blk)?;
        Ok(r)
    }

    /// As [`Call::forward_block`], the answer left in `blk` only: the
    /// caller records what the driver made before it writes the answer back
    /// (a write that fails must not lose the record of an object the driver
    /// holds).
    pub(crate) fn run_block(&self, real: &RealFile, blk: &mut [u8]) -> Result<isize> {
        if blk.len() != self.size {
            return Err(EINVAL);
        }
        real.ioctl_block(self.direct_cmd(), blk)
    }

    /// As [`Call::forward_block`], with the params the block points to (its
    /// 8-byte field at `ptr_off`) given from `params`, vgpu's checked copy,
    /// in the same bounce slot: the driver reads neither from the caller's
    /// memory. The driver's answer goes to the caller's block and stays in
    /// `blk` and `params`; the caller copies `params` back itself.
    pub(crate) fn forward_block_params(
        &self,
        real: &RealFile,
        blk: &mut [u8],
        ptr_off: usize,
        params: &mut [u8],
    ) -> Result<isize> {
        let r = self.run_block_params(real, blk, ptr_off, params)?;
        user::write(self.addr, blk)?;
        Ok(r)
    }

    /// As [`Call::forward_block_params`], the answer left in `blk` and
    /// `params` only (see [`Call::run_block`]).
    pub(crate) fn run_block_params(
        &self,
        real: &RealFile,
        blk: &mut [u8],
        ptr_off: usize,
        params: &mut [u8],
    ) -> Result<isize> {
        if blk.len() != self.size {
            return Err(EINVAL);
        }
        real.ioctl_block_params(self.direct_cmd(), blk, ptr_off, params)
    }
}
