// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The `rpcordma-chunks` capture check: RPC-over-RDMA (RFC 8166) on an iWARP capture,
//! as Wireshark's `rpcordma` dissector decodes it from rsiw's RDMAP/DDP/MPA: the
//! chunks moved by RDMA Reads and Writes, and the RFC 8797 CM private data in the MPA
//! Request and Reply.

use crate::pcap::tshark;
use anyhow::{bail, Context, Result};
use std::path::Path;

/// `tshark -T fields` output for FILTER: `|` between fields, `,` between occurrences.
fn tshark_fields(pcap: &Path, filter: &str, fields: &[&str]) -> Result<String> {
    let mut args = vec![
        "-Y",
        filter,
        "-T",
        "fields",
        "-E",
        "separator=|",
        "-E",
        "occurrence=a",
        "-E",
        "aggregator=,",
    ];
    for f in fields {
        args.extend(["-e", f]);
    }
    tshark(pcap, &args)
}

/// The `rpcordma-chunks` check: RPC-over-RDMA (RFC 8166) on an iWARP capture, as
/// Wireshark's `rpcordma` dissector decodes it from rsiw's RDMAP/DDP/MPA.
pub fn run(pcap: &Path) -> Result<String> {
    let msgs = tshark_fields(
        pcap,
        "rpcordma",
        &[
            "frame.number",
            "ip.src",
            "rpcordma.xid",
            "rpcordma.msg_type",
            "rpcordma.reads_count",
            "rpcordma.writes_count",
            "rpcordma.reply_count",
            "rpcordma.rdma_handle",
        ],
    )?;
    let rdmap = tshark_fields(
        pcap,
        "iwarp_rdma",
        &[
            "frame.number",
            "ip.src",
            "iwarp_rdma.opcode",
            "iwarp_ddp.stag",
            "iwarp_rdma.srcstag",
            "iwarp_rdma.inval_stag",
        ],
    )?;
    let mpa = tshark_fields(
        pcap,
        "iwarp_mpa.pdlength",
        &["frame.number", "ip.src", "iwarp_mpa.privatedata"],
    )?;
    let cm = check_cm_private(&mpa, requester_of(&msgs))?;
    Ok(format!("{cm}; {}", check_rpcordma(&msgs, &rdmap)?))
}

/// The source of the first RPC-over-RDMA message (the requester), if any.
fn requester_of(msgs: &str) -> Option<String> {
    parse_rpcordma(msgs).first().map(|m| m.src.clone())
}

/// RFC 8797 §4 in the MPA Request and Reply: after MPA v2's IRD/ORD (RFC 6581 §5,
/// 4 octets), the RPC-over-RDMA CM private data, Format Identifier 0xf6ab0e18,
/// Version 1, then the flags and the Max Send / Max Receive Size octets
/// ((value + 1) KiB). Both sides must send it, or the inline threshold falls back to
/// 1 KiB.
pub fn check_cm_private(mpa: &str, requester: Option<String>) -> Result<String> {
    let Some(requester) = requester else {
        bail!("no RPC-over-RDMA message, so no requester to find the MPA Request of");
    };
    let mut sides = Vec::new();
    for (who, want_req) in [("Request", true), ("Reply", false)] {
        let pd = mpa
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split('|').collect();
                match f.as_slice() {
                    [_, src, pd] if (*src == requester) == want_req => Some(pd.to_string()),
                    _ => None,
                }
            })
            .next()
            .with_context(|| format!("no MPA {who} with private data in the capture"))?;
        let ulp = pd.get(8..).unwrap_or("");
        if !ulp.starts_with("f6ab0e1801") || ulp.len() < 16 {
            bail!("the MPA {who}'s private data {pd} carries no RFC 8797 version 1 message after MPA's IRD/ORD");
        }
        let kib = |i: usize| {
            ulp.get(i..i + 2)
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .map_or(0, |v| v + 1)
        };
        sides.push(format!("{who} send/receive {}/{} KiB", kib(12), kib(14)));
    }
    Ok(format!(
        "RFC 8797 CM private data in the MPA {}",
        sides.join(", ")
    ))
}

/// One RPC-over-RDMA header as `run_rpcordma` reads it.
#[derive(Debug, Default)]
pub struct RpcRdmaMsg {
    pub src: String,
    pub xid: u32,
    pub msg_type: u32,
    pub reads: u32,
    pub writes: u32,
    pub reply: u32,
    pub handles: Vec<u32>,
}

/// The RDMAP messages of one frame (a frame can carry several): source, opcodes
/// (RFC 5040 §4.3) and the STags they name.
#[derive(Debug, Default)]
pub struct RdmapFrame {
    pub src: String,
    pub opcodes: Vec<u32>,
    /// DDP tagged Data Sink STags (Write, Read Response segments).
    pub sinks: Vec<u32>,
    /// Read Requests' Data Source STags.
    pub sources: Vec<u32>,
    /// Sends with Invalidate's STags.
    pub invals: Vec<u32>,
}

