// SPDX-License-Identifier: GPL-2.0

//! Compute shares through vgpu: the sysfs files, TSG tracking through free,
//! close and SIGKILL, the filtering of a tenant's own scheduling calls, and
//! run-time changes of share and policy, on the driver double's engine.
//!
//! Tenants are child processes in their own cgroups that keep a ring full of
//! 1 ms work items and publish their TSG's engine time in a shared page.

use crate::ensure;
use crate::session::Session;
use crate::sys::{as_container, in_child, join_cgroup, read_file, sh, write_file, Looper, Shared};
use crate::tap::{Outcome, Test};
use crate::tests;
use nvclient::abi::{
    class, ctrl, preemption, status, CtxswPreemptionModeParams, FifoDisableChannelsParams,
    GpfifoScheduleParams,
};
use nvclient::{Doorbell, Error, WorkChannel};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// Tests of this suite, in order (later ones rely on earlier ones' state).
pub const TESTS: &[Test] = tests![
    setup,
    sysfs_values_and_errors,
    tsgs_tracked_through_free_close_kill,
    enables_wait_for_the_window,
    scheduling_calls_filtered,
    swapped_control_cannot_enable,
    wfi_preemption_cannot_outlast_the_window,
    forwarded_control_waits_for_the_window,
    runtime_share_and_policy_change,
    settings_race_with_the_scheduler,
    teardown,
];

const MS: u64 = 1_000_000;
/// Ring entries of a tenant's channel.
const ENTRIES: u32 = 64;

fn vgpu_file(id: u32, f: &str) -> String {
    format!("/sys/class/vgpu/vgpu{id}/{f}")
}

fn read_u64(path: &str) -> Result<u64, String> {
    read_file(path)?.parse().map_err(|e| format!("{path}: {e}"))
}

fn set(path: &str, v: &str) -> Outcome {
    write_file(path, v).map_err(|e| format!("write {v:?} to {path}: errno {e}"))
}

/// Sets vGPU `id`'s share.
pub fn set_share(id: u32, pct: u32) -> Outcome {
    set(&vgpu_file(id, "compute_share"), &pct.to_string())
}

/// Sets GPU `gpu`'s policy.
pub fn set_policy(gpu: u32, policy: &str) -> Outcome {
    set(&format!("/sys/class/vgpu/gpu{gpu}/compute_policy"), policy)
}

fn tsgs(id: u32) -> Result<u64, String> {
    read_u64(&vgpu_file(id, "compute_tsgs"))
}

/// How a tenant enables its work.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Enable {
    /// GPFIFO_SCHEDULE on its TSG.
    Tsg,
    /// A channel outside a TSG, enabled with the channel's GPFIFO_SCHEDULE.
    BareChannel,
    /// FIFO_DISABLE_CHANNELS (enable) on its TSG's channel.
    FifoChannels,
}

/// A CUDA-like session with a doorbell and one work channel.
pub struct Work {
    /// The session.
    pub s: Session,
    /// Its doorbell.
    pub bell: Doorbell,
    /// The TSG (0 for a bare channel).
    pub tsg: u32,
    /// The channel.
    pub ch: WorkChannel,
}

impl Work {
    /// Opens `ctl` and `gpu` and sets up a TSG with a channel (or a bare
    /// channel), disabled.
    pub fn open(ctl: &str, gpu: &str, bare: bool) -> Result<Work, String> {
        let s = Session::open(ctl, gpu)?;
        let e = |what: &'static str| move |err: Error| format!("{what}: {err:?}");
        let bell = s
            .ctl
            .map_doorbell(gpu, s.client, s.device, s.subdevice)
            .map_err(e("doorbell"))?;
        let tsg = if bare {
            0
        } else {
            s.ctl
                .alloc_tsg(s.client, s.device, 0, nvclient::tsg_params(0))
                .map_err(e("tsg"))?
        };
        let parent = if bare { s.device } else { tsg };
        let ch = s
            .ctl
            .alloc_work_channel(
                s.client,
                s.device,
                parent,
                class::AMPERE_CHANNEL_GPFIFO_A,
                ENTRIES,
            )
            .map_err(e("channel"))?;
        Ok(Work { s, bell, tsg, ch })
    }

    /// Fills the ring with `item_ns` items and arms the channel.
    pub fn start(&self, item_ns: u64) -> Outcome {
        self.ch.ring.fill(item_ns);
        ensure!(self.bell.ring(self.ch.token), "doorbell");
        Ok(())
    }

    /// Asks for the work to be enabled (or disabled) the way `how` says.
    pub fn enable(&self, how: Enable, on: bool) -> Result<(), Error> {
        let (c, s) = (self.s.client, &self.s.ctl);
        match how {
            Enable::Tsg => s.gpfifo_schedule(c, self.tsg, on),
            Enable::BareChannel => s.channel_gpfifo_schedule(c, self.ch.h_channel, on),
            Enable::FifoChannels => {
                let mut p = FifoDisableChannelsParams {
                    b_disable: u8::from(!on),
                    num_channels: 1,
                    ..Default::default()
                };
                p.h_client_list[0] = c;
                p.h_channel_list[0] = self.ch.h_channel;
                s.control_with(
                    c,
                    self.s.subdevice,
                    ctrl::NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS,
                    &mut p,
                )
            }
        }
    }
}

/// A saturating tenant process; slot 0 of its page is its TSG's engine
/// time, slot 1 its completed items. A tenant started held waits with its
/// enable until [`Tenant::release`].
pub struct Tenant {
    _proc: Looper,
    page: Shared,
}

