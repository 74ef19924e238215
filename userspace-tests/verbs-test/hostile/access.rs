// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! `--qp-access`: a QP without remote rights refuses a peer's Write and Read.

use super::*;

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
pub(super) fn qp_access(addr: SocketAddrV4) -> Result<bool, String> {
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
