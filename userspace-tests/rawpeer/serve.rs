// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! rsiw-rawpeer's responders for issue 45's hostile peers: `serve-guess` (a Read
//! through an STag guessed from one it was told) and `serve-sends` (a burst of small
//! Sends that reaches the receiver as one socket buffer of many fragments).

use super::{accept_one, drain, fpdu, hex, read_fpdu, untagged};
use std::io::Write;
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::time::Duration;

fn be32(b: &[u8]) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[..4]);
    u32::from_be_bytes(w)
}

fn be64(b: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[..8]);
    u64::from_be_bytes(w)
}

/// FPDUs until an untagged Send (the RTR Write and anything else are skipped);
/// returns its ULPDU.
fn wait_send(s: &mut TcpStream) -> Result<Vec<u8>, String> {
    loop {
        let u = read_fpdu(s).ok_or("the stream ended before a Send")?;
        let untagged = u.first().is_some_and(|c| c & 0x80 == 0);
        if untagged && u.get(1).is_some_and(|r| r & 0x0f == 0x3) && u.len() >= 18 {
            return Ok(u);
        }
    }
}

/// An RDMA Read Request (RFC 5040 §4.4) on QN 1 with `msn`: `size` octets from
/// `src_stag`/`src_to` into the sink `0x77` at 0.
fn read_request(msn: u32, size: u32, src_stag: u32, src_to: u64) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&0x77u32.to_be_bytes());
    body.extend_from_slice(&0u64.to_be_bytes());
    body.extend_from_slice(&size.to_be_bytes());
    body.extend_from_slice(&src_stag.to_be_bytes());
    body.extend_from_slice(&src_to.to_be_bytes());
    fpdu(&untagged(0x1, 1, msn, &body), None)
}

/// `serve-guess`: told an STag and the addresses of its region and of the region
/// registered after it (a Send: STag, TO, TO of the next), it Reads 16 octets through
/// the STag (the control), then through the STag the next registration had when keys
/// and indices counted up (STag + 0x101), at the next region's address. Prints `told
/// STAG TO NEXT_TO`, `read ok HEX` (or `read failed HEX`), `guess STAG got HEX` and
/// `end fin|rst|open`.
pub(super) fn serve_guess(addr: &str) -> Result<(), String> {
    let mut s = accept_one(addr)?;
    let m = wait_send(&mut s)?;
    let body = m
        .get(18..38)
        .ok_or("the Send carries fewer than 20 octets")?;
    let (stag, to, next_to) = (be32(body), be64(&body[4..]), be64(&body[12..]));
    println!("told {stag:#x} {to:#x} {next_to:#x}");
    s.write_all(&read_request(1, 16, stag, to))
        .map_err(|e| e.to_string())?;
    let r = read_fpdu(&mut s).ok_or("no answer to the control Read")?;
    // A tagged segment with RDMAP opcode Read Response, 14 header octets.
    let ok = r.first().is_some_and(|c| c & 0x80 != 0) && r.get(1).is_some_and(|o| o & 0xf == 2);
    println!(
        "read {} {}",
        if ok { "ok" } else { "failed" },
        hex(r.get(14..).unwrap_or(&r))
    );
    let guess = stag.wrapping_add(0x101);
    s.write_all(&read_request(2, 16, guess, next_to))
        .map_err(|e| e.to_string())?;
    let (got, end) = drain(&mut s, Duration::from_secs(5));
    println!("guess {guess:#x} got {}", hex(&got));
    println!("end {end}");
    Ok(())
}

/// Sends in the first page of a `serve-sends` burst: with one more on each page
/// after it, the first eight fragments of the socket buffer carry more Sends than
/// the receiver's queue of deferred completions holds (16).
const FIRST_PAGE_SENDS: usize = 12;
const PAGE: usize = 4096;

/// `serve-sends COUNT`: after the initiator's Send (its receives are posted), COUNT
/// Sends of 8 octets (octet `i` each, MSN 1 on), FIRST_PAGE_SENDS on one page of
/// memory and one on each page after, spliced from those pages into the socket at
/// once (vmsplice, then splice): TCP builds a socket buffer with one fragment per
/// page. Prints `sent COUNT Sends on PAGES pages`, `got HEX`, `end fin|rst|open`.
pub(super) fn serve_sends(addr: &str, count: usize) -> Result<(), String> {
    let mut s = accept_one(addr)?;
    wait_send(&mut s)?;
    let sends: Vec<Vec<u8>> = (0..count)
        .map(|i| fpdu(&untagged(0x3, 0, i as u32 + 1, &[i as u8; 8]), None))
        .collect();
    let groups: Vec<&[Vec<u8>]> = {
        let (first, rest) = sends.split_at(FIRST_PAGE_SENDS.min(count));
        std::iter::once(first).chain(rest.chunks(1)).collect()
    };
    // One page per group, page-aligned, each group at the start of its page.
    let mut mem = vec![0u8; (groups.len() + 1) * PAGE];
    let base = mem.as_ptr() as usize;
    let first = (PAGE - base % PAGE) % PAGE;
    let mut iov = Vec::new();
    for (i, g) in groups.iter().enumerate() {
        let at = first + i * PAGE;
        let bytes: Vec<u8> = g.concat();
        if bytes.len() > PAGE {
            return Err("a group does not fit its page".into());
        }
        mem[at..at + bytes.len()].copy_from_slice(&bytes);
        iov.push((at, bytes.len()));
    }
    let iovecs: Vec<libc::iovec> = iov
        .iter()
        .map(|&(at, len)| libc::iovec {
            iov_base: mem[at..].as_mut_ptr().cast(),
            iov_len: len,
        })
        .collect();
    let total: usize = iov.iter().map(|&(_, l)| l).sum();
    let mut fds = [0i32; 2];
    // SAFETY: `fds` has room for the two descriptors pipe(2) writes.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(format!("pipe: {}", std::io::Error::last_os_error()));
    }
    // Room for every page in the pipe at once (16 buffers by default).
    // SAFETY: fcntl on the pipe's write end, which this function owns.
    unsafe { libc::fcntl(fds[1], libc::F_SETPIPE_SZ, (2 * groups.len() * PAGE) as i32) };
    // SAFETY: `iovecs` point into `mem`, which outlives the splice below (the
    // pages are referenced by the pipe, then by the socket's buffers, and stay
    // allocated while this function runs and drains the stream).
    let n = unsafe { libc::vmsplice(fds[1], iovecs.as_ptr(), iovecs.len(), 0) };
    if n < 0 || n as usize != total {
        return Err(format!(
            "vmsplice: {n} of {total}: {}",
            std::io::Error::last_os_error()
        ));
    }
    let mut left = total;
    while left > 0 {
        // SAFETY: splice between two descriptors this function holds.
        let n = unsafe {
            libc::splice(
                fds[0],
                std::ptr::null_mut(),
                s.as_raw_fd(),
                std::ptr::null_mut(),
                left,
                0,
            )
        };
        if n <= 0 {
            return Err(format!("splice: {}", std::io::Error::last_os_error()));
        }
        left -= n as usize;
    }
    // SAFETY: both ends were opened above and are not used after.
    unsafe {
        libc::close(fds[0]);
        libc::close(fds[1]);
    }
    println!("sent {count} Sends on {} pages", groups.len());
    let (got, end) = drain(&mut s, Duration::from_secs(5));
    println!("got {}", hex(&got));
    println!("end {end}");
    drop(mem);
    Ok(())
}
