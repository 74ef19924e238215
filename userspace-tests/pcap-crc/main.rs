// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! rsiw-pcap-crc: recomputes the MPA CRC of every FPDU in a packet capture.
//!
//! For every TCP connection to or from PORT in a pcap file (Ethernet, IPv4), the octets
//! each end sent are reassembled by sequence number, its MPA Request or Reply is
//! skipped (RFC 5044 §7.1: 16 key octets, flags, revision, private data length,
//! private data) and the FPDUs after it are walked (RFC 5044 §4.1: ULPDU_Length, the
//! ULPDU, PAD to a multiple of four, CRC; no Markers), the CRC32c of each recomputed
//! (RFC 5044 §4.4: over ULPDU_Length, ULPDU and PAD).
//!
//! It is an independent reading of the wire, for telling whether a CRC error that a
//! receiver reported was in the octets as sent (the sender's error) or not (the
//! receiver's): it shares no code with rsiw's protocol core, so a mistake there is not
//! repeated here. A VM script runs it on the capture of a run that failed.

use std::collections::BTreeMap;
use std::process::ExitCode;

const USAGE: &str = "usage: rsiw-pcap-crc PCAP PORT
  For each direction of each TCP connection with PORT at one end: one line with its
  octets, the MPA frame it began with and how many FPDUs had a wrong CRC, and one line
  per such FPDU (its offset in the stream, ULPDU_Length, the CRC field, the CRC of its
  octets, the packets it came in). An FPDU whose CRC field is zero is not counted
  (CRC not negotiated). Exit status 1 if a wrong CRC was found, 2 if nothing could be
  walked.";

/// The reflected CRC32c table (polynomial 0x1EDC6F41, reversed 0x82F63B78).
fn crc_table() -> [u32; 256] {
    let mut t = [0u32; 256];
    for (i, e) in t.iter_mut().enumerate() {
        let mut c = i as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0x82F6_3B78
            } else {
                c >> 1
            };
        }
        *e = c;
    }
    t
}

/// CRC32c of `data` (initial value and final XOR all ones), as MPA sends it.
fn crc32c(t: &[u32; 256], data: &[u8]) -> u32 {
    !data.iter().fold(!0u32, |c, &b| {
        t[((c ^ u32::from(b)) & 0xff) as usize] ^ (c >> 8)
    })
}

/// An IPv4 address and a TCP port.
type Endpoint = ([u8; 4], u16);

/// One direction of a connection: the sender's ISN (from its SYN, if captured) and its
/// segments with payload.
#[derive(Default)]
struct Direction<'a> {
    isn: Option<u32>,
    segs: Vec<&'a Packet>,
}

