// SPDX-License-Identifier: GPL-2.0

//! `/dev/vgpu-uvm`: the container's nvidia-uvm node, and managed memory
//! under the vGPU ceilings (`src/uvm/`, `docs/design-notes.md` "UVM").
//!
//! One fake GPU 0 (512 MiB) carries two vGPUs: 0 (64 MiB, cgroup /ua) and
//! 1 (96 MiB, cgroup /ub); GPU 1 has no vGPU. What the double really holds
//! on a GPU comes from its test-only view (`uvmdouble::view_gpu`: heap,
//! used, managed resident) and its FB info on the real nodes.

use crate::ensure;
use crate::expect::{want_os, want_rm};
use crate::proxy::real_files_in_table;
use crate::session::Session;
use crate::sys::{
    as_container, exists, in_child, is_chardev, join_cgroup, make_uvm_nodes, read_file,
    remove_uvm_nodes, sh, write_file, Holder, Looper, Shared,
};
use crate::tap::{Outcome, Test};
use crate::tests;
use crate::uvmdouble::{double_uuid, view_gpu};
use nvclient::abi::status::{
    NV_ERR_GPU_UUID_NOT_FOUND, NV_ERR_INSUFFICIENT_PERMISSIONS, NV_ERR_INVALID_ADDRESS,
    NV_ERR_INVALID_ARGUMENT, NV_ERR_INVALID_DEVICE, NV_ERR_INVALID_OBJECT_HANDLE, NV_ERR_NO_MEMORY,
    NV_ERR_OBJECT_NOT_FOUND, NV_ERR_UVM_ADDRESS_IN_USE,
};
use nvclient::abi::{class, heap};
use nvclient::uvm::{Uvm, UvmContext, CPU_UUID, DP_REGION_PAGE_TABLES, RANGE_GROUP_NONE};
use nvclient::{vram_params, Error};
use std::time::{Duration, Instant};

/// Tests of this suite.
pub const TESTS: &[Test] = tests![
    setup,
    node,
    racing_flags_keep_hmm_off,
    register_gpu,
    foreign_clients,
    managed_ceiling,
    external_keeps_charge,
    external_charge_goes_with_the_mapping,
    two_containers,
    sigkill_mid_migration,
    racing_mappings,
    range_groups_under_ceiling,
    range_groups_of_another_container,
    dp_region_and_tools,
    teardown,
];

const MIB: u64 = 1 << 20;
const UVM: &str = "/dev/vgpu-uvm";
/// What vgpu charges a container for the VA space its `context` makes:
/// the page levels RM commits for it.
const PAGE_LEVELS: u64 = nvclient::abi::VASPACE_PAGE_LEVELS as u64;

fn sysfs(v: u32, f: &str) -> Result<u64, String> {
    let s = read_file(&format!("/sys/class/vgpu/vgpu{v}/{f}"))?;
    s.parse().map_err(|e| format!("vgpu{v}/{f} = {s:?}: {e}"))
}

/// Managed bytes resident on GPU 0, as the double counts them.
fn resident0() -> Result<u64, String> {
    Ok(view_gpu(0)?.2)
}

/// A container's CUDA context on its vGPU `id`: RM session through vgpu and
/// its UVM context through `/dev/vgpu-uvm`.
struct Ctx {
    s: Session,
    u: UvmContext,
}

fn context(id: u32) -> Result<Ctx, String> {
    let s = Session::vgpu(id)?;
    let u = UvmContext::open(UVM, &s.ctl, s.client, s.device, s.subdevice)
        .map_err(|e| format!("UVM context: {e:?}"))?;
    Ok(Ctx { s, u })
}

fn setup() -> Outcome {
    sh("modprobe nvidia gpus=2 vram0_mib=512 vram1_mib=512")?;
    make_uvm_nodes()?;
    sh("modprobe vgpu")?;
    for cg in ["ua", "ub", "un"] {
        std::fs::create_dir_all(format!("/sys/fs/cgroup/{cg}")).map_err(|e| format!("{e}"))?;
    }
    for (v, limit, cg) in [(0, 64 * MIB, "/ua"), (1, 96 * MIB, "/ub")] {
        let w = |f: &str, val: &str| {
            write_file(&format!("/sys/class/vgpu/vgpu{v}/{f}"), val)
                .map_err(|e| format!("vgpu{v}/{f}: errno {e}"))
        };
        write_file("/sys/class/vgpu/create", &v.to_string()).map_err(|e| format!("create: {e}"))?;
        w("gpu", "0")?;
        w("memory_limit", &limit.to_string())?;
        w("cgroup", cg)?;
    }
    ensure!(is_chardev(UVM), "{UVM} is not a character device");
    ensure!(
        sysfs(0, "memory_managed")? == 0,
        "memory_managed of a new vGPU"
    );
    Ok(())
}

