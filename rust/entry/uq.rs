// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! C → Rust entry points of the user queues: the SQ doorbell uverbs method.

use super::dev::ret;
use crate::{
    kapi::{bindings as b, qp::qp_obj},
    objects::qp::Qp,
};
use core::ffi::c_int;
use kernel::prelude::*;

/// The `RSIW_METHOD_QP_DOORBELL` handler (`rust/kapi/mmap.c`).
///
/// # Safety
///
/// `qp` is the QP the uverbs core looked up for the method's handle: a live
/// rsiw QP, kept alive (and not destroyed) for the duration of the call.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_qp_doorbell(qp: *mut b::ib_qp) -> c_int {
    // SAFETY: per the requirements; `priv` is set for every created QP.
    let Some(q) = (unsafe { qp_obj::<Qp>(qp) }) else {
        return EINVAL.to_errno();
    };
    ret(q.doorbell())
}
