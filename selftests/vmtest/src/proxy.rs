// SPDX-License-Identifier: GPL-2.0

//! The whole CUDA-like sequence of the client library, run once directly
//! against the driver double and once as a container sees the GPU through
//! vgpu (only /dev/vgpuctl, /dev/vgpu0 and /dev/vgpu-uvm): client, device,
//! the UVM VA space with its mm file, GPU registration and GPU VA space,
//! memory, mmap by the fresh-fd protocol (the fds name proxy files), VRAM
//! mapped into UVM, TSG, channel registered with UVM, doorbell work,
//! managed memory migrated to the GPU and back, events by poll, free,
//! close. Both runs must give the same results, and the container's fd
//! table never holds a real driver file.

use crate::ensure;
use crate::session::Session;
use crate::sys::{
    in_child, join_cgroup, make_uvm_nodes, read_file, remove_uvm_nodes, sh, write_file,
};
use crate::tap::{Outcome, Test};
use crate::tests;
use nvclient::abi::class;
use nvclient::uvm::UvmContext;
use std::time::{Duration, Instant};

/// Tests of this suite.
pub const TESTS: &[Test] = tests![
    setup,
    sequence_directly = directly,
    sequence_through_vgpu = through_vgpu,
    private_files_unreachable,
    bounce_area_is_vgpus_alone,
    threads_outnumber_bounce_slots,
    teardown,
];

fn setup() -> Outcome {
    sh("modprobe nvidia gpus=1 vram0_mib=8192")?;
    make_uvm_nodes()?;
    sh("modprobe vgpu")?;
    std::fs::create_dir_all("/sys/fs/cgroup/pa").map_err(|e| format!("mkdir: {e}"))?;
    write_file("/sys/class/vgpu/create", "0").map_err(|e| format!("create: {e}"))?;
    write_file("/sys/class/vgpu/vgpu0/gpu", "0").map_err(|e| format!("gpu: {e}"))?;
    write_file("/sys/class/vgpu/vgpu0/memory_limit", "1073741824")
        .map_err(|e| format!("limit: {e}"))?;
    write_file("/sys/class/vgpu/vgpu0/cgroup", "/pa").map_err(|e| format!("cgroup: {e}"))?;
    Ok(())
}

