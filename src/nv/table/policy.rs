// SPDX-License-Identifier: GPL-2.0

//! What vgpu does with a row ([`Policy`]) and the row's group in the docs
//! ([`Family`]).

/// What vgpu does with a class or control a container sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Forwarded as the caller wrote it: vgpu reads only the RM_ALLOC or
    /// RM_CONTROL header.
    Forward,
    /// Forwarded from a copy vgpu checked (and, for fds, translated): the
    /// driver reads vgpu's copy, not the caller's memory.
    Bounce,
    /// Executed by vgpu itself on its own copy, through the driver's
    /// kernel-client interface, with accounting (devices, VRAM, TSGs,
    /// channels), or answered by vgpu from its own records (the process
    /// queries).
    Served,
    /// Forwarded or executed with vgpu changing the request or the answer
    /// (FB sizes, client handles, a tenant's scheduling calls).
    Rewritten,
    /// Refused: forwarding it would show a container another tenant's data
    /// or change another tenant's GPU state, and vgpu has no rewrite yet.
    Denied,
}

impl Policy {
    /// Whether a container may use the row (anything but [`Policy::Denied`]).
    pub const fn admits(self) -> bool {
        !matches!(self, Policy::Denied)
    }

    /// The policy's name, as `docs/dispatch-table.md` writes it.
    pub const fn name(self) -> &'static str {
        match self {
            Policy::Forward => "Forward",
            Policy::Bounce => "Bounce",
            Policy::Served => "Served",
            Policy::Rewritten => "Rewritten",
            Policy::Denied => "Denied",
        }
    }
}

/// The group a row belongs to, for the docs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// Clients and system-wide queries (`NV0000_*`).
    Client,
    /// Sharing objects between clients and processes (export/import by fd,
    /// share policy).
    Sharing,
    /// Devices and device-wide objects (`NV0080_*`).
    Device,
    /// A subdevice's static GPU information (`NV2080_CTRL_CMD_GPU_*` etc.).
    GpuInfo,
    /// Framebuffer, memory objects and address spaces.
    Memory,
    /// FIFO: TSGs, channels, doorbells, scheduling.
    Fifo,
    /// Engine objects (compute, copy) and their GR and CE queries.
    Engine,
    /// Events and notifications.
    Event,
    /// Performance, power, clocks, thermal and timers.
    Perf,
    /// PCI, NVLink, P2P, RDMA and fabric.
    Interconnect,
    /// Debuggers, diagnostics and the RC watchdog.
    Debugging,
    /// Confidential computing.
    Security,
}

impl Family {
    /// Every family, in the order the docs list them.
    pub const ALL: &'static [Family] = &[
        Family::Client,
        Family::Sharing,
        Family::Device,
        Family::GpuInfo,
        Family::Memory,
        Family::Fifo,
        Family::Engine,
        Family::Event,
        Family::Perf,
        Family::Interconnect,
        Family::Debugging,
        Family::Security,
    ];

    /// The heading the docs give the family.
    pub const fn title(self) -> &'static str {
        match self {
            Family::Client => "Clients and system queries",
            Family::Sharing => "Sharing between clients",
            Family::Device => "Devices",
            Family::GpuInfo => "Subdevice GPU information",
            Family::Memory => "FB and memory",
            Family::Fifo => "FIFO: TSGs, channels, doorbells",
            Family::Engine => "Engines: compute, copy, GR",
            Family::Event => "Events",
            Family::Perf => "Perf, power, clocks, timers",
            Family::Interconnect => "PCI, NVLink, P2P, fabric",
            Family::Debugging => "Debugging and diagnostics",
            Family::Security => "Confidential computing",
        }
    }
}
