// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! ib_core's hardware counters (`rdma statistic show link DEV/PORT`, sysfs
//! `hw_counters`): the table of counter names a driver hands to
//! `rdma_alloc_hw_stats_struct`, and the block `get_hw_stats` fills.

use super::bindings;
use core::ptr::{null, NonNull};
use kernel::{ffi::c_int, str::CStr};

/// `N` counter names in the layout `rdma_alloc_hw_stats_struct` keeps a
/// pointer to for the life of every block made from it.
pub(crate) struct StatDescs<const N: usize>([bindings::rdma_stat_desc; N]);

// SAFETY: the table is never written after `new`, and its pointers are to
// `'static` C strings.
unsafe impl<const N: usize> Sync for StatDescs<N> {}

impl<const N: usize> StatDescs<N> {
    /// The table for `names`, in counter order.
    pub(crate) const fn new(names: [&'static CStr; N]) -> Self {
        let mut d = [bindings::rdma_stat_desc {
            name: null(),
            flags: 0,
            priv_: null(),
        }; N];
        let mut i = 0;
        while i < N {
            d[i].name = super::compat::cstr_ptr(names[i]);
            i += 1;
        }
        Self(d)
    }
}

/// A new hw_stats block for the counters of `descs`, for the core to own
/// (it frees it); null if the allocation failed.
pub(crate) fn alloc<const N: usize>(descs: &'static StatDescs<N>) -> *mut bindings::rdma_hw_stats {
    let n = c_int::try_from(N).unwrap_or(0);
    // SAFETY: `descs` lives for ever (`'static`) and holds `N` entries.
    unsafe { bindings::rsiw_shim_hw_stats_alloc(descs.0.as_ptr(), n) }
}

/// The value array of a hw_stats block inside `get_hw_stats`.
///
/// # Invariants
///
/// `p` points to a live block the core holds locked for `'a`.
pub(crate) struct HwStats<'a> {
    p: NonNull<bindings::rdma_hw_stats>,
    _b: core::marker::PhantomData<&'a mut bindings::rdma_hw_stats>,
}

impl HwStats<'_> {
    /// # Safety
    ///
    /// `p` must be null or the block `get_hw_stats` was given, valid and
    /// locked by the core for the view's life.
    pub(crate) unsafe fn from_raw(p: *mut bindings::rdma_hw_stats) -> Option<Self> {
        // INVARIANT: per the requirements.
        Some(Self {
            p: NonNull::new(p)?,
            _b: core::marker::PhantomData,
        })
    }

    /// Counters the block holds.
    pub(crate) fn len(&self) -> usize {
        // SAFETY: live block (type invariant).
        let n = unsafe { bindings::rsiw_shim_hw_stats_len(self.p.as_ptr()) };
        usize::try_from(n).unwrap_or(0)
    }

    /// Sets counter `i` (ignored beyond the block).
    pub(crate) fn set(&mut self, i: usize, v: u64) {
        if let Ok(i) = c_int::try_from(i) {
            // SAFETY: live block (type invariant); the shim checks the index.
            unsafe { bindings::rsiw_shim_hw_stats_set(self.p.as_ptr(), i, v) }
        }
    }
}
