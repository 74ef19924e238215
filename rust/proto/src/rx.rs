// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Resumable receive parser for an MPA/DDP/RDMAP byte stream: FPDU framing, markers and
//! CRC (RFC 5044 §4-§5), DDP validation (RFC 5041 §7) and RDMAP validation (RFC 5040 §7,
//! RFC 7306 §8).
//!
//! # Driving it
//!
//! ```text
//! let mut rx = RxParser::new(SoftCrc32c, RxConfig { crc: true, markers: false, max_ulpdu: 65535 });
//! // for every chunk tcp_read_sock hands over, in stream order:
//! match rx.feed(chunk, &mut sink) {
//!     Ok(()) => {}                       // all of `chunk` consumed
//!     Err(e) => send_terminate(e.terminate), // stream is dead; later feeds return `e` again
//! }
//! ```
//!
//! The parser never allocates, never panics and never buffers payload: for each DDP
//! segment it calls, in order,
//! 1. [`RxSink::header`] once every header of the segment is in ([`HeaderInfo`]). The
//!    module validates STags/bounds or picks a receive buffer here, and returns
//!    `Err(cause)` to reject the segment (e.g. [`TermCause::DDP_INVALID_STAG`]);
//! 2. [`RxSink::payload`] zero or more times with payload octets straight from the
//!    input and where they belong ([`Placement`]): place them, but do not complete
//!    anything yet;
//! 3. [`RxSink::segment_end`] only after the MPA CRC of the FPDU was verified. This is
//!    where a message completes (on `last`).
//!
//! If a header is invalid, or the module rejects it, the stream ends as soon as the
//! header is in: DDP stops placing the segment and reports the error (RFC 5041 §7.1), so
//! a peer cannot announce 64 KiB, send the header and hold a refused segment open. A
//! CRC error is reported for a segment whose header was accepted. On any error `feed`
//! returns the Terminate (with the headers RFC 5040 §4.8 says to copy) and whether it
//! goes to the peer: never when the failing segment is itself a Terminate, which only
//! ends the stream (RFC 5040 §7.2, RFC 5041 §7.1: DDP drops what follows). The parser
//! stays dead. The module must then complete or flush every work request it touched
//! since the last `segment_end`, whatever the failing header said.

use super::crc::{crc32c_finish, Crc32c, CRC32C_INIT};
use super::ddp::{self, Buffer};
use super::fpdu::{self, Marker, MARKER_INTERVAL, MARKER_LEN};
use super::rdmap::{
    AtomicRequest, AtomicResponse, Control, Opcode, ReadRequest, IMMEDIATE_LEN, QN_TERMINATE,
    VERSION,
};
use super::terminate::{self, TermCause, TerminateRepr};

/// Negotiated stream parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RxConfig {
    /// Check the MPA CRC (RFC 5044 §4.4). The field is always present; when off it is
    /// ignored.
    pub crc: bool,
    /// The peer inserts markers (RFC 5044 §4.3). The first marker sits at the first
    /// octet of the first FPDU, then one every 512 octets.
    pub markers: bool,
    /// Longest ULPDU accepted.
    pub max_ulpdu: u16,
}

pub use super::rdmap::Header as RdmapHeader;

/// Everything the module needs to accept or reject a DDP segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderInfo {
    /// RDMAP opcode.
    pub opcode: Opcode,
    /// DDP L flag.
    pub last: bool,
    /// ULPDU_Length of the FPDU.
    pub ulpdu_len: u16,
    /// Octets of payload that follow the headers in this segment.
    pub payload_len: u16,
    /// DDP addressing (STag/TO, or QN/MSN/MO and the RsvdULP word).
    pub ddp: Buffer,
    /// The RDMAP header, parsed.
    pub rdmap: RdmapHeader,
}

impl HeaderInfo {
    /// The Invalidate STag of a Send with Invalidate (RFC 5040 §4.3).
    pub fn invalidate_stag(&self) -> Option<u32> {
        match self.ddp {
            Buffer::Untagged { ulp_word, .. } if self.opcode.invalidates() => Some(ulp_word),
            _ => None,
        }
    }

