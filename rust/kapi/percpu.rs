// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! A fixed array of per-CPU `u64` counters: adds touch only the running CPU's
//! copy (no shared cache line on the data path), reads sum every CPU's.

use super::bindings;
use core::ptr::NonNull;
use kernel::prelude::*;

/// `N` counters, one copy per possible CPU.
///
/// # Invariants
///
/// `p` came from `rsiw_shim_pcpu_alloc(N)` and is freed only by `drop`.
pub(crate) struct PerCpuU64<const N: usize> {
    p: NonNull<u64>,
}

// SAFETY: each CPU writes only its own copy, with a single instruction that
// interrupts cannot split; readers only load. The allocation is not tied to
// a thread.
unsafe impl<const N: usize> Send for PerCpuU64<N> {}
// SAFETY: as above; `&self` methods never hand out references into the copies.
unsafe impl<const N: usize> Sync for PerCpuU64<N> {}

impl<const N: usize> PerCpuU64<N> {
    /// `N` zeroed counters (process context, may sleep).
    pub(crate) fn new() -> Result<Self> {
        // SAFETY: allocates; the result is checked for NULL.
        let p = unsafe { bindings::rsiw_shim_pcpu_alloc(N) };
        // INVARIANT: allocated above for N counters.
        Ok(Self {
            p: NonNull::new(p).ok_or(ENOMEM)?,
        })
    }

    /// Adds `v` to counter `i` (any context); an index beyond `N` is ignored.
    pub(crate) fn add(&self, i: usize, v: u64) {
        if i < N {
            // SAFETY: `p` holds N counters per CPU (type invariant), `i < N`.
            unsafe { bindings::rsiw_shim_pcpu_add(self.p.as_ptr(), i, v) }
        }
    }

    /// Counter `i` summed over the CPUs (0 beyond `N`).
    pub(crate) fn sum(&self, i: usize) -> u64 {
        if i >= N {
            return 0;
        }
        // SAFETY: as in `add`; reading other CPUs' copies only loads.
        unsafe { bindings::rsiw_shim_pcpu_sum(self.p.as_ptr(), i) }
    }
}

impl<const N: usize> Drop for PerCpuU64<N> {
    fn drop(&mut self) {
        // SAFETY: allocated by `new` (type invariant), freed once.
        unsafe { bindings::rsiw_shim_pcpu_free(self.p.as_ptr()) }
    }
}
