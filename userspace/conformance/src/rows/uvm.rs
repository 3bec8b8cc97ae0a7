// SPDX-License-Identifier: GPL-2.0

//! Rows of the nvidia-uvm commands.

use crate::*;

/// The block layout a `wire_struct!` gives a UVM command: the Rust type
/// (for messages), its size and fields, and the C side.
struct UvmLayout<'a> {
    item: &'static str,
    size: usize,
    fields: &'static [WireField],
    c: CStruct<'a>,
}

/// Pairs a `wire_struct!` type with its C side.
macro_rules! uvm_layout {
    ($ty:path, $c:expr) => {
        Some(UvmLayout {
            item: stringify!($ty),
            size: <$ty>::SIZE,
            fields: <$ty>::FIELDS,
            c: $c,
        })
    };
}

/// The layout the project decodes UVM command `c`'s block (C type `ty`)
/// with in [`RELEASE`], where it decodes one.
fn uvm_base_layout(c: uvm::Command, ty: &str) -> Option<UvmLayout<'_>> {
    use uvm::Command as C;
    let gpu_uuid_snake: &'static [(&str, &str)] = &[("gpu_uuid", "gpu_uuid")];
    let requested: &'static [(&str, &str)] = &[("base", "requestedBase")];
    match c {
        C::Deinitialize => None,
        C::Initialize => uvm_layout!(uvm::InitializeParams, CStruct::camel(ty)),
        C::MmInitialize => uvm_layout!(uvm::MmInitializeParams, CStruct::camel(ty)),
        C::RegisterGpu => uvm_layout!(
            uvm::RegisterGpuParams,
            CStruct::camel(ty).renamed(gpu_uuid_snake)
        ),
        C::UnregisterGpu => uvm_layout!(uvm::GpuParams, CStruct::camel(ty).renamed(gpu_uuid_snake)),
        C::UnregisterGpuVaspace => uvm_layout!(uvm::GpuParams, CStruct::camel(ty)),
        C::RegisterGpuVaspace => uvm_layout!(uvm::RegisterGpuVaspaceParams, CStruct::camel(ty)),
        C::RegisterChannel => uvm_layout!(uvm::RegisterChannelParams, CStruct::camel(ty)),
        C::UnregisterChannel => uvm_layout!(uvm::UnregisterChannelParams, CStruct::camel(ty)),
        C::EnablePeerAccess | C::DisablePeerAccess => {
            uvm_layout!(uvm::PeerAccessParams, CStruct::camel(ty))
        }
        C::MapExternalAllocation => {
            uvm_layout!(uvm::MapExternalAllocationParams, CStruct::camel(ty))
        }
        C::Free => uvm_layout!(uvm::FreeParams, CStruct::camel(ty)),
        C::PageableMemAccess => uvm_layout!(uvm::PageableMemAccessParams, CStruct::camel(ty)),
        C::PageableMemAccessOnGpu => uvm_layout!(
            uvm::PageableMemAccessOnGpuParams,
            CStruct::camel(ty).renamed(gpu_uuid_snake)
        ),
        C::SetPreferredLocation => uvm_layout!(uvm::SetPreferredLocationParams, CStruct::camel(ty)),
        C::UnsetPreferredLocation | C::EnableReadDuplication | C::DisableReadDuplication => {
            uvm_layout!(uvm::RangeParams, CStruct::camel(ty).renamed(requested))
        }
        C::ValidateVaRange | C::CreateExternalRange => {
            uvm_layout!(uvm::RangeParams, CStruct::camel(ty))
        }
        C::SetAccessedBy | C::UnsetAccessedBy => uvm_layout!(
            uvm::RangeGpuParams,
            CStruct::camel(ty).renamed(&[("base", "requestedBase"), ("uuid", "accessedByUuid")])
        ),
        C::CreateRangeGroup | C::DestroyRangeGroup => {
            uvm_layout!(uvm::RangeGroupParams, CStruct::camel(ty))
        }
        C::SetRangeGroup => uvm_layout!(uvm::SetRangeGroupParams, CStruct::camel(ty)),
        C::MigrateRangeGroup => uvm_layout!(uvm::MigrateRangeGroupParams, CStruct::camel(ty)),
        C::ToolsReadProcessMemory => uvm_layout!(
            uvm::ToolsProcessMemoryParams,
            CStruct::camel(ty).renamed(&[("bytes_done", "bytesRead")])
        ),
        C::ToolsWriteProcessMemory => uvm_layout!(
            uvm::ToolsProcessMemoryParams,
            CStruct::camel(ty).renamed(&[("bytes_done", "bytesWritten")])
        ),
        C::UnmapExternal | C::MapDynamicParallelismRegion => uvm_layout!(
            uvm::RangeGpuParams,
            CStruct::camel(ty).renamed(&[("uuid", "gpuUuid")])
        ),
        C::Migrate => uvm_layout!(uvm::MigrateParams, CStruct::camel(ty)),
        C::AllocSemaphorePool => uvm_layout!(uvm::AllocSemaphorePoolParams, CStruct::camel(ty)),
    }
}

