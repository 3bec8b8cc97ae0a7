// SPDX-License-Identifier: GPL-2.0

//! The uapi constants (src/uapi.rs): they agree with what the module does
//! (src/config.rs, src/vgpus.rs, src/vgpu_main.rs), and the C header
//! include/vgpu.h is current (regenerated with scripts/gen-uapi.sh and
//! compared) and compiles.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use vgpu_logic::config::{self, ParseError, CGROUP_PATH_MAX};
use vgpu_logic::uapi::*;

const VGPUS_RS: &str = include_str!("../../../src/vgpus.rs");
const MAIN_RS: &str = include_str!("../../../src/vgpu_main.rs");
/// `/sys/class/vgpu/gpuK/` files live with the scheduler (`src/sched/files.rs`).
const SCHED_RS: &str = include_str!("../../../src/sched/files.rs");
const UAPI_RS: &str = include_str!("../../../src/uapi.rs");

fn top() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A constant as the header writes it.
trait CValue {
    fn c(&self) -> String;
}

impl CValue for &str {
    fn c(&self) -> String {
        format!("\"{self}\"")
    }
}

impl CValue for u32 {
    fn c(&self) -> String {
        self.to_string()
    }
}

impl CValue for usize {
    fn c(&self) -> String {
        self.to_string()
    }
}

macro_rules! table {
    ($($name:ident),* $(,)?) => {
        vec![$((stringify!($name), CValue::c(&$name))),*]
    };
}

/// Every constant of src/uapi.rs with its C value.
fn constants() -> Vec<(&'static str, String)> {
    table![
        VGPU_SYSFS_CLASS,
        VGPU_SYSFS_CREATE,
        VGPU_SYSFS_REMOVE,
        VGPU_SYSFS_DIR_PREFIX,
        VGPU_ATTR_GPU,
        VGPU_ATTR_MEMORY_LIMIT,
        VGPU_ATTR_MEMORY_USED,
        VGPU_ATTR_CGROUP,
        VGPU_ATTR_USERS,
        VGPU_MEMORY_MAX,
        VGPU_MAX_ID,
        VGPU_GPU_MAX_INDEX,
        VGPU_CGROUP_PATH_MAX,
        VGPU_DEV_PREFIX,
        VGPU_CTL_DEV,
        VGPU_ATTR_MEMORY_REFUSED,
        VGPU_ATTR_MEMORY_MANAGED,
        VGPU_UVM_DEV,
        VGPU_ATTR_COMPUTE_SHARE,
        VGPU_ATTR_COMPUTE_GRANTED_US,
        VGPU_ATTR_COMPUTE_THROTTLED_US,
        VGPU_ATTR_COMPUTE_TSGS,
        VGPU_ATTR_COMPUTE_PRIORITY,
        VGPU_ATTR_COMPUTE_FROZEN,
        VGPU_ATTR_COMPUTE_BUSY_US,
        VGPU_ATTR_PROCESSES,
        VGPU_COMPUTE_PRIORITY_MIN,
        VGPU_COMPUTE_PRIORITY_MAX,
        VGPU_COMPUTE_PRIORITY_DEFAULT,
        VGPU_COMPUTE_SHARE_MAX,
        VGPU_SYSFS_GPU_DIR_PREFIX,
        VGPU_GPU_ATTR_COMPUTE_POLICY,
        VGPU_GPU_ATTR_COMPUTE_PERIOD_US,
        VGPU_COMPUTE_POLICY_FIXED,
        VGPU_COMPUTE_POLICY_WORK_CONSERVING,
        VGPU_COMPUTE_PERIOD_US_MIN,
        VGPU_COMPUTE_PERIOD_US_MAX,
        VGPU_COMPUTE_PERIOD_US_DEFAULT,
    ]
}

/// The number in `const NAME: TYPE = N;` in `src`.
fn const_in(src: &str, decl: &str) -> u64 {
    let line = src
        .lines()
        .find(|l| l.contains(decl))
        .unwrap_or_else(|| panic!("no {decl:?}"));
    let v = line.split('=').nth(1).unwrap().trim().trim_end_matches(';');
    v.parse().unwrap_or_else(|_| panic!("{line:?}"))
}

