// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Host-side checks of packet captures a VM script prints on its console: Wireshark's
//! iWARP dissector (Debian's `tshark`) must name the RFC 7306 §5.2 Atomic Request on
//! DDP QN 1 and the Atomic Response on QN 3 (`rfc7306-atomics`), show FPDUs longer
//! than the EMSS only where both MPA ends offered them (`large-fpdus`, `rfc-fpdus`), or
//! decode RPC-over-RDMA with its chunks moved by RDMA Reads and Writes and its RFC 8797
//! CM private data in the MPA Request and Reply (`rpcordma-chunks`), or place MPA
//! Markers where rsiw's FPDU pointers say (`mpa-markers`, in `pcap_markers.rs`).
//!
//! Console protocol (see `qemu/tests/atomic-pcap-rsiw.sh`): the capture as base64 lines
//! `RSIW-PCAP NAME DATA`, then `RSIW-PCAP-END NAME BYTES CHECK`.

use anyhow::{bail, Context, Result};
use std::path::Path;
use std::process::Command;

/// One capture found on a console.
#[derive(Debug, PartialEq, Eq)]
pub struct Capture {
    /// The script's name for it.
    pub name: String,
    /// Which check to run on it.
    pub check: String,
    /// The pcap bytes.
    pub bytes: Vec<u8>,
}

