// SPDX-License-Identifier: GPL-2.0

//! Recorded call sequences of NVIDIA's own userspace (`selftests/traces/`,
//! docs/testing.md, "Traces"): [`normalize`] turns nvtrace's log of a
//! program's run into a trace, one call a line, with nothing of the run
//! in it (handles, fds and PIDs become names, pointers a mark); the
//! `traces` suite replays every recorded trace against the driver double
//! and through vgpu, without NVIDIA's binaries, and compares each call's
//! errno and RM status with the recorded ones.
//!
//! A trace line: `NODE ESCAPE FIELD... errno=E [status=0xS | status@OFF=0xS]`.
//!
//! - NODE: `ctl#K`, `gpuM#K` or `uvm#K`: the K-th file the program opened
//!   on the control node, GPU node of minor M or UVM node.
//! - ESCAPE: the RM escape (`ALLOC`, `CONTROL`, `FREE`, `CARD_INFO`, ...,
//!   `XFER>INNER` when it travelled inside IOCTL_XFER_CMD) or the UVM
//!   command (`INITIALIZE`, ...).
//! - ALLOC: `nvos=21|64 client=H parent=H new=H|auto:H class=0xC size=N
//!   pparams=0|1` (whether the params pointer was set), and for NVOS64
//!   `flags=0xF rights=0|1`, and `read=N` where the size is 0 and the
//!   pointer set (`peek=` in nvtrace's line): RM read N bytes, the
//!   class's params size in the release, which `in=` holds; CONTROL: `client=H object=H cmd=0xC flags=0xF
//!   size=N pparams=0|1`; FREE:
//!   `client=H parent=H object=H`; any other: `nr=0xN size=N`, the block
//!   itself being the input.
//! - H: `0`, `hN` (the N-th handle the program allocated; `auto:` where RM
//!   chose it) or a raw `0x...` RM never gave out in this run.
//! - `in=OFF:HEX[,OFF:HEX]` or `in=-`: the bytes the driver was given
//!   (params of ALLOC and CONTROL, the block of the others), as runs of
//!   non-zero 32-bit words, with the run-dependent words zeroed and named
//!   after it: `h@OFF=hN` (a handle), `fd@OFF=NODE` (an fd of that file),
//!   `pid@OFF` (a PID of the run: the replayer's own goes there),
//!   `ptr@OFF` (a user pointer: the replayer's zeroed scratch area);
//!   in a UVM command `va@OFF=vN` (the address of UVM range `vN`, which
//!   the replayer places at first use: see `Replay::uvm_ranges`).
//! - `errno=` what ioctl() left (0 when it returned 0); `status=` RM's
//!   status in the ALLOC, CONTROL or FREE block; `status@OFF=` the status
//!   word of a UVM block at that offset.
//!
//! Lines starting `#` are comments; `@gpus N` (the double's GPUs), `@hold
//! MIB` (the replayer holds that much VRAM in a compute session, as the
//! recorded run's holder did), `@vgpu MIB` (replayed through a vGPU of
//! that size) set the replay up.

use crate::ensure;
use crate::sys::{insmod_double, join_cgroup, make_uvm_nodes, remove_uvm_nodes, sh, write_file};
use crate::tap::{Outcome, Test};
use crate::tests;
use nvclient::abi::{Nvos00, Nvos21, Nvos54, Nvos64, Wire};
use nvclient::uvm::Reservation;
use nvclient::Node;
use std::collections::HashMap;

/// Tests of the `traces` suite.
pub const TESTS: &[Test] = tests![replay_directly, replay_through_vgpu];

/// Where the initramfs has `selftests/traces/` (scripts/initramfs.sh).
const TRACES: &str = "/usr/share/vgpu/traces";

/// Escapes whose block has an fd at this offset (the layouts of
/// src/nv/abi and src/nv/uvm.rs): it becomes `fd@OFF=NODE`.
const FD_WORDS: &[(&str, usize)] = &[
    ("REGISTER_FD", 0),
    ("MM_INITIALIZE", 0),
    ("ALLOC_OS_EVENT", 8),
    ("FREE_OS_EVENT", 8),
    ("ALLOC_MEMORY", 48),
    ("MAP_MEMORY", 48),
    // UVM's `rmCtrlFd` (src/nv/uvm.rs).
    ("REGISTER_GPU", 24),
    ("REGISTER_GPU_VASPACE", 16),
    ("REGISTER_CHANNEL", 16),
];

/// The offset of MAP_EXTERNAL_ALLOCATION's `rmCtrlFd` in `release`: after
/// its array of 32 GPUs' attributes at 535, of 256 later
/// (src/nv/uvm/r535.rs, src/nv/uvm.rs).
fn map_external_fd(release: &str) -> usize {
    if release.starts_with("535.") {
        1184
    } else {
        9248
    }
}

/// Classes whose alloc params hold a number RM matches against an fd
/// given earlier: NV01_EVENT_OS_EVENT's `data` names the ALLOC_OS_EVENT
/// of that fd (`os.c:1440-1466` at 550.163.01); it becomes `fd@OFF=NODE`.
const CLASS_FD_WORDS: &[(&str, usize)] = &[("0x0079", 16)];

