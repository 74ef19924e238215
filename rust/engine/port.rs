// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! What the engine needs of the QP whose stream it runs (RFC 5040 §5: the
//! consumer's work requests and completions): its send and receive queues,
//! completions, state and events. The QP implements it; the engine names no
//! verbs object.

use crate::{
    kapi::qp::QpEvent,
    queue::cq::{WcFlags, WcStatus},
    queue::wr::{RecvWqe, SendWqe},
    resources::mem::Access,
};
use kernel::sync::Arc;

/// Why [`QpPort::sq_take`] did not take the WQE.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Untaken {
    /// The QP left RTS/SQD: the flush completes the WQE.
    Inactive,
    /// The array of WQEs in flight is full: grow it ([`QpPort::sq_grow`]).
    Full,
}

/// The QP side of a connection (`qp::Qp` implements it).
pub(crate) trait QpPort: Send + Sync {
    /// QP number (for log lines).
    fn num(&self) -> u32;
    /// Protection domain number: local and remote STags must belong to it.
    fn pd(&self) -> u32;
    /// Every successful send WQE completes (`IB_SIGNAL_ALL_WR`).
    fn sig_all(&self) -> bool;
    /// A copy of the oldest send WQE not yet handed over (see `Qp::sq_peek`).
    fn sq_peek(&self) -> Option<SendWqe>;
    /// A WQE is posted behind what was handed over (a hint).
    fn sq_posted(&self) -> bool;
    /// TX will look at the SQ: the provider's next posts need no doorbell.
    fn sq_unpark(&self);
    /// The peeked WQE `w` now belongs to the engine: its sequence number
    /// and whether another WQE is posted behind it.
    fn sq_take(&self, w: &SendWqe) -> Result<(u64, bool), Untaken>;
    /// Makes room to take one more WQE after [`Untaken::Full`] (process
    /// context, no lock held: it allocates).
    fn sq_grow(&self) -> kernel::error::Result;
    /// The taken WQE `seq` ended with `status` (a flushed one keeps its own).
    fn sq_finish(&self, seq: u64, status: WcStatus, byte_len: Option<u32>);
    /// While `held`, the taken WQE `seq` does not complete (success or
    /// flush): TCP may still read its zero-copy pages.
    fn sq_hold(&self, seq: u64, held: bool);
    /// The oldest unfinished taken WQE gets `status` (a peer's Terminate).
    fn sq_fail_oldest(&self, status: WcStatus);
    /// Completes finished taken WQEs in SQ order; true if one failed.
    fn sq_reap(&self) -> bool;
    /// The next receive buffer (or a refused user RQE to complete).
    fn rq_take(&self) -> Result<Option<RecvWqe>, (RecvWqe, WcStatus)>;
    /// Completes the receive WQE `wr_id` taken with [`Self::rq_take`].
    fn rq_complete(
        &self,
        wr_id: u64,
        status: WcStatus,
        byte_len: u32,
        flags: WcFlags,
        ex: u64,
        solicited: bool,
    );
    /// The QP goes to ERROR: the engine's WQEs and the posted ones flush.
    /// A QP the consumer moved to RESET (or on to INIT) stays there.
    fn set_error(&self);
    /// The stream closed under the QP (softirq): the peer's FIN, or an
    /// RST or error if `abortive`. The QP goes to ERROR, at once or (a
    /// stream from `modify_qp` closed in order) a little later.
    fn peer_closed(self: Arc<Self>, abortive: bool);
    /// An asynchronous event for the consumer.
    fn event(&self, ev: QpEvent);
    /// May the peer do what needs `need` of the QP's remote rights?
    fn remote_allowed(&self, need: Access, via_iwcm: bool) -> bool;
}
