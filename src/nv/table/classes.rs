// SPDX-License-Identifier: GPL-2.0

//! The RM classes (`hClass` of RM_ALLOC): rows, handlers, lookup and the
//! patchers a release's table is built with.

use super::policy::{Family, Policy};
use crate::nv::abi::{self, class};

/// One RM class (`hClass` of RM_ALLOC).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClassRow {
    /// The class number.
    pub class: u32,
    /// NVIDIA's name for it (the macro in `class/clXXXX.h` or `nvos.h`).
    pub name: &'static str,
    /// Size of the alloc params RM copies for it; 0: it takes none.
    pub params_size: u32,
    /// What vgpu does with it.
    pub policy: Policy,
    /// Its group in the docs.
    pub family: Family,
    /// The status a refused allocation of it gets (its policy
    /// [`Policy::Denied`]): `NV_ERR_INVALID_CLASS`, as RM answers a class it
    /// does not have, unless the row says RM answers otherwise where the
    /// class is unavailable ([`unsupported`]).
    pub refusal: u32,
    /// The handler the RM_ALLOC handler runs for it.
    pub handler: ClassHandler,
    /// VRAM the driver commits for the object itself beyond any memory it
    /// is given (instance blocks, page directories), in bytes: a bound
    /// from RM's source, cited at the row. vgpu charges it to the vGPU
    /// when the allocation succeeds and refunds it when the driver frees
    /// the object; 0: none. Only rows whose handler records the object
    /// ([`ClassHandler::records`]) may have one.
    pub commits: u32,
}

/// What the RM_ALLOC handler runs for a class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClassHandler {
    /// Forwarded from vgpu's copy of the RM_ALLOC block.
    Forward,
    /// A client (a `Rewritten` row): forwarded under a handle vgpu picks
    /// when the caller lets RM pick, and recorded.
    Client,
    /// A device (`Served`): decided against the file's vGPUs, executed
    /// through the kernel-client interface.
    Device,
    /// A subdevice of one of the file's devices (`Served`).
    Subdevice,
    /// A TSG under one of the file's devices (`Served`): enrolled in the
    /// vGPU's schedule.
    Tsg,
    /// A GPFIFO channel under one of the file's devices or TSGs (`Served`).
    Channel,
    /// Memory (`Served`): VRAM charged to the vGPU's ceiling.
    Memory,
    /// A class forwarded as the caller wrote it (a `Forward` row) whose
    /// object vgpu records under its parent, one of the file's devices, so
    /// that the row's [`ClassRow::commits`] is charged while it lives
    /// (`src/rm/alloc.rs`).
    Charged,
    /// A compute-engine object (a `Forward` row, forwarded as written): the
    /// first of a TSG makes RM allocate the TSG's GR context buffers, which
    /// vgpu charges to the TSG's record (`src/rm/alloc.rs`, `gr_object`).
    GrObject,
    /// NV50_MEMORY_VIRTUAL (a `Bounce` row): a GPU VA range, charged the
    /// page tables RM reserves for it (`abi::virtual_range_charge` of the
    /// size in vgpu's copy of the params, which is what the driver reads),
    /// recorded under its device as [`ClassHandler::Charged`] is.
    VirtualMemory,
    /// A class whose params name an RM client (a `Bounce` row): the handle
    /// at byte `at` must be 0 (RM: the caller's own client) or a client of
    /// the caller's container, else the allocation is refused with
    /// `NV_ERR_INVALID_OBJECT_HANDLE`, RM's status for a client it does not
    /// have; then forwarded from vgpu's checked copy of the params
    /// (`src/rm/alloc.rs`).
    NamesClient {
        /// The client handle's byte offset in the params.
        at: u16,
    },
}

impl ClassHandler {
    /// Whether the handler fits a row of `policy`: clients are the
    /// `Rewritten` rows, the accounted kinds the `Served` ones, and every
    /// other row is forwarded (if admitted).
    pub const fn fits(self, policy: Policy) -> bool {
        match self {
            ClassHandler::Forward => !matches!(policy, Policy::Served | Policy::Rewritten),
            ClassHandler::Charged | ClassHandler::GrObject => matches!(policy, Policy::Forward),
            ClassHandler::Client => matches!(policy, Policy::Rewritten),
            ClassHandler::NamesClient { .. } | ClassHandler::VirtualMemory => {
                matches!(policy, Policy::Bounce)
            }
            _ => matches!(policy, Policy::Served),
        }
    }

