// SPDX-License-Identifier: GPL-2.0

//! What one `/dev/vgpuctl` file has created through vgpu: its verified
//! clients, and in them the objects vgpu accounts (devices, subdevices,
//! memory, TSGs, channels), with the charge each memory object holds on a
//! vGPU's ledger and the schedule entry each TSG or channel holds.
//!
//! Only entries vgpu verified with the driver itself are recorded, so the
//! record never names another file's client. A charge goes back to its
//! ledger when the last handle to its memory goes: with the object, an
//! ancestor, the client or the file.

use core::sync::atomic::{AtomicBool, Ordering};

use kernel::{
    prelude::*,
    rbtree::{RBTree, RBTreeNode, RBTreeNodeReservation},
    sync::{Arc, Mutex, UniqueArc},
};

use crate::kapi::pid::{ProcessPid, COMM_LEN};
use crate::procs::{Counter, Hold, ProcUse};
use crate::sched::{Enrolled, Watched};
use crate::vgpu::Vgpu;

/// The state of one `/dev/vgpuctl` file.
#[pin_data]
pub(crate) struct CtlFile {
    /// The opener's vGPUs, fixed at open (its cgroup's nearest bound ancestor).
    pub(crate) vgpus: KVec<Arc<Vgpu>>,
    /// Clients and objects created through this file.
    #[pin]
    pub(crate) objects: Mutex<Objects>,
    /// Held across a compute object's allocation (`src/rm/alloc.rs`,
    /// `gr_object`), so that of two threads making the first compute
    /// objects of one TSG, one charges its GR context and the other sees it
    /// charged. A TSG's objects are all of one client, and a client is one
    /// file's.
    #[pin]
    pub(crate) gr: Mutex<()>,
    /// Held from the driver's making of an object vgpu records to its
    /// record, and from the driver's free of a verified client's object to
    /// its refund, so that a thread's free of an object (or of its parent)
    /// cannot fall into another thread's allocation. It could: a refund
    /// before the record left the record charging an object the driver
    /// had freed (`make fuzz`, seed 22056981568), and a driver free before
    /// the object was made (RM answers `NV_OK` to a free of a handle the
    /// client does not have, `rs_server.c:1072-1081` at 550.163.01) with
    /// its refund after the record refunded an object the driver held,
    /// lifting the ceiling. RM serializes its calls under its own API lock,
    /// so this costs no parallelism the driver had. Taken after `gr`,
    /// before `objects`.
    #[pin]
    pub(crate) order: Mutex<()>,
    /// Whether a client of this file ever took a vGPU's compute-mode
    /// reservation: until then a free has none to let go of
    /// ([`CtlFile::drop_reservations`] costs a relaxed load).
    pub(crate) reserved: AtomicBool,
}

impl CtlFile {
    /// Counts a call refused by default deny on each of the file's vGPUs.
    pub(crate) fn count_denied(&self) {
        self.vgpus.iter().for_each(|v| v.count_denied());
    }

    /// The vGPU this file has on GPU `gpu`.
    pub(crate) fn vgpu_on(&self, gpu: u32) -> Option<&Arc<Vgpu>> {
        self.vgpus.iter().find(|v| v.config.lock().gpu == Some(gpu))
    }

    /// The vGPU of this file on the GPU of subdevice `handle` of client
    /// `client`, if that is one of this file's subdevices.
    pub(crate) fn subdevice_vgpu(&self, client: u32, handle: u32) -> Option<Arc<Vgpu>> {
        let gpu = match self.objects.lock().obj(client, handle) {
            Some(o) if o.kind == Kind::Subdevice => o.gpu,
            _ => return None,
        };
        self.vgpu_on(gpu).cloned()
    }

    /// Lets go of the compute-mode reservations client `client` holds on
    /// this file's vGPUs where it has no subdevice left, as RM does when
    /// the holder's subdevice is freed (`subdevice.c:431-448` at
    /// 550.163.01). Call after the objects freed are forgotten.
    pub(crate) fn drop_reservations(&self, client: u32) {
        if !self.reserved.load(Ordering::Relaxed) {
            return;
        }
        for v in self.vgpus.iter() {
            if client == 0 || v.compute.lock().reservation != client {
                continue;
            }
            let Some(gpu) = v.config.lock().gpu else {
                continue;
            };
            if self.objects.lock().subdevice_on(client, gpu).is_none() {
                let mut c = v.compute.lock();
                if c.reservation == client {
                    c.reservation = 0;
                }
            }
        }
    }

