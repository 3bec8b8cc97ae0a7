// SPDX-License-Identifier: GPL-2.0

//! The gRPC services on the kubelet's sockets.
//!
//! - Registration (`pluginregistration.Registration`) on
//!   `REGISTRY_DIR/<driver>-reg.sock`: the kubelet watches that directory,
//!   calls `GetInfo` (type `DRAPlugin`, the driver name, the DRA socket's
//!   path, the services served: `v1.DRAPlugin`) and reports the outcome
//!   with `NotifyRegistrationStatus`.
//! - The DRA node service (`k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin`) on
//!   `PLUGIN_DIR/dra.sock`: `NodePrepareResources` and
//!   `NodeUnprepareResources`, each for a batch of claims, each claim
//!   answered on its own (one claim's error does not fail the others).
//!
//! The socket names and directories are those of the kubelet's helper
//! library (k8s.io/dynamic-resource-allocation v0.36.0,
//! kubeletplugin/draplugin.go): `<driver>-reg.sock` and `dra.sock`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tonic::{Request, Response, Status};

use crate::driver::{ClaimRef, Driver};
use crate::proto::dra::dra_plugin_server::{DraPlugin, DraPluginServer};
use crate::proto::dra::{
    Claim, Device, NodePrepareResourceResponse, NodePrepareResourcesRequest,
    NodePrepareResourcesResponse, NodeUnprepareResourceResponse, NodeUnprepareResourcesRequest,
    NodeUnprepareResourcesResponse,
};
use crate::proto::registration::registration_server::{Registration, RegistrationServer};
use crate::proto::registration::{
    InfoRequest, PluginInfo, RegistrationStatus, RegistrationStatusResponse,
};
use crate::{DRA_SERVICE_V1, PLUGIN_TYPE};

/// What the log sees of each call.
pub type Log = Arc<dyn Fn(&str) + Send + Sync>;

/// A claim reference from the kubelet, checked: UIDs and names become
/// file names, CDI device names and hook arguments.
fn claim_ref(namespace: &str, name: &str, uid: &str) -> Result<ClaimRef, String> {
    if !vgpuctl::hook::valid_uid(uid) {
        return Err(format!("claim UID {uid:?} is not a Kubernetes UID"));
    }
    if namespace.is_empty() || name.is_empty() {
        return Err("a claim without namespace or name".into());
    }
    Ok(ClaimRef {
        namespace: namespace.to_string(),
        name: name.to_string(),
        uid: uid.to_string(),
    })
}

/// The DRA node service.
pub struct DraService {
    driver: Arc<Driver>,
    log: Log,
}

impl DraService {
    /// Serving `driver`.
    pub fn new(driver: Arc<Driver>, log: Log) -> DraPluginServer<Self> {
        DraPluginServer::new(DraService { driver, log })
    }
}

impl DraService {
    /// Runs `call` (`what`: its name in the log) on each claim of a
    /// request, off the async runtime (the driver blocks on sysfs and the
    /// API); each claim's outcome is logged, `done` saying what a success
    /// did and `refused` what a failure is called. Returns (claim UID,
    /// outcome) in the request's order.
    async fn each_claim<T: Send + 'static>(
        &self,
        what: &'static str,
        claims: Vec<Claim>,
        call: fn(&Driver, &ClaimRef) -> crate::Result<T>,
        done: fn(&T) -> String,
        refused: &'static str,
    ) -> Result<Vec<(String, Result<T, String>)>, Status> {
        let driver = self.driver.clone();
        let log = self.log.clone();
        tokio::task::spawn_blocking(move || {
            claims
                .into_iter()
                .map(|c| {
                    let r = claim_ref(&c.namespace, &c.name, &c.uid)
                        .and_then(|r| call(&driver, &r).map_err(|e| e.to_string()));
                    let said = match &r {
                        Ok(v) => done(v),
                        Err(e) => format!("{refused}: {e}"),
                    };
                    log(&format!(
                        "{what} {}/{} ({}): {said}",
                        c.namespace, c.name, c.uid
                    ));
                    (c.uid, r)
                })
                .collect()
        })
        .await
        .map_err(|e| Status::internal(format!("{what}: {e}")))
    }
}

