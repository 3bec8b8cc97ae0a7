// SPDX-License-Identifier: GPL-2.0

//! The escapes of the NVIDIA frontend: on which nodes vgpu admits each,
//! and its handler.

use super::policy::Policy;
use crate::nv::abi::{self, find_field, WireField};
use crate::nv::ioctl::{Escape, Node, SizeRule};
use Policy as P;

/// Where vgpu admits an escape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nodes {
    /// `/dev/vgpuctl` only.
    Ctl,
    /// `/dev/vgpuN` only.
    Gpu,
    /// Both.
    Both,
}

impl Nodes {
    /// Whether a call on a ctl node (`ctl`) or a GPU node (`!ctl`) is
    /// admitted.
    pub const fn admits(self, ctl: bool) -> bool {
        match self {
            Nodes::Ctl => ctl,
            Nodes::Gpu => !ctl,
            Nodes::Both => true,
        }
    }
}

/// What vgpu runs for an escape (the module's dispatcher matches on this,
/// and on nothing else of the call, to choose a handler).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EscapeHandler {
    /// Forwarded; an fd in the block ([`EscapeRow::fd_at`]) that names one
    /// of vgpu's files is translated to that file's real file.
    Forward,
    /// RM_ALLOC_MEMORY: forwarded (fd translated); on a GPU node the heap
    /// size class 0x40 reports is the vGPU's ceiling.
    AllocMemory,
    /// RM_ALLOC: classes by their rows ([`CLASSES`]).
    Alloc,
    /// RM_FREE: executed by vgpu on its verified clients (refunds).
    Free,
    /// RM_CONTROL: controls by their rows ([`CONTROLS`]).
    Control,
    /// RM_DUP_OBJECT: within a container only, charges shared.
    Dup,
    /// RM_VID_HEAP_CONTROL: allocations accounted, INFO rewritten.
    VidHeap,
    /// CARD_INFO: only the container's GPUs, from vgpu's records.
    CardInfo,
    /// ALLOC_OS_EVENT, FREE_OS_EVENT: the client must be the container's;
    /// forwarded from vgpu's checked copy (`src/rm/event.rs`).
    OsEvent,
}

/// One frontend escape (the `_IOC_NR` of an ioctl on an RM node).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EscapeRow {
    /// The escape.
    pub escape: Escape,
    /// Its `_IOC_NR`.
    pub nr: u8,
    /// The driver's size check.
    pub size: SizeRule,
    /// The node the driver serves it on.
    pub driver_node: Node,
    /// The nodes vgpu admits it on (a call on another is `EPERM`).
    pub nodes: Nodes,
    /// Where the block holds an fd the driver looks up in the caller's
    /// table.
    pub fd_at: Option<usize>,
    /// Where the block's RM status is (`None`: none, or two layouts).
    pub status_at: Option<usize>,
    /// What vgpu does with it.
    pub policy: Policy,
    /// The handler.
    pub handler: EscapeHandler,
}

/// The layout of an escape's block, where it has one vgpu declares.
const fn escape_fields(e: Escape) -> Option<&'static [WireField]> {
    Some(match e {
        Escape::RmFree => abi::Nvos00::FIELDS,
        Escape::RmControl => abi::Nvos54::FIELDS,
        Escape::RmDupObject => abi::Nvos55::FIELDS,
        Escape::RmShare => abi::Nvos57::FIELDS,
        Escape::RmVidHeapControl => abi::Nvos32::FIELDS,
        Escape::RmUnmapMemory => abi::Nvos34::FIELDS,
        Escape::AllocOsEvent | Escape::FreeOsEvent => abi::OsEvent::FIELDS,
        _ => return None,
    })
}

/// An escape row: the facts from [`Escape`] and the block layouts, the
/// decision from the arguments.
const fn esc(escape: Escape, nodes: Nodes, policy: Policy, handler: EscapeHandler) -> EscapeRow {
    EscapeRow {
        escape,
        nr: escape.nr(),
        size: escape.size_rule(),
        driver_node: escape.node(),
        nodes,
        fd_at: escape.embedded_fd(),
        status_at: match escape_fields(escape) {
            Some(f) => find_field(f, "status"),
            None => None,
        },
        policy,
        handler,
    }
}

use EscapeHandler as H;

/// Every escape a container may send, in `nr` order. RM escapes (the
/// driver's ctl node) are admitted on `/dev/vgpuctl` only: the driver would
/// serve them on a GPU node too, for the ctl file it is registered to, but
/// they must pass vgpu's accounting and rewrites there. Reasons per row in
/// `docs/dispatch-table.md`, "Escapes".
#[rustfmt::skip]
pub const ESCAPES: &[EscapeRow] = &ESCAPE_ROWS;

