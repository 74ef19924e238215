// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The ULP private data of rsiw's QP connections (an MPA v2 Request/Reply, RFC 5044
//! §7.1, RFC 6581 §5, on the driver's own listener): which QP of the sender talks to
//! which QP of the receiver, and the PSNs each side was given out of band.
//!
//! Consumers that connect QPs the InfiniBand way exchange QP numbers, PSNs and GIDs
//! themselves and then move the QPs INIT→RTR→RTS with an address vector; rsiw sets
//! up the TCP stream from that. This block lets the responder refuse a stream that
//! was not meant for the QP it names (rsiw's own rule: iWARP has no such field).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +---------------------------------------------------------------+
//! |                     Magic "rsQP" (4 octets)                   |
//! +---------------+---------------+-------------------------------+
//! |   Version 2   | Flags (SQ,RQ) |           Reserved 0          |
//! +---------------+---------------+-------------------------------+
//! |                 Source QP number (24 bits in 32)              |
//! |              Destination QP number (24 bits in 32)            |
//! |             Sender's SQ PSN (24 bits in 32, or 0)             |
//! |             Sender's RQ PSN (24 bits in 32, or 0)             |
//! +---------------------------------------------------------------+
//! ```
//!
//! Each side proves the values the consumers exchanged out of band: the QP
//! numbers, and the PSN each side sends with (its SQ PSN), which the other was
//! given as its RQ PSN (IBA 10.2.4). A Request never carries both of the
//! initiator's PSNs: the one it leaves out is what the Reply must prove, so a
//! responder that only mirrors the Request proves nothing ([`Given::request`],
//! [`Given::check_reply`]).

use super::bytes::{be16, be32, put_be16, put_be32, put_slice, u8_at};

/// The block's first octets.
pub const MAGIC: [u8; 4] = *b"rsQP";
/// The version this file speaks (1 carried both PSNs in every Request).
pub const VERSION: u8 = 2;
/// Octets of the block.
pub const LEN: usize = 24;
/// Flags bit: the sender's SQ PSN is carried.
pub const FLAG_SQ_PSN: u8 = 0x01;
/// Flags bit: the sender's RQ PSN is carried.
pub const FLAG_RQ_PSN: u8 = 0x02;
/// QP numbers and PSNs are 24 bits (IBA 9.7.1, 10.2.4).
pub const MASK_24: u32 = 0x00ff_ffff;

mod field {
    use core::ops::Range;
    pub const MAGIC: Range<usize> = 0..4;
    pub const VERSION: usize = 4;
    pub const FLAGS: usize = 5;
    pub const RESERVED: usize = 6;
    pub const SRC_QPN: usize = 8;
    pub const DST_QPN: usize = 12;
    pub const SQ_PSN: usize = 16;
    pub const RQ_PSN: usize = 20;
}

/// Why a block is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnDataError {
    /// Fewer than [`LEN`] octets, or more (the block is the whole private data).
    Length(usize),
    /// Not the magic: not an rsiw QP connection.
    Magic,
    /// Another version.
    Version(u8),
    /// Reserved bits, unknown flags, a value without its flag, or a QP number
    /// or PSN over 24 bits.
    Reserved,
}

/// A block as it is sent: the sender's view of the pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnData {
    /// The sender's QP.
    pub src_qpn: u32,
    /// The receiver's QP it names.
    pub dst_qpn: u32,
    /// The sender's SQ PSN, if carried (`FLAG_SQ_PSN`).
    pub sq_psn: Option<u32>,
    /// The sender's RQ PSN, if carried (`FLAG_RQ_PSN`).
    pub rq_psn: Option<u32>,
}

impl ConnData {
    /// Parses the private data of a Request or Reply.
    pub fn parse(b: &[u8]) -> Result<Self, ConnDataError> {
        if b.len() != LEN {
            return Err(ConnDataError::Length(b.len()));
        }
        if b.get(field::MAGIC) != Some(&MAGIC[..]) {
            return Err(ConnDataError::Magic);
        }
        let version = u8_at(b, field::VERSION);
        if version != VERSION {
            return Err(ConnDataError::Version(version));
        }
        let flags = u8_at(b, field::FLAGS);
        let words = [
            be32(b, field::SRC_QPN),
            be32(b, field::DST_QPN),
            be32(b, field::SQ_PSN),
            be32(b, field::RQ_PSN),
        ];
        let sq = flags & FLAG_SQ_PSN != 0;
        let rq = flags & FLAG_RQ_PSN != 0;
        if flags & !(FLAG_SQ_PSN | FLAG_RQ_PSN) != 0
            || be16(b, field::RESERVED) != 0
            || words.iter().any(|w| w & !MASK_24 != 0)
            || (!sq && words[2] != 0)
            || (!rq && words[3] != 0)
        {
            return Err(ConnDataError::Reserved);
        }
        Ok(Self {
            src_qpn: words[0],
            dst_qpn: words[1],
            sq_psn: sq.then_some(words[2]),
            rq_psn: rq.then_some(words[3]),
        })
    }

