// SPDX-License-Identifier: GPL-2.0

//! The engine's touches, a kill mid-migrate, policies and peer access.

use super::*;

pub(super) fn engine_touch() -> Outcome {
    fresh()?;
    let f = full(0)?;
    let s = &f.s;
    let f0 = s.heap_free()?;
    let bell = s
        .ctl
        .map_doorbell("/dev/nvidia0", s.client, s.device, s.sub)
        .ctx("doorbell")?;
    let tsg = s
        .ctl
        .alloc_tsg(s.client, s.device, 0, nvclient::tsg_params(f.vas))
        .ctx("TSG")?;
    let wc = s
        .ctl
        .alloc_work_channel(s.client, s.device, tsg, class::AMPERE_CHANNEL_GPFIFO_A, 16)
        .ctx("work channel")?;
    // The channel's instance block comes from the heap; the touches are
    // counted from there.
    ensure!(
        s.heap_free()? == f0 - INSTANCE_BLOCK,
        "after the channel: HEAP_FREE {}, want {}",
        s.heap_free()?,
        f0 - INSTANCE_BLOCK
    );
    // A GR channel registers with its context's buffers: a compute object
    // commits them (from the heap too).
    compute(s, wc.h_channel)?;
    let f0 = s.heap_free()?;
    f.uvm
        .register_channel(
            &f.uuid,
            -1,
            s.client,
            wc.h_channel,
            0x7400_0000_0000,
            64 * MIB,
        )
        .ctx("REGISTER_CHANNEL")?;
    s.ctl
        .gpfifo_schedule(s.client, tsg, true)
        .ctx("GPFIFO_SCHEDULE")?;
    let m = f.uvm.map_managed(4 * MIB as usize).ctx("map_managed")?;
    let run = |items: &[u64], n: u64| -> Outcome {
        ensure!(wc.ring.submit(items) == items.len(), "ring full");
        ensure!(bell.ring(wc.token), "doorbell");
        let t0 = Instant::now();
        while wc.ring.completed() < n {
            ensure!(
                t0.elapsed() < Duration::from_secs(10),
                "{} of {n} items completed",
                wc.ring.completed()
            );
            sleep(Duration::from_millis(2));
        }
        Ok(())
    };
    run(&[work::touch(m.addr() + 2 * MIB + 4096)], 1)?;
    ensure!(
        s.heap_free()? == f0 - 2 * MIB,
        "after a touch: HEAP_FREE {}, want {}",
        s.heap_free()?,
        f0 - 2 * MIB
    );
    ensure!(
        my_resident(0)? == vec![2 * MIB],
        "view {:?}",
        my_resident(0)?
    );
    ensure!(wc.ring.faults() == 0, "faults {}", wc.ring.faults());
    // The same chunk again, then plain work: nothing more.
    run(&[work::touch(m.addr() + 2 * MIB), 1000], 3)?;
    ensure!(
        s.heap_free()? == f0 - 2 * MIB,
        "a resident chunk charged twice"
    );
    // Outside any managed range: a fault, and the item still completes.
    run(&[work::touch(0x7500_0000_0000)], 4)?;
    ensure!(wc.ring.faults() == 1, "faults {}, want 1", wc.ring.faults());
    drop(m);
    ensure!(s.heap_free()? == f0, "touched chunk kept after munmap");
    // A channel never registered with UVM: a fault.
    f.uvm
        .unregister_channel(&f.uuid, s.client, wc.h_channel)
        .ctx("UNREGISTER_CHANNEL")?;
    let m = f.uvm.map_managed(2 * MIB as usize).ctx("map_managed")?;
    run(&[work::touch(m.addr())], 5)?;
    ensure!(wc.ring.faults() == 2, "faults {}, want 2", wc.ring.faults());
    ensure!(
        s.heap_free()? == f0,
        "an unregistered channel made memory resident"
    );
    s.ctl
        .gpfifo_schedule(s.client, tsg, false)
        .ctx("GPFIFO_SCHEDULE off")?;
    Ok(())
}

