// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Tests of MPA Request/Reply frames (RFC 5044 §7.1, RFC 6581): fixtures, every
//! malformed case, and the negotiation.

use super::*;

/// The key bytes printed in RFC 5044 §7.1.1 Figure 12.
const RFC_KEY_REQ: [u8; 16] = [
    0x4D, 0x50, 0x41, 0x20, 0x49, 0x44, 0x20, 0x52, 0x65, 0x71, 0x20, 0x46, 0x72, 0x61, 0x6D, 0x65,
];
const RFC_KEY_REP: [u8; 16] = [
    0x4D, 0x50, 0x41, 0x20, 0x49, 0x44, 0x20, 0x52, 0x65, 0x70, 0x20, 0x46, 0x72, 0x61, 0x6D, 0x65,
];

/// Concatenates a key, the 4 bytes after it and the private data.
fn frame(key: &[u8; 16], word: [u8; 4], pd: &[u8]) -> Vec<u8> {
    let mut v = key.to_vec();
    v.extend_from_slice(&word);
    v.extend_from_slice(pd);
    v
}

/// Rev 1 Request, C set, no private data.
fn req_v1_crc() -> Vec<u8> {
    frame(&RFC_KEY_REQ, [0x40, 0x01, 0x00, 0x00], &[])
}

/// Rev 2 enhanced Request: C, IRD 16 with P, ORD 8 with Write and Read RTR, ULP data "abc".
fn req_v2_enhanced() -> Vec<u8> {
    frame(
        &RFC_KEY_REQ,
        [0x50, 0x02, 0x00, 0x07],
        &[0x80, 0x10, 0xC0, 0x08, b'a', b'b', b'c'],
    )
}

/// Rev 2 enhanced Reply: P, IRD 4, Write RTR chosen, ORD 16, no ULP data.
fn rep_v2_enhanced() -> Vec<u8> {
    frame(
        &RFC_KEY_REP,
        [0x50, 0x02, 0x00, 0x04],
        &[0x80, 0x04, 0x80, 0x10],
    )
}

fn parse(buf: &[u8]) -> Result<FrameRepr<'_>, MpaError> {
    FrameRepr::parse(&Frame::new_checked(buf)?)
}

fn emit(repr: &FrameRepr<'_>) -> Result<Vec<u8>, MpaError> {
    let mut buf = vec![0xEE; repr.buffer_len()];
    repr.emit(&mut Frame::new_unchecked(&mut buf[..]))?;
    Ok(buf)
}

#[test]
fn keys_are_the_rfc_bytes() {
    assert_eq!(KEY_REQUEST, RFC_KEY_REQ);
    assert_eq!(KEY_REPLY, RFC_KEY_REP);
}

#[test]
fn deconstruct_rev1_request() {
    let buf = req_v1_crc();
    let f = Frame::new_checked(&buf[..]).unwrap();
    assert_eq!(f.kind(), Some(FrameKind::Request));
    assert!(f.crc() && !f.markers() && !f.reject() && !f.enhanced());
    assert_eq!((f.rev(), f.pd_length(), f.frame_len()), (1, 0, 20));
    assert_eq!(
        parse(&buf),
        Ok(FrameRepr {
            kind: FrameKind::Request,
            markers: false,
            crc: true,
            reject: false,
            rev: Revision::Rev1,
            ird_ord: None,
            private_data: &[],
            large_fpdu: false,
            large_fpdu_ack: false,
        })
    );
}

#[test]
fn deconstruct_rev2_enhanced_request() {
    let buf = req_v2_enhanced();
    let repr = parse(&buf).unwrap();
    assert_eq!(repr.rev, Revision::Rev2);
    assert_eq!(
        repr.ird_ord,
        Some(IrdOrd {
            peer_to_peer: true,
            rtr: RtrSet {
                send: false,
                write: true,
                read: true
            },
            ird: 16,
            ord: 8,
        })
    );
    // The ULP sees only what follows the IRD/ORD block.
    assert_eq!(repr.private_data, b"abc");
    assert_eq!(repr.pd_length(), 7);
}

