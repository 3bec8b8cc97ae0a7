// SPDX-License-Identifier: GPL-2.0

//! Where the fuzzer's parameter blocks live, and the bad places it points
//! the driver at instead.
//!
//! One `Scratch` per worker process, made before its threads start and
//! shared by them: 64 KiB of a memfd mapped read-write, then a page that is
//! never mapped (a block that runs off the end faults part-way), and the
//! same memfd mapped again read-only (a block the kernel can read but not
//! write back). Threads write their blocks into slots of the read-write
//! view that other threads use too: races on the same blocks are the point.

use super::rng::Rng;

/// Bytes of the shared read-write area.
pub const AREA: usize = 64 << 10;
/// Slots threads pick their blocks from (each `AREA / SLOTS` bytes).
pub const SLOTS: usize = 8;
const PAGE: usize = 4096;

/// Where a pointer the fuzzer hands the kernel points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// A slot of the read-write area (valid).
    Valid,
    /// Address 0.
    Null,
    /// An address with nothing mapped.
    Unmapped,
    /// The read-only view of the same bytes.
    ReadOnly,
    /// A kernel address.
    Kernel,
    /// A valid slot plus 1..7 bytes.
    Unaligned,
    /// So placed that the block's end runs into the unmapped page.
    Straddling,
    /// Inside vgpu's bounce area (vgpu's own mapping in the process).
    Bounce,
}

/// The places, valid first.
pub const PLACES: [Place; 8] = [
    Place::Valid,
    Place::Null,
    Place::Unmapped,
    Place::ReadOnly,
    Place::Kernel,
    Place::Unaligned,
    Place::Straddling,
    Place::Bounce,
];

/// The shared memory of one worker process.
///
/// # Invariants
///
/// `rw` maps `AREA` bytes read-write and `ro` the same bytes read-only;
/// `hole` is the page right after `rw`, never mapped. The mappings live
/// until the process exits (a `Scratch` is never dropped: its threads may
/// still be inside calls that name it).
pub struct Scratch {
    rw: usize,
    ro: usize,
    hole: usize,
    bounce: std::sync::atomic::AtomicUsize,
}

impl Scratch {
    /// Maps the views.
    pub fn new() -> Result<&'static Scratch, String> {
        // SAFETY: plain system calls making fresh mappings; no existing
        // memory is touched (MAP_FIXED only over our own reservation).
        unsafe {
            let fd = libc::memfd_create(c"vgpu-fuzz".as_ptr(), 0);
            if fd < 0 || libc::ftruncate(fd, AREA as i64) != 0 {
                return Err("memfd".into());
            }
            let res = libc::mmap(
                core::ptr::null_mut(),
                AREA + PAGE,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            if res == libc::MAP_FAILED {
                return Err("reserve".into());
            }
            let rw = libc::mmap(
                res,
                AREA,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_FIXED,
                fd,
                0,
            );
            let ro = libc::mmap(
                core::ptr::null_mut(),
                AREA,
                libc::PROT_READ,
                libc::MAP_SHARED,
                fd,
                0,
            );
            libc::close(fd);
            if rw == libc::MAP_FAILED || ro == libc::MAP_FAILED {
                return Err("map".into());
            }
            let s = Box::new(Scratch {
                rw: rw as usize,
                ro: ro as usize,
                hole: rw as usize + AREA,
                bounce: std::sync::atomic::AtomicUsize::new(0),
            });
            Ok(Box::leak(s))
        }
    }

    /// The address of slot `i` in the read-write view.
    pub fn slot(&self, i: usize) -> usize {
        self.rw + (i % SLOTS) * (AREA / SLOTS)
    }

    /// Copies `block` into slot `i` (racing threads may be reading it).
    pub fn write(&self, i: usize, block: &[u8]) -> usize {
        let at = self.slot(i);
        let n = block.len().min(AREA / SLOTS);
        // SAFETY: `at..at + n` is inside the read-write view (invariant),
        // which lives for the process; other threads race on these bytes,
        // which is the test, and no Rust reference to them exists.
        unsafe { core::ptr::copy_nonoverlapping(block.as_ptr(), at as *mut u8, n) };
        at
    }

    /// Where to put a block of `len` bytes for `place`, with `block`
    /// copied there when the place has room for it.
    /// Writes `block` to slot `i`; returns its address in the read-only
    /// view of the area.
    pub fn write_read_only(&self, i: usize, block: &[u8]) -> usize {
        self.write(i, block) - self.rw + self.ro
    }

    pub fn place(&self, rng: &mut Rng, place: Place, block: &[u8]) -> usize {
        let slot = rng.index(SLOTS);
        match place {
            Place::Valid => self.write(slot, block),
            Place::Null => 0,
            Place::Unmapped => self.hole + rng.index(PAGE - 8),
            Place::ReadOnly => self.write_read_only(slot, block),
            Place::Kernel => 0xffff_8880_0000_0000 + ((rng.below(1 << 20) as usize) << 12),
            Place::Unaligned => {
                let at = self.slot(slot) + 1 + rng.index(7);
                let n = block.len().min(AREA / SLOTS - 8);
                // SAFETY: inside the read-write view, as in `write`.
                unsafe { core::ptr::copy_nonoverlapping(block.as_ptr(), at as *mut u8, n) };
                at
            }
            Place::Straddling => {
                let keep = if block.is_empty() {
                    0
                } else {
                    rng.index(block.len())
                };
                let at = self.hole - keep;
                // SAFETY: `at..hole` is the end of the read-write view.
                unsafe { core::ptr::copy_nonoverlapping(block.as_ptr(), at as *mut u8, keep) };
                at
            }
            Place::Bounce => match self.bounce() {
                0 => self.write(slot, block),
                b => b + rng.index(128 << 10),
            },
        }
    }

    /// The start of vgpu's bounce area in this process (0 until a call
    /// made one), from /proc/self/maps.
    fn bounce(&self) -> usize {
        use std::sync::atomic::Ordering::Relaxed;
        let b = self.bounce.load(Relaxed);
        if b != 0 {
            return b;
        }
        let found = std::fs::read_to_string("/proc/self/maps")
            .ok()
            .and_then(|m| {
                m.lines()
                    .find(|l| l.ends_with("[vgpu-bounce]"))
                    .and_then(|l| l.split('-').next())
                    .and_then(|a| usize::from_str_radix(a, 16).ok())
            })
            .unwrap_or(0);
        self.bounce.store(found, Relaxed);
        found
    }
}