impl Tenant {
    /// Starts a tenant in cgroup `cg` (none: stay) on `ctl` and `gpu`,
    /// enabling its work the way `how` says, keeping its ring full of
    /// `item_ns` items.
    pub fn spawn(
        cg: Option<&str>,
        ctl: &str,
        gpu: &str,
        how: Enable,
        item_ns: u64,
    ) -> Result<Tenant, String> {
        Self::spawn_held(cg, ctl, gpu, how, item_ns, false)
    }

    /// [`Tenant::spawn`], holding the enable back until released if `held`.
    pub fn spawn_held(
        cg: Option<&str>,
        ctl: &str,
        gpu: &str,
        how: Enable,
        item_ns: u64,
        held: bool,
    ) -> Result<Tenant, String> {
        Self::spawn_polling(cg, ctl, gpu, how, item_ns, held, Duration::from_millis(5))
    }

    /// [`Tenant::spawn_held`], refilling and reporting every `poll`.
    pub fn spawn_polling(
        cg: Option<&str>,
        ctl: &str,
        gpu: &str,
        how: Enable,
        item_ns: u64,
        held: bool,
        poll: Duration,
    ) -> Result<Tenant, String> {
        Self::spawn_prepared(cg, ctl, gpu, how, item_ns, held, poll, &|_| Ok(()))
    }

    /// [`Tenant::spawn_polling`], running `prep` on the tenant's work
    /// (in the tenant, inside its cgroup) before it starts; its error fails
    /// the spawn.
    #[allow(clippy::too_many_arguments)]
    pub fn spawn_prepared(
        cg: Option<&str>,
        ctl: &str,
        gpu: &str,
        how: Enable,
        item_ns: u64,
        held: bool,
        poll: Duration,
        prep: &dyn Fn(&Work) -> Outcome,
    ) -> Result<Tenant, String> {
        let page = Shared::new()?;
        page.set(2, u64::from(!held));
        let (ctl, gpu) = (ctl.to_string(), gpu.to_string());
        let cg = cg.map(str::to_string);
        let shared = &page;
        let proc = Looper::spawn(move || {
            // A tenant of the driver's own nodes opens them before joining
            // its cgroup (an open from a bound one is vgpu's); one of
            // vgpu's nodes after (its ctl file takes the vGPUs of the
            // opener's cgroup).
            let direct = ctl.starts_with("/dev/nvidia");
            let open = || Work::open(&ctl, &gpu, how == Enable::BareChannel);
            let early = if direct { Some(open()?) } else { None };
            if let Some(cg) = &cg {
                join_cgroup(cg).map_err(|e| format!("join {cg}: errno {e}"))?;
            }
            let w = match early {
                Some(w) => w,
                None => open()?,
            };
            prep(&w)?;
            // Items of 0 ns: an idle tenant (enabled, nothing queued).
            if item_ns > 0 {
                w.start(item_ns)?;
            }
            let mut enabled = false;
            Ok(move || {
                // The whole session lives in the loop (a closure would
                // otherwise keep only the ring and close the rest).
                let w = &w;
                if !enabled && shared.get(2) == 1 {
                    let r = w.enable(how, true);
                    shared.set(3, if r.is_ok() { 1 } else { 2 });
                    enabled = true;
                }
                if item_ns > 0 {
                    w.ch.ring.fill(item_ns);
                }
                // Slots 4 and 5: (time, engine ns) read together, under a
                // sequence count in slot 6 (odd while being written).
                let seq = shared.get(6);
                shared.set(6, seq + 1);
                shared.set(4, crate::sys::monotonic_ns());
                shared.set(5, w.ch.ring.tsg_ns());
                shared.set(6, seq + 2);
                shared.set(0, w.ch.ring.tsg_ns());
                shared.set(1, w.ch.ring.completed());
                sleep(poll);
            })
        })?;
        Ok(Tenant { _proc: proc, page })
    }

    /// Its TSG's engine time so far, in ns (as of its last report).
    pub fn ns(&self) -> u64 {
        self.page.get(0)
    }

    /// Its completed items.
    pub fn completed(&self) -> u64 {
        self.page.get(1)
    }

    /// (CLOCK_MONOTONIC ns, its TSG's engine ns), read together as the
    /// tenant last reported them.
    pub fn sample(&self) -> (u64, u64) {
        loop {
            let a = self.page.get(6);
            let (t, ns) = (self.page.get(4), self.page.get(5));
            if a.is_multiple_of(2) && self.page.get(6) == a {
                return (t, ns);
            }
        }
    }

    /// Lets a held tenant enable its work; returns whether the enable was
    /// answered NV_OK.
    pub fn release(&self) -> Result<bool, String> {
        self.page.set(2, 1);
        let t0 = Instant::now();
        while self.page.get(3) == 0 {
            ensure!(
                t0.elapsed() < Duration::from_secs(5),
                "tenant never enabled"
            );
            sleep(Duration::from_millis(5));
        }
        Ok(self.page.get(3) == 1)
    }
}

/// Each tenant's share of the wall time over `window`, in percent, after
/// letting `settle` pass.
pub fn shares(tenants: &[&Tenant], settle: Duration, window: Duration) -> Vec<f64> {
    sleep(settle);
    let a: Vec<u64> = tenants.iter().map(|t| t.ns()).collect();
    let t0 = Instant::now();
    sleep(window);
    let b: Vec<u64> = tenants.iter().map(|t| t.ns()).collect();
    let wall = t0.elapsed().as_nanos() as f64;
    a.iter()
        .zip(&b)
        .map(|(x, y)| (y - x) as f64 * 100.0 / wall)
        .collect()
}

