// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Transmit side: the TX work item turns send WQEs, inbound Read/Atomic
//! requests and Terminates into RDMAP messages (RFC 5040 §4, RFC 7306 §4-§6),
//! cuts them into DDP segments of at most MULPDU octets (RFC 5041 §5) framed
//! as MPA FPDUs (RFC 5044 §4) and writes them to the stream without blocking.

mod frame;
mod send;
mod sq;
mod src;
mod zcdone;

use super::{Engine, Inbound, Outbound, Phase};
use crate::{
    kapi::zc::{self, Segs},
    proto::{
        mpa::Rtr,
        rdmap::{AtomicResponse, Header, Opcode, ReadRequest},
        terminate::{TermCause, TerminateRepr},
        tx::{TxFramer, TxMessage},
    },
    queue::cq::WcStatus,
    resources::counters::Counter,
};
use frame::{terminate_msg, FrameError};
use kernel::{alloc::KVVec, prelude::*, sync::Arc};
use src::Src;

/// Room in the wire buffer beyond MULPDU: length field, PAD, CRC.
const FRAME_EXTRA: usize = 2 + 3 + 4;
/// The longest DDP + RDMAP headers (an untagged Atomic Request).
const MAX_HEADERS: usize = 18 + 28;
/// Payload of one large FPDU (peers that both offered them, `mpa_large_fpdu`):
/// 15 pages, so that a page-aligned message stays page-aligned FPDU by FPDU
/// and the FPDU (with headers, PAD and CRC) stays within a 16-bit
/// ULPDU_Length. TCP cuts it into segments (GSO), as it does any long write.
const LARGE_PAYLOAD: u32 = 15 * 4096;
// A large FPDU of one SGE goes zero-copy, page-aligned or not.
const _: () = assert!(crate::kapi::zc::MAX_SEGS >= LARGE_PAYLOAD as usize / 4096 + 2);
/// Further room for small FPDUs framed behind the first and handed to the
/// socket in one call (`Engine::coalesce`).
const COALESCE_ROOM: usize = 4096;
/// The wire buffer a connection starts with (at most its full size), one
/// 128-octet allocation: room for the headers, PAD and CRC of a zero-copy
/// FPDU (`MAX_HEADERS`, `FRAME_EXTRA`), a Terminate, or a copied FPDU of a
/// small message (8-octet inline data, an Atomic, a short Read Response).
/// It grows to `WIRE_BATCH` the first time a burst of small messages
/// coalesces in it or a copied FPDU wants more, and then to the power of
/// two a larger copied FPDU needs, up to the full size (MULPDU,
/// `FRAME_EXTRA`, `COALESCE_ROOM`; `grow_wire`): a QP that only sends
/// zero-copy messages, or tiny ones one at a time, keeps 128 octets, one of
/// 4 KiB messages 8 KiB, not the 64 KiB and more that a loopback MTU's MULPDU
/// allows.
const WIRE_START: usize = 128;
// The headers and trailer of any FPDU fit the first buffer, with 64 octets
// of copied payload: more than a Terminate carries (its control field, the
// DDP Segment Length and the two headers it quotes; RFC 5040 §4.8).
const _: () = assert!(WIRE_START >= MAX_HEADERS + FRAME_EXTRA + 64);
/// The wire buffer of a connection that coalesced a burst of small messages
/// (while half of it is free: some 25 Atomic Responses go in one socket
/// call).
const WIRE_BATCH: usize = 2048;
/// Sends and Writes of at least this much payload from pinned user memory go
/// to the socket as page pieces that TCP copies (`frame`): one copy of each
/// octet instead of two. Smaller ones are copied into the wire buffer, where
/// a burst of them coalesces into one socket call. As `POSTER_BYTES`.
const COPY_PAGES_MIN: u32 = 16 * 1024;
/// Octets a TX run in a poster's system call sends before it hands the rest
/// to the work item (checked when an FPDU has gone out, so at least one
/// goes, small ones coalesced behind it). A message of this size or less
/// (a latency test's, an Atomic's) is sent before the doorbell returns, with
/// no work-item hop; a bulk stream moves to the work item, on another CPU
/// (`kapi/wq.c`), and the loopback receive it causes runs there, not on the
/// poster's CPU, where it would wait for the poster or keep it from posting.
/// As `rx::BULK_PAYLOAD`.
const POSTER_BYTES: usize = 16 * 1024;
/// FPDUs framed and SQ WQEs taken per TX run at most; then the run requeues
/// itself. A consumer posting without end (local operations complete at
/// once, and need no socket space) must not keep one worker, or the
/// poster's system call, busy for ever.
const TX_BUDGET: u32 = 256;

