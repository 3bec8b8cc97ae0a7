// SPDX-License-Identifier: GPL-2.0

//! Layouts of RM_VID_HEAP_CONTROL (NVOS32) and its union views.

use super::alloc_params::MemoryAllocationParams;
use super::class_ids::class;
use super::memory_flags::heap;
use crate::nv::wire::Wire;

wire_struct! {
    /// NVOS32: RM_VID_HEAP_CONTROL, the old heap interface. `data` is a union
    /// whose member depends on `function`; read it through the typed views
    /// ([`Nvos32::alloc_size`], [`Nvos32::free_args`], [`Nvos32::info`], ...).
    pub struct Nvos32, size 184 {
        /// Client.
        h_root @ 0: u32,
        /// Parent (device).
        h_object_parent @ 4: u32,
        /// Heap function (see [`heap`]).
        function @ 8: u32,
        /// VA space.
        h_va_space @ 12: u32,
        /// IVC heap number.
        ivc_heap_number @ 16: i16,
        /// Out: status.
        status @ 20: u32,
        /// Out: heap total (INFO).
        total @ 24: u64,
        /// Out: heap free (INFO).
        free @ 32: u64,
        /// The function-specific union, raw.
        data @ 40: [u8; 144],
    }
}

/// Offset of [`Nvos32::data`] in the NVOS32 block (add it to the offsets of
/// the union views to get offsets in the whole block).
pub const NVOS32_DATA_OFFSET: usize = 40;

wire_struct! {
    /// NVOS32 union member for FUNCTION_ALLOC_SIZE (offsets inside `data`;
    /// add 40 for the block: hMemory@44, attr@56, size@88, attr2@144).
    /// Layout from `nvos.h`.
    pub struct Nvos32AllocSize, size 144 {
        /// Owner id.
        owner @ 0: u32,
        /// In/out: memory handle (in only with MEMORY_HANDLE_PROVIDED).
        h_memory @ 4: u32,
        /// Surface type.
        surface_type @ 8: u32,
        /// Allocation flags.
        flags @ 12: u32,
        /// In/out: attributes.
        attr @ 16: u32,
        /// In/out: format.
        format @ 20: u32,
        /// In/out: compression coverage.
        compr_covg @ 24: u32,
        /// Out: zcull coverage.
        zcull_covg @ 28: u32,
        /// In/out: partition stride.
        partition_stride @ 32: u32,
        /// Width hint.
        width @ 36: u32,
        /// Height hint.
        height @ 40: u32,
        /// In/out: size; out is the size allocated.
        size @ 48: u64,
        /// Alignment.
        alignment @ 56: u64,
        /// In/out: offset.
        offset @ 64: u64,
        /// Out: limit.
        limit @ 72: u64,
        /// Out: address.
        address @ 80: u64,
        /// Range begin.
        range_begin @ 88: u64,
        /// Range end.
        range_end @ 96: u64,
        /// In/out: attributes 2.
        attr2 @ 104: u32,
        /// Comptag offset.
        ctag_offset @ 108: u32,
        /// NUMA node.
        numa_node @ 112: i32,
    }
}

impl Nvos32AllocSize {
    /// The class-0x40/0x3e alloc params RM turns this heap request into
    /// (`ALLOC_SIZE_PARAMS`, `interface/deprecated/rmapi_deprecated_vidheapctrl.c:176-193`
    /// at 535.288.01): the offset too, where a fixed-address range starts.
    pub fn memory_params(&self) -> MemoryAllocationParams {
        MemoryAllocationParams {
            owner: self.owner,
            surface_type: self.surface_type,
            flags: self.flags,
            width: self.width,
            height: self.height,
            attr: self.attr,
            attr2: self.attr2,
            format: self.format,
            size: self.size,
            alignment: self.alignment,
            offset: self.offset,
            ..Default::default()
        }
    }

