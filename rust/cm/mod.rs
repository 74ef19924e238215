// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The iWARP connection manager: the iw_cm verbs (listen, connect, accept,
//! reject) over kernel TCP sockets with the MPA exchange of RFC 5044 §7.1 and
//! RFC 6581.

#![forbid(unsafe_code)]

mod endpoint;
mod mpa_io;
mod qp_link;
pub(crate) mod qpconn;

pub(crate) use endpoint::Endpoint;

use crate::{
    kapi::{
        iwcm::{CmId, CmIdRef, ConnParam, EventData},
        sock::{cm_queue, errno, Socket, Watch},
    },
    objects::device::Device,
    resources::counters::PortCounters,
};
use kernel::{
    impl_has_work, new_mutex, new_work,
    prelude::*,
    sync::{Arc, Mutex},
    workqueue::{Work, WorkItem},
};

/// Source ports below this are privileged (only `CAP_NET_BIND_SERVICE` may
/// bind them): rsiw connects QPs from one, and its QP-connection listener
/// refuses any other.
pub(crate) const PRIVILEGED_PORTS: u16 = 1024;

/// QP connections one peer (an IPv4 address, an IPv6 /64) may have in setup or
/// parked on a device's QP-connection listener at once: a flood from one peer
/// leaves the rest of `mpa_max_pending` to the others.
pub(crate) const QP_PEER_PENDING: usize = 64;

/// A connection in MPA setup and the peer it counts against.
struct Pending {
    ep: Arc<Endpoint>,
    peer: [u8; 16],
}

/// Whom a connection counts against: its address; an IPv6 address's /64 (a
/// host may have that many addresses).
fn peer_key(ip: &[u8; 16]) -> [u8; 16] {
    let v4mapped = ip[..10].iter().all(|&b| b == 0) && ip[10] == 0xff && ip[11] == 0xff;
    let mut k = *ip;
    if !v4mapped {
        k[8..].fill(0);
    }
    k
}

/// What [`Listener::admit`] made of a connection.
pub(crate) enum Admit {
    /// Registered.
    In(Arc<Endpoint>),
    /// `mpa_max_pending` connections are in setup.
    Full,
    /// Its peer has its share in setup.
    PeerFull,
}

/// The fields [`Listener::inner`] protects; all `None` (and `pending`
/// empty) once stopped.
struct ListenInner {
    sock: Option<Socket>,
    watch: Option<Watch<Listener>>,
    cm_id: Option<CmId>,
    /// A device's QP-connection listener (`qpconn`): the device whose armed
    /// QPs its connections are matched to (instead of a cm_id's requests).
    dev: Option<Arc<Device>>,
    /// Connections in MPA setup: their Request being read, or reported and
    /// awaiting `iw_accept`/`iw_reject`; a free slot is `None`.
    pending: KVec<Option<Pending>>,
    /// The `Some` slots of `pending`: at most `mpa_max_pending`.
    n_pending: usize,
}

/// A listening cm_id: its TCP listener and the work item that accepts.
#[pin_data]
pub(crate) struct Listener {
    #[pin]
    work: Work<Listener>,
    /// Process context only (the accept work, connection requests, stop).
    #[pin]
    inner: Mutex<ListenInner>,
    /// The port's counters.
    ctr: Arc<PortCounters>,
}

impl_has_work! {
    impl HasWork<Self> for Listener { self.work }
}

impl WorkItem for Listener {
    type Pointer = Arc<Listener>;

    fn run(this: Arc<Listener>) {
        loop {
            let next = {
                let inner = this.inner.lock();
                match (&inner.sock, &inner.watch) {
                    (Some(sock), Some(watch)) => sock.accept(watch),
                    _ => return,
                }
            };
            match next {
                Ok(Some(sock)) => {
                    // On failure the connection is closed (reset or dropped).
                    let _ = Endpoint::start_responder(sock, this.clone());
                }
                Ok(None) => return,
                Err(e) => {
                    pr_warn!("accept failed: {:?}\n", e);
                    return;
                }
            }
        }
    }
}

impl Listener {
    /// Takes `sock` (listening) and starts accepting from it.
    fn listen(self: &Arc<Self>, sock: Socket) {
        let watch = sock.watch_listen(self.clone());
        {
            let mut inner = self.inner.lock();
            inner.sock = Some(sock);
            inner.watch = Some(watch);
        }
        // Connections that completed before the watch was installed.
        self.clone().ready();
    }

    /// The port's counters.
    pub(crate) fn counters(&self) -> &Arc<PortCounters> {
        &self.ctr
    }

    /// A connection is waiting (softirq): accept it in process context.
    pub(crate) fn ready(self: Arc<Self>) {
        let _ = cm_queue().enqueue(self);
    }

