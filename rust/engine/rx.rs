// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Receive side: the protocol core's parser fed from the socket callback,
//! and placement of what it validated: tagged data (RFC 5041 §4, RFC 5040
//! §4.3/§4.5), untagged Sends and Immediate Data into receive WQEs (RFC 5041
//! §5.3, RFC 7306 §6), inbound Read/Atomic requests (RFC 5040 §4.4, RFC 7306
//! §5.2) and Terminates (RFC 5040 §4.8), with the Terminate the RFCs name
//! for every error (RFC 5040 §7, RFC 5041 §7, RFC 7306 §8).

use super::{causes, Engine, Inbound, Local, Outbound};
use crate::{
    kapi::crc::KernelCrc32c,
    proto::{
        atomic::AtomicOp,
        ddp::Buffer,
        rdmap::Opcode,
        rx::{HeaderInfo, Placement, RdmapHeader, RxError, RxParser, RxSink, SegmentEnd},
        terminate::{TermCause, TerminateRepr},
    },
    queue::cq::{WcFlags, WcStatus},
    resources::counters::Counter,
    resources::mem::{Access, Checked, MemError},
};
use core::sync::atomic::Ordering;
use defer::{Action, Deferred, DEFER, PER_FPDU};
use kernel::{prelude::*, sync::Arc};

#[path = "rx_defer.rs"]
mod defer;

/// A segment with this much payload or more makes the stream a bulk one,
/// whose queued octets the softirq may leave to the work item
/// (`Engine::rx_defer`); a smaller one makes it a stream of small
/// messages again, placed in the softirq. Large FPDUs and RFC FPDUs at a
/// jumbo MTU are bulk; RFC FPDUs at an Ethernet MTU are not.
const BULK_PAYLOAD: u16 = 16 * 1024;

/// The receive WQE a Send or Immediate Data message is placed into: its
/// work request id and its buffers, resolved.
pub(super) struct Recv {
    pub(super) wr_id: u64,
    buf: Local,
    invalidate: Option<u32>,
    imm: Option<u64>,
}

/// Where the payload of the current segment goes.
enum Seg {
    /// Nowhere (no payload, or an RTR).
    None,
    /// A tagged buffer, checked for the segment's range.
    Tagged(Checked),
    /// The receive WQE in progress.
    Recv,
}

/// What `segment_end` commits for a request without payload.
enum Pending {
    None,
    Read(Inbound),
    Atomic {
        mem: Checked,
        to: u64,
        op: AtomicOp,
        request_id: u32,
    },
    Terminate(TermCause),
    /// An Atomic Response: the request it answers and the original value.
    AtomicResponse {
        request_id: u32,
        original: u64,
    },
    /// The zero-length Send a peer-to-peer initiator sends as its RTR.
    RtrSend,
}

/// What the sink keeps between segments; [`Engine::rx`] protects it.
pub(super) struct RxCtx {
    recv: Option<Recv>,
    seg: Seg,
    pending: Pending,
    /// Stop parsing: an error or a Terminate ended the stream.
    dead: bool,
    /// The completion of a receive WQE taken from the RQ that found the
    /// deferred queue full (never, while the room checks hold): completed
    /// after the RX lock is released like the queue's, not lost.
    parked: Option<Action>,
    /// Responder in peer-to-peer mode before the RTR: RX's own copy of
    /// `Shared::rtr_wait` (only RX clears it), so that segments after the
    /// first take no lock to look at it.
    rtr_wait: bool,
}

/// The parser and the sink's state.
pub(super) struct RxState {
    parser: RxParser<KernelCrc32c>,
    ctx: RxCtx,
}

impl RxState {
    pub(super) fn new(parser: RxParser<KernelCrc32c>, rtr_wait: bool) -> Result<Self> {
        Ok(Self {
            parser,
            ctx: RxCtx {
                recv: None,
                seg: Seg::None,
                pending: Pending::None,
                dead: false,
                parked: None,
                rtr_wait,
            },
        })
    }

    /// The work request id of the receive WQE in progress, for a flush;
    /// nothing is placed after.
    pub(super) fn take_recv(&mut self) -> Option<u64> {
        self.ctx.dead = true;
        self.ctx.recv.take().map(|r| r.wr_id)
    }
}

/// The [`RxSink`] of one `feed`.
struct Sink<'a> {
    eng: &'a Engine,
    ctx: &'a mut RxCtx,
    deferred: &'a mut Deferred,
}

