// SPDX-License-Identifier: GPL-2.0

//! The whole CUDA-like sequence of the client library, run once directly
//! against the driver double and once as a container sees the GPU through
//! vgpu (only /dev/vgpuctl and /dev/vgpu0): client, device, memory, mmap by
//! the fresh-fd protocol (the fds name proxy files), TSG, channel, doorbell
//! work, events by poll, free, close. Both runs must give the same results.

use crate::ensure;
use crate::session::Session;
use crate::sys::{in_child, join_cgroup, read_file, sh, write_file};
use crate::tap::{Outcome, Test};
use nvclient::abi::class;
use std::time::{Duration, Instant};

/// Tests of this suite.
pub const TESTS: &[Test] = &[
    Test {
        name: "setup",
        run: setup,
    },
    Test {
        name: "sequence_directly",
        run: directly,
    },
    Test {
        name: "sequence_through_vgpu",
        run: through_vgpu,
    },
    Test {
        name: "teardown",
        run: teardown,
    },
];

fn setup() -> Outcome {
    sh("modprobe nvidia gpus=1 vram0_mib=8192")?;
    sh("modprobe vgpu")?;
    std::fs::create_dir_all("/sys/fs/cgroup/pa").map_err(|e| format!("mkdir: {e}"))?;
    write_file("/sys/class/vgpu/create", "0").map_err(|e| format!("create: {e}"))?;
    write_file("/sys/class/vgpu/vgpu0/gpu", "0").map_err(|e| format!("gpu: {e}"))?;
    write_file("/sys/class/vgpu/vgpu0/memory_limit", "1073741824")
        .map_err(|e| format!("limit: {e}"))?;
    write_file("/sys/class/vgpu/vgpu0/cgroup", "/pa").map_err(|e| format!("cgroup: {e}"))?;
    Ok(())
}

/// The sequence; returns a summary to compare between the two runs.
fn sequence(ctl: &str, gpu: &str) -> Result<String, String> {
    let s = Session::open(ctl, gpu)?;
    let e = |what: &'static str| move |err: nvclient::Error| format!("{what}: {err:?}");
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
    // A TSG with a channel whose ring is system memory mapped through a
    // fresh ctl fd, and a doorbell page mapped through a fresh GPU-node fd.
    let tsg = s
        .ctl
        .alloc_tsg(s.client, s.device, 0, nvclient::tsg_params(0))
        .map_err(e("tsg"))?;
    let ch = s
        .ctl
        .alloc_work_channel(s.client, s.device, tsg, class::AMPERE_CHANNEL_GPFIFO_A, 16)
        .map_err(e("channel"))?;
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
        ch.ring.submit(&[1_000_000, 1_000_000, 1_000_000]) == 3,
        "submit"
    );
    ensure!(bell.ring(ch.token), "doorbell");
    let t0 = Instant::now();
    while ch.ring.completed() < 3 {
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
    s.ctl
        .free(s.client, s.client, s.client)
        .map_err(e("free client"))?;
    Ok(format!(
        "vram {} mapped; 3 items done; event seen",
        vram.size
    ))
}

fn directly() -> Outcome {
    let out = sequence("/dev/nvidiactl", "/dev/nvidia0")?;
    println!("# proxy: directly: {out}");
    Ok(())
}

fn through_vgpu() -> Outcome {
    let direct = sequence("/dev/nvidiactl", "/dev/nvidia0")?;
    let code = in_child(move || {
        if join_cgroup("/pa").is_err() {
            return 100;
        }
        match sequence("/dev/vgpuctl", "/dev/vgpu0") {
            Ok(out) if out == direct => {
                println!("# proxy: through vgpu: {out}");
                0
            }
            Ok(out) => {
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

fn teardown() -> Outcome {
    write_file("/sys/class/vgpu/remove", "0").map_err(|e| format!("remove: {e}"))?;
    sh("rmmod vgpu")?;
    sh("rmmod nvidia")?;
    Ok(())
}
