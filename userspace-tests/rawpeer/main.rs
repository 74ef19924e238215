// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! rsiw-rawpeer: a hostile or broken MPA peer over a plain TCP socket, for the VM tests
//! of an iWARP responder (RFC 5044 §7.1 setup, RFC 5040/5041/5044 error handling).
//!
//! `trickle` holds many connections that each send a valid MPA Request one octet at a
//! time and reports when the responder closed each. `fpdu` makes a real MPA exchange
//! (Rev 1, CRC) and then sends one crafted FPDU, printing what comes back.

mod qp;
mod rst;
mod serve;
mod zc_peer;

use rsiw_proto::crc::{crc32c_finish, soft_update, CRC32C_INIT};
use rsiw_proto::fpdu::pad_len;
use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddrV4, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::ExitCode;
use std::time::{Duration, Instant};

const USAGE: &str = "usage:
  rsiw-rawpeer trickle ADDR:PORT CONNS INTERVAL_MS SECONDS
      CONNS connections each send an MPA Request (Rev 1, CRC, 512 octets of private
      data) one octet per INTERVAL_MS; after SECONDS (or once all are closed) prints
      `closed K of N`, with the least and most time from connect to close, and
      `refused R` (closed within 1 s without any octet sent after the first).
  rsiw-rawpeer fpdu ADDR:PORT CASE
      MPA Request, Reply, then CASE's bytes; prints `reply HEX` (or `reply none`),
      then `got HEX` (what arrived within 5 s) and `end fin|rst|open`.
      CASE: terminate-msn (a Terminate with MSN 2), terminate-short (a Terminate of
      2 octets), ulpdu-short (ULPDU of one octet), send-too-long (the 20 header octets
      of a Send announcing 1000 octets), early (4 octets right after the Request,
      before the Reply), none (nothing: waits up to 10 s for the Reply),
      send-bad-crc (a Send of 16 octets whose MPA CRC is wrong), terminate (a valid
      Terminate, RDMAP Remote Operation, Unexpected OpCode, MSN 1), terminate-qn0
      (that Terminate on QN 0), terminate-tagged (with the T bit set),
      read-response-unasked (16 octets of Read Response, no Read asked for),
      atomic-response-unasked (an Atomic Response, no Atomic asked for), ulpdu-zero
      (ULPDU_Length 0), ulpdu-17 (a Send header cut at 17 octets)
  rsiw-rawpeer serve-read ADDR:PORT short|full|long|split-long|extra
      Listens, answers one MPA Request (Rev 2, CRC, IRD/ORD 1, a zero-length Write as
      RTR), then answers the first RDMA Read Request with a Read Response of half the
      requested octets (short) or all of them (full), each octet 0xa5, last flag set;
      long: 16 octets more in the same segment; split-long: the requested octets
      without the last flag, then a segment of 16 more; extra: the full Response,
      then a second Response of 16 octets past its end;
      prints `read STAG TO SIZE`, then `got HEX` (what arrived within 5 s after the
      Response) and `end fin|rst|open`.
  rsiw-rawpeer serve-guess ADDR:PORT
      Listens, answers one MPA Request as serve-read does, waits for a Send carrying
      an STag, its TO and the TO of the region registered after it (20 octets), Reads
      16 octets through the STag, then through STag + 0x101 (what the next region's
      STag was when keys and indices counted up) at the next TO; prints `told STAG TO
      NEXT_TO`, `read ok|failed HEX`, `guess STAG got HEX` and `end fin|rst|open`.
  rsiw-rawpeer serve-sends ADDR:PORT COUNT
      Listens, answers one MPA Request as serve-read does, waits for a Send, then
      sends COUNT Sends of 8 octets at once, 12 on one page and one on each page
      after, spliced from those pages (one socket buffer fragment per page); prints
      `sent COUNT Sends on PAGES pages`, `got HEX` and `end fin|rst|open`.
  rsiw-rawpeer serve-hold ADDR:PORT SECONDS
      Listens, answers one MPA Request as serve-read does, then reads and discards
      what comes for SECONDS without ever closing its side (a peer that does not
      answer a FIN); prints `fin after S s` when the FIN came, `octets N`, and
      `end [fin, then ]open|rst`.
  rsiw-rawpeer qpconn ADDR:PORT SRC_QPN DST_QPN SQ_PSN|- RQ_PSN|- [FROM] [WAIT_S]
      A QP connection request to a device's QP-connection listener (MPA Rev 2, CRC,
      IRD/ORD 1, peer-to-peer with a zero-length Write as RTR, the qpconn block naming
      the QPs and PSNs, numbers in hex, `-`: not carried) from FROM (IP: from a
      privileged port; IP:PORT, :0 any port); waits up to WAIT_S (default 10) for the
      Reply; prints `from port P`, `reply HEX` (or `reply none`), `rejected yes|no`,
      then `end fin|rst|open` (within 3 s after the Reply).
  rsiw-rawpeer qpflood ADDR:PORT SRC_QPN DST_QPN COUNT FROM junk|hold SECONDS
      COUNT such requests (SQ PSN 0x222) from FROM; junk: 4 octets follow each
      Request, one connection after the other, each read until it ends; prints
      `closed C of N`. hold: all held open; prints `closed C of N within 2 s` and,
      after SECONDS, `open O of N`.
  rsiw-rawpeer qpserve DEV|- ADDR:PORT mirror|copy
      Listens on ADDR:PORT (bound to DEV unless -), answers one QP connection
      Request with a Reply whose block mirrors the Request's (mirror) or claims its
      SQ PSN (copy); prints `request HEX`, `reply HEX`, `got N octets`, `end …`.
  rsiw-rawpeer rst PORT [COUNT [SECONDS]]
      Resets the first COUNT (default 1) TCP connections whose local end has port PORT
      with a forged RST from their peer, its sequence number learnt from their own
      segments (sniffed with a packet socket); stops after SECONDS (default 30); prints
      `victim …` per connection and `reset N of M`.
  rsiw-rawpeer zc-window ADDR:PORT send|read DIR
      The peer of rsiw-verbs-test --zc-window (zc_peer.rs): keeps its receive window
      shut until DIR/go, then counts the payload's old and new fill.";

