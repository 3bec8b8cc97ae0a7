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

/// The copy engine's methods (HOPPER_DMA_COPY_A,
/// `kernel-open/nvidia-uvm/clc8b5.h:121-127,158-258,303-354` at
/// 550.163.01).
pub mod copy {
    /// `NVC8B5_SET_SEMAPHORE_A` (`UPPER` 24:0).
    pub const SET_SEMAPHORE_A: u32 = 0x0240;
    /// `NVC8B5_SET_SEMAPHORE_B` (`LOWER` 31:0).
    pub const SET_SEMAPHORE_B: u32 = 0x0244;
    /// `NVC8B5_SET_SEMAPHORE_PAYLOAD`.
    pub const SET_SEMAPHORE_PAYLOAD: u32 = 0x0248;
    /// `NVC8B5_SET_SEMAPHORE_PAYLOAD_UPPER`.
    pub const SET_SEMAPHORE_PAYLOAD_UPPER: u32 = 0x024c;
    /// `NVC8B5_LAUNCH_DMA`: runs the copy the methods below set.
    pub const LAUNCH_DMA: u32 = 0x0300;
    /// `NVC8B5_OFFSET_IN_UPPER` (24:0).
    pub const OFFSET_IN_UPPER: u32 = 0x0400;
    /// `NVC8B5_OFFSET_IN_LOWER`.
    pub const OFFSET_IN_LOWER: u32 = 0x0404;
    /// `NVC8B5_OFFSET_OUT_UPPER` (24:0).
    pub const OFFSET_OUT_UPPER: u32 = 0x0408;
    /// `NVC8B5_OFFSET_OUT_LOWER`.
    pub const OFFSET_OUT_LOWER: u32 = 0x040c;
    /// `NVC8B5_PITCH_IN`.
    pub const PITCH_IN: u32 = 0x0410;
    /// `NVC8B5_PITCH_OUT`.
    pub const PITCH_OUT: u32 = 0x0414;
    /// `NVC8B5_LINE_LENGTH_IN`: bytes of a line, or elements with remap.
    pub const LINE_LENGTH_IN: u32 = 0x0418;
    /// `NVC8B5_LINE_COUNT`.
    pub const LINE_COUNT: u32 = 0x041c;
    /// `NVC8B5_SET_REMAP_CONST_A`.
    pub const SET_REMAP_CONST_A: u32 = 0x0700;
    /// `NVC8B5_SET_REMAP_CONST_B`.
    pub const SET_REMAP_CONST_B: u32 = 0x0704;
    /// `NVC8B5_SET_REMAP_COMPONENTS`: per destination component (DST_X
    /// 2:0, Y 6:4, Z 10:8, W 14:12) a source (X-W 0-3, CONST_A 4,
    /// CONST_B 5, NO_WRITE 6), COMPONENT_SIZE (17:16, 1-4 bytes) and
    /// NUM_DST_COMPONENTS (25:24, 1-4).
    pub const SET_REMAP_COMPONENTS: u32 = 0x0708;
}

/// What a LAUNCH_DMA writes at its destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyData {
    /// Nothing (`DATA_TRANSFER_TYPE_NONE`): only the semaphore, if any.
    None,
    /// The source's bytes.
    Copy,
    /// This element, repeated (REMAP_ENABLE with every destination
    /// component a constant): its first `size` bytes.
    Fill {
        /// The element's bytes.
        element: [u8; 16],
        /// Its size: component size times components, 1-16.
        size: u8,
    },
    /// Zeros (MEMORY_SCRUB_ENABLE, remap off).
    Zero,
    /// A remap the double does not run (a component from the source or
    /// not written): the launch is parsed and writes nothing.
    Unsupported,
}

/// One LAUNCH_DMA: lines of `line_bytes` from `src` (each `pitch_in` on)
/// to `dst` (each `pitch_out` on), then the semaphore.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Launch {
    /// Source GPU virtual address.
    pub src: u64,
    /// Destination GPU virtual address.
    pub dst: u64,
    /// Bytes a line, at the destination.
    pub line_bytes: u64,
    /// Lines (1 without MULTI_LINE_ENABLE).
    pub lines: u32,
    /// Source pitch.
    pub pitch_in: u32,
    /// Destination pitch.
    pub pitch_out: u32,
    /// What is written.
    pub data: CopyData,
    /// The semaphore released after it (SEMAPHORE_TYPE 1: one or two
    /// words by SEMAPHORE_PAYLOAD_SIZE; 2: four words with the time; 3,
    /// the conditional-interrupt form, as 1), if any.
    pub semaphore: Option<Semaphore>,
    /// Both layouts are pitch (`SRC_`/`DST_MEMORY_LAYOUT`, 7:7 and 8:8),
    /// and both addresses virtual (`SRC_`/`DST_TYPE`, 12:12 and 13:13):
    /// the only launches the double runs.
    pub plain: bool,
}

