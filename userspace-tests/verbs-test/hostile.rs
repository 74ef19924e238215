// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Hostile-user cases that need their own processes: binding a connection to a QP
//! that already has one, and to another process's QP (rdma_cm passes the QP number
//! of `rdma_accept` through unchecked, so only the device can refuse).
//!
//! `--takeover ADDR` runs the owner side; it spawns `--takeover-intruder ADDR QPN`
//! as a second process. Each check prints `RSIW-TEST PASS|FAIL hostile <what>`.
//!
//! `--flush-hammer ADDR`: a thread keeps publishing a full ring of (garbage)
//! SQEs and RQEs by writing the QP's producer indices directly while the QP is
//! moved to ERROR: the kernel's flush must take what was posted when it began
//! and return, however fast the producer moves.
//!
//! `--corrupt-wqe ADDR`: elements the provider would never build, written
//! straight into a live QP's rings; each completes with its error.

use crate::ffi::{self, Channel, CmId, Cq, Mr, Pd, Qp, Sge};
use crate::requester::expect_event;
use crate::wait::{self, Pending};
use core::mem::offset_of;
use rsiw_abi::ring::{slot_offset, RingHeader};
use rsiw_abi::wqe::{Rqe, SqOpcode, Sqe, SQE_INLINE, SQE_SIGNALED};
use std::io::{BufRead, BufReader};
use std::net::SocketAddrV4;
use std::process::{Command, ExitCode, Stdio};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Owner mode.
const OWNER_FLAG: &str = "--takeover";
/// Intruder mode (spawned by the owner).
const INTRUDER_FLAG: &str = "--takeover-intruder";
/// What the intruder prints once it listens.
const LISTENING: &str = "intruder listening";

fn io(e: std::io::Error) -> String {
    e.to_string()
}

fn addr_at(args: &[String], i: usize) -> Result<SocketAddrV4, String> {
    args.get(i)
        .ok_or("missing ADDR:PORT")?
        .parse()
        .map_err(|e| format!("bad ADDR:PORT: {e}"))
}

/// One end of a connection: an ID with PD, CQ, QP and a small region.
struct End {
    qp: Qp,
    mr: Mr,
    cq: Rc<Cq>,
    _pd: Pd,
    id: CmId,
    pend: Pending,
}

impl End {
    fn new(id: CmId) -> Result<Self, String> {
        Self::with_sq(id, 64)
    }

    /// An end whose SQ holds `sq` WRs.
    fn with_sq(id: CmId, sq: u32) -> Result<Self, String> {
        let pd = Pd::new(&id).map_err(io)?;
        let cq = Rc::new(Cq::new(&id, 64, false).map_err(io)?);
        let qp = Qp::with_sq(&id, &pd, &cq, None, sq).map_err(io)?;
        let mr = Mr::new(&pd, 4096, ffi::LOCAL_WRITE, 0).map_err(io)?;
        Ok(Self {
            qp,
            mr,
            cq,
            _pd: pd,
            id,
            pend: Pending::default(),
        })
    }

    fn post_recv(&self, wr_id: u64) -> Result<(), String> {
        let sge = Sge {
            mr: &self.mr,
            offset: 0,
            len: 2048,
        };
        self.qp.post_recv(wr_id, &[sge]).map_err(io)
    }

    fn send(&self, wr_id: u64, data: &[u8]) -> Result<(), String> {
        self.mr.write(2048, data).map_err(io)?;
        let sge = Sge {
            mr: &self.mr,
            offset: 2048,
            len: data.len() as u32,
        };
        self.qp
            .post_send(wr_id, ffi::Op::Send, &[sge], ffi::SIGNALED)
            .map_err(io)
    }

    /// Waits (10 s) for `wr_id` and checks its status is `want`; `what` names
    /// the work request in the error.
    fn expect_status(&mut self, wr_id: u64, want: u32, what: &str) -> Result<(), String> {
        let w = wait::wait_for(&mut self.pend, &self.cq, wr_id, Duration::from_secs(10))
            .map_err(|e| format!("{what}: {e}"))?;
        wait::expect(&w, want, None).map_err(|e| format!("{what}: {e}"))
    }

    /// Waits for receive `wr_id` and checks it holds `data`.
    fn expect_recv(&mut self, wr_id: u64, data: &[u8]) -> Result<(), String> {
        let w = wait::wait_for(&mut self.pend, &self.cq, wr_id, Duration::from_secs(10))?;
        wait::expect(&w, ffi::WC_SUCCESS, Some(ffi::OP_RECV))?;
        let got = self.mr.read(0, data.len()).map_err(io)?;
        if got != data {
            return Err(format!("received {got:?}, sent {data:?}"));
        }
        Ok(())
    }
}

/// A client end connecting to `to`, with a receive posted.
fn dial(to: SocketAddrV4) -> Result<(Rc<Channel>, End), String> {
    dial_sq(to, 64)
}

