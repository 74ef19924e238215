// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Responder checks (RFC 7306 §5.1, §8.2): misaligned targets, no remote-atomic rights, a
//! peer that refuses; the memory stays as it was.

use super::*;

/// After an atomic was refused: the requester saw an error completion, the connection is
/// gone (Terminate, RFC 7306 §8.2) and the responder's word is untouched.
fn refused(c: &mut Client, t: &Target, id: u64, before: u64) -> Result<(), String> {
    let w = wait::wait_for(&mut c.pend, &c.cq, id, Duration::from_secs(10))?;
    if w.status == ffi::WC_SUCCESS {
        return Err(format!(
            "the atomic completed successfully (opcode {})",
            w.opcode
        ));
    }
    println!(
        "rsiw-verbs-test: refused atomic completed with {}",
        ffi::status_str(w.status)
    );
    expect_event(
        &c.chan,
        ffi::sys::rdma_cm_event_type_RDMA_CM_EVENT_DISCONNECTED,
        5000,
    )?;
    let now = t.word()?;
    if now != before {
        return Err(format!("target word changed: {before:#x} -> {now:#x}"));
    }
    let all = t.mr.read(0, REGION).map_err(io)?;
    let mut want = vec![0u8; REGION];
    want[WORD..WORD + 8].copy_from_slice(&before.to_ne_bytes());
    crate::proto::diff("target region", &all, &want)
}

/// RFC 7306 §5.1 / §8.2: a target not 64-bit aligned is an error; memory is not modified.
pub(super) fn misaligned(env: &Env) -> Result<(), String> {
    let (mut c, t) = pair(env, ATOMIC_ACCESS, 0)?;
    let before = 0x0102_0304_0506_0708u64;
    t.set_word(before)?;
    let res = Mr::new(&c.pd, 8, ffi::LOCAL_WRITE, 0).map_err(io)?;
    let sge = sge8(&res);
    let op = Op::FetchAdd(t.word_addr() + 4, c.resp.rkey, 1);
    if let Err(e) = c.qp.post_send(7, op, &[sge], ffi::SIGNALED) {
        // Refusing the WR at post time is also an error surfaced at the requester.
        println!("rsiw-verbs-test: atomic-err-misaligned: post refused: {e}");
        return if t.word()? == before {
            c.close()
        } else {
            Err("memory changed".into())
        };
    }
    refused(&mut c, &t, 7, before)
}

/// RFC 7306 §8.2 (and RFC 5040 §7.2 access rights): an MR without REMOTE_ATOMIC refuses it.
pub(super) fn no_remote_atomic(env: &Env) -> Result<(), String> {
    let access = ffi::LOCAL_WRITE | ffi::REMOTE_READ | ffi::REMOTE_WRITE;
    let (mut c, t) = pair(env, access, 0)?;
    let before = 0x1111_2222_3333_4444u64;
    t.set_word(before)?;
    let res = Mr::new(&c.pd, 8, ffi::LOCAL_WRITE, 0).map_err(io)?;
    let sge = sge8(&res);
    let op = Op::CmpSwap(t.word_addr(), c.resp.rkey, before, 5);
    c.qp.post_send(7, op, &[sge], ffi::SIGNALED).map_err(io)?;
    refused(&mut c, &t, 7, before)
}

/// RFC 7306 §1.1: against a responder that refuses atomics (a peer without RFC 7306, such
/// as siw, running `--atomic-target`; or the plain server, whose region lacks remote
/// atomic access) a FetchAdd ends in an error completion and the connection ends: no hang.
pub(super) fn peer_refuses(env: &Env) -> Result<(), String> {
    let mut c = dial(env, env.server)?.finish()?;
    let res = Mr::new(&c.pd, 8, ffi::LOCAL_WRITE, 0).map_err(io)?;
    let op = Op::FetchAdd(c.resp.addr + WORD as u64, c.resp.rkey, 1);
    c.qp.post_send(7, op, &[sge8(&res)], ffi::SIGNALED)
        .map_err(io)?;
    let w = wait::wait_for(&mut c.pend, &c.cq, 7, Duration::from_secs(30))?;
    println!(
        "rsiw-verbs-test: atomic-peer-refuses: FetchAdd completed with {}",
        ffi::status_str(w.status)
    );
    if w.status == ffi::WC_SUCCESS {
        return Err("the peer executed the FetchAdd".into());
    }
    expect_event(
        &c.chan,
        ffi::sys::rdma_cm_event_type_RDMA_CM_EVENT_DISCONNECTED,
        10_000,
    )
    .map(|_| ())
}
