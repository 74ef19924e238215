// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! QP connections from `modify_qp` as one endpoint sees them: the active
//! side's TCP connect and MPA Request (retried while the peer's listener is
//! not there yet, within `qp_conn_timeout_ms`), the passive side's wait, and
//! a request on a device's QP-connection listener matched to exactly the QP
//! armed for its peer, QP number and PSNs (or parked until that QP is armed,
//! or refused). The MPA exchange is RFC 5044 §7.1 with RFC 6581 (always
//! peer-to-peer: the initiator sends the RTR); the private data is
//! `proto::qpconn`.

use super::{initiator::connect_status, *};
use crate::{
    kapi::deadline::now_ms,
    objects::qp::{Attempt, Claim, Job, Qp},
    proto::qpconn::{ConnData, Given, Mismatch},
};
use kernel::str::CStr;

/// Wait before connecting again after the peer's listener refused or reset.
const BACKOFF_MS: u32 = 200;

/// How long a QP in RTR waits for its SQ PSN (its move to RTS) before it
/// connects without one, and how often it looks: a consumer that goes on to
/// RTS does so at once (`ibv_rc_pingpong`, perftest's clients), and a Request
/// with the SQ PSN leaves the RQ PSN for the Reply to prove.
const RTS_GRACE_MS: i64 = 1000;
const RTS_POLL_MS: u32 = 20;

/// The arming an attempt works for.
pub(crate) struct QpAttempt {
    qp: Arc<Qp>,
    job: Job,
    /// When the attempt gives up (`now_ms`).
    until_ms: i64,
    /// Until when the active side waits for its SQ PSN.
    rts_by_ms: i64,
}

/// The QP's handle on its attempt (`qp::Attempt`).
pub(crate) struct AttemptRef(pub(crate) Arc<Endpoint>);

impl Attempt for AttemptRef {
    fn cancel(&self) {
        self.0.qp_cancel();
    }
}

impl Endpoint {
    /// The attempt for `qp`'s arming `job`: the active side's connect (the
    /// caller schedules it) or the passive side's wait, whose deadline is
    /// armed here.
    pub(crate) fn start_qp(qp: &Arc<Qp>, job: Job) -> Result<Arc<Self>> {
        let timeout = params::cm().qp_timeout_ms;
        let phase = if job.target.active {
            Phase::QpConnect
        } else {
            Phase::QpWait
        };
        let ep = Self::new(phase, None, qp.dev().counters())?;
        let attempt = KBox::new(
            QpAttempt {
                qp: qp.clone(),
                job,
                until_ms: now_ms() + i64::from(timeout),
                rts_by_ms: now_ms() + RTS_GRACE_MS,
            },
            GFP_KERNEL,
        )?;
        {
            let mut inner = ep.inner.lock();
            inner.qp = Some(attempt);
            if !job.target.active {
                ep.new_deadline(timeout);
            }
        }
        Ok(ep)
    }

    /// Queues the work item (the active side's first connect).
    pub(crate) fn kick_qp(self: &Arc<Self>) {
        self.schedule();
    }

    /// `Attempt::cancel`: from now on the endpoint does not touch the QP (the
    /// phase lock excludes a work item that does); a connect in progress is
    /// reset by the work item.
    fn qp_cancel(self: &Arc<Self>) {
        let gone = {
            let mut inner = self.inner.lock();
            self.end_deadline();
            inner.qp.take()
        };
        drop(gone);
        self.events.fetch_or(ABORT, Ordering::AcqRel);
        self.schedule();
    }

    /// A QP was armed: a parked request looks again.
    pub(crate) fn rearm(self: &Arc<Self>) {
        self.events.fetch_or(REARM, Ordering::AcqRel);
        self.schedule();
    }

    /// Gives up the attempt (with `inner` held): the QP goes to ERROR with an
    /// async event, unless the attempt was cancelled.
    fn qp_give_up_locked(&self, inner: &mut Inner) {
        self.end_deadline();
        inner.phase = Phase::Closed;
        if let Some(a) = inner.qp.take() {
            a.qp.oob_failed(a.job.gen);
        }
    }

    fn qp_give_up(&self) {
        let mut inner = self.inner.lock();
        self.qp_give_up_locked(&mut inner);
    }

