// SPDX-License-Identifier: GPL-2.0

//! The plugin's ResourceSlice against a stand-in API server that stores
//! slices as Kubernetes 1.34 and 1.35 do with their default feature gates:
//! `DRAConsumableCapacity` off, so a create or update drops each device's
//! `allowMultipleAllocations` and each capacity's `requestPolicy`, unless
//! the stored slice already used them (the ResourceSlice strategy's
//! `dropDisabledDRAConsumableCapacityFields`,
//! pkg/registry/resource/resourceslice/strategy.go). The plugin must then
//! publish whole GPUs and leave its slice alone at each resync, instead of
//! replacing it (and bumping the pool's generation) every 30 s.
//!
//! The server speaks HTTP on a loopback port to the plugin's real client
//! (`HttpApi`); each `publish` below is one resync period of the plugin's
//! loop.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use vgpu_dra::checkpoint::Store;
use vgpu_dra::driver::{Config, Driver};
use vgpu_dra::gpus::GpuFacts;
use vgpu_dra::kube::HttpApi;
use vgpuctl::sysfs::{sim, Sysfs};

const GIB: u64 = 1 << 30;
const NODE: &str = "node-a";
const SLICE: &str = "node-a-vgpu-dev";
const RESYNCS: usize = 6;

/// What the stand-in holds and counts.
#[derive(Default)]
struct State {
    /// `DRAConsumableCapacity` on (1.36's default) or off (1.34, 1.35).
    gate_on: bool,
    slice: Option<Value>,
    resource_version: u64,
    /// Creates and replaces that were stored.
    writes: usize,
    /// Dry-run creates and replaces (nothing stored).
    dry_runs: usize,
}

/// Whether `slice` uses consumable capacity (the strategy's
/// `draConsumableCapacityFeatureInUse`).
fn in_use(slice: &Value) -> bool {
    slice["spec"]["devices"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|d| {
            d.get("allowMultipleAllocations").is_some()
                || d["capacity"]
                    .as_object()
                    .into_iter()
                    .flat_map(|c| c.values())
                    .any(|c| c.get("requestPolicy").is_some())
        })
}

/// Drops the gate's fields from `slice` as 1.34's strategy does.
fn drop_disabled(slice: &mut Value) {
    for d in slice["spec"]["devices"]
        .as_array_mut()
        .into_iter()
        .flatten()
    {
        if let Some(d) = d.as_object_mut() {
            d.remove("allowMultipleAllocations");
        }
        for c in d["capacity"]
            .as_object_mut()
            .into_iter()
            .flat_map(|c| c.values_mut())
        {
            if let Some(c) = c.as_object_mut() {
                c.remove("requestPolicy");
            }
        }
    }
}

/// One request: (status, body) of the answer.
fn handle(st: &mut State, method: &str, path: &str, body: &str) -> (u16, Value) {
    let (path, query) = path.split_once('?').unwrap_or((path, ""));
    let dry_run = query == "dryRun=All";
    let not_found = |what: &str| {
        (
            404,
            json!({"kind": "Status", "message": format!("{what} not found")}),
        )
    };
    match (method, path) {
        ("GET", "/api/v1/nodes/node-a") => (200, json!({"metadata": {"name": NODE, "uid": "n-1"}})),
        ("GET", p) if p == format!("/apis/resource.k8s.io/v1/resourceslices/{SLICE}") => {
            match &st.slice {
                Some(s) => (200, s.clone()),
                None => not_found(SLICE),
            }
        }
        ("POST", "/apis/resource.k8s.io/v1/resourceslices") => {
            if st.slice.is_some() {
                return (409, json!({"message": "already exists"}));
            }
            let mut s: Value = serde_json::from_str(body).unwrap();
            if !st.gate_on {
                drop_disabled(&mut s);
            }
            s["metadata"]["generation"] = json!(1);
            store(st, s, dry_run, 201)
        }
        ("PUT", p) if p == format!("/apis/resource.k8s.io/v1/resourceslices/{SLICE}") => {
            let Some(old) = st.slice.clone() else {
                return not_found(SLICE);
            };
            let mut s: Value = serde_json::from_str(body).unwrap();
            if s["metadata"]["resourceVersion"] != old["metadata"]["resourceVersion"] {
                return (409, json!({"message": "the object has been modified"}));
            }
            if !st.gate_on && !in_use(&old) {
                drop_disabled(&mut s);
            }
            let generation = old["metadata"]["generation"].as_i64().unwrap_or(0);
            s["metadata"]["generation"] = json!(if s["spec"] != old["spec"] {
                generation + 1
            } else {
                generation
            });
            store(st, s, dry_run, 200)
        }
        (m, p) => (405, json!({"message": format!("{m} {p}: not served here")})),
    }
}

