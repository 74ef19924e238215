// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! A QP's send queue, with one owner: the WQEs the consumer posted (in a
//! [`Fifo`] for kernel consumers, in the ring mapped to the provider for
//! users) and those the engine took and that have not completed yet, which
//! complete strictly in SQ order (the verbs' ordering of completions; RFC
//! 5040 §5.5 orders the messages). Taking a WQE is one call ([`take`]);
//! the QP's lock protects all of it.
//!
//! [`take`]: SendQueue::take

use crate::{
    queue::cq::WcStatus,
    queue::fifo::{Backend, Fifo},
    queue::uqueue::{BadWqe, UserSq},
    queue::wr::{SendOp, SendWqe},
};
use kernel::prelude::*;

/// A WQE the engine took: what its completion needs, in 16 octets. A QP
/// keeps one per WQE in flight, in an array that starts at `TAKEN_START`
/// entries and doubles up to one per SQ slot when the engine finds it full
/// ([`SendQueue::taken_wanted`]): Sends and Writes complete once they are in
/// the socket, so a bulk stream keeps a few in flight; Reads and Atomics
/// wait for their responses, up to ORD of them and the WQEs behind.
#[derive(Clone, Copy)]
pub(super) struct Taken {
    pub(super) wr_id: u64,
    pub(super) byte_len: u32,
    /// A user SQE's slot: the low 16 bits of its free-running index, exact
    /// because the oldest taken slot is at most a ring (`MAX_RING_ENTRIES`)
    /// behind the next to fetch; 0 for kernel WQEs.
    slot: u16,
    pub(super) op: SendOp,
    /// [`SIGNALED`], [`HELD`] while TCP may still read its pages, and once
    /// the operation ended [`DONE`] with the status (its `IB_WC_*` value,
    /// below 32) in the [`CODE`] bits.
    state: u8,
}

/// Entries of a new QP's taken-WQE array (256 octets).
const TAKEN_START: usize = 16;

const SIGNALED: u8 = 0x80;
const DONE: u8 = 0x40;
/// Zero-copy: its pages may still be read by TCP; it completes, success or
/// flush, only once they are released (`engine::tx::zc`).
const HELD: u8 = 0x20;
const CODE: u8 = 0x1f;
const _: () = assert!(core::mem::size_of::<Option<Taken>>() == 16);
const _: () = assert!(crate::abi::ring::MAX_RING_ENTRIES < 1 << 16);
const _: () = assert!((WcStatus::GeneralErr as u32) <= CODE as u32);

impl Taken {
    /// The WQE asked for a completion.
    pub(super) fn signaled(&self) -> bool {
        self.state & SIGNALED != 0
    }

    /// `None` while the operation runs.
    pub(super) fn status(&self) -> Option<WcStatus> {
        (self.state & DONE != 0).then(|| WcStatus::from_code(self.state & CODE))
    }

    /// The operation ended with `status`, unless it already had.
    fn end(&mut self, status: WcStatus) {
        if self.state & DONE == 0 {
            // Every status value is below 32 (asserted above).
            self.state |= DONE | (status as u32 as u8 & CODE);
        }
    }
}

/// [`SendQueue::snapshot`].
#[derive(Clone, Copy, Default)]
pub(crate) struct SqSnapshot {
    /// WQEs the engine took that have not completed.
    pub(crate) taken: u32,
    /// A user ring's indices.
    pub(crate) user: Option<UserSqSnapshot>,
}

/// A user SQ's indices (free-running) and idle mark.
#[derive(Clone, Copy, Default)]
pub(crate) struct UserSqSnapshot {
    pub(crate) produced: u32,
    pub(crate) fetched: u32,
    pub(crate) released: u32,
    pub(crate) idle: bool,
}

/// The provider's ring and the indices the kernel owns: `head` is the oldest
/// slot still in use (its WQE taken, not completed), `next` the next SQE to
/// fetch; the provider's producer index says what is posted.
struct UserPosted {
    ring: UserSq,
    head: u32,
    next: u32,
}

/// Where posted WQEs wait.
type Posted = Backend<Fifo<SendWqe>, UserPosted>;

/// What a look at the posted WQEs found.
// Returned once per WQE hand-over; boxing the WQE would allocate per post.
#[allow(clippy::large_enum_variant)]
pub(super) enum Next {
    /// A WQE to hand over (or to flush).
    Wqe(SendWqe),
    /// A user SQE the kernel refused: complete it with the error, then ERROR.
    Bad(BadWqe),
    /// Nothing posted.
    Empty,
}

/// A send queue.
pub(super) struct SendQueue {
    posted: Posted,
    /// WQEs the engine took, oldest first.
    taken: Fifo<Taken>,
    /// The size `taken` grows to: one entry per SQ slot.
    taken_max: usize,
    /// Sequence number of `taken`'s oldest entry.
    base_seq: u64,
    /// Someone is completing taken WQEs (keeps the completions in order).
    pub(super) reaping: bool,
}