    /// Whether `h` is one of this file's verified clients.
    pub(crate) fn has_client(&self, h: u32) -> bool {
        self.objects.lock().has_client(h)
    }

    /// Whether this file and `other` share a vGPU (the same container).
    pub(crate) fn shares_vgpus(&self, other: &[Arc<Vgpu>]) -> bool {
        self.vgpus
            .iter()
            .any(|v| other.iter().any(|w| Arc::ptr_eq(v, w)))
    }
}

/// A memory object's charge, shared by every handle to the same memory
/// (the original and its DUPs): refunded when the last of them goes.
pub(crate) struct Charge {
    /// The vGPU charged.
    pub(crate) vgpu: Arc<Vgpu>,
    /// Bytes.
    pub(crate) bytes: u64,
    /// The process they are charged to on the vGPU's list of processes
    /// (`src/procs.rs`), if any.
    pub(crate) owner: Option<Arc<ProcUse>>,
}

impl Charge {
    /// A charge of `bytes` on `vgpu`, already reserved on its ledger, and
    /// charged to process `owner` too (its `Drop` gives both back).
    pub(crate) fn new(vgpu: Arc<Vgpu>, bytes: u64, owner: Option<Arc<ProcUse>>) -> Self {
        if let Some(u) = &owner {
            u.charged(bytes);
        }
        Self { vgpu, bytes, owner }
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.vgpu.config.lock().memory.release(self.bytes);
        if let Some(u) = &self.owner {
            u.refunded(self.bytes);
        }
    }
}

/// The charge an object holds: its own until another holder must share it
/// (a DUP of the memory, or UVM mapping it), then shared. Most memory is
/// never shared, so most allocations need no second heap object.
pub(crate) enum Held {
    /// Held by this object alone.
    Own(Charge),
    /// Shared with DUPs or UVM mappings; refunded when the last goes.
    Shared(Arc<Charge>),
}

/// A shared handle to the charge in `slot`, moving an owned charge to the
/// heap the first time (`slot` then holds it shared). `Ok(None)`: no
/// charge.
pub(crate) fn share(slot: &mut Option<Held>) -> Result<Option<Arc<Charge>>> {
    match slot {
        None => Ok(None),
        Some(Held::Shared(a)) => Ok(Some(a.clone())),
        Some(Held::Own(_)) => {
            // Allocated before the charge moves, so a failure leaves it held
            // where it was.
            crate::kapi::inject::record()?;
            let uninit = UniqueArc::<Charge>::new_uninit(GFP_KERNEL)?;
            let Some(Held::Own(c)) = slot.take() else {
                return Ok(None);
            };
            let a: Arc<Charge> = uninit.write(c).into();
            *slot = Some(Held::Shared(a.clone()));
            Ok(Some(a))
        }
    }
}

/// What an accounted object is.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A device (NV01_DEVICE_0).
    Device,
    /// A subdevice (FB info is asked of subdevices).
    Subdevice,
    /// Memory.
    Memory,
    /// A TSG.
    Tsg,
    /// A channel (in a TSG, or on its own).
    Channel,
    /// A GPU VA space, recorded for the VRAM RM commits for it.
    VaSpace,
    /// A GPU VA range (NV50_MEMORY_VIRTUAL), recorded for its page tables.
    VirtualMemory,
}

impl Kind {
    /// Its name in debugfs `vgpu/records`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Device => "device",
            Kind::Subdevice => "subdevice",
            Kind::Memory => "memory",
            Kind::Tsg => "tsg",
            Kind::Channel => "channel",
            Kind::VaSpace => "vaspace",
            Kind::VirtualMemory => "virtual",
        }
    }
}

/// An object vgpu accounts.
pub(crate) struct Obj {
    /// Its handle.
    pub(crate) handle: u32,
    /// Its parent's handle.
    pub(crate) parent: u32,
    /// The GPU it belongs to.
    pub(crate) gpu: u32,
    /// What it is.
    pub(crate) kind: Kind,
    /// For VRAM, what it is charged (shared with its DUPs).
    pub(crate) charge: Option<Held>,
    /// For a TSG or channel, its place in the schedule (a channel in a TSG
    /// shares its TSG's).
    pub(crate) sched: Option<Arc<Enrolled>>,
    /// For a channel, its USERD as the scheduler watches it (held for its
    /// `Drop`, which stops watching).
    #[expect(dead_code, reason = "held for its Drop only")]
    pub(crate) watch: Option<Arc<Watched>>,
    /// For a device or channel, its count on its process's entry in the
    /// vGPU's list of processes (held for its `Drop`, which gives it back).
    #[expect(dead_code, reason = "held for its Drop only")]
    pub(crate) user: Option<Hold>,
    /// For a TSG, or a channel outside one (its TSG is its own): the charge
    /// of its GR context's buffers, once its first compute object made them
    /// (`src/rm/alloc.rs`, `gr_object`).
    pub(crate) gr: Option<Charge>,
}

