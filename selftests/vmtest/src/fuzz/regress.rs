// SPDX-License-Identifier: GPL-2.0

//! Regression tests of the bugs the suite's fault injection found. Each
//! sweeps injected failures through one path: a run per position, the
//! failures a little later each time (failslab's or fail_function's
//! `space`), with the invariants after each run (`docs/testing.md`,
//! "Fuzzing").

use super::check;
use super::inject;
use super::ops::Tenant;
use super::TENANTS;
use crate::ensure;
use crate::session::Session;
use crate::sys::{as_container, write_file};
use crate::tap::Outcome;
use nvclient::abi::class::AMPERE_CHANNEL_GPFIFO_A;
use std::time::{Duration, Instant};

/// Runs `run(space)` at every position of `spaces` (`run` arms `attr`
/// itself, for `times` failures), then the settled invariants; counts the
/// runs where a failure was injected. Fails at the first run that fails,
/// naming its position, or if no failure was ever injected.
fn sweep(
    what: &str,
    attr: &str,
    times: u32,
    spaces: impl IntoIterator<Item = u64>,
    run: impl Fn(u64) -> Outcome,
) -> Outcome {
    sweep_where(what, attr, times, spaces, true, run)
}

/// [`sweep`]; `must_fire` false for a path that may allocate nothing at
/// all (then no run injects a failure, and that is a pass).
fn sweep_where(
    what: &str,
    attr: &str,
    times: u32,
    spaces: impl IntoIterator<Item = u64>,
    must_fire: bool,
    run: impl Fn(u64) -> Outcome,
) -> Outcome {
    ensure!(
        inject::available(),
        "this kernel lacks the fault-injection framework (the debug kernel has it)"
    );
    let mut fired = 0;
    inject::mark(true);
    let r = (|| -> Outcome {
        for space in spaces {
            let r = run(space);
            fired += u64::from(inject::fired(attr, times)?);
            inject::disarm(attr)?;
            r.map_err(|e| format!("{what}, failures injected after {space}: {e}"))?;
            check::settled(&TENANTS)
                .map_err(|e| format!("{what}, failures injected after {space}: {e}"))?;
        }
        Ok(())
    })();
    let _ = inject::disarm(attr);
    inject::mark(false);
    r?;
    ensure!(!must_fire || fired > 0, "{what}: no failure was injected");
    println!("# fuzz: {fired} {what} with failures injected");
    Ok(())
}

/// A session of `t` as its container opens it.
fn session(t: &Tenant) -> Result<Session, String> {
    Session::open_on("/dev/vgpuctl", &format!("/dev/vgpu{}", t.vgpu), t.gpu)
}

/// Flags (or unflags) the calling process for failslab.
fn flag(on: bool) -> Outcome {
    write_file("/proc/self/make-it-fail", if on { "1" } else { "0" })
        .map_err(|e| format!("make-it-fail: errno {e}"))
}

/// When a step after the driver made an object fails (vgpu's record of
/// it, its schedule entry), vgpu frees the object again before it gives
/// the charge back; that free failing too left the driver holding VRAM
/// nobody was charged for. Each run fails two calls of vgpu's injection
/// points in a row (a record, then the free that undoes it; or a driver
/// call, then the next) while a container allocates VRAM, a TSG and a
/// channel; then every invariant must hold.
pub fn failed_allocs_stay_accounted() -> Outcome {
    let t = TENANTS[0];
    sweep("allocation sequences", "fail_function", 2, 0..48, |space| {
        as_container(t.cgroup, || {
            let s = session(&t)?;
            let (c, d) = (s.client, s.device);
            inject::arm_points(space, 2)?;
            let vram = s.ctl.alloc_vram(c, d, 0, 1 << 20).map(|m| m.handle);
            let tsg = s.ctl.alloc_tsg(c, d, 0, nvclient::tsg_params(0));
            let ch = tsg.as_ref().map(|&tsg| {
                s.ctl
                    .alloc_work_channel(c, d, tsg, AMPERE_CHANNEL_GPFIFO_A, 8)
                    .map(|w| w.h_channel)
            });
            inject::disarm("fail_function")?;
            check::live(&TENANTS, &[])
                .map_err(|e| format!("vram {vram:?}, tsg {tsg:?}, channel {ch:?}: {e}"))
        })
    })
}

