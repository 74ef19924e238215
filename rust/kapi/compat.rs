// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! What differs between the kernel crates of the kernel lines rsiw builds for
//! (6.12 and 7.x; `Kbuild` sets `rsiw_k7` for 7.x), in one place: the rest of
//! the module names these items and never the kernel crate's own. The table of
//! differences is in `Documentation/kernels.md`.

use kernel::{
    ffi::{c_char, c_void},
    str::CStr,
    sync::{Arc, ArcBorrow},
    types::ForeignOwnable,
};

// Types that may be read from / written as raw bytes (6.12: `kernel::types`;
// 7.x: `kernel::transmute`).
#[cfg(rsiw_k7)]
pub(crate) use kernel::transmute::{AsBytes, FromBytes};
#[cfg(not(rsiw_k7))]
pub(crate) use kernel::types::{AsBytes, FromBytes};

/// `Arc::into_foreign` (6.12 gives a `*const` pointer, 7.x a `*mut` one): hands
/// one reference to C as an opaque pointer.
pub(crate) fn into_foreign<T: 'static>(a: Arc<T>) -> *const c_void {
    #[allow(clippy::unnecessary_cast)]
    {
        a.into_foreign() as *const c_void
    }
}

/// `Arc::from_foreign`: takes back the reference [`into_foreign`] handed out.
///
/// # Safety
///
/// `p` comes from [`into_foreign`] for an `Arc<T>` and is not used again.
pub(crate) unsafe fn from_foreign<T: 'static>(p: *const c_void) -> Arc<T> {
    // SAFETY: as the caller guarantees; the cast only changes the pointer's
    // mutability to what this kernel's signature names.
    unsafe { Arc::<T>::from_foreign(p as _) }
}

/// `Arc::borrow` of a pointer from [`into_foreign`].
///
/// # Safety
///
/// `p` comes from [`into_foreign`] for an `Arc<T>` whose reference is not taken
/// back ([`from_foreign`]) while the borrow lives.
pub(crate) unsafe fn borrow<'a, T: 'static>(p: *const c_void) -> ArcBorrow<'a, T> {
    // SAFETY: as the caller guarantees; the cast as in `from_foreign`.
    unsafe { <Arc<T> as ForeignOwnable>::borrow(p as _) }
}

/// The NUL-terminated string of `s` for C (6.12: `CStr::as_char_ptr`; 7.x:
/// `CStrExt::as_char_ptr` on `core::ffi::CStr`).
pub(crate) const fn cstr_ptr(s: &CStr) -> *const c_char {
    #[cfg(rsiw_k7)]
    {
        s.as_ptr().cast()
    }
    #[cfg(not(rsiw_k7))]
    {
        s.as_char_ptr()
    }
}

/// A count for a core attribute field: an `int` on 6.12, a `u32` on 7.x
/// (`struct ib_device_attr`), saturating at `INT_MAX` on both.
pub(crate) fn attr_count<T: TryFrom<i32> + Default>(v: u32) -> T {
    T::try_from(i32::try_from(v).unwrap_or(i32::MAX)).unwrap_or_default()
}
