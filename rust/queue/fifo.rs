// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The one queue type of the module: a fixed-capacity FIFO in kernel memory,
//! allocated once, filled and emptied from any context. The send, receive
//! and completion queues of kernel consumers keep their entries in one; a
//! user queue keeps them in the ring mapped to the provider (`uqueue`) and
//! the QP tracks what the engine took from it in one (`qp::sq`); the engine's
//! request queues (outbound bounded by ORD, inbound by IRD: RFC 5040 §6.5,
//! RFC 7306 §5.2) are ones too.

use kernel::{alloc::KVVec, prelude::*};

/// A FIFO of at most `capacity` entries; never allocates after [`Fifo::new`],
/// so it can be filled from softirq.
pub(crate) struct Fifo<T> {
    slots: KVVec<Option<T>>,
    head: usize,
    len: usize,
}

impl<T> Fifo<T> {
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

    /// Entries it holds at most.
    pub(crate) fn capacity(&self) -> usize {
        self.slots.len()
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

    /// The `i`-th oldest entry.
    pub(crate) fn get(&self, i: usize) -> Option<&T> {
        if i >= self.len {
            return None;
        }
        self.slots.get(self.index(i)).and_then(Option::as_ref)
    }

    /// The oldest entry.
    pub(crate) fn front(&self) -> Option<&T> {
        self.get(0)
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

    /// Drops every entry.
    pub(crate) fn clear(&mut self) {
        while self.pop_front().is_some() {}
    }

    /// Moves the entries, oldest first, into the empty ring `into` if it is
    /// larger, which then replaces this one; returns the ring that is left
    /// over (empty), so that its memory is freed outside the caller's lock.
    pub(crate) fn grow_into(&mut self, mut into: Fifo<T>) -> Fifo<T> {
        if !into.is_empty() || into.capacity() <= self.capacity() {
            return into;
        }
        while let Some(v) = self.pop_front() {
            // `into` has more slots than this ring has entries.
            if into.push(v).is_err() {
                break;
            }
        }
        core::mem::replace(self, into)
    }
}

/// Where a queue's entries live: in kernel memory (a kernel consumer's queue),
/// or in a ring mapped to the provider (a user queue: `uqueue`), which the
/// kernel reads once per element and validates. Send, receive and completion
/// queues are each one of these.
pub(crate) enum Backend<K, U> {
    /// A kernel consumer's queue.
    Kernel(K),
    /// The provider's ring.
    User(U),
}