#[test]
fn numbers_agree_with_the_module() {
    assert_eq!(VGPU_MAX_ID, 254);
    assert_eq!(
        u64::from(VGPU_MAX_ID),
        const_in(VGPUS_RS, "const MAX_VGPU: u32 =")
    );
    assert_eq!(VGPU_CGROUP_PATH_MAX, CGROUP_PATH_MAX);
    assert_eq!(VGPU_CGROUP_PATH_MAX, 4095);
    // The module's parsers draw the lines where the constants say.
    let id = |n: u32| config::parse_index(n.to_string().as_bytes(), VGPU_MAX_ID);
    assert_eq!(id(VGPU_MAX_ID), Ok(VGPU_MAX_ID));
    assert_eq!(id(VGPU_MAX_ID + 1), Err(ParseError::Range));
    assert!(VGPUS_RS.contains(&format!("config::parse_index(input, {VGPU_GPU_MAX_INDEX})")));
    let path = |len: usize| {
        let mut p = vec![b'/'];
        p.resize(len, b'a');
        config::parse_cgroup_path(&p).map(<[u8]>::len)
    };
    assert_eq!(path(VGPU_CGROUP_PATH_MAX), Ok(VGPU_CGROUP_PATH_MAX));
    assert_eq!(path(VGPU_CGROUP_PATH_MAX + 1), Err(ParseError::Range));
    assert_eq!(
        config::parse_limit(VGPU_MEMORY_MAX.as_bytes()),
        Ok(u64::MAX)
    );
    // Compute: the same numbers as the scheduler's.
    use vgpu_logic::compute;
    assert_eq!(VGPU_COMPUTE_SHARE_MAX, u32::from(compute::DEFAULT_SHARE));
    let share = |n: u32| compute::parse_share(n.to_string().as_bytes());
    assert_eq!(share(VGPU_COMPUTE_SHARE_MAX), Ok(100));
    assert_eq!(share(VGPU_COMPUTE_SHARE_MAX + 1), Err(ParseError::Range));
    assert_eq!(VGPU_COMPUTE_PRIORITY_MIN, u32::from(compute::MIN_PRIORITY));
    assert_eq!(VGPU_COMPUTE_PRIORITY_MAX, u32::from(compute::MAX_PRIORITY));
    assert_eq!(
        VGPU_COMPUTE_PRIORITY_DEFAULT,
        u32::from(compute::DEFAULT_PRIORITY)
    );
    let prio = |n: u32| compute::parse_priority(n.to_string().as_bytes());
    assert_eq!(prio(VGPU_COMPUTE_PRIORITY_MIN), Ok(0));
    assert_eq!(prio(VGPU_COMPUTE_PRIORITY_MAX + 1), Err(ParseError::Range));
    assert_eq!(VGPU_COMPUTE_PERIOD_US_MIN, compute::MIN_PERIOD_US);
    assert_eq!(VGPU_COMPUTE_PERIOD_US_MAX, compute::MAX_PERIOD_US);
    assert_eq!(VGPU_COMPUTE_PERIOD_US_DEFAULT, compute::DEFAULT_PERIOD_US);
    assert_eq!(
        compute::parse_policy(VGPU_COMPUTE_POLICY_FIXED.as_bytes()),
        Ok(compute::Policy::Fixed)
    );
    assert_eq!(
        compute::parse_policy(VGPU_COMPUTE_POLICY_WORK_CONSERVING.as_bytes()),
        Ok(compute::Policy::WorkConserving)
    );
}

#[test]
fn names_agree_with_the_module() {
    for f in [
        VGPU_SYSFS_CREATE,
        VGPU_SYSFS_REMOVE,
        VGPU_ATTR_GPU,
        VGPU_ATTR_MEMORY_LIMIT,
        VGPU_ATTR_MEMORY_USED,
        VGPU_ATTR_CGROUP,
        VGPU_ATTR_USERS,
        VGPU_ATTR_MEMORY_REFUSED,
        VGPU_ATTR_MEMORY_MANAGED,
        VGPU_ATTR_COMPUTE_SHARE,
        VGPU_ATTR_COMPUTE_GRANTED_US,
        VGPU_ATTR_COMPUTE_THROTTLED_US,
        VGPU_ATTR_COMPUTE_TSGS,
        VGPU_ATTR_COMPUTE_PRIORITY,
        VGPU_ATTR_COMPUTE_FROZEN,
        VGPU_ATTR_COMPUTE_BUSY_US,
        VGPU_ATTR_PROCESSES,
        VGPU_GPU_ATTR_COMPUTE_POLICY,
        VGPU_GPU_ATTR_COMPUTE_PERIOD_US,
    ] {
        let decl = format!("name: c\"{f}\"");
        assert!(
            [VGPUS_RS, MAIN_RS, SCHED_RS]
                .iter()
                .any(|s| s.contains(&decl)),
            "{f}"
        );
    }
    assert!(MAIN_RS.contains(&format!("fmt!(\"{VGPU_SYSFS_GPU_DIR_PREFIX}{{}}\"")));
    // The class, the per-vGPU directory and nodes, /dev/vgpuctl.
    assert_eq!(VGPU_SYSFS_CLASS, "/sys/class/vgpu");
    assert!(MAIN_RS.contains("Class::new(c\"vgpu\")"));
    assert!(VGPUS_RS.contains(&format!("\"{VGPU_SYSFS_DIR_PREFIX}{{id}}\"")));
    assert_eq!(VGPU_DEV_PREFIX, format!("/dev/{VGPU_SYSFS_DIR_PREFIX}"));
    let ctl = VGPU_CTL_DEV.strip_prefix("/dev/").unwrap();
    assert!(MAIN_RS.contains(&format!("c\"{ctl}\"")));
}

