// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The Terminate message header (RFC 5040 §4.8) and the error causes it reports: RDMAP
//! (RFC 5040 §4.8), DDP (RFC 5041 §7.2) and MPA (RFC 5044 §8, RFC 6581 §4) codes.
//!
//! The first word is encoded with explicit shifts in RFC bit order (Layer in the top
//! nibble of octet 0), never with C bitfields: an MPA CRC error is `20 02 00 00`.

use super::bytes::{be16, be32, put_be16, put_be32, put_slice, u8_at};
use super::ddp;
use super::rdmap::{Control, Opcode, ReadRequest};

/// Layer (first nibble) and error type (second nibble) and code of a Terminate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TermCause {
    /// Layer: 0 RDMAP, 1 DDP, 2 LLP (MPA). Four bits.
    pub layer: u8,
    /// Error Type. Four bits.
    pub etype: u8,
    /// Error Code.
    pub ecode: u8,
}

/// Layer value of RDMAP errors.
pub const LAYER_RDMAP: u8 = 0;
/// Layer value of DDP errors.
pub const LAYER_DDP: u8 = 1;
/// Layer value of lower layer (MPA) errors.
pub const LAYER_LLP: u8 = 2;

const fn cause(layer: u8, etype: u8, ecode: u8) -> TermCause {
    TermCause {
        layer,
        etype,
        ecode,
    }
}

impl TermCause {
    /// RDMAP Local Catastrophic Error (RFC 5040 §4.8: EType 0x0, code 0x00).
    pub const RDMAP_LOCAL_CATASTROPHIC: Self = cause(0, 0x0, 0x00);
    /// RDMAP Remote Protection: Invalid STag.
    pub const RDMAP_INVALID_STAG: Self = cause(0, 0x1, 0x00);
    /// RDMAP Remote Protection: Base or bounds violation.
    pub const RDMAP_BASE_BOUNDS: Self = cause(0, 0x1, 0x01);
    /// RDMAP Remote Protection: Access rights violation.
    pub const RDMAP_ACCESS_RIGHTS: Self = cause(0, 0x1, 0x02);
    /// RDMAP Remote Protection: STag not associated with RDMAP Stream.
    pub const RDMAP_STAG_NOT_ASSOCIATED: Self = cause(0, 0x1, 0x03);
    /// RDMAP Remote Protection: TO wrap.
    pub const RDMAP_TO_WRAP: Self = cause(0, 0x1, 0x04);
    /// RDMAP Remote Protection: STag cannot be invalidated.
    pub const RDMAP_PROT_CANNOT_INVALIDATE: Self = cause(0, 0x1, 0x09);
    /// RDMAP Remote Protection: Unspecified Error.
    pub const RDMAP_PROT_UNSPECIFIED: Self = cause(0, 0x1, 0xff);
    /// RDMAP Remote Operation: Invalid RDMAP version.
    pub const RDMAP_VERSION: Self = cause(0, 0x2, 0x05);
    /// RDMAP Remote Operation: Unexpected OpCode.
    pub const RDMAP_UNEXPECTED_OPCODE: Self = cause(0, 0x2, 0x06);
    /// RDMAP Remote Operation: Catastrophic error, localized to RDMAP Stream (also
    /// RFC 7306 §8.2, misaligned atomic target).
    pub const RDMAP_CATASTROPHIC_STREAM: Self = cause(0, 0x2, 0x07);
    /// RDMAP Remote Operation: Catastrophic error, global.
    pub const RDMAP_CATASTROPHIC_GLOBAL: Self = cause(0, 0x2, 0x08);
    /// RDMAP Remote Operation: STag cannot be invalidated.
    pub const RDMAP_CANNOT_INVALIDATE: Self = cause(0, 0x2, 0x09);
    /// RDMAP Remote Operation: Unspecified Error.
    pub const RDMAP_UNSPECIFIED: Self = cause(0, 0x2, 0xff);

