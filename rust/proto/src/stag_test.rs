// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! SipHash-2-4 against its reference vectors; the STag index permutation.

use super::*;
use std::collections::HashSet;

/// The key of the SipHash paper's vectors: octets 00 01 … 0f.
fn ref_key() -> (u64, u64) {
    (0x0706_0504_0302_0100, 0x0f0e_0d0c_0b0a_0908)
}

/// The paper's Appendix A: the 15-octet message 00 01 … 0e.
#[test]
fn siphash_paper_vector() {
    let (k0, k1) = ref_key();
    let msg: Vec<u8> = (0..15).collect();
    assert_eq!(siphash24(k0, k1, &msg), 0xa129_ca61_49be_45e5);
}

/// The reference implementation's `vectors_sip64` for messages 00 01 … of
/// length 0 to 7 and 15, and every length to 64 against the Rust standard
/// library's `SipHasher` (SipHash-2-4 too), across word boundaries.
#[test]
fn siphash_reference_vectors() {
    let (k0, k1) = ref_key();
    let msg: Vec<u8> = (0..64).collect();
    let expect: [(usize, u64); 8] = [
        (0, 0x726f_db47_dd0e_0e31),
        (1, 0x74f8_39c5_93dc_67fd),
        (2, 0x0d6c_8009_d9a9_4f5a),
        (3, 0x8567_6696_d7fb_7e2d),
        (4, 0xcf27_94e0_2771_87b7),
        (5, 0x1876_5564_cd99_a68d),
        (6, 0xcbc9_466e_58fe_e3ce),
        (7, 0xab02_00f5_8b01_d137),
    ];
    for (len, want) in expect {
        assert_eq!(siphash24(k0, k1, &msg[..len]), want, "length {len}");
    }
    for len in 0..=64 {
        #[allow(deprecated)]
        let mut h = std::hash::SipHasher::new_with_keys(k0, k1);
        std::hash::Hasher::write(&mut h, &msg[..len]);
        let want = std::hash::Hasher::finish(&h);
        assert_eq!(siphash24(k0, k1, &msg[..len]), want, "length {len}");
    }
}

fn perm(seed: u8) -> IndexPerm {
    let mut key = [0u8; 16];
    for (i, b) in key.iter_mut().enumerate() {
        *b = seed.wrapping_mul(31).wrapping_add(i as u8 * 7);
    }
    IndexPerm::new(key)
}

/// Every slot of a full table (the module's 65,536 regions, and some more)
/// gets its own nonzero 24-bit index, which names it back.
#[test]
fn index_permutation_is_a_bijection_that_inverts() {
    let p = perm(1);
    let mut seen = HashSet::new();
    for slot in 1..=70_000u32 {
        let index = p.index(slot).unwrap();
        assert!(
            index != 0 && index < INDEX_LIMIT,
            "slot {slot}: index {index:#x}"
        );
        assert!(seen.insert(index), "slot {slot}: index {index:#x} twice");
        assert_eq!(p.slot(index), Some(slot));
    }
    // And from the index side: arbitrary indices name a slot that maps back.
    for i in 0..20_000u32 {
        let index = 1 + i.wrapping_mul(2_654_435_761) % (INDEX_LIMIT - 1);
        let slot = p.slot(index).unwrap();
        assert!(slot != 0 && slot < INDEX_LIMIT);
        assert_eq!(p.index(slot), Some(index));
    }
    assert_eq!(p.index(0), None);
    assert_eq!(p.index(INDEX_LIMIT), None);
    assert_eq!(p.slot(0), None);
    assert_eq!(p.slot(INDEX_LIMIT), None);
    assert_eq!(p.slot(u32::MAX), None);
}

/// The slot the bare network sends to 0 takes another index (the one 0
/// would have had), and that one names it back: index 0 is never produced.
#[test]
fn index_zero_is_walked_around() {
    for seed in 0..16 {
        let p = perm(seed);
        let f = |i, h| p.f(i, h);
        let s = backward(&f, 0);
        assert_ne!(s, 0);
        let index = p.index(s).unwrap();
        assert_ne!(index, 0);
        assert_eq!(index, forward(&f, 0));
        assert_eq!(p.slot(index), Some(s));
    }
}

/// Consecutive slots give unrelated indices: their differences and XORs are
/// (nearly) all distinct, and on average half of the 24 bits change.
#[test]
fn consecutive_slots_give_unrelated_indices() {
    let p = perm(2);
    let idx: Vec<u32> = (1..=1001u32).map(|s| p.index(s).unwrap()).collect();
    let diffs: HashSet<u32> = idx.windows(2).map(|w| w[1].wrapping_sub(w[0])).collect();
    let xors: HashSet<u32> = idx.windows(2).map(|w| w[1] ^ w[0]).collect();
    assert!(diffs.len() > 990, "{} distinct differences", diffs.len());
    assert!(xors.len() > 990, "{} distinct XORs", xors.len());
    let bits: u32 = idx.windows(2).map(|w| (w[1] ^ w[0]).count_ones()).sum();
    let mean = f64::from(bits) / 1000.0;
    assert!((11.0..13.0).contains(&mean), "mean bits changed {mean}");
    // Neither the slot order nor the high half survives.
    let rising = idx.windows(2).filter(|w| w[1] > w[0]).count();
    assert!((400..600).contains(&rising), "{rising} of 1000 rise");
    // Another key, another permutation.
    let q = perm(3);
    let same = (1..=1000u32).filter(|&s| p.index(s) == q.index(s)).count();
    assert!(same < 3, "{same} equal indices under two keys");
}

/// The table of the round function gives the same permutation, four loads a
/// lookup instead of four SipHash-2-4 calls.
#[test]
fn round_table_gives_the_same_permutation() {
    let p = perm(4);
    let mut table = vec![0u16; ROUND_TABLE_LEN];
    p.fill_rounds(&mut table);
    let t = Rounds(&table);
    for slot in (1..=70_000u32).chain([INDEX_LIMIT - 1, INDEX_LIMIT, 0]) {
        assert_eq!(t.index(slot), p.index(slot), "slot {slot}");
        if let Some(i) = p.index(slot) {
            assert_eq!(t.slot(i), Some(slot));
        }
    }
    let s = backward(&|i, h| p.f(i, h), 0);
    assert_eq!(t.index(s), p.index(s));
    assert_eq!(t.slot(0), None);
}