/// A verified client.
pub(crate) struct Client {
    /// Its handle.
    pub(crate) handle: u32,
    /// The process that created it (RM's `ProcID`, `pOsPidInfo`).
    pid: ProcessPid,
    /// That process's command name then.
    comm: [u8; COMM_LEN],
    /// Its process's entry on each vGPU it has used, held while it lives.
    users: KVec<(Arc<Vgpu>, Hold)>,
    /// Its accounted objects, by handle.
    objs: RBTree<u32, Obj>,
    /// For every handle that is the parent of an accounted object (itself
    /// accounted or not: a VA space, a context share), how many accounted
    /// objects it is the parent of. A free of a handle with no entry here
    /// takes no descendants with it, which is the common case (memory).
    children: RBTree<u32, u32>,
    /// Nodes of forgotten objects, kept for the next ones (at most
    /// [`SPARE_NODES`]): allocating and freeing a node per object cost
    /// about 700 guest instructions an alloc-and-free pair, half again what
    /// the rest of vgpu's accounting costs.
    spare: KVec<RBTreeNodeReservation<u32, Obj>>,
    /// How many objects `objs` holds.
    count: usize,
    /// Room for the walk of a free (empty between walks): capacity for
    /// every object and one more, kept by [`Objects::add_obj`], so that
    /// forgetting a tree never allocates and never stops half-way.
    walk: KVec<u32>,
}

/// How many nodes of forgotten objects a client keeps for reuse.
const SPARE_NODES: usize = 8;

impl Client {
    fn new(handle: u32, pid: ProcessPid, comm: [u8; COMM_LEN]) -> Result<Self> {
        Ok(Self {
            handle,
            pid,
            comm,
            users: KVec::new(),
            objs: RBTree::new(),
            children: RBTree::new(),
            spare: KVec::with_capacity(SPARE_NODES, GFP_KERNEL)?,
            count: 0,
            walk: KVec::new(),
        })
    }

    /// Forgets object `handle` (if accounted), one child fewer for its
    /// parent.
    fn forget(&mut self, handle: u32) {
        // One lookup: every RM_FREE of memory passes here.
        let Some(entry) = self.objs.find_mut(&handle) else {
            return;
        };
        let parent = entry.get().parent;
        // Dropping the object drops its charge reference, its schedule entry
        // and its watch; its node is kept if there is room.
        let node = entry.remove_node();
        self.count -= 1;
        let _ = self.spare.push_within_capacity(node.into_reservation());
        self.one_child_fewer(parent);
    }

    /// `parent` has one accounted child fewer (its count goes at 0).
    fn one_child_fewer(&mut self, parent: u32) {
        if let Some(mut n) = self.children.find_mut(&parent) {
            *n.get_mut() -= 1;
            if *n.get() == 0 {
                n.remove_node();
            }
        }
    }
}

/// The clients of one ctl file.
#[derive(Default)]
pub(crate) struct Objects {
    clients: KVec<Client>,
}

impl Objects {
    /// Records a verified client, created by process `pid` (command
    /// `comm`).
    pub(crate) fn add_client(
        &mut self,
        handle: u32,
        pid: ProcessPid,
        comm: [u8; COMM_LEN],
    ) -> Result {
        crate::kapi::inject::record()?;
        self.clients
            .push(Client::new(handle, pid, comm)?, GFP_KERNEL)?;
        Ok(())
    }

    /// The entry of client `client`'s process in `v`'s list of processes,
    /// which the client holds from the first time on, while it lives.
    /// `EINVAL` if it is not a recorded client.
    fn client_hold(&mut self, client: u32, v: &Arc<Vgpu>) -> Result<&Hold> {
        let c = self.client_mut(client).ok_or(EINVAL)?;
        let i = match c.users.iter().position(|(w, _)| Arc::ptr_eq(w, v)) {
            Some(i) => i,
            None => {
                c.users.reserve(1, GFP_KERNEL)?;
                let h = v.procs.lock().hold(&c.pid, &c.comm, Counter::Client)?;
                c.users
                    .push_within_capacity((v.clone(), h))
                    .map_err(|_| ENOMEM)?;
                c.users.len() - 1
            }
        };
        c.users.get(i).map(|(_, h)| h).ok_or(EINVAL)
    }