impl SendQueue {
    /// A kernel consumer's queue of `size` WQEs (process context).
    pub(super) fn kernel(size: usize) -> Result<Self> {
        Ok(Self {
            posted: Posted::Kernel(Fifo::new(size)?),
            taken: Fifo::new(size.min(TAKEN_START))?,
            taken_max: size,
            base_seq: 0,
            reaping: false,
        })
    }

    /// The provider's ring `ring` (process context).
    pub(super) fn user(ring: UserSq) -> Result<Self> {
        let size = ring.entries() as usize;
        Ok(Self {
            posted: Posted::User(UserPosted {
                ring,
                head: 0,
                next: 0,
            }),
            taken: Fifo::new(size.min(TAKEN_START))?,
            taken_max: size,
            base_seq: 0,
            reaping: false,
        })
    }

    /// The provider's ring, if this is a user queue.
    pub(super) fn user_ring(&self) -> Option<&UserSq> {
        match &self.posted {
            Posted::User(u) => Some(&u.ring),
            Posted::Kernel(_) => None,
        }
    }

    /// Posts a kernel consumer's WQE; `ENOMEM` when the queue is full
    /// (posted and taken WQEs together), `EINVAL` on a user queue.
    pub(super) fn post(&mut self, wqe: SendWqe) -> Result {
        let Posted::Kernel(k) = &mut self.posted else {
            return Err(EINVAL);
        };
        if k.len() + self.taken.len() >= k.capacity() {
            return Err(ENOMEM);
        }
        k.push(wqe).map_err(|_| ENOMEM)
    }

    /// The oldest posted WQE not yet taken; with `park`, an empty user SQ is
    /// marked idle so the provider rings the doorbell again.
    pub(super) fn next(&mut self, park: bool) -> Next {
        match &mut self.posted {
            Posted::Kernel(k) => k.front().map_or(Next::Empty, |w| Next::Wqe(w.clone())),
            Posted::User(u) => {
                let Ok(mut produced) = u.ring.produced(u.head) else {
                    return Next::Bad(BadWqe {
                        wr_id: 0,
                        status: WcStatus::GeneralErr,
                    });
                };
                if produced == u.next {
                    if !park || u.ring.park(u.next) {
                        return Next::Empty;
                    }
                    produced = u.ring.produced(u.head).unwrap_or(u.next);
                    if produced == u.next {
                        return Next::Empty;
                    }
                }
                u.ring.unpark();
                match u.ring.fetch(u.next) {
                    Ok(w) => Next::Wqe(w),
                    Err(bad) => Next::Bad(bad),
                }
            }
        }
    }

    /// A WQE is posted and not taken (a hint: the provider may post at any
    /// time).
    pub(super) fn posted(&self) -> bool {
        match &self.posted {
            Posted::Kernel(k) => !k.is_empty(),
            Posted::User(u) => u.ring.produced(u.head).is_ok_and(|p| p != u.next),
        }
    }

    /// The size the taken-WQE array must grow to before the next
    /// [`Self::take`] if it is full (doubled, at most one entry per SQ
    /// slot); `Err` if it is full at one entry per SQ slot, which no posted
    /// WQE can meet (every SQ slot is taken).
    pub(super) fn taken_wanted(&self) -> Result<Option<usize>, ()> {
        let cap = self.taken.capacity();
        if self.taken.len() < cap {
            Ok(None)
        } else if cap < self.taken_max {
            Ok(Some(cap.saturating_mul(2).min(self.taken_max)))
        } else {
            Err(())
        }
    }

    /// Replaces the taken-WQE array by the larger, empty `bigger`, keeping
    /// its entries; returns the array left over, to be freed by the caller
    /// outside its lock.
    pub(super) fn grow_taken(&mut self, bigger: Fifo<Taken>) -> Fifo<Taken> {
        self.taken.grow_into(bigger)
    }

    /// The WQE [`Self::next`] returned (`w`) now belongs to the engine;
    /// returns its sequence number. `None` if the taken-WQE array is full
    /// ([`Self::taken_wanted`] says how to grow it).
    pub(super) fn take(&mut self, w: &SendWqe) -> Option<u64> {
        let slot = match &self.posted {
            // The low 16 bits (`Taken::slot`).
            Posted::User(u) => u.next as u16,
            Posted::Kernel(_) => 0,
        };
        let e = Taken {
            wr_id: w.wr_id,
            op: w.op,
            state: if w.signaled { SIGNALED } else { 0 },
            byte_len: u32::try_from(w.len()).unwrap_or(u32::MAX),
            slot,
        };
        self.taken.push(e).ok()?;
        let seq = self
            .base_seq
            .wrapping_add(self.taken.len() as u64)
            .wrapping_sub(1);
        match &mut self.posted {
            // The queue's copy (and its reference to a registered region)
            // goes now; the engine has its own.
            Posted::Kernel(k) => drop(k.pop_front()),
            Posted::User(u) => u.next = u.next.wrapping_add(1),
        }
        Some(seq)
    }

