// SPDX-License-Identifier: GPL-2.0

//! The Kubernetes API as the plugin uses it: read a ResourceClaim, publish
//! the node's ResourceSlice. [`HttpApi`] talks to an API server (in a
//! cluster: its service account's token and CA); [`DirApi`] reads and
//! writes the same objects as JSON files under a directory, for nodes run
//! without an API server and for the VM suite, which has no network stack.
//!
//! Paths are the API's (`resource.k8s.io/v1`, Kubernetes 1.36):
//! `/apis/resource.k8s.io/v1/namespaces/NS/resourceclaims/NAME`,
//! `/apis/resource.k8s.io/v1/resourceslices[/NAME]`, `/api/v1/nodes/NAME`.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use k8s_openapi::api::resource::v1::{ResourceClaim, ResourceSlice};
use serde::de::DeserializeOwned;

use crate::{Error, Result};

/// The API calls the plugin makes.
pub trait KubeApi: Send + Sync {
    /// Claim `namespace/name`.
    fn claim(&self, namespace: &str, name: &str) -> Result<ResourceClaim>;
    /// ResourceSlice `name`, if it exists.
    fn slice(&self, name: &str) -> Result<Option<ResourceSlice>>;
    /// Creates `slice`, or replaces it (its `resourceVersion` set), and
    /// returns it as the API server stored it: a server drops the fields of
    /// a feature gate that is off. With `dry_run` the server stores nothing
    /// and only answers what it would have stored (`?dryRun=All`).
    fn put_slice(
        &self,
        slice: &ResourceSlice,
        exists: bool,
        dry_run: bool,
    ) -> Result<ResourceSlice>;
    /// The UID of node `name`, if the API can tell (for the slice's owner
    /// reference, so that the slice goes with its node).
    fn node_uid(&self, name: &str) -> Result<Option<String>>;
}

const RESOURCE: &str = "/apis/resource.k8s.io/v1";

fn check_name(what: &str, s: &str) -> Result<()> {
    // DNS subdomain names (RFC 1123): what the API server accepts for
    // these objects; anything else could escape a path.
    let ok = !s.is_empty()
        && s.len() <= 253
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        && !s.starts_with(['-', '.'])
        && !s.ends_with(['-', '.']);
    if ok {
        Ok(())
    } else {
        Err(Error::Claim(format!(
            "{what} {s:?} is not a valid object name"
        )))
    }
}

/// Objects as JSON files under a root: `ROOT/namespaces/NS/resourceclaims/
/// NAME.json`, `ROOT/resourceslices/NAME.json`, `ROOT/nodes/NAME.json`.
pub struct DirApi {
    root: PathBuf,
}

