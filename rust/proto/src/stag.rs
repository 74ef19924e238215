// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! STag indices a peer cannot derive from one another (RFC 5042 §5.1.2: an
//! STag must not be predictable from the STags the peer holds, or a peer
//! with one derives the others of the same PD; RFC 5040 §6.4 leaves their
//! choice to the RNIC).
//!
//! The 24-bit STag index (RFC 5040 §4.3: the upper 24 bits, the lower 8 the
//! consumer's key) names a slot of the device's dense table through a keyed
//! pseudo-random permutation of the index space: a 4-round Feistel network
//! over two 12-bit halves whose round function is SipHash-2-4 (Aumasson and
//! Bernstein, "SipHash: a fast short-input PRF", 2012) under a key drawn at
//! random for each device. Consecutive slots give unrelated indices, and an
//! index names a slot only through the inverse: a guessed index lands on a
//! slot outside the table, or on one the guesser cannot tell from any other.
//! Index 0 is never handed out (the permutation walks past it).

/// SipHash-2-4 of `msg` under the key `(k0, k1)` (the key's octets 0-7 and
/// 8-15, little-endian, as in the reference implementation).
pub fn siphash24(k0: u64, k1: u64, msg: &[u8]) -> u64 {
    let mut v = [
        k0 ^ 0x736f_6d65_7073_6575,
        k1 ^ 0x646f_7261_6e64_6f6d,
        k0 ^ 0x6c79_6765_6e65_7261,
        k1 ^ 0x7465_6462_7974_6573,
    ];
    let mut words = msg.chunks_exact(8);
    for w in &mut words {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        compress(&mut v, u64::from_le_bytes(b));
    }
    // The last word: the remaining octets and the length's low octet on top.
    let mut b = [0u8; 8];
    let tail = words.remainder();
    if let Some(dst) = b.get_mut(..tail.len()) {
        dst.copy_from_slice(tail);
    }
    b[7] = msg.len() as u8;
    compress(&mut v, u64::from_le_bytes(b));
    v[2] ^= 0xff;
    for _ in 0..4 {
        sip_round(&mut v);
    }
    v[0] ^ v[1] ^ v[2] ^ v[3]
}

/// One message word through the two compression rounds of SipHash-2-4.
fn compress(v: &mut [u64; 4], m: u64) {
    v[3] ^= m;
    sip_round(v);
    sip_round(v);
    v[0] ^= m;
}

fn sip_round(v: &mut [u64; 4]) {
    v[0] = v[0].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(13);
    v[1] ^= v[0];
    v[0] = v[0].rotate_left(32);
    v[2] = v[2].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(16);
    v[3] ^= v[2];
    v[0] = v[0].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(21);
    v[3] ^= v[0];
    v[2] = v[2].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(17);
    v[1] ^= v[2];
    v[2] = v[2].rotate_left(32);
}

/// Bits of an STag index (RFC 5040 §4.3).
pub const INDEX_BITS: u32 = 24;
/// One past the largest STag index.
pub const INDEX_LIMIT: u32 = 1 << INDEX_BITS;
/// Bits of each Feistel half.
const HALF_BITS: u32 = INDEX_BITS / 2;
const HALF_MASK: u32 = (1 << HALF_BITS) - 1;
/// Feistel rounds: four make a pseudo-random permutation of a pseudo-random
/// round function (Luby and Rackoff).
const ROUNDS: u8 = 4;

/// A keyed permutation of the nonzero 24-bit STag indices: table slot to
/// index ([`IndexPerm::index`]) and back ([`IndexPerm::slot`]).
#[derive(Clone, Copy)]
pub struct IndexPerm {
    k0: u64,
    k1: u64,
}

impl core::fmt::Debug for IndexPerm {
    // The key stays out of logs.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("IndexPerm")
    }
}

impl IndexPerm {
    /// The permutation of the 16-octet key `key` (draw it at random, once per
    /// table).
    pub fn new(key: [u8; 16]) -> Self {
        let mut k0 = [0u8; 8];
        let mut k1 = [0u8; 8];
        k0.copy_from_slice(key.get(..8).unwrap_or(&[0; 8]));
        k1.copy_from_slice(key.get(8..).unwrap_or(&[0; 8]));
        Self {
            k0: u64::from_le_bytes(k0),
            k1: u64::from_le_bytes(k1),
        }
    }

