// SPDX-License-Identifier: GPL-2.0

//! A vGPU's memory ledger: the ceiling, the bytes charged, and the
//! arithmetic of charging before an allocation and settling after it.
//!
//! core-only: built into `vgpu.ko` and by the host test crate.
//!
//! The protocol, for one allocation:
//! 1. [`Ledger::reserve`] the requested size before forwarding; refused if
//!    it would pass the ceiling (the caller answers NV_ERR_NO_MEMORY);
//! 2. forward; on failure [`Ledger::release`] the reservation;
//! 3. on success [`Ledger::settle`] with the size the driver really
//!    allocated (read back in a way the caller cannot tamper with). If the
//!    real size does not fit under the ceiling, settle refuses, the
//!    reservation is released, and the caller frees the object.
//!
//! Lowering the ceiling below what is charged is allowed: nothing running is
//! touched, and reservations fail until usage drops under the new ceiling.

/// Why a charge was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OverLimit {
    /// Bytes charged when it was refused.
    pub used: u64,
    /// The ceiling.
    pub limit: u64,
    /// What was asked for.
    pub asked: u64,
}

/// Memory accounting of one vGPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ledger {
    limit: u64,
    used: u64,
    peak: u64,
    refused: u64,
}

impl Ledger {
    /// A ledger with ceiling `limit` bytes (`u64::MAX`: none) and nothing charged.
    pub const fn new(limit: u64) -> Self {
        Self {
            limit,
            used: 0,
            peak: 0,
            refused: 0,
        }
    }

    /// The ceiling in bytes.
    pub const fn limit(&self) -> u64 {
        self.limit
    }

    /// Bytes charged.
    pub const fn used(&self) -> u64 {
        self.used
    }

    /// The most ever charged at once.
    pub const fn peak(&self) -> u64 {
        self.peak
    }

    /// How many reservations were refused.
    pub const fn refused(&self) -> u64 {
        self.refused
    }

    /// Bytes that can still be charged (0 when over a lowered ceiling).
    pub const fn free(&self) -> u64 {
        self.limit.saturating_sub(self.used)
    }

    /// Changes the ceiling. Usage is not touched, even above the new one.
    pub fn set_limit(&mut self, limit: u64) {
        self.limit = limit;
    }

    /// Charges `size` bytes if that stays within the ceiling.
    pub fn reserve(&mut self, size: u64) -> Result<(), OverLimit> {
        match self.used.checked_add(size) {
            Some(total) if total <= self.limit => {
                self.used = total;
                self.peak = self.peak.max(total);
                Ok(())
            }
            _ => {
                self.refused += 1;
                Err(OverLimit {
                    used: self.used,
                    limit: self.limit,
                    asked: size,
                })
            }
        }
    }

    /// Charges `size` bytes the driver holds whether or not they fit (RM's
    /// own memory it keeps after vgpu refused the call that made it): usage
    /// may go above the ceiling, and later reservations are refused until
    /// it is back under.
    pub fn force(&mut self, size: u64) {
        self.used = self.used.saturating_add(size);
        self.peak = self.peak.max(self.used);
    }

    /// Gives back `size` bytes (saturating: a release never goes below 0).
    pub fn release(&mut self, size: u64) {
        self.used = self.used.saturating_sub(size);
    }

    /// Replaces a reservation of `reserved` bytes by the `actual` size the
    /// driver allocated. Growth must fit under the ceiling; if it does not,
    /// the reservation is released and the caller must free the object.
    pub fn settle(&mut self, reserved: u64, actual: u64) -> Result<(), OverLimit> {
        if actual <= reserved {
            self.release(reserved - actual);
            return Ok(());
        }
        let grow = actual - reserved;
        match self.used.checked_add(grow) {
            Some(total) if total <= self.limit => {
                self.used = total;
                self.peak = self.peak.max(total);
                Ok(())
            }
            _ => {
                self.release(reserved);
                self.refused += 1;
                Err(OverLimit {
                    used: self.used,
                    limit: self.limit,
                    asked: actual,
                })
            }
        }
    }
}