impl DirApi {
    /// Over `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        DirApi { root: root.into() }
    }

    fn read<T: DeserializeOwned>(&self, path: &Path) -> Result<Option<T>> {
        match fs::read(path) {
            Ok(b) => serde_json::from_slice(&b)
                .map(Some)
                .map_err(|e| Error::Api(format!("{}: {e}", path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::Io(path.display().to_string(), e)),
        }
    }
}

impl KubeApi for DirApi {
    fn claim(&self, namespace: &str, name: &str) -> Result<ResourceClaim> {
        check_name("namespace", namespace)?;
        check_name("claim", name)?;
        let p = self
            .root
            .join("namespaces")
            .join(namespace)
            .join("resourceclaims")
            .join(format!("{name}.json"));
        self.read(&p)?
            .ok_or_else(|| Error::Api(format!("claim {namespace}/{name} not found")))
    }

    fn slice(&self, name: &str) -> Result<Option<ResourceSlice>> {
        check_name("slice", name)?;
        self.read(
            &self
                .root
                .join("resourceslices")
                .join(format!("{name}.json")),
        )
    }

    fn put_slice(
        &self,
        slice: &ResourceSlice,
        _exists: bool,
        dry_run: bool,
    ) -> Result<ResourceSlice> {
        let name = slice.metadata.name.as_deref().unwrap_or("");
        check_name("slice", name)?;
        if dry_run {
            return Ok(slice.clone());
        }
        let body = serde_json::to_vec_pretty(slice).map_err(|e| Error::Api(e.to_string()))?;
        let path = self
            .root
            .join("resourceslices")
            .join(format!("{name}.json"));
        vgpuctl::write_atomic(&path, &body)?;
        // A directory keeps every field.
        Ok(slice.clone())
    }

    fn node_uid(&self, name: &str) -> Result<Option<String>> {
        check_name("node", name)?;
        let node: Option<serde_json::Value> =
            self.read(&self.root.join("nodes").join(format!("{name}.json")))?;
        Ok(node.and_then(|n| n["metadata"]["uid"].as_str().map(String::from)))
    }
}

/// An API server over HTTP(S).
pub struct HttpApi {
    base: String,
    token: Option<String>,
    agent: ureq::Agent,
}

/// Where a pod finds its service account (Kubernetes' in-cluster config).
pub const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

impl HttpApi {
    /// `base` (`https://host:port`), with `token` as bearer and `ca_pem`
    /// (PEM certificates) as the only trusted roots, if given.
    pub fn new(base: &str, token: Option<String>, ca_pem: Option<&[u8]>) -> Result<Self> {
        let mut cfg = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(std::time::Duration::from_secs(30)));
        if let Some(pem) = ca_pem {
            let certs: Vec<_> = ureq::tls::parse_pem(pem)
                .filter_map(|i| match i {
                    Ok(ureq::tls::PemItem::Certificate(c)) => Some(c),
                    _ => None,
                })
                .collect();
            if certs.is_empty() {
                return Err(Error::Api("the CA file holds no certificate".into()));
            }
            cfg = cfg.tls_config(
                ureq::tls::TlsConfig::builder()
                    .root_certs(ureq::tls::RootCerts::Specific(Arc::new(certs)))
                    .build(),
            );
        }
        Ok(HttpApi {
            base: base.trim_end_matches('/').to_string(),
            token,
            agent: cfg.build().into(),
        })
    }

    /// The API server of the cluster the plugin's pod runs in.
    pub fn in_cluster() -> Result<Self> {
        let host = std::env::var("KUBERNETES_SERVICE_HOST")
            .map_err(|_| Error::Api("KUBERNETES_SERVICE_HOST is not set: not in a pod".into()))?;
        let port = std::env::var("KUBERNETES_SERVICE_PORT").unwrap_or_else(|_| "443".into());
        let dir = Path::new(SERVICE_ACCOUNT_DIR);
        let token = fs::read_to_string(dir.join("token"))
            .map_err(|e| Error::Io(format!("{SERVICE_ACCOUNT_DIR}/token"), e))?;
        let ca = fs::read(dir.join("ca.crt"))
            .map_err(|e| Error::Io(format!("{SERVICE_ACCOUNT_DIR}/ca.crt"), e))?;
        let host = if host.contains(':') {
            format!("[{host}]")
        } else {
            host
        };
        Self::new(
            &format!("https://{host}:{port}"),
            Some(token.trim().to_string()),
            Some(&ca),
        )
    }

    fn call(&self, method: &str, path: &str, body: Option<&[u8]>) -> Result<(u16, Vec<u8>)> {
        let url = format!("{}{path}", self.base);
        let auth = self.token.as_ref().map(|t| format!("Bearer {t}"));
        let resp = match body {
            None => {
                let mut r = self.agent.get(&url).header("Accept", "application/json");
                if let Some(a) = &auth {
                    r = r.header("Authorization", a);
                }
                r.call()
            }
            Some(b) => {
                let mut r = match method {
                    "POST" => self.agent.post(&url),
                    _ => self.agent.put(&url),
                }
                .header("Accept", "application/json")
                .header("Content-Type", "application/json");
                if let Some(a) = &auth {
                    r = r.header("Authorization", a);
                }
                r.send(b)
            }
        };
        let mut resp = resp.map_err(|e| Error::Api(format!("{method} {path}: {e}")))?;
        let status = resp.status().as_u16();
        let body = resp
            .body_mut()
            .read_to_vec()
            .map_err(|e| Error::Api(format!("{method} {path}: {e}")))?;
        Ok((status, body))
    }

    fn get<T: DeserializeOwned>(&self, path: &str) -> Result<Option<T>> {
        let (status, body) = self.call("GET", path, None)?;
        match status {
            200 => serde_json::from_slice(&body)
                .map(Some)
                .map_err(|e| Error::Api(format!("GET {path}: {e}"))),
            404 => Ok(None),
            s => Err(Error::Api(format!(
                "GET {path}: HTTP {s}: {}",
                status_message(&body)
            ))),
        }
    }
}