    /// The block's octets (values masked to 24 bits).
    pub fn emit(&self) -> [u8; LEN] {
        let mut b = [0u8; LEN];
        put_slice(&mut b, field::MAGIC.start, &MAGIC);
        b[field::VERSION] = VERSION;
        let flag = |v: Option<u32>, f: u8| if v.is_some() { f } else { 0 };
        b[field::FLAGS] = flag(self.sq_psn, FLAG_SQ_PSN) | flag(self.rq_psn, FLAG_RQ_PSN);
        put_be16(&mut b, field::RESERVED, 0);
        put_be32(&mut b, field::SRC_QPN, self.src_qpn & MASK_24);
        put_be32(&mut b, field::DST_QPN, self.dst_qpn & MASK_24);
        put_be32(&mut b, field::SQ_PSN, self.sq_psn.unwrap_or(0) & MASK_24);
        put_be32(&mut b, field::RQ_PSN, self.rq_psn.unwrap_or(0) & MASK_24);
        b
    }
}

/// What one side's QP was given by its consumer (`modify_qp`): the values
/// its blocks carry and the other side's are checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Given {
    /// This QP's number.
    pub qpn: u32,
    /// The peer's QP (`dest_qp_num`).
    pub dest_qpn: u32,
    /// The PSN this QP sends with (`sq_psn`): set at RTR→RTS, so unknown
    /// while the QP is in RTR.
    pub sq_psn: Option<u32>,
    /// The PSN this QP expects (`rq_psn`, set at INIT→RTR): the peer's SQ PSN.
    pub rq_psn: u32,
}

/// Why a block does not prove the pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mismatch {
    /// Another QP number on either side.
    Qpn,
    /// A PSN carried differs from the one this side was given.
    Psn,
    /// A PSN this side must see proven is not carried.
    Missing,
}

/// The responder's answer to a Request's block ([`Given::check_request`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Proven: answer with [`Given::reply`].
    Match,
    /// Proven, but this QP has no SQ PSN yet to prove in a Reply (it is in
    /// RTR): this side connects instead, proving its RQ PSN (the initiator's
    /// SQ PSN, which the initiator has) — the Request waits meanwhile.
    Reverse,
    /// The Request proves our SQ PSN, which this QP has not been given yet:
    /// look again once it has (RTS).
    NotYet,
    /// Refused.
    Refuse(Mismatch),
}

impl Given {
    fn qpns(&self, other: &ConnData) -> bool {
        other.src_qpn & MASK_24 == self.dest_qpn & MASK_24
            && other.dst_qpn & MASK_24 == self.qpn & MASK_24
    }

    /// The initiator's block: its SQ PSN once it has one, else (a QP in RTR)
    /// its RQ PSN; never both, so that the Reply proves a PSN the Request did
    /// not show.
    pub fn request(&self) -> ConnData {
        ConnData {
            src_qpn: self.qpn,
            dst_qpn: self.dest_qpn,
            sq_psn: self.sq_psn,
            rq_psn: self.sq_psn.is_none().then_some(self.rq_psn),
        }
    }

    /// The responder's block: both of its PSNs (it answers only once it has
    /// its SQ PSN: [`Verdict::Reverse`]).
    pub fn reply(&self) -> ConnData {
        ConnData {
            src_qpn: self.qpn,
            dst_qpn: self.dest_qpn,
            sq_psn: self.sq_psn,
            rq_psn: Some(self.rq_psn),
        }
    }

    /// Responder: does the Request `req` prove the pair? Its QP numbers must
    /// be ours mirrored; it must carry at least one PSN and every PSN it
    /// carries must be the one we were given (its SQ PSN our RQ PSN, its RQ
    /// PSN our SQ PSN). A Request with no PSN, or with a PSN that differs,
    /// is refused.
    pub fn check_request(&self, req: &ConnData) -> Verdict {
        if !self.qpns(req) {
            return Verdict::Refuse(Mismatch::Qpn);
        }
        if req.sq_psn.is_none() && req.rq_psn.is_none() {
            return Verdict::Refuse(Mismatch::Missing);
        }
        if req
            .sq_psn
            .is_some_and(|s| s & MASK_24 != self.rq_psn & MASK_24)
        {
            return Verdict::Refuse(Mismatch::Psn);
        }
        match (req.rq_psn, self.sq_psn) {
            (Some(r), Some(s)) if r & MASK_24 != s & MASK_24 => Verdict::Refuse(Mismatch::Psn),
            (Some(_), None) => Verdict::NotYet,
            _ if self.sq_psn.is_none() => Verdict::Reverse,
            _ => Verdict::Match,
        }
    }

