// SPDX-License-Identifier: GPL-2.0

//! The dispatch table of RM classes and controls (`src/nv/table.rs`)
//! checked as data: unique numbers and names, controls addressed to classes
//! the table knows, sizes that agree with the `wire_struct!` layouts, the
//! policies vgpu applies today, and every row argued in
//! `docs/dispatch-table.md`. Numbers and sizes against NVIDIA's headers are
//! the conformance check's (`userspace/conformance`).

use std::collections::{BTreeMap, BTreeSet};

use vgpu_logic::nv::abi::{self, class, ctrl};
use vgpu_logic::nv::table::{
    class_policy, class_row, control_policy, control_row, Family, Policy, CLASSES, CONTROLS,
};

/// Interfaces a control may be addressed to that are not themselves class
/// rows: the GPFIFO channel interfaces every channel class accepts
/// (`NV906F_*` of GF100_CHANNEL_GPFIFO, `NVA06F_*` of KEPLER_CHANNEL_GPFIFO_A,
/// `NVC36F_*` of VOLTA_CHANNEL_GPFIFO_A).
const CHANNEL_INTERFACES: &[u32] = &[0x906f, 0xa06f, 0xc36f];

#[test]
fn numbers_are_unique_and_sorted() {
    for w in CLASSES.windows(2) {
        assert!(
            w[0].class < w[1].class,
            "{} ({:#x}) then {} ({:#x}): duplicate or out of order",
            w[0].name,
            w[0].class,
            w[1].name,
            w[1].class
        );
    }
    for w in CONTROLS.windows(2) {
        assert!(
            w[0].cmd < w[1].cmd,
            "{} ({:#x}) then {} ({:#x}): duplicate or out of order",
            w[0].name,
            w[0].cmd,
            w[1].name,
            w[1].cmd
        );
    }
}

#[test]
fn names_are_unique_and_look_like_nvidia_names() {
    let mut seen = BTreeSet::new();
    let names = CLASSES
        .iter()
        .map(|r| r.name)
        .chain(CONTROLS.iter().map(|r| r.name));
    for n in names {
        assert!(seen.insert(n), "{n} is named twice");
        assert!(
            !n.is_empty()
                && n.bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_'),
            "{n} is not a C macro name"
        );
    }
    for r in CONTROLS {
        assert!(
            r.name.contains("_CTRL_"),
            "{}: not a control macro name",
            r.name
        );
    }
}

#[test]
fn every_control_is_addressed_to_a_known_class_or_interface() {
    for r in CONTROLS {
        let c = ctrl::class_of(r.cmd);
        assert!(
            class_row(c).is_some() || CHANNEL_INTERFACES.contains(&c),
            "{} ({:#010x}): class {c:#06x} is neither a class row nor a known interface",
            r.name,
            r.cmd
        );
        // The macro's prefix names the same class: NV2080_CTRL_* on 0x2080.
        let prefix = format!("NV{c:04X}_");
        let named = r.name.starts_with(&prefix)
            || (c == 0xcb33 && r.name.starts_with("NV_CONF_COMPUTE_CTRL_"));
        assert!(
            named,
            "{} ({:#010x}): name does not say class {c:#06x}",
            r.name, r.cmd
        );
    }
}

/// RM_USER_SHARED_DATA is refused as RM refuses it where it is not offered
/// (NV_ERR_NOT_SUPPORTED) from 550 on, whose page shows VRAM figures, and
/// admitted on 535, whose page has none; every other denied class is
/// refused as a class RM does not have.
#[test]
fn shared_data_is_refused_as_unsupported_from_550() {
    use vgpu_logic::nv::abi::{rusd, status};
    for rel in vgpu_logic::nv::release::RELEASES.iter() {
        let r = rel.class_row(rusd::CLASS).expect("every release has RUSD");
        if rel.name.starts_with("535.") {
            assert_eq!(r.policy, Policy::Bounce, "{}", rel.name);
        } else {
            assert_eq!(r.policy, Policy::Denied, "{}", rel.name);
            assert_eq!(r.refusal, status::NV_ERR_NOT_SUPPORTED, "{}", rel.name);
        }
        // The NVLink fabric's classes are refused as RM refuses them on a
        // GPU with no fabric (`docs/dispatch-table.md`).
        let fabric = [class::NV_MEMORY_FABRIC, 0x00fd];
        for c in rel.classes.iter().filter(|c| fabric.contains(&c.class)) {
            assert_eq!(c.policy, Policy::Denied, "{}: {}", rel.name, c.name);
            assert_eq!(
                c.refusal,
                status::NV_ERR_NOT_SUPPORTED,
                "{}: {}",
                rel.name,
                c.name
            );
        }
        let others = |c: &&vgpu_logic::nv::table::ClassRow| {
            c.class != rusd::CLASS && !fabric.contains(&c.class)
        };
        for c in rel.classes.iter().filter(others) {
            assert_eq!(
                c.refusal,
                status::NV_ERR_INVALID_CLASS,
                "{}: {}",
                rel.name,
                c.name
            );
        }
    }
}

#[test]
fn controls_of_denied_classes_are_denied() {
    for r in CONTROLS {
        if let Some(c) = class_row(ctrl::class_of(r.cmd)) {
            if c.policy == Policy::Denied {
                assert_eq!(
                    r.policy,
                    Policy::Denied,
                    "{} on denied class {}",
                    r.name,
                    c.name
                );
            }
        }
    }
}