    /// DDP Local Catastrophic Error (RFC 5041 §7.2).
    pub const DDP_LOCAL_CATASTROPHIC: Self = cause(1, 0x0, 0x00);
    /// DDP Tagged Buffer: Invalid STag.
    pub const DDP_INVALID_STAG: Self = cause(1, 0x1, 0x00);
    /// DDP Tagged Buffer: Base or bounds violation.
    pub const DDP_BASE_BOUNDS: Self = cause(1, 0x1, 0x01);
    /// DDP Tagged Buffer: STag not associated with DDP Stream.
    pub const DDP_STAG_NOT_ASSOCIATED: Self = cause(1, 0x1, 0x02);
    /// DDP Tagged Buffer: TO wrap.
    pub const DDP_TO_WRAP: Self = cause(1, 0x1, 0x03);
    /// DDP Tagged Buffer: Invalid DDP version.
    pub const DDP_TAGGED_VERSION: Self = cause(1, 0x1, 0x04);
    /// DDP Untagged Buffer: Invalid QN.
    pub const DDP_INVALID_QN: Self = cause(1, 0x2, 0x01);
    /// DDP Untagged Buffer: Invalid MSN, no buffer available.
    pub const DDP_MSN_NO_BUFFER: Self = cause(1, 0x2, 0x02);
    /// DDP Untagged Buffer: Invalid MSN, MSN range is not valid.
    pub const DDP_MSN_RANGE: Self = cause(1, 0x2, 0x03);
    /// DDP Untagged Buffer: Invalid MO.
    pub const DDP_INVALID_MO: Self = cause(1, 0x2, 0x04);
    /// DDP Untagged Buffer: DDP Message too long for available buffer.
    pub const DDP_MESSAGE_TOO_LONG: Self = cause(1, 0x2, 0x05);
    /// DDP Untagged Buffer: Invalid DDP version.
    pub const DDP_UNTAGGED_VERSION: Self = cause(1, 0x2, 0x06);

    /// MPA: TCP connection closed, terminated or lost (RFC 5044 §8).
    pub const MPA_CONNECTION_LOST: Self = cause(2, 0x0, 0x01);
    /// MPA: Received MPA CRC does not match the calculated value.
    pub const MPA_CRC: Self = cause(2, 0x0, 0x02);
    /// MPA: Marker does not point to the start of an FPDU.
    pub const MPA_MARKER: Self = cause(2, 0x0, 0x03);
    /// MPA framing error, the same code: RFC 5044 §8 names one error for an FPDU
    /// boundary that does not hold ("Marker and ULPDU_Length field mismatch"). rsiw
    /// reports with it a ULPDU_Length that cannot frame a DDP segment: shorter than
    /// the DDP header (RFC 5041 §4), or longer than the receiver accepts. Neither
    /// DDP's nor RDMAP's codes describe a segment whose header is cut by its frame.
    pub const MPA_FRAMING: Self = Self::MPA_MARKER;
    /// MPA: Invalid MPA Request or Reply frame.
    pub const MPA_INVALID_REQ_REP: Self = cause(2, 0x0, 0x04);
    /// MPA: Local catastrophic error (RFC 6581 §4).
    pub const MPA_LOCAL_CATASTROPHIC: Self = cause(2, 0x0, 0x05);
    /// MPA: Insufficient IRD resources (RFC 6581 §4).
    pub const MPA_INSUFFICIENT_IRD: Self = cause(2, 0x0, 0x06);
    /// MPA: No matching RTR (RFC 6581 §4).
    pub const MPA_NO_MATCHING_RTR: Self = cause(2, 0x0, 0x07);

    /// The first 16 bits of the Terminate header: Layer(4) EType(4) ErrorCode(8).
    pub const fn word(self) -> u16 {
        ((self.layer as u16 & 0xf) << 12) | ((self.etype as u16 & 0xf) << 8) | self.ecode as u16
    }

    /// Decodes [`TermCause::word`].
    pub const fn from_word(w: u16) -> Self {
        cause((w >> 12) as u8, ((w >> 8) & 0xf) as u8, w as u8)
    }

    /// Which headers of the offending segment a Terminate for this cause copies.
    ///
    /// RFC 5040 §4.8 leaves headers out when they cannot be trusted: nothing for MPA
    /// errors (the framing or CRC is broken), local catastrophic errors or version errors
    /// (the layout is unknown); the DDP header for DDP and RDMAP remote operation errors;
    /// DDP and RDMAP headers for RDMAP remote protection errors. RFC 7306 §8.1 copies no
    /// RDMA header for atomics and Immediate Data: only Read Requests have one to copy.
    pub const fn copies(self) -> Copies {
        match (self.layer, self.etype, self.ecode) {
            (LAYER_LLP, _, _) | (_, 0x0, _) => Copies::Nothing,
            (LAYER_DDP, 0x1, 0x04) | (LAYER_DDP, 0x2, 0x06) | (LAYER_RDMAP, 0x2, 0x05) => {
                Copies::Nothing
            }
            (LAYER_RDMAP, 0x1, _) => Copies::DdpAndRdmap,
            _ => Copies::Ddp,
        }
    }
}

/// What a Terminate copies from the segment that caused it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Copies {
    /// M = D = R = 0.
    Nothing,
    /// M = D = 1: DDP Segment Length and DDP header.
    Ddp,
    /// M = D = 1, and R = 1 when the segment carries a Read Request header.
    DdpAndRdmap,
}

/// Length of the fixed part of the Terminate header.
pub const HDR_LEN: usize = 4;
/// Longest copied RDMA header (a Read Request, RFC 5040 §4.8).
pub const MAX_RDMAP_COPY: usize = ReadRequest::LEN;
/// Longest Terminate header: fixed part, segment length, DDP and RDMA header copies.
pub const MAX_LEN: usize = HDR_LEN + 2 + ddp::MAX_HDR_LEN + MAX_RDMAP_COPY;

