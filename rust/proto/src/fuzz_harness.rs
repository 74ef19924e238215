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
use crate::mpa::{self, Frame, FrameKind, FrameRepr, LocalParams, Revision, RtrSet};

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
    if let (Ok(p), Some(block)) = (mpa::complete(local, &sent, reply), sent.ird_ord) {
        if reply.rev == Revision::Rev2 {
            assert!(p.ird <= block.ird && p.ord <= block.ord, "{reply:?} {p:?}");
        }
    }
}

#[cfg(test)]
#[path = "fuzz_test.rs"]
mod test;