/// The MPA Request: key, flags (C), Rev 1, PD_Length (RFC 5044 §7.1.1).
fn request(pd_len: u16) -> Vec<u8> {
    let mut v = b"MPA ID Req Frame".to_vec();
    v.extend_from_slice(&[0x40, 1]);
    v.extend_from_slice(&pd_len.to_be_bytes());
    v.resize(v.len() + usize::from(pd_len), 0x5a);
    v
}

/// An FPDU (no markers): length, ULPDU, PAD, CRC-32C (RFC 5044 §4).
fn fpdu(ulpdu: &[u8], announce: Option<u16>) -> Vec<u8> {
    let len = announce.unwrap_or(ulpdu.len() as u16);
    let mut v = len.to_be_bytes().to_vec();
    v.extend_from_slice(ulpdu);
    v.resize(v.len() + pad_len(ulpdu.len() as u16), 0);
    let crc = crc32c_finish(soft_update(CRC32C_INIT, &v));
    v.extend_from_slice(&crc.to_le_bytes());
    v
}

/// An untagged DDP/RDMAP header (L set): control octets, RsvdULP, QN, MSN, MO.
fn untagged(opcode: u8, qn: u32, msn: u32, body: &[u8]) -> Vec<u8> {
    let mut v = vec![0x41, 0x40 | opcode];
    for w in [0, qn, msn, 0] {
        v.extend_from_slice(&w.to_be_bytes());
    }
    v.extend_from_slice(body);
    v
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn connect(addr: &str) -> Result<TcpStream, String> {
    let s = TcpStream::connect(addr).map_err(|e| format!("connect {addr}: {e}"))?;
    s.set_nodelay(true).map_err(|e| e.to_string())?;
    Ok(s)
}

/// Reads until EOF, an error or `wait`; returns the bytes and how the stream ended.
fn drain(s: &mut TcpStream, wait: Duration) -> (Vec<u8>, &'static str) {
    let end = Instant::now() + wait;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return (got, "open");
        }
        let _ = s.set_read_timeout(Some(left));
        match s.read(&mut buf) {
            Ok(0) => return (got, "fin"),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return (got, "open")
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return (got, "rst"),
        }
    }
}