/// `#define NAME VALUE` lines of a header.
fn defines(h: &str) -> BTreeMap<String, String> {
    h.lines()
        .filter_map(|l| l.strip_prefix("#define "))
        .filter_map(|l| l.split_once(' '))
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

#[test]
fn header_has_every_constant() {
    let h = std::fs::read_to_string(top().join("include/vgpu.h")).unwrap();
    let d = defines(&h);
    let table = constants();
    for (name, value) in &table {
        assert_eq!(d.get(*name), Some(value), "{name} in include/vgpu.h");
    }
    // The table above lists them all (a new constant must be added there).
    let in_source = UAPI_RS
        .lines()
        .filter(|l| l.starts_with("pub const "))
        .count();
    assert_eq!(table.len(), in_source);
    // Nothing else (the include guard has no value).
    assert_eq!(d.len(), table.len());
    assert!(h.contains("#ifndef VGPU_UAPI_H\n#define VGPU_UAPI_H\n"));
}

/// A scratch directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let p = std::env::temp_dir().join(format!("vgpu-uapi-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Scratch(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Fails if include/vgpu.h is not what scripts/gen-uapi.sh makes now (it
/// needs cbindgen, which scripts/setup-toolchain.sh installs).
#[test]
fn header_is_current() {
    let dir = Scratch::new("gen");
    let fresh = dir.0.join("vgpu.h");
    let o = Command::new("bash")
        .arg(top().join("scripts/gen-uapi.sh"))
        .arg(&fresh)
        .output()
        .expect("running bash");
    assert!(
        o.status.success(),
        "scripts/gen-uapi.sh failed (is cbindgen installed? scripts/setup-toolchain.sh installs it):\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let fresh = std::fs::read_to_string(&fresh).unwrap();
    let committed = std::fs::read_to_string(top().join("include/vgpu.h")).unwrap();
    if fresh != committed {
        let diff = Command::new("diff")
            .arg("-u")
            .arg(top().join("include/vgpu.h"))
            .arg(dir.0.join("vgpu.h"))
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        panic!("include/vgpu.h is stale: run scripts/gen-uapi.sh and commit it\n{diff}");
    }
}

/// The header compiles as C (with every warning an error) and its values
/// are what Rust has, where C can check them at compile time.
#[test]
fn header_compiles() {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    // No compiler is a failure, not a pass: the toolchain set-up installs one.
    assert!(
        Command::new(&cc).arg("--version").output().is_ok(),
        "no C compiler ({cc}): cannot compile include/vgpu.h"
    );
    let dir = Scratch::new("cc");
    let mut c = String::from("#include \"vgpu.h\"\n#include \"vgpu.h\" /* guarded */\n");
    for (name, value) in constants() {
        if let Some(s) = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
            c.push_str(&format!(
                "_Static_assert(sizeof({name}) == {}, \"{name}\");\n",
                s.len() + 1
            ));
        } else {
            c.push_str(&format!("_Static_assert({name} == {value}, \"{name}\");\n"));
        }
    }
    c.push_str("static const char *const paths[] = { VGPU_SYSFS_CLASS \"/\" VGPU_SYSFS_DIR_PREFIX \"0/\" VGPU_ATTR_MEMORY_LIMIT };\n");
    c.push_str("int main(void) { return paths[0][0] != '/'; }\n");
    let file = dir.0.join("t.c");
    std::fs::write(&file, c).unwrap();
    for std in ["-std=c11", "-std=gnu17"] {
        let o = Command::new(&cc)
            .args([
                "-fsyntax-only",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-pedantic",
                std,
            ])
            .arg("-I")
            .arg(top().join("include"))
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{cc} {std}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}
