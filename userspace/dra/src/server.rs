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
    Device, NodePrepareResourceResponse, NodePrepareResourcesRequest, NodePrepareResourcesResponse,
    NodeUnprepareResourceResponse, NodeUnprepareResourcesRequest, NodeUnprepareResourcesResponse,
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

#[tonic::async_trait]
impl DraPlugin for DraService {
    async fn node_prepare_resources(
        &self,
        req: Request<NodePrepareResourcesRequest>,
    ) -> Result<Response<NodePrepareResourcesResponse>, Status> {
        let claims = req.into_inner().claims;
        let driver = self.driver.clone();
        let log = self.log.clone();
        let out = tokio::task::spawn_blocking(move || {
            let mut out = NodePrepareResourcesResponse::default();
            for c in claims {
                let r = claim_ref(&c.namespace, &c.name, &c.uid)
                    .and_then(|r| driver.prepare(&r).map_err(|e| e.to_string()));
                let answer = match r {
                    Ok(devs) => {
                        log(&format!(
                            "prepare {}/{} ({}): vGPUs {:?}",
                            c.namespace,
                            c.name,
                            c.uid,
                            devs.iter().map(|d| d.vgpu).collect::<Vec<_>>()
                        ));
                        NodePrepareResourceResponse {
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
                        }
                    }
                    Err(e) => {
                        log(&format!(
                            "prepare {}/{} ({}): refused: {e}",
                            c.namespace, c.name, c.uid
                        ));
                        NodePrepareResourceResponse {
                            devices: Vec::new(),
                            error: e,
                        }
                    }
                };
                out.claims.insert(c.uid, answer);
            }
            out
        })
        .await
        .map_err(|e| Status::internal(format!("prepare: {e}")))?;
        Ok(Response::new(out))
    }

    async fn node_unprepare_resources(
        &self,
        req: Request<NodeUnprepareResourcesRequest>,
    ) -> Result<Response<NodeUnprepareResourcesResponse>, Status> {
        let claims = req.into_inner().claims;
        let driver = self.driver.clone();
        let log = self.log.clone();
        let out = tokio::task::spawn_blocking(move || {
            let mut out = NodeUnprepareResourcesResponse::default();
            for c in claims {
                let r = claim_ref(&c.namespace, &c.name, &c.uid)
                    .and_then(|r| driver.unprepare(&r).map_err(|e| e.to_string()));
                let error = match r {
                    Ok(()) => {
                        log(&format!(
                            "unprepare {}/{} ({}): done",
                            c.namespace, c.name, c.uid
                        ));
                        String::new()
                    }
                    Err(e) => {
                        log(&format!(
                            "unprepare {}/{} ({}): failed: {e}",
                            c.namespace, c.name, c.uid
                        ));
                        e
                    }
                };
                out.claims
                    .insert(c.uid, NodeUnprepareResourceResponse { error });
            }
            out
        })
        .await
        .map_err(|e| Status::internal(format!("unprepare: {e}")))?;
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