/// Whether `w` is a GPU id of the double's (`(index + 1) << 8` for its up
/// to 8 GPUs, `selftests/nvidia/base.rs`): a run's PID of that value
/// (256, 512, ...) is left as the GPU id it more likely is, so that a
/// trace does not depend on which PIDs the run happened to get.
fn is_gpu_id(w: u32) -> bool {
    w & 0xff == 0 && (1..=8).contains(&(w >> 8))
}

/// The value of `key=` among `toks`.
fn val<'a>(toks: &[&'a str], key: &str) -> Option<&'a str> {
    toks.iter()
        .find_map(|t| t.strip_prefix(key)?.strip_prefix('='))
}

fn hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s.strip_prefix("0x").unwrap_or(s), 16).ok()
}

/// Decodes a sparse `in=` value into `size` bytes.
fn unsparse(v: &str, size: usize) -> Result<Vec<u8>, String> {
    let mut b = vec![0u8; size];
    if v == "-" {
        return Ok(b);
    }
    for run in v.split(',') {
        let (off, h) = run.split_once(':').ok_or(format!("bad run {run}"))?;
        let off: usize = off.parse().map_err(|_| format!("bad offset {run}"))?;
        ensure!(
            h.len() % 2 == 0 && off + h.len() / 2 <= size,
            "run {run} outside {size} bytes"
        );
        for i in 0..h.len() / 2 {
            b[off + i] = u8::from_str_radix(&h[2 * i..2 * i + 2], 16)
                .map_err(|_| format!("bad hex {run}"))?;
        }
    }
    Ok(b)
}

/// Encodes bytes sparse, as nvtrace does.
fn sparse(b: &[u8]) -> String {
    let mut out = String::new();
    let mut prev_nz = false;
    for (w, chunk) in b.chunks(4).enumerate() {
        let nz = chunk.iter().any(|&x| x != 0);
        if nz {
            if !prev_nz {
                if !out.is_empty() {
                    out.push(',');
                }
                out.push_str(&format!("{}:", w * 4));
            }
            for x in chunk {
                out.push_str(&format!("{x:02x}"));
            }
        }
        prev_nz = nz;
    }
    if out.is_empty() {
        "-".into()
    } else {
        out
    }
}

fn word(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(off..off + 4)?.try_into().ok()?))
}

/// What [`normalize`] keeps across a program's lines.
#[derive(Default)]
struct Names {
    /// Handle value -> `hN`, and how many names were given.
    handles: HashMap<u32, String>,
    named: usize,
    /// (path, fd) -> `ctlK`..., and the count per kind.
    nodes: HashMap<(String, i64), String>,
    kinds: HashMap<String, usize>,
    /// fd -> node name (the latest file on that fd).
    fds: HashMap<i64, String>,
    /// Managed range address -> `vN`.
    vas: HashMap<u64, String>,
}

impl Names {
    fn node(&mut self, path: &str, fd: i64) -> String {
        if let Some(n) = self.nodes.get(&(path.to_string(), fd)) {
            return n.clone();
        }
        let dev = path.rsplit('/').next().unwrap_or(path);
        let kind = if dev.ends_with("ctl") {
            "ctl".to_string()
        } else if dev.contains("-uvm") {
            "uvm".to_string()
        } else {
            let minor = dev.trim_start_matches(|c: char| !c.is_ascii_digit());
            format!("gpu{minor}")
        };
        let k = self.kinds.entry(kind.clone()).or_default();
        *k += 1;
        let name = format!("{kind}#{k}");
        self.nodes.insert((path.to_string(), fd), name.clone());
        self.fds.insert(fd, name.clone());
        name
    }

    fn handle(&self, v: u32) -> String {
        if v == 0 {
            "0".into()
        } else {
            self.handles
                .get(&v)
                .cloned()
                .unwrap_or(format!("0x{v:08x}"))
        }
    }
}

