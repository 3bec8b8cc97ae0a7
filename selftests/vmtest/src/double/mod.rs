// SPDX-License-Identifier: GPL-2.0

//! The NVIDIA driver double (`selftests/nvidia`, module `nvidia`), driven
//! through nvclient the way libcuda drives the real driver: nodes, version
//! and card escapes, RM objects and VRAM accounting, controls, mappings,
//! events, refusals, killed processes, racing threads, and the simulated
//! engine (doorbell protocol, scheduling, fairness).
//!
//! Every test starts from a freshly loaded double (two GPUs, 8 GiB and
//! 4 GiB) and leaves every file closed, so the next reload proves nothing
//! leaked a module reference.

use std::os::unix::fs::MetadataExt;
use std::thread::sleep;
use std::time::{Duration, Instant};

use nvclient::abi::{self, class, ctrl, fb_info, heap, status::*, Handle, Wire};
use nvclient::ioctl::Escape;
use nvclient::{request, Ctl, Error, Gpu, Node, VersionCheck, WorkChannel};

use crate::ensure;
use crate::expect::{want_os, want_rm, Ctx};
use crate::sys::{claimed_release, exists, module_loaded, read_file, sh, Shared};
use crate::tap::{Outcome, Test};
use crate::tests;

mod cards;
mod controls;
mod engine;
mod gpfifo;
pub(crate) mod grctx;
mod killed;
mod mappings;
mod objects;
mod refusals;

use cards::*;
use controls::*;
use engine::*;
use gpfifo::*;
use grctx::*;
use killed::*;
use mappings::*;
use objects::*;
use refusals::*;

/// Tests of this suite, in order; each reloads the double first.
pub const TESTS: &[Test] = tests![
    nodes_are_the_drivers_numbers,
    vram_sizes_from_module_params,
    check_version_str,
    card_info,
    procfs_gpu_information,
    register_fd,
    xfer_matches_direct,
    alloc_classes_nvos21,
    alloc_classes_nvos64,
    vram_accounting_stops_at_heap_size,
    free_device_cascades,
    free_client_frees_everything,
    fb_info_v1_v2_and_surface_size,
    tsg_and_channel_controls,
    gr_context_buffers,
    engine_context_properties_550,
    gpu_id_info,
    vid_heap_control,
    alloc_memory_reports_heap_limit,
    mappings_share_data,
    map_context_once_per_file,
    map_memory_dma_into_fixed_ranges,
    gpfifo_runs_semaphores_copies_and_acquires,
    dup_is_not_double_charged,
    os_event_by_poll,
    os_events_by_client_and_number,
    client_bound_to_its_ctl_file,
    device_needs_gpu_fd_in_process,
    embedded_fds_must_be_the_drivers,
    bad_pointers,
    alloc_params_are_the_classs_size,
    sys_params_set_once,
    wrong_sizes_and_unknown_escapes,
    other_clients_handles_refused,
    close_in_any_order,
    client_freed_when_ctl_closes,
    killed_processes_leak_nothing,
    threads_racing_on_one_client,
    engine_waits_for_schedule_and_stops_on_disable,
    engine_runs_items_in_order,
    fairness_two_tsgs,
    unload,
];

const LOAD: &str = "modprobe nvidia gpus=2 vram0_mib=8192 vram1_mib=4096";
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;
/// VRAM of each GPU, as loaded.
const VRAM: [u64; 2] = [8192 * MIB, 4096 * MIB];
/// What the double reports as heap (GUESS in the double: 1/64 reserved).
const HEAP: [u64; 2] = [VRAM[0] - VRAM[0] / 64, VRAM[1] - VRAM[1] / 64];
/// VRAM RM commits from the heap for a GPFIFO channel's instance block.
const INSTANCE_BLOCK: u64 = abi::INSTANCE_BLOCK as u64;
const POLL_EVENT: i16 = libc::POLLIN | libc::POLLPRI;

/// Unloads the double if loaded and loads it with the suite's parameters.
fn fresh() -> Outcome {
    if module_loaded("nvidia") {
        sh("rmmod nvidia")?;
    }
    sh(LOAD)?;
    Ok(())
}

/// A process's view of one GPU: ctl file, GPU file (registered), client,
/// device, subdevice. Drops the ctl file first.
pub(crate) struct S {
    pub(crate) ctl: Ctl,
    pub(crate) gpu: Gpu,
    gi: u32,
    pub(crate) client: Handle,
    pub(crate) device: Handle,
    pub(crate) sub: Handle,
}

