// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The rdma_cm side: event channel, events, CM IDs.

use super::*;
use std::ffi::CStr;
use std::io::{Error, ErrorKind, Result};
use std::net::SocketAddrV4;
use std::rc::Rc;

pub struct Channel(*mut rdma_event_channel);

/// One rdma_cm event, copied out and already acknowledged.
pub struct CmEvent {
    /// `RDMA_CM_EVENT_*`.
    pub kind: rdma_cm_event_type,
    /// The event's status (a negative errno or a reject reason).
    pub status: i32,
    /// Connection private data (REQUEST: the initiator's; ESTABLISHED: the acceptor's).
    pub private: Vec<u8>,
    /// For CONNECT_REQUEST: the new connection's ID, owned by whoever adopts it.
    id: *mut rdma_cm_id,
}

impl CmEvent {
    /// Which ID the event is for (compare with [`CmId::key`]); for a
    /// CONNECT_REQUEST, the new connection's ID.
    pub fn id_key(&self) -> usize {
        self.id as usize
    }

    /// The event's name, for messages.
    pub fn name(&self) -> String {
        // SAFETY: rdma_event_str returns a static string for any value.
        let s = unsafe { CStr::from_ptr(rdma_event_str(self.kind)) };
        s.to_string_lossy().into_owned()
    }
}

impl Channel {
    /// Creates an event channel. Its fd is non-blocking: a readable fd does not
    /// promise an event, because librdmacm's `rdma_get_cm_event` drops a
    /// CONNECT_REQUEST whose set-up fails (its queries of the new ID, e.g. ENOMEM)
    /// and reads the next event, which on a blocking fd waits for one.
    pub fn new() -> Result<Self> {
        // SAFETY: no arguments; the result is checked for NULL.
        let c = unsafe { rdma_create_event_channel() };
        let c = Channel(nonnull(c, "rdma_create_event_channel")?);
        // SAFETY: the channel is live; its fd is a valid descriptor.
        let fd = unsafe { (*c.0).fd };
        // SAFETY: fcntl on a valid fd with integer arguments.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        // SAFETY: as above.
        if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
            return Err(Error::new(
                Error::last_os_error().kind(),
                format!(
                    "fcntl O_NONBLOCK on the event channel: {}",
                    Error::last_os_error()
                ),
            ));
        }
        Ok(c)
    }

    /// The next event, or `None` after `timeout_ms` (negative: wait forever).
    pub fn event(&self, timeout_ms: i32) -> Result<Option<CmEvent>> {
        // SAFETY: self.0 is a live channel.
        let fd = unsafe { (*self.0).fd };
        let end = (timeout_ms >= 0).then(|| {
            std::time::Instant::now() + std::time::Duration::from_millis(timeout_ms as u64)
        });
        let mut ev: *mut rdma_cm_event = std::ptr::null_mut();
        loop {
            let left = match end {
                None => -1,
                Some(end) => end
                    .saturating_duration_since(std::time::Instant::now())
                    .as_millis()
                    .min(i32::MAX as u128) as i32,
            };
            if !poll_in(fd, left)? {
                return Ok(None);
            }
            // SAFETY: the channel is live and its fd non-blocking; `ev` receives a
            // pointer we release with rdma_ack_cm_event below.
            match check(
                unsafe { rdma_get_cm_event(self.0, &mut ev) },
                "rdma_get_cm_event",
            ) {
                Ok(()) => break,
                // The event the poll saw was dropped (see `new`): wait for the next.
                Err(e) if e.kind() == ErrorKind::WouldBlock => continue,
                Err(e) => return Err(e),
            }
        }
        // SAFETY: `ev` points to a valid event until acked; the private data pointer is
        // valid for private_data_len bytes (or NULL) until then as well.
        let out = unsafe {
            let e = &*ev;
            let conn = e.param.conn;
            let private = if conn.private_data.is_null() {
                Vec::new()
            } else {
                std::slice::from_raw_parts(
                    conn.private_data as *const u8,
                    conn.private_data_len.into(),
                )
                .to_vec()
            };
            CmEvent {
                kind: e.event,
                status: e.status,
                private,
                id: e.id,
            }
        };
        // SAFETY: `ev` came from rdma_get_cm_event and is acked exactly once.
        check(unsafe { rdma_ack_cm_event(ev) }, "rdma_ack_cm_event")?;
        Ok(Some(out))
    }
}

impl Drop for Channel {
    fn drop(&mut self) {
        // SAFETY: every CmId on the channel holds an Rc on it, so no ID is left.
        unsafe { rdma_destroy_event_channel(self.0) };
    }
}

