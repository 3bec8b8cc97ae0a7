// SPDX-License-Identifier: GPL-2.0

//! RM object classes, USERD and engine numbers.

// ---------------------------------------------------------------------------
// Classes.
// ---------------------------------------------------------------------------

/// RM object classes (`hClass` of RM_ALLOC).
pub mod class {
    /// A privileged client.
    pub const NV01_ROOT: u32 = 0x0;
    /// A non-privileged client.
    pub const NV01_ROOT_NON_PRIV: u32 = 0x1;
    /// A client (what libcuda allocates); its handles start at 0xC1D00000.
    pub const NV01_ROOT_CLIENT: u32 = 0x41;
    /// An event object (`class/cl0005.h`); params [`super::EventAllocParams`].
    pub const NV01_EVENT: u32 = 0x5;
    /// An OS event, delivered by poll on the file it was allocated on (`nvos.h`).
    pub const NV01_EVENT_OS_EVENT: u32 = 0x79;
    /// A kernel callback event (`class/cl0078.h`).
    pub const NV01_EVENT_KERNEL_CALLBACK: u32 = 0x78;
    /// A kernel callback event with arguments (`class/cl007e.h`).
    pub const NV01_EVENT_KERNEL_CALLBACK_EX: u32 = 0x7e;
    /// The classes RM_ALLOC makes on a GPU node too: every other class is
    /// for the ctl node only (`RmIoctl`, `escape.c:386-410` at 550.163.01).
    pub const ON_GPU_NODES: [u32; 4] = [
        NV01_EVENT,
        NV01_EVENT_OS_EVENT,
        NV01_EVENT_KERNEL_CALLBACK,
        NV01_EVENT_KERNEL_CALLBACK_EX,
    ];
    /// A device; params [`super::DeviceAllocParams`] (deviceId at 0).
    pub const NV01_DEVICE_0: u32 = 0x80;
    /// A subdevice (one GPU of a device); params [`super::SubdeviceAllocParams`].
    pub const NV20_SUBDEVICE_0: u32 = 0x2080;
    /// Pinned host memory (not VRAM).
    pub const NV01_MEMORY_SYSTEM: u32 = 0x3e;
    /// Physical VRAM; params [`super::MemoryAllocationParams`] (size at 64).
    pub const NV01_MEMORY_LOCAL_USER: u32 = 0x40;
    /// A VA range object.
    pub const NV01_MEMORY_VIRTUAL: u32 = 0x70;
    /// The whole-FB handle (privileged).
    pub const NV01_MEMORY_LOCAL_PHYSICAL: u32 = 0xc2;
    /// Fabric memory; allocSize at offset 8 of its params.
    pub const NV_MEMORY_FABRIC: u32 = 0xf8;
    /// A GPU VA reservation with no backing.
    pub const NV50_MEMORY_VIRTUAL: u32 = 0x50a0;
    /// An MPS server's marker object (`class/cl900e.h`).
    pub const MPS_COMPUTE: u32 = 0x900e;
    /// A subcontext; params [`super::CtxShareAllocParams`].
    pub const FERMI_CONTEXT_SHARE_A: u32 = 0x9067;
    /// A GPU address space; params [`super::VaSpaceAllocParams`].
    pub const FERMI_VASPACE_A: u32 = 0x90f1;
    /// A TSG (time-slice group), child of a device; params
    /// [`super::ChannelGroupAllocParams`].
    pub const KEPLER_CHANNEL_GROUP_A: u32 = 0xa06c;

    /// Kepler GPFIFO channel.
    pub const KEPLER_CHANNEL_GPFIFO_A: u32 = 0xa06f;
    /// Kepler B GPFIFO channel (`class/cla16f.h`).
    pub const KEPLER_CHANNEL_GPFIFO_B: u32 = 0xa16f;
    /// Maxwell GPFIFO channel (`class/clb06f.h`).
    pub const MAXWELL_CHANNEL_GPFIFO_A: u32 = 0xb06f;
    /// Pascal GPFIFO channel (`class/clc06f.h`).
    pub const PASCAL_CHANNEL_GPFIFO_A: u32 = 0xc06f;
    /// Volta GPFIFO channel.
    pub const VOLTA_CHANNEL_GPFIFO_A: u32 = 0xc36f;
    /// Turing GPFIFO channel.
    pub const TURING_CHANNEL_GPFIFO_A: u32 = 0xc46f;
    /// Ampere GPFIFO channel.
    pub const AMPERE_CHANNEL_GPFIFO_A: u32 = 0xc56f;
    /// Hopper GPFIFO channel.
    pub const HOPPER_CHANNEL_GPFIFO_A: u32 = 0xc86f;
    /// Blackwell GPFIFO channel.
    pub const BLACKWELL_CHANNEL_GPFIFO_A: u32 = 0xc96f;
    /// Blackwell B GPFIFO channel.
    pub const BLACKWELL_CHANNEL_GPFIFO_B: u32 = 0xca6f;

