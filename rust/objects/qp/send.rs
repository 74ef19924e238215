// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The QP's send side: `post_send` for kernel consumers, the engine's view
//! of the SQ (peek, take, finish, reap in SQ order) and send completions.
//! The queue itself is [`SendQueue`](super::sq::SendQueue); the QP's lock
//! protects it.

use super::{sq, sq::Next, Qp, QpEvent, QpState, REAP_BATCH};
use crate::{
    engine::Untaken,
    queue::cq::{Cqe, WcStatus},
    queue::fifo::Fifo,
    queue::wr::{SendOp, SendWqe},
};
use kernel::prelude::*;

impl Qp {
    /// `post_send` of one parsed WQE (any context, never sleeps).
    pub(crate) fn post_send(&self, wqe: SendWqe) -> Result {
        if wqe.inline && wqe.inline_len > self.caps.max_inline {
            return Err(EINVAL);
        }
        if !wqe.inline && u32::from(wqe.num_sge) > self.caps.max_send_sge {
            return Err(EINVAL);
        }
        let (kick, flushed) = {
            let mut inner = self.inner.lock();
            match inner.state {
                _ if Self::sq_active(&inner) => {
                    // User QPs post in their ring, never here (EINVAL).
                    inner.sq.post(wqe)?;
                    let kick = (inner.state != QpState::Sqd)
                        .then(|| inner.conn.clone())
                        .flatten();
                    (kick, None)
                }
                // Kernel consumers drain a dead QP by posting to it; like siw,
                // complete such WQEs at once with a flush status.
                QpState::Error => (None, Some(wqe)),
                _ => return Err(EINVAL),
            }
        };
        if let Some(c) = kick {
            c.kick();
        }
        if let Some(w) = flushed {
            self.sq_flush_one(w.wr_id, w.op);
        }
        Ok(())
    }

    /// A copy of the oldest WQE not yet handed to the engine (user QPs: read
    /// from the ring and validated; an empty user SQ is marked idle so the
    /// provider rings the doorbell for its next post).
    ///
    /// A user SQE the kernel refuses is completed with its error status and
    /// the QP goes to ERROR (posted WQEs flushed, `IB_EVENT_QP_FATAL`); the
    /// call then returns `None` and [`Self::state`] is `Error`: the engine
    /// closes the connection and flushes what it owns (`Conn::flush`).
    pub(crate) fn sq_peek(&self) -> Option<SendWqe> {
        let bad = {
            let mut inner = self.inner.lock();
            if !Self::sq_active(&inner) {
                return None;
            }
            match inner.sq.next(true) {
                Next::Wqe(w) => return Some(w),
                Next::Empty => return None,
                Next::Bad(b) => {
                    inner.sq.drop_next();
                    inner.state = QpState::Error;
                    b
                }
            }
        };
        self.push_send_cqe(bad.wr_id, SendOp::Send, bad.status, 0);
        self.flush_posted();
        self.ib.event(QpEvent::Fatal);
        None
    }

    /// A WQE is posted that [`Self::sq_peek`] would return (a hint for
    /// batching transmissions; the provider may post at any time).
    pub(crate) fn sq_posted(&self) -> bool {
        self.inner.lock().sq.posted()
    }

    /// The SQ's indices and in-flight count, for the operator's view.
    pub(crate) fn sq_snapshot(&self) -> sq::SqSnapshot {
        self.inner.lock().sq.snapshot()
    }

    /// TX is scheduled and will look at the SQ: the provider's next posts
    /// need no doorbell.
    pub(crate) fn sq_unpark(&self) {
        self.inner.lock().sq.unpark();
    }

    /// The WQE [`Self::sq_peek`] returned (`w`) now belongs to the engine:
    /// returns its sequence number and whether another WQE is posted behind
    /// it (the hint of [`Self::sq_posted`], from the same lock hold).
    /// [`Untaken::Inactive`] if the QP left RTS/SQD meanwhile (the flush
    /// completes it), [`Untaken::Full`] if the array of WQEs in flight must
    /// grow first ([`Self::sq_grow`]).
    pub(crate) fn sq_take(&self, w: &SendWqe) -> Result<(u64, bool), Untaken> {
        let mut inner = self.inner.lock();
        if !Self::sq_active(&inner) {
            return Err(Untaken::Inactive);
        }
        let seq = inner.sq.take(w).ok_or(Untaken::Full)?;
        Ok((seq, inner.sq.posted()))
    }

