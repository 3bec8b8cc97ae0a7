// SPDX-License-Identifier: GPL-2.0

//! Writes `vgpu-dra-plugin.1`, generated from the plugin's command line
//! (`cli::Args`).
//!
//! `dra-mangen OUTDIR` (built by scripts/build-userspace.sh, run by
//! scripts/package.sh).

use std::path::PathBuf;

use clap::CommandFactory;

fn main() -> std::io::Result<()> {
    let out = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| ".".into()));
    std::fs::create_dir_all(&out)?;
    clap_mangen::generate_to(vgpu_dra::cli::Args::command(), &out)
}