/// [`ESCAPES`] as an array, for releases' patched copies.
#[rustfmt::skip]
pub(crate) const ESCAPE_ROWS: [EscapeRow; 25] = [
    esc(Escape::RmAllocMemory, Nodes::Both, P::Rewritten, H::AllocMemory),
    esc(Escape::RmFree, Nodes::Ctl, P::Served, H::Free),
    esc(Escape::RmControl, Nodes::Ctl, P::Bounce, H::Control),
    // On a GPU node RM makes the event classes only (`escape.c:386-410`
    // at 550.163.01), for the ctl file the GPU file is registered to:
    // libcuda allocates its OS events there.
    esc(Escape::RmAlloc, Nodes::Both, P::Served, H::Alloc),
    esc(Escape::RmDupObject, Nodes::Ctl, P::Bounce, H::Dup),
    esc(Escape::RmShare, Nodes::Ctl, P::Forward, H::Forward),
    esc(Escape::RmIdleChannels, Nodes::Ctl, P::Forward, H::Forward),
    esc(Escape::RmVidHeapControl, Nodes::Ctl, P::Served, H::VidHeap),
    esc(Escape::RmMapMemory, Nodes::Ctl, P::Bounce, H::Forward),
    esc(Escape::RmUnmapMemory, Nodes::Ctl, P::Forward, H::Forward),
    esc(Escape::RmMapMemoryDma, Nodes::Ctl, P::Forward, H::Forward),
    esc(Escape::RmUnmapMemoryDma, Nodes::Ctl, P::Forward, H::Forward),
    esc(Escape::RmUpdateDeviceMappingInfo, Nodes::Ctl, P::Forward, H::Forward),
    esc(Escape::CardInfo, Nodes::Ctl, P::Served, H::CardInfo),
    // The driver takes REGISTER_FD on either node (`escape.c:942-944` at
    // 595.45.04); a ctl file registered to another would create clients
    // that outlive the file vgpu charges them to: GPU nodes only (libcuda
    // registers GPU files only).
    esc(Escape::RegisterFd, Nodes::Gpu, P::Bounce, H::Forward),
    esc(Escape::AllocOsEvent, Nodes::Both, P::Bounce, H::OsEvent),
    esc(Escape::FreeOsEvent, Nodes::Both, P::Bounce, H::OsEvent),
    esc(Escape::StatusCode, Nodes::Ctl, P::Forward, H::Forward),
    esc(Escape::CheckVersionStr, Nodes::Ctl, P::Forward, H::Forward),
    esc(Escape::IoctlXferCmd, Nodes::Both, P::Bounce, H::Forward),
    esc(Escape::AttachGpusToFd, Nodes::Ctl, P::Forward, H::Forward),
    esc(Escape::SysParams, Nodes::Ctl, P::Forward, H::Forward),
    esc(Escape::NumaInfo, Nodes::Both, P::Forward, H::Forward),
    esc(Escape::ExportToDmabufFd, Nodes::Both, P::Forward, H::Forward),
    esc(Escape::WaitOpenComplete, Nodes::Both, P::Forward, H::Forward),
];

/// The row of escape `e`. Every [`Escape`] has one (checked at compile time
/// below), so a lookup never fails for an escape that decoded.
pub const fn escape_row(e: Escape) -> &'static EscapeRow {
    match escape_row_in(ESCAPES, e.nr()) {
        Some(r) => r,
        // Unreachable: every escape has a row (the assertion below).
        None => &ESCAPES[0],
    }
}

keyed_rows!(EscapeRow, nr: u8, escape_row_in, escapes_in_order, without_escapes);

/// `rows` with escape `e`'s size check `size`.
pub const fn with_escape_size<const N: usize>(
    mut rows: [EscapeRow; N],
    e: Escape,
    size: SizeRule,
) -> [EscapeRow; N] {
    let mut i = 0;
    let mut found = false;
    while i < N {
        if rows[i].nr == e.nr() {
            rows[i].size = size;
            found = true;
        }
        i += 1;
    }
    assert!(found, "with_escape_size: the escape is not in the table");
    rows
}

// Every escape vgpu knows has exactly one row; the rows are in number order
// (the lookup relies on it).
const _: () = {
    let mut i = 0;
    while i < Escape::ALL.len() {
        let e = Escape::ALL[i];
        assert!(escape_row(e).nr == e.nr(), "an escape has no row");
        i += 1;
    }
    assert!(ESCAPES.len() == Escape::ALL.len(), "an escape row twice");
    assert!(escapes_in_order(ESCAPES), "ESCAPES out of order");
};
