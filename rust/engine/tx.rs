// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Transmit side: the TX work item turns send WQEs, inbound Read/Atomic
//! requests and Terminates into RDMAP messages (RFC 5040 §4, RFC 7306 §4-§6),
//! cuts them into DDP segments of at most MULPDU octets (RFC 5041 §5) framed
//! as MPA FPDUs (RFC 5044 §4) and writes them to the stream without blocking.

use super::{Engine, Inbound, Inflight, Local, Outbound, Phase};
use crate::{
    cq::WcStatus,
    ffi::{
        crc::KernelCrc32c,
        zc::{self, PageRef, Seg, Segs},
    },
    mem::{Access, Mem},
    proto::{
        atomic::{AOpCode, AtomicFields},
        crc::{crc32c_finish, Crc32c, CRC32C_INIT},
        ddp::{self, Buffer},
        mpa::Rtr,
        rdmap::{AtomicRequest, AtomicResponse, Header, Opcode, ReadRequest},
        terminate::TerminateRepr,
        tx::{Piece, TxFramer, TxMessage},
    },
    qp::{SendOp, SendWqe, MAX_INLINE},
};
use core::sync::atomic::Ordering;
use kernel::{alloc::KVVec, prelude::*, sync::Arc};

/// Room in the wire buffer beyond MULPDU: length field, PAD, CRC.
const FRAME_EXTRA: usize = 2 + 3 + 4;
/// Further room for small FPDUs framed behind the first and handed to the
/// socket in one call (`Engine::coalesce`).
const COALESCE_ROOM: usize = 4096;

/// Where a message's payload comes from.
enum Src {
    None,
    Inline([u8; MAX_INLINE]),
    Local(Local),
    /// Read Response: the region named by the Read Request's Data Source.
    Region {
        mem: Arc<Mem>,
        addr: u64,
    },
}

impl Src {
    fn read(&self, off: u32, out: &mut [u8]) -> Result {
        match self {
            Self::None => {
                if out.is_empty() {
                    Ok(())
                } else {
                    Err(EINVAL)
                }
            }
            Self::Inline(d) => {
                let start = off as usize;
                let src = d.get(start..start + out.len()).ok_or(EINVAL)?;
                out.copy_from_slice(src);
                Ok(())
            }
            Self::Local(l) => l.read(u64::from(off), out),
            Self::Region { mem, addr } => {
                mem.read(addr.checked_add(u64::from(off)).ok_or(EINVAL)?, out)
            }
        }
    }

    /// References to the pages of payload octets `off..off + len` appended
    /// to `segs`, if they all are pinned user memory; `Ok(false)` otherwise.
    fn user_pages(&self, off: u32, len: usize, segs: &mut Segs) -> Result<bool> {
        let mut push = |p: PageRef, o: usize, n: usize| -> Result {
            // Full (an FPDU beyond MAX_SEGS pages): the caller copies.
            segs.push(Seg::new(p, o, n)?)
        };
        match self {
            Self::Local(l) => l.user_pages(u64::from(off), len, &mut push),
            Self::Region { mem, addr } => mem.user_pages(
                addr.checked_add(u64::from(off)).ok_or(EINVAL)?,
                len,
                &mut push,
            ),
            Self::None | Self::Inline(_) => Ok(false),
        }
    }
}

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
    len: usize,
    hlen: usize,
    /// Zero-copy payload of the FPDU being sent, `zc_len` octets.
    zc: Segs,
    zc_len: usize,
    /// Messages with at least this much payload go zero-copy (0: never).
    zc_min: u32,
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

