// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! One iWARP connection as the CM sees it: TCP connect or accept, the MPA
//! Request/Reply exchange with RFC 6581 IRD/ORD and RTR negotiation
//! (RFC 5044 §7.1), and the events the iw_cm gets until the close.

mod initiator;
mod qpconn;
mod responder;

pub(crate) use qpconn::AttemptRef;
use qpconn::QpAttempt;

use super::{
    mpa_io::{self, FrameBuf, SetupError},
    qp_link::{self, QpLink, Setup},
    Admit, Listener, PRIVILEGED_PORTS, QP_PEER_PENDING,
};
use crate::{
    kapi::{
        deadline::{Deadline, Expire},
        iwcm::{CmId, CmIdRef, ConnParam, Event, EventData},
        params,
        sock::{cm_queue, errno, InAddr, Socket, Watch},
    },
    objects::device::Device,
    proto::mpa::{self, FrameKind, FrameRepr, LocalParams, MpaError, Revision, RtrSet},
    resources::counters::{Counter, PortCounters},
    resources::stream::{Stream, StreamOwner},
};
use core::sync::atomic::{AtomicU8, Ordering};
use kernel::{
    c_str, impl_has_work, new_condvar, new_mutex, new_work,
    prelude::*,
    sync::{Arc, CondVar, CondVarTimeoutResult, Mutex},
    workqueue::{Work, WorkItem},
};

/// IRD/ORD reported for a Rev 1 peer, which states none.
const DEFAULT_DEPTH: u16 = 16;

/// `events` bit: the peer closed (FIN or RST) under an established stream.
const PEER: u8 = 1;
/// `events` bit: the local side closed first (the ULP or the engine).
const LOCAL: u8 = 2;
/// `events` bit: the deadline of the current phase passed.
const EXPIRED: u8 = 4;
/// `events` bit: the listener stopped (a Request still being read is
/// dropped), or a QP attempt was cancelled.
const ABORT: u8 = 8;
/// `events` bit: a QP was armed; a parked request looks for its QP again.
const REARM: u8 = 16;
/// `events` bit: the close (either side's) was a reset or an error.
const ABORTED: u8 = 32;

/// Classes of the rate-limited lines about refused peers, each limited on
/// its own so that a flood of one hides no other.
mod warn {
    /// A frame's deadline passed.
    pub(super) const DEADLINE: u32 = 0;
    /// More connections in setup than `mpa_max_pending`.
    pub(super) const BOUND: u32 = 1;
    /// Bytes before the Reply.
    pub(super) const EARLY: u32 = 2;
    /// A request the ULP did not answer in time.
    pub(super) const UNANSWERED: u32 = 3;
    /// A QP connection request that matches no armed QP.
    pub(super) const QP: u32 = 4;
    /// A QP connection from an unprivileged source port.
    pub(super) const PORT: u32 = 5;
    /// More QP connections in setup from one peer than `QP_PEER_PENDING`.
    pub(super) const PEER: u32 = 6;
    const _: () = assert!(PEER < crate::kapi::sock::WARN_CLASSES);
}

/// A connection in MPA setup whose socket reports to the endpoint. Dropping
/// it restores the socket's callbacks (the reference on the endpoint they
/// hold would otherwise keep both alive) and closes the socket.
struct Watched(Option<(Socket, Watch<Endpoint>)>);

impl Watched {
    /// Routes `sock`'s received bytes and state changes to `ep`'s work item.
    fn new(sock: Socket, ep: &Arc<Endpoint>) -> Self {
        let watch = sock.watch_handshake(ep.clone());
        Self(Some((sock, watch)))
    }

    /// The socket (until `release`).
    fn sock(&self) -> Result<&Socket> {
        self.0.as_ref().map(|(s, _)| s).ok_or(EINVAL)
    }

    /// Restores the socket's callbacks; no handshake event follows.
    fn release(mut self) -> Option<Socket> {
        let (sock, watch) = self.0.take()?;
        let _ = sock.unwatch(watch);
        Some(sock)
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        if let Some((sock, watch)) = self.0.take() {
            let _ = sock.unwatch(watch);
        }
    }
}

