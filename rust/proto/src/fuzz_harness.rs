// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Test oracles and fuzz entry points for the RFC 7306 ALU, the RFC 5044/6581 MPA
//! frames and the RX parser, shared by the unit tests and the cargo-fuzz targets.
//!
//! Test-only: the library declares it under `cfg(test)`, and the targets in `fuzz/`
//! include it with `#[path]` next to a `pub use rsiw_proto::*` so that the `crate::`
//! paths below resolve in both places. Each entry point takes arbitrary bytes, must
//! never panic except on a broken invariant, and asserts what a correct parser owes
//! its caller.

use crate::atomic::{self, AOpCode, AtomicError, AtomicFields, Dialect};
use crate::crc::SoftCrc32c;
use crate::crc::{crc32c_finish, Crc32c, CRC32C_INIT};
use crate::ddp::Buffer;
use crate::fpdu::{MARKER_INTERVAL, MARKER_LEN};
use crate::mpa::{self, Frame, FrameKind, FrameRepr, LocalParams, Revision, RtrSet};
use crate::rdmap::Opcode;
use crate::rx::{HeaderInfo, Placement, RxConfig, RxError, RxParser, RxSink, SegmentEnd};
use crate::terminate::TermCause;

/// RFC 7306 §5.1.1 FetchAdd pseudocode, transcribed statement by statement (bit-serial).
pub fn reference_fetch_add(original_remote_data_value: u64, add_data: u64, add_mask: u64) -> u64 {
    let mut bit_location: u64 = 1;
    let mut carry: u64 = 0;
    let mut remote_data_value: u64 = 0;
    for bit in 0..=63u32 {
        if bit != 0 {
            bit_location <<= 1;
        }
        let val1 = (original_remote_data_value & bit_location) >> bit;
        let val2 = (add_data & bit_location) >> bit;
        let mut sum = carry + val1 + val2;
        carry = (sum & 2) >> 1;
        sum &= 1;
        if sum != 0 {
            remote_data_value |= bit_location;
        }
        carry = u64::from(carry != 0 && (add_mask & bit_location) == 0);
    }
    remote_data_value
}

/// RFC 7306 §5.1.2 CmpSwap pseudocode, transcribed.
pub fn reference_cmp_swap(
    original_remote_data_value: u64,
    compare_data: u64,
    compare_mask: u64,
    swap_data: u64,
    swap_mask: u64,
) -> u64 {
    if ((compare_data ^ original_remote_data_value) & compare_mask) == 0 {
        (original_remote_data_value & !swap_mask) | (swap_data & swap_mask)
    } else {
        original_remote_data_value
    }
}

/// Reads a big-endian u64 at `at`, zero-padding past the end of `data`.
fn be64(data: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    for (i, out) in b.iter_mut().enumerate() {
        *out = data.get(at + i).copied().unwrap_or(0);
    }
    u64::from_be_bytes(b)
}

/// Fuzz entry for the ALU. Layout: AOpCode/dialect byte, then Add/Swap Data, Add/Swap
/// Mask, Compare Data, Compare Mask, original value and target address (8 bytes each,
/// big-endian as on the wire), then 8 bytes used to perturb the fields an opcode ignores.
pub fn atomic_one(data: &[u8]) {
    let sel = data.first().copied().unwrap_or(0);
    let op = AOpCode::from_bits(sel);
    let dialect = if sel & 0x10 != 0 {
        Dialect::Draft03
    } else {
        Dialect::Rfc7306
    };
    let f = AtomicFields {
        add_swap_data: be64(data, 1),
        add_swap_mask: be64(data, 9),
        compare_data: be64(data, 17),
        compare_mask: be64(data, 25),
    };
    let (orig, addr, noise) = (be64(data, 33), be64(data, 41), be64(data, 49));
    let got = atomic::execute(op, &f, dialect, addr, orig);
    if addr & 7 != 0 {
        assert_eq!(got, Err(AtomicError::Misaligned));
        return;
    }
    let ignored = match (op, dialect) {
        (AOpCode::FetchAdd, _) => {
            let new = reference_fetch_add(orig, f.add_swap_data, f.add_swap_mask);
            assert_eq!(
                got.map(|o| (o.original, o.new, o.write)),
                Ok((orig, new, true))
            );
            AtomicFields {
                compare_data: noise,
                compare_mask: !noise,
                ..f
            }
        }
        (AOpCode::CmpSwap, _) => {
            let new = reference_cmp_swap(
                orig,
                f.compare_data,
                f.compare_mask,
                f.add_swap_data,
                f.add_swap_mask,
            );
            let hit = (f.compare_data ^ orig) & f.compare_mask == 0;
            assert_eq!(
                got.map(|o| (o.original, o.new, o.write)),
                Ok((orig, new, hit))
            );
            return;
        }
        (AOpCode::Swap, Dialect::Draft03) => {
            assert_eq!(got.map(|o| (o.new, o.write)), Ok((f.add_swap_data, true)));
            AtomicFields {
                add_swap_mask: noise,
                compare_data: !noise,
                compare_mask: noise,
                ..f
            }
        }
        _ => {
            assert_eq!(got, Err(AtomicError::UnsupportedOpcode(sel & 0xf)));
            return;
        }
    };
    // RFC 7306 Figure 5: fields marked N/A must not change anything.
    assert_eq!(atomic::execute(op, &ignored, dialect, addr, orig), got);
}

