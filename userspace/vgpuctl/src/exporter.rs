// SPDX-License-Identifier: GPL-2.0

//! `vgpuctl exporter`: the vGPUs' settings and counters in the Prometheus
//! text exposition format (version 0.0.4), served over HTTP at `/metrics`
//! or printed once.
//!
//! The HTTP side is a deliberately small HTTP/1.1 server on `std::net`: one
//! thread per connection (at most [`MAX_CONNECTIONS`] at a time), a request
//! head of at most [`MAX_HEAD`] bytes read within a deadline, one response,
//! then the connection is closed. sysfs is read afresh on every scrape.
//!
//! Metric families (see `docs/vgpuctl.md`): per vGPU `vgpu_up`,
//! `vgpu_memory_limit_bytes` (`+Inf` for no limit), `vgpu_memory_used_bytes`,
//! `vgpu_users`, and, when the module has the files,
//! `vgpu_memory_managed_bytes`, `vgpu_compute_share_percent`,
//! `vgpu_compute_priority`, `vgpu_compute_frozen` (0 or 1),
//! `vgpu_granted_seconds_total`, `vgpu_throttled_seconds_total`,
//! `vgpu_busy_seconds_total`, `vgpu_compute_tsgs`,
//! `vgpu_alloc_refused_total`; per physical GPU (`gpuK/`)
//! `vgpu_gpu_compute_policy` (info style: 1 with a `policy` label) and
//! `vgpu_gpu_compute_period_seconds`; plus
//! `vgpu_exporter_scrape_errors_total`.

use std::fmt::Write as _;
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::sysfs::Sysfs;

/// The default listen address.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9835";

/// The `Content-Type` of the exposition.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The longest request head accepted (request line and headers).
pub const MAX_HEAD: usize = 8192;

/// Connections served at once; more are closed at once.
pub const MAX_CONNECTIONS: usize = 32;

/// Counters that live as long as the exporter.
#[derive(Debug, Default)]
pub struct Stats {
    /// Problems met while scraping (unreadable or malformed files).
    pub scrape_errors: AtomicU64,
}

/// One metric family: name, type, help, and its samples (labels, value).
struct Family {
    name: &'static str,
    kind: &'static str,
    help: &'static str,
    samples: Vec<(String, String)>,
}

impl Family {
    fn new(name: &'static str, kind: &'static str, help: &'static str) -> Self {
        Self {
            name,
            kind,
            help,
            samples: Vec::new(),
        }
    }
}

/// A label value escaped as the exposition format wants it: `\`, `"` and
/// newline become `\\`, `\"` and `\n`.
pub fn escape_label(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s
}

/// Microseconds as exact decimal seconds (`1500000` is `1.500000`).
pub fn seconds(us: u64) -> String {
    format!("{}.{:06}", us / 1_000_000, us % 1_000_000)
}

/// The contents of a file read with `read` (a vGPU's or a GPU's): `None`
/// if the file does not exist (or the vGPU went away meanwhile); other
/// errors count as a scrape error.
fn read_text(read: Result<Option<String>>, stats: &Stats) -> Option<String> {
    match read {
        Ok(v) => v,
        Err(Error::UnknownVgpu(_)) => None,
        Err(_) => {
            stats.scrape_errors.fetch_add(1, Ordering::Relaxed);
            None
        }
    }
}

/// A decimal number read with `read`, as [`read_text`]; malformed contents
/// count as a scrape error.
fn read_u64(read: Result<Option<String>>, stats: &Stats) -> Option<u64> {
    let v = read_text(read, stats)?;
    match v.parse() {
        Ok(n) => Some(n),
        Err(_) => {
            stats.scrape_errors.fetch_add(1, Ordering::Relaxed);
            None
        }
    }
}

/// Reads one decimal counter file of vGPU `id` (see [`read_u64`]).
fn read_num(s: &Sysfs, id: u32, name: &str, stats: &Stats) -> Option<u64> {
    read_u64(s.read_attr(id, name), stats)
}

