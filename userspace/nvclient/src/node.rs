// SPDX-License-Identifier: GPL-2.0

//! Device nodes and the raw ioctl transport (including IOCTL_XFER_CMD).

use std::fs::{File, OpenOptions};
use std::ops::Deref;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::path::{Path, PathBuf};

use crate::abi::{self, Handle, OsEvent, RegisterFd, WaitOpenComplete, Wire};
use crate::ioctl::{nv_iowr, Escape, Xfer, IOC_SIZE_MAX};
use crate::{len_u32, rm_result, user_ptr, Error, Result};

/// The ioctl request word for escape `nr` with a `len`-byte parameter block:
/// `_IOWR('F', nr, len)`.
pub fn request(nr: u8, len: usize) -> u32 {
    nv_iowr(nr, len)
}

/// Whether a `len`-byte parameter block must travel inside an
/// IOCTL_XFER_CMD: it does not fit the 14-bit size field of the request word.
pub fn needs_xfer(len: usize) -> bool {
    len > IOC_SIZE_MAX
}

/// The 16 bytes of an IOCTL_XFER_CMD header `{u32 cmd; u32 size; u64 ptr}`.
///
/// `cmd` carries the bare escape number: the driver uses it directly as the
/// escape (`kernel-open/nvidia/nv.c`, `nvidia_ioctl`), not as a request word.
pub fn xfer_header(x: &Xfer) -> [u8; Xfer::SIZE] {
    let mut b = [0u8; Xfer::SIZE];
    x.cmd.encode(&mut b[0..4]);
    x.size.encode(&mut b[4..8]);
    x.ptr.encode(&mut b[8..16]);
    b
}

/// An open NVIDIA device node: the transport shared by [`Ctl`] and [`Gpu`].
#[derive(Debug)]
pub struct Node {
    file: File,
    path: PathBuf,
}

impl Node {
    /// Opens a node read-write (close-on-exec).
    pub fn open(path: impl AsRef<Path>) -> Result<Node> {
        let path = path.as_ref().to_path_buf();
        let file = OpenOptions::new().read(true).write(true).open(&path)?;
        Ok(Node { file, path })
    }

