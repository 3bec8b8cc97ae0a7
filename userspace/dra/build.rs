// SPDX-License-Identifier: GPL-2.0

//! Generates the gRPC code of the kubelet's DRA and registration services
//! from `proto/` (protoc comes from Debian's protobuf-compiler, installed
//! by scripts/setup-toolchain.sh).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protos = ["proto/dra-v1.proto", "proto/pluginregistration-v1.proto"];
    for p in protos {
        println!("cargo:rerun-if-changed={p}");
    }
    tonic_prost_build::configure().compile_protos(&protos, &["proto"])?;
    Ok(())
}
