// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The `mpa-markers` capture check: MPA Markers (RFC 5044 §4.3) as Wireshark finds
//! them. Wireshark places Markers by TCP sequence number (every 512 octets of the
//! stream after the MPA frames), independently of rsiw; each Marker's FPDUPTR must then
//! be the distance from the Marker back to the ULPDU_Length of its FPDU, and a Marker
//! at an FPDU boundary (in front of an FPDU, or last in a segment, before the next
//! FPDU) points at the FPDU it precedes with 0.
//!
//! The positions come from `tshark -T pdml` (each field's `pos`, `size` and `show`
//! attributes), the only output that gives where in a packet a field sits.
//! Wireshark's MPA dissector assumes one FPDU per TCP segment: its CRC verdict is
//! wrong for an FPDU whose leading Marker went out at the end of the segment before
//! (rsiw writes FPDUs back to back into one TCP stream, which RFC 5044 allows when
//! Markers are in use), so the CRC is not judged here; rsiw's receiver checks it.
//!
//! The dissector can also lose the framing altogether: in the initiator's direction it
//! decodes neither the RTR nor the Send that share the first segment after the MPA
//! Request, and takes the Send's CRC for the next ULPDU_Length, so that (depending on
//! those four octets) it reassembles a "FPDU" of tens of KiB from the rest of the
//! stream and reads every 512th octet of it as a Marker (a CI run of 2026-11-29: a
//! ULPDU_Length of 48,432 with RDMAP opcode 13 and 95 "wrong" Markers, in a capture
//! whose 194 Markers all point right when walked from the MPA frames on). A
//! connection with Markers carries RFC 5044 FPDUs only, none longer than a TCP
//! segment (§4.1, MULPDU from the EMSS); an FPDU the dissector decodes as longer than
//! the largest TCP segment of the capture is one it misframed: it is counted apart
//! (`misframed`) and its Markers are not judged.

use anyhow::{bail, Result};

/// One field of a PDML packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub name: String,
    pub pos: usize,
    pub size: usize,
    pub show: String,
}

fn attr(line: &str, key: &str) -> Option<String> {
    let at = line.find(&format!(" {key}=\""))? + key.len() + 3;
    let end = line[at..].find('"')?;
    Some(line[at..at + end].to_string())
}

/// The packets of `tshark -T pdml` output, each as its fields in document order.
pub fn parse_pdml(text: &str) -> Vec<Vec<Field>> {
    let mut out: Vec<Vec<Field>> = Vec::new();
    for line in text.lines() {
        let l = line.trim_start();
        if l.starts_with("<packet>") {
            out.push(Vec::new());
        } else if l.starts_with("<field ") {
            let (Some(name), Some(cur)) = (attr(l, "name"), out.last_mut()) else {
                continue;
            };
            cur.push(Field {
                name,
                pos: attr(l, "pos").and_then(|v| v.parse().ok()).unwrap_or(0),
                size: attr(l, "size").and_then(|v| v.parse().ok()).unwrap_or(0),
                show: attr(l, "show").unwrap_or_default(),
            });
        }
    }
    out
}

fn flag_set(show: &str) -> bool {
    matches!(show, "1" | "True" | "true")
}

/// What [`check_markers`] counted.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct MarkerCounts {
    /// The Request's and the Reply's M bit (None: that frame was not decoded).
    pub request_m: Option<bool>,
    pub reply_m: Option<bool>,
    /// FPDUs with at least one Marker inside them checked.
    pub fpdus: usize,
    /// Markers whose FPDUPTR was checked.
    pub markers: usize,
    /// RDMAP messages decoded (the DDP/RDMAP headers behind the Markers).
    pub rdmap: usize,
    /// Markers whose FPDUPTR is wrong, as `frame: why`.
    pub wrong: Vec<String>,
    /// FPDUs the dissector decoded as longer than the capture's largest TCP segment
    /// (it lost the framing there), as `frame (ULPDU_Length)`; not judged.
    pub misframed: Vec<String>,
}

