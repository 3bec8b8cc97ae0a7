// SPDX-License-Identifier: GPL-2.0

//! Helpers for running the `vgpuctl` binary against a simulated module.

#![allow(dead_code)]

pub mod schema;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use tempfile::TempDir;

use vgpuctl::sysfs::sim;

/// A fake sysfs (and /dev) under a temporary directory.
pub struct Fake {
    /// Keeps the directory alive.
    pub dir: TempDir,
}

/// What a run printed and returned.
pub struct Run {
    /// Exit status.
    pub code: i32,
    /// Standard output.
    pub out: String,
    /// Standard error.
    pub err: String,
}

impl Run {
    /// stdout as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.out).unwrap_or_else(|e| panic!("{e}: {}", self.out))
    }
}

pub const GIB: u64 = 1 << 30;

impl Fake {
    /// A loaded module with `gpus` GPUs of `gib` GiB each (listed in
    /// `class/vgpu/gpus`); `compute`: the module has compute shares.
    pub fn new(gpus: u32, gib: Option<u64>, compute: bool) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let list: Vec<(u32, Option<u64>)> = (0..gpus).map(|i| (i, gib.map(|g| g * GIB))).collect();
        sim::init_tree(&dir.path().join("sys"), Some(&list), compute).unwrap();
        fs::create_dir(dir.path().join("dev")).unwrap();
        Fake { dir }
    }

    /// A loaded module that does not list its GPUs; `/dev/nvidia0..gpus`.
    pub fn without_gpu_list(gpus: u32) -> Self {
        let dir = tempfile::tempdir().unwrap();
        sim::init_tree(&dir.path().join("sys"), None, false).unwrap();
        fs::create_dir(dir.path().join("dev")).unwrap();
        for i in 0..gpus {
            fs::write(dir.path().join("dev").join(format!("nvidia{i}")), "").unwrap();
        }
        fs::write(dir.path().join("dev/nvidiactl"), "").unwrap();
        Fake { dir }
    }

    /// A loaded module with compute shares as vgpu.ko has them: no
    /// `class/vgpu/gpus`, a `gpuK/` per GPU in `gpus`, and `/dev/nvidiaK`
    /// for `0..nodes`.
    pub fn like_module(gpus: &[u32], nodes: u32) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let sys = dir.path().join("sys");
        sim::init_tree(&sys, None, true).unwrap();
        for &k in gpus {
            sim::add_gpu(&sys, k).unwrap();
        }
        fs::create_dir(dir.path().join("dev")).unwrap();
        for i in 0..nodes {
            fs::write(dir.path().join("dev").join(format!("nvidia{i}")), "").unwrap();
        }
        Fake { dir }
    }

    /// No module: an empty sysfs.
    pub fn unloaded() -> Self {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("sys/class")).unwrap();
        Fake { dir }
    }

    pub fn sys(&self) -> PathBuf {
        self.dir.path().join("sys")
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn vgpu_dir(&self, id: u32) -> PathBuf {
        self.sys().join(format!("class/vgpu/vgpu{id}"))
    }

    pub fn gpu_dir(&self, k: u32) -> PathBuf {
        self.sys().join(format!("class/vgpu/gpu{k}"))
    }

    /// Setting `name` of GPU `k` (`gpuK/NAME`).
    pub fn gpu_attr(&self, k: u32, name: &str) -> String {
        fs::read_to_string(self.gpu_dir(k).join(name))
            .unwrap()
            .trim_end()
            .to_string()
    }

    /// Writes a vGPU file directly, as the module would change a counter.
    pub fn put(&self, id: u32, name: &str, value: &str) {
        fs::write(self.vgpu_dir(id).join(name), format!("{value}\n")).unwrap();
    }

    /// The vGPU directories present.
    pub fn vgpus(&self) -> Vec<u32> {
        vgpuctl::sysfs::Sysfs::new(self.sys()).ids().unwrap()
    }

    pub fn attr(&self, id: u32, name: &str) -> String {
        fs::read_to_string(self.vgpu_dir(id).join(name))
            .unwrap()
            .trim_end()
            .to_string()
    }

    pub fn fail(&self, name: &str, errno: &str) {
        sim::inject_failure(&self.sys(), name, errno).unwrap();
    }

    pub fn set_users(&self, id: u32, n: u32) {
        sim::set_users(&self.sys(), id, n).unwrap();
    }

    /// A command for the binary against this tree, as root.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_vgpuctl"));
        c.args(args)
            .env("VGPU_SYSFS_ROOT", self.sys())
            .env("VGPU_DEV_ROOT", self.path().join("dev"))
            .env("VGPUCTL_SIMULATE", "1")
            .env("VGPUCTL_EUID", "0")
            .env_remove("VGPU_GPU_MEMORY");
        c
    }

    /// Runs the binary with `args`.
    pub fn run(&self, args: &[&str]) -> Run {
        run(self.cmd(args))
    }

    /// Runs it as a user other than root.
    pub fn run_as_user(&self, args: &[&str]) -> Run {
        let mut c = self.cmd(args);
        c.env("VGPUCTL_EUID", "1000");
        run(c)
    }

    /// Runs and expects success.
    pub fn ok(&self, args: &[&str]) -> Run {
        let r = self.run(args);
        assert_eq!(r.code, 0, "{args:?}: {}{}", r.out, r.err);
        r
    }
}

pub fn run(c: Command) -> Run {
    run_with_input(c, "")
}

/// Runs `c` with `input` on its standard input.
pub fn run_with_input(mut c: Command, input: &str) -> Run {
    use std::io::Write;
    use std::process::Stdio;
    c.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    Run {
        code: o.status.code().unwrap_or(-1),
        out: String::from_utf8(o.stdout).unwrap(),
        err: String::from_utf8(o.stderr).unwrap(),
    }
}
