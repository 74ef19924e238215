// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The pattern of a seed (a function of the byte's offset) and the contents' digest.

/// SplitMix64 (Steele, Lea, Flood 2014): the pattern's and fsx's generator.
pub(super) fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Fill `buf` with SEED's pattern for the file range starting at `off`.
pub(super) fn pattern(seed: u64, off: u64, buf: &mut [u8]) {
    let key = splitmix(seed);
    let mut i = 0;
    while i < buf.len() {
        let o = off + i as u64;
        let word = splitmix(key ^ (o / 8)).to_le_bytes();
        let start = (o % 8) as usize;
        let n = (8 - start).min(buf.len() - i);
        buf[i..i + n].copy_from_slice(&word[start..start + n]);
        i += n;
    }
}

/// A 64-bit digest of a byte stream (order-sensitive, fed in any split).
pub(super) struct Digest {
    h: u64,
    len: u64,
}

impl Digest {
    pub(super) fn new() -> Self {
        Digest {
            h: 0xcbf2_9ce4_8422_2325,
            len: 0,
        }
    }
    pub(super) fn feed(&mut self, data: &[u8]) {
        for &b in data {
            self.h = (self.h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        self.len += data.len() as u64;
    }
    pub(super) fn finish(&self) -> u64 {
        splitmix(self.h ^ self.len)
    }
}