struct IdInner {
    id: *mut rdma_cm_id,
    _chan: Rc<Channel>,
}

impl Drop for IdInner {
    fn drop(&mut self) {
        // SAFETY: the ID is live and every child (QP, PD, CQ) holds an Rc on this, so none is left.
        unsafe { rdma_destroy_id(self.id) };
    }
}

/// An rdma_cm ID (listening or connected); clones share it.
#[derive(Clone)]
pub struct CmId(Rc<IdInner>);

impl CmId {
    /// Creates an RC (RDMA_PS_TCP) ID on `chan`.
    pub fn new(chan: &Rc<Channel>) -> Result<Self> {
        let mut id = std::ptr::null_mut();
        // SAFETY: the channel is live; `id` receives the new ID.
        check(
            unsafe {
                rdma_create_id(
                    chan.0,
                    &mut id,
                    std::ptr::null_mut(),
                    rdma_port_space_RDMA_PS_TCP,
                )
            },
            "rdma_create_id",
        )?;
        Ok(CmId(Rc::new(IdInner {
            id,
            _chan: chan.clone(),
        })))
    }

    /// Takes ownership of the ID a CONNECT_REQUEST event carried.
    pub fn adopt(chan: &Rc<Channel>, ev: &CmEvent) -> Result<Self> {
        let id = nonnull(ev.id, "CONNECT_REQUEST without an ID")?;
        Ok(CmId(Rc::new(IdInner {
            id,
            _chan: chan.clone(),
        })))
    }

    pub(super) fn raw(&self) -> *mut rdma_cm_id {
        self.0.id
    }

    /// A value naming this ID in its events ([`CmEvent::id_key`]).
    pub fn key(&self) -> usize {
        self.0.id as usize
    }

    pub(super) fn ctx(&self) -> Result<*mut ibv_context> {
        // SAFETY: the ID is live; `verbs` is set once it is bound to a device.
        nonnull(unsafe { (*self.raw()).verbs }, "cm_id has no device yet")
    }

    /// Waits up to `timeout_ms` for the device context's next asynchronous event and
    /// acknowledges it: `(event type, QP number for QP events)`, `None` on timeout.
    pub fn async_event(&self, timeout_ms: i32) -> Result<Option<(u32, u32)>> {
        let ctx = self.ctx()?;
        // SAFETY: `ctx` is the live context of this ID.
        let fd = unsafe { (*ctx).async_fd };
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd for the duration of the call.
        let n = unsafe { libc::poll(&mut p, 1, timeout_ms) };
        if n <= 0 {
            return Ok(None);
        }
        let mut ev = std::mem::MaybeUninit::<ibv_async_event>::zeroed();
        // SAFETY: `ev` is writable; the fd is readable, so this does not block.
        check(
            unsafe { ibv_get_async_event(ctx, ev.as_mut_ptr()) },
            "ibv_get_async_event",
        )?;
        // SAFETY: filled by the successful call above.
        let mut ev = unsafe { ev.assume_init() };
        let t = ev.event_type;
        let qpn = match t {
            ibv_event_type_IBV_EVENT_QP_FATAL
            | ibv_event_type_IBV_EVENT_QP_REQ_ERR
            | ibv_event_type_IBV_EVENT_QP_ACCESS_ERR
            | ibv_event_type_IBV_EVENT_COMM_EST
            | ibv_event_type_IBV_EVENT_SQ_DRAINED
            | ibv_event_type_IBV_EVENT_QP_LAST_WQE_REACHED => {
                // SAFETY: QP events carry the QP in the union.
                let qp = unsafe { ev.element.qp };
                if qp.is_null() {
                    0
                } else {
                    // SAFETY: the QP of an event is live until the event is acknowledged.
                    unsafe { (*qp).qp_num }
                }
            }
            _ => 0,
        };
        // SAFETY: acknowledging the event just obtained, once.
        unsafe { ibv_ack_async_event(&mut ev) };
        Ok(Some((t, qpn)))
    }

    /// The name of the device the ID is bound to.
    pub fn device_name(&self) -> Result<String> {
        let ctx = self.ctx()?;
        // SAFETY: a live context has a valid device with a NUL-terminated name.
        let s = unsafe { CStr::from_ptr(ibv_get_device_name((*ctx).device)) };
        Ok(s.to_string_lossy().into_owned())
    }

    fn attr(&self) -> Result<ibv_device_attr> {
        let ctx = self.ctx()?;
        let mut attr = ibv_device_attr::default();
        // SAFETY: live context, `attr` is a valid out-parameter.
        check(
            unsafe { ibv_query_device(ctx, &mut attr) },
            "ibv_query_device",
        )?;
        Ok(attr)
    }

