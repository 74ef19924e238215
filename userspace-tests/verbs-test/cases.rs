// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The conformance cases, requester side: data transfer (RFC 5040 §5), SRQ, solicited
//! events (RFC 5040 §5.3) and error/flush semantics (RFC 5040 §7.2, RFC 5041 §7.2).

use crate::ffi::Sge;
use crate::ffi::{self, Op};
use crate::proto::{self, Kind, Req, GUARD};
use crate::requester::{expect_event, Client, Env, Local, WR_VERDICT};
use crate::wait;
use std::time::Duration;

/// A case body: runs against the server; `Err` says why it failed.
pub type Run = Box<dyn Fn(&Env) -> Result<(), String>>;

/// One named case.
pub struct Case {
    /// Name printed in the sentinel line.
    pub name: String,
    /// The body.
    pub run: Run,
}

/// Message sizes of the data-transfer cases.
const SIZES: [usize; 6] = [0, 1, 4095, 4096, 4097, 1 << 20];
/// The bulk cases' transfer: one RDMA Write or Read of 64 MiB of a pseudo-random
/// pattern, checked byte for byte at the other end.
const BULK: usize = 64 << 20;

/// SGE counts tried for `len`: 0 and 1 for empty messages, 1 for one byte, else 1 to 6.
fn sge_counts(len: usize) -> Vec<usize> {
    match len {
        0 => vec![0, 1],
        1 => vec![1],
        _ => (1..=6).collect(),
    }
}

fn req(kind: Kind, name: &str, len: usize, sges: usize) -> Req {
    Req {
        kind,
        len: len as u32,
        sges: sges as u32,
        nrecv: 0,
        access: ffi::LOCAL_WRITE | ffi::REMOTE_READ | ffi::REMOTE_WRITE,
        flags: 0,
        seed: name
            .bytes()
            .fold(7u32, |a, b| a.wrapping_mul(33).wrapping_add(u32::from(b))),
        name: name.to_string(),
    }
}

/// Every case, in run order.
pub fn all() -> Vec<Case> {
    let mut v = Vec::new();
    let mut add = |name: String, run: Run| v.push(Case { name, run });
    for op in ["send", "write", "read"] {
        for len in SIZES {
            for n in sge_counts(len) {
                let name = format!("{op}-{len}B-{n}sge");
                let nm = name.clone();
                add(
                    name,
                    Box::new(move |env| match op {
                        "send" => send(env, &nm, len, n),
                        "write" => write(env, &nm, len, n),
                        _ => read(env, &nm, len, n),
                    }),
                );
            }
        }
    }
    add("srq-send-2x4096B-2sge".into(), Box::new(srq));
    add("solicited-event".into(), Box::new(solicited));
    add("send-with-inv".into(), Box::new(send_with_inv));
    add("dereg-under-writes".into(), Box::new(dereg_under_writes));
    add(
        "err-wrong-rkey".into(),
        Box::new(|e| read_error(e, "err-wrong-rkey", ReadFault::WrongRkey)),
    );
    add(
        "err-out-of-bounds".into(),
        Box::new(|e| read_error(e, "err-out-of-bounds", ReadFault::OutOfBounds)),
    );
    add(
        "err-no-remote-read".into(),
        Box::new(|e| read_error(e, "err-no-remote-read", ReadFault::NoReadAccess)),
    );
    add(
        "err-dereg-mr".into(),
        Box::new(|e| read_error(e, "err-dereg-mr", ReadFault::Deregistered)),
    );
    add("err-no-remote-write".into(), Box::new(no_remote_write));
    add("err-rq-empty".into(), Box::new(rq_empty));
    add("flush-on-disconnect".into(), Box::new(flush));
    crate::atomic::cases(&mut add);
    v
}

/// Cases run only when named (`--case bulk-*`): long transfers for the FPDU-size runs.
pub fn bulk() -> Vec<Case> {
    vec![
        Case {
            name: "bulk-write-64MiB".into(),
            run: Box::new(|e| write(e, "bulk-write-64MiB", BULK, 1)),
        },
        Case {
            name: "bulk-read-64MiB".into(),
            run: Box::new(|e| read(e, "bulk-read-64MiB", BULK, 1)),
        },
    ]
}

/// Sends `len` bytes of `pattern(seed)` gathered from `n` SGEs and waits for its
/// successful completion.
fn send_pattern(
    c: &mut Client,
    seed: u32,
    len: usize,
    n: usize,
    id: u64,
    flags: u32,
) -> Result<(), String> {
    let src = Local::new(&c.pd, len, n, Some(&proto::pattern(seed, len)))?;
    c.qp.post_send(id, Op::Send, &src.sges(), flags)
        .map_err(|e| e.to_string())?;
    wait::expect_ok(&mut c.pend, &c.cq, id, ffi::OP_SEND, None)?;
    Ok(())
}

