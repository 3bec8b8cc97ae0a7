// SPDX-License-Identifier: GPL-2.0

//! Semaphore pools: made by UVM_ALLOC_SEMAPHORE_POOL, mapped for the CPU
//! by an mmap of exactly their range, released into by an asynchronous
//! UVM_MIGRATE, freed by UVM_FREE once the CPU's mapping is gone
//! (uvm_va_range.c:333-424, 1846-1895; uvm.c:847-864; uvm_migrate.c:879-1060;
//! uvm_map_external.c:1381-1398 at 550.163.01).

use super::*;
use nvclient::uvm::{default_attributes, migrate_flags, MigrateParams, Reservation};

/// Reads the 32-bit word at user address `a`.
fn word_at(a: u64) -> u32 {
    // SAFETY: `a` is 4-byte aligned inside the pool's CPU mapping, which
    // the caller holds for the read.
    unsafe { core::ptr::read_volatile(a as usize as *const u32) }
}

pub(super) fn semaphore_pool() -> Outcome {
    fresh()?;
    let f = full(0)?;
    let len = 2 * MIB;
    let va = Reservation::new(len as usize, len as usize).ctx("reserve")?;
    let base = va.addr();
    let attrs = [default_attributes(&f.uuid)];
    want_rm(
        f.uvm.alloc_semaphore_pool(base + 1, len, &attrs),
        NV_ERR_INVALID_ADDRESS,
        "an unaligned pool",
    )?;
    let mut cached = default_attributes(&f.uuid);
    cached.gpu_caching_type = 3;
    want_rm(
        f.uvm.alloc_semaphore_pool(base, len, &[cached]),
        NV_ERR_INVALID_ARGUMENT,
        "an unknown caching type",
    )?;
    want_rm(
        f.uvm
            .alloc_semaphore_pool(base, len, &[default_attributes(&double_uuid(1))]),
        NV_ERR_INVALID_DEVICE,
        "a GPU not registered",
    )?;
    f.uvm
        .alloc_semaphore_pool(base, len, &attrs)
        .ctx("ALLOC_SEMAPHORE_POOL")?;
    want_rm(
        f.uvm.alloc_semaphore_pool(base, len, &attrs),
        NV_ERR_UVM_ADDRESS_IN_USE,
        "the same range twice",
    )?;
    // The CPU's mapping: exactly the pool, at offset = address.
    want_os(
        f.uvm.mmap_raw(
            base,
            (len / 2) as usize,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_FIXED,
            base,
        ),
        libc::EADDRINUSE,
        "an mmap of half the pool",
    )?;
    f.uvm
        .mmap_raw(
            base,
            len as usize,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_FIXED,
            base,
        )
        .ctx("mmap of the pool")?;
    ensure!(word_at(base + 8) == 0, "a new pool is not zeroed");
    want_rm(
        f.uvm.free(base, len),
        NV_ERR_INVALID_ARGUMENT,
        "UVM_FREE of a pool the CPU maps",
    )?;
    // An asynchronous migration releases its semaphore in the pool.
    let m = f.uvm.map_managed(2 * MIB as usize).ctx("map_managed")?;
    let migrate = |sem: u64, payload: u32| {
        let mut p = MigrateParams {
            base: m.addr(),
            length: m.len() as u64,
            destination_uuid: f.uuid,
            flags: migrate_flags::ASYNC,
            semaphore_address: sem,
            semaphore_payload: payload,
            cpu_numa_node: -1,
            ..Default::default()
        };
        f.uvm.migrate_with(&mut p)
    };
    want_rm(
        migrate(base + 2, 7),
        NV_ERR_INVALID_ADDRESS,
        "a semaphore not 4-byte aligned",
    )?;
    want_rm(
        migrate(m.addr(), 7),
        NV_ERR_INVALID_ADDRESS,
        "a semaphore outside any pool",
    )?;
    ensure!(word_at(base + 8) == 0, "a refused migration released");
    migrate(base + 8, 0x1234).ctx("MIGRATE with a semaphore")?;
    ensure!(
        word_at(base + 8) == 0x1234,
        "semaphore {:#x} after the migration, want 0x1234",
        word_at(base + 8)
    );
    ensure!(
        my_resident(0)? == vec![2 * MIB],
        "view {:?}",
        my_resident(0)?
    );
    // Gone from the CPU, the pool can be freed.
    // SAFETY: the pool's mapping, made above; nothing reads it after.
    let rc = unsafe { libc::munmap(base as usize as *mut libc::c_void, len as usize) };
    ensure!(rc == 0, "munmap of the pool");
    f.uvm.free(base, len).ctx("UVM_FREE of the pool")?;
    want_rm(
        f.uvm.validate_va_range(base, len),
        NV_ERR_INVALID_ADDRESS,
        "the pool after UVM_FREE",
    )?;
    drop(va);
    Ok(())
}