    /// Whether this segment starts a message (always true for tagged segments, which
    /// carry no message offset; the module tracks Read Response progress itself).
    pub fn first(&self) -> bool {
        match self.ddp {
            Buffer::Untagged { mo, .. } => mo == 0,
            Buffer::Tagged { .. } => true,
        }
    }
}

/// Where a payload chunk goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Tagged buffer: STag and the TO of the chunk's first octet.
    Tagged {
        /// STag.
        stag: u32,
        /// Tagged offset of `data[0]`.
        to: u64,
    },
    /// Untagged buffer: queue, message and the message offset of the chunk's first octet.
    Untagged {
        /// QN.
        qn: u32,
        /// MSN.
        msn: u32,
        /// Message offset of `data[0]`.
        mo: u32,
    },
}

/// A DDP segment whose CRC checked out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentEnd {
    /// RDMAP opcode.
    pub opcode: Opcode,
    /// DDP L flag: the message is complete.
    pub last: bool,
    /// DDP addressing of the segment, as in its header.
    pub ddp: Buffer,
    /// Payload octets of the segment.
    pub payload_len: u16,
    /// Whether a CRC was checked (false when CRC was not negotiated).
    pub crc_checked: bool,
}

/// The module's side of the parser.
pub trait RxSink {
    /// All headers of a segment are in. `Err` rejects it and ends the stream.
    fn header(&mut self, hdr: &HeaderInfo) -> Result<(), TermCause>;
    /// Payload octets to place. `Err` (e.g. a local copy failure) ends the stream.
    fn payload(&mut self, data: &[u8], at: Placement) -> Result<(), TermCause>;
    /// The segment passed its CRC: commit it. `Err` ends the stream.
    fn segment_end(&mut self, end: &SegmentEnd) -> Result<(), TermCause>;
    /// The sink can take no further FPDU now (e.g. its queue of completions to
    /// deliver is full): [`RxParser::feed_some`] stops at the next FPDU boundary,
    /// the first one of the call included, and the caller feeds the rest later.
    /// Asked only at FPDU boundaries, so a sink that says false there has room
    /// for everything one FPDU may cause.
    fn saturated(&self) -> bool {
        false
    }
}

/// A fatal stream error: the Terminate that describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RxError {
    /// The Terminate header, with the copied headers RFC 5040 §4.8 asks for.
    pub terminate: TerminateRepr,
    /// Whether the Terminate goes to the peer. False when the failing segment is a
    /// Terminate itself (malformed, out of sequence): a received Terminate is never
    /// answered with one, it only ends the stream (RFC 5040 §7.2).
    pub reply: bool,
}

impl RxError {
    /// Layer, type and code.
    pub fn cause(&self) -> TermCause {
        self.terminate.cause
    }

    /// The Terminate to send, if any.
    pub fn reply(&self) -> Option<&TerminateRepr> {
        self.reply.then_some(&self.terminate)
    }

    fn bare(cause: TermCause) -> Self {
        Self {
            terminate: TerminateRepr::new(cause),
            reply: true,
        }
    }

    /// The error a segment raised at its header or payload: `seg` holds its octets
    /// from the DDP control octet on, `ulpdu_len` its ULPDU_Length.
    fn segment(cause: TermCause, ulpdu_len: u16, seg: &[u8]) -> Self {
        Self {
            terminate: TerminateRepr::for_segment(cause, ulpdu_len, seg),
            reply: !validate::claims_terminate(seg),
        }
    }
}

/// Length field, DDP header and the longest RDMAP header (Atomic Request; a Terminate's
/// ULPDU is at most 18 + 52 octets and fits too).
const MAX_HDR: usize = fpdu::LEN_FIELD + ddp::UNTAGGED_HDR_LEN + AtomicRequest::LEN;
/// Octets of the header buffer before the DDP header.
const L: usize = fpdu::LEN_FIELD;

/// Progress through the current FPDU, kept by every state.
#[derive(Debug, Clone, Copy)]
struct Fpdu {
    /// CRC register over everything so far, markers included.
    crc: u32,
    /// Octets since the first octet of ULPDU_Length, markers included.
    off: u32,
}

