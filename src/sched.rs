// SPDX-License-Identifier: GPL-2.0

//! The compute scheduler: each physical GPU's time divided between its
//! vGPUs.
//!
//! Work reaches the GPU without a system call (a doorbell write), so shares
//! are enforced on what runs, not on what is submitted: vgpu knows every TSG
//! (and every channel outside a TSG) a tenant creates, because it creates
//! them itself through the driver's kernel-client interface, and a kernel
//! thread per GPU opens one vGPU's *window* at a time: the owner's TSGs are
//! enabled, every other vGPU's are disabled and preempted. The window maths
//! is in [`crate::compute`].
//!
//! A tenant's own scheduling calls (GPFIFO_SCHEDULE, FIFO_DISABLE_CHANNELS)
//! are recorded as what it *wants*: a disable applies at once, an enable
//! only while its window is open (else at the window's start). The check and
//! the call happen under the GPU's switch lock, so a window cannot close
//! between them. Other controls a tenant with TSGs forwards run inside its
//! window too ([`GpuSched::in_window`]), since the driver reads them again
//! from memory another thread can change.
//!
//! Whether a vGPU has work (for the work-conserving policy) is read from its
//! channels' USERD (`GPGet` against `GPPut`), mapped through duplicates in
//! vgpu's own driver client ([`Watched`]).

use core::sync::atomic::{AtomicBool, Ordering};
use kernel::{
    new_condvar, new_mutex,
    prelude::*,
    sync::{Arc, CondVar, Mutex},
    time::{Instant, Monotonic},
    types::ScopeGuard,
};

use core::fmt::Write;

use crate::compute::{self, Policy, Tenant};
use crate::kapi::{
    chrdev::Node,
    kthread::{self, Stop, Worker},
    rmops::RmOps,
    sysfs::{DeviceFiles, Emit, FileSpec},
    userd::UserdMap,
};
use crate::nv::abi::{self, ctrl};
use crate::status::RmResult;
use crate::vgpu::{Entry, Vgpu, Watch, USERD_WATCHED};
use crate::vgpus::{errno, Vgpus};

/// A TSG or channel enrolled in its vGPU's schedule, shared by the handles
/// that reach it (the TSG and its channels); leaves the schedule when the
/// last of them is freed.
pub(crate) struct Enrolled {
    vgpu: Arc<Vgpu>,
    id: u64,
}

impl Enrolled {
    /// Enrols `handle` of `client` (a TSG if `tsg`, else a channel outside a
    /// TSG) with `vgpu`. The driver creates both disabled.
    pub(crate) fn new(vgpu: &Arc<Vgpu>, client: u32, handle: u32, tsg: bool) -> Result<Arc<Self>> {
        crate::kapi::inject::record()?;
        let id = {
            let mut c = vgpu.compute.lock();
            let id = c.next_id;
            c.entries.push(
                Entry {
                    id,
                    client,
                    handle,
                    tsg,
                    wanted: false,
                },
                GFP_KERNEL,
            )?;
            c.next_id += 1;
            id
        };
        let e = Arc::new(
            Enrolled {
                vgpu: vgpu.clone(),
                id,
            },
            GFP_KERNEL,
        );
        // On failure the new `Enrolled` was never made: drop the entry here.
        if e.is_err() {
            vgpu.compute.lock().entries.retain(|x| x.id != id);
        }
        Ok(e?)
    }

    /// The vGPU it runs on.
    pub(crate) fn vgpu(&self) -> &Arc<Vgpu> {
        &self.vgpu
    }

    /// Its entry's number in the vGPU's schedule.
    pub(crate) fn id(&self) -> u64 {
        self.id
    }
}

impl Drop for Enrolled {
    fn drop(&mut self) {
        let id = self.id;
        self.vgpu.compute.lock().entries.retain(|e| e.id != id);
    }
}

/// A channel's USERD, duplicated into vgpu's own client and mapped into the
/// kernel, so the scheduler can tell whether the channel has work queued
/// (`GPGet != GPPut`). The duplicate keeps the memory alive whatever the
/// container frees; dropping this unmaps it and frees the duplicate.
pub(crate) struct Watched {
    rm: RmOps,
    vgpu: Arc<Vgpu>,
    id: u64,
    kclient: u32,
    kdevice: u32,
    h_dup: u32,
    addr: usize,
}

