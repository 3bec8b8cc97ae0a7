// SPDX-License-Identifier: GPL-2.0

//! Memory: allocation (RM_ALLOC of memory classes, VID_HEAP_CONTROL), the
//! paths that report memory size, and CPU mappings.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::ptr::NonNull;

use crate::abi::{
    class, ctrl, heap, os33, surface_info, FbGetInfoV1Params, FbGetInfoV2Params,
    GetSurfaceInfoParams, Handle, InfoEntry, MemoryAllocationParams, Nvos32, Nvos32AllocSize,
    Nvos32Free, Nvos32Info, Nvos33, Nvos33WithFd, Nvos34, Wire,
};
use crate::ioctl::Escape;
use crate::{rm_result, user_ptr, Ctl, Error, Node, Result};

/// A memory object RM allocated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Memory {
    /// Its handle.
    pub handle: Handle,
    /// The size RM reports it allocated (may be rounded up).
    pub size: u64,
}

/// What VID_HEAP_CONTROL function INFO reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeapInfo {
    /// Heap total in bytes (HEAP_SIZE + FB tax).
    pub total: u64,
    /// Heap free in bytes.
    pub free: u64,
    /// The INFO union member (largest free block, heap base).
    pub info: Nvos32Info,
}

/// Alloc params for `size` bytes of VRAM (class NV01_MEMORY_LOCAL_USER):
/// LOCATION VIDMEM, non-contiguous allowed, not VIRTUAL. Adjust and pass to
/// [`Ctl::alloc_memory`] for variations.
pub fn vram_params(owner: Handle, size: u64) -> MemoryAllocationParams {
    let attr = heap::ATTR_LOCATION.set(0, heap::ATTR_LOCATION_VIDMEM);
    let attr = heap::ATTR_PHYSICALITY.set(attr, heap::ATTR_PHYSICALITY_ALLOW_NONCONTIGUOUS);
    MemoryAllocationParams {
        owner,
        surface_type: heap::TYPE_IMAGE,
        flags: heap::ALLOC_FLAGS_IGNORE_BANK_PLACEMENT | heap::ALLOC_FLAGS_MAP_NOT_REQUIRED,
        attr,
        size,
        ..Default::default()
    }
}

/// Alloc params for `size` bytes of pinned system memory (class
/// NV01_MEMORY_SYSTEM): LOCATION PCI, non-contiguous, cached.
pub fn sysmem_params(owner: Handle, size: u64) -> MemoryAllocationParams {
    let attr = heap::ATTR_LOCATION.set(0, heap::ATTR_LOCATION_PCI);
    let attr = heap::ATTR_PHYSICALITY.set(attr, heap::ATTR_PHYSICALITY_NONCONTIGUOUS);
    let attr = heap::ATTR_COHERENCY.set(attr, heap::ATTR_COHERENCY_CACHED);
    MemoryAllocationParams {
        owner,
        surface_type: heap::TYPE_IMAGE,
        flags: heap::ALLOC_FLAGS_IGNORE_BANK_PLACEMENT,
        attr,
        size,
        ..Default::default()
    }
}

/// Info-list records as the bytes a V1-style control points at.
fn info_list_bytes(indices: &[u32]) -> Vec<u8> {
    let mut b = vec![0u8; indices.len() * InfoEntry::SIZE];
    for (chunk, &index) in b.chunks_exact_mut(InfoEntry::SIZE).zip(indices) {
        InfoEntry { index, data: 0 }.encode(chunk);
    }
    b
}

/// Decodes info-list records.
fn info_list_decode(b: &[u8]) -> Vec<InfoEntry> {
    b.chunks_exact(InfoEntry::SIZE)
        .map(InfoEntry::decode)
        .collect()
}

impl Ctl {
    /// RM_ALLOC of a memory `class` (0x40, 0x3e, 0x50a0, ...) with
    /// NV_MEMORY_ALLOCATION_PARAMS; returns the handle and the params as RM
    /// left them (size, offset, limit, attr out).
    pub fn alloc_memory(
        &self,
        h_client: Handle,
        h_parent: Handle,
        h_new: Handle,
        class: u32,
        mut params: MemoryAllocationParams,
    ) -> Result<(Handle, MemoryAllocationParams)> {
        let h = self.alloc_with(h_client, h_parent, h_new, class, &mut params)?;
        Ok((h, params))
    }

