// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Host micro-benchmark of the protocol core: software CRC-32C (RFC 5044 §8), TX
//! framing (the resumable framer, `TxFramer::fpdu_at` + `Fpdu::emit`) and RX parsing
//! (RFC 5044 §4, RFC 5041 §7, RFC 5040 §7; `feed` and the module's entry `feed_some`)
//! throughput.
//!
//! Run with `cargo run --release -p rsiw-proto --example throughput [SECONDS]`
//! (SECONDS per measurement, default 1). Results are MB/s (10^6 bytes/s) of wire
//! octets: MPA length fields, headers, PAD, CRC and Markers included; for streams
//! of small messages (Atomic Requests and Responses, RFC 7306 §5.2) also millions
//! of FPDUs per second, the per-message cost of the parser.

pub use rsiw_proto::*;

// The peer-side stream builder shared with the tests and fuzz targets.
#[allow(dead_code)]
#[path = "../src/fuzz_harness.rs"]
mod fuzz_harness;

use crc::{crc32c_finish, Crc32c, SoftCrc32c, CRC32C_INIT};
use fuzz_harness::StreamBuilder;
use rx::{HeaderInfo, Placement, RxConfig, RxParser, RxSink, SegmentEnd};
use std::hint::black_box;
use std::time::{Duration, Instant};
use terminate::TermCause;

/// Runs `f` (which processes `bytes` octets per call) for about `secs` seconds, split
/// into 7 rounds, and returns (best, median) MB/s over the rounds: on a shared machine
/// the best round is the one least disturbed by other load.
fn measure(secs: f64, bytes: usize, mut f: impl FnMut()) -> (f64, f64) {
    // Warm up caches and the branch predictor.
    f();
    let budget = Duration::from_secs_f64(secs / 7.0);
    let mut rounds = [0f64; 7];
    for r in rounds.iter_mut() {
        let start = Instant::now();
        let mut calls = 0u64;
        while start.elapsed() < budget {
            f();
            calls += 1;
        }
        *r = (calls as f64 * bytes as f64) / start.elapsed().as_secs_f64() / 1e6;
    }
    rounds.sort_by(f64::total_cmp);
    (rounds[6], rounds[3])
}

/// A sink that accepts everything and, when `copy` is set, places payload into a
/// buffer the way the module copies into a registered memory region.
struct Bench {
    copy: bool,
    dst: Vec<u8>,
    segments: u64,
}

impl RxSink for Bench {
    fn header(&mut self, hdr: &HeaderInfo) -> Result<(), TermCause> {
        black_box(hdr);
        Ok(())
    }

    fn payload(&mut self, data: &[u8], at: Placement) -> Result<(), TermCause> {
        if self.copy {
            let off = match at {
                Placement::Tagged { to, .. } => to as usize,
                Placement::Untagged { mo, .. } => mo as usize,
            };
            if let Some(d) = self.dst.get_mut(off..off + data.len()) {
                d.copy_from_slice(data);
            }
        }
        black_box(data);
        Ok(())
    }

    fn segment_end(&mut self, end: &SegmentEnd) -> Result<(), TermCause> {
        black_box(end);
        self.segments += 1;
        Ok(())
    }
}

/// Largest ULPDU for a 1460-octet EMSS (RFC 5044 §4.1), as on a 1500-octet MTU.
fn mulpdu(markers: bool) -> usize {
    usize::from(fpdu::mulpdu(1460, markers))
}

/// 2048 Sends of 4 KiB, segmented to fit the MULPDU.
fn sends(crc: bool, markers: bool) -> Vec<u8> {
    let mut b = StreamBuilder::new(crc, markers);
    let msg = vec![0xA5u8; 4096];
    for _ in 0..2048 {
        b.send(&msg, mulpdu(markers) - ddp::UNTAGGED_HDR_LEN);
    }
    b.out
}