    /// A count of `what` (a device, a channel) on the entry of client
    /// `client`'s process in `v`'s list of processes.
    pub(crate) fn hold_on(&mut self, client: u32, v: &Arc<Vgpu>, what: Counter) -> Result<Hold> {
        Ok(self.client_hold(client, v)?.also(what))
    }

    /// The entry of client `client`'s process in `v`'s list of processes,
    /// to charge its memory to.
    pub(crate) fn user_on(&mut self, client: u32, v: &Arc<Vgpu>) -> Result<Arc<ProcUse>> {
        Ok(self.client_hold(client, v)?.user().clone())
    }

    /// The handles of this file's verified clients.
    pub(crate) fn client_handles(&self) -> impl Iterator<Item = u32> + '_ {
        self.clients.iter().map(|c| c.handle)
    }

    /// Whether `handle` is one of this file's verified clients.
    pub(crate) fn has_client(&self, handle: u32) -> bool {
        self.clients.iter().any(|c| c.handle == handle)
    }

    /// Writes client `client`'s records, one line an object (after a line
    /// `vgpus N...` that the caller writes):
    /// `HANDLE parent PARENT gpu G kind KIND charge BYTES[ shared] gr BYTES`
    /// (handles in hex; debugfs `vgpu/records`). Nothing for a client this
    /// file did not verify.
    pub(crate) fn show(&self, client: u32, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let Some(c) = self.clients.iter().find(|c| c.handle == client) else {
            return Ok(());
        };
        for (h, o) in c.objs.iter() {
            let (bytes, shared) = match &o.charge {
                None => (0, ""),
                Some(Held::Own(c)) => (c.bytes, ""),
                Some(Held::Shared(c)) => (c.bytes, " shared"),
            };
            writeln!(
                f,
                "{h:#x} parent {:#x} gpu {} kind {} charge {bytes}{shared} gr {}",
                o.parent,
                o.gpu,
                o.kind.name(),
                o.gr.as_ref().map_or(0, |g| g.bytes)
            )?;
        }
        Ok(())
    }

    fn client_mut(&mut self, handle: u32) -> Option<&mut Client> {
        self.clients.iter_mut().find(|c| c.handle == handle)
    }

    /// The accounted object `handle` of client `client`, to change.
    pub(crate) fn obj_mut(&mut self, client: u32, handle: u32) -> Option<&mut Obj> {
        self.client_mut(client)?.objs.get_mut(&handle)
    }

    /// A subdevice of client `client` on GPU `gpu`, if it has one.
    pub(crate) fn subdevice_on(&self, client: u32, gpu: u32) -> Option<u32> {
        self.kind_on(client, gpu, Kind::Subdevice)
    }

    /// One of client `client`'s recorded objects of kind `kind` on GPU
    /// `gpu`, if it has one.
    pub(crate) fn kind_on(&self, client: u32, gpu: u32, kind: Kind) -> Option<u32> {
        self.clients
            .iter()
            .find(|c| c.handle == client)?
            .objs
            .iter()
            .find(|(_, o)| o.kind == kind && o.gpu == gpu)
            .map(|(h, _)| *h)
    }

    /// The accounted object `handle` of client `client`.
    pub(crate) fn obj(&self, client: u32, handle: u32) -> Option<&Obj> {
        self.clients
            .iter()
            .find(|c| c.handle == client)?
            .objs
            .get(&handle)
    }

    /// Records an object; on failure it is dropped (its charge reference
    /// with it). RM handles are unique in a client: an object recorded
    /// under the same handle before is forgotten.
    pub(crate) fn add_obj(&mut self, client: u32, obj: Obj) -> Result {
        let c = self.client_mut(client).ok_or(EINVAL)?;
        crate::kapi::inject::record()?;
        // Room for a walk over every object, this one included (see
        // `freed`).
        c.walk.reserve(c.count + 2, GFP_KERNEL)?;
        let (handle, parent) = (obj.handle, obj.parent);
        let node = match c.spare.pop() {
            Some(r) => r,
            None => RBTreeNodeReservation::new(GFP_KERNEL)?,
        }
        .into_node(handle, obj);
        // A failure from here on drops `node`, and the object with it.
        match c.children.get_mut(&parent) {
            Some(n) => *n += 1,
            None => {
                c.children.insert(RBTreeNode::new(parent, 1, GFP_KERNEL)?);
            }
        }
        match c.objs.insert(node) {
            Some(old) => {
                // Recorded under this handle before: one child fewer for
                // the old object's parent.
                let (_, old) = old.to_key_value();
                c.one_child_fewer(old.parent);
            }
            None => c.count += 1,
        }
        Ok(())
    }

    /// `handle` of `client` was freed: forget it and its descendants and
    /// refund their charges. Freeing the client's own handle forgets the
    /// client.
    pub(crate) fn freed(&mut self, client: u32, handle: u32) {
        if client == handle {
            if let Some(i) = self.clients.iter().position(|c| c.handle == client) {
                // Dropping the client drops its objects' charge references.
                let _ = self.clients.remove(i);
            }
            return;
        }
        let Some(c) = self.client_mut(client) else {
            return;
        };
        // The common case, a leaf (memory): a lookup and a removal.
        if c.children.get(&handle).is_none() {
            c.forget(handle);
            return;
        }
        // Forget the tree under `handle`, breadth first, in the client's
        // walk buffer, which has room for every object (`add_obj` keeps
        // it so): no allocation here, so a freed tree is never left half
        // recorded (charges and schedule entries of objects the driver
        // freed; found by the fuzz suite's fault injection). Only handles
        // that are parents are searched for children, and they are few
        // (devices, subdevices, TSGs); a push past the room (only a cycle
        // of parents could ask for one) is dropped, which bounds the walk.
        let mut walk = core::mem::take(&mut c.walk);
        walk.clear();
        let _ = walk.push_within_capacity(handle);
        let mut head = 0;
        while let Some(&p) = walk.get(head) {
            head += 1;
            if c.children.get(&p).is_none() {
                continue;
            }
            for (h, o) in c.objs.iter() {
                if o.parent == p && *h != p {
                    let _ = walk.push_within_capacity(*h);
                }
            }
        }
        for h in walk.iter() {
            c.forget(*h);
        }
        walk.clear();
        c.walk = walk;
    }
}

