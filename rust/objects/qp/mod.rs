// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Queue pairs: the verbs state machine (RFC 5040 §6 QP states as the verbs
//! present them), the send and receive queues the engine consumes, flushing
//! on ERROR, and async events.

mod attrs;
mod conn;
mod oob;
mod port;
mod rq;
mod send;
pub(crate) mod sq;

use crate::{
    engine::Conn,
    kapi::{
        deadline::{Deadline, Expire},
        lock::IrqSpinLock,
        owner::Owner,
        qp::IbQpRef,
    },
    objects::device::Device,
    objects::srq::{RecvQueue, RecvRing, Srq, UserRecv},
    queue::cq::{Cq, WcFlags, WcStatus},
    queue::uqueue::{UserRq, UserSq},
    resources::mem::Access,
};
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use kernel::{
    new_condvar,
    prelude::*,
    sync::{Arc, CondVar},
};

pub(crate) use crate::kapi::qp::QpEvent;
use crate::queue::wr::{SendOp, MAX_INLINE, MAX_SGE};
use attrs::check_transition;
pub(crate) use attrs::{QpCaps, QpInit, QpModify, QpState};
pub(crate) use oob::{Attempt, Claim, Job, PathAttrs, PathMod};
use rq::bad_recv;
use sq::{Next, SendQueue};

/// Queue pairs per device.
pub(crate) const MAX_QP: u32 = 1 << 14;
/// Work requests per queue.
pub(crate) const MAX_QP_WR: u32 = crate::objects::srq::MAX_WR;
/// Outstanding RDMA Read / Atomic requests per QP, both directions (ORD/IRD).
pub(crate) use crate::queue::wr::MAX_RD_ATOMIC;

/// How long `destroy_qp` lets a stream from `modify_qp` send what its SQ
/// handed over before the FIN (then it resets the stream).
const DESTROY_LINGER_MS: u32 = 2000;

/// How long a QP connected from `modify_qp` stays as it is after its peer
/// closed the stream in order, before it goes to ERROR and flushes. An IB
/// QP never hears of its peer's QP going away (it finds out when it next
/// sends), and consumers such as `ibv_rc_pingpong` destroy their QP as soon
/// as their own last completion came, while the peer's last completions
/// (its last Receive, or a Send whose pages TCP still holds) are on their
/// way: flushed at once, the peer's other WQEs would complete in error in
/// the same poll.
const PEER_CLOSE_GRACE_MS: u32 = 1000;

/// The fields [`Qp::inner`] protects.
struct Inner {
    state: QpState,
    ord: u32,
    ird: u32,
    sq: SendQueue,
    conn: Option<Arc<Conn>>,
    /// `destroy_qp` started: no connection may be bound any more.
    destroying: bool,
    /// What `modify_qp` set of the IB path (`query_qp`).
    path: PathAttrs,
    /// Armed for a QP connection from `modify_qp` (`oob.rs`).
    oob: Option<oob::Oob>,
    /// Generation of the arming; each arming and disarming moves it on.
    oob_gen: u32,
}

/// The provider's rings of a user QP, made once the sizes are granted.
pub(crate) type MakeUserRings<'a> = &'a dyn Fn(&QpCaps) -> Result<(UserSq, Option<UserRq>)>;

