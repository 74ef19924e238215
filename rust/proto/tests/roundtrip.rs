// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! TX framer output fed to the RX parser gives back every message, with and without CRC
//! and markers (RFC 5044 §4.3-§4.4), with MULPDUs small enough to force many segments.

mod common;

use common::{frame, run, run_with, Ev, Recorder};
use rsiw_proto::atomic::{AOpCode, AtomicFields};
use rsiw_proto::ddp::Buffer;
use rsiw_proto::fpdu::{self, Marker};
use rsiw_proto::rdmap::{AtomicRequest, AtomicResponse, Header, Opcode, ReadRequest};
use rsiw_proto::rx::{Placement, RxConfig};
use rsiw_proto::terminate::{TermCause, TerminateRepr};
use rsiw_proto::tx::{Piece, TxConfig, TxFramer, TxMessage};

/// Deterministic pseudo-random numbers (xorshift64*).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A mix of every opcode with payload lengths from 0 to a few KiB.
fn messages(rng: &mut Rng) -> Vec<(TxMessage, Vec<u8>)> {
    let mut msn = [1u32; 4];
    let mut out = Vec::new();
    for i in 0..40u32 {
        let len = match i % 5 {
            0 => 0,
            1 => rng.below(16) as u32,
            2 => 511 + rng.below(3) as u32,
            _ => rng.below(3000) as u32,
        };
        let payload: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        let mut next = |qn: usize| {
            msn[qn] += 1;
            msn[qn] - 1
        };
        let msg = match i % 9 {
            0 => TxMessage::tagged(Opcode::Write, rng.next() as u32, rng.next() >> 8, len),
            1 => TxMessage::tagged(Opcode::ReadResponse, 7, 0, len),
            2 => TxMessage::send(Opcode::Send, next(0), 0, len),
            3 => TxMessage::send(Opcode::SendSeInvalidate, next(0), 0x77, len),
            4 => {
                let rr = ReadRequest {
                    sink_stag: 1,
                    sink_to: 2,
                    size: len,
                    source_stag: 3,
                    source_to: 4,
                };
                TxMessage::untagged(Opcode::ReadRequest, next(1), 0, Header::ReadRequest(rr), 0)
            }
            5 => TxMessage::untagged(
                Opcode::ImmediateData,
                next(0),
                0,
                Header::Immediate(rng.next()),
                0,
            ),
            6 => {
                let r = AtomicRequest {
                    opcode: AOpCode::CmpSwap,
                    request_id: i,
                    stag: 5,
                    to: 8 * u64::from(i),
                    fields: AtomicFields::cmp_swap(rng.next(), rng.next()),
                };
                TxMessage::untagged(
                    Opcode::AtomicRequest,
                    next(1),
                    0,
                    Header::AtomicRequest(r),
                    0,
                )
            }
            7 => {
                let r = AtomicResponse {
                    request_id: i,
                    original: rng.next(),
                };
                TxMessage::untagged(
                    Opcode::AtomicResponse,
                    next(3),
                    0,
                    Header::AtomicResponse(r),
                    0,
                )
            }
            _ => TxMessage::send(Opcode::SendSe, next(0), 0, len),
        };
        let payload = if msg.opcode.fixed_header_len().is_some() {
            Vec::new()
        } else {
            payload
        };
        out.push((msg, payload));
    }
    out
}

/// Rebuilds messages from events: (opcode, rdmap header, payload, segments).
fn reassemble(ev: &[Ev]) -> Vec<(Opcode, Header, Vec<u8>, usize)> {
    let mut out = Vec::new();
    let mut cur: Option<(Opcode, Header, Vec<u8>, usize)> = None;
    for e in ev {
        match e {
            Ev::Header(h) => {
                let c = cur.get_or_insert((h.opcode, h.rdmap, Vec::new(), 0));
                assert_eq!(c.0, h.opcode);
                c.3 += 1;
            }
            Ev::Payload(_, d) => cur.as_mut().unwrap().2.extend_from_slice(d),
            Ev::End(end) if end.last => out.push(cur.take().unwrap()),
            Ev::End(_) => {}
            Ev::Error(e) => panic!("unexpected error {e:?}"),
        }
    }
    assert!(cur.is_none());
    out
}