/// Local MPA parameters picked by the first two bytes of a fuzz input.
pub fn mpa_local(a: u8, b: u8) -> LocalParams {
    LocalParams {
        rev: if a & 1 != 0 {
            Revision::Rev1
        } else {
            Revision::Rev2
        },
        crc: a & 2 != 0,
        markers_rx: a & 4 != 0,
        markers_tx: a & 8 != 0,
        ird: u16::from(b & 0x0f) * 3,
        ord: u16::from(b >> 4) * 5,
        p2p: match a >> 4 {
            0 => None,
            bits => Some(RtrSet {
                send: bits & 1 != 0,
                write: bits & 2 != 0,
                read: bits & 4 != 0,
            }),
        },
        large_fpdu: a & 0x80 != 0,
    }
}

/// Emits `repr`, checks it parses back to itself, and returns the bytes.
fn round_trip(repr: &FrameRepr<'_>) -> Vec<u8> {
    let mut buf = vec![0u8; repr.buffer_len()];
    assert_eq!(repr.emit(&mut Frame::new_unchecked(&mut buf[..])), Ok(()));
    assert_eq!(FrameRepr::parse_bytes(&buf, repr.kind).as_ref(), Ok(repr));
    buf
}

/// Fuzz entry for MPA setup. Bytes 0 and 1 choose the local parameters
/// ([`mpa_local`]), the rest is a Request or Reply as received from the peer.
pub fn mpa_one(data: &[u8]) {
    let local = mpa_local(
        data.first().copied().unwrap_or(0),
        data.get(1).copied().unwrap_or(0),
    );
    let wire = data.get(2..).unwrap_or(&[]);
    let len = mpa::frame_len(wire);
    if let Ok(Some(n)) = len {
        assert!((mpa::HEADER_LEN..=mpa::MAX_FRAME_LEN).contains(&n));
    }
    for kind in [FrameKind::Request, FrameKind::Reply] {
        let Ok(repr) = FrameRepr::parse_bytes(wire, kind) else {
            continue;
        };
        // A frame parses only when it is complete, and only as what its key says.
        let n = match len {
            Ok(Some(n)) => n,
            other => panic!("parsed a frame that frame_len calls {other:?}"),
        };
        assert_eq!(repr.buffer_len(), n);
        let emitted = round_trip(&repr);
        // Everything but the flags byte (reserved bits are not re-emitted) is copied.
        assert_eq!(emitted.get(..16), wire.get(..16));
        assert_eq!(emitted.get(17..n), wire.get(17..n));
        match kind {
            FrameKind::Request => check_respond(&local, &repr),
            FrameKind::Reply => check_complete(&local, &repr),
        }
    }
}

