// SPDX-License-Identifier: GPL-2.0

//! `vgpuctl exporter` against a simulated module: the exposition fetched
//! over HTTP with a real client (ureq) and parsed, errors (404, 405, 408,
//! 431), slow and oversized requests, SIGTERM, `--once`.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{Fake, GIB};

/// One sample: labels and value.
#[derive(Debug, Clone, PartialEq)]
struct Sample {
    labels: BTreeMap<String, String>,
    value: f64,
}

/// A parsed exposition: samples by metric name, and `# HELP` / `# TYPE`.
#[derive(Debug, Default)]
struct Exposition {
    samples: BTreeMap<String, Vec<Sample>>,
    help: BTreeMap<String, String>,
    types: BTreeMap<String, String>,
}

impl Exposition {
    /// Parses the text format (0.0.4), strictly enough to catch mistakes:
    /// every sample's family has HELP and TYPE before it, label values are
    /// quoted and escaped, values are numbers (or +Inf).
    fn parse(text: &str) -> Self {
        let mut e = Exposition::default();
        assert!(text.ends_with('\n'), "no final newline: {text:?}");
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# HELP ") {
                let (name, help) = rest.split_once(' ').expect(line);
                assert!(e.help.insert(name.into(), help.into()).is_none(), "{line}");
                continue;
            }
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').expect(line);
                assert!(["gauge", "counter"].contains(&kind), "{line}");
                assert!(e.types.insert(name.into(), kind.into()).is_none(), "{line}");
                continue;
            }
            assert!(!line.starts_with('#') && !line.is_empty(), "{line:?}");
            let (name, labels, value) = match line.find('{') {
                Some(i) => {
                    let (labels, rest) = parse_labels(&line[i + 1..]);
                    (&line[..i], labels, rest.strip_prefix(' ').expect(line))
                }
                None => {
                    let (n, v) = line.split_once(' ').expect(line);
                    (n, BTreeMap::new(), v)
                }
            };
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
                "{line}"
            );
            assert!(
                e.help.contains_key(name) && e.types.contains_key(name),
                "{line}"
            );
            let value = match value {
                "+Inf" => f64::INFINITY,
                v => v.parse().unwrap_or_else(|_| panic!("value in {line:?}")),
            };
            e.samples
                .entry(name.into())
                .or_default()
                .push(Sample { labels, value });
        }
        e
    }

    /// The value of `name` for vGPU `vgpu` (or unlabelled if `None`).
    fn get(&self, name: &str, vgpu: Option<u32>) -> Option<f64> {
        let want = vgpu.map(|v| v.to_string());
        self.samples
            .get(name)?
            .iter()
            .find(|s| s.labels.get("vgpu") == want.as_ref())
            .map(|s| s.value)
    }

    /// The samples of `name` for physical GPU `gpu` (per-GPU families).
    fn for_gpu(&self, name: &str, gpu: u32) -> Vec<Sample> {
        let k = gpu.to_string();
        self.samples
            .get(name)
            .map(|v| {
                v.iter()
                    .filter(|s| s.labels.get("gpu") == Some(&k))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    fn labels(&self, name: &str, vgpu: u32) -> BTreeMap<String, String> {
        let v = vgpu.to_string();
        self.samples[name]
            .iter()
            .find(|s| s.labels.get("vgpu") == Some(&v))
            .unwrap()
            .labels
            .clone()
    }
}

/// `a="x",b="y\"z"}` -> labels and what follows the `}`.
fn parse_labels(s: &str) -> (BTreeMap<String, String>, &str) {
    let mut labels = BTreeMap::new();
    let mut rest = s;
    loop {
        if let Some(r) = rest.strip_prefix('}') {
            return (labels, r);
        }
        let eq = rest.find('=').expect(s);
        let name = &rest[..eq];
        let mut chars = rest[eq + 1..].char_indices();
        assert_eq!(chars.next().map(|c| c.1), Some('"'), "{s}");
        let mut value = String::new();
        let end;
        loop {
            match chars.next().expect(s) {
                (_, '\\') => match chars.next().expect(s).1 {
                    'n' => value.push('\n'),
                    c @ ('\\' | '"') => value.push(c),
                    c => panic!("bad escape \\{c} in {s}"),
                },
                (i, '"') => {
                    end = eq + 1 + i + 1;
                    break;
                }
                (_, c) => value.push(c),
            }
        }
        labels.insert(name.to_string(), value);
        rest = &rest[end..];
        rest = rest.strip_prefix(',').unwrap_or(rest);
    }
}

/// A running `vgpuctl exporter`, killed when dropped.
struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Server {
    fn start(f: &Fake) -> Server {
        Server::start_with(f, "1")
    }

    /// With `--timeout SECS`.
    fn start_with(f: &Fake, secs: &str) -> Server {
        let mut child = f
            .cmd(&["exporter", "--listen", "127.0.0.1:0", "--timeout", secs])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The address is in the first line on stderr.
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stderr);
            let mut line = String::new();
            let _ = r.read_line(&mut line);
            let _ = tx.send(line);
            // Keep draining so the server never blocks on a full pipe.
            let _ = std::io::copy(&mut r, &mut std::io::sink());
        });
        let line = rx.recv_timeout(Duration::from_secs(20)).unwrap_or_default();
        let addr = line
            .trim()
            .strip_prefix("vgpuctl: exporter: listening on http://")
            .and_then(|r| r.strip_suffix("/metrics"))
            .and_then(|a| a.parse().ok());
        let Some(addr) = addr else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("exporter did not start: {line:?}");
        };
        Server { child, addr }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Waits up to `limit` for the process to exit.
    fn wait(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let start = Instant::now();
        while start.elapsed() < limit {
            if let Some(st) = self.child.try_wait().unwrap() {
                return Some(st);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into()
}

/// GET `path`: status, Content-Type, body.
fn get(s: &Server, path: &str) -> (u16, String, String) {
    let mut r = agent().get(&s.url(path)).call().unwrap();
    let ct = r
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let body = r.body_mut().read_to_string().unwrap();
    (r.status().as_u16(), ct, body)
}

fn metrics(s: &Server) -> Exposition {
    let (status, ct, body) = get(s, "/metrics");
    assert_eq!(status, 200, "{body}");
    assert!(ct.starts_with("text/plain; version=0.0.4"), "{ct}");
    Exposition::parse(&body)
}

/// Two vGPUs: vgpu0 on GPU 0 with 6 GiB, bound to a cgroup whose name needs
/// escaping; vgpu3 with no limit, no GPU, unbound.
fn two_vgpus(compute: bool) -> Fake {
    let f = Fake::new(1, Some(24), compute);
    f.ok(&[
        "create",
        "--cgroup",
        "/pods/we\"ird\\x",
        "--memory",
        "6GiB",
        "--gpu",
        "0",
    ]);
    f.ok(&["create", "--id", "3", "--gpu", "0", "--force"]);
    fs::write(f.vgpu_dir(3).join("gpu"), "\n").unwrap();
    vgpuctl::sysfs::sim::set_memory(&f.sys(), 0, 12345, 4096).unwrap();
    f.set_users(0, 2);
    f
}

const FAMILIES: &[(&str, &str)] = &[
    ("vgpu_up", "gauge"),
    ("vgpu_memory_limit_bytes", "gauge"),
    ("vgpu_memory_used_bytes", "gauge"),
    ("vgpu_memory_managed_bytes", "gauge"),
    ("vgpu_users", "gauge"),
    ("vgpu_alloc_refused_total", "counter"),
    ("vgpu_exporter_scrape_errors_total", "counter"),
];

const OPTIONAL: &[(&str, &str)] = &[
    ("vgpu_compute_share_percent", "gauge"),
    ("vgpu_compute_priority", "gauge"),
    ("vgpu_compute_frozen", "gauge"),
    ("vgpu_granted_seconds_total", "counter"),
    ("vgpu_throttled_seconds_total", "counter"),
    ("vgpu_busy_seconds_total", "counter"),
    ("vgpu_compute_tsgs", "gauge"),
    ("vgpu_gpu_compute_policy", "gauge"),
    ("vgpu_gpu_compute_period_seconds", "gauge"),
];

#[test]
fn metrics_over_http() {
    let f = two_vgpus(false);
    let s = Server::start(&f);
    let m = metrics(&s);
    for (name, kind) in FAMILIES {
        assert_eq!(
            m.types.get(*name).map(String::as_str),
            Some(*kind),
            "{name}"
        );
        assert!(!m.help[*name].is_empty());
    }
    // Without the compute files, those families are absent.
    for (name, _) in OPTIONAL {
        assert!(!m.types.contains_key(*name), "{name}");
    }
    assert_eq!(m.get("vgpu_up", None), Some(1.0));
    assert_eq!(m.get("vgpu_exporter_scrape_errors_total", None), Some(0.0));
    assert_eq!(
        m.get("vgpu_memory_limit_bytes", Some(0)),
        Some((6 * GIB) as f64)
    );
    assert_eq!(
        m.get("vgpu_memory_limit_bytes", Some(3)),
        Some(f64::INFINITY)
    );
    assert_eq!(m.get("vgpu_memory_used_bytes", Some(0)), Some(12345.0));
    assert_eq!(m.get("vgpu_memory_used_bytes", Some(3)), Some(0.0));
    assert_eq!(m.get("vgpu_memory_managed_bytes", Some(0)), Some(4096.0));
    assert_eq!(m.get("vgpu_memory_managed_bytes", Some(3)), Some(0.0));
    assert_eq!(
        m.labels("vgpu_memory_managed_bytes", 0),
        m.labels("vgpu_memory_used_bytes", 0)
    );
    assert_eq!(m.get("vgpu_users", Some(0)), Some(2.0));
    let l = m.labels("vgpu_users", 0);
    assert_eq!(l["gpu"], "0");
    assert_eq!(l["cgroup"], "/pods/we\"ird\\x");
    let l = m.labels("vgpu_users", 3);
    assert_eq!((l["gpu"].as_str(), l["cgroup"].as_str()), ("", ""));

    // Read afresh on every scrape.
    fs::write(f.vgpu_dir(0).join("memory_used"), "999\n").unwrap();
    f.ok(&["remove", "3"]);
    let m = metrics(&s);
    assert_eq!(m.get("vgpu_memory_used_bytes", Some(0)), Some(999.0));
    assert_eq!(m.get("vgpu_memory_used_bytes", Some(3)), None);

    // A query string is fine; HEAD gets the headers only.
    assert_eq!(get(&s, "/metrics?x=1").0, 200);
    let r = agent().head(&s.url("/metrics")).call().unwrap();
    assert_eq!(r.status().as_u16(), 200);
}

#[test]
fn compute_and_refusal_counters() {
    let f = two_vgpus(true);
    f.ok(&[
        "set",
        "0",
        "--compute",
        "30%",
        "--compute-policy",
        "work-conserving",
    ]);
    f.put(0, "compute_granted_us", "1500000");
    f.put(0, "compute_throttled_us", "250");
    f.put(0, "compute_tsgs", "4");
    f.put(0, "compute_busy_us", "2000000");
    f.put(0, "memory_refused", "7");
    f.ok(&["set", "0", "--priority", "2"]);
    f.ok(&["freeze", "0"]);
    // A malformed file: counted as a scrape error, its series left out.
    f.put(3, "compute_granted_us", "soon");
    let s = Server::start(&f);
    let m = metrics(&s);
    for (name, kind) in OPTIONAL {
        assert_eq!(
            m.types.get(*name).map(String::as_str),
            Some(*kind),
            "{name}"
        );
    }
    assert_eq!(m.get("vgpu_compute_share_percent", Some(0)), Some(30.0));
    // The module's default share.
    assert_eq!(m.get("vgpu_compute_share_percent", Some(3)), Some(100.0));
    assert_eq!(m.get("vgpu_granted_seconds_total", Some(0)), Some(1.5));
    assert_eq!(
        m.get("vgpu_throttled_seconds_total", Some(0)),
        Some(0.00025)
    );
    assert_eq!(m.get("vgpu_throttled_seconds_total", Some(3)), Some(0.0));
    assert_eq!(m.get("vgpu_compute_priority", Some(0)), Some(2.0));
    assert_eq!(m.get("vgpu_compute_priority", Some(3)), Some(1.0));
    assert_eq!(m.get("vgpu_compute_frozen", Some(0)), Some(1.0));
    assert_eq!(m.get("vgpu_compute_frozen", Some(3)), Some(0.0));
    assert_eq!(m.get("vgpu_busy_seconds_total", Some(0)), Some(2.0));
    assert_eq!(m.get("vgpu_busy_seconds_total", Some(3)), Some(0.0));
    assert_eq!(
        m.labels("vgpu_compute_frozen", 0),
        m.labels("vgpu_granted_seconds_total", 0)
    );
    assert_eq!(m.get("vgpu_compute_tsgs", Some(0)), Some(4.0));
    assert_eq!(m.get("vgpu_compute_tsgs", Some(3)), Some(0.0));
    assert_eq!(m.get("vgpu_alloc_refused_total", Some(0)), Some(7.0));
    assert_eq!(m.get("vgpu_alloc_refused_total", Some(3)), Some(0.0));
    assert_eq!(m.get("vgpu_granted_seconds_total", Some(3)), None);
    assert_eq!(m.get("vgpu_exporter_scrape_errors_total", None), Some(1.0));

    // Per physical GPU: one policy sample (1, with the policy as a label)
    // and the period; no vgpu label.
    let p = m.for_gpu("vgpu_gpu_compute_policy", 0);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].labels.len(), 2, "{p:?}");
    assert_eq!(p[0].labels["policy"], "work-conserving");
    assert_eq!(p[0].value, 1.0);
    let t = m.for_gpu("vgpu_gpu_compute_period_seconds", 0);
    assert_eq!(t.len(), 1, "{t:?}");
    assert_eq!(t[0].value, 0.05);
    assert!(!t[0].labels.contains_key("vgpu"));

    // The counter counts across scrapes; settings are read afresh.
    f.ok(&[
        "set",
        "0",
        "--period-us",
        "1000",
        "--compute-policy",
        "fixed",
    ]);
    f.ok(&["thaw", "0"]);
    let m = metrics(&s);
    assert_eq!(m.get("vgpu_exporter_scrape_errors_total", None), Some(2.0));
    assert_eq!(m.get("vgpu_compute_frozen", Some(0)), Some(0.0));
    assert_eq!(
        m.for_gpu("vgpu_gpu_compute_policy", 0)[0].labels["policy"],
        "fixed"
    );
    assert_eq!(
        m.for_gpu("vgpu_gpu_compute_period_seconds", 0)[0].value,
        0.001
    );
}

