// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! rsiw-rawpeer's QP-connection peers (rust/proto/src/qpconn.rs): a crafted request
//! (`qpconn`), a flood of them (`qpflood`) and a listener that answers an rsiw
//! initiator with a forged Reply (`qpserve`).

use super::{drain, hex, read_reply, USAGE};
use rsiw_proto::qpconn::ConnData;
use std::io::{self, ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// Privileged source ports the peers try, in order, when asked for one.
const RESV: std::ops::RangeInclusive<u16> = 512..=1023;

fn sockaddr(ip: Ipv4Addr, port: u16) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(ip).to_be(),
        },
        sin_zero: [0; 8],
    }
}

fn new_socket() -> Result<OwnedFd, String> {
    // SAFETY: a new socket, owned from here.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error().to_string());
    }
    // SAFETY: `fd` is a socket we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn bind(fd: &OwnedFd, ip: Ipv4Addr, port: u16) -> io::Result<()> {
    let sa = sockaddr(ip, port);
    // SAFETY: `sa` is a valid sockaddr_in for the call.
    let rv = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&sa as *const libc::sockaddr_in).cast(),
            core::mem::size_of_val(&sa) as u32,
        )
    };
    if rv == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// A source: `IP` (a privileged port), `IP:PORT` (`:0`: any port).
struct From {
    ip: Ipv4Addr,
    port: Option<u16>,
}

fn parse_from(s: Option<&String>) -> Result<From, String> {
    let Some(s) = s else {
        return Ok(From {
            ip: Ipv4Addr::UNSPECIFIED,
            port: None,
        });
    };
    let (ip, port) = match s.split_once(':') {
        Some((ip, p)) => (ip, Some(p.parse().map_err(|_| USAGE.to_string())?)),
        None => (s.as_str(), None),
    };
    Ok(From {
        ip: ip.parse().map_err(|_| USAGE.to_string())?,
        port,
    })
}

/// A TCP connection from `from` to `to` (the first free privileged port if
/// `from` names none).
fn connect_from(from: &From, to: SocketAddrV4, next: &mut u16) -> Result<TcpStream, String> {
    let tries = if from.port.is_some() { 1 } else { RESV.len() };
    let mut last = String::from("no port");
    for _ in 0..tries {
        let fd = new_socket()?;
        let port = from.port.unwrap_or(*next);
        if from.port.is_none() {
            *next = if *next >= *RESV.end() {
                *RESV.start()
            } else {
                *next + 1
            };
        }
        if let Err(e) = bind(&fd, from.ip, port) {
            last = format!("bind {}:{port}: {e}", from.ip);
            if e.kind() == ErrorKind::AddrInUse {
                continue;
            }
            return Err(last);
        }
        let sa = sockaddr(*to.ip(), to.port());
        // SAFETY: `sa` is a valid sockaddr_in for the call.
        let rv = unsafe {
            libc::connect(
                fd.as_raw_fd(),
                (&sa as *const libc::sockaddr_in).cast(),
                core::mem::size_of_val(&sa) as u32,
            )
        };
        if rv != 0 {
            let e = io::Error::last_os_error();
            last = format!("connect {to} from port {port}: {e}");
            if e.raw_os_error() == Some(libc::EADDRNOTAVAIL) && from.port.is_none() {
                continue;
            }
            return Err(last);
        }
        let s = TcpStream::from(fd);
        let _ = s.set_nodelay(true);
        return Ok(s);
    }
    Err(last)
}

/// The MPA Request (Rev 2, CRC, IRD/ORD 1 with the P and Write-RTR bits, RFC 6581
/// §5) carrying `data`.
fn request(data: &[u8]) -> Vec<u8> {
    let mut req = b"MPA ID Req Frame".to_vec();
    req.extend_from_slice(&[0x50, 2]);
    req.extend_from_slice(&((4 + data.len()) as u16).to_be_bytes());
    req.extend_from_slice(&[0x80, 0x01, 0x80, 0x01]);
    req.extend_from_slice(data);
    req
}

fn hexnum(args: &[String], i: usize) -> Result<u32, String> {
    args.get(i)
        .and_then(|s| u32::from_str_radix(s.trim_start_matches("0x"), 16).ok())
        .ok_or_else(|| USAGE.to_string())
}

