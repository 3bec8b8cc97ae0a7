// SPDX-License-Identifier: GPL-2.0

//! Checking what a call returned: exact RM statuses and errnos, and context
//! for errors.

use crate::tap::Outcome;
use nvclient::{abi, Error};
use std::fmt::{Debug, Display};

/// Adds what failed to an error.
pub trait Ctx<T> {
    /// The error, prefixed with `what`.
    fn ctx(self, what: &str) -> Result<T, String>;
}

impl<T, E: Display> Ctx<T> for Result<T, E> {
    fn ctx(self, what: &str) -> Result<T, String> {
        self.map_err(|e| format!("{what}: {e}"))
    }
}

/// `Ok` if `r` is exactly RM status `want`.
pub fn want_rm<T: Debug>(r: nvclient::Result<T>, want: u32, what: &str) -> Outcome {
    match r {
        Err(Error::Rm(s)) if s == want => Ok(()),
        other => Err(format!(
            "{what}: got {other:?}, want {}",
            abi::NvStatus(want)
        )),
    }
}

/// `Ok` if `r` is exactly errno `want`.
pub fn want_os<T: Debug>(r: nvclient::Result<T>, want: i32, what: &str) -> Outcome {
    match r {
        Err(Error::Os(e)) if e == want => Ok(()),
        other => Err(format!("{what}: got {other:?}, want errno {want}")),
    }
}
