// SPDX-License-Identifier: GPL-2.0

//! NVIDIA's own driver in the VM, without a GPU: Debian's open kernel
//! module of the release vgpu has tables for (`scripts/build-nvidia.sh`),
//! loaded on the fake NVSwitch function (`selftests/fakenvswitch`). RM's
//! core then serves clients and NV0000 controls; NV01_DEVICE_0 and
//! everything under it needs GSP firmware on a GPU. This suite runs only
//! in that VM (`scripts/vm.sh --driver real`): it loads the real modules,
//! makes every call RM can answer without a GPU directly and through
//! vgpu, compares the two, runs vgpu's load, refusal and unload paths and
//! NVIDIA's userspace against it, and finally makes the same calls on the
//! driver double claiming the same release with no GPU and compares them
//! with RM's answers field by field (`docs/testing.md`, "The real driver").

use crate::ensure;
use crate::sys::{as_container, claimed_release, exists, make_uvm_nodes, module_loaded, sh};
use crate::tap::{Outcome, Test};
use crate::tests;
use nvclient::abi::{self, class, ctrl, status, Nvos21, Nvos64, RmApiVersion, Wire};
use nvclient::ioctl::Escape;
use nvclient::{Ctl, Error, Uvm, VersionCheck};

/// Tests of this suite, in order (each relies on the earlier ones' state).
pub const TESTS: &[Test] = tests![
    real_driver_loads,
    direct_answers,
    vgpu_loads_on_it,
    through_vgpu_answers_as_directly,
    uvm_through_vgpu_answers_as_directly,
    client_then_device_reaches_rm,
    no_rm_errors_caused_by_vgpu,
    nvidia_userspace_directly,
    nvidia_userspace_through_vgpu,
    unload_paths,
    double_answers_as_rm,
];

/// Where the initramfs puts NVIDIA's modules (`scripts/initramfs.sh --real`).
fn real_module(name: &str) -> Result<String, String> {
    let krel = sh("uname -r")?;
    Ok(format!(
        "/lib/modules/{}/nvidia-real/{name}.ko",
        krel.trim()
    ))
}

/// Loads the kernel's modules `ko` depends on (on Debian's kernel,
/// nvidia.ko needs drm), which `scripts/initramfs.sh --real` put beside
/// it, depth first, as modprobe would.
fn load_dependencies(ko: &str) -> Outcome {
    let deps = sh(&format!("modinfo -F depends {ko}"))?;
    for dep in deps.trim().split(',').filter(|d| !d.is_empty()) {
        if module_loaded(dep) {
            continue;
        }
        let path = real_module(dep)?;
        load_dependencies(&path)?;
        sh(&format!("insmod {path}"))?;
    }
    Ok(())
}

/// The container of the through-vgpu calls: a vGPU bound to it, on no GPU
/// (there is none).
const CG: &str = "/realctr";
const DIRECT: &str = "/tmp/realdriver-direct";
const VIA_VGPU: &str = "/tmp/realdriver-vgpu";
const UVM_DIRECT: &str = "/tmp/realdriver-uvm-direct";
const UVM_VIA_VGPU: &str = "/tmp/realdriver-uvm-vgpu";

/// A handle the caller asks for (in hRoot, where RM takes it).
const WANT: u32 = 0x5eed_0101;
/// A decoy in hObjectNew, which RM ignores for clients.
const DECOY: u32 = 0x0dec_0001;

fn real_driver_loads() -> Outcome {
    sh("insmod /lib/modules/$(uname -r)/extra/fakenvswitch.ko")?;
    let pci = sh("cat /sys/bus/pci/devices/*/vendor /sys/bus/pci/devices/*/class")?;
    ensure!(
        pci.contains("0x10de") && pci.contains("0x068000"),
        "no 10de/0x0680 function on the bus: {pci}"
    );
    let nv = real_module("nvidia")?;
    let lic = sh(&format!("modinfo -F license {nv}"))?;
    ensure!(lic.trim() == "Dual MIT/GPL", "nvidia.ko license {lic:?}");
    load_dependencies(&nv)?;
    sh(&format!("insmod {nv}"))?;
    sh(&format!("insmod {}", real_module("nvidia-uvm")?))?;
    let version = sh("cat /proc/driver/nvidia/version")?;
    let rel = claimed_release();
    ensure!(
        version.contains("Open Kernel Module") && version.contains(&rel),
        "/proc/driver/nvidia/version: {version}"
    );
    // The driver makes no nodes (nvidia-modprobe does).
    if !exists("/dev/nvidiactl") {
        sh("mknod -m 666 /dev/nvidiactl c 195 255")?;
    }
    make_uvm_nodes()?;
    println!("# real driver: {}", version.lines().next().unwrap_or(""));
    Ok(())
}

