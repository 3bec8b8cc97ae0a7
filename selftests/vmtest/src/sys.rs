// SPDX-License-Identifier: GPL-2.0

//! Thin helpers over the system calls and tools the tests use.

use crate::ensure;
use crate::tap::Outcome;
use std::ffi::CString;
use std::os::unix::fs::FileTypeExt;
use std::process::Command;

/// Runs `cmd`; returns its exit code (-1 if a signal ended it) and its
/// standard output followed by its standard error.
pub fn run(cmd: &mut Command) -> Result<(i32, String), String> {
    let out = cmd
        .output()
        .map_err(|e| format!("{:?}: {e}", cmd.get_program()))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok((out.status.code().unwrap_or(-1), text))
}

/// Runs a busybox command; `Ok` with its output on exit 0, else `Err` with it.
pub fn sh(cmdline: &str) -> Result<String, String> {
    match run(Command::new("/bin/sh").arg("-c").arg(cmdline))? {
        (0, text) => Ok(text),
        (code, text) => Err(format!(
            "`{cmdline}` failed (exit status: {code}): {}",
            text.trim()
        )),
    }
}

/// The NVIDIA releases the driver double can claim, in the order of its
/// `release` parameter (`selftests/nvidia/nvidia_main.rs`): the branches'
/// releases, then 560.35.05, which vgpu has no tables for, then 580.105.08,
/// which vgpu runs with 580.142's tables, then 535.261.03 (Debian
/// bookworm's NVIDIA userspace), which vgpu runs with 535.288.01's.
pub const DOUBLE_RELEASES: [&str; 9] = {
    let b = vgpu_logic::nv::release::BRANCHES;
    [
        b[0],
        b[1],
        b[2],
        b[3],
        b[4],
        b[5],
        "560.35.05",
        "580.105.08",
        "535.261.03",
    ]
};

/// The release the double claims in this VM: `vgpu_release` from the
/// kernel command line (`scripts/vm.sh --release`), else its default.
pub fn claimed_release() -> String {
    std::env::var("vgpu_release").unwrap_or_else(|_| DOUBLE_RELEASES[0].to_string())
}

/// Makes every `modprobe nvidia` of this VM claim [`claimed_release`]
/// (`/etc/modprobe.d`, which busybox modprobe reads, implicit loads
/// included). Tests that load the double with a `release` of their own use
/// [`insmod_double`], since a parameter set twice is refused.
pub fn claim_release() -> Result<(), String> {
    let r = claimed_release();
    let idx = DOUBLE_RELEASES
        .iter()
        .position(|x| *x == r)
        .ok_or_else(|| format!("the double cannot claim {r}"))?;
    if idx == 0 {
        return Ok(());
    }
    std::fs::create_dir_all("/etc/modprobe.d").map_err(|e| format!("modprobe.d: {e}"))?;
    std::fs::write(
        "/etc/modprobe.d/nvidia-release.conf",
        format!("options nvidia release={idx}\n"),
    )
    .map_err(|e| format!("modprobe.d: {e}"))
}

/// Loads the driver double with `args` alone (no `/etc/modprobe.d`
/// options).
pub fn insmod_double(args: &str) -> Result<String, String> {
    let path = sh("modinfo -F filename nvidia")?;
    sh(&format!("insmod {} {args}", path.trim()))
}

/// Whether `path` is a character device.
pub fn is_chardev(path: &str) -> bool {
    std::fs::metadata(path)
        .map(|m| m.file_type().is_char_device())
        .unwrap_or(false)
}

/// Whether `path` exists at all.
pub fn exists(path: &str) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

/// An open file descriptor, closed on drop.
pub struct Fd(pub i32);

impl Fd {
    /// `open(path, O_RDWR)`.
    pub fn open(path: &str) -> Result<Fd, i32> {
        let c = CString::new(path).map_err(|_| libc::EINVAL)?;
        // SAFETY: `c` is a valid NUL-terminated path; open has no other preconditions.
        let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        if fd < 0 {
            Err(errno())
        } else {
            Ok(Fd(fd))
        }
    }