/// Reads one MPA Reply frame (header, then its private data).
fn read_reply(s: &mut TcpStream) -> Option<Vec<u8>> {
    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
    let mut head = [0u8; 20];
    s.read_exact(&mut head).ok()?;
    let pd = usize::from(u16::from_be_bytes([head[18], head[19]]));
    let mut v = head.to_vec();
    let mut rest = vec![0u8; pd];
    s.read_exact(&mut rest).ok()?;
    v.extend_from_slice(&rest);
    Some(v)
}

/// Reads one FPDU (no markers) and returns its ULPDU; the CRC is not checked.
fn read_fpdu(s: &mut TcpStream) -> Option<Vec<u8>> {
    let mut len = [0u8; 2];
    s.read_exact(&mut len).ok()?;
    let n = usize::from(u16::from_be_bytes(len));
    let mut rest = vec![0u8; n + pad_len(n as u16) + 4];
    s.read_exact(&mut rest).ok()?;
    rest.truncate(n);
    Some(rest)
}

/// A tagged DDP segment (L set) carrying an RDMAP Read Response (RFC 5040 §4.5).
fn read_response(stag: u32, to: u64, payload: &[u8]) -> Vec<u8> {
    let mut v = vec![0xc1, 0x42];
    v.extend_from_slice(&stag.to_be_bytes());
    v.extend_from_slice(&to.to_be_bytes());
    v.extend_from_slice(payload);
    v
}

/// Listens on `addr`, takes one connection, reads its MPA Request and accepts it.
fn accept_one(addr: &str) -> Result<TcpStream, String> {
    let l = std::net::TcpListener::bind(addr).map_err(|e| format!("bind {addr}: {e}"))?;
    println!("listening");
    let (mut s, _) = l.accept().map_err(|e| format!("accept: {e}"))?;
    s.set_nodelay(true).map_err(|e| e.to_string())?;
    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
    let req = read_reply(&mut s).ok_or("no MPA Request")?;
    println!("request {}", hex(&req));
    // RFC 5044 §7.1.1 Reply: CRC (and enhanced) flags, Rev 2, PD_Length 4; RFC 6581:
    // IRD 1 with the peer-to-peer bit, ORD 1 choosing a zero-length Write as RTR.
    let mut rep = b"MPA ID Rep Frame".to_vec();
    rep.extend_from_slice(&[0x50, 2, 0, 4, 0x80, 1, 0x80, 1]);
    s.write_all(&rep).map_err(|e| e.to_string())?;
    Ok(s)
}

/// `serve-hold`: an MPA responder that never closes its side.
fn serve_hold(addr: &str, seconds: u64) -> Result<(), String> {
    let mut s = accept_one(addr)?;
    let t0 = Instant::now();
    let end = t0 + Duration::from_secs(seconds);
    let mut buf = [0u8; 4096];
    let mut fin = None;
    let mut octets = 0usize;
    let how = loop {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break "open";
        }
        if fin.is_some() {
            // Nothing more can come but an RST: keep the socket open, unanswered.
            std::thread::sleep(left.min(Duration::from_millis(100)));
            let _ = s.set_read_timeout(Some(Duration::from_millis(1)));
        } else {
            let _ = s.set_read_timeout(Some(left));
        }
        match s.read(&mut buf) {
            Ok(0) if fin.is_none() => {
                fin = Some(t0.elapsed());
                println!("fin after {:.1} s", t0.elapsed().as_secs_f64());
            }
            Ok(0) => {}
            Ok(n) => octets += n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => break "rst",
        }
    };
    println!("octets {octets}");
    println!("end {}{how}", if fin.is_some() { "fin, then " } else { "" });
    Ok(())
}

