// SPDX-License-Identifier: GPL-2.0

//! VRAM RM commits for objects of its own: VA spaces (their top page
//! levels), channels (their instance blocks) and GPU VA ranges (their page
//! tables) are charged to the container's ceiling (issue 39).

use super::*;
use nvclient::abi::{
    class, heap, virtual_range_charge, ChannelAllocParams, ChannelGroupAllocParams,
    MemoryAllocationParams, VaSpaceAllocParams, INSTANCE_BLOCK, VASPACE_PAGE_LEVELS,
};

/// The ceiling the test runs vGPU 0 at: room for a few of each.
const LIMIT: u64 = 128 << 10;

/// VRAM the double holds on GPU 0 (the heap's used bytes).
fn held() -> Result<u64, String> {
    Ok(crate::fuzz::check::gpu(0)?.used)
}

/// `memory_refused` of vGPU 0.
fn refused() -> Result<u64, String> {
    read_file("/sys/class/vgpu/vgpu0/memory_refused")?
        .parse()
        .map_err(|e| format!("memory_refused: {e}"))
}

/// Allocates with `next` until refused; checks that the refusal is RM's
/// `NV_ERR_NO_MEMORY`, that the vGPU's `memory_used` is what the double
/// holds beyond `base` and within the ceiling, and that one more `unit`
/// would not fit. Returns the handles.
fn until_refused(
    what: &str,
    base: u64,
    unit: u64,
    mut next: impl FnMut() -> nvclient::Result<u32>,
) -> Result<Vec<u32>, String> {
    let mut handles = Vec::new();
    let before = refused()?;
    loop {
        match next() {
            Ok(h) => handles.push(h),
            Err(Error::Rm(status::NV_ERR_NO_MEMORY)) => break,
            Err(e) => return Err(format!("{what} {}: {e:?}", handles.len() + 1)),
        }
        ensure!(handles.len() < 10_000, "{what}: never refused");
    }
    let (u, h) = (used(0)?, held()? - base);
    println!(
        "# memory: {} {what} to a {LIMIT}-byte ceiling: memory_used {u}, the double holds {h}",
        handles.len()
    );
    ensure!(u == h, "{what}: memory_used {u}, the double holds {h}");
    ensure!(u <= LIMIT, "{what}: memory_used {u} over the ceiling");
    ensure!(
        LIMIT - u < unit,
        "{what}: refused at {u}, with room for one more of {unit}"
    );
    ensure!(
        refused()? == before + 1,
        "{what}: memory_refused did not count it"
    );
    Ok(handles)
}

