// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The receive side's deferred actions: what placing an FPDU causes that must
//! wait until the RX lock is released (completions, TX kicks), queued on the
//! stack of `Engine::rx` with room checked before a receive WQE is taken, and
//! run in order.

use super::{Engine, Sink};
use crate::{
    proto::terminate::TermCause,
    queue::cq::{WcFlags, WcStatus},
};
use kernel::sync::Arc;

/// Deferred actions queued per RX lock hold, at most. One FPDU adds at most
/// one Recv or PeerTerminate plus one each of Reap, Kick and Resume (queued
/// once per batch, see `Sink::defer`): the parser is stopped at every FPDU
/// boundary, the first of each piece of a socket buffer included, while
/// fewer than `PER_FPDU` slots are free (`Sink::saturated`), so an FPDU it
/// begins always finds room for what it causes; a receive WQE is taken only
/// with a slot free for its completion (`Sink::untagged`).
/// The queue lives on the stack of `Engine::rx` (it is empty between two
/// calls, which the socket lock serializes): `DEFER_BYTES` octets there
/// instead of an allocation per connection.
pub(super) const DEFER: usize = DEFER_BYTES / core::mem::size_of::<Option<Action>>();
/// The size of the queue of deferred actions, on the stack of `Engine::rx`.
const DEFER_BYTES: usize = 512;
/// Deferred actions one FPDU can add at most.
pub(super) const PER_FPDU: usize = 4;
// The queue takes several FPDUs' actions before the parser stops for it.
const _: () = assert!(DEFER >= 4 * PER_FPDU);

/// Work the sink defers until the RX lock is released.
pub(super) enum Action {
    /// A receive WQE is complete.
    Recv {
        wr_id: u64,
        status: WcStatus,
        len: u32,
        flags: WcFlags,
        ex: u64,
        solicited: bool,
    },
    /// In-flight send WQEs may be complete.
    Reap,
    /// TX has something to do.
    Kick,
    /// An ORD slot is free and fences may be satisfied: TX goes on if it
    /// stopped for them (most of the time it did not, and no work is queued).
    Resume,
    /// The peer sent a Terminate.
    PeerTerminate(TermCause),
}

/// Work the sink defers until the RX lock is released: `DEFER` slots on
/// the stack of `Engine::rx`, filled in order.
pub(super) struct Deferred {
    slots: [Option<Action>; DEFER],
    pub(super) n: usize,
}

impl Deferred {
    pub(super) fn new() -> Self {
        Self {
            slots: [const { None }; DEFER],
            n: 0,
        }
    }

    /// The queued actions, taken out in order; the queue is empty after.
    pub(super) fn take(&mut self) -> impl Iterator<Item = Action> + '_ {
        let n = core::mem::take(&mut self.n);
        self.slots.iter_mut().take(n).filter_map(Option::take)
    }
}

impl Sink<'_> {
    pub(super) fn defer(&mut self, a: Action) -> Result<(), TermCause> {
        // Reap and Kick look at the state when they run (after the batch),
        // so one of each per batch does it all; queuing one per FPDU would
        // overflow `DEFER` on a burst of small responses (17 Atomic
        // Responses of 36 octets fit in one chunk).
        let q = &mut *self.deferred;
        if matches!(a, Action::Reap | Action::Kick | Action::Resume) {
            let queued = q.slots.get(..q.n).unwrap_or(&[]);
            let kind = core::mem::discriminant(&a);
            if queued
                .iter()
                .flatten()
                .any(|d| core::mem::discriminant(d) == kind)
            {
                return Ok(());
            }
        }
        let slot = q
            .slots
            .get_mut(q.n)
            .ok_or(TermCause::RDMAP_LOCAL_CATASTROPHIC)?;
        *slot = Some(a);
        q.n += 1;
        Ok(())
    }

    /// Whether the deferred queue has a slot free.
    pub(super) fn room(&self) -> bool {
        self.deferred.n < DEFER
    }

    /// Queues the completion of receive WQE `wr_id`, taken from the RQ or
    /// SRQ. A full queue (which the room checks before the take rule out)
    /// parks it in `RxCtx::parked` and fails the stream: the WQE still
    /// completes once the RX lock is released.
    pub(super) fn complete_recv(
        &mut self,
        wr_id: u64,
        status: WcStatus,
        len: u32,
        flags: WcFlags,
        ex: u64,
        solicited: bool,
    ) -> Result<(), TermCause> {
        let a = Action::Recv {
            wr_id,
            status,
            len,
            flags,
            ex,
            solicited,
        };
        if self.room() {
            return self.defer(a);
        }
        if self.ctx.parked.is_some() {
            // Unreachable: a parked completion fails its stream, and a
            // dead stream takes no further WQE.
            return Err(TermCause::RDMAP_LOCAL_CATASTROPHIC);
        }
        self.ctx.parked = Some(a);
        Err(TermCause::RDMAP_LOCAL_CATASTROPHIC)
    }
}

impl Engine {
    /// Runs deferred actions, in order.
    pub(super) fn run_actions(self: &Arc<Self>, batch: impl Iterator<Item = Action>) {
        for a in batch {
            match a {
                Action::Recv {
                    wr_id,
                    status,
                    len,
                    flags,
                    ex,
                    solicited,
                } => self
                    .qp
                    .rq_complete(wr_id, status, len, flags, ex, solicited),
                Action::Reap => {
                    if self.reap() {
                        self.fail(None);
                    }
                }
                Action::Kick => self.kick(),
                Action::Resume => {
                    if core::mem::take(&mut self.shared.lock().tx_stalled) {
                        self.kick();
                    }
                }
                Action::PeerTerminate(cause) => self.peer_terminate(cause),
            }
        }
    }
}
