// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Tests of the RFC 7306 §5.1 ALU against a literal transcription of the RFC's pseudocode.

use super::*;

use crate::fuzz_harness::{reference_cmp_swap, reference_fetch_add};

/// splitmix64: tiny, good enough to spread test inputs, no dependency.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Masks of varied density: uniform, sparse, dense, field-like, all/none.
    fn mask(&mut self) -> u64 {
        let r = self.next();
        match r % 8 {
            0 => 0,
            1 => !0,
            2 => self.next() & self.next() & self.next(),
            3 => self.next() | self.next() | self.next(),
            4 => 1u64 << (self.next() % 64),
            // Field boundaries every 8/16/32 bits, like packed counters.
            5 => [
                0x8080_8080_8080_8080,
                0x8000_8000_8000_8000,
                0x8000_0000_8000_0000,
            ][(r >> 8) as usize % 3],
            _ => self.next(),
        }
    }

    /// Operands biased towards long carry chains.
    fn operand(&mut self) -> u64 {
        match self.next() % 4 {
            0 => !0 ^ (1u64 << (self.next() % 64)),
            1 => self.next() | self.next(),
            _ => self.next(),
        }
    }
}

const SEED: u64 = 0x7306_5011_dead_beef;
const RANDOM_CASES: u32 = 1_000_000;

#[test]
fn fetch_add_matches_pseudocode_on_random_inputs() {
    println!("masked FetchAdd: {RANDOM_CASES} random cases, splitmix64 seed {SEED:#018x}");
    let mut rng = SplitMix(SEED);
    for i in 0..RANDOM_CASES {
        let (o, a, m) = (rng.operand(), rng.operand(), rng.mask());
        assert_eq!(
            masked_fetch_add(o, a, m),
            reference_fetch_add(o, a, m),
            "case {i}: orig {o:#x} add {a:#x} mask {m:#x}"
        );
    }
}

#[test]
fn cmp_swap_matches_pseudocode_on_random_inputs() {
    let mut rng = SplitMix(SEED ^ 1);
    for i in 0..RANDOM_CASES {
        let orig = rng.operand();
        let cmask = rng.mask();
        // Half the cases compare equal under the mask, so both branches are exercised.
        let cmp = if i % 2 == 0 {
            (orig & cmask) | (rng.next() & !cmask)
        } else {
            rng.next()
        };
        let (swap, smask) = (rng.next(), rng.mask());
        let want = reference_cmp_swap(orig, cmp, cmask, swap, smask);
        let got = masked_cmp_swap(orig, cmp, cmask, swap, smask);
        assert_eq!(got.unwrap_or(orig), want, "case {i}");
        assert_eq!(got.is_some(), (cmp ^ orig) & cmask == 0, "case {i}");
    }
}

/// Checks one FetchAdd case against the pseudocode and an expected value.
fn check_fa(o: u64, a: u64, m: u64, want: u64) {
    assert_eq!(
        reference_fetch_add(o, a, m),
        want,
        "reference: {o:#x} + {a:#x} / {m:#x}"
    );
    assert_eq!(
        masked_fetch_add(o, a, m),
        want,
        "parallel: {o:#x} + {a:#x} / {m:#x}"
    );
}

#[test]
fn fetch_add_zero_mask_is_plain_wrapping_add() {
    // RFC 7306 §5.1.1: Add Mask 0 is a 64-bit add; the carry out of bit 63 is lost.
    check_fa(1, 2, 0, 3);
    check_fa(u64::MAX, 1, 0, 0);
    check_fa(u64::MAX, u64::MAX, 0, u64::MAX - 1);
    check_fa(0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0, 0);
    check_fa(0x0000_0000_FFFF_FFFF, 1, 0, 0x0000_0001_0000_0000);
}

#[test]
fn fetch_add_all_ones_mask_is_xor() {
    // Every bit is its own 1-bit field: no carry survives anywhere.
    check_fa(
        0xF0F0_1234_5678_9ABC,
        0xFFFF_0000_FFFF_0000,
        !0,
        0xF0F0_1234_5678_9ABC ^ 0xFFFF_0000_FFFF_0000,
    );
    check_fa(u64::MAX, u64::MAX, !0, 0);
}