#[test]
fn construct_is_byte_exact() {
    for buf in [req_v1_crc(), req_v2_enhanced(), rep_v2_enhanced()] {
        let repr = parse(&buf).unwrap();
        assert_eq!(repr.buffer_len(), buf.len());
        assert_eq!(emit(&repr).unwrap(), buf);
    }
}

#[test]
fn ird_ord_bit_positions() {
    let one = |peer_to_peer, send, write, read| IrdOrd {
        peer_to_peer,
        rtr: RtrSet { send, write, read },
        ird: 0,
        ord: 0,
    };
    assert_eq!(one(true, false, false, false).to_bytes(), [0x80, 0, 0, 0]);
    assert_eq!(one(false, true, false, false).to_bytes(), [0x40, 0, 0, 0]);
    assert_eq!(one(false, false, true, false).to_bytes(), [0, 0, 0x80, 0]);
    assert_eq!(one(false, false, false, true).to_bytes(), [0, 0, 0x40, 0]);
    let v = IrdOrd {
        ird: 0x3FFF,
        ord: 0x1234,
        ..one(false, false, false, false)
    };
    assert_eq!(v.to_bytes(), [0x3F, 0xFF, 0x12, 0x34]);
    // Values are masked to 14 bits on emit, so they cannot set a control flag.
    let big = IrdOrd {
        ird: 0xFFFF,
        ord: 0xC001,
        ..one(false, false, false, false)
    };
    assert_eq!(big.to_bytes(), [0x3F, 0xFF, 0x00, 0x01]);
    for bytes in [[0xFF; 4], [0x80, 0x10, 0xC0, 0x08], [0, 0, 0, 0]] {
        assert_eq!(IrdOrd::parse(&bytes).unwrap().to_bytes(), bytes);
    }
}

#[test]
fn truncated_header_and_private_data() {
    let buf = req_v2_enhanced();
    for len in 0..HEADER_LEN {
        assert_eq!(frame_len(&buf[..len]), Ok(None));
        assert_eq!(
            parse(&buf[..len]),
            Err(MpaError::Truncated { needed: 20 }),
            "{len}"
        );
    }
    for len in HEADER_LEN..buf.len() {
        assert_eq!(frame_len(&buf[..len]), Ok(Some(27)));
        assert_eq!(
            parse(&buf[..len]),
            Err(MpaError::Truncated { needed: 27 }),
            "{len}"
        );
    }
    assert!(parse(&buf).is_ok());
}

#[test]
fn trailing_bytes_are_not_part_of_the_frame() {
    let mut buf = req_v2_enhanced();
    buf.extend_from_slice(&[0x00, 0x12, 0x41, 0x40]);
    let repr = parse(&buf).unwrap();
    assert_eq!(repr.private_data, b"abc");
    assert_eq!(Frame::new_checked(&buf[..]).unwrap().frame_len(), 27);
}

#[test]
fn every_key_corruption_is_refused() {
    for good in [req_v1_crc(), rep_v2_enhanced()] {
        for i in 0..16 {
            for bit in 0..8 {
                let mut bad = good.clone();
                bad[i] ^= 1 << bit;
                // Req and Rep differ in byte 9 only: 'q' ^ 'p' = 1.
                let other = i == 9 && bit == 0;
                match parse(&bad) {
                    Err(MpaError::BadKey) => assert!(!other),
                    Ok(r) => assert!(other && r.kind != parse(&good).unwrap().kind),
                    e => panic!("{i}/{bit}: {e:?}"),
                }
            }
        }
    }
}

#[test]
fn wrong_kind_is_refused() {
    assert_eq!(
        FrameRepr::parse_bytes(&rep_v2_enhanced(), FrameKind::Request),
        Err(MpaError::BadKey)
    );
    assert_eq!(
        FrameRepr::parse_bytes(&req_v1_crc(), FrameKind::Reply),
        Err(MpaError::BadKey)
    );
    assert!(FrameRepr::parse_bytes(&req_v1_crc(), FrameKind::Request).is_ok());
}

