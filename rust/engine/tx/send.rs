// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Handing the FPDU in progress to the socket: its copied header, its page
//! pieces (by reference under a zero-copy tracker, or copied by TCP in the
//! call) and its copied trailer; and the bounce of an FPDU of pages TCP
//! copies that TX leaves half sent.

use super::{zc, Counter, Engine, TxState};
use kernel::prelude::*;

impl TxState {
    /// TX leaves the FPDU in progress unsent (or partly): if its payload is
    /// pages TCP copies (`copy_pages`), what is left of it is copied into
    /// `wire` now, while its WQE is still outstanding, so that nothing is
    /// read from them after this run, when a flush may have completed it
    /// (the memory is the application's again). `frame` sized `wire` for
    /// the whole FPDU; false if it is not (then nothing changed).
    fn bounce(&mut self) -> bool {
        if !self.copy_pages {
            return true;
        }
        let (h, z, l) = (self.hlen, self.zc_len, self.len);
        let Some(buf) = self.wire.get_mut(..l + z) else {
            return false;
        };
        // Header, payload, trailer in a row: the trailer moves behind the
        // payload's place, then the pieces fill it.
        buf.copy_within(h..l, h + z);
        let mut at = h;
        for seg in self.zc.iter() {
            let n = seg.len();
            let Some(d) = buf.get_mut(at..at + n) else {
                return false;
            };
            if seg.copy_to(d).is_err() {
                return false;
            }
            at += n;
        }
        if at != h + z {
            return false;
        }
        // `sent` counts the same octets of the same FPDU, now all copied.
        self.len = l + z;
        self.hlen = self.len;
        self.zc.clear();
        self.zc_len = 0;
        self.copy_pages = false;
        true
    }
}

impl Engine {
    /// Sends (some of) the rest of the FPDU in progress: the copied header,
    /// the zero-copy payload pages, then the copied trailer, in one socket
    /// call (the shim puts the copied octets in a page fragment) if the
    /// FPDU fits a TCP segment, otherwise, or if the shim
    /// has no fragment, one call each. Returns the octets sent and whether
    /// they went with `MSG_MORE`.
    pub(super) fn send_part(&self, tx: &TxState) -> Result<(usize, bool)> {
        let (s, h, z, l) = (tx.sent, tx.hlen, tx.zc_len, tx.len);
        // More FPDUs of the same message, or more messages, follow: let
        // TCP fill its segments.
        let more = tx.cur.is_some() || tx.batch;
        // One call for an FPDU that fits the current MSS (every RFC FPDU; a
        // large one over loopback at MTU 65536); a large FPDU spanning many
        // segments (61,460 octets at MTU 1500) goes in three: measured on
        // loopback under TCG, one call lost it 25-35 %, TCP building about
        // three times as many, smaller, GSO packets from it (performance.md,
        // "One socket call per zero-copy FPDU"). `mss_cache`, not the MSS of
        // the stream's start: that is bounded by half the peer's first window.
        // Zero-copy pages go under the message's tracker; pages TCP copies
        // go without one.
        let zct = || {
            if tx.copy_pages {
                Ok(None)
            } else {
                tx.zct.cur().map(Some).ok_or(EINVAL)
            }
        };
        if z > 0 && l <= zc::MAX_FRAMING && z + l <= self.stream.mss() as usize {
            // What is left of the header, the pages and the trailer in one
            // call; the trailer starts at `h` in `wire`.
            let zct = zct()?;
            let rest = zc::FpduRest {
                zc: zct,
                head: tx.wire.get(s.min(h)..h).ok_or(EINVAL)?,
                segs: &tx.zc,
                skip: s.saturating_sub(h).min(z),
                tail: tx.wire.get(h + s.saturating_sub(h + z)..l).ok_or(EINVAL)?,
            };
            match self.stream.send_fpdu(&rest, more) {
                Err(e) if e == ENOMEM => {}
                r => return r.map(|n| (n, more)),
            }
        }
        if s < h {
            let b = tx.wire.get(s..h).ok_or(EINVAL)?;
            let more = more || h < l;
            self.stream.send(&[b], more).map(|n| (n, more))
        } else if s - h < z {
            let more = more || h < l;
            self.stream
                .send_pages(zct()?, &tx.zc, s - h, more)
                .map(|n| (n, more))
        } else {
            let b = tx.wire.get(s - z..l).ok_or(EINVAL)?;
            self.stream.send(&[b], more).map(|n| (n, more))
        }
    }

    /// [`TxState::bounce`], counted.
    pub(super) fn bounce(&self, tx: &mut TxState) -> bool {
        if tx.copy_pages {
            self.ctr.inc(Counter::TxCopyBounced);
        }
        tx.bounce()
    }
}
