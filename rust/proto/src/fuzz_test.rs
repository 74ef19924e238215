// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Bounded, deterministic mutation fuzzing of the fuzz entry points, run by `cargo test`.
//!
//! A seeded PRNG mutates a fixture corpus (bit flips, interesting bytes and lengths,
//! truncation, extension, splices); inputs that reach a new outcome class join the
//! corpus. Iteration counts are sized for a few seconds in a debug build; the
//! cargo-fuzz targets in `fuzz/` run the same entry points without bounds.

use super::*;
use crate::mpa::{reject_reply, request, respond, Rtr};
use crate::rdmap::Opcode;
use std::collections::hash_map::DefaultHasher;
use std::collections::HashSet;
use std::hash::{Hash, Hasher};

/// Fixed seed, printed by every run so a failure can be replayed.
pub const SEED: u64 = 0x5EED_5044_6581_7306;

/// splitmix64.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform-ish in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Values that sit on length and flag boundaries.
const INTERESTING_U16: [u16; 12] = [0, 1, 2, 3, 4, 7, 8, 511, 512, 513, 0x7FFF, 0xFFFF];
const INTERESTING_U8: [u8; 8] = [0, 1, 2, 0x10, 0x7F, 0x80, 0xC0, 0xFF];

/// Applies one to four random mutations to a copy of `input`.
pub fn mutate(rng: &mut Rng, input: &[u8], corpus: &[Vec<u8>]) -> Vec<u8> {
    let mut v = input.to_vec();
    for _ in 0..=rng.below(4) {
        let len = v.len();
        match rng.below(9) {
            0 | 1 if len > 0 => {
                let i = rng.below(len);
                v[i] ^= 1 << rng.below(8);
            }
            2 if len > 0 => {
                let i = rng.below(len);
                v[i] = INTERESTING_U8[rng.below(INTERESTING_U8.len())];
            }
            3 if len > 1 => {
                let i = rng.below(len - 1);
                let x = INTERESTING_U16[rng.below(INTERESTING_U16.len())].to_be_bytes();
                v[i..i + 2].copy_from_slice(&x);
            }
            4 => v.truncate(rng.below(len + 1)),
            5 => {
                for _ in 0..rng.below(64) {
                    v.push(rng.next() as u8);
                }
            }
            6 if !corpus.is_empty() => {
                // Splice: our head, another input's tail.
                let other = &corpus[rng.below(corpus.len())];
                let cut = rng.below(len + 1);
                let from = rng.below(other.len() + 1);
                v.truncate(cut);
                v.extend_from_slice(&other[from..]);
            }
            7 if len > 1 => {
                // Duplicate or drop a run, shifting what follows.
                let a = rng.below(len);
                let b = a + rng.below(len - a);
                if rng.next() & 1 == 0 {
                    let run = v[a..b].to_vec();
                    v.splice(a..a, run);
                } else {
                    v.drain(a..b);
                }
            }
            _ if len > 0 => {
                let i = rng.below(len);
                v[i] = rng.next() as u8;
            }
            _ => v.push(rng.next() as u8),
        }
    }
    v
}

/// Runs `target` on `iterations` mutants; a mutant whose `signature` is new joins
/// the corpus. Returns the number of distinct signatures seen.
pub fn run(
    name: &str,
    seeds: Vec<Vec<u8>>,
    iterations: u32,
    target: fn(&[u8]),
    signature: fn(&[u8]) -> u64,
) -> usize {
    let start = std::time::Instant::now();
    let mut rng = Rng(SEED ^ name.len() as u64);
    let mut seen = HashSet::new();
    let mut corpus = seeds;
    for s in &corpus {
        target(s);
        seen.insert(signature(s));
    }
    for _ in 0..iterations {
        let parent = &corpus[rng.below(corpus.len())];
        let child = mutate(&mut rng, parent, &corpus);
        target(&child);
        if seen.insert(signature(&child)) && corpus.len() < 512 {
            corpus.push(child);
        }
    }
    println!(
        "fuzz {name}: {iterations} iterations, seed {SEED:#018x}, {} outcome classes, corpus {}, {:.1?}",
        seen.len(),
        corpus.len(),
        start.elapsed()
    );
    seen.len()
}

