// SPDX-License-Identifier: GPL-2.0

//! Work submission through the doorbell protocol of vgpu's driver double
//! (`selftests/nvidia/engine.rs`): a ring in mapped system memory named by
//! the channel's USERD, items of simulated GPU time, and a doorbell write of
//! the channel's work-submit token at offset 0x90 of a mapped USERMODE page.
//!
//! The ring starts with the channel's 512-byte USERD, whose `GPGet` and
//! `GPPut` sit where every GPFIFO class has them; the double keeps its
//! counters in USERD words hardware ignores, and its work items (instead of
//! GPFIFO entries pointing at pushbuffers) after USERD:
//!
//! | offset | field | written by |
//! |---|---|---|
//! | 0x00 | u64 completed: work items finished (double's own) | engine |
//! | 0x08 | u64 channel_ns: simulated ns this channel ran (double's own) | engine |
//! | 0x10 | u64 tsg_ns: simulated ns its TSG ran (double's own) | engine |
//! | 0x18 | u64 faults: touch items that could not be served (double's own) | engine |
//! | 0x88 | u32 GPGet: index of the next entry to run | engine |
//! | 0x8c | u32 GPPut: index of the next free entry | client |
//! | 0x200 | u64 entries\[n\]: work items | client |
//!
//! An item is GPU time in ns, or (bit 63 set, [`touch`]) GPU work touching
//! a managed (UVM) address: the double makes that address's 2 MiB chunk
//! resident on the channel's GPU, in the UVM VA space where the channel was
//! registered, before the item completes; a touch that cannot be served
//! counts in `faults` and completes all the same.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::abi::{class, ChannelAllocParams, Handle, UsermodeAllocParams};
use crate::{Ctl, Error, Mapping, Result};

/// Offset of `put` (USERD `GPPut`).
pub const RING_PUT: usize = crate::abi::userd::GP_PUT;
/// Offset of `get` (USERD `GPGet`).
pub const RING_GET: usize = crate::abi::userd::GP_GET;
/// Offset of `completed`.
pub const RING_COMPLETED: usize = 0x00;
/// Offset of `channel_ns`.
pub const RING_CHANNEL_NS: usize = 0x08;
/// Offset of `tsg_ns`.
pub const RING_TSG_NS: usize = 0x10;
/// Offset of `faults`.
pub const RING_FAULTS: usize = 0x18;
/// Offset of the first entry (after USERD).
pub const RING_ENTRIES: usize = 0x200;
/// Bit 63 of an item: a touch of a managed address.
pub const TOUCH_BIT: u64 = 1 << 63;

/// A work item touching managed address `addr` (page aligned) from the GPU.
pub fn touch(addr: u64) -> u64 {
    TOUCH_BIT | addr
}

/// Bytes of system memory a ring of `entries` items needs (whole pages).
pub fn ring_bytes(entries: u32) -> u64 {
    let raw = RING_ENTRIES as u64 + u64::from(entries) * 8;
    raw.next_multiple_of(4096)
}

/// Channel alloc params whose ring is `entries` items at `offset` of the
/// system memory object `h_ring` (USERD 0).
pub fn ring_channel_params(h_ring: Handle, offset: u64, entries: u32) -> ChannelAllocParams {
    let mut p = ChannelAllocParams {
        gp_fifo_entries: entries,
        ..Default::default()
    };
    p.h_userd_memory[0] = h_ring;
    p.userd_offset[0] = offset;
    p
}

/// A mapped ring: the client's view of a channel's work queue.
#[derive(Debug)]
pub struct Ring {
    map: Mapping,
    offset: usize,
    entries: u32,
}

impl Ring {
    /// A ring of `entries` items at `offset` of a CPU mapping.
    pub fn new(map: Mapping, offset: usize, entries: u32) -> Result<Ring> {
        let need = (entries as usize)
            .checked_mul(8)
            .and_then(|n| n.checked_add(RING_ENTRIES + offset))
            .ok_or(Error::Invalid("ring too large"))?;
        if entries < 2 || need > map.len() || !offset.is_multiple_of(8) {
            return Err(Error::Invalid("ring does not fit its mapping"));
        }
        Ok(Ring {
            map,
            offset,
            entries,
        })
    }

