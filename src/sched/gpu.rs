// SPDX-License-Identifier: GPL-2.0

//! One GPU's scheduler state ([`GpuSched`]): its settings, the switch
//! lock, and the calls that enable, disable and run inside windows.

use core::sync::atomic::{AtomicBool, Ordering};
use kernel::{
    new_condvar, new_mutex,
    prelude::*,
    sync::{Arc, CondVar, Mutex},
};

use crate::compute::{self, Policy};
use crate::kapi::{chrdev::Node, rmops::RmOps};
use crate::nv::abi::{self, ctrl};
use crate::status::RmResult;
use crate::vgpu::{Entry, Vgpu};

/// A GPU's scheduling settings.
#[derive(Clone, Copy)]
pub(crate) struct Settings {
    /// The policy.
    pub(crate) policy: Policy,
    /// The period, in us.
    pub(crate) period_us: u32,
    /// Bumped on every change, so the scheduler starts afresh.
    pub(super) generation: u64,
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
    pub(super) kdevice: u32,
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
    pub(super) fn switch_to(&self, rm: &RmOps, to: Option<&Arc<Vgpu>>) -> Result {
        self.switch_with(rm, to, true, false)
    }

    /// [`GpuSched::switch_to`]; `enable` false opens a window for `to`'s
    /// waiting calls only (its TSGs stay disabled; whatever a call enables
    /// is disabled again when the window closes). `overlap` (work-conserving
    /// GPUs only): between levels, enable before stopping (below).
    pub(super) fn switch_with(
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