fn hash_of(v: impl Hash) -> u64 {
    let mut h = DefaultHasher::new();
    v.hash(&mut h);
    h.finish()
}

/// Seeds for [`mpa_one`]: two parameter bytes, then a frame our own code emits.
pub fn mpa_seeds() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for (a, b) in [
        (0x00, 0x44),
        (0x02, 0x21),
        (0x71, 0x10),
        (0x22, 0xff),
        (0x1e, 0x00),
        (0x13, 0x00),
    ] {
        let local = mpa_local(a, b);
        let emit = |repr: &FrameRepr<'_>| {
            let mut v = vec![a, b];
            let mut buf = vec![0u8; repr.buffer_len()];
            let _ = repr.emit(&mut Frame::new_unchecked(&mut buf[..]));
            v.extend_from_slice(&buf);
            v
        };
        let req = request(&local, b"private");
        out.push(emit(&req));
        if let Ok((reply, _)) = respond(&mpa_local(0x72, 0x35), &req, b"pd") {
            out.push(emit(&reply));
        }
        out.push(emit(&reject_reply(
            &local,
            Some(Revision::Rev2),
            b"go away",
        )));
    }
    out
}

fn mpa_signature(data: &[u8]) -> u64 {
    let wire = data.get(2..).unwrap_or(&[]);
    let local = mpa_local(
        data.first().copied().unwrap_or(0),
        data.get(1).copied().unwrap_or(0),
    );
    let len = mpa::frame_len(wire)
        .map(|n| n.is_some())
        .map_err(|e| core::mem::discriminant(&e));
    let req = FrameRepr::parse_bytes(wire, FrameKind::Request);
    let resp = req
        .as_ref()
        .ok()
        .map(|r| respond(&local, r, &[]).map(|(_, p)| (p.rev, p.rtr, p.crc)));
    let rep = FrameRepr::parse_bytes(wire, FrameKind::Reply)
        .map(|r| (r.rev, r.reject, r.ird_ord.map(|b| b.rtr)))
        .map_err(|e| core::mem::discriminant(&e));
    hash_of((
        len,
        req.map(|r| (r.rev, r.markers, r.crc))
            .map_err(|e| core::mem::discriminant(&e)),
        resp,
        rep,
    ))
}

#[test]
fn mpa_mutation_fuzz() {
    let classes = run("mpa", mpa_seeds(), 1_000_000, mpa_one, mpa_signature);
    // The corpus must spread over many outcomes, or the mutator is not reaching the parser.
    assert!(classes > 50, "{classes}");
}

fn atomic_signature(data: &[u8]) -> u64 {
    let sel = data.first().copied().unwrap_or(0);
    hash_of((sel & 0x1f, be64(data, 41) & 7 == 0, data.len() >= 57))
}

#[test]
fn atomic_mutation_fuzz() {
    let seeds = atomic_seeds();
    let classes = run("atomic", seeds, 1_000_000, atomic_one, atomic_signature);
    assert!(classes >= 32, "{classes}");
}

/// The engine must be able to reach a state one bit flip away from a seed: a
/// planted bug (a Reply choosing a zero-length Send RTR) has to be found.
#[test]
fn mutation_engine_finds_a_planted_bug() {
    fn planted(data: &[u8]) {
        if let Ok(r) = FrameRepr::parse_bytes(data.get(2..).unwrap_or(&[]), FrameKind::Reply) {
            if r.ird_ord.is_some_and(|b| b.rtr.send && b.rtr.write) {
                panic!("planted");
            }
        }
    }
    // The panic message lands in this test's captured output, shown only on failure.
    let found = std::panic::catch_unwind(|| {
        run("planted", mpa_seeds(), 200_000, planted, mpa_signature);
    });
    assert!(
        found.is_err(),
        "the mutator never produced the planted input"
    );
    // The seeds do contain a Reply that chose a Write RTR, one bit away.
    assert!(mpa_seeds()
        .iter()
        .any(|s| FrameRepr::parse_bytes(&s[2..], FrameKind::Reply)
            .is_ok_and(|r| r.ird_ord.is_some_and(|b| b.rtr == RtrSet::only(Rtr::Write)))));
}