    /// `ioctl(fd, cmd, arg)`; `Err(errno)` on failure.
    pub fn ioctl(&self, cmd: u32, arg: *mut u8) -> Result<i32, i32> {
        // SAFETY: the caller passes a pointer to a buffer sized for `cmd`, or
        // deliberately a bad one, which the kernel must reject with EFAULT.
        let r = unsafe { libc::ioctl(self.0, cmd as _, arg) };
        if r < 0 {
            Err(errno())
        } else {
            Ok(r)
        }
    }
}

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: `self.0` is an fd this value owns; it is closed once.
        unsafe { libc::close(self.0) };
    }
}

/// The calling thread's errno.
pub fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Whether a module is loaded, from /proc/modules.
pub fn module_loaded(name: &str) -> bool {
    std::fs::read_to_string("/proc/modules")
        .map(|s| s.lines().any(|l| l.split(' ').next() == Some(name)))
        .unwrap_or(false)
}

/// Writes `data` to `path` in one write; `Err(errno)` on failure.
pub fn write_file(path: &str, data: &str) -> Result<(), i32> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
    f.write_all(data.as_bytes())
        .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))
}

/// Reads `path` to a string, without the trailing newline.
pub fn read_file(path: &str) -> Result<String, String> {
    std::fs::read_to_string(path)
        .map(|s| s.trim_end_matches('\n').to_string())
        .map_err(|e| format!("read {path}: {e}"))
}

/// Runs `f` in a forked child and returns its raw wait status.
pub fn child_status(f: impl FnOnce() -> i32) -> Result<i32, String> {
    // SAFETY: the test program is single-threaded when it forks; the child
    // only runs `f` and exits without returning.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(format!("fork: errno {}", errno()));
    }
    if pid == 0 {
        let code = f();
        // SAFETY: leaving the child without running the parent's destructors.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    // SAFETY: `pid` is our child; `status` is a valid place for its status.
    if unsafe { libc::waitpid(pid, &mut status, 0) } != pid {
        return Err(format!("waitpid: errno {}", errno()));
    }
    Ok(status)
}

/// Runs `f` in a forked child and returns its exit status (`f`'s value).
pub fn in_child(f: impl FnOnce() -> i32) -> Result<i32, String> {
    let status = child_status(f)?;
    if libc::WIFEXITED(status) {
        Ok(libc::WEXITSTATUS(status))
    } else {
        Err(format!("child died: status {status:#x}"))
    }
}

/// Moves the calling process into cgroup v2 directory `cg` (under /sys/fs/cgroup).
pub fn join_cgroup(cg: &str) -> Result<(), i32> {
    write_file(
        &format!("/sys/fs/cgroup{cg}/cgroup.procs"),
        &format!("{}", std::process::id()),
    )
}

/// Drops to an unprivileged user (nobody).
pub fn become_nobody() -> Result<(), i32> {
    // SAFETY: plain system calls with constant arguments.
    let r = unsafe { libc::setresgid(65534, 65534, 65534) | libc::setresuid(65534, 65534, 65534) };
    if r != 0 {
        Err(errno())
    } else {
        Ok(())
    }
}

/// A child process that sets something up (and holds it) until dropped:
/// dropping it SIGKILLs and reaps the child.
pub struct Holder {
    pid: libc::pid_t,
    /// Whether the child's set-up succeeded.
    pub ready: bool,
}

impl Holder {
    /// The child's PID.
    pub fn pid(&self) -> libc::pid_t {
        self.pid
    }
}

