// SPDX-License-Identifier: GPL-2.0

//! The claims this plugin prepared, kept on disk so that a restarted
//! plugin (or a kubelet retrying a call) neither leaks a vGPU nor prepares
//! one twice.
//!
//! A claim is written down *before* its vGPUs are created, as
//! [`Stage::Preparing`] with the vGPU numbers it will take, and turned
//! [`Stage::Prepared`] once they and the CDI spec exist. A plugin that
//! finds a claim still preparing at start died half-way: it removes the
//! vGPUs that claim took and forgets it, so the kubelet's retry prepares
//! it afresh. Every write replaces the file atomically
//! ([`vgpuctl::write_atomic`]).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::claim::Alloc;
use crate::{Error, Result};

/// The file's format version.
pub const VERSION: u32 = 1;

/// Where a claim stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    /// Its vGPUs are being made.
    Preparing,
    /// Its vGPUs and CDI spec exist.
    Prepared,
}

/// One vGPU of a prepared claim.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PreparedDevice {
    /// vGPU number.
    pub vgpu: u32,
    /// The device of the claim it serves, and its sizes.
    #[serde(flatten)]
    pub alloc: Alloc,
    /// Its CDI device ID.
    pub cdi_device: String,
}

/// One claim.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PreparedClaim {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Where it stands.
    pub stage: Stage,
    /// Its vGPUs.
    pub devices: Vec<PreparedDevice>,
}

/// The file's contents.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// [`VERSION`].
    pub version: u32,
    /// By claim UID.
    pub claims: BTreeMap<String, PreparedClaim>,
}

/// The checkpoint file.
#[derive(Clone, Debug)]
pub struct Store {
    path: PathBuf,
}

impl Store {
    /// At `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Store { path: path.into() }
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads it: empty if there is no file yet. A file that cannot be read
    /// is an error, not an empty state: forgetting prepared claims would
    /// leak their vGPUs.
    pub fn load(&self) -> Result<Checkpoint> {
        let bytes = match fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Checkpoint {
                    version: VERSION,
                    ..Default::default()
                })
            }
            Err(e) => return Err(Error::Io(self.path.display().to_string(), e)),
        };
        let c: Checkpoint = serde_json::from_slice(&bytes).map_err(|e| {
            Error::Other(format!(
                "checkpoint {} is damaged ({e}): move it away once its vGPUs are accounted for",
                self.path.display()
            ))
        })?;
        if c.version != VERSION {
            return Err(Error::Other(format!(
                "checkpoint {} is version {}, this plugin reads {VERSION}",
                self.path.display(),
                c.version
            )));
        }
        Ok(c)
    }

    /// Writes `c`.
    pub fn save(&self, c: &Checkpoint) -> Result<()> {
        let data = serde_json::to_vec_pretty(c).map_err(|e| Error::Other(e.to_string()))?;
        Ok(vgpuctl::write_atomic(&self.path, &data)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_damage() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::new(dir.path().join("sub/checkpoint.json"));
        assert_eq!(s.load().unwrap().claims.len(), 0);
        let mut c = s.load().unwrap();
        c.claims.insert(
            "uid-1".into(),
            PreparedClaim {
                namespace: "ns".into(),
                name: "c".into(),
                stage: Stage::Preparing,
                devices: vec![],
            },
        );
        s.save(&c).unwrap();
        assert_eq!(s.load().unwrap(), c);
        fs::write(s.path(), b"{not json").unwrap();
        let e = s.load().unwrap_err().to_string();
        assert!(e.contains("damaged"), "{e}");
        fs::write(s.path(), br#"{"version": 9, "claims": {}}"#).unwrap();
        assert!(s.load().unwrap_err().to_string().contains("version 9"));
    }
}
