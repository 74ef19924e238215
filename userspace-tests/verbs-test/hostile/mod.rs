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

mod access;
mod corrupt;
mod hammer;
mod raw_peer;
mod takeover;

use access::qp_access;
use corrupt::corrupt_wqe;
use hammer::{flush_hammer, local_hammer};
use raw_peer::{close_unanswered, read_from, recv_burst, stag_guess};
use takeover::{intruder, owner};

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
