// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! One iWARP connection as the CM sees it: TCP connect or accept, the MPA
//! Request/Reply exchange with RFC 6581 IRD/ORD and RTR negotiation
//! (RFC 5044 §7.1), and the events the iw_cm gets until the close.

use super::{
    mpa_io::{self, FrameBuf, SetupError},
    qp_link::{self, QpLink, Setup},
    Listener,
};
use crate::{
    device::Device,
    ffi::{
        iwcm::{self, CmId, CmIdRef, ConnParam, Event, EventData},
        sock::{cm_queue, errno, Socket},
    },
    proto::mpa::{self, FrameKind, FrameRepr, LocalParams, MpaError, Revision, RtrSet},
    stream::Stream,
};
use core::sync::atomic::{AtomicU8, Ordering};
use kernel::{
    impl_has_work, new_mutex, new_work,
    prelude::*,
    sync::{Arc, Mutex},
    workqueue::{Work, WorkItem},
};

/// IRD/ORD reported for a Rev 1 peer, which states none.
const DEFAULT_DEPTH: u16 = 16;

/// `closing` bit: the peer closed (FIN or RST).
const PEER: u8 = 1;
/// `closing` bit: the local side closed first (the ULP or the engine).
const LOCAL: u8 = 2;

/// Where the connection is.
enum Phase {
    /// Initiator, before its work item connects and sends the Request.
    Connect {
        qp: QpLink,
        private_data: KVec<u8>,
        ird: u16,
        ord: u16,
    },
    /// Responder: the TCP connection is accepted, the Request not yet read.
    AwaitRequest {
        sock: Socket,
        listener: Arc<Listener>,
    },
    /// Responder: the Request was reported; waiting for `iw_accept`/`iw_reject`.
    Requested { sock: Socket, req: KBox<FrameBuf> },
    /// The work item or an accept is using the connection.
    Busy,
    /// MPA done, the engine runs the stream; the next event is the close.
    Established { stream: Arc<Stream> },
    /// Nothing more will be reported.
    Closed,
}

/// The fields [`Endpoint::inner`] protects.
struct Inner {
    phase: Phase,
    /// The connection's cm_id, once there is one to report to.
    cm_id: Option<CmId>,
}

/// One connection, initiator or responder.
#[pin_data]
pub(crate) struct Endpoint {
    #[pin]
    work: Work<Endpoint>,
    /// Phase and cm_id. Process context only (work items and iw_cm ops);
    /// held across blocking socket calls only by the phase's owner.
    #[pin]
    inner: Mutex<Inner>,
    /// Close bits set by socket callbacks (softirq) for the work item.
    closing: AtomicU8,
}

impl_has_work! {
    impl HasWork<Self> for Endpoint { self.work }
}

impl WorkItem for Endpoint {
    type Pointer = Arc<Endpoint>;

    fn run(this: Arc<Endpoint>) {
        let phase = core::mem::replace(&mut this.inner.lock().phase, Phase::Busy);
        match phase {
            Phase::Connect {
                qp,
                private_data,
                ird,
                ord,
            } => this.connect(&qp, &private_data, ird, ord),
            Phase::AwaitRequest { sock, listener } => this.read_request(sock, &listener),
            other => {
                this.inner.lock().phase = other;
                this.close();
            }
        }
    }
}

/// Our depth as sent on the wire (14 bits, RFC 6581 §5).
fn depth(v: u32) -> u16 {
    u16::try_from(v).unwrap_or(u16::MAX).min(mpa::IRD_ORD_MAX)
}

/// A depth as an `iw_cm_event` carries it.
fn event_depth(v: u16) -> u8 {
    u8::try_from(v).unwrap_or(u8::MAX)
}