/// `serve-read`: an MPA responder that answers one Read Request, in full, short, or
/// with more than it asked for.
fn serve_read(addr: &str, case: &str) -> Result<(), String> {
    if !matches!(case, "short" | "full" | "long" | "split-long" | "extra") {
        return Err(USAGE.to_string());
    }
    let mut s = accept_one(addr)?;
    // FPDUs until the Read Request (the RTR Write and anything else are skipped).
    let rr = loop {
        let u = read_fpdu(&mut s).ok_or("the stream ended before a Read Request")?;
        let untagged = u.first().is_some_and(|c| c & 0x80 == 0);
        if untagged && u.get(1).is_some_and(|r| r & 0x0f == 0x1) && u.len() >= 18 + 28 {
            break u;
        }
    };
    let be32 = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    let (stag, size) = (be32(&rr[18..22]), be32(&rr[30..34]));
    let mut to = [0u8; 8];
    to.copy_from_slice(&rr[22..30]);
    let to = u64::from_be_bytes(to);
    println!("read {stag:#x} {to:#x} {size}");
    let n = if case == "short" { size / 2 } else { size } as usize;
    let payload = vec![0xa5u8; n];
    // RFC 5040 §4.5: one segment, L set; `split-long` sends the requested octets
    // without L, then 16 more with it.
    let mut first = read_response(stag, to, &payload);
    if case == "split-long" {
        first[0] &= !0x40;
    } else if case == "long" {
        first.extend_from_slice(&[0x5a; 16]);
    }
    let mut out = fpdu(&first, None);
    let past = to.wrapping_add(size.into());
    match case {
        "split-long" | "extra" => {
            out.extend_from_slice(&fpdu(&read_response(stag, past, &[0x5a; 16]), None))
        }
        _ => {}
    }
    s.write_all(&out).map_err(|e| e.to_string())?;
    let (got, end) = drain(&mut s, Duration::from_secs(5));
    println!("got {}", hex(&got));
    println!("end {end}");
    Ok(())
}

fn fpdu_case(addr: &str, case: &str) -> Result<(), String> {
    let bytes = match case {
        // RFC 5040 §4.8 Terminate on QN 2, but MSN 2 where 1 is due.
        "terminate-msn" => fpdu(&untagged(0x7, 2, 2, &[0x20, 0x02, 0, 0]), None),
        // A Terminate whose header is cut to 2 octets.
        "terminate-short" => fpdu(&untagged(0x7, 2, 1, &[0x20, 0x02]), None),
        // A ULPDU of one octet: no DDP header fits.
        "ulpdu-short" => fpdu(&[0x41], None),
        // A Send (MSN 1) announcing 1000 octets of payload; only its header is sent.
        "send-too-long" => {
            let f = fpdu(&untagged(0x3, 0, 1, &[7; 1000]), None);
            f[..2 + 18].to_vec()
        }
        // A whole Send (MSN 1, 16 octets) whose CRC has one bit flipped (RFC 5044 §8).
        "send-bad-crc" => {
            let mut f = fpdu(&untagged(0x3, 0, 1, &[0x5a; 16]), None);
            if let Some(last) = f.last_mut() {
                *last ^= 1;
            }
            f
        }
        // RFC 5040 §4.8: Layer RDMAP, Remote Operation (2), Unexpected OpCode (6).
        "terminate" => fpdu(&untagged(0x7, 2, 1, &[0x02, 0x06, 0, 0]), None),
        // The same Terminate on QN 0, the Send queue (RFC 5040 §5.1 puts it on 2).
        "terminate-qn0" => fpdu(&untagged(0x7, 0, 1, &[0x02, 0x06, 0, 0]), None),
        // The same Terminate with the T bit set (STag 0, TO 0).
        "terminate-tagged" => {
            let mut u = vec![0xc1, 0x47];
            u.extend_from_slice(&[0; 12]);
            u.extend_from_slice(&[0x02, 0x06, 0, 0]);
            fpdu(&u, None)
        }
        // A Read Response (STag 0x1234, TO 0, 16 octets) when no Read was asked for.
        "read-response-unasked" => fpdu(&read_response(0x1234, 0, &[0xa5; 16]), None),
        // An Atomic Response (QN 3, MSN 1, request 7) when no Atomic was asked for.
        "atomic-response-unasked" => {
            let mut body = 7u32.to_be_bytes().to_vec();
            body.extend_from_slice(&[0; 8]);
            fpdu(&untagged(0xb, 3, 1, &body), None)
        }
        // ULPDU_Length 0: an FPDU of its length field, pad and CRC only.
        "ulpdu-zero" => fpdu(&[], None),
        // A Send's DDP header cut at 17 octets, one short (RFC 5041 §4.3).
        "ulpdu-17" => fpdu(&untagged(0x3, 0, 1, &[])[..17], None),
        "early" => vec![0, 0, 0, 0],
        "none" => Vec::new(),
        _ => return Err(format!("unknown case `{case}`\n{USAGE}")),
    };
    let mut s = connect(addr)?;
    let mut req = request(0);
    if case == "early" {
        req.extend_from_slice(&bytes);
    }
    s.write_all(&req).map_err(|e| e.to_string())?;
    match read_reply(&mut s) {
        Some(r) => println!("reply {}", hex(&r)),
        None => {
            println!("reply none");
            let (got, end) = drain(&mut s, Duration::from_secs(5));
            println!("got {}", hex(&got));
            println!("end {end}");
            return Ok(());
        }
    }
    if case != "early" && !bytes.is_empty() {
        s.write_all(&bytes).map_err(|e| e.to_string())?;
    }
    let (got, end) = drain(&mut s, Duration::from_secs(5));
    println!("got {}", hex(&got));
    println!("end {end}");
    let _ = s.shutdown(Shutdown::Both);
    Ok(())
}