/// The `wire_struct!` layouts vgpu already has for table rows.
fn control_layouts() -> Vec<(u32, usize)> {
    vec![
        (
            ctrl::NV0000_CTRL_CMD_GPU_GET_ATTACHED_IDS,
            abi::GpuGetAttachedIdsParams::SIZE,
        ),
        (
            ctrl::NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2,
            abi::GpuGetIdInfoV2Params::SIZE,
        ),
        (
            ctrl::NV0041_CTRL_CMD_GET_SURFACE_INFO,
            abi::GetSurfaceInfoParams::SIZE,
        ),
        (
            ctrl::NV0080_CTRL_CMD_GPU_GET_CLASSLIST_V2,
            abi::ClassListV2Params::SIZE,
        ),
        (
            ctrl::NV2080_CTRL_CMD_GPU_GET_INFO_V2,
            abi::GpuGetInfoV2Params::SIZE,
        ),
        (
            ctrl::NV2080_CTRL_CMD_GPU_GET_GID_INFO,
            abi::GidInfoParams::SIZE,
        ),
        (
            ctrl::NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS,
            abi::FifoDisableChannelsParams::SIZE,
        ),
        (
            ctrl::NV2080_CTRL_CMD_FB_GET_INFO,
            abi::FbGetInfoV1Params::SIZE,
        ),
        (
            ctrl::NV2080_CTRL_CMD_FB_GET_INFO_V2,
            abi::FbGetInfoV2Params::SIZE,
        ),
        (
            ctrl::NVA06C_CTRL_CMD_GPFIFO_SCHEDULE,
            abi::GpfifoScheduleParams::SIZE,
        ),
        (
            ctrl::NVA06C_CTRL_CMD_SET_TIMESLICE,
            abi::TimesliceParams::SIZE,
        ),
        (ctrl::NVA06C_CTRL_CMD_PREEMPT, abi::PreemptParams::SIZE),
        (
            ctrl::NVA06C_CTRL_CMD_SET_INTERLEAVE_LEVEL,
            abi::InterleaveLevelParams::SIZE,
        ),
        (
            ctrl::NVA06C_CTRL_CMD_MAKE_REALTIME,
            abi::MakeRealtimeParams::SIZE,
        ),
        (
            ctrl::NVA06F_CTRL_CMD_GPFIFO_SCHEDULE,
            abi::GpfifoScheduleParams::SIZE,
        ),
        (
            ctrl::NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN,
            abi::WorkSubmitTokenParams::SIZE,
        ),
    ]
}

fn class_layouts() -> Vec<(u32, usize)> {
    let mut v = vec![
        (class::NV01_EVENT_OS_EVENT, abi::EventAllocParams::SIZE),
        (class::NV01_DEVICE_0, abi::DeviceAllocParams::SIZE),
        (class::NV20_SUBDEVICE_0, abi::SubdeviceAllocParams::SIZE),
        (class::NV01_MEMORY_SYSTEM, abi::MemoryAllocationParams::SIZE),
        (
            class::NV01_MEMORY_LOCAL_USER,
            abi::MemoryAllocationParams::SIZE,
        ),
        (
            class::NV50_MEMORY_VIRTUAL,
            abi::MemoryAllocationParams::SIZE,
        ),
        (class::FERMI_CONTEXT_SHARE_A, abi::CtxShareAllocParams::SIZE),
        (class::FERMI_VASPACE_A, abi::VaSpaceAllocParams::SIZE),
        (
            class::KEPLER_CHANNEL_GROUP_A,
            abi::ChannelGroupAllocParams::SIZE,
        ),
        (class::HOPPER_USERMODE_A, abi::UsermodeAllocParams::SIZE),
        (class::BLACKWELL_USERMODE_A, abi::UsermodeAllocParams::SIZE),
    ];
    for r in CLASSES.iter().filter(|r| class::is_channel_class(r.class)) {
        v.push((r.class, abi::ChannelAllocParams::SIZE));
    }
    v
}

#[test]
fn sizes_agree_with_the_wire_structs() {
    for (cmd, size) in control_layouts() {
        let r = control_row(cmd).unwrap_or_else(|| panic!("{cmd:#010x} has a layout but no row"));
        assert!(r.params_size != 0, "{}: size not given", r.name);
        assert_eq!(
            r.params_size as usize, size,
            "{}: table vs wire_struct",
            r.name
        );
    }
    for (c, size) in class_layouts() {
        let r = class_row(c).unwrap_or_else(|| panic!("{c:#06x} has a layout but no row"));
        assert!(r.params_size != 0, "{}: size not given", r.name);
        assert_eq!(
            r.params_size as usize, size,
            "{}: table vs wire_struct",
            r.name
        );
    }
    // Every size fits a control's params (at most 1 MiB, `nvidia-abi.md`).
    for r in CONTROLS {
        assert!(
            (r.params_size as usize) <= abi::CONTROL_PARAMS_MAX,
            "{}",
            r.name
        );
    }
}

