// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The server: one region per connection for the client's Writes, Reads and Atomics, and
//! an answer to every Send, saying whether its octets were right.

#![allow(non_upper_case_globals)] // bindgen names the rdma_cm event constants

use crate::ffi::{self, sys::*, Channel, CmEvent, CmId, Cq, Mr, Op, Pd, Qp, Sge};
use crate::{ack, check_send, parse_request, reply, wr_id, wr_parts, Opts, MSG_MAX, RECVS, STOP};
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

const K_RECV: u8 = 1;
const K_ACK: u8 = 2;
/// Octets of one answer slot.
const ACK_SLOT: usize = 16;

/// One accepted connection. Field order is drop order: the QP before its buffers.
struct Conn {
    qp: Qp,
    region: Mr,
    rcv: Mr,
    acks: Mr,
    cq: Rc<Cq>,
    id: CmId,
    up: bool,
    /// DISCONNECTED came (or the connection failed): reaped once its work requests are in.
    ended: Option<Instant>,
    sq_out: usize,
    rq_out: usize,
    next_ack: usize,
}

#[derive(Default)]
struct Tally {
    accepted: u64,
    refused: u64,
    closed: u64,
    verified: u64,
    bad: u64,
    acks: u64,
    wc_errors: u64,
    flushed: u64,
    hung: u64,
    /// Requests that reached us before one their client had made earlier.
    out_of_order: u64,
}

fn io(e: std::io::Error) -> String {
    e.to_string()
}

impl Conn {
    fn accept(chan: &Rc<Channel>, pd: &Pd, ev: &CmEvent) -> Result<Self, String> {
        let id = CmId::adopt(chan, ev).map_err(io)?;
        let (size, _) = parse_request(&ev.private).ok_or("connection request without a size")?;
        let size = size.clamp(8, 1 << 20);
        let len = size.div_ceil(8) * 8 + 64;
        let access = ffi::LOCAL_WRITE | ffi::REMOTE_WRITE | ffi::REMOTE_READ | ffi::REMOTE_ATOMIC;
        let setup = || -> std::io::Result<Self> {
            let region = Mr::new(pd, len, access, 0)?;
            let rcv = Mr::new(pd, RECVS * MSG_MAX, ffi::LOCAL_WRITE, 0)?;
            let acks = Mr::new(pd, RECVS * ACK_SLOT, 0, 0)?;
            let cq = Rc::new(Cq::new(&id, 64, false)?);
            let qp = Qp::new(&id, pd, &cq, None)?;
            let mut c = Conn {
                qp,
                region,
                rcv,
                acks,
                cq,
                id: id.clone(),
                up: false,
                ended: None,
                sq_out: 0,
                rq_out: 0,
                next_ack: 0,
            };
            for slot in 0..RECVS {
                c.post_recv(slot)?;
            }
            Ok(c)
        };
        match setup() {
            Ok(c) => {
                let r = reply(c.region.addr(), c.region.rkey(), len);
                c.id.accept(&r).map_err(io)?;
                Ok(c)
            }
            Err(e) => {
                let _ = id.reject();
                Err(e.to_string())
            }
        }
    }

    fn post_recv(&mut self, slot: usize) -> std::io::Result<()> {
        let sge = Sge {
            mr: &self.rcv,
            offset: slot * MSG_MAX,
            len: MSG_MAX as u32,
        };
        self.qp.post_recv(wr_id(0, 0, K_RECV, slot as u8), &[sge])?;
        self.rq_out += 1;
        Ok(())
    }

    fn answer(&mut self, seq: u64, ok: bool) -> std::io::Result<()> {
        let slot = self.next_ack;
        self.next_ack = (slot + 1) % RECVS;
        self.acks.write(slot * ACK_SLOT, &ack(seq, ok))?;
        let sge = Sge {
            mr: &self.acks,
            offset: slot * ACK_SLOT,
            len: 13,
        };
        self.qp.post_send(
            wr_id(0, 0, K_ACK, slot as u8),
            Op::Send,
            &[sge],
            ffi::SIGNALED,
        )?;
        self.sq_out += 1;
        Ok(())
    }

    /// Handles what the CQ holds; false if nothing was there.
    fn poll(&mut self, t: &mut Tally) -> bool {
        let wcs = match self.cq.poll() {
            Ok(w) => w,
            Err(_) => return false,
        };
        let any = !wcs.is_empty();
        for w in wcs {
            let (_, _, kind, detail) = wr_parts(w.wr_id);
            match kind {
                K_RECV => self.rq_out = self.rq_out.saturating_sub(1),
                _ => self.sq_out = self.sq_out.saturating_sub(1),
            }
            if w.status != ffi::WC_SUCCESS {
                if w.status == ffi::WC_FLUSH {
                    t.flushed += 1;
                } else {
                    t.wc_errors += 1;
                }
                if self.ended.is_none() {
                    self.ended = Some(Instant::now());
                }
                continue;
            }
            if kind == K_ACK {
                t.acks += 1;
                continue;
            }
            let slot = usize::from(detail);
            let got = self
                .rcv
                .read(slot * MSG_MAX, (w.byte_len as usize).min(MSG_MAX))
                .unwrap_or_default();
            let (seq, ok) = match check_send(&got) {
                Ok(seq) => (seq, true),
                Err(why) => {
                    if t.bad < 10 {
                        eprintln!("rsiw-load server: bad Send: {why}");
                    }
                    (crate::be64(&got, 4).unwrap_or(0), false)
                }
            };
            if ok {
                t.verified += 1;
            } else {
                t.bad += 1;
            }
            if self.ended.is_none()
                && (self.post_recv(slot).is_err() || self.answer(seq, ok).is_err())
            {
                self.ended = Some(Instant::now());
            }
        }
        any
    }
}