/// A copy engine object's state: what its methods set, until LAUNCH_DMA
/// runs it.
#[derive(Clone, Copy, Debug, Default)]
pub struct CopyEngine {
    offset_in: (u32, u32),
    offset_out: (u32, u32),
    pitch_in: u32,
    pitch_out: u32,
    line_length: u32,
    line_count: u32,
    sem_addr: (u32, u32),
    sem_payload: (u32, u32),
    remap_a: u32,
    remap_b: u32,
    remap: u32,
}

impl CopyEngine {
    /// Takes copy-engine method `method` with `data`: the launch to run,
    /// if it was LAUNCH_DMA.
    pub fn method(&mut self, method: u32, data: u32) -> Option<Launch> {
        match method {
            copy::SET_SEMAPHORE_A => self.sem_addr.0 = data & 0x1ff_ffff,
            copy::SET_SEMAPHORE_B => self.sem_addr.1 = data,
            copy::SET_SEMAPHORE_PAYLOAD => self.sem_payload.1 = data,
            copy::SET_SEMAPHORE_PAYLOAD_UPPER => self.sem_payload.0 = data,
            copy::OFFSET_IN_UPPER => self.offset_in.0 = data & 0x1ff_ffff,
            copy::OFFSET_IN_LOWER => self.offset_in.1 = data,
            copy::OFFSET_OUT_UPPER => self.offset_out.0 = data & 0x1ff_ffff,
            copy::OFFSET_OUT_LOWER => self.offset_out.1 = data,
            copy::PITCH_IN => self.pitch_in = data,
            copy::PITCH_OUT => self.pitch_out = data,
            copy::LINE_LENGTH_IN => self.line_length = data,
            copy::LINE_COUNT => self.line_count = data,
            copy::SET_REMAP_CONST_A => self.remap_a = data,
            copy::SET_REMAP_CONST_B => self.remap_b = data,
            copy::SET_REMAP_COMPONENTS => self.remap = data,
            copy::LAUNCH_DMA => return Some(self.launch(data)),
            _ => {}
        }
        None
    }

    fn launch(&self, flags: u32) -> Launch {
        let bit = |b: u32| flags & (1 << b) != 0;
        let transfer = flags & 0x3 != 0;
        let (remap, scrub) = (bit(10), bit(23));
        let (data, element) = if !transfer {
            (CopyData::None, 1)
        } else if remap {
            self.fill()
        } else if scrub {
            (CopyData::Zero, 1)
        } else {
            (CopyData::Copy, 1)
        };
        let two_words = bit(27);
        let semaphore = match (flags >> 3) & 0x3 {
            0 => None,
            kind => Some(Semaphore {
                addr: join(self.sem_addr.0, self.sem_addr.1),
                payload: if two_words {
                    join(self.sem_payload.0, self.sem_payload.1)
                } else {
                    u64::from(self.sem_payload.1)
                },
                op: if bit(19) {
                    SemOp::Reduction(((flags >> 14) & 0xf) as u8)
                } else {
                    SemOp::Release
                },
                wide: two_words,
                timestamp: kind == 2,
            }),
        };
        Launch {
            src: join(self.offset_in.0, self.offset_in.1),
            dst: join(self.offset_out.0, self.offset_out.1),
            line_bytes: u64::from(self.line_length) * element,
            lines: if bit(9) { self.line_count } else { 1 },
            pitch_in: self.pitch_in,
            pitch_out: self.pitch_out,
            data,
            semaphore,
            plain: bit(7) && bit(8) && !bit(12) && !bit(13),
        }
    }

    /// A remapped launch's data and element size: a fill where every
    /// destination component is a constant.
    fn fill(&self) -> (CopyData, u64) {
        let size = ((self.remap >> 16) & 0x3) as usize + 1;
        let count = ((self.remap >> 24) & 0x3) as usize + 1;
        let mut element = [0u8; 16];
        for i in 0..count {
            let value = match (self.remap >> (4 * i)) & 0x7 {
                4 => self.remap_a,
                5 => self.remap_b,
                _ => return (CopyData::Unsupported, (size * count) as u64),
            };
            let bytes = value.to_le_bytes();
            element[i * size..(i + 1) * size].copy_from_slice(&bytes[..size]);
        }
        let size = size * count;
        (
            CopyData::Fill {
                element,
                size: size as u8,
            },
            size as u64,
        )
    }
}

