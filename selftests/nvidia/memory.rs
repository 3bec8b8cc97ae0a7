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
    /// Pins `n` pages of the current process from `start` (all or none).
    fn nv_double_pin_user_pages(
        start: core::ffi::c_ulong,
        n: core::ffi::c_ulong,
        write: core::ffi::c_int,
        pages: *mut *mut core::ffi::c_void,
    ) -> core::ffi::c_long;
    /// Unpins pages `nv_double_pin_user_pages` pinned, marking them dirty.
    fn nv_double_unpin_user_pages(pages: *mut *mut core::ffi::c_void, n: core::ffi::c_ulong);
}

/// A process's pages, pinned for an OS-descriptor memory object.
///
/// # Invariants
///
/// Every entry of `pages` is a page pinned by `nv_double_pin_user_pages`
/// and not yet unpinned.
struct UserPages {
    pages: KVec<*mut core::ffi::c_void>,
}

// SAFETY: the pointers name pinned pages, which stay valid on any thread
// until `Drop` unpins them; `UserPages` itself never dereferences them.
unsafe impl Send for UserPages {}
// SAFETY: as for `Send`; shared access only reads the pointers.
unsafe impl Sync for UserPages {}

impl Drop for UserPages {
    fn drop(&mut self) {
        // SAFETY: by the type invariant every page is pinned, and this is
        // the one place that unpins them.
        unsafe {
            nv_double_unpin_user_pages(
                self.pages.as_mut_ptr(),
                self.pages.len() as core::ffi::c_ulong,
            )
        };
    }
}