    /// The device's `(max_mw, max_sge_rd)` attributes.
    pub fn limits(&self) -> Result<(i32, i32)> {
        let attr = self.attr()?;
        Ok((attr.max_mw, attr.max_sge_rd))
    }

    /// The device's `atomic_cap` (`IBV_ATOMIC_*`).
    pub fn atomic_cap(&self) -> Result<u32> {
        Ok(self.attr()?.atomic_cap)
    }

    /// Binds to `addr` and listens (backlog 8).
    pub fn listen(&self, addr: SocketAddrV4) -> Result<()> {
        self.listen_backlog(addr, 8)
    }

    /// Binds to `addr` and listens with room for `backlog` connection requests
    /// not yet taken (iw_cm refuses requests beyond it).
    pub fn listen_backlog(&self, addr: SocketAddrV4, backlog: i32) -> Result<()> {
        let mut sa = sockaddr_in(addr);
        // SAFETY: `sa` is a valid sockaddr_in for the call (the library copies it).
        check(
            unsafe { rdma_bind_addr(self.raw(), std::ptr::addr_of_mut!(sa).cast()) },
            "rdma_bind_addr",
        )?;
        // SAFETY: bound ID.
        check(unsafe { rdma_listen(self.raw(), backlog) }, "rdma_listen")
    }

    /// Starts address resolution (ADDR_RESOLVED or ADDR_ERROR follows).
    pub fn resolve_addr(&self, dst: SocketAddrV4) -> Result<()> {
        let mut sa = sockaddr_in(dst);
        // SAFETY: `sa` is valid for the call; a NULL source lets rdma_cm choose.
        check(
            unsafe {
                rdma_resolve_addr(
                    self.raw(),
                    std::ptr::null_mut(),
                    std::ptr::addr_of_mut!(sa).cast(),
                    2000,
                )
            },
            "rdma_resolve_addr",
        )
    }

    /// Starts route resolution (ROUTE_RESOLVED or ROUTE_ERROR follows).
    pub fn resolve_route(&self) -> Result<()> {
        // SAFETY: live ID with a resolved address.
        check(
            unsafe { rdma_resolve_route(self.raw(), 2000) },
            "rdma_resolve_route",
        )
    }

    fn param(private: &[u8]) -> Result<rdma_conn_param> {
        let len = u8::try_from(private.len())
            .map_err(|_| Error::new(ErrorKind::InvalidInput, "private data > 255 B"))?;
        Ok(rdma_conn_param {
            private_data: private.as_ptr().cast(),
            private_data_len: len,
            responder_resources: 4,
            initiator_depth: 4,
            retry_count: 7,
            rnr_retry_count: 7,
            ..Default::default()
        })
    }

    /// Connects (the QP must exist); ESTABLISHED or REJECTED follows.
    pub fn connect(&self, private: &[u8]) -> Result<()> {
        let mut p = Self::param(private)?;
        // SAFETY: `p` and the private data it points to outlive the call (copied by the library).
        check(unsafe { rdma_connect(self.raw(), &mut p) }, "rdma_connect")
    }

    /// Accepts a connection request (the QP must exist).
    pub fn accept(&self, private: &[u8]) -> Result<()> {
        let mut p = Self::param(private)?;
        // SAFETY: as in `connect`.
        check(unsafe { rdma_accept(self.raw(), &mut p) }, "rdma_accept")
    }

    /// Accepts a connection request on this ID (which has no QP) naming QP
    /// `qpn` by number, as `rdma_accept` lets a process do.
    pub fn accept_qpn(&self, qpn: u32) -> Result<()> {
        let mut p = Self::param(&[])?;
        p.qp_num = qpn;
        // SAFETY: as in `connect`.
        check(unsafe { rdma_accept(self.raw(), &mut p) }, "rdma_accept")
    }

    /// Rejects a connection request.
    pub fn reject(&self) -> Result<()> {
        // SAFETY: live ID from a CONNECT_REQUEST; no private data.
        check(
            unsafe { rdma_reject(self.raw(), std::ptr::null(), 0) },
            "rdma_reject",
        )
    }

    /// Disconnects (moves the QP to error; its outstanding WRs flush).
    pub fn disconnect(&self) -> Result<()> {
        // SAFETY: live ID.
        check(unsafe { rdma_disconnect(self.raw()) }, "rdma_disconnect")
    }
}

fn sockaddr_in(a: SocketAddrV4) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: a.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(*a.ip()).to_be(),
        },
        sin_zero: [0; 8],
    }
}
