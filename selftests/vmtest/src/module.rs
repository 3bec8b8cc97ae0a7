// SPDX-License-Identifier: GPL-2.0

//! The module's life cycle: load, nodes and class, refusals, unload.

use crate::ensure;
use crate::session::Session;
use crate::sys::DOUBLE_RELEASES;
use crate::sys::{
    as_container, claimed_release, delete_module, errno, exists, finit_module, insmod_double,
    is_chardev, module_loaded, read_file, sh, write_file, Fd,
};
use crate::tap::{Outcome, Test};
use crate::tests;
use vgpu_logic::nv::ioctl::nv_iowr;
use vgpu_logic::nv::release;

/// Tests of this suite, in order (later ones rely on earlier ones' state).
pub const TESTS: &[Test] = tests![
    load_refused_without_driver,
    load_refused_on_another_release,
    loads_with_the_tables_of_every_release,
    modprobe_loads,
    ctl_node_is_chardev,
    class_dir_exists,
    unknown_escape_is_einval,
    bad_size_is_einval,
    ioctl_forwarded_to_driver,
    driver_pinned_while_proxy_open,
    unload_refused_while_open,
    unload_removes_node_and_class,
    insmod_path_form_loads,
    load_unload_cycles,
    unknown_calls_forwarded_on_request,
];

const CTL: &str = "/dev/vgpuctl";

fn load_refused_without_driver() -> Outcome {
    ensure!(!module_loaded("nvidia"), "nvidia already loaded");
    // vgpu.ko needs the driver's kernel-client interface: without the
    // driver, insmod cannot resolve it.
    let path = sh("modinfo -F filename vgpu")?;
    let r = sh(&format!("insmod {}", path.trim()));
    ensure!(r.is_err(), "vgpu loaded without the NVIDIA driver");
    ensure!(
        !module_loaded("vgpu"),
        "vgpu in /proc/modules after a failed load"
    );
    ensure!(!exists(CTL), "{CTL} left behind by a failed load");
    ensure!(
        !exists("/sys/class/vgpu"),
        "/sys/class/vgpu left behind by a failed load"
    );
    Ok(())
}

/// The newest release the double can claim that vgpu has no tables for,
/// with its index (the double's `release` parameter).
fn unsupported_release() -> Result<(usize, &'static str), String> {
    DOUBLE_RELEASES
        .iter()
        .enumerate()
        .find(|(_, r)| release::find(r.as_bytes()).is_none())
        .map(|(i, r)| (i, *r))
        .ok_or_else(|| "vgpu has tables for every release the double claims".to_string())
}

fn load_refused_on_another_release() -> Outcome {
    // The double claims a release vgpu has no tables for (560.35.05, a
    // short-lived branch's): vgpu must not load, and must say why, naming
    // the releases it has tables for.
    let (idx, name) = unsupported_release()?;
    insmod_double(&format!("release={idx}"))?;
    let path = sh("modinfo -F filename vgpu")?;
    let r = finit_module(path.trim(), "");
    let log = sh("dmesg")?;
    let unloaded = sh("rmmod nvidia");
    ensure!(
        r == Err(libc::ENODEV),
        "vgpu on driver {name}: got {r:?}, want ENODEV"
    );
    // Each table's release, then the others of its branch with its ABI.
    let supported: Vec<String> = release::RELEASES
        .iter()
        .map(|r| {
            let also: Vec<&str> = r
                .also
                .iter()
                .filter_map(|a| std::str::from_utf8(&a[..a.len() - 1]).ok())
                .collect();
            if also.is_empty() {
                r.name.to_string()
            } else {
                format!("{} ({})", r.name, also.join(", "))
            }
        })
        .collect();
    let want = format!(
        "NVIDIA driver {name} is not supported: vgpu has ABI tables for {} only",
        supported.join(", ")
    );
    ensure!(log.contains(&want), "no line {want:?} in the kernel log");
    ensure!(!module_loaded("vgpu"), "vgpu in /proc/modules");
    ensure!(!exists(CTL), "{CTL} left behind by a refused load");
    ensure!(
        !exists("/sys/class/vgpu"),
        "/sys/class/vgpu left behind by a refused load"
    );
    unloaded?;
    Ok(())
}