/// `dial` with an SQ of `sq` WRs.
fn dial_sq(to: SocketAddrV4, sq: u32) -> Result<(Rc<Channel>, End), String> {
    use ffi::sys::*;
    let chan = Rc::new(Channel::new().map_err(io)?);
    let id = CmId::new(&chan).map_err(io)?;
    id.resolve_addr(to).map_err(io)?;
    expect_event(&chan, rdma_cm_event_type_RDMA_CM_EVENT_ADDR_RESOLVED, 5000)?;
    id.resolve_route().map_err(io)?;
    expect_event(&chan, rdma_cm_event_type_RDMA_CM_EVENT_ROUTE_RESOLVED, 5000)?;
    let end = End::with_sq(id, sq)?;
    end.post_recv(1)?;
    end.id.connect(&[]).map_err(io)?;
    Ok((chan, end))
}

/// The connect of `chan`'s ID must not be established.
fn expect_refused(chan: &Channel) -> Result<(), String> {
    match chan.event(10_000).map_err(io)? {
        None => Err("no rdma_cm event for the refused connect within 10 s".into()),
        Some(ev) if ev.kind == ffi::sys::rdma_cm_event_type_RDMA_CM_EVENT_ESTABLISHED => {
            Err("the connect naming another QP was ESTABLISHED".into())
        }
        Some(_) => Ok(()),
    }
}

fn report(name: &str, r: Result<(), String>) -> bool {
    match r {
        Ok(()) => {
            println!("RSIW-TEST PASS hostile {name}");
            true
        }
        Err(e) => {
            println!("RSIW-TEST FAIL hostile {name}: {}", e.replace('\n', " "));
            false
        }
    }
}

/// The owner side; false if a check failed.
fn owner(addr: SocketAddrV4) -> Result<bool, String> {
    use ffi::sys::*;
    let mut ok = true;
    // Connection 1: a client and the server QP that the intruder will name.
    let Pair {
        lchan,
        _listener,
        _c1chan,
        mut c1,
        mut s1,
    } = connected(addr, 64)?;
    s1.post_recv(1)?;
    s1.post_recv(2)?;
    c1.send(10, b"before")?;
    ok &= report("connection 1 carries a Send", s1.expect_recv(1, b"before"));

    // Connection 2 accepted naming connection 1's QP: refused, connection 1 unharmed.
    let (c2chan, _c2) = dial(addr)?;
    let ev = expect_event(
        &lchan,
        rdma_cm_event_type_RDMA_CM_EVENT_CONNECT_REQUEST,
        10_000,
    )?;
    let s2 = CmId::adopt(&lchan, &ev).map_err(io)?;
    drop(ev);
    let r = s2.accept_qpn(s1.qp.num());
    ok &= report(
        "accept naming a connected QP is refused",
        match r {
            Ok(()) => Err("rdma_accept succeeded".into()),
            Err(_) => Ok(()),
        },
    );
    ok &= report("its initiator is not connected", expect_refused(&c2chan));
    c1.send(11, b"after-1")?;
    ok &= report("connection 1 still receives", s1.expect_recv(2, b"after-1"));
    s1.send(12, b"after-2")?;
    ok &= report("connection 1 still sends", c1.expect_recv(1, b"after-2"));

    // Another process accepts naming a QP of ours that has no connection yet.
    let spare_chan = Rc::new(Channel::new().map_err(io)?);
    let spare_id = CmId::new(&spare_chan).map_err(io)?;
    spare_id.resolve_addr(addr).map_err(io)?;
    expect_event(
        &spare_chan,
        rdma_cm_event_type_RDMA_CM_EVENT_ADDR_RESOLVED,
        5000,
    )?;
    let spare = End::new(spare_id)?;
    let iaddr = SocketAddrV4::new(*addr.ip(), addr.port() + 1);
    let exe = std::env::current_exe().map_err(io)?;
    let mut child = Command::new(exe)
        .args([
            INTRUDER_FLAG,
            &iaddr.to_string(),
            &spare.qp.num().to_string(),
        ])
        .stdout(Stdio::piped())
        .spawn()
        .map_err(io)?;
    let mut lines = BufReader::new(child.stdout.take().ok_or("no intruder stdout")?).lines();
    let mut listening = false;
    for l in lines.by_ref() {
        let l = l.map_err(io)?;
        println!("{l}");
        if l == LISTENING {
            listening = true;
            break;
        }
    }
    if !listening {
        return Err("the intruder did not come up".into());
    }
    let (c3chan, _c3) = dial(iaddr)?;
    ok &= report(
        "a connect accepted naming another process's QP is not connected",
        expect_refused(&c3chan),
    );
    for l in lines {
        println!("{}", l.map_err(io)?);
    }
    let st = child.wait().map_err(io)?;
    ok &= report(
        "the other process's accept naming our QP is refused",
        if st.success() {
            Ok(())
        } else {
            Err(format!("intruder: {st}"))
        },
    );

    // Teardown: destroying the QPs must not hang (the harness times it).
    s1.id.disconnect().map_err(io)?;
    drop(s1);
    drop(c1);
    drop(spare);
    ok &= report("QPs destroyed", Ok(()));
    Ok(ok)
}

