// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! MPA connection setup: the Request/Reply frames of RFC 5044 §7.1, the RFC 6581
//! enhanced connection establishment (Rev 2, IRD/ORD and RTR) and their negotiation.
//!
//! # Reading a frame from the socket
//!
//! Read until [`frame_len`] answers `Some(len)` (it needs the 20-byte header and
//! refuses a bad key, Rev or PD_Length right there), read up to `len` octets, then
//! [`FrameRepr::parse_bytes`]. Octets after `len` are already FPDUs and belong to the
//! RX parser. The responder answers with [`respond`], the initiator finishes with
//! [`complete`]; both return the [`StreamParams`] for the FPDU stream.
//!
//! The wire allows 512 octets of private data, but Linux's `struct iw_cm_event`
//! carries its length in a `u8`: ULP private data longer than 255 octets cannot be
//! handed up and must be refused, never passed with a truncated length.
//!
//! # What the module does on an error
//!
//! MPA setup errors are not reported with a Terminate: before both frames have been
//! exchanged there is no FPDU stream to carry one. The connection is refused instead:
//!
//! * Responder, the Request has a wrong key or is truncated (the peer is not speaking
//!   MPA): close the TCP connection without a Reply.
//! * Responder, any other error from [`Frame::new_checked`], [`FrameRepr::parse`] or
//!   [`respond`]: send [`reject_reply`] (R bit set, RFC 5044 §7.1.1) and close; the
//!   ULP never sees the connection request.
//! * Initiator, [`MpaError::Rejected`]: close and report "connection refused" to the
//!   ULP, with the Reply's private data.
//! * Initiator, [`MpaError::InsufficientIrd`] or [`MpaError::NoMatchingRtr`]: the
//!   Reply was complete, so (as RFC 6581 defines) send a Terminate with Layer LLP,
//!   Error Type MPA and the code from [`MpaError::terminate_code`], then close.
//! * Initiator, any other error: close and report "connection reset".

/// Key of an MPA Request frame (RFC 5044 §7.1.1).
pub const KEY_REQUEST: [u8; 16] = *b"MPA ID Req Frame";
/// Key of an MPA Reply frame (RFC 5044 §7.1.1).
pub const KEY_REPLY: [u8; 16] = *b"MPA ID Rep Frame";
/// Length of the fixed part of a Request/Reply frame: key, flags, Rev, PD_Length.
pub const HEADER_LEN: usize = 20;
/// Largest Private Data a receiver accepts (RFC 5044 §7.1.1, PD_Length).
pub const MAX_PRIVATE_DATA: usize = 512;
/// Length of the RFC 6581 IRD/ORD block at the start of Rev 2 enhanced private data.
pub const IRD_ORD_LEN: usize = 4;
/// Largest frame: header plus the maximum private data.
pub const MAX_FRAME_LEN: usize = HEADER_LEN + MAX_PRIVATE_DATA;
/// The all-ones 14-bit IRD/ORD value, read as "no value given": the sender states no
/// limit, and the receiver uses its own.
pub const IRD_ORD_NO_VALUE: u16 = 0x3FFF;
/// Largest IRD/ORD that is a real value; larger local values are sent as this.
pub const IRD_ORD_MAX: u16 = 0x3FFE;

/// Byte offsets of the frame fields.
mod field {
    use core::ops::Range;
    pub const KEY: Range<usize> = 0..16;
    pub const FLAGS: usize = 16;
    pub const REV: usize = 17;
    pub const PD_LENGTH: Range<usize> = 18..20;
}

/// Bits of the flags byte (RFC 5044 §7.1.1 Figure 12; RFC 6581 for `ENHANCED`).
mod flag {
    pub const MARKERS: u8 = 0x80;
    pub const CRC: u8 = 0x40;
    pub const REJECT: u8 = 0x20;
    /// RFC 6581: the first bit of the former Res field, "enhanced RDMA connection
    /// establishment" (IRD/ORD block present).
    pub const ENHANCED: u8 = 0x10;
    /// The next bit of the former Res field, used by rsiw (and by siw's experimental,
    /// compiled-out `MPA_RR_FLAG_GSO_EXP`) with one meaning: the sender of this frame
    /// accepts FPDUs longer than the EMSS allows (RFC 5044 §4.1 bounds what a sender
    /// sends, not what a receiver can take). An RFC peer ignores it (§7.1.1).
    pub const LARGE_FPDU: u8 = 0x08;
    /// The bit after it, in a Reply only: the responder understood the Request's
    /// `LARGE_FPDU` offer. A Reply's `LARGE_FPDU` alone proves nothing: siw builds
    /// its Reply from the Request's header and so echoes its reserved bits; it
    /// never sets one the Request did not have.
    pub const LARGE_FPDU_ACK: u8 = 0x04;
    /// Still reserved: zero on transmit, ignored on receive.
    pub const RESERVED: u8 = 0x03;
}