/// The ORQ entry an SQ WQE needs, prepared before the `shared` lock hold
/// that hands the WQE over.
enum OrqEntry {
    No,
    /// A Read whose sink buffer was checked (or the error it gets).
    Read(Result<(), WcStatus>),
    /// An Atomic and its result buffer (or the error it gets).
    Atomic(Result<Local, WcStatus>),
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
    pub(super) fn new(framer: TxFramer, mulpdu: u16) -> Result<Self> {
        Ok(Self {
            framer,
            wire: KVVec::from_elem(
                0u8,
                usize::from(mulpdu) + FRAME_EXTRA + COALESCE_ROOM,
                GFP_KERNEL,
            )?,
            len: 0,
            hlen: 0,
            zc: Segs::new(),
            zc_len: 0,
            zc_min: zc::min_len(),
            sent: 0,
            cur: None,
            after: Done::Nothing,
            msn: [1; 4],
            prefer_inbound: false,
            batch: false,
            corked: false,
        })
    }

    /// Drops the message in progress and its region references.
    pub(super) fn reset(&mut self) {
        self.cur = None;
        self.clear_fpdu();
        self.after = Done::Nothing;
    }

    /// No FPDU in progress; drops its page references.
    fn clear_fpdu(&mut self) {
        self.len = 0;
        self.hlen = 0;
        self.zc.clear();
        self.zc_len = 0;
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

    fn untagged(&mut self, op: Opcode, ulp_word: u32, rdmap: Header, len: u32) -> TxMessage {
        let msn = self.next_msn(op.queue().unwrap_or(0));
        TxMessage::untagged(op, msn, ulp_word, rdmap, len)
    }
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
    /// The TX work: sends what is queued until the socket is full, nothing
    /// is left, or the stream closes.
    pub(super) fn tx_run(self: &Arc<Self>) {
        let mut tx = self.tx.lock();
        loop {
            // An abortive close does not wait for a socket that may never
            // drain: RST at once, whatever is half sent.
            let (abort, closed) = {
                let s = self.shared.lock();
                (
                    matches!(s.phase, Phase::Closing { abortive: true, .. }),
                    matches!(s.phase, Phase::Closed),
                )
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
                        tx.sent = tx.sent.saturating_add(n).min(tx.fpdu_len());
                        tx.corked = more;
                        continue;
                    }
                    // Full: `write_space` kicks the work again.
                    Ok(_) => return self.uncork(&mut tx),
                    Err(e) if e == EAGAIN => return self.uncork(&mut tx),
                    Err(_) => {
                        tx.reset();
                        drop(tx);
                        self.fail(None);
                        self.shutdown(true);
                        return;
                    }
                }
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
            match self.next_fpdu(&mut tx, false) {
                Next::Built => self.coalesce(&mut tx),
                Next::Idle => return self.uncork(&mut tx),
                Next::Shutdown(abortive) => {
                    tx.reset();
                    drop(tx);
                    self.shutdown(abortive);
                    return;
                }
            }
        }
    }

