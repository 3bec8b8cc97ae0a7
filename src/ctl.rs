// SPDX-License-Identifier: GPL-2.0

//! What `/dev/vgpuctl` does with the escapes it must see: allocation and
//! free of clients, devices and memory (the memory ceiling), and the answers
//! that reveal the GPU's size or the host's GPUs (rewritten to the vGPUs).
//!
//! Parameters are copied into the kernel once and decisions are made on the
//! copies. Devices, subdevices and memory are then allocated by executing
//! the copies through the driver's kernel-client interface, on a client
//! verified to belong to this file, so no other thread can change what the
//! driver acts on, and the results (handles, sizes) come from the driver,
//! not from user memory. Everything else is forwarded unchanged.

use kernel::{
    prelude::*,
    sync::{Arc, Mutex},
};

use crate::deny;
use crate::kapi::{
    mm::Scratch,
    realfile::{RealFile, RealNode},
    rmops::RmOps,
    user,
};
use crate::ledger::fb_info_kib;
use crate::nv::abi::{self, class, ctrl, status::*, surface_info, Wire};
use crate::nv::ioctl::{self, Escape, CARD_INFO_SIZE};
use crate::nv::table;
use crate::proxy::Call;
use crate::sched::{Enrolled, Watched};
use crate::tracker::{Charge, Kind, Obj, Tracker};
use crate::vgpus::Vgpu;

/// First byte of client handles vgpu picks (`0xC1E0_0000 | random`): a range
/// apart from the driver's own (`0xC1D0_0000` up).
const CLIENT_HANDLE_BASE: u32 = 0xc1e0_0000;

kernel::sync::global_lock! {
    // SAFETY: initialised by `init_clients` in the module's `init`, before
    // any file can be opened.
    unsafe(uninit) static CLIENTS: Mutex<KVec<(u32, Arc<Ctl>)>> = KVec::new();
}

/// Sets up the module-wide index of verified clients (module `init`).
///
/// # Safety
///
/// Called once, before any `/dev/vgpuctl` file is opened.
pub(crate) unsafe fn init_clients() {
    // SAFETY: see the function's safety section.
    unsafe { CLIENTS.init() };
}

/// Empties the index and frees its storage (module unload: a static is
/// never dropped).
pub(crate) fn clear_clients() {
    drop(core::mem::take(&mut *CLIENTS.lock()));
}

/// Removes every client of `ctl` from the module-wide index (its file is
/// going away).
pub(crate) fn forget_clients(ctl: &Arc<Ctl>) {
    CLIENTS.lock().retain(|(_, c)| !Arc::ptr_eq(c, ctl));
}

/// The file that verified client `handle`, if any.
fn owner_of(handle: u32) -> Option<Arc<Ctl>> {
    CLIENTS
        .lock()
        .iter()
        .find(|(h, _)| *h == handle)
        .map(|(_, c)| c.clone())
}

/// Whether client `handle` was verified by a `/dev/vgpuctl` file of the
/// container whose vGPUs are `vgpus` (one in common is enough: the sets are
/// fixed per cgroup at open).
pub(crate) fn client_in(handle: u32, vgpus: &[Arc<Vgpu>]) -> bool {
    owner_of(handle).is_some_and(|c| {
        c.vgpus
            .iter()
            .any(|v| vgpus.iter().any(|w| Arc::ptr_eq(v, w)))
    })
}

/// The charge of memory object `h_memory` of verified client `h_client`,
/// if vgpu charged it.
pub(crate) fn charge_of(h_client: u32, h_memory: u32) -> Option<Arc<Charge>> {
    let owner = owner_of(h_client)?;
    let tracker = owner.tracker.lock();
    tracker.obj(h_client, h_memory)?.charge.clone()
}

/// The state of one `/dev/vgpuctl` file.
#[pin_data]
pub(crate) struct Ctl {
    /// The opener's vGPUs, fixed at open (its cgroup's nearest bound ancestor).
    pub(crate) vgpus: KVec<Arc<Vgpu>>,
    /// Clients and objects created through this file.
    #[pin]
    pub(crate) tracker: Mutex<Tracker>,
}

/// An escape served: `Ok(None)` means "forward it unchanged".
type Handled = Result<Option<isize>>;

impl Ctl {
    /// Counts a call refused by default deny on each of the file's vGPUs.
    fn count_denied(&self) {
        self.vgpus.iter().for_each(|v| v.count_denied());
    }

    /// The vGPU this file has on GPU `gpu`.
    fn vgpu_on(&self, gpu: u32) -> Option<&Arc<Vgpu>> {
        self.vgpus.iter().find(|v| v.config.lock().gpu == Some(gpu))
    }

    /// Serves `call` if vgpu must; `Ok(None)` if the caller should forward it
    /// as is.
    pub(crate) fn escape(this: &Arc<Self>, rm: &RmOps, real: &RealFile, call: &Call) -> Handled {
        match call.escape {
            Escape::RmAlloc => this.alloc(this, rm, real, call),
            Escape::RmFree => this.free(rm, real, call),
            Escape::RmControl => this.control(rm, real, call),
            Escape::CardInfo => this.card_info(call),
            Escape::RmDupObject => this.dup(rm, real, call),
            Escape::RmVidHeapControl => this.vid_heap(rm, real, call),
            _ => Ok(None),
        }
    }