/// Bits of the two 16-bit words of the RFC 6581 IRD/ORD block.
mod ctrl {
    /// "A" in the IRD word: peer-to-peer model, an RTR message will follow.
    pub const PEER_TO_PEER: u16 = 0x8000;
    /// "B" in the IRD word: a zero-length Send may serve as RTR.
    pub const RTR_SEND: u16 = 0x4000;
    /// "C" in the ORD word: a zero-length RDMA Write may serve as RTR.
    pub const RTR_WRITE: u16 = 0x8000;
    /// "D" in the ORD word: a zero-length RDMA Read may serve as RTR.
    pub const RTR_READ: u16 = 0x4000;
    /// The 14-bit IRD or ORD value.
    pub const VALUE: u16 = 0x3FFF;
}

/// Why an MPA Request/Reply frame or the negotiation is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MpaError {
    /// Fewer bytes than the header or than header + PD_Length; `needed` is the
    /// length the frame needs (read more, unless that exceeds [`MAX_FRAME_LEN`]).
    Truncated {
        /// Bytes the frame needs.
        needed: usize,
    },
    /// The key is not the one expected here (RFC 5044 §7.1.1).
    BadKey,
    /// Rev is not 1 or 2; revision 0 predates RFC 5044 and is refused (RFC 5044
    /// §7.1.1 Rev; RFC 6581 adds 2).
    BadRevision(u8),
    /// A Reply has a higher Rev than the Request it answers.
    RevisionMismatch {
        /// Rev of our Request.
        sent: u8,
        /// Rev of the Reply.
        got: u8,
    },
    /// PD_Length above 512 (RFC 5044 §7.1.1: the receiver MUST close the connection).
    PrivateDataTooLong(u16),
    /// A Rev 2 enhanced frame whose private data cannot hold the 4-byte IRD/ORD
    /// block (RFC 6581), or an enhanced Request answered by a Rev 2 Reply without it.
    MissingIrdOrd,
    /// The Reply has the R bit set: the peer refused the connection.
    Rejected,
    /// The peer requires Markers (M bit) and the local side cannot insert them.
    MarkersUnsupported,
    /// The responder's ORD exceeds the IRD we offered (RFC 6581 "Insufficient IRD").
    InsufficientIrd {
        /// Our IRD.
        ird: u16,
        /// The peer's ORD.
        peer_ord: u16,
    },
    /// No RTR type both sides support (RFC 6581 "No Matching RTR Option").
    NoMatchingRtr,
}

impl MpaError {
    /// The RFC 6581 MPA-layer Terminate error code for the errors that are found
    /// after a complete exchange (Layer LLP, Error Type MPA); `None` for the errors
    /// that refuse the connection without a Terminate.
    pub const fn terminate_code(&self) -> Option<u8> {
        match self {
            Self::InsufficientIrd { .. } => Some(0x06),
            Self::NoMatchingRtr => Some(0x07),
            _ => None,
        }
    }
}

/// Request or Reply, as told by the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameKind {
    /// "MPA ID Req Frame", sent by the initiator.
    Request,
    /// "MPA ID Rep Frame", sent by the responder.
    Reply,
}

impl FrameKind {
    /// The 16-byte key of this kind.
    pub const fn key(self) -> &'static [u8; 16] {
        match self {
            Self::Request => &KEY_REQUEST,
            Self::Reply => &KEY_REPLY,
        }
    }
}

/// MPA revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Revision {
    /// RFC 5044.
    Rev1,
    /// RFC 6581: enhanced connection establishment.
    Rev2,
}

impl Revision {
    /// Decodes the Rev byte; 0 and anything above 2 are refused.
    pub const fn from_wire(rev: u8) -> Result<Self, MpaError> {
        match rev {
            1 => Ok(Self::Rev1),
            2 => Ok(Self::Rev2),
            other => Err(MpaError::BadRevision(other)),
        }
    }

