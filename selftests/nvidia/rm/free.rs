// SPDX-License-Identifier: GPL-2.0

//! RM_FREE (and a kernel client's NV01_FREE): a client, or an object and
//! its subtree, and what they hold outside the client's list.

use super::state::{Driver, Object, Rm};
use crate::base::{parse, status_of, store, ObjKind, StatusResult};
use crate::file::NvFile;
use crate::nv::abi::{self, status::*};
use kernel::{prelude::*, sync::ArcBorrow};

impl Driver {
    /// RM_FREE on a file.
    pub(crate) fn ioctl_free(&self, f: &ArcBorrow<'_, NvFile>, p: &mut [u8]) -> Result {
        let mut a: abi::Nvos00 = parse(p)?;
        let mut rm = self.rm.lock();
        a.status = status_of(self.free(&mut rm, a.h_root, a.h_object_old, Some(f.client_id())));
        store(&a, p);
        Ok(())
    }

    /// A kernel client's NV01_FREE.
    pub(crate) fn kernel_free(&self, a: &abi::Nvos00) -> StatusResult {
        let mut rm = self.rm.lock();
        self.free(&mut rm, a.h_root, a.h_object_old, None)
    }

    /// Undoes what an object of client `client` holds outside the
    /// client's list.
    pub(crate) fn release_object(&self, rm: &mut Rm, client: u32, o: Object) {
        match o.kind {
            // A subdevice's client gives up its GPU's compute-mode
            // reservation (`subdeviceReleaseComputeModeReservation_IMPL`,
            // `kernel/gpu/subdevice/subdevice.c:431-448` at 550.163.01).
            ObjKind::Subdevice { gpu } => {
                if let Some(r) = rm.compute_reservation.get_mut(gpu as usize) {
                    if *r == client {
                        *r = 0;
                    }
                }
            }
            ObjKind::Memory { mem } => {
                rm.put_mem(mem);
                // RM unmaps the mappings made into and of an object as it
                // frees it (`_clientUnmapInterMappings`,
                // `resserv/src/rs_client.c:826,1252-1320` at 550.163.01).
                rm.forget_dma_maps(client, o.handle);
            }
            ObjKind::Usermode { gpu, mem } => {
                if let Some(b) = rm.mem(mem).and_then(|m| m.backing.clone()) {
                    self.gpus[gpu as usize].engine.remove_usermode(&b);
                }
                rm.put_mem(mem);
                rm.forget_dma_maps(client, o.handle);
            }
            ObjKind::Tsg { gpu, id, grctx, .. } => {
                self.gpus[gpu as usize].engine.remove_tsg(id);
                if grctx != 0 {
                    rm.put_mem(grctx);
                }
            }
            ObjKind::Channel {
                gpu,
                token,
                tsg,
                own_tsg,
                mem,
                grctx,
                ..
            } => {
                let e = &self.gpus[gpu as usize].engine;
                e.remove_channel(token);
                if own_tsg {
                    e.remove_tsg(tsg);
                }
                rm.put_mem(mem);
                if grctx != 0 {
                    rm.put_mem(grctx);
                }
            }
            ObjKind::VaSpace { mem, .. } | ObjKind::VirtualMemory { mem, .. } => {
                rm.put_mem(mem);
                // Its mappings go with it.
                rm.forget_dma_maps(client, o.handle);
            }
            _ => {}
        }
    }

    pub(crate) fn free_client(&self, rm: &mut Rm, h: u32) {
        let Some(i) = rm.client_index(h) else {
            return;
        };
        let Ok(client) = rm.clients.remove(i) else {
            return;
        };
        // Children before parents: release in reverse allocation order.
        for o in client.objects.iter().rev() {
            self.release_object(rm, h, *o);
        }
        // `rm_client_free_os_events` (`escape.c:441` at 550.163.01).
        rm.os_events.retain(|e| e.client != h);
        for g in self.gpus.iter() {
            g.engine.remove_events(Some(h), None, None);
        }
        rm.dma_maps.retain(|m| m.client != h);
        rm.cpu_maps.retain(|m| m.client != h);
        rm.purge_kmaps();
    }

    /// RM_FREE: frees a client (its root handle) or an object and its subtree.
    pub(crate) fn free(
        &self,
        rm: &mut Rm,
        h_client: u32,
        h_obj: u32,
        file: Option<u64>,
    ) -> StatusResult {
        // No such client: RM's client lookup fails first
        // (`serverFreeResourceTree` -> `_serverLockClientWithLockInfo`,
        // `rs_server.c:1059-1061` at 550.163.01), client frees included.
        if rm.client_index(h_client).is_none() {
            return Err(NV_ERR_INVALID_OBJECT_HANDLE);
        }
        let ci = rm.client_for(h_client, file)?;
        if h_obj == h_client {
            self.free_client(rm, h_client);
            return Ok(());
        }
        if rm.clients[ci].find(h_obj).is_none() {
            // RM is built with RS_COMPATABILITY_MODE: freeing an object
            // the client does not have succeeds and frees nothing
            // (`rs_server.c:1072-1081` at 550.163.01; measured on the real
            // driver).
            return Ok(());
        }
        // Collect the subtree: repeat until no object has a parent in the set.
        let mut doomed: KVec<u32> = KVec::new();
        doomed
            .push(h_obj, GFP_KERNEL)
            .map_err(|_| NV_ERR_NO_MEMORY)?;
        loop {
            let mut grew = false;
            for o in rm.clients[ci].objects.iter() {
                if doomed.contains(&o.parent) && !doomed.contains(&o.handle) {
                    doomed
                        .push(o.handle, GFP_KERNEL)
                        .map_err(|_| NV_ERR_NO_MEMORY)?;
                    grew = true;
                }
            }
            if !grew {
                break;
            }
        }
        // Release children first (reverse order of discovery).
        for h in doomed.iter().rev() {
            let objs = &mut rm.clients[ci].objects;
            if let Some(pos) = objs.iter().position(|o| o.handle == *h) {
                let o = objs.remove(pos).map_err(|_| NV_ERR_GENERIC)?;
                self.release_object(rm, h_client, o);
            }
        }
        rm.purge_kmaps();
        Ok(())
    }
}