/// Seeds for [`atomic_one`]: every AOpCode in both dialects, aligned and not.
pub fn atomic_seeds() -> Vec<Vec<u8>> {
    let mut rng = Rng(SEED);
    (0..32u8)
        .map(|sel| {
            let mut v = vec![sel];
            for _ in 0..56 {
                v.push(rng.next() as u8);
            }
            let addr: u64 = if sel < 16 { 0x1000 } else { 0x1003 };
            v[41..49].copy_from_slice(&addr.to_be_bytes());
            v
        })
        .collect()
}

/// Writes the seed corpora to `fuzz/seeds/<target>/` for cargo-fuzz:
/// `cargo test -p rsiw-proto export_fuzz_seeds -- --ignored`.
#[test]
#[ignore = "writes files; run by hand to refresh fuzz/seeds"]
fn export_fuzz_seeds() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds");
    for (target, seeds) in [
        ("mpa", mpa_seeds()),
        ("atomic", atomic_seeds()),
        ("rx", rx_seeds()),
        ("tx", tx_seeds()),
    ] {
        let dir = root.join(target);
        std::fs::create_dir_all(&dir).unwrap();
        for (i, s) in seeds.iter().enumerate() {
            std::fs::write(dir.join(format!("seed-{i:03}")), s).unwrap();
        }
    }
}

/// A peer's stream exercising every opcode: Sends (one and several segments),
/// Immediate Data, Writes, Read Request and Response, Atomic Request and Response,
/// and a closing Terminate. Returns the stream and the number of segments in it.
pub fn rx_stream(crc: bool, markers: bool) -> (Vec<u8>, usize) {
    use crate::atomic::{AOpCode, AtomicFields};
    use crate::rdmap::{AtomicRequest, AtomicResponse, ReadRequest};
    use crate::terminate::TerminateRepr;
    let mut b = StreamBuilder::new(crc, markers);
    let payload: Vec<u8> = (0..700u32).map(|i| (i * 7) as u8).collect();
    let mut segs = 0;
    b.send(b"hello", 1024);
    b.send(&payload, 256);
    b.untagged(
        Opcode::ImmediateData,
        true,
        0,
        0,
        &0x1122_3344_5566_7788u64.to_be_bytes(),
    );
    b.untagged(Opcode::SendInvalidate, true, 0x0000_1234, 0, b"bye");
    segs += 1 + 3 + 1 + 1;
    b.write(0x100, 0x7000, &payload[..300], 128);
    b.tagged(Opcode::ReadResponse, true, 0x200, 0, &payload[..64]);
    segs += 3 + 1;
    let mut rr = [0u8; ReadRequest::LEN];
    ReadRequest {
        sink_stag: 0x300,
        sink_to: 0,
        size: 4096,
        source_stag: 0x400,
        source_to: 0x1000,
    }
    .emit(&mut rr);
    b.untagged(Opcode::ReadRequest, true, 0, 0, &rr);
    let mut ar = [0u8; AtomicRequest::LEN];
    AtomicRequest {
        opcode: AOpCode::FetchAdd,
        request_id: 7,
        stag: 0x500,
        to: 0x40,
        fields: AtomicFields::fetch_add(1),
    }
    .emit(&mut ar);
    b.untagged(Opcode::AtomicRequest, true, 0, 0, &ar);
    let mut resp = [0u8; AtomicResponse::LEN];
    AtomicResponse {
        request_id: 9,
        original: 41,
    }
    .emit(&mut resp);
    b.untagged(Opcode::AtomicResponse, true, 0, 0, &resp);
    segs += 3;
    let mut t = [0u8; 64];
    let n = TerminateRepr::new(TermCause::DDP_INVALID_STAG).emit(&mut t);
    b.untagged(Opcode::Terminate, true, 0, 0, &t[..n]);
    segs += 1;
    (b.out, segs)
}

/// RX seeds: config byte, split seed, stream.
pub fn rx_seeds() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for cfg in [0u8, 1, 2, 3, 5] {
        let c = rx_config(cfg);
        let (stream, _) = rx_stream(c.crc, c.markers);
        let mut v = vec![cfg, 0x5a];
        v.extend_from_slice(&stream);
        out.push(v);
    }
    out
}