    /// RM_ALLOC: clients and the accounted classes are served here; any
    /// other class is forwarded from vgpu's copy of the block, so the driver
    /// allocates the class vgpu saw.
    fn alloc(&self, this: &Arc<Self>, rm: &RmOps, real: &RealFile, call: &Call) -> Handled {
        let (addr, size) = (call.addr, call.size);
        let mut blk = [0u8; abi::Nvos64::SIZE];
        let blk = blk.get_mut(..size).ok_or(EINVAL)?;
        user::read(addr, blk)?;
        // `paramsSize` is not read: RM ignores it (see `alloc_accounted`).
        let (h_root, h_parent, h_new, h_class, pparams) = if size == abi::Nvos21::SIZE {
            let a = abi::Nvos21::decode(blk);
            (
                a.h_root,
                a.h_object_parent,
                a.h_object_new,
                a.h_class,
                a.p_alloc_parms,
            )
        } else {
            let a = abi::Nvos64::decode(blk);
            (
                a.h_root,
                a.h_object_parent,
                a.h_object_new,
                a.h_class,
                a.p_alloc_parms,
            )
        };
        // Default deny: a class the table does not admit is refused the way
        // RM refuses a class it does not have (`rs_server.c:4149` at
        // 595.45.04), before anything reaches the driver.
        let row = table::class_row(h_class).map(|r| r.policy);
        let result = match h_class {
            c if !deny::admits(deny::Family::Class, c, row) => {
                self.count_denied();
                Err(NV_ERR_INVALID_CLASS)
            }
            class::NV01_ROOT | class::NV01_ROOT_NON_PRIV | class::NV01_ROOT_CLIENT => {
                return self.alloc_client(this, rm, real, call, blk, h_new);
            }
            class::NV01_DEVICE_0
            | class::NV20_SUBDEVICE_0
            | class::NV01_MEMORY_LOCAL_USER
            | class::KEPLER_CHANNEL_GROUP_A => {
                self.alloc_accounted(rm, h_root, h_parent, h_new, h_class, pparams)?
            }
            c if class::is_channel_class(c) => {
                self.alloc_accounted(rm, h_root, h_parent, h_new, h_class, pparams)?
            }
            _ => return call.forward_block(real, blk).map(Some),
        };
        let (handle, status) = match result {
            Ok(h) => (h, NV_OK),
            Err(s) => (h_new, s),
        };
        // Results go into the caller's block: handle and status.
        if size == abi::Nvos21::SIZE {
            let mut a = abi::Nvos21::decode(blk);
            a.h_object_new = handle;
            a.status = status;
            user::write(addr, &a.to_bytes())?;
        } else {
            let mut a = abi::Nvos64::decode(blk);
            a.h_object_new = handle;
            a.status = status;
            user::write(addr, &a.to_bytes())?;
        }
        Ok(Some(0))
    }

    /// A client: forwarded (the driver binds it to this file's real ctl
    /// file), under a handle vgpu picks when the caller lets RM pick, then
    /// verified through the kernel interface before it is recorded.
    fn alloc_client(
        &self,
        this: &Arc<Self>,
        rm: &RmOps,
        real: &RealFile,
        call: &Call,
        blk: &mut [u8],
        h_new: u32,
    ) -> Handled {
        let handle = if h_new != 0 {
            h_new
        } else {
            CLIENT_HANDLE_BASE | (crate::kapi::random::u32() & 0xf_ffff)
        };
        // A handle that already exists (another file's client) must never
        // be recorded as this file's.
        let exists = |h: u32| -> Result<bool> {
            let mut q = abi::GpuGetAttachedIdsParams::default().to_bytes();
            Ok(rm.control(h, h, ctrl::NV0000_CTRL_CMD_GPU_GET_ATTACHED_IDS, &mut q)? == NV_OK)
        };
        let fresh = !exists(handle)?;
        // The new handle's field, at the same offset in both layouts.
        const H_NEW: usize = abi::field_offset(abi::Nvos21::FIELDS, "h_object_new");
        const _: () = assert!(H_NEW == abi::field_offset(abi::Nvos64::FIELDS, "h_object_new"));
        blk.get_mut(H_NEW..H_NEW + 4)
            .ok_or(EINVAL)?
            .copy_from_slice(&handle.to_ne_bytes());
        let r = call.forward_block(real, blk)?;
        // Did the driver create `handle`, and does it answer for it? A
        // client that was raced to another handle is never recorded.
        if fresh && exists(handle)? {
            let mut t = self.tracker.lock();
            if !t.has_client(handle) {
                t.add_client(handle)?;
                drop(t);
                let mut index = CLIENTS.lock();
                // A handle is verified fresh: it is in no other entry.
                index.retain(|(h, _)| *h != handle);
                if let Err(e) = index.push((handle, this.clone()), GFP_KERNEL) {
                    drop(index);
                    self.tracker.lock().freed(handle, handle);
                    return Err(e.into());
                }
            }
        }
        Ok(Some(r))
    }

