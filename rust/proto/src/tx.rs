// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Transmit framer: splits an RDMAP message into DDP segments of at most MULPDU octets
//! (RFC 5041 §5, RFC 5040 §5) and frames each as an MPA FPDU with PAD, markers and the
//! CRC trailer (RFC 5044 §4-§5), without touching the payload.
//!
//! # Driving it
//!
//! ```text
//! let mut tx = TxFramer::new(TxConfig { crc: true, markers: false, mulpdu });
//! for fpdu in tx.frames(&TxMessage::send(Opcode::Send, msn, 0, len))? {
//!     let mut reg = CRC32C_INIT;
//!     for piece in fpdu.pieces() {
//!         match piece {
//!             Piece::Bytes(b) => { reg = crc.update(reg, b); queue_copy(b) }
//!             Piece::Marker(m) => { reg = crc.update(reg, &m); queue_copy(&m) }
//!             Piece::Payload(r) => { reg = crc.update(reg, &payload[r]); queue_pages(r) }
//!             Piece::Crc => queue_copy(&crc32c_finish(reg).to_le_bytes()),
//!         }
//!     }
//! }
//! ```
//!
//! Framer-built octets (headers, markers, PAD) are small and owned by the [`Fpdu`]; the
//! payload is only referenced by its range within the message, so pages can be sent
//! zero-copy. [`Fpdu::write`] does all of the above for a payload held in one slice.

use core::ops::Range;

use super::crc::{crc32c_finish, Crc32c, CRC32C_INIT};
use super::ddp::{self, Buffer};
use super::fpdu::{self, Marker, MARKER_INTERVAL, MARKER_LEN};
use super::rdmap::{AtomicRequest, Control, Header, Opcode};

/// Negotiated stream parameters for the sending direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxConfig {
    /// Compute the CRC (else the CRC field is sent as zero, RFC 5044 §4.4).
    pub crc: bool,
    /// Insert markers (the peer asked for them in its MPA Request/Reply).
    pub markers: bool,
    /// Largest ULPDU to send, e.g. [`fpdu::mulpdu`] of the connection's EMSS.
    pub mulpdu: u16,
}

/// One RDMAP message to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxMessage {
    /// RDMAP opcode.
    pub opcode: Opcode,
    /// DDP addressing of the first octet: STag/TO, or QN/MSN (MO is taken as 0) and the
    /// RsvdULP word.
    pub ddp: Buffer,
    /// RDMAP header (first segment).
    pub rdmap: Header,
    /// Payload octets.
    pub payload_len: u32,
}

impl TxMessage {
    /// A tagged message (RDMA Write or Read Response).
    pub const fn tagged(opcode: Opcode, stag: u32, to: u64, payload_len: u32) -> Self {
        Self {
            opcode,
            ddp: Buffer::Tagged { stag, to },
            rdmap: Header::None,
            payload_len,
        }
    }

    /// An untagged message on the opcode's queue with the given header and payload.
    /// `ulp_word` is the Invalidate STag of Send with Invalidate, else 0.
    pub const fn untagged(
        opcode: Opcode,
        msn: u32,
        ulp_word: u32,
        rdmap: Header,
        payload_len: u32,
    ) -> Self {
        let qn = match opcode.queue() {
            Some(q) => q,
            None => u32::MAX,
        };
        Self {
            opcode,
            ddp: Buffer::Untagged {
                ulp_word,
                qn,
                msn,
                mo: 0,
            },
            rdmap,
            payload_len,
        }
    }

    /// A Send variant.
    pub const fn send(opcode: Opcode, msn: u32, invalidate_stag: u32, payload_len: u32) -> Self {
        Self::untagged(opcode, msn, invalidate_stag, Header::None, payload_len)
    }
}

/// Why a message cannot be framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxError {
    /// MULPDU cannot hold the headers plus at least one payload octet.
    MulpduTooSmall,
    /// The opcode does not match the DDP model or queue given.
    BadMessage,
    /// The payload slice given to [`Fpdu::write`] is shorter than the message.
    ShortPayload,
    /// [`TxFramer::fpdu_at`]: the offset is past the payload, or no payload octet
    /// may be carried where some remain.
    BadOffset,
}