/// An allocation that fails while a device is freed leaves nothing of the
/// tree under it recorded. vgpu collected the descendants of a freed
/// object into lists it allocated; a failed allocation left the rest
/// recorded (a TSG the driver had freed still scheduled, VRAM it had freed
/// still charged) until the client went.
pub fn failed_frees_leave_nothing() -> Outcome {
    let t = TENANTS[0];
    sweep("frees", "failslab", 1, (0..=2048).step_by(32), |space| {
        inject::arm_once(space, 1)?;
        as_container(t.cgroup, || {
            let s = session(&t)?;
            let (c, d) = (s.client, s.device);
            let e = |w: &'static str| move |e: nvclient::Error| format!("{w}: {e:?}");
            s.ctl.alloc_vram(c, d, 0, 1 << 20).map_err(e("vram"))?;
            let tsg = s
                .ctl
                .alloc_tsg(c, d, 0, nvclient::tsg_params(0))
                .map_err(e("tsg"))?;
            s.ctl
                .alloc_work_channel(c, d, tsg, AMPERE_CHANNEL_GPFIFO_A, 8)
                .map_err(e("channel"))?;
            flag(true)?;
            let freed = s.ctl.free(c, c, d);
            flag(false)?;
            // Freed or not, vgpu's records must match the driver's.
            check::live(&TENANTS, &[]).map_err(|e| format!("free {freed:?}: {e}"))
        })
    })
}

/// A dynamic-parallelism region whose charge cannot be made leaves the
/// ledger exact. vgpu charged the region's page-table bound, then made the
/// charge's heap object; when that allocation failed, the charge dropped
/// (giving the bound back) and vgpu gave it back a second time, so the
/// vGPU was charged 20 KiB less than the driver held (the first long
/// `make fuzz`: `vgpu charged 70103040 bytes of VRAM, the double holds
/// 70123520`). Each run fails one allocation, a little later each time,
/// while a container holding 1 MiB of VRAM makes a region; then every
/// invariant must hold.
pub fn failed_dp_regions_leave_the_ledger_exact() -> Outcome {
    let t = TENANTS[0];
    sweep(
        "dynamic-parallelism regions",
        "failslab",
        1,
        (0..=1024).step_by(16),
        |space| {
            inject::arm_once(space, 1)?;
            as_container(t.cgroup, || {
                let s = session(&t)?;
                let (c, d) = (s.client, s.device);
                let e = |w: &'static str| move |e: nvclient::Error| format!("{w}: {e:?}");
                s.ctl.alloc_vram(c, d, 0, 1 << 20).map_err(e("vram"))?;
                let u = nvclient::uvm::UvmContext::open("/dev/vgpu-uvm", &s.ctl, c, d, s.subdevice)
                    .map_err(e("uvm"))?;
                flag(true)?;
                let made =
                    u.uvm
                        .map_dynamic_parallelism_region(0x7e00_0000_0000, 64 << 10, &u.uuid);
                flag(false)?;
                // Made or not, vgpu's charge must match the driver's.
                check::live(&TENANTS, &[]).map_err(|e| format!("region {made:?}: {e}"))
            })
        },
    )
}

/// A `/dev/vgpuctl` file that closes while allocations fail leaves nothing
/// behind. The close took its clients out of the module's index through a
/// list it allocated; a failed allocation left entries in the index, which
/// kept the file and its records (a TSG scheduled for ever, the vGPU no
/// longer removable). Each run's container process holds one to three
/// sessions with a TSG and a second client each (the old list's one
/// allocation came with the first client it took out: with one client per
/// file, that client was out already and nothing stayed) and exits
/// flagged, with every allocation that has vgpu on the stack failing: the
/// close now allocates nothing, so nothing may be failed, and nothing may
/// be left.
pub fn failed_closes_leave_nothing() -> Outcome {
    ensure!(
        inject::available(),
        "this kernel lacks the fault-injection framework (the debug kernel has it)"
    );
    let t = TENANTS[0];
    inject::mark(true);
    let r = (|| -> Outcome {
        for run in 0..24u64 {
            inject::arm("failslab", 100)?;
            let r = as_container(t.cgroup, || {
                let mut held = Vec::new();
                for _ in 0..=run % 3 {
                    let s = session(&t)?;
                    s.ctl
                        .alloc_tsg(s.client, s.device, 0, nvclient::tsg_params(0))
                        .map_err(|e| format!("tsg: {e:?}"))?;
                    s.ctl
                        .alloc_root_client()
                        .map_err(|e| format!("second client: {e:?}"))?;
                    held.push(s);
                }
                flag(true)?;
                // The files close as the process exits, flagged.
                std::mem::forget(held);
                Ok(())
            });
            let failed = inject::disarm("failslab")?;
            r?;
            check::settled(&TENANTS)
                .map_err(|e| format!("run {run} ({failed} allocations failed): {e}"))?;
        }
        Ok(())
    })();
    let _ = inject::disarm("failslab");
    inject::mark(false);
    r
}

