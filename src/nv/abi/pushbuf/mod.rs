// SPDX-License-Identifier: GPL-2.0

//! What a GPFIFO channel's work looks like to the GPU (issue 40): a GPFIFO
//! entry names a segment of pushbuffer in GPU virtual memory, and the
//! segment is a stream of method headers and their data. The host
//! (PBDMA) executes the methods below 0x100 itself on every subchannel
//! (SET_OBJECT, the semaphores); the rest go to the engine object bound to
//! the subchannel. The driver double's engine runs these streams; vgpu
//! never reads them.
//!
//! Sources, at 550.163.01: the GPFIFO entry and method header formats of
//! `kernel-open/nvidia-uvm/cla16f.h:150-245` (the same at every host class
//! since Kepler B; Hopper's `src/common/sdk/nvidia/inc/class/clc86f.h:63-83`
//! adds the opcode entries), and the host methods of
//! `kernel-open/nvidia-uvm/clc86f.h:69-112,211-247`.

/// One GPFIFO entry (`NVA16F_GP_ENTRY*`, 8 bytes: two words).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpEntry {
    /// The segment's GPU virtual address (`GET` 31:2 of word 0, `GET_HI`
    /// 7:0 of word 1: 40 bits, 4-byte aligned).
    pub addr: u64,
    /// Its length in words (`LENGTH`, 30:10 of word 1); 0 makes the entry
    /// a control entry (its `OPCODE`, 7:0 of word 1).
    pub words: u32,
    /// A subroutine segment (`LEVEL`, 9:9 of word 1), which returns to the
    /// main one.
    pub subroutine: bool,
    /// `SYNC_WAIT` (31:31 of word 1): fetch only once the work before is
    /// done. The double runs entries in order, one at a time, so it never
    /// fetches ahead and needs no wait.
    pub sync_wait: bool,
    /// A control entry's opcode (`NOP` 0, `ILLEGAL` 1, `GP_CRC` 2,
    /// `PB_CRC` 3, `SET_PB_SEGMENT_EXTENDED_BASE` 4 on Hopper).
    pub opcode: u8,
}

impl GpEntry {
    /// Decodes an entry as the channel's ring holds it (little-endian
    /// words, word 0 first).
    pub const fn decode(entry: u64) -> Self {
        let (w0, w1) = (entry as u32, (entry >> 32) as u32);
        Self {
            addr: ((w1 & 0xff) as u64) << 32 | (w0 & !0x3) as u64,
            words: (w1 >> 10) & 0x1f_ffff,
            subroutine: w1 & (1 << 9) != 0,
            sync_wait: w1 & (1 << 31) != 0,
            opcode: w1 as u8,
        }
    }

    /// Encodes a pushbuffer segment's entry (main level, no sync).
    pub const fn segment(addr: u64, words: u32) -> u64 {
        let w0 = (addr as u32) & !0x3;
        let w1 = ((addr >> 32) as u32 & 0xff) | (words & 0x1f_ffff) << 10;
        (w1 as u64) << 32 | w0 as u64
    }
}

/// One method a pushbuffer delivers: `data` written to method `method`
/// (its byte offset in the class's method space) of subchannel `subch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Method {
    /// Subchannel, 0-7 (`NVA16F_DMA_METHOD_SUBCHANNEL`, 15:13).
    pub subch: u8,
    /// Byte offset of the method (the header's `ADDRESS`, 11:0, is in
    /// words).
    pub method: u32,
    /// Its data word.
    pub data: u32,
}

/// A pushbuffer stream that cannot be run to its end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamError {
    /// A header with a reserved opcode (`SEC_OP` 6), or a legacy one with
    /// `TERT_OP` other than an incrementing method (subdevice masks: the
    /// double has one GPU per channel, so they are ignored, not refused),
    /// at this word.
    Malformed(usize),
    /// A header's data runs past the segment's end, at this word.
    Truncated(usize),
}

/// Header opcodes (`NVA16F_DMA_SEC_OP`, 31:29).
mod sec_op {
    pub(super) const GRP0_USE_TERT: u32 = 0;
    pub(super) const INC_METHOD: u32 = 1;
    pub(super) const GRP2_USE_TERT: u32 = 2;
    pub(super) const NON_INC_METHOD: u32 = 3;
    pub(super) const IMMD_DATA_METHOD: u32 = 4;
    pub(super) const ONE_INC: u32 = 5;
    pub(super) const END_PB_SEGMENT: u32 = 7;
}