/// A queue pair.
#[pin_data]
pub(crate) struct Qp {
    dev: Arc<Device>,
    ib: IbQpRef,
    /// QP number; set once at insertion into the device table.
    num: AtomicU32,
    /// Creation is complete (`publish`): until then a lookup by number
    /// (`Device::qp_lookup`: iw_cm's `get_qp`, `iw_connect`/`iw_accept`, a
    /// QP connection request, `rdma resource show`) does not find the QP,
    /// though it holds its number in the table.
    published: AtomicBool,
    pd: u32,
    scq: Arc<Cq>,
    rcq: Arc<Cq>,
    srq: Option<Arc<Srq>>,
    sig_all: bool,
    caps: QpCaps,
    /// Who may bind a connection to the QP (`iw_connect`/`iw_accept` name
    /// it by number, which rdma_cm passes through from any process).
    owner: Owner,
    /// `IB_ACCESS_REMOTE_*` rights the consumer enabled (`modify_qp`).
    access: AtomicU32,
    /// The stream came from the iw_cm (rdma_cm), not from `modify_qp`: the
    /// iw_cm's rule for remote atomics applies (`remote_allowed`).
    iwcm_stream: AtomicBool,
    /// Moves the QP to ERROR [`PEER_CLOSE_GRACE_MS`] after its peer closed
    /// a stream from `modify_qp` in order; armed at most once per stream
    /// (`peer_gone_armed`), cancelled by RESET and `destroy_qp` once the
    /// stream is quiesced.
    peer_gone: Deadline<Qp>,
    peer_gone_armed: AtomicBool,
    /// State and send queue: taken in any context (post_send, engine TX
    /// work, RX in softirq for state checks); never held across a CQ push
    /// or an engine call.
    #[pin]
    inner: IrqSpinLock<Inner>,
    /// The QP's own receive queue (unused with an SRQ): post_recv and RX.
    #[pin]
    rq: IrqSpinLock<RecvQueue>,
    /// References the iw_cm holds (`iw_add_ref`/`iw_rem_ref`): the core frees
    /// the `ib_qp` when `destroy_qp` returns, so that waits for them.
    #[pin]
    cm_refs: IrqSpinLock<u32>,
    /// Signalled when `cm_refs` drops to zero.
    #[pin]
    cm_released: CondVar,
}

/// Completions handed to the CQ per QP lock hold (`Qp::sq_reap`).
const REAP_BATCH: usize = 16;

/// Validates and clamps requested sizes; `EINVAL` beyond the device limits.
fn grant(caps: QpCaps, has_srq: bool) -> Result<QpCaps> {
    let sge_ok = |n: u32| n as usize <= MAX_SGE;
    if caps.max_send_wr > MAX_QP_WR || caps.max_recv_wr > MAX_QP_WR {
        return Err(EINVAL);
    }
    if !sge_ok(caps.max_send_sge) || !sge_ok(caps.max_recv_sge) {
        return Err(EINVAL);
    }
    if caps.max_inline as usize > MAX_INLINE {
        return Err(EINVAL);
    }
    Ok(QpCaps {
        max_send_wr: caps.max_send_wr.max(1),
        max_recv_wr: if has_srq { 0 } else { caps.max_recv_wr.max(1) },
        max_send_sge: caps.max_send_sge.max(1),
        max_recv_sge: if has_srq { 0 } else { caps.max_recv_sge.max(1) },
        max_inline: MAX_INLINE as u32,
    })
}

impl Qp {
    /// Creates a QP and gives it a number; returns the granted sizes. A user
    /// QP's rings come from `user`.
    pub(crate) fn new(
        dev: &Arc<Device>,
        init: QpInit,
        user: Option<MakeUserRings<'_>>,
    ) -> Result<(Arc<Self>, QpCaps)> {
        if let Some(srq) = &init.srq {
            if srq.pd() != init.pd {
                return Err(EINVAL);
            }
        }
        let mut caps = grant(init.caps, init.srq.is_some())?;
        if !dev.get_qp() {
            return Err(ENOMEM);
        }
        let made = Self::build(dev, init, &mut caps, user);
        let qp = match made {
            Ok(qp) => qp,
            Err(e) => {
                dev.put_qp();
                return Err(e);
            }
        };
        match dev.qp_insert(qp.clone()) {
            Ok(n) => qp.num.store(n, Ordering::Release),
            Err(e) => {
                dev.put_qp();
                return Err(e);
            }
        }
        Ok((qp, caps))
    }