/// The compute class's methods the double runs: inline data to memory,
/// launches and report semaphores. HOPPER_COMPUTE_A's methods are not in
/// NVIDIA's open headers at 550.163.01 (`clcbc0.h` names the class only);
/// these are AMPERE_COMPUTE_B's (`src/common/sdk/nvidia/inc/class/clc6c0.h`
/// at 550.163.01), which compute classes keep from one generation to the
/// next: a GUESS for Hopper.
pub mod compute {
    /// `NVC6C0_LINE_LENGTH_IN`: bytes a line of inline data.
    pub const LINE_LENGTH_IN: u32 = 0x0180;
    /// `NVC6C0_LINE_COUNT`.
    pub const LINE_COUNT: u32 = 0x0184;
    /// `NVC6C0_OFFSET_OUT_UPPER` (16:0).
    pub const OFFSET_OUT_UPPER: u32 = 0x0188;
    /// `NVC6C0_OFFSET_OUT`.
    pub const OFFSET_OUT: u32 = 0x018c;
    /// `NVC6C0_PITCH_OUT`.
    pub const PITCH_OUT: u32 = 0x0190;
    /// `NVC6C0_LAUNCH_DMA`: starts an inline transfer (`DST_MEMORY_LAYOUT`
    /// 0:0, pitch 1; `COMPLETION_TYPE` 5:4, 2 a semaphore release after
    /// it; `SEMAPHORE_STRUCT_SIZE` 12:12, 1 one word).
    pub const LAUNCH_DMA: u32 = 0x01b0;
    /// `NVC6C0_LOAD_INLINE_DATA`: the transfer's next word.
    pub const LOAD_INLINE_DATA: u32 = 0x01b4;
    /// `NVC6C0_SET_I2M_SEMAPHORE_A` (upper 8 bits).
    pub const SET_I2M_SEMAPHORE_A: u32 = 0x01dc;
    /// `NVC6C0_SET_I2M_SEMAPHORE_B`.
    pub const SET_I2M_SEMAPHORE_B: u32 = 0x01e0;
    /// `NVC6C0_SET_I2M_SEMAPHORE_C` (the payload).
    pub const SET_I2M_SEMAPHORE_C: u32 = 0x01e4;
    /// `NVC6C0_SEND_PCAS_A`: the QMD's address, shifted right by 8.
    pub const SEND_PCAS_A: u32 = 0x02b4;
    /// `NVC6C0_SEND_SIGNALING_PCAS2_B`: `PCAS_ACTION` (3:0); the
    /// scheduling actions launch the QMD of SEND_PCAS_A.
    pub const SEND_SIGNALING_PCAS2_B: u32 = 0x02c0;
    /// `NVC6C0_SET_REPORT_SEMAPHORE_A` (upper 8 bits).
    pub const SET_REPORT_SEMAPHORE_A: u32 = 0x1b00;
    /// `NVC6C0_SET_REPORT_SEMAPHORE_B`.
    pub const SET_REPORT_SEMAPHORE_B: u32 = 0x1b04;
    /// `NVC6C0_SET_REPORT_SEMAPHORE_C` (the payload).
    pub const SET_REPORT_SEMAPHORE_C: u32 = 0x1b08;
    /// `NVC6C0_SET_REPORT_SEMAPHORE_D`: `OPERATION` (1:0, 0 release),
    /// `STRUCTURE_SIZE` (28:28, 1 one word, else four with the time),
    /// `REDUCTION_ENABLE` (3:3) with `REDUCTION_OP` (11:9).
    pub const SET_REPORT_SEMAPHORE_D: u32 = 0x1b0c;
}

/// What a compute method asks of the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ComputeOp {
    /// Write the `len` low bytes of `word` (little-endian) at `addr`, a
    /// word of inline data; `then`, the transfer's semaphore, once it is
    /// the last.
    Inline {
        /// GPU virtual address.
        addr: u64,
        /// The data word.
        word: u32,
        /// Its bytes to write, 1-4.
        len: u8,
        /// The semaphore released after the transfer's last word.
        then: Option<Semaphore>,
    },
    /// A block-linear inline transfer's word, which the double skips.
    InlineSkipped,
    /// Launch the grid the QMD at this address describes. The double
    /// completes it at once: the kernel's instructions are not run.
    Launch(u64),
    /// Release (or reduce into) a report semaphore.
    Report(Semaphore),
}