/// A process killed while UVM_MIGRATE runs: UVM does not stop the
/// migration for the signal (no fatal-signal check at 595.45.04), the
/// process dies when the call returns, and its VA space's residency goes
/// back with its files.
pub(super) fn kill_mid_migrate_returns_vram() -> Outcome {
    fresh()?;
    let obs = session(0)?;
    let f0 = obs.heap_free()?;
    let shared = Shared::new()?;
    let slot = &shared;
    // SAFETY: single-threaded test program; the child runs the closure and
    // exits.
    let pid = unsafe { libc::fork() };
    ensure!(pid >= 0, "fork failed");
    if pid == 0 {
        let r = (|| -> Result<(), String> {
            let f = full(0)?;
            let m = f.uvm.map_managed(200 * MIB as usize).ctx("map")?;
            slot.set(0, 1);
            f.uvm.migrate(m.addr(), 200 * MIB, &f.uuid).ctx("MIGRATE")?;
            slot.set(1, 1);
            Ok(())
        })();
        if let Err(e) = r {
            println!("#   child: {e}");
        }
        // SAFETY: leave the child without running the parent's destructors.
        unsafe { libc::_exit(0) };
    }
    let t0 = Instant::now();
    let mut at_kill = 0;
    while t0.elapsed() < Duration::from_secs(20) {
        if shared.get(0) == 1 {
            at_kill = view_gpu(0)?.2;
            if at_kill > 0 {
                break;
            }
        }
        sleep(Duration::from_micros(500));
    }
    // SAFETY: our child, killed and reaped once.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        libc::waitpid(pid, core::ptr::null_mut(), 0);
    }
    ensure!(at_kill > 0, "the migration never started");
    ensure!(
        shared.get(1) == 0 && at_kill < 200 * MIB,
        "killed after the migration finished ({at_kill} bytes resident)"
    );
    let free = obs.heap_free()?;
    ensure!(free == f0, "HEAP_FREE {free} after the kill, want {f0}");
    let (_, _, managed) = view_gpu(0)?;
    ensure!(managed == 0, "view: {managed} managed bytes left");
    ensure!(
        view_spaces()?.is_empty(),
        "VA spaces left: {:?}",
        view_spaces()?
    );
    Ok(())
}

pub(super) fn policy_and_peer() -> Outcome {
    fresh()?;
    let f = full(0)?;
    let m = f.uvm.map_managed(4 * MIB as usize).ctx("map")?;
    let (a, l) = (m.addr(), m.len() as u64);
    f.uvm
        .set_preferred_location(a, l, &f.uuid)
        .ctx("SET_PREFERRED_LOCATION")?;
    f.uvm
        .set_preferred_location(a, l, &CPU_UUID)
        .ctx("SET_PREFERRED_LOCATION cpu")?;
    want_rm(
        f.uvm.set_preferred_location(a, l, &double_uuid(1)),
        NV_ERR_INVALID_DEVICE,
        "an unregistered GPU",
    )?;
    want_rm(
        f.uvm.set_preferred_location(a, l + 4096, &f.uuid),
        NV_ERR_INVALID_ADDRESS,
        "past the managed range",
    )?;
    f.uvm
        .unset_preferred_location(a, l)
        .ctx("UNSET_PREFERRED")?;
    f.uvm.enable_read_duplication(a, l).ctx("read dup on")?;
    f.uvm.disable_read_duplication(a, l).ctx("read dup off")?;
    f.uvm
        .set_accessed_by(a, l, &f.uuid)
        .ctx("SET_ACCESSED_BY")?;
    f.uvm
        .unset_accessed_by(a, l, &f.uuid)
        .ctx("UNSET_ACCESSED_BY")?;
    want_rm(
        f.uvm.enable_read_duplication(a + 1, l),
        NV_ERR_INVALID_ADDRESS,
        "unaligned",
    )?;
    // Only the VA space's page levels are taken.
    ensure!(
        f.s.heap_free()? == HEAP - PAGE_LEVELS,
        "a policy call moved memory"
    );
    want_rm(
        f.uvm.enable_peer_access(&f.uuid, &f.uuid),
        NV_ERR_INVALID_DEVICE,
        "peer access with itself",
    )?;
    want_rm(
        f.uvm.enable_peer_access(&f.uuid, &double_uuid(1)),
        NV_ERR_INVALID_DEVICE,
        "peer access with an unregistered GPU",
    )?;
    let g1 = Gpu::open_index(1).ctx("nvidia1")?;
    f.uvm
        .register_gpu(&double_uuid(1), -1, 0)
        .ctx("REGISTER_GPU 1")?;
    drop(g1);
    want_rm(
        f.uvm.enable_peer_access(&f.uuid, &double_uuid(1)),
        NV_ERR_NOT_SUPPORTED,
        "peer access (no peer links in the double)",
    )?;
    want_rm(
        f.uvm.disable_peer_access(&f.uuid, &double_uuid(1)),
        NV_ERR_INVALID_DEVICE,
        "disable of a pair never enabled",
    )?;
    Ok(())
}
