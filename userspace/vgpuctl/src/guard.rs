// SPDX-License-Identifier: GPL-2.0

//! The guard: a BPF LSM program on `file_receive` that refuses a file of
//! NVIDIA's driver to a task whose cgroup, or one of its ancestors, is
//! bound to a vGPU (issue 33; docs/design-notes.md, "NVIDIA's own nodes").
//!
//! vgpu turns a bound task's open of the driver's nodes into its proxy
//! file, but a file a host process opened is the driver's own, and the
//! kernel hands it to another process without an open: `SCM_RIGHTS`,
//! `pidfd_getfd`, seccomp's `ADDFD`, io_uring's `FIXED_FD_INSTALL`. All
//! four call `security_file_receive` in the receiving task (`fs/file.c`,
//! `receive_fd`/`receive_fd_replace`, Linux 7.3), where this program runs.
//!
//! The program is a few dozen instructions, assembled here and loaded
//! with raw `bpf(2)` calls: no compiler, no libbpf. The offsets it reads
//! (`file.f_op`, `file_operations.owner`, `module.name`) come from the
//! running kernel's BTF (`/sys/kernel/btf/vmlinux`) at load time, and it
//! reads through `bpf_probe_read_kernel`. The bound cgroups are a hash
//! map keyed by cgroup id, pinned with the program's link under
//! `/sys/fs/bpf/vgpu/` (root-only): only root on the host changes it.
//! Every bind and unbind through vgpuctl ([`follow`], called by
//! [`crate::sysfs::Sysfs::write_attr`]) keeps it in step; `vgpuctl guard
//! load`/`sync` rebuild it from sysfs.

use std::ffi::CString;
use std::fs;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::sysfs::Sysfs;
use crate::{Error, Result};

/// Where the guard's objects are pinned, under the sysfs root.
const PIN_DIR: &str = "fs/bpf/vgpu";
/// The map of bound cgroup ids.
const MAP_PIN: &str = "bound";
/// The program's link (the program stays attached while it is pinned).
const LINK_PIN: &str = "file_receive";
/// Cgroup levels the program walks (0, the root, to `MAX_LEVEL`): a
/// binding deeper than this is reported unguarded.
pub const MAX_LEVEL: usize = 32;
/// Bound cgroups the map holds.
const MAX_ENTRIES: u32 = 4096;
/// `BPF_FS_MAGIC`.
const BPF_FS_MAGIC: i64 = 0xcafe_4a11;

// bpf(2) commands, program and attach types (include/uapi/linux/bpf.h).
const BPF_MAP_CREATE: i32 = 0;
const BPF_MAP_LOOKUP_ELEM: i32 = 1;
const BPF_MAP_UPDATE_ELEM: i32 = 2;
const BPF_MAP_DELETE_ELEM: i32 = 3;
const BPF_MAP_GET_NEXT_KEY: i32 = 4;
const BPF_PROG_LOAD: i32 = 5;
const BPF_OBJ_PIN: i32 = 6;
const BPF_OBJ_GET: i32 = 7;
const BPF_RAW_TRACEPOINT_OPEN: i32 = 17;
const BPF_MAP_TYPE_HASH: u32 = 1;
const BPF_PROG_TYPE_LSM: u32 = 29;
const BPF_LSM_MAC: u32 = 27;

/// Whether the guard can run on this kernel, and why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Availability {
    /// BPF LSM is active and the kernel has BTF.
    Available,
    /// It cannot: the reason, for people.
    Unavailable(String),
}

/// `lsm_list_modules(2)` (Linux 6.8, x86-64) and the names of the LSM ids
/// it gives (`include/uapi/linux/lsm.h`).
const SYS_LSM_LIST_MODULES: libc::c_long = 461;
const LSM_NAMES: [(u64, &str); 14] = [
    (100, "capability"),
    (101, "selinux"),
    (102, "smack"),
    (103, "tomoyo"),
    (104, "apparmor"),
    (105, "yama"),
    (106, "loadpin"),
    (107, "safesetid"),
    (108, "lockdown"),
    (109, "bpf"),
    (110, "landlock"),
    (111, "ima"),
    (112, "evm"),
    (113, "ipe"),
];