fn node() -> Outcome {
    let denied0 = crate::memory::calls_denied(0)?;
    // No vGPU for the caller's cgroup: no UVM node either.
    as_container("/un", || {
        want_os(Uvm::open(UVM), libc::EACCES, "open from /un")
    })?;
    as_container("/ua", || {
        let u = Uvm::open(UVM).map_err(|e| format!("open: {e:?}"))?;
        // UVM_MEM_MAP (35) is declared but not routed on Linux: ENOSYS.
        let mut b = [0u8; 64];
        // Refused by vgpu (default deny) and counted on the vGPU.
        want_os(u.call(35, &mut b), libc::ENOSYS, "unknown command")?;
        want_os(
            u.call_raw(0x3000_0001, 8),
            libc::EFAULT,
            "INITIALIZE on a bad pointer",
        )?;
        // Forced DISABLE_HMM is invisible: the same flags initialise twice,
        // other flags are refused as by the driver.
        u.initialize(0).map_err(|e| format!("INITIALIZE: {e:?}"))?;
        u.initialize(0)
            .map_err(|e| format!("INITIALIZE again, same flags: {e:?}"))?;
        want_rm(u.initialize(2), NV_ERR_INVALID_ARGUMENT, "other flags")?;
        ensure!(
            !u.pageable_mem_access()
                .map_err(|e| format!("PAGEABLE_MEM_ACCESS: {e:?}"))?,
            "pageable memory access through vgpu"
        );
        // The mm file must name a /dev/vgpu-uvm file of the caller.
        let mm = Uvm::open(UVM).map_err(|e| format!("open: {e:?}"))?;
        let null = std::fs::File::open("/dev/null").map_err(|e| e.to_string())?;
        want_rm(
            mm.mm_initialize(std::os::fd::AsRawFd::as_raw_fd(&null)),
            NV_ERR_INVALID_ARGUMENT,
            "MM_INITIALIZE naming /dev/null",
        )?;
        want_rm(
            mm.mm_initialize(-1),
            NV_ERR_INVALID_ARGUMENT,
            "MM_INITIALIZE naming fd -1",
        )?;
        mm.mm_initialize(u.fd())
            .map_err(|e| format!("MM_INITIALIZE: {e:?}"))?;
        Ok(())
    })?;
    let denied = crate::memory::calls_denied(0)?;
    ensure!(
        denied == denied0 + 1,
        "calls_denied {denied0} before, {denied} after one unknown UVM command"
    );
    Ok(())
}

/// A thread keeps writing 0 (HMM on) into the flags of the INITIALIZE block
/// a container sends: every VA space made through vgpu still has HMM off,
/// since the driver reads vgpu's copy, with DISABLE_HMM, not the block.
fn racing_flags_keep_hmm_off() -> Outcome {
    as_container("/ua", || {
        let mut blk = Box::new([0u8; 16]);
        let word = blk.as_mut_ptr() as usize;
        let zero = move || {
            // SAFETY: the block lives until `while_racing` has joined this
            // thread; racing writes are the point.
            unsafe { (word as *mut u64).write_volatile(0) };
        };
        let mut hmm = 0;
        crate::sys::while_racing(zero, |race| -> Result<(), String> {
            // A vgpu whose driver read the caller's block would lose the
            // race only now and then (once in 200 calls in the break demo
            // of docs/testing.md): enough calls that it shows.
            for _ in 0..1000 {
                let u = Uvm::open(UVM).map_err(|e| format!("open: {e:?}"))?;
                race.call(|| u.call_raw(nvclient::uvm::Command::Initialize.number(), word))
                    .map_err(|e| format!("INITIALIZE: {e:?}"))?;
                if u.pageable_mem_access()
                    .map_err(|e| format!("PAGEABLE_MEM_ACCESS: {e:?}"))?
                {
                    hmm += 1;
                }
            }
            Ok(())
        })?;
        ensure!(hmm == 0, "{hmm} of 1000 VA spaces got HMM on");
        let _ = &mut blk;
        Ok(())
    })
}