#[test]
fn policies_are_what_vgpu_does_today() {
    // src/ctl.rs: clients are forwarded under a handle vgpu picks and
    // verified (Rewritten); devices, subdevices, VRAM, TSGs and channels
    // are executed by vgpu with accounting (Served).
    for r in CLASSES {
        let expected = if class::is_client_class(r.class) {
            Some(Policy::Rewritten)
        } else if matches!(
            r.class,
            class::NV01_DEVICE_0
                | class::NV20_SUBDEVICE_0
                | class::NV01_MEMORY_LOCAL_USER
                | class::KEPLER_CHANNEL_GROUP_A
        ) || class::is_channel_class(r.class)
        {
            Some(Policy::Served)
        } else {
            None
        };
        match expected {
            Some(p) => assert_eq!(r.policy, p, "{}", r.name),
            None => assert!(
                !matches!(r.policy, Policy::Served | Policy::Rewritten),
                "{}: vgpu does not serve or rewrite it today",
                r.name
            ),
        }
    }
    // src/ctl.rs's control match: FB info rewritten, scheduling calls
    // decided on vgpu's copy, MAKE_REALTIME refused.
    let rewritten = [
        ctrl::NV2080_CTRL_CMD_FB_GET_INFO,
        ctrl::NV2080_CTRL_CMD_FB_GET_INFO_V2,
        ctrl::NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS,
        ctrl::NVA06C_CTRL_CMD_GPFIFO_SCHEDULE,
        ctrl::NVA06F_CTRL_CMD_GPFIFO_SCHEDULE,
        ctrl::NVA06C_CTRL_CMD_SET_TIMESLICE,
        ctrl::NVA06C_CTRL_CMD_SET_INTERLEAVE_LEVEL,
        // src/rm/control.rs: the lists cut to the container's GPUs.
        ctrl::NV0000_CTRL_CMD_GPU_GET_ATTACHED_IDS,
        ctrl::NV0000_CTRL_CMD_GPU_GET_PROBED_IDS,
        0x0000_0204,
        0x0000_0288,
        // src/rm/control.rs: WFI compute preemption refused.
        ctrl::NV2080_CTRL_CMD_GR_SET_CTXSW_PREEMPTION_MODE,
        // src/rm/control.rs: a boost until cleared cut to 1 s.
        0x2080_200a,
    ];
    // src/rm/processes.rs: the process queries answered from the vGPU's
    // list of processes.
    // src/rm/control.rs: the compute-mode reservation, each vGPU's own.
    let served = [
        ctrl::NV2080_CTRL_CMD_GPU_GET_PIDS,
        ctrl::NV2080_CTRL_CMD_GPU_GET_PID_INFO,
        ctrl::NV2080_CTRL_CMD_GPU_ACQUIRE_COMPUTE_MODE_RESERVATION,
        0x2080_0146,
    ];
    for r in CONTROLS {
        if rewritten.contains(&r.cmd) {
            assert_eq!(r.policy, Policy::Rewritten, "{}", r.name);
        } else if served.contains(&r.cmd) {
            assert_eq!(r.policy, Policy::Served, "{}", r.name);
        } else {
            assert!(
                !matches!(r.policy, Policy::Served | Policy::Rewritten),
                "{}: vgpu does not serve or rewrite it today",
                r.name
            );
        }
    }
    assert_eq!(
        control_policy(ctrl::NVA06C_CTRL_CMD_MAKE_REALTIME),
        Policy::Denied
    );
    // The leaks the fact sheet names are denied until vgpu serves them
    // (the process queries it serves: `served` above).
    for cmd in [
        ctrl::NV2080_CTRL_CMD_FB_GET_FB_REGION_INFO,
        0x2080_2096, // PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2
        ctrl::NV2080_CTRL_CMD_GPU_SET_COMPUTE_POLICY_CONFIG,
    ] {
        assert_eq!(control_policy(cmd), Policy::Denied, "{cmd:#010x}");
    }
}

#[test]
fn what_cuda_needs_is_admitted() {
    // The minimal client sequence of `nvidia-abi.md` (what libcuda and
    // tinygrad send) must not be refused.
    for c in [
        class::NV01_ROOT_CLIENT,
        class::NV01_DEVICE_0,
        class::NV20_SUBDEVICE_0,
        class::NV01_MEMORY_LOCAL_USER,
        class::NV01_MEMORY_SYSTEM,
        class::FERMI_VASPACE_A,
        class::KEPLER_CHANNEL_GROUP_A,
        class::FERMI_CONTEXT_SHARE_A,
        class::AMPERE_CHANNEL_GPFIFO_A,
        class::HOPPER_CHANNEL_GPFIFO_A,
        class::TURING_USERMODE_A,
        class::HOPPER_USERMODE_A,
        class::AMPERE_COMPUTE_A,
        class::HOPPER_COMPUTE_A,
        class::AMPERE_DMA_COPY_B,
        class::NV01_EVENT_OS_EVENT,
    ] {
        assert!(class_policy(c).admits(), "class {c:#06x}");
    }
    for cmd in [
        ctrl::NV0000_CTRL_CMD_GPU_GET_ATTACHED_IDS,
        ctrl::NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2,
        ctrl::NV0080_CTRL_CMD_GPU_GET_CLASSLIST_V2,
        ctrl::NV2080_CTRL_CMD_GPU_GET_INFO_V2,
        ctrl::NV2080_CTRL_CMD_GPU_GET_GID_INFO,
        ctrl::NV2080_CTRL_CMD_FB_GET_INFO_V2,
        ctrl::NV0041_CTRL_CMD_GET_SURFACE_INFO,
        ctrl::NVA06C_CTRL_CMD_GPFIFO_SCHEDULE,
        ctrl::NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN,
    ] {
        assert!(control_policy(cmd).admits(), "control {cmd:#010x}");
    }
}

#[test]
fn default_deny() {
    assert_eq!(
        class_policy(class::NV01_MEMORY_LOCAL_PHYSICAL),
        Policy::Denied
    );
    assert_eq!(control_policy(0x0080_028b), Policy::Denied);
    assert_eq!(control_policy(0xdead_beef), Policy::Denied);
    assert!(class_row(0xffff_ffff).is_none() && control_row(0).is_none());
    for r in CLASSES {
        assert_eq!(class_row(r.class), Some(r));
        assert_eq!(class_policy(r.class), r.policy);
    }
    for r in CONTROLS {
        assert_eq!(control_row(r.cmd), Some(r));
        assert_eq!(control_policy(r.cmd), r.policy);
    }
}

