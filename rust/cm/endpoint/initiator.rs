// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The initiator's side of a connection (`iw_connect`): the TCP connect, the
//! MPA Request, the Reply (RFC 5044 §7.1, RFC 6581), each phase under its
//! deadline, and the `CONNECT_REPLY` the iw_cm gets.

use super::*;

impl Endpoint {
    /// Initiator work: starts the TCP connect; the socket reports progress.
    pub(super) fn connect_start(
        self: &Arc<Self>,
        qp: QpLink,
        private_data: KVec<u8>,
        ird: u16,
        ord: u16,
    ) {
        // The engine can send a zero-length Write or Read as the RTR.
        let rtr = RtrSet {
            send: false,
            write: true,
            read: true,
        };
        let p = params::cm();
        let local = our_params(ird, ord, p.peer_to_peer.then_some(rtr));
        let mut inner = self.inner.lock();
        let started = match &inner.cm_id {
            Some(id) => Socket::connect_start(&id.as_ref()),
            None => Err(EINVAL),
        };
        let sock = match started {
            Ok(s) => s,
            Err(e) => {
                drop(inner);
                return self.connect_failed(connect_status(SetupError::Io(e)), &[]);
            }
        };
        sock.set_timeout(p.timeout_ms);
        let init = KBox::new(
            Init {
                qp,
                private_data,
                local,
                conn: Watched::new(sock, self),
                reply: FrameBuf::new(),
            },
            GFP_KERNEL,
        );
        let init = match init {
            Ok(i) => i,
            Err(_) => {
                drop(inner);
                return self.connect_failed(errno::connreset().to_errno(), &[]);
            }
        };
        self.new_deadline(p.timeout_ms);
        inner.phase = Phase::Connecting(init);
        drop(inner);
        // A connect that completed before the watch.
        self.schedule();
    }

    /// Initiator work: the TCP connect finished, failed, or took too long.
    pub(super) fn connecting(self: &Arc<Self>, init: KBox<Init>) {
        if self.event(EXPIRED) {
            return self.init_failed(init, errno::timedout().to_errno());
        }
        if self.event(ABORT) {
            return self.init_failed(init, errno::canceled().to_errno());
        }
        match init.conn.sock().and_then(Socket::connected) {
            Ok(false) => self.inner.lock().phase = Phase::Connecting(init),
            Err(e) => self.init_failed(init, connect_status(SetupError::Io(e))),
            Ok(true) => {
                let req = mpa::request(&init.local, &init.private_data);
                let sent = init
                    .conn
                    .sock()
                    .map_err(SetupError::Io)
                    .and_then(|s| mpa_io::write(s, &req));
                if let Err(e) = sent {
                    return self.init_failed(init, connect_status(e));
                }
                self.set_launched();
                {
                    let _inner = self.inner.lock();
                    self.new_deadline(params::cm().timeout_ms);
                }
                self.await_reply(init)
            }
        }
    }

