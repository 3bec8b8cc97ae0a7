// SPDX-License-Identifier: GPL-2.0

//! The nvidia-uvm node of the driver double (`selftests/nvidia/uvm/`),
//! driven through nvclient's `Uvm` the way libcuda drives the real one:
//! transport, file types and the mm file, GPU / VA space / channel
//! registration, external ranges, managed ranges made by mmap, residency
//! (MIGRATE, engine touches, eviction) in the same VRAM heap RM allocates
//! from, and what process death gives back.
//!
//! Every test starts from a freshly loaded double (two GPUs of 256 MiB,
//! so 126 managed chunks fit a heap) with the UVM nodes made from
//! `/proc/devices`, and leaves every file closed.

use std::fmt::Debug;
use std::thread::sleep;
use std::time::{Duration, Instant};

use nvclient::abi::{self, class, status::*, Handle};
use nvclient::uvm::{
    self, init_flags, Command, GpuMappingAttributes, MigrateParams, Reservation, Uuid, UvmContext,
    CHUNK, CPU_UUID, RANGE_GROUP_NONE,
};
use nvclient::{work, Ctl, Gpu, Uvm};

use crate::double::{session, S};
use crate::ensure;
use crate::expect::{want_os, want_rm, Ctx};
use crate::sys::{
    char_major, exists, in_child, make_uvm_nodes, module_loaded, remove_uvm_nodes, sh, Shared,
};
use crate::tap::{Outcome, Test};
use crate::tests;

mod channels;
mod engine;
mod managed;
mod pool;
mod ranges;
mod registration;

use channels::*;
use engine::*;
use managed::*;
use pool::*;
use ranges::*;
use registration::*;

/// Tests of this suite, in order; each reloads the double first.
pub const TESTS: &[Test] = tests![
    setup,
    nodes_from_proc_devices,
    gid_info_uuids,
    transport,
    file_types,
    mm_initialize_rules,
    register_gpu_needs_gpu_file,
    register_gpu_vaspace_rules,
    channel_registration,
    external_ranges_keep_memory,
    managed_mmap_rules,
    migrate_residency,
    munmap_frees_residency,
    eviction_across_va_spaces,
    no_memory_when_nothing_evictable,
    engine_touch,
    kill_mid_migrate_returns_vram,
    policy_and_peer,
    semaphore_pool,
    range_groups,
    dynamic_parallelism_region,
    tools_process_memory,
    close_order_and_teardown,
    teardown,
];

const LOAD: &str = "modprobe nvidia gpus=2 vram0_mib=256 vram1_mib=256";
const MIB: u64 = 1 << 20;
/// What the double reports as each GPU's heap (1/64 of VRAM reserved).
const HEAP: u64 = 256 * MIB - 4 * MIB;
/// VRAM RM commits from the heap for each VA space (its page levels) and
/// each GPFIFO channel (its instance block).
const PAGE_LEVELS: u64 = abi::VASPACE_PAGE_LEVELS as u64;
const INSTANCE_BLOCK: u64 = abi::INSTANCE_BLOCK as u64;
const VIEW: &str = "/sys/kernel/debug/nvidia-double/uvm";

/// The UUID the double gives fake GPU `g` (its documented scheme).
pub(crate) fn double_uuid(g: u32) -> Uuid {
    let mut u = [
        0xd0, 0x0b, 0x1e, 0x5e, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, 0,
    ];
    u[15] = g as u8 + 1;
    u
}

/// Unloads the double if loaded, loads it and makes the UVM nodes.
fn fresh() -> Outcome {
    if module_loaded("nvidia") {
        sh("rmmod nvidia")?;
    }
    sh(LOAD)?;
    make_uvm_nodes()?;
    Ok(())
}

impl S {
    fn vas(&self) -> Result<Handle, String> {
        self.ctl
            .alloc_external_va_space(self.client, self.device, 0)
            .ctx("external VA space")
    }
}

/// Everything a CUDA context has on one GPU: RM session, VA space, mm file,
/// the GPU registered with an externally owned GPU VA space.
struct Full {
    s: S,
    uvm: Uvm,
    _mm: Uvm,
    uuid: Uuid,
    vas: Handle,
}

fn full(gi: u32) -> Result<Full, String> {
    let s = session(gi)?;
    let c = UvmContext::open(Uvm::DEFAULT_PATH, &s.ctl, s.client, s.device, s.sub)
        .ctx("UVM context")?;
    Ok(Full {
        s,
        uvm: c.uvm,
        _mm: c.mm,
        uuid: c.uuid,
        vas: c.vas,
    })
}

/// One line of the test-only view per GPU: (heap, used, managed).
pub(crate) fn view_gpu(g: usize) -> Result<(u64, u64, u64), String> {
    let text = std::fs::read_to_string(VIEW).ctx(VIEW)?;
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("gpu {g} ")))
        .ok_or(format!("no gpu {g} in {VIEW}: {text}"))?;
    let w: Vec<u64> = line
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    ensure!(w.len() == 4, "bad view line {line:?}");
    Ok((w[1], w[2], w[3]))
}

/// One VA space of the test-only view.
#[derive(Debug)]
#[allow(dead_code)]
struct ViewSpace {
    id: u64,
    tgid: i64,
    ranges: u64,
    faults: u64,
    /// Managed bytes resident per GPU.
    resident: Vec<u64>,
}

/// The view's VA spaces.
fn view_spaces() -> Result<Vec<ViewSpace>, String> {
    let text = std::fs::read_to_string(VIEW).ctx(VIEW)?;
    let mut out = Vec::new();
    for l in text.lines().filter(|l| l.starts_with("space ")) {
        let w: Vec<&str> = l.split_whitespace().collect();
        let num = |i: usize| -> Result<i64, String> {
            w.get(i)
                .and_then(|x| x.parse().ok())
                .ok_or(format!("bad view line {l:?}"))
        };
        ensure!(w.len() >= 9, "bad view line {l:?}");
        out.push(ViewSpace {
            id: num(1)? as u64,
            tgid: num(3)?,
            ranges: num(5)? as u64,
            faults: num(7)? as u64,
            resident: w[9..].iter().filter_map(|x| x.parse().ok()).collect(),
        });
    }
    Ok(out)
}

/// Managed bytes resident on GPU `g` in this process's VA spaces, by id.
fn my_resident(g: usize) -> Result<Vec<u64>, String> {
    let me = i64::from(std::process::id());
    Ok(view_spaces()?
        .into_iter()
        .filter(|s| s.tgid == me)
        .map(|s| s.resident.get(g).copied().unwrap_or(0))
        .collect())
}