/// The UVM commands of release `rel` (its rows: numbers, block sizes,
/// status and fd offsets, layouts), and the UVM constants vgpu uses.
pub(crate) fn uvm_rows(t: &mut Table, rel: &release::Release) {
    use uvm::Command as C;
    for c in uvm::COMMANDS {
        let Some(row) = rel.uvm_row(c.number()) else {
            continue;
        };
        let (name, params) = uvm_c_name(c);
        t.konst(
            name,
            row.number.into(),
            &format!("uvm::Command::{c:?}.number"),
        );
        let Some(ty) = params else {
            assert_eq!(row.size, 0, "{c:?} has a block");
            continue;
        };
        t.konst(
            &format!("sizeof({ty})"),
            row.size as u64,
            &format!("uvm::Command::{c:?}.size"),
        );
        if let Some(off) = row.status_at {
            t.konst(
                &format!("offsetof({ty}, rmStatus)"),
                off as u64,
                &format!("uvm::Command::{c:?}.status_offset"),
            );
        }
        // The block's layout, field by field, where the project decodes it:
        // the release's own where its row lays the block out otherwise.
        let (Some(base), Some(fields)) = (uvm_base_layout(c, ty), row.fields) else {
            continue;
        };
        if (row.size, fields) == (base.size, base.fields) {
            t.layout(base.item, base.size, base.fields, base.c);
        } else {
            let item = format!("release::RELEASES[{}].uvm[{c:?}]", rel.name);
            t.layout(&item, row.size, fields, base.c);
        }
    }
    for (c, ty, field) in [
        (C::MmInitialize, "UVM_MM_INITIALIZE_PARAMS", "uvmFd"),
        (C::RegisterGpu, "UVM_REGISTER_GPU_PARAMS", "rmCtrlFd"),
    ] {
        let Some(row) = rel.uvm_row(c.number()) else {
            continue;
        };
        let off = row.fd_at.unwrap_or_else(|| panic!("{c:?} names no fd"));
        t.konst(
            &format!("offsetof({ty}, {field})"),
            off as u64,
            &format!("uvm::Command::{c:?}.embedded_fd"),
        );
    }
    layout!(
        t,
        uvm::GpuMappingAttributes,
        CStruct::camel("UvmGpuMappingAttributes")
    );
    t.konst(
        "UVM_MAX_GPUS",
        uvm::MAX_GPU_ATTRIBUTES as u64,
        "uvm::MAX_GPU_ATTRIBUTES",
    );
    consts!(t, "UVM_INIT_FLAGS_", init_flags: DISABLE_HMM, MULTI_PROCESS_SHARING_MODE);
    t.konst(
        "UVM_RANGE_GROUP_ID_NONE",
        uvm::RANGE_GROUP_NONE,
        "uvm::RANGE_GROUP_NONE",
    );
    // The project's single-field offsets of MAP_EXTERNAL_ALLOCATION's block
    // are its base layout's: where the release's row lays the block out
    // otherwise (535), the row's own layout above checks the same
    // expressions, and vgpu reads the fields where the row has them.
    let base_layout = rel
        .uvm_row(C::MapExternalAllocation.number())
        .is_some_and(|r| {
            (r.size, r.fields)
                == (
                    uvm::MapExternalAllocationParams::SIZE,
                    Some(uvm::MapExternalAllocationParams::FIELDS),
                )
        });
    let fields = [
        ("base", uvm::map_external::BASE),
        ("length", uvm::map_external::LENGTH),
        ("offset", uvm::map_external::OFFSET),
        ("perGpuAttributes", uvm::map_external::ATTRIBUTES),
        ("gpuAttributesCount", uvm::map_external::COUNT),
        ("hClient", uvm::map_external::H_CLIENT),
        ("hMemory", uvm::map_external::H_MEMORY),
    ];
    if base_layout {
        for (field, off) in fields {
            t.konst(
                &format!("offsetof(UVM_MAP_EXTERNAL_ALLOCATION_PARAMS, {field})"),
                off as u64,
                &format!("uvm::map_external::{field}"),
            );
        }
    }
    t.konst(
        "UVM_MIGRATE_FLAG_ASYNC",
        uvm::migrate_flags::ASYNC.into(),
        "uvm::migrate_flags::ASYNC",
    );
    t.konst(
        "sizeof(NvProcessorUuid)",
        core::mem::size_of::<uvm::Uuid>() as u64,
        "uvm::Uuid",
    );
    for (i, b) in uvm::CPU_UUID.iter().enumerate() {
        t.konst(
            &format!("NV_PROCESSOR_UUID_CPU_DEFAULT.uuid[{i}]"),
            (*b).into(),
            &format!("uvm::CPU_UUID[{i}]"),
        );
    }
}