#[test]
fn fetch_add_alternating_masks() {
    // 0x5555…: fields are bit 0, then bits 1..=2, 3..=4, … (MSB at each even bit).
    // 0xAAAA…: fields are bits 0..=1, 2..=3, … (MSB at each odd bit): 2-bit counters.
    check_fa(
        0xFFFF_FFFF_FFFF_FFFF,
        0x5555_5555_5555_5555,
        0xAAAA_AAAA_AAAA_AAAA,
        0,
    );
    // Each 2-bit counter 0b11 + 0b01 wraps to 0b00 with no carry into its neighbour.
    check_fa(
        0x3333_3333_3333_3333,
        0x1111_1111_1111_1111,
        0xAAAA_AAAA_AAAA_AAAA,
        0,
    );
    let mut rng = SplitMix(SEED ^ 2);
    for _ in 0..10_000 {
        let (o, a) = (rng.next(), rng.next());
        for m in [0x5555_5555_5555_5555, 0xAAAA_AAAA_AAAA_AAAA] {
            assert_eq!(masked_fetch_add(o, a, m), reference_fetch_add(o, a, m));
        }
    }
}

#[test]
fn fetch_add_single_bit_masks_at_every_position() {
    for i in 0..64 {
        let m = 1u64 << i;
        // All ones below and at the boundary + 1: the carry runs up to bit i and dies
        // there, leaving the bits above untouched (they are zero in both operands).
        let low = if i == 63 {
            u64::MAX
        } else {
            (1u64 << (i + 1)) - 1
        };
        check_fa(low, 1, m, 0);
        // Above the boundary a separate field counts on its own: carries inside it
        // propagate normally.
        if i < 62 {
            let above = 1u64 << (i + 1);
            check_fa(above | low, above | 1, m, above << 1);
        }
        let mut rng = SplitMix(SEED ^ (3 + i as u64));
        for _ in 0..2_000 {
            let (o, a) = (rng.operand(), rng.operand());
            assert_eq!(
                masked_fetch_add(o, a, m),
                reference_fetch_add(o, a, m),
                "bit {i}"
            );
        }
    }
}

#[test]
fn fetch_add_carries_stop_at_every_field_boundary() {
    // Two fields split after bit b (mask bits at b and 63): the low field overflows,
    // the high field must not see the carry; without the mask it would.
    for b in 0..63 {
        let m = (1u64 << b) | (1u64 << 63);
        let low_all = if b == 63 {
            u64::MAX
        } else {
            (1u64 << (b + 1)) - 1
        };
        check_fa(low_all, 1, m, 0);
        check_fa(low_all, 1, 0, low_all + 1);
        // Overflow of the high field (bit 63 is its MSB) wraps at 2^64 as well.
        let high = !low_all;
        check_fa(high, 1u64 << (b + 1), m, 0);
    }
}

#[test]
fn fetch_add_packed_counters() {
    // Two 32-bit counters: the low one wraps, the high one is incremented by its own addend.
    let m = 0x8000_0000_8000_0000;
    check_fa(
        0x0000_0001_FFFF_FFFF,
        0x0000_0001_0000_0001,
        m,
        0x0000_0002_0000_0000,
    );
    // Four 16-bit counters each +1, the second and fourth wrapping.
    check_fa(
        0xFFFF_0005_FFFF_0007,
        0x0001_0001_0001_0001,
        0x8000_8000_8000_8000,
        0x0000_0006_0000_0008,
    );
}