    /// The handle the caller chose (MEMORY_HANDLE_PROVIDED), or 0 for RM to pick.
    pub const fn requested_handle(&self) -> u32 {
        if self.flags & heap::ALLOC_FLAGS_MEMORY_HANDLE_PROVIDED != 0 {
            self.h_memory
        } else {
            0
        }
    }
}

wire_struct! {
    /// NVOS32 union member for FUNCTION_ALLOC_SIZE_RANGE (`nvos.h`): same
    /// leading fields as ALLOC_SIZE, but no width/height, so size sits at 40
    /// (block offset 80).
    pub struct Nvos32AllocSizeRange, size 144 {
        /// Owner id.
        owner @ 0: u32,
        /// In/out: memory handle.
        h_memory @ 4: u32,
        /// Surface type.
        surface_type @ 8: u32,
        /// Allocation flags.
        flags @ 12: u32,
        /// In/out: attributes.
        attr @ 16: u32,
        /// In/out: format.
        format @ 20: u32,
        /// In/out: compression coverage.
        compr_covg @ 24: u32,
        /// Out: zcull coverage.
        zcull_covg @ 28: u32,
        /// In/out: partition stride.
        partition_stride @ 32: u32,
        /// In/out: size.
        size @ 40: u64,
        /// Alignment.
        alignment @ 48: u64,
        /// In/out: offset.
        offset @ 56: u64,
        /// Out: limit.
        limit @ 64: u64,
        /// Range begin.
        range_begin @ 72: u64,
        /// Range end.
        range_end @ 80: u64,
        /// Out: address.
        address @ 88: u64,
        /// In/out: attributes 2.
        attr2 @ 96: u32,
        /// Comptag offset.
        ctag_offset @ 100: u32,
        /// NUMA node.
        numa_node @ 104: i32,
    }
}

wire_struct! {
    /// NVOS32 union member for FUNCTION_ALLOC_TILED_PITCH_HEIGHT (`nvos.h`):
    /// attr at 24 (block 64), size at 48 (block 88).
    pub struct Nvos32AllocTiledPitchHeight, size 144 {
        /// Owner id.
        owner @ 0: u32,
        /// In/out: memory handle.
        h_memory @ 4: u32,
        /// Surface type.
        surface_type @ 8: u32,
        /// Allocation flags.
        flags @ 12: u32,
        /// Height in pixels.
        height @ 16: u32,
        /// In/out: pitch.
        pitch @ 20: i32,
        /// In/out: attributes.
        attr @ 24: u32,
        /// Width in pixels.
        width @ 28: u32,
        /// In/out: format.
        format @ 32: u32,
        /// In/out: compression coverage.
        compr_covg @ 36: u32,
        /// Out: zcull coverage.
        zcull_covg @ 40: u32,
        /// In/out: partition stride.
        partition_stride @ 44: u32,
        /// In/out: size.
        size @ 48: u64,
        /// Alignment.
        alignment @ 56: u64,
        /// In/out: offset.
        offset @ 64: u64,
        /// Out: limit.
        limit @ 72: u64,
        /// Out: address.
        address @ 80: u64,
        /// Range begin.
        range_begin @ 88: u64,
        /// Range end.
        range_end @ 96: u64,
        /// In/out: attributes 2.
        attr2 @ 104: u32,
        /// Comptag offset.
        ctag_offset @ 108: u32,
        /// NUMA node.
        numa_node @ 112: i32,
    }
}

wire_struct! {
    /// NVOS32 union member for FUNCTION_FREE (`nvos.h`); hMemory shares
    /// offset 4 (block 44) with the ALLOC_SIZE member.
    pub struct Nvos32Free, size 144 {
        /// Owner id.
        owner @ 0: u32,
        /// Memory to free.
        h_memory @ 4: u32,
        /// Must be [`heap::FREE_FLAGS_MEMORY_HANDLE_PROVIDED`].
        flags @ 8: u32,
    }
}

