// SPDX-License-Identifier: GPL-2.0

//! The nvidia-uvm node of the driver double (`selftests/nvidia/uvm.rs`),
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

use nvclient::abi::{class, status::*, Handle};
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

// ---------------------------------------------------------------------------

fn setup() -> Outcome {
    fresh()?;
    ensure!(exists("/dev/nvidia-uvm"), "/dev/nvidia-uvm not made");
    ensure!(exists(VIEW), "{VIEW} missing (debugfs mounted?)");
    Ok(())
}

fn nodes_from_proc_devices() -> Outcome {
    fresh()?;
    let major = char_major("nvidia-uvm").ok_or("nvidia-uvm not in /proc/devices")?;
    ensure!(major != 195, "nvidia-uvm got the RM major");
    // No class device: devtmpfs made nothing, sysfs has no device for it.
    ensure!(
        !exists(&format!("/sys/dev/char/{major}:0")),
        "a device exists for {major}:0 (the real driver makes none)"
    );
    ensure!(
        !exists("/sys/class/nvidia-uvm"),
        "a class nvidia-uvm exists"
    );
    let u = Uvm::open_default().ctx("open /dev/nvidia-uvm")?;
    u.initialize(0).ctx("INITIALIZE")?;
    let tools = Uvm::open(Uvm::TOOLS_PATH).ctx("open tools node")?;
    want_os(
        tools.initialize(0),
        libc::EINVAL,
        "any ioctl on the tools node",
    )?;
    want_os(
        tools.mmap_raw(0, 4096, libc::PROT_READ, libc::MAP_SHARED, 0),
        libc::ENODEV,
        "mmap of the tools node",
    )?;
    Ok(())
}

fn gid_info_uuids() -> Outcome {
    fresh()?;
    let mut seen = Vec::new();
    for g in 0..2 {
        let s = session(g)?;
        let u = s.ctl.gpu_uuid(s.client, s.sub).ctx("GID binary")?;
        ensure!(
            u == double_uuid(g),
            "GPU {g}: binary UUID {u:02x?}, want {:02x?}",
            double_uuid(g)
        );
        let t = s.ctl.gpu_uuid_text(s.client, s.sub).ctx("GID text")?;
        ensure!(
            t == uvm::uuid_text(&u),
            "GPU {g}: text {t:?}, want {:?}",
            uvm::uuid_text(&u)
        );
        let raw = s.ctl.gid_info(s.client, s.sub, 0).ctx("GID raw")?;
        ensure!(raw.length == 41, "text length {}, want 41", raw.length);
        ensure!(!seen.contains(&u), "GPU {g} repeats a UUID");
        seen.push(u);
    }
    Ok(())
}

fn transport() -> Outcome {
    fresh()?;
    let u = Uvm::open_default().ctx("open")?;
    // Numbers the driver declares but does not route, and nonsense.
    for cmd in [35u32, 2047, 56, 12345, 0x3000_0003] {
        let mut b = [0u8; 64];
        want_os(u.call(cmd, &mut b), libc::ENOSYS, &format!("command {cmd}"))?;
    }
    want_os(
        u.call_raw(Command::Initialize.number(), 8),
        libc::EFAULT,
        "INITIALIZE with a bad pointer",
    )?;
    u.call_raw(Command::Deinitialize.number(), 8)
        .ctx("DEINITIALIZE reads no block")?;
    u.deinitialize().ctx("DEINITIALIZE")?;
    // Status in the block, return 0, the whole block copied back.
    let mut b = [0xabu8; 16];
    b[..8].copy_from_slice(&0x80u64.to_ne_bytes());
    u.call(Command::Initialize.number(), &mut b)
        .ctx("INITIALIZE with bad flags returns 0")?;
    ensure!(
        b[8..12] == NV_ERR_INVALID_ARGUMENT.to_ne_bytes(),
        "rmStatus {:02x?}, want NV_ERR_INVALID_ARGUMENT",
        &b[8..12]
    );
    ensure!(
        b[..8] == 0x80u64.to_ne_bytes() && b[12..] == [0xab; 4],
        "block not copied back whole: {b:02x?}"
    );
    // The driver copies the command's size, not the caller's idea of it: a
    // block that ends 8 bytes before an unmapped page faults.
    let r = Reservation::new(8192, 4096).ctx("reserve")?;
    let page = r.addr() as usize;
    // SAFETY: the first page of our own reservation becomes readable and
    // writable; the second stays PROT_NONE.
    let rc = unsafe {
        libc::mprotect(
            page as *mut libc::c_void,
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
        )
    };
    ensure!(rc == 0, "mprotect: errno {}", crate::sys::errno());
    want_os(
        u.call_raw(Command::Initialize.number(), page + 4096 - 8),
        libc::EFAULT,
        "INITIALIZE whose 16-byte block runs into a PROT_NONE page",
    )?;
    u.call_raw(Command::Initialize.number(), page + 4096 - 16)
        .ctx("INITIALIZE whose block just fits")?;
    Ok(())
}

fn file_types() -> Outcome {
    fresh()?;
    let u = Uvm::open_default().ctx("open")?;
    want_rm(
        u.pageable_mem_access(),
        NV_ERR_ILLEGAL_ACTION,
        "PAGEABLE_MEM_ACCESS before INITIALIZE",
    )?;
    want_rm(
        u.register_gpu(&double_uuid(0), -1, 0),
        NV_ERR_ILLEGAL_ACTION,
        "REGISTER_GPU before INITIALIZE",
    )?;
    let r = Reservation::new(2 << 20, CHUNK as usize).ctx("reserve")?;
    let rw = libc::PROT_READ | libc::PROT_WRITE;
    let fixed = libc::MAP_SHARED | libc::MAP_FIXED;
    want_os(
        u.mmap_raw(r.addr(), r.len(), rw, fixed, r.addr()),
        libc::EBADFD,
        "mmap before INITIALIZE",
    )?;
    want_rm(u.initialize(0x4), NV_ERR_INVALID_ARGUMENT, "undefined flag")?;
    u.initialize(init_flags::DISABLE_HMM)
        .ctx("INITIALIZE after a refused one")?;
    u.initialize(init_flags::DISABLE_HMM)
        .ctx("INITIALIZE again with equal flags")?;
    want_rm(
        u.initialize(0),
        NV_ERR_INVALID_ARGUMENT,
        "re-INITIALIZE, other flags",
    )?;
    ensure!(
        !u.pageable_mem_access().ctx("PAGEABLE_MEM_ACCESS")?,
        "pageable memory access with DISABLE_HMM"
    );
    // Without DISABLE_HMM the double's kernel has HMM: pageable access.
    let hmm = Uvm::open_default().ctx("open")?;
    hmm.initialize(0).ctx("INITIALIZE without DISABLE_HMM")?;
    ensure!(
        hmm.pageable_mem_access().ctx("PAGEABLE_MEM_ACCESS")?,
        "no pageable memory access without DISABLE_HMM"
    );
    let mm = Uvm::open_default().ctx("open mm file")?;
    mm.mm_initialize(u.fd()).ctx("MM_INITIALIZE")?;
    want_rm(
        mm.initialize(0),
        NV_ERR_INVALID_ARGUMENT,
        "INITIALIZE of an mm file",
    )?;
    want_rm(
        mm.pageable_mem_access(),
        NV_ERR_ILLEGAL_ACTION,
        "init-checked command on an mm file",
    )?;
    want_os(
        mm.mmap_raw(r.addr(), r.len(), rw, fixed, r.addr()),
        libc::EBADFD,
        "mmap of an mm file",
    )?;
    Ok(())
}

