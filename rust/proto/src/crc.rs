// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! CRC-32C (Castagnoli), the MPA FPDU CRC of RFC 5044 §8 (computed as in RFC 3720 §12.1 / B.4).
//!
//! The [`Crc32c`] trait lets the kernel module plug in the kernel's accelerated
//! `crc32c()`; [`SoftCrc32c`] is the portable slicing-by-8 fallback used on the host
//! and as a reference. [`TEST_VECTORS`] is public so the module can check, at load
//! time, that whatever implementation it uses produces the same bytes.

/// Reflected CRC-32C polynomial (0x1EDC6F41 bit-reversed).
pub const CRC32C_POLY_REFLECTED: u32 = 0x82F6_3B78;

/// Register value to start a CRC with (RFC 3720 §12.1: the register is preset to ones).
pub const CRC32C_INIT: u32 = !0;

/// CRC-32C computation over a byte stream.
///
/// `update` has the contract of Linux's `crc32c(seed, data, len)`: the raw register
/// goes in and the raw register comes out, with no inversion on either side, so a
/// message may be fed in any number of pieces.
pub trait Crc32c {
    /// Feeds `data` into the raw CRC register `crc` and returns the new raw register.
    fn update(&self, crc: u32, data: &[u8]) -> u32;
}

/// Turns a raw register into the CRC value (the final one's complement of RFC 3720 §12.1).
///
/// MPA transmits this value little-endian (`u32::to_le_bytes`): RFC 5044 §8 takes the
/// byte order of RFC 3720 B.4, where 32 zero bytes give `aa 36 91 8a` on the wire.
#[inline]
pub const fn crc32c_finish(crc: u32) -> u32 {
    !crc
}

/// Builds the eight slicing tables at compile time; `T[0]` is the classic byte table,
/// `T[k][b]` is the CRC of byte `b` followed by `k` zero bytes.
const fn make_tables() -> [[u32; 256]; 8] {
    let mut t = [[0u32; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut bit = 0;
        while bit < 8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ CRC32C_POLY_REFLECTED
            } else {
                c >> 1
            };
            bit += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut k = 1;
    while k < 8 {
        let mut i = 0;
        while i < 256 {
            let prev = t[k - 1][i];
            t[k][i] = (prev >> 8) ^ t[0][(prev & 0xff) as usize];
            i += 1;
        }
        k += 1;
    }
    t
}

/// Slicing-by-8 lookup tables (8 KiB), computed by the compiler.
static TABLES: [[u32; 256]; 8] = make_tables();

/// Index of the low byte of `x` in a 256-entry table; `as u8` makes it always in bounds.
#[inline(always)]
fn lo(x: u32) -> usize {
    usize::from(x as u8)
}

/// One byte of the classic table-driven (Sarwate) algorithm.
#[inline(always)]
fn step_byte(crc: u32, b: u8) -> u32 {
    (crc >> 8) ^ TABLES[0][lo(crc ^ u32::from(b))]
}

/// Portable table-driven CRC-32C (slicing-by-8, about 8 KiB of tables).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SoftCrc32c;

impl Crc32c for SoftCrc32c {
    fn update(&self, crc: u32, data: &[u8]) -> u32 {
        soft_update(crc, data)
    }
}

/// Software CRC-32C register update; same contract as [`Crc32c::update`].
pub fn soft_update(mut crc: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let a = crc ^ u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        crc = TABLES[7][lo(a)]
            ^ TABLES[6][lo(a >> 8)]
            ^ TABLES[5][lo(a >> 16)]
            ^ TABLES[4][lo(a >> 24)]
            ^ TABLES[3][usize::from(c[4])]
            ^ TABLES[2][usize::from(c[5])]
            ^ TABLES[1][usize::from(c[6])]
            ^ TABLES[0][usize::from(c[7])];
    }
    for &b in chunks.remainder() {
        crc = step_byte(crc, b);
    }
    crc
}

/// CRC-32C of `data` in one go: `crc32c_finish(update(CRC32C_INIT, data))`.
pub fn crc32c(data: &[u8]) -> u32 {
    crc32c_finish(soft_update(CRC32C_INIT, data))
}

/// The iSCSI SCSI Read (10) command PDU of RFC 3720 B.4.
const ISCSI_READ_PDU: [u8; 48] = [
    0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18,
    0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
];

/// Builds 0, 1, …, 31 (`rev == false`) or 31, 30, …, 0 (`rev == true`).
const fn ramp(rev: bool) -> [u8; 32] {
    let mut a = [0u8; 32];
    let mut i = 0;
    while i < 32 {
        a[i] = if rev { 31 - i as u8 } else { i as u8 };
        i += 1;
    }
    a
}