fn store(st: &mut State, mut s: Value, dry_run: bool, status: u16) -> (u16, Value) {
    if dry_run {
        st.dry_runs += 1;
        s["metadata"]["resourceVersion"] = json!(st.resource_version.to_string());
        return (status, s);
    }
    st.writes += 1;
    st.resource_version += 1;
    s["metadata"]["resourceVersion"] = json!(st.resource_version.to_string());
    st.slice = Some(s.clone());
    (status, s)
}

/// Serves the stand-in on a loopback port until the test ends.
fn api_server(state: Arc<Mutex<State>>) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut line = String::new();
            if r.read_line(&mut line).is_err() {
                continue;
            }
            let mut parts = line.split_whitespace();
            let method = parts.next().unwrap_or("").to_string();
            let path = parts.next().unwrap_or("").to_string();
            let mut len = 0usize;
            loop {
                let mut h = String::new();
                r.read_line(&mut h).unwrap();
                let h = h.trim_end();
                if h.is_empty() {
                    break;
                }
                if let Some((k, v)) = h.split_once(':') {
                    if k.eq_ignore_ascii_case("content-length") {
                        len = v.trim().parse().unwrap();
                    }
                }
            }
            let mut b = vec![0; len];
            r.read_exact(&mut b).unwrap();
            let body = String::from_utf8(b).unwrap();
            let (status, answer) = handle(&mut state.lock().unwrap(), &method, &path, &body);
            let answer = answer.to_string();
            let _ = write!(
                s,
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
                answer.len()
            );
        }
    });
    url
}

/// A node: a simulated vgpu.ko with two 24 GiB GPUs, and the stand-in.
struct Node {
    dir: tempfile::TempDir,
    url: String,
    state: Arc<Mutex<State>>,
}

impl Node {
    fn new(gate_on: bool) -> Self {
        let dir = tempfile::tempdir().unwrap();
        sim::init_tree(
            &dir.path().join("sys"),
            Some(&[(0, Some(24 * GIB)), (1, Some(24 * GIB))]),
            true,
        )
        .unwrap();
        let state = Arc::new(Mutex::new(State {
            gate_on,
            ..Default::default()
        }));
        let url = api_server(state.clone());
        Node { dir, url, state }
    }

    fn sysfs(&self) -> Sysfs {
        Sysfs::simulated(self.dir.path().join("sys"))
    }

    /// A plugin starting on the node.
    fn driver(&self) -> Driver {
        let p = |rel: &str| self.dir.path().join(rel);
        let gpus = (0..2)
            .map(|k| GpuFacts {
                index: k,
                uuid: Some(format!("GPU-0000000{k}-1111-2222-3333-444444444444")),
                product: Some("vgpu double GPU".into()),
                memory: 24 * GIB,
                compute_policy: None,
            })
            .collect();
        let cfg = Config {
            driver: "vgpu.dev".into(),
            node: NODE.into(),
            cdi_dir: p("cdi"),
            hook_path: "/usr/bin/vgpuctl".into(),
        };
        let api = HttpApi::new(&self.url, None, None).unwrap();
        Driver::new(
            cfg,
            self.sysfs(),
            Box::new(api),
            gpus,
            Store::new(p("plugin/checkpoint.json")),
        )
        .unwrap()
        .0
    }

    /// (pool generation, object generation, stored writes, dry runs).
    fn counts(&self) -> (i64, i64, usize, usize) {
        let st = self.state.lock().unwrap();
        let s = st.slice.as_ref().unwrap();
        (
            s["spec"]["pool"]["generation"].as_i64().unwrap(),
            s["metadata"]["generation"].as_i64().unwrap(),
            st.writes,
            st.dry_runs,
        )
    }

