// SPDX-License-Identifier: GPL-2.0

//! CPU-visible backing of memory objects: pages that a process can mmap and
//! the engine can read, like system memory or a BAR1 window.

use kernel::{mm::virt::VmaNew, page::Page, page::PAGE_SIZE, prelude::*};

/// The largest object the double backs with real pages. VRAM objects are only
/// backed when first mapped; sysmem objects when allocated.
///
/// GUESS (not the real driver): the real driver maps any size; the double
/// refuses larger mappings with NV_ERR_INSUFFICIENT_RESOURCES to bound the
/// test VM's memory.
/// 128 MiB: libcuda's context takes 104 MiB of system memory
/// (NV01_MEMORY_SYSTEM, 550.163.01).
pub(crate) const MAX_BACKED: u64 = 128 << 20;

extern "C" {
    /// `page_address()` (a macro in C; see `exports.c`).
    fn nv_double_page_address(page: *mut core::ffi::c_void) -> *mut core::ffi::c_void;
}

/// Zeroed pages backing one memory object.
pub(crate) struct Backing {
    pages: KVec<Page>,
}

impl Backing {
    /// Allocates zeroed pages covering `size` bytes.
    pub(crate) fn new(size: u64) -> Result<Self> {
        if size > MAX_BACKED {
            return Err(ENOMEM);
        }
        let n = (size as usize).div_ceil(PAGE_SIZE);
        let mut pages = KVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            pages.push(Page::alloc_page(GFP_KERNEL | __GFP_ZERO)?, GFP_KERNEL)?;
        }
        Ok(Self { pages })
    }

    /// Size in bytes (whole pages).
    pub(crate) fn len(&self) -> usize {
        self.pages.len() * PAGE_SIZE
    }

    /// The kernel address of page `index` (valid while this backing lives).
    pub(crate) fn page_address(&self, index: usize) -> Option<*mut u8> {
        let page = self.pages.get(index)?;
        // SAFETY: `page` is a live page allocated without __GFP_HIGHMEM, so
        // it is in the kernel's linear map and `page_address` is its address.
        Some(unsafe { nv_double_page_address(page.as_ptr().cast()) }.cast())
    }

    fn locate(&self, offset: usize, len: usize) -> Result<(&Page, usize)> {
        let page = self.pages.get(offset / PAGE_SIZE).ok_or(EINVAL)?;
        let within = offset % PAGE_SIZE;
        if within + len > PAGE_SIZE {
            return Err(EINVAL);
        }
        Ok((page, within))
    }

    /// Reads a naturally aligned `u32` at `offset`.
    pub(crate) fn read_u32(&self, offset: usize) -> Result<u32> {
        let mut b = [0u8; 4];
        let (page, within) = self.locate(offset, 4)?;
        // SAFETY: `b` is valid for 4 bytes of writes; the range is inside the page.
        unsafe { page.read_raw(b.as_mut_ptr(), within, 4)? };
        Ok(u32::from_ne_bytes(b))
    }

    /// Reads a naturally aligned `u64` at `offset`.
    pub(crate) fn read_u64(&self, offset: usize) -> Result<u64> {
        let mut b = [0u8; 8];
        let (page, within) = self.locate(offset, 8)?;
        // SAFETY: `b` is valid for 8 bytes of writes; the range is inside the page.
        unsafe { page.read_raw(b.as_mut_ptr(), within, 8)? };
        Ok(u64::from_ne_bytes(b))
    }

    /// Writes a `u32` at `offset`.
    pub(crate) fn write_u32(&self, offset: usize, v: u32) -> Result {
        let b = v.to_ne_bytes();
        let (page, within) = self.locate(offset, 4)?;
        // SAFETY: `b` is valid for 4 bytes of reads; the range is inside the page.
        unsafe { page.write_raw(b.as_ptr(), within, 4) }
    }

    /// Writes a `u64` at `offset`.
    pub(crate) fn write_u64(&self, offset: usize, v: u64) -> Result {
        let b = v.to_ne_bytes();
        let (page, within) = self.locate(offset, 8)?;
        // SAFETY: `b` is valid for 8 bytes of reads; the range is inside the page.
        unsafe { page.write_raw(b.as_ptr(), within, 8) }
    }

    /// Reads `buf.len()` bytes at `offset`, across pages.
    pub(crate) fn read_bytes(&self, offset: usize, buf: &mut [u8]) -> Result {
        let mut done = 0;
        while done < buf.len() {
            let at = offset.checked_add(done).ok_or(EINVAL)?;
            let page = self.pages.get(at / PAGE_SIZE).ok_or(EINVAL)?;
            let within = at % PAGE_SIZE;
            let n = (PAGE_SIZE - within).min(buf.len() - done);
            // SAFETY: `buf[done..]` is valid for `n` bytes of writes; the
            // range is inside the page.
            unsafe { page.read_raw(buf[done..].as_mut_ptr(), within, n)? };
            done += n;
        }
        Ok(())
    }

    /// Writes `buf` at `offset`, across pages.
    pub(crate) fn write_bytes(&self, offset: usize, buf: &[u8]) -> Result {
        let mut done = 0;
        while done < buf.len() {
            let at = offset.checked_add(done).ok_or(EINVAL)?;
            let page = self.pages.get(at / PAGE_SIZE).ok_or(EINVAL)?;
            let within = at % PAGE_SIZE;
            let n = (PAGE_SIZE - within).min(buf.len() - done);
            // SAFETY: `buf[done..]` is valid for `n` bytes of reads; the
            // range is inside the page.
            unsafe { page.write_raw(buf[done..].as_ptr(), within, n)? };
            done += n;
        }
        Ok(())
    }

    /// Maps `len` bytes from `offset` into `vma`, which must be exactly that long.
    pub(crate) fn map_into(&self, vma: &VmaNew, offset: usize, len: usize) -> Result {
        if vma.end() - vma.start() != len || offset % PAGE_SIZE != 0 || len % PAGE_SIZE != 0 {
            return Err(EINVAL);
        }
        let first = offset / PAGE_SIZE;
        let count = len / PAGE_SIZE;
        let pages = self.pages.get(first..first + count).ok_or(EINVAL)?;
        let mixed = vma.set_mixedmap();
        for (i, page) in pages.iter().enumerate() {
            mixed.vm_insert_page(vma.start() + i * PAGE_SIZE, page)?;
        }
        Ok(())
    }
}