fn mm_initialize_rules() -> Outcome {
    fresh()?;
    let primary = Uvm::open_default().ctx("open")?;
    let fresh_file = Uvm::open_default().ctx("open")?;
    want_rm(
        fresh_file.mm_initialize(-1),
        NV_ERR_INVALID_ARGUMENT,
        "uvmFd -1",
    )?;
    let ctl = Ctl::open_default().ctx("ctl")?;
    want_rm(
        fresh_file.mm_initialize(ctl.fd()),
        NV_ERR_INVALID_ARGUMENT,
        "uvmFd of nvidiactl",
    )?;
    want_rm(
        fresh_file.mm_initialize(primary.fd()),
        NV_ERR_INVALID_ARGUMENT,
        "uvmFd of an uninitialised UVM file",
    )?;
    // Multi-process sharing mode: no mm association.
    let shared = Uvm::open_default().ctx("open")?;
    shared
        .initialize(init_flags::MULTI_PROCESS_SHARING_MODE)
        .ctx("INITIALIZE multi-process")?;
    want_rm(
        fresh_file.mm_initialize(shared.fd()),
        NV_WARN_NOTHING_TO_DO,
        "mm file of a multi-process VA space",
    )?;
    primary.initialize(0).ctx("INITIALIZE")?;
    want_rm(
        primary.mm_initialize(primary.fd()),
        NV_ERR_IN_USE,
        "MM_INITIALIZE of the primary itself",
    )?;
    // The file that got NOTHING_TO_DO is still uninitialised: usable.
    fresh_file
        .mm_initialize(primary.fd())
        .ctx("MM_INITIALIZE after NOTHING_TO_DO")?;
    want_rm(
        fresh_file.mm_initialize(primary.fd()),
        NV_ERR_IN_USE,
        "MM_INITIALIZE twice on one file",
    )?;
    let second = Uvm::open_default().ctx("open")?;
    want_rm(
        second.mm_initialize(primary.fd()),
        NV_ERR_INVALID_STATE,
        "a second mm file",
    )?;
    drop(fresh_file);
    want_rm(
        second.mm_initialize(primary.fd()),
        NV_ERR_PAGE_TABLE_NOT_AVAIL,
        "an mm file after the first closed",
    )?;
    // And the VA space can no longer get GPU VA spaces.
    let s = session(0)?;
    primary
        .register_gpu(&double_uuid(0), -1, 0)
        .ctx("REGISTER_GPU")?;
    let vas = s.vas()?;
    want_rm(
        primary.register_gpu_vaspace(&double_uuid(0), -1, s.client, vas),
        NV_ERR_PAGE_TABLE_NOT_AVAIL,
        "REGISTER_GPU_VASPACE after the mm file closed",
    )?;
    // Multi-process mode needs no mm file.
    shared
        .register_gpu(&double_uuid(0), -1, 0)
        .ctx("REGISTER_GPU (multi-process)")?;
    shared
        .register_gpu_vaspace(&double_uuid(0), -1, s.client, vas)
        .ctx("REGISTER_GPU_VASPACE (multi-process, no mm file)")?;
    Ok(())
}

fn register_gpu_needs_gpu_file() -> Outcome {
    fresh()?;
    let uuid = double_uuid(0);
    let u = Uvm::open_default().ctx("open")?;
    u.initialize(0).ctx("INITIALIZE")?;
    let ctl = Ctl::open_default().ctx("ctl")?;
    want_rm(
        u.register_gpu(&uuid, ctl.fd(), 0),
        NV_ERR_INSUFFICIENT_PERMISSIONS,
        "REGISTER_GPU holding only nvidiactl",
    )?;
    let other = Gpu::open_index(1).ctx("open nvidia1")?;
    want_rm(
        u.register_gpu(&uuid, -1, 0),
        NV_ERR_INSUFFICIENT_PERMISSIONS,
        "REGISTER_GPU of GPU 0 holding nvidia1",
    )?;
    let mut unknown = uuid;
    unknown[15] = 0x77;
    want_rm(
        u.register_gpu(&unknown, -1, 0),
        NV_ERR_GPU_UUID_NOT_FOUND,
        "unknown UUID",
    )?;
    let g0 = Gpu::open_index(0).ctx("open nvidia0")?;
    let out = u.register_gpu(&uuid, -1, 0).ctx("REGISTER_GPU")?;
    ensure!(
        out.gpu_uuid == uuid && out.numa_enabled == 0 && out.numa_node_id == -1,
        "outputs uuid {:02x?} numa {} node {}, want the UUID, 0, -1",
        out.gpu_uuid,
        out.numa_enabled,
        out.numa_node_id
    );
    want_rm(u.register_gpu(&uuid, -1, 0), NV_ERR_INVALID_DEVICE, "twice")?;
    // Registration does not need the GPU file afterwards.
    drop(g0);
    u.unregister_gpu(&uuid).ctx("UNREGISTER_GPU")?;
    want_rm(
        u.unregister_gpu(&uuid),
        NV_ERR_INVALID_DEVICE,
        "unregister twice",
    )?;
    want_rm(
        u.register_gpu(&uuid, -1, 0),
        NV_ERR_INSUFFICIENT_PERMISSIONS,
        "again after closing nvidia0",
    )?;
    u.register_gpu(&double_uuid(1), -1, 0)
        .ctx("REGISTER_GPU of GPU 1 with nvidia1 open")?;
    drop(other);
    Ok(())
}

fn register_gpu_vaspace_rules() -> Outcome {
    fresh()?;
    let s0 = session(0)?;
    let s1 = session(1)?;
    let (u0, u1) = (double_uuid(0), double_uuid(1));
    let uvm = Uvm::open_default().ctx("open")?;
    uvm.initialize(0).ctx("INITIALIZE")?;
    let vas = s0.vas()?;
    want_rm(
        uvm.register_gpu_vaspace(&u0, -1, s0.client, vas),
        NV_ERR_INVALID_DEVICE,
        "GPU not registered",
    )?;
    uvm.register_gpu(&u0, -1, 0).ctx("REGISTER_GPU")?;
    want_rm(
        uvm.register_gpu_vaspace(&u0, -1, s0.client, vas),
        NV_ERR_PAGE_TABLE_NOT_AVAIL,
        "no mm file",
    )?;
    let mm = Uvm::open_default().ctx("open mm")?;
    mm.mm_initialize(uvm.fd()).ctx("MM_INITIALIZE")?;
    want_rm(
        uvm.register_gpu_vaspace(&u0, -1, 0xdead_0000, vas),
        NV_ERR_INVALID_CLIENT,
        "unknown client",
    )?;
    want_rm(
        uvm.register_gpu_vaspace(&u0, -1, s0.client, 0x1234),
        NV_ERR_OBJECT_NOT_FOUND,
        "unknown handle",
    )?;
    want_rm(
        uvm.register_gpu_vaspace(&u0, -1, s0.client, s0.device),
        NV_ERR_INVALID_OBJECT,
        "a device, not a VA space",
    )?;
    let (plain, _) = s0
        .ctl
        .alloc_va_space(s0.client, s0.device, 0, Default::default())
        .ctx("plain VA space")?;
    want_rm(
        uvm.register_gpu_vaspace(&u0, -1, s0.client, plain),
        NV_ERR_INVALID_FLAGS,
        "a VA space not externally owned",
    )?;
    let vas1 = s1.vas()?;
    want_rm(
        uvm.register_gpu_vaspace(&u0, -1, s1.client, vas1),
        NV_ERR_OTHER_DEVICE_FOUND,
        "GPU 1's VA space for GPU 0",
    )?;
    // Handles are global: a client of another ctl file is found.
    uvm.register_gpu_vaspace(&u0, -1, s0.client, vas)
        .ctx("REGISTER_GPU_VASPACE")?;
    want_rm(
        uvm.register_gpu_vaspace(&u0, -1, s0.client, vas),
        NV_ERR_INVALID_DEVICE,
        "a second GPU VA space for GPU 0",
    )?;
    uvm.unregister_gpu_vaspace(&u0)
        .ctx("UNREGISTER_GPU_VASPACE")?;
    want_rm(
        uvm.unregister_gpu_vaspace(&u0),
        NV_ERR_INVALID_DEVICE,
        "unregister twice",
    )?;
    want_rm(
        uvm.unregister_gpu_vaspace(&u1),
        NV_ERR_INVALID_DEVICE,
        "unregister of an unregistered GPU",
    )?;
    uvm.register_gpu(&u1, -1, 0).ctx("REGISTER_GPU 1")?;
    uvm.register_gpu_vaspace(&u1, -1, s1.client, vas1)
        .ctx("GPU 1's VA space from another client")?;
    Ok(())
}

