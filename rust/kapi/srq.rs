// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! SRQ glue: the `rsiw_srq` container and the SRQ limit event.

use super::{bindings, obj};
use core::ptr::NonNull;
use kernel::sync::ArcBorrow;

/// The `ib_srq` of an rsiw SRQ, for raising its events.
///
/// # Invariants
///
/// Points to an `ib_srq` that outlives every use: the core destroys an SRQ
/// only when no QP uses it, and QPs stop their engine before destruction.
#[derive(Clone, Copy, Debug)]
pub(crate) struct IbSrqRef(NonNull<bindings::ib_srq>);

// SAFETY: only used to call the consumer's event handler (any context).
unsafe impl Send for IbSrqRef {}
// SAFETY: as above.
unsafe impl Sync for IbSrqRef {}

impl IbSrqRef {
    /// Wraps the `ib_srq` of a `create_srq` call.
    ///
    /// # Safety
    ///
    /// `srq` must stay valid until the SRQ's `destroy_srq`.
    pub(crate) unsafe fn new(srq: NonNull<bindings::ib_srq>) -> Self {
        // INVARIANT: per the requirements.
        Self(srq)
    }

    /// Reports `IB_EVENT_SRQ_LIMIT_REACHED`.
    pub(crate) fn limit_reached(&self) {
        // SAFETY: valid per the type invariant.
        unsafe {
            bindings::rsiw_shim_srq_event(
                self.0.as_ptr(),
                bindings::ib_event_type_IB_EVENT_SRQ_LIMIT_REACHED,
            )
        }
    }
}

/// The Rust SRQ of an rsiw `ib_srq`.
///
/// # Safety
///
/// `srq` must be a live `rsiw_srq` whose `priv` holds a `T` (or is null) and
/// is unchanged for `'a`.
pub(crate) unsafe fn srq_obj<'a, T: 'static>(
    srq: *mut bindings::ib_srq,
) -> Option<ArcBorrow<'a, T>> {
    // SAFETY: the core allocated `sizeof(struct rsiw_srq)` with `base`
    // first; `priv` is unchanged for `'a`.
    unsafe { obj::borrow((*srq.cast::<bindings::rsiw_srq>()).priv_) }
}

/// The `priv` slot of an rsiw `ib_srq`.
///
/// # Safety
///
/// `srq` must be an `rsiw_srq` the caller may modify (create/destroy_srq).
pub(crate) unsafe fn srq_slot<'a>(srq: *mut bindings::ib_srq) -> &'a mut *const core::ffi::c_void {
    // SAFETY: per the requirements.
    unsafe { &mut (*srq.cast::<bindings::rsiw_srq>()).priv_ }
}