    /// Devices, subdevices, memory, TSGs and channels: decided on kernel
    /// copies, executed through the kernel interface. Returns the handle or
    /// an RM status.
    #[allow(clippy::too_many_arguments)]
    fn alloc_accounted(
        &self,
        rm: &RmOps,
        h_root: u32,
        h_parent: u32,
        h_new: u32,
        h_class: u32,
        pparams: u64,
    ) -> Result<core::result::Result<u32, u32>> {
        if !self.tracker.lock().has_client(h_root) {
            return Ok(Err(NV_ERR_INVALID_CLIENT));
        }
        // RM copies the class's own params, whatever `paramsSize` says (at
        // 595.45.04: `rmapiGetClassAllocParamSize`, `resource_desc.c:181-214`;
        // `rmapiParamsCopyInit`, `param_copy.c:297-320`), so vgpu reads,
        // decides on and passes on exactly that many bytes: a short or long
        // `paramsSize` changes nothing, the charge included.
        let (want, optional) = match h_class {
            // RS_OPTIONAL (`resource_list.h:175,449`).
            class::NV01_DEVICE_0 => (abi::DeviceAllocParams::SIZE, true),
            class::NV20_SUBDEVICE_0 => (abi::SubdeviceAllocParams::SIZE, true),
            // RS_REQUIRED (`resource_list.h:484,505`, channels 283-392).
            class::KEPLER_CHANNEL_GROUP_A => (abi::ChannelGroupAllocParams::SIZE, false),
            c if class::is_channel_class(c) => (abi::ChannelAllocParams::SIZE, false),
            _ => (abi::MemoryAllocationParams::SIZE, false),
        };
        // Channel params are the largest of the accounted classes'.
        let mut buf = [0u8; abi::ChannelAllocParams::SIZE];
        let params = buf.get_mut(..want).ok_or(EINVAL)?;
        if pparams == 0 {
            if !optional {
                // A required pointer that is NULL (`param_copy.c:314-315`).
                return Ok(Err(NV_ERR_INVALID_ARGUMENT));
            }
            // NULL optional params: the class's defaults, passed on as NULL
            // (see `alloc_copy`).
            return self.alloc_copy(rm, h_root, h_parent, h_new, h_class, &mut []);
        }
        if user::read(pparams, params).is_err() {
            // `os_memcpy_from_user` (`os-interface.c:522-529`).
            return Ok(Err(NV_ERR_INVALID_ADDRESS));
        }
        let r = self.alloc_copy(rm, h_root, h_parent, h_new, h_class, params)?;
        if r.is_ok() {
            // In/out params (the rounded size) back to the caller.
            user::write(pparams, params)?;
        }
        Ok(r)
    }

    /// Allocates from kernel copies `params` (the class's alloc params,
    /// updated in place): the decision, the charge, the call through the
    /// kernel interface, the settling and the record.
    fn alloc_copy(
        &self,
        rm: &RmOps,
        h_root: u32,
        h_parent: u32,
        h_new: u32,
        h_class: u32,
        params: &mut [u8],
    ) -> Result<core::result::Result<u32, u32>> {
        let (gpu, kind, charge_to, vram_size, in_tsg) = match h_class {
            class::NV01_DEVICE_0 => {
                if h_parent != h_root {
                    return Ok(Err(NV_ERR_INVALID_OBJECT_PARENT));
                }
                // The device instance is the GPU's index (its minor); no
                // params (a NULL pointer) is RM's default, device 0.
                let gpu = if params.is_empty() {
                    0
                } else {
                    abi::DeviceAllocParams::decode(params).device_id
                };
                if self.vgpu_on(gpu).is_none() {
                    return Err(EACCES);
                }
                (gpu, Kind::Device, None, 0, None)
            }
            _ => {
                let tracker = self.tracker.lock();
                let Some(parent) = tracker.obj(h_root, h_parent) else {
                    return Ok(Err(NV_ERR_INVALID_OBJECT_PARENT));
                };
                let (gpu, pkind, psched) = (parent.gpu, parent.kind, parent.sched.clone());
                drop(tracker);
                match h_class {
                    class::NV20_SUBDEVICE_0 => (gpu, Kind::Subdevice, None, 0, None),
                    class::KEPLER_CHANNEL_GROUP_A if pkind == Kind::Device => {
                        (gpu, Kind::Tsg, None, 0, None)
                    }
                    c if class::is_channel_class(c) && pkind == Kind::Device => {
                        (gpu, Kind::Channel, None, 0, None)
                    }
                    c if class::is_channel_class(c) && pkind == Kind::Tsg => {
                        (gpu, Kind::Channel, None, 0, psched)
                    }
                    class::KEPLER_CHANNEL_GROUP_A => return Ok(Err(NV_ERR_INVALID_OBJECT_PARENT)),
                    c if class::is_channel_class(c) => {
                        return Ok(Err(NV_ERR_INVALID_OBJECT_PARENT))
                    }
                    _ => {
                        let mp = abi::MemoryAllocationParams::decode(params);
                        if mp.allocates_vram() {
                            let v = self.vgpu_on(gpu).ok_or(EACCES)?.clone();
                            // Reserved: at least what RM will allocate, its
                            // page-rounded size (settled after the call).
                            let floor = crate::ledger::vram_floor(mp.size, mp.attr, mp.attr2);
                            (gpu, Kind::Memory, Some(v), floor, None)
                        } else {
                            (gpu, Kind::Memory, None, 0, None)
                        }
                    }
                }
            }
        };
        // A TSG, or a channel outside one, runs on this file's vGPU there.
        let sched_on = match (kind, &in_tsg) {
            (Kind::Tsg, _) | (Kind::Channel, None) => {
                Some(self.vgpu_on(gpu).ok_or(EACCES)?.clone())
            }
            _ => None,
        };
        if let Some(v) = &charge_to {
            if !v.charge(vram_size) {
                return Ok(Err(NV_ERR_NO_MEMORY));
            }
        }
        let refund = |v: &Option<Arc<Vgpu>>, bytes: u64| {
            if let Some(v) = v {
                v.config.lock().memory.release(bytes);
            }
        };
        let handle = match rm.alloc(h_root, h_parent, h_new, h_class, params) {
            Ok(Ok(h)) => h,
            Ok(Err(st)) => {
                refund(&charge_to, vram_size);
                return Ok(Err(st));
            }
            Err(e) => {
                refund(&charge_to, vram_size);
                return Err(e);
            }
        };
        let mut charge = None;
        if let Some(v) = charge_to {
            // The size the driver really allocated: it wrote it into our
            // kernel copy of the params, which no user thread can touch.
            // Should a driver not report it there, ask (GET_SURFACE_INFO).
            let reported = abi::MemoryAllocationParams::decode(params).size;
            let actual = if reported >= vram_size {
                reported
            } else {
                surface_size(rm, h_root, handle).unwrap_or(vram_size)
            };
            let settled = {
                let mut cfg = v.config.lock();
                let r = cfg.memory.settle(vram_size, actual);
                if r.is_err() {
                    cfg.refused += 1;
                }
                r
            };
            if settled.is_err() {
                let _ = rm.free(h_root, h_parent, handle);
                return Ok(Err(NV_ERR_NO_MEMORY));
            }
            match Arc::new(
                Charge {
                    vgpu: v.clone(),
                    bytes: actual,
                },
                GFP_KERNEL,
            ) {
                Ok(c) => charge = Some(c),
                Err(e) => {
                    v.config.lock().memory.release(actual);
                    let _ = rm.free(h_root, h_parent, handle);
                    return Err(e.into());
                }
            }
        }
        let sched = match sched_on {
            Some(v) => match Enrolled::new(&v, h_root, handle, kind == Kind::Tsg) {
                Ok(e) => Some(e),
                Err(e) => {
                    let _ = rm.free(h_root, h_parent, handle);
                    return Err(e);
                }
            },
            None => in_tsg,
        };
        let watch = match (kind, &sched) {
            (Kind::Channel, Some(e)) => match self.watch_userd(rm, gpu, h_root, e, params) {
                Ok(w) => w,
                Err(err) => {
                    let _ = rm.free(h_root, h_parent, handle);
                    return Err(err);
                }
            },
            _ => None,
        };
        let obj = Obj {
            handle,
            parent: h_parent,
            gpu,
            kind,
            charge,
            sched,
            watch,
        };
        if let Err(e) = self.tracker.lock().add_obj(h_root, obj) {
            let _ = rm.free(h_root, h_parent, handle);
            return Err(e);
        }
        Ok(Ok(handle))
    }