    /// Work, active side: starts the TCP connect to the peer's listener.
    pub(super) fn qp_connect(self: &Arc<Self>) {
        let (job, qp, rts_by) = {
            let mut inner = self.inner.lock();
            match &inner.qp {
                Some(a) if !self.event(ABORT) => (a.job, a.qp.clone(), a.rts_by_ms),
                _ => {
                    inner.phase = Phase::Closed;
                    return;
                }
            }
        };
        let p = params::cm();
        let peer = InAddr {
            port: p.qp_port,
            ..job.target.peer
        };
        // Always peer-to-peer: either side may have work posted first.
        let local = qp_local(
            &job,
            Some(RtrSet {
                send: false,
                write: true,
                read: true,
            }),
        );
        // What the QP was given now: its SQ PSN if it reached RTS by now.
        let Some(given) = qp.oob_given(job.gen) else {
            self.inner.lock().phase = Phase::Closed;
            return;
        };
        if given.sq_psn.is_none() && now_ms() < rts_by {
            let mut inner = self.inner.lock();
            inner.phase = Phase::QpBackoff;
            self.new_deadline(RTS_POLL_MS);
            return;
        }
        let mut private_data = KVec::new();
        let sock = private_data
            .extend_from_slice(&given.request().emit(), GFP_KERNEL)
            .map_err(Error::from)
            .and_then(|()| Socket::connect_addr(&job.target.local, &peer));
        let sock = match sock {
            Ok(s) => s,
            Err(e) => return self.connect_failed(connect_status(SetupError::Io(e)), &[]),
        };
        sock.set_timeout(p.timeout_ms);
        let init = KBox::new(
            Init {
                qp: QpLink::armed(qp, job.gen),
                private_data,
                local,
                conn: Watched::new(sock, self),
                reply: FrameBuf::new(),
            },
            GFP_KERNEL,
        );
        let Ok(init) = init else {
            return self.qp_give_up();
        };
        let mut inner = self.inner.lock();
        let left = inner.qp.as_ref().map_or(0, |a| a.until_ms - now_ms());
        self.new_deadline(
            p.timeout_ms
                .min(u32::try_from(left.max(1)).unwrap_or(u32::MAX)),
        );
        inner.phase = Phase::Connecting(init);
        drop(inner);
        self.schedule();
    }

    /// Active side: the connect or the Request failed before a Reply (the
    /// peer's listener is not up yet, or its QP was not armed before the
    /// Reply deadline): connect again after a pause while time is left, else
    /// give up. False if this endpoint is not a QP attempt.
    pub(super) fn qp_connect_failed(self: &Arc<Self>, status: i32) -> bool {
        let mut inner = self.inner.lock();
        let Some(a) = &inner.qp else {
            return false;
        };
        let left = a.until_ms - now_ms();
        if status != errno::canceled().to_errno() && left > i64::from(BACKOFF_MS) {
            inner.phase = Phase::QpBackoff;
            self.new_deadline(BACKOFF_MS);
        } else {
            self.qp_give_up_locked(&mut inner);
        }
        true
    }

    /// Work, active side: the pause is over.
    pub(super) fn qp_backoff(self: &Arc<Self>) {
        if self.event(ABORT) {
            return self.qp_give_up();
        }
        if !self.event(EXPIRED) {
            self.inner.lock().phase = Phase::QpBackoff;
            return;
        }
        self.end_deadline_locked();
        self.qp_connect();
    }

    /// Work, passive side: the armed QP got no stream in time.
    pub(super) fn qp_wait(self: &Arc<Self>) {
        let mut inner = self.inner.lock();
        if inner.qp.is_none() || self.event(ABORT) {
            self.end_deadline();
            inner.phase = Phase::Closed;
            return;
        }
        if !self.event(EXPIRED) {
            inner.phase = Phase::QpWait;
            return;
        }
        self.qp_give_up_locked(&mut inner);
    }

