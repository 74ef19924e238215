// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The client: connections running rounds of Write, Read-back, Send and Atomics, each
//! result checked; failed connections are drained and counted.

#![allow(non_upper_case_globals)] // bindgen names the rdma_cm event constants

use crate::ffi::{self, sys::*, Channel, CmEvent, CmId, Cq, Mr, Op, Pd, Qp, Sge};
use crate::{
    fill, parse_ack, parse_reply, request, send_msg, wr_id, wr_parts, ConnectOrder, Opts, MSG_MAX,
    RECVS, SEND_HDR, STOP,
};
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

const K_WRITE: u8 = 1;
const K_READ: u8 = 2;
const K_SEND: u8 = 3;
const K_FADD: u8 = 4;
const K_CSWAP: u8 = 5;
const K_RECV: u8 = 6;
/// Octets of one answer receive.
const ACK_SLOT: usize = 64;
/// Connection set-ups in flight at most.
const SETUP_WINDOW: usize = 8;
/// Set-up phases give up after this long.
const SETUP_LIMIT: Duration = Duration::from_secs(30);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    Resolving,
    Routing,
    Connecting,
    Up,
    /// We disconnected; DISCONNECTED and the flushes follow.
    Closing,
    /// The connection failed: drain, then done.
    Failed,
}

/// The local buffers of a connection.
struct Bufs {
    w: Mr,
    r: Mr,
    s: Mr,
    rcv: Mr,
    a: Mr,
}

/// A round in flight: the sequence number, its lengths, what is still to complete.
struct Round {
    seq: u64,
    len: usize,
    pending: u8,
    need_ack: bool,
    ack: Option<(u64, bool)>,
}

/// One connection. Field order is drop order: the QP before its buffers and CQ.
struct Conn {
    qp: Option<Qp>,
    bufs: Option<Bufs>,
    cq: Option<Rc<Cq>>,
    id: CmId,
    slot: usize,
    gen: u32,
    phase: Phase,
    since: Instant,
    remote: (u64, u32, usize),
    seq: u64,
    word: u64,
    rng: u64,
    round: Option<Round>,
    rounds: u64,
    sq_out: usize,
    rq_out: usize,
    disconnected: bool,
    /// This connection failed (set-up or later), for the tally.
    failed: bool,
    established: bool,
    /// Its QP still has to go to ERROR: the call that should have moved it
    /// failed (allocation failures, fault-nomem-rsiw.sh); retried each turn.
    error_due: bool,
}

#[derive(Default)]
struct Tally {
    opened: u64,
    established: u64,
    closed: u64,
    failed: u64,
    setup_failed: u64,
    rounds: u64,
    sends: u64,
    writes: u64,
    reads: u64,
    fadds: u64,
    cswaps: u64,
    verify_errors: u64,
    wc_errors: u64,
    flushed: u64,
    disconnects: u64,
    hung: u64,
}

fn io(e: std::io::Error) -> String {
    e.to_string()
}

struct Ctx<'a> {
    o: &'a Opts,
    chan: Rc<Channel>,
    pd: Pd,
    t: Tally,
}

impl Conn {
    fn new(cx: &mut Ctx<'_>, slot: usize, gen: u32) -> Result<Self, String> {
        let id = CmId::new(&cx.chan).map_err(io)?;
        id.resolve_addr(cx.o.addr).map_err(io)?;
        cx.t.opened += 1;
        Ok(Conn {
            qp: None,
            bufs: None,
            cq: None,
            id,
            slot,
            gen,
            phase: Phase::Resolving,
            since: Instant::now(),
            remote: (0, 0, 0),
            seq: 0,
            word: 0,
            rng: 0x2545_f491_4f6c_dd1d ^ ((slot as u64) << 20) ^ u64::from(gen),
            round: None,
            rounds: 0,
            sq_out: 0,
            rq_out: 0,
            disconnected: false,
            failed: false,
            established: false,
            error_due: false,
        })
    }

    fn qp(&self) -> Result<&Qp, String> {
        self.qp.as_ref().ok_or_else(|| "no QP".into())
    }