    /// Initiator: does the Reply `rep` prove the pair, against what this QP
    /// was given (not against the Request it sent)? QP numbers; the
    /// responder's SQ PSN, which must be carried and be our RQ PSN; its RQ
    /// PSN, if carried, our SQ PSN when we have one.
    pub fn check_reply(&self, rep: &ConnData) -> Result<(), Mismatch> {
        if !self.qpns(rep) {
            return Err(Mismatch::Qpn);
        }
        match rep.sq_psn {
            None => return Err(Mismatch::Missing),
            Some(s) if s & MASK_24 != self.rq_psn & MASK_24 => return Err(Mismatch::Psn),
            Some(_) => {}
        }
        match (rep.rq_psn, self.sq_psn) {
            (Some(r), Some(s)) if r & MASK_24 != s & MASK_24 => Err(Mismatch::Psn),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    static BLOCK: [u8; LEN] = [
        b'r', b's', b'Q', b'P', 0x02, 0x01, 0x00, 0x00, // magic, version, flags (SQ)
        0x00, 0x00, 0x00, 0x11, 0x00, 0x00, 0x00, 0x12, // QPNs 17 -> 18
        0x00, 0xab, 0xcd, 0xef, 0x00, 0x00, 0x00, 0x00, // SQ PSN, no RQ PSN
    ];

    fn repr() -> ConnData {
        ConnData {
            src_qpn: 17,
            dst_qpn: 18,
            sq_psn: Some(0xabcdef),
            rq_psn: None,
        }
    }

    /// Side A (QP 17) and side B (QP 18): A sends with 0xabcdef, B with 0x123456.
    fn a() -> Given {
        Given {
            qpn: 17,
            dest_qpn: 18,
            sq_psn: Some(0xabcdef),
            rq_psn: 0x123456,
        }
    }

    fn b() -> Given {
        Given {
            qpn: 18,
            dest_qpn: 17,
            sq_psn: Some(0x123456),
            rq_psn: 0xabcdef,
        }
    }

    #[test]
    fn deconstruct() {
        assert_eq!(ConnData::parse(&BLOCK), Ok(repr()));
    }

    #[test]
    fn construct() {
        assert_eq!(repr().emit(), BLOCK);
        assert_eq!(a().request(), repr());
    }

    #[test]
    fn absent_psns_round_trip_as_none() {
        for (sq, rq, flags) in [
            (None, Some(0x123456), FLAG_RQ_PSN),
            (None, None, 0),
            (Some(1), Some(2), FLAG_SQ_PSN | FLAG_RQ_PSN),
        ] {
            let r = ConnData {
                sq_psn: sq,
                rq_psn: rq,
                ..repr()
            };
            let b = r.emit();
            assert_eq!(b[field::FLAGS], flags);
            if sq.is_none() {
                assert_eq!(&b[field::SQ_PSN..field::SQ_PSN + 4], &[0, 0, 0, 0]);
            }
            assert_eq!(ConnData::parse(&b), Ok(r));
        }
    }

    #[test]
    fn impossible_lengths() {
        assert_eq!(
            ConnData::parse(&BLOCK[..LEN - 1]),
            Err(ConnDataError::Length(23))
        );
        let mut long = [0u8; LEN + 1];
        long[..LEN].copy_from_slice(&BLOCK);
        assert_eq!(ConnData::parse(&long), Err(ConnDataError::Length(25)));
        assert_eq!(ConnData::parse(&[]), Err(ConnDataError::Length(0)));
    }

    #[test]
    fn refuses_magic_version_and_reserved() {
        let mut b = BLOCK;
        b[0] = b'R';
        assert_eq!(ConnData::parse(&b), Err(ConnDataError::Magic));
        for v in [1, 3] {
            let mut b = BLOCK;
            b[field::VERSION] = v;
            assert_eq!(ConnData::parse(&b), Err(ConnDataError::Version(v)));
        }
        for (at, v) in [
            (field::FLAGS, 0x05),
            (field::RESERVED + 1, 1),
            (field::SRC_QPN, 1),
            // An RQ PSN without its flag.
            (field::RQ_PSN + 3, 1),
        ] {
            let mut b = BLOCK;
            b[at] = v;
            assert_eq!(
                ConnData::parse(&b),
                Err(ConnDataError::Reserved),
                "octet {at}"
            );
        }
        // A PSN without its flag is not a PSN "not carried".
        let mut b = BLOCK;
        b[field::FLAGS] = 0;
        assert_eq!(ConnData::parse(&b), Err(ConnDataError::Reserved));
    }

    #[test]
    fn emit_masks_to_24_bits() {
        let r = ConnData {
            src_qpn: 0xff00_0011,
            ..repr()
        };
        assert_eq!(ConnData::parse(&r.emit()).map(|p| p.src_qpn), Ok(0x11));
    }

    #[test]
    fn request_never_shows_what_the_reply_proves() {
        // In RTS: the SQ PSN only; in RTR: the RQ PSN only.
        assert_eq!(a().request().rq_psn, None);
        let rtr = Given {
            sq_psn: None,
            ..a()
        };
        assert_eq!(rtr.request().sq_psn, None);
        assert_eq!(rtr.request().rq_psn, Some(0x123456));
    }

    #[test]
    fn both_sides_in_rts_prove_both_directions() {
        assert_eq!(b().check_request(&a().request()), Verdict::Match);
        assert_eq!(a().check_reply(&b().reply()), Ok(()));
    }

    #[test]
    fn refuses_wrong_or_missing_values() {
        let req = a().request();
        for (bad, why) in [
            (ConnData { src_qpn: 19, ..req }, Mismatch::Qpn),
            (ConnData { dst_qpn: 16, ..req }, Mismatch::Qpn),
            (
                ConnData {
                    sq_psn: Some(0xabcdee),
                    ..req
                },
                Mismatch::Psn,
            ),
            (
                ConnData {
                    sq_psn: Some(0xabcdef),
                    rq_psn: Some(1),
                    ..req
                },
                Mismatch::Psn,
            ),
            // A Request that omits every PSN proves nothing.
            (
                ConnData {
                    sq_psn: None,
                    rq_psn: None,
                    ..req
                },
                Mismatch::Missing,
            ),
            // Omitting the SQ PSN and giving a wrong RQ PSN instead.
            (
                ConnData {
                    sq_psn: None,
                    rq_psn: Some(0x123457),
                    ..req
                },
                Mismatch::Psn,
            ),
        ] {
            assert_eq!(b().check_request(&bad), Verdict::Refuse(why), "{bad:?}");
        }
        let rep = b().reply();
        for (bad, why) in [
            (ConnData { src_qpn: 19, ..rep }, Mismatch::Qpn),
            (ConnData { dst_qpn: 16, ..rep }, Mismatch::Qpn),
            (
                ConnData {
                    sq_psn: None,
                    ..rep
                },
                Mismatch::Missing,
            ),
            (
                ConnData {
                    sq_psn: Some(1),
                    ..rep
                },
                Mismatch::Psn,
            ),
            (
                ConnData {
                    rq_psn: Some(1),
                    ..rep
                },
                Mismatch::Psn,
            ),
        ] {
            assert_eq!(a().check_reply(&bad), Err(why), "{bad:?}");
        }
    }

    #[test]
    fn a_mirrored_request_is_no_reply() {
        // What a listener that only reflects the Request could answer.
        let req = a().request();
        let mirror = ConnData {
            src_qpn: req.dst_qpn,
            dst_qpn: req.src_qpn,
            sq_psn: req.rq_psn,
            rq_psn: req.sq_psn,
        };
        assert_eq!(a().check_reply(&mirror), Err(Mismatch::Missing));
        // Nor one that copies the SQ PSN it was shown.
        let copy = ConnData {
            sq_psn: req.sq_psn,
            ..mirror
        };
        assert_eq!(a().check_reply(&copy), Err(Mismatch::Psn));
    }

    #[test]
    fn a_side_in_rtr() {
        let b_rtr = Given {
            sq_psn: None,
            ..b()
        };
        // A responder in RTR has no SQ PSN to prove: it connects instead.
        assert_eq!(b_rtr.check_request(&a().request()), Verdict::Reverse);
        // Its own Request proves its RQ PSN, which A sends with.
        assert_eq!(a().check_request(&b_rtr.request()), Verdict::Match);
        assert_eq!(b_rtr.check_reply(&a().reply()), Ok(()));
        // An initiator in RTR meets a responder in RTR: wait for its RTS.
        let a_rtr = Given {
            sq_psn: None,
            ..a()
        };
        assert_eq!(b_rtr.check_request(&a_rtr.request()), Verdict::NotYet);
        assert_eq!(b().check_request(&a_rtr.request()), Verdict::Match);
    }
}
