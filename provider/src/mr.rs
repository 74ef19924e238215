// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Memory regions: registered and deregistered in the kernel (pinned user
//! pages); the provider keeps only the handle and keys.

use crate::{cmem, sys};
use core::ffi::{c_int, c_void};
use core::mem::size_of_val;
use core::ptr::null_mut;

/// `verbs_context_ops::reg_mr`: NULL with errno set on failure.
///
/// # Safety
///
/// libibverbs passes a live PD of ours.
pub unsafe extern "C" fn reg_mr(
    pd: *mut sys::ibv_pd,
    addr: *mut c_void,
    length: usize,
    hca_va: u64,
    access: c_int,
) -> *mut sys::ibv_mr {
    let mut vmr = Box::new(sys::verbs_mr::default());
    let mut cmd = sys::ibv_reg_mr::default();
    let mut resp = sys::ib_uverbs_reg_mr_resp::default();
    // SAFETY: arguments as libibverbs gave them; vmr, cmd and resp are live.
    let rc = unsafe {
        sys::ibv_cmd_reg_mr(
            pd,
            addr,
            length,
            hca_va,
            access,
            &mut *vmr,
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
    &mut Box::leak(vmr).ibv_mr
}

/// `verbs_context_ops::dereg_mr`: on failure the MR stays registered.
///
/// # Safety
///
/// `vmr` comes from [`reg_mr`].
pub unsafe extern "C" fn dereg_mr(vmr: *mut sys::verbs_mr) -> c_int {
    // SAFETY: a live MR of ours, leaked from a Box in reg_mr; after a
    // successful deregistration nothing uses it.
    unsafe { cmem::free_boxed_if_destroyed(sys::ibv_cmd_dereg_mr(vmr), vmr) }
}
