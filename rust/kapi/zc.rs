// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Zero-copy transmit of FPDU payload (RFC 5044 §4 framing stays with the
//! engine): owned page references, the MPA CRC (RFC 5044 §4.4) over a page
//! piece, and a non-blocking `MSG_SPLICE_PAGES` send of page pieces, alone or
//! with an FPDU's framing octets around them.

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

/// Sends `segs` from byte `skip` on without blocking; `Ok(n)` may be short,
/// `EAGAIN` when the socket is full. TCP takes its own references to the
/// pages. Process context.
pub(crate) fn send_pages(sock: &Socket, segs: &Segs, skip: usize, more: bool) -> Result<usize> {
    let (raw, n) = raw_segs(segs, skip);
    if n == 0 {
        return Ok(0);
    }
    // SAFETY: `sock` is live; the first `n` entries name pages referenced by
    // `segs` for the duration of the call, each piece inside its page.
    sent(unsafe { bindings::rsiw_shim_zc_send(sock.as_ptr(), raw.as_ptr(), n, more) })
}

/// Most framing octets [`send_fpdu`] takes (`head` and `tail` together).
pub(crate) const MAX_FRAMING: usize = bindings::RSIW_ZC_MAX_FRAMING as usize;

/// What is left to send of a zero-copy FPDU: `head` (the rest of its copied
/// length field and headers), the pieces of `segs` from byte `skip` on, then
/// `tail` (PAD and CRC field).
pub(crate) struct FpduRest<'a> {
    pub(crate) head: &'a [u8],
    pub(crate) segs: &'a Segs,
    pub(crate) skip: usize,
    pub(crate) tail: &'a [u8],
}

/// Sends `rest` in one call without blocking. TCP references the payload
/// pages, and the framing octets in a page fragment the shim fills. `Ok(n)`
/// may be short, `EAGAIN` when the socket is full; `ENOMEM` with nothing
/// sent when the shim had no fragment (send the pieces one by one then).
/// Process context.
pub(crate) fn send_fpdu(sock: &Socket, rest: &FpduRest<'_>, more: bool) -> Result<usize> {
    let FpduRest {
        head,
        segs,
        skip,
        tail,
    } = *rest;
    if head.len() + tail.len() > MAX_FRAMING {
        return Err(EINVAL);
    }
    let (raw, n) = raw_segs(segs, skip);
    // SAFETY: `sock` is live; `head` and `tail` are readable for their
    // lengths (the shim copies them); the first `n` entries of `raw` name
    // pages `segs` references during the call, each piece inside its page.
    let rv = unsafe {
        bindings::rsiw_shim_zc_send_fpdu(
            sock.as_ptr(),
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
