// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Unit tests of the receive parser (`rx.rs`).

use super::*;
use crate::crc::SoftCrc32c;

struct Count(usize);
impl RxSink for Count {
    fn header(&mut self, _: &HeaderInfo) -> Result<(), TermCause> {
        self.0 += 1;
        Ok(())
    }
    fn payload(&mut self, d: &[u8], _: Placement) -> Result<(), TermCause> {
        assert!(!d.is_empty());
        Ok(())
    }
    fn segment_end(&mut self, _: &SegmentEnd) -> Result<(), TermCause> {
        Ok(())
    }
}

/// Arbitrary octets, in arbitrary chunks, under every configuration: no panic, and
/// once dead the parser stays dead with the same error.
#[test]
fn garbage_never_panics() {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut rnd = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for round in 0..3000 {
        let cfg = RxConfig {
            crc: round & 1 != 0,
            markers: round & 2 != 0,
            max_ulpdu: if round & 4 != 0 { 128 } else { u16::MAX },
        };
        let len = (rnd() % 300) as usize;
        let mut data: std::vec::Vec<u8> = (0..len).map(|_| rnd() as u8).collect();
        // Bias towards plausible headers so that deeper states are reached.
        if data.len() > 4 && round % 3 == 0 {
            data[0] = 0;
            data[1] = (rnd() % 80) as u8;
            data[2] = 0x41 | (data[2] & 0x80);
            data[3] = 0x40 | (data[3] & 0x0f);
        }
        let mut rx = RxParser::new(SoftCrc32c, cfg);
        let mut sink = Count(0);
        let mut rest = &data[..];
        let mut dead = None;
        while !rest.is_empty() {
            let n = (1 + rnd() % 40) as usize;
            let (a, b) = rest.split_at(n.min(rest.len()));
            rest = b;
            match rx.feed(a, &mut sink) {
                Ok(()) => assert!(dead.is_none() && !rx.is_dead()),
                Err(e) => {
                    assert!(dead.is_none() || dead == Some(e));
                    dead = Some(e);
                    assert_eq!(rx.error(), Some(e));
                }
            }
        }
    }
}

#[test]
fn boundary_tracking() {
    let mut rx = RxParser::new(
        SoftCrc32c,
        RxConfig {
            crc: false,
            markers: false,
            max_ulpdu: u16::MAX,
        },
    );
    assert!(rx.at_boundary());
    // A zero-length Send, MSN 1, CRC field zero (CRC not negotiated).
    let f = [
        0, 18, 0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0,
    ];
    let mut sink = Count(0);
    rx.feed(&f[..5], &mut sink).unwrap();
    assert!(!rx.at_boundary());
    rx.feed(&f[5..], &mut sink).unwrap();
    assert!(rx.at_boundary());
    assert_eq!(sink.0, 1);
}
