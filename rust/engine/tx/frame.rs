// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Framing: the next FPDU of the message in progress into the TX buffer
//! (RFC 5044 §4: length, ULPDU, PAD, CRC; the DDP segment and its headers
//! from the protocol core's framer), its payload copied or referenced
//! zero-copy, and the Terminate message (RFC 5040 §4.8).

use super::{
    Done, Msg, Src, TxState, COPY_PAGES_MIN, FRAME_EXTRA, LARGE_PAYLOAD, MAX_HEADERS, WIRE_BATCH,
};
use crate::{
    engine::Engine,
    kapi::{crc::KernelCrc32c, zc::Segs},
    proto::{
        crc::Crc32c,
        fpdu::{MARKER_INTERVAL, MARKER_LEN},
        rdmap::{Header, Opcode},
        terminate::TerminateRepr,
        tx::FpduOut,
    },
    resources::mem::MemError,
};
use core::{ops::Range, sync::atomic::Ordering};
use kernel::alloc::{flags::GFP_KERNEL, KVVec};

/// Why a message could not be framed.
pub(super) enum FrameError {
    /// Its payload source is no longer valid (invalidated, deregistered or
    /// registered anew since it was checked): nothing of it was read.
    SrcDead,
    /// Anything else.
    Broken,
}

/// Where the core's framer puts an FPDU ([`FpduOut`]): framer octets and
/// copied payload into the TX buffer from `pos` on; a zero-copy payload is
/// already in `segs` and only its CRC is taken here.
struct Out<'a> {
    wire: &'a mut [u8],
    pos: usize,
    src: &'a Src,
    /// The payload is the pages in `segs` (else it is copied).
    zc: Option<&'a Segs>,
    /// Where the copied octets before the zero-copy payload end.
    hlen: Option<usize>,
}

impl FpduOut for Out<'_> {
    type Error = FrameError;

    fn bytes(&mut self, b: &[u8]) -> Result<(), FrameError> {
        let end = self.pos + b.len();
        self.wire
            .get_mut(self.pos..end)
            .ok_or(FrameError::Broken)?
            .copy_from_slice(b);
        self.pos = end;
        Ok(())
    }

    fn payload(&mut self, r: Range<usize>, crc: Option<&mut u32>) -> Result<(), FrameError> {
        if let Some(segs) = self.zc {
            if let Some(reg) = crc {
                *reg = segs.iter().fold(*reg, |c, s| s.crc32c(c));
            }
            // What follows (PAD, CRC) is sent after the pages.
            self.hlen = Some(self.pos);
            return Ok(());
        }
        let at = u32::try_from(r.start).map_err(|_| FrameError::Broken)?;
        let end = self.pos + r.len();
        let dst = self.wire.get_mut(self.pos..end).ok_or(FrameError::Broken)?;
        self.src.read(at, dst).map_err(|e| match e {
            MemError::State | MemError::Stag => FrameError::SrcDead,
            _ => FrameError::Broken,
        })?;
        // The CRC runs over the octets just copied, while they are in cache.
        if let Some(reg) = crc {
            *reg = KernelCrc32c.update(*reg, dst);
        }
        self.pos = end;
        Ok(())
    }
}