/// The intruder: listens on `addr`, accepts the first request naming `qpn`.
/// Exits 0 if the accept is refused.
fn intruder(addr: SocketAddrV4, qpn: u32) -> Result<(), String> {
    use ffi::sys::*;
    let chan = Rc::new(Channel::new().map_err(io)?);
    let l = CmId::new(&chan).map_err(io)?;
    l.listen(addr).map_err(io)?;
    println!("{LISTENING}");
    let ev = expect_event(
        &chan,
        rdma_cm_event_type_RDMA_CM_EVENT_CONNECT_REQUEST,
        10_000,
    )?;
    let id = CmId::adopt(&chan, &ev).map_err(io)?;
    drop(ev);
    match id.accept_qpn(qpn) {
        Ok(()) => Err(format!(
            "rdma_accept naming QP {qpn} of another process succeeded"
        )),
        Err(e) => {
            println!("intruder: rdma_accept naming QP {qpn}: {e}");
            Ok(())
        }
    }
}

/// A ring's producer index, written from the hammer thread.
struct Producer {
    word: *const AtomicU32,
    consumer: *const AtomicU32,
    entries: u32,
}

// SAFETY: the ring mapping outlives the thread (joined before the QP goes), and
// the words are atomics shared with the kernel anyway.
unsafe impl Send for Producer {}

impl Producer {
    fn new(r: &crate::dv::RawRing) -> Option<Self> {
        if r.buf.is_null() {
            return None;
        }
        let base = r.buf.cast::<u8>();
        // SAFETY: `buf` is the ring's header in the live mapping; the offsets
        // are the ABI's.
        let (p, c) = unsafe {
            (
                base.add(offset_of!(RingHeader, producer)),
                base.add(offset_of!(RingHeader, consumer)),
            )
        };
        Some(Self {
            word: p.cast(),
            consumer: c.cast(),
            entries: r.entries,
        })
    }

    /// Writes `elem` into the slot at the producer index of a ring whose
    /// slots of `stride` bytes start at `buf`, and publishes it.
    fn publish_one<T: Copy>(&self, buf: *mut u8, stride: usize, elem: T) {
        // SAFETY: live, aligned header words and slots of the mapping (see
        // `new`); the slot at the producer index is the poster's, `T` is one
        // of the ABI's elements, no larger than `stride`.
        unsafe {
            let p = (*self.word).load(Ordering::Relaxed);
            let off = slot_offset(p, self.entries, stride);
            buf.add(off).cast::<T>().write_volatile(elem);
            (*self.word).store(p.wrapping_add(1), Ordering::Release);
        }
    }

    /// Claims a full ring beyond what the kernel consumed.
    fn fill(&self) {
        // SAFETY: live, aligned header words (see `new`).
        unsafe {
            let c = (*self.consumer).load(Ordering::Acquire);
            (*self.word).store(c.wrapping_add(self.entries), Ordering::Release);
        }
    }
}

/// The `--flush-hammer` run; false if a check failed.
fn flush_hammer(addr: SocketAddrV4) -> Result<bool, String> {
    let mut ok = true;
    let Pair { c1, s1, .. } = connected(addr, BIG_SQ)?;
    let (sq, rq) = crate::dv::query_qp(&c1.qp)?;
    let rings: Vec<Producer> = [sq, rq].iter().filter_map(Producer::new).collect();
    let consumers: Vec<(*const AtomicU32, u32)> =
        rings.iter().map(|r| (r.consumer, r.entries)).collect();
    // SAFETY: live consumer words of the rings' headers (see `Producer::new`).
    let taken = |i: usize| unsafe { (*consumers[i].0).load(Ordering::Acquire) };
    let stop = Arc::new(AtomicBool::new(false));
    let hammer = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let end = Instant::now() + HAMMER;
            while !stop.load(Ordering::Relaxed) && Instant::now() < end {
                for r in &rings {
                    r.fill();
                }
            }
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    let before: Vec<u32> = (0..consumers.len()).map(taken).collect();
    // ERROR: the flush runs in this call (rdma_disconnect would only move an
    // iWARP QP to SQD and leave the flush to the close).
    let t = Instant::now();
    let r = c1.qp.set_error();
    let took = t.elapsed();
    let flushed: Vec<u32> = (0..consumers.len())
        .map(|i| taken(i).wrapping_sub(before[i]))
        .collect();
    stop.store(true, Ordering::Relaxed);
    hammer.join().map_err(|_| "hammer thread panicked")?;
    println!(
        "flush-hammer: modify_qp(ERR) returned {r:?} after {} ms, flushed {flushed:?} (rings of {:?})",
        took.as_millis(),
        consumers.iter().map(|c| c.1).collect::<Vec<_>>()
    );
    // Each flush takes what was posted when it began, at most a ring, never
    // what the hammer posts meanwhile. Two flushes may fall in the call: the
    // one modify_qp runs, and the one the abortive close of the stream runs
    // when the socket reports it (possibly on the other CPU meanwhile).
    let bounded = flushed.iter().zip(&consumers).all(|(f, c)| *f <= 2 * c.1);
    ok &= report(
        "flushes take at most a ring each while the producer index keeps moving",
        if bounded && took < FLUSH_LIMIT {
            Ok(())
        } else {
            Err(format!(
                "modify_qp(ERR) took {} ms and flushed {flushed:?}",
                took.as_millis()
            ))
        },
    );
    drop(c1);
    drop(s1);
    ok &= report("QPs destroyed after the hammer", Ok(()));
    Ok(ok)
}