/// Send of `len` bytes gathered from `n` SGEs into a receive scattered over `n` SGEs.
fn send(env: &Env, name: &str, len: usize, n: usize) -> Result<(), String> {
    let mut r = req(Kind::Recv, name, len, n);
    r.nrecv = 1;
    r.flags = proto::F_CHECK;
    let mut c = Client::connect(env, &r)?;
    send_pattern(&mut c, r.seed, len, n, 7, ffi::SIGNALED)?;
    c.verdict()?;
    c.close()
}

/// RDMA Write of `len` bytes from `n` SGEs, then a Send so the server checks its region
/// (RFC 5040 §5.5: a Send after a Write is placed after it).
fn write(env: &Env, name: &str, len: usize, n: usize) -> Result<(), String> {
    let mut r = req(Kind::Expose, name, len, n);
    r.flags = proto::F_CHECK;
    let mut c = Client::connect(env, &r)?;
    let src = Local::new(
        &c.pd,
        len,
        n,
        Some(&proto::pattern(r.seed.wrapping_add(1), len)),
    )?;
    let to = c.resp.addr + GUARD as u64;
    c.qp.post_send(7, Op::Write(to, c.resp.rkey), &src.sges(), ffi::SIGNALED)
        .map_err(|e| e.to_string())?;
    wait::expect_ok_within(
        &mut c.pend,
        &c.cq,
        7,
        ffi::OP_WRITE,
        None,
        wait::for_len(len),
    )?;
    c.qp.post_send(8, Op::Send, &[], ffi::SIGNALED)
        .map_err(|e| e.to_string())?;
    wait::expect_ok(&mut c.pend, &c.cq, 8, ffi::OP_SEND, None)?;
    c.verdict()?;
    c.close()
}

/// RDMA Read of `len` bytes scattered into `n` SGEs; checks every local byte. Beyond the
/// device's `max_sge_rd` the post itself must be refused (verbs: WR exceeds a QP limit).
fn read(env: &Env, name: &str, len: usize, n: usize) -> Result<(), String> {
    let r = req(Kind::Expose, name, len, n);
    let mut c = Client::connect(env, &r)?;
    let dst = Local::new(&c.pd, len, n, None)?;
    let from = c.resp.addr + GUARD as u64;
    let (_, max_sge_rd) = c.id.limits().map_err(|e| e.to_string())?;
    let posted =
        c.qp.post_send(7, Op::Read(from, c.resp.rkey), &dst.sges(), ffi::SIGNALED);
    if usize::try_from(max_sge_rd).is_ok_and(|m| n > m) {
        return match posted {
            Err(_) => c.close(),
            Ok(()) => Err(format!(
                "a Read with {n} SGEs was accepted though max_sge_rd is {max_sge_rd}"
            )),
        };
    }
    posted.map_err(|e| e.to_string())?;
    wait::expect_ok_within(
        &mut c.pend,
        &c.cq,
        7,
        ffi::OP_READ,
        None,
        wait::for_len(len),
    )?;
    dst.check(&proto::pattern(r.seed, len))?;
    c.close()
}

/// Two Sends land in the two receives posted to the server's SRQ, in order.
fn srq(env: &Env) -> Result<(), String> {
    let (len, n) = (4096, 2);
    let mut r = req(Kind::Recv, "srq-send-2x4096B-2sge", len, n);
    r.nrecv = 2;
    r.flags = proto::F_CHECK | proto::F_SRQ;
    let mut c = Client::connect(env, &r)?;
    for k in 0..2u32 {
        send_pattern(
            &mut c,
            r.seed.wrapping_add(k),
            len,
            n,
            u64::from(k) + 7,
            ffi::SIGNALED,
        )?;
    }
    c.verdict()?;
    c.close()
}

/// An unsolicited Send, a pause, then a solicited one; the server checks the CQ events.
fn solicited(env: &Env) -> Result<(), String> {
    let len = 64;
    let mut r = req(Kind::Solicited, "solicited-event", len, 1);
    r.nrecv = 2;
    r.flags = proto::F_CHECK;
    let mut c = Client::connect(env, &r)?;
    for k in 0..2u32 {
        let flags = if k == 0 {
            ffi::SIGNALED
        } else {
            ffi::SIGNALED | ffi::SOLICITED
        };
        send_pattern(&mut c, r.seed.wrapping_add(k), len, 1, 7, flags)?;
        // The server looks for a (wrong) event from the first Send for 500 ms.
        std::thread::sleep(Duration::from_millis(1500));
    }
    c.verdict()?;
    c.close()
}

