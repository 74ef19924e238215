// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Host-side checks of packet captures a VM script prints on its console: Wireshark's
//! iWARP dissector (Debian's `tshark`) must name the RFC 7306 §5.2 Atomic Request on
//! DDP QN 1 and the Atomic Response on QN 3 (`rfc7306-atomics`), show FPDUs longer
//! than the EMSS only where both MPA ends offered them (`large-fpdus`, `rfc-fpdus`), or
//! decode RPC-over-RDMA with its chunks moved by RDMA Reads and Writes and its RFC 8797
//! CM private data in the MPA Request and Reply (`rpcordma-chunks`, in
//! `pcap_rpcordma.rs`), or place MPA Markers where rsiw's FPDU pointers say
//! (`mpa-markers`, in `pcap_markers.rs`).
//!
//! Console protocol (see `qemu/tests/atomic-pcap-rsiw.sh`): the capture as base64 lines
//! `RSIW-PCAP NAME DATA`, then `RSIW-PCAP-END NAME BYTES CHECK`.

use anyhow::{bail, Context, Result};
use base64::engine::general_purpose::STANDARD_PAD_INDIFFERENT;
use base64::Engine;
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
            let bytes = STANDARD_PAD_INDIFFERENT
                .decode(&text)
                .with_context(|| format!("capture {name}"))?;
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
        "rpcordma-chunks" => crate::pcap_rpcordma::run(pcap),
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
pub fn tshark(pcap: &Path, args: &[&str]) -> Result<String> {
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
        let garbled = "RSIW-PCAP a Zm9v!\nRSIW-PCAP-END a 3 x\n";
        let e = format!("{:#}", captures(garbled).unwrap_err());
        assert!(e.contains("capture a: Invalid symbol"), "{e}");
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
