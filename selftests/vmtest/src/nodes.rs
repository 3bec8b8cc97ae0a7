// SPDX-License-Identifier: GPL-2.0

//! NVIDIA's own device nodes with vgpu loaded (issue 33): an open from a
//! container bound to a vGPU is vgpu's proxy file, whatever path names the
//! device; every other open is the driver's. A file is told apart by the
//! client handle it gets: vgpu picks `0xc1eX_XXXX`, the double
//! `0xc1dX_XXXX`.

use crate::ensure;
use crate::sys::{
    as_container, in_child, join_cgroup, make_uvm_nodes, module_loaded, sh, write_file, Holder,
    Shared,
};
use crate::tap::{Outcome, Test};
use crate::tests;
use nvclient::{Ctl, Uvm};

/// Tests of this suite, in order (later ones rely on earlier ones' state).
pub const TESTS: &[Test] = tests![
    setup,
    host_opens_are_the_drivers,
    container_opens_are_vgpus,
    every_path_to_the_device_is_vgpus,
    a_moved_process_keeps_its_file,
    binding_races_with_opens,
    unload_waits_for_proxied_files_and_restores_the_driver,
];

/// The container bound to vGPU 0 (on GPU 0), and one bound to nothing.
const BOUND: &str = "/na";
const UNBOUND: &str = "/nb";

fn setup() -> Outcome {
    sh("modprobe nvidia gpus=2 vram0_mib=4096")?;
    make_uvm_nodes()?;
    sh("modprobe vgpu")?;
    for cg in [BOUND, UNBOUND] {
        std::fs::create_dir_all(format!("/sys/fs/cgroup{cg}")).map_err(|e| format!("{cg}: {e}"))?;
    }
    sh("echo 0 > /sys/class/vgpu/create; echo 0 > /sys/class/vgpu/vgpu0/gpu")?;
    sh("echo 1073741824 > /sys/class/vgpu/vgpu0/memory_limit")?;
    sh(&format!("echo {BOUND} > /sys/class/vgpu/vgpu0/cgroup"))?;
    Ok(())
}

/// Who answers a ctl file: "vgpu" or "driver", by the range of the client
/// handle RM or vgpu picks for it.
fn whose(ctl: &Ctl) -> Result<&'static str, String> {
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

/// A host process (in no bound cgroup) holding `/dev/nvidiactl` open: the
/// driver's own file, for tests that reach it through `/proc/PID/fd`.
pub(crate) fn host_holds_nvidiactl() -> Result<Holder, String> {
    let holder = Holder::spawn(|| {
        let Ok(ctl) = Ctl::open("/dev/nvidiactl") else {
            return false;
        };
        std::mem::forget(ctl);
        true
    })?;
    ensure!(
        holder.ready,
        "the host holder could not open /dev/nvidiactl"
    );
    Ok(holder)
}

pub(crate) fn whose_path(path: &str) -> Result<&'static str, String> {
    let ctl = Ctl::open(path).map_err(|e| format!("open {path}: {e:?}"))?;
    whose(&ctl)
}

fn host_opens_are_the_drivers() -> Outcome {
    // The module lists what it took over.
    let listed = crate::sys::read_file("/sys/class/vgpu/driver_nodes")?;
    let uvm = crate::sys::char_major("nvidia-uvm").ok_or("no nvidia-uvm major")?;
    for want in [
        "195:255".to_string(),
        "195:0".to_string(),
        format!("{uvm}:0"),
    ] {
        ensure!(
            listed.lines().any(|l| l == want),
            "driver_nodes {listed:?} lacks {want}"
        );
    }
    ensure!(
        whose_path("/dev/nvidiactl")? == "driver",
        "a host open of /dev/nvidiactl is not the driver's"
    );
    // And from a cgroup that is bound to nothing.
    as_container(UNBOUND, || {
        ensure!(
            whose_path("/dev/nvidiactl")? == "driver",
            "an unbound container's open is not the driver's"
        );
        Ok(())
    })
}

