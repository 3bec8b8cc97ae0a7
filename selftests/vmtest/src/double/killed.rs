// SPDX-License-Identifier: GPL-2.0

//! Killed processes and racing threads.

use super::*;

// 9. Killed processes; 10. racing threads.

/// A child's endless loop of allocs, maps and frees; bumps `progress` after
/// each round. Never returns.
pub(super) fn child_loop(progress: &Shared, slot: usize, gi: u32) -> ! {
    let r: Result<(), String> = (|| {
        let s = session(gi)?;
        let mut i = 0u64;
        loop {
            let m = s.vram(MIB + i % 7 * 4096).ctx("vram")?;
            let sys = s.ctl.alloc_sysmem(s.client, s.device, 0, 8192).ctx("sys")?;
            let map = s
                .ctl
                .map_memory(s.ctl.path(), s.client, s.device, sys.handle, 0, 8192, 0)
                .ctx("map")?;
            map.write_u64(0, i);
            let attr = heap::ATTR_LOCATION.set(0, heap::ATTR_LOCATION_VIDMEM);
            let h = s
                .ctl
                .vid_heap_alloc_size(s.client, s.device, 2 * MIB, attr, 0)
                .ctx("heap alloc")?;
            let t = s
                .ctl
                .alloc_tsg(s.client, s.device, 0, nvclient::tsg_params(0))
                .ctx("tsg")?;
            s.heap_free()?;
            if i.is_multiple_of(2) {
                s.free(m.handle).ctx("free")?;
                s.free(t).ctx("free tsg")?;
                s.ctl
                    .vid_heap_free(s.client, s.device, h.handle)
                    .ctx("heap free")?;
            }
            // Every other round leaves objects behind for the exit to free.
            drop(map);
            s.free(sys.handle).ctx("free sys")?;
            i += 1;
            progress.set(slot, i);
        }
    })();
    let _ = r;
    // SAFETY: _exit ends the child without running the parent's atexit
    // handlers or flushing its stdout buffers.
    unsafe { libc::_exit(3) }
}

pub(super) fn killed_processes_leak_nothing() -> Outcome {
    fresh()?;
    const CHILDREN: usize = 3;
    let shared = Shared::new()?;
    let mut result = Ok(());
    for round in 0..4u64 {
        let mut pids = Vec::new();
        for k in 0..CHILDREN {
            shared.set(k, 0);
            // SAFETY: this process is single-threaded here (the racing-thread
            // test joins its threads); the child only runs `child_loop`.
            let pid = unsafe { libc::fork() };
            if pid == 0 {
                child_loop(&shared, k, (k % 2) as u32);
            }
            if pid < 0 {
                result = Err(format!("fork: errno {}", crate::sys::errno()));
                break;
            }
            pids.push(pid);
        }
        // Let them get going (each through one loop at least: on the
        // debug kernel under a loaded emulator set-up alone can take more
        // than 300 ms), then kill them at different moments.
        let t0 = Instant::now();
        while (0..pids.len()).any(|k| shared.get(k) == 0) && t0.elapsed() < Duration::from_secs(10)
        {
            sleep(Duration::from_millis(10));
        }
        sleep(Duration::from_millis(300 + round * 70));
        for (k, pid) in pids.iter().enumerate() {
            sleep(Duration::from_millis(13 * k as u64));
            // SAFETY: `pid` is our child, not yet reaped.
            unsafe { libc::kill(*pid, libc::SIGKILL) };
        }
        for (k, pid) in pids.iter().enumerate() {
            let mut st = 0;
            // SAFETY: reaps our own child; `st` is a valid out pointer.
            unsafe { libc::waitpid(*pid, &mut st, 0) };
            let signalled = libc::WIFSIGNALED(st) && libc::WTERMSIG(st) == libc::SIGKILL;
            let done = shared.get(k);
            if result.is_ok() && !signalled {
                result = Err(format!(
                    "round {round} child {k}: ended with status {st:#x} after {done} loops, not by SIGKILL"
                ));
            }
            if result.is_ok() && done == 0 {
                result = Err(format!("round {round} child {k}: never completed a loop"));
            }
        }
    }
    drop(shared);
    result?;
    for gi in 0..2u32 {
        let s = session(gi)?;
        let (free, size) = (s.heap_free()?, s.fb(fb_info::HEAP_SIZE)?);
        ensure!(
            free == size,
            "GPU {gi}: HEAP_FREE {free} != HEAP_SIZE {size} after killing children"
        );
    }
    sh("rmmod nvidia")?;
    Ok(())
}

pub(super) fn threads_racing_on_one_client() -> Outcome {
    fresh()?;
    const THREADS: usize = 4;
    const ROUNDS: usize = 150;
    let s = session(0)?;
    let barrier = std::sync::Barrier::new(THREADS + 1);
    let kept = std::thread::scope(|sc| -> Result<Vec<Vec<nvclient::Memory>>, String> {
        let hs: Vec<_> = (0..THREADS)
            .map(|t| {
                let (s, barrier) = (&s, &barrier);
                sc.spawn(move || -> Result<Vec<nvclient::Memory>, String> {
                    let mut live = Vec::new();
                    for i in 0..ROUNDS {
                        let size = ((i % 5) as u64 + 1) * (64 << 10) + t as u64;
                        let m = s.vram(size).ctx("thread alloc")?;
                        ensure!(
                            m.size == size.next_multiple_of(64 << 10),
                            "rounded {size} to {}",
                            m.size
                        );
                        live.push(m);
                        if i % 3 != 0 {
                            let m = live.swap_remove(i % live.len());
                            s.free(m.handle).ctx("thread free")?;
                        }
                        if i % 10 == 0 {
                            s.heap_free()?;
                        }
                    }
                    barrier.wait();
                    // The main thread checks the accounting here.
                    barrier.wait();
                    let out = live.clone();
                    for m in live {
                        s.free(m.handle).ctx("final free")?;
                    }
                    Ok(out)
                })
            })
            .collect();
        barrier.wait();
        let mid = s.heap_free();
        barrier.wait();
        let mut all = Vec::new();
        for h in hs {
            all.push(h.join().map_err(|_| "thread panicked".to_string())??);
        }
        let held: u64 = all.iter().flatten().map(|m| m.size).sum();
        let mid = mid?;
        ensure!(
            mid == HEAP[0] - held,
            "mid-race HEAP_FREE {mid}, want {} (held {held})",
            HEAP[0] - held
        );
        Ok(all)
    })?;
    let handles: Vec<Handle> = kept.iter().flatten().map(|m| m.handle).collect();
    let mut uniq = handles.clone();
    uniq.sort_unstable();
    uniq.dedup();
    ensure!(uniq.len() == handles.len(), "a handle was handed out twice");
    ensure!(
        s.heap_free()? == HEAP[0],
        "HEAP_FREE {} after all threads freed",
        s.heap_free()?
    );
    Ok(())
}
