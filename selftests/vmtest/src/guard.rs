// SPDX-License-Identifier: GPL-2.0

//! The guard (issue 33, point 3): a file of NVIDIA's driver that a host
//! process opened and hands over — `SCM_RIGHTS`, `pidfd_getfd` — does not
//! enter a process whose cgroup (or an ancestor) is bound to a vGPU.
//! `vgpuctl guard` loads a BPF LSM program on `file_receive` for that;
//! it needs BPF LSM active, which Debian's kernel (the stock lane) and the
//! debug kernel (scripts/kconfig/lsm.config) have and the fast kernel does
//! not. There the suite asserts what the loader reports and that the gap
//! is what docs/design-notes.md says.
//!
//! Who answers a file is told by the client handle it gives (vgpu picks
//! `0xc1eX_XXXX`, the double `0xc1dX_XXXX`), and the double's ioctl
//! count (`nvidia-double/ioctls`) says whether a call reached it.

use std::fs::{File, OpenOptions};
use std::os::fd::{AsRawFd, RawFd};
use std::process::Command;

use crate::ensure;
use crate::sys::{as_container, errno, in_child, join_cgroup, make_uvm_nodes, read_file, run, sh};
use crate::tap::{Outcome, Test};
use crate::tests;
use nvclient::Ctl;

/// Tests of this suite, in order (later ones rely on earlier ones' state).
pub const TESTS: &[Test] = tests![
    setup,
    load_reports_what_the_kernel_allows,
    a_passed_driver_fd_is_refused,
    an_unbound_receiver_gets_the_drivers_fd,
    a_bound_receiver_gets_a_siblings_proxy_fd,
    rebinding_through_vgpuctl_moves_the_guard,
    without_the_guard_the_fd_gets_in,
    teardown,
];

/// The container bound to vGPU 0, a cgroup below it, one bound to nothing,
/// and one the binding moves to.
const BOUND: &str = "/ga";
const BELOW: &str = "/ga/inner";
const UNBOUND: &str = "/gb";
const OTHER: &str = "/gc";
const IOCTLS: &str = "/sys/kernel/debug/nvidia-double/ioctls";

/// Whether this kernel runs BPF LSM programs (`bpf` among the active LSMs):
/// securityfs's list where the kernel has it (Debian's), else
/// `lsm_list_modules(2)` (the debug kernel is built without securityfs),
/// where BPF is LSM id 109 (`include/uapi/linux/lsm.h`).
fn bpf_lsm() -> bool {
    if let Ok(l) = std::fs::read_to_string("/sys/kernel/security/lsm") {
        return l.trim().split(',').any(|x| x == "bpf");
    }
    let mut ids = [0u64; 32];
    let mut size = std::mem::size_of_val(&ids) as u32;
    // SAFETY: `ids` is writable for `size` bytes and `size` is a live u32
    // the kernel reads and updates; flags must be 0.
    let n = unsafe { libc::syscall(461, ids.as_mut_ptr(), &mut size as *mut u32, 0u32) };
    n > 0 && ids[..(n as usize).min(ids.len())].contains(&109)
}

fn vgpuctl(args: &[&str]) -> Result<(i32, String), String> {
    run(Command::new("/bin/vgpuctl").args(args))
}

fn double_ioctls() -> Result<u64, String> {
    let t = read_file(IOCTLS)?;
    t.trim()
        .parse()
        .map_err(|e| format!("{IOCTLS}: {t:?}: {e}"))
}

fn setup() -> Outcome {
    sh("modprobe nvidia gpus=1 vram0_mib=4096")?;
    make_uvm_nodes()?;
    sh("modprobe vgpu")?;
    for cg in [BOUND, BELOW, UNBOUND, OTHER] {
        std::fs::create_dir_all(format!("/sys/fs/cgroup{cg}")).map_err(|e| format!("{cg}: {e}"))?;
    }
    sh("echo 0 > /sys/class/vgpu/create; echo 0 > /sys/class/vgpu/vgpu0/gpu")?;
    sh("echo 1073741824 > /sys/class/vgpu/vgpu0/memory_limit")?;
    sh(&format!("echo {BOUND} > /sys/class/vgpu/vgpu0/cgroup"))?;
    Ok(())
}