/// Send with Invalidate (RFC 5040 §5.3) needs an STag the peer may invalidate: user MRs
/// are not, so the server binds a type-2 memory window over its region and sends its
/// rkey. The window must work before (a Read through it), the receive must report the
/// invalidation (`IBV_WC_WITH_INV`, `invalidated_rkey`), and a Read after it must fail.
fn send_with_inv(env: &Env) -> Result<(), String> {
    let len = 4096;
    let mut r = req(Kind::Invalidate, "send-with-inv", len, 1);
    r.flags = proto::F_CHECK;
    let mut c = Client::connect(env, &r)?;
    // The server's first message is the window's rkey, or why it has none.
    let bound = c.message(WR_VERDICT)?;
    let rkey = bound
        .get(..4)
        .and_then(|b| b.try_into().ok())
        .map(u32::from_le_bytes)
        .ok_or("the bind message is shorter than an rkey")?;
    let ctl = Sge {
        mr: &c.ctl,
        offset: 0,
        len: 256,
    };
    c.qp.post_recv(WR_VERDICT + 1, &[ctl])
        .map_err(|e| e.to_string())?;
    let at = c.resp.addr + GUARD as u64;
    let before = Local::new(&c.pd, 64, 1, None)?;
    c.qp.post_send(7, Op::Read(at, rkey), &before.sges(), ffi::SIGNALED)
        .map_err(|e| e.to_string())?;
    wait::expect_ok(&mut c.pend, &c.cq, 7, ffi::OP_READ, None)?;
    before.check(proto::pattern(r.seed, len).get(..64).unwrap_or_default())?;
    let msg = Local::new(&c.pd, 16, 1, Some(&[0x33; 16]))?;
    c.qp.post_send(8, Op::SendInv(rkey), &msg.sges(), ffi::SIGNALED)
        .map_err(|e| e.to_string())?;
    wait::expect_ok(&mut c.pend, &c.cq, 8, ffi::OP_SEND, None)?;
    c.message(WR_VERDICT + 1)?;
    let after = Local::new(&c.pd, 64, 1, None)?;
    c.qp.post_send(9, Op::Read(at, rkey), &after.sges(), ffi::SIGNALED)
        .map_err(|e| e.to_string())?;
    let w = wait::wait_for(&mut c.pend, &c.cq, 9, Duration::from_secs(10))?;
    wait::expect(&w, ffi::WC_REM_ACCESS, None)?;
    after.check(&[GUARD_FILL; 64])
}

/// How a Read request is made invalid.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ReadFault {
    WrongRkey,
    OutOfBounds,
    NoReadAccess,
    Deregistered,
}

/// RFC 5040 §7.2: an invalid Read request is answered with a Terminate,
/// which completes the Read with a remote access error.
fn read_error(env: &Env, name: &str, f: ReadFault) -> Result<(), String> {
    let len = 4096;
    let mut r = req(Kind::Expose, name, len, 1);
    match f {
        ReadFault::NoReadAccess => r.access = ffi::LOCAL_WRITE | ffi::REMOTE_WRITE,
        ReadFault::Deregistered => r.flags = proto::F_DEREG,
        _ => {}
    }
    let mut c = Client::connect(env, &r)?;
    let dst = Local::new(&c.pd, 64, 1, None)?;
    let (mut to, mut rkey) = (c.resp.addr + GUARD as u64, c.resp.rkey);
    match f {
        // Change the key byte only: the STag index stays that of a valid region.
        ReadFault::WrongRkey => rkey ^= 0xff,
        // 32 bytes inside, 32 bytes past the end of the region (len + 2 * GUARD long).
        ReadFault::OutOfBounds => to = c.resp.addr + (len + 2 * GUARD - 32) as u64,
        _ => {}
    }
    c.qp.post_send(7, Op::Read(to, rkey), &dst.sges(), ffi::SIGNALED)
        .map_err(|e| e.to_string())?;
    let w = wait::wait_for(&mut c.pend, &c.cq, 7, Duration::from_secs(10))?;
    wait::expect(&w, ffi::WC_REM_ACCESS, None)?;
    // The Terminate ends the connection (RFC 5040 §7); DISCONNECTED must follow.
    expect_event(
        &c.chan,
        ffi::sys::rdma_cm_event_type_RDMA_CM_EVENT_DISCONNECTED,
        5000,
    )?;
    dst.check(&[GUARD_FILL; 64])
}

