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

/// Throughput of a sequential write (with fsync and close) or read of SIZE bytes.
fn rate(write: bool, path: &str, size: u64, bs: usize, direct: bool) -> Result<()> {
    let mode = if write {
        libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC
    } else {
        libc::O_RDONLY
    };
    let fd = open(path, mode | if direct { libc::O_DIRECT } else { 0 })?;
    let mut buf = Aligned::new(bs)?;
    pattern(1, 0, buf.as_mut());
    let t0 = std::time::Instant::now();
    let mut off = 0u64;
    while off < size {
        let n = bs.min((size - off) as usize);
        if write {
            pwrite_all(&fd, &buf.as_mut()[..n], off, path)?;
        } else if pread_full(&fd, &mut buf.as_mut()[..n], off, path)? < n {
            return Err(Error::other(format!("{path}: shorter than {size} bytes")));
        }
        off += n as u64;
    }
    if write {
        fsync(&fd, path)?;
    }
    drop(fd);
    let secs = t0.elapsed().as_secs_f64();
    println!(
        "MiB/s={:.2} secs={secs:.3} size={size}",
        size as f64 / 1048576.0 / secs.max(1e-9)
    );
    Ok(())
}

/// The size of file `i` of `mkfiles`.
fn small_size(i: u64) -> u64 {
    i % 61 + 1
}

fn mkfiles(dir: &str, n: u64) -> Result<()> {
    let t0 = std::time::Instant::now();
    std::fs::create_dir_all(dir)?;
    let mut buf = [0u8; 64];
    for i in 0..n {
        let len = small_size(i) as usize;
        pattern(i, 0, &mut buf[..len]);
        std::fs::write(format!("{dir}/f{i}"), &buf[..len])
            .map_err(|e| Error::other(format!("{dir}/f{i}: {e}")))?;
    }
    println!("ok files={n} secs={:.1}", t0.elapsed().as_secs_f64());
    Ok(())
}

fn checkdir(dir: &str, n: u64, step: u64) -> Result<bool> {
    let t0 = std::time::Instant::now();
    let mut seen = vec![false; n as usize];
    let mut count = 0u64;
    for e in std::fs::read_dir(dir).map_err(|e| Error::other(format!("{dir}: {e}")))? {
        let e = e?;
        let name = e.file_name().to_string_lossy().into_owned();
        let i = name
            .strip_prefix('f')
            .and_then(|d| d.parse::<u64>().ok())
            .filter(|&i| i < n && !seen[i as usize]);
        let Some(i) = i else {
            println!("MISMATCH {dir}: unexpected entry {name}");
            return Ok(false);
        };
        seen[i as usize] = true;
        count += 1;
        let size = cached_size(&e.path())?;
        if size != small_size(i) {
            println!("MISMATCH {dir}/{name}: size {size}, want {}", small_size(i));
            return Ok(false);
        }
        if i % step == 0 {
            let got = std::fs::read(e.path())?;
            let mut want = vec![0u8; small_size(i) as usize];
            pattern(i, 0, &mut want);
            if got != want {
                println!("MISMATCH {dir}/{name}: contents differ");
                return Ok(false);
            }
        }
    }
    if count != n {
        println!("MISMATCH {dir}: {count} entries, want {n}");
        return Ok(false);
    }
    println!(
        "ok entries={n} contents-checked={} secs={:.1}",
        n.div_ceil(step),
        t0.elapsed().as_secs_f64()
    );
    Ok(true)
}

/// SplitMix64 (Steele, Lea, Flood 2014): the pattern's and fsx's generator.
fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Fill `buf` with SEED's pattern for the file range starting at `off`.
fn pattern(seed: u64, off: u64, buf: &mut [u8]) {
    let key = splitmix(seed);
    let mut i = 0;
    while i < buf.len() {
        let o = off + i as u64;
        let word = splitmix(key ^ (o / 8)).to_le_bytes();
        let start = (o % 8) as usize;
        let n = (8 - start).min(buf.len() - i);
        buf[i..i + n].copy_from_slice(&word[start..start + n]);
        i += n;
    }
}

/// A 64-bit digest of a byte stream (order-sensitive, fed in any split).
struct Digest {
    h: u64,
    len: u64,
}

