// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The driver-private part of a uverbs command (`struct ib_udata`): responses
//! are the `#[repr(C)]` structures of the user ABI crate.

use super::bindings;
use super::compat::AsBytes;
use crate::abi;
use core::{marker::PhantomData, ptr::NonNull};
use kernel::{error::to_result, prelude::*};

// SAFETY: `#[repr(C)]`, two `u32` fields, no padding, every bit pattern valid.
unsafe impl AsBytes for abi::AllocUcontextResp {}
// SAFETY: `#[repr(C)]`, two `u32` fields, no padding, every bit pattern valid.
unsafe impl AsBytes for abi::AllocPdResp {}

/// The user buffers of one verb call.
///
/// # Invariants
///
/// `ptr` points to an `ib_udata` valid for `'a`, whose `outbuf`/`outlen`
/// describe user memory (checked by `copy_to_user`).
pub(crate) struct Udata<'a> {
    ptr: NonNull<bindings::ib_udata>,
    _life: PhantomData<&'a mut bindings::ib_udata>,
}

impl<'a> Udata<'a> {
    /// Wraps the udata of a verb callback; `None` for kernel callers.
    ///
    /// # Safety
    ///
    /// `ptr` must be null or point to an `ib_udata` valid for `'a`.
    pub(crate) unsafe fn from_raw(ptr: *mut bindings::ib_udata) -> Option<Self> {
        // INVARIANT: valid for `'a` per the safety requirements.
        NonNull::new(ptr).map(|ptr| Self {
            ptr,
            _life: PhantomData,
        })
    }

    /// The raw `ib_udata`, for shim calls that find the ucontext through it.
    pub(crate) fn as_raw(&self) -> *mut bindings::ib_udata {
        self.ptr.as_ptr()
    }

    /// Bytes of driver input the user passed.
    pub(crate) fn inlen(&self) -> usize {
        // SAFETY: valid per the type invariant.
        unsafe { (*self.ptr.as_ptr()).inlen }
    }

    /// Bytes of driver output the user has room for.
    pub(crate) fn outlen(&self) -> usize {
        // SAFETY: valid per the type invariant.
        unsafe { (*self.ptr.as_ptr()).outlen }
    }

    /// Copies `resp` to the user; `EINVAL` if the user's buffer is smaller.
    pub(crate) fn respond<T: AsBytes>(&mut self, resp: &T) -> Result {
        let len = core::mem::size_of::<T>();
        // SAFETY: valid per the type invariant; `resp` is readable for `len`
        // bytes, all initialised (`AsBytes`).
        to_result(unsafe {
            bindings::rsiw_shim_copy_to_udata(self.ptr.as_ptr(), (resp as *const T).cast(), len)
        })
    }
}