/// The rows of `docs/dispatch-table.md`: number -> (name, policy, size).
fn doc_rows() -> BTreeMap<u32, (String, String, u32)> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/dispatch-table.md");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut rows = BTreeMap::new();
    for line in text.lines().filter(|l| l.starts_with("| `0x")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let unquote = |s: &str| s.trim_matches('`').to_string();
        let num = u32::from_str_radix(unquote(cells[1]).trim_start_matches("0x"), 16)
            .unwrap_or_else(|_| panic!("bad number in {line}"));
        let size = cells[4]
            .parse()
            .unwrap_or_else(|_| panic!("bad size in {line}"));
        let row = (unquote(cells[2]), cells[3].to_string(), size);
        assert!(
            rows.insert(num, row).is_none(),
            "{num:#x} twice in the docs"
        );
    }
    rows
}

#[test]
fn every_row_is_argued_in_the_docs() {
    let doc = doc_rows();
    let rows = CLASSES
        .iter()
        .map(|r| (r.class, r.name, r.policy, r.params_size))
        .chain(
            CONTROLS
                .iter()
                .map(|r| (r.cmd, r.name, r.policy, r.params_size)),
        );
    let mut n = 0;
    for (num, name, policy, size) in rows {
        n += 1;
        let Some((dname, dpolicy, dsize)) = doc.get(&num) else {
            // Forwarded rows must be argued; denied ones are listed too.
            panic!(
                "{name} ({num:#x}, {}) is not in docs/dispatch-table.md",
                policy.name()
            );
        };
        assert_eq!(dname, name, "{num:#x}");
        assert_eq!(dpolicy, policy.name(), "{name}");
        assert_eq!(*dsize, size, "{name}");
    }
    assert_eq!(doc.len(), n, "the docs have rows the table lacks");
}

#[test]
fn families_cover_the_table() {
    let used: BTreeSet<_> = CLASSES
        .iter()
        .map(|r| r.family.title())
        .chain(CONTROLS.iter().map(|r| r.family.title()))
        .collect();
    for f in Family::ALL {
        assert!(used.contains(f.title()), "{f:?} is empty");
    }
    assert_eq!(used.len(), Family::ALL.len());
}

#[test]
fn control_handlers_match_the_policies() {
    use vgpu_logic::nv::table::ControlHandler;
    for r in CONTROLS {
        match r.handler {
            ControlHandler::Forward => assert!(
                !matches!(r.policy, Policy::Served | Policy::Rewritten),
                "{}: a rewritten row needs its own handler",
                r.name
            ),
            // Run on kernel copies, but forwarded as the caller sent it:
            // only admitted rows, on a device or subdevice (the objects the
            // handler checks the caller owns), small enough for its stack.
            ControlHandler::Kernel => {
                assert_eq!(r.policy, Policy::Forward, "{}", r.name);
                assert!(
                    matches!(r.cmd >> 16, 0x0080 | 0x2080),
                    "{}: not a device or subdevice control",
                    r.name
                );
                assert!(
                    r.params_size as usize <= vgpu_logic::nv::table::KERNEL_PARAMS_MAX,
                    "{}: {} bytes of params",
                    r.name,
                    r.params_size
                );
            }
            // Answered by vgpu, never forwarded.
            ControlHandler::Processes | ControlHandler::ComputeReservation => {
                assert_eq!(r.policy, Policy::Served, "{}", r.name)
            }
            // Checked, then forwarded from vgpu's copy: NV0000 controls on
            // the caller's client, refused as RM refuses an unknown id.
            ControlHandler::GpuIdsNamed { lists, unknown } => {
                assert_eq!(r.policy, Policy::Bounce, "{}", r.name);
                assert_eq!(r.cmd >> 16, 0, "{}: not an NV0000 control", r.name);
                assert!(
                    matches!(
                        unknown,
                        abi::status::NV_ERR_INVALID_ARGUMENT | abi::status::NV_ERR_OBJECT_NOT_FOUND
                    ),
                    "{}",
                    r.name
                );
                for l in lists {
                    assert!(
                        l.at as usize + 4 * l.max as usize <= r.params_size as usize,
                        "{}: an id list past the params",
                        r.name
                    );
                }
            }
            // Checked (a duration rewritten) on vgpu's copy, then
            // forwarded from it: a device or subdevice control, what it
            // checks inside the params, refused with RM's status.
            ControlHandler::Checked { check, refusal } => {
                use vgpu_logic::nv::table::ParamCheck;
                let rewrites = matches!(check, ParamCheck::Duration { .. });
                let want = if rewrites {
                    Policy::Rewritten
                } else {
                    Policy::Bounce
                };
                assert_eq!(r.policy, want, "{}", r.name);
                assert!(
                    matches!(r.cmd >> 16, 0x0080 | 0x2080),
                    "{}: not a device or subdevice control",
                    r.name
                );
                let end = match check {
                    ParamCheck::OwnTsg { at }
                    | ParamCheck::OneOf { at, .. }
                    | ParamCheck::Duration { at, .. } => at as u32 + 4,
                    ParamCheck::Instructions { .. } => 24 + 32 * 44,
                };
                assert!(end <= r.params_size, "{}: checks past the params", r.name);
                assert!(
                    matches!(
                        refusal,
                        abi::status::NV_ERR_INVALID_ARGUMENT | abi::status::NV_ERR_OBJECT_NOT_FOUND
                    ),
                    "{}",
                    r.name
                );
            }
            _ => assert_eq!(
                r.policy,
                Policy::Rewritten,
                "{}: a handler on a row that is not rewritten",
                r.name
            ),
        }
        // A refusal other than RM's "not supported" is the row's own
        // (MAKE_REALTIME's).
        if r.refusal != abi::status::NV_ERR_NOT_SUPPORTED {
            assert_eq!(r.policy, Policy::Denied, "{}", r.name);
        }
    }
}