fn container_opens_are_vgpus() -> Outcome {
    as_container(BOUND, || {
        ensure!(
            whose_path("/dev/nvidiactl")? == "vgpu",
            "the bound container's /dev/nvidiactl is not vgpu's"
        );
        // Its vGPU's GPU: vgpu's GPU node (a device under a vgpu client
        // works; FB info shows the ceiling, not the GPU's 4 GiB).
        let ctl = Ctl::open("/dev/nvidiactl").map_err(|e| format!("{e:?}"))?;
        let gpu = nvclient::Gpu::open("/dev/nvidia0").map_err(|e| format!("nvidia0: {e:?}"))?;
        let c = ctl.alloc_root_client().map_err(|e| format!("{e:?}"))?;
        let d = ctl
            .alloc_device(c, 0, 0)
            .map_err(|e| format!("device: {e:?}"))?;
        let s = ctl
            .alloc_subdevice(c, d, 0, 0)
            .map_err(|e| format!("subdevice: {e:?}"))?;
        let info = ctl
            .fb_get_info_v2(c, s, &[nvclient::abi::fb_info::RAM_SIZE])
            .map_err(|e| format!("FB info: {e:?}"))?;
        ensure!(
            u64::from(info[0].data) << 10 == 1 << 30,
            "RAM_SIZE through /dev/nvidia0: {} KiB",
            info[0].data
        );
        drop(gpu);
        // GPU 1 has no vGPU of this container; the UVM tools node is not
        // proxied.
        for path in ["/dev/nvidia1", "/dev/nvidia-uvm-tools"] {
            let r = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(path);
            ensure!(
                r.as_ref().err().and_then(|e| e.raw_os_error()) == Some(libc::EACCES),
                "{path} from the container: {r:?}, want EACCES"
            );
        }
        // nvidia-uvm is vgpu's UVM node (it refuses the tools commands
        // the driver has: a UVM_TOOLS number from vgpu is ENOSYS unknown,
        // so check the node by what it is: a VA space works).
        let u = Uvm::open("/dev/nvidia-uvm").map_err(|e| format!("nvidia-uvm: {e:?}"))?;
        u.initialize(0)
            .map_err(|e| format!("UVM_INITIALIZE: {e:?}"))?;
        Ok(())
    })?;
    // vgpu counted the UVM open as its own: the vGPU has a user.
    Ok(())
}

fn every_path_to_the_device_is_vgpus() -> Outcome {
    // A host process holds the driver's control file open: its
    // /proc/PID/fd link names the device.
    let holder = host_holds_nvidiactl()?;
    let pid = holder.pid();
    let fds = sh(&format!("ls /proc/{pid}/fd"))?;
    let fd = fds
        .split_whitespace()
        .find(|f| {
            std::fs::read_link(format!("/proc/{pid}/fd/{f}"))
                .is_ok_and(|p| p.to_string_lossy() == "/dev/nvidiactl")
        })
        .ok_or("the holder's fd of /dev/nvidiactl")?
        .to_string();
    let r = as_container(BOUND, move || {
        // A node the container makes itself, a link to it, and a reopen
        // of the host process's file.
        sh("mknod /tmp/ctl-copy c 195 255 && ln -sf /tmp/ctl-copy /tmp/char-195-255")?;
        for path in [
            "/tmp/ctl-copy".to_string(),
            "/tmp/char-195-255".to_string(),
            format!("/proc/{pid}/fd/{fd}"),
        ] {
            ensure!(
                whose_path(&path)? == "vgpu",
                "{path} from the container is not vgpu's"
            );
        }
        sh("mknod /tmp/gpu1-copy c 195 1")?;
        let r = std::fs::File::open("/tmp/gpu1-copy");
        ensure!(
            r.as_ref().err().and_then(|e| e.raw_os_error()) == Some(libc::EACCES),
            "a node of GPU 1 made in the container: {r:?}, want EACCES"
        );
        Ok(())
    });
    let _ = sh("rm -f /tmp/ctl-copy /tmp/char-195-255 /tmp/gpu1-copy");
    drop(holder);
    r
}

fn a_moved_process_keeps_its_file() -> Outcome {
    let code = in_child(|| {
        // Opened on the host, used in the container: still the driver's.
        let Ok(host) = Ctl::open("/dev/nvidiactl") else {
            return 10;
        };
        if join_cgroup(BOUND).is_err() {
            return 11;
        }
        if whose(&host).ok() != Some("driver") {
            return 12;
        }
        // Opened in the container, used after leaving it: still vgpu's.
        let Ok(mine) = Ctl::open("/dev/nvidiactl") else {
            return 13;
        };
        if join_cgroup(UNBOUND).is_err() {
            return 14;
        }
        if whose(&mine).ok() != Some("vgpu") {
            return 15;
        }
        0
    })?;
    ensure!(code == 0, "child: code {code}");
    Ok(())
}

