// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Malformed streams, each mapped to the Terminate layer/type/code the RFCs require:
//! MPA (RFC 5044 §8), DDP (RFC 5041 §7.2), RDMAP (RFC 5040 §7, RFC 7306 §8).

mod common;

use common::{fpdu, frame1, run_with, Ev, Recorder};
use rsiw_proto::crc::{crc32c_finish, Crc32c, SoftCrc32c, CRC32C_INIT};
use rsiw_proto::rdmap::Opcode;
use rsiw_proto::rx::{HeaderInfo, RxConfig, RxError};
use rsiw_proto::terminate::{self, TermCause as C};
use rsiw_proto::tx::{TxConfig, TxMessage};

const RX: RxConfig = common::RX_CRC;
const RX_MARKERS: RxConfig = RxConfig {
    crc: true,
    markers: true,
    max_ulpdu: u16::MAX,
};

/// An untagged ULPDU: control, RDMAP control, RsvdULP word, QN, MSN, MO, body.
fn un(ctrl: u8, ulp: u8, word: u32, qn: u32, msn: u32, mo: u32, body: &[u8]) -> Vec<u8> {
    let mut v = vec![ctrl, ulp];
    for w in [word, qn, msn, mo] {
        v.extend_from_slice(&w.to_be_bytes());
    }
    v.extend_from_slice(body);
    v
}

/// A tagged ULPDU: control, RDMAP control, STag, TO, body.
fn tg(ctrl: u8, ulp: u8, stag: u32, to: u64, body: &[u8]) -> Vec<u8> {
    let mut v = vec![ctrl, ulp];
    v.extend_from_slice(&stag.to_be_bytes());
    v.extend_from_slice(&to.to_be_bytes());
    v.extend_from_slice(body);
    v
}

/// A Send (L=1, QN 0) with `msn`/`mo` and a body.
fn send(msn: u32, mo: u32, body: &[u8]) -> Vec<u8> {
    un(0x41, 0x43, 0, 0, msn, mo, body)
}

/// A Read Request body: sink 1/0, `size`, source 2/`src_to`.
fn rr_body(size: u32, src_to: u64) -> Vec<u8> {
    let mut v = vec![0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0];
    v.extend_from_slice(&size.to_be_bytes());
    v.extend_from_slice(&[0, 0, 0, 2]);
    v.extend_from_slice(&src_to.to_be_bytes());
    v
}

fn ok(u: &[u8]) -> Vec<u8> {
    fpdu(u, true)
}

fn cat(parts: &[Vec<u8>]) -> Vec<u8> {
    parts.concat()
}

fn flip(mut s: Vec<u8>, at: usize) -> Vec<u8> {
    s[at] ^= 0x01;
    s
}

/// Re-seals a single marker-free FPDU after its bytes were edited.
fn reseal(mut s: Vec<u8>) -> Vec<u8> {
    let n = s.len() - 4;
    let c = crc32c_finish(SoftCrc32c.update(CRC32C_INIT, &s[..n]));
    s[n..].copy_from_slice(&c.to_le_bytes());
    s
}

fn reject_stag(h: &HeaderInfo) -> Result<(), C> {
    if h.opcode.tagged() {
        Err(C::DDP_INVALID_STAG)
    } else {
        Ok(())
    }
}
fn reject_bounds(_: &HeaderInfo) -> Result<(), C> {
    Err(C::DDP_BASE_BOUNDS)
}
fn reject_no_buffer(_: &HeaderInfo) -> Result<(), C> {
    Err(C::DDP_MSN_NO_BUFFER)
}
fn reject_access(h: &HeaderInfo) -> Result<(), C> {
    if h.opcode == Opcode::ReadRequest {
        Err(C::RDMAP_ACCESS_RIGHTS)
    } else {
        Ok(())
    }
}
fn reject_too_long(h: &HeaderInfo) -> Result<(), C> {
    if h.payload_len > 64 {
        Err(C::DDP_MESSAGE_TOO_LONG)
    } else {
        Ok(())
    }
}
fn reject_misaligned(_: &HeaderInfo) -> Result<(), C> {
    Err(C::RDMAP_CATASTROPHIC_STREAM)
}

