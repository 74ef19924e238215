// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! An irq-safe spinlock (`spin_lock_irqsave`) for state shared between process
//! context, softirq (socket callbacks) and hardirq (ULP completion handlers).
//!
//! `kernel::sync::SpinLock` takes a plain `spin_lock()`, which lockdep reports as
//! an inconsistent lock state once the same lock is also taken in interrupt
//! context; this backend saves and restores the interrupt flags instead.

use super::bindings;
use kernel::{ffi::c_ulong, sync::lock::Backend};

/// A `spinlock_t` taken with `spin_lock_irqsave`; create it with
/// [`new_irq_spinlock!`](crate::new_irq_spinlock).
///
/// Never sleep, allocate with `GFP_KERNEL` or call into a socket while
/// holding the guard.
pub(crate) type IrqSpinLock<T> = kernel::sync::lock::Lock<T, IrqSaveBackend>;

/// Creates a pin-initialiser for an [`IrqSpinLock`] with its own lockdep
/// class: `new_irq_spinlock!(inner, "name")`.
#[macro_export]
macro_rules! new_irq_spinlock {
    ($inner:expr, $name:literal $(,)?) => {
        $crate::kapi::lock::IrqSpinLock::new(
            $inner,
            ::kernel::c_str!($name),
            ::kernel::static_lock_class!(),
        )
    };
}

/// The `spin_lock_irqsave` backend of [`IrqSpinLock`].
pub(crate) struct IrqSaveBackend;

// SAFETY: the kernel's `spinlock_t` gives mutual exclusion between `lock` and
// `unlock`; `relock` keeps the default, which calls the same `lock`.
unsafe impl Backend for IrqSaveBackend {
    type State = bindings::spinlock_t;
    /// The interrupt flags saved by `spin_lock_irqsave`.
    type GuardState = c_ulong;

    unsafe fn init(
        ptr: *mut Self::State,
        name: *const kernel::ffi::c_char,
        key: *mut bindings::lock_class_key,
    ) {
        // SAFETY: the caller guarantees `ptr` is writable and `name`/`key`
        // live forever.
        unsafe { bindings::__spin_lock_init(ptr, name, key) }
    }

    unsafe fn lock(ptr: *mut Self::State) -> Self::GuardState {
        // SAFETY: the caller guarantees `ptr` was initialised by `init`.
        unsafe { bindings::rsiw_shim_spin_lock_irqsave(ptr) }
    }

    unsafe fn unlock(ptr: *mut Self::State, guard_state: &Self::GuardState) {
        // SAFETY: the caller owns the lock; `guard_state` holds the flags its
        // `lock` saved.
        unsafe { bindings::rsiw_shim_spin_unlock_irqrestore(ptr, *guard_state) }
    }

    // 7.x's `Backend` also has these two.
    #[cfg(rsiw_k7)]
    unsafe fn try_lock(ptr: *mut Self::State) -> Option<Self::GuardState> {
        let mut flags: c_ulong = 0;
        // SAFETY: the caller guarantees `ptr` was initialised by `init`;
        // `flags` is written only when the lock was taken.
        unsafe { bindings::rsiw_shim_spin_trylock_irqsave(ptr, &mut flags) }.then_some(flags)
    }

    #[cfg(rsiw_k7)]
    unsafe fn assert_is_held(ptr: *mut Self::State) {
        // SAFETY: the caller guarantees `ptr` was initialised by `init`.
        unsafe { bindings::rsiw_shim_spin_assert_held(ptr) }
    }
}
