// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The data set's files: written, verified, made in a directory and listed, and the
//! throughput-only `rate`.

use super::*;

/// Throughput of a sequential write (with fsync and close) or read of SIZE bytes.
pub(super) fn rate(write: bool, path: &str, size: u64, bs: usize, direct: bool) -> Result<()> {
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
pub(super) fn small_size(i: u64) -> u64 {
    i % 61 + 1
}

pub(super) fn mkfiles(dir: &str, n: u64) -> Result<()> {
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

pub(super) fn checkdir(dir: &str, n: u64, step: u64) -> Result<bool> {
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

pub(super) fn write_file(path: &str, size: u64, seed: u64, bs: usize, direct: bool) -> Result<()> {
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

pub(super) fn verify_file(
    path: &str,
    size: u64,
    seed: u64,
    bs: usize,
    direct: bool,
) -> Result<bool> {
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
