// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Zero-copy transmit of FPDU payload (RFC 5044 §4 framing stays with the
//! engine): owned page references, the MPA CRC (RFC 5044 §4.4) over a page
//! piece, the tracker that says when TCP has released a message's pages
//! ([`ZcBuf`]), and a non-blocking `MSG_ZEROCOPY` send of page pieces under
//! it, alone or with an FPDU's framing octets around them.

use super::{bindings, sock::Socket};
use core::ptr::NonNull;
use kernel::prelude::*;

/// Most pieces one [`send_pages`] call hands to the socket.
pub(crate) const MAX_SEGS: usize = bindings::RSIW_ZC_MAX_SEGS as usize;

const PAGE: usize = kernel::page::PAGE_SIZE;

/// One reference to a page, dropped with `put_page`.
///
/// # Invariants
///
/// `page` is a page on which this value holds a reference of its own.
pub(crate) struct PageRef {
    page: NonNull<bindings::page>,
}

// SAFETY: a page reference may be taken and dropped in any context.
unsafe impl Send for PageRef {}
// SAFETY: `&PageRef` only reads the page.
unsafe impl Sync for PageRef {}

impl PageRef {
    /// Takes a reference to `page`.
    ///
    /// # Safety
    ///
    /// `page` must be a live page (for instance pinned) during this call.
    pub(crate) unsafe fn get(page: *mut bindings::page) -> Option<Self> {
        let page = NonNull::new(page)?;
        // SAFETY: live per the function's safety requirements.
        unsafe { bindings::rsiw_shim_zc_get_page(page.as_ptr()) };
        // INVARIANT: the reference just taken.
        Some(Self { page })
    }
}

impl Drop for PageRef {
    fn drop(&mut self) {
        // SAFETY: our own reference (type invariant), dropped once.
        unsafe { bindings::rsiw_shim_zc_put_page(self.page.as_ptr()) };
    }
}

/// The tracker of the pages one message hands to TCP (`rsiw_zc_ubuf`):
/// released once every skb that referenced them is freed and [`ZcBuf::sent`]
/// was called. The release kicks the stream's TX (its write-space callback).
///
/// # Invariants
///
/// `ptr` is a tracker on which this value holds the engine's handle; the
/// sender's reference is held until `sent` is true.
pub(crate) struct ZcBuf {
    ptr: NonNull<bindings::rsiw_zc_ubuf>,
    sent: bool,
}

// SAFETY: the tracker's counts are atomic; it may be released and freed in
// any context.
unsafe impl Send for ZcBuf {}
// SAFETY: `&ZcBuf` only reads the released flag (an acquire load).
unsafe impl Sync for ZcBuf {}

impl ZcBuf {
    /// A tracker for pages sent on `sock`; `None` without memory.
    pub(crate) fn new(sock: &Socket) -> Option<Self> {
        // SAFETY: `sock` is live; the shim holds its `struct sock` until the
        // tracker is released.
        let ptr = NonNull::new(unsafe { bindings::rsiw_shim_zc_ubuf_new(sock.as_ptr()) })?;
        // INVARIANT: both references are the new tracker's initial ones.
        Some(Self { ptr, sent: false })
    }

    /// No more pages go to TCP under this tracker. True if they are released
    /// already (then no kick follows). Once only; later calls say
    /// [`ZcBuf::released`].
    pub(crate) fn sent(&mut self) -> bool {
        if self.sent {
            return self.released();
        }
        self.sent = true;
        // SAFETY: the sender's reference, held (type invariant), dropped once.
        unsafe { bindings::rsiw_shim_zc_ubuf_sent(self.ptr.as_ptr()) }
    }

    /// Every skb that referenced the pages is freed and `sent` was called.
    pub(crate) fn released(&self) -> bool {
        // SAFETY: the engine's handle keeps the tracker allocated.
        unsafe { bindings::rsiw_shim_zc_ubuf_released(self.ptr.as_ptr()) }
    }