    /// Watches the USERD a new channel names (its first), so that the
    /// scheduler can tell when the channel has work queued.
    fn watch_userd(
        &self,
        rm: &RmOps,
        gpu: u32,
        client: u32,
        entry: &Arc<Enrolled>,
        params: &[u8],
    ) -> Result<Option<Arc<Watched>>> {
        let p = abi::ChannelAllocParams::decode(params);
        let (h_userd, offset) = (p.h_userd_memory[0], p.userd_offset[0]);
        if h_userd == 0 {
            return Ok(None);
        }
        let state = crate::state()?;
        let Some(g) = state.sched(gpu) else {
            return Ok(None);
        };
        Watched::new(
            rm,
            state.kclient,
            g,
            entry.vgpu(),
            entry.id(),
            client,
            h_userd,
            offset,
        )
    }

    /// RM_FREE on a verified client: executed through the kernel interface,
    /// refunds done here. Other clients' frees are forwarded.
    fn free(&self, rm: &RmOps, real: &RealFile, call: &Call) -> Handled {
        let addr = call.addr;
        let mut blk = [0u8; abi::Nvos00::SIZE];
        user::read(addr, &mut blk)?;
        let mut a = abi::Nvos00::decode(&blk);
        if !self.tracker.lock().has_client(a.h_root) {
            // Forwarded as vgpu read it: it cannot become a free on a
            // verified client behind vgpu's back.
            return call.forward_block(real, &mut blk).map(Some);
        }
        // On a verified client, every free runs on the kernel copy, so the
        // object freed is the one vgpu refunds (with its descendants).
        let st = rm.free(a.h_root, a.h_object_parent, a.h_object_old)?;
        if st == NV_OK {
            self.tracker.lock().freed(a.h_root, a.h_object_old);
            if a.h_object_old == a.h_root {
                CLIENTS.lock().retain(|(h, _)| *h != a.h_root);
            }
        }
        a.status = st;
        user::write(addr, &a.to_bytes())?;
        Ok(Some(0))
    }