/// A listener on `addr` and one connection to it.
struct Pair {
    /// The listener's event channel (more requests may come).
    lchan: Rc<Channel>,
    _listener: CmId,
    /// The client's event channel.
    _c1chan: Rc<Channel>,
    c1: End,
    s1: End,
}

/// A listener on `addr` and a connection to it whose client SQ holds `sq` WRs.
fn connected(addr: SocketAddrV4, sq: u32) -> Result<Pair, String> {
    use ffi::sys::*;
    let lchan = Rc::new(Channel::new().map_err(io)?);
    let listener = CmId::new(&lchan).map_err(io)?;
    listener.listen(addr).map_err(io)?;
    let (c1chan, c1) = dial_sq(addr, sq)?;
    let ev = expect_event(
        &lchan,
        rdma_cm_event_type_RDMA_CM_EVENT_CONNECT_REQUEST,
        10_000,
    )?;
    let s1 = End::new(CmId::adopt(&lchan, &ev).map_err(io)?)?;
    drop(ev);
    s1.id.accept(&[]).map_err(io)?;
    expect_event(&lchan, rdma_cm_event_type_RDMA_CM_EVENT_ESTABLISHED, 10_000)?;
    expect_event(
        &c1chan,
        rdma_cm_event_type_RDMA_CM_EVENT_ESTABLISHED,
        10_000,
    )?;
    Ok(Pair {
        lchan,
        _listener: listener,
        _c1chan: c1chan,
        c1,
        s1,
    })
}

/// The SQ depth of the hammer cases: far more WQEs than one TX run may take.
const BIG_SQ: u32 = 4096;

/// One connection whose server QP allows only `qp_access`, an RDMA `op` from
/// the client to a region that allows everything: `want` is the client's
/// completion status.
fn qp_access_case(addr: SocketAddrV4, qp_access: u32, read: bool, want: u32) -> Result<(), String> {
    let Pair { mut c1, s1, .. } = connected(addr, 64)?;
    let all = ffi::LOCAL_WRITE | ffi::REMOTE_WRITE | ffi::REMOTE_READ;
    let target = Mr::new(&s1._pd, 4096, all, 0x5a).map_err(io)?;
    s1.qp.set_access(qp_access).map_err(io)?;
    let sge = Sge {
        mr: &c1.mr,
        offset: 0,
        len: 64,
    };
    let (op, opcode) = if read {
        (ffi::Op::Read(target.addr(), target.rkey()), ffi::OP_READ)
    } else {
        (ffi::Op::Write(target.addr(), target.rkey()), ffi::OP_WRITE)
    };
    c1.qp.post_send(20, op, &[sge], ffi::SIGNALED).map_err(io)?;
    let w = wait::wait_for(&mut c1.pend, &c1.cq, 20, Duration::from_secs(10))?;
    if read || want == ffi::WC_SUCCESS {
        let op = (want == ffi::WC_SUCCESS).then_some(opcode);
        return wait::expect(&w, want, op);
    }
    // A Write completes when it is sent (RFC 5040 §5.5): the responder's
    // refusal reaches the next request, which must fail, and the region must
    // be as it was.
    let sge = Sge {
        mr: &c1.mr,
        offset: 0,
        len: 64,
    };
    let rd = ffi::Op::Read(target.addr(), target.rkey());
    c1.qp.post_send(21, rd, &[sge], ffi::SIGNALED).map_err(io)?;
    let w = wait::wait_for(&mut c1.pend, &c1.cq, 21, Duration::from_secs(10))?;
    if w.status == ffi::WC_SUCCESS {
        return Err("the Read after the refused Write succeeded".into());
    }
    if target.read(0, 64).map_err(io)? != [0x5a; 64] {
        return Err("the refused Write changed the region".into());
    }
    Ok(())
}

/// The `--qp-access` run: the QP's own remote rights (IBA 10.2.4) are enforced
/// besides the region's; false if a check failed.
fn qp_access(addr: SocketAddrV4) -> Result<bool, String> {
    let port = |n: u16| SocketAddrV4::new(*addr.ip(), addr.port() + n);
    let mut ok = true;
    ok &= report(
        "Write to a QP without remote write is refused",
        qp_access_case(port(0), ffi::REMOTE_READ, false, ffi::WC_REM_ACCESS),
    );
    ok &= report(
        "Read from a QP without remote read is refused",
        qp_access_case(port(1), ffi::REMOTE_WRITE, true, ffi::WC_REM_ACCESS),
    );
    ok &= report(
        "Write to a QP with remote write",
        qp_access_case(port(2), ffi::REMOTE_WRITE, false, ffi::WC_SUCCESS),
    );
    ok &= report(
        "Read from a QP with remote read",
        qp_access_case(port(3), ffi::REMOTE_READ, true, ffi::WC_SUCCESS),
    );
    Ok(ok)
}

/// The SQ as the local-operation hammer fills it.
struct SqFiller {
    ring: Producer,
    buf: *mut u8,
    stride: usize,
    sqe: Sqe,
}