/// Responder side: a Reply we build must parse, and the initiator must agree with it.
fn check_respond(local: &LocalParams, req: &FrameRepr<'_>) {
    let Ok((reply, r)) = mpa::respond(local, req, b"pd") else {
        return;
    };
    let bytes = round_trip(&reply);
    let Ok(reply) = FrameRepr::parse_bytes(&bytes, FrameKind::Reply) else {
        unreachable!()
    };
    let peer = LocalParams {
        markers_tx: true,
        ..*local
    };
    if let Ok(i) = mpa::complete(&peer, req, &reply) {
        assert_eq!((i.crc, i.rev, i.rtr), (r.crc, r.rev, r.rtr));
        // Large FPDUs flow only where both ends asked for them, and both agree.
        assert_eq!(i.large_fpdu_tx, r.large_fpdu_tx);
        assert!(!r.large_fpdu_tx || (req.large_fpdu && local.large_fpdu));
        // An RTR Read needs an inbound Read slot at the responder.
        assert!(r.rtr != Some(mpa::Rtr::Read) || r.ird >= 1, "{r:?}");
        if req.ird_ord.is_some() && reply.ird_ord.is_some() {
            assert!(
                i.ord <= r.ird && r.ord <= i.ird,
                "{req:?} {reply:?} {i:?} {r:?}"
            );
        }
    }
}

/// Initiator side: whatever Reply arrives, the agreed depths never exceed what we sent.
fn check_complete(local: &LocalParams, reply: &FrameRepr<'_>) {
    let sent = mpa::request(local, &[]);
    if let Ok(p) = mpa::complete(local, &sent, reply) {
        // An RFC peer (no large-FPDU bit) is never sent a large FPDU.
        assert!(!p.large_fpdu_tx || (local.large_fpdu && reply.large_fpdu_ack));
    }
    if let (Ok(p), Some(block)) = (mpa::complete(local, &sent, reply), sent.ird_ord) {
        if reply.rev == Revision::Rev2 {
            assert!(p.ird <= block.ird && p.ord <= block.ord, "{reply:?} {p:?}");
        }
    }
}

/// What an [`RxSink`] saw, with adjacent payload chunks of one segment merged so that
/// logs do not depend on where the input was split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RxEvent {
    /// [`RxSink::header`].
    Header(HeaderInfo),
    /// [`RxSink::payload`] calls, merged.
    Payload(Placement, Vec<u8>),
    /// [`RxSink::segment_end`].
    End(SegmentEnd),
}

/// A sink that records events and checks the parser's promises to the module.
/// It rejects tagged segments whose STag ends in 0xEE, to exercise the reject path.
#[derive(Debug, Default)]
pub struct RxRecorder {
    /// Everything seen, in order.
    pub log: Vec<RxEvent>,
    /// Header of the open segment and payload octets delivered for it.
    open: Option<(HeaderInfo, u16)>,
    /// CRC negotiated: every segment end must say it was checked.
    crc: bool,
    /// A header was refused: the stream must end there (RFC 5041 §7.1), with no
    /// further sink call and the refusal's own cause, not a later CRC error.
    refused: bool,
    /// Saturated once this many segments ended since the caller last drained
    /// it (0: never), as the module's queue of completions fills.
    saturate_after: usize,
    /// Segments ended since the last drain.
    ends: usize,
}

/// Whether `at` is where octet `done` of a segment with addressing `ddp` belongs.
fn placed_at(at: &Placement, ddp: &Buffer, done: u16) -> bool {
    let done = u64::from(done);
    match (*at, *ddp) {
        (Placement::Tagged { stag, to }, Buffer::Tagged { stag: s, to: t }) => {
            stag == s && u128::from(to) == (u128::from(t) + u128::from(done)) % (1 << 64)
        }
        (
            Placement::Untagged { qn, msn, mo },
            Buffer::Untagged {
                qn: q,
                msn: m,
                mo: o,
                ..
            },
        ) => (qn, msn) == (q, m) && u64::from(mo) == (u64::from(o) + done) % (1 << 32),
        _ => false,
    }
}

impl RxSink for RxRecorder {
    fn header(&mut self, hdr: &HeaderInfo) -> Result<(), TermCause> {
        assert!(!self.refused, "header {hdr:?} after a refused header");
        assert!(self.open.is_none(), "header {hdr:?} inside an open segment");
        assert!(hdr.payload_len <= hdr.ulpdu_len);
        self.log.push(RxEvent::Header(*hdr));
        if matches!(hdr.ddp, Buffer::Tagged { stag, .. } if stag & 0xff == 0xEE) {
            self.refused = true;
            return Err(TermCause::DDP_INVALID_STAG);
        }
        self.open = Some((*hdr, 0));
        Ok(())
    }