#[test]
fn tx_to_rx_round_trip() {
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let msgs = messages(&mut rng);
    for crc in [false, true] {
        for markers in [false, true] {
            for mulpdu in [72u16, 100, 517, 1442, fpdu::mulpdu(9000, markers)] {
                let mut tx = TxFramer::new(TxConfig {
                    crc,
                    markers,
                    mulpdu,
                });
                let mut s = Vec::new();
                for (m, p) in &msgs {
                    s.extend(frame(&mut tx, m, p));
                }
                let cfg = RxConfig {
                    crc,
                    markers,
                    max_ulpdu: mulpdu,
                };
                // Feed in random chunks, as tcp_read_sock would.
                let mut chunks = Vec::new();
                let mut at = 0;
                while at < s.len() {
                    let n = (1 + rng.below(700) as usize).min(s.len() - at);
                    chunks.push(&s[at..at + n]);
                    at += n;
                }
                let ev = run_with(cfg, Recorder::default(), &chunks);
                let got = reassemble(&ev);
                assert_eq!(
                    got.len(),
                    msgs.len(),
                    "crc {crc} markers {markers} mulpdu {mulpdu}"
                );
                for ((m, p), (op, h, data, segs)) in msgs.iter().zip(&got) {
                    assert_eq!(*op, m.opcode);
                    assert_eq!(*h, m.rdmap);
                    assert_eq!(
                        data, p,
                        "{:?} crc {crc} markers {markers} mulpdu {mulpdu}",
                        m.opcode
                    );
                    let hdr = if m.opcode.tagged() { 14 } else { 18 };
                    let per = usize::from(mulpdu) - hdr;
                    assert_eq!(*segs, p.len().div_ceil(per).max(1));
                }
                assert_eq!(run(cfg, &s), ev, "chunking changed events");
            }
        }
    }
}

