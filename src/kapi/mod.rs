// SPDX-License-Identifier: GPL-2.0

//! Safe wrappers over kernel APIs that Rust-for-Linux does not wrap yet.
//!
//! This is the only place in vgpu that calls raw `bindings`; every `unsafe`
//! block here carries a `// SAFETY:` argument, every type that holds a raw
//! pointer states its `# Invariants`, and the rest of the module uses these
//! types through safe interfaces only. Where the kernel crate has a type
//! (`ARef<File>`, `ARef<Task>`, `ARef<Mm>`, `MmWithUser`, `current!()`) the
//! wrappers use it; what Rust cannot do yet is in the C units of `src/c/`,
//! one per concern (`docs/design-notes.md`, "Kernel facilities in C").
//!
//! Rust reads `task_struct` fields (through the kernel crate and [`task`]);
//! [`task::check_layout`] refuses to load vgpu on a kernel whose bindgen
//! layout of it is not the C compiler's.
//!
//! The driver double (`selftests/nvidia/`) builds these same files into its
//! own crate; each crate uses a subset, so unused items are allowed there.
//!
//! `rmops.rs` wraps the driver's kernel-client interface; it makes vgpu.ko
//! depend on `nvidia.ko` (`nvidia_get_rm_ops`). Its KUnit tests run in
//! `selftests/kclient_test/` against the driver double.

pub(crate) mod bounce;
pub(crate) mod cdevhook;
pub(crate) mod cgroup;
pub(crate) mod chrdev;
pub(crate) mod class;
pub(crate) mod fdtable;
pub(crate) mod inject;
pub(crate) mod kthread;
pub(crate) mod mm;
pub(crate) mod pid;
pub(crate) mod random;
pub(crate) mod realfile;
pub(crate) mod rmops;
pub(crate) mod sysfs;
pub(crate) mod task;
pub(crate) mod user;
pub(crate) mod userd;