fn b64_value(c: u8) -> Option<u32> {
    match c {
        b'A'..=b'Z' => Some(u32::from(c - b'A')),
        b'a'..=b'z' => Some(u32::from(c - b'a') + 26),
        b'0'..=b'9' => Some(u32::from(c - b'0') + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

/// Decodes standard base64 (padding optional, no whitespace inside).
pub fn base64_decode(s: &str) -> Result<Vec<u8>> {
    let s = s.trim_end_matches('=');
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in s.bytes() {
        let v = b64_value(c).with_context(|| format!("not base64: {:?}", char::from(c)))?;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Ok(out)
}

/// Every complete capture on `console`, in order; a capture whose size does not match
/// its end line (a console line was lost or garbled) is an error.
pub fn captures(console: &str) -> Result<Vec<Capture>> {
    let mut out = Vec::new();
    let mut data: Vec<(String, String)> = Vec::new();
    for line in console.lines() {
        if let Some(i) = line.find("RSIW-PCAP-END ") {
            let mut f = line[i + "RSIW-PCAP-END ".len()..].split_whitespace();
            let (Some(name), Some(size), Some(check)) = (f.next(), f.next(), f.next()) else {
                bail!("malformed end line: {line}");
            };
            let text: String = data
                .iter()
                .filter(|(n, _)| n == name)
                .map(|(_, d)| d.as_str())
                .collect();
            let bytes = base64_decode(&text).with_context(|| format!("capture {name}"))?;
            let want: usize = size.parse().with_context(|| format!("size in {line}"))?;
            if bytes.len() != want {
                bail!(
                    "capture {name}: {} bytes decoded, the VM sent {want} (console lines lost?)",
                    bytes.len()
                );
            }
            data.retain(|(n, _)| n != name);
            out.push(Capture {
                name: name.into(),
                check: check.into(),
                bytes,
            });
        } else if let Some(i) = line.find("RSIW-PCAP ") {
            let mut f = line[i + "RSIW-PCAP ".len()..].split_whitespace();
            if let (Some(name), Some(d)) = (f.next(), f.next()) {
                data.push((name.into(), d.into()));
            }
        }
    }
    Ok(out)
}

/// What tshark showed of one RDMAP message.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Rdmap {
    /// The DDP Queue Number, if untagged.
    pub qn: Option<u32>,
    /// Wireshark's name of the RDMAP opcode ("Atomic Request", …).
    pub opcode: String,
    /// Wireshark's name of the AOpCode (requests only).
    pub aopcode: Option<String>,
    /// Request Identifier (requests) or Original Request Identifier (responses).
    pub request_id: Option<u32>,
}

/// The fields `run_check` asks tshark for, one tab-separated column each.
const FIELDS: [&str; 5] = [
    "iwarp_ddp.qn",
    "iwarp_rdma.opcode",
    "iwarp_rdma.atomic.opcode",
    "iwarp_rdma.atomic.request_identifier",
    "iwarp_rdma.atomic.original_request_identifier",
];

/// The name of an RDMAP opcode (RFC 5040 §4.3, RFC 7306 §7.1), as Wireshark names it.
fn opcode_name(v: u32) -> String {
    match v {
        0x0 => "Write".into(),
        0x1 => "Read Request".into(),
        0x2 => "Read Response".into(),
        0x3..=0x6 => "Send".into(),
        0x7 => "Terminate".into(),
        0x8 | 0x9 => "Immediate Data".into(),
        0xa => "Atomic Request".into(),
        0xb => "Atomic Response".into(),
        v => format!("opcode {v:#x}"),
    }
}

/// The name of an RFC 7306 §5.2.1 AOpCode (draft-03's Swap is 1).
fn aopcode_name(v: u32) -> String {
    match v {
        0 => "FetchAdd".into(),
        1 => "Swap".into(),
        2 => "CmpSwap".into(),
        v => format!("AOpCode {v}"),
    }
}

/// A field value as tshark prints it: decimal or `0x…`.
fn number(v: &str) -> Option<u32> {
    let v = v.trim();
    match v.strip_prefix("0x") {
        Some(h) => u32::from_str_radix(h, 16).ok(),
        None => v.parse().ok(),
    }
}

/// Parses `tshark -T fields` output (the columns of [`FIELDS`]) into the RDMAP messages
/// it decoded, in order. A frame may carry several FPDUs: each column then lists its
/// occurrences comma-separated; every message has a QN and an opcode, only Atomic
/// Requests an AOpCode and a Request Identifier, only Atomic Responses an Original
/// Request Identifier, so each list is taken in order by the messages that have it.
pub fn parse_fields(text: &str) -> Vec<Rdmap> {
    let mut out = Vec::new();
    for line in text.lines() {
        let cols: Vec<Vec<&str>> = line
            .split('\t')
            .map(|c| c.split(',').filter(|v| !v.is_empty()).collect())
            .collect();
        let col = |i: usize| cols.get(i).cloned().unwrap_or_default();
        let (qns, ops) = (col(0), col(1));
        let mut aops = col(2).into_iter();
        let mut ids = col(3).into_iter();
        let mut orig = col(4).into_iter();
        for (i, op) in ops.iter().enumerate() {
            let Some(op) = number(op) else { continue };
            let mut m = Rdmap {
                qn: qns.get(i).and_then(|q| number(q)),
                opcode: opcode_name(op),
                ..Default::default()
            };
            match op {
                0xa => {
                    m.aopcode = aops.next().and_then(number).map(aopcode_name);
                    m.request_id = ids.next().and_then(number);
                }
                0xb => m.request_id = orig.next().and_then(number),
                _ => {}
            }
            out.push(m);
        }
    }
    out
}

/// RFC 7306 §5.2: FetchAdd and CmpSwap requests on QN 1, responses on QN 3, and every
/// response answers a request that was seen. `Ok` carries a one-line summary.
pub fn check_atomics(msgs: &[Rdmap]) -> Result<String> {
    let reqs: Vec<&Rdmap> = msgs
        .iter()
        .filter(|m| m.opcode == "Atomic Request")
        .collect();
    let resps: Vec<&Rdmap> = msgs
        .iter()
        .filter(|m| m.opcode == "Atomic Response")
        .collect();
    for a in ["FetchAdd", "CmpSwap"] {
        if !reqs.iter().any(|m| m.aopcode.as_deref() == Some(a)) {
            bail!(
                "no Atomic Request named {a} ({} requests decoded)",
                reqs.len()
            );
        }
    }
    if let Some(m) = reqs.iter().find(|m| m.qn != Some(1)) {
        bail!("an Atomic Request on QN {:?}, want 1", m.qn);
    }
    if resps.is_empty() {
        bail!("no Atomic Response decoded");
    }
    if let Some(m) = resps.iter().find(|m| m.qn != Some(3)) {
        bail!("an Atomic Response on QN {:?}, want 3", m.qn);
    }
    for r in &resps {
        if !reqs
            .iter()
            .any(|q| q.request_id.is_some() && q.request_id == r.request_id)
        {
            bail!(
                "an Atomic Response answers request {:?}, which is not in the capture",
                r.request_id
            );
        }
    }
    let n = |a: &str| {
        reqs.iter()
            .filter(|m| m.aopcode.as_deref() == Some(a))
            .count()
    };
    Ok(format!(
        "{} Atomic Requests on QN 1 ({} FetchAdd, {} CmpSwap), {} Atomic Responses on QN 3",
        reqs.len(),
        n("FetchAdd"),
        n("CmpSwap"),
        resps.len()
    ))
}

/// Decodes `pcap` with tshark (MPA found by Wireshark's heuristic on TCP) and runs `check`.
pub fn run_check(pcap: &Path, check: &str) -> Result<String> {
    match check {
        "rpcordma-chunks" => run_rpcordma(pcap),
        "mpa-markers" => {
            use crate::pcap_markers::{check_markers, count_markers, parse_pdml};
            check_markers(&count_markers(&parse_pdml(&tshark(pcap, &["-T", "pdml"])?)))
        }
        "rfc7306-atomics" => {
            let mut args = vec!["-Y", "iwarp_rdma", "-T", "fields"];
            for f in FIELDS {
                args.extend(["-e", f]);
            }
            check_atomics(&parse_fields(&tshark(pcap, &args)?))
        }
        "large-fpdus" | "rfc-fpdus" => {
            let mut args = vec!["-Y", "iwarp_mpa", "-T", "fields"];
            for f in [
                "iwarp_mpa.key.req",
                "iwarp_mpa.key.rep",
                "iwarp_mpa.res",
                "iwarp_mpa.ulpdulength",
            ] {
                args.extend(["-e", f]);
            }
            check_sizes(&parse_sizes(&tshark(pcap, &args)?), check == "large-fpdus")
        }
        _ => bail!("unknown capture check {check}"),
    }
}

/// `tshark -r PCAP --enable-heuristic iwarp_mpa_tcp ARGS…` (Wireshark finds MPA by its
/// heuristic on the MPA Request/Reply, so no port needs a decode-as); its stdout.
fn tshark(pcap: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(pcap)
        .args(["--enable-heuristic", "iwarp_mpa_tcp"])
        .args(args)
        .output()
        .context("running tshark (install Debian's tshark: `cargo xtask setup`)")?;
    if !out.status.success() {
        bail!(
            "tshark -r {} failed: {}",
            pcap.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The EMSS of a 1500-octet MTU without TCP options (RFC 5044 §4.1 bounds an FPDU by
/// it): a ULPDU longer than this less the length field and CRC is a large FPDU.
const EMSS_1500: u32 = 1460;
const RFC_MAX_ULPDU: u32 = EMSS_1500 - 2 - 4;
/// The MPA flag bits rsiw sets to offer large FPDUs and, in a Reply, to acknowledge
/// the offer (`rust/proto/src/mpa.rs`).
const LARGE_FPDU_FLAG: u32 = 0x08;
const LARGE_FPDU_ACK: u32 = 0x04;

/// What a capture shows of FPDU sizes: the reserved flag bits of the MPA Request and
/// Reply (tshark's `iwarp_mpa.res`) and every ULPDU_Length.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct FpduSizes {
    pub request_res: Vec<u32>,
    pub reply_res: Vec<u32>,
    pub ulpdu_lens: Vec<u32>,
}

/// Parses `tshark -T fields -e iwarp_mpa.key.req -e iwarp_mpa.key.rep -e iwarp_mpa.res
/// -e iwarp_mpa.ulpdulength` output.
pub fn parse_sizes(text: &str) -> FpduSizes {
    let mut s = FpduSizes::default();
    for line in text.lines() {
        let cols: Vec<&str> = line.split('\t').collect();
        let col = |i: usize| cols.get(i).copied().unwrap_or("");
        let res = col(2).split(',').filter_map(number);
        if !col(0).is_empty() {
            s.request_res.extend(res);
        } else if !col(1).is_empty() {
            s.reply_res.extend(res);
        }
        s.ulpdu_lens.extend(col(3).split(',').filter_map(number));
    }
    s
}

/// `large-fpdus`: the Request offered large FPDUs, the Reply acknowledged the offer, and
/// some FPDU is longer than the EMSS of a 1500-octet link allows. `rfc-fpdus`: the
/// Reply did not acknowledge (it may echo the offer, as siw does) and no FPDU is
/// longer. Either needs at least 8 FPDUs decoded, so that an empty decode fails.
pub fn check_sizes(s: &FpduSizes, large: bool) -> Result<String> {
    if s.ulpdu_lens.len() < 8 {
        bail!("only {} FPDUs decoded", s.ulpdu_lens.len());
    }
    let max = s.ulpdu_lens.iter().copied().max().unwrap_or(0);
    let over = s.ulpdu_lens.iter().filter(|&&l| l > RFC_MAX_ULPDU).count();
    let all = |v: &[u32], bit: u32| !v.is_empty() && v.iter().all(|r| r & bit != 0);
    let summary = format!(
        "{} FPDUs, largest ULPDU {max} octets, {over} over {RFC_MAX_ULPDU}; Request res {:?}, Reply res {:?}",
        s.ulpdu_lens.len(),
        s.request_res,
        s.reply_res
    );
    if large {
        if !all(&s.request_res, LARGE_FPDU_FLAG) || !all(&s.reply_res, LARGE_FPDU_ACK) {
            bail!(
                "no large-FPDU offer in the Request, or no acknowledgement in the Reply: {summary}"
            );
        }
        if over == 0 {
            bail!("no FPDU longer than the EMSS allows: {summary}");
        }
    } else {
        if s.reply_res.is_empty() || s.reply_res.iter().any(|r| r & LARGE_FPDU_ACK != 0) {
            bail!("the Reply acknowledges a large-FPDU offer (or was not decoded): {summary}");
        }
        if over > 0 {
            bail!("FPDUs longer than the EMSS allows: {summary}");
        }
    }
    Ok(summary)
}

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
fn run_rpcordma(pcap: &Path) -> Result<String> {
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

/// The results of every capture on a console, as `(case name, Err(why) or Ok(summary))`;
/// each pcap is saved next to the console log as `NAME.pcap`.
pub fn check_console(console: &str, log_dir: &Path) -> Vec<(String, Result<String>)> {
    let caps = match captures(console) {
        Ok(c) => c,
        Err(e) => return vec![("pcap: capture intact".into(), Err(e))],
    };
    caps.into_iter()
        .map(|c| {
            let file = log_dir.join(format!("{}.pcap", c.name));
            let r = std::fs::write(&file, &c.bytes)
                .with_context(|| format!("writing {}", file.display()))
                .and_then(|()| run_check(&file, &c.check));
            (format!("pcap {}: tshark decodes {}", c.name, c.check), r)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips_known_vectors() {
        assert_eq!(base64_decode("").unwrap(), b"");
        assert_eq!(base64_decode("Zg==").unwrap(), b"f");
        assert_eq!(base64_decode("Zm9vYmE=").unwrap(), b"fooba");
        assert_eq!(base64_decode("Zm9vYmFy").unwrap(), b"foobar");
        assert_eq!(base64_decode("/+8A").unwrap(), [0xff, 0xef, 0x00]);
        assert!(base64_decode("Zm9v!").is_err());
    }

    #[test]
    fn captures_are_reassembled_and_size_checked() {
        let console = "[ 1.0] noise\nRSIW-PCAP a Zm9v\nRSIW-PCAP b eA==\nRSIW-PCAP a YmFy\n\
                       RSIW-PCAP-END a 6 rfc7306-atomics\nRSIW-PCAP-END b 1 x\n";
        let c = captures(console).unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(
            (c[0].name.as_str(), c[0].bytes.as_slice()),
            ("a", &b"foobar"[..])
        );
        assert_eq!(c[0].check, "rfc7306-atomics");
        assert_eq!(c[1].bytes, b"x");
        let lost = "RSIW-PCAP a Zm9v\nRSIW-PCAP-END a 6 rfc7306-atomics\n";
        assert!(captures(lost)
            .unwrap_err()
            .to_string()
            .contains("3 bytes decoded"));
    }

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

    fn msg(qn: u32, op: &str, a: Option<&str>, id: u32) -> Rdmap {
        Rdmap {
            qn: Some(qn),
            opcode: op.into(),
            aopcode: a.map(String::from),
            request_id: Some(id),
        }
    }

    #[test]
    fn atomics_check_wants_both_opcodes_right_queues_and_matching_ids() {
        let good = vec![
            msg(1, "Atomic Request", Some("FetchAdd"), 7),
            msg(3, "Atomic Response", None, 7),
            msg(1, "Atomic Request", Some("CmpSwap"), 8),
            msg(3, "Atomic Response", None, 8),
        ];
        assert!(check_atomics(&good)
            .unwrap()
            .contains("1 FetchAdd, 1 CmpSwap"));
        let mut wrong_qn = good.clone();
        wrong_qn[1].qn = Some(1);
        assert!(check_atomics(&wrong_qn).is_err());
        let mut stray = good.clone();
        stray[3].request_id = Some(99);
        assert!(check_atomics(&stray).is_err());
        assert!(check_atomics(&good[..2]).is_err());
    }

    /// Debian 12 tshark 4.0's `-T fields` output of the [`FIELDS`]: an Atomic Request and
    /// its Response in frames of their own, then a frame with two Requests and a Send.
    const FIELDS_OUT: &str = "1\t0x0a\t0\t1\t\n3\t0x0b\t\t\t1\n1,1,0\t0x0a,0x0a,0x03\t2,0\t2,3\t\n";

    #[test]
    fn fields_give_opcode_names_queues_and_ids() {
        let m = parse_fields(FIELDS_OUT);
        assert_eq!(
            m,
            vec![
                msg(1, "Atomic Request", Some("FetchAdd"), 1),
                msg(3, "Atomic Response", None, 1),
                msg(1, "Atomic Request", Some("CmpSwap"), 2),
                msg(1, "Atomic Request", Some("FetchAdd"), 3),
                Rdmap {
                    qn: Some(0),
                    opcode: "Send".into(),
                    ..Default::default()
                },
            ]
        );
    }

    #[test]
    fn fpdu_size_checks_want_the_flag_both_ways_and_a_long_fpdu() {
        let text = "52:65\t\t0x18\t\n\t52:65\t0x1c\t\n\t\t\t1442,61468\n\t\t\t14,14,14,14,14,14\n";
        let s = parse_sizes(text);
        assert_eq!(s.request_res, [0x18]);
        assert_eq!(s.reply_res, [0x1c]);
        assert_eq!(s.ulpdu_lens.len(), 8);
        assert!(check_sizes(&s, true).is_ok());
        assert!(check_sizes(&s, false).is_err());
        // RFC sizes, the Reply without the acknowledgement (siw echoing the offer, or
        // rsiw with it off).
        let rfc = FpduSizes {
            request_res: vec![0x18],
            reply_res: vec![0x18],
            ulpdu_lens: vec![1442; 10],
        };
        assert!(check_sizes(&rfc, false).is_ok());
        assert!(check_sizes(&rfc, true).is_err());
        // Too little decoded proves nothing.
        let few = FpduSizes {
            ulpdu_lens: vec![1442; 3],
            ..rfc
        };
        assert!(check_sizes(&few, false).is_err());
    }
}