impl Digest {
    fn new() -> Self {
        Digest {
            h: 0xcbf2_9ce4_8422_2325,
            len: 0,
        }
    }
    fn feed(&mut self, data: &[u8]) {
        for &b in data {
            self.h = (self.h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        self.len += data.len() as u64;
    }
    fn finish(&self) -> u64 {
        splitmix(self.h ^ self.len)
    }
}

/// A page-aligned buffer (O_DIRECT on a local file system wants one; NFS does not).
struct Aligned {
    ptr: *mut u8,
    len: usize,
}

impl Aligned {
    fn new(len: usize) -> Result<Self> {
        let mut p: *mut libc::c_void = std::ptr::null_mut();
        // SAFETY: posix_memalign writes an allocation of `len.max(1)` bytes to `p` or fails.
        let rc = unsafe { libc::posix_memalign(&mut p, 4096, len.max(1)) };
        if rc != 0 {
            return Err(Error::from_raw_os_error(rc));
        }
        // SAFETY: `p` points to `len` writable bytes we own; zero them once.
        unsafe { std::ptr::write_bytes(p as *mut u8, 0, len) };
        Ok(Aligned {
            ptr: p as *mut u8,
            len,
        })
    }
    fn as_mut(&mut self) -> &mut [u8] {
        // SAFETY: `ptr` is our allocation of `len` initialised bytes, borrowed mutably once.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for Aligned {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from posix_memalign and is freed once.
        unsafe { libc::free(self.ptr as *mut libc::c_void) };
    }
}

struct Fd(i32);

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: we own the descriptor and close it once.
        unsafe { libc::close(self.0) };
    }
}

/// The size the client has cached for `path` (`statx` with `AT_STATX_DONT_SYNC`): right
/// after a listing, the size the server's READDIRPLUS reply (or a LOOKUP) carried, not a
/// GETATTR of its own per file.
fn cached_size(path: &std::path::Path) -> Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| Error::other("path has a NUL byte"))?;
    // SAFETY: all-zero is a valid `statx` (plain integers).
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    let flags = libc::AT_SYMLINK_NOFOLLOW | libc::AT_STATX_DONT_SYNC;
    // SAFETY: `c` is a valid C string and `stx` a writable `statx` for the call.
    let rc = unsafe {
        libc::statx(
            libc::AT_FDCWD,
            c.as_ptr(),
            flags,
            libc::STATX_SIZE,
            &mut stx,
        )
    };
    if rc < 0 || stx.stx_mask & libc::STATX_SIZE == 0 {
        return Err(Error::other(format!(
            "statx {}: {}",
            path.display(),
            Error::last_os_error()
        )));
    }
    Ok(stx.stx_size)
}

fn open(path: &str, flags: i32) -> Result<Fd> {
    let c = CString::new(path).map_err(|_| Error::other("path has a NUL byte"))?;
    // SAFETY: `c` is a valid C string for the duration of the call.
    let fd = unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC, 0o644) };
    if fd < 0 {
        return Err(Error::other(format!(
            "open {path}: {}",
            Error::last_os_error()
        )));
    }
    Ok(Fd(fd))
}

fn pwrite_all(fd: &Fd, mut buf: &[u8], mut off: u64, what: &str) -> Result<()> {
    while !buf.is_empty() {
        // SAFETY: `buf` is valid for reads of its length.
        let n = unsafe { libc::pwrite(fd.0, buf.as_ptr().cast(), buf.len(), off as libc::off_t) };
        if n < 0 {
            let e = Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(Error::other(format!("{what}: pwrite at {off}: {e}")));
        }
        if n == 0 {
            return Err(Error::other(format!(
                "{what}: pwrite at {off} wrote nothing"
            )));
        }
        buf = &buf[n as usize..];
        off += n as u64;
    }
    Ok(())
}

/// Reads up to `buf.len()` bytes at `off`; fewer only at end of file.
fn pread_full(fd: &Fd, buf: &mut [u8], off: u64, what: &str) -> Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        let rest = &mut buf[got..];
        // SAFETY: `rest` is valid for writes of its length.
        let n = unsafe {
            libc::pread(
                fd.0,
                rest.as_mut_ptr().cast(),
                rest.len(),
                (off + got as u64) as libc::off_t,
            )
        };
        if n < 0 {
            let e = Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(Error::other(format!(
                "{what}: pread at {}: {e}",
                off + got as u64
            )));
        }
        if n == 0 {
            break;
        }
        got += n as usize;
    }
    Ok(got)
}

