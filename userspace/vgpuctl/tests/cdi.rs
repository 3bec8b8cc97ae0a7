// SPDX-License-Identifier: GPL-2.0

//! `vgpuctl cdi`: the spec validates against a CDI 0.6.0 schema subset
//! (it declares 0.5.0, the oldest version with what it uses)
//! (`tests/data/cdi-schema.json`), and holds what a container needs:
//! NVIDIA's own nodes, by NVIDIA's names, and the hooks that bind the
//! vGPU before the container's first open.

mod common;

use std::fs;

use common::{schema, Fake};
use serde_json::{json, Value};

fn schema() -> Value {
    let text = include_str!("data/cdi-schema.json");
    serde_json::from_str(text).unwrap()
}

/// NVIDIA's nodes of a host with GPUs 0 and 1.
const HOST_NODES: [&str; 4] = ["nvidiactl", "nvidia0", "nvidia1", "nvidia-uvm"];

/// A tree with vGPUs 0 (GPU 0), 3 (GPU 1) and 4 (no GPU), and NVIDIA's
/// nodes in its /dev.
fn fake() -> Fake {
    let f = Fake::new(2, Some(24), false);
    for n in HOST_NODES {
        fs::write(f.path().join("dev").join(n), "").unwrap();
    }
    f.ok(&["create", "--cgroup", "/a", "--memory", "1GiB", "--gpu", "0"]);
    f.ok(&[
        "create", "--cgroup", "/b", "--memory", "1GiB", "--gpu", "1", "--id", "3",
    ]);
    vgpuctl::sysfs::Sysfs::simulated(f.sys()).create(4).unwrap();
    f
}

