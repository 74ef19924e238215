// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! rsiw-load: traffic over many rdma_cm connections with every byte checked end to end,
//! for the fault campaign and the soak.
//!
//! The server exposes one region per connection and answers each Send it verified with
//! a small Send of its own. A client round on one connection is an RDMA Write of a
//! pattern into the peer's region, a Read of it back (compared), a Send (checked by the
//! server, whose answer the client checks) and a FetchAdd then a CmpSwap on the
//! connection's own word, whose original values the client predicts exactly. When a
//! connection fails (its peer killed, its socket reset, the link down), every work
//! request posted on it must still complete, with a flush or an error status, and
//! the rdma_cm DISCONNECTED event must come: the client counts what did not.

use rsiw_userspace_tests::ffi;

mod client;
mod server;

use std::net::{SocketAddrV4, ToSocketAddrs};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const USAGE: &str = "usage:
  rsiw-load server ADDR[:PORT] [--seconds S] [--report S]
      Serves connections until SIGTERM/SIGINT (or S seconds); then prints
      `rsiw-load server: …` and exits 0 unless a received Send was wrong.
  rsiw-load client ADDR[:PORT] [--conns N] [--rounds R | --seconds S] [--ops swra]
                   [--size BYTES] [--churn R] [--expect-failure] [--drain S]
                   [--hold S] [--report S] [--reconnect]
      N connections (default 1) each run rounds of the ops given (s Send, w Write,
      r Read of what was written, a FetchAdd and CmpSwap) with SIZE-byte payloads at
      most (default 4096, sizes vary per round); R rounds each (default 10) or for S
      seconds. --churn R closes each connection after R rounds and opens a new one.
      --hold S keeps the connections open S seconds after the last round (QP numbers
      are printed as `conn I qpn N`). With --expect-failure, connections that fail are
      expected (a fault test): each failure must still end with every work request
      completed and a DISCONNECTED event within --drain S (default 30) seconds;
      --reconnect then opens a new connection in its place.
      Prints `rsiw-load client: …`; exits 0 unless data was wrong, a connection hung,
      or (without --expect-failure) one failed.";

/// Port when the address names none.
const DEFAULT_PORT: u16 = 7480;
/// Largest Send payload.
pub const MSG_MAX: usize = 4096;
/// Receives each side keeps posted per connection.
pub const RECVS: usize = 8;
/// A Send's header: magic, sequence number, length.
pub const SEND_HDR: usize = 16;
const SEND_MAGIC: u32 = 0x5253_4c53;
const ACK_MAGIC: u32 = 0x5253_4c41;
const REQ_MAGIC: u32 = 0x5253_4c51;
const REP_MAGIC: u32 = 0x5253_4c52;

/// Set by SIGTERM/SIGINT: stop, report, exit.
pub static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

fn catch_signals() {
    let h = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGTERM, h);
        libc::signal(libc::SIGINT, h);
    }
}

/// The command line.
pub struct Opts {
    pub addr: SocketAddrV4,
    pub conns: usize,
    pub rounds: Option<u64>,
    pub seconds: Option<u64>,
    pub ops: String,
    pub size: usize,
    pub churn: Option<u64>,
    pub expect_failure: bool,
    pub drain: Duration,
    pub hold: Duration,
    pub report: Option<Duration>,
    pub reconnect: bool,
}

fn parse(args: &[String]) -> Result<(String, Opts), String> {
    let role = args.first().ok_or(USAGE)?.clone();
    let a = args.get(1).ok_or(USAGE)?;
    let a = if a.contains(':') {
        a.clone()
    } else {
        format!("{a}:{DEFAULT_PORT}")
    };
    let addr = a
        .to_socket_addrs()
        .map_err(|e| format!("{a}: {e}"))?
        .find_map(|x| match x {
            std::net::SocketAddr::V4(v) => Some(v),
            _ => None,
        })
        .ok_or_else(|| format!("{a}: no IPv4 address"))?;
    let mut o = Opts {
        addr,
        conns: 1,
        rounds: None,
        seconds: None,
        ops: "swra".into(),
        size: 4096,
        churn: None,
        expect_failure: false,
        drain: Duration::from_secs(30),
        hold: Duration::ZERO,
        report: None,
        reconnect: false,
    };
    let mut it = args.iter().skip(2);
    while let Some(k) = it.next() {
        let mut num = || -> Result<u64, String> {
            it.next()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("{k} needs a number"))
        };
        match k.as_str() {
            "--conns" => o.conns = num()? as usize,
            "--rounds" => o.rounds = Some(num()?),
            "--seconds" => o.seconds = Some(num()?),
            "--size" => o.size = (num()? as usize).max(1),
            "--churn" => o.churn = Some(num()?.max(1)),
            "--drain" => o.drain = Duration::from_secs(num()?),
            "--hold" => o.hold = Duration::from_secs(num()?),
            "--report" => o.report = Some(Duration::from_secs(num()?.max(1))),
            "--expect-failure" => o.expect_failure = true,
            "--reconnect" => o.reconnect = true,
            "--ops" => {
                o.ops = it.next().ok_or("--ops needs letters")?.clone();
                if o.ops.is_empty() || o.ops.chars().any(|c| !"swra".contains(c)) {
                    return Err("--ops takes letters of swra".into());
                }
            }
            _ => return Err(format!("unknown argument {k}\n{USAGE}")),
        }
    }
    if o.rounds.is_none() && o.seconds.is_none() {
        o.rounds = Some(10);
    }
    Ok((role, o))
}