/// The running kernel's active LSMs, by `lsm_list_modules(2)`.
fn lsm_list_modules() -> io::Result<Vec<String>> {
    let mut ids = [0u64; 32];
    let mut size = std::mem::size_of_val(&ids) as u32;
    // SAFETY: `ids` is writable for `size` bytes and `size` is a live u32
    // the kernel reads and updates; flags must be 0.
    let n = unsafe {
        libc::syscall(
            SYS_LSM_LIST_MODULES,
            ids.as_mut_ptr(),
            &mut size as *mut u32,
            0u32,
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(ids[..(n as usize).min(ids.len())]
        .iter()
        .map(|id| match LSM_NAMES.iter().find(|(i, _)| i == id) {
            Some((_, name)) => name.to_string(),
            None => format!("lsm{id}"),
        })
        .collect())
}

/// The active LSMs: securityfs's `lsm` file under `root` where it is
/// mounted (systemd mounts it); on the running system (`root` is `/sys`)
/// without it, `lsm_list_modules(2)`, which a kernel built without
/// securityfs still answers. Else why not, for people.
fn active_lsms(root: &Path) -> std::result::Result<Vec<String>, String> {
    let lsm = root.join("kernel/security/lsm");
    let no_lsm = "the kernel has no LSM framework (built without CONFIG_SECURITY), so no BPF LSM";
    match fs::read_to_string(&lsm) {
        Ok(list) => Ok(list.trim().split(',').map(str::to_string).collect()),
        Err(e) if root != Path::new("/sys") => {
            Err(format!("{} unreadable ({e}): {no_lsm}", lsm.display()))
        }
        Err(e) => lsm_list_modules().map_err(|sys| {
            format!(
                "{} unreadable ({e}) and lsm_list_modules(2) failed ({sys}): {no_lsm}",
                lsm.display()
            )
        }),
    }
}

/// Whether the running kernel can run the guard (`root` is the sysfs root).
pub fn availability(root: &Path) -> Availability {
    match active_lsms(root) {
        Err(why) => Availability::Unavailable(why),
        Ok(list) if !list.iter().any(|l| l == "bpf") => Availability::Unavailable(format!(
            "BPF LSM is not active: the kernel lists {:?} (needs CONFIG_BPF_LSM=y and `bpf` in CONFIG_LSM or lsm= on the kernel command line)",
            list.join(",")
        )),
        Ok(_) if !root.join("kernel/btf/vmlinux").exists() => Availability::Unavailable(
            "the kernel has no BTF (/sys/kernel/btf/vmlinux; CONFIG_DEBUG_INFO_BTF=y)".into(),
        ),
        Ok(_) => Availability::Available,
    }
}

fn pin_dir(s: &Sysfs) -> PathBuf {
    s.root().join(PIN_DIR)
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn guard_err(what: &str, e: io::Error) -> Error {
    Error::Guard(format!("{what}: {e}"))
}

// ---------------------------------------------------------------- bpf(2)

fn bpf(cmd: i32, attr: &mut [u64]) -> io::Result<i64> {
    let size = std::mem::size_of_val(attr);
    // SAFETY: `attr` is a live, writable buffer of `size` bytes laid out as
    // the `union bpf_attr` member `cmd` reads; the kernel copies at most
    // `size` bytes and zero-extends the rest.
    let r = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr.as_mut_ptr(), size) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn fd_of(r: i64) -> OwnedFd {
    // SAFETY: `r` is a new file descriptor the bpf(2) call returned, owned
    // by nobody else.
    unsafe { OwnedFd::from_raw_fd(r as i32) }
}

fn cstr(p: &Path) -> Result<CString> {
    CString::new(p.as_os_str().as_encoded_bytes())
        .map_err(|_| Error::BadValue(format!("{} has a NUL", p.display())))
}

fn obj_get(path: &Path) -> io::Result<OwnedFd> {
    let c = CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let mut a = [0u64; 3];
    a[0] = c.as_ptr() as u64;
    bpf(BPF_OBJ_GET, &mut a).map(fd_of)
}

fn obj_pin(fd: &OwnedFd, path: &Path) -> Result<()> {
    let c = cstr(path)?;
    let mut a = [0u64; 3];
    a[0] = c.as_ptr() as u64;
    a[1] = fd.as_raw_fd() as u32 as u64;
    bpf(BPF_OBJ_PIN, &mut a)
        .map(|_| ())
        .map_err(|e| guard_err(&format!("pinning {}", path.display()), e))
}

fn map_attr(map: &OwnedFd, key: &u64, val: u64, flags: u64) -> [u64; 4] {
    [
        map.as_raw_fd() as u32 as u64,
        key as *const u64 as u64,
        val,
        flags,
    ]
}

fn map_update(map: &OwnedFd, key: u64) -> io::Result<()> {
    let one: u64 = 1;
    let mut a = map_attr(map, &key, &one as *const u64 as u64, 0);
    bpf(BPF_MAP_UPDATE_ELEM, &mut a).map(|_| ())
}

fn map_delete(map: &OwnedFd, key: u64) -> io::Result<()> {
    let mut a = map_attr(map, &key, 0, 0);
    bpf(BPF_MAP_DELETE_ELEM, &mut a).map(|_| ())
}

fn map_has(map: &OwnedFd, key: u64) -> bool {
    let mut v: u64 = 0;
    let mut a = map_attr(map, &key, &mut v as *mut u64 as u64, 0);
    bpf(BPF_MAP_LOOKUP_ELEM, &mut a).is_ok()
}

fn map_keys(map: &OwnedFd) -> io::Result<Vec<u64>> {
    let mut keys = Vec::new();
    let mut next: u64 = 0;
    // A missing key (the first call: null) starts at the first.
    let mut cur: Option<u64> = None;
    loop {
        let kp = cur.as_ref().map_or(0, |k| k as *const u64 as u64);
        let mut a = [
            map.as_raw_fd() as u32 as u64,
            kp,
            &mut next as *mut u64 as u64,
            0,
        ];
        match bpf(BPF_MAP_GET_NEXT_KEY, &mut a) {
            Ok(_) => {
                keys.push(next);
                cur = Some(next);
                if keys.len() > MAX_ENTRIES as usize {
                    return Err(io::Error::other("map walk does not end"));
                }
            }
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(keys),
            Err(e) => return Err(e),
        }
    }
}

// ------------------------------------------------------------------- BTF

/// The facts the program needs from the kernel's BTF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelFacts {
    /// BTF id of the function `bpf_lsm_file_receive` (the attach point).
    pub attach_btf_id: u32,
    /// Byte offset of `f_op` in `struct file`.
    pub file_f_op: u32,
    /// Byte offset of `owner` in `struct file_operations`.
    pub fops_owner: u32,
    /// Byte offset of `name` in `struct module`.
    pub module_name: u32,
}

const BTF_KIND_STRUCT: u32 = 4;
const BTF_KIND_UNION: u32 = 5;
const BTF_KIND_FUNC: u32 = 12;

struct BtfType {
    name: u32,
    kind: u32,
    kind_flag: bool,
    /// Members of a struct or union: (name, type, bit offset).
    members: Vec<(u32, u32, u32)>,
    /// For modifiers and typedefs, the type they refer to.
    refers: u32,
}

struct Btf<'a> {
    strings: &'a [u8],
    types: Vec<BtfType>,
}

fn rd32(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 4)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

impl<'a> Btf<'a> {
    fn parse(b: &'a [u8]) -> std::result::Result<Btf<'a>, String> {
        if b.get(0..2) != Some(&[0x9f, 0xeb]) {
            return Err("not little-endian BTF (magic 0xeb9f)".into());
        }
        let h = |i: usize| rd32(b, 4 + 4 * i).ok_or("short BTF header");
        let (hdr, toff, tlen, soff, slen) = (h(0)?, h(1)?, h(2)?, h(3)?, h(4)?);
        let (hdr, toff, tlen, soff, slen) = (
            hdr as usize,
            toff as usize,
            tlen as usize,
            soff as usize,
            slen as usize,
        );
        let tsec = b
            .get(hdr + toff..hdr + toff + tlen)
            .ok_or("BTF type section out of range")?;
        let strings = b
            .get(hdr + soff..hdr + soff + slen)
            .ok_or("BTF string section out of range")?;
        // Type id 0 is void.
        let mut types = vec![BtfType {
            name: 0,
            kind: 0,
            kind_flag: false,
            members: Vec::new(),
            refers: 0,
        }];
        let mut at = 0;
        while at < tsec.len() {
            let r = |i: usize| rd32(tsec, at + 4 * i).ok_or("truncated BTF type");
            let (name, info, size_or_type) = (r(0)?, r(1)?, r(2)?);
            let vlen = (info & 0xffff) as usize;
            let kind = (info >> 24) & 0x1f;
            let kind_flag = info >> 31 != 0;
            at += 12;
            let mut members = Vec::new();
            let extra = match kind {
                1 | 14 | 17 => 4,     // INT, VAR, DECL_TAG
                3 => 12,              // ARRAY
                4 | 5 => 12 * vlen,   // STRUCT, UNION
                6 | 13 => 8 * vlen,   // ENUM, FUNC_PROTO
                15 | 19 => 12 * vlen, // DATASEC, ENUM64
                2 | 7..=12 | 16 | 18 => 0,
                k => return Err(format!("unknown BTF kind {k}")),
            };
            if kind == BTF_KIND_STRUCT || kind == BTF_KIND_UNION {
                for m in 0..vlen {
                    let r = |i: usize| rd32(tsec, at + 12 * m + 4 * i).ok_or("truncated member");
                    members.push((r(0)?, r(1)?, r(2)?));
                }
            }
            at += extra;
            types.push(BtfType {
                name,
                kind,
                kind_flag,
                members,
                refers: size_or_type,
            });
        }
        Ok(Btf { strings, types })
    }

    fn name(&self, off: u32) -> &[u8] {
        let s = self.strings.get(off as usize..).unwrap_or(&[]);
        &s[..s.iter().position(|&c| c == 0).unwrap_or(s.len())]
    }

    fn find(&self, kind: u32, name: &str) -> Option<u32> {
        self.types
            .iter()
            .position(|t| {
                t.kind == kind
                    && self.name(t.name) == name.as_bytes()
                    && (kind != BTF_KIND_STRUCT || !t.members.is_empty())
            })
            .map(|i| i as u32)
    }

    /// The byte offset of `member` in struct `ty`, looking into anonymous
    /// structs and unions.
    fn offset(&self, ty: u32, member: &str, depth: u32) -> Option<u32> {
        let t = self.types.get(ty as usize)?;
        if depth > 8 {
            return None;
        }
        for &(name, mty, off) in &t.members {
            let bits = if t.kind_flag { off & 0xff_ffff } else { off };
            if self.name(name) == member.as_bytes() {
                return (bits % 8 == 0).then_some(bits / 8);
            }
            if name == 0 {
                // Skip modifiers/typedefs to the anonymous aggregate.
                let mut inner = mty;
                for _ in 0..8 {
                    match self.types.get(inner as usize) {
                        Some(i) if (8..=11).contains(&i.kind) || i.kind == 18 => inner = i.refers,
                        _ => break,
                    }
                }
                if let Some(o) = self.offset(inner, member, depth + 1) {
                    return Some(bits / 8 + o);
                }
            }
        }
        None
    }

    fn member(&self, st: &str, member: &str) -> std::result::Result<u32, String> {
        let id = self
            .find(BTF_KIND_STRUCT, st)
            .ok_or(format!("no struct {st} in the kernel's BTF"))?;
        self.offset(id, member, 0)
            .ok_or(format!("no {st}.{member} in the kernel's BTF"))
    }
}

/// Reads [`KernelFacts`] from BTF `data` (`/sys/kernel/btf/vmlinux`).
pub fn kernel_facts(data: &[u8]) -> std::result::Result<KernelFacts, String> {
    let btf = Btf::parse(data)?;
    Ok(KernelFacts {
        attach_btf_id: btf
            .find(BTF_KIND_FUNC, "bpf_lsm_file_receive")
            .ok_or("no bpf_lsm_file_receive in the kernel's BTF")?,
        file_f_op: btf.member("file", "f_op")?,
        fops_owner: btf.member("file_operations", "owner")?,
        module_name: btf.member("module", "name")?,
    })
}

// --------------------------------------------------------------- program

/// One BPF instruction (`struct bpf_insn`).
#[derive(Clone, Copy)]
struct Insn(u64);

fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn(
        u64::from(code)
            | u64::from(dst & 0xf) << 8
            | u64::from(src & 0xf) << 12
            | u64::from(off as u16) << 16
            | u64::from(imm as u32) << 32,
    )
}

const R0: u8 = 0;
const R1: u8 = 1;
const R2: u8 = 2;
const R3: u8 = 3;
const R6: u8 = 6;
const R10: u8 = 10;

fn mov_k(d: u8, imm: i32) -> Insn {
    insn(0xb7, d, 0, 0, imm)
}
fn mov_x(d: u8, s: u8) -> Insn {
    insn(0xbf, d, s, 0, 0)
}
fn add_k(d: u8, imm: i32) -> Insn {
    insn(0x07, d, 0, 0, imm)
}
fn lsh_k(d: u8, imm: i32) -> Insn {
    insn(0x67, d, 0, 0, imm)
}
fn rsh_k(d: u8, imm: i32) -> Insn {
    insn(0x77, d, 0, 0, imm)
}
fn and_k(d: u8, imm: i32) -> Insn {
    insn(0x57, d, 0, 0, imm)
}
fn ldx_dw(d: u8, s: u8, off: i16) -> Insn {
    insn(0x79, d, s, off, 0)
}
fn stx_dw(d: u8, s: u8, off: i16) -> Insn {
    insn(0x7b, d, s, off, 0)
}
fn call(helper: i32) -> Insn {
    insn(0x85, 0, 0, 0, helper)
}
fn exit() -> Insn {
    insn(0x95, 0, 0, 0, 0)
}
/// `ld_imm64`: two instructions; `src` 1 makes `imm` a map fd.
fn ld_imm64(d: u8, src: u8, v: u64) -> [Insn; 2] {
    [
        insn(0x18, d, src, 0, v as u32 as i32),
        insn(0, 0, 0, 0, (v >> 32) as u32 as i32),
    ]
}

const HELPER_MAP_LOOKUP_ELEM: i32 = 1;
const HELPER_PROBE_READ_KERNEL: i32 = 113;
const HELPER_GET_CURRENT_ANCESTOR_CGROUP_ID: i32 = 123;

/// A jump to a label, resolved when the program is finished.
enum Item {
    Insn(Insn),
    /// Conditional jump (`code`, register, immediate) or `ja` (code 0x05).
    Jump(u8, u8, i32, Label),
    /// Conditional jump comparing two registers (`code`, dst, src).
    JumpX(u8, u8, u8, Label),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Label {
    Allow,
    Deny,
    Owned,
}

const JEQ_K: u8 = 0x15;
const JNE_K: u8 = 0x55;
const JA: u8 = 0x05;
const JNE_X: u8 = 0x5d;

/// "nvidia" as the first six bytes of a little-endian word.
const NVIDIA: u64 = u64::from_le_bytes(*b"nvidia\0\0");

/// The program: `int file_receive(struct file *file)`.
///
/// ```text
/// owner = file->f_op->owner (probe reads; any fault allows)
/// if owner is NULL or owner->name is not "nvidia" or "nvidia_*": allow
/// for level in 0..=MAX_LEVEL:
///     id = bpf_get_current_ancestor_cgroup_id(level); if id == 0: allow
///     if bound[id]: return -EPERM
/// allow: return 0
/// ```
fn program(f: &KernelFacts, map_fd: i32) -> Vec<Insn> {
    let mut p: Vec<Item> = Vec::new();
    // r6 = file (first argument of the hook).
    p.push(Item::Insn(ldx_dw(R6, R1, 0)));
    // Three probe reads, each into fp-8: f_op, owner, name's first word.
    let read = |p: &mut Vec<Item>, base: u8, off: u32| {
        p.push(Item::Insn(mov_x(R3, base)));
        p.push(Item::Insn(add_k(R3, off as i32)));
        p.push(Item::Insn(mov_x(R1, R10)));
        p.push(Item::Insn(add_k(R1, -8)));
        p.push(Item::Insn(mov_k(R2, 8)));
        p.push(Item::Insn(call(HELPER_PROBE_READ_KERNEL)));
        p.push(Item::Jump(JNE_K, R0, 0, Label::Allow));
        p.push(Item::Insn(ldx_dw(R3, R10, -8)));
    };
    read(&mut p, R6, f.file_f_op);
    p.push(Item::Jump(JEQ_K, R3, 0, Label::Allow));
    read(&mut p, R3, f.fops_owner);
    p.push(Item::Jump(JEQ_K, R3, 0, Label::Allow));
    read(&mut p, R3, f.module_name);
    // r2 = low six bytes of the name; must be "nvidia".
    p.push(Item::Insn(mov_x(R2, R3)));
    p.push(Item::Insn(lsh_k(R2, 16)));
    p.push(Item::Insn(rsh_k(R2, 16)));
    for x in ld_imm64(R1, 0, NVIDIA) {
        p.push(Item::Insn(x));
    }
    p.push(Item::JumpX(JNE_X, R2, R1, Label::Allow));
    // r3 = the seventh byte: NUL ("nvidia") or '_' ("nvidia_uvm", ...).
    p.push(Item::Insn(rsh_k(R3, 48)));
    p.push(Item::Insn(and_k(R3, 0xff)));
    p.push(Item::Jump(JEQ_K, R3, 0, Label::Owned));
    p.push(Item::Jump(JEQ_K, R3, i32::from(b'_'), Label::Owned));
    p.push(Item::Jump(JA, 0, 0, Label::Allow));
    let owned = p.len();
    let map = ld_imm64(R1, 1, map_fd as u32 as u64);
    for level in 0..=MAX_LEVEL {
        p.push(Item::Insn(mov_k(R1, level as i32)));
        p.push(Item::Insn(call(HELPER_GET_CURRENT_ANCESTOR_CGROUP_ID)));
        p.push(Item::Jump(JEQ_K, R0, 0, Label::Allow));
        p.push(Item::Insn(stx_dw(R10, R0, -16)));
        p.push(Item::Insn(map[0]));
        p.push(Item::Insn(map[1]));
        p.push(Item::Insn(mov_x(R2, R10)));
        p.push(Item::Insn(add_k(R2, -16)));
        p.push(Item::Insn(call(HELPER_MAP_LOOKUP_ELEM)));
        p.push(Item::Jump(JNE_K, R0, 0, Label::Deny));
    }
    let allow = p.len();
    p.push(Item::Insn(mov_k(R0, 0)));
    p.push(Item::Insn(exit()));
    let deny = p.len();
    p.push(Item::Insn(mov_k(R0, -libc::EPERM)));
    p.push(Item::Insn(exit()));
    let target = |l: Label| match l {
        Label::Allow => allow,
        Label::Deny => deny,
        Label::Owned => owned,
    };
    let mut out: Vec<Insn> = Vec::with_capacity(p.len());
    for (at, item) in p.iter().enumerate() {
        let rel = |l: Label| (target(l) as i64 - at as i64 - 1) as i16;
        out.push(match *item {
            Item::Insn(x) => x,
            Item::Jump(code, reg, imm, l) => insn(code, reg, 0, rel(l), imm),
            Item::JumpX(code, d, s, l) => insn(code, d, s, rel(l), 0),
        });
    }
    out
}

// ------------------------------------------------------------ operations

fn bpffs_mounted(dir: &Path) -> bool {
    let Ok(c) = CString::new(dir.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: an all-zero `statfs` is a valid value to be overwritten.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path and `st` a writable statfs.
    let r = unsafe { libc::statfs(c.as_ptr(), &mut st) };
    r == 0 && st.f_type as i64 == BPF_FS_MAGIC
}

/// Mounts bpffs at `ROOT/fs/bpf` unless it is there.
fn ensure_bpffs(s: &Sysfs) -> Result<()> {
    let dir = s.root().join("fs/bpf");
    if bpffs_mounted(&dir) {
        return Ok(());
    }
    let target = cstr(&dir)?;
    // SAFETY: NUL-terminated strings that live across the call; no data.
    let r = unsafe {
        libc::mount(
            c"bpf".as_ptr(),
            target.as_ptr(),
            c"bpf".as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if r != 0 {
        return Err(guard_err(
            &format!("mounting bpffs at {}", dir.display()),
            io::Error::last_os_error(),
        ));
    }
    Ok(())
}

/// The pinned map, if the guard is loaded.
fn pinned_map(s: &Sysfs) -> Option<OwnedFd> {
    obj_get(&pin_dir(s).join(MAP_PIN)).ok()
}

/// Whether the guard's program is attached (its link pinned).
pub fn loaded(s: &Sysfs) -> bool {
    obj_get(&pin_dir(s).join(LINK_PIN)).is_ok()
}

/// An exclusive lock on the pin directory, held while the map follows
/// sysfs (two vgpuctl runs do not undo each other's entries).
struct Lock {
    _dir: fs::File,
}

fn lock(s: &Sysfs) -> Result<Lock> {
    let dir = pin_dir(s);
    let f = fs::File::open(&dir).map_err(io_err(&dir))?;
    // SAFETY: `f` is an open descriptor for the call's duration.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(io_err(&dir)(io::Error::last_os_error()));
    }
    Ok(Lock { _dir: f })
}

/// The id of cgroup `path` (its cgroup2 inode number), if it exists.
fn cgroup_id(s: &Sysfs, path: &str) -> Option<u64> {
    let p = s
        .root()
        .join("fs/cgroup")
        .join(path.trim_start_matches('/'));
    fs::metadata(p).ok().filter(|m| m.is_dir()).map(|m| m.ino())
}

/// The bound cgroups (from sysfs), with their ids where they exist.
fn bindings(s: &Sysfs) -> Result<Vec<(String, Option<u64>)>> {
    let mut out: Vec<(String, Option<u64>)> = Vec::new();
    if s.check_loaded().is_err() {
        return Ok(out);
    }
    for id in s.ids()? {
        if let Some(cg) = s.read_attr(id, "cgroup")?.filter(|c| !c.is_empty()) {
            if !out.iter().any(|(c, _)| *c == cg) {
                let depth = cg.split('/').filter(|p| !p.is_empty()).count();
                let cid = if depth > MAX_LEVEL {
                    None
                } else {
                    cgroup_id(s, &cg)
                };
                out.push((cg, cid));
            }
        }
    }
    Ok(out)
}

/// What a sync did and left.
#[derive(Debug, Default)]
pub struct Synced {
    /// Bound cgroups the guard covers.
    pub guarded: Vec<String>,
    /// Bound cgroups it cannot cover (missing, or deeper than
    /// [`MAX_LEVEL`]): `vgpuctl guard sync` once they exist.
    pub unguarded: Vec<String>,
}

fn sync_locked(s: &Sysfs, map: &OwnedFd) -> Result<Synced> {
    let want = bindings(s)?;
    let ids: Vec<u64> = want.iter().filter_map(|(_, i)| *i).collect();
    let e = |e| guard_err("updating the guard's map", e);
    for &id in &ids {
        map_update(map, id).map_err(e)?;
    }
    for k in map_keys(map).map_err(e)? {
        if !ids.contains(&k) {
            map_delete(map, k).map_err(e)?;
        }
    }
    let mut out = Synced::default();
    for (cg, id) in want {
        if id.is_some() {
            out.guarded.push(cg);
        } else {
            out.unguarded.push(cg);
        }
    }
    Ok(out)
}

/// Runs `write`, a write of `value` to a vGPU's `cgroup`, with the guard's
/// map following it: the new cgroup enters the map before the bind (no
/// moment where it is bound and unguarded), and the map is rebuilt from
/// sysfs after. Without the guard loaded it is just `write`.
pub fn follow(s: &Sysfs, value: &str, write: impl FnOnce() -> Result<()>) -> Result<()> {
    if s.is_simulated() || !pin_dir(s).join(MAP_PIN).exists() {
        return write();
    }
    let Some(map) = pinned_map(s) else {
        return write();
    };
    let _lock = lock(s)?;
    let value = value.trim();
    if !value.is_empty() {
        if let Some(id) = cgroup_id(s, value) {
            map_update(&map, id).map_err(|e| guard_err("updating the guard's map", e))?;
        }
    }
    let r = write();
    let synced = sync_locked(s, &map);
    r?;
    synced.map(|_| ())
}

/// After a vGPU is removed: its binding leaves the map.
pub fn after_remove(s: &Sysfs) -> Result<()> {
    if s.is_simulated() {
        return Ok(());
    }
    let Some(map) = pinned_map(s) else {
        return Ok(());
    };
    let _lock = lock(s)?;
    sync_locked(s, &map).map(|_| ())
}

fn load_program(facts: &KernelFacts, map: &OwnedFd) -> Result<OwnedFd> {
    let insns: Vec<u64> = program(facts, map.as_raw_fd())
        .iter()
        .map(|i| i.0)
        .collect();
    let license = c"GPL";
    let mut log = vec![0u8; 1 << 20];
    // union bpf_attr for BPF_PROG_LOAD, as u64 words (offsets in bytes):
    // 0 prog_type|insn_cnt, 8 insns, 16 license, 24 log_level|log_size,
    // 32 log_buf, 40 kern_version|prog_flags, 48..64 prog_name,
    // 64 prog_ifindex|expected_attach_type, ... 104 line_info_cnt|
    // attach_btf_id, 112 attach_btf_obj_fd (0: vmlinux).
    let mut attr = |verbose: bool| {
        let mut a = [0u64; 16];
        a[0] = u64::from(BPF_PROG_TYPE_LSM) | (insns.len() as u64) << 32;
        a[1] = insns.as_ptr() as u64;
        a[2] = license.as_ptr() as u64;
        if verbose {
            a[3] = 1 | (log.len() as u64) << 32;
            a[4] = log.as_mut_ptr() as u64;
        }
        a[6] = u64::from_le_bytes(*b"vgpu_gua");
        a[7] = u64::from_le_bytes(*b"rd\0\0\0\0\0\0");
        a[8] = u64::from(BPF_LSM_MAC) << 32;
        a[13] = u64::from(facts.attach_btf_id) << 32;
        a
    };
    // Quietly first: a verifier log that overflows fails the load.
    if let Ok(fd) = bpf(BPF_PROG_LOAD, &mut attr(false)) {
        return Ok(fd_of(fd));
    }
    match bpf(BPF_PROG_LOAD, &mut attr(true)) {
        Ok(fd) => Ok(fd_of(fd)),
        Err(e) => {
            let end = log.iter().position(|&c| c == 0).unwrap_or(log.len());
            let text = String::from_utf8_lossy(&log[..end]);
            let tail: Vec<&str> = text.lines().rev().take(6).collect();
            Err(Error::Guard(format!(
                "the kernel refused the guard program: {e}; verifier: {}",
                tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
            )))
        }
    }
}

/// The guard's state, for `vgpuctl guard status`.
fn report(s: &Sysfs, verb: &str) -> Result<crate::commands::Output> {
    let avail = availability(s.root());
    let on = loaded(s);
    let synced = match (on, pinned_map(s)) {
        (true, Some(map)) => {
            let _lock = lock(s)?;
            // Status reads; it does not change the map.
            let want = bindings(s)?;
            let mut syn = Synced::default();
            for (cg, id) in want {
                if id.is_some_and(|i| map_has(&map, i)) {
                    syn.guarded.push(cg);
                } else {
                    syn.unguarded.push(cg);
                }
            }
            Some(syn)
        }
        _ => None,
    };
    let mut human = String::new();
    let state = match (&avail, on) {
        (_, true) => "loaded",
        (Availability::Available, false) => "not loaded",
        (Availability::Unavailable(_), false) => "unavailable",
    };
    human.push_str(&format!("guard: {state}"));
    if !verb.is_empty() {
        human.push_str(&format!(" ({verb})"));
    }
    human.push('\n');
    if let Availability::Unavailable(why) = &avail {
        human.push_str(&format!("  why: {why}\n"));
    }
    let mut warnings = Vec::new();
    if let Some(syn) = &synced {
        for cg in &syn.guarded {
            human.push_str(&format!("  guarded: {cg}\n"));
        }
        for cg in &syn.unguarded {
            human.push_str(&format!("  UNGUARDED: {cg}\n"));
            warnings.push(format!(
                "bound cgroup {cg} is not guarded (missing, or deeper than {MAX_LEVEL} levels): run `vgpuctl guard sync` once it exists"
            ));
        }
    }
    let json: Value = json!({
        "state": state,
        "why": match &avail { Availability::Unavailable(w) => Value::from(w.clone()), _ => Value::Null },
        "guarded": synced.as_ref().map(|s| s.guarded.clone()),
        "unguarded": synced.as_ref().map(|s| s.unguarded.clone()),
    });
    Ok(crate::commands::Output {
        human,
        json,
        warnings,
    })
}

/// `vgpuctl guard status`.
pub fn status(s: &Sysfs) -> Result<crate::commands::Output> {
    report(s, "")
}

/// `vgpuctl guard load`: attach the program (unless it is), then rebuild
/// the map from sysfs.
pub fn load(s: &Sysfs) -> Result<crate::commands::Output> {
    if let Availability::Unavailable(why) = availability(s.root()) {
        return Err(Error::Guard(format!("the guard is unavailable: {why}")));
    }
    ensure_bpffs(s)?;
    let dir = pin_dir(s);
    if !dir.is_dir() {
        fs::create_dir_all(&dir).map_err(io_err(&dir))?;
        fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .map_err(io_err(&dir))?;
    }
    let _lock = lock(s)?;
    let map_path = dir.join(MAP_PIN);
    let map = match obj_get(&map_path) {
        Ok(m) => m,
        Err(_) => {
            let mut a = [0u64; 6];
            a[0] = u64::from(BPF_MAP_TYPE_HASH) | 8 << 32;
            a[1] = 8 | u64::from(MAX_ENTRIES) << 32;
            a[3] = u64::from_le_bytes(*b"\0\0\0\0vgpu");
            a[4] = u64::from_le_bytes(*b"_bound\0\0");
            let m = bpf(BPF_MAP_CREATE, &mut a)
                .map(fd_of)
                .map_err(|e| guard_err("creating the guard's map", e))?;
            obj_pin(&m, &map_path)?;
            m
        }
    };
    // The map is filled before the program sees it.
    sync_locked(s, &map)?;
    let link_path = dir.join(LINK_PIN);
    let verb = if obj_get(&link_path).is_ok() {
        "already attached; map re-synced"
    } else {
        let btf_path = s.root().join("kernel/btf/vmlinux");
        let data = fs::read(&btf_path).map_err(io_err(&btf_path))?;
        let facts = kernel_facts(&data).map_err(Error::Guard)?;
        let prog = load_program(&facts, &map)?;
        let mut a = [0u64; 3];
        a[1] = prog.as_raw_fd() as u32 as u64;
        let link = bpf(BPF_RAW_TRACEPOINT_OPEN, &mut a)
            .map(fd_of)
            .map_err(|e| match e.raw_os_error() {
                // x86's BPF trampoline patches the hook's ftrace entry
                // (a 5-byte nop made by the function tracer); without
                // one the patch finds other bytes there: EBUSY.
                Some(libc::EBUSY) => guard_err(
                    "attaching the guard to file_receive (the kernel's functions have no ftrace entry to attach at: CONFIG_FUNCTION_TRACER=y is needed)",
                    e,
                ),
                _ => guard_err("attaching the guard to file_receive", e),
            })?;
        obj_pin(&link, &link_path)?;
        "attached"
    };
    drop(_lock);
    report(s, verb)
}

/// `vgpuctl guard sync`: rebuild the map from sysfs.
pub fn sync(s: &Sysfs) -> Result<crate::commands::Output> {
    let Some(map) = pinned_map(s) else {
        return Err(Error::Guard(
            "the guard is not loaded (`vgpuctl guard load`)".into(),
        ));
    };
    {
        let _lock = lock(s)?;
        sync_locked(s, &map)?;
    }
    report(s, "map re-synced")
}

/// `vgpuctl guard unload`: detach the program (unpinning its link drops
/// the last reference) and drop the map.
pub fn unload(s: &Sysfs) -> Result<crate::commands::Output> {
    let dir = pin_dir(s);
    for name in [LINK_PIN, MAP_PIN] {
        let p = dir.join(name);
        match fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err(&p)(e)),
        }
    }
    report(s, "detached")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_from_the_running_kernel() {
        // The build machine's kernel: its BTF, if it has one.
        let Ok(data) =
            fs::read(std::env::var("VGPU_TEST_BTF").unwrap_or("/sys/kernel/btf/vmlinux".into()))
        else {
            return;
        };
        let f = kernel_facts(&data).expect("facts");
        eprintln!("{f:?}");
        assert!(f.attach_btf_id > 0);
        // f_op sits in struct file's first cache line on every kernel with
        // BTF; module.name after list and state.
        assert!(f.file_f_op < 64 && f.file_f_op.is_multiple_of(8), "{f:?}");
        assert!(f.fops_owner < 16, "{f:?}");
        assert!((16..64).contains(&f.module_name), "{f:?}");
    }

    #[test]
    fn bad_btf_is_an_error() {
        assert!(kernel_facts(b"nope").is_err());
        assert!(kernel_facts(&[0x9f, 0xeb, 1, 0, 24, 0, 0, 0]).is_err());
    }

    #[test]
    fn jumps_land_inside_the_program() {
        let f = KernelFacts {
            attach_btf_id: 1,
            file_f_op: 16,
            fops_owner: 0,
            module_name: 24,
        };
        let p = program(&f, 3);
        let last = p.len() as i64;
        for (at, i) in p.iter().enumerate() {
            let code = i.0 as u8;
            if code & 0x07 == 0x05 && code != 0x85 && code != 0x95 {
                let off = (i.0 >> 16) as u16 as i16 as i64;
                let to = at as i64 + 1 + off;
                assert!((0..last).contains(&to), "insn {at} jumps to {to}");
            }
        }
        // Ends with the two exits: allow (0) and deny (-EPERM).
        assert_eq!(p[p.len() - 1].0 as u8, 0x95);
        assert_eq!((p[p.len() - 2].0 >> 32) as i32, -libc::EPERM);
    }

    #[test]
    fn availability_reads_the_lsm_list() {
        let d = tempfile::tempdir().unwrap();
        assert!(
            matches!(availability(d.path()), Availability::Unavailable(w) if w.contains("CONFIG_SECURITY"))
        );
        fs::create_dir_all(d.path().join("kernel/security")).unwrap();
        fs::write(
            d.path().join("kernel/security/lsm"),
            "lockdown,capability,landlock\n",
        )
        .unwrap();
        assert!(
            matches!(availability(d.path()), Availability::Unavailable(w) if w.contains("not active"))
        );
        fs::write(d.path().join("kernel/security/lsm"), "capability,bpf\n").unwrap();
        assert!(
            matches!(availability(d.path()), Availability::Unavailable(w) if w.contains("BTF"))
        );
        fs::create_dir_all(d.path().join("kernel/btf")).unwrap();
        fs::write(d.path().join("kernel/btf/vmlinux"), "").unwrap();
        assert_eq!(availability(d.path()), Availability::Available);
    }
}
