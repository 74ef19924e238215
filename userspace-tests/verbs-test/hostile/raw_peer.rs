// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Cases against a raw MPA peer (`rsiw-rawpeer`): `--read-from`, `--close-unanswered`,
//! `--stag-guess`, `--recv-burst`.

use super::*;

/// `--read-from ADDR LEN`: connects to ADDR (a raw peer's MPA responder) and reads
/// LEN octets from it with one RDMA Read; prints `read status NAME` and the first
/// octet of the sink, then (1 s later, what the peer sent after it had its time)
/// `past LEN: N octets written` for the rest of the 4 KiB region. Exits 0 once the
/// Read completed, whatever its status.
pub(super) fn read_from(addr: SocketAddrV4, len: u32) -> Result<bool, String> {
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
pub(super) fn close_unanswered(addr: SocketAddrV4) -> Result<bool, String> {
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
pub(super) fn stag_guess(addr: SocketAddrV4, count: usize) -> Result<bool, String> {
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
pub(super) fn recv_burst(addr: SocketAddrV4, count: usize) -> Result<bool, String> {
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