/// One TCP segment with payload, or a SYN.
struct Packet {
    /// Its number in the capture, from 1.
    n: usize,
    src: Endpoint,
    dst: Endpoint,
    seq: u32,
    syn: bool,
    payload: Vec<u8>,
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn le32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// The IPv4 TCP packets of a little-endian pcap file with Ethernet frames.
fn packets(d: &[u8]) -> Result<Vec<Packet>, String> {
    match le32(d, 0) {
        Some(0xA1B2_C3D4 | 0xA1B2_3C4D) => {}
        _ => return Err("not a little-endian pcap file".into()),
    }
    if le32(d, 20) != Some(1) {
        return Err("not an Ethernet capture".into());
    }
    let mut out = Vec::new();
    let (mut off, mut n) = (24usize, 0usize);
    while let (Some(incl), Some(orig)) = (le32(d, off + 8), le32(d, off + 12)) {
        let (incl, orig) = (incl as usize, orig as usize);
        let Some(frame) = d.get(off + 16..off + 16 + incl) else {
            println!("packet {}: cut short by the end of the file", n + 1);
            break;
        };
        off += 16 + incl;
        n += 1;
        if incl != orig {
            println!("packet {n}: {incl} of {orig} octets captured");
        }
        if let Some(p) = tcp(n, frame) {
            out.push(p);
        }
    }
    Ok(out)
}

/// The TCP segment in an Ethernet frame, if it carries IPv4 and TCP.
fn tcp(n: usize, frame: &[u8]) -> Option<Packet> {
    if be16(frame, 12)? != 0x0800 {
        return None;
    }
    let ip = frame.get(14..)?;
    if *ip.get(9)? != 6 {
        return None;
    }
    let ihl = usize::from(ip.first()? & 15) * 4;
    let total = usize::from(be16(ip, 2)?);
    let seg = ip.get(ihl..total.min(ip.len()))?;
    let doff = usize::from(seg.get(12)? >> 4) * 4;
    let addr = |at: usize| -> Option<[u8; 4]> { ip.get(at..at + 4)?.try_into().ok() };
    Some(Packet {
        n,
        src: (addr(12)?, be16(seg, 0)?),
        dst: (addr(16)?, be16(seg, 2)?),
        seq: be32(seg, 4)?,
        syn: seg.get(13)? & 2 != 0,
        payload: seg.get(doff..)?.to_vec(),
    })
}

/// The octets one end sent from its ISN on, up to the first octet the capture lacks,
/// with the stream range each packet added: `(start, end, packet number)`.
fn reassemble(name: &str, isn: u32, segs: &[&Packet]) -> (Vec<u8>, Vec<(usize, usize, usize)>) {
    let base = isn.wrapping_add(1);
    let mut by_off: Vec<(usize, &Packet)> = segs
        .iter()
        .map(|p| (p.seq.wrapping_sub(base) as usize, *p))
        .collect();
    by_off.sort_by_key(|&(o, p)| (o, p.n));
    let (mut buf, mut pieces) = (Vec::new(), Vec::new());
    for (o, p) in by_off {
        let end = buf.len();
        if o > end {
            println!(
                "{name}: the capture lacks octets {end}..{o} (packet {} starts at {o})",
                p.n
            );
            break;
        }
        let overlap = (end - o).min(p.payload.len());
        if buf.get(o..o + overlap) != p.payload.get(..overlap) {
            println!(
                "{name}: packet {} sends octets {o}.. again with other content",
                p.n
            );
        }
        if o + p.payload.len() > end {
            buf.extend_from_slice(&p.payload[end - o..]);
            pieces.push((end, o + p.payload.len(), p.n));
        }
    }
    (buf, pieces)
}

/// Walks the FPDUs after the MPA frame at the start of `buf`; returns how many had a
/// wrong CRC, or `None` if `buf` does not start with an MPA Request or Reply.
fn walk(t: &[u32; 256], name: &str, buf: &[u8], pieces: &[(usize, usize, usize)]) -> Option<usize> {
    let kind = match buf.get(..16)? {
        b"MPA ID Req Frame" => "Request",
        b"MPA ID Rep Frame" => "Reply",
        _ => return None,
    };
    let flags = *buf.get(16)?;
    let mut off = 20 + usize::from(be16(buf, 18)?);
    let (mut count, mut bad) = (0usize, 0usize);
    while let Some(ulpdu_len) = be16(buf, off) {
        let covered = 2 + usize::from(ulpdu_len);
        let end = off + covered.next_multiple_of(4) + 4;
        let (Some(octets), Some(field)) = (buf.get(off..end - 4), le32(buf, end - 4)) else {
            break;
        };
        count += 1;
        let crc = crc32c(t, octets);
        if field != 0 && field != crc {
            bad += 1;
            let pk: Vec<usize> = pieces
                .iter()
                .filter(|&&(a, b, _)| a < end && b > off)
                .map(|&(_, _, n)| n)
                .collect();
            let hdr: String = buf
                .get(off + 2..(off + 20).min(end))
                .unwrap_or(&[])
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            println!(
                "{name}: FPDU {count} at octet {off}, ULPDU_Length {ulpdu_len}: CRC field {field:08x}, CRC of its octets {crc:08x}; packets {pk:?}; DDP/RDMAP header {hdr}"
            );
        }
        off = end;
    }
    println!(
        "{name}: {} octets, MPA {kind} flags {flags:#04x}, {count} FPDUs, {bad} with a wrong CRC",
        buf.len()
    );
    Some(bad)
}

fn addr(a: Endpoint) -> String {
    format!("{}.{}.{}.{}:{}", a.0[0], a.0[1], a.0[2], a.0[3], a.1)
}

/// Checks every stream to or from `port`; `(streams walked, FPDUs with a wrong CRC)`.
fn check(d: &[u8], port: u16) -> Result<(usize, usize), String> {
    let t = crc_table();
    let pkts = packets(d)?;
    let mut streams: BTreeMap<(Endpoint, Endpoint), Direction> = BTreeMap::new();
    for p in pkts.iter().filter(|p| p.src.1 == port || p.dst.1 == port) {
        let s = streams.entry((p.src, p.dst)).or_default();
        if p.syn {
            s.isn = Some(p.seq);
        } else if !p.payload.is_empty() {
            s.segs.push(p);
        }
    }
    if streams.is_empty() {
        println!("no TCP connection with port {port} at one end in the capture");
    }
    let (mut walked, mut bad) = (0, 0);
    for ((src, dst), Direction { isn, segs }) in &streams {
        let name = format!("{} -> {}", addr(*src), addr(*dst));
        let Some(isn) = isn else {
            println!("{name}: its SYN is not in the capture");
            continue;
        };
        let (buf, pieces) = reassemble(&name, *isn, segs);
        match walk(&t, &name, &buf, &pieces) {
            Some(b) => {
                walked += 1;
                bad += b;
            }
            None => println!("{name}: does not start with an MPA Request or Reply"),
        }
    }
    Ok((walked, bad))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (Some(path), Some(Ok(port)), 3) = (
        args.get(1),
        args.get(2).map(|p| p.parse::<u16>()),
        args.len(),
    ) else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let data = match std::fs::read(path) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("rsiw-pcap-crc: {path}: {e}");
            return ExitCode::from(2);
        }
    };
    match check(&data, port) {
        Err(e) => {
            eprintln!("rsiw-pcap-crc: {path}: {e}");
            ExitCode::from(2)
        }
        Ok((0, _)) => ExitCode::from(2),
        Ok((_, 0)) => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_check_value() {
        // The CRC-32C check value (RFC 3720 §B.4 and every CRC catalogue).
        assert_eq!(crc32c(&crc_table(), b"123456789"), 0xE306_9283);
    }

    /// A pcap file holding `pkts` (src port, dst port, seq, flags, payload) as
    /// Ethernet/IPv4/TCP frames between two fixed addresses.
    fn pcap(pkts: &[(u16, u16, u32, u8, Vec<u8>)]) -> Vec<u8> {
        let mut d = Vec::new();
        // Magic, version 2.4 (two u16s), zone, accuracy, snap length, Ethernet.
        for v in [0xA1B2_C3D4u32, 0x0004_0002, 0, 0, 65535, 1] {
            d.extend_from_slice(&v.to_le_bytes());
        }
        for (sp, dp, seq, flags, payload) in pkts {
            let mut f = vec![0u8; 14];
            f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
            let total = 20 + 20 + payload.len();
            let mut ip = vec![
                0x45, 0, 0, 0, 0, 0, 0, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
            ];
            ip[2..4].copy_from_slice(&(total as u16).to_be_bytes());
            f.extend_from_slice(&ip);
            let mut t = vec![0u8; 20];
            t[0..2].copy_from_slice(&sp.to_be_bytes());
            t[2..4].copy_from_slice(&dp.to_be_bytes());
            t[4..8].copy_from_slice(&seq.to_be_bytes());
            t[12] = 5 << 4;
            t[13] = *flags;
            f.extend_from_slice(&t);
            f.extend_from_slice(payload);
            for v in [0u32, 0, f.len() as u32, f.len() as u32] {
                d.extend_from_slice(&v.to_le_bytes());
            }
            d.extend_from_slice(&f);
        }
        d
    }

    /// An MPA Request with no private data, then FPDUs of the given ULPDU lengths.
    fn stream(ulpdus: &[usize]) -> Vec<u8> {
        let t = crc_table();
        let mut s = b"MPA ID Req Frame".to_vec();
        s.extend_from_slice(&[0x40, 1, 0, 0]);
        for (i, &len) in ulpdus.iter().enumerate() {
            let mut f = (len as u16).to_be_bytes().to_vec();
            f.extend((0..len).map(|j| (i * 7 + j) as u8));
            f.resize((2 + len).next_multiple_of(4), 0);
            let crc = crc32c(&t, &f);
            f.extend_from_slice(&crc.to_le_bytes());
            s.extend_from_slice(&f);
        }
        s
    }

    /// The stream cut into packets of `mss` octets after a SYN with ISN 1000.
    fn capture(s: &[u8], mss: usize) -> Vec<u8> {
        let mut pkts = vec![(40000, 7000, 1000, 2, Vec::new())];
        for (i, c) in s.chunks(mss).enumerate() {
            pkts.push((40000, 7000, 1001 + (i * mss) as u32, 0x18, c.to_vec()));
        }
        pcap(&pkts)
    }

    #[test]
    fn good_crcs_pass_whatever_the_segmentation() {
        let s = stream(&[0, 1, 2, 3, 18, 1000, 9000]);
        for mss in [1, 3, 100, 1448, 9000] {
            assert_eq!(check(&capture(&s, mss), 7000), Ok((1, 0)), "mss {mss}");
        }
    }

    #[test]
    fn a_flipped_payload_bit_is_found() {
        let mut s = stream(&[100, 200, 300]);
        s[20 + 104 + 50] ^= 0x10;
        assert_eq!(check(&capture(&s, 64), 7000), Ok((1, 1)));
    }

    #[test]
    fn retransmissions_and_reordering_are_reassembled() {
        let s = stream(&[500, 700]);
        let mut pkts = vec![(40000, 7000, 1000, 2, Vec::new())];
        let chunks: Vec<_> = s.chunks(300).enumerate().collect();
        for &(i, c) in chunks.iter().rev() {
            pkts.push((40000, 7000, 1001 + (i * 300) as u32, 0x18, c.to_vec()));
        }
        // A retransmission overlapping two segments, with the same octets.
        pkts.push((40000, 7000, 1001 + 150, 0x18, s[150..450].to_vec()));
        assert_eq!(check(&pcap(&pkts), 7000), Ok((1, 0)));
    }

    #[test]
    fn other_ports_and_non_mpa_streams_are_not_walked() {
        let s = stream(&[10]);
        assert_eq!(check(&capture(&s, 100), 7001), Ok((0, 0)));
        assert_eq!(
            check(&capture(b"GET / HTTP/1.0\r\n\r\n", 100), 7000),
            Ok((0, 0))
        );
        assert!(check(b"not a capture at all, not at all", 7000).is_err());
    }
}