#[test]
fn rx_seeds_parse_cleanly() {
    for (crc, markers) in [(false, false), (true, false), (false, true), (true, true)] {
        let (stream, segs) = rx_stream(crc, markers);
        let cfg = RxConfig {
            crc,
            markers,
            max_ulpdu: u16::MAX,
        };
        let (log, res) = rx_run(cfg, &stream, core::iter::empty());
        assert_eq!(res, Ok(()), "crc {crc} markers {markers}: {:?}", log.last());
        let ends = log.iter().filter(|e| matches!(e, RxEvent::End(_))).count();
        assert_eq!(ends, segs, "crc {crc} markers {markers}");
        // The multi-segment Send arrives whole, in order.
        let send: Vec<u8> = log
            .iter()
            .filter_map(|e| match e {
                RxEvent::Payload(Placement::Untagged { qn: 0, msn: 2, .. }, d) => Some(d.clone()),
                _ => None,
            })
            .flatten()
            .collect();
        assert_eq!(
            send,
            (0..700u32).map(|i| (i * 7) as u8).collect::<Vec<u8>>()
        );
    }
}

/// Bounded feeds stay on FPDU boundaries: with room for one small FPDU but not two,
/// each `feed_some` call takes exactly one whole FPDU.
#[test]
fn feed_some_stops_at_fpdu_boundaries() {
    use crate::rdmap::AtomicResponse;
    let mut b = StreamBuilder::new(true, false);
    let mut body = [0u8; AtomicResponse::LEN];
    for id in 0..10u32 {
        AtomicResponse {
            request_id: id,
            original: u64::from(id),
        }
        .emit(&mut body);
        b.untagged(Opcode::AtomicResponse, true, 0, 0, &body);
    }
    let fpdu = b.out.len() / 10;
    let cfg = RxConfig {
        crc: true,
        markers: false,
        max_ulpdu: u16::MAX,
    };
    let mut rx = RxParser::new(crate::crc::SoftCrc32c, cfg);
    let mut sink = RxRecorder {
        crc: true,
        ..RxRecorder::default()
    };
    let mut rest = &b.out[..];
    // The first limit cuts an FPDU: the state machine takes those octets, then the
    // next call finishes that FPDU and stops at its end, the next FPDU not being
    // whole within its limit.
    let n = rx.feed_some(rest, fpdu / 2, &mut sink).unwrap();
    assert_eq!(n, fpdu / 2);
    rest = &rest[n..];
    let n = rx.feed_some(rest, fpdu, &mut sink).unwrap();
    assert_eq!(n, fpdu - fpdu / 2);
    rest = &rest[n..];
    while !rest.is_empty() {
        let n = rx.feed_some(rest, 2 * fpdu - 1, &mut sink).unwrap();
        assert_eq!(n, fpdu);
        rest = &rest[n..];
    }
    let ends = sink
        .log
        .iter()
        .filter(|e| matches!(e, RxEvent::End(_)))
        .count();
    assert_eq!(ends, 10);
}

/// FPDUs longer than the limit are cut anyway: bounded feeds then use the whole
/// limit every time instead of stopping at each FPDU boundary.
#[test]
fn feed_some_does_not_stop_for_fpdus_longer_than_the_limit() {
    let mut b = StreamBuilder::new(true, false);
    b.write(0x100, 0, &[0x5a; 4000], 1000);
    let cfg = RxConfig {
        crc: true,
        markers: false,
        max_ulpdu: u16::MAX,
    };
    let (mut rx, mut sink) = rx_start(cfg);
    let mut rest = &b.out[..];
    while !rest.is_empty() {
        let n = rx.feed_some(rest, 300, &mut sink).unwrap();
        assert_eq!(n, rest.len().min(300));
        rest = &rest[n..];
    }
    let ends = sink
        .log
        .iter()
        .filter(|e| matches!(e, RxEvent::End(_)))
        .count();
    assert_eq!(ends, 4);
}

#[test]
fn rx_corruption_is_caught_by_crc_only_when_negotiated() {
    let (mut stream, _) = rx_stream(true, false);
    // Flip a payload octet of the first Send ("hello"): 2 + 18 octets in.
    stream[21] ^= 0x20;
    let on = RxConfig {
        crc: true,
        markers: false,
        max_ulpdu: u16::MAX,
    };
    let (log, res) = rx_run(on, &stream, core::iter::empty());
    assert_eq!(res.map_err(|e| e.cause()), Err(TermCause::MPA_CRC));
    // The payload was handed over, but the segment never committed.
    assert!(!log.iter().any(|e| matches!(e, RxEvent::End(_))));
    let off = RxConfig { crc: false, ..on };
    assert_eq!(rx_run(off, &stream, core::iter::empty()).1, Ok(()));
}