/// The sequence; returns a summary to compare between the two runs, and
/// whether UVM reported pageable memory access (HMM), which differs: vgpu
/// turns HMM off.
fn sequence(ctl: &str, gpu: &str, uvm: &str) -> Result<(String, bool), String> {
    let s = Session::open(ctl, gpu)?;
    let e = |what: &'static str| move |err: nvclient::Error| format!("{what}: {err:?}");
    // UVM as libcuda sets it up: a VA space bound to this process and its
    // mm file, the GPU registered (the GPU node is open), an externally
    // owned GPU VA space.
    let ctx =
        UvmContext::open(uvm, &s.ctl, s.client, s.device, s.subdevice).map_err(e("UVM context"))?;
    let (u, uuid, vas, reg) = (&ctx.uvm, ctx.uuid, ctx.vas, ctx.registered);
    let pageable = u.pageable_mem_access().map_err(e("PAGEABLE_MEM_ACCESS"))?;
    // VRAM, mapped through a fresh GPU-node fd; data written is read back.
    let vram = s
        .ctl
        .alloc_vram(s.client, s.device, 0, 1 << 20)
        .map_err(e("vram"))?;
    let map = s
        .ctl
        .map_memory(gpu, s.client, s.device, vram.handle, 0, 1 << 20, 0)
        .map_err(e("map vram"))?;
    ensure!(map.write_u32(4096, 0xfeed_f00d), "write to mapped VRAM");
    ensure!(
        map.read_u32(4096) == Some(0xfeed_f00d),
        "read back from mapped VRAM"
    );
    drop(map);
    // The VRAM mapped into the UVM VA space, as cudaMalloc does.
    let ext = nvclient::uvm::Reservation::new(1 << 20, 1 << 20).map_err(e("VA"))?;
    u.create_external_range(ext.addr(), 1 << 20)
        .map_err(e("CREATE_EXTERNAL_RANGE"))?;
    u.map_external_allocation(ext.addr(), 1 << 20, 0, &[uuid], s.client, vram.handle)
        .map_err(e("MAP_EXTERNAL_ALLOCATION"))?;
    // A TSG with a channel whose ring is system memory mapped through a
    // fresh ctl fd, and a doorbell page mapped through a fresh GPU-node fd.
    let tsg = s
        .ctl
        .alloc_tsg(s.client, s.device, 0, nvclient::tsg_params(vas))
        .map_err(e("tsg"))?;
    let ch = s
        .ctl
        .alloc_work_channel(s.client, s.device, tsg, class::AMPERE_CHANNEL_GPFIFO_A, 16)
        .map_err(e("channel"))?;
    // A compute object commits the TSG's GR context, whose buffers UVM
    // maps when the channel is registered.
    s.ctl
        .alloc(
            s.client,
            ch.h_channel,
            0,
            class::HOPPER_COMPUTE_A,
            &mut [0u8; 16],
        )
        .map_err(e("compute object"))?;
    let chva = nvclient::uvm::Reservation::new(64 << 20, 1 << 20).map_err(e("VA"))?;
    u.register_channel(&uuid, -1, s.client, ch.h_channel, chva.addr(), 64 << 20)
        .map_err(e("REGISTER_CHANNEL"))?;
    // Managed memory: mapped, then made resident on the GPU by MIGRATE and
    // by GPU work that touches it, and moved back.
    let managed = u.map_managed(4 << 20).map_err(e("managed mmap"))?;
    u.validate_va_range(managed.addr(), 4 << 20)
        .map_err(e("VALIDATE_VA_RANGE"))?;
    u.migrate(managed.addr(), 2 << 20, &uuid)
        .map_err(e("MIGRATE to the GPU"))?;
    let bell = s
        .ctl
        .map_doorbell(gpu, s.client, s.device, s.subdevice)
        .map_err(e("doorbell"))?;
    // Completion events, delivered by poll on the ctl fd.
    s.ctl
        .alloc_os_event(s.client, s.device)
        .map_err(e("os event"))?;
    s.ctl
        .gpfifo_schedule(s.client, tsg, true)
        .map_err(e("schedule"))?;
    ensure!(
        ch.ring.submit(&[
            1_000_000,
            nvclient::work::touch(managed.addr() + (2 << 20)),
            1_000_000,
            1_000_000
        ]) == 4,
        "submit"
    );
    ensure!(bell.ring(ch.token), "doorbell");
    let t0 = Instant::now();
    while ch.ring.completed() < 4 {
        ensure!(
            t0.elapsed() < Duration::from_secs(10),
            "work did not complete: {}",
            ch.ring.completed()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let ev = s
        .ctl
        .poll(libc::POLLIN | libc::POLLPRI, 1000)
        .map_err(e("poll"))?;
    ensure!(
        ev & (libc::POLLIN | libc::POLLPRI) != 0,
        "no event by poll: {ev:#x}"
    );
    let ran = ch.ring.channel_ns();
    ensure!(ran >= 3_000_000, "channel ran {ran} ns for 3 ms of work");
    ensure!(ch.ring.faults() == 0, "the touch faulted");
    u.migrate(managed.addr(), 4 << 20, &nvclient::uvm::CPU_UUID)
        .map_err(e("MIGRATE to the CPU"))?;
    // What else CUDA issues (issue 14): a range group over the managed
    // memory migrated both ways, a dynamic-parallelism region, tools reads
    // and writes of the managed memory.
    let group = u.create_range_group().map_err(e("CREATE_RANGE_GROUP"))?;
    u.set_range_group(group, managed.addr(), 4 << 20)
        .map_err(e("SET_RANGE_GROUP"))?;
    u.migrate_range_group(group, &uuid)
        .map_err(e("MIGRATE_RANGE_GROUP to the GPU"))?;
    u.migrate_range_group(group, &nvclient::uvm::CPU_UUID)
        .map_err(e("MIGRATE_RANGE_GROUP to the CPU"))?;
    u.destroy_range_group(group)
        .map_err(e("DESTROY_RANGE_GROUP"))?;
    let dp = nvclient::uvm::Reservation::new(2 << 20, 2 << 20).map_err(e("VA"))?;
    u.map_dynamic_parallelism_region(dp.addr(), 64 << 10, &uuid)
        .map_err(e("MAP_DYNAMIC_PARALLELISM_REGION"))?;
    u.validate_va_range(dp.addr(), 64 << 10)
        .map_err(e("VALIDATE the region"))?;
    u.free(dp.addr(), 64 << 10)
        .map_err(e("UVM_FREE of the region"))?;
    let mut buf = vec![0xa5u8; 5000];
    let wrote = u
        .tools_write_process_memory(managed.addr() + 100, &buf)
        .map_err(e("TOOLS_WRITE_PROCESS_MEMORY"))?;
    let read = u
        .tools_read_process_memory(managed.addr() + 100, &mut buf)
        .map_err(e("TOOLS_READ_PROCESS_MEMORY"))?;
    u.unregister_channel(&uuid, s.client, ch.h_channel)
        .map_err(e("UNREGISTER_CHANNEL"))?;
    u.free(ext.addr(), 1 << 20).map_err(e("UVM_FREE"))?;
    managed.unmap().map_err(e("munmap managed"))?;
    // A container's table holds no real driver file, whatever it did.
    if ctl == "/dev/vgpuctl" {
        real_files_in_table()?;
    }
    s.ctl
        .free(s.client, s.client, s.client)
        .map_err(e("free client"))?;
    Ok((
        format!(
            "uvm: numa {}/{}; vram {} mapped and in UVM; channel registered; \
             4 items done incl. a managed touch; managed 4 MiB migrated both ways; event seen; \
             range group {group} migrated both ways; DP region mapped and freed; \
             tools wrote {wrote} and read {read}",
            reg.numa_enabled, reg.numa_node_id, vram.size
        ),
        pageable,
    ))
}

fn directly() -> Outcome {
    let (out, pageable) = sequence("/dev/nvidiactl", "/dev/nvidia0", "/dev/nvidia-uvm")?;
    println!("# proxy: directly: {out}; pageable memory access {pageable}");
    Ok(())
}

fn through_vgpu() -> Outcome {
    let (direct, pageable) = sequence("/dev/nvidiactl", "/dev/nvidia0", "/dev/nvidia-uvm")?;
    ensure!(
        pageable,
        "directly, the double's UVM has HMM: pageable access"
    );
    let code = in_child(move || {
        if join_cgroup("/pa").is_err() {
            return 100;
        }
        match sequence("/dev/vgpuctl", "/dev/vgpu0", "/dev/vgpu-uvm") {
            Ok((_, true)) => {
                println!("#   through vgpu: pageable memory access (HMM on)");
                3
            }
            Ok((out, false)) if out == direct => {
                println!("# proxy: through vgpu: {out}");
                0
            }
            Ok((out, false)) => {
                println!("#   through vgpu: {out}; directly: {direct}");
                1
            }
            Err(why) => {
                println!("#   through vgpu: {why}");
                2
            }
        }
    })?;
    ensure!(code == 0, "container run failed (code {code})");
    let used = read_file("/sys/class/vgpu/vgpu0/memory_used")?;
    ensure!(used == "0", "charged after the client was freed: {used}");
    Ok(())
}

/// While vgpu runs a call with a private real file in the kernel's table
/// for one thread of a container, other threads of it try to take that
/// file: by reopening the thread's `/proc/.../fd` entries and with
/// `pidfd_getfd` on the thread. Both wait for the call to end (vgpu holds
/// the process's exec_update_lock, which they take), so they meet only the
/// process's own table, and never get a real driver file.
fn private_files_unreachable() -> Outcome {
    use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};
    use std::sync::Arc;
    crate::sys::as_container("/pa", || {
        let s = Session::vgpu(0)?;
        let vram = s
            .ctl
            .alloc_vram(s.client, s.device, 0, 1 << 20)
            .map_err(|e| format!("vram: {e:?}"))?;
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        let stop = Arc::new(AtomicBool::new(false));
        let taken = Arc::new(AtomicU32::new(0));
        let (tries, longest_us) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU64::new(0)));
        // A real driver file: a character device of the NVIDIA major.
        let is_real = |fd: i32| {
            // SAFETY: an all-zero stat is a valid buffer for fstat to fill.
            let mut st: libc::stat = unsafe { core::mem::zeroed() };
            // SAFETY: `st` is valid for writing; a bad fd gives -1.
            let ok = unsafe { libc::fstat(fd, &mut st) } == 0;
            ok && st.st_mode & libc::S_IFMT == libc::S_IFCHR && libc::major(st.st_rdev) == 195
        };
        let reopen = {
            let (stop, taken, tries, longest_us) = (
                stop.clone(),
                taken.clone(),
                tries.clone(),
                longest_us.clone(),
            );
            std::thread::spawn(move || {
                while !stop.load(Relaxed) {
                    // The kernel's table is (nearly) empty: a private fd
                    // would be among its first.
                    for n in 0..4 {
                        let p = format!("/proc/self/task/{tid}/fd/{n}");
                        let t = Instant::now();
                        let f = std::fs::OpenOptions::new().read(true).write(true).open(&p);
                        longest_us.fetch_max(t.elapsed().as_micros() as u64, Relaxed);
                        if let Ok(f) = f {
                            if is_real(std::os::fd::AsRawFd::as_raw_fd(&f)) {
                                taken.fetch_add(1, Relaxed);
                            }
                        }
                        tries.fetch_add(1, Relaxed);
                    }
                }
            })
        };
        let getfd_longest_us = Arc::new(AtomicU64::new(0));
        let getfd = {
            let (stop, taken, getfd_longest_us) =
                (stop.clone(), taken.clone(), getfd_longest_us.clone());
            std::thread::spawn(move || {
                // SAFETY: plain system calls on our own thread's pid.
                let pidfd =
                    unsafe { libc::syscall(libc::SYS_pidfd_open, tid, libc::O_EXCL) as i32 };
                if pidfd < 0 {
                    return false;
                }
                while !stop.load(Relaxed) {
                    for n in 0..4 {
                        let t = Instant::now();
                        // SAFETY: pidfd_getfd on our own process; a new fd
                        // comes back or -1.
                        let fd =
                            unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd, n, 0) as i32 };
                        getfd_longest_us.fetch_max(t.elapsed().as_micros() as u64, Relaxed);
                        if fd >= 0 {
                            if is_real(fd) {
                                taken.fetch_add(1, Relaxed);
                            }
                            // SAFETY: the fd pidfd_getfd just gave us.
                            unsafe { libc::close(fd) };
                        }
                    }
                }
                true
            })
        };
        // Each mapping stays 50 ms inside the driver (the double's test
        // hook), with its private file in the kernel's table meanwhile.
        write_file("/sys/kernel/debug/nvidia-double/map_delay_ms", "50")
            .map_err(|e| format!("map_delay_ms: errno {e}"))?;
        let mut maps = 0;
        let mapped: Result<(), String> = (|| {
            for _ in 0..20 {
                let m = s
                    .ctl
                    .map_memory("/dev/vgpu0", s.client, s.device, vram.handle, 0, 1 << 20, 0)
                    .map_err(|e| format!("map: {e:?}"))?;
                drop(m);
                maps += 1;
            }
            Ok(())
        })();
        stop.store(true, Relaxed);
        write_file("/sys/kernel/debug/nvidia-double/map_delay_ms", "0")
            .map_err(|e| format!("map_delay_ms: errno {e}"))?;
        reopen.join().map_err(|_| "reopen thread panicked")?;
        let got_pidfd = getfd.join().map_err(|_| "getfd thread panicked")?;
        mapped?;
        ensure!(got_pidfd, "pidfd_open of the mapping thread failed");
        let longest = longest_us.load(Relaxed);
        println!(
            "# proxy: {maps} mappings of 50 ms through private fds; {} /proc fd opens raced them, the longest waited {longest} us; {} real files taken",
            tries.load(Relaxed),
            taken.load(Relaxed)
        );
        // Each half must have met a call (pidfd_getfd takes the same lock
        // as the /proc open), and neither may have taken a real file: all
        // that failed is said at once, so one half cannot hide the other.
        let getfd_longest = getfd_longest_us.load(Relaxed);
        let mut why = Vec::new();
        if longest < 20_000 {
            why.push(format!(
                "no /proc fd open ever waited for a call ({longest} us): the race was not run"
            ));
        }
        if getfd_longest < 20_000 {
            why.push(format!(
                "no pidfd_getfd ever waited for a call ({getfd_longest} us): the race was not run"
            ));
        }
        let n = taken.load(Relaxed);
        if n > 0 {
            why.push(format!("{n} real driver files reached the container"));
        }
        ensure!(why.is_empty(), "{}", why.join("; "));
        real_files_in_table()
    })
}

