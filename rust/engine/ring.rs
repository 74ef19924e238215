// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! A fixed-capacity FIFO allocated once when a connection starts, for the
//! engine's queues (in-flight send WQEs, outstanding Read/Atomic requests
//! bounded by ORD, inbound ones bounded by IRD: RFC 5040 §6.5, RFC 7306 §5.2).

use kernel::{alloc::KVVec, prelude::*};

/// A FIFO of at most `capacity` entries; never allocates after [`Ring::new`],
/// so it can be filled from softirq.
pub(crate) struct Ring<T> {
    slots: KVVec<Option<T>>,
    head: usize,
    len: usize,
}

impl<T> Ring<T> {
    /// An empty ring of `capacity` (at least one) entries (process context).
    pub(crate) fn new(capacity: usize) -> Result<Self> {
        let capacity = capacity.max(1);
        let mut slots = KVVec::with_capacity(capacity, GFP_KERNEL)?;
        for _ in 0..capacity {
            slots.push(None, GFP_KERNEL)?;
        }
        Ok(Self {
            slots,
            head: 0,
            len: 0,
        })
    }

    /// Entries queued.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// True if nothing is queued.
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Slot of the `i`-th oldest entry. `head < cap` and `i <= len <= cap`, so the
    /// sum is below `2 * cap` and one subtraction wraps it (no `%`: a division by a
    /// runtime value brings in a panic path objtool cannot see as noreturn).
    fn index(&self, i: usize) -> usize {
        let cap = self.slots.len();
        let at = self.head + i;
        if at >= cap {
            at - cap
        } else {
            at
        }
    }

    /// Appends `v`; gives it back if the ring is full.
    pub(crate) fn push(&mut self, v: T) -> Result<(), T> {
        if self.len >= self.slots.len() {
            return Err(v);
        }
        let at = self.index(self.len);
        match self.slots.get_mut(at) {
            Some(slot) => {
                *slot = Some(v);
                self.len += 1;
                Ok(())
            }
            None => Err(v),
        }
    }

    /// The `i`-th oldest entry.
    pub(crate) fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        if i >= self.len {
            return None;
        }
        let at = self.index(i);
        self.slots.get_mut(at).and_then(Option::as_mut)
    }

    /// The oldest entry.
    pub(crate) fn front_mut(&mut self) -> Option<&mut T> {
        self.get_mut(0)
    }

    /// Removes the oldest entry.
    pub(crate) fn pop_front(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let at = self.head;
        let v = self.slots.get_mut(at).and_then(Option::take);
        self.head = self.index(1);
        self.len -= 1;
        v
    }
}
