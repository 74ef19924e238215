// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Framing: the next FPDU of the message in progress into the TX buffer
//! (RFC 5044 §4: length, ULPDU, PAD, CRC; the DDP segment and its headers
//! from the protocol core's framer), its payload copied or referenced
//! zero-copy, and the Terminate message (RFC 5040 §4.8).

use super::{Done, Msg, Src, TxState};
use crate::{
    engine::Engine,
    ffi::crc::KernelCrc32c,
    mem::MemError,
    proto::{
        crc::{crc32c_finish, Crc32c, CRC32C_INIT},
        ddp::{self, Buffer},
        rdmap::{Header, Opcode},
        terminate::TerminateRepr,
        tx::Piece,
    },
};
use core::sync::atomic::Ordering;

/// Why a message could not be framed.
pub(super) enum FrameError {
    /// Its payload source is no longer valid (invalidated, deregistered or
    /// registered anew since it was checked): nothing of it was read.
    SrcDead,
    /// Anything else.
    Broken,
}

impl Engine {
    /// Frames the next FPDU of `tx.cur` into `tx.wire` (behind the copied
    /// octets there if `append`: never zero-copy then); `Err` if the message
    /// cannot be framed or its payload cannot be read.
    pub(super) fn frame(&self, tx: &mut TxState, append: bool) -> Result<(), FrameError> {
        if !append {
            tx.clear_fpdu();
        }
        let base = tx.len;
        let TxState {
            framer,
            wire,
            len,
            hlen,
            zc: segs,
            zc_len,
            zc_min,
            cur,
            after,
            ..
        } = tx;
        let msg = cur.as_mut().ok_or(FrameError::Broken)?;
        let total = msg.tmpl.payload_len;
        let off = msg.off;
        // The rest of the message as a message of its own: same segments,
        // except that the RDMAP header goes only into the first one and an
        // untagged MO must count from the real start (patched below).
        let mut rest = msg.tmpl;
        rest.payload_len = total.saturating_sub(off);
        if off > 0 {
            rest.rdmap = Header::None;
            if let Buffer::Tagged { stag, to } = rest.ddp {
                rest.ddp = Buffer::Tagged {
                    stag,
                    to: to.wrapping_add(u64::from(off)),
                };
            }
        }
        let f = framer
            .frames(&rest)
            .map_err(|_| FrameError::Broken)?
            .next()
            .ok_or(FrameError::Broken)?;
        let patch_mo = off > 0 && matches!(rest.ddp, Buffer::Untagged { .. });
        // Large messages from pinned user memory go zero-copy; markers
        // would split the payload, and are never sent anyway.
        let try_zc = !append && *zc_min > 0 && total >= *zc_min && !self.params.markers_tx;
        let crc_on = self.params.crc;
        let mut crc = CRC32C_INIT;
        // Copied octets from here on are not in `crc` yet: the CRC runs over
        // them in one call where they end (the trailer or a zero-copy part),
        // not once per piece.
        let mut crc_from = base;
        let mut pos = base;
        for p in f.pieces() {
            let n = p.len();
            let dst = wire.get_mut(pos..pos + n).ok_or(FrameError::Broken)?;
            match p {
                Piece::Bytes(b) => dst.copy_from_slice(b),
                Piece::Marker(m) => dst.copy_from_slice(&m),
                Piece::Payload(r) => {
                    let at = off
                        .checked_add(u32::try_from(r.start).map_err(|_| FrameError::Broken)?)
                        .ok_or(FrameError::Broken)?;
                    if try_zc && n > 0 && matches!(msg.src.user_pages(at, n, segs), Ok(true)) {
                        if crc_on {
                            crc = KernelCrc32c
                                .update(crc, wire.get(crc_from..pos).ok_or(FrameError::Broken)?);
                            crc = segs.iter().fold(crc, |c, s| s.crc32c(c));
                        }
                        crc_from = pos;
                        // The payload is not in `wire`: what follows is
                        // the trailer, sent after the pages.
                        *hlen = pos;
                        *zc_len = n;
                        continue;
                    }
                    segs.clear();
                    msg.src.read(at, dst).map_err(|e| match e {
                        MemError::State | MemError::Stag => FrameError::SrcDead,
                        _ => FrameError::Broken,
                    })?;
                }
                Piece::Crc => {
                    if crc_on {
                        crc = KernelCrc32c
                            .update(crc, wire.get(crc_from..pos).ok_or(FrameError::Broken)?);
                    }
                    let v = if crc_on { crc32c_finish(crc) } else { 0 };
                    wire.get_mut(pos..pos + n)
                        .ok_or(FrameError::Broken)?
                        .copy_from_slice(&v.to_le_bytes());
                    pos += n;
                    continue;
                }
            }
            if pos == base && patch_mo {
                // The header is the first piece (no markers are sent).
                let hdr = wire
                    .get_mut(base + 2..base + 2 + ddp::UNTAGGED_HDR_LEN)
                    .ok_or(FrameError::Broken)?;
                ddp::Packet::new_unchecked(hdr).set_mo(off);
            }
            pos += n;
        }
        if *zc_len == 0 {
            *hlen = pos;
        }
        msg.off = off.saturating_add(f.payload.len() as u32);
        *len = pos;
        if msg.off >= total {
            if msg.inbound {
                // Answered: the peer may send its next request only once
                // this arrives, so the slot is free before it is sent.
                self.inbound.fetch_sub(1, Ordering::AcqRel);
            }
            *after = msg.done;
            *cur = None;
        }
        Ok(())
    }
}

/// RFC 5040 §4.8: the Terminate message on QN 2, then the stream closes.
pub(super) fn terminate_msg(tx: &mut TxState, t: TerminateRepr) -> Msg {
    Msg {
        inbound: false,
        tmpl: tx.untagged(Opcode::Terminate, 0, Header::Terminate(t), 0),
        off: 0,
        src: Src::None,
        done: Done::Shutdown,
    }
}