/// A message resumed at any offset with FPDUs of any size up to MULPDU (what the
/// module does after a partial send, and with large FPDUs): every split gives back
/// the same message, each payload octet placed at its own TO / MO, with and without
/// CRC and markers, up to the largest MULPDU a ULPDU_Length can carry.
#[test]
fn resumed_at_any_offset_round_trip() {
    let mut rng = Rng(0x0bad_cafe_f00d_0001);
    let mut msgs = messages(&mut rng);
    // Large payloads too, for MULPDUs beyond an MSS.
    let first_msn = 1 + msgs
        .iter()
        .filter(|(m, _)| matches!(m.ddp, Buffer::Untagged { qn: 0, .. }))
        .count() as u32;
    for (len, msn) in [65_535u32, 65_536, 200_001].into_iter().zip(first_msn..) {
        let p: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        msgs.push((TxMessage::tagged(Opcode::Write, 9, 1 << 40, len), p.clone()));
        msgs.push((TxMessage::send(Opcode::Send, msn, 0, len), p));
    }
    for crc in [false, true] {
        for markers in [false, true] {
            for mulpdu in [72u16, 517, 1454, 9000, 32_768, u16::MAX] {
                let mut tx = TxFramer::new(TxConfig {
                    crc,
                    markers,
                    mulpdu,
                });
                let mut s = Vec::new();
                let mut fpdus = Vec::new();
                for (m, p) in &msgs {
                    let mut off = 0u32;
                    let mut n = 0;
                    loop {
                        // A random cap, often below what MULPDU allows.
                        let cap = match rng.below(4) {
                            0 => u32::MAX,
                            1 => 1 + rng.below(64) as u32,
                            _ => 1 + rng.below(u64::from(tx.room(m, off)).max(1)) as u32,
                        };
                        let f = tx.fpdu_at(m, off, cap).expect("frameable");
                        assert_eq!(f.payload.start, off as usize);
                        assert!(f.payload.len() as u32 <= cap);
                        assert!(f.payload.len() as u32 <= tx.room(m, off));
                        assert_eq!(f.wire_len, f.pieces().map(|p| p.len()).sum::<usize>());
                        f.write(&rsiw_proto::crc::SoftCrc32c, p, |b| s.extend_from_slice(b))
                            .unwrap();
                        off = f.payload.end as u32;
                        n += 1;
                        if off >= m.payload_len {
                            break;
                        }
                    }
                    fpdus.push(n);
                }
                let cfg = RxConfig {
                    crc,
                    markers,
                    max_ulpdu: u16::MAX,
                };
                let ev = run(cfg, &s);
                let what = format!("crc {crc} markers {markers} mulpdu {mulpdu}");
                // Every payload octet lands at its own offset of the message.
                let mut placed: Vec<Vec<u8>> = Vec::new();
                let mut hdrs = Vec::new();
                let mut segs = Vec::new();
                let mut i = 0;
                let mut base_to = 0u64;
                for e in &ev {
                    match e {
                        Ev::Header(h) => {
                            if placed.len() == i {
                                placed.push(Vec::new());
                                hdrs.push((h.opcode, h.rdmap));
                                segs.push(0);
                                if let Buffer::Tagged { to, .. } = h.ddp {
                                    base_to = to;
                                }
                            }
                            segs[i] += 1;
                        }
                        Ev::Payload(at, d) => {
                            let off = match *at {
                                Placement::Tagged { to, .. } => (to - base_to) as usize,
                                Placement::Untagged { mo, .. } => mo as usize,
                            };
                            assert_eq!(off, placed[i].len(), "{what}: placement offset");
                            placed[i].extend_from_slice(d);
                        }
                        Ev::End(end) if end.last => i += 1,
                        Ev::End(_) => {}
                        Ev::Error(e) => panic!("{what}: unexpected error {e:?}"),
                    }
                }
                assert_eq!(placed.len(), msgs.len(), "{what}");
                for (j, (m, p)) in msgs.iter().enumerate() {
                    assert_eq!(hdrs[j], (m.opcode, m.rdmap), "{what}");
                    assert_eq!(&placed[j], p, "{what}: {:?} payload", m.opcode);
                    assert_eq!(segs[j], fpdus[j], "{what}: segments");
                }
            }
        }
    }
}

/// `fpdu_at` refuses an offset past the payload, a continuation of an empty
/// message and a cap of zero octets where octets remain.
#[test]
fn fpdu_at_refuses_bad_offsets() {
    use rsiw_proto::tx::TxError;
    let mut tx = TxFramer::new(TxConfig {
        crc: true,
        markers: false,
        mulpdu: 1454,
    });
    let m = TxMessage::tagged(Opcode::Write, 1, 0, 100);
    assert_eq!(tx.fpdu_at(&m, 101, 10).err(), Some(TxError::BadOffset));
    assert_eq!(tx.fpdu_at(&m, 100, 10).err(), Some(TxError::BadOffset));
    assert_eq!(tx.fpdu_at(&m, 50, 0).err(), Some(TxError::BadOffset));
    assert_eq!(tx.fpdu_at(&m, 50, 10).map(|f| f.payload), Ok(50..60));
    let empty = TxMessage::send(Opcode::Send, 1, 0, 0);
    assert_eq!(tx.fpdu_at(&empty, 0, 0).map(|f| f.payload), Ok(0..0));
    assert_eq!(tx.fpdu_at(&empty, 1, 0).err(), Some(TxError::BadOffset));
}