/// The trace of one program's run from nvtrace's log `text` (recorded
/// with NVTRACE_PARAMS=1); `pids` are PIDs of the run (besides the
/// program's own) that may appear in params.
pub fn normalize(text: &str, pids: &[u32], release: &str) -> Result<Vec<String>, String> {
    let mut n = Names::default();
    let mut out = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let toks: Vec<&str> = l.split_whitespace().collect();
        if toks.first() != Some(&"nvtrace") || toks.len() < 4 {
            continue;
        }
        let bad = || format!("nvtrace line {}: {l}", i + 1);
        let mut run_pids: Vec<u32> = pids.to_vec();
        run_pids.extend(val(&toks, "pid").and_then(|p| p.parse::<u32>().ok()));
        let fd: i64 = val(&toks, "nodefd")
            .and_then(|v| v.parse().ok())
            .ok_or_else(bad)?;
        let node = n.node(toks[2], fd);
        let name = toks[3];
        let inner = name.rsplit('>').next().unwrap_or(name);
        // UVM has a FREE of its own: RM's kinds below are RM's nodes'.
        let rm_kind = if node.starts_with("uvm") { "" } else { inner };
        let size: usize = match val(&toks, "inner_size").or(val(&toks, "size")) {
            Some(s) => s.parse().map_err(|_| bad())?,
            None => return Err(bad()),
        };
        let errno = val(&toks, "errno").ok_or_else(bad)?;
        let status = val(&toks, "status");
        let mut f = vec![node.clone(), name.to_string()];
        // A handle field of the line, as a number.
        let get = |k| {
            val(&toks, k)
                .and_then(hex)
                .map(|v| v as u32)
                .ok_or_else(bad)
        };
        // The size of the input bytes, and the fields before them.
        let in_size = match rm_kind {
            "ALLOC" => {
                let nvos = val(&toks, "nvos").ok_or_else(bad)?;
                // The client as given: RM may write the new client's
                // handle into hRoot of an NV01_ROOT alloc.
                let (root, parent, new, innew) = (
                    get("in.hRoot").or_else(|_| get("hRoot"))?,
                    get("hParent")?,
                    get("hObjectNew")?,
                    get("in.hObjectNew")?,
                );
                let psize: usize = val(&toks, "paramsSize")
                    .and_then(|v| v.parse().ok())
                    .ok_or_else(bad)?;
                let (c, p) = (n.handle(root), n.handle(parent));
                n.named += 1;
                let sym = format!("h{}", n.named);
                if status == Some("0x0") && new != 0 {
                    n.handles.insert(new, sym.clone());
                }
                let newf = if innew == 0 {
                    format!("auto:{sym}")
                } else {
                    sym
                };
                f.push(format!(
                    "nvos={nvos} client={c} parent={p} new={newf} class={} size={psize} pparams={}",
                    val(&toks, "hClass").ok_or_else(bad)?,
                    val(&toks, "pParams").unwrap_or("1")
                ));
                if nvos == "64" {
                    f.push(format!(
                        "flags={} rights={}",
                        val(&toks, "flags").unwrap_or("0x0"),
                        val(&toks, "pRights").unwrap_or("0")
                    ));
                }
                // Size 0 with a pointer: RM reads the class's own size,
                // which nvtrace peeked at.
                match (psize, val(&toks, "peek")) {
                    (0, Some(_)) => {
                        let class = get("hClass")?;
                        let read = class_size(release, class);
                        if let Some(r) = read {
                            f.push(format!("read={r}"));
                        }
                        read
                    }
                    _ => Some(psize),
                }
            }
            "CONTROL" => {
                let psize: usize = val(&toks, "paramsSize")
                    .and_then(|v| v.parse().ok())
                    .ok_or_else(bad)?;
                f.push(format!(
                    "client={} object={} cmd={} flags={} size={psize} pparams={}",
                    n.handle(get("hClient")?),
                    n.handle(get("hObject")?),
                    val(&toks, "cmd").ok_or_else(bad)?,
                    val(&toks, "flags").ok_or_else(bad)?,
                    val(&toks, "pParams").unwrap_or("1")
                ));
                Some(psize)
            }
            "FREE" => {
                f.push(format!(
                    "client={} parent={} object={}",
                    n.handle(get("hRoot")?),
                    n.handle(get("hParent")?),
                    n.handle(get("hObjectOld")?)
                ));
                None
            }
            _ => {
                let nr = val(&toks, "inner").or(val(&toks, "nr")).ok_or_else(bad)?;
                f.push(format!("nr={nr} size={size}"));
                Some(size)
            }
        };
        let mut subs = Vec::new();
        if let (Some(sz), Some(v)) = (in_size, val(&toks, "in")) {
            ensure!(v != "?", "{}: its input did not fit nvtrace's line", bad());
            let peeked: Option<usize> = val(&toks, "peek").and_then(|p| p.parse().ok());
            let mut b = unsparse(v, peeked.unwrap_or(sz))?;
            b.resize(sz, 0);
            // fds, by the escape's layout (and an ALLOC's class's).
            let class = val(&toks, "hClass").filter(|_| rm_kind == "ALLOC");
            let class_fds = CLASS_FD_WORDS.iter().filter(|(c, _)| Some(*c) == class);
            let uvm_fds = [("MAP_EXTERNAL_ALLOCATION", map_external_fd(release))];
            let uvm_fds = uvm_fds.iter().filter(|_| rm_kind.is_empty());
            for (_, off) in FD_WORDS
                .iter()
                .chain(uvm_fds)
                .filter(|(e, _)| *e == inner)
                .chain(class_fds)
            {
                if let Some(fdv) = word(&b, *off) {
                    if let Some(name) = n.fds.get(&i64::from(fdv as i32)) {
                        subs.push(format!("fd@{off}={name}"));
                        b[*off..*off + 4].fill(0);
                    }
                }
            }
            // User pointers: 8-byte aligned words in the heap's and mmap's
            // ranges (0x50.. to 0x7f.. in bits 40-47).
            // In a UVM command they are managed ranges' addresses: each
            // distinct one becomes `va@OFF=vN`, which the replay maps.
            for off in (0..b.len().saturating_sub(7)).step_by(8) {
                let v = u64::from_le_bytes(b[off..off + 8].try_into().unwrap_or_default());
                if (0x50..=0x7f).contains(&(v >> 40)) {
                    if rm_kind.is_empty() {
                        let k = n.vas.len() + 1;
                        let sym = n.vas.entry(v).or_insert_with(|| format!("v{k}"));
                        subs.push(format!("va@{off}={sym}"));
                    } else {
                        subs.push(format!("ptr@{off}"));
                    }
                    b[off..off + 8].fill(0);
                }
            }
            for off in (0..b.len().saturating_sub(3)).step_by(4) {
                let Some(w) = word(&b, off) else { continue };
                if w >= 0x10000 && n.handles.contains_key(&w) {
                    subs.push(format!("h@{off}={}", n.handles[&w]));
                    b[off..off + 4].fill(0);
                } else if w >= 64 && run_pids.contains(&w) && !is_gpu_id(w) {
                    subs.push(format!("pid@{off}"));
                    b[off..off + 4].fill(0);
                }
            }
            f.push(format!("in={}", sparse(&b)));
        }
        f.extend(subs);
        f.push(format!("errno={errno}"));
        if let Some(s) = status {
            match (rm_kind, val(&toks, "status_off")) {
                ("ALLOC" | "CONTROL" | "FREE", _) => f.push(format!("status={s}")),
                (_, Some(off)) => f.push(format!("status@{off}={s}")),
                _ => {}
            }
        }
        out.push(f.join(" "));
    }
    Ok(out)
}