    /// Grows the array of WQEs in flight if it is full (process context:
    /// allocates outside the QP's lock); `ENOMEM` if that fails, `ENOSPC`
    /// if it has a slot per SQ slot already (then no WQE is left to take:
    /// never retried).
    pub(crate) fn sq_grow(&self) -> Result {
        let wanted = self.inner.lock().sq.taken_wanted();
        let Some(size) = wanted.map_err(|()| ENOSPC)? else {
            return Ok(());
        };
        let bigger = Fifo::new(size)?;
        // Another grower may have come first: the smaller array is dropped.
        let left = self.inner.lock().sq.grow_taken(bigger);
        drop(left);
        Ok(())
    }

    /// Records the end of the taken WQE `seq` (a flushed one keeps its
    /// status); [`Self::sq_reap`] completes it in SQ order.
    pub(crate) fn sq_finish(&self, seq: u64, status: WcStatus, byte_len: Option<u32>) {
        self.inner.lock().sq.finish(seq, status, byte_len);
    }

    /// While `held`, taken WQE `seq` does not complete, whatever its status
    /// (zero-copy pages TCP may still read).
    pub(crate) fn sq_hold(&self, seq: u64, held: bool) {
        let flush = {
            let mut inner = self.inner.lock();
            inner.sq.hold(seq, held);
            !held && inner.state == QpState::Error && !inner.sq.any_held()
        };
        if flush {
            // The last hold of a QP in ERROR is gone: the taken WQEs complete,
            // then the posted ones `enter_error` left (in SQ order).
            self.sq_reap();
            self.flush_posted();
        }
    }

    /// The oldest unfinished taken WQE gets `status` (a peer's Terminate).
    pub(crate) fn sq_fail_oldest(&self, status: WcStatus) {
        self.inner.lock().sq.fail_oldest(status);
    }

    /// Completes the finished WQEs at the head of the taken ones, in SQ
    /// order: frees their slots and queues a CQE for each that was signaled
    /// or failed. Returns true if one of them failed (not a flush). Never
    /// called with an engine lock held (completion handlers run from here).
    pub(crate) fn sq_reap(&self) -> bool {
        let mut failed = false;
        let mut first = true;
        loop {
            // Up to REAP_BATCH at a time: one lock hold for a burst of
            // completions (a response burst finishes many).
            let mut done: [Option<sq::Taken>; REAP_BATCH] = [None; REAP_BATCH];
            let mut n = 0;
            {
                let mut inner = self.inner.lock();
                if first && inner.sq.reaping {
                    // The active reaper rechecks the queue before it stops.
                    return false;
                }
                first = false;
                inner.sq.reaping = true;
                while n < REAP_BATCH {
                    let Some(e) = inner.sq.pop_done() else { break };
                    if let Some(d) = done.get_mut(n) {
                        *d = Some(e);
                    }
                    n += 1;
                }
                if n == 0 {
                    inner.sq.reaping = false;
                    return failed;
                }
            }
            for e in done.iter().flatten() {
                let status = e.status().unwrap_or(WcStatus::WrFlushErr);
                failed |= status != WcStatus::Success && status != WcStatus::WrFlushErr;
                if e.signaled() || self.sig_all || status != WcStatus::Success {
                    self.push_send_cqe(e.wr_id, e.op, status, e.byte_len);
                }
            }
        }
    }

    fn push_send_cqe(&self, wr_id: u64, op: SendOp, status: WcStatus, byte_len: u32) {
        let cqe = Cqe {
            wr_id,
            opcode: op.wc_opcode(),
            status,
            byte_len,
            qp_num: self.num(),
            qp: Some(self.ib),
            ..Cqe::default()
        };
        if self.scq.push(cqe).is_err() {
            // A lost completion breaks the consumer's accounting: the QP
            // cannot continue (as the verbs specify for CQ overflow).
            self.ib.event(QpEvent::Fatal);
        }
    }

    pub(super) fn sq_flush_one(&self, wr_id: u64, op: SendOp) {
        self.push_send_cqe(wr_id, op, WcStatus::WrFlushErr, 0);
    }
}