#[test]
fn class_handlers_match_the_policies() {
    use vgpu_logic::nv::table::ClassHandler;
    for rel in vgpu_logic::nv::release::RELEASES.iter() {
        for r in rel.classes {
            assert!(
                r.handler.fits(r.policy),
                "{} {}: handler {:?} on a {:?} row",
                rel.name,
                r.name,
                r.handler,
                r.policy
            );
        }
        // Every accounted kind has its rows.
        for k in [
            ClassHandler::Client,
            ClassHandler::Device,
            ClassHandler::Subdevice,
            ClassHandler::Tsg,
            ClassHandler::Channel,
            ClassHandler::Memory,
        ] {
            assert!(
                rel.classes.iter().any(|r| r.handler == k),
                "{}: no {k:?} row",
                rel.name
            );
        }
    }
}

#[test]
fn escape_rows_cover_every_escape_once() {
    use vgpu_logic::nv::ioctl::{Escape, Node};
    use vgpu_logic::nv::table::{escape_row, EscapeHandler, Nodes, ESCAPES};
    assert_eq!(ESCAPES.len(), Escape::ALL.len());
    for e in Escape::ALL {
        let r = escape_row(*e);
        assert_eq!(r.escape, *e);
        assert_eq!(r.nr, e.nr());
        assert_eq!(r.fd_at, e.embedded_fd(), "{e:?}");
        assert_eq!(r.size, e.size_rule(), "{e:?}");
        // The driver's RM escapes are admitted on the ctl node only, but
        // RM_ALLOC, which RM takes on a GPU node for the event classes
        // (`src/rm/alloc.rs`, `alloc_on_gpu_node`).
        if e.node() == Node::Ctl && *e != Escape::RmAlloc {
            assert_eq!(r.nodes, Nodes::Ctl, "{e:?}");
        }
        // A handler of vgpu's own is a decision: not a plain forward.
        if !matches!(r.handler, EscapeHandler::Forward) {
            assert_ne!(r.policy, Policy::Forward, "{e:?}");
        }
    }
    assert_eq!(escape_row(Escape::RegisterFd).nodes, Nodes::Gpu);
    // Status offsets come from the layouts.
    assert_eq!(
        escape_row(Escape::RmControl).status_at,
        Some(abi::field_offset(abi::Nvos54::FIELDS, "status"))
    );
    assert_eq!(
        escape_row(Escape::RmFree).status_at,
        Some(abi::field_offset(abi::Nvos00::FIELDS, "status"))
    );
}

#[test]
fn uvm_rows_cover_every_command_once() {
    use vgpu_logic::nv::table::{uvm_row, UvmHandler, UVM};
    use vgpu_logic::nv::uvm::{Command, COMMANDS};
    assert_eq!(UVM.len(), COMMANDS.len());
    for c in COMMANDS {
        let r = uvm_row(c.number()).unwrap_or_else(|| panic!("{c:?} has no row"));
        assert_eq!(r.command, c);
        assert_eq!(r.size, c.size());
        assert_eq!(r.status_at, c.status_offset());
        // Every block that names an RM client has it checked.
        if r.client_at.is_some() {
            assert!(
                matches!(
                    r.handler,
                    UvmHandler::ClientChecked | UvmHandler::MapExternal | UvmHandler::RegisterGpu
                ),
                "{c:?} names a client vgpu does not check"
            );
        }
        // Every block with an fd has it translated.
        if r.fd_at.is_some() {
            assert!(
                matches!(
                    r.handler,
                    UvmHandler::MmInitialize | UvmHandler::RegisterGpu
                ),
                "{c:?}"
            );
        }
    }
    assert_eq!(
        uvm_row(Command::RegisterChannel.number()).and_then(|r| r.client_at),
        Some(20)
    );
    assert!(uvm_row(0x1234).is_none());
}

#[test]
fn escape_and_uvm_rows_are_argued_in_the_docs() {
    use vgpu_logic::nv::table::{ESCAPES, UVM};
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/dispatch-table.md");
    let text = std::fs::read_to_string(path).unwrap();
    let rows: BTreeMap<String, Vec<String>> = text
        .lines()
        .filter(|l| l.starts_with("| `") && !l.starts_with("| `0x"))
        .map(|l| {
            let cells: Vec<String> = l.split('|').map(|c| c.trim().to_string()).collect();
            (cells[1].trim_matches('`').to_string(), cells)
        })
        .collect();
    for r in ESCAPES {
        let name = format!("{:?}", r.escape);
        let cells = rows
            .get(&name)
            .unwrap_or_else(|| panic!("escape {name} is not in the docs"));
        assert_eq!(cells[4], r.policy.name(), "{name}");
        assert_eq!(cells[5], format!("{:?}", r.handler), "{name}");
        assert!(cells[6].len() > 20, "{name}: no reason given");
    }
    for r in UVM {
        let name = format!("{:?}", r.command);
        let cells = rows
            .get(&name)
            .unwrap_or_else(|| panic!("UVM command {name} is not in the docs"));
        assert_eq!(cells[3], r.policy.name(), "{name}");
        assert_eq!(cells[4], format!("{:?}", r.handler), "{name}");
    }
}