    fn devices(&self) -> Vec<Value> {
        let st = self.state.lock().unwrap();
        st.slice.as_ref().unwrap()["spec"]["devices"]
            .as_array()
            .unwrap()
            .clone()
    }

    /// `RESYNCS` resync periods: each finds the slice up to date.
    fn resyncs(&self, d: &Driver) {
        let before = self.counts();
        for i in 0..RESYNCS {
            let m = d.publish(Some("595.45.04")).unwrap();
            assert!(m.ends_with("up to date"), "resync {i}: {m}");
        }
        assert_eq!(self.counts(), before, "the slice changed while up to date");
    }
}

/// Every device whole: no sharing, no request policy, the capacities'
/// values kept (selectors may read them).
fn assert_whole(devs: &[Value]) {
    assert_eq!(devs.len(), 2);
    for d in devs {
        assert!(d.get("allowMultipleAllocations").is_none(), "{d}");
        assert_eq!(d["capacity"]["memory"], json!({"value": "24Gi"}), "{d}");
        assert_eq!(d["capacity"]["cores"], json!({"value": "100"}), "{d}");
    }
}

fn assert_shared(devs: &[Value]) {
    assert_eq!(devs.len(), 2);
    for d in devs {
        assert_eq!(d["allowMultipleAllocations"], true, "{d}");
        assert_eq!(
            d["capacity"]["memory"]["requestPolicy"]["default"], "24Gi",
            "{d}"
        );
    }
}

#[test]
fn with_consumable_capacity_off_the_slice_stays_put() {
    let n = Node::new(false);
    let d = n.driver();
    let m = d.publish(Some("595.45.04")).unwrap();
    assert!(
        m.contains("GPUs are published whole") && m.contains("created"),
        "{m}"
    );
    assert_eq!(d.consumable_capacity(), Some(false));
    // One create; the dry run that told the plugin what the server keeps
    // stored nothing.
    assert_eq!(n.counts(), (0, 1, 1, 1));
    assert_whole(&n.devices());
    n.resyncs(&d);

    // A restart asks again (a dry run) and finds the slice up to date.
    drop(d);
    let d = n.driver();
    let m = d.publish(Some("595.45.04")).unwrap();
    assert!(m.ends_with("up to date"), "{m}");
    assert_eq!(n.counts(), (0, 1, 1, 2));
    n.resyncs(&d);

    // A real change still goes out, once, and stays whole.
    n.sysfs()
        .write_gpu_attr(1, "compute_policy", "work-conserving")
        .unwrap();
    let m = d.publish(Some("595.45.04")).unwrap();
    assert!(m.contains("replaced"), "{m}");
    assert_eq!(n.counts(), (1, 2, 2, 2));
    assert_whole(&n.devices());
    n.resyncs(&d);
}

#[test]
fn with_consumable_capacity_on_gpus_are_shared() {
    let n = Node::new(true);
    let d = n.driver();
    let m = d.publish(Some("595.45.04")).unwrap();
    assert!(m.contains("created") && !m.contains("whole"), "{m}");
    assert_eq!(d.consumable_capacity(), Some(true));
    assert_eq!(n.counts(), (0, 1, 1, 1));
    assert_shared(&n.devices());
    n.resyncs(&d);
    // A restart finds its shared slice stored as it was sent: no question
    // to the server needed.
    drop(d);
    let d = n.driver();
    assert!(d
        .publish(Some("595.45.04"))
        .unwrap()
        .ends_with("up to date"));
    assert_eq!(n.counts(), (0, 1, 1, 1));
    n.resyncs(&d);
}

#[test]
fn a_gate_turned_on_shares_the_gpus_from_the_next_start() {
    let n = Node::new(false);
    let d = n.driver();
    d.publish(Some("595.45.04")).unwrap();
    assert_whole(&n.devices());
    // The cluster is upgraded to 1.36 (the gate on by default); the
    // running plugin keeps what it has, its next start shares the GPUs.
    n.state.lock().unwrap().gate_on = true;
    n.resyncs(&d);
    drop(d);
    let d = n.driver();
    let m = d.publish(Some("595.45.04")).unwrap();
    assert!(m.contains("replaced"), "{m}");
    assert_eq!(d.consumable_capacity(), Some(true));
    assert_shared(&n.devices());
    assert_eq!(n.counts().0, 1);
    n.resyncs(&d);
}
