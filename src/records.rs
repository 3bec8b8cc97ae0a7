// SPDX-License-Identifier: GPL-2.0

//! What vgpu records of one verified client, for debugging a ledger that
//! does not match the driver's: debugfs `vgpu/records`. A write names the
//! client (its handle, decimal or `0x` hex); a read gives the vGPUs of the
//! `/dev/vgpuctl` file that verified it (`vgpus N...`) and its accounted
//! objects (`Objects::show`), nothing when no file verified it. Root
//! only, as all of debugfs.

use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{debugfs, prelude::*, uaccess::UserSliceReader};

use kernel::sync::Arc;

use crate::host::Host;
use crate::{clients, rows};

/// debugfs `vgpu/`: `rows` (`src/rows.rs`) and `records`; the files go
/// before their directory.
pub(crate) struct View {
    _rows: Pin<KBox<debugfs::File<()>>>,
    _records: Pin<KBox<debugfs::File<Arc<Host>>>>,
    _dir: debugfs::Dir,
}

impl View {
    /// Creates `vgpu/` and its files in debugfs; `records` looks clients
    /// up in `host`'s index.
    pub(crate) fn new(host: Arc<Host>) -> Result<View> {
        let dir = debugfs::Dir::new(c"vgpu");
        Ok(View {
            _rows: rows::file(&dir)?,
            _records: file(&dir, host)?,
            _dir: dir,
        })
    }
}

/// The client a read lists.
static CLIENT: AtomicU32 = AtomicU32::new(0);

/// The `vgpu/records` file, in `dir`.
fn file(dir: &debugfs::Dir, host: Arc<Host>) -> Result<Pin<KBox<debugfs::File<Arc<Host>>>>> {
    KBox::pin_init(
        dir.read_write_callback_file(c"records", host, &show, &select),
        GFP_KERNEL,
    )
}

fn show(host: &Arc<Host>, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
    let client = CLIENT.load(Ordering::Relaxed);
    let Some(file) = clients::owner_of(host, client) else {
        return Ok(());
    };
    write!(f, "vgpus")?;
    for v in file.vgpus.iter() {
        write!(f, " {}", v.id)?;
    }
    writeln!(f)?;
    let objects = file.objects.lock();
    objects.show(client, f)
}

fn select(_: &Arc<Host>, r: &mut UserSliceReader) -> Result {
    let mut buf = [0u8; 16];
    let b = buf.get_mut(..r.len()).ok_or(EINVAL)?;
    r.read_slice(b)?;
    let s = core::str::from_utf8(b).map_err(|_| EINVAL)?.trim();
    let h = match s.strip_prefix("0x") {
        Some(hex) => u32::from_str_radix(hex, 16),
        None => s.parse(),
    }
    .map_err(|_| EINVAL)?;
    CLIENT.store(h, Ordering::Relaxed);
    Ok(())
}