#[test]
fn cmp_swap_examples() {
    // Unmasked: equal → swap, unequal → unchanged, no write.
    let eq = AtomicOp::decode(
        AOpCode::CmpSwap,
        &AtomicFields::cmp_swap(5, 9),
        Dialect::Rfc7306,
    );
    assert_eq!(
        eq.map(|op| op.apply(5)),
        Ok(Outcome {
            original: 5,
            new: 9,
            write: true
        })
    );
    assert_eq!(
        eq.map(|op| op.apply(6)),
        Ok(Outcome {
            original: 6,
            new: 6,
            write: false
        })
    );
    // Masked: compare only the low byte, swap only the high byte.
    let f = AtomicFields {
        add_swap_data: 0xAB00_0000_0000_0000,
        add_swap_mask: 0xFF00_0000_0000_0000,
        compare_data: 0xFFFF_FFFF_FFFF_FF42,
        compare_mask: 0xFF,
    };
    let op = AtomicOp::decode(AOpCode::CmpSwap, &f, Dialect::Rfc7306);
    assert_eq!(
        op.map(|op| op.apply(0x1122_3344_5566_7742)),
        Ok(Outcome {
            original: 0x1122_3344_5566_7742,
            new: 0xAB22_3344_5566_7742,
            write: true
        })
    );
    assert_eq!(
        op.map(|op| op.apply(0x1122_3344_5566_7743).write),
        Ok(false)
    );
    // Compare Mask 0 always matches; Swap Mask 0 writes the original back.
    assert_eq!(masked_cmp_swap(7, 8, 0, 9, !0), Some(9));
    assert_eq!(masked_cmp_swap(7, 7, !0, 9, 0), Some(7));
}

#[test]
fn aopcode_encoding() {
    assert_eq!(AOpCode::from_bits(0), AOpCode::FetchAdd);
    assert_eq!(AOpCode::from_bits(1), AOpCode::Swap);
    assert_eq!(AOpCode::from_bits(2), AOpCode::CmpSwap);
    for v in 3..16u8 {
        assert_eq!(AOpCode::from_bits(v), AOpCode::Unknown(v));
    }
    for v in 0..16u8 {
        assert_eq!(AOpCode::from_bits(v).bits(), v);
    }
    // RFC 7306 §5.2.1: the 28 reserved bits are ignored on receive.
    assert_eq!(AOpCode::from_header_word(0xFFFF_FFF2), AOpCode::CmpSwap);
    assert_eq!(AOpCode::from_header_word(0x1234_5670), AOpCode::FetchAdd);
    assert_eq!(AOpCode::from_bits(0xF2), AOpCode::CmpSwap);
}

#[test]
fn unsupported_opcodes_are_refused() {
    let f = AtomicFields::swap(1);
    // RFC 7306 §10.1: 0x1 is reserved.
    assert_eq!(
        AtomicOp::decode(AOpCode::Swap, &f, Dialect::Rfc7306),
        Err(AtomicError::UnsupportedOpcode(1))
    );
    assert_eq!(
        AtomicOp::decode(AOpCode::Swap, &f, Dialect::Draft03),
        Ok(AtomicOp::Swap { data: 1 })
    );
    for v in 3..16u8 {
        for d in [Dialect::Rfc7306, Dialect::Draft03] {
            assert_eq!(
                AtomicOp::decode(AOpCode::from_bits(v), &f, d),
                Err(AtomicError::UnsupportedOpcode(v))
            );
        }
    }
}

#[test]
fn misaligned_targets_are_refused_before_anything_else() {
    let f = AtomicFields::fetch_add(1);
    for addr in 0x1000..0x1010u64 {
        let r = execute(AOpCode::FetchAdd, &f, Dialect::Rfc7306, addr, 41);
        if addr % 8 == 0 {
            assert_eq!(
                r,
                Ok(Outcome {
                    original: 41,
                    new: 42,
                    write: true
                })
            );
        } else {
            assert_eq!(r, Err(AtomicError::Misaligned), "{addr:#x}");
        }
    }
    // Alignment is checked even for an opcode that would be refused.
    assert_eq!(
        execute(AOpCode::Unknown(7), &f, Dialect::Rfc7306, 4, 0),
        Err(AtomicError::Misaligned)
    );
    assert_eq!(
        execute(AOpCode::Unknown(7), &f, Dialect::Rfc7306, 8, 0),
        Err(AtomicError::UnsupportedOpcode(7))
    );
    assert!(is_aligned(u64::MAX - 7));
    assert!(!is_aligned(u64::MAX));
}

/// Runs `op` with `base`, then with each field Figure 5 marks N/A replaced by
/// random values, and asserts the outcome never changes.
fn assert_ignores(
    op: AOpCode,
    dialect: Dialect,
    base: AtomicFields,
    ignored: &[fn(&mut AtomicFields, u64)],
) {
    let mut rng = SplitMix(SEED ^ 0x1600 ^ u64::from(op.bits()));
    for _ in 0..20_000 {
        let orig = rng.operand();
        let want = execute(op, &base, dialect, 0, orig);
        assert!(want.is_ok());
        for set in ignored {
            let mut f = base;
            set(&mut f, rng.next());
            assert_eq!(execute(op, &f, dialect, 0, orig), want, "{op:?} {f:?}");
        }
    }
}

