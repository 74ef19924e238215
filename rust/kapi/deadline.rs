// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Handshake deadlines: a kernel timer per connection in MPA setup (RFC 5044
//! §7.1), so that a frame that does not complete in time ends its connection
//! without a work item waiting for it.

use super::bindings;
use core::{marker::PhantomData, ptr::NonNull};
use kernel::{ffi::c_void, prelude::*, sync::Arc};

/// `CLOCK_MONOTONIC` in milliseconds: what deadlines and waits are measured in.
pub(crate) fn now_ms() -> i64 {
    // SAFETY: reads the monotonic clock; no preconditions, any context.
    unsafe { bindings::rsiw_shim_now_ms() }
}

/// What a deadline hands itself to when it passes.
pub(crate) trait Expire: Send + Sync + 'static {
    /// Which type it is, for the timer's one callback (distinct per type).
    const KIND: u32;
    /// The deadline passed (softirq; must not sleep).
    fn deadline_passed(self: Arc<Self>);
}

/// A one-shot timer that hands its owner `T` to [`Expire::deadline_passed`].
///
/// While armed, the timer owns one reference on the `T` (given in
/// [`Deadline::arm`], taken back by the expiry or by [`Deadline::cancel`]), so
/// a `T` that owns the `Deadline` outlives any armed timer.
///
/// # Invariants
///
/// `ptr` is a live `rsiw_deadline` from `rsiw_shim_deadline_new`, owned by
/// this value; its timer is armed only with a context from
/// `Arc<T>::into_foreign`.
pub(crate) struct Deadline<T: Expire> {
    ptr: NonNull<bindings::rsiw_deadline>,
    _owner: PhantomData<Arc<T>>,
}

// SAFETY: the timer calls are safe from any thread; the owner serialises
// `arm` and `cancel` (see there).
unsafe impl<T: Expire> Send for Deadline<T> {}
// SAFETY: as for `Send`.
unsafe impl<T: Expire> Sync for Deadline<T> {}

impl<T: Expire> Deadline<T> {
    /// An unarmed deadline.
    pub(crate) fn new() -> Result<Self> {
        // SAFETY: no preconditions; null on allocation failure.
        let p = unsafe { bindings::rsiw_shim_deadline_new(T::KIND) };
        // INVARIANT: a fresh, unarmed deadline.
        NonNull::new(p)
            .map(|ptr| Self {
                ptr,
                _owner: PhantomData,
            })
            .ok_or(ENOMEM)
    }

    /// Fires `ms` from now with `ep`, replacing any earlier arming. Process
    /// context; the caller serialises `arm` and `cancel` on one deadline (the
    /// endpoint's phase lock).
    pub(crate) fn arm(&self, ep: Arc<T>, ms: u32) {
        self.cancel();
        let ctx = crate::kapi::compat::into_foreign(ep);
        // SAFETY: `self` is live and, after `cancel`, not armed: the timer
        // takes over the reference `ctx` stands for.
        unsafe { bindings::rsiw_shim_deadline_arm(self.ptr.as_ptr(), ctx, ms) };
    }

    /// Fires `ms` from now with `owner`, for a deadline the caller knows is
    /// not armed (armed once, see the caller's flag). Any context: unlike
    /// [`Deadline::arm`] it does not wait for a running expiry.
    pub(crate) fn arm_unarmed(&self, owner: Arc<T>, ms: u32) {
        let ctx = crate::kapi::compat::into_foreign(owner);
        // SAFETY: `self` is live and, per the caller, not armed: the timer
        // takes over the reference `ctx` stands for.
        unsafe { bindings::rsiw_shim_deadline_arm(self.ptr.as_ptr(), ctx, ms) };
    }

    /// Disarms; waits for an expiry already running. Returns whether the
    /// deadline was armed and had not fired. Process context, serialised
    /// with `arm`.
    pub(crate) fn cancel(&self) -> bool {
        let mut ctx: *const c_void = core::ptr::null();
        // SAFETY: `self` is live; `ctx` is writable.
        if !unsafe { bindings::rsiw_shim_deadline_cancel(self.ptr.as_ptr(), &mut ctx) } {
            return false;
        }
        // SAFETY: the timer was armed with `ctx` (from `into_foreign` in
        // `arm`) and will not fire any more: its reference is ours again.
        drop(unsafe { crate::kapi::compat::from_foreign::<T>(ctx) });
        true
    }
}

impl<T: Expire> Drop for Deadline<T> {
    fn drop(&mut self) {
        // SAFETY: owned and live; an armed timer would hold a reference on
        // the endpoint that owns `self`, so it is not armed.
        unsafe { bindings::rsiw_shim_deadline_free(self.ptr.as_ptr()) }
    }
}

/// Called by the shim's timer when a deadline passes (softirq).
///
/// # Safety
///
/// `ctx` is the context [`Deadline::arm`] of a `Deadline<T>` gave the timer;
/// each arming fires at most once and is then never cancelled.
pub(crate) unsafe fn fired<T: Expire>(ctx: *const c_void) {
    // SAFETY: per the function's safety requirements the timer's reference
    // is handed over here.
    let owner = unsafe { crate::kapi::compat::from_foreign::<T>(ctx) };
    owner.deadline_passed();
}
