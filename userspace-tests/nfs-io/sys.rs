// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! System calls: O_DIRECT-aligned buffers, file descriptors, positioned reads and writes.

use super::*;

/// A page-aligned buffer (O_DIRECT on a local file system wants one; NFS does not).
pub(super) struct Aligned {
    ptr: *mut u8,
    len: usize,
}

impl Aligned {
    pub(super) fn new(len: usize) -> Result<Self> {
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
    pub(super) fn as_mut(&mut self) -> &mut [u8] {
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

pub(super) struct Fd(pub(super) i32);

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: we own the descriptor and close it once.
        unsafe { libc::close(self.0) };
    }
}

/// The size the client has cached for `path` (`statx` with `AT_STATX_DONT_SYNC`): right
/// after a listing, the size the server's READDIRPLUS reply (or a LOOKUP) carried, not a
/// GETATTR of its own per file.
pub(super) fn cached_size(path: &std::path::Path) -> Result<u64> {
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

pub(super) fn open(path: &str, flags: i32) -> Result<Fd> {
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

pub(super) fn pwrite_all(fd: &Fd, mut buf: &[u8], mut off: u64, what: &str) -> Result<()> {
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
pub(super) fn pread_full(fd: &Fd, buf: &mut [u8], off: u64, what: &str) -> Result<usize> {
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

pub(super) fn fsync(fd: &Fd, what: &str) -> Result<()> {
    // SAFETY: plain system call on our descriptor.
    if unsafe { libc::fsync(fd.0) } != 0 {
        return Err(Error::other(format!(
            "{what}: fsync: {}",
            Error::last_os_error()
        )));
    }
    Ok(())
}

pub(super) fn unsafe_zeroed_stat() -> libc::stat {
    // SAFETY: `struct stat` is plain data; all-zero is a valid value.
    unsafe { std::mem::zeroed() }
}