    /// Volta usermode (doorbell) page (`class/clc361.h`).
    pub const VOLTA_USERMODE_A: u32 = 0xc361;
    /// Turing usermode (doorbell) page, 64 KiB.
    pub const TURING_USERMODE_A: u32 = 0xc461;
    /// Ampere usermode page (`class/clc561.h`).
    pub const AMPERE_USERMODE_A: u32 = 0xc561;
    /// Hopper usermode page; params [`super::UsermodeAllocParams`].
    pub const HOPPER_USERMODE_A: u32 = 0xc661;
    /// Blackwell usermode page (`class/clc761.h`).
    pub const BLACKWELL_USERMODE_A: u32 = 0xc761;

    /// Ampere compute engine class (`class/clc6c0.h`).
    pub const AMPERE_COMPUTE_A: u32 = 0xc6c0;
    /// Ampere B compute engine class (`class/clc7c0.h`).
    pub const AMPERE_COMPUTE_B: u32 = 0xc7c0;
    /// Ada compute engine class (`class/clc9c0.h`).
    pub const ADA_COMPUTE_A: u32 = 0xc9c0;
    /// Hopper compute engine class (`class/clcbc0.h`).
    pub const HOPPER_COMPUTE_A: u32 = 0xcbc0;
    /// Ampere copy engine class (`class/clc6b5.h`).
    pub const AMPERE_DMA_COPY_A: u32 = 0xc6b5;
    /// Ampere B copy engine class (`class/clc7b5.h`).
    pub const AMPERE_DMA_COPY_B: u32 = 0xc7b5;
    /// Hopper copy engine class (`class/clc8b5.h`).
    pub const HOPPER_DMA_COPY_A: u32 = 0xc8b5;

    /// Whether `c` is a GPFIFO channel class (parent: a device or a TSG).
    pub const fn is_channel_class(c: u32) -> bool {
        matches!(
            c,
            KEPLER_CHANNEL_GPFIFO_A
                | KEPLER_CHANNEL_GPFIFO_B
                | MAXWELL_CHANNEL_GPFIFO_A
                | PASCAL_CHANNEL_GPFIFO_A
                | VOLTA_CHANNEL_GPFIFO_A
                | TURING_CHANNEL_GPFIFO_A
                | AMPERE_CHANNEL_GPFIFO_A
                | HOPPER_CHANNEL_GPFIFO_A
                | BLACKWELL_CHANNEL_GPFIFO_A
                | BLACKWELL_CHANNEL_GPFIFO_B
        )
    }

    /// Whether `c` is a usermode (doorbell page) class.
    pub const fn is_usermode_class(c: u32) -> bool {
        matches!(
            c,
            VOLTA_USERMODE_A
                | TURING_USERMODE_A
                | AMPERE_USERMODE_A
                | HOPPER_USERMODE_A
                | BLACKWELL_USERMODE_A
        )
    }

    /// Whether `c` is a client (root) class.
    pub const fn is_client_class(c: u32) -> bool {
        matches!(c, NV01_ROOT | NV01_ROOT_NON_PRIV | NV01_ROOT_CLIENT)
    }

    /// The byte offset in a usermode page where a work-submit token is
    /// written to ring the doorbell (`NVC361_NOTIFY_CHANNEL_PENDING`,
    /// `class/clc361.h`).
    pub const USERMODE_DOORBELL_OFFSET: usize = 0x90;

    /// Size of the usermode page that is mapped (64 KiB).
    pub const USERMODE_PAGE_SIZE: u64 = 0x10000;
}

/// A GPFIFO channel's USERD (the control area the client and the GPU share):
/// `Nvc36fControl` .. `Nvc86fControl` (`class/clc36f.h` etc.). Blackwell's
/// (`Nvc96fControl`, `Nvca6fControl`) keeps `GPPut` but has no `GPGet`.
pub mod userd {
    /// `GPGet`: the GPU's read index into the GPFIFO ring (Volta to Hopper;
    /// not in Blackwell's USERD).
    pub const GP_GET: usize = 0x88;
    /// `GPPut`: the client's write index.
    pub const GP_PUT: usize = 0x8c;
}

/// Engine types (`NV2080_ENGINE_TYPE_*`, `class/cl2080_notification.h`).
pub mod engine {
    /// The graphics/compute engine (`NV2080_ENGINE_TYPE_GRAPHICS`, = GR0).
    pub const NV2080_ENGINE_TYPE_GRAPHICS: u32 = 0x1;
    /// Copy engine 0 (`NV2080_ENGINE_TYPE_COPY0`).
    pub const NV2080_ENGINE_TYPE_COPY0: u32 = 0x9;
}