impl Watched {
    /// Watches the USERD at `offset` of memory `h_userd` of `client`, a
    /// channel in schedule entry `entry` of `vgpu` on `gpu`. `None` if the
    /// driver will not duplicate or map it (the entry then counts as busy
    /// whenever it is enabled).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        rm: &RmOps,
        kclient: u32,
        gpu: &GpuSched,
        vgpu: &Arc<Vgpu>,
        entry: u64,
        client: u32,
        h_userd: u32,
        offset: u64,
    ) -> Result<Option<Arc<Self>>> {
        use crate::status::Fail;
        let kdevice = gpu.kdevice;
        // Freed when this returns, unless it is kept at the end.
        let dup = match rm.dup_object(kclient, kdevice, 0, client, h_userd) {
            Ok(o) => o,
            Err(Fail::Rm(_)) => return Ok(None),
            Err(Fail::Os(e)) => return Err(e),
        };
        let h_dup = dup.handle();
        let addr = match rm.map_memory(kclient, kdevice, h_dup, offset, USERD_WATCHED) {
            Ok(a) if a % 4 == 0 => a,
            Ok(a) => {
                let _ = rm.unmap_memory(kclient, kdevice, h_dup, a);
                return Ok(None);
            }
            Err(Fail::Rm(_)) => return Ok(None),
            Err(Fail::Os(e)) => return Err(e),
        };
        // Unmapped when this fails (before the duplicate goes: dropped
        // first, as declared later).
        let unmap = ScopeGuard::new(|| {
            let _ = rm.unmap_memory(kclient, kdevice, h_dup, addr);
        });
        // SAFETY: `addr` maps `USERD_WATCHED` (`UserdMap::LEN`) bytes of the
        // channel's USERD, 4-aligned (checked above); `Watched::drop` takes
        // the watch holding `userd` out of the list before it unmaps them.
        let userd = unsafe { UserdMap::new(addr) };
        crate::kapi::inject::record()?;
        let id = {
            let mut c = vgpu.compute.lock();
            let id = c.next_id;
            c.watches.push(Watch { id, entry, userd }, GFP_KERNEL)?;
            c.next_id += 1;
            id
        };
        match Arc::new(
            Watched {
                rm: *rm,
                vgpu: vgpu.clone(),
                id,
                kclient,
                kdevice,
                h_dup,
                addr,
            },
            GFP_KERNEL,
        ) {
            Ok(w) => {
                unmap.dismiss();
                dup.keep();
                Ok(Some(w))
            }
            Err(e) => {
                vgpu.compute.lock().watches.retain(|w| w.id != id);
                Err(e.into())
            }
        }
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        let id = self.id;
        // Out of the list first: nobody reads the address after this.
        self.vgpu.compute.lock().watches.retain(|w| w.id != id);
        let _ = self
            .rm
            .unmap_memory(self.kclient, self.kdevice, self.h_dup, self.addr);
        let _ = self.rm.free(self.kclient, self.kdevice, self.h_dup);
    }
}

/// A GPU's scheduling settings.
#[derive(Clone, Copy)]
pub(crate) struct Settings {
    /// The policy.
    pub(crate) policy: Policy,
    /// The period, in us.
    pub(crate) period_us: u32,
    /// Bumped on every change, so the scheduler starts afresh.
    generation: u64,
}

struct Run {
    /// The vGPU whose window is open.
    owner: Option<Arc<Vgpu>>,
    /// Whether that window is for waiting calls only (its TSGs stay
    /// disabled: enables are recorded, not applied).
    calls_only: bool,
}

impl Run {
    /// Whether `vgpu`'s window is open (`None`: whether the idle one is).
    fn is(&self, vgpu: Option<&Arc<Vgpu>>) -> bool {
        match (&self.owner, vgpu) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }
}