/// Opens a session on the double's GPU `gi` directly.
pub(crate) fn session(gi: u32) -> Result<S, String> {
    let ctl = Ctl::open_default().ctx("open nvidiactl")?;
    let gpu = Gpu::open_index(gi).ctx("open GPU node")?;
    gpu.register_fd(&ctl).ctx("REGISTER_FD")?;
    let client = ctl.alloc_root_client().ctx("alloc client")?;
    let device = ctl.alloc_device(client, 0, gi).ctx("alloc device")?;
    let sub = ctl
        .alloc_subdevice(client, device, 0, 0)
        .ctx("alloc subdevice")?;
    Ok(S {
        ctl,
        gpu,
        gi,
        client,
        device,
        sub,
    })
}

impl S {
    /// One FB info value in bytes (FB info reports KiB).
    fn fb(&self, index: u32) -> Result<u64, String> {
        let e = self
            .ctl
            .fb_get_info_v2(self.client, self.sub, &[index])
            .ctx("FB_GET_INFO_V2")?;
        ensure!(
            e.len() == 1 && e[0].index == index,
            "FB info reply {e:?} for index {index:#x}"
        );
        Ok(u64::from(e[0].data) << 10)
    }

    /// HEAP_FREE in bytes.
    pub(crate) fn heap_free(&self) -> Result<u64, String> {
        self.fb(fb_info::HEAP_FREE)
    }

    fn vram(&self, size: u64) -> nvclient::Result<nvclient::Memory> {
        self.ctl.alloc_vram(self.client, self.device, 0, size)
    }

    fn free(&self, h: Handle) -> nvclient::Result<()> {
        self.ctl.free(self.client, self.client, h)
    }

    fn gpu_path(&self) -> String {
        format!("/dev/nvidia{}", self.gi)
    }
}

/// `major:minor` of a device node.
fn rdev(path: &str) -> Result<(u32, u32), String> {
    let m = std::fs::metadata(path).ctx(path)?;
    let r = m.rdev();
    Ok((libc::major(r), libc::minor(r)))
}

/// Issues a raw ioctl with an arbitrary argument word; `Err(errno)`.
fn raw_ioctl(fd: i32, req: u32, arg: usize) -> Result<i32, i32> {
    // SAFETY: the argument is either a buffer the caller keeps alive and
    // sized for `req`, or a deliberately bad address that the driver must
    // reject (it only touches user memory through copy_{from,to}_user).
    let r = unsafe { libc::ioctl(fd, req as libc::Ioctl, arg) };
    if r < 0 {
        Err(crate::sys::errno())
    } else {
        Ok(r)
    }
}

/// A session with a doorbell and `n` TSGs, each with one work channel.
struct Work {
    s: S,
    bell: nvclient::Doorbell,
    tsgs: Vec<Handle>,
    chans: Vec<WorkChannel>,
}

fn work(gi: u32, n: usize, entries: u32) -> Result<Work, String> {
    let s = session(gi)?;
    let bell = s
        .ctl
        .map_doorbell(s.gpu_path(), s.client, s.device, s.sub)
        .ctx("doorbell")?;
    let mut tsgs = Vec::new();
    let mut chans = Vec::new();
    for _ in 0..n {
        let t = s
            .ctl
            .alloc_tsg(s.client, s.device, 0, nvclient::tsg_params(0))
            .ctx("tsg")?;
        let ch = s
            .ctl
            .alloc_work_channel(
                s.client,
                s.device,
                t,
                class::AMPERE_CHANNEL_GPFIFO_A,
                entries,
            )
            .ctx("work channel")?;
        tsgs.push(t);
        chans.push(ch);
    }
    Ok(Work {
        s,
        bell,
        tsgs,
        chans,
    })
}

impl Work {
    fn submit(&self, i: usize, items: &[u64]) -> Outcome {
        let ch = &self.chans[i];
        let n = ch.ring.submit(items);
        ensure!(n == items.len(), "ring took {n} of {} items", items.len());
        ensure!(self.bell.ring(ch.token), "doorbell write");
        Ok(())
    }

    fn schedule(&self, i: usize, on: bool) -> Outcome {
        self.s
            .ctl
            .gpfifo_schedule(self.s.client, self.tsgs[i], on)
            .ctx("GPFIFO_SCHEDULE")
    }

    /// Waits until channel `i` has completed `n` items.
    fn wait_completed(&self, i: usize, n: u64, timeout: Duration) -> Outcome {
        let r = &self.chans[i].ring;
        let t0 = Instant::now();
        while r.completed() < n {
            ensure!(
                t0.elapsed() < timeout,
                "channel {i}: {} of {n} items completed after {timeout:?}",
                r.completed()
            );
            sleep(Duration::from_millis(2));
        }
        Ok(())
    }
}

fn unload() -> Outcome {
    if module_loaded("nvidia") {
        sh("rmmod nvidia")?;
    }
    ensure!(!module_loaded("nvidia"), "still loaded");
    ensure!(!exists("/dev/nvidiactl"), "nvidiactl left behind");
    ensure!(!exists("/dev/nvidia0"), "nvidia0 left behind");
    Ok(())
}