/// With markers, the wire holds one every 512 octets from the first FPDU on, whose
/// FPDUPTR counts back to the current FPDU's ULPDU_Length field (RFC 5044 §4.3).
#[test]
fn markers_on_the_wire() {
    let cfg = TxConfig {
        crc: true,
        markers: true,
        mulpdu: 1442,
    };
    let mut tx = TxFramer::new(cfg);
    let payload = vec![0x5a; 1000];
    let s = frame(
        &mut tx,
        &TxMessage::send(Opcode::Send, 1, 0, 1000),
        &payload,
    );
    // Marker, then the FPDU of 2 + 18 + 1000 + 2 PAD + 4 CRC octets, with a second marker
    // at 512 (508 octets after the length field at 4) and a third at 1024 (1020 after).
    assert_eq!(&s[..4], &[0, 0, 0, 0]);
    assert_eq!(&s[4..6], &1018u16.to_be_bytes());
    assert_eq!(&s[512..516], &Marker { fpduptr: 508 }.emit());
    assert_eq!(&s[1024..1028], &Marker { fpduptr: 1020 }.emit());
    assert_eq!(s.len(), 4 + 1024 + 8);
    // The next FPDU's leading marker would sit at 1536: none here, but the framer knows
    // its phase: a 500-octet FPDU next ends exactly there, then a marker with FPDUPTR 0.
    let s2 = frame(
        &mut tx,
        &TxMessage::send(Opcode::Send, 2, 0, 476),
        &[1; 476],
    );
    let s3 = frame(&mut tx, &TxMessage::send(Opcode::Send, 3, 0, 2), &[2; 2]);
    assert_eq!(s.len() + s2.len(), 1536);
    assert_eq!(&s3[..4], &[0, 0, 0, 0]);
    let all: Vec<u8> = [s.clone(), s2, s3].concat();
    let rx = RxConfig {
        crc: true,
        markers: true,
        max_ulpdu: 1442,
    };
    let ev = run(rx, &all);
    assert_eq!(ev.iter().filter(|e| matches!(e, Ev::End(_))).count(), 3);
    // RX strips markers: the payload comes back contiguous.
    assert_eq!(
        ev[1],
        Ev::Payload(
            Placement::Untagged {
                qn: 0,
                msn: 1,
                mo: 0
            },
            payload
        )
    );
    // Every split point gives the same events.
    for i in 0..=all.len() {
        assert_eq!(
            run_with(rx, Recorder::default(), &[&all[..i], &all[i..]]),
            ev,
            "split {i}"
        );
    }
}

/// The gather pieces cover the FPDU exactly, payload only by reference.
#[test]
fn pieces_reference_payload_by_range() {
    let mut tx = TxFramer::new(TxConfig {
        crc: true,
        markers: true,
        mulpdu: 1442,
    });
    let f = tx
        .frames(&TxMessage::send(Opcode::Send, 1, 0, 1000))
        .unwrap()
        .next()
        .unwrap();
    let pieces: Vec<Piece> = f.pieces().collect();
    assert_eq!(pieces[0], Piece::Marker([0; 4]));
    assert_eq!(pieces[1].len(), 20);
    assert_eq!(pieces[2], Piece::Payload(0..488));
    assert_eq!(pieces[3], Piece::Marker(Marker { fpduptr: 508 }.emit()));
    assert_eq!(pieces.last(), Some(&Piece::Crc));
    assert_eq!(pieces.iter().map(|p| p.len()).sum::<usize>(), f.wire_len);
    assert_eq!(f.payload, 0..1000);
}

#[test]
fn terminate_round_trip() {
    let seg = [0xc1u8, 0x40, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2];
    let t = TerminateRepr::for_segment(TermCause::DDP_INVALID_STAG, 16, &seg);
    let msg = TxMessage::untagged(Opcode::Terminate, 1, 0, Header::Terminate(t), 0);
    let s = common::frame1(
        TxConfig {
            crc: true,
            markers: false,
            mulpdu: 1442,
        },
        &msg,
        &[],
    );
    // DDP untagged header on QN 2, then `11 00 c0 00`, segment length 16, DDP header copy.
    assert_eq!(&s[20..26], &[0x11, 0x00, 0xc0, 0x00, 0x00, 0x10]);
    assert_eq!(&s[26..40], &seg[..14]);
    let ev = run(common::RX_CRC, &s);
    let Ev::Header(h) = ev[0] else {
        panic!("{ev:?}")
    };
    assert_eq!(h.rdmap, Header::Terminate(t));
    assert_eq!(
        h.ddp,
        Buffer::Untagged {
            ulp_word: 0,
            qn: 2,
            msn: 1,
            mo: 0
        }
    );
}