    /// Initiator work: collects the Reply; once whole, checks it, starts the
    /// engine and reports `CONNECT_REPLY`.
    pub(super) fn await_reply(self: &Arc<Self>, mut init: KBox<Init>) {
        if self.event(EXPIRED) {
            return self.init_failed(init, errno::timedout().to_errno());
        }
        if self.event(ABORT) {
            return self.init_failed(init, errno::canceled().to_errno());
        }
        let Init {
            conn, reply: buf, ..
        } = &mut *init;
        let got = conn.sock().map_err(SetupError::Io);
        match got.and_then(|s| buf.fill(s)) {
            Ok(false) => return self.inner.lock().phase = Phase::AwaitReply(init),
            Err(e) => return self.init_failed(init, connect_status(e)),
            Ok(true) => {}
        }
        let Init {
            qp,
            private_data,
            local,
            conn,
            reply,
        } = KBox::into_inner(init);
        self.end_deadline_locked();
        let Some(sock) = conn.release() else {
            return self.connect_failed(errno::connreset().to_errno(), &[]);
        };
        if self.inner.lock().qp.is_some() {
            return self.qp_reply(qp, &local, &private_data, sock, &reply);
        }
        let req = mpa::request(&local, &private_data);
        let rep = match FrameRepr::parse_bytes(reply.bytes(), FrameKind::Reply) {
            Ok(r) => r,
            Err(_) => {
                sock.shutdown(true);
                return self.connect_failed(errno::connreset().to_errno(), &[]);
            }
        };
        let params = match mpa::complete(&local, &req, &rep) {
            Ok(params) => params,
            Err(MpaError::Rejected) => {
                sock.shutdown(false);
                let pd = rep
                    .private_data
                    .get(..255.min(rep.private_data.len()))
                    .unwrap_or(&[]);
                return self.connect_failed(errno::connrefused().to_errno(), pd);
            }
            Err(e) => {
                pr_info!("MPA Reply refused: {:?}\n", e);
                if let Some(code) = e.terminate_code() {
                    // The exchange completed: tell the responder why (RFC 6581 §4).
                    let _ = mpa_io::write_terminate(&sock, req.crc || rep.crc, code);
                    self.ctr.inc(Counter::TerminatesSentLlp);
                    sock.shutdown(false);
                } else {
                    sock.shutdown(true);
                }
                return self.connect_failed(errno::connreset().to_errno(), &[]);
            }
        };
        // iw_cm_event counts private data in a u8: refuse, never truncate.
        if rep.private_data.len() > usize::from(u8::MAX) {
            sock.shutdown(true);
            return self.connect_failed(errno::connreset().to_errno(), &[]);
        }
        let Some(id) = self.inner.lock().cm_id.take() else {
            sock.shutdown(true);
            self.inner.lock().phase = Phase::Closed;
            return;
        };
        let setup = Setup {
            params,
            initiator: true,
            mss: sock.mss(),
        };
        let stream = match self.stream_owner().and_then(|o| Stream::new(sock, o)) {
            Ok(s) => s,
            Err(e) => return self.report_connect_failed(id, e.to_errno(), &[]),
        };
        let data = EventData {
            status: 0,
            private_data: rep.private_data,
            ird: event_depth(params.ird),
            ord: event_depth(params.ord),
        };
        if let Err((id, e)) = self.establish(id, stream, &qp, &setup, Event::ConnectReply, &data) {
            self.report_connect_failed(id, e.to_errno(), &[]);
        }
    }

    /// Ends the deadline under the phase lock.
    pub(super) fn end_deadline_locked(&self) {
        let _inner = self.inner.lock();
        self.end_deadline();
    }

    /// Initiator: the setup failed before the Reply was whole; resets the
    /// connection and reports `status`.
    pub(super) fn init_failed(self: &Arc<Self>, init: KBox<Init>, status: i32) {
        let Init { conn, .. } = KBox::into_inner(init);
        if let Some(sock) = conn.release() {
            sock.shutdown(true);
        }
        self.end_deadline_locked();
        self.connect_failed(status, &[]);
    }

    /// Reports a failed connect and drops our cm_id reference.
    pub(super) fn connect_failed(self: &Arc<Self>, status: i32, private_data: &[u8]) {
        self.set_launched();
        if self.qp_connect_failed(status) {
            return;
        }
        let id = self.inner.lock().cm_id.take();
        match id {
            Some(id) => self.report_connect_failed(id, status, private_data),
            None => self.inner.lock().phase = Phase::Closed,
        }
    }

    /// Reports a failed connect on `id` and drops that reference.
    pub(super) fn report_connect_failed(&self, id: CmId, status: i32, private_data: &[u8]) {
        self.inner.lock().phase = Phase::Closed;
        self.ctr.inc(if status == errno::connrefused().to_errno() {
            Counter::CmRefused
        } else {
            Counter::CmSetupFailed
        });
        let data = EventData {
            status,
            private_data,
            ..Default::default()
        };
        let _ = id.event(Event::ConnectReply, None, &data);
    }
}

/// The `CONNECT_REPLY` status for a failed connect or exchange.
pub(super) fn connect_status(e: SetupError) -> i32 {
    match e {
        SetupError::Io(e) if e == EAGAIN || e == errno::timedout() => errno::timedout().to_errno(),
        SetupError::Io(e) if e == errno::connrefused() || errno::is_unreachable(e) => e.to_errno(),
        _ => errno::connreset().to_errno(),
    }
}
