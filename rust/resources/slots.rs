// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! A per-device table of objects found by a small integer (STag index, QP
//! number): cyclic allocation, lookup from any context.
//!
//! Lookups run in softirq (placement resolves STags, iw_cm resolves QP
//! numbers), so the table is an [`IrqSpinLock`]; growth allocates with
//! `GFP_KERNEL` outside the lock and swaps the larger vector in.

use crate::kapi::lock::IrqSpinLock;
use kernel::{alloc::KVVec, prelude::*, sync::Arc};

/// The fields [`Slots::inner`] protects.
struct Inner<T> {
    /// `None` marks a free index.
    slots: KVVec<Option<Arc<T>>>,
    /// Where the next cyclic search starts, so a freed number is not reused
    /// at once (a stale STag or QP number then misses instead of aliasing).
    next: usize,
}

/// A table of `Arc<T>` indexed by `first..limit`.
#[pin_data]
pub(crate) struct Slots<T> {
    /// Lowest index handed out (0 is never a valid STag index or QP number).
    first: usize,
    /// One past the highest index handed out.
    limit: usize,
    /// Taken in any context, never across an allocation or a callback.
    #[pin]
    inner: IrqSpinLock<Inner<T>>,
}

/// Entries a table starts with.
const INITIAL: usize = 64;

impl<T: Send + Sync> Slots<T> {
    /// An empty table handing out indices in `first..limit`.
    pub(crate) fn new(first: usize, limit: usize) -> impl PinInit<Self> {
        pin_init!(Self {
            first,
            limit,
            inner <- crate::new_irq_spinlock!(
                Inner { slots: KVVec::new(), next: 0 },
                "rsiw_slots"
            ),
        })
    }

    /// The object at `index`, if any.
    pub(crate) fn get(&self, index: usize) -> Option<Arc<T>> {
        let inner = self.inner.lock();
        inner.slots.get(index)?.clone()
    }

    /// Stores `obj` at a free index and returns the index; `ENOMEM` when all
    /// of `first..limit` is taken or memory runs out.
    pub(crate) fn insert(&self, obj: Arc<T>) -> Result<usize> {
        let mut obj = Some(obj);
        loop {
            let cap = {
                let mut inner = self.inner.lock();
                if let Some(i) = self.free_index(&inner) {
                    let slot = inner.slots.get_mut(i).ok_or(EINVAL)?;
                    *slot = obj.take();
                    inner.next = i + 1;
                    return Ok(i);
                }
                inner.slots.len()
            };
            self.grow(cap)?;
        }
    }

    /// A free index in the current vector, searching cyclically.
    fn free_index(&self, inner: &Inner<T>) -> Option<usize> {
        let len = inner.slots.len().min(self.limit);
        let start = inner.next.clamp(self.first, len.max(self.first));
        Iterator::chain(start..len, self.first..start.min(len))
            .find(|&i| matches!(inner.slots.get(i), Some(None)))
    }

    /// Replaces a vector of `cap` entries with one twice as large.
    fn grow(&self, cap: usize) -> Result {
        if cap >= self.limit {
            return Err(ENOMEM);
        }
        let new_cap = cap.saturating_mul(2).max(INITIAL).min(self.limit);
        let mut bigger = KVVec::with_capacity(new_cap, GFP_KERNEL)?;
        let old = {
            let mut inner = self.inner.lock();
            if inner.slots.len() != cap {
                // Someone else grew it meanwhile; ours is dropped unused.
                return Ok(());
            }
            for slot in inner.slots.iter_mut() {
                // Cannot fail: the capacity was reserved above.
                bigger.push(slot.take(), GFP_NOWAIT)?;
            }
            while bigger.len() < new_cap {
                bigger.push(None, GFP_NOWAIT)?;
            }
            core::mem::replace(&mut inner.slots, bigger)
        };
        drop(old);
        Ok(())
    }

    /// Removes and returns the object at `index`.
    pub(crate) fn remove(&self, index: usize) -> Option<Arc<T>> {
        let mut inner = self.inner.lock();
        inner.slots.get_mut(index)?.take()
    }
}
