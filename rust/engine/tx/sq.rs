// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! TX's side of the send queue: taking the next WQE when its ordering rules
//! allow (fence, ORD: RFC 5040 §6.5, RFC 7306 §5.2), entering Reads and
//! Atomics in the ORQ, and setting up each operation's message (RFC 5040
//! §4, RFC 7306 §5-§6); local operations run at once.

use super::{Done, Msg, Src, TxState};
use crate::{
    engine::{local, AtomicSink, Engine, Local, Outbound, Untaken},
    proto::{
        atomic::{AOpCode, AtomicFields},
        rdmap::{AtomicRequest, Header, Opcode, ReadRequest},
        tx::TxMessage,
    },
    queue::cq::WcStatus,
    queue::wr::{SendOp, SendWqe},
    resources::counters::Counter,
    resources::mem::Access,
};
use core::sync::atomic::Ordering;
use kernel::{prelude::*, sync::Arc};

/// The ORQ entry an SQ WQE needs, prepared before the `shared` lock hold
/// that hands the WQE over.
enum OrqEntry {
    No,
    /// A Read whose sink buffer was checked (or the error it gets).
    Read(Result<(), WcStatus>),
    /// An Atomic and its result buffer (or the error it gets).
    Atomic(Result<AtomicSink, WcStatus>),
}

/// The operation's opcode on the wire for a Send variant.
fn send_opcode(w: &SendWqe) -> Opcode {
    match (w.op == SendOp::SendInv, w.solicited) {
        (false, false) => Opcode::Send,
        (false, true) => Opcode::SendSe,
        (true, false) => Opcode::SendInvalidate,
        (true, true) => Opcode::SendSeInvalidate,
    }
}

/// The RFC 7306 §5.2.1 request fields of an atomic WQE; `atomic` is
/// `[swap or add, compare, swap mask, compare or add mask]`.
fn atomic_fields(w: &SendWqe) -> (AOpCode, AtomicFields) {
    let [a0, a1, a2, a3] = w.atomic;
    match w.op {
        SendOp::FetchAdd => (AOpCode::FetchAdd, AtomicFields::fetch_add(a0)),
        SendOp::MaskedFetchAdd => (
            AOpCode::FetchAdd,
            AtomicFields {
                add_swap_data: a0,
                add_swap_mask: a3,
                compare_data: 0,
                compare_mask: !0,
            },
        ),
        SendOp::MaskedCmpSwap => (
            AOpCode::CmpSwap,
            AtomicFields {
                add_swap_data: a0,
                add_swap_mask: a2,
                compare_data: a1,
                compare_mask: a3,
            },
        ),
        _ => (AOpCode::CmpSwap, AtomicFields::cmp_swap(a1, a0)),
    }
}

