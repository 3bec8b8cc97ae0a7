// SPDX-License-Identifier: GPL-2.0

//! Foreign GPUs, CARD_INFO, removal while charged, teardown.

use super::*;

pub(super) fn foreign_gpu_refused_and_hidden() -> Outcome {
    as_container("/ma", || {
        let ctl = Ctl::open("/dev/vgpuctl").map_err(|e| format!("{e:?}"))?;
        let client = ctl.alloc_root_client().map_err(|e| format!("{e:?}"))?;
        // GPU 1 exists, but this container has no vGPU on it.
        let r = ctl.alloc_device(client, 0, 1);
        ensure!(
            r == Err(Error::Os(libc::EACCES)),
            "device on a foreign GPU: {r:?}"
        );
        // RM calls on a vGPU node itself would escape the ledger and the
        // rewritten answers: only GPU-node escapes are served there, and
        // RM_ALLOC of the event classes, which RM makes there too. A
        // client there gets the driver's own EINVAL (`escape.c:386-410`
        // at 550.163.01), an RM_FREE vgpu's EPERM.
        let g = Gpu::open("/dev/vgpu0").map_err(|e| format!("{e:?}"))?;
        let mut blk = nvclient::abi::Nvos64 {
            h_class: nvclient::abi::class::NV01_ROOT_CLIENT,
            ..Default::default()
        }
        .to_bytes();
        let r = g.ioctl(nvclient::ioctl::Escape::RmAlloc.nr(), &mut blk);
        ensure!(
            r == Err(Error::Os(libc::EINVAL)),
            "RM_ALLOC of a client on /dev/vgpu0: {r:?}"
        );
        let mut blk = nvclient::abi::Nvos00::default().to_bytes();
        let r = g.ioctl(nvclient::ioctl::Escape::RmFree.nr(), &mut blk);
        ensure!(
            r == Err(Error::Os(libc::EPERM)),
            "RM_FREE on /dev/vgpu0: {r:?}"
        );
        // The driver takes REGISTER_FD on a ctl file too (`escape.c:942-944`
        // at 595.45.04), which would bind the clients this file creates to
        // another file that outlives it: refused on /dev/vgpuctl. A GPU
        // node still takes it.
        let other = Ctl::open("/dev/vgpuctl").map_err(|e| format!("{e:?}"))?;
        let mut p = nvclient::abi::RegisterFd { ctl_fd: other.fd() };
        let r = ctl.ioctl_with(nvclient::ioctl::Escape::RegisterFd.nr(), &mut p);
        ensure!(
            r == Err(Error::Os(libc::EPERM)),
            "REGISTER_FD on /dev/vgpuctl: {r:?}"
        );
        g.register_fd(&other)
            .map_err(|e| format!("REGISTER_FD on /dev/vgpu0: {e:?}"))?;
        let cards = ctl.card_info(8).map_err(|e| format!("card info: {e:?}"))?;
        let minors: Vec<u32> = cards
            .iter()
            .filter(|c| c.valid != 0)
            .map(|c| c.minor_number)
            .collect();
        ensure!(minors == [0], "CARD_INFO shows GPUs {minors:?}, want [0]");
        Ok(())
    })
}

/// While a container asks CARD_INFO again and again, another of its threads
/// watches the answer buffer: GPU 1's record (no vGPU of the container)
/// never appears in it, not even for a moment.
pub(super) fn card_info_never_shows_foreign_gpus() -> Outcome {
    use nvclient::ioctl::{Escape, CARD_INFO_SIZE};
    use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
    use std::sync::Arc;
    as_container("/ma", || {
        let ctl = Ctl::open("/dev/vgpuctl").map_err(|e| format!("{e:?}"))?;
        const N: usize = 8;
        let mut buf = Box::new([0u8; N * CARD_INFO_SIZE]);
        let addr = buf.as_mut_ptr() as usize;
        let seen = Arc::new(AtomicU32::new(0));
        let watch = {
            let seen = seen.clone();
            move || {
                for i in 0..N {
                    let rec = addr + i * CARD_INFO_SIZE;
                    // SAFETY: the buffer lives until `while_racing` has
                    // joined this thread; the kernel writes it concurrently,
                    // which is what is watched.
                    let (valid, minor) = unsafe {
                        (
                            (rec as *const u8).read_volatile(),
                            ((rec + 56) as *const u32).read_volatile(),
                        )
                    };
                    if valid != 0 && minor == 1 {
                        seen.fetch_add(1, Relaxed);
                    }
                }
            }
        };
        let req = nvclient::request(Escape::CardInfo.nr(), N * CARD_INFO_SIZE);
        let fd = ctl.node().fd();
        while_racing(watch, |race| {
            (0..300).try_for_each(|_| {
                // SAFETY: `addr` is the live buffer of N records.
                if race.call(|| unsafe { libc::ioctl(fd, req as _, addr) }) != 0 {
                    return Err(format!("CARD_INFO: errno {}", crate::sys::errno()));
                }
                Ok(())
            })
        })?;
        let n = seen.load(Relaxed);
        ensure!(n == 0, "GPU 1's record was seen {n} times");
        let _ = &mut buf;
        Ok(())
    })
}

pub(super) fn remove_refused_while_charged() -> Outcome {
    // A process holds VRAM with only /dev/vgpuctl open.
    let holder = Holder::spawn(|| {
        join_cgroup("/ma").is_ok()
            && session(0)
                .and_then(|s| {
                    s.ctl
                        .alloc_vram(s.client, s.device, 0, 64 * MIB)
                        .map_err(|e| format!("{e:?}"))?;
                    let Session { ctl, _gpu, .. } = s;
                    drop(_gpu);
                    std::mem::forget(ctl);
                    Ok(())
                })
                .is_ok()
    })?;
    let users = read_file("/sys/class/vgpu/vgpu0/users")?;
    let busy = write_file("/sys/class/vgpu/remove", "0");
    let ready = holder.ready;
    drop(holder);
    ensure!(ready, "child could not allocate");
    ensure!(users == "0", "vgpu0 still open: users {users}");
    ensure!(
        busy == Err(libc::EBUSY),
        "remove while memory is charged: {busy:?}"
    );
    write_file("/sys/class/vgpu/remove", "0")
        .map_err(|e| format!("remove after the holder died: {e}"))?;
    Ok(())
}

pub(super) fn teardown() -> Outcome {
    // vGPU 0 went in the test before.
    write_file("/sys/class/vgpu/remove", "1").map_err(|e| format!("remove 1: {e}"))?;
    sh("rmmod vgpu")?;
    sh("rmmod nvidia")?;
    Ok(())
}