impl Fpdu {
    const fn new() -> Self {
        Self {
            crc: CRC32C_INIT,
            off: 0,
        }
    }
}

/// A validated segment: its header bytes (for a Terminate copy) and decoded fields.
#[derive(Debug, Clone, Copy)]
struct Seg {
    hdr: [u8; MAX_HDR],
    hdr_len: usize,
    ulpdu_len: u16,
    end: SegmentEnd,
}

impl Seg {
    fn error(&self, cause: TermCause) -> RxError {
        RxError::segment(
            cause,
            self.ulpdu_len,
            self.hdr.get(L..self.hdr_len).unwrap_or(&[]),
        )
    }
}

/// Parser state; every variant carries its own context.
#[derive(Debug, Clone, Copy)]
enum State {
    /// Collecting ULPDU_Length and all headers.
    Header {
        f: Fpdu,
        buf: [u8; MAX_HDR],
        have: usize,
    },
    /// Passing payload to the sink.
    Payload { f: Fpdu, seg: Seg, done: u16 },
    /// PAD and CRC of an accepted segment.
    Trailer {
        f: Fpdu,
        pad: usize,
        crc: [u8; fpdu::CRC_LEN],
        have: usize,
        seg: Seg,
    },
    /// The stream is dead.
    Dead(RxError),
    /// Placeholder while `step` owns the state (never seen outside it): cheaper
    /// to put in than a fresh header state.
    Stepping,
}

impl State {
    const fn fresh() -> Self {
        Self::Header {
            f: Fpdu::new(),
            buf: [0; MAX_HDR],
            have: 0,
        }
    }

    fn fpdu(&mut self) -> Option<&mut Fpdu> {
        match self {
            Self::Header { f, .. } | Self::Payload { f, .. } | Self::Trailer { f, .. } => Some(f),
            Self::Dead(_) | Self::Stepping => None,
        }
    }
}

/// Per untagged queue: what the next segment must say (RFC 5041 §5.3).
#[derive(Debug, Clone, Copy)]
struct Queue {
    /// Expected MSN; the first message is MSN 1.
    msn: u32,
    /// Expected MO: 0 between messages.
    mo: u32,
    /// Opcode of the message in progress, if a non-last segment was accepted.
    opcode: Option<Opcode>,
}

const QUEUES: usize = 4;

/// Marker position and a marker being read.
#[derive(Debug, Clone, Copy)]
struct MarkerRx {
    /// Stream octets before the next marker.
    until: usize,
    buf: [u8; MARKER_LEN],
    have: usize,
}

/// The receive parser. See the module docs.
#[derive(Debug, Clone)]
pub struct RxParser<C: Crc32c> {
    crc: C,
    cfg: RxConfig,
    queues: [Queue; QUEUES],
    marker: MarkerRx,
    state: State,
}

/// Octets of header wanted so far given what is in `buf[..have]`.
fn wanted(buf: &[u8], have: usize) -> usize {
    let at = |i: usize| buf.get(i).copied().unwrap_or(0);
    if have < L {
        return L;
    }
    let ulpdu = usize::from(u16::from_be_bytes([at(0), at(1)]));
    let mut want = L + 1;
    if have > L {
        let ctrl = at(L);
        want = L + ddp::header_len(ctrl);
        if have > L + 1 && ctrl & ddp::FLAG_T == 0 {
            let op = Control::parse(at(L + 1)).opcode;
            want += match op {
                Opcode::Terminate => ulpdu.saturating_sub(ddp::UNTAGGED_HDR_LEN),
                _ => op.fixed_header_len().unwrap_or(0),
            };
        }
    }
    want.min(L + ulpdu).min(MAX_HDR)
}

/// `start + len - 1` does not wrap (the last octet is addressable).
fn no_wrap_u64(start: u64, len: u64) -> bool {
    len == 0 || start.checked_add(len - 1).is_some()
}

impl<C: Crc32c> RxParser<C> {
    /// A parser at the start of full operation phase.
    pub fn new(crc: C, cfg: RxConfig) -> Self {
        Self {
            crc,
            cfg,
            queues: [Queue {
                msn: 1,
                mo: 0,
                opcode: None,
            }; QUEUES],
            marker: MarkerRx {
                until: 0,
                buf: [0; MARKER_LEN],
                have: 0,
            },
            state: State::fresh(),
        }
    }

