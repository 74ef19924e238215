// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The `--server` role: sets up what each connect request asks for (RFC 5040 §5 data
//! sink / source) and, when asked, checks what arrived and sends its verdict back.

use crate::ffi::{self, Bind, Channel, CmId, Cq, Mr, Mw, Op, Pd, Qp, Sge, Srq, Wc};
use crate::proto::{self, Kind, Req, Resp, GUARD, GUARD_BYTE};
use crate::wait::{self, Pending};
use std::net::SocketAddrV4;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Work-request id of the server's verdict Send.
const WR_VERDICT: u64 = 9000;
/// Work-request id of the "done" receive in `Expose` connections.
const WR_DONE: u64 = 9001;
/// Work-request id of the Bind MW in `Invalidate` connections.
const WR_BIND: u64 = 9002;
/// Where in the control region receives land (messages go out from offset 0).
const CTL_RECV: usize = 256;

/// Serves connections one at a time until a `Quit` request.
pub fn serve(addr: SocketAddrV4) -> std::io::Result<()> {
    let chan = Rc::new(Channel::new()?);
    let listen = CmId::new(&chan)?;
    listen.listen(addr)?;
    println!("rsiw-verbs-test: server listening on {addr}");
    loop {
        let Some(ev) = chan.event(-1)? else { continue };
        if ev.kind != ffi::sys::rdma_cm_event_type_RDMA_CM_EVENT_CONNECT_REQUEST {
            continue;
        }
        let id = CmId::adopt(&chan, &ev)?;
        let Some(req) = Req::decode(&ev.private) else {
            println!(
                "rsiw-verbs-test: server: connect request with unknown private data, rejected"
            );
            id.reject()?;
            continue;
        };
        if req.kind == Kind::Quit {
            id.reject()?;
            println!("rsiw-verbs-test: server: quit");
            return Ok(());
        }
        if let Err(e) = handle(&chan, &id, &req) {
            println!("rsiw-verbs-test: server: {}: {e}", req.name);
        }
    }
}

/// Everything one connection holds, dropped when it ends.
struct Conn {
    qp: Qp,
    cq: Rc<Cq>,
    srq: Option<Rc<Srq>>,
    ctl: Mr,
    pend: Pending,
}