/// One call and RM's answer, as text: "call\tanswer".
type Transcript = Vec<(String, String)>;

/// A handle as the comparison sees it: exact where the caller asked for
/// it, else only that the driver (or vgpu for it) picked one.
fn picked(h: u32) -> String {
    match h {
        0 => "0".into(),
        WANT => format!("{WANT:#x}"),
        DECOY => "the decoy".into(),
        _ => "picked".into(),
    }
}

fn os_or_rm(r: Result<(), Error>) -> String {
    match r {
        Ok(()) => "ok".into(),
        Err(Error::Os(e)) => format!("errno {e}"),
        Err(Error::Rm(s)) => status_text(s),
        Err(e) => format!("{e:?}"),
    }
}

fn status_text(s: u32) -> String {
    match status::name(s) {
        Some(n) => n.to_string(),
        None => format!("{s:#x}"),
    }
}

/// RM_ALLOC of a client class in either layout; returns the answer and the
/// handle.
fn alloc_root(ctl: &Ctl, class: u32, h_root: u32, h_new: u32, v21: bool) -> (String, u32) {
    let (rc, st, cls, h) = if v21 {
        let mut b = Nvos21 {
            h_root,
            h_object_new: h_new,
            h_class: class,
            ..Default::default()
        }
        .to_bytes();
        let rc = ctl.ioctl(Escape::RmAlloc.nr(), &mut b);
        let a = Nvos21::decode(&b);
        (rc, a.status, a.h_class, a.h_object_new)
    } else {
        let mut b = Nvos64 {
            h_root,
            h_object_new: h_new,
            h_class: class,
            ..Default::default()
        }
        .to_bytes();
        let rc = ctl.ioctl(Escape::RmAlloc.nr(), &mut b);
        let a = Nvos64::decode(&b);
        (rc, a.status, a.h_class, a.h_object_new)
    };
    let text = format!(
        "{} status {} class {cls:#x} handle {}",
        os_or_rm(rc),
        status_text(st),
        picked(h)
    );
    (text, if st == status::NV_OK { h } else { 0 })
}

/// A control with `params` of `size` bytes; the answer is its status and
/// the params as RM wrote them, when `data`.
fn control(ctl: &Ctl, h_client: u32, h_object: u32, cmd: u32, size: usize, data: bool) -> String {
    let mut p = vec![0u8; size];
    let r = ctl.control(h_client, h_object, cmd, &mut p);
    let mut s = os_or_rm(r);
    if data && r.is_ok() {
        s.push_str(&format!(" params {}", hex(&p)));
    }
    s
}

