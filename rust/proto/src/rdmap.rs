// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! RDMAP message headers: the control octet and opcodes (RFC 5040 §4.1-§4.4, RFC 7306
//! §4), the RDMA Read Request header (RFC 5040 §4.4), the Atomic Request/Response
//! headers (RFC 7306 §5.2.1/§5.2.2) and the Immediate Data header (RFC 7306 §6).

use super::atomic::{AOpCode, AtomicFields};
use super::bytes::{be32, be64, put_be32, put_be64};
use super::terminate::TerminateRepr;

/// RDMAP version this implementation speaks (RFC 5040 §4.1: RV = 01b).
pub const VERSION: u8 = 1;

/// Untagged queue of Send and Immediate Data messages (RFC 5040 §5.1, RFC 7306 §6).
pub const QN_SEND: u32 = 0;
/// Untagged queue of Read Requests and Atomic Requests (RFC 5040 §5.1, RFC 7306 §5.2).
pub const QN_READ: u32 = 1;
/// Untagged queue of Terminate messages (RFC 5040 §5.1).
pub const QN_TERMINATE: u32 = 2;
/// Untagged queue of Atomic Responses (RFC 7306 §5.2).
pub const QN_ATOMIC_RESPONSE: u32 = 3;

/// RDMAP opcode (RFC 5040 §4.2 and RFC 7306 §4 Figure 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opcode {
    /// 0x0 RDMA Write.
    Write,
    /// 0x1 RDMA Read Request.
    ReadRequest,
    /// 0x2 RDMA Read Response.
    ReadResponse,
    /// 0x3 Send.
    Send,
    /// 0x4 Send with Invalidate.
    SendInvalidate,
    /// 0x5 Send with Solicited Event.
    SendSe,
    /// 0x6 Send with Solicited Event and Invalidate.
    SendSeInvalidate,
    /// 0x7 Terminate.
    Terminate,
    /// 0x8 Immediate Data (RFC 7306 §6).
    ImmediateData,
    /// 0x9 Immediate Data with Solicited Event.
    ImmediateDataSe,
    /// 0xA Atomic Request (RFC 7306 §5.2.1).
    AtomicRequest,
    /// 0xB Atomic Response (RFC 7306 §5.2.2).
    AtomicResponse,
    /// Any other 4-bit value.
    Unknown(u8),
}

impl Opcode {
    /// Decodes the low four bits.
    pub const fn from_bits(v: u8) -> Self {
        match v & 0xf {
            0x0 => Self::Write,
            0x1 => Self::ReadRequest,
            0x2 => Self::ReadResponse,
            0x3 => Self::Send,
            0x4 => Self::SendInvalidate,
            0x5 => Self::SendSe,
            0x6 => Self::SendSeInvalidate,
            0x7 => Self::Terminate,
            0x8 => Self::ImmediateData,
            0x9 => Self::ImmediateDataSe,
            0xa => Self::AtomicRequest,
            0xb => Self::AtomicResponse,
            other => Self::Unknown(other),
        }
    }

    /// The 4-bit wire value.
    pub const fn bits(self) -> u8 {
        match self {
            Self::Write => 0x0,
            Self::ReadRequest => 0x1,
            Self::ReadResponse => 0x2,
            Self::Send => 0x3,
            Self::SendInvalidate => 0x4,
            Self::SendSe => 0x5,
            Self::SendSeInvalidate => 0x6,
            Self::Terminate => 0x7,
            Self::ImmediateData => 0x8,
            Self::ImmediateDataSe => 0x9,
            Self::AtomicRequest => 0xa,
            Self::AtomicResponse => 0xb,
            Self::Unknown(v) => v & 0xf,
        }
    }

    /// Whether the message uses the Tagged Buffer model (RFC 5040 §4.2, RFC 7306 Fig. 3).
    pub const fn tagged(self) -> bool {
        matches!(self, Self::Write | Self::ReadResponse)
    }