impl Sink<'_> {
    fn pd(&self) -> u32 {
        self.eng.qp.pd()
    }

    /// Invalidates local STag `stag` of this PD; false if it cannot be.
    fn invalidate(&self, stag: u32) -> bool {
        self.eng.mems.invalidate(stag, self.pd()).is_ok()
    }

    /// The tagged buffer a Write or Read Response segment goes to, checked
    /// for `need` over the segment (RFC 5041 §7.2 / RFC 5040 §7.1: STag, PD,
    /// rights and bounds). A zero-length segment (e.g. an RTR) references no
    /// memory.
    fn tagged_sink(&mut self, stag: u32, to: u64, len: u16, need: Access) -> Result<(), TermCause> {
        self.ctx.seg = Seg::None;
        if len == 0 {
            return Ok(());
        }
        let mem = self
            .checked_mem(stag, to, u64::from(len), need)
            .map_err(causes::tagged)?;
        self.ctx.seg = Seg::Tagged(mem);
        Ok(())
    }

    /// Local STag `stag` of this PD, checked for `need` over `len` octets at
    /// `to` (STag, state, PD, rights, bounds). The caller maps a failure to
    /// its layer's Terminate: `causes::tagged` for a tagged sink (RFC 5041
    /// §7.2), `causes::remote` for the memory a Read or Atomic Request names
    /// (RFC 5040 §7.1; RFC 7306 §9 puts Atomics under the same rules).
    fn checked_mem(&self, stag: u32, to: u64, len: u64, need: Access) -> Result<Checked, MemError> {
        self.eng.mems.checked(stag, self.pd(), need, to, len)
    }

    fn read_response(&mut self, stag: u32, to: u64, len: u16) -> Result<(), TermCause> {
        let mut s = self.eng.shared.lock();
        let Some(Outbound::Read {
            sink_stag,
            sink_to,
            size,
            placed,
            ..
        }) = s.orq.front_mut()
        else {
            // RFC 5040 §7.2: a Read Response without an outstanding Read.
            return Err(TermCause::RDMAP_UNEXPECTED_OPCODE);
        };
        let expect_to = sink_to.checked_add(u64::from(*placed));
        let fits = placed
            .checked_add(u32::from(len))
            .is_some_and(|end| end <= *size);
        if len > 0 && (stag != *sink_stag || expect_to != Some(to) || !fits) {
            // RFC 5040 §4.4: the Response carries the octets the Read asked
            // for, at its sink, and no more. Nothing of this segment is
            // placed; the Read fails as a short Response fails it.
            if let Some(Outbound::Read {
                seq: Some(seq),
                placed,
                ..
            }) = s.orq.pop_front()
            {
                drop(s);
                self.eng.finish(seq, WcStatus::BadRespErr, Some(placed));
            }
            return Err(TermCause::DDP_BASE_BOUNDS);
        }
        drop(s);
        self.tagged_sink(stag, to, len, Access::LOCAL_WRITE)
    }

    /// A segment of a Send or Immediate Data message (QN 0).
    fn untagged(&mut self, h: &HeaderInfo, mo: u32) -> Result<(), TermCause> {
        if mo == 0 {
            if self.ctx.recv.is_some() {
                return Err(TermCause::RDMAP_LOCAL_CATASTROPHIC);
            }
            if self.ctx.rtr_wait && h.opcode == Opcode::Send && h.last && h.payload_len == 0 {
                // RFC 6581 §5: the RTR is not delivered to the ULP.
                self.ctx.pending = Pending::RtrSend;
                self.ctx.seg = Seg::None;
                return Ok(());
            }
            // A WQE is taken only with a slot free for its completion
            // (`Sink::saturated` keeps `PER_FPDU` free at every FPDU's start):
            // without one the stream fails and the WQE stays in the RQ, for
            // the flush.
            if !self.room() {
                return Err(TermCause::DDP_LOCAL_CATASTROPHIC);
            }
            let wqe = match self.eng.qp.rq_take() {
                Ok(Some(w)) => w,
                // RFC 5041 §7.2: no receive buffer for the message.
                Ok(None) => return Err(TermCause::DDP_MSN_NO_BUFFER),
                // A user RQE the kernel refused: completed with its error
                // once the RX lock is released; the QP cannot go on.
                Err((wqe, status)) => {
                    self.complete_recv(wqe.wr_id, status, 0, WcFlags::NONE, 0, false)?;
                    return Err(TermCause::DDP_LOCAL_CATASTROPHIC);
                }
            };
            let buf =
                match Local::resolve(&self.eng.mems, self.pd(), wqe.sges(), Access::LOCAL_WRITE) {
                    Ok(b) => b,
                    Err(_) => {
                        self.complete_recv(
                            wqe.wr_id,
                            WcStatus::LocProtErr,
                            0,
                            WcFlags::NONE,
                            0,
                            false,
                        )?;
                        return Err(TermCause::DDP_LOCAL_CATASTROPHIC);
                    }
                };
            let imm = match h.rdmap {
                RdmapHeader::Immediate(v) => Some(v),
                _ => None,
            };
            self.ctx.recv = Some(Recv {
                wr_id: wqe.wr_id,
                buf,
                invalidate: h.invalidate_stag(),
                imm,
            });
        }
        let Some(r) = &self.ctx.recv else {
            return Err(TermCause::RDMAP_LOCAL_CATASTROPHIC);
        };
        // RFC 5041 §7.2: the message is longer than the receive buffer.
        let end = u64::from(mo) + u64::from(h.payload_len);
        if end > r.buf.total() {
            return Err(TermCause::DDP_MESSAGE_TOO_LONG);
        }
        self.ctx.seg = if h.payload_len > 0 {
            Seg::Recv
        } else {
            Seg::None
        };
        Ok(())
    }

    fn read_request(&mut self, h: &HeaderInfo) -> Result<(), TermCause> {
        let RdmapHeader::ReadRequest(r) = h.rdmap else {
            return Err(TermCause::RDMAP_UNSPECIFIED);
        };
        let src = if r.size == 0 {
            None
        } else {
            // RFC 5040 §7.1: the Data Source must be readable by the peer.
            Some(
                self.checked_mem(
                    r.source_stag,
                    r.source_to,
                    u64::from(r.size),
                    Access::REMOTE_READ,
                )
                .map_err(causes::remote)?,
            )
        };
        self.ctx.pending = Pending::Read(Inbound::Read {
            sink_stag: r.sink_stag,
            sink_to: r.sink_to,
            size: r.size,
            src,
            src_to: r.source_to,
        });
        Ok(())
    }

    fn atomic_request(&mut self, h: &HeaderInfo) -> Result<(), TermCause> {
        let RdmapHeader::AtomicRequest(a) = h.rdmap else {
            return Err(TermCause::RDMAP_UNSPECIFIED);
        };
        let mem = self
            .checked_mem(a.stag, a.to, 8, Access::REMOTE_ATOMIC)
            .map_err(causes::remote)?;
        // RFC 7306 §8.2: misaligned target; §5.2.1 rule 4: unknown AOpCode.
        if !crate::proto::atomic::is_aligned(a.to) {
            return Err(TermCause::RDMAP_CATASTROPHIC_STREAM);
        }
        let op = AtomicOp::decode(a.opcode, &a.fields, self.eng.params.dialect)
            .map_err(|_| TermCause::RDMAP_CATASTROPHIC_STREAM)?;
        self.ctx.pending = Pending::Atomic {
            mem,
            to: a.to,
            op,
            request_id: a.request_id,
        };
        Ok(())
    }

    fn atomic_response(&mut self, h: &HeaderInfo) -> Result<(), TermCause> {
        let RdmapHeader::AtomicResponse(r) = h.rdmap else {
            return Err(TermCause::RDMAP_UNSPECIFIED);
        };
        // Matched against the ORQ once the CRC passed (`atomic_response_end`).
        self.ctx.pending = Pending::AtomicResponse {
            request_id: r.request_id,
            original: r.original,
        };
        Ok(())
    }

    /// A Read Response segment passed its CRC.
    fn read_response_end(&mut self, len: u16, last: bool) -> Result<(), TermCause> {
        let mut s = self.eng.shared.lock();
        if let Some(Outbound::Read { placed, .. }) = s.orq.front_mut() {
            *placed = placed.saturating_add(u32::from(len));
        }
        if !last {
            return Ok(());
        }
        let Some(Outbound::Read {
            seq,
            placed,
            inv,
            size,
            ..
        }) = s.orq.pop_front()
        else {
            return Err(TermCause::RDMAP_UNEXPECTED_OPCODE);
        };
        drop(s);
        if placed != size {
            // RFC 5040 §4.4: the Read Response carries exactly the octets the
            // Read asked for. A shorter one leaves the sink's old contents:
            // the Read fails, it does not complete over stale data.
            if let Some(seq) = seq {
                self.eng.finish(seq, WcStatus::BadRespErr, Some(placed));
            }
            return Err(TermCause::RDMAP_CATASTROPHIC_STREAM);
        }
        let mut status = WcStatus::Success;
        if let Some(stag) = inv {
            // READ_WITH_INV: the sink STag is invalidated after the data.
            let ok = self.invalidate(stag);
            if !ok {
                status = WcStatus::LocProtErr;
            }
        }
        if let Some(seq) = seq {
            self.eng.finish(seq, status, Some(placed));
        }
        self.defer(Action::Reap)?;
        self.defer(Action::Resume)
    }

    /// An Atomic Response passed its CRC: it completes the oldest
    /// outstanding request, which must be the Atomic it names (RFC 7306
    /// §5.2.2 rule 7); one `shared` lock hold.
    fn atomic_response_end(&mut self, request_id: u32, original: u64) -> Result<(), TermCause> {
        let mut s = self.eng.shared.lock();
        if !matches!(s.orq.front_mut(), Some(Outbound::Atomic { request_id: id, .. }) if *id == request_id)
        {
            return Err(TermCause::RDMAP_UNEXPECTED_OPCODE);
        }
        let Some(Outbound::Atomic { seq, result, .. }) = s.orq.pop_front() else {
            return Err(TermCause::RDMAP_UNEXPECTED_OPCODE);
        };
        // The original value lands in the local buffer in host order (8
        // octets into pinned or kernel memory: no sleeping under the lock).
        let status = match result.write(original) {
            Ok(()) => WcStatus::Success,
            Err(_) => WcStatus::LocProtErr,
        };
        self.eng.qp.sq_finish(seq, status, Some(8));
        drop(s);
        // The buffer's region references go outside the lock.
        drop(result);
        self.defer(Action::Reap)?;
        self.defer(Action::Resume)
    }

    /// The last segment of a Send or Immediate Data message passed its CRC.
    fn recv_end(&mut self, opcode: Opcode, mo: u32, len: u16) -> Result<(), TermCause> {
        // Without a slot for the completion the WQE stays in progress: the
        // stream fails and `rx_failed` completes it (never, while the room
        // checks hold).
        if !self.room() {
            return Err(TermCause::RDMAP_LOCAL_CATASTROPHIC);
        }
        let Some(r) = self.ctx.recv.take() else {
            return Err(TermCause::RDMAP_LOCAL_CATASTROPHIC);
        };
        let total = mo
            .checked_add(u32::from(len))
            .ok_or(TermCause::DDP_MESSAGE_TOO_LONG)?;
        let mut flags = WcFlags::NONE;
        let mut ex = 0;
        let mut result = Ok(());
        if let Some(stag) = r.invalidate {
            // RFC 5040 §5.1 / §7.1: Send with Invalidate.
            let ok = self.invalidate(stag);
            if ok {
                flags = WcFlags::WITH_INV;
                ex = u64::from(stag);
            } else {
                result = Err(TermCause::RDMAP_PROT_CANNOT_INVALIDATE);
            }
        }
        if let Some(imm) = r.imm {
            flags = WcFlags::WITH_IMM;
            ex = imm;
        }
        let status = if result.is_ok() {
            WcStatus::Success
        } else {
            WcStatus::RemAccessErr
        };
        self.complete_recv(r.wr_id, status, total, flags, ex, opcode.solicited())?;
        result
    }
}

