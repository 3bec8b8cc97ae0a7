// SPDX-License-Identifier: GPL-2.0

//! `vgpuctl cdi`: the spec validates against a CDI 0.6.0 schema subset
//! (`tests/data/cdi-schema.json`), and holds what a container needs.

mod common;

use std::fs;

use common::{schema, Fake};
use serde_json::{json, Value};

fn schema() -> Value {
    let text = include_str!("data/cdi-schema.json");
    serde_json::from_str(text).unwrap()
}

/// A tree with vGPUs 0 (GPU 0), 3 (GPU 1) and 4 (no GPU).
fn fake() -> Fake {
    let f = Fake::new(2, Some(24), false);
    f.ok(&["create", "--cgroup", "/a", "--memory", "1GiB", "--gpu", "0"]);
    f.ok(&[
        "create", "--cgroup", "/b", "--memory", "1GiB", "--gpu", "1", "--id", "3",
    ]);
    vgpuctl::sysfs::Sysfs::simulated(f.sys()).create(4).unwrap();
    f
}

fn generate(f: &Fake, extra: &[&str]) -> (Value, String) {
    let out = f.path().join("etc/cdi/vgpu.json");
    let params = f.path().join("run/vgpu/params");
    let host = f.path().join("host-params");
    fs::write(
        &host,
        "ResmanDebugLevel: 4294967295\nModifyDeviceFiles: 1\n",
    )
    .unwrap();
    let mut args = vec![
        "cdi",
        "--output",
        out.to_str().unwrap(),
        "--params-file",
        params.to_str().unwrap(),
        "--host-params",
        host.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let r = f.ok(&args);
    assert!(r.out.starts_with("wrote "), "{}", r.out);
    assert!(
        r.err.contains("vgpu4 has no GPU: left out of the spec"),
        "{}",
        r.err
    );
    let spec = serde_json::from_str(&fs::read_to_string(out).unwrap()).unwrap();
    (spec, fs::read_to_string(params).unwrap())
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
    let r = f.ok(&["cdi", "--params-file", f.path().join("p").to_str().unwrap()]);
    let spec: Value = serde_json::from_str(&r.out).unwrap();
    assert!(schema::validate(&schema(), &spec).is_empty());
}

#[test]
fn spec_contents() {
    let f = fake();
    let (spec, params) = generate(&f, &[]);
    assert_eq!(
        params,
        "ResmanDebugLevel: 4294967295\nModifyDeviceFiles: 0\n"
    );
    let params_path = f.path().join("run/vgpu/params");
    assert_eq!(
        spec,
        json!({
            "cdiVersion": "0.6.0",
            "kind": "vgpu.dev/gpu",
            "devices": [
                {"name": "0", "containerEdits": {"deviceNodes": [
                    {"path": "/dev/nvidia0", "hostPath": "/dev/vgpu0", "type": "c", "permissions": "rw"}]}},
                {"name": "3", "containerEdits": {"deviceNodes": [
                    {"path": "/dev/nvidia1", "hostPath": "/dev/vgpu3", "type": "c", "permissions": "rw"}]}}
            ],
            "containerEdits": {
                "deviceNodes": [
                    {"path": "/dev/nvidiactl", "hostPath": "/dev/vgpuctl", "type": "c", "permissions": "rw"}
                ],
                "mounts": [{
                    "hostPath": params_path.to_str().unwrap(),
                    "containerPath": "/proc/driver/nvidia/params",
                    "options": ["ro", "nosuid", "nodev", "bind"]
                }]
            }
        })
    );
    let (uvm, _) = generate(&f, &["--with-uvm"]);
    let nodes = uvm["containerEdits"]["deviceNodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 3);
    assert_eq!(nodes[1]["path"], "/dev/nvidia-uvm");
    // Without host params: just the line.
    let p = f.path().join("p2");
    f.ok(&[
        "cdi",
        "--params-file",
        p.to_str().unwrap(),
        "--host-params",
        "/nonexistent",
    ]);
    assert_eq!(fs::read_to_string(p).unwrap(), "ModifyDeviceFiles: 0\n");
}

#[test]
fn json_summary() {
    let f = fake();
    let out = f.path().join("x.json");
    let p = f.path().join("p");
    let r = f
        .ok(&[
            "cdi",
            "--json",
            "-o",
            out.to_str().unwrap(),
            "--params-file",
            p.to_str().unwrap(),
        ])
        .json();
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
