// SPDX-License-Identifier: GPL-2.0

//! Which physical GPUs there are and how much memory each has.
//!
//! The module does not publish its GPU list yet. vgpuctl takes it, in this
//! order, from the first [`Inventory`] that knows it:
//!
//! 1. [`SysfsGpus`]: `/sys/class/vgpu/gpus`, if the module has it. The format
//!    vgpuctl reads (and proposes for the module) is one line per GPU the
//!    module found: `INDEX [BYTES]`, the index `K` of `/dev/nvidiaK` and,
//!    optionally, the GPU's memory size in bytes. Further words on a line are
//!    ignored, so the module may add fields later.
//! 2. [`GpuDirs`]: the `/sys/class/vgpu/gpuK/` directories a module with
//!    compute shares makes, one per GPU it found at load, without sizes.
//! 3. [`DevNodes`]: the `/dev/nvidiaK` nodes on the host (what the module
//!    resolves at load), without sizes.
//!
//! A size given with `--gpu-memory` fills in every GPU whose size is not
//! known. Where no size is known, placement checks only counts and compute
//! shares. A new source (a richer sysfs file, NVML) is one more
//! implementation of [`Inventory`].

use std::fs;
use std::path::PathBuf;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::sysfs::Sysfs;

/// One physical GPU.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Gpu {
    /// `K` of `/dev/nvidiaK`: what a vGPU's `gpu` file takes.
    pub index: u32,
    /// Its memory in bytes, if known.
    pub memory: Option<u64>,
}

/// A source of the GPU list.
pub trait Inventory {
    /// The GPUs, by ascending index; `None` if this source does not know
    /// (e.g. the file does not exist), so the next source is asked.
    fn gpus(&self) -> Result<Option<Vec<Gpu>>>;
}

/// `class/vgpu/gpus` (see the module docs for the format).
pub struct SysfsGpus<'a>(pub &'a Sysfs);

impl Inventory for SysfsGpus<'_> {
    fn gpus(&self) -> Result<Option<Vec<Gpu>>> {
        let Some(text) = self.0.read_class("gpus")? else {
            return Ok(None);
        };
        parse_gpus(&text).map(Some)
    }
}

/// Parses the `gpus` file: `INDEX [BYTES]` per line; blank lines and `#`
/// comments are skipped.
pub fn parse_gpus(text: &str) -> Result<Vec<Gpu>> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut w = line.split_whitespace();
        let bad = || Error::Unexpected(format!("cannot read the GPU list line {line:?}"));
        let index = w.next().and_then(|i| i.parse().ok()).ok_or_else(bad)?;
        let memory = match w.next() {
            Some(m) => Some(m.parse().map_err(|_| bad())?),
            None => None,
        };
        out.push(Gpu { index, memory });
    }
    out.sort_by_key(|g| g.index);
    out.dedup_by_key(|g| g.index);
    Ok(out)
}

/// The `class/vgpu/gpuK/` directories: exactly the GPUs the module found
/// (a module without compute shares has none).
pub struct GpuDirs<'a>(pub &'a Sysfs);

impl Inventory for GpuDirs<'_> {
    fn gpus(&self) -> Result<Option<Vec<Gpu>>> {
        if !self.0.class_dir().is_dir() {
            return Ok(None);
        }
        let ids = self.0.gpu_ids()?;
        if ids.is_empty() {
            return Ok(None);
        }
        Ok(Some(
            ids.into_iter()
                .map(|index| Gpu {
                    index,
                    memory: None,
                })
                .collect(),
        ))
    }
}

/// The `/dev/nvidiaK` nodes under a device root (normally `/dev`).
pub struct DevNodes(pub PathBuf);

impl Inventory for DevNodes {
    fn gpus(&self) -> Result<Option<Vec<Gpu>>> {
        let Ok(entries) = fs::read_dir(&self.0) else {
            return Ok(None);
        };
        let mut out: Vec<Gpu> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name();
                let k = name.to_str()?.strip_prefix("nvidia")?;
                let index: u32 = k.parse().ok()?;
                (index.to_string() == k).then_some(Gpu {
                    index,
                    memory: None,
                })
            })
            .collect();
        if out.is_empty() {
            return Ok(None);
        }
        out.sort_by_key(|g| g.index);
        Ok(Some(out))
    }
}

/// A fixed list (tests, or a list given by the operator).
pub struct Fixed(pub Vec<Gpu>);

impl Inventory for Fixed {
    fn gpus(&self) -> Result<Option<Vec<Gpu>>> {
        Ok(Some(self.0.clone()))
    }
}

/// The GPUs from the first source that knows them (empty if none does),
/// with unknown sizes filled in by `default_memory`.
pub fn discover(sources: &[&dyn Inventory], default_memory: Option<u64>) -> Result<Vec<Gpu>> {
    for s in sources {
        if let Some(mut gpus) = s.gpus()? {
            for g in &mut gpus {
                if g.memory.is_none() {
                    g.memory = default_memory;
                }
            }
            return Ok(gpus);
        }
    }
    Ok(Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpus_file() {
        let g = parse_gpus("1 2000\n0 1000 extra words\n\n# c\n2\n").unwrap();
        assert_eq!(
            g,
            vec![
                Gpu {
                    index: 0,
                    memory: Some(1000)
                },
                Gpu {
                    index: 1,
                    memory: Some(2000)
                },
                Gpu {
                    index: 2,
                    memory: None
                },
            ]
        );
        assert!(parse_gpus("x 1\n").is_err());
        assert!(parse_gpus("0 lots\n").is_err());
    }

    #[test]
    fn sources_in_order() {
        let t = tempfile::tempdir().unwrap();
        for n in ["nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "nvidia01"] {
            fs::write(t.path().join(n), "").unwrap();
        }
        let sys = Sysfs::new(t.path().join("sys"));
        let from_dev = discover(&[&SysfsGpus(&sys), &DevNodes(t.path().into())], Some(7)).unwrap();
        assert_eq!(
            from_dev,
            vec![
                Gpu {
                    index: 0,
                    memory: Some(7)
                },
                Gpu {
                    index: 1,
                    memory: Some(7)
                }
            ]
        );
        crate::sysfs::sim::init_tree(
            &t.path().join("sys"),
            Some(&[(5, Some(9)), (6, None)]),
            false,
        )
        .unwrap();
        let from_sys = discover(&[&SysfsGpus(&sys), &DevNodes(t.path().into())], Some(7)).unwrap();
        assert_eq!(from_sys[0].memory, Some(9));
        assert_eq!(from_sys[1].memory, Some(7));
        // The gpuK/ directories of a module with compute shares, which has
        // no `gpus` file, come before the /dev nodes.
        let sources = |sys| -> Vec<Gpu> {
            discover(
                &[&SysfsGpus(sys), &GpuDirs(sys), &DevNodes(t.path().into())],
                None,
            )
            .unwrap()
        };
        fs::remove_file(sys.class_dir().join("gpus")).unwrap();
        assert_eq!(sources(&sys).len(), 2, "the /dev nodes");
        crate::sysfs::sim::add_gpu(&t.path().join("sys"), 3).unwrap();
        assert_eq!(
            sources(&sys),
            vec![Gpu {
                index: 3,
                memory: None
            }]
        );
        let none = discover(&[&DevNodes(t.path().join("nothing"))], None).unwrap();
        assert!(none.is_empty());
    }
}
