// SPDX-License-Identifier: GPL-2.0

//! UVM_INITIALIZE, UVM_MM_INITIALIZE, and a UVM file's release.

use core::ptr::NonNull;
use kernel::{fs::LocalFile, mm::Mm, prelude::*, sync::aref::ARef};

use super::file::{uvm_file, FileState, UvmFile};
use super::residency::destroy_range;
use super::state::{MmState, Space};
use super::vma::nv_double_current_mm_grab;
use crate::base::StatusResult;
use crate::kapi::fdtable;
use crate::nv::abi::{status::*, Wire};
use crate::nv::uvm::{init_flags, InitializeParams, MmInitializeParams};
use crate::rm::state::Driver;

impl Driver {
    pub(crate) fn uvm_initialize(&self, f: &UvmFile, p: &mut [u8]) -> StatusResult {
        let q = InitializeParams::decode(p);
        if q.flags & !init_flags::ALL != 0 {
            return Err(NV_ERR_INVALID_ARGUMENT);
        }
        // The file's lock serialises initialisers, so the double never
        // answers NV_ERR_BUSY_RETRY.
        let mut state = f.state.lock();
        match *state {
            FileState::Uninit => {}
            FileState::VaSpace(id) => {
                let flags = self.with_space(id, |rm, si| Ok(rm.uvm.spaces[si].flags))?;
                return if flags == q.flags {
                    Ok(())
                } else {
                    Err(NV_ERR_INVALID_ARGUMENT)
                };
            }
            FileState::Mm { .. } => return Err(NV_ERR_INVALID_ARGUMENT),
        }
        let mm = if q.flags & init_flags::MULTI_PROCESS_SHARING_MODE == 0 {
            // SAFETY: no preconditions; a non-null result carries an
            // `mmgrab` reference, which the `ARef` takes over.
            let raw = unsafe { nv_double_current_mm_grab() };
            let raw = NonNull::new(raw).ok_or(NV_ERR_INVALID_STATE)?;
            // SAFETY: `raw` is a live mm with an `mmgrab` reference that is
            // ours to give (see above); `Mm` wraps `mm_struct` transparently.
            Some(unsafe { ARef::<Mm>::from_raw(raw.cast()) })
        } else {
            None
        };
        let tgid = crate::base::current_tgid();
        let mut rm = self.rm.lock();
        let id = rm.uvm.next_space;
        let space = Space {
            id,
            tgid,
            flags: q.flags,
            mm,
            mm_state: MmState::Unset,
            gpus: KVec::new(),
            ranges: KVec::new(),
            chans: KVec::new(),
            groups: KVec::new(),
            last_group: 0,
            faults: 0,
        };
        rm.uvm
            .spaces
            .push(space, GFP_KERNEL)
            .map_err(|_| NV_ERR_NO_MEMORY)?;
        rm.uvm.next_space += 1;
        drop(rm);
        *state = FileState::VaSpace(id);
        Ok(())
    }

    pub(crate) fn uvm_mm_initialize(&self, f: &UvmFile, p: &mut [u8]) -> StatusResult {
        let q = MmInitializeParams::decode(p);
        let primary = fdtable::fget(q.uvm_fd).map_err(|_| NV_ERR_INVALID_ARGUMENT)?;
        let space = {
            let pf = uvm_file(&primary).ok_or(NV_ERR_INVALID_ARGUMENT)?;
            if pf.tools {
                return Err(NV_ERR_INVALID_ARGUMENT);
            }
            pf.va_space().ok_or(NV_ERR_INVALID_ARGUMENT)?
        };
        // No mm to track (MULTI_PROCESS_SHARING_MODE, or a kernel without
        // MMU notifiers: `uvm_mm=0`): NV_WARN_NOTHING_TO_DO (`uvm.c:123-127`
        // at 550.163.01).
        let has_mm = self.with_space(space, |rm, si| Ok(rm.uvm.spaces[si].mm.is_some()))?;
        if !has_mm || !crate::settings::uvm_mm() {
            return Err(NV_WARN_NOTHING_TO_DO);
        }
        let mut state = f.state.lock();
        if !matches!(*state, FileState::Uninit) {
            return Err(NV_ERR_IN_USE);
        }
        let mm = self.with_space(space, |rm, si| {
            let s = &mut rm.uvm.spaces[si];
            match s.mm_state {
                MmState::Alive => Err(NV_ERR_INVALID_STATE),
                MmState::Released => Err(NV_ERR_PAGE_TABLE_NOT_AVAIL),
                MmState::Unset => {
                    let mm =
                        s.mm.as_ref()
                            .and_then(|m| m.mmget_not_zero())
                            .ok_or(NV_ERR_PAGE_TABLE_NOT_AVAIL)?;
                    s.mm_state = MmState::Alive;
                    Ok(mm)
                }
            }
        })?;
        // SAFETY: `primary` comes from `fget` in an ioctl, which holds no
        // `fdget_pos` on this thread.
        let primary = unsafe { LocalFile::assume_no_fdget_pos(primary) };
        *state = FileState::Mm {
            space,
            _mm: mm,
            _primary: primary,
        };
        Ok(())
    }

    /// A UVM file was released: a VA space is torn down, an mm file ends
    /// its VA space's GPU work. References to mms and files are dropped
    /// after the RM lock (an `mmput` may tear the address space down, which
    /// closes managed VMAs, which take the RM lock).
    pub(crate) fn uvm_file_closed(&self, state: FileState) {
        match &state {
            FileState::Uninit => {}
            FileState::VaSpace(id) => {
                let mut rm = self.rm.lock();
                let Some(si) = rm.uvm.index(*id) else {
                    return;
                };
                while !rm.uvm.spaces[si].ranges.is_empty() {
                    let last = rm.uvm.spaces[si].ranges.len() - 1;
                    destroy_range(&mut rm, si, last);
                }
                let space = rm.uvm.spaces.remove(si);
                drop(rm);
                drop(space);
            }
            FileState::Mm { space, .. } => {
                let _ = self.with_space(*space, |rm, si| {
                    rm.uvm.spaces[si].mm_state = MmState::Released;
                    Ok(())
                });
            }
        }
        drop(state);
    }
}
