// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Kernel TCP sockets carrying MPA (RFC 5044 §7: connection setup, then the
//! FPDU stream): listen, accept, connect, send, receive, shutdown, and the
//! socket callbacks that report received bytes, write space and closes.

use super::{bindings, iwcm::CmIdRef, netdev::NetDevice};
use core::{marker::PhantomData, ptr::NonNull};
use kernel::{error::to_result, ffi::c_void, prelude::*, sync::Arc};

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
    /// `ECANCELED`.
    pub(crate) fn canceled() -> Error {
        e(bindings::ECANCELED)
    }
    /// `EPROTO`.
    pub(crate) fn proto() -> Error {
        e(bindings::EPROTO)
    }
    /// `ENETUNREACH` or `EHOSTUNREACH`.
    pub(crate) fn is_unreachable(err: Error) -> bool {
        err == e(bindings::ENETUNREACH) || err == e(bindings::EHOSTUNREACH)
    }
}

/// Classes of [`Socket::warn`] lines, each rate-limited on its own.
pub(crate) const WARN_CLASSES: u32 = bindings::RSIW_WARN_CLASSES;

/// The most buffers one [`Socket::send`] takes.
pub(crate) const MAX_SEND_BUFS: usize = bindings::RSIW_SEND_MAX_BUFS as usize;

/// An IP address (IPv4 mapped into IPv6, as in a GID) with a TCP port and,
/// for a link-local IPv6 address, its interface.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct InAddr {
    /// The address: `::ffff:a.b.c.d` for IPv4.
    pub(crate) ip: [u8; 16],
    /// TCP port.
    pub(crate) port: u16,
    /// IPv6 scope (interface index), 0 if none.
    pub(crate) scope: u32,
}

