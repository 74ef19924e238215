// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! fsx-style random operations against an in-memory model of the file.

use super::*;

/// Pseudo-random numbers for fsx (SplitMix64 sequence).
pub(super) struct Rng(u64);

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
pub(super) enum Op {
    Write { off: u64, len: usize },
    Read { off: u64, len: usize },
    Truncate { size: u64 },
    MapWrite { off: u64, len: usize },
    MapRead { off: u64, len: usize },
    Fsync,
    Reopen,
}

pub(super) struct Fsx {
    path: String,
    fd: Fd,
    model: Vec<u8>,
    rng: Rng,
    maxlen: usize,
    log: std::collections::VecDeque<(u64, Op)>,
    counts: [u64; 7],
}

pub(super) const LOG_KEEP: usize = 64;

pub(super) fn fsx(path: &str, ops: u64, seed: u64, maxlen: usize) -> Result<bool> {
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