impl Engine {
    /// Takes the next SQ WQE if its ordering rules allow; local operations
    /// run at once. Returns `None` if no message was set up, otherwise
    /// whether another message is ready behind it.
    ///
    /// A Read or Atomic is handed over and entered in the ORQ in one
    /// `shared` lock hold; its local buffer is resolved before.
    pub(super) fn pick_sq(self: &Arc<Self>, tx: &mut TxState) -> Option<bool> {
        loop {
            if !tx.take_budget() {
                return None;
            }
            let w = self.qp.sq_peek()?;
            let mut orq = match w.op {
                SendOp::Read | SendOp::ReadInv => OrqEntry::Read(self.read_sink(&w)),
                SendOp::CmpSwap
                | SendOp::FetchAdd
                | SendOp::MaskedCmpSwap
                | SendOp::MaskedFetchAdd => {
                    OrqEntry::Atomic(AtomicSink::resolve(&self.mems, self.qp.pd(), w.sges()))
                }
                _ => OrqEntry::No,
            };
            let needs_orq = !matches!(orq, OrqEntry::No);
            let mut refused = None;
            // An entry the ORQ did not take: dropped (with its region
            // references) outside the lock.
            let mut unqueued = None;
            let (seq, more, request_id) = {
                let mut s = self.shared.lock();
                // Fence: wait for outstanding Reads and Atomics. ORD bounds
                // the requests in flight (RFC 5040 §6.5, RFC 7306 §5.2).
                if (w.fence && !s.orq.is_empty())
                    || (needs_orq && s.orq.len() >= self.params.ord as usize)
                {
                    // RX pops the ORQ under this lock, then sees the flag.
                    s.tx_stalled = true;
                    drop(s);
                    self.ctr.inc(Counter::OrdStalls);
                    // Region references go outside the lock.
                    drop(orq);
                    return None;
                }
                let byte_len = u32::try_from(w.len()).unwrap_or(u32::MAX);
                // One call hands the peeked WQE over (TX is the SQ's only
                // consumer, so it is still the oldest posted).
                let (seq, posted) = match self.qp.sq_take(&w) {
                    Ok(t) => t,
                    // The QP left RTS meanwhile: its flush completes the WQE.
                    Err(Untaken::Inactive) => {
                        drop(s);
                        drop(orq);
                        return None;
                    }
                    // The array of WQEs in flight is full: grown below,
                    // without the locks, then the WQE is looked at again.
                    Err(Untaken::Full) => {
                        drop(s);
                        drop(orq);
                        // Each growth doubles the array, up to a slot per
                        // SQ slot: this retries a bounded number of times.
                        if let Err(e) = self.qp.sq_grow() {
                            pr_warn!(
                                "QP {}: cannot track more WQEs in flight ({:?}), QP to ERROR\n",
                                self.qp.num(),
                                e
                            );
                            self.fail(None);
                            return None;
                        }
                        continue;
                    }
                };
                let mut request_id = 0;
                match core::mem::replace(&mut orq, OrqEntry::No) {
                    OrqEntry::No => {}
                    OrqEntry::Read(Err(st)) | OrqEntry::Atomic(Err(st)) => refused = Some(st),
                    OrqEntry::Read(Ok(())) => {
                        let (stag, to) = w.sges().first().map_or((0, 0), |g| (g.lkey, g.addr));
                        let pushed = s.orq.push(Outbound::Read {
                            seq: Some(seq),
                            sink_stag: stag,
                            sink_to: to,
                            size: byte_len,
                            placed: 0,
                            // READ_WITH_INV invalidates the data sink's
                            // STag (the RDMAC verbs' "RDMA Read with Local
                            // Invalidate"; siw and cxgb4 do the same), not
                            // `inv_rkey`: rdma_rw names the sink MR there
                            // with the key it had before its REG_MR bumped
                            // the key byte (core/rw.c).
                            inv: (w.op == SendOp::ReadInv).then_some(stag),
                        });
                        if pushed.is_err() {
                            refused = Some(WcStatus::LocQpOpErr);
                        }
                    }
                    OrqEntry::Atomic(Ok(result)) => {
                        request_id = s.next_request_id;
                        s.next_request_id = request_id.wrapping_add(1);
                        let pushed = s.orq.push(Outbound::Atomic {
                            seq,
                            request_id,
                            result,
                        });
                        if let Err(back) = pushed {
                            unqueued = Some(back);
                            refused = Some(WcStatus::LocQpOpErr);
                        }
                    }
                }
                self.waited
                    .store(w.signaled || self.qp.sig_all(), Ordering::Relaxed);
                let more = posted || !s.irq.is_empty();
                (seq, more, request_id)
            };
            drop(unqueued);
            let started = match refused {
                Some(st) => Err(st),
                None => self.start_wqe(tx, &w, seq, request_id),
            };
            match started {
                Ok(true) => return Some(more),
                Ok(false) => {}
                Err(status) => {
                    self.finish(seq, status, None);
                    self.reap();
                    self.fail(None);
                    return None;
                }
            }
        }
    }