const GUARD_FILL: u8 = proto::GUARD_BYTE;

/// A Write to a region without remote write access: the responder terminates (RFC 5040
/// §7.2); the Write itself may already have completed locally (iWARP completes Writes on
/// transmission), so the check is on the Read that follows it and on the connection.
fn no_remote_write(env: &Env) -> Result<(), String> {
    let mut r = req(Kind::Expose, "err-no-remote-write", 4096, 1);
    r.access = ffi::LOCAL_WRITE | ffi::REMOTE_READ;
    let mut c = Client::connect(env, &r)?;
    let src = Local::new(&c.pd, 64, 1, Some(&[0x11; 64]))?;
    let dst = Local::new(&c.pd, 64, 1, None)?;
    let to = c.resp.addr + GUARD as u64;
    c.qp.post_send(7, Op::Write(to, c.resp.rkey), &src.sges(), ffi::SIGNALED)
        .map_err(|e| e.to_string())?;
    c.qp.post_send(8, Op::Read(to, c.resp.rkey), &dst.sges(), ffi::SIGNALED)
        .map_err(|e| e.to_string())?;
    let w = wait::wait_for(&mut c.pend, &c.cq, 7, Duration::from_secs(10))?;
    let rd = wait::wait_for(&mut c.pend, &c.cq, 8, Duration::from_secs(10))?;
    println!(
        "rsiw-verbs-test: err-no-remote-write: write {}, read {}",
        ffi::status_str(w.status),
        ffi::status_str(rd.status)
    );
    if w.status != ffi::WC_SUCCESS {
        wait::expect(&w, ffi::WC_REM_ACCESS, None)?;
    }
    if rd.status == ffi::WC_SUCCESS {
        return Err(
            "the Read after the refused Write succeeded: the connection was not terminated".into(),
        );
    }
    if w.status != ffi::WC_REM_ACCESS && rd.status != ffi::WC_REM_ACCESS {
        // The Write completed on transmission and the peer's Terminate arrived before
        // the Read left the SQ (loopback is that fast): no WR was outstanding to carry
        // the error, so it must come as the QP's asynchronous access error.
        let qpn = c.qp.num();
        let mut seen = Vec::new();
        loop {
            match c.id.async_event(5000).map_err(|e| e.to_string())? {
                Some((ffi::EVENT_QP_ACCESS_ERR, n)) if n == qpn => break,
                Some(ev) => seen.push(ev),
                None => {
                    return Err(format!(
                        "no completion reports the remote access error (write {}, read {}) \
                         and no IBV_EVENT_QP_ACCESS_ERR for QP {qpn} came (events: {seen:?})",
                        ffi::status_str(w.status),
                        ffi::status_str(rd.status)
                    ))
                }
            }
        }
        println!("rsiw-verbs-test: err-no-remote-write: the error came as IBV_EVENT_QP_ACCESS_ERR");
    }
    expect_event(
        &c.chan,
        ffi::sys::rdma_cm_event_type_RDMA_CM_EVENT_DISCONNECTED,
        5000,
    )?;
    dst.check(&[GUARD_FILL; 64])
}

/// A Send to a responder with no receive posted: iWARP has no RNR retry; the responder
/// terminates (RFC 5041 §7.2, untagged buffer error) and the connection ends. The Send
/// may have completed on transmission; a Send posted after must flush.
fn rq_empty(env: &Env) -> Result<(), String> {
    let r = req(Kind::Recv, "err-rq-empty", 64, 1);
    let mut c = Client::connect(env, &r)?;
    let src = Local::new(&c.pd, 64, 1, Some(&[0x22; 64]))?;
    c.qp.post_send(7, Op::Send, &src.sges(), ffi::SIGNALED)
        .map_err(|e| e.to_string())?;
    let w = wait::wait_for(&mut c.pend, &c.cq, 7, Duration::from_secs(10))?;
    println!(
        "rsiw-verbs-test: err-rq-empty: the Send completed with {}",
        ffi::status_str(w.status)
    );
    if ![ffi::WC_SUCCESS, ffi::WC_REM_OP, ffi::WC_REM_INV_REQ].contains(&w.status) {
        wait::expect(&w, ffi::WC_REM_OP, None)?;
    }
    expect_event(
        &c.chan,
        ffi::sys::rdma_cm_event_type_RDMA_CM_EVENT_DISCONNECTED,
        5000,
    )?;
    match c.qp.post_send(8, Op::Send, &src.sges(), ffi::SIGNALED) {
        // Verbs allow refusing WRs on an errored QP instead of flushing them.
        Err(e) => println!("rsiw-verbs-test: err-rq-empty: post after terminate refused: {e}"),
        Ok(()) => {
            let w = wait::wait_for(&mut c.pend, &c.cq, 8, Duration::from_secs(5))?;
            wait::expect(&w, ffi::WC_FLUSH, None)?;
        }
    }
    let v = wait::wait_for(
        &mut c.pend,
        &c.cq,
        crate::requester::WR_VERDICT,
        Duration::from_secs(5),
    )?;
    wait::expect(&v, ffi::WC_FLUSH, None)
}