fn handle(chan: &Rc<Channel>, id: &CmId, req: &Req) -> Result<(), String> {
    let e = |x: std::io::Error| x.to_string();
    let len = usize::try_from(req.len).map_err(|_| "length does not fit")?;
    let pd = Pd::new(id).map_err(e)?;
    let cq = Rc::new(Cq::new(id, 256, req.kind == Kind::Solicited).map_err(e)?);
    let srq = if req.flags & proto::F_SRQ != 0 {
        Some(Rc::new(Srq::new(&pd, 16).map_err(e)?))
    } else {
        None
    };
    let qp = Qp::new(id, &pd, &cq, srq.as_ref()).map_err(e)?;
    // Declared before `c`, which owns the QP, so they are dropped after it: no WR outlives its region.
    // Receive buffers: one set of regions per posted receive, so each can be checked.
    let mut sinks: Vec<Vec<Mr>> = Vec::new();
    let mut exposed = None;
    let mut window = None;
    let ctl = Mr::new(&pd, 512, ffi::LOCAL_WRITE, 0).map_err(e)?;
    let mut c = Conn {
        qp,
        cq,
        srq,
        ctl,
        pend: Pending::default(),
    };
    let mut resp = Resp::default();
    let segs = proto::layout(len, req.sges as usize);
    match req.kind {
        Kind::Recv | Kind::Solicited => {
            for k in 0..u64::from(req.nrecv) {
                let mrs = (0..proto::NMR)
                    .map(|_| Mr::new(&pd, proto::region_len(len), ffi::LOCAL_WRITE, GUARD_BYTE))
                    .collect::<std::io::Result<Vec<_>>>()
                    .map_err(e)?;
                let sg: Vec<Sge> = segs
                    .iter()
                    .map(|&(r, off, n)| Sge {
                        mr: &mrs[r],
                        offset: off,
                        len: n as u32,
                    })
                    .collect();
                match &c.srq {
                    Some(s) => s.post_recv(k, &sg),
                    None => c.qp.post_recv(k, &sg),
                }
                .map_err(e)?;
                sinks.push(mrs);
            }
            if req.kind == Kind::Solicited {
                c.cq.req_notify(true).map_err(e)?;
            }
        }
        Kind::Expose => {
            let mr = Mr::new(&pd, len + 2 * GUARD, req.access, GUARD_BYTE).map_err(e)?;
            mr.write(GUARD, &proto::pattern(req.seed, len)).map_err(e)?;
            resp = Resp {
                addr: mr.addr(),
                rkey: mr.rkey(),
                len: req.len,
            };
            c.qp.post_recv(
                WR_DONE,
                &[Sge {
                    mr: &c.ctl,
                    offset: 0,
                    len: 64,
                }],
            )
            .map_err(e)?;
            // A deregistered region's STag must no longer be accepted (RFC 5040 §7.2 invalid STag).
            exposed = if req.flags & proto::F_DEREG != 0 {
                None
            } else {
                Some(mr)
            };
        }
        Kind::Invalidate => {
            let access = ffi::LOCAL_WRITE | ffi::REMOTE_READ | ffi::REMOTE_WRITE | ffi::MW_BIND;
            let mr = Mr::new(&pd, len + 2 * GUARD, access, GUARD_BYTE).map_err(e)?;
            mr.write(GUARD, &proto::pattern(req.seed, len)).map_err(e)?;
            resp = Resp {
                addr: mr.addr(),
                rkey: 0,
                len: req.len,
            };
            c.qp.post_recv(
                0,
                &[Sge {
                    mr: &c.ctl,
                    offset: CTL_RECV,
                    len: 64,
                }],
            )
            .map_err(e)?;
            window = Some((Mw::new(&pd), mr));
        }
        Kind::Quit => return Ok(()),
    }
    id.accept(&resp.encode()).map_err(e)?;
    let mut bound = 0;
    if let Some((mw, mr)) = &window {
        // A Bind MW needs the QP in RTS, i.e. the connection established.
        crate::requester::expect_event(
            chan,
            ffi::sys::rdma_cm_event_type_RDMA_CM_EVENT_ESTABLISHED,
            5000,
        )?;
        match bind(&mut c, mw, mr, len) {
            Ok(rkey) => {
                bound = rkey;
                let mut m = vec![0u8];
                m.extend_from_slice(&rkey.to_le_bytes());
                send_msg(&mut c, &m)?;
            }
            Err(why) => send_verdict(&mut c, Err(why))?,
        }
    }
    // The client's transfer and then this side's check of every byte each get a transfer's
    // time; the deadline only keeps a lost client from holding the server for ever.
    let deadline = Instant::now() + Duration::from_secs(20) + 2 * wait::for_len(req.len as usize);
    let dereg_at = (req.flags & proto::F_DEREG_LATE != 0)
        .then(|| Instant::now() + Duration::from_millis(proto::DEREG_LATE_MS));
    let mut verdict_sent = req.flags & proto::F_CHECK == 0;
    if req.kind == Kind::Solicited && !verdict_sent {
        let v = solicited(&mut c, &sinks, &segs, req);
        send_verdict(&mut c, v)?;
        verdict_sent = true;
    }
    // Serve until the client disconnects; check when the expected traffic has arrived.
    loop {
        if Instant::now() > deadline {
            return Err("no disconnect before the deadline (40 s, and 10 s per MiB)".into());
        }
        c.pend.poll(&c.cq).map_err(e)?;
        if dereg_at.is_some_and(|t| Instant::now() >= t) && exposed.is_some() {
            // Deregistered while the client's Writes stream into it: placements in
            // progress hold the region, whose pages go with the last of them.
            println!("rsiw-verbs-test: server: deregistering the exposed region");
            exposed = None;
        }
        if !verdict_sent {
            let ready = match req.kind {
                Kind::Recv => (0..u64::from(req.nrecv)).all(|k| c.pend.has(k)),
                Kind::Invalidate => c.pend.has(0),
                _ => c.pend.has(WR_DONE),
            };
            if ready {
                let v = match req.kind {
                    Kind::Recv => check_recvs(&mut c, &sinks, &segs, req),
                    Kind::Invalidate => check_invalidate(&mut c, bound),
                    _ => check_exposed(&mut c, exposed.as_ref(), req),
                };
                send_verdict(&mut c, v)?;
                verdict_sent = true;
            }
        }
        if let Some(ev) = chan.event(10).map_err(e)? {
            if ev.kind == ffi::sys::rdma_cm_event_type_RDMA_CM_EVENT_DISCONNECTED {
                return Ok(());
            }
        }
    }
}

/// Binds `mw` to the whole pattern area of `mr`; the window's new rkey.
fn bind(c: &mut Conn, mw: &std::io::Result<Mw>, mr: &Mr, len: usize) -> Result<u32, String> {
    let mw = mw.as_ref().map_err(|x| x.to_string())?;
    let rkey = mw.next_rkey();
    let b = Bind {
        mw,
        mr,
        offset: GUARD,
        len,
        access: ffi::REMOTE_READ | ffi::REMOTE_WRITE,
        rkey,
    };
    c.qp.post_bind(WR_BIND, &b).map_err(|x| x.to_string())?;
    wait::expect_ok(&mut c.pend, &c.cq, WR_BIND, ffi::OP_BIND_MW, None)?;
    Ok(rkey)
}