    fn wr(&self, kind: u8, detail: u8) -> u64 {
        wr_id(self.slot, self.gen, kind, detail)
    }

    /// ROUTE_RESOLVED: QP and buffers, receives, then the connect.
    fn setup(&mut self, cx: &Ctx<'_>) -> Result<(), String> {
        let size = cx.o.size;
        let pd = &cx.pd;
        let cq = Rc::new(Cq::new(&self.id, 64, false).map_err(io)?);
        let bufs = Bufs {
            w: Mr::new(pd, size, 0, 0).map_err(io)?,
            r: Mr::new(pd, size, ffi::LOCAL_WRITE, 0).map_err(io)?,
            s: Mr::new(pd, MSG_MAX, 0, 0).map_err(io)?,
            rcv: Mr::new(pd, RECVS * ACK_SLOT, ffi::LOCAL_WRITE, 0).map_err(io)?,
            a: Mr::new(pd, 16, ffi::LOCAL_WRITE, 0).map_err(io)?,
        };
        let qp = Qp::new(&self.id, pd, &cq, None).map_err(io)?;
        self.qp = Some(qp);
        self.bufs = Some(bufs);
        self.cq = Some(cq);
        for slot in 0..RECVS {
            self.post_recv(slot)?;
        }
        self.id
            .connect(&request(size, ConnectOrder::next()))
            .map_err(io)?;
        self.phase = Phase::Connecting;
        self.since = Instant::now();
        Ok(())
    }

    fn post_recv(&mut self, slot: usize) -> Result<(), String> {
        let b = self.bufs.as_ref().ok_or("no buffers")?;
        let sge = Sge {
            mr: &b.rcv,
            offset: slot * ACK_SLOT,
            len: ACK_SLOT as u32,
        };
        self.qp()?
            .post_recv(self.wr(K_RECV, slot as u8), &[sge])
            .map_err(io)?;
        self.rq_out += 1;
        Ok(())
    }

    fn next_rand(&mut self) -> u64 {
        // xorshift64
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        x
    }

    /// Posts the next round's work requests.
    fn start_round(&mut self, ops: &str, size: usize) -> Result<(), String> {
        self.seq += 1;
        let seq = self.seq;
        let len = 1 + (self.next_rand() % size as u64) as usize;
        let send_len = len.min(MSG_MAX - SEND_HDR);
        let (addr, rkey, rlen) = self.remote;
        let word_at = (addr + rlen as u64 - 8) & !7;
        let mut r = Round {
            seq,
            len,
            pending: 0,
            need_ack: false,
            ack: None,
        };
        let b = self.bufs.as_ref().ok_or("no buffers")?;
        let qp = self.qp.as_ref().ok_or("no QP")?;
        // What to post: kind, operation, local buffer, offset, length.
        let mut wrs: Vec<(u8, Op, &Mr, usize, usize)> = Vec::new();
        for op in ops.chars() {
            match op {
                'w' => {
                    b.w.write(0, &fill(seq, len)).map_err(io)?;
                    wrs.push((K_WRITE, Op::Write(addr, rkey), &b.w, 0, len));
                }
                'r' => {
                    b.r.write(0, &vec![0xee; len]).map_err(io)?;
                    wrs.push((K_READ, Op::Read(addr, rkey), &b.r, 0, len));
                }
                's' => {
                    r.need_ack = true;
                    let m = send_msg(seq, send_len);
                    b.s.write(0, &m).map_err(io)?;
                    wrs.push((K_SEND, Op::Send, &b.s, 0, m.len()));
                }
                'a' => {
                    // FetchAdd(1), then CmpSwap(w+1 -> w+2): RFC 7306 §5 executes them
                    // in order, so they return w and w+1.
                    let (cmp, swap) = (self.word + 1, self.word + 2);
                    wrs.push((K_FADD, Op::FetchAdd(word_at, rkey, 1), &b.a, 0, 8));
                    wrs.push((K_CSWAP, Op::CmpSwap(word_at, rkey, cmp, swap), &b.a, 8, 8));
                }
                _ => {}
            }
        }
        let mut res = Ok(());
        for (kind, op, mr, off, n) in wrs {
            let sge = Sge {
                mr,
                offset: off,
                len: n as u32,
            };
            match qp.post_send(
                wr_id(self.slot, self.gen, kind, 0),
                op,
                &[sge],
                ffi::SIGNALED,
            ) {
                Ok(()) => r.pending |= 1 << kind,
                Err(e) => {
                    res = Err(io(e));
                    break;
                }
            }
        }
        // Every WR posted is one the CQ returns.
        self.sq_out += r.pending.count_ones() as usize;
        self.round = Some(r);
        res
    }