    /// Registers a new connection from `from` in MPA setup made by `make`,
    /// unless the listener stopped (`ECONNREFUSED`), `max` connections are
    /// in setup already, or `peer_max` of them from `from`'s peer.
    pub(crate) fn admit(
        &self,
        max: u32,
        from: &[u8; 16],
        peer_max: usize,
        make: impl FnOnce() -> Result<Arc<Endpoint>>,
    ) -> Result<Admit> {
        let mut inner = self.inner.lock();
        if inner.cm_id.is_none() && inner.dev.is_none() {
            return Err(errno::connrefused());
        }
        if inner.n_pending >= max as usize {
            return Ok(Admit::Full);
        }
        let peer = peer_key(from);
        if peer_max < usize::MAX {
            let mine = inner
                .pending
                .iter()
                .flatten()
                .filter(|p| p.peer == peer)
                .count();
            if mine >= peer_max {
                return Ok(Admit::PeerFull);
            }
        }
        let ep = make()?;
        let entry = Pending {
            ep: ep.clone(),
            peer,
        };
        match inner.pending.iter_mut().find(|slot| slot.is_none()) {
            Some(slot) => *slot = Some(entry),
            None => inner.pending.push(Some(entry), GFP_KERNEL)?,
        }
        inner.n_pending += 1;
        Ok(Admit::In(ep))
    }

    /// A connection left MPA setup (refused, accepted, rejected, timed out).
    pub(crate) fn forget(&self, ep: &Endpoint) {
        let gone = {
            let mut inner = self.inner.lock();
            let slot = inner
                .pending
                .iter_mut()
                .find(|p| p.as_ref().is_some_and(|p| core::ptr::eq(&*p.ep, ep)));
            let gone = slot.and_then(Option::take);
            if gone.is_some() {
                inner.n_pending -= 1;
            }
            gone
        };
        // The reference drops outside the lock.
        drop(gone);
    }

    /// Reports a connection request unless the listener stopped.
    fn connect_request(&self, ep: Arc<Endpoint>, sock: &Socket, data: &EventData<'_>) -> Result {
        let inner = self.inner.lock();
        match &inner.cm_id {
            Some(id) => id.connect_request(ep, sock, data),
            None => Err(errno::connrefused()),
        }
    }

    /// Stops accepting: restores the socket's callbacks, closes it (and the
    /// connections not yet accepted), drops the cm_id reference and has every
    /// connection whose Request is still being read reset by its work item.
    /// Waits for none of them; reported requests stay for their cm_ids.
    fn stop(&self) {
        let (sock, watch, id, dev, pending) = {
            let mut inner = self.inner.lock();
            let dev = inner.dev.take();
            (
                inner.sock.take(),
                inner.watch.take(),
                inner.cm_id.take(),
                dev,
                {
                    inner.n_pending = 0;
                    core::mem::take(&mut inner.pending)
                },
            )
        };
        drop(dev);
        if let (Some(sock), Some(watch)) = (&sock, watch) {
            let _ = sock.unwatch(watch);
        }
        drop(sock);
        drop(id);
        for p in pending.iter().flatten() {
            p.ep.abort();
        }
    }
}

/// `iw_create_listen`: a TCP listener on the cm_id's (mapped) local address.
pub(crate) fn create_listen(dev: &Device, id: &CmIdRef<'_>, backlog: i32) -> Result {
    let sock = Socket::listen(id, backlog)?;
    let l = Arc::pin_init(
        pin_init!(Listener {
            work <- new_work!("rsiw_cm_listener"),
            inner <- new_mutex!(
                ListenInner {
                    sock: None,
                    watch: None,
                    cm_id: Some(id.get()),
                    dev: None,
                    pending: KVec::new(),
                    n_pending: 0,
                },
                "rsiw_cm_listener"
            ),
            ctr: dev.counters().clone(),
        }),
        GFP_KERNEL,
    )?;
    l.listen(sock);
    id.set_listener(l);
    Ok(())
}

/// `iw_destroy_listen`.
pub(crate) fn destroy_listen(l: Option<Arc<Listener>>) -> Result {
    if let Some(l) = l {
        l.stop();
    }
    Ok(())
}

/// `iw_connect`.
pub(crate) fn connect(dev: &Device, id: &CmIdRef<'_>, param: &ConnParam<'_>) -> Result {
    Endpoint::start_connect(dev, id, param)
}

/// `iw_accept` on the cm_id the iw_cm created for our connection request.
pub(crate) fn accept(
    dev: &Device,
    id: &CmIdRef<'_>,
    ep: Option<Arc<Endpoint>>,
    param: &ConnParam<'_>,
) -> Result {
    ep.ok_or(EINVAL)?.accept(dev, id, param)
}

/// `iw_reject`.
pub(crate) fn reject(ep: Option<Arc<Endpoint>>, private_data: &[u8]) -> Result {
    ep.ok_or(EINVAL)?.reject(private_data)
}