/// An initiator between its TCP connect and the Reply.
struct Init {
    qp: QpLink,
    private_data: KVec<u8>,
    local: LocalParams,
    conn: Watched,
    reply: FrameBuf,
}

/// Where the connection is.
enum Phase {
    /// Initiator, before its work item starts the TCP connect.
    Connect {
        qp: QpLink,
        private_data: KVec<u8>,
        ird: u16,
        ord: u16,
    },
    /// Initiator: the TCP connect is under way (deadline: `mpa_timeout_ms`).
    Connecting(KBox<Init>),
    /// Initiator: the Request is sent; the Reply is collected as it arrives
    /// (deadline: `mpa_timeout_ms` for the whole frame).
    AwaitReply(KBox<Init>),
    /// Responder: the TCP connection is accepted; the Request is collected as
    /// it arrives (deadline: `mpa_timeout_ms` for the whole frame).
    AwaitRequest {
        conn: Watched,
        listener: Arc<Listener>,
        req: KBox<FrameBuf>,
    },
    /// Responder: the Request was reported; waiting for `iw_accept`/`iw_reject`
    /// (deadline: `mpa_accept_timeout_ms`).
    Requested {
        sock: Socket,
        req: KBox<FrameBuf>,
        listener: Arc<Listener>,
    },
    /// An accept, a reject or the work item is using the connection.
    Busy,
    /// MPA done, the engine runs the stream; the next event is the close.
    Established { stream: Arc<Stream> },
    /// Nothing more will be reported.
    Closed,
    /// QP connection, active side: the work item starts the TCP connect (then
    /// `Connecting`, `AwaitReply`).
    QpConnect,
    /// QP connection, active side: waiting before connecting again (the
    /// peer's listener refused or reset the connection).
    QpBackoff,
    /// QP connection, passive side: the QP is armed; the deadline is its
    /// limit (`qp_conn_timeout_ms`).
    QpWait,
    /// A QP connection request whose QP is not armed yet (deadline:
    /// `qp_conn_timeout_ms`); a `REARM` makes it look again.
    Parked {
        sock: Socket,
        req: KBox<FrameBuf>,
        listener: Arc<Listener>,
    },
}

/// The fields [`Endpoint::inner`] protects.
struct Inner {
    phase: Phase,
    /// The connection's cm_id, once there is one to report to.
    cm_id: Option<CmId>,
    /// The QP arming this endpoint works for (a QP connection's attempt;
    /// boxed, so that the endpoints of iw_cm connections stay small);
    /// `None` once cancelled: only touched with `inner` held.
    qp: Option<KBox<QpAttempt>>,
}

/// One connection, initiator or responder.
#[pin_data]
pub(crate) struct Endpoint {
    #[pin]
    work: Work<Endpoint>,
    /// Phase and cm_id. Process context only (work items and iw_cm ops);
    /// held across blocking socket calls only by the phase's owner, and
    /// around every arming and cancelling of `deadline`.
    #[pin]
    inner: Mutex<Inner>,
    /// Event bits set by socket callbacks, the deadline timer (softirq) and
    /// the listener, for the work item.
    events: AtomicU8,
    /// The current phase's time limit; no work item waits for it.
    deadline: Deadline<Endpoint>,
    /// The port's counters (connections established, refused, closed).
    ctr: Arc<PortCounters>,
    /// Initiator: the MPA Request is in the socket, or the attempt ended;
    /// `iw_connect` waits for it (see [`Endpoint::start_connect`]).
    #[pin]
    launched: Mutex<bool>,
    #[pin]
    launched_cv: CondVar,
}

impl_has_work! {
    impl HasWork<Self> for Endpoint { self.work }
}