fn register_gpu() -> Outcome {
    // What the driver answers directly, for the same mistakes.
    let direct_uuid = {
        let s = Session::open("/dev/nvidiactl", "/dev/nvidia0")?;
        s.ctl
            .gpu_uuid(s.client, s.subdevice)
            .map_err(|e| format!("GID: {e:?}"))?
    };
    let direct_without_gpu = in_child(move || {
        let Ok(u) = Uvm::open("/dev/nvidia-uvm") else {
            return 10;
        };
        if u.initialize(0).is_err() {
            return 11;
        }
        match u.register_gpu(&direct_uuid, -1, 0) {
            Err(Error::Rm(NV_ERR_INSUFFICIENT_PERMISSIONS)) => 0,
            _ => 12,
        }
    })?;
    ensure!(
        direct_without_gpu == 0,
        "directly, without a GPU file: {direct_without_gpu}"
    );
    as_container("/ua", || {
        let s = Session::vgpu(0)?;
        let uuid = s
            .ctl
            .gpu_uuid(s.client, s.subdevice)
            .map_err(|e| format!("GID: {e:?}"))?;
        ensure!(uuid == direct_uuid, "the vGPU shows another UUID");
        let u = Uvm::open(UVM).map_err(|e| format!("open: {e:?}"))?;
        u.initialize(0).map_err(|e| format!("INITIALIZE: {e:?}"))?;
        let mut other = uuid;
        other[15] ^= 0x5a;
        want_rm(
            u.register_gpu(&other, -1, 0),
            NV_ERR_GPU_UUID_NOT_FOUND,
            "unknown UUID",
        )?;
        // GPU 1 exists but the container has no vGPU there.
        let mut gpu1 = uuid;
        gpu1[15] = gpu1[15].wrapping_add(1);
        want_rm(
            u.register_gpu(&gpu1, -1, 0),
            NV_ERR_GPU_UUID_NOT_FOUND,
            "a GPU without a vGPU of the container",
        )?;
        // Without its /dev/vgpu0 open, as the driver without /dev/nvidia0.
        let Session { ctl, _gpu, .. } = s;
        drop(_gpu);
        want_rm(
            u.register_gpu(&uuid, -1, 0),
            NV_ERR_INSUFFICIENT_PERMISSIONS,
            "without the vGPU node open",
        )?;
        let gpu = nvclient::Gpu::open("/dev/vgpu0").map_err(|e| format!("vgpu0: {e:?}"))?;
        let r = u
            .register_gpu(&uuid, 1234, 0)
            .map_err(|e| format!("REGISTER_GPU: {e:?}"));
        drop((gpu, ctl));
        r?;
        // No real driver file ever entered the container's table.
        real_files_in_table()
    })
}

fn foreign_clients() -> Outcome {
    let shared = Shared::new()?;
    // Container B holds a client with a VA space and VRAM.
    let b = Holder::spawn(|| {
        if join_cgroup("/ub").is_err() {
            return false;
        }
        let Ok(s) = Session::vgpu(1) else {
            return false;
        };
        let Ok(vas) = s.ctl.alloc_external_va_space(s.client, s.device, 0) else {
            return false;
        };
        let Ok(mem) = s.ctl.alloc_vram(s.client, s.device, 0, 2 * MIB) else {
            return false;
        };
        shared.set(0, u64::from(s.client));
        shared.set(1, u64::from(vas));
        shared.set(2, u64::from(mem.handle));
        std::mem::forget(s);
        true
    })?;
    ensure!(b.ready, "container B's set-up failed");
    let (bc, bv, bm) = (
        shared.get(0) as u32,
        shared.get(1) as u32,
        shared.get(2) as u32,
    );
    as_container("/ua", move || {
        let c = context(0)?;
        want_rm(
            c.u.uvm.register_gpu_vaspace(&c.u.uuid, -1, bc, bv),
            NV_ERR_INVALID_OBJECT_HANDLE,
            "B's VA space",
        )?;
        let base = 0x7100_0000_0000u64;
        c.u.uvm
            .create_external_range(base, 2 * MIB)
            .map_err(|e| format!("external range: {e:?}"))?;
        want_rm(
            c.u.uvm
                .map_external_allocation(base, 2 * MIB, 0, &[c.u.uuid], bc, bm),
            NV_ERR_INVALID_OBJECT_HANDLE,
            "B's memory",
        )?;
        want_rm(
            c.u.uvm
                .register_channel(&c.u.uuid, -1, bc, 1, base, 2 * MIB),
            NV_ERR_INVALID_OBJECT_HANDLE,
            "a channel of B's client",
        )?;
        want_rm(
            c.u.uvm.unregister_channel(&c.u.uuid, bc, 1),
            NV_ERR_INVALID_OBJECT_HANDLE,
            "UNREGISTER_CHANNEL of B's client",
        )?;
        let _ = &c.s;
        Ok(())
    })?;
    drop(b);
    Ok(())
}