/// The params size of class `class` in `release` (its row of vgpu's
/// tables for it), which RM reads where an NVOS64 alloc gives size 0.
fn class_size(release: &str, class: u32) -> Option<usize> {
    use vgpu_logic::nv::release::{find, RELEASES};
    let r = RELEASES.get(find(release.as_bytes())?)?;
    r.class_row(class).map(|c| c.params_size as usize)
}

/// The files a replay opens for each node kind.
pub struct Paths {
    /// The control node.
    pub ctl: &'static str,
    /// The GPU node of a minor.
    pub gpu: fn(u32) -> String,
    /// The UVM node.
    pub uvm: &'static str,
}

/// The driver's own nodes.
pub const DIRECT: Paths = Paths {
    ctl: "/dev/nvidiactl",
    gpu: |m| format!("/dev/nvidia{m}"),
    uvm: "/dev/nvidia-uvm",
};

/// vgpu's, as a container bound to vGPU 0 sees them (the CDI spec binds
/// them over the driver's).
pub const VGPU: Paths = Paths {
    ctl: "/dev/vgpuctl",
    gpu: |_| "/dev/vgpu0".to_string(),
    uvm: "/dev/vgpu-uvm",
};

/// A replay's state: its files, its handles for the trace's names.
/// The replay's scratch area, where every `ptr@` points: as large as the
/// largest memory libcuda describes with a user pointer (its 2 MiB
/// system-memory descriptors, ALLOC_MEMORY of NV01_MEMORY_SYSTEM_OS_DESCRIPTOR,
/// which RM pins), and its first [`SCRATCH_ZEROED`] bytes zeroed before each
/// call.
const SCRATCH: usize = 2 << 20;
/// What an output of one call (strings, tables) can reach in the scratch.
const SCRATCH_ZEROED: usize = 64 << 10;

/// The scratch area: an anonymous mapping of [`SCRATCH`] bytes, page
/// aligned as RM wants a described buffer.
struct Scratch {
    addr: u64,
}

impl Scratch {
    fn new() -> Result<Scratch, String> {
        // SAFETY: a fresh anonymous read-write mapping at an address the
        // kernel picks; only this struct uses it, and unmaps it on drop.
        let p = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                SCRATCH,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(format!("scratch: errno {}", crate::sys::errno()));
        }
        Ok(Scratch {
            addr: p as usize as u64,
        })
    }

    fn addr(&self) -> u64 {
        self.addr
    }

    /// Zeroes its first [`SCRATCH_ZEROED`] bytes.
    fn zero_head(&mut self) {
        // SAFETY: the mapping is ours, `SCRATCH` bytes long, and no Rust
        // reference into it exists.
        unsafe { core::ptr::write_bytes(self.addr as usize as *mut u8, 0, SCRATCH_ZEROED) };
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // SAFETY: our mapping, unmapped once.
        unsafe { libc::munmap(self.addr as usize as *mut libc::c_void, SCRATCH) };
    }
}

/// Where a replay put a UVM range of its trace: managed memory mapped
/// from its UVM file, or reserved VA for a range UVM makes by ioctl.
enum UvmVa {
    Managed(nvclient::uvm::ManagedRange),
    Reserved(Reservation),
}

impl UvmVa {
    fn addr(&self) -> u64 {
        match self {
            UvmVa::Managed(m) => m.addr(),
            UvmVa::Reserved(r) => r.addr(),
        }
    }
}

struct Replay<'a> {
    paths: &'a Paths,
    nodes: HashMap<String, Node>,
    handles: HashMap<String, u32>,
    next_handle: u32,
    scratch: Scratch,
    /// The UVM ranges named so far (`vN`), as this replay placed them.
    ranges: HashMap<String, UvmVa>,
}