fn load_reports_what_the_kernel_allows() -> Outcome {
    let cmdline = read_file("/proc/cmdline")?;
    // Debian's kernel has BPF LSM on by default, and the debug kernel is
    // built with it: the lanes that run them must not fall back to the
    // unguarded report.
    let must = ["vgpu_variant=stock", "vgpu_variant=debug"]
        .iter()
        .any(|v| cmdline.split_whitespace().any(|w| w == *v));
    ensure!(
        !must || bpf_lsm(),
        "this kernel should have BPF LSM active: {:?}",
        vgpuctl(&["guard", "status"])
    );
    let (code, out) = vgpuctl(&["guard", "load"])?;
    let (scode, status) = vgpuctl(&["guard", "status"])?;
    ensure!(scode == 0, "guard status: {scode}: {status}");
    if bpf_lsm() {
        ensure!(code == 0, "guard load: {code}: {out}");
        ensure!(
            status.contains("guard: loaded") && status.contains(&format!("guarded: {BOUND}")),
            "guard status after load: {status}"
        );
        // Loading again only re-syncs.
        let (code, out) = vgpuctl(&["guard", "load"])?;
        ensure!(
            code == 0 && out.contains("already attached"),
            "second load: {code}: {out}"
        );
    } else {
        // The fast kernel: no CONFIG_SECURITY. The loader says
        // so, with the reason, and fails with its own status.
        ensure!(
            code == 10 && out.contains("unavailable") && out.contains("CONFIG_SECURITY"),
            "guard load without BPF LSM: {code}: {out}"
        );
        ensure!(
            status.contains("guard: unavailable") && status.contains("why:"),
            "guard status without BPF LSM: {status}"
        );
        println!("# guard: unavailable on this kernel; a passed-in driver fd gets in here");
    }
    Ok(())
}

/// A SOCK_SEQPACKET pair: each send is one message with its own fds.
fn socketpair() -> Result<(RawFd, RawFd), String> {
    let mut sv = [0; 2];
    // SAFETY: `sv` is a writable array of two ints, as socketpair wants.
    let r = unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_SEQPACKET, 0, sv.as_mut_ptr()) };
    ensure!(r == 0, "socketpair: errno {}", errno());
    Ok((sv[0], sv[1]))
}

const CMSG_ROOM: usize = 64;

/// Sends one byte with `fd` attached.
fn send_fd(sock: RawFd, fd: RawFd) -> Result<(), String> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut room = [0u64; CMSG_ROOM / 8];
    // SAFETY: an all-zero msghdr is valid; the pointers set below live
    // across sendmsg, and the cmsg macros stay inside `room`, which is
    // larger than CMSG_SPACE(sizeof(int)).
    let r = unsafe {
        let mut m: libc::msghdr = std::mem::zeroed();
        m.msg_iov = &mut iov;
        m.msg_iovlen = 1;
        m.msg_control = room.as_mut_ptr().cast();
        m.msg_controllen = libc::CMSG_SPACE(4) as usize;
        let c = libc::CMSG_FIRSTHDR(&m);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(4) as usize;
        std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<i32>(), fd);
        libc::sendmsg(sock, &m, 0)
    };
    ensure!(r == 1, "sendmsg: errno {}", errno());
    Ok(())
}

/// Receives one message: the fd that came with it, if any, and whether
/// the kernel cut the control data (MSG_CTRUNC: a file was refused).
fn recv_fd(sock: RawFd) -> Result<(Option<RawFd>, bool), String> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut room = [0u64; CMSG_ROOM / 8];
    // SAFETY: as in `send_fd`; the cmsg walk reads only what recvmsg
    // wrote into `room`.
    unsafe {
        let mut m: libc::msghdr = std::mem::zeroed();
        m.msg_iov = &mut iov;
        m.msg_iovlen = 1;
        m.msg_control = room.as_mut_ptr().cast();
        m.msg_controllen = CMSG_ROOM;
        let r = libc::recvmsg(sock, &mut m, 0);
        ensure!(r == 1, "recvmsg: {r}, errno {}", errno());
        let trunc = m.msg_flags & libc::MSG_CTRUNC != 0;
        let c = libc::CMSG_FIRSTHDR(&m);
        if c.is_null() || (*c).cmsg_type != libc::SCM_RIGHTS {
            return Ok((None, trunc));
        }
        Ok((
            Some(std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<i32>())),
            trunc,
        ))
    }
}