// Every connection keeps its endpoint while it is up: with the `Arc`'s count
// it is a 256-octet allocation on kernels without lock debugging (a QP
// connection's attempt is boxed for that, `Inner::qp`). Per-QP memory is a
// target (`performance.md`).
#[cfg(not(any(CONFIG_DEBUG_SPINLOCK, CONFIG_DEBUG_LOCK_ALLOC, CONFIG_DEBUG_MUTEXES)))]
const _: () = assert!(core::mem::size_of::<Endpoint>() <= 256 - 8);

impl WorkItem for Endpoint {
    type Pointer = Arc<Endpoint>;

    fn run(this: Arc<Endpoint>) {
        let phase = {
            let mut inner = this.inner.lock();
            match inner.phase {
                // Phases the work item owns: it takes them out while it works.
                Phase::Connect { .. }
                | Phase::Connecting(_)
                | Phase::AwaitReply(_)
                | Phase::AwaitRequest { .. }
                | Phase::QpConnect
                | Phase::QpBackoff
                | Phase::QpWait
                | Phase::Parked { .. } => Some(core::mem::replace(&mut inner.phase, Phase::Busy)),
                // Owned by `iw_accept`/`iw_reject` or the engine: only looked at.
                _ => None,
            }
        };
        match phase {
            Some(Phase::Connect {
                qp,
                private_data,
                ird,
                ord,
            }) => this.connect_start(qp, private_data, ird, ord),
            Some(Phase::Connecting(init)) => this.connecting(init),
            Some(Phase::AwaitReply(init)) => this.await_reply(init),
            Some(Phase::AwaitRequest {
                conn,
                listener,
                req,
            }) => this.await_request(conn, listener, req),
            Some(Phase::QpConnect) => this.qp_connect(),
            Some(Phase::QpBackoff) => this.qp_backoff(),
            Some(Phase::QpWait) => this.qp_wait(),
            Some(Phase::Parked {
                sock,
                req,
                listener,
            }) => this.parked(sock, req, listener),
            Some(other) => this.inner.lock().phase = other,
            None => {
                this.accept_expired();
                this.close();
            }
        }
    }
}

/// Our depth as sent on the wire (14 bits, RFC 6581 §5).
/// Our MPA offer, whichever side and path (iw_cm initiator or responder, QP
/// connection): MPA v2, CRC, large FPDUs and a request for Markers as the module
/// parameters say, Markers inserted for a peer that asks for them (its M bit,
/// RFC 5044 §7.1.2; the Markers of §4.3), the given IRD/ORD and RTR offer.
fn our_params(ird: u16, ord: u16, p2p: Option<RtrSet>) -> LocalParams {
    let p = params::cm();
    LocalParams {
        rev: Revision::Rev2,
        crc: p.crc,
        markers_rx: p.markers,
        markers_tx: true,
        ird,
        ord,
        p2p,
        large_fpdu: p.large_fpdu,
    }
}

fn depth(v: u32) -> u16 {
    u16::try_from(v).unwrap_or(u16::MAX).min(mpa::IRD_ORD_MAX)
}

/// A depth as an `iw_cm_event` carries it.
fn event_depth(v: u16) -> u8 {
    u8::try_from(v).unwrap_or(u8::MAX)
}

impl Endpoint {
    fn new(phase: Phase, cm_id: Option<CmId>, ctr: &Arc<PortCounters>) -> Result<Arc<Self>> {
        let deadline = Deadline::new()?;
        Arc::pin_init(
            pin_init!(Self {
                work <- new_work!("rsiw_cm_endpoint"),
                inner <- new_mutex!(Inner { phase, cm_id, qp: None }, "rsiw_cm_endpoint"),
                events: AtomicU8::new(0),
                deadline,
                ctr: ctr.clone(),
                launched <- new_mutex!(false, "rsiw_cm_launched"),
                launched_cv <- new_condvar!("rsiw_cm_launched"),
            }),
            GFP_KERNEL,
        )
    }

    fn schedule(self: &Arc<Self>) {
        // Already queued: that run sees the new state too.
        let _ = cm_queue().enqueue(self.clone());
    }