#[test]
fn revision_zero_and_unknown_revisions_are_refused() {
    for rev in [0u8, 3, 4, 0x7F, 0x80, 0xFF] {
        let buf = frame(&RFC_KEY_REQ, [0x40, rev, 0x00, 0x00], &[]);
        assert_eq!(frame_len(&buf), Err(MpaError::BadRevision(rev)));
        assert_eq!(parse(&buf), Err(MpaError::BadRevision(rev)));
    }
}

#[test]
fn private_data_limit_is_512() {
    let pd = vec![0x5A; 600];
    let ok = frame(&RFC_KEY_REQ, [0x00, 0x01, 0x02, 0x00], &pd[..512]);
    assert_eq!(parse(&ok).map(|r| r.private_data.len()), Ok(512));
    for len in [513u16, 600, 0xFFFF] {
        let [hi, lo] = len.to_be_bytes();
        let bad = frame(&RFC_KEY_REQ, [0x00, 0x01, hi, lo], &pd);
        assert_eq!(frame_len(&bad), Err(MpaError::PrivateDataTooLong(len)));
        assert_eq!(parse(&bad), Err(MpaError::PrivateDataTooLong(len)));
    }
}

#[test]
fn enhanced_frame_without_room_for_ird_ord_is_refused() {
    for pd_len in 0..IRD_ORD_LEN {
        let buf = frame(
            &RFC_KEY_REQ,
            [0x10, 0x02, 0x00, pd_len as u8],
            &[0x80, 0x01, 0x80][..pd_len],
        );
        assert_eq!(parse(&buf), Err(MpaError::MissingIrdOrd), "{pd_len}");
    }
}

#[test]
fn reserved_bits_and_rev1_enhanced_bit_are_ignored() {
    // Reserved flag bits set: same meaning (RFC 5044 §7.1.1: ignored on receive).
    let mut buf = req_v1_crc();
    buf[16] |= 0x03;
    let repr = parse(&buf).unwrap();
    assert_eq!(repr, parse(&req_v1_crc()).unwrap());
    // Re-emitting clears them.
    assert_eq!(emit(&repr).unwrap(), req_v1_crc());
    // In Rev 1 the enhanced bit is still reserved: the private data stays whole.
    let buf = frame(&RFC_KEY_REQ, [0x10, 0x01, 0x00, 0x04], &[1, 2, 3, 4]);
    let repr = parse(&buf).unwrap();
    assert_eq!(
        (repr.ird_ord, repr.private_data),
        (None, &[1u8, 2, 3, 4][..])
    );
    // A Rev 2 frame without the enhanced bit carries no IRD/ORD block.
    let buf = frame(&RFC_KEY_REQ, [0x00, 0x02, 0x00, 0x02], &[9, 9]);
    assert_eq!(
        parse(&buf).map(|r| (r.ird_ord, r.private_data.len())),
        Ok((None, 2))
    );
}

#[test]
fn reject_bit_counts_only_in_a_reply() {
    let req = frame(&RFC_KEY_REQ, [0x20, 0x01, 0x00, 0x00], &[]);
    assert_eq!(parse(&req).map(|r| r.reject), Ok(false));
    let rep = frame(&RFC_KEY_REP, [0x20, 0x01, 0x00, 0x00], &[]);
    assert_eq!(parse(&rep).map(|r| r.reject), Ok(true));
}

#[test]
fn emit_refuses_impossible_frames() {
    let pd = [0u8; 513];
    let mut repr = request(
        &LocalParams {
            rev: Revision::Rev1,
            ..LocalParams::default()
        },
        &pd,
    );
    assert_eq!(emit(&repr), Err(MpaError::PrivateDataTooLong(513)));
    repr.private_data = &pd[..512];
    assert_eq!(emit(&repr).map(|b| b.len()), Ok(532));
    // The IRD/ORD block counts against the 512 bytes.
    let enhanced = request(&LocalParams::default(), &pd[..509]);
    assert_eq!(emit(&enhanced), Err(MpaError::PrivateDataTooLong(513)));
    let enhanced = request(&LocalParams::default(), &pd[..508]);
    assert_eq!(emit(&enhanced).map(|b| b.len()), Ok(532));
    // An IRD/ORD block needs Rev 2.
    let bad = FrameRepr {
        rev: Revision::Rev1,
        ..enhanced
    };
    assert_eq!(emit(&bad), Err(MpaError::BadRevision(1)));
    // A short buffer is refused, not overrun.
    let small = request(&LocalParams::default(), b"xy");
    let mut buf = [0u8; 25];
    assert_eq!(
        small.emit(&mut Frame::new_unchecked(&mut buf[..])),
        Err(MpaError::Truncated { needed: 26 })
    );
    assert_eq!(buf, [0u8; 25]);
}

