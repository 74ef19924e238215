// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Immediate Data (RFC 7306 §6) and the §7 ordering rows a verbs user can observe.

use super::*;

/// RFC 7306 §6 / §7: an RDMA Write with Immediate Data places the data, then completes a
/// receive at the target with the immediate; two in a row complete in order.
pub(super) fn write_imm(env: &Env) -> Result<(), String> {
    let (mut c, mut t) = pair(env, ATOMIC_ACCESS, 2)?;
    let src = Mr::new(&c.pd, 16, ffi::LOCAL_WRITE, 0).map_err(io)?;
    let imms = [0x1234_5678u32.to_be(), 0x9abc_def0u32.to_be()];
    for (k, imm) in imms.iter().enumerate() {
        src.write(0, &[0x40 + k as u8; 8]).map_err(io)?;
        let sge = sge8(&src);
        let op = Op::WriteImm(t.mr.addr(), c.resp.rkey, *imm);
        c.qp.post_send(10 + k as u64, op, &[sge], ffi::SIGNALED)
            .map_err(io)?;
        wait::expect_ok(&mut c.pend, &c.cq, 10 + k as u64, ffi::OP_WRITE, None)?;
        let a = t.conns.first_mut().ok_or("no accepted connection")?;
        let w = wait::wait_for(&mut a.pend, &a.cq, k as u64, Duration::from_secs(10))?;
        wait::expect(&w, ffi::WC_SUCCESS, Some(ffi::OP_RECV_IMM))?;
        if w.flags & ffi::WC_WITH_IMM == 0 || w.imm_or_inv != *imm {
            return Err(format!(
                "receive {k}: wc_flags {:#x}, imm {:#x}; want IBV_WC_WITH_IMM, {imm:#x}",
                w.flags, w.imm_or_inv
            ));
        }
        // The data is placed before the receive completes (RFC 7306 §7: Write, then Immediate).
        let got = t.mr.read(0, 8).map_err(io)?;
        if got != [0x40 + k as u8; 8] {
            return Err(format!(
                "receive {k} completed before its data was placed: {got:02x?}"
            ));
        }
        a.pend.poll(&a.cq).map_err(io)?;
        if !a.pend.drain().is_empty() {
            return Err("the Write with Immediate completed more than one receive".into());
        }
    }
    c.close()
}