/// A module with compute shares from before priorities has no
/// `compute_priority`, `compute_frozen`, `compute_busy_us`: those families
/// are left out, without a scrape error; the other compute series stay.
#[test]
fn priority_families_without_the_files() {
    let f = two_vgpus(true);
    for id in [0, 3] {
        for name in ["compute_priority", "compute_frozen", "compute_busy_us"] {
            fs::remove_file(f.vgpu_dir(id).join(name)).unwrap();
        }
    }
    let r = f.ok(&["exporter", "--once"]);
    let m = Exposition::parse(&r.out);
    for name in [
        "vgpu_compute_priority",
        "vgpu_compute_frozen",
        "vgpu_busy_seconds_total",
    ] {
        assert!(!r.out.contains(name), "{name}: {}", r.out);
    }
    assert_eq!(m.get("vgpu_compute_share_percent", Some(0)), Some(100.0));
    assert_eq!(m.get("vgpu_granted_seconds_total", Some(0)), Some(0.0));
    assert_eq!(m.get("vgpu_exporter_scrape_errors_total", None), Some(0.0));
}

/// A module from before the UVM proxy has no `memory_managed`: the family
/// is left out, without a scrape error; one vGPU lacking it leaves out only
/// its series.
#[test]
fn managed_memory_without_the_file() {
    let f = two_vgpus(false);
    fs::remove_file(f.vgpu_dir(3).join("memory_managed")).unwrap();
    let m = Exposition::parse(&f.ok(&["exporter", "--once"]).out);
    assert_eq!(m.get("vgpu_memory_managed_bytes", Some(0)), Some(4096.0));
    assert_eq!(m.get("vgpu_memory_managed_bytes", Some(3)), None);
    fs::remove_file(f.vgpu_dir(0).join("memory_managed")).unwrap();
    let r = f.ok(&["exporter", "--once"]);
    let m = Exposition::parse(&r.out);
    assert!(!r.out.contains("vgpu_memory_managed_bytes"), "{}", r.out);
    assert_eq!(m.get("vgpu_memory_used_bytes", Some(0)), Some(12345.0));
    assert_eq!(m.get("vgpu_exporter_scrape_errors_total", None), Some(0.0));
    // A malformed one is a scrape error.
    f.put(3, "memory_managed", "lots");
    let m = Exposition::parse(&f.ok(&["exporter", "--once"]).out);
    assert_eq!(m.get("vgpu_memory_managed_bytes", Some(3)), None);
    assert_eq!(m.get("vgpu_exporter_scrape_errors_total", None), Some(1.0));
}