    fn payload(&mut self, data: &[u8], at: Placement) -> Result<(), TermCause> {
        assert!(!self.refused, "payload after a refused header");
        let Some((hdr, done)) = self.open.as_mut() else {
            panic!("payload outside a segment")
        };
        // Chunks arrive in order, where the header says they belong, never past its end.
        assert!(
            placed_at(&at, &hdr.ddp, *done),
            "{at:?} at {done} of {hdr:?}"
        );
        let total = usize::from(*done) + data.len();
        assert!(total <= usize::from(hdr.payload_len), "{total} > {hdr:?}");
        *done = total as u16;
        if let Some(RxEvent::Payload(_, bytes)) = self.log.last_mut() {
            bytes.extend_from_slice(data);
        } else {
            self.log.push(RxEvent::Payload(at, data.to_vec()));
        }
        Ok(())
    }

    fn segment_end(&mut self, end: &SegmentEnd) -> Result<(), TermCause> {
        let Some((hdr, done)) = self.open.take() else {
            panic!("segment end without a header")
        };
        assert_eq!(
            (end.payload_len, end.ddp, end.opcode, end.last),
            (done, hdr.ddp, hdr.opcode, hdr.last)
        );
        assert_eq!(end.crc_checked, self.crc);
        self.log.push(RxEvent::End(*end));
        self.ends += 1;
        Ok(())
    }

    fn saturated(&self) -> bool {
        self.saturate_after > 0 && self.ends >= self.saturate_after
    }
}

/// Stream parameters picked by the first byte of an RX fuzz input.
pub fn rx_config(b: u8) -> RxConfig {
    RxConfig {
        crc: b & 1 != 0,
        markers: b & 2 != 0,
        max_ulpdu: [u16::MAX, 4096, 1454, 64][usize::from(b >> 2) & 3],
    }
}

/// A fresh parser and a recorder expecting `cfg`'s CRC setting.
fn rx_start(cfg: RxConfig) -> (RxParser<SoftCrc32c>, RxRecorder) {
    let sink = RxRecorder {
        crc: cfg.crc,
        ..RxRecorder::default()
    };
    (RxParser::new(SoftCrc32c, cfg), sink)
}

/// Feeds `stream` in pieces of the given sizes (the last piece takes the rest) and
/// returns the log and the outcome; after an error, checks that the parser stays dead.
pub fn rx_run(
    cfg: RxConfig,
    stream: &[u8],
    sizes: impl Iterator<Item = usize>,
) -> (Vec<RxEvent>, Result<(), RxError>) {
    let (mut rx, mut sink) = rx_start(cfg);
    let mut rest = stream;
    let mut sizes = sizes;
    while !rest.is_empty() {
        let n = sizes.next().unwrap_or(rest.len()).clamp(1, rest.len());
        let (piece, tail) = rest.split_at(n);
        rest = tail;
        if let Err(e) = rx.feed(piece, &mut sink) {
            assert_eq!(rx.error(), Some(e));
            if sink.refused {
                assert_eq!(
                    e.cause(),
                    TermCause::DDP_INVALID_STAG,
                    "refusal reported late"
                );
                assert!(e.reply, "a refused Write is answered");
            }
            // Only a received Terminate (untagged, QN 2) goes unanswered (RFC 5040
            // §7.2), and only for what its header shows: a CRC error is the
            // frame's, and is answered.
            if !e.reply {
                assert!(e.cause() != TermCause::MPA_CRC, "{e:?}");
                assert!(e.reply().is_none());
            }
            let seen = sink.log.len();
            assert_eq!(
                rx.feed(b"more", &mut sink),
                Err(e),
                "a dead stream must stay dead"
            );
            assert_eq!(sink.log.len(), seen, "a dead stream must not call the sink");
            return (sink.log, Err(e));
        }
    }
    assert!(!rx.is_dead());
    (sink.log, Ok(()))
}