    /// The round completed: checks every result; false if one is wrong.
    fn check_round(&mut self, ops: &str, t: &mut Tally) -> bool {
        let Some(r) = self.round.take() else {
            return true;
        };
        let Some(b) = self.bufs.as_ref() else {
            return false;
        };
        let mut errs = Vec::new();
        if ops.contains('r') {
            let want = if ops.contains('w') {
                fill(r.seq, r.len)
            } else {
                vec![0; r.len]
            };
            match b.r.read(0, r.len) {
                Ok(got) if got == want => {}
                Ok(got) => {
                    let i = got.iter().zip(&want).position(|(a, b)| a != b).unwrap_or(0);
                    errs.push(format!(
                        "Read back octet {i} of {}: {:#04x}, want {:#04x}",
                        r.len, got[i], want[i]
                    ));
                }
                Err(e) => errs.push(e.to_string()),
            }
            t.reads += 1;
        }
        if ops.contains('w') {
            t.writes += 1;
        }
        if ops.contains('s') {
            t.sends += 1;
            match r.ack {
                Some((seq, true)) if seq == r.seq => {}
                Some((seq, ok)) => {
                    errs.push(format!("answer to Send {}: seq {seq} ok {ok}", r.seq))
                }
                None => errs.push(format!("no answer to Send {}", r.seq)),
            }
        }
        if ops.contains('a') {
            t.fadds += 1;
            t.cswaps += 1;
            let v = b.a.read(0, 16).unwrap_or_default();
            let fa = v
                .get(0..8)
                .map(|x| u64::from_ne_bytes(x.try_into().unwrap_or([0; 8])));
            let cs = v
                .get(8..16)
                .map(|x| u64::from_ne_bytes(x.try_into().unwrap_or([0; 8])));
            if fa != Some(self.word) || cs != Some(self.word + 1) {
                errs.push(format!(
                    "atomics: FetchAdd returned {fa:?}, CmpSwap {cs:?}, want {} and {}",
                    self.word,
                    self.word + 1
                ));
            }
            self.word += 2;
        }
        self.rounds += 1;
        t.rounds += 1;
        if !errs.is_empty() {
            t.verify_errors += 1;
            if t.verify_errors <= 10 {
                eprintln!(
                    "rsiw-load client: conn {} qpn {} round {}: {}",
                    self.slot,
                    self.qp.as_ref().map_or(0, Qp::num),
                    r.seq,
                    errs.join("; ")
                );
            }
        }
        errs.is_empty()
    }

    fn fail(&mut self, t: &mut Tally) {
        if matches!(self.phase, Phase::Failed) {
            return;
        }
        if !self.established {
            t.setup_failed += 1;
        }
        self.failed = true;
        self.phase = Phase::Failed;
        self.since = Instant::now();
        self.round = None;
        // A QP that never connected flushes nothing by itself.
        self.error_due = self.qp.is_some();
        self.retry_error();
    }

    /// Moves the QP to ERROR if that is still due (its WQEs flush).
    fn retry_error(&mut self) {
        if self.error_due {
            self.error_due = self.qp.as_ref().is_some_and(|q| q.set_error().is_err());
        }
    }

