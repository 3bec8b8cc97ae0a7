// SPDX-License-Identifier: GPL-2.0

//! vGPUs through sysfs: creation, settings, refusals, cgroup binding, and
//! forwarding of /dev/vgpuN to the backing GPU's node.

use crate::ensure;
use crate::sys::{
    become_nobody, delete_module, exists, in_child, is_chardev, join_cgroup, read_file, sh,
    write_file, Fd, Holder,
};
use crate::tap::{Outcome, Test};
use crate::tests;
use vgpu_logic::nv::ioctl::nv_iowr;

/// Tests of this suite, in order (later ones rely on earlier ones' state).
pub const TESTS: &[Test] = tests![
    setup,
    create_makes_node_and_dir,
    create_refusals,
    defaults,
    settings_round_trip,
    bad_writes_refused,
    unprivileged_cannot_write,
    unbound_vgpu_refuses_everyone,
    foreign_cgroup_refused,
    bound_cgroup_and_below_admitted,
    no_gpu_is_enodev,
    gpu_node_forwards_to_backing_gpu,
    busy_vgpu_cannot_change_or_go,
    remove_takes_node_and_dir,
    unload_with_vgpus_defined,
];

const CLASS: &str = "/sys/class/vgpu";

fn attr(id: u32, name: &str) -> String {
    format!("{CLASS}/vgpu{id}/{name}")
}

fn setup() -> Outcome {
    sh("modprobe nvidia gpus=2 vram0_mib=8192 vram1_mib=4096")?;
    sh("modprobe vgpu")?;
    for cg in ["/c1", "/c1/sub", "/c2"] {
        std::fs::create_dir_all(format!("/sys/fs/cgroup{cg}"))
            .map_err(|e| format!("mkdir {cg}: {e}"))?;
    }
    Ok(())
}

fn create_makes_node_and_dir() -> Outcome {
    write_file(&format!("{CLASS}/create"), "0\n").map_err(|e| format!("create 0: errno {e}"))?;
    ensure!(is_chardev("/dev/vgpu0"), "/dev/vgpu0 missing");
    for f in ["gpu", "memory_limit", "memory_used", "cgroup", "users"] {
        ensure!(exists(&attr(0, f)), "{} missing", attr(0, f));
    }
    write_file(&format!("{CLASS}/create"), "7").map_err(|e| format!("create 7: errno {e}"))?;
    ensure!(is_chardev("/dev/vgpu7"), "/dev/vgpu7 missing");
    Ok(())
}

fn create_refusals() -> Outcome {
    let c = format!("{CLASS}/create");
    let cases = [
        ("0", libc::EEXIST),
        ("255", libc::ERANGE),
        ("abc", libc::EINVAL),
        ("\n", libc::EINVAL),
        ("-1", libc::EINVAL),
        ("1 2", libc::EINVAL),
    ];
    for (input, want) in cases {
        let r = write_file(&c, input);
        ensure!(r == Err(want), "create {input:?}: {r:?}, want errno {want}");
    }
    let r = write_file(&format!("{CLASS}/remove"), "9");
    ensure!(r == Err(libc::ENOENT), "remove of a missing vGPU: {r:?}");
    Ok(())
}

fn defaults() -> Outcome {
    // The release the double claims (595.45.04 unless the VM was booted
    // with `scripts/vm.sh --release`), whose tables vgpu then runs with.
    let want = crate::sys::claimed_release();
    let release = read_file(&format!("{CLASS}/driver_version"))?;
    ensure!(release == want, "driver_version {release:?}, want {want:?}");
    ensure!(read_file(&attr(0, "gpu"))?.is_empty(), "gpu set by default");
    ensure!(
        read_file(&attr(0, "memory_limit"))? == "max",
        "memory_limit not max"
    );
    ensure!(
        read_file(&attr(0, "memory_used"))? == "0",
        "memory_used not 0"
    );
    ensure!(
        read_file(&attr(0, "cgroup"))?.is_empty(),
        "bound by default"
    );
    ensure!(read_file(&attr(0, "users"))? == "0", "users not 0");
    Ok(())
}