/// One trickling connection (`None`: reset before the first octet).
struct Trickle {
    s: Option<TcpStream>,
    connected: Instant,
    sent: usize,
    closed: Option<Duration>,
}

/// One round: the next octet of the Request to every open connection; a
/// connection the responder closed (FIN, RST, or any answer at all) is noted.
fn trickle_round(all: &mut [Trickle], req: &[u8]) {
    let mut buf = [0u8; 64];
    for t in all.iter_mut().filter(|t| t.closed.is_none()) {
        let Some(s) = t.s.as_mut() else { continue };
        let gone = match s.read(&mut buf) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) if e.kind() == ErrorKind::WouldBlock => false,
            Err(_) => true,
        };
        let gone = gone
            || match req.get(t.sent..t.sent + 1) {
                Some(b) => match s.write(b) {
                    Ok(n) => {
                        t.sent += n;
                        false
                    }
                    Err(e) => e.kind() != ErrorKind::WouldBlock,
                },
                None => false,
            };
        if gone {
            t.closed = Some(t.connected.elapsed());
        }
    }
}

/// Starts a TCP connect to `addr` without waiting for it.
fn connect_start(addr: SocketAddrV4) -> Result<OwnedFd, String> {
    connect_start_with(addr, |_| Ok(()))
}

/// `connect_start`, with `setup` run on the socket before the connect.
fn connect_start_with(
    addr: SocketAddrV4,
    setup: impl FnOnce(&OwnedFd) -> Result<(), String>,
) -> Result<OwnedFd, String> {
    let ty = libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC;
    // SAFETY: creates a descriptor, owned below.
    let fd = unsafe { libc::socket(libc::AF_INET, ty, 0) };
    if fd < 0 {
        return Err(format!("socket: {}", io::Error::last_os_error()));
    }
    // SAFETY: `fd` is a fresh descriptor nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    setup(&fd)?;
    let sin = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: addr.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(*addr.ip()).to_be(),
        },
        sin_zero: [0; 8],
    };
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: `sin` is a valid `sockaddr_in` of `len` octets; `fd` is open.
    let rv = unsafe {
        libc::connect(
            fd.as_raw_fd(),
            (&sin as *const libc::sockaddr_in).cast(),
            len,
        )
    };
    if rv < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(format!("connect {addr}: {e}"));
        }
    }
    Ok(fd)
}