/// What happens when the last FPDU of a message is in the socket.
#[derive(Clone, Copy)]
enum Done {
    Nothing,
    /// The in-flight WQE `seq` is complete.
    Complete(u64),
    /// An RDMA Write with Immediate: the Immediate Data message follows.
    ThenImm {
        seq: u64,
        imm: u64,
        solicited: bool,
    },
    /// A Terminate is out: close the stream (RFC 5040 §5.3).
    Shutdown,
}

/// A message being sent.
struct Msg {
    tmpl: TxMessage,
    /// The response to an inbound Read or Atomic Request: once its last
    /// FPDU is framed the request no longer counts against IRD.
    inbound: bool,
    /// Payload octets already framed.
    off: u32,
    src: Src,
    done: Done,
}

/// TX state; [`Engine::tx`] protects it (the TX work only).
pub(super) struct TxState {
    framer: TxFramer,
    /// The copied octets of the FPDU being sent: `wire[..hlen]` go before
    /// the page pieces `zc`, `wire[hlen..len]` (PAD, CRC) after them.
    wire: KVVec<u8>,
    /// The size `wire` grows to at most (it starts at `WIRE_START`).
    wire_cap: usize,
    len: usize,
    hlen: usize,
    /// Zero-copy payload of the FPDU being sent, `zc_len` octets.
    zc: Segs,
    zc_len: usize,
    /// The trackers of zero-copy messages (`zcdone.rs`).
    zct: zcdone::ZcTrack,
    /// The pages in `zc` go without a tracker: TCP copies them in the socket
    /// call (`COPY_PAGES_MIN`), and TX never leaves them half sent
    /// (`bounce`).
    copy_pages: bool,
    /// Messages with at least this much payload go zero-copy (0, the
    /// default: never).
    zc_min: u32,
    /// FPDUs up to `LARGE_PAYLOAD` (the framer's MULPDU is 64 KiB); copied
    /// payload still goes in FPDUs that fit `wire`.
    large: bool,
    /// Octets of the FPDU (copied and zero-copy) already in the socket.
    sent: usize,
    cur: Option<Msg>,
    /// Completes when `wire` is fully sent (the message's last FPDU).
    after: Done,
    /// Next MSN per untagged queue (RFC 5041 §5.1: starts at 1).
    msn: [u32; 4],
    prefer_inbound: bool,
    /// When the FPDU in `wire` (a message's last) was framed, another
    /// message was ready: send it with `MSG_MORE`, so that a burst of small
    /// messages (Atomic or Read Responses, pipelined requests) leaves in
    /// full TCP segments instead of one segment and one receive pass each.
    batch: bool,
    /// The socket holds octets sent with `MSG_MORE`: push them before TX
    /// stops.
    corked: bool,
    /// What this run may still do (`TX_BUDGET`).
    budget: u32,
    /// The budget ran out: the run requeues itself.
    yielded: bool,
}

/// Who runs TX.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Runner {
    /// The connection's work item.
    Worker,
    /// A poster's system call: the doorbell (`Engine::tx_direct`) and the
    /// TX it then drains (`inline`); sends `POSTER_BYTES`, then hands over.
    Poster,
}

/// What `Engine::step` found.
enum Step {
    /// Nothing may be sent now.
    Idle,
    /// Close the stream (abortively if true).
    Shutdown(bool),
    /// Go on with the message in progress.
    Go,
    /// Send this Terminate.
    Terminate(TerminateRepr),
    /// Send the RTR.
    Rtr(Rtr),
    /// Answer this inbound request; `more_irq`: another one waits.
    Inbound { req: Inbound, more_irq: bool },
    /// Look at the SQ, then (if `inbound_after`) at inbound requests.
    Sq { inbound_after: bool },
}

/// What the TX loop does next.
enum Next {
    /// An FPDU is in `wire`.
    Built,
    /// Nothing to send now.
    Idle,
    /// Close the stream.
    Shutdown(bool),
}