/// The calling process's bounce area (vgpu's mapping for the blocks it
/// hands to the driver): start and end, from /proc/self/maps.
fn bounce_area() -> Result<(usize, usize), String> {
    let maps = read_file("/proc/self/maps")?;
    let line = maps
        .lines()
        .find(|l| l.ends_with("[vgpu-bounce]"))
        .ok_or("no [vgpu-bounce] mapping")?;
    let range = line.split(' ').next().unwrap_or_default();
    let (a, b) = range.split_once('-').ok_or("bad maps line")?;
    let hex = |x: &str| usize::from_str_radix(x, 16).map_err(|e| format!("{x}: {e}"));
    Ok((hex(a)?, hex(b)?))
}

/// Forks; the child runs `f`. Returns the signal that ended the child, or
/// an error if it exited.
fn killed_by(f: impl FnOnce()) -> Result<i32, String> {
    let status = crate::sys::child_status(|| {
        f();
        0
    })?;
    if libc::WIFSIGNALED(status) {
        Ok(libc::WTERMSIG(status))
    } else {
        Err(format!("child exited with {}", libc::WEXITSTATUS(status)))
    }
}

/// vgpu hands checked blocks to the driver from a bounce area in the
/// caller's address space. Nothing the container can do changes what is in
/// it: it cannot be unmapped, replaced, moved, re-protected or inherited,
/// nor written through /proc/self/mem or by another thread (SIGBUS); and
/// calls go on working after all the attempts.
fn bounce_area_is_vgpus_alone() -> Outcome {
    use crate::sys::errno;
    crate::sys::as_container("/pa", || {
        let s = Session::vgpu(0)?;
        let (start, end) = bounce_area()?;
        let (p, len) = (start as *mut libc::c_void, end - start);
        ensure!(len == 128 << 10, "area of {len} bytes");
        // SAFETY: each call below only asks the kernel to change the area;
        // every one must be refused, which is what is checked.
        let r = unsafe { libc::munmap(p, len) };
        ensure!(
            r == -1 && errno() == libc::EPERM,
            "munmap: {r}, errno {}",
            errno()
        );
        // SAFETY: as above.
        let r = unsafe { libc::mprotect(p, len, libc::PROT_READ) };
        ensure!(
            r == -1 && errno() == libc::EPERM,
            "mprotect: {r}, errno {}",
            errno()
        );
        // SAFETY: as above.
        let r = unsafe { libc::mremap(p, len, 2 * len, libc::MREMAP_MAYMOVE) };
        ensure!(
            r == libc::MAP_FAILED && errno() == libc::EPERM,
            "mremap: {r:?}, errno {}",
            errno()
        );
        // SAFETY: as above: MAP_FIXED over the area must fail.
        let r = unsafe {
            libc::mmap(
                p,
                4096,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_FIXED | libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        ensure!(
            r == libc::MAP_FAILED && errno() == libc::EPERM,
            "MAP_FIXED: {r:?}, errno {}",
            errno()
        );
        // SAFETY: as above.
        let r = unsafe { libc::madvise(p, len, libc::MADV_DOFORK) };
        let e = errno();
        if r == -1 && e == libc::ENOSYS {
            // The test kernels are built without CONFIG_ADVISE_SYSCALLS:
            // nothing is shown here (said, not passed silently).
            println!("# proxy: madvise is not built into this kernel: MADV_DOFORK not tried");
        } else {
            // VM_IO areas refuse MADV_DOFORK (mm/madvise.c).
            ensure!(r == -1 && e == libc::EINVAL, "MADV_DOFORK: {r}, errno {e}");
        }
        let mem = std::fs::OpenOptions::new()
            .write(true)
            .open("/proc/self/mem")
            .map_err(|e| format!("/proc/self/mem: {e}"))?;
        let w = std::os::unix::fs::FileExt::write_at(&mem, &[0xff], start as u64);
        let werr = w.as_ref().map_err(|e| e.raw_os_error());
        ensure!(
            werr == Err(Some(libc::EIO)),
            "/proc/self/mem write: {werr:?}"
        );
        // A child does not inherit it (it gets its own on its first call).
        let code = in_child(|| i32::from(bounce_area().is_ok()))?;
        ensure!(code == 0, "the area was inherited");
        // A write by any thread but the one in a call: SIGBUS. (Into the
        // last of the area's 8 slots of 16 KiB, which the few calls made so
        // far have not used: slots are taken in order.)
        let sig = killed_by(|| {
            let Ok(s2) = Session::vgpu(0) else { return };
            let Ok((start, _)) = bounce_area() else {
                return;
            };
            let t = std::thread::spawn(move || {
                // SAFETY: the write is meant to fault; the process dies.
                unsafe { ((start + 7 * (16 << 10)) as *mut u8).write_volatile(1) };
            });
            let _ = t.join();
            drop(s2);
        })?;
        ensure!(
            sig == libc::SIGBUS,
            "writer killed by signal {sig}, want SIGBUS"
        );
        // Reading is harmless, and calls still work.
        // SAFETY: the area is mapped readable.
        let _ = unsafe { (start as *const u8).read_volatile() };
        let m = s
            .ctl
            .alloc_vram(s.client, s.device, 0, 1 << 20)
            .map_err(|e| format!("vram after: {e:?}"))?;
        s.ctl
            .free(s.client, s.device, m.handle)
            .map_err(|e| format!("free after: {e:?}"))?;
        let (s2, e2) = bounce_area()?;
        ensure!((s2, e2) == (start, end), "the area moved");
        Ok(())
    })
}

/// 12 threads map memory at once, each call staying 10 ms in the driver:
/// more calls are in flight than the bounce area has slots (8), so some
/// wait for one. All succeed, and the process keeps one area.
fn threads_outnumber_bounce_slots() -> Outcome {
    crate::sys::as_container("/pa", || {
        let s = std::sync::Arc::new(Session::vgpu(0)?);
        let vram = s
            .ctl
            .alloc_vram(s.client, s.device, 0, 1 << 20)
            .map_err(|e| format!("vram: {e:?}"))?;
        write_file("/sys/kernel/debug/nvidia-double/map_delay_ms", "10")
            .map_err(|e| format!("map_delay_ms: errno {e}"))?;
        // Calls in flight at once, as the callers see them: more than the
        // area's 8 slots must have been, or nothing here outnumbered them.
        use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
        let in_flight = std::sync::Arc::new((AtomicUsize::new(0), AtomicUsize::new(0)));
        let threads: Vec<_> = (0..12)
            .map(|_| {
                let (s, in_flight) = (s.clone(), in_flight.clone());
                std::thread::spawn(move || -> Result<(), String> {
                    for _ in 0..4 {
                        let now = in_flight.0.fetch_add(1, SeqCst) + 1;
                        in_flight.1.fetch_max(now, SeqCst);
                        let m = s.ctl.map_memory(
                            "/dev/vgpu0",
                            s.client,
                            s.device,
                            vram.handle,
                            0,
                            1 << 20,
                            0,
                        );
                        in_flight.0.fetch_sub(1, SeqCst);
                        drop(m.map_err(|e| format!("map: {e:?}"))?);
                    }
                    Ok(())
                })
            })
            .collect();
        let results: Vec<_> = threads.into_iter().map(|t| t.join()).collect();
        write_file("/sys/kernel/debug/nvidia-double/map_delay_ms", "0")
            .map_err(|e| format!("map_delay_ms: errno {e}"))?;
        for r in results {
            r.map_err(|_| "a mapping thread panicked")??;
        }
        let most = in_flight.1.load(SeqCst);
        ensure!(
            most > 8,
            "at most {most} calls were in flight at once: the slots were never outnumbered"
        );
        let areas = read_file("/proc/self/maps")?
            .lines()
            .filter(|l| l.ends_with("[vgpu-bounce]"))
            .count();
        ensure!(areas == 1, "{areas} bounce areas");
        Ok(())
    })
}

fn teardown() -> Outcome {
    write_file("/sys/class/vgpu/remove", "0").map_err(|e| format!("remove: {e}"))?;
    sh("rmmod vgpu")?;
    remove_uvm_nodes();
    sh("rmmod nvidia")?;
    Ok(())
}

/// Fails if any fd of this process names a real NVIDIA node.
pub fn real_files_in_table() -> Result<(), String> {
    for e in std::fs::read_dir("/proc/self/fd").map_err(|e| e.to_string())? {
        let e = e.map_err(|e| e.to_string())?;
        if let Ok(t) = std::fs::read_link(e.path()) {
            let t = t.to_string_lossy().to_string();
            ensure!(
                !t.starts_with("/dev/nvidia"),
                "fd {:?} is {t}",
                e.file_name()
            );
        }
    }
    Ok(())
}