const FLAG_M: u16 = 0x8000;
const FLAG_D: u16 = 0x4000;
const FLAG_R: u16 = 0x2000;

/// Why Terminate header bytes could not be parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// The flags announce more than is present.
    Truncated,
    /// More octets than the flags account for.
    TooLong,
}

/// A Terminate header: the cause and the copied headers (RFC 5040 §4.8 Figure 15).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TerminateRepr {
    /// Layer, Error Type and Error Code.
    pub cause: TermCause,
    /// DDP Segment Length, present iff M.
    pub segment_len: Option<u16>,
    ddp: [u8; ddp::MAX_HDR_LEN],
    ddp_len: u8,
    rdmap: [u8; MAX_RDMAP_COPY],
    rdmap_len: u8,
}

impl TerminateRepr {
    /// A Terminate carrying no header copies (M = D = R = 0).
    pub const fn new(cause: TermCause) -> Self {
        Self {
            cause,
            segment_len: None,
            ddp: [0; ddp::MAX_HDR_LEN],
            ddp_len: 0,
            rdmap: [0; MAX_RDMAP_COPY],
            rdmap_len: 0,
        }
    }

    /// Builds the Terminate for `cause` raised by a segment whose ULPDU_Length was
    /// `ulpdu_len` and whose first octets (from the DDP control octet on) are `seg`.
    /// Headers that `seg` does not hold completely are left out.
    pub fn for_segment(cause: TermCause, ulpdu_len: u16, seg: &[u8]) -> Self {
        let mut t = Self::new(cause);
        let copies = cause.copies();
        if copies == Copies::Nothing {
            return t;
        }
        let dlen = ddp::header_len(u8_at(seg, 0));
        let (Some(dhdr), Some(dst)) = (seg.get(..dlen), t.ddp.get_mut(..dlen)) else {
            return t;
        };
        dst.copy_from_slice(dhdr);
        t.ddp_len = dlen as u8;
        t.segment_len = Some(ulpdu_len);
        let is_read_req = u8_at(seg, 0) & ddp::FLAG_T == 0
            && Control::parse(u8_at(seg, 1)).opcode == Opcode::ReadRequest;
        if copies == Copies::DdpAndRdmap && is_read_req {
            if let Some(r) = seg.get(dlen..dlen + ReadRequest::LEN) {
                t.rdmap.copy_from_slice(r);
                t.rdmap_len = ReadRequest::LEN as u8;
            }
        }
        t
    }

    /// The copied DDP header (empty if D = 0).
    pub fn ddp_header(&self) -> &[u8] {
        self.ddp.get(..usize::from(self.ddp_len)).unwrap_or(&[])
    }

    /// The copied RDMA header (empty if R = 0).
    pub fn rdmap_header(&self) -> &[u8] {
        self.rdmap.get(..usize::from(self.rdmap_len)).unwrap_or(&[])
    }

    fn flags(&self) -> u16 {
        let mut f = 0;
        if self.segment_len.is_some() {
            f |= FLAG_M;
        }
        if self.ddp_len != 0 {
            f |= FLAG_D;
        }
        if self.rdmap_len != 0 {
            f |= FLAG_R;
        }
        f
    }

    /// Encoded length.
    pub fn buffer_len(&self) -> usize {
        HDR_LEN
            + if self.segment_len.is_some() { 2 } else { 0 }
            + usize::from(self.ddp_len)
            + usize::from(self.rdmap_len)
    }

    /// Encodes into the start of `b` and returns the length written (0 if `b` is short).
    pub fn emit(&self, b: &mut [u8]) -> usize {
        let len = self.buffer_len();
        if b.len() < len {
            return 0;
        }
        put_be32(
            b,
            0,
            (u32::from(self.cause.word()) << 16) | u32::from(self.flags()),
        );
        let mut at = HDR_LEN;
        if let Some(l) = self.segment_len {
            put_be16(b, at, l);
            at += 2;
        }
        put_slice(b, at, self.ddp_header());
        at += self.ddp_header().len();
        put_slice(b, at, self.rdmap_header());
        len
    }