impl Holder {
    /// Forks a child that runs `setup`, reports its result and waits to be
    /// killed, keeping whatever `setup` left open or allocated.
    pub fn spawn(setup: impl FnOnce() -> bool) -> Result<Holder, String> {
        let mut fds = [0i32; 2];
        // SAFETY: `fds` has room for the two descriptors.
        if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
            return Err(format!("pipe: errno {}", errno()));
        }
        // SAFETY: the test program is single-threaded when it forks; the
        // child runs `setup`, reports and parks without returning.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(format!("fork: errno {}", errno()));
        }
        if pid == 0 {
            let ok = [u8::from(setup())];
            // SAFETY: report on the pipe's write end, then wait to be killed.
            unsafe {
                libc::write(fds[1], ok.as_ptr().cast(), 1);
                loop {
                    libc::pause();
                }
            }
        }
        let mut b = [0u8];
        // SAFETY: the pipe's read end; both ends are ours to close.
        unsafe {
            libc::read(fds[0], b.as_mut_ptr().cast(), 1);
            libc::close(fds[0]);
            libc::close(fds[1]);
        }
        Ok(Holder {
            pid,
            ready: b[0] == 1,
        })
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        // SAFETY: our child, killed and reaped once.
        unsafe {
            libc::kill(self.pid, libc::SIGKILL);
            libc::waitpid(self.pid, core::ptr::null_mut(), 0);
        }
    }
}

/// A page of `u64` slots shared between a test and the children it forks
/// after creating it.
pub struct Shared {
    ptr: *mut core::sync::atomic::AtomicU64,
}

/// Slots in a [`Shared`] page.
pub const SHARED_SLOTS: usize = 512;

impl Shared {
    /// Maps a zeroed shared anonymous page.
    pub fn new() -> Result<Shared, String> {
        // SAFETY: a fresh anonymous mapping; no existing memory is touched.
        let p = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                4096,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(format!("mmap: errno {}", errno()));
        }
        Ok(Shared { ptr: p.cast() })
    }

    fn slot(&self, i: usize) -> &core::sync::atomic::AtomicU64 {
        assert!(i < SHARED_SLOTS, "slot {i} out of range");
        // SAFETY: the page holds SHARED_SLOTS aligned u64s and lives as long
        // as `self`; atomics make concurrent access from other processes sound.
        unsafe { &*self.ptr.add(i) }
    }

    /// Reads slot `i`.
    pub fn get(&self, i: usize) -> u64 {
        self.slot(i).load(core::sync::atomic::Ordering::SeqCst)
    }

    /// Writes slot `i`.
    pub fn set(&self, i: usize, v: u64) {
        self.slot(i).store(v, core::sync::atomic::Ordering::SeqCst)
    }

    /// Sets `bits` in slot `i` (atomically: other processes may too).
    pub fn or(&self, i: usize, bits: u64) {
        self.slot(i)
            .fetch_or(bits, core::sync::atomic::Ordering::SeqCst);
    }

    /// Adds `v` to slot `i` (atomically: other processes may too) and
    /// returns the value before.
    pub fn add(&self, i: usize, v: u64) -> u64 {
        self.slot(i)
            .fetch_add(v, core::sync::atomic::Ordering::SeqCst)
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // SAFETY: our mapping, unmapped once.
        unsafe { libc::munmap(self.ptr.cast(), 4096) };
    }
}

/// A child process that sets up, then runs a loop body until killed:
/// dropping it SIGKILLs and reaps the child.
pub struct Looper {
    pid: libc::pid_t,
}

impl Looper {
    /// Forks a child that runs `setup`; if that succeeds, the child calls
    /// the body it returns forever. Returns once the set-up is done; its
    /// error (printed by the child) fails the spawn.
    pub fn spawn<F: FnMut()>(setup: impl FnOnce() -> Result<F, String>) -> Result<Looper, String> {
        let mut fds = [0i32; 2];
        // SAFETY: `fds` has room for the two descriptors.
        if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
            return Err(format!("pipe: errno {}", errno()));
        }
        // SAFETY: the test program is single-threaded when it forks; the
        // child never returns from this block.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(format!("fork: errno {}", errno()));
        }
        if pid == 0 {
            let r = setup();
            if let Err(why) = &r {
                println!("#   child set-up: {why}");
            }
            let ok = [u8::from(r.is_ok())];
            // SAFETY: report on the pipe's write end.
            unsafe { libc::write(fds[1], ok.as_ptr().cast(), 1) };
            match r {
                Ok(mut body) => loop {
                    body();
                },
                Err(_) => loop {
                    // SAFETY: wait to be killed.
                    unsafe { libc::pause() };
                },
            }
        }
        let mut b = [0u8];
        // SAFETY: the pipe's read end; both ends are ours to close.
        unsafe {
            libc::read(fds[0], b.as_mut_ptr().cast(), 1);
            libc::close(fds[0]);
            libc::close(fds[1]);
        }
        let l = Looper { pid };
        if b[0] != 1 {
            return Err("child set-up failed".into());
        }
        Ok(l)
    }
}

