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
//! |   Version 1   |  Flags (PSN)  |           Reserved 0          |
//! +---------------+---------------+-------------------------------+
//! |                 Source QP number (24 bits in 32)              |
//! |              Destination QP number (24 bits in 32)            |
//! |                  Sender's SQ PSN (24 bits in 32)              |
//! |                  Sender's RQ PSN (24 bits in 32)              |
//! +---------------------------------------------------------------+
//! ```

use super::bytes::{be16, be32, put_be16, put_be32, put_slice, u8_at};

/// The block's first octets.
pub const MAGIC: [u8; 4] = *b"rsQP";
/// The version this file speaks.
pub const VERSION: u8 = 1;
/// Octets of the block.
pub const LEN: usize = 24;
/// Flags bit: the sender's SQ PSN is known (its QP reached RTS).
pub const FLAG_SQ_PSN: u8 = 0x01;
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
    /// Reserved bits, unknown flags, or a QP number or PSN over 24 bits.
    Reserved,
}

/// A block as it is sent: the sender's view of the pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnData {
    /// The sender's QP.
    pub src_qpn: u32,
    /// The receiver's QP it names.
    pub dst_qpn: u32,
    /// The sender's SQ PSN, once known (`FLAG_SQ_PSN`).
    pub sq_psn: Option<u32>,
    /// The sender's RQ PSN.
    pub rq_psn: u32,
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
        if flags & !FLAG_SQ_PSN != 0
            || be16(b, field::RESERVED) != 0
            || words.iter().any(|w| w & !MASK_24 != 0)
            || (flags & FLAG_SQ_PSN == 0 && words[2] != 0)
        {
            return Err(ConnDataError::Reserved);
        }
        Ok(Self {
            src_qpn: words[0],
            dst_qpn: words[1],
            sq_psn: (flags & FLAG_SQ_PSN != 0).then_some(words[2]),
            rq_psn: words[3],
        })
    }

    /// The block's octets (values masked to 24 bits).
    pub fn emit(&self) -> [u8; LEN] {
        let mut b = [0u8; LEN];
        put_slice(&mut b, field::MAGIC.start, &MAGIC);
        b[field::VERSION] = VERSION;
        b[field::FLAGS] = if self.sq_psn.is_some() {
            FLAG_SQ_PSN
        } else {
            0
        };
        put_be16(&mut b, field::RESERVED, 0);
        put_be32(&mut b, field::SRC_QPN, self.src_qpn & MASK_24);
        put_be32(&mut b, field::DST_QPN, self.dst_qpn & MASK_24);
        put_be32(&mut b, field::SQ_PSN, self.sq_psn.unwrap_or(0) & MASK_24);
        put_be32(&mut b, field::RQ_PSN, self.rq_psn & MASK_24);
        b
    }

    /// Does `peer` (the other side's block) describe the other end of the pair
    /// `self` describes? Each side's QP names the other's; the PSN each side sends
    /// with is the one the other expects (IBA 10.2.4: the requester's SQ PSN is the
    /// responder's expected PSN); a PSN not known yet is not compared.
    pub fn pairs_with(&self, peer: &ConnData) -> bool {
        let psn_ok = |sq: Option<u32>, rq: u32| match sq {
            Some(s) => s & MASK_24 == rq & MASK_24,
            None => true,
        };
        self.src_qpn & MASK_24 == peer.dst_qpn
            && self.dst_qpn & MASK_24 == peer.src_qpn
            && psn_ok(self.sq_psn, peer.rq_psn)
            && psn_ok(peer.sq_psn, self.rq_psn)
    }
}

#[cfg(test)]
mod test {
    use super::*;

    static BLOCK: [u8; LEN] = [
        b'r', b's', b'Q', b'P', 0x01, 0x01, 0x00, 0x00, // magic, version, flags
        0x00, 0x00, 0x00, 0x11, 0x00, 0x00, 0x00, 0x12, // QPNs 17 -> 18
        0x00, 0xab, 0xcd, 0xef, 0x00, 0x12, 0x34, 0x56, // PSNs
    ];

    fn repr() -> ConnData {
        ConnData {
            src_qpn: 17,
            dst_qpn: 18,
            sq_psn: Some(0xabcdef),
            rq_psn: 0x123456,
        }
    }

    #[test]
    fn deconstruct() {
        assert_eq!(ConnData::parse(&BLOCK), Ok(repr()));
    }

    #[test]
    fn construct() {
        assert_eq!(repr().emit(), BLOCK);
    }

    #[test]
    fn unknown_sq_psn_round_trips_as_none() {
        let r = ConnData {
            sq_psn: None,
            ..repr()
        };
        let b = r.emit();
        assert_eq!(b[field::FLAGS], 0);
        assert_eq!(&b[field::SQ_PSN..field::SQ_PSN + 4], &[0, 0, 0, 0]);
        assert_eq!(ConnData::parse(&b), Ok(r));
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
        let mut b = BLOCK;
        b[field::VERSION] = 2;
        assert_eq!(ConnData::parse(&b), Err(ConnDataError::Version(2)));
        for (at, v) in [
            (field::FLAGS, 0x03),
            (field::RESERVED + 1, 1),
            (field::SRC_QPN, 1),
        ] {
            let mut b = BLOCK;
            b[at] = v;
            assert_eq!(
                ConnData::parse(&b),
                Err(ConnDataError::Reserved),
                "octet {at}"
            );
        }
        // A PSN without its flag is not a PSN "not known yet".
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
    fn pairing() {
        let a = repr();
        let b = ConnData {
            src_qpn: 18,
            dst_qpn: 17,
            sq_psn: Some(0x123456),
            rq_psn: 0xabcdef,
        };
        assert!(a.pairs_with(&b) && b.pairs_with(&a));
        // A side at RTR has no SQ PSN yet: only the other direction is compared.
        let b_rtr = ConnData { sq_psn: None, ..b };
        assert!(a.pairs_with(&b_rtr));
        for bad in [
            ConnData { src_qpn: 19, ..b },
            ConnData { dst_qpn: 16, ..b },
            ConnData { rq_psn: 1, ..b },
            ConnData {
                sq_psn: Some(2),
                ..b
            },
        ] {
            assert!(!a.pairs_with(&bad), "{bad:?}");
        }
    }
}