impl Replay<'_> {
    fn node(&mut self, name: &str) -> Result<&Node, String> {
        if !self.nodes.contains_key(name) {
            let kind = name.split('#').next().unwrap_or(name);
            let path = match kind {
                "ctl" => self.paths.ctl.to_string(),
                "uvm" => self.paths.uvm.to_string(),
                g => {
                    let m: u32 = g
                        .strip_prefix("gpu")
                        .and_then(|m| m.parse().ok())
                        .ok_or(format!("node {name}"))?;
                    (self.paths.gpu)(m)
                }
            };
            let n = Node::open(&path).map_err(|e| format!("open {path}: {e}"))?;
            self.nodes.insert(name.to_string(), n);
        }
        self.nodes.get(name).ok_or(format!("node {name}"))
    }

    /// The replay's handle for a trace's `H`.
    fn handle(&self, h: &str) -> Result<u32, String> {
        if h == "0" {
            return Ok(0);
        }
        if let Some(raw) = h.strip_prefix("0x") {
            return u32::from_str_radix(raw, 16).map_err(|_| format!("handle {h}"));
        }
        // A name RM never gave this replay (its ALLOC failed here): an
        // unused handle, so that the call meets what RM says of one.
        Ok(self.handles.get(h).copied().unwrap_or(0x5eed_0000))
    }

    /// The input bytes of a line, its names resolved.
    fn input(&mut self, toks: &[&str], size: usize) -> Result<Vec<u8>, String> {
        let mut b = unsparse(val(toks, "in").unwrap_or("-"), size)?;
        let scratch = self.scratch.addr();
        let at =
            |s: &str| -> Result<usize, String> { s.parse().map_err(|_| format!("offset {s}")) };
        for t in toks {
            let put = |b: &mut Vec<u8>, off: usize, v: &[u8]| -> Result<(), String> {
                b.get_mut(off..off + v.len())
                    .ok_or(format!("{t} outside {size} bytes"))?
                    .copy_from_slice(v);
                Ok(())
            };
            if let Some(r) = t.strip_prefix("h@") {
                let (off, h) = r.split_once('=').ok_or(format!("bad {t}"))?;
                put(&mut b, at(off)?, &self.handle(h)?.to_le_bytes())?;
            } else if let Some(r) = t.strip_prefix("fd@") {
                let (off, node) = r.split_once('=').ok_or(format!("bad {t}"))?;
                let fd = self.node(node)?.fd();
                put(&mut b, at(off)?, &fd.to_le_bytes())?;
            } else if let Some(off) = t.strip_prefix("pid@") {
                put(&mut b, at(off)?, &std::process::id().to_le_bytes())?;
            } else if let Some(off) = t.strip_prefix("ptr@") {
                put(&mut b, at(off)?, &scratch.to_le_bytes())?;
            }
        }
        Ok(b)
    }

    /// Puts in `b` the address each UVM range a UVM line names
    /// (`va@OFF=vN`) has in this replay. A name's first use makes it, of
    /// the command's length (the word after the address): the VA of an
    /// external range, a dynamic-parallelism region or a semaphore pool is
    /// reserved (an anonymous `PROT_NONE` mapping, as UVM wants only a
    /// free range), any other (a migration, a policy, a range group) is
    /// managed memory, mapped from `node`'s file. UVM_FREE forgets it.
    fn uvm_ranges(&mut self, node: &str, name: &str, toks: &[&str], b: &mut [u8]) -> Outcome {
        for t in toks {
            let Some(r) = t.strip_prefix("va@") else {
                continue;
            };
            let (off, sym) = r.split_once('=').ok_or(format!("bad {t}"))?;
            let off: usize = off.parse().map_err(|_| format!("bad {t}"))?;
            let addr = match self.ranges.get(sym) {
                Some(m) => m.addr(),
                None => {
                    let len = b
                        .get(off + 8..off + 16)
                        .and_then(|w| w.try_into().ok())
                        .map(u64::from_le_bytes)
                        .ok_or(format!("{t}: no length after it"))?
                        as usize;
                    let made = match name {
                        "CREATE_EXTERNAL_RANGE"
                        | "MAP_DYNAMIC_PARALLELISM_REGION"
                        | "ALLOC_SEMAPHORE_POOL" => {
                            Reservation::new(len, len.next_power_of_two().min(1 << 21))
                                .map(UvmVa::Reserved)
                        }
                        _ => {
                            let fd = self.node(node)?.fd();
                            nvclient::uvm::map_managed_fd(fd, len).map(UvmVa::Managed)
                        }
                    };
                    let m = made.map_err(|e| format!("{t}: {len:#x} bytes of VA: {e:?}"))?;
                    let a = m.addr();
                    self.ranges.insert(sym.to_string(), m);
                    a
                }
            };
            b.get_mut(off..off + 8)
                .ok_or(format!("{t} outside the block"))?
                .copy_from_slice(&addr.to_le_bytes());
            if name == "FREE" {
                self.ranges.remove(sym);
            }
        }
        Ok(())
    }

    /// The params pointer of an ALLOC or CONTROL line: none where the
    /// program gave none (`pparams=0`), the zeroed scratch area where it
    /// gave one with size 0 (RM may then read the class's size), else
    /// `params`.
    fn params_ptr(&mut self, toks: &[&str], params: &mut [u8]) -> u64 {
        match (val(toks, "pparams"), params.is_empty()) {
            (Some("0"), _) => 0,
            (_, true) => self.scratch.addr(),
            (_, false) => params.as_mut_ptr() as u64,
        }
    }

    /// Issues escape `name` on `node` with block `b`.
    fn issue(&mut self, node: &str, name: &str, nr: u64, b: &mut [u8]) -> Result<i32, String> {
        let n = self.node(node)?;
        let r = if node.starts_with("uvm") {
            // UVM's requests are plain numbers, not _IOWR words: the size
            // is the block's.
            // SAFETY: `b` is the command's whole block, exclusively
            // borrowed for the call; pointers in it point at `self.scratch`.
            let rc = unsafe { libc::ioctl(n.fd(), nr as libc::Ioctl, b.as_mut_ptr()) };
            if rc < 0 {
                return Ok(crate::sys::errno());
            }
            Ok(())
        } else if name.starts_with("XFER>") {
            n.ioctl_xfer(nr as u8, b)
        } else {
            n.ioctl_direct(nr as u8, b)
        };
        match r {
            Ok(()) => Ok(0),
            Err(e) => e.errno().ok_or(format!("{e:?}")),
        }
    }

    /// Replays one line; returns what differs from the recorded results.
    fn line(&mut self, l: &str) -> Result<Option<String>, String> {
        // Zeroed for each call: what the driver wrote through an earlier
        // call's pointers (SYSTEM_GET_BUILD_VERSION's strings) must not
        // become a later call's params (a device's, read at its class's
        // size from the area).
        self.scratch.zero_head();
        let toks: Vec<&str> = l.split_whitespace().collect();
        ensure!(toks.len() >= 3, "short line");
        let (node, name) = (toks[0], toks[1]);
        let inner = name.rsplit('>').next().unwrap_or(name);
        // UVM's FREE is a UVM command like the others.
        let rm_kind = if node.starts_with("uvm") { "" } else { inner };
        let num = |k: &str| -> Result<u64, String> {
            let v = val(&toks, k).ok_or(format!("no {k}="))?;
            if v.starts_with("0x") {
                hex(v).ok_or(format!("{k}={v}"))
            } else {
                v.parse().map_err(|_| format!("{k}={v}"))
            }
        };
        let h = |s: &Self, k: &str| -> Result<u32, String> {
            let v = val(&toks, k).ok_or(format!("no {k}="))?;
            s.handle(v.strip_prefix("auto:").unwrap_or(v))
        };
        let want_errno: i32 = num("errno")? as i32;
        let (errno, status, want) = match rm_kind {
            "ALLOC" => {
                let size = num("size")? as usize;
                // `read=`: size 0, and the class's params as RM read them.
                let read = match val(&toks, "read") {
                    Some(r) => r.parse().map_err(|_| format!("read={r}"))?,
                    None => size,
                };
                let mut params = self.input(&toks, read)?;
                let pp = self.params_ptr(&toks, &mut params);
                let rights = if val(&toks, "rights") == Some("1") {
                    self.scratch.addr()
                } else {
                    0
                };
                let newv = val(&toks, "new").ok_or("no new=")?;
                let (sym, hnew) = match newv.strip_prefix("auto:") {
                    Some(s) => (s, 0),
                    None => {
                        self.next_handle += 1;
                        (newv, 0x5e00_0000 + self.next_handle)
                    }
                };
                let (client, parent) = (h(self, "client")?, h(self, "parent")?);
                let class = num("class")? as u32;
                let (errno, status, out_new) = if val(&toks, "nvos") == Some("21") {
                    let mut b = Nvos21 {
                        h_root: client,
                        h_object_parent: parent,
                        h_object_new: hnew,
                        h_class: class,
                        p_alloc_parms: pp,
                        params_size: size as u32,
                        status: 0,
                    }
                    .to_bytes();
                    let e = self.issue(node, name, 0x2b, &mut b)?;
                    let o = Nvos21::decode(&b);
                    (e, o.status, o.h_object_new)
                } else {
                    let mut b = Nvos64 {
                        h_root: client,
                        h_object_parent: parent,
                        h_object_new: hnew,
                        h_class: class,
                        p_alloc_parms: pp,
                        p_rights_requested: rights,
                        params_size: size as u32,
                        flags: num("flags").unwrap_or(0) as u32,
                        ..Default::default()
                    }
                    .to_bytes();
                    let e = self.issue(node, name, 0x2b, &mut b)?;
                    let o = Nvos64::decode(&b);
                    (e, o.status, o.h_object_new)
                };
                if status == 0 && errno == 0 {
                    self.handles.insert(sym.to_string(), out_new);
                }
                (errno, Some(status), val(&toks, "status"))
            }
            "CONTROL" => {
                let size = num("size")? as usize;
                let mut params = self.input(&toks, size)?;
                let pp = self.params_ptr(&toks, &mut params);
                let mut b = Nvos54 {
                    h_client: h(self, "client")?,
                    h_object: h(self, "object")?,
                    cmd: num("cmd")? as u32,
                    flags: num("flags")? as u32,
                    params: pp,
                    params_size: size as u32,
                    status: 0,
                }
                .to_bytes();
                let e = self.issue(node, name, 0x2a, &mut b)?;
                (e, Some(Nvos54::decode(&b).status), val(&toks, "status"))
            }
            "FREE" => {
                let mut b = Nvos00 {
                    h_root: h(self, "client")?,
                    h_object_parent: h(self, "parent")?,
                    h_object_old: h(self, "object")?,
                    status: 0,
                }
                .to_bytes();
                let e = self.issue(node, name, 0x29, &mut b)?;
                (e, Some(Nvos00::decode(&b).status), val(&toks, "status"))
            }
            _ => {
                let size = num("size")? as usize;
                let mut b = self.input(&toks, size)?;
                self.uvm_ranges(node, name, &toks, &mut b)?;
                let e = self.issue(node, name, num("nr")?, &mut b)?;
                match toks.iter().find_map(|t| t.strip_prefix("status@")) {
                    Some(r) => {
                        let (off, s) = r.split_once('=').ok_or("bad status@")?;
                        let off: usize = off.parse().map_err(|_| "bad status@")?;
                        (e, word(&b, off), Some(s))
                    }
                    None => (e, None, None),
                }
            }
        };
        let mut diff = Vec::new();
        if errno != want_errno {
            diff.push(format!("errno {errno}, recorded {want_errno}"));
        }
        if let (Some(got), Some(w)) = (status, want) {
            if Some(u64::from(got)) != hex(w) {
                diff.push(format!("status 0x{got:x}, recorded {w}"));
            }
        }
        Ok((!diff.is_empty()).then(|| diff.join(", ")))
    }
}