impl RxSink for Sink<'_> {
    fn header(&mut self, h: &HeaderInfo) -> Result<(), TermCause> {
        self.ctx.seg = Seg::None;
        self.ctx.pending = Pending::None;
        // The QP's own remote rights (IBA 10.2.4), before any region's:
        // RFC 5040 §7.1 Remote Protection Error, Access Rights Violation.
        let need = match h.opcode {
            Opcode::Write => Some(Access::REMOTE_WRITE),
            Opcode::ReadRequest => Some(Access::REMOTE_READ),
            Opcode::AtomicRequest => Some(Access::REMOTE_ATOMIC),
            _ => None,
        };
        if let Some(need) = need {
            // A zero-length Write is the RFC 6581 RTR: no access at all.
            let rtr = h.opcode == Opcode::Write && h.payload_len == 0;
            if !rtr && !self.eng.qp.remote_allowed(need, true) {
                return Err(TermCause::RDMAP_ACCESS_RIGHTS);
            }
        }
        match (h.opcode, h.ddp) {
            (Opcode::Write, Buffer::Tagged { stag, to }) => {
                self.tagged_sink(stag, to, h.payload_len, Access::REMOTE_WRITE)
            }
            (Opcode::ReadResponse, Buffer::Tagged { stag, to }) => {
                self.read_response(stag, to, h.payload_len)
            }
            (
                Opcode::Send
                | Opcode::SendSe
                | Opcode::SendInvalidate
                | Opcode::SendSeInvalidate
                | Opcode::ImmediateData
                | Opcode::ImmediateDataSe,
                Buffer::Untagged { mo, .. },
            ) => self.untagged(h, mo),
            (Opcode::ReadRequest, _) => self.read_request(h),
            (Opcode::AtomicRequest, _) => self.atomic_request(h),
            (Opcode::AtomicResponse, _) => self.atomic_response(h),
            (Opcode::Terminate, _) => {
                if let RdmapHeader::Terminate(t) = h.rdmap {
                    self.ctx.pending = Pending::Terminate(t.cause);
                }
                Ok(())
            }
            _ => Err(TermCause::RDMAP_UNEXPECTED_OPCODE),
        }
    }

    fn payload(&mut self, data: &[u8], at: Placement) -> Result<(), TermCause> {
        match (&self.ctx.seg, at) {
            // A region invalidated or registered anew since the segment's
            // header was checked is not written: the message ends with the
            // Terminate for an invalid STag (RFC 5041 §7.2).
            (Seg::Tagged(mem), Placement::Tagged { to, .. }) => {
                mem.write(to, data).map_err(causes::tagged)
            }
            (Seg::Recv, Placement::Untagged { mo, .. }) => self
                .ctx
                .recv
                .as_ref()
                .ok_or(TermCause::DDP_LOCAL_CATASTROPHIC)?
                .buf
                .write(u64::from(mo), data)
                .map_err(|_| TermCause::DDP_LOCAL_CATASTROPHIC),
            _ => Err(TermCause::DDP_LOCAL_CATASTROPHIC),
        }
    }

    fn segment_end(&mut self, end: &SegmentEnd) -> Result<(), TermCause> {
        self.eng.ctr.fpdu_rcvd(end.opcode, end.last);
        let bulk = end.payload_len >= BULK_PAYLOAD;
        if self.eng.rx_bulk.load(Ordering::Relaxed) != bulk {
            self.eng.rx_bulk.store(bulk, Ordering::Relaxed);
        }
        self.ctx.seg = Seg::None;
        let pending = core::mem::replace(&mut self.ctx.pending, Pending::None);
        let r = match (end.opcode, end.ddp) {
            (Opcode::Write, _) => Ok(()),
            (Opcode::ReadResponse, _) => self.read_response_end(end.payload_len, end.last),
            (_, Buffer::Untagged { qn: 0, mo, .. }) if matches!(pending, Pending::RtrSend) => {
                let _ = mo;
                Ok(())
            }
            (_, Buffer::Untagged { qn: 0, mo, .. }) if end.last => {
                self.recv_end(end.opcode, mo, end.payload_len)
            }
            (_, Buffer::Untagged { qn: 0, .. }) => Ok(()),
            _ => self.commit(pending),
        };
        // RFC 6581: the first message from the initiator opens the responder's TX.
        if self.ctx.rtr_wait {
            self.ctx.rtr_wait = false;
            self.eng.shared.lock().rtr_wait = false;
            self.defer(Action::Kick)?;
        }
        r
    }

    fn saturated(&self) -> bool {
        self.deferred.n + PER_FPDU > DEFER
    }
}