    fn build(
        dev: &Arc<Device>,
        init: QpInit,
        caps: &mut QpCaps,
        user: Option<MakeUserRings<'_>>,
    ) -> Result<Arc<Self>> {
        let (sq, rq) = match user {
            Some(make) => {
                let (usq, urq) = make(caps)?;
                caps.max_send_wr = usq.entries();
                let rq = match urq {
                    Some(r) => {
                        caps.max_recv_wr = r.entries();
                        RecvQueue::User(UserRecv { ring: r, head: 0 })
                    }
                    None => RecvQueue::Kernel(RecvRing::new(1)?),
                };
                (SendQueue::user(usq)?, rq)
            }
            None => (
                SendQueue::kernel(caps.max_send_wr as usize)?,
                RecvQueue::Kernel(RecvRing::new(caps.max_recv_wr.max(1))?),
            ),
        };
        let caps = *caps;
        let peer_gone = Deadline::new()?;
        Arc::pin_init(
            pin_init!(Self {
                dev: dev.clone(),
                ib: init.ib,
                num: AtomicU32::new(0),
                published: AtomicBool::new(false),
                pd: init.pd,
                scq: init.scq,
                rcq: init.rcq,
                srq: init.srq,
                sig_all: init.sig_all,
                caps,
                owner: init.owner,
                access: AtomicU32::new(0),
                iwcm_stream: AtomicBool::new(true),
                peer_gone,
                peer_gone_armed: AtomicBool::new(false),
                // An RNIC's QP starts in INIT (as siw's; what pyverbs and
                // iWARP consumers expect): receives may be posted at once.
                inner <- crate::new_irq_spinlock!(
                    Inner {
                        state: QpState::Init,
                        ord: 0,
                        ird: 0,
                        sq,
                        conn: None,
                        destroying: false,
                        path: PathAttrs::default(),
                        oob: None,
                        oob_gen: 0,
                    },
                    "rsiw_qp"
                ),
                rq <- crate::new_irq_spinlock!(rq, "rsiw_qp_rq"),
                cm_refs <- crate::new_irq_spinlock!(0, "rsiw_qp_cm_refs"),
                cm_released <- new_condvar!("rsiw_qp_cm_released"),
            }),
            GFP_KERNEL,
        )
    }

    /// QP number.
    pub(crate) fn num(&self) -> u32 {
        self.num.load(Ordering::Acquire)
    }

    /// Creation is complete: the `ib_qp` holds the QP (`create_qp` stored
    /// it, so the iw_cm's `iw_add_ref`/`iw_rem_ref` find it and `destroy_qp`
    /// waits for them) and lookups by number may find it from now on. A QP
    /// found by number before that (siw's 2026 fix of the same class) could
    /// be connected while its creation still fails, and the `ib_qp` the
    /// iw_cm took would be freed under it; a reference taken then would not
    /// be counted, so the destroy would not wait for it.
    pub(crate) fn publish(&self) {
        self.published.store(true, Ordering::Release);
    }

    /// Creation is complete (`publish`).
    pub(crate) fn is_published(&self) -> bool {
        self.published.load(Ordering::Acquire)
    }

    /// Protection domain number.
    pub(crate) fn pd(&self) -> u32 {
        self.pd
    }

    /// The device.
    pub(crate) fn dev(&self) -> &Arc<Device> {
        &self.dev
    }

    /// Its `ib_qp` (for iw_cm's `get_qp` and completions).
    pub(crate) fn ib(&self) -> IbQpRef {
        self.ib
    }

    /// Current state.
    pub(crate) fn state(&self) -> QpState {
        self.inner.lock().state
    }

    /// Outbound Read/Atomic limit (`max_rd_atomic`).
    #[allow(dead_code)] // contract for the engine (interfaces: ORD/IRD, QP rights)
    pub(crate) fn ord(&self) -> u32 {
        self.inner.lock().ord
    }

    /// Inbound Read/Atomic limit (`max_dest_rd_atomic`).
    #[allow(dead_code)] // contract for the engine (interfaces: ORD/IRD, QP rights)
    pub(crate) fn ird(&self) -> u32 {
        self.inner.lock().ird
    }

    /// May the peer do an operation that needs `need` of the QP's remote
    /// rights (`IB_ACCESS_REMOTE_WRITE`/`READ`/`ATOMIC`, IBA 10.2.4: set by
    /// `modify_qp`)? RX asks once per message, without a lock.
    ///
    /// iWARP differs for Atomics: the iw_cm moves a QP to RTR with remote
    /// read and write, never remote atomic (it has no Atomics), where the
    /// IB CM enables remote atomic together with remote read when it grants
    /// responder resources. A stream the iw_cm set up follows the IB CM's
    /// rule, so Atomics over rdma_cm keep working on a QP that allows
    /// remote reads.
    pub(crate) fn remote_allowed(&self, need: Access, via_iwcm: bool) -> bool {
        let have = Access(self.access.load(Ordering::Relaxed));
        let via_iwcm = via_iwcm && self.iwcm_stream.load(Ordering::Relaxed);
        if need == Access::REMOTE_ATOMIC && via_iwcm {
            return have.contains(Access::REMOTE_ATOMIC) || have.contains(Access::REMOTE_READ);
        }
        have.contains(need)
    }