#[test]
fn figure5_fields_marked_na_do_not_influence_the_result() {
    let base = AtomicFields {
        add_swap_data: 0x0123_4567_89AB_CDEF,
        add_swap_mask: 0x8000_8000_8000_8000,
        compare_data: 0,
        compare_mask: !0,
    };
    // FetchAdd: Compare Data and Compare Mask are N/A.
    assert_ignores(
        AOpCode::FetchAdd,
        Dialect::Rfc7306,
        base,
        &[|f, v| f.compare_data = v, |f, v| f.compare_mask = v],
    );
    // Swap (draft-03): Swap Mask, Compare Data and Compare Mask are N/A.
    assert_ignores(
        AOpCode::Swap,
        Dialect::Draft03,
        base,
        &[
            |f, v| f.add_swap_mask = v,
            |f, v| f.compare_data = v,
            |f, v| f.compare_mask = v,
        ],
    );
}

#[test]
fn figure5_fields_marked_valid_do_influence_the_result() {
    // The converse: each field an opcode uses can change its outcome.
    let fa = |f: AtomicFields| execute(AOpCode::FetchAdd, &f, Dialect::Rfc7306, 0, 0xFF);
    let base = AtomicFields::fetch_add(1);
    assert_ne!(
        fa(base),
        fa(AtomicFields {
            add_swap_data: 2,
            ..base
        })
    );
    assert_ne!(
        fa(base),
        fa(AtomicFields {
            add_swap_mask: 0x80,
            ..base
        })
    );

    let cs = |f: AtomicFields| execute(AOpCode::CmpSwap, &f, Dialect::Rfc7306, 0, 0xFF);
    let base = AtomicFields::cmp_swap(0xFF, 0x1234);
    assert_eq!(cs(base).map(|o| o.new), Ok(0x1234));
    assert_ne!(
        cs(base),
        cs(AtomicFields {
            add_swap_data: 0x5678,
            ..base
        })
    );
    assert_ne!(
        cs(base),
        cs(AtomicFields {
            add_swap_mask: 0xFF00,
            ..base
        })
    );
    assert_ne!(
        cs(base),
        cs(AtomicFields {
            compare_data: 0xFE,
            ..base
        })
    );
    let miss = AtomicFields {
        compare_data: 0xFE,
        ..base
    };
    assert_ne!(
        cs(miss),
        cs(AtomicFields {
            compare_mask: 0xFE,
            ..miss
        })
    );

    let sw = |f: AtomicFields| execute(AOpCode::Swap, &f, Dialect::Draft03, 0, 0xFF);
    assert_eq!(
        sw(AtomicFields::swap(3)),
        Ok(Outcome {
            original: 0xFF,
            new: 3,
            write: true
        })
    );
}

#[test]
fn transmit_encodings_follow_section_5_2_1() {
    assert_eq!(
        AtomicFields::fetch_add(5),
        AtomicFields {
            add_swap_data: 5,
            add_swap_mask: 0,
            compare_data: 0,
            compare_mask: !0
        }
    );
    assert_eq!(
        AtomicFields::swap(5),
        AtomicFields {
            add_swap_data: 5,
            add_swap_mask: !0,
            compare_data: 0,
            compare_mask: !0
        }
    );
    assert_eq!(
        AtomicFields::cmp_swap(4, 5),
        AtomicFields {
            add_swap_data: 5,
            add_swap_mask: !0,
            compare_data: 4,
            compare_mask: !0
        }
    );
}

/// The ALU is usable in constant contexts (no panics, no allocation).
const _: () = {
    assert!(masked_fetch_add(u64::MAX, 1, 0) == 0);
    assert!(masked_fetch_add(0xFF, 1, 0x80) == 0);
    match execute(
        AOpCode::FetchAdd,
        &AtomicFields::fetch_add(1),
        Dialect::Rfc7306,
        8,
        1,
    ) {
        Ok(o) => assert!(o.new == 2 && o.write),
        Err(_) => panic!(),
    }
};