/// One allocation failing anywhere in the closes of a container's files
/// (as its process exits: a session with a TSG, VRAM and a second client
/// on its ctl file, without which the old list's failure left nothing
/// behind) leaves nothing behind. The close of `/dev/vgpuctl` once gathered the file's clients in
/// a list as it took them out of the index: an allocation failing there
/// left the rest in the index, and with them the file, its TSG and its
/// charge, for good. The sweep fails the first allocation with vgpu on
/// the stack after `space` bytes of them, from the first one on. The
/// close now allocates nothing with vgpu on the stack, so no run may
/// inject anything (the sweep then shows only that the closes settle).
pub fn closes_failing_one_allocation_leave_nothing() -> Outcome {
    let t = TENANTS[0];
    sweep_where(
        "closes",
        "failslab",
        1,
        (0..256).step_by(16),
        false,
        |space| {
            as_container(t.cgroup, || {
                let s = session(&t)?;
                s.ctl
                    .alloc_tsg(s.client, s.device, 0, nvclient::tsg_params(0))
                    .map_err(|e| format!("tsg: {e:?}"))?;
                s.ctl
                    .alloc_vram(s.client, s.device, 0, 1 << 20)
                    .map_err(|e| format!("vram: {e:?}"))?;
                s.ctl
                    .alloc_root_client()
                    .map_err(|e| format!("second client: {e:?}"))?;
                inject::arm_once(space, 1)?;
                flag(true)?;
                // The files close as the process exits, flagged.
                std::mem::forget(s);
                Ok(())
            })
        },
    )
}

/// An allocation that fails anywhere in the open of a vgpu node fails the
/// open and leaves nothing behind: no user counted, no lock held. The GPU
/// node's open held its vGPU's users lock when making its proxy file
/// failed; the file's drop took that lock again, and the open deadlocked.
/// Each open runs in a child the test waits for a bounded time.
pub fn failed_opens_give_back() -> Outcome {
    let t = TENANTS[0];
    let node = format!("/dev/vgpu{}", t.vgpu);
    // An open first allocates the 4 KiB buffer its cgroup check reads the
    // caller's cgroup path into: the sweep steps fast up to it, then
    // slowly through what follows (the real file, the proxy file).
    let spaces = (0..4096).step_by(512).chain((4096..=6656).step_by(32));
    sweep("opens", "failslab", 1, spaces, |space| {
        inject::arm_once(space, 1)?;
        let pid = spawn_opener(t.cgroup, &node)?;
        let t0 = Instant::now();
        let mut st = 0;
        // SAFETY: our child; WNOHANG polls it.
        while unsafe { libc::waitpid(pid, &mut st, libc::WNOHANG) } == 0 {
            ensure!(
                t0.elapsed() < Duration::from_secs(30),
                "an open hung (deadlock?)"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        ensure!(
            libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0,
            "the opener ended with status {st:#x}"
        );
        let users = check::attr(t.vgpu, "users")?;
        ensure!(
            users == 0,
            "vgpu{}/users = {users} after the opener exited",
            t.vgpu
        );
        Ok(())
    })
}

/// A child of `cgroup` flagged for fault injection that opens `node`, the
/// ctl node and the UVM node, then exits 0.
fn spawn_opener(cgroup: &str, node: &str) -> Result<i32, String> {
    let paths: Vec<std::ffi::CString> = [node, "/dev/vgpuctl", "/dev/vgpu-uvm"]
        .iter()
        .filter_map(|p| std::ffi::CString::new(*p).ok())
        .collect();
    // SAFETY: the test program is single-threaded here; the child makes
    // plain system calls and exits.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(format!("fork: errno {}", crate::sys::errno()));
    }
    if pid == 0 {
        let ok = crate::sys::join_cgroup(cgroup).is_ok() && flag(true).is_ok();
        for p in &paths {
            // SAFETY: a valid path; the fd is closed at once.
            let fd = unsafe { libc::open(p.as_ptr(), libc::O_RDWR) };
            if fd >= 0 {
                // SAFETY: our fd.
                unsafe { libc::close(fd) };
            }
        }
        // SAFETY: leaving the child.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    Ok(pid)
}