#[test]
fn gpu_series_without_vgpus() {
    // The module as it is (gpuK/ directories, no `gpus` file), no vGPUs yet.
    let f = Fake::like_module(&[0, 1], 2);
    let r = f.ok(&["exporter", "--once"]);
    let m = Exposition::parse(&r.out);
    for k in [0, 1] {
        let p = m.for_gpu("vgpu_gpu_compute_policy", k);
        assert_eq!(p.len(), 1, "{}", r.out);
        assert_eq!(p[0].labels["policy"], "fixed");
        assert_eq!(
            m.for_gpu("vgpu_gpu_compute_period_seconds", k)[0].value,
            0.05
        );
    }
    assert!(!m.samples.contains_key("vgpu_compute_share_percent"));
    assert!(
        r.out
            .contains("vgpu_gpu_compute_policy{gpu=\"1\",policy=\"fixed\"} 1\n"),
        "{}",
        r.out
    );
    assert!(
        r.out
            .contains("vgpu_gpu_compute_period_seconds{gpu=\"0\"} 0.050000\n"),
        "{}",
        r.out
    );
}

#[test]
fn not_found_and_method_not_allowed() {
    let f = Fake::new(1, None, false);
    let s = Server::start(&f);
    for path in ["/", "/metricsx", "/metrics/", "/favicon.ico"] {
        assert_eq!(get(&s, path).0, 404, "{path}");
    }
    let r = agent().post(&s.url("/metrics")).send("x=1").unwrap();
    assert_eq!(r.status().as_u16(), 405);
    assert_eq!(r.headers().get("allow").unwrap(), "GET, HEAD");
    let r = agent().delete(&s.url("/metrics")).call().unwrap();
    assert_eq!(r.status().as_u16(), 405);
    // Still serving.
    assert_eq!(metrics(&s).get("vgpu_up", None), Some(1.0));
}

