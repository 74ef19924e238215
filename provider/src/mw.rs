// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Memory windows (type 2): allocated and deallocated in the kernel; bound
//! with a Bind MW work request (`IBV_WR_BIND_MW`, `ibv_wr_bind_mw`).

use crate::{cmem, sys};
use core::ffi::c_int;
use core::mem::size_of_val;
use core::ptr::null_mut;

/// `verbs_context_ops::alloc_mw`: NULL with errno set on failure (the
/// kernel offers type 2 only).
///
/// # Safety
///
/// libibverbs passes a live PD of ours.
pub unsafe extern "C" fn alloc_mw(
    pd: *mut sys::ibv_pd,
    kind: sys::ibv_mw_type,
) -> *mut sys::ibv_mw {
    let mut mw = Box::new(sys::ibv_mw::default());
    let mut cmd = sys::ibv_alloc_mw::default();
    let mut resp = sys::ib_uverbs_alloc_mw_resp::default();
    // SAFETY: arguments as libibverbs gave them; mw, cmd and resp are live.
    let rc = unsafe {
        sys::ibv_cmd_alloc_mw(
            pd,
            kind,
            &mut *mw,
            &mut cmd,
            size_of_val(&cmd),
            &mut resp,
            size_of_val(&resp),
        )
    };
    if rc != 0 {
        cmem::set_errno(rc);
        return null_mut();
    }
    Box::leak(mw)
}

/// `verbs_context_ops::dealloc_mw`: on failure the window stays.
///
/// # Safety
///
/// `mw` comes from [`alloc_mw`].
pub unsafe extern "C" fn dealloc_mw(mw: *mut sys::ibv_mw) -> c_int {
    // SAFETY: a live window of ours, leaked from a Box in alloc_mw; after a
    // successful deallocation nothing uses it.
    unsafe { cmem::free_boxed_if_destroyed(sys::ibv_cmd_dealloc_mw(mw), mw) }
}