/// Sets vGPUs 0 and 1 (tenants `a` and `b`) to `x` and `y` percent; returns
/// the tenants' shares over 1.5 s after letting `settle` pass.
fn split(a: &Tenant, b: &Tenant, x: u32, y: u32, settle: Duration) -> Result<Vec<f64>, String> {
    set_share(0, x)?;
    set_share(1, y)?;
    Ok(shares(&[a, b], settle, Duration::from_millis(1500)))
}

/// The least of the GPU's time two saturating tenants must get together.
/// Each switch of windows costs a few kernel-interface calls, which the
/// incoming window pays: on the fast kernel about 1% of the GPU (sums of
/// 98-99%); on the debug kernel, where KASAN and lockdep slow every call
/// and the emulator may be loaded, 10-20% (sums of 80-90%).
pub(crate) fn busy_floor() -> f64 {
    if std::env::var("vgpu_variant").as_deref() == Ok("debug") {
        70.0
    } else {
        90.0
    }
}

/// Checks a split of two saturating tenants against shares `x` and `y`
/// (adding up to 100): together they use at least [`busy_floor`] of the
/// GPU, and each gets its share of what they used within 10 points.
pub(crate) fn check_split(s: &[f64], x: f64, y: f64) -> Outcome {
    let sum = s[0] + s[1];
    let enough = sum >= busy_floor();
    ensure!(
        enough,
        "{x}/{y} gave {s:?}: together {sum:.1}%, below {}%",
        busy_floor()
    );
    let (rx, ry) = (s[0] * 100.0 / sum, s[1] * 100.0 / sum);
    ensure!(
        (rx - x).abs() <= 10.0 && (ry - y).abs() <= 10.0,
        "{x}/{y} gave {s:?}: {rx:.1}/{ry:.1} of the time they used"
    );
    Ok(())
}

/// Loads the double (one GPU) and vgpu, and creates `vgpus` (number,
/// cgroup) on GPU 0, each bound to its cgroup.
pub(crate) fn make_vgpus(vgpus: &[(u32, &str)]) -> Outcome {
    sh("modprobe nvidia gpus=1 vram0_mib=4096")?;
    sh("modprobe vgpu")?;
    for &(id, cg) in vgpus {
        std::fs::create_dir_all(format!("/sys/fs/cgroup{cg}"))
            .map_err(|e| format!("mkdir {cg}: {e}"))?;
        set("/sys/class/vgpu/create", &id.to_string())?;
        set(&vgpu_file(id, "gpu"), "0")?;
        set(&vgpu_file(id, "cgroup"), cg)?;
    }
    Ok(())
}

fn setup() -> Outcome {
    make_vgpus(&[(0, "/ca"), (1, "/cb")])?;
    ensure!(
        read_file(&vgpu_file(0, "compute_share"))? == "100",
        "default share"
    );
    ensure!(
        read_file("/sys/class/vgpu/gpu0/compute_policy")? == "fixed",
        "default policy"
    );
    ensure!(
        read_file("/sys/class/vgpu/gpu0/compute_period_us")? == "50000",
        "default period"
    );
    ensure!(tsgs(0)? == 0 && tsgs(1)? == 0, "TSGs before any tenant");
    Ok(())
}

fn sysfs_values_and_errors() -> Outcome {
    let share = vgpu_file(0, "compute_share");
    let policy = "/sys/class/vgpu/gpu0/compute_policy";
    let period = "/sys/class/vgpu/gpu0/compute_period_us";
    set(&share, "30")?;
    ensure!(read_file(&share)? == "30", "share read back");
    for (path, bad, errno) in [
        (share.as_str(), "101", libc::ERANGE),
        (share.as_str(), "30%", libc::EINVAL),
        (share.as_str(), "\n", libc::EINVAL),
        (share.as_str(), "-1", libc::EINVAL),
        (policy, "fair", libc::EINVAL),
        (policy, "fixed extra", libc::EINVAL),
        (period, "999", libc::ERANGE),
        (period, "1000001", libc::ERANGE),
        (period, "5e4", libc::EINVAL),
    ] {
        let r = write_file(path, bad);
        ensure!(
            r == Err(errno),
            "{bad:?} to {path}: {r:?}, want errno {errno}"
        );
    }
    ensure!(
        read_file(&share)? == "30",
        "a refused write changed the share"
    );
    set(policy, "work-conserving")?;
    ensure!(read_file(policy)? == "work-conserving", "policy read back");
    set(policy, "fixed\n")?;
    set(period, "20000")?;
    ensure!(read_file(period)? == "20000", "period read back");
    set(period, "50000")?;
    for ro in ["compute_granted_us", "compute_throttled_us", "compute_tsgs"] {
        let r = write_file(&vgpu_file(0, ro), "0");
        ensure!(r == Err(libc::EACCES), "write to {ro}: {r:?}");
    }
    // Unprivileged: refused.
    let code = in_child(|| {
        if crate::sys::become_nobody().is_err() {
            return 2;
        }
        let a = write_file(&vgpu_file(0, "compute_share"), "100");
        let b = write_file("/sys/class/vgpu/gpu0/compute_policy", "work-conserving");
        i32::from(!(a == Err(libc::EACCES) && b == Err(libc::EACCES)))
    })?;
    ensure!(
        code == 0,
        "an unprivileged write was not refused (code {code})"
    );
    set_share(0, 100)?;
    Ok(())
}