/// The exposition for the module under `s`, read now.
pub fn render(s: &Sysfs, stats: &Stats) -> String {
    let mut up = Family::new(
        "vgpu_up",
        "gauge",
        "1 if the vgpu module is loaded (/sys/class/vgpu exists), else 0.",
    );
    let mut limit = Family::new(
        "vgpu_memory_limit_bytes",
        "gauge",
        "GPU memory ceiling of the vGPU in bytes (+Inf: no limit).",
    );
    let mut used = Family::new(
        "vgpu_memory_used_bytes",
        "gauge",
        "GPU memory charged to the vGPU in bytes.",
    );
    let mut managed = Family::new(
        "vgpu_memory_managed_bytes",
        "gauge",
        "Part of vgpu_memory_used_bytes charged for managed (nvidia-uvm) mappings, in bytes.",
    );
    let mut users = Family::new(
        "vgpu_users",
        "gauge",
        "Open files of the vGPU's device node.",
    );
    let mut share = Family::new(
        "vgpu_compute_share_percent",
        "gauge",
        "Compute share of the vGPU in percent of its GPU.",
    );
    let mut priority = Family::new(
        "vgpu_compute_priority",
        "gauge",
        "Compute priority level of the vGPU, 0 (best-effort) to 3: while a vGPU of a higher level on its GPU has work, lower levels do not run.",
    );
    let mut frozen = Family::new(
        "vgpu_compute_frozen",
        "gauge",
        "1 while the vGPU's work is frozen (its TSGs disabled and preempted, its memory still charged), else 0.",
    );
    let mut granted = Family::new(
        "vgpu_granted_seconds_total",
        "counter",
        "Time the vGPU's scheduling window was open on its GPU, in seconds.",
    );
    let mut throttled = Family::new(
        "vgpu_throttled_seconds_total",
        "counter",
        "Time the vGPU had work while another vGPU's window (or the idle window) was open, in seconds.",
    );
    let mut busy = Family::new(
        "vgpu_busy_seconds_total",
        "counter",
        "Time the vGPU had runnable work, whether or not its window was open, in seconds.",
    );
    let mut tsgs = Family::new(
        "vgpu_compute_tsgs",
        "gauge",
        "TSGs and channels outside TSGs the compute scheduler tracks for the vGPU.",
    );
    let mut refused = Family::new(
        "vgpu_alloc_refused_total",
        "counter",
        "GPU memory allocations refused for passing the vGPU's limit.",
    );
    let mut procs = Family::new(
        "vgpu_process_memory_used_bytes",
        "gauge",
        "GPU memory charged to one process on the vGPU's ledger, in bytes (its host PID and command name in the labels).",
    );
    let mut policy = Family::new(
        "vgpu_gpu_compute_policy",
        "gauge",
        "Compute policy of the physical GPU, for all its vGPUs: 1 for the policy in the label.",
    );
    let mut period = Family::new(
        "vgpu_gpu_compute_period_seconds",
        "gauge",
        "Compute scheduling period of the physical GPU, in seconds.",
    );

    let (ids, loaded) = match s.ids() {
        Ok(ids) => {
            up.samples.push((String::new(), "1".into()));
            (ids, true)
        }
        Err(e) => {
            if !matches!(e, Error::ModuleNotLoaded(_)) {
                stats.scrape_errors.fetch_add(1, Ordering::Relaxed);
            }
            up.samples.push((String::new(), "0".into()));
            (Vec::new(), false)
        }
    };

    for id in ids {
        let text = |name: &str| read_text(s.read_attr(id, name), stats);
        // A vGPU removed during the scrape is simply left out.
        let (Some(gpu), Some(cgroup)) = (text("gpu"), text("cgroup")) else {
            continue;
        };
        let labels = format!(
            "vgpu=\"{id}\",gpu=\"{}\",cgroup=\"{}\"",
            escape_label(&gpu),
            escape_label(&cgroup)
        );
        match text("memory_limit").as_deref() {
            Some("max") => limit.samples.push((labels.clone(), "+Inf".into())),
            Some(v) => match v.parse::<u64>() {
                Ok(n) => limit.samples.push((labels.clone(), n.to_string())),
                Err(_) => {
                    stats.scrape_errors.fetch_add(1, Ordering::Relaxed);
                }
            },
            None => {}
        }
        let plain = [
            (&mut used, "memory_used"),
            (&mut managed, "memory_managed"),
            (&mut users, "users"),
            (&mut share, "compute_share"),
            (&mut priority, "compute_priority"),
            (&mut tsgs, "compute_tsgs"),
            (&mut refused, "memory_refused"),
        ];
        for (fam, file) in plain {
            if let Some(n) = read_num(s, id, file, stats) {
                fam.samples.push((labels.clone(), n.to_string()));
            }
        }
        // A flag: anything but 0 or 1 is malformed.
        match read_num(s, id, "compute_frozen", stats) {
            Some(n @ 0..=1) => frozen.samples.push((labels.clone(), n.to_string())),
            Some(_) => {
                stats.scrape_errors.fetch_add(1, Ordering::Relaxed);
            }
            None => {}
        }
        if let Some(t) = text("processes") {
            match crate::model::parse_processes("processes", &t) {
                Ok(list) => {
                    for p in list {
                        procs.samples.push((
                            format!(
                                "vgpu=\"{id}\",pid=\"{}\",command=\"{}\"",
                                p.pid,
                                escape_label(&p.command)
                            ),
                            p.memory_used.to_string(),
                        ));
                    }
                }
                Err(_) => {
                    stats.scrape_errors.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        for (fam, file) in [
            (&mut granted, "compute_granted_us"),
            (&mut throttled, "compute_throttled_us"),
            (&mut busy, "compute_busy_us"),
        ] {
            if let Some(n) = read_num(s, id, file, stats) {
                fam.samples.push((labels.clone(), seconds(n)));
            }
        }
    }

    // The physical GPUs' settings (`gpuK/`, on a module with compute shares).
    let gpus = if loaded {
        s.gpu_ids().unwrap_or_else(|_| {
            stats.scrape_errors.fetch_add(1, Ordering::Relaxed);
            Vec::new()
        })
    } else {
        Vec::new()
    };
    for k in gpus {
        let labels = format!("gpu=\"{k}\"");
        if let Some(p) = read_text(s.read_gpu_attr(k, "compute_policy"), stats) {
            policy.samples.push((
                format!("{labels},policy=\"{}\"", escape_label(&p)),
                "1".into(),
            ));
        }
        if let Some(us) = read_u64(s.read_gpu_attr(k, "compute_period_us"), stats) {
            period.samples.push((labels, seconds(us)));
        }
    }

    // Read last, so that this scrape's own errors are in it.
    let mut errors = Family::new(
        "vgpu_exporter_scrape_errors_total",
        "counter",
        "Problems met while reading sysfs (unreadable or malformed files) since the exporter started.",
    );
    errors.samples.push((
        String::new(),
        stats.scrape_errors.load(Ordering::Relaxed).to_string(),
    ));

    let mut out = String::new();
    for f in [
        up, limit, used, managed, users, share, priority, frozen, granted, throttled, busy, tsgs,
        refused, procs, policy, period, errors,
    ] {
        if f.samples.is_empty() {
            continue;
        }
        let _ = writeln!(out, "# HELP {} {}", f.name, f.help);
        let _ = writeln!(out, "# TYPE {} {}", f.name, f.kind);
        for (labels, value) in &f.samples {
            if labels.is_empty() {
                let _ = writeln!(out, "{} {value}", f.name);
            } else {
                let _ = writeln!(out, "{}{{{labels}}} {value}", f.name);
            }
        }
    }
    out
}

/// Set by SIGTERM and SIGINT.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// Makes SIGTERM and SIGINT stop [`serve`] (without `SA_RESTART`, so a
/// blocked `poll` returns at once). Call it before announcing the address.
pub fn install_signal_handlers() -> io::Result<()> {
    for sig in [libc::SIGTERM, libc::SIGINT] {
        // SAFETY: a zeroed sigaction is a valid value to fill in; the
        // handler only stores to an atomic, which is async-signal-safe.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            libc::sigemptyset(&mut sa.sa_mask);
            if libc::sigaction(sig, &sa, std::ptr::null_mut()) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

/// Waits up to `ms` for a connection on `l`; `false` on timeout or signal.
fn wait_readable(l: &TcpListener, ms: i32) -> bool {
    let mut p = libc::pollfd {
        fd: l.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: `p` is one valid pollfd for the duration of the call.
    let n = unsafe { libc::poll(&mut p, 1, ms) };
    n > 0
}

/// How the server treats requests.
#[derive(Clone, Copy, Debug)]
pub struct ServerConfig {
    /// Time allowed to receive the request head (and to send the response).
    pub timeout: Duration,
}

/// Serves `/metrics` on `listener` until SIGTERM or SIGINT (once
/// [`install_signal_handlers`] has been called).
pub fn serve(listener: TcpListener, s: Sysfs, cfg: ServerConfig) -> Result<()> {
    let s = Arc::new(s);
    let stats = Arc::new(Stats::default());
    let active = Arc::new(AtomicUsize::new(0));
    while !STOP.load(Ordering::SeqCst) {
        if !wait_readable(&listener, 500) {
            continue;
        }
        let conn = match listener.accept() {
            Ok((c, _)) => c,
            // Aborted connections, EMFILE: try again on the next round.
            Err(_) => continue,
        };
        let Some(slot) = Slot::take(&active) else {
            drop(conn);
            continue;
        };
        let (s, stats) = (Arc::clone(&s), Arc::clone(&stats));
        // If the thread cannot be made, the closure and its slot are dropped.
        let _ = std::thread::Builder::new()
            .name("vgpu-exporter".into())
            .spawn(move || {
                let _slot = slot;
                let _ = handle(conn, &s, &stats, cfg);
            });
    }
    Ok(())
}

/// One of the [`MAX_CONNECTIONS`] connection slots, given back on drop.
struct Slot(Arc<AtomicUsize>);

impl Slot {
    fn take(active: &Arc<AtomicUsize>) -> Option<Self> {
        if active.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            active.fetch_sub(1, Ordering::SeqCst);
            return None;
        }
        Some(Slot(Arc::clone(active)))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Why a request head could not be read.
enum HeadError {
    TooLarge,
    Timeout,
    Closed,
}

/// Reads up to the blank line that ends the request head, within
/// `timeout` in all and [`MAX_HEAD`] bytes.
fn read_head(c: &mut TcpStream, timeout: Duration) -> std::result::Result<Vec<u8>, HeadError> {
    let deadline = Instant::now() + timeout;
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(HeadError::Timeout);
        }
        c.set_read_timeout(Some(left))
            .map_err(|_| HeadError::Closed)?;
        let n = match c.read(&mut chunk) {
            Ok(0) => return Err(HeadError::Closed),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(HeadError::Timeout)
            }
            Err(_) => return Err(HeadError::Closed),
        };
        // Search only where the end can be: the new bytes and 3 before.
        let from = buf.len().saturating_sub(3);
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = find_end(&buf[from..]) {
            buf.truncate(from + end);
            return Ok(buf);
        }
        if buf.len() > MAX_HEAD {
            return Err(HeadError::TooLarge);
        }
    }
}

/// The end of the head in `b` (after `\r\n\r\n`, or `\n\n` from lax clients).
fn find_end(b: &[u8]) -> Option<usize> {
    (0..b.len()).find_map(|i| {
        if b[i..].starts_with(b"\r\n\r\n") {
            Some(i + 4)
        } else if b[i..].starts_with(b"\n\n") {
            Some(i + 2)
        } else {
            None
        }
    })
}

fn respond(
    c: &mut TcpStream,
    status: &str,
    extra: &[(&str, &str)],
    content_type: &str,
    body: &str,
    head_only: bool,
) -> io::Result<()> {
    let mut r = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in extra {
        let _ = write!(r, "{k}: {v}\r\n");
    }
    r.push_str("\r\n");
    if !head_only {
        r.push_str(body);
    }
    c.write_all(r.as_bytes())?;
    c.flush()
}

const TEXT: &str = "text/plain; charset=utf-8";

/// Serves one connection: one request, one response; then closes it
/// gently (see [`linger`]).
fn handle(mut c: TcpStream, s: &Sysfs, stats: &Stats, cfg: ServerConfig) -> io::Result<()> {
    c.set_write_timeout(Some(cfg.timeout))?;
    let r = answer(&mut c, s, stats, cfg);
    linger(&mut c, cfg.timeout.min(Duration::from_secs(1)));
    r
}

/// Ends the sending side and discards what the client still sends (a body,
/// the rest of an oversized head) for a little while, so that closing does
/// not reset the connection before the client has read the response.
fn linger(c: &mut TcpStream, limit: Duration) {
    if c.shutdown(std::net::Shutdown::Write).is_err() {
        return;
    }
    let deadline = Instant::now() + limit;
    let mut sink = [0u8; 4096];
    let mut left: usize = 1 << 20;
    while left > 0 {
        let t = deadline.saturating_duration_since(Instant::now());
        if t.is_zero() || c.set_read_timeout(Some(t)).is_err() {
            return;
        }
        match c.read(&mut sink) {
            Ok(0) | Err(_) => return,
            Ok(n) => left = left.saturating_sub(n),
        }
    }
}

/// Reads the request and writes the response.
fn answer(c: &mut TcpStream, s: &Sysfs, stats: &Stats, cfg: ServerConfig) -> io::Result<()> {
    let head = match read_head(c, cfg.timeout) {
        Ok(h) => h,
        Err(HeadError::TooLarge) => {
            return respond(
                c,
                "431 Request Header Fields Too Large",
                &[],
                TEXT,
                "request head too large\n",
                false,
            )
        }
        Err(HeadError::Timeout) => {
            return respond(
                c,
                "408 Request Timeout",
                &[],
                TEXT,
                "request timeout\n",
                false,
            )
        }
        Err(HeadError::Closed) => return Ok(()),
    };
    let line = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut parts = line.trim_end_matches('\r').split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return respond(c, "400 Bad Request", &[], TEXT, "bad request\n", false);
    };
    if !version.starts_with("HTTP/1.") || method.is_empty() || !target.starts_with('/') {
        return respond(c, "400 Bad Request", &[], TEXT, "bad request\n", false);
    }
    let path = target.split('?').next().unwrap_or(target);
    let head_only = method == "HEAD";
    if path != "/metrics" {
        return respond(
            c,
            "404 Not Found",
            &[],
            TEXT,
            "not found: try /metrics\n",
            head_only,
        );
    }
    if method != "GET" && !head_only {
        return respond(
            c,
            "405 Method Not Allowed",
            &[("Allow", "GET, HEAD")],
            TEXT,
            "method not allowed\n",
            false,
        );
    }
    let body = render(s, stats);
    respond(c, "200 OK", &[], CONTENT_TYPE, &body, head_only)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sysfs::sim;

    #[test]
    fn escaping_and_seconds() {
        assert_eq!(escape_label(r#"/a"b\c"#), r#"/a\"b\\c"#);
        assert_eq!(escape_label("x\ny"), "x\\ny");
        assert_eq!(seconds(0), "0.000000");
        assert_eq!(seconds(1_500_000), "1.500000");
        assert_eq!(seconds(u64::MAX), "18446744073709.551615");
    }

    #[test]
    fn head_end() {
        assert_eq!(find_end(b"GET / HTTP/1.1\r\n\r\n"), Some(18));
        assert_eq!(find_end(b"GET / HTTP/1.1\n\nxx"), Some(16));
        assert_eq!(find_end(b"GET / HTTP/1.1\r\n"), None);
    }

    #[test]
    fn render_tree() {
        let t = tempfile::tempdir().unwrap();
        let stats = Stats::default();
        let s = Sysfs::simulated(t.path());
        let out = render(&s, &stats);
        assert!(out.contains("\nvgpu_up 0\n"), "{out}");
        assert!(!out.contains("vgpu_memory_used_bytes"), "{out}");
        assert!(
            out.contains("vgpu_exporter_scrape_errors_total 0\n"),
            "{out}"
        );

        sim::init_tree(t.path(), Some(&[(0, None)]), false).unwrap();
        s.create(2).unwrap();
        s.write_attr(2, "gpu", "0").unwrap();
        s.write_attr(2, "cgroup", "/pods/a").unwrap();
        let out = render(&s, &stats);
        let l = r#"{vgpu="2",gpu="0",cgroup="/pods/a"}"#;
        assert!(out.contains("\nvgpu_up 1\n"), "{out}");
        assert!(
            out.contains(&format!("vgpu_memory_limit_bytes{l} +Inf\n")),
            "{out}"
        );
        assert!(
            out.contains(&format!("vgpu_memory_used_bytes{l} 0\n")),
            "{out}"
        );
        for family in [
            "vgpu_compute_share_percent",
            "vgpu_compute_priority",
            "vgpu_compute_frozen",
            "vgpu_busy_seconds_total",
        ] {
            assert!(!out.contains(family), "{family}: {out}");
        }

        assert!(!out.contains("vgpu_gpu_compute"), "{out}");

        // A malformed file is counted and its series left out.
        std::fs::write(s.vgpu_dir(2).join("memory_used"), "lots\n").unwrap();
        let out = render(&s, &stats);
        assert!(!out.contains("vgpu_memory_used_bytes{"), "{out}");
        assert!(
            out.contains("vgpu_exporter_scrape_errors_total 1\n"),
            "{out}"
        );
    }

    #[test]
    fn render_compute() {
        let t = tempfile::tempdir().unwrap();
        let stats = Stats::default();
        let s = Sysfs::simulated(t.path());
        sim::init_tree(t.path(), Some(&[(0, None), (1, None)]), true).unwrap();
        s.create(2).unwrap();
        s.write_attr(2, "gpu", "1").unwrap();
        s.write_attr(2, "compute_share", "40").unwrap();
        s.write_gpu_attr(1, "compute_policy", "work-conserving")
            .unwrap();
        s.write_gpu_attr(1, "compute_period_us", "20000").unwrap();
        std::fs::write(s.vgpu_dir(2).join("compute_granted_us"), "2500000\n").unwrap();
        std::fs::write(s.vgpu_dir(2).join("compute_throttled_us"), "7\n").unwrap();
        std::fs::write(s.vgpu_dir(2).join("compute_tsgs"), "3\n").unwrap();
        s.write_attr(2, "compute_priority", "3").unwrap();
        s.write_attr(2, "compute_frozen", "1").unwrap();
        std::fs::write(s.vgpu_dir(2).join("compute_busy_us"), "3000001\n").unwrap();
        let out = render(&s, &stats);
        let l = r#"{vgpu="2",gpu="1",cgroup=""}"#;
        for line in [
            format!("vgpu_compute_share_percent{l} 40\n"),
            format!("vgpu_compute_priority{l} 3\n"),
            "# TYPE vgpu_compute_priority gauge\n".to_string(),
            format!("vgpu_compute_frozen{l} 1\n"),
            "# TYPE vgpu_compute_frozen gauge\n".to_string(),
            format!("vgpu_granted_seconds_total{l} 2.500000\n"),
            format!("vgpu_throttled_seconds_total{l} 0.000007\n"),
            format!("vgpu_busy_seconds_total{l} 3.000001\n"),
            "# TYPE vgpu_busy_seconds_total counter\n".to_string(),
            "# HELP vgpu_busy_seconds_total Time the vGPU had runnable work, whether or not its window was open, in seconds.\n".to_string(),
            format!("vgpu_compute_tsgs{l} 3\n"),
            "# TYPE vgpu_compute_tsgs gauge\n".to_string(),
            "# TYPE vgpu_gpu_compute_policy gauge\n".to_string(),
            "vgpu_gpu_compute_policy{gpu=\"0\",policy=\"fixed\"} 1\n".to_string(),
            "vgpu_gpu_compute_policy{gpu=\"1\",policy=\"work-conserving\"} 1\n".to_string(),
            "# TYPE vgpu_gpu_compute_period_seconds gauge\n".to_string(),
            "vgpu_gpu_compute_period_seconds{gpu=\"0\"} 0.050000\n".to_string(),
            "vgpu_gpu_compute_period_seconds{gpu=\"1\"} 0.020000\n".to_string(),
            "vgpu_exporter_scrape_errors_total 0\n".to_string(),
        ] {
            assert!(out.contains(&line), "{line}: {out}");
        }
        // A malformed period: a scrape error, that series left out.
        std::fs::write(s.gpu_dir(0).join("compute_period_us"), "soon\n").unwrap();
        let out = render(&s, &stats);
        assert!(
            !out.contains("vgpu_gpu_compute_period_seconds{gpu=\"0\"}"),
            "{out}"
        );
        assert!(
            out.contains("vgpu_gpu_compute_period_seconds{gpu=\"1\"}"),
            "{out}"
        );
        assert!(
            out.contains("vgpu_exporter_scrape_errors_total 1\n"),
            "{out}"
        );
    }

    #[test]
    fn render_processes() {
        let t = tempfile::tempdir().unwrap();
        let stats = Stats::default();
        let s = Sysfs::simulated(t.path());
        sim::init_tree(t.path(), Some(&[(0, None)]), true).unwrap();
        s.create(0).unwrap();
        s.create(1).unwrap();
        // vGPU 0: two processes; vGPU 1: none (an empty file).
        std::fs::write(
            s.vgpu_dir(0).join("processes"),
            "4242 2097152 python3\n77 0 nvidia-smi\n",
        )
        .unwrap();
        let out = render(&s, &stats);
        for line in [
            "# TYPE vgpu_process_memory_used_bytes gauge\n",
            "vgpu_process_memory_used_bytes{vgpu=\"0\",pid=\"4242\",command=\"python3\"} 2097152\n",
            "vgpu_process_memory_used_bytes{vgpu=\"0\",pid=\"77\",command=\"nvidia-smi\"} 0\n",
            "vgpu_exporter_scrape_errors_total 0\n",
        ] {
            assert!(out.contains(line), "{line}: {out}");
        }
        assert!(
            !out.contains("vgpu_process_memory_used_bytes{vgpu=\"1\""),
            "{out}"
        );
        // A malformed line: a scrape error, that vGPU's series left out.
        std::fs::write(s.vgpu_dir(0).join("processes"), "4242 lots python3\n").unwrap();
        let out = render(&s, &stats);
        assert!(!out.contains("vgpu_process_memory_used_bytes{"), "{out}");
        assert!(
            out.contains("vgpu_exporter_scrape_errors_total 1\n"),
            "{out}"
        );
    }

    #[test]
    fn render_priority_and_freeze() {
        let t = tempfile::tempdir().unwrap();
        let stats = Stats::default();
        let s = Sysfs::simulated(t.path());
        sim::init_tree(t.path(), Some(&[(0, None)]), true).unwrap();
        s.create(0).unwrap();
        s.create(1).unwrap();
        s.write_attr(1, "compute_priority", "0").unwrap();
        s.write_attr(1, "compute_frozen", "1").unwrap();
        std::fs::write(s.vgpu_dir(1).join("compute_busy_us"), "250\n").unwrap();
        let out = render(&s, &stats);
        let (l0, l1) = (
            r#"{vgpu="0",gpu="",cgroup=""}"#,
            r#"{vgpu="1",gpu="",cgroup=""}"#,
        );
        for line in [
            // The module's defaults: level 1, thawed, never busy.
            format!("vgpu_compute_priority{l0} 1\n"),
            format!("vgpu_compute_frozen{l0} 0\n"),
            format!("vgpu_busy_seconds_total{l0} 0.000000\n"),
            format!("vgpu_compute_priority{l1} 0\n"),
            format!("vgpu_compute_frozen{l1} 1\n"),
            format!("vgpu_busy_seconds_total{l1} 0.000250\n"),
            "vgpu_exporter_scrape_errors_total 0\n".to_string(),
        ] {
            assert!(out.contains(&line), "{line}: {out}");
        }
        // Families in order: settings, then the time counters.
        let at = |name: &str| out.find(&format!("# HELP {name} ")).unwrap();
        assert!(at("vgpu_compute_share_percent") < at("vgpu_compute_priority"));
        assert!(at("vgpu_compute_priority") < at("vgpu_compute_frozen"));
        assert!(at("vgpu_throttled_seconds_total") < at("vgpu_busy_seconds_total"));

        // A module from before priorities: those series are left out,
        // without a scrape error; the other compute series stay.
        for id in [0, 1] {
            for name in ["compute_priority", "compute_frozen", "compute_busy_us"] {
                std::fs::remove_file(s.vgpu_dir(id).join(name)).unwrap();
            }
        }
        let out = render(&s, &stats);
        for family in [
            "vgpu_compute_priority",
            "vgpu_compute_frozen",
            "vgpu_busy_seconds_total",
        ] {
            assert!(!out.contains(family), "{family}: {out}");
        }
        assert!(
            out.contains(&format!("vgpu_compute_share_percent{l0} 100\n")),
            "{out}"
        );
        assert!(
            out.contains("vgpu_exporter_scrape_errors_total 0\n"),
            "{out}"
        );

        // Malformed: a flag other than 0 or 1, a level that is no number.
        std::fs::write(s.vgpu_dir(0).join("compute_frozen"), "2\n").unwrap();
        std::fs::write(s.vgpu_dir(1).join("compute_priority"), "high\n").unwrap();
        let out = render(&s, &stats);
        assert!(!out.contains("vgpu_compute_frozen"), "{out}");
        assert!(!out.contains("vgpu_compute_priority"), "{out}");
        assert!(
            out.contains("vgpu_exporter_scrape_errors_total 2\n"),
            "{out}"
        );
    }
}
