// SPDX-License-Identifier: GPL-2.0

//! Memory attributes, VID_HEAP functions and the other escape flag words.

// ---------------------------------------------------------------------------
// Memory attributes and VID_HEAP functions.
// ---------------------------------------------------------------------------

/// NVOS32 heap functions, allocation flags and attributes (`nvos.h`). The
/// flags and attr words are shared by [`Nvos32`] and
/// [`MemoryAllocationParams`].
pub mod heap {
    use crate::nv::wire::BitField;

    /// `NVOS32_FUNCTION_ALLOC_SIZE`.
    pub const FUNCTION_ALLOC_SIZE: u32 = 2;
    /// `NVOS32_FUNCTION_FREE` (`nvos.h`).
    pub const FUNCTION_FREE: u32 = 3;
    /// `NVOS32_FUNCTION_INFO`: fills total/free (and the Info union member).
    pub const FUNCTION_INFO: u32 = 5;
    /// `NVOS32_FUNCTION_ALLOC_TILED_PITCH_HEIGHT`: also allocates memory, with
    /// its own union layout (`nvos.h`,
    /// `src/nvidia/interface/deprecated/rmapi_deprecated_vidheapctrl.c`).
    pub const FUNCTION_ALLOC_TILED_PITCH_HEIGHT: u32 = 6;
    /// `NVOS32_FUNCTION_ALLOC_SIZE_RANGE`: also allocates memory, with its own
    /// union layout (`nvos.h`).
    pub const FUNCTION_ALLOC_SIZE_RANGE: u32 = 14;

    /// `NVOS32_TYPE_IMAGE`: the ordinary surface type.
    pub const TYPE_IMAGE: u32 = 0;

    /// `NVOS32_ALLOC_FLAGS_IGNORE_BANK_PLACEMENT`.
    pub const ALLOC_FLAGS_IGNORE_BANK_PLACEMENT: u32 = 0x0000_0001;
    /// `NVOS32_ALLOC_FLAGS_ALIGNMENT_FORCE`.
    pub const ALLOC_FLAGS_ALIGNMENT_FORCE: u32 = 0x0000_0100;
    /// `NVOS32_ALLOC_FLAGS_FIXED_ADDRESS_ALLOCATE`: at the offset given.
    pub const ALLOC_FLAGS_FIXED_ADDRESS_ALLOCATE: u32 = 0x0000_0010;
    /// `NVOS32_ALLOC_FLAGS_MEMORY_HANDLE_PROVIDED`: hMemory is an input.
    pub const ALLOC_FLAGS_MEMORY_HANDLE_PROVIDED: u32 = 0x0000_4000;
    /// `NVOS32_ALLOC_FLAGS_MAP_NOT_REQUIRED`.
    pub const ALLOC_FLAGS_MAP_NOT_REQUIRED: u32 = 0x0000_8000;
    /// `NVOS32_ALLOC_FLAGS_PERSISTENT_VIDMEM`.
    pub const ALLOC_FLAGS_PERSISTENT_VIDMEM: u32 = 0x0001_0000;
    /// `NVOS32_ALLOC_FLAGS_LAZY`: a VA range whose page tables RM makes
    /// as it is mapped (`nvos.h:1469` at 550.163.01).
    pub const ALLOC_FLAGS_LAZY: u32 = 0x0000_0400;
    /// `NVOS32_ALLOC_FLAGS_VIRTUAL`: a VA reservation, no backing.
    pub const ALLOC_FLAGS_VIRTUAL: u32 = 0x0008_0000;
    /// `NVOS32_FREE_FLAGS_MEMORY_HANDLE_PROVIDED`: required by FUNCTION_FREE.
    pub const FREE_FLAGS_MEMORY_HANDLE_PROVIDED: u32 = 0x1;