    /// Allocates `size` bytes of VRAM (class 0x40 with [`vram_params`]),
    /// as cudaMalloc does on current drivers.
    pub fn alloc_vram(
        &self,
        h_client: Handle,
        h_parent: Handle,
        h_new: Handle,
        size: u64,
    ) -> Result<Memory> {
        let (handle, p) = self.alloc_memory(
            h_client,
            h_parent,
            h_new,
            class::NV01_MEMORY_LOCAL_USER,
            vram_params(h_client, size),
        )?;
        Ok(Memory {
            handle,
            size: p.size,
        })
    }

    /// Allocates `size` bytes of pinned system memory (class 0x3e with
    /// [`sysmem_params`]).
    pub fn alloc_sysmem(
        &self,
        h_client: Handle,
        h_parent: Handle,
        h_new: Handle,
        size: u64,
    ) -> Result<Memory> {
        let (handle, p) = self.alloc_memory(
            h_client,
            h_parent,
            h_new,
            class::NV01_MEMORY_SYSTEM,
            sysmem_params(h_client, size),
        )?;
        Ok(Memory {
            handle,
            size: p.size,
        })
    }

    /// RM_VID_HEAP_CONTROL with a raw NVOS32 block, updated from the driver's
    /// copy-out. Checks the block's status.
    pub fn vid_heap(&self, params: &mut Nvos32) -> Result<()> {
        self.ioctl_with(Escape::RmVidHeapControl.nr(), params)?;
        rm_result(params.status)
    }

    /// VID_HEAP_CONTROL function ALLOC_SIZE (older CUDA): `size` bytes with
    /// these NVOS32 `attr` and `flags` under `h_device`. With LOCATION VIDMEM
    /// and no VIRTUAL flag, RM turns it into an alloc of class 0x40.
    pub fn vid_heap_alloc_size(
        &self,
        h_client: Handle,
        h_device: Handle,
        size: u64,
        attr: u32,
        flags: u32,
    ) -> Result<Memory> {
        let mut p = Nvos32 {
            h_root: h_client,
            h_object_parent: h_device,
            function: heap::FUNCTION_ALLOC_SIZE,
            ..Default::default()
        };
        p.set_alloc_size(&Nvos32AllocSize {
            owner: h_client,
            surface_type: heap::TYPE_IMAGE,
            flags,
            attr,
            size,
            ..Default::default()
        });
        self.vid_heap(&mut p)?;
        let a = p.alloc_size();
        Ok(Memory {
            handle: a.h_memory,
            size: a.size,
        })
    }

    /// VID_HEAP_CONTROL function FREE of `h_memory`.
    pub fn vid_heap_free(
        &self,
        h_client: Handle,
        h_device: Handle,
        h_memory: Handle,
    ) -> Result<()> {
        let mut p = Nvos32 {
            h_root: h_client,
            h_object_parent: h_device,
            function: heap::FUNCTION_FREE,
            ..Default::default()
        };
        p.set_free_args(&Nvos32Free {
            owner: h_client,
            h_memory,
            flags: heap::FREE_FLAGS_MEMORY_HANDLE_PROVIDED,
        });
        self.vid_heap(&mut p)
    }

    /// VID_HEAP_CONTROL function INFO: heap total and free.
    pub fn vid_heap_info(&self, h_client: Handle, h_device: Handle) -> Result<HeapInfo> {
        let mut p = Nvos32 {
            h_root: h_client,
            h_object_parent: h_device,
            function: heap::FUNCTION_INFO,
            ..Default::default()
        };
        self.vid_heap(&mut p)?;
        Ok(HeapInfo {
            total: p.total,
            free: p.free,
            info: p.info(),
        })
    }

    /// NV2080_CTRL_CMD_FB_GET_INFO_V2 on a subdevice for `indices` (at most
    /// 128); returns the entries (sizes in KiB).
    pub fn fb_get_info_v2(
        &self,
        h_client: Handle,
        h_subdevice: Handle,
        indices: &[u32],
    ) -> Result<Vec<InfoEntry>> {
        if indices.len() > crate::speaks().fb_info_entries() {
            return Err(Error::Invalid("more FB info indices than the list holds"));
        }
        let mut p = FbGetInfoV2Params::new(indices);
        self.control_with(
            h_client,
            h_subdevice,
            ctrl::NV2080_CTRL_CMD_FB_GET_INFO_V2,
            &mut p,
        )?;
        Ok(p.entries().to_vec())
    }