/// Fuzz entry for the RX parser. Byte 0 picks the stream parameters ([`rx_config`]),
/// byte 1 seeds the split points, the rest is the byte stream from the peer. The same
/// stream fed whole and fed in random pieces must give the same events and outcome.
pub fn rx_one(data: &[u8]) {
    let cfg = rx_config(data.first().copied().unwrap_or(0));
    let mut x = u32::from(data.get(1).copied().unwrap_or(0)) | 0x100;
    let stream = data.get(2..).unwrap_or(&[]);
    let whole = rx_run(cfg, stream, core::iter::empty());
    // A small LCG: piece sizes 1..=24, with the occasional large piece.
    let pieces = core::iter::from_fn(|| {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let r = (x >> 16) as usize;
        Some(if r & 7 == 0 { r % 2048 + 1 } else { r % 24 + 1 })
    });
    let split = rx_run(cfg, stream, pieces);
    assert_eq!(whole, split, "outcome depends on how the stream was split");
    // Bounded feeds as the module makes them (one lock hold each), limits 1..=700.
    let mut y = x;
    let limits = core::iter::from_fn(|| {
        y = y.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        Some((y >> 16) as usize % 700 + 1)
    });
    let limited = rx_run_limited(cfg, stream, limits);
    assert_eq!(whole, limited, "outcome depends on the feed_some limits");
    // Whole pieces fed to a sink whose queue fills after 1..=8 segments, as the
    // module feeds each received piece: the parser stops at FPDU boundaries only.
    let after = 1 + (x as usize >> 8) % 8;
    let saturating = rx_run_saturating(cfg, stream, after);
    assert_eq!(
        whole, saturating,
        "outcome depends on when the sink saturates"
    );
}

/// Feeds `stream` whole with [`RxParser::feed_some`] to a sink that saturates after
/// `after` segment ends; the caller drains it between calls, as the module runs its
/// deferred completions.
pub fn rx_run_saturating(
    cfg: RxConfig,
    stream: &[u8],
    after: usize,
) -> (Vec<RxEvent>, Result<(), RxError>) {
    let (mut rx, mut sink) = rx_start(cfg);
    sink.saturate_after = after;
    let mut rest = stream;
    while !rest.is_empty() {
        match rx.feed_some(rest, rest.len(), &mut sink) {
            Ok(n) => {
                assert!(n >= 1 && n <= rest.len(), "used {n} of {}", rest.len());
                // At most one segment ends past the point of saturation.
                assert!(sink.ends <= after.max(1), "fed past a saturated sink");
                rest = &rest[n..];
            }
            Err(e) => return (sink.log, Err(e)),
        }
        sink.ends = 0;
    }
    (sink.log, Ok(()))
}