    /// `NVOS32_ATTR_PAGE_SIZE` 24:23.
    pub const ATTR_PAGE_SIZE: BitField = BitField::new(24, 23);
    /// Page size: default.
    pub const ATTR_PAGE_SIZE_DEFAULT: u32 = 0;
    /// Page size: 4 KiB.
    pub const ATTR_PAGE_SIZE_4KB: u32 = 1;
    /// Page size: big.
    pub const ATTR_PAGE_SIZE_BIG: u32 = 2;
    /// Page size: huge.
    pub const ATTR_PAGE_SIZE_HUGE: u32 = 3;
    /// `NVOS32_ATTR_LOCATION` 26:25.
    pub const ATTR_LOCATION: BitField = BitField::new(26, 25);
    /// Location: video memory.
    pub const ATTR_LOCATION_VIDMEM: u32 = 0;
    /// Location: system memory over PCI.
    pub const ATTR_LOCATION_PCI: u32 = 1;
    /// Location: any.
    pub const ATTR_LOCATION_ANY: u32 = 3;
    /// `NVOS32_ATTR_PHYSICALITY` 28:27.
    pub const ATTR_PHYSICALITY: BitField = BitField::new(28, 27);
    /// Physicality: default.
    pub const ATTR_PHYSICALITY_DEFAULT: u32 = 0;
    /// Physicality: non-contiguous.
    pub const ATTR_PHYSICALITY_NONCONTIGUOUS: u32 = 1;
    /// Physicality: contiguous.
    pub const ATTR_PHYSICALITY_CONTIGUOUS: u32 = 2;
    /// Physicality: contiguous preferred, non-contiguous allowed.
    pub const ATTR_PHYSICALITY_ALLOW_NONCONTIGUOUS: u32 = 3;
    /// `NVOS32_ATTR_COHERENCY` 31:29.
    pub const ATTR_COHERENCY: BitField = BitField::new(31, 29);
    /// Coherency: uncached.
    pub const ATTR_COHERENCY_UNCACHED: u32 = 0;
    /// Coherency: cached.
    pub const ATTR_COHERENCY_CACHED: u32 = 1;
    /// Coherency: write-combined.
    pub const ATTR_COHERENCY_WRITE_COMBINE: u32 = 2;
    /// `NVOS32_ATTR2_GPU_CACHEABLE` 3:2.
    pub const ATTR2_GPU_CACHEABLE: BitField = BitField::new(3, 2);
    /// GPU cacheable: yes.
    pub const ATTR2_GPU_CACHEABLE_YES: u32 = 1;
    /// GPU cacheable: no.
    pub const ATTR2_GPU_CACHEABLE_NO: u32 = 2;
    /// `NVOS32_ATTR2_PAGE_SIZE_HUGE` 21:20: which huge page when
    /// [`ATTR_PAGE_SIZE`] is [`ATTR_PAGE_SIZE_HUGE`].
    pub const ATTR2_PAGE_SIZE_HUGE: BitField = BitField::new(21, 20);
    /// Huge page: default (2 MiB).
    pub const ATTR2_PAGE_SIZE_HUGE_DEFAULT: u32 = 0;
    /// Huge page: 2 MiB.
    pub const ATTR2_PAGE_SIZE_HUGE_2MB: u32 = 1;
    /// Huge page: 512 MiB.
    pub const ATTR2_PAGE_SIZE_HUGE_512MB: u32 = 2;
    /// Huge page: 256 GiB.
    pub const ATTR2_PAGE_SIZE_HUGE_256GB: u32 = 3;

    /// The class RM allocates for a heap request with these flags and attr:
    /// VIRTUAL wins, then VIDMEM location gives VRAM, anything else system
    /// memory (`_rmVidHeapControlAllocCommon`,
    /// `src/nvidia/interface/deprecated/rmapi_deprecated_vidheapctrl.c`).
    pub const fn alloc_class(flags: u32, attr: u32) -> u32 {
        if flags & ALLOC_FLAGS_VIRTUAL != 0 {
            crate::nv::abi::class_ids::class::NV50_MEMORY_VIRTUAL
        } else if ATTR_LOCATION.get(attr) == ATTR_LOCATION_VIDMEM {
            crate::nv::abi::class_ids::class::NV01_MEMORY_LOCAL_USER
        } else {
            crate::nv::abi::class_ids::class::NV01_MEMORY_SYSTEM
        }
    }
}

/// NVOS02 (RM_ALLOC_MEMORY) flags (`nvos.h`).
pub mod os02 {
    use crate::nv::wire::BitField;

    /// `NVOS02_FLAGS_PHYSICALITY` 7:4.
    pub const FLAGS_PHYSICALITY: BitField = BitField::new(7, 4);
    /// `NVOS02_FLAGS_LOCATION` 11:8.
    pub const FLAGS_LOCATION: BitField = BitField::new(11, 8);
    /// Location: PCI (system memory).
    pub const FLAGS_LOCATION_PCI: u32 = 0;
    /// Location: video memory.
    pub const FLAGS_LOCATION_VIDMEM: u32 = 2;
    /// `NVOS02_FLAGS_COHERENCY` 15:12.
    pub const FLAGS_COHERENCY: BitField = BitField::new(15, 12);
    /// `NVOS02_FLAGS_ALLOC` 17:16.
    pub const FLAGS_ALLOC: BitField = BitField::new(17, 16);
    /// `NVOS02_FLAGS_ALLOC_NONE`: describe, do not allocate.
    pub const FLAGS_ALLOC_NONE: u32 = 1;
}

/// NVOS33 (RM_MAP_MEMORY) flags (`nvos.h`).
pub mod os33 {
    use crate::nv::wire::BitField;

