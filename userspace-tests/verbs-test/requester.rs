// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The `--client` role's connection: rdma_cm address/route resolution, an RC QP, the
//! connect handshake carrying the case's request, and the responder's verdict.

use crate::ffi::{self, Channel, CmId, Cq, Mr, Pd, Qp, Sge};
use crate::proto::{self, Req, Resp, GUARD_BYTE};
use crate::wait::{self, Pending};
use std::net::SocketAddrV4;
use std::rc::Rc;
use std::time::Duration;

/// Work-request id of the receive that takes the server's verdict.
pub const WR_VERDICT: u64 = 9100;

/// Where and how to connect.
pub struct Env {
    /// The server's address.
    pub server: SocketAddrV4,
    /// The RDMA device the connection must use, if named.
    pub dev: Option<String>,
}

/// One connection to the server. Field order is drop order: the QP goes before the
/// regions its WRs point at.
pub struct Client {
    /// The RC QP.
    pub qp: Qp,
    /// Control region (the verdict lands at offset 0).
    pub ctl: Mr,
    /// The QP's only CQ.
    pub cq: Rc<Cq>,
    /// The connection's PD.
    pub pd: Pd,
    /// The connection's CM ID.
    pub id: CmId,
    /// Its event channel.
    pub chan: Rc<Channel>,
    /// Completions polled but not yet checked.
    pub pend: Pending,
    /// The server's exposed region.
    pub resp: Resp,
}

fn io(e: std::io::Error) -> String {
    e.to_string()
}

/// Waits up to `ms` for an event of kind `want`; any other event is an error.
pub fn expect_event(chan: &Channel, want: u32, ms: i32) -> Result<ffi::CmEvent, String> {
    let ev = chan
        .event(ms)
        .map_err(io)?
        .ok_or_else(|| format!("no rdma_cm event within {ms} ms"))?;
    if ev.kind != want {
        return Err(format!(
            "rdma_cm event {} (status {}), want {want}",
            ev.name(),
            ev.status
        ));
    }
    Ok(ev)
}

impl Client {
    /// Connects to the server with `req` as private data; the verdict receive is posted first.
    pub fn connect(env: &Env, req: &Req) -> Result<Self, String> {
        Self::dial(env, env.server, req)?.finish()
    }

    /// Starts a connect to `to` (which must resolve to `env.dev`, if named) and returns
    /// without waiting for ESTABLISHED, so one thread can also accept it.
    pub fn dial(env: &Env, to: SocketAddrV4, req: &Req) -> Result<Dial, String> {
        use ffi::sys::*;
        let chan = Rc::new(Channel::new().map_err(io)?);
        let id = CmId::new(&chan).map_err(io)?;
        id.resolve_addr(to).map_err(io)?;
        expect_event(&chan, rdma_cm_event_type_RDMA_CM_EVENT_ADDR_RESOLVED, 5000)?;
        if let Some(dev) = &env.dev {
            let got = id.device_name().map_err(io)?;
            if &got != dev {
                return Err(format!("{to} resolves to device {got}, not {dev}"));
            }
        }
        id.resolve_route().map_err(io)?;
        expect_event(&chan, rdma_cm_event_type_RDMA_CM_EVENT_ROUTE_RESOLVED, 5000)?;
        let pd = Pd::new(&id).map_err(io)?;
        let cq = Rc::new(Cq::new(&id, 256, false).map_err(io)?);
        let qp = Qp::new(&id, &pd, &cq, None).map_err(io)?;
        let ctl = Mr::new(&pd, 256, ffi::LOCAL_WRITE, 0).map_err(io)?;
        qp.post_recv(
            WR_VERDICT,
            &[Sge {
                mr: &ctl,
                offset: 0,
                len: 256,
            }],
        )
        .map_err(io)?;
        id.connect(&req.encode()).map_err(io)?;
        Ok(Dial(Client {
            qp,
            ctl,
            cq,
            pd,
            id,
            chan,
            pend: Pending::default(),
            resp: Resp::default(),
        }))
    }

    /// The server's verdict on what it received (sent only for `F_CHECK` requests). The
    /// server checks every byte of its region first (64 MiB under TCG on a loaded host
    /// takes more than 10 s), so the wait grows with the region as a transfer's does.
    pub fn verdict(&mut self) -> Result<(), String> {
        let within = wait::for_len(self.resp.len as usize);
        self.message_within(WR_VERDICT, within).map(|_| ())
    }

    /// A server message received by receive `wr_id` into the control region: its payload
    /// if it says success, else the server's reason as the error.
    pub fn message(&mut self, wr_id: u64) -> Result<Vec<u8>, String> {
        self.message_within(wr_id, wait::for_len(0))
    }

