// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Shared helpers for the RX/TX integration tests: an event-recording sink and framing.
#![allow(dead_code)]

use rsiw_proto::crc::{crc32c_finish, Crc32c, SoftCrc32c, CRC32C_INIT};
use rsiw_proto::fpdu;
use rsiw_proto::rx::{HeaderInfo, Placement, RxConfig, RxError, RxParser, RxSink, SegmentEnd};
use rsiw_proto::terminate::TermCause;
use rsiw_proto::tx::{TxConfig, TxFramer, TxMessage};

/// What the parser reported, with payload chunks merged when contiguous so that
/// different input splits compare equal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ev {
    Header(HeaderInfo),
    Payload(Placement, Vec<u8>),
    End(SegmentEnd),
    Error(RxError),
}

/// Records events; optionally rejects headers like the module would.
pub struct Recorder {
    pub evs: Vec<Ev>,
    pub on_header: fn(&HeaderInfo) -> Result<(), TermCause>,
}

fn accept(_: &HeaderInfo) -> Result<(), TermCause> {
    Ok(())
}

impl Default for Recorder {
    fn default() -> Self {
        Self {
            evs: Vec::new(),
            on_header: accept,
        }
    }
}

fn contiguous(a: &Placement, len: usize, b: &Placement) -> bool {
    match (a, b) {
        (Placement::Tagged { stag: s1, to: t1 }, Placement::Tagged { stag: s2, to: t2 }) => {
            s1 == s2 && t1.wrapping_add(len as u64) == *t2
        }
        (
            Placement::Untagged {
                qn: q1,
                msn: m1,
                mo: o1,
            },
            Placement::Untagged {
                qn: q2,
                msn: m2,
                mo: o2,
            },
        ) => q1 == q2 && m1 == m2 && o1.wrapping_add(len as u32) == *o2,
        _ => false,
    }
}

impl RxSink for Recorder {
    fn header(&mut self, hdr: &HeaderInfo) -> Result<(), TermCause> {
        self.evs.push(Ev::Header(*hdr));
        (self.on_header)(hdr)
    }

    fn payload(&mut self, data: &[u8], at: Placement) -> Result<(), TermCause> {
        assert!(!data.is_empty(), "empty payload callback");
        if let Some(Ev::Payload(p, buf)) = self.evs.last_mut() {
            if contiguous(p, buf.len(), &at) {
                buf.extend_from_slice(data);
                return Ok(());
            }
        }
        self.evs.push(Ev::Payload(at, data.to_vec()));
        Ok(())
    }

    fn segment_end(&mut self, end: &SegmentEnd) -> Result<(), TermCause> {
        self.evs.push(Ev::End(*end));
        Ok(())
    }
}

pub const RX_CRC: RxConfig = RxConfig {
    crc: true,
    markers: false,
    max_ulpdu: u16::MAX,
};

/// Feeds `chunks` in order and returns the events, the error (if any) as last event.
pub fn run_with(cfg: RxConfig, rec: Recorder, chunks: &[&[u8]]) -> Vec<Ev> {
    let mut rx = RxParser::new(SoftCrc32c, cfg);
    let mut rec = rec;
    for c in chunks {
        if let Err(e) = rx.feed(c, &mut rec) {
            rec.evs.push(Ev::Error(e));
            assert!(rx.is_dead());
            // A dead parser keeps answering with the same error.
            assert_eq!(rx.feed(&[0], &mut Recorder::default()), Err(e));
            return rec.evs;
        }
    }
    rec.evs
}

/// Feeds the whole stream at once.
pub fn run(cfg: RxConfig, stream: &[u8]) -> Vec<Ev> {
    run_with(cfg, Recorder::default(), &[stream])
}

/// Frames a ULPDU as an FPDU without markers: length, ULPDU, PAD, CRC (or zero).
pub fn fpdu(ulpdu: &[u8], crc: bool) -> Vec<u8> {
    let mut v = (ulpdu.len() as u16).to_be_bytes().to_vec();
    v.extend_from_slice(ulpdu);
    v.resize(v.len() + fpdu::pad_len(ulpdu.len() as u16), 0);
    let c = if crc {
        crc32c_finish(SoftCrc32c.update(CRC32C_INIT, &v))
    } else {
        0
    };
    v.extend_from_slice(&c.to_le_bytes());
    v
}

/// Frames a message with the TX framer.
pub fn frame(tx: &mut TxFramer, msg: &TxMessage, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for f in tx.frames(msg).expect("frameable") {
        f.write(&SoftCrc32c, payload, |b| out.extend_from_slice(b))
            .unwrap();
    }
    out
}

/// Frames one message on a fresh framer.
pub fn frame1(cfg: TxConfig, msg: &TxMessage, payload: &[u8]) -> Vec<u8> {
    frame(&mut TxFramer::new(cfg), msg, payload)
}