    /// Controls: scheduling ones are decided here (see [`Ctl::sched_status`]);
    /// the rest are forwarded, and FB info on a subdevice of this file's
    /// vGPU is rewritten to the vGPU's ceiling and free memory.
    fn control(&self, rm: &RmOps, real: &RealFile, call: &Call) -> Handled {
        let addr = call.addr;
        let mut blk = [0u8; abi::Nvos54::SIZE];
        user::read(addr, &mut blk)?;
        let mut a = abi::Nvos54::decode(&blk);
        if matches!(
            a.cmd,
            ctrl::NVA06C_CTRL_CMD_GPFIFO_SCHEDULE
                | ctrl::NVA06F_CTRL_CMD_GPFIFO_SCHEDULE
                | ctrl::NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS
                | ctrl::NVA06C_CTRL_CMD_MAKE_REALTIME
                | ctrl::NVA06C_CTRL_CMD_SET_TIMESLICE
                | ctrl::NVA06C_CTRL_CMD_SET_INTERLEAVE_LEVEL
        ) {
            a.status = self.sched_status(rm, &a)?;
            user::write(addr, &a.to_bytes())?;
            return Ok(Some(0));
        }
        // Default deny: a control the table does not admit is refused the
        // way RM refuses a command it does not have (`NV_ERR_NOT_SUPPORTED`,
        // `rs_resource.c:131` at 595.45.04), before anything reaches the
        // driver.
        let row = table::control_row(a.cmd).map(|r| r.policy);
        if !deny::admits(deny::Family::Control, a.cmd, row) {
            self.count_denied();
            a.status = NV_ERR_NOT_SUPPORTED;
            user::write(addr, &a.to_bytes())?;
            return Ok(Some(0));
        }
        if a.cmd != ctrl::NV2080_CTRL_CMD_FB_GET_INFO_V2
            && a.cmd != ctrl::NV2080_CTRL_CMD_FB_GET_INFO
        {
            return self
                .forwarded(rm, || call.forward_block(real, &mut blk))
                .map(Some);
        }
        let vgpu = {
            let t = self.tracker.lock();
            match t.obj(a.h_client, a.h_object) {
                Some(o) if o.kind == Kind::Subdevice => self.vgpu_on(o.gpu).cloned(),
                _ => None,
            }
        };
        if let Some(v) = vgpu {
            if let Some(status) = self.fb_info(rm, &a, &v)? {
                a.status = status;
                user::write(addr, &a.to_bytes())?;
                return Ok(Some(0));
            }
        }
        // Not this file's vGPU, or malformed: the driver answers.
        self.forwarded(rm, || call.forward_block(real, &mut blk))
            .map(Some)
    }

    /// FB_GET_INFO (V1 or V2), well formed, on a subdevice of this file's
    /// vGPU `v`: run as V2 on kernel copies through the kernel interface
    /// (no other thread can change the request, or the answer before it is
    /// rewritten), the sizes and free memory rewritten to the vGPU. Returns
    /// the RM status; `None` if the request is malformed, for the driver to
    /// answer as it does.
    fn fb_info(&self, rm: &RmOps, a: &abi::Nvos54, v: &Vgpu) -> Result<Option<u32>> {
        use abi::{fb_info::MAX_LIST_SIZE, FbGetInfoV1Params as V1, FbGetInfoV2Params as V2};
        const ENTRY: usize = abi::InfoEntry::SIZE;
        let mut p = KVec::from_elem(0u8, V2::SIZE, GFP_KERNEL)?;
        // `n` entries, and where the caller's list is: V1's by pointer, V2's
        // at byte 4 of its params (after `list_size`, which RM leaves as it
        // was). The answer is that list.
        let (n, list_at) = if a.cmd == ctrl::NV2080_CTRL_CMD_FB_GET_INFO {
            let mut b = [0u8; V1::SIZE];
            if a.params_size as usize != V1::SIZE || user::read(a.params, &mut b).is_err() {
                return Ok(None);
            }
            let q = V1::decode(&b);
            let n = q.list_size as usize;
            if n == 0 || n > MAX_LIST_SIZE || q.list_ptr == 0 {
                return Ok(None);
            }
            if user::read(q.list_ptr, &mut p[4..4 + n * ENTRY]).is_err() {
                return Ok(None);
            }
            (n, q.list_ptr)
        } else {
            if a.params_size as usize != V2::SIZE || user::read(a.params, &mut p).is_err() {
                return Ok(None);
            }
            let n = u32::from_ne_bytes([p[0], p[1], p[2], p[3]]) as usize;
            if n > MAX_LIST_SIZE {
                return Ok(None);
            }
            (n, a.params + 4)
        };
        p[..4].copy_from_slice(&(n as u32).to_ne_bytes());
        let st = rm.control(
            a.h_client,
            a.h_object,
            ctrl::NV2080_CTRL_CMD_FB_GET_INFO_V2,
            &mut p,
        )?;
        if st != NV_OK {
            return Ok(Some(st));
        }
        let ledger = v.config.lock().memory;
        let list = &mut p[4..4 + n * ENTRY];
        for chunk in list.chunks_exact_mut(ENTRY) {
            let mut e = abi::InfoEntry::decode(chunk);
            e.data = fb_info_kib(e.index, e.data, &ledger);
            e.encode(chunk);
        }
        Ok(Some(match user::write(list_at, list) {
            Ok(()) => NV_OK,
            Err(_) => NV_ERR_INVALID_ARGUMENT,
        }))
    }