impl TxState {
    /// `buf_mulpdu`: the RFC 5044 MULPDU of the stream, which sizes the
    /// buffer of copied octets (with large FPDUs, at least `LARGE_PAYLOAD`).
    pub(super) fn new(framer: TxFramer, buf_mulpdu: u16, large: bool) -> Result<Self> {
        // With large FPDUs a copied one is as large as a zero-copy one: the
        // buffer may grow to `LARGE_PAYLOAD` (only as far as the copied
        // messages need, `grow_wire`).
        let payload_cap = if large {
            usize::from(buf_mulpdu).max(LARGE_PAYLOAD as usize)
        } else {
            usize::from(buf_mulpdu)
        };
        let wire_cap = payload_cap + FRAME_EXTRA + COALESCE_ROOM;
        Ok(Self {
            framer,
            wire: KVVec::from_elem(0u8, wire_cap.min(WIRE_START), GFP_KERNEL)?,
            wire_cap,
            large,
            len: 0,
            hlen: 0,
            zc: Segs::new(),
            zc_len: 0,
            zct: zcdone::ZcTrack::new(),
            copy_pages: false,
            zc_min: crate::kapi::params::zc_min(),
            sent: 0,
            cur: None,
            after: Done::Nothing,
            msn: [1; 4],
            prefer_inbound: false,
            batch: false,
            corked: false,
            budget: TX_BUDGET,
            yielded: false,
        })
    }

    /// Drops the message in progress and its region references.
    pub(super) fn reset(&mut self) {
        self.cur = None;
        self.clear_fpdu();
        self.zct.end_cur();
        self.after = Done::Nothing;
    }

    /// No FPDU in progress; drops its page references.
    fn clear_fpdu(&mut self) {
        self.len = 0;
        self.hlen = 0;
        self.zc.clear();
        self.zc_len = 0;
        self.copy_pages = false;
        self.sent = 0;
    }

    /// Octets of the FPDU in progress on the wire.
    fn fpdu_len(&self) -> usize {
        self.len + self.zc_len
    }

    fn next_msn(&mut self, qn: u32) -> u32 {
        match self.msn.get_mut(qn as usize) {
            Some(m) => {
                let v = *m;
                *m = m.wrapping_add(1);
                v
            }
            None => 0,
        }
    }

    /// A Terminate is framed or being sent: the stream closes after it
    /// (`Done::Shutdown`).
    fn terminating(&self) -> bool {
        matches!(self.after, Done::Shutdown)
            || matches!(
                self.cur,
                Some(Msg {
                    done: Done::Shutdown,
                    ..
                })
            )
    }

    /// Counts one unit of the run's work; false (and `yielded`) when the
    /// budget is spent.
    fn take_budget(&mut self) -> bool {
        if self.budget == 0 {
            self.yielded = true;
            return false;
        }
        self.budget -= 1;
        true
    }

    fn untagged(&mut self, op: Opcode, ulp_word: u32, rdmap: Header, len: u32) -> TxMessage {
        let msn = self.next_msn(op.queue().unwrap_or(0));
        TxMessage::untagged(op, msn, ulp_word, rdmap, len)
    }
}