/// Pages backing one memory object: zeroed pages of its own, or a
/// process's pinned pages (OS-descriptor memory).
pub(crate) struct Backing {
    pages: KVec<Page>,
    user: Option<UserPages>,
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
        Ok(Self { pages, user: None })
    }

    /// Pins the current process's `n` pages from `start` (page aligned),
    /// writable or not; `EFAULT` if any cannot be pinned.
    pub(crate) fn pin_user(start: u64, n: usize, write: bool) -> Result<Self> {
        let mut pages = KVec::from_elem(core::ptr::null_mut(), n, GFP_KERNEL)?;
        let start = core::ffi::c_ulong::try_from(start).map_err(|_| EINVAL)?;
        // SAFETY: `pages` has room for `n` entries.
        let got = unsafe {
            nv_double_pin_user_pages(
                start,
                n as core::ffi::c_ulong,
                write.into(),
                pages.as_mut_ptr(),
            )
        };
        if got != n as core::ffi::c_long {
            // None are pinned (the helper undoes a partial pin).
            return Err(EFAULT);
        }
        Ok(Self {
            pages: KVec::new(),
            // INVARIANT: all `n` pages were pinned.
            user: Some(UserPages { pages }),
        })
    }

    /// Size in bytes (whole pages).
    pub(crate) fn len(&self) -> usize {
        match &self.user {
            Some(u) => u.pages.len() * PAGE_SIZE,
            None => self.pages.len() * PAGE_SIZE,
        }
    }

    /// The kernel address of page `index` (valid while this backing lives).
    pub(crate) fn page_address(&self, index: usize) -> Option<*mut u8> {
        let page = match &self.user {
            Some(u) => *u.pages.get(index)?,
            None => self.pages.get(index)?.as_ptr().cast(),
        };
        // SAFETY: `page` is a live page (ours, allocated without
        // __GFP_HIGHMEM, or pinned, and x86_64 has no high memory), so it
        // is in the kernel's linear map and `page_address` is its address.
        Some(unsafe { nv_double_page_address(page) }.cast())
    }

    /// The kernel address of the naturally aligned `T` at `offset`.
    fn aligned<T>(&self, offset: usize) -> Result<*mut T> {
        let size = core::mem::size_of::<T>();
        if offset % size != 0 {
            return Err(EINVAL);
        }
        let page = self.page_address(offset / PAGE_SIZE).ok_or(EINVAL)?;
        // SAFETY: `offset % PAGE_SIZE + size <= PAGE_SIZE` (aligned, and
        // PAGE_SIZE is a multiple of `size`): inside the page.
        Ok(unsafe { page.add(offset % PAGE_SIZE) }.cast())
    }

    /// Reads a naturally aligned `u32` at `offset` (one load).
    pub(crate) fn read_u32(&self, offset: usize) -> Result<u32> {
        let p = self.aligned::<u32>(offset)?;
        // SAFETY: `p` is an aligned address inside a page mapped while
        // `self` lives; another writer (a process's mapping) is expected.
        Ok(unsafe { p.read_volatile() })
    }

    /// Reads a naturally aligned `u64` at `offset` (one load).
    pub(crate) fn read_u64(&self, offset: usize) -> Result<u64> {
        let p = self.aligned::<u64>(offset)?;
        // SAFETY: as in `read_u32`.
        Ok(unsafe { p.read_volatile() })
    }

    /// Writes a naturally aligned `u32` at `offset` (one store).
    pub(crate) fn write_u32(&self, offset: usize, v: u32) -> Result {
        let p = self.aligned::<u32>(offset)?;
        // SAFETY: as in `read_u32`.
        unsafe { p.write_volatile(v) };
        Ok(())
    }

    /// Writes a naturally aligned `u64` at `offset` (one store: a reader
    /// never sees half of it).
    pub(crate) fn write_u64(&self, offset: usize, v: u64) -> Result {
        let p = self.aligned::<u64>(offset)?;
        // SAFETY: as in `read_u32`.
        unsafe { p.write_volatile(v) };
        Ok(())
    }

    /// Runs `f` on each page's piece of the `len` bytes at `offset`: the
    /// piece's kernel address and its range within the `len`.
    fn each_piece(
        &self,
        offset: usize,
        len: usize,
        mut f: impl FnMut(*mut u8, core::ops::Range<usize>),
    ) -> Result {
        let mut done = 0;
        while done < len {
            let at = offset.checked_add(done).ok_or(EINVAL)?;
            let page = self.page_address(at / PAGE_SIZE).ok_or(EINVAL)?;
            let within = at % PAGE_SIZE;
            let n = (PAGE_SIZE - within).min(len - done);
            // SAFETY: `within < PAGE_SIZE`: inside the page.
            f(unsafe { page.add(within) }, done..done + n);
            done += n;
        }
        Ok(())
    }

    /// Reads `buf.len()` bytes at `offset`, across pages.
    pub(crate) fn read_bytes(&self, offset: usize, buf: &mut [u8]) -> Result {
        self.each_piece(offset, buf.len(), |p, r| {
            // SAFETY: `p` is mapped for `r.len()` bytes (inside its page,
            // which lives as long as `self`), and `buf[r]` has room for
            // them; the page is not Rust memory, so the copy cannot alias
            // `buf`.
            unsafe { core::ptr::copy_nonoverlapping(p, buf[r.clone()].as_mut_ptr(), r.len()) }
        })
    }

    /// Writes `buf` at `offset`, across pages.
    pub(crate) fn write_bytes(&self, offset: usize, buf: &[u8]) -> Result {
        self.each_piece(offset, buf.len(), |p, r| {
            // SAFETY: as in `read_bytes`, the other way.
            unsafe { core::ptr::copy_nonoverlapping(buf[r.clone()].as_ptr(), p, r.len()) }
        })
    }

    /// Maps `len` bytes from `offset` into `vma`, which must be exactly that long.
    pub(crate) fn map_into(&self, vma: &VmaNew, offset: usize, len: usize) -> Result {
        // A process's own pinned pages are not RM's to map (NO_MAP).
        if self.user.is_some()
            || vma.end() - vma.start() != len
            || offset % PAGE_SIZE != 0
            || len % PAGE_SIZE != 0
        {
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