    /// A tenant's scheduling control, decided and executed on kernel copies
    /// (never forwarded, so no other thread can change what the driver acts
    /// on). Returns the RM status for the caller.
    ///
    /// - GPFIFO_SCHEDULE (TSG or channel) and FIFO_DISABLE_CHANNELS on this
    ///   file's own TSGs and channels: a disable applies at once, an enable
    ///   only within the vGPU's window (else it is recorded and applied when
    ///   the window opens). Any other target is refused.
    /// - MAKE_REALTIME is refused: a realtime TSG could preempt other vGPUs'
    ///   windows, and nothing a container runs needs it.
    /// - SET_TIMESLICE and SET_INTERLEAVE_LEVEL are applied to this file's
    ///   own TSGs only: only one vGPU's TSGs are enabled at a time, so they
    ///   order that vGPU's work inside its own window.
    fn sched_status(&self, rm: &RmOps, a: &abi::Nvos54) -> Result<u32> {
        if !self.tracker.lock().has_client(a.h_client) {
            return Ok(NV_ERR_INVALID_CLIENT);
        }
        if a.cmd == ctrl::NVA06C_CTRL_CMD_MAKE_REALTIME {
            return Ok(NV_ERR_INSUFFICIENT_PERMISSIONS);
        }
        let state = crate::state()?;
        if a.cmd == ctrl::NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS {
            return self.disable_channels(rm, &state, a);
        }
        if a.cmd == ctrl::NVA06C_CTRL_CMD_SET_TIMESLICE
            || a.cmd == ctrl::NVA06C_CTRL_CMD_SET_INTERLEAVE_LEVEL
        {
            let size = if a.cmd == ctrl::NVA06C_CTRL_CMD_SET_TIMESLICE {
                abi::TimesliceParams::SIZE
            } else {
                abi::InterleaveLevelParams::SIZE
            };
            let mut p = [0u8; abi::TimesliceParams::SIZE];
            let p = &mut p[..size];
            if let Err(st) = control_params(a, p) {
                return Ok(st);
            }
            let own_tsg = self
                .tracker
                .lock()
                .obj(a.h_client, a.h_object)
                .is_some_and(|o| o.kind == Kind::Tsg && o.sched.is_some());
            if !own_tsg {
                return Ok(NV_ERR_INVALID_OBJECT_HANDLE);
            }
            let st = rm.control(a.h_client, a.h_object, a.cmd, p)?;
            return Ok(st);
        }
        let mut p = [0u8; abi::GpfifoScheduleParams::SIZE];
        if let Err(st) = control_params(a, &mut p) {
            return Ok(st);
        }
        let kind = if a.cmd == ctrl::NVA06C_CTRL_CMD_GPFIFO_SCHEDULE {
            Kind::Tsg
        } else {
            Kind::Channel
        };
        let target = self
            .tracker
            .lock()
            .obj(a.h_client, a.h_object)
            .filter(|o| o.kind == kind)
            .and_then(|o| Some((o.gpu, o.sched.clone()?)));
        let Some((gpu, e)) = target else {
            return Ok(NV_ERR_INVALID_OBJECT_HANDLE);
        };
        let Some(g) = state.sched(gpu) else {
            return Ok(NV_ERR_INVALID_OBJECT_HANDLE);
        };
        let enable = abi::GpfifoScheduleParams::decode(&p).b_enable != 0;
        g.request(e.vgpu(), &[e.id()], enable, || {
            rm.control(a.h_client, a.h_object, a.cmd, &mut p)
        })
    }

    /// FIFO_DISABLE_CHANNELS on a subdevice: every listed channel must be
    /// one of this file's on that GPU, or nothing happens.
    fn disable_channels(&self, rm: &RmOps, state: &crate::State, a: &abi::Nvos54) -> Result<u32> {
        let mut p = KVec::from_elem(0u8, abi::FifoDisableChannelsParams::SIZE, GFP_KERNEL)?;
        if let Err(st) = control_params(a, &mut p) {
            return Ok(st);
        }
        let q = abi::FifoDisableChannelsParams::decode(&p);
        // The event pointer would be read at kernel privilege: refused.
        if q.num_channels as usize > abi::DISABLE_CHANNELS_MAX_ENTRIES
            || q.p_runlist_preempt_event != 0
        {
            return Ok(NV_ERR_INVALID_ARGUMENT);
        }
        let mut ids = KVec::new();
        let mut vgpu = None;
        let gpu = {
            let t = self.tracker.lock();
            let gpu = match t.obj(a.h_client, a.h_object) {
                Some(o) if o.kind == Kind::Subdevice => o.gpu,
                _ => return Ok(NV_ERR_INVALID_OBJECT_HANDLE),
            };
            for (client, h) in q.entries() {
                let e = t
                    .obj(client, h)
                    .filter(|o| o.gpu == gpu && matches!(o.kind, Kind::Channel | Kind::Tsg))
                    .and_then(|o| o.sched.clone());
                let Some(e) = e else {
                    return Ok(NV_ERR_INSUFFICIENT_PERMISSIONS);
                };
                ids.push(e.id(), GFP_KERNEL)?;
                vgpu = Some(e.vgpu().clone());
            }
            gpu
        };
        let (Some(v), Some(g)) = (vgpu, state.sched(gpu)) else {
            // No channels listed: nothing to do.
            return Ok(NV_OK);
        };
        g.request(&v, &ids, q.b_disable == 0, || {
            rm.control(a.h_client, a.h_object, a.cmd, &mut p)
        })
    }

    /// Forwards a control. A control is read from the caller's memory twice
    /// (by vgpu, then by the driver), so another thread may turn it into a
    /// scheduling call on the way: it runs under the rules of
    /// [`crate::sched::GpuSched::in_window`] for this file's first vGPU that
    /// has TSGs (or its first vGPU), and the file's other vGPUs, on other
    /// GPUs, have their TSGs disabled again afterwards unless their window
    /// is open.
    fn forwarded(&self, rm: &RmOps, call: impl FnOnce() -> Result<isize>) -> Result<isize> {
        let state = crate::state()?;
        let sched_of = |v: &Arc<Vgpu>| {
            let gpu = v.config.lock().gpu;
            gpu.and_then(|g| state.sched(g)).cloned()
        };
        let first = self
            .vgpus
            .iter()
            .find(|v| v.compute.lock().objects() > 0)
            .or(self.vgpus.first());
        let Some((first, g)) = first.and_then(|v| Some((v, sched_of(v)?))) else {
            return call();
        };
        let r = g.in_window(rm, first, call)?;
        for v in self.vgpus.iter().filter(|v| !Arc::ptr_eq(v, first)) {
            if let Some(g) = sched_of(v) {
                g.restop(rm, v)?;
            }
        }
        r
    }