/// One physical GPU's scheduler state.
#[pin_data]
pub(crate) struct GpuSched {
    /// The GPU's index (its `/dev/nvidiaK` minor).
    pub(crate) gpu: u32,
    /// vgpu's own device for this GPU, in its kernel client.
    kdevice: u32,
    #[pin]
    settings: Mutex<Settings>,
    /// The switch lock: held across every enable or disable vgpu issues,
    /// and across forwarded calls of tenants that have TSGs.
    #[pin]
    run: Mutex<Run>,
    /// Signalled whenever a switch ends (a window opens).
    #[pin]
    opened: CondVar,
    /// Set while the scheduler waits for the switch lock to switch: calls
    /// waiting to run inside a window stand back, so a tenant issuing calls
    /// back to back cannot hold its window open.
    switching: AtomicBool,
    /// `/sys/class/vgpu/gpuK`, while the module is loaded.
    #[pin]
    pub(crate) node: Mutex<Option<Node>>,
}

/// A TSG-level GPFIFO_SCHEDULE or its channel form, on kernel copies.
fn schedule(rm: &RmOps, client: u32, handle: u32, tsg: bool, enable: bool) -> RmResult {
    let mut p = abi::GpfifoScheduleParams {
        b_enable: u8::from(enable),
        ..Default::default()
    }
    .to_bytes();
    let cmd = if tsg {
        ctrl::NVA06C_CTRL_CMD_GPFIFO_SCHEDULE
    } else {
        ctrl::NVA06F_CTRL_CMD_GPFIFO_SCHEDULE
    };
    // The release's params (2 bytes before 580: no `bSkipEnable`).
    let n = crate::nv::release::current()
        .params_size(cmd)
        .unwrap_or(p.len());
    rm.control(client, handle, cmd, p.get_mut(..n).ok_or(EINVAL)?)
}

/// Disables and preempts `e` (a channel's disable takes it off the engine).
fn stop(rm: &RmOps, e: &Entry) {
    // A handle freed meanwhile answers an error: nothing left to stop.
    let _ = schedule(rm, e.client, e.handle, e.tsg, false);
    if e.tsg {
        let mut p = abi::PreemptParams {
            b_wait: 1,
            ..Default::default()
        }
        .to_bytes();
        let _ = rm.control(e.client, e.handle, ctrl::NVA06C_CTRL_CMD_PREEMPT, &mut p);
    }
}

/// Disables and preempts every TSG and channel of `v`.
fn stop_all(rm: &RmOps, v: &Vgpu) -> Result {
    for e in entries_of(v)?.iter() {
        stop(rm, e);
    }
    Ok(())
}

fn entries_of(v: &Vgpu) -> Result<KVec<Entry>> {
    let c = v.compute.lock();
    let mut out = KVec::with_capacity(c.entries.len(), GFP_KERNEL)?;
    for e in c.entries.iter() {
        out.push(*e, GFP_KERNEL)?;
    }
    Ok(out)
}

