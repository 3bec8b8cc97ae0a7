// SPDX-License-Identifier: GPL-2.0

//! The DaemonSet's image (`make image`, scripts/image.sh) in the VM's
//! podman: loaded from its OCI archive (nothing pulled), its programs
//! start, and the plugin, run from the image the way the DaemonSet runs it
//! (privileged, the host's /sys and /dev, the kubelet's directories at the
//! same paths), registers with the test kubelet, publishes its slice,
//! prepares and unprepares a claim, and unregisters on `podman stop`. The
//! exporter reads the vGPUs as the DaemonSet's second container does:
//! user 65534, no capabilities, a read-only root.

use std::process::Command;

use crate::dra::{call, check_slice, path, put_claim, register, vgpus, with_node, CLAIM_UID, GIB};
use crate::ensure;
use crate::sys::{exists, run};
use crate::tap::Outcome;

/// Where scripts/initramfs.sh puts the image's archive.
const ARCHIVE: &str = "/var/lib/vgpu-image/vgpu-node.oci.tar";
/// The image's name, without its version (scripts/image.sh).
const NAME: &str = "localhost/vgpu/vgpu-node:";
const CTR: &str = "vgpu-dra-plugin";

fn podman(args: &[&str]) -> Result<(i32, String), String> {
    run(Command::new("timeout")
        .arg("120")
        .arg("/usr/bin/podman")
        .args(args)
        .env("PATH", "/usr/bin:/bin"))
}

/// `podman ARGS`, which must succeed; its output.
fn podman_ok(args: &[&str]) -> Result<String, String> {
    let (code, out) = podman(args)?;
    ensure!(code == 0, "podman {args:?}: exit {code}: {out}");
    Ok(out)
}

pub fn image_starts() -> Outcome {
    ensure!(exists(ARCHIVE), "{ARCHIVE} is missing from the initramfs");
    let out = podman_ok(&["load", "-i", ARCHIVE])?;
    let image = out
        .lines()
        .find_map(|l| l.strip_prefix("Loaded image: "))
        .map(|s| s.trim().to_string())
        .ok_or(format!("podman load named no image: {out}"))?;
    ensure!(
        image.starts_with(NAME),
        "the archive holds {image}, not {NAME}VERSION"
    );
    let r = with_node(|| run_image(&image));
    let _ = podman(&["rm", "--force", "--time", "0", CTR]);
    let rmi = podman_ok(&["rmi", "--force", &image]).map(drop);
    r.and(rmi)
}

fn run_image(image: &str) -> Outcome {
    // The entrypoint is the plugin; vgpuctl is there too.
    let help = podman_ok(&["run", "--rm", image, "--help"])?;
    ensure!(
        help.contains("Usage: vgpu-dra-plugin") && help.contains("--node-name"),
        "the plugin's --help: {help}"
    );
    let help = podman_ok(&[
        "run",
        "--rm",
        "--entrypoint",
        "/usr/bin/vgpuctl",
        image,
        "--help",
    ])?;
    ensure!(help.contains("exporter"), "vgpuctl --help: {help}");

    // The plugin as the DaemonSet runs it, with the suite's directories.
    let dir = path("");
    let vol = format!("{dir}:{dir}");
    let api = format!("dir:{}", path("api"));
    podman_ok(&[
        "run",
        "-d",
        "--name",
        CTR,
        "--privileged",
        "-v",
        &vol,
        "-v",
        "/sys:/sys",
        "-v",
        "/dev:/dev",
        image,
        "--node-name",
        "vm",
        "--kube-api",
        &api,
        "--registry-dir",
        &path("registry"),
        "--plugin-dir",
        &path("plugin"),
        "--cdi-dir",
        &path("cdi"),
        "--hook-path",
        "/bin/vgpuctl",
    ])?;
    let sock = path("registry/vgpu.dev-reg.sock");
    let t0 = std::time::Instant::now();
    while !exists(&sock) {
        if t0.elapsed() > std::time::Duration::from_secs(60) {
            let (_, logs) = podman(&["logs", CTR])?;
            return Err(format!(
                "no registration socket 60 s after start; the plugin's log: {logs}"
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    register()?;
    check_slice()?;

    // A claim, prepared and unprepared by the plugin in its container.
    put_claim("image-gpu", CLAIM_UID, GIB, 20)?;
    let r = call("prepare", CLAIM_UID, "image-gpu")?;
    ensure!(r["error"] == "", "prepare: {r}");
    let made = vgpus();
    ensure!(made.len() == 1, "vGPUs after prepare: {made:?}");
    ensure!(
        exists(&path(&format!("cdi/vgpu.dev-claim_{CLAIM_UID}.json"))),
        "no CDI spec for the claim"
    );

    // The exporter's way: user 65534, no capabilities, a read-only root.
    let metrics = podman_ok(&[
        "run",
        "--rm",
        "--user",
        "65534:65534",
        "--cap-drop",
        "all",
        "--read-only",
        "-v",
        "/sys:/sys:ro",
        "--entrypoint",
        "/usr/bin/vgpuctl",
        image,
        "exporter",
        "--once",
    ])?;
    ensure!(
        metrics.contains("\nvgpu_up 1\n") && metrics.contains("vgpu_memory_limit_bytes{"),
        "the exporter in the image: {metrics}"
    );

    let u = call("unprepare", CLAIM_UID, "image-gpu")?;
    ensure!(u["error"] == "" && vgpus().is_empty(), "unprepare: {u}");

    // podman stop sends SIGTERM: the plugin unregisters and exits 0.
    podman_ok(&["stop", "--time", "20", CTR])?;
    let code = podman_ok(&["inspect", "--format", "{{.State.ExitCode}}", CTR])?;
    ensure!(
        code.trim() == "0",
        "the plugin exited with {} on SIGTERM",
        code.trim()
    );
    ensure!(
        !exists(&sock),
        "the registration socket outlived the plugin"
    );
    let (_, logs) = podman(&["logs", CTR])?;
    println!(
        "# the image's plugin: {}",
        logs.lines()
            .filter(|l| l.contains("ResourceSlice") || l.contains("serving"))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    Ok(())
}
