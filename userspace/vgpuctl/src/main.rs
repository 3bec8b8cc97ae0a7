// SPDX-License-Identifier: GPL-2.0

//! `vgpuctl`: see `docs/vgpuctl.md`.

use std::process::ExitCode;

use clap::Parser;

use vgpuctl::cli::Cli;
use vgpuctl::{commands, open_sysfs, Result, SIMULATE_ENV};

fn run(cli: &Cli) -> Result<commands::Output> {
    let simulate = std::env::var(SIMULATE_ENV).is_ok_and(|v| v == "1");
    let s = open_sysfs(&cli.sysfs_root, simulate)?;
    commands::run(cli, &s)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli) {
        Ok(out) => {
            for w in &out.warnings {
                eprintln!("vgpuctl: warning: {w}");
            }
            if cli.json {
                match serde_json::to_string_pretty(&out.json) {
                    Ok(s) => println!("{s}"),
                    Err(e) => {
                        eprintln!("vgpuctl: JSON: {e}");
                        return ExitCode::FAILURE;
                    }
                }
            } else {
                print!("{}", out.human);
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("vgpuctl: {e}");
            ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(1))
        }
    }
}
