// SPDX-License-Identifier: GPL-2.0

//! Kernel threads that run a loop until they are stopped.

use core::{marker::PhantomData, ptr::NonNull};
use kernel::{
    bindings,
    error::from_err_ptr,
    prelude::*,
    sync::{aref::ARef, Arc},
    task::Task,
};

extern "C" {
    fn kthread_create_on_node(
        threadfn: Option<unsafe extern "C" fn(*mut c_void) -> c_int>,
        data: *mut c_void,
        node: c_int,
        namefmt: *const c_char,
        ...
    ) -> *mut c_void;
    fn kthread_stop(k: *mut c_void) -> c_int;
    fn kthread_should_stop() -> bool;
}

/// What a [`Thread`] runs.
pub(crate) trait Worker: Send + Sync + 'static {
    /// One turn of the loop. It may sleep; it should return often (every few
    /// milliseconds at most), or watch `stop`, so that a stop request is
    /// noticed.
    fn turn(&self, stop: &Stop);
}

/// A kernel thread calling [`Worker::turn`] until dropped.
///
/// Dropping it asks the thread to stop and waits until it has.
///
/// # Invariants
///
/// `task` is a kernel thread made by [`Thread::spawn`], running `run`, that
/// no one but `drop` stops; the `ARef` holds a reference to its task struct
/// (so `kthread_stop` may be called on it even after the thread exited).
pub(crate) struct Thread {
    task: ARef<Task>,
}

/// The thread function: loops until `kthread_stop`.
///
/// # Safety
///
/// `data` is a pointer from `Arc::into_raw` of an `Arc<W>`, given to this
/// thread alone.
unsafe extern "C" fn run<W: Worker>(data: *mut c_void) -> c_int {
    // SAFETY: see the function's safety section; the thread now owns the Arc.
    let worker = unsafe { Arc::<W>::from_raw(data.cast()) };
    // SAFETY: called from a kthread.
    while !unsafe { kthread_should_stop() } {
        worker.turn(&Stop(PhantomData));
    }
    0
}

impl Thread {
    /// Starts a thread named `name` running `worker`.
    pub(crate) fn spawn<W: Worker>(name: &CStr, worker: Arc<W>) -> Result<Self> {
        let data = Arc::into_raw(worker).cast_mut().cast::<c_void>();
        // SAFETY: `run::<W>` matches the callback type and takes ownership of
        // `data`; "%s" consumes the one NUL-terminated argument that follows,
        // which is copied before the call returns. NUMA_NO_NODE is -1.
        let task: *mut bindings::task_struct = unsafe {
            kthread_create_on_node(
                Some(run::<W>),
                data,
                -1,
                c"%s".as_char_ptr(),
                name.as_char_ptr(),
            )
        }
        .cast();
        let new = match from_err_ptr(task).map(|t| NonNull::new(t.cast::<Task>())) {
            Ok(Some(new)) => new,
            r => {
                // SAFETY: the thread was not created, so `data` was not
                // consumed.
                drop(unsafe { Arc::<W>::from_raw(data.cast()) });
                return Err(r.err().unwrap_or(ENOMEM));
            }
        };
        // SAFETY: `new` is a valid, new task (`Task` is a transparent wrapper
        // of `task_struct`), alive at least until it is woken and exits;
        // borrowed only to take a reference of our own.
        let task: ARef<Task> = ARef::from(unsafe { new.as_ref() });
        task.wake_up();
        // INVARIANT: a new kthread running `run::<W>`, whose task struct the
        // `ARef` keeps alive until `kthread_stop` has reaped it.
        Ok(Self { task })
    }
}

impl Drop for Thread {
    fn drop(&mut self) {
        // SAFETY: by the type invariants `task` is our kthread, running `run`
        // until it sees the stop request, stopped once, here; the `ARef`
        // keeps its task struct alive past `kthread_stop` and puts it after.
        unsafe { kthread_stop(self.task.as_ptr().cast()) };
    }
}

/// Proof that the code holding it runs on a [`Thread`]: handed to
/// [`Worker::turn`] only, and neither `Send` nor constructible elsewhere.
pub(crate) struct Stop(PhantomData<*mut ()>);

impl Stop {
    /// Whether the thread has been asked to stop (its [`Thread`] dropped).
    pub(crate) fn requested(&self) -> bool {
        // SAFETY: a `Stop` exists only on the kthread `run` started (see the
        // type), where `kthread_should_stop` is valid.
        unsafe { kthread_should_stop() }
    }
}

/// Sleeps `us` microseconds on a high-resolution timer with no slack (the
/// sleep is exact to the timer's resolution, unlike `fsleep`, which adds up
/// to 25%), without counting towards the load average.
pub(crate) fn sleep_us(us: u64) {
    let us = us.min(u64::from(u32::MAX)) as usize;
    // SAFETY: may sleep; callers are in process context. TASK_IDLE is an
    // uninterruptible sleep that does not count as load.
    unsafe { bindings::usleep_range_state(us, us, bindings::TASK_IDLE) };
}