// The coverage map of the Rewritten rows: REWRITTEN_CLASSES and
// REWRITTEN_CONTROLS, (number, name, ["suite.test", ...]).
include!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../selftests/vmtest/src/coverage.rs"
));

/// The VM suites' sources: suite name -> the test names its `TESTS` list
/// gives, from `selftests/vmtest/src/main.rs`'s `SUITES` and `ON_REQUEST`
/// (`("memory", memory::TESTS)`) and each module's `tests![...]` list.
fn vm_tests() -> BTreeMap<String, BTreeSet<String>> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../selftests/vmtest/src");
    let read = |f: &str| {
        let path = format!("{dir}/{f}");
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    };
    let main = read("main.rs");
    let mut suites = BTreeMap::new();
    // ("memory", memory::TESTS), one a line or several in a one-line list.
    let entries = main
        .lines()
        .map(str::trim)
        .flat_map(|line| line.split("(\"").skip(1));
    for rest in entries {
        let Some((suite, module)) = rest.split_once("\", ") else {
            continue;
        };
        let Some((module, _)) = module.split_once("::TESTS)") else {
            continue;
        };
        // A module is a file, or a directory with its `mod.rs`.
        let src = if std::path::Path::new(&format!("{dir}/{module}.rs")).exists() {
            read(&format!("{module}.rs"))
        } else {
            read(&format!("{module}/mod.rs"))
        };
        // The module's `pub const TESTS: &[Test] = tests![...];`: entries
        // `name` or `name = run`, one a line, `//` comments between them.
        let list = src
            .split_once("pub const TESTS: &[Test] = tests![")
            .and_then(|(_, t)| t.split_once("];"))
            .map(|(t, _)| t)
            .unwrap_or_else(|| panic!("{module}.rs: no `tests![...]` TESTS list"));
        let code: String = list
            .lines()
            .map(|l| l.split_once("//").map_or(l, |(code, _)| code))
            .collect::<Vec<_>>()
            .join(" ");
        // Split at the commas outside parentheses (a closure's call may
        // have its own); an entry's name is what comes before its `=`.
        let (mut entries, mut depth, mut start) = (Vec::new(), 0i32, 0);
        for (i, c) in code.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                ',' if depth == 0 => {
                    entries.push(&code[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        entries.push(&code[start..]);
        let names: BTreeSet<String> = entries
            .into_iter()
            .map(|e| e.split_once('=').map_or(e, |(name, _)| name).trim())
            .filter(|n| !n.is_empty())
            .map(str::to_string)
            .collect();
        assert!(!names.is_empty(), "{module}.rs: an empty TESTS list");
        assert!(
            suites.insert(suite.to_string(), names).is_none(),
            "suite {suite} twice in main.rs"
        );
    }
    assert!(
        suites.len() >= 10,
        "main.rs lists only {} suites: its format changed?",
        suites.len()
    );
    suites
}

#[test]
fn vm_tests_reads_the_suites() {
    // The reader itself: known suites and tests are found, so a listed
    // test that is missing cannot be missed because nothing was read.
    let t = vm_tests();
    assert!(t["memory"].contains("each_sees_its_own_size"));
    assert!(t["compute"].contains("scheduling_calls_filtered"));
    assert!(t["rewritten"].contains("setup"));
    assert!(t["double"].contains("card_info"));
    // `name = run` entries are read by their name, not their function.
    assert!(t["memory"].contains("setup_two_containers") && !t["memory"].contains("setup"));
    assert!(t.contains_key("bench"));
    // An entry rustfmt broke over two lines is still one name.
    assert!(t["fuzz"].contains("closes_failing_one_allocation_leave_nothing"));
    assert!(
        t["fuzz"].iter().all(|n| !n.contains(':')),
        "{:?}",
        t["fuzz"]
    );
    assert!(t["vgpuctl"].len() > 1 && t["kclient"].len() == 1);
    assert!(!t["memory"].contains("no_such_test"));
}

#[test]
fn every_rewritten_row_is_covered_by_a_vm_test() {
    let suites = vm_tests();
    let classes: Vec<(u32, &str, Policy)> = CLASSES
        .iter()
        .map(|r| (r.class, r.name, r.policy))
        .collect();
    let controls: Vec<(u32, &str, Policy)> =
        CONTROLS.iter().map(|r| (r.cmd, r.name, r.policy)).collect();
    for (kind, rows, covered) in [
        ("class", &classes, REWRITTEN_CLASSES),
        ("control", &controls, REWRITTEN_CONTROLS),
    ] {
        // Every Rewritten row has exactly one entry...
        for (num, name, policy) in rows.iter() {
            let entries: Vec<_> = covered.iter().filter(|e| e.0 == *num).collect();
            if *policy == Policy::Rewritten {
                assert_eq!(
                    entries.len(),
                    1,
                    "Rewritten {kind} {name} ({num:#x}): {} entries in selftests/vmtest/src/coverage.rs, want 1",
                    entries.len()
                );
                assert_eq!(entries[0].1, *name, "{kind} {num:#x}: named differently");
                assert!(
                    !entries[0].2.is_empty(),
                    "Rewritten {kind} {name}: no covering VM test listed"
                );
            }
        }
        // ...every entry is a Rewritten row, and every test it lists
        // exists in its suite's source.
        for (num, name, tests) in covered.iter() {
            let row = rows.iter().find(|r| r.0 == *num);
            assert!(
                matches!(row, Some((_, _, Policy::Rewritten))),
                "coverage.rs lists {kind} {name} ({num:#x}), which is not a Rewritten row: {row:?}"
            );
            for t in tests.iter() {
                let (suite, test) = t
                    .split_once('.')
                    .unwrap_or_else(|| panic!("{name}: {t:?} is not suite.test"));
                let found = suites.get(suite).is_some_and(|s| s.contains(test));
                assert!(
                    found,
                    "{name}: covering test {t} is not in selftests/vmtest (suites: {:?})",
                    suites.keys().collect::<Vec<_>>()
                );
            }
        }
    }
}

/// Whether `rel` is `base` less some rows, in the same order, each row
/// agreeing with its base row on `key` (what vgpu decides) and differing
/// at most in what `key` leaves out (sizes and layouts, which the
/// conformance facts check per release).
fn subsequence<T, K: PartialEq + std::fmt::Debug>(rel: &[T], base: &[T], key: impl Fn(&T) -> K) {
    let mut b = base.iter();
    for r in rel {
        let k = key(r);
        assert!(
            b.by_ref().any(|x| key(x) == k),
            "{k:?}: not in the base table, or out of order"
        );
    }
}

#[test]
fn every_release_table_is_the_base_table_with_its_sizes() {
    // A release's tables have the rows of 595.45.04's that the release
    // has, in the same order (lookups are binary searches), with the same
    // decisions but one (RUSD, admitted on 535): only sizes and layouts
    // differ. The newest comes first and
    // is the base; names are unique.
    use vgpu_logic::nv::release::{find, RELEASES};
    use vgpu_logic::nv::table::{CLASSES, ESCAPES, UVM};
    assert_eq!(RELEASES[0].name, vgpu_logic::nv::RELEASE);
    assert_eq!(RELEASES[0].controls, CONTROLS);
    assert_eq!(RELEASES[0].classes, CLASSES);
    assert_eq!(RELEASES[0].escapes, ESCAPES);
    assert_eq!(RELEASES[0].uvm, UVM);
    for (i, r) in RELEASES.iter().enumerate() {
        assert_eq!(find(r.name.as_bytes()), Some(i), "{}", r.name);
        // Less a control a later release dropped: the channels'
        // NVC36F_CTRL_GET_CLASS_ENGINEID, exported up to 550 only, decided
        // as NV906F's (`table::NVC36F_GET_CLASS_ENGINEID`).
        let older = vgpu_logic::nv::table::NVC36F_GET_CLASS_ENGINEID;
        let own: Vec<_> = r
            .controls
            .iter()
            .filter(|c| c.cmd != older.cmd)
            .copied()
            .collect();
        let has_older = own.len() < r.controls.len();
        assert_eq!(
            has_older,
            r.name.starts_with("550.") || r.name.starts_with("535."),
            "{}: NVC36F_CTRL_GET_CLASS_ENGINEID up to 550 only",
            r.name
        );
        if has_older {
            let base = CONTROLS.iter().find(|c| c.cmd == 0x906f_0101);
            assert!(
                base.is_some_and(|b| (b.policy, b.handler, b.params_size, b.family)
                    == (older.policy, older.handler, older.params_size, older.family)),
                "NVC36F_CTRL_GET_CLASS_ENGINEID not decided as NV906F's"
            );
        }
        subsequence(&own, CONTROLS, |c| (c.name, c.policy, c.handler));
        // One decision differs by release, and is checked on its own
        // (`shared_data_is_refused_as_unsupported_from_550`): RUSD.
        subsequence(r.classes, CLASSES, |c| {
            let policy = (c.class != vgpu_logic::nv::abi::rusd::CLASS).then_some(c.policy);
            (c.name, policy, c.family)
        });
        subsequence(r.escapes, ESCAPES, |e| {
            (e.escape, e.nodes, e.policy, e.handler)
        });
        assert_eq!(r.uvm.len(), UVM.len(), "{}: every UVM command", r.name);
        subsequence(r.uvm, UVM, |u| (u.command, u.number, u.policy, u.handler));
        for c in r.controls.windows(2) {
            assert!(c[0].cmd < c[1].cmd, "{}: controls out of order", r.name);
        }
        for c in r.classes.windows(2) {
            assert!(c[0].class < c[1].class, "{}: classes out of order", r.name);
        }
        assert!(
            own.len() + 12 >= CONTROLS.len(),
            "{}: a release lacks at most a dozen controls",
            r.name
        );
        // GPU_GET_NAME_STRING's params were halved in 595 only.
        assert_eq!(
            r.control_row(0x2080_0110).map(|c| c.params_size),
            Some(if r.name == "595.45.04" { 68 } else { 132 }),
            "{}: GPU_GET_NAME_STRING",
            r.name
        );
    }
    // A table for each branch's release, and for nothing else.
    let names: Vec<&str> = RELEASES.iter().map(|r| r.name).collect();
    assert_eq!(names, vgpu_logic::nv::release::BRANCHES);
    assert_eq!(find(b"560.35.05"), None);
    assert_eq!(find(b"595.45.0"), None);
}

#[test]
fn releases_before_580_have_their_own_kernel_client_and_lists() {
    use vgpu_logic::nv::abi::{ctrl, Nvos21, Nvos64};
    use vgpu_logic::nv::release::{find, RELEASES};
    use vgpu_logic::nv::rmops::op;
    use vgpu_logic::nv::uvm::Command;
    let at = |n: &str| &RELEASES[find(n.as_bytes()).expect("a release with tables")];
    let size = |n: &str, cmd: u32| at(n).control_row(cmd).map(|r| r.params_size);
    // NV04_ALLOC: an NVOS21 before 580, an NVOS64 from 580 on.
    for (n, alloc) in [
        ("595.45.04", Nvos64::SIZE),
        ("580.142", Nvos64::SIZE),
        ("570.211.01", Nvos21::SIZE),
        ("535.288.01", Nvos21::SIZE),
    ] {
        assert_eq!(at(n).kernel.member_size(op::ALLOC), Some(alloc), "{n}");
    }
    assert_eq!(at("570.211.01").kernel.cmd_size(), 64);
    // The FB info list: 128 entries from 580, 57, 55 and 54 before.
    for (n, entries) in [
        ("580.142", 128),
        ("570.211.01", 57),
        ("550.163.01", 55),
        ("535.288.01", 54),
    ] {
        assert_eq!(
            size(n, ctrl::NV2080_CTRL_CMD_FB_GET_INFO_V2),
            Some(4 + 8 * entries),
            "{n}"
        );
    }
    assert_eq!(
        size("570.211.01", ctrl::NVA06C_CTRL_CMD_GPFIFO_SCHEDULE),
        Some(2)
    );
    assert_eq!(
        size("580.142", ctrl::NVA06C_CTRL_CMD_GPFIFO_SCHEDULE),
        Some(3)
    );
    // The DRAM encryption queries: one higher in 570, absent before.
    assert_eq!(size("570.211.01", 0x2080_1359), Some(4));
    assert_eq!(size("595.45.04", 0x2080_1359), None);
    assert_eq!(size("550.163.01", 0x2080_1358), None);
    // Blackwell classes and 535's missing escape.
    assert!(at("550.163.01").class_row(0xc96f).is_none());
    assert!(at("570.211.01").class_row(0xc96f).is_some());
    assert!(at("535.288.01").escape_row(0xda).is_none());
    assert_eq!(
        at("535.288.01")
            .uvm_command(Command::MapExternalAllocation)
            .size,
        1200
    );
}

#[test]
fn releases_before_590_have_the_older_uvm_layouts_and_every_one_numa_info() {
    use vgpu_logic::nv::ioctl::{decode_with, nv_iowr, DecodeError, Escape};
    use vgpu_logic::nv::release::{find, RELEASES};
    use vgpu_logic::nv::uvm::Command;
    let r580 = &RELEASES[find(b"580.142").expect("580.142 has tables")];
    let r595 = &RELEASES[0];
    let free = r580.uvm_command(Command::Free);
    assert_eq!(
        (free.size, free.status_at, free.field("length")),
        (24, Some(16), Some(8))
    );
    let un = r580.uvm_command(Command::UnregisterChannel);
    assert_eq!(
        (un.size, un.client_at, un.status_at),
        (28, Some(16), Some(24))
    );
    assert_eq!(r595.uvm_command(Command::Free).field("length"), None);
    // NUMA_INFO decodes under every release (`nv-ioctl-numa.h:44` at each
    // tag); WAIT_OPEN_COMPLETE is an unknown escape under 535.
    let numa = nv_iowr(Escape::NumaInfo.nr(), 560);
    for r in RELEASES.iter() {
        assert!(
            decode_with(numa, |e| r.escape_rule(e)).is_ok(),
            "{}",
            r.name
        );
    }
    let r535 = &RELEASES[find(b"535.288.01").expect("535.288.01 has tables")];
    let wait = nv_iowr(Escape::WaitOpenComplete.nr(), 8);
    assert!(decode_with(wait, |e| r580.escape_rule(e)).is_ok());
    assert_eq!(
        decode_with(wait, |e| r535.escape_rule(e)),
        Err(DecodeError::UnknownEscape(Escape::WaitOpenComplete.nr()))
    );
    assert_eq!(r580.class_row(0x503b).map(|c| c.params_size), Some(72));
}

#[test]
fn modinfo_names_every_release_vgpu_has_tables_for() {
    // `modinfo vgpu` is how an operator checks a module file against a
    // driver before loading it: its description lists the releases.
    let main = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../src/vgpu_main.rs"
    ))
    .expect("src/vgpu_main.rs");
    let names: Vec<&str> = vgpu_logic::nv::release::RELEASES
        .iter()
        .map(|r| r.name)
        .collect();
    let want = format!("(NVIDIA drivers {})\"", names.join(", "));
    assert!(
        main.contains(&want),
        "the module description should end with {want}"
    );
}