fn loads_with_the_tables_of_every_release() -> Outcome {
    // For each release vgpu has tables for but the newest, the double
    // claims it: vgpu asks the kernel-client table under 595.45.04's name,
    // is refused, and asks again under the release's own, whose tables it
    // then runs with. A client sequence through vgpu, speaking that
    // release's ABI, works: allocate, charge, free, a control of the
    // release's own table (GET_GID_INFO, on kernel copies).
    // Then a release of the 580 branch that speaks 580.142's ABI (its
    // `also`), and one of the 535 branch (bookworm's) that speaks
    // 535.288.01's: vgpu runs on each with those tables, and says so.
    for name in release::RELEASES
        .iter()
        .skip(1)
        .map(|r| r.name)
        .chain(["580.105.08", "535.261.03"])
    {
        loads_with_the_tables_of(name).map_err(|e| format!("{name}: {e}"))?;
    }
    Ok(())
}

fn loads_with_the_tables_of(name: &str) -> Outcome {
    let known = release::lookup(name.as_bytes()).ok_or("vgpu has no tables for it")?;
    let tables = release::RELEASES[known.table].name;
    let line = if tables == name {
        format!("NVIDIA driver {name}: using vgpu's tables for it")
    } else {
        format!("NVIDIA driver {name}: using vgpu's tables for {tables} (the same ABI)")
    };
    let idx = DOUBLE_RELEASES
        .iter()
        .position(|r| *r == name)
        .ok_or("the double cannot claim it")?;
    insmod_double(&format!("release={idx}"))?;
    let spoke = nvclient::speaks().name;
    nvclient::speak_release(name);
    let r = (|| -> Outcome {
        sh("modprobe vgpu")?;
        let log = sh("dmesg")?;
        ensure!(log.contains(&line), "no line {line:?} in the kernel log");
        let shown = read_file("/sys/class/vgpu/driver_version")?;
        ensure!(shown == name, "driver_version {shown:?}");
        std::fs::create_dir_all("/sys/fs/cgroup/rel").map_err(|e| format!("mkdir: {e}"))?;
        write_file("/sys/class/vgpu/create", "0").map_err(|e| format!("create: {e}"))?;
        for (f, v) in [
            ("gpu", "0"),
            ("memory_limit", "1073741824"),
            ("cgroup", "/rel"),
        ] {
            write_file(&format!("/sys/class/vgpu/vgpu0/{f}"), v)
                .map_err(|e| format!("{f}: {e}"))?;
        }
        let r = as_container("/rel", || {
            let s = Session::open("/dev/vgpuctl", "/dev/vgpu0")?;
            let m = s
                .ctl
                .alloc_vram(s.client, s.device, 0, 256 << 20)
                .map_err(|e| format!("alloc: {e:?}"))?;
            let used = read_file("/sys/class/vgpu/vgpu0/memory_used")?;
            ensure!(used == (256u64 << 20).to_string(), "memory_used {used}");
            let over = s.ctl.alloc_vram(s.client, s.device, 0, 1 << 30);
            ensure!(over.is_err(), "an allocation past the ceiling: {over:?}");
            let uuid = s
                .ctl
                .gpu_uuid_text(s.client, s.subdevice)
                .map_err(|e| format!("GID: {e:?}"))?;
            ensure!(uuid.starts_with("GPU-"), "GID {uuid:?}");
            s.ctl
                .free(s.client, s.device, m.handle)
                .map_err(|e| format!("free: {e:?}"))?;
            Ok(())
        });
        let _ = write_file("/sys/class/vgpu/remove", "0");
        r
    })();
    nvclient::speak_release(spoke);
    let _ = sh("rmmod vgpu");
    let unloaded = sh("rmmod nvidia");
    r?;
    unloaded?;
    Ok(())
}

fn modprobe_loads() -> Outcome {
    // modprobe pulls in the driver vgpu depends on.
    sh("modprobe vgpu")?;
    ensure!(module_loaded("nvidia"), "modprobe vgpu did not load nvidia");
    ensure!(
        module_loaded("vgpu"),
        "vgpu not in /proc/modules after modprobe"
    );
    Ok(())
}

fn ctl_node_is_chardev() -> Outcome {
    ensure!(is_chardev(CTL), "{CTL} missing or not a char device");
    Ok(())
}