/// RFC 5040 §5.3 (Send with Invalidate): the receive reports the invalidated STag.
fn check_invalidate(c: &mut Conn, rkey: u32) -> Result<(), String> {
    let wc = c.pend.take(0).ok_or("receive completion vanished")?;
    wait::expect(&wc, ffi::WC_SUCCESS, Some(ffi::OP_RECV))?;
    if wc.byte_len != 16 {
        return Err(format!("byte_len {}, want 16", wc.byte_len));
    }
    if wc.flags & ffi::WC_WITH_INV == 0 {
        return Err(format!("wc_flags {:#x} lack IBV_WC_WITH_INV", wc.flags));
    }
    if wc.imm_or_inv != rkey {
        return Err(format!(
            "invalidated_rkey {:#x}, want {rkey:#x}",
            wc.imm_or_inv
        ));
    }
    Ok(())
}

fn send_verdict(c: &mut Conn, v: Result<(), String>) -> Result<(), String> {
    let msg = match &v {
        Ok(()) => vec![0u8],
        Err(why) => {
            println!("rsiw-verbs-test: server: check failed: {why}");
            let mut m = vec![1u8];
            m.extend(why.bytes().take(200));
            m
        }
    };
    send_msg(c, &msg)
}

/// Sends `msg` (at most 256 bytes) to the client and waits for its completion.
fn send_msg(c: &mut Conn, msg: &[u8]) -> Result<(), String> {
    c.ctl.write(0, msg).map_err(|x| x.to_string())?;
    let sge = Sge {
        mr: &c.ctl,
        offset: 0,
        len: msg.len() as u32,
    };
    c.qp.post_send(WR_VERDICT, Op::Send, &[sge], ffi::SIGNALED)
        .map_err(|x| x.to_string())?;
    wait::expect_ok(&mut c.pend, &c.cq, WR_VERDICT, ffi::OP_SEND, None).map(|_| ())
}

/// One receive completion as verbs define it: success, RECV, the whole message.
fn check_recv(wc: &Wc, req: &Req) -> Result<(), String> {
    wait::expect(wc, ffi::WC_SUCCESS, Some(ffi::OP_RECV))?;
    if wc.byte_len != req.len {
        return Err(format!(
            "receive {}: byte_len {}, want {}",
            wc.wr_id, wc.byte_len, req.len
        ));
    }
    Ok(())
}

fn check_sink(mrs: &[Mr], segs: &[proto::Seg], len: usize, seed: u32) -> Result<(), String> {
    let want = proto::image(len, segs, &proto::pattern(seed, len));
    for (i, (mr, w)) in mrs.iter().zip(&want).enumerate() {
        let got = mr.read(0, mr.len()).map_err(|x| x.to_string())?;
        proto::diff(&format!("sink region {i}"), &got, w)?;
    }
    Ok(())
}

fn check_recvs(
    c: &mut Conn,
    sinks: &[Vec<Mr>],
    segs: &[proto::Seg],
    req: &Req,
) -> Result<(), String> {
    let len = req.len as usize;
    for (k, mrs) in sinks.iter().enumerate() {
        let wc = c.pend.take(k as u64).ok_or("receive completion vanished")?;
        check_recv(&wc, req)?;
        check_sink(mrs, segs, len, req.seed.wrapping_add(k as u32))?;
    }
    Ok(())
}

/// After an RDMA Write case's "done" Send: the region holds the written pattern, guards intact.
fn check_exposed(c: &mut Conn, mr: Option<&Mr>, req: &Req) -> Result<(), String> {
    let wc = c.pend.take(WR_DONE).ok_or("done completion vanished")?;
    wait::expect(&wc, ffi::WC_SUCCESS, Some(ffi::OP_RECV))?;
    let mr = mr.ok_or("no exposed region to check")?;
    let len = req.len as usize;
    let mut want = vec![GUARD_BYTE; len + 2 * GUARD];
    want[GUARD..GUARD + len].copy_from_slice(&proto::pattern(req.seed.wrapping_add(1), len));
    proto::diff(
        "exposed region",
        &mr.read(0, mr.len()).map_err(|x| x.to_string())?,
        &want,
    )
}

/// RFC 5040 §5.3 (Send with Solicited Event): an unsolicited Send raises no CQ event, a solicited one does.
fn solicited(
    c: &mut Conn,
    sinks: &[Vec<Mr>],
    segs: &[proto::Seg],
    req: &Req,
) -> Result<(), String> {
    let e = |x: std::io::Error| x.to_string();
    let first = wait::wait_for(&mut c.pend, &c.cq, 0, Duration::from_secs(10))?;
    check_recv(&first, req)?;
    if c.cq.wait_event(500).map_err(e)? {
        return Err("the unsolicited Send raised a CQ event".into());
    }
    if !c.cq.wait_event(10_000).map_err(e)? {
        return Err("the solicited Send raised no CQ event within 10 s".into());
    }
    let second = wait::wait_for(&mut c.pend, &c.cq, 1, Duration::from_secs(1))?;
    check_recv(&second, req)?;
    let len = req.len as usize;
    for (k, mrs) in sinks.iter().enumerate() {
        check_sink(mrs, segs, len, req.seed.wrapping_add(k as u32))?;
    }
    Ok(())
}