impl Engine {
    /// The TX work: sends what is queued until the socket is full, nothing
    /// is left, or the stream closes.
    pub(super) fn tx_run(self: &Arc<Self>, by: Runner) {
        let mut tx = self.tx.lock();
        tx.budget = TX_BUDGET;
        tx.yielded = false;
        let mut sent = 0usize;
        // Zero-copy pages TCP released since the last run: their WQEs
        // complete now (`zcdone.rs`), whatever the phase.
        if self.zc_poll(&mut tx) && self.reap() {
            self.fail(None);
        }
        loop {
            // An abortive close does not wait for a socket that may never
            // drain: RST at once, whatever is half sent. A Terminate still to
            // send or being sent goes first (the ULP destroying the QP as soon
            // as the error's flush reached it must not cut the peer's only
            // word of why, RFC 5040 §7.1); if the socket cannot take it, the
            // stall below resets instead.
            let (abort, closed) = {
                let s = self.shared.lock();
                let abort = match &s.phase {
                    Phase::Closing {
                        abortive: true,
                        terminate,
                    } => terminate.is_none() && !tx.terminating(),
                    _ => false,
                };
                (abort, matches!(s.phase, Phase::Closed))
            };
            if abort || closed {
                tx.reset();
                drop(tx);
                if abort {
                    self.shutdown(true);
                }
                return;
            }
            if tx.sent < tx.fpdu_len() {
                match self.send_part(&tx) {
                    Ok((n, more)) if n > 0 => {
                        self.ctr.add(Counter::SentOctets, n as u64);
                        tx.sent = tx.sent.saturating_add(n).min(tx.fpdu_len());
                        sent = sent.saturating_add(n);
                        tx.corked = more;
                        continue;
                    }
                    Ok(_) => {}
                    Err(e) if e == EAGAIN => {}
                    Err(_) => {
                        tx.reset();
                        drop(tx);
                        self.fail(None);
                        self.shutdown(true);
                        return;
                    }
                }
                // Full: `write_space` kicks the work again, unless the close
                // is abortive (a Terminate was being sent): RST now.
                let abortive = matches!(
                    self.shared.lock().phase,
                    Phase::Closing { abortive: true, .. }
                );
                // (`bounce` cannot fail: `frame` sized the buffer. If it did,
                // the stream is reset rather than read the pages later.)
                if abortive || !self.bounce(&mut tx) {
                    tx.reset();
                    drop(tx);
                    self.shutdown(true);
                    return;
                }
                return self.stalled(&mut tx);
            }
            // The FPDU is in the socket; TCP holds its own page references.
            tx.clear_fpdu();
            let after = core::mem::replace(&mut tx.after, Done::Nothing);
            if let Done::Shutdown = after {
                tx.reset();
                drop(tx);
                self.shutdown(false);
                return;
            }
            self.message_sent(&mut tx, after);
            if !tx.take_budget() {
                self.uncork(&mut tx);
                drop(tx);
                return self.requeue_tx();
            }
            // A poster that sent its share hands what is ready to the work
            // item before framing it (an FPDU framed here would have to be
            // copied, `bounce`). What is posted after this look the poster
            // frames and sends itself, then looks again.
            if by == Runner::Poster
                && sent >= POSTER_BYTES
                && (tx.cur.is_some() || self.work_ready())
            {
                self.uncork(&mut tx);
                drop(tx);
                return self.requeue_tx();
            }
            match self.next_fpdu(&mut tx, false) {
                Next::Built => self.coalesce(&mut tx),
                Next::Idle => {
                    self.uncork(&mut tx);
                    if tx.yielded {
                        drop(tx);
                        self.requeue_tx();
                    }
                    return;
                }
                Next::Shutdown(abortive) => {
                    tx.reset();
                    drop(tx);
                    self.shutdown(abortive);
                    return;
                }
            }
        }
    }

    /// The socket is full: TX waits for write space.
    fn stalled(&self, tx: &mut TxState) {
        self.ctr.inc(Counter::TxStalls);
        self.uncork(tx);
    }

    /// TX stops: what `MSG_MORE` held back goes out now.
    fn uncork(&self, tx: &mut TxState) {
        if core::mem::take(&mut tx.corked) {
            self.stream.push();
        }
    }

    /// Another message could be framed right away: an inbound request to
    /// answer or a posted SQ WQE (it may still wait for ORD; `uncork`
    /// covers that).
    fn work_ready(&self) -> bool {
        !self.shared.lock().irq.is_empty() || self.qp.sq_posted()
    }

    fn shutdown(&self, abortive: bool) {
        self.set_phase_closed();
        self.stream.shutdown(abortive);
    }

    /// The last FPDU of a message is in the socket.
    fn message_sent(self: &Arc<Self>, tx: &mut TxState, after: Done) {
        match after {
            Done::Nothing | Done::Shutdown => {}
            Done::Complete(seq) => {
                // Sent zero-copy: held until TCP releases its pages.
                tx.zct.end_cur();
                self.zc_poll(tx);
                self.finish(seq, WcStatus::Success, None);
                if self.reap() {
                    self.fail(None);
                }
            }
            Done::ThenImm {
                seq,
                imm,
                solicited,
            } => {
                let op = if solicited {
                    Opcode::ImmediateDataSe
                } else {
                    Opcode::ImmediateData
                };
                // RFC 7306 §6: Immediate Data follows the Write on QN 0.
                let tmpl = tx.untagged(op, 0, Header::Immediate(imm), 0);
                tx.cur = Some(Msg {
                    inbound: false,
                    tmpl,
                    off: 0,
                    src: Src::None,
                    done: Done::Complete(seq),
                });
            }
        }
    }