    /// The error that killed the stream, if any.
    pub fn error(&self) -> Option<RxError> {
        match self.state {
            State::Dead(e) => Some(e),
            _ => None,
        }
    }

    /// Whether the stream is dead.
    pub fn is_dead(&self) -> bool {
        self.error().is_some()
    }

    /// Whether the parser sits between two FPDUs (nothing of a next FPDU read yet).
    pub fn at_boundary(&self) -> bool {
        matches!(self.state, State::Header { have: 0, .. }) && self.marker.have == 0
    }

    /// Feeds the next octets of the stream. On `Ok` all of `input` was consumed
    /// ([`RxSink::saturated`] is not asked).
    pub fn feed<S: RxSink>(&mut self, mut input: &[u8], sink: &mut S) -> Result<(), RxError> {
        while !input.is_empty() {
            let used = self.feed_inner(input, input.len(), sink, false)?;
            input = input.get(used..).unwrap_or(&[]);
        }
        Ok(())
    }

    /// Feeds at most `max` octets of `input` and returns how many it used. It
    /// stops early at an FPDU boundary when the next FPDU is not whole within
    /// the limit, so that the next call starts with it: a caller that feeds a
    /// long input in bounded pieces keeps them aligned to FPDUs and its FPDUs
    /// on the one-step path. It also stops at an FPDU boundary when the sink is
    /// [`RxSink::saturated`], before the first FPDU of the call too: then it
    /// returns 0 and the caller drains the sink before it feeds again.
    /// Otherwise it uses at least one octet if `input` and `max` are not empty.
    pub fn feed_some<S: RxSink>(
        &mut self,
        input: &[u8],
        max: usize,
        sink: &mut S,
    ) -> Result<usize, RxError> {
        self.feed_inner(input, max, sink, true)
    }

    /// [`Self::feed_some`], asking [`RxSink::saturated`] only if
    /// `honour_saturation`.
    fn feed_inner<S: RxSink>(
        &mut self,
        input: &[u8],
        max: usize,
        sink: &mut S,
        honour_saturation: bool,
    ) -> Result<usize, RxError> {
        let input = input.get(..max.min(input.len())).unwrap_or(&[]);
        let mut used = 0;
        while let Some(rest) = input.get(used..).filter(|r| !r.is_empty()) {
            if let State::Dead(e) = self.state {
                return Err(e);
            }
            let boundary = matches!(self.state, State::Header { have: 0, .. });
            // A sink that cannot take the actions of another FPDU is not
            // handed one, even as the first of this call: the caller has to
            // run what is queued first (a receive WQE taken could otherwise
            // not be completed).
            if boundary && honour_saturation && sink.saturated() {
                break;
            }
            if !self.cfg.markers && boundary {
                match self.whole_fpdu(rest, sink) {
                    Ok(n) => {
                        used += n;
                        continue;
                    }
                    // The next call can take the next FPDU whole if it fits the
                    // limit at all; one longer than the limit is cut anyway.
                    Err(announced) => {
                        if used > 0 && !matches!(announced, Some(n) if n > max) {
                            break;
                        }
                    }
                }
            }
            let mut limit = rest.len();
            if self.cfg.markers {
                if self.marker.until == 0 {
                    used += self.marker_bytes(rest);
                    continue;
                }
                limit = limit.min(self.marker.until);
            }
            let n = self.step(rest.get(..limit).unwrap_or(&[]), sink);
            if self.cfg.markers {
                self.marker.until = self.marker.until.saturating_sub(n);
            }
            if n == 0 && !matches!(self.state, State::Dead(_)) {
                // Unreachable: every live state needs at least one more octet.
                self.state = State::Dead(RxError::bare(TermCause::RDMAP_LOCAL_CATASTROPHIC));
            }
            used += n;
        }
        match self.state {
            State::Dead(e) => Err(e),
            _ => Ok(used),
        }
    }

    fn update_crc(&self, f: &mut Fpdu, data: &[u8]) {
        if self.cfg.crc && !data.is_empty() {
            f.crc = self.crc.update(f.crc, data);
        }
        f.off = f.off.saturating_add(data.len() as u32);
    }

