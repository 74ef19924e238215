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

/// Completes a destroy verb: once the kernel object is gone (`rc == 0`), frees
/// the provider object `p` (dropping it unmaps its rings); returns `rc`.
///
/// # Safety
///
/// `p` must come from `Box::into_raw`/`Box::leak` and, when `rc == 0`, must not
/// be used afterwards.
pub unsafe fn free_boxed_if_destroyed<T>(rc: c_int, p: *mut T) -> c_int {
    if rc == 0 {
        // SAFETY: per the requirements.
        drop(unsafe { Box::from_raw(p) });
    }
    rc
}

/// Walks a verbs WR list, handing each WR to `one`; stops at the first error,
/// names its WR in `*bad_wr` and returns the errno (0 if all were taken).
///
/// # Safety
///
/// `wr` is a valid list whose links `next` returns; `bad_wr` is NULL or writable.
pub unsafe fn each_wr<W>(
    mut wr: *mut W,
    next: impl Fn(&W) -> *mut W,
    bad_wr: *mut *mut W,
    mut one: impl FnMut(&W) -> Result<(), c_int>,
) -> c_int {
    while !wr.is_null() {
        // SAFETY: a live WR of the caller's list.
        let w = unsafe { &*wr };
        if let Err(e) = one(w) {
            if !bad_wr.is_null() {
                // SAFETY: the caller's out pointer.
                unsafe { *bad_wr = wr };
            }
            return e;
        }
        wr = next(w);
    }
    0
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