    /// The Rev byte.
    pub const fn wire(self) -> u8 {
        match self {
            Self::Rev1 => 1,
            Self::Rev2 => 2,
        }
    }
}

/// A read-only or mutable view of an MPA Request/Reply frame in a byte buffer.
///
/// After [`Frame::new_checked`] no accessor panics: the buffer holds at least the
/// header and PD_Length bytes of private data. Bytes after the frame (the first
/// FPDUs may follow it in the same TCP segment) are not part of it.
#[derive(Debug, Clone)]
pub struct Frame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Frame<T> {
    /// Wraps a buffer without checking its length; use [`Frame::check_len`] before
    /// reading the private data.
    pub const fn new_unchecked(buffer: T) -> Self {
        Self { buffer }
    }

    /// Wraps a buffer that holds the whole frame, header and private data, after
    /// the checks of [`frame_len`] (key, Rev, PD_Length).
    pub fn new_checked(buffer: T) -> Result<Self, MpaError> {
        let f = Self::new_unchecked(buffer);
        f.check_len()?;
        Ok(f)
    }

    /// Checks that the buffer holds the header and PD_Length bytes of private data,
    /// and that PD_Length is at most 512 (so a reader never waits for 64 KiB).
    pub fn check_len(&self) -> Result<(), MpaError> {
        match frame_len(self.buffer.as_ref())? {
            Some(len) if len <= self.buffer.as_ref().len() => Ok(()),
            Some(needed) => Err(MpaError::Truncated { needed }),
            None => Err(MpaError::Truncated { needed: HEADER_LEN }),
        }
    }