    /// NV2080_CTRL_CMD_FB_GET_INFO (V1): the list travels by user pointer.
    pub fn fb_get_info_v1(
        &self,
        h_client: Handle,
        h_subdevice: Handle,
        indices: &[u32],
    ) -> Result<Vec<InfoEntry>> {
        let mut list = info_list_bytes(indices);
        let mut p = FbGetInfoV1Params {
            list_size: u32::try_from(indices.len())
                .map_err(|_| Error::Invalid("FB info list too long"))?,
            list_ptr: user_ptr(&mut list),
        };
        // `list` stays exclusively borrowed until the control returns.
        self.control_with(
            h_client,
            h_subdevice,
            ctrl::NV2080_CTRL_CMD_FB_GET_INFO,
            &mut p,
        )?;
        Ok(info_list_decode(&list))
    }

    /// NV0041_CTRL_CMD_GET_SURFACE_INFO on a memory object for `indices`.
    pub fn get_surface_info(
        &self,
        h_client: Handle,
        h_memory: Handle,
        indices: &[u32],
    ) -> Result<Vec<InfoEntry>> {
        let mut list = info_list_bytes(indices);
        let mut p = GetSurfaceInfoParams {
            list_size: u32::try_from(indices.len())
                .map_err(|_| Error::Invalid("surface info list too long"))?,
            list_ptr: user_ptr(&mut list),
        };
        // `list` stays exclusively borrowed until the control returns.
        self.control_with(
            h_client,
            h_memory,
            ctrl::NV0041_CTRL_CMD_GET_SURFACE_INFO,
            &mut p,
        )?;
        Ok(info_list_decode(&list))
    }

    /// The physical size of a memory object in bytes, from GET_SURFACE_INFO
    /// index PHYS_SIZE (reported in 4 KiB units).
    pub fn surface_phys_size(&self, h_client: Handle, h_memory: Handle) -> Result<u64> {
        let e = self.get_surface_info(h_client, h_memory, &[surface_info::PHYS_SIZE])?;
        let data = e
            .first()
            .ok_or(Error::Invalid("empty surface info reply"))?
            .data;
        Ok(u64::from(data) * surface_info::PHYS_SIZE_SCALE)
    }

    /// Maps memory into this process with the driver's fresh-fd protocol:
    /// opens a fresh fd of `node` (the ctl node for system memory, the GPU
    /// node for FB, BAR and usermode memory), issues RM_MAP_MEMORY naming it,
    /// mmaps it at offset 0 with exactly `length` bytes, and closes it.
    /// `flags` are NVOS33 flags; a READ_ONLY access maps read-only.
    #[allow(clippy::too_many_arguments)]
    pub fn map_memory(
        &self,
        node: impl AsRef<Path>,
        h_client: Handle,
        h_device: Handle,
        h_memory: Handle,
        offset: u64,
        length: u64,
        flags: u32,
    ) -> Result<Mapping> {
        let len = usize::try_from(length).map_err(|_| Error::Invalid("length"))?;
        if len == 0 {
            return Err(Error::Invalid("zero-length mapping"));
        }
        let fresh = Node::open(node)?;
        let mut p = Nvos33WithFd {
            params: Nvos33 {
                h_client,
                h_device,
                h_memory,
                offset,
                length,
                flags,
                ..Default::default()
            },
            fd: fresh.fd(),
        };
        self.ioctl_with(Escape::RmMapMemory.nr(), &mut p)?;
        rm_result(p.params.status)?;
        let write = os33::FLAGS_ACCESS.get(flags) != os33::FLAGS_ACCESS_READ_ONLY;
        match Mapping::map(fresh.file(), len, write, p.params.p_linear_address) {
            Ok(m) => Ok(m),
            Err(e) => {
                // Best effort: undo the RM side; the mmap error is the answer.
                let _ =
                    self.unmap_memory(h_client, h_device, h_memory, p.params.p_linear_address, 0);
                Err(e)
            }
        }
        // `fresh` closes here; the mapping keeps the file alive in the kernel.
    }