/// A PSN argument: hex, or `-` for none.
fn psn(args: &[String], i: usize) -> Result<Option<u32>, String> {
    match args.get(i).map(String::as_str) {
        Some("-") => Ok(None),
        _ => hexnum(args, i).map(Some),
    }
}

/// `qpconn ADDR:PORT SRC DST SQ|- RQ|- [FROM] [WAIT_S]`.
pub(super) fn qpconn(args: &[String]) -> Result<(), String> {
    let addr: SocketAddrV4 = args.get(1).and_then(|a| a.parse().ok()).ok_or(USAGE)?;
    let data = ConnData {
        src_qpn: hexnum(args, 2)?,
        dst_qpn: hexnum(args, 3)?,
        sq_psn: psn(args, 4)?,
        rq_psn: psn(args, 5)?,
    }
    .emit();
    let from = parse_from(args.get(6))?;
    let wait = args.get(7).and_then(|w| w.parse().ok()).unwrap_or(10);
    let mut next = *RESV.start();
    let mut s = connect_from(&from, addr, &mut next)?;
    if let Ok(a) = s.local_addr() {
        println!("from port {}", a.port());
    }
    if s.write_all(&request(&data)).is_err() {
        println!("reply none");
        println!("end rst");
        return Ok(());
    }
    let _ = s.set_read_timeout(Some(Duration::from_secs(wait)));
    let mut head = [0u8; 20];
    if s.read_exact(&mut head).is_err() {
        println!("reply none");
        let (_, end) = drain(&mut s, Duration::from_secs(3));
        println!("end {end}");
        return Ok(());
    }
    let pd = usize::from(u16::from_be_bytes([head[18], head[19]]));
    let mut rest = vec![0u8; pd];
    let _ = s.read_exact(&mut rest);
    let mut r = head.to_vec();
    r.extend_from_slice(&rest);
    println!("reply {}", hex(&r));
    println!(
        "rejected {}",
        if head[16] & 0x20 != 0 { "yes" } else { "no" }
    );
    let (_, end) = drain(&mut s, Duration::from_secs(3));
    println!("end {end}");
    Ok(())
}

/// How a connection of a flood ended: `None` while it is open.
fn ended(s: &mut TcpStream) -> Option<&'static str> {
    let _ = s.set_nonblocking(true);
    let mut b = [0u8; 64];
    let r = match s.read(&mut b) {
        Ok(0) => Some("fin"),
        Ok(_) => Some("data"),
        Err(e) if e.kind() == ErrorKind::WouldBlock => None,
        Err(_) => Some("rst"),
    };
    let _ = s.set_nonblocking(false);
    r
}

/// `qpflood ADDR:PORT SRC DST COUNT FROM junk|hold SECONDS`.
pub(super) fn qpflood(args: &[String]) -> Result<(), String> {
    let addr: SocketAddrV4 = args.get(1).and_then(|a| a.parse().ok()).ok_or(USAGE)?;
    let data = ConnData {
        src_qpn: hexnum(args, 2)?,
        dst_qpn: hexnum(args, 3)?,
        sq_psn: Some(0x222),
        rq_psn: None,
    }
    .emit();
    let count: usize = args.get(4).and_then(|c| c.parse().ok()).ok_or(USAGE)?;
    let from = parse_from(args.get(5))?;
    let junk = match args.get(6).map(String::as_str) {
        Some("junk") => true,
        Some("hold") => false,
        _ => return Err(USAGE.to_string()),
    };
    let secs: u64 = args.get(7).and_then(|c| c.parse().ok()).ok_or(USAGE)?;
    let mut req = request(&data);
    if junk {
        // RFC 5044 §7.1.3: nothing may follow the Request before the Reply.
        req.extend_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
    }
    let t0 = Instant::now();
    let mut next = *RESV.start();
    let (mut sent, mut failed, mut closed, mut refused) = (0usize, 0usize, 0usize, 0usize);
    let mut held = Vec::new();
    for _ in 0..count {
        let mut s = match connect_from(&from, addr, &mut next) {
            Ok(s) => s,
            // The listener refused the connection before it was up.
            Err(e) if e.contains("reset by peer") || e.contains("refused") => {
                sent += 1;
                closed += 1;
                refused += 1;
                continue;
            }
            Err(e) => {
                if failed == 0 {
                    println!("first failure: {e}");
                }
                failed += 1;
                continue;
            }
        };
        sent += 1;
        if s.write_all(&req).is_err() {
            closed += 1;
            continue;
        }
        if junk {
            // Each is closed before the next (privileged ports are few).
            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
            let (_, end) = drain(&mut s, Duration::from_secs(5));
            if end != "open" {
                closed += 1;
            }
        } else {
            held.push(s);
        }
    }
    println!(
        "sent {sent} of {count} ({refused} reset while connecting, {failed} not connected) in {} ms",
        t0.elapsed().as_millis()
    );
    if junk {
        println!("closed {closed} of {sent}");
        return Ok(());
    }
    // Which the listener closed at once, which it holds (parked).
    std::thread::sleep(Duration::from_secs(2));
    let at_once = held.iter_mut().filter_map(ended).count() + closed;
    println!("closed {at_once} of {sent} within 2 s");
    let end = t0 + Duration::from_secs(secs);
    while Instant::now() < end {
        std::thread::sleep(Duration::from_millis(500));
    }
    let open = held
        .iter_mut()
        .filter_map(|s| ended(s).is_none().then_some(()))
        .count();
    println!("open {open} of {sent} after {secs} s");
    Ok(())
}