/// Length field, DDP header and the longest RDMAP header.
const MAX_HDR: usize = fpdu::LEN_FIELD + ddp::UNTAGGED_HDR_LEN + AtomicRequest::LEN;
/// With markers, FPDUPTR (16 bits) must reach back over the whole FPDU: leave room for
/// the markers inside a maximal one.
const MAX_ULPDU_WITH_MARKERS: u16 = u16::MAX - 1024;
static ZERO: [u8; 4] = [0; 4];

/// Sender state that outlives a message: where the next marker falls.
#[derive(Debug, Clone)]
pub struct TxFramer {
    cfg: TxConfig,
    /// Stream octets sent since the last marker position, modulo 512.
    phase: usize,
}

impl TxFramer {
    /// A framer at the start of full operation phase (a marker precedes the first FPDU).
    pub const fn new(cfg: TxConfig) -> Self {
        Self { cfg, phase: 0 }
    }

    /// The configuration it frames with.
    pub const fn config(&self) -> TxConfig {
        self.cfg
    }

    fn max_ulpdu(&self) -> u16 {
        if self.cfg.markers {
            self.cfg.mulpdu.min(MAX_ULPDU_WITH_MARKERS)
        } else {
            self.cfg.mulpdu
        }
    }

    /// Checks that `msg` can be framed; returns its DDP + RDMAP header length.
    fn check(&self, msg: &TxMessage) -> Result<usize, TxError> {
        let tagged = matches!(msg.ddp, Buffer::Tagged { .. });
        let queue_ok = match msg.ddp {
            Buffer::Untagged { qn, .. } => msg.opcode.queue() == Some(qn),
            Buffer::Tagged { .. } => true,
        };
        if msg.opcode.tagged() != tagged || !queue_ok || matches!(msg.opcode, Opcode::Unknown(_)) {
            return Err(TxError::BadMessage);
        }
        let hdr = ddp_len(tagged) + msg.rdmap.buffer_len();
        let max = usize::from(self.max_ulpdu());
        if hdr > max || (msg.payload_len > 0 && hdr >= max) {
            return Err(TxError::MulpduTooSmall);
        }
        Ok(hdr)
    }

    /// Payload octets the FPDU of `msg` starting at payload offset `off` can carry at
    /// most: MULPDU less its headers (the RDMAP header is in the first FPDU only).
    pub fn room(&self, msg: &TxMessage, off: u32) -> u32 {
        let tagged = matches!(msg.ddp, Buffer::Tagged { .. });
        let rdmap = if off == 0 { msg.rdmap.buffer_len() } else { 0 };
        usize::from(self.max_ulpdu()).saturating_sub(ddp_len(tagged) + rdmap) as u32
    }