/// How the data words of the current header map to methods.
#[derive(Clone, Copy)]
enum Run {
    /// Each word to the next method.
    Inc,
    /// Every word to the same method.
    NonInc,
    /// The first word to the method, the rest to the one after.
    OneInc,
}

/// The methods of a pushbuffer segment, in order: an iterator over its
/// words that yields each method with its data, then `None` at the
/// segment's end or at `END_PB_SEGMENT`, or one error and then `None`.
pub struct Methods<'a> {
    words: &'a [u32],
    /// The next word to read.
    at: usize,
    /// The current header's run: its kind, subchannel, next method (in
    /// words), data words left and words delivered.
    run: Option<(Run, u8, u32, u32, u32)>,
    done: bool,
}

impl<'a> Methods<'a> {
    /// The methods of `words`, a whole segment.
    pub const fn new(words: &'a [u32]) -> Self {
        Self {
            words,
            at: 0,
            run: None,
            done: false,
        }
    }

    fn fail(&mut self, e: StreamError) -> Option<Result<Method, StreamError>> {
        self.done = true;
        Some(Err(e))
    }
}

impl Iterator for Methods<'_> {
    type Item = Result<Method, StreamError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.done {
                return None;
            }
            if let Some((kind, subch, method, left, sent)) = self.run {
                if left > 0 {
                    let Some(&data) = self.words.get(self.at) else {
                        return self.fail(StreamError::Truncated(self.at));
                    };
                    self.at += 1;
                    let next = match kind {
                        Run::Inc => method.wrapping_add(1),
                        Run::NonInc => method,
                        Run::OneInc if sent == 0 => method.wrapping_add(1),
                        Run::OneInc => method,
                    };
                    self.run = Some((kind, subch, next, left - 1, sent + 1));
                    return Some(Ok(Method {
                        subch,
                        method: (method & 0xfff) << 2,
                        data,
                    }));
                }
                self.run = None;
            }
            let Some(&h) = self.words.get(self.at) else {
                self.done = true;
                return None;
            };
            let header_at = self.at;
            self.at += 1;
            if h == 0 {
                // NVA16F_DMA_NOP.
                continue;
            }
            let (addr, subch, count) = (h & 0xfff, ((h >> 13) & 0x7) as u8, (h >> 16) & 0x1fff);
            let kind = match h >> 29 {
                sec_op::INC_METHOD => Run::Inc,
                sec_op::NON_INC_METHOD => Run::NonInc,
                sec_op::ONE_INC => Run::OneInc,
                sec_op::IMMD_DATA_METHOD => {
                    // The data is the header's 28:16.
                    return Some(Ok(Method {
                        subch,
                        method: addr << 2,
                        data: count,
                    }));
                }
                sec_op::END_PB_SEGMENT => {
                    self.done = true;
                    return None;
                }
                sec_op::GRP0_USE_TERT | sec_op::GRP2_USE_TERT => {
                    // TERT_OP (17:16): 0 is the incrementing (GRP0) or
                    // non-incrementing (GRP2) method of the old format,
                    // ADDRESS 12:2 and COUNT 28:18; 1-3 of GRP0 are the
                    // subdevice-mask operations, which have no data.
                    let tert = (h >> 16) & 0x3;
                    if tert != 0 {
                        if h >> 29 == sec_op::GRP0_USE_TERT {
                            continue;
                        }
                        return self.fail(StreamError::Malformed(header_at));
                    }
                    let kind = if h >> 29 == sec_op::GRP0_USE_TERT {
                        Run::Inc
                    } else {
                        Run::NonInc
                    };
                    self.run = Some((kind, subch, (h >> 2) & 0x7ff, (h >> 18) & 0x7ff, 0));
                    continue;
                }
                _ => return self.fail(StreamError::Malformed(header_at)),
            };
            self.run = Some((kind, subch, addr, count, 0));
        }
    }
}

