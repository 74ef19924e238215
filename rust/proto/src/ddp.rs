// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! DDP segment headers (RFC 5041 §5): the control field, the Tagged Buffer header
//! (§5.2) and the Untagged Buffer header (§5.3), as a byte view and a `Repr`.

use super::bytes::{be32, be64, put_be32, put_be64, put_u8, u8_at};

/// DDP version this implementation speaks (RFC 5041 §5.1: DV = 01b).
pub const VERSION: u8 = 1;
/// Tagged header length: control, RsvdULP, STag, TO.
pub const TAGGED_HDR_LEN: usize = 14;
/// Untagged header length: control, RsvdULP, RsvdULP word, QN, MSN, MO.
pub const UNTAGGED_HDR_LEN: usize = 18;
/// The largest DDP header.
pub const MAX_HDR_LEN: usize = UNTAGGED_HDR_LEN;

/// Byte ranges of a DDP header, relative to the first octet of the ULPDU.
pub mod field {
    use core::ops::Range;
    /// T | L | Rsvd(4) | DV(2).
    pub const CTRL: usize = 0;
    /// RsvdULP octet, carried for RDMAP (RV, Rsvd, Opcode).
    pub const ULP_CTRL: usize = 1;
    /// Tagged: Data Sink STag.
    pub const STAG: Range<usize> = 2..6;
    /// Tagged: Data Sink Tagged Offset.
    pub const TO: Range<usize> = 6..14;
    /// Untagged: the 32-bit RsvdULP field (RDMAP: Invalidate STag).
    pub const ULP_WORD: Range<usize> = 2..6;
    /// Untagged: Queue Number.
    pub const QN: Range<usize> = 6..10;
    /// Untagged: Message Sequence Number.
    pub const MSN: Range<usize> = 10..14;
    /// Untagged: Message Offset.
    pub const MO: Range<usize> = 14..18;
}

/// Tagged flag in the control octet.
pub const FLAG_T: u8 = 0x80;
/// Last flag in the control octet.
pub const FLAG_L: u8 = 0x40;
/// DDP version bits in the control octet.
pub const MASK_DV: u8 = 0x03;

/// Header length for a control octet.
pub const fn header_len(ctrl: u8) -> usize {
    if ctrl & FLAG_T != 0 {
        TAGGED_HDR_LEN
    } else {
        UNTAGGED_HDR_LEN
    }
}

/// Why a buffer is not a valid DDP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// Shorter than the header the T bit announces.
    Truncated,
    /// DV is not 1 (RFC 5041 §7.2: tagged 0x04 / untagged 0x06).
    Version {
        /// The T bit of the offending header: it selects the error type.
        tagged: bool,
    },
}

