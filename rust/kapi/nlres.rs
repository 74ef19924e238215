// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The driver's own attributes of a restrack entry (`rdma resource show qp -d`):
//! a nested `RDMA_NLDEV_ATTR_DRIVER` table of named values.

use super::bindings;
use core::ptr::NonNull;
use kernel::{error::Error, prelude::*, str::CStr};

/// `EMSGSIZE` (the message is full), which the 6.12 kernel crate does not name.
fn emsgsize() -> Error {
    Error::from_errno(-(bindings::EMSGSIZE as i32))
}

/// An `rdma_nl_put_driver_*` result: non-zero when the message is full.
fn put_result(rc: kernel::ffi::c_int) -> Result {
    if rc == 0 {
        Ok(())
    } else {
        Err(emsgsize())
    }
}

/// An open driver table in a netlink message; cancelled unless `finish`ed.
///
/// # Invariants
///
/// `msg` is the message a `fill_res_*_entry` op was given, for `'a`, and
/// `table` the nest `rsiw_shim_nl_driver_begin` opened in it.
pub(crate) struct DriverTable<'a> {
    msg: NonNull<bindings::sk_buff>,
    table: Option<NonNull<bindings::nlattr>>,
    _m: core::marker::PhantomData<&'a mut bindings::sk_buff>,
}

impl DriverTable<'_> {
    /// Opens the table; `EMSGSIZE` if the message is full.
    ///
    /// # Safety
    ///
    /// `msg` must be the message of a `fill_res_*_entry` op, valid for the
    /// table's life.
    pub(crate) unsafe fn begin(msg: *mut bindings::sk_buff) -> Result<Self> {
        let msg = NonNull::new(msg).ok_or(EINVAL)?;
        // SAFETY: `msg` is the op's message (per the requirements).
        let t = unsafe { bindings::rsiw_shim_nl_driver_begin(msg.as_ptr()) };
        // INVARIANT: the nest was opened in `msg` just now.
        Ok(Self {
            msg,
            table: Some(NonNull::new(t).ok_or_else(emsgsize)?),
            _m: core::marker::PhantomData,
        })
    }

    /// Adds `name` = `v`.
    pub(crate) fn put_u64(&mut self, name: &CStr, v: u64) -> Result {
        // SAFETY: live message (type invariant); `name` is NUL-terminated.
        put_result(unsafe {
            bindings::rdma_nl_put_driver_u64(self.msg.as_ptr(), name.as_char_ptr(), v)
        })
    }

    /// Adds `name` = `v`.
    pub(crate) fn put_u32(&mut self, name: &CStr, v: u32) -> Result {
        // SAFETY: as in `put_u64`.
        put_result(unsafe {
            bindings::rdma_nl_put_driver_u32(self.msg.as_ptr(), name.as_char_ptr(), v)
        })
    }

    /// Adds `name` = the string `v`.
    pub(crate) fn put_str(&mut self, name: &CStr, v: &CStr) -> Result {
        // SAFETY: as in `put_u64`; `v` is NUL-terminated.
        put_result(unsafe {
            bindings::rdma_nl_put_driver_string(
                self.msg.as_ptr(),
                name.as_char_ptr(),
                v.as_char_ptr(),
            )
        })
    }

    /// Closes the table with what it holds.
    pub(crate) fn finish(mut self) {
        if let Some(t) = self.table.take() {
            // SAFETY: the nest opened in `begin` on the live message.
            unsafe { bindings::rsiw_shim_nl_driver_end(self.msg.as_ptr(), t.as_ptr()) }
        }
    }
}

impl Drop for DriverTable<'_> {
    fn drop(&mut self) {
        if let Some(t) = self.table.take() {
            // SAFETY: the nest opened in `begin`, not yet closed.
            unsafe { bindings::rsiw_shim_nl_driver_cancel(self.msg.as_ptr(), t.as_ptr()) }
        }
    }
}