    /// Drops the oldest posted WQE without taking it (a refused user SQE, or
    /// one flushed): its slot is free at once.
    pub(super) fn drop_next(&mut self) {
        match &mut self.posted {
            Posted::Kernel(k) => drop(k.pop_front()),
            Posted::User(u) => {
                u.next = u.next.wrapping_add(1);
                // With taken WQEs before it, the slot is freed with them
                // (slots are handed back in ring order).
                if self.taken.is_empty() {
                    u.head = u.next;
                    u.ring.release(u.head);
                }
            }
        }
    }

    fn taken_mut(&mut self, seq: u64) -> Option<&mut Taken> {
        let i = seq.checked_sub(self.base_seq)?;
        self.taken.get_mut(usize::try_from(i).ok()?)
    }

    /// Records the end of taken WQE `seq` (a flushed one keeps its status).
    pub(super) fn finish(&mut self, seq: u64, status: WcStatus, byte_len: Option<u32>) {
        if let Some(e) = self.taken_mut(seq) {
            if e.status().is_none() {
                e.end(status);
                if let Some(n) = byte_len {
                    e.byte_len = n;
                }
            }
        }
    }

    /// Taken WQE `seq` completes only after `hold(seq, false)`.
    pub(super) fn hold(&mut self, seq: u64, held: bool) {
        if let Some(e) = self.taken_mut(seq) {
            if held {
                e.state |= HELD;
            } else {
                e.state &= !HELD;
            }
        }
    }

    /// A taken WQE is held (`hold`): the WQEs behind it complete after it.
    pub(super) fn any_held(&self) -> bool {
        (0..self.taken.len()).any(|i| self.taken.get(i).is_some_and(|t| t.state & HELD != 0))
    }

    /// The oldest unfinished taken WQE gets `status` (a Terminate names it).
    pub(super) fn fail_oldest(&mut self, status: WcStatus) {
        for i in 0..self.taken.len() {
            if let Some(e) = self.taken.get_mut(i) {
                if e.status().is_none() {
                    e.end(status);
                    return;
                }
            }
        }
    }

    /// Every unfinished taken WQE is flushed.
    pub(super) fn flush_taken(&mut self) {
        for i in 0..self.taken.len() {
            if let Some(e) = self.taken.get_mut(i) {
                e.end(WcStatus::WrFlushErr);
            }
        }
    }

    /// The oldest taken WQE if it has finished; its slot is freed.
    pub(super) fn pop_done(&mut self) -> Option<Taken> {
        if !self
            .taken
            .front()
            .is_some_and(|t| t.status().is_some() && t.state & HELD == 0)
        {
            return None;
        }
        let e = self.taken.pop_front()?;
        self.base_seq = self.base_seq.wrapping_add(1);
        if let Posted::User(u) = &mut self.posted {
            // Slots before the oldest WQE still taken (or, with none, before
            // the next to fetch) are free again.
            u.head = self.taken.front().map_or(u.next, |t| {
                u.next
                    .wrapping_sub(u32::from((u.next as u16).wrapping_sub(t.slot)))
            });
            u.ring.release(u.head);
        }
        Some(e)
    }

    /// How many posted WQEs a flush takes: what is posted now, at most a
    /// ring's worth (a corrupt index counts as none). A user SQ is marked
    /// idle first: whatever the provider posts from now on rings the
    /// doorbell, which flushes it in turn (`Qp::doorbell`).
    pub(super) fn flush_snapshot(&self) -> usize {
        match &self.posted {
            Posted::Kernel(k) => k.len(),
            Posted::User(u) => {
                u.ring.idle_for_flush();
                u.ring
                    .produced(u.head)
                    .map_or(0, |p| p.wrapping_sub(u.next).min(u.ring.entries()) as usize)
            }
        }
    }

    /// The queue's state for the operator's view (`rdma resource show qp
    /// -dd`): WQEs taken and not completed, and for a user ring the
    /// provider's producer index, the next index TX fetches, the consumer
    /// index published to the provider and the idle mark.
    pub(super) fn snapshot(&self) -> SqSnapshot {
        let mut s = SqSnapshot {
            taken: self.taken.len() as u32,
            ..SqSnapshot::default()
        };
        if let Posted::User(u) = &self.posted {
            let (produced, released, idle) = u.ring.header();
            s.user = Some(UserSqSnapshot {
                produced,
                fetched: u.next,
                released,
                idle,
            });
        }
        s
    }

    /// TX is scheduled and will look at the SQ: the provider's next posts
    /// need no doorbell.
    pub(super) fn unpark(&self) {
        if let Posted::User(u) = &self.posted {
            u.ring.unpark();
        }
    }

    /// Forgets posted and taken WQEs (RESET, destroy). A user ring keeps its
    /// contents: the provider owns it.
    pub(super) fn clear(&mut self) {
        self.taken.clear();
        match &mut self.posted {
            Posted::Kernel(k) => k.clear(),
            Posted::User(u) => u.head = u.next,
        }
    }
}