fn rx_signature(data: &[u8]) -> u64 {
    let cfg = rx_config(data.first().copied().unwrap_or(0));
    let (log, res) = rx_run(cfg, data.get(2..).unwrap_or(&[]), core::iter::empty());
    let kinds: Vec<u8> = log
        .iter()
        .map(|e| match e {
            RxEvent::Header(h) => h.opcode.bits(),
            RxEvent::Payload(..) => 0x10,
            RxEvent::End(_) => 0x20,
        })
        .collect();
    hash_of((
        cfg.crc,
        cfg.markers,
        kinds,
        res.map_err(|e| e.cause().word()),
    ))
}

#[test]
fn rx_mutation_fuzz() {
    let classes = run("rx", rx_seeds(), 300_000, rx_one, rx_signature);
    assert!(classes > 100, "{classes}");
}

/// Seeds for [`tx_one`]: every message kind with CRC and markers on and off, at a
/// few lengths and caps.
pub fn tx_seeds() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for cfg in [0u8, 1, 3, 1 | (2 << 2), 1 | (6 << 2), 3 | (3 << 2)] {
        for kind in 0u8..8 {
            for (hi, lo, mul) in [(0u8, 0u8, 0u8), (0, 100, 0), (5, 220, 1), (255, 255, 3)] {
                out.push(vec![cfg, kind, hi, lo, mul, 0, 200, 17, 1]);
            }
        }
    }
    out
}

fn tx_signature(data: &[u8]) -> u64 {
    let b = |i: usize| data.get(i).copied().unwrap_or(0);
    hash_of((b(0) & 0x1f, b(1) % 8, b(2) >> 5, data.len().min(8)))
}

#[test]
fn tx_mutation_fuzz() {
    let classes = run("tx", tx_seeds(), 4_000, tx_one, tx_signature);
    assert!(classes > 50, "{classes}");
}

/// A saturated sink is handed no further FPDU, the first FPDU of a call included:
/// the module feeds each piece of a socket buffer (its linear part and fragments)
/// with its own `feed_some` call, and a receive WQE taken for an FPDU past the room
/// in its queue of completions could not be completed. Pieces cut anywhere: an FPDU
/// already begun is finished (the parser stops at FPDU boundaries only).
#[test]
fn feed_some_stops_for_a_saturated_sink_at_every_piece() {
    let mut b = StreamBuilder::new(true, false);
    for i in 0..40u8 {
        b.send(&[i; 8], 1000);
    }
    let fpdu = b.out.len() / 40;
    let cfg = RxConfig {
        crc: true,
        markers: false,
        max_ulpdu: u16::MAX,
    };
    let (mut rx, mut sink) = rx_start(cfg);
    sink.saturate_after = 12;
    // One FPDU per piece, then pieces that cut FPDUs, as a peer's small Sends in
    // one skb of several fragments would arrive.
    let sizes = [fpdu, fpdu, fpdu, fpdu / 2, fpdu + 3, 1, 2 * fpdu, fpdu - 1];
    let mut rest = &b.out[..];
    let mut pieces = Vec::new();
    for &n in sizes.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (p, r) = rest.split_at(n.min(rest.len()));
        pieces.push(p);
        rest = r;
    }
    let (mut ended, mut drains) = (0, 0);
    for piece in pieces {
        let mut rest = piece;
        while !rest.is_empty() {
            let n = rx.feed_some(rest, rest.len(), &mut sink).unwrap();
            assert!(
                sink.ends <= 12,
                "{} segments ended past saturation",
                sink.ends
            );
            if n == 0 {
                // Only at a boundary, and only for a saturated sink: drain it.
                assert!(rx.at_boundary() && sink.ends == 12);
                ended += std::mem::take(&mut sink.ends);
                drains += 1;
            }
            rest = &rest[n..];
        }
    }
    ended += sink.ends;
    assert_eq!(ended, 40);
    assert_eq!(drains, 3);
}