    /// The untagged queue the message must use, `None` for tagged or unknown opcodes.
    pub const fn queue(self) -> Option<u32> {
        match self {
            Self::Send
            | Self::SendInvalidate
            | Self::SendSe
            | Self::SendSeInvalidate
            | Self::ImmediateData
            | Self::ImmediateDataSe => Some(QN_SEND),
            Self::ReadRequest | Self::AtomicRequest => Some(QN_READ),
            Self::Terminate => Some(QN_TERMINATE),
            Self::AtomicResponse => Some(QN_ATOMIC_RESPONSE),
            Self::Write | Self::ReadResponse | Self::Unknown(_) => None,
        }
    }

    /// Length of the RDMAP header that follows the DDP header, for messages that carry
    /// one of fixed size and no payload; `None` for payload-carrying or Terminate.
    pub const fn fixed_header_len(self) -> Option<usize> {
        match self {
            Self::ReadRequest => Some(ReadRequest::LEN),
            Self::ImmediateData | Self::ImmediateDataSe => Some(IMMEDIATE_LEN),
            Self::AtomicRequest => Some(AtomicRequest::LEN),
            Self::AtomicResponse => Some(AtomicResponse::LEN),
            _ => None,
        }
    }

    /// Whether the message carries an Invalidate STag in the DDP RsvdULP word.
    pub const fn invalidates(self) -> bool {
        matches!(self, Self::SendInvalidate | Self::SendSeInvalidate)
    }

    /// Whether the message asks for a solicited event.
    pub const fn solicited(self) -> bool {
        matches!(
            self,
            Self::SendSe | Self::SendSeInvalidate | Self::ImmediateDataSe
        )
    }
}

/// The RDMAP control octet carried in the DDP RsvdULP octet: RV(2) Rsvd(2) Opcode(4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Control {
    /// RV.
    pub version: u8,
    /// Opcode.
    pub opcode: Opcode,
}

impl Control {
    /// Decodes the octet; the reserved bits are ignored on receipt (RFC 5040 §4.1).
    pub const fn parse(octet: u8) -> Self {
        Self {
            version: octet >> 6,
            opcode: Opcode::from_bits(octet),
        }
    }

    /// The octet for `opcode` with RV 1 and reserved bits zero.
    pub const fn emit(opcode: Opcode) -> u8 {
        (VERSION << 6) | opcode.bits()
    }
}

/// Length of the Immediate Data header (RFC 7306 §6: exactly 8 octets).
pub const IMMEDIATE_LEN: usize = 8;

/// RDMA Read Request header (RFC 5040 §4.4 Figure 9).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadRequest {
    /// Data Sink STag.
    pub sink_stag: u32,
    /// Data Sink Tagged Offset.
    pub sink_to: u64,
    /// RDMA Read Message Size.
    pub size: u32,
    /// Data Source STag.
    pub source_stag: u32,
    /// Data Source Tagged Offset.
    pub source_to: u64,
}

impl ReadRequest {
    /// Header length.
    pub const LEN: usize = 28;

    /// Parses the header from the start of `b`; `None` if short.
    pub fn parse(b: &[u8]) -> Option<Self> {
        if b.len() < Self::LEN {
            return None;
        }
        Some(Self {
            sink_stag: be32(b, 0),
            sink_to: be64(b, 4),
            size: be32(b, 12),
            source_stag: be32(b, 16),
            source_to: be64(b, 20),
        })
    }

    /// Writes the header to the start of `b` (dropped if `b` is short).
    pub fn emit(&self, b: &mut [u8]) {
        put_be32(b, 0, self.sink_stag);
        put_be64(b, 4, self.sink_to);
        put_be32(b, 12, self.size);
        put_be32(b, 16, self.source_stag);
        put_be64(b, 20, self.source_to);
    }
}

/// Atomic Request header (RFC 7306 §5.2.1 Figure 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AtomicRequest {
    /// AOpCode (low 4 bits of the first word; the 28 reserved bits are ignored).
    pub opcode: AOpCode,
    /// Request Identifier, echoed in the response.
    pub request_id: u32,
    /// Remote STag.
    pub stag: u32,
    /// Remote Tagged Offset.
    pub to: u64,
    /// Add/Swap Data, Add/Swap Mask, Compare Data, Compare Mask.
    pub fields: AtomicFields,
}