fn fsync(fd: &Fd, what: &str) -> Result<()> {
    // SAFETY: plain system call on our descriptor.
    if unsafe { libc::fsync(fd.0) } != 0 {
        return Err(Error::other(format!(
            "{what}: fsync: {}",
            Error::last_os_error()
        )));
    }
    Ok(())
}

fn write_file(path: &str, size: u64, seed: u64, bs: usize, direct: bool) -> Result<()> {
    let flags =
        libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | if direct { libc::O_DIRECT } else { 0 };
    let fd = open(path, flags)?;
    let mut buf = Aligned::new(bs)?;
    let mut d = Digest::new();
    let mut off = 0u64;
    while off < size {
        let n = bs.min((size - off) as usize);
        let b = &mut buf.as_mut()[..n];
        pattern(seed, off, b);
        d.feed(b);
        pwrite_all(&fd, b, off, path)?;
        off += n as u64;
    }
    fsync(&fd, path)?;
    // The close reports a deferred write error (NFS flushes on close).
    let raw = fd.0;
    std::mem::forget(fd);
    // SAFETY: `raw` is our descriptor, closed once (its Fd was forgotten).
    if unsafe { libc::close(raw) } != 0 {
        return Err(Error::other(format!(
            "{path}: close: {}",
            Error::last_os_error()
        )));
    }
    println!("ok size={size} digest={:016x}", d.finish());
    Ok(())
}

fn verify_file(path: &str, size: u64, seed: u64, bs: usize, direct: bool) -> Result<bool> {
    let flags = libc::O_RDONLY | if direct { libc::O_DIRECT } else { 0 };
    let fd = open(path, flags)?;
    let mut buf = Aligned::new(bs)?;
    let mut want = vec![0u8; bs];
    let mut d = Digest::new();
    let mut off = 0u64;
    loop {
        let n = pread_full(&fd, buf.as_mut(), off, path)?;
        let got = &buf.as_mut()[..n];
        d.feed(got);
        let expect = n.min(size.saturating_sub(off) as usize);
        pattern(seed, off, &mut want[..expect]);
        if let Some(i) = got[..expect]
            .iter()
            .zip(&want[..expect])
            .position(|(a, b)| a != b)
        {
            println!(
                "MISMATCH {path} at offset {}: got {:#04x}, want {:#04x} (seed {seed}, read of {n} at {off})",
                off + i as u64,
                got[i],
                want[i]
            );
            return Ok(false);
        }
        off += n as u64;
        if n < bs {
            break;
        }
    }
    if off != size {
        println!("MISMATCH {path}: size {off}, want {size}");
        return Ok(false);
    }
    println!("ok size={size} digest={:016x}", d.finish());
    Ok(true)
}

/// Pseudo-random numbers for fsx (SplitMix64 sequence).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        splitmix(self.0)
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
}

/// One fsx operation, kept for the log printed on a mismatch.
#[derive(Clone, Debug)]
enum Op {
    Write { off: u64, len: usize },
    Read { off: u64, len: usize },
    Truncate { size: u64 },
    MapWrite { off: u64, len: usize },
    MapRead { off: u64, len: usize },
    Fsync,
    Reopen,
}

struct Fsx {
    path: String,
    fd: Fd,
    model: Vec<u8>,
    rng: Rng,
    maxlen: usize,
    log: std::collections::VecDeque<(u64, Op)>,
    counts: [u64; 7],
}

const LOG_KEEP: usize = 64;

