// SPDX-License-Identifier: GPL-2.0

//! `vgpu-dra-plugin`: the DRA kubelet plugin of vgpu.ko (see the crate
//! docs and docs/kubernetes.md).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use clap::Parser;
use tokio::net::UnixListener;
use tokio_stream::wrappers::UnixListenerStream;

use vgpu_dra::checkpoint::Store;
use vgpu_dra::cli::Args;
use vgpu_dra::driver::{Config, Driver};
use vgpu_dra::gpus::{self, Sources};
use vgpu_dra::kube::{DirApi, HttpApi, KubeApi};
use vgpu_dra::server::{DraService, Log, RegistrationService};
use vgpu_dra::DEFAULT_PLUGINS_DIR;

/// How often the plugin checks whether its ResourceSlice is still true.
const REPUBLISH: std::time::Duration = std::time::Duration::from_secs(30);

fn log(msg: &str) {
    eprintln!("vgpu-dra-plugin: {msg}");
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            log(&format!("error: {e}"));
            ExitCode::FAILURE
        }
    }
}

fn run(a: Args) -> Result<(), Box<dyn std::error::Error>> {
    let plugin_dir = a
        .plugin_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(DEFAULT_PLUGINS_DIR).join(&a.driver_name));
    let sysfs = vgpuctl::sysfs::Sysfs::new(&a.sysfs);
    sysfs.check_loaded()?;
    let api: Box<dyn KubeApi> = match a.kube_api.as_str() {
        "in-cluster" => Box::new(HttpApi::in_cluster()?),
        s if s.starts_with("dir:") => Box::new(DirApi::new(&s[4..])),
        s if s.starts_with("http://") || s.starts_with("https://") => {
            Box::new(HttpApi::new(s, None, None)?)
        }
        s => return Err(format!("--kube-api {s:?}: in-cluster, dir:PATH or a URL").into()),
    };
    let found = gpus::discover(
        &sysfs,
        &Sources {
            dev_root: a.dev_root.clone(),
            proc_root: a.proc_root.clone(),
            ask_driver: !a.no_driver_query,
            fallback_memory: a.gpu_memory,
        },
    )?;
    for g in &found {
        log(&format!(
            "GPU {}: {} bytes, {}, {}",
            g.index,
            g.memory,
            g.uuid.as_deref().unwrap_or("no UUID"),
            g.product.as_deref().unwrap_or("no product name")
        ));
    }
    let driver_version = gpus::driver_version(&sysfs)?;
    let cfg = Config {
        driver: a.driver_name.clone(),
        node: a.node_name.clone(),
        cdi_dir: a.cdi_dir.clone(),
        hook_path: a.hook_path.clone(),
    };
    if a.params_file.is_some() {
        log("--params-file has no effect: the claims' CDI specs rewrite the container's /proc/driver/nvidia/params from a createContainer hook");
    }
    let store = Store::new(plugin_dir.join("checkpoint.json"));
    let (driver, notes) = Driver::new(cfg, sysfs, api, found, store)?;
    for n in notes {
        log(&n);
    }
    log(&driver.publish(driver_version.as_deref())?);
    let driver = Arc::new(driver);

    std::fs::create_dir_all(&plugin_dir)?;
    std::fs::create_dir_all(&a.registry_dir)?;
    let dra_sock = plugin_dir.join("dra.sock");
    let reg_sock = a.registry_dir.join(format!("{}-reg.sock", a.driver_name));

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        // The DRA service first: registration points the kubelet at it.
        let _ = std::fs::remove_file(&dra_sock);
        let dra_listener = UnixListener::bind(&dra_sock)?;
        let _ = std::fs::remove_file(&reg_sock);
        let reg_listener = UnixListener::bind(&reg_sock)?;
        let logf: Log = Arc::new(log);
        let status = Arc::new(Mutex::new(None));
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
            let _ = rx.wait_for(|s| *s).await;
        };
        let dra = tonic::transport::Server::builder()
            .add_service(DraService::new(driver.clone(), logf.clone()))
            .serve_with_incoming_shutdown(
                UnixListenerStream::new(dra_listener),
                stopped(stop_rx.clone()),
            );
        let reg = tonic::transport::Server::builder()
            .add_service(RegistrationService::new(
                &a.driver_name,
                &dra_sock,
                status,
                logf.clone(),
            ))
            .serve_with_incoming_shutdown(UnixListenerStream::new(reg_listener), stopped(stop_rx));
        // Republish when the slice would change (a GPU's compute policy).
        let republish = {
            let driver = driver.clone();
            let sysfs = vgpuctl::sysfs::Sysfs::new(&a.sysfs);
            async move {
                let mut tick = tokio::time::interval(REPUBLISH);
                tick.tick().await;
                loop {
                    tick.tick().await;
                    let d = driver.clone();
                    let s = sysfs.clone();
                    let r = tokio::task::spawn_blocking(move || {
                        let v = vgpu_dra::gpus::driver_version(&s)?;
                        d.publish(v.as_deref())
                    })
                    .await;
                    match r {
                        Ok(Ok(m)) if m.ends_with("up to date") => {}
                        Ok(Ok(m)) => log(&m),
                        Ok(Err(e)) => log(&format!("republishing: {e}")),
                        Err(e) => log(&format!("republishing: {e}")),
                    }
                }
            }
        };
        tokio::spawn(republish);
        log(&format!(
            "serving {} at {} (registration {})",
            a.driver_name,
            dra_sock.display(),
            reg_sock.display()
        ));
        let signals = async {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            Ok::<(), std::io::Error>(())
        };
        let mut dra = std::pin::pin!(dra);
        let mut reg = std::pin::pin!(reg);
        let outcome: Result<(), Box<dyn std::error::Error>> = tokio::select! {
            r = &mut dra => r.map_err(Into::into),
            r = &mut reg => r.map_err(Into::into),
            r = signals => r.map_err(Into::into),
        };
        // Unregister first (the kubelet drops a plugin whose socket goes),
        // then finish calls in flight.
        let _ = std::fs::remove_file(&reg_sock);
        let _ = stop_tx.send(true);
        let _ = tokio::join!(dra, reg);
        let _ = std::fs::remove_file(&dra_sock);
        log("stopped; prepared claims stay (see the checkpoint)");
        outcome
    })
}