/// Octet `i` of the pattern of sequence number `seed`.
pub fn pattern(seed: u64, i: usize) -> u8 {
    let s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40;
    (s as u8) ^ (i as u8).wrapping_mul(31) ^ ((i >> 8) as u8)
}

/// `len` octets of the pattern of `seed`.
pub fn fill(seed: u64, len: usize) -> Vec<u8> {
    (0..len).map(|i| pattern(seed, i)).collect()
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

pub fn be64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_be_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// The client's connection request: the region size it needs.
pub fn request(size: usize, order: ConnectOrder) -> Vec<u8> {
    let mut v = REQ_MAGIC.to_be_bytes().to_vec();
    v.extend_from_slice(&(size as u32).to_be_bytes());
    v.extend_from_slice(&order.client.to_be_bytes());
    v.extend_from_slice(&order.seq.to_be_bytes());
    v
}

/// Which client process sent a connection request, and how many connects it
/// had made before this one: a client connects one after the other, so its
/// requests must reach the server in that order (what perftest's rdma_cm
/// mode relies on to pair its QPs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectOrder {
    pub client: u32,
    pub seq: u32,
}

impl ConnectOrder {
    /// This process's next connect.
    pub fn next() -> Self {
        static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        Self {
            client: std::process::id(),
            seq: SEQ.fetch_add(1, Ordering::Relaxed),
        }
    }
}

/// The region size a request asks for, and its place among its client's
/// connects.
pub fn parse_request(b: &[u8]) -> Option<(usize, ConnectOrder)> {
    if be32(b, 0)? != REQ_MAGIC {
        return None;
    }
    let order = ConnectOrder {
        client: be32(b, 8)?,
        seq: be32(b, 12)?,
    };
    Some((be32(b, 4)? as usize, order))
}

/// The server's accept: its region.
pub fn reply(addr: u64, rkey: u32, len: usize) -> Vec<u8> {
    let mut v = REP_MAGIC.to_be_bytes().to_vec();
    v.extend_from_slice(&addr.to_be_bytes());
    v.extend_from_slice(&rkey.to_be_bytes());
    v.extend_from_slice(&(len as u32).to_be_bytes());
    v
}

/// The region an accept describes: address, rkey, length.
pub fn parse_reply(b: &[u8]) -> Option<(u64, u32, usize)> {
    (be32(b, 0)? == REP_MAGIC).then_some((be64(b, 4)?, be32(b, 12)?, be32(b, 16)? as usize))
}

/// A Send: header, then `len` octets of the pattern of `seq`.
pub fn send_msg(seq: u64, len: usize) -> Vec<u8> {
    let mut v = SEND_MAGIC.to_be_bytes().to_vec();
    v.extend_from_slice(&seq.to_be_bytes());
    v.extend_from_slice(&(len as u32).to_be_bytes());
    v.extend_from_slice(&fill(seq, len));
    v
}

/// Checks a received Send of `got` octets: its sequence number if it is whole and
/// every octet is right.
pub fn check_send(b: &[u8]) -> Result<u64, String> {
    if be32(b, 0) != Some(SEND_MAGIC) {
        return Err("no Send header".into());
    }
    let seq = be64(b, 4).ok_or("short header")?;
    let len = be32(b, 12).ok_or("short header")? as usize;
    let body = b.get(SEND_HDR..).unwrap_or(&[]);
    if body.len() != len {
        return Err(format!(
            "seq {seq}: {} payload octets, header says {len}",
            body.len()
        ));
    }
    match body
        .iter()
        .enumerate()
        .find(|(i, x)| **x != pattern(seq, *i))
    {
        Some((i, x)) => Err(format!(
            "seq {seq}: octet {i} is {x:#04x}, want {:#04x}",
            pattern(seq, i)
        )),
        None => Ok(seq),
    }
}

/// The server's answer to Send `seq`: whether it was right.
pub fn ack(seq: u64, ok: bool) -> Vec<u8> {
    let mut v = ACK_MAGIC.to_be_bytes().to_vec();
    v.extend_from_slice(&seq.to_be_bytes());
    v.push(u8::from(ok));
    v
}

/// An answer: sequence number and verdict.
pub fn parse_ack(b: &[u8]) -> Option<(u64, bool)> {
    (be32(b, 0)? == ACK_MAGIC).then_some((be64(b, 4)?, *b.get(12)? == 1))
}

/// A work request id: connection slot, generation, kind, detail.
pub fn wr_id(slot: usize, gen: u32, kind: u8, detail: u8) -> u64 {
    ((slot as u64) << 40)
        | (u64::from(gen & 0xffff) << 16)
        | (u64::from(kind) << 8)
        | u64::from(detail)
}

/// The parts of a [`wr_id`].
pub fn wr_parts(id: u64) -> (usize, u32, u8, u8) {
    (
        (id >> 40) as usize,
        ((id >> 16) & 0xffff) as u32,
        (id >> 8) as u8,
        id as u8,
    )
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (role, o) = match parse(&args) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("rsiw-load: {e}");
            return ExitCode::from(2);
        }
    };
    catch_signals();
    let r = match role.as_str() {
        "server" => server::run(&o),
        "client" => client::run(&o),
        _ => Err(USAGE.into()),
    };
    match r {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("rsiw-load: {e}");
            ExitCode::from(2)
        }
    }
}
