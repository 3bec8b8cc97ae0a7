// SPDX-License-Identifier: GPL-2.0

//! Managed memory: mmap rules, migration, residency and eviction.

use super::*;

pub(super) fn managed_mmap_rules() -> Outcome {
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

pub(super) fn migrate_residency() -> Outcome {
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

pub(super) fn munmap_frees_residency() -> Outcome {
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

pub(super) fn eviction_across_va_spaces() -> Outcome {
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
    // The two VA spaces' page levels come from the same heap: 125
    // chunks fit beside them.
    let room = HEAP - 2 * PAGE_LEVELS;
    let f0 = a.s.heap_free()?;
    ensure!(f0 == room, "heap free {f0} at start, want {room}");
    let ma = a.uvm.map_managed(200 * MIB as usize).ctx("A's range")?;
    let mb = b_uvm.map_managed(100 * MIB as usize).ctx("B's range")?;
    a.uvm
        .migrate(ma.addr(), 200 * MIB, &a.uuid)
        .ctx("MIGRATE A")?;
    ensure!(a.s.heap_free()? == room - 200 * MIB, "A not resident");
    b_uvm
        .migrate(mb.addr(), 100 * MIB, &a.uuid)
        .ctx("MIGRATE B (needs eviction)")?;
    let r = my_resident(0)?;
    // 125 chunks fit: B's 50 evicted 25 of A's.
    ensure!(
        room / CHUNK == 125 && r == vec![150 * MIB, 100 * MIB],
        "resident per VA space {r:?}, want [150 MiB, 100 MiB]"
    );
    // What is left is less than a chunk.
    ensure!(
        a.s.heap_free()? == room - 250 * MIB,
        "heap not full: {}",
        a.s.heap_free()?
    );
    // LRU: A's 25 oldest chunks went. A's first chunk comes back by
    // evicting the least recently used resident one, A's 26th.
    a.uvm
        .migrate(ma.addr(), 2 * MIB, &a.uuid)
        .ctx("MIGRATE A's first")?;
    ensure!(
        my_resident(0)? == vec![150 * MIB, 100 * MIB],
        "after re-migrating A's first chunk: {:?}",
        my_resident(0)?
    );
    b_uvm
        .migrate(mb.addr(), 2 * MIB, &a.uuid)
        .ctx("re-MIGRATE B's first (resident: no move)")?;
    ensure!(
        my_resident(0)? == vec![150 * MIB, 100 * MIB],
        "a resident chunk moved: {:?}",
        my_resident(0)?
    );
    drop(mb);
    ensure!(
        a.s.heap_free()? == room - 150 * MIB,
        "HEAP_FREE {} after B's munmap, want {} (100 MiB back)",
        a.s.heap_free()?,
        room - 150 * MIB
    );
    drop(ma);
    ensure!(a.s.heap_free()? == room, "VRAM left after both unmapped");
    Ok(())
}

pub(super) fn no_memory_when_nothing_evictable() -> Outcome {
    fresh()?;
    let f = full(0)?;
    let s = &f.s;
    let f0 = s.heap_free()?;
    ensure!(
        f0 == HEAP - PAGE_LEVELS,
        "heap free {f0}, want {} (the VA space's page levels taken)",
        HEAP - PAGE_LEVELS
    );
    let m = f.uvm.map_managed(4 * MIB as usize).ctx("map_managed")?;
    // Every whole 2 MiB page of the heap: beside the VA space's page
    // levels, less than a chunk is left.
    let hog = s
        .ctl
        .alloc_vram(s.client, s.device, 0, HEAP - 3 * MIB)
        .ctx("RM VRAM filling the heap (rounded up to 2 MiB pages)")?;
    ensure!(
        s.heap_free()? == 2 * MIB - PAGE_LEVELS,
        "heap free {} with the heap filled",
        s.heap_free()?
    );
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
