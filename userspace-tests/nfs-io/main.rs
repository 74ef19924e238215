// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! rsiw-nfs-io: file I/O checks for NFS-over-RDMA tests (Debian 12 ships no fsx).
//!
//! ```text
//! rsiw-nfs-io write  FILE SIZE SEED BS [direct]   write SIZE bytes of SEED's pattern in BS-byte calls
//! rsiw-nfs-io verify FILE SIZE SEED BS [direct]   read FILE back in BS-byte calls and check every byte
//! rsiw-nfs-io fsx    FILE OPS SEED [MAXLEN]       fsx-style random operations against an in-memory model
//! rsiw-nfs-io mkfiles  DIR N                      files f0..f(N-1), fI of (I % 61) + 1 bytes of seed I
//! rsiw-nfs-io checkdir DIR N STEP                 DIR lists exactly those names and sizes; every
//!                                                 STEP-th file's contents checked
//! rsiw-nfs-io rate write|read FILE SIZE BS [direct]  throughput only: one buffer written
//!                                                 over and over (or read and dropped),
//!                                                 prints `MiB/s=X secs=Y`
//! ```
//!
//! The pattern of SEED is a function of the byte's offset (SplitMix64 of the seed and
//! the 8-byte word index), so any range can be checked without a copy of the data, on
//! the client and on the server's own copy. `write` and `verify` print
//! `ok size=N digest=HEX` (a 64-bit digest of the contents, the same on both sides when
//! the data is the same); `verify` prints the first differing offset and exits 1 on a
//! mismatch. `fsx` prints `ok ops=N …` or, on the first mismatch, the differing offset,
//! the last operations and exits 1. Errors (EIO from a failed mount, …) exit 2.

use std::ffi::CString;
use std::io::{Error, Result};

mod files;
mod fsx;
mod pattern;
mod sys;

use files::*;
use fsx::*;
use pattern::*;
use sys::*;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let code = match run(&args[1..]) {
        Ok(true) => 0,
        Ok(false) => 1,
        Err(e) => {
            eprintln!("rsiw-nfs-io: {e}");
            2
        }
    };
    std::process::exit(code);
}

fn usage() -> Error {
    Error::other(
        "usage: rsiw-nfs-io write|verify FILE SIZE SEED BS [direct] | fsx FILE OPS SEED [MAXLEN]",
    )
}

fn num(s: Option<&String>) -> Result<u64> {
    let s = s.ok_or_else(usage)?;
    let (digits, mult) = match s.as_bytes().last() {
        Some(b'k' | b'K') => (&s[..s.len() - 1], 1024),
        Some(b'm' | b'M') => (&s[..s.len() - 1], 1024 * 1024),
        _ => (&s[..], 1),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|v| v.checked_mul(mult))
        .ok_or_else(|| Error::other(format!("not a number: {s}")))
}

fn run(a: &[String]) -> Result<bool> {
    match a.first().map(String::as_str) {
        Some(op @ ("write" | "verify")) => {
            let file = a.get(1).ok_or_else(usage)?;
            let size = num(a.get(2))?;
            let seed = num(a.get(3))?;
            let bs = num(a.get(4))?;
            let direct = match a.get(5).map(String::as_str) {
                None => false,
                Some("direct") => true,
                Some(_) => return Err(usage()),
            };
            if bs == 0 || bs > 64 << 20 {
                return Err(Error::other("BS must be 1 byte .. 64 MiB"));
            }
            if op == "write" {
                write_file(file, size, seed, bs as usize, direct).map(|()| true)
            } else {
                verify_file(file, size, seed, bs as usize, direct)
            }
        }
        Some("fsx") => {
            let file = a.get(1).ok_or_else(usage)?;
            let ops = num(a.get(2))?;
            let seed = num(a.get(3))?;
            let maxlen = match a.get(4) {
                Some(_) => num(a.get(4))?,
                None => 1 << 20,
            };
            if maxlen == 0 || maxlen > 64 << 20 {
                return Err(Error::other("MAXLEN must be 1 byte .. 64 MiB"));
            }
            fsx(file, ops, seed, maxlen as usize)
        }
        Some("rate") => {
            let write = match a.get(1).map(String::as_str) {
                Some("write") => true,
                Some("read") => false,
                _ => return Err(usage()),
            };
            let file = a.get(2).ok_or_else(usage)?;
            let size = num(a.get(3))?;
            let bs = num(a.get(4))?;
            if bs == 0 || bs > 64 << 20 {
                return Err(Error::other("BS must be 1 byte .. 64 MiB"));
            }
            let direct = match a.get(5).map(String::as_str) {
                None => false,
                Some("direct") => true,
                Some(_) => return Err(usage()),
            };
            rate(write, file, size, bs as usize, direct).map(|()| true)
        }
        Some("mkfiles") => {
            let dir = a.get(1).ok_or_else(usage)?;
            mkfiles(dir, num(a.get(2))?).map(|()| true)
        }
        Some("checkdir") => {
            let dir = a.get(1).ok_or_else(usage)?;
            checkdir(dir, num(a.get(2))?, num(a.get(3))?.max(1))
        }
        _ => Err(usage()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_is_a_function_of_the_offset() {
        let mut whole = vec![0u8; 100];
        pattern(7, 3, &mut whole);
        for (start, len) in [(0usize, 1usize), (5, 17), (13, 87), (99, 1)] {
            let mut part = vec![0u8; len];
            pattern(7, 3 + start as u64, &mut part);
            assert_eq!(part, whole[start..start + len]);
        }
        let mut other = vec![0u8; 100];
        pattern(8, 3, &mut other);
        assert_ne!(other, whole);
    }

    #[test]
    fn digest_ignores_how_the_stream_is_split() {
        let mut data = vec![0u8; 1000];
        pattern(1, 0, &mut data);
        let mut a = Digest::new();
        a.feed(&data);
        let mut b = Digest::new();
        b.feed(&data[..333]);
        b.feed(&data[333..]);
        assert_eq!(a.finish(), b.finish());
        data[500] ^= 1;
        let mut c = Digest::new();
        c.feed(&data);
        assert_ne!(a.finish(), c.finish());
    }

    #[test]
    fn write_verify_and_fsx_on_a_local_file() {
        let dir = std::env::temp_dir().join(format!("rsiw-nfs-io-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("f").to_string_lossy().into_owned();
        write_file(&f, 10_000, 5, 4097, false).unwrap();
        assert!(verify_file(&f, 10_000, 5, 4096, false).unwrap());
        assert!(!verify_file(&f, 10_000, 6, 4096, false).unwrap());
        assert!(!verify_file(&f, 10_001, 5, 4096, false).unwrap());
        assert!(fsx(&f, 500, 11, 64 << 10).unwrap());
        let d = dir.join("d").to_string_lossy().into_owned();
        mkfiles(&d, 100).unwrap();
        assert!(checkdir(&d, 100, 1).unwrap());
        assert!(!checkdir(&d, 99, 1).unwrap());
        assert!(!checkdir(&d, 101, 1).unwrap());
        std::fs::write(format!("{d}/f7"), b"x").unwrap();
        assert!(!checkdir(&d, 100, 50).unwrap());
        rate(true, &f, 1 << 20, 4096, false).unwrap();
        rate(false, &f, 1 << 20, 65536, false).unwrap();
        assert!(rate(false, &f, 2 << 20, 65536, false).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
