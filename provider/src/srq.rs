// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Shared receive queues: created, modified and destroyed in the kernel;
//! receive WRs posted straight into the shared SRQ ring.

use crate::abi::CreateSrqRespFull;
use crate::qp;
use crate::ring::Ring;
use crate::{cmem, sys};
use core::ffi::c_int;
use core::mem::size_of_val;
use core::ptr::null_mut;
use rsiw_abi::wqe::RQE_SIZE;
use std::sync::Mutex;

/// rsiw's SRQ.
#[repr(C)]
pub struct Srq {
    /// libibverbs' part, first: users hold a pointer to it.
    pub ibv_srq: sys::ibv_srq,
    /// The RQE ring; set before the SRQ is handed out.
    ring: Option<Ring>,
    /// Our producer index; the SRQ lock.
    tail: Mutex<u32>,
    /// Granted SGEs per WR.
    max_sge: u32,
}

/// `verbs_context_ops::create_srq`: NULL with errno set on failure.
///
/// # Safety
///
/// libibverbs passes a live PD of ours and a valid `attr`.
pub unsafe extern "C" fn create_srq(
    pd: *mut sys::ibv_pd,
    attr: *mut sys::ibv_srq_init_attr,
) -> *mut sys::ibv_srq {
    let mut srq = Box::new(Srq {
        ibv_srq: Default::default(),
        ring: None,
        tail: Mutex::new(0),
        max_sge: 0,
    });
    let mut cmd = sys::ibv_create_srq::default();
    let mut resp = CreateSrqRespFull::default();
    // SAFETY: the boxed SRQ keeps its address for its life; cmd/resp are live
    // and sized with the driver part.
    let rc = unsafe {
        sys::ibv_cmd_create_srq(
            pd,
            &mut srq.ibv_srq,
            attr,
            &mut cmd,
            size_of_val(&cmd),
            &mut resp.core,
            size_of_val(&resp),
        )
    };
    if rc != 0 {
        cmem::set_errno(rc);
        return null_mut();
    }
    // SAFETY: the PD and its context are live; attr is valid.
    let (fd, a) = unsafe { ((*(*pd).context).cmd_fd, &mut (*attr).attr) };
    let d = resp.drv;
    match Ring::map(fd, d.srq_key, d.srq_len, d.num_rqe, RQE_SIZE) {
        Ok(r) => srq.ring = Some(r),
        Err(e) => {
            // SAFETY: created above, not handed out.
            unsafe { sys::ibv_cmd_destroy_srq(&mut srq.ibv_srq) };
            cmem::set_errno(e);
            return null_mut();
        }
    }
    srq.max_sge = a.max_sge;
    a.max_wr = d.num_rqe;
    &mut Box::leak(srq).ibv_srq
}

/// The [`Srq`] around an `ibv_srq` of ours.
///
/// # Safety
///
/// `srq` must come from [`create_srq`] and not be destroyed.
unsafe fn from_ibv<'a>(srq: *mut sys::ibv_srq) -> &'a Srq {
    // SAFETY: ibv_srq is the first field of the #[repr(C)] Srq.
    unsafe { &*srq.cast::<Srq>() }
}

/// `verbs_context_ops::modify_srq` (the limit; the size is fixed).
///
/// # Safety
///
/// libibverbs passes an SRQ of ours and a valid `attr`.
pub unsafe extern "C" fn modify_srq(
    srq: *mut sys::ibv_srq,
    attr: *mut sys::ibv_srq_attr,
    mask: c_int,
) -> c_int {
    let mut cmd = sys::ibv_modify_srq::default();
    // SAFETY: arguments as libibverbs gave them; cmd is live and sized.
    unsafe { sys::ibv_cmd_modify_srq(srq, attr, mask, &mut cmd, size_of_val(&cmd)) }
}

/// `verbs_context_ops::query_srq`.
///
/// # Safety
///
/// libibverbs passes an SRQ of ours and a valid `attr`.
pub unsafe extern "C" fn query_srq(srq: *mut sys::ibv_srq, attr: *mut sys::ibv_srq_attr) -> c_int {
    let mut cmd = sys::ibv_query_srq::default();
    // SAFETY: arguments as libibverbs gave them; cmd is live and sized.
    unsafe { sys::ibv_cmd_query_srq(srq, attr, &mut cmd, size_of_val(&cmd)) }
}

/// `verbs_context_ops::destroy_srq`: on failure the SRQ stays usable.
///
/// # Safety
///
/// `srq` comes from [`create_srq`]; no QP uses it.
pub unsafe extern "C" fn destroy_srq(srq: *mut sys::ibv_srq) -> c_int {
    // SAFETY: a live SRQ of ours, leaked from a Box in create_srq; after a
    // successful destroy nothing uses it.
    unsafe { cmem::free_boxed_if_destroyed(sys::ibv_cmd_destroy_srq(srq), srq.cast::<Srq>()) }
}

/// `verbs_context_ops::post_srq_recv`.
///
/// # Safety
///
/// libibverbs passes an SRQ of ours and a valid WR list.
pub unsafe extern "C" fn post_srq_recv(
    srq: *mut sys::ibv_srq,
    wr: *mut sys::ibv_recv_wr,
    bad_wr: *mut *mut sys::ibv_recv_wr,
) -> c_int {
    // SAFETY: per the requirements.
    let srq = unsafe { from_ibv(srq) };
    let Some(ring) = &srq.ring else {
        return sys::EINVAL as c_int;
    };
    // SAFETY: forwarded.
    unsafe { qp::post_rq(ring, &srq.tail, srq.max_sge, wr, bad_wr) }
}