/// A control's params size in the release spoken (`default` where vgpu's
/// table has no row for it).
fn size_of(cmd: u32, default: usize) -> usize {
    nvclient::speaks().params_size(cmd).unwrap_or(default)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// SYSTEM_GET_BUILD_VERSION (the deprecated V1 form): RM writes the strings
/// through the caller's pointers (`rmapi_deprecated_control.c`).
fn build_version_v1(ctl: &Ctl, h: u32) -> String {
    const LEN: usize = 256;
    let (mut drv, mut ver, mut title) = ([0u8; LEN], [0u8; LEN], [0u8; LEN]);
    let mut p = [0u8; 40];
    p[0..4].copy_from_slice(&(LEN as u32).to_ne_bytes());
    p[8..16].copy_from_slice(&(drv.as_mut_ptr() as u64).to_ne_bytes());
    p[16..24].copy_from_slice(&(ver.as_mut_ptr() as u64).to_ne_bytes());
    p[24..32].copy_from_slice(&(title.as_mut_ptr() as u64).to_ne_bytes());
    let r = ctl.control(h, h, ctrl::NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION, &mut p);
    let cstr = |b: &[u8]| String::from_utf8_lossy(abi::c_str_bytes(b)).into_owned();
    let mut s = os_or_rm(r);
    if r.is_ok() {
        s.push_str(&format!(
            " driver {:?} version {:?} title {:?} changelists {}",
            cstr(&drv),
            cstr(&ver),
            cstr(&title),
            hex(&p[32..40])
        ));
    }
    s
}

/// Every call RM answers without a GPU, on the control node `path`, as
/// `release` speaks them. Leaves nothing allocated.
fn transcript(path: &str, release: &str) -> Result<Transcript, String> {
    let ctl = Ctl::open(path).map_err(|e| format!("open {path}: {e:?}"))?;
    let mut t: Transcript = Vec::new();
    let mut put = |call: &str, answer: String| t.push((call.to_string(), answer));

    for (what, cmd, v) in [
        (
            "CHECK_VERSION_STR strict, own release",
            VersionCheck::Strict,
            release,
        ),
        ("CHECK_VERSION_STR strict, 1.0", VersionCheck::Strict, "1.0"),
        ("CHECK_VERSION_STR query", VersionCheck::Query, ""),
    ] {
        let mut p = RmApiVersion::new(cmd.cmd(), v.as_bytes());
        let r = ctl.ioctl_with(Escape::CheckVersionStr.nr(), &mut p);
        put(
            what,
            format!(
                "{} reply {} version {:?}",
                os_or_rm(r),
                p.reply,
                String::from_utf8_lossy(p.version())
            ),
        );
    }
    let cards = ctl.card_info(8);
    put(
        "CARD_INFO, 8 records",
        match cards {
            Ok(c) => format!("ok, {} valid", c.len()),
            Err(e) => format!("{e:?}"),
        },
    );

    let mut clients = Vec::new();
    for (what, cls, h_root, h_new, v21) in [
        ("NV01_ROOT, NVOS64, RM picks", class::NV01_ROOT, 0, 0, false),
        ("NV01_ROOT, NVOS21, RM picks", class::NV01_ROOT, 0, 0, true),
        (
            "NV01_ROOT_NON_PRIV, NVOS64, RM picks",
            class::NV01_ROOT_NON_PRIV,
            0,
            0,
            false,
        ),
        (
            "NV01_ROOT_CLIENT, NVOS64, decoy in hObjectNew",
            class::NV01_ROOT_CLIENT,
            0,
            DECOY,
            false,
        ),
        (
            "NV01_ROOT_CLIENT, NVOS64, asked for in hRoot",
            class::NV01_ROOT_CLIENT,
            WANT,
            DECOY,
            false,
        ),
        (
            "NV01_ROOT, NVOS21, a handle in use",
            class::NV01_ROOT,
            WANT,
            0,
            true,
        ),
    ] {
        let (a, h) = alloc_root(&ctl, cls, h_root, h_new, v21);
        put(&format!("RM_ALLOC {what}"), a);
        if h != 0 {
            clients.push(h);
        }
    }
    let h = *clients.first().ok_or("no client was made")?;
    put(
        "CONTROL SYSTEM_GET_BUILD_VERSION",
        build_version_v1(&ctl, h),
    );
    put(
        "CONTROL SYSTEM_GET_BUILD_VERSION_V2",
        control(&ctl, h, h, 0x13e, 776, true),
    );
    put(
        "CONTROL GPU_GET_PROBED_IDS",
        control(
            &ctl,
            h,
            h,
            ctrl::NV0000_CTRL_CMD_GPU_GET_PROBED_IDS,
            256,
            true,
        ),
    );
    put(
        "CONTROL GPU_GET_ATTACHED_IDS",
        control(
            &ctl,
            h,
            h,
            ctrl::NV0000_CTRL_CMD_GPU_GET_ATTACHED_IDS,
            128,
            true,
        ),
    );
    // The answer describes the host's CPU, which the double does not
    // model: the status only.
    put(
        "CONTROL SYSTEM_GET_CPU_INFO (status)",
        control(&ctl, h, h, 0x102, size_of(0x102, 104), false),
    );
    put(
        "CONTROL 0x0000dead on the client",
        control(&ctl, h, h, 0xdead, 0, false),
    );
    put(
        "CONTROL GPU_GET_ATTACHED_IDS under a missing client",
        control(
            &ctl,
            0x1234,
            0x1234,
            ctrl::NV0000_CTRL_CMD_GPU_GET_ATTACHED_IDS,
            128,
            false,
        ),
    );
    for (what, dev) in [("0", 0u32), ("7", 7), ("40", 40)] {
        let mut p = abi::DeviceAllocParams {
            device_id: dev,
            ..Default::default()
        }
        .to_bytes();
        let r = ctl.alloc(h, h, 0, class::NV01_DEVICE_0, &mut p);
        if let Ok(d) = r {
            let _ = ctl.free(h, h, d);
        }
        put(
            &format!("RM_ALLOC NV01_DEVICE_0, device {what}"),
            os_or_rm(r.map(|_| ())),
        );
    }
    let r = ctl.alloc(0x1234, 0x1234, 0, class::NV01_DEVICE_0, &mut []);
    put(
        "RM_ALLOC NV01_DEVICE_0 under a missing client",
        os_or_rm(r.map(|_| ())),
    );
    let r = ctl.alloc(h, h, 0, 0xdead, &mut []);
    put("RM_ALLOC class 0xdead", os_or_rm(r.map(|_| ())));
    put(
        "RM_FREE of a missing object",
        os_or_rm(ctl.free(h, h, 0x0bad_0001)),
    );
    // OS events (`osapi.c:468-582`, `os.c:1440-1466` at 550.163.01): a
    // number as the key, one event per pair; NV01_EVENT_OS_EVENT under
    // the client (a notifier) names the pair in `data`.
    let event = |e: Escape, fd: u32| -> String {
        let mut p = abi::OsEvent {
            h_client: h,
            h_device: 0,
            fd,
            status: 0,
        };
        let r = ctl.ioctl_with(e.nr(), &mut p);
        format!("{} status {}", os_or_rm(r), status_text(p.status))
    };
    let os_event_object = |data: u32| -> String {
        let mut p: Vec<u8> = [0, 0, class::NV01_EVENT_OS_EVENT, 0, data, 0]
            .iter()
            .flat_map(|w| w.to_ne_bytes())
            .collect();
        match ctl.alloc(h, h, 0, class::NV01_EVENT_OS_EVENT, &mut p) {
            Ok(_) => "ok".to_string(),
            Err(e) => format!("{e:?}"),
        }
    };
    put("ALLOC_OS_EVENT 987", event(Escape::AllocOsEvent, 987));
    put("ALLOC_OS_EVENT 987 again", event(Escape::AllocOsEvent, 987));
    put(
        "RM_ALLOC NV01_EVENT_OS_EVENT on the pair",
        os_event_object(987),
    );
    put(
        "RM_ALLOC NV01_EVENT_OS_EVENT on no pair",
        os_event_object(988),
    );
    put("FREE_OS_EVENT 987", event(Escape::FreeOsEvent, 987));
    put("FREE_OS_EVENT 987 again", event(Escape::FreeOsEvent, 987));
    put(
        "RM_FREE under a missing client",
        os_or_rm(ctl.free(0x1234, 0x1234, 0x1234)),
    );
    for (k, c) in clients.iter().enumerate() {
        put(
            &format!("RM_FREE client {k}"),
            os_or_rm(ctl.free(*c, *c, *c)),
        );
    }
    put(
        "CONTROL GPU_GET_ATTACHED_IDS on a freed client",
        control(
            &ctl,
            h,
            h,
            ctrl::NV0000_CTRL_CMD_GPU_GET_ATTACHED_IDS,
            128,
            false,
        ),
    );
    Ok(t)
}

fn save(path: &str, t: &Transcript) -> Outcome {
    let text: String = t.iter().map(|(c, a)| format!("{c}\t{a}\n")).collect();
    std::fs::write(path, text).map_err(|e| format!("write {path}: {e}"))
}

fn load(path: &str) -> Result<Transcript, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("read {path}: {e}"))?;
    Ok(text
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(c, a)| (c.to_string(), a.to_string()))
        .collect())
}