    /// Whether vgpu records the objects of the handler's class, so that
    /// their free can refund a charge: the accounted kinds and
    /// [`ClassHandler::Charged`].
    pub const fn records(self) -> bool {
        !matches!(
            self,
            ClassHandler::Forward | ClassHandler::Client | ClassHandler::NamesClient { .. }
        )
    }
}

use Family as F;
use Policy as P;

/// A class row (keeps the table one line a row).
const fn cl(
    class: u32,
    name: &'static str,
    params_size: u32,
    policy: Policy,
    family: Family,
) -> ClassRow {
    ClassRow {
        class,
        name,
        params_size,
        policy,
        family,
        refusal: abi::status::NV_ERR_INVALID_CLASS,
        commits: 0,
        handler: match policy {
            Policy::Rewritten => ClassHandler::Client,
            _ => ClassHandler::Forward,
        },
    }
}

/// A class row with its own handler (a `Served` class: what it is).
const fn clh(handler: ClassHandler, row: ClassRow) -> ClassRow {
    ClassRow { handler, ..row }
}

/// `row`, committing `bytes` of RM-internal VRAM per object.
const fn commits(bytes: u32, row: ClassRow) -> ClassRow {
    ClassRow {
        commits: bytes,
        ..row
    }
}

/// A class row denied with `NV_ERR_NOT_SUPPORTED`: what RM itself answers
/// where the class is not offered, so that userspace takes the path it
/// takes on such a GPU.
const fn unsupported(row: ClassRow) -> ClassRow {
    ClassRow {
        policy: Policy::Denied,
        refusal: abi::status::NV_ERR_NOT_SUPPORTED,
        ..row
    }
}

use ClassHandler as K;

/// Every class a container may name, by number. Sources per row in
/// `docs/dispatch-table.md`.
#[rustfmt::skip]
pub const CLASSES: &[ClassRow] = &CLASS_ROWS;