/// Fuzz entry for the TX framer resumed at arbitrary offsets
/// ([`crate::tx::TxFramer::fpdu_at`]). Byte 0 picks CRC, markers and MULPDU, bytes
/// 1-4 the message (kind, payload length), the rest are the caps of successive
/// FPDUs. The message framed so must parse back to itself, each payload octet placed
/// at its own offset, and every FPDU must carry what its cap and MULPDU allow.
pub fn tx_one(data: &[u8]) {
    use crate::rdmap::{AtomicRequest, AtomicResponse, Header, ReadRequest};
    use crate::tx::{TxConfig, TxFramer, TxMessage};
    let b = |i: usize| data.get(i).copied().unwrap_or(0);
    let crc = b(0) & 1 != 0;
    let markers = b(0) & 2 != 0;
    let mulpdu = [u16::MAX, 9000, 1454, 517, 72, 64, 4096, 32_768][usize::from(b(0) >> 2) & 7];
    let len = u32::from(u16::from_be_bytes([b(2), b(3)])) * (1 + u32::from(b(4) & 3));
    let msg = match b(1) % 8 {
        0 => TxMessage::tagged(
            Opcode::Write,
            0x1234,
            (u64::MAX >> 1) - u64::from(b(4)),
            len,
        ),
        1 => TxMessage::tagged(Opcode::ReadResponse, 0x99, 1 << 40, len),
        2 => TxMessage::send(Opcode::Send, 1, 0, len),
        3 => TxMessage::send(Opcode::SendSeInvalidate, 1, 0xabcd, len),
        4 => TxMessage::untagged(
            Opcode::ReadRequest,
            1,
            0,
            Header::ReadRequest(ReadRequest {
                sink_stag: 1,
                sink_to: 2,
                size: len,
                source_stag: 3,
                source_to: 4,
            }),
            0,
        ),
        5 => TxMessage::untagged(
            Opcode::AtomicRequest,
            1,
            0,
            Header::AtomicRequest(AtomicRequest {
                opcode: AOpCode::FetchAdd,
                request_id: 7,
                stag: 5,
                to: 8,
                fields: AtomicFields::fetch_add(1),
            }),
            0,
        ),
        6 => TxMessage::untagged(
            Opcode::AtomicResponse,
            1,
            0,
            Header::AtomicResponse(AtomicResponse {
                request_id: 7,
                original: 9,
            }),
            0,
        ),
        _ => TxMessage::untagged(Opcode::ImmediateData, 1, 0, Header::Immediate(42), 0),
    };
    let payload: Vec<u8> = (0..msg.payload_len).map(|i| (i * 7 + 3) as u8).collect();
    let mut tx = TxFramer::new(TxConfig {
        crc,
        markers,
        mulpdu,
    });
    let mut caps = data.get(5..).unwrap_or(&[]).iter();
    let mut wire = Vec::new();
    let mut off = 0u32;
    let mut fpdus = 0usize;
    loop {
        let room = tx.room(&msg, off);
        let cap = match caps.next() {
            None | Some(0) => u32::MAX,
            Some(&c) => u32::from(c),
        };
        let f = match tx.fpdu_at(&msg, off, cap) {
            Ok(f) => f,
            Err(crate::tx::TxError::MulpduTooSmall) if off == 0 => return,
            Err(e) => panic!("{e:?} at {off} of {msg:?}"),
        };
        let left = msg.payload_len - off;
        assert_eq!(f.payload.len() as u32, left.min(room).min(cap));
        assert_eq!(f.payload.start, off as usize);
        assert_eq!(f.wire_len, f.pieces().map(|p| p.len()).sum::<usize>());
        let before = wire.len();
        f.write(&SoftCrc32c, &payload, |p| wire.extend_from_slice(p))
            .unwrap();
        assert_eq!(wire.len() - before, f.wire_len);
        fpdus += 1;
        off = f.payload.end as u32;
        if off >= msg.payload_len {
            break;
        }
    }
    let (log, outcome) = rx_run(
        RxConfig {
            crc,
            markers,
            max_ulpdu: u16::MAX,
        },
        &wire,
        core::iter::empty(),
    );
    assert_eq!(outcome, Ok(()), "{msg:?}");
    let mut got = Vec::new();
    let mut ends = 0;
    for e in &log {
        match e {
            RxEvent::Header(h) => {
                // Each FPDU addresses its own first octet (RFC 5041 §5).
                let done = got.len() as u64;
                match (h.ddp, msg.ddp) {
                    (Buffer::Tagged { to, .. }, Buffer::Tagged { to: t0, .. }) => {
                        assert_eq!(to, t0.wrapping_add(done));
                    }
                    (Buffer::Untagged { mo, .. }, Buffer::Untagged { .. }) => {
                        assert_eq!(u64::from(mo), done);
                    }
                    other => panic!("{other:?}"),
                }
                let first = ends == 0;
                let want = if first { msg.rdmap } else { Header::None };
                assert_eq!((h.opcode, h.rdmap), (msg.opcode, want));
            }
            RxEvent::Payload(_, d) => got.extend_from_slice(d),
            RxEvent::End(_) => ends += 1,
        }
    }
    assert_eq!(ends, fpdus);
    assert_eq!(got, payload);
}

/// Feeds `stream` with [`RxParser::feed_some`] under successive limits, as the module
/// does, and returns the log and the outcome.
pub fn rx_run_limited(
    cfg: RxConfig,
    stream: &[u8],
    mut limits: impl Iterator<Item = usize>,
) -> (Vec<RxEvent>, Result<(), RxError>) {
    let (mut rx, mut sink) = rx_start(cfg);
    let mut rest = stream;
    while !rest.is_empty() {
        let max = limits.next().unwrap_or(rest.len()).max(1);
        match rx.feed_some(rest, max, &mut sink) {
            Ok(n) => {
                assert!(n >= 1 && n <= max.min(rest.len()), "used {n} of {max}");
                rest = &rest[n..];
            }
            Err(e) => return (sink.log, Err(e)),
        }
    }
    (sink.log, Ok(()))
}

/// Builds a valid MPA/DDP/RDMAP byte stream as a peer would send it: FPDUs with PAD
/// and CRC (RFC 5044 §4), Markers every 512 octets if asked (RFC 5044 §4.3), and
/// per-queue MSNs starting at 1 (RFC 5041 §5.3). Used for seeds and the benchmark.
#[derive(Debug, Clone)]
pub struct StreamBuilder {
    /// The stream so far.
    pub out: Vec<u8>,
    crc: bool,
    markers: bool,
    msn: [u32; 4],
}