    /// Sends (some of) the rest of the FPDU in progress: the copied header,
    /// the zero-copy payload pages, then the copied trailer. Returns the
    /// octets sent and whether they went with `MSG_MORE`.
    fn send_part(&self, tx: &TxState) -> Result<(usize, bool)> {
        let (s, h, z, l) = (tx.sent, tx.hlen, tx.zc_len, tx.len);
        // More FPDUs of the same message, or more messages, follow: let
        // TCP fill its segments.
        let more = tx.cur.is_some() || tx.batch;
        if s < h {
            let b = tx.wire.get(s..h).ok_or(EINVAL)?;
            let more = more || h < l;
            self.stream.send(&[b], more).map(|n| (n, more))
        } else if s - h < z {
            let more = more || h < l;
            self.stream
                .send_pages(&tx.zc, s - h, more)
                .map(|n| (n, more))
        } else {
            let b = tx.wire.get(s - z..l).ok_or(EINVAL)?;
            self.stream.send(&[b], more).map(|n| (n, more))
        }
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
        let fpdu_max = tx.wire.len().saturating_sub(COALESCE_ROOM);
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
                    } else if !inbound_after {
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
                        tx.batch = tx.cur.is_none()
                            && (matches!(tx.after, Done::ThenImm { .. })
                                || more.unwrap_or_else(|| self.work_ready()));
                        Next::Built
                    }
                    Err(()) => {
                        tx.reset();
                        Next::Shutdown(true)
                    }
                };
            }
        }
    }

    /// One `shared` lock hold: what the connection's phase asks for, and,
    /// with no message in progress, the RTR or the inbound request whose
    /// turn it is (inbound responses and SQ WQEs alternate).
    fn step(&self, tx: &mut TxState) -> Step {
        let mut s = self.shared.lock();
        match &mut s.phase {
            Phase::Closed => return Step::Idle,
            Phase::Closing { abortive: true, .. } => return Step::Shutdown(true),
            Phase::Closing { terminate, .. } => {
                if let Some(t) = terminate.take() {
                    return Step::Terminate(t);
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
        tx.cur = Some(Msg {
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
        tx.cur = Some(msg);
    }

    /// Takes the next SQ WQE if its ordering rules allow; local operations
    /// run at once. Returns `None` if no message was set up, otherwise
    /// whether another message is ready behind it.
    ///
    /// A Read or Atomic is handed over and entered in the ORQ in one
    /// `shared` lock hold; its local buffer is resolved before.
    fn pick_sq(self: &Arc<Self>, tx: &mut TxState) -> Option<bool> {
        loop {
            let w = self.qp.sq_peek()?;
            let mut orq = match w.op {
                SendOp::Read | SendOp::ReadInv => OrqEntry::Read(self.read_sink(&w)),
                SendOp::CmpSwap
                | SendOp::FetchAdd
                | SendOp::MaskedCmpSwap
                | SendOp::MaskedFetchAdd => OrqEntry::Atomic(self.atomic_result(&w)),
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
                    // Region references go outside the lock.
                    drop(orq);
                    return None;
                }
                let byte_len = u32::try_from(w.len()).unwrap_or(u32::MAX);
                let seq = s.base_seq.wrapping_add(s.inflight.len() as u64);
                let e = Inflight {
                    wr_id: w.wr_id,
                    op: w.op,
                    signaled: w.signaled,
                    byte_len,
                    status: None,
                };
                // `Qp::set_error` flushes its ring only after `flush` (which
                // takes this lock): while `flushed` is false the peeked WQE
                // is still at the ring's peek position, so advancing here
                // hands over exactly that WQE and nothing is completed twice.
                if s.flushed || s.inflight.push(e).is_err() {
                    drop(s);
                    drop(orq);
                    return None;
                }
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
                let more = self.qp.sq_advance() || !s.irq.is_empty();
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
        Local::resolve(self.qp.dev(), self.qp.pd(), w.sges(), Access::LOCAL_WRITE)
            .map(drop)
            .map_err(|_| WcStatus::LocProtErr)
    }

    /// An Atomic's local result buffer: 8 octets we may write.
    fn atomic_result(&self, w: &SendWqe) -> Result<Local, WcStatus> {
        let result = Local::resolve(self.qp.dev(), self.qp.pd(), w.sges(), Access::LOCAL_WRITE)
            .map_err(|_| WcStatus::LocProtErr)?;
        if result.total() < 8 {
            return Err(WcStatus::LocLenErr);
        }
        Ok(result)
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
            Local::resolve(self.qp.dev(), self.qp.pd(), w.sges(), need)
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
                let status = self.qp.exec_local(w);
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
        tx.cur = Some(Msg {
            tmpl,
            off: 0,
            src,
            done,
        });
        Ok(true)
    }

    /// Frames the next FPDU of `tx.cur` into `tx.wire` (behind the copied
    /// octets there if `append`: never zero-copy then); `Err` if the message
    /// cannot be framed or its payload cannot be read.
    fn frame(&self, tx: &mut TxState, append: bool) -> Result<(), ()> {
        if !append {
            tx.clear_fpdu();
        }
        let base = tx.len;
        let TxState {
            framer,
            wire,
            len,
            hlen,
            zc: segs,
            zc_len,
            zc_min,
            cur,
            after,
            ..
        } = tx;
        let msg = cur.as_mut().ok_or(())?;
        let total = msg.tmpl.payload_len;
        let off = msg.off;
        // The rest of the message as a message of its own: same segments,
        // except that the RDMAP header goes only into the first one and an
        // untagged MO must count from the real start (patched below).
        let mut rest = msg.tmpl;
        rest.payload_len = total.saturating_sub(off);
        if off > 0 {
            rest.rdmap = Header::None;
            if let Buffer::Tagged { stag, to } = rest.ddp {
                rest.ddp = Buffer::Tagged {
                    stag,
                    to: to.wrapping_add(u64::from(off)),
                };
            }
        }
        let f = framer.frames(&rest).map_err(|_| ())?.next().ok_or(())?;
        let patch_mo = off > 0 && matches!(rest.ddp, Buffer::Untagged { .. });
        // Large messages from pinned user memory go zero-copy; markers
        // would split the payload, and are never sent anyway.
        let try_zc = !append && *zc_min > 0 && total >= *zc_min && !self.params.markers_tx;
        let crc_on = self.params.crc;
        let mut crc = CRC32C_INIT;
        // Copied octets from here on are not in `crc` yet: the CRC runs over
        // them in one call where they end (the trailer or a zero-copy part),
        // not once per piece.
        let mut crc_from = base;
        let mut pos = base;
        for p in f.pieces() {
            let n = p.len();
            let dst = wire.get_mut(pos..pos + n).ok_or(())?;
            match p {
                Piece::Bytes(b) => dst.copy_from_slice(b),
                Piece::Marker(m) => dst.copy_from_slice(&m),
                Piece::Payload(r) => {
                    let at = off
                        .checked_add(u32::try_from(r.start).map_err(|_| ())?)
                        .ok_or(())?;
                    if try_zc && n > 0 && matches!(msg.src.user_pages(at, n, segs), Ok(true)) {
                        if crc_on {
                            crc = KernelCrc32c.update(crc, wire.get(crc_from..pos).ok_or(())?);
                            crc = segs.iter().fold(crc, |c, s| s.crc32c(c));
                        }
                        crc_from = pos;
                        // The payload is not in `wire`: what follows is
                        // the trailer, sent after the pages.
                        *hlen = pos;
                        *zc_len = n;
                        continue;
                    }
                    segs.clear();
                    msg.src.read(at, dst).map_err(|_| ())?;
                }
                Piece::Crc => {
                    if crc_on {
                        crc = KernelCrc32c.update(crc, wire.get(crc_from..pos).ok_or(())?);
                    }
                    let v = if crc_on { crc32c_finish(crc) } else { 0 };
                    wire.get_mut(pos..pos + n)
                        .ok_or(())?
                        .copy_from_slice(&v.to_le_bytes());
                    pos += n;
                    continue;
                }
            }
            if pos == base && patch_mo {
                // The header is the first piece (no markers are sent).
                let hdr = wire
                    .get_mut(base + 2..base + 2 + ddp::UNTAGGED_HDR_LEN)
                    .ok_or(())?;
                ddp::Packet::new_unchecked(hdr).set_mo(off);
            }
            pos += n;
        }
        if *zc_len == 0 {
            *hlen = pos;
        }
        msg.off = off.saturating_add(f.payload.len() as u32);
        *len = pos;
        if msg.off >= total {
            *after = msg.done;
            *cur = None;
        }
        Ok(())
    }
}

/// RFC 5040 §4.8: the Terminate message on QN 2, then the stream closes.
fn terminate_msg(tx: &mut TxState, t: TerminateRepr) -> Msg {
    Msg {
        tmpl: tx.untagged(Opcode::Terminate, 0, Header::Terminate(t), 0),
        off: 0,
        src: Src::None,
        done: Done::Shutdown,
    }
}