/// A number tshark printed in decimal or `0x` hex (first occurrence).
fn tnum(s: &str) -> Option<u32> {
    let s = s.split(',').next()?.trim();
    match s.strip_prefix("0x") {
        Some(h) => u32::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// Every occurrence of a number field.
fn tnums(s: &str) -> Vec<u32> {
    s.split(',').filter_map(tnum).collect()
}

pub fn parse_rpcordma(text: &str) -> Vec<RpcRdmaMsg> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('|').collect();
            let [_, src, xid, ty, rd, wr, rp, h] = f.as_slice() else {
                return None;
            };
            Some(RpcRdmaMsg {
                src: src.to_string(),
                xid: tnum(xid)?,
                msg_type: tnum(ty)?,
                reads: tnum(rd).unwrap_or(0),
                writes: tnum(wr).unwrap_or(0),
                reply: tnum(rp).unwrap_or(0),
                handles: tnums(h),
            })
        })
        .collect()
}

pub fn parse_rdmap(text: &str) -> Vec<RdmapFrame> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('|').collect();
            let [_, src, op, sink, source, inval] = f.as_slice() else {
                return None;
            };
            Some(RdmapFrame {
                src: src.to_string(),
                opcodes: tnums(op),
                sinks: tnums(sink),
                sources: tnums(source),
                invals: tnums(inval),
            })
        })
        .collect()
}