    /// The tracker to send under; `None` once `sent` was called.
    fn raw(&self) -> *mut bindings::rsiw_zc_ubuf {
        if self.sent {
            core::ptr::null_mut()
        } else {
            self.ptr.as_ptr()
        }
    }
}

impl Drop for ZcBuf {
    fn drop(&mut self) {
        self.sent();
        // SAFETY: the engine's handle (type invariant), dropped once.
        unsafe { bindings::rsiw_shim_zc_ubuf_put(self.ptr.as_ptr()) };
    }
}

/// `len` bytes at `off` of one page.
pub(crate) struct Seg {
    page: PageRef,
    off: u32,
    len: u32,
}

impl Seg {
    /// A piece of `page`; `EINVAL` unless `off + len` stays in the page.
    pub(crate) fn new(page: PageRef, off: usize, len: usize) -> Result<Self> {
        if off >= PAGE || len > PAGE - off {
            return Err(EINVAL);
        }
        Ok(Self {
            page,
            off: off as u32,
            len: len as u32,
        })
    }

    /// Its length.
    pub(crate) fn len(&self) -> usize {
        self.len as usize
    }

    /// Copies the piece's bytes to `dst`, which must be exactly as long.
    pub(crate) fn copy_to(&self, dst: &mut [u8]) -> Result {
        if dst.len() != self.len() {
            return Err(EINVAL);
        }
        // SAFETY: `dst` is writable for `len` octets (checked above); the page
        // is referenced by `self.page`; `off + len` stays in it (checked in
        // `new`); the shim reads it through kmap_local.
        unsafe {
            bindings::rsiw_shim_zc_copy(
                dst.as_mut_ptr(),
                self.page.page.as_ptr(),
                self.off,
                self.len,
            )
        };
        Ok(())
    }

    /// Continues the raw CRC32c register `crc` over the piece's bytes.
    pub(crate) fn crc32c(&self, crc: u32) -> u32 {
        // SAFETY: the page is referenced by `self.page`; `off + len` stays in
        // it (checked in `new`); the shim only reads it through kmap_local.
        unsafe { bindings::rsiw_shim_zc_crc(crc, self.page.page.as_ptr(), self.off, self.len) }
    }
}

/// The page pieces of one FPDU's payload, at most [`MAX_SEGS`], in order.
pub(crate) struct Segs {
    v: [Option<Seg>; MAX_SEGS],
    n: usize,
}

impl Segs {
    /// None.
    pub(crate) fn new() -> Self {
        Self {
            v: core::array::from_fn(|_| None),
            n: 0,
        }
    }

    /// Appends `s`; `ENOSPC` when full.
    pub(crate) fn push(&mut self, s: Seg) -> Result {
        *self.v.get_mut(self.n).ok_or(ENOSPC)? = Some(s);
        self.n += 1;
        Ok(())
    }

    /// Drops every piece (and its page reference).
    pub(crate) fn clear(&mut self) {
        for s in self.v.iter_mut().take(self.n) {
            *s = None;
        }
        self.n = 0;
    }

    /// The pieces in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Seg> {
        self.v.iter().take(self.n).flatten()
    }
}

/// The pieces of `segs` from byte `skip` on, as the shim takes them; how
/// many.
fn raw_segs(segs: &Segs, mut skip: usize) -> ([bindings::rsiw_zc_seg; MAX_SEGS], usize) {
    let mut raw: [bindings::rsiw_zc_seg; MAX_SEGS] =
        core::array::from_fn(|_| bindings::rsiw_zc_seg::default());
    let mut n = 0usize;
    for s in segs.iter() {
        if skip >= s.len() {
            skip -= s.len();
            continue;
        }
        let Some(r) = raw.get_mut(n) else {
            break;
        };
        // `skip < len` here, so the piece stays non-empty and in the page.
        r.page = s.page.page.as_ptr();
        r.off = s.off + skip as u32;
        r.len = s.len - skip as u32;
        skip = 0;
        n += 1;
    }
    (raw, n)
}