fn tsgs_tracked_through_free_close_kill() -> Outcome {
    as_container("/ca", || {
        let w = Work::open("/dev/vgpuctl", "/dev/vgpu0", false)?;
        ensure!(tsgs(0)? == 1, "after TSG + channel: {}", tsgs(0)?);
        let b = Work::open("/dev/vgpuctl", "/dev/vgpu0", true)?;
        ensure!(tsgs(0)? == 2, "after a bare channel: {}", tsgs(0)?);
        // Busy: cannot be removed, nor moved to another GPU.
        ensure!(
            write_file("/sys/class/vgpu/remove", "0") == Err(libc::EBUSY),
            "removed under TSGs"
        );
        b.s.ctl
            .free(b.s.client, b.s.device, b.ch.h_channel)
            .map_err(|e| format!("free bare channel: {e:?}"))?;
        ensure!(
            tsgs(0)? == 1,
            "after freeing the bare channel: {}",
            tsgs(0)?
        );
        // The ring memory (the channel's USERD, which vgpu watches) can
        // go before the channel; then the TSG takes its channel with it.
        w.s.ctl
            .free(w.s.client, w.s.device, w.ch.h_ring)
            .map_err(|e| format!("free ring: {e:?}"))?;
        w.s.ctl
            .free(w.s.client, w.s.device, w.tsg)
            .map_err(|e| format!("free TSG: {e:?}"))?;
        ensure!(tsgs(0)? == 0, "after freeing the TSG: {}", tsgs(0)?);
        // A client's free forgets its TSGs.
        let c = Work::open("/dev/vgpuctl", "/dev/vgpu0", false)?;
        ensure!(tsgs(0)? == 1, "again: {}", tsgs(0)?);
        c.s.ctl
            .free(c.s.client, c.s.client, c.s.client)
            .map_err(|e| format!("free client: {e:?}"))?;
        ensure!(tsgs(0)? == 0, "after freeing the client: {}", tsgs(0)?);
        // Left open for close to clean up.
        let _d = Work::open("/dev/vgpuctl", "/dev/vgpu0", false)?;
        ensure!(tsgs(0)? == 1, "before exit: {}", tsgs(0)?);
        std::mem::forget(_d);
        Ok(())
    })?;
    ensure!(tsgs(0)? == 0, "after the process exited: {}", tsgs(0)?);
    // SIGKILL mid-use.
    let t = Tenant::spawn(Some("/ca"), "/dev/vgpuctl", "/dev/vgpu0", Enable::Tsg, MS)?;
    ensure!(tsgs(0)? == 1, "tenant's TSG: {}", tsgs(0)?);
    drop(t);
    ensure!(tsgs(0)? == 0, "after SIGKILL: {}", tsgs(0)?);
    set("/sys/class/vgpu/gpu0/compute_policy", "fixed")?;
    Ok(())
}

fn enables_wait_for_the_window() -> Outcome {
    // With a share of 0 a vGPU's window never opens: every way of enabling
    // is answered NV_OK and recorded, and nothing runs.
    let mut ts = Vec::new();
    for how in [Enable::Tsg, Enable::BareChannel, Enable::FifoChannels] {
        ts.push((
            how,
            Tenant::spawn_held(Some("/ca"), "/dev/vgpuctl", "/dev/vgpu0", how, MS, true)?,
        ));
    }
    set_share(0, 0)?;
    sleep(Duration::from_millis(100));
    let granted0 = read_u64(&vgpu_file(0, "compute_granted_us"))?;
    let throttled0 = read_u64(&vgpu_file(0, "compute_throttled_us"))?;
    for (how, t) in &ts {
        ensure!(t.release()?, "{how:?}: enable refused");
    }
    sleep(Duration::from_millis(400));
    for (how, t) in &ts {
        ensure!(
            t.ns() == 0 && t.completed() == 0,
            "{how:?}: ran {} ns outside its window",
            t.ns()
        );
    }
    let granted = read_u64(&vgpu_file(0, "compute_granted_us"))? - granted0;
    let throttled = read_u64(&vgpu_file(0, "compute_throttled_us"))? - throttled0;
    ensure!(granted == 0, "granted {granted} us at share 0");
    ensure!(throttled > 100_000, "throttled only {throttled} us");
    // Raised at run time: the recorded enables take effect.
    set_share(0, 100)?;
    sleep(Duration::from_millis(400));
    for (how, t) in &ts {
        ensure!(
            t.completed() > 0,
            "{how:?}: nothing ran after the share rose"
        );
    }
    ensure!(
        read_u64(&vgpu_file(0, "compute_granted_us"))? > granted0,
        "granted time did not grow"
    );
    Ok(())
}

/// `r` must be RM's answer `want`; `what` names the call in the failure.
pub(crate) fn expect_rm(r: Result<(), Error>, want: u32, what: &str) -> Outcome {
    match r {
        Err(Error::Rm(s)) if s == want => Ok(()),
        other => Err(format!(
            "{what}: {other:?}, want {} ({want:#x})",
            status::name(want).unwrap_or("?")
        )),
    }
}