/// Who answers the ctl file `fd`: "vgpu" or "driver" (it is put in place
/// of a Ctl's own file, since nvclient opens its files by path).
fn whose_fd(fd: RawFd) -> Result<&'static str, String> {
    let ctl = Ctl::open("/dev/null").map_err(|e| format!("{e:?}"))?;
    // SAFETY: both are open descriptors of this process; dup2 replaces
    // the Ctl's /dev/null with the received file.
    ensure!(
        unsafe { libc::dup2(fd, ctl.as_raw_fd()) } >= 0,
        "dup2: errno {}",
        errno()
    );
    let h = ctl
        .alloc_root_client()
        .map_err(|e| format!("client: {e:?}"))?;
    let _ = ctl.free(h, h, h);
    match h & 0xfff0_0000 {
        0xc1e0_0000 => Ok("vgpu"),
        0xc1d0_0000 => Ok("driver"),
        _ => Err(format!("client {h:#x} in neither range")),
    }
}

fn open_rw(path: &str) -> Result<File, String> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| format!("{path}: {e}"))
}

/// A host process (this one) sends its driver files, /dev/nvidiactl then
/// /dev/nvidia-uvm, to a process of `cg`; `guarded` says whether they
/// must be refused. Returns nothing; asserts in the receiver.
fn pass_driver_fds(cg: &str, guarded: bool) -> Outcome {
    let ctl = open_rw("/dev/nvidiactl")?;
    let uvm = open_rw("/dev/nvidia-uvm")?;
    let (tx, rx) = socketpair()?;
    send_fd(tx, ctl.as_raw_fd())?;
    send_fd(tx, uvm.as_raw_fd())?;
    let host_ctl = ctl.as_raw_fd();
    // SAFETY: getpid has no preconditions.
    let host = unsafe { libc::getpid() };
    let before = double_ioctls()?;
    let r = as_container(cg, move || {
        let (got_ctl, trunc_ctl) = recv_fd(rx)?;
        let (got_uvm, trunc_uvm) = recv_fd(rx)?;
        // pidfd_getfd of the host's ctl file: the same hook.
        // SAFETY: plain syscalls on integers.
        let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, host, 0) };
        ensure!(pidfd >= 0, "pidfd_open: errno {}", errno());
        // SAFETY: as above.
        let taken = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd, host_ctl, 0) };
        let taken_errno = errno();
        if guarded {
            ensure!(
                got_ctl.is_none() && trunc_ctl,
                "{cg} received the driver's ctl fd ({got_ctl:?}, ctrunc {trunc_ctl})"
            );
            ensure!(
                got_uvm.is_none() && trunc_uvm,
                "{cg} received the driver's UVM fd ({got_uvm:?}, ctrunc {trunc_uvm})"
            );
            ensure!(
                taken < 0 && taken_errno == libc::EPERM,
                "pidfd_getfd of the host's ctl file: {taken}, errno {taken_errno}, want EPERM"
            );
        } else {
            let fd = got_ctl.ok_or(format!("{cg} got no ctl fd (ctrunc {trunc_ctl})"))?;
            ensure!(got_uvm.is_some(), "{cg} got no UVM fd (ctrunc {trunc_uvm})");
            ensure!(taken >= 0, "pidfd_getfd: errno {taken_errno}");
            ensure!(
                whose_fd(fd)? == "driver",
                "the passed-in ctl fd is not the driver's"
            );
        }
        Ok(())
    });
    let after = double_ioctls()?;
    // SAFETY: closing the socket pair this function made.
    unsafe {
        libc::close(tx);
        libc::close(rx);
    }
    r?;
    if guarded {
        ensure!(
            after == before,
            "the driver saw {} ioctls from {cg}",
            after - before
        );
    } else {
        ensure!(
            after > before,
            "the passed-in fd's call did not reach the driver"
        );
    }
    Ok(())
}