    /// Gives back the buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn byte(&self, i: usize) -> u8 {
        self.buffer.as_ref().get(i).copied().unwrap_or(0)
    }

    /// The key's kind, or `None` for any other 16 bytes.
    pub fn kind(&self) -> Option<FrameKind> {
        match self.buffer.as_ref().get(field::KEY) {
            Some(k) if k == KEY_REQUEST => Some(FrameKind::Request),
            Some(k) if k == KEY_REPLY => Some(FrameKind::Reply),
            _ => None,
        }
    }

    /// M: the sender requires Markers in the FPDUs it receives.
    pub fn markers(&self) -> bool {
        self.byte(field::FLAGS) & flag::MARKERS != 0
    }

    /// C: the sender asks for CRCs.
    pub fn crc(&self) -> bool {
        self.byte(field::FLAGS) & flag::CRC != 0
    }

    /// R: in a Reply, the connection is rejected (meaningless in a Request).
    pub fn reject(&self) -> bool {
        self.byte(field::FLAGS) & flag::REJECT != 0
    }

    /// RFC 6581 enhanced connection establishment bit (meaningful with Rev 2 only).
    pub fn enhanced(&self) -> bool {
        self.byte(field::FLAGS) & flag::ENHANCED != 0
    }

    /// The large-FPDU bit (`flag::LARGE_FPDU`): the sender accepts FPDUs longer than
    /// the EMSS allows.
    pub fn large_fpdu(&self) -> bool {
        self.byte(field::FLAGS) & flag::LARGE_FPDU != 0
    }

    /// The large-FPDU acknowledgement bit (`flag::LARGE_FPDU_ACK`).
    pub fn large_fpdu_ack(&self) -> bool {
        self.byte(field::FLAGS) & flag::LARGE_FPDU_ACK != 0
    }

    /// The still-reserved flag bits, as received (ignored by the parser).
    pub fn reserved(&self) -> u8 {
        self.byte(field::FLAGS) & flag::RESERVED
    }

    /// The Rev byte, unvalidated.
    pub fn rev(&self) -> u8 {
        self.byte(field::REV)
    }

    /// PD_Length, unvalidated.
    pub fn pd_length(&self) -> u16 {
        match self.buffer.as_ref().get(field::PD_LENGTH) {
            Some(&[hi, lo]) => u16::from_be_bytes([hi, lo]),
            _ => 0,
        }
    }

    /// Header plus PD_Length bytes.
    pub fn frame_len(&self) -> usize {
        HEADER_LEN + usize::from(self.pd_length())
    }

    /// The whole private data (including an RFC 6581 IRD/ORD block); empty if the
    /// buffer is shorter than the frame.
    pub fn private_data(&self) -> &[u8] {
        self.buffer
            .as_ref()
            .get(HEADER_LEN..self.frame_len())
            .unwrap_or(&[])
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Frame<&'a T> {
    /// [`Frame::private_data`] with the lifetime of the underlying buffer.
    pub fn payload(&self) -> &'a [u8] {
        let buf: &'a [u8] = self.buffer.as_ref();
        buf.get(HEADER_LEN..self.frame_len()).unwrap_or(&[])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Frame<T> {
    fn set_byte(&mut self, i: usize, v: u8) {
        if let Some(b) = self.buffer.as_mut().get_mut(i) {
            *b = v;
        }
    }

    /// Writes the key of `kind`.
    pub fn set_kind(&mut self, kind: FrameKind) {
        if let Some(k) = self.buffer.as_mut().get_mut(field::KEY) {
            k.copy_from_slice(kind.key());
        }
    }

    /// Writes the flags byte; reserved bits are zeroed (RFC 5044 §7.1.1).
    pub fn set_flags(&mut self, markers: bool, crc: bool, reject: bool, enhanced: bool) {
        self.set_flag_bits(markers, crc, reject, enhanced, (false, false));
    }

    /// [`Frame::set_flags`] with the large-FPDU bits (`large`: offer, acknowledgement).
    pub fn set_flag_bits(
        &mut self,
        markers: bool,
        crc: bool,
        reject: bool,
        enhanced: bool,
        large: (bool, bool),
    ) {
        let mut v = 0;
        for (on, bit) in [
            (markers, flag::MARKERS),
            (crc, flag::CRC),
            (reject, flag::REJECT),
            (enhanced, flag::ENHANCED),
            (large.0, flag::LARGE_FPDU),
            (large.1, flag::LARGE_FPDU_ACK),
        ] {
            if on {
                v |= bit;
            }
        }
        self.set_byte(field::FLAGS, v);
    }

    /// Writes the Rev byte.
    pub fn set_rev(&mut self, rev: u8) {
        self.set_byte(field::REV, rev);
    }

    /// Writes PD_Length.
    pub fn set_pd_length(&mut self, len: u16) {
        if let Some(p) = self.buffer.as_mut().get_mut(field::PD_LENGTH) {
            p.copy_from_slice(&len.to_be_bytes());
        }
    }

    /// The private data area, PD_Length bytes (fewer if the buffer is shorter).
    pub fn private_data_mut(&mut self) -> &mut [u8] {
        let end = self.frame_len();
        let buf = self.buffer.as_mut();
        let end = end.min(buf.len());
        buf.get_mut(HEADER_LEN..end).unwrap_or(&mut [])
    }
}

/// Length of the frame at the start of `buf` once its header has arrived:
/// `Ok(None)` while fewer than 20 bytes are there, `Ok(Some(len))` after. The key,
/// Rev and PD_Length are checked first, so garbage is refused at 20 bytes instead
/// of waiting for a bogus PD_Length worth of data.
pub fn frame_len(buf: &[u8]) -> Result<Option<usize>, MpaError> {
    let f = Frame::new_unchecked(buf);
    if buf.len() < HEADER_LEN {
        return Ok(None);
    }
    if f.kind().is_none() {
        return Err(MpaError::BadKey);
    }
    Revision::from_wire(f.rev())?;
    let pd = f.pd_length();
    // RFC 5044 §7.1.1: PD_Length above 512 closes the connection.
    if usize::from(pd) > MAX_PRIVATE_DATA {
        return Err(MpaError::PrivateDataTooLong(pd));
    }
    Ok(Some(f.frame_len()))
}

/// The set of RTR message types a side offers or accepts (RFC 6581 B, C, D bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct RtrSet {
    /// Zero-length Send ("B").
    pub send: bool,
    /// Zero-length RDMA Write ("C").
    pub write: bool,
    /// Zero-length RDMA Read ("D").
    pub read: bool,
}

impl RtrSet {
    /// No RTR type.
    pub const NONE: Self = Self {
        send: false,
        write: false,
        read: false,
    };
    /// All three RTR types.
    pub const ALL: Self = Self {
        send: true,
        write: true,
        read: true,
    };

    /// True if no type is in the set.
    pub const fn is_empty(&self) -> bool {
        !(self.send || self.write || self.read)
    }