/// A view of a DDP segment (header and payload) in a buffer.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking; short-buffer accessors return zero.
    pub const fn new_unchecked(buffer: T) -> Self {
        Self { buffer }
    }

    /// Wraps a buffer after [`Packet::check_len`].
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Checks that the whole header announced by the T bit is present.
    pub fn check_len(&self) -> Result<(), Error> {
        let b = self.buffer.as_ref();
        if b.is_empty() || b.len() < header_len(self.ctrl()) {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    /// The control octet.
    pub fn ctrl(&self) -> u8 {
        u8_at(self.buffer.as_ref(), field::CTRL)
    }
    /// T: tagged buffer model.
    pub fn tagged(&self) -> bool {
        self.ctrl() & FLAG_T != 0
    }
    /// L: last segment of the message.
    pub fn last(&self) -> bool {
        self.ctrl() & FLAG_L != 0
    }
    /// DV.
    pub fn version(&self) -> u8 {
        self.ctrl() & MASK_DV
    }
    /// The RsvdULP octet (RDMAP control).
    pub fn ulp_ctrl(&self) -> u8 {
        u8_at(self.buffer.as_ref(), field::ULP_CTRL)
    }
    /// Tagged: STag.
    pub fn stag(&self) -> u32 {
        be32(self.buffer.as_ref(), field::STAG.start)
    }
    /// Tagged: TO.
    pub fn to(&self) -> u64 {
        be64(self.buffer.as_ref(), field::TO.start)
    }
    /// Untagged: the 32-bit RsvdULP field.
    pub fn ulp_word(&self) -> u32 {
        be32(self.buffer.as_ref(), field::ULP_WORD.start)
    }
    /// Untagged: QN.
    pub fn qn(&self) -> u32 {
        be32(self.buffer.as_ref(), field::QN.start)
    }
    /// Untagged: MSN.
    pub fn msn(&self) -> u32 {
        be32(self.buffer.as_ref(), field::MSN.start)
    }
    /// Untagged: MO.
    pub fn mo(&self) -> u32 {
        be32(self.buffer.as_ref(), field::MO.start)
    }
    /// The octets after the DDP header.
    pub fn payload(&self) -> &[u8] {
        self.buffer
            .as_ref()
            .get(header_len(self.ctrl())..)
            .unwrap_or(&[])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the control octet.
    pub fn set_ctrl(&mut self, v: u8) {
        put_u8(self.buffer.as_mut(), field::CTRL, v);
    }
    /// Sets the RsvdULP octet.
    pub fn set_ulp_ctrl(&mut self, v: u8) {
        put_u8(self.buffer.as_mut(), field::ULP_CTRL, v);
    }
    /// Sets the tagged STag.
    pub fn set_stag(&mut self, v: u32) {
        put_be32(self.buffer.as_mut(), field::STAG.start, v);
    }
    /// Sets the tagged TO.
    pub fn set_to(&mut self, v: u64) {
        put_be64(self.buffer.as_mut(), field::TO.start, v);
    }
    /// Sets the untagged RsvdULP word.
    pub fn set_ulp_word(&mut self, v: u32) {
        put_be32(self.buffer.as_mut(), field::ULP_WORD.start, v);
    }
    /// Sets QN.
    pub fn set_qn(&mut self, v: u32) {
        put_be32(self.buffer.as_mut(), field::QN.start, v);
    }
    /// Sets MSN.
    pub fn set_msn(&mut self, v: u32) {
        put_be32(self.buffer.as_mut(), field::MSN.start, v);
    }
    /// Sets MO.
    pub fn set_mo(&mut self, v: u32) {
        put_be32(self.buffer.as_mut(), field::MO.start, v);
    }
}

/// Which buffer model a segment uses and its addressing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Buffer {
    /// Tagged Buffer model (RFC 5041 §5.2).
    Tagged {
        /// Data Sink STag.
        stag: u32,
        /// Data Sink Tagged Offset of the first payload octet.
        to: u64,
    },
    /// Untagged Buffer model (RFC 5041 §5.3).
    Untagged {
        /// The RsvdULP word (RDMAP: Invalidate STag for Send with Invalidate).
        ulp_word: u32,
        /// Queue Number.
        qn: u32,
        /// Message Sequence Number.
        msn: u32,
        /// Message Offset of the first payload octet.
        mo: u32,
    },
}

/// A parsed DDP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    /// L flag.
    pub last: bool,
    /// The RsvdULP octet, passed to RDMAP.
    pub ulp_ctrl: u8,
    /// Model and addressing.
    pub buffer: Buffer,
}

impl Repr {
    /// Parses and validates a header. Reserved control bits are ignored on receipt.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Self, Error> {
        p.check_len()?;
        // RFC 5041 §7.2: a DV other than 1 is a version error of the segment's model.
        if p.version() != VERSION {
            return Err(Error::Version { tagged: p.tagged() });
        }
        let buffer = if p.tagged() {
            Buffer::Tagged {
                stag: p.stag(),
                to: p.to(),
            }
        } else {
            Buffer::Untagged {
                ulp_word: p.ulp_word(),
                qn: p.qn(),
                msn: p.msn(),
                mo: p.mo(),
            }
        };
        Ok(Self {
            last: p.last(),
            ulp_ctrl: p.ulp_ctrl(),
            buffer,
        })
    }

    /// The header's length on the wire.
    pub const fn buffer_len(&self) -> usize {
        match self.buffer {
            Buffer::Tagged { .. } => TAGGED_HDR_LEN,
            Buffer::Untagged { .. } => UNTAGGED_HDR_LEN,
        }
    }

    /// Writes the header (reserved bits zero, DV 1) to the start of `p`.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        let l = if self.last { FLAG_L } else { 0 };
        p.set_ulp_ctrl(self.ulp_ctrl);
        match self.buffer {
            Buffer::Tagged { stag, to } => {
                p.set_ctrl(FLAG_T | l | VERSION);
                p.set_stag(stag);
                p.set_to(to);
            }
            Buffer::Untagged {
                ulp_word,
                qn,
                msn,
                mo,
            } => {
                p.set_ctrl(l | VERSION);
                p.set_ulp_word(ulp_word);
                p.set_qn(qn);
                p.set_msn(msn);
                p.set_mo(mo);
            }
        }
    }
}

