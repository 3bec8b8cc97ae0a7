// SPDX-License-Identifier: GPL-2.0

//! The plugin's logic against `k8s-openapi`'s typed objects (Kubernetes
//! 1.36): the ResourceSlice it publishes, the claims it reads, and prepare
//! and unprepare over a simulated vgpu.ko with a directory for an API
//! server, restarts included.

use std::fs;
use std::path::{Path, PathBuf};

use k8s_openapi::api::resource::v1::{ResourceClaim, ResourceSlice};
use serde_json::{json, Value};
use vgpu_dra::checkpoint::{Stage, Store};
use vgpu_dra::claim::allocations;
use vgpu_dra::driver::{ClaimRef, Config, Driver};
use vgpu_dra::gpus::GpuFacts;
use vgpu_dra::kube::{DirApi, KubeApi};
use vgpu_dra::slice::resource_slice;
use vgpuctl::sysfs::{sim, Sysfs};

const GIB: u64 = 1 << 30;
const NODE: &str = "node-a";
const UID: &str = "7c9e6679-7425-40de-944b-e07fc1f90ae7";

fn gpus() -> Vec<GpuFacts> {
    (0..2)
        .map(|k| GpuFacts {
            index: k,
            uuid: Some(format!("GPU-0000000{k}-1111-2222-3333-444444444444")),
            product: Some("vgpu double GPU".into()),
            memory: 24 * GIB,
            compute_policy: Some("work-conserving".into()),
        })
        .collect()
}

#[test]
fn the_slice_has_a_shared_device_per_gpu() {
    let s = resource_slice("vgpu.dev", NODE, &gpus(), Some("595.45.04"), 3);
    // What goes over the wire, and back into the typed object.
    let v = serde_json::to_value(&s).unwrap();
    let back: ResourceSlice = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(back, s);
    assert_eq!(v["metadata"]["name"], "node-a-vgpu-dev");
    let spec = &v["spec"];
    assert_eq!(spec["driver"], "vgpu.dev");
    assert_eq!(spec["nodeName"], NODE);
    assert_eq!(
        spec["pool"],
        json!({"name": NODE, "generation": 3, "resourceSliceCount": 1})
    );
    let devs = spec["devices"].as_array().unwrap();
    assert_eq!(devs.len(), 2);
    let d = &devs[1];
    assert_eq!(d["name"], "gpu-1");
    assert_eq!(d["allowMultipleAllocations"], true);
    assert_eq!(d["attributes"]["index"], json!({"int": 1}));
    assert_eq!(
        d["attributes"]["uuid"],
        json!({"string": "GPU-00000001-1111-2222-3333-444444444444"})
    );
    assert_eq!(
        d["attributes"]["productName"],
        json!({"string": "vgpu double GPU"})
    );
    assert_eq!(
        d["attributes"]["driverVersion"],
        json!({"version": "595.45.4"})
    );
    assert_eq!(
        d["attributes"]["computePolicy"],
        json!({"string": "work-conserving"})
    );
    assert_eq!(
        d["capacity"]["memory"],
        json!({"value": "24Gi", "requestPolicy": {"default": "24Gi",
            "validRange": {"min": "1Mi", "max": "24Gi", "step": "1Mi"}}})
    );
    assert_eq!(
        d["capacity"]["cores"],
        json!({"value": "100", "requestPolicy": {"default": "100",
            "validRange": {"min": "1", "max": "100", "step": "1"}}})
    );
}

#[test]
fn odd_sizes_round_down_to_whole_mib() {
    let mut g = gpus();
    g[0].memory = 1000 * (1 << 20) + 12345;
    let s = resource_slice("vgpu.dev", NODE, &g[..1], None, 0);
    let v = serde_json::to_value(&s).unwrap();
    assert_eq!(
        v["spec"]["devices"][0]["capacity"]["memory"]["value"],
        "1000Mi"
    );
    assert!(v["spec"]["devices"][0]["attributes"]
        .get("driverVersion")
        .is_none());
}

