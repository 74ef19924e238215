// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The application's side of the zero-copy window test (`zc-window-rsiw.sh`,
//! Documentation/datapath.md "After completion"): memory that the application
//! overwrites and deregisters once the device says it is done with it, while
//! the peer (`rsiw-rawpeer zc-window`) keeps its TCP receive window shut. No
//! octet written after the completion, or after `ibv_dereg_mr` returned, may
//! reach the peer.
//!
//! `--zc-window ADDR send|read DIR [LEN]` listens on ADDR with rdma_cm and
//! accepts one connection, advertising a region of LEN octets (default
//! 256 KiB; rkey, address, length in the private data of the accept, 16
//! octets, big-endian), filled with `OLD`. A region larger than the socket's
//! send buffer (`tcp_wmem`'s most) makes the deregistration land while its
//! Read Response is still being sent.
//! - `send`: posts one signalled Send of the whole region, waits for its
//!   completion, overwrites the region with `NEW`, deregisters it (the buffer
//!   stays allocated) and writes `NEW` again.
//! - `read`: waits for `DIR/sent` (the peer's Read Request is out), gives TX a
//!   second to start the Response, deregisters the region, waits a second
//!   and overwrites it with `NEW`.
//!
//! - `order`: posts the Send of `send`, then an 8-octet Send, moves the QP
//!   to ERROR a second later and posts a third 8-octet Send to the dead QP;
//!   prints the order its completions arrived in (`order 1 2 3` is the
//!   SQ's: a zero-copy Send held for TCP's release holds the flushes behind
//!   it too), overwrites the region with `NEW`, then lets the peer read.
//!
//! Then it creates `DIR/go` (the peer starts reading) and waits for `DIR/done`
//! before it lets go of the buffer. Prints `completion MS status S` (send),
//! `dereg ok`, `overwritten`, and `RSIW-TEST FAIL zc-window …` lines on errors.

use crate::ffi::{self, Channel, CmId, Cq, Mr, Pd, Qp, Sge};
use crate::requester::expect_event;
use crate::wait::{self, Pending};
use std::net::SocketAddrV4;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::rc::Rc;
use std::time::{Duration, Instant};

const FLAG: &str = "--zc-window";
/// The region's default size: many FPDUs, more than a shut window lets
/// through.
const LEN: usize = 256 * 1024;
/// The fill the application's memory has while the device may read it.
const OLD: u8 = 0xa1;
/// The fill written after the completion / after `ibv_dereg_mr`.
const NEW: u8 = 0x5e;

fn io(e: std::io::Error) -> String {
    e.to_string()
}