fn managed_ceiling() -> Outcome {
    let res0 = resident0()?;
    as_container("/ua", || {
        let c = context(0)?;
        let e = |w: &'static str| move |err: Error| format!("{w}: {err:?}");
        let vram =
            c.s.ctl
                .alloc_vram(c.s.client, c.s.device, 0, 16 * MIB)
                .map_err(e("16 MiB of VRAM"))?;
        let m =
            c.u.uvm
                .map_managed(32 * MIB as usize)
                .map_err(e("32 MiB managed"))?;
        ensure!(
            sysfs(0, "memory_used")? == 48 * MIB + PAGE_LEVELS
                && sysfs(0, "memory_managed")? == 32 * MIB,
            "after 16 MiB VRAM and 32 MiB managed: used {}, managed {}",
            sysfs(0, "memory_used")?,
            sysfs(0, "memory_managed")?
        );
        // 32 MiB more would pass the 64 MiB ceiling.
        want_os(
            c.u.uvm.map_managed(32 * MIB as usize),
            libc::ENOMEM,
            "managed past the ceiling",
        )?;
        let refused = sysfs(0, "memory_refused")?;
        ensure!(refused >= 1, "the refusal was not counted");
        // All of it resident on the GPU, by MIGRATE and by GPU work: still
        // under the ceiling, in the double's own count.
        c.u.uvm
            .migrate(m.addr(), m.len() as u64, &c.u.uuid)
            .map_err(e("MIGRATE to the GPU"))?;
        let res = resident0()? - res0;
        ensure!(res == 32 * MIB, "resident after MIGRATE: {res}");
        ensure!(
            res + vram.size + PAGE_LEVELS <= 64 * MIB,
            "VRAM of the container {} passes its ceiling",
            res + vram.size + PAGE_LEVELS
        );
        c.u.uvm
            .migrate(m.addr(), m.len() as u64, &CPU_UUID)
            .map_err(e("MIGRATE to the CPU"))?;
        // An RM allocation that fits only once the managed range is gone.
        want_rm(
            c.s.ctl.alloc_vram(c.s.client, c.s.device, 0, 32 * MIB),
            nvclient::abi::status::NV_ERR_NO_MEMORY,
            "32 MiB of VRAM with 48 charged",
        )?;
        m.unmap().map_err(e("munmap"))?;
        // The next decision sees the unmapping.
        let big =
            c.s.ctl
                .alloc_vram(c.s.client, c.s.device, 0, 32 * MIB)
                .map_err(e("32 MiB of VRAM after munmap"))?;
        ensure!(
            sysfs(0, "memory_managed")? == 0 && sysfs(0, "memory_used")? == 48 * MIB + PAGE_LEVELS,
            "after munmap: used {}, managed {}",
            sysfs(0, "memory_used")?,
            sysfs(0, "memory_managed")?
        );
        let _ = big;
        Ok(())
    })?;
    all_returned(res0)
}

/// After the container exited: nothing charged to vGPU 0 and the double's
/// managed residency back at `res0`.
fn all_returned(res0: u64) -> Outcome {
    ensure!(
        sysfs(0, "memory_used")? == 0,
        "charged after the container exited: {}",
        sysfs(0, "memory_used")?
    );
    ensure!(resident0()? == res0, "managed VRAM left resident");
    Ok(())
}

fn external_keeps_charge() -> Outcome {
    as_container("/ua", || {
        let c = context(0)?;
        let e = |w: &'static str| move |err: Error| format!("{w}: {err:?}");
        let mem =
            c.s.ctl
                .alloc_vram(c.s.client, c.s.device, 0, 8 * MIB)
                .map_err(e("VRAM"))?;
        let base = 0x7200_0000_0000u64;
        c.u.uvm
            .create_external_range(base, 8 * MIB)
            .map_err(e("external range"))?;
        c.u.uvm
            .map_external_allocation(base, 8 * MIB, 0, &[c.u.uuid], c.s.client, mem.handle)
            .map_err(e("MAP_EXTERNAL_ALLOCATION"))?;
        c.s.ctl
            .free(c.s.client, c.s.device, mem.handle)
            .map_err(e("RM free"))?;
        // UVM still holds the memory: so does the ceiling (beside the VA
        // space's page levels).
        ensure!(
            sysfs(0, "memory_used")? == 8 * MIB + PAGE_LEVELS,
            "after RM free of mapped memory: used {}",
            sysfs(0, "memory_used")?
        );
        c.u.uvm.free(base, 8 * MIB).map_err(e("UVM_FREE"))?;
        ensure!(
            sysfs(0, "memory_used")? == PAGE_LEVELS,
            "after UVM_FREE: used {}",
            sysfs(0, "memory_used")?
        );
        Ok(())
    })
}

