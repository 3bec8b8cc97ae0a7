// SPDX-License-Identifier: GPL-2.0

//! The compute class's methods the double runs: inline data to memory,
//! launches and report semaphores. HOPPER_COMPUTE_A's methods are not in
//! NVIDIA's open headers at 550.163.01 (`clcbc0.h` names the class only);
//! these are AMPERE_COMPUTE_B's (`src/common/sdk/nvidia/inc/class/clc6c0.h`
//! at 550.163.01), which compute classes keep from one generation to the
//! next: a GUESS for Hopper.
//!
//! A launch's QMD (Queue Meta Data) names the semaphores the grid releases
//! when it completes; their fields are HOPPER_COMPUTE_A's QMD versions
//! 03_00 and 04_00 as NVIDIA documents them (`classes/compute/clcbc0qmd.h`
//! of NVIDIA's open-gpu-doc, commit 5d957df), bit positions `MW(hi:lo)`
//! counted from the QMD's first byte, little-endian words.

use super::{join, SemOp, Semaphore};

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

/// The reduction a compute semaphore names (`REDUCTION_OP`: RED_ADD 0,
/// RED_MIN 1, RED_MAX 2, RED_INC 3, RED_DEC 4, RED_AND 5, RED_OR 6,
/// RED_XOR 7, `clc6c0.h:612-620`; the QMDs' are the same,
/// `clcbc0qmd.h`) as the host's SEM_EXECUTE numbers it (IMIN 0, IMAX 1,
/// IXOR 2, IAND 3, IOR 4, IADD 5, INC 6, DEC 7, `clc86f.h`), which
/// [`SemOp::Reduction`] holds.
pub const fn host_reduction(op: u32) -> u8 {
    const HOST: [u8; 8] = [5, 0, 1, 6, 7, 3, 4, 2];
    HOST[(op & 0x7) as usize]
}

/// Bytes of a QMD of version 03_00 (2048 bits) ...
pub const QMD_V03_BYTES: usize = 256;
/// ... and of version 04_00 (3072 bits).
pub const QMD_V04_BYTES: usize = 384;

/// `MW(hi:lo)` of QMD words `q` (a field within one word; 0 past the end).
fn mw(q: &[u32], hi: u32, lo: u32) -> u32 {
    let w = q.get((lo / 32) as usize).copied().unwrap_or(0) >> (lo % 32);
    let width = hi - lo + 1;
    if width >= 32 {
        w
    } else {
        w & ((1 << width) - 1)
    }
}

/// A QMD's `QMD_MAJOR_VERSION` (`MW(583:580)` in versions 03_00 and
/// 04_00), read from its first [`QMD_V03_BYTES`].
pub fn qmd_major_version(q: &[u32]) -> u32 {
    mw(q, 583, 580)
}

/// The semaphores a grid of QMD `q` (its words) releases when it
/// completes, in order: version 03_00's RELEASE0-2 (`RELEASEi_ENABLE`,
/// their address, payload and reduction at bits 768, 896 and 1664 on),
/// version 04_00's RELEASE_SEMAPHORE0-2 (`RELEASE_ENABLE(i)` and its
/// flags at bit 320 + 16i, the address and payload at 640 + 128i); none
/// for another version. `STRUCTURE_SIZE` FOUR_WORDS (0) writes the time
/// 8 bytes on, TWO_WORDS (2) or `PAYLOAD64B` a 64-bit payload.
pub fn qmd_releases(q: &[u32]) -> [Option<Semaphore>; 3] {
    let sem = |addr: u64, payload: u64, flags: [u32; 5]| {
        let [enable, size, red_enable, red_op, wide64] = flags;
        (enable != 0).then(|| {
            let wide = wide64 != 0 || size == 2;
            Semaphore {
                addr,
                payload: if wide { payload } else { payload & 0xffff_ffff },
                op: if red_enable != 0 {
                    SemOp::Reduction(host_reduction(red_op))
                } else {
                    SemOp::Release
                },
                wide,
                timestamp: size == 0,
            }
        })
    };
    let mut out = [None; 3];
    for (i, slot) in out.iter_mut().enumerate() {
        let i = i as u32;
        *slot = match qmd_major_version(q) {
            3 => {
                let b = [768, 896, 1664][i as usize];
                sem(
                    join(mw(q, b + 39, b + 32), mw(q, b + 31, b)),
                    join(mw(q, b + 127, b + 96), mw(q, b + 95, b + 64)),
                    [
                        mw(q, b + 55, b + 55),
                        mw(q, b + 63, b + 62),
                        mw(q, b + 58, b + 58),
                        mw(q, b + 54, b + 52),
                        mw(q, b + 61, b + 61),
                    ],
                )
            }
            4 => {
                let (f, s) = (320 + 16 * i, 640 + 128 * i);
                sem(
                    join(mw(q, s + 56, s + 32), mw(q, s + 31, s)),
                    join(mw(q, s + 127, s + 96), mw(q, s + 95, s + 64)),
                    [
                        mw(q, f, f),
                        mw(q, f + 2, f + 1),
                        mw(q, f + 4, f + 4),
                        mw(q, f + 7, f + 5),
                        mw(q, f + 12, f + 12),
                    ],
                )
            }
            _ => None,
        };
    }
    out
}

