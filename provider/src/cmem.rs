// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The C heap and `errno`: libibverbs frees nothing of ours, but the objects it
//! allocates for us (the context) are `calloc`ed and must go back with `free`.

use crate::sys;
use core::ffi::c_int;
use core::ptr::NonNull;

/// A zero-filled C allocation for one `T`, or `None` (errno is then ENOMEM).
///
/// Every type used here is a bindgen C struct (or a `#[repr(C)]` struct of them) for
/// which all-zero bytes are a valid value, as in the C providers.
pub fn calloc<T>() -> Option<NonNull<T>> {
    // clang declares calloc with `unsigned long` (size_t on every Linux target).
    let size = core::mem::size_of::<T>() as core::ffi::c_ulong;
    // SAFETY: calloc has no preconditions; a null return is handled below.
    let p = unsafe { sys::calloc(1, size) };
    let p = NonNull::new(p.cast::<T>());
    if p.is_none() {
        set_errno(sys::ENOMEM as c_int);
    }
    p
}

/// Return a [`calloc`] (or libibverbs `calloc`) allocation to the C heap.
///
/// # Safety
///
/// `p` must come from `calloc` and must not be used afterwards.
pub unsafe fn free<T>(p: *mut T) {
    // SAFETY: the caller guarantees `p` is a live C heap allocation it gives up.
    unsafe { sys::free(p.cast()) }
}

/// The calling thread's `errno`.
pub fn errno() -> c_int {
    // SAFETY: __errno_location returns a valid pointer to this thread's errno.
    unsafe { *sys::__errno_location() }
}

/// Set the calling thread's `errno`, as libibverbs expects of calls returning NULL.
pub fn set_errno(err: c_int) {
    // SAFETY: __errno_location returns a valid pointer to this thread's errno.
    unsafe { *sys::__errno_location() = err }
}