    /// Frames more single-FPDU messages behind the one in `wire` while the
    /// next is ready and none of them completes a WQE when sent (Read and
    /// Atomic Requests and Responses): one socket call, and one segment,
    /// for a burst of them.
    fn coalesce(self: &Arc<Self>, tx: &mut TxState) {
        if tx.cur.is_none() && tx.batch && tx.zc_len == 0 && matches!(tx.after, Done::Nothing) {
            // A burst: the buffer grows to coalesce it, keeping the FPDU
            // framed in it.
            frame::grow_wire_keep(&mut tx.wire, WIRE_BATCH.min(tx.wire_cap), tx.len);
        }
        // Another FPDU goes behind while `fpdu_max` octets are free: the
        // coalescing room of a fully grown buffer, half of a smaller one.
        let fpdu_max = tx
            .wire
            .len()
            .saturating_sub(COALESCE_ROOM)
            .max(tx.wire.len() / 2);
        while tx.cur.is_none()
            && tx.batch
            && tx.zc_len == 0
            && matches!(tx.after, Done::Nothing)
            && tx.wire.len().saturating_sub(tx.len) >= fpdu_max
        {
            if !matches!(self.next_fpdu(tx, true), Next::Built) {
                // Idle, or a close that the next turn of the TX loop
                // handles once these octets are out.
                break;
            }
        }
    }

    /// Frames the next FPDU into `tx.wire` (behind what is there if
    /// `append`).
    fn next_fpdu(self: &Arc<Self>, tx: &mut TxState, append: bool) -> Next {
        loop {
            // Whether another message is ready behind the one picked, learnt
            // in the lock holds that picked it (`None`: ask `work_ready`).
            let mut more = None;
            match self.step(tx) {
                Step::Idle => return Next::Idle,
                Step::Shutdown(abortive) => return Next::Shutdown(abortive),
                Step::Go => {}
                Step::Terminate(t) => {
                    self.ctr.terminate(t.cause, true);
                    // The message in progress is abandoned: the Terminate
                    // ends the stream (RFC 5040 §5.3).
                    tx.cur = Some(terminate_msg(tx, t));
                }
                Step::Rtr(rtr) => {
                    if !self.rtr(tx, rtr) {
                        return Next::Idle;
                    }
                }
                Step::Inbound { req, more_irq } => {
                    self.start_inbound(tx, req);
                    more = Some(more_irq || self.qp.sq_posted());
                }
                Step::Sq { inbound_after } => {
                    if let Some(m) = self.pick_sq(tx) {
                        more = Some(m);
                    } else if !inbound_after || tx.yielded {
                        return Next::Idle;
                    } else {
                        let (req, more_irq) = {
                            let mut s = self.shared.lock();
                            let req = s.irq.pop_front();
                            (req, !s.irq.is_empty())
                        };
                        let Some(req) = req else {
                            return Next::Idle;
                        };
                        self.start_inbound(tx, req);
                        more = Some(more_irq || self.qp.sq_posted());
                    }
                }
            }
            if tx.cur.is_some() {
                return match self.frame(tx, append) {
                    Ok(()) => {
                        self.ctr.inc(Counter::SentFpdus);
                        tx.batch = tx.cur.is_none()
                            && (matches!(tx.after, Done::ThenImm { .. })
                                || more.unwrap_or_else(|| self.work_ready()));
                        Next::Built
                    }
                    Err(FrameError::SrcDead) => {
                        self.source_died(tx);
                        // The Terminate is the next thing to frame.
                        continue;
                    }
                    Err(FrameError::Broken) => {
                        tx.reset();
                        Next::Shutdown(true)
                    }
                };
            }
        }
    }

    /// The payload source of the message in progress died under it (its
    /// STag was invalidated or deregistered; RFC 5040 §6.4: an invalid STag
    /// is not accessed). A Read Response becomes a Terminate for the Read's
    /// Data Source (RFC 5040 §7.1, Invalid STag); a local buffer fails its
    /// WQE with a protection error and a local catastrophic Terminate. The
    /// QP goes to ERROR either way.
    fn source_died(self: &Arc<Self>, tx: &mut TxState) {
        let msg = tx.cur.take();
        tx.reset();
        let cause = match &msg {
            Some(m) if m.inbound => TermCause::RDMAP_INVALID_STAG,
            _ => TermCause::RDMAP_LOCAL_CATASTROPHIC,
        };
        if let Some(Done::Complete(seq) | Done::ThenImm { seq, .. }) = msg.as_ref().map(|m| m.done)
        {
            self.finish(seq, WcStatus::LocProtErr, None);
        }
        // Region references go before the QP's completions run.
        drop(msg);
        pr_info!(
            "qp {}: payload source invalidated mid-message, sending Terminate {:?}\n",
            self.qp.num(),
            cause
        );
        self.fail(Some(TerminateRepr::new(cause)));
    }