    /// Types in both sets.
    pub const fn intersect(&self, other: &Self) -> Self {
        Self {
            send: self.send && other.send,
            write: self.write && other.write,
            read: self.read && other.read,
        }
    }

    /// The preferred member: a Write needs no resources at the responder, a Read
    /// needs an IRD slot, a Send needs a posted Receive; `None` if empty.
    pub const fn preferred(&self) -> Option<Rtr> {
        if self.write {
            Some(Rtr::Write)
        } else if self.read {
            Some(Rtr::Read)
        } else if self.send {
            Some(Rtr::Send)
        } else {
            None
        }
    }

    /// The set holding only `rtr`.
    pub const fn only(rtr: Rtr) -> Self {
        match rtr {
            Rtr::Send => Self {
                send: true,
                write: false,
                read: false,
            },
            Rtr::Write => Self {
                send: false,
                write: true,
                read: false,
            },
            Rtr::Read => Self {
                send: false,
                write: false,
                read: true,
            },
        }
    }
}

/// The RTR (ready-to-receive) message the initiator sends as its first FPDU in the
/// peer-to-peer model of RFC 6581; the responder sends nothing before it arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rtr {
    /// Zero-length Send.
    Send,
    /// Zero-length RDMA Write.
    Write,
    /// Zero-length RDMA Read. It occupies one of the responder's inbound Read slots,
    /// so a responder only picks it with an IRD of at least 1 and then reports an
    /// IRD of at least 1.
    Read,
}

/// The RFC 6581 IRD/ORD block: the first 4 bytes of Rev 2 enhanced private data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IrdOrd {
    /// "A": peer-to-peer model; an RTR message will be sent.
    pub peer_to_peer: bool,
    /// RTR types offered (Request) or the one chosen (Reply).
    pub rtr: RtrSet,
    /// Inbound RDMA Read queue depth, 14 bits; [`IRD_ORD_NO_VALUE`] = none given.
    pub ird: u16,
    /// Outbound RDMA Read queue depth, 14 bits; [`IRD_ORD_NO_VALUE`] = none given.
    pub ord: u16,
}

impl IrdOrd {
    /// Decodes the first 4 bytes of `pd`.
    pub fn parse(pd: &[u8]) -> Result<Self, MpaError> {
        match pd.get(..IRD_ORD_LEN) {
            Some(&[a, b, c, d]) => {
                let ird = u16::from_be_bytes([a, b]);
                let ord = u16::from_be_bytes([c, d]);
                Ok(Self {
                    peer_to_peer: ird & ctrl::PEER_TO_PEER != 0,
                    rtr: RtrSet {
                        send: ird & ctrl::RTR_SEND != 0,
                        write: ord & ctrl::RTR_WRITE != 0,
                        read: ord & ctrl::RTR_READ != 0,
                    },
                    ird: ird & ctrl::VALUE,
                    ord: ord & ctrl::VALUE,
                })
            }
            _ => Err(MpaError::MissingIrdOrd),
        }
    }

    /// Encodes the block; IRD/ORD are masked to 14 bits.
    pub const fn to_bytes(self) -> [u8; IRD_ORD_LEN] {
        let mut ird = self.ird & ctrl::VALUE;
        let mut ord = self.ord & ctrl::VALUE;
        if self.peer_to_peer {
            ird |= ctrl::PEER_TO_PEER;
        }
        if self.rtr.send {
            ird |= ctrl::RTR_SEND;
        }
        if self.rtr.write {
            ord |= ctrl::RTR_WRITE;
        }
        if self.rtr.read {
            ord |= ctrl::RTR_READ;
        }
        let [a, b] = ird.to_be_bytes();
        let [c, d] = ord.to_be_bytes();
        [a, b, c, d]
    }
}

/// A parsed or to-be-emitted MPA Request/Reply frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameRepr<'a> {
    /// Request or Reply.
    pub kind: FrameKind,
    /// M bit.
    pub markers: bool,
    /// C bit.
    pub crc: bool,
    /// R bit; always false for a Request (RFC 5044 §7.1.1: not checked on receipt).
    pub reject: bool,
    /// Rev.
    pub rev: Revision,
    /// The RFC 6581 block; `Some` exactly when Rev is 2 and the enhanced bit is set.
    pub ird_ord: Option<IrdOrd>,
    /// The ULP's private data: what follows the IRD/ORD block, or all of it.
    pub private_data: &'a [u8],
    /// The sender accepts FPDUs longer than the EMSS allows (`flag::LARGE_FPDU`).
    pub large_fpdu: bool,
    /// Reply: the responder understood the Request's large-FPDU offer
    /// (`flag::LARGE_FPDU_ACK`).
    pub large_fpdu_ack: bool,
}

