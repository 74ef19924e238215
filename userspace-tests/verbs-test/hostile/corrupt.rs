// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! `--corrupt-wqe`: SQEs and RQEs the provider would never build, written straight into
//! a live QP's rings; each completes with its error.

use super::*;

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
pub(super) fn corrupt_wqe(addr: SocketAddrV4) -> Result<bool, String> {
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