    /// The round function: 12 bits of SipHash-2-4 of the round and the half.
    fn f(&self, round: u8, half: u32) -> u32 {
        let h = half.to_le_bytes();
        (siphash24(self.k0, self.k1, &[round, h[0], h[1]]) as u32) & HALF_MASK
    }

    /// The STag index of table slot `slot` (nonzero, below 2^24): never 0,
    /// different for every slot. `None` for a slot outside that range.
    pub fn index(&self, slot: u32) -> Option<u32> {
        index_with(&|i, h| self.f(i, h), slot)
    }

    /// The table slot STag index `index` names: the inverse of
    /// [`Self::index`]. `None` for 0 and for values of more than 24 bits.
    pub fn slot(&self, index: u32) -> Option<u32> {
        slot_with(&|i, h| self.f(i, h), index)
    }

    /// Writes every value of the round function to `table` (at least
    /// [`ROUND_TABLE_LEN`] entries), for [`Rounds`]: four SipHash-2-4 calls
    /// per lookup become four loads.
    pub fn fill_rounds(&self, table: &mut [u16]) {
        for (i, slot) in table.iter_mut().take(ROUND_TABLE_LEN).enumerate() {
            let round = (i >> HALF_BITS) as u8;
            *slot = self.f(round, i as u32 & HALF_MASK) as u16;
        }
    }
}

/// Entries of a table of the round function: one per round and half.
pub const ROUND_TABLE_LEN: usize = (ROUNDS as usize) << HALF_BITS;

/// An [`IndexPerm`] through the table of its round function that
/// [`IndexPerm::fill_rounds`] wrote: the same permutation.
#[derive(Clone, Copy)]
pub struct Rounds<'a>(pub &'a [u16]);

impl Rounds<'_> {
    fn f(&self, round: u8, half: u32) -> u32 {
        let at = (usize::from(round) << HALF_BITS) | (half & HALF_MASK) as usize;
        // A short table still gives a permutation (any round function does).
        u32::from(self.0.get(at).copied().unwrap_or(0)) & HALF_MASK
    }

    /// [`IndexPerm::index`].
    pub fn index(&self, slot: u32) -> Option<u32> {
        index_with(&|i, h| self.f(i, h), slot)
    }

    /// [`IndexPerm::slot`].
    pub fn slot(&self, index: u32) -> Option<u32> {
        slot_with(&|i, h| self.f(i, h), index)
    }
}

/// The Feistel network of round function `f` over the whole index space, 0
/// included.
fn forward(f: &dyn Fn(u8, u32) -> u32, x: u32) -> u32 {
    let (mut l, mut r) = ((x >> HALF_BITS) & HALF_MASK, x & HALF_MASK);
    for i in 0..ROUNDS {
        (l, r) = (r, l ^ f(i, r));
    }
    (l << HALF_BITS) | r
}

/// The inverse of [`forward`].
fn backward(f: &dyn Fn(u8, u32) -> u32, y: u32) -> u32 {
    let (mut l, mut r) = ((y >> HALF_BITS) & HALF_MASK, y & HALF_MASK);
    for i in (0..ROUNDS).rev() {
        (l, r) = (r ^ f(i, l), l);
    }
    (l << HALF_BITS) | r
}

fn index_with(f: &dyn Fn(u8, u32) -> u32, slot: u32) -> Option<u32> {
    if slot == 0 || slot >= INDEX_LIMIT {
        return None;
    }
    // Cycle walking: 0 is outside the domain, so the slot whose image is 0
    // takes the image 0 would have had (not 0: `forward` is a bijection),
    // which no slot has as its own.
    let y = forward(f, slot);
    Some(if y == 0 { forward(f, 0) } else { y })
}

fn slot_with(f: &dyn Fn(u8, u32) -> u32, index: u32) -> Option<u32> {
    if index == 0 || index >= INDEX_LIMIT {
        return None;
    }
    let x = backward(f, index);
    Some(if x == 0 { backward(f, 0) } else { x })
}

#[cfg(test)]
#[path = "stag_test.rs"]
mod test;