wire_struct! {
    /// NVOS32 union member for FUNCTION_INFO (`nvos.h`). RM fills it from
    /// FB_GET_INFO_V2 issued internally: base = HEAP_BASE_KB, size =
    /// LARGEST_FREE_REGION_SIZE_KB, offset = LARGEST_FREE_REGION_BASE_KB, all
    /// in bytes; the block's `total` = HEAP_SIZE + FB_TAX and `free` =
    /// HEAP_FREE (`_nvos32FunctionInfo`,
    /// `src/nvidia/interface/deprecated/rmapi_deprecated_vidheapctrl.c`).
    pub struct Nvos32Info, size 144 {
        /// Requested heap attributes.
        attr @ 0: u32,
        /// Out: base of the largest free block.
        offset @ 8: u64,
        /// Out: size of the largest free block.
        size @ 16: u64,
        /// Out: heap physical base.
        base @ 24: u64,
    }
}

/// A heap allocation request read out of an NVOS32 block, whichever of the
/// three allocating functions it uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeapAlloc {
    /// The function (ALLOC_SIZE, ALLOC_SIZE_RANGE or ALLOC_TILED_PITCH_HEIGHT).
    pub function: u32,
    /// In/out: memory handle.
    pub h_memory: u32,
    /// Allocation flags.
    pub flags: u32,
    /// Attributes.
    pub attr: u32,
    /// Attributes 2.
    pub attr2: u32,
    /// Size (in: requested; out: allocated).
    pub size: u64,
    /// Out: limit.
    pub limit: u64,
}

impl HeapAlloc {
    /// The class RM turns this request into ([`heap::alloc_class`]).
    pub const fn class(&self) -> u32 {
        heap::alloc_class(self.flags, self.attr)
    }

    /// Whether this request allocates VRAM (class 0x40: VIDMEM location and
    /// not VIRTUAL).
    pub const fn allocates_vram(&self) -> bool {
        self.class() == class::NV01_MEMORY_LOCAL_USER
    }
}

impl Nvos32 {
    /// The ALLOC_SIZE view of `data`.
    pub fn alloc_size(&self) -> Nvos32AllocSize {
        Wire::decode(&self.data)
    }

    /// Stores an ALLOC_SIZE view into `data`.
    pub fn set_alloc_size(&mut self, v: &Nvos32AllocSize) {
        v.encode(&mut self.data);
    }

    /// The ALLOC_SIZE_RANGE view of `data`.
    pub fn alloc_size_range(&self) -> Nvos32AllocSizeRange {
        Wire::decode(&self.data)
    }

    /// Stores an ALLOC_SIZE_RANGE view into `data`.
    pub fn set_alloc_size_range(&mut self, v: &Nvos32AllocSizeRange) {
        v.encode(&mut self.data);
    }

    /// The ALLOC_TILED_PITCH_HEIGHT view of `data`.
    pub fn alloc_tiled_pitch_height(&self) -> Nvos32AllocTiledPitchHeight {
        Wire::decode(&self.data)
    }

    /// Stores an ALLOC_TILED_PITCH_HEIGHT view into `data`.
    pub fn set_alloc_tiled_pitch_height(&mut self, v: &Nvos32AllocTiledPitchHeight) {
        v.encode(&mut self.data);
    }

    /// The FREE view of `data`.
    pub fn free_args(&self) -> Nvos32Free {
        Wire::decode(&self.data)
    }

    /// Stores a FREE view into `data`.
    pub fn set_free_args(&mut self, v: &Nvos32Free) {
        v.encode(&mut self.data);
    }

    /// The INFO view of `data`.
    pub fn info(&self) -> Nvos32Info {
        Wire::decode(&self.data)
    }

    /// Stores an INFO view into `data`.
    pub fn set_info(&mut self, v: &Nvos32Info) {
        v.encode(&mut self.data);
    }