impl Sink<'_> {
    /// Commits a request that carried no payload.
    fn commit(&mut self, pending: Pending) -> Result<(), TermCause> {
        match pending {
            Pending::Read(req) => {
                let pushed = {
                    let mut s = self.eng.shared.lock();
                    // RFC 5040 §6.5: at most IRD inbound requests, counting
                    // the one TX may be answering.
                    if !self.eng.inbound_room() {
                        Err(req)
                    } else {
                        let r = s.irq.push(req);
                        if r.is_ok() {
                            self.eng.inbound.fetch_add(1, Ordering::AcqRel);
                        }
                        r
                    }
                };
                // A refused request's region reference drops outside the lock.
                pushed.map_err(|_| TermCause::DDP_MSN_NO_BUFFER)?;
                self.defer(Action::Kick)
            }
            Pending::Atomic {
                mem,
                to,
                op,
                request_id,
            } => {
                {
                    let mut s = self.eng.shared.lock();
                    // RFC 7306 §5.2.2 rule 4: at most IRD inbound Reads and
                    // Atomics; a request beyond it leaves memory untouched.
                    if !self.eng.inbound_room() {
                        return Err(TermCause::DDP_MSN_NO_BUFFER);
                    }
                    // RFC 7306 §5.3: atomic against every other access to
                    // the word (a 64-bit cmpxchg; no sleep under the lock).
                    let original =
                        mem.atomic64(to, &|old| op.apply(old).new)
                            .map_err(|e| match e {
                                MemError::Fault => TermCause::RDMAP_CATASTROPHIC_STREAM,
                                e => causes::remote(e),
                            })?;
                    // Cannot fail: checked for room above, in the same hold.
                    s.irq
                        .push(Inbound::AtomicResponse {
                            request_id,
                            original,
                        })
                        .map_err(|_| TermCause::DDP_MSN_NO_BUFFER)?;
                    self.eng.inbound.fetch_add(1, Ordering::AcqRel);
                }
                // The region reference drops outside the lock.
                drop(mem);
                self.defer(Action::Kick)
            }
            Pending::Terminate(cause) => {
                self.ctx.dead = true;
                self.defer(Action::PeerTerminate(cause))
            }
            Pending::AtomicResponse {
                request_id,
                original,
            } => self.atomic_response_end(request_id, original),
            Pending::RtrSend | Pending::None => Ok(()),
        }
    }
}