/// The spec and stderr of `cdi` with `extra` arguments.
fn generate(f: &Fake, extra: &[&str]) -> (Value, String) {
    let out = f.path().join("etc/cdi/vgpu.json");
    let mut args = vec!["cdi", "--output", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    let r = f.ok(&args);
    assert!(r.out.starts_with("wrote "), "{}", r.out);
    assert!(
        r.err.contains("vgpu4 has no GPU: left out of the spec"),
        "{}",
        r.err
    );
    let spec = serde_json::from_str(&fs::read_to_string(out).unwrap()).unwrap();
    (spec, r.err)
}

#[test]
fn spec_validates_against_the_schema() {
    let f = fake();
    for extra in [
        &[][..],
        &["--with-uvm"],
        &["--kind", "example.com/shared-gpu"],
    ] {
        let (spec, _) = generate(&f, extra);
        let errs = schema::validate(&schema(), &spec);
        assert!(errs.is_empty(), "{extra:?}: {errs:#?}\n{spec:#}");
    }
    // Also on stdout.
    let r = f.ok(&["cdi"]);
    let spec: Value = serde_json::from_str(&r.out).unwrap();
    assert!(schema::validate(&schema(), &spec).is_empty());
}

/// The hooks of vGPU `id`'s device: this vgpuctl, bind and free.
fn hooks(id: u32) -> Value {
    let exe = env!("CARGO_BIN_EXE_vgpuctl");
    let id = id.to_string();
    json!([
        {"hookName": "createRuntime", "path": exe, "args": ["vgpuctl", "hook", "create-runtime", id]},
        {"hookName": "poststop", "path": exe, "args": ["vgpuctl", "hook", "poststop", id]}
    ])
}

#[test]
fn spec_contents() {
    let f = fake();
    let (spec, err) = generate(&f, &[]);
    assert!(!err.contains("uvm"), "{err}");
    let exe = env!("CARGO_BIN_EXE_vgpuctl");
    assert_eq!(
        spec,
        json!({
            "cdiVersion": "0.5.0",
            "kind": "vgpu.dev/gpu",
            "devices": [
                {"name": "0", "containerEdits": {"deviceNodes": [
                    {"path": "/dev/nvidia0", "hostPath": "/dev/nvidia0", "type": "c", "permissions": "rw"}],
                    "hooks": hooks(0)}},
                {"name": "3", "containerEdits": {"deviceNodes": [
                    {"path": "/dev/nvidia1", "hostPath": "/dev/nvidia1", "type": "c", "permissions": "rw"}],
                    "hooks": hooks(3)}}
            ],
            "containerEdits": {
                "deviceNodes": [
                    {"path": "/dev/nvidiactl", "hostPath": "/dev/nvidiactl", "type": "c", "permissions": "rw"},
                    {"path": "/dev/nvidia-uvm", "hostPath": "/dev/nvidia-uvm", "type": "c", "permissions": "rw"}
                ],
                "hooks": [{"hookName": "createContainer", "path": exe,
                           "args": ["vgpuctl", "hook", "create-container"]}]
            }
        })
    );
    // NVIDIA's nodes only, never the UVM tools node nor vgpu's own names
    // (libcuda and NVML refuse any number but the driver's).
    let text = spec.to_string();
    for never in ["/dev/nvidia-uvm-tools", "/dev/vgpu"] {
        assert!(!text.contains(never), "{never}: {text}");
    }
    // --with-uvm is still accepted, changes nothing, and says so.
    let (uvm, err) = generate(&f, &["--with-uvm"]);
    assert_eq!(uvm, spec);
    assert!(
        err.contains(
            "--with-uvm has no effect: the spec always has /dev/nvidia-uvm, which vgpu answers for the container, and never the tools node"
        ),
        "{err}"
    );
    // Nothing mounted inside /proc: runc refuses it.
    assert!(!text.contains("/proc"), "{text}");
    // --params-file and --host-params are still accepted, change nothing,
    // write nothing and say so.
    let p = f.path().join("p2");
    let (old, err) = generate(
        &f,
        &["--params-file", p.to_str().unwrap(), "--host-params", "/x"],
    );
    assert_eq!(old, spec);
    assert!(!p.exists());
    for flag in ["--params-file", "--host-params"] {
        assert!(
            err.contains(&format!("{flag} has no effect: the spec's createContainer hook rewrites the container's /proc/driver/nvidia/params (runc refuses mounts inside /proc)")),
            "{err}"
        );
    }
}

/// `--hook-path` names the vgpuctl the runtime runs (absolute only);
/// `--no-hooks` leaves binding to the admin.
#[test]
fn hook_options() {
    let f = fake();
    let (spec, _) = generate(&f, &["--hook-path", "/usr/bin/vgpuctl"]);
    for d in spec["devices"].as_array().unwrap() {
        let hooks = d["containerEdits"]["hooks"].as_array().unwrap();
        assert_eq!(hooks.len(), 2, "{d}");
        assert!(hooks.iter().all(|h| h["path"] == "/usr/bin/vgpuctl"), "{d}");
    }
    assert_eq!(
        spec["containerEdits"]["hooks"][0]["path"],
        "/usr/bin/vgpuctl"
    );
    let (spec, _) = generate(&f, &["--no-hooks"]);
    assert!(!spec.to_string().contains("hooks"), "{spec}");
    assert!(schema::validate(&schema(), &spec).is_empty());
    let r = f.run(&["cdi", "--hook-path", "vgpuctl"]);
    assert_eq!(r.code, 2, "{}", r.err);
    assert!(
        r.err.contains("runtimes need an absolute path"),
        "{}",
        r.err
    );
    let r = f.run(&["cdi", "--no-hooks", "--hook-path", "/x"]);
    assert_eq!(r.code, 2, "{}", r.err);
}

/// A host node the spec names is missing (`nvidia-uvm` makes none of its
/// own): the spec still names it, with a warning, since runtimes refuse it.
#[test]
fn warns_of_missing_host_nodes() {
    let f = fake();
    let dev = f.path().join("dev");
    fs::remove_file(dev.join("nvidia-uvm")).unwrap();
    let (spec, err) = generate(&f, &[]);
    assert!(
        err.contains("/dev/nvidia-uvm is missing on this host (nvidia-uvm makes no node of its own: `nvidia-modprobe -u -c 0` does): runtimes will refuse these devices until it exists"),
        "{err}"
    );
    assert_eq!(
        spec["containerEdits"]["deviceNodes"][1]["hostPath"],
        "/dev/nvidia-uvm"
    );
    fs::remove_file(dev.join("nvidia1")).unwrap();
    let (_, err) = generate(&f, &[]);
    assert!(
        err.contains("/dev/nvidia1 is missing on this host: "),
        "{err}"
    );
    assert!(!err.contains("/dev/nvidia0 "), "{err}");
    for n in HOST_NODES {
        fs::write(dev.join(n), "").unwrap();
    }
    let (_, err) = generate(&f, &[]);
    assert!(!err.contains("missing"), "{err}");
}

#[test]
fn json_summary() {
    let f = fake();
    let out = f.path().join("x.json");
    let r = f.ok(&["cdi", "--json", "-o", out.to_str().unwrap()]).json();
    assert_eq!(r["devices"], json!(["vgpu.dev/gpu=0", "vgpu.dev/gpu=3"]));
}

/// The schema itself catches what it should, so a passing validation means
/// something.
#[test]
fn schema_rejects_bad_specs() {
    let good = json!({
        "cdiVersion": "0.6.0",
        "kind": "vgpu.dev/gpu",
        "devices": [{"name": "0", "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia0"}]}}],
    });
    let s = schema();
    assert!(schema::validate(&s, &good).is_empty());
    let bad = |edit: &dyn Fn(&mut Value), what: &str| {
        let mut v = good.clone();
        edit(&mut v);
        let errs = schema::validate(&s, &v);
        assert!(errs.iter().any(|e| e.contains(what)), "{what}: {errs:?}");
    };
    bad(
        &|v| drop(v.as_object_mut().unwrap().remove("kind")),
        "missing kind",
    );
    bad(
        &|v| drop(v.as_object_mut().unwrap().remove("cdiVersion")),
        "missing cdiVersion",
    );
    bad(
        &|v| drop(v.as_object_mut().unwrap().remove("devices")),
        "missing devices",
    );
    bad(&|v| v["cdiVersion"] = json!("1.0"), "does not match");
    bad(&|v| v["kind"] = json!("gpu"), "does not match");
    bad(&|v| v["kind"] = json!("vgpu.dev/g.pu"), "does not match");
    bad(&|v| v["kind"] = json!("-vgpu/gpu"), "does not match");
    bad(&|v| v["devices"][0]["name"] = json!("-0"), "does not match");
    bad(
        &|v| v["devices"][0]["name"] = json!("a b"),
        "does not match",
    );
    bad(
        &|v| {
            drop(
                v["devices"][0]
                    .as_object_mut()
                    .unwrap()
                    .remove("containerEdits"),
            )
        },
        "missing containerEdits",
    );
    bad(
        &|v| {
            v["devices"][0]["containerEdits"]["deviceNodes"][0] = json!({"hostPath": "/dev/vgpu0"})
        },
        "missing path",
    );
    bad(
        &|v| v["devices"][0]["containerEdits"]["deviceNodes"][0]["path"] = json!("dev/nvidia0"),
        "does not match",
    );
    bad(
        &|v| v["devices"][0]["containerEdits"]["deviceNodes"][0]["type"] = json!("x"),
        "not one of",
    );
    bad(
        &|v| v["devices"][0]["containerEdits"]["deviceNodes"][0]["major"] = json!(-1),
        "< 0",
    );
    bad(
        &|v| v["devices"][0]["containerEdits"]["deviceNodes"][0]["permissions"] = json!("rwx"),
        "does not match",
    );
    bad(
        &|v| v["devices"][0]["containerEdits"]["deviceNodes"][0]["hostpath"] = json!("/x"),
        "unexpected hostpath",
    );
    bad(&|v| v["devices"] = json!({}), "not of type array");
    bad(
        &|v| v["containerEdits"] = json!({"mounts": [{"hostPath": "/x"}]}),
        "missing containerPath",
    );
}