fn scheduling_calls_filtered() -> Outcome {
    let r = as_container("/cb", || {
        let w = Work::open("/dev/vgpuctl", "/dev/vgpu1", false)?;
        let other = Work::open("/dev/vgpuctl", "/dev/vgpu1", false)?;
        let (c, ctl) = (w.s.client, &w.s.ctl);
        let mut rt = nvclient::abi::MakeRealtimeParams::default();
        expect_rm(
            ctl.control_with(c, w.tsg, ctrl::NVA06C_CTRL_CMD_MAKE_REALTIME, &mut rt),
            status::NV_ERR_INSUFFICIENT_PERMISSIONS,
            "MAKE_REALTIME",
        )?;
        // FIFO_DISABLE_CHANNELS naming another file's client's channel.
        let mut p = FifoDisableChannelsParams {
            b_disable: 0,
            num_channels: 1,
            ..Default::default()
        };
        p.h_client_list[0] = other.s.client;
        p.h_channel_list[0] = other.ch.h_channel;
        expect_rm(
            ctl.control_with(
                c,
                w.s.subdevice,
                ctrl::NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS,
                &mut p,
            ),
            status::NV_ERR_INSUFFICIENT_PERMISSIONS,
            "FIFO_DISABLE_CHANNELS on a foreign channel",
        )?;
        p.h_client_list[0] = c;
        p.h_channel_list[0] = 0xdead_beef;
        expect_rm(
            ctl.control_with(
                c,
                w.s.subdevice,
                ctrl::NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS,
                &mut p,
            ),
            status::NV_ERR_INSUFFICIENT_PERMISSIONS,
            "FIFO_DISABLE_CHANNELS on an unknown handle",
        )?;
        p.h_channel_list[0] = w.ch.h_channel;
        p.num_channels = 65;
        expect_rm(
            ctl.control_with(
                c,
                w.s.subdevice,
                ctrl::NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS,
                &mut p,
            ),
            status::NV_ERR_INVALID_ARGUMENT,
            "FIFO_DISABLE_CHANNELS with 65 entries",
        )?;
        p.num_channels = 1;
        p.p_runlist_preempt_event = 0x1000;
        expect_rm(
            ctl.control_with(
                c,
                w.s.subdevice,
                ctrl::NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS,
                &mut p,
            ),
            status::NV_ERR_INVALID_ARGUMENT,
            "FIFO_DISABLE_CHANNELS with an event pointer",
        )?;
        // GPFIFO_SCHEDULE on things that are not this file's TSGs.
        expect_rm(
            ctl.gpfifo_schedule(c, w.s.device, true),
            status::NV_ERR_INVALID_OBJECT_HANDLE,
            "GPFIFO_SCHEDULE on the device",
        )?;
        expect_rm(
            ctl.gpfifo_schedule(other.s.client, other.tsg, true),
            status::NV_ERR_INVALID_CLIENT,
            "GPFIFO_SCHEDULE on another file's TSG",
        )?;
        // One byte short of the release's params (3 bytes from 580 on, 2
        // before).
        let want = schedule_params_size();
        let mut short = [1u8; 3];
        expect_rm(
            ctl.control(
                c,
                w.tsg,
                ctrl::NVA06C_CTRL_CMD_GPFIFO_SCHEDULE,
                &mut short[..want - 1],
            ),
            // As the driver answers it (`control.c:448-456` at 595.45.04).
            status::NV_ERR_INVALID_ARGUMENT,
            "GPFIFO_SCHEDULE with params one byte short",
        )?;
        // A TSG cannot be duplicated (its schedule entry knows one handle).
        let d = ctl.dup_object(c, w.s.device, 0, c, w.tsg, 0);
        ensure!(
            matches!(d, Err(Error::Rm(status::NV_ERR_INSUFFICIENT_PERMISSIONS))),
            "DUP of a TSG: {d:?}"
        );
        // SET_TIMESLICE / SET_INTERLEAVE_LEVEL: refused on anything but
        // this file's own TSGs...
        expect_rm(
            ctl.set_timeslice(c, w.s.device, 5000),
            status::NV_ERR_INVALID_OBJECT_HANDLE,
            "SET_TIMESLICE on the device",
        )?;
        expect_rm(
            ctl.set_timeslice(other.s.client, other.tsg, 5000),
            status::NV_ERR_INVALID_CLIENT,
            "SET_TIMESLICE on another file's TSG",
        )?;
        expect_rm(
            ctl.set_interleave_level(other.s.client, other.tsg, 2),
            status::NV_ERR_INVALID_CLIENT,
            "SET_INTERLEAVE_LEVEL on another file's TSG",
        )?;
        // ...and applied to them: only the vGPU's own TSGs are ever
        // enabled together, so they order its own work only. They do
        // not open the window.
        ctl.set_timeslice(c, w.tsg, 50_000)
            .map_err(|e| format!("SET_TIMESLICE: {e:?}"))?;
        ensure!(
            ctl.get_timeslice(c, w.tsg).ok() == Some(50_000),
            "timeslice not applied"
        );
        ctl.set_interleave_level(c, w.tsg, 2)
            .map_err(|e| format!("SET_INTERLEAVE_LEVEL: {e:?}"))?;
        ctl.preempt(c, w.tsg, true, None)
            .map_err(|e| format!("PREEMPT: {e:?}"))?;
        set_share(1, 0)?;
        // A change takes effect from the next period.
        sleep(Duration::from_millis(120));
        w.start(MS)?;
        w.enable(Enable::Tsg, true)
            .map_err(|e| format!("enable: {e:?}"))?;
        sleep(Duration::from_millis(300));
        ensure!(
            w.ch.ring.tsg_ns() == 0,
            "ran {} ns at share 0",
            w.ch.ring.tsg_ns()
        );
        Ok(())
    });
    set_share(1, 100)?;
    r?;
    Ok(())
}

/// GPFIFO_SCHEDULE's params size in the release the tests speak.
fn schedule_params_size() -> usize {
    nvclient::speaks()
        .params_size(ctrl::NVA06C_CTRL_CMD_GPFIFO_SCHEDULE)
        .unwrap_or(GpfifoScheduleParams::SIZE)
}