/// `qpserve DEV|- ADDR:PORT mirror|copy`: answers one rsiw QP connection Request
/// with a Reply that mirrors its block (`mirror`: QP numbers swapped, each PSN the
/// other's) or copies its SQ PSN (`copy`: the responder claims the initiator's SQ PSN
/// as its own); prints `request HEX`, `reply HEX` and how the initiator ended.
pub(super) fn qpserve(args: &[String]) -> Result<(), String> {
    let dev = args.get(1).ok_or(USAGE)?;
    let addr: SocketAddrV4 = args.get(2).and_then(|a| a.parse().ok()).ok_or(USAGE)?;
    let mode = args.get(3).ok_or(USAGE)?.clone();
    let fd = new_socket()?;
    if dev != "-" {
        // SAFETY: `dev` is a valid buffer of its length for the call.
        let rv = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_BINDTODEVICE,
                dev.as_ptr().cast(),
                dev.len() as u32,
            )
        };
        if rv != 0 {
            return Err(format!("bind to {dev}: {}", io::Error::last_os_error()));
        }
    }
    bind(&fd, *addr.ip(), addr.port()).map_err(|e| format!("bind {addr}: {e}"))?;
    // SAFETY: a bound socket we own.
    if unsafe { libc::listen(fd.as_raw_fd(), 4) } != 0 {
        return Err(io::Error::last_os_error().to_string());
    }
    let l = std::net::TcpListener::from(fd);
    println!("listening");
    let (mut s, _) = l.accept().map_err(|e| format!("accept: {e}"))?;
    let req = read_reply(&mut s).ok_or("no MPA Request")?;
    println!("request {}", hex(&req));
    let block = req
        .get(24..)
        .and_then(|b| ConnData::parse(b).ok())
        .ok_or("the Request carries no rsiw block")?;
    let forged = ConnData {
        src_qpn: block.dst_qpn,
        dst_qpn: block.src_qpn,
        sq_psn: if mode == "copy" {
            block.sq_psn
        } else {
            block.rq_psn
        },
        rq_psn: block.sq_psn,
    }
    .emit();
    // The Reply: CRC and enhanced flags, Rev 2; IRD/ORD 1, Write as RTR; the block.
    let mut rep = b"MPA ID Rep Frame".to_vec();
    rep.extend_from_slice(&[0x50, 2]);
    rep.extend_from_slice(&((4 + forged.len()) as u16).to_be_bytes());
    rep.extend_from_slice(&[0x80, 0x01, 0x80, 0x01]);
    rep.extend_from_slice(&forged);
    println!("reply {}", hex(&rep));
    s.write_all(&rep).map_err(|e| e.to_string())?;
    let (got, end) = drain(&mut s, Duration::from_secs(5));
    println!("got {} octets", got.len());
    println!("end {end}");
    Ok(())
}