impl StreamBuilder {
    /// An empty stream; `crc` fills in real CRCs (zeros otherwise, which a receiver
    /// without CRC ignores).
    pub fn new(crc: bool, markers: bool) -> Self {
        Self {
            out: Vec::new(),
            crc,
            markers,
            msn: [1; 4],
        }
    }

    /// Inserts a Marker if the stream position is a multiple of 512; `fpdu_start` is
    /// the position of the current FPDU's length field. The FPDU's CRC covers it.
    fn marker_if_due(&mut self, fpdu_start: usize, crc: &mut u32) {
        if self.markers && self.out.len() & (MARKER_INTERVAL - 1) == 0 {
            let ptr = (self.out.len() - fpdu_start) as u16;
            let m = [0, 0, (ptr >> 8) as u8, ptr as u8];
            *crc = SoftCrc32c.update(*crc, &m);
            self.out.extend_from_slice(&m);
        }
    }

    /// Appends FPDU octets, with Markers where they are due.
    fn put(&mut self, bytes: &[u8], fpdu_start: usize, crc: &mut u32) {
        for &b in bytes {
            self.marker_if_due(fpdu_start, crc);
            *crc = SoftCrc32c.update(*crc, &[b]);
            self.out.push(b);
        }
    }

    /// Appends one FPDU carrying `ulpdu`.
    pub fn fpdu(&mut self, ulpdu: &[u8]) {
        let start = self.out.len();
        let mut crc = CRC32C_INIT;
        let len = ulpdu.len() as u16;
        self.put(&len.to_be_bytes(), start, &mut crc);
        // A marker due exactly at the FPDU start precedes it and points at it.
        let start = if self.markers && start & (MARKER_INTERVAL - 1) == 0 {
            start + MARKER_LEN
        } else {
            start
        };
        self.put(ulpdu, start, &mut crc);
        let pad = crate::fpdu::pad_len(len);
        self.put(&[0; 3][..pad], start, &mut crc);
        // A Marker just before the CRC field is inside the FPDU and covered; none can
        // fall within the field, which is 4-aligned like every Marker.
        self.marker_if_due(start, &mut crc);
        let value = if self.crc { crc32c_finish(crc) } else { 0 };
        self.out.extend_from_slice(&value.to_le_bytes());
    }

    /// Appends a tagged segment (RDMA Write or Read Response).
    pub fn tagged(&mut self, op: Opcode, last: bool, stag: u32, to: u64, payload: &[u8]) {
        let mut u = vec![0x81 | if last { 0x40 } else { 0 }, 0x40 | op.bits()];
        u.extend_from_slice(&stag.to_be_bytes());
        u.extend_from_slice(&to.to_be_bytes());
        u.extend_from_slice(payload);
        self.fpdu(&u);
    }

    /// Appends an untagged segment on `op`'s queue with the queue's current MSN.
    pub fn untagged(&mut self, op: Opcode, last: bool, ulp_word: u32, mo: u32, body: &[u8]) {
        let qn = op.queue().unwrap_or(0);
        let msn = self.msn.get(qn as usize).copied().unwrap_or(1);
        let mut u = vec![0x01 | if last { 0x40 } else { 0 }, 0x40 | op.bits()];
        for w in [ulp_word, qn, msn, mo] {
            u.extend_from_slice(&w.to_be_bytes());
        }
        u.extend_from_slice(body);
        self.fpdu(&u);
        if let (true, Some(m)) = (last, self.msn.get_mut(qn as usize)) {
            *m += 1;
        }
    }

    /// Appends a Send split into segments of at most `mss` payload octets.
    pub fn send(&mut self, payload: &[u8], mss: usize) {
        let n = payload.chunks(mss.max(1)).count().max(1);
        for (i, c) in payload.chunks(mss.max(1)).enumerate() {
            self.untagged(Opcode::Send, i + 1 == n, 0, (i * mss) as u32, c);
        }
        if payload.is_empty() {
            self.untagged(Opcode::Send, true, 0, 0, &[]);
        }
    }

    /// Appends an RDMA Write split into segments of at most `mss` payload octets.
    pub fn write(&mut self, stag: u32, to: u64, payload: &[u8], mss: usize) {
        let n = payload.chunks(mss.max(1)).count();
        for (i, c) in payload.chunks(mss.max(1)).enumerate() {
            self.tagged(Opcode::Write, i + 1 == n, stag, to + (i * mss) as u64, c);
        }
    }
}

#[cfg(test)]
#[path = "fuzz_test.rs"]
mod test;
