// SPDX-License-Identifier: GPL-2.0

//! The scheduler thread of one GPU ([`SchedWorker`]): its periods, its
//! windows, and how a window ends early.

use kernel::{
    new_mutex,
    prelude::*,
    sync::{Arc, Mutex},
    time::{Instant, Monotonic},
};

use super::gpu::GpuSched;
use crate::compute::{self, Policy, Tenant};
use crate::kapi::{
    kthread::{self, Stop, Worker},
    rmops::RmOps,
};
use crate::vgpu::Vgpu;
use crate::vgpus::Vgpus;

/// The scheduler's step while nothing can cut a window short, in us: how
/// often it looks at its tenants (work-conserving windows end when their
/// owner runs dry) and samples their busy time.
const STEP_US: u64 = 2000;

/// The step while a vGPU of a higher level than the window's owner could
/// take the GPU, in us: how soon new work of a higher level is noticed.
/// vgpu cannot trap doorbell writes; it polls the USERD `GPPut` of the
/// waiting vGPU's channels (mapped in [`Watched`]), so this bounds the
/// added latency of a higher-level work item (plus one switch: a disable
/// and preempt of each of the owner's TSGs), and how soon a lower level
/// gets the GPU when a higher one runs dry. 50 us is a twentieth of the
/// driver's default TSG timeslice. Its 20000 wake-ups a second (each a
/// few locks and a USERD read per watched channel) are spent only while
/// levels are mixed on the GPU or a work-conserving GPU idles with TSGs:
/// in `make bench`, on Debian's kernel, the scheduler thread then ran
/// 9.8% of one CPU, against 5.4% at 100 us, where the low levels filled
/// only 93.9% of a high one's idle time, under the 95% target
/// (docs/runs.md, 2026-11-29).
const PREEMPT_STEP_US: u64 = 50;

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
    /// The idle window of a work-conserving GPU, or of a fixed period that
    /// planned nothing: a vGPU has work.
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

/// What one period is planned from: its vGPUs' tenants, their targets and
/// the idle time.
struct Period {
    policy: Policy,
    period_ns: u64,
    conserving: bool,
    tenants: KVec<Tenant>,
    /// Whether calls of a vGPU's containers wait for a window.
    calls: KVec<bool>,
    targets: KVec<u64>,
    idle: u64,
}

impl Period {
    /// The plan of a period of `settings` over `vgpus`.
    fn new(settings: &super::gpu::Settings, vgpus: &[Arc<Vgpu>]) -> Result<Self> {
        let mut tenants = KVec::with_capacity(vgpus.len(), GFP_KERNEL)?;
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
        let period_ns = u64::from(settings.period_us) * 1000;
        let mut targets = KVec::from_elem(0u64, vgpus.len(), GFP_KERNEL)?;
        let idle = compute::targets(settings.policy, period_ns, &tenants, &mut targets);
        Ok(Self {
            policy: settings.policy,
            period_ns,
            conserving: settings.policy == Policy::WorkConserving,
            tenants,
            calls,
            targets,
            idle,
        })
    }
}

impl Carry {
    /// Starts afresh on a new configuration (`generation`, or other vGPUs,
    /// shares or work): debts owed under the old one would only delay the
    /// new steady state. Debts of vGPUs gone from this GPU, or idle, are
    /// dropped: an idle vGPU does not bank time to burst with later.
    fn renew(&mut self, generation: u64, vgpus: &[Arc<Vgpu>], p: &Period) -> Result {
        let same = self.seen.len() == vgpus.len()
            && self
                .seen
                .iter()
                .zip(vgpus.iter().zip(p.tenants.iter()))
                .all(|(s, (v, t))| *s == (v.id, t.share, t.busy));
        if self.generation != generation || !same {
            self.generation = generation;
            self.debts.clear();
            self.idle_debt = 0;
            self.seen.clear();
            for (v, t) in vgpus.iter().zip(p.tenants.iter()) {
                self.seen.push((v.id, t.share, t.busy), GFP_KERNEL)?;
            }
        }
        self.debts.retain(|(id, _)| {
            vgpus
                .iter()
                .zip(p.targets.iter())
                .any(|(v, t)| v.id == *id && *t > 0)
        });
        Ok(())
    }

    /// The windows of a period, as indices into `vgpus`: higher levels
    /// first; within a level in vGPU order, but after the vGPU cut short
    /// last (turns, see [`Carry::cut`]).
    fn order(&self, vgpus: &[Arc<Vgpu>], p: &Period) -> Result<KVec<usize>> {
        let mut order: KVec<usize> = KVec::with_capacity(vgpus.len(), GFP_KERNEL)?;
        for level in (compute::MIN_PRIORITY..=compute::MAX_PRIORITY).rev() {
            let first = order.len();
            for (i, t) in p.tenants.iter().enumerate() {
                if t.level == level && p.targets[i] > 0 {
                    order.push(i, GFP_KERNEL)?;
                }
            }
            // Work-conserving: a level below the one planned, with calls
            // waiting, gets a window for them (see `CALL_WINDOW_NS`).
            if p.conserving {
                for (i, t) in p.tenants.iter().enumerate() {
                    if t.level == level && p.targets[i] == 0 && p.calls[i] {
                        order.push(i, GFP_KERNEL)?;
                    }
                }
            }
            let mine = &mut order[first..];
            if let Some(at) = self
                .cut
                .and_then(|id| mine.iter().position(|&i| vgpus[i].id == id))
            {
                mine.rotate_left(at + 1);
            }
        }
        Ok(order)
    }
}

