// SPDX-License-Identifier: GPL-2.0

//! The test-only views in debugfs (`nvidia-double/gpus`,
//! `nvidia-double/uvm`).

use core::fmt;

use super::state::RangeKind;
use crate::rm::state::Driver;

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
}