#[test]
fn request_fixture_from_local_params() {
    let local = LocalParams {
        rev: Revision::Rev2,
        crc: true,
        markers_rx: false,
        markers_tx: false,
        ird: 16,
        ord: 8,
        p2p: Some(RtrSet {
            send: false,
            write: true,
            read: true,
        }),
        large_fpdu: false,
    };
    assert_eq!(emit(&request(&local, b"abc")).unwrap(), req_v2_enhanced());
    let v1 = LocalParams {
        rev: Revision::Rev1,
        ..local
    };
    assert_eq!(emit(&request(&v1, &[])).unwrap(), req_v1_crc());
}

/// Runs a whole exchange through bytes: Request, Reply, both sides' parameters.
fn exchange(
    ini: &LocalParams,
    resp: &LocalParams,
) -> Result<(StreamParams, StreamParams), MpaError> {
    let req_bytes = emit(&request(ini, b"hello")).unwrap();
    let req = FrameRepr::parse_bytes(&req_bytes, FrameKind::Request)?;
    assert_eq!(req.private_data, b"hello");
    let (reply, resp_params) = respond(resp, &req, b"world")?;
    let rep_bytes = emit(&reply).unwrap();
    let rep = FrameRepr::parse_bytes(&rep_bytes, FrameKind::Reply)?;
    assert_eq!(rep.private_data, b"world");
    let sent = request(ini, b"hello");
    let ini_params = complete(ini, &sent, &rep)?;
    Ok((ini_params, resp_params))
}

#[test]
fn responder_reply_fixture() {
    let req_bytes = req_v2_enhanced();
    let req = parse(&req_bytes).unwrap();
    let local = LocalParams {
        ird: 4,
        ord: 32,
        crc: false,
        ..LocalParams::default()
    };
    let (reply, params) = respond(&local, &req, &[]).unwrap();
    assert_eq!(emit(&reply).unwrap(), rep_v2_enhanced());
    assert_eq!(
        params,
        StreamParams {
            rev: Revision::Rev2,
            crc: true,
            markers_tx: false,
            markers_rx: false,
            ird: 4,
            ord: 16,
            rtr: Some(Rtr::Write),
            large_fpdu_tx: false,
        }
    );
}

#[test]
fn crc_is_used_if_either_side_asks() {
    for (a, b) in [(false, false), (false, true), (true, false), (true, true)] {
        let ini = LocalParams {
            crc: a,
            ..LocalParams::default()
        };
        let resp = LocalParams {
            crc: b,
            ..LocalParams::default()
        };
        let (i, r) = exchange(&ini, &resp).unwrap();
        assert_eq!((i.crc, r.crc), (a || b, a || b), "{a} {b}");
    }
}

#[test]
fn markers_follow_each_receivers_m_bit() {
    let ini = LocalParams {
        markers_rx: true,
        markers_tx: true,
        ..LocalParams::default()
    };
    let resp = LocalParams::default();
    assert_eq!(exchange(&ini, &resp), Err(MpaError::MarkersUnsupported));
    let resp = LocalParams {
        markers_tx: true,
        ..resp
    };
    let (i, r) = exchange(&ini, &resp).unwrap();
    assert_eq!(
        (i.markers_rx, i.markers_tx, r.markers_rx, r.markers_tx),
        (true, false, false, true)
    );
    // The responder requires Markers and the initiator cannot insert them.
    let ini = LocalParams::default();
    let resp = LocalParams {
        markers_rx: true,
        ..LocalParams::default()
    };
    assert_eq!(exchange(&ini, &resp), Err(MpaError::MarkersUnsupported));
}