impl GpuSched {
    /// GPU `gpu`'s scheduler with the default settings; `kdevice` is
    /// vgpu's own device for the GPU.
    pub(crate) fn new(gpu: u32, kdevice: u32) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                gpu,
                kdevice,
                settings <- new_mutex!(Settings {
                    policy: Policy::Fixed,
                    period_us: compute::DEFAULT_PERIOD_US,
                    generation: 0,
                }),
                run <- new_mutex!(Run {
                    owner: None,
                    calls_only: false,
                }),
                opened <- new_condvar!(),
                switching: AtomicBool::new(false),
                node <- new_mutex!(None),
            }),
            GFP_KERNEL,
        )
    }

    /// The current settings.
    pub(crate) fn settings(&self) -> Settings {
        *self.settings.lock()
    }

    /// Changes the settings; the scheduler applies them from its next period.
    pub(crate) fn update(&self, f: impl FnOnce(&mut Settings)) {
        let mut s = self.settings.lock();
        f(&mut s);
        s.generation += 1;
    }

    /// A tenant asks for enrolled objects `ids` of `vgpu` to be enabled or
    /// disabled; `apply` makes the call to the driver. A disable is applied
    /// at once, an enable only while `vgpu`'s window is open (else it is
    /// recorded, answered `NV_OK`, and applied when the window opens).
    pub(crate) fn request(
        &self,
        vgpu: &Arc<Vgpu>,
        ids: &[u64],
        enable: bool,
        apply: impl FnOnce() -> RmResult,
    ) -> RmResult {
        let run = self.run.lock();
        let open = run.is(Some(vgpu)) && !run.calls_only;
        if !enable || open {
            apply()?;
        }
        let mut c = vgpu.compute.lock();
        for e in c.entries.iter_mut().filter(|e| ids.contains(&e.id)) {
            e.wanted = enable;
        }
        drop(c);
        drop(run);
        Ok(())
    }

    /// Runs `call` (a forwarded ioctl of one of `vgpu`'s tenants) so that it
    /// cannot start work outside `vgpu`'s window.
    ///
    /// The driver reads a forwarded call's parameters from the caller's
    /// memory after vgpu did, so another thread may have turned it into a
    /// scheduling call on the way. If `vgpu` has TSGs, the call waits for
    /// its window (a waiting call makes the vGPU busy, so the window comes
    /// within a period unless its share is 0) and runs inside it, where it
    /// can only enable what the window's end disables again. If it has none,
    /// the call runs at once, and should a TSG appear meanwhile (created by
    /// another thread) it is disabled again before the switch lock is
    /// released. `ERESTARTSYS` if a signal comes while waiting.
    pub(crate) fn in_window<R>(
        &self,
        rm: &RmOps,
        vgpu: &Arc<Vgpu>,
        call: impl FnOnce() -> R,
    ) -> Result<R> {
        let mut run = self.run.lock();
        while self.switching.load(Ordering::Acquire) {
            if self.opened.wait_interruptible(&mut run) {
                return Err(ERESTARTSYS);
            }
        }
        if !run.is(Some(vgpu)) && vgpu.compute.lock().objects() == 0 {
            let r = call();
            if vgpu.compute.lock().objects() > 0 {
                stop_all(rm, vgpu)?;
            }
            drop(run);
            return Ok(r);
        }
        if !run.is(Some(vgpu)) {
            vgpu.compute.lock().waiting += 1;
            let mut signalled = false;
            while !run.is(Some(vgpu)) && !signalled {
                signalled = self.opened.wait_interruptible(&mut run);
            }
            vgpu.compute.lock().waiting -= 1;
            if signalled {
                return Err(ERESTARTSYS);
            }
        }
        let r = call();
        drop(run);
        Ok(r)
    }

    /// Disables `vgpu`'s objects again unless its window is open (after a
    /// forwarded call that might have enabled one).
    pub(crate) fn restop(&self, rm: &RmOps, vgpu: &Arc<Vgpu>) -> Result {
        let run = self.run.lock();
        if !run.is(Some(vgpu)) {
            stop_all(rm, vgpu)?;
        }
        drop(run);
        Ok(())
    }

    /// Opens `to`'s window (`None`: the idle window): the previous owner's
    /// objects are disabled and preempted, `to`'s wanted ones enabled. A
    /// frozen `to` gets the idle window instead (it was frozen since the
    /// period was planned).
    fn switch_to(&self, rm: &RmOps, to: Option<&Arc<Vgpu>>) -> Result {
        self.switch_with(rm, to, true, false)
    }

    /// [`GpuSched::switch_to`]; `enable` false opens a window for `to`'s
    /// waiting calls only (its TSGs stay disabled; whatever a call enables
    /// is disabled again when the window closes). `overlap` (work-conserving
    /// GPUs only): between levels, enable before stopping (below).
    fn switch_with(
        &self,
        rm: &RmOps,
        to: Option<&Arc<Vgpu>>,
        enable: bool,
        overlap: bool,
    ) -> Result {
        {
            let run = self.run.lock();
            if run.is(to) && run.calls_only != enable {
                return Ok(());
            }
        }
        self.switching.store(true, Ordering::Release);
        let mut run = self.run.lock();
        let r = (|| -> Result {
            let old = run.owner.take();
            // Between levels of a work-conserving GPU, the incoming owner's
            // TSGs are enabled before the outgoing one's are stopped, so the
            // GPU does not idle through the switch: a higher level taking
            // the GPU lets the lower one run until its disable (it ran
            // anyway), and a lower one filling after a higher level ran dry
            // has the GPU while the idle higher level's TSGs are stopped.
            // Otherwise the outgoing owner stops first, so it gains nothing
            // from a switch: shares exact to the half point, fixed caps
            // kept however slow the switch.
            let level = |v: &Arc<Vgpu>| v.compute.lock().priority;
            let early = match (&old, to) {
                (Some(o), Some(n)) => overlap && level(o) != level(n),
                _ => false,
            };
            if !early {
                if let Some(o) = &old {
                    stop_all(rm, o)?;
                    o.compute.lock().window_open = false;
                }
            }
            run.calls_only = !enable;
            if let Some(new) = to {
                let frozen = {
                    let mut c = new.compute.lock();
                    c.window_open = !c.frozen;
                    c.frozen
                };
                if !frozen {
                    run.owner = Some(new.clone());
                    for e in entries_of(new)?.iter().filter(|e| enable && e.wanted) {
                        let _ = schedule(rm, e.client, e.handle, e.tsg, true);
                    }
                }
            }
            if early {
                if let Some(o) = &old {
                    stop_all(rm, o)?;
                    o.compute.lock().window_open = false;
                }
            }
            Ok(())
        })();
        self.switching.store(false, Ordering::Release);
        self.opened.notify_all();
        drop(run);
        r
    }
}