fn fsx(path: &str, ops: u64, seed: u64, maxlen: usize) -> Result<bool> {
    let fd = open(path, libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC)?;
    let mut f = Fsx {
        path: path.to_string(),
        fd,
        model: Vec::new(),
        rng: Rng(seed),
        maxlen,
        log: Default::default(),
        counts: [0; 7],
    };
    for n in 0..ops {
        let op = f.pick();
        if f.log.len() == LOG_KEEP {
            f.log.pop_front();
        }
        f.log.push_back((n, op.clone()));
        if let Some(bad) = f.apply(&op)? {
            println!("MISMATCH fsx {path} seed {seed} op {n}: {bad}");
            println!("last {} operations (number, operation):", f.log.len());
            for (i, o) in &f.log {
                println!("  {i} {o:?}");
            }
            return Ok(false);
        }
    }
    // A last full comparison after a close and reopen.
    f.apply(&Op::Reopen)?;
    let whole = Op::Read {
        off: 0,
        len: f.model.len(),
    };
    if let Some(bad) = f.apply(&whole)? {
        println!("MISMATCH fsx {path} seed {seed} final read: {bad}");
        return Ok(false);
    }
    let c = f.counts;
    println!(
        "ok ops={ops} seed={seed} size={} write={} read={} truncate={} mapwrite={} mapread={} fsync={} reopen={}",
        f.model.len(),
        c[0],
        c[1],
        c[2],
        c[3],
        c[4],
        c[5],
        c[6]
    );
    Ok(true)
}

impl Fsx {
    /// An unaligned offset/length pair: mostly small, sometimes up to `maxlen`.
    fn range(&mut self, within: usize) -> (u64, usize) {
        let off = self.rng.below(within as u64 + 1);
        let cap = if self.rng.below(8) == 0 {
            self.maxlen
        } else {
            (self.maxlen / 16).max(1)
        };
        let len = 1 + self.rng.below(cap as u64) as usize;
        (off, len)
    }

    fn pick(&mut self) -> Op {
        let size = self.model.len();
        match self.rng.below(100) {
            0..=36 => {
                let (off, len) = self.range(size.min(self.maxlen));
                let len = len.min(self.maxlen.saturating_sub(off as usize)).max(1);
                Op::Write { off, len }
            }
            37..=63 => {
                let (off, len) = self.range(size);
                Op::Read { off, len }
            }
            64..=67 => Op::Truncate {
                size: self.rng.below(self.maxlen as u64 + 1),
            },
            68..=80 if size > 0 => {
                let (off, len) = self.range(size - 1);
                Op::MapWrite {
                    off,
                    len: len.min(size - off as usize),
                }
            }
            81..=92 if size > 0 => {
                let (off, len) = self.range(size - 1);
                Op::MapRead {
                    off,
                    len: len.min(size - off as usize),
                }
            }
            93..=95 => Op::Fsync,
            96 => Op::Reopen,
            _ => Op::Read {
                off: 0,
                len: size.max(1),
            },
        }
    }

