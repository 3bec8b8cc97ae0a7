// SPDX-License-Identifier: GPL-2.0

//! GPFIFO channels (issue 40): a channel whose ring is at a GPU virtual
//! address, as libcuda makes them, runs real GPFIFO entries and their
//! pushbuffers (`selftests/nvidia/rm/gpfifo.rs`).

use super::*;
use nvclient::abi::pushbuf::{self, copy, host, GpEntry};
use nvclient::abi::ChannelAllocParams;

const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;
/// Where the test maps its 2 MiB of VRAM: an NV50_MEMORY_VIRTUAL range
/// placed at 8 GiB.
const BASE: u64 = 8 * GIB;
/// Offsets in that memory: USERD, the ring, pushbuffers, semaphores and
/// two buffers.
const RING: u64 = 0x1000;
const PB: u64 = 0x2000;
const SEM: u64 = 0x10000;
const BUF_A: u64 = 0x20000;
const BUF_B: u64 = 0x30000;
const ENTRIES: u32 = 64;

/// A host semaphore operation `op` (SEM_EXECUTE's low bits) with a 32-bit
/// `payload` at `addr`, on subchannel 0.
fn host_semaphore(addr: u64, payload: u32, op: u32) -> [u32; 6] {
    [
        pushbuf::incrementing(0, host::SEM_ADDR_LO, 5),
        addr as u32,
        (addr >> 32) as u32,
        payload,
        0,
        op,
    ]
}

/// Writes pushbuffer `words` at memory offset `at` and queues its entry
/// at `slot` of the ring; returns the new put.
fn queue(map: &nvclient::Mapping, slot: u32, at: u64, words: &[u32]) -> Result<u32, String> {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    ensure!(map.write_bytes(at as usize, &bytes), "pushbuffer write");
    let entry = GpEntry::segment(BASE + at, words.len() as u32);
    ensure!(
        map.write_u64((RING + u64::from(slot) * 8) as usize, entry),
        "entry write"
    );
    Ok(slot + 1)
}

/// Waits until the channel's GPGet reads `want`.
fn wait_get(map: &nvclient::Mapping, want: u32) -> Outcome {
    let t0 = Instant::now();
    loop {
        let get = map.read_u32(abi::userd::GP_GET).unwrap_or(u32::MAX);
        if get == want {
            return Ok(());
        }
        ensure!(
            t0.elapsed() < Duration::from_secs(5),
            "GPGet {get} after 5 s, want {want}"
        );
        sleep(Duration::from_millis(1));
    }
}