/// VA spaces, channels and GPU VA ranges, each allocated until refused on a
/// 128 KiB ceiling: each stops at the ceiling, `memory_used` equals the
/// VRAM the double committed for them, and freeing them gives it all back.
pub(super) fn rm_internal_vram_stops_at_the_ceiling() -> Outcome {
    write_file("/sys/class/vgpu/vgpu0/memory_limit", &LIMIT.to_string())
        .map_err(|e| format!("limit: {e}"))?;
    let r = as_container("/ma", || {
        let s = session(0)?;
        let base = held()?;
        ensure!(used(0)? == 0, "charged before anything was allocated");
        // VA spaces: 12 KiB each.
        let spaces = until_refused("VA spaces", base, VASPACE_PAGE_LEVELS.into(), || {
            let p = VaSpaceAllocParams::default();
            s.ctl.alloc_va_space(s.client, s.device, 0, p).map(|r| r.0)
        })?;
        ensure!(
            spaces.len() as u64 == LIMIT / u64::from(VASPACE_PAGE_LEVELS),
            "{} VA spaces",
            spaces.len()
        );
        for h in spaces {
            s.ctl
                .free(s.client, s.device, h)
                .map_err(|e| format!("free: {e:?}"))?;
        }
        ensure!(used(0)? == 0 && held()? == base, "VA spaces not given back");
        // Channels in one TSG: 4 KiB each.
        let tsg = s
            .ctl
            .alloc_tsg(s.client, s.device, 0, ChannelGroupAllocParams::default())
            .map_err(|e| format!("TSG: {e:?}"))?;
        let channels = until_refused("channels", base, INSTANCE_BLOCK.into(), || {
            let p = ChannelAllocParams {
                gp_fifo_entries: 32,
                ..Default::default()
            };
            s.ctl
                .alloc_channel(s.client, tsg, 0, class::AMPERE_CHANNEL_GPFIFO_A, p)
        })?;
        ensure!(
            channels.len() as u64 == LIMIT / u64::from(INSTANCE_BLOCK),
            "{} channels",
            channels.len()
        );
        // Freeing the TSG takes its channels with it.
        s.ctl
            .free(s.client, s.device, tsg)
            .map_err(|e| format!("free: {e:?}"))?;
        ensure!(used(0)? == 0 && held()? == base, "channels not given back");
        // 2 MiB GPU VA ranges: 24 KiB of page tables each.
        let range = 2 * MIB;
        let each = virtual_range_charge(range);
        ensure!(each == 24 << 10, "a 2 MiB range is charged {each}");
        let ranges = until_refused("VA ranges", base, each, || {
            let mut p = MemoryAllocationParams {
                flags: heap::ALLOC_FLAGS_VIRTUAL,
                size: range,
                ..Default::default()
            };
            s.ctl
                .alloc_with(s.client, s.device, 0, class::NV50_MEMORY_VIRTUAL, &mut p)
        })?;
        ensure!(
            ranges.len() as u64 == LIMIT / each,
            "{} ranges",
            ranges.len()
        );
        // A virtual ALLOC_SIZE of VID_HEAP is the same class to RM: one
        // range fewer fits (the ceiling is full), and with one freed, it is
        // charged as the class is.
        let attr = heap::ATTR_LOCATION.set(0, heap::ATTR_LOCATION_VIDMEM);
        let vh = |s: &crate::session::Session| {
            s.ctl
                .vid_heap_alloc_size(s.client, s.device, range, attr, heap::ALLOC_FLAGS_VIRTUAL)
        };
        let r = vh(&s).map(|m| m.handle);
        ensure!(
            r == Err(Error::Rm(status::NV_ERR_NO_MEMORY)),
            "a virtual ALLOC_SIZE past the ceiling: {r:?}"
        );
        s.ctl
            .free(s.client, s.device, ranges[0])
            .map_err(|e| format!("free: {e:?}"))?;
        let m = vh(&s).map_err(|e| format!("virtual ALLOC_SIZE: {e:?}"))?;
        let (u, h) = (used(0)?, held()? - base);
        ensure!(
            u == ranges.len() as u64 * each && u == h,
            "after a virtual ALLOC_SIZE: memory_used {u}, the double holds {h}"
        );
        s.ctl
            .vid_heap_free(s.client, s.device, m.handle)
            .map_err(|e| format!("FREE: {e:?}"))?;
        ensure!(
            used(0)? == (ranges.len() as u64 - 1) * each,
            "the virtual ALLOC_SIZE not given back"
        );
        // A range whose page tables alone pass the ceiling never reaches
        // the driver's heap.
        let mut p = MemoryAllocationParams {
            flags: heap::ALLOC_FLAGS_VIRTUAL | heap::ALLOC_FLAGS_LAZY,
            size: 64 * GIB,
            ..Default::default()
        };
        let before = held()?;
        let r = s
            .ctl
            .alloc_with(s.client, s.device, 0, class::NV50_MEMORY_VIRTUAL, &mut p);
        ensure!(
            r == Err(Error::Rm(status::NV_ERR_NO_MEMORY)) && held()? == before,
            "a lazy 64 GiB range: {r:?}"
        );
        // Closing the session (its client) gives back what is left.
        drop(s);
        ensure!(used(0)? == 0 && held()? == base, "ranges not given back");
        Ok(())
    });
    write_file("/sys/class/vgpu/vgpu0/memory_limit", &GIB.to_string())
        .map_err(|e| format!("limit: {e}"))?;
    r
}