/// A module-side header check, as `RxSink::header` would run it.
type HeaderCheck = fn(&HeaderInfo) -> Result<(), C>;

struct Case {
    name: &'static str,
    cfg: RxConfig,
    stream: Vec<u8>,
    on_header: Option<HeaderCheck>,
    cause: C,
    /// Segments that complete before the error.
    good: usize,
    /// Whether the Terminate goes to the peer (not when it answers a Terminate).
    reply: bool,
}

fn case(name: &'static str, stream: Vec<u8>, cause: C) -> Case {
    Case {
        name,
        cfg: RX,
        stream,
        on_header: None,
        cause,
        good: 0,
        reply: true,
    }
}

/// A received Terminate that is itself in error: it ends the stream and is never
/// answered with another Terminate (RFC 5040 §7.2).
fn bad_terminate(name: &'static str, stream: Vec<u8>, cause: C) -> Case {
    Case {
        reply: false,
        ..case(name, stream, cause)
    }
}

fn marker_stream() -> Vec<u8> {
    let cfg = TxConfig {
        crc: true,
        markers: true,
        mulpdu: 1442,
    };
    frame1(cfg, &TxMessage::send(Opcode::Send, 1, 0, 1000), &[9; 1000])
}

fn cases() -> Vec<Case> {
    let atomic_req = [0u8; 52];
    let seg1 = ok(&un(0x01, 0x43, 0, 0, 1, 0, &[1, 2, 3, 4]));
    let mut v = vec![
        // MPA (RFC 5044 §8)
        case(
            "crc field flipped",
            flip(ok(&send(1, 0, b"abc")), 24),
            C::MPA_CRC,
        ),
        case(
            "payload octet flipped",
            flip(ok(&send(1, 0, b"abc")), 21),
            C::MPA_CRC,
        ),
        case(
            "pad octet flipped",
            flip(ok(&send(1, 0, b"abc")), 23),
            C::MPA_CRC,
        ),
        // RFC 5041 §7.1: a refused header is reported at once, before its CRC.
        case(
            "bad DDP version reported before a bad CRC",
            flip(flip(ok(&send(1, 0, b"")), 2), 21),
            C::DDP_UNTAGGED_VERSION,
        ),
        case(
            "invalid QN reported before a bad CRC",
            flip(ok(&un(0x41, 0x43, 0, 9, 1, 0, b"")), 21),
            C::DDP_INVALID_QN,
        ),
        // DDP version (RFC 5041 §7.2)
        case(
            "untagged DV 0",
            ok(&un(0x40, 0x43, 0, 0, 1, 0, b"x")),
            C::DDP_UNTAGGED_VERSION,
        ),
        case(
            "untagged DV 2",
            ok(&un(0x42, 0x43, 0, 0, 1, 0, b"x")),
            C::DDP_UNTAGGED_VERSION,
        ),
        case(
            "tagged DV 0",
            ok(&tg(0xc0, 0x40, 1, 0, b"x")),
            C::DDP_TAGGED_VERSION,
        ),
        case(
            "tagged DV 3",
            ok(&tg(0xc3, 0x40, 1, 0, b"x")),
            C::DDP_TAGGED_VERSION,
        ),
        // RDMAP version and opcodes (RFC 5040 §7.2, RFC 7306 §8.2)
        case(
            "RV 0",
            ok(&send(1, 0, b"x")
                .iter()
                .enumerate()
                .map(|(i, &b)| if i == 1 { 0x03 } else { b })
                .collect::<Vec<_>>()),
            C::RDMAP_VERSION,
        ),
        case(
            "RV 2",
            ok(&un(0x41, 0x83, 0, 0, 1, 0, b"x")),
            C::RDMAP_VERSION,
        ),
        case(
            "RV 3 on a Write",
            ok(&tg(0xc1, 0xc0, 1, 0, b"x")),
            C::RDMAP_VERSION,
        ),
        case(
            "unknown opcode 0xC",
            ok(&un(0x41, 0x4c, 0, 0, 1, 0, b"x")),
            C::RDMAP_UNEXPECTED_OPCODE,
        ),
        case(
            "unknown opcode 0xF tagged",
            ok(&tg(0xc1, 0x4f, 1, 0, b"x")),
            C::RDMAP_UNEXPECTED_OPCODE,
        ),
        case(
            "Write with T=0",
            ok(&un(0x41, 0x40, 0, 0, 1, 0, b"x")),
            C::RDMAP_UNEXPECTED_OPCODE,
        ),
        case(
            "Read Response with T=0",
            ok(&un(0x41, 0x42, 0, 0, 1, 0, b"x")),
            C::RDMAP_UNEXPECTED_OPCODE,
        ),
        case(
            "Send with T=1",
            ok(&tg(0xc1, 0x43, 1, 0, b"x")),
            C::RDMAP_UNEXPECTED_OPCODE,
        ),
        case(
            "Read Request with T=1",
            ok(&tg(0xc1, 0x41, 1, 0, &rr_body(4, 0))),
            C::RDMAP_UNEXPECTED_OPCODE,
        ),
        case(
            "Atomic Request with T=1",
            ok(&tg(0xc1, 0x4a, 1, 0, &atomic_req)),
            C::RDMAP_UNEXPECTED_OPCODE,
        ),
        // Impossible lengths: the length field frames no DDP segment (RFC 5044 §8).
        case("ULPDU_Length 0", ok(&[]), C::MPA_FRAMING),
        case("ULPDU of one octet", ok(&[0x41]), C::MPA_FRAMING),
        case(
            "untagged header cut at 10",
            ok(&send(1, 0, b"")[..10]),
            C::MPA_FRAMING,
        ),
        case(
            "untagged header cut at 17",
            ok(&send(1, 0, b"")[..17]),
            C::MPA_FRAMING,
        ),
        case(
            "tagged header cut at 13",
            ok(&tg(0xc1, 0x40, 1, 0, b"")[..13]),
            C::MPA_FRAMING,
        ),
        bad_terminate(
            "Terminate header cut at 2",
            ok(&un(0x41, 0x47, 0, 2, 1, 0, b"")[..2]),
            C::MPA_FRAMING,
        ),
        Case {
            cfg: RxConfig {
                max_ulpdu: 64,
                ..RX
            },
            ..case(
                "ULPDU over the limit",
                ok(&send(1, 0, &[0; 100])),
                C::MPA_FRAMING,
            )
        },
        // Queues (RFC 5040 §5.1, RFC 7306 §5.2)
        case(
            "Send on QN 1",
            ok(&un(0x41, 0x43, 0, 1, 1, 0, b"x")),
            C::DDP_INVALID_QN,
        ),
        case(
            "Send on QN 7",
            ok(&un(0x41, 0x43, 0, 7, 1, 0, b"x")),
            C::DDP_INVALID_QN,
        ),
        case(
            "Read Request on QN 0",
            ok(&un(0x41, 0x41, 0, 0, 1, 0, &rr_body(4, 0))),
            C::DDP_INVALID_QN,
        ),
        case(
            "Atomic Request on QN 3",
            ok(&un(0x41, 0x4a, 0, 3, 1, 0, &atomic_req)),
            C::DDP_INVALID_QN,
        ),
        case(
            "Atomic Response on QN 1",
            ok(&un(0x41, 0x4b, 0, 1, 1, 0, &[0; 12])),
            C::DDP_INVALID_QN,
        ),
        // A Terminate travels on QN 2 (RFC 5040 §5.1): on another queue it is not a
        // Terminate but a segment DDP refuses (RFC 5041 §7.2, Invalid QN), answered.
        case(
            "Terminate on QN 0",
            ok(&un(0x41, 0x47, 0, 0, 1, 0, &[0x20, 2, 0, 0])),
            C::DDP_INVALID_QN,
        ),
        case(
            "Terminate on QN 0, not last, MSN 9",
            ok(&un(0x01, 0x47, 0, 0, 9, 0, &[0x20, 2, 0, 0])),
            C::DDP_INVALID_QN,
        ),
        // Cut before its QN: the header cannot say where it goes; not answered.
        bad_terminate(
            "Terminate header cut at 9",
            ok(&un(0x41, 0x47, 0, 2, 1, 0, b"")[..9]),
            C::MPA_FRAMING,
        ),
        case(
            "Immediate Data on QN 1",
            ok(&un(0x41, 0x48, 0, 1, 1, 0, &[0; 8])),
            C::DDP_INVALID_QN,
        ),
        // Sequence and offsets (RFC 5041 §5.3, §7.2)
        case("Send MSN 0", ok(&send(0, 0, b"x")), C::DDP_MSN_RANGE),
        case("Send MSN 2 first", ok(&send(2, 0, b"x")), C::DDP_MSN_RANGE),
        case(
            "Read Request MSN 5",
            ok(&un(0x41, 0x41, 0, 1, 5, 0, &rr_body(4, 0))),
            C::DDP_MSN_RANGE,
        ),
        case(
            "first segment MO 4",
            ok(&send(1, 4, b"x")),
            C::DDP_INVALID_MO,
        ),
        Case {
            good: 1,
            ..case(
                "second segment MO gap",
                cat(&[seg1.clone(), ok(&send(1, 8, b"x"))]),
                C::DDP_INVALID_MO,
            )
        },
        Case {
            good: 1,
            ..case(
                "second segment MO repeats",
                cat(&[seg1.clone(), ok(&send(1, 0, b"x"))]),
                C::DDP_INVALID_MO,
            )
        },
        Case {
            good: 1,
            ..case(
                "second segment MSN 2",
                cat(&[seg1.clone(), ok(&send(2, 4, b"x"))]),
                C::DDP_MSN_RANGE,
            )
        },
        Case {
            good: 1,
            ..case(
                "Send continued as Send with SE",
                cat(&[seg1.clone(), ok(&un(0x41, 0x45, 0, 0, 1, 4, b"x"))]),
                C::RDMAP_UNEXPECTED_OPCODE,
            )
        },
        Case {
            good: 1,
            ..case(
                "Send continued as Immediate",
                cat(&[seg1.clone(), ok(&un(0x41, 0x48, 0, 0, 1, 4, &[0; 8]))]),
                C::RDMAP_UNEXPECTED_OPCODE,
            )
        },
        Case {
            good: 1,
            ..case(
                "MSN replayed after a message",
                cat(&[ok(&send(1, 0, b"a")), ok(&send(1, 0, b"b"))]),
                C::DDP_MSN_RANGE,
            )
        },
        // Header-only messages (RFC 5040 §4.4/§4.8, RFC 7306 §5.2/§6)
        case(
            "Read Request with trailing octets",
            ok(&un(
                0x41,
                0x41,
                0,
                1,
                1,
                0,
                &[rr_body(4, 0), vec![0; 4]].concat(),
            )),
            C::DDP_MESSAGE_TOO_LONG,
        ),
        case(
            "Read Request cut short",
            ok(&un(0x41, 0x41, 0, 1, 1, 0, &rr_body(4, 0)[..20])),
            C::RDMAP_UNSPECIFIED,
        ),
        case(
            "Read Request not last",
            ok(&un(0x01, 0x41, 0, 1, 1, 0, &rr_body(4, 0))),
            C::RDMAP_UNSPECIFIED,
        ),
        case(
            "Read Request source TO wraps",
            ok(&un(0x41, 0x41, 0, 1, 1, 0, &rr_body(4, u64::MAX - 2))),
            C::RDMAP_TO_WRAP,
        ),
        case(
            "Immediate Data of 7 octets",
            ok(&un(0x41, 0x48, 0, 0, 1, 0, &[0; 7])),
            C::RDMAP_UNSPECIFIED,
        ),
        case(
            "Immediate Data of 9 octets",
            ok(&un(0x41, 0x48, 0, 0, 1, 0, &[0; 9])),
            C::DDP_MESSAGE_TOO_LONG,
        ),
        case(
            "Immediate Data not last",
            ok(&un(0x01, 0x49, 0, 0, 1, 0, &[0; 8])),
            C::RDMAP_UNSPECIFIED,
        ),
        case(
            "Atomic Request cut short",
            ok(&un(0x41, 0x4a, 0, 1, 1, 0, &atomic_req[..44])),
            C::RDMAP_UNSPECIFIED,
        ),
        case(
            "Atomic Request too long",
            ok(&un(0x41, 0x4a, 0, 1, 1, 0, &[0; 56])),
            C::DDP_MESSAGE_TOO_LONG,
        ),
        case(
            "Atomic Response too long",
            ok(&un(0x41, 0x4b, 0, 3, 1, 0, &[0; 16])),
            C::DDP_MESSAGE_TOO_LONG,
        ),
        case(
            "Atomic Response cut short",
            ok(&un(0x41, 0x4b, 0, 3, 1, 0, &[0; 8])),
            C::RDMAP_UNSPECIFIED,
        ),
        bad_terminate(
            "Terminate not last",
            ok(&un(0x01, 0x47, 0, 2, 1, 0, &[0x20, 2, 0, 0])),
            C::RDMAP_UNSPECIFIED,
        ),
        bad_terminate(
            "Terminate of 2 octets",
            ok(&un(0x41, 0x47, 0, 2, 1, 0, &[0x20, 2])),
            C::RDMAP_UNSPECIFIED,
        ),
        bad_terminate(
            "Terminate with D but no header",
            ok(&un(0x41, 0x47, 0, 2, 1, 0, &[0x20, 2, 0x40, 0])),
            C::RDMAP_UNSPECIFIED,
        ),
        bad_terminate(
            "Terminate too long",
            ok(&un(0x41, 0x47, 0, 2, 1, 0, &[0; 60])),
            C::DDP_MESSAGE_TOO_LONG,
        ),
        bad_terminate(
            "Terminate with MSN 2",
            ok(&un(0x41, 0x47, 0, 2, 2, 0, &[0x20, 2, 0, 0])),
            C::DDP_MSN_RANGE,
        ),
        bad_terminate(
            "Terminate with MO 4",
            ok(&un(0x41, 0x47, 0, 2, 1, 4, &[0x20, 2, 0, 0])),
            C::DDP_INVALID_MO,
        ),
        bad_terminate(
            "Terminate with RV 2",
            ok(&un(0x41, 0x87, 0, 2, 1, 0, &[0x20, 2, 0, 0])),
            C::RDMAP_VERSION,
        ),
        bad_terminate(
            "Terminate with DV 2",
            ok(&un(0x42, 0x47, 0, 2, 1, 0, &[0x20, 2, 0, 0])),
            C::DDP_UNTAGGED_VERSION,
        ),
        // Tagged: not on QN 2 either (RFC 5040 §5.1), an unexpected opcode, answered.
        case(
            "tagged Terminate",
            ok(&tg(0xc1, 0x47, 1, 0, &[0x20, 2, 0, 0])),
            C::RDMAP_UNEXPECTED_OPCODE,
        ),
        Case {
            good: 1,
            ..bad_terminate(
                "second Terminate after a Send",
                cat(&[
                    ok(&send(1, 0, b"a")),
                    ok(&un(0x41, 0x47, 0, 2, 2, 0, &[0x20, 2, 0, 0])),
                ]),
                C::DDP_MSN_RANGE,
            )
        },
        // A Terminate whose CRC fails is not known to be one: answered as a CRC error.
        case(
            "Terminate with a bad CRC",
            flip(ok(&un(0x41, 0x47, 0, 2, 1, 0, &[0x20, 2, 0, 0])), 23),
            C::MPA_CRC,
        ),
        // Tagged TO wrap (RFC 5041 §7.2)
        case(
            "Write TO wraps",
            ok(&tg(0xc1, 0x40, 1, u64::MAX - 1, b"hello")),
            C::DDP_TO_WRAP,
        ),
        case(
            "Read Response TO wraps",
            ok(&tg(0xc1, 0x42, 1, u64::MAX, b"hi")),
            C::DDP_TO_WRAP,
        ),
        // Markers (RFC 5044 §4.3)
        Case {
            cfg: RX_MARKERS,
            ..case(
                "marker FPDUPTR off by 4",
                {
                    let mut s = marker_stream();
                    s[515] ^= 4;
                    s
                },
                C::MPA_MARKER,
            )
        },
        Case {
            cfg: RX_MARKERS,
            ..case(
                "leading marker not zero",
                {
                    let mut s = marker_stream();
                    s[3] = 4;
                    s
                },
                C::MPA_MARKER,
            )
        },
        Case {
            cfg: RX_MARKERS,
            ..case(
                "markers expected, none sent",
                ok(&send(1, 0, b"abcd")),
                C::MPA_MARKER,
            )
        },
        // The module rejects a header (RFC 5041 §7.2, RFC 5040 §7.2, RFC 7306 §8.2)
        Case {
            on_header: Some(reject_stag),
            ..case(
                "module: invalid STag",
                ok(&tg(0xc1, 0x40, 0x99, 0, b"hello")),
                C::DDP_INVALID_STAG,
            )
        },
        Case {
            on_header: Some(reject_bounds),
            ..case(
                "module: base/bounds",
                ok(&tg(0xc1, 0x40, 1, 0, b"hello")),
                C::DDP_BASE_BOUNDS,
            )
        },
        Case {
            on_header: Some(reject_no_buffer),
            ..case(
                "module: no receive buffer",
                ok(&send(1, 0, b"x")),
                C::DDP_MSN_NO_BUFFER,
            )
        },
        Case {
            on_header: Some(reject_access),
            ..case(
                "module: Read source access",
                ok(&un(0x41, 0x41, 0, 1, 1, 0, &rr_body(4, 0))),
                C::RDMAP_ACCESS_RIGHTS,
            )
        },
        Case {
            on_header: Some(reject_misaligned),
            ..case(
                "module: misaligned atomic",
                ok(&un(0x41, 0x4a, 0, 1, 1, 0, &atomic_req)),
                C::RDMAP_CATASTROPHIC_STREAM,
            )
        },
        Case {
            on_header: Some(reject_stag),
            ..case(
                "module reject reported before a bad CRC",
                flip(ok(&tg(0xc1, 0x40, 9, 0, b"hello")), 23),
                C::DDP_INVALID_STAG,
            )
        },
        // RFC 5041 §7.1: refused when the header is in, not when the 1000 octets it
        // announces have arrived (the stream stops after the header).
        Case {
            on_header: Some(reject_too_long),
            ..case(
                "module: Send too long, refused at its header",
                ok(&send(1, 0, &[7; 1000]))[..2 + 18].to_vec(),
                C::DDP_MESSAGE_TOO_LONG,
            )
        },
        Case {
            on_header: Some(reject_stag),
            ..case(
                "module: Write to an invalid STag, refused at its header",
                ok(&tg(0xc1, 0x40, 9, 0, &[7; 1000]))[..2 + 14].to_vec(),
                C::DDP_INVALID_STAG,
            )
        },
    ];
    // An FPDU framed by rsiw's own TX path, its RDMAP control edited and the CRC re-sealed.
    let mut s = frame1(
        TxConfig {
            crc: true,
            markers: false,
            mulpdu: 1442,
        },
        &TxMessage::send(Opcode::Send, 1, 0, 3),
        b"abc",
    );
    s[3] |= 0x80;
    v.push(case("framed Send with RV 3", reseal(s), C::RDMAP_VERSION));
    // Terminates on the other queues (RFC 5040 §5.1), a QN whose low octets say 2 among them.
    for (name, qn) in [
        ("Terminate on QN 1", 1),
        ("Terminate on QN 3", 3),
        ("Terminate on QN 0x10002", 0x10002),
    ] {
        let seg = un(0x41, 0x47, 0, qn, 1, 0, &[0x20, 2, 0, 0]);
        v.push(case(name, ok(&seg), C::DDP_INVALID_QN));
    }
    v
}

