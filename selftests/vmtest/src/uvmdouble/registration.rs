// SPDX-License-Identifier: GPL-2.0

//! Nodes, transport, file types, MM_INITIALIZE and GPU and VA space registration.

use super::*;

pub(super) fn setup() -> Outcome {
    fresh()?;
    ensure!(exists("/dev/nvidia-uvm"), "/dev/nvidia-uvm not made");
    ensure!(exists(VIEW), "{VIEW} missing (debugfs mounted?)");
    Ok(())
}

pub(super) fn nodes_from_proc_devices() -> Outcome {
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

pub(super) fn gid_info_uuids() -> Outcome {
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

pub(super) fn transport() -> Outcome {
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

pub(super) fn file_types() -> Outcome {
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

pub(super) fn mm_initialize_rules() -> Outcome {
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

pub(super) fn register_gpu_needs_gpu_file() -> Outcome {
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

pub(super) fn register_gpu_vaspace_rules() -> Outcome {
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