#[tonic::async_trait]
impl DraPlugin for DraService {
    async fn node_prepare_resources(
        &self,
        req: Request<NodePrepareResourcesRequest>,
    ) -> Result<Response<NodePrepareResourcesResponse>, Status> {
        let outcomes = self
            .each_claim(
                "prepare",
                req.into_inner().claims,
                Driver::prepare,
                |devs| {
                    format!(
                        "vGPUs {:?}",
                        devs.iter().map(|d| d.vgpu).collect::<Vec<_>>()
                    )
                },
                "refused",
            )
            .await?;
        let mut out = NodePrepareResourcesResponse::default();
        for (uid, r) in outcomes {
            let answer = match r {
                Ok(devs) => NodePrepareResourceResponse {
                    devices: devs
                        .into_iter()
                        .map(|d| Device {
                            request_names: vec![d.alloc.request],
                            pool_name: d.alloc.pool,
                            device_name: d.alloc.device,
                            cdi_device_ids: vec![d.cdi_device],
                            share_id: d.alloc.share_id,
                        })
                        .collect(),
                    error: String::new(),
                },
                Err(error) => NodePrepareResourceResponse {
                    devices: Vec::new(),
                    error,
                },
            };
            out.claims.insert(uid, answer);
        }
        Ok(Response::new(out))
    }

    async fn node_unprepare_resources(
        &self,
        req: Request<NodeUnprepareResourcesRequest>,
    ) -> Result<Response<NodeUnprepareResourcesResponse>, Status> {
        let outcomes = self
            .each_claim(
                "unprepare",
                req.into_inner().claims,
                Driver::unprepare,
                |()| "done".to_string(),
                "failed",
            )
            .await?;
        let mut out = NodeUnprepareResourcesResponse::default();
        for (uid, r) in outcomes {
            let error = r.err().unwrap_or_default();
            out.claims
                .insert(uid, NodeUnprepareResourceResponse { error });
        }
        Ok(Response::new(out))
    }
}

/// The registration service.
pub struct RegistrationService {
    driver_name: String,
    endpoint: PathBuf,
    status: Arc<Mutex<Option<RegistrationStatus>>>,
    log: Log,
}

impl RegistrationService {
    /// For `driver_name`, whose DRA service listens at `endpoint`; the
    /// kubelet's last status lands in `status`.
    pub fn new(
        driver_name: &str,
        endpoint: &Path,
        status: Arc<Mutex<Option<RegistrationStatus>>>,
        log: Log,
    ) -> RegistrationServer<Self> {
        RegistrationServer::new(RegistrationService {
            driver_name: driver_name.to_string(),
            endpoint: endpoint.to_path_buf(),
            status,
            log,
        })
    }
}

#[tonic::async_trait]
impl Registration for RegistrationService {
    async fn get_info(&self, _req: Request<InfoRequest>) -> Result<Response<PluginInfo>, Status> {
        Ok(Response::new(PluginInfo {
            r#type: PLUGIN_TYPE.to_string(),
            name: self.driver_name.clone(),
            endpoint: self.endpoint.to_string_lossy().into_owned(),
            supported_versions: vec![DRA_SERVICE_V1.to_string()],
        }))
    }

    async fn notify_registration_status(
        &self,
        req: Request<RegistrationStatus>,
    ) -> Result<Response<RegistrationStatusResponse>, Status> {
        let s = req.into_inner();
        if s.plugin_registered {
            (self.log)("registered with the kubelet");
        } else {
            (self.log)(&format!("the kubelet refused registration: {}", s.error));
        }
        let ok = s.plugin_registered;
        let err = s.error.clone();
        *self.status.lock().unwrap_or_else(|p| p.into_inner()) = Some(s);
        if ok {
            Ok(Response::new(RegistrationStatusResponse {}))
        } else {
            Err(Status::failed_precondition(format!(
                "registration failed: {err}"
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claim_refs_are_checked() {
        assert!(claim_ref("ns", "c", "0b4c5c8e-1111-4a2b-9c3d-123456789abc").is_ok());
        for uid in ["", "../x", "A", "a/b", &"a".repeat(65)] {
            assert!(claim_ref("ns", "c", uid).is_err(), "{uid:?}");
        }
        assert!(claim_ref("", "c", "u").is_err());
    }
}
