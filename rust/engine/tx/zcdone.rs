// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Zero-copy completions. A Send or Write whose payload went to TCP by page
//! reference completes only once TCP has released the pages (every skb that
//! referenced them freed: acknowledged, purged, or copied on a loopback
//! delivery): a completion tells the application its memory is its own
//! again, so nothing it writes there afterwards may reach the wire, not
//! behind a peer's closed window, not in a retransmission. Until then the
//! WQE is held in the SQ (`QpPort::sq_hold`), which keeps the SQ's
//! completion order: the WQEs behind it wait as well.
//!
//! A released tracker kicks the TX work through the stream's write-space
//! callback; the work unholds its WQE ([`Engine::zc_poll`]). `quiesce`
//! releases what is left ([`Engine::zc_drain`]).

use super::TxState;
use crate::{engine::Engine, kapi::zc::ZcBuf, resources::counters::Counter};
use core::sync::atomic::Ordering;
use kernel::{alloc::flags::GFP_KERNEL, prelude::*, sync::Arc};

/// Messages whose pages TCP may hold at once; a message beyond these goes
/// copied. Each holds its WQE, so the count also bounds how far the SQ's
/// completions can lag behind TCP.
const ZC_WAIT: usize = 16;

/// What a QP that sent zero-copy tracks.
struct Inner {
    /// The message being sent (its WQE `seq`).
    cur: Option<(u64, ZcBuf)>,
    /// Sent messages, their pages not yet released.
    wait: [Option<(u64, ZcBuf)>; ZC_WAIT],
}

/// The trackers of a connection's zero-copy messages, allocated with the
/// first one: a QP that copies pays one pointer (and `Engine::build`'s
/// stack frame, which holds the TX state, stays small).
pub(super) struct ZcTrack(Option<KBox<Inner>>);

impl ZcTrack {
    pub(super) fn new() -> Self {
        Self(None)
    }

    fn waiting(&mut self) -> impl Iterator<Item = &mut Option<(u64, ZcBuf)>> {
        self.0.iter_mut().flat_map(|i| i.wait.iter_mut())
    }

    /// The tracker of the message in progress, if it goes zero-copy.
    pub(super) fn cur(&self) -> Option<&ZcBuf> {
        self.0.as_ref()?.cur.as_ref().map(|(_, z)| z)
    }

    fn cur_seq(&self) -> Option<u64> {
        self.0.as_ref()?.cur.as_ref().map(|(s, _)| *s)
    }

    /// A slot for one more message (allocated if need be, in TX's process
    /// context).
    fn free_slot(&mut self) -> bool {
        if self.0.is_none() {
            let inner = Inner {
                cur: None,
                wait: core::array::from_fn(|_| None),
            };
            self.0 = KBox::new(inner, GFP_KERNEL).ok();
        }
        self.waiting().any(|w| w.is_none())
    }

    /// `seq` is the message in progress, tracked by `z` (after
    /// `free_slot`).
    fn start(&mut self, seq: u64, z: ZcBuf) {
        if let Some(i) = &mut self.0 {
            i.cur = Some((seq, z));
        }
    }

    /// The message in progress is sent, or abandoned: no more pages go
    /// under its tracker, which waits for TCP's release.
    pub(super) fn end_cur(&mut self) {
        let Some(i) = &mut self.0 else { return };
        let Some((seq, mut z)) = i.cur.take() else {
            return;
        };
        z.sent();
        // A slot was free when the tracker was made, and only `end_cur`
        // fills one.
        if let Some(slot) = i.wait.iter_mut().find(|w| w.is_none()) {
            *slot = Some((seq, z));
        }
    }

    /// Some tracker is not released yet.
    pub(super) fn pending(&self) -> bool {
        self.0
            .as_ref()
            .is_some_and(|i| i.cur.is_some() || i.wait.iter().flatten().any(|(_, z)| !z.released()))
    }
}

impl Engine {
    /// The FPDU about to be framed from WQE `seq`'s pages goes zero-copy if
    /// it has a tracker (made here for a new message, the WQE held from
    /// then on); false: copy it.
    pub(super) fn zc_track(&self, zct: &mut ZcTrack, seq: u64) -> bool {
        if let Some(s) = zct.cur_seq() {
            if s == seq {
                return true;
            }
            zct.end_cur();
        }
        if !zct.free_slot() {
            return false;
        }
        let Some(z) = self.stream.zc_buf() else {
            return false;
        };
        self.qp.sq_hold(seq, true);
        self.zc_held.fetch_add(1, Ordering::AcqRel);
        self.ctr.inc(Counter::TxZcopyHeld);
        zct.start(seq, z);
        true
    }

    /// Unholds the WQEs whose pages TCP has released; true if one was
    /// (the caller reaps).
    pub(super) fn zc_poll(&self, tx: &mut TxState) -> bool {
        let mut any = false;
        for w in tx.zct.waiting() {
            if w.as_ref().is_some_and(|(_, z)| z.released()) {
                if let Some((seq, _)) = w.take() {
                    self.qp.sq_hold(seq, false);
                    self.zc_held.fetch_sub(1, Ordering::AcqRel);
                    any = true;
                }
            }
        }
        any
    }

    /// A released tracker's kick (the write-space callback) after the
    /// stream closed, when `kick` no longer queues TX: the work still runs
    /// to unhold, unless `quiesce` has begun (it releases them itself).
    pub(crate) fn zc_kick(self: &Arc<Self>) {
        // While the engine runs, `kick` has queued the work: `stopped`
        // only ever turns true, so if `kick` found it false before this
        // look, the work is queued; if it found it true, so does this.
        if self.zc_held.load(Ordering::Acquire) == 0 || !self.stopped.load(Ordering::SeqCst) {
            return;
        }
        self.busy.fetch_add(1, Ordering::SeqCst);
        if self.quiescing.load(Ordering::SeqCst) {
            self.busy.fetch_sub(1, Ordering::SeqCst);
            return;
        }
        self.requeue_kick();
    }

    /// `quiesce`, the stream closed and no TX running: ends the message in
    /// progress, resets the stream if TCP still holds pages (its queue is
    /// purged), waits up to `ZC_DRAIN_MS` for the release, then unholds
    /// every WQE. Process context.
    pub(crate) fn zc_drain(&self) {
        const ZC_DRAIN_MS: i64 = 2000;
        let until = crate::kapi::deadline::now_ms() + ZC_DRAIN_MS;
        let mut reset = false;
        loop {
            let mut tx = self.tx.lock();
            tx.zct.end_cur();
            self.zc_poll(&mut tx);
            if !tx.zct.pending() {
                break;
            }
            if !reset {
                reset = true;
                drop(tx);
                self.stream.shutdown(true);
                continue;
            }
            if crate::kapi::deadline::now_ms() >= until {
                // Not seen in any run: TCP's queue was purged by the reset,
                // so only a device's TX ring could still hold an skb.
                pr_warn!(
                    "qp {}: zero-copy pages still referenced {} ms after the reset; completing\n",
                    self.qp.num(),
                    ZC_DRAIN_MS
                );
                for w in tx.zct.waiting() {
                    if let Some((seq, _)) = w.take() {
                        self.qp.sq_hold(seq, false);
                        self.zc_held.fetch_sub(1, Ordering::AcqRel);
                    }
                }
                break;
            }
            drop(tx);
            let mut g = self.idle.lock();
            let _ = self.idle_cv.wait_interruptible_timeout(&mut g, 2);
        }
        // Completions of the unheld WQEs; the QP is being quiesced, its
        // state set by the caller, so a failed one needs no more here.
        let _ = self.reap();
    }
}