/// Encodes a method header: `count` data words for methods from byte
/// offset `method` of subchannel `subch`, incrementing.
pub const fn incrementing(subch: u8, method: u32, count: u32) -> u32 {
    sec_op::INC_METHOD << 29
        | (count & 0x1fff) << 16
        | ((subch & 0x7) as u32) << 13
        | (method >> 2) & 0xfff
}

/// Encodes a header whose `count` data words all go to method `method`.
pub const fn non_incrementing(subch: u8, method: u32, count: u32) -> u32 {
    sec_op::NON_INC_METHOD << 29
        | (count & 0x1fff) << 16
        | ((subch & 0x7) as u32) << 13
        | (method >> 2) & 0xfff
}

/// Encodes an immediate-data method: `data` (13 bits) to `method`.
pub const fn immediate(subch: u8, method: u32, data: u32) -> u32 {
    sec_op::IMMD_DATA_METHOD << 29
        | (data & 0x1fff) << 16
        | ((subch & 0x7) as u32) << 13
        | (method >> 2) & 0xfff
}

/// The methods below this byte offset are the host's, on every subchannel.
pub const HOST_METHODS_END: u32 = 0x100;

/// The host's methods (HOPPER_CHANNEL_GPFIFO_A, `clc86f.h`).
pub mod host {
    /// `NVC86F_SET_OBJECT`: binds an engine object (its handle) to the
    /// subchannel.
    pub const SET_OBJECT: u32 = 0x0000;
    /// `NVC86F_SEMAPHOREA`..`D`: the legacy semaphore (address high,
    /// address low, payload, operation).
    pub const SEMAPHORE_A: u32 = 0x0010;
    /// `NVC86F_SEMAPHOREB`.
    pub const SEMAPHORE_B: u32 = 0x0014;
    /// `NVC86F_SEMAPHOREC`.
    pub const SEMAPHORE_C: u32 = 0x0018;
    /// `NVC86F_SEMAPHORED`: its `OPERATION` (4:0) runs the semaphore.
    pub const SEMAPHORE_D: u32 = 0x001c;
    /// `NVC86F_NON_STALL_INTERRUPT`.
    pub const NON_STALL_INTERRUPT: u32 = 0x0020;
    /// `NVC86F_SEM_ADDR_LO` (`OFFSET` 31:2).
    pub const SEM_ADDR_LO: u32 = 0x005c;
    /// `NVC86F_SEM_ADDR_HI` (`OFFSET` 24:0).
    pub const SEM_ADDR_HI: u32 = 0x0060;
    /// `NVC86F_SEM_PAYLOAD_LO`.
    pub const SEM_PAYLOAD_LO: u32 = 0x0064;
    /// `NVC86F_SEM_PAYLOAD_HI`.
    pub const SEM_PAYLOAD_HI: u32 = 0x0068;
    /// `NVC86F_SEM_EXECUTE`: runs the semaphore the four before set.
    pub const SEM_EXECUTE: u32 = 0x006c;
}

/// What a semaphore method asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SemOp {
    /// Wait until the value at `addr` equals the payload.
    Acquire,
    /// Wait until the value is at least the payload (`ACQ_STRICT_GEQ`).
    AcquireGeq,
    /// Wait until the value is at least the payload, modulo wrap-around
    /// (`ACQ_CIRC_GEQ`).
    AcquireCircGeq,
    /// Wait until the value AND the payload is non-zero (`ACQ_AND`).
    AcquireAnd,
    /// Wait until the value NOR the payload is non-zero (`ACQ_NOR`).
    AcquireNor,
    /// Write the payload (and, with `timestamp`, the time after it).
    Release,
    /// Combine the payload into the value (`REDUCTION`, its operation in
    /// bits 30:27 of SEM_EXECUTE).
    Reduction(u8),
}

/// A semaphore operation the host runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Semaphore {
    /// The GPU virtual address of the semaphore.
    pub addr: u64,
    /// The payload.
    pub payload: u64,
    /// What to do.
    pub op: SemOp,
    /// A 64-bit payload (`PAYLOAD_SIZE_64BIT`); else 32 bits.
    pub wide: bool,
    /// A release writes the time too (`RELEASE_TIMESTAMP_EN`: a 16-byte
    /// report, the time at `addr + 8`).
    pub timestamp: bool,
}

