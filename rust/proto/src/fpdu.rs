// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! MPA FPDU framing (RFC 5044 §4): ULPDU_Length, PAD, CRC trailer, the Marker format
//! (§4.3) and the MULPDU computation (§4.1).
//!
//! The CRC field is always present on the wire: when CRC was not negotiated it is sent
//! as zero and not checked on receipt (RFC 5044 §4.4 / §7.1), which is also what siw does.

use super::bytes::{be16, put_be16};

/// Size of the ULPDU_Length field.
pub const LEN_FIELD: usize = 2;
/// Size of the CRC trailer (present whether or not CRC was negotiated).
pub const CRC_LEN: usize = 4;
/// Size of an MPA Marker (RFC 5044 §4.3).
pub const MARKER_LEN: usize = 4;
/// Markers sit every 512 octets of the stream (RFC 5044 §4.3).
pub const MARKER_INTERVAL: usize = 512;
/// The longest ULPDU the 16-bit length field can express.
pub const MAX_ULPDU: usize = u16::MAX as usize;

/// Byte ranges of the FPDU header.
pub mod field {
    /// ULPDU_Length, big-endian (RFC 5044 §4.1).
    pub const ULPDU_LENGTH: core::ops::Range<usize> = 0..2;
    /// First octet of the ULPDU (the DDP header).
    pub const ULPDU: usize = 2;
}

/// Number of PAD octets: ULPDU_Length + ULPDU + PAD is a multiple of 4 (RFC 5044 §4.2).
pub const fn pad_len(ulpdu_len: u16) -> usize {
    (4 - ((ulpdu_len as usize + LEN_FIELD) & 3)) & 3
}

/// Length of an FPDU without markers: length field, ULPDU, PAD and CRC.
pub const fn fpdu_len(ulpdu_len: u16) -> usize {
    LEN_FIELD + ulpdu_len as usize + pad_len(ulpdu_len) + CRC_LEN
}

/// The Maximum ULPDU for an Effective MSS (RFC 5044 §4.1, MULPDU definition):
/// `EMSS - (6 + 4 * ceil(EMSS / 512) + EMSS mod 4)` with markers, and
/// `EMSS - (6 + EMSS mod 4)` without. Saturates at 0 and at the 16-bit length field.
pub const fn mulpdu(emss: u32, markers: bool) -> u16 {
    let marker_room = if markers {
        4 * emss.div_ceil(MARKER_INTERVAL as u32)
    } else {
        0
    };
    let overhead = 6 + marker_room + emss % 4;
    let m = emss.saturating_sub(overhead);
    if m > u16::MAX as u32 {
        u16::MAX
    } else {
        m as u16
    }
}

/// A read-only or read-write view of an FPDU (without markers) in a buffer.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