/// The scheduler's step while nothing can cut a window short, in us: how
/// often it looks at its tenants (work-conserving windows end when their
/// owner runs dry) and samples their busy time.
const STEP_US: u64 = 2000;

/// The step while a vGPU of a higher level than the window's owner could
/// take the GPU, in us: how soon new work of a higher level is noticed.
/// vgpu cannot trap doorbell writes; it polls the USERD `GPPut` of the
/// waiting vGPU's channels (mapped in [`Watched`]), so this bounds the
/// added latency of a higher-level work item (plus one switch: a disable
/// and preempt of each of the owner's TSGs). 100 us is a tenth of the
/// driver's default TSG timeslice; the 10000 wake-ups a second it costs
/// (each a few locks and a USERD read per watched channel) are spent only
/// while levels are mixed on the GPU or a work-conserving GPU idles with
/// TSGs.
const PREEMPT_STEP_US: u64 = 100;

/// The window a lower level gets, once a period, for calls of its
/// containers waiting for a window while a higher level takes every period
/// (work-conserving): its TSGs stay disabled, so its containers can set up
/// and query, but not run. Short, so a higher level's work waits little;
/// long enough for a few calls.
const CALL_WINDOW_NS: u64 = 1_000_000;

/// Why a window ended before its time.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Cut {
    /// Its owner ran out of work (work-conserving), or was frozen.
    Dry,
    /// A vGPU of a higher level (index into the period's vGPUs) has work.
    Preempted(usize),
    /// The idle window of a work-conserving GPU: a vGPU has work.
    Woken,
}

/// Samples the busy time of `vgpus`: the time since `last` goes to those
/// runnable now (see [`crate::vgpu::Compute::sample`]).
fn sample(vgpus: &[Arc<Vgpu>], last: &mut Option<Instant<Monotonic>>) {
    let now = Instant::<Monotonic>::now();
    let dt = last.map_or(0, |l| (now - l).as_nanos().max(0) as u64);
    *last = Some(now);
    for v in vgpus {
        v.compute.lock().sample(dt);
    }
}

/// Sleeps until `deadline` or a stop request, in steps of at most `step`
/// us; before each, `cut` may end the window early (its answer returned).
fn sleep_until(
    deadline: Instant<Monotonic>,
    stop: &Stop,
    step: u64,
    mut cut: impl FnMut() -> Option<Cut>,
) -> Option<Cut> {
    loop {
        let left = (deadline - Instant::<Monotonic>::now()).as_nanos();
        if left <= 0 || stop.requested() {
            return None;
        }
        if let Some(c) = cut() {
            return Some(c);
        }
        kthread::sleep_us((left as u64).div_ceil(1000).min(step));
    }
}

/// Ends the window that opened at `mark`, owned by `owner` (`None`: the
/// idle window): returns how long it lasted, in ns, moves `mark` to now
/// (the next window's start) and records it as the last window.
fn end_window(
    mark: &mut Instant<Monotonic>,
    last: &mut Option<(Option<u32>, Instant<Monotonic>)>,
    owner: Option<u32>,
) -> u64 {
    let end = Instant::<Monotonic>::now();
    let actual = (end - *mark).as_nanos().max(0) as u64;
    *mark = end;
    *last = Some((owner, end));
    actual
}

