// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! What the engine needs of the QP whose stream it runs (RFC 5040 §5: the
//! consumer's work requests and completions): its send and receive queues,
//! completions, state and events. The QP implements it; the engine names no
//! verbs object.

use crate::{
    cq::{WcFlags, WcStatus},
    ffi::qp::QpEvent,
    mem::Access,
    wr::{RecvWqe, SendWqe, SqDone},
};

/// The QP side of a connection (`qp::Qp` implements it).
pub(crate) trait QpPort: Send + Sync {
    /// QP number (for log lines).
    fn num(&self) -> u32;
    /// Protection domain number: local and remote STags must belong to it.
    fn pd(&self) -> u32;
    /// Every successful send WQE completes (`IB_SIGNAL_ALL_WR`).
    fn sig_all(&self) -> bool;
    /// Send queue size: the most WQEs the engine can hold at once.
    fn max_send_wr(&self) -> u32;
    /// A copy of the oldest send WQE not yet handed over (see `Qp::sq_peek`).
    fn sq_peek(&self) -> Option<SendWqe>;
    /// A WQE is posted behind what was handed over (a hint).
    fn sq_posted(&self) -> bool;
    /// TX will look at the SQ: the provider's next posts need no doorbell.
    fn sq_unpark(&self);
    /// The peeked WQE now belongs to the engine; returns [`Self::sq_posted`].
    fn sq_advance(&self) -> bool;
    /// WQEs the engine owned are done, oldest first.
    fn sq_complete(&self, done: &[SqDone]);
    /// The next receive buffer (or a refused user RQE to complete).
    fn rq_take(&self) -> Result<Option<RecvWqe>, (RecvWqe, WcStatus)>;
    /// Completes a receive WQE taken with [`Self::rq_take`].
    fn rq_complete(
        &self,
        wqe: &RecvWqe,
        status: WcStatus,
        byte_len: u32,
        flags: WcFlags,
        ex: u64,
        solicited: bool,
    );
    /// The QP goes to ERROR: the engine's WQEs and the posted ones flush.
    fn set_error(&self);
    /// An asynchronous event for the consumer.
    fn event(&self, ev: QpEvent);
    /// Runs a local WQE (REG_MR, LOCAL_INV, BIND_MW) in SQ order.
    fn exec_local(&self, wqe: &SendWqe) -> WcStatus;
    /// May the peer do what needs `need` of the QP's remote rights?
    fn remote_allowed(&self, need: Access, via_iwcm: bool) -> bool;
}