fn settings_round_trip() -> Outcome {
    for (f, v) in [
        ("gpu", "1"),
        ("memory_limit", "1073741824"),
        ("cgroup", "/c1"),
    ] {
        write_file(&attr(0, f), &format!("{v}\n")).map_err(|e| format!("{f}={v}: errno {e}"))?;
        let got = read_file(&attr(0, f))?;
        ensure!(got == v, "{f}: wrote {v}, read {got}");
    }
    write_file(&attr(0, "memory_limit"), "max")
        .map_err(|e| format!("memory_limit=max: errno {e}"))?;
    ensure!(
        read_file(&attr(0, "memory_limit"))? == "max",
        "memory_limit max"
    );
    Ok(())
}

fn bad_writes_refused() -> Outcome {
    let cases = [
        ("gpu", "5", libc::ENODEV),
        ("gpu", "x", libc::EINVAL),
        ("gpu", "300", libc::ERANGE),
        ("memory_limit", "-1", libc::EINVAL),
        ("memory_limit", "1GiB", libc::EINVAL),
        ("memory_limit", "99999999999999999999999", libc::ERANGE),
        ("cgroup", "c1", libc::EINVAL),
        ("cgroup", "/c1/../c2", libc::EINVAL),
        ("memory_used", "1", libc::EACCES),
        ("users", "1", libc::EACCES),
    ];
    for (f, v, want) in cases {
        let r = write_file(&attr(0, f), v);
        ensure!(r == Err(want), "{f}={v:?}: {r:?}, want errno {want}");
    }
    let r = write_file(&format!("{CLASS}/driver_version"), "580.142");
    ensure!(
        r == Err(libc::EACCES),
        "driver_version=\"580.142\": {r:?}, want errno {}",
        libc::EACCES
    );
    // Nothing changed.
    ensure!(
        read_file(&attr(0, "gpu"))? == "1",
        "gpu changed by a bad write"
    );
    ensure!(
        read_file(&attr(0, "cgroup"))? == "/c1",
        "cgroup changed by a bad write"
    );
    Ok(())
}

fn unprivileged_cannot_write() -> Outcome {
    let code = in_child(|| {
        if become_nobody().is_err() {
            return 100;
        }
        for f in [
            format!("{CLASS}/create"),
            attr(0, "memory_limit"),
            attr(0, "cgroup"),
        ] {
            if write_file(&f, "1") != Err(libc::EACCES) {
                return 1;
            }
        }
        // Reading is allowed.
        if read_file(&attr(0, "memory_limit")).is_err() {
            return 2;
        }
        0
    })?;
    ensure!(code == 0, "unprivileged child: code {code}");
    ensure!(
        read_file(&attr(0, "memory_limit"))? == "max",
        "limit changed"
    );
    Ok(())
}

fn open_in(cg: &str, node: &str) -> Result<i32, String> {
    let node = node.to_string();
    let cg = cg.to_string();
    in_child(move || {
        if join_cgroup(&cg).is_err() {
            return 100;
        }
        match Fd::open(&node) {
            Ok(_) => 0,
            Err(e) => e,
        }
    })
}

fn unbound_vgpu_refuses_everyone() -> Outcome {
    write_file(&attr(7, "gpu"), "0").map_err(|e| format!("gpu: errno {e}"))?;
    let r = open_in("/c1", "/dev/vgpu7")?;
    ensure!(r == libc::EACCES, "open of an unbound vGPU: {r}");
    let r = open_in("/", "/dev/vgpu7")?;
    ensure!(
        r == libc::EACCES,
        "open of an unbound vGPU from the root cgroup: {r}"
    );
    Ok(())
}

fn foreign_cgroup_refused() -> Outcome {
    for cg in ["/c2", "/"] {
        let r = open_in(cg, "/dev/vgpu0")?;
        ensure!(r == libc::EACCES, "open from {cg}: {r}, want EACCES");
    }
    Ok(())
}

fn bound_cgroup_and_below_admitted() -> Outcome {
    for cg in ["/c1", "/c1/sub"] {
        let r = open_in(cg, "/dev/vgpu0")?;
        ensure!(r == 0, "open from {cg}: errno {r}");
    }
    Ok(())
}

fn no_gpu_is_enodev() -> Outcome {
    write_file(&format!("{CLASS}/create"), "3").map_err(|e| format!("create 3: errno {e}"))?;
    write_file(&attr(3, "cgroup"), "/c1").map_err(|e| format!("cgroup: errno {e}"))?;
    let r = open_in("/c1", "/dev/vgpu3")?;
    ensure!(r == libc::ENODEV, "open of a vGPU with no GPU: {r}");
    write_file(&format!("{CLASS}/remove"), "3").map_err(|e| format!("remove 3: errno {e}"))?;
    Ok(())
}

