// SPDX-License-Identifier: GPL-2.0

//! Open files of the UVM node: what each has become (uninitialised, a VA
//! space, an mm file). Their file operations are in `fops.rs`.

use kernel::{
    fs::{File, LocalFile},
    mm::MmWithUser,
    prelude::*,
    sync::{aref::ARef, ArcBorrow, Mutex},
};

use crate::kapi::chrdev;

/// What a file of the UVM node has become.
pub(crate) enum FileState {
    /// Opened, not initialised.
    Uninit,
    /// `UVM_INITIALIZE`d: the VA space with this id.
    VaSpace(u64),
    /// `UVM_MM_INITIALIZE`d for VA space `space`.
    Mm {
        space: u64,
        /// An `mm_users` reference on the VA space's recorded mm.
        _mm: ARef<MmWithUser>,
        /// The primary (VA space) file, kept open until this one closes.
        _primary: ARef<File>,
    },
}

/// An open file of the UVM node.
#[pin_data]
pub(crate) struct UvmFile {
    /// Opened on the tools minor.
    pub(crate) tools: bool,
    #[pin]
    pub(crate) state: Mutex<FileState>,
}

impl UvmFile {
    /// The VA space this file is, if it is one.
    pub(crate) fn va_space(&self) -> Option<u64> {
        match *self.state.lock() {
            FileState::VaSpace(id) => Some(id),
            _ => None,
        }
    }
}

/// The file operations of the UVM node's two minors (`fops.rs`).
pub(crate) struct UvmFops;

/// The UVM file behind `file`, if it is one of the double's.
pub(crate) fn uvm_file(file: &LocalFile) -> Option<ArcBorrow<'_, UvmFile>> {
    chrdev::private::<UvmFops>(file)
}