/// Reads what the server sends until it closes, within 10 s.
fn read_reply(c: &mut TcpStream) -> String {
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut out = Vec::new();
    let _ = c.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn slow_oversized_and_bad_requests_do_not_hang() {
    let f = Fake::new(1, None, false);
    let s = Server::start_with(&f, "3");

    // A client that sends half a head and stalls, one that sends nothing.
    let mut slow = TcpStream::connect(s.addr).unwrap();
    slow.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    let mut idle = TcpStream::connect(s.addr).unwrap();

    // Others are served meanwhile, at once.
    let t = Instant::now();
    assert_eq!(metrics(&s).get("vgpu_up", None), Some(1.0));
    assert!(
        t.elapsed() < Duration::from_millis(900),
        "{:?}",
        t.elapsed()
    );

    // The stalled ones are answered 408 and closed after the timeout (1 s).
    let t = Instant::now();
    let r = read_reply(&mut slow);
    assert!(r.starts_with("HTTP/1.1 408 "), "{r:?}");
    assert!(read_reply(&mut idle).starts_with("HTTP/1.1 408 "));
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());

    // An endless head: 431 once it passes the limit.
    let mut big = TcpStream::connect(s.addr).unwrap();
    let mut req = b"GET /metrics HTTP/1.1\r\n".to_vec();
    for i in 0..400 {
        req.extend_from_slice(format!("X-Padding-{i}: {}\r\n", "a".repeat(100)).as_bytes());
    }
    big.write_all(&req).unwrap();
    let r = read_reply(&mut big);
    assert!(r.starts_with("HTTP/1.1 431 "), "{r:?}");

    // Garbage: 400.
    for bad in [
        &b"HELLO\r\n\r\n"[..],
        b"GET metrics HTTP/1.1\r\n\r\n",
        b"GET /metrics SPDY/3\r\n\r\n",
    ] {
        let mut c = TcpStream::connect(s.addr).unwrap();
        c.write_all(bad).unwrap();
        let r = read_reply(&mut c);
        assert!(r.starts_with("HTTP/1.1 400 "), "{bad:?}: {r:?}");
    }

    // A raw HTTP/1.0 request without headers still works.
    let mut c = TcpStream::connect(s.addr).unwrap();
    c.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
    let r = read_reply(&mut c);
    assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r:?}");
    assert!(
        r.contains("\r\nContent-Type: text/plain; version=0.0.4"),
        "{r:?}"
    );
    assert!(r.contains("\nvgpu_up 1\n"), "{r:?}");

    assert_eq!(metrics(&s).get("vgpu_up", None), Some(1.0));
}