/// RFC 7306 §6 through `rsiwdv_post_write_imm64`: all 64 bits of the immediate arrive
/// (`rsiwdv_poll_cq`), with the data placed first.
pub(super) fn write_imm64(env: &Env) -> Result<(), String> {
    let dv = crate::dv::Dv::load()?;
    let (mut c, mut t) = pair(env, ATOMIC_ACCESS, 1)?;
    let src = Mr::new(&c.pd, 8, ffi::LOCAL_WRITE, 0x6c).map_err(io)?;
    let imm = 0x0123_4567_89ab_cdefu64;
    dv.write_imm64(
        &c.qp,
        5,
        &sge8(&src),
        (t.mr.addr(), c.resp.rkey),
        imm,
        ffi::SIGNALED,
    )?;
    wait::expect_ok(&mut c.pend, &c.cq, 5, ffi::OP_WRITE, None)?;
    let a = t.conns.first_mut().ok_or("no accepted connection")?;
    let end = Instant::now() + Duration::from_secs(10);
    let w = loop {
        if let Some(w) = dv.poll(&a.cq)?.into_iter().next() {
            break w;
        }
        if Instant::now() > end {
            return Err("no receive completion within 10 s".into());
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    if w.wr_id != 0 || w.status != ffi::WC_SUCCESS || w.opcode != ffi::OP_RECV_IMM {
        return Err(format!(
            "receive wr_id {} status {} opcode {}",
            w.wr_id,
            ffi::status_str(w.status),
            w.opcode
        ));
    }
    if w.flags & ffi::WC_WITH_IMM == 0 || w.imm64 != imm {
        return Err(format!(
            "wc_flags {:#x}, imm64 {:#x}; want IBV_WC_WITH_IMM, {imm:#x}",
            w.flags, w.imm64
        ));
    }
    let got = t.mr.read(0, 8).map_err(io)?;
    if got != [0x6c; 8] {
        return Err(format!(
            "receive completed before the data was placed: {got:02x?}"
        ));
    }
    c.close()
}

/// RFC 7306 §7 (RDMA Write, then Atomic): the atomic sees the written value.
pub(super) fn order_write_atomic(env: &Env) -> Result<(), String> {
    let (mut c, t) = pair(env, ATOMIC_ACCESS, 0)?;
    let src = Mr::new(&c.pd, 8, ffi::LOCAL_WRITE, 0).map_err(io)?;
    let res = Mr::new(&c.pd, 8, ffi::LOCAL_WRITE, 0).map_err(io)?;
    let x = 0x7777_0000_0000_0001u64;
    src.write(0, &x.to_ne_bytes()).map_err(io)?;
    let sge = sge8(&src);
    // Unsignaled Write: the FetchAdd right behind it must still see its data.
    c.qp.post_send(5, Op::Write(t.word_addr(), c.resp.rkey), &[sge], 0)
        .map_err(io)?;
    let op = Op::FetchAdd(t.word_addr(), c.resp.rkey, 2);
    let got = atomic(&mut c, &res, 6, op, ffi::OP_FETCH_ADD)?;
    if got != x || t.word()? != x + 2 {
        return Err(format!(
            "FetchAdd after Write returned {got:#x}, memory {:#x}; want {x:#x}, {:#x}",
            t.word()?,
            x + 2
        ));
    }
    c.close()
}

/// RFC 7306 §7 (Atomic, then RDMA Read): a Read posted behind an atomic returns its result.
pub(super) fn order_atomic_read(env: &Env) -> Result<(), String> {
    let (mut c, t) = pair(env, ATOMIC_ACCESS, 0)?;
    t.set_word(41)?;
    let res = Mr::new(&c.pd, 8, ffi::LOCAL_WRITE, 0).map_err(io)?;
    let dst = Mr::new(&c.pd, 8, ffi::LOCAL_WRITE, 0).map_err(io)?;
    let s1 = sge8(&res);
    let s2 = sge8(&dst);
    c.qp.post_send(
        5,
        Op::CmpSwap(t.word_addr(), c.resp.rkey, 41, 4242),
        &[s1],
        ffi::SIGNALED,
    )
    .map_err(io)?;
    c.qp.post_send(
        6,
        Op::Read(t.word_addr(), c.resp.rkey),
        &[s2],
        ffi::SIGNALED,
    )
    .map_err(io)?;
    // Completions of one send queue arrive in posting order.
    let w1 = wait::wait_for(&mut c.pend, &c.cq, 5, Duration::from_secs(10))?;
    wait::expect(&w1, ffi::WC_SUCCESS, Some(ffi::OP_COMP_SWAP))?;
    let w2 = wait::expect_ok(&mut c.pend, &c.cq, 6, ffi::OP_READ, None)?;
    let _ = w2;
    let read = u64::from_ne_bytes(
        dst.read(0, 8)
            .map_err(io)?
            .try_into()
            .map_err(|_| "short")?,
    );
    if read != 4242 {
        return Err(format!("the Read after the CmpSwap saw {read}, want 4242"));
    }
    c.close()
}

/// RFC 7306 §7 (Atomic, then Send): the Send completes after the atomic at the requester,
/// and when the responder's receive completes the atomic's result is in memory.
pub(super) fn order_atomic_send(env: &Env) -> Result<(), String> {
    let (c, mut t) = pair(env, ATOMIC_ACCESS, 1)?;
    t.set_word(100)?;
    let res = Mr::new(&c.pd, 8, ffi::LOCAL_WRITE, 0).map_err(io)?;
    let msg = Mr::new(&c.pd, 8, ffi::LOCAL_WRITE, 0x5a).map_err(io)?;
    let s1 = sge8(&res);
    let s2 = sge8(&msg);
    c.qp.post_send(
        5,
        Op::FetchAdd(t.word_addr(), c.resp.rkey, 11),
        &[s1],
        ffi::SIGNALED,
    )
    .map_err(io)?;
    c.qp.post_send(6, Op::Send, &[s2], ffi::SIGNALED)
        .map_err(io)?;
    let end = Instant::now() + Duration::from_secs(10);
    let mut order = Vec::new();
    while order.len() < 2 {
        for w in c.cq.poll().map_err(io)? {
            if w.wr_id != WR_VERDICT {
                order.push(w);
            }
        }
        if Instant::now() > end {
            return Err(format!("{} of 2 completions within 10 s", order.len()));
        }
    }
    if order[0].wr_id != 5 || order[1].wr_id != 6 {
        return Err(format!(
            "completion order {} then {}, want 5 (FetchAdd) then 6 (Send)",
            order[0].wr_id, order[1].wr_id
        ));
    }
    wait::expect(&order[0], ffi::WC_SUCCESS, Some(ffi::OP_FETCH_ADD))?;
    wait::expect(&order[1], ffi::WC_SUCCESS, Some(ffi::OP_SEND))?;
    let a = t.conns.first_mut().ok_or("no accepted connection")?;
    let w = wait::wait_for(&mut a.pend, &a.cq, 0, Duration::from_secs(10))?;
    wait::expect(&w, ffi::WC_SUCCESS, Some(ffi::OP_RECV))?;
    // Only after the receive completed: it is the ordering point being tested.
    let now = t.word()?;
    if now != 111 {
        return Err(format!(
            "at the Send's receive completion the word is {now}, want 111"
        ));
    }
    c.close()
}
