// SPDX-License-Identifier: GPL-2.0

//! The test-only views in debugfs (`nvidia-double/gpus`,
//! `nvidia-double/engine`, `nvidia-double/uvm`, `nvidia-double/vram`).

use core::fmt;

use super::state::RangeKind;
use crate::base::ObjKind;
use crate::rm::state::Driver;
use kernel::prelude::*;

impl Driver {
    /// The test-only residency view (debugfs `nvidia-double/uvm`).
    /// The test-only view of each GPU's state (debugfs
    /// `nvidia-double/gpus`), one line a GPU: `gpu G heap H used U managed
    /// M dp D tsgs T`, where `used` is the VRAM taken from the heap (RM
    /// objects and managed residency), `managed` the managed residency in
    /// it, `dp` the dynamic-parallelism regions mapped on the GPU and
    /// `tsgs` the TSGs its engine has (a bare channel's own TSG included).
    pub(crate) fn gpus_view(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rm = self.rm.lock();
        for g in 0..self.gpus.len() {
            let dp = rm
                .uvm
                .spaces
                .iter()
                .flat_map(|s| s.ranges.iter())
                .filter(|r| matches!(r.kind, RangeKind::SkedReflected { gpu } if gpu as usize == g))
                .count();
            writeln!(
                f,
                "gpu {g} heap {} used {} managed {} dp {dp} tsgs {}",
                self.heap(g as u32),
                rm.vram_used[g],
                rm.uvm.resident[g],
                self.gpus[g].engine.tsg_count(),
            )?;
        }
        Ok(())
    }

    /// The test-only view of each GPU's engine (debugfs
    /// `nvidia-double/engine`), one line a TSG: `gpu G tsg ID client C tgid
    /// P ns N`, where `tgid` is the process that created its client (0 if
    /// the client is gone) and `ns` the engine time it has run, so that a
    /// test can tell the shares of processes whose channels the double
    /// runs (libcuda's GPFIFO grids, `rm/gpfifo.rs`).
    pub(crate) fn engine_view(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for g in 0..self.gpus.len() {
            let Ok(times) = self.gpus[g].engine.tsg_times() else {
                return Err(fmt::Error);
            };
            let rm = self.rm.lock();
            for (id, client, ns) in times.iter() {
                let tgid = rm
                    .clients
                    .iter()
                    .find(|c| c.handle == *client)
                    .map_or(0, |c| c.proc);
                writeln!(f, "gpu {g} tsg {id} client {client:#x} tgid {tgid} ns {ns}")?;
            }
        }
        Ok(())
    }

    pub(crate) fn uvm_view(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rm = self.rm.lock();
        for g in 0..self.gpus.len() {
            writeln!(
                f,
                "gpu {g} heap {} used {} managed {}",
                self.heap(g as u32),
                rm.vram_used[g],
                rm.uvm.resident[g]
            )?;
        }
        for s in rm.uvm.spaces.iter() {
            write!(
                f,
                "space {} tgid {} ranges {} faults {} resident",
                s.id,
                s.tgid,
                s.ranges.len(),
                s.faults
            )?;
            for g in 0..self.gpus.len() {
                write!(f, " {}", s.resident_bytes(g as u32))?;
            }
            writeln!(f)?;
        }
        Ok(())
    }

    /// The test-only view of the VRAM RM objects hold (debugfs
    /// `nvidia-double/vram`), for a ledger that does not match vgpu's:
    /// one line an object holding VRAM, `client C handle H parent P kind K
    /// gpu G bytes B refs R` (handles in hex; `refs` counts the handles
    /// and UVM mappings that share the memory), then one line for each
    /// VRAM memory no object names, `mem ID gpu G bytes B refs R`. Each
    /// client's lines follow a line `client C`.
    pub(crate) fn vram_view(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rm = self.rm.lock();
        let mut named = KVec::<u32>::new();
        for c in rm.clients.iter() {
            writeln!(f, "client {:#x}", c.handle)?;
            for o in c.objects.iter() {
                let held: [(&str, u32); 2] = match o.kind {
                    ObjKind::Memory { mem } => [("memory", mem), ("", 0)],
                    ObjKind::Usermode { mem, .. } => [("usermode", mem), ("", 0)],
                    ObjKind::Tsg { grctx, .. } => [("tsg-grctx", grctx), ("", 0)],
                    ObjKind::Channel { mem, grctx, .. } => {
                        [("channel", mem), ("channel-grctx", grctx)]
                    }
                    ObjKind::VaSpace { mem, .. } => [("vaspace", mem), ("", 0)],
                    ObjKind::VirtualMemory { mem, .. } => [("virtual", mem), ("", 0)],
                    _ => continue,
                };
                for (kind, id) in held {
                    let Some(m) = rm.mems.iter().find(|m| m.id == id && id != 0) else {
                        continue;
                    };
                    if !m.vram {
                        continue;
                    }
                    let _ = named.push(id, GFP_KERNEL);
                    writeln!(
                        f,
                        "client {:#x} handle {:#x} parent {:#x} kind {kind} gpu {} bytes {} refs {}",
                        c.handle, o.handle, o.parent, m.gpu, m.size, m.refs
                    )?;
                }
            }
        }
        for m in rm.mems.iter().filter(|m| m.vram && !named.contains(&m.id)) {
            writeln!(
                f,
                "mem {} gpu {} bytes {} refs {}",
                m.id, m.gpu, m.size, m.refs
            )?;
        }
        Ok(())
    }
}
