// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Byte fixtures of every RDMAP message (RFC 5040 §4, RFC 7306 §5-§6) in MPA FPDUs
//! (RFC 5044 §4): byte-exact TX emit, RX parse, and RX at every split of the input.

mod common;

use common::{fpdu, frame1, run, run_with, Ev, Recorder, RX_CRC};
use rsiw_proto::atomic::{AOpCode, AtomicFields};
use rsiw_proto::ddp::Buffer;
use rsiw_proto::rdmap::{AtomicRequest, AtomicResponse, Header, Opcode, ReadRequest};
use rsiw_proto::rx::{HeaderInfo, Placement, RdmapHeader, SegmentEnd};
use rsiw_proto::terminate::{TermCause, TerminateRepr};
use rsiw_proto::tx::{TxConfig, TxFramer, TxMessage};

/// Send "hi", MSN 1, as a complete FPDU with its CRC (RFC 5044 Fig. 2, RFC 5041 Fig. 6).
/// The CRC trailer is `crc32c_finish(reg).to_le_bytes()`, as siw sends it.
static SEND_HI: [u8; 28] = [
    0x00, 0x14, // ULPDU_Length 20
    0x41, 0x43, // T=0 L=1 DV=1 | RV=1 Send
    0, 0, 0, 0, // RsvdULP
    0, 0, 0, 0, // QN 0
    0, 0, 0, 1, // MSN 1
    0, 0, 0, 0, // MO 0
    b'h', b'i', 0, 0, // payload, PAD
    0x0b, 0x3a, 0xb3, 0x92, // CRC
];

/// RDMA Write "hello" to STag 0x1234, TO 0x10000 (RFC 5041 Fig. 4/5).
const WRITE: &[u8] = &[
    0xc1, 0x40, 0, 0, 0x12, 0x34, 0, 0, 0, 0, 0, 1, 0, 0, b'h', b'e', b'l', b'l', b'o',
];
/// RDMA Read Response of 4 octets to STag 0x1001, TO 0xaabbcc00.
const READ_RESP: &[u8] = &[
    0xc1, 0x42, 0, 0, 0x10, 0x01, 0, 0, 0, 0, 0xaa, 0xbb, 0xcc, 0, 1, 2, 3, 4,
];
/// RDMA Read Request on QN 1 (RFC 5040 Fig. 9): sink 0x1001/0xaabbcc00, 4 octets,
/// source 0x2002/0x8000.
const READ_REQ: &[u8] = &[
    0x41, 0x41, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, //
    0, 0, 0x10, 0x01, 0, 0, 0, 0, 0xaa, 0xbb, 0xcc, 0, 0, 0, 0, 4, //
    0, 0, 0x20, 0x02, 0, 0, 0, 0, 0, 0, 0x80, 0,
];
/// Send with Invalidate of STag 0xabcd (RFC 5040 §4.3), 3 octets.
const SEND_INV: &[u8] = &[
    0x41, 0x44, 0, 0, 0xab, 0xcd, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 7, 8, 9,
];
/// Send with SE in two segments: 4 octets at MO 0 (L=0), 2 octets at MO 4 (L=1).
const SEND_SE_1: &[u8] = &[
    0x01, 0x45, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 2, 3, 4,
];
const SEND_SE_2: &[u8] = &[
    0x41, 0x45, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 4, 5, 6,
];
/// Terminate on QN 2 reporting an MPA CRC error (RFC 5040 Fig. 15: `20 02 00 00`).
const TERMINATE: &[u8] = &[
    0x41, 0x47, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0x20, 0x02, 0, 0,
];
/// Immediate Data with SE, 8 octets (RFC 7306 §6).
const IMMEDIATE: &[u8] = &[
    0x41, 0x49, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8,
];
/// Atomic FetchAdd request on QN 1 (RFC 7306 Fig. 4): id 9, STag 0x3003, TO 0x40,
/// add 1, add mask 0, compare data 0, compare mask all ones.
const ATOMIC_REQ: &[u8] = &[
    0x41, 0x4a, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, //
    0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0x30, 0x03, 0, 0, 0, 0, 0, 0, 0, 0x40, //
    0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, //
    0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
];
/// Atomic Response on QN 3 (RFC 7306 Fig. 6): id 9, original value 41.
const ATOMIC_RESP: &[u8] = &[
    0x41, 0x4b, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 41,
];

