// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Big-endian field access that never panics, shared by the RFC 5040/5041/5044 wire views.
//!
//! Every read of a short buffer yields 0 and every write past its end is dropped, so a
//! view whose `check_len` was skipped still cannot panic on peer-controlled lengths.

/// Reads `N` bytes at `at`, or zeroes if the buffer is too short.
fn get<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    if let Some(end) = at.checked_add(N) {
        if let Some(src) = b.get(at..end) {
            out.copy_from_slice(src);
        }
    }
    out
}

/// Writes `v` at `at` if it fits; returns whether it did.
fn put(b: &mut [u8], at: usize, v: &[u8]) -> bool {
    match at.checked_add(v.len()).and_then(|end| b.get_mut(at..end)) {
        Some(dst) => {
            dst.copy_from_slice(v);
            true
        }
        None => false,
    }
}

/// The byte at `at`, or 0.
pub(crate) fn u8_at(b: &[u8], at: usize) -> u8 {
    b.get(at).copied().unwrap_or(0)
}

/// The big-endian u16 at `at`, or 0.
pub(crate) fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes(get(b, at))
}

/// The big-endian u32 at `at`, or 0.
pub(crate) fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(get(b, at))
}

/// The big-endian u64 at `at`, or 0.
pub(crate) fn be64(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(get(b, at))
}

/// Stores `v` at `at` if it fits.
pub(crate) fn put_u8(b: &mut [u8], at: usize, v: u8) -> bool {
    put(b, at, &[v])
}

/// Stores big-endian `v` at `at` if it fits.
pub(crate) fn put_be16(b: &mut [u8], at: usize, v: u16) -> bool {
    put(b, at, &v.to_be_bytes())
}

/// Stores big-endian `v` at `at` if it fits.
pub(crate) fn put_be32(b: &mut [u8], at: usize, v: u32) -> bool {
    put(b, at, &v.to_be_bytes())
}

/// Stores big-endian `v` at `at` if it fits.
pub(crate) fn put_be64(b: &mut [u8], at: usize, v: u64) -> bool {
    put(b, at, &v.to_be_bytes())
}

/// Copies `v` to `at` if it fits.
pub(crate) fn put_slice(b: &mut [u8], at: usize, v: &[u8]) -> bool {
    put(b, at, v)
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn short_buffers_read_zero_and_drop_writes() {
        let mut b = [1u8, 2, 3];
        assert_eq!(be16(&b, 1), 0x0203);
        assert_eq!(be32(&b, 0), 0);
        assert_eq!(be64(&b, usize::MAX), 0);
        assert!(!put_be32(&mut b, 0, 7));
        assert!(!put_be16(&mut b, usize::MAX, 7));
        assert_eq!(b, [1, 2, 3]);
        assert!(put_be16(&mut b, 1, 0xabcd));
        assert_eq!(b, [1, 0xab, 0xcd]);
    }
}