impl InAddr {
    fn raw(&self) -> bindings::rsiw_inaddr {
        bindings::rsiw_inaddr {
            addr: self.ip,
            port: self.port,
            scope_id: self.scope,
        }
    }
}

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

    /// Starts a TCP connection from `id`'s local to its remote address
    /// without waiting (`TCP_NODELAY` set); [`Socket::connected`] tells how
    /// it went, a handshake watch when to ask.
    pub(crate) fn connect_start(id: &CmIdRef<'_>) -> Result<Self> {
        let mut raw = core::ptr::null_mut();
        // SAFETY: `id` is a live cm_id; `raw` is writable.
        let rv = unsafe { bindings::rsiw_shim_sock_connect_start(id.as_ptr(), &mut raw) };
        Self::from_out(rv, raw)
    }

    /// A socket listening on `port` of every address of `netdev` (IPv6 with
    /// IPv4 mapped in where the kernel has IPv6).
    pub(crate) fn listen_dev(netdev: &NetDevice, port: u16) -> Result<Self> {
        let mut raw = core::ptr::null_mut();
        // SAFETY: `netdev` is a live net_device (its type invariant); `raw`
        // is writable.
        let rv = unsafe { bindings::rsiw_shim_sock_listen_dev(netdev.as_ptr(), port, &mut raw) };
        Self::from_out(rv, raw)
    }

    /// Starts a TCP connection from `local` (port 0: any) to `remote`
    /// without waiting, as [`Socket::connect_start`].
    pub(crate) fn connect_addr(local: &InAddr, remote: &InAddr) -> Result<Self> {
        let mut raw = core::ptr::null_mut();
        let (l, r) = (local.raw(), remote.raw());
        // SAFETY: `l`, `r` are readable; `raw` is writable.
        let rv = unsafe { bindings::rsiw_shim_sock_connect_addr(&l, &r, &mut raw) };
        Self::from_out(rv, raw)
    }

    /// The connected peer's address.
    pub(crate) fn peer(&self) -> Result<InAddr> {
        let mut a = bindings::rsiw_inaddr::default();
        // SAFETY: `self` is live; `a` is writable.
        to_result(unsafe { bindings::rsiw_shim_sock_peer(self.ptr.as_ptr(), &mut a) })?;
        Ok(InAddr {
            ip: a.addr,
            port: a.port,
            scope: a.scope_id,
        })
    }

    /// A started connection: `Ok(true)` once connected, `Ok(false)` while in
    /// progress, the socket error (`ECONNREFUSED` on a RST, unreachable …)
    /// if it failed.
    pub(crate) fn connected(&self) -> Result<bool> {
        // SAFETY: `self` is live.
        let rv = unsafe { bindings::rsiw_shim_sock_connected(self.ptr.as_ptr()) };
        if rv < 0 {
            Err(Error::from_errno(rv))
        } else {
            Ok(rv > 0)
        }
    }

    /// Logs `msg` about the peer of this connection, with its address;
    /// rate-limited per `class` (below [`WARN_CLASSES`]; 10 lines per 5 s
    /// each), as a peer can cause them at will.
    pub(crate) fn warn(&self, class: u32, msg: &kernel::str::CStr) {
        let class = class.min(WARN_CLASSES - 1);
        // SAFETY: `self` is live; `msg` is NUL-terminated.
        unsafe { bindings::rsiw_shim_sock_warn(self.ptr.as_ptr(), class, msg.as_char_ptr()) }
    }

    /// Whether received bytes wait to be read.
    pub(crate) fn readable(&self) -> bool {
        // SAFETY: `self` is live.
        unsafe { bindings::rsiw_shim_sock_readable(self.ptr.as_ptr()) }
    }

    /// The next connection waiting on this listening socket, if any; its
    /// callbacks are the kernel's defaults and `TCP_NODELAY` is set.
    pub(crate) fn accept<T>(&self, watch: &Watch<T>) -> Result<Option<Self>> {
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

    /// Receives what is there into `buf`, without waiting (`EAGAIN` when
    /// nothing is); `Ok(0)` is the peer's FIN.
    pub(crate) fn recv_now(&self, buf: &mut [u8]) -> Result<usize> {
        // SAFETY: `self` is live; `buf` is writable for its length.
        let rv = unsafe {
            bindings::rsiw_shim_sock_recv(
                self.ptr.as_ptr(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                false,
            )
        };
        count(rv)
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

    /// Reads what a stream watch's callback left queued
    /// ([`crate::resources::stream::StreamConsumer::rx_defer`]) and hands it to the
    /// watch's consumer, in this (sleepable process) context.
    pub(crate) fn rx_now(&self) {
        // SAFETY: `self` is live; the shim takes the socket lock, and its
        // callback finds no context if the watch is gone.
        unsafe { bindings::rsiw_shim_sock_rx(self.ptr.as_ptr()) }
    }

    /// The raw socket, for the shim's address queries.
    pub(crate) fn as_ptr(&self) -> *mut bindings::socket {
        self.ptr.as_ptr()
    }

    /// Installs `kind`'s callbacks with `ctx`, which the socket keeps until
    /// [`Socket::unwatch`].
    fn watch<T: Send + Sync + 'static>(&self, ctx: Arc<T>, kind: u32) -> Watch<T> {
        let ctx = crate::kapi::compat::into_foreign(ctx);
        let mut saved = bindings::rsiw_sk_saved::default();
        // SAFETY: `self` is live; `ctx` stays valid until `unwatch` takes it
        // back after restoring the callbacks.
        unsafe { bindings::rsiw_shim_sock_watch(self.ptr.as_ptr(), ctx, &mut saved, kind) };
        // INVARIANT: `ctx` comes from `Arc<T>::into_foreign`.
        Watch {
            saved,
            sock: self.ptr,
            ctx,
            _ctx: PhantomData,
        }
    }

    /// Restores the callbacks a `watch_*` replaced; no callback runs after
    /// this returns. Gives back the context.
    pub(crate) fn unwatch<T: Send + Sync + 'static>(&self, w: Watch<T>) -> Result<Arc<T>> {
        if w.sock != self.ptr {
            return Err(EINVAL);
        }
        // SAFETY: `self` is live; `w.saved` holds its previous callbacks.
        unsafe { bindings::rsiw_shim_sock_unwatch(self.ptr.as_ptr(), &w.saved) };
        // SAFETY: `w.ctx` came from `Arc<T>::into_foreign` (type invariant),
        // and after the unwatch no callback borrows it.
        Ok(unsafe { crate::kapi::compat::from_foreign::<T>(w.ctx) })
    }

    /// Routes the listening socket's "connection ready" to
    /// `rsiw_rust_listen_ready` with `ctx`.
    pub(crate) fn watch_listen<T: Send + Sync + 'static>(&self, ctx: Arc<T>) -> Watch<T> {
        self.watch(ctx, bindings::RSIW_WATCH_LISTEN)
    }

    /// Routes received bytes and state changes of a connection in MPA setup
    /// to `rsiw_rust_handshake_event` with `ctx`.
    pub(crate) fn watch_handshake<T: Send + Sync + 'static>(&self, ctx: Arc<T>) -> Watch<T> {
        self.watch(ctx, bindings::RSIW_WATCH_HANDSHAKE)
    }

    /// Routes received bytes, write space and closes of a connected socket to
    /// the `rsiw_rust_stream_*` callbacks (`ctx` is what they see); then hands
    /// over the bytes and close that arrived before.
    pub(crate) fn watch_stream<T: Send + Sync + 'static>(&self, ctx: Arc<T>) -> Watch<T> {
        let w = self.watch(ctx, bindings::RSIW_WATCH_STREAM);
        // SAFETY: `self` is live; process context (callers of watch_stream
        // are the CM's work items and verbs).
        unsafe { bindings::rsiw_shim_sock_drain(self.ptr.as_ptr()) };
        w
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        // SAFETY: owned and live (type invariant); never used again.
        unsafe { bindings::rsiw_shim_sock_release(self.ptr.as_ptr()) }
    }
}

/// A socket's replaced callbacks and the context (an `Arc<T>` in foreign
/// form) its callbacks see; leaked if dropped without [`Socket::unwatch`].
///
/// # Invariants
///
/// `ctx` comes from `Arc<T>::into_foreign`.
pub(crate) struct Watch<T> {
    saved: bindings::rsiw_sk_saved,
    sock: NonNull<bindings::socket>,
    ctx: *const c_void,
    _ctx: PhantomData<Arc<T>>,
}

// SAFETY: plain data: callback pointers and an owned `Arc` of a `Send + Sync` type.
unsafe impl<T: Send + Sync> Send for Watch<T> {}
// SAFETY: `&Watch` only reads the saved callbacks.
unsafe impl<T: Send + Sync> Sync for Watch<T> {}

/// The CM work queue (unbound; drained when the module unloads).
pub(crate) fn cm_queue() -> &'static kernel::workqueue::Queue {
    // SAFETY: created in `rsiw_shim_init` before any device (and so any CM
    // call) exists, destroyed only after every device is gone.
    // The shim's `workqueue_struct` is the kernel crate's opaque one.
    unsafe { kernel::workqueue::Queue::from_raw(bindings::rsiw_shim_cm_wq().cast_const().cast()) }
}