const TX: TxConfig = TxConfig {
    crc: true,
    markers: false,
    mulpdu: 1442,
};

struct Fixture {
    name: &'static str,
    ulpdus: &'static [&'static [u8]],
    msg: TxMessage,
    payload: &'static [u8],
    mulpdu: u16,
}

fn fixtures() -> Vec<Fixture> {
    let untagged = |op, msn, word, h, len| TxMessage::untagged(op, msn, word, h, len);
    let rr = ReadRequest {
        sink_stag: 0x1001,
        sink_to: 0xaabb_cc00,
        size: 4,
        source_stag: 0x2002,
        source_to: 0x8000,
    };
    let areq = AtomicRequest {
        opcode: AOpCode::FetchAdd,
        request_id: 9,
        stag: 0x3003,
        to: 0x40,
        fields: AtomicFields::fetch_add(1),
    };
    let aresp = AtomicResponse {
        request_id: 9,
        original: 41,
    };
    let f = |name, ulpdus, msg, payload: &'static [u8]| Fixture {
        name,
        ulpdus,
        msg,
        payload,
        mulpdu: TX.mulpdu,
    };
    vec![
        f(
            "write",
            &[WRITE],
            TxMessage::tagged(Opcode::Write, 0x1234, 0x10000, 5),
            b"hello",
        ),
        f(
            "read response",
            &[READ_RESP],
            TxMessage::tagged(Opcode::ReadResponse, 0x1001, 0xaabb_cc00, 4),
            &[1, 2, 3, 4],
        ),
        f(
            "read request",
            &[READ_REQ],
            untagged(Opcode::ReadRequest, 1, 0, Header::ReadRequest(rr), 0),
            &[],
        ),
        f(
            "send inv",
            &[SEND_INV],
            TxMessage::send(Opcode::SendInvalidate, 1, 0xabcd, 3),
            &[7, 8, 9],
        ),
        Fixture {
            mulpdu: 22,
            ..f(
                "send se 2 segments",
                &[SEND_SE_1, SEND_SE_2],
                TxMessage::send(Opcode::SendSe, 1, 0, 6),
                &[1, 2, 3, 4, 5, 6],
            )
        },
        f(
            "terminate",
            &[TERMINATE],
            untagged(
                Opcode::Terminate,
                1,
                0,
                Header::Terminate(TerminateRepr::new(TermCause::MPA_CRC)),
                0,
            ),
            &[],
        ),
        f(
            "immediate se",
            &[IMMEDIATE],
            untagged(
                Opcode::ImmediateDataSe,
                1,
                0,
                Header::Immediate(0x0102_0304_0506_0708),
                0,
            ),
            &[],
        ),
        f(
            "atomic request",
            &[ATOMIC_REQ],
            untagged(Opcode::AtomicRequest, 1, 0, Header::AtomicRequest(areq), 0),
            &[],
        ),
        f(
            "atomic response",
            &[ATOMIC_RESP],
            untagged(
                Opcode::AtomicResponse,
                1,
                0,
                Header::AtomicResponse(aresp),
                0,
            ),
            &[],
        ),
    ]
}

fn stream(fx: &Fixture) -> Vec<u8> {
    fx.ulpdus.iter().flat_map(|u| fpdu(u, true)).collect()
}

#[test]
fn golden_send_fpdu() {
    assert_eq!(fpdu(&SEND_HI[2..22], true), SEND_HI);
    let out = frame1(TX, &TxMessage::send(Opcode::Send, 1, 0, 2), b"hi");
    assert_eq!(out, SEND_HI);
    let ev = run(RX_CRC, &SEND_HI);
    let ddp = Buffer::Untagged {
        ulp_word: 0,
        qn: 0,
        msn: 1,
        mo: 0,
    };
    assert_eq!(
        ev,
        vec![
            Ev::Header(HeaderInfo {
                opcode: Opcode::Send,
                last: true,
                ulpdu_len: 20,
                payload_len: 2,
                ddp,
                rdmap: RdmapHeader::None,
            }),
            Ev::Payload(
                Placement::Untagged {
                    qn: 0,
                    msn: 1,
                    mo: 0
                },
                b"hi".to_vec()
            ),
            Ev::End(SegmentEnd {
                opcode: Opcode::Send,
                last: true,
                ddp,
                payload_len: 2,
                crc_checked: true,
            }),
        ]
    );
}