impl<'a> FrameRepr<'a> {
    /// Parses and validates a frame. The reserved flag bits are ignored on receive
    /// (RFC 5044 §7.1.1), and so is the enhanced bit of a Rev 1 frame, for which it
    /// is still reserved.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(frame: &Frame<&'a T>) -> Result<Self, MpaError> {
        frame.check_len()?;
        let kind = frame.kind().ok_or(MpaError::BadKey)?;
        let rev = Revision::from_wire(frame.rev())?;
        let pd = frame.payload();
        let (ird_ord, private_data) = if rev == Revision::Rev2 && frame.enhanced() {
            let block = IrdOrd::parse(pd)?;
            (Some(block), pd.get(IRD_ORD_LEN..).unwrap_or(&[]))
        } else {
            (None, pd)
        };
        Ok(Self {
            kind,
            markers: frame.markers(),
            crc: frame.crc(),
            reject: kind == FrameKind::Reply && frame.reject(),
            rev,
            ird_ord,
            private_data,
            large_fpdu: frame.large_fpdu(),
            large_fpdu_ack: kind == FrameKind::Reply && frame.large_fpdu_ack(),
        })
    }

    /// Parses `buf` as a frame of the expected `kind`.
    pub fn parse_bytes(buf: &'a [u8], kind: FrameKind) -> Result<Self, MpaError> {
        let repr = Self::parse(&Frame::new_checked(buf)?)?;
        if repr.kind != kind {
            return Err(MpaError::BadKey);
        }
        Ok(repr)
    }

    /// PD_Length this frame carries.
    pub fn pd_length(&self) -> usize {
        let block = if self.ird_ord.is_some() {
            IRD_ORD_LEN
        } else {
            0
        };
        block + self.private_data.len()
    }

    /// Bytes [`FrameRepr::emit`] writes.
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.pd_length()
    }

    /// Writes the frame to the start of `frame`'s buffer; refuses private data over
    /// 512 bytes, an IRD/ORD block on a Rev 1 frame, and a short buffer.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut Frame<T>) -> Result<(), MpaError> {
        let pd_len = self.pd_length();
        let pd_wire = u16::try_from(pd_len).map_err(|_| MpaError::PrivateDataTooLong(u16::MAX))?;
        if pd_len > MAX_PRIVATE_DATA {
            return Err(MpaError::PrivateDataTooLong(pd_wire));
        }
        if self.ird_ord.is_some() && self.rev != Revision::Rev2 {
            return Err(MpaError::BadRevision(self.rev.wire()));
        }
        let needed = self.buffer_len();
        if frame.buffer.as_ref().len() < needed {
            return Err(MpaError::Truncated { needed });
        }
        frame.set_kind(self.kind);
        let reject = self.kind == FrameKind::Reply && self.reject;
        frame.set_flag_bits(
            self.markers,
            self.crc,
            reject,
            self.ird_ord.is_some(),
            (
                self.large_fpdu,
                self.kind == FrameKind::Reply && self.large_fpdu_ack,
            ),
        );
        frame.set_rev(self.rev.wire());
        frame.set_pd_length(pd_wire);
        let out = frame.private_data_mut();
        let ulp_at = match self.ird_ord {
            Some(block) => {
                copy_into(out, 0, &block.to_bytes());
                IRD_ORD_LEN
            }
            None => 0,
        };
        copy_into(out, ulp_at, self.private_data);
        Ok(())
    }
}

/// Copies `src` into `dst` at `at`; `emit` has checked that it fits.
fn copy_into(dst: &mut [u8], at: usize, src: &[u8]) {
    if let Some(d) = at
        .checked_add(src.len())
        .and_then(|end| dst.get_mut(at..end))
    {
        d.copy_from_slice(src);
    }
}

#[path = "mpa_negotiate.rs"]
mod negotiate;
pub use negotiate::{complete, reject_reply, request, respond, LocalParams, StreamParams};

#[cfg(test)]
#[path = "mpa_test.rs"]
mod test;
