// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Protection domains: allocated and destroyed in the kernel, nothing in userspace
//! but the handle.

use crate::abi::AllocPdRespFull;
use crate::{cmem, sys};
use core::ffi::c_int;
use core::mem::size_of_val;
use core::ptr::{addr_of_mut, null_mut};

/// rsiw's PD.
#[repr(C)]
pub struct Pd {
    /// libibverbs' part, first: users hold a pointer to it.
    pub ibv_pd: sys::ibv_pd,
    /// The kernel's PD number, for diagnostics.
    pub pdn: u32,
}

/// `verbs_context_ops::alloc_pd`: NULL with errno set on failure.
///
/// # Safety
///
/// libibverbs passes a live context of ours.
pub unsafe extern "C" fn alloc_pd(ibctx: *mut sys::ibv_context) -> *mut sys::ibv_pd {
    let Some(pd) = cmem::calloc::<Pd>() else {
        return null_mut();
    };
    let pd = pd.as_ptr();
    let mut cmd = sys::ibv_alloc_pd::default();
    let mut resp = AllocPdRespFull::default();
    // SAFETY: pd is a live zeroed Pd; cmd and resp are live, the sizes are theirs
    // (driver udata included). The command fills ibv_pd's context and handle.
    let rc = unsafe {
        let ibv_pd = addr_of_mut!((*pd).ibv_pd);
        sys::ibv_cmd_alloc_pd(
            ibctx,
            ibv_pd,
            &mut cmd,
            size_of_val(&cmd),
            &mut resp.core,
            size_of_val(&resp),
        )
    };
    if rc != 0 {
        // SAFETY: pd was calloc'ed above and is not handed out.
        unsafe { cmem::free(pd) };
        cmem::set_errno(rc);
        return null_mut();
    }
    // SAFETY: pd is live and still only ours.
    unsafe {
        (*pd).pdn = resp.drv.pdn;
        addr_of_mut!((*pd).ibv_pd)
    }
}

/// `verbs_context_ops::dealloc_pd`: on failure the PD stays allocated (users may retry).
///
/// # Safety
///
/// `ibv_pd` comes from [`alloc_pd`].
pub unsafe extern "C" fn dealloc_pd(ibv_pd: *mut sys::ibv_pd) -> c_int {
    // SAFETY: ibv_pd is a live PD of ours.
    let rc = unsafe { sys::ibv_cmd_dealloc_pd(ibv_pd) };
    if rc == 0 {
        // SAFETY: ibv_pd is the first member of the Pd alloc_pd calloc'ed, and the
        // kernel object is gone, so nothing refers to it any more.
        unsafe { cmem::free(ibv_pd.cast::<Pd>()) };
    }
    rc
}