/// A started connect's outcome, or `None` while it is in progress.
fn connect_done(fd: &OwnedFd) -> Option<io::Result<()>> {
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: one valid `pollfd`; no wait.
    if unsafe { libc::poll(&mut p, 1, 0) } <= 0 {
        return None;
    }
    let mut err: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `err` and `len` are writable and `len` is `err`'s size.
    let rv = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_ERROR,
            (&mut err as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    Some(match (rv, err) {
        (0, 0) => Ok(()),
        (0, e) => Err(io::Error::from_raw_os_error(e)),
        _ => Err(io::Error::last_os_error()),
    })
}

fn trickle(addr: &str, conns: usize, interval: Duration, seconds: u64) -> Result<(), String> {
    let addr: SocketAddrV4 = addr.parse().map_err(|e| format!("{addr}: {e}"))?;
    let req = request(512);
    let mut all: Vec<Trickle> = Vec::with_capacity(conns);
    let mut connecting: Vec<OwnedFd> = Vec::new();
    let mut opened = 0;
    let end = Instant::now() + Duration::from_secs(seconds);
    let mut last: Option<Instant> = None;
    // Connections are opened one at a time (a burst of SYNs would overflow a
    // small listen backlog and spread the connects over SYN retries), without
    // waiting for them while the earlier ones trickle, so that no connection
    // waits longer than INTERVAL_MS for its next octet, whatever the
    // responder's accept does.
    while Instant::now() < end
        && (opened < conns || !connecting.is_empty() || all.iter().any(|t| t.closed.is_none()))
    {
        if opened < conns && connecting.is_empty() {
            connecting.push(connect_start(addr)?);
            opened += 1;
        }
        let mut i = 0;
        while let Some(fd) = connecting.get(i) {
            let Some(r) = connect_done(fd) else {
                i += 1;
                continue;
            };
            let s = TcpStream::from(connecting.swap_remove(i));
            // A responder that resets a connection at accept can make the
            // connect itself fail: that connection is closed at once.
            let s = r.and_then(|()| s.set_nodelay(true)).ok().map(|()| s);
            all.push(Trickle {
                closed: s.is_none().then_some(Duration::ZERO),
                s,
                connected: Instant::now(),
                sent: 0,
            });
            if all.len() == conns {
                println!("connected {conns}");
            }
        }
        // `elapsed` read once: read again for the sleep, it could be past `interval`.
        match last.map(|t| t.elapsed()) {
            Some(e) if e < interval => {
                if opened >= conns || !connecting.is_empty() {
                    std::thread::sleep((interval - e).min(Duration::from_millis(2)));
                }
            }
            _ => {
                trickle_round(&mut all, &req);
                last = Some(Instant::now());
            }
        }
    }
    let mut times: Vec<Duration> = all.iter().filter_map(|t| t.closed).collect();
    times.sort_unstable();
    let refused = all
        .iter()
        .filter(|t| t.closed.is_some_and(|c| c < Duration::from_secs(1)) && t.sent <= 1)
        .count();
    let ms = |d: Option<&Duration>| d.map_or(0, |d| d.as_millis());
    println!(
        "closed {} of {}, after {}..{} ms (median {}); refused {refused}",
        times.len(),
        all.len(),
        ms(times.first()),
        ms(times.last()),
        ms(times.get(times.len() / 2)),
    );
    if !connecting.is_empty() {
        println!("never connected {}", connecting.len());
    }
    Ok(())
}

fn run(args: &[String]) -> Result<(), String> {
    let num = |i: usize| -> Result<u64, String> {
        args.get(i)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| USAGE.to_string())
    };
    match (args.first().map(String::as_str), args.get(1)) {
        (Some("trickle"), Some(addr)) => trickle(
            addr,
            num(2)? as usize,
            Duration::from_millis(num(3)?),
            num(4)?,
        ),
        (Some("fpdu"), Some(addr)) => fpdu_case(addr, args.get(2).ok_or(USAGE)?),
        (Some("serve-hold"), Some(addr)) => {
            serve_hold(addr, args.get(2).and_then(|s| s.parse().ok()).ok_or(USAGE)?)
        }
        (Some("serve-read"), Some(addr)) => serve_read(addr, args.get(2).ok_or(USAGE)?),
        (Some("serve-guess"), Some(addr)) => serve::serve_guess(addr),
        (Some("serve-sends"), Some(addr)) => serve::serve_sends(addr, num(2)? as usize),
        (Some("qpconn"), Some(_)) => qp::qpconn(args),
        (Some("qpflood"), Some(_)) => qp::qpflood(args),
        (Some("qpserve"), Some(_)) => qp::qpserve(args),
        (Some("zc-window"), Some(addr)) => {
            zc_peer::run(addr, args.get(2).ok_or(USAGE)?, args.get(3).ok_or(USAGE)?)
        }
        (Some("rst"), Some(port)) => rst::run(
            port.parse().map_err(|_| USAGE.to_string())?,
            num(2).unwrap_or(1) as usize,
            num(3).unwrap_or(30),
        ),
        _ => Err(USAGE.to_string()),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rsiw-rawpeer: {e}");
            ExitCode::FAILURE
        }
    }
}