/// Replays trace `text` (named `file`) on `paths`; the mismatches, each
/// naming its line.
pub fn replay(file: &str, text: &str, paths: &Paths) -> Result<Vec<String>, String> {
    let mut r = Replay {
        paths,
        nodes: HashMap::new(),
        handles: HashMap::new(),
        next_handle: 0,
        scratch: Scratch::new()?,
        ranges: HashMap::new(),
    };
    let mut bad = Vec::new();
    for (i, l) in text.lines().enumerate() {
        if l.is_empty() || l.starts_with('#') || l.starts_with('@') {
            continue;
        }
        match r.line(l) {
            Ok(None) => {}
            Ok(Some(d)) => bad.push(format!("{file}:{}: {l}: {d}", i + 1)),
            Err(e) => bad.push(format!("{file}:{}: {l}: cannot replay: {e}", i + 1)),
        }
    }
    Ok(bad)
}

/// A setting `@KEY N` of a trace.
fn setting(text: &str, key: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix('@')?.strip_prefix(key)?.trim().parse().ok())
}

/// The recorded traces: (release, file name, text), of files ending `-MODE.trace`.
fn recorded(mode: &str) -> Result<Vec<(String, String, String)>, String> {
    let mut out = Vec::new();
    let mut rels: Vec<_> = std::fs::read_dir(TRACES)
        .map_err(|e| format!("{TRACES}: {e}"))?
        .filter_map(|e| e.ok())
        .collect();
    rels.sort_by_key(|e| e.file_name());
    for rel in rels.into_iter().filter(|e| e.path().is_dir()) {
        let release = rel.file_name().to_string_lossy().to_string();
        let mut files: Vec<_> = std::fs::read_dir(rel.path())
            .map_err(|e| format!("{release}: {e}"))?
            .filter_map(|e| e.ok())
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .ends_with(&format!("-{mode}.trace"))
            })
            .collect();
        files.sort_by_key(|e| e.file_name());
        for f in files {
            let text = std::fs::read_to_string(f.path()).map_err(|e| format!("{f:?}: {e}"))?;
            out.push((
                release.clone(),
                format!("{release}/{}", f.file_name().to_string_lossy()),
                text,
            ));
        }
    }
    ensure!(!out.is_empty(), "no -{mode}.trace under {TRACES}");
    Ok(out)
}