    /// Active side: the Reply is whole. It must accept, and name the QP we
    /// armed for with the PSNs we were given; then the engine starts.
    pub(super) fn qp_reply(
        self: &Arc<Self>,
        qp: QpLink,
        local: &LocalParams,
        private_data: &[u8],
        sock: Socket,
        reply: &FrameBuf,
    ) {
        let req = mpa::request(local, private_data);
        let rep = match FrameRepr::parse_bytes(reply.bytes(), FrameKind::Reply) {
            Ok(r) => r,
            Err(_) => {
                sock.shutdown(true);
                return self.qp_give_up();
            }
        };
        let params = match mpa::complete(local, &req, &rep) {
            Ok(p) => p,
            Err(e) => {
                sock.warn(warn::QP, c_str!("QP connection refused by the peer"));
                match e.terminate_code() {
                    Some(code) => {
                        let _ = mpa_io::write_terminate(&sock, req.crc || rep.crc, code);
                        sock.shutdown(false);
                    }
                    None => sock.shutdown(e != MpaError::Rejected),
                }
                return self.qp_give_up();
            }
        };
        // Against what our QP was given (now), not against our Request.
        let checked = match (qp.oob_given(), ConnData::parse(rep.private_data)) {
            (Some(g), Ok(theirs)) => g.check_reply(&theirs),
            (None, _) => Err(Mismatch::Qpn),
            (_, Err(_)) => Err(Mismatch::Missing),
        };
        if let Err(why) = checked {
            sock.warn(
                warn::QP,
                match why {
                    Mismatch::Qpn => c_str!("QP connection: the Reply names another QP: reset"),
                    Mismatch::Psn => c_str!("QP connection: the Reply proves another PSN: reset"),
                    Mismatch::Missing => {
                        c_str!("QP connection: the Reply proves no SQ PSN: reset")
                    }
                },
            );
            sock.shutdown(true);
            return self.qp_give_up();
        }
        let setup = Setup {
            params,
            initiator: true,
            mss: sock.mss(),
        };
        let stream = match self.stream_owner().and_then(|o| Stream::new(sock, o)) {
            Ok(s) => s,
            Err(_) => return self.qp_give_up(),
        };
        match self.establish_qp(stream, &qp, &setup, true) {
            Ok(attempt) => drop(attempt),
            Err(_) => self.qp_give_up(),
        }
    }

    /// Starts the engine on an armed QP with the phase lock held (as
    /// `establish`). `attempt`: this endpoint is the QP's attempt and must
    /// not have been cancelled. Returns the QP's attempt for the caller to
    /// cancel (or drop, if it is this endpoint) after the lock.
    fn establish_qp(
        &self,
        stream: Arc<Stream>,
        qp: &QpLink,
        setup: &Setup,
        attempt: bool,
    ) -> Result<Option<Arc<dyn Attempt>>> {
        let mut inner = self.inner.lock();
        let started = if attempt && inner.qp.is_none() {
            Err(errno::canceled())
        } else {
            inner.phase = Phase::Established {
                stream: stream.clone(),
            };
            qp_link::start(qp, stream.clone(), setup)
        };
        match started {
            Ok(a) => {
                // The stream's engine holds the QP from here.
                inner.qp = None;
                Ok(a)
            }
            Err(e) => {
                inner.phase = Phase::Closed;
                drop(inner);
                stream.detach();
                stream.shutdown(true);
                Err(e)
            }
        }
    }

    /// Passive side: a whole Request on a device's QP-connection listener.
    /// `first`: just read (a parked one keeps its deadline).
    pub(super) fn qp_request(
        self: &Arc<Self>,
        sock: Socket,
        req: KBox<FrameBuf>,
        listener: Arc<Listener>,
        first: bool,
    ) {
        let Some(dev) = listener.qp_device() else {
            // The listener stopped.
            return self.qp_reset(sock, &listener);
        };
        // RFC 5044 §7.1.3: nothing may come before the initiator has our Reply.
        if sock.readable() {
            sock.warn(
                warn::EARLY,
                c_str!("bytes after the MPA Request, before the Reply: reset"),
            );
            return self.qp_reset(sock, &listener);
        }
        let Ok(r) = FrameRepr::parse_bytes(req.bytes(), FrameKind::Request) else {
            return self.qp_reset(sock, &listener);
        };
        let rev = Some(r.rev);
        let data = match (r.ird_ord, ConnData::parse(r.private_data)) {
            (Some(_), Ok(d)) => d,
            _ => {
                let why = c_str!("QP connection refused: not an rsiw QP connection request");
                return self.qp_refuse(sock, &listener, rev, why);
            }
        };
        let Some(qp) = dev.qp_lookup(data.dst_qpn) else {
            let why = c_str!("QP connection refused: no such QP");
            return self.qp_refuse(sock, &listener, rev, why);
        };
        let from = match sock.peer() {
            Ok(a) => a.ip,
            Err(_) => return self.qp_reset(sock, &listener),
        };
        match qp.oob_claim(&from, &data) {
            Claim::Refused(why) => self.qp_refuse(sock, &listener, rev, why),
            Claim::Match(job, given) => self.qp_accept(sock, &req, listener, qp, job, given),
            Claim::NotArmed | Claim::NotYet => self.park(sock, req, listener, first),
            Claim::Reverse(job, wait) => {
                // Our QP connects instead; this request waits (refused
                // once the QP has its stream, or when its time is up).
                self.park(sock, req, listener, first);
                if let Some(w) = wait {
                    w.cancel();
                }
                crate::cm::qpconn::begin(&qp, job);
            }
        }
    }

