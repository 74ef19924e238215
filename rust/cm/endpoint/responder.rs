// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The responder's side of a connection: collecting the MPA Request under its
//! deadline, the `CONNECT_REQUEST` to the listener's cm_id, and `iw_accept`
//! (the Reply, RFC 5044 §7.1, RFC 6581) or `iw_reject` (a Reply with the
//! Reject bit).

use super::*;

impl Endpoint {
    /// Responder work: collects the Request; once whole, checks it and
    /// reports it.
    pub(super) fn await_request(
        self: &Arc<Self>,
        conn: Watched,
        listener: Arc<Listener>,
        mut req: KBox<FrameBuf>,
    ) {
        let local = local_responder(0, 0);
        let expired = self.event(EXPIRED);
        let got = if self.event(ABORT) {
            Err(SetupError::Io(errno::canceled()))
        } else if expired {
            Err(SetupError::Io(EAGAIN))
        } else {
            conn.sock()
                .map_err(SetupError::Io)
                .and_then(|s| req.fill(s))
        };
        if let Ok(false) = got {
            // A stop or expiry that came while the phase was out queued
            // another run.
            self.inner.lock().phase = Phase::AwaitRequest {
                conn,
                listener,
                req,
            };
            return;
        }
        self.end_deadline_locked();
        let Some(sock) = conn.release() else {
            self.inner.lock().phase = Phase::Closed;
            return listener.forget(self);
        };
        if let Err(e) = got {
            if expired {
                sock.warn(
                    warn::DEADLINE,
                    c_str!("MPA Request not complete within mpa_timeout_ms: reset"),
                );
            }
            return self.refuse(sock, &listener, &local, None, e);
        }
        // RFC 5044 §7.1.3: the initiator sends nothing after its Request
        // until it has the Reply; bytes here are not FPDUs of this stream.
        if sock.readable() {
            sock.warn(
                warn::EARLY,
                c_str!("bytes after the MPA Request, before the Reply: reset"),
            );
            return self.refuse(
                sock,
                &listener,
                &local,
                None,
                SetupError::Io(errno::proto()),
            );
        }
        let rev = match FrameRepr::parse_bytes(req.bytes(), FrameKind::Request) {
            // Private data must fit the event. A request for Markers is
            // honoured (`our_params`: rsiw inserts them, RFC 5044 §4.3).
            Ok(r) if r.private_data.len() > usize::from(u8::MAX) => {
                return self.refuse(
                    sock,
                    &listener,
                    &local,
                    Some(r.rev),
                    MpaError::PrivateDataTooLong(0).into(),
                )
            }
            Ok(r) => r.rev,
            Err(e) => return self.refuse(sock, &listener, &local, None, e.into()),
        };
        // A device's QP-connection listener: matched to an armed QP.
        if listener.qp_device().is_some() {
            return self.qp_request(sock, req, listener, true);
        }
        let mut inner = self.inner.lock();
        inner.phase = Phase::Requested {
            sock,
            req,
            listener: listener.clone(),
        };
        let Phase::Requested { sock, req, .. } = &inner.phase else {
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
                    &listener,
                    &local,
                    Some(rev),
                    SetupError::Io(errno::connrefused()),
                );
            }
            return;
        }
        // A request nobody answers does not hold its connection for ever.
        self.new_deadline(params::cm().accept_timeout_ms);
    }

    /// Work: a reported request that was neither accepted nor rejected
    /// within `mpa_accept_timeout_ms` is refused (a Reject Reply, then a
    /// FIN); a later `iw_accept` gets `EINVAL`.
    pub(super) fn accept_expired(&self) {
        let mut inner = self.inner.lock();
        if !self.event(EXPIRED) || !matches!(inner.phase, Phase::Requested { .. }) {
            return;
        }
        self.end_deadline();
        let phase = core::mem::replace(&mut inner.phase, Phase::Closed);
        drop(inner);
        if let Phase::Requested {
            sock,
            req,
            listener,
        } = phase
        {
            sock.warn(
                warn::UNANSWERED,
                c_str!("connection request not accepted within mpa_accept_timeout_ms: refused"),
            );
            let rev = FrameRepr::parse_bytes(req.bytes(), FrameKind::Request)
                .map(|r| r.rev)
                .ok();
            self.refuse(
                sock,
                &listener,
                &local_responder(0, 0),
                rev,
                SetupError::Io(errno::timedout()),
            );
        }
    }

    /// Responder: closes a connection whose Request is not acceptable (or
    /// not answered), with a Reject Reply unless the peer does not speak MPA
    /// at all, and takes it off the listener's count.
    pub(super) fn refuse(
        &self,
        sock: Socket,
        listener: &Arc<Listener>,
        local: &LocalParams,
        rev: Option<Revision>,
        why: SetupError,
    ) {
        self.inner.lock().phase = Phase::Closed;
        listener.forget(self);
        let speaks_mpa = match why {
            SetupError::Io(e) => e == errno::connrefused() || e == errno::timedout(),
            SetupError::Mpa(MpaError::BadKey | MpaError::Truncated { .. }) => false,
            SetupError::Mpa(_) => true,
        };
        self.ctr.inc(if speaks_mpa {
            Counter::CmRefused
        } else {
            Counter::CmSetupFailed
        });
        if speaks_mpa {
            // RFC 5044 §7.1.1: the R bit tells the initiator why we close.
            let _ = mpa_io::write(&sock, &mpa::reject_reply(local, rev, &[]));
        }
        sock.shutdown(!speaks_mpa);
    }

    /// Takes a reported request for `iw_accept`/`iw_reject`: its deadline is
    /// off and it no longer counts against the listener.
    pub(super) fn take_request(&self) -> Option<(Socket, KBox<FrameBuf>)> {
        let mut inner = self.inner.lock();
        let phase = core::mem::replace(&mut inner.phase, Phase::Busy);
        let Phase::Requested {
            sock,
            req,
            listener,
        } = phase
        else {
            inner.phase = phase;
            return None;
        };
        self.end_deadline();
        drop(inner);
        listener.forget(self);
        Some((sock, req))
    }

    /// `iw_accept`: answers the Request with a Reply, starts the engine on
    /// QP `param.qpn`, reports `ESTABLISHED`.
    pub(crate) fn accept(
        self: &Arc<Self>,
        dev: &Device,
        id: &CmIdRef<'_>,
        param: &ConnParam<'_>,
    ) -> Result {
        let (sock, req) = self.take_request().ok_or(EINVAL)?;
        let local = local_responder(param.ird, param.ord);
        // RFC 5044 §7.1.3: nothing may come before the initiator has our Reply.
        if sock.readable() {
            sock.warn(
                warn::EARLY,
                c_str!("bytes after the MPA Request, before the Reply: reset"),
            );
            self.inner.lock().phase = Phase::Closed;
            self.ctr.inc(Counter::CmSetupFailed);
            sock.shutdown(true);
            return Err(errno::connreset());
        }
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
                self.ctr.inc(Counter::CmSetupFailed);
                sock.shutdown(true);
                return Err(e);
            }
        };
        let setup = Setup {
            params,
            initiator: false,
            mss: sock.mss(),
        };
        let stream = self
            .stream_owner()
            .and_then(|o| Stream::new(sock, o))
            .inspect_err(|_| self.inner.lock().phase = Phase::Closed)?;
        let data = EventData {
            status: 0,
            private_data: &[],
            ird: event_depth(params.ird),
            ord: event_depth(params.ord),
        };
        self.establish(id.get(), stream, &qp, &setup, Event::Established, &data)
            .map_err(|(_, e)| {
                self.ctr.inc(Counter::CmSetupFailed);
                e
            })
    }

    /// `iw_reject`: a Reply with the Reject bit and the ULP's private data,
    /// then an orderly close (RFC 5044 §7.1.1).
    pub(crate) fn reject(&self, private_data: &[u8]) -> Result {
        let Some((sock, req)) = self.take_request() else {
            return Ok(());
        };
        self.inner.lock().phase = Phase::Closed;
        self.ctr.inc(Counter::CmRefused);
        let rev = FrameRepr::parse_bytes(req.bytes(), FrameKind::Request)
            .map(|r| r.rev)
            .ok();
        let local = local_responder(0, 0);
        let _ = mpa_io::write(&sock, &mpa::reject_reply(&local, rev, private_data));
        sock.shutdown(false);
        Ok(())
    }
}

/// The responder's offer: our CRC preference, the ULP's depths, any RTR.
fn local_responder(ird: u32, ord: u32) -> LocalParams {
    our_params(depth(ird), depth(ord), None)
}
