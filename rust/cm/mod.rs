// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The iWARP connection manager: the iw_cm verbs (listen, connect, accept,
//! reject) over kernel TCP sockets with the MPA exchange of RFC 5044 §7.1 and
//! RFC 6581.

mod endpoint;
mod mpa_io;
mod qp_link;
pub(crate) mod qpconn;

pub(crate) use endpoint::Endpoint;

use crate::{
    counters::PortCounters,
    device::Device,
    ffi::{
        iwcm::{CmId, CmIdRef, ConnParam, EventData},
        sock::{cm_queue, errno, Socket, Watch},
    },
};
use kernel::{
    impl_has_work, new_mutex, new_work,
    prelude::*,
    sync::{Arc, Mutex},
    workqueue::{Work, WorkItem},
};

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
    pending: KVec<Option<Arc<Endpoint>>>,
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

    /// Registers a new connection in MPA setup made by `make`, unless the
    /// listener stopped (`ECONNREFUSED`) or `max` connections are in setup
    /// already (`Ok(None)`).
    pub(crate) fn admit(
        &self,
        max: u32,
        make: impl FnOnce() -> Result<Arc<Endpoint>>,
    ) -> Result<Option<Arc<Endpoint>>> {
        let mut inner = self.inner.lock();
        if inner.cm_id.is_none() && inner.dev.is_none() {
            return Err(errno::connrefused());
        }
        if inner.n_pending >= max as usize {
            return Ok(None);
        }
        let ep = make()?;
        match inner.pending.iter_mut().find(|slot| slot.is_none()) {
            Some(slot) => *slot = Some(ep.clone()),
            None => inner.pending.push(Some(ep.clone()), GFP_KERNEL)?,
        }
        inner.n_pending += 1;
        Ok(Some(ep))
    }

    /// A connection left MPA setup (refused, accepted, rejected, timed out).
    pub(crate) fn forget(&self, ep: &Endpoint) {
        let gone = {
            let mut inner = self.inner.lock();
            let slot = inner
                .pending
                .iter_mut()
                .find(|p| p.as_ref().is_some_and(|p| core::ptr::eq(&**p, ep)));
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
        for ep in pending.iter().flatten() {
            ep.abort();
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