impl Engine {
    /// Frames the next FPDU of `tx.cur` into `tx.wire` (behind the copied
    /// octets there if `append`: never zero-copy then); `Err` if the message
    /// cannot be framed or its payload cannot be read. The protocol core
    /// frames it at the message's offset (`TxFramer::fpdu_at`); its size is
    /// what the framer's MULPDU allows (large FPDUs: `LARGE_PAYLOAD`) when the
    /// payload goes zero-copy, and what fits the TX buffer when it is copied.
    pub(super) fn frame(&self, tx: &mut TxState, append: bool) -> Result<(), FrameError> {
        if !append {
            tx.clear_fpdu();
        }
        let base = tx.len;
        // Sends and Writes may go zero-copy, their WQE held until TCP
        // releases the pages (`zcdone.rs`); a Read Response is always copied:
        // no completion tells when the responder's region is free again.
        let zc_seq = match tx.cur.as_ref() {
            Some(Msg {
                inbound: false,
                done: Done::Complete(seq) | Done::ThenImm { seq, .. },
                ..
            }) => Some(*seq),
            _ => None,
        };
        let TxState {
            framer,
            wire,
            wire_cap,
            len,
            hlen,
            zc: segs,
            zc_len,
            zc_min,
            zct,
            copy_pages,
            large,
            cur,
            after,
            ..
        } = tx;
        let msg = cur.as_mut().ok_or(FrameError::Broken)?;
        let total = msg.tmpl.payload_len;
        let off = msg.off;
        let left = total.saturating_sub(off);
        let mut room = framer.room(&msg.tmpl, off);
        if *large {
            room = room.min(LARGE_PAYLOAD);
        }
        // Large Sends and Writes from pinned user memory go zero-copy when
        // `tx_zcopy_min` asks for it (0 copies everything); with markers
        // (`markers_tx`) every FPDU is copied, the markers between its
        // octets.
        let try_zc = !append
            && zc_seq.is_some()
            && *zc_min > 0
            && total >= *zc_min
            && !self.params.markers_tx;
        let want = left.min(room);
        let zc = try_zc
            && want > 0
            && matches!(msg.src.user_pages(off, want as usize, segs), Ok(true))
            && zc_seq.is_some_and(|seq| self.zc_track(zct, seq));
        *copy_pages = false;
        let max = if zc {
            want
        } else {
            segs.clear();
            if base == 0 {
                grow_wire(wire, *wire_cap, want as usize + FRAME_EXTRA + MAX_HEADERS);
            }
            // Copied: what the buffer holds behind `base` and the headers.
            let mut fits = wire.len().saturating_sub(base + FRAME_EXTRA + MAX_HEADERS);
            if self.params.markers_tx {
                // A marker every 508 octets of FPDU and one in front of it.
                fits =
                    fits.saturating_sub(MARKER_LEN * (fits / (MARKER_INTERVAL - MARKER_LEN) + 2));
            }
            let max = want.min(u32::try_from(fits).unwrap_or(u32::MAX));
            // A large Send or Write from pinned user memory is copied by
            // TCP's own send call, straight from the pages, not first into
            // `wire`: one copy of each octet instead of two. Its WQE
            // completes once the FPDU is in the socket, as for a copy; an
            // FPDU that TX leaves before the socket took all of it is copied
            // into `wire` first (`bounce`), which is sized for it here.
            *copy_pages = !append
                && zc_seq.is_some()
                && !self.params.markers_tx
                && total >= COPY_PAGES_MIN
                && max > 0
                && matches!(msg.src.user_pages(off, max as usize, segs), Ok(true));
            if !*copy_pages {
                segs.clear();
            }
            max
        };
        let by_pages = zc || *copy_pages;
        let f = framer
            .fpdu_at(&msg.tmpl, off, max)
            .map_err(|_| FrameError::Broken)?;
        if by_pages && f.payload.len() != max as usize {
            return Err(FrameError::Broken);
        }
        let mut out = Out {
            wire: &mut wire[..],
            pos: base,
            src: &msg.src,
            zc: by_pages.then_some(&*segs),
            hlen: None,
        };
        f.emit(&KernelCrc32c, &mut out)?;
        let pos = out.pos;
        match out.hlen {
            Some(h) => {
                *hlen = h;
                *zc_len = f.payload.len();
            }
            None => *hlen = pos,
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

/// Replaces the empty wire buffer when a copied FPDU wants `need` octets and
/// the buffer is smaller: by the smallest of `WIRE_BATCH` and the powers of
/// two above it that holds them, at most its full size `cap`. A QP whose
/// copied messages are small (4 KiB ones: an 8 KiB buffer) never pays for the
/// 64 KiB and more a loopback MULPDU allows; the buffer grows a few times at
/// most, and never shrinks. TX runs in process context (the work item, or a
/// doorbell's system call) under the TX mutex, so the allocation may sleep;
/// if it fails, the buffer stays as it is and the FPDU is framed smaller.
fn grow_wire(wire: &mut KVVec<u8>, cap: usize, need: usize) {
    if wire.len() >= cap || need <= wire.len() {
        return;
    }
    let size = need.max(WIRE_BATCH).next_power_of_two().min(cap);
    if let Ok(w) = KVVec::from_elem(0u8, size, GFP_KERNEL) {
        *wire = w;
    }
}

/// Replaces the wire buffer by one of `size` octets if it is smaller, with
/// its first `used` octets (an FPDU framed already) copied over; in process
/// context under the TX mutex, as [`grow_wire`]. If the allocation fails,
/// the buffer stays as it is (fewer FPDUs coalesce in it).
pub(super) fn grow_wire_keep(wire: &mut KVVec<u8>, size: usize, used: usize) {
    if wire.len() >= size {
        return;
    }
    let Some(framed) = wire.get(..used) else {
        return;
    };
    if let Ok(mut w) = KVVec::from_elem(0u8, size, GFP_KERNEL) {
        if let Some(dst) = w.get_mut(..used) {
            dst.copy_from_slice(framed);
            *wire = w;
        }
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