    /// [`Client::message`], waiting up to `within`.
    fn message_within(&mut self, wr_id: u64, within: Duration) -> Result<Vec<u8>, String> {
        let w =
            wait::expect_ok_within(&mut self.pend, &self.cq, wr_id, ffi::OP_RECV, None, within)?;
        let msg = self
            .ctl
            .read(0, (w.byte_len as usize).min(256))
            .map_err(io)?;
        match msg.split_first() {
            Some((0, rest)) => Ok(rest.to_vec()),
            Some((_, why)) => Err(format!("responder: {}", String::from_utf8_lossy(why))),
            None => Err("responder sent an empty message".into()),
        }
    }

    /// Disconnects and waits for DISCONNECTED.
    pub fn close(self) -> Result<(), String> {
        self.id.disconnect().map_err(io)?;
        expect_event(
            &self.chan,
            ffi::sys::rdma_cm_event_type_RDMA_CM_EVENT_DISCONNECTED,
            5000,
        )
        .map(|_| ())
    }
}

/// A connect in progress: rdma_connect issued, ESTABLISHED not yet seen.
pub struct Dial(Client);

impl Dial {
    /// Waits for ESTABLISHED and takes the region description from the accept.
    pub fn finish(self) -> Result<Client, String> {
        let mut c = self.0;
        let ev = expect_event(
            &c.chan,
            ffi::sys::rdma_cm_event_type_RDMA_CM_EVENT_ESTABLISHED,
            10_000,
        )?;
        c.resp =
            Resp::decode(&ev.private).ok_or("server's accept carries no region description")?;
        Ok(c)
    }
}

/// A buffer of `len` bytes scattered over `proto::NMR` local regions (see `proto::layout`).
pub struct Local {
    /// The regions.
    pub mrs: Vec<Mr>,
    /// The pieces.
    pub segs: Vec<proto::Seg>,
    len: usize,
}

impl Local {
    /// Registers the regions (guard-filled) and writes `data` into the pieces, if given.
    pub fn new(pd: &Pd, len: usize, n: usize, data: Option<&[u8]>) -> Result<Self, String> {
        let mrs = (0..proto::NMR)
            .map(|_| Mr::new(pd, proto::region_len(len), ffi::LOCAL_WRITE, GUARD_BYTE))
            .collect::<std::io::Result<Vec<_>>>()
            .map_err(io)?;
        let segs = proto::layout(len, n);
        if let Some(d) = data {
            for (i, img) in proto::image(len, &segs, d).iter().enumerate() {
                mrs[i].write(0, img).map_err(io)?;
            }
        }
        Ok(Local { mrs, segs, len })
    }

    /// The SGE list.
    pub fn sges(&self) -> Vec<Sge<'_>> {
        self.segs
            .iter()
            .map(|&(r, off, n)| Sge {
                mr: &self.mrs[r],
                offset: off,
                len: n as u32,
            })
            .collect()
    }

    /// Checks every region holds `data` in the pieces and guard bytes elsewhere.
    pub fn check(&self, data: &[u8]) -> Result<(), String> {
        for (i, want) in proto::image(self.len, &self.segs, data).iter().enumerate() {
            proto::diff(
                &format!("local region {i}"),
                &self.mrs[i].read(0, want.len()).map_err(io)?,
                want,
            )?;
        }
        Ok(())
    }
}

/// Sends the server a `Quit` request (it rejects it and exits).
pub fn quit(env: &Env) -> Result<(), String> {
    use ffi::sys::*;
    let chan = Rc::new(Channel::new().map_err(io)?);
    let id = CmId::new(&chan).map_err(io)?;
    id.resolve_addr(env.server).map_err(io)?;
    expect_event(&chan, rdma_cm_event_type_RDMA_CM_EVENT_ADDR_RESOLVED, 5000)?;
    id.resolve_route().map_err(io)?;
    expect_event(&chan, rdma_cm_event_type_RDMA_CM_EVENT_ROUTE_RESOLVED, 5000)?;
    let pd = Pd::new(&id).map_err(io)?;
    let cq = Rc::new(Cq::new(&id, 4, false).map_err(io)?);
    let _qp = Qp::new(&id, &pd, &cq, None).map_err(io)?;
    let req = Req {
        kind: proto::Kind::Quit,
        len: 0,
        sges: 0,
        nrecv: 0,
        access: 0,
        flags: 0,
        seed: 0,
        name: "quit".into(),
    };
    id.connect(&req.encode()).map_err(io)?;
    let ev = chan.event(5000).map_err(io)?;
    std::thread::sleep(Duration::from_millis(10));
    match ev {
        Some(e) if e.kind == rdma_cm_event_type_RDMA_CM_EVENT_REJECTED => Ok(()),
        Some(e) => Err(format!("quit: event {}", e.name())),
        None => Err("quit: no answer".into()),
    }
}
