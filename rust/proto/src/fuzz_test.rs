// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Bounded, deterministic mutation fuzzing of the fuzz entry points, run by `cargo test`.
//!
//! A seeded PRNG mutates a fixture corpus (bit flips, interesting bytes and lengths,
//! truncation, extension, splices); inputs that reach a new outcome class join the
//! corpus. Iteration counts are sized for a few seconds in a debug build; the
//! cargo-fuzz targets in `fuzz/` run the same entry points without bounds.

use super::*;
use crate::mpa::{reject_reply, request, respond, Rtr};
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
    let mut rng = Rng(SEED);
    let seeds = (0..16u8)
        .map(|op| {
            let mut v = vec![op | if op % 2 == 0 { 0x10 } else { 0 }];
            for _ in 0..56 {
                v.push(rng.next() as u8);
            }
            v[41..49].copy_from_slice(&0x1000u64.to_be_bytes());
            v
        })
        .collect();
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