fn class_dir_exists() -> Outcome {
    ensure!(exists("/sys/class/vgpu"), "/sys/class/vgpu missing");
    Ok(())
}

fn unknown_escape_is_einval() -> Outcome {
    let fd = Fd::open(CTL).map_err(|e| format!("open {CTL}: errno {e}"))?;
    let mut buf = [0u8; 64];
    let r = fd.ioctl(nv_iowr(0x01, 8), buf.as_mut_ptr());
    ensure!(r == Err(libc::EINVAL), "nr 0x01: got {r:?}, want EINVAL");
    Ok(())
}

fn bad_size_is_einval() -> Outcome {
    let fd = Fd::open(CTL).map_err(|e| format!("open {CTL}: errno {e}"))?;
    let mut buf = [0u8; 64];
    // RM_CONTROL takes exactly 32 bytes.
    let r = fd.ioctl(nv_iowr(0x2a, 36), buf.as_mut_ptr());
    ensure!(
        r == Err(libc::EINVAL),
        "RM_CONTROL size 36: got {r:?}, want EINVAL"
    );
    Ok(())
}

/// CHECK_VERSION_STR in query mode, through `node`: the version string.
fn query_version(node: &str) -> Result<String, String> {
    let fd = Fd::open(node).map_err(|e| format!("open {node}: errno {e}"))?;
    let mut buf = [0u8; 72];
    buf[0] = b'2';
    fd.ioctl(nv_iowr(0xd2, 72), buf.as_mut_ptr())
        .map_err(|e| format!("{node}: CHECK_VERSION_STR errno {e}"))?;
    let s = &buf[8..];
    let n = s.iter().position(|&b| b == 0).unwrap_or(s.len());
    Ok(String::from_utf8_lossy(&s[..n]).into_owned())
}

fn ioctl_forwarded_to_driver() -> Outcome {
    let direct = query_version("/dev/nvidiactl")?;
    let proxied = query_version(CTL)?;
    let claimed = claimed_release();
    ensure!(
        direct == claimed,
        "driver double says {direct:?}, want {claimed:?}"
    );
    ensure!(
        proxied == direct,
        "through {CTL}: {proxied:?}, directly: {direct:?}"
    );
    Ok(())
}

/// The driver module's reference count.
fn nvidia_refcnt() -> Result<u64, String> {
    let s = std::fs::read_to_string("/sys/module/nvidia/refcnt")
        .map_err(|e| format!("/sys/module/nvidia/refcnt: {e}"))?;
    s.trim()
        .parse()
        .map_err(|_| format!("/sys/module/nvidia/refcnt: {s:?}"))
}

fn driver_pinned_while_proxy_open() -> Outcome {
    // vgpu's symbol dependency alone keeps `rmmod nvidia` out while vgpu is
    // loaded; what an open proxy file adds is its private file of the
    // driver, which holds one more reference on the driver's module until
    // the proxy file is closed.
    let before = nvidia_refcnt()?;
    // What one open file of the driver holds on its module.
    let direct = Fd::open("/dev/nvidiactl").map_err(|e| format!("open nvidiactl: errno {e}"))?;
    let per_file = nvidia_refcnt()?.saturating_sub(before);
    drop(direct);
    ensure!(
        per_file > 0,
        "an open driver file holds no module reference"
    );
    let fd = Fd::open(CTL).map_err(|e| format!("open {CTL}: errno {e}"))?;
    let open = nvidia_refcnt()?;
    let r = sh("rmmod nvidia");
    drop(fd);
    let after = nvidia_refcnt()?;
    ensure!(r.is_err(), "rmmod nvidia succeeded under an open proxy");
    ensure!(
        open == before + per_file,
        "driver refcount {before} before the open, {open} with {CTL} open (want {} more, as one driver file)",
        per_file
    );
    ensure!(
        after == before,
        "driver refcount {after} after the close, {before} before the open"
    );
    Ok(())
}

fn unload_refused_while_open() -> Outcome {
    let fd = Fd::open(CTL).map_err(|e| format!("open {CTL}: errno {e}"))?;
    let r = delete_module("vgpu");
    ensure!(
        r == Err(libc::EAGAIN),
        "rmmod vgpu while {CTL} was open: {r:?}, want EAGAIN"
    );
    ensure!(module_loaded("vgpu"), "module gone while a file was open");
    drop(fd);
    Ok(())
}

