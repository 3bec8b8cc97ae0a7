// SPDX-License-Identifier: GPL-2.0

//! Range groups, the dynamic-parallelism region, tools process memory, teardown.

use super::*;

/// Range groups (uvm_range_group.c, uvm_migrate.c): numbered per VA space,
/// set only over managed memory, migrated as UVM_MIGRATE migrates.
pub(super) fn range_groups() -> Outcome {
    fresh()?;
    let f = full(0)?;
    let s = &f.s;
    let f0 = s.heap_free()?;
    let g1 = f.uvm.create_range_group().ctx("CREATE_RANGE_GROUP")?;
    let g2 = f.uvm.create_range_group().ctx("CREATE_RANGE_GROUP 2")?;
    ensure!((g1, g2) == (1, 2), "group ids {g1}, {g2}: want 1, 2");
    // Another VA space counts its own groups and cannot reach these.
    let other = full(0)?;
    // Its page levels come from the heap; the rest is counted from there.
    ensure!(
        s.heap_free()? == f0 - PAGE_LEVELS,
        "after a second VA space: HEAP_FREE {}, want {}",
        s.heap_free()?,
        f0 - PAGE_LEVELS
    );
    let f0 = f0 - PAGE_LEVELS;
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
pub(super) fn dynamic_parallelism_region() -> Outcome {
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
pub(super) fn tools_process_memory() -> Outcome {
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

pub(super) fn close_order_and_teardown() -> Outcome {
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

pub(super) fn teardown() -> Outcome {
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