/// GR_GET_CTX_BUFFER_SIZE of `channel`, on the session's subdevice.
pub(crate) fn gr_context_size(s: &crate::session::Session, channel: u32) -> Result<u64, String> {
    let mut p = nvclient::abi::GrGetCtxBufferSizeParams {
        h_channel: channel,
        ..Default::default()
    };
    s.ctl
        .control_with(
            s.client,
            s.subdevice,
            nvclient::abi::ctrl::NV2080_CTRL_CMD_GR_GET_CTX_BUFFER_SIZE,
            &mut p,
        )
        .map_err(|e| format!("GR_GET_CTX_BUFFER_SIZE: {e:?}"))?;
    Ok(p.total_buffer_size)
}

/// A TSG with one channel; returns (TSG, channel).
fn tsg_with_channel(s: &crate::session::Session) -> nvclient::Result<(u32, u32)> {
    let tsg = s
        .ctl
        .alloc_tsg(s.client, s.device, 0, ChannelGroupAllocParams::default())?;
    let p = ChannelAllocParams {
        gp_fifo_entries: 32,
        ..Default::default()
    };
    let ch = s
        .ctl
        .alloc_channel(s.client, tsg, 0, class::AMPERE_CHANNEL_GPFIFO_A, p);
    match ch {
        Ok(ch) => Ok((tsg, ch)),
        Err(e) => {
            let _ = s.ctl.free(s.client, s.device, tsg);
            Err(e)
        }
    }
}

/// A compute object on `channel` (HOPPER_COMPUTE_A, default params).
fn compute_object(s: &crate::session::Session, channel: u32) -> nvclient::Result<u32> {
    let mut p = [0u8; 16];
    s.ctl
        .alloc(s.client, channel, 0, class::HOPPER_COMPUTE_A, &mut p)
}

/// A client need not keep a subdevice for its channels, and RM tells a
/// context's size only on a subdevice of the channel's client: vgpu charged
/// such a client's GR context the GPU's bound, 598,016 bytes more than the
/// double holds (the long fuzz's ledger failures, `docs/runs.md`). It now
/// asks on a subdevice it makes for the question: with the client's
/// subdevice freed, the context is charged what the double holds, and the
/// subdevice vgpu made is gone again (a second one, the client's own, can be
/// made).
pub(super) fn gr_context_without_a_subdevice_is_exact() -> Outcome {
    as_container("/ma", || {
        let s = session(0)?;
        let base = held()?;
        ensure!(used(0)? == 0, "charged before anything was allocated");
        s.ctl
            .free(s.client, s.device, s.subdevice)
            .map_err(|e| format!("free subdevice: {e:?}"))?;
        let (tsg, ch) = tsg_with_channel(&s).map_err(|e| format!("TSG: {e:?}"))?;
        compute_object(&s, ch).map_err(|e| format!("compute: {e:?}"))?;
        let (u, h) = (used(0)?, held()? - base);
        println!("# memory: a GR context with no subdevice: memory_used {u}, the double holds {h}");
        ensure!(u == h, "memory_used {u}, the double holds {h}");
        s.ctl
            .alloc_subdevice(s.client, s.device, s.subdevice, 0)
            .map_err(|e| format!("the client's own subdevice again: {e:?}"))?;
        s.ctl
            .free(s.client, s.device, tsg)
            .map_err(|e| format!("free: {e:?}"))?;
        ensure!(
            used(0)? == 0 && held()? == base,
            "the context not given back: memory_used {}, the double holds {}",
            used(0)?,
            held()? - base
        );
        Ok(())
    })
}