fn a_passed_driver_fd_is_refused() -> Outcome {
    // Where the guard runs, refused to the bound cgroup and below it;
    // elsewhere this is the gap, and the files get in.
    pass_driver_fds(BOUND, bpf_lsm())?;
    pass_driver_fds(BELOW, bpf_lsm())
}

fn an_unbound_receiver_gets_the_drivers_fd() -> Outcome {
    pass_driver_fds(UNBOUND, false)
}

fn a_bound_receiver_gets_a_siblings_proxy_fd() -> Outcome {
    let (tx, rx) = socketpair()?;
    // One process of the container opens its /dev/nvidiactl (vgpu's proxy
    // file) and sends it; it may exit before the other receives.
    let code = in_child(move || {
        if join_cgroup(BOUND).is_err() {
            return 1;
        }
        let Ok(f) = open_rw("/dev/nvidiactl") else {
            return 2;
        };
        if send_fd(tx, f.as_raw_fd()).is_err() {
            return 3;
        }
        0
    })?;
    ensure!(code == 0, "sender: code {code}");
    let r = as_container(BOUND, move || {
        let (got, trunc) = recv_fd(rx)?;
        let fd = got.ok_or(format!("no fd (ctrunc {trunc})"))?;
        ensure!(whose_fd(fd)? == "vgpu", "the sibling's file is not vgpu's");
        Ok(())
    });
    // SAFETY: closing the socket pair made above.
    unsafe {
        libc::close(tx);
        libc::close(rx);
    }
    r
}

fn rebinding_through_vgpuctl_moves_the_guard() -> Outcome {
    // vgpuctl's bind (the same path as the CDI hook's and the DRA
    // plugin's) carries the guard's map with it.
    let (code, out) = vgpuctl(&["set", "0", "--cgroup", OTHER])?;
    ensure!(code == 0, "set --cgroup {OTHER}: {code}: {out}");
    let guarded = bpf_lsm();
    if guarded {
        let (_, status) = vgpuctl(&["guard", "status"])?;
        ensure!(
            status.contains(&format!("guarded: {OTHER}")) && !status.contains("UNGUARDED"),
            "status after rebinding: {status}"
        );
    }
    pass_driver_fds(OTHER, guarded)?;
    pass_driver_fds(BOUND, false)?;
    let (code, out) = vgpuctl(&["set", "0", "--cgroup", BOUND])?;
    ensure!(code == 0, "set --cgroup {BOUND}: {code}: {out}");
    pass_driver_fds(BOUND, guarded)
}

fn without_the_guard_the_fd_gets_in() -> Outcome {
    if bpf_lsm() {
        // The control: what the guard stops gets in once it is detached.
        let (code, out) = vgpuctl(&["guard", "unload"])?;
        ensure!(
            code == 0 && out.contains("guard: not loaded"),
            "unload: {code}: {out}"
        );
        pass_driver_fds(BOUND, false)?;
        let (code, out) = vgpuctl(&["guard", "load"])?;
        ensure!(code == 0, "reload: {code}: {out}");
        pass_driver_fds(BOUND, true)
    } else {
        // Nothing to detach; a sync has no guard to follow.
        let (code, out) = vgpuctl(&["guard", "sync"])?;
        ensure!(
            code == 10 && out.contains("not loaded"),
            "sync without the guard: {code}: {out}"
        );
        pass_driver_fds(BOUND, false)
    }
}

fn teardown() -> Outcome {
    if bpf_lsm() {
        let (code, out) = vgpuctl(&["guard", "unload"])?;
        ensure!(code == 0, "unload: {code}: {out}");
    }
    sh("echo > /sys/class/vgpu/vgpu0/cgroup; echo 0 > /sys/class/vgpu/remove")?;
    sh("rmmod vgpu")?;
    sh("rmmod nvidia")?;
    for cg in [BELOW, BOUND, UNBOUND, OTHER] {
        std::fs::remove_dir(format!("/sys/fs/cgroup{cg}")).map_err(|e| format!("{cg}: {e}"))?;
    }
    Ok(())
}