// SAFETY: as for `Producer`: the mapping outlives the thread.
unsafe impl Send for SqFiller {}

impl SqFiller {
    /// Writes SQEs up to a full ring and publishes them.
    fn fill(&self) {
        // SAFETY: live, aligned header words and slots of the mapping (see
        // `Producer::new`); slots between the consumer and our producer are ours.
        unsafe {
            let c = (*self.ring.consumer).load(Ordering::Acquire);
            let p = (*self.ring.word).load(Ordering::Relaxed);
            let mut n = p;
            while n.wrapping_sub(c) < self.ring.entries {
                let off = slot_offset(n, self.ring.entries, self.stride);
                self.buf.add(off).cast::<Sqe>().write_volatile(self.sqe);
                n = n.wrapping_add(1);
            }
            (*self.ring.word).store(n, Ordering::Release);
        }
    }
}

/// The `--local-hammer` run: the SQ full of local operations that succeed
/// at once (LOCAL_INV of an unbound memory window), then the doorbell, which
/// transmits in this thread's system call: the call takes at most a TX run's
/// budget and leaves the rest to the work queue, which then takes it all.
fn local_hammer(addr: SocketAddrV4) -> Result<bool, String> {
    let mut ok = true;
    let Pair { c1, s1, .. } = connected(addr, BIG_SQ)?;
    let mw = ffi::Mw::new(&c1._pd).map_err(io)?;
    let (sq, _) = crate::dv::query_qp(&c1.qp)?;
    let ring = Producer::new(&sq).ok_or("no SQ ring")?;
    let mut sqe = Sqe {
        wr_id: 77,
        opcode: SqOpcode::LocalInv as u8,
        ..Sqe::default()
    };
    sqe.set_inv_rkey(mw.rkey());
    let consumer = ring.consumer;
    let filler = SqFiller {
        ring,
        buf: sq.buf.cast(),
        stride: sq.stride as usize,
        sqe,
    };
    // SAFETY: the live consumer word of the SQ's header (see `Producer::new`).
    let consumed = || unsafe { (*consumer).load(Ordering::Acquire) };
    let before = consumed();
    filler.fill();
    let t = Instant::now();
    let r = crate::dv::ring_sq_doorbell(&c1.qp);
    let took = t.elapsed();
    let in_call = consumed().wrapping_sub(before);
    let end = Instant::now() + Duration::from_secs(10);
    while consumed().wrapping_sub(before) < sq.entries && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(10));
    }
    let done = consumed().wrapping_sub(before);
    println!(
        "local-hammer: the doorbell returned {r:?} after {} ms having taken {in_call}; {done} of {} LOCAL_INVs taken in all",
        took.as_millis(),
        sq.entries
    );
    ok &= report(
        "a doorbell takes at most a TX run's budget of local operations",
        if in_call < sq.entries / 2 {
            Ok(())
        } else {
            Err(format!(
                "{in_call} of {} taken in the system call",
                sq.entries
            ))
        },
    );
    let mut pend = Pending::default();
    pend.poll(&c1.cq).map_err(io)?;
    let errors: Vec<String> = pend
        .drain()
        .iter()
        .filter(|w| w.status != ffi::WC_SUCCESS)
        .map(|w| format!("wr_id {} {}", w.wr_id, ffi::status_str(w.status)))
        .collect();
    ok &= report(
        "the work queue takes the rest, every one succeeds",
        if errors.is_empty() && done == sq.entries {
            Ok(())
        } else {
            Err(format!(
                "{done} of {} taken, errors: {errors:?}",
                sq.entries
            ))
        },
    );
    drop(c1);
    drop(s1);
    drop(mw);
    ok &= report("QPs destroyed after the local hammer", Ok(()));
    Ok(ok)
}

/// An SQE of `op` with one SGE, signaled, `wr_id` 9.
fn sqe_with_sge(op: SqOpcode, lkey: u32, addr: u64, length: u32) -> Sqe {
    let mut sqe = Sqe {
        wr_id: 9,
        opcode: op as u8,
        flags: SQE_SIGNALED,
        ..Sqe::default()
    };
    sqe.num_sge = 1;
    sqe.set_sge(0, rsiw_abi::wqe::Sge { addr, length, lkey });
    sqe
}