    /// One `shared` lock hold: what the connection's phase asks for, and,
    /// with no message in progress, the RTR or the inbound request whose
    /// turn it is (inbound responses and SQ WQEs alternate).
    fn step(&self, tx: &mut TxState) -> Step {
        let mut s = self.shared.lock();
        match &mut s.phase {
            Phase::Closed => return Step::Idle,
            Phase::Closing {
                abortive,
                terminate,
            } => {
                // The Terminate goes out first even when the close turned
                // abortive meanwhile (the ULP destroying the QP as soon as
                // the error's flush reached it): the peer learns why.
                if let Some(t) = terminate.take() {
                    return Step::Terminate(t);
                }
                if *abortive && !tx.terminating() {
                    return Step::Shutdown(true);
                }
                if tx.cur.is_none() {
                    return Step::Shutdown(false);
                }
            }
            Phase::Running => {}
        }
        if tx.cur.is_some() {
            return Step::Go;
        }
        if s.rtr_wait {
            return Step::Idle;
        }
        if let Some(rtr) = s.rtr_send.take() {
            return Step::Rtr(rtr);
        }
        tx.prefer_inbound = !tx.prefer_inbound;
        if tx.prefer_inbound {
            if let Some(req) = s.irq.pop_front() {
                return Step::Inbound {
                    req,
                    more_irq: !s.irq.is_empty(),
                };
            }
            return Step::Sq {
                inbound_after: false,
            };
        }
        Step::Sq {
            inbound_after: true,
        }
    }

    /// RFC 6581 §5: the initiator's zero-length RTR message.
    fn rtr(self: &Arc<Self>, tx: &mut TxState, rtr: Rtr) -> bool {
        let tmpl = match rtr {
            Rtr::Send => tx.untagged(Opcode::Send, 0, Header::None, 0),
            Rtr::Write => TxMessage::tagged(Opcode::Write, 0, 0, 0),
            Rtr::Read => {
                let pushed = self.shared.lock().orq.push(Outbound::Read {
                    seq: None,
                    sink_stag: 0,
                    sink_to: 0,
                    size: 0,
                    placed: 0,
                    inv: None,
                });
                if pushed.is_err() {
                    return false;
                }
                let req = ReadRequest {
                    sink_stag: 0,
                    sink_to: 0,
                    size: 0,
                    source_stag: 0,
                    source_to: 0,
                };
                tx.untagged(Opcode::ReadRequest, 0, Header::ReadRequest(req), 0)
            }
        };
        self.ctr.message_sent(tmpl.opcode);
        tx.cur = Some(Msg {
            inbound: false,
            tmpl,
            off: 0,
            src: Src::None,
            done: Done::Nothing,
        });
        true
    }

    /// An inbound request becomes a Read Response or Atomic Response.
    fn start_inbound(&self, tx: &mut TxState, req: Inbound) {
        let msg = match req {
            Inbound::Read {
                sink_stag,
                sink_to,
                size,
                src,
                src_to,
            } => Msg {
                inbound: true,
                // RFC 5040 §4.5: the Read Response targets the Data Sink.
                tmpl: TxMessage::tagged(Opcode::ReadResponse, sink_stag, sink_to, size),
                off: 0,
                src: match src {
                    Some(mem) => Src::Region { mem, addr: src_to },
                    None => Src::None,
                },
                done: Done::Nothing,
            },
            Inbound::AtomicResponse {
                request_id,
                original,
            } => Msg {
                inbound: true,
                tmpl: tx.untagged(
                    Opcode::AtomicResponse,
                    0,
                    Header::AtomicResponse(AtomicResponse {
                        request_id,
                        original,
                    }),
                    0,
                ),
                off: 0,
                src: Src::None,
                done: Done::Nothing,
            },
        };
        self.ctr.message_sent(msg.tmpl.opcode);
        tx.cur = Some(msg);
    }
}