/// The GR context buffers RM allocates at a TSG's first compute object are
/// charged to the TSG at the size RM reports, once per TSG, kept while the
/// TSG lives (not with the compute object), and TSGs with contexts stop at
/// the ceiling with `memory_used` equal to what the double holds.
pub(super) fn gr_contexts_stop_at_the_ceiling() -> Outcome {
    let r = as_container("/ma", || {
        let s = session(0)?;
        let base = held()?;
        ensure!(used(0)? == 0, "charged before anything was allocated");
        let (tsg, ch) = tsg_with_channel(&s).map_err(|e| format!("TSG: {e:?}"))?;
        let before = used(0)?;
        // No buffers before a compute object: RM's NV_ERR_INVALID_OBJECT
        // (`kernel_graphics_context.c:821-823` at 550.163.01).
        let none = gr_context_size(&s, ch);
        ensure!(
            none.as_ref()
                .is_err_and(|e| e.contains(&format!("Rm({})", status::NV_ERR_INVALID_OBJECT))),
            "a context before any compute object: {none:?}"
        );
        let obj = compute_object(&s, ch).map_err(|e| format!("compute: {e:?}"))?;
        let size = gr_context_size(&s, ch)?;
        ensure!(size > 0, "no context size after a compute object");
        let (u, h) = (used(0)?, held()? - base);
        println!("# memory: a GR context: {size} bytes; memory_used {u}, the double holds {h}");
        ensure!(
            u == before + size && u == h,
            "after the first compute object: memory_used {u} (was {before}), the double holds {h}, the context {size}"
        );
        // A second compute object in the TSG: nothing more.
        let second = compute_object(&s, ch).map_err(|e| format!("second: {e:?}"))?;
        ensure!(
            used(0)? == u && held()? - base == u,
            "a second compute object was charged"
        );
        // The objects go, the buffers stay with the TSG.
        for o in [obj, second] {
            s.ctl
                .free(s.client, ch, o)
                .map_err(|e| format!("free: {e:?}"))?;
        }
        ensure!(
            used(0)? == u && held()? - base == u,
            "the context's charge went with its compute objects"
        );
        s.ctl
            .free(s.client, s.device, tsg)
            .map_err(|e| format!("free: {e:?}"))?;
        ensure!(
            used(0)? == 0 && held()? == base,
            "the TSG's context not given back"
        );
        // TSGs with a context each, on a ceiling of two and a half.
        let per = size + u64::from(INSTANCE_BLOCK);
        let limit = 2 * per + per / 2;
        write_file("/sys/class/vgpu/vgpu0/memory_limit", &limit.to_string())
            .map_err(|e| format!("limit: {e}"))?;
        let before = refused()?;
        let mut made = 0;
        let outcome: nvclient::Result<()> = loop {
            let (_, ch) = match tsg_with_channel(&s) {
                Ok(t) => t,
                Err(e) => break Err(e),
            };
            match compute_object(&s, ch) {
                Ok(_) => made += 1,
                Err(e) => break Err(e),
            }
            ensure!(made < 100, "compute contexts never refused");
        };
        let (u, h) = (used(0)?, held()? - base);
        println!(
            "# memory: {made} TSGs with a GR context to a {limit}-byte ceiling, then {outcome:?}: memory_used {u}, the double holds {h}"
        );
        ensure!(
            made == 2 && outcome == Err(Error::Rm(status::NV_ERR_NO_MEMORY)),
            "{made} contexts, then {outcome:?}"
        );
        ensure!(
            u == h && u <= limit,
            "memory_used {u}, the double holds {h}, ceiling {limit}"
        );
        ensure!(refused()? == before + 1, "memory_refused did not count it");
        drop(s);
        ensure!(used(0)? == 0 && held()? == base, "contexts not given back");
        Ok(())
    });
    write_file("/sys/class/vgpu/vgpu0/memory_limit", &GIB.to_string())
        .map_err(|e| format!("limit: {e}"))?;
    r
}

