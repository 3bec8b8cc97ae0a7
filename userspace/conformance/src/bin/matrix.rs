// SPDX-License-Identifier: GPL-2.0

//! Prints the generated part of `docs/driver-branches.md` (what differs in
//! each supported branch's newest release from the release vgpu's tables
//! are written for), from the facts files.

fn main() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/facts");
    let read = |rel: &str, ext: &str| {
        std::fs::read_to_string(format!("{dir}/{rel}.{ext}"))
            .unwrap_or_else(|e| panic!("{dir}/{rel}.{ext}: {e}"))
    };
    match vgpu_conformance::support_matrix(&vgpu_conformance::table(), read) {
        Ok(s) => print!("{s}"),
        Err(e) => {
            eprintln!("matrix: {e}");
            std::process::exit(1);
        }
    }
}