fn run_case(c: &Case, chunks: &[&[u8]]) -> Vec<Ev> {
    let mut rec = Recorder::default();
    if let Some(f) = c.on_header {
        rec.on_header = f;
    }
    run_with(c.cfg, rec, chunks)
}

fn error_of(ev: &[Ev]) -> Option<RxError> {
    match ev.last() {
        Some(Ev::Error(e)) => Some(*e),
        _ => None,
    }
}

#[test]
fn every_malformed_case_maps_to_its_terminate() {
    let cases = cases();
    assert!(cases.len() >= 40, "only {} cases", cases.len());
    for c in &cases {
        let ev = run_case(c, &[&c.stream]);
        let e = error_of(&ev).unwrap_or_else(|| panic!("{}: no error: {ev:?}", c.name));
        assert_eq!(e.cause(), c.cause, "{}", c.name);
        assert_eq!(e.reply, c.reply, "{}: answered with a Terminate?", c.name);
        assert_eq!(e.reply().is_some(), c.reply, "{}", c.name);
        let ends = ev.iter().filter(|e| matches!(e, Ev::End(_))).count();
        assert_eq!(
            ends, c.good,
            "{}: a failed segment must not complete",
            c.name
        );
        for i in 0..=c.stream.len() {
            let split = run_case(c, &[&c.stream[..i], &c.stream[i..]]);
            assert_eq!(split, ev, "{} split at {i}", c.name);
        }
    }
}