/// A TSG in `vas` and a channel in it (no ring).
fn channel(s: &S, vas: Handle) -> Result<(Handle, Handle), String> {
    let tsg = s
        .ctl
        .alloc_tsg(s.client, s.device, 0, nvclient::tsg_params(vas))
        .ctx("TSG")?;
    let ch = s
        .ctl
        .alloc_channel(
            s.client,
            tsg,
            0,
            class::AMPERE_CHANNEL_GPFIFO_A,
            Default::default(),
        )
        .ctx("channel")?;
    Ok((tsg, ch))
}

fn channel_registration() -> Outcome {
    fresh()?;
    let f = full(0)?;
    let s = &f.s;
    let (tsg, ch) = channel(s, f.vas)?;
    let base = 0x7000_0000_0000u64;
    let len = 64 * MIB;
    let g1 = Gpu::open_index(1).ctx("nvidia1")?;
    f.uvm
        .register_gpu(&double_uuid(1), -1, 0)
        .ctx("REGISTER_GPU 1")?;
    drop(g1);
    want_rm(
        f.uvm
            .register_channel(&double_uuid(1), -1, s.client, ch, base, len),
        NV_ERR_INVALID_DEVICE,
        "GPU without a GPU VA space",
    )?;
    want_rm(
        f.uvm
            .register_channel(&f.uuid, -1, s.client, tsg, base, len),
        NV_ERR_INVALID_OBJECT_HANDLE,
        "a TSG, not a channel",
    )?;
    let other_vas = s.vas()?;
    let (_, other) = channel(s, other_vas)?;
    want_rm(
        f.uvm
            .register_channel(&f.uuid, -1, s.client, other, base, len),
        NV_ERR_INVALID_CHANNEL,
        "a channel in another VA space",
    )?;
    for (b, l) in [(base + 1, len), (base, 0), (base, 100)] {
        want_rm(
            f.uvm.register_channel(&f.uuid, -1, s.client, ch, b, l),
            NV_ERR_INVALID_ADDRESS,
            &format!("base {b:#x} length {l:#x}"),
        )?;
    }
    f.uvm
        .register_channel(&f.uuid, -1, s.client, ch, base, len)
        .ctx("REGISTER_CHANNEL")?;
    want_rm(
        f.uvm
            .register_channel(&f.uuid, -1, s.client, ch, base + len, len),
        NV_ERR_INVALID_CHANNEL,
        "the same channel twice",
    )?;
    let (_, ch2) = channel(s, f.vas)?;
    want_rm(
        f.uvm
            .register_channel(&f.uuid, -1, s.client, ch2, base + len / 2, len),
        NV_ERR_UVM_ADDRESS_IN_USE,
        "overlapping channel ranges",
    )?;
    f.uvm
        .validate_va_range(base, len)
        .ctx("VALIDATE_VA_RANGE of the channel range")?;
    want_rm(
        f.uvm.free(base, len),
        NV_ERR_INVALID_ADDRESS,
        "UVM_FREE of a channel range",
    )?;
    f.uvm
        .unregister_channel(&f.uuid, s.client, ch)
        .ctx("UNREGISTER_CHANNEL")?;
    want_rm(
        f.uvm.unregister_channel(&f.uuid, s.client, ch),
        NV_ERR_INVALID_CHANNEL,
        "unregister twice",
    )?;
    want_rm(
        f.uvm.validate_va_range(base, len),
        NV_ERR_INVALID_ADDRESS,
        "the channel range after unregistering",
    )?;
    f.uvm
        .register_channel(&f.uuid, -1, s.client, ch2, base + len / 2, len)
        .ctx("REGISTER_CHANNEL in the freed VA")?;
    // A channel on GPU 1 for GPU 0.
    let s1 = session(1)?;
    let v1 = s1.vas()?;
    let (_, c1) = channel(&s1, v1)?;
    want_rm(
        f.uvm
            .register_channel(&f.uuid, -1, s1.client, c1, base + 4 * len, len),
        NV_ERR_OTHER_DEVICE_FOUND,
        "GPU 1's channel for GPU 0",
    )?;
    Ok(())
}