/// An SQE the provider would never build, from the client region's lkey and
/// address (4096 octets), and the status its completion must have.
type CorruptSqe = (&'static str, fn(u32, u64) -> Sqe, u32);

/// The corrupt SQEs: what `Sqe::validate` refuses, and SGEs that name no
/// memory of the QP's (checked when TX takes the WQE).
const CORRUPT_SQES: [CorruptSqe; 8] = [
    (
        "an unknown opcode",
        |k, a| Sqe {
            opcode: 99,
            ..sqe_with_sge(SqOpcode::Send, k, a, 8)
        },
        ffi::WC_LOC_QP_OP,
    ),
    (
        "Send with Immediate (no iWARP encoding)",
        |k, a| sqe_with_sge(SqOpcode::SendImm, k, a, 8),
        ffi::WC_LOC_QP_OP,
    ),
    (
        "flag bits the ABI does not define",
        |k, a| Sqe {
            flags: SQE_SIGNALED | 0x80,
            ..sqe_with_sge(SqOpcode::Send, k, a, 8)
        },
        ffi::WC_LOC_QP_OP,
    ),
    (
        "num_sge 200",
        |k, a| Sqe {
            num_sge: 200,
            ..sqe_with_sge(SqOpcode::Send, k, a, 8)
        },
        ffi::WC_LOC_QP_OP,
    ),
    (
        "inline_len 255",
        |k, a| Sqe {
            flags: SQE_SIGNALED | SQE_INLINE,
            inline_len: u8::MAX,
            ..sqe_with_sge(SqOpcode::Send, k, a, 8)
        },
        ffi::WC_LOC_LEN,
    ),
    (
        "a Read into two SGEs",
        |k, a| {
            let mut s = sqe_with_sge(SqOpcode::Read, k, a, 8);
            s.num_sge = 2;
            s.set_sge(
                1,
                rsiw_abi::wqe::Sge {
                    addr: a + 8,
                    length: 8,
                    lkey: k,
                },
            );
            s
        },
        ffi::WC_LOC_QP_OP,
    ),
    (
        "an lkey no region has",
        |k, a| sqe_with_sge(SqOpcode::Send, k ^ 0x00ff_ff00, a, 8),
        ffi::WC_LOC_PROT,
    ),
    (
        "an SGE past its region's end",
        |k, a| sqe_with_sge(SqOpcode::Send, k, a + 4096 - 8, 64),
        ffi::WC_LOC_PROT,
    ),
];

/// One corrupt SQE on a connection of its own: it completes with `want`, the
/// QP is in ERROR after it (a valid Send written behind it is flushed), and
/// the QPs are destroyed.
fn corrupt_sqe_case(
    addr: SocketAddrV4,
    make: fn(u32, u64) -> Sqe,
    want: u32,
) -> Result<(), String> {
    let Pair { mut c1, s1, .. } = connected(addr, 64)?;
    let (sq, _) = crate::dv::query_qp(&c1.qp)?;
    let ring = Producer::new(&sq).ok_or("no SQ ring")?;
    let (buf, stride) = (sq.buf.cast::<u8>(), sq.stride as usize);
    let sqe = make(c1.mr.lkey(), c1.mr.addr());
    ring.publish_one(buf, stride, sqe);
    // What the doorbell returns is not the point: the completion is.
    let rang = crate::dv::ring_sq_doorbell(&c1.qp);
    c1.expect_status(
        sqe.wr_id,
        want,
        &format!("the corrupt SQE (doorbell {rang:?})"),
    )?;
    // Behind the provider's back: its own producer index is one behind.
    let mut after = sqe_with_sge(SqOpcode::Send, c1.mr.lkey(), c1.mr.addr(), 8);
    after.wr_id = 10;
    ring.publish_one(buf, stride, after);
    let rang = crate::dv::ring_sq_doorbell(&c1.qp);
    c1.expect_status(
        10,
        ffi::WC_FLUSH,
        &format!("a Send after the corrupt SQE (doorbell {rang:?})"),
    )?;
    drop(c1);
    drop(s1);
    Ok(())
}

/// A corrupt RQE (`num_sge` 200) on the server, then a Send from the client:
/// the RQE completes with LOC_QP_OP_ERR (the kernel's copy is refused when
/// RX takes it) and the QPs are destroyed.
fn corrupt_rqe_case(addr: SocketAddrV4) -> Result<(), String> {
    let Pair { c1, mut s1, .. } = connected(addr, 64)?;
    let (_, rq) = crate::dv::query_qp(&s1.qp)?;
    let ring = Producer::new(&rq).ok_or("no RQ ring")?;
    let mut rqe = Rqe {
        wr_id: 21,
        num_sge: 200,
        ..Rqe::default()
    };
    rqe.set_sge(
        0,
        rsiw_abi::wqe::Sge {
            addr: s1.mr.addr(),
            length: 64,
            lkey: s1.mr.lkey(),
        },
    );
    ring.publish_one(rq.buf.cast(), rq.stride as usize, rqe);
    c1.send(5, b"to a corrupt RQE")?;
    s1.expect_status(21, ffi::WC_LOC_QP_OP, "the corrupt RQE")?;
    drop(c1);
    drop(s1);
    Ok(())
}

/// The `--corrupt-wqe` run: one connection per corrupt element, on ports
/// `addr`, `addr + 1`, ...
fn corrupt_wqe(addr: SocketAddrV4) -> Result<bool, String> {
    let port = |n: usize| SocketAddrV4::new(*addr.ip(), addr.port() + n as u16);
    let mut ok = true;
    for (i, (name, make, want)) in CORRUPT_SQES.iter().enumerate() {
        ok &= report(
            &format!(
                "a corrupt SQE ({name}) completes with {}",
                ffi::status_str(*want)
            ),
            corrupt_sqe_case(port(i), *make, *want),
        );
    }
    ok &= report(
        "a corrupt RQE (num_sge 200) completes with local QP operation error",
        corrupt_rqe_case(port(CORRUPT_SQES.len())),
    );
    Ok(ok)
}

/// `--read-from ADDR LEN`: connects to ADDR (a raw peer's MPA responder) and reads
/// LEN octets from it with one RDMA Read; prints `read status NAME` and the first
/// octet of the sink, then (1 s later, what the peer sent after it had its time)
/// `past LEN: N octets written` for the rest of the 4 KiB region. Exits 0 once the
/// Read completed, whatever its status.
fn read_from(addr: SocketAddrV4, len: u32) -> Result<bool, String> {
    use ffi::sys::*;
    let (chan, mut c) = dial(addr)?;
    expect_event(&chan, rdma_cm_event_type_RDMA_CM_EVENT_ESTABLISHED, 10_000)?;
    c.mr.write(0, &[0x11; 4096]).map_err(io)?;
    let sge = Sge {
        mr: &c.mr,
        offset: 0,
        len,
    };
    c.qp.post_send(30, ffi::Op::Read(0x1000, 0x1234), &[sge], ffi::SIGNALED)
        .map_err(io)?;
    let w = wait::wait_for(&mut c.pend, &c.cq, 30, Duration::from_secs(10))?;
    let first = c.mr.read(0, 1).map_err(io)?;
    println!(
        "read status {} byte_len {} sink[0] {:#04x}",
        ffi::status_str(w.status),
        w.byte_len,
        first[0]
    );
    std::thread::sleep(Duration::from_secs(1));
    let from = (len as usize).min(4096);
    let rest = c.mr.read(from, 4096 - from).map_err(io)?;
    let n = rest.iter().filter(|&&b| b != 0x11).count();
    println!("past {len}: {n} octets written");
    Ok(true)
}

/// `--close-unanswered`: connects to a peer that never closes its side, posts 8
/// receives and disconnects gracefully (iw_cm: the QP to SQD, our FIN). The receives
/// must still flush: rsiw moves the QP to ERROR `mpa_timeout_ms` after its close when
/// no FIN came back. Prints `flushed 8 receives S s after the disconnect`.
fn close_unanswered(addr: SocketAddrV4) -> Result<bool, String> {
    use ffi::sys::*;
    let (chan, mut c) = dial(addr)?;
    expect_event(&chan, rdma_cm_event_type_RDMA_CM_EVENT_ESTABLISHED, 10_000)?;
    for wr_id in 2..=8 {
        c.post_recv(wr_id)?;
    }
    let t0 = Instant::now();
    c.id.disconnect().map_err(io)?;
    expect_event(&chan, rdma_cm_event_type_RDMA_CM_EVENT_DISCONNECTED, 10_000)?;
    for wr_id in 1..=8 {
        let w = wait::wait_for(&mut c.pend, &c.cq, wr_id, Duration::from_secs(30))
            .map_err(|e| format!("receive {wr_id} after the disconnect: {e}"))?;
        wait::expect(&w, ffi::WC_FLUSH, None)?;
    }
    println!(
        "flushed 8 receives {:.1} s after the disconnect",
        t0.elapsed().as_secs_f64()
    );
    Ok(true)
}

/// `--stag-guess ADDR COUNT`: registers COUNT regions in one PD and prints how their
/// rkeys relate (`rkeys COUNT: D distinct index steps, K distinct key steps, R rising
/// indices, first …`: with keys and indices counting up every step is 0x101); then,
/// connected to a raw peer (`rsiw-rawpeer serve-guess`), sends it the rkey and address
/// of the middle region and the address of the one after it, and waits for the
/// stream to end (the peer's guessed Read gets a Terminate): `stream ended, receive
/// flushed`.
fn stag_guess(addr: SocketAddrV4, count: usize) -> Result<bool, String> {
    use ffi::sys::*;
    let (chan, mut c) = dial(addr)?;
    expect_event(&chan, rdma_cm_event_type_RDMA_CM_EVENT_ESTABLISHED, 10_000)?;
    let access = ffi::LOCAL_WRITE | ffi::REMOTE_READ;
    let mrs = (0..count.max(3))
        .map(|_| Mr::new(&c._pd, 4096, access, 0x5a).map_err(io))
        .collect::<Result<Vec<_>, _>>()?;
    let rkeys: Vec<u32> = mrs.iter().map(Mr::rkey).collect();
    let steps = |f: &dyn Fn(u32, u32) -> u32| {
        rkeys
            .windows(2)
            .map(|w| f(w[0], w[1]))
            .collect::<std::collections::HashSet<_>>()
            .len()
    };
    let index_steps = steps(&|a, b| (b >> 8).wrapping_sub(a >> 8) & 0xff_ffff);
    let key_steps = steps(&|a, b| (b & 0xff).wrapping_sub(a & 0xff) & 0xff);
    let rising = rkeys.windows(2).filter(|w| w[1] >> 8 > w[0] >> 8).count();
    let first: Vec<String> = rkeys.iter().take(4).map(|k| format!("{k:#x}")).collect();
    println!(
        "rkeys {}: {index_steps} distinct index steps, {key_steps} distinct key steps, {rising} rising indices, first {}",
        rkeys.len(),
        first.join(" ")
    );
    let k = mrs.len() / 2;
    let mut msg = rkeys[k].to_be_bytes().to_vec();
    msg.extend_from_slice(&mrs[k].addr().to_be_bytes());
    msg.extend_from_slice(&mrs[k + 1].addr().to_be_bytes());
    c.send(10, &msg)?;
    c.expect_status(10, ffi::WC_SUCCESS, "the Send of the rkey")?;
    // The peer's control Read is answered, its guess ends the stream.
    let w = wait::wait_for(&mut c.pend, &c.cq, 1, Duration::from_secs(30))
        .map_err(|e| format!("the receive after the guess: {e}"))?;
    wait::expect(&w, ffi::WC_FLUSH, None)?;
    println!("stream ended, receive flushed");
    Ok(true)
}

/// `--recv-burst ADDR COUNT`: connected to a raw peer (`rsiw-rawpeer serve-sends`),
/// posts COUNT receives of 64 octets (one posted by the dial, COUNT - 1 more), sends
/// the peer a Send to say so, and waits for each; the peer's COUNT Sends of 8 octets
/// arrive as socket buffers of many fragments. Prints `receives COUNT: S success
/// (content checked), F flushed, E other, M missing`.
fn recv_burst(addr: SocketAddrV4, count: usize) -> Result<bool, String> {
    use ffi::sys::*;
    let (chan, mut c) = dial(addr)?;
    expect_event(&chan, rdma_cm_event_type_RDMA_CM_EVENT_ESTABLISHED, 10_000)?;
    let bufs = Mr::new(&c._pd, count * 64, ffi::LOCAL_WRITE, 0).map_err(io)?;
    for i in 1..count {
        let sge = Sge {
            mr: &bufs,
            offset: i * 64,
            len: 64,
        };
        c.qp.post_recv(100 + i as u64, &[sge]).map_err(io)?;
    }
    c.send(10, b"posted")?;
    c.expect_status(
        10,
        ffi::WC_SUCCESS,
        "the Send saying the receives are posted",
    )?;
    let (mut ok, mut flushed, mut other, mut missing) = (0, 0, 0, 0);
    let mut wait_s = 30;
    for i in 0..count {
        let wr_id = if i == 0 { 1 } else { 100 + i as u64 };
        let w = match wait::wait_for(&mut c.pend, &c.cq, wr_id, Duration::from_secs(wait_s)) {
            Ok(w) => w,
            Err(e) => {
                println!("receive {i}: {e}");
                missing += 1;
                wait_s = 1;
                continue;
            }
        };
        let data = if i == 0 {
            c.mr.read(0, 8).map_err(io)?
        } else {
            bufs.read(i * 64, 8).map_err(io)?
        };
        match w.status {
            ffi::WC_SUCCESS if w.byte_len == 8 && data == [i as u8; 8] => ok += 1,
            ffi::WC_FLUSH => flushed += 1,
            s => {
                println!(
                    "receive {i}: status {} byte_len {} data {data:?}",
                    ffi::status_str(s),
                    w.byte_len
                );
                other += 1;
            }
        }
    }
    println!("receives {count}: {ok} success, {flushed} flushed, {other} other, {missing} missing");
    Ok(true)
}

/// How long the hammer thread writes the producer indices at most.
const HAMMER: Duration = Duration::from_secs(15);
/// A flush bounded by the queue sizes ends well within this (debug kernel, TCG).
const FLUSH_LIMIT: Duration = Duration::from_secs(5);

/// Runs a `--takeover*` or `--flush-hammer` mode if `args` asks for one.
pub fn main(args: &[String]) -> Option<ExitCode> {
    let r = match args.first().map(String::as_str) {
        Some(OWNER_FLAG) => addr_at(args, 1).and_then(owner),
        Some("--flush-hammer") => addr_at(args, 1).and_then(flush_hammer),
        Some("--qp-access") => addr_at(args, 1).and_then(qp_access),
        Some("--local-hammer") => addr_at(args, 1).and_then(local_hammer),
        Some("--corrupt-wqe") => addr_at(args, 1).and_then(corrupt_wqe),
        Some("--read-from") => addr_at(args, 1).and_then(|a| {
            let len = args
                .get(2)
                .and_then(|s| s.parse().ok())
                .ok_or("missing LEN")?;
            read_from(a, len)
        }),
        Some("--close-unanswered") => addr_at(args, 1).and_then(close_unanswered),
        Some(m @ ("--stag-guess" | "--recv-burst")) => addr_at(args, 1).and_then(|a| {
            let count = args
                .get(2)
                .and_then(|s| s.parse().ok())
                .ok_or("missing COUNT")?;
            if m == "--stag-guess" {
                stag_guess(a, count)
            } else {
                recv_burst(a, count)
            }
        }),
        Some(INTRUDER_FLAG) => addr_at(args, 1).and_then(|a| {
            let qpn = args
                .get(2)
                .and_then(|s| s.parse().ok())
                .ok_or("missing QPN")?;
            intruder(a, qpn).map(|()| true)
        }),
        _ => return None,
    };
    Some(match r {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            println!("RSIW-TEST FAIL hostile setup: {e}");
            ExitCode::FAILURE
        }
    })
}
