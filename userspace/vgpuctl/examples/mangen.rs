// SPDX-License-Identifier: GPL-2.0

//! Writes vgpuctl's man pages, generated from its command line definition
//! (`cli::Cli`): `vgpuctl.1` and one `vgpuctl-SUBCOMMAND.1` per subcommand.
//!
//! `cargo run -p vgpuctl --example mangen -- OUTDIR` (scripts/package.sh).

use std::path::PathBuf;

use clap::CommandFactory;

fn main() -> std::io::Result<()> {
    let out = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| ".".into()));
    std::fs::create_dir_all(&out)?;
    let cmd = vgpuctl::cli::Cli::command();
    clap_mangen::generate_to(cmd, &out)
}