/// RFC 8166 on the wire: the requester (who sent the first RPC-over-RDMA message) sent
/// calls with a Read list, with a Write list and with a Reply chunk (RFC 8166 §3.4); the
/// responder pulled each Read chunk with RDMA Read Requests naming its handle as the
/// Data Source STag, and pushed Write and Reply chunk data with RDMA Writes whose DDP
/// Data Sink STag is a handle the requester advertised (§3.4.5, §3.4.6); every reply's
/// XID is a call's (§4.1); no RDMA_ERROR (type 4). Sends with Invalidate, if any, name
/// an advertised handle.
pub fn check_rpcordma(msgs: &str, rdmap: &str) -> Result<String> {
    let msgs = parse_rpcordma(msgs);
    let rdmap = parse_rdmap(rdmap);
    let Some(requester) = msgs.first().map(|m| m.src.clone()) else {
        bail!("tshark decoded no RPC-over-RDMA message");
    };
    let (calls, replies): (Vec<&RpcRdmaMsg>, Vec<&RpcRdmaMsg>) =
        msgs.iter().partition(|m| m.src == requester);
    if replies.is_empty() {
        bail!("{} calls decoded, no reply from the responder", calls.len());
    }
    if let Some(m) = msgs.iter().find(|m| m.msg_type == 4) {
        bail!("an RDMA_ERROR message (XID {:#010x})", m.xid);
    }
    for r in &replies {
        if !calls.iter().any(|c| c.xid == r.xid) {
            bail!(
                "a reply with XID {:#010x} answers no call in the capture",
                r.xid
            );
        }
    }
    let with = |f: fn(&RpcRdmaMsg) -> u32| -> Vec<&&RpcRdmaMsg> {
        calls.iter().filter(|c| f(c) > 0).collect()
    };
    let (reads, writes, reply) = (with(|m| m.reads), with(|m| m.writes), with(|m| m.reply));
    for (what, v) in [
        ("Read list", &reads),
        ("Write list", &writes),
        ("Reply chunk", &reply),
    ] {
        if v.is_empty() {
            bail!("no call with a {what} ({} calls decoded)", calls.len());
        }
    }
    // The responder's frames carrying an opcode (RFC 5040 §4.3: 0 RDMA Write, 1 RDMA
    // Read Request, 4/6 Send with Invalidate (with SE)).
    let responder = |ops: &[u32]| -> Vec<&RdmapFrame> {
        rdmap
            .iter()
            .filter(|f| f.src != requester && f.opcodes.iter().any(|o| ops.contains(o)))
            .collect()
    };
    let read_reqs: Vec<u32> = responder(&[1])
        .iter()
        .flat_map(|f| f.sources.iter().copied())
        .collect();
    // The responder sends no Read Response: its tagged segments are RDMA Writes.
    let write_sinks: Vec<u32> = responder(&[0])
        .iter()
        .flat_map(|f| f.sinks.iter().copied())
        .collect();
    let pulled = reads
        .iter()
        .flat_map(|c| c.handles.iter())
        .filter(|h| read_reqs.contains(h))
        .count();
    if pulled == 0 {
        bail!(
            "no RDMA Read Request from the responder names a Read chunk handle ({} Read Requests)",
            read_reqs.len()
        );
    }
    let pushed = writes
        .iter()
        .chain(reply.iter())
        .flat_map(|c| c.handles.iter())
        .filter(|h| write_sinks.contains(h))
        .count();
    if pushed == 0 {
        bail!(
            "no RDMA Write from the responder targets a Write or Reply chunk handle ({} Write segments)",
            write_sinks.len()
        );
    }
    let advertised: Vec<u32> = calls
        .iter()
        .flat_map(|c| c.handles.iter().copied())
        .collect();
    let invs: Vec<u32> = responder(&[4, 6])
        .iter()
        .flat_map(|f| f.invals.iter().copied())
        .collect();
    if let Some(i) = invs.iter().find(|i| !advertised.contains(i)) {
        bail!("a Send with Invalidate names STag {i:#010x}, which no call advertised");
    }
    if let Some(s) = write_sinks.iter().find(|s| !advertised.contains(s)) {
        bail!("an RDMA Write from the responder targets STag {s:#010x}, which no call advertised");
    }
    Ok(format!(
        "{} calls, {} replies (XIDs matched), {} with a Read list, {} with a Write list, \
         {} with a Reply chunk; {} RDMA Read Requests named Read chunk handles, {} RDMA \
         Write segments went to advertised handles; {} Sends with Invalidate of advertised \
         handles",
        calls.len(),
        replies.len(),
        reads.len(),
        writes.len(),
        reply.len(),
        read_reqs.len(),
        write_sinks.len(),
        invs.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    // Lines as tshark printed them for a capture of nfs-fsx-rsiw-pair.sh (abridged).
    const RPCORDMA: &str = "14|10.0.9.2|0x7c39e9de|0|0|0|1|0x00000404\n\
        16|10.0.9.1|0x7c39e9de|1|0|0|1|0x00000404\n\
        72|10.0.9.2|0x9339e9de|0|1|0|0|0x00000203\n\
        74|10.0.9.1|0x9339e9de|0|0|0|0|\n\
        100|10.0.9.2|0x9539e9de|0|0|1|0|0x00000909\n\
        102|10.0.9.1|0x9539e9de|0|0|0|0|\n";
    const RDMAP: &str = "8|10.0.9.2|0x00|0x00000000||\n\
        16|10.0.9.1|0x00,0x04|0x00000404||1028\n\
        73|10.0.9.1|0x01||0x00000203|\n\
        75|10.0.9.2|0x02|0x00000202||\n\
        101|10.0.9.1|0x00,0x04|0x00000909||2313\n";

    #[test]
    fn cm_private_data_is_found_after_the_mpa_ird_ord() {
        let mpa = "4|10.0.9.2|8080c000f6ab0e1801010303\n6|10.0.9.1|80008080f6ab0e1801000303\n";
        let ok = check_cm_private(mpa, Some("10.0.9.2".into())).unwrap();
        assert!(ok.contains("Request send/receive 4/4 KiB"), "{ok}");
        let no_reply = "4|10.0.9.2|8080c000f6ab0e1801010303\n6|10.0.9.1|80008080\n";
        assert!(check_cm_private(no_reply, Some("10.0.9.2".into())).is_err());
        assert!(check_cm_private(mpa, None).is_err());
    }

    #[test]
    fn rpcordma_check_matches_chunks_to_rdma_operations() {
        let ok = check_rpcordma(RPCORDMA, RDMAP).unwrap();
        assert!(ok.starts_with("3 calls, 3 replies"), "{ok}");
        // No Read Request for the Read chunk.
        let no_read = RDMAP.replace("73|10.0.9.1|0x01||0x00000203|", "73|10.0.9.1|0x03|||");
        assert!(check_rpcordma(RPCORDMA, &no_read)
            .unwrap_err()
            .to_string()
            .contains("Read chunk handle"));
        // A Write to a handle nobody advertised.
        let stray = format!("{RDMAP}120|10.0.9.1|0x00|0x00000777||\n");
        assert!(check_rpcordma(RPCORDMA, &stray).is_err());
        // A Send with Invalidate of an STag no call advertised.
        let inv = RDMAP.replace("||2313", "||4096");
        assert!(check_rpcordma(RPCORDMA, &inv).is_err());
        // A reply to no call.
        let orphan = format!("{RPCORDMA}130|10.0.9.1|0x12345678|0|0|0|0|\n");
        assert!(check_rpcordma(&orphan, RDMAP).is_err());
        // No call with a Reply chunk.
        let no_reply: String = RPCORDMA
            .lines()
            .filter(|l| !l.starts_with("1"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert!(check_rpcordma(&no_reply, RDMAP).is_err());
    }
}
