// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Kernel TCP sockets carrying MPA (RFC 5044 §7: connection setup, then the
//! FPDU stream): listen, accept, connect, send, receive, shutdown, and the
//! socket callbacks that report received bytes, write space and closes.

use super::{bindings, iwcm::CmIdRef};
use crate::{cm::Listener, stream::Attached};
use core::ptr::NonNull;
use kernel::{error::to_result, ffi::c_void, prelude::*, sync::Arc, types::ForeignOwnable};

/// Socket errnos the kernel crate has no constant for.
pub(crate) mod errno {
    use super::bindings;
    use kernel::error::Error;

    fn e(n: u32) -> Error {
        Error::from_errno(-i32::try_from(n).unwrap_or(i32::MAX))
    }

    /// `ECONNRESET`.
    pub(crate) fn connreset() -> Error {
        e(bindings::ECONNRESET)
    }
    /// `ECONNREFUSED`.
    pub(crate) fn connrefused() -> Error {
        e(bindings::ECONNREFUSED)
    }
    /// `ETIMEDOUT`.
    pub(crate) fn timedout() -> Error {
        e(bindings::ETIMEDOUT)
    }
    /// `ENETUNREACH` or `EHOSTUNREACH`.
    pub(crate) fn is_unreachable(err: Error) -> bool {
        err == e(bindings::ENETUNREACH) || err == e(bindings::EHOSTUNREACH)
    }
}

/// The most buffers one [`Socket::send`] takes.
pub(crate) const MAX_SEND_BUFS: usize = bindings::RSIW_SEND_MAX_BUFS as usize;

/// An owned kernel TCP socket, released on drop.
///
/// # Invariants
///
/// `ptr` is a live `struct socket` created by the shim and owned by this
/// value; only [`Drop`] releases it.
pub(crate) struct Socket {
    ptr: NonNull<bindings::socket>,
}

// SAFETY: kernel socket calls serialise themselves (`lock_sock`); the pointer
// is only released by `Drop`, which needs ownership.
unsafe impl Send for Socket {}
// SAFETY: as for `Send`; `&Socket` methods are the kernel's thread-safe calls.
unsafe impl Sync for Socket {}

/// Maps a shim return that is a byte count or a negative errno.
fn count(rv: i32) -> Result<usize> {
    if rv < 0 {
        Err(Error::from_errno(rv))
    } else {
        usize::try_from(rv).map_err(|_| EINVAL)
    }
}

impl Socket {
    /// Wraps a socket the shim created.
    fn from_out(rv: i32, raw: *mut bindings::socket) -> Result<Self> {
        to_result(rv)?;
        // INVARIANT: on success the shim handed over a live socket.
        NonNull::new(raw).map(|ptr| Self { ptr }).ok_or(EINVAL)
    }

    /// A socket bound to `id`'s local address (a wildcard address serves only
    /// the device's netdev) and listening.
    pub(crate) fn listen(id: &CmIdRef<'_>, backlog: i32) -> Result<Self> {
        let mut raw = core::ptr::null_mut();
        // SAFETY: `id` is a live cm_id; `raw` is writable.
        let rv = unsafe { bindings::rsiw_shim_sock_listen(id.as_ptr(), backlog, &mut raw) };
        Self::from_out(rv, raw)
    }

    /// A TCP connection from `id`'s local to its remote address; blocks for
    /// at most `timeout_ms` (`ETIMEDOUT`), `ECONNREFUSED` on a RST.
    pub(crate) fn connect(id: &CmIdRef<'_>, timeout_ms: u32) -> Result<Self> {
        let mut raw = core::ptr::null_mut();
        // SAFETY: `id` is a live cm_id; `raw` is writable.
        let rv = unsafe { bindings::rsiw_shim_sock_connect(id.as_ptr(), timeout_ms, &mut raw) };
        Self::from_out(rv, raw)
    }

