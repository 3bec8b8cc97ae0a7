// SPDX-License-Identifier: GPL-2.0

//! The copy engine's methods (HOPPER_DMA_COPY_A,
//! `kernel-open/nvidia-uvm/clc8b5.h:121-127,158-258,303-354` at
//! 550.163.01).

use super::{join, SemOp, Semaphore};

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
            SET_SEMAPHORE_A => self.sem_addr.0 = data & 0x1ff_ffff,
            SET_SEMAPHORE_B => self.sem_addr.1 = data,
            SET_SEMAPHORE_PAYLOAD => self.sem_payload.1 = data,
            SET_SEMAPHORE_PAYLOAD_UPPER => self.sem_payload.0 = data,
            OFFSET_IN_UPPER => self.offset_in.0 = data & 0x1ff_ffff,
            OFFSET_IN_LOWER => self.offset_in.1 = data,
            OFFSET_OUT_UPPER => self.offset_out.0 = data & 0x1ff_ffff,
            OFFSET_OUT_LOWER => self.offset_out.1 = data,
            PITCH_IN => self.pitch_in = data,
            PITCH_OUT => self.pitch_out = data,
            LINE_LENGTH_IN => self.line_length = data,
            LINE_COUNT => self.line_count = data,
            SET_REMAP_CONST_A => self.remap_a = data,
            SET_REMAP_CONST_B => self.remap_b = data,
            SET_REMAP_COMPONENTS => self.remap = data,
            LAUNCH_DMA => return Some(self.launch(data)),
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