/// An RM_ALLOC block (NVOS21) of a VA space `h` under `s`'s device, its
/// params at `params`.
fn va_space_block(s: &crate::session::Session, h: u32, params: usize) -> Vec<u8> {
    use nvclient::abi::{Nvos21, VaSpaceAllocParams};
    Nvos21 {
        h_root: s.client,
        h_object_parent: s.device,
        h_object_new: h,
        h_class: class::FERMI_VASPACE_A,
        p_alloc_parms: params as u64,
        params_size: VaSpaceAllocParams::SIZE as u32,
        status: 0,
    }
    .to_bytes()
    .to_vec()
}

/// Frees VA space `h` of `s` and checks that its charge and the double's
/// VRAM went back to `base`.
fn va_space_given_back(s: &crate::session::Session, h: u32, base: u64) -> Outcome {
    s.ctl
        .free(s.client, s.device, h)
        .map_err(|e| format!("free: {e:?}"))?;
    ensure!(
        used(0)? == 0 && held()? == base,
        "the VA space not given back"
    );
    Ok(())
}

/// An RM_ALLOC block the caller cannot be answered in (a read-only view of
/// it): the driver makes the VA space all the same, so vgpu must hold its
/// charge and record it, not forget it when the answer cannot be written
/// (found by `make fuzz`, seed 24782834692: `vgpu charged 56397824 bytes
/// of VRAM, the double holds 56410112`).
pub(super) fn unanswerable_block_keeps_the_charge() -> Outcome {
    use nvclient::abi::VaSpaceAllocParams;
    const H: u32 = 0xcafe_0001;
    as_container("/ma", || {
        let s = session(0)?;
        let base = held()?;
        let scratch = crate::fuzz::mem::Scratch::new()?;
        let params = scratch.write(1, &VaSpaceAllocParams::default().to_bytes());
        let blk = va_space_block(&s, H, params);
        let at = scratch.write_read_only(0, &blk);
        let req = nvclient::request(nvclient::ioctl::Escape::RmAlloc.nr(), blk.len());
        // SAFETY: `at` is the read-only view of the scratch area's block.
        let r = unsafe { libc::ioctl(s.ctl.node().fd(), req as _, at) };
        let errno = std::io::Error::last_os_error().raw_os_error();
        ensure!(
            r < 0 && errno == Some(libc::EFAULT),
            "a read-only block: {r}, errno {errno:?}"
        );
        let (u, h) = (used(0)?, held()? - base);
        ensure!(
            u == u64::from(VASPACE_PAGE_LEVELS) && u == h,
            "the unanswered VA space: memory_used {u}, the double holds {h}"
        );
        va_space_given_back(&s, H, base)
    })
}

/// An RM_ALLOC of a VA space whose params are a read-only view: RM makes
/// the VA space, cannot copy its params back, and answers
/// `NV_ERR_INVALID_ADDRESS` with the object kept (`rs_server.c:772`,
/// `param_copy.c:167-178` at 550.163.01). vgpu gives the driver its own
/// copy of the params, records and charges the VA space, then answers as
/// RM does. Before, the driver wrote the caller's params itself, and vgpu,
/// reading a failed status, charged nothing for a VA space the driver held
/// (found by `make fuzz`, seed 46008326837, replayed on the fast kernel:
/// `vgpu charged 53489664 bytes of VRAM, the double holds 53460992` with 2
/// DP regions, 12 KiB apart).
pub(super) fn unwritable_params_keep_the_charge() -> Outcome {
    use nvclient::abi::{Nvos21, VaSpaceAllocParams};
    const H: u32 = 0xcafe_0002;
    as_container("/ma", || {
        let s = session(0)?;
        let base = held()?;
        let scratch = crate::fuzz::mem::Scratch::new()?;
        let params = scratch.write_read_only(1, &VaSpaceAllocParams::default().to_bytes());
        let mut blk = va_space_block(&s, H, params);
        let req = nvclient::request(nvclient::ioctl::Escape::RmAlloc.nr(), blk.len());
        // SAFETY: a whole NVOS21 block of ours.
        let r = unsafe { libc::ioctl(s.ctl.node().fd(), req as _, blk.as_mut_ptr()) };
        let a = Nvos21::decode(&blk);
        let (u, h) = (used(0)?, held()? - base);
        println!(
            "# memory: read-only params: ioctl {r}, status {:#x}, memory_used {u}, the double holds {h}",
            a.status
        );
        ensure!(
            r == 0 && a.status == status::NV_ERR_INVALID_ADDRESS,
            "read-only params: ioctl {r}, status {:#x} (RM: 0 and NV_ERR_INVALID_ADDRESS)",
            a.status
        );
        ensure!(
            u == u64::from(VASPACE_PAGE_LEVELS) && u == h,
            "the VA space made with unwritable params: memory_used {u}, the double holds {h}"
        );
        va_space_given_back(&s, H, base)
    })
}