/// [`CLASSES`] as an array, so that a release's table can be a patched
/// copy of it (`nv::release`).
#[rustfmt::skip]
pub(crate) const CLASS_ROWS: [ClassRow; 45] = [
    cl(class::NV01_ROOT, "NV01_ROOT", 4, P::Rewritten, F::Client),
    cl(class::NV01_ROOT_NON_PRIV, "NV01_ROOT_NON_PRIV", 4, P::Rewritten, F::Client),
    cl(class::NV01_MEMORY_SYSTEM, "NV01_MEMORY_SYSTEM", 128, P::Forward, F::Memory),
    clh(K::Memory, cl(class::NV01_MEMORY_LOCAL_USER, "NV01_MEMORY_LOCAL_USER", 128, P::Served, F::Memory)),
    cl(class::NV01_ROOT_CLIENT, "NV01_ROOT_CLIENT", 4, P::Rewritten, F::Client),
    // `hParentClient` (byte 0, `cl0005.h` at 595.45.04) checked to be the container's.
    clh(K::NamesClient { at: 0 }, cl(class::NV01_EVENT_OS_EVENT, "NV01_EVENT_OS_EVENT", 24, P::Bounce, F::Event)),
    clh(K::Device, cl(class::NV01_DEVICE_0, "NV01_DEVICE_0", 56, P::Served, F::Device)),
    // The page shows the GPU's total and free VRAM, i.e. other tenants' use, and from 590 their
    //   per-process utilisation, with no ioctl when it is read: refused as RM refuses it on
    //   vGPU guests and under CPU confidential computing (`docs/dispatch-table.md`). 535's
    //   page has neither: admitted there (`nv::release`).
    unsupported(cl(abi::rusd::CLASS, "RM_USER_SHARED_DATA", 8, P::Denied, F::Perf)),
    // The NVLink fabric's memory classes: vGPUs have no fabric, so refused with
    //   NV_ERR_NOT_SUPPORTED, RM's answer without a fabric VA space (`mem_fabric.c:591-596`)
    //   or a fabric manager's multicast team (`mem_multicast_fabric.c:903` at 595.45.04).
    unsupported(cl(class::NV_MEMORY_FABRIC, "NV_MEMORY_FABRIC", 48, P::Denied, F::Interconnect)),
    unsupported(cl(0x00fd, "NV_MEMORY_MULTICAST_FABRIC", 80, P::Denied, F::Interconnect)),
    clh(K::Subdevice, cl(class::NV20_SUBDEVICE_0, "NV20_SUBDEVICE_0", 4, P::Served, F::Device)),
    cl(0x2081, "NV2081_BINAPI", 4, P::Forward, F::Device),
    cl(0x208f, "NV20_SUBDEVICE_DIAG", 0, P::Forward, F::Debugging),
    cl(0x503b, "NV50_P2P", 88, P::Forward, F::Interconnect),
    cl(0x503c, "NV50_THIRD_PARTY_P2P", 4, P::Forward, F::Interconnect),
    // Charged the page tables of its whole range, which RM reserves as it makes it (unless lazy
    //   or externally managed) and as anything is mapped into it (`abi::virtual_range_charge`).
    clh(K::VirtualMemory, cl(class::NV50_MEMORY_VIRTUAL, "NV50_MEMORY_VIRTUAL", 128, P::Bounce, F::Memory)),
    // `hAppClient` (byte 4, `cl83de.h` at 595.45.04) checked to be the container's.
    clh(K::NamesClient { at: 4 }, cl(0x83de, "GT200_DEBUGGER", 12, P::Bounce, F::Debugging)),
    cl(0x900e, "MPS_COMPUTE", 0, P::Forward, F::Device),
    // Commits no VRAM: a subcontext ID from its TSG's heap (`kernel_ctxshare.c:426` at
    //   550.163.01); `kctxshareInit` is RM's empty stub (`g_kernel_ctxshare_nvoc.h:132`).
    cl(class::FERMI_CONTEXT_SHARE_A, "FERMI_CONTEXT_SHARE_A", 12, P::Forward, F::Fifo),
    cl(0x90e6, "GF100_SUBDEVICE_MASTER", 0, P::Forward, F::Device),
    // Commits its top three page levels, which RM reserves in the page-level pool as it
    //   makes one (`vaspace_api.c:714-735` at 550.163.01).
    clh(K::Charged, commits(abi::VASPACE_PAGE_LEVELS, cl(class::FERMI_VASPACE_A, "FERMI_VASPACE_A", 56, P::Forward, F::Memory))),
    clh(K::Tsg, cl(class::KEPLER_CHANNEL_GROUP_A, "KEPLER_CHANNEL_GROUP_A", 20, P::Served, F::Fifo)),
    cl(class::TURING_USERMODE_A, "TURING_USERMODE_A", 0, P::Forward, F::Fifo),
    clh(K::Channel, commits(abi::INSTANCE_BLOCK, cl(class::TURING_CHANNEL_GPFIFO_A, "TURING_CHANNEL_GPFIFO_A", 368, P::Served, F::Fifo))),
    clh(K::Channel, commits(abi::INSTANCE_BLOCK, cl(class::AMPERE_CHANNEL_GPFIFO_A, "AMPERE_CHANNEL_GPFIFO_A", 368, P::Served, F::Fifo))),
    cl(0xc5b5, "TURING_DMA_COPY_A", 8, P::Forward, F::Engine),
    // The compute classes (`K::GrObject`): the first object of a TSG makes RM allocate its GR
    //   context buffers (`kernel_graphics_object.c:215` at 550.163.01), charged to the TSG.
    clh(K::GrObject, cl(0xc5c0, "TURING_COMPUTE_A", 16, P::Forward, F::Engine)),
    cl(class::HOPPER_USERMODE_A, "HOPPER_USERMODE_A", 2, P::Forward, F::Fifo),
    cl(class::AMPERE_DMA_COPY_A, "AMPERE_DMA_COPY_A", 8, P::Forward, F::Engine),
    clh(K::GrObject, cl(class::AMPERE_COMPUTE_A, "AMPERE_COMPUTE_A", 16, P::Forward, F::Engine)),
    cl(class::BLACKWELL_USERMODE_A, "BLACKWELL_USERMODE_A", 2, P::Forward, F::Fifo),
    cl(class::AMPERE_DMA_COPY_B, "AMPERE_DMA_COPY_B", 8, P::Forward, F::Engine),
    clh(K::GrObject, cl(class::AMPERE_COMPUTE_B, "AMPERE_COMPUTE_B", 16, P::Forward, F::Engine)),
    clh(K::Channel, commits(abi::INSTANCE_BLOCK, cl(class::HOPPER_CHANNEL_GPFIFO_A, "HOPPER_CHANNEL_GPFIFO_A", 368, P::Served, F::Fifo))),
    cl(class::HOPPER_DMA_COPY_A, "HOPPER_DMA_COPY_A", 8, P::Forward, F::Engine),
    clh(K::Channel, commits(abi::INSTANCE_BLOCK, cl(class::BLACKWELL_CHANNEL_GPFIFO_A, "BLACKWELL_CHANNEL_GPFIFO_A", 368, P::Served, F::Fifo))),
    cl(0xc9b5, "BLACKWELL_DMA_COPY_A", 8, P::Forward, F::Engine),
    clh(K::GrObject, cl(class::ADA_COMPUTE_A, "ADA_COMPUTE_A", 16, P::Forward, F::Engine)),
    clh(K::Channel, commits(abi::INSTANCE_BLOCK, cl(class::BLACKWELL_CHANNEL_GPFIFO_B, "BLACKWELL_CHANNEL_GPFIFO_B", 368, P::Served, F::Fifo))),
    cl(0xcab5, "BLACKWELL_DMA_COPY_B", 8, P::Forward, F::Engine),
    cl(0xcb33, "NV_CONFIDENTIAL_COMPUTE", 4, P::Forward, F::Security),
    cl(0xcba2, "HOPPER_SEC2_WORK_LAUNCH_A", 0, P::Forward, F::Security),
    clh(K::GrObject, cl(class::HOPPER_COMPUTE_A, "HOPPER_COMPUTE_A", 16, P::Forward, F::Engine)),
    clh(K::GrObject, cl(0xcdc0, "BLACKWELL_COMPUTE_A", 16, P::Forward, F::Engine)),
    clh(K::GrObject, cl(0xcec0, "BLACKWELL_COMPUTE_B", 16, P::Forward, F::Engine)),
];