    /// Parses a Terminate header occupying all of `b`; reserved bits are ignored.
    pub fn parse(b: &[u8]) -> Result<Self, Error> {
        if b.len() < HDR_LEN {
            return Err(Error::Truncated);
        }
        let w = be32(b, 0);
        let flags = w as u16;
        let mut t = Self::new(TermCause::from_word((w >> 16) as u16));
        let mut at = HDR_LEN;
        if flags & FLAG_M != 0 {
            if b.len() < at + 2 {
                return Err(Error::Truncated);
            }
            t.segment_len = Some(be16(b, at));
            at += 2;
        }
        if flags & FLAG_D != 0 {
            let dlen = ddp::header_len(u8_at(b, at));
            let src = b.get(at..at + dlen).ok_or(Error::Truncated)?;
            t.ddp[..dlen].copy_from_slice(src);
            t.ddp_len = dlen as u8;
            at += dlen;
        }
        if flags & FLAG_R != 0 {
            let rest = b.get(at..).unwrap_or(&[]);
            if rest.is_empty() {
                return Err(Error::Truncated);
            }
            let dst = t.rdmap.get_mut(..rest.len()).ok_or(Error::TooLong)?;
            dst.copy_from_slice(rest);
            t.rdmap_len = rest.len() as u8;
            at = b.len();
        }
        if at != b.len() {
            return Err(Error::TooLong);
        }
        Ok(t)
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn crc_error_bit_order() {
        let mut b = [0u8; 8];
        let n = TerminateRepr::new(TermCause::MPA_CRC).emit(&mut b);
        assert_eq!(&b[..n], &[0x20, 0x02, 0x00, 0x00]);
        assert_eq!(TermCause::DDP_INVALID_MO.word(), 0x1204);
        assert_eq!(TermCause::RDMAP_UNSPECIFIED.word(), 0x02ff);
        assert_eq!(TermCause::from_word(0x1105), cause(1, 1, 5));
    }

    /// A Read Request segment: untagged DDP header (QN 1) then the RFC 5040 Fig. 9 header.
    fn read_request_segment() -> [u8; 46] {
        let mut s = [0u8; 46];
        s[..18].copy_from_slice(&[0x41, 0x41, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0, 0]);
        for (i, b) in s[18..].iter_mut().enumerate() {
            *b = i as u8;
        }
        s
    }

    #[test]
    fn protection_error_copies_ddp_and_rdma_headers() {
        let seg = read_request_segment();
        let t = TerminateRepr::for_segment(TermCause::RDMAP_INVALID_STAG, 46, &seg);
        let mut b = [0u8; MAX_LEN];
        let n = t.emit(&mut b);
        assert_eq!(n, 4 + 2 + 18 + 28);
        assert_eq!(&b[..6], &[0x01, 0x00, 0xe0, 0x00, 0x00, 46]);
        assert_eq!(&b[6..n], &seg[..]);
        assert_eq!(TerminateRepr::parse(&b[..n]), Ok(t));
    }

    #[test]
    fn ddp_error_copies_ddp_header_only() {
        let seg = read_request_segment();
        let t = TerminateRepr::for_segment(TermCause::DDP_INVALID_QN, 46, &seg);
        let mut b = [0u8; MAX_LEN];
        let n = t.emit(&mut b);
        assert_eq!(&b[..6], &[0x12, 0x01, 0xc0, 0x00, 0x00, 46]);
        assert_eq!(&b[6..n], &seg[..18]);
        let v = TerminateRepr::for_segment(TermCause::DDP_UNTAGGED_VERSION, 46, &seg);
        assert_eq!(v.buffer_len(), 4);
        // A segment cut short before its DDP header ends copies nothing.
        let s = TerminateRepr::for_segment(TermCause::DDP_INVALID_QN, 46, &seg[..10]);
        assert_eq!(s, TerminateRepr::new(TermCause::DDP_INVALID_QN));
    }

    #[test]
    fn impossible_lengths() {
        assert_eq!(
            TerminateRepr::parse(&[0x20, 0x02, 0]),
            Err(Error::Truncated)
        );
        assert_eq!(
            TerminateRepr::parse(&[0x20, 0x02, 0x80, 0, 0]),
            Err(Error::Truncated)
        );
        assert_eq!(
            TerminateRepr::parse(&[0x20, 0x02, 0, 0, 0]),
            Err(Error::TooLong)
        );
        assert_eq!(
            TerminateRepr::parse(&[0x20, 0x02, 0x40, 0, 0xc1]),
            Err(Error::Truncated)
        );
        assert_eq!(
            TerminateRepr::parse(&[0x20, 0x02, 0x20, 0]),
            Err(Error::Truncated)
        );
        assert_eq!(
            TerminateRepr::parse(&[0x20, 0x02, 0x20, 0, 1])
                .unwrap()
                .rdmap_header(),
            &[1]
        );
        assert_eq!(
            TerminateRepr::parse(&[0u8; 4 + 29][..]).map(|_| ()),
            Err(Error::TooLong)
        );
        let mut long = [0u8; 4 + 29];
        long[2] = 0x20;
        assert_eq!(TerminateRepr::parse(&long), Err(Error::TooLong));
        let mut b = [0u8; 3];
        assert_eq!(TerminateRepr::new(TermCause::MPA_CRC).emit(&mut b), 0);
    }
}