    /// The path the node was opened at.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The open file.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// The fd number (what the driver's embedded fd fields name).
    pub fn fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }

    /// Issues the ioctl `request` with `buf` as its argument, as is: no
    /// wrapping, no size check against the escape. For tests that send
    /// malformed requests. `buf` must be at least `_IOC_SIZE(request)` long
    /// (the driver copies that many bytes in and out).
    pub fn ioctl_request(&self, request: u32, buf: &mut [u8]) -> Result<()> {
        if buf.len() < crate::ioctl::ioc_size(request) {
            return Err(Error::Invalid("buffer shorter than the request's size"));
        }
        // Pointers nested inside `buf` (if any) were derived by the caller
        // from buffers it keeps borrowed across this call.
        // SAFETY: `buf` is at least `_IOC_SIZE(request)` bytes long, and the
        // NVIDIA ABI copies at most that many in and out.
        unsafe { ioctl_buf(&self.file, request, buf) }
    }

    /// Issues escape `nr` directly (`_IOWR('F', nr, params.len())`), never
    /// wrapping it; [`Error::Invalid`] when the block is too large for the
    /// size field.
    pub fn ioctl_direct(&self, nr: u8, params: &mut [u8]) -> Result<()> {
        if needs_xfer(params.len()) {
            return Err(Error::Invalid(
                "parameter block too large for a direct ioctl",
            ));
        }
        self.ioctl_request(request(nr, params.len()), params)
    }

    /// Issues escape `nr` inside an IOCTL_XFER_CMD, whatever its size.
    pub fn ioctl_xfer(&self, nr: u8, params: &mut [u8]) -> Result<()> {
        let x = Xfer {
            cmd: u32::from(nr),
            size: len_u32(params)?,
            ptr: user_ptr(params),
        };
        let mut header = xfer_header(&x);
        // `params` stays exclusively borrowed until the ioctl returns, so the
        // driver's copy-out through `x.ptr` is the only access to it.
        self.ioctl_direct(Escape::IoctlXferCmd.nr(), &mut header)
    }

    /// Issues escape `nr` with `params` as libcuda does: directly when the
    /// size fits the request word, inside an IOCTL_XFER_CMD otherwise.
    pub fn ioctl(&self, nr: u8, params: &mut [u8]) -> Result<()> {
        if needs_xfer(params.len()) {
            self.ioctl_xfer(nr, params)
        } else {
            self.ioctl_direct(nr, params)
        }
    }

    /// Issues escape `nr` with a typed parameter block, decoding the driver's
    /// copy-out back into it.
    pub fn ioctl_with<T: Wire>(&self, nr: u8, params: &mut T) -> Result<()> {
        let mut b = vec![0u8; T::SIZE];
        params.encode(&mut b);
        self.ioctl(nr, &mut b)?;
        *params = T::decode(&b);
        Ok(())
    }

    /// ALLOC_OS_EVENT: binds an OS event for `(h_client, h_device)` to this
    /// file, keyed by this file's fd (as libcuda does). It is then delivered
    /// by [`Node::poll`] on this file.
    pub fn alloc_os_event(&self, h_client: Handle, h_device: Handle) -> Result<()> {
        self.os_event(Escape::AllocOsEvent, h_client, h_device)
    }

    /// FREE_OS_EVENT for the event [`Node::alloc_os_event`] bound.
    pub fn free_os_event(&self, h_client: Handle, h_device: Handle) -> Result<()> {
        self.os_event(Escape::FreeOsEvent, h_client, h_device)
    }

    fn os_event(&self, escape: Escape, h_client: Handle, h_device: Handle) -> Result<()> {
        let mut p = OsEvent {
            h_client,
            h_device,
            fd: u32::try_from(self.fd()).map_err(|_| Error::Invalid("negative fd"))?,
            status: 0,
        };
        self.ioctl_with(escape.nr(), &mut p)?;
        rm_result(p.status)
    }

    /// Polls this file for `events` (`libc::POLLIN`, ...) for at most
    /// `timeout_ms` (-1: forever). Returns the revents, 0 on timeout.
    pub fn poll(&self, events: i16, timeout_ms: i32) -> Result<i16> {
        let mut pfd = libc::pollfd {
            fd: self.fd(),
            events,
            revents: 0,
        };
        // SAFETY: `pfd` is a valid, exclusively borrowed array of one pollfd
        // that outlives the call; the fd is open while `self` is borrowed.
        let rc = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
        if rc < 0 {
            return Err(Error::last_os());
        }
        Ok(if rc == 0 { 0 } else { pfd.revents })
    }

    /// WAIT_OPEN_COMPLETE (driver >= 550): waits for the GPU's open to finish
    /// and returns `{rc, adapterStatus}`.
    pub fn wait_open_complete(&self) -> Result<WaitOpenComplete> {
        let mut p = WaitOpenComplete::default();
        self.ioctl_with(Escape::WaitOpenComplete.nr(), &mut p)?;
        Ok(p)
    }
}

impl AsRawFd for Node {
    fn as_raw_fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }
}

impl AsFd for Node {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }
}

/// The control node, `/dev/nvidiactl`: almost all RM traffic goes through it.
/// A client is bound to the ctl file that created it.
#[derive(Debug)]
pub struct Ctl(Node);

impl Ctl {
    /// The standard path of the control node.
    pub const DEFAULT_PATH: &'static str = "/dev/nvidiactl";

    /// Opens a control node at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Ctl> {
        Node::open(path).map(Ctl)
    }

    /// Opens [`Ctl::DEFAULT_PATH`].
    pub fn open_default() -> Result<Ctl> {
        Ctl::open(Ctl::DEFAULT_PATH)
    }

    /// The underlying node.
    pub fn node(&self) -> &Node {
        &self.0
    }
}