/// The host's semaphore state of a channel: what SEM_ADDR_* and
/// SEM_PAYLOAD_* (and the legacy SEMAPHORE_A-C) set, until an execute runs
/// it.
#[derive(Clone, Copy, Debug, Default)]
pub struct HostSemaphore {
    addr_lo: u32,
    addr_hi: u32,
    payload_lo: u32,
    payload_hi: u32,
}

impl HostSemaphore {
    /// Takes host method `method` with `data`: the semaphore to run, if it
    /// was an execute of a known operation (`None` for the setters, for
    /// other host methods, and for an operation the class reserves).
    pub fn method(&mut self, method: u32, data: u32) -> Option<Semaphore> {
        match method {
            host::SEM_ADDR_LO => self.addr_lo = data & !0x3,
            host::SEM_ADDR_HI => self.addr_hi = data & 0x1ff_ffff,
            host::SEM_PAYLOAD_LO => self.payload_lo = data,
            host::SEM_PAYLOAD_HI => self.payload_hi = data,
            host::SEM_EXECUTE => {
                let op = match data & 0x7 {
                    0 => SemOp::Acquire,
                    1 => SemOp::Release,
                    2 => SemOp::AcquireGeq,
                    3 => SemOp::AcquireCircGeq,
                    4 => SemOp::AcquireAnd,
                    5 => SemOp::AcquireNor,
                    6 => SemOp::Reduction(((data >> 27) & 0xf) as u8),
                    _ => return None,
                };
                let wide = data & (1 << 24) != 0;
                return Some(Semaphore {
                    addr: join(self.addr_hi, self.addr_lo),
                    payload: if wide {
                        join(self.payload_hi, self.payload_lo)
                    } else {
                        u64::from(self.payload_lo)
                    },
                    op,
                    wide,
                    timestamp: op == SemOp::Release && data & (1 << 25) != 0,
                });
            }
            host::SEMAPHORE_A => self.addr_hi = data & 0xff,
            host::SEMAPHORE_B => self.addr_lo = data & !0x3,
            host::SEMAPHORE_C => self.payload_lo = data,
            host::SEMAPHORE_D => {
                // OPERATION, 4:0: one bit each; the legacy form is 32-bit
                // and releases with a timestamp unless RELEASE_SIZE (24:24)
                // asks for 4 bytes (`clc86f.h:83-110`).
                let op = match data & 0x1f {
                    0x01 => SemOp::Acquire,
                    0x02 => SemOp::Release,
                    0x04 => SemOp::AcquireGeq,
                    0x08 => SemOp::AcquireAnd,
                    0x10 => SemOp::Reduction(((data >> 27) & 0xf) as u8),
                    _ => return None,
                };
                return Some(Semaphore {
                    addr: join(self.addr_hi, self.addr_lo),
                    payload: u64::from(self.payload_lo),
                    op,
                    wide: false,
                    timestamp: op == SemOp::Release && data & (1 << 24) == 0,
                });
            }
            _ => {}
        }
        None
    }
}

/// `hi:lo`.
fn join(hi: u32, lo: u32) -> u64 {
    u64::from(hi) << 32 | u64::from(lo)
}

impl Semaphore {
    /// Whether an acquire is satisfied by `value` (the semaphore's word,
    /// or double word when wide); a release or reduction never waits.
    pub const fn satisfied(&self, value: u64) -> bool {
        let (v, p) = if self.wide {
            (value, self.payload)
        } else {
            (value & 0xffff_ffff, self.payload & 0xffff_ffff)
        };
        match self.op {
            SemOp::Acquire => v == p,
            SemOp::AcquireGeq => v >= p,
            SemOp::AcquireCircGeq => {
                if self.wide {
                    (v.wrapping_sub(p) as i64) >= 0
                } else {
                    (v.wrapping_sub(p) as u32 as i32) >= 0
                }
            }
            SemOp::AcquireAnd => v & p != 0,
            SemOp::AcquireNor => !(v | p) != 0,
            SemOp::Release | SemOp::Reduction(_) => true,
        }
    }
}

pub mod compute;
pub mod copy;

pub use compute::{Compute, ComputeOp};
pub use copy::{CopyData, CopyEngine, Launch};
