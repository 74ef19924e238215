// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! QPs connected the InfiniBand way: the consumer exchanges QP numbers, PSNs
//! and GIDs out of band and moves the QP INIT→RTR→RTS with an address vector
//! (IBA 11.2.4.2, as `ibv_rc_pingpong` and perftest without `-R` do). The
//! path attributes are kept for `query_qp`; a GRH naming a peer's IP GID and a
//! destination QP *arms* the QP, and the CM then sets up the TCP + MPA stream
//! (`cm::qpconn`). rsiw's rule, not an RFC's: iWARP connects through a CM.

use super::{Inner, Qp, QpState};
use crate::{
    engine::Conn,
    kapi::{av::Av, sock::InAddr},
    proto::qpconn::{ConnData, Given, Mismatch, Verdict, MASK_24},
};
use core::sync::atomic::Ordering;
use kernel::{c_str, prelude::*, str::CStr, sync::Arc};

/// The IB path attributes a `modify_qp` sets (absent: not in the mask).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PathMod {
    /// `IB_QP_AV`.
    pub(crate) av: Option<Av>,
    /// `IB_QP_DEST_QPN`.
    pub(crate) dest_qpn: Option<u32>,
    /// `IB_QP_RQ_PSN`.
    pub(crate) rq_psn: Option<u32>,
    /// `IB_QP_SQ_PSN`.
    pub(crate) sq_psn: Option<u32>,
    /// `IB_QP_PATH_MTU` (an `ib_mtu`).
    pub(crate) path_mtu: Option<u32>,
    /// `IB_QP_TIMEOUT`.
    pub(crate) timeout: Option<u8>,
    /// `IB_QP_RETRY_CNT`.
    pub(crate) retry_cnt: Option<u8>,
    /// `IB_QP_RNR_RETRY`.
    pub(crate) rnr_retry: Option<u8>,
    /// `IB_QP_MIN_RNR_TIMER`.
    pub(crate) min_rnr_timer: Option<u8>,
    /// `IB_QP_PKEY_INDEX`.
    pub(crate) pkey_index: Option<u16>,
    /// `IB_QP_PORT`.
    pub(crate) port: Option<u8>,
    /// `IB_QP_QKEY`.
    pub(crate) qkey: Option<u32>,
}

/// What the path attributes are now (`query_qp` returns them as set; iWARP
/// uses none of them in the data path: TCP retransmits, there is no RNR).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PathAttrs {
    pub(crate) av: Av,
    pub(crate) dest_qpn: u32,
    pub(crate) rq_psn: u32,
    pub(crate) sq_psn: u32,
    /// `sq_psn` was set (the QP reached RTS with one).
    pub(crate) sq_psn_set: bool,
    pub(crate) path_mtu: u32,
    pub(crate) timeout: u8,
    pub(crate) retry_cnt: u8,
    pub(crate) rnr_retry: u8,
    pub(crate) min_rnr_timer: u8,
    pub(crate) pkey_index: u16,
    pub(crate) port: u8,
    pub(crate) qkey: u32,
}

impl Default for PathAttrs {
    fn default() -> Self {
        Self {
            av: Av::default(),
            dest_qpn: 0,
            rq_psn: 0,
            sq_psn: 0,
            sq_psn_set: false,
            // IB_MTU_4096, what query_qp reported before paths were kept.
            path_mtu: 5,
            timeout: 0,
            retry_cnt: 0,
            rnr_retry: 0,
            min_rnr_timer: 0,
            pkey_index: 0,
            port: 1,
            qkey: 0,
        }
    }
}

impl PathAttrs {
    fn apply(&mut self, m: &PathMod) {
        let mask = |v: u32| v & MASK_24;
        if let Some(v) = m.av {
            self.av = Av { sgid: None, ..v };
        }
        set(&mut self.dest_qpn, m.dest_qpn.map(mask));
        set(&mut self.rq_psn, m.rq_psn.map(mask));
        if let Some(v) = m.sq_psn {
            self.sq_psn = mask(v);
            self.sq_psn_set = true;
        }
        set(&mut self.path_mtu, m.path_mtu);
        set(&mut self.timeout, m.timeout);
        set(&mut self.retry_cnt, m.retry_cnt);
        set(&mut self.rnr_retry, m.rnr_retry);
        set(&mut self.min_rnr_timer, m.min_rnr_timer);
        set(&mut self.pkey_index, m.pkey_index);
        set(&mut self.port, m.port);
        set(&mut self.qkey, m.qkey);
    }
}