    /// CARD_INFO: only the GPUs this file has a vGPU on, first in the list,
    /// answered from the records vgpu read when it loaded ([`Cards`]), so
    /// the other GPUs' records never reach the caller's memory. A list too
    /// short for the host's GPUs is `EINVAL`, as the driver answers it.
    fn card_info(&self, call: &Call) -> Handled {
        let cards = &crate::state()?.cards;
        if call.size / CARD_INFO_SIZE < cards.count() {
            return Err(EINVAL);
        }
        let mut out = KVec::from_elem(0u8, call.size, GFP_KERNEL)?;
        let mine = cards.records().filter(|rec| {
            self.vgpu_on(abi::CardInfo::decode(rec).minor_number)
                .is_some()
        });
        for (dst, rec) in out.chunks_exact_mut(CARD_INFO_SIZE).zip(mine) {
            dst.copy_from_slice(rec);
        }
        user::write(call.addr, &out)?;
        Ok(Some(0))
    }

    /// DUP: into one of this file's verified clients, from one of them or
    /// from a client another `/dev/vgpuctl` file of the same container
    /// verified, as long as the memory's vGPU is the caller's too. Refused
    /// here: DUPs from any other client (another container's, or one vgpu
    /// never verified) and of TSGs and channels (a second handle would
    /// outlive the one the schedule knows). What passes is forwarded from
    /// vgpu's kernel copy of the block, so the driver applies its own rules
    /// to the caller, as to any user client: its share policy lets a user
    /// client dup only objects of clients its own process created, unless
    /// their owner shared them (`rs_client.c:535-547`, `sharing.c:347-353`
    /// at 595.45.04). vgpu never runs a tenant's DUP at kernel privilege,
    /// which would skip that check. A copy of charged memory shares the
    /// original's charge, so the memory is charged once and refunded when
    /// its last handle goes.
    fn dup(&self, rm: &RmOps, real: &RealFile, call: &Call) -> Handled {
        let addr = call.addr;
        let mut blk = [0u8; abi::Nvos55::SIZE];
        user::read(addr, &mut blk)?;
        let a = abi::Nvos55::decode(&blk);
        let refuse = |mut a: abi::Nvos55| -> Handled {
            a.status = NV_ERR_INSUFFICIENT_PERMISSIONS;
            user::write(addr, &a.to_bytes())?;
            Ok(Some(0))
        };
        if !self.tracker.lock().has_client(a.h_client) {
            return refuse(a);
        }
        type Src = Option<(u32, Kind, Option<Arc<Charge>>, bool)>;
        let look = |t: &Tracker| -> Src {
            t.obj(a.h_client_src, a.h_object_src)
                .map(|o| (o.gpu, o.kind, o.charge.clone(), o.sched.is_some()))
        };
        let src = if self.tracker.lock().has_client(a.h_client_src) {
            look(&self.tracker.lock())
        } else {
            let Some(other) = owner_of(a.h_client_src) else {
                return refuse(a);
            };
            // The same container: the two files share their vGPUs.
            let shared = other
                .vgpus
                .iter()
                .any(|v| self.vgpus.iter().any(|w| Arc::ptr_eq(v, w)));
            if !shared {
                return refuse(a);
            }
            let src = look(&other.tracker.lock());
            if let Some((gpu, ..)) = src {
                // The memory's vGPU must be this file's on that GPU too.
                let theirs = other.vgpu_on(gpu);
                let mine = self.vgpu_on(gpu);
                if !matches!((theirs, mine), (Some(t), Some(m)) if Arc::ptr_eq(t, m)) {
                    return refuse(a);
                }
            }
            src
        };
        if src.as_ref().is_some_and(|s| s.3) {
            return refuse(a);
        }
        // The driver acts on `blk`, vgpu's copy, and answers in it.
        let r = call.forward_block(real, &mut blk)?;
        let out = abi::Nvos55::decode(&blk);
        if out.status == NV_OK {
            if let Some((gpu, kind, charge, _)) = src {
                let obj = Obj {
                    handle: out.h_object,
                    parent: a.h_parent,
                    gpu,
                    kind,
                    charge,
                    sched: None,
                    watch: None,
                };
                if let Err(e) = self.tracker.lock().add_obj(a.h_client, obj) {
                    let _ = rm.free(a.h_client, a.h_parent, out.h_object);
                    return Err(e);
                }
            }
        }
        Ok(Some(r))
    }