/// VRAM reserved on a vGPU's ledger for an allocation in progress: given
/// back when dropped, unless it became a [`Charge`] first.
pub(crate) struct Reservation {
    vgpu: Arc<Vgpu>,
    bytes: u64,
}

impl Reservation {
    /// Reserves `bytes` on `vgpu` (see [`Vgpu::charge`]); `None` past its
    /// ceiling (counted as refused).
    pub(crate) fn new(vgpu: &Arc<Vgpu>, bytes: u64) -> Option<Self> {
        vgpu.charge(bytes).then(|| Self {
            vgpu: vgpu.clone(),
            bytes,
        })
    }

    /// `bytes` charged on `vgpu` whatever its ceiling (see
    /// [`crate::ledger::Ledger::force`]).
    pub(crate) fn forced(vgpu: &Arc<Vgpu>, bytes: u64) -> Self {
        vgpu.config.lock().memory.force(bytes);
        Self {
            vgpu: vgpu.clone(),
            bytes,
        }
    }

    /// Settles the reservation to `actual`, what the driver allocated.
    /// `false` if the growth does not fit under the ceiling: the ledger then
    /// gave the reservation back (counted as refused).
    pub(crate) fn settle(&mut self, actual: u64) -> bool {
        if actual == self.bytes {
            // The common case, the floor exactly: nothing to change.
            return true;
        }
        let mut cfg = self.vgpu.config.lock();
        match cfg.memory.settle(self.bytes, actual) {
            Ok(()) => {
                self.bytes = actual;
                true
            }
            Err(_) => {
                cfg.refused += 1;
                self.bytes = 0;
                false
            }
        }
    }

    /// The reservation as the charge of an object, charged to process
    /// `owner` (see [`Charge::owner`]).
    pub(crate) fn into_charge(self, owner: Option<Arc<ProcUse>>) -> Charge {
        let charge = Charge::new(self.vgpu.clone(), self.bytes, owner);
        // The charge holds the bytes now: this reservation gives none back
        // when it drops.
        let mut this = self;
        this.bytes = 0;
        charge
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        // Nothing held (it became a charge, or was given back): no lock.
        if self.bytes == 0 {
            return;
        }
        self.vgpu.config.lock().memory.release(self.bytes);
    }
}