/// 128 RDMA Writes of 64 KiB, segmented to fit the MULPDU.
fn writes(crc: bool, markers: bool) -> Vec<u8> {
    let mut b = StreamBuilder::new(crc, markers);
    let msg = vec![0x5Au8; 65536];
    for _ in 0..128 {
        b.write(0x1234_5600, 0, &msg, mulpdu(markers) - ddp::TAGGED_HDR_LEN);
    }
    b.out
}

/// FPDUs in the small-message streams.
const SMALL_FPDUS: usize = 4096;

/// `SMALL_FPDUS` single-FPDU messages of `op` on its queue, the `len`-octet RDMAP
/// header of message `i` written by `emit(i, header)`.
fn small_messages(
    crc: bool,
    markers: bool,
    op: rdmap::Opcode,
    len: usize,
    emit: impl Fn(u32, &mut [u8]),
) -> Vec<u8> {
    let mut b = StreamBuilder::new(crc, markers);
    let mut body = vec![0u8; len];
    for i in 0..SMALL_FPDUS as u32 {
        emit(i, &mut body);
        b.untagged(op, true, 0, 0, &body);
    }
    b.out
}

/// FetchAdd Atomic Requests (QN 1, RFC 7306 §5.2.1), one FPDU each.
fn atomic_requests(crc: bool, markers: bool) -> Vec<u8> {
    let op = rdmap::Opcode::AtomicRequest;
    small_messages(crc, markers, op, rdmap::AtomicRequest::LEN, |id, body| {
        rdmap::AtomicRequest {
            opcode: atomic::AOpCode::FetchAdd,
            request_id: id,
            stag: 0x1234_5600,
            to: 8 * u64::from(id),
            fields: atomic::AtomicFields::fetch_add(1),
        }
        .emit(body)
    })
}

/// Atomic Responses (QN 3, RFC 7306 §5.2.2), one FPDU each.
fn atomic_responses(crc: bool, markers: bool) -> Vec<u8> {
    let op = rdmap::Opcode::AtomicResponse;
    small_messages(crc, markers, op, rdmap::AtomicResponse::LEN, |id, body| {
        rdmap::AtomicResponse {
            request_id: id,
            original: u64::from(id),
        }
        .emit(body)
    })
}

/// Frames a 64 KiB RDMA Write FPDU by FPDU as the module does (`fpdu_at` at the
/// current offset, `emit` with the CRC taken over the payload as it is copied) into
/// `wire`; returns the octets framed.
fn frame_write(tx: &mut tx::TxFramer, payload: &[u8], wire: &mut Vec<u8>) -> usize {
    let msg = tx::TxMessage::tagged(rdmap::Opcode::Write, 0x1234, 0, payload.len() as u32);
    wire.clear();
    let mut off = 0u32;
    while off < msg.payload_len {
        let f = tx.fpdu_at(&msg, off, u32::MAX).expect("framable");
        f.write(&SoftCrc32c, payload, |p| wire.extend_from_slice(p))
            .expect("whole payload");
        off = f.payload.end as u32;
    }
    wire.len()
}

/// Parses `stream` with `feed_some` in the pieces a socket read hands over (here
/// 64 KiB), each fed whole, as the module's RX does.
fn parse_some(cfg: RxConfig, stream: &[u8], sink: &mut Bench) {
    let mut rx = RxParser::new(SoftCrc32c, cfg);
    for piece in stream.chunks(64 * 1024) {
        let mut used = 0;
        while used < piece.len() {
            match rx.feed_some(&piece[used..], usize::MAX, sink) {
                Ok(n) => used += n,
                Err(e) => panic!("benchmark stream refused: {:?}", e.cause()),
            }
        }
    }
}

/// Parses `stream` in 16 KiB pieces (roughly what one socket read hands over).
fn parse_all(cfg: RxConfig, stream: &[u8], sink: &mut Bench) {
    let mut rx = RxParser::new(SoftCrc32c, cfg);
    for piece in stream.chunks(16 * 1024) {
        if let Err(e) = rx.feed(piece, sink) {
            panic!("benchmark stream refused: {:?}", e.cause());
        }
    }
}