impl Deref for Ctl {
    type Target = Node;

    fn deref(&self) -> &Node {
        &self.0
    }
}

impl AsRawFd for Ctl {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

/// A GPU node, `/dev/nvidiaN`. Holding one is what lets this process allocate
/// the GPU's device object; FB and doorbell mappings go through fresh fds of
/// it.
#[derive(Debug)]
pub struct Gpu(Node);

impl Gpu {
    /// Opens a GPU node at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Gpu> {
        Node::open(path).map(Gpu)
    }

    /// Opens `/dev/nvidia{minor}` (use CARD_INFO's `minor_number`: minors do
    /// not follow PCI order).
    pub fn open_index(minor: u32) -> Result<Gpu> {
        Gpu::open(format!("/dev/nvidia{minor}"))
    }

    /// The underlying node.
    pub fn node(&self) -> &Node {
        &self.0
    }

    /// RM_ALLOC (NVOS64) on this GPU node, which RM takes for the event
    /// classes only, for the client of the ctl file this file is
    /// registered to (`escape.c:386-410` at 550.163.01): libcuda allocates
    /// its NV01_EVENT_OS_EVENT objects so. Returns the new handle.
    pub fn alloc(
        &self,
        h_client: Handle,
        h_parent: Handle,
        h_new: Handle,
        class: u32,
        params: &mut [u8],
    ) -> Result<Handle> {
        crate::rm::alloc_on(self, h_client, h_parent, h_new, class, params)
    }

    /// REGISTER_FD: ties this GPU file to `ctl` (once per file).
    pub fn register_fd(&self, ctl: &Ctl) -> Result<()> {
        let mut p = RegisterFd { ctl_fd: ctl.fd() };
        self.ioctl_with(Escape::RegisterFd.nr(), &mut p)
    }

    /// RM_ALLOC_MEMORY with a raw NVOS02 body; the embedded fd is this GPU
    /// file's own fd. Returns the block as the driver left it (check
    /// `status` yourself, or use [`Gpu::alloc_memory_limit`]).
    pub fn alloc_memory_raw(&self, params: abi::Nvos02) -> Result<abi::Nvos02> {
        let mut p = abi::Nvos02WithFd {
            params,
            fd: self.fd(),
        };
        self.ioctl_with(Escape::RmAllocMemory.nr(), &mut p)?;
        Ok(p.params)
    }

    /// RM_ALLOC_MEMORY of `class` (e.g. NV01_MEMORY_LOCAL_USER) under
    /// `h_parent`: for 0x40 and a non-root caller this allocates nothing and
    /// returns `limit` = heap size - 1.
    pub fn alloc_memory_limit(
        &self,
        h_client: Handle,
        h_parent: Handle,
        h_new: Handle,
        class: u32,
    ) -> Result<u64> {
        let p = self.alloc_memory_raw(abi::Nvos02 {
            h_root: h_client,
            h_object_parent: h_parent,
            h_object_new: h_new,
            h_class: class,
            ..Default::default()
        })?;
        rm_result(p.status)?;
        Ok(p.limit)
    }
}

impl Deref for Gpu {
    type Target = Node;

    fn deref(&self) -> &Node {
        &self.0
    }
}