const INCREMENTING: [u8; 32] = ramp(false);
const DECREMENTING: [u8; 32] = ramp(true);

/// Known answers: `(message, crc32c(message))`. The first five are RFC 3720 B.4
/// (whose "CRC" bytes are `value.to_le_bytes()`), the last the usual "123456789" check.
pub const TEST_VECTORS: &[(&[u8], u32)] = &[
    (&[0x00; 32], 0x8A91_36AA),
    (&[0xff; 32], 0x62A8_AB43),
    (&INCREMENTING, 0x46DD_794E),
    (&DECREMENTING, 0x113F_DB5C),
    (&ISCSI_READ_PDU, 0xD996_3A56),
    (b"123456789", 0xE306_9283),
];

/// Checks `imp` against [`TEST_VECTORS`], one-shot and fed byte by byte; returns
/// the index of the first failing vector. Meant for a load-time self-test.
pub fn self_test<C: Crc32c + ?Sized>(imp: &C) -> Result<(), usize> {
    for (i, &(msg, want)) in TEST_VECTORS.iter().enumerate() {
        let one = crc32c_finish(imp.update(CRC32C_INIT, msg));
        let mut reg = CRC32C_INIT;
        for b in msg.chunks(1) {
            reg = imp.update(reg, b);
        }
        if one != want || crc32c_finish(reg) != want {
            return Err(i);
        }
    }
    Ok(())
}

#[cfg(test)]
mod test {
    use super::*;

    /// Bit-at-a-time reference, straight from the polynomial.
    fn bitwise(mut crc: u32, data: &[u8]) -> u32 {
        for &b in data {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 != 0 {
                    (crc >> 1) ^ CRC32C_POLY_REFLECTED
                } else {
                    crc >> 1
                };
            }
        }
        crc
    }

    #[test]
    fn rfc3720_b4_wire_bytes() {
        // The byte strings printed in RFC 3720 B.4 after "CRC:".
        let wire: [[u8; 4]; 5] = [
            [0xaa, 0x36, 0x91, 0x8a],
            [0x43, 0xab, 0xa8, 0x62],
            [0x4e, 0x79, 0xdd, 0x46],
            [0x5c, 0xdb, 0x3f, 0x11],
            [0x56, 0x3a, 0x96, 0xd9],
        ];
        for (i, w) in wire.iter().enumerate() {
            assert_eq!(crc32c(TEST_VECTORS[i].0).to_le_bytes(), *w, "vector {i}");
        }
    }

    #[test]
    fn vectors_match_table_and_bitwise() {
        for &(msg, want) in TEST_VECTORS {
            assert_eq!(crc32c(msg), want);
            assert_eq!(crc32c_finish(bitwise(CRC32C_INIT, msg)), want);
        }
        assert_eq!(self_test(&SoftCrc32c), Ok(()));
    }

    #[test]
    fn self_test_rejects_wrong_impl() {
        struct Broken;
        impl Crc32c for Broken {
            fn update(&self, crc: u32, data: &[u8]) -> u32 {
                soft_update(crc, data) ^ 1
            }
        }
        assert_eq!(self_test(&Broken), Err(0));
    }

    #[test]
    fn empty_input_leaves_register() {
        assert_eq!(SoftCrc32c.update(0x1234_5678, &[]), 0x1234_5678);
        assert_eq!(crc32c(&[]), 0);
    }

    #[test]
    fn incremental_equals_one_shot_at_every_split() {
        let msg: [u8; 83] = core::array::from_fn(|i| (i as u8).wrapping_mul(37) ^ 0x5a);
        let whole = crc32c(&msg);
        for a in 0..=msg.len() {
            for b in a..=msg.len() {
                let r = SoftCrc32c.update(CRC32C_INIT, &msg[..a]);
                let r = SoftCrc32c.update(r, &msg[a..b]);
                let r = SoftCrc32c.update(r, &msg[b..]);
                assert_eq!(crc32c_finish(r), whole, "split {a}/{b}");
            }
        }
    }

    #[test]
    fn slicing_matches_bitwise_on_all_lengths_and_seeds() {
        let msg: [u8; 300] = core::array::from_fn(|i| (i as u8).wrapping_mul(151).wrapping_add(7));
        for len in 0..msg.len() {
            for seed in [0u32, !0, 0xdead_beef] {
                assert_eq!(
                    soft_update(seed, &msg[..len]),
                    bitwise(seed, &msg[..len]),
                    "{len}"
                );
            }
        }
    }
}