impl Endpoint {
    fn new(phase: Phase, cm_id: Option<CmId>) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                work <- new_work!("rsiw_cm_endpoint"),
                inner <- new_mutex!(Inner { phase, cm_id }, "rsiw_cm_endpoint"),
                closing: AtomicU8::new(0),
            }),
            GFP_KERNEL,
        )
    }

    fn schedule(self: &Arc<Self>) {
        // Already queued: that run sees the new state too.
        let _ = cm_queue().enqueue(self.clone());
    }

    /// `iw_connect`: starts connecting `id` for QP `param.qpn` of `dev`; the
    /// outcome is a `CONNECT_REPLY` event.
    pub(crate) fn start_connect(dev: &Device, id: &CmIdRef<'_>, param: &ConnParam<'_>) -> Result {
        let qp = qp_link::lookup(dev, param.qpn)?;
        // Private data beyond 512 bytes cannot be sent (RFC 5044 §7.1.1).
        if param.private_data.len() > mpa::MAX_PRIVATE_DATA - mpa::IRD_ORD_LEN {
            return Err(EINVAL);
        }
        let mut private_data = KVec::with_capacity(param.private_data.len(), GFP_KERNEL)?;
        private_data.extend_from_slice(param.private_data, GFP_KERNEL)?;
        let phase = Phase::Connect {
            qp,
            private_data,
            ird: depth(param.ird),
            ord: depth(param.ord),
        };
        let ep = Self::new(phase, Some(id.get()))?;
        ep.schedule();
        Ok(())
    }

    /// A connection accepted on `listener`: reads its Request in a work item.
    pub(crate) fn start_responder(sock: Socket, listener: Arc<Listener>) -> Result {
        let ep = Self::new(Phase::AwaitRequest { sock, listener }, None)?;
        ep.schedule();
        Ok(())
    }

    /// Initiator work: TCP connect, Request, Reply, engine, `CONNECT_REPLY`.
    fn connect(self: &Arc<Self>, qp: &QpLink, private_data: &[u8], ird: u16, ord: u16) {
        let Some(id) = self.inner.lock().cm_id.take() else {
            self.inner.lock().phase = Phase::Closed;
            return;
        };
        let p = iwcm::params();
        let local = LocalParams {
            rev: Revision::Rev2,
            crc: p.crc,
            markers_rx: false,
            markers_tx: false,
            ird,
            ord,
            // The engine can send a zero-length Write or Read as the RTR.
            p2p: p.peer_to_peer.then_some(RtrSet {
                send: false,
                write: true,
                read: true,
            }),
        };
        let req = mpa::request(&local, private_data);
        let reply = Socket::connect(&id.as_ref(), p.timeout_ms)
            .map_err(SetupError::Io)
            .and_then(|sock| {
                sock.set_timeout(p.timeout_ms);
                mpa_io::write(&sock, &req)?;
                let reply = FrameBuf::read(&sock)?;
                Ok((sock, reply))
            });
        let (sock, reply) = match reply {
            Ok(r) => r,
            Err(e) => return self.connect_failed(id, connect_status(e), &[]),
        };
        let rep = match FrameRepr::parse_bytes(reply.bytes(), FrameKind::Reply) {
            Ok(r) => r,
            Err(_) => return self.connect_failed(id, errno::connreset().to_errno(), &[]),
        };
        let params = match mpa::complete(&local, &req, &rep) {
            Ok(params) => params,
            Err(MpaError::Rejected) => {
                sock.shutdown(false);
                let pd = rep
                    .private_data
                    .get(..255.min(rep.private_data.len()))
                    .unwrap_or(&[]);
                return self.connect_failed(id, errno::connrefused().to_errno(), pd);
            }
            Err(e) => {
                pr_info!("MPA Reply refused: {:?}\n", e);
                if let Some(code) = e.terminate_code() {
                    // The exchange completed: tell the responder why (RFC 6581 §4).
                    let _ = mpa_io::write_terminate(&sock, req.crc || rep.crc, code);
                    sock.shutdown(false);
                } else {
                    sock.shutdown(true);
                }
                return self.connect_failed(id, errno::connreset().to_errno(), &[]);
            }
        };
        // iw_cm_event counts private data in a u8: refuse, never truncate.
        if rep.private_data.len() > usize::from(u8::MAX) {
            sock.shutdown(true);
            return self.connect_failed(id, errno::connreset().to_errno(), &[]);
        }
        let setup = Setup {
            params,
            initiator: true,
            mss: sock.mss(),
        };
        let stream = match Stream::new(sock, self.clone()) {
            Ok(s) => s,
            Err(e) => return self.connect_failed(id, e.to_errno(), &[]),
        };
        let data = EventData {
            status: 0,
            private_data: rep.private_data,
            ird: event_depth(params.ird),
            ord: event_depth(params.ord),
        };
        if let Err((id, e)) = self.establish(id, stream, qp, &setup, Event::ConnectReply, &data) {
            self.connect_failed(id, e.to_errno(), &[]);
        }
    }

    /// Starts the engine and reports `ev` (`CONNECT_REPLY` or `ESTABLISHED`)
    /// with the phase lock held throughout, so that the close, which the work
    /// item reports under the same lock, never overtakes it (the iw_cm cannot
    /// take a `CLOSE` before the connection is up). On failure the stream is
    /// reset and the cm_id handed back.
    fn establish(
        &self,
        id: CmId,
        stream: Arc<Stream>,
        qp: &QpLink,
        setup: &Setup,
        ev: Event,
        data: &EventData<'_>,
    ) -> Result<(), (CmId, Error)> {
        let mut inner = self.inner.lock();
        inner.phase = Phase::Established {
            stream: stream.clone(),
        };
        if let Err(e) = qp_link::start(qp, stream.clone(), setup) {
            inner.phase = Phase::Closed;
            drop(inner);
            stream.detach();
            stream.shutdown(true);
            return Err((id, e));
        }
        let _ = id.event(ev, None, data);
        inner.cm_id = Some(id);
        Ok(())
    }

    /// Reports a failed connect and drops our cm_id reference.
    fn connect_failed(&self, id: CmId, status: i32, private_data: &[u8]) {
        self.inner.lock().phase = Phase::Closed;
        let data = EventData {
            status,
            private_data,
            ..Default::default()
        };
        let _ = id.event(Event::ConnectReply, None, &data);
    }

    /// Responder work: reads and checks the Request, reports it.
    fn read_request(self: &Arc<Self>, sock: Socket, listener: &Arc<Listener>) {
        let local = local_responder(0, 0);
        sock.set_timeout(iwcm::params().timeout_ms);
        let req = match FrameBuf::read(&sock) {
            Ok(f) => f,
            Err(e) => return self.refuse(sock, &local, None, e),
        };
        let rev = match FrameRepr::parse_bytes(req.bytes(), FrameKind::Request) {
            // Markers are never inserted by rsiw (RFC 5044 §7.1.2 lets the
            // responder refuse), and private data must fit the event.
            Ok(r) if r.markers => {
                return self.refuse(
                    sock,
                    &local,
                    Some(r.rev),
                    MpaError::MarkersUnsupported.into(),
                )
            }
            Ok(r) if r.private_data.len() > usize::from(u8::MAX) => {
                return self.refuse(
                    sock,
                    &local,
                    Some(r.rev),
                    MpaError::PrivateDataTooLong(0).into(),
                )
            }
            Ok(r) => r.rev,
            Err(e) => return self.refuse(sock, &local, None, e.into()),
        };
        let Ok(req) = KBox::new(req, GFP_KERNEL) else {
            return self.refuse(sock, &local, Some(rev), SetupError::Io(ENOMEM));
        };
        let mut inner = self.inner.lock();
        inner.phase = Phase::Requested { sock, req };
        let Phase::Requested { sock, req } = &inner.phase else {
            return;
        };
        // Parsed above; a second parse of the same bytes cannot fail.
        let Ok(r) = FrameRepr::parse_bytes(req.bytes(), FrameKind::Request) else {
            return;
        };
        // The event speaks for the peer: its IRD and ORD (the ULP's ORD and
        // IRD limits), as the iw_cm hands them to rdma_cm.
        let (ird, ord) = match r.ird_ord {
            Some(b) => (b.ird, b.ord),
            None => (DEFAULT_DEPTH, DEFAULT_DEPTH),
        };
        let data = EventData {
            status: 0,
            private_data: r.private_data,
            ird: event_depth(ird.min(mpa::IRD_ORD_MAX)),
            ord: event_depth(ord.min(mpa::IRD_ORD_MAX)),
        };
        if listener.connect_request(self.clone(), sock, &data).is_err() {
            // Nobody will accept or reject: refuse the connection now.
            let phase = core::mem::replace(&mut inner.phase, Phase::Closed);
            drop(inner);
            if let Phase::Requested { sock, .. } = phase {
                self.refuse(
                    sock,
                    &local,
                    Some(rev),
                    SetupError::Io(errno::connrefused()),
                );
            }
        }
    }

    /// Responder: closes a connection whose Request is not acceptable, with
    /// a Reject Reply unless the peer does not speak MPA at all.
    fn refuse(&self, sock: Socket, local: &LocalParams, rev: Option<Revision>, why: SetupError) {
        self.inner.lock().phase = Phase::Closed;
        let speaks_mpa = !matches!(
            why,
            SetupError::Io(_) | SetupError::Mpa(MpaError::BadKey | MpaError::Truncated { .. })
        );
        if speaks_mpa {
            // RFC 5044 §7.1.1: the R bit tells the initiator why we close.
            let _ = mpa_io::write(&sock, &mpa::reject_reply(local, rev, &[]));
        }
        sock.shutdown(!speaks_mpa);
    }

    /// `iw_accept`: answers the Request with a Reply, starts the engine on
    /// QP `param.qpn`, reports `ESTABLISHED`.
    pub(crate) fn accept(
        self: &Arc<Self>,
        dev: &Device,
        id: &CmIdRef<'_>,
        param: &ConnParam<'_>,
    ) -> Result {
        let phase = core::mem::replace(&mut self.inner.lock().phase, Phase::Busy);
        let Phase::Requested { sock, req } = phase else {
            self.inner.lock().phase = phase;
            return Err(EINVAL);
        };
        let local = local_responder(param.ird, param.ord);
        let r = FrameRepr::parse_bytes(req.bytes(), FrameKind::Request).map_err(|_| EINVAL);
        let r = r.and_then(|r| {
            let qp = qp_link::lookup(dev, param.qpn)?;
            let (reply, params) =
                mpa::respond(&local, &r, param.private_data).map_err(|_| EINVAL)?;
            mpa_io::write(&sock, &reply).map_err(|_| errno::connreset())?;
            Ok((qp, params))
        });
        let (qp, params) = match r {
            Ok(v) => v,
            Err(e) => {
                self.inner.lock().phase = Phase::Closed;
                sock.shutdown(true);
                return Err(e);
            }
        };
        let setup = Setup {
            params,
            initiator: false,
            mss: sock.mss(),
        };
        let stream = Stream::new(sock, self.clone())
            .inspect_err(|_| self.inner.lock().phase = Phase::Closed)?;
        let data = EventData {
            status: 0,
            private_data: &[],
            ird: event_depth(params.ird),
            ord: event_depth(params.ord),
        };
        self.establish(id.get(), stream, &qp, &setup, Event::Established, &data)
            .map_err(|(_, e)| e)
    }

    /// `iw_reject`: a Reply with the Reject bit and the ULP's private data,
    /// then an orderly close (RFC 5044 §7.1.1).
    pub(crate) fn reject(&self, private_data: &[u8]) -> Result {
        let phase = core::mem::replace(&mut self.inner.lock().phase, Phase::Closed);
        let Phase::Requested { sock, req } = phase else {
            return Ok(());
        };
        let rev = FrameRepr::parse_bytes(req.bytes(), FrameKind::Request)
            .map(|r| r.rev)
            .ok();
        let local = local_responder(0, 0);
        let _ = mpa_io::write(&sock, &mpa::reject_reply(&local, rev, private_data));
        sock.shutdown(false);
        Ok(())
    }

    /// The socket closed under an established stream (softirq): the work
    /// item reports it.
    pub(crate) fn stream_closed(self: &Arc<Self>, _abortive: bool) {
        self.closing.fetch_or(PEER, Ordering::AcqRel);
        self.schedule();
    }

    /// The local side closes the stream (the ULP's disconnect through
    /// `modify_qp`, or the engine after an error).
    pub(crate) fn local_closed(self: &Arc<Self>) {
        self.closing.fetch_or(LOCAL, Ordering::AcqRel);
        self.schedule();
    }

    /// Work: reports the close once: `DISCONNECT` if the peer closed first,
    /// then `CLOSE`; drops the cm_id and its stream reference.
    fn close(&self) {
        let bits = self.closing.swap(0, Ordering::AcqRel);
        if bits == 0 {
            return;
        }
        let (id, stream) = {
            let mut inner = self.inner.lock();
            match core::mem::replace(&mut inner.phase, Phase::Closed) {
                Phase::Established { stream } => (inner.cm_id.take(), Some(stream)),
                other => {
                    inner.phase = other;
                    (None, None)
                }
            }
        };
        if let Some(id) = &id {
            if bits & LOCAL == 0 {
                let _ = id.event(Event::Disconnect, None, &EventData::default());
            }
            let _ = id.event(Event::Close, None, &EventData::default());
        }
        drop(id);
        if let Some(stream) = stream {
            if bits & LOCAL == 0 {
                // The engine has had its `closed`; detaching breaks the
                // stream → consumer → stream cycle now.
                stream.detach();
            }
            // After a local close the consumer keeps the stream until the
            // peer's FIN or RST (its cue to flush the QP) or its own
            // `quiesce`, which detaches.
        }
    }
}

/// The responder's offer: our CRC preference, the ULP's depths, any RTR.
fn local_responder(ird: u32, ord: u32) -> LocalParams {
    LocalParams {
        rev: Revision::Rev2,
        crc: iwcm::params().crc,
        markers_rx: false,
        markers_tx: false,
        ird: depth(ird),
        ord: depth(ord),
        p2p: None,
    }
}

/// The `CONNECT_REPLY` status for a failed connect or exchange.
fn connect_status(e: SetupError) -> i32 {
    match e {
        SetupError::Io(e) if e == EAGAIN || e == errno::timedout() => errno::timedout().to_errno(),
        SetupError::Io(e) if e == errno::connrefused() || errno::is_unreachable(e) => e.to_errno(),
        _ => errno::connreset().to_errno(),
    }
}