/// Issues a forwardable control (GET_INFO, unknown to the double, with
/// GPFIFO_SCHEDULE's params) on `w`'s TSG for `dur` while another thread flips its
/// command to GPFIFO_SCHEDULE(enable) and back; returns the engine time
/// `w`'s TSG got.
fn race_swapped_control(w: &Work, dur: Duration) -> Result<u64, String> {
    w.start(MS)?;
    let mut whole = GpfifoScheduleParams {
        b_enable: 1,
        ..Default::default()
    }
    .to_bytes();
    let enable = &mut whole[..schedule_params_size()];
    let mut blk = nvclient::abi::Nvos54 {
        h_client: w.s.client,
        h_object: w.tsg,
        cmd: ctrl::NVA06C_CTRL_CMD_GET_INFO,
        params: enable.as_mut_ptr() as u64,
        params_size: enable.len() as u32,
        ..Default::default()
    }
    .to_bytes();
    let len = blk.len();
    let addr = blk.as_mut_ptr() as usize;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flipper = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let cmd = (addr + 8) as *mut u32;
            let mut sched = false;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                sched = !sched;
                let v = if sched {
                    ctrl::NVA06C_CTRL_CMD_GPFIFO_SCHEDULE
                } else {
                    ctrl::NVA06C_CTRL_CMD_GET_INFO
                };
                // SAFETY: the block outlives this thread (joined below);
                // racing writes are the point of the test.
                unsafe { cmd.write_volatile(v) };
            }
        })
    };
    let t0 = Instant::now();
    while t0.elapsed() < dur {
        // SAFETY: the block is ours; the other thread only writes `cmd`.
        let b = unsafe { std::slice::from_raw_parts_mut(addr as *mut u8, len) };
        let _ =
            w.s.ctl
                .ioctl_direct(nvclient::ioctl::Escape::RmControl.nr(), b);
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = flipper.join();
    sleep(Duration::from_millis(100));
    Ok(w.ch.ring.tsg_ns())
}

fn swapped_control_cannot_enable() -> Outcome {
    // A control is read twice: by vgpu, then by the driver, so another
    // thread can turn a forwarded control into GPFIFO_SCHEDULE(enable) on
    // the caller's own TSG. Directly against the double that enables it for
    // good; through vgpu, at a 10% share next to a saturating 90% tenant,
    // the TSG must get no more than its share.
    set_share(0, 90)?;
    set_share(1, 10)?;
    let b = Tenant::spawn(Some("/ca"), "/dev/vgpuctl", "/dev/vgpu0", Enable::Tsg, MS)?;
    // What the 90% tenant gets here without the racer: the emulated debug
    // kernel's scheduling overhead costs it several points of its share.
    let (b0, t0) = (b.ns(), Instant::now());
    sleep(Duration::from_millis(1000));
    let alone = (b.ns() - b0) as f64 * 100.0 / t0.elapsed().as_nanos() as f64;
    let page = Shared::new()?;
    // The real driver's files, opened before joining the container (an
    // open from inside it is vgpu's).
    let d = Work::open("/dev/nvidiactl", "/dev/nvidia0", false)?;
    let r = as_container("/cb", || {
        let direct = race_swapped_control(&d, Duration::from_millis(500))?;
        drop(d);
        page.set(0, direct);
        let w = Work::open("/dev/vgpuctl", "/dev/vgpu1", false)?;
        let b0 = b.ns();
        let t0 = Instant::now();
        let through = race_swapped_control(&w, Duration::from_millis(2000))?;
        let wall = t0.elapsed().as_nanos() as u64;
        page.set(1, through);
        page.set(2, wall);
        page.set(3, b.ns() - b0);
        Ok(())
    });
    set_share(0, 100)?;
    set_share(1, 100)?;
    drop(b);
    r?;
    let (direct, through, wall, other) = (page.get(0), page.get(1), page.get(2), page.get(3));
    let pct = |ns: u64| ns as f64 * 100.0 / wall as f64;
    println!(
        "# swapped control: TSG ran {direct} ns directly; through vgpu at 10%: {:.1}% (the 90% tenant {:.1}%, alone {alone:.1}%)",
        pct(through),
        pct(other)
    );
    ensure!(
        direct > 0,
        "the swap never enabled the TSG directly: no race"
    );
    let within_share = pct(through) <= 13.0;
    ensure!(
        within_share,
        "the racing tenant got {:.1}% at a 10% share",
        pct(through)
    );
    // The racer must not starve the 90% tenant. It costs it time even so:
    // the racer's forwarded calls run inside the switch lock
    // (`GpuSched::in_window`), so a window that should open waits for the
    // call in flight. On the fast kernel that costs nothing measurable
    // (89.9% alone, 89.4% racing); on the debug kernel, where KASAN and
    // lockdep make each call much longer, about 20 points (87% alone,
    // 64-68% racing; 80% alone and 61% racing with the emulator loaded).
    // It must get most of its share alone, and two thirds of that racing.
    let alone_ran = alone >= 70.0;
    ensure!(alone_ran, "the 90% tenant got only {alone:.1}% alone");
    let other_ran = pct(other) >= alone * 2.0 / 3.0;
    ensure!(
        other_ran,
        "the 90% tenant got only {:.1}% (alone {alone:.1}%)",
        pct(other)
    );
    Ok(())
}