/// What the scheduler carries from one period to the next.
struct Carry {
    generation: u64,
    /// Last period's (vGPU number, share, busy): any change starts afresh.
    seen: KVec<(u32, u8, bool)>,
    /// (vGPU number, debt in ns).
    debts: KVec<(u32, i64)>,
    idle_debt: i64,
    /// The last window of the last period: its owner (`None`: the idle
    /// window) and when it was settled. Its owner keeps the GPU until the
    /// next switch, so the time in between is its too.
    last: Option<(Option<u32>, Instant<Monotonic>)>,
    /// The vGPU whose work-conserving window a higher level cut short last:
    /// its level's windows start after it next time, so a level cut often
    /// shares its time by turns.
    cut: Option<u32>,
    /// When busy time was last sampled.
    sampled: Option<Instant<Monotonic>>,
}

/// The scheduler thread of one GPU.
#[pin_data]
pub(crate) struct SchedWorker {
    gpu: Arc<GpuSched>,
    vgpus: Arc<Vgpus>,
    rm: RmOps,
    #[pin]
    carry: Mutex<Carry>,
}

impl SchedWorker {
    /// A scheduler for `gpu`, over the vGPUs `vgpus`, acting through `rm`.
    pub(crate) fn new(gpu: Arc<GpuSched>, vgpus: Arc<Vgpus>, rm: RmOps) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                gpu,
                vgpus,
                rm,
                carry <- new_mutex!(Carry {
                    generation: u64::MAX,
                    seen: KVec::new(),
                    debts: KVec::new(),
                    idle_debt: 0,
                    last: None,
                    cut: None,
                    sampled: None,
                }),
            }),
            GFP_KERNEL,
        )
    }

    /// One period.
    fn period(&self, stop: &Stop) -> Result {
        let settings = self.gpu.settings();
        let period_ns = u64::from(settings.period_us) * 1000;
        let conserving = settings.policy == Policy::WorkConserving;
        let rm = &self.rm;
        let vgpus = self.vgpus.on_gpu(self.gpu.gpu)?;
        let mut tenants = KVec::with_capacity(vgpus.len(), GFP_KERNEL)?;
        // Whether calls of its containers wait for a window.
        let mut calls = KVec::with_capacity(vgpus.len(), GFP_KERNEL)?;
        for v in vgpus.iter() {
            let c = v.compute.lock();
            calls.push(c.waiting > 0 && c.share > 0 && !c.frozen, GFP_KERNEL)?;
            tenants.push(
                Tenant {
                    share: c.share,
                    busy: c.runnable(),
                    level: c.priority,
                },
                GFP_KERNEL,
            )?;
        }
        let mut targets = KVec::from_elem(0u64, vgpus.len(), GFP_KERNEL)?;
        let mut idle = compute::targets(settings.policy, period_ns, &tenants, &mut targets);

        let mut carry = self.carry.lock();
        let same = carry.seen.len() == vgpus.len()
            && carry
                .seen
                .iter()
                .zip(vgpus.iter().zip(tenants.iter()))
                .all(|(s, (v, t))| *s == (v.id, t.share, t.busy));
        if carry.generation != settings.generation || !same {
            // A new configuration: debts owed under the old one would only
            // delay the new steady state.
            carry.generation = settings.generation;
            carry.debts.clear();
            carry.idle_debt = 0;
            carry.seen.clear();
            for (v, t) in vgpus.iter().zip(tenants.iter()) {
                carry.seen.push((v.id, t.share, t.busy), GFP_KERNEL)?;
            }
        }
        // Debts of vGPUs gone from this GPU, or idle, are dropped: an idle
        // vGPU does not bank time to burst with later.
        carry.debts.retain(|(id, _)| {
            vgpus
                .iter()
                .zip(targets.iter())
                .any(|(v, t)| v.id == *id && *t > 0)
        });

        // Between the last period's last window and this period's first
        // switch, that window's owner kept the GPU: settle that time as part
        // of its window (a debt it pays back), so preparing a period costs
        // no tenant its share.
        if let Some((owner, end)) = carry.last.take() {
            let gap = (Instant::<Monotonic>::now() - end).as_nanos().max(0) as u64;
            match owner {
                // A vGPU gone from this GPU since is owed nothing.
                Some(id) => {
                    if let Some(i) = vgpus.iter().position(|v| v.id == id) {
                        if let Some(d) = carry.debts.iter_mut().find(|(d, _)| *d == id) {
                            compute::settle(&mut d.1, 0, gap, period_ns);
                        }
                        self.account(&vgpus, &tenants, Some(i), gap);
                    }
                }
                None => {
                    compute::settle(&mut carry.idle_debt, 0, gap, period_ns);
                    self.account(&vgpus, &tenants, None, gap);
                }
            }
        }

        // The windows: higher levels first; within a level in vGPU order,
        // but after the vGPU cut short last (turns, see `Carry::cut`).
        let mut order: KVec<usize> = KVec::with_capacity(vgpus.len(), GFP_KERNEL)?;
        for level in (compute::MIN_PRIORITY..=compute::MAX_PRIORITY).rev() {
            let first = order.len();
            for (i, t) in tenants.iter().enumerate() {
                if t.level == level && targets[i] > 0 {
                    order.push(i, GFP_KERNEL)?;
                }
            }
            // Work-conserving: a level below the one planned, with calls
            // waiting, gets a window for them (see `CALL_WINDOW_NS`).
            if conserving {
                for (i, t) in tenants.iter().enumerate() {
                    if t.level == level && targets[i] == 0 && calls[i] {
                        order.push(i, GFP_KERNEL)?;
                    }
                }
            }
            let mine = &mut order[first..];
            if let Some(p) = carry
                .cut
                .and_then(|id| mine.iter().position(|&i| vgpus[i].id == id))
            {
                mine.rotate_left(p + 1);
            }
        }

        // A window starts when its switch starts: what the switch costs is
        // the incoming owner's, so a period lasts its length however long
        // switches take, and every share stays a share of the wall clock.
        let mut mark = Instant::<Monotonic>::now();
        let mut pos = 0;
        while let Some(&i) = order.get(pos) {
            pos += 1;
            let v = &vgpus[i];
            let target = targets[i];
            let level = tenants[i].level;
            if target == 0 {
                // A window for waiting calls only (work-conserving).
                self.gpu.switch_with(rm, Some(v), false, false)?;
                let sampled = &mut carry.sampled;
                sleep_until(
                    mark + kernel::time::Delta::from_nanos(CALL_WINDOW_NS as i64),
                    stop,
                    PREEMPT_STEP_US,
                    || {
                        sample(&vgpus, sampled);
                        v.compute.lock().frozen.then_some(Cut::Dry)
                    },
                );
                let actual = end_window(&mut mark, &mut carry.last, Some(v.id));
                self.account(&vgpus, &tenants, Some(i), actual);
                if stop.requested() {
                    return Ok(());
                }
                continue;
            }
            let k = match carry.debts.iter().position(|(id, _)| *id == v.id) {
                Some(k) => k,
                None => {
                    carry.debts.push((v.id, 0), GFP_KERNEL)?;
                    carry.debts.len() - 1
                }
            };
            let len = compute::window(target, carry.debts[k].1);
            self.gpu.switch_with(rm, Some(v), true, conserving)?;
            // Who may cut in: a higher level with work. Work-conserving:
            // any (its windows end when it runs dry, and it is owed the
            // GPU again as soon as it has work); fixed: one that had no
            // window this period (its cap still unused).
            let may_cut = |j: usize| tenants[j].level > level && (conserving || targets[j] == 0);
            // Fine steps while a higher level may cut in, or while a lower
            // level waits for this work-conserving window to run dry.
            let below = |j: usize| conserving && tenants[j].level < level && tenants[j].busy;
            let step = if (0..vgpus.len()).any(|j| may_cut(j) || below(j)) {
                PREEMPT_STEP_US
            } else {
                STEP_US
            };
            let sampled = &mut carry.sampled;
            let cut = sleep_until(
                mark + kernel::time::Delta::from_nanos(len as i64),
                stop,
                step,
                || {
                    sample(&vgpus, sampled);
                    let c = v.compute.lock();
                    // Work-conserving: a window whose owner runs out of
                    // work ends early.
                    if c.frozen || (conserving && !c.runnable()) {
                        return Some(Cut::Dry);
                    }
                    drop(c);
                    (0..vgpus.len())
                        .find(|&j| may_cut(j) && vgpus[j].compute.lock().runnable())
                        .map(Cut::Preempted)
                },
            );
            let actual = end_window(&mut mark, &mut carry.last, Some(v.id));
            compute::settle(&mut carry.debts[k].1, target, actual, period_ns);
            // What a work-conserving window did not use is not owed to it
            // (a fixed window cut short by a higher level is: its cap is a
            // promise, paid back in the periods that follow).
            let owed = match cut {
                Some(Cut::Preempted(_)) => !conserving,
                Some(_) => false,
                None => true,
            };
            if !owed {
                carry.debts[k].1 = carry.debts[k].1.min(0);
            }
            self.account(&vgpus, &tenants, Some(i), actual);
            if stop.requested() {
                return Ok(());
            }
            if let Some(Cut::Preempted(j)) = cut {
                if conserving {
                    // Plan afresh: the higher level takes the period.
                    carry.cut = Some(v.id);
                    return Ok(());
                }
                // Fixed: the higher level's window comes next, out of the
                // time its cap left idle; the rest of the plan follows.
                tenants[j].busy = true;
                idle = compute::targets(settings.policy, period_ns, &tenants, &mut targets);
                order.insert_within_capacity(pos, j).map_err(|_| ENOMEM)?;
            }
        }
        if idle > 0 {
            let len = compute::window(idle, carry.idle_debt);
            self.gpu.switch_to(rm, None)?;
            // Work-conserving: idle only until a vGPU with a share has work.
            let woken = |j: usize| tenants[j].share > 0 && vgpus[j].compute.lock().runnable();
            let step = if conserving && vgpus.iter().any(|v| v.compute.lock().objects() > 0) {
                PREEMPT_STEP_US
            } else {
                STEP_US
            };
            let sampled = &mut carry.sampled;
            let cut = sleep_until(
                mark + kernel::time::Delta::from_nanos(len as i64),
                stop,
                step,
                || {
                    sample(&vgpus, sampled);
                    (conserving && (0..vgpus.len()).any(woken)).then_some(Cut::Woken)
                },
            );
            let actual = end_window(&mut mark, &mut carry.last, None);
            compute::settle(&mut carry.idle_debt, idle, actual, period_ns);
            if cut.is_some() {
                carry.idle_debt = carry.idle_debt.min(0);
            }
            self.account(&vgpus, &tenants, None, actual);
        }
        Ok(())
    }

    /// Adds `ns` of window `owner` (index into `vgpus`; `None`: idle) to the
    /// counters.
    fn account(&self, vgpus: &[Arc<Vgpu>], tenants: &[Tenant], owner: Option<usize>, ns: u64) {
        for (i, (v, t)) in vgpus.iter().zip(tenants.iter()).enumerate() {
            let mut c = v.compute.lock();
            if Some(i) == owner {
                c.granted_ns += ns;
            } else if t.busy {
                c.throttled_ns += ns;
            }
        }
    }
}