    /// A Read's local sink: one buffer (the Read Request names a single
    /// STag), writable by us.
    fn read_sink(&self, w: &SendWqe) -> Result<(), WcStatus> {
        if w.sges().len() > 1 {
            return Err(WcStatus::LocQpOpErr);
        }
        Local::resolve(&self.mems, self.qp.pd(), w.sges(), Access::LOCAL_WRITE)
            .map(drop)
            .map_err(|_| WcStatus::LocProtErr)
    }

    /// Sets up the message of WQE `w` (in-flight `seq`; an Atomic's
    /// `request_id`); `Ok(false)` for a local operation that is done already.
    fn start_wqe(
        self: &Arc<Self>,
        tx: &mut TxState,
        w: &SendWqe,
        seq: u64,
        request_id: u32,
    ) -> Result<bool, WcStatus> {
        let len = u32::try_from(w.len()).map_err(|_| WcStatus::LocLenErr)?;
        let resolve = |need: Access| {
            Local::resolve(&self.mems, self.qp.pd(), w.sges(), need)
                .map_err(|_| WcStatus::LocProtErr)
        };
        let payload = || -> Result<Src, WcStatus> {
            if w.inline {
                Ok(Src::Inline(w.inline_data))
            } else {
                Ok(Src::Local(resolve(Access::NONE)?))
            }
        };
        let (tmpl, src, done) = match w.op {
            SendOp::RegMr | SendOp::LocalInv | SendOp::BindMw => {
                let status = local::exec(&self.mems, self.qp.pd(), w);
                self.finish(seq, status, None);
                if self.reap() {
                    return Err(status);
                }
                return Ok(false);
            }
            SendOp::Send | SendOp::SendInv => {
                let inv = if w.op == SendOp::SendInv {
                    w.inv_rkey
                } else {
                    0
                };
                let src = payload()?;
                let op = send_opcode(w);
                let msn = tx.next_msn(0);
                (TxMessage::send(op, msn, inv, len), src, Done::Complete(seq))
            }
            SendOp::Write | SendOp::WriteImm => {
                let src = payload()?;
                let tmpl = TxMessage::tagged(Opcode::Write, w.rkey, w.remote_addr, len);
                let done = if w.op == SendOp::WriteImm {
                    Done::ThenImm {
                        seq,
                        imm: w.imm,
                        solicited: w.solicited,
                    }
                } else {
                    Done::Complete(seq)
                };
                (tmpl, src, done)
            }
            SendOp::Read | SendOp::ReadInv => {
                // `pick_sq` checked the sink and entered it in the ORQ.
                let (stag, to) = w.sges().first().map_or((0, 0), |s| (s.lkey, s.addr));
                let req = ReadRequest {
                    sink_stag: stag,
                    sink_to: to,
                    size: len,
                    source_stag: w.rkey,
                    source_to: w.remote_addr,
                };
                let tmpl = tx.untagged(Opcode::ReadRequest, 0, Header::ReadRequest(req), 0);
                (tmpl, Src::None, Done::Nothing)
            }
            SendOp::CmpSwap | SendOp::FetchAdd | SendOp::MaskedCmpSwap | SendOp::MaskedFetchAdd => {
                // `pick_sq` entered it in the ORQ under `request_id`.
                let (opcode, fields) = atomic_fields(w);
                let req = AtomicRequest {
                    opcode,
                    request_id,
                    stag: w.rkey,
                    to: w.remote_addr,
                    fields,
                };
                let tmpl = tx.untagged(Opcode::AtomicRequest, 0, Header::AtomicRequest(req), 0);
                (tmpl, Src::None, Done::Nothing)
            }
        };
        self.ctr.message_sent(tmpl.opcode);
        tx.cur = Some(Msg {
            inbound: false,
            tmpl,
            off: 0,
            src,
            done,
        });
        Ok(true)
    }
}