#[test]
fn other_releases_of_a_branch_run_with_its_tables_by_their_own_names() {
    use vgpu_logic::nv::release::{find, lookup, Known, RELEASES};
    let k = lookup(b"580.105.08").expect("580.105.08 has 580.142's ABI");
    assert_eq!(RELEASES[k.table].name, "580.142");
    assert_eq!(k.name(), "580.105.08");
    assert_eq!(k.name_nul(), b"580.105.08\0");
    assert_eq!(find(b"580.105.08"), find(b"580.142"));
    let own = lookup(b"580.142").expect("580.142");
    assert_eq!((own.alias, own.name()), (0, "580.142"));
    // Point releases whose facts differ are not taken for the branch's.
    assert_eq!(lookup(b"580.82.09"), None);
    assert_eq!(lookup(b"580.105.0"), None);
    assert_eq!(lookup(b""), None);
    // Every name, alias or not, is found as itself.
    for (t, r) in RELEASES.iter().enumerate() {
        for (k, a) in r.also.iter().enumerate() {
            let known = Known {
                table: t,
                alias: k + 1,
            };
            assert_eq!(lookup(&a[..a.len() - 1]), Some(known));
            assert!(!RELEASES
                .iter()
                .any(|o| o.name.as_bytes() == &a[..a.len() - 1]));
        }
    }
}