/// The least RM allocates for a VRAM request of `size` bytes with
/// attributes `attr`/`attr2` (`NV_MEMORY_ALLOCATION_PARAMS`), what vgpu
/// reserves before forwarding it, so that a request whose real allocation
/// cannot fit is refused before the driver allocates anything. RM rounds the
/// size up to the page size it picks (at 595.45.04,
/// `memmgrAllocDetermineAlignment_GM107`, `mem_mgr_gm107.c:240,258`) and
/// writes the rounded size back (`video_mem.c:1075`): an explicit
/// `NVOS32_ATTR_PAGE_SIZE` (`mem.c:295-326`), else 2 MiB pages from 2 MiB
/// up (`mem_mgr.c:1760-1765`) and the GPU's big page below
/// (`mem_mgr.c:1766-1772`), which is 64 KiB or more. Compression can round
/// further: the real size is settled after the call ([`Ledger::settle`]).
/// `u64::MAX` when the rounding overflows (nothing that large fits).
pub fn vram_floor(size: u64, attr: u32, attr2: u32) -> u64 {
    use crate::nv::abi::heap;
    const KIB: u64 = 1 << 10;
    const MIB: u64 = 1 << 20;
    let page = match heap::ATTR_PAGE_SIZE.get(attr) {
        heap::ATTR_PAGE_SIZE_4KB => 4 * KIB,
        heap::ATTR_PAGE_SIZE_BIG => 64 * KIB,
        heap::ATTR_PAGE_SIZE_HUGE => match heap::ATTR2_PAGE_SIZE_HUGE.get(attr2) {
            heap::ATTR2_PAGE_SIZE_HUGE_512MB => 512 * MIB,
            heap::ATTR2_PAGE_SIZE_HUGE_256GB => 256 * 1024 * MIB,
            _ => 2 * MIB,
        },
        _ if size >= 2 * MIB => 2 * MIB,
        _ => 64 * KIB,
    };
    size.checked_next_multiple_of(page).unwrap_or(u64::MAX)
}

/// What a vGPU shows of its memory: the ceiling as the total, and the
/// ceiling less its use as free, never more than the physical GPU has free.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct View {
    /// Total bytes the vGPU shows (its ceiling, at most the real heap).
    pub total: u64,
    /// Free bytes the vGPU shows.
    pub free: u64,
}

impl View {
    /// The view of `ledger` on a GPU whose heap is `real_total` bytes with
    /// `real_free` free.
    pub fn of(ledger: &Ledger, real_total: u64, real_free: u64) -> Self {
        let total = ledger.limit().min(real_total);
        let free = total.saturating_sub(ledger.used()).min(real_free);
        Self { total, free }
    }
}

/// Rewrites one FB info value (KiB, as NV2080_CTRL_CMD_FB_GET_INFO returns
/// it) so that sizes show the vGPU's ceiling and free memory shows what the
/// vGPU can still allocate. Values the ceiling does not lower pass through.
pub fn fb_info_kib(index: u32, real_kib: u32, ledger: &Ledger) -> u32 {
    use crate::nv::abi::fb_info;
    let kib = |b: u64| u32::try_from(b >> 10).unwrap_or(u32::MAX);
    match index {
        fb_info::RAM_SIZE
        | fb_info::TOTAL_RAM_SIZE
        | fb_info::USABLE_RAM_SIZE
        | fb_info::HEAP_SIZE
        | fb_info::MAPPABLE_HEAP_SIZE => real_kib.min(kib(ledger.limit())),
        fb_info::HEAP_FREE | fb_info::LARGEST_FREE_REGION_SIZE_KB => {
            real_kib.min(kib(ledger.free()))
        }
        _ => real_kib,
    }
}