impl AtomicRequest {
    /// Header length.
    pub const LEN: usize = 52;

    /// Parses the header from the start of `b`; `None` if short.
    pub fn parse(b: &[u8]) -> Option<Self> {
        if b.len() < Self::LEN {
            return None;
        }
        Some(Self {
            opcode: AOpCode::from_header_word(be32(b, 0)),
            request_id: be32(b, 4),
            stag: be32(b, 8),
            to: be64(b, 12),
            fields: AtomicFields {
                add_swap_data: be64(b, 20),
                add_swap_mask: be64(b, 28),
                compare_data: be64(b, 36),
                compare_mask: be64(b, 44),
            },
        })
    }

    /// Writes the header to the start of `b` (reserved bits zero).
    pub fn emit(&self, b: &mut [u8]) {
        put_be32(b, 0, u32::from(self.opcode.bits()));
        put_be32(b, 4, self.request_id);
        put_be32(b, 8, self.stag);
        put_be64(b, 12, self.to);
        put_be64(b, 20, self.fields.add_swap_data);
        put_be64(b, 28, self.fields.add_swap_mask);
        put_be64(b, 36, self.fields.compare_data);
        put_be64(b, 44, self.fields.compare_mask);
    }
}

/// Atomic Response header (RFC 7306 §5.2.2 Figure 6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AtomicResponse {
    /// Original Request Identifier.
    pub request_id: u32,
    /// Original Remote Data Value.
    pub original: u64,
}

impl AtomicResponse {
    /// Header length.
    pub const LEN: usize = 12;

    /// Parses the header from the start of `b`; `None` if short.
    pub fn parse(b: &[u8]) -> Option<Self> {
        if b.len() < Self::LEN {
            return None;
        }
        Some(Self {
            request_id: be32(b, 0),
            original: be64(b, 4),
        })
    }

    /// Writes the header to the start of `b`.
    pub fn emit(&self, b: &mut [u8]) {
        put_be32(b, 0, self.request_id);
        put_be64(b, 4, self.original);
    }
}

/// The RDMAP header that follows the DDP header, if the opcode has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Header {
    /// Write, Read Response, Send variants: payload only.
    None,
    /// RDMA Read Request (RFC 5040 §4.4).
    ReadRequest(ReadRequest),
    /// Terminate (RFC 5040 §4.8).
    Terminate(TerminateRepr),
    /// Immediate Data, the 8 octets as a big-endian integer (RFC 7306 §6).
    Immediate(u64),
    /// Atomic Request (RFC 7306 §5.2.1).
    AtomicRequest(AtomicRequest),
    /// Atomic Response (RFC 7306 §5.2.2).
    AtomicResponse(AtomicResponse),
}

impl Header {
    /// Encoded length.
    pub fn buffer_len(&self) -> usize {
        match self {
            Self::None => 0,
            Self::ReadRequest(_) => ReadRequest::LEN,
            Self::Terminate(t) => t.buffer_len(),
            Self::Immediate(_) => IMMEDIATE_LEN,
            Self::AtomicRequest(_) => AtomicRequest::LEN,
            Self::AtomicResponse(_) => AtomicResponse::LEN,
        }
    }

    /// Encodes into the start of `b`; returns the length (0 if `b` is short).
    pub fn emit(&self, b: &mut [u8]) -> usize {
        let len = self.buffer_len();
        if b.len() < len {
            return 0;
        }
        match self {
            Self::None => {}
            Self::ReadRequest(r) => r.emit(b),
            Self::Terminate(t) => {
                t.emit(b);
            }
            Self::Immediate(v) => {
                put_be64(b, 0, *v);
            }
            Self::AtomicRequest(r) => r.emit(b),
            Self::AtomicResponse(r) => r.emit(b),
        }
        len
    }
}

#[cfg(test)]
mod test {
    use super::*;

