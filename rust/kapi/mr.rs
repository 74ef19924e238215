// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Memory-region glue: the driver-allocated `ib_mr` container, and access to
//! kernel virtual addresses of kernel consumers' buffers (virtual DMA).
//!
//! rsiw, like siw and rxe, registers no DMA device, so `ib_uses_virt_dma()`
//! holds: the addresses kernel consumers put in SGEs, and the page addresses
//! `ib_sg_to_pages` hands to `map_mr_sg`, are kernel virtual addresses of
//! memory the consumer keeps mapped while a work request or a valid
//! registration refers to it. That contract is the safety argument of the
//! `kva_*` functions below; every address they get has first passed
//! `Mem::check` against such a registration.

use super::bindings;
use core::{
    ptr::NonNull,
    sync::atomic::{AtomicU64, Ordering},
};
use kernel::{
    prelude::*,
    sync::{Arc, ArcBorrow},
};

/// Copies `data` to the kernel virtual address `kva`.
pub(crate) fn kva_write(kva: u64, data: &[u8]) -> Result {
    let dst = kva as usize as *mut u8;
    if dst.is_null() {
        return Err(EFAULT);
    }
    // SAFETY: virtual DMA contract (module docs): `kva..kva+len` is mapped
    // kernel memory registered by a kernel consumer; it is not Rust-owned
    // memory, so it cannot alias `data`.
    unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) };
    Ok(())
}

/// Copies from the kernel virtual address `kva` into `out`.
pub(crate) fn kva_read(kva: u64, out: &mut [u8]) -> Result {
    let src = kva as usize as *const u8;
    if src.is_null() {
        return Err(EFAULT);
    }
    // SAFETY: virtual DMA contract, as in `kva_write`.
    unsafe { core::ptr::copy_nonoverlapping(src, out.as_mut_ptr(), out.len()) };
    Ok(())
}

/// The 8-aligned word at `kva` as an atomic.
fn kva_atomic<'a>(kva: u64) -> Result<&'a AtomicU64> {
    if kva == 0 || kva % 8 != 0 {
        return Err(EINVAL);
    }
    // SAFETY: virtual DMA contract; aligned (checked); concurrent CPU
    // accesses to it are the consumer's business and atomics are sound
    // against them.
    Ok(unsafe { AtomicU64::from_ptr(kva as usize as *mut u64) })
}

/// Loads the 8-aligned word at `kva`.
pub(crate) fn kva_load64(kva: u64) -> Result<u64> {
    Ok(kva_atomic(kva)?.load(Ordering::Acquire))
}

/// Compare-and-exchange on the 8-aligned word at `kva`; returns the value seen.
pub(crate) fn kva_cmpxchg64(kva: u64, old: u64, new: u64) -> Result<u64> {
    Ok(
        match kva_atomic(kva)?.compare_exchange(old, new, Ordering::AcqRel, Ordering::Acquire) {
            Ok(v) | Err(v) => v,
        },
    )
}

/// A new driver-allocated `ib_mr` with lkey and rkey `stag`, owning `mem`;
/// the core fills in the device/PD/type fields after the verb returns.
///
/// Returns the raw pointer handed back to the core.
pub(crate) fn mr_new<T: 'static>(
    mem: Arc<T>,
    stag: u32,
    iova: u64,
    len: u64,
) -> Result<*mut bindings::ib_mr> {
    // SAFETY: plain allocation.
    let raw = unsafe { bindings::rsiw_shim_mr_alloc() };
    let mr = NonNull::new(raw).ok_or(ENOMEM)?;
    // SAFETY: `raw` is a fresh zeroed `rsiw_mr` (base first); nobody else
    // has it yet.
    unsafe {
        let c = raw.cast::<bindings::rsiw_mr>();
        (*c).base.lkey = stag;
        (*c).base.rkey = stag;
        (*c).base.iova = iova;
        (*c).base.length = len;
        (*c).priv_ = crate::kapi::compat::into_foreign(mem);
    }
    Ok(mr.as_ptr())
}

/// The Rust object of an rsiw `ib_mr`.
///
/// # Safety
///
/// `mr` must be an `ib_mr` from [`mr_new`] for a `T`, not yet passed to
/// [`mr_free`], valid for `'a`.
pub(crate) unsafe fn mr_obj<'a, T: 'static>(mr: *mut bindings::ib_mr) -> Option<ArcBorrow<'a, T>> {
    // SAFETY: per the function's requirements `mr` is an `rsiw_mr`.
    let p = unsafe { (*mr.cast::<bindings::rsiw_mr>()).priv_ };
    // SAFETY: `priv` came from `into_foreign` in `mr_new` and is released
    // only by `mr_free`.
    (!p.is_null()).then(|| unsafe { crate::kapi::compat::borrow::<T>(p) })
}

/// The `iova`/`length` a consumer last set on an `ib_mr`.
///
/// # Safety
///
/// As for [`mr_obj`].
pub(crate) unsafe fn mr_range(mr: *const bindings::ib_mr) -> (u64, u64) {
    // SAFETY: valid per the requirements.
    unsafe { ((*mr).iova, (*mr).length) }
}

/// Drops the region reference of an `ib_mr` and frees the container.
///
/// # Safety
///
/// `mr` must come from [`mr_new`] for a `T`; it is freed and must not be
/// used again.
pub(crate) unsafe fn mr_free<T: 'static>(mr: *mut bindings::ib_mr) -> Option<Arc<T>> {
    // SAFETY: per the requirements `mr` is an `rsiw_mr`.
    let p = unsafe { (*mr.cast::<bindings::rsiw_mr>()).priv_ };
    // SAFETY: freed once, after reading `priv`.
    unsafe { bindings::rsiw_shim_mr_free(mr) };
    // SAFETY: `priv` came from `into_foreign` and is converted back once.
    (!p.is_null()).then(|| unsafe { crate::kapi::compat::from_foreign::<T>(p) })
}