/// Disconnecting with receives outstanding flushes every one of them (verbs: WR_FLUSH_ERR).
fn flush(env: &Env) -> Result<(), String> {
    let r = req(Kind::Recv, "flush-on-disconnect", 0, 0);
    let mut c = Client::connect(env, &r)?;
    let dst = Local::new(&c.pd, 64, 1, None)?;
    let ids: Vec<u64> = (100..105).collect();
    for &id in &ids {
        c.qp.post_recv(id, &dst.sges()).map_err(|e| e.to_string())?;
    }
    c.id.disconnect().map_err(|e| e.to_string())?;
    expect_event(
        &c.chan,
        ffi::sys::rdma_cm_event_type_RDMA_CM_EVENT_DISCONNECTED,
        5000,
    )?;
    for id in ids.iter().copied().chain([crate::requester::WR_VERDICT]) {
        let w = wait::wait_for(&mut c.pend, &c.cq, id, Duration::from_secs(5))?;
        wait::expect(&w, ffi::WC_FLUSH, None)?;
    }
    c.pend.poll(&c.cq).map_err(|e| e.to_string())?;
    let extra = c.pend.drain();
    if !extra.is_empty() {
        return Err(format!(
            "{} unexpected completions, first wr_id {}",
            extra.len(),
            extra[0].wr_id
        ));
    }
    dst.check(&[GUARD_FILL; 64])
}

/// `dereg_mr` on the target region while RDMA Writes stream into it: the Writes that
/// arrive after it fail with the Terminate for an invalid STag (RFC 5040 §7.2), the
/// connection ends, and nothing else happens: the region's pages, still referenced by a
/// placement in progress in the receive path (softirq), are released when it lets go.
fn dereg_under_writes(env: &Env) -> Result<(), String> {
    const CHUNK: usize = 256 << 10;
    const DEPTH: u64 = 4;
    let mut r = req(
        Kind::Expose,
        "dereg-under-writes",
        DEPTH as usize * CHUNK,
        1,
    );
    r.flags = proto::F_DEREG_LATE;
    let mut c = Client::connect(env, &r)?;
    let src = Local::new(&c.pd, CHUNK, 1, Some(&proto::pattern(r.seed, CHUNK)))?;
    let post = |c: &mut Client, k: u64| {
        let to = c.resp.addr + GUARD as u64 + (k % DEPTH) * CHUNK as u64;
        c.qp.post_send(k, Op::Write(to, c.resp.rkey), &src.sges(), ffi::SIGNALED)
            .map_err(|e| e.to_string())
    };
    for k in 0..DEPTH {
        post(&mut c, k)?;
    }
    let (mut next, mut ok) = (DEPTH, 0u64);
    let end = std::time::Instant::now() + Duration::from_secs(20);
    let failed = 'stream: loop {
        if std::time::Instant::now() > end {
            return Err(format!("{ok} Writes completed and none failed within 20 s (the server deregisters after {} ms)", proto::DEREG_LATE_MS));
        }
        c.pend.poll(&c.cq).map_err(|e| e.to_string())?;
        for w in c.pend.drain() {
            if w.status != ffi::WC_SUCCESS {
                break 'stream w;
            }
            ok += 1;
            post(&mut c, next)?;
            next += 1;
        }
        std::thread::sleep(Duration::from_micros(200));
    };
    // Writes complete when sent: the one the peer refuses fails with REM_ACCESS_ERR if
    // it was still in flight, else the QP's next WR is flushed.
    if failed.status != ffi::WC_REM_ACCESS && failed.status != ffi::WC_FLUSH {
        wait::expect(&failed, ffi::WC_REM_ACCESS, None)?;
    }
    if ok < DEPTH {
        return Err(format!(
            "only {ok} Writes completed before the deregistration"
        ));
    }
    expect_event(
        &c.chan,
        ffi::sys::rdma_cm_event_type_RDMA_CM_EVENT_DISCONNECTED,
        5000,
    )?;
    Ok(())
}
