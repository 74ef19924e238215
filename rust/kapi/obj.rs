// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The `priv` slot of rsiw's C object containers (`rsiw_cq`, `rsiw_qp`,
//! `rsiw_srq`, `rsiw_mr`): an `Arc` of the Rust object in foreign form.

use core::ffi::c_void;
use kernel::{
    error::Error,
    sync::{Arc, ArcBorrow},
};

/// Borrows the object in a `priv` slot.
///
/// # Safety
///
/// `p` must be null or come from [`store`] for a `T`, and not be passed to
/// [`take`] during `'a`.
pub(crate) unsafe fn borrow<'a, T: 'static>(p: *const c_void) -> Option<ArcBorrow<'a, T>> {
    // SAFETY: per the requirements.
    (!p.is_null()).then(|| unsafe { crate::kapi::compat::borrow::<T>(p) })
}

/// Puts `obj` in an empty `priv` slot.
pub(crate) fn store<T: 'static>(slot: &mut *const c_void, obj: Arc<T>) {
    // A full slot would leak; the verbs fill each slot once.
    *slot = crate::kapi::compat::into_foreign(obj);
}

/// Empties a `priv` slot.
///
/// # Safety
///
/// The slot must be null or filled by [`store`] for a `T`, with no borrow
/// from [`borrow`] alive.
pub(crate) unsafe fn take<T: 'static>(slot: &mut *const c_void) -> Option<Arc<T>> {
    // Not `mem::take`: raw pointers implement `Default` only from Rust 1.88 on
    // (7.x kernels are built with older compilers, Debian's 7.3 with 1.85).
    let p = *slot;
    *slot = core::ptr::null();
    // SAFETY: per the requirements, converted back once.
    (!p.is_null()).then(|| unsafe { crate::kapi::compat::from_foreign::<T>(p) })
}

/// `EOPNOTSUPP`, which the 6.12 kernel crate does not name.
pub(crate) fn eopnotsupp() -> Error {
    Error::from_errno(-(super::bindings::EOPNOTSUPP as i32))
}

/// Refuses to load if bindgen's view of the object containers and the work
/// request/completion structures differs from the C compiler's.
pub(crate) fn check_layout() -> kernel::error::Result {
    use super::bindings as b;
    use core::mem::size_of;
    let mut c = [0usize; b::RSIW_OBJ_LAYOUT_N as usize];
    // SAFETY: `c` has room for the RSIW_OBJ_LAYOUT_N sizes the shim writes.
    unsafe { b::rsiw_shim_obj_layout(c.as_mut_ptr()) };
    let rust = [
        size_of::<b::rsiw_cq>(),
        size_of::<b::rsiw_qp>(),
        size_of::<b::rsiw_srq>(),
        size_of::<b::rsiw_mr>(),
        size_of::<b::ib_wc>(),
        size_of::<b::ib_send_wr>(),
        size_of::<b::ib_qp_attr>(),
        size_of::<b::ib_qp_init_attr>(),
    ];
    if rust != c {
        kernel::pr_err!("object layouts differ: Rust {:?}, C {:?}\n", rust, c);
        return Err(kernel::error::code::EINVAL);
    }
    Ok(())
}
