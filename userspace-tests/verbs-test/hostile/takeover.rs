// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! `--takeover`: an intruder process binding a connection to another process's QP.

use super::*;

/// The owner side; false if a check failed.
pub(super) fn owner(addr: SocketAddrV4) -> Result<bool, String> {
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
pub(super) fn intruder(addr: SocketAddrV4, qpn: u32) -> Result<(), String> {
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