/// Loads the double claiming `release` with the trace's GPUs (8 GiB each).
fn load_double(release: &str, text: &str) -> Outcome {
    let idx = crate::sys::DOUBLE_RELEASES
        .iter()
        .position(|r| *r == release)
        .ok_or(format!("the double cannot claim {release}"))?;
    let gpus = setting(text, "gpus").unwrap_or(1);
    insmod_double(&format!(
        "gpus={gpus} vram0_mib=8192 vram1_mib=8192 release={idx}"
    ))?;
    make_uvm_nodes()?;
    Ok(())
}

fn unload(vgpu: bool) -> Outcome {
    if vgpu {
        let _ = write_file("/sys/class/vgpu/remove", "0");
        sh("rmmod vgpu")?;
    }
    remove_uvm_nodes();
    sh("rmmod nvidia").map(drop)
}

/// Replays every trace of `mode` on `paths`, each on a freshly loaded
/// double (and vgpu), holding the trace's memory as its run did.
fn replay_all(mode: &str, paths: &'static Paths) -> Outcome {
    let vgpu = mode == "vgpu";
    let mut bad = Vec::new();
    let traces = recorded(mode)?;
    for (release, file, text) in &traces {
        load_double(release, text)?;
        let r = (|| -> Result<Vec<String>, String> {
            if vgpu {
                sh("modprobe vgpu")?;
                let mib = setting(text, "vgpu").unwrap_or(1024);
                std::fs::create_dir_all("/sys/fs/cgroup/traces")
                    .map_err(|e| format!("mkdir: {e}"))?;
                write_file("/sys/class/vgpu/create", "0").map_err(|e| format!("create: {e}"))?;
                write_file("/sys/class/vgpu/vgpu0/gpu", "0").map_err(|e| format!("gpu: {e}"))?;
                write_file(
                    "/sys/class/vgpu/vgpu0/memory_limit",
                    &(mib << 20).to_string(),
                )
                .map_err(|e| format!("limit: {e}"))?;
                write_file("/sys/class/vgpu/vgpu0/cgroup", "/traces")
                    .map_err(|e| format!("cgroup: {e}"))?;
            }
            in_process(vgpu, text, || replay(file, text, paths))
        })();
        unload(vgpu)?;
        let r = r?;
        println!(
            "# {file}: {} calls, {} differ",
            text.lines().filter(|l| !l.starts_with(['#', '@'])).count(),
            r.len()
        );
        bad.extend(r);
    }
    for b in bad.iter().take(20) {
        println!("#   {b}");
    }
    ensure!(
        bad.is_empty(),
        "{} calls of {} traces differ from their recording",
        bad.len(),
        traces.len()
    );
    Ok(())
}