    /// RFC 5040 Figure 9 field order.
    static READ_REQ: [u8; 28] = [
        0x00, 0x00, 0x10, 0x01, // sink STag
        0, 0, 0, 0, 0xaa, 0xbb, 0xcc, 0x00, // sink TO
        0x00, 0x01, 0x00, 0x00, // size 64 KiB
        0x00, 0x00, 0x20, 0x02, // source STag
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, // source TO
    ];

    /// RFC 7306 Figure 4: CmpSwap, id 7, STag 0x3003, TO 0x1000, swap 5, swap mask
    /// all ones, compare 4, compare mask all ones.
    static ATOMIC_REQ: [u8; 52] = [
        0, 0, 0, 2, 0, 0, 0, 7, 0, 0, 0x30, 0x03, 0, 0, 0, 0, 0, 0, 0x10, 0, //
        0, 0, 0, 0, 0, 0, 0, 5, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, //
        0, 0, 0, 0, 0, 0, 0, 4, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    ];

    /// RFC 7306 Figure 6: id 7, original value 4.
    static ATOMIC_RESP: [u8; 12] = [0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 4];

    #[test]
    fn opcodes_and_queues() {
        for v in 0..16u8 {
            assert_eq!(Opcode::from_bits(v).bits(), v);
        }
        assert_eq!(Opcode::from_bits(0xc), Opcode::Unknown(0xc));
        assert!(Opcode::Write.tagged() && Opcode::ReadResponse.tagged());
        assert!(!Opcode::Send.tagged() && !Opcode::AtomicRequest.tagged());
        assert_eq!(Opcode::ImmediateDataSe.queue(), Some(QN_SEND));
        assert_eq!(Opcode::AtomicRequest.queue(), Some(QN_READ));
        assert_eq!(Opcode::Terminate.queue(), Some(QN_TERMINATE));
        assert_eq!(Opcode::AtomicResponse.queue(), Some(QN_ATOMIC_RESPONSE));
        assert_eq!(Opcode::Write.queue(), None);
        assert_eq!(Control::emit(Opcode::Terminate), 0x47);
        assert_eq!(
            Control::parse(0x7a),
            Control {
                version: 1,
                opcode: Opcode::AtomicRequest
            }
        );
    }

    #[test]
    fn read_request_round_trip() {
        let r = ReadRequest::parse(&READ_REQ).unwrap();
        assert_eq!(r.sink_stag, 0x1001);
        assert_eq!(r.sink_to, 0xaabb_cc00);
        assert_eq!(r.size, 0x10000);
        assert_eq!(r.source_stag, 0x2002);
        assert_eq!(r.source_to, 0xffff_ffff_ffff_0000);
        let mut out = [0u8; 28];
        r.emit(&mut out);
        assert_eq!(out, READ_REQ);
        assert_eq!(ReadRequest::parse(&READ_REQ[..27]), None);
    }

    #[test]
    fn atomic_round_trip() {
        let r = AtomicRequest::parse(&ATOMIC_REQ).unwrap();
        assert_eq!(r.opcode, AOpCode::CmpSwap);
        assert_eq!((r.request_id, r.stag, r.to), (7, 0x3003, 0x1000));
        assert_eq!(r.fields, AtomicFields::cmp_swap(4, 5));
        let mut out = [0u8; 52];
        r.emit(&mut out);
        assert_eq!(out, ATOMIC_REQ);
        // Reserved bits of the first word are ignored on receipt.
        let mut b = ATOMIC_REQ;
        b[0] = 0xff;
        assert_eq!(AtomicRequest::parse(&b).unwrap().opcode, AOpCode::CmpSwap);
        assert_eq!(AtomicRequest::parse(&b[..51]), None);

        let a = AtomicResponse::parse(&ATOMIC_RESP).unwrap();
        assert_eq!(
            a,
            AtomicResponse {
                request_id: 7,
                original: 4
            }
        );
        let mut out = [0u8; 12];
        a.emit(&mut out);
        assert_eq!(out, ATOMIC_RESP);
        assert_eq!(AtomicResponse::parse(&ATOMIC_RESP[..11]), None);
    }
}
