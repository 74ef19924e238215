// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! `rsiw-rawpeer rst`: resets TCP connections from outside both endpoints, as a middlebox
//! or a rebooted peer would: a forged RST whose sequence number is the one the victim
//! expects next (RFC 793 §3.4; RFC 5961 §3.2 accepts exactly that one and answers any
//! other in the window with a challenge ACK). The number is learnt from the connection's
//! segments, sniffed on a packet socket: the acknowledgment number of the victim's own,
//! or where its peer's last one ends.

use std::collections::BTreeSet;
use std::io;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

/// One direction of a connection: source and destination address and port.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
struct Tuple {
    src: Ipv4Addr,
    sport: u16,
    dst: Ipv4Addr,
    dport: u16,
}

/// What a TCP segment (`pkt`, an IPv4 packet) of a connection on local port `port`
/// tells about that end's RCV.NXT: the connection as seen from that end (the victim)
/// and the value. A segment from the victim carries it as its acknowledgment number; a
/// segment to it ends at it (sequence number plus payload), which is the fresher of the
/// two while the peer is sending.
fn parse(pkt: &[u8], port: u16) -> Option<(Tuple, u32)> {
    let ihl = usize::from(pkt.first()? & 0x0f) * 4;
    if pkt.first()? >> 4 != 4 || *pkt.get(9)? != 6 || ihl < 20 {
        return None;
    }
    let ip = |at: usize| {
        Some(Ipv4Addr::new(
            *pkt.get(at)?,
            *pkt.get(at + 1)?,
            *pkt.get(at + 2)?,
            *pkt.get(at + 3)?,
        ))
    };
    let total = usize::from(u16::from_be_bytes([*pkt.get(2)?, *pkt.get(3)?]));
    let tcp = pkt.get(ihl..)?;
    let be16 = |at: usize| Some(u16::from_be_bytes([*tcp.get(at)?, *tcp.get(at + 1)?]));
    let be32 = |at: usize| Some(u32::from_be_bytes(tcp.get(at..at + 4)?.try_into().ok()?));
    let doff = usize::from(*tcp.get(12)? >> 4) * 4;
    let flags = *tcp.get(13)?;
    // Only segments that acknowledge (every one after the handshake) and neither
    // start nor end the connection.
    if flags & 0x10 == 0 || flags & 0x07 != 0 {
        return None;
    }
    let (src, sport, dst, dport) = (ip(12)?, be16(0)?, ip(16)?, be16(2)?);
    if sport == port {
        Some((
            Tuple {
                src,
                sport,
                dst,
                dport,
            },
            be32(8)?,
        ))
    } else if dport == port {
        let payload = total.checked_sub(ihl + doff)?;
        Some((
            Tuple {
                src: dst,
                sport: dport,
                dst: src,
                dport: sport,
            },
            be32(4)?.wrapping_add(payload as u32),
        ))
    } else {
        None
    }
}