/// The `message` of a Kubernetes `Status` body, or the body.
fn status_message(body: &[u8]) -> String {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v["message"].as_str().map(String::from))
        .unwrap_or_else(|| String::from_utf8_lossy(body).chars().take(200).collect())
}

impl KubeApi for HttpApi {
    fn claim(&self, namespace: &str, name: &str) -> Result<ResourceClaim> {
        check_name("namespace", namespace)?;
        check_name("claim", name)?;
        self.get(&format!(
            "{RESOURCE}/namespaces/{namespace}/resourceclaims/{name}"
        ))?
        .ok_or_else(|| Error::Api(format!("claim {namespace}/{name} not found")))
    }

    fn slice(&self, name: &str) -> Result<Option<ResourceSlice>> {
        check_name("slice", name)?;
        self.get(&format!("{RESOURCE}/resourceslices/{name}"))
    }

    fn put_slice(
        &self,
        slice: &ResourceSlice,
        exists: bool,
        dry_run: bool,
    ) -> Result<ResourceSlice> {
        let name = slice.metadata.name.as_deref().unwrap_or("");
        check_name("slice", name)?;
        let mut obj = serde_json::to_value(slice).map_err(|e| Error::Api(e.to_string()))?;
        obj["apiVersion"] = "resource.k8s.io/v1".into();
        obj["kind"] = "ResourceSlice".into();
        let body = serde_json::to_vec(&obj).map_err(|e| Error::Api(e.to_string()))?;
        let (method, mut path) = if exists {
            ("PUT", format!("{RESOURCE}/resourceslices/{name}"))
        } else {
            ("POST", format!("{RESOURCE}/resourceslices"))
        };
        if dry_run {
            path.push_str("?dryRun=All");
        }
        let (status, resp) = self.call(method, &path, Some(&body))?;
        if (200..300).contains(&status) {
            // The server answers with the object as it stored it (or, in a
            // dry run, would have).
            let kept: ResourceSlice = serde_json::from_slice(&resp)
                .map_err(|e| Error::Api(format!("{method} {path}: the answer: {e}")))?;
            if kept.metadata.name.as_deref() != Some(name) {
                return Err(Error::Api(format!(
                    "{method} {path}: the answer is not slice {name}"
                )));
            }
            Ok(kept)
        } else {
            Err(Error::Api(format!(
                "{method} {path}: HTTP {status}: {}",
                status_message(&resp)
            )))
        }
    }

    fn node_uid(&self, name: &str) -> Result<Option<String>> {
        check_name("node", name)?;
        let node: Option<serde_json::Value> = self.get(&format!("/api/v1/nodes/{name}"))?;
        Ok(node.and_then(|n| n["metadata"]["uid"].as_str().map(String::from)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_cannot_escape() {
        for bad in ["", "..", "../x", "a/b", "A", "-a", "a-", "x\0"] {
            assert!(check_name("claim", bad).is_err(), "{bad:?}");
        }
        for good in ["a", "gpu-claim-7", "node1.example.com"] {
            assert!(check_name("claim", good).is_ok(), "{good:?}");
        }
    }
}