fn unload_removes_node_and_class() -> Outcome {
    sh("rmmod vgpu")?;
    ensure!(!module_loaded("vgpu"), "still loaded after rmmod");
    ensure!(module_loaded("nvidia"), "the driver went with vgpu");
    ensure!(!exists(CTL), "{CTL} still present after unload");
    ensure!(
        !exists("/sys/class/vgpu"),
        "/sys/class/vgpu still present after unload"
    );
    let e = Fd::open(CTL).err();
    ensure!(
        e == Some(libc::ENOENT),
        "open after unload: {e:?} (errno {})",
        errno()
    );
    Ok(())
}

fn insmod_path_form_loads() -> Outcome {
    ensure!(module_loaded("nvidia"), "the driver should still be loaded");
    let path = sh("modinfo -F filename vgpu")?;
    sh(&format!("insmod {}", path.trim()))?;
    ensure!(is_chardev(CTL), "{CTL} missing after insmod");
    sh("rmmod vgpu")?;
    Ok(())
}

fn load_unload_cycles() -> Outcome {
    for i in 0..20 {
        sh("modprobe vgpu").map_err(|e| format!("cycle {i}: {e}"))?;
        let fd = Fd::open(CTL).map_err(|e| format!("cycle {i}: open errno {e}"))?;
        drop(fd);
        sh("modprobe -r vgpu").map_err(|e| format!("cycle {i}: {e}"))?;
    }
    ensure!(!module_loaded("vgpu"), "loaded after the last cycle");
    // `modprobe -r` also removes the driver once nothing uses it.
    ensure!(
        !module_loaded("nvidia"),
        "modprobe -r left the unused driver loaded"
    );
    Ok(())
}

fn unknown_calls_forwarded_on_request() -> Outcome {
    // unknown_calls=1: a number vgpu's tables do not know is forwarded as
    // written (the double answers it) and logged, not counted; what the
    // tables deny stays refused and counted.
    use nvclient::abi::{ctrl, status::NV_ERR_NOT_SUPPORTED};
    sh("modprobe nvidia")?;
    sh("modprobe vgpu unknown_calls=1")?;
    std::fs::create_dir_all("/sys/fs/cgroup/mx").map_err(|e| format!("mkdir: {e}"))?;
    let w = |f: &str, v: &str| crate::sys::write_file(f, v).map_err(|e| format!("{f}: errno {e}"));
    w("/sys/class/vgpu/create", "0")?;
    w("/sys/class/vgpu/vgpu0/gpu", "0")?;
    w("/sys/class/vgpu/vgpu0/cgroup", "/mx")?;
    let r = crate::sys::as_container("/mx", || {
        let s = crate::session::Session::vgpu(0)?;
        let mut p = [0u8; 4096];
        let r = s
            .ctl
            .control(s.client, s.subdevice, 0x2080_0deb, &mut p[..16]);
        ensure!(
            r == Err(nvclient::Error::Rm(NV_ERR_NOT_SUPPORTED)),
            "unknown control, forwarded: {r:?}"
        );
        let r = s.ctl.control(
            s.client,
            s.subdevice,
            ctrl::NV2080_CTRL_CMD_FB_GET_FB_REGION_INFO,
            &mut p,
        );
        ensure!(
            r == Err(nvclient::Error::Rm(NV_ERR_NOT_SUPPORTED)),
            "FB_GET_FB_REGION_INFO: {r:?}"
        );
        Ok(())
    });
    let denied = crate::memory::calls_denied(0);
    let log = sh("dmesg")?;
    w("/sys/class/vgpu/remove", "0")?;
    sh("rmmod vgpu")?;
    sh("rmmod nvidia")?;
    r?;
    let denied = denied?;
    ensure!(
        denied == 1,
        "calls_denied {denied}: want 1 (the denied row, not the forwarded unknown one)"
    );
    ensure!(
        log.contains(&format!(
            "control 0x20800deb is not in vgpu's tables for driver {}: forwarded (unknown_calls=1)",
            claimed_release()
        )),
        "the forwarded control is not named in the kernel log"
    );
    Ok(())
}