    /// Reads marker octets; returns how many were used.
    fn marker_bytes(&mut self, input: &[u8]) -> usize {
        let m = &mut self.marker;
        let n = (MARKER_LEN - m.have).min(input.len());
        if let (Some(dst), Some(src)) = (m.buf.get_mut(m.have..m.have + n), input.get(..n)) {
            dst.copy_from_slice(src);
        }
        m.have += n;
        let at_start = matches!(self.state, State::Header { have: 0, .. });
        let do_crc = self.cfg.crc;
        if let (Some(f), Some(src)) = (self.state.fpdu(), input.get(..n)) {
            // RFC 5044 §4.4: the CRC covers the markers inside the FPDU.
            if do_crc {
                f.crc = self.crc.update(f.crc, src);
            }
        }
        if self.marker.have < MARKER_LEN {
            return n;
        }
        let got = Marker::parse(self.marker.buf).fpduptr;
        self.marker.have = 0;
        self.marker.until = MARKER_INTERVAL - MARKER_LEN;
        if let Some(f) = self.state.fpdu() {
            // A marker in front of an FPDU points at that FPDU (FPDUPTR 0); otherwise
            // it counts back to the ULPDU_Length field of the current one (§4.3).
            let expect = if at_start { 0 } else { f.off };
            if !at_start {
                f.off = f.off.saturating_add(MARKER_LEN as u32);
            }
            if u32::from(got) != expect {
                self.state = State::Dead(RxError::bare(TermCause::MPA_MARKER));
            }
        }
        n
    }

    /// Consumes a prefix of `input` in the current state and returns its length.
    fn step<S: RxSink>(&mut self, input: &[u8], sink: &mut S) -> usize {
        let state = core::mem::replace(&mut self.state, State::Stepping);
        let (next, used) = match state {
            State::Header {
                mut f,
                mut buf,
                mut have,
            } => {
                // As much of the headers as `input` holds, in one step: each
                // part read says how long the next is (length field, DDP
                // control, RDMAP opcode); one CRC call over all of it.
                let mut used = 0;
                loop {
                    let n = wanted(&buf, have)
                        .saturating_sub(have)
                        .min(input.len().saturating_sub(used));
                    if n == 0 {
                        break;
                    }
                    let src = input.get(used..used + n).unwrap_or(&[]);
                    if let Some(dst) = buf.get_mut(have..have + n) {
                        dst.copy_from_slice(src);
                    }
                    have += n;
                    used += n;
                }
                self.update_crc(&mut f, input.get(..used).unwrap_or(&[]));
                if have < wanted(&buf, have) {
                    (State::Header { f, buf, have }, used)
                } else {
                    (self.header_done(f, buf, have, sink), used)
                }
            }
            State::Payload { mut f, seg, done } => {
                let left = usize::from(seg.end.payload_len.saturating_sub(done));
                let n = left.min(input.len());
                let src = input.get(..n).unwrap_or(&[]);
                self.update_crc(&mut f, src);
                let at = match seg.end.ddp {
                    Buffer::Tagged { stag, to } => Placement::Tagged {
                        stag,
                        to: to.wrapping_add(u64::from(done)),
                    },
                    Buffer::Untagged { qn, msn, mo, .. } => Placement::Untagged {
                        qn,
                        msn,
                        mo: mo.wrapping_add(u32::from(done)),
                    },
                };
                let next = match sink.payload(src, at) {
                    // RFC 5041 §7.1: placement stops and the error is reported now.
                    Err(c) => State::Dead(seg.error(c)),
                    Ok(()) if n == left => Self::trailer(f, seg),
                    Ok(()) => State::Payload {
                        f,
                        seg,
                        done: done.saturating_add(n as u16),
                    },
                };
                (next, n)
            }
            State::Trailer {
                mut f,
                pad,
                mut crc,
                mut have,
                seg,
            } => {
                let n = (pad + fpdu::CRC_LEN - have).min(input.len());
                let bytes = input.get(..n).unwrap_or(&[]);
                // PAD octets still to come are covered by the CRC (one call).
                let pad_n = pad.saturating_sub(have).min(n);
                self.update_crc(&mut f, bytes.get(..pad_n).unwrap_or(&[]));
                have += pad_n;
                // Then the CRC octets (`have >= pad` once any is here).
                for &b in bytes.get(pad_n..).unwrap_or(&[]) {
                    if let Some(slot) = crc.get_mut(have.saturating_sub(pad)) {
                        *slot = b;
                    }
                    have += 1;
                }
                if have < pad + fpdu::CRC_LEN {
                    (
                        State::Trailer {
                            f,
                            pad,
                            crc,
                            have,
                            seg,
                        },
                        n,
                    )
                } else {
                    (self.trailer_done(f, crc, seg, sink), n)
                }
            }
            State::Dead(e) => (State::Dead(e), 0),
            // Unreachable: `feed` then marks the stream dead.
            State::Stepping => (State::Stepping, 0),
        };
        self.state = next;
        used
    }