/// One window to run: its owner (`None`: the idle window), its length in
/// ns and the step it looks at its tenants with, in us.
struct Window {
    owner: Option<u32>,
    len: u64,
    step: u64,
}

/// Runs window `w` from `mark`, sampling the vGPUs' busy time each step,
/// until its time is up, the thread is asked to stop, or `cut` says why it
/// ends early. Returns why it ended early (`None`: it did not) and how
/// long it lasted, in ns; `mark` moves to its end (the next window's
/// start), recorded as the last window.
fn run_window(
    carry: &mut Carry,
    vgpus: &[Arc<Vgpu>],
    mark: &mut Instant<Monotonic>,
    stop: &Stop,
    w: Window,
    mut cut: impl FnMut() -> Option<Cut>,
) -> (Option<Cut>, u64) {
    let sampled = &mut carry.sampled;
    let why = sleep_until(
        *mark + kernel::time::Delta::from_nanos(w.len as i64),
        stop,
        w.step,
        || {
            sample(vgpus, sampled);
            cut()
        },
    );
    (why, end_window(mark, &mut carry.last, w.owner))
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

    /// One period: plan it, settle the time since the last one, then run
    /// its windows in order, and the idle window.
    fn period(&self, stop: &Stop) -> Result {
        let settings = self.gpu.settings();
        let vgpus = self.vgpus.on_gpu(self.gpu.gpu)?;
        let mut p = Period::new(&settings, &vgpus)?;
        let mut carry = self.carry.lock();
        carry.renew(settings.generation, &vgpus, &p)?;
        self.settle_gap(&mut carry, &vgpus, &p);
        let mut order = carry.order(&vgpus, &p)?;

        // A window starts when its switch starts: what the switch costs is
        // the incoming owner's, so a period lasts its length however long
        // switches take, and every share stays a share of the wall clock.
        let mut mark = Instant::<Monotonic>::now();
        let mut pos = 0;
        while let Some(&i) = order.get(pos) {
            pos += 1;
            let cut = if p.targets[i] == 0 {
                // A window for waiting calls only (work-conserving).
                self.call_window(&mut carry, &vgpus, &p, i, &mut mark, stop)?;
                None
            } else {
                self.tenant_window(&mut carry, &vgpus, &p, i, &mut mark, stop)?
            };
            if stop.requested() {
                return Ok(());
            }
            if let Some(Cut::Preempted(j)) = cut {
                if p.conserving {
                    // Plan afresh: the higher level takes the period.
                    carry.cut = Some(vgpus[i].id);
                    return Ok(());
                }
                // Fixed: the higher level's window comes next, out of the
                // time its cap left idle; the rest of the plan follows.
                p.tenants[j].busy = true;
                p.idle = compute::targets(p.policy, p.period_ns, &p.tenants, &mut p.targets);
                order.insert_within_capacity(pos, j).map_err(|_| ENOMEM)?;
            }
        }
        if p.idle > 0 {
            self.idle_window(&mut carry, &vgpus, &p, &mut mark, stop)?;
        }
        Ok(())
    }

    /// Between the last period's last window and this period's first
    /// switch, that window's owner kept the GPU: settle that time as part
    /// of its window (a debt it pays back), so preparing a period costs no
    /// tenant its share.
    fn settle_gap(&self, carry: &mut Carry, vgpus: &[Arc<Vgpu>], p: &Period) {
        let Some((owner, end)) = carry.last.take() else {
            return;
        };
        let gap = (Instant::<Monotonic>::now() - end).as_nanos().max(0) as u64;
        match owner {
            // A vGPU gone from this GPU since is owed nothing.
            Some(id) => {
                if let Some(i) = vgpus.iter().position(|v| v.id == id) {
                    if let Some(d) = carry.debts.iter_mut().find(|(d, _)| *d == id) {
                        compute::settle(&mut d.1, 0, gap, p.period_ns);
                    }
                    self.account(vgpus, &p.tenants, Some(i), gap);
                }
            }
            None => {
                compute::settle(&mut carry.idle_debt, 0, gap, p.period_ns);
                self.account(vgpus, &p.tenants, None, gap);
            }
        }
    }

    /// The window of waiting calls of vGPU `i` (work-conserving, a level
    /// below the one planned): its TSGs stay disabled.
    fn call_window(
        &self,
        carry: &mut Carry,
        vgpus: &[Arc<Vgpu>],
        p: &Period,
        i: usize,
        mark: &mut Instant<Monotonic>,
        stop: &Stop,
    ) -> Result {
        let v = &vgpus[i];
        self.gpu.switch_with(&self.rm, Some(v), false, false)?;
        let window = Window {
            owner: Some(v.id),
            len: CALL_WINDOW_NS,
            step: PREEMPT_STEP_US,
        };
        let (_, actual) = run_window(carry, vgpus, mark, stop, window, || {
            v.compute.lock().frozen.then_some(Cut::Dry)
        });
        self.account(vgpus, &p.tenants, Some(i), actual);
        Ok(())
    }

    /// The window of vGPU `i`, whose target this period is not zero: it
    /// runs for its target and what it owes or is owed, unless it runs dry
    /// (work-conserving) or a higher level cuts in. Returns why it ended
    /// early.
    fn tenant_window(
        &self,
        carry: &mut Carry,
        vgpus: &[Arc<Vgpu>],
        p: &Period,
        i: usize,
        mark: &mut Instant<Monotonic>,
        stop: &Stop,
    ) -> Result<Option<Cut>> {
        let (v, target, level) = (&vgpus[i], p.targets[i], p.tenants[i].level);
        let conserving = p.conserving;
        let k = match carry.debts.iter().position(|(id, _)| *id == v.id) {
            Some(k) => k,
            None => {
                carry.debts.push((v.id, 0), GFP_KERNEL)?;
                carry.debts.len() - 1
            }
        };
        let len = compute::window(target, carry.debts[k].1);
        self.gpu.switch_with(&self.rm, Some(v), true, conserving)?;
        // Who may cut in: a higher level with work. Work-conserving: any
        // (its windows end when it runs dry, and it is owed the GPU again
        // as soon as it has work); fixed: one that had no window this
        // period (its cap still unused).
        let tenants = &p.tenants;
        let may_cut = |j: usize| tenants[j].level > level && (conserving || p.targets[j] == 0);
        // Fine steps while a higher level may cut in, or while a lower
        // level waits for this work-conserving window to run dry.
        let below = |j: usize| conserving && tenants[j].level < level && tenants[j].busy;
        let step = if (0..vgpus.len()).any(|j| may_cut(j) || below(j)) {
            PREEMPT_STEP_US
        } else {
            STEP_US
        };
        let window = Window {
            owner: Some(v.id),
            len,
            step,
        };
        let (cut, actual) = run_window(carry, vgpus, mark, stop, window, || {
            let c = v.compute.lock();
            // Work-conserving: a window whose owner runs out of work ends
            // early.
            if c.frozen || (conserving && !c.runnable()) {
                return Some(Cut::Dry);
            }
            drop(c);
            (0..vgpus.len())
                .find(|&j| may_cut(j) && vgpus[j].compute.lock().runnable())
                .map(Cut::Preempted)
        });
        compute::settle(&mut carry.debts[k].1, target, actual, p.period_ns);
        // What a work-conserving window did not use is not owed to it (a
        // fixed window cut short by a higher level is: its cap is a
        // promise, paid back in the periods that follow).
        let owed = match cut {
            Some(Cut::Preempted(_)) => !conserving,
            Some(_) => false,
            None => true,
        };
        if !owed {
            carry.debts[k].1 = carry.debts[k].1.min(0);
        }
        self.account(vgpus, &p.tenants, Some(i), actual);
        Ok(cut)
    }

    /// The idle window: no vGPU's TSGs run. Work-conserving, or a fixed
    /// period that planned no window at all: only until a vGPU with a share
    /// has work.
    ///
    /// A fixed period that planned nothing ends early so that a call
    /// waiting for its vGPU's window ([`GpuSched::in_window`]) waits a step,
    /// not the rest of an idle period: libcuda makes hundreds of calls once
    /// its context has a TSG, and waits of up to a 50 ms period made its
    /// run through vgpu 15% longer than directly (`make bench`). No cap is
    /// exceeded: every vGPU's last window was followed by the rest of its
    /// period idle, and the next period is planned as any other.
    ///
    /// [`GpuSched::in_window`]: super::gpu::GpuSched::in_window
    fn idle_window(
        &self,
        carry: &mut Carry,
        vgpus: &[Arc<Vgpu>],
        p: &Period,
        mark: &mut Instant<Monotonic>,
        stop: &Stop,
    ) -> Result {
        let conserving = p.conserving;
        let wakes = conserving || p.idle >= p.period_ns;
        let len = compute::window(p.idle, carry.idle_debt);
        self.gpu.switch_to(&self.rm, None)?;
        let woken = |j: usize| p.tenants[j].share > 0 && vgpus[j].compute.lock().runnable();
        let step = if conserving && vgpus.iter().any(|v| v.compute.lock().objects() > 0) {
            PREEMPT_STEP_US
        } else {
            STEP_US
        };
        let window = Window {
            owner: None,
            len,
            step,
        };
        let (cut, actual) = run_window(carry, vgpus, mark, stop, window, || {
            (wakes && (0..vgpus.len()).any(woken)).then_some(Cut::Woken)
        });
        compute::settle(&mut carry.idle_debt, p.idle, actual, p.period_ns);
        if cut.is_some() {
            carry.idle_debt = carry.idle_debt.min(0);
        }
        self.account(vgpus, &p.tenants, None, actual);
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
