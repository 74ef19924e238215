// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The connected TCP stream under an established MPA connection (RFC 5044 §7:
//! after the Request/Reply exchange the stream carries FPDUs): non-blocking
//! send, received bytes and close events for the RDMAP/DDP engine.

use crate::kapi::{
    sock::{Socket, Watch},
    zc::{self, Segs},
};
use kernel::{
    new_mutex,
    prelude::*,
    sync::{Arc, Mutex},
};

/// The consumer of a stream's events: the engine's connection.
///
/// `rx` and `write_space` run in softirq (or in process context with bottom
/// halves disabled) with the socket lock held; none of them may sleep or call
/// back into the stream's `send`/`shutdown`/`detach`.
pub(crate) trait StreamConsumer: Send + Sync {
    /// Bytes of the FPDU stream in order, in consecutive pieces (of one
    /// socket buffer); returns how many were consumed (the rest stays queued
    /// in the socket until the next data-ready).
    fn rx(&self, pieces: &[&[u8]]) -> usize;
    /// A bulk of bytes is queued (softirq): true if the consumer reads them
    /// later, from its work item (process context), with
    /// [`Stream::rx_now`]; false to have them handed to `rx` now.
    fn rx_defer(&self) -> bool;
    /// Send space is available again after `send` returned `EAGAIN` or short.
    fn write_space(&self);
    /// The stream closed under the consumer: peer FIN, or RST/error if
    /// `abortive`. Called at most once per close the socket sees.
    fn closed(&self, abortive: bool);
}

/// Who owns the connection a stream belongs to (the CM's endpoint): it
/// hears of every close, to report it to the iw_cm.
pub(crate) trait StreamOwner: Send + Sync {
    /// The socket closed under the stream (softirq): peer FIN, or RST/error
    /// if `abortive`.
    fn stream_closed(&self, abortive: bool);
    /// The local side closes the stream (process context), with a reset
    /// if `abortive`.
    fn local_closed(&self, abortive: bool);
}

/// The socket's callback context while a consumer is attached.
pub(crate) struct Attached {
    conn: Arc<dyn StreamConsumer>,
    owner: Arc<dyn StreamOwner>,
}

impl Attached {
    /// Received bytes (see [`StreamConsumer::rx`]).
    pub(crate) fn rx(&self, pieces: &[&[u8]]) -> usize {
        self.conn.rx(pieces)
    }

    /// Bulk received (see [`StreamConsumer::rx_defer`]).
    pub(crate) fn rx_defer(&self) -> bool {
        self.conn.rx_defer()
    }

    /// Write space (see [`StreamConsumer::write_space`]).
    pub(crate) fn write_space(&self) {
        self.conn.write_space();
    }

    /// The socket closed: the CM reports it to the iw_cm, the consumer stops.
    pub(crate) fn closed(&self, abortive: bool) {
        self.owner.stream_closed(abortive);
        self.conn.closed(abortive);
    }
}

/// A connected kernel TCP socket after the MPA exchange.
pub(crate) struct Stream {
    sock: Socket,
    owner: Arc<dyn StreamOwner>,
    /// The installed callbacks, if a consumer is attached. Process context
    /// only (attach, detach); never taken by a socket callback. Boxed, so that
    /// the stream itself is not pinned and a plain `Drop` detaches (a pinned
    /// drop is an unsafe trait impl, which this module does not write).
    watch: Pin<KBox<Mutex<Option<Watch<Attached>>>>>,
}

#[allow(dead_code)] // attach, send and mss are the engine's
impl Stream {
    /// Wraps the connected `sock` of the connection `owner` manages.
    pub(crate) fn new(sock: Socket, owner: Arc<dyn StreamOwner>) -> Result<Arc<Self>> {
        // No timeouts: FPDU sends are non-blocking.
        sock.set_timeout(0);
        let watch = KBox::pin_init(new_mutex!(None, "rsiw_stream_watch"), GFP_KERNEL)?;
        Ok(Arc::new(Self { sock, owner, watch }, GFP_KERNEL)?)
    }

    /// Routes received bytes, write space and closes to `conn`, then hands it
    /// the bytes (and a close) that arrived since the MPA exchange. Process
    /// context; `EBUSY` if a consumer is attached already.
    pub(crate) fn attach(&self, conn: Arc<dyn StreamConsumer>) -> Result {
        let ctx = Arc::new(
            Attached {
                conn,
                owner: self.owner.clone(),
            },
            GFP_KERNEL,
        )?;
        let mut watch = self.watch.lock();
        if watch.is_some() {
            return Err(EBUSY);
        }
        *watch = Some(self.sock.watch_stream(ctx));
        Ok(())
    }

    /// Restores the socket's callbacks; after return no consumer callback
    /// runs. Process context; idempotent.
    pub(crate) fn detach(&self) {
        let w = self.watch.lock().take();
        if let Some(w) = w {
            // Dropped here, outside the lock: this may be the last reference
            // to the consumer.
            let _ctx = self.sock.unwatch(w);
        }
    }

    /// Sends `bufs` (at most [`crate::kapi::sock::MAX_SEND_BUFS`]) without
    /// blocking; `Ok(n)` may be short, `EAGAIN` means wait for
    /// [`StreamConsumer::write_space`]. `more` corks for what follows.
    /// Process context (it takes the socket lock).
    pub(crate) fn send(&self, bufs: &[&[u8]], more: bool) -> Result<usize> {
        self.sock.send(bufs, more, false)
    }

    /// Hands the bytes queued in the socket to the consumer
    /// ([`StreamConsumer::rx_defer`]). Process context (it takes the socket
    /// lock); nothing if no consumer is attached.
    pub(crate) fn rx_now(&self) {
        self.sock.rx_now();
    }

    /// Pushes what sends with `more` left queued in the socket. Process
    /// context (it takes the socket lock).
    pub(crate) fn push(&self) {
        self.sock.push();
    }

    /// A tracker for the pages of one zero-copy message ([`zc::ZcBuf`]);
    /// `None` without memory.
    pub(crate) fn zc_buf(&self) -> Option<zc::ZcBuf> {
        zc::ZcBuf::new(&self.sock)
    }

    /// Sends page pieces `segs` from byte `skip` on by reference, tracked
    /// by `z` (`MSG_ZEROCOPY`), or copied by TCP without a tracker;
    /// otherwise as [`Stream::send`].
    pub(crate) fn send_pages(
        &self,
        z: Option<&zc::ZcBuf>,
        segs: &Segs,
        skip: usize,
        more: bool,
    ) -> Result<usize> {
        zc::send_pages(&self.sock, z, segs, skip, more)
    }

    /// Sends the rest of an FPDU of page pieces in one call
    /// ([`zc::send_fpdu`]).
    pub(crate) fn send_fpdu(&self, rest: &zc::FpduRest<'_>, more: bool) -> Result<usize> {
        zc::send_fpdu(&self.sock, rest, more)
    }

    /// Closes the stream: FIN, or RST if `abortive`; the CM then reports the
    /// close to the iw_cm. Process context (may sleep); the consumer's
    /// `closed` may run from within this call.
    pub(crate) fn shutdown(&self, abortive: bool) {
        // First, so that the close the socket reports from within an
        // abortive shutdown is not taken for the peer's.
        self.owner.local_closed(abortive);
        self.sock.shutdown(abortive);
    }

    /// The connection's current TCP MSS.
    pub(crate) fn mss(&self) -> u32 {
        self.sock.mss()
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // The consumer holds the stream, so normally it is detached already;
        // the socket must not keep calling a consumer after the stream is gone.
        self.detach();
    }
}
