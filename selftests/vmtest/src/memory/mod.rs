// SPDX-License-Identifier: GPL-2.0

//! Memory ceilings through vgpu: two containers (cgroups) share one fake
//! 8 GiB GPU with 1 GiB and 3 GiB vGPUs; allocations stop exactly at each
//! ceiling, each sees its own size, neither affects the other, and charges
//! come back on free, close and SIGKILL, whatever a racing thread does.

use crate::ensure;
use crate::session::Session;
use crate::sys::{
    as_container, in_child, join_cgroup, read_file, sh, while_racing, write_file, Holder,
};
use crate::tap::{Outcome, Test};
use crate::tests;
use nvclient::abi::Wire;
use nvclient::abi::{fb_info, status};
use nvclient::{Ctl, Error, Gpu};

mod ceilings;
mod charges;
mod foreign;
mod internal;
mod races;

use ceilings::*;
use charges::*;
use foreign::*;
pub(crate) use internal::gr_context_size;
use internal::*;
use races::*;

/// Tests of this suite, in order (later ones rely on earlier ones' state).
pub const TESTS: &[Test] = tests![
    setup_two_containers = setup,
    unknown_numbers_are_refused_and_counted,
    each_stops_exactly_at_its_ceiling,
    each_sees_its_own_size,
    fb_info_malformed_as_directly,
    free_and_close_give_back,
    sigkill_gives_back,
    racing_size_cannot_pass_the_ceiling,
    racing_class_cannot_pass_the_ceiling,
    racing_xfer_cannot_pass_the_ceiling,
    free_racing_its_alloc_leaves_no_charge,
    xfer_heap_and_explicit_handles_are_charged,
    charges_what_rm_allocates,
    ceiling_spans_processes_and_layouts,
    dup_is_charged_once,
    dup_under_an_unrecorded_parent_refused,
    heap_free_of_a_client_forgets_it,
    records_refuse_garbage,
    alloc_memory_limit_shows_the_ceiling,
    rm_internal_vram_stops_at_the_ceiling,
    gr_context_without_a_subdevice_is_exact,
    gr_contexts_stop_at_the_ceiling,
    unanswerable_block_keeps_the_charge,
    unwritable_params_keep_the_charge,
    closed_file_under_a_mapping_gives_its_vram_back,
    lowered_limit_blocks_until_usage_drops,
    foreign_gpu_refused_and_hidden,
    card_info_never_shows_foreign_gpus,
    remove_refused_while_charged,
    teardown,
];

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

fn used(id: u32) -> Result<u64, String> {
    read_file(&format!("/sys/class/vgpu/vgpu{id}/memory_used"))?
        .parse()
        .map_err(|e| format!("memory_used: {e}"))
}

fn setup() -> Outcome {
    sh("modprobe nvidia gpus=2 vram0_mib=8192 vram1_mib=4096")?;
    sh("modprobe vgpu")?;
    for (id, cg, limit) in [(0, "/ma", GIB), (1, "/mb", 3 * GIB)] {
        std::fs::create_dir_all(format!("/sys/fs/cgroup{cg}"))
            .map_err(|e| format!("mkdir {cg}: {e}"))?;
        write_file("/sys/class/vgpu/create", &id.to_string())
            .map_err(|e| format!("create: {e}"))?;
        let a = |f: &str| format!("/sys/class/vgpu/vgpu{id}/{f}");
        write_file(&a("gpu"), "0").map_err(|e| format!("gpu: {e}"))?;
        write_file(&a("memory_limit"), &limit.to_string()).map_err(|e| format!("limit: {e}"))?;
        write_file(&a("cgroup"), cg).map_err(|e| format!("cgroup: {e}"))?;
    }
    Ok(())
}

fn session(vgpu: u32) -> Result<Session, String> {
    Session::vgpu(vgpu)
}

/// `calls_denied` of vGPU `id`.
pub(crate) fn calls_denied(id: u32) -> Result<u64, String> {
    let s = read_file(&format!("/sys/class/vgpu/vgpu{id}/calls_denied"))?;
    s.trim().parse().map_err(|_| format!("calls_denied: {s:?}"))
}