#[test]
fn revision_downgrade() {
    let v1 = LocalParams {
        rev: Revision::Rev1,
        ..LocalParams::default()
    };
    let v2 = LocalParams {
        ird: 3,
        ord: 5,
        ..LocalParams::default()
    };
    // Rev 2 initiator, Rev 1 responder: Rev 1 without IRD/ORD; each keeps its own depths.
    let (i, r) = exchange(&v2, &v1).unwrap();
    assert_eq!((i.rev, r.rev), (Revision::Rev1, Revision::Rev1));
    assert_eq!((i.ird, i.ord), (3, 5));
    let (i, r) = exchange(&v1, &v2).unwrap();
    assert_eq!((i.rev, r.rev), (Revision::Rev1, Revision::Rev1));
    // A Reply with a higher Rev than the Request is refused.
    let sent = request(&v1, &[]);
    let reply = FrameRepr {
        kind: FrameKind::Reply,
        ..request(&v2, &[])
    };
    assert_eq!(
        complete(&v1, &sent, &reply),
        Err(MpaError::RevisionMismatch { sent: 1, got: 2 })
    );
    // A Rev 2 Reply to an enhanced Request must carry IRD/ORD.
    let sent = request(&v2, &[]);
    let reply = FrameRepr {
        kind: FrameKind::Reply,
        ird_ord: None,
        ..sent
    };
    assert_eq!(complete(&v2, &sent, &reply), Err(MpaError::MissingIrdOrd));
}