    /// VID_HEAP: an allocation of VRAM (ALLOC_SIZE, ALLOC_SIZE_RANGE,
    /// ALLOC_TILED_PITCH_HEIGHT) becomes the class-0x40 allocation RM would
    /// make of it, accounted like any other; INFO is rewritten to the vGPU.
    /// Any other function is forwarded from vgpu's copy of the block, so it
    /// cannot turn into an allocation on the way.
    fn vid_heap(&self, rm: &RmOps, real: &RealFile, call: &Call) -> Handled {
        let addr = call.addr;
        let mut blk = [0u8; abi::Nvos32::SIZE];
        user::read(addr, &mut blk)?;
        let mut a = abi::Nvos32::decode(&blk);
        if let Some((h_new, abi::class::NV01_MEMORY_LOCAL_USER, mp)) = a.heap_memory_params() {
            a.status = if !self.tracker.lock().has_client(a.h_root) {
                NV_ERR_INVALID_CLIENT
            } else {
                let mut params = mp.to_bytes();
                match self.alloc_copy(
                    rm,
                    a.h_root,
                    a.h_object_parent,
                    h_new,
                    class::NV01_MEMORY_LOCAL_USER,
                    &mut params,
                )? {
                    Ok(h) => {
                        a.set_heap_result(h, abi::MemoryAllocationParams::decode(&params).size);
                        NV_OK
                    }
                    Err(st) => st,
                }
            };
            user::write(addr, &a.to_bytes())?;
            return Ok(Some(0));
        }
        if a.function == abi::heap::FUNCTION_FREE && self.tracker.lock().has_client(a.h_root) {
            // On a verified client the free runs on the kernel copy, so the
            // refund matches what went.
            let h = a.free_args().h_memory;
            a.status = rm.free(a.h_root, a.h_object_parent, h)?;
            if a.status == NV_OK {
                self.tracker.lock().freed(a.h_root, h);
            }
            user::write(addr, &a.to_bytes())?;
            return Ok(Some(0));
        }
        if a.function != abi::heap::FUNCTION_INFO {
            return call.forward_block(real, &mut blk).map(Some);
        }
        let gpu = self
            .tracker
            .lock()
            .obj(a.h_root, a.h_object_parent)
            .map(|o| o.gpu);
        let r = call.forward_block(real, &mut blk)?;
        let Some(v) = gpu.and_then(|g| self.vgpu_on(g).cloned()) else {
            return Ok(Some(r));
        };
        let mut a = abi::Nvos32::decode(&blk);
        if a.status == NV_OK {
            let ledger = v.config.lock().memory;
            let view = crate::ledger::View::of(&ledger, a.total, a.free);
            a.total = view.total;
            a.free = view.free;
            user::write(addr, &a.to_bytes())?;
        }
        Ok(Some(r))
    }
}

/// Copies a control's params, exactly `p.len()` bytes, into `p`; `Err` is
/// the RM status the driver answers (at 595.45.04): a wrong size or a NULL
/// pointer NV_ERR_INVALID_ARGUMENT (`control.c:448-456`), a pointer that
/// cannot be read NV_ERR_INVALID_ADDRESS (`control.c:261`,
/// `param_copy.c:115`, `os-interface.c:522-529`).
fn control_params(a: &abi::Nvos54, p: &mut [u8]) -> core::result::Result<(), u32> {
    if a.params_size as usize != p.len() || a.params == 0 {
        return Err(NV_ERR_INVALID_ARGUMENT);
    }
    user::read(a.params, p).map_err(|_| NV_ERR_INVALID_ADDRESS)
}

/// The physical size of memory object `h` of client `client`, in bytes.
fn surface_size(rm: &RmOps, client: u32, h: u32) -> Result<u64> {
    let mut list = [0u8; 2 * abi::InfoEntry::SIZE];
    abi::InfoEntry {
        index: surface_info::PHYS_SIZE_LO,
        data: 0,
    }
    .encode(&mut list[..8]);
    abi::InfoEntry {
        index: surface_info::PHYS_SIZE_HI,
        data: 0,
    }
    .encode(&mut list[8..]);
    let mut q = abi::GetSurfaceInfoParams {
        list_size: 2,
        list_ptr: list.as_mut_ptr() as u64,
    }
    .to_bytes();
    if rm.control(client, h, ctrl::NV0041_CTRL_CMD_GET_SURFACE_INFO, &mut q)? != NV_OK {
        return Err(EIO);
    }
    let lo = abi::InfoEntry::decode(&list[..8]).data;
    let hi = abi::InfoEntry::decode(&list[8..]).data;
    Ok(u64::from(hi) << 32 | u64::from(lo))
}

/// The most GPUs the driver lists (`NV_MAX_DEVICES`).
const MAX_CARDS: usize = 32;

/// The driver's CARD_INFO records of the host's GPUs, read once when vgpu
/// loads, from a file and memory of the loading task (trusted), never from
/// a container's.
pub(crate) struct Cards {
    /// The valid records, [`CARD_INFO_SIZE`] bytes each, in the driver's
    /// order.
    records: KVec<u8>,
}

impl Cards {
    /// Asks the driver through the control node `ctl`.
    pub(crate) fn read(ctl: &RealNode) -> Result<Self> {
        let file = ctl.open_as_loader()?;
        let len = MAX_CARDS * CARD_INFO_SIZE;
        let scratch = Scratch::new(len)?;
        file.ioctl(
            ioctl::nv_iowr(Escape::CardInfo.nr(), len),
            scratch.addr() as usize,
        )?;
        let all = user::read_vec(scratch.addr(), len)?;
        let mut records = KVec::new();
        for rec in all.chunks_exact(CARD_INFO_SIZE) {
            if abi::CardInfo::decode(rec).valid != 0 {
                records.extend_from_slice(rec, GFP_KERNEL)?;
            }
        }
        Ok(Self { records })
    }

    /// The number of the host's GPUs.
    fn count(&self) -> usize {
        self.records.len() / CARD_INFO_SIZE
    }

    /// The records.
    fn records(&self) -> impl Iterator<Item = &[u8]> {
        self.records.chunks_exact(CARD_INFO_SIZE)
    }
}