/// Serves until a signal or `--seconds`; true if every received Send was right.
pub fn run(o: &Opts) -> Result<bool, String> {
    let chan = Rc::new(Channel::new().map_err(io)?);
    let listen = CmId::new(&chan).map_err(io)?;
    // Several clients set up to 8 connections each at once (the soak runs
    // four): a backlog of 8 would refuse some of them.
    listen.listen_backlog(o.addr, 128).map_err(io)?;
    let pd = Pd::new(&listen).map_err(io)?;
    println!("rsiw-load server: listening on {}", o.addr);
    let end = o.seconds.map(|s| Instant::now() + Duration::from_secs(s));
    let mut conns: Vec<Conn> = Vec::new();
    let mut t = Tally::default();
    let mut last_seq = std::collections::HashMap::new();
    let mut idle = 0u32;
    let mut last_report = Instant::now();
    let mut removed = false;
    while !STOP.load(Ordering::Relaxed) && end.is_none_or(|e| Instant::now() < e) && !removed {
        let mut busy = false;
        while let Some(ev) = chan.event(0).map_err(io)? {
            busy = true;
            let key = ev.id_key();
            match ev.kind {
                rdma_cm_event_type_RDMA_CM_EVENT_CONNECT_REQUEST => {
                    if let Some((_, o)) = parse_request(&ev.private) {
                        let last = last_seq.entry(o.client).or_insert(o.seq);
                        if o.seq < *last {
                            t.out_of_order += 1;
                            eprintln!(
                                "rsiw-load server: client {}'s connect {} arrived after its connect {}",
                                o.client, o.seq, last
                            );
                        }
                        *last = (*last).max(o.seq);
                    }
                    match Conn::accept(&chan, &pd, &ev) {
                        Ok(c) => {
                            t.accepted += 1;
                            conns.push(c);
                        }
                        Err(e) => {
                            t.refused += 1;
                            eprintln!("rsiw-load server: refused a connection: {e}");
                        }
                    }
                }
                rdma_cm_event_type_RDMA_CM_EVENT_ESTABLISHED => {
                    if let Some(c) = conns.iter_mut().find(|c| c.id.key() == key) {
                        c.up = true;
                    }
                }
                rdma_cm_event_type_RDMA_CM_EVENT_DEVICE_REMOVAL => removed = true,
                rdma_cm_event_type_RDMA_CM_EVENT_DISCONNECTED
                | rdma_cm_event_type_RDMA_CM_EVENT_CONNECT_ERROR
                | rdma_cm_event_type_RDMA_CM_EVENT_UNREACHABLE
                | rdma_cm_event_type_RDMA_CM_EVENT_REJECTED => {
                    if let Some(c) = conns.iter_mut().find(|c| c.id.key() == key) {
                        c.up = false;
                        c.ended.get_or_insert_with(Instant::now);
                        // A connection that failed before ESTABLISHED flushes nothing by
                        // itself.
                        let _ = c.qp.set_error();
                    }
                }
                _ => {}
            }
        }
        for c in conns.iter_mut() {
            busy |= c.poll(&mut t);
        }
        // Ended connections go once everything they posted is back, or after --drain.
        conns.retain(|c| {
            let Some(since) = c.ended else { return true };
            if c.sq_out == 0 && c.rq_out == 0 {
                t.closed += 1;
                return false;
            }
            if since.elapsed() > o.drain {
                t.hung += 1;
                eprintln!(
                    "rsiw-load server: qpn {}: {} sends and {} receives never completed",
                    c.qp.num(),
                    c.sq_out,
                    c.rq_out
                );
                return false;
            }
            true
        });
        if let Some(every) = o.report {
            if last_report.elapsed() >= every {
                last_report = Instant::now();
                println!(
                    "rsiw-load server: conns {} verified {} bad {}",
                    conns.len(),
                    t.verified,
                    t.bad
                );
            }
        }
        idle = if busy { 0 } else { idle.saturating_add(1) };
        if idle > 100 {
            std::thread::sleep(Duration::from_micros(500));
        }
    }
    if removed {
        println!("rsiw-load server: device removed");
        for c in conns.iter_mut() {
            let _ = c.qp.set_error();
        }
    }
    let open = conns.len();
    drop(conns);
    println!(
        "rsiw-load server: accepted {} refused {} closed {} open {open}; sends verified {} bad {}; acks {}; wc_errors {} flushed {}; out_of_order {}; hung {}",
        t.accepted, t.refused, t.closed, t.verified, t.bad, t.acks, t.wc_errors, t.flushed, t.out_of_order, t.hung
    );
    Ok(t.bad == 0 && t.hung == 0)
}