/// Counts and checks the Markers of every decoded FPDU in `packets`.
pub fn count_markers(packets: &[Vec<Field>]) -> MarkerCounts {
    let mut c = MarkerCounts::default();
    let max_segment = packets
        .iter()
        .flatten()
        .filter(|f| f.name == "tcp.len")
        .filter_map(|f| f.show.parse::<usize>().ok())
        .max()
        .unwrap_or(0);
    for p in packets {
        let frame = p
            .iter()
            .find(|f| f.name == "frame.number")
            .map_or("?", |f| f.show.as_str());
        let has = |n: &str| p.iter().any(|f| f.name == n);
        let m = p
            .iter()
            .find(|f| f.name == "iwarp_mpa.marker_flag")
            .map(|f| flag_set(&f.show));
        if has("iwarp_mpa.key.req") {
            c.request_m = m;
        }
        if has("iwarp_mpa.key.rep") {
            c.reply_m = m;
        }
        c.rdmap += p.iter().filter(|f| f.name == "iwarp_rdma.opcode").count();
        let Some(len) = p.iter().find(|f| f.name == "iwarp_mpa.ulpdulength") else {
            continue;
        };
        if len.show.parse::<usize>().map_or(true, |l| l > max_segment) {
            c.misframed.push(format!("frame {frame} ({})", len.show));
            continue;
        }
        // The FPDU's octets in this packet end where the dissected MPA payload ends.
        let end = p
            .iter()
            .find(|f| f.name == "iwarp_mpa.markers")
            .map(|f| f.pos + f.size)
            .unwrap_or(usize::MAX);
        let mut inside = 0;
        let mut it = p.iter().peekable();
        while let Some(f) = it.next() {
            if f.name != "iwarp_mpa.marker_res" {
                continue;
            }
            let Some(ptr) = it.peek().filter(|g| g.name == "iwarp_mpa.marker_fpduptr") else {
                c.wrong
                    .push(format!("frame {frame}: a Marker without FPDUPTR"));
                continue;
            };
            let v: usize = ptr.show.parse().unwrap_or(usize::MAX);
            c.markers += 1;
            let at = f.pos;
            let ok = if at + 4 == len.pos {
                // In front of the FPDU.
                v == 0
            } else if at + 4 == end && v == 0 {
                // Last in the segment, in front of the next FPDU.
                true
            } else {
                inside += 1;
                at > len.pos && v == at - len.pos
            };
            if !ok {
                c.wrong.push(format!(
                    "frame {frame}: Marker at {at} has FPDUPTR {v}, its FPDU starts at {}",
                    len.pos
                ));
            }
        }
        if inside > 0 {
            c.fpdus += 1;
        }
    }
    c
}