/// GR_SET_CTXSW_PREEMPTION_MODE on `w`'s channel, setting its compute
/// mode to `mode`.
fn set_compute_preemption(w: &Work, mode: u32) -> Result<(), Error> {
    let mut p = CtxswPreemptionModeParams {
        flags: preemption::FLAGS_CILP_SET,
        h_channel: w.ch.h_channel,
        cilp_preempt_mode: mode,
        ..Default::default()
    };
    w.s.ctl.control_with(
        w.s.client,
        w.s.subdevice,
        ctrl::NV2080_CTRL_CMD_GR_SET_CTXSW_PREEMPTION_MODE,
        &mut p,
    )
}

/// Engine ns `w`'s TSG ran in the 150 ms after it was disabled 30 ms into
/// a 200 ms item, directly on the double, in compute mode `mode`.
fn ran_after_disable(w: &Work, mode: u32) -> Result<u64, String> {
    set_compute_preemption(w, mode).map_err(|e| format!("mode {mode} directly: {e:?}"))?;
    w.start(200 * MS)?;
    w.enable(Enable::Tsg, true)
        .map_err(|e| format!("enable: {e:?}"))?;
    sleep(Duration::from_millis(30));
    w.enable(Enable::Tsg, false)
        .map_err(|e| format!("disable: {e:?}"))?;
    let ns0 = w.ch.ring.tsg_ns();
    sleep(Duration::from_millis(150));
    Ok(w.ch.ring.tsg_ns() - ns0)
}

fn wfi_preemption_cannot_outlast_the_window() -> Outcome {
    // A context in wait-for-idle compute preemption is switched out only
    // between work items, so one long item holds the engine past its
    // window. Directly, the double models that: disabled mid-item, a WFI
    // TSG runs on to the item's end, a CTA one stops at once.
    let d = Work::open("/dev/nvidiactl", "/dev/nvidia0", false)?;
    let wfi = ran_after_disable(&d, preemption::COMPUTE_WFI)?;
    drop(d);
    let d = Work::open("/dev/nvidiactl", "/dev/nvidia0", false)?;
    let cta = ran_after_disable(&d, preemption::COMPUTE_CTA)?;
    drop(d);
    println!("# directly, ran after the disable: WFI {wfi} ns, CTA {cta} ns");
    ensure!(wfi >= 100 * MS, "WFI stopped at the disable: ran {wfi} ns");
    ensure!(cta <= 5 * MS, "CTA ran {cta} ns after the disable");
    // Through vgpu: CILP and CTA are set, WFI refused, and a 10% tenant
    // with 200 ms items next to a saturating 90% one gets its share. The
    // tenant asks for WFI last and records the answer (slot 0: 1 for
    // NV_OK, 2 + the status otherwise), so that a build that let it
    // through shows the window it outlasts (there it got 97.5%; through
    // vgpu 10-12.5% on the fast kernel under load, so 20% is the bound).
    set_share(0, 10)?;
    set_share(1, 90)?;
    let answer = Shared::new()?;
    let modes = |w: &Work| -> Outcome {
        for m in [preemption::COMPUTE_CILP, preemption::COMPUTE_CTA] {
            set_compute_preemption(w, m).map_err(|e| format!("mode {m}: {e:?}"))?;
        }
        answer.set(
            0,
            match set_compute_preemption(w, preemption::COMPUTE_WFI) {
                Ok(()) => 1,
                Err(Error::Rm(s)) => 2 + u64::from(s),
                Err(_) => u64::MAX,
            },
        );
        Ok(())
    };
    let poll = Duration::from_millis(5);
    let long = Tenant::spawn_prepared(
        Some("/ca"),
        "/dev/vgpuctl",
        "/dev/vgpu0",
        Enable::Tsg,
        200 * MS,
        false,
        poll,
        &modes,
    );
    let r = (|| {
        let long = long?;
        let other = Tenant::spawn(Some("/cb"), "/dev/vgpuctl", "/dev/vgpu1", Enable::Tsg, MS)?;
        let s = shares(
            &[&long, &other],
            Duration::from_millis(500),
            Duration::from_millis(2000),
        );
        let wfi = answer.get(0);
        println!(
            "# 200 ms items at 10%: {:.1}%, the 90% tenant {:.1}% (WFI answered {wfi:#x}, 1 = NV_OK)",
            s[0], s[1]
        );
        let within_share = s[0] <= 20.0;
        ensure!(
            within_share,
            "the long-item tenant got {:.1}% at a 10% share",
            s[0]
        );
        let other_ran = s[1] >= 70.0;
        ensure!(other_ran, "the 90% tenant got only {:.1}%", s[1]);
        let want = 2 + u64::from(status::NV_ERR_NOT_SUPPORTED);
        ensure!(
            wfi == want,
            "compute WFI answered {wfi:#x}, want {want:#x} (2 + NV_ERR_NOT_SUPPORTED)"
        );
        Ok(())
    })();
    set_share(0, 100)?;
    set_share(1, 100)?;
    r
}

fn forwarded_control_waits_for_the_window() -> Outcome {
    // At share 0 a tenant with a TSG gets no window, so its forwarded
    // controls wait; raising the share lets them through.
    let r = as_container("/cb", || {
        let w = Work::open("/dev/vgpuctl", "/dev/vgpu1", false)?;
        set_share(1, 0)?;
        // A change takes effect from the next period.
        sleep(Duration::from_millis(120));
        let raiser = std::thread::spawn(|| {
            sleep(Duration::from_millis(400));
            set_share(1, 100)
        });
        let t0 = Instant::now();
        let ts = w.s.ctl.get_timeslice(w.s.client, w.tsg);
        let waited = t0.elapsed();
        let _ = raiser.join();
        ensure!(ts.is_ok(), "GET_TIMESLICE: {ts:?}");
        ensure!(
            waited >= Duration::from_millis(300),
            "a forwarded control ran outside the window ({waited:?})"
        );
        Ok(())
    });
    set_share(1, 100)?;
    r?;
    Ok(())
}