    /// The FPDUs of `msg`, in order. The framer's marker phase advances as they are
    /// taken, so every FPDU yielded must be sent, in order.
    pub fn frames(&mut self, msg: &TxMessage) -> Result<Frames<'_>, TxError> {
        self.check(msg)?;
        Ok(Frames {
            framer: self,
            msg: *msg,
            sent: 0,
            done: false,
        })
    }

    /// The FPDU of `msg` whose payload starts at octet `off` of the message, carrying
    /// at most `max_payload` octets (and at most [`TxFramer::room`]): a sender can
    /// resume a message at any offset, with FPDUs of any size up to MULPDU. A
    /// continuation carries no RDMAP header, and its DDP header addresses its first
    /// octet (RFC 5041 §5: TO + `off` for a tagged message, MO = `off` for an
    /// untagged one); the last FPDU of the message has the Last flag. The marker
    /// phase advances: the FPDU must be sent, and before any FPDU framed later.
    pub fn fpdu_at(
        &mut self,
        msg: &TxMessage,
        off: u32,
        max_payload: u32,
    ) -> Result<Fpdu, TxError> {
        self.check(msg)?;
        let left = msg.payload_len.checked_sub(off).ok_or(TxError::BadOffset)?;
        let n = left.min(self.room(msg, off)).min(max_payload);
        if (left > 0 && n == 0) || (left == 0 && off > 0) {
            return Err(TxError::BadOffset);
        }
        Ok(self.build(msg, off, n))
    }

    /// The FPDU at `off` with `n` payload octets; `check` has passed, `n` fits.
    fn build(&mut self, msg: &TxMessage, off: u32, n: u32) -> Fpdu {
        let rdmap = if off == 0 { msg.rdmap } else { Header::None };
        let last = off.saturating_add(n) >= msg.payload_len;
        let buffer = match msg.ddp {
            Buffer::Tagged { stag, to } => Buffer::Tagged {
                stag,
                to: to.wrapping_add(u64::from(off)),
            },
            Buffer::Untagged {
                ulp_word, qn, msn, ..
            } => Buffer::Untagged {
                ulp_word,
                qn,
                msn,
                mo: off,
            },
        };
        let hdr_len = ddp_len(matches!(msg.ddp, Buffer::Tagged { .. })) + rdmap.buffer_len();
        // `check` and `room` keep this within MULPDU, a u16.
        let ulpdu_len = (hdr_len + n as usize) as u16;
        let mut hdr = [0u8; MAX_HDR];
        hdr[..2].copy_from_slice(&ulpdu_len.to_be_bytes());
        let d = ddp::Repr {
            last,
            ulp_ctrl: Control::emit(msg.opcode),
            buffer,
        };
        d.emit(&mut ddp::Packet::new_unchecked(&mut hdr[2..]));
        rdmap.emit(&mut hdr[2 + d.buffer_len()..]);
        let start = off as usize;
        let mut f = Fpdu {
            hdr,
            hdr_len: 2 + hdr_len,
            payload: start..start + n as usize,
            pad: fpdu::pad_len(ulpdu_len),
            phase: self.phase,
            markers: self.cfg.markers,
            crc: self.cfg.crc,
            wire_len: 0,
        };
        f.wire_len = if f.markers {
            f.pieces().map(|p| p.len()).sum()
        } else {
            // Without markers the pieces are exactly these (RFC 5044 §4.1).
            f.hdr_len + f.payload.len() + f.pad + fpdu::CRC_LEN
        };
        self.phase = (self.phase + f.wire_len) % MARKER_INTERVAL;
        f
    }
}

const fn ddp_len(tagged: bool) -> usize {
    if tagged {
        ddp::TAGGED_HDR_LEN
    } else {
        ddp::UNTAGGED_HDR_LEN
    }
}

/// Iterator over the FPDUs of one message, each as large as MULPDU allows.
#[derive(Debug)]
pub struct Frames<'a> {
    framer: &'a mut TxFramer,
    msg: TxMessage,
    sent: u32,
    done: bool,
}

impl Iterator for Frames<'_> {
    type Item = Fpdu;

    fn next(&mut self) -> Option<Fpdu> {
        if self.done {
            return None;
        }
        let left = self.msg.payload_len.saturating_sub(self.sent);
        let n = left.min(self.framer.room(&self.msg, self.sent));
        let f = self.framer.build(&self.msg, self.sent, n);
        self.sent += n;
        self.done = n == left;
        Some(f)
    }
}

/// Where [`Fpdu::emit`] puts an FPDU.
pub trait FpduOut {
    /// What stops the emission.
    type Error;

    /// Octets built by the framer, in wire order: header, markers, PAD, the CRC field.
    fn bytes(&mut self, b: &[u8]) -> Result<(), Self::Error>;

    /// Payload octets `range` of the message come next on the wire: the caller copies
    /// them or queues their pages. With `crc` given (CRC on), it continues the raw
    /// CRC32c register over exactly those octets, in the same pass if it can.
    fn payload(&mut self, range: Range<usize>, crc: Option<&mut u32>) -> Result<(), Self::Error>;
}