/// `mpa-markers`: both MPA frames ask for Markers, at least 16 FPDUs carry Markers
/// inside them, every FPDUPTR is right, and RDMAP is decoded behind them.
pub fn check_markers(c: &MarkerCounts) -> Result<String> {
    let summary = format!(
        "Request M {:?}, Reply M {:?}; {} Markers checked in {} FPDUs; {} RDMAP messages decoded{}",
        c.request_m,
        c.reply_m,
        c.markers,
        c.fpdus,
        c.rdmap,
        if c.misframed.is_empty() {
            String::new()
        } else {
            format!(
                "; {} FPDUs misframed by the dissector, not judged: {}",
                c.misframed.len(),
                c.misframed.join(", ")
            )
        }
    );
    if c.request_m != Some(true) || c.reply_m != Some(true) {
        bail!("the MPA Request and Reply do not both ask for Markers: {summary}");
    }
    if let Some(w) = c.wrong.first() {
        bail!("{} Markers wrong, first: {w}; {summary}", c.wrong.len());
    }
    if c.fpdus < 16 || c.rdmap < 8 {
        bail!("too little decoded: {summary}");
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(name: &str, pos: usize, size: usize, show: &str) -> String {
        format!("  <field name=\"{name}\" showname=\"x: &quot;y&quot;\" size=\"{size}\" pos=\"{pos}\" show=\"{show}\" value=\"00\"/>\n")
    }

    fn fpdu(frame: u32, markers: &[(usize, usize)]) -> String {
        let mut s = String::from("<packet>\n");
        s += &field("frame.number", 0, 0, &frame.to_string());
        s += &field("tcp.len", 46, 1, "1448");
        s += &field("iwarp_mpa.ulpdulength", 66, 2, "1430");
        s += &field("iwarp_mpa.markers", 66, 1448, "");
        for &(pos, ptr) in markers {
            s += &field("iwarp_mpa.marker_res", pos, 2, "0x0000");
            s += &field("iwarp_mpa.marker_fpduptr", pos + 2, 2, &ptr.to_string());
        }
        s += &field("iwarp_rdma.opcode", 70, 1, "0x02");
        s + "</packet>\n"
    }

    fn frames(m: &str) -> String {
        let mut s = String::from("<packet>\n");
        s += &field("iwarp_mpa.key.req", 66, 16, "x");
        s += &field("iwarp_mpa.marker_flag", 82, 1, m);
        s += "</packet>\n<packet>\n";
        s += &field("iwarp_mpa.key.rep", 66, 16, "x");
        s += &field("iwarp_mpa.marker_flag", 82, 1, m);
        s + "</packet>\n"
    }

    #[test]
    fn right_pointers_pass_and_a_wrong_one_fails() {
        let mut good = frames("1");
        for i in 0..16 {
            // Inside, then one at the segment's end in front of the next FPDU.
            good += &fpdu(i, &[(486, 420), (998, 932), (1510, 0)]);
        }
        let c = count_markers(&parse_pdml(&good));
        assert_eq!(c.fpdus, 16);
        assert_eq!(c.markers, 48);
        check_markers(&c).unwrap();

        let bad = good.clone() + &fpdu(99, &[(486, 421)]);
        let e = check_markers(&count_markers(&parse_pdml(&bad))).unwrap_err();
        assert!(e.to_string().contains("frame 99"), "{e}");

        // A leading Marker must point at its FPDU with 0.
        let lead = good.clone() + &fpdu(98, &[(62, 4)]);
        assert!(check_markers(&count_markers(&parse_pdml(&lead))).is_err());
    }

    #[test]
    fn an_fpdu_longer_than_any_segment_is_misframed_not_judged() {
        let mut s = frames("1");
        for i in 0..16 {
            s += &fpdu(i, &[(486, 420)]);
        }
        // The dissector's reassembly from a CRC read as ULPDU_Length 48432.
        let bogus = fpdu(108, &[(452, 448), (964, 960)]).replace("show=\"1430\"", "show=\"48432\"");
        let c = count_markers(&parse_pdml(&(s.clone() + &bogus)));
        assert_eq!(c.misframed, ["frame 108 (48432)"]);
        let ok = check_markers(&c).unwrap();
        assert!(ok.contains("1 FPDUs misframed"), "{ok}");
        // Within the segment size, the same wrong pointers are judged.
        let judged = fpdu(108, &[(452, 448)]);
        assert!(check_markers(&count_markers(&parse_pdml(&(s + &judged)))).is_err());
    }

    #[test]
    fn no_m_bit_or_too_few_fpdus_fail() {
        let mut s = frames("0");
        for i in 0..16 {
            s += &fpdu(i, &[(486, 420)]);
        }
        assert!(check_markers(&count_markers(&parse_pdml(&s))).is_err());
        let few = frames("1") + &fpdu(1, &[(486, 420)]);
        assert!(check_markers(&count_markers(&parse_pdml(&few))).is_err());
    }
}