/// UVM holds RM memory it maps only as long as a GPU maps it: after an
/// RM free, UVM_UNMAP_EXTERNAL of the mapping, UVM_UNREGISTER_GPU_VASPACE
/// or UVM_UNREGISTER_GPU lets it go in the driver, and its charge with it
/// (found by the fuzz suite: vgpu kept the charge until UVM_FREE). A second
/// mapping over the first replaces it: one charge is held, not two.
fn external_charge_goes_with_the_mapping() -> Outcome {
    for how in ["unmap", "unregister vaspace", "unregister gpu"] {
        as_container("/ua", || {
            let c = context(0)?;
            let e = |w: &'static str| move |err: Error| format!("{how}: {w}: {err:?}");
            let used0 = view_gpu(0)?.1;
            let mem =
                c.s.ctl
                    .alloc_vram(c.s.client, c.s.device, 0, 8 * MIB)
                    .map_err(e("VRAM"))?;
            let base = 0x7200_0000_0000u64;
            c.u.uvm
                .create_external_range(base, 8 * MIB)
                .map_err(e("external range"))?;
            for _ in 0..2 {
                c.u.uvm
                    .map_external_allocation(base, 8 * MIB, 0, &[c.u.uuid], c.s.client, mem.handle)
                    .map_err(e("MAP_EXTERNAL_ALLOCATION"))?;
            }
            c.s.ctl
                .free(c.s.client, c.s.device, mem.handle)
                .map_err(e("RM free"))?;
            ensure!(
                sysfs(0, "memory_used")? == 8 * MIB + PAGE_LEVELS,
                "{how}: after RM free of mapped memory: used {}",
                sysfs(0, "memory_used")?
            );
            match how {
                "unmap" => c.u.uvm.unmap_external(base, 8 * MIB, &c.u.uuid),
                "unregister vaspace" => c.u.uvm.unregister_gpu_vaspace(&c.u.uuid),
                _ => c.u.uvm.unregister_gpu(&c.u.uuid),
            }
            .map_err(e("the unmapping call"))?;
            let (used, held) = (sysfs(0, "memory_used")?, view_gpu(0)?.1 - used0);
            // The RM VA space lives on (`used0` has its page levels).
            ensure!(
                used == PAGE_LEVELS && held == 0,
                "{how}: the driver holds {held} bytes, vgpu charges {used}"
            );
            Ok(())
        })?;
    }
    Ok(())
}

fn two_containers() -> Outcome {
    let shared = Shared::new()?;
    let b = Holder::spawn(|| {
        if join_cgroup("/ub").is_err() {
            return false;
        }
        let Ok(c) = context(1) else { return false };
        let Ok(m) = c.u.uvm.map_managed(40 * MIB as usize) else {
            return false;
        };
        if c.u
            .uvm
            .migrate(m.addr(), m.len() as u64, &c.u.uuid)
            .is_err()
        {
            return false;
        }
        shared.set(0, 1);
        std::mem::forget((c, m));
        true
    })?;
    ensure!(b.ready, "container B's set-up failed");
    as_container("/ua", || {
        let c = context(0)?;
        let m =
            c.u.uvm
                .map_managed(24 * MIB as usize)
                .map_err(|e| format!("A's managed memory: {e:?}"))?;
        ensure!(
            sysfs(0, "memory_managed")? == 24 * MIB && sysfs(1, "memory_managed")? == 40 * MIB,
            "managed: vgpu0 {} (want 24 MiB), vgpu1 {} (want 40 MiB)",
            sysfs(0, "memory_managed")?,
            sysfs(1, "memory_managed")?
        );
        // A can still use the rest of its own ceiling, its VA space's page
        // levels taken.
        c.u.uvm
            .map_managed((40 * MIB - PAGE_LEVELS) as usize)
            .map_err(|e| format!("A's second range: {e:?}"))?;
        drop(m);
        Ok(())
    })?;
    ensure!(sysfs(0, "memory_used")? == 0, "A's charge left");
    ensure!(sysfs(1, "memory_managed")? == 40 * MIB, "B's charge moved");
    drop(b);
    ensure!(
        sysfs(1, "memory_used")? == 0 && sysfs(1, "memory_managed")? == 0,
        "B's charge left after SIGKILL: used {}",
        sysfs(1, "memory_used")?
    );
    Ok(())
}