    /// Enters the trailer at the end of the ULPDU. `off` counts the length field, the
    /// ULPDU and 4-octet markers, so `off % 4` is what the PAD completes (RFC 5044 §4.2).
    fn trailer(f: Fpdu, seg: Seg) -> State {
        State::Trailer {
            f,
            pad: ((4 - (f.off & 3)) & 3) as usize,
            crc: [0; fpdu::CRC_LEN],
            have: 0,
            seg,
        }
    }

    fn header_done<S: RxSink>(
        &mut self,
        f: Fpdu,
        buf: [u8; MAX_HDR],
        have: usize,
        sink: &mut S,
    ) -> State {
        let ulpdu_len = u16::from_be_bytes([buf[0], buf[1]]);
        let seg_bytes = buf.get(L..have).unwrap_or(&[]);
        // RFC 5041 §7.1: a refused header ends the stream now, not once the rest of
        // the ULPDU it announces has arrived.
        let reject = |cause| State::Dead(RxError::segment(cause, ulpdu_len, seg_bytes));
        let info = match self.validate(ulpdu_len, seg_bytes) {
            Ok(info) => info,
            Err(c) => return reject(c),
        };
        if let Err(c) = sink.header(&info) {
            return reject(c);
        }
        let seg = Seg {
            hdr: buf,
            hdr_len: have,
            ulpdu_len,
            end: SegmentEnd {
                opcode: info.opcode,
                last: info.last,
                ddp: info.ddp,
                payload_len: info.payload_len,
                crc_checked: self.cfg.crc,
            },
        };
        if info.payload_len == 0 {
            Self::trailer(f, seg)
        } else {
            State::Payload { f, seg, done: 0 }
        }
    }

    fn trailer_done<S: RxSink>(
        &mut self,
        f: Fpdu,
        crc: [u8; fpdu::CRC_LEN],
        seg: Seg,
        sink: &mut S,
    ) -> State {
        // RFC 5044 §4.4/§8: the segment is committed only after its CRC matched.
        if self.cfg.crc && crc32c_finish(f.crc) != u32::from_le_bytes(crc) {
            return State::Dead(RxError::bare(TermCause::MPA_CRC));
        }
        match self.accept(&seg.end, sink) {
            Ok(()) => State::fresh(),
            Err(c) => State::Dead(seg.error(c)),
        }
    }

    /// A segment passed its CRC: the queue moves on (RFC 5041 §5.3) and the sink
    /// commits it.
    fn accept<S: RxSink>(&mut self, end: &SegmentEnd, sink: &mut S) -> Result<(), TermCause> {
        if let Buffer::Untagged { qn, mo, .. } = end.ddp {
            if let Some(q) = self.queues.get_mut(qn as usize) {
                if end.last {
                    q.msn = q.msn.wrapping_add(1);
                    q.mo = 0;
                    q.opcode = None;
                } else {
                    q.mo = mo.wrapping_add(u32::from(end.payload_len));
                    q.opcode = Some(end.opcode);
                }
            }
        }
        sink.segment_end(end)
    }