    /// The allocation this block requests (or reports, after the call), if
    /// its function allocates memory; `None` for FREE, INFO and the rest.
    pub fn heap_alloc(&self) -> Option<HeapAlloc> {
        let function = self.function;
        match function {
            heap::FUNCTION_ALLOC_SIZE => {
                let a = self.alloc_size();
                Some(HeapAlloc {
                    function,
                    h_memory: a.h_memory,
                    flags: a.flags,
                    attr: a.attr,
                    attr2: a.attr2,
                    size: a.size,
                    limit: a.limit,
                })
            }
            heap::FUNCTION_ALLOC_SIZE_RANGE => {
                let a = self.alloc_size_range();
                Some(HeapAlloc {
                    function,
                    h_memory: a.h_memory,
                    flags: a.flags,
                    attr: a.attr,
                    attr2: a.attr2,
                    size: a.size,
                    limit: a.limit,
                })
            }
            heap::FUNCTION_ALLOC_TILED_PITCH_HEIGHT => {
                let a = self.alloc_tiled_pitch_height();
                Some(HeapAlloc {
                    function,
                    h_memory: a.h_memory,
                    flags: a.flags,
                    attr: a.attr,
                    attr2: a.attr2,
                    size: a.size,
                    limit: a.limit,
                })
            }
            _ => None,
        }
    }

    /// Whether this block asks RM to allocate VRAM (an allocating function
    /// whose request becomes class 0x40).
    pub fn is_vram_alloc(&self) -> bool {
        self.heap_alloc().is_some_and(|a| a.allocates_vram())
    }

    /// The memory allocation RM makes of this block's heap allocation
    /// function: the handle asked for (0: RM picks), the class and the
    /// class's alloc params. `None` for other functions.
    ///
    /// ALLOC_SIZE_RANGE passes its range as `rangeLo`/`rangeHi`;
    /// ALLOC_TILED_PITCH_HEIGHT its width, height and pitch, and a size of
    /// `|pitch| * height` (what a pitch surface of that height occupies).
    pub fn heap_memory_params(&self) -> Option<(u32, u32, MemoryAllocationParams)> {
        let a = self.heap_alloc()?;
        let handle = if a.flags & heap::ALLOC_FLAGS_MEMORY_HANDLE_PROVIDED != 0 {
            a.h_memory
        } else {
            0
        };
        let params = match self.function {
            heap::FUNCTION_ALLOC_SIZE => self.alloc_size().memory_params(),
            heap::FUNCTION_ALLOC_SIZE_RANGE => {
                let r = self.alloc_size_range();
                MemoryAllocationParams {
                    owner: r.owner,
                    flags: r.flags,
                    attr: r.attr,
                    attr2: r.attr2,
                    size: r.size,
                    alignment: r.alignment,
                    range_lo: r.range_begin,
                    range_hi: r.range_end,
                    ..Default::default()
                }
            }
            _ => {
                let t = self.alloc_tiled_pitch_height();
                MemoryAllocationParams {
                    owner: t.owner,
                    flags: t.flags,
                    attr: t.attr,
                    attr2: t.attr2,
                    width: t.width,
                    height: t.height,
                    pitch: t.pitch,
                    size: u64::from(t.pitch.unsigned_abs()) * u64::from(t.height),
                    alignment: t.alignment,
                    ..Default::default()
                }
            }
        };
        Some((handle, a.class(), params))
    }

    /// Writes the result of this block's heap allocation back into its
    /// function's arguments: the handle, the size and the limit.
    pub fn set_heap_result(&mut self, handle: u32, size: u64) {
        let limit = size.saturating_sub(1);
        match self.function {
            heap::FUNCTION_ALLOC_SIZE => {
                let mut v = self.alloc_size();
                (v.h_memory, v.size, v.limit) = (handle, size, limit);
                self.set_alloc_size(&v);
            }
            heap::FUNCTION_ALLOC_SIZE_RANGE => {
                let mut v = self.alloc_size_range();
                (v.h_memory, v.size, v.limit) = (handle, size, limit);
                self.set_alloc_size_range(&v);
            }
            heap::FUNCTION_ALLOC_TILED_PITCH_HEIGHT => {
                let mut v = self.alloc_tiled_pitch_height();
                (v.h_memory, v.size, v.limit) = (handle, size, limit);
                self.set_alloc_tiled_pitch_height(&v);
            }
            _ => {}
        }
    }
}