/// Compares two transcripts call by call; every difference is named with
/// both answers.
fn compare(want_name: &str, want: &Transcript, got_name: &str, got: &Transcript) -> Outcome {
    let mut diffs = Vec::new();
    for (i, (call, a)) in want.iter().enumerate() {
        match got.get(i) {
            Some((c, b)) if c == call && a == b => {}
            Some((c, b)) if c == call => diffs.push(format!(
                "{call}:\n      {want_name}: {a}\n      {got_name}: {b}"
            )),
            other => diffs.push(format!("{call}: {got_name} made {other:?} instead")),
        }
    }
    if got.len() > want.len() {
        diffs.push(format!(
            "{got_name} made {} more calls",
            got.len() - want.len()
        ));
    }
    ensure!(
        diffs.is_empty(),
        "{} difference(s) of {} calls:\n  {}",
        diffs.len(),
        want.len(),
        diffs.join("\n  ")
    );
    Ok(())
}

fn print(who: &str, t: &Transcript) {
    for (c, a) in t {
        println!("# {who}: {c}: {a}");
    }
}

fn direct_answers() -> Outcome {
    let t = transcript("/dev/nvidiactl", &claimed_release())?;
    print("RM", &t);
    save(DIRECT, &t)?;
    // What the findings measured (shared/findings, 550.163.01 and 595.45.04).
    let get = |call: &str| {
        t.iter()
            .find(|(c, _)| c == call)
            .map(|(_, a)| a.as_str())
            .unwrap_or("")
    };
    ensure!(
        get("RM_ALLOC NV01_ROOT_CLIENT, NVOS64, asked for in hRoot").contains("handle 0x5eed0101"),
        "RM did not take hRoot: {}",
        get("RM_ALLOC NV01_ROOT_CLIENT, NVOS64, asked for in hRoot")
    );
    ensure!(
        get("RM_ALLOC NV01_DEVICE_0, device 0").contains("NV_ERR_INVALID_STATE")
            || get("RM_ALLOC NV01_DEVICE_0, device 0").contains("NV_ERR_INVALID_CLASS"),
        "NV01_DEVICE_0 with no GPU: {}",
        get("RM_ALLOC NV01_DEVICE_0, device 0")
    );
    Ok(())
}

