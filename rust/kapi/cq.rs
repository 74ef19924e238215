// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! CQ glue: the `rsiw_cq` container, completion and async events to the
//! consumer, and the kernel `ib_wc` a polled completion becomes.

use super::{bindings, obj, qp::IbQpRef};
use core::ptr::NonNull;
use kernel::sync::ArcBorrow;

/// The `ib_cq` of an rsiw CQ, for raising its events.
///
/// # Invariants
///
/// Points to an `ib_cq` that outlives every use: the core destroys a CQ only
/// when no QP uses it, and QPs stop their engine before they are destroyed.
#[derive(Clone, Copy, Debug)]
pub(crate) struct IbCqRef(NonNull<bindings::ib_cq>);

// SAFETY: the pointer is only used to call the consumer's handlers, which
// may be called from any context.
unsafe impl Send for IbCqRef {}
// SAFETY: as above.
unsafe impl Sync for IbCqRef {}

impl IbCqRef {
    /// Wraps the `ib_cq` of a `create_cq` call.
    ///
    /// # Safety
    ///
    /// `cq` must stay valid until the CQ's `destroy_cq` (type invariant).
    pub(crate) unsafe fn new(cq: NonNull<bindings::ib_cq>) -> Self {
        // INVARIANT: per the requirements.
        Self(cq)
    }

    /// Calls the consumer's completion handler.
    pub(crate) fn comp(&self) {
        // SAFETY: valid per the type invariant.
        unsafe { bindings::rsiw_shim_cq_comp(self.0.as_ptr()) }
    }

    /// Reports `IB_EVENT_CQ_ERR` (overflow).
    pub(crate) fn event_err(&self) {
        // SAFETY: valid per the type invariant.
        unsafe {
            bindings::rsiw_shim_cq_event(self.0.as_ptr(), bindings::ib_event_type_IB_EVENT_CQ_ERR)
        }
    }
}

/// What a kernel work completion reports (`ib_wc`'s fields, verbs values).
pub(crate) struct WcFields {
    /// The consumer's work request id.
    pub(crate) wr_id: u64,
    /// `IB_WC_*` status.
    pub(crate) status: u32,
    /// `IB_WC_*` opcode.
    pub(crate) opcode: u32,
    /// Bytes.
    pub(crate) byte_len: u32,
    /// The QP.
    pub(crate) qp: Option<IbQpRef>,
    /// Its number.
    pub(crate) qp_num: u32,
    /// `IB_WC_WITH_*` flags.
    pub(crate) flags: u32,
    /// Immediate data (low 32 bits used) or the invalidated STag.
    pub(crate) ex: u64,
}

/// Fills a kernel work completion.
pub(crate) fn fill_wc(wc: &mut bindings::ib_wc, cqe: &WcFields) {
    // SAFETY: all-zero is a valid `ib_wc` (integers, raw pointers, unions).
    *wc = unsafe { core::mem::zeroed() };
    // SAFETY: writing a union member of plain data.
    unsafe { *wc.__bindgen_anon_1.wr_id.as_mut() = cqe.wr_id };
    wc.status = cqe.status;
    wc.opcode = cqe.opcode;
    wc.byte_len = cqe.byte_len;
    wc.qp = cqe.qp.map_or(core::ptr::null_mut(), |q| q.as_ptr());
    wc.src_qp = cqe.qp_num;
    wc.wc_flags = cqe.flags as i32;
    if cqe.flags & bindings::ib_wc_flags_IB_WC_WITH_INVALIDATE != 0 {
        // SAFETY: writing a union member of plain data.
        unsafe { *wc.ex.invalidate_rkey.as_mut() = cqe.ex as u32 };
    } else {
        // Verbs immediate data is 32 bits in network order: the low half of
        // the 64-bit RFC 7306 field (first four bytes zero).
        // SAFETY: writing a union member of plain data.
        unsafe { *wc.ex.imm_data.as_mut() = (cqe.ex as u32).to_be() };
    }
    wc.port_num = 1;
}

/// The Rust CQ of an rsiw `ib_cq`.
///
/// # Safety
///
/// `cq` must be a live `rsiw_cq` whose `priv` holds a `T` (or is null) and
/// is unchanged for `'a`.
pub(crate) unsafe fn cq_obj<'a, T: 'static>(cq: *mut bindings::ib_cq) -> Option<ArcBorrow<'a, T>> {
    // SAFETY: the core allocated `sizeof(struct rsiw_cq)` with `base` first;
    // `priv` is unchanged for `'a`.
    unsafe { obj::borrow((*cq.cast::<bindings::rsiw_cq>()).priv_) }
}

/// The `priv` slot of an rsiw `ib_cq`.
///
/// # Safety
///
/// `cq` must be an `rsiw_cq` the caller may modify (create/destroy_cq).
pub(crate) unsafe fn cq_slot<'a>(cq: *mut bindings::ib_cq) -> &'a mut *const core::ffi::c_void {
    // SAFETY: per the requirements.
    unsafe { &mut (*cq.cast::<bindings::rsiw_cq>()).priv_ }
}
