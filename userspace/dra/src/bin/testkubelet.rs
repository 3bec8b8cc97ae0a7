// SPDX-License-Identifier: GPL-2.0

//! `vgpu-dra-testkubelet`: the kubelet's side of a DRA plugin, as far as a
//! plugin can tell, for the VM suite (which has no kubelet): it speaks the
//! plugin's gRPC over the plugin's real sockets, and starts a "container"
//! the way a CDI-aware runtime does: in the pod's cgroup, after running
//! the CDI spec's `createRuntime` hooks with the container's OCI state.
//!
//! - `register --registry-dir D --driver NAME`: waits for the plugin's
//!   registration socket, checks `GetInfo`, reports `NotifyRegistration-
//!   Status(true)`; prints the plugin info as JSON.
//! - `prepare|unprepare --endpoint SOCK --namespace NS --name N --uid U`:
//!   one call for one claim; prints the claim's answer as JSON.
//! - `run --cdi-dir D --device ID... --cgroup-root R --pod-cgroup P
//!   --container C -- CMD...`: starts CMD in cgroup `P/C` (made if
//!   missing), stopped before exec until every `createRuntime` hook of the
//!   devices ran with `{"id", "pid", "bundle"}` on stdin; a failing hook
//!   kills it. Exits with CMD's status (or 125 if a hook failed). It makes
//!   no mount namespace, so CMD sees the host's `/dev`: each of the
//!   devices' `deviceNodes` must be at its own `hostPath`, a character
//!   device there (a runtime refuses a missing one), or it refuses.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tonic::transport::{Channel, Endpoint, Uri};
use vgpu_dra::proto::dra::dra_plugin_client::DraPluginClient;
use vgpu_dra::proto::dra::{Claim, NodePrepareResourcesRequest, NodeUnprepareResourcesRequest};
use vgpu_dra::proto::registration::registration_client::RegistrationClient;
use vgpu_dra::proto::registration::{InfoRequest, RegistrationStatus};

type Res<T> = Result<T, String>;

fn arg(args: &[String], name: &str) -> Res<String> {
    args.windows(2)
        .find(|w| w[0] == name)
        .map(|w| w[1].clone())
        .ok_or_else(|| format!("missing {name}"))
}

fn args_all(args: &[String], name: &str) -> Vec<String> {
    args.windows(2)
        .filter(|w| w[0] == name)
        .map(|w| w[1].clone())
        .collect()
}

async fn connect(sock: &Path) -> Res<Channel> {
    let path = sock.to_path_buf();
    // The URI is not used: the connector always dials the socket.
    Endpoint::try_from("http://[::]:0")
        .map_err(|e| e.to_string())?
        .connect_with_connector(tower::service_fn(move |_: Uri| {
            let path = path.clone();
            async move {
                Ok::<_, std::io::Error>(TokioIo::new(tokio::net::UnixStream::connect(path).await?))
            }
        }))
        .await
        .map_err(|e| format!("connect {}: {e}", sock.display()))
}

