// SPDX-License-Identifier: GPL-2.0

//! Managed ranges: made by mmap of a VA-space file, gone with their VMA,
//! and made resident on a GPU by its engine's touches.

use kernel::prelude::*;

use super::residency::{destroy_range, place};
use super::state::{MmState, RangeKind};
use super::vma::{nv_double_vma_pgoff, nv_double_vma_set, VM_OPS};
use crate::nv::abi::status::*;
use crate::nv::uvm::{CHUNK, PAGE};
use crate::rm::state::Driver;
use kernel::mm::virt::{flags as vm_flags, VmaNew};

impl Driver {
    /// mmap of a VA-space file: a new managed range covering the VMA.
    pub(crate) fn uvm_mmap(&self, id: u64, vma: &VmaNew) -> Result {
        let start = vma.start() as u64;
        let len = (vma.end() - vma.start()) as u64;
        let mm = vma.mm().as_raw() as usize;
        let mut rm = self.rm.lock();
        let si = rm.uvm.index(id).ok_or(EBADFD)?;
        let s = &mut rm.uvm.spaces[si];
        if s.mm.as_ref().is_some_and(|m| m.as_raw() as usize != mm) {
            return Err(EOPNOTSUPP);
        }
        // SAFETY: `vma` is the VMA being set up, valid for the call.
        let pgoff = unsafe { nv_double_vma_pgoff(vma.as_ptr().cast()) } as u64;
        if pgoff.checked_mul(PAGE) != Some(start) {
            return Err(EINVAL);
        }
        let want = vm_flags::SHARED | vm_flags::READ | vm_flags::WRITE;
        if vma.flags() & want != want {
            return Err(EINVAL);
        }
        let managed = RangeKind::Managed {
            mm,
            resident: KVec::new(),
        };
        match s.add_range(start, len, managed) {
            Ok(()) => drop(rm),
            // The range of a semaphore pool, whole: the mmap maps the
            // pool for the CPU (uvm.c:847-864 at 550.163.01).
            Err(NV_ERR_UVM_ADDRESS_IN_USE) => {
                let pool = s.ranges.iter_mut().find_map(|r| match &mut r.kind {
                    RangeKind::SemaphorePool {
                        backing,
                        cpu_mapped,
                    } if r.start == start && r.len == len => Some((backing, cpu_mapped)),
                    _ => None,
                });
                let Some((backing, cpu_mapped)) = pool else {
                    return Err(EADDRINUSE);
                };
                backing.map_into(vma, 0, len as usize)?;
                *cpu_mapped = true;
                drop(rm);
            }
            Err(_) => return Err(ENOMEM),
        }
        vma.set_mixedmap();
        vma.set_dontexpand();
        vma.set_dontcopy();
        // SAFETY: the VMA is under construction and ours to set up; `VM_OPS`
        // is static. The id is a plain number, never dereferenced.
        unsafe {
            nv_double_vma_set(
                vma.as_ptr().cast(),
                core::ptr::from_ref(&VM_OPS.0).cast(),
                id as usize as *mut c_void,
            )
        };
        Ok(())
    }

    /// A managed VMA of VA space `id` closed: its range (exactly
    /// `[start, start + len)` in address space `mm`) goes; a semaphore
    /// pool's stays, unmapped for the CPU (uvm.c:352-366 at 550.163.01).
    pub(crate) fn uvm_vma_closed(&self, id: u64, start: u64, len: u64, mm: usize) {
        let _ = self.with_space(id, |rm, si| {
            let s = &mut rm.uvm.spaces[si];
            for r in s.ranges.iter_mut() {
                if let RangeKind::SemaphorePool { cpu_mapped, .. } = &mut r.kind {
                    if r.start == start && r.len == len {
                        *cpu_mapped = false;
                        return Ok(());
                    }
                }
            }
            if let Some(ri) = s.ranges.iter().position(|r| {
                r.start == start
                    && r.len == len
                    && matches!(r.kind, RangeKind::Managed { mm: m, .. } if m == mm)
            }) {
                destroy_range(rm, si, ri);
            }
            Ok(())
        });
    }

    /// An engine touch: GPU work of channel `token` on `gpu` accessed
    /// managed address `addr`. Makes its chunk resident on `gpu` in the VA
    /// space that registered the channel; false (a fault) if there is no
    /// such VA space, no managed range there, or no memory.
    pub(crate) fn uvm_touch(&self, gpu: u32, token: u32, addr: u64) -> bool {
        let heap = self.heap(gpu);
        let mut rm = self.rm.lock();
        let Some(si) = rm
            .uvm
            .spaces
            .iter()
            .position(|s| s.chans.iter().any(|c| c.gpu == gpu && c.token == token))
        else {
            return false;
        };
        let s = &rm.uvm.spaces[si];
        let ok = if s.mm_state == MmState::Released || !s.has_vaspace(gpu) {
            false
        } else {
            match s.managed_at(addr) {
                Some(ri) => place(&mut rm, heap, si, ri, addr / CHUNK, Some(gpu)).is_ok(),
                None => false,
            }
        };
        if !ok {
            rm.uvm.spaces[si].faults += 1;
        }
        ok
    }
}
