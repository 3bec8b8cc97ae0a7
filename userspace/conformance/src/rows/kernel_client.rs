// SPDX-License-Identifier: GPL-2.0

//! Rows of the driver's kernel-client interface (`nvidia_get_rm_ops`).

use crate::*;

/// The kernel-client interface of a release (`Release::kernel`; a test
/// passes a seeded wrong one): the ops command block at its size, every
/// member of its params union, and the NV04_ALLOC member's layout.
pub fn kernel_client(t: &mut Table, kc: &rmops::KernelClient) {
    use core::mem::{offset_of, size_of};
    use rmops::{GpuInfo, PciLocation, RmOpsTable};
    let ty = "nvidia_kernel_rmapi_ops_t";
    t.konst(
        &format!("sizeof({ty})"),
        kc.cmd_size() as u64,
        "rmops::KernelClient::cmd_size",
    );
    t.konst(
        &format!("offsetof({ty}, params)"),
        rmops::PARAMS_OFFSET as u64,
        "rmops::PARAMS_OFFSET",
    );
    t.konst(
        &format!("sizeof((({ty} *)0)->params)"),
        kc.params_size as u64,
        "rmops::KernelClient.params_size",
    );
    for m in kc.members {
        let name = m.name;
        t.konst(
            &format!("sizeof((({ty} *)0)->params.{name})"),
            m.size as u64,
            &format!("rmops::KernelClient.members[{name}].size"),
        );
        t.konst(
            &format!("offsetof({ty}, params.{name})"),
            rmops::PARAMS_OFFSET as u64,
            &format!("rmops::KernelClient.members[{name}]"),
        );
    }
    // The NV04_ALLOC member is the block kc.alloc lays out (an NVOS64 or an
    // NVOS21: the releases differ there).
    let alloc_size = kc
        .member_size(op::ALLOC)
        .expect("the union has an NV04_ALLOC member");
    t.layout(
        "rmops::KernelClient.alloc",
        alloc_size,
        kc.alloc.fields(),
        CStruct::camel(ty).within("params.alloc"),
    );
    consts!(t, "NV01_", op: FREE, ALLOC_MEMORY);
    consts!(t, "NV04_", op:
        VID_HEAP_CONTROL, MAP_MEMORY, UNMAP_MEMORY, ALLOC_CONTEXT_DMA, MAP_MEMORY_DMA,
        UNMAP_MEMORY_DMA, BIND_CONTEXT_DMA, CONTROL, ADD_VBLANK_CALLBACK, SHARE,
    );
    t.konst("NV04_ALLOC", op::ALLOC.into(), "rmops::op::ALLOC");
    t.konst("NV04_DUP_OBJECT", op::DUP.into(), "rmops::op::DUP");

    let ty = "nvidia_modeset_rm_ops_t";
    t.konst(
        &format!("sizeof({ty})"),
        size_of::<RmOpsTable>() as u64,
        "rmops::RmOpsTable",
    );
    for (c, off) in [
        ("version_string", offset_of!(RmOpsTable, version_string)),
        (
            "system_info.allow_write_combining",
            offset_of!(RmOpsTable, allow_write_combining),
        ),
        ("alloc_stack", offset_of!(RmOpsTable, alloc_stack)),
        ("free_stack", offset_of!(RmOpsTable, free_stack)),
        ("enumerate_gpus", offset_of!(RmOpsTable, enumerate_gpus)),
        ("open_gpu", offset_of!(RmOpsTable, open_gpu)),
        ("close_gpu", offset_of!(RmOpsTable, close_gpu)),
        ("op", offset_of!(RmOpsTable, op)),
        ("set_callbacks", offset_of!(RmOpsTable, set_callbacks)),
    ] {
        t.konst(
            &format!("offsetof({ty}, {c})"),
            off as u64,
            &format!("rmops::RmOpsTable.{c}"),
        );
    }
    let ty = "nv_gpu_info_t";
    t.konst(
        &format!("sizeof({ty})"),
        size_of::<GpuInfo>() as u64,
        "rmops::GpuInfo",
    );
    for (c, off, size) in [
        ("gpu_id", offset_of!(GpuInfo, gpu_id), 4),
        (
            "pci_info",
            offset_of!(GpuInfo, pci_info),
            size_of::<PciLocation>(),
        ),
        (
            "pci_info.domain",
            offset_of!(GpuInfo, pci_info) + offset_of!(PciLocation, domain),
            4,
        ),
        (
            "pci_info.bus",
            offset_of!(GpuInfo, pci_info) + offset_of!(PciLocation, bus),
            1,
        ),
        (
            "pci_info.slot",
            offset_of!(GpuInfo, pci_info) + offset_of!(PciLocation, slot),
            1,
        ),
        (
            "pci_info.function",
            offset_of!(GpuInfo, pci_info) + offset_of!(PciLocation, function),
            1,
        ),
        ("needs_numa_setup", offset_of!(GpuInfo, needs_numa_setup), 1),
        ("is_soc_disp", offset_of!(GpuInfo, is_soc_disp), 1),
        ("os_device_ptr", offset_of!(GpuInfo, os_device_ptr), 8),
    ] {
        t.konst(
            &format!("offsetof({ty}, {c})"),
            off as u64,
            &format!("rmops::GpuInfo.{c}"),
        );
        t.konst(
            &format!("sizeof((({ty} *)0)->{c})"),
            size as u64,
            &format!("rmops::GpuInfo.{c}"),
        );
    }
    t.konst("NV_MAX_GPUS", rmops::MAX_GPUS as u64, "rmops::MAX_GPUS");
}