    /// Parks a request until a QP is armed or moves to RTS (`rearm`), or
    /// `qp_conn_timeout_ms` after it was first read.
    fn park(
        self: &Arc<Self>,
        sock: Socket,
        req: KBox<FrameBuf>,
        listener: Arc<Listener>,
        first: bool,
    ) {
        let mut inner = self.inner.lock();
        if first {
            self.new_deadline(params::cm().qp_timeout_ms);
        }
        inner.phase = Phase::Parked {
            sock,
            req,
            listener,
        };
    }

    /// Work: a parked request (its QP was armed, the deadline passed, or the
    /// listener stopped).
    pub(super) fn parked(
        self: &Arc<Self>,
        sock: Socket,
        req: KBox<FrameBuf>,
        listener: Arc<Listener>,
    ) {
        if self.event(ABORT) {
            self.end_deadline_locked();
            return self.qp_reset(sock, &listener);
        }
        if self.event(EXPIRED) {
            self.end_deadline_locked();
            let rev = FrameRepr::parse_bytes(req.bytes(), FrameKind::Request)
                .map(|r| r.rev)
                .ok();
            let why = c_str!("QP connection refused: no QP armed for it within qp_conn_timeout_ms");
            return self.qp_refuse(sock, &listener, rev, why);
        }
        if self.events.fetch_and(!REARM, Ordering::AcqRel) & REARM != 0 {
            return self.qp_request(sock, req, listener, false);
        }
        self.inner.lock().phase = Phase::Parked {
            sock,
            req,
            listener,
        };
    }

    /// Passive side: `qp` is armed for this request: the Reply (our block),
    /// then the engine; the QP's wait is over.
    fn qp_accept(
        self: &Arc<Self>,
        sock: Socket,
        req: &FrameBuf,
        listener: Arc<Listener>,
        qp: Arc<Qp>,
        job: Job,
        given: Given,
    ) {
        self.end_deadline_locked();
        let local = qp_local(&job, None);
        let ours = given.reply().emit();
        let answered = FrameRepr::parse_bytes(req.bytes(), FrameKind::Request)
            .map_err(SetupError::from)
            .and_then(|r| Ok(mpa::respond(&local, &r, &ours)?))
            .and_then(|(reply, params)| mpa_io::write(&sock, &reply).map(|()| params));
        let params = match answered {
            Ok(p) => p,
            Err(_) => {
                qp.oob_unclaim(job.gen);
                return self.qp_reset(sock, &listener);
            }
        };
        listener.forget(self);
        let setup = Setup {
            params,
            initiator: false,
            mss: sock.mss(),
        };
        let link = QpLink::armed(qp.clone(), job.gen);
        let started = self
            .stream_owner()
            .and_then(|o| Stream::new(sock, o))
            .and_then(|s| self.establish_qp(s, &link, &setup, false));
        match started {
            Ok(Some(wait)) => wait.cancel(),
            Ok(None) => {}
            Err(_) => qp.oob_unclaim(job.gen),
        }
    }

    /// Refuses a QP connection request with a Reject Reply (RFC 5044 §7.1.1)
    /// and a rate-limited line saying why; nothing reaches a QP.
    fn qp_refuse(&self, sock: Socket, listener: &Arc<Listener>, rev: Option<Revision>, why: &CStr) {
        sock.warn(warn::QP, why);
        self.close_request();
        listener.forget(self);
        let local = LocalParams {
            crc: params::cm().crc,
            ..LocalParams::default()
        };
        let _ = mpa_io::write(&sock, &mpa::reject_reply(&local, rev, &[]));
        sock.shutdown(false);
    }

    /// A request's setup is over: its phase closes and its deadline (a parked
    /// request's, which holds the endpoint) ends with it.
    fn close_request(&self) {
        let mut inner = self.inner.lock();
        self.end_deadline();
        inner.phase = Phase::Closed;
    }

    /// Resets a request's connection without a Reply.
    fn qp_reset(&self, sock: Socket, listener: &Arc<Listener>) {
        self.close_request();
        listener.forget(self);
        sock.shutdown(true);
    }
}

/// Our MPA parameters for a QP connection (either side): MPA v2, CRC and
/// large FPDUs as the module parameters say, the armed QP's IRD/ORD, and
/// `p2p` (the initiator's RTR offer).
fn qp_local(job: &Job, p2p: Option<RtrSet>) -> LocalParams {
    our_params(depth(job.ird), depth(job.ord), p2p)
}
