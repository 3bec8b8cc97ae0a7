// SPDX-License-Identifier: GPL-2.0

//! Safe wrappers over kernel APIs that Rust-for-Linux does not wrap yet.
//!
//! This is the only place in vgpu that calls raw `bindings`; every `unsafe`
//! block here carries a `// SAFETY:` argument, and the rest of the module uses
//! these types through safe interfaces only.
//!
//! The driver double (`selftests/nvidia/`) builds these same files into its
//! own crate; each crate uses a subset, so unused items are allowed there.
//!
//! `rmops.rs` wraps the driver's kernel-client interface; it makes vgpu.ko
//! depend on `nvidia.ko` (`nvidia_get_rm_ops`). Its KUnit tests run in
//! `selftests/kclient_test/` against the driver double.

pub(crate) mod bounce;
pub(crate) mod cgroup;
pub(crate) mod chrdev;
pub(crate) mod class;
pub(crate) mod fdtable;
pub(crate) mod kthread;
pub(crate) mod mm;
pub(crate) mod random;
pub(crate) mod realfile;
pub(crate) mod rmops;
pub(crate) mod sysfs;
pub(crate) mod user;