impl Drop for Looper {
    fn drop(&mut self) {
        // SAFETY: our child, killed and reaped once.
        unsafe {
            libc::kill(self.pid, libc::SIGKILL);
            libc::waitpid(self.pid, core::ptr::null_mut(), 0);
        }
    }
}

/// CLOCK_MONOTONIC in nanoseconds (the clock the driver double's engine
/// uses).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Runs `f` as a process of container `cg`; the child's result comes back
/// through its exit code (0 = ok) and its message on stdout.
pub fn as_container(cg: &str, f: impl FnOnce() -> Outcome) -> Outcome {
    let cg = cg.to_string();
    let code = in_child(move || {
        if join_cgroup(&cg).is_err() {
            return 100;
        }
        match f() {
            Ok(()) => 0,
            Err(why) => {
                println!("#   in {cg}: {why}");
                // The child leaves with _exit: flush, or the reason is lost.
                let _ = std::io::Write::flush(&mut std::io::stdout());
                1
            }
        }
    })?;
    ensure!(code == 0, "container process failed (code {code})");
    Ok(())
}

/// The major `/proc/devices` lists for character driver `name`.
pub fn char_major(name: &str) -> Option<u32> {
    let text = std::fs::read_to_string("/proc/devices").ok()?;
    let chars = text.split("Block devices:").next()?;
    chars.lines().find_map(|l| {
        let mut it = l.split_whitespace();
        let major = it.next()?.parse().ok()?;
        (it.next() == Some(name) && it.next().is_none()).then_some(major)
    })
}

/// Makes `/dev/nvidia-uvm` (minor 0) and `/dev/nvidia-uvm-tools` (minor 1)
/// from the major `/proc/devices` lists for `nvidia-uvm`, as nvidia-modprobe
/// does (the driver creates no device nodes for UVM). Replaces stale nodes
/// of an earlier load. Returns the major.
pub fn make_uvm_nodes() -> Result<u32, String> {
    let major = char_major("nvidia-uvm").ok_or("no nvidia-uvm in /proc/devices")?;
    for (path, minor) in [("/dev/nvidia-uvm", 0), ("/dev/nvidia-uvm-tools", 1)] {
        let _ = std::fs::remove_file(path);
        let c = CString::new(path).map_err(|e| e.to_string())?;
        // SAFETY: `c` is a valid NUL-terminated path; mknod has no other
        // preconditions.
        let rc = unsafe {
            libc::mknod(
                c.as_ptr(),
                libc::S_IFCHR | 0o666,
                libc::makedev(major, minor),
            )
        };
        if rc != 0 {
            return Err(format!("mknod {path}: errno {}", errno()));
        }
    }
    Ok(major)
}

/// Removes the nodes [`make_uvm_nodes`] made.
pub fn remove_uvm_nodes() {
    let _ = std::fs::remove_file("/dev/nvidia-uvm");
    let _ = std::fs::remove_file("/dev/nvidia-uvm-tools");
}

/// The calls a race test makes, as [`while_racing`]'s racer sees them: a
/// sequence number, odd while a call runs.
pub struct Race {
    seq: std::sync::atomic::AtomicU64,
}

impl Race {
    /// Runs `f`, one of the calls being raced, marked as running.
    pub fn call<R>(&self, f: impl FnOnce() -> R) -> R {
        use std::sync::atomic::Ordering::SeqCst;
        self.seq.fetch_add(1, SeqCst);
        let r = f();
        self.seq.fetch_add(1, SeqCst);
        r
    }
}