    fn u32_at(&self, off: usize) -> u32 {
        self.map.read_u32(self.offset + off).unwrap_or(0)
    }

    fn u64_at(&self, off: usize) -> u64 {
        self.map.read_u64(self.offset + off).unwrap_or(0)
    }

    /// Number of entries.
    pub fn entries(&self) -> u32 {
        self.entries
    }

    /// `put` (client's next free index).
    pub fn put(&self) -> u32 {
        self.u32_at(RING_PUT)
    }

    /// `get` (engine's next index to run).
    pub fn get(&self) -> u32 {
        self.u32_at(RING_GET)
    }

    /// Items the engine finished.
    pub fn completed(&self) -> u64 {
        self.u64_at(RING_COMPLETED)
    }

    /// Simulated ns this channel ran.
    pub fn channel_ns(&self) -> u64 {
        self.u64_at(RING_CHANNEL_NS)
    }

    /// Simulated ns the channel's TSG ran (as of the channel's last turn).
    pub fn tsg_ns(&self) -> u64 {
        self.u64_at(RING_TSG_NS)
    }

    /// Touch items the engine could not serve.
    pub fn faults(&self) -> u64 {
        self.u64_at(RING_FAULTS)
    }

    /// How many more items fit (one slot stays empty: put == get is empty).
    pub fn free_slots(&self) -> u32 {
        let (put, get) = (self.put() % self.entries, self.get() % self.entries);
        (get + self.entries - put - 1) % self.entries
    }

    /// Queues as many of `items` (ns each) as fit and publishes the new
    /// `put`; returns how many were queued. Ring the doorbell afterwards.
    pub fn submit(&self, items: &[u64]) -> usize {
        let n = items.len().min(self.free_slots() as usize);
        let mut put = self.put() % self.entries;
        for &ns in &items[..n] {
            self.map
                .write_u64(self.offset + RING_ENTRIES + put as usize * 8, ns);
            put = (put + 1) % self.entries;
        }
        // Entries before put: x86 keeps stores in order, and the writes are
        // volatile, so the engine never sees put ahead of its entries.
        self.map.write_u32(self.offset + RING_PUT, put);
        n
    }

    /// Fills every free slot with items of `ns`; returns how many it queued.
    pub fn fill(&self, ns: u64) -> usize {
        let free = self.free_slots() as usize;
        self.submit(&vec![ns; free])
    }
}

/// A channel with a ring, ready to take work.
#[derive(Debug)]
pub struct WorkChannel {
    /// The system memory object holding the ring.
    pub h_ring: Handle,
    /// The channel.
    pub h_channel: Handle,
    /// Its work-submit token (what the doorbell takes).
    pub token: u32,
    /// The mapped ring.
    pub ring: Ring,
}

/// A mapped USERMODE page: the doorbell.
#[derive(Debug)]
pub struct Doorbell {
    /// The usermode object.
    pub h_usermode: Handle,
    map: Mapping,
}

impl Doorbell {
    /// Rings the doorbell for a channel's token; false if the write failed
    /// or the previous token was not taken within a second.
    ///
    /// The double's engine polls the page and clears the slot when it takes
    /// a token, so a second write before that would overwrite the first (a
    /// lost doorbell). This waits for the slot to read 0 before writing.
    pub fn ring(&self, token: u32) -> bool {
        let t0 = Instant::now();
        while self.map.read_u32(class::USERMODE_DOORBELL_OFFSET) != Some(0) {
            if t0.elapsed() > Duration::from_secs(1) {
                return false;
            }
            std::thread::sleep(Duration::from_micros(100));
        }
        self.map.ring_doorbell(token)
    }
}