fn terminate_bytes(c: &str) -> Vec<u8> {
    let case = cases().into_iter().find(|k| k.name == c).unwrap();
    let e = error_of(&run_case(&case, &[&case.stream])).unwrap();
    let mut b = [0u8; terminate::MAX_LEN];
    let n = e.terminate.emit(&mut b);
    b[..n].to_vec()
}

#[test]
fn exact_terminate_bytes() {
    // RFC 5040 §4.8 bit order: Layer | EType, ErrorCode, M D R | Rsvd.
    assert_eq!(
        terminate_bytes("crc field flipped"),
        [0x20, 0x02, 0x00, 0x00]
    );
    assert_eq!(
        terminate_bytes("marker FPDUPTR off by 4"),
        [0x20, 0x03, 0x00, 0x00]
    );
    assert_eq!(terminate_bytes("untagged DV 0"), [0x12, 0x06, 0x00, 0x00]);
    // A ULPDU too short for a DDP header: MPA, not RDMAP (RFC 5044 §8).
    assert_eq!(
        terminate_bytes("ULPDU of one octet"),
        [0x20, 0x03, 0x00, 0x00]
    );
    // Refused at the header: Layer DDP, untagged, message too long, with M and D.
    let mut want = vec![0x12, 0x05, 0xc0, 0x00, 0x03, 0xfa];
    want.extend_from_slice(&send(1, 0, b""));
    assert_eq!(
        terminate_bytes("module: Send too long, refused at its header"),
        want
    );
    assert_eq!(terminate_bytes("RV 2"), [0x02, 0x05, 0x00, 0x00]);
    // DDP errors copy the segment length and the DDP header (M, D).
    let mut want = vec![0x12, 0x01, 0xc0, 0x00, 0x00, 19];
    want.extend_from_slice(&un(0x41, 0x43, 0, 7, 1, 0, b""));
    assert_eq!(terminate_bytes("Send on QN 7"), want);
    // A Terminate on the Send queue: DDP's Invalid QN, answered like any segment
    // (RFC 5040 §5.1, RFC 5041 §7.2).
    let mut want = vec![0x12, 0x01, 0xc0, 0x00, 0x00, 22];
    want.extend_from_slice(&un(0x41, 0x47, 0, 0, 1, 0, b""));
    assert_eq!(terminate_bytes("Terminate on QN 0"), want);
    let mut want = vec![0x02, 0x06, 0xc0, 0x00, 0x00, 18];
    want.extend_from_slice(&tg(0xc1, 0x47, 1, 0, b""));
    assert_eq!(terminate_bytes("tagged Terminate"), want);
    let mut want = vec![0x11, 0x00, 0xc0, 0x00, 0x00, 19];
    want.extend_from_slice(&tg(0xc1, 0x40, 0x99, 0, b""));
    assert_eq!(terminate_bytes("module: invalid STag"), want);
    // RDMAP remote protection errors on a Read Request copy DDP and RDMA headers (M, D, R).
    let mut want = vec![0x01, 0x04, 0xe0, 0x00, 0x00, 46];
    want.extend_from_slice(&un(0x41, 0x41, 0, 1, 1, 0, &rr_body(4, u64::MAX - 2)));
    assert_eq!(terminate_bytes("Read Request source TO wraps"), want);
    // RFC 7306 §8.1: no RDMA header copy for atomics.
    assert_eq!(
        terminate_bytes("module: misaligned atomic")[..4],
        [0x02, 0x07, 0xc0, 0x00]
    );
    assert_eq!(
        terminate_bytes("module: misaligned atomic").len(),
        4 + 2 + 18
    );
}