impl Engine {
    /// `StreamConsumer::rx` (softirq, or the work item for a bulk the
    /// softirq left to it; socket lock held): parses and places
    /// everything; returns the octets of all `pieces`. The pieces are
    /// consecutive parts of a received `sk_buff` (its linear part and its
    /// fragments): the payload in them is copied once, straight into the
    /// target pages, under one RX lock hold for all of them unless the
    /// completions they cause fill the deferred queue (`Sink::saturated`:
    /// the parser stops at an FPDU boundary, the queue is run, and the rest
    /// follows under a new hold). The queued actions run without the RX lock
    /// (they complete WQEs and start TX, which take other locks), in order.
    pub(super) fn rx(self: &Arc<Self>, pieces: &[&[u8]]) -> usize {
        let total = pieces.iter().fold(0usize, |t, p| t.saturating_add(p.len()));
        self.ctr.add(Counter::RcvdOctets, total as u64);
        let mut deferred = Deferred::new();
        let mut next = pieces.iter();
        let mut rest: &[u8] = &[];
        loop {
            let (failed, stop, parked) = {
                let mut st = self.rx.lock();
                let RxState { parser, ctx } = &mut *st;
                let mut out = (None, true, None);
                loop {
                    if rest.is_empty() {
                        match next.next() {
                            Some(p) => rest = p,
                            None => break,
                        }
                        continue;
                    }
                    if ctx.dead {
                        break;
                    }
                    let mut sink = Sink {
                        eng: self,
                        ctx: &mut *ctx,
                        deferred: &mut deferred,
                    };
                    match parser.feed_some(rest, rest.len(), &mut sink) {
                        // The actions queued before fill the queue and this
                        // piece goes on at an FPDU boundary: run them first.
                        Ok(0) if deferred.n > 0 => {
                            out.1 = false;
                            break;
                        }
                        // A saturated sink with an empty queue (cannot be:
                        // `DEFER` > `PER_FPDU`): fail the stream rather than
                        // spin or drop octets.
                        Ok(0) => {
                            ctx.dead = true;
                            let cause = TermCause::RDMAP_LOCAL_CATASTROPHIC;
                            let error = RxError {
                                terminate: TerminateRepr::new(cause),
                                reply: true,
                            };
                            out.0 = Some((error, ctx.recv.take()));
                            break;
                        }
                        Ok(n) => {
                            rest = rest.get(n..).unwrap_or(&[]);
                            if !rest.is_empty() {
                                // The deferred queue is full: run it first.
                                out.1 = false;
                                break;
                            }
                        }
                        Err(e) => {
                            ctx.dead = true;
                            out.0 = Some((e, ctx.recv.take()));
                            break;
                        }
                    }
                }
                out.2 = ctx.parked.take();
                out
            };
            self.run_actions(deferred.take());
            self.run_actions(parked.into_iter());
            if let Some((e, recv)) = failed {
                self.rx_failed(e, recv);
                break;
            }
            if stop {
                break;
            }
        }
        // A `break` under the lock may leave actions queued before it.
        self.run_actions(deferred.take());
        total
    }
}