    /// RM_UNMAP_MEMORY for a mapping's linear address ([`Mapping::linear_address`]).
    pub fn unmap_memory(
        &self,
        h_client: Handle,
        h_device: Handle,
        h_memory: Handle,
        linear_address: u64,
        flags: u32,
    ) -> Result<()> {
        let mut p = Nvos34 {
            h_client,
            h_device,
            h_memory,
            p_linear_address: linear_address,
            status: 0,
            flags,
        };
        self.ioctl_with(Escape::RmUnmapMemory.nr(), &mut p)?;
        rm_result(p.status)
    }
}

/// A CPU mapping of driver memory; unmapped (munmap) on drop.
///
/// Accesses are volatile and bounds-checked: the memory may be device MMIO
/// (a doorbell page) that the compiler must not cache or merge.
#[derive(Debug)]
pub struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
    linear_address: u64,
}

impl Mapping {
    /// mmaps `len` bytes of `file` at offset 0, shared.
    pub(crate) fn map(
        file: &File,
        len: usize,
        write: bool,
        linear_address: u64,
    ) -> Result<Mapping> {
        let prot = if write {
            libc::PROT_READ | libc::PROT_WRITE
        } else {
            libc::PROT_READ
        };
        // SAFETY: a null hint lets the kernel choose an address, so no
        // existing Rust allocation is replaced; the fd is open for the call.
        let p = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                len,
                prot,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(Error::last_os());
        }
        let ptr = NonNull::new(p.cast::<u8>()).ok_or(Error::Invalid("mmap returned null"))?;
        Ok(Mapping {
            ptr,
            len,
            linear_address,
        })
    }

    /// The mapped address.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// The mapped length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the mapping is empty (never, for a successful map).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The linear address RM_MAP_MEMORY returned (for RM_UNMAP_MEMORY).
    pub fn linear_address(&self) -> u64 {
        self.linear_address
    }

    /// A pointer to `size` bytes at `off`, if in bounds and aligned to `size`.
    fn at(&self, off: usize, size: usize) -> Option<*mut u8> {
        let end = off.checked_add(size)?;
        if end > self.len || !off.is_multiple_of(size) {
            return None;
        }
        // `off < len`, so the result stays inside the mapping.
        Some(self.ptr.as_ptr().wrapping_add(off))
    }

    /// Reads the u32 at `off` (volatile); `None` if out of bounds or
    /// misaligned.
    pub fn read_u32(&self, off: usize) -> Option<u32> {
        let p = self.at(off, 4)?;
        // SAFETY: `at` checked that the 4 bytes lie inside the live mapping
        // and that the address is 4-aligned (the mapping is page-aligned).
        Some(unsafe { p.cast::<u32>().read_volatile() })
    }

    /// Writes the u32 at `off` (volatile); false if out of bounds or
    /// misaligned.
    pub fn write_u32(&self, off: usize, v: u32) -> bool {
        let Some(p) = self.at(off, 4) else {
            return false;
        };
        // SAFETY: as in `read_u32`; the mapping is shared device memory that
        // no Rust reference points into, so a write through `&self` aliases
        // nothing the compiler assumes immutable.
        unsafe { p.cast::<u32>().write_volatile(v) };
        true
    }

    /// Reads the u64 at `off` (volatile); `None` if out of bounds or
    /// misaligned.
    pub fn read_u64(&self, off: usize) -> Option<u64> {
        let p = self.at(off, 8)?;
        // SAFETY: `at` checked bounds and 8-byte alignment inside the live
        // mapping.
        Some(unsafe { p.cast::<u64>().read_volatile() })
    }

    /// Writes the u64 at `off` (volatile); false if out of bounds or
    /// misaligned.
    pub fn write_u64(&self, off: usize, v: u64) -> bool {
        let Some(p) = self.at(off, 8) else {
            return false;
        };
        // SAFETY: as in `write_u32`, for 8 aligned bytes.
        unsafe { p.cast::<u64>().write_volatile(v) };
        true
    }

    /// Copies bytes out from `off` (volatile, byte by byte); false if out of
    /// bounds.
    pub fn read_bytes(&self, off: usize, out: &mut [u8]) -> bool {
        if off.checked_add(out.len()).is_none_or(|end| end > self.len) {
            return false;
        }
        for (i, b) in out.iter_mut().enumerate() {
            // SAFETY: `off + i < off + out.len() <= len`: inside the mapping.
            *b = unsafe { self.ptr.as_ptr().add(off + i).read_volatile() };
        }
        true
    }

    /// Copies bytes in at `off` (volatile, byte by byte); false if out of
    /// bounds.
    pub fn write_bytes(&self, off: usize, data: &[u8]) -> bool {
        if off.checked_add(data.len()).is_none_or(|end| end > self.len) {
            return false;
        }
        for (i, &b) in data.iter().enumerate() {
            // SAFETY: `off + i < off + data.len() <= len`: inside the mapping,
            // which no Rust reference points into.
            unsafe { self.ptr.as_ptr().add(off + i).write_volatile(b) };
        }
        true
    }

    /// Rings a usermode doorbell: writes `token` (from
    /// [`Ctl::work_submit_token`]) at offset 0x90 of a mapped usermode page.
    pub fn ring_doorbell(&self, token: u32) -> bool {
        self.write_u32(class::USERMODE_DOORBELL_OFFSET, token)
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `ptr` and `len` are exactly what a successful mmap returned,
        // owned by this Mapping alone; no reference into the mapping outlives
        // `&self` borrows, so nothing uses it after this.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vram_and_sysmem_params() {
        let v = vram_params(0xc1d0_0000, 2 << 20);
        assert!(v.allocates_vram());
        assert_eq!(v.size, 2 << 20);
        assert_eq!(v.owner, 0xc1d0_0000);
        assert_eq!(heap::ATTR_LOCATION.get(v.attr), heap::ATTR_LOCATION_VIDMEM);
        let b = v.to_bytes();
        assert_eq!(&b[64..72], &(2u64 << 20).to_ne_bytes()); // size at 64
        assert_eq!(b[27] & 0b110, 0); // attr LOCATION bits 26:25 clear

        let s = sysmem_params(1, 4096);
        assert!(!s.is_vidmem() && !s.allocates_vram());
        assert_eq!(heap::ATTR_LOCATION.get(s.attr), heap::ATTR_LOCATION_PCI);
        assert_eq!(
            heap::alloc_class(s.flags, s.attr),
            class::NV01_MEMORY_SYSTEM
        );
    }

    #[test]
    fn info_lists() {
        let b = info_list_bytes(&[7, 9]);
        assert_eq!(b.len(), 16);
        assert_eq!(&b[0..4], &7u32.to_ne_bytes());
        assert_eq!(&b[8..12], &9u32.to_ne_bytes());
        let mut b = b;
        b[4..8].copy_from_slice(&100u32.to_ne_bytes());
        assert_eq!(
            info_list_decode(&b),
            [
                InfoEntry {
                    index: 7,
                    data: 100
                },
                InfoEntry { index: 9, data: 0 }
            ]
        );
    }

    #[test]
    fn mapping_bounds_and_volatile_access() {
        // A shared mapping of /dev/zero behaves like device memory for the
        // purpose of these checks.
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/zero")
            .unwrap();
        let m = Mapping::map(&f, 0x10000, true, 0x1234).unwrap();
        drop(f);
        assert_eq!(m.len(), 0x10000);
        assert!(!m.is_empty());
        assert_eq!(m.linear_address(), 0x1234);
        assert_eq!(m.read_u32(0x90), Some(0));
        assert!(m.ring_doorbell(0xdead_beef));
        assert_eq!(m.read_u32(0x90), Some(0xdead_beef));
        assert!(m.write_u64(0x100, u64::MAX));
        assert_eq!(m.read_u64(0x100), Some(u64::MAX));
        assert_eq!(m.read_u32(0x102), None); // misaligned
        assert_eq!(m.read_u32(0x10000), None); // out of bounds
        assert_eq!(m.read_u32(usize::MAX), None);
        assert!(!m.write_u32(0xfffe, 1));
        assert!(m.write_bytes(0xfffc, &[1, 2, 3, 4]));
        let mut out = [0u8; 4];
        assert!(m.read_bytes(0xfffc, &mut out));
        assert_eq!(out, [1, 2, 3, 4]);
        assert!(!m.read_bytes(0xfffd, &mut out));
        assert!(!m.write_bytes(usize::MAX, &[1]));
    }

    #[test]
    fn map_failure_is_an_errno() {
        // /dev/null cannot be mmapped.
        let f = File::open("/dev/null").unwrap();
        assert!(matches!(
            Mapping::map(&f, 4096, false, 0),
            Err(Error::Os(_))
        ));
    }
}