/// The CTAs of the grid of QMD `q` (its words): width times height times
/// depth, version 03_00's `CTA_RASTER_WIDTH` `MW(415:384)`, `HEIGHT`
/// `MW(431:416)` and `DEPTH` `MW(463:448)`, version 04_00's
/// `GRID_WIDTH` `MW(1055:1024)`, `GRID_HEIGHT` `MW(1071:1056)` and
/// `GRID_DEPTH` `MW(1103:1088)` (`clcbc0qmd.h`); 0 for another version.
pub fn qmd_ctas(q: &[u32]) -> u64 {
    let (w, h, d) = match qmd_major_version(q) {
        3 => (mw(q, 415, 384), mw(q, 431, 416), mw(q, 463, 448)),
        4 => (mw(q, 1055, 1024), mw(q, 1071, 1056), mw(q, 1103, 1088)),
        _ => (0, 0, 0),
    };
    // At most 2^32 * 2^16 * 2^16: no overflow.
    u64::from(w) * u64::from(h) * u64::from(d)
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
    /// completes it at once, releasing the QMD's semaphores
    /// ([`qmd_releases`]): the kernel's instructions are not run.
    Launch(u64),
    /// Release (or reduce into) a report semaphore.
    Report(Semaphore),
}

/// A compute object's state: what the methods above set.
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
            LINE_LENGTH_IN => self.line_length = data,
            LINE_COUNT => self.line_count = data,
            OFFSET_OUT_UPPER => self.offset_out.0 = data & 0x1_ffff,
            OFFSET_OUT => self.offset_out.1 = data,
            PITCH_OUT => self.pitch_out = data,
            SET_I2M_SEMAPHORE_A => self.i2m_sem.0 = data & 0xff,
            SET_I2M_SEMAPHORE_B => self.i2m_sem.1 = data,
            SET_I2M_SEMAPHORE_C => self.i2m_sem.2 = data,
            LAUNCH_DMA => {
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
            LOAD_INLINE_DATA => return self.inline_word(data),
            SEND_PCAS_A => self.qmd = data,
            SEND_SIGNALING_PCAS2_B => {
                // SCHEDULE and the actions that include it.
                if matches!(data & 0xf, 2 | 3 | 9 | 0xa | 0xb) {
                    return Some(ComputeOp::Launch(u64::from(self.qmd) << 8));
                }
            }
            SET_REPORT_SEMAPHORE_A => self.report.0 = data & 0xff,
            SET_REPORT_SEMAPHORE_B => self.report.1 = data,
            SET_REPORT_SEMAPHORE_C => self.report.2 = data,
            SET_REPORT_SEMAPHORE_D => {
                // OPERATION 0 is a release; 3 (TRAP) and the rest are not
                // modelled.
                if data & 0x3 != 0 {
                    return None;
                }
                return Some(ComputeOp::Report(Semaphore {
                    addr: join(self.report.0, self.report.1),
                    payload: u64::from(self.report.2),
                    op: if data & (1 << 3) != 0 {
                        SemOp::Reduction(host_reduction(data >> 9))
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