impl Worker for SchedWorker {
    fn turn(&self, stop: &Stop) {
        if self.period(stop).is_err() {
            // Out of memory: try again after a period.
            let us = u64::from(self.gpu.settings().period_us);
            kthread::sleep_us(us.min(2000));
        }
    }
}

/// The files of `/sys/class/vgpu/gpuK/`: GPU `K`'s scheduling settings.
pub(crate) struct GpuFiles;

const G_POLICY: usize = 0;
const G_PERIOD_US: usize = 1;

impl DeviceFiles for GpuFiles {
    type Data = GpuSched;

    const FILES: &'static [FileSpec] = &[
        FileSpec {
            name: c"compute_policy",
            mode: 0o644,
        },
        FileSpec {
            name: c"compute_period_us",
            mode: 0o644,
        },
    ];

    fn show(g: &GpuSched, index: usize, out: &mut Emit<'_>) -> Result {
        let s = g.settings();
        match index {
            G_POLICY => writeln!(out, "{}", s.policy.name()),
            G_PERIOD_US => writeln!(out, "{}", s.period_us),
            _ => return Err(EINVAL),
        }
        .map_err(|_| EFBIG)
    }

    fn store(g: &GpuSched, index: usize, input: &[u8]) -> Result {
        match index {
            G_POLICY => {
                let p = compute::parse_policy(input).map_err(errno)?;
                g.update(|s| s.policy = p);
            }
            G_PERIOD_US => {
                let us = compute::parse_period_us(input).map_err(errno)?;
                g.update(|s| s.period_us = us);
            }
            _ => return Err(EPERM),
        }
        Ok(())
    }
}