    /// `NVOS33_FLAGS_ACCESS` 1:0.
    pub const FLAGS_ACCESS: BitField = BitField::new(1, 0);
    /// Access: read-write.
    pub const FLAGS_ACCESS_READ_WRITE: u32 = 0;
    /// Access: read-only.
    pub const FLAGS_ACCESS_READ_ONLY: u32 = 1;
    /// Access: write-only.
    pub const FLAGS_ACCESS_WRITE_ONLY: u32 = 2;
    /// `NVOS33_FLAGS_MAPPING` 16:15.
    pub const FLAGS_MAPPING: BitField = BitField::new(16, 15);
    /// `NVOS33_FLAGS_CACHING_TYPE` 25:23.
    pub const FLAGS_CACHING_TYPE: BitField = BitField::new(25, 23);
    /// Caching: cached.
    pub const FLAGS_CACHING_TYPE_CACHED: u32 = 0;
    /// Caching: uncached.
    pub const FLAGS_CACHING_TYPE_UNCACHED: u32 = 1;
    /// Caching: write-combined.
    pub const FLAGS_CACHING_TYPE_WRITECOMBINED: u32 = 2;
    /// Caching: default.
    pub const FLAGS_CACHING_TYPE_DEFAULT: u32 = 6;
}

/// NVOS64 `flags` bit 0: the alloc params are FINN-serialized.
pub const NVOS64_FLAGS_FINN_SERIALIZED: u32 = 0x1;

/// NV_VASPACE_ALLOCATION_PARAMETERS `index` values (`nvos.h`).
pub mod vaspace {
    /// `NV_VASPACE_ALLOCATION_INDEX_GPU_NEW`: create a new VA space.
    pub const INDEX_GPU_NEW: u32 = 0;
    /// `NV_VASPACE_ALLOCATION_INDEX_GPU_HOST`: the BAR1 VA space.
    pub const INDEX_GPU_HOST: u32 = 1;
    /// `NV_VASPACE_ALLOCATION_FLAGS_IS_EXTERNALLY_OWNED` (bit 3): the VA
    /// space's page tables are managed outside RM (by UVM);
    /// `UVM_REGISTER_GPU_VASPACE` requires it.
    pub const FLAGS_IS_EXTERNALLY_OWNED: u32 = 1 << 3;
    /// `NV_VASPACE_ALLOCATION_FLAGS_ENABLE_PAGE_FAULTING` (bit 6).
    pub const FLAGS_ENABLE_PAGE_FAULTING: u32 = 1 << 6;
    /// 64 KiB big pages.
    pub const BIG_PAGE_SIZE_64K: u32 = 64 * 1024;
    /// 128 KiB big pages.
    pub const BIG_PAGE_SIZE_128K: u32 = 128 * 1024;
}

/// NV_CTXSHARE_ALLOCATION_PARAMETERS `flags` (`nvos.h`): subcontext kind in
/// bits 1:0.
pub mod ctxshare {
    /// `NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT_SYNC`.
    pub const FLAGS_SUBCONTEXT_SYNC: u32 = 0;
    /// `NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT_ASYNC`.
    pub const FLAGS_SUBCONTEXT_ASYNC: u32 = 1;
    /// `NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT_SPECIFIED`: subctxId is an input.
    pub const FLAGS_SUBCONTEXT_SPECIFIED: u32 = 2;
}

/// CHECK_VERSION_STR commands and replies (`kernel-open/common/inc/nv-ioctl.h`).
pub mod version {
    /// Compare the whole version string.
    pub const CMD_STRICT: u32 = 0;
    /// Compare up to the first '.' (the character '1').
    pub const CMD_RELAXED: u32 = 0x31;
    /// Copy the driver's version string out (the character '2').
    pub const CMD_QUERY: u32 = 0x32;
    /// Reply: not recognized.
    pub const REPLY_UNRECOGNIZED: u32 = 0;
    /// Reply: recognized (the driver always sets this).
    pub const REPLY_RECOGNIZED: u32 = 1;
    /// Length of the version string field.
    pub const STRING_LENGTH: usize = 64;
}

// ---------------------------------------------------------------------------
// VRAM RM commits for objects of its own (`ClassRow::commits`).
// ---------------------------------------------------------------------------

/// `RM_PAGE_SIZE`: the unit of RM's internal allocations.
const RM_PAGE_SIZE: u32 = 4096;

/// A GPU VA space's (FERMI_VASPACE_A) own VRAM: the top three page levels
/// of the server RM's carveout, which the client RM reserves in the
/// device's page-level pool as it makes the VA space
/// (`_vaspaceapiManagePageLevelsForSplitVaSpace`,
/// `gpu/mem_mgr/vaspace_api.c:714-735` at 550.163.01, `:760` at
/// 535.261.03, `:770` at 595.45.04: `3 * RM_PAGE_SIZE`), released when
/// the VA space goes.
pub const VASPACE_PAGE_LEVELS: u32 = 3 * RM_PAGE_SIZE;