fn main() {
    let secs: f64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0);
    println!("rsiw-proto throughput, {secs} s per line; MB/s of wire octets, best and median of 7 rounds");

    let data: Vec<u8> = (0..1u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    for size in [64usize, 1460, 4096, 65536, 1 << 20] {
        let chunk = &data[..size];
        let (best, median) = measure(secs, size, || {
            black_box(crc32c_finish(
                SoftCrc32c.update(CRC32C_INIT, black_box(chunk)),
            ));
        });
        println!(
            "crc32c software (slicing-by-8), {size:>7} B buffers       {best:>8.1} {median:>8.1}"
        );
    }

    let payload = &data[..65536];
    let mut wire = Vec::with_capacity(80 * 1024);
    for (crc, mulpdu, what) in [
        (false, 1454u16, "RFC FPDUs (EMSS 1460)"),
        (true, 1454, "RFC FPDUs (EMSS 1460)"),
        (false, u16::MAX, "large FPDUs (64 KiB)"),
        (true, u16::MAX, "large FPDUs (64 KiB)"),
    ] {
        let mut tx = tx::TxFramer::new(tx::TxConfig {
            crc,
            markers: false,
            mulpdu,
        });
        let bytes = frame_write(&mut tx, payload, &mut wire);
        let (best, median) = measure(secs, bytes, || {
            black_box(frame_write(&mut tx, black_box(payload), &mut wire));
        });
        println!(
            "tx 64 KiB Writes, crc {:<3} {what:<22} {best:>8.1} {median:>8.1}",
            if crc { "on" } else { "off" }
        );
    }

    for (name, build) in [
        (
            "Atomic Requests ",
            atomic_requests as fn(bool, bool) -> Vec<u8>,
        ),
        ("Atomic Responses", atomic_responses),
    ] {
        for crc in [false, true] {
            let stream = build(crc, false);
            let cfg = RxConfig {
                crc,
                markers: false,
                max_ulpdu: u16::MAX,
            };
            let mut sink = Bench {
                copy: false,
                dst: Vec::new(),
                segments: 0,
            };
            let (best, median) = measure(secs, stream.len(), || parse_all(cfg, &stream, &mut sink));
            // MB/s of wire octets to millions of FPDUs per second.
            let per = |mbs: f64| mbs * 1e6 / (stream.len() as f64 / SMALL_FPDUS as f64) / 1e6;
            println!(
                "rx {name}, crc {:<3} parse only   {best:>8.1} {median:>8.1}   ({:.2} / {:.2} M FPDU/s)",
                if crc { "on" } else { "off" },
                per(best),
                per(median),
            );
        }
    }

    for (name, build) in [
        ("4 KiB Sends ", sends as fn(bool, bool) -> Vec<u8>),
        ("64 KiB Writes", writes),
    ] {
        for (crc, markers) in [(false, false), (true, false), (true, true)] {
            let stream = build(crc, markers);
            let cfg = RxConfig {
                crc,
                markers,
                max_ulpdu: u16::MAX,
            };
            for copy in [false, true] {
                let mut sink = Bench {
                    copy,
                    dst: vec![0; 65536],
                    segments: 0,
                };
                let (best, median) =
                    measure(secs, stream.len(), || parse_all(cfg, &stream, &mut sink));
                println!(
                    "rx {name}, crc {:<3} markers {:<3} {:<12} {best:>8.1} {median:>8.1}",
                    if crc { "on" } else { "off" },
                    if markers { "on" } else { "off" },
                    if copy { "+ placement" } else { "parse only" },
                );
                let (best, median) =
                    measure(secs, stream.len(), || parse_some(cfg, &stream, &mut sink));
                println!(
                    "rx {name}, crc {:<3} markers {:<3} {:<12} {best:>8.1} {median:>8.1}   (feed_some, 64 KiB pieces)",
                    if crc { "on" } else { "off" },
                    if markers { "on" } else { "off" },
                    if copy { "+ placement" } else { "parse only" },
                );
            }
        }
    }
}