/// Waits up to `secs` for `path` to exist.
fn wait_file(path: &Path, secs: u64) -> bool {
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end {
        if path.exists() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

fn touch(path: &Path) -> Result<(), String> {
    std::fs::write(path, b"").map_err(|e| format!("{}: {e}", path.display()))
}

/// What the application does.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Send,
    Read,
    Order,
}

/// `order`: the completions of three Sends around a move to ERROR, in the
/// order they arrive.
fn order(qp: &Qp, cq: &Cq, mr: &Mr, len: usize) -> Result<(), String> {
    let big = Sge {
        mr,
        offset: 0,
        len: len as u32,
    };
    let small = || Sge {
        mr,
        offset: 0,
        len: 8,
    };
    qp.post_send(1, ffi::Op::Send, &[big], ffi::SIGNALED)
        .map_err(io)?;
    qp.post_send(2, ffi::Op::Send, &[small()], ffi::SIGNALED)
        .map_err(io)?;
    std::thread::sleep(Duration::from_secs(1));
    qp.set_error().map_err(io)?;
    qp.post_send(3, ffi::Op::Send, &[small()], ffi::SIGNALED)
        .map_err(io)?;
    let end = Instant::now() + Duration::from_secs(30);
    let mut seen = Vec::new();
    while seen.len() < 3 && Instant::now() < end {
        for w in cq.poll().map_err(io)? {
            println!(
                "completion {} status {}",
                w.wr_id,
                ffi::status_str(w.status)
            );
            seen.push(w.wr_id.to_string());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    println!("order {}", seen.join(" "));
    // Every WQE has completed: the memory is the application's again.
    mr.write(0, &vec![NEW; len]).map_err(io)?;
    println!("overwritten");
    Ok(())
}

fn run(addr: SocketAddrV4, mode: Mode, dir: &Path, len: usize) -> Result<(), String> {
    let send = mode == Mode::Send;
    use ffi::sys::*;
    let lchan = Rc::new(Channel::new().map_err(io)?);
    let listener = CmId::new(&lchan).map_err(io)?;
    listener.listen(addr).map_err(io)?;
    println!("listening");
    let ev = expect_event(
        &lchan,
        rdma_cm_event_type_RDMA_CM_EVENT_CONNECT_REQUEST,
        30_000,
    )?;
    let id = CmId::adopt(&lchan, &ev).map_err(io)?;
    drop(ev);
    let pd = Pd::new(&id).map_err(io)?;
    let cq = Rc::new(Cq::new(&id, 16, false).map_err(io)?);
    let qp = Qp::new(&id, &pd, &cq, None).map_err(io)?;
    let mr = Mr::new(&pd, len, ffi::LOCAL_WRITE | ffi::REMOTE_READ, OLD).map_err(io)?;
    let mut private = Vec::with_capacity(16);
    private.extend_from_slice(&mr.rkey().to_be_bytes());
    private.extend_from_slice(&mr.addr().to_be_bytes());
    private.extend_from_slice(&u32::try_from(len).map_err(|e| e.to_string())?.to_be_bytes());
    id.accept(&private).map_err(io)?;
    expect_event(&lchan, rdma_cm_event_type_RDMA_CM_EVENT_ESTABLISHED, 10_000)?;
    println!("established");
    if mode == Mode::Order {
        order(&qp, &cq, &mr, len)?;
        touch(&dir.join("go"))?;
        let _ = wait_file(&dir.join("done"), 60);
        return Ok(());
    }
    let buf = if send {
        let sge = Sge {
            mr: &mr,
            offset: 0,
            len: len as u32,
        };
        let t0 = Instant::now();
        qp.post_send(1, ffi::Op::Send, &[sge], ffi::SIGNALED)
            .map_err(io)?;
        let mut pend = Pending::default();
        // Copied, the Send completes once it is in the socket; zero-copy,
        // once TCP has released its pages, so only after the peer reads.
        let w = wait::wait_for(&mut pend, &cq, 1, Duration::from_secs(5));
        match &w {
            Ok(w) => println!(
                "completion {} ms status {}",
                t0.elapsed().as_millis(),
                ffi::status_str(w.status)
            ),
            // With the window shut the data may not fit the socket: then
            // the completion comes only once the peer reads, and the
            // overwrite below follows it.
            Err(e) => println!("completion none while the window is shut: {e}"),
        }
        if w.is_err() {
            touch(&dir.join("go"))?;
            // The peer's 4 KiB buffer lets about 10 KB/s through under TCG:
            // 256 KiB take some 25 s to be acknowledged.
            let w = wait::wait_for(&mut pend, &cq, 1, Duration::from_secs(90))?;
            println!("completion late, status {}", ffi::status_str(w.status));
        }
        mr.write(0, &vec![NEW; len]).map_err(io)?;
        let mut buf = mr.dereg_keep().map_err(io)?;
        println!("dereg ok");
        buf.fill(NEW);
        println!("overwritten");
        buf
    } else {
        if !wait_file(&dir.join("sent"), 30) {
            return Err("the peer sent no Read Request within 30 s".into());
        }
        std::thread::sleep(Duration::from_secs(1));
        let mut buf = mr.dereg_keep().map_err(io)?;
        println!("dereg ok");
        std::thread::sleep(Duration::from_secs(1));
        buf.fill(NEW);
        println!("overwritten");
        buf
    };
    touch(&dir.join("go"))?;
    if !wait_file(&dir.join("done"), 60) {
        println!("the peer did not finish within 60 s");
    }
    // Flush what is left before the QP goes.
    let _ = id.disconnect();
    drop(qp);
    drop(buf);
    drop(listener);
    Ok(())
}

/// `--zc-window ADDR send|read|order DIR [LEN]`; `None` for other arguments.
pub fn main(args: &[String]) -> Option<ExitCode> {
    if args.first().map(String::as_str) != Some(FLAG) {
        return None;
    }
    let parsed = (|| -> Result<(SocketAddrV4, Mode, PathBuf, usize), String> {
        let addr = args
            .get(1)
            .ok_or("missing ADDR:PORT")?
            .parse()
            .map_err(|e| format!("bad ADDR:PORT: {e}"))?;
        let mode = match args.get(2).map(String::as_str) {
            Some("send") => Mode::Send,
            Some("read") => Mode::Read,
            Some("order") => Mode::Order,
            _ => return Err("want send, read or order".into()),
        };
        let dir = PathBuf::from(args.get(3).ok_or("missing DIR")?);
        let len = match args.get(4) {
            Some(l) => l.parse().map_err(|e| format!("bad LEN: {e}"))?,
            None => LEN,
        };
        Ok((addr, mode, dir, len))
    })();
    let r = parsed.and_then(|(addr, mode, dir, len)| run(addr, mode, &dir, len));
    Some(match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            println!("RSIW-TEST FAIL zc-window: {}", e.replace('\n', " "));
            ExitCode::FAILURE
        }
    })
}
