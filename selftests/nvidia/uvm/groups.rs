// SPDX-License-Identifier: GPL-2.0

//! Range groups: made, destroyed, ranges put in them, and migrated.

use kernel::prelude::*;

use super::state::Group;
use crate::base::StatusResult;
use crate::nv::abi::{status::*, Wire};
use crate::nv::uvm::{
    range_ok, MigrateRangeGroupParams, RangeGroupParams, SetRangeGroupParams, CPU_UUID,
    RANGE_GROUP_NONE,
};
use crate::rm::state::Driver;

impl Driver {
    /// UVM_CREATE_RANGE_GROUP: a new group, numbered per VA space from 1
    /// (uvm_range_group.c:88-122).
    pub(crate) fn uvm_create_range_group(&self, id: u64, p: &mut [u8]) -> StatusResult {
        let gid = self.with_space(id, |rm, si| {
            let s = &mut rm.uvm.spaces[si];
            let gid = s.last_group + 1;
            s.groups
                .push(
                    Group {
                        id: gid,
                        ranges: KVec::new(),
                    },
                    GFP_KERNEL,
                )
                .map_err(|_| NV_ERR_NO_MEMORY)?;
            s.last_group = gid;
            Ok(gid)
        })?;
        let mut q = RangeGroupParams::decode(p);
        q.range_group_id = gid;
        q.encode(p);
        Ok(())
    }

    /// UVM_DESTROY_RANGE_GROUP: a group of this VA space, else
    /// NV_ERR_OBJECT_NOT_FOUND (uvm_range_group.c:148-152); its addresses
    /// leave it, the memory stays.
    pub(crate) fn uvm_destroy_range_group(&self, id: u64, p: &mut [u8]) -> StatusResult {
        let q = RangeGroupParams::decode(p);
        self.with_space(id, |rm, si| {
            let s = &mut rm.uvm.spaces[si];
            let gi = s
                .groups
                .iter()
                .position(|g| g.id == q.range_group_id)
                .ok_or(NV_ERR_OBJECT_NOT_FOUND)?;
            let _ = s.groups.remove(gi);
            Ok(())
        })
    }

    /// UVM_SET_RANGE_GROUP (uvm_range_group.c:287-365): page-aligned range
    /// (NV_ERR_INVALID_ADDRESS), a group of this VA space or none
    /// (NV_ERR_OBJECT_NOT_FOUND), covered by managed ranges without a gap
    /// (NV_ERR_INVALID_ADDRESS). The double's groups always allow migration
    /// (PREVENT_MIGRATION is not modelled), so nothing moves (:340-341).
    pub(crate) fn uvm_set_range_group(&self, id: u64, p: &mut [u8]) -> StatusResult {
        let q = SetRangeGroupParams::decode(p);
        if !range_ok(q.requested_base, q.length) || q.requested_base == 0 {
            return Err(NV_ERR_INVALID_ADDRESS);
        }
        self.with_space(id, |rm, si| {
            let s = &mut rm.uvm.spaces[si];
            let gi = if q.range_group_id == RANGE_GROUP_NONE {
                None
            } else {
                Some(
                    s.groups
                        .iter()
                        .position(|g| g.id == q.range_group_id)
                        .ok_or(NV_ERR_OBJECT_NOT_FOUND)?,
                )
            };
            if !s.fully_managed(q.requested_base, q.length) {
                return Err(NV_ERR_INVALID_ADDRESS);
            }
            s.ungroup(q.requested_base, q.length)?;
            if let Some(gi) = gi {
                s.groups[gi]
                    .ranges
                    .push((q.requested_base, q.length), GFP_KERNEL)
                    .map_err(|_| NV_ERR_NO_MEMORY)?;
            }
            Ok(())
        })
    }

    /// UVM_MIGRATE_RANGE_GROUP (uvm_migrate.c:1093-1200): the destination
    /// is the CPU or a GPU with a GPU VA space (NV_ERR_INVALID_DEVICE,
    /// checked first), the group one of this VA space
    /// (NV_ERR_OBJECT_NOT_FOUND); each of its ranges is migrated as by
    /// UVM_MIGRATE (managed memory only, NV_ERR_INVALID_ADDRESS).
    pub(crate) fn uvm_migrate_range_group(&self, id: u64, p: &mut [u8]) -> StatusResult {
        let q = MigrateRangeGroupParams::decode(p);
        let dest = if q.destination_uuid == CPU_UUID {
            None
        } else {
            Some(
                self.gpu_by_uuid(&q.destination_uuid)
                    .ok_or(NV_ERR_INVALID_DEVICE)?,
            )
        };
        let pieces = self.with_space(id, |rm, si| {
            let s = &rm.uvm.spaces[si];
            if dest.is_some_and(|g| !s.has_vaspace(g)) {
                return Err(NV_ERR_INVALID_DEVICE);
            }
            let g = s
                .groups
                .iter()
                .find(|g| g.id == q.range_group_id)
                .ok_or(NV_ERR_OBJECT_NOT_FOUND)?;
            let mut pieces = KVec::new();
            for &r in g.ranges.iter() {
                pieces.push(r, GFP_KERNEL).map_err(|_| NV_ERR_NO_MEMORY)?;
            }
            Ok(pieces)
        })?;
        for &(base, len) in pieces.iter() {
            self.migrate_chunks(id, base, len, dest)?;
        }
        Ok(())
    }
}