fn external_ranges_keep_memory() -> Outcome {
    fresh()?;
    let f = full(0)?;
    let s = &f.s;
    let base = 0x7100_0000_0000u64;
    let len = 8 * MIB;
    want_rm(
        f.uvm.create_external_range(base + 4096 + 1, len),
        NV_ERR_INVALID_ADDRESS,
        "unaligned external range",
    )?;
    f.uvm
        .create_external_range(base, len)
        .ctx("CREATE_EXTERNAL_RANGE")?;
    want_rm(
        f.uvm.create_external_range(base + MIB, len),
        NV_ERR_UVM_ADDRESS_IN_USE,
        "overlapping external range",
    )?;
    let f0 = s.heap_free()?;
    let mem = s
        .ctl
        .alloc_vram(s.client, s.device, 0, 4 * MIB)
        .ctx("VRAM")?;
    ensure!(s.heap_free()? == f0 - 4 * MIB, "VRAM not charged");
    let map = |b: u64, l: u64, off: u64, gpus: &[Uuid]| {
        f.uvm
            .map_external_allocation(b, l, off, gpus, s.client, mem.handle)
    };
    want_rm(
        map(base, 2 * MIB, 0, &[]),
        NV_ERR_INVALID_ARGUMENT,
        "no GPUs",
    )?;
    want_rm(
        map(base + len - MIB, 2 * MIB, 0, &[f.uuid]),
        NV_ERR_INVALID_ADDRESS,
        "past the external range",
    )?;
    want_rm(
        map(0x7200_0000_0000, 2 * MIB, 0, &[f.uuid]),
        NV_ERR_INVALID_ADDRESS,
        "outside any external range",
    )?;
    want_rm(
        map(base, 2 * MIB, 100, &[f.uuid]),
        NV_ERR_INVALID_ADDRESS,
        "unaligned offset",
    )?;
    want_rm(
        map(base, 4 * MIB, 2 * MIB, &[f.uuid]),
        NV_ERR_INVALID_OFFSET,
        "offset + length past the memory",
    )?;
    want_rm(
        map(base, 2 * MIB, 0, &[double_uuid(1)]),
        NV_ERR_INVALID_DEVICE,
        "a GPU without a GPU VA space",
    )?;
    let bad = GpuMappingAttributes {
        gpu_mapping_type: 9,
        ..uvm::default_attributes(&f.uuid)
    };
    want_rm(
        f.uvm
            .map_external_allocation_with(base, 2 * MIB, 0, &[bad], s.client, mem.handle),
        NV_ERR_INVALID_ARGUMENT,
        "mapping type 9",
    )?;
    want_rm(
        f.uvm
            .map_external_allocation(base, 2 * MIB, 0, &[f.uuid], s.client, 0x4242),
        NV_ERR_OBJECT_NOT_FOUND,
        "unknown memory handle",
    )?;
    // RM's lookup of a missing client (`nv_gpu_ops.c:11660-11669`,
    // `rs_server.c:3056-3058` at 595.45.04).
    want_rm(
        f.uvm
            .map_external_allocation(base, 2 * MIB, 0, &[f.uuid], 0xdead_0000, mem.handle),
        NV_ERR_INVALID_OBJECT_HANDLE,
        "unknown client",
    )?;
    map(base, 4 * MIB, 0, &[f.uuid]).ctx("MAP_EXTERNAL_ALLOCATION")?;
    // RM frees its handle; the UVM mapping keeps the VRAM.
    s.ctl
        .free(s.client, s.client, mem.handle)
        .ctx("RM_FREE of the mapped memory")?;
    ensure!(
        s.heap_free()? == f0 - 4 * MIB,
        "VRAM returned while UVM still maps it"
    );
    want_rm(
        f.uvm.free(base + 4096, len - 4096),
        NV_ERR_INVALID_ADDRESS,
        "FREE inside a range",
    )?;
    f.uvm
        .validate_va_range(base, len)
        .ctx("VALIDATE external")?;
    f.uvm.free(base, len).ctx("UVM_FREE")?;
    ensure!(s.heap_free()? == f0, "VRAM not returned after UVM_FREE");
    want_rm(f.uvm.free(base, len), NV_ERR_INVALID_ADDRESS, "FREE twice")?;
    // UNMAP_EXTERNAL drops the reference too.
    let mem = s
        .ctl
        .alloc_vram(s.client, s.device, 0, 2 * MIB)
        .ctx("VRAM")?;
    f.uvm.create_external_range(base, len).ctx("range")?;
    f.uvm
        .map_external_allocation(base, 2 * MIB, 0, &[f.uuid], s.client, mem.handle)
        .ctx("map")?;
    s.ctl.free(s.client, s.client, mem.handle).ctx("RM_FREE")?;
    ensure!(s.heap_free()? == f0 - 2 * MIB, "VRAM returned while mapped");
    f.uvm
        .unmap_external(base, 2 * MIB, &f.uuid)
        .ctx("UNMAP_EXTERNAL")?;
    ensure!(s.heap_free()? == f0, "VRAM kept after UNMAP_EXTERNAL");
    // Closing the VA space drops what is still mapped.
    let mem = s
        .ctl
        .alloc_vram(s.client, s.device, 0, 2 * MIB)
        .ctx("VRAM")?;
    f.uvm
        .map_external_allocation(base, 2 * MIB, 0, &[f.uuid], s.client, mem.handle)
        .ctx("map again")?;
    s.ctl.free(s.client, s.client, mem.handle).ctx("RM_FREE")?;
    let Full { s, uvm, _mm, .. } = f;
    drop(_mm);
    drop(uvm);
    ensure!(s.heap_free()? == f0, "VRAM kept after the VA space closed");
    Ok(())
}