#[test]
fn tx_emits_fixture_bytes() {
    for fx in fixtures() {
        let cfg = TxConfig {
            mulpdu: fx.mulpdu,
            ..TX
        };
        assert_eq!(frame1(cfg, &fx.msg, fx.payload), stream(&fx), "{}", fx.name);
    }
}

#[test]
fn rx_parses_fixtures() {
    for fx in fixtures() {
        let ev = run(RX_CRC, &stream(&fx));
        let ends = ev.iter().filter(|e| matches!(e, Ev::End(_))).count();
        assert_eq!(ends, fx.ulpdus.len(), "{}: {ev:?}", fx.name);
        let placed: Vec<u8> = ev
            .iter()
            .filter_map(|e| match e {
                Ev::Payload(_, d) => Some(d.clone()),
                _ => None,
            })
            .flatten()
            .collect();
        assert_eq!(placed, fx.payload, "{}", fx.name);
        let Some(Ev::Header(h)) = ev.first() else {
            panic!("{}: no header", fx.name)
        };
        assert_eq!(h.opcode, fx.msg.opcode, "{}", fx.name);
        if fx.msg.rdmap != Header::None {
            assert_eq!(h.rdmap, fx.msg.rdmap, "{}", fx.name);
        }
    }
}

#[test]
fn rx_decodes_fields() {
    let ev = run(RX_CRC, &fpdu(SEND_INV, true));
    let Ev::Header(h) = ev[0] else { panic!() };
    assert_eq!(h.invalidate_stag(), Some(0xabcd));
    let ev = run(RX_CRC, &fpdu(WRITE, true));
    assert_eq!(
        ev[1],
        Ev::Payload(
            Placement::Tagged {
                stag: 0x1234,
                to: 0x10000
            },
            b"hello".to_vec()
        )
    );
    let ev = run(RX_CRC, &fpdu(IMMEDIATE, true));
    let Ev::Header(h) = ev[0] else { panic!() };
    assert_eq!(h.rdmap, RdmapHeader::Immediate(0x0102_0304_0506_0708));
    assert!(h.opcode.solicited());
    let ev = run(RX_CRC, &stream(&fixtures()[4]));
    assert_eq!(
        ev[4],
        Ev::Payload(
            Placement::Untagged {
                qn: 0,
                msn: 1,
                mo: 4
            },
            vec![5, 6]
        )
    );
}

/// Every split (and every pair of splits) gives the same events as one chunk.
#[test]
fn every_split_gives_identical_events() {
    for fx in fixtures() {
        let s = stream(&fx);
        let whole = run(RX_CRC, &s);
        for i in 0..=s.len() {
            let ev = run_with(RX_CRC, Recorder::default(), &[&s[..i], &s[i..]]);
            assert_eq!(ev, whole, "{} split at {i}", fx.name);
            for j in i..=s.len() {
                let ev = run_with(RX_CRC, Recorder::default(), &[&s[..i], &s[i..j], &s[j..]]);
                assert_eq!(ev, whole, "{} split at {i},{j}", fx.name);
            }
        }
        let bytes: Vec<&[u8]> = s.chunks(1).collect();
        assert_eq!(
            run_with(RX_CRC, Recorder::default(), &bytes),
            whole,
            "{} bytewise",
            fx.name
        );
    }
}

/// All fixtures back to back (MSNs per queue in order), split at every offset.
#[test]
fn concatenated_stream_every_split() {
    let mut tx = TxFramer::new(TX);
    let mut s = Vec::new();
    let mut msn = [1u32; 4];
    for fx in fixtures() {
        let mut m = fx.msg;
        if let Buffer::Untagged {
            qn, msn: ref mut n, ..
        } = m.ddp
        {
            *n = msn[qn as usize];
            msn[qn as usize] += 1;
        }
        s.extend(common::frame(&mut tx, &m, fx.payload));
    }
    let whole = run(RX_CRC, &s);
    assert!(
        !whole.iter().any(|e| matches!(e, Ev::Error(_))),
        "{whole:?}"
    );
    assert_eq!(whole.iter().filter(|e| matches!(e, Ev::End(_))).count(), 9);
    for i in 0..=s.len() {
        assert_eq!(
            run_with(RX_CRC, Recorder::default(), &[&s[..i], &s[i..]]),
            whole,
            "split {i}"
        );
    }
}