#[test]
fn ird_ord_negotiation_never_overcommits() {
    // splitmix-style spread of depths, including 0 and the 14-bit maximum.
    let mut x: u64 = 0x6581_0000_0000_0001;
    let mut depth = || {
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let z = (x ^ (x >> 31)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        match z % 5 {
            0 => 0,
            1 => 0x3FFE,
            2 => 0xFFFF,
            _ => (z >> 20) as u16 % 200,
        }
    };
    for _ in 0..20_000 {
        let ini = LocalParams {
            ird: depth(),
            ord: depth(),
            ..LocalParams::default()
        };
        let resp = LocalParams {
            ird: depth(),
            ord: depth(),
            ..LocalParams::default()
        };
        let (i, r) = exchange(&ini, &resp).unwrap();
        // Nobody issues more Reads than the other side accepts...
        assert!(
            i.ord <= r.ird && r.ord <= i.ird,
            "{ini:?} {resp:?} -> {i:?} {r:?}"
        );
        // ...nor more than it asked for, and both agree on each direction.
        assert!(i.ord <= ini.ord && r.ord <= resp.ord);
        assert!(i.ird <= ini.ird.min(IRD_ORD_MAX) && r.ird <= resp.ird.min(IRD_ORD_MAX));
        assert_eq!((i.ord, i.ird), (r.ird, r.ord));
    }
}

#[test]
fn ird_ord_no_value() {
    // An initiator that gives no IRD/ORD leaves the responder's own values in force.
    let mut req_bytes = req_v2_enhanced();
    req_bytes[20..24].copy_from_slice(&[0x3F, 0xFF, 0x3F, 0xFF]);
    let req = parse(&req_bytes).unwrap();
    let local = LocalParams {
        ird: 7,
        ord: 9,
        ..LocalParams::default()
    };
    let (reply, params) = respond(&local, &req, &[]).unwrap();
    assert_eq!((params.ird, params.ord), (7, 9));
    assert_eq!(reply.ird_ord.map(|b| (b.ird, b.ord)), Some((7, 9)));
    // Local values never go out as "no value".
    let big = LocalParams {
        ird: 0x3FFF,
        ord: 0xFFFF,
        ..LocalParams::default()
    };
    let b = request(&big, &[]).ird_ord.unwrap();
    assert_eq!((b.ird, b.ord), (IRD_ORD_MAX, IRD_ORD_MAX));
}

#[test]
fn insufficient_ird_is_a_terminate() {
    let local = LocalParams {
        ird: 4,
        ord: 4,
        ..LocalParams::default()
    };
    let err = complete_with(&local, |b| b.ord = 5).unwrap_err();
    assert_eq!(
        err,
        MpaError::InsufficientIrd {
            ird: 4,
            peer_ord: 5
        }
    );
    assert_eq!(err.terminate_code(), Some(0x06));
    assert_eq!(complete_with(&local, |b| b.ord = 4).map(|p| p.ird), Ok(4));
}

#[test]
fn rtr_selection() {
    let p2p = |send, write, read| LocalParams {
        p2p: Some(RtrSet { send, write, read }),
        ..LocalParams::default()
    };
    let any = LocalParams::default();
    let rtr = |ini: &LocalParams, resp: &LocalParams| {
        exchange(ini, resp).map(|(i, r)| {
            assert_eq!(i.rtr, r.rtr);
            i.rtr
        })
    };
    assert_eq!(rtr(&any, &any), Ok(None));
    assert_eq!(rtr(&p2p(true, true, true), &any), Ok(Some(Rtr::Write)));
    assert_eq!(rtr(&p2p(true, false, true), &any), Ok(Some(Rtr::Read)));
    assert_eq!(rtr(&p2p(true, false, false), &any), Ok(Some(Rtr::Send)));
    // P without any type named: the responder's choice.
    assert_eq!(
        rtr(&p2p(false, false, false), &p2p(false, false, true)),
        Ok(Some(Rtr::Read))
    );
    // The responder only accepts what it supports.
    assert_eq!(
        rtr(&p2p(true, true, true), &p2p(true, false, false)),
        Ok(Some(Rtr::Send))
    );
    let err = rtr(&p2p(false, true, false), &p2p(false, false, true)).unwrap_err();
    assert_eq!(
        (err, err.terminate_code()),
        (MpaError::NoMatchingRtr, Some(0x07))
    );
}

/// Completes our own Request against a Reply that echoes it as a Reply, with its
/// IRD/ORD block changed by `edit`.
fn complete_with(
    local: &LocalParams,
    edit: impl FnOnce(&mut IrdOrd),
) -> Result<StreamParams, MpaError> {
    let sent = request(local, &[]);
    let mut block = sent.ird_ord.ok_or(MpaError::MissingIrdOrd)?;
    edit(&mut block);
    let reply = FrameRepr {
        kind: FrameKind::Reply,
        ird_ord: Some(block),
        ..sent
    };
    complete(local, &sent, &reply)
}

#[test]
fn reply_choosing_an_rtr_not_offered_is_refused() {
    let local = LocalParams {
        p2p: Some(RtrSet::only(Rtr::Write)),
        ..LocalParams::default()
    };
    assert_eq!(
        complete_with(&local, |b| b.rtr = RtrSet::only(Rtr::Read)),
        Err(MpaError::NoMatchingRtr)
    );
    assert_eq!(
        complete_with(&local, |b| b.rtr = RtrSet::NONE),
        Err(MpaError::NoMatchingRtr)
    );
    assert_eq!(
        complete_with(&local, |_| ()).map(|p| p.rtr),
        Ok(Some(Rtr::Write))
    );
}

#[test]
fn rejection() {
    let local = LocalParams {
        crc: false,
        ..LocalParams::default()
    };
    let bytes = emit(&reject_reply(&local, Some(Revision::Rev2), b"no")).unwrap();
    assert_eq!(bytes, frame(&RFC_KEY_REP, [0x20, 0x02, 0x00, 0x02], b"no"));
    let rep = parse(&bytes).unwrap();
    assert_eq!(rep.private_data, b"no");
    assert_eq!(
        complete(&local, &request(&local, &[]), &rep),
        Err(MpaError::Rejected)
    );
    // Without a valid Request to echo, a Rev 1 Reply.
    let bytes = emit(&reject_reply(&local, None, &[])).unwrap();
    assert_eq!(bytes, frame(&RFC_KEY_REP, [0x20, 0x01, 0x00, 0x00], &[]));
    assert_eq!(MpaError::Rejected.terminate_code(), None);
}

#[test]
fn respond_and_complete_check_frame_kinds() {
    let local = LocalParams::default();
    let req = request(&local, &[]);
    let as_reply = FrameRepr {
        kind: FrameKind::Reply,
        ..req
    };
    assert_eq!(
        respond(&local, &as_reply, &[]).map(|_| ()),
        Err(MpaError::BadKey)
    );
    assert_eq!(complete(&local, &req, &req), Err(MpaError::BadKey));
}

#[test]
fn read_rtr_needs_an_inbound_read_slot() {
    let read_only = |ird, ord| LocalParams {
        ird,
        ord,
        p2p: Some(RtrSet::only(Rtr::Read)),
        ..LocalParams::default()
    };
    // A responder without inbound Read slots cannot take a Read RTR.
    assert_eq!(
        exchange(&read_only(4, 4), &read_only(0, 4)),
        Err(MpaError::NoMatchingRtr)
    );
    // An initiator with ORD 0 still gets the one slot its RTR Read needs.
    let (i, r) = exchange(&read_only(4, 0), &read_only(8, 8)).unwrap();
    assert_eq!((i.rtr, r.rtr, r.ird), (Some(Rtr::Read), Some(Rtr::Read), 1));
    // A Reply choosing Read with IRD 0 is refused by the initiator.
    let refuse = complete_with(&read_only(4, 4), |b| {
        b.ird = 0;
        b.rtr = RtrSet::only(Rtr::Read);
    });
    assert_eq!(refuse, Err(MpaError::NoMatchingRtr));
}

/// The large-FPDU bits of the flags byte: an endpoint that takes FPDUs longer than the
/// EMSS offers them in its Request (0x08); a responder that understood answers with
/// the offer and an acknowledgement (0x04), only when asked. An echo of the Request's
/// flags (siw builds its Reply from the Request's header) is not an acknowledgement.
#[test]
fn large_fpdus_only_between_endpoints_that_both_offer() {
    let on = LocalParams {
        large_fpdu: true,
        ..LocalParams::default()
    };
    let off = LocalParams::default();
    let req_on = request(&on, &[]);
    let bytes = emit(&req_on).unwrap();
    assert_eq!(bytes[16] & 0x0c, 0x08);
    assert!(parse(&bytes).unwrap().large_fpdu);
    let req_off = request(&off, &[]);
    assert_eq!(emit(&req_off).unwrap()[16] & 0x0c, 0);
    for (local, req, both) in [
        (&on, &req_on, true),
        (&on, &req_off, false),
        (&off, &req_on, false),
        (&off, &req_off, false),
    ] {
        let (reply, params) = respond(local, req, &[]).unwrap();
        assert_eq!(params.large_fpdu_tx, both);
        assert_eq!((reply.large_fpdu, reply.large_fpdu_ack), (both, both));
        let wire = emit(&reply).unwrap();
        assert_eq!(wire[16] & 0x0c, if both { 0x0c } else { 0 });
        let back = FrameRepr::parse_bytes(&wire, FrameKind::Reply).unwrap();
        let initiator = if req.large_fpdu { &on } else { &off };
        assert_eq!(complete(initiator, req, &back).unwrap().large_fpdu_tx, both);
    }
    // siw's Reply to our offer: the Request's flags copied, the key changed.
    let mut echo = emit(&req_on).unwrap();
    echo[..16].copy_from_slice(b"MPA ID Rep Frame");
    let echo = FrameRepr::parse_bytes(&echo, FrameKind::Reply).unwrap();
    assert!(echo.large_fpdu && !echo.large_fpdu_ack);
    assert!(!complete(&on, &req_on, &echo).unwrap().large_fpdu_tx);
    // The acknowledgement bit means nothing in a Request.
    let mut req = emit(&req_off).unwrap();
    req[16] |= 0x04;
    assert!(!parse(&req).unwrap().large_fpdu_ack);
}