/// A compute object's state (see [`compute`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct Compute {
    line_length: u32,
    line_count: u32,
    offset_out: (u32, u32),
    pitch_out: u32,
    i2m_sem: (u32, u32, u32),
    /// The inline transfer in progress: layout pitch, its semaphore, and
    /// bytes delivered.
    inline: Option<(bool, Option<Semaphore>, u64)>,
    qmd: u32,
    report: (u32, u32, u32),
}

impl Compute {
    /// Takes compute method `method` with `data`: what the engine must do,
    /// if anything.
    pub fn method(&mut self, method: u32, data: u32) -> Option<ComputeOp> {
        match method {
            compute::LINE_LENGTH_IN => self.line_length = data,
            compute::LINE_COUNT => self.line_count = data,
            compute::OFFSET_OUT_UPPER => self.offset_out.0 = data & 0x1_ffff,
            compute::OFFSET_OUT => self.offset_out.1 = data,
            compute::PITCH_OUT => self.pitch_out = data,
            compute::SET_I2M_SEMAPHORE_A => self.i2m_sem.0 = data & 0xff,
            compute::SET_I2M_SEMAPHORE_B => self.i2m_sem.1 = data,
            compute::SET_I2M_SEMAPHORE_C => self.i2m_sem.2 = data,
            compute::LAUNCH_DMA => {
                let one_word = data & (1 << 12) != 0;
                let sem = ((data >> 4) & 0x3 == 2).then(|| Semaphore {
                    addr: join(self.i2m_sem.0, self.i2m_sem.1),
                    payload: u64::from(self.i2m_sem.2),
                    op: SemOp::Release,
                    wide: false,
                    timestamp: !one_word,
                });
                self.inline = Some((data & 1 != 0, sem, 0));
            }
            compute::LOAD_INLINE_DATA => return self.inline_word(data),
            compute::SEND_PCAS_A => self.qmd = data,
            compute::SEND_SIGNALING_PCAS2_B => {
                // SCHEDULE and the actions that include it.
                if matches!(data & 0xf, 2 | 3 | 9 | 0xa | 0xb) {
                    return Some(ComputeOp::Launch(u64::from(self.qmd) << 8));
                }
            }
            compute::SET_REPORT_SEMAPHORE_A => self.report.0 = data & 0xff,
            compute::SET_REPORT_SEMAPHORE_B => self.report.1 = data,
            compute::SET_REPORT_SEMAPHORE_C => self.report.2 = data,
            compute::SET_REPORT_SEMAPHORE_D => {
                // OPERATION 0 is a release; 3 (TRAP) and the rest are not
                // modelled.
                if data & 0x3 != 0 {
                    return None;
                }
                return Some(ComputeOp::Report(Semaphore {
                    addr: join(self.report.0, self.report.1),
                    payload: u64::from(self.report.2),
                    op: if data & (1 << 3) != 0 {
                        SemOp::Reduction(((data >> 9) & 0x7) as u8)
                    } else {
                        SemOp::Release
                    },
                    wide: false,
                    timestamp: data & (1 << 28) == 0,
                }));
            }
            _ => {}
        }
        None
    }

    fn inline_word(&mut self, word: u32) -> Option<ComputeOp> {
        let (pitch, sem, sent) = self.inline?;
        let line = u64::from(self.line_length);
        let total = line * u64::from(self.line_count);
        if sent >= total || line == 0 {
            // Past the transfer: the engine takes no more words.
            self.inline = None;
            return None;
        }
        let len = (total - sent).min(4).min(line - sent % line);
        let next = sent + len;
        let last = next >= total;
        self.inline = (!last).then_some((pitch, sem, next));
        if !pitch {
            return Some(ComputeOp::InlineSkipped);
        }
        let (row, col) = (sent / line, sent % line);
        let addr = join(self.offset_out.0, self.offset_out.1)
            .wrapping_add(row.wrapping_mul(u64::from(self.pitch_out)))
            .wrapping_add(col);
        Some(ComputeOp::Inline {
            addr,
            word,
            len: len as u8,
            then: if last { sem } else { None },
        })
    }
}