/// An allocated claim as the API server returns it: `results` each
/// `(request, device, consumed memory, consumed cores)`.
fn claim_json(
    results: &[(&str, &str, Option<&str>, Option<&str>)],
    config: Option<Value>,
) -> Value {
    let res: Vec<Value> = results
        .iter()
        .enumerate()
        .map(|(i, (req, dev, mem, cores))| {
            let mut r = json!({"request": req, "driver": "vgpu.dev", "pool": NODE,
                "device": dev, "shareID": format!("1b4e28ba-2fa1-11d2-883f-00000000000{i}")});
            let mut cc = serde_json::Map::new();
            if let Some(m) = mem {
                cc.insert("memory".into(), json!(m));
            }
            if let Some(c) = cores {
                cc.insert("cores".into(), json!(c));
            }
            if !cc.is_empty() {
                r["consumedCapacity"] = Value::Object(cc);
            }
            r
        })
        .collect();
    let mut devices = json!({"results": res});
    if let Some(c) = config {
        devices["config"] = c;
    }
    json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "gpu-claim", "namespace": "team-a", "uid": UID},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "vgpu.dev"}}]}},
        "status": {
            "allocation": {"devices": devices},
            "reservedFor": [{"resource": "pods", "name": "trainer", "uid": "0f7b2d71-5a5e-4a43-b4a0-3c5d7d5d2c11"}]
        }
    })
}

fn typed(v: Value) -> ResourceClaim {
    serde_json::from_value(v).unwrap()
}

#[test]
fn claims_are_read_by_consumed_capacity() {
    let c = typed(claim_json(
        &[("gpu", "gpu-1", Some("2Gi"), Some("30"))],
        None,
    ));
    let a = allocations(&c, UID, "vgpu.dev", NODE, &gpus()).unwrap();
    assert_eq!(a.len(), 1);
    assert_eq!((a[0].gpu, a[0].memory, a[0].cores), (1, 2 * GIB, 30));
    assert_eq!(
        a[0].share_id.as_deref(),
        Some("1b4e28ba-2fa1-11d2-883f-000000000000")
    );
    // No consumed capacity: a scheduler that allocates whole devices.
    let c = typed(claim_json(&[("gpu", "gpu-0", None, None)], None));
    let a = allocations(&c, UID, "vgpu.dev", NODE, &gpus()).unwrap();
    assert_eq!((a[0].memory, a[0].cores), (24 * GIB, 100));
}

#[test]
fn totals_split_over_the_devices_of_a_request() {
    let params = json!([{"source": "FromClaim", "requests": ["gpu"], "opaque": {"driver": "vgpu.dev",
        "parameters": {"apiVersion": "vgpu.dev/v1", "kind": "VgpuParameters", "memory": "6Gi", "cores": 61}}}]);
    let c = typed(claim_json(
        &[
            ("gpu", "gpu-0", Some("3Gi"), Some("31")),
            ("gpu", "gpu-1", Some("3Gi"), Some("31")),
        ],
        Some(params.clone()),
    ));
    let a = allocations(&c, UID, "vgpu.dev", NODE, &gpus()).unwrap();
    assert_eq!(a.len(), 2);
    for x in &a {
        assert_eq!((x.memory, x.cores), (3 * GIB, 30), "{x:?}");
    }
    // Totals beyond what the scheduler set aside per device: refused.
    let c = typed(claim_json(
        &[
            ("gpu", "gpu-0", Some("2Gi"), Some("31")),
            ("gpu", "gpu-1", Some("2Gi"), Some("31")),
        ],
        Some(params),
    ));
    let e = allocations(&c, UID, "vgpu.dev", NODE, &gpus())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("is 3221225472 each, but the scheduler set aside 2147483648"),
        "{e}"
    );
    // Parameters of another kind: refused with the kind this driver reads.
    let bad = json!([{"source": "FromClass", "opaque": {"driver": "vgpu.dev",
        "parameters": {"apiVersion": "vgpu.dev/v2", "kind": "Other"}}}]);
    let c = typed(claim_json(
        &[("gpu", "gpu-0", Some("1Gi"), Some("10"))],
        Some(bad),
    ));
    let e = allocations(&c, UID, "vgpu.dev", NODE, &gpus())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("this driver reads vgpu.dev/v1/VgpuParameters"),
        "{e}"
    );
}