#[test]
fn stops_cleanly_on_sigterm() {
    let f = Fake::new(1, None, false);
    let mut s = Server::start(&f);
    assert_eq!(metrics(&s).get("vgpu_up", None), Some(1.0));
    let pid = i32::try_from(s.child.id()).unwrap();
    // SAFETY: signalling the child we started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let st = s
        .wait(Duration::from_secs(10))
        .expect("exporter still running");
    assert!(st.success(), "{st:?}");
}

#[test]
fn module_not_loaded() {
    let f = Fake::unloaded();
    let s = Server::start(&f);
    let m = metrics(&s);
    assert_eq!(m.get("vgpu_up", None), Some(0.0));
    assert_eq!(m.get("vgpu_exporter_scrape_errors_total", None), Some(0.0));
    assert!(!m.samples.contains_key("vgpu_memory_used_bytes"));
}

#[test]
fn once_prints_and_exits() {
    let f = two_vgpus(false);
    let r = f.ok(&["exporter", "--once"]);
    let m = Exposition::parse(&r.out);
    assert_eq!(m.get("vgpu_up", None), Some(1.0));
    assert_eq!(m.get("vgpu_memory_used_bytes", Some(0)), Some(12345.0));
    assert_eq!(
        m.get("vgpu_memory_limit_bytes", Some(3)),
        Some(f64::INFINITY)
    );

    let r = Fake::unloaded().ok(&["exporter", "--once"]);
    assert!(r.out.contains("\nvgpu_up 0\n"), "{}", r.out);

    let r = f.run(&["--json", "exporter", "--once"]);
    assert_eq!(r.code, 2, "{}", r.err);
}

#[test]
fn listen_errors() {
    let f = Fake::new(1, None, false);
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let r = f.run(&["exporter", "--listen", &addr]);
    assert_eq!(r.code, 1, "{}", r.err);
    assert!(r.err.contains("cannot listen on"), "{}", r.err);
    let r = f.run(&["exporter", "--timeout", "0"]);
    assert_eq!(r.code, 2, "{}", r.err);
}