fn sent(rv: i32) -> Result<usize> {
    if rv < 0 {
        Err(Error::from_errno(rv))
    } else {
        usize::try_from(rv).map_err(|_| EINVAL)
    }
}

/// The tracker a send goes under: null (TCP copies the pages) for `None`;
/// `EINVAL` for a tracker already [`ZcBuf::sent`].
fn tracker(zc: Option<&ZcBuf>) -> Result<*mut bindings::rsiw_zc_ubuf> {
    match zc {
        None => Ok(core::ptr::null_mut()),
        Some(z) => {
            let r = z.raw();
            if r.is_null() {
                Err(EINVAL)
            } else {
                Ok(r)
            }
        }
    }
}

/// Sends `segs` from byte `skip` on without blocking: by reference under
/// `zc` (TCP takes its own references to the pages), or, without a tracker,
/// copied by TCP before the call returns. `Ok(n)` may be short, `EAGAIN`
/// when the socket is full. Process context.
pub(crate) fn send_pages(
    sock: &Socket,
    zc: Option<&ZcBuf>,
    segs: &Segs,
    skip: usize,
    more: bool,
) -> Result<usize> {
    let (raw, n) = raw_segs(segs, skip);
    if n == 0 {
        return Ok(0);
    }
    let z = tracker(zc)?;
    // SAFETY: `sock` is live; `z` is null or a tracker `zc` holds (sender's
    // reference kept); `raw[..n]` name pages `segs` references during the
    // call, each piece inside its page.
    sent(unsafe { bindings::rsiw_shim_zc_send(sock.as_ptr(), z, raw.as_ptr(), n, more) })
}

/// Most framing octets [`send_fpdu`] takes (`head` and `tail` together).
pub(crate) const MAX_FRAMING: usize = bindings::RSIW_ZC_MAX_FRAMING as usize;

/// What is left to send of an FPDU whose payload is page pieces: `head` (the
/// rest of its copied length field and headers), the pieces of `segs` from
/// byte `skip` on (by reference under `zc`, copied by TCP without it), then
/// `tail` (PAD and CRC field).
pub(crate) struct FpduRest<'a> {
    pub(crate) zc: Option<&'a ZcBuf>,
    pub(crate) head: &'a [u8],
    pub(crate) segs: &'a Segs,
    pub(crate) skip: usize,
    pub(crate) tail: &'a [u8],
}

/// Sends `rest` in one call without blocking. TCP references the payload
/// pages (under `rest.zc`; copies them without a tracker), and the framing
/// octets in a page fragment the shim fills. `Ok(n)` may be short, `EAGAIN`
/// when the socket is full; `ENOMEM` with nothing sent when the shim had no
/// fragment (send the pieces one by one then). Process context.
pub(crate) fn send_fpdu(sock: &Socket, rest: &FpduRest<'_>, more: bool) -> Result<usize> {
    let FpduRest {
        zc,
        head,
        segs,
        skip,
        tail,
    } = *rest;
    let z = tracker(zc)?;
    if head.len() + tail.len() > MAX_FRAMING {
        return Err(EINVAL);
    }
    let (raw, n) = raw_segs(segs, skip);
    // SAFETY: `sock` is live; `z` is null or held by `zc`, sender's reference
    // kept; `head`/`tail` are readable (the shim copies them); `raw[..n]` name pages
    // `segs` references during the call, each piece inside its page.
    let rv = unsafe {
        bindings::rsiw_shim_zc_send_fpdu(
            sock.as_ptr(),
            z,
            head.as_ptr(),
            head.len(),
            raw.as_ptr(),
            n,
            tail.as_ptr(),
            tail.len(),
            more,
        )
    };
    sent(rv)
}