#[test]
fn framer_rejects_impossible_messages() {
    use rsiw_proto::tx::TxError;
    let mut tx = TxFramer::new(TxConfig {
        crc: true,
        markers: false,
        mulpdu: 18,
    });
    assert_eq!(
        tx.frames(&TxMessage::send(Opcode::Send, 1, 0, 1)).err(),
        Some(TxError::MulpduTooSmall)
    );
    assert!(tx.frames(&TxMessage::send(Opcode::Send, 1, 0, 0)).is_ok());
    assert_eq!(
        tx.frames(&TxMessage::tagged(Opcode::Send, 1, 0, 1)).err(),
        Some(TxError::BadMessage)
    );
    let mut m = TxMessage::send(Opcode::Send, 1, 0, 0);
    m.ddp = Buffer::Untagged {
        ulp_word: 0,
        qn: 1,
        msn: 1,
        mo: 0,
    };
    assert_eq!(tx.frames(&m).err(), Some(TxError::BadMessage));
}

/// A sink that is saturated after every segment end until the caller drains it:
/// `feed_some` then stops at each FPDU boundary (after at least one octet), never
/// inside an FPDU, and the events are those of an unbounded feed.
#[test]
fn a_saturated_sink_stops_the_parser_at_fpdu_boundaries() {
    use rsiw_proto::rx::{HeaderInfo, RxParser, RxSink, SegmentEnd};
    struct Saturating {
        rec: Recorder,
        ends: usize,
    }
    impl RxSink for Saturating {
        fn header(&mut self, h: &HeaderInfo) -> Result<(), TermCause> {
            self.rec.header(h)
        }
        fn payload(&mut self, d: &[u8], at: Placement) -> Result<(), TermCause> {
            self.rec.payload(d, at)
        }
        fn segment_end(&mut self, e: &SegmentEnd) -> Result<(), TermCause> {
            self.ends += 1;
            self.rec.segment_end(e)
        }
        fn saturated(&self) -> bool {
            self.ends > 0
        }
    }
    let mut rng = Rng(0x5a5a_0001_0002_0003);
    let msgs = messages(&mut rng);
    for (crc, markers) in [(false, false), (true, false), (true, true)] {
        let cfg = TxConfig {
            crc,
            markers,
            mulpdu: 517,
        };
        let mut tx = TxFramer::new(cfg);
        let mut s = Vec::new();
        let mut bounds = vec![0usize];
        for (m, p) in &msgs {
            for f in tx.frames(m).unwrap() {
                f.write(&rsiw_proto::crc::SoftCrc32c, p, |b| s.extend_from_slice(b))
                    .unwrap();
                bounds.push(s.len());
            }
        }
        let rcfg = RxConfig {
            crc,
            markers,
            max_ulpdu: u16::MAX,
        };
        let mut rx = RxParser::new(rsiw_proto::crc::SoftCrc32c, rcfg);
        let mut sink = Saturating {
            rec: Recorder::default(),
            ends: 0,
        };
        let mut at = 0;
        let mut calls = 0;
        while at < s.len() {
            let n = rx.feed_some(&s[at..], usize::MAX, &mut sink).unwrap();
            assert!(n > 0);
            at += n;
            calls += 1;
            if !markers {
                // Stopped where an FPDU ends (with markers, a marker may follow).
                assert!(
                    bounds.binary_search(&at).is_ok(),
                    "stopped inside an FPDU at {at}"
                );
            }
            assert!(sink.ends <= 1, "went on past a saturated sink");
            sink.ends = 0;
        }
        assert_eq!(calls, bounds.len() - 1, "crc {crc} markers {markers}");
        assert_eq!(sink.rec.evs, run(rcfg, &s));
    }
}