fn vgpu_loads_on_it() -> Outcome {
    sh("dmesg -c > /dev/null")?;
    sh("insmod /lib/modules/$(uname -r)/extra/vgpu.ko")?;
    let log = sh("dmesg")?;
    let rel = claimed_release();
    ensure!(
        log.contains(&format!("NVIDIA driver {rel}: using vgpu's tables for it")),
        "vgpu's load log: {log}"
    );
    ensure!(
        log.contains("0 GPU node(s) found"),
        "vgpu found GPUs on a driver with none: {log}"
    );
    let v = sh("cat /sys/class/vgpu/driver_version")?;
    ensure!(v.trim() == rel, "driver_version {v:?}");
    // A vGPU for the container; with no GPU it cannot be placed on one.
    sh("mkdir -p /sys/fs/cgroup/realctr")?;
    sh("echo 0 > /sys/class/vgpu/create")?;
    let r = sh("echo 0 > /sys/class/vgpu/vgpu0/gpu");
    ensure!(
        r.is_err(),
        "a vGPU placed on a GPU the driver does not have"
    );
    sh(&format!("echo {CG} > /sys/class/vgpu/vgpu0/cgroup"))?;
    Ok(())
}

fn through_vgpu_answers_as_directly() -> Outcome {
    let rel = claimed_release();
    as_container(CG, || {
        let t = transcript("/dev/vgpuctl", &rel)?;
        save(VIA_VGPU, &t)
    })?;
    let (direct, via) = (load(DIRECT)?, load(VIA_VGPU)?);
    print("vgpu", &via);
    // vgpu refuses, with its own status, what it keeps from containers;
    // everything else is RM's answer. The refusals, each argued in
    // docs/dispatch-table.md:
    let refused: &[(&str, &str)] = &[
        // A device under a client this file did not make: vgpu answers
        // NV_ERR_INVALID_CLIENT for a missing client and another
        // container's alike, so a container cannot tell the two apart.
        (
            "RM_ALLOC NV01_DEVICE_0 under a missing client",
            "NV_ERR_INVALID_CLIENT",
        ),
        // A class the table does not admit.
        ("RM_ALLOC class 0xdead", "NV_ERR_INVALID_CLASS"),
        // A control the table does not admit.
        ("CONTROL 0x0000dead on the client", "NV_ERR_NOT_SUPPORTED"),
    ];
    let expected: Transcript = direct
        .iter()
        .map(|(c, a)| {
            let a = refused
                .iter()
                .find(|(rc, _)| rc == c)
                .map_or(a.clone(), |(_, s)| s.to_string());
            (c.clone(), a)
        })
        .collect();
    compare(
        "RM directly (vgpu's refusals in)",
        &expected,
        "through vgpu",
        &via,
    )
}

/// What NVIDIA's nvidia-uvm answers with no GPU, on a UVM node `path`: a
/// VA space and what needs no GPU in it. Leaves nothing open.
fn uvm_transcript(path: &str) -> Result<Transcript, String> {
    let mut t: Transcript = Vec::new();
    let uvm = Uvm::open(path).map_err(|e| format!("open {path}: {e:?}"))?;
    t.push(("UVM_INITIALIZE".into(), os_or_rm(uvm.initialize(0))));
    t.push(("UVM_INITIALIZE again".into(), os_or_rm(uvm.initialize(0))));
    t.push((
        "UVM_PAGEABLE_MEM_ACCESS".into(),
        match uvm.pageable_mem_access() {
            Ok(v) => format!("ok {v}"),
            Err(e) => os_or_rm(Err(e)),
        },
    ));
    let mm = Uvm::open(path).map_err(|e| format!("open {path}: {e:?}"))?;
    t.push((
        "UVM_MM_INITIALIZE for the VA space's file".into(),
        os_or_rm(mm.mm_initialize(uvm.fd())),
    ));
    let group = uvm.create_range_group();
    t.push(("UVM_CREATE_RANGE_GROUP".into(), os_or_rm(group.map(|_| ()))));
    if let Ok(id) = group {
        t.push((
            "UVM_DESTROY_RANGE_GROUP".into(),
            os_or_rm(uvm.destroy_range_group(id)),
        ));
        t.push((
            "UVM_DESTROY_RANGE_GROUP again".into(),
            os_or_rm(uvm.destroy_range_group(id)),
        ));
    }
    t.push((
        "UVM_REGISTER_GPU of a GPU nobody has".into(),
        os_or_rm(uvm.register_gpu(&[0x5a; 16], -1, 0).map(|_| ())),
    ));
    t.push(("UVM_DEINITIALIZE".into(), os_or_rm(uvm.deinitialize())));
    Ok(t)
}

