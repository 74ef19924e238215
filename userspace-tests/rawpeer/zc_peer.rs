// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! `rsiw-rawpeer zc-window`: the peer of the zero-copy window test
//! (`zc-window-rsiw.sh`; the application's side is `rsiw-verbs-test
//! --zc-window`, `zc_window.rs`). It keeps its TCP receive window shut (a
//! 4 KiB `SO_RCVBUF`, nothing read) until the application has overwritten and
//! deregistered the memory it sends from, then reads, and counts which fill
//! the payload carries: only the old one may arrive.

use super::{connect_done, connect_start_with, fpdu, hex, read_reply, request, untagged};
use rsiw_proto::crc::{crc32c_finish, soft_update, CRC32C_INIT};
use rsiw_proto::fpdu::pad_len;
use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddrV4, TcpStream};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::{Duration, Instant};

/// As `zc_window::OLD` and `NEW` (another binary).
const OLD: u8 = 0xa1;
const NEW: u8 = 0x5e;
/// The receive buffer that keeps the window (almost) shut.
const RCVBUF: libc::c_int = 4096;

/// A blocking TCP connection to `addr` whose receive buffer is `RCVBUF`
/// octets, set before the connect so that the window scale stays small.
fn connect_small(addr: SocketAddrV4) -> Result<TcpStream, String> {
    let fd = connect_start_with(addr, |fd| {
        let len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: `RCVBUF` is a c_int of `len` octets; `fd` is open.
        let rv = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                (&RCVBUF as *const libc::c_int).cast(),
                len,
            )
        };
        match rv {
            0 => Ok(()),
            _ => Err(format!("SO_RCVBUF: {}", io::Error::last_os_error())),
        }
    })?;
    let t0 = Instant::now();
    loop {
        match connect_done(&fd) {
            Some(r) => break r.map_err(|e| format!("connect {addr}: {e}"))?,
            None if t0.elapsed() > Duration::from_secs(10) => {
                return Err(format!("connect {addr}: no answer within 10 s"))
            }
            None => std::thread::sleep(Duration::from_millis(5)),
        }
    }
    let s = TcpStream::from(fd);
    s.set_nonblocking(false).map_err(|e| e.to_string())?;
    s.set_nodelay(true).map_err(|e| e.to_string())?;
    Ok(s)
}

fn touch(path: &Path) -> Result<(), String> {
    std::fs::write(path, b"").map_err(|e| format!("{}: {e}", path.display()))
}

/// What the payload of the FPDUs read carried.
#[derive(Default)]
struct Tally {
    fpdus: usize,
    payload: u64,
    old: u64,
    new: u64,
    other: u64,
    crc_bad: usize,
    terminate: Option<Vec<u8>>,
    last: bool,
}

impl Tally {
    fn count(&mut self, payload: &[u8]) {
        self.payload += payload.len() as u64;
        for &b in payload {
            match b {
                OLD => self.old += 1,
                NEW => self.new += 1,
                _ => self.other += 1,
            }
        }
    }

    /// One FPDU: its ULPDU and whether its CRC (RFC 5044 §4.4) holds.
    fn fpdu(&mut self, ulpdu: &[u8], crc_ok: bool) {
        self.fpdus += 1;
        if !crc_ok {
            self.crc_bad += 1;
        }
        let (Some(&ctrl), Some(&rdmap)) = (ulpdu.first(), ulpdu.get(1)) else {
            return;
        };
        let tagged = ctrl & 0x80 != 0;
        let last = ctrl & 0x40 != 0;
        match (tagged, rdmap & 0x0f) {
            // RFC 5040 §4.5 Read Response: tagged, 14 header octets.
            (true, 0x2) => {
                self.count(ulpdu.get(14..).unwrap_or_default());
                self.last |= last;
            }
            // RFC 5040 §4.3 Send: untagged, 18 header octets.
            (false, 0x3) => {
                self.count(ulpdu.get(18..).unwrap_or_default());
                self.last |= last;
            }
            // RFC 5040 §4.8 Terminate: its first 4 octets name the error.
            (false, 0x7) => {
                self.terminate = Some(ulpdu.get(18..22).unwrap_or_default().to_vec());
            }
            _ => {}
        }
    }
}