/// A channel allocated with `gpFifoOffset`, its ring and USERD in VRAM
/// mapped into a GPU VA range: its first entry, queued before its TSG is
/// scheduled and run once it is (no doorbell), writes a host semaphore,
/// binds the copy engine, fills a buffer and copies it, releasing a
/// semaphore after the copy; its second waits on a host acquire until the
/// CPU writes the value, then releases; a third, whose pushbuffer is not
/// mapped, completes with one fault counted in USERD.
pub(super) fn gpfifo_runs_semaphores_copies_and_acquires() -> Outcome {
    fresh()?;
    let s = session(0)?;
    let (ctl, c, dev) = (&s.ctl, s.client, s.device);
    let bell = ctl
        .map_doorbell(s.gpu_path(), c, dev, s.sub)
        .ctx("doorbell")?;
    let mut v = nvclient::vram_params(c, 4 * MIB);
    v.flags |= heap::ALLOC_FLAGS_VIRTUAL | heap::ALLOC_FLAGS_FIXED_ADDRESS_ALLOCATE;
    v.offset = BASE;
    let mut b = v.to_bytes();
    let range = ctl
        .alloc(c, dev, 0, class::NV50_MEMORY_VIRTUAL, &mut b)
        .ctx("virtual range")?;
    let mem = s.vram(2 * MIB).ctx("VRAM")?.handle;
    let (mut b, at) = super::mappings::nvos46([c, dev, range, mem], 0, 2 * MIB, BASE)?;
    ctl.ioctl(Escape::RmMapMemoryDma.nr(), &mut b)
        .ctx("RM_MAP_MEMORY_DMA")?;
    let status = u32::from_ne_bytes([b[at + 8], b[at + 9], b[at + 10], b[at + 11]]);
    ensure!(status == NV_OK, "RM_MAP_MEMORY_DMA status {status:#x}");
    let map = ctl
        .map_memory(s.gpu_path(), c, dev, mem, 0, 2 * MIB, 0)
        .ctx("map VRAM")?;
    let tsg = ctl
        .alloc_tsg(c, dev, 0, nvclient::tsg_params(0))
        .ctx("tsg")?;
    let mut p = ChannelAllocParams {
        gp_fifo_offset: BASE + RING,
        gp_fifo_entries: ENTRIES,
        ..Default::default()
    };
    p.h_userd_memory[0] = mem;
    let ch = ctl
        .alloc_channel(c, tsg, 0, class::AMPERE_CHANNEL_GPFIFO_A, p)
        .ctx("channel")?;
    let token = ctl.work_submit_token(c, ch).ctx("token")?;

    // 1: a release, a fill of BUF_A and its copy to BUF_B.
    let mut w = Vec::new();
    w.extend(host_semaphore(BASE + SEM, 0x1234, 1));
    w.extend([
        pushbuf::incrementing(4, host::SET_OBJECT, 1),
        class::HOPPER_DMA_COPY_A,
    ]);
    w.extend([
        pushbuf::incrementing(4, copy::SET_REMAP_CONST_A, 3),
        0xa5a5_a5a5,
        0,
        // DST_X from CONST_A, 4-byte components, one of them.
        4 | 3 << 16,
        pushbuf::incrementing(4, copy::OFFSET_OUT_UPPER, 2),
        ((BASE + BUF_A) >> 32) as u32,
        (BASE + BUF_A) as u32,
        pushbuf::incrementing(4, copy::LINE_LENGTH_IN, 2),
        64,
        1,
        // Non-pipelined, pitch to pitch, remapped.
        pushbuf::incrementing(4, copy::LAUNCH_DMA, 1),
        2 | 1 << 7 | 1 << 8 | 1 << 10,
    ]);
    w.extend([
        pushbuf::incrementing(4, copy::SET_SEMAPHORE_A, 3),
        ((BASE + SEM + 0x10) >> 32) as u32,
        (BASE + SEM + 0x10) as u32,
        2,
        pushbuf::incrementing(4, copy::OFFSET_IN_UPPER, 4),
        ((BASE + BUF_A) >> 32) as u32,
        (BASE + BUF_A) as u32,
        ((BASE + BUF_B) >> 32) as u32,
        (BASE + BUF_B) as u32,
        pushbuf::incrementing(4, copy::LINE_LENGTH_IN, 1),
        256,
        // Non-pipelined, pitch to pitch, a one-word semaphore after.
        pushbuf::incrementing(4, copy::LAUNCH_DMA, 1),
        2 | 1 << 3 | 1 << 7 | 1 << 8,
    ]);
    // Queued before the TSG is scheduled, with no doorbell, as libcuda's
    // cuCtxCreate queues its channels' first work: scheduling fetches it.
    let put = queue(&map, 0, PB, &w)?;
    ensure!(map.write_u32(abi::userd::GP_PUT, put), "GPPut");
    sleep(Duration::from_millis(20));
    let get = map.read_u32(abi::userd::GP_GET).unwrap_or(u32::MAX);
    ensure!(get == 0, "ran before its TSG was scheduled: GPGet {get}");
    ctl.gpfifo_schedule(c, tsg, true).ctx("GPFIFO_SCHEDULE")?;
    wait_get(&map, 1)?;
    let word = |off: u64| map.read_u32(off as usize).unwrap_or(0);
    ensure!(word(SEM) == 0x1234, "host release wrote {:#x}", word(SEM));
    ensure!(
        word(SEM + 0x10) == 2,
        "copy's semaphore wrote {:#x}",
        word(SEM + 0x10)
    );
    let mut a = vec![0u8; 257];
    let mut bb = vec![0u8; 257];
    ensure!(map.read_bytes(BUF_A as usize, &mut a), "read A");
    ensure!(map.read_bytes(BUF_B as usize, &mut bb), "read B");
    ensure!(
        a[..256].iter().all(|&x| x == 0xa5) && a[256] == 0,
        "fill wrote {:x?}",
        &a[250..]
    );
    ensure!(
        bb[..256].iter().all(|&x| x == 0xa5) && bb[256] == 0,
        "copy wrote {:x?}",
        &bb[250..]
    );

    // 2: an acquire of 7 at SEM + 0x20, then a release of 8 at SEM + 0x30.
    let mut w = Vec::new();
    w.extend(host_semaphore(BASE + SEM + 0x20, 7, 0));
    w.extend(host_semaphore(BASE + SEM + 0x30, 8, 1));
    let put = queue(&map, put, PB + 0x1000, &w)?;
    ensure!(map.write_u32(abi::userd::GP_PUT, put), "GPPut");
    ensure!(bell.ring(token), "doorbell");
    sleep(Duration::from_millis(100));
    let get = map.read_u32(abi::userd::GP_GET).unwrap_or(0);
    ensure!(
        get == 1 && word(SEM + 0x30) == 0,
        "ran past an unsatisfied acquire: GPGet {get}, release {:#x}",
        word(SEM + 0x30)
    );
    ensure!(map.write_u32((SEM + 0x20) as usize, 7), "CPU write");
    wait_get(&map, 2)?;
    ensure!(
        word(SEM + 0x30) == 8,
        "release after the acquire wrote {:#x}",
        word(SEM + 0x30)
    );

    // 3: a segment nothing maps: skipped, one fault.
    let entry = GpEntry::segment(BASE + 64 * MIB, 16);
    ensure!(
        map.write_u64((RING + u64::from(put) * 8) as usize, entry),
        "entry write"
    );
    ensure!(map.write_u32(abi::userd::GP_PUT, put + 1), "GPPut");
    ensure!(bell.ring(token), "doorbell");
    wait_get(&map, 3)?;
    let faults = map.read_u64(0x18).unwrap_or(0);
    ensure!(faults == 1, "faults {faults}, want 1");
    drop(map);
    s.free(c).ctx("free client")?;
    Ok(())
}