fn uvm_through_vgpu_answers_as_directly() -> Outcome {
    let direct = uvm_transcript("/dev/nvidia-uvm")?;
    print("nvidia-uvm", &direct);
    save(UVM_DIRECT, &direct)?;
    as_container(CG, || {
        let t = uvm_transcript("/dev/vgpu-uvm")?;
        save(UVM_VIA_VGPU, &t)
    })?;
    let via = load(UVM_VIA_VGPU)?;
    print("vgpu-uvm", &via);
    // vgpu's refusal, argued in docs/design-notes.md ("UVM"): a GPU is
    // registered only with the caller's /dev/vgpuN, which this container
    // cannot have (no GPU).
    let expected: Transcript = direct
        .into_iter()
        .map(|(c, a)| {
            if c == "UVM_REGISTER_GPU of a GPU nobody has" {
                (c, "REFUSED".into())
            } else {
                (c, a)
            }
        })
        .collect();
    let via: Transcript = via
        .into_iter()
        .map(|(c, a)| {
            if c == "UVM_REGISTER_GPU of a GPU nobody has" && a != "ok" {
                (c, "REFUSED".into())
            } else {
                (c, a)
            }
        })
        .collect();
    compare("nvidia-uvm directly", &expected, "through vgpu", &via)
}

fn client_then_device_reaches_rm() -> Outcome {
    as_container(CG, || {
        let ctl = Ctl::open("/dev/vgpuctl").map_err(|e| format!("{e:?}"))?;
        for v21 in [false, true] {
            let (a, h) = alloc_root(&ctl, class::NV01_ROOT_CLIENT, 0, 0, v21);
            ensure!(h != 0, "client (v21 {v21}): {a}");
            ensure!(
                h & 0xfff0_0000 == 0xc1e0_0000,
                "client {h:#x} (v21 {v21}) is not vgpu's pick"
            );
            // Recorded as this file's: the device goes on to RM, which
            // has no GPU (vgpu asks it with its own client: the answer is
            // RM's status, and the container holds nothing).
            let r = ctl.alloc_device(h, 0, 0);
            ensure!(
                r == Err(Error::Rm(status::NV_ERR_INVALID_STATE)),
                "NV01_DEVICE_0 under vgpu's client {h:#x}: {r:?}, want RM's NV_ERR_INVALID_STATE"
            );
            ctl.free(h, h, h)
                .map_err(|e| format!("free {h:#x}: {e:?}"))?;
        }
        // A client the caller names in hRoot is the caller's too.
        let (a, h) = alloc_root(&ctl, class::NV01_ROOT, WANT, DECOY, false);
        ensure!(h == WANT, "asked {WANT:#x} in hRoot: {a}");
        let r = ctl.alloc_device(h, 0, 0);
        ensure!(
            r == Err(Error::Rm(status::NV_ERR_INVALID_STATE)),
            "NV01_DEVICE_0 under {h:#x}: {r:?}"
        );
        ctl.free(h, h, h).map_err(|e| format!("free: {e:?}"))
    })
}