async fn register(args: &[String]) -> Res<Value> {
    let dir = PathBuf::from(arg(args, "--registry-dir")?);
    let driver = arg(args, "--driver")?;
    let sock = dir.join(format!("{driver}-reg.sock"));
    let deadline = Instant::now() + Duration::from_secs(20);
    while !sock.exists() {
        if Instant::now() > deadline {
            return Err(format!(
                "no registration socket {} after 20 s",
                sock.display()
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut c = RegistrationClient::new(connect(&sock).await?);
    let info = c
        .get_info(InfoRequest {})
        .await
        .map_err(|e| format!("GetInfo: {e}"))?
        .into_inner();
    let mut problems = Vec::new();
    if info.r#type != vgpu_dra::PLUGIN_TYPE {
        problems.push(format!("type {:?}", info.r#type));
    }
    if info.name != driver {
        problems.push(format!("name {:?}", info.name));
    }
    if !info
        .supported_versions
        .iter()
        .any(|v| v == vgpu_dra::DRA_SERVICE_V1)
    {
        problems.push(format!("versions {:?}", info.supported_versions));
    }
    if !Path::new(&info.endpoint).exists() {
        problems.push(format!("endpoint {} does not exist", info.endpoint));
    }
    c.notify_registration_status(RegistrationStatus {
        plugin_registered: problems.is_empty(),
        error: problems.join("; "),
    })
    .await
    .map_err(|e| format!("NotifyRegistrationStatus: {e}"))?;
    if !problems.is_empty() {
        return Err(format!("registration refused: {}", problems.join("; ")));
    }
    Ok(json!({
        "type": info.r#type,
        "name": info.name,
        "endpoint": info.endpoint,
        "supportedVersions": info.supported_versions,
    }))
}

fn claim(args: &[String]) -> Res<Claim> {
    Ok(Claim {
        namespace: arg(args, "--namespace")?,
        name: arg(args, "--name")?,
        uid: arg(args, "--uid")?,
    })
}

async fn prepare(args: &[String], undo: bool) -> Res<Value> {
    let sock = PathBuf::from(arg(args, "--endpoint")?);
    let c = claim(args)?;
    let uid = c.uid.clone();
    let mut client = DraPluginClient::new(connect(&sock).await?);
    if undo {
        let r = client
            .node_unprepare_resources(NodeUnprepareResourcesRequest { claims: vec![c] })
            .await
            .map_err(|e| format!("NodeUnprepareResources: {e}"))?
            .into_inner();
        let a = r.claims.get(&uid).ok_or("no answer for the claim")?;
        return Ok(json!({ "error": a.error }));
    }
    let r = client
        .node_prepare_resources(NodePrepareResourcesRequest { claims: vec![c] })
        .await
        .map_err(|e| format!("NodePrepareResources: {e}"))?
        .into_inner();
    let a = r.claims.get(&uid).ok_or("no answer for the claim")?;
    Ok(json!({
        "error": a.error,
        "devices": a.devices.iter().map(|d| json!({
            "requestNames": d.request_names,
            "poolName": d.pool_name,
            "deviceName": d.device_name,
            "cdiDeviceIds": d.cdi_device_ids,
            "shareId": d.share_id,
        })).collect::<Vec<_>>(),
    }))
}

/// The container edits of CDI device `id` (`vendor/class=name`) in `dir`:
/// its own and its spec's.
fn cdi_edits(dir: &Path, id: &str) -> Res<Vec<Value>> {
    let (kind, name) = id
        .split_once('=')
        .ok_or_else(|| format!("bad CDI id {id}"))?;
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for e in entries.flatten() {
        let Ok(text) = std::fs::read_to_string(e.path()) else {
            continue;
        };
        let Ok(spec) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        if spec["kind"] != kind {
            continue;
        }
        for d in spec["devices"].as_array().into_iter().flatten() {
            if d["name"] == name {
                return Ok(vec![
                    spec["containerEdits"].clone(),
                    d["containerEdits"].clone(),
                ]);
            }
        }
    }
    Err(format!("CDI device {id} not found in {}", dir.display()))
}

/// A CDI device node as this runtime can give it: at its own host path
/// (no mount namespace), a character device there.
fn check_node(n: &Value) -> Res<()> {
    use std::os::unix::fs::FileTypeExt;
    let path = n["path"]
        .as_str()
        .ok_or_else(|| format!("device node {n}: no path"))?;
    let host = n["hostPath"].as_str().unwrap_or(path);
    if host != path {
        return Err(format!(
            "device node {path} from {host}: this runtime has no mount namespace to put it there"
        ));
    }
    let md = std::fs::metadata(host).map_err(|e| format!("device node {host}: {e}"))?;
    if !md.file_type().is_char_device() {
        return Err(format!("device node {host}: not a character device"));
    }
    Ok(())
}

fn run(args: &[String]) -> Res<i32> {
    let sep = args.iter().position(|a| a == "--").ok_or("no -- CMD")?;
    let (opts, cmd) = (&args[..sep], &args[sep + 1..]);
    let cdi_dir = PathBuf::from(arg(opts, "--cdi-dir")?);
    let root = PathBuf::from(arg(opts, "--cgroup-root")?);
    let pod = arg(opts, "--pod-cgroup")?;
    let ctr = arg(opts, "--container")?;
    let mut edits = Vec::new();
    for d in args_all(opts, "--device") {
        edits.extend(cdi_edits(&cdi_dir, &d)?);
    }
    let mut env = BTreeMap::new();
    let mut hooks = Vec::new();
    for e in &edits {
        for v in e["env"].as_array().into_iter().flatten() {
            if let Some((k, val)) = v.as_str().and_then(|s| s.split_once('=')) {
                env.insert(k.to_string(), val.to_string());
            }
        }
        for h in e["hooks"].as_array().into_iter().flatten() {
            if h["hookName"] == "createRuntime" {
                hooks.push(h.clone());
            }
        }
        for n in e["deviceNodes"].as_array().into_iter().flatten() {
            check_node(n)?;
        }
    }
    let cg = root.join(pod.trim_start_matches('/')).join(&ctr);
    std::fs::create_dir_all(&cg).map_err(|e| format!("{}: {e}", cg.display()))?;
    let procs = std::ffi::CString::new(cg.join("cgroup.procs").to_string_lossy().as_bytes())
        .map_err(|e| e.to_string())?;

    // A bundle whose config.json holds the process environment.
    let bundle = std::env::temp_dir().join(format!("testkubelet-{ctr}-{}", std::process::id()));
    std::fs::create_dir_all(&bundle).map_err(|e| e.to_string())?;
    let env_list: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    std::fs::write(
        bundle.join("config.json"),
        json!({ "ociVersion": "1.0.2", "process": { "env": env_list } }).to_string(),
    )
    .map_err(|e| e.to_string())?;

    let mut fds = [0i32; 2];
    // SAFETY: `fds` is room for the two descriptors pipe() writes.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err("pipe".into());
    }
    let (rd, wr) = (fds[0], fds[1]);
    // Everything the child needs is made before the fork: after it, the
    // child makes only async-signal-safe calls (this process has one
    // thread here: no runtime was started for `run`).
    let cstr = |s: &str| std::ffi::CString::new(s).map_err(|e| e.to_string());
    if !cmd[0].starts_with('/') {
        return Err(format!("{}: CMD must be an absolute path", cmd[0]));
    }
    let prog = cstr(&cmd[0])?;
    let argv_c: Vec<std::ffi::CString> = cmd.iter().map(|a| cstr(a)).collect::<Res<_>>()?;
    let mut argv: Vec<*const libc::c_char> = argv_c.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());
    let envp_c: Vec<std::ffi::CString> = std::env::vars()
        .filter(|(k, _)| !env.contains_key(k))
        .chain(env.iter().map(|(k, v)| (k.clone(), v.clone())))
        .map(|(k, v)| cstr(&format!("{k}={v}")))
        .collect::<Res<_>>()?;
    let mut envp: Vec<*const libc::c_char> = envp_c.iter().map(|a| a.as_ptr()).collect();
    envp.push(std::ptr::null());
    // SAFETY: fork() in a single-threaded process; the child below uses
    // only async-signal-safe calls on memory made before the fork, and
    // leaves by execve or _exit.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err("fork failed".into());
    }
    if pid == 0 {
        // SAFETY: the child: plain system calls on valid descriptors and
        // NUL-terminated strings and arrays built above.
        unsafe {
            libc::close(wr);
            let fd = libc::open(procs.as_ptr(), libc::O_WRONLY);
            if fd < 0 || libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                libc::_exit(121);
            }
            libc::close(fd);
            let mut b = 0u8;
            if libc::read(rd, (&mut b as *mut u8).cast(), 1) != 1 || b != b'g' {
                libc::_exit(122);
            }
            libc::close(rd);
            libc::execve(prog.as_ptr(), argv.as_ptr(), envp.as_ptr());
            libc::_exit(127);
        }
    }
    let child = Child(pid);
    // SAFETY: `rd` is this process's copy of the pipe's read end.
    unsafe { libc::close(rd) };
    // The hooks read the child's cgroup: wait until it has joined.
    let deadline = Instant::now() + Duration::from_secs(5);
    let want = pid.to_string();
    while !std::fs::read_to_string(cg.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .any(|l| l == want)
    {
        if Instant::now() > deadline {
            child.kill();
            return Err("the container process never joined its cgroup".into());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let state = json!({
        "ociVersion": "1.0.2",
        "id": ctr,
        "status": "created",
        "pid": pid,
        "bundle": bundle.to_string_lossy(),
    })
    .to_string();
    for h in &hooks {
        let path = h["path"].as_str().unwrap_or("");
        let hargs: Vec<String> = h["args"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| a.as_str().map(String::from))
            .collect();
        let mut p = Command::new(path);
        if let Some((a0, rest)) = hargs.split_first() {
            p.arg0(a0).args(rest);
        }
        let mut p = p
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("hook {path}: {e}"))?;
        if let Some(mut i) = p.stdin.take() {
            let _ = i.write_all(state.as_bytes());
        }
        let out = p.wait_with_output().map_err(|e| e.to_string())?;
        if !out.status.success() {
            child.kill();
            eprintln!(
                "testkubelet: hook {} failed ({}): {}",
                hargs.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            );
            return Ok(125);
        }
    }
    // SAFETY: `wr` is this process's write end of the pipe.
    let n = unsafe { libc::write(wr, b"g".as_ptr().cast(), 1) };
    // SAFETY: as above; closed once.
    unsafe { libc::close(wr) };
    if n != 1 {
        child.kill();
        return Err("could not start the container process".into());
    }
    let code = child.wait();
    let _ = std::fs::remove_dir_all(&bundle);
    Ok(code)
}

/// The container's process.
struct Child(libc::pid_t);

impl Child {
    /// Kills and reaps it.
    fn kill(&self) {
        // SAFETY: kill and waitpid on our own child's pid.
        unsafe {
            libc::kill(self.0, libc::SIGKILL);
            libc::waitpid(self.0, std::ptr::null_mut(), 0);
        }
    }

    /// Waits for it; its exit status, or 128 + the signal that killed it.
    fn wait(&self) -> i32 {
        let mut st = 0;
        // SAFETY: waitpid on our own child, `st` a valid int.
        let r = unsafe { libc::waitpid(self.0, &mut st, 0) };
        if r != self.0 {
            return 126;
        }
        if libc::WIFEXITED(st) {
            libc::WEXITSTATUS(st)
        } else {
            128 + libc::WTERMSIG(st)
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd) = args.first().cloned() else {
        eprintln!("usage: vgpu-dra-testkubelet register|prepare|unprepare|run ...");
        return ExitCode::from(2);
    };
    let rest = &args[1..];
    if cmd == "run" {
        return match run(rest) {
            Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
            Err(e) => {
                eprintln!("testkubelet: {e}");
                ExitCode::from(126)
            }
        };
    }
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("testkubelet: {e}");
            return ExitCode::FAILURE;
        }
    };
    let r = rt.block_on(async {
        match cmd.as_str() {
            "register" => register(rest).await,
            "prepare" => prepare(rest, false).await,
            "unprepare" => prepare(rest, true).await,
            c => Err(format!("unknown command {c}")),
        }
    });
    match r {
        Ok(v) => {
            println!("{v}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("testkubelet: {e}");
            ExitCode::FAILURE
        }
    }
}