fn csum(data: &[u8], start: u32) -> u16 {
    let mut sum = start;
    for c in data.chunks(2) {
        sum += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The RST `victim` (the sender of a segment acknowledging `ack`) accepts: from its peer,
/// sequence number `ack`.
fn rst_packet(victim: Tuple, ack: u32) -> Vec<u8> {
    let (src, dst) = (victim.dst.octets(), victim.src.octets());
    let mut tcp = Vec::with_capacity(20);
    tcp.extend_from_slice(&victim.dport.to_be_bytes());
    tcp.extend_from_slice(&victim.sport.to_be_bytes());
    tcp.extend_from_slice(&ack.to_be_bytes());
    tcp.extend_from_slice(&0u32.to_be_bytes());
    tcp.extend_from_slice(&[0x50, 0x04, 0, 0, 0, 0, 0, 0]);
    let mut pseudo = Vec::new();
    pseudo.extend_from_slice(&src);
    pseudo.extend_from_slice(&dst);
    pseudo.extend_from_slice(&[0, 6, 0, 20]);
    pseudo.extend_from_slice(&tcp);
    let c = csum(&pseudo, 0);
    tcp[16..18].copy_from_slice(&c.to_be_bytes());
    // IP header: the kernel fills in the checksum, the id and the total length.
    let mut v = vec![0x45, 0, 0, 40, 0, 0, 0x40, 0, 64, 6, 0, 0];
    v.extend_from_slice(&src);
    v.extend_from_slice(&dst);
    v.extend_from_slice(&tcp);
    v
}

/// Whether `t` (local `src:sport`, remote `dst:dport`) is still a connection in
/// `/proc/net/tcp` (one closed by a RST is gone from it).
fn alive(t: Tuple) -> bool {
    let hex = |a: Ipv4Addr, p: u16| format!("{:08X}:{:04X}", u32::from_le_bytes(a.octets()), p);
    let (l, r) = (hex(t.src, t.sport), hex(t.dst, t.dport));
    std::fs::read_to_string("/proc/net/tcp").is_ok_and(|s| {
        s.lines().skip(1).any(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            f.get(1) == Some(&l.as_str())
                && f.get(2) == Some(&r.as_str())
                && f.get(3) != Some(&"0A")
        })
    })
}

fn os<T: PartialOrd + Default>(rv: T, what: &str) -> Result<T, String> {
    if rv < T::default() {
        Err(format!("{what}: {}", io::Error::last_os_error()))
    } else {
        Ok(rv)
    }
}

/// Resets up to `count` connections whose local end has port `port`, within `secs`;
/// prints `reset N of M` (M the connections seen).
pub fn run(port: u16, count: usize, secs: u64) -> Result<(), String> {
    // SAFETY: plain socket calls; every descriptor is closed below.
    let sniff = os(
        unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_DGRAM,
                i32::from((libc::ETH_P_IP as u16).to_be()),
            )
        },
        "packet socket",
    )?;
    // SAFETY: as above.
    let raw = os(
        unsafe { libc::socket(libc::AF_INET, libc::SOCK_RAW, libc::IPPROTO_RAW) },
        "raw socket",
    )?;
    let tv = libc::timeval {
        tv_sec: 0,
        tv_usec: 100_000,
    };
    // SAFETY: `tv` is a valid timeval for the call.
    unsafe {
        libc::setsockopt(
            sniff,
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&tv as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        );
    }
    let end = Instant::now() + Duration::from_secs(secs);
    let mut seen = BTreeSet::new();
    let mut done = BTreeSet::new();
    let mut sent = 0u64;
    let mut buf = [0u8; 256];
    while Instant::now() < end && done.len() < count {
        // Under traffic the victim's RCV.NXT moves with every segment its peer sends,
        // and only the exact value resets it: read everything queued (the first read
        // waits up to 100 ms) and keep each victim's latest acknowledgment number.
        let mut latest: Vec<(Tuple, u32)> = Vec::new();
        let mut flags = 0;
        loop {
            // SAFETY: `buf` is writable for its length.
            let n = unsafe {
                libc::recv(
                    sniff,
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    flags | libc::MSG_TRUNC,
                )
            };
            flags = libc::MSG_DONTWAIT;
            let Ok(n) = usize::try_from(n) else { break };
            let Some((t, ack)) = parse(&buf[..n.min(buf.len())], port) else {
                continue;
            };
            // The first `count` connections seen are the victims.
            if done.contains(&t) || (!seen.contains(&t) && seen.len() >= count) {
                continue;
            }
            if seen.insert(t) {
                println!("victim {}:{} <- {}:{}", t.src, t.sport, t.dst, t.dport);
            }
            // The furthest value seen (sequence space wraps, RFC 793 §3.3).
            match latest.iter_mut().find(|(x, _)| *x == t) {
                Some(e) if (ack.wrapping_sub(e.1) as i32) > 0 => e.1 = ack,
                Some(_) => {}
                None => latest.push((t, ack)),
            }
        }
        for t in seen
            .iter()
            .copied()
            .filter(|t| !done.contains(t))
            .collect::<Vec<Tuple>>()
        {
            if !alive(t) {
                done.insert(t);
            }
        }
        for (t, ack) in latest {
            if done.contains(&t) {
                continue;
            }
            let p = rst_packet(t, ack);
            let to = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: 0,
                sin_addr: libc::in_addr {
                    s_addr: u32::from(t.src).to_be(),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: `p` and `to` are valid for the call.
            let rv = unsafe {
                libc::sendto(
                    raw,
                    p.as_ptr().cast(),
                    p.len(),
                    0,
                    (&to as *const libc::sockaddr_in).cast(),
                    std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
                )
            };
            if rv > 0 {
                sent += 1;
            }
        }
        // Let the victims act on them before the next try.
        std::thread::sleep(Duration::from_millis(2));
    }
    for t in seen
        .iter()
        .copied()
        .filter(|t| !done.contains(t))
        .collect::<Vec<Tuple>>()
    {
        if !alive(t) {
            done.insert(t);
        }
    }
    // SAFETY: closing our own descriptors once.
    unsafe {
        libc::close(sniff);
        libc::close(raw);
    }
    println!("reset {} of {} ({sent} RSTs sent)", done.len(), seen.len());
    Ok(())
}