/// Why a buffer cannot be an FPDU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// Shorter than the FPDU its ULPDU_Length announces.
    Truncated,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking it; accessors return zeroes/empty slices past its end.
    pub const fn new_unchecked(buffer: T) -> Self {
        Self { buffer }
    }

    /// Wraps a buffer after [`Packet::check_len`].
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Checks that the buffer holds the whole FPDU announced by its length field.
    pub fn check_len(&self) -> Result<(), Error> {
        let b = self.buffer.as_ref();
        if b.len() < LEN_FIELD || b.len() < fpdu_len(self.ulpdu_len()) {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    /// ULPDU_Length.
    pub fn ulpdu_len(&self) -> u16 {
        be16(self.buffer.as_ref(), field::ULPDU_LENGTH.start)
    }

    /// The ULPDU (empty if the buffer is short).
    pub fn ulpdu(&self) -> &[u8] {
        let end = field::ULPDU + usize::from(self.ulpdu_len());
        self.buffer.as_ref().get(field::ULPDU..end).unwrap_or(&[])
    }

    /// The octets the CRC covers: length field, ULPDU and PAD.
    pub fn crc_covered(&self) -> &[u8] {
        let end = fpdu_len(self.ulpdu_len()) - CRC_LEN;
        self.buffer.as_ref().get(..end).unwrap_or(&[])
    }

    /// The CRC field as sent (`crc32c_finish(reg).to_le_bytes()`, see the crate docs).
    pub fn crc_field(&self) -> [u8; 4] {
        let at = fpdu_len(self.ulpdu_len()) - CRC_LEN;
        let mut out = [0u8; 4];
        if let Some(s) = self.buffer.as_ref().get(at..at + CRC_LEN) {
            out.copy_from_slice(s);
        }
        out
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets ULPDU_Length.
    pub fn set_ulpdu_len(&mut self, len: u16) {
        put_be16(self.buffer.as_mut(), field::ULPDU_LENGTH.start, len);
    }
}

/// An MPA Marker (RFC 5044 §4.3): 16 reserved bits, then FPDUPTR, the number of octets
/// from the start of the ULPDU_Length field of the current FPDU back from the Marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Marker {
    /// FPDUPTR. Its low two bits are sent as zero and treated as zero on receipt.
    pub fpduptr: u16,
}

impl Marker {
    /// Decodes a marker; the reserved half is ignored on receipt.
    pub fn parse(b: [u8; 4]) -> Self {
        // RFC 5044 §4.3: receivers treat the two low bits of FPDUPTR as zero.
        Self {
            fpduptr: u16::from_be_bytes([b[2], b[3]]) & !3,
        }
    }

    /// Encodes a marker with zero reserved bits.
    pub fn emit(&self) -> [u8; 4] {
        let p = (self.fpduptr & !3).to_be_bytes();
        [0, 0, p[0], p[1]]
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::crc::{crc32c_finish, Crc32c, SoftCrc32c, CRC32C_INIT};

    /// An FPDU carrying a 3-octet ULPDU: length 3, ULPDU, 3 octets PAD, CRC.
    static FPDU3: [u8; 12] = [0x00, 0x03, 0xaa, 0xbb, 0xcc, 0, 0, 0, 0, 0, 0, 0];

    #[test]
    fn pad_makes_multiples_of_four() {
        for len in 0..=u16::MAX {
            let total = LEN_FIELD + usize::from(len) + pad_len(len);
            assert_eq!(total % 4, 0);
            assert!(pad_len(len) < 4);
        }
        assert_eq!(pad_len(2), 0);
        assert_eq!(pad_len(3), 3);
        assert_eq!(fpdu_len(18), 24);
    }

    #[test]
    fn parse_fpdu() {
        let p = Packet::new_checked(&FPDU3[..]).unwrap();
        assert_eq!(p.ulpdu_len(), 3);
        assert_eq!(p.ulpdu(), &[0xaa, 0xbb, 0xcc]);
        assert_eq!(p.crc_covered().len(), 8);
    }

    #[test]
    fn impossible_lengths() {
        assert_eq!(
            Packet::new_checked(&FPDU3[..11]).unwrap_err(),
            Error::Truncated
        );
        assert_eq!(
            Packet::new_checked(&[0xffu8, 0xff, 0][..]).unwrap_err(),
            Error::Truncated
        );
        assert_eq!(
            Packet::new_checked(&[0u8][..]).unwrap_err(),
            Error::Truncated
        );
        // Unchecked accessors on a short buffer return empty views instead of panicking.
        let p = Packet::new_unchecked(&[0xffu8, 0xff][..]);
        assert_eq!(p.ulpdu(), &[] as &[u8]);
        assert_eq!(p.crc_field(), [0; 4]);
    }

    #[test]
    fn emit_and_crc_trailer_order() {
        let mut b = [0u8; 12];
        let mut p = Packet::new_unchecked(&mut b[..]);
        p.set_ulpdu_len(3);
        b[2..5].copy_from_slice(&[0xaa, 0xbb, 0xcc]);
        let crc = crc32c_finish(SoftCrc32c.update(CRC32C_INIT, &b[..8]));
        b[8..].copy_from_slice(&crc.to_le_bytes());
        let p = Packet::new_checked(&b[..]).unwrap();
        assert_eq!(u32::from_le_bytes(p.crc_field()), crc);
        assert_eq!(&b[..8], &FPDU3[..8]);
    }

    #[test]
    fn marker_bytes() {
        assert_eq!(Marker { fpduptr: 0x01fc }.emit(), [0, 0, 0x01, 0xfc]);
        assert_eq!(
            Marker::parse([0xde, 0xad, 0x02, 0x03]),
            Marker { fpduptr: 0x0200 }
        );
    }

    #[test]
    fn mulpdu_from_emss() {
        // 1460 - (6 + 4 * 3 + 0) with markers, 1460 - 6 without.
        assert_eq!(mulpdu(1460, true), 1442);
        assert_eq!(mulpdu(1460, false), 1454);
        // EMSS mod 4 is given up so that FPDUs stay 4-aligned.
        assert_eq!(mulpdu(1461, false), 1454);
        assert_eq!(mulpdu(4, true), 0);
        assert_eq!(mulpdu(u32::MAX, false), u16::MAX);
    }
}