/// A GPFIFO channel's own VRAM: its instance block (RAMFC lies inside it),
/// `NV_RAMIN_ALLOC_SIZE` bytes (`published/ampere/ga100/dev_ram.h:26`, and
/// the same at every architecture since Maxwell), allocated from
/// framebuffer only on a GSP client (`kchannelAllocMem_GM107`,
/// `fifo/arch/maxwell/kernel_channel_gm107.c:197-236` at 550.163.01;
/// `kfifoGetInstMemInfo_GM107` serves Hopper and Blackwell too).
pub const INSTANCE_BLOCK: u32 = RM_PAGE_SIZE;

/// The GPU page-table levels RM sizes a page-table reservation over, for
/// the format of Hopper and Blackwell (version 3,
/// `gpu/mmu/arch/hopper/kern_gmmu_fmt_gh10x.c:62-117` at 550.163.01):
/// `(virtual address bits one entry covers, bytes per entry)` of each page
/// directory from the root down (PD4, PD3, PD2, PD1, and PD0, whose dual
/// entries are 16 bytes).
const PAGE_DIRS: [(u32, u64); 5] = [(56, 8), (47, 8), (38, 8), (29, 8), (21, 16)];

/// The bits the 4 KiB page table under PD0 covers (20:12): 512 entries of
/// 8 bytes, 4 KiB a table.
const SMALL_PT_BITS: u32 = 21;

/// The VRAM RM reserves in its page-level pool for mapping `size` bytes of
/// GPU VA with 4 KiB pages, its worst case, computed as RM computes it
/// (`gvaspaceReserveMempool`, `mem_mgr/gpu_vaspace.c:5289-5326` at
/// 550.163.01, from `kgmmuGetSizeOfPageDirs` and
/// `kgmmuGetSizeOfPageTables`, `gpu/mmu/kern_gmmu.c:791-915`): over
/// `[0, size - 1]`, each directory level takes
/// `ceil((size - 1) / coverage) + 1` entries rounded up to 4 KiB, and the
/// page tables `ceil((size - 1) / 2 MiB) + 1` tables of 4 KiB, or, under
/// 2 MiB, one entry of 8 bytes per 4 KiB page. RM reserves it for an
/// NV50_MEMORY_VIRTUAL range as it is made (`virtual_mem.c:372-408`) and
/// for each MAP_MEMORY_DMA into one (`rmapi/mapping.c:108-128`). Ampere's
/// version 2 format has one directory fewer: there the figure is 4 KiB
/// over RM's. A size that overflows the sums gives `u64::MAX`.
pub const fn page_table_reserve(size: u64) -> u64 {
    const PAGE: u64 = 4096;
    let limit = size.saturating_sub(1);
    let mut total: u64 = 0;
    let mut i = 0;
    while i < PAGE_DIRS.len() {
        let (bits, entry) = PAGE_DIRS[i];
        let entries = limit.div_ceil(1 << bits) + 1;
        let bytes = match entries.checked_mul(entry) {
            Some(b) => match b.checked_next_multiple_of(PAGE) {
                Some(b) => b,
                None => return u64::MAX,
            },
            None => return u64::MAX,
        };
        total = match total.checked_add(bytes) {
            Some(t) => t,
            None => return u64::MAX,
        };
        i += 1;
    }
    let tables = if limit >> SMALL_PT_BITS == 0 {
        ((limit >> 12) + 1) * 8
    } else {
        match (limit.div_ceil(1 << SMALL_PT_BITS) + 1).checked_mul(PAGE) {
            Some(t) => t,
            None => return u64::MAX,
        }
    };
    match total.checked_add(tables) {
        Some(t) => t,
        None => u64::MAX,
    }
}

/// What vgpu charges for an NV50_MEMORY_VIRTUAL range of `size` bytes:
/// [`page_table_reserve`] of the size rounded up to 2 MiB, the largest
/// alignment RM applies to a range below its 512 MiB pages
/// (`vaspaceApplyDefaultAlignment`, `virtual_mem.c:137`), so that RM's own
/// reservation is never above it. RM reserves at allocation unless the range
/// is `NVOS32_ALLOC_FLAGS_LAZY` or `EXTERNALLY_MANAGED`, and at each mapping
/// into it either way; the charge is taken at allocation for every range,
/// the bound of both.
pub const fn virtual_range_charge(size: u64) -> u64 {
    match size.checked_next_multiple_of(2 << 20) {
        Some(s) => page_table_reserve(s),
        None => u64::MAX,
    }
}