    /// Granted sizes.
    pub(crate) fn caps(&self) -> QpCaps {
        self.caps
    }

    /// True if every successful send completes (`IB_SIGNAL_ALL_WR`).
    pub(crate) fn sig_all(&self) -> bool {
        self.sig_all
    }

    /// `modify_qp` (process context; may sleep when leaving a connection).
    pub(crate) fn modify(&self, m: &QpModify) -> Result {
        let (conn, to, from, attempt) = {
            let mut inner = self.inner.lock();
            if let Some(cur) = m.cur_state {
                if cur != inner.state {
                    return Err(EINVAL);
                }
            }
            let from = inner.state;
            let to = m.state.unwrap_or(from);
            if from == QpState::Error && to == QpState::Sqd {
                // librdmacm's rdma_disconnect moves an iWARP QP to SQD (the
                // RDMAC verbs' Closing) before it disconnects; after the
                // peer's close the QP is in ERROR already and there is
                // nothing left to close: accepted, the QP stays in ERROR (as
                // siw does; IB has no such transition).
                return Ok(());
            }
            let target = self.arming(&inner, from, to, &m.path)?;
            let armed = inner.oob.is_some() || target.is_some();
            check_transition(from, to, inner.conn.is_some() || armed)?;
            if m.ord.is_some_and(|v| v > MAX_RD_ATOMIC) || m.ird.is_some_and(|v| v > MAX_RD_ATOMIC)
            {
                return Err(EINVAL);
            }
            if let Some(a) = m.access {
                self.access.store(a, Ordering::Relaxed);
            }
            if let Some(v) = m.ord {
                inner.ord = v;
            }
            if let Some(v) = m.ird {
                inner.ird = v;
            }
            self.path_apply(&mut inner, &m.path, target);
            let attempt = match to {
                QpState::Reset | QpState::Error => Self::disarm(&mut inner),
                _ => None,
            };
            if to == QpState::Reset {
                inner.sq.clear();
            }
            if to != QpState::Error {
                inner.state = to;
            }
            (inner.conn.clone(), to, from, attempt)
        };
        if let Some(a) = attempt {
            a.cancel();
        }
        let conn = if from != to { conn } else { None };
        match to {
            QpState::Error => {
                if let Some(c) = &conn {
                    c.close(true);
                }
                self.set_error();
            }
            QpState::Sqd => {
                if let Some(c) = &conn {
                    c.close(false);
                    self.bound_close();
                }
            }
            QpState::Reset => {
                if let Some(c) = conn {
                    c.close(true);
                    c.quiesce();
                    self.unbind_conn(&c);
                }
                self.peer_gone_cancel();
                self.rq_reset();
            }
            // A stream bound at RTR (a QP connection from `modify_qp`)
            // sends what is posted from then on (see `sq_active`); RTS
            // changes nothing for it but a kick costs nothing.
            QpState::Rts => {
                if let Some(c) = conn {
                    c.kick();
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The stream closed under the QP (`engine::QpPort::peer_closed`, softirq).
    fn peer_closed(self: &Arc<Self>, abortive: bool) {
        if abortive || self.iwcm_stream.load(Ordering::Relaxed) {
            return self.stream_failed();
        }
        if !self.peer_gone_armed.swap(true, Ordering::AcqRel) {
            self.peer_gone
                .arm_unarmed(self.clone(), PEER_CLOSE_GRACE_MS);
        }
    }

    /// After our graceful close (SQD) of an iw_cm stream, the peer has
    /// `mpa_timeout_ms` to close its side; its FIN moves the QP to ERROR
    /// (`peer_closed`). A peer that never answers, or whose FIN was lost
    /// (`tcp_send_fin` gives up when its allocation fails), would otherwise
    /// keep the QP's WQEs unflushed until `destroy_qp`: the deadline moves
    /// the QP to ERROR (siw does so when it closes).
    fn bound_close(&self) {
        if !self.iwcm_stream.load(Ordering::Relaxed) {
            return;
        }
        let Some(me) = self.dev.qp_lookup(self.num()) else {
            return;
        };
        if !self.peer_gone_armed.swap(true, Ordering::AcqRel) {
            self.peer_gone
                .arm_unarmed(me, crate::kapi::params::cm().timeout_ms);
        }
    }

    /// Stops a pending [`PEER_CLOSE_GRACE_MS`] (process context; the stream
    /// is quiesced, so nothing arms it again meanwhile).
    fn peer_gone_cancel(&self) {
        self.peer_gone.cancel();
        self.peer_gone_armed.store(false, Ordering::Release);
    }

    /// Moves the QP to ERROR: the engine flushes the WQEs it owns
    /// (`Conn::flush`), then every posted WQE completes with
    /// `IB_WC_WR_FLUSH_ERR`. Any context; never called with rsiw locks held.
    pub(crate) fn set_error(&self) {
        self.enter_error(false);
    }

    /// The QP's stream ended under it: ERROR, unless the consumer moved the
    /// QP to RESET (or on to INIT) meanwhile. Its own modify to RESET closes
    /// the stream abortively, and the socket reports that close while the
    /// modify quiesces the engine; IB leaves RESET only at the consumer's
    /// word, so the QP must not turn up in ERROR (RESET→INIT then failed
    /// with `EINVAL`, and a QP connection could not be set up again).
    pub(super) fn stream_failed(&self) {
        self.enter_error(true);
    }

    fn enter_error(&self, unless_reset: bool) {
        let (was, conn) = {
            let mut inner = self.inner.lock();
            if unless_reset && matches!(inner.state, QpState::Reset | QpState::Init) {
                return;
            }
            let was = core::mem::replace(&mut inner.state, QpState::Error);
            (was, inner.conn.clone())
        };
        if let Some(c) = conn {
            c.flush();
        }
        // After the engine stopped RX: nothing is placed into a flushed
        // WQE's buffers.
        self.inner.lock().sq.flush_taken();
        self.sq_reap();
        self.flush_posted();
        // IB spec 11.6.3: an SRQ QP reports when no receive WQE of it is left.
        if self.srq.is_some() && was != QpState::Error {
            self.ib.event(QpEvent::LastWqeReached);
        }
    }

    /// Completes every posted (not engine-owned) WQE with a flush status;
    /// one WQE per lock hold, as CQ pushes run the consumer's handler. What
    /// is flushed is what was posted when the flush began (read once from a
    /// user ring's producer index): the loops are bounded by the queue
    /// sizes whatever a user thread writes meanwhile.
    ///
    /// While a taken WQE is held (zero-copy pages TCP may still read) the
    /// SQ's posted WQEs wait: they would complete before it. The last
    /// unhold flushes them (`sq_hold`).
    pub(super) fn flush_posted(&self) {
        let mut sq_left = {
            let inner = self.inner.lock();
            if inner.sq.any_held() {
                0
            } else {
                inner.sq.flush_snapshot()
            }
        };
        while sq_left > 0 {
            sq_left -= 1;
            let w = {
                let mut inner = self.inner.lock();
                let w = match inner.sq.next(false) {
                    Next::Empty => break,
                    Next::Wqe(w) => (w.wr_id, w.op),
                    Next::Bad(b) => (b.wr_id, SendOp::Send),
                };
                inner.sq.drop_next();
                w
            };
            self.sq_flush_one(w.0, w.1);
        }
        if self.srq.is_none() {
            let mut rq_left = self.rq.lock().len();
            while rq_left > 0 {
                rq_left -= 1;
                let wqe = match self.rq.lock().pop() {
                    Ok(Some(w)) => w,
                    Ok(None) => break,
                    Err(bad) => bad_recv(&bad),
                };
                self.rq_complete(wqe.wr_id, WcStatus::WrFlushErr, 0, WcFlags::NONE, 0, false);
            }
        }
    }

    /// Reports an asynchronous event to the consumer (e.g. `Fatal` with a
    /// Terminate, `LastWqeReached` for SRQ QPs going to ERROR).
    pub(crate) fn event(&self, ev: QpEvent) {
        self.ib.event(ev);
    }

    /// `destroy_qp` (process context, may sleep): stops the engine, takes
    /// the QP out of the device table, then waits until the iw_cm has
    /// dropped its references (it does once the CM reported the close),
    /// since the core frees the `ib_qp` on return.
    pub(crate) fn destroy(&self) {
        // From here no connection can be bound; the one there is, is ours
        // to stop.
        let (conn, attempt) = {
            let mut inner = self.inner.lock();
            inner.destroying = true;
            (inner.conn.clone(), Self::disarm(&mut inner))
        };
        // After this the CM's attempt no longer touches the QP.
        if let Some(a) = attempt {
            a.cancel();
        }
        if let Some(c) = &conn {
            if self.iwcm_stream.load(Ordering::Relaxed) {
                c.close(true);
                c.quiesce();
            } else {
                // No CM disconnects a stream from `modify_qp` first: what
                // the peer was told is complete (a Send's completion means
                // it reached the stream) must still reach it, then the FIN.
                c.quiesce_graceful(DESTROY_LINGER_MS);
            }
        }
        self.peer_gone_cancel();
        let old = {
            let mut inner = self.inner.lock();
            inner.state = QpState::Error;
            inner.sq.clear();
            inner.conn.take()
        };
        drop(old);
        drop(conn);
        let removed = self.dev.qp_remove(self.num());
        self.dev.put_qp();
        drop(removed);
        let mut refs = self.cm_refs.lock();
        while *refs != 0 {
            self.cm_released.wait(&mut refs);
        }
    }

    /// The provider's SQ doorbell: new SQEs on the QP's ring. RTS: the
    /// engine's TX looks at the ring; ERROR: the new SQEs are flushed; before
    /// RTS they wait in the ring for the connection. Process context of a
    /// uverbs ioctl, which may sleep: in RTS the engine transmits right here
    /// (`Conn::kick_direct`).
    pub(crate) fn doorbell(&self) -> Result {
        let (active, state, conn) = {
            let inner = self.inner.lock();
            (Self::sq_active(&inner), inner.state, inner.conn.clone())
        };
        if active {
            if let Some(c) = conn {
                c.kick_direct();
            }
        } else if state == QpState::Error {
            self.set_error();
        }
        Ok(())
    }

    /// Whether TX takes the SQ's work: in RTS and SQD (which stops only
    /// between messages, the engine's business), and in RTR once a stream
    /// is bound. Only a QP connection from `modify_qp` has a stream at RTR
    /// (the iw_cm binds at RTS). IB leaves the SQ alone until RTS; on an
    /// iWARP stream both directions are up together, and perftest relies on
    /// it: on an iWARP device `ib_send_bw` paces its Sends with credits,
    /// RDMA Writes that its server posts from QPs it leaves in RTR
    /// (Documentation/qpconn.md).
    fn sq_active(inner: &Inner) -> bool {
        match inner.state {
            QpState::Rts | QpState::Sqd => true,
            QpState::Rtr => inner.conn.is_some(),
            _ => false,
        }
    }

    /// Runs `f` on a user QP's rings (the create response needs them).
    pub(crate) fn with_user<R>(&self, f: impl FnOnce(&UserSq, Option<&UserRq>) -> R) -> Option<R> {
        let inner = self.inner.lock();
        let u = inner.sq.user_ring()?;
        let rq = self.rq.lock();
        Some(f(u, if self.srq.is_some() { None } else { rq.user() }))
    }

    /// Attributes for `query_qp`.
    pub(crate) fn query(&self) -> (QpState, u32, u32, u32) {
        let inner = self.inner.lock();
        (
            inner.state,
            inner.ord,
            inner.ird,
            self.access.load(Ordering::Relaxed),
        )
    }
}

impl Expire for Qp {
    const KIND: u32 = 1;

    /// [`PEER_CLOSE_GRACE_MS`] passed after the peer's close of a stream
    /// from `modify_qp`, or `mpa_timeout_ms` after our own graceful close
    /// without the peer's (`bound_close`; the QP is still in SQD then: its
    /// WQEs are flushed now, the stream goes when the QP is destroyed).
    /// Softirq.
    fn deadline_passed(self: Arc<Self>) {
        if self.iwcm_stream.load(Ordering::Relaxed) {
            // The peer's FIN came in time (the QP is in ERROR) or the
            // consumer moved on: nothing to do.
            if self.inner.lock().state != QpState::Sqd {
                return;
            }
            pr_info!(
                "qp {}: the peer did not close its side within mpa_timeout_ms of our close: QP to ERROR\n",
                self.num()
            );
        }
        self.stream_failed();
    }
}