fn set<T>(to: &mut T, v: Option<T>) {
    if let Some(v) = v {
        *to = v;
    }
}

/// The peer a QP was armed for.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Target {
    /// Our address (the GID at `sgid_index`), port 0.
    pub(crate) local: InAddr,
    /// The peer's address (the GRH's `dgid`), port 0: the CM adds its own.
    pub(crate) peer: InAddr,
    /// The peer's QP.
    pub(crate) dest_qpn: u32,
    /// Our side connects (the lower of (address, QPN) of the two; both sides
    /// compute the same, so exactly one connects).
    pub(crate) active: bool,
}

/// The CM's work for one arming (the active side's connect, the passive
/// side's wait): ended when the arming ends.
pub(crate) trait Attempt: Send + Sync {
    /// Stops it; after return it no longer touches the QP. Process context,
    /// no QP lock held.
    fn cancel(&self);
}

/// An armed QP.
pub(crate) struct Oob {
    target: Target,
    gen: u32,
    /// The CM was given the job ([`Qp::oob_job`]).
    begun: bool,
    /// A stream was matched to it (passive) or is being bound.
    claimed: bool,
    /// It was armed to wait but connects itself ([`Claim::Reverse`]): it
    /// takes no request (they wait until its own stream is up).
    reversed: bool,
    attempt: Option<Arc<dyn Attempt>>,
}

/// What the CM needs to connect or wait for one arming.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Job {
    pub(crate) target: Target,
    pub(crate) gen: u32,
    /// ORD/IRD the consumer set (`max_rd_atomic`, `max_dest_rd_atomic`).
    pub(crate) ord: u32,
    pub(crate) ird: u32,
}

/// How a passive QP answers a connection request that names it.
pub(crate) enum Claim {
    /// It is armed for exactly this peer: connect (the arming's generation
    /// and depths, and what the QP was given, for the Reply).
    Match(Job, Given),
    /// Not armed (yet): the request may wait for it.
    NotArmed,
    /// The request proves our SQ PSN, which the QP has not been given yet
    /// (it is in RTR): it may wait for the move to RTS.
    NotYet,
    /// The request is proven, but the QP (in RTR) has no SQ PSN to prove in
    /// a Reply: it now connects itself (the job), the request waits; the
    /// passive side's wait (the attempt) is for the caller to cancel.
    Reverse(Job, Option<Arc<dyn Attempt>>),
    /// Armed for someone else, or connected, or active, or being destroyed.
    Refused(&'static CStr),
}

/// Is `gid` an IP address rsiw can connect to (IPv4-mapped or IPv6; not the
/// MAC-based GID 0, which ends in ten zero octets, nor multicast)?
fn ip_gid(gid: &[u8; 16]) -> bool {
    gid[6..].iter().any(|&b| b != 0) && gid[0] != 0xff
}

/// IPv6 link-local (fe80::/10): needs the interface as its scope.
fn link_local(gid: &[u8; 16]) -> bool {
    gid[0] == 0xfe && gid[1] & 0xc0 == 0x80
}

impl Qp {
    /// The arming a move `from` → `to` with `m` makes, if any (`modify_qp`,
    /// QP lock held). INIT→RTR with an AV: the AV must carry a GRH whose
    /// source and destination GIDs are IP addresses, and a destination QP
    /// must be set; otherwise `EINVAL` (iWARP cannot reach a peer by LID or
    /// MAC). Without an AV nothing is armed (the iw_cm's way).
    pub(super) fn arming(
        &self,
        inner: &Inner,
        from: QpState,
        to: QpState,
        m: &PathMod,
    ) -> Result<Option<Target>> {
        if to != QpState::Rtr || from == QpState::Rtr {
            return Ok(None);
        }
        let Some(av) = m.av else {
            return Ok(None);
        };
        let dest_qpn = m.dest_qpn.unwrap_or(inner.path.dest_qpn) & MASK_24;
        let sgid = av.sgid.ok_or(EINVAL)?;
        if !av.global || m.dest_qpn.is_none() || av.sgid_index == 0 {
            return Err(EINVAL);
        }
        if !ip_gid(&sgid) || !ip_gid(&av.dgid) {
            return Err(EINVAL);
        }
        let scope = if link_local(&av.dgid) {
            av.sgid_ifindex
        } else {
            0
        };
        let local = InAddr {
            ip: sgid,
            port: 0,
            scope,
        };
        let peer = InAddr {
            ip: av.dgid,
            port: 0,
            scope,
        };
        let me = (sgid, self.num());
        let them = (av.dgid, dest_qpn);
        if me == them {
            // One QP cannot be both ends of one TCP connection.
            return Err(EINVAL);
        }
        Ok(Some(Target {
            local,
            peer,
            dest_qpn,
            active: me < them,
        }))
    }