    /// Handles the CQ; false if it was empty.
    fn poll(&mut self, cx: &mut Ctx<'_>) -> bool {
        let Some(cq) = self.cq.clone() else {
            return false;
        };
        let wcs = cq.poll().unwrap_or_default();
        let any = !wcs.is_empty();
        for w in wcs {
            let (_, _, kind, detail) = wr_parts(w.wr_id);
            if kind == K_RECV {
                self.rq_out = self.rq_out.saturating_sub(1);
            } else {
                self.sq_out = self.sq_out.saturating_sub(1);
            }
            if w.status != ffi::WC_SUCCESS {
                if w.status == ffi::WC_FLUSH {
                    cx.t.flushed += 1;
                } else {
                    cx.t.wc_errors += 1;
                    if cx.t.wc_errors <= 10 {
                        eprintln!(
                            "rsiw-load client: conn {} qpn {}: {} (kind {kind})",
                            self.slot,
                            self.qp.as_ref().map_or(0, Qp::num),
                            ffi::status_str(w.status)
                        );
                    }
                }
                if matches!(self.phase, Phase::Up | Phase::Connecting) {
                    self.fail(&mut cx.t);
                }
                continue;
            }
            if kind == K_RECV {
                let slot = usize::from(detail);
                let got = self
                    .bufs
                    .as_ref()
                    .and_then(|b| {
                        b.rcv
                            .read(slot * ACK_SLOT, (w.byte_len as usize).min(ACK_SLOT))
                            .ok()
                    })
                    .unwrap_or_default();
                if let Some(r) = self.round.as_mut() {
                    r.ack = parse_ack(&got);
                }
                if self.phase == Phase::Up && self.post_recv(slot).is_err() {
                    self.fail(&mut cx.t);
                }
            } else if let Some(r) = self.round.as_mut() {
                r.pending &= !(1u8 << kind);
            }
        }
        any
    }

    /// A round is complete when every WR and the answer are in.
    fn round_done(&self) -> bool {
        self.round
            .as_ref()
            .is_some_and(|r| r.pending == 0 && (!r.need_ack || r.ack.is_some()))
    }

    fn close(&mut self) {
        self.phase = Phase::Closing;
        self.since = Instant::now();
        if self.id.disconnect().is_err() {
            self.error_due = self.qp.is_some();
            self.retry_error();
        }
    }

    /// Everything this connection posted is back and its end was reported.
    fn drained(&self) -> bool {
        self.sq_out == 0 && self.rq_out == 0 && (self.disconnected || !self.established)
    }
}

/// What the main loop does with a slot next.
enum Next {
    Keep,
    /// The connection is gone; open another in the slot if this says so.
    Gone {
        reopen: bool,
    },
}

fn on_event(cx: &mut Ctx<'_>, c: &mut Conn, ev: &CmEvent) {
    let t = ev.kind;
    match t {
        rdma_cm_event_type_RDMA_CM_EVENT_ADDR_RESOLVED => {
            if c.id.resolve_route().is_err() {
                c.fail(&mut cx.t);
            } else {
                c.phase = Phase::Routing;
            }
        }
        rdma_cm_event_type_RDMA_CM_EVENT_ROUTE_RESOLVED => {
            if let Err(e) = c.setup(cx) {
                eprintln!("rsiw-load client: conn {}: set-up: {e}", c.slot);
                c.fail(&mut cx.t);
            }
        }
        rdma_cm_event_type_RDMA_CM_EVENT_ESTABLISHED => match parse_reply(&ev.private) {
            Some(r) if r.2 >= 16 => {
                c.remote = r;
                c.phase = Phase::Up;
                c.established = true;
                cx.t.established += 1;
                if let Some(qp) = &c.qp {
                    println!("conn {} qpn {}", c.slot, qp.num());
                }
            }
            _ => {
                eprintln!("rsiw-load client: conn {}: accept without a region", c.slot);
                c.fail(&mut cx.t);
            }
        },
        rdma_cm_event_type_RDMA_CM_EVENT_DISCONNECTED => {
            c.disconnected = true;
            cx.t.disconnects += 1;
            if c.phase == Phase::Up {
                c.fail(&mut cx.t);
            }
        }
        rdma_cm_event_type_RDMA_CM_EVENT_TIMEWAIT_EXIT => {}
        _ => {
            // REJECTED, UNREACHABLE, CONNECT_ERROR, ADDR_ERROR, ROUTE_ERROR.
            eprintln!(
                "rsiw-load client: conn {}: {} (status {})",
                c.slot,
                ev.name(),
                ev.status
            );
            c.fail(&mut cx.t);
        }
    }
}