/// Open files of each GPU node of the double (its debugfs view).
fn gpu_files() -> Result<Vec<i32>, String> {
    read_file("/sys/kernel/debug/nvidia-double/gpu_files")?
        .lines()
        .map(|l| {
            l.split(' ')
                .nth(1)
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| format!("gpu_files: {l:?}"))
        })
        .collect()
}

fn gpu_node_forwards_to_backing_gpu() -> Outcome {
    // vGPU 0 is backed by GPU 1: opening /dev/vgpu0 opens a private file of
    // the real /dev/nvidia1, and of no other GPU.
    let before = gpu_files()?;
    ensure!(before.len() >= 2, "the double has {} GPUs", before.len());
    let holder = Holder::spawn(|| {
        join_cgroup("/c1").is_ok() && Fd::open("/dev/vgpu0").map(std::mem::forget).is_ok()
    })?;
    let open = gpu_files();
    let ready = holder.ready;
    drop(holder);
    let (open, after) = (open?, gpu_files()?);
    ensure!(ready, "child could not open /dev/vgpu0");
    ensure!(
        open[1] == before[1] + 1 && open[0] == before[0],
        "GPU files {before:?} before, {open:?} with /dev/vgpu0 open: want GPU 1's one more"
    );
    ensure!(
        after == before,
        "GPU files {after:?} after the close, {before:?} before"
    );
    // Calls reach that file: REGISTER_FD registers it with a ctl file, and
    // the driver takes that once per file.
    let code = in_child(|| {
        // The real ctl file, opened before joining the container (an open
        // from inside it is vgpu's).
        let Ok(ctl) = Fd::open("/dev/nvidiactl") else {
            return 101;
        };
        if join_cgroup("/c1").is_err() {
            return 100;
        }
        let Ok(gpu) = Fd::open("/dev/vgpu0") else {
            return 101;
        };
        let mut p = ctl.0.to_ne_bytes();
        if gpu.ioctl(nv_iowr(0xc9, 4), p.as_mut_ptr()).is_err() {
            return 1;
        }
        if gpu.ioctl(nv_iowr(0xc9, 4), p.as_mut_ptr()) != Err(libc::EINVAL) {
            return 2;
        }
        0
    })?;
    ensure!(code == 0, "child: code {code}");
    Ok(())
}

fn busy_vgpu_cannot_change_or_go() -> Outcome {
    // Hold /dev/vgpu0 open in a child until it is killed.
    let holder = Holder::spawn(|| {
        join_cgroup("/c1").is_ok() && Fd::open("/dev/vgpu0").map(std::mem::forget).is_ok()
    })?;
    let result = (|| {
        ensure!(holder.ready, "child could not open /dev/vgpu0");
        ensure!(read_file(&attr(0, "users"))? == "1", "users is not 1");
        let e = write_file(&format!("{CLASS}/remove"), "0");
        ensure!(e == Err(libc::EBUSY), "remove while open: {e:?}");
        let e = write_file(&attr(0, "gpu"), "0");
        ensure!(e == Err(libc::EBUSY), "gpu change while open: {e:?}");
        // A module in use: delete_module's EWOULDBLOCK (EAGAIN).
        let e = delete_module("vgpu");
        ensure!(
            e == Err(libc::EAGAIN),
            "rmmod vgpu while a vGPU is open: {e:?}, want EAGAIN"
        );
        Ok(())
    })();
    drop(holder);
    result?;
    ensure!(
        read_file(&attr(0, "users"))? == "0",
        "users not back to 0 after the holder died"
    );
    Ok(())
}

fn remove_takes_node_and_dir() -> Outcome {
    write_file(&format!("{CLASS}/remove"), "7").map_err(|e| format!("remove 7: errno {e}"))?;
    ensure!(!exists("/dev/vgpu7"), "/dev/vgpu7 still there");
    ensure!(!exists(&format!("{CLASS}/vgpu7")), "vgpu7 dir still there");
    ensure!(exists("/dev/vgpu0"), "/dev/vgpu0 went too");
    Ok(())
}

fn unload_with_vgpus_defined() -> Outcome {
    sh("rmmod vgpu")?;
    ensure!(!exists("/dev/vgpu0"), "/dev/vgpu0 left after unload");
    ensure!(!exists(CLASS), "{CLASS} left after unload");
    sh("rmmod nvidia")?;
    Ok(())
}