    /// Applies `m`'s path attributes and arms for `target` (QP lock held).
    pub(super) fn path_apply(&self, inner: &mut Inner, m: &PathMod, target: Option<Target>) {
        inner.path.apply(m);
        if let Some(target) = target {
            inner.oob_gen = inner.oob_gen.wrapping_add(1);
            inner.oob = Some(Oob {
                target,
                gen: inner.oob_gen,
                begun: false,
                claimed: false,
                reversed: false,
                attempt: None,
            });
        }
    }

    /// Ends the arming (RESET, ERROR, destroy; QP lock held): returns the
    /// attempt for the caller to cancel after unlocking.
    pub(super) fn disarm(inner: &mut Inner) -> Option<Arc<dyn Attempt>> {
        inner.oob_gen = inner.oob_gen.wrapping_add(1);
        inner.oob.take().and_then(|o| o.attempt)
    }

    /// Path attributes for `query_qp`.
    pub(crate) fn path(&self) -> PathAttrs {
        self.inner.lock().path
    }

    fn job(o: &Oob) -> Job {
        Job {
            target: o.target,
            gen: o.gen,
            // The device's limit, not `max_rd_atomic`/`max_dest_rd_atomic`:
            // the stream may be set up at RTR, before the consumer set its
            // ORD (perftest sets it at RTS), and the MPA exchange fixes the
            // depths for the stream's life (RFC 6581 §5).
            ord: super::MAX_RD_ATOMIC,
            ird: super::MAX_RD_ATOMIC,
        }
    }

    /// The CM's next job for this QP after a `modify_qp`, if there is one:
    /// from RTR, the passive side waits and the active side connects. Not
    /// from RTS: a consumer that only receives may leave its QP in RTR (the
    /// server of perftest's bandwidth tests does), and the active side may be
    /// that one. The SQ PSN goes in the Request only if it was set by then.
    /// Given once per arming.
    pub(crate) fn oob_job(&self) -> Option<Job> {
        let mut inner = self.inner.lock();
        let o = inner.oob.as_ref()?;
        if o.begun {
            return None;
        }
        let job = Self::job(o);
        if let Some(o) = inner.oob.as_mut() {
            o.begun = true;
        }
        Some(job)
    }

    /// The CM's attempt for arming `gen`; false (the caller cancels it) if
    /// that arming ended meanwhile.
    pub(crate) fn oob_attach(&self, gen: u32, attempt: Arc<dyn Attempt>) -> bool {
        let mut inner = self.inner.lock();
        let destroying = inner.destroying;
        match inner.oob.as_mut() {
            Some(o) if o.gen == gen && !destroying => {
                o.attempt = Some(attempt);
                true
            }
            _ => false,
        }
    }

    /// What the QP was given for its peer (`modify_qp`), as its blocks
    /// carry it: read afresh for every Request sent and every block checked.
    fn given(&self, inner: &Inner, o: &Oob) -> Given {
        let p = &inner.path;
        Given {
            qpn: self.num(),
            dest_qpn: o.target.dest_qpn,
            sq_psn: p.sq_psn_set.then_some(p.sq_psn),
            rq_psn: p.rq_psn,
        }
    }

    /// What arming `gen` was given now (`None` once it ended).
    pub(crate) fn oob_given(&self, gen: u32) -> Option<Given> {
        let inner = self.inner.lock();
        let o = inner.oob.as_ref().filter(|o| o.gen == gen)?;
        Some(self.given(&inner, o))
    }