/// Reads FPDUs until the last one of a message of `len` octets, a Terminate,
/// the stream's end or 10 s without an octet; returns how it ended.
fn read_all(s: &mut TcpStream, t: &mut Tally, len: u32) -> &'static str {
    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
    loop {
        if t.terminate.is_some() {
            return "terminate";
        }
        if t.last && t.payload >= u64::from(len) {
            return "complete";
        }
        let mut len = [0u8; 2];
        if let Err(e) = s.read_exact(&mut len) {
            return match e.kind() {
                ErrorKind::UnexpectedEof => "fin",
                ErrorKind::WouldBlock | ErrorKind::TimedOut => "timeout",
                _ => "rst",
            };
        }
        let n = usize::from(u16::from_be_bytes(len));
        let mut rest = vec![0u8; n + pad_len(n as u16) + 4];
        if let Err(e) = s.read_exact(&mut rest) {
            return match e.kind() {
                ErrorKind::UnexpectedEof => "fin mid-FPDU",
                ErrorKind::WouldBlock | ErrorKind::TimedOut => "timeout mid-FPDU",
                _ => "rst mid-FPDU",
            };
        }
        let (body, trailer) = rest.split_at(rest.len() - 4);
        let crc = crc32c_finish(soft_update(soft_update(CRC32C_INIT, &len), body));
        let ok = trailer == crc.to_le_bytes();
        t.fpdu(&body[..n], ok);
    }
}

/// `zc-window ADDR send|read DIR`.
pub(super) fn run(addr: &str, mode: &str, dir: &str) -> Result<(), String> {
    let read = match mode {
        "send" => false,
        "read" => true,
        _ => return Err(format!("zc-window: want send or read, not `{mode}`")),
    };
    let addr: SocketAddrV4 = addr.parse().map_err(|e| format!("{addr}: {e}"))?;
    let dir = Path::new(dir);
    let mut s = connect_small(addr)?;
    // MPA Rev 1 with CRC (RFC 5044 §7.1.1): no RTR, the responder may send at once.
    s.write_all(&request(0)).map_err(|e| e.to_string())?;
    let reply = read_reply(&mut s).ok_or("no MPA Reply")?;
    println!("reply {}", hex(&reply));
    if reply.get(16).is_some_and(|f| f & 0x20 != 0) {
        return Err("the MPA Reply rejects the connection".into());
    }
    // Rev 2 (RFC 6581 §5) puts IRD/ORD ahead of the ULP's private data.
    let at = if reply.get(17) == Some(&2) { 24 } else { 20 };
    let pd = reply
        .get(at..at + 16)
        .ok_or("the Reply carries no region in its private data")?;
    let be32 = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    let (stag, len) = (be32(&pd[0..4]), be32(&pd[12..16]));
    let mut to = [0u8; 8];
    to.copy_from_slice(&pd[4..12]);
    let to = u64::from_be_bytes(to);
    println!("region {stag:#x} {to:#x} {len}");
    if read {
        // RFC 5040 §4.4 Read Request on QN 1, MSN 1: sink STag and TO (ours,
        // never checked here), size, source STag and TO.
        let mut body = Vec::with_capacity(28);
        body.extend_from_slice(&0x1234u32.to_be_bytes());
        body.extend_from_slice(&0u64.to_be_bytes());
        body.extend_from_slice(&len.to_be_bytes());
        body.extend_from_slice(&stag.to_be_bytes());
        body.extend_from_slice(&to.to_be_bytes());
        s.write_all(&fpdu(&untagged(0x1, 1, 1, &body), None))
            .map_err(|e| e.to_string())?;
        touch(&dir.join("sent"))?;
    }
    let t0 = Instant::now();
    let go = dir.join("go");
    while !go.exists() {
        if t0.elapsed() > Duration::from_secs(90) {
            return Err("the application never said go".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    println!("window shut for {:.1} s", t0.elapsed().as_secs_f64());
    let mut t = Tally::default();
    let end = read_all(&mut s, &mut t, len);
    println!(
        "fpdus {} payload {} old {} new {} other {} crc_bad {}",
        t.fpdus, t.payload, t.old, t.new, t.other, t.crc_bad
    );
    match &t.terminate {
        Some(term) => println!("terminate {}", hex(term)),
        None => println!("terminate none"),
    }
    println!("end {end}");
    touch(&dir.join("done"))?;
    let _ = s.shutdown(Shutdown::Both);
    Ok(())
}