/// Whether `[to, to + len)` lies within a tagged buffer `[base, base + size)`, computed
/// without overflow for any inputs (RFC 5041 §7.2 base/bounds; siw's `addr + len` check
/// lets a wrapping TO through): `to >= base && len <= size && to - base <= size - len`.
pub const fn within(base: u64, size: u64, to: u64, len: u64) -> bool {
    to >= base && len <= size && to - base <= size - len
}

#[cfg(test)]
mod test {
    use super::*;

    /// RFC 5041 Figure 4 + 5: tagged, L=1, DV=1, RsvdULP 0x40 (RDMA Write), STag
    /// 0x11223344, TO 0x0102030405060708, then two payload octets.
    static TAGGED: [u8; 16] = [
        0xc1, 0x40, 0x11, 0x22, 0x33, 0x44, 1, 2, 3, 4, 5, 6, 7, 8, 0xee, 0xff,
    ];
    /// RFC 5041 Figure 6: untagged, L=0, DV=1, RsvdULP 0x43 (Send), word 0, QN 0,
    /// MSN 1, MO 0x100.
    static UNTAGGED: [u8; 18] = [0x01, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0];

    #[test]
    fn parse_tagged() {
        let p = Packet::new_checked(&TAGGED[..]).unwrap();
        assert_eq!(
            Repr::parse(&p).unwrap(),
            Repr {
                last: true,
                ulp_ctrl: 0x40,
                buffer: Buffer::Tagged {
                    stag: 0x1122_3344,
                    to: 0x0102_0304_0506_0708
                }
            }
        );
        assert_eq!(p.payload(), &[0xee, 0xff]);
    }

    #[test]
    fn parse_untagged() {
        let p = Packet::new_checked(&UNTAGGED[..]).unwrap();
        let r = Repr::parse(&p).unwrap();
        assert_eq!(
            r.buffer,
            Buffer::Untagged {
                ulp_word: 0,
                qn: 0,
                msn: 1,
                mo: 0x100
            }
        );
        assert!(!r.last);
        assert_eq!(r.buffer_len(), 18);
    }

    #[test]
    fn emit_matches_fixtures() {
        for fixture in [&TAGGED[..14], &UNTAGGED[..]] {
            let r = Repr::parse(&Packet::new_unchecked(fixture)).unwrap();
            let mut out = [0u8; 18];
            r.emit(&mut Packet::new_unchecked(&mut out[..]));
            assert_eq!(&out[..r.buffer_len()], fixture);
        }
    }

    #[test]
    fn reserved_bits_ignored_version_checked() {
        let mut b = UNTAGGED;
        b[0] |= 0x3c;
        assert!(Repr::parse(&Packet::new_unchecked(&b[..])).is_ok());
        b[0] = 0x02;
        assert_eq!(
            Repr::parse(&Packet::new_unchecked(&b[..])),
            Err(Error::Version { tagged: false })
        );
        let mut t = TAGGED;
        t[0] = 0xc0;
        assert_eq!(
            Repr::parse(&Packet::new_unchecked(&t[..])),
            Err(Error::Version { tagged: true })
        );
    }

    #[test]
    fn bounds_without_overflow() {
        assert!(within(0x1000, 0x100, 0x1000, 0x100));
        assert!(within(0x1000, 0x100, 0x10ff, 1));
        assert!(within(0x1000, 0x100, 0x1100, 0));
        assert!(!within(0x1000, 0x100, 0x10ff, 2));
        assert!(!within(0x1000, 0x100, 0xfff, 1));
        assert!(!within(0x1000, 0x100, 0x1000, 0x101));
        // A TO near 2^64 whose end wraps must not pass.
        assert!(!within(0x1000, 0x100, u64::MAX, 0x1002));
        assert!(!within(0, u64::MAX, u64::MAX, 2));
        assert!(within(0, u64::MAX, u64::MAX - 1, 1));
    }

    #[test]
    fn impossible_lengths() {
        assert_eq!(
            Packet::new_checked(&TAGGED[..13]).unwrap_err(),
            Error::Truncated
        );
        assert_eq!(
            Packet::new_checked(&UNTAGGED[..17]).unwrap_err(),
            Error::Truncated
        );
        assert_eq!(Packet::new_checked(&[][..]).unwrap_err(), Error::Truncated);
        let p = Packet::new_unchecked(&UNTAGGED[..3]);
        assert_eq!(p.mo(), 0);
        assert_eq!(p.payload(), &[] as &[u8]);
    }
}