    /// A connection request from `from` with the initiator's block `data`
    /// names this QP: see [`Claim`]. A match is claimed, so a second request
    /// for the same arming is refused. The QP numbers and every PSN the
    /// request carries must be those the QP was given, and it must carry one
    /// (`proto::qpconn::Given::check_request`). A QP armed to connect takes
    /// a request only when it proves the pair and the QP has its SQ PSN for
    /// the Reply, and then stops its own attempt: the peer's QP, still in RTR,
    /// could not answer our Request with a proof and connects itself
    /// ([`Claim::Reverse`]).
    pub(crate) fn oob_claim(&self, from: &[u8; 16], data: &ConnData) -> Claim {
        let mut inner = self.inner.lock();
        if inner.destroying {
            return Claim::Refused(c_str!("QP connection refused: QP being destroyed"));
        }
        let connected = inner.conn.is_some();
        let Some(o) = inner.oob.as_ref() else {
            return if connected {
                Claim::Refused(c_str!("QP connection refused: QP already connected"))
            } else {
                Claim::NotArmed
            };
        };
        if o.claimed || connected {
            return Claim::Refused(c_str!("QP connection refused: QP already connected"));
        }
        if o.target.peer.ip != *from {
            return Claim::Refused(c_str!(
                "QP connection refused: QP armed for another peer address"
            ));
        }
        if o.reversed {
            return Claim::NotYet;
        }
        let given = self.given(&inner, o);
        let verdict = given.check_request(data);
        if o.target.active && verdict != Verdict::Match {
            return Claim::Refused(c_str!(
                "QP connection refused: QP armed to connect itself, not to accept"
            ));
        }
        match verdict {
            Verdict::Refuse(Mismatch::Qpn) => Claim::Refused(c_str!(
                "QP connection refused: QP armed for another QP number"
            )),
            Verdict::Refuse(Mismatch::Psn) => {
                Claim::Refused(c_str!("QP connection refused: QP armed for another PSN"))
            }
            Verdict::Refuse(Mismatch::Missing) => {
                Claim::Refused(c_str!("QP connection refused: the request proves no PSN"))
            }
            Verdict::NotYet => Claim::NotYet,
            Verdict::Reverse => {
                let Some(o) = inner.oob.as_mut() else {
                    return Claim::NotArmed;
                };
                o.target.active = true;
                o.reversed = true;
                let wait = o.attempt.take();
                Claim::Reverse(Self::job(o), wait)
            }
            Verdict::Match => {
                let Some(o) = inner.oob.as_mut() else {
                    return Claim::NotArmed;
                };
                o.claimed = true;
                Claim::Match(Self::job(o), given)
            }
        }
    }

    /// A claimed request for arming `gen` did not become a stream: the QP
    /// may take another.
    pub(crate) fn oob_unclaim(&self, gen: u32) {
        let mut inner = self.inner.lock();
        if let Some(o) = inner.oob.as_mut().filter(|o| o.gen == gen) {
            o.claimed = false;
        }
    }

    /// Binds the stream set up for arming `gen` (the CM, after MPA): the
    /// state stays as the consumer set it (RTR or RTS), the remote rights
    /// are the consumer's (`qp_access_flags`), and so are the ORD/IRD
    /// `query_qp` returns (the stream's, negotiated from the device's limits,
    /// are the engine's). The attempt is returned for the caller to cancel
    /// (its work is done).
    pub(crate) fn bind_oob(&self, conn: Arc<Conn>, gen: u32) -> Result<Option<Arc<dyn Attempt>>> {
        let mut inner = self.inner.lock();
        if inner.destroying || inner.conn.is_some() {
            return Err(EBUSY);
        }
        if !matches!(inner.state, QpState::Rtr | QpState::Rts) {
            return Err(EINVAL);
        }
        let attempt = match inner.oob.as_mut() {
            Some(o) if o.gen == gen => o.attempt.take(),
            _ => return Err(EINVAL),
        };
        self.iwcm_stream.store(false, Ordering::Relaxed);
        inner.conn = Some(conn);
        Ok(attempt)
    }

    /// Arming `gen` got no stream in time, or its peer refused (the CM's
    /// attempt, which `cancel` excludes from then on): the QP goes to
    /// ERROR, its WQEs are flushed and the consumer gets `IB_EVENT_QP_FATAL`.
    ///
    /// The arming stays until the event is out: a `destroy_qp` meanwhile
    /// finds the attempt and its `cancel` waits for this call to end.
    pub(crate) fn oob_failed(&self, gen: u32) {
        {
            let inner = self.inner.lock();
            match &inner.oob {
                Some(o) if o.gen == gen && inner.conn.is_none() && !inner.destroying => {}
                _ => return,
            }
        }
        self.set_error();
        self.ib.event(super::QpEvent::Fatal);
        let gone = {
            let mut inner = self.inner.lock();
            match &inner.oob {
                Some(o) if o.gen == gen => Self::disarm(&mut inner),
                _ => None,
            }
        };
        // The caller is the attempt: not the last reference.
        drop(gone);
    }
}