impl AsRawFd for Gpu {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

/// `ioctl(file, request, buf)`: the errno as [`Error::Os`] if it fails.
///
/// # Safety
///
/// The driver behind `file` copies at most `buf.len()` bytes in and out for
/// `request`, and any pointers inside `buf` point to memory that stays valid
/// for the call.
pub(crate) unsafe fn ioctl_buf(file: &File, request: u32, buf: &mut [u8]) -> Result<()> {
    // SAFETY: the fd is open while `file` is borrowed; `buf` is borrowed
    // exclusively for the call and long enough (the caller's contract).
    let rc = unsafe { libc::ioctl(file.as_raw_fd(), request as libc::Ioctl, buf.as_mut_ptr()) };
    if rc < 0 {
        return Err(Error::last_os());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ioctl::{decode, ioc_nr, ioc_size, Command};

    #[test]
    fn request_words() {
        // _IOWR('F', 0x2b, 48): NVOS64 RM_ALLOC.
        assert_eq!(request(0x2b, 48), 0xc030_462b);
        assert_eq!(request(0x2a, 32), 0xc020_462a);
        let r = request(Escape::RmVidHeapControl.nr(), abi::Nvos32::SIZE);
        assert_eq!(
            decode(r),
            Ok(Command {
                escape: Escape::RmVidHeapControl,
                size: 184
            })
        );
        assert_eq!(ioc_nr(r), 0x4a);
        assert_eq!(ioc_size(r), 184);
    }

    #[test]
    fn xfer_decision() {
        assert!(!needs_xfer(0));
        assert!(!needs_xfer(abi::FbGetInfoV2Params::SIZE));
        assert!(!needs_xfer(IOC_SIZE_MAX));
        assert!(needs_xfer(IOC_SIZE_MAX + 1));
        assert!(needs_xfer(16384));
        // 228 CARD_INFO records (16416 bytes) would need XFER (and exceed
        // the driver's 16384-byte XFER limit); 227 do not.
        assert!(!needs_xfer(227 * abi::CardInfo::SIZE));
        assert!(needs_xfer(228 * abi::CardInfo::SIZE));
    }

    #[test]
    fn xfer_header_layout() {
        let x = Xfer {
            cmd: 0xd4,
            size: 16384,
            ptr: 0x1122_3344_5566_7788,
        };
        let b = xfer_header(&x);
        assert_eq!(&b[0..4], &0xd4u32.to_ne_bytes());
        assert_eq!(&b[4..8], &16384u32.to_ne_bytes());
        assert_eq!(&b[8..16], &0x1122_3344_5566_7788u64.to_ne_bytes());
        // The module's decoder reads it back as the same inner command.
        let back = Xfer::from_bytes(&b);
        assert_eq!(back, x);
        assert_eq!(
            back.inner(),
            Ok(Command {
                escape: Escape::AttachGpusToFd,
                size: 16384
            })
        );
    }

    #[test]
    fn ioctl_errors_come_back_as_errno() {
        // /dev/null implements no ioctls: the kernel answers ENOTTY, which
        // exercises the whole direct and XFER paths without a driver.
        let n = Node::open("/dev/null").unwrap();
        let mut p = [0u8; 48];
        assert_eq!(n.ioctl(0x2b, &mut p), Err(Error::Os(libc::ENOTTY)));
        let mut big = vec![0u8; 20000];
        assert_eq!(n.ioctl(0xc8, &mut big), Err(Error::Os(libc::ENOTTY)));
        assert_eq!(n.ioctl_xfer(0x2b, &mut p), Err(Error::Os(libc::ENOTTY)));
        assert_eq!(
            n.ioctl_direct(0xc8, &mut big),
            Err(Error::Invalid(
                "parameter block too large for a direct ioctl"
            ))
        );
        let mut short = [0u8; 8];
        assert!(matches!(
            n.ioctl_request(request(0x2b, 48), &mut short),
            Err(Error::Invalid(_))
        ));
        assert_eq!(
            n.alloc_os_event(1, 2),
            Err(Error::Os(libc::ENOTTY)),
            "typed wrappers report the errno too"
        );
    }

    #[test]
    fn open_errors_and_poll() {
        assert_eq!(
            Ctl::open("/nonexistent/nvidiactl").unwrap_err(),
            Error::Os(libc::ENOENT)
        );
        let n = Node::open("/dev/null").unwrap();
        assert_eq!(n.path(), Path::new("/dev/null"));
        let rev = n.poll(libc::POLLOUT, 0).unwrap();
        assert_ne!(rev & libc::POLLOUT, 0);
    }
}