/// A ctl file whose clients hold VRAM, closed while a mapping of it is
/// still alive: the mapping keeps the driver's file (and, in the driver,
/// its clients and their VRAM) until it goes, so vgpu frees those clients
/// in the driver when the file is closed, before it refunds them. Before,
/// vgpu refunded at the close while the driver kept the VRAM: closing and
/// reopening lifted the ceiling (found by `make fuzz`, seed 46008326837:
/// `vgpu charged 5459968 bytes of VRAM, the double holds 5472256`).
pub(super) fn closed_file_under_a_mapping_gives_its_vram_back() -> Outcome {
    use nvclient::abi::{Nvos33, Nvos33WithFd};
    use nvclient::ioctl::Escape;
    as_container("/ma", || {
        let base = held()?;
        let s = session(0)?;
        s.ctl
            .alloc_vram(s.client, s.device, 0, 256 * MIB)
            .map_err(|e| format!("vram: {e:?}"))?;
        let sys = s
            .ctl
            .alloc_sysmem(s.client, s.device, 0, 4096)
            .map_err(|e| format!("sysmem: {e:?}"))?;
        // RM_MAP_MEMORY naming the ctl file itself, then its mmap: the
        // mapping holds the file the clients were made on.
        let mut p = Nvos33WithFd {
            params: Nvos33 {
                h_client: s.client,
                h_device: s.device,
                h_memory: sys.handle,
                length: 4096,
                ..Default::default()
            },
            fd: s.ctl.fd(),
        };
        s.ctl
            .ioctl_with(Escape::RmMapMemory.nr(), &mut p)
            .map_err(|e| format!("RM_MAP_MEMORY: {e:?}"))?;
        ensure!(
            p.params.status == status::NV_OK,
            "RM_MAP_MEMORY: status {:#x}",
            p.params.status
        );
        // SAFETY: a new shared mapping of the ctl fd wherever the kernel
        // puts it, unmapped below.
        let m = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                4096,
                libc::PROT_READ,
                libc::MAP_SHARED,
                s.ctl.fd(),
                0,
            )
        };
        ensure!(m != libc::MAP_FAILED, "mmap of the ctl fd failed");
        ensure!(
            used(0)? == 256 * MIB,
            "charged {} before the close",
            used(0)?
        );
        drop(s);
        let (u, h) = (used(0)?, held()? - base);
        // SAFETY: the mapping made above, unmapped once.
        unsafe { libc::munmap(m, 4096) };
        println!("# memory: closed under a mapping: memory_used {u}, the double holds {h}");
        ensure!(
            u == h,
            "a closed file's clients outlived it: memory_used {u}, the double holds {h}"
        );
        ensure!(
            held()? == base,
            "after the munmap the double holds {}",
            held()? - base
        );
        Ok(())
    })
}