/// One framed FPDU: owned header octets, the payload range it carries, PAD and trailer.
#[derive(Debug, Clone)]
pub struct Fpdu {
    hdr: [u8; MAX_HDR],
    hdr_len: usize,
    /// Range of the message payload carried.
    pub payload: Range<usize>,
    pad: usize,
    phase: usize,
    markers: bool,
    crc: bool,
    /// Octets on the wire, markers included.
    pub wire_len: usize,
}

/// A piece of an FPDU in wire order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece<'a> {
    /// Octets built by the framer (header, PAD, or a zero CRC field when CRC is off).
    Bytes(&'a [u8]),
    /// A marker (RFC 5044 §4.3), covered by the CRC like everything else.
    Marker([u8; MARKER_LEN]),
    /// Message payload octets.
    Payload(Range<usize>),
    /// The CRC field: `crc32c_finish(register).to_le_bytes()` over all previous pieces.
    Crc,
}

impl Piece<'_> {
    /// Length on the wire.
    pub fn len(&self) -> usize {
        match self {
            Self::Bytes(b) => b.len(),
            Self::Marker(_) | Self::Crc => 4,
            Self::Payload(r) => r.len(),
        }
    }

    /// Whether the piece is empty (never yielded).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Fpdu {
    /// Length field, DDP and RDMAP headers.
    pub fn header(&self) -> &[u8] {
        self.hdr.get(..self.hdr_len).unwrap_or(&[])
    }

    /// The pieces in wire order.
    pub fn pieces(&self) -> Pieces<'_> {
        Pieces {
            f: self,
            part: 0,
            off: 0,
            phase: self.phase,
            since_len: 0,
        }
    }

    /// Emits the FPDU in wire order to `out`, computing the CRC (RFC 5044 §4.4: over
    /// everything from the length field to the PAD, markers included) with `crc` for
    /// the framer's octets and through [`FpduOut::payload`] for the payload.
    pub fn emit<C: Crc32c, O: FpduOut>(&self, crc: &C, out: &mut O) -> Result<(), O::Error> {
        let mut reg = CRC32C_INIT;
        for p in self.pieces() {
            match p {
                Piece::Bytes(b) => {
                    if self.crc {
                        reg = crc.update(reg, b);
                    }
                    out.bytes(b)?;
                }
                Piece::Marker(m) => {
                    if self.crc {
                        reg = crc.update(reg, &m);
                    }
                    out.bytes(&m)?;
                }
                Piece::Payload(r) => out.payload(r, self.crc.then_some(&mut reg))?,
                Piece::Crc => out.bytes(&crc32c_finish(reg).to_le_bytes())?,
            }
        }
        Ok(())
    }

    /// Emits the FPDU for a message whose whole payload is `payload`, computing the CRC.
    pub fn write<C: Crc32c, F: FnMut(&[u8])>(
        &self,
        crc: &C,
        payload: &[u8],
        out: F,
    ) -> Result<(), TxError> {
        struct Slice<'p, 'c, C, F> {
            payload: &'p [u8],
            crc: &'c C,
            out: F,
        }
        impl<C: Crc32c, F: FnMut(&[u8])> FpduOut for Slice<'_, '_, C, F> {
            type Error = TxError;
            fn bytes(&mut self, b: &[u8]) -> Result<(), TxError> {
                (self.out)(b);
                Ok(())
            }
            fn payload(&mut self, r: Range<usize>, crc: Option<&mut u32>) -> Result<(), TxError> {
                let b = self.payload.get(r).ok_or(TxError::ShortPayload)?;
                if let Some(reg) = crc {
                    *reg = self.crc.update(*reg, b);
                }
                (self.out)(b);
                Ok(())
            }
        }
        self.emit(crc, &mut Slice { payload, crc, out })
    }
}

/// Iterator over the pieces of an [`Fpdu`]; splits at marker positions.
#[derive(Debug, Clone)]
pub struct Pieces<'a> {
    f: &'a Fpdu,
    /// 0 header, 1 payload, 2 PAD, 3 CRC.
    part: u8,
    off: usize,
    phase: usize,
    /// Octets since the first octet of ULPDU_Length, markers included.
    since_len: usize,
}

impl<'a> Iterator for Pieces<'a> {
    type Item = Piece<'a>;