    /// Arms the deadline of a new phase, `ms` from now (none if 0). A
    /// deadline of the phase before that passed meanwhile is forgotten. Call
    /// with `inner` held.
    fn new_deadline(self: &Arc<Self>, ms: u32) {
        self.end_deadline();
        if ms > 0 {
            self.deadline.arm(self.clone(), ms);
        }
    }

    /// The phase ended in time: the deadline is off and a passing that raced
    /// with the end is forgotten. Call with `inner` held.
    fn end_deadline(&self) {
        // `cancel` waits for a running expiry, which sets EXPIRED first.
        self.deadline.cancel();
        self.events.fetch_and(!EXPIRED, Ordering::AcqRel);
    }

    /// Bytes arrived or the socket's state changed during MPA setup
    /// (softirq): the work item looks.
    pub(crate) fn handshake_event(self: Arc<Self>) {
        let _ = cm_queue().enqueue(self);
    }

    /// The listener stopped: a Request still being read is dropped. Never
    /// waits for the connection.
    pub(crate) fn abort(self: &Arc<Self>) {
        self.events.fetch_or(ABORT, Ordering::AcqRel);
        self.schedule();
    }

    fn event(&self, bit: u8) -> bool {
        self.events.load(Ordering::Acquire) & bit != 0
    }