impl Ctl {
    /// Sets up a channel of `class` under `h_parent` (a TSG or a device of
    /// `h_device`) whose ring has `entries` items: allocates and maps a
    /// system memory object for the ring (through this ctl node's path),
    /// allocates the channel naming it as USERD 0, and fetches its token.
    pub fn alloc_work_channel(
        &self,
        h_client: Handle,
        h_device: Handle,
        h_parent: Handle,
        class: u32,
        entries: u32,
    ) -> Result<WorkChannel> {
        let size = ring_bytes(entries);
        let mem = self.alloc_sysmem(h_client, h_device, 0, size)?;
        let map = self.map_memory(self.path(), h_client, h_device, mem.handle, 0, size, 0)?;
        let ring = Ring::new(map, 0, entries)?;
        let h_channel = self.alloc_channel(
            h_client,
            h_parent,
            0,
            class,
            ring_channel_params(mem.handle, 0, entries),
        )?;
        let token = self.work_submit_token(h_client, h_channel)?;
        Ok(WorkChannel {
            h_ring: mem.handle,
            h_channel,
            token,
            ring,
        })
    }

    /// Allocates a HOPPER_USERMODE_A page under `h_subdevice` and maps it
    /// through a fresh fd of the GPU node at `gpu_node`.
    pub fn map_doorbell(
        &self,
        gpu_node: impl AsRef<Path>,
        h_client: Handle,
        h_device: Handle,
        h_subdevice: Handle,
    ) -> Result<Doorbell> {
        let h_usermode = self.alloc_usermode(
            h_client,
            h_subdevice,
            0,
            class::HOPPER_USERMODE_A,
            Some(UsermodeAllocParams::default()),
        )?;
        let map = self.map_memory(
            gpu_node,
            h_client,
            h_device,
            h_usermode,
            0,
            class::USERMODE_PAGE_SIZE,
            0,
        )?;
        Ok(Doorbell { h_usermode, map })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zero_ring(entries: u32) -> Ring {
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/zero")
            .unwrap();
        let m = Mapping::map(&f, ring_bytes(entries) as usize, true, 0).unwrap();
        Ring::new(m, 0, entries).unwrap()
    }

    #[test]
    fn touch_items() {
        assert_eq!(touch(0x7f00_0020_0000), 0x8000_7f00_0020_0000);
        assert_eq!(touch(0) & !TOUCH_BIT, 0);
        assert_ne!(touch(4096) & TOUCH_BIT, 0);
    }

    #[test]
    fn sizes_and_params() {
        assert_eq!(ring_bytes(1), 4096);
        // 512 bytes of USERD, then 8 bytes an entry.
        assert_eq!(ring_bytes(448), 4096);
        assert_eq!(ring_bytes(449), 8192);
        let p = ring_channel_params(0x1234, 0x80, 16);
        let b = p.to_bytes();
        assert_eq!(&b[16..20], &16u32.to_ne_bytes());
        assert_eq!(&b[32..36], &0x1234u32.to_ne_bytes());
        assert_eq!(&b[64..72], &0x80u64.to_ne_bytes());
    }

    #[test]
    fn submit_wraps_and_stops_when_full() {
        let r = zero_ring(4);
        assert_eq!(r.free_slots(), 3);
        assert_eq!(r.submit(&[10, 20]), 2);
        assert_eq!(r.put(), 2);
        assert_eq!(r.free_slots(), 1);
        assert_eq!(r.submit(&[30, 40]), 1, "one slot stays empty");
        assert_eq!(r.put(), 3);
        assert_eq!(r.map.read_u64(RING_ENTRIES + 16), Some(30));
        assert_eq!(r.faults(), 0);
        // The engine takes two items.
        r.map.write_u32(RING_GET, 2);
        assert_eq!(r.free_slots(), 2);
        assert_eq!(r.fill(7), 2);
        assert_eq!(r.put(), 1, "put wrapped around");
        assert_eq!(r.map.read_u64(RING_ENTRIES), Some(7));
        assert_eq!(r.free_slots(), 0);
        let f = std::fs::File::open("/dev/zero").unwrap();
        let small = Mapping::map(&f, 4096, false, 0).unwrap();
        assert!(
            Ring::new(small, 0, 600).is_err(),
            "600 entries need 2 pages"
        );
    }
}