#[test]
fn claims_this_node_cannot_serve_are_refused() {
    let cases: Vec<(Value, &str)> = vec![
        (
            {
                let mut c = claim_json(&[("gpu", "gpu-0", Some("1Gi"), Some("10"))], None);
                c["status"]["allocation"]["devices"]["results"][0]["pool"] = json!("node-b");
                c
            },
            "not on this node",
        ),
        (
            claim_json(&[("gpu", "gpu-7", Some("1Gi"), Some("10"))], None),
            "not a GPU of this node",
        ),
        (
            claim_json(&[("gpu", "gpu-01", Some("1Gi"), Some("10"))], None),
            "not a GPU of this node",
        ),
        (
            claim_json(&[("gpu", "gpu-0", Some("1.5"), Some("10"))], None),
            "not a whole number",
        ),
        (
            claim_json(&[("gpu", "gpu-0", Some("1Gi"), Some("101"))], None),
            "cores 1 to 100",
        ),
        (
            claim_json(&[("gpu", "gpu-0", Some("0"), Some("10"))], None),
            "memory must be above 0",
        ),
        (
            {
                let mut c = claim_json(&[("gpu", "gpu-0", Some("1Gi"), Some("10"))], None);
                c["status"]["allocation"]["devices"]["results"][0]["adminAccess"] = json!(true);
                c
            },
            "admin access",
        ),
        (
            {
                let mut c = claim_json(&[], None);
                c["status"] = json!({});
                c
            },
            "is not allocated",
        ),
    ];
    for (c, why) in cases {
        let e = allocations(&typed(c), UID, "vgpu.dev", NODE, &gpus())
            .unwrap_err()
            .to_string();
        assert!(e.contains(why), "{e:?} lacks {why:?}");
    }
    let c = typed(claim_json(
        &[("gpu", "gpu-0", Some("1Gi"), Some("10"))],
        None,
    ));
    let e = allocations(
        &c,
        "00000000-0000-0000-0000-000000000000",
        "vgpu.dev",
        NODE,
        &gpus(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("it was deleted"), "{e}");
    // Another driver's devices are not ours to prepare.
    let mut c = claim_json(&[("gpu", "gpu-0", Some("1Gi"), Some("10"))], None);
    c["status"]["allocation"]["devices"]["results"][0]["driver"] = json!("gpu.nvidia.com");
    assert!(allocations(&typed(c), UID, "vgpu.dev", NODE, &gpus())
        .unwrap()
        .is_empty());
}

/// A node: a simulated vgpu.ko with two 24 GiB GPUs, a directory for the
/// API server, CDI and plugin directories.
struct Node {
    dir: tempfile::TempDir,
}

impl Node {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let sys = dir.path().join("sys");
        sim::init_tree(
            &sys,
            Some(&[(0, Some(24 * GIB)), (1, Some(24 * GIB))]),
            true,
        )
        .unwrap();
        Node { dir }
    }

    fn p(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn sysfs(&self) -> Sysfs {
        Sysfs::simulated(self.p("sys"))
    }

    fn driver(&self) -> (Driver, Vec<String>) {
        let cfg = Config {
            driver: "vgpu.dev".into(),
            node: NODE.into(),
            cdi_dir: self.p("cdi"),
            hook_path: "/usr/bin/vgpuctl".into(),
        };
        Driver::new(
            cfg,
            self.sysfs(),
            Box::new(DirApi::new(self.p("api"))),
            gpus(),
            Store::new(self.p("plugin/checkpoint.json")),
        )
        .unwrap()
    }

    fn put_claim(&self, name: &str, uid: &str, v: &Value) {
        let mut v = v.clone();
        v["metadata"]["name"] = json!(name);
        v["metadata"]["uid"] = json!(uid);
        let d = self.p("api/namespaces/team-a/resourceclaims");
        fs::create_dir_all(&d).unwrap();
        fs::write(d.join(format!("{name}.json")), v.to_string()).unwrap();
    }

    /// Rewinds claim `uid` in the checkpoint to half-prepared.
    fn mark_preparing(&self, uid: &str) {
        let store = Store::new(self.p("plugin/checkpoint.json"));
        let mut c = store.load().unwrap();
        c.claims.get_mut(uid).unwrap().stage = Stage::Preparing;
        store.save(&c).unwrap();
    }

    fn vgpus(&self) -> Vec<u32> {
        self.sysfs().ids().unwrap()
    }

    fn attr(&self, id: u32, name: &str) -> String {
        fs::read_to_string(self.p(&format!("sys/class/vgpu/vgpu{id}/{name}")))
            .unwrap()
            .trim()
            .to_string()
    }
}

fn cref(name: &str, uid: &str) -> ClaimRef {
    ClaimRef {
        namespace: "team-a".into(),
        name: name.into(),
        uid: uid.into(),
    }
}

fn spec(path: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn prepare_makes_a_vgpu_and_a_cdi_spec_once() {
    let n = Node::new();
    n.put_claim(
        "c1",
        UID,
        &claim_json(&[("gpu", "gpu-1", Some("2Gi"), Some("30"))], None),
    );
    let (d, notes) = n.driver();
    assert!(notes.is_empty());
    let devs = d.prepare(&cref("c1", UID)).unwrap();
    assert_eq!(devs.len(), 1);
    let v = devs[0].vgpu;
    assert_eq!(n.vgpus(), vec![v]);
    assert_eq!(n.attr(v, "gpu"), "1");
    assert_eq!(n.attr(v, "memory_limit"), (2 * GIB).to_string());
    assert_eq!(n.attr(v, "compute_share"), "30");
    assert_eq!(
        n.attr(v, "cgroup"),
        "",
        "bound by the hook at container start, not here"
    );
    assert_eq!(devs[0].cdi_device, format!("vgpu.dev/claim={UID}-0"));
    let s = spec(&n.p(&format!("cdi/vgpu.dev-claim_{UID}.json")));
    assert_eq!(s["kind"], "vgpu.dev/claim");
    let dev = &s["devices"][0];
    assert_eq!(dev["name"], format!("{UID}-0"));
    // NVIDIA's own nodes, by NVIDIA's names and numbers (libcuda and NVML
    // refuse others): vgpu answers their open for the bound pod.
    assert_eq!(
        dev["containerEdits"]["deviceNodes"],
        json!([{"path": "/dev/nvidia1", "hostPath": "/dev/nvidia1", "type": "c", "permissions": "rw"}])
    );
    assert_eq!(
        s["containerEdits"]["deviceNodes"],
        json!([
            {"path": "/dev/nvidiactl", "hostPath": "/dev/nvidiactl", "type": "c", "permissions": "rw"},
            {"path": "/dev/nvidia-uvm", "hostPath": "/dev/nvidia-uvm", "type": "c", "permissions": "rw"}
        ])
    );
    for never in ["/dev/vgpu", "/dev/nvidia-uvm-tools"] {
        assert!(!s.to_string().contains(never), "{never}: {s}");
    }
    assert_eq!(
        dev["containerEdits"]["hooks"][0]["args"],
        json!([
            "vgpuctl",
            "hook",
            "create-runtime",
            v.to_string(),
            "--pod",
            "0f7b2d71-5a5e-4a43-b4a0-3c5d7d5d2c11"
        ])
    );
    // No mount inside /proc (runc refuses it) and no file on the host: the
    // spec-wide createContainer hook gives the container its params.
    assert!(!s.to_string().contains("/proc"), "{s}");
    assert!(s["containerEdits"].get("mounts").is_none(), "{s}");
    assert_eq!(
        s["containerEdits"]["hooks"],
        json!([{"hookName": "createContainer", "path": "/usr/bin/vgpuctl",
                "args": ["vgpuctl", "hook", "create-container"]}])
    );
    assert!(!n.p("run/vgpu/params").exists());
    // The kubelet asks again: the same answer, no second vGPU.
    assert_eq!(d.prepare(&cref("c1", UID)).unwrap(), devs);
    assert_eq!(n.vgpus(), vec![v]);
    // A restarted plugin knows the claim from its checkpoint.
    drop(d);
    let (d, notes) = n.driver();
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(d.prepare(&cref("c1", UID)).unwrap(), devs);
    assert_eq!(n.vgpus(), vec![v]);
    // Unprepare: the vGPU and the spec go; twice is fine.
    d.unprepare(&cref("c1", UID)).unwrap();
    assert!(n.vgpus().is_empty());
    assert!(!n.p(&format!("cdi/vgpu.dev-claim_{UID}.json")).exists());
    d.unprepare(&cref("c1", UID)).unwrap();
    assert!(d.prepared().is_empty());
}

#[test]
fn a_claim_over_what_a_gpu_has_left_is_refused() {
    let n = Node::new();
    let (d, _) = n.driver();
    let u2 = "11111111-2222-3333-4444-555555555555";
    n.put_claim(
        "big",
        UID,
        &claim_json(&[("gpu", "gpu-0", Some("20Gi"), Some("80"))], None),
    );
    n.put_claim(
        "more",
        u2,
        &claim_json(&[("gpu", "gpu-0", Some("5Gi"), Some("10"))], None),
    );
    d.prepare(&cref("big", UID)).unwrap();
    let e = d.prepare(&cref("more", u2)).unwrap_err().to_string();
    assert!(
        e.contains("GPU 0 has 4Gi and 20% cores left (1 vGPUs on it); the claim asks 5Gi and 10%"),
        "{e}"
    );
    assert_eq!(n.vgpus().len(), 1, "nothing made for the refused claim");
    // A claim on the other GPU fits.
    n.put_claim(
        "more",
        u2,
        &claim_json(&[("gpu", "gpu-1", Some("5Gi"), Some("10"))], None),
    );
    d.prepare(&cref("more", u2)).unwrap();
    assert_eq!(n.vgpus().len(), 2);
}

#[test]
fn multi_gpu_claims_get_a_vgpu_per_device() {
    let n = Node::new();
    let (d, _) = n.driver();
    let params = json!([{"source": "FromClaim", "opaque": {"driver": "vgpu.dev",
        "parameters": {"apiVersion": "vgpu.dev/v1", "kind": "VgpuParameters", "memory": "8Gi", "cores": "60"}}}]);
    n.put_claim(
        "two",
        UID,
        &claim_json(
            &[
                ("gpu", "gpu-0", Some("4Gi"), Some("30")),
                ("gpu", "gpu-1", Some("4Gi"), Some("30")),
            ],
            Some(params),
        ),
    );
    let devs = d.prepare(&cref("two", UID)).unwrap();
    assert_eq!(devs.len(), 2);
    for (i, dev) in devs.iter().enumerate() {
        assert_eq!(n.attr(dev.vgpu, "gpu"), i.to_string());
        assert_eq!(n.attr(dev.vgpu, "memory_limit"), (4 * GIB).to_string());
        assert_eq!(n.attr(dev.vgpu, "compute_share"), "30");
        assert_eq!(dev.cdi_device, format!("vgpu.dev/claim={UID}-{i}"));
    }
    d.unprepare(&cref("two", UID)).unwrap();
    assert!(n.vgpus().is_empty());
}

#[test]
fn a_failed_prepare_leaves_nothing() {
    let n = Node::new();
    let (d, _) = n.driver();
    n.put_claim(
        "c1",
        UID,
        &claim_json(
            &[
                ("gpu", "gpu-0", Some("1Gi"), Some("10")),
                ("gpu", "gpu-1", Some("1Gi"), Some("10")),
            ],
            None,
        ),
    );
    // The second vGPU's share is refused by the module.
    sim::inject_failure(&n.p("sys"), "vgpu1/compute_share", "EIO").unwrap();
    let e = d.prepare(&cref("c1", UID)).unwrap_err().to_string();
    assert!(e.contains("compute_share"), "{e}");
    assert!(n.vgpus().is_empty());
    assert!(!n.p(&format!("cdi/vgpu.dev-claim_{UID}.json")).exists());
    assert!(d.prepared().is_empty());
    let c = Store::new(n.p("plugin/checkpoint.json")).load().unwrap();
    assert!(c.claims.is_empty());
}

#[test]
fn a_half_prepared_claim_is_undone_at_restart() {
    let n = Node::new();
    n.put_claim(
        "c1",
        UID,
        &claim_json(&[("gpu", "gpu-0", Some("1Gi"), Some("10"))], None),
    );
    let (d, _) = n.driver();
    let devs = d.prepare(&cref("c1", UID)).unwrap();
    drop(d);
    // As if the plugin died between writing the record and finishing.
    n.mark_preparing(UID);
    let (d, notes) = n.driver();
    assert_eq!(notes.len(), 1);
    assert!(notes[0].contains("half-prepared"), "{notes:?}");
    assert!(n.vgpus().is_empty());
    // The kubelet's retry prepares it afresh.
    let again = d.prepare(&cref("c1", UID)).unwrap();
    assert_eq!(again.len(), devs.len());
    assert_eq!(n.vgpus().len(), 1);
}

#[test]
fn unprepare_waits_for_the_last_user() {
    let n = Node::new();
    n.put_claim(
        "c1",
        UID,
        &claim_json(&[("gpu", "gpu-0", Some("1Gi"), Some("10"))], None),
    );
    let (d, _) = n.driver();
    let v = d.prepare(&cref("c1", UID)).unwrap()[0].vgpu;
    sim::set_users(&n.p("sys"), v, 1).unwrap();
    let e = d.unprepare(&cref("c1", UID)).unwrap_err().to_string();
    assert!(
        e.contains("busy") || e.contains("EBUSY") || e.contains("in use"),
        "{e}"
    );
    assert_eq!(
        d.prepared(),
        vec![UID.to_string()],
        "kept for the kubelet's retry"
    );
    sim::set_users(&n.p("sys"), v, 0).unwrap();
    d.unprepare(&cref("c1", UID)).unwrap();
    assert!(n.vgpus().is_empty());
}

#[test]
fn the_slice_is_published_once_and_replaced_when_it_changes() {
    let n = Node::new();
    let (d, _) = n.driver();
    fs::create_dir_all(n.p("api/nodes")).unwrap();
    fs::write(
        n.p("api/nodes/node-a.json"),
        r#"{"metadata": {"name": "node-a", "uid": "n-1"}}"#,
    )
    .unwrap();
    assert!(d.publish(Some("595.45.04")).unwrap().contains("created"));
    let api = DirApi::new(n.p("api"));
    let s = api.slice("node-a-vgpu-dev").unwrap().unwrap();
    assert_eq!(s.spec.pool.generation, 0);
    assert_eq!(s.metadata.owner_references.as_ref().unwrap()[0].uid, "n-1");
    assert!(d.publish(Some("595.45.04")).unwrap().contains("up to date"));
    assert!(d.publish(Some("580.95.05")).unwrap().contains("replaced"));
    let s = api.slice("node-a-vgpu-dev").unwrap().unwrap();
    assert_eq!(s.spec.pool.generation, 1);
    // The administrator changes GPU 1's policy (the simulated module's
    // default is fixed): the slice follows.
    n.sysfs()
        .write_gpu_attr(1, "compute_policy", "work-conserving")
        .unwrap();
    let m = d.publish(Some("580.95.05")).unwrap();
    assert!(m.contains("replaced"), "{m}");
    let s = api.slice("node-a-vgpu-dev").unwrap().unwrap();
    assert_eq!(s.spec.pool.generation, 2);
    let devs = s.spec.devices.unwrap();
    let policy = |k: usize| {
        devs[k].attributes.as_ref().unwrap()["computePolicy"]
            .string
            .clone()
    };
    assert_eq!(policy(1).as_deref(), Some("work-conserving"));
    assert_eq!(policy(0).as_deref(), Some("fixed"));
}

#[test]
fn two_devices_on_one_gpu_are_refused() {
    let n = Node::new();
    let (d, _) = n.driver();
    n.put_claim(
        "dup",
        UID,
        &claim_json(
            &[
                ("gpu", "gpu-0", Some("1Gi"), Some("10")),
                ("gpu", "gpu-0", Some("1Gi"), Some("10")),
            ],
            None,
        ),
    );
    let e = d.prepare(&cref("dup", UID)).unwrap_err().to_string();
    assert!(
        e.contains("two devices on GPU 0") && e.contains("distinctAttribute"),
        "{e}"
    );
    assert!(n.vgpus().is_empty());
}

#[test]
fn a_claim_for_several_pods_is_refused() {
    let n = Node::new();
    let (d, _) = n.driver();
    let mut c = claim_json(&[("gpu", "gpu-0", Some("1Gi"), Some("10"))], None);
    c["status"]["reservedFor"] = json!([
        {"resource": "pods", "name": "a", "uid": "aaaaaaaa-0000-4000-8000-000000000001"},
        {"resource": "pods", "name": "b", "uid": "aaaaaaaa-0000-4000-8000-000000000002"}
    ]);
    n.put_claim("shared", UID, &c);
    let e = d.prepare(&cref("shared", UID)).unwrap_err().to_string();
    assert!(e.contains("reserved for 2 pods"), "{e}");
    assert!(n.vgpus().is_empty());
}

#[test]
fn a_half_prepared_claim_with_a_busy_vgpu_is_kept_until_it_can_be_undone() {
    let n = Node::new();
    n.put_claim(
        "c1",
        UID,
        &claim_json(&[("gpu", "gpu-0", Some("1Gi"), Some("10"))], None),
    );
    let (d, _) = n.driver();
    let v = d.prepare(&cref("c1", UID)).unwrap()[0].vgpu;
    drop(d);
    n.mark_preparing(UID);
    // A process still has the vGPU open: it cannot go yet.
    sim::set_users(&n.p("sys"), v, 1).unwrap();
    let (d, notes) = n.driver();
    assert!(notes[0].contains("could not be removed"), "{notes:?}");
    assert_eq!(d.prepared(), vec![UID.to_string()], "kept, not leaked");
    assert!(d.prepare(&cref("c1", UID)).is_err(), "refused while busy");
    assert_eq!(n.vgpus(), vec![v]);
    // Once free, the retry undoes the old attempt and prepares afresh.
    sim::set_users(&n.p("sys"), v, 0).unwrap();
    let again = d.prepare(&cref("c1", UID)).unwrap();
    assert_eq!(n.vgpus(), vec![again[0].vgpu]);
}