/// Runs `f` in a child process (in the vGPU's cgroup when `vgpu`) that
/// holds the trace's `@hold` MiB as its run's holder did; its mismatches
/// come back on a pipe.
fn in_process(
    vgpu: bool,
    text: &str,
    f: impl FnOnce() -> Result<Vec<String>, String>,
) -> Result<Vec<String>, String> {
    let hold = setting(text, "hold");
    let mut fds = [0i32; 2];
    // SAFETY: fds is an array of two ints, as pipe() writes.
    ensure!(unsafe { libc::pipe(fds.as_mut_ptr()) } == 0, "pipe");
    let code = crate::sys::in_child(move || {
        // SAFETY: the read end is this process's copy, closed once.
        unsafe { libc::close(fds[0]) };
        let r = (|| {
            if vgpu {
                join_cgroup("/traces").map_err(|e| format!("join: {e}"))?;
            }
            let (ctl, gpu) = if vgpu {
                ("/dev/vgpuctl", "/dev/vgpu0")
            } else {
                ("/dev/nvidiactl", "/dev/nvidia0")
            };
            let _held = match hold {
                Some(mib) => Some(crate::nvuserspace::hold_memory_on(ctl, gpu, mib)?),
                None => None,
            };
            f()
        })();
        // Within a pipe's buffer: the parent reads after the child left.
        let msg = match r {
            Ok(bad) => bad.iter().take(40).cloned().collect::<Vec<_>>().join("\n"),
            Err(e) => format!("!{e}"),
        };
        // SAFETY: the write end is open; msg outlives the call.
        unsafe { libc::write(fds[1], msg.as_ptr().cast(), msg.len()) };
        0
    });
    // SAFETY: this process's write end, closed once.
    unsafe { libc::close(fds[1]) };
    let mut s = String::new();
    // SAFETY: the read end is ours; File takes it over and closes it.
    let mut file: std::fs::File = unsafe { std::os::fd::FromRawFd::from_raw_fd(fds[0]) };
    std::io::Read::read_to_string(&mut file, &mut s).map_err(|e| format!("pipe: {e}"))?;
    let code = code?;
    ensure!(code == 0, "replay process: code {code}");
    if let Some(e) = s.strip_prefix('!') {
        return Err(e.to_string());
    }
    Ok(s.lines().map(String::from).collect())
}

fn replay_directly() -> Outcome {
    replay_all("direct", &DIRECT)
}

fn replay_through_vgpu() -> Outcome {
    replay_all("vgpu", &VGPU)
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn sparse_round_trips() {
        let b = [0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 0, 5, 0, 0];
        assert_eq!(sparse(&b), "4:0102000000000005");
        assert_eq!(unsparse("4:0102000000000005", 14).unwrap(), b);
        assert_eq!(sparse(&[0; 6]), "-");
    }

    #[test]
    fn normalize_names_what_depends_on_the_run() {
        let log = "\
nvtrace pid=4242 /dev/nvidiactl ALLOC nr=0x2b size=48 ret=0 errno=0 nvos=64 hRoot=0x00000000 hParent=0x00000000 hObjectNew=0xc1d00042 hClass=0x0041 paramsSize=0 status=0x0 in.hObjectNew=0x00000000 in.hClass=0x0041 in.hRoot=0x00000000 pParams=1 flags=0x0 pRights=0 nodefd=3 in=-
nvtrace pid=4242 /dev/nvidiactl CONTROL nr=0x2a size=32 ret=0 errno=0 hClient=0xc1d00042 hObject=0xc1d00042 cmd=0x00000214 flags=0x0 paramsSize=16 status=0x0 pParams=1 nodefd=3 in=0:4200d0c19210000078563412557f0000
nvtrace pid=4242 /dev/nvidia0 REGISTER_FD nr=0xc9 size=4 ret=0 errno=0 ctl_fd=3 nodefd=5 in=0:03000000
nvtrace pid=4242 /dev/nvidia-uvm MM_INITIALIZE nr=0x4b size=8 ret=0 errno=0 status=0x0 status_off=4 nodefd=6 in=0:06000000
";
        let t = normalize(log, &[], "550.163.01").unwrap();
        assert_eq!(
            t,
            [
                "ctl#1 ALLOC nvos=64 client=0 parent=0 new=auto:h1 class=0x0041 size=0 pparams=1 flags=0x0 rights=0 in=- errno=0 status=0x0",
                "ctl#1 CONTROL client=h1 object=h1 cmd=0x00000214 flags=0x0 size=16 pparams=1 in=- ptr@8 h@0=h1 pid@4 errno=0 status=0x0",
                "gpu0#1 REGISTER_FD nr=0xc9 size=4 in=- fd@0=ctl#1 errno=0",
                "uvm#1 MM_INITIALIZE nr=0x4b size=8 in=- fd@0=uvm#1 errno=0 status@4=0x0",
            ]
        );
    }
}