fn binding_races_with_opens() -> Outcome {
    // A child in /na opens and classifies /dev/nvidiactl as fast as it can
    // while the vGPU's cgroup is bound and unbound under it. Every open is
    // one whole file of one side (counted), never a failed open or a mix;
    // and once the binding settles, opens follow it.
    let page = Shared::new()?;
    let pg = &page;
    let opener = crate::sys::Looper::spawn(move || {
        join_cgroup(BOUND).map_err(|e| format!("join: errno {e}"))?;
        Ok(move || match whose_path("/dev/nvidiactl") {
            Ok("vgpu") => pg.or(0, 1),
            Ok(_) => pg.or(0, 2),
            Err(_) => pg.or(0, 4),
        })
    })?;
    // Flips for at least 2 s, until the opener has seen both sides (at
    // most 20 s): each open takes far longer than a flip.
    let t0 = std::time::Instant::now();
    let mut flips = 0u32;
    while t0.elapsed() < std::time::Duration::from_secs(2)
        || (page.get(0) & 3 != 3 && t0.elapsed() < std::time::Duration::from_secs(20))
    {
        write_file("/sys/class/vgpu/vgpu0/cgroup", "\n")
            .map_err(|e| format!("unbind: errno {e}"))?;
        std::thread::sleep(std::time::Duration::from_micros(
            500 + u64::from(flips % 7) * 300,
        ));
        write_file("/sys/class/vgpu/vgpu0/cgroup", BOUND)
            .map_err(|e| format!("bind: errno {e}"))?;
        std::thread::sleep(std::time::Duration::from_micros(
            500 + u64::from(flips % 5) * 300,
        ));
        flips += 1;
    }
    drop(opener);
    let seen = page.get(0);
    println!(
        "# nodes: {flips} binding flips; opens seen: vgpu {}, driver {}, failed {}",
        seen & 1 != 0,
        seen & 2 != 0,
        seen & 4 != 0
    );
    ensure!(seen & 4 == 0, "an open failed or was neither side's");
    // Both sides seen: the opens raced with the flips.
    ensure!(
        seen & 3 == 3,
        "the opens did not overlap the flips ({seen:#x})"
    );
    // Settled: bound.
    as_container(BOUND, || {
        ensure!(whose_path("/dev/nvidiactl")? == "vgpu", "after the race");
        Ok(())
    })
}

fn unload_waits_for_proxied_files_and_restores_the_driver() -> Outcome {
    // A container's proxied /dev/nvidiactl pins vgpu.
    let holder = Holder::spawn(|| {
        if join_cgroup(BOUND).is_err() {
            return false;
        }
        let Ok(ctl) = Ctl::open("/dev/nvidiactl") else {
            return false;
        };
        std::mem::forget(ctl);
        true
    })?;
    ensure!(holder.ready, "the container could not open /dev/nvidiactl");
    let r = sh("rmmod vgpu");
    ensure!(
        r.is_err() && module_loaded("vgpu"),
        "vgpu unloaded under a proxied /dev/nvidiactl: {r:?}"
    );
    // The driver cannot go from under vgpu either.
    ensure!(
        sh("rmmod nvidia").is_err() && module_loaded("nvidia"),
        "the driver unloaded under vgpu"
    );
    drop(holder);
    sh("echo > /sys/class/vgpu/vgpu0/cgroup; echo 0 > /sys/class/vgpu/remove")?;
    sh("rmmod vgpu")?;
    // The driver's own open is back: the same container's open is the
    // driver's, and a client works.
    as_container(BOUND, || {
        ensure!(
            whose_path("/dev/nvidiactl")? == "driver",
            "after vgpu's unload the open is not the driver's"
        );
        let u = Uvm::open("/dev/nvidia-uvm");
        ensure!(u.is_ok(), "nvidia-uvm after vgpu's unload: {:?}", u.err());
        Ok(())
    })?;
    sh("rmmod nvidia")?;
    Ok(())
}