    /// Runs `op` on the file and the model; `Some(why)` on a mismatch.
    fn apply(&mut self, op: &Op) -> Result<Option<String>> {
        let path = self.path.clone();
        match *op {
            Op::Write { off, len } => {
                self.counts[0] += 1;
                let mut data = vec![0u8; len];
                pattern(self.rng.next(), off, &mut data);
                pwrite_all(&self.fd, &data, off, &path)?;
                let end = off as usize + len;
                if self.model.len() < end {
                    self.model.resize(end, 0);
                }
                self.model[off as usize..end].copy_from_slice(&data);
            }
            Op::Read { off, len } => {
                self.counts[1] += 1;
                let mut got = vec![0u8; len];
                let n = pread_full(&self.fd, &mut got, off, &path)?;
                let want = self.model.get(off as usize..).unwrap_or(&[]);
                let want = &want[..want.len().min(len)];
                if n != want.len() {
                    return Ok(Some(format!(
                        "read {len} at {off}: {n} bytes, model has {} (file size {})",
                        want.len(),
                        self.model.len()
                    )));
                }
                if let Some(i) = got[..n].iter().zip(want).position(|(a, b)| a != b) {
                    return Ok(Some(format!(
                        "read {len} at {off}: offset {} is {:#04x}, model {:#04x}",
                        off + i as u64,
                        got[i],
                        want[i]
                    )));
                }
            }
            Op::Truncate { size } => {
                self.counts[2] += 1;
                // SAFETY: plain system call on our descriptor.
                if unsafe { libc::ftruncate(self.fd.0, size as libc::off_t) } != 0 {
                    return Err(Error::other(format!(
                        "{path}: ftruncate {size}: {}",
                        Error::last_os_error()
                    )));
                }
                self.model.resize(size as usize, 0);
            }
            Op::MapWrite { off, len } | Op::MapRead { off, len } => {
                let write = matches!(op, Op::MapWrite { .. });
                self.counts[if write { 3 } else { 4 }] += 1;
                if len == 0 {
                    return Ok(None);
                }
                let page = 4096u64;
                let base = off / page * page;
                let maplen = (off + len as u64 - base) as usize;
                let prot = libc::PROT_READ | if write { libc::PROT_WRITE } else { 0 };
                // SAFETY: a fresh shared mapping of our descriptor; the range lies
                // inside the file (off + len <= model size = file size).
                let p = unsafe {
                    libc::mmap(
                        std::ptr::null_mut(),
                        maplen,
                        prot,
                        libc::MAP_SHARED,
                        self.fd.0,
                        base as libc::off_t,
                    )
                };
                if p == libc::MAP_FAILED {
                    return Err(Error::other(format!(
                        "{path}: mmap {maplen} at {base}: {}",
                        Error::last_os_error()
                    )));
                }
                // SAFETY: `p` maps `maplen` bytes of the file; nothing else aliases it here.
                let m = unsafe { std::slice::from_raw_parts_mut(p as *mut u8, maplen) };
                let at = (off - base) as usize;
                let mut bad = None;
                if write {
                    let mut data = vec![0u8; len];
                    pattern(self.rng.next(), off, &mut data);
                    m[at..at + len].copy_from_slice(&data);
                    self.model[off as usize..off as usize + len].copy_from_slice(&data);
                    // One in four mmap writes is written back at once (fsx's
                    // msync); the others reach the server with a later fsync,
                    // reopen or truncate.
                    let flags = if self.rng.below(4) == 0 {
                        libc::MS_SYNC
                    } else {
                        libc::MS_ASYNC
                    };
                    // SAFETY: `p`/`maplen` is the mapping made above.
                    if unsafe { libc::msync(p, maplen, flags) } != 0 {
                        bad = Some(Err(Error::other(format!(
                            "{path}: msync: {}",
                            Error::last_os_error()
                        ))));
                    }
                } else {
                    let want = &self.model[off as usize..off as usize + len];
                    if let Some(i) = m[at..at + len].iter().zip(want).position(|(a, b)| a != b) {
                        bad = Some(Ok(format!(
                            "mapread {len} at {off}: offset {} is {:#04x}, model {:#04x}",
                            off + i as u64,
                            m[at + i],
                            want[i]
                        )));
                    }
                }
                // SAFETY: unmaps the mapping made above; `m` is not used after.
                unsafe { libc::munmap(p, maplen) };
                match bad {
                    Some(Err(e)) => return Err(e),
                    Some(Ok(why)) => return Ok(Some(why)),
                    None => {}
                }
            }
            Op::Fsync => {
                self.counts[5] += 1;
                fsync(&self.fd, &path)?;
            }
            Op::Reopen => {
                self.counts[6] += 1;
                fsync(&self.fd, &path)?;
                let fd = open(&path, libc::O_RDWR)?;
                self.fd = fd;
                // Drop the clean cached pages: the next reads go to the server.
                // SAFETY: plain system call on our descriptor.
                unsafe { libc::posix_fadvise(self.fd.0, 0, 0, libc::POSIX_FADV_DONTNEED) };
                // What the server holds must be what the model says.
                let mut st: libc::stat = unsafe_zeroed_stat();
                // SAFETY: `st` is a valid out-parameter for fstat.
                if unsafe { libc::fstat(self.fd.0, &mut st) } != 0 {
                    return Err(Error::other(format!(
                        "{path}: fstat: {}",
                        Error::last_os_error()
                    )));
                }
                if st.st_size as u64 != self.model.len() as u64 {
                    return Ok(Some(format!(
                        "after reopen the file has {} bytes, model {}",
                        st.st_size,
                        self.model.len()
                    )));
                }
            }
        }
        Ok(None)
    }
}

fn unsafe_zeroed_stat() -> libc::stat {
    // SAFETY: `struct stat` is plain data; all-zero is a valid value.
    unsafe { std::mem::zeroed() }
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