fn managed_mmap_rules() -> Outcome {
    fresh()?;
    let f = full(0)?;
    let rw = libc::PROT_READ | libc::PROT_WRITE;
    let fixed = libc::MAP_SHARED | libc::MAP_FIXED;
    let m = f.uvm.map_managed(4 * MIB as usize).ctx("map_managed")?;
    f.uvm
        .validate_va_range(m.addr(), m.len() as u64)
        .ctx("VALIDATE_VA_RANGE of the managed range")?;
    want_rm(
        f.uvm.validate_va_range(m.addr(), 2 * MIB),
        NV_ERR_INVALID_ADDRESS,
        "VALIDATE of part of it",
    )?;
    let r = Reservation::new(2 * MIB as usize, CHUNK as usize).ctx("reserve")?;
    let (a, l) = (r.addr(), r.len());
    want_os(
        f.uvm.mmap_raw(a, l, rw, fixed, a + 4096),
        libc::EINVAL,
        "offset != address",
    )?;
    want_os(
        f.uvm
            .mmap_raw(a, l, rw, libc::MAP_PRIVATE | libc::MAP_FIXED, a),
        libc::EINVAL,
        "a private mapping",
    )?;
    want_os(
        f.uvm.mmap_raw(a, l, libc::PROT_READ, fixed, a),
        libc::EINVAL,
        "a read-only mapping",
    )?;
    // Mapping the same range again replaces it: the kernel closes the old
    // VMA (destroying its range and residency) before the new mmap.
    f.uvm
        .migrate(m.addr(), 2 * MIB, &f.uuid)
        .ctx("MIGRATE before remapping")?;
    ensure!(my_resident(0)? == vec![2 * MIB], "not resident");
    f.uvm
        .mmap_raw(m.addr(), m.len(), rw, fixed, m.addr())
        .ctx("the same range mapped again")?;
    f.uvm
        .validate_va_range(m.addr(), m.len() as u64)
        .ctx("the range after remapping")?;
    ensure!(
        my_resident(0)? == vec![0],
        "residency of the replaced range kept: {:?}",
        my_resident(0)?
    );
    want_rm(
        f.uvm.create_external_range(m.addr(), 2 * MIB),
        NV_ERR_UVM_ADDRESS_IN_USE,
        "external range over a managed one",
    )?;
    f.uvm.create_external_range(a, l as u64).ctx("external")?;
    want_os(
        f.uvm.mmap_raw(a, l, rw, fixed, a),
        libc::EADDRINUSE,
        "mmap over an external range",
    )?;
    f.uvm.free(a, l as u64).ctx("FREE external")?;
    want_rm(
        f.uvm.free(m.addr(), m.len() as u64),
        NV_ERR_INVALID_ADDRESS,
        "FREE of a managed range",
    )?;
    // Splitting and moving are refused.
    // SAFETY: part of our own managed mapping; the kernel refuses the split.
    let rc = unsafe { libc::munmap(m.addr() as usize as *mut libc::c_void, 4096) };
    ensure!(
        rc != 0 && crate::sys::errno() == libc::EINVAL,
        "partial munmap: rc {rc} errno {}, want EINVAL",
        crate::sys::errno()
    );
    // A forked child has another mm.
    let fd = f.uvm.fd();
    let code = in_child(move || {
        let r = match Reservation::new(2 * MIB as usize, CHUNK as usize) {
            Ok(r) => r,
            Err(_) => return 2,
        };
        // SAFETY: mapping over the child's own reservation.
        let p = unsafe {
            libc::mmap(
                r.addr() as usize as *mut libc::c_void,
                r.len(),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_FIXED,
                fd,
                r.addr() as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED && crate::sys::errno() == libc::EOPNOTSUPP {
            0
        } else {
            1
        }
    })?;
    ensure!(
        code == 0,
        "mmap from a forked child: code {code}, want EOPNOTSUPP"
    );
    // A multi-process VA space has no recorded mm: any process may map.
    let shared = Uvm::open_default().ctx("open")?;
    shared
        .initialize(init_flags::MULTI_PROCESS_SHARING_MODE)
        .ctx("INITIALIZE multi-process")?;
    let ms = shared
        .map_managed(2 * MIB as usize)
        .ctx("managed range of a multi-process VA space")?;
    drop(ms);
    m.unmap().ctx("munmap")?;
    // No range there any more: NV_ERR_INVALID_ADDRESS (uvm_va_range.c:766).
    let r = f.uvm.validate_va_range(a, l as u64);
    ensure!(
        r == Err(nvclient::Error::Rm(NV_ERR_INVALID_ADDRESS)),
        "a range left behind: VALIDATE gives {r:?}"
    );
    Ok(())
}

fn migrate_residency() -> Outcome {
    fresh()?;
    let f = full(0)?;
    let s = &f.s;
    let f0 = s.heap_free()?;
    let m = f.uvm.map_managed(8 * MIB as usize).ctx("map_managed")?;
    let (a, l) = (m.addr(), m.len() as u64);
    ensure!(s.heap_free()? == f0, "mmap alone took VRAM");
    f.uvm.migrate(a, 2 * MIB, &f.uuid).ctx("MIGRATE 2 MiB")?;
    ensure!(
        s.heap_free()? == f0 - 2 * MIB,
        "2 MiB resident not in HEAP_FREE"
    );
    f.uvm.migrate(a, l, &f.uuid).ctx("MIGRATE all")?;
    let free = s.heap_free()?;
    ensure!(free == f0 - l, "HEAP_FREE {free}, want {}", f0 - l);
    let info = s
        .ctl
        .vid_heap_info(s.client, s.device)
        .ctx("VID_HEAP INFO")?;
    ensure!(
        info.free == f0 - l,
        "VID_HEAP free {}, want {}",
        info.free,
        f0 - l
    );
    ensure!(
        my_resident(0)? == vec![l],
        "view: resident {:?}, want [{l}]",
        my_resident(0)?
    );
    let (heap, used, managed) = view_gpu(0)?;
    ensure!(
        heap == HEAP && used == HEAP - f0 + l && managed == l,
        "view gpu 0: heap {heap} used {used} managed {managed}"
    );
    f.uvm.migrate(a, l, &CPU_UUID).ctx("MIGRATE to the CPU")?;
    ensure!(s.heap_free()? == f0, "VRAM kept after migrating back");
    // Statuses.
    want_rm(
        f.uvm.migrate(a + 1, l, &f.uuid),
        NV_ERR_INVALID_ADDRESS,
        "unaligned",
    )?;
    want_rm(
        f.uvm.migrate(a, 0, &f.uuid),
        NV_ERR_INVALID_ADDRESS,
        "empty",
    )?;
    want_rm(
        f.uvm.migrate(a, l + 4096, &f.uuid),
        NV_ERR_INVALID_ADDRESS,
        "past the managed range",
    )?;
    f.uvm
        .create_external_range(0x7300_0000_0000, 2 * MIB)
        .ctx("external")?;
    want_rm(
        f.uvm.migrate(0x7300_0000_0000, 2 * MIB, &f.uuid),
        NV_ERR_INVALID_ADDRESS,
        "an external range",
    )?;
    let g1 = Gpu::open_index(1).ctx("nvidia1")?;
    f.uvm
        .register_gpu(&double_uuid(1), -1, 0)
        .ctx("REGISTER_GPU 1")?;
    drop(g1);
    want_rm(
        f.uvm.migrate(a, l, &double_uuid(1)),
        NV_ERR_INVALID_DEVICE,
        "to a GPU without a GPU VA space",
    )?;
    let mut p = MigrateParams {
        base: a,
        length: l,
        destination_uuid: f.uuid,
        flags: 0x4,
        cpu_numa_node: -1,
        ..Default::default()
    };
    want_rm(
        f.uvm.migrate_with(&mut p),
        NV_ERR_INVALID_ARGUMENT,
        "test-only flag",
    )?;
    p.flags = uvm::migrate_flags::ASYNC;
    f.uvm.migrate_with(&mut p).ctx("MIGRATE async")?;
    ensure!(s.heap_free()? == f0 - l, "async MIGRATE did not complete");
    drop(m);
    Ok(())
}

fn munmap_frees_residency() -> Outcome {
    fresh()?;
    let f = full(0)?;
    let f0 = f.s.heap_free()?;
    let m = f.uvm.map_managed(6 * MIB as usize).ctx("map_managed")?;
    f.uvm
        .migrate(m.addr(), m.len() as u64, &f.uuid)
        .ctx("MIGRATE")?;
    ensure!(f.s.heap_free()? == f0 - 6 * MIB, "not resident");
    m.unmap().ctx("munmap")?;
    ensure!(
        f.s.heap_free()? == f0,
        "HEAP_FREE {} after munmap, want {f0}",
        f.s.heap_free()?
    );
    ensure!(
        my_resident(0)? == vec![0],
        "view after munmap: {:?}",
        my_resident(0)?
    );
    Ok(())
}

fn eviction_across_va_spaces() -> Outcome {
    fresh()?;
    let a = full(0)?;
    // A second VA space (the same process may hold several).
    let b_uvm = Uvm::open_default().ctx("open")?;
    b_uvm.initialize(0).ctx("INITIALIZE B")?;
    let b_mm = Uvm::open_default().ctx("open")?;
    b_mm.mm_initialize(b_uvm.fd()).ctx("MM_INITIALIZE B")?;
    b_uvm.register_gpu(&a.uuid, -1, 0).ctx("REGISTER_GPU B")?;
    let b_vas = a.s.vas()?;
    b_uvm
        .register_gpu_vaspace(&a.uuid, -1, a.s.client, b_vas)
        .ctx("REGISTER_GPU_VASPACE B")?;
    let f0 = a.s.heap_free()?;
    ensure!(f0 == HEAP, "heap free {f0} at start, want {HEAP}");
    let ma = a.uvm.map_managed(200 * MIB as usize).ctx("A's range")?;
    let mb = b_uvm.map_managed(100 * MIB as usize).ctx("B's range")?;
    a.uvm
        .migrate(ma.addr(), 200 * MIB, &a.uuid)
        .ctx("MIGRATE A")?;
    ensure!(a.s.heap_free()? == HEAP - 200 * MIB, "A not resident");
    b_uvm
        .migrate(mb.addr(), 100 * MIB, &a.uuid)
        .ctx("MIGRATE B (needs eviction)")?;
    let r = my_resident(0)?;
    // 126 chunks fit: B's 50 evicted 24 of A's.
    ensure!(
        r == vec![152 * MIB, 100 * MIB],
        "resident per VA space {r:?}, want [152 MiB, 100 MiB]"
    );
    ensure!(a.s.heap_free()? == 0, "heap not full: {}", a.s.heap_free()?);
    // LRU: A's 24 oldest chunks went. A's first chunk comes back by
    // evicting the least recently used resident one, A's 25th.
    a.uvm
        .migrate(ma.addr(), 2 * MIB, &a.uuid)
        .ctx("MIGRATE A's first")?;
    ensure!(
        my_resident(0)? == vec![152 * MIB, 100 * MIB],
        "after re-migrating A's first chunk: {:?}",
        my_resident(0)?
    );
    b_uvm
        .migrate(mb.addr(), 2 * MIB, &a.uuid)
        .ctx("re-MIGRATE B's first (resident: no move)")?;
    ensure!(
        my_resident(0)? == vec![152 * MIB, 100 * MIB],
        "a resident chunk moved: {:?}",
        my_resident(0)?
    );
    drop(mb);
    ensure!(
        a.s.heap_free()? == 100 * MIB,
        "B's munmap returned {} bytes, want 100 MiB",
        a.s.heap_free()?
    );
    drop(ma);
    ensure!(a.s.heap_free()? == HEAP, "VRAM left after both unmapped");
    Ok(())
}

fn no_memory_when_nothing_evictable() -> Outcome {
    fresh()?;
    let f = full(0)?;
    let s = &f.s;
    let f0 = s.heap_free()?;
    let m = f.uvm.map_managed(4 * MIB as usize).ctx("map_managed")?;
    let hog = s
        .ctl
        .alloc_vram(s.client, s.device, 0, f0 - MIB)
        .ctx("RM VRAM filling the heap (rounded up to 2 MiB pages)")?;
    want_rm(
        f.uvm.migrate(m.addr(), 4 * MIB, &f.uuid),
        NV_ERR_NO_MEMORY,
        "MIGRATE with the heap full of RM memory",
    )?;
    ensure!(my_resident(0)? == vec![0], "something became resident");
    s.ctl.free(s.client, s.client, hog.handle).ctx("free")?;
    // RM allocations see managed residency as used.
    f.uvm
        .migrate(m.addr(), 4 * MIB, &f.uuid)
        .ctx("MIGRATE after freeing")?;
    want_rm(
        s.ctl.alloc_vram(s.client, s.device, 0, f0 - 2 * MIB),
        NV_ERR_NO_MEMORY,
        "RM allocation of what managed memory holds",
    )?;
    Ok(())
}

fn engine_touch() -> Outcome {
    fresh()?;
    let f = full(0)?;
    let s = &f.s;
    let f0 = s.heap_free()?;
    let bell = s
        .ctl
        .map_doorbell("/dev/nvidia0", s.client, s.device, s.sub)
        .ctx("doorbell")?;
    let tsg = s
        .ctl
        .alloc_tsg(s.client, s.device, 0, nvclient::tsg_params(f.vas))
        .ctx("TSG")?;
    let wc = s
        .ctl
        .alloc_work_channel(s.client, s.device, tsg, class::AMPERE_CHANNEL_GPFIFO_A, 16)
        .ctx("work channel")?;
    f.uvm
        .register_channel(
            &f.uuid,
            -1,
            s.client,
            wc.h_channel,
            0x7400_0000_0000,
            64 * MIB,
        )
        .ctx("REGISTER_CHANNEL")?;
    s.ctl
        .gpfifo_schedule(s.client, tsg, true)
        .ctx("GPFIFO_SCHEDULE")?;
    let m = f.uvm.map_managed(4 * MIB as usize).ctx("map_managed")?;
    let run = |items: &[u64], n: u64| -> Outcome {
        ensure!(wc.ring.submit(items) == items.len(), "ring full");
        ensure!(bell.ring(wc.token), "doorbell");
        let t0 = Instant::now();
        while wc.ring.completed() < n {
            ensure!(
                t0.elapsed() < Duration::from_secs(10),
                "{} of {n} items completed",
                wc.ring.completed()
            );
            sleep(Duration::from_millis(2));
        }
        Ok(())
    };
    run(&[work::touch(m.addr() + 2 * MIB + 4096)], 1)?;
    ensure!(
        s.heap_free()? == f0 - 2 * MIB,
        "after a touch: HEAP_FREE {}, want {}",
        s.heap_free()?,
        f0 - 2 * MIB
    );
    ensure!(
        my_resident(0)? == vec![2 * MIB],
        "view {:?}",
        my_resident(0)?
    );
    ensure!(wc.ring.faults() == 0, "faults {}", wc.ring.faults());
    // The same chunk again, then plain work: nothing more.
    run(&[work::touch(m.addr() + 2 * MIB), 1000], 3)?;
    ensure!(
        s.heap_free()? == f0 - 2 * MIB,
        "a resident chunk charged twice"
    );
    // Outside any managed range: a fault, and the item still completes.
    run(&[work::touch(0x7500_0000_0000)], 4)?;
    ensure!(wc.ring.faults() == 1, "faults {}, want 1", wc.ring.faults());
    drop(m);
    ensure!(s.heap_free()? == f0, "touched chunk kept after munmap");
    // A channel never registered with UVM: a fault.
    f.uvm
        .unregister_channel(&f.uuid, s.client, wc.h_channel)
        .ctx("UNREGISTER_CHANNEL")?;
    let m = f.uvm.map_managed(2 * MIB as usize).ctx("map_managed")?;
    run(&[work::touch(m.addr())], 5)?;
    ensure!(wc.ring.faults() == 2, "faults {}, want 2", wc.ring.faults());
    ensure!(
        s.heap_free()? == f0,
        "an unregistered channel made memory resident"
    );
    s.ctl
        .gpfifo_schedule(s.client, tsg, false)
        .ctx("GPFIFO_SCHEDULE off")?;
    Ok(())
}

/// A process killed while UVM_MIGRATE runs: UVM does not stop the
/// migration for the signal (no fatal-signal check at 595.45.04), the
/// process dies when the call returns, and its VA space's residency goes
/// back with its files.
fn kill_mid_migrate_returns_vram() -> Outcome {
    fresh()?;
    let obs = session(0)?;
    let f0 = obs.heap_free()?;
    let shared = Shared::new()?;
    let slot = &shared;
    // SAFETY: single-threaded test program; the child runs the closure and
    // exits.
    let pid = unsafe { libc::fork() };
    ensure!(pid >= 0, "fork failed");
    if pid == 0 {
        let r = (|| -> Result<(), String> {
            let f = full(0)?;
            let m = f.uvm.map_managed(200 * MIB as usize).ctx("map")?;
            slot.set(0, 1);
            f.uvm.migrate(m.addr(), 200 * MIB, &f.uuid).ctx("MIGRATE")?;
            slot.set(1, 1);
            Ok(())
        })();
        if let Err(e) = r {
            println!("#   child: {e}");
        }
        // SAFETY: leave the child without running the parent's destructors.
        unsafe { libc::_exit(0) };
    }
    let t0 = Instant::now();
    let mut at_kill = 0;
    while t0.elapsed() < Duration::from_secs(20) {
        if shared.get(0) == 1 {
            at_kill = view_gpu(0)?.2;
            if at_kill > 0 {
                break;
            }
        }
        sleep(Duration::from_micros(500));
    }
    // SAFETY: our child, killed and reaped once.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        libc::waitpid(pid, core::ptr::null_mut(), 0);
    }
    ensure!(at_kill > 0, "the migration never started");
    ensure!(
        shared.get(1) == 0 && at_kill < 200 * MIB,
        "killed after the migration finished ({at_kill} bytes resident)"
    );
    let free = obs.heap_free()?;
    ensure!(free == f0, "HEAP_FREE {free} after the kill, want {f0}");
    let (_, _, managed) = view_gpu(0)?;
    ensure!(managed == 0, "view: {managed} managed bytes left");
    ensure!(
        view_spaces()?.is_empty(),
        "VA spaces left: {:?}",
        view_spaces()?
    );
    Ok(())
}

fn policy_and_peer() -> Outcome {
    fresh()?;
    let f = full(0)?;
    let m = f.uvm.map_managed(4 * MIB as usize).ctx("map")?;
    let (a, l) = (m.addr(), m.len() as u64);
    f.uvm
        .set_preferred_location(a, l, &f.uuid)
        .ctx("SET_PREFERRED_LOCATION")?;
    f.uvm
        .set_preferred_location(a, l, &CPU_UUID)
        .ctx("SET_PREFERRED_LOCATION cpu")?;
    want_rm(
        f.uvm.set_preferred_location(a, l, &double_uuid(1)),
        NV_ERR_INVALID_DEVICE,
        "an unregistered GPU",
    )?;
    want_rm(
        f.uvm.set_preferred_location(a, l + 4096, &f.uuid),
        NV_ERR_INVALID_ADDRESS,
        "past the managed range",
    )?;
    f.uvm
        .unset_preferred_location(a, l)
        .ctx("UNSET_PREFERRED")?;
    f.uvm.enable_read_duplication(a, l).ctx("read dup on")?;
    f.uvm.disable_read_duplication(a, l).ctx("read dup off")?;
    f.uvm
        .set_accessed_by(a, l, &f.uuid)
        .ctx("SET_ACCESSED_BY")?;
    f.uvm
        .unset_accessed_by(a, l, &f.uuid)
        .ctx("UNSET_ACCESSED_BY")?;
    want_rm(
        f.uvm.enable_read_duplication(a + 1, l),
        NV_ERR_INVALID_ADDRESS,
        "unaligned",
    )?;
    ensure!(f.s.heap_free()? == HEAP, "a policy call moved memory");
    want_rm(
        f.uvm.enable_peer_access(&f.uuid, &f.uuid),
        NV_ERR_INVALID_DEVICE,
        "peer access with itself",
    )?;
    want_rm(
        f.uvm.enable_peer_access(&f.uuid, &double_uuid(1)),
        NV_ERR_INVALID_DEVICE,
        "peer access with an unregistered GPU",
    )?;
    let g1 = Gpu::open_index(1).ctx("nvidia1")?;
    f.uvm
        .register_gpu(&double_uuid(1), -1, 0)
        .ctx("REGISTER_GPU 1")?;
    drop(g1);
    want_rm(
        f.uvm.enable_peer_access(&f.uuid, &double_uuid(1)),
        NV_ERR_NOT_SUPPORTED,
        "peer access (no peer links in the double)",
    )?;
    want_rm(
        f.uvm.disable_peer_access(&f.uuid, &double_uuid(1)),
        NV_ERR_INVALID_DEVICE,
        "disable of a pair never enabled",
    )?;
    want_rm(
        f.uvm.command_bytes(
            Command::AllocSemaphorePool,
            &mut vec![0u8; nvclient::uvm::block_size(Command::AllocSemaphorePool)],
        ),
        NV_ERR_NOT_SUPPORTED,
        "ALLOC_SEMAPHORE_POOL (not modelled)",
    )?;
    Ok(())
}

/// Range groups (uvm_range_group.c, uvm_migrate.c): numbered per VA space,
/// set only over managed memory, migrated as UVM_MIGRATE migrates.
fn range_groups() -> Outcome {
    fresh()?;
    let f = full(0)?;
    let s = &f.s;
    let f0 = s.heap_free()?;
    let g1 = f.uvm.create_range_group().ctx("CREATE_RANGE_GROUP")?;
    let g2 = f.uvm.create_range_group().ctx("CREATE_RANGE_GROUP 2")?;
    ensure!((g1, g2) == (1, 2), "group ids {g1}, {g2}: want 1, 2");
    // Another VA space counts its own groups and cannot reach these.
    let other = full(0)?;
    ensure!(
        other.uvm.create_range_group().ctx("other CREATE")? == 1,
        "a second VA space's first group is not 1"
    );
    want_rm(
        other.uvm.destroy_range_group(g2),
        NV_ERR_OBJECT_NOT_FOUND,
        "DESTROY of another VA space's group",
    )?;
    let m = f.uvm.map_managed(8 * MIB as usize).ctx("map_managed")?;
    let (a, l) = (m.addr(), m.len() as u64);
    f.uvm
        .set_range_group(g1, a, 4 * MIB)
        .ctx("SET_RANGE_GROUP")?;
    want_rm(
        f.uvm.set_range_group(g1, a + 1, 4 * MIB),
        NV_ERR_INVALID_ADDRESS,
        "SET unaligned",
    )?;
    want_rm(
        f.uvm.set_range_group(g1, a, l + 4096),
        NV_ERR_INVALID_ADDRESS,
        "SET past the managed range",
    )?;
    want_rm(
        f.uvm.set_range_group(99, a, 4 * MIB),
        NV_ERR_OBJECT_NOT_FOUND,
        "SET of a group that does not exist",
    )?;
    want_rm(
        other.uvm.set_range_group(1, a, 4 * MIB),
        NV_ERR_INVALID_ADDRESS,
        "SET over another VA space's managed memory",
    )?;
    f.uvm
        .create_external_range(0x7300_0000_0000, 2 * MIB)
        .ctx("external")?;
    want_rm(
        f.uvm.set_range_group(g1, 0x7300_0000_0000, 2 * MIB),
        NV_ERR_INVALID_ADDRESS,
        "SET over an external range",
    )?;
    ensure!(s.heap_free()? == f0, "SET_RANGE_GROUP moved memory");
    // Only the group's 4 MiB move.
    f.uvm
        .migrate_range_group(g1, &f.uuid)
        .ctx("MIGRATE_RANGE_GROUP to the GPU")?;
    ensure!(
        s.heap_free()? == f0 - 4 * MIB && my_resident(0)?.contains(&(4 * MIB)),
        "after MIGRATE_RANGE_GROUP: free {}, resident {:?}",
        s.heap_free()?,
        my_resident(0)?
    );
    // Half of it leaves the group; the rest goes back to the CPU.
    f.uvm
        .set_range_group(RANGE_GROUP_NONE, a, 2 * MIB)
        .ctx("SET to no group")?;
    f.uvm
        .migrate_range_group(g1, &CPU_UUID)
        .ctx("MIGRATE_RANGE_GROUP to the CPU")?;
    ensure!(
        s.heap_free()? == f0 - 2 * MIB,
        "after the group went to the CPU: free {}",
        s.heap_free()?
    );
    f.uvm
        .migrate_range_group(g2, &f.uuid)
        .ctx("MIGRATE of an empty group")?;
    ensure!(
        s.heap_free()? == f0 - 2 * MIB,
        "an empty group moved memory"
    );
    // The destination is checked before the group.
    want_rm(
        f.uvm.migrate_range_group(99, &double_uuid(1)),
        NV_ERR_INVALID_DEVICE,
        "MIGRATE_RANGE_GROUP to an unregistered GPU",
    )?;
    want_rm(
        f.uvm.migrate_range_group(99, &f.uuid),
        NV_ERR_OBJECT_NOT_FOUND,
        "MIGRATE_RANGE_GROUP of no group",
    )?;
    // munmap takes the range out of its group.
    f.uvm.set_range_group(g1, a, l).ctx("SET all")?;
    drop(m);
    ensure!(s.heap_free()? == f0, "munmap left residency");
    f.uvm
        .migrate_range_group(g1, &f.uuid)
        .ctx("MIGRATE of a group whose memory is gone")?;
    ensure!(s.heap_free()? == f0, "a gone range was made resident");
    f.uvm.destroy_range_group(g1).ctx("DESTROY")?;
    want_rm(
        f.uvm.destroy_range_group(g1),
        NV_ERR_OBJECT_NOT_FOUND,
        "DESTROY twice",
    )?;
    Ok(())
}

/// MAP_DYNAMIC_PARALLELISM_REGION (uvm_va_range.c:1736-1817): one GPU page
/// of PTEs with nothing behind them; freed by UVM_FREE.
fn dynamic_parallelism_region() -> Outcome {
    fresh()?;
    let f = full(0)?;
    let s = &f.s;
    let f0 = s.heap_free()?;
    let base = 0x7400_0000_0000u64;
    f.uvm
        .map_dynamic_parallelism_region(base, 64 << 10, &f.uuid)
        .ctx("MAP_DYNAMIC_PARALLELISM_REGION 64 KiB")?;
    ensure!(s.heap_free()? == f0, "the region took VRAM");
    ensure!(view_gpu(0)?.2 == 0, "the region counts as managed");
    f.uvm
        .validate_va_range(base, 64 << 10)
        .ctx("VALIDATE the region")?;
    want_rm(
        f.uvm
            .map_dynamic_parallelism_region(base, 64 << 10, &f.uuid),
        NV_ERR_UVM_ADDRESS_IN_USE,
        "the same region twice",
    )?;
    for (b, l, what) in [
        (base + (2 << 20), 12 << 10, "not a power of two"),
        (base + (2 << 20), 128 << 10, "not a GPU page size"),
        (base + (2 << 20) + 4096, 64 << 10, "not aligned to its size"),
        (base + 1, 4096, "not 4 KiB aligned"),
        (0, 4096, "at 0"),
        (base, 0, "empty"),
    ] {
        want_rm(
            f.uvm.map_dynamic_parallelism_region(b, l, &f.uuid),
            NV_ERR_INVALID_ADDRESS,
            what,
        )?;
    }
    want_rm(
        f.uvm
            .map_dynamic_parallelism_region(1 << 49, 2 << 20, &f.uuid),
        NV_ERR_OUT_OF_RANGE,
        "beyond the GPU's VA",
    )?;
    want_rm(
        f.uvm
            .map_dynamic_parallelism_region(base + (2 << 20), 4096, &double_uuid(1)),
        NV_ERR_INVALID_DEVICE,
        "on an unregistered GPU",
    )?;
    let m = f.uvm.map_managed(4 * MIB as usize).ctx("map_managed")?;
    want_rm(
        f.uvm
            .map_dynamic_parallelism_region(m.addr(), 4096, &f.uuid),
        NV_ERR_UVM_ADDRESS_IN_USE,
        "over managed memory",
    )?;
    want_rm(
        f.uvm.migrate(base, 64 << 10, &f.uuid),
        NV_ERR_INVALID_ADDRESS,
        "MIGRATE of the region",
    )?;
    f.uvm
        .map_dynamic_parallelism_region(base + (2 << 20), 2 << 20, &f.uuid)
        .ctx("a 2 MiB region")?;
    ensure!(s.heap_free()? == f0, "the regions took VRAM");
    f.uvm.free(base, 64 << 10).ctx("UVM_FREE of the region")?;
    want_rm(
        f.uvm.validate_va_range(base, 64 << 10),
        NV_ERR_INVALID_ADDRESS,
        "VALIDATE after FREE",
    )?;
    want_rm(
        f.uvm.free(base, 64 << 10),
        NV_ERR_INVALID_ADDRESS,
        "FREE twice",
    )?;
    drop(m);
    Ok(())
}

/// TOOLS_READ/WRITE_PROCESS_MEMORY (uvm_tools.c:2438-2610): managed memory
/// of the file's own VA space, a page at a time, into and out of the
/// caller's buffer.
fn tools_process_memory() -> Outcome {
    fresh()?;
    let f = full(0)?;
    let m = f.uvm.map_managed(4 * MIB as usize).ctx("map_managed")?;
    let (a, l) = (m.addr(), m.len() as u64);
    let mut buf = vec![0xabu8; 10_000];
    let n = f
        .uvm
        .tools_read_process_memory(a + 100, &mut buf)
        .ctx("TOOLS_READ")?;
    ensure!(n == 10_000, "read {n} bytes, want 10000");
    ensure!(
        buf.iter().all(|&b| b == 0),
        "memory never written did not read as zeros"
    );
    let n = f
        .uvm
        .tools_write_process_memory(a, &[7u8; 5000])
        .ctx("TOOLS_WRITE")?;
    ensure!(n == 5000, "wrote {n} bytes, want 5000");
    // A read that runs off the managed range stops at its end.
    let mut p = uvm::ToolsProcessMemoryParams {
        buffer: buf.as_mut_ptr() as u64,
        size: 8192,
        target_va: a + l - 4096,
        ..Default::default()
    };
    // SAFETY: `buf` is 10000 bytes, borrowed for the call.
    let r = unsafe {
        f.uvm
            .tools_process_memory(Command::ToolsReadProcessMemory, &mut p)
    };
    want_rm(r, NV_ERR_INVALID_ADDRESS, "read past the managed range")?;
    ensure!(
        p.bytes_done == 4096,
        "bytes read {}, want 4096",
        p.bytes_done
    );
    f.uvm
        .create_external_range(0x7300_0000_0000, 2 * MIB)
        .ctx("external")?;
    want_rm(
        f.uvm
            .tools_read_process_memory(0x7300_0000_0000, &mut buf[..16]),
        NV_ERR_INVALID_ADDRESS,
        "read of an external range",
    )?;
    let mut p = uvm::ToolsProcessMemoryParams {
        buffer: 8,
        size: 16,
        target_va: a,
        ..Default::default()
    };
    // SAFETY: address 8 is below mmap_min_addr, never mapped.
    let r = unsafe {
        f.uvm
            .tools_process_memory(Command::ToolsReadProcessMemory, &mut p)
    };
    want_rm(r, NV_ERR_INVALID_ARGUMENT, "read into an unmapped buffer")?;
    ensure!(
        matches!(
            f.uvm
                .call(Command::ToolsReadProcessMemory.number(), &mut [0u8; 40]),
            Err(nvclient::Error::Invalid(_))
        ),
        "nvclient let a raw tools block through"
    );
    drop(m);
    Ok(())
}

fn close_order_and_teardown() -> Outcome {
    fresh()?;
    let f = full(0)?;
    let f0 = f.s.heap_free()?;
    let m = f.uvm.map_managed(4 * MIB as usize).ctx("map")?;
    f.uvm.migrate(m.addr(), 4 * MIB, &f.uuid).ctx("MIGRATE")?;
    let Full { s, uvm, _mm, .. } = f;
    // The primary fd closes first; the VMA and the mm file keep its VA
    // space.
    drop(uvm);
    ensure!(
        view_spaces()?.len() == 1,
        "VA space gone while still in use"
    );
    ensure!(s.heap_free()? == f0 - 4 * MIB, "residency gone too early");
    drop(m);
    ensure!(s.heap_free()? == f0, "munmap after the primary closed");
    ensure!(
        view_spaces()?.len() == 1,
        "VA space gone before the mm file"
    );
    drop(_mm);
    ensure!(
        view_spaces()?.is_empty(),
        "VA space left after its files closed: {:?}",
        view_spaces()?
    );
    Ok(())
}

fn teardown() -> Outcome {
    if module_loaded("nvidia") {
        sh("rmmod nvidia")?;
    }
    remove_uvm_nodes();
    ensure!(!module_loaded("nvidia"), "still loaded");
    ensure!(
        char_major("nvidia-uvm").is_none(),
        "nvidia-uvm still in /proc/devices"
    );
    ensure!(!exists(VIEW), "debugfs view left behind");
    Ok(())
}