// Each class row's handler fits its policy: clients rewritten, accounted
// kinds served, the rest forwarded; and only a recorded object commits.
const _: () = {
    let mut i = 0;
    while i < CLASS_ROWS.len() {
        assert!(CLASS_ROWS[i].handler.fits(CLASS_ROWS[i].policy));
        assert!(CLASS_ROWS[i].commits == 0 || CLASS_ROWS[i].handler.records());
        i += 1;
    }
};

/// The row of class `c`, if the table has one (binary search: the rows
/// are in number order, checked at compile time).
pub const fn class_row(c: u32) -> Option<&'static ClassRow> {
    class_row_in(CLASSES, c)
}

keyed_rows!(ClassRow, class: u32, class_row_in, classes_in_order, without_classes);
sized_rows!(with_class_params_sizes, ClassRow, class);

/// `rows` with class `c` given `policy` (and the refusal of a class RM
/// does not have).
pub const fn with_class_policy<const N: usize>(
    mut rows: [ClassRow; N],
    c: u32,
    policy: Policy,
) -> [ClassRow; N] {
    let mut i = 0;
    let mut found = false;
    while i < N {
        if rows[i].class == c {
            rows[i].policy = policy;
            rows[i].refusal = abi::status::NV_ERR_INVALID_CLASS;
            found = true;
        }
        i += 1;
    }
    assert!(found, "with_class_policy: the class is not in the table");
    rows
}

// The table is in strictly increasing number order: what the lookup relies
// on, and no number twice.
const _: () = assert!(classes_in_order(CLASSES), "CLASSES out of order");

/// What vgpu does with class `c`: its row's policy, [`Policy::Denied`] for
/// a class the table lacks (default deny).
pub const fn class_policy(c: u32) -> Policy {
    match class_row(c) {
        Some(r) => r.policy,
        None => Policy::Denied,
    }
}