/// The NVRM lines of the kernel log.
fn nvrm_lines() -> Result<Vec<String>, String> {
    Ok(sh("dmesg")?
        .lines()
        .filter(|l| l.contains("NVRM"))
        .map(|l| {
            // Without the timestamp, and with client handles named alike:
            // RM picks them directly, vgpu through it (0xC1D..., 0xC1E...),
            // and RM logs them (FREE_OS_EVENT of a freed pair).
            l.split_once("] ")
                .map_or(l, |(_, r)| r)
                .split(' ')
                .map(|w| {
                    if w.len() == 10 && (w.starts_with("0xc1d") || w.starts_with("0xc1e")) {
                        "CLIENT"
                    } else {
                        w
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect())
}

fn no_rm_errors_caused_by_vgpu() -> Outcome {
    // The same calls, directly and through vgpu, log the same NVRM lines:
    // vgpu adds none of its own (it probed client handles before, and
    // each probe of a missing one made RM log an error).
    let rel = claimed_release();
    sh("dmesg -c > /dev/null")?;
    transcript("/dev/nvidiactl", &rel)?;
    let direct = nvrm_lines()?;
    sh("dmesg -c > /dev/null")?;
    as_container(CG, || transcript("/dev/vgpuctl", &rel).map(|_| ()))?;
    let via = nvrm_lines()?;
    for l in &direct {
        println!("# NVRM directly: {l}");
    }
    let extra: Vec<&String> = via.iter().filter(|l| !direct.contains(l)).collect();
    ensure!(
        extra.is_empty() && via.len() <= direct.len(),
        "vgpu made RM log {} line(s) more ({} directly): {extra:?}",
        via.len().saturating_sub(direct.len()),
        direct.len()
    );
    Ok(())
}

fn nvidia_userspace_directly() -> Outcome {
    let rel = claimed_release();
    let smi = format!("/bin/nvidia-smi-{rel}");
    ensure!(exists(&smi), "{smi} missing from the initramfs");
    let out = sh(&format!("{smi} 2>&1; echo rc=$?"))?;
    println!("# nvidia-smi: {}", out.trim().replace('\n', " | "));
    ensure!(
        out.contains("No supported GPUs were found"),
        "nvidia-smi on the real driver: {out}"
    );
    let cu = sh(&format!("/bin/cuprobe-{rel} 2>&1; echo rc=$?"))?;
    println!("# cuprobe: {}", cu.trim().replace('\n', " | "));
    // With no GPU, libcuda's start-up ends at the confidential-compute
    // capabilities control, which RM refuses (NV_ERR_INVALID_LOCK_STATE:
    // it takes no GPU lock with no GPU): CUDA_ERROR_UNKNOWN.
    ensure!(cu.contains("cuInit=999"), "cuprobe: {cu}");
    Ok(())
}

/// A line of nvtrace's log reduced to what must agree between two runs:
/// the node, the call and its answer, without PIDs and handles (which RM
/// and vgpu pick differently).
fn trace_call(line: &str) -> Option<String> {
    const KEEP: [&str; 12] = [
        "nr",
        "size",
        "ret",
        "errno",
        "nvos",
        "hClass",
        "cmd",
        "paramsSize",
        "status",
        "in.hClass",
        "reply",
        "valid",
    ];
    let mut it = line.split_whitespace();
    if it.next() != Some("nvtrace") {
        return None;
    }
    let mut out = Vec::new();
    for tok in it {
        match tok.split_once('=') {
            Some((k, _)) if KEEP.contains(&k) => out.push(tok),
            Some(_) => {}
            None => out.push(tok),
        }
    }
    Some(out.join(" "))
}

/// Runs NVIDIA's program `cmd` under nvtrace, in `cg` (None: the host);
/// returns its output and its calls.
fn traced(cmd: &str, cg: Option<&str>) -> Result<(String, Vec<String>), String> {
    let log = format!(
        "/tmp/nvtrace-{}",
        cg.map_or("host", |c| c.trim_start_matches('/'))
    );
    let _ = std::fs::remove_file(&log);
    let line = format!("NVTRACE_LOG={log} LD_PRELOAD=/bin/nvtrace.so {cmd} 2>&1; echo rc=$?");
    let out = match cg {
        None => sh(&line)?,
        Some(cg) => {
            // The child's output comes back through a file.
            let saved = format!("{log}.out");
            let to = saved.clone();
            as_container(cg, move || {
                let r = sh(&line)?;
                std::fs::write(&to, r).map_err(|e| e.to_string())
            })?;
            std::fs::read_to_string(&saved).map_err(|e| e.to_string())?
        }
    };
    let calls = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .filter_map(trace_call)
        .collect();
    Ok((out, calls))
}

fn nvidia_userspace_through_vgpu() -> Outcome {
    // NVIDIA's programs in a container bound to a vGPU open the driver's
    // own nodes (195:255, the UVM major), which are vgpu's for them: they
    // get past the check that refused vgpu's own numbers ("GPU access
    // blocked by the operating system", cuInit 304), and every call and
    // answer is the one they get directly.
    let rel = claimed_release();
    let mut diffs = Vec::new();
    for (prog, want) in [
        (
            format!("/bin/nvidia-smi-{rel}"),
            "No supported GPUs were found",
        ),
        (format!("/bin/cuprobe-{rel}"), "cuInit=999"),
    ] {
        let (d_out, d_calls) = traced(&prog, None)?;
        let (v_out, v_calls) = traced(&prog, Some(CG))?;
        println!(
            "# {prog} through vgpu: {}",
            v_out.trim().replace('\n', " | ")
        );
        ensure!(
            d_out.contains(want) && v_out.contains(want),
            "{prog}: directly {d_out:?}, through vgpu {v_out:?}, want {want:?}"
        );
        ensure!(!d_calls.is_empty(), "{prog}: no call traced");
        println!(
            "# {prog}: {} calls directly, {} through vgpu",
            d_calls.len(),
            v_calls.len()
        );
        for (i, c) in d_calls.iter().enumerate() {
            match v_calls.get(i) {
                Some(v) if v == c => {}
                other => diffs.push(format!(
                    "{prog} call {i}: directly {c:?}, through vgpu {other:?}"
                )),
            }
        }
        if v_calls.len() > d_calls.len() {
            diffs.push(format!(
                "{prog}: {} more calls through vgpu",
                v_calls.len() - d_calls.len()
            ));
        }
    }
    ensure!(diffs.is_empty(), "{}", diffs.join("\n"));
    Ok(())
}

fn unload_paths() -> Outcome {
    // The driver is pinned while vgpu is loaded.
    ensure!(
        sh("rmmod nvidia").is_err() && module_loaded("nvidia"),
        "nvidia unloaded under vgpu"
    );
    // vgpu refuses to unload while one of its nodes is open.
    let held = Ctl::open("/dev/vgpuctl").map_err(|e| format!("{e:?}"))?;
    ensure!(
        sh("rmmod vgpu").is_err() && module_loaded("vgpu"),
        "vgpu unloaded with /dev/vgpuctl open"
    );
    drop(held);
    // nvidia-uvm, whose symbols vgpu does not use, is pinned by vgpu's
    // hook on its device (vgpu gives the cdev its operations back at
    // unload).
    ensure!(
        sh("rmmod nvidia_uvm").is_err() && module_loaded("nvidia_uvm"),
        "nvidia_uvm unloaded under vgpu's hook on its device"
    );
    sh("echo > /sys/class/vgpu/vgpu0/cgroup; echo 0 > /sys/class/vgpu/remove")?;
    sh("rmmod vgpu")?;
    // It loads and unloads again (its whole load path on the real driver).
    sh("insmod /lib/modules/$(uname -r)/extra/vgpu.ko")?;
    sh("rmmod vgpu")?;
    sh("rmmod nvidia_uvm")?;
    // The node an nvidia-uvm that is gone left behind is no UVM: vgpu
    // loads without one. nvidia-uvm's load after vgpu's is refused (vgpu
    // could not take over its device), and named in the log; once vgpu is
    // gone it loads.
    sh("insmod /lib/modules/$(uname -r)/extra/vgpu.ko")?;
    let uvm = real_module("nvidia-uvm")?;
    load_refused(
        &format!("insmod {uvm}"),
        "nvidia_uvm",
        "refusing to load nvidia_uvm after vgpu",
    )?;
    sh("rmmod vgpu")?;
    sh(&format!("insmod {uvm}"))?;
    // nvidia-uvm loaded without its node: vgpu refuses to load (the node
    // made later would reach nvidia-uvm past it), and says what to do.
    sh("rm -f /dev/nvidia-uvm /dev/nvidia-uvm-tools")?;
    load_refused(
        "insmod /lib/modules/$(uname -r)/extra/vgpu.ko",
        "vgpu",
        "nvidia_uvm is loaded but",
    )?;
    make_uvm_nodes()?;
    sh("rmmod nvidia_uvm")?;
    sh("rmmod nvidia")?;
    ensure!(!module_loaded("nvidia"), "nvidia still loaded");
    Ok(())
}

/// `cmd` (an insmod) fails, `module` is not loaded, and the kernel log's
/// last lines say `why`.
fn load_refused(cmd: &str, module: &str, why: &str) -> Outcome {
    let r = sh(cmd);
    ensure!(
        r.is_err() && !module_loaded(module),
        "{module} loaded by `{cmd}`: {r:?}"
    );
    let log = sh("dmesg | tail -n 20")?;
    ensure!(
        log.contains(why),
        "no log line {why:?} for the refused {module}: {log}"
    );
    Ok(())
}

fn double_answers_as_rm() -> Outcome {
    // The double, claiming the same release, with no GPU: what the real
    // driver is here. Loaded with its release by index, as sys does.
    let rel = claimed_release();
    let idx = crate::sys::DOUBLE_RELEASES
        .iter()
        .position(|r| *r == rel)
        .ok_or(format!("the double cannot claim {rel}"))?;
    sh("rmmod fakenvswitch")?;
    // The real nvidia-uvm tracks a VA space's mm where the kernel has MMU
    // notifiers (Debian's; the project's kernels have none), and, with no
    // GPU to clear nv_ats_supported, enables ATS where the kernel also has
    // IOMMU SVA (Debian's): pageable memory access whatever DISABLE_HMM.
    let has = |sym: &str| -> Result<bool, String> {
        let n = sh(&format!("grep -c ' {sym}$' /proc/kallsyms || true"))?;
        Ok(n.trim() != "0")
    };
    let uvm_mm = has("__mmu_notifier_register")?;
    let uvm_ats = uvm_mm && has("iommu_sva_bind_device")?;
    crate::sys::insmod_double(&format!(
        "gpus=0 release={idx} uvm_mm={} uvm_ats={}",
        u8::from(uvm_mm),
        u8::from(uvm_ats)
    ))?;
    let t = transcript("/dev/nvidiactl", &rel);
    let u = make_uvm_nodes().and_then(|_| uvm_transcript("/dev/nvidia-uvm"));
    sh("rmmod nvidia")?;
    let (t, u) = (t?, u?);
    print("double", &t);
    print("double's UVM", &u);
    let ctl = compare("RM", &load(DIRECT)?, "the double", &t);
    let uvm = compare("nvidia-uvm", &load(UVM_DIRECT)?, "the double's UVM", &u);
    match (ctl, uvm) {
        (Ok(()), Ok(())) => Ok(()),
        (a, b) => Err(format!(
            "{}{}",
            a.err().unwrap_or_default(),
            b.err().map(|e| format!("\nUVM: {e}")).unwrap_or_default()
        )),
    }
}