    fn next(&mut self) -> Option<Piece<'a>> {
        loop {
            let part_len = match self.part {
                0 => self.f.hdr_len,
                1 => self.f.payload.len(),
                2 => self.f.pad,
                3 => fpdu::CRC_LEN,
                _ => return None,
            };
            if self.off >= part_len {
                self.part += 1;
                self.off = 0;
                continue;
            }
            if self.f.markers && self.phase == 0 {
                let at_start = self.part == 0 && self.off == 0;
                // RFC 5044 §4.3: FPDUPTR counts back to this FPDU's ULPDU_Length; a
                // marker in front of the FPDU points at it with 0.
                let ptr = if at_start { 0 } else { self.since_len };
                if !at_start {
                    self.since_len += MARKER_LEN;
                }
                self.phase = MARKER_LEN;
                return Some(Piece::Marker(
                    Marker {
                        fpduptr: ptr as u16,
                    }
                    .emit(),
                ));
            }
            let room = if self.f.markers {
                MARKER_INTERVAL - self.phase
            } else {
                usize::MAX
            };
            let n = (part_len - self.off).min(room);
            let piece = match self.part {
                0 => Piece::Bytes(self.f.hdr.get(self.off..self.off + n).unwrap_or(&[])),
                1 => {
                    let s = self.f.payload.start + self.off;
                    Piece::Payload(s..s + n)
                }
                2 => Piece::Bytes(ZERO.get(..n).unwrap_or(&[])),
                _ if self.f.crc => Piece::Crc,
                _ => Piece::Bytes(&ZERO),
            };
            self.off += n;
            self.since_len += n;
            self.phase = (self.phase + n) % MARKER_INTERVAL;
            return Some(piece);
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn segments_advance_to_and_set_last_once() {
        let mut tx = TxFramer::new(TxConfig {
            crc: false,
            markers: false,
            mulpdu: 14 + 100,
        });
        let frames: std::vec::Vec<Fpdu> = tx
            .frames(&TxMessage::tagged(Opcode::Write, 0x55, u64::MAX - 249, 250))
            .unwrap()
            .collect();
        assert_eq!(frames.len(), 3);
        for (i, f) in frames.iter().enumerate() {
            let h = f.header();
            let p = ddp::Packet::new_checked(&h[2..]).unwrap();
            assert_eq!(p.last(), i == 2);
            assert_eq!(p.to(), u64::MAX - 249 + 100 * i as u64);
            assert_eq!(f.payload, 100 * i..(100 * (i + 1)).min(250));
            // No markers, CRC off: header, payload, PAD, zero CRC field.
            assert_eq!(
                f.wire_len,
                16 + f.payload.len() + fpdu::pad_len(14 + f.payload.len() as u16) + 4
            );
            assert_eq!(f.pieces().last(), Some(Piece::Bytes(&[0; 4])));
        }
    }

    #[test]
    fn wire_len_is_the_sum_of_the_pieces() {
        for (crc, markers) in [(false, false), (true, false), (true, true)] {
            let mut tx = TxFramer::new(TxConfig {
                crc,
                markers,
                mulpdu: 1454,
            });
            for len in [0u32, 1, 2, 3, 4, 5, 100, 1421, 1422, 5000] {
                for msg in [
                    TxMessage::tagged(Opcode::Write, 7, 0, len),
                    TxMessage::send(Opcode::Send, 1, 0, len),
                ] {
                    for f in tx.frames(&msg).unwrap() {
                        assert_eq!(f.wire_len, f.pieces().map(|p| p.len()).sum::<usize>());
                    }
                }
            }
        }
    }

    #[test]
    fn write_rejects_short_payload() {
        let mut tx = TxFramer::new(TxConfig {
            crc: true,
            markers: false,
            mulpdu: 1000,
        });
        let f = tx
            .frames(&TxMessage::send(Opcode::Send, 1, 0, 10))
            .unwrap()
            .next()
            .unwrap();
        assert_eq!(
            f.write(&crate::crc::SoftCrc32c, &[0; 9], |_| {}),
            Err(TxError::ShortPayload)
        );
    }
}