/// One turn of a slot's connection.
fn step(cx: &mut Ctx<'_>, c: &mut Conn, finishing: bool) -> Next {
    match c.phase {
        Phase::Resolving | Phase::Routing | Phase::Connecting => {
            if c.since.elapsed() > SETUP_LIMIT {
                eprintln!(
                    "rsiw-load client: conn {}: no connection after {SETUP_LIMIT:?}",
                    c.slot
                );
                c.fail(&mut cx.t);
            }
            Next::Keep
        }
        Phase::Up => {
            if c.round.is_some() && !c.round_done() {
                return Next::Keep;
            }
            if c.round.is_some() {
                // Wrong data is counted (and shown); the connection goes on.
                c.check_round(&cx.o.ops, &mut cx.t);
            }
            let churn = cx.o.churn.is_some_and(|n| c.rounds >= n);
            let done = cx.o.rounds.is_some_and(|n| c.rounds >= n);
            if finishing || churn || (done && cx.o.seconds.is_none()) {
                if done && !finishing && cx.o.hold > Duration::ZERO {
                    return Next::Keep;
                }
                c.close();
                return Next::Keep;
            }
            if let Err(e) = c.start_round(&cx.o.ops, cx.o.size) {
                eprintln!("rsiw-load client: conn {}: post: {e}", c.slot);
                c.fail(&mut cx.t);
            }
            Next::Keep
        }
        Phase::Closing => {
            c.retry_error();
            if c.drained() {
                cx.t.closed += 1;
                let churn = cx.o.churn.is_some_and(|n| c.rounds >= n);
                return Next::Gone {
                    reopen: churn && !finishing,
                };
            }
            if c.since.elapsed() > cx.o.drain {
                hung(cx, c);
                return Next::Gone { reopen: false };
            }
            Next::Keep
        }
        Phase::Failed => {
            c.retry_error();
            if c.drained() {
                cx.t.failed += 1;
                return Next::Gone {
                    reopen: cx.o.reconnect && !finishing,
                };
            }
            if c.since.elapsed() > cx.o.drain {
                hung(cx, c);
                return Next::Gone { reopen: false };
            }
            Next::Keep
        }
    }
}

fn hung(cx: &mut Ctx<'_>, c: &Conn) {
    cx.t.hung += 1;
    eprintln!(
        "rsiw-load client: conn {} qpn {} ({:?}): {} sends and {} receives not completed, disconnect {} after {:?}",
        c.slot,
        c.qp.as_ref().map_or(0, Qp::num),
        c.phase,
        c.sq_out,
        c.rq_out,
        if c.disconnected { "seen" } else { "not seen" },
        cx.o.drain
    );
}