    /// `iw_connect`: starts connecting `id` for QP `param.qpn` of `dev`; the
    /// outcome is a `CONNECT_REPLY` event.
    ///
    /// Returns once the MPA Request is in the socket (or the attempt ended),
    /// as siw's `iw_connect` does, waiting at most `mpa_timeout_ms` and not
    /// past a signal: so the Requests of successive connects leave in the
    /// order of the calls, and a responder sees its `CONNECT_REQUEST`s in
    /// that order. Consumers rely on it: perftest's rdma_cm mode connects
    /// its QPs one after the other and pairs the i-th connect with the
    /// server's i-th accepted connection (`ib_send_bw -R -q 4` sent its
    /// credit Writes over the wrong connections and stopped when two
    /// connections overtook each other). The connect itself never blocks:
    /// a peer that does not answer costs the caller the bounded wait only.
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
        let ep = Self::new(phase, Some(id.get()), dev.counters())?;
        ep.schedule();
        ep.wait_launched(params::cm().timeout_ms);
        Ok(())
    }

    /// Initiator: the MPA Request is in the socket, or the attempt ended.
    fn set_launched(&self) {
        *self.launched.lock() = true;
        self.launched_cv.notify_all();
    }

    /// Waits (process context) until [`Self::set_launched`], at most `ms`
    /// milliseconds, and not past a signal.
    fn wait_launched(&self, ms: u32) {
        let until = crate::kapi::deadline::now_ms() + i64::from(ms);
        let mut g = self.launched.lock();
        while !*g {
            let left = until - crate::kapi::deadline::now_ms();
            let Ok(left) = u32::try_from(left) else { break };
            if left == 0 {
                break;
            }
            let woke = self
                .launched_cv
                .wait_interruptible_timeout(&mut g, kernel::time::msecs_to_jiffies(left));
            if let CondVarTimeoutResult::Signal { .. } = woke {
                break;
            }
        }
    }

    /// A connection accepted on `listener`: its Request is collected by the
    /// work item as it arrives, within `mpa_timeout_ms`. Beyond
    /// `mpa_max_pending` connections in setup on the listener it is reset.
    pub(crate) fn start_responder(sock: Socket, listener: Arc<Listener>) -> Result {
        let p = params::cm();
        // Bounds the Reply and Reject sends of `iw_accept`/`iw_reject`, which
        // a fresh connection's empty send buffer takes at once anyway.
        sock.set_timeout(p.timeout_ms);
        let req = KBox::new(FrameBuf::new(), GFP_KERNEL)?;
        // Registered with the listener first, so that a stop sees it.
        let ctr = listener.counters().clone();
        let from = sock.peer()?;
        let qp_listener = listener.qp_device().is_some();
        let refuse = |class: u32, why: &kernel::str::CStr, e: Error| {
            ctr.inc(Counter::CmRefused);
            sock.warn(class, why);
            sock.shutdown(true);
            Err(e)
        };
        // rsiw connects QPs from a privileged port (below 1024, as NFS's
        // `secure`): an unprivileged user on either host cannot send a
        // request, whatever QP numbers and PSNs it can read.
        if qp_listener && from.port >= PRIVILEGED_PORTS {
            let why =
                c_str!("QP connection refused: source port not privileged (1024 or above): reset");
            return refuse(warn::PORT, why, EACCES);
        }
        let peer_max = if qp_listener {
            QP_PEER_PENDING
        } else {
            usize::MAX
        };
        let admitted = listener.admit(p.max_pending, &from.ip, peer_max, || {
            Self::new(Phase::Busy, None, &ctr)
        })?;
        let ep = match admitted {
            Admit::In(ep) => ep,
            Admit::Full => {
                let why = c_str!(
                    "too many connections in MPA setup on this listener (mpa_max_pending): reset"
                );
                return refuse(warn::BOUND, why, EBUSY);
            }
            Admit::PeerFull => {
                let why =
                    c_str!("too many QP connections in setup or parked from this peer: reset");
                return refuse(warn::PEER, why, EBUSY);
            }
        };
        {
            let mut inner = ep.inner.lock();
            ep.new_deadline(p.timeout_ms);
            let conn = Watched::new(sock, &ep);
            inner.phase = Phase::AwaitRequest {
                conn,
                listener,
                req,
            };
        }
        // Bytes that arrived before the watch.
        ep.schedule();
        Ok(())
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
        self.ctr.inc(Counter::CmEstablished);
        let _ = id.event(ev, None, data);
        inner.cm_id = Some(id);
        Ok(())
    }

    /// This endpoint as the owner of its stream.
    fn stream_owner(self: &Arc<Self>) -> Result<Arc<dyn StreamOwner>> {
        Ok(Arc::new(Owner(self.clone()), GFP_KERNEL)?)
    }

    /// The socket closed under an established stream (softirq): the work
    /// item reports it.
    pub(crate) fn stream_closed(self: &Arc<Self>, abortive: bool) {
        let aborted = if abortive { ABORTED } else { 0 };
        self.events.fetch_or(PEER | aborted, Ordering::AcqRel);
        self.schedule();
    }

    /// The local side closes the stream (the ULP's disconnect through
    /// `modify_qp`, or the engine after an error).
    pub(crate) fn local_closed(self: &Arc<Self>, abortive: bool) {
        let aborted = if abortive { ABORTED } else { 0 };
        self.events.fetch_or(LOCAL | aborted, Ordering::AcqRel);
        self.schedule();
    }

    /// Work: reports the close once: `DISCONNECT` if the peer closed first,
    /// then `CLOSE`; drops the cm_id and its stream reference.
    fn close(&self) {
        let all = PEER | LOCAL | ABORTED;
        let bits = self.events.fetch_and(!all, Ordering::AcqRel) & all;
        if bits & (PEER | LOCAL) == 0 {
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
            self.ctr.inc(Counter::CmClosed);
            if bits & ABORTED != 0 {
                self.ctr.inc(Counter::CmAborted);
            }
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

/// The endpoint as its stream sees it: the close reports go to the work item.
struct Owner(Arc<Endpoint>);

impl StreamOwner for Owner {
    fn stream_closed(&self, abortive: bool) {
        self.0.stream_closed(abortive);
    }

    fn local_closed(&self, abortive: bool) {
        self.0.local_closed(abortive);
    }
}

impl Expire for Endpoint {
    const KIND: u32 = 0;

    /// The deadline timer passed (softirq): the work item ends the phase.
    fn deadline_passed(self: Arc<Self>) {
        self.events.fetch_or(EXPIRED, Ordering::AcqRel);
        let _ = cm_queue().enqueue(self);
    }
}