    /// The next connection waiting on this listening socket, if any; its
    /// callbacks are the kernel's defaults and `TCP_NODELAY` is set.
    pub(crate) fn accept(&self, watch: &ListenWatch) -> Result<Option<Self>> {
        let mut raw = core::ptr::null_mut();
        // SAFETY: `self` is live; `watch.saved` holds the default callbacks
        // this listener had; `raw` is writable.
        let rv =
            unsafe { bindings::rsiw_shim_sock_accept(self.ptr.as_ptr(), &watch.saved, &mut raw) };
        match Self::from_out(rv, raw) {
            Ok(s) => Ok(Some(s)),
            Err(e) if e == EAGAIN => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Send and receive timeouts of the blocking calls (0: none).
    pub(crate) fn set_timeout(&self, ms: u32) {
        // SAFETY: `self` is live.
        unsafe { bindings::rsiw_shim_sock_set_timeout(self.ptr.as_ptr(), ms) }
    }

    /// Sends `bufs` in order; `Ok(n)` may be short. Non-blocking unless
    /// `block` (then bounded by the send timeout); `EAGAIN` when no space.
    /// `more` holds the segment back for what follows (`MSG_MORE`).
    pub(crate) fn send(&self, bufs: &[&[u8]], more: bool, block: bool) -> Result<usize> {
        if bufs.len() > MAX_SEND_BUFS {
            return Err(EINVAL);
        }
        let mut raw = [bindings::rsiw_buf::default(); MAX_SEND_BUFS];
        for (r, b) in raw.iter_mut().zip(bufs) {
            r.ptr = b.as_ptr().cast();
            r.len = b.len();
        }
        // SAFETY: `self` is live; the first `bufs.len()` entries point to
        // readable slices that outlive the call.
        let rv = unsafe {
            bindings::rsiw_shim_sock_send(self.ptr.as_ptr(), raw.as_ptr(), bufs.len(), more, block)
        };
        count(rv)
    }

    /// Transmits what sends with `more` (`MSG_MORE`) left queued.
    pub(crate) fn push(&self) {
        // SAFETY: `self` is live.
        unsafe { bindings::rsiw_shim_sock_push(self.ptr.as_ptr()) }
    }

    /// Sends all of `bufs`, blocking up to the send timeout per call.
    pub(crate) fn send_all(&self, bufs: &[&[u8]]) -> Result {
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        let mut done = 0;
        while done < total {
            let mut skip = done;
            let mut rest: [&[u8]; MAX_SEND_BUFS] = [&[]; MAX_SEND_BUFS];
            let mut n = 0;
            for b in bufs {
                if skip >= b.len() {
                    skip -= b.len();
                    continue;
                }
                if let (Some(slot), Some(tail)) = (rest.get_mut(n), b.get(skip..)) {
                    *slot = tail;
                    n += 1;
                }
                skip = 0;
            }
            match self.send(rest.get(..n).unwrap_or(&[]), false, true)? {
                0 => return Err(errno::connreset()),
                sent => done += sent,
            }
        }
        Ok(())
    }

    /// Receives into `buf`, blocking up to the receive timeout (`EAGAIN`);
    /// `Ok(0)` is the peer's FIN.
    pub(crate) fn recv(&self, buf: &mut [u8]) -> Result<usize> {
        // SAFETY: `self` is live; `buf` is writable for its length.
        let rv = unsafe {
            bindings::rsiw_shim_sock_recv(self.ptr.as_ptr(), buf.as_mut_ptr().cast(), buf.len())
        };
        count(rv)
    }

    /// Fills `buf` completely; the peer's FIN before that is `ECONNRESET`.
    pub(crate) fn recv_exact(&self, buf: &mut [u8]) -> Result {
        let mut done = 0;
        while let Some(rest) = buf.get_mut(done..) {
            if rest.is_empty() {
                break;
            }
            match self.recv(rest)? {
                0 => return Err(errno::connreset()),
                n => done += n,
            }
        }
        Ok(())
    }

    /// Orderly shutdown (FIN), or abortive (RST, queued data dropped). May
    /// sleep; process context only.
    pub(crate) fn shutdown(&self, abortive: bool) {
        // SAFETY: `self` is live.
        unsafe { bindings::rsiw_shim_sock_shutdown(self.ptr.as_ptr(), abortive) }
    }

    /// The current TCP MSS (the socket's `mss_cache`).
    pub(crate) fn mss(&self) -> u32 {
        // SAFETY: `self` is live.
        unsafe { bindings::rsiw_shim_sock_mss(self.ptr.as_ptr()) }
    }

    /// The raw socket, for the shim's address queries.
    pub(crate) fn as_ptr(&self) -> *mut bindings::socket {
        self.ptr.as_ptr()
    }

    /// Routes the listening socket's "connection ready" to
    /// `rsiw_rust_listen_ready` with `ctx`, which the socket keeps until
    /// [`Socket::unwatch_listen`].
    pub(crate) fn watch_listen(&self, ctx: Arc<Listener>) -> ListenWatch {
        let ctx = ctx.into_foreign();
        let mut saved = bindings::rsiw_sk_saved::default();
        // SAFETY: `self` is live; `ctx` stays valid until `unwatch_listen`
        // takes it back after restoring the callbacks.
        unsafe { bindings::rsiw_shim_sock_watch_listen(self.ptr.as_ptr(), ctx, &mut saved) };
        ListenWatch {
            saved,
            sock: self.ptr,
            ctx,
        }
    }

    /// Restores the callbacks [`Socket::watch_listen`] replaced; no callback
    /// runs after this returns. Gives back the context.
    pub(crate) fn unwatch_listen(&self, w: ListenWatch) -> Result<Arc<Listener>> {
        if w.sock != self.ptr {
            return Err(EINVAL);
        }
        // SAFETY: `self` is live; `w.saved` holds its previous callbacks.
        unsafe { bindings::rsiw_shim_sock_unwatch(self.ptr.as_ptr(), &w.saved) };
        // SAFETY: `w.ctx` came from `Arc<Listener>::into_foreign` in
        // `watch_listen`, and after the unwatch no callback borrows it.
        Ok(unsafe { Arc::<Listener>::from_foreign(w.ctx) })
    }

    /// Routes received bytes, write space and closes of a connected socket to
    /// the `rsiw_rust_stream_*` callbacks (`ctx` is what they see), which the socket keeps
    /// until [`Socket::unwatch_stream`]; then hands over the bytes and close
    /// that arrived before.
    #[allow(dead_code)] // through Stream::attach, the engine's
    pub(crate) fn watch_stream(&self, ctx: Arc<Attached>) -> StreamWatch {
        let ctx = ctx.into_foreign();
        let mut saved = bindings::rsiw_sk_saved::default();
        // SAFETY: `self` is live; `ctx` stays valid until `unwatch_stream`.
        unsafe { bindings::rsiw_shim_sock_watch_stream(self.ptr.as_ptr(), ctx, &mut saved) };
        // SAFETY: `self` is live; process context (callers of watch_stream
        // are the CM's work items and verbs).
        unsafe { bindings::rsiw_shim_sock_drain(self.ptr.as_ptr()) };
        StreamWatch {
            saved,
            sock: self.ptr,
            ctx,
        }
    }

    /// Restores the callbacks [`Socket::watch_stream`] replaced; no callback
    /// runs after this returns. Gives back the context.
    pub(crate) fn unwatch_stream(&self, w: StreamWatch) -> Result<Arc<Attached>> {
        if w.sock != self.ptr {
            return Err(EINVAL);
        }
        // SAFETY: `self` is live; `w.saved` holds its previous callbacks.
        unsafe { bindings::rsiw_shim_sock_unwatch(self.ptr.as_ptr(), &w.saved) };
        // SAFETY: `w.ctx` came from `Arc<Attached>::into_foreign` in
        // `watch_stream`, and no callback borrows it any more.
        Ok(unsafe { Arc::<Attached>::from_foreign(w.ctx) })
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        // SAFETY: owned and live (type invariant); never used again.
        unsafe { bindings::rsiw_shim_sock_release(self.ptr.as_ptr()) }
    }
}

/// A listening socket's replaced callbacks and its context (an `Arc` in
/// foreign form, leaked if the watch is dropped without `unwatch_listen`).
pub(crate) struct ListenWatch {
    saved: bindings::rsiw_sk_saved,
    sock: NonNull<bindings::socket>,
    ctx: *const c_void,
}

// SAFETY: plain data: callback pointers and an owned `Arc` of a `Send + Sync` type.
unsafe impl Send for ListenWatch {}
// SAFETY: `&ListenWatch` only reads the saved callbacks.
unsafe impl Sync for ListenWatch {}

/// A connected socket's replaced callbacks and its context (as
/// [`ListenWatch`]).
pub(crate) struct StreamWatch {
    saved: bindings::rsiw_sk_saved,
    sock: NonNull<bindings::socket>,
    ctx: *const c_void,
}

// SAFETY: as for `ListenWatch`.
unsafe impl Send for StreamWatch {}
// SAFETY: `&StreamWatch` exposes nothing.
unsafe impl Sync for StreamWatch {}

/// The CM work queue (unbound; drained when the module unloads).
pub(crate) fn cm_queue() -> &'static kernel::workqueue::Queue {
    // SAFETY: created in `rsiw_shim_init` before any device (and so any CM
    // call) exists, destroyed only after every device is gone.
    // The shim's `workqueue_struct` is the kernel crate's opaque one.
    unsafe { kernel::workqueue::Queue::from_raw(bindings::rsiw_shim_cm_wq().cast_const().cast()) }
}