fn sigkill_mid_migration() -> Outcome {
    let res0 = resident0()?;
    // A process of container A migrates 48 MiB of managed memory to the
    // GPU and back (24 chunks, slowly, in the double) until it is killed.
    let h = Looper::spawn(|| {
        join_cgroup("/ua").map_err(|e| format!("join /ua: errno {e}"))?;
        let c = context(0)?;
        let m =
            c.u.uvm
                .map_managed(48 * MIB as usize)
                .map_err(|e| format!("managed: {e:?}"))?;
        Ok(move || {
            let _ = c.u.uvm.migrate(m.addr(), m.len() as u64, &c.u.uuid);
            let _ = c.u.uvm.migrate(m.addr(), m.len() as u64, &CPU_UUID);
        })
    })?;
    // Kill it while managed VRAM is resident: a migration is under way.
    let t0 = Instant::now();
    let mut at_kill = 0;
    while t0.elapsed() < Duration::from_secs(10) {
        at_kill = resident0()?.saturating_sub(res0);
        if at_kill > 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let managed = sysfs(0, "memory_managed")?;
    drop(h);
    ensure!(at_kill > 0, "no migration was running at the kill");
    ensure!(managed == 48 * MIB, "charged while migrating: {managed}");
    ensure!(
        sysfs(0, "memory_used")? == 0 && sysfs(0, "memory_managed")? == 0,
        "charged after SIGKILL: used {}, managed {}",
        sysfs(0, "memory_used")?,
        sysfs(0, "memory_managed")?
    );
    let t0 = Instant::now();
    while resident0()? != res0 {
        ensure!(
            t0.elapsed() < Duration::from_secs(5),
            "managed VRAM left resident: {}",
            resident0()? - res0
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

/// Threads of one container map, migrate and unmap managed memory at once
/// while others read the counters and allocate VRAM: the ceiling holds at
/// every reading, and everything is refunded at the end.
fn racing_mappings() -> Outcome {
    as_container("/ua", || {
        let c = std::sync::Arc::new(context(0)?);
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut workers = Vec::new();
        for t in 0..4u64 {
            let (c, stop) = (c.clone(), stop.clone());
            workers.push(std::thread::spawn(move || -> Result<u64, String> {
                let mut mapped = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    match c.u.uvm.map_managed(((t + 1) * 4 * MIB) as usize) {
                        Ok(m) => {
                            mapped += 1;
                            let _ = c.u.uvm.migrate(m.addr(), 2 * MIB, &c.u.uuid);
                            drop(m);
                        }
                        Err(Error::Os(libc::ENOMEM)) => {}
                        Err(e) => return Err(format!("thread {t}: {e:?}")),
                    }
                }
                Ok(mapped)
            }));
        }
        let (c2, stop2) = (c.clone(), stop.clone());
        let allocator = std::thread::spawn(move || -> Result<(), String> {
            while !stop2.load(std::sync::atomic::Ordering::Relaxed) {
                match c2.s.ctl.alloc_vram(c2.s.client, c2.s.device, 0, 8 * MIB) {
                    Ok(m) => {
                        let _ = c2.s.ctl.free(c2.s.client, c2.s.device, m.handle);
                    }
                    Err(Error::Rm(nvclient::abi::status::NV_ERR_NO_MEMORY)) => {}
                    Err(e) => return Err(format!("VRAM: {e:?}")),
                }
            }
            Ok(())
        });
        let t0 = Instant::now();
        let mut readings = 0;
        while t0.elapsed() < Duration::from_millis(1500) {
            let used = sysfs(0, "memory_used")?;
            ensure!(
                used <= 64 * MIB,
                "memory_used {used} past the 64 MiB ceiling"
            );
            let res = resident0()?;
            ensure!(res <= 64 * MIB, "{res} bytes of managed memory resident");
            readings += 1;
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let mut total = 0;
        for w in workers {
            total += w.join().map_err(|_| "a worker panicked")??;
        }
        allocator.join().map_err(|_| "the allocator panicked")??;
        ensure!(total > 0 && readings > 0, "nothing ran: {total} mappings");
        println!(
            "# uvm: {total} managed mappings by 4 threads, {readings} readings under the ceiling"
        );
        // The VA space's page levels stay charged while it lives.
        ensure!(
            sysfs(0, "memory_managed")? == 0 && sysfs(0, "memory_used")? == PAGE_LEVELS,
            "left charged: used {}, managed {}",
            sysfs(0, "memory_used")?,
            sysfs(0, "memory_managed")?
        );
        Ok(())
    })
}

/// Range groups through vgpu: they work as on the driver, and migrating a
/// group moves only managed memory, which was charged at mmap, so the
/// ceiling holds with all of it resident.
fn range_groups_under_ceiling() -> Outcome {
    let res0 = resident0()?;
    as_container("/ua", || {
        let c = context(0)?;
        let e = |w: &'static str| move |err: Error| format!("{w}: {err:?}");
        let g =
            c.u.uvm
                .create_range_group()
                .map_err(e("CREATE_RANGE_GROUP"))?;
        ensure!(g == 1, "first group of a VA space is {g}, want 1");
        let m =
            c.u.uvm
                .map_managed(48 * MIB as usize)
                .map_err(e("48 MiB managed"))?;
        let (a, l) = (m.addr(), m.len() as u64);
        c.u.uvm
            .set_range_group(g, a, l)
            .map_err(e("SET_RANGE_GROUP"))?;
        c.u.uvm
            .migrate_range_group(g, &c.u.uuid)
            .map_err(e("MIGRATE_RANGE_GROUP to the GPU"))?;
        let res = resident0()? - res0;
        ensure!(res == 48 * MIB, "resident after MIGRATE_RANGE_GROUP: {res}");
        ensure!(
            sysfs(0, "memory_used")? == 48 * MIB + PAGE_LEVELS
                && sysfs(0, "memory_managed")? == 48 * MIB,
            "the migration changed the charge: used {}, managed {}",
            sysfs(0, "memory_used")?,
            sysfs(0, "memory_managed")?
        );
        // With the group resident, the rest of the ceiling is all there is.
        want_os(
            c.u.uvm.map_managed(32 * MIB as usize),
            libc::ENOMEM,
            "managed past the ceiling with a resident group",
        )?;
        want_rm(
            c.s.ctl.alloc_vram(c.s.client, c.s.device, 0, 32 * MIB),
            NV_ERR_NO_MEMORY,
            "VRAM past the ceiling with a resident group",
        )?;
        // Ranges and groups the VA space does not have are refused as the
        // driver refuses them.
        want_rm(
            c.u.uvm.set_range_group(g, a, l + 4096),
            NV_ERR_INVALID_ADDRESS,
            "SET_RANGE_GROUP past the managed range",
        )?;
        want_rm(
            c.u.uvm.set_range_group(g, 0x7500_0000_0000, 2 * MIB),
            NV_ERR_INVALID_ADDRESS,
            "SET_RANGE_GROUP where nothing is mapped",
        )?;
        want_rm(
            c.u.uvm.destroy_range_group(g + 1),
            NV_ERR_OBJECT_NOT_FOUND,
            "DESTROY of a group never made",
        )?;
        c.u.uvm
            .set_range_group(RANGE_GROUP_NONE, a, 2 * MIB)
            .map_err(e("SET to no group"))?;
        c.u.uvm
            .migrate_range_group(g, &CPU_UUID)
            .map_err(e("MIGRATE_RANGE_GROUP to the CPU"))?;
        let res = resident0()? - res0;
        ensure!(res == 2 * MIB, "resident after the group left: {res}");
        c.u.uvm.destroy_range_group(g).map_err(e("DESTROY"))?;
        drop(m);
        Ok(())
    })?;
    all_returned(res0)
}

/// Container B's range group, its managed memory resident: container A
/// can name neither (groups and ranges are its own VA space's), and B's
/// memory stays where it is.
fn range_groups_of_another_container() -> Outcome {
    let res0 = resident0()?;
    let shared = Shared::new()?;
    let b = Holder::spawn(|| {
        if join_cgroup("/ub").is_err() {
            return false;
        }
        let Ok(c) = context(1) else { return false };
        let Ok(g) = c.u.uvm.create_range_group() else {
            return false;
        };
        let Ok(m) = c.u.uvm.map_managed(40 * MIB as usize) else {
            return false;
        };
        if c.u
            .uvm
            .set_range_group(g, m.addr(), m.len() as u64)
            .is_err()
            || c.u.uvm.migrate_range_group(g, &c.u.uuid).is_err()
        {
            return false;
        }
        shared.set(0, g);
        shared.set(1, m.addr());
        std::mem::forget((c, m));
        true
    })?;
    ensure!(b.ready, "container B's set-up failed");
    let (bg, ba) = (shared.get(0), shared.get(1));
    ensure!(
        resident0()? - res0 == 40 * MIB,
        "B's group not resident: {}",
        resident0()? - res0
    );
    as_container("/ua", || {
        let c = context(0)?;
        want_rm(
            c.u.uvm.destroy_range_group(bg),
            NV_ERR_OBJECT_NOT_FOUND,
            "DESTROY of B's group",
        )?;
        want_rm(
            c.u.uvm.migrate_range_group(bg, &CPU_UUID),
            NV_ERR_OBJECT_NOT_FOUND,
            "MIGRATE_RANGE_GROUP of B's group",
        )?;
        want_rm(
            c.u.uvm.set_range_group(RANGE_GROUP_NONE, ba, 40 * MIB),
            NV_ERR_INVALID_ADDRESS,
            "SET_RANGE_GROUP over B's managed memory",
        )?;
        let mut buf = [0u8; 64];
        want_rm(
            c.u.uvm.tools_read_process_memory(ba, &mut buf),
            NV_ERR_INVALID_ADDRESS,
            "TOOLS_READ of B's managed memory",
        )?;
        Ok(())
    })?;
    ensure!(
        resident0()? - res0 == 40 * MIB && sysfs(1, "memory_managed")? == 40 * MIB,
        "B's memory moved: resident {}, managed {}",
        resident0()? - res0,
        sysfs(1, "memory_managed")?
    );
    drop(b);
    ensure!(
        sysfs(1, "memory_used")? == 0,
        "B's charge left after SIGKILL: {}",
        sysfs(1, "memory_used")?
    );
    Ok(())
}

/// MAP_DYNAMIC_PARALLELISM_REGION through vgpu: the region maps no memory
/// (the double's heap stays), but the bound of the page tables UVM makes
/// for it is charged while it lives, so it is refused at the ceiling; only
/// on the container's GPU. The tools process-memory calls reach the
/// caller's own VA space and buffer.
fn dp_region_and_tools() -> Outcome {
    as_container("/ua", || {
        let c = context(0)?;
        let e = |w: &'static str| move |err: Error| format!("{w}: {err:?}");
        let used0 = view_gpu(0)?.1;
        let base = 0x7400_0000_0000u64;
        c.u.uvm
            .map_dynamic_parallelism_region(base, 2 * MIB, &c.u.uuid)
            .map_err(e("MAP_DYNAMIC_PARALLELISM_REGION"))?;
        // Charged beside the VA space's page levels.
        let want = PAGE_LEVELS + DP_REGION_PAGE_TABLES;
        ensure!(
            view_gpu(0)?.1 == used0 && sysfs(0, "memory_used")? == want,
            "the region: heap used {} (was {used0}), charged {} (want {want})",
            view_gpu(0)?.1,
            sysfs(0, "memory_used")?
        );
        c.u.uvm
            .validate_va_range(base, 2 * MIB)
            .map_err(e("VALIDATE the region"))?;
        want_rm(
            c.u.uvm
                .map_dynamic_parallelism_region(base, 2 * MIB, &c.u.uuid),
            NV_ERR_UVM_ADDRESS_IN_USE,
            "the region twice",
        )?;
        // GPU 1 has no vGPU of the container: it cannot be registered, so
        // no region can be made on it.
        want_rm(
            c.u.uvm.register_gpu(&double_uuid(1), -1, 0),
            NV_ERR_GPU_UUID_NOT_FOUND,
            "REGISTER_GPU of a GPU without a vGPU",
        )?;
        want_rm(
            c.u.uvm
                .map_dynamic_parallelism_region(base + 2 * MIB, 2 * MIB, &double_uuid(1)),
            NV_ERR_INVALID_DEVICE,
            "a region on another GPU",
        )?;
        c.u.uvm
            .free(base, 2 * MIB)
            .map_err(e("UVM_FREE of the region"))?;
        ensure!(
            sysfs(0, "memory_used")? == PAGE_LEVELS,
            "charged {} after UVM_FREE of the region",
            sysfs(0, "memory_used")?
        );
        // A region that would pass the ceiling is refused, and not made.
        let refused = sysfs(0, "memory_refused")?;
        // The rest of the ceiling beside the VA space's page levels, in
        // 4 KiB pages so that it fills it exactly.
        let mut p = vram_params(c.s.client, 64 * MIB - PAGE_LEVELS);
        p.attr = heap::ATTR_PAGE_SIZE.set(p.attr, heap::ATTR_PAGE_SIZE_4KB);
        let (vram, _) =
            c.s.ctl
                .alloc_memory(c.s.client, c.s.device, 0, class::NV01_MEMORY_LOCAL_USER, p)
                .map_err(e("the rest of the ceiling in VRAM"))?;
        ensure!(
            sysfs(0, "memory_used")? == 64 * MIB,
            "charged {} with the ceiling filled",
            sysfs(0, "memory_used")?
        );
        want_rm(
            c.u.uvm
                .map_dynamic_parallelism_region(base, 64 << 10, &c.u.uuid),
            NV_ERR_NO_MEMORY,
            "a region with the ceiling reached",
        )?;
        ensure!(
            sysfs(0, "memory_refused")? == refused + 1,
            "the refusal was not counted"
        );
        want_rm(
            c.u.uvm.validate_va_range(base, 64 << 10),
            NV_ERR_INVALID_ADDRESS,
            "VALIDATE of the refused region",
        )?;
        c.s.ctl
            .free(c.s.client, c.s.device, vram)
            .map_err(e("RM free"))?;
        c.u.uvm
            .map_dynamic_parallelism_region(base, 64 << 10, &c.u.uuid)
            .map_err(e("the region once VRAM is freed"))?;
        // The end of the VA space gives the charge back (checked after the
        // container exits).
        // Tools reads and writes: managed memory, the caller's buffer.
        let m =
            c.u.uvm
                .map_managed(4 * MIB as usize)
                .map_err(e("4 MiB managed"))?;
        let mut buf = vec![0xabu8; 6000];
        let n =
            c.u.uvm
                .tools_read_process_memory(m.addr() + 8, &mut buf)
                .map_err(e("TOOLS_READ"))?;
        ensure!(
            n == 6000 && buf.iter().all(|&b| b == 0),
            "TOOLS_READ: {n} bytes, zeros: {}",
            buf.iter().all(|&b| b == 0)
        );
        let n =
            c.u.uvm
                .tools_write_process_memory(m.addr(), &buf)
                .map_err(e("TOOLS_WRITE"))?;
        ensure!(n == 6000, "TOOLS_WRITE wrote {n} bytes");
        want_rm(
            c.u.uvm.tools_read_process_memory(base, &mut buf),
            NV_ERR_INVALID_ADDRESS,
            "TOOLS_READ where nothing is managed",
        )?;
        ensure!(
            sysfs(0, "memory_used")? == 4 * MIB + DP_REGION_PAGE_TABLES + PAGE_LEVELS,
            "charged {} with 4 MiB managed and a region",
            sysfs(0, "memory_used")?
        );
        drop(m);
        Ok(())
    })?;
    ensure!(
        sysfs(0, "memory_used")? == 0,
        "charged {} after the container with a region exited",
        sysfs(0, "memory_used")?
    );
    Ok(())
}

fn teardown() -> Outcome {
    for v in [0, 1] {
        write_file("/sys/class/vgpu/remove", &v.to_string())
            .map_err(|e| format!("remove {v}: errno {e}"))?;
    }
    sh("rmmod vgpu")?;
    remove_uvm_nodes();
    sh("rmmod nvidia")?;
    ensure!(!exists(UVM), "{UVM} left behind");
    Ok(())
}