/// Runs the client; true if nothing was wrong.
pub fn run(o: &Opts) -> Result<bool, String> {
    let chan = Rc::new(Channel::new().map_err(io)?);
    // An ID bound to the device, for the process's one PD.
    let anchor = CmId::new(&chan).map_err(io)?;
    anchor.resolve_addr(o.addr).map_err(io)?;
    match chan.event(5000).map_err(io)? {
        Some(e) if e.kind == rdma_cm_event_type_RDMA_CM_EVENT_ADDR_RESOLVED => {}
        Some(e) => return Err(format!("resolving {}: {}", o.addr, e.name())),
        None => return Err(format!("resolving {}: no answer", o.addr)),
    }
    let pd = Pd::new(&anchor).map_err(io)?;
    let mut cx = Ctx {
        o,
        chan,
        pd,
        t: Tally::default(),
    };
    let started = Instant::now();
    let end = o.seconds.map(|s| started + Duration::from_secs(s));
    let mut slots: Vec<Option<Conn>> = (0..o.conns).map(|_| None).collect();
    let mut gens = vec![0u32; o.conns];
    // Slots still to (re)open, in order.
    let mut to_open: Vec<usize> = (0..o.conns).collect();
    let mut hold_from: Option<Instant> = None;
    let mut last_report = Instant::now();
    let mut idle = 0u32;
    let mut removed = false;
    loop {
        let finishing = STOP.load(Ordering::Relaxed)
            || removed
            || end.is_some_and(|e| Instant::now() >= e)
            || hold_from.is_some_and(|h| h.elapsed() >= o.hold);
        if finishing {
            to_open.clear();
        }
        // Open connections, a few set-ups at a time.
        let setting_up = slots
            .iter()
            .flatten()
            .filter(|c| {
                matches!(
                    c.phase,
                    Phase::Resolving | Phase::Routing | Phase::Connecting
                )
            })
            .count();
        for _ in setting_up..SETUP_WINDOW {
            let Some(s) = (!to_open.is_empty()).then(|| to_open.remove(0)) else {
                break;
            };
            gens[s] = gens[s].wrapping_add(1);
            match Conn::new(&mut cx, s, gens[s]) {
                Ok(c) => slots[s] = Some(c),
                Err(e) => {
                    eprintln!("rsiw-load client: conn {s}: {e}");
                    cx.t.setup_failed += 1;
                    cx.t.failed += 1;
                }
            }
        }
        let mut busy = false;
        while let Some(ev) = cx.chan.event(0).map_err(io)? {
            busy = true;
            if ev.kind == rdma_cm_event_type_RDMA_CM_EVENT_DEVICE_REMOVAL {
                removed = true;
                for c in slots.iter_mut().flatten() {
                    c.disconnected = true;
                    c.fail(&mut cx.t);
                }
                continue;
            }
            let key = ev.id_key();
            if let Some(c) = slots.iter_mut().flatten().find(|c| c.id.key() == key) {
                on_event(&mut cx, c, &ev);
            }
        }
        for (s, slot) in slots.iter_mut().enumerate() {
            let Some(c) = slot.as_mut() else { continue };
            busy |= c.poll(&mut cx);
            if let Next::Gone { reopen } = step(&mut cx, c, finishing) {
                *slot = None;
                busy = true;
                if reopen {
                    to_open.push(s);
                }
            }
        }
        // --hold: every connection did its rounds and waits.
        if hold_from.is_none()
            && o.hold > Duration::ZERO
            && o.rounds.is_some()
            && to_open.is_empty()
            && slots.iter().flatten().all(|c| {
                c.phase == Phase::Up && c.round.is_none() && o.rounds.is_some_and(|n| c.rounds >= n)
            })
            && slots.iter().any(Option::is_some)
        {
            println!(
                "rsiw-load client: holding {} connections",
                slots.iter().flatten().count()
            );
            hold_from = Some(Instant::now());
        }
        if let Some(every) = o.report {
            if last_report.elapsed() >= every {
                last_report = Instant::now();
                let up = slots
                    .iter()
                    .flatten()
                    .filter(|c| c.phase == Phase::Up)
                    .count();
                println!(
                    "rsiw-load client: t {}s up {up} rounds {} verify_errors {} failed {}",
                    started.elapsed().as_secs(),
                    cx.t.rounds,
                    cx.t.verify_errors,
                    cx.t.failed
                );
            }
        }
        if to_open.is_empty() && slots.iter().all(Option::is_none) {
            break;
        }
        idle = if busy { 0 } else { idle.saturating_add(1) };
        if idle > 100 {
            std::thread::sleep(Duration::from_micros(500));
        }
    }
    let t = &cx.t;
    println!(
        "rsiw-load client: opened {} established {} closed {} failed {} setup_failed {}; rounds {}; sends {} writes {} reads {} fetchadds {} cmpswaps {}; verify_errors {}; wc_errors {} flushed {}; disconnects {}; hung {}; {:.1}s",
        t.opened,
        t.established,
        t.closed,
        t.failed,
        t.setup_failed,
        t.rounds,
        t.sends,
        t.writes,
        t.reads,
        t.fadds,
        t.cswaps,
        t.verify_errors,
        t.wc_errors,
        t.flushed,
        t.disconnects,
        t.hung,
        started.elapsed().as_secs_f64()
    );
    Ok(t.verify_errors == 0 && t.hung == 0 && (o.expect_failure || t.failed == 0))
}
