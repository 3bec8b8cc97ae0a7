// SPDX-License-Identifier: GPL-2.0

//! Prints the conformance probe (a C program) on standard output:
//! `scripts/conformance.sh` compiles it against a release's headers. It
//! asks for every expression of every release's table
//! (`vgpu_conformance::probe_table`).

fn main() {
    print!(
        "{}",
        vgpu_conformance::probe_source(&vgpu_conformance::probe_table())
    );
}