/// Runs `main` while another thread calls `racer` over and over, and
/// proves they overlapped: a racer call counts as overlapping when it began
/// and ended inside one call `main` marked with [`Race::call`]. `main` runs
/// again, back to back, until [`RACE_OVERLAPS`] racer calls overlapped
/// (at most [`RACE_ROUNDS`] rounds): under emulation on a busy host the
/// racer's CPU can stall for longer than one round of calls. Returns once
/// the racer has stopped: `main`'s first error, or an error if the racer
/// panicked or overlapped too few calls (a race test whose racer did not
/// run during its calls tested nothing).
pub fn while_racing(
    mut racer: impl FnMut() + Send + 'static,
    mut main: impl FnMut(&Race) -> Result<(), String>,
) -> Result<(), String> {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
    use std::sync::Arc;
    let race = Arc::new(Race {
        seq: AtomicU64::new(0),
    });
    let stop = Arc::new(AtomicBool::new(false));
    let (runs, overlaps) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let thread = {
        let (stop, runs, overlaps, race) =
            (stop.clone(), runs.clone(), overlaps.clone(), race.clone());
        std::thread::spawn(move || {
            while !stop.load(SeqCst) {
                let before = race.seq.load(SeqCst);
                racer();
                if race.seq.load(SeqCst) == before && before % 2 == 1 {
                    overlaps.fetch_add(1, SeqCst);
                }
                runs.fetch_add(1, SeqCst);
            }
        })
    };
    while runs.load(SeqCst) == 0 && !thread.is_finished() {
        std::thread::yield_now();
    }
    let mut r = Ok(());
    let mut rounds = 0;
    while rounds < RACE_ROUNDS {
        rounds += 1;
        r = main(&race);
        if r.is_err() || overlaps.load(SeqCst) >= RACE_OVERLAPS || thread.is_finished() {
            break;
        }
    }
    stop.store(true, SeqCst);
    let panicked = thread.join().is_err();
    let n = overlaps.load(SeqCst);
    println!(
        "# race: {n} racer calls ran inside the calls ({} racer calls, {rounds} rounds)",
        runs.load(SeqCst)
    );
    if panicked {
        return Err("the racing thread panicked".into());
    }
    r?;
    if n < RACE_OVERLAPS {
        return Err(format!(
            "only {n} racer calls ran inside the calls in {rounds} rounds, want {RACE_OVERLAPS}: nothing was raced"
        ));
    }
    Ok(())
}

/// Racer calls that must have run inside the raced calls.
pub const RACE_OVERLAPS: u64 = 50;

/// The most rounds of its calls [`while_racing`] runs to get them.
pub const RACE_ROUNDS: usize = 20;

/// `rmmod name` as busybox does it (`delete_module(name, O_NONBLOCK)`):
/// `Err(errno)` on failure, so a test can name the refusal it expects.
pub fn delete_module(name: &str) -> Result<(), i32> {
    let c = std::ffi::CString::new(name).map_err(|_| libc::EINVAL)?;
    // SAFETY: a valid NUL-terminated module name and flags.
    let r = unsafe { libc::syscall(libc::SYS_delete_module, c.as_ptr(), libc::O_NONBLOCK) };
    if r == 0 {
        Ok(())
    } else {
        Err(errno())
    }
}

/// `finit_module` of the module file at `path` with parameters `params`
/// (`insmod path params`): `Err(errno)` on failure, so a test can name the
/// refusal it expects.
pub fn finit_module(path: &str, params: &str) -> Result<(), i32> {
    let f = std::fs::File::open(path).map_err(|e| e.raw_os_error().unwrap_or(0))?;
    let p = std::ffi::CString::new(params).map_err(|_| libc::EINVAL)?;
    // SAFETY: a valid fd and a NUL-terminated parameter string.
    let r = unsafe {
        libc::syscall(
            libc::SYS_finit_module,
            std::os::fd::AsRawFd::as_raw_fd(&f),
            p.as_ptr(),
            0,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(errno())
    }
}