fn runtime_share_and_policy_change() -> Outcome {
    let a = Tenant::spawn(Some("/ca"), "/dev/vgpuctl", "/dev/vgpu0", Enable::Tsg, MS)?;
    let b = Tenant::spawn(Some("/cb"), "/dev/vgpuctl", "/dev/vgpu1", Enable::Tsg, MS)?;
    let near = |got: f64, want: f64| (got - want).abs() <= 10.0;
    let s = split(&a, &b, 50, 50, Duration::from_millis(200))?;
    println!("# 50/50: {:.1} / {:.1}", s[0], s[1]);
    check_split(&s, 50.0, 50.0)?;
    let s = split(&a, &b, 20, 80, Duration::from_millis(200))?;
    println!("# 20/80: {:.1} / {:.1}", s[0], s[1]);
    check_split(&s, 20.0, 80.0)?;
    // B's container stays, its TSG enabled, with nothing queued: idle.
    drop(b);
    let b = Tenant::spawn(Some("/cb"), "/dev/vgpuctl", "/dev/vgpu1", Enable::Tsg, 0)?;
    // Fixed: A keeps its cap.
    let s = shares(
        &[&a],
        Duration::from_millis(200),
        Duration::from_millis(1000),
    );
    println!("# fixed, B idle, A at 20%: {:.1}", s[0]);
    ensure!(near(s[0], 20.0), "fixed cap gave {s:?}");
    // Work-conserving: A takes the idle share.
    set_policy(0, "work-conserving")?;
    let s = shares(
        &[&a],
        Duration::from_millis(200),
        Duration::from_millis(1000),
    );
    println!("# work-conserving, B idle, A at 20%: {:.1}", s[0]);
    let conserved = s[0] >= 90.0;
    ensure!(conserved, "work-conserving gave {s:?}");
    drop(b);
    set_policy(0, "fixed")?;
    set_share(0, 100)?;
    set_share(1, 100)?;
    Ok(())
}

fn settings_race_with_the_scheduler() -> Outcome {
    // Threads rewrite shares, the policy and the period, and create and
    // remove a third vGPU on the GPU, as fast as they can while two tenants
    // run: nothing may break, and the settings put back give the split back.
    let a = Tenant::spawn(Some("/ca"), "/dev/vgpuctl", "/dev/vgpu0", Enable::Tsg, MS)?;
    let b = Tenant::spawn(Some("/cb"), "/dev/vgpuctl", "/dev/vgpu1", Enable::Tsg, MS)?;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let count = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut threads = Vec::new();
    for k in 0..3u64 {
        let stop = stop.clone();
        let count = count.clone();
        threads.push(std::thread::spawn(move || {
            let mut x = 0x9e37_79b9_7f4a_7c15u64.wrapping_mul(k + 1);
            let mut writes = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let _ = match k {
                    0 => set_share((x % 2) as u32, (x % 101) as u32),
                    1 => {
                        if x.is_multiple_of(3) {
                            set_policy(
                                0,
                                if x.is_multiple_of(2) {
                                    "fixed"
                                } else {
                                    "work-conserving"
                                },
                            )
                        } else {
                            set(
                                "/sys/class/vgpu/gpu0/compute_period_us",
                                &(1000 + x % 199_000).to_string(),
                            )
                        }
                    }
                    _ => {
                        let _ = set("/sys/class/vgpu/create", "5");
                        let _ = set(&vgpu_file(5, "gpu"), "0");
                        let _ = set(&vgpu_file(5, "compute_share"), "50");
                        set("/sys/class/vgpu/remove", "5")
                    }
                };
                writes += 1;
                count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            writes
        }));
    }
    // At least 1.5 s and more than 100 writes (a debug kernel under a
    // loaded emulator makes fewer a second), at most 15 s.
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_millis(1500)
        || (count.load(std::sync::atomic::Ordering::Relaxed) <= 100
            && t0.elapsed() < Duration::from_secs(15))
    {
        sleep(Duration::from_millis(100));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let writes: u64 = threads.into_iter().map(|t| t.join().unwrap_or(0)).sum();
    println!(
        "# settings race: {writes} writes in {} ms",
        t0.elapsed().as_millis()
    );
    ensure!(writes > 100, "only {writes} writes: the race did not run");
    let _ = write_file("/sys/class/vgpu/remove", "5");
    set_policy(0, "fixed")?;
    set("/sys/class/vgpu/gpu0/compute_period_us", "50000")?;
    set_share(0, 50)?;
    set_share(1, 50)?;
    // Over 3 s rather than split()'s 1.5 s: on the debug kernel under
    // emulation a 1.5 s sample once came out 37/46.
    let s = shares(
        &[&a, &b],
        Duration::from_millis(300),
        Duration::from_millis(3000),
    );
    println!("# after the race, 50/50: {:.1} / {:.1}", s[0], s[1]);
    check_split(&s, 50.0, 50.0)?;
    drop((a, b));
    set_share(0, 100)?;
    set_share(1, 100)?;
    Ok(())
}

fn teardown() -> Outcome {
    for id in [0, 1] {
        ensure!(tsgs(id)? == 0, "vgpu{id} still has TSGs");
        set("/sys/class/vgpu/remove", &id.to_string())?;
    }
    sh("rmmod vgpu")?;
    sh("rmmod nvidia")?;
    Ok(())
}