    /// The common case, an FPDU that lies whole in `input` at an FPDU boundary
    /// (no markers): parsed straight from the input with one pass of the CRC,
    /// the state untouched. Makes the same sink calls, in the same order, with
    /// the same outcome as the state machine (the fuzz harness compares the
    /// two: whole and split input); returns the octets used, or (calling
    /// nothing) `Err` with the length of the FPDU announced, if its length
    /// field is in, when the state machine must take it.
    ///
    /// Every header octet is read once from `input`, into a copy that all
    /// decisions are made on: the input may be memory another party can still
    /// write (user pages spliced into a loopback socket), so a field read twice
    /// could say one thing to the bounds and another to the arithmetic after
    /// them (a ULPDU_Length that framed one FPDU and then padded another).
    fn whole_fpdu<S: RxSink>(
        &mut self,
        input: &[u8],
        sink: &mut S,
    ) -> Result<usize, Option<usize>> {
        let mut buf = [0u8; MAX_HDR];
        let copied = input.len().min(MAX_HDR);
        if let (Some(dst), Some(src)) = (buf.get_mut(..copied), input.get(..copied)) {
            dst.copy_from_slice(src);
        }
        if copied < L {
            return Err(None);
        }
        let ulpdu_len = u16::from_be_bytes([buf[0], buf[1]]);
        // Length field and ULPDU, then the PAD to a 4-octet boundary (RFC 5044 §4.2).
        let end = L + usize::from(ulpdu_len);
        let pad = fpdu::pad_len(ulpdu_len);
        let used = fpdu::fpdu_len(ulpdu_len);
        let Some(crc_field) = input.get(end + pad..used) else {
            return Err(Some(used));
        };
        let mut got = [0u8; fpdu::CRC_LEN];
        if crc_field.len() == got.len() {
            got.copy_from_slice(crc_field);
        }
        // The header octets the state machine would collect (all within `buf`:
        // `wanted` stops at `MAX_HDR` and at the ULPDU's end, which `input` holds).
        let mut have = L;
        loop {
            let w = wanted(&buf, have);
            if w <= have {
                break;
            }
            have = w;
        }
        let Some(seg_bytes) = buf.get(L..have) else {
            return Err(Some(used));
        };
        let info = self.validate(ulpdu_len, seg_bytes);
        if let Ok(i) = &info {
            // The state machine would read the trailer right after the payload:
            // the same place unless the headers disagree with ULPDU_Length.
            if have + usize::from(i.payload_len) != end {
                return Err(Some(used));
            }
        }
        let crc_ok = !self.cfg.crc || {
            // The headers as they were read, then payload and PAD.
            let Some(rest) = input.get(have..end + pad) else {
                return Err(Some(used));
            };
            let reg = self.crc.update(CRC32C_INIT, buf.get(..have).unwrap_or(&[]));
            crc32c_finish(self.crc.update(reg, rest)) == u32::from_le_bytes(got)
        };
        let reject = |cause| RxError::segment(cause, ulpdu_len, seg_bytes);
        let outcome = info.and_then(|info| {
            sink.header(&info)?;
            if info.payload_len > 0 {
                let at = match info.ddp {
                    Buffer::Tagged { stag, to } => Placement::Tagged { stag, to },
                    Buffer::Untagged { qn, msn, mo, .. } => Placement::Untagged { qn, msn, mo },
                };
                sink.payload(input.get(have..end).unwrap_or(&[]), at)?;
            }
            Ok(SegmentEnd {
                opcode: info.opcode,
                last: info.last,
                ddp: info.ddp,
                payload_len: info.payload_len,
                crc_checked: self.cfg.crc,
            })
        });
        // RFC 5041 §7.1: a refused header or payload is reported as such; RFC 5044
        // §4.4/§8: an accepted segment is committed only after its CRC matched.
        let result = match outcome {
            Err(c) => Err(reject(c)),
            Ok(_) if !crc_ok => Err(RxError::bare(TermCause::MPA_CRC)),
            Ok(e) => self.accept(&e, sink).map_err(reject),
        };
        if let Err(e) = result {
            self.state = State::Dead(e);
        }
        Ok(used)
    }
}

#[path = "rx_validate.rs"]
mod validate;

#[cfg(test)]
#[path = "rx_test.rs"]
mod test;
